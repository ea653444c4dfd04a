//! Multiplication by a scalar, and negation.

use std::sync::LazyLock;

use crate::dispatch::{Dispatcher, Out};
use crate::error::Result;
use crate::gpu::{GpuCsr, GpuDense};
use crate::scalar::c64;
use crate::scalar::{MINUS_ONE, ZERO};
use crate::storage::csr_build::csr_map;
use crate::storage::{Csr, Data, Dense, Dia, KronSum, SuperOp};

/// `s·a`. Parameter: the scalar. Kernels: Dense, Csr.
pub static MUL: LazyLock<Dispatcher<c64>> = LazyLock::new(|| {
    Dispatcher::builder("mul", 1)
        .result_shape(crate::dispatch::checks::first_shape)
        .unary("mul_dense", |a: &Dense, s: &c64| mul_dense(a, *s))
        .unary("mul_csr", |a: &Csr, s: &c64| mul_csr(a, *s))
        .unary("mul_dia", |a: &Dia, s: &c64| super::dia::mul_dia(a, *s))
        .unary("mul_gpu", |a: &GpuDense, s: &c64| a.scale(*s))
        .unary("mul_gpucsr", |a: &GpuCsr, s: &c64| a.scale(*s))
        .unary("mul_kronsum", |a: &KronSum, s: &c64| {
            a.map(|c| c * s, |f| Ok(f.clone()))
        })
        .unary("mul_superop", |a: &SuperOp, s: &c64| {
            a.map(a.input(), a.output(), |c, x, y| {
                Ok((c * s, x.cloned(), y.cloned()))
            })
        })
        .builtin()
});

/// `−a`. Kernels: Dense, Csr and Dia (sign flips, exact for infinite parts), GpuDense and
/// GpuCsr (a scaling by −1 on the device).
pub static NEG: LazyLock<Dispatcher<()>> = LazyLock::new(|| {
    Dispatcher::builder("neg", 1)
        .result_shape(crate::dispatch::checks::first_shape)
        .unary("neg_dense", |a: &Dense, _: &()| neg_dense(a))
        .unary("neg_csr", |a: &Csr, _: &()| neg_csr(a))
        .unary("neg_dia", |a: &Dia, _: &()| super::dia::neg_dia(a))
        .unary("neg_gpu", |a: &GpuDense, _: &()| a.scale(MINUS_ONE))
        .unary("neg_gpucsr", |a: &GpuCsr, _: &()| a.scale(MINUS_ONE))
        .unary("neg_kronsum", |a: &KronSum, _: &()| {
            a.map(|c| -c, |f| Ok(f.clone()))
        })
        .unary("neg_superop", |a: &SuperOp, _: &()| {
            a.map(a.input(), a.output(), |c, x, y| {
                Ok((-c, x.cloned(), y.cloned()))
            })
        })
        .builtin()
});

/// Dense `−a`: every part's sign flipped, in one call on one thread (`simd::flip_cols`).
/// The kernel of [`NEG`] and of the `-` operator.
pub(crate) fn neg_dense(a: &Dense) -> Result<Dense> {
    super::elementwise::dense_flip("neg", a, crate::simd::Flip::Both, a.layout())
}

/// Csr `−a`: the pattern kept, every value's signs flipped. The kernel of [`NEG`] and of the
/// `-` operator.
pub(crate) fn neg_csr(a: &Csr) -> Result<Csr> {
    csr_map("neg", a, |x| -x)
}

/// `scalar·a`.
///
/// # Errors
/// Only those of the conversions `out` asks for.
///
/// ```
/// use polymat::{Csr, Out, c64};
/// let a = polymat::mul(&Csr::identity(2).into(), c64::new(0.0, 2.0), Out::Auto).unwrap();
/// assert_eq!(a.downcast_ref::<Csr>().unwrap().get(1, 1), c64::new(0.0, 2.0));
/// ```
#[inline]
pub fn mul(a: &Data, scalar: c64, out: Out) -> Result<Data> {
    MUL.call(&[a], out, &scalar)
}

/// `−a`.
///
/// # Errors
/// Only those of the conversions `out` asks for.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// let a = polymat::neg(&Dense::identity(2).into(), Out::Auto).unwrap();
/// assert_eq!(a.downcast_ref::<Dense>().unwrap().get(0, 0), c64::new(-1.0, 0.0));
/// ```
#[inline]
pub fn neg(a: &Data, out: Out) -> Result<Data> {
    NEG.call(&[a], out, &())
}

/// `s·a` for Dense. O(mn).
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) if the result cannot be allocated.
pub fn mul_dense(a: &Dense, s: c64) -> Result<Dense> {
    let (m, n) = (a.buffer().nrows(), a.buffer().ncols());
    if crate::engine::streams(m, n, 1) {
        // A result too large for the cache: the map's non-temporal stores. The product is
        // `Complex`'s, as `scale_into`'s is (bit for bit).
        return super::elementwise::dense_map("mul", a, |x| s * x);
    }
    super::elementwise::dense_scale("mul", a, s)
}

/// `s·a` for Csr. O(nnz); multiplying by zero gives a matrix with no stored entries.
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) when the result cannot be allocated.
pub fn mul_csr(a: &Csr, s: c64) -> Result<Csr> {
    if s == ZERO {
        let indptr = crate::storage::alloc::try_vec("mul", a.shape(), a.indptr().len(), 0)?;
        // SAFETY: all row pointers 0 (as many as a has), no entries.
        return Ok(unsafe { Csr::from_parts_unchecked(a.shape(), indptr, Vec::new(), Vec::new()) });
    }
    let nnz = a.nnz();
    crate::storage::csr_build::csr_with_values("mul", a, |data| {
        crate::simd::scale_into(&mut data.spare_capacity_mut()[..nnz], s, a.data());
        // SAFETY: `scale_into` wrote all nnz elements (the lengths agree); the capacity is nnz.
        unsafe { data.set_len(nnz) };
    })
}
