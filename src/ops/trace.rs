//! The trace.

use std::sync::LazyLock;

use crate::dispatch::{Dispatcher, Out};
use crate::engine::{self, Family};
use crate::error::Result;
use crate::gpu::{GpuCsr, GpuDense};
use crate::scalar::ZERO;
use crate::scalar::c64;
use crate::shape::square;
use crate::storage::{Csr, Data, Dense, Dia, KronSum, SuperOp};

/// `Tr a` for square `a`, a scalar. Kernels: Dense, Csr.
pub static TRACE: LazyLock<Dispatcher<(), c64>> = LazyLock::new(|| {
    Dispatcher::builder("trace", 1)
        .check_square()
        .unary("trace_dense", |a: &Dense, _: &()| trace_dense(a))
        .unary("trace_csr", |a: &Csr, _: &()| trace_csr(a))
        .unary("trace_dia", |a: &Dia, _: &()| super::dia::trace_dia(a))
        .unary("trace_gpu", |a: &GpuDense, _: &()| a.trace())
        .unary("trace_gpucsr", |a: &GpuCsr, _: &()| a.trace())
        .unary("trace_kronsum", |a: &KronSum, _: &()| a.trace_with(trace))
        .unary("trace_superop", |a: &SuperOp, _: &()| {
            square("trace", a.shape())?;
            match a.trace_with(trace)? {
                Some(t) => Ok(t),
                // Factors that are not square: the trace of the formed operator.
                None => trace_csr(&crate::convert::lazy::super_op_to_csr(a)?),
            }
        })
        .builtin()
});

/// The sum of the diagonal.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if `a` is not square.
///
/// ```
/// use polymat::{Csr, c64};
/// assert_eq!(polymat::trace(&Csr::identity(4).into()).unwrap(), c64::new(4.0, 0.0));
/// assert!(polymat::trace(&Csr::zeros(2, 3).into()).is_err());
/// ```
#[inline]
pub fn trace(a: &Data) -> Result<c64> {
    TRACE.call(&[a], Out::Auto, &())
}

/// Dense trace. O(n).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if `a` is not square.
#[inline]
pub fn trace_dense(a: &Dense) -> Result<c64> {
    square("trace", a.shape())?;
    let n = a.shape().0;
    let workers = engine::workers(Family::Reduction, n);
    // The diagonal sits at (i, i) of the buffer in either layout.
    let b = a.buffer();
    Ok(engine::sum_ranges(n, workers, |rows| diagonal_sum(b, rows)))
}

/// `Σ b[i, i]` over `rows`, in four running sums. The entries lie a column apart, a page or
/// more from n = 256 on, so each load is a cache (and TLB) miss; the lean unrolled loop keeps
/// more of them in flight than an indexed one (column slice, bounds check, load): n = 1000
/// 1.0 → 0.67 µs, n = 100 0.11 → 0.05 µs (docs/benchmarks.md). From a page apart the entry
/// 16 on is prefetched as well: at n = 10⁴, one thread, about 12 % faster with the matrix's lines
/// cached (its pages not in the TLB), level from memory; n = 100, which does not prefetch,
/// level (docs/benchmarks/per_operation.md).
///
/// # Panics
/// If `rows` passes the diagonal (a bug in the caller).
fn diagonal_sum(b: faer::MatRef<'_, c64>, rows: std::ops::Range<usize>) -> c64 {
    #[cfg(target_arch = "x86_64")]
    const AHEAD: usize = 16;
    assert!(
        rows.end <= b.nrows().min(b.ncols()),
        "diagonal_sum: rows {rows:?}"
    );
    let step = b.row_stride() + b.col_stride();
    let at = |i: usize| {
        // SAFETY: i < rows.end ≤ min(nrows, ncols) (asserted above), so (i, i) is an element
        // of `b` and i·(row stride + column stride) its offset from `as_ptr`.
        unsafe { *b.as_ptr().offset(i as isize * step) }
    };
    // Entries a page or more apart (n ≥ 256): each load also misses the TLB, so the loads
    // AHEAD entries on are prefetched (their page walks start early).
    #[cfg(target_arch = "x86_64")]
    let far = step.unsigned_abs() >= 256;
    let mut sums = [ZERO; 4];
    let mut i = rows.start;
    while i + 4 <= rows.end {
        #[cfg(target_arch = "x86_64")]
        if far && i + 4 + AHEAD <= rows.end {
            for t in 0..4 {
                // SAFETY: a prefetch reads nothing and cannot fault; the address is that of
                // entry (i + AHEAD + t) of the diagonal, inside `b` (i + 4 + AHEAD ≤ rows.end).
                unsafe {
                    std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                        b.as_ptr().offset((i + AHEAD + t) as isize * step).cast(),
                    );
                }
            }
        }
        for (t, s) in sums.iter_mut().enumerate() {
            *s += at(i + t);
        }
        i += 4;
    }
    for i in i..rows.end {
        sums[0] += at(i);
    }
    (sums[0] + sums[1]) + (sums[2] + sums[3])
}

/// Csr trace: in each row, the diagonal looked for where it sat in the previous row (banded
/// operators), else, with AVX2, among the row's first sixteen columns compared at once (a
/// binary search in longer rows); without AVX2 at the count of columns left of it.
/// O(m + stored entries).
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if `a` is not square.
pub fn trace_csr(a: &Csr) -> Result<c64> {
    square("trace", a.shape())?;
    let n = a.shape().0;
    let workers = engine::workers(Family::Reduction, n);
    Ok(engine::sum_ranges(n, workers, |rows| trace_rows(a, rows)))
}

/// The diagonal entries of `rows` of `a`, summed (see [`trace_csr`]): the AVX2 window where
/// the CPU has it, else [`trace_rows_portable`].
#[inline]
fn trace_rows(a: &Csr, rows: std::ops::Range<usize>) -> c64 {
    #[cfg(target_arch = "x86_64")]
    if crate::simd::avx2() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above), the features the kernel is
        // compiled for.
        return unsafe { avx::trace_rows(a.indptr(), a.indices(), a.data(), rows) };
    }
    trace_rows_portable(a, rows)
}

/// [`trace_rows`] without SIMD: the previous row's place, else the count of the columns left
/// of the diagonal (a binary search in rows of more than 32 entries).
fn trace_rows_portable(a: &Csr, rows: std::ops::Range<usize>) -> c64 {
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    let mut acc = ZERO;
    let mut lo = p[rows.start];
    let mut guess = 0;
    for (i, &hi) in rows.clone().zip(&p[rows.start + 1..=rows.end]) {
        let cols = &idx[lo..hi];
        // Columns are sorted and distinct, so a column equal to i is the diagonal, and the
        // count of columns below i is its place. Scanning up to the diagonal (QuTiP's
        // loop) mispredicts its exit about once per row when that place varies.
        // The guess keeps a tridiagonal operator's rows from counting at all.
        let k = if cols.get(guess) == Some(&i) {
            guess
        } else if cols.len() <= 32 {
            cols.iter().map(|&c| usize::from(c < i)).sum()
        } else {
            cols.partition_point(|&c| c < i)
        };
        if k < cols.len() && cols[k] == i {
            acc += val[lo + k];
        }
        guess = k;
        lo = hi;
    }
    acc
}

#[cfg(target_arch = "x86_64")]
mod avx {
    use std::arch::x86_64::*;
    use std::ops::Range;

    use crate::scalar::c64;

    /// Columns compared at once: four 256-bit loads of the index array.
    const WINDOW: usize = 16;

    /// The diagonal of each row of at most [`WINDOW`] entries is found without a loop: the
    /// sixteen indices from the row's start are compared with `i` at once, the lanes past the
    /// row's end masked off, and the first set bit is the diagonal's place. Any count or scan
    /// over the row ends at a length that varies row to row, and its exit branch mispredicts
    /// about once per row on random patterns; the window's only branch is whether the row
    /// holds its diagonal, which a given operator answers the same way in most rows. The
    /// previous row's place is tried first (banded operators: one load and compare). Longer
    /// rows, and rows whose window would pass the end of the index array, search.
    ///
    /// One matrix of 10 random entries per row called again and again (the side-by-side's
    /// case), in one process, the count before against this: n = 1000 8.2–8.7 → 4.2 µs,
    /// n = 10⁴ 54–84 → 27–42 µs; tridiagonal n = 10⁴ (a scratch copy, 8 matrices in turn)
    /// 31–33 → 16–17 µs (docs/benchmarks.md).
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn trace_rows(p: &[usize], idx: &[usize], val: &[c64], rows: Range<usize>) -> c64 {
        let mut acc = _mm_setzero_pd();
        let mut add = |x: &c64| {
            // SAFETY: `c64` is two packed doubles; an unaligned load.
            acc = _mm_add_pd(acc, unsafe {
                _mm_loadu_pd((x as *const c64).cast::<f64>())
            });
        };
        let mut lo = p[rows.start];
        let mut guess = 0;
        for (i, &hi) in rows.clone().zip(&p[rows.start + 1..=rows.end]) {
            let cols = &idx[lo..hi];
            if cols.get(guess) == Some(&i) {
                add(&val[lo + guess]);
            } else if cols.len() <= WINDOW && lo + WINDOW <= idx.len() {
                let want = _mm256_set1_epi64x(i as i64);
                let base = idx[lo..lo + WINDOW].as_ptr().cast::<__m256i>();
                let mut bits = 0u32;
                for q in 0..WINDOW / 4 {
                    // SAFETY: `base` points at WINDOW indices (the slice above), four 64-bit
                    // lanes per load; unaligned loads.
                    let lanes = unsafe { _mm256_loadu_si256(base.add(q)) };
                    let eq = _mm256_castsi256_pd(_mm256_cmpeq_epi64(lanes, want));
                    bits |= (_mm256_movemask_pd(eq) as u32) << (4 * q);
                }
                // Lanes past the row's end belong to the next rows.
                let bits = bits & ((1u32 << cols.len()) - 1);
                if bits != 0 {
                    let k = bits.trailing_zeros() as usize;
                    add(&val[lo + k]);
                    guess = k;
                }
            } else {
                let k = cols.partition_point(|&c| c < i);
                if cols.get(k) == Some(&i) {
                    add(&val[lo + k]);
                }
                guess = k;
            }
            lo = hi;
        }
        let mut out = c64::new(0.0, 0.0);
        // SAFETY: `c64` is two packed doubles; an unaligned store.
        unsafe { _mm_storeu_pd((&mut out as *mut c64).cast::<f64>(), acc) };
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every way a row's diagonal is found (the previous row's place, the count, the binary
    /// search), with and without a diagonal, agrees with `Σ a[i, i]`.
    #[test]
    fn csr_trace_matches_the_definition() {
        let n: usize = 120;
        let mut state: u64 = 7;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 33) as usize
        };
        for per_row in [0usize, 1, 3, 10, 15, 16, 17, 40, 120] {
            let (mut r, mut c, mut v) = (vec![], vec![], vec![]);
            for i in 0..n {
                for t in 0..per_row {
                    // Banded rows in the first third, random ones after, a full diagonal
                    // only in every other row of the random part.
                    let j = if i < n / 3 {
                        (i + t).saturating_sub(per_row / 2).min(n - 1)
                    } else {
                        next() % n
                    };
                    if i >= n / 3 && j == i && i % 2 == 1 {
                        continue;
                    }
                    r.push(i);
                    c.push(j);
                    v.push(c64::new((i + 1) as f64, t as f64 - 0.5));
                }
            }
            let a = Csr::from_triplets((n, n), &r, &c, &v).unwrap();
            let want: c64 = (0..n).map(|i| a.get(i, i)).sum();
            assert_eq!(trace_csr(&a).unwrap(), want, "{per_row} per row");
            let portable = crate::simd::baseline(|| trace_csr(&a).unwrap());
            assert_eq!(portable, want, "{per_row} per row, baseline");
        }
        assert_eq!(trace_csr(&Csr::zeros(0, 0)).unwrap(), ZERO);
        assert!(trace_csr(&Csr::zeros(2, 3)).is_err());
    }

    /// The AVX2 window at its edges: rows of 1 to 18 entries with the diagonal first, last or
    /// missing while the next row holds column `i` (inside the window, past the row's end),
    /// and the last rows, whose window would pass the end of the index array.
    #[test]
    fn csr_trace_window_edges() {
        let n: usize = 40;
        for width in 1..=18usize {
            for shape in 0..3 {
                let (mut r, mut c, mut v) = (vec![], vec![], vec![]);
                for i in 0..n {
                    let cols: Vec<usize> = match shape {
                        // Diagonal last.
                        0 => (i.saturating_sub(width - 1)..=i).collect(),
                        // Diagonal first.
                        1 => (i..(i + width).min(n)).collect(),
                        // No diagonal; row i + 1 starts at column i.
                        _ => (i + 1..i + 1 + width)
                            .map(|j| j.saturating_sub(2))
                            .filter(|&j| j != i && j < n)
                            .collect(),
                    };
                    for j in cols {
                        r.push(i);
                        c.push(j);
                        v.push(c64::new(i as f64 + 1.0, j as f64 - 0.25));
                    }
                }
                let a = Csr::from_triplets((n, n), &r, &c, &v).unwrap();
                let want: c64 = (0..n).map(|i| a.get(i, i)).sum();
                assert_eq!(trace_csr(&a).unwrap(), want, "width {width} shape {shape}");
                let portable = crate::simd::baseline(|| trace_csr(&a).unwrap());
                assert_eq!(portable, want, "width {width} shape {shape}, baseline");
                if shape == 2 {
                    assert_eq!(want, ZERO);
                }
            }
        }
    }

    /// The Dense trace's four running sums, on sizes around the unrolling and both layouts,
    /// and with the prefetches (entries a page apart, n ≥ 256; the last 20 entries of a run
    /// without them), against `Σ a[i, i]`; not square is refused.
    #[test]
    fn dense_trace_matches_the_definition() {
        use crate::storage::Layout;
        for n in [0usize, 1, 2, 3, 4, 5, 7, 8, 9, 33, 255, 256, 301, 517] {
            let a = Dense::from_fn(n, n, |i, j| c64::new((3 * i + j) as f64, i as f64 - 0.5));
            let want = (0..n).fold(ZERO, |s, i| s + a.get(i, i));
            for layout in [Layout::ColMajor, Layout::RowMajor] {
                let b = a.clone().into_layout(layout).unwrap();
                let got = trace_dense(&b).unwrap();
                assert!(
                    (got - want).norm() <= 1e-12 * want.norm().max(1.0),
                    "n {n} {layout:?}"
                );
            }
        }
        assert!(trace_dense(&Dense::zeros(2, 3)).is_err());
    }
}
