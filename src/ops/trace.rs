//! The trace.

use std::sync::LazyLock;

use super::check_square;
use crate::dispatch::{Dispatcher, Out};
use crate::engine::{self, Family};
use crate::error::Result;
use crate::gpu::GpuDense;
use crate::scalar::ZERO;
use crate::scalar::c64;
use crate::shape::square;
use crate::storage::{Csr, Data, Dense, Dia};

/// `Tr a` for square `a`, a scalar. Kernels: Dense, Csr.
pub static TRACE: LazyLock<Dispatcher<(), c64>> = LazyLock::new(|| {
    Dispatcher::builder("trace", 1)
        .check(check_square)
        .unary("trace_dense", |a: &Dense, _: &()| trace_dense(a))
        .unary("trace_csr", |a: &Csr, _: &()| trace_csr(a))
        .unary("trace_dia", |a: &Dia, _: &()| super::dia::trace_dia(a))
        .unary("trace_gpu", |a: &GpuDense, _: &()| a.trace())
        .builtin()
});

/// The sum of the diagonal.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if `a` is not square.
///
/// ```
/// use polymat::{Csr, c64};
/// assert_eq!(polymat::trace(&Csr::identity(4).into()).unwrap(), c64::new(4.0, 0.0));
/// assert!(polymat::trace(&Csr::zeros(2, 3).into()).is_err());
/// ```
pub fn trace(a: &Data) -> Result<c64> {
    TRACE.call(&[a], Out::Auto, &())
}

/// Dense trace. O(n).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if `a` is not square.
pub fn trace_dense(a: &Dense) -> Result<c64> {
    square("trace", a.shape())?;
    let n = a.shape().0;
    let workers = engine::workers(Family::Reduction, n);
    Ok(engine::sum_ranges(n, workers, |rows| {
        // The diagonal sits at (i, i) of the buffer in either layout.
        rows.map(|i| a.buffer_col(i)[i]).sum()
    }))
}

/// Csr trace, a binary search per row. O(m log(row length)).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if `a` is not square.
pub fn trace_csr(a: &Csr) -> Result<c64> {
    square("trace", a.shape())?;
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    let n = a.shape().0;
    let workers = engine::workers(Family::Reduction, n);
    Ok(engine::sum_ranges(n, workers, |rows| {
        rows.map(|i| {
            let (lo, hi) = (p[i], p[i + 1]);
            let cols = &idx[lo..hi];
            // Columns are sorted: a short row is scanned up to the diagonal (no unpredictable
            // branches), a long one searched.
            let k = if cols.len() <= 16 {
                cols.iter().take_while(|&&c| c < i).count()
            } else {
                cols.partition_point(|&c| c < i)
            };
            if k < cols.len() && cols[k] == i {
                val[lo + k]
            } else {
                ZERO
            }
        })
        .sum()
    }))
}
