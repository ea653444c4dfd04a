//! The column-major matrix–vector product `y ← y + Σⱼ xⱼ·a[j]`: Dense·ket, `matmul_dag` with a
//! bra on the right, the `O·ψ` of a Dense `expect`. One kernel body, generic over the register
//! width ([`Lanes`]): AVX2 + FMA (two entries a register) and, where the CPU has it (on Intel
//! CPUs only for a matrix that fits in L2), AVX-512F (four). Both widths do the same
//! operations per entry in the same order, so their results are the same to the bit.

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
        #[cfg(target_arch = "x86_64")]
        if super::avx2() {
            // Rows in steps of eight on AVX-512 where it runs and pays, the rest on AVX2.
            let first = if wide {
                wide_rows(y, cols, x, rows.clone())
            } else {
                rows.start
            };
            // SAFETY: the CPU has AVX2 and FMA, the features the kernel is compiled for.
            unsafe { avx::cols_avx2(y, cols, x, first..rows.end) };
            continue;
        }
        for (col, &xj) in cols.iter().zip(x) {
            for (yi, a) in y[rows.clone()].iter_mut().zip(&col[rows.clone()]) {
                *yi += a * xj;
            }
        }
    }
}

/// [`gemv_cols`] on AVX-512 over the rows of `rows` in steps of eight, where it runs; returns
/// the first row left for the AVX2 kernel (`rows.start` where none were done).
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

/// A build by Rust 1.88 has no AVX-512 kernels: every row goes to the AVX2 one.
#[cfg(target_arch = "x86_64")]
#[rustversion::before(1.89)]
fn wide_rows(_: &mut [c64], _: &[&[c64]], _: &[c64], rows: std::ops::Range<usize>) -> usize {
    rows.start
}

#[cfg(target_arch = "x86_64")]
mod avx {
    use std::arch::x86_64::*;

    use crate::scalar::c64;

    /// A register width for vectors of interleaved `[re, im]` doubles.
    ///
    /// # Safety
    /// Every method needs the CPU features of its width; `load` and `store` need `ENTRIES`
    /// entries (2·`ENTRIES` doubles) readable or writable at the pointer.
    pub(super) trait Lanes {
        /// The register.
        type V: Copy;
        /// Complex entries a register holds.
        const ENTRIES: usize;
        unsafe fn splat(x: f64) -> Self::V;
        unsafe fn load(p: *const f64) -> Self::V;
        unsafe fn store(p: *mut f64, v: Self::V);
        unsafe fn fmadd(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
        unsafe fn mul(a: Self::V, b: Self::V) -> Self::V;
        unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
        /// `y + Σ a·re` and `Σ a·im` (`a` the columns' entries, `re + i·im` their
        /// coefficients) combined into `y + Σ a·(re + i·im)`: the real part subtracts the
        /// swapped imaginary sums' first lane, the imaginary part adds its second.
        unsafe fn combine(re_sums: Self::V, im_sums: Self::V) -> Self::V;
        /// `c·a` for the entries of `a`, `c = re + i·im` broadcast.
        unsafe fn mulc(re: Self::V, im: Self::V, a: Self::V) -> Self::V;
    }

    /// AVX2 + FMA: two entries a register.
    pub(super) struct Ymm;

    impl Lanes for Ymm {
        type V = __m256d;
        const ENTRIES: usize = 2;
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn splat(x: f64) -> __m256d {
            _mm256_set1_pd(x)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn load(p: *const f64) -> __m256d {
            // SAFETY: four doubles are readable at p (the trait's contract); unaligned load.
            unsafe { _mm256_loadu_pd(p) }
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn store(p: *mut f64, v: __m256d) {
            // SAFETY: four doubles are writable at p (the trait's contract); unaligned store.
            unsafe { _mm256_storeu_pd(p, v) }
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn fmadd(a: __m256d, b: __m256d, c: __m256d) -> __m256d {
            _mm256_fmadd_pd(a, b, c)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn mul(a: __m256d, b: __m256d) -> __m256d {
            _mm256_mul_pd(a, b)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn add(a: __m256d, b: __m256d) -> __m256d {
            _mm256_add_pd(a, b)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn combine(re_sums: __m256d, im_sums: __m256d) -> __m256d {
            _mm256_addsub_pd(re_sums, _mm256_permute_pd::<0b0101>(im_sums))
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn mulc(re: __m256d, im: __m256d, a: __m256d) -> __m256d {
            _mm256_fmaddsub_pd(re, a, _mm256_mul_pd(im, _mm256_permute_pd::<0b0101>(a)))
        }
    }

    /// AVX-512F: four entries a register. `combine` is an `fmaddsub` by 1.0, which rounds as
    /// AVX2's `addsub` (the product by 1.0 is exact).
    #[rustversion::since(1.89)]
    pub(super) struct Zmm;

    #[rustversion::since(1.89)]
    impl Lanes for Zmm {
        type V = __m512d;
        const ENTRIES: usize = 4;
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn splat(x: f64) -> __m512d {
            _mm512_set1_pd(x)
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn load(p: *const f64) -> __m512d {
            // SAFETY: eight doubles are readable at p (the trait's contract); unaligned load.
            unsafe { _mm512_loadu_pd(p) }
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn store(p: *mut f64, v: __m512d) {
            // SAFETY: eight doubles are writable at p (the trait's contract); unaligned store.
            unsafe { _mm512_storeu_pd(p, v) }
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn fmadd(a: __m512d, b: __m512d, c: __m512d) -> __m512d {
            _mm512_fmadd_pd(a, b, c)
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn mul(a: __m512d, b: __m512d) -> __m512d {
            _mm512_mul_pd(a, b)
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn add(a: __m512d, b: __m512d) -> __m512d {
            _mm512_add_pd(a, b)
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn combine(re_sums: __m512d, im_sums: __m512d) -> __m512d {
            let swapped = _mm512_permute_pd::<0b0101_0101>(im_sums);
            _mm512_fmaddsub_pd(re_sums, _mm512_set1_pd(1.0), swapped)
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn mulc(re: __m512d, im: __m512d, a: __m512d) -> __m512d {
            _mm512_fmaddsub_pd(
                re,
                a,
                _mm512_mul_pd(im, _mm512_permute_pd::<0b0101_0101>(a)),
            )
        }
    }

    /// Four columns (`p`, their coefficients' broadcast parts `c`) added into `y` (at `py`)
    /// over rows `k..`, `R` registers of each a step, while a step fits below `limit`: the
    /// sums by the real parts go on top of `y`, those by the imaginary parts apart, combined
    /// once a step. Returns the first row not done.
    ///
    /// # Safety
    /// The CPU has `L`'s features; rows `k..limit` exist in `y` and in the four columns, and
    /// `y` overlaps none of them.
    #[inline(always)]
    unsafe fn four<L: Lanes, const R: usize>(
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
                let mut re = [L::splat(0.0); R];
                let mut im = [L::splat(0.0); R];
                for r in 0..R {
                    let a = L::load(p[0].add(at(r)));
                    re[r] = L::fmadd(a, c[0].0, L::load(py.add(at(r))));
                    im[r] = L::mul(a, c[0].1);
                }
                for t in 1..4 {
                    for r in 0..R {
                        let a = L::load(p[t].add(at(r)));
                        re[r] = L::fmadd(a, c[t].0, re[r]);
                        im[r] = L::fmadd(a, c[t].1, im[r]);
                    }
                }
                for r in 0..R {
                    L::store(py.add(at(r)), L::combine(re[r], im[r]));
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
                let v = L::mulc(c.0, c.1, L::load(p.add(o)));
                L::store(py.add(o), L::add(L::load(py.add(o)), v));
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
    ///
    /// # Safety
    /// The CPU has `L`'s features.
    #[inline(always)]
    unsafe fn column<L: Lanes>(cols: &[&[c64]], x: &[c64], j: usize) -> (*const f64, (L::V, L::V)) {
        // SAFETY: the CPU has L's features (the contract).
        let c = unsafe { (L::splat(x[j].re), L::splat(x[j].im)) };
        (cols[j].as_ptr().cast::<f64>(), c)
    }

    /// Four columns' pointers and their coefficients' broadcast parts.
    type Group<L> = ([*const f64; 4], [(<L as Lanes>::V, <L as Lanes>::V); 4]);

    /// Columns `j..j + 4`: their pointers and their coefficients' broadcast parts
    /// ([`column`]).
    ///
    /// A plain loop, not `[0, 1, 2, 3].map(…)`: where the compiler left that closure out of
    /// line (as one unrelated change elsewhere in the crate made it do), each column became a
    /// call that returned its broadcasts through memory and ended in a `vzeroupper`, four a
    /// group of columns: Dense·ket at n = 100 1.88 → 2.41 µs.
    ///
    /// # Safety
    /// The CPU has `L`'s features; columns `j..j + 4` exist in `cols` and `x`.
    #[inline(always)]
    unsafe fn columns4<L: Lanes>(cols: &[&[c64]], x: &[c64], j: usize) -> Group<L> {
        let mut p = [std::ptr::null::<f64>(); 4];
        // SAFETY: the CPU has L's features (the contract); `splat` needs nothing else.
        let zero = unsafe { L::splat(0.0) };
        let mut c = [(zero, zero); 4];
        for t in 0..4 {
            // SAFETY: the CPU has L's features (the contract).
            (p[t], c[t]) = unsafe { column::<L>(cols, x, j + t) };
        }
        (p, c)
    }

    /// `y ← y + Σⱼ xⱼ·a[j]` over the rows `rows` with AVX2: four columns a pass (two registers
    /// a step, then one, then the last row alone), then the remaining columns one at a time.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn cols_avx2(
        y: &mut [c64],
        cols: &[&[c64]],
        x: &[c64],
        rows: std::ops::Range<usize>,
    ) {
        let (start, end, count) = setup(y, cols, x, rows);
        let py = y.as_mut_ptr().cast::<f64>();
        let mut j = 0;
        while j + 4 <= count {
            // SAFETY: the CPU has AVX2 and FMA (this function's features); rows start..end
            // exist in y and in every column (`setup` clipped them), and y, borrowed
            // exclusively, overlaps no column (shared borrows).
            let k = unsafe {
                let (p, c) = columns4::<Ymm>(cols, x, j);
                let k = four::<Ymm, 2>(py, p, c, start, end);
                four::<Ymm, 1>(py, p, c, k, end)
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
                let (p, c) = column::<Ymm>(cols, x, t);
                one::<Ymm>(py, p, c, start, end)
            };
            for (yi, a) in y[k..end].iter_mut().zip(&cols[t][k..end]) {
                *yi += a * x[t];
            }
        }
    }

    /// [`cols_avx2`] with AVX-512: the rows of `rows` in steps of eight (two registers a
    /// column). Returns the first row left undone (fewer than eight remain), for the AVX2
    /// kernel.
    #[rustversion::since(1.89)]
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
        let mut j = 0;
        while j + 4 <= count {
            // SAFETY: the CPU has AVX-512F (this function's feature); rows start..stop exist
            // in y and in every column, and y overlaps no column (as in `cols_avx2`).
            unsafe {
                let (p, c) = columns4::<Zmm>(cols, x, j);
                four::<Zmm, 2>(py, p, c, start, stop);
            }
            j += 4;
        }
        for t in j..count {
            // SAFETY: as above, for one column; `stop − start` is a multiple of four.
            unsafe {
                let (p, c) = column::<Zmm>(cols, x, t);
                one::<Zmm>(py, p, c, start, stop);
            }
        }
        stop
    }
}
