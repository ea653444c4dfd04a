//! Zero tests of complex values: the bit mask of a column chunk's non-zero entries and the
//! count of zero values over columns (Dense → Csr), and the smallest non-zero part of a slice
//! (whether a Kronecker product can hold a zero).
//!
//! In `std::arch` on x86-64: a mask of lanes as the bits of an integer (`movemask`) is not in
//! pulp's portable API. Elsewhere the plain bit-by-bit loops run.

use crate::scalar::c64;

/// Bit `t` set when `chunk[t]` is not `±0 ± 0i` (`-0.0` counts as zero, NaN does not), for a
/// chunk of at most 64 entries (the kernels call the AVX2 instance from [`mask_columns`]).
///
/// The compiler's vectorisation of the bit-by-bit fold separated the real and imaginary parts
/// with shuffles per pair of entries; this ORs the parts of four entries in two unpacks,
/// compares them with zero at once and reorders the four mask bits with a table.
#[cfg(test)]
fn nonzero_mask(chunk: &[c64]) -> u64 {
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

/// The smallest non-zero `|part|` (real or imaginary) of the values, or `None` if a value is
/// exactly zero (`±0 ± 0i`). NaN parts are passed over, so it is `+∞` when every non-zero part
/// is NaN (or there are no values).
///
/// The compiler's vectorisation of the fold handled one value per 128-bit step and moved each
/// value's zero test to an integer register (15 instructions a value); the AVX2 instance takes
/// two values a 256-bit step and keeps the test in a vector (7 a value).
#[inline(always)]
pub(crate) fn smallest_part(v: &[c64]) -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    if super::avx2() {
        // SAFETY: the CPU has AVX2 and FMA, the features the kernel is compiled for.
        return unsafe { avx::smallest_part(v) };
    }
    let pick = |p: f64, least: f64| {
        let a = p.abs();
        // NaN: `p != 0` holds but `a < least` does not.
        if (p != 0.0) & (a < least) { a } else { least }
    };
    let (mut least, mut zero) = (f64::INFINITY, false);
    for z in v {
        zero |= (z.re == 0.0) & (z.im == 0.0);
        least = pick(z.im, pick(z.re, least));
    }
    (!zero).then_some(least)
}

/// How many values of the slices are exactly zero (`±0 ± 0i`), by the test of
/// [`nonzero_bits`] (NaN and subnormal parts are not zero): the count of a small Dense → Csr.
///
/// The compiler's vectorisation of the count per column took four values a step with a
/// horizontal sum and a scalar tail for each column (a full 10 × 10: 0.181–0.190 µs a
/// conversion). AVX-512 tests four values a step, a column's last one to three by one masked
/// load, and keeps the counts in a vector to the end (0.167–0.174 µs); AVX2 four values a step
/// with its counts in a vector, the last values of a column one at a time.
#[inline(always)]
pub(crate) fn zero_count<'a>(slices: impl Iterator<Item = &'a [c64]>) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let slices = match wide_zero_count(slices) {
            Ok(count) => return count,
            Err(slices) => slices,
        };
        if super::avx2() {
            // SAFETY: the CPU has AVX2 and FMA, the features the kernel is compiled for.
            return unsafe { avx::zero_count(slices) };
        }
        scalar_zero_count(slices)
    }
    #[cfg(not(target_arch = "x86_64"))]
    scalar_zero_count(slices)
}

/// [`zero_count`] one value at a time (also the caller's choice for columns shorter than one
/// register, where the kernels' call costs more than the loop).
pub(crate) fn scalar_zero_count<'a>(slices: impl Iterator<Item = &'a [c64]>) -> usize {
    slices.flatten().filter(|v| nonzero_bits(v) == 0).count()
}

/// [`zero_count`] on AVX-512 where it runs; the slices back otherwise.
#[cfg(target_arch = "x86_64")]
#[rustversion::since(1.89)]
#[inline(always)]
fn wide_zero_count<'a, I: Iterator<Item = &'a [c64]>>(slices: I) -> Result<usize, I> {
    if super::avx512() {
        // SAFETY: the CPU has AVX-512F, the feature the kernel is compiled for.
        Ok(unsafe { avx::zero_count_avx512(slices) })
    } else {
        Err(slices)
    }
}

/// A build by Rust 1.88 has no AVX-512 kernels.
#[cfg(target_arch = "x86_64")]
#[rustversion::before(1.89)]
#[inline(always)]
fn wide_zero_count<'a, I: Iterator<Item = &'a [c64]>>(slices: I) -> Result<usize, I> {
    Err(slices)
}

/// For each `(chunk, out)`: `*out` = the non-zeros of the chunk (at most 64 entries), bit `t`
/// set when `chunk[t]` is not `±0 ± 0i` (`-0.0` counts as zero, NaN does not), and `block[t] += 1` for every bit `t` set in it — the masks of one 64-row block's column
/// segments and the block's row counts, with no branch and no loop over the set bits. The
/// lanes wrap past `u16::MAX`: the caller passes at most that many chunks between two reads.
///
/// AVX2: the counts stay in four vectors over all the chunks, and each mask is added sixteen
/// lanes a step, each lane's byte of the mask moved in by one shuffle and its bit tested by one
/// compare (13 instructions a mask). A call per chunk with the counts in memory (Dense → Csr
/// 100 × 100, 10 % non-zero: 98 instructions a chunk beside the mask's own) and, before it,
/// one increment per set bit after a `count_ones` (130) cost more.
#[inline(always)]
pub(crate) fn mask_columns<'a>(
    chunks: impl Iterator<Item = (&'a [c64], &'a mut u64)>,
    block: &mut [u16; 64],
) {
    #[cfg(target_arch = "x86_64")]
    if super::avx2() {
        // SAFETY: the CPU has AVX2 and FMA, the features the kernel is compiled for.
        unsafe { avx::mask_columns(chunks, block) };
        return;
    }
    for (chunk, out) in chunks {
        let mask = scalar(chunk);
        *out = mask;
        for (t, x) in block.iter_mut().enumerate() {
            *x = x.wrapping_add(((mask >> t) & 1) as u16);
        }
    }
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

    /// The four entries in `a` and `b` (two each) as 64-bit lanes `re | im` with the sign bit
    /// cleared (`abs` = `i64::MAX` in every lane), zero exactly where the entry is `±0 ± 0i`, in
    /// the order the unpacks leave them: [e0, e2, e1, e3].
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn part_bits(a: __m256d, b: __m256d, abs: __m256i) -> __m256i {
        let parts = _mm256_or_pd(_mm256_unpacklo_pd(a, b), _mm256_unpackhi_pd(a, b));
        _mm256_and_si256(_mm256_castpd_si256(parts), abs)
    }

    /// Four entries per step: `re | im` of each with the sign bits cleared ([`part_bits`]),
    /// one 64-bit compare with zero, one `movemask`, the table.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn nonzero_mask(chunk: &[c64]) -> u64 {
        let n = chunk.len().min(64);
        let p = chunk.as_ptr().cast::<f64>();
        let abs = _mm256_set1_epi64x(i64::MAX);
        let zero = _mm256_setzero_si256();
        // The four entries in `a` and `b` as 64-bit lanes, all ones where non-zero, in the
        // order the unpacks leave them: [e0, e2, e1, e3].
        let lanes = |a: __m256d, b: __m256d| _mm256_cmpgt_epi64(part_bits(a, b, abs), zero);
        // The non-zeros of the four entries in `a` and `b`, in entry order.
        let four = |a: __m256d, b: __m256d| {
            ORDER[_mm256_movemask_pd(_mm256_castsi256_pd(lanes(a, b))) as usize]
        };
        // Eight entries: the two lane sets packed to 32 bits ([e0, e2, e4, e6, e1, e3, e5,
        // e7]), put in entry order by one permutation, one `movemask` (no table).
        let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        let eight = |v: [__m256d; 4]| {
            let packed = _mm256_packs_epi32(lanes(v[0], v[1]), lanes(v[2], v[3]));
            let ordered = _mm256_permutevar8x32_epi32(packed, order);
            _mm256_movemask_ps(_mm256_castsi256_ps(ordered)) as u8
        };
        let mut mask = 0u64;
        let mut k = 0;
        // Eight entries a step, unrolled over a chunk: ~2.4 instructions an entry (two
        // four-entry tests with a table each: ~2.9; one at a time: ~4).
        while k + 8 <= n {
            // Four loads written out, not `array::from_fn` over a closure: a higher-order call
            // in a hot loop is inlined only at the compiler's choice (Dense·ket's column
            // gather once was not, docs/benchmarks.md).
            // SAFETY: entries k..k + 8 exist (doubles 2k..2k + 16); unaligned loads.
            let v = unsafe {
                let at = p.add(2 * k);
                [
                    _mm256_loadu_pd(at),
                    _mm256_loadu_pd(at.add(4)),
                    _mm256_loadu_pd(at.add(8)),
                    _mm256_loadu_pd(at.add(12)),
                ]
            };
            mask |= u64::from(eight(v)) << k;
            k += 8;
        }
        while k + 4 <= n {
            // SAFETY: entries k..k + 4 exist (doubles 2k..2k + 8; `Complex<f64>` is two
            // packed doubles); unaligned loads.
            let (v0, v1) = unsafe {
                (
                    _mm256_loadu_pd(p.add(2 * k)),
                    _mm256_loadu_pd(p.add(2 * k + 4)),
                )
            };
            mask |= u64::from(four(v0, v1)) << k;
            k += 4;
        }
        if k < n {
            mask |= super::scalar(&chunk[k..n]) << k;
        }
        mask
    }

    /// [`super::mask_columns`]: per 16 rows 16q.., the mask's bytes 2q (rows 16q..16q + 8,
    /// the lower 128-bit half) and 2q + 1 (the upper half) copied into both bytes of each
    /// 16-bit lane, the lane's own bit selected and compared with itself (all ones when set),
    /// and that subtracted from the counts.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn mask_columns<'a>(
        chunks: impl Iterator<Item = (&'a [c64], &'a mut u64)>,
        block: &mut [u16; 64],
    ) {
        // Lane t of each half tests bit t of its byte.
        let bits = _mm256_setr_epi16(1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128);
        let picks: [__m256i; 4] = std::array::from_fn(|q| {
            let (lo, hi) = (2 * q as i8, 2 * q as i8 + 1);
            _mm256_setr_epi8(
                lo, lo, lo, lo, lo, lo, lo, lo, lo, lo, lo, lo, lo, lo, lo, lo, //
                hi, hi, hi, hi, hi, hi, hi, hi, hi, hi, hi, hi, hi, hi, hi, hi,
            )
        });
        let p = block.as_mut_ptr().cast::<__m256i>();
        // SAFETY: the 64 lanes are four 32-byte vectors; unaligned loads.
        let mut counts: [__m256i; 4] =
            std::array::from_fn(|q| unsafe { _mm256_loadu_si256(p.add(q)) });
        for (chunk, out) in chunks {
            let mask = nonzero_mask(chunk);
            *out = mask;
            let m = _mm256_set1_epi64x(mask as i64);
            for (c, pick) in counts.iter_mut().zip(&picks) {
                let set =
                    _mm256_cmpeq_epi16(_mm256_and_si256(_mm256_shuffle_epi8(m, *pick), bits), bits);
                *c = _mm256_sub_epi16(*c, set);
            }
        }
        for (q, c) in counts.iter().enumerate() {
            // SAFETY: as the loads above; unaligned stores.
            unsafe { _mm256_storeu_si256(p.add(q), *c) };
        }
    }

    /// [`super::zero_count`], four values a step: each value's sign-cleared `re | im`
    /// ([`part_bits`]) compared with zero (all ones where zero) and subtracted from four
    /// running counts; the last values of a slice one at a time.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn zero_count<'a>(slices: impl Iterator<Item = &'a [c64]>) -> usize {
        let abs = _mm256_set1_epi64x(i64::MAX);
        let zero = _mm256_setzero_si256();
        let mut counts = _mm256_setzero_si256();
        let mut tail = 0;
        for s in slices {
            let (p, n) = (s.as_ptr().cast::<f64>(), s.len());
            let mut k = 0;
            while k + 4 <= n {
                // SAFETY: values k..k + 4 exist (doubles 2k..2k + 8); unaligned loads.
                let (a, b) = unsafe {
                    (
                        _mm256_loadu_pd(p.add(2 * k)),
                        _mm256_loadu_pd(p.add(2 * k + 4)),
                    )
                };
                let zeros = _mm256_cmpeq_epi64(part_bits(a, b, abs), zero);
                counts = _mm256_sub_epi64(counts, zeros);
                k += 4;
            }
            tail += super::scalar_zero_count(std::iter::once(&s[k..]));
        }
        let mut lanes = [0u64; 4];
        // SAFETY: four 64-bit lanes into a 32-byte array; unaligned store.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), counts) };
        // Each lane counts at most the values of the slices, which fit in memory.
        tail + lanes.iter().map(|&c| c as usize).sum::<usize>()
    }

    /// [`super::zero_count`] on AVX-512F: four values a register, each value's `re | im`
    /// in both of its lanes (a swap and an OR), its sign-cleared bits tested against zero
    /// into a mask, and one added to the running counts in the lanes it sets (two a zero
    /// value); a slice's last one to three values by a masked load (the lanes past its end are
    /// neither read nor counted). Nothing leaves the vector registers until the end: a
    /// `popcnt` of each step's mask, through a general register, took a full 10 × 10 0.175 µs
    /// a conversion, against 0.167 this way.
    #[rustversion::since(1.89)]
    #[target_feature(enable = "avx512f")]
    pub(super) fn zero_count_avx512<'a>(slices: impl Iterator<Item = &'a [c64]>) -> usize {
        let abs = _mm512_set1_epi64(i64::MAX);
        let one = _mm512_set1_epi64(1);
        let mut counts = _mm512_setzero_si512();
        #[inline]
        #[target_feature(enable = "avx512f")]
        fn both(x: __m512i) -> __m512i {
            // The two 64-bit halves of each 128-bit lane swapped (AVX-512F has no `or_pd`).
            _mm512_or_si512(x, _mm512_shuffle_epi32::<0b0100_1110>(x))
        }
        for s in slices {
            let (p, n) = (s.as_ptr().cast::<i64>(), s.len());
            let mut k = 0;
            while k + 4 <= n {
                // SAFETY: values k..k + 4 exist (doubles 2k..2k + 8); unaligned load.
                let x = both(unsafe { _mm512_loadu_epi64(p.add(2 * k)) });
                counts =
                    _mm512_mask_add_epi64(counts, _mm512_testn_epi64_mask(x, abs), counts, one);
                k += 4;
            }
            if k < n {
                // 1 to 3 values left: their 2 to 6 parts.
                let lanes = ((1u16 << (2 * (n - k))) - 1) as u8;
                // SAFETY: the lanes set in `lanes` are values k..n (doubles 2k..2n), which
                // exist; masked-off lanes are not read (no fault past the slice).
                let x = both(unsafe { _mm512_maskz_loadu_epi64(lanes, p.add(2 * k)) });
                let zero = _mm512_mask_testn_epi64_mask(lanes, x, abs);
                counts = _mm512_mask_add_epi64(counts, zero, counts, one);
            }
        }
        // Each zero value was counted in both of its lanes; the counts fit in memory.
        (_mm512_reduce_add_epi64(counts) / 2) as usize
    }

    /// [`super::smallest_part`], two values a step in each of two running minima: per value
    /// `|part|` replaces the minimum where the part is non-zero and below it (never a NaN),
    /// and a value whose parts both compare equal to zero sets a lane of `zeros`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn smallest_part(v: &[c64]) -> Option<f64> {
        let p = v.as_ptr().cast::<f64>();
        let abs = _mm256_castsi256_pd(_mm256_set1_epi64x(i64::MAX));
        let zero = _mm256_setzero_pd();
        let mut least = [_mm256_set1_pd(f64::INFINITY); 2];
        let mut zeros = _mm256_setzero_pd();
        let inf = _mm256_set1_pd(f64::INFINITY);
        let mut step = |x: __m256d, least: &mut __m256d| {
            // Zero parts count as +∞ (never below); `min(a, least)` is `a < least ? a :
            // least`, so a NaN part never replaces the minimum either. Only the `min` waits
            // on the previous step, where a compare and a blend on `least` did (`kron` of two
            // 10 × 10 tridiagonal factors, 0.6 µs a call: about 1 % less).
            let eq = _mm256_cmp_pd::<_CMP_EQ_OQ>(x, zero);
            let a = _mm256_blendv_pd(_mm256_and_pd(x, abs), inf, eq);
            *least = _mm256_min_pd(a, *least);
            zeros = _mm256_or_pd(zeros, _mm256_and_pd(eq, _mm256_permute_pd::<0b0101>(eq)));
        };
        let n = v.len();
        let mut k = 0;
        while k + 4 <= n {
            // SAFETY: values k..k + 4 exist (doubles 2k..2k + 8); unaligned loads.
            let (x0, x1) = unsafe {
                (
                    _mm256_loadu_pd(p.add(2 * k)),
                    _mm256_loadu_pd(p.add(2 * k + 4)),
                )
            };
            let [l0, l1] = &mut least;
            step(x0, l0);
            step(x1, l1);
            k += 4;
        }
        while k < n {
            // One value in the lower lane, +∞ (non-zero, never below) in the upper one.
            // SAFETY: value k exists (doubles 2k, 2k + 1).
            let x = unsafe { _mm_loadu_pd(p.add(2 * k)) };
            let x =
                _mm256_insertf128_pd::<1>(_mm256_castpd128_pd256(x), _mm_set1_pd(f64::INFINITY));
            step(x, &mut least[0]);
            k += 1;
        }
        if _mm256_movemask_pd(zeros) != 0 {
            return None;
        }
        // No lane holds NaN (only finite or infinite |parts| replace +∞), so `min` is exact.
        let m = _mm256_min_pd(least[0], least[1]);
        let m = _mm_min_pd(_mm256_castpd256_pd128(m), _mm256_extractf128_pd::<1>(m));
        Some(_mm_cvtsd_f64(_mm_min_sd(m, _mm_unpackhi_pd(m, m))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both instances write each chunk's mask and add each set bit to its lane, and only
    /// those: chunks of every length up to 64 (zeros, signed zeros, NaN, subnormals), counts
    /// carried over from an earlier call.
    #[test]
    fn mask_columns_writes_masks_and_counts_bits() {
        let parts = [0.0, -0.0, 1.0, f64::NAN, 5e-324, 0.0, -2.5];
        let values: Vec<c64> = (0..64 * 65)
            .map(|k| c64::new(parts[(k * 5 + k / 7) % 7], parts[(k * 3 + k / 11) % 7]))
            .collect();
        let chunks: Vec<&[c64]> = (0..=64)
            .map(|len| &values[64 * len..64 * len + len])
            .collect();
        for baseline in [false, true] {
            let mut block = [3u16; 64];
            let mut want = [3u16; 64];
            let mut masks = vec![0u64; chunks.len()];
            let run = |block: &mut [u16; 64], masks: &mut [u64]| {
                mask_columns(chunks.iter().copied().zip(masks.iter_mut()), block)
            };
            if baseline {
                crate::simd::baseline(|| run(&mut block, &mut masks));
            } else {
                run(&mut block, &mut masks);
            }
            for (chunk, &mask) in chunks.iter().zip(&masks) {
                assert_eq!(
                    mask,
                    scalar(chunk),
                    "len {}, baseline {baseline}",
                    chunk.len()
                );
                for (t, w) in want.iter_mut().enumerate() {
                    *w += u16::from(mask & (1 << t) != 0);
                }
            }
            assert_eq!(block, want, "baseline {baseline}");
        }
    }

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

    /// Both instances against the definition on every length up to 40 and every start, with
    /// signed zeros, NaN, infinities and subnormals in either part; a value `±0 ± 0i` anywhere
    /// gives `None`, a zero part beside a non-zero one does not.
    #[test]
    fn smallest_part_matches_the_definition() {
        let parts = [
            0.0,
            -0.0,
            1.0,
            f64::NAN,
            f64::INFINITY,
            5e-324,
            -2.5,
            0.25,
            -1e300,
        ];
        let values: Vec<c64> = (0..48)
            .map(|k| c64::new(parts[(k * 5 + k / 7) % 9], parts[(k * 7 + k / 3 + 2) % 9]))
            .collect();
        let want = |v: &[c64]| -> Option<f64> {
            if v.iter().any(|z| z.re == 0.0 && z.im == 0.0) {
                return None;
            }
            let nonzero = v.iter().flat_map(|z| [z.re, z.im]).filter(|p| *p != 0.0);
            Some(
                nonzero
                    .map(f64::abs)
                    .filter(|a| !a.is_nan())
                    .fold(f64::INFINITY, f64::min),
            )
        };
        let mut zeros_seen = (0, 0);
        for len in 0..=40 {
            for start in 0..=(48 - len) {
                let v = &values[start..start + len];
                let w = want(v);
                if w.is_none() {
                    zeros_seen.0 += 1;
                } else {
                    zeros_seen.1 += 1;
                }
                let same = |x: Option<f64>| x.map(f64::to_bits) == w.map(f64::to_bits);
                assert!(same(smallest_part(v)), "len {len} from {start}");
                assert!(
                    same(crate::simd::baseline(|| smallest_part(v))),
                    "baseline {len}"
                );
            }
        }
        // Both outcomes occur, and the ones that decide the minimum with no zero value.
        assert!(zeros_seen.0 > 100 && zeros_seen.1 > 100, "{zeros_seen:?}");
        let no_zero = [
            c64::new(0.0, 3.0),
            c64::new(-0.5, f64::NAN),
            c64::new(2.0, -0.0),
        ];
        for v in [&no_zero[..], &no_zero[1..], &no_zero[..1]] {
            assert_eq!(smallest_part(v), want(v));
            assert_eq!(crate::simd::baseline(|| smallest_part(v)), want(v));
        }
        assert_eq!(smallest_part(&no_zero), Some(0.5));
        assert_eq!(smallest_part(&[]), Some(f64::INFINITY));
        assert_eq!(
            smallest_part(&[c64::new(f64::NAN, f64::NAN)]),
            Some(f64::INFINITY)
        );
    }

    /// The three instances (AVX-512, AVX2, scalar) against the definition: slices of every
    /// length up to 13 at every start, one to three of them a call, with up to two zeros
    /// (`±0 ± 0i`) among values that are only nearly zero (a zero part beside a non-zero, NaN,
    /// infinite or subnormal one).
    #[test]
    fn zero_count_matches_the_definition() {
        let near = [
            c64::new(0.0, 5e-324),
            c64::new(-0.0, f64::NAN),
            c64::new(f64::INFINITY, -0.0),
            c64::new(5e-324, 0.0),
            c64::new(1.0, 2.0),
        ];
        let zeros = [c64::new(0.0, 0.0), c64::new(-0.0, 0.0), c64::new(0.0, -0.0)];
        let mut base: Vec<c64> = (0..40).map(|k| near[k % near.len()]).collect();
        base[23] = zeros[1];
        let mut seen = [0usize; 4];
        for len in 0..=13 {
            for start in 0..=(20 - len) {
                for spots in [
                    (None, None),
                    (Some(0), None),
                    (Some(len / 3), Some(len.max(1) - 1)),
                ] {
                    let mut v = base.clone();
                    for t in [spots.0, spots.1]
                        .into_iter()
                        .flatten()
                        .filter(|&t| t < len)
                    {
                        v[start + t] = zeros[(start + t) % zeros.len()];
                    }
                    // The slice under test, beside one with a zero and an empty one.
                    let slices = [&v[start..start + len], &base[20..27], &base[..0]];
                    for count in 1..=3 {
                        let pick = || slices[..count].iter().copied();
                        let want = pick()
                            .flatten()
                            .filter(|x| x.re == 0.0 && x.im == 0.0)
                            .count();
                        let at =
                            format!("len {len} from {start}, zeros at {spots:?}, {count} slices");
                        assert_eq!(zero_count(pick()), want, "{at}");
                        let avx2 = crate::simd::without_avx512(|| zero_count(pick()));
                        assert_eq!(avx2, want, "AVX2, {at}");
                        assert_eq!(crate::simd::baseline(|| zero_count(pick())), want, "{at}");
                        seen[want.min(3)] += 1;
                    }
                }
            }
        }
        assert!(seen.iter().all(|&s| s > 20), "{seen:?}");
    }
}
