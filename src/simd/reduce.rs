//! Reductions over complex entries shared by the norms of every storage kind: `|x|` without
//! `hypot` where the square is safe, and `max |x|` by one vectorised pass over `|x|²`.

/// The larger of two norms, NaN when either is NaN (as the GPU reductions do).
#[inline]
pub(crate) fn nan_max(acc: f64, x: f64) -> f64 {
    if acc.is_nan() || x.is_nan() {
        f64::NAN
    } else {
        acc.max(x)
    }
}

/// `|x|` for the 1-norms: `√(re² + im²)` where that square neither overflows nor underflows
/// (then it is within an ulp of `hypot`), else `x.norm()` (`hypot`). `hypot` for every entry
/// was about half of `‖a − μI‖₁` of the XXZ chain's H (`perf`: 2.6 % of `expm_multiply` in
/// `hypot`, 2.5 % in the sums).
#[inline(always)]
pub(crate) fn modulus(x: crate::scalar::c64) -> f64 {
    let s = x.norm_sqr();
    if (1e-290..1e290).contains(&s) {
        s.sqrt()
    } else if x.re == 0.0 && x.im == 0.0 {
        0.0
    } else {
        x.norm()
    }
}

/// Independent running maxima in [`max_norm_sqr`]: enough to hide the latency of `max` and
/// fill two AVX2 registers.
const MAX_LANES: usize = 8;

crate::simd::avx2_fn! {
    /// `max |x|²` over `part` (0 for none, NaN if one is NaN).
    ///
    /// [`MAX_LANES`] running maxima and a NaN flag, so that the loop vectorises: one fold
    /// through [`nan_max`] carried a dependent, branching `max` per entry (26 % of
    /// `expm_multiply` on the XXZ chain at N = 16, two maxima per Taylor term).
    fn max_norm_sqr(part: &[crate::scalar::c64]) -> f64 {
        let mut acc = [0.0f64; MAX_LANES];
        let mut nan = false;
        let mut lanes = |values: &[crate::scalar::c64]| {
            for (a, x) in acc.iter_mut().zip(values) {
                let s = x.norm_sqr();
                nan |= s.is_nan();
                *a = if s > *a { s } else { *a };
            }
        };
        let mut chunks = part.chunks_exact(MAX_LANES);
        for chunk in &mut chunks {
            lanes(chunk);
        }
        lanes(chunks.remainder());
        if nan {
            f64::NAN
        } else {
            acc.into_iter().fold(0.0, f64::max)
        }
    }
}

/// `max |x|` over the slices `parts()` yields: the largest `|x|²` and one square root
/// (vectorised, no `hypot` per entry), falling back to `|x|` entry by entry when a square
/// overflows.
pub(crate) fn max_abs<'a, I: Iterator<Item = &'a [crate::scalar::c64]>>(
    parts: impl Fn() -> I,
) -> f64 {
    let sq = parts().map(max_norm_sqr).fold(0.0, nan_max);
    if sq.is_finite() {
        sq.sqrt()
    } else if sq.is_nan() {
        f64::NAN
    } else {
        parts().flatten().map(|x| x.norm()).fold(0.0, nan_max)
    }
}
