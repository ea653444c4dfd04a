//! Dense → Csr: the walks of a Dense into Csr (the smallest column-major ones branch-free by
//! rows and small ones by a bit mask of the non-zeros, in `small`; sparse column-major by
//! columns, in `columns`; dense-ish column-major by row blocks and row-major by rows, here),
//! the larger ones parallel by row blocks above the engine's thresholds. The way back is
//! [`csr_dense`](super::csr_dense).

mod columns;
mod small;
#[cfg(test)]
mod tests;

use std::mem::MaybeUninit;

use rayon::prelude::*;

use columns::via_columns;
use small::{branch_free_walk, by_masks};

use crate::engine::{self, Family};
use crate::error::Result;
use crate::scalar::c64;
use crate::simd::nonzero_bits;
use crate::storage::{Csr, Dense, Layout, alloc};

/// Keeps the entries that are not exactly zero (`-0.0` counts as zero, NaN does not).
/// O(rows·cols).
///
/// Column-major: up to [`BRANCH_FREE`] entries, one count and one branch-free walk by rows
/// ([`branch_free_walk`]); up to [`TINY`], a plain two-pass walk ([`by_row_blocks`]); up to
/// [`SMALL`], one pass builds a bit mask of the non-zeros and the fill visits only those
/// ([`by_masks`]). Larger sparse patterns take one contiguous pass over the columns
/// ([`collect_columns`](columns::collect_columns),
/// one range of columns per worker above the engine's reduction threshold) and a counting sort
/// by row; once the non-zeros pass a quarter of the entries, the walk switches to
/// [`by_row_blocks`], whose two strided passes cost less than scattering that many entries.
/// Row-major matrices always take [`by_row_blocks`]: there every row is one contiguous pass.
pub(crate) fn dense_to_csr(a: &Dense) -> Result<Csr> {
    let (m, n) = a.shape();
    if m == 0 || n == 0 {
        return Csr::zeros_for("to Csr", m, n);
    }
    let workers = engine::workers(Family::Reduction, m.saturating_mul(n));
    if a.layout() == Layout::RowMajor {
        return by_row_blocks(a, workers);
    }
    if m.saturating_mul(n) <= BRANCH_FREE {
        // Very small: a count and one branch-free walk by rows.
        return branch_free_walk(a);
    }
    if m.saturating_mul(n) <= TINY {
        // Tiny: the two-pass walk (three allocations, QuTiP's count; the masks' allocation and
        // bit walk cost more than they save below a few hundred entries).
        return by_row_blocks(a, 1);
    }
    if m.saturating_mul(n) <= SMALL {
        // Small: one pass over the values, then a walk of their non-zeros.
        return by_masks(a);
    }
    let limit = (m * n / 4).max(64);
    match via_columns(a, workers, limit) {
        Some(c) => Ok(c),
        None => by_row_blocks(a, workers),
    }
}

/// Dense → Csr by blocks of rows, `workers` of them at a time (serial for 1): a vectorised
/// counting pass and a filling pass, both per block, each block writing its own range of the
/// arrays. Column-major: every column's segment of the block's rows, in increasing column
/// order (so each row comes out sorted, the reads are contiguous segments and the writes stay
/// in the block); row-major: each row in one contiguous pass.
fn by_row_blocks(a: &Dense, workers: usize) -> Result<Csr> {
    const OP: &str = "to Csr";
    let (m, n) = a.shape();
    let block = if workers > 1 {
        m.div_ceil(workers * 4).max(PAR_ROW_BLOCK)
    } else {
        m.max(1)
    };
    let mut indptr = alloc::try_vec(OP, (m, n), m + 1, 0usize)?;
    if workers > 1 {
        indptr[1..]
            .par_chunks_mut(block)
            .enumerate()
            .for_each(|(b, c)| count_rows(a, b * block, c));
    } else {
        count_rows(a, 0, &mut indptr[1..]);
    }
    // SAFETY: `fill_rows` writes each row's range with its non-zeros (the ones `count_rows`
    // counted, by the same test) in increasing column order; the blocks' ranges partition the
    // arrays.
    unsafe {
        csr_from_row_counts_unchecked(OP, (m, n), indptr, |indptr, indices, data| {
            if workers > 1 {
                // Each block's share of the arrays: rows [r0, r1) fill indptr[r0]..indptr[r1].
                let mut parts = Vec::with_capacity(m.div_ceil(block));
                let (mut ix, mut dv) = (indices, data);
                for r0 in (0..m).step_by(block) {
                    let r1 = (r0 + block).min(m);
                    let len = indptr[r1] - indptr[r0];
                    let (x, rest) = std::mem::take(&mut ix).split_at_mut(len);
                    ix = rest;
                    let (y, rest) = std::mem::take(&mut dv).split_at_mut(len);
                    dv = rest;
                    parts.push((r0..r1, x, y));
                }
                parts
                    .into_par_iter()
                    .for_each(|(rows, x, y)| fill_rows(a, rows, indptr, x, y));
            } else {
                fill_rows(a, 0..m, indptr, indices, data);
            }
        })
    }
}

/// The Csr whose row counts are in `indptr[1..]` (`indptr[0]` = 0): turns them into row
/// pointers, reserves exactly their sum of entries (no zero fill) and hands the pointers and
/// the two uninitialised arrays to `fill`.
///
/// # Safety
/// `fill` must initialise every element of both arrays: each row i's range
/// `indptr[i]..indptr[i + 1]` with that row's entries, columns below n in increasing order.
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) if the arrays cannot be allocated.
unsafe fn csr_from_row_counts_unchecked(
    op: &str,
    (m, n): (usize, usize),
    mut indptr: Vec<usize>,
    fill: impl FnOnce(&[usize], &mut [MaybeUninit<usize>], &mut [MaybeUninit<c64>]),
) -> Result<Csr> {
    for i in 0..m {
        indptr[i + 1] += indptr[i];
    }
    let nnz = indptr[m];
    alloc::check_memory(op, (m, n), alloc::csr::csr_bytes(0, nnz))?;
    let mut indices = alloc::try_with_capacity(op, (m, n), nnz)?;
    let mut data = alloc::try_with_capacity(op, (m, n), nnz)?;
    fill(
        &indptr,
        &mut indices.spare_capacity_mut()[..nnz],
        &mut data.spare_capacity_mut()[..nnz],
    );
    // SAFETY: `fill` initialised all nnz elements of both arrays (this function's contract);
    // the capacity is nnz.
    unsafe {
        indices.set_len(nnz);
        data.set_len(nnz);
    }
    // SAFETY: `indptr` holds m + 1 pointers from 0 to nnz, and each row's range holds its
    // columns (below n) in increasing order (the contract).
    Ok(unsafe { Csr::from_parts_unchecked((m, n), indptr, indices, data) })
}

/// Up to this many entries, Dense → Csr takes the two-pass [`by_row_blocks`]: at 10×10, 0.2 µs
/// faster than [`by_masks`]; at 32×32, 1.3–1.6× slower (10 % non-zero).
const TINY: usize = 256;

/// Up to this many entries, Dense → Csr takes the branch-free walk of [`branch_free_walk`]
/// (which stores every entry, non-zero or not): 23 % faster than [`by_row_blocks`] at 10 × 10
/// full, 9 % on a 10 × 10 tridiagonal, 25 % at 4 × 4; at 16 × 16 tridiagonal (18 % non-zero)
/// 6 % slower.
const BRANCH_FREE: usize = 128;

/// Up to this many entries, a column-major Dense → Csr takes [`by_masks`] (a plain walk below
/// [`TINY`]): collecting the columns ([`via_columns`]) was measured 30 % slower at 10×10 and
/// 10 % at 100×100 than the two-pass walk, which `by_masks` beats 2× at 100×100 with 10 %
/// non-zero (and matches on a full matrix).
const SMALL: usize = 1 << 14;

/// Rows per cache block of the serial column-major walk.
const ROW_BLOCK: usize = 64;

/// Rows per cache block of the parallel column-major walk, and the least rows a worker takes.
const PAR_ROW_BLOCK: usize = 512;

crate::simd::avx2_fn! {
    /// `counts[t]` = the number of non-zeros of row `r0 + t`.
    fn count_rows(a: &Dense, r0: usize, counts: &mut [usize]) {
        let r1 = r0 + counts.len();
        match a.layout() {
            Layout::ColMajor => {
                for j in 0..a.shape().1 {
                    for (c, v) in counts.iter_mut().zip(&a.buffer_col(j)[r0..r1]) {
                        *c += usize::from(nonzero_bits(v) != 0);
                    }
                }
            }
            Layout::RowMajor => {
                for (c, i) in counts.iter_mut().zip(r0..r1) {
                    *c = a
                        .buffer_col(i)
                        .iter()
                        .map(|v| usize::from(nonzero_bits(v) != 0))
                        .sum();
                }
            }
        }
    }
}

crate::simd::avx2_fn! {
    /// Writes the non-zeros of `rows` into `indices`/`data`, which hold exactly
    /// `indptr[rows.start]..indptr[rows.end]`, each row in increasing column order: every
    /// element, when `indptr` counts the rows' non-zeros.
    fn fill_rows(
        a: &Dense,
        rows: std::ops::Range<usize>,
        indptr: &[usize],
        indices: &mut [MaybeUninit<usize>],
        data: &mut [MaybeUninit<c64>],
    ) {
        let base = indptr[rows.start];
        match a.layout() {
            Layout::RowMajor => {
                let mut k = 0;
                for i in rows {
                    for (j, v) in a.buffer_col(i).iter().enumerate() {
                        if nonzero_bits(v) != 0 {
                            indices[k].write(j);
                            data[k].write(*v);
                            k += 1;
                        }
                    }
                }
            }
            Layout::ColMajor => {
                // Serial: 64-row blocks (measured best for dense-ish matrices on one core).
                // Parallel: 512-row blocks, so each visit of a column reads 8 KiB rather than
                // 1 KiB: with 64 rows, every block touched a new page per column and two workers
                // ran at a quarter of one core's speed (TLB misses).
                let step = if rows.len() == indptr.len() - 1 {
                    ROW_BLOCK
                } else {
                    PAR_ROW_BLOCK
                };
                // The block's write cursors, on the stack, as many as the block has rows: a
                // 4 KiB array zeroed for a serial call was 40 % of the instructions of a
                // 10 × 10 conversion.
                let (mut serial, mut parallel);
                let next: &mut [usize] = if step == ROW_BLOCK {
                    serial = [0usize; ROW_BLOCK];
                    &mut serial
                } else {
                    parallel = [0usize; PAR_ROW_BLOCK];
                    &mut parallel
                };
                for r0 in rows.clone().step_by(step) {
                    let r1 = (r0 + step).min(rows.end);
                    for (q, p) in next.iter_mut().zip(&indptr[r0..r1]) {
                        *q = p - base;
                    }
                    for j in 0..a.shape().1 {
                        for (t, v) in a.buffer_col(j)[r0..r1].iter().enumerate() {
                            if nonzero_bits(v) != 0 {
                                indices[next[t]].write(j);
                                data[next[t]].write(*v);
                                next[t] += 1;
                            }
                        }
                    }
                }
            }
        }
    }
}
