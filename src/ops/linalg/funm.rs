//! Matrix functions: the principal square root and the principal logarithm.
//!
//! Both use the spectral decomposition when it is well conditioned (Hermitian input, or a
//! general input whose eigenvector basis has condition number ≤ [`EIGENBASIS_COND_MAX`]) and
//! an iteration that needs no eigenvectors otherwise (defective or nearly defective input):
//! the Denman–Beavers iteration for the square root, inverse scaling and squaring with a
//! Gauss–Legendre Padé approximant for the logarithm (Higham, *Functions of Matrices*, 2008,
//! §6.3 and §11.4).

use std::sync::LazyLock;

use faer::{Mat, MatRef, Side};

use super::decomp::HERMITIAN_ATOL;
use crate::convert::builtin::{csr_to_dense, dense_to_csr};
use crate::dispatch::checks::via_dense;
use crate::dispatch::{Dispatcher, DispatcherBuilder, Out};
use crate::engine;
use crate::error::{Error, Result};
use crate::scalar::c64;
use crate::storage::{Data, Dense, alloc};

/// Above this 1-norm condition number of the eigenvector basis, the eigendecomposition is not
/// trusted and the eigenvector-free algorithm runs instead.
pub const EIGENBASIS_COND_MAX: f64 = 1e6;

/// The n × n matrices `sqrtm` and `logm` may hold at once, counted for the check before they
/// start: faer's eigendecomposition (its Hessenberg and Schur forms, their vectors), the
/// inverse of the eigenvector basis and the products back; or the iterations without
/// eigenvectors (Denman–Beavers' pair and their inverses, the inverse scaling and squaring's
/// square roots and Padé terms).
const WORKSPACE: u32 = 10;

type DenseFn = fn(&Dense) -> Result<Dense>;

/// Dense → Dense, Csr → Dense and Csr → Csr kernels of a function computed densely.
fn dense_kernels(
    b: DispatcherBuilder<(), Data>,
    name: &str,
    f: DenseFn,
) -> DispatcherBuilder<(), Data> {
    b.result_shape(crate::dispatch::checks::first_shape)
        .unary(&format!("{name}_dense"), move |a: &Dense, _: &()| f(a))
        .specialisation(via_dense(
            &format!("{name}_csr_dense"),
            csr_to_dense,
            move |d: &Dense, _: &()| f(d),
        ))
        .specialisation(via_dense(
            &format!("{name}_csr"),
            csr_to_dense,
            move |d: &Dense, _: &()| dense_to_csr(&f(d)?),
        ))
}

/// The principal square root. Kernels: Dense → Dense, Csr → Dense, Csr → Csr (computed
/// densely; the square root of a sparse matrix is dense in general).
pub static SQRTM: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    dense_kernels(
        Dispatcher::builder("sqrtm", 1).check_square(),
        "sqrtm",
        sqrtm_dense,
    )
    .builtin()
});

/// The principal logarithm. Kernels as [`SQRTM`].
pub static LOGM: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    dense_kernels(
        Dispatcher::builder("logm", 1).check_square(),
        "logm",
        logm_dense,
    )
    .builtin()
});

/// The principal square root `X` with `X² = a` and eigenvalues in the right half-plane (for a
/// negative eigenvalue λ, `i·√|λ|`, as scipy's `sqrtm`).
///
/// # Errors
/// [`Error::Shape`] if `a` is not square; [`Error::Numerical`] if the input is defective with
/// an eigenvalue on the closed negative real axis, or not finite; [`Error::TooLarge`] if the
/// workspace (about 10 matrices of `a`'s shape) does not fit in the memory available now.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// let a = Dense::from_rows(&[[c64::new(4.0, 0.0), c64::new(0.0, 0.0)],
///                            [c64::new(0.0, 0.0), c64::new(9.0, 0.0)]]).unwrap();
/// let r = polymat::sqrtm(&a.into(), Out::Auto).unwrap();
/// assert!((r.downcast_ref::<Dense>().unwrap().get(1, 1) - c64::new(3.0, 0.0)).norm() < 1e-14);
/// ```
#[inline]
pub fn sqrtm(a: &Data, out: Out) -> Result<Data> {
    SQRTM.call(&[a], out, &())
}

/// The principal logarithm `X` with `exp(X) = a` and eigenvalues with imaginary part in
/// (−π, π].
///
/// # Errors
/// [`Error::Shape`] if `a` is not square; [`Error::Numerical`] if `a` is singular (no
/// logarithm), or defective with an eigenvalue on the negative real axis, or not finite;
/// [`Error::TooLarge`] if the workspace (about 10 matrices of `a`'s shape) does not fit in the
/// memory available now.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// let e = std::f64::consts::E;
/// let a = Dense::from_rows(&[[c64::new(e, 0.0), c64::new(0.0, 0.0)],
///                            [c64::new(0.0, 0.0), c64::new(1.0, 0.0)]]).unwrap();
/// let l = polymat::logm(&a.into(), Out::Dense).unwrap();
/// assert!((l.downcast_ref::<Dense>().unwrap().get(0, 0) - c64::new(1.0, 0.0)).norm() < 1e-14);
/// ```
#[inline]
pub fn logm(a: &Data, out: Out) -> Result<Data> {
    LOGM.call(&[a], out, &())
}

fn numerical(op: &str, reason: impl Into<String>) -> Error {
    Error::Numerical {
        op: op.to_owned(),
        reason: reason.into(),
    }
}

fn check_finite(op: &str, a: &Dense) -> Result<()> {
    if a.entries().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(numerical(op, "the matrix has non-finite entries"))
    }
}

/// Dense kernel of [`sqrtm`]. O(n³).
///
/// # Errors
/// As [`sqrtm`].
pub fn sqrtm_dense(a: &Dense) -> Result<Dense> {
    crate::shape::square("sqrtm", a.shape())?;
    alloc::check_workspace("sqrtm", a.shape(), WORKSPACE)?;
    check_finite("sqrtm", a)?;
    let _avx = engine::AvxGuard::for_size(a.shape().0);
    match spectral("sqrtm", a, |z| Ok(z.sqrt()))? {
        Some(f) => Ok(Dense::new(f)),
        None => denman_beavers("sqrtm", a.as_ref()).map(Dense::new),
    }
}

/// Dense kernel of [`logm`]. O(n³).
///
/// # Errors
/// As [`logm`].
pub fn logm_dense(a: &Dense) -> Result<Dense> {
    crate::shape::square("logm", a.shape())?;
    alloc::check_workspace("logm", a.shape(), WORKSPACE)?;
    check_finite("logm", a)?;
    let _avx = engine::AvxGuard::for_size(a.shape().0);
    let log = |z: c64| {
        if z == c64::new(0.0, 0.0) {
            Err(numerical(
                "logm",
                "the matrix is singular: it has no logarithm",
            ))
        } else {
            Ok(z.ln())
        }
    };
    match spectral("logm", a, log)? {
        Some(f) => Ok(Dense::new(f)),
        None => inverse_scaling_squaring(a.as_ref()).map(Dense::new),
    }
}

/// `V·f(Λ)·V⁻¹` if the eigendecomposition is trustworthy, `None` otherwise.
fn spectral(op: &str, a: &Dense, f: impl Fn(c64) -> Result<c64>) -> Result<Option<Mat<c64>>> {
    let n = a.shape().0;
    let m = a.as_ref();
    if super::super::compare::isherm_dense(a, HERMITIAN_ATOL) {
        let e = m
            .self_adjoint_eigen(Side::Lower)
            .map_err(|e| numerical(op, format!("the eigendecomposition failed: {e:?}")))?;
        let (u, s) = (e.U(), e.S().column_vector());
        let fs = (0..n)
            .map(|i| f(c64::new(s[i].re, 0.0)))
            .collect::<Result<Vec<_>>>()?;
        let scaled = Mat::from_fn(n, n, |i, j| u[(i, j)] * fs[j]);
        return Ok(Some(&scaled * u.adjoint()));
    }
    let e = m
        .eigen()
        .map_err(|e| numerical(op, format!("the eigendecomposition failed: {e:?}")))?;
    let (v, s) = (e.U(), e.S().column_vector());
    let Ok(v_inv) = inverse(op, v) else {
        return Ok(None);
    };
    if one_norm(v) * one_norm(v_inv.as_ref()) > EIGENBASIS_COND_MAX {
        return Ok(None);
    }
    let fs = (0..n).map(|i| f(s[i])).collect::<Result<Vec<_>>>()?;
    let scaled = Mat::from_fn(n, n, |i, j| v[(i, j)] * fs[j]);
    Ok(Some(&scaled * &v_inv))
}

fn one_norm(a: MatRef<'_, c64>) -> f64 {
    (0..a.ncols())
        .map(|j| a.col(j).iter().map(|x| x.norm()).sum::<f64>())
        .fold(0.0, f64::max)
}

fn inverse(op: &str, a: MatRef<'_, c64>) -> Result<Mat<c64>> {
    Dense::try_identity(a.nrows())
        .and_then(|eye| super::lu::Factorised::dense(&Dense::new(a.to_owned()), "inv")?.solve(&eye))
        .and_then(Dense::try_into_mat)
        .map_err(|_| numerical(op, "a matrix in the iteration became singular"))
}

/// The Denman–Beavers iteration `Y ← (Y + Z⁻¹)/2`, `Z ← (Z + Y⁻¹)/2` from `Y = a`, `Z = I`;
/// `Y → a^{1/2}` quadratically for `a` without eigenvalues on the closed negative real axis.
fn denman_beavers(op: &str, a: MatRef<'_, c64>) -> Result<Mat<c64>> {
    let n = a.nrows();
    let (mut y, mut z) = (a.to_owned(), Mat::<c64>::identity(n, n));
    let mut last_step = f64::INFINITY;
    for _ in 0..100 {
        let (y_inv, z_inv) = (inverse(op, y.as_ref())?, inverse(op, z.as_ref())?);
        let y_next = Mat::from_fn(n, n, |i, j| (y[(i, j)] + z_inv[(i, j)]) * 0.5);
        z = Mat::from_fn(n, n, |i, j| (z[(i, j)] + y_inv[(i, j)]) * 0.5);
        let step = one_norm((&y_next - &y).as_ref());
        y = y_next;
        let size = one_norm(y.as_ref());
        // Converged, or rounding errors have taken over (the step stopped shrinking).
        if step <= 4.0 * f64::EPSILON * size * (n as f64)
            || (step >= last_step && step <= 1e-8 * size)
        {
            let residual = one_norm((&y * &y - a).as_ref());
            return if residual <= 1e-8 * one_norm(a).max(f64::MIN_POSITIVE) {
                Ok(y)
            } else {
                Err(numerical(
                    op,
                    "the square-root iteration converged to a wrong value",
                ))
            };
        }
        last_step = step;
    }
    Err(numerical(
        op,
        "the square-root iteration did not converge (an eigenvalue on the negative real axis?)",
    ))
}

/// 8-point Gauss–Legendre nodes and weights on [−1, 1] (Abramowitz & Stegun, table 25.4).
const GAUSS_LEGENDRE_8: [(f64, f64); 4] = [
    (0.183_434_642_495_649_8, 0.362_683_783_378_362),
    (0.525_532_409_916_329, 0.313_706_645_877_887_3),
    (0.796_666_477_413_626_7, 0.222_381_034_453_374_5),
    (0.960_289_856_497_536_3, 0.101_228_536_290_376_3),
];

/// `log(a)` by taking square roots until `‖a^{1/2^s} − I‖₁ ≤ 1/4`, then
/// `log(I + X) = ∫₀¹ X (I + tX)⁻¹ dt` by 8-point Gauss–Legendre quadrature (the [8/8] Padé
/// approximant), times `2^s`.
fn inverse_scaling_squaring(a: MatRef<'_, c64>) -> Result<Mat<c64>> {
    let n = a.nrows();
    let eye = Mat::<c64>::identity(n, n);
    let mut t = a.to_owned();
    let mut s = 0i32;
    while one_norm((&t - &eye).as_ref()) > 0.25 {
        if s == 64 {
            return Err(numerical("logm", "too many square roots were needed"));
        }
        t = denman_beavers("logm", t.as_ref())?;
        s += 1;
    }
    let x = &t - &eye;
    let mut log = Mat::<c64>::zeros(n, n);
    for &(node, weight) in &GAUSS_LEGENDRE_8 {
        for tau in [0.5 * (1.0 - node), 0.5 * (1.0 + node)] {
            // (I + τX) Y = X, with X and (I + τX) commuting
            let lhs = Mat::from_fn(n, n, |i, j| eye[(i, j)] + x[(i, j)] * tau);
            let y = super::lu::Factorised::dense(&Dense::new(lhs), "logm")?
                .solve(&Dense::new(x.clone()))?;
            log += y.as_ref() * faer::Scale(c64::new(0.5 * weight, 0.0));
        }
    }
    Ok(log * faer::Scale(c64::new(2f64.powi(s), 0.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jordan() -> Dense {
        Dense::from_rows(&[
            [c64::new(1.0, 0.0), c64::new(1.0, 0.0)],
            [c64::new(0.0, 0.0), c64::new(1.0, 0.0)],
        ])
        .unwrap()
    }

    #[test]
    fn defective_input_skips_the_eigendecomposition() {
        let spectral = spectral("sqrtm", &jordan(), |z| Ok(z.sqrt())).unwrap();
        assert!(
            spectral.is_none(),
            "a Jordan block has no usable eigenbasis"
        );
        let diag = Dense::from_fn(2, 2, |i, j| c64::new(if i == j { 4.0 } else { 0.0 }, 0.0));
        assert!(spectral_some(&diag));
    }

    fn spectral_some(a: &Dense) -> bool {
        spectral("sqrtm", a, |z| Ok(z.sqrt())).unwrap().is_some()
    }

    #[test]
    fn denman_beavers_rejects_a_negative_defective_input() {
        // [[-1, 1], [0, -1]]: defective with eigenvalue -1, no real-branch iteration converges.
        let a = Dense::from_rows(&[
            [c64::new(-1.0, 0.0), c64::new(1.0, 0.0)],
            [c64::new(0.0, 0.0), c64::new(-1.0, 0.0)],
        ])
        .unwrap();
        assert!(matches!(sqrtm_dense(&a), Err(Error::Numerical { .. })));
    }
}
