//! Norms: `l2` (vectors), `frobenius`, `max`, `one`, `trace`.
//!
//! Each is a dispatcher returning `f64`, with direct Dense and Csr kernels (the trace norm of a
//! Csr matrix goes through Dense: it needs every singular value), direct Dia kernels for the
//! Frobenius, max and 1-norms and, except for the trace norm, a GpuDense kernel (the trace norm
//! of a GpuDense matrix is computed on the CPU).

use std::sync::LazyLock;

use crate::convert::builtin::csr_to_dense;
use crate::dispatch::{Dispatcher, Out};
use crate::engine::{self, Family};
use crate::error::{Error, Result};
use crate::gpu::GpuDense;
use crate::scalar::{ZERO, c64};
use crate::simd::reduce::{max_abs, modulus, nan_max, safe_root, sum_sqr};
use crate::storage::{Csr, Data, Dense, Dia, KronSum, SuperOp};

fn vector(op: &str, a: &[&Data], _: &()) -> Result<()> {
    let s = a[0].shape();
    if s.0 == 1 || s.1 == 1 {
        Ok(())
    } else {
        Err(Error::shape(
            op,
            &[s],
            "the operand must be a ket (n×1) or a bra (1×n)",
        ))
    }
}

/// `‖v‖₂ = √Σ|vᵢ|²` of a ket or bra.
pub static NORM_L2: LazyLock<Dispatcher<(), f64>> = LazyLock::new(|| {
    Dispatcher::builder("norm_l2", 1)
        .check(vector)
        .unary("norm_l2_dense", |a: &Dense, _: &()| Ok(frobenius_dense(a)))
        .unary("norm_l2_csr", |a: &Csr, _: &()| Ok(frobenius_csr(a)))
        .unary("norm_l2_gpu", |a: &GpuDense, _: &()| a.norm_frobenius())
        .builtin()
});

/// `‖A‖_F = √Σ|aᵢⱼ|²`.
pub static NORM_FROBENIUS: LazyLock<Dispatcher<(), f64>> = LazyLock::new(|| {
    Dispatcher::builder("norm_frobenius", 1)
        .unary("norm_frobenius_dense", |a: &Dense, _: &()| {
            Ok(frobenius_dense(a))
        })
        .unary("norm_frobenius_csr", |a: &Csr, _: &()| Ok(frobenius_csr(a)))
        .unary("norm_frobenius_dia", |a: &Dia, _: &()| {
            Ok(super::dia::frobenius_dia(a))
        })
        .unary("norm_frobenius_gpu", |a: &GpuDense, _: &()| {
            a.norm_frobenius()
        })
        .unary("norm_frobenius_kronsum", |a: &KronSum, _: &()| {
            super::lazy::kron_sum::frobenius_kron_sum(a)
        })
        .unary("norm_frobenius_superop", |a: &SuperOp, _: &()| {
            super::lazy::super_op::frobenius_super_op(a)
        })
        .builtin()
});

/// `max |aᵢⱼ|` (NaN if any entry is NaN).
pub static NORM_MAX: LazyLock<Dispatcher<(), f64>> = LazyLock::new(|| {
    Dispatcher::builder("norm_max", 1)
        .unary("norm_max_dense", |a: &Dense, _: &()| Ok(max_dense(a)))
        .unary("norm_max_csr", |a: &Csr, _: &()| Ok(max_csr(a)))
        .unary("norm_max_dia", |a: &Dia, _: &()| Ok(super::dia::max_dia(a)))
        .unary("norm_max_gpu", |a: &GpuDense, _: &()| a.norm_max())
        .builtin()
});

/// The induced 1-norm: the largest column sum `max_j Σᵢ |aᵢⱼ|` (NaN if any entry is NaN).
pub static NORM_ONE: LazyLock<Dispatcher<(), f64>> = LazyLock::new(|| {
    Dispatcher::builder("norm_one", 1)
        .unary("norm_one_dense", |a: &Dense, _: &()| Ok(one_dense(a)))
        .unary("norm_one_csr", |a: &Csr, _: &()| Ok(one_csr(a)))
        .unary("norm_one_dia", |a: &Dia, _: &()| {
            super::dia::one_dia(a, ZERO)
        })
        .unary("norm_one_gpu", |a: &GpuDense, _: &()| a.norm_one())
        .unary("norm_one_kronsum", |a: &KronSum, _: &()| {
            match super::lazy::kron_sum::one_norm_exact(a)? {
                Some(n) => Ok(n),
                None => Ok(one_csr(&crate::convert::lazy::kron_sum_to_csr(a)?)),
            }
        })
        .unary("norm_one_superop", |a: &SuperOp, _: &()| {
            match super::lazy::super_op::one_norm_exact(a)? {
                Some(n) => Ok(n),
                None => Ok(one_csr(&crate::convert::lazy::super_op_to_csr(a)?)),
            }
        })
        .builtin()
});

/// The trace (nuclear) norm: the sum of the singular values.
pub static NORM_TRACE: LazyLock<Dispatcher<(), f64>> = LazyLock::new(|| {
    Dispatcher::builder("norm_trace", 1)
        .unary("norm_trace_dense", |a: &Dense, _: &()| trace_dense(a))
        .specialisation(crate::dispatch::checks::via_dense(
            "norm_trace_csr",
            csr_to_dense,
            |d: &Dense, _: &()| trace_dense(d),
        ))
        .builtin()
});

// The names before 0.2, which clashed with `ops::TRACE` and friends.
#[doc(hidden)]
pub use self::{
    NORM_FROBENIUS as FROBENIUS, NORM_L2 as L2, NORM_MAX as MAX, NORM_ONE as ONE,
    NORM_TRACE as TRACE,
};

/// Dense `max |aᵢⱼ|`. O(mn).
pub fn max_dense(a: &Dense) -> f64 {
    let (m, n) = (a.buffer().nrows(), a.buffer().ncols());
    if m == 0 {
        return 0.0;
    }
    max_abs(|| a.buffer_cols(0..m, 0, n))
}

/// Csr `max |aᵢⱼ|` over the stored entries. O(nnz).
pub fn max_csr(a: &Csr) -> f64 {
    max_abs(|| std::iter::once(a.data()))
}

/// `‖v‖₂` of a ket or bra.
///
/// # Errors
/// [`Error::Shape`] if the operand is not a vector.
///
/// ```
/// use polymat::{Dense, c64};
/// let v = Dense::from_rows(&[[c64::new(3.0, 0.0)], [c64::new(0.0, 4.0)]]).unwrap().into();
/// assert_eq!(polymat::ops::norm::l2(&v).unwrap(), 5.0);
/// ```
#[inline]
pub fn l2(a: &Data) -> Result<f64> {
    NORM_L2.call(&[a], Out::Auto, &())
}

/// The Frobenius norm.
///
/// # Errors
/// Only if no kernel can be reached for the operand's kind.
///
/// ```
/// use polymat::Csr;
/// assert_eq!(polymat::ops::norm::frobenius(&Csr::identity(4).into()).unwrap(), 2.0);
/// ```
#[inline]
pub fn frobenius(a: &Data) -> Result<f64> {
    NORM_FROBENIUS.call(&[a], Out::Auto, &())
}

/// The largest entry modulus.
///
/// # Errors
/// Only if no kernel can be reached for the operand's kind.
///
/// ```
/// use polymat::{Dense, c64};
/// let a = Dense::from_fn(2, 2, |i, j| c64::new(i as f64, -(j as f64) * 2.0)).into();
/// assert!((polymat::ops::norm::max(&a).unwrap() - 5f64.sqrt()).abs() < 1e-15);
/// ```
#[inline]
pub fn max(a: &Data) -> Result<f64> {
    NORM_MAX.call(&[a], Out::Auto, &())
}

/// The induced 1-norm (largest absolute column sum).
///
/// # Errors
/// Only if no kernel can be reached for the operand's kind.
///
/// ```
/// use polymat::{Dense, c64};
/// let a = Dense::from_rows(&[[c64::new(1.0, 0.0), c64::new(-2.0, 0.0)],
///                            [c64::new(3.0, 0.0), c64::new(0.0, 1.0)]]).unwrap().into();
/// assert_eq!(polymat::ops::norm::one(&a).unwrap(), 4.0);
/// ```
#[inline]
pub fn one(a: &Data) -> Result<f64> {
    NORM_ONE.call(&[a], Out::Auto, &())
}

/// The trace norm (sum of singular values).
///
/// # Errors
/// [`Error::Numerical`] if the SVD does not converge; [`Error::TooLarge`] if its dense
/// workspace (about 2 matrices of `a`'s shape) does not fit in the memory available now.
///
/// ```
/// use polymat::{Dense, c64};
/// let a = Dense::from_fn(2, 2, |i, j| c64::new(if i == j { -3.0 } else { 0.0 }, 0.0)).into();
/// assert!((polymat::ops::norm::trace(&a).unwrap() - 6.0).abs() < 1e-12);
/// ```
#[inline]
pub fn trace(a: &Data) -> Result<f64> {
    NORM_TRACE.call(&[a], Out::Auto, &())
}

/// Dense Frobenius norm. O(mn).
///
/// One vectorised pass of `Σ |aᵢⱼ|²`; where that sum overflows or may have lost entries to
/// underflow, faer's scaled norm (`norm_l2`), which is safe for every finite entry but takes
/// several times as long (`eigs` on the XXZ chain spent half its time there).
pub fn frobenius_dense(a: &Dense) -> f64 {
    let (m, n) = a.shape();
    if m == 0 || n == 0 {
        // Nothing to read, however many empty columns (or rows) the shape claims.
        return 0.0;
    }
    let cols = a.buffer().ncols();
    let workers = engine::workers(Family::Reduction, m.saturating_mul(n));
    // The scaled norms of column ranges, combined by `hypot`: their squares could overflow or
    // underflow as the entries' did.
    let robust = || match workers {
        1 => a.buffer().norm_l2(),
        w => {
            engine::sum_ranges(cols, w, |range| {
                Hypot(a.buffer().subcols(range.start, range.len()).norm_l2())
            })
            .0
        }
    };
    let sum = if cols == 1 {
        // A ket: its rows split among the workers.
        let col = a.buffer_col(0);
        engine::sum_ranges(col.len(), workers, |r| sum_sqr(&col[r]))
    } else {
        engine::sum_ranges(cols, workers, |r| r.map(|j| sum_sqr(a.buffer_col(j))).sum())
    };
    safe_root(sum).unwrap_or_else(robust)
}

/// A norm whose sum is `hypot` (`√(a² + b²)` without overflow or underflow).
struct Hypot(f64);

impl std::iter::Sum for Hypot {
    fn sum<I: Iterator<Item = Hypot>>(iter: I) -> Hypot {
        Hypot(iter.fold(0.0, |acc, x| acc.hypot(x.0)))
    }
}

/// Csr Frobenius norm. O(nnz).
pub fn frobenius_csr(a: &Csr) -> f64 {
    let d = a.data();
    let workers = engine::workers(Family::Reduction, d.len());
    engine::sum_ranges(d.len(), workers, |r| {
        d[r].iter().map(|x| x.norm_sqr()).sum::<f64>()
    })
    .sqrt()
}

/// Dense induced 1-norm. O(mn).
pub fn one_dense(a: &Dense) -> f64 {
    let (m, n) = a.shape();
    if m == 0 || n == 0 {
        return 0.0;
    }
    if a.layout() == crate::storage::Layout::RowMajor {
        // Rows are contiguous: accumulate every column's sum in one pass over the rows.
        let mut sums = vec![0.0; n];
        for i in 0..m {
            for (s, x) in sums.iter_mut().zip(a.buffer_col(i)) {
                *s += modulus(*x);
            }
        }
        return sums.into_iter().fold(0.0, nan_max);
    }
    // Column-major: buffer column j is column j.
    (0..n)
        .map(|j| a.buffer_col(j).iter().map(|x| modulus(*x)).sum::<f64>())
        .fold(0.0, nan_max)
}

/// Csr induced 1-norm. O(nnz + n), or O(nnz log nnz) when the columns far outnumber the
/// stored entries (so a 1×2⁶² matrix costs nothing extra).
pub fn one_csr(a: &Csr) -> f64 {
    let n = a.shape().1;
    if n > a.nnz().saturating_mul(4).max(1 << 16) {
        let mut sums: Vec<(usize, f64)> = a
            .indices()
            .iter()
            .zip(a.data())
            .map(|(&j, x)| (j, modulus(*x)))
            .collect();
        sums.sort_unstable_by_key(|e| e.0);
        let mut best = 0.0f64;
        let mut k = 0;
        while k < sums.len() {
            let (j, mut s) = (sums[k].0, 0.0);
            while k < sums.len() && sums[k].0 == j {
                s += sums[k].1;
                k += 1;
            }
            best = nan_max(best, s);
        }
        return best;
    }
    let mut cols = vec![0.0; n];
    for (&j, x) in a.indices().iter().zip(a.data()) {
        cols[j] += modulus(*x);
    }
    cols.into_iter().fold(0.0, nan_max)
}

/// `‖a − μI‖₁` of a square Dense matrix without forming `a − μI`: the column sums of `a`
/// with each diagonal entry shifted as it is summed. Exact: the same sums, in the same order,
/// as [`one_dense`] of the shifted matrix.
pub(crate) fn one_shifted_dense(a: &Dense, mu: c64) -> f64 {
    let n = a.shape().1;
    if n == 0 {
        return 0.0;
    }
    if a.layout() == crate::storage::Layout::RowMajor {
        let mut sums = vec![0.0; n];
        for i in 0..n {
            for (j, (s, x)) in sums.iter_mut().zip(a.buffer_col(i)).enumerate() {
                *s += modulus(if i == j { *x - mu } else { *x });
            }
        }
        return sums.into_iter().fold(0.0, nan_max);
    }
    (0..n)
        .map(|j| {
            // Column-major: buffer column j is column j.
            let c = a.buffer_col(j);
            let diagonal = std::iter::once(modulus(c[j] - mu));
            let head = c[..j].iter().map(|x| modulus(*x));
            head.chain(diagonal)
                .chain(c[j + 1..].iter().map(|x| modulus(*x)))
                .sum::<f64>()
        })
        .fold(0.0, nan_max)
}

/// `‖a − μI‖₁` of a square Csr matrix without forming `a − μI` (a copy of `a` and an
/// identity): one column sum per column, each diagonal entry shifted, `|μ|` for a diagonal
/// that is not stored. The same sums in the same order as [`one_csr`] of the shifted matrix.
///
/// # Errors
/// [`Error::TooLarge`] if the n column sums cannot be allocated.
pub(crate) fn one_shifted_csr(a: &Csr, mu: c64) -> Result<f64> {
    let n = a.shape().1;
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    let mut cols = crate::storage::alloc::try_vec("norm::one", a.shape(), n, 0.0f64)?;
    for i in 0..a.shape().0 {
        let mut diagonal = false;
        for k in p[i]..p[i + 1] {
            let j = idx[k];
            let x = if j == i {
                diagonal = true;
                val[k] - mu
            } else {
                val[k]
            };
            cols[j] += modulus(x);
        }
        if !diagonal && i < n {
            cols[i] += modulus(mu);
        }
    }
    Ok(cols.into_iter().fold(0.0, nan_max))
}

/// Dense trace norm through faer's SVD. O(mn·min(m, n)).
///
/// # Errors
/// [`Error::Numerical`] if the SVD does not converge.
pub fn trace_dense(a: &Dense) -> Result<f64> {
    if a.shape().0 == 0 || a.shape().1 == 0 {
        return Ok(0.0);
    }
    // faer's bidiagonal form and its workspace.
    crate::storage::alloc::check_workspace("norm_trace", a.shape(), 2)?;
    let _avx = engine::AvxGuard::for_size(a.shape().0.max(a.shape().1));
    let s = a.as_ref().singular_values().map_err(|e| Error::Numerical {
        op: "norm_trace".into(),
        reason: format!("{e:?}"),
    })?;
    Ok(s.iter().sum())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Layout;

    /// The in-place shifted 1-norms equal the 1-norm of the formed `a − μI`, bit for bit,
    /// with and without stored diagonals, on both Dense layouts; and NaN stays NaN.
    #[test]
    fn shifted_one_norms_match_the_formed_shift() {
        let mu = c64::new(0.75, -1.5);
        for n in [0usize, 1, 2, 5, 17] {
            for fill in [0usize, 1, 3] {
                let d = Dense::from_fn(n, n, |i, j| {
                    if (i * 7 + j * 3) % (fill + 2) == 0 && i != j + 1 {
                        c64::new((1.0 + i as f64).ln() - 0.3 * j as f64, (i * j) as f64 / 7.0)
                    } else {
                        c64::new(0.0, 0.0)
                    }
                });
                let c = crate::convert::builtin::dense_to_csr(&d).unwrap();
                let shifted = super::super::add::add_dense(&d, &Dense::identity(n), -mu).unwrap();
                let want = one_dense(&shifted);
                assert_eq!(
                    one_shifted_csr(&c, mu).unwrap().to_bits(),
                    want.to_bits(),
                    "{n} {fill}"
                );
                for layout in [Layout::ColMajor, Layout::RowMajor] {
                    let dl = d.clone().into_layout(layout).unwrap();
                    assert_eq!(
                        one_shifted_dense(&dl, mu).to_bits(),
                        want.to_bits(),
                        "{n} {layout:?}"
                    );
                }
            }
        }
        let nan = Csr::scaled_identity(3, c64::new(f64::NAN, 0.0));
        assert!(one_shifted_csr(&nan, mu).unwrap().is_nan());
    }

    /// The Frobenius norm of Dense: the one-pass sum of squares where it is safe, faer's scaled
    /// norm where a square overflows or underflows, NaN for a NaN entry, 0 for no entries;
    /// both layouts, serial and parallel.
    #[test]
    fn frobenius_dense_is_safe_at_every_scale() {
        for scale in [1.0, 1e-170, 1e170, 1e300] {
            for (m, n) in [(1, 1), (37, 1), (5000, 1), (9, 13)] {
                let d = Dense::from_fn(m, n, |i, j| {
                    c64::new(((i + 2 * j) % 7) as f64 - 3.0, ((3 * i + j) % 5) as f64) * scale
                });
                let want = d.buffer().norm_l2();
                for (layout, force) in [Layout::ColMajor, Layout::RowMajor]
                    .into_iter()
                    .flat_map(|l| [(l, false), (l, true)])
                {
                    let dl = d.clone().into_layout(layout).unwrap();
                    // The serial and the parallel paths (partial norms combined by `hypot`).
                    engine::set_force_parallel(force);
                    let got = frobenius_dense(&dl);
                    engine::set_force_parallel(false);
                    assert!(got.is_finite(), "{scale:e} {m}x{n} {force}");
                    assert!(
                        (got - want).abs() <= 1e-13 * want,
                        "{scale:e} {m}x{n} {layout:?} {force}"
                    );
                }
            }
        }
        let mut nan = Dense::zeros(100, 1);
        nan.col_mut(0)[60] = c64::new(f64::NAN, 0.0);
        assert!(frobenius_dense(&nan).is_nan());
        assert_eq!(frobenius_dense(&Dense::zeros(100, 1)), 0.0);
        assert_eq!(frobenius_dense(&Dense::zeros(0, 4)), 0.0);
    }

    /// `max |aᵢⱼ|` in running maxima: NaN wherever it sits (every lane and the tail), an
    /// overflowing square through `|x|`, 0 for no entries; Dense of both layouts and Csr.
    #[test]
    fn max_norms_find_nan_anywhere_and_survive_overflow() {
        let v = |i: usize| c64::new((i % 7) as f64 - 3.0, (i % 5) as f64 * 0.5);
        for len in [1usize, 2, 7, 8, 9, 17, 31] {
            let want = (0..len).map(|i| v(i).norm()).fold(0.0, f64::max);
            let d = Dense::from_fn(len, 1, |i, _| v(i));
            assert!((max_dense(&d) - want).abs() <= 1e-15 * want, "{len}");
            for at in 0..len {
                let mut e: Vec<c64> = (0..len).map(v).collect();
                e[at] = c64::new(0.0, f64::NAN);
                let d = Dense::from_fn(len, 1, |i, _| e[i]);
                assert!(max_dense(&d).is_nan(), "{len} {at}");
                let c =
                    Csr::from_triplets((len, 1), &(0..len).collect::<Vec<_>>(), &vec![0; len], &e)
                        .unwrap();
                assert!(max_csr(&c).is_nan(), "{len} {at}");
                e[at] = c64::new(1e300, -1e300);
                let d = Dense::from_fn(len, 1, |i, _| e[i])
                    .into_layout(Layout::RowMajor)
                    .unwrap();
                assert_eq!(max_dense(&d), c64::new(1e300, -1e300).norm(), "{len} {at}");
            }
        }
        assert_eq!(max_dense(&Dense::zeros(0, 3)), 0.0);
        assert_eq!(max_dense(&Dense::zeros(3, 0)), 0.0);
        assert_eq!(max_csr(&Csr::zeros(4, 4)), 0.0);
    }

    /// `modulus` is `hypot` within an ulp in range, and `hypot` itself outside it: tiny and
    /// huge parts, zeros, infinities and NaN.
    #[test]
    fn modulus_is_hypot_within_an_ulp() {
        let parts = [
            0.0, -0.0, 1e-300, 3e-160, 1e-140, 0.5, -3.0, 7.25e150, 1e160, 1e300,
        ];
        for &re in &parts {
            for &im in &parts {
                let (x, want) = (c64::new(re, im), c64::new(re, im).norm());
                let got = modulus(x);
                assert!(
                    (got - want).abs() <= f64::EPSILON * want,
                    "{x}: {got} {want}"
                );
            }
        }
        assert_eq!(modulus(c64::new(f64::INFINITY, f64::NAN)), f64::INFINITY);
        assert!(modulus(c64::new(1.0, f64::NAN)).is_nan());
        assert_eq!(modulus(c64::new(0.0, -0.0)), 0.0);
    }
}
