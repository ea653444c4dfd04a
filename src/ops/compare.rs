//! Predicates with tolerances: `iszero`, `isequal`, `isherm`, `isdiag`.

use std::sync::LazyLock;

use crate::dispatch::checks::check_same_shape;
use crate::dispatch::{Dispatcher, Out};
use crate::error::Result;
use crate::gpu::GpuDense;
use crate::scalar::ZERO;
use crate::shape::same_shape;
use crate::storage::{Csr, Data, Dense, Dia, KronSum, SuperOp};

pub use super::tolerance::Tol;
use super::tolerance::{Near, close};

/// Whether every entry has modulus ≤ `atol`. Kernels: Dense, Csr.
pub static ISZERO: LazyLock<Dispatcher<f64, bool>> = LazyLock::new(|| {
    Dispatcher::builder("iszero", 1)
        .check(|op, _, t: &f64| crate::dispatch::checks::check_tol(op, "atol", *t))
        .unary("iszero_dense", |a: &Dense, t: &f64| Ok(iszero_dense(a, *t)))
        .unary("iszero_csr", |a: &Csr, t: &f64| Ok(iszero_csr(a, *t)))
        .unary("iszero_dia", |a: &Dia, t: &f64| {
            Ok(super::dia::iszero_dia(a, *t))
        })
        .unary("iszero_gpu", |a: &GpuDense, t: &f64| a.iszero(*t))
        .builtin()
});

/// Whether two matrices are equal within a [`Tol`]. Kernels: Dense, Csr, Dia, GpuDense.
pub static ISEQUAL: LazyLock<Dispatcher<Tol, bool>> = LazyLock::new(|| {
    Dispatcher::builder("isequal", 2)
        .check(|op, args, t: &Tol| {
            check_same_shape(op, args, t)?;
            crate::dispatch::checks::check_tol(op, "atol", t.atol)?;
            crate::dispatch::checks::check_tol(op, "rtol", t.rtol)
        })
        .binary("isequal_dense", |a: &Dense, b: &Dense, t: &Tol| {
            isequal_dense(a, b, *t)
        })
        .binary("isequal_csr", |a: &Csr, b: &Csr, t: &Tol| {
            isequal_csr(a, b, *t)
        })
        .binary("isequal_dia", |a: &Dia, b: &Dia, t: &Tol| {
            super::dia::isequal_dia(a, b, *t)
        })
        .binary("isequal_gpu", |a: &GpuDense, b: &GpuDense, t: &Tol| {
            a.isequal(b, t.atol, t.rtol)
        })
        .builtin()
});

/// Whether every entry of `a` has modulus ≤ `atol`.
///
/// # Errors
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) if `atol` is negative or not
/// finite.
///
/// ```
/// use polymat::{Csr, c64};
/// let tiny = Csr::from_triplets((2, 2), &[0], &[1], &[c64::new(1e-13, 0.0)]).unwrap().into();
/// assert!(polymat::iszero(&tiny, 1e-12).unwrap());
/// assert!(!polymat::iszero(&tiny, 0.0).unwrap());
/// ```
#[inline]
pub fn iszero(a: &Data, atol: f64) -> Result<bool> {
    ISZERO.call(&[a], Out::Auto, &atol)
}

/// Whether `|a − b| ≤ atol + rtol·|b|` for every entry.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if the shapes differ;
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) if a tolerance is negative or not
/// finite.
///
/// ```
/// use polymat::{Csr, Dense};
/// let a = Csr::identity(3).into();
/// let b = Dense::identity(3).into();
/// assert!(polymat::isequal(&a, &b, 1e-12, 0.0).unwrap());
/// ```
#[inline]
pub fn isequal(a: &Data, b: &Data, atol: f64, rtol: f64) -> Result<bool> {
    ISEQUAL.call(&[a, b], Out::Auto, &Tol { atol, rtol })
}

/// Dense `iszero`. O(mn).
pub fn iszero_dense(a: &Dense, atol: f64) -> bool {
    a.entries().all(|x| x.norm() <= atol)
}

/// Csr `iszero`. O(nnz).
pub fn iszero_csr(a: &Csr, atol: f64) -> bool {
    a.data().iter().all(|x| x.norm() <= atol)
}

/// Dense `isequal`. O(mn).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if the shapes differ.
pub fn isequal_dense(a: &Dense, b: &Dense, tol: Tol) -> Result<bool> {
    same_shape("isequal", a.shape(), b.shape())?;
    if a.shape().0 == 0 || a.shape().1 == 0 {
        return Ok(true);
    }
    if a.layout() == b.layout() {
        // Same layout: the buffers line up entry for entry.
        return Ok(a
            .entries()
            .zip(b.entries())
            .all(|(x, y)| close(*x, *y, tol)));
    }
    let (x, y) = (a.as_ref(), b.as_ref());
    Ok((0..a.shape().1).all(|j| {
        x.col(j)
            .iter()
            .zip(y.col(j).iter())
            .all(|(x, y)| close(*x, *y, tol))
    }))
}

/// Csr `isequal`, merging the two patterns. O(nnz(a) + nnz(b)).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if the shapes differ.
pub fn isequal_csr(a: &Csr, b: &Csr, tol: Tol) -> Result<bool> {
    same_shape("isequal", a.shape(), b.shape())?;
    let (pa, ia, da) = (a.indptr(), a.indices(), a.data());
    let (pb, ib, db) = (b.indptr(), b.indices(), b.data());
    for i in 0..a.shape().0 {
        let (mut x, mut y) = (pa[i], pb[i]);
        while x < pa[i + 1] || y < pb[i + 1] {
            let cx = if x < pa[i + 1] { ia[x] } else { usize::MAX };
            let cy = if y < pb[i + 1] { ib[y] } else { usize::MAX };
            let ok = if cx < cy {
                x += 1;
                close(da[x - 1], ZERO, tol)
            } else if cy < cx {
                y += 1;
                close(ZERO, db[y - 1], tol)
            } else {
                x += 1;
                y += 1;
                close(da[x - 1], db[y - 1], tol)
            };
            if !ok {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// Whether `a = a†` within `atol` (entry by entry); a non-square matrix is not Hermitian.
/// Kernels: Dense, Csr.
pub static ISHERM: LazyLock<Dispatcher<f64, bool>> = LazyLock::new(|| {
    Dispatcher::builder("isherm", 1)
        .check(|op, _, t: &f64| crate::dispatch::checks::check_tol(op, "atol", *t))
        .unary("isherm_dense", |a: &Dense, t: &f64| Ok(isherm_dense(a, *t)))
        .unary("isherm_csr", |a: &Csr, t: &f64| isherm_csr(a, *t))
        .unary("isherm_dia", |a: &Dia, t: &f64| {
            Ok(super::dia::isherm_dia(a, *t))
        })
        .unary("isherm_gpu", |a: &GpuDense, t: &f64| a.isherm(*t))
        .unary("isherm_kronsum", |a: &KronSum, t: &f64| {
            // Hermitian pieces make a Hermitian sum; otherwise decide on the formed operator.
            if super::lazy::kron_sum::plan_of(a)?.is_hermitian(*t) {
                return Ok(true);
            }
            isherm_csr(&crate::convert::lazy::kron_sum_to_csr(a)?, *t)
        })
        .unary("isherm_superop", |a: &SuperOp, t: &f64| {
            if a.shape().0 != a.shape().1 {
                return Ok(false);
            }
            if super::lazy::super_op::plan_is_hermitian(a, *t)? {
                return Ok(true);
            }
            isherm_csr(&crate::convert::lazy::super_op_to_csr(a)?, *t)
        })
        .builtin()
});

/// Whether every off-diagonal entry has modulus ≤ `atol`. Kernels: Dense, Csr, Dia, GpuDense.
pub static ISDIAG: LazyLock<Dispatcher<f64, bool>> = LazyLock::new(|| {
    Dispatcher::builder("isdiag", 1)
        .check(|op, _, t: &f64| crate::dispatch::checks::check_tol(op, "atol", *t))
        .unary("isdiag_dense", |a: &Dense, t: &f64| Ok(isdiag_dense(a, *t)))
        .unary("isdiag_csr", |a: &Csr, t: &f64| Ok(isdiag_csr(a, *t)))
        .unary("isdiag_dia", |a: &Dia, t: &f64| {
            Ok(super::dia::isdiag_dia(a, *t))
        })
        .unary("isdiag_gpu", |a: &GpuDense, t: &f64| a.isdiag(*t))
        .builtin()
});

/// Whether `a` is Hermitian within `atol`.
///
/// # Errors
/// Only if no kernel can be reached for `a`'s kind.
///
/// ```
/// use polymat::{Csr, c64};
/// let sy = Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[c64::new(0.0, -1.0), c64::new(0.0, 1.0)]).unwrap().into();
/// assert!(polymat::ops::isherm(&sy, 1e-12).unwrap());
/// ```
#[inline]
pub fn isherm(a: &Data, atol: f64) -> Result<bool> {
    ISHERM.call(&[a], Out::Auto, &atol)
}

/// Whether `a` is diagonal within `atol`.
///
/// # Errors
/// Only if no kernel can be reached for `a`'s kind.
///
/// ```
/// use polymat::Csr;
/// assert!(polymat::ops::isdiag(&Csr::identity(3).into(), 0.0).unwrap());
/// ```
#[inline]
pub fn isdiag(a: &Data, atol: f64) -> Result<bool> {
    ISDIAG.call(&[a], Out::Auto, &atol)
}

/// Dense `isherm`. O(n²), in strips of eight columns of the buffer (of either layout: `a = a†`
/// holds for a matrix exactly when it holds for its transpose). Strip j₀..j₀+8 compares
/// `a[i, j]` (eight columns read down, as eight sequential streams) with `conj(a[j, i])` (eight
/// consecutive entries of column i, two cache lines): every line of the buffer is read once,
/// sequentially or in independent loads, as in QuTiP's row-by-row loop. Pairs decide by
/// squares alone where the whole strip is clear below the tolerance, else one by one (the
/// square root where squares are within rounding of atol²), so the outcome is exactly that of
/// `(a[i, j] − conj(a[j, i])).norm() <= atol` for every pair (docs/benchmarks.md, "Dense
/// isherm in strips").
pub fn isherm_dense(a: &Dense, atol: f64) -> bool {
    let (m, n) = a.shape();
    m == n && isherm_strips(a, &Near::new(atol))
}

crate::simd::avx2_fn! {
    /// [`isherm_dense`] of a square `a`.
    fn isherm_strips(a: &Dense, near: &Near) -> bool {
        /// The strip's width: two cache lines of each column i, eight sequential streams down
        /// the strip's columns. Four and sixteen measured slower (docs/benchmarks.md).
        const W: usize = 8;
        let n = a.shape().0;
        for j0 in (0..n).step_by(W) {
            let w = W.min(n - j0);
            let cols: [&[crate::scalar::c64]; W] =
                std::array::from_fn(|t| a.buffer_col(j0 + t.min(w - 1)));
            let mut out = false;
            if w == W {
                // Rows above the strip: all W pairs of each row (a fixed count, vectorised).
                // (Row i of W columns at once: no single slice to iterate.)
                #[allow(clippy::needless_range_loop)]
                for i in 0..j0 {
                    let low = &a.buffer_col(i)[j0..j0 + W];
                    for t in 0..W {
                        out |= !near.clear_conj(cols[t][i], low[t]);
                    }
                }
            } else {
                #[allow(clippy::needless_range_loop)]
                for i in 0..j0 {
                    let low = &a.buffer_col(i)[j0..j0 + w];
                    for t in 0..w {
                        out |= !near.clear_conj(cols[t][i], low[t]);
                    }
                }
            }
            // The strip's own square, i ≤ j inside it.
            for t in 0..w {
                for s in 0..=t {
                    out |= !near.clear_conj(cols[t][j0 + s], cols[s][j0 + t]);
                }
            }
            // A strip that is not clear: every pair again, exactly.
            if out
                && !(0..w).all(|t| {
                    (0..=j0 + t).all(|i| {
                        near.within(cols[t][i] - a.buffer_col(i)[j0 + t].conj())
                    })
                })
            {
                return false;
            }
        }
        true
    }
}

/// Csr `isherm` without forming the adjoint: one pass over the rows, each entry (i, j) above
/// the diagonal compared with (j, i), found by a cursor per row that moves forward only (rows
/// are visited in order, so the columns asked of row j increase). Entries below the diagonal
/// that no entry above matches are compared with zero when a cursor passes them. O(nnz + n)
/// time; n row cursors of extra memory instead of a copy of the matrix (the adjoint took
/// 264 MB for a 2²⁰-dimensional chain Hamiltonian, the cursors 8 MB).
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) if the n cursors cannot be allocated.
pub fn isherm_csr(a: &Csr, atol: f64) -> Result<bool> {
    let (m, n) = a.shape();
    if m != n {
        return Ok(false);
    }
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    let small = |x: crate::scalar::c64| x.norm() <= atol;
    let mut cur: Vec<usize> = crate::storage::alloc::try_with_capacity("isherm", (n, n), n)?;
    cur.extend_from_slice(&p[..n]);
    for i in 0..n {
        let end = p[i + 1];
        // Entries of row i left of the diagonal that no row above matched.
        let mut k = cur[i];
        while k < end && idx[k] < i {
            if !small(val[k]) {
                return Ok(false);
            }
            k += 1;
        }
        for k in k..end {
            let (j, v) = (idx[k], val[k]);
            if j == i {
                if !small(v - v.conj()) {
                    return Ok(false);
                }
                continue;
            }
            // j > i: find (j, i), passing row j's unmatched entries left of column i.
            let (mut q, qend) = (cur[j], p[j + 1]);
            while q < qend && idx[q] < i {
                if !small(val[q]) {
                    return Ok(false);
                }
                q += 1;
            }
            let partner = if q < qend && idx[q] == i {
                q += 1;
                val[q - 1].conj()
            } else {
                ZERO
            };
            if !small(v - partner) {
                return Ok(false);
            }
            cur[j] = q;
        }
    }
    Ok(true)
}

/// Dense `isdiag`. O(mn).
pub fn isdiag_dense(a: &Dense, atol: f64) -> bool {
    // The condition is symmetric in (i, j), so the buffer serves for either layout.
    let buf = a.buffer();
    buf.nrows() == 0
        || (0..buf.ncols()).all(|j| {
            a.buffer_col(j)
                .iter()
                .enumerate()
                .all(|(i, x)| i == j || x.norm() <= atol)
        })
}

/// Csr `isdiag`. O(nnz).
pub fn isdiag_csr(a: &Csr, atol: f64) -> bool {
    super::inner::csr_entries(a).all(|((i, j), x)| i == j || x.norm() <= atol)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scalar::c64;

    /// `Near::within` answers as `d.norm() <= atol` at the boundary (values one ulp either side
    /// of atol, from both components), for tiny, huge, zero and NaN tolerances and values.
    #[test]
    fn near_agrees_with_the_square_root() {
        let atols = [
            0.0,
            1e-300,
            1e-160,
            1e-12,
            0.5,
            1.0,
            3.0,
            1e150,
            1e200,
            f64::INFINITY,
        ];
        for atol in atols {
            let near = Near::new(atol);
            let mut values = vec![0.0, 1e-320, 1e-200, 1e300, f64::INFINITY, f64::NAN];
            for x in [atol, atol * 0.6, atol * 0.8] {
                values.extend([
                    x,
                    f64::from_bits(x.to_bits().saturating_add(1)),
                    f64::from_bits(x.to_bits().saturating_sub(1)),
                ]);
            }
            for &re in &values {
                for &im in &values {
                    let d = c64::new(re, im);
                    assert_eq!(near.within(d), d.norm() <= atol, "{d} vs {atol}");
                }
            }
        }
    }

    /// The tiled Dense `isherm` agrees with the entry-by-entry definition on both layouts,
    /// sizes around the tile, and one perturbed entry anywhere (or none).
    #[test]
    fn dense_isherm_matches_the_definition() {
        use crate::storage::Layout;
        // Either side of the strip width (8), a narrow last strip, several strips.
        for n in [0usize, 1, 7, 8, 9, 16, 17, 31, 70] {
            let h = Dense::from_fn(n, n, |i, j| {
                let (lo, hi) = (i.min(j) as f64, i.max(j) as f64);
                let im = if i < j { lo - hi } else { hi - lo } * 0.1;
                c64::new(lo + 2.0 * hi, if i == j { 0.0 } else { im })
            });
            let last = n.saturating_sub(1);
            // Above a strip, below it, on the diagonal, inside the last strip's square.
            let places = [
                (0, 0),
                (n / 2, n / 3),
                (n / 3, n / 2),
                (last, 0),
                (last, last),
            ];
            let places = places.into_iter().chain([(last.saturating_sub(1), last)]);
            for (pi, pj) in places {
                // Clear, over the tolerance, within it, on it, NaN.
                for eps in [0.0, 1e-9, 5e-11, 1e-10, f64::NAN] {
                    let a = Dense::from_fn(n, n, |i, j| {
                        h.get(i, j)
                            + if (i, j) == (pi, pj) {
                                c64::new(0.0, eps)
                            } else {
                                ZERO
                            }
                    });
                    let want = (0..n).all(|j| {
                        (0..n).all(|i| (a.get(i, j) - a.get(j, i).conj()).norm() <= 1e-10)
                    });
                    for layout in [Layout::ColMajor, Layout::RowMajor] {
                        let l = a.clone().into_layout(layout).unwrap();
                        assert_eq!(isherm_dense(&l, 1e-10), want, "n {n} ({pi}, {pj}) {eps}");
                    }
                }
            }
        }
    }

    /// The cursor walk of `isherm_csr` agrees with its definition, `a ≈ a†` entry by entry
    /// (`isequal_csr` against the formed adjoint), on Hermitian patterns and on each way one
    /// can fail: an entry without its partner above or below the diagonal, a partner that
    /// differs, a diagonal with an imaginary part, stored zeros, NaN.
    #[test]
    fn csr_isherm_matches_the_adjoint() {
        let mut state: u64 = 11;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as usize
        };
        let (mut trues, mut falses) = (0, 0);
        for case in 0..600 {
            let n = 1 + next() % 24;
            let entries = next() % (2 * n * n / 3 + 1);
            let mut t: Vec<(usize, usize, c64)> = Vec::new();
            for _ in 0..entries {
                let (i, j) = (next() % n, next() % n);
                let v = c64::new((next() % 7) as f64 - 3.0, (next() % 5) as f64 - 2.0);
                let v = if i == j { c64::new(v.re, 0.0) } else { v };
                t.push((i, j, v));
                t.push((j, i, v.conj()));
            }
            // Break it (or not) in one of several ways.
            let size = [0.0, 1e-13, 1e-3, 1.0, f64::NAN][next() % 5];
            let (i, j) = (next() % n, next() % n);
            match case % 4 {
                0 => {}
                1 => t.push((i, j, c64::new(size, 0.0))),
                2 => t.push((i, j, c64::new(0.0, size))),
                _ => t.push((i, i, c64::new(0.0, size))),
            }
            let (r, c, v): (Vec<_>, Vec<_>, Vec<_>) =
                t.iter()
                    .fold((vec![], vec![], vec![]), |mut acc, &(i, j, v)| {
                        acc.0.push(i);
                        acc.1.push(j);
                        acc.2.push(v);
                        acc
                    });
            let a = Csr::from_triplets((n, n), &r, &c, &v).unwrap();
            let adj = super::super::transpose::transpose_csr(&a, true).unwrap();
            for atol in [0.0, 1e-12, 1e-2, 10.0] {
                let want = isequal_csr(&a, &adj, Tol { atol, rtol: 0.0 }).unwrap();
                assert_eq!(
                    isherm_csr(&a, atol).unwrap(),
                    want,
                    "case {case}, atol {atol}"
                );
                if want {
                    trues += 1;
                } else {
                    falses += 1;
                }
            }
        }
        assert!(trues > 500 && falses > 300, "{trues} / {falses}");
        assert!(!isherm_csr(&Csr::zeros(2, 3), 1.0).unwrap());
        assert!(isherm_csr(&Csr::zeros(0, 0), 0.0).unwrap());
    }
}
