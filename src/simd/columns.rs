//! Kernels over a whole strided block of columns in one call, for small results where a call
//! per column cost more than the loop it replaced: the sign flips of one block (`conj`, `neg`,
//! `adjoint`'s conjugating pass), its product by a scalar (`mul`) and the sum or difference of
//! two (`add`, `sub`), each the scalar arithmetic to the bit. Written once against `pulp`
//! ([`portable`]): a register's worth of entries at a time, a column's last odd entries by the
//! scalar operation.

use std::mem::MaybeUninit;

use pulp::{Simd, WithSimd};

use super::portable;
use crate::scalar::c64;

/// Which signs [`flip_cols`] flips.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flip {
    /// The imaginary part's: the conjugate.
    Imag,
    /// Both parts': the negation.
    Both,
}

/// Column `j` of a strided block: its `m` entries at `p + j·stride`.
///
/// # Safety
/// Those entries are valid for reads for `'a` and not written meanwhile.
#[inline(always)]
unsafe fn col<'a>(p: *const c64, stride: usize, j: usize, m: usize) -> &'a [c64] {
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(p.add(j * stride), m) }
}

/// Column `j` of a strided block, to be written.
///
/// # Safety
/// Those entries are valid for writes for `'a` and nothing else reads or writes them meanwhile.
#[inline(always)]
unsafe fn col_mut<'a>(
    p: *mut c64,
    stride: usize,
    j: usize,
    m: usize,
) -> &'a mut [MaybeUninit<c64>] {
    // SAFETY: the caller's contract; `MaybeUninit<c64>` has `c64`'s layout.
    unsafe { std::slice::from_raw_parts_mut(p.add(j * stride).cast::<MaybeUninit<c64>>(), m) }
}

/// `dst[i + j·ds] = conj(src[i + j·ss])` (or `−src[…]` for [`Flip::Both`]) for `i < m`,
/// `j < n`: the conjugate or negation of a strided block of columns, all columns in one call
/// (one `xor` per register). For small results, where a call per column cost more than the
/// loop it replaced (docs/benchmarks.md). A sign flip is the scalar `conj` and `-` to the bit,
/// NaN included.
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
    let block = Block {
        x: (src, ss),
        y: (src, ss),
        dst: (dst, ds),
        size: (m, n),
        s: ZERO,
    };
    match flip {
        Flip::Imag => portable::dispatch(Op::<CONJ>(block)),
        Flip::Both => portable::dispatch(Op::<NEG>(block)),
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
    portable::dispatch(Op::<SCALE>(Block {
        x: (src, ss),
        y: (src, ss),
        dst: (dst, ds),
        size: (m, n),
        s,
    }));
}

/// `dst[i + j·ds] = x[i + j·xs] + y[i + j·ys]` (or `x − y` if `sub`) for `i < m`, `j < n`:
/// the sum or difference of two strided blocks of columns, all columns in one call (one add
/// or subtract per register), as [`flip_cols`] is for one operand. Each part is the scalar
/// `x + y` or `x − y`, to the bit (a NaN result is NaN, its sign and payload unspecified as
/// for the scalar operators).
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
    let block = Block {
        x: (x, xs),
        y: (y, ys),
        dst: (dst, ds),
        size: (m, n),
        s: ZERO,
    };
    if sub {
        portable::dispatch(Op::<SUB>(block));
    } else {
        portable::dispatch(Op::<ADD>(block));
    }
}

/// The operations of [`Block`], one kernel instance each (`Op::<CONJ>(block)`, ...): the
/// conjugate.
const CONJ: u8 = 0;
/// The negation.
const NEG: u8 = 1;
/// The product by the block's scale.
const SCALE: u8 = 2;
/// The sum `x + y`.
const ADD: u8 = 3;
/// The difference `x − y`.
const SUB: u8 = 4;

/// The zero scale of the operations that take none.
const ZERO: c64 = c64::new(0.0, 0.0);

/// One call of [`flip_cols`], [`scale_cols`] or [`sum_cols`]: the blocks (pointer, stride;
/// `y` read by the sums only), the size `(m, n)` and the scale of `scale_cols`; the contract
/// is theirs.
#[derive(Clone, Copy)]
struct Block {
    x: (*const c64, usize),
    y: (*const c64, usize),
    dst: (*mut c64, usize),
    size: (usize, usize),
    s: c64,
}

/// [`Block`] run as operation `OP`.
struct Op<const OP: u8>(Block);

impl<const OP: u8> WithSimd for Op<OP> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let (b, s) = (self.0, self.0.s);
        let scalar = move |a: &c64, y: &c64| match OP {
            CONJ => super::conj(*a),
            NEG => -*a,
            SCALE => s * a,
            ADD => a + y,
            _ => a - y,
        };
        if !portable::vector::<S>() {
            // The sums read `y`; `vector` is not called on pulp's `Scalar`.
            return if OP == ADD || OP == SUB {
                b.run::<S, true>(|a, _| a, scalar)
            } else {
                b.run::<S, false>(|a, _| a, scalar)
            };
        }
        let flip = |re: f64| {
            let mask = portable::f64s::<S>(simd.splat_c64s(c64::new(re, -0.0)));
            move |a: S::f64s, _: S::f64s| simd.xor_f64s(a, mask)
        };
        match OP {
            CONJ => b.run::<S, false>(flip(0.0), scalar),
            NEG => b.run::<S, false>(flip(-0.0), scalar),
            SCALE => {
                let (sr, si) = (simd.splat_f64s(s.re), portable::signed_im(simd, s.im));
                let product = move |a: S::f64s, _: S::f64s| portable::product(simd, sr, si, a);
                b.run::<S, false>(product, scalar)
            }
            ADD => b.run::<S, true>(|a, y| simd.add_f64s(a, y), scalar),
            _ => b.run::<S, true>(|a, y| simd.sub_f64s(a, y), scalar),
        }
    }
}

impl Block {
    /// `dst = f(x, y)` over the block (`y` read only if `TWO`, `x` passed in its place
    /// otherwise): `vector` on whole registers where `S` has them, `scalar` on the entries left
    /// over (on every entry on pulp's `Scalar`). One instance per operation, so the loops hold
    /// no branch on it.
    #[inline(always)]
    fn run<S: Simd, const TWO: bool>(
        self,
        vector: impl Fn(S::f64s, S::f64s) -> S::f64s,
        scalar: impl Fn(&c64, &c64) -> c64,
    ) {
        let Block {
            x,
            y,
            dst,
            size: (m, n),
            ..
        } = self;
        for j in 0..n {
            // SAFETY: column j's m entries lie at j·stride.. of each region, readable (x, y)
            // or writable (dst), and dst overlaps neither input (the callers' contract).
            let (a, d) = unsafe { (col(x.0, x.1, j, m), col_mut(dst.0, dst.1, j, m)) };
            let b = if TWO {
                // SAFETY: as above, for y.
                unsafe { col(y.0, y.1, j, m) }
            } else {
                a
            };
            if !portable::vector::<S>() {
                for ((d, a), b) in d.iter_mut().zip(a).zip(b) {
                    d.write(scalar(a, b));
                }
                continue;
            }
            let (ah, at) = S::as_simd_c64s(a);
            let (dh, dt) = S::as_uninit_mut_simd_c64s(d);
            if TWO {
                let (bh, bt) = S::as_simd_c64s(b);
                for ((d, a), b) in dh.iter_mut().zip(ah).zip(bh) {
                    let v = vector(portable::f64s::<S>(*a), portable::f64s::<S>(*b));
                    d.write(portable::c64s::<S>(v));
                }
                for ((d, a), b) in dt.iter_mut().zip(at).zip(bt) {
                    d.write(scalar(a, b));
                }
            } else {
                for (d, a) in dh.iter_mut().zip(ah) {
                    let a = portable::f64s::<S>(*a);
                    d.write(portable::c64s::<S>(vector(a, a)));
                }
                for (d, a) in dt.iter_mut().zip(at) {
                    d.write(scalar(a, a));
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
