//! Csr·Csr on several workers, written in place: the rows are cut into pieces, each piece's
//! distinct columns are counted ([`count_rows`]: column indices only, no values, no
//! multiply-adds), and each worker then runs the serial row kernel on its range of rows,
//! writing straight into its own part of the result, at the offset the counts give.
//!
//! Pieces computed apart and joined by a copy were tried first: the copy and the first touches
//! of the pieces' fresh arrays cost a memory-bound product more than the second worker saved
//! (a tridiagonal product at n = 10⁶ went from 24 to 44 ms on two workers;
//! `docs/benchmarks.md`). Counting first also reserves exactly the result's size where the
//! serial kernel reserves one slot per multiply-add.

use std::mem::MaybeUninit;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use super::emit::{Emit, STREAM_EMIT_BYTES};
use super::rows::gustavson_rows;
use super::scratch::{RowPointers, ScratchBuffers};
use crate::error::Result;
use crate::scalar::c64;
use crate::shape::indptr_len;
use crate::storage::{Csr, alloc};

/// Pieces of rows counted per worker. The workers' ranges are cut at piece boundaries by the
/// pieces' multiply-adds and distinct columns, so finer pieces balance the writing pass
/// better; the counting pass splits its pieces evenly by the entries of a.
const PIECES_PER_WORKER: usize = 8;

/// What [`count_rows`] finds in a range of rows of a·b.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Count {
    /// The rows' distinct columns: the entries the row kernel may write (it drops exact
    /// zeros).
    pub(super) columns: usize,
    /// Their multiply-adds.
    pub(super) products: usize,
    /// The most multiply-adds in one row.
    pub(super) row_max: usize,
}

/// How many entries the counting pass may find in all before it stops: the room for the
/// result in memory ([`alloc::csr::csr_room`]), shared by the workers. Without it, a product whose
/// result cannot fit (an outer product of two vectors of 10⁶ entries: 10¹² entries) was
/// counted to the end, minutes of work, before its reservation was refused; the serial kernel
/// refuses it at once, by its multiply-adds.
pub(super) struct Budget {
    counted: AtomicUsize,
    limit: usize,
    /// A worker adds its count to `counted` whenever it has found this many more.
    step: usize,
}

impl Budget {
    /// Room for `limit` entries (`usize::MAX`: no limit, nothing shared).
    pub(super) fn new(limit: usize) -> Budget {
        Budget {
            counted: AtomicUsize::new(0),
            limit,
            step: (limit / 64).clamp(1, 1 << 16),
        }
    }

    /// Adds `n` entries found; `false` once the total has passed the limit.
    #[inline]
    fn add(&self, n: usize) -> bool {
        self.counted
            .fetch_add(n, Ordering::Relaxed)
            .saturating_add(n)
            <= self.limit
    }

    /// The entries added so far (all of them after the count, or the point where it stopped).
    pub(super) fn counted(&self) -> usize {
        self.counted.load(Ordering::Relaxed)
    }
}

/// One worker's part of the writing pass: its rows, their row pointers, and its slices of the
/// result's arrays (as many slots as its rows have distinct columns), which start at `base`.
struct Part<'a> {
    rows: Range<usize>,
    ptrs: &'a mut [MaybeUninit<usize>],
    indices: &'a mut [MaybeUninit<usize>],
    data: &'a mut [MaybeUninit<c64>],
    base: usize,
}

/// a·b on `workers` workers (at least 1; at most one per row is used), for the accumulator
/// kernel's products (`matmul_csr` decides).
/// The same rows, columns and values as the serial kernel, bit for bit: each row is computed
/// by the same code in the same order.
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) if the result or a worker's accumulator cannot
/// be allocated.
pub(super) fn matmul_rows(a: &Csr, b: &Csr, flops: usize, workers: usize) -> Result<Csr> {
    const OP: &str = "matmul";
    let (m, n) = (a.shape().0, b.shape().1);
    let shape = (m, n);
    let workers = workers.clamp(1, m.max(1));
    let pieces = workers.saturating_mul(PIECES_PER_WORKER).min(m).max(1);
    let cuts = crate::storage::csr_build::even_split(&a.indptr()[..m], a.nnz(), pieces);

    // Pass 1: per piece, its rows' distinct columns and multiply-adds, stopping once they
    // cannot fit (the multiply-adds, `flops`, bound them, and m·n).
    let ptrs = indptr_len(OP, shape)?;
    let (room, available) = alloc::csr::csr_room(ptrs, flops.min(m.saturating_mul(n)));
    let budget = Budget::new(room);
    let mut stats = vec![Count::default(); pieces];
    let per = pieces.div_ceil(workers);
    stats
        .par_chunks_mut(per)
        .enumerate()
        .map(|(g, chunk)| {
            let mut seen = alloc::try_vec(OP, shape, n.div_ceil(64), 0u64)?;
            for (k, s) in chunk.iter_mut().enumerate() {
                let p = g * per + k;
                match count_rows(a, b, cuts[p]..cuts[p + 1], &mut seen, &budget) {
                    Some(c) => *s = c,
                    None => {
                        return Err(alloc::csr::csr_past_room(
                            OP,
                            shape,
                            ptrs,
                            budget.counted(),
                            available,
                        ));
                    }
                }
            }
            Ok(())
        })
        .collect::<Result<()>>()?;
    // At most the multiply-adds, so no overflow.
    let total: usize = stats.iter().map(|s| s.columns).sum();
    // The most multiply-adds in a row, for the workers' pattern lists.
    let row_max = stats.iter().map(|s| s.row_max).max().unwrap_or(0);

    // The workers' ranges: consecutive pieces of about equal work (multiply-adds plus entries
    // written); group g is pieces groups[g]..groups[g + 1].
    let mut work = Vec::with_capacity(pieces + 1);
    work.push(0usize);
    for s in &stats {
        let last = *work.last().unwrap_or(&0);
        work.push(last.saturating_add(s.columns).saturating_add(s.products));
    }
    let groups = crate::storage::csr_build::even_split(&work[..pieces], work[pieces], workers);

    let (mut indptr, mut indices, mut data) = alloc::csr::csr_buffers(OP, shape, ptrs, total)?;
    indptr.push(0);
    let stream = total.saturating_mul(std::mem::size_of::<(usize, c64)>()) >= STREAM_EMIT_BYTES
        && data.as_ptr().cast::<u8>().align_offset(16) == 0;
    let mut parts = Vec::with_capacity(workers);
    let mut ptrs = &mut indptr.spare_capacity_mut()[..m];
    let mut idx = &mut indices.spare_capacity_mut()[..total];
    let mut vals = &mut data.spare_capacity_mut()[..total];
    let mut base = 0;
    for g in 0..workers {
        let (p0, p1) = (groups[g], groups[g + 1]);
        let rows = cuts[p0]..cuts[p1];
        let len: usize = stats[p0..p1].iter().map(|s| s.columns).sum();
        let (p, rest) = std::mem::take(&mut ptrs).split_at_mut(rows.len());
        ptrs = rest;
        let (i, rest) = std::mem::take(&mut idx).split_at_mut(len);
        idx = rest;
        let (v, rest) = std::mem::take(&mut vals).split_at_mut(len);
        vals = rest;
        parts.push(Part {
            rows,
            ptrs: p,
            indices: i,
            data: v,
            base,
        });
        base += len;
    }

    // Pass 2: each worker writes its rows in place.
    let written = parts
        .into_par_iter()
        .map(|part| {
            if part.rows.is_empty() {
                return Ok((part.base, 0));
            }
            let mut buffers = ScratchBuffers::new(a, b, row_max)?;
            let room = part.indices.len();
            let mut out = Emit::over(part.indices, part.data, stream);
            let rows = part.rows.len();
            let mut ptrs = RowPointers {
                slots: part.ptrs,
                next: 0,
                base: part.base,
            };
            gustavson_rows(a, b, part.rows, &mut buffers.scratch(), &mut out, &mut ptrs);
            assert_eq!(ptrs.next, rows, "matmul_rows: one pointer per row");
            assert!(out.len <= room, "matmul_rows: the count bounds the entries");
            if out.stream {
                // Before another thread reads what this one streamed.
                crate::simd::nontemporal::fence();
            }
            Ok((part.base, out.len))
        })
        .collect::<Result<Vec<(usize, usize)>>>()?;

    // SAFETY: the parts' row pointers cover rows 0..m, each written once by its worker (one
    // per row, asserted), within the capacity m + 1.
    unsafe { indptr.set_len(m + 1) };
    // Close up the parts where exact zeros were dropped (fewer entries than counted): each
    // part's entries move down to where the previous part ends, its row pointers with them.
    let mut end = 0;
    for (g, &(start, len)) in written.iter().enumerate() {
        if start != end {
            indices
                .spare_capacity_mut()
                .copy_within(start..start + len, end);
            data.spare_capacity_mut()
                .copy_within(start..start + len, end);
            let rows = cuts[groups[g]]..cuts[groups[g + 1]];
            for p in &mut indptr[rows.start + 1..=rows.end] {
                *p -= start - end;
            }
        }
        end += len;
    }
    // SAFETY: the first `end` slots of both arrays hold the parts' entries, one after the
    // other (each part initialised its first `len` slots, moved down above where needed).
    unsafe {
        indices.set_len(end);
        data.set_len(end);
    }
    debug_assert_eq!(indptr[m], end);
    // SAFETY: as the serial kernel's result: one pointer per row after the leading 0, from 0
    // to nnz, each row's columns emitted in increasing order, each once, below n.
    Ok(unsafe { Csr::from_parts_unchecked(shape, indptr, indices, data) })
}

crate::simd::avx2_fn! {
    /// The distinct columns of the rows `rows` of a·b, their multiply-adds and the most in
    /// one row. `seen` has a bit for every column of b and is all-zero on entry; it is left
    /// so. Under a limited `budget` the columns found are added to it as they are counted
    /// (every `step` of them and at the end), and the count is `None` once its total passes the
    /// limit (the count stops at the row after the one where it found that out).
    ///
    /// A row whose columns lie within 64 of its first (banded products) gathers them in a
    /// register, shifted from that first column (no word boundary to cross, unlike the row
    /// kernel's aligned words: only the count is wanted). Otherwise each product marks its
    /// bit in `seen`; a row that spans fewer words than twice its products then counts and
    /// clears its span, and a sparser one counts its columns as they are first marked and
    /// clears them one product at a time. (Finding the first and last column in the same
    /// pass as the gathering, in a window of 128 columns, cost more: the loop spilled its
    /// registers, and a tridiagonal product at n = 10⁶ on two workers took 21–22 ms against
    /// 17.)
    pub(super) fn count_rows(
        a: &Csr,
        b: &Csr,
        rows: Range<usize>,
        seen: &mut [u64],
        budget: &Budget,
    ) -> Option<Count> {
        // Without a limit, a loop of its own: one comparison a row made a tridiagonal product
        // at n = 10⁶ on two workers 2–3 % slower.
        if budget.limit == usize::MAX {
            count_rows_in::<false>(a, b, rows, seen, budget)
        } else {
            count_rows_in::<true>(a, b, rows, seen, budget)
        }
    }
}

/// The body of [`count_rows`], inlined into it twice (`LIMITED`: the budget is consulted; an
/// unlimited count never returns `None`).
#[inline(always)]
fn count_rows_in<const LIMITED: bool>(
    a: &Csr,
    b: &Csr,
    rows: Range<usize>,
    seen: &mut [u64],
    budget: &Budget,
) -> Option<Count> {
    let (pa, ia) = (a.indptr(), a.indices());
    let (pb, ib) = (b.indptr(), b.indices());
    // The unchecked reads of b's rows below rely on the first.
    assert!(
        a.shape().1 == b.shape().0 && seen.len() >= b.shape().1.div_ceil(64),
        "count_rows: shapes"
    );
    // Row r of b's columns.
    let columns = |r: usize| -> &[usize] {
        // SAFETY: r is a column of a, below its column count, b's row count (asserted),
        // so r + 1 < pb.len(); b's row pointers are non-decreasing up to nnz(b), the
        // length of `ib` (the Csr invariants).
        unsafe {
            let (b0, b1) = (*pb.get_unchecked(r), *pb.get_unchecked(r + 1));
            ib.get_unchecked(b0..b1)
        }
    };
    let mut count = Count::default();
    // The columns added to the budget so far, and the count at which to add again (one
    // comparison a row; never for an unlimited budget).
    let mut reported = 0;
    let mut next_report = budget.step;
    for i in rows {
        if LIMITED && count.columns >= next_report {
            if !budget.add(count.columns - reported) {
                return None;
            }
            reported = count.columns;
            next_report = reported.saturating_add(budget.step);
        }
        let row = &ia[pa[i]..pa[i + 1]];
        // The row's first and last column (b's rows are sorted) and its products.
        let (mut first, mut last, mut products) = (usize::MAX, 0, 0);
        for &r in row {
            let cols = columns(r);
            if let (Some(&lo), Some(&hi)) = (cols.first(), cols.last()) {
                products += cols.len();
                first = first.min(lo);
                last = last.max(hi);
            }
        }
        count.products += products;
        count.row_max = count.row_max.max(products);
        if products == 0 {
            continue;
        }
        if last - first < 64 {
            let mut bits = 0u64;
            for &r in row {
                for &j in columns(r) {
                    // first ≤ j ≤ last < first + 64.
                    bits |= 1 << (j - first);
                }
            }
            count.columns += bits.count_ones() as usize;
            continue;
        }
        let (lo, hi) = (first / 64, last / 64);
        if hi - lo < 2 * products {
            for &r in row {
                for &j in columns(r) {
                    seen[j / 64] |= 1 << (j % 64);
                }
            }
            for word in &mut seen[lo..=hi] {
                count.columns += std::mem::take(word).count_ones() as usize;
            }
        } else {
            for &r in row {
                for &j in columns(r) {
                    let (word, bit) = (&mut seen[j / 64], 1u64 << (j % 64));
                    count.columns += usize::from(*word & bit == 0);
                    *word |= bit;
                }
            }
            for &r in row {
                for &j in columns(r) {
                    seen[j / 64] = 0;
                }
            }
        }
    }
    (!LIMITED || budget.add(count.columns - reported)).then_some(count)
}
