//! Inner products: `inner` (⟨l|r⟩) and `inner_op` (⟨l|O|r⟩).

use std::sync::LazyLock;

use super::matmul::matmul_csr;
use crate::dispatch::{Dispatcher, Out};
use crate::error::Result;
use crate::gpu::{GpuCsr, GpuDense};
use crate::scalar::{ZERO, c64};
use crate::shape::{inner_op_shapes, inner_shapes, is_bra};
use crate::storage::{Csr, Data, Dense};

/// `⟨left|right⟩`: `left·right` for a bra, `left†·right` for a ket. Kernels: Dense, Csr.
pub static INNER: LazyLock<Dispatcher<(), c64>> = LazyLock::new(|| {
    Dispatcher::builder("inner", 2)
        .check(|op, a, _| inner_shapes(op, a[0].shape(), a[1].shape()))
        .binary("inner_dense", |l: &Dense, r: &Dense, _: &()| {
            inner_dense(l, r)
        })
        .binary("inner_csr", |l: &Csr, r: &Csr, _: &()| inner_csr(l, r))
        .binary("inner_gpu", |l: &GpuDense, r: &GpuDense, _: &()| l.inner(r))
        .builtin()
});

/// `⟨left|op|right⟩`. Kernels: Dense³, Csr³, and (Dense, Csr, Dense).
pub static INNER_OP: LazyLock<Dispatcher<(), c64>> = LazyLock::new(|| {
    Dispatcher::builder("inner_op", 3)
        .check(|op, a, _| inner_op_shapes(op, a[0].shape(), a[1].shape(), a[2].shape()))
        .ternary(
            "inner_op_dense",
            |l: &Dense, o: &Dense, r: &Dense, _: &()| inner_op_dense(l, o, r),
        )
        .ternary("inner_op_csr", |l: &Csr, o: &Csr, r: &Csr, _: &()| {
            inner_op_csr(l, o, r)
        })
        .ternary(
            "inner_op_dense_csr_dense",
            |l: &Dense, o: &Csr, r: &Dense, _: &()| inner_op_dense_csr_dense(l, o, r),
        )
        .ternary(
            "inner_op_gpu",
            |l: &GpuDense, o: &GpuDense, r: &GpuDense, _: &()| l.inner_op(o, r),
        )
        .ternary(
            "inner_op_gpucsr",
            |l: &GpuDense, o: &GpuCsr, r: &GpuDense, _: &()| inner_op_gpucsr(l, o, r),
        )
        .builtin()
});

/// `⟨left|right⟩`.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) unless `left` is a bra or ket and `right` a ket of the same dimension.
///
/// ```
/// use polymat::{Dense, c64};
/// let psi = Dense::from_rows(&[[c64::new(0.0, 1.0)], [c64::new(1.0, 0.0)]]).unwrap().into();
/// assert_eq!(polymat::ops::inner(&psi, &psi).unwrap(), c64::new(2.0, 0.0));
/// ```
#[inline]
pub fn inner(left: &Data, right: &Data) -> Result<c64> {
    INNER.call(&[left, right], Out::Auto, &())
}

/// `⟨left|op|right⟩`.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) on incompatible shapes.
///
/// ```
/// use polymat::{Csr, Dense, c64};
/// let one = c64::new(1.0, 0.0);
/// let up = Dense::from_rows(&[[one], [c64::new(0.0, 0.0)]]).unwrap().into();
/// let down = Dense::from_rows(&[[c64::new(0.0, 0.0)], [one]]).unwrap().into();
/// let sx = Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[one, one]).unwrap().into();
/// assert_eq!(polymat::ops::inner_op(&up, &sx, &down).unwrap(), one);
/// ```
#[inline]
pub fn inner_op(left: &Data, op: &Data, right: &Data) -> Result<c64> {
    INNER_OP.call(&[left, op, right], Out::Auto, &())
}

/// All entries of a vector, in order (a bra's row or a ket's column).
pub(crate) fn dense_vec(v: &Dense) -> Vec<c64> {
    // Either layout: a vector's buffer holds its entries in order.
    v.entries().copied().collect()
}

/// Dense `⟨l|r⟩`. O(n).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) on incompatible shapes.
pub fn inner_dense(l: &Dense, r: &Dense) -> Result<c64> {
    inner_shapes("inner", l.shape(), r.shape())?;
    let bra = is_bra(l.shape());
    // Both vectors in one buffer column (a column-major ket, a row-major bra): one AVX2 dot.
    // faer's `row * col` went through its general product, 33 of a call's 72 ns at n = 10.
    if let (Some(lv), Some(rv)) = (l.vector_slice(), r.vector_slice()) {
        return Ok(if bra {
            crate::simd::dot(lv, rv)
        } else {
            crate::simd::dot_conj(lv, rv)
        });
    }
    // A vector in a one-row buffer (a column-major bra, a row-major ket) has its entries a
    // column stride apart: one pass over both in order, nothing copied.
    let pairs = l.entries().zip(r.entries());
    Ok(if bra {
        pairs.map(|(a, b)| a * b).sum()
    } else {
        pairs.map(|(a, b)| a.conj() * b).sum()
    })
}

/// Csr `⟨l|r⟩`: each stored entry of `l` looks up its partner in `r`'s row pointers. O(nnz(l))
/// for a bra `l` (O(n) for a ket, whose row pointers are walked); nothing is allocated (no
/// dense copy of `r`, which for n = 10⁹ would be 16 GB beside its 8 GB of row pointers).
///
/// Every stored entry of `l` meets `r`'s entry at its position, or an exact zero there: the
/// terms, and their order, are those of the dense sum over `l`'s entries (an infinite or NaN
/// entry of `l` facing an unstored one of `r` still makes a NaN, as in the Dense kernel).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) on incompatible shapes.
///
/// ```
/// use polymat::{Csr, c64};
/// let n = 1_000_000; // a bra and a ket of 10⁶ entries, three stored each
/// let v = |x: f64| c64::new(x, 0.0);
/// let bra = Csr::from_triplets((1, n), &[0; 3], &[4, 70, n - 1], &[v(1.0), v(2.0), v(3.0)]);
/// let ket = Csr::from_triplets((n, 1), &[70, 5, n - 1], &[0; 3], &[v(4.0), v(8.0), v(0.5)]);
/// let (bra, ket) = (bra.unwrap(), ket.unwrap());
/// assert_eq!(polymat::ops::inner::inner_csr(&bra, &ket).unwrap(), v(9.5));
/// ```
pub fn inner_csr(l: &Csr, r: &Csr) -> Result<c64> {
    inner_shapes("inner", l.shape(), r.shape())?;
    let ket = !is_bra(l.shape());
    // r is a ket: row `at` stores its one entry at rp[at] when its row is not empty.
    let (rp, rval) = (r.indptr(), r.data());
    let mut sum = ZERO;
    for ((i, j), v) in csr_entries(l) {
        let at = if ket { i } else { j };
        let w = if rp[at] < rp[at + 1] {
            rval[rp[at]]
        } else {
            ZERO
        };
        sum += if ket { v.conj() * w } else { v * w };
    }
    Ok(sum)
}

/// `((row, col), value)` for every stored entry.
pub(crate) fn csr_entries(a: &Csr) -> impl Iterator<Item = ((usize, usize), c64)> + '_ {
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    (0..a.shape().0).flat_map(move |i| (p[i]..p[i + 1]).map(move |k| ((i, idx[k]), val[k])))
}

/// Dense `⟨l|O|r⟩`. O(nm).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) on incompatible shapes.
pub fn inner_op_dense(l: &Dense, o: &Dense, r: &Dense) -> Result<c64> {
    inner_op_shapes("inner_op", l.shape(), o.shape(), r.shape())?;
    let or = super::matmul::matmul_dense(o, r)?;
    inner_dense(l, &or)
}

/// Csr `⟨l|O|r⟩`. O(nnz).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) on incompatible shapes.
pub fn inner_op_csr(l: &Csr, o: &Csr, r: &Csr) -> Result<c64> {
    inner_op_shapes("inner_op", l.shape(), o.shape(), r.shape())?;
    inner_csr(l, &matmul_csr(o, r)?)
}

/// `⟨l|O|r⟩` with a sparse operator between dense vectors. O(nnz(O)).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) on incompatible shapes.
pub fn inner_op_dense_csr_dense(l: &Dense, o: &Csr, r: &Dense) -> Result<c64> {
    inner_op_shapes("inner_op", l.shape(), o.shape(), r.shape())?;
    let lv = dense_vec(l);
    let ket = !is_bra(l.shape());
    let rv = r.col_major("inner_op")?.col_as_slice(0);
    Ok(csr_entries(o)
        .map(|((i, j), v)| if ket { lv[i].conj() } else { lv[i] } * v * rv[j])
        .sum())
}

/// `⟨l|o|r⟩` for a GpuCsr operator: SpMV, then cuBLAS's dot product (the operator is never
/// densified).
pub(crate) fn inner_op_gpucsr(l: &GpuDense, o: &GpuCsr, r: &GpuDense) -> Result<c64> {
    l.inner(&super::matmul::matmul_gpucsr_dense(o, r)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small integers: every sum is exact in any order, so each path must give the definition.
    fn values(n: usize, seed: usize) -> Vec<c64> {
        (0..n)
            .map(|i| {
                c64::new(
                    ((i * 7 + seed * 3) % 11) as f64 - 5.0,
                    ((i + 2 * seed) % 5) as f64 - 2.0,
                )
            })
            .collect()
    }

    /// Kets and bras in both layouts (a row-major ket and a column-major bra keep their entries
    /// in a one-row buffer), against `Σ conj(lᵢ)·rᵢ` for a ket on the left and `Σ lᵢ·rᵢ` for a
    /// bra (a 1×1 left is a bra).
    #[test]
    fn dense_inner_is_the_definition_in_every_layout() {
        for n in [1, 2, 3, 4, 5, 10, 17] {
            let (x, y) = (values(n, 1), values(n, 2));
            let kets = |v: &[c64]| {
                [
                    Dense::from_fn(n, 1, |i, _| v[i]),
                    Dense::from_fn(1, n, |_, j| v[j]).into_transpose(),
                ]
            };
            let bras = |v: &[c64]| {
                [
                    Dense::from_fn(1, n, |_, j| v[j]),
                    Dense::from_fn(n, 1, |i, _| v[i]).into_transpose(),
                ]
            };
            let conj: c64 = x.iter().zip(&y).map(|(a, b)| a.conj() * b).sum();
            let plain: c64 = x.iter().zip(&y).map(|(a, b)| a * b).sum();
            for r in kets(&y) {
                for l in kets(&x) {
                    let want = if n == 1 { plain } else { conj };
                    assert_eq!(
                        inner_dense(&l, &r).unwrap(),
                        want,
                        "ket n={n} {:?}",
                        l.layout()
                    );
                }
                for l in bras(&x) {
                    assert_eq!(
                        inner_dense(&l, &r).unwrap(),
                        plain,
                        "bra n={n} {:?}",
                        l.layout()
                    );
                }
            }
        }
    }

    /// The Csr kernel gives the Dense kernel's sum, bit for bit, for bras and kets on the
    /// left with patterns that meet in some positions only, including an infinite entry of
    /// `l` facing an unstored one of `r` (a NaN, as in the dense sum) and an empty `r`.
    #[test]
    fn csr_inner_is_the_dense_sum() {
        let n = 9;
        let x = values(n, 3);
        let y = values(n, 4);
        let sparse_ket = |v: &[c64], keep: &dyn Fn(usize) -> bool| {
            let rows: Vec<usize> = (0..n).filter(|&i| keep(i)).collect();
            let vals: Vec<c64> = rows.iter().map(|&i| v[i]).collect();
            Csr::from_triplets((n, 1), &rows, &vec![0; rows.len()], &vals).unwrap()
        };
        type Keep<'a> = &'a dyn Fn(usize) -> bool;
        let cases: [(Keep, Keep); 4] = [
            (&|i| i % 2 == 0, &|i| i % 3 == 0),
            (&|_| true, &|i| i > 4),
            (&|i| i == 8, &|_| false),
            (&|_| true, &|_| true),
        ];
        for (lk, rk) in cases {
            let r = sparse_ket(&y, rk);
            let rd = crate::convert::builtin::csr_to_dense(&r).unwrap();
            let l = sparse_ket(&x, lk);
            let bra = super::super::transpose::transpose_csr(&l, false).unwrap();
            for l in [l, bra] {
                let ld = crate::convert::builtin::csr_to_dense(&l).unwrap();
                let (got, want) = (inner_csr(&l, &r).unwrap(), inner_dense(&ld, &rd).unwrap());
                assert_eq!(
                    (got.re.to_bits(), got.im.to_bits()),
                    (want.re.to_bits(), want.im.to_bits())
                );
            }
        }
        let inf = Csr::from_triplets((1, n), &[0], &[2], &[c64::new(f64::INFINITY, 0.0)]).unwrap();
        let r = sparse_ket(&y, &|i| i != 2);
        assert!(inner_csr(&inf, &r).unwrap().re.is_nan());
    }
}
