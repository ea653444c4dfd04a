//! Linear systems and inverses: dense LU / QR through faer, sparse LU through faer's sparse
//! solver.

use std::sync::LazyLock;

use faer::linalg::solvers::{Solve, SolveLstsq};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMatRef};
use faer::{Mat, MatRef};

use super::{check_square, via_dense};
use crate::convert::builtin::{csr_to_dense, dense_to_csr};
use crate::dispatch::{Dispatcher, Out, Specialisation};
use crate::engine;
use crate::error::{Error, Result};
use crate::scalar::c64;
use crate::storage::{Csr, Data, Dense};

/// How [`solve()`] solves `a·x = b`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum SolveMethod {
    /// LU with partial pivoting; `a` must be square and nonsingular. Csr `a` uses a sparse LU.
    #[default]
    Lu,
    /// Least squares by Householder QR; `a` must be m×n with m ≥ n and full column rank.
    /// Csr `a` is densified.
    Lstsq,
}

/// `a⁻¹`. Kernels: Dense, Csr (through the dense LU; the inverse of a sparse matrix is
/// generally dense, and exact zeros are dropped from the Csr result).
pub static INV: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("inv", 1)
        .check(check_square)
        .unary("inv_dense", |a: &Dense, _: &()| inv_dense(a))
        .specialisation(via_dense("inv_csr", csr_to_dense, |d: &Dense, _: &()| {
            dense_to_csr(&inv_dense(d)?)
        }))
        .builtin()
});

/// The inverse of a square matrix.
///
/// # Errors
/// [`Error::Shape`] if `a` is not square; [`Error::Numerical`] if it is singular (a zero
/// pivot) or the result is not finite.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// let a = Dense::from_rows(&[[c64::new(2.0, 0.0), c64::new(1.0, 0.0)],
///                            [c64::new(1.0, 0.0), c64::new(1.0, 0.0)]]).unwrap();
/// let inv = polymat::inv(&a.into(), Out::Auto).unwrap();
/// assert!((inv.downcast_ref::<Dense>().unwrap().get(0, 1) - c64::new(-1.0, 0.0)).norm() < 1e-14);
/// assert!(polymat::inv(&Dense::zeros(2, 2).into(), Out::Auto).is_err());
/// ```
pub fn inv(a: &Data, out: Out) -> Result<Data> {
    INV.call(&[a], out, &())
}

/// Dense kernel of [`inv`]: partial-pivoting LU, then solves against the identity. O(n³).
///
/// # Errors
/// As [`inv`].
pub fn inv_dense(a: &Dense) -> Result<Dense> {
    super::square("inv", a.shape())?;
    let n = a.shape().0;
    lu_solve("inv", a.as_ref(), Mat::identity(n, n)).map(Dense::new)
}

/// Solves with a partial-pivoting LU of the square `a`, checking for zero pivots.
fn lu_solve(op: &str, a: MatRef<'_, c64>, mut rhs: Mat<c64>) -> Result<Mat<c64>> {
    let _avx = engine::AvxGuard::for_size(a.nrows());
    let lu = a.partial_piv_lu();
    let u = lu.U();
    if let Some(i) = (0..u.nrows()).find(|&i| u[(i, i)] == c64::new(0.0, 0.0)) {
        return Err(Error::Numerical {
            op: op.to_owned(),
            reason: format!("the matrix is singular (zero pivot at step {i} of the LU)"),
        });
    }
    lu.solve_in_place(rhs.as_mut());
    finite(op, rhs)
}

fn finite(op: &str, x: Mat<c64>) -> Result<Mat<c64>> {
    let ok = (0..x.ncols()).all(|j| x.col(j).iter().all(|v| v.is_finite()));
    if ok {
        Ok(x)
    } else {
        Err(Error::Numerical {
            op: op.to_owned(),
            reason: "the solution is not finite: the matrix is singular to working precision"
                .to_owned(),
        })
    }
}

/// `x` with `a·x = b`. Kernels: (Dense, Dense) → Dense, (Csr, Dense) → Dense (sparse LU),
/// (Csr, Csr) → Csr (sparse LU, dense right-hand side).
pub static SOLVE: LazyLock<Dispatcher<SolveMethod>> = LazyLock::new(|| {
    Dispatcher::builder("solve", 2)
        .check(|op, args, m| solve_shapes(op, args[0].shape(), args[1].shape(), *m))
        .binary("solve_dense", |a: &Dense, b: &Dense, m: &SolveMethod| {
            solve_dense(a, b, *m)
        })
        .binary("solve_csr_dense", |a: &Csr, b: &Dense, m: &SolveMethod| {
            solve_csr_dense(a, b, *m)
        })
        .specialisation(
            Specialisation::binary("solve_csr", |a: &Csr, b: &Csr, m: &SolveMethod| {
                dense_to_csr(&solve_csr_dense(a, &csr_to_dense(b)?, *m)?)
            })
            .converts_internally_to::<Dense>(),
        )
        .builtin()
});

fn solve_shapes(op: &str, a: (usize, usize), b: (usize, usize), m: SolveMethod) -> Result<()> {
    let (ok, req) = match m {
        SolveMethod::Lu => (
            a.0 == a.1 && a.0 == b.0,
            "the matrix must be square with as many rows as the right-hand side",
        ),
        SolveMethod::Lstsq => (
            a.0 >= a.1 && a.0 == b.0,
            "least squares needs a matrix with at least as many rows as columns, and as many rows as the right-hand side",
        ),
    };
    if ok {
        Ok(())
    } else {
        Err(Error::shape(op, &[a, b], req))
    }
}

/// Solves `a·x = b` for `x` (every column of `b` is a right-hand side), like
/// `scipy.linalg.solve` / `scipy.sparse.linalg.spsolve` or, with [`SolveMethod::Lstsq`],
/// `lstsq`.
///
/// # Errors
/// [`Error::Shape`] on incompatible shapes; [`Error::Numerical`] if `a` is singular.
///
/// ```
/// use polymat::{Csr, Dense, Out, c64};
/// use polymat::ops::SolveMethod;
/// let a = Csr::from_triplets((2, 2), &[0, 1], &[0, 1], &[c64::new(2.0, 0.0), c64::new(4.0, 0.0)]).unwrap();
/// let b = Dense::from_fn(2, 1, |_, _| c64::new(1.0, 0.0));
/// let x = polymat::solve(&a.into(), &b.into(), SolveMethod::Lu, Out::Auto).unwrap();
/// assert_eq!(x.downcast_ref::<Dense>().unwrap().get(1, 0), c64::new(0.25, 0.0));
/// ```
pub fn solve(a: &Data, b: &Data, method: SolveMethod, out: Out) -> Result<Data> {
    SOLVE.call(&[a, b], out, &method)
}

/// Dense kernel of [`solve()`]: faer's partial-pivoting LU, or Householder QR for least
/// squares. O(n³ + n²k).
///
/// # Errors
/// As [`solve()`].
pub fn solve_dense(a: &Dense, b: &Dense, method: SolveMethod) -> Result<Dense> {
    solve_shapes("solve", a.shape(), b.shape(), method)?;
    match method {
        SolveMethod::Lu => lu_solve("solve", a.as_ref(), b.as_mat().clone()).map(Dense::new),
        SolveMethod::Lstsq => {
            let _avx = engine::AvxGuard::for_size(a.shape().0);
            let qr = a.as_ref().qr();
            let r = qr.R();
            let n = a.shape().1;
            let eps = f64::EPSILON * (a.shape().0.max(1) as f64);
            let scale = (0..n).map(|i| r[(i, i)].norm()).fold(0.0, f64::max);
            if let Some(i) = (0..n).find(|&i| r[(i, i)].norm() <= eps * scale) {
                return Err(Error::Numerical {
                    op: "solve".to_owned(),
                    reason: format!(
                        "the matrix is rank deficient (column {i} is dependent on the others)"
                    ),
                });
            }
            finite("solve", qr.solve_lstsq(b.as_ref())).map(Dense::new)
        }
    }
}

/// Csr kernel of [`solve()`] with a Dense right-hand side: faer's sparse LU with partial
/// pivoting (COLAMD ordering) for [`SolveMethod::Lu`], the dense QR for least squares.
///
/// The Csr arrays of `a` are read in place as the compressed columns of `aᵀ`, whose LU then
/// solves the transposed system: no copy of `a` is made.
///
/// # Errors
/// As [`solve()`].
pub fn solve_csr_dense(a: &Csr, b: &Dense, method: SolveMethod) -> Result<Dense> {
    solve_shapes("solve", a.shape(), b.shape(), method)?;
    if method == SolveMethod::Lstsq {
        return solve_dense(&csr_to_dense(a)?, b, method);
    }
    let n = a.shape().0;
    let singular = |reason: String| Error::Numerical {
        op: "solve".to_owned(),
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
    let mut x = b.as_mat().clone();
    lu.solve_transpose_in_place(x.as_mut());
    finite("solve", x).map(Dense::new)
}
