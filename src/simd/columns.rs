//! Kernels over a whole strided block of columns in one call, for small results where a call
//! per column cost more than the loop it replaced: the sign flips of one block (`conj`, `neg`,
//! `adjoint`'s conjugating pass) and the sum or difference of two (`add`, `sub`), each the
//! scalar arithmetic to the bit.

use crate::scalar::c64;

/// Which signs [`flip_cols`] flips.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flip {
    /// The imaginary part's: the conjugate.
    Imag,
    /// Both parts': the negation.
    Both,
}

/// `dst[i + j·ds] = conj(src[i + j·ss])` (or `−src[…]` for [`Flip::Both`]) for `i < m`,
/// `j < n`: the conjugate or negation of a strided block of columns, all columns in one call
/// (on the AVX2 path one 256-bit `xor` per two entries, a 128-bit one for an odd last entry).
/// For small results, where a call per column cost more than the loop it replaced
/// (docs/benchmarks.md). A sign flip is the scalar `conj` and `-` to the bit, NaN included.
///
/// # Safety
/// `src` is valid for reads and `dst` for writes at `i + j·stride` for every `i < m`, `j < n`
/// (their own strides `ss`, `ds`), and the two regions do not overlap.
pub(crate) unsafe fn flip_cols(
    src: *const c64,
    ss: usize,
    dst: *mut c64,
    ds: usize,
    (m, n): (usize, usize),
    flip: Flip,
) {
    #[cfg(target_arch = "x86_64")]
    if super::avx2() {
        // SAFETY: the CPU has AVX2 (checked just above); the pointers as this function's.
        return unsafe { avx::flip_cols(src, ss, dst, ds, (m, n), flip) };
    }
    for j in 0..n {
        for i in 0..m {
            // SAFETY: i < m and j < n: in bounds of both regions (the caller's contract).
            unsafe {
                let x = *src.add(i + j * ss);
                let y = match flip {
                    Flip::Imag => super::conj(x),
                    Flip::Both => -x,
                };
                dst.add(i + j * ds).write(y);
            }
        }
    }
}

/// `dst[i + j·ds] = x[i + j·xs] + y[i + j·ys]` (or `x − y` if `sub`) for `i < m`, `j < n`:
/// the sum or difference of two strided blocks of columns, all columns in one call (on the
/// AVX2 path one 256-bit add or subtract per two entries), as [`flip_cols`] is for one
/// operand. Each part is the scalar `x + y` or `x − y`, to the bit (a NaN result is NaN, its
/// sign and payload unspecified as for the scalar operators).
///
/// # Safety
/// `x` and `y` are valid for reads and `dst` for writes at `i + j·stride` for every `i < m`,
/// `j < n` (their own strides `xs`, `ys`, `ds`), and `dst` overlaps neither input.
pub(crate) unsafe fn sum_cols(
    (x, xs): (*const c64, usize),
    (y, ys): (*const c64, usize),
    (dst, ds): (*mut c64, usize),
    (m, n): (usize, usize),
    sub: bool,
) {
    #[cfg(target_arch = "x86_64")]
    if super::avx2() {
        // SAFETY: the CPU has AVX2 (checked just above); the pointers as this function's.
        return unsafe { avx::sum_cols((x, xs), (y, ys), (dst, ds), (m, n), sub) };
    }
    for j in 0..n {
        for i in 0..m {
            // SAFETY: i < m and j < n: in bounds of all three regions (the caller's contract).
            unsafe {
                let (a, b) = (*x.add(i + j * xs), *y.add(i + j * ys));
                dst.add(i + j * ds).write(if sub { a - b } else { a + b });
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx {
    use std::arch::x86_64::*;

    use crate::scalar::c64;

    /// [`super::sum_cols`] with AVX2.
    ///
    /// # Safety
    /// As [`super::sum_cols`]; the CPU has AVX2.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn sum_cols(
        (x, xs): (*const c64, usize),
        (y, ys): (*const c64, usize),
        (dst, ds): (*mut c64, usize),
        (m, n): (usize, usize),
        sub: bool,
    ) {
        let pairs = m / 2;
        for j in 0..n {
            // SAFETY: column j's m entries lie at j·xs.., j·ys.. and j·ds.. of the regions
            // (the caller's contract); each 256-bit access covers entries 2k and 2k + 1 < m,
            // the 128-bit one entry m − 1 (`c64` is two packed f64).
            unsafe {
                let (a, b, d) = (
                    x.add(j * xs).cast::<f64>(),
                    y.add(j * ys).cast::<f64>(),
                    dst.add(j * ds).cast::<f64>(),
                );
                if sub {
                    for k in 0..pairs {
                        let v = _mm256_sub_pd(
                            _mm256_loadu_pd(a.add(4 * k)),
                            _mm256_loadu_pd(b.add(4 * k)),
                        );
                        _mm256_storeu_pd(d.add(4 * k), v);
                    }
                } else {
                    for k in 0..pairs {
                        let v = _mm256_add_pd(
                            _mm256_loadu_pd(a.add(4 * k)),
                            _mm256_loadu_pd(b.add(4 * k)),
                        );
                        _mm256_storeu_pd(d.add(4 * k), v);
                    }
                }
                if m % 2 == 1 {
                    let (u, w) = (
                        _mm_loadu_pd(a.add(4 * pairs)),
                        _mm_loadu_pd(b.add(4 * pairs)),
                    );
                    _mm_storeu_pd(
                        d.add(4 * pairs),
                        if sub {
                            _mm_sub_pd(u, w)
                        } else {
                            _mm_add_pd(u, w)
                        },
                    );
                }
            }
        }
    }

    /// [`super::flip_cols`] with AVX2.
    ///
    /// # Safety
    /// As [`super::flip_cols`]; the CPU has AVX2.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn flip_cols(
        src: *const c64,
        ss: usize,
        dst: *mut c64,
        ds: usize,
        (m, n): (usize, usize),
        flip: super::Flip,
    ) {
        let re = match flip {
            super::Flip::Imag => 0.0,
            super::Flip::Both => -0.0,
        };
        let mask = _mm256_set_pd(-0.0, re, -0.0, re);
        let pairs = m / 2;
        for j in 0..n {
            // SAFETY: column j's m entries lie at j·ss.. and j·ds.. of the regions (the
            // caller's contract); each 256-bit access covers entries 2k and 2k + 1 < m, the
            // 128-bit one entry m − 1; `c64` is two f64 (re, im), so the mask's lanes are
            // (re, im, re, im).
            unsafe {
                let (s, d) = (src.add(j * ss).cast::<f64>(), dst.add(j * ds).cast::<f64>());
                for k in 0..pairs {
                    let v = _mm256_loadu_pd(s.add(4 * k));
                    _mm256_storeu_pd(d.add(4 * k), _mm256_xor_pd(v, mask));
                }
                if m % 2 == 1 {
                    let v = _mm_loadu_pd(s.add(4 * pairs));
                    _mm_storeu_pd(
                        d.add(4 * pairs),
                        _mm_xor_pd(v, _mm256_castpd256_pd128(mask)),
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `kernel`, which writes an m × n block of columns at stride `ds` through the pointer
    /// it is given, into a buffer of markers (on the portable path if `baseline`), then hands
    /// every slot of the block to `check` (row, column, value) and asserts that no slot outside
    /// it was written.
    fn check_columns(
        (m, n, ds): (usize, usize, usize),
        baseline: bool,
        kernel: impl Fn(*mut c64),
        check: impl Fn(usize, usize, c64),
    ) {
        let marker = c64::new(7.0, 7.0);
        let mut dst = vec![marker; ds * n + 1];
        let dp = dst.as_mut_ptr();
        if baseline {
            crate::simd::baseline(|| kernel(dp));
        } else {
            kernel(dp);
        }
        for (k, d) in dst.iter().enumerate() {
            let (j, i) = (k / ds, k % ds);
            if j < n && i < m {
                check(i, j, *d);
            } else {
                assert_eq!(*d, marker, "slot {k} outside the columns");
            }
        }
    }

    /// Both instances add or subtract every entry of every column to the bit of the scalar
    /// operators (signed zeros, infinities, subnormals; NaN as NaN) at three different strides with
    /// padding, odd and even column lengths, and write nothing outside the columns.
    #[test]
    fn sum_cols_is_the_scalar_sum_of_the_columns_only() {
        let special = [0.0, -0.0, 1.5, -2.25, f64::INFINITY, f64::NAN, 1e-310];
        for (m, n, xs, ys, ds) in [
            (1, 1, 1, 1, 1),
            (2, 3, 2, 3, 4),
            (5, 4, 7, 5, 6),
            (10, 10, 12, 12, 12),
            (0, 3, 1, 1, 1),
        ] {
            let x: Vec<c64> = (0..xs * n)
                .map(|k| c64::new(special[k % 7], special[(k * 3 + 1) % 7]))
                .collect();
            let y: Vec<c64> = (0..ys * n)
                .map(|k| c64::new(special[(k * 5 + 2) % 7], special[(k + 4) % 7]))
                .collect();
            for (sub, baseline) in [(false, false), (false, true), (true, false), (true, true)] {
                // SAFETY: column j reads x[j·xs..j·xs + m] and y[j·ys..j·ys + m] and writes
                // m slots from j·ds of the checker's buffer (ds·n + 1 long), all within their
                // vectors (m ≤ every stride); the buffer is a vector of its own.
                let kernel = |dp| unsafe {
                    sum_cols((x.as_ptr(), xs), (y.as_ptr(), ys), (dp, ds), (m, n), sub);
                };
                check_columns((m, n, ds), baseline, kernel, |i, j, d| {
                    let (a, b) = (x[i + j * xs], y[i + j * ys]);
                    let want = if sub { a - b } else { a + b };
                    // A NaN result's sign and payload are not specified (the compiler may
                    // commute an add): NaN where the scalar gives NaN, else the same bits.
                    let same = |g: f64, w: f64| {
                        if w.is_nan() {
                            g.is_nan()
                        } else {
                            g.to_bits() == w.to_bits()
                        }
                    };
                    assert!(same(d.re, want.re), "({i}, {j}) of {m}×{n}: {d} for {want}");
                    assert!(same(d.im, want.im), "({i}, {j}) of {m}×{n}: {d} for {want}");
                });
            }
        }
    }

    /// Both instances conjugate or negate every entry of every column to the bit (signed
    /// zeros, NaN and infinities' signs flipped, the real parts untouched by the conjugate)
    /// at strides with padding, odd and even column lengths, and write nothing outside the
    /// columns.
    #[test]
    fn flip_cols_flips_the_signs_of_the_columns_only() {
        let special = [0.0, -0.0, 1.5, -2.25, f64::INFINITY, f64::NAN, 1e-310];
        for (m, n, ss, ds) in [
            (1, 1, 1, 1),
            (2, 3, 2, 4),
            (5, 4, 7, 5),
            (10, 10, 12, 12),
            (0, 3, 1, 1),
        ] {
            let src: Vec<c64> = (0..ss * n)
                .map(|k| c64::new(special[k % 7], special[(k * 3 + 1) % 7]))
                .collect();
            for (flip, baseline) in [
                (Flip::Imag, false),
                (Flip::Imag, true),
                (Flip::Both, false),
                (Flip::Both, true),
            ] {
                // SAFETY: column j reads src[j·ss..j·ss + m] and writes m slots from j·ds of
                // the checker's buffer (ds·n + 1 long), both within their vectors (m ≤ ss,
                // m ≤ ds); they do not overlap.
                let kernel = |dp| unsafe { flip_cols(src.as_ptr(), ss, dp, ds, (m, n), flip) };
                check_columns((m, n, ds), baseline, kernel, |i, j, d| {
                    let x = src[i + j * ss];
                    let re = if flip == Flip::Both { -x.re } else { x.re };
                    assert_eq!(d.re.to_bits(), re.to_bits(), "({i}, {j}) of {m}×{n}");
                    assert_eq!(d.im.to_bits(), (-x.im).to_bits(), "({i}, {j}) of {m}×{n}");
                });
            }
        }
    }
}
