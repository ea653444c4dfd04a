//! `out = s·x` and `out = x + s·y` over a column: the complex scalings of `mul` and of `add`
//! with a scale (`sub`), bit for bit the scalar arithmetic.
//!
//! The compiler's own vectorisation of `s * x` over `Complex<f64>` spent most of its
//! instructions on shuffles (13 per entry for a 10 × 10 `mul`); these are one multiply, one
//! multiply of the swapped pair and one `addsub` per two entries.

use std::mem::MaybeUninit;

use crate::scalar::c64;

/// `out[k] = s·x[k]` for every `k` below both lengths. Each part is the same two products and
/// one sum or difference as `Complex`'s `*` (no fused multiply-add), so the result is the
/// scalar one to the bit.
#[inline(always)]
pub(crate) fn scale_into(out: &mut [MaybeUninit<c64>], s: c64, x: &[c64]) {
    #[cfg(target_arch = "x86_64")]
    if super::avx2() {
        // SAFETY: the CPU has AVX2 and FMA, the features the kernel is compiled for.
        return unsafe { avx::scale_into(out, s, x) };
    }
    for (o, v) in out.iter_mut().zip(x) {
        o.write(s * v);
    }
}

/// `out[k] = x[k] + s·y[k]` for every `k` below the three lengths, the product as in
/// [`scale_into`] and then the sum: the scalar `x + s * y` to the bit.
#[inline(always)]
pub(crate) fn add_scaled_into(out: &mut [MaybeUninit<c64>], x: &[c64], s: c64, y: &[c64]) {
    #[cfg(target_arch = "x86_64")]
    if super::avx2() {
        // SAFETY: the CPU has AVX2 and FMA, the features the kernel is compiled for.
        return unsafe { avx::add_scaled_into(out, x, s, y) };
    }
    for ((o, a), b) in out.iter_mut().zip(x).zip(y) {
        o.write(a + s * b);
    }
}

/// One run of a Kronecker product: `vals[k] = s·x[k]` (as [`scale_into`], bit for bit the
/// scalar product) and `cols[k] = base + idx[k]` for every `k < x.len()`, on the AVX2 path.
///
/// Meant to be inlined into a caller compiled for the same features (the Csr Kronecker fill),
/// so that a short run costs no call.
///
/// # Safety
/// The CPU has AVX2 and FMA; `vals` and `cols` are valid for `x.len()` writes and do not
/// overlap `x` or `idx`; `idx.len() >= x.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
pub(crate) unsafe fn scale_run(
    vals: *mut c64,
    cols: *mut usize,
    s: c64,
    x: &[c64],
    idx: &[usize],
    base: usize,
) {
    use std::arch::x86_64::*;
    let n = x.len();
    debug_assert!(idx.len() >= n);
    let (px, pi) = (x.as_ptr().cast::<f64>(), idx.as_ptr());
    let (sr, si) = (_mm256_set1_pd(s.re), _mm256_set1_pd(s.im));
    // `usize` is 64 bits on x86-64; the sum wraps as `usize` addition would not, but the
    // caller's columns are below the result's column count, which fits in `usize`.
    let vb = _mm_set1_epi64x(base as i64);
    let mut k = 0;
    while k + 2 <= n {
        // SAFETY: entries k..k + 2 exist in `x` and `idx` and may be written in `vals` and
        // `cols` (the caller's contract); `Complex<f64>` is two packed doubles; unaligned
        // accesses.
        unsafe {
            let r = avx::product(sr, si, _mm256_loadu_pd(px.add(2 * k)));
            _mm256_storeu_pd(vals.add(k).cast::<f64>(), r);
            let c = _mm_loadu_si128(pi.add(k).cast::<__m128i>());
            _mm_storeu_si128(cols.add(k).cast::<__m128i>(), _mm_add_epi64(c, vb));
        }
        k += 2;
    }
    if k < n {
        // SAFETY: as above, for the last entry.
        unsafe {
            vals.add(k).write(s * *x.get_unchecked(k));
            cols.add(k).write(base + *idx.get_unchecked(k));
        }
    }
}

/// `acc[k] += s·y[k]` for every `k < y.len()`, on the AVX2 path: bit for bit the scalar
/// `*acc += s * y` (the product as [`scale_into`]'s, then the sum). For contiguous runs of
/// columns in a sparse accumulation (a Csr·Csr row of b whose columns are consecutive).
///
/// # Safety
/// The CPU has AVX2 and FMA; `acc` is valid for reads and writes of `y.len()` elements and
/// does not overlap `y`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
pub(crate) unsafe fn add_scaled_run(acc: *mut c64, s: c64, y: &[c64]) {
    use std::arch::x86_64::*;
    let n = y.len();
    let (py, pa) = (y.as_ptr().cast::<f64>(), acc.cast::<f64>());
    let (sr, si) = (_mm256_set1_pd(s.re), _mm256_set1_pd(s.im));
    let mut k = 0;
    while k + 2 <= n {
        // SAFETY: entries k..k + 2 exist in `y` and `acc` (the caller's contract); unaligned.
        unsafe {
            let sv = avx::product(sr, si, _mm256_loadu_pd(py.add(2 * k)));
            _mm256_storeu_pd(
                pa.add(2 * k),
                _mm256_add_pd(_mm256_loadu_pd(pa.add(2 * k)), sv),
            );
        }
        k += 2;
    }
    if k < n {
        // SAFETY: as above, for the last entry.
        unsafe { *acc.add(k) += s * *y.get_unchecked(k) };
    }
}

/// One block of a Csr Kronecker product (row i of a with row k of b): for each entry x of a's
/// row, the run `vals[x·L + y] = rv[x]·bv[y]`, `cols[x·L + y] = ra[x]·nb + bi[y]` with
/// `L = bv.len()`; every product bit for bit the scalar one.
///
/// Rows of b of 2, 3 or 4 entries (banded factors, the common case) keep b's values, their
/// swapped halves and columns in registers across the block's runs, so a run is two
/// broadcasts, two or four multiplies, one or two `addsub`s and the stores, with no per-run
/// loop; other rows take [`scale_run`] per run. A block of a row of a of 2 or 3 entries and a
/// row of b of 2 or 3 (tridiagonal factors) runs an instance unrolled for those lengths, with
/// neither a loop over the runs nor a test of their length: the fill of two 10 × 10
/// tridiagonal factors 12 146 → 10 521 instructions (specialised on b's row alone, with a's
/// loop kept, it had cost 5 % more).
///
/// # Safety
/// The CPU has AVX2 and FMA; `vals` and `cols` are valid for `ra.len()·bv.len()` writes and
/// do not overlap the inputs; `rv.len() == ra.len()`, `bi.len() == bv.len()`, and every
/// `ra[x]·nb + bi[y]` fits in `usize`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
pub(crate) unsafe fn kron_block(
    vals: *mut c64,
    cols: *mut usize,
    nb: usize,
    ra: &[usize],
    rv: &[c64],
    bi: &[usize],
    bv: &[c64],
) {
    let l = bv.len();
    debug_assert!(rv.len() == ra.len() && bi.len() == l);
    if !(2..=4).contains(&l) {
        for (x, (&ca, &va)) in ra.iter().zip(rv).enumerate() {
            // SAFETY: run x lies at x·l..(x + 1)·l inside the block (the caller's contract).
            unsafe { scale_run(vals.add(x * l), cols.add(x * l), va, bv, bi, ca * nb) };
        }
        return;
    }
    // SAFETY: the caller's contract, and l = LB in each arm; a row of a of 2 or 3 entries
    // (banded factors) takes an instance whose runs are unrolled, without a loop or a test of
    // the run's length (LA = 0: any length of a's row).
    unsafe {
        match (ra.len(), l) {
            (2, 2) => kron_runs::<2, 2>(vals, cols, nb, ra, rv, bi, bv),
            (2, 3) => kron_runs::<2, 3>(vals, cols, nb, ra, rv, bi, bv),
            (3, 2) => kron_runs::<3, 2>(vals, cols, nb, ra, rv, bi, bv),
            (3, 3) => kron_runs::<3, 3>(vals, cols, nb, ra, rv, bi, bv),
            (_, 2) => kron_runs::<0, 2>(vals, cols, nb, ra, rv, bi, bv),
            (_, 3) => kron_runs::<0, 3>(vals, cols, nb, ra, rv, bi, bv),
            _ => kron_runs::<0, 4>(vals, cols, nb, ra, rv, bi, bv),
        }
    }
}

/// The runs of [`kron_block`] for a row of b of `LB` (2 to 4) entries and a row of a of `LA`
/// entries (`LA = 0`: as many as `ra` has).
///
/// # Safety
/// As [`kron_block`], with `bv.len() == LB` and, for `LA > 0`, `ra.len() == LA`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn kron_runs<const LA: usize, const LB: usize>(
    vals: *mut c64,
    cols: *mut usize,
    nb: usize,
    ra: &[usize],
    rv: &[c64],
    bi: &[usize],
    bv: &[c64],
) {
    use std::arch::x86_64::*;
    debug_assert!(bv.len() == LB && (LA == 0 || ra.len() == LA) && rv.len() == ra.len());
    let (pv, pi) = (bv.as_ptr().cast::<f64>(), bi.as_ptr());
    // SAFETY: b's row has LB ≥ 2 entries, so its first two load as one vector.
    let (v0, c0) = unsafe { (_mm256_loadu_pd(pv), _mm_loadu_si128(pi.cast::<__m128i>())) };
    let s0 = avx::swap(v0);
    let (v1, c1) = match LB {
        // SAFETY: entries 2 and 3 exist.
        4 => unsafe {
            (
                _mm256_loadu_pd(pv.add(4)),
                _mm_loadu_si128(pi.add(2).cast()),
            )
        },
        // SAFETY: entry 2 exists; the upper halves are never stored.
        3 => unsafe {
            (
                _mm256_castpd128_pd256(_mm_loadu_pd(pv.add(4))),
                _mm_set1_epi64x(*pi.add(2) as i64),
            )
        },
        _ => (_mm256_setzero_pd(), _mm_setzero_si128()),
    };
    let s1 = avx::swap(v1);
    let runs = if LA == 0 { ra.len() } else { LA };
    let (po, pc) = (vals.cast::<f64>(), cols);
    for x in 0..runs {
        // SAFETY: x < ra.len() = rv.len() (the contract); run x's LB entries lie at
        // po + 2·x·LB / pc + x·LB inside the block; for LB = 3 only the lower halves of the
        // second product and its columns are stored.
        unsafe {
            let (ca, va) = (*ra.get_unchecked(x), *rv.get_unchecked(x));
            let (sr, si) = (_mm256_set1_pd(va.re), _mm256_set1_pd(va.im));
            // `usize` is 64 bits on x86-64; the caller's columns fit in it.
            let base = _mm_set1_epi64x((ca * nb) as i64);
            let (po, pc) = (po.add(2 * x * LB), pc.add(x * LB));
            _mm256_storeu_pd(po, avx::product_swapped(sr, si, v0, s0));
            _mm_storeu_si128(pc.cast(), _mm_add_epi64(c0, base));
            match LB {
                4 => {
                    _mm256_storeu_pd(po.add(4), avx::product_swapped(sr, si, v1, s1));
                    _mm_storeu_si128(pc.add(2).cast(), _mm_add_epi64(c1, base));
                }
                3 => {
                    let r1 = avx::product_swapped(sr, si, v1, s1);
                    _mm_storeu_pd(po.add(4), _mm256_castpd256_pd128(r1));
                    let c = _mm_add_epi64(c1, base);
                    pc.add(2).write(_mm_cvtsi128_si64(c) as usize);
                }
                _ => {}
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx {
    use std::arch::x86_64::*;
    use std::mem::MaybeUninit;

    use crate::scalar::c64;

    /// `s·v` for two packed entries, `s` given as its broadcast parts: `addsub(re s · v,
    /// im s · swap(v))`, without a fused multiply-add, so each part is the scalar product's.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    pub(super) fn product(sr: __m256d, si: __m256d, v: __m256d) -> __m256d {
        product_swapped(sr, si, v, swap(v))
    }

    /// `v` with the two parts of each entry exchanged (`[im, re]`).
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    pub(super) fn swap(v: __m256d) -> __m256d {
        _mm256_permute_pd::<0b0101>(v)
    }

    /// [`product`] with `swap(v)` given (hoisted by a caller that multiplies the same `v`
    /// by many scalars).
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    pub(super) fn product_swapped(sr: __m256d, si: __m256d, v: __m256d, sv: __m256d) -> __m256d {
        _mm256_addsub_pd(_mm256_mul_pd(sr, v), _mm256_mul_pd(si, sv))
    }

    /// `s·x` two entries at a time ([`product`]).
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn scale_into(out: &mut [MaybeUninit<c64>], s: c64, x: &[c64]) {
        let n = out.len().min(x.len());
        let (px, po) = (x.as_ptr().cast::<f64>(), out.as_mut_ptr().cast::<f64>());
        let (sr, si) = (_mm256_set1_pd(s.re), _mm256_set1_pd(s.im));
        let mut k = 0;
        while k + 2 <= n {
            // SAFETY: entries k..k + 2 exist in both slices (doubles 2k..2k + 4; `Complex<f64>`
            // is two packed doubles); `out` is borrowed exclusively; unaligned accesses.
            unsafe {
                let r = product(sr, si, _mm256_loadu_pd(px.add(2 * k)));
                _mm256_storeu_pd(po.add(2 * k), r);
            }
            k += 2;
        }
        if k < n {
            out[k].write(s * x[k]);
        }
    }

    /// `x + s·y` two entries at a time: the product of [`scale_into`], then one add.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn add_scaled_into(out: &mut [MaybeUninit<c64>], x: &[c64], s: c64, y: &[c64]) {
        let n = out.len().min(x.len()).min(y.len());
        let (px, py) = (x.as_ptr().cast::<f64>(), y.as_ptr().cast::<f64>());
        let po = out.as_mut_ptr().cast::<f64>();
        let (sr, si) = (_mm256_set1_pd(s.re), _mm256_set1_pd(s.im));
        let mut k = 0;
        while k + 2 <= n {
            // SAFETY: entries k..k + 2 exist in the three slices (doubles 2k..2k + 4); `out`
            // is borrowed exclusively; unaligned accesses.
            unsafe {
                let sv = product(sr, si, _mm256_loadu_pd(py.add(2 * k)));
                let r = _mm256_add_pd(_mm256_loadu_pd(px.add(2 * k)), sv);
                _mm256_storeu_pd(po.add(2 * k), r);
            }
            k += 2;
        }
        if k < n {
            out[k].write(x[k] + s * y[k]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both instances of both kernels give the scalar arithmetic to the bit (NaN as NaN), on
    /// odd and even lengths, signed zeros, infinities, subnormals and NaN among the values and
    /// the scale.
    #[test]
    fn scaling_is_the_scalar_product_to_the_bit() {
        let special = [
            0.0,
            -0.0,
            1.5,
            -2.25,
            f64::INFINITY,
            f64::NAN,
            1e-310,
            3e300,
        ];
        let x: Vec<c64> = (0..67)
            .map(|k| c64::new(special[k % 8], special[(k * 3 + 1) % 8] * (k as f64 + 0.5)))
            .collect();
        for s in [
            c64::new(0.5, 1.0),
            c64::new(-0.0, 2.0),
            c64::new(f64::INFINITY, -1.0),
        ] {
            for len in [0, 1, 2, 5, 66, 67] {
                for baseline in [false, true] {
                    let mut out = vec![MaybeUninit::new(c64::new(9.0, 9.0)); len];
                    if baseline {
                        crate::simd::baseline(|| scale_into(&mut out, s, &x[..len]));
                    } else {
                        scale_into(&mut out, s, &x[..len]);
                    }
                    let y = &x[67 - len..];
                    let mut sum = vec![MaybeUninit::new(c64::new(9.0, 9.0)); len];
                    if baseline {
                        crate::simd::baseline(|| add_scaled_into(&mut sum, &x[..len], s, y));
                    } else {
                        add_scaled_into(&mut sum, &x[..len], s, y);
                    }
                    for (k, v) in x[..len].iter().enumerate() {
                        // SAFETY: every element was written (initialised above, then again).
                        let got = unsafe { [out[k].assume_init(), sum[k].assume_init()] };
                        let want = [s * v, v + s * y[k]];
                        for (g, w) in got.iter().zip(&want) {
                            for (g, w) in [(g.re, w.re), (g.im, w.im)] {
                                assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()));
                            }
                        }
                    }
                }
            }
        }
    }
}
