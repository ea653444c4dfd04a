//! The bit mask of a column chunk's non-zero entries, for Dense → Csr.

use crate::scalar::c64;

/// Bit `t` set when `chunk[t]` is not `±0 ± 0i` (`-0.0` counts as zero, NaN does not), for a
/// chunk of at most 64 entries.
///
/// The compiler's vectorisation of the bit-by-bit fold separated the real and imaginary parts
/// with shuffles per pair of entries; this ORs the parts of four entries in two unpacks,
/// compares them with zero at once and reorders the four mask bits with a table.
#[inline(always)]
pub(crate) fn nonzero_mask(chunk: &[c64]) -> u64 {
    debug_assert!(chunk.len() <= 64);
    #[cfg(target_arch = "x86_64")]
    if super::avx2() {
        // SAFETY: the CPU has AVX2 and FMA, the features the kernel is compiled for.
        return unsafe { avx::nonzero_mask(chunk) };
    }
    scalar(chunk)
}

/// Non-zero exactly when `v` is not `±0 + ±0i`: the bits of both parts, sign bits shifted out.
/// The one test of "stored" that Dense → Csr applies everywhere.
#[inline(always)]
pub(crate) fn nonzero_bits(v: &c64) -> u64 {
    (v.re.to_bits() | v.im.to_bits()) << 1
}

/// The mask, one entry at a time.
fn scalar(chunk: &[c64]) -> u64 {
    chunk
        .iter()
        .take(64)
        .enumerate()
        .fold(0u64, |m, (t, v)| m | (u64::from(nonzero_bits(v) != 0) << t))
}

#[cfg(target_arch = "x86_64")]
mod avx {
    use std::arch::x86_64::*;

    use crate::scalar::c64;

    /// Lanes `[c0, c2, c1, c3]` (as the unpacks leave them) → bits in entry order.
    const ORDER: [u8; 16] = {
        let mut t = [0u8; 16];
        let mut x = 0;
        while x < 16 {
            t[x] = ((x & 1) | ((x >> 2) & 1) << 1 | ((x >> 1) & 1) << 2 | (x & 8)) as u8;
            x += 1;
        }
        t
    };

    /// Four entries per step: `re | im` of each (two unpacks and an OR), the sign bits
    /// cleared, one 64-bit compare with zero, one `movemask`, the table.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn nonzero_mask(chunk: &[c64]) -> u64 {
        let n = chunk.len().min(64);
        let p = chunk.as_ptr().cast::<f64>();
        let abs = _mm256_set1_epi64x(i64::MAX);
        let zero = _mm256_setzero_si256();
        let mut mask = 0u64;
        let mut k = 0;
        while k + 4 <= n {
            // SAFETY: entries k..k + 4 exist (doubles 2k..2k + 8; `Complex<f64>` is two
            // packed doubles); unaligned loads.
            let (v0, v1) = unsafe {
                (
                    _mm256_loadu_pd(p.add(2 * k)),
                    _mm256_loadu_pd(p.add(2 * k + 4)),
                )
            };
            let parts = _mm256_or_pd(_mm256_unpacklo_pd(v0, v1), _mm256_unpackhi_pd(v0, v1));
            let bits = _mm256_and_si256(_mm256_castpd_si256(parts), abs);
            let zeros = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(bits, zero)));
            let nonzero = ORDER[(!zeros & 0xF) as usize];
            mask |= u64::from(nonzero) << k;
            k += 4;
        }
        if k < n {
            mask |= super::scalar(&chunk[k..n]) << k;
        }
        mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both instances equal the scalar fold on every length up to 64 and on patterns of zeros,
    /// signed zeros, NaN, infinities and subnormals in either part.
    #[test]
    fn mask_matches_the_scalar_fold() {
        let parts = [0.0, -0.0, 1.0, f64::NAN, f64::INFINITY, 5e-324, -2.5];
        let values: Vec<c64> = (0..64)
            .map(|k| c64::new(parts[(k * 5 + k / 7) % 7], parts[(k * 3 + k / 5) % 7]))
            .collect();
        for len in 0..=64 {
            for start in [0, 64 - len] {
                let chunk = &values[start..start + len];
                let want = scalar(chunk);
                assert_eq!(nonzero_mask(chunk), want, "len {len} from {start}");
                assert_eq!(crate::simd::baseline(|| nonzero_mask(chunk)), want);
            }
        }
    }
}
