//! The trace.

use std::sync::LazyLock;

use super::check_square;
use crate::dispatch::{Dispatcher, Out};
use crate::engine::{self, Family};
use crate::error::Result;
use crate::gpu::{GpuCsr, GpuDense};
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
        .unary("trace_gpucsr", |a: &GpuCsr, _: &()| a.trace())
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

/// Csr trace: each row scanned up to its diagonal (a binary search in rows of more than 32
/// entries). O(m + stored entries left of the diagonal).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if `a` is not square.
pub fn trace_csr(a: &Csr) -> Result<c64> {
    square("trace", a.shape())?;
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    let n = a.shape().0;
    let workers = engine::workers(Family::Reduction, n);
    Ok(engine::sum_ranges(n, workers, |rows| {
        let mut acc = ZERO;
        let mut lo = p[rows.start];
        for (i, &hi) in rows.clone().zip(&p[rows.start + 1..=rows.end]) {
            let cols = &idx[lo..hi];
            // Columns are sorted: a short row is scanned up to the diagonal and left there
            // (QuTiP's loop; 25 % faster than counting the smaller columns first, measured
            // interleaved in one process at n = 1000 with 10 entries per row), a long one
            // searched.
            if cols.len() <= 32 {
                for (k, &c) in cols.iter().enumerate() {
                    if c >= i {
                        if c == i {
                            acc += val[lo + k];
                        }
                        break;
                    }
                }
            } else {
                let k = cols.partition_point(|&c| c < i);
                if k < cols.len() && cols[k] == i {
                    acc += val[lo + k];
                }
            }
            lo = hi;
        }
        acc
    }))
}
