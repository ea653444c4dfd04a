//! Zero fills of results that stay in cache.
//!
//! glibc's `memset` on x86-64 writes with `rep stosb` from 2 KiB up, which was slower than
//! plain 32-byte AVX stores for buffers that stay in the caches: a 100 × 100 Csr → Dense
//! conversion (a 160 KB zero fill, then 1 000 entries) took 4.31–4.98 µs with `memset` and
//! 3.61–4.63 µs with them, medians of alternated runs (docs/benchmarks/per_operation.md).
//! [`zeros`] is those stores; results the engine streams keep `memset` (at 1.6 GB plain
//! stores took three times as long), as their callers decide. The choice is about x86's
//! `memset`, so it stays in `std::arch`; elsewhere `memset` is used.

use std::mem::MaybeUninit;

use crate::scalar::c64;

/// `out[k] = 0` for every slot, with 32-byte AVX stores when the CPU has AVX2 (four a step),
/// else `memset`.
#[inline]
pub(crate) fn zeros(out: &mut [MaybeUninit<c64>]) {
    #[cfg(target_arch = "x86_64")]
    if super::avx2() {
        // SAFETY: the CPU has AVX2, hence AVX.
        unsafe { zeros_avx(out) };
        return;
    }
    // SAFETY: `out` is `out.len()` writable slots, and all-zero bytes are the complex 0.
    unsafe { std::ptr::write_bytes(out.as_mut_ptr(), 0, out.len()) };
}

/// The AVX instance of [`zeros`]: two slots a store, eight a step, the rest by `memset` (the
/// compiler's own choice for the tail, under 128 bytes).
///
/// # Safety
/// The CPU has AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn zeros_avx(out: &mut [MaybeUninit<c64>]) {
    use std::arch::x86_64::{_mm256_setzero_pd, _mm256_storeu_pd};
    let n = out.len();
    let p = out.as_mut_ptr().cast::<f64>();
    // Opaque to the optimiser: a loop of stores of a known zero is turned back into `memset`.
    let z = std::hint::black_box(_mm256_setzero_pd());
    let mut k = 0;
    while k + 8 <= n {
        // SAFETY: slots k..k + 8 exist (k + 8 ≤ n): 16 f64 from f64 slot 2k, written as four
        // unaligned 32-byte stores; the CPU has AVX (the caller's contract).
        unsafe {
            let q = p.add(2 * k);
            _mm256_storeu_pd(q, z);
            _mm256_storeu_pd(q.add(4), z);
            _mm256_storeu_pd(q.add(8), z);
            _mm256_storeu_pd(q.add(12), z);
        }
        k += 8;
    }
    for o in &mut out[k..] {
        o.write(crate::scalar::ZERO);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every slot becomes 0 and nothing beside the slice is written: lengths around the
    /// eight-slot step, starts on and off a 32-byte boundary, both instances.
    #[test]
    fn zeros_every_slot_and_nothing_else() {
        let junk = c64::new(7.0, -7.0);
        for skip in [0, 1, 2, 3] {
            for len in [0, 1, 7, 8, 9, 16, 23, 64, 101] {
                for baseline in [false, true] {
                    let mut raw = vec![MaybeUninit::new(junk); len + 8];
                    let out = &mut raw[skip..skip + len];
                    if baseline {
                        crate::simd::baseline(|| zeros(out));
                    } else {
                        zeros(out);
                    }
                    for (k, slot) in raw.iter().enumerate() {
                        // SAFETY: every slot was initialised (junk, then maybe zeros).
                        let v = unsafe { slot.assume_init() };
                        let inside = (skip..skip + len).contains(&k);
                        let want = if inside { crate::scalar::ZERO } else { junk };
                        assert_eq!(v, want, "slot {k}, skip {skip}, len {len}");
                    }
                }
            }
        }
    }
}
