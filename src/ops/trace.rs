//! The trace.

use std::sync::LazyLock;

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
        .check_square()
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
#[inline]
pub fn trace(a: &Data) -> Result<c64> {
    TRACE.call(&[a], Out::Auto, &())
}

/// Dense trace. O(n).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if `a` is not square.
#[inline]
pub fn trace_dense(a: &Dense) -> Result<c64> {
    square("trace", a.shape())?;
    let n = a.shape().0;
    let workers = engine::workers(Family::Reduction, n);
    Ok(engine::sum_ranges(n, workers, |rows| {
        // The diagonal sits at (i, i) of the buffer in either layout.
        rows.map(|i| a.buffer_col(i)[i]).sum()
    }))
}

/// Csr trace: in each row, the diagonal looked for where it sat in the previous row (banded
/// operators), else at the count of columns left of it, counted without a branch (a binary
/// search in rows of more than 32 entries). O(m + stored entries).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if `a` is not square.
pub fn trace_csr(a: &Csr) -> Result<c64> {
    square("trace", a.shape())?;
    let n = a.shape().0;
    let workers = engine::workers(Family::Reduction, n);
    Ok(engine::sum_ranges(n, workers, |rows| trace_rows(a, rows)))
}

crate::simd::avx2_fn! {
    /// The diagonal entries of `rows` of `a`, summed (see [`trace_csr`]).
    fn trace_rows(a: &Csr, rows: std::ops::Range<usize>) -> c64 {
        let (p, idx, val) = (a.indptr(), a.indices(), a.data());
        let mut acc = ZERO;
        let mut lo = p[rows.start];
        let mut guess = 0;
        for (i, &hi) in rows.clone().zip(&p[rows.start + 1..=rows.end]) {
            let cols = &idx[lo..hi];
            // Columns are sorted and distinct, so a column equal to i is the diagonal, and the
            // count of columns below i is its place. Scanning up to the diagonal (QuTiP's
            // loop) mispredicts its exit about once per row when that place varies: at
            // n = 1000 with 10 random entries per row, 8.7–8.8 µs against 5.3–5.4 µs for this,
            // and at n = 10⁴ 111–121 against 59.5–59.7 µs, measured round-robin over 8
            // matrices so that the branch predictor cannot learn one (docs/benchmarks.md).
            // The guess keeps a tridiagonal operator's rows from counting at all.
            let k = if cols.get(guess) == Some(&i) {
                guess
            } else if cols.len() <= 32 {
                cols.iter().map(|&c| usize::from(c < i)).sum()
            } else {
                cols.partition_point(|&c| c < i)
            };
            if k < cols.len() && cols[k] == i {
                acc += val[lo + k];
            }
            guess = k;
            lo = hi;
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every way a row's diagonal is found (the previous row's place, the count, the binary
    /// search), with and without a diagonal, agrees with `Σ a[i, i]`.
    #[test]
    fn csr_trace_matches_the_definition() {
        let n: usize = 120;
        let mut state: u64 = 7;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 33) as usize
        };
        for per_row in [0usize, 1, 3, 10, 40, 120] {
            let (mut r, mut c, mut v) = (vec![], vec![], vec![]);
            for i in 0..n {
                for t in 0..per_row {
                    // Banded rows in the first third, random ones after, a full diagonal
                    // only in every other row of the random part.
                    let j = if i < n / 3 {
                        (i + t).saturating_sub(per_row / 2).min(n - 1)
                    } else {
                        next() % n
                    };
                    if i >= n / 3 && j == i && i % 2 == 1 {
                        continue;
                    }
                    r.push(i);
                    c.push(j);
                    v.push(c64::new((i + 1) as f64, t as f64 - 0.5));
                }
            }
            let a = Csr::from_triplets((n, n), &r, &c, &v).unwrap();
            let want: c64 = (0..n).map(|i| a.get(i, i)).sum();
            assert_eq!(trace_csr(&a).unwrap(), want, "{per_row} per row");
        }
        assert_eq!(trace_csr(&Csr::zeros(0, 0)).unwrap(), ZERO);
        assert!(trace_csr(&Csr::zeros(2, 3)).is_err());
    }
}
