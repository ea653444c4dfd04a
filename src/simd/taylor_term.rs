//! One term of `expm_multiply`'s truncated Taylor series over a column, in one pass:
//! `x ← coeff·(x − shift·prev)`, `sum ← sum + x`, and the largest `|xᵢ|²` and `|sumᵢ|²`.
//!
//! Done as separate steps (`iadd`, `imul`, two maxima, `iadd`) the vectors were read and
//! written five times per term; the compiler's vectorisation of the fused loop in plain Rust
//! spent its time on scalar NaN tests (as slow as the five passes). Here: the complex products
//! bit for bit the scalar ones, the squares, the maxima and a NaN mask in registers.
//!
//! Two instances. On x86-64 with AVX2 the `std::arch` one: it packs the squares of `x` and of
//! `sum` into one register with `hadd`, which pulp's portable API does not have; written
//! portably (two `abs2`, twice the maxima) `expm_multiply` of the 14-spin chain took 4 % longer
//! (`chain_bench 14 expm_multiply`, docs/benchmarks.md). Elsewhere (NEON on aarch64) the one
//! written against `pulp`, and plain loops where neither runs.

use pulp::{Simd, WithSimd};

use super::portable;
use crate::scalar::c64;

/// The term over `x`, `prev` and `sum` (entries below the three lengths): returns
/// `[max |xᵢ|², max |sumᵢ|²]` after the update, both NaN if any entry of either is NaN, 0 for
/// none. With a zero `shift` `prev` is not read (so `x − 0·prev` is `x` even where `prev` is
/// infinite). Each entry is the scalar `coeff * (x - shift * prev)` (or `coeff * x`) and
/// `sum + x` to the bit.
#[inline(always)]
pub(crate) fn taylor_term(
    x: &mut [c64],
    prev: &[c64],
    shift: c64,
    coeff: c64,
    sum: &mut [c64],
) -> [f64; 2] {
    let len = x.len().min(prev.len()).min(sum.len());
    let (x, prev, sum) = (&mut x[..len], &prev[..len], &mut sum[..len]);
    #[cfg(target_arch = "x86_64")]
    if super::avx2() {
        // SAFETY: the CPU has AVX2 and FMA, the features the kernel is compiled for; the three
        // slices have one length.
        return unsafe {
            if shift == c64::new(0.0, 0.0) {
                avx::term::<false>(x, prev, shift, coeff, sum)
            } else {
                avx::term::<true>(x, prev, shift, coeff, sum)
            }
        };
    }
    if shift == c64::new(0.0, 0.0) {
        portable::dispatch(Term::<false> {
            x,
            prev,
            shift,
            coeff,
            sum,
        })
    } else {
        portable::dispatch(Term::<true> {
            x,
            prev,
            shift,
            coeff,
            sum,
        })
    }
}

/// One entry of the term, the running maxima and NaN flag updated.
#[inline(always)]
fn entry(
    x: &mut c64,
    p: c64,
    (shift, coeff): (c64, c64),
    s: &mut c64,
    (mx, ms, nan): (f64, f64, bool),
) -> (f64, f64, bool) {
    let v = if shift == c64::new(0.0, 0.0) {
        coeff * *x
    } else {
        coeff * (*x - shift * p)
    };
    *x = v;
    *s += v;
    let (a, b) = (v.norm_sqr(), s.norm_sqr());
    (mx.max(a), ms.max(b), nan | a.is_nan() | b.is_nan())
}

/// [`taylor_term`] on slices of one length through `pulp` (NEON on aarch64); `SHIFT` whether
/// `shift` is not zero.
struct Term<'a, const SHIFT: bool> {
    x: &'a mut [c64],
    prev: &'a [c64],
    shift: c64,
    coeff: c64,
    sum: &'a mut [c64],
}

impl<const SHIFT: bool> WithSimd for Term<'_, SHIFT> {
    type Output = [f64; 2];

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) -> [f64; 2] {
        let Term {
            x,
            prev,
            shift,
            coeff,
            sum,
        } = self;
        let mut acc = (0.0f64, 0.0f64, false);
        if !portable::vector::<S>() {
            for ((x, p), s) in x.iter_mut().zip(prev).zip(sum.iter_mut()) {
                acc = entry(x, *p, (shift, coeff), s, acc);
            }
            return if acc.2 { [f64::NAN; 2] } else { [acc.0, acc.1] };
        }
        let (hr, hi) = (
            simd.splat_f64s(shift.re),
            portable::signed_im(simd, shift.im),
        );
        let (cr, ci) = (
            simd.splat_f64s(coeff.re),
            portable::signed_im(simd, coeff.im),
        );
        let (xh, xt) = S::as_mut_simd_c64s(x);
        let (ph, pt) = S::as_simd_c64s(prev);
        let (sh, st) = S::as_mut_simd_c64s(sum);
        let zero = simd.splat_f64s(0.0);
        let (mut m0, mut m1, mut ok) = (zero, zero, simd.equal_f64s(zero, zero));
        for ((x, p), s) in xh.iter_mut().zip(ph).zip(sh.iter_mut()) {
            let mut v = portable::f64s::<S>(*x);
            if SHIFT {
                let hp = portable::product(simd, hr, hi, portable::f64s::<S>(*p));
                v = simd.sub_f64s(v, hp);
            }
            let v = portable::product(simd, cr, ci, v);
            let t = simd.add_f64s(portable::f64s::<S>(*s), v);
            (*x, *s) = (portable::c64s::<S>(v), portable::c64s::<S>(t));
            let a = portable::f64s::<S>(simd.abs2_c64s(portable::c64s::<S>(v)));
            let b = portable::f64s::<S>(simd.abs2_c64s(portable::c64s::<S>(t)));
            // A NaN in `v` is one in `t = s + v` too, so `b` alone shows both.
            ok = simd.and_m64s(ok, simd.equal_f64s(b, b));
            m0 = simd.max_f64s(m0, a);
            m1 = simd.max_f64s(m1, b);
        }
        let most = |m: &S::f64s| {
            portable::lanes::<S>(m)
                .iter()
                .fold(0.0, |a: f64, &b| a.max(b))
        };
        let nan = simd.first_true_m64s(simd.not_m64s(ok)) < S::F64_LANES;
        acc = (most(&m0), most(&m1), nan);
        // `entry` reads `prev` only under a shift, as the loop above.
        for ((x, p), s) in xt.iter_mut().zip(pt).zip(st.iter_mut()) {
            acc = entry(x, *p, (shift, coeff), s, acc);
        }
        if acc.2 { [f64::NAN; 2] } else { [acc.0, acc.1] }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx {
    use std::arch::x86_64::*;

    use super::entry;
    use crate::scalar::c64;
    use crate::simd::runs::avx::product;

    /// [`super::taylor_term`], four entries per step (two registers of two), the maxima of
    /// `|x|²` in the even lanes and of `|sum|²` in the odd ones.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA; the three slices have one length.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn term<const SHIFT: bool>(
        x: &mut [c64],
        prev: &[c64],
        shift: c64,
        coeff: c64,
        sum: &mut [c64],
    ) -> [f64; 2] {
        let n = x.len();
        debug_assert!(prev.len() == n && sum.len() == n);
        let (px, pp, ps) = (
            x.as_mut_ptr().cast::<f64>(),
            prev.as_ptr().cast::<f64>(),
            sum.as_mut_ptr().cast::<f64>(),
        );
        let (hr, hi) = (_mm256_set1_pd(shift.re), _mm256_set1_pd(shift.im));
        let (cr, ci) = (_mm256_set1_pd(coeff.re), _mm256_set1_pd(coeff.im));
        let zero = _mm256_setzero_pd();
        let (mut m0, mut m1, mut bad) = (zero, zero, zero);
        // Two entries at offset `k` (doubles 2k..2k + 4): the update, and `[|x₀|², |s₀|²,
        // |x₁|², |s₁|²]`.
        #[target_feature(enable = "avx2,fma")]
        #[inline]
        fn step<const SHIFT: bool>(
            (px, pp, ps): (*mut f64, *const f64, *mut f64),
            k: usize,
            (hr, hi): (__m256d, __m256d),
            (cr, ci): (__m256d, __m256d),
        ) -> __m256d {
            // SAFETY: the caller's k + 2 ≤ n, so doubles 2k..2k + 4 lie in all three slices
            // (`Complex<f64>` is two packed doubles); `x` and `sum` are borrowed exclusively;
            // unaligned accesses.
            unsafe {
                let mut v = _mm256_loadu_pd(px.add(2 * k));
                if SHIFT {
                    v = _mm256_sub_pd(v, product(hr, hi, _mm256_loadu_pd(pp.add(2 * k))));
                }
                let v = product(cr, ci, v);
                _mm256_storeu_pd(px.add(2 * k), v);
                let s = _mm256_add_pd(_mm256_loadu_pd(ps.add(2 * k)), v);
                _mm256_storeu_pd(ps.add(2 * k), s);
                _mm256_hadd_pd(_mm256_mul_pd(v, v), _mm256_mul_pd(s, s))
            }
        }
        let (ptrs, h, c) = ((px, pp, ps), (hr, hi), (cr, ci));
        let mut k = 0;
        while k + 4 <= n {
            let (a, b) = (
                step::<SHIFT>(ptrs, k, h, c),
                step::<SHIFT>(ptrs, k + 2, h, c),
            );
            bad = _mm256_or_pd(bad, _mm256_cmp_pd::<_CMP_UNORD_Q>(a, b));
            m0 = _mm256_max_pd(m0, a);
            m1 = _mm256_max_pd(m1, b);
            k += 4;
        }
        if k + 2 <= n {
            let a = step::<SHIFT>(ptrs, k, h, c);
            bad = _mm256_or_pd(bad, _mm256_cmp_pd::<_CMP_UNORD_Q>(a, a));
            m0 = _mm256_max_pd(m0, a);
            k += 2;
        }
        let mut lanes = [0.0f64; 4];
        // SAFETY: `lanes` holds four doubles; unaligned store.
        unsafe { _mm256_storeu_pd(lanes.as_mut_ptr(), _mm256_max_pd(m0, m1)) };
        let mut acc = (lanes[0].max(lanes[2]), lanes[1].max(lanes[3]), false);
        if k < n {
            // `entry` reads `prev` only under a shift, as the loop above.
            acc = entry(&mut x[k], prev[k], (shift, coeff), &mut sum[k], acc);
        }
        if acc.2 || _mm256_movemask_pd(bad) != 0 {
            [f64::NAN; 2]
        } else {
            [acc.0, acc.1]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn val(i: usize, salt: usize) -> c64 {
        c64::new(
            ((i * 7 + salt * 3) % 11) as f64 * 0.37 - 1.9,
            ((i * 5 + salt) % 13) as f64 * 0.11 - 0.6,
        )
    }

    /// The steps one by one, as `Vectors::taylor_term`'s default does them with `iadd`,
    /// `imul` and the maxima (`x + scaled(−shift, p)`, `coeff·x`, `sum + 1·x`).
    fn steps(x: &mut [c64], prev: &[c64], shift: c64, coeff: c64, sum: &mut [c64]) -> [f64; 2] {
        let zero = c64::new(0.0, 0.0);
        let (mut mx, mut ms, mut nan) = (0.0f64, 0.0f64, false);
        for ((x, p), s) in x.iter_mut().zip(prev).zip(sum.iter_mut()) {
            if shift != zero {
                *x += crate::scalar::scaled(-shift, *p);
            }
            *x *= coeff;
            *s += crate::scalar::scaled(c64::new(1.0, 0.0), *x);
            nan |= x.norm_sqr().is_nan() || s.norm_sqr().is_nan();
            mx = mx.max(x.norm_sqr());
            ms = ms.max(s.norm_sqr());
        }
        if nan { [f64::NAN; 2] } else { [mx, ms] }
    }

    fn bits(v: &[c64]) -> Vec<(u64, u64)> {
        v.iter().map(|z| (z.re.to_bits(), z.im.to_bits())).collect()
    }

    fn same(a: [f64; 2], b: [f64; 2]) -> bool {
        a.iter()
            .zip(&b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
    }

    /// Runs `f` with the CPU's kernels (0), the `pulp` instance where the CPU has a
    /// `std::arch` one too (1), or the plain loops (2).
    fn in_mode<R>(mode: u8, f: impl FnOnce() -> R) -> R {
        match mode {
            0 => f(),
            1 => crate::simd::portable_only(f),
            _ => crate::simd::baseline(f),
        }
    }

    /// Every instance (AVX2 where the CPU has it, the `pulp` one, the plain loop) gives the
    /// steps' vectors and maxima to the bit, for every length through the tails.
    #[test]
    fn one_pass_is_the_steps_to_the_bit() {
        let shifts = [
            c64::new(0.0, 0.0),
            c64::new(0.25, -1.5),
            c64::new(-1.0, 0.0),
        ];
        let coeffs = [c64::new(0.0, -0.05), c64::new(0.3, 0.7)];
        for n in 0..19 {
            for (a, &shift) in shifts.iter().enumerate() {
                for (b, &coeff) in coeffs.iter().enumerate() {
                    let x0: Vec<c64> = (0..n).map(|i| val(i, 1 + a)).collect();
                    let prev: Vec<c64> = (0..n).map(|i| val(i, 5 + b)).collect();
                    let s0: Vec<c64> = (0..n).map(|i| val(i, 9 + a + b)).collect();
                    let (mut xw, mut sw) = (x0.clone(), s0.clone());
                    let want = steps(&mut xw, &prev, shift, coeff, &mut sw);
                    for base in [0, 1, 2] {
                        let (mut x, mut s) = (x0.clone(), s0.clone());
                        let got =
                            in_mode(base, || taylor_term(&mut x, &prev, shift, coeff, &mut s));
                        assert!(
                            same(got, want),
                            "n {n} {shift} {coeff} {base}: {got:?} {want:?}"
                        );
                        assert_eq!(bits(&x), bits(&xw), "n {n} {shift} {coeff} {base}");
                        assert_eq!(bits(&s), bits(&sw), "n {n} {shift} {coeff} {base}");
                    }
                }
            }
        }
    }

    /// A NaN anywhere (a lane of the registers or the last odd entry) makes both maxima NaN;
    /// an infinite `prev` under a zero shift is not read.
    #[test]
    fn a_nan_anywhere_makes_both_maxima_nan() {
        for n in [1, 2, 3, 4, 5, 7, 8, 9] {
            for at in 0..n {
                for base in [0, 1, 2] {
                    let run = |x: &mut Vec<c64>, prev: &[c64], shift: c64, s: &mut Vec<c64>| {
                        in_mode(base, || taylor_term(x, prev, shift, c64::new(0.5, 0.0), s))
                    };
                    let mut x: Vec<c64> = (0..n).map(|i| val(i, 2)).collect();
                    let mut s: Vec<c64> = (0..n).map(|i| val(i, 3)).collect();
                    let mut prev: Vec<c64> = (0..n).map(|i| val(i, 4)).collect();
                    x[at].im = f64::NAN;
                    let got = run(&mut x, &prev, c64::new(0.0, 0.0), &mut s);
                    assert!(got[0].is_nan() && got[1].is_nan(), "n {n} at {at} {base}");
                    let mut x: Vec<c64> = (0..n).map(|i| val(i, 2)).collect();
                    let mut s: Vec<c64> = (0..n).map(|i| val(i, 3)).collect();
                    prev[at] = c64::new(f64::INFINITY, 0.0);
                    let got = run(&mut x, &prev, c64::new(0.0, 0.0), &mut s);
                    assert!(got.iter().all(|m| m.is_finite()), "n {n} at {at} {base}");
                    let got = run(&mut x, &prev, c64::new(0.0, 1.0), &mut s);
                    assert!(
                        got[0].is_nan() || got[0].is_infinite(),
                        "n {n} at {at} {base}"
                    );
                }
            }
        }
    }
}
