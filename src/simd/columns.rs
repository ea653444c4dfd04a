//! Kernels over a whole strided block of columns in one call, for small results where a call
//! per column cost more than the loop it replaced: the sign flips of one block (`conj`, `neg`,
//! `adjoint`'s conjugating pass), its product by a scalar (`mul`) and the sum or difference of
//! two (`add`, `sub`), each the scalar arithmetic to the bit.

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

/// `dst[i + j·ds] = s·src[i + j·ss]` for `i < m`, `j < n`: the product of a strided block of
/// columns, all columns in one call, as [`flip_cols`] is for the sign flips. For small
/// results, where a call of [`scale_into`](super::scale_into) per column (and the column
/// slices handed out for it) cost more than the products: 10 × 10 `mul` 115–122 → 84–92 ns
/// (docs/benchmarks.md). Each entry is `scale_into`'s product, the scalar one to the bit.
///
/// # Safety
/// `src` is valid for reads and `dst` for writes at `i + j·stride` for every `i < m`, `j < n`
/// (their own strides `ss`, `ds`), and the two regions do not overlap.
pub(crate) unsafe fn scale_cols(
    (src, ss): (*const c64, usize),
    (dst, ds): (*mut c64, usize),
    (m, n): (usize, usize),
    s: c64,
) {
    #[cfg(target_arch = "x86_64")]
    if super::avx2() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above); the pointers as this
        // function's.
        return unsafe { avx::scale_cols((src, ss), (dst, ds), (m, n), s) };
    }
    for j in 0..n {
        for i in 0..m {
            // SAFETY: i < m and j < n: in bounds of both regions (the caller's contract).
            unsafe { dst.add(i + j * ds).write(s * *src.add(i + j * ss)) };
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
    use crate::simd::scale::avx::product;

    /// [`super::scale_cols`] with AVX2: [`product`] (`scale_into`'s) two entries at a time, a
    /// column's odd last entry by the scalar product.
    ///
    /// # Safety
    /// As [`super::scale_cols`]; the CPU has AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn scale_cols(
        (src, ss): (*const c64, usize),
        (dst, ds): (*mut c64, usize),
        (m, n): (usize, usize),
        s: c64,
    ) {
        let (sr, si) = (_mm256_set1_pd(s.re), _mm256_set1_pd(s.im));
        let pairs = m / 2;
        for j in 0..n {
            // SAFETY: column j's m entries lie at j·ss.. and j·ds.. of the regions (the
            // caller's contract); each 256-bit access covers entries 2k and 2k + 1 < m
            // (`Complex<f64>` is two packed doubles), the scalar one entry m − 1.
            unsafe {
                let (x, d) = (src.add(j * ss), dst.add(j * ds));
                let (px, pd) = (x.cast::<f64>(), d.cast::<f64>());
                for k in 0..pairs {
                    let r = product(sr, si, _mm256_loadu_pd(px.add(4 * k)));
                    _mm256_storeu_pd(pd.add(4 * k), r);
                }
                if m % 2 == 1 {
                    d.add(m - 1).write(s * *x.add(m - 1));
                }
            }
        }
    }

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

    /// `got` is `want` to the bit in each part, or NaN where `want`'s part is NaN (whose sign
    /// and payload the kernels do not specify).
    fn assert_same(got: c64, want: c64, (i, j): (usize, usize), (m, n): (usize, usize)) {
        let same = |g: f64, w: f64| {
            if w.is_nan() {
                g.is_nan()
            } else {
                g.to_bits() == w.to_bits()
            }
        };
        let ok = same(got.re, want.re) && same(got.im, want.im);
        assert!(ok, "({i}, {j}) of {m}×{n}: {got} for {want}");
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
                    // commute an add).
                    assert_same(d, want, (i, j), (m, n));
                });
            }
        }
    }

    /// The one-operand kernels' cases: (rows, columns, source stride, destination stride) with
    /// padding, odd and even column lengths and an empty block, each with a source of signed
    /// zeros, infinities, NaN, a subnormal and ordinary values.
    fn one_block_cases() -> impl Iterator<Item = ((usize, usize, usize, usize), Vec<c64>)> {
        let special = [0.0, -0.0, 1.5, -2.25, f64::INFINITY, f64::NAN, 1e-310];
        let shapes = [
            (1, 1, 1, 1),
            (2, 3, 2, 4),
            (5, 4, 7, 5),
            (10, 10, 12, 12),
            (0, 3, 1, 1),
        ];
        shapes.into_iter().map(move |(m, n, ss, ds)| {
            let src = (0..ss * n)
                .map(|k| c64::new(special[k % 7], special[(k * 3 + 1) % 7]))
                .collect();
            ((m, n, ss, ds), src)
        })
    }

    /// Both instances conjugate or negate every entry of every column to the bit (signed
    /// zeros, NaN and infinities' signs flipped, the real parts untouched by the conjugate)
    /// at strides with padding, odd and even column lengths, and write nothing outside the
    /// columns.
    #[test]
    fn flip_cols_flips_the_signs_of_the_columns_only() {
        for ((m, n, ss, ds), src) in one_block_cases() {
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

    /// Both instances multiply every entry of every column by the scalar to the bit of
    /// `Complex`'s product (signed zeros, infinities, subnormals; NaN as NaN) at strides with
    /// padding, odd and even column lengths, and write nothing outside the columns.
    #[test]
    fn scale_cols_is_the_scalar_product_of_the_columns_only() {
        for ((m, n, ss, ds), src) in one_block_cases() {
            for s in [
                c64::new(0.5, -1.25),
                c64::new(-0.0, 3.0),
                c64::new(f64::INFINITY, 1.0),
            ] {
                for baseline in [false, true] {
                    // SAFETY: column j reads src[j·ss..j·ss + m] and writes m slots from j·ds
                    // of the checker's buffer (ds·n + 1 long), both within their vectors
                    // (m ≤ ss, m ≤ ds); they do not overlap.
                    let kernel =
                        |dp| unsafe { scale_cols((src.as_ptr(), ss), (dp, ds), (m, n), s) };
                    check_columns((m, n, ds), baseline, kernel, |i, j, d| {
                        assert_same(d, s * src[i + j * ss], (i, j), (m, n));
                    });
                }
            }
        }
    }
}
