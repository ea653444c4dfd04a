//! The inverse of a square matrix: dense LU, a Csr block by block over its graph's connected
//! components, or on the GPU. Re-exported by [`solve`](super).

use std::sync::LazyLock;

use crate::dispatch::{Dispatcher, Out};
use crate::error::{Error, Result};
use crate::gpu::GpuDense;
use crate::ops::linalg::components;
use crate::ops::linalg::lu::Factorised;
use crate::scalar::{ZERO, c64};
use crate::storage::{Csr, Data, Dense, alloc};

/// `a⁻¹`. Kernels: Dense, Csr ([`inv_csr`]: block by block over the connected components of
/// the matrix's graph, each block by the dense LU; a connected matrix, whose inverse is in
/// general dense, through the dense LU whole), GpuDense. Exact zeros are dropped from a Csr
/// result.
pub static INV: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("inv", 1)
        .check_square()
        .result_shape(crate::dispatch::checks::first_shape)
        .unary("inv_dense", |a: &Dense, _: &()| inv_dense(a))
        .unary("inv_gpu", |a: &GpuDense, _: &()| inv_gpu(a))
        .unary("inv_csr", |a: &Csr, _: &()| inv_csr(a))
        .builtin()
});

/// The inverse of a square matrix.
///
/// # Errors
/// [`Error::Shape`] if `a` is not square; [`Error::Numerical`] if it is singular to working
/// precision (estimated reciprocal condition number below [`RCOND_MIN`](crate::ops::linalg::lu::RCOND_MIN)) or the result is not
/// finite; [`Error::TooLarge`] if the dense workspace (about 4 matrices of `a`'s shape) does not
/// fit in the memory available now.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// let a = Dense::from_rows(&[[c64::new(2.0, 0.0), c64::new(1.0, 0.0)],
///                            [c64::new(1.0, 0.0), c64::new(1.0, 0.0)]]).unwrap();
/// let inv = polymat::inv(&a.into(), Out::Auto).unwrap();
/// assert!((inv.downcast_ref::<Dense>().unwrap().get(0, 1) - c64::new(-1.0, 0.0)).norm() < 1e-14);
/// assert!(polymat::inv(&Dense::zeros(2, 2).into(), Out::Auto).is_err());
/// ```
#[inline]
pub fn inv(a: &Data, out: Out) -> Result<Data> {
    INV.call(&[a], out, &())
}

/// Csr kernel of [`inv`], sparse: block by block over the connected components of `a`'s graph
/// (indices linked by a chain of nonzero entries), each block by [`inv_dense`] and a one-row
/// block by `1 / aᵢᵢ`, when `a` has more than one; through [`inv_dense`] on the whole matrix
/// when it is connected. So the inverse of a diagonal matrix, or of a local operator on a
/// large space (`σx ⊗ I`), is formed without densifying (QuTiP's `inv_csr` runs scipy's
/// sparse `inv`). Singularity is judged block by block: each block's reciprocal condition
/// number against [`RCOND_MIN`](crate::ops::linalg::lu::RCOND_MIN), a one-row block singular only at 0.
///
/// # Errors
/// [`Error::Shape`] if `a` is not square; [`Error::Numerical`] if a block (the whole matrix
/// when connected) is singular to working precision or its inverse is not finite;
/// [`Error::TooLarge`] where a block passes the dense limit or the result does not fit in
/// memory.
///
/// ```
/// use polymat::{Csr, c64};
/// use polymat::ops::solve::inv_csr;
/// // 2·I ⊗ [[0, 1], [1, 0]] on 2 × 10⁵: blocks of two rows, a Csr inverse.
/// let n = 200_000;
/// let rows: Vec<usize> = (0..n).collect();
/// let cols: Vec<usize> = (0..n).map(|i| i ^ 1).collect();
/// let a = Csr::from_triplets((n, n), &rows, &cols, &vec![c64::new(2.0, 0.0); n]).unwrap();
/// let x = inv_csr(&a).unwrap();
/// assert_eq!(x.nnz(), n);
/// assert_eq!(x.get(6, 7), c64::new(0.5, 0.0));
/// ```
pub fn inv_csr(a: &Csr) -> Result<Csr> {
    crate::shape::square("inv", a.shape())?;
    let blocks = components::by_components(a, "inv", inv_dense, |i, d| {
        if d == ZERO {
            return Err(Error::Numerical {
                op: "inv".into(),
                reason: format!("the matrix is singular (row {i} is zero)"),
            });
        }
        let x = recip(d);
        if x.is_finite() {
            Ok(x)
        } else {
            Err(Error::Numerical {
                op: "inv".into(),
                reason: format!("the solution is not finite: 1/({d}) in row {i}"),
            })
        }
    })?;
    components::or_whole(blocks, a, inv_dense)
}

/// `1 / z` for `z ≠ 0` by Smith's algorithm: no intermediate `|z|²`, which overflows from
/// `|z|` ≈ 10¹⁵⁴ (giving 0) and underflows below 10⁻¹⁵⁴ (giving infinity).
fn recip(z: c64) -> c64 {
    let (a, b) = (z.re, z.im);
    if a.abs() >= b.abs() {
        let r = b / a;
        let den = a + b * r;
        c64::new(1.0 / den, -r / den)
    } else {
        let r = a / b;
        let den = a * r + b;
        c64::new(r / den, -1.0 / den)
    }
}

/// Dense kernel of [`inv`]: partial-pivoting LU, then solves against the identity. O(n³).
///
/// # Errors
/// As [`inv`].
pub fn inv_dense(a: &Dense) -> Result<Dense> {
    crate::shape::square("inv", a.shape())?;
    let n = a.shape().0;
    // The factor and its scratch, the identity, the result.
    alloc::check_workspace("inv", (n, n), 4)?;
    Factorised::dense(a, "inv")?.solve(&Dense::try_identity(n)?)
}

/// GPU kernel of [`inv`](crate::ops::solve::inv): LU, then solves against the identity, on the GPU.
fn inv_gpu(a: &GpuDense) -> Result<GpuDense> {
    if !crate::gpu::solver_available() {
        return GpuDense::from_dense(&inv_dense(&a.to_dense()?)?);
    }
    let n = a.shape().0;
    let lu = crate::ops::linalg::lu::factorise_gpu(a, "inv")?;
    crate::ops::linalg::lu::finite_gpu("inv", lu.solve(&GpuDense::identity(n)?, false)?)
}
