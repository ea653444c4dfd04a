//! Products of small Dense matrices with each result column held in registers.
//!
//! faer's gemm takes about 0.85 µs for a 10×10·10×10 product on the development VM (its
//! packing and dispatch are sized for large matrices), while the multiply-adds need about a
//! fifth of that. Here a result column of up to [`MAX_ROWS`] rows is a set of AVX2
//! accumulators: A's columns are copied once, zero-padded to whole registers ([`pad_a`]), and
//! each column of B costs one broadcast pair and two FMAs per register per inner index
//! ([`column`]).

use std::mem::MaybeUninit;

use crate::scalar::{ZERO, c64};

/// The most rows of A (and of the result): six registers of sums by the real parts and six by
/// the imaginary parts, with the two broadcasts and a load, fit the 16 AVX2 registers.
pub(crate) const MAX_ROWS: usize = 12;

/// The most columns of A: its padded copy lives on the stack (at most 12 KiB).
pub(crate) const MAX_INNER: usize = 64;

/// Room for A's padded copy.
pub(crate) type PadBuf = [MaybeUninit<c64>; MAX_ROWS * MAX_INNER];

/// A's `p` columns (`a_col(k)`, each at least `m` long), each zero-padded to an even length,
/// written into `buf`: the operand of [`column`]. `None` when `m` or `p` is 0 or out of range,
/// or the CPU lacks AVX2 and FMA (the caller then takes its general product).
pub(crate) fn pad_a<'b, 'a>(
    buf: &'b mut PadBuf,
    (m, p): (usize, usize),
    a_col: impl Fn(usize) -> &'a [c64],
) -> Option<&'b [c64]> {
    if m == 0 || m > MAX_ROWS || p == 0 || p > MAX_INNER || !super::avx2() {
        return None;
    }
    let w = m.next_multiple_of(2);
    for k in 0..p {
        let dst = &mut buf[k * w..(k + 1) * w];
        for (d, v) in dst.iter_mut().zip(&a_col(k)[..m]) {
            d.write(*v);
        }
        if w > m {
            dst[m].write(ZERO);
        }
    }
    // SAFETY: the loop wrote the first p·w elements (all w of each of the p columns), and
    // p·w ≤ MAX_INNER·MAX_ROWS, the buffer's length.
    Some(unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<c64>(), p * w) })
}

/// `c[..m] = Σₖ a_k·b[k]`, with `a` from [`pad_a`] for the same `m` and `b.len()` columns.
///
/// # Panics
/// If `a` is not `b.len()` padded columns of `m` rows or `c` is shorter than `m`: a caller's
/// bug.
pub(crate) fn column(a: &[c64], m: usize, b: &[c64], c: &mut [c64]) {
    let w = m.next_multiple_of(2);
    assert!(
        (1..=MAX_ROWS).contains(&m) && a.len() == w * b.len() && c.len() >= m,
        "gemm::column: operands of the wrong size"
    );
    #[cfg(target_arch = "x86_64")]
    {
        let kernel = match w / 2 {
            1 => avx::column::<1>,
            2 => avx::column::<2>,
            3 => avx::column::<3>,
            4 => avx::column::<4>,
            5 => avx::column::<5>,
            _ => avx::column::<6>,
        };
        // SAFETY: `a` came from `pad_a`, which returned it only on a CPU with AVX2 and FMA;
        // the sizes are those the kernel needs (asserted above).
        unsafe { kernel(a, b, &mut c[..m]) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("pad_a returns None off x86-64");
}

#[cfg(target_arch = "x86_64")]
mod avx {
    use std::arch::x86_64::*;

    use crate::scalar::c64;

    /// One result column, `c = Σₖ a[k]·b[k]` with `a[k]` the k-th padded column of A (2H
    /// entries, the last possibly padding). The sums by B's real parts and by its imaginary
    /// parts are kept apart and combined once at the end (`addsub` of one and the other with
    /// its lanes swapped).
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA; `a.len() = 2H·b.len()` and `c.len()` is `2H` or `2H − 1`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn column<const H: usize>(a: &[c64], b: &[c64], c: &mut [c64]) {
        let pa = a.as_ptr().cast::<f64>();
        let mut re = [_mm256_setzero_pd(); H];
        let mut im = [_mm256_setzero_pd(); H];
        for (k, v) in b.iter().enumerate() {
            let (br, bi) = (_mm256_set1_pd(v.re), _mm256_set1_pd(v.im));
            for h in 0..H {
                // SAFETY: doubles 4(kH + h)..+4 are entries 2(kH + h) and 2(kH + h) + 1 of
                // `a`, below 2H·b.len() = a.len() (k < b.len(), h < H).
                let x = unsafe { _mm256_loadu_pd(pa.add(4 * (k * H + h))) };
                re[h] = _mm256_fmadd_pd(x, br, re[h]);
                im[h] = _mm256_fmadd_pd(x, bi, im[h]);
            }
        }
        let pc = c.as_mut_ptr().cast::<f64>();
        for h in 0..H {
            let v = _mm256_addsub_pd(re[h], _mm256_permute_pd::<0b0101>(im[h]));
            if 2 * h + 1 < c.len() {
                // SAFETY: entries 2h and 2h + 1 of `c` exist (2h + 1 < c.len()).
                unsafe { _mm256_storeu_pd(pc.add(4 * h), v) };
            } else {
                // SAFETY: entry 2h exists: the last register of an odd `c` (c.len() = 2H − 1).
                unsafe { _mm_storeu_pd(pc.add(4 * h), _mm256_castpd256_pd128(v)) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(i: usize, salt: usize) -> c64 {
        let h = (i * 2_654_435_761 + salt * 40_503) % 1009;
        c64::new(h as f64 / 97.0 - 5.0, (h * 7 % 1009) as f64 / 211.0 - 2.0)
    }

    /// Every register count (m = 1..=12, odd and even) and inner sizes up to the limit agree
    /// with the definition to rounding, and leave what follows an odd column alone;
    /// out-of-range sizes are declined.
    #[test]
    fn small_products_match_the_definition() {
        let mut buf = [MaybeUninit::uninit(); MAX_ROWS * MAX_INNER];
        for m in 1..=MAX_ROWS {
            for p in [1, 2, 3, 7, 16, MAX_INNER] {
                let a: Vec<Vec<c64>> = (0..p)
                    .map(|k| (0..m).map(|i| value(i * p + k, 1)).collect())
                    .collect();
                let Some(ap) = pad_a(&mut buf, (m, p), |k| &a[k]) else {
                    assert!(!crate::simd::avx2());
                    return;
                };
                for j in 0..3 {
                    let b: Vec<c64> = (0..p).map(|k| value(k * 3 + j, 2)).collect();
                    let sentinel = c64::new(-7.0, 7.0);
                    let mut c = vec![sentinel; m + 1];
                    column(ap, m, &b, &mut c[..m]);
                    for i in 0..m {
                        let want: c64 = (0..p).map(|k| a[k][i] * b[k]).sum();
                        let tol = 1e-13 * 50.0 * p as f64;
                        assert!((c[i] - want).norm() <= tol, "{m}×{p} row {i}");
                    }
                    assert_eq!(c[m], sentinel, "{m}×{p}: wrote past the column");
                }
            }
        }
        let none: [c64; 0] = [];
        assert!(pad_a(&mut buf, (13, 2), |_| &none).is_none());
        assert!(pad_a(&mut buf, (2, 65), |_| &none).is_none());
        assert!(pad_a(&mut buf, (0, 2), |_| &none).is_none());
    }
}
