//! Means over the nonzero entries.

use std::sync::LazyLock;

use crate::dispatch::{Dispatcher, Out};
use crate::error::Result;
use crate::gpu::GpuDense;
use crate::scalar::ZERO;
use crate::scalar::c64;
use crate::storage::{Csr, Data, Dense};

/// The mean of the nonzero entries. Kernels: Dense, Csr, GpuDense.
pub static MEAN_NONZERO: LazyLock<Dispatcher<(), c64>> = LazyLock::new(|| {
    Dispatcher::builder("mean_nonzero", 1)
        .unary("mean_nonzero_dense", |a: &Dense, _: &()| {
            Ok(mean_nonzero_dense(a))
        })
        .unary("mean_nonzero_csr", |a: &Csr, _: &()| {
            Ok(mean_nonzero_csr(a))
        })
        .unary("mean_nonzero_gpu", |a: &GpuDense, _: &()| {
            let (sum, _, count) = a.sum_nonzero()?;
            Ok(mean((sum, count)))
        })
        .builtin()
});

/// The mean absolute value of the nonzero entries. Kernels: Dense, Csr, GpuDense.
pub static MEAN_ABS_NONZERO: LazyLock<Dispatcher<(), f64>> = LazyLock::new(|| {
    Dispatcher::builder("mean_abs_nonzero", 1)
        .unary("mean_abs_nonzero_dense", |a: &Dense, _: &()| {
            Ok(mean_abs_nonzero_dense(a))
        })
        .unary("mean_abs_nonzero_csr", |a: &Csr, _: &()| {
            Ok(mean_abs_nonzero_csr(a))
        })
        .unary("mean_abs_nonzero_gpu", |a: &GpuDense, _: &()| {
            let (_, abs, count) = a.sum_nonzero()?;
            Ok(mean((abs, count)))
        })
        .builtin()
});

/// `Σ a_ij / #{a_ij ≠ 0}` over the entries that are not exactly zero; 0 for a zero matrix.
/// Explicitly stored zeros of a Csr do not count, so every kind gives the same answer.
///
/// # Errors
/// Conversion errors only.
///
/// ```
/// use polymat::{Csr, c64};
/// let a = Csr::from_triplets((2, 2), &[0, 1], &[0, 1], &[c64::new(1.0, 0.0), c64::new(3.0, 0.0)]).unwrap();
/// assert_eq!(polymat::mean_nonzero(&a.into()).unwrap(), c64::new(2.0, 0.0));
/// ```
#[inline]
pub fn mean_nonzero(a: &Data) -> Result<c64> {
    MEAN_NONZERO.call(&[a], Out::Auto, &())
}

/// `Σ |a_ij| / #{a_ij ≠ 0}`; 0 for a zero matrix.
///
/// # Errors
/// Conversion errors only.
///
/// ```
/// use polymat::{Dense, c64};
/// let a = Dense::from_rows(&[[c64::new(0.0, 2.0), c64::new(0.0, 0.0)]]).unwrap();
/// assert_eq!(polymat::mean_abs_nonzero(&a.into()).unwrap(), 2.0);
/// ```
#[inline]
pub fn mean_abs_nonzero(a: &Data) -> Result<f64> {
    MEAN_ABS_NONZERO.call(&[a], Out::Auto, &())
}

/// Sum and count of the nonzero values.
fn sum_nonzero<'a, T: std::iter::Sum<T> + Default>(
    values: impl Iterator<Item = &'a c64>,
    f: impl Fn(c64) -> T,
) -> (T, usize) {
    let mut count = 0usize;
    let sum = values
        .filter(|v| **v != ZERO)
        .map(|v| {
            count += 1;
            f(*v)
        })
        .sum();
    (sum, count)
}

fn mean<T: std::ops::Div<f64, Output = T> + Default>((sum, count): (T, usize)) -> T {
    if count == 0 {
        T::default()
    } else {
        sum / count as f64
    }
}

/// Dense kernel of [`mean_nonzero`]. O(mn).
pub fn mean_nonzero_dense(a: &Dense) -> c64 {
    mean(sum_nonzero(a.entries(), |v| v))
}

/// Csr kernel of [`mean_nonzero`]. O(nnz).
pub fn mean_nonzero_csr(a: &Csr) -> c64 {
    mean(sum_nonzero(a.data().iter(), |v| v))
}

/// Dense kernel of [`mean_abs_nonzero`]. O(mn).
pub fn mean_abs_nonzero_dense(a: &Dense) -> f64 {
    mean(sum_nonzero(a.entries(), c64::norm))
}

/// Csr kernel of [`mean_abs_nonzero`]. O(nnz).
pub fn mean_abs_nonzero_csr(a: &Csr) -> f64 {
    mean(sum_nonzero(a.data().iter(), c64::norm))
}
