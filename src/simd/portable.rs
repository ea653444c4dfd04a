//! The vector kernels written once against `pulp`: AVX2 + FMA on x86-64, NEON on aarch64,
//! chosen at run time; the plain Rust loops where neither is there (pulp's `Scalar`).
//!
//! A kernel is a struct implementing [`WithSimd`], run by [`dispatch`]: its `with_simd` body
//! is `#[inline(always)]` and pulp calls it from a function compiled for the CPU's features,
//! so everything it calls is compiled for them too (a closure handed to pulp's `vectorize`
//! may be compiled on its own, without them).
//!
//! The x86 kernels were first written with `addsub` and `fmaddsub`, which pulp's portable API
//! does not have; here the sign those instructions flip is folded into the broadcast scalar
//! instead ([`signed_im`]), so the loops are plain multiplies, adds and fused multiply-adds
//! that round as those instructions round: the AVX-512 kernels kept in `std::arch` (pulp's
//! AVX-512 needs Rust 1.89, past the MSRV) give the portable AVX2 kernels' results to the bit.
//!
//! On pulp's `Scalar` a register holds one double, not a complex entry: kernels test
//! [`vector`] and take their plain loop there (pulp's scalar fused multiply-add is a call into
//! libm on CPUs without FMA).

use pulp::{Simd, WithSimd};

use crate::scalar::c64;

/// Runs `kernel` on the widest instruction set pulp finds on this CPU (AVX2 + FMA, NEON), or
/// on pulp's `Scalar`. Unit tests that ask for the baseline ([`super::baseline`]) get `Scalar`.
#[inline(always)]
pub(crate) fn dispatch<K: WithSimd>(kernel: K) -> K::Output {
    #[cfg(test)]
    if super::BASELINE.get() {
        return kernel.with_simd(pulp::Scalar::new());
    }
    arch().dispatch(kernel)
}

/// pulp's choice for this CPU, detected once.
#[inline(always)]
fn arch() -> pulp::Arch {
    static ARCH: std::sync::OnceLock<pulp::Arch> = std::sync::OnceLock::new();
    *ARCH.get_or_init(pulp::Arch::new)
}

/// The instruction set [`dispatch`] runs the portable kernels on here: `"avx2+fma"`,
/// `"neon"`, or `"scalar"` (plain loops).
pub(crate) fn instruction_set() -> &'static str {
    struct Name;
    impl WithSimd for Name {
        type Output = usize;
        #[inline(always)]
        fn with_simd<S: Simd>(self, _: S) -> usize {
            S::F64_LANES
        }
    }
    match dispatch(Name) {
        1 => "scalar",
        _ if cfg!(target_arch = "x86_64") => "avx2+fma",
        _ if cfg!(target_arch = "aarch64") => "neon",
        _ => "simd128",
    }
}

/// Whether `S` holds at least one complex entry a register (not pulp's `Scalar`).
#[inline(always)]
pub(crate) fn vector<S: Simd>() -> bool {
    S::F64_LANES >= 2
}

/// A register of complex entries seen as its doubles `[re, im, re, im, …]`.
///
/// `bytemuck::cast` compares the sizes when it runs (a constant comparison, folded away)
/// where `pulp::cast` compares them at compile time: on pulp's `Scalar` the two registers
/// differ in size (one double, one complex entry), and the kernels, compiled for it too,
/// call these only after [`vector`].
#[inline(always)]
pub(crate) fn f64s<S: Simd>(v: S::c64s) -> S::f64s {
    pulp::bytemuck::cast(v)
}

/// Doubles `[re, im, …]` seen as complex entries (as [`f64s`]).
#[inline(always)]
pub(crate) fn c64s<S: Simd>(v: S::f64s) -> S::c64s {
    pulp::bytemuck::cast(v)
}

/// `v` with the two parts of each entry exchanged (`[im, re]`).
#[inline(always)]
pub(crate) fn swap<S: Simd>(simd: S, v: S::f64s) -> S::f64s {
    f64s::<S>(simd.swap_re_im_c64s(c64s::<S>(v)))
}

/// `[−im, im, −im, im, …]`: an imaginary part broadcast with the real lanes negated. Then
/// `c·v = re·v + signed_im(im)·swap(v)` lane by lane, the sum x86's `fmaddsub` and `addsub`
/// form with a sign flip of their own (`a − b` is `a + (−b)` in IEEE arithmetic, and
/// `(−x)·y = −(x·y)` exactly): the same roundings without a sign mask in the loop.
#[inline(always)]
pub(crate) fn signed_im<S: Simd>(simd: S, im: f64) -> S::f64s {
    f64s::<S>(simd.splat_c64s(c64::new(-im, im)))
}

/// `s·v` for the entries of `v`, `s = sr + i·si` given as `splat(sr)` and
/// [`signed_im`]`(si)`: `sr·v + (∓si)·swap(v)` without a fused multiply-add, so each part is
/// `Complex`'s product to the bit.
#[inline(always)]
pub(crate) fn product<S: Simd>(simd: S, sr: S::f64s, si: S::f64s, v: S::f64s) -> S::f64s {
    simd.add_f64s(simd.mul_f64s(sr, v), simd.mul_f64s(si, swap(simd, v)))
}

/// The lanes of a register of doubles, in order.
#[inline(always)]
pub(crate) fn lanes<S: Simd>(v: &S::f64s) -> &[f64] {
    pulp::bytemuck::cast_slice(std::slice::from_ref(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The product rounds as the scalar arithmetic: for every pair below it is `Complex`'s
    /// `*` to the bit on the CPU's instruction set.
    #[test]
    fn the_product_is_complex_multiplication_to_the_bit() {
        struct Check(Vec<c64>, c64);
        impl WithSimd for Check {
            type Output = Vec<c64>;
            #[inline(always)]
            fn with_simd<S: Simd>(self, simd: S) -> Vec<c64> {
                let Check(mut x, s) = self;
                if !vector::<S>() {
                    return x.iter().map(|v| s * v).collect();
                }
                let (sr, si) = (simd.splat_f64s(s.re), signed_im(simd, s.im));
                let (head, tail) = S::as_mut_simd_c64s(&mut x);
                for v in head {
                    *v = c64s::<S>(product(simd, sr, si, f64s::<S>(*v)));
                }
                for v in tail {
                    *v *= s;
                }
                x
            }
        }
        let x: Vec<c64> = (0..37)
            .map(|i| c64::new((i as f64 * 0.37).sin() * 1e3, (i as f64).sqrt() - 2.5))
            .collect();
        for s in [
            c64::new(0.3, -1.7),
            c64::new(-2.0, 0.0),
            c64::new(1e-300, 7.5),
        ] {
            let got = dispatch(Check(x.clone(), s));
            for (g, v) in got.iter().zip(&x) {
                let want = s * v;
                assert_eq!(
                    (g.re.to_bits(), g.im.to_bits()),
                    (want.re.to_bits(), want.im.to_bits())
                );
            }
        }
    }

    /// The x86-64 development and CI machines have AVX2 + FMA, aarch64 always has NEON: the
    /// portable kernels take a vector path on both (a report of which kernels do is in
    /// `simd::tests::vector_paths`).
    #[test]
    fn the_portable_kernels_run_on_vector_registers_here() {
        let set = instruction_set();
        #[cfg(target_arch = "aarch64")]
        assert_eq!(set, "neon");
        #[cfg(target_arch = "x86_64")]
        assert_eq!(set == "avx2+fma", super::super::avx2(), "{set}");
        assert_eq!(super::super::baseline(instruction_set), "scalar");
    }
}
