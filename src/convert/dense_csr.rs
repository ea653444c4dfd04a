//! The Dense ↔ Csr conversion kernels: the scatter into a zeroed Dense, and the three walks of
//! a Dense into Csr (sparse column-major, dense-ish column-major by row blocks, row-major by
//! rows), each parallel by row blocks above the engine's thresholds.

use rayon::prelude::*;

use crate::engine::{self, Family, OutColumns};
use crate::error::Result;
use crate::scalar::{ZERO, c64};
use crate::storage::{Csr, Dense, Layout, alloc};

/// The result's entries, shared by the workers of the parallel scatter.
#[derive(Clone, Copy)]
struct Entries(*mut c64);

impl Entries {
    /// The pointer (a method, so that closures capture the `Send` wrapper, not its field).
    fn get(self) -> *mut c64 {
        self.0
    }
}

// SAFETY: the workers given an `Entries` write disjoint entries (each its own rows) of a matrix
// that outlives them and that nothing else touches meanwhile.
unsafe impl Send for Entries {}
// SAFETY: as for `Send`: shared only to write disjoint entries.
unsafe impl Sync for Entries {}

crate::simd::avx2_fn! {
    /// Fills every slice of `cols` with zeros (256-bit stores where the CPU has AVX2).
    fn zero_cols(cols: &mut OutColumns<'_>) {
        for col in cols.iter_mut() {
            col.fill(std::mem::MaybeUninit::new(ZERO));
        }
    }
}

/// Scatters the stored entries into a zeroed column-major matrix (by row blocks in parallel
/// above the engine's Csr threshold). O(rows·cols + nnz).
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) if the dense result passes the dense limit:
/// a large Csr is never densified by accident.
pub(crate) fn csr_to_dense(a: &Csr) -> Result<Dense> {
    let (m, n) = a.shape();
    let workers = engine::workers(Family::Elementwise, m.saturating_mul(n));
    // SAFETY: every column slice handed out is filled with zeros in full.
    let mut mat =
        unsafe { alloc::build_mat("to Dense", m, n, workers, |_, _, cols| zero_cols(cols)) }?;
    if m == 0 || n == 0 {
        return Ok(Dense::new(mat));
    }
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    let stride = usize::try_from(mat.col_stride()).unwrap_or(m);
    let base = Entries(mat.as_ptr_mut());
    // Row i's entries, written straight into the column-major buffer.
    let scatter = |rows: std::ops::Range<usize>| {
        let ptr = base.get();
        for i in rows {
            for k in p[i]..p[i + 1] {
                // SAFETY: i < m and idx[k] < n (the Csr invariant), so the offset is inside the
                // m × n allocation of column stride `stride`; each row is written by one worker
                // only, and nothing reads the matrix until the scatter ends.
                unsafe { *ptr.add(i + idx[k] * stride) = val[k] };
            }
        }
    };
    let scatter_workers = engine::workers(Family::CsrRows, a.nnz());
    if scatter_workers > 1 {
        // Row blocks in parallel: each worker writes only the entries of its own rows.
        let block = m.div_ceil(scatter_workers * 4).max(1);
        (0..m.div_ceil(block))
            .into_par_iter()
            .for_each(|b| scatter(b * block..((b + 1) * block).min(m)));
    } else {
        scatter(0..m);
    }
    Ok(Dense::new(mat))
}

/// Keeps the entries that are not exactly zero (`-0.0` counts as zero, NaN does not). O(rows·cols).
///
/// Column-major, sparse patterns take one contiguous pass over the columns ([`collect_columns`],
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
        return Ok(by_row_blocks(a, workers));
    }
    if m.saturating_mul(n) <= SMALL {
        // Small: two passes, three allocations (QuTiP's count), no intermediate CSC.
        return Ok(by_row_blocks(a, 1));
    }
    let limit = (m * n / 4).max(64);
    Ok(match via_columns(a, workers, limit) {
        Some(c) => c,
        None => by_row_blocks(a, workers),
    })
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
fn by_row_blocks(a: &Dense, workers: usize) -> Csr {
    let (m, n) = a.shape();
    let block = if workers > 1 {
        m.div_ceil(workers * 4).max(PAR_ROW_BLOCK)
    } else {
        m.max(1)
    };
    let mut indptr = vec![0usize; m + 1];
    if workers > 1 {
        indptr[1..]
            .par_chunks_mut(block)
            .enumerate()
            .for_each(|(b, c)| count_rows(a, b * block, c));
    } else {
        count_rows(a, 0, &mut indptr[1..]);
    }
    for i in 0..m {
        indptr[i + 1] += indptr[i];
    }
    let nnz = indptr[m];
    let mut indices = vec![0usize; nnz];
    let mut data = vec![ZERO; nnz];
    if workers > 1 {
        // Each block's share of the arrays: rows [r0, r1) fill indptr[r0]..indptr[r1].
        let mut parts = Vec::with_capacity(m.div_ceil(block));
        let (mut ix, mut dv) = (indices.as_mut_slice(), data.as_mut_slice());
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
            .for_each(|(rows, x, y)| fill_rows(a, rows, &indptr, x, y));
    } else {
        fill_rows(a, 0..m, &indptr, &mut indices, &mut data);
    }
    // SAFETY: `indptr` is the prefix sum of the row counts (m + 1 pointers from 0 to nnz); each
    // row's range is filled exactly by `fill_rows`, with columns < n in increasing order.
    unsafe { Csr::from_parts_unchecked((m, n), indptr, indices, data) }
}

/// Up to this many entries, Dense → Csr always takes the two-pass [`by_row_blocks`]: measured
/// 30 % faster than collecting the columns at 10×10 and 10 % at 100×100.
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
    /// `indptr[rows.start]..indptr[rows.end]`, each row in increasing column order.
    fn fill_rows(
        a: &Dense,
        rows: std::ops::Range<usize>,
        indptr: &[usize],
        indices: &mut [usize],
        data: &mut [c64],
    ) {
        let base = indptr[rows.start];
        match a.layout() {
            Layout::RowMajor => {
                let mut k = 0;
                for i in rows {
                    for (j, v) in a.buffer_col(i).iter().enumerate() {
                        if nonzero_bits(v) != 0 {
                            indices[k] = j;
                            data[k] = *v;
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
                // The block's write cursors, on the stack: `step` ≤ PAR_ROW_BLOCK rows.
                let mut next = [0usize; PAR_ROW_BLOCK];
                for r0 in rows.clone().step_by(step) {
                    let r1 = (r0 + step).min(rows.end);
                    for (q, p) in next.iter_mut().zip(&indptr[r0..r1]) {
                        *q = p - base;
                    }
                    for j in 0..a.shape().1 {
                        for (t, v) in a.buffer_col(j)[r0..r1].iter().enumerate() {
                            if nonzero_bits(v) != 0 {
                                indices[next[t]] = j;
                                data[next[t]] = *v;
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
            same(parts(&by_row_blocks(&a, 1)), want.clone());
            for workers in [1, 3, 40] {
                match via_columns(&a, workers, 37 * 29 / 4) {
                    Some(c) => same(parts(&c), want.clone()),
                    None => assert!(want.1.len() > 37 * 29 / 4, "{per_mille}‰ gave up"),
                }
            }
            same(parts(&by_row_blocks(&a, 3)), want.clone());
            let r = a.clone().into_layout(Layout::RowMajor).unwrap();
            same(parts(&dense_to_csr(&r).unwrap()), want.clone());
            same(parts(&by_row_blocks(&r, 3)), want);
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
            same(parts(&by_row_blocks(&a, workers)), want.clone());
            same(parts(&by_row_blocks(&r, workers)), want.clone());
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
