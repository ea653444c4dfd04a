//! The GPU kernels of `inv`, `solve`, `eigs` and `svd`: cuSOLVER's LU (getrf/getrs), Hermitian
//! eigensolver (heevd) and SVD (gesvd) on [`GpuDense`] data, checked as the CPU kernels are
//! (the same singularity test, the same ordering of eigenpairs).
//!
//! Where cuSOLVER has nothing to offer, or cannot be loaded, the kernel downloads its operands
//! and runs the Dense kernel: non-Hermitian `eigs` (cuSOLVER's general eigensolver needs CUDA
//! 12.6's 64-bit API and gives no gain at QuTiP's sizes), least squares, and every operation on
//! a machine whose CUDA install lacks `libcusolver`. Matrix results go back to the GPU; the
//! iterative solvers run on the GPU through the dispatcher (products on GpuDense).

use super::decomp::{EigsMethod, EigsOptions, HERMITIAN_ATOL, order_eigen};
use super::lu::check_condition;
use super::solve::SolveMethod;
use crate::error::{Error, Result};
use crate::gpu::{self, GpuDense, GpuLu};
use crate::scalar::c64;
use crate::storage::{Data, Dense, Kind};

/// Factorises `a` and refuses it as the CPU does: an exactly zero pivot, or an estimated
/// reciprocal condition number below [`RCOND_MIN`](super::RCOND_MIN) (Hager–Higham, with
/// single-column solves on the GPU).
fn factorise(a: &GpuDense, op: &'static str) -> Result<GpuLu> {
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
fn finite(op: &str, x: GpuDense) -> Result<GpuDense> {
    if x.norm_max()?.is_finite() {
        Ok(x)
    } else {
        Err(Error::Numerical {
            op: op.to_owned(),
            reason: "the solution is not finite: the matrix is singular to working precision"
                .to_owned(),
        })
    }
}

/// GPU kernel of [`inv`](super::inv): LU, then solves against the identity, on the GPU.
pub(crate) fn inv_gpu(a: &GpuDense) -> Result<GpuDense> {
    if !gpu::solver_available() {
        return GpuDense::from_dense(&super::solve::inv_dense(&a.to_dense()?)?);
    }
    let n = a.shape().0;
    let lu = factorise(a, "inv")?;
    finite("inv", lu.solve(&GpuDense::identity(n)?, false)?)
}

/// GPU kernel of [`solve()`](super::solve()): the LU on the GPU; the iterative methods through
/// the dispatcher (their products run on the GPU); least squares on the CPU.
pub(crate) fn solve_gpu(a: &GpuDense, b: &GpuDense, method: &SolveMethod) -> Result<GpuDense> {
    match method {
        SolveMethod::Lu if gpu::solver_available() => {
            if b.shape().0 == 0 || b.shape().1 == 0 {
                return GpuDense::zeros(a.shape().1, b.shape().1);
            }
            finite("solve", factorise(a, "solve")?.solve(b, false)?)
        }
        SolveMethod::Cg(_) | SolveMethod::Bicgstab(_) | SolveMethod::Gmres(_) => {
            let (a, b): (Data, Data) = (a.try_clone()?.into(), b.try_clone()?.into());
            let x =
                crate::convert::to(Kind::GPU_DENSE, &super::solve::solve_data(&a, &b, method)?)?;
            match x.downcast_ref::<GpuDense>() {
                Some(g) => g.try_clone(),
                None => Err(Error::Gpu {
                    op: "solve".to_owned(),
                    reason: format!("the iterative solution came back as {}", x.kind()),
                }),
            }
        }
        _ => GpuDense::from_dense(&super::solve::solve_dense(
            &a.to_dense()?,
            &b.to_dense()?,
            method,
        )?),
    }
}

/// GPU kernel of [`eigs`](super::eigs): cuSOLVER heevd for a Hermitian matrix (tested on the
/// GPU when `options.hermitian` is `None`), the Krylov path through the dispatcher when
/// [`eigs_plan`](super::eigs_plan) chooses it, the Dense kernel otherwise.
pub(crate) fn eigs_gpu(a: &GpuDense, options: &EigsOptions) -> Result<super::Eigen> {
    let n = a.shape().0;
    if super::eigs_plan(Kind::GPU_DENSE, n, options) == EigsMethod::Krylov {
        return super::krylov_eigs::eigs_data(&a.try_clone()?.into(), options);
    }
    let hermitian = match options.hermitian {
        Some(h) => h,
        None => a.isherm(HERMITIAN_ATOL)?,
    };
    if !hermitian || !gpu::solver_available() {
        return super::decomp::eigs_dense(&a.to_dense()?, *options);
    }
    let (w, v) = a.eigh(options.vectors)?;
    let values = w.into_iter().map(|x| c64::new(x, 0.0)).collect();
    let vectors = v.map(|v| v.to_dense()).transpose()?;
    order_eigen(values, vectors.as_ref().map(Dense::as_ref), true, options)
}

/// GPU kernel of [`svd`](super::svd): cuSOLVER gesvd (a wide matrix through its adjoint); the
/// factors are downloaded into the host result.
pub(crate) fn svd_gpu(a: &GpuDense, vectors: bool) -> Result<super::Svd> {
    if !gpu::solver_available() {
        return super::decomp::svd_dense(&a.to_dense()?, vectors);
    }
    let (u, s, vh) = a.svd(vectors)?;
    if s.iter().any(|x| !x.is_finite()) {
        return Err(Error::Numerical {
            op: "svd".to_owned(),
            reason: "the singular values are not finite (non-finite entries?)".to_owned(),
        });
    }
    Ok(super::Svd {
        u: u.map(|u| u.to_dense()).transpose()?,
        s,
        vh: vh.map(|v| v.to_dense()).transpose()?,
    })
}
