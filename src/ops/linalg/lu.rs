//! LU factorisations checked for singularity: dense (faer's partial pivoting), sparse (faer's
//! sparse LU) and GPU (cuSOLVER's getrf, `factorise_gpu`), factorised once and solved many
//! times (`inv`, `solve`, the shift-invert of `eigs`). One condition estimator serves all three.

use faer::linalg::solvers::{PartialPivLu, SolveCore};
use faer::sparse::linalg::solvers::Lu as SparseLu;
use faer::sparse::{SparseColMatRef, SymbolicSparseColMatRef};
use faer::{Conj, Mat, MatMut};

use crate::engine;
use crate::error::{Error, Result};
use crate::gpu::{GpuDense, GpuLu};
use crate::scalar::c64;
use crate::storage::{Csr, Dense};

/// Below this estimated reciprocal condition number (in the 1-norm) a matrix counts as
/// singular to working precision, for the dense and the sparse LU alike: `inv` and `solve`
/// return [`Error::Numerical`] naming the estimate (scipy warns at the same point).
pub const RCOND_MIN: f64 = f64::EPSILON;

/// The error for a solution with a non-finite entry.
fn not_finite(op: &str) -> Error {
    Error::Numerical {
        op: op.to_owned(),
        reason: "the solution is not finite: the matrix is singular to working precision"
            .to_owned(),
    }
}

/// Checks that a solution is finite.
pub(crate) fn finite(op: &str, x: Mat<c64>) -> Result<Mat<c64>> {
    let ok = x.nrows() == 0 || (0..x.ncols()).all(|j| x.col(j).iter().all(|v| v.is_finite()));
    if ok { Ok(x) } else { Err(not_finite(op)) }
}

/// An LU factorisation of a square matrix, checked for singularity, ready for many solves.
pub(crate) enum Factorised {
    /// The dense partial-pivoting LU of `a`.
    Dense {
        op: &'static str,
        lu: PartialPivLu<c64>,
    },
    /// The sparse LU of `aᵀ` (the Csr arrays of `a` read as compressed columns).
    Sparse {
        op: &'static str,
        lu: SparseLu<usize, c64>,
    },
}

impl Factorised {
    /// Factorises a Dense matrix.
    ///
    /// # Errors
    /// [`Error::Numerical`] for a zero pivot, or an estimated reciprocal condition number
    /// below [`RCOND_MIN`].
    pub(crate) fn dense(a: &Dense, op: &'static str) -> Result<Factorised> {
        let n = a.shape().0;
        // faer's factor (a copy of `a`) and its scratch.
        crate::storage::alloc::check_workspace(op, (n, n), 2)?;
        let _avx = engine::AvxGuard::for_size(n);
        let lu = a.as_ref().partial_piv_lu();
        let u = lu.U();
        if let Some(i) = (0..n).find(|&i| u[(i, i)] == c64::new(0.0, 0.0)) {
            return Err(Error::Numerical {
                op: op.to_owned(),
                reason: format!("the matrix is singular (zero pivot at step {i} of the LU)"),
            });
        }
        let f = Factorised::Dense { op, lu };
        f.check_condition(n, super::super::norm::one_dense(a))?;
        Ok(f)
    }

    /// Factorises a Csr matrix with faer's sparse LU (COLAMD ordering).
    ///
    /// # Errors
    /// As [`Factorised::dense`]; structurally singular matrices too.
    pub(crate) fn sparse(a: &Csr, op: &'static str) -> Result<Factorised> {
        let n = a.shape().0;
        let singular = |reason: String| Error::Numerical {
            op: op.to_owned(),
            reason,
        };
        let symbolic = SymbolicSparseColMatRef::new_checked(n, n, a.indptr(), None, a.indices());
        let at = SparseColMatRef::new(symbolic, a.data());
        let _avx = engine::AvxGuard::for_size(n);
        let lu = at.sp_lu().map_err(|e| match e {
            faer::sparse::linalg::LuError::SymbolicSingular { index } => singular(format!(
                "the matrix is structurally singular (no pivot at step {index} of the sparse LU)"
            )),
            other => singular(format!("the sparse LU failed: {other:?}")),
        })?;
        let f = Factorised::Sparse { op, lu };
        f.check_condition(n, super::super::norm::one_csr(a))?;
        Ok(f)
    }

    fn op(&self) -> &'static str {
        match self {
            Factorised::Dense { op, .. } | Factorised::Sparse { op, .. } => op,
        }
    }

    /// `a⁻¹·b` (or `a⁻ᴴ·b` with `adjoint`), in place.
    fn solve_mat(&self, x: MatMut<'_, c64>, adjoint: bool) {
        match (self, adjoint) {
            (Factorised::Dense { lu, .. }, false) => lu.solve_in_place_with_conj(Conj::No, x),
            (Factorised::Dense { lu, .. }, true) => {
                lu.solve_transpose_in_place_with_conj(Conj::Yes, x)
            }
            // The factorisation is of aᵀ: a = (aᵀ)ᵀ and aᴴ = conj(aᵀ).
            (Factorised::Sparse { lu, .. }, false) => {
                lu.solve_transpose_in_place_with_conj(Conj::No, x)
            }
            (Factorised::Sparse { lu, .. }, true) => lu.solve_in_place_with_conj(Conj::Yes, x),
        }
    }

    /// `a⁻¹·b`.
    ///
    /// # Errors
    /// [`Error::Numerical`] if the solution is not finite.
    pub(crate) fn solve(&self, b: &Dense) -> Result<Dense> {
        let mut x = b.clone().try_into_mat()?;
        if b.shape().0 > 0 && b.shape().1 > 0 {
            let _avx = engine::AvxGuard::for_size(b.shape().0);
            self.solve_mat(x.as_mut(), false);
        }
        finite(self.op(), x).map(Dense::new)
    }

    /// Refuses matrices whose estimated reciprocal condition number is below [`RCOND_MIN`].
    fn check_condition(&self, n: usize, norm1: f64) -> Result<()> {
        check_condition(self.op(), n, norm1, |v, adjoint| {
            self.solve_mat(MatMut::from_column_major_slice_mut(v, n, 1), adjoint);
            Ok(())
        })
    }
}

/// Refuses an `n × n` matrix of 1-norm `norm1` whose estimated reciprocal condition number is
/// below [`RCOND_MIN`]; `solve(v, adjoint)` overwrites the column `v` with `a⁻¹·v` (or
/// `a⁻ᴴ·v`) from a factorisation of `a`: the dense and sparse LUs here, cuSOLVER's on the GPU.
///
/// # Errors
/// [`Error::Numerical`] naming the estimate; the errors of `solve`.
pub(crate) fn check_condition(
    op: &str,
    n: usize,
    norm1: f64,
    solve: impl FnMut(&mut [c64], bool) -> Result<()>,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let inv_norm = inverse_norm_estimate(n, solve)?;
    let rcond = if norm1 > 0.0 && inv_norm.is_finite() && inv_norm > 0.0 {
        1.0 / (norm1 * inv_norm)
    } else {
        0.0
    };
    if rcond < RCOND_MIN || !rcond.is_finite() {
        return Err(Error::Numerical {
            op: op.to_owned(),
            reason: format!(
                "the matrix is singular to working precision: estimated reciprocal \
                 condition number {rcond:.3e} < {RCOND_MIN:.3e}"
            ),
        });
    }
    Ok(())
}

/// `‖a⁻¹‖₁` by Hager's and Higham's estimator (LAPACK's `zlacn2`), plus Higham's alternating
/// test vector: a few solves with `a` and `aᴴ`.
fn inverse_norm_estimate(
    n: usize,
    mut solve: impl FnMut(&mut [c64], bool) -> Result<()>,
) -> Result<f64> {
    let norm1 = |v: &[c64]| v.iter().map(|z| z.norm()).sum::<f64>();
    let mut x = vec![c64::new(1.0 / n as f64, 0.0); n];
    let mut est = 0.0f64;
    let mut last_j = usize::MAX;
    for iter in 0..5 {
        let mut y = x.clone();
        solve(&mut y, false)?;
        let new = norm1(&y);
        if !new.is_finite() {
            return Ok(f64::INFINITY);
        }
        if iter > 0 && new <= est {
            break;
        }
        est = new;
        let mut z: Vec<c64> = y
            .iter()
            .map(|&v| {
                if v.norm() == 0.0 {
                    c64::new(1.0, 0.0)
                } else {
                    v / v.norm()
                }
            })
            .collect();
        solve(&mut z, true)?;
        let (j, zmax) = z.iter().enumerate().fold((0, -1.0f64), |(bj, bv), (i, v)| {
            if v.norm() > bv {
                (i, v.norm())
            } else {
                (bj, bv)
            }
        });
        let ztx: f64 = z.iter().zip(&x).map(|(z, x)| (z.conj() * x).re).sum();
        if (iter > 0 && zmax <= ztx) || j == last_j {
            break;
        }
        last_j = j;
        x = (0..n)
            .map(|i| c64::new(f64::from(u8::from(i == j)), 0.0))
            .collect();
    }
    let mut alt: Vec<c64> = (0..n)
        .map(|i| {
            let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
            let frac = if n > 1 {
                i as f64 / (n - 1) as f64
            } else {
                0.0
            };
            c64::new(sign * (1.0 + frac), 0.0)
        })
        .collect();
    solve(&mut alt, false)?;
    Ok(est.max(2.0 * norm1(&alt) / (3.0 * n as f64)))
}

/// Factorises `a` and refuses it as the CPU does: an exactly zero pivot, or an estimated
/// reciprocal condition number below [`RCOND_MIN`] (Hager–Higham, with
/// single-column solves on the GPU).
pub(crate) fn factorise_gpu(a: &GpuDense, op: &'static str) -> Result<GpuLu> {
    let n = a.shape().0;
    let lu = a.lu(op)?;
    check_condition(op, n, a.norm_one()?, |v, adjoint| {
        let x = lu.solve(
            &GpuDense::from_dense(&Dense::from_col_major(n, 1, v)?)?,
            adjoint,
        )?;
        v.copy_from_slice(x.to_dense()?.col(0));
        Ok(())
    })?;
    Ok(lu)
}

/// Refuses a result with a non-finite entry, as the CPU kernels do.
pub(crate) fn finite_gpu(op: &str, x: GpuDense) -> Result<GpuDense> {
    if x.norm_max()?.is_finite() {
        Ok(x)
    } else {
        Err(not_finite(op))
    }
}
