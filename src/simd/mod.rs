//! Vector kernels on interleaved complex vectors, for the loops where the compiler's own
//! vectorisation of `Complex<f64>` falls short (conjugated dots, scaled subtractions,
//! column-major matrix–vector products, complex scalings), each with a plain-loop fallback.
//!
//! Written once against `pulp` ([`portable`]), chosen at run time: AVX2 + FMA on x86-64, NEON
//! on aarch64 — `dot`/`dot_conj`, `sub_scaled`, [`gemv_cols`], the slice scalings of
//! `scale.rs`, the column blocks of `columns.rs`, and (off x86) the Taylor term.
//! [`engine::vector_kernels`](crate::engine::vector_kernels) reports what runs where.
//!
//! Kept in `std::arch`, each with its reason beside it and a plain loop elsewhere: what pulp's
//! portable API cannot express — two-address loads of the Csr row dots, `hadd` of the Taylor
//! term, `movemask` of the zero masks ([`mask`]), non-temporal stores ([`nontemporal`]), the
//! 128-bit half stores and index vectors of the Kronecker runs — and the AVX-512 kernels
//! (small Dense products, the matrix–vector product, the zero count): pulp's AVX-512 needs
//! Rust 1.89, past the MSRV (1.88), and its intrinsics are used only from 1.89
//! (`rustversion`). Each AVX-512 kernel gives the AVX2 one's results to the bit (the same
//! operations per entry, in the same order).
//!
//! [`avx2_fn!`] is the other half: plain loops (elementwise maps, Csr row dots, Kronecker
//! runs) that the compiler vectorises well once it may use AVX2 and FMA, compiled twice and
//! chosen at run time. x86-64's baseline is SSE2; aarch64's includes NEON, so there the one
//! instance is already vectorised.

use std::mem::MaybeUninit;

use pulp::{Simd, WithSimd};

use crate::scalar::c64;

mod columns;
pub(crate) mod fill;
pub(crate) mod gemm;
mod gemv;
mod mask;
pub(crate) mod nontemporal;
mod paths;
pub(crate) mod portable;
pub(crate) mod reduce;
#[cfg(target_arch = "x86_64")]
mod runs;
mod scale;
mod taylor_term;

pub(crate) use columns::{Flip, flip_cols, scale_cols, sum_cols};
pub(crate) use gemv::gemv_cols;
pub(crate) use mask::{mask_columns, nonzero_bits, scalar_zero_count, smallest_part, zero_count};
pub(crate) use paths::kernel_paths;
#[cfg(target_arch = "x86_64")]
pub(crate) use runs::{
    SHORT_ROW, add_scaled_run, kron_block, kron_block_swapped, kron_short_rows, scale_run,
};
pub(crate) use scale::{add_scaled_assign, add_scaled_into, scale_into};
pub(crate) use taylor_term::taylor_term;

/// Whether the AVX2 + FMA kernels can run (cached by std). Every such CPU also has POPCNT,
/// which [`avx2_fn`] kernels are compiled for as well (a row's count of set bits in one
/// instruction); it is checked too.
#[inline(always)]
pub(crate) fn avx2() -> bool {
    #[cfg(test)]
    if BASELINE.get() || PORTABLE.get() {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("popcnt")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this is an Intel CPU (read once): some choices between kernels or stores that
/// give the same results were measured to go opposite ways on Intel and AMD CPUs.
pub(crate) fn intel() -> bool {
    static INTEL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *INTEL.get_or_init(cpu_is_intel)
}

/// Whether CPUID's vendor string is `GenuineIntel`.
fn cpu_is_intel() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        // Leaf 0: the vendor string in EBX, EDX, ECX.
        // SAFETY: CPUID leaf 0 exists on every x86-64 CPU and only reads identification
        // registers. (`__cpuid` is a safe function in newer toolchains, hence the `allow`.)
        #[allow(unused_unsafe)]
        let id = unsafe { std::arch::x86_64::__cpuid(0) };
        let mut vendor = [0u8; 12];
        vendor[..4].copy_from_slice(&id.ebx.to_le_bytes());
        vendor[4..8].copy_from_slice(&id.edx.to_le_bytes());
        vendor[8..].copy_from_slice(&id.ecx.to_le_bytes());
        &vendor == b"GenuineIntel"
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(test)]
thread_local! {
    /// Set by [`baseline`]: this thread runs the baseline instances.
    static BASELINE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Set by [`portable_only`]: this thread's `std::arch` kernels take their other path.
    static PORTABLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Set by [`without_avx512`]: this thread's kernels stop at AVX2.
    static NO_AVX512: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the AVX-512F kernels can run: the CPU has AVX-512F (cached by std) and the
/// compiler had its intrinsics (stable from Rust 1.89; a 1.88 build, the MSRV, has no such
/// kernels, and this is not compiled). Only where the AVX2 ones can run too.
// Asked only by the x86-64 kernels.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[rustversion::since(1.89)]
#[inline(always)]
pub(crate) fn avx512() -> bool {
    #[cfg(test)]
    if NO_AVX512.get() {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        avx2() && std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Environment variable read once, at the first small Dense product (at most 12 rows, the
/// product of each result column held in registers): `1` makes those products take their
/// AVX-512 kernel wherever the CPU has AVX-512F, `0` keeps them on AVX2. Unset (or any other
/// value), a measurement at that first use decides: AVX-512 where it is at least 5 % faster
/// on a 10 × 10 product (cores with two 512-bit FMA ports gain, Zen 4 cores lose). Results
/// are the same to the bit either way.
pub const AVX512_SMALL_PRODUCTS_ENV: &str = "POLYMAT_AVX512_SMALL_PRODUCTS";

/// Whether the small Dense products in registers ([`gemm::columns`]: Dense·Dense and
/// Dense·ket of at most 12 rows) take their AVX-512F kernel: where the CPU has AVX-512F and,
/// unless [`AVX512_SMALL_PRODUCTS_ENV`] says, where a measurement at first use finds it at
/// least 5 % faster than AVX2 on a 10 × 10 product (about 50 µs, once a process).
///
/// Whether the wider registers pay depends on the core, not on the instruction set: with two
/// 512-bit FMA ports Dense·Dense 10 × 10 was about 20 % faster with them; on Zen 4, which
/// splits a 512-bit operation into two 256-bit halves, about 15 % slower
/// (docs/benchmarks/per_operation.md). The
/// matrix–vector kernel ([`gemv_cols`]) and the Dense → Csr count kernel ([`zero_count`]) are
/// faster with AVX-512 on both and always take it.
// Asked only by the x86-64 kernels.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[rustversion::since(1.89)]
#[inline]
pub(crate) fn avx512_small_products() -> bool {
    // Tests check the AVX-512 kernels against the AVX2 ones wherever the CPU has them.
    #[cfg(test)]
    {
        avx512()
    }
    #[cfg(not(test))]
    {
        use std::sync::atomic::{AtomicU8, Ordering};
        // 0 = not decided yet, 1 = AVX2, 2 = AVX-512.
        static WIDE: AtomicU8 = AtomicU8::new(0);
        match WIDE.load(Ordering::Relaxed) {
            0 => {
                let wide = avx512() && wide_small_products_pay();
                WIDE.store(if wide { 2 } else { 1 }, Ordering::Relaxed);
                wide
            }
            w => w == 2,
        }
    }
}

/// [`avx512_small_products`]'s decision on a CPU with AVX-512F: the environment's, else the
/// measurement's.
// Asked only by the x86-64 kernels.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[cfg(not(test))]
#[rustversion::since(1.89)]
#[cold]
fn wide_small_products_pay() -> bool {
    decide_wide(
        std::env::var(AVX512_SMALL_PRODUCTS_ENV).ok().as_deref(),
        gemm::wide_pays,
    )
}

/// [`AVX512_SMALL_PRODUCTS_ENV`]'s value read: `1` yes, `0` no (spaces around ignored), anything
/// else or nothing asks `measure`.
// Asked only by the x86-64 kernels.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[rustversion::since(1.89)]
fn decide_wide(env: Option<&str>, measure: impl FnOnce() -> bool) -> bool {
    match env.map(str::trim) {
        Some("1") => true,
        Some("0") => false,
        _ => measure(),
    }
}

/// Runs `f` with the kernels that have an AVX-512 version on their AVX2 one, even where
/// AVX-512 is there (for tests: both versions are checked on one machine).
#[cfg(test)]
pub(crate) fn without_avx512<R>(f: impl FnOnce() -> R) -> R {
    with_flag(&NO_AVX512, f)
}

/// Runs `f` with the `std::arch` kernels (and [`avx2_fn!`] functions) on this thread taking
/// their other path while the [`portable`] kernels keep the CPU's vector registers: on x86-64
/// the `pulp` instance of a kernel that has both is tested against the `std::arch` one.
#[cfg(test)]
pub(crate) fn portable_only<R>(f: impl FnOnce() -> R) -> R {
    with_flag(&PORTABLE, f)
}

/// Runs `f` with every AVX2 + FMA kernel and [`avx2_fn!`] function on this thread taking its
/// baseline instance (unit tests: both instances must agree).
#[cfg(test)]
pub(crate) fn baseline<R>(f: impl FnOnce() -> R) -> R {
    with_flag(&BASELINE, f)
}

/// Runs `f` with this thread's `flag` set.
#[cfg(test)]
fn with_flag<R>(
    flag: &'static std::thread::LocalKey<std::cell::Cell<bool>>,
    f: impl FnOnce() -> R,
) -> R {
    flag.set(true);
    let r = f();
    flag.set(false);
    r
}

/// `x.conj()` as one 128-bit sign flip. Left to itself the compiler splits a conjugated value
/// into a float half and an integer half (the sign flip done as an integer xor), so a scatter
/// that conjugates (the Csr adjoint) loads and stores each entry in two pieces.
#[inline(always)]
pub(crate) fn conj(x: c64) -> c64 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_set_pd, _mm_storeu_pd, _mm_xor_pd};
        // SAFETY: SSE2 is part of x86-64. `c64` is `repr(C)` (re, im): two f64 in that order,
        // so the unaligned 16-byte load and store read and write exactly its two parts.
        unsafe {
            let v = std::arch::x86_64::_mm_loadu_pd(std::ptr::from_ref(&x).cast::<f64>());
            let flipped = _mm_xor_pd(v, _mm_set_pd(-0.0, 0.0));
            let mut out = x;
            _mm_storeu_pd(std::ptr::from_mut(&mut out).cast::<f64>(), flipped);
            out
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        x.conj()
    }
}

/// Defines a function whose body is compiled twice, for AVX2 + FMA (and POPCNT) and as the
/// crate is compiled, the instance chosen at run time when the function is called.
///
/// The body goes into an `#[inline(always)]` function called from a `#[target_feature]` one,
/// so it is compiled with the features — and so are the small closures it calls (the `f` of
/// an elementwise map). A wrapper that takes a closure cannot do this: a closure's body is
/// compiled on its own, without the features, whoever calls it (measured: `mul` of a Dense
/// 100×100 ran 1.6× slower through `pulp::V3::vectorize` than through this macro). Arguments
/// are plain `name: Type` pairs (`impl Trait` for generic ones).
///
/// The function is `#[inline]`; written first, `#[inline(never)]` replaces that (a kernel's
/// rare branch kept out of its caller's body, whose register allocation it would disturb).
macro_rules! avx2_fn {
    (#[inline(never)] $($rest:tt)*) => {
        $crate::simd::avx2_fn!(@emit [#[inline(never)]] $($rest)*);
    };
    (
        @emit [$($inline:tt)*]
        $(#[$meta:meta])*
        $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block
    ) => {
        $(#[$meta])*
        $($inline)*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            if $crate::simd::avx2() {
                #[target_feature(enable = "avx2,fma,popcnt")]
                fn v3($($arg: $ty),*) $(-> $ret)? {
                    body($($arg),*)
                }
                // SAFETY: the CPU has AVX2, FMA and POPCNT (checked just above), the features
                // `v3` is compiled for.
                return unsafe { v3($($arg),*) };
            }
            body($($arg),*)
        }
    };
    ($($rest:tt)*) => {
        $crate::simd::avx2_fn!(@emit [#[inline]] $($rest)*);
    };
}
pub(crate) use avx2_fn;

/// The AVX2 + FMA sparse row dots on interleaved `[re, im]` doubles. Kept in `std::arch`: each
/// register is loaded from two addresses (`_mm256_loadu2_m128d`, one entry of `x` a half), which
/// pulp's portable API cannot express; elsewhere the plain loop of [`csr_row_dots`] runs (on
/// aarch64 one complex entry fills a NEON register, and the compiler uses it there).
#[cfg(target_arch = "x86_64")]
mod avx {
    use std::arch::x86_64::*;
    use std::mem::MaybeUninit;

    use crate::scalar::c64;

    /// Sparse row dots: for each row `i` of `rows`, `outs[t][i − rows.start] = Σₖ
    /// val[k]·xₜ[idx[k]]` over the row's entries `p[i]..p[i + 1]`. Entries go in pairs, one
    /// per 128-bit lane: two FMAs per entry and column, `Σ re(v)·x` and `Σ im(v)·swap(x)` kept
    /// apart and combined once per row (`addsub`); an odd row's last entry goes into the two
    /// lanes' sum. Each pair of values is loaded once for the `T` columns.
    ///
    /// # Safety
    /// For every row `i` of `rows`: `i + 1 < p.len()`, `p[i] ≤ p[i + 1] ≤ min(idx.len(),
    /// val.len())`, and every `idx[k]` with `k` in `p[i]..p[i + 1]` is below every `xₜ.len()`.
    /// The `outs` are indexed with bounds checks.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn csr_row_dots<const T: usize>(
        p: &[usize],
        idx: &[usize],
        val: &[c64],
        xs: [&[c64]; T],
        rows: std::ops::Range<usize>,
        outs: &mut [&mut [MaybeUninit<c64>]; T],
    ) {
        let pv = val.as_ptr().cast::<f64>();
        let mut px = [std::ptr::null::<f64>(); T];
        for (p, x) in px.iter_mut().zip(xs) {
            *p = x.as_ptr().cast::<f64>();
        }
        let r0 = rows.start;
        for i in rows {
            // SAFETY: i + 1 < p.len() for every row of `rows` (this function's contract).
            let (lo, hi) = unsafe { (*p.get_unchecked(i), *p.get_unchecked(i + 1)) };
            let mut re = [_mm256_setzero_pd(); T];
            let mut im = [_mm256_setzero_pd(); T];
            let mut k = lo;
            while k + 2 <= hi {
                // SAFETY: k + 1 < hi, within the row, whose entries and columns are within
                // the slices (the contract above); unaligned loads.
                unsafe {
                    let v = _mm256_loadu_pd(pv.add(2 * k));
                    let (vr, vi) = (_mm256_movedup_pd(v), _mm256_permute_pd::<0b1111>(v));
                    let (c0, c1) = (*idx.get_unchecked(k), *idx.get_unchecked(k + 1));
                    for t in 0..T {
                        let x = _mm256_loadu2_m128d(px[t].add(2 * c1), px[t].add(2 * c0));
                        re[t] = _mm256_fmadd_pd(vr, x, re[t]);
                        im[t] = _mm256_fmadd_pd(vi, _mm256_permute_pd::<0b0101>(x), im[t]);
                    }
                }
                k += 2;
            }
            // Plain loops rather than `array::map`/`from_fn`: those are functions of their
            // own, compiled without AVX2 and not inlined here.
            let mut halves = [(_mm_setzero_pd(), _mm_setzero_pd()); T];
            for (h, (r, i)) in halves.iter_mut().zip(re.iter().zip(&im)) {
                let half = |s: __m256d| {
                    _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd::<1>(s))
                };
                *h = (half(*r), half(*i));
            }
            if k < hi {
                // SAFETY: k < hi, the row's last entry.
                unsafe {
                    let v = _mm_loadu_pd(pv.add(2 * k));
                    let (vr, vi) = (_mm_movedup_pd(v), _mm_permute_pd::<0b11>(v));
                    let c = *idx.get_unchecked(k);
                    for (t, (r, i)) in halves.iter_mut().enumerate() {
                        let x = _mm_loadu_pd(px[t].add(2 * c));
                        *r = _mm_fmadd_pd(vr, x, *r);
                        *i = _mm_fmadd_pd(vi, _mm_permute_pd::<0b01>(x), *i);
                    }
                }
            }
            for (out, &(r, im)) in outs.iter_mut().zip(&halves) {
                let s = _mm_addsub_pd(r, im);
                // The row's slot: `outs[t]` holds rows `rows.start..` (the caller's contract).
                out[i - r0].write(c64::new(
                    _mm_cvtsd_f64(s),
                    _mm_cvtsd_f64(_mm_unpackhi_pd(s, s)),
                ));
            }
        }
    }
}

/// `v†·w`.
#[inline(always)]
pub(crate) fn dot_conj(v: &[c64], w: &[c64]) -> c64 {
    dot_of::<true>(v, w)
}

/// `vᵀ·w`, without conjugation (a bra times a ket).
#[inline(always)]
pub(crate) fn dot(v: &[c64], w: &[c64]) -> c64 {
    dot_of::<false>(v, w)
}

/// `v†·w` (`CONJ`) or `vᵀ·w`.
#[inline(always)]
fn dot_of<const CONJ: bool>(v: &[c64], w: &[c64]) -> c64 {
    portable::dispatch(Dot::<CONJ> { v, w })
}

/// `v†·w` (`CONJ`) or `vᵀ·w`, two registers a step: `re += v·w` lane by lane, `im +=
/// v·swap(w)`. For `v†·w` the real part is the sum of `re`'s lanes and the imaginary part
/// `im`'s even minus odd lanes; for `vᵀ·w` it is the other way round.
struct Dot<'a, const CONJ: bool> {
    v: &'a [c64],
    w: &'a [c64],
}

impl<const CONJ: bool> WithSimd for Dot<'_, CONJ> {
    type Output = c64;

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) -> c64 {
        let n = self.v.len().min(self.w.len());
        let (v, w) = (&self.v[..n], &self.w[..n]);
        let one = |x: &c64, y: &c64| if CONJ { x.conj() } else { *x } * y;
        if !portable::vector::<S>() {
            return v.iter().zip(w).map(|(x, y)| one(x, y)).sum();
        }
        let (vh, _) = S::as_simd_c64s(v);
        let (wh, _) = S::as_simd_c64s(w);
        let zero = simd.splat_f64s(0.0);
        let (mut re0, mut re1, mut im0, mut im1) = (zero, zero, zero, zero);
        let (vp, wp) = (vh.chunks_exact(2), wh.chunks_exact(2));
        let k = vp.len() * 2 * S::C64_LANES;
        for (x, y) in vp.zip(wp) {
            let (x0, x1) = (portable::f64s::<S>(x[0]), portable::f64s::<S>(x[1]));
            let (y0, y1) = (portable::f64s::<S>(y[0]), portable::f64s::<S>(y[1]));
            re0 = simd.mul_add_f64s(x0, y0, re0);
            re1 = simd.mul_add_f64s(x1, y1, re1);
            im0 = simd.mul_add_f64s(x0, portable::swap(simd, y0), im0);
            im1 = simd.mul_add_f64s(x1, portable::swap(simd, y1), im1);
        }
        let (re, im) = (simd.add_f64s(re0, re1), simd.add_f64s(im0, im1));
        let (re, im) = (portable::lanes::<S>(&re), portable::lanes::<S>(&im));
        // Lanes alternate real and imaginary parts: even lanes count +, odd lanes −.
        let alternating = |l: &[f64]| {
            l.iter()
                .enumerate()
                .skip(1)
                .fold(l[0], |a, (i, x)| if i % 2 == 0 { a + x } else { a - x })
        };
        let mut s = if CONJ {
            c64::new(re.iter().sum(), alternating(im))
        } else {
            c64::new(alternating(re), im.iter().sum())
        };
        for (x, y) in v[k..].iter().zip(&w[k..]) {
            s += one(x, y);
        }
        s
    }
}

/// `w ← w − c·v`.
#[inline(always)]
pub(crate) fn sub_scaled(w: &mut [c64], c: c64, v: &[c64]) {
    portable::dispatch(SubScaled { w, c, v });
}

/// `w ← w − c·v`, with `c·v = re c · v + (∓im c)·swap(v)`, one rounding (x86's
/// `fmaddsub(re c, v, im c · swap(v))`).
struct SubScaled<'a> {
    w: &'a mut [c64],
    c: c64,
    v: &'a [c64],
}

impl WithSimd for SubScaled<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let SubScaled { w, c, v } = self;
        let n = v.len().min(w.len());
        let (w, v) = (&mut w[..n], &v[..n]);
        if !portable::vector::<S>() {
            for (y, x) in w.iter_mut().zip(v) {
                *y -= c * x;
            }
            return;
        }
        let (cr, ci) = (simd.splat_f64s(c.re), portable::signed_im(simd, c.im));
        let (wh, wt) = S::as_mut_simd_c64s(w);
        let (vh, vt) = S::as_simd_c64s(v);
        for (y, x) in wh.iter_mut().zip(vh) {
            let x = portable::f64s::<S>(*x);
            let sx = simd.mul_f64s(ci, portable::swap(simd, x));
            let cx = simd.mul_add_f64s(cr, x, sx);
            *y = portable::c64s::<S>(simd.sub_f64s(portable::f64s::<S>(*y), cx));
        }
        for (y, x) in wt.iter_mut().zip(vt) {
            *y -= c * x;
        }
    }
}

/// Sparse row dots of a Csr's arrays against `T` columns: for each row `i` of `rows`,
/// `outs[t][i − rows.start] = Σₖ val[k]·xₜ[idx[k]]` over its entries `p[i]..p[i + 1]`. Each
/// stored entry is loaded once for the `T` columns, and a column's sums do not depend on `T`
/// (the same arithmetic per column), so a product's column does not depend on how columns are
/// grouped. AVX2 + FMA: entries in pairs, two FMAs per entry and column; baseline: even and
/// odd entries in two sums (two independent addition chains). The two instances round
/// differently (FMA).
///
/// # Safety
/// For every row `i` of `rows`: `i + 1 < p.len()`, `p[i] ≤ p[i + 1] ≤ min(idx.len(),
/// val.len())`, and every `idx[k]` with `k` in `p[i]..p[i + 1]` is below every `xₜ.len()` (a
/// `Csr`'s invariants, with columns as long as its column count).
///
/// # Panics
/// If an `outs[t]` is shorter than `rows` (a caller's bug, caught by the bounds checks).
#[inline(always)]
pub(crate) unsafe fn csr_row_dots<const T: usize>(
    p: &[usize],
    idx: &[usize],
    val: &[c64],
    xs: [&[c64]; T],
    rows: std::ops::Range<usize>,
    outs: &mut [&mut [MaybeUninit<c64>]; T],
) {
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: the CPU has AVX2 and FMA, the features the kernel is compiled for; the
        // slices' contract is this function's.
        return unsafe { avx::csr_row_dots(p, idx, val, xs, rows, outs) };
    }
    let r0 = rows.start;
    for i in rows {
        let (v, c) = (&val[p[i]..p[i + 1]], &idx[p[i]..p[i + 1]]);
        let (mut even, mut odd) = ([c64::new(0.0, 0.0); T], [c64::new(0.0, 0.0); T]);
        let (v2, c2) = (v.chunks_exact(2), c.chunks_exact(2));
        let (vr, cr) = (v2.remainder(), c2.remainder());
        for (v, c) in v2.zip(c2) {
            for t in 0..T {
                // SAFETY: c[0], c[1] are the row's columns, below xs[t].len() (the contract).
                unsafe {
                    even[t] += v[0] * xs[t].get_unchecked(c[0]);
                    odd[t] += v[1] * xs[t].get_unchecked(c[1]);
                }
            }
        }
        for (v, &c) in vr.iter().zip(cr) {
            for t in 0..T {
                // SAFETY: as above.
                even[t] += v * unsafe { xs[t].get_unchecked(c) };
            }
        }
        for t in 0..T {
            outs[t][i - r0].write(even[t] + odd[t]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `POLYMAT_AVX512_SMALL_PRODUCTS`: `1` and `0` decide without a measurement; anything else
    /// measures.
    #[rustversion::since(1.89)]
    #[test]
    fn the_environment_decides_the_product_width_before_a_measurement() {
        let never = || -> bool { panic!("measured although the environment decided") };
        assert!(decide_wide(Some("1"), never));
        assert!(decide_wide(Some(" 1\n"), never));
        assert!(!decide_wide(Some("0"), never));
        for other in [None, Some(""), Some("yes"), Some("2")] {
            assert!(decide_wide(other, || true), "{other:?}");
            assert!(!decide_wide(other, || false), "{other:?}");
        }
    }

    /// The 128-bit sign flip is bit for bit `Complex::conj`, signed zeros, infinities and NaN
    /// included.
    #[test]
    fn conj_is_complex_conj_bitwise() {
        let parts = [
            0.0,
            -0.0,
            1.5,
            -2.25,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e-310,
        ];
        for &re in &parts {
            for &im in &parts {
                let (x, want) = (c64::new(re, im), c64::new(re, im).conj());
                let got = conj(x);
                assert_eq!(
                    (got.re.to_bits(), got.im.to_bits()),
                    (want.re.to_bits(), want.im.to_bits()),
                    "{x}"
                );
            }
        }
    }

    fn val(i: usize, j: usize) -> c64 {
        c64::new(
            (i * 7 + j * 3) as f64 % 11.0 - 5.0,
            (i + 2 * j) as f64 % 5.0 - 2.0,
        )
    }

    #[test]
    fn gemv_cols_matches_naive_loops() {
        // Column counts through the four-column passes and the single columns; row counts
        // through the four-row, two-row and scalar tails.
        for m in [0, 1, 2, 3, 5, 6, 7, 2047, 2048, 2049, 4101] {
            for k in [0, 1, 3, 4, 5, 8, 9, 13, 23] {
                let cols: Vec<Vec<c64>> = (0..k)
                    .map(|j| (0..m).map(|i| val(i, j)).collect())
                    .collect();
                let refs: Vec<&[c64]> = cols.iter().map(Vec::as_slice).collect();
                let x: Vec<c64> = (0..k).map(|j| val(j + 1, 2 * j)).collect();
                let mut y: Vec<c64> = (0..m).map(|i| val(i, 100)).collect();
                let want: Vec<c64> = (0..m)
                    .map(|i| y[i] + (0..k).map(|j| cols[j][i] * x[j]).sum::<c64>())
                    .collect();
                gemv_cols(&mut y, &refs, &x);
                for i in 0..m {
                    assert!((y[i] - want[i]).norm() < 1e-9, "m={m} k={k} i={i}");
                }
            }
        }
    }

    /// The AVX-512 kernel (where the CPU has it) gives what the AVX2 kernel gives, to the bit:
    /// row counts through its eight-row steps and the AVX2 tails after them, column counts
    /// through the four-column passes and the single columns, blocks of 2 048 rows, and a
    /// matrix past 2¹⁷ entries (on Intel CPUs, where both then take the AVX2 kernel; elsewhere
    /// the AVX-512 one).
    #[test]
    fn gemv_cols_is_the_same_on_avx512_and_avx2() {
        for m in [1, 7, 8, 9, 15, 16, 17, 23, 100, 2047, 2048, 2057] {
            for k in [1, 3, 4, 5, 8, 9, 13, 70] {
                let cols: Vec<Vec<c64>> = (0..k)
                    .map(|j| (0..m + 3).map(|i| val(i, j)).collect())
                    .collect();
                let refs: Vec<&[c64]> = cols.iter().map(Vec::as_slice).collect();
                let x: Vec<c64> = (0..k).map(|j| val(j + 1, 2 * j)).collect();
                let y0: Vec<c64> = (0..m).map(|i| val(i, 100)).collect();
                let (mut wide, mut narrow) = (y0.clone(), y0);
                gemv_cols(&mut wide, &refs, &x);
                without_avx512(|| gemv_cols(&mut narrow, &refs, &x));
                for (i, (a, b)) in wide.iter().zip(&narrow).enumerate() {
                    assert_eq!(
                        (a.re.to_bits(), a.im.to_bits()),
                        (b.re.to_bits(), b.im.to_bits()),
                        "m={m} k={k} i={i}"
                    );
                }
            }
        }
    }

    #[test]
    fn dots_and_subtractions_match_naive_loops() {
        for n in [0, 1, 2, 3, 4, 5, 7, 8, 9, 13] {
            let v: Vec<c64> = (0..n).map(|i| val(i, 1)).collect();
            let mut w: Vec<c64> = (0..n).map(|i| val(i, 2)).collect();
            let want: c64 = v.iter().zip(&w).map(|(a, b)| a.conj() * b).sum();
            let plain: c64 = v.iter().zip(&w).map(|(a, b)| a * b).sum();
            // Small integers: every sum is exact, whatever its order, on both instances.
            for (name, got) in [
                ("dot_conj", dot_conj(&v, &w)),
                ("dot_conj baseline", baseline(|| dot_conj(&v, &w))),
            ] {
                assert_eq!(got, want, "{name} n={n}");
            }
            for (name, got) in [
                ("dot", dot(&v, &w)),
                ("dot baseline", baseline(|| dot(&v, &w))),
            ] {
                assert_eq!(got, plain, "{name} n={n}");
            }
            let c = c64::new(0.5, -2.0);
            let sub: Vec<c64> = w.iter().zip(&v).map(|(b, a)| b - c * a).collect();
            sub_scaled(&mut w, c, &v);
            assert!(w.iter().zip(&sub).all(|(a, b)| (a - b).norm() < 1e-9));
        }
    }

    /// `dot(v, w)` has the bits of `conj(dot_conj(v, w̄))` on both instances (negation is
    /// exact and rounding symmetric), so the row-major matrix–vector product could take `dot`
    /// instead of a conjugated copy of its vector without changing a result.
    #[test]
    fn dot_is_the_conjugate_of_dot_conj_with_the_vector_conjugated() {
        for n in [1, 2, 3, 5, 8, 13, 100, 1001] {
            let v: Vec<c64> = (0..n)
                .map(|i| c64::new((i as f64 + 0.3).sin(), (1.7 * i as f64).cos() / 3.0))
                .collect();
            let w: Vec<c64> = (0..n)
                .map(|i| c64::new((i as f64).sqrt() - 1.1, (0.2 * i as f64).tan()))
                .collect();
            let wbar: Vec<c64> = w.iter().map(|x| x.conj()).collect();
            for (name, a, b) in [
                ("avx", dot(&v, &w), dot_conj(&v, &wbar).conj()),
                (
                    "baseline",
                    baseline(|| dot(&v, &w)),
                    baseline(|| dot_conj(&v, &wbar).conj()),
                ),
            ] {
                assert_eq!(
                    (a.re.to_bits(), a.im.to_bits()),
                    (b.re.to_bits(), b.im.to_bits()),
                    "{name} n={n}"
                );
            }
        }
    }
}
