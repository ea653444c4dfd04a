//! Reductions over complex entries shared by the norms of every storage kind: `|x|` without
//! `hypot` where the square is safe, `max |x|` by one vectorised pass over `|x|²`, and `Σ |x|²`
//! for the 2-norm, trusted only where no square overflowed or underflowed.

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

/// `Σ |xᵢ|²` in one vectorised pass (four independent accumulators per lane), with no guard
/// against overflow or underflow: the caller checks the result ([`safe_root`]).
pub(crate) fn sum_sqr(x: &[crate::scalar::c64]) -> f64 {
    super::portable::dispatch(SumSqr { x })
}

struct SumSqr<'a> {
    x: &'a [crate::scalar::c64],
}

impl pulp::WithSimd for SumSqr<'_> {
    type Output = f64;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) -> f64 {
        use super::portable;
        let x = self.x;
        if !portable::vector::<S>() {
            return x.iter().map(|v| v.norm_sqr()).sum();
        }
        let (head, tail) = S::as_simd_c64s(x);
        let zero = simd.splat_f64s(0.0);
        let mut acc = [zero; 4];
        let quads = head.chunks_exact(4);
        let rest = quads.remainder();
        for q in quads {
            for (a, v) in acc.iter_mut().zip(q) {
                let v = portable::f64s::<S>(*v);
                *a = simd.mul_add_f64s(v, v, *a);
            }
        }
        for v in rest {
            let v = portable::f64s::<S>(*v);
            acc[0] = simd.mul_add_f64s(v, v, acc[0]);
        }
        let sum = simd.add_f64s(simd.add_f64s(acc[0], acc[1]), simd.add_f64s(acc[2], acc[3]));
        let lanes: f64 = portable::lanes::<S>(&sum).iter().sum();
        lanes + tail.iter().map(|v| v.norm_sqr()).sum::<f64>()
    }
}

/// Sums of squares in `[SAFE_SQR, ∞)` lose nothing to underflow: a square that underflows is
/// below `f64::MIN_POSITIVE`, under `ε` of such a sum.
const SAFE_SQR: f64 = 1e-290;

/// `√sum` for a sum of squares from [`sum_sqr`] when it can be trusted: NaN stays NaN; a sum
/// that overflowed or may have lost entries to underflow (a zero vector among them) gives
/// `None`, and the caller takes a scaled norm instead.
pub(crate) fn safe_root(sum: f64) -> Option<f64> {
    if sum.is_nan() {
        Some(f64::NAN)
    } else if (SAFE_SQR..f64::INFINITY).contains(&sum) {
        Some(sum.sqrt())
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scalar::c64;

    fn entries(n: usize, scale: f64) -> Vec<c64> {
        (0..n)
            .map(|k| {
                c64::new(
                    (0.3 * k as f64).sin() * scale,
                    (0.7 * k as f64).cos() * scale,
                )
            })
            .collect()
    }

    #[test]
    fn sum_sqr_matches_the_plain_sum_at_every_length() {
        for n in [0, 1, 2, 3, 7, 8, 9, 31, 64, 100, 1001] {
            let x = entries(n, 1.5);
            let plain: f64 = x.iter().map(|v| v.norm_sqr()).sum();
            let fast = sum_sqr(&x);
            assert!(
                (fast - plain).abs() <= 1e-13 * plain.max(1.0),
                "n {n}: {fast} vs {plain}"
            );
            let portable = crate::simd::baseline(|| sum_sqr(&x));
            assert!((portable - plain).abs() <= 1e-13 * plain.max(1.0), "n {n}");
        }
    }

    #[test]
    fn safe_root_defers_overflow_and_underflow_to_the_scaled_norm() {
        assert_eq!(safe_root(4.0), Some(2.0));
        assert!(safe_root(f64::NAN).is_some_and(f64::is_nan));
        assert_eq!(safe_root(f64::INFINITY), None);
        assert_eq!(safe_root(0.0), None);
        assert_eq!(safe_root(1e-300), None);
        // Entries whose squares overflow or underflow: the sum cannot be trusted.
        assert_eq!(safe_root(sum_sqr(&entries(10, 1e200))), None);
        assert_eq!(safe_root(sum_sqr(&entries(10, 1e-160))), None);
    }
}
