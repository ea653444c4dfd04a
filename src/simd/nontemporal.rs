//! Non-temporal ("streaming") stores for results too large to stay in cache.
//!
//! An ordinary store first reads the line it writes into the cache (read for ownership), so a
//! streaming kernel over a large matrix moves three bytes for every two it needs: the input
//! read, the output read, the output written back. A non-temporal store writes the line
//! without reading it, as glibc's `memcpy` does above its own threshold. Measured
//! (docs/benchmarks/engine.md), a conjugating pass over a 10⁴ × 10⁴ matrix (1.6 GB in, 1.6 GB out) took 89 ms with them
//! against 164 ms with ordinary AVX stores and 145 ms with scalar ones; over 31 MB, 1.5
//! against 2.6 ms; at 8 MB and below they were no faster (docs/benchmarks.md). Which results
//! are streamed is the engine's decision (`engine::streams`: passes that move more bytes than
//! the last-level cache keeps); smaller ones are written as before, so that they stay in cache
//! for whatever reads them next.
//!
//! In `std::arch` on x86-64: non-temporal stores are not in pulp's portable API. Elsewhere the
//! results are written with ordinary stores.

use std::mem::MaybeUninit;

use crate::scalar::c64;

/// `out[k] = f(x[k])` for every `k` below both lengths, through non-temporal stores (see
/// [`fill`]). Call [`fence`] after the last of a result's streaming writes.
#[inline(always)]
pub(crate) fn map(out: &mut [MaybeUninit<c64>], x: &[c64], f: impl Fn(c64) -> c64) {
    let n = out.len().min(x.len());
    // SAFETY: `fill` asks for k < n ≤ x.len() only.
    fill(&mut out[..n], |k| f(unsafe { *x.get_unchecked(k) }));
}

/// `out[k] = f(x[k], y[k])` for every `k` below the three lengths, as [`map`].
#[inline(always)]
pub(crate) fn zip(out: &mut [MaybeUninit<c64>], x: &[c64], y: &[c64], f: impl Fn(c64, c64) -> c64) {
    let n = out.len().min(x.len()).min(y.len());
    // SAFETY: `fill` asks for k < n, below both lengths, only.
    fill(&mut out[..n], |k| unsafe {
        f(*x.get_unchecked(k), *y.get_unchecked(k))
    });
}

/// `out[k] = 0` for every slot, through non-temporal stores (see [`fill`]): the zero fill of
/// a large result, which glibc's `memset` streams only above its own threshold. Call
/// [`fence`] after the last of a result's streaming writes.
#[inline(always)]
pub(crate) fn zeros(out: &mut [MaybeUninit<c64>]) {
    // SAFETY: no entries (an empty `rows` meets every condition of `sparse`).
    unsafe { sparse(out, &[], &[]) };
}

/// `out[rows[t]] = vals[t]` for every `t`, and 0 in every other slot of `out`, in order,
/// through non-temporal stores (see [`fill`]): a column of a large result that holds few
/// stored entries, written in one pass without reading it (Csr → Dense). Call [`fence`] after
/// the last of a result's streaming writes.
///
/// # Safety
/// `rows` is strictly increasing, every row is below `out.len()`, and `vals` is at least as
/// long as `rows`.
#[inline(always)]
pub(crate) unsafe fn sparse(out: &mut [MaybeUninit<c64>], rows: &[usize], vals: &[c64]) {
    #[cfg(target_arch = "x86_64")]
    if out.as_ptr().cast::<u8>().align_offset(16) == 0 && super::avx2() {
        // SAFETY: the CPU has AVX2, so AVX; `out` starts on a 16-byte boundary; the rest is
        // the caller's contract.
        unsafe { sparse_avx(out, rows, vals) };
        return;
    }
    let mut t = 0;
    // `fill` asks for every slot once, in order.
    fill(out, |k| next_entry(rows, vals, &mut t, k));
}

/// Slot `k`'s value in [`sparse`], slots asked for in order: entry `t`'s (and `t` moves past
/// it) where that entry is at `k`, else 0. Rows increase, so entry `t` is the only candidate.
#[inline(always)]
fn next_entry(rows: &[usize], vals: &[c64], t: &mut usize, k: usize) -> c64 {
    match (rows.get(*t), vals.get(*t)) {
        (Some(&r), Some(&v)) if r == k => {
            *t += 1;
            v
        }
        _ => crate::scalar::ZERO,
    }
}

/// The AVX instance of [`sparse`]: whole 32-byte units, each zero or built in registers from
/// the entries it holds, so that the stores of each 64-byte line follow one another and the
/// line is written whole. Stores of 16 bytes for a run of zeros up to each entry and then
/// the entry left lines in pieces: a 10⁴ × 10⁴ Csr → Dense with 10 entries a row took 30–31
/// ms against 23 ms for a `memset` and the scatter (one thread).
///
/// # Safety
/// As [`sparse`]; the CPU has AVX; `out` starts on a 16-byte boundary.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn sparse_avx(out: &mut [MaybeUninit<c64>], rows: &[usize], vals: &[c64]) {
    use std::arch::x86_64::{_mm256_setzero_pd, _mm256_stream_pd};
    let n = out.len();
    let p = out.as_mut_ptr().cast::<c64>();
    let mut t = 0;
    let at = |k: usize, t: &mut usize| next_entry(rows, vals, t, k);
    let mut k = 0;
    if n > 0 && out.as_ptr().cast::<u8>().align_offset(32) != 0 {
        // SAFETY: slot 0 exists and is on a 16-byte boundary (the caller's contract).
        unsafe { put_value(p, at(0, &mut t)) };
        k = 1;
    }
    let zero = _mm256_setzero_pd();
    loop {
        let next = rows.get(t).copied().unwrap_or(n);
        // Zero units up to the next entry's, two lines a step: with one store a step, the
        // loop's speed hung on where it fell in the code (30 against 21 ms for the same
        // 10⁴ × 10⁴ conversion, the loop across a 64-byte boundary of the code or not).
        while k + 8 <= next {
            // SAFETY: slots k .. k + 8 exist (k + 8 ≤ next ≤ n) and start on a 32-byte
            // boundary (after the peel above every store moves 32 bytes); the CPU has AVX (the
            // caller's contract).
            unsafe {
                let at = p.add(k).cast::<f64>();
                _mm256_stream_pd(at, zero);
                _mm256_stream_pd(at.add(4), zero);
                _mm256_stream_pd(at.add(8), zero);
                _mm256_stream_pd(at.add(12), zero);
            }
            k += 8;
        }
        while k + 2 <= next {
            // SAFETY: as above, for slots k and k + 1 (k + 2 ≤ next ≤ n).
            unsafe { _mm256_stream_pd(p.add(k).cast::<f64>(), zero) };
            k += 2;
        }
        if k + 2 > n {
            break;
        }
        // The unit [k, k + 2) holds the next entry (k + 2 > next, and next ≥ k).
        let (a, b) = (at(k, &mut t), at(k + 1, &mut t));
        // SAFETY: as above, for slots k and k + 1 (k + 2 ≤ n).
        unsafe { put_pair(p.add(k), a, b) };
        k += 2;
    }
    if k < n {
        // SAFETY: slot k exists and is on a 32-byte boundary (where the loop left off).
        unsafe { put_value(p.add(k), at(k, &mut t)) };
    }
}

/// `out[k] = g(k)` for every slot, in order: on x86-64 with AVX2, two slots per 32-byte
/// non-temporal store (`vmovntpd`; a first slot on its own, by a 16-byte one, when `out`
/// starts between two 32-byte boundaries, and a last odd one likewise); without AVX2, one slot
/// per 16-byte one (`movntpd`); plain writes when `out` is not on a 16-byte boundary or
/// elsewhere. The AVX store is not only wider: inside
/// the AVX2 kernels a legacy-encoded SSE store would mix the two encodings, which Intel cores
/// make pay for while the upper halves of the registers are in use.
#[inline(always)]
fn fill(out: &mut [MaybeUninit<c64>], mut g: impl FnMut(usize) -> c64) {
    #[cfg(target_arch = "x86_64")]
    if out.as_ptr().cast::<u8>().align_offset(16) == 0 {
        if super::avx2() {
            // SAFETY: the CPU has AVX2, so AVX (checked just above, by the module's one
            // detection); `out` starts on a 16-byte boundary.
            unsafe { fill_avx(out, g) };
        } else {
            // SAFETY: `out` starts on a 16-byte boundary.
            unsafe { fill_sse(out, g) };
        }
        return;
    }
    for (k, o) in out.iter_mut().enumerate() {
        o.write(g(k));
    }
}

/// The SSE2 instance of [`fill`].
///
/// # Safety
/// `out` starts on a 16-byte boundary.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn fill_sse(out: &mut [MaybeUninit<c64>], mut g: impl FnMut(usize) -> c64) {
    use std::arch::x86_64::{_mm_set_pd, _mm_stream_pd};
    for (k, o) in out.iter_mut().enumerate() {
        let v = g(k);
        // SAFETY: `o` is 16 writable bytes on a 16-byte boundary (the slice's start is, the
        // caller's contract, and slots are 16 bytes apart); SSE2 is part of x86-64; `c64` is
        // `repr(C)` (re, im), the lane order `_mm_set_pd` gives (high, low).
        unsafe { _mm_stream_pd(o.as_mut_ptr().cast::<f64>(), _mm_set_pd(v.im, v.re)) };
    }
}

/// The AVX instance of [`fill`].
///
/// # Safety
/// The CPU has AVX; `out` starts on a 16-byte boundary.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn fill_avx(out: &mut [MaybeUninit<c64>], mut g: impl FnMut(usize) -> c64) {
    let n = out.len();
    let p = out.as_mut_ptr();
    let mut k = 0;
    if n > 0 && out.as_ptr().cast::<u8>().align_offset(32) != 0 {
        // 16 bytes past a 32-byte boundary (the caller's contract): one slot reaches it.
        // SAFETY: slot 0 exists (n > 0) and is on a 16-byte boundary (the caller's contract).
        unsafe { put_value(p.cast::<c64>(), g(0)) };
        k = 1;
    }
    while k + 2 <= n {
        let (a, b) = (g(k), g(k + 1));
        // SAFETY: slots k and k + 1 exist (k + 2 ≤ n) and start on a 32-byte boundary (the
        // first did after the peel above; each step moves 32 bytes); the CPU has AVX (the
        // caller's contract).
        unsafe { put_pair(p.add(k).cast::<c64>(), a, b) };
        k += 2;
    }
    if k < n {
        // SAFETY: slot k exists (k < n) and is on a 16-byte boundary (a 32-byte one, where
        // the loop above left off).
        unsafe { put_value(p.add(k).cast::<c64>(), g(k)) };
    }
}

/// `p[0] = a` and `p[1] = b` through one 32-byte non-temporal store (`vmovntpd`).
///
/// # Safety
/// The CPU has AVX; `p` is valid for writes of two `c64` and on a 32-byte boundary.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx")]
unsafe fn put_pair(p: *mut c64, a: c64, b: c64) {
    use std::arch::x86_64::{_mm256_setr_pd, _mm256_stream_pd};
    // SAFETY: 32 writable bytes on a 32-byte boundary at p (the caller's contract); `c64` is
    // `repr(C)` (re, im), the order of the lanes.
    unsafe { _mm256_stream_pd(p.cast::<f64>(), _mm256_setr_pd(a.re, a.im, b.re, b.im)) };
}

/// `*p = j` through a non-temporal store (`movnti`), for a result written in order, one
/// entry at a time (the column indices of a large Csr·Csr product); a plain write elsewhere
/// than x86-64. Call [`fence`] after the last of a result's streaming writes.
///
/// # Safety
/// `p` is valid for a write of one `usize` and aligned for it.
#[inline(always)]
pub(crate) unsafe fn put_index(p: *mut usize, j: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of x86-64; `p` is valid and 8-byte aligned (the caller's
    // contract), and `usize` is 64 bits there.
    unsafe {
        std::arch::x86_64::_mm_stream_si64(p.cast::<i64>(), j as i64);
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's contract.
    unsafe {
        p.write(j);
    }
}

/// `*p = v` through a 16-byte non-temporal store (`movntpd`, VEX-encoded when inlined into
/// an AVX2 kernel), as [`put_index`]; a plain write elsewhere than x86-64.
///
/// # Safety
/// `p` is valid for a write of one `c64` and on a 16-byte boundary.
#[inline(always)]
pub(crate) unsafe fn put_value(p: *mut c64, v: c64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of x86-64; `p` is valid and 16-byte aligned (the caller's
    // contract); `c64` is `repr(C)` (re, im), the order of the lanes.
    unsafe {
        use std::arch::x86_64::{_mm_setr_pd, _mm_stream_pd};
        _mm_stream_pd(p.cast::<f64>(), _mm_setr_pd(v.re, v.im));
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's contract.
    unsafe {
        p.write(v);
    }
}

/// Orders this thread's non-temporal stores before its later stores, so that a result written
/// with them is complete for any thread that is handed it afterwards (the hand-off's release
/// does not order them by itself).
#[inline]
pub(crate) fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of x86-64; the fence has no other precondition.
    unsafe {
        std::arch::x86_64::_mm_sfence();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: usize) -> Vec<c64> {
        (0..n)
            .map(|k| c64::new(k as f64 * 0.5 - 3.0, -(k as f64) / 7.0))
            .collect()
    }

    /// Every path writes every slot with the value asked for: outputs starting on a 32-byte
    /// boundary, 16 bytes past one (the AVX path's first slot written by a 16-byte store) and
    /// 8 bytes past one (no 16-byte boundary: plain writes); odd and even lengths; the AVX and
    /// SSE2 instances called directly as well as through `map`, `zip` and `sparse` (and `map`
    /// and `sparse` as a CPU without AVX2 runs them).
    #[test]
    fn every_path_writes_every_slot() {
        let (x, y) = (sample(37), sample(41));
        let mut raw = vec![MaybeUninit::<f64>::uninit(); 2 * 40 + 8];
        // The first f64 slot of `raw` on a 32-byte boundary (f64 slots are 8 bytes apart).
        let aligned = raw.as_ptr().cast::<u8>().align_offset(32) / 8;
        for skip in [0, 2, 1] {
            for len in [0, 1, 2, 36, 37] {
                let base = raw[aligned + skip..]
                    .as_mut_ptr()
                    .cast::<MaybeUninit<c64>>();
                // SAFETY: `len` ≤ 37 c64 slots (74 f64) fit after aligned + skip ≤ 3 + 2 in
                // the 88 f64 of `raw`; MaybeUninit<c64> needs 8-byte alignment, which every
                // f64 slot has.
                let out = unsafe { std::slice::from_raw_parts_mut(base, len) };
                let check = |out: &[MaybeUninit<c64>], f: &dyn Fn(usize) -> c64| {
                    fence();
                    for (k, o) in out.iter().enumerate() {
                        // SAFETY: every slot was written by the call under test.
                        assert_eq!(unsafe { o.assume_init() }, f(k), "skip {skip}, len {len}");
                    }
                };
                map(out, &x, |v| v.conj());
                check(out, &|k| x[k].conj());
                zip(out, &x, &y, |a, b| a - b);
                check(out, &|k| x[k] - y[k]);
                // The path a CPU without AVX2 takes.
                crate::simd::baseline(|| map(out, &x, |v| -v));
                check(out, &|k| -x[k]);
                // Entries at the first and last slots, side by side, and apart; none.
                let rows: Vec<usize> = [0, 1, 2, 5, 8, 9, 20, len.saturating_sub(1)]
                    .into_iter()
                    .filter(|&r| r < len)
                    .fold(vec![], |mut v, r| {
                        if v.last().is_none_or(|&l| l < r) {
                            v.push(r);
                        }
                        v
                    });
                for rows in [&rows[..], &[]] {
                    let at = |k: usize| rows.iter().position(|&r| r == k);
                    // SAFETY: `rows` increases strictly and stays below `len`; `y` is longer.
                    unsafe { sparse(out, rows, &y) };
                    check(out, &|k| at(k).map_or(crate::scalar::ZERO, |t| y[t]));
                    crate::simd::baseline(|| {
                        // SAFETY: as above.
                        unsafe { sparse(out, rows, &y) }
                    });
                    check(out, &|k| at(k).map_or(crate::scalar::ZERO, |t| y[t]));
                }
                #[cfg(target_arch = "x86_64")]
                if skip != 1 {
                    // SAFETY: `out` starts on a 16-byte boundary (skip 0 or 2 f64 past a
                    // 32-byte one).
                    unsafe { fill_sse(out, |k| x[k] * y[k]) };
                    check(out, &|k| x[k] * y[k]);
                    if std::arch::is_x86_feature_detected!("avx") {
                        // SAFETY: as above, and the CPU has AVX.
                        unsafe { fill_avx(out, |k| x[k] + y[k]) };
                        check(out, &|k| x[k] + y[k]);
                    }
                }
            }
        }
    }
}
