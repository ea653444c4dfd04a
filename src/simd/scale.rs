//! `out = s·x`, `out = x + s·y` and `acc += s·y` over a column: the complex scalings of `mul`,
//! of `add` with a scale (`sub`) and of `iadd`, bit for bit the scalar arithmetic.
//!
//! The compiler's own vectorisation of `s * x` over `Complex<f64>` spent most of its
//! instructions on shuffles (13 per entry for a 10 × 10 `mul`); these are two multiplies, one
//! swap and one add per register ([`portable::product`]). The slice kernels are written once
//! against `pulp`. The runs of the Kronecker and Csr·Csr fills are in [`runs`](super::runs).

use std::mem::MaybeUninit;

use pulp::{Simd, WithSimd};

use super::portable;
use crate::scalar::c64;

/// `out[k] = s·x[k]` for every `k` below both lengths. Each part is the same two products and
/// one sum or difference as `Complex`'s `*` (no fused multiply-add), so the result is the
/// scalar one to the bit.
#[inline(always)]
pub(crate) fn scale_into(out: &mut [MaybeUninit<c64>], s: c64, x: &[c64]) {
    let n = out.len().min(x.len());
    portable::dispatch(Scale {
        out: &mut out[..n],
        s,
        scaled: &x[..n],
        plus: None,
    });
}

/// `out[k] = x[k] + s·y[k]` for every `k` below the three lengths, the product as in
/// [`scale_into`] and then the sum: the scalar `x + s * y` to the bit.
#[inline(always)]
pub(crate) fn add_scaled_into(out: &mut [MaybeUninit<c64>], x: &[c64], s: c64, y: &[c64]) {
    let n = out.len().min(x.len()).min(y.len());
    portable::dispatch(Scale {
        out: &mut out[..n],
        s,
        scaled: &y[..n],
        plus: Some(&x[..n]),
    });
}

/// `out = s·scaled`, or `out = plus + s·scaled`; the slices of one length.
struct Scale<'a> {
    out: &'a mut [MaybeUninit<c64>],
    s: c64,
    scaled: &'a [c64],
    plus: Option<&'a [c64]>,
}

impl WithSimd for Scale<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Scale {
            out,
            s,
            scaled: x,
            plus: y,
        } = self;
        if !portable::vector::<S>() {
            match y {
                None => out.iter_mut().zip(x).for_each(|(o, v)| {
                    o.write(s * v);
                }),
                Some(y) => out.iter_mut().zip(x).zip(y).for_each(|((o, v), a)| {
                    o.write(a + s * v);
                }),
            }
            return;
        }
        let (sr, si) = (simd.splat_f64s(s.re), portable::signed_im(simd, s.im));
        let (oh, ot) = S::as_uninit_mut_simd_c64s(out);
        let (xh, xt) = S::as_simd_c64s(x);
        let product = |v: &S::c64s| portable::product(simd, sr, si, portable::f64s::<S>(*v));
        match y {
            None => {
                for (o, v) in oh.iter_mut().zip(xh) {
                    o.write(portable::c64s::<S>(product(v)));
                }
                for (o, v) in ot.iter_mut().zip(xt) {
                    o.write(s * v);
                }
            }
            Some(y) => {
                let (yh, yt) = S::as_simd_c64s(y);
                for ((o, v), a) in oh.iter_mut().zip(xh).zip(yh) {
                    let a = portable::f64s::<S>(*a);
                    o.write(portable::c64s::<S>(simd.add_f64s(a, product(v))));
                }
                for ((o, v), a) in ot.iter_mut().zip(xt).zip(yt) {
                    o.write(a + s * v);
                }
            }
        }
    }
}

/// `acc[k] += s·y[k]` for every `k` below both lengths: bit for bit the scalar
/// `*acc += s * y`. For `iadd` with a scale: the compiler's own loop spent 19 % of a CG solve
/// on its shuffles.
#[inline(always)]
pub(crate) fn add_scaled_assign(acc: &mut [c64], s: c64, y: &[c64]) {
    let n = acc.len().min(y.len());
    portable::dispatch(AddScaled {
        acc: &mut acc[..n],
        s,
        y: &y[..n],
    });
}

/// `acc += s·y`, both of one length.
struct AddScaled<'a> {
    acc: &'a mut [c64],
    s: c64,
    y: &'a [c64],
}

impl WithSimd for AddScaled<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let AddScaled { acc, s, y } = self;
        if !portable::vector::<S>() {
            for (a, b) in acc.iter_mut().zip(y) {
                *a += s * b;
            }
            return;
        }
        let (sr, si) = (simd.splat_f64s(s.re), portable::signed_im(simd, s.im));
        let (ah, at) = S::as_mut_simd_c64s(acc);
        let (yh, yt) = S::as_simd_c64s(y);
        for (a, v) in ah.iter_mut().zip(yh) {
            let sv = portable::product(simd, sr, si, portable::f64s::<S>(*v));
            *a = portable::c64s::<S>(simd.add_f64s(portable::f64s::<S>(*a), sv));
        }
        for (a, b) in at.iter_mut().zip(yt) {
            *a += s * b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both instances of the three kernels give the scalar arithmetic to the bit (NaN as NaN), on
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
                    let mut acc = x[..len].to_vec();
                    if baseline {
                        crate::simd::baseline(|| add_scaled_assign(&mut acc, s, y));
                    } else {
                        add_scaled_assign(&mut acc, s, y);
                    }
                    for (k, v) in x[..len].iter().enumerate() {
                        // SAFETY: every element was written (initialised above, then again).
                        let got = unsafe { [out[k].assume_init(), sum[k].assume_init(), acc[k]] };
                        let want = [s * v, v + s * y[k], v + s * y[k]];
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
