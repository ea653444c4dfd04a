//! Addition `a + s·b` and subtraction.

use std::mem::MaybeUninit;
use std::sync::LazyLock;

use rayon::prelude::*;

use crate::dispatch::{Dispatcher, Out};
use crate::engine::{self, Family};
use crate::error::Result;
use crate::gpu::{GpuCsr, GpuDense};
use crate::scalar::c64;
use crate::scalar::{MINUS_ONE, ONE, ZERO, scaled};
use crate::shape::same_shape;
use crate::storage::alloc::csr::csr_buffers;
use crate::storage::alloc::{self, try_with_capacity};
use crate::storage::{Csr, Data, Dense, Dia, KronSum, SuperOp};

/// `a + scale·b`. Parameter: the scale. Kernels: Dense+Dense → Dense, Csr+Csr → Csr,
/// Csr+Dense → Dense, Dense+Csr → Dense.
pub static ADD: LazyLock<Dispatcher<c64>> = LazyLock::new(|| {
    Dispatcher::builder("add", 2)
        .result_shape(crate::dispatch::checks::first_shape)
        .check_same_shape()
        .binary("add_dense", |a: &Dense, b: &Dense, s: &c64| {
            add_dense(a, b, *s)
        })
        .binary("add_csr", |a: &Csr, b: &Csr, s: &c64| add_csr(a, b, *s))
        .binary("add_csr_dense", |a: &Csr, b: &Dense, s: &c64| {
            add_csr_dense(a, b, *s)
        })
        .binary("add_dense_csr", |a: &Dense, b: &Csr, s: &c64| {
            add_dense_csr(a, b, *s)
        })
        .binary("add_dia", |a: &Dia, b: &Dia, s: &c64| {
            super::dia::add_dia(a, b, *s)
        })
        .binary("add_gpu", |a: &GpuDense, b: &GpuDense, s: &c64| {
            a.add_scaled(b, *s)
        })
        .binary("add_gpucsr", |a: &GpuCsr, b: &GpuCsr, s: &c64| {
            a.add_scaled(b, *s)
        })
        .binary("add_kronsum", |a: &KronSum, b: &KronSum, s: &c64| {
            a.plus(b, *s)
        })
        .binary("add_superop", |a: &SuperOp, b: &SuperOp, s: &c64| {
            add_super_op(a, b, *s)
        })
        .builtin()
});

/// `a − b`, through [`ADD`] with scale −1 (one generic specialisation).
pub static SUB: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("sub", 2)
        .result_shape(crate::dispatch::checks::first_shape)
        .check_same_shape()
        .generic("sub_via_add", |args: &[&Data], out, _: &()| {
            ADD.call(args, out, &MINUS_ONE)
        })
        .builtin()
});

/// Whether `add` of two factors of these kinds has a direct kernel (no conversion), so that
/// merging the terms of a superoperator keeps their kind.
pub(crate) fn adds_directly(a: &Data, b: &Data) -> bool {
    a.kind() == b.kind()
        && ADD
            .get(&[a.kind(), b.kind()], Out::Auto)
            .is_ok_and(|r| r.is_direct())
}

/// `a + s·b` for two superoperators mapping matrices of the same shapes, lazy: the terms of
/// both, like terms merged.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) unless both map matrices of one shape to matrices of
/// one shape.
fn add_super_op(a: &SuperOp, b: &SuperOp, s: c64) -> Result<SuperOp> {
    if (a.input(), a.output()) != (b.input(), b.output()) {
        return Err(crate::error::Error::shape(
            "add",
            &[a.shape(), b.shape()],
            "superoperators must map matrices of the same shapes",
        ));
    }
    let mut terms = a.raw();
    terms.extend(b.raw().into_iter().map(|(c, x, y)| (s * c, x, y)));
    let merged = crate::storage::merge_terms(terms, adds_directly, |x, y, t| {
        add_scaled(x, y, t, Out::Auto)
    })?;
    SuperOp::of_terms(a.input(), a.output(), merged)
}

/// `a + b`.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if the shapes differ.
///
/// ```
/// use polymat::{Csr, Dense, Out, c64};
///
/// let a = Csr::identity(2).into();
/// let b = Dense::from_rows(&[[c64::new(0.0, 1.0), c64::new(2.0, 0.0)],
///                            [c64::new(0.0, 0.0), c64::new(0.0, 0.0)]]).unwrap().into();
/// let c = polymat::add(&a, &b, Out::Csr).unwrap();
/// assert_eq!(format!("{c:#}"), "Csr(2×2, nnz=3)");
/// let c = c.downcast_ref::<Csr>().unwrap();
/// assert_eq!(c.get(0, 0), c64::new(1.0, 1.0));
/// ```
#[inline]
pub fn add(a: &Data, b: &Data, out: Out) -> Result<Data> {
    ADD.call(&[a, b], out, &ONE)
}

/// `a + scale·b`. A scale of exactly −1 subtracts (`a − b`, what [`sub`] runs), which keeps
/// infinite parts as numpy's `a - b` does; any other scale multiplies `b`'s entries as complex
/// numbers (so `0·∞` parts give NaN, as `a + s*b` in numpy).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if the shapes differ.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// let i = Dense::identity(2).into();
/// let c = polymat::add_scaled(&i, &i, c64::new(0.0, 1.0), Out::Auto).unwrap();
/// assert_eq!(c.downcast_ref::<Dense>().unwrap().get(1, 1), c64::new(1.0, 1.0));
/// ```
#[inline]
pub fn add_scaled(a: &Data, b: &Data, scale: c64, out: Out) -> Result<Data> {
    ADD.call(&[a, b], out, &scale)
}

/// `a − b`.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if the shapes differ.
///
/// ```
/// use polymat::{Csr, Out};
/// let i = Csr::identity(3).into();
/// assert!(polymat::iszero(&polymat::sub(&i, &i, Out::Auto).unwrap(), 0.0).unwrap());
/// ```
#[inline]
pub fn sub(a: &Data, b: &Data, out: Out) -> Result<Data> {
    SUB.call(&[a, b], out, &())
}

/// Dense + scale·Dense. O(mn), one allocation.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if the shapes differ.
pub fn add_dense(a: &Dense, b: &Dense, scale: c64) -> Result<Dense> {
    same_shape("add", a.shape(), b.shape())?;
    if scale == ONE {
        super::elementwise::dense_sum("add", a, b, false)
    } else if scale == MINUS_ONE {
        // `sub`: x − y, exact for infinite parts (see `MINUS_ONE`).
        super::elementwise::dense_sum("add", a, b, true)
    } else if a.layout() == b.layout() && !crate::engine::streams(a.shape().0, a.shape().1, 2) {
        // (A result too large for the cache goes through `dense_zip`'s non-temporal stores;
        // its `x + scale * y` is `add_scaled_into`'s arithmetic, bit for bit.)
        // SAFETY: `add_scaled_into` writes every element of `out`, as long as `x` and `y`;
        // the shapes are equal (checked above) and so are the layouts.
        unsafe {
            super::elementwise::dense_zip_cols("add", a, b, |x, y, out| {
                crate::simd::add_scaled_into(out, x, scale, y);
            })
        }
    } else {
        super::elementwise::dense_zip("add", a, b, |x, y| x + scale * y)
    }
}

/// Csr + scale·Csr by merging sorted rows. O(nnz(a) + nnz(b)).
///
/// Entries that come out exactly zero (`0 + 0i`, either sign) are not stored, as in scipy:
/// `a − a` has no stored entries. Entries that are merely tiny are kept; `tidyup` removes those.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if the shapes differ.
pub fn add_csr(a: &Csr, b: &Csr, scale: c64) -> Result<Csr> {
    same_shape("add", a.shape(), b.shape())?;
    // Each operand's entries fill a `Vec` of at most `isize::MAX` bytes, so the sum fits.
    let cap = a.nnz() + b.nnz();
    // Operands with one sparsity pattern (terms of one Hamiltonian, a tridiagonal pair) add
    // value by value. Comparing the patterns stops at their first difference, and costs at
    // most two streaming reads of what the merge reads anyway.
    if a.indptr() == b.indptr() && a.indices() == b.indices() {
        return if scale == ONE {
            add_same_pattern(a, b, |y| y)
        } else {
            add_same_pattern(a, b, |y| scaled(scale, y))
        };
    }
    let workers = engine::workers(Family::CsrRows, cap);
    // A unit scale (every `a + b`) skips the complex product per entry of `b`.
    if workers > 1 {
        let sum = if scale == ONE {
            add_csr_parallel(a, b, |y| y, workers)?
        } else {
            add_csr_parallel(a, b, |y| scaled(scale, y), workers)?
        };
        if let Some(sum) = sum {
            return Ok(sum);
        }
    }
    if scale == ONE {
        add_csr_serial(a, b, cap, |y| y)
    } else {
        add_csr_serial(a, b, cap, |y| scaled(scale, y))
    }
}

/// `a + sc(b)` for operands with the same row pointers and columns: the pattern copied and the
/// values added in one pass, in parallel from the elementwise threshold. Sums that are exactly
/// zero are then dropped in one compacting pass (they must not be stored): `h − h` of the XXZ
/// chain at N = 20 took 68 ms through the merge the path used to fall back to, against 39 ms
/// for scipy's `h - h`; now 39 ms (N = 18: 15 → 7.6–8.2 ms, scipy 9.0).
fn add_same_pattern(a: &Csr, b: &Csr, sc: impl Fn(c64) -> c64 + Sync) -> Result<Csr> {
    let nnz = a.nnz();
    // The three arrays checked against the memory available as a sum, as every Csr result.
    let (mut indptr, mut indices, mut data) =
        crate::storage::alloc::csr::csr_buffers("add", a.shape(), a.indptr().len(), nnz)?;
    let (da, db) = (a.data(), b.data());
    let add_into = |out: &mut [MaybeUninit<c64>], x: &[c64], y: &[c64]| -> bool {
        let mut zero = false;
        for ((o, x), y) in out.iter_mut().zip(x).zip(y) {
            let v = x + sc(*y);
            zero |= v == ZERO;
            o.write(v);
        }
        zero
    };
    let out = &mut data.spare_capacity_mut()[..nnz];
    let workers = engine::workers(Family::Elementwise, nnz);
    let zero = if workers > 1 {
        let per = nnz.div_ceil(workers * 4).max(1);
        out.par_chunks_mut(per)
            .zip(da.par_chunks(per).zip(db.par_chunks(per)))
            .map(|(o, (x, y))| add_into(o, x, y))
            .reduce(|| false, |p, q| p | q)
    } else {
        add_into(out, da, db)
    };
    // SAFETY: `add_into` wrote all `nnz` elements (the output and both value arrays have
    // `nnz` of them: equal row pointers give equal counts).
    unsafe { data.set_len(nnz) };
    if zero {
        // The columns of the sums that are not zero, and those sums moved down, in one pass.
        let (p, ia) = (a.indptr(), a.indices());
        indptr.push(0);
        let mut write = 0;
        for i in 0..a.shape().0 {
            for k in p[i]..p[i + 1] {
                let v = data[k];
                if v != ZERO {
                    indices.push(ia[k]);
                    data[write] = v;
                    write += 1;
                }
            }
            indptr.push(write);
        }
        data.truncate(write);
    } else {
        indptr.extend_from_slice(a.indptr());
        indices.extend_from_slice(a.indices());
    }
    // SAFETY: `a`'s structure with one value per stored entry, less the entries whose sum is
    // zero, dropped together with their columns (the row pointers count what each row kept;
    // columns stay increasing).
    Ok(unsafe { Csr::from_parts_unchecked(a.shape(), indptr, indices, data) })
}

/// The serial Csr sum into arrays of room `cap` (the sum of both operands' stored entries).
///
/// The entries are written through a local cursor into the arrays' spare room rather than by
/// `Vec::push`, whose length lives in memory behind the closure's borrow: at 3 entries per row
/// (n = 1000, tridiagonal) the pushes' store-to-load chain made the merge 6 ns per entry.
fn add_csr_serial(a: &Csr, b: &Csr, cap: usize, sc: impl Fn(c64) -> c64 + Copy) -> Result<Csr> {
    let m = a.shape().0;
    let (mut indptr, mut indices, mut data) = csr_buffers("add", a.shape(), m + 1, cap)?;
    indptr.push(0);
    let mut at = 0;
    {
        let (ic, dc) = (
            &mut indices.spare_capacity_mut()[..cap],
            &mut data.spare_capacity_mut()[..cap],
        );
        for i in 0..m {
            merge_row(a, b, sc, i, |c, v| {
                // At most `cap` entries come out of the rows' merges, so `at < cap`.
                ic[at].write(c);
                dc[at].write(v);
                at += 1;
            });
            indptr.push(at);
        }
    }
    // SAFETY: the first `at` elements of both arrays were written just above (each write
    // advanced `at` by one, from 0), and `at <= cap`, their capacity.
    unsafe {
        indices.set_len(at);
        data.set_len(at);
    }
    // SAFETY: one pointer per row after the leading 0; `merge_row` emits each row's columns
    // (columns of a or b, below ncols) in strictly increasing order.
    Ok(unsafe { Csr::from_parts_unchecked(a.shape(), indptr, indices, data) })
}

/// Row `i` of `a + sc(b)`, the entries that are not exactly zero, in column order.
#[inline(always)]
fn merge_row(
    a: &Csr,
    b: &Csr,
    sc: impl Fn(c64) -> c64,
    i: usize,
    mut emit: impl FnMut(usize, c64),
) {
    let mut emit = |c: usize, v: c64| {
        if v != ZERO {
            emit(c, v);
        }
    };
    let (pa, ia, da) = (a.indptr(), a.indices(), a.data());
    let (pb, ib, db) = (b.indptr(), b.indices(), b.data());
    let (mut x, xe) = (pa[i], pa[i + 1]);
    let (mut y, ye) = (pb[i], pb[i + 1]);
    while x < xe && y < ye {
        let (cx, cy) = (ia[x], ib[y]);
        if cx < cy {
            emit(cx, da[x]);
            x += 1;
        } else if cy < cx {
            emit(cy, sc(db[y]));
            y += 1;
        } else {
            emit(cx, da[x] + sc(db[y]));
            x += 1;
            y += 1;
        }
    }
    for k in x..xe {
        emit(ia[k], da[k]);
    }
    for k in y..ye {
        emit(ib[k], sc(db[k]));
    }
}

/// The length of row `i` of `a + sc(b)` as [`merge_row`] emits it when every entry stored by
/// only one operand is non-zero: the columns are merged, and values are read only where both
/// operands store an entry (their sum may cancel).
#[inline(always)]
fn row_len(a: &Csr, b: &Csr, sc: impl Fn(c64) -> c64, i: usize) -> usize {
    let (pa, ia, da) = (a.indptr(), a.indices(), a.data());
    let (pb, ib, db) = (b.indptr(), b.indices(), b.data());
    let (mut x, xe) = (pa[i], pa[i + 1]);
    let (mut y, ye) = (pb[i], pb[i + 1]);
    let mut len = (xe - x) + (ye - y);
    while x < xe && y < ye {
        let (cx, cy) = (ia[x], ib[y]);
        if cx == cy {
            len -= 1 + usize::from(da[x] + sc(db[y]) == ZERO);
            x += 1;
            y += 1;
        } else if cx < cy {
            x += 1;
        } else {
            y += 1;
        }
    }
    len
}

/// The row-parallel Csr sum, or `None` when the serial merge must do it: the rows' lengths
/// first ([`row_len`], in parallel), then every range of rows written by [`merge_row`] into
/// its own part of arrays allocated once at their exact size.
///
/// The arrays come from `storage::alloc` (fallible, checked against the memory available,
/// advised as huge pages) and are written once, with no zero fill. The counting pass reads the
/// columns, and values only where both operands store one. An entry stored by one operand that
/// is zero (or becomes zero when scaled) is dropped by the merge but was counted: a range then
/// comes out short, and the caller falls back to the serial merge.
///
/// Measured on terms of the XXZ chain (the sum of H and one term, two cores, bench profile,
/// serial against two workers; docs/benchmarks/large_sparse.md): N = 20 (1.1·10⁷ + 10⁶ entries) 47 against 37–38 ms (182 ms
/// with the former zero-filled `vec!`s, whose 4 KiB pages both workers faulted in, and two
/// full merges); N = 18 10.5–10.9 against 9.1–9.5 ms (38 before); N = 16 1.4 against
/// 1.2–1.5 ms (3.9 before).
fn add_csr_parallel(
    a: &Csr,
    b: &Csr,
    sc: impl Fn(c64) -> c64 + Copy + Sync,
    workers: usize,
) -> Result<Option<Csr>> {
    const OP: &str = "add";
    let m = a.shape().0;
    let per = m.div_ceil(workers * 4).max(1);
    let mut indptr = alloc::try_vec(OP, a.shape(), m + 1, 0usize)?;
    indptr[1..]
        .par_chunks_mut(per)
        .enumerate()
        .for_each(|(k, out)| {
            for (r, o) in out.iter_mut().enumerate() {
                *o = row_len(a, b, sc, k * per + r);
            }
        });
    for i in 0..m {
        indptr[i + 1] += indptr[i];
    }
    let nnz = indptr[m];
    alloc::check_memory(OP, a.shape(), alloc::csr::csr_bytes(0, nnz))?;
    let mut indices: Vec<usize> = try_with_capacity(OP, a.shape(), nnz)?;
    let mut data: Vec<c64> = try_with_capacity(OP, a.shape(), nnz)?;
    // Cut the output arrays at the row-chunk boundaries.
    let mut parts = Vec::with_capacity(m.div_ceil(per));
    let (mut ir, mut dr) = (
        &mut indices.spare_capacity_mut()[..nnz],
        &mut data.spare_capacity_mut()[..nnz],
    );
    for start in (0..m).step_by(per) {
        let end = (start + per).min(m);
        let len = indptr[end] - indptr[start];
        let (i0, i1) = std::mem::take(&mut ir).split_at_mut(len);
        let (d0, d1) = std::mem::take(&mut dr).split_at_mut(len);
        parts.push((start..end, i0, d0));
        (ir, dr) = (i1, d1);
    }
    // Each range reports whether it came out at its counted length. The merge emits at most
    // what was counted (it drops what the count dropped, and perhaps more), so the checked
    // indexing below never fails.
    let exact = parts
        .into_par_iter()
        .map(|(rows, idx, val)| {
            let mut at = 0;
            for i in rows {
                merge_row(a, b, sc, i, |c, v| {
                    idx[at].write(c);
                    val[at].write(v);
                    at += 1;
                });
            }
            at == idx.len()
        })
        .reduce(|| true, |p, q| p && q);
    if !exact {
        return Ok(None);
    }
    // SAFETY: every range of rows wrote exactly its counted number of entries (checked just
    // above), and the ranges partition 0..nnz, so all `nnz` reserved elements are written;
    // within a row `merge_row` emits strictly increasing columns, and the row pointers are the
    // prefix sums of the rows' lengths (each row emitted what `row_len` counted: a row that
    // emitted fewer would leave its range short).
    unsafe {
        indices.set_len(nnz);
        data.set_len(nnz);
        Ok(Some(Csr::from_parts_unchecked(
            a.shape(),
            indptr,
            indices,
            data,
        )))
    }
}

/// Csr + scale·Dense → Dense. O(mn + nnz).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if the shapes differ.
pub fn add_csr_dense(a: &Csr, b: &Dense, scale: c64) -> Result<Dense> {
    same_shape("add", a.shape(), b.shape())?;
    let mut out = if scale == ONE {
        b.clone()
    } else if scale == MINUS_ONE {
        super::elementwise::dense_flip("add", b, crate::simd::Flip::Both, b.layout())?
    } else {
        super::elementwise::dense_scale("add", b, scale)?
    };
    scatter_add(&mut out, a, ONE);
    Ok(out)
}

/// Dense + scale·Csr → Dense. O(mn + nnz).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if the shapes differ.
pub fn add_dense_csr(a: &Dense, b: &Csr, scale: c64) -> Result<Dense> {
    same_shape("add", a.shape(), b.shape())?;
    let mut out = a.clone();
    scatter_add(&mut out, b, scale);
    Ok(out)
}

/// `out += scale·s`, entry by entry, in `out`'s layout (also `iadd` of a Csr into a Dense).
pub(crate) fn scatter_add(out: &mut Dense, s: &Csr, scale: c64) {
    let (p, idx, val) = (s.indptr(), s.indices(), s.data());
    let row_major = out.layout() == crate::storage::Layout::RowMajor;
    let buf = out.buffer_mut();
    for i in 0..s.shape().0 {
        for k in p[i]..p[i + 1] {
            let at = if row_major { (idx[k], i) } else { (i, idx[k]) };
            buf[at] += scaled(scale, val[k]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(x: f64) -> c64 {
        c64::new(x, 0.0)
    }

    #[test]
    fn csr_merge_keeps_rows_sorted() {
        let a =
            Csr::from_triplets((2, 4), &[0, 0, 1], &[0, 3, 2], &[r(1.0), r(2.0), r(3.0)]).unwrap();
        let b =
            Csr::from_triplets((2, 4), &[0, 1, 1], &[1, 0, 2], &[r(5.0), r(7.0), r(1.0)]).unwrap();
        let c = add_csr(&a, &b, r(2.0)).unwrap();
        assert_eq!(c.indptr(), &[0, 3, 5]);
        assert_eq!(c.indices(), &[0, 1, 3, 0, 2]);
        assert_eq!(c.data(), &[r(1.0), r(10.0), r(2.0), r(14.0), r(5.0)]);
        assert!(c.as_csmat().check_compressed_structure().is_ok());
    }

    /// The value-by-value path for operands of one pattern gives what the merge gives, and
    /// leaves exact cancellations to the merge, which drops them.
    #[test]
    fn one_pattern_sums_match_the_merge() {
        let (rows, cols) = ([0, 0, 1, 2, 2], [1, 3, 0, 2, 3]);
        let a = Csr::from_triplets(
            (3, 4),
            &rows,
            &cols,
            &[r(1.0), r(2.0), r(3.0), r(4.0), r(5.0)],
        )
        .unwrap();
        let vb = [
            c64::new(1.0, 2.0),
            r(-1.0),
            r(0.5),
            c64::new(0.0, -3.0),
            r(7.0),
        ];
        let b = Csr::from_triplets((3, 4), &rows, &cols, &vb).unwrap();
        for s in [ONE, c64::new(0.5, -1.0)] {
            let c = add_csr(&a, &b, s).unwrap();
            let merged = add_csr_serial(&a, &b, a.nnz() + b.nnz(), |y| s * y).unwrap();
            assert_eq!(c.indptr(), merged.indptr());
            assert_eq!(c.indices(), merged.indices());
            assert_eq!(c.data(), merged.data());
            assert_eq!(add_same_pattern(&a, &b, |y| s * y).unwrap(), merged);
        }
        // Entries (0, 1) and (1, 0) cancel: a − c = [0, 1, 0, 3, 4].
        let vc = [r(1.0), r(1.0), r(3.0), r(1.0), r(1.0)];
        let c = Csr::from_triplets((3, 4), &rows, &cols, &vc).unwrap();
        let d = add_csr(&a, &c, r(-1.0)).unwrap();
        assert_eq!(d.indptr(), &[0, 1, 1, 3]);
        assert_eq!(d.indices(), &[3, 2, 3]);
        assert_eq!(d.data(), &[r(1.0), r(3.0), r(4.0)]);
        // The same from the compacting pass of the one-pattern path, and from the merge.
        assert_eq!(add_same_pattern(&a, &c, |y| -y).unwrap(), d);
        assert_eq!(add_csr_serial(&a, &c, 10, |y| -y).unwrap(), d);
        // a − a: nothing stored.
        assert_eq!(add_csr(&a, &a, r(-1.0)).unwrap().nnz(), 0);
    }

    #[test]
    fn mixed_kernels_agree() {
        let a =
            Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[r(1.0), c64::new(0.0, 2.0)]).unwrap();
        let d = Dense::from_fn(2, 2, |i, j| r((i * 2 + j) as f64));
        let s = c64::new(0.5, -1.0);
        let x = add_csr_dense(&a, &d, s).unwrap();
        let y = add_dense_csr(&d, &a, s).unwrap();
        for i in 0..2 {
            for j in 0..2 {
                assert_eq!(x.get(i, j), a.get(i, j) + s * d.get(i, j));
                assert_eq!(y.get(i, j), d.get(i, j) + s * a.get(i, j));
            }
        }
    }

    #[test]
    fn shape_errors_name_op_and_shapes() {
        let e = add_csr(&Csr::zeros(2, 3), &Csr::zeros(3, 2), ONE).unwrap_err();
        assert_eq!(
            e.to_string(),
            "add: incompatible shapes (2, 3) and (3, 2): operands must have the same shape"
        );
    }
}
