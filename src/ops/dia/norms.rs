//! Norms of Dia, over the stored diagonals' valid ranges (no conversion to Csr, which for an
//! operator stored on many partly empty diagonals made a second copy as large as the first).

use super::diagonals;
use crate::error::Result;
use crate::scalar::c64;
use crate::storage::{Dia, alloc, valid_cols};

/// `‖a − μI‖₁` (`μ = 0`: `‖a‖₁`), the largest column sum, NaN if any stored entry is NaN.
/// Each column's entries are summed in the order of their rows (diagonals by decreasing
/// offset), a missing main diagonal's `|μ|` at its row, as the Csr kernels add them.
/// O(stored entries + n) time, n column sums of memory.
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) if the column sums cannot be allocated.
pub fn one_dia(a: &Dia, mu: c64) -> Result<f64> {
    let shape = a.shape();
    let mut cols = alloc::try_vec("norm::one", shape, shape.1, 0.0f64)?;
    let has_main = a.offsets().binary_search(&0).is_ok();
    let missing = |cols: &mut [f64]| {
        if !has_main && mu != crate::scalar::ZERO {
            for s in &mut cols[valid_cols(shape, 0)] {
                *s += crate::simd::reduce::modulus(mu);
            }
        }
    };
    let mut crossed = false;
    for (o, r) in diagonals(a).collect::<Vec<_>>().into_iter().rev() {
        if o < 0 && !crossed {
            missing(&mut cols);
            crossed = true;
        }
        let js = valid_cols(shape, o);
        let shift = if o == 0 { mu } else { crate::scalar::ZERO };
        for (s, x) in cols[js.clone()].iter_mut().zip(&r[js]) {
            *s += crate::simd::reduce::modulus(*x - shift);
        }
    }
    if !crossed {
        missing(&mut cols);
    }
    Ok(cols.into_iter().fold(0.0, crate::simd::reduce::nan_max))
}

/// `max |aᵢⱼ|` over the stored entries (0 for none; NaN if one is NaN). O(stored entries).
pub fn max_dia(a: &Dia) -> f64 {
    let (shape, n) = (a.shape(), a.shape().1);
    crate::simd::reduce::max_abs(|| {
        a.offsets().iter().enumerate().map(move |(k, &o)| {
            let js = valid_cols(shape, o);
            &a.data()[k * n + js.start..k * n + js.end]
        })
    })
}

/// The Frobenius norm, `√(Σ |aᵢⱼ|²)` over the stored entries. O(stored entries).
pub fn frobenius_dia(a: &Dia) -> f64 {
    let shape = a.shape();
    diagonals(a)
        .map(|(o, r)| {
            r[valid_cols(shape, o)]
                .iter()
                .map(|x| x.norm_sqr())
                .sum::<f64>()
        })
        .sum::<f64>()
        .sqrt()
}
