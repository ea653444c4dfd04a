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
        let cols = (w * per).min(n)..((w + 1) * per).min(n);
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
    /// `None` as soon as there are more than `limit` of them. Runs of 8 zeros are skipped with
    /// one OR-reduction; other runs become a bit mask of their non-zeros.
    pub(super) fn collect_columns(
        a: &Dense,
        cols: std::ops::Range<usize>,
        limit: usize,
    ) -> Option<Columns> {
        const RUN: usize = 8;
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
        for j in cols {
            let col = a.buffer_col(j);
            for (r, run) in col.chunks(RUN).enumerate() {
                // An all-zero run costs one vectorised OR-reduction; otherwise bit k of `mask` is
                // set when entry k is non-zero, and the loop takes one step per non-zero.
                if run.iter().fold(0u64, |acc, v| acc | nonzero_bits(v)) == 0 {
                    continue;
                }
                let mut mask = run
                    .iter()
                    .enumerate()
                    .fold(0u32, |m, (k, v)| m | (u32::from(nonzero_bits(v) != 0) << k));
                while mask != 0 {
                    let k = mask.trailing_zeros() as usize;
                    let i = r * RUN + k;
                    out.rows.push(i);
                    out.vals.push(run[k]);
                    out.row_counts[i + 1] += 1;
                    mask &= mask - 1;
                }
                if out.rows.len() > limit {
                    return None;
                }
            }
            out.colptr.push(out.rows.len());
        }
        Some(out)
    }
}
