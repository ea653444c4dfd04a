//! Dense → Csr through the columns of a sparse column-major matrix, collected in one
//! contiguous pass and sorted by row.

use rayon::prelude::*;

use crate::scalar::c64;
use crate::simd::nonzero_bits;
use crate::storage::{Csr, Dense, alloc};

/// Dense → Csr through the columns of column-major `a`: one range of columns per worker, each
/// collected in one contiguous pass ([`collect_columns`]), then a counting sort by row. `None`
/// once the non-zeros pass `limit`, or when an array of the result cannot be allocated.
pub(super) fn via_columns(a: &Dense, workers: usize, limit: usize) -> Option<Csr> {
    let (m, n) = a.shape();
    let per = n.div_ceil(workers);
    let collect = |w: usize| {
        let cols = crate::engine::piece(w, per, n);
        collect_columns(a, cols, limit)
    };
    let mut parts: Vec<Columns> = if workers > 1 {
        (0..workers)
            .into_par_iter()
            .map(collect)
            .collect::<Option<_>>()?
    } else {
        vec![collect(0)?]
    };
    if parts.iter().map(|c| c.rows.len()).sum::<usize>() > limit {
        return None;
    }
    let mut indptr = std::mem::take(&mut parts[0].row_counts);
    for part in &parts[1..] {
        for (c, p) in indptr.iter_mut().zip(&part.row_counts) {
            *c += p;
        }
    }
    for i in 0..m {
        indptr[i + 1] += indptr[i];
    }
    let nnz = indptr[m];
    // Allocated fallibly: a refusal is a `None` like a count over the limit, and the caller's
    // other path reports it.
    let mut indices = alloc::try_vec("to Csr", (m, n), nnz, 0usize).ok()?;
    let mut data = alloc::try_vec("to Csr", (m, n), nnz, c64::new(0.0, 0.0)).ok()?;
    let mut next = alloc::try_with_capacity("to Csr", (m, n), m).ok()?;
    next.extend_from_slice(&indptr[..m]);
    // Parts and their columns in increasing order, so each row's entries come out sorted.
    for part in &parts {
        for (k, j) in part.cols.clone().enumerate() {
            let span = part.colptr[k]..part.colptr[k + 1];
            for (&i, &v) in part.rows[span.clone()].iter().zip(&part.vals[span]) {
                indices[next[i]] = j;
                data[next[i]] = v;
                next[i] += 1;
            }
        }
    }
    // SAFETY: `indptr` is the prefix sum of the row counts (m + 1 pointers from 0 to nnz),
    // each row range is filled exactly, and columns are visited in increasing order (< n).
    Some(unsafe { Csr::from_parts_unchecked((m, n), indptr, indices, data) })
}

/// The non-zeros of some columns of a dense matrix in column order (CSC), with per-row counts.
pub(super) struct Columns {
    /// The columns collected.
    pub(super) cols: std::ops::Range<usize>,
    /// `colptr[k]..colptr[k + 1]` are the entries of column `cols.start + k`.
    pub(super) colptr: Vec<usize>,
    pub(super) rows: Vec<usize>,
    pub(super) vals: Vec<c64>,
    /// `row_counts[i + 1]` is the number of non-zeros in row `i`; `row_counts[0] = 0`.
    pub(super) row_counts: Vec<usize>,
}

crate::simd::avx2_fn! {
    /// One contiguous pass over the columns `cols` of column-major `a` collecting the non-zeros;
    /// `None` as soon as there are more than `limit` of them. Blocks of 64 zeros are skipped
    /// with one vertical OR and one test; the other blocks go by runs of 8 ([`collect_runs`]).
    pub(super) fn collect_columns(
        a: &Dense,
        cols: std::ops::Range<usize>,
        limit: usize,
    ) -> Option<Columns> {
        let m = a.shape().0;
        // Reserved up front (small matrices never regrow); large ones grow past 64 Ki entries.
        let reserve = limit.min(1 << 16) + 1;
        let mut out = Columns {
            cols: cols.clone(),
            colptr: Vec::with_capacity(cols.len() + 1),
            rows: Vec::with_capacity(reserve),
            vals: Vec::with_capacity(reserve),
            row_counts: vec![0usize; m + 1],
        };
        out.colptr.push(0);
        // The previous column's non-zeros: each makes at most one block non-zero, so the
        // block test is kept while they leave at least half of a column's blocks empty (it
        // cost 9–15 % at 1 % density, where most blocks hold a non-zero).
        let mut last = 0usize;
        // The limit is checked once a column: past it by at most one column (m entries).
        for j in cols {
            let col = a.buffer_col(j);
            let before = out.rows.len();
            if last.saturating_mul(2) >= m / BLOCK {
                collect_runs(col, 0, &mut out);
            } else {
                let (blocks, tail) = col.as_chunks::<BLOCK>();
                for (b, block) in blocks.iter().enumerate() {
                    // A block of zeros (most of a sparse column) costs one vertical OR over
                    // its 64 entries and one test; a block with a non-zero goes by runs.
                    if any_nonzero(block) {
                        collect_runs(block, b * BLOCK, &mut out);
                    }
                }
                collect_runs(tail, col.len() - tail.len(), &mut out);
            }
            if out.rows.len() > limit {
                return None;
            }
            last = out.rows.len() - before;
            out.colptr.push(out.rows.len());
        }
        Some(out)
    }
}

/// Entries of a sparse column tested together before their runs are looked at: a 1 KiB block,
/// 64 entries. Testing every 8-entry run alone (a horizontal reduction, a compare and a branch
/// per 128 bytes) read a 10⁴ × 10⁴ matrix with 10 non-zeros a row at 60 % of the speed of a
/// plain streaming read; by blocks, 17 % faster (docs/benchmarks.md).
const BLOCK: usize = 64;

/// The non-zeros of `entries` (rows `first..` of the current column) appended to `out`, by
/// runs of 8: an all-zero run costs one OR-reduction; otherwise bit k of `mask` is set when
/// entry k is non-zero, and the loop takes one step per non-zero.
#[inline(always)]
fn collect_runs(entries: &[c64], first: usize, out: &mut Columns) {
    const RUN: usize = 8;
    for (r, run) in entries.chunks(RUN).enumerate() {
        if !any_nonzero(run) {
            continue;
        }
        let mut mask = run
            .iter()
            .enumerate()
            .fold(0u32, |m, (k, v)| m | (u32::from(nonzero_bits(v) != 0) << k));
        while mask != 0 {
            let k = mask.trailing_zeros() as usize;
            let i = first + r * RUN + k;
            out.rows.push(i);
            out.vals.push(run[k]);
            out.row_counts[i + 1] += 1;
            mask &= mask - 1;
        }
    }
}

/// Whether an entry is not `±0 ± 0i`: the bits of every entry ORed together (vectorised), one
/// test at the end.
#[inline(always)]
fn any_nonzero(entries: &[c64]) -> bool {
    entries.iter().fold(0u64, |acc, v| acc | nonzero_bits(v)) != 0
}
