//! The column-major matrix–vector product `y ← y + Σⱼ xⱼ·a[j]`: Dense·ket, `matmul_dag` with a
//! bra on the right, the `O·ψ` of a Dense `expect`. One kernel body, generic over the register
//! width ([`Lanes`]): the portable registers of `pulp` (AVX2 + FMA on x86-64, two entries a
//! register; NEON on aarch64, one) and, where the CPU has it (on Intel CPUs only for a matrix
//! that fits in L2), AVX-512F (four entries, in `std::arch`: pulp's AVX-512 needs Rust 1.89,
//! past the MSRV). Every width does the same operations per entry in the same order, so the
//! AVX-512 and AVX2 results are the same to the bit.

use pulp::{Simd, WithSimd};

use super::portable;
use crate::scalar::c64;

/// Rows per block: 32 KiB of `y`, kept in L1 while every column passes over it.
const BLOCK: usize = 2048;

/// On Intel CPUs, the largest matrix (entries) whose product with a vector takes the AVX-512
/// kernel: 2 MiB, what an L2 cache holds. On the Intel CPU measured, the wider FMAs paid from
/// the cache (up to 15 % at n = 100–300) and not from memory (1 % slower at n = 500–1000).
///
/// Other CPUs with AVX-512F take it at every size: on Zen 4 it was 8 % faster in cache and
/// 20–30 % faster out of it (`profile_op matmul dense,ket`, docs/benchmarks/per_operation.md).
#[cfg(target_arch = "x86_64")]
const WIDE_MAX_ENTRIES_INTEL: usize = 1 << 17;

/// `y ← y + Σⱼ xⱼ·a[j]` for columns `a[j]` as long as `y`: a column-major matrix–vector
/// product. Rows go in blocks of 2 048 (32 KiB of `y`, kept in L1) and columns four per pass
/// over the block, so `y` is loaded and stored once per four columns and every column streamed
/// once. Rows past the shortest column are left as they are.
pub(crate) fn gemv_cols(y: &mut [c64], cols: &[&[c64]], x: &[c64]) {
    let end = cols.iter().fold(y.len(), |e, c| e.min(c.len()));
    debug_assert_eq!(end, y.len(), "gemv_cols: a column is shorter than y");
    #[cfg(target_arch = "x86_64")]
    let wide = !super::intel() || cols.len().saturating_mul(end) <= WIDE_MAX_ENTRIES_INTEL;
    for r0 in (0..end).step_by(BLOCK) {
        let rows = r0..(r0 + BLOCK).min(end);
        // Rows in steps of eight on AVX-512 where it runs and pays, the rest portable.
        #[cfg(target_arch = "x86_64")]
        let rows = if wide {
            wide_rows(y, cols, x, rows.clone())..rows.end
        } else {
            rows
        };
        portable::dispatch(Cols {
            y: &mut *y,
            cols,
            x,
            rows,
        });
    }
}

/// [`gemv_cols`] on AVX-512 over the rows of `rows` in steps of eight, where it runs; returns
/// the first row left for the portable kernel (`rows.start` where none were done).
#[cfg(target_arch = "x86_64")]
#[rustversion::since(1.89)]
fn wide_rows(y: &mut [c64], cols: &[&[c64]], x: &[c64], rows: std::ops::Range<usize>) -> usize {
    if super::avx512() {
        // SAFETY: the CPU has AVX-512F, the feature the kernel is compiled for.
        unsafe { avx::cols_avx512(y, cols, x, rows) }
    } else {
        rows.start
    }
}

/// A build by Rust 1.88 has no AVX-512 kernels: every row goes to the portable one.
#[cfg(target_arch = "x86_64")]
#[rustversion::before(1.89)]
fn wide_rows(_: &mut [c64], _: &[&[c64]], _: &[c64], rows: std::ops::Range<usize>) -> usize {
    rows.start
}

/// A register width for vectors of interleaved `[re, im]` doubles; a value of the type is the
/// proof that the CPU has its features.
///
/// # Safety
/// `load` and `store` need `ENTRIES` entries (2·`ENTRIES` doubles) readable or writable at the
/// pointer; the other methods need only a value of the type.
trait Lanes: Copy {
    /// The register.
    type V: Copy;
    /// Complex entries a register holds.
    const ENTRIES: usize;
    unsafe fn splat(self, x: f64) -> Self::V;
    unsafe fn load(self, p: *const f64) -> Self::V;
    unsafe fn store(self, p: *mut f64, v: Self::V);
    unsafe fn fmadd(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    unsafe fn mul(self, a: Self::V, b: Self::V) -> Self::V;
    unsafe fn add(self, a: Self::V, b: Self::V) -> Self::V;
    /// A coefficient `x` broadcast as the width wants it: `(re, im)` parts.
    unsafe fn coeff(self, x: c64) -> (Self::V, Self::V);
    /// `y + Σ a·re` and `Σ a·im` (`a` the columns' entries, `re + i·im` their
    /// coefficients as [`Lanes::coeff`] gives them) combined into `y + Σ a·(re + i·im)`: the
    /// real part subtracts the swapped imaginary sums' first lane, the imaginary part adds
    /// its second (`addsub`).
    unsafe fn combine(self, re_sums: Self::V, im_sums: Self::V) -> Self::V;
    /// `c·a` for the entries of `a`, `c`'s parts as [`Lanes::coeff`] gives them
    /// (`fmaddsub`).
    unsafe fn mulc(self, re: Self::V, im: Self::V, a: Self::V) -> Self::V;
}

/// pulp's registers for the CPU (`S`). Coefficients carry the sign that x86's `addsub` and
/// `fmaddsub` flip ([`portable::signed_im`]): the sums by the imaginary parts are those of
/// the AVX-512 kernel with the real lanes negated, exactly, and `combine` subtracts them.
#[derive(Clone, Copy)]
struct Portable<S: Simd>(S);

impl<S: Simd> Lanes for Portable<S> {
    type V = S::f64s;
    const ENTRIES: usize = S::C64_LANES;
    #[inline(always)]
    unsafe fn splat(self, x: f64) -> S::f64s {
        self.0.splat_f64s(x)
    }
    #[inline(always)]
    unsafe fn load(self, p: *const f64) -> S::f64s {
        // SAFETY: a register's doubles are readable at p (the trait's contract); the register
        // type is plain doubles (`Pod`), read unaligned.
        unsafe { p.cast::<S::f64s>().read_unaligned() }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f64, v: S::f64s) {
        // SAFETY: a register's doubles are writable at p (the trait's contract); unaligned.
        unsafe { p.cast::<S::f64s>().write_unaligned(v) }
    }
    #[inline(always)]
    unsafe fn fmadd(self, a: S::f64s, b: S::f64s, c: S::f64s) -> S::f64s {
        self.0.mul_add_f64s(a, b, c)
    }
    #[inline(always)]
    unsafe fn mul(self, a: S::f64s, b: S::f64s) -> S::f64s {
        self.0.mul_f64s(a, b)
    }
    #[inline(always)]
    unsafe fn add(self, a: S::f64s, b: S::f64s) -> S::f64s {
        self.0.add_f64s(a, b)
    }
    #[inline(always)]
    unsafe fn coeff(self, x: c64) -> (S::f64s, S::f64s) {
        (self.0.splat_f64s(x.re), portable::signed_im(self.0, x.im))
    }
    #[inline(always)]
    unsafe fn combine(self, re_sums: S::f64s, im_sums: S::f64s) -> S::f64s {
        self.0.sub_f64s(re_sums, portable::swap(self.0, im_sums))
    }
    #[inline(always)]
    unsafe fn mulc(self, re: S::f64s, im: S::f64s, a: S::f64s) -> S::f64s {
        let t = self.0.mul_f64s(im, portable::swap(self.0, a));
        self.0.mul_add_f64s(re, a, t)
    }
}

/// [`gemv_cols`] over the rows `rows` of one block on pulp's registers: four columns a pass
/// (two registers a step, then one, then the rows left one by one), then the remaining
/// columns one at a time. Plain loops on pulp's `Scalar`.
struct Cols<'a> {
    y: &'a mut [c64],
    cols: &'a [&'a [c64]],
    x: &'a [c64],
    rows: std::ops::Range<usize>,
}

impl WithSimd for Cols<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Cols { y, cols, x, rows } = self;
        let (start, end, count) = setup(y, cols, x, rows);
        if !portable::vector::<S>() {
            for (col, &xj) in cols[..count].iter().zip(x) {
                for (yi, a) in y[start..end].iter_mut().zip(&col[start..end]) {
                    *yi += a * xj;
                }
            }
            return;
        }
        let l = Portable(simd);
        let py = y.as_mut_ptr().cast::<f64>();
        let mut j = 0;
        while j + 4 <= count {
            // SAFETY: `l` is pulp's proof of its registers' features; rows start..end exist in
            // y and in every column (`setup` clipped them), and y, borrowed exclusively,
            // overlaps no column (shared borrows).
            let k = unsafe {
                let (p, c) = columns4(l, cols, x, j);
                let k = four::<_, 2>(l, py, p, c, start, end);
                four::<_, 1>(l, py, p, c, k, end)
            };
            for t in j..j + 4 {
                for (yi, a) in y[k..end].iter_mut().zip(&cols[t][k..end]) {
                    *yi += a * x[t];
                }
            }
            j += 4;
        }
        for t in j..count {
            // SAFETY: as above, for one column.
            let k = unsafe {
                let (p, c) = column(l, cols, x, t);
                one(l, py, p, c, start, end)
            };
            for (yi, a) in y[k..end].iter_mut().zip(&cols[t][k..end]) {
                *yi += a * x[t];
            }
        }
    }
}

/// Four columns (`p`, their coefficients' broadcast parts `c`) added into `y` (at `py`)
/// over rows `k..`, `R` registers of each a step, while a step fits below `limit`: the
/// sums by the real parts go on top of `y`, those by the imaginary parts apart, combined
/// once a step. Returns the first row not done.
///
/// # Safety
/// Rows `k..limit` exist in `y` and in the four columns, and `y` overlaps none of them.
#[inline(always)]
unsafe fn four<L: Lanes, const R: usize>(
    l: L,
    py: *mut f64,
    p: [*const f64; 4],
    c: [(L::V, L::V); 4],
    mut k: usize,
    limit: usize,
) -> usize {
    let e = L::ENTRIES;
    while k + R * e <= limit {
        // SAFETY: register r of the step covers rows k + r·e .. k + (r + 1)·e ≤ limit
        // (doubles 2k + 2e·r ..), which exist in y and the columns (the contract); y
        // overlaps no column, so nothing aliases the stores.
        unsafe {
            let at = |r: usize| 2 * k + 2 * e * r;
            let mut re = [l.splat(0.0); R];
            let mut im = [l.splat(0.0); R];
            for r in 0..R {
                let a = l.load(p[0].add(at(r)));
                re[r] = l.fmadd(a, c[0].0, l.load(py.add(at(r))));
                im[r] = l.mul(a, c[0].1);
            }
            for t in 1..4 {
                for r in 0..R {
                    let a = l.load(p[t].add(at(r)));
                    re[r] = l.fmadd(a, c[t].0, re[r]);
                    im[r] = l.fmadd(a, c[t].1, im[r]);
                }
            }
            for r in 0..R {
                l.store(py.add(at(r)), l.combine(re[r], im[r]));
            }
        }
        k += R * e;
    }
    k
}

/// One column (`p`, its coefficient's broadcast parts `c`) added into `y` over rows `k..`,
/// one register a step while a step fits below `limit`. Returns the first row not done.
///
/// # Safety
/// As [`four`], for one column.
#[inline(always)]
unsafe fn one<L: Lanes>(
    l: L,
    py: *mut f64,
    p: *const f64,
    c: (L::V, L::V),
    mut k: usize,
    limit: usize,
) -> usize {
    while k + L::ENTRIES <= limit {
        // SAFETY: rows k..k + ENTRIES ≤ limit exist in y and the column (the contract).
        unsafe {
            let o = 2 * k;
            let v = l.mulc(c.0, c.1, l.load(p.add(o)));
            l.store(py.add(o), l.add(l.load(py.add(o)), v));
        }
        k += L::ENTRIES;
    }
    k
}

/// `(start, end, count)`: the rows of `rows` clipped to `y` and the shortest column, and
/// the number of columns that have a coefficient.
#[inline(always)]
fn setup(
    y: &[c64],
    cols: &[&[c64]],
    x: &[c64],
    rows: std::ops::Range<usize>,
) -> (usize, usize, usize) {
    let end = cols
        .iter()
        .fold(rows.end.min(y.len()), |e, c| e.min(c.len()));
    (rows.start.min(end), end, cols.len().min(x.len()))
}

/// Column `j`'s pointer and its coefficient `x[j]`, broadcast.
#[inline(always)]
fn column<L: Lanes>(l: L, cols: &[&[c64]], x: &[c64], j: usize) -> (*const f64, (L::V, L::V)) {
    // SAFETY: `l` proves its features; `coeff` needs nothing else.
    let c = unsafe { l.coeff(x[j]) };
    (cols[j].as_ptr().cast::<f64>(), c)
}

/// Four columns' pointers and their coefficients' broadcast parts.
type Group<L> = ([*const f64; 4], [(<L as Lanes>::V, <L as Lanes>::V); 4]);

/// Columns `j..j + 4`: their pointers and their coefficients' broadcast parts
/// ([`column`]); they exist in `cols` and `x` (bounds-checked).
///
/// A plain loop, not `[0, 1, 2, 3].map(…)`: where the compiler left that closure out of
/// line (as one unrelated change elsewhere in the crate made it do), each column became a
/// call that returned its broadcasts through memory and ended in a `vzeroupper`, four a
/// group of columns: Dense·ket at n = 100 1.88 → 2.41 µs.
#[inline(always)]
fn columns4<L: Lanes>(l: L, cols: &[&[c64]], x: &[c64], j: usize) -> Group<L> {
    let mut p = [std::ptr::null::<f64>(); 4];
    // SAFETY: `l` proves its features; `splat` needs nothing else.
    let zero = unsafe { l.splat(0.0) };
    let mut c = [(zero, zero); 4];
    for t in 0..4 {
        (p[t], c[t]) = column(l, cols, x, j + t);
    }
    (p, c)
}

#[cfg(target_arch = "x86_64")]
#[rustversion::since(1.89)]
mod avx {
    use std::arch::x86_64::*;

    use super::{Lanes, column, columns4, four, one, setup};
    use crate::scalar::c64;

    /// AVX-512F: four entries a register. `combine` is an `fmaddsub` by 1.0, which rounds as
    /// `addsub` (the product by 1.0 is exact). Constructed only where the CPU has AVX-512F.
    #[derive(Clone, Copy)]
    pub(super) struct Zmm(());

    impl Lanes for Zmm {
        type V = __m512d;
        const ENTRIES: usize = 4;
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn splat(self, x: f64) -> __m512d {
            _mm512_set1_pd(x)
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn load(self, p: *const f64) -> __m512d {
            // SAFETY: eight doubles are readable at p (the trait's contract); unaligned load.
            unsafe { _mm512_loadu_pd(p) }
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn store(self, p: *mut f64, v: __m512d) {
            // SAFETY: eight doubles are writable at p (the trait's contract); unaligned store.
            unsafe { _mm512_storeu_pd(p, v) }
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn fmadd(self, a: __m512d, b: __m512d, c: __m512d) -> __m512d {
            _mm512_fmadd_pd(a, b, c)
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn mul(self, a: __m512d, b: __m512d) -> __m512d {
            _mm512_mul_pd(a, b)
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn add(self, a: __m512d, b: __m512d) -> __m512d {
            _mm512_add_pd(a, b)
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn coeff(self, x: c64) -> (__m512d, __m512d) {
            (_mm512_set1_pd(x.re), _mm512_set1_pd(x.im))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn combine(self, re_sums: __m512d, im_sums: __m512d) -> __m512d {
            let swapped = _mm512_permute_pd::<0b0101_0101>(im_sums);
            _mm512_fmaddsub_pd(re_sums, _mm512_set1_pd(1.0), swapped)
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn mulc(self, re: __m512d, im: __m512d, a: __m512d) -> __m512d {
            _mm512_fmaddsub_pd(
                re,
                a,
                _mm512_mul_pd(im, _mm512_permute_pd::<0b0101_0101>(a)),
            )
        }
    }

    /// [`super::gemv_cols`] with AVX-512: the rows of `rows` in steps of eight (two registers
    /// a column). Returns the first row left undone (fewer than eight remain), for the
    /// portable kernel.
    #[target_feature(enable = "avx512f")]
    pub(super) fn cols_avx512(
        y: &mut [c64],
        cols: &[&[c64]],
        x: &[c64],
        rows: std::ops::Range<usize>,
    ) -> usize {
        let (start, end, count) = setup(y, cols, x, rows);
        let stop = start + (end - start) / 8 * 8;
        let py = y.as_mut_ptr().cast::<f64>();
        let l = Zmm(());
        let mut j = 0;
        while j + 4 <= count {
            // SAFETY: the CPU has AVX-512F (this function's feature); rows start..stop exist
            // in y and in every column, and y overlaps no column (as in the portable kernel).
            unsafe {
                let (p, c) = columns4(l, cols, x, j);
                four::<Zmm, 2>(l, py, p, c, start, stop);
            }
            j += 4;
        }
        for t in j..count {
            // SAFETY: as above, for one column; `stop − start` is a multiple of four.
            unsafe {
                let (p, c) = column(l, cols, x, t);
                one(l, py, p, c, start, stop);
            }
        }
        stop
    }
}
