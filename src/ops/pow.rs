//! Integer matrix powers.

use std::sync::LazyLock;

use super::matmul::{matmul_csr, matmul_dense};
use crate::dispatch::{Dispatcher, Out};
use crate::error::{Error, Result};
use crate::gpu::GpuDense;
use crate::storage::{Csr, Data, Dense};

/// `aⁿ` for square `a` (`a⁰` is the identity). Parameter: `n`. Kernels: Dense, Csr.
pub static POW: LazyLock<Dispatcher<u32>> = LazyLock::new(|| {
    Dispatcher::builder("pow", 1)
        .check_square()
        .unary("pow_dense", |a: &Dense, n: &u32| pow_dense(a, *n))
        .unary("pow_csr", |a: &Csr, n: &u32| pow_csr(a, *n))
        .unary("pow_gpu", |a: &GpuDense, n: &u32| a.pow(*n))
        .builtin()
});

/// `aⁿ`.
///
/// # Errors
/// [`Error::Shape`] if `a` is not square.
///
/// ```
/// use polymat::{Dense, Out, c64};
/// let a = Dense::from_fn(2, 2, |i, j| c64::new(if i <= j { 1.0 } else { 0.0 }, 0.0));
/// let p = polymat::pow(&a.into(), 5, Out::Auto).unwrap();
/// assert_eq!(p.downcast_ref::<Dense>().unwrap().get(0, 1), c64::new(5.0, 0.0));
/// ```
#[inline]
pub fn pow(a: &Data, n: u32, out: Out) -> Result<Data> {
    POW.call(&[a], out, &n)
}

/// Square-and-multiply: O(log n) products.
fn power<T: Clone>(
    a: &T,
    n: u32,
    one: impl FnOnce() -> T,
    mul: impl Fn(&T, &T) -> Result<T>,
) -> Result<T> {
    if n == 0 {
        return Ok(one());
    }
    let mut base = a.clone();
    let mut acc: Option<T> = None;
    let mut e = n;
    loop {
        if e & 1 == 1 {
            acc = Some(match acc {
                None => base.clone(),
                Some(x) => mul(&x, &base)?,
            });
        }
        e >>= 1;
        if e == 0 {
            break;
        }
        base = mul(&base, &base)?;
    }
    acc.ok_or_else(|| Error::argument("pow", "empty power"))
}

/// Dense `aⁿ` by repeated squaring. O(n³ log k).
///
/// # Errors
/// [`Error::Shape`] if `a` is not square.
pub fn pow_dense(a: &Dense, n: u32) -> Result<Dense> {
    super::square("pow", a.shape())?;
    if n == 0 {
        return Dense::try_identity(a.shape().0);
    }
    power(a, n, || Dense::identity(a.shape().0), matmul_dense)
}

/// Csr `aⁿ` by repeated squaring.
///
/// # Errors
/// [`Error::Shape`] if `a` is not square.
pub fn pow_csr(a: &Csr, n: u32) -> Result<Csr> {
    super::square("pow", a.shape())?;
    if n == 0 {
        return Csr::try_identity(a.shape().0);
    }
    power(a, n, || Csr::identity(a.shape().0), matmul_csr)
}
