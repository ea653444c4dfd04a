//! Dense → Csr: the walks of a Dense into Csr (small column-major by a bit mask of the
//! non-zeros, sparse column-major by columns, dense-ish column-major by row blocks, row-major by
//! rows), the larger ones parallel by row blocks above the engine's thresholds. The way back is
//! [`csr_dense`](super::csr_dense).

use std::mem::MaybeUninit;

use rayon::prelude::*;

use crate::engine::{self, Family};
use crate::error::Result;
use crate::scalar::c64;
use crate::storage::{Csr, Dense, Layout, alloc};

/// Keeps the entries that are not exactly zero (`-0.0` counts as zero, NaN does not). O(rows·cols).
///
/// Column-major: up to [`SMALL`] entries, one pass builds a bit mask of the non-zeros and the
/// fill visits only those ([`by_masks`]; a plain two-pass walk below [`TINY`]). Larger sparse
/// patterns take one contiguous pass over the columns ([`collect_columns`],
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

/// Dense → Csr through the columns of column-major `a`: one range of columns per worker, each
/// collected in one contiguous pass ([`collect_columns`]), then a counting sort by row. `None`
/// once the non-zeros pass `limit`.
fn via_columns(a: &Dense, workers: usize, limit: usize) -> Option<Csr> {
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
    let mut indices = vec![0usize; nnz];
    let mut data = vec![c64::new(0.0, 0.0); nnz];
    let mut next = indptr[..m].to_vec();
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
struct Columns {
    /// The columns collected.
    cols: std::ops::Range<usize>,
    /// `colptr[k]..colptr[k + 1]` are the entries of column `cols.start + k`.
    colptr: Vec<usize>,
    rows: Vec<usize>,
    vals: Vec<c64>,
    /// `row_counts[i + 1]` is the number of non-zeros in row `i`; `row_counts[0] = 0`.
    row_counts: Vec<usize>,
}

/// Non-zero exactly when `v` is not `±0 + ±0i`: the bits of both parts, sign bits shifted out.
#[inline(always)]
fn nonzero_bits(v: &c64) -> u64 {
    (v.re.to_bits() | v.im.to_bits()) << 1
}

crate::simd::avx2_fn! {
    /// One contiguous pass over the columns `cols` of column-major `a` collecting the non-zeros;
    /// `None` as soon as there are more than `limit` of them. Runs of 8 zeros are skipped with one OR-reduction; other runs
    /// become a bit mask of their non-zeros.
    fn collect_columns(a: &Dense, cols: std::ops::Range<usize>, limit: usize) -> Option<Columns> {
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

crate::simd::avx2_fn! {
    /// Dense → Csr of a column-major matrix of at most [`BRANCH_FREE`] entries: one count of
    /// the non-zeros over the columns, then one walk by rows that stores every entry at the
    /// write position and advances it only past a non-zero (no branch on the values, no cursor
    /// per row; each row's pointer is the position at its end). The arrays get one row of
    /// slack for the stores after the last non-zero. A 10 × 10 full conversion: 5 636 → 4 217
    /// instructions and 0.43 → 0.33 µs per call (4 × 4: 0.28 → 0.21 µs).
    fn branch_free_walk(a: &Dense) -> Result<Csr> {
        const OP: &str = "to Csr";
        let (m, n) = a.shape();
        let nnz: usize = (0..n)
            .map(|j| {
                a.buffer_col(j)
                    .iter()
                    .map(|v| usize::from(nonzero_bits(v) != 0))
                    .sum::<usize>()
            })
            .sum();
        let mut indptr: Vec<usize> = alloc::try_with_capacity(OP, (m, n), m + 1)?;
        // One row of slack: a row's stores past the last non-zero land there.
        let room = nnz + n;
        let mut indices: Vec<usize> = alloc::try_with_capacity(OP, (m, n), room)?;
        let mut data: Vec<c64> = alloc::try_with_capacity(OP, (m, n), room)?;
        let (pp, ip, dp) = (indptr.as_mut_ptr(), indices.as_mut_ptr(), data.as_mut_ptr());
        let buf = a.buffer();
        let mut k = 0usize;
        // SAFETY: indptr has room for m + 1 pointers.
        unsafe { pp.write(0) };
        for i in 0..m {
            // k counts the non-zeros stored so far, at most nnz (counted above by the same
            // test on the same values); checked per row, so this row's n stores stay below
            // nnz + n, the arrays' room, whatever happens.
            if k > nnz {
                break;
            }
            for j in 0..n {
                // SAFETY: i < m and j < n, the buffer's dimensions (column-major: the matrix);
                // k + j < nnz + n (the check above) for the stores.
                unsafe {
                    let v = *buf.get_unchecked(i, j);
                    ip.add(k).write(j);
                    dp.add(k).write(v);
                    k += usize::from(nonzero_bits(&v) != 0);
                }
            }
            // SAFETY: i + 1 ≤ m.
            unsafe { pp.add(i + 1).write(k) };
        }
        // The count and the walk apply one test to the same values, so they agree; a
        // disagreement would leave slots unwritten, so it is checked rather than assumed.
        assert!(k == nnz, "Dense -> Csr: the count and the walk disagree");
        // SAFETY: all m + 1 pointers were written: the walk stops early only with k > nnz,
        // which the assertion above excludes.
        unsafe { indptr.set_len(m + 1) };
        // SAFETY: positions 0..nnz were all written (each non-zero's store lands at its
        // position, k reached nnz), within the capacity.
        unsafe {
            indices.set_len(nnz);
            data.set_len(nnz);
        }
        // SAFETY: one pointer per row from 0 to nnz, non-decreasing; each row's columns come
        // from the increasing walk over j < n.
        Ok(unsafe { Csr::from_parts_unchecked((m, n), indptr, indices, data) })
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

/// Serial Dense → Csr of column-major `a` through a bit mask of its non-zeros: one pass over
/// the values builds the masks (64 rows of a column per word) and the row counts; the fill then
/// visits only the marked entries, 64 rows at a time and every column in increasing order, so
/// each row comes out sorted. Past that one pass, only the non-zeros are read again, and no
/// branch depends on a single value (the two-pass walk's branch per entry was mispredicted on
/// scattered patterns). A mostly non-zero matrix (over half) is filled by the row-block walk
/// of [`fill_rows`] instead, whose branch is then well predicted.
fn by_masks(a: &Dense) -> Result<Csr> {
    const OP: &str = "to Csr";
    let (m, n) = a.shape();
    let words = m.div_ceil(64);
    let mut masks = alloc::try_vec(OP, (m, n), words.saturating_mul(n), 0u64)?;
    let mut indptr = alloc::try_vec(OP, (m, n), m + 1, 0usize)?;
    scan_masks(a, &mut masks, &mut indptr[1..]);
    // SAFETY: both fills write each row's range with its non-zeros (the ones `scan_masks`
    // counted, by the same test) in increasing column order.
    unsafe {
        csr_from_row_counts_unchecked(OP, (m, n), indptr, |indptr, indices, data| {
            if indptr[m] > m * n / 2 {
                // Mostly non-zero: the walk by row blocks, whose branch is then well
                // predicted, costs less than visiting the bits.
                fill_rows(a, 0..m, indptr, indices, data);
            } else {
                fill_from_masks(a, &masks, indptr, indices, data);
            }
        })
    }
}

/// The fill of [`by_masks`]: the entries marked in `masks`, 64 rows at a time and every column
/// in increasing order, into `indices`/`data` (exactly nnz long, every element written when
/// `indptr` counts the marked entries of each row).
fn fill_from_masks(
    a: &Dense,
    masks: &[u64],
    indptr: &[usize],
    indices: &mut [MaybeUninit<usize>],
    data: &mut [MaybeUninit<c64>],
) {
    let (m, n) = a.shape();
    let words = m.div_ceil(64);
    let mut next = [0usize; 64];
    for c in 0..words {
        // The write cursors of rows 64c..r1.
        let (r0, r1) = (c * 64, (c * 64 + 64).min(m));
        next[..r1 - r0].copy_from_slice(&indptr[r0..r1]);
        for j in 0..n {
            let col = &a.buffer_col(j)[r0..r1];
            let mut mask = masks[j * words + c];
            while mask != 0 {
                let t = mask.trailing_zeros() as usize;
                indices[next[t]].write(j);
                data[next[t]].write(col[t]);
                next[t] += 1;
                mask &= mask - 1;
            }
        }
        // Each row received exactly its counted entries, so the ranges indptr[i]..indptr[i + 1]
        // (a partition of 0..nnz) were all written.
        debug_assert!((r0..r1).all(|i| next[i - r0] == indptr[i + 1]));
    }
}

crate::simd::avx2_fn! {
    /// `masks[j·⌈m/64⌉ + c]` = the non-zeros of rows 64c.. of column j of column-major `a`, one
    /// bit each, and `counts[i]` += the non-zeros of row i.
    fn scan_masks(a: &Dense, masks: &mut [u64], counts: &mut [usize]) {
        let words = a.shape().0.div_ceil(64);
        for j in 0..a.shape().1 {
            let col = a.buffer_col(j);
            for (c, chunk) in col.chunks(64).enumerate() {
                let mask = chunk.iter().enumerate().fold(0u64, |mask, (t, v)| {
                    mask | (u64::from(nonzero_bits(v) != 0) << t)
                });
                masks[j * words + c] = mask;
                if mask.count_ones() <= 16 {
                    // Few: one increment per non-zero.
                    let mut bits = mask;
                    while bits != 0 {
                        counts[c * 64 + bits.trailing_zeros() as usize] += 1;
                        bits &= bits - 1;
                    }
                } else {
                    // Many: one vectorised pass over the chunk.
                    for (k, v) in counts[c * 64..].iter_mut().zip(chunk) {
                        *k += usize::from(nonzero_bits(v) != 0);
                    }
                }
            }
        }
    }
}

/// Up to this many entries, Dense → Csr takes the two-pass [`by_row_blocks`]: at 10×10, 0.2 µs
/// faster than [`by_masks`]; at 32×32, 1.3–1.6× slower (10 % non-zero).
const TINY: usize = 256;

/// Up to this many entries, Dense → Csr takes the branch-free walk of [`branch_free_walk`] (which stores
/// every entry, non-zero or not): 23 % faster than [`by_row_blocks`] at 10 × 10 full, 9 % on a
/// 10 × 10 tridiagonal, 25 % at 4 × 4; at 16 × 16 tridiagonal (18 % non-zero) 6 % slower.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Row-major walk keeping what `!= 0` keeps: the reference for both Dense → Csr paths.
    fn reference(a: &Dense) -> (Vec<usize>, Vec<usize>, Vec<c64>) {
        let (m, n) = a.shape();
        let (mut indptr, mut indices, mut data) = (vec![0], vec![], vec![]);
        for i in 0..m {
            for j in 0..n {
                let v = a.get(i, j);
                if v != c64::new(0.0, 0.0) {
                    indices.push(j);
                    data.push(v);
                }
            }
            indptr.push(indices.len());
        }
        (indptr, indices, data)
    }

    fn parts(c: &Csr) -> (Vec<usize>, Vec<usize>, Vec<c64>) {
        (c.indptr().to_vec(), c.indices().to_vec(), c.data().to_vec())
    }

    /// A 37×29 matrix with about `per_mille`‰ non-zeros, signed zeros and a NaN among them.
    fn patterned(per_mille: usize) -> Dense {
        Dense::from_fn(37, 29, |i, j| {
            let h = (i * 7919 + j * 104_729 + 13) % 1000;
            match h {
                0 => c64::new(f64::NAN, 0.0),
                1 => c64::new(-0.0, 0.0),
                2 => c64::new(0.0, -0.0),
                h if h < per_mille => c64::new(h as f64, -(j as f64)),
                _ => c64::new(0.0, 0.0),
            }
        })
    }

    fn same(a: (Vec<usize>, Vec<usize>, Vec<c64>), b: (Vec<usize>, Vec<usize>, Vec<c64>)) {
        assert_eq!(a.0, b.0, "indptr");
        assert_eq!(a.1, b.1, "indices");
        assert_eq!(a.2.len(), b.2.len());
        for (x, y) in a.2.iter().zip(&b.2) {
            assert!(x == y || (x.re.is_nan() && y.re.is_nan()), "{x} vs {y}");
        }
    }

    #[test]
    fn both_dense_to_csr_paths_match_a_row_major_walk() {
        // From all-zero through the switch to the blocked walk (limit = 37·29/4 = 268) to full,
        // both layouts, serial and by parallel row blocks.
        for per_mille in [0, 3, 30, 100, 240, 260, 300, 400, 1000] {
            let a = patterned(per_mille);
            let want = reference(&a);
            same(parts(&dense_to_csr(&a).unwrap()), want.clone());
            same(parts(&by_row_blocks(&a, 1).unwrap()), want.clone());
            same(parts(&by_masks(&a).unwrap()), want.clone());
            for workers in [1, 3, 40] {
                match via_columns(&a, workers, 37 * 29 / 4) {
                    Some(c) => same(parts(&c), want.clone()),
                    None => assert!(want.1.len() > 37 * 29 / 4, "{per_mille}‰ gave up"),
                }
            }
            same(parts(&by_row_blocks(&a, 3).unwrap()), want.clone());
            let r = a.clone().into_layout(Layout::RowMajor).unwrap();
            same(parts(&dense_to_csr(&r).unwrap()), want.clone());
            same(parts(&by_row_blocks(&r, 3).unwrap()), want);
        }
    }

    #[test]
    fn parallel_row_blocks_match_in_both_layouts() {
        // 300 rows: several blocks of at least 64 rows for 2 and 3 workers.
        let a = Dense::from_fn(300, 41, |i, j| {
            if (i * 31 + j * 17) % 7 < 2 {
                c64::new(i as f64, j as f64 + 1.0)
            } else {
                c64::new(0.0, 0.0)
            }
        });
        let want = reference(&a);
        let r = a.clone().into_layout(Layout::RowMajor).unwrap();
        for workers in [2, 3] {
            same(parts(&by_row_blocks(&a, workers).unwrap()), want.clone());
            same(parts(&by_row_blocks(&r, workers).unwrap()), want.clone());
        }
    }

    /// The mask walk across word boundaries (rows a multiple of 64 or not), on sparse patterns
    /// (bit walk) and mostly non-zero ones (row-block walk), signed zeros and a NaN included.
    #[test]
    fn mask_walk_matches_across_words() {
        for m in [1, 63, 64, 65, 128, 130] {
            for keep in [0, 1, 2, 6, 7] {
                let a = Dense::from_fn(m, 9, |i, j| match (i * 31 + j * 17) % 7 {
                    _ if i == 5 && j == 3 => c64::new(f64::NAN, 1.0),
                    _ if i == 2 && j == 1 => c64::new(-0.0, 0.0),
                    h if h < keep => c64::new(i as f64, j as f64 + 1.0),
                    _ => c64::new(0.0, 0.0),
                });
                let want = reference(&a);
                same(parts(&by_masks(&a).unwrap()), want.clone());
                if m * 9 > TINY && m * 9 <= SMALL {
                    same(parts(&dense_to_csr(&a).unwrap()), want);
                }
            }
        }
    }

    /// The branch-free walk on every shape up to its limit's neighbourhood: all-zero, full,
    /// sparse patterns ending in zeros (the stores past the last non-zero go to the slack),
    /// signed zeros and a NaN; and `dense_to_csr` on either side of [`BRANCH_FREE`].
    #[test]
    fn branch_free_walk_matches_a_row_major_walk() {
        for (m, n) in [
            (1, 1),
            (1, 7),
            (7, 1),
            (3, 4),
            (10, 10),
            (11, 11),
            (12, 11),
            (1, 128),
        ] {
            for keep in [0, 1, 3, 7] {
                let a = Dense::from_fn(m, n, |i, j| match (i * 31 + j * 17) % 7 {
                    _ if (i, j) == (2, 0) => c64::new(f64::NAN, -1.0),
                    _ if (i, j) == (0, 2) => c64::new(-0.0, 0.0),
                    _ if (i, j) == (m - 1, n - 1) => c64::new(0.0, -0.0),
                    h if h < keep => c64::new(i as f64 + 1.0, j as f64),
                    _ => c64::new(0.0, 0.0),
                });
                let want = reference(&a);
                same(parts(&branch_free_walk(&a).unwrap()), want.clone());
                same(parts(&dense_to_csr(&a).unwrap()), want);
            }
        }
    }

    #[test]
    fn collect_columns_gives_up_past_its_limit() {
        let a = patterned(400);
        let nnz = reference(&a).1.len();
        assert!(collect_columns(&a, 0..29, nnz - 1).is_none());
        let csc = collect_columns(&a, 0..29, nnz).expect("within the limit");
        assert_eq!(csc.rows.len(), nnz);
        assert_eq!(csc.colptr.len(), 30);
        assert_eq!(csc.row_counts.iter().sum::<usize>(), nnz);
    }

    #[test]
    fn empty_shapes_convert() {
        for (m, n) in [(0, 0), (0, 5), (5, 0)] {
            let c = dense_to_csr(&Dense::zeros(m, n)).unwrap();
            assert_eq!((c.shape(), c.nnz(), c.indptr().len()), ((m, n), 0, m + 1));
        }
    }
}
