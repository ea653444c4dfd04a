//! Products of small Dense matrices with each result column held in registers.
//!
//! faer's gemm takes about 0.85 µs for a 10×10·10×10 product (its
//! packing and dispatch are sized for large matrices), while the multiply-adds need about a
//! fifth of that. Here a result column of up to [`MAX_ROWS`] rows is a set of AVX2
//! accumulators: A's columns are read where they lie when their row count is even
//! ([`Operand::direct`]) or copied once, zero-padded to whole registers ([`Operand::padded`]),
//! and each column of B costs one broadcast pair and two FMAs per register per inner index
//! ([`column`]), written straight into the result's uninitialised column. On a CPU with
//! AVX-512F, and in a build by Rust 1.89 or later (where its intrinsics are stable), the
//! products of several columns ([`columns`]) hold four entries a register instead of two:
//! half the FMAs, each at the same throughput on cores with two 512-bit FMA ports,
//! with results identical to the bit (the same FMAs in the same order, per entry).
//!
//! x86-64 only, in `std::arch`: the kernels are sized for the 16 AVX2 registers and have an
//! AVX-512 twin that must give their results to the bit, which pulp's portable API (its
//! AVX-512 needs Rust 1.89, past the MSRV) cannot pair. Elsewhere (aarch64) these products go
//! to faer's gemm, whose own kernels take NEON.

use std::marker::PhantomData;
use std::mem::MaybeUninit;

use faer::MatRef;

use crate::scalar::{ZERO, c64};

/// The most rows of A (and of the result): six registers of sums by the real parts and six by
/// the imaginary parts, with the two broadcasts and a load, fit the 16 AVX2 registers.
pub(crate) const MAX_ROWS: usize = 12;

/// The most columns of A: its padded copy lives on the stack (at most 12 KiB).
pub(crate) const MAX_INNER: usize = 64;

/// Room for A's padded copy.
pub(crate) type PadBuf = [MaybeUninit<c64>; MAX_ROWS * MAX_INNER];

/// A as [`column`] reads it: `p` columns of `m` rows, column `k` starting `k·stride` entries
/// after `ptr`, each followed by a zero when `m` is odd (so every column fills whole
/// registers).
#[derive(Clone, Copy)]
// Only the x86-64 kernels read the operand (elsewhere none is made).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) struct Operand<'a> {
    ptr: *const c64,
    stride: usize,
    m: usize,
    p: usize,
    _borrow: PhantomData<&'a c64>,
}

// SAFETY: an `Operand` is a shared, read-only borrow of `c64` values for `'a`, as a `&'a [c64]`
// would be: sending or sharing it across threads is as safe as sending or sharing that borrow.
unsafe impl Send for Operand<'_> {}
// SAFETY: as for `Send`: nothing is written through the pointer.
unsafe impl Sync for Operand<'_> {}

impl<'a> Operand<'a> {
    /// A read where it lies, without a copy: needs an even row count (no padding) and unit row
    /// stride. `None` otherwise, when `m` or `p` is 0 or out of range, or when the CPU lacks
    /// AVX2 and FMA (the caller then takes its general product).
    pub(crate) fn direct(a: MatRef<'a, c64>) -> Option<Operand<'a>> {
        let (m, p) = (a.nrows(), a.ncols());
        if !in_range(m, p) || m % 2 != 0 || a.row_stride() != 1 {
            return None;
        }
        Some(Operand {
            ptr: a.as_ptr(),
            stride: usize::try_from(a.col_stride()).ok().filter(|&s| s >= m)?,
            m,
            p,
            _borrow: PhantomData,
        })
    }

    /// A read in place where it can be ([`direct`](Self::direct)), else copied into `buf`
    /// ([`padded`](Self::padded), `a_col(k)` being column `k` of `a`). `None` as for
    /// [`padded`](Self::padded).
    pub(crate) fn of(
        a: MatRef<'a, c64>,
        buf: &'a mut PadBuf,
        a_col: impl Fn(usize) -> &'a [c64],
    ) -> Option<Operand<'a>> {
        match Operand::direct(a) {
            Some(ap) => Some(ap),
            None => Operand::padded(buf, (a.nrows(), a.ncols()), a_col),
        }
    }

    /// A's `p` columns (`a_col(k)`, each at least `m` long), each zero-padded to an even
    /// length, copied into `buf`. `None` as for [`direct`](Self::direct), odd `m` allowed.
    pub(crate) fn padded(
        buf: &'a mut PadBuf,
        (m, p): (usize, usize),
        a_col: impl Fn(usize) -> &'a [c64],
    ) -> Option<Operand<'a>> {
        if !in_range(m, p) {
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
        // The loop wrote the first p·w elements (all w of each of the p columns), and
        // p·w ≤ MAX_INNER·MAX_ROWS, the buffer's length.
        Some(Operand {
            ptr: buf.as_ptr().cast::<c64>(),
            stride: w,
            m,
            p,
            _borrow: PhantomData,
        })
    }

    /// A of `m` rows and `p` columns from its entries in row-major order (`values[i·p + k]` =
    /// A[i, k]: a Csr that stores every entry, whose rows then hold columns 0..p in order),
    /// laid out in `buf` as [`padded`](Self::padded) lays out its copy: a small sparse A whose
    /// product takes the register kernel. `None` as for [`padded`](Self::padded).
    ///
    /// # Panics
    /// If `values` does not hold m·p entries (a caller's bug).
    pub(crate) fn from_row_major(
        buf: &'a mut PadBuf,
        (m, p): (usize, usize),
        values: &[c64],
    ) -> Option<Operand<'a>> {
        if !in_range(m, p) {
            return None;
        }
        assert_eq!(values.len(), m * p, "gemm::from_row_major: wrong length");
        let w = m.next_multiple_of(2);
        // p·w ≤ MAX_INNER·MAX_ROWS, the buffer's length (`in_range`).
        let cells = &mut buf[..p * w];
        for (i, row) in values.chunks_exact(p).enumerate() {
            for (column, &v) in cells.chunks_exact_mut(w).zip(row) {
                column[i].write(v);
            }
        }
        if w > m {
            for column in cells.chunks_exact_mut(w) {
                column[m].write(ZERO);
            }
        }
        // Every one of the p·w cells is written: rows 0..m from `values`, row m (odd m) zero.
        Some(Operand {
            ptr: buf.as_ptr().cast::<c64>(),
            stride: w,
            m,
            p,
            _borrow: PhantomData,
        })
    }

    /// A's row count (the result column's length).
    pub(crate) fn rows(&self) -> usize {
        self.m
    }
}

/// Whether a product with `m` rows and `p` inner columns takes the register kernel here.
fn in_range(m: usize, p: usize) -> bool {
    (1..=MAX_ROWS).contains(&m) && (1..=MAX_INNER).contains(&p) && super::avx2()
}

/// `c = Σₖ a_k·b[k]` (all `m` rows of `c` written), with `b.len()` = A's column count.
///
/// # Panics
/// If `b` does not have A's column count or `c` does not have its row count: a caller's bug.
pub(crate) fn column(a: &Operand<'_>, b: &[c64], c: &mut [MaybeUninit<c64>]) {
    assert!(
        b.len() == a.p && c.len() == a.m,
        "gemm::column: operands of the wrong size"
    );
    #[cfg(target_arch = "x86_64")]
    {
        let kernel = match a.m.div_ceil(2) {
            1 => avx::column::<1>,
            2 => avx::column::<2>,
            3 => avx::column::<3>,
            4 => avx::column::<4>,
            5 => avx::column::<5>,
            _ => avx::column::<6>,
        };
        // SAFETY: an `Operand` exists only on a CPU with AVX2 and FMA; column k of A holds
        // 2H = m rounded up to even readable entries at ptr + k·stride (a padded copy, or an
        // even m in a matrix the `Operand` borrows), for k < p = b.len(); c has m entries.
        unsafe { kernel(a.ptr, a.stride, b, c) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("an Operand is only made on x86-64 with AVX2")
}

/// [`column`] for `n` columns of B in one call (the kernel chosen once, no slices made per
/// column): column j of the result from column j of B.
///
/// # Safety
/// For every j < n, A's column count of entries are readable at `b + j·bs` and A's row count
/// of entries writable at `c + j·cs`; the result's columns overlap neither one another, A,
/// nor B.
pub(crate) unsafe fn columns(
    a: &Operand<'_>,
    (b, bs): (*const c64, usize),
    (c, cs): (*mut c64, usize),
    n: usize,
) {
    #[cfg(target_arch = "x86_64")]
    {
        let kernel = wide_columns(a.m).unwrap_or(match a.m.div_ceil(2) {
            1 => avx::columns::<1>,
            2 => avx::columns::<2>,
            3 => avx::columns::<3>,
            4 => avx::columns::<4>,
            5 => avx::columns::<5>,
            _ => avx::columns::<6>,
        });
        // SAFETY: an `Operand` exists only on a CPU with AVX2 and FMA, with 2H = m rounded up
        // to even readable entries in each of its p columns (as for `column`); B's and the
        // result's columns as this function's contract.
        unsafe { kernel(a, (b, bs), (c.cast(), cs), n) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (a, b, bs, c, cs, n);
        unreachable!("an Operand is only made on x86-64 with AVX2")
    }
}

/// [`columns`]' kernel for `m` rows.
#[cfg(target_arch = "x86_64")]
type ColumnsKernel =
    unsafe fn(&Operand<'_>, (*const c64, usize), (*mut MaybeUninit<c64>, usize), usize);

/// The fewest rows that take the AVX-512 kernel. Square products, one thread, µs a call
/// through the dispatcher (`profile_op matmul dense`), AVX2 → AVX-512: m = 3: 0.099–0.100 →
/// 0.110–0.112, 5: 0.120–0.131 → 0.134–0.138, 6: 0.120 → 0.125, 7: 0.161 → 0.152–0.159,
/// 8: 0.163 → 0.143–0.145, 10: 0.239–0.240 → 0.195–0.197, 12: 0.335–0.336 → 0.236–0.237.
#[cfg(target_arch = "x86_64")]
#[rustversion::since(1.89)]
const WIDE_MIN_ROWS: usize = 7;

/// The AVX-512 kernel of [`columns`] for [`WIDE_MIN_ROWS`] ≤ `m` ≤ [`MAX_ROWS`] rows, when the
/// CPU has AVX-512F (`None` otherwise, and in tests run by `simd::without_avx512`).
#[cfg(target_arch = "x86_64")]
#[rustversion::since(1.89)]
fn wide_columns(m: usize) -> Option<ColumnsKernel> {
    if m < WIDE_MIN_ROWS || !super::avx512_small_products() {
        return None;
    }
    // Columns of B a call takes together: at least eight independent sums (2H·J).
    Some(match m.div_ceil(4) {
        2 => avx::columns512::<2, 2>,
        _ => avx::columns512::<3, 2>,
    })
}

/// Whether the AVX-512 kernel of [`columns`] beats the AVX2 one by 5 % on this CPU: a
/// 10 × 10 · 10 × 10 product timed with each, 32 calls a round, seven rounds in turn, the
/// fastest round of each compared. Needs AVX-512F and AVX2 + FMA (the caller checks).
#[cfg(all(target_arch = "x86_64", not(test)))]
#[rustversion::since(1.89)]
pub(super) fn wide_pays() -> bool {
    use std::time::{Duration, Instant};
    const M: usize = 10;
    let a = faer::Mat::<c64>::from_fn(M, M, |i, k| {
        c64::new(1.0 / (1 + i + k) as f64, 0.5 / (1 + i * k) as f64)
    });
    let b: Vec<c64> = (0..M * M)
        .map(|k| c64::new(0.25 * (k % 3) as f64, -0.5 / (1 + k % 4) as f64))
        .collect();
    let mut c = vec![MaybeUninit::<c64>::uninit(); M * M];
    let Some(op) = Operand::direct(a.as_ref()) else {
        return false;
    };
    let mut best = [Duration::MAX; 2];
    for _ in 0..7 {
        for (w, t_best) in best.iter_mut().enumerate() {
            let t = Instant::now();
            for _ in 0..32 {
                // SAFETY: the CPU has AVX-512F, AVX2 and FMA (the caller checked); B's 10
                // columns of 10 entries at stride 10, the result's likewise, apart.
                unsafe {
                    let (bp, cp) = ((b.as_ptr(), M), (c.as_mut_ptr(), M));
                    if w == 1 {
                        avx::columns512::<3, 2>(&op, bp, cp, M);
                    } else {
                        avx::columns::<5>(&op, bp, cp, M);
                    }
                }
                std::hint::black_box(&mut c);
            }
            *t_best = (*t_best).min(t.elapsed());
        }
    }
    best[1].as_nanos() * 100 < best[0].as_nanos() * 95
}

/// No AVX-512 outside x86-64 (where nothing asks: the small products' kernels are x86-64's).
#[cfg(all(not(target_arch = "x86_64"), not(test)))]
#[rustversion::since(1.89)]
#[allow(dead_code)]
pub(super) fn wide_pays() -> bool {
    false
}

/// A build by Rust 1.88 has no AVX-512 intrinsics: always the AVX2 kernel.
#[cfg(target_arch = "x86_64")]
#[rustversion::before(1.89)]
fn wide_columns(_m: usize) -> Option<ColumnsKernel> {
    None
}

#[cfg(target_arch = "x86_64")]
mod avx {
    use std::arch::x86_64::*;
    use std::mem::MaybeUninit;

    use crate::scalar::c64;

    /// One result column, `c = Σₖ a[k]·b[k]` with `a[k]` the k-th column of A (2H entries
    /// from `a + k·stride`, the last possibly padding). The sums by B's real parts and by its
    /// imaginary parts are kept apart and combined once at the end (`addsub` of one and the
    /// other with its lanes swapped).
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA; 2H entries are readable from `a + k·stride` for every
    /// `k < b.len()`; `c.len()` is `2H` or `2H − 1`.
    /// [`column`] over `n` columns (`super::columns`).
    ///
    /// # Safety
    /// As [`super::columns`], `H` being A's row count halved and rounded up.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn columns<const H: usize>(
        a: &super::Operand<'_>,
        (b, bs): (*const c64, usize),
        (c, cs): (*mut MaybeUninit<c64>, usize),
        n: usize,
    ) {
        for j in 0..n {
            // SAFETY: column j of B has A's column count p of readable entries at b + j·bs,
            // and column j of the result m writable ones at c + j·cs, not overlapping B (the
            // caller's contract); A's columns as `column` needs them (an `Operand`).
            unsafe {
                let bj = std::slice::from_raw_parts(b.add(j * bs), a.p);
                let cj = std::slice::from_raw_parts_mut(c.add(j * cs), a.m);
                column::<H>(a.ptr, a.stride, bj, cj);
            }
        }
    }

    /// [`columns`] with four entries a register: `H` = ⌈m / 4⌉ ≤ 3 registers of sums by B's
    /// real parts and as many by its imaginary parts, for `J` columns of B at a time (2H·J
    /// independent sums: with one column, the six sums of a 10-row product wait on the FMAs'
    /// latency, 4 cycles, rather than their throughput). A's columns hold m rounded up to even
    /// readable entries, so the last register of a column is loaded under a mask of 2 or 4
    /// entries, and the result's last register stored under a mask of its 1 to 4 entries.
    /// Each entry's sums are the AVX2 kernel's (the same FMAs in the same order), and the final
    /// `fmaddsub` by 1.0 rounds as its `addsub` does: the results are the same to the bit.
    ///
    /// # Safety
    /// As [`super::columns`], `H` being A's row count divided by four and rounded up; the CPU
    /// has AVX-512F.
    #[rustversion::since(1.89)]
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn columns512<const H: usize, const J: usize>(
        a: &super::Operand<'_>,
        (b, bs): (*const c64, usize),
        (c, cs): (*mut MaybeUninit<c64>, usize),
        n: usize,
    ) {
        let mut j = 0;
        while j + J <= n {
            // SAFETY: columns j..j + J of B and of the result, j + J ≤ n, as the caller's
            // contract gives them.
            unsafe { block512::<H, J>(a, (b.add(j * bs), bs), (c.add(j * cs), cs)) };
            j += J;
        }
        while j < n {
            // SAFETY: as above, column j < n.
            unsafe { block512::<H, 1>(a, (b.add(j * bs), bs), (c.add(j * cs), cs)) };
            j += 1;
        }
    }

    /// `J` result columns from the first `J` columns of B at `b` (stride `bs`), written at `c`
    /// (stride `cs`).
    ///
    /// # Safety
    /// As [`columns512`] for `n` = `J`.
    #[rustversion::since(1.89)]
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn block512<const H: usize, const J: usize>(
        a: &super::Operand<'_>,
        (b, bs): (*const c64, usize),
        (c, cs): (*mut MaybeUninit<c64>, usize),
    ) {
        let pa = a.ptr.cast::<f64>();
        // Entries readable in the last register of a column (2 or 4), written in the last
        // register of a result column (1 to 4); two lanes an entry.
        let readable = a.m.next_multiple_of(2) - 4 * (H - 1);
        let written = a.m - 4 * (H - 1);
        let load_mask: __mmask8 = if readable == 4 { 0xFF } else { 0x0F };
        let store_mask: __mmask8 = (0xFFu16 >> (8 - 2 * written)) as u8;
        let mut re = [[_mm512_setzero_pd(); H]; J];
        let mut im = [[_mm512_setzero_pd(); H]; J];
        for k in 0..a.p {
            // SAFETY: doubles 2k·stride + 8h.. are entries 4h.. of A's column k, of which the
            // full registers (h < H − 1) cover 4 readable entries and the last one `readable`
            // under its mask (masked-off lanes are not accessed); entry k of B's columns
            // 0..J is readable (k < p, the caller's contract).
            unsafe {
                let col = pa.add(2 * k * a.stride);
                let mut x = [_mm512_setzero_pd(); H];
                for (h, x) in x.iter_mut().enumerate() {
                    *x = if h + 1 < H {
                        _mm512_loadu_pd(col.add(8 * h))
                    } else {
                        _mm512_maskz_loadu_pd(load_mask, col.add(8 * h))
                    };
                }
                for t in 0..J {
                    let v = *b.add(t * bs + k);
                    let (br, bi) = (_mm512_set1_pd(v.re), _mm512_set1_pd(v.im));
                    for h in 0..H {
                        re[t][h] = _mm512_fmadd_pd(x[h], br, re[t][h]);
                        im[t][h] = _mm512_fmadd_pd(x[h], bi, im[t][h]);
                    }
                }
            }
        }
        let one = _mm512_set1_pd(1.0);
        for t in 0..J {
            // SAFETY: result column t has m writable entries at c + t·cs (the caller's
            // contract): the full registers cover entries 4h..4h + 4 ≤ m, the last one its
            // `written` entries under the mask.
            unsafe {
                let pc = c.add(t * cs).cast::<f64>();
                for h in 0..H {
                    // Even lanes re − swapped im (real parts), odd lanes re + swapped im.
                    let swapped = _mm512_permute_pd::<0b0101_0101>(im[t][h]);
                    let v = _mm512_fmaddsub_pd(re[t][h], one, swapped);
                    if h + 1 < H {
                        _mm512_storeu_pd(pc.add(8 * h), v);
                    } else {
                        _mm512_mask_storeu_pd(pc.add(8 * h), store_mask, v);
                    }
                }
            }
        }
    }

    #[target_feature(enable = "avx2,fma")]
    #[inline]
    pub(super) unsafe fn column<const H: usize>(
        a: *const c64,
        stride: usize,
        b: &[c64],
        c: &mut [MaybeUninit<c64>],
    ) {
        let pa = a.cast::<f64>();
        let mut re = [_mm256_setzero_pd(); H];
        let mut im = [_mm256_setzero_pd(); H];
        for (k, v) in b.iter().enumerate() {
            let (br, bi) = (_mm256_set1_pd(v.re), _mm256_set1_pd(v.im));
            for h in 0..H {
                // SAFETY: doubles 2k·stride + 4h..+4 are entries 2h and 2h + 1 of column k,
                // readable by the caller's contract (h < H, k < b.len()).
                let x = unsafe { _mm256_loadu_pd(pa.add(2 * k * stride + 4 * h)) };
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

    /// A from its row-major entries is laid out as the padded copy of its columns, cell for
    /// cell (the padding row of an odd m zero).
    #[test]
    fn row_major_entries_lay_out_as_the_padded_columns() {
        let mut want = [MaybeUninit::uninit(); MAX_ROWS * MAX_INNER];
        let mut got = [MaybeUninit::new(c64::new(f64::NAN, 0.0)); MAX_ROWS * MAX_INNER];
        for m in 1..=MAX_ROWS {
            for p in [1, 2, 3, 7, 16, MAX_INNER] {
                let rows: Vec<c64> = (0..m * p).map(|x| value(x, 3)).collect();
                let cols: Vec<Vec<c64>> = (0..p)
                    .map(|k| (0..m).map(|i| rows[i * p + k]).collect())
                    .collect();
                let Some(a) = Operand::padded(&mut want, (m, p), |k| &cols[k]) else {
                    assert!(!crate::simd::avx2());
                    return;
                };
                let b = Operand::from_row_major(&mut got, (m, p), &rows).unwrap();
                assert_eq!((a.stride, a.m, a.p), (b.stride, b.m, b.p));
                let cells = a.stride * p;
                // SAFETY: both operands wrote their first stride·p cells.
                let (a, b) = unsafe {
                    (
                        std::slice::from_raw_parts(a.ptr, cells),
                        std::slice::from_raw_parts(b.ptr, cells),
                    )
                };
                assert_eq!(a, b, "{m}×{p}");
            }
        }
        assert!(Operand::from_row_major(&mut got, (13, 1), &[ZERO; 13]).is_none());
        assert!(Operand::from_row_major(&mut got, (1, 65), &[ZERO; 65]).is_none());
    }

    /// Every register count (m = 1..=12, odd and even) and inner sizes up to the limit agree
    /// with the definition to rounding, through a padded copy and (even m) read in place from
    /// a matrix with padded columns; they write the column's m entries and nothing past them;
    /// out-of-range sizes and odd m read in place are declined.
    #[test]
    fn small_products_match_the_definition() {
        let mut buf = [MaybeUninit::uninit(); MAX_ROWS * MAX_INNER];
        for m in 1..=MAX_ROWS {
            for p in [1, 2, 3, 7, 16, MAX_INNER] {
                let a: Vec<Vec<c64>> = (0..p)
                    .map(|k| (0..m).map(|i| value(i * p + k, 1)).collect())
                    .collect();
                // The same A in a faer matrix, viewed as the top m rows of m + 3 (stride > m).
                let tall = faer::Mat::<c64>::from_fn(m + 3, p, |i, k| {
                    if i < m {
                        a[k][i]
                    } else {
                        c64::new(f64::NAN, 0.0)
                    }
                });
                let direct = Operand::direct(tall.as_ref().subrows(0, m));
                assert_eq!(
                    direct.is_some(),
                    m % 2 == 0 && crate::simd::avx2(),
                    "{m}×{p}"
                );
                let Some(padded) = Operand::padded(&mut buf, (m, p), |k| &a[k]) else {
                    assert!(!crate::simd::avx2());
                    return;
                };
                for op in [Some(padded), direct].into_iter().flatten() {
                    for j in 0..3 {
                        let b: Vec<c64> = (0..p).map(|k| value(k * 3 + j, 2)).collect();
                        let sentinel = c64::new(-7.0, 7.0);
                        let mut c = vec![MaybeUninit::new(sentinel); m + 1];
                        column(&op, &b, &mut c[..m]);
                        // SAFETY: every element was initialised above (and rows < m again).
                        let c: Vec<c64> = c.iter().map(|x| unsafe { x.assume_init() }).collect();
                        for i in 0..m {
                            let want: c64 = (0..p).map(|k| a[k][i] * b[k]).sum();
                            let tol = 1e-13 * 50.0 * p as f64;
                            assert!((c[i] - want).norm() <= tol, "{m}×{p} row {i}");
                        }
                        assert_eq!(c[m], sentinel, "{m}×{p}: wrote past the column");
                    }
                }
            }
        }
        let none: [c64; 0] = [];
        assert!(Operand::padded(&mut buf, (13, 2), |_| &none).is_none());
        assert!(Operand::padded(&mut buf, (2, 65), |_| &none).is_none());
        assert!(Operand::padded(&mut buf, (0, 2), |_| &none).is_none());
        let row_major = faer::Mat::<c64>::zeros(2, 4);
        assert!(Operand::direct(row_major.as_ref().transpose()).is_none());
    }

    /// [`columns`] (AVX-512 where the CPU has it, and under `without_avx512` the AVX2
    /// kernel) gives every result column to the bit as [`column`] gives it alone: every row
    /// count, inner sizes up to the limit, column counts that leave a remainder after the
    /// pairs of the AVX-512 kernel, B and the result at strides past their column lengths;
    /// nothing outside the result's columns is written.
    #[test]
    fn many_columns_match_one_column_at_a_time() {
        let mut buf = [MaybeUninit::uninit(); MAX_ROWS * MAX_INNER];
        let sentinel = c64::new(-7.0, 7.0);
        for m in 1..=MAX_ROWS {
            for p in [1, 2, 3, 7, 16, MAX_INNER] {
                let a: Vec<Vec<c64>> = (0..p)
                    .map(|k| (0..m).map(|i| value(i * p + k, 3)).collect())
                    .collect();
                let Some(op) = Operand::padded(&mut buf, (m, p), |k| &a[k]) else {
                    assert!(!crate::simd::avx2());
                    return;
                };
                for n in 1..=5 {
                    let (bs, cs) = (p + 1, m + 2);
                    let b: Vec<c64> = (0..n * bs).map(|x| value(x, 4)).collect();
                    let mut want = vec![sentinel; n * cs];
                    for j in 0..n {
                        let mut col = vec![MaybeUninit::new(sentinel); m];
                        column(&op, &b[j * bs..j * bs + p], &mut col);
                        for (w, x) in want[j * cs..].iter_mut().zip(&col) {
                            // SAFETY: initialised above.
                            *w = unsafe { x.assume_init() };
                        }
                    }
                    for narrow in [false, true] {
                        let mut c = vec![sentinel; n * cs];
                        let mut run = || {
                            // SAFETY: column j of B has p entries at j·bs < n·bs, and column j
                            // of the result m ≤ cs slots at j·cs; `c` overlaps nothing else.
                            unsafe { columns(&op, (b.as_ptr(), bs), (c.as_mut_ptr(), cs), n) }
                        };
                        if narrow {
                            crate::simd::without_avx512(run);
                        } else {
                            run();
                        }
                        for (i, (g, w)) in c.iter().zip(&want).enumerate() {
                            assert_eq!(
                                (g.re.to_bits(), g.im.to_bits()),
                                (w.re.to_bits(), w.im.to_bits()),
                                "{m}×{p}, {n} columns, slot {i}, AVX2 only: {narrow}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// The AVX-512 kernel is chosen from seven rows on, where the CPU has AVX-512F.
    #[cfg(target_arch = "x86_64")]
    #[rustversion::since(1.89)]
    #[test]
    fn wide_products_from_seven_rows_where_the_cpu_has_avx512() {
        let cpu = std::arch::is_x86_feature_detected!("avx512f");
        for m in 1..=MAX_ROWS {
            assert_eq!(wide_columns(m).is_some(), cpu && m >= 7, "{m} rows");
            assert!(crate::simd::without_avx512(|| wide_columns(m)).is_none());
        }
    }
}
