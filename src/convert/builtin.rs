//! The built-in kinds and the converters between them.

use super::{Batch, Conversion, Group};
use crate::engine::{self, Family};
use crate::error::Result;
use crate::gpu::GpuDense;
use crate::scalar::{ZERO, c64};
use crate::storage::{Csr, Dense, Layout, alloc};

/// Dense, Csr, GpuDense and Dia (in that order: their kinds are fixed) and the converters, with
/// QuTiP's and qutip-jax's weights (entering the GPU weighs 1, leaving it 2), and their groups
/// (GpuDense in the sticky GPU group, so GPU data stays there under `Out::Auto`).
pub(super) fn register(b: &mut Batch) {
    b.register_type::<Dense>("Dense", &["dense", "mat", "matrix"])
        .register_type::<Csr>("Csr", &["csr", "sparse"])
        .add_conversion(Conversion::new(csr_to_dense, 1.0))
        .add_conversion(Conversion::new(dense_to_csr, 1.4));
    b.register_type::<GpuDense>("GpuDense", &["gpudense", "gpu", "cuda"])
        .add_conversion(Conversion::new(GpuDense::from_dense, 1.0))
        .add_conversion(Conversion::new(GpuDense::to_dense, 2.0));
    b.add_to_group::<Dense>(Group::DENSE)
        .add_to_group::<Csr>(Group::SPARSE)
        .add_to_group::<GpuDense>(Group::DENSE)
        .add_to_group::<GpuDense>(Group::GPU);
    super::dia::register(b);
}

/// Scatters the stored entries into a zeroed column-major matrix. O(rows·cols + nnz).
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) if the dense result passes the dense limit:
/// a large Csr is never densified by accident.
pub(crate) fn csr_to_dense(a: &Csr) -> Result<Dense> {
    let (m, n) = a.shape();
    let zero = std::mem::MaybeUninit::new(ZERO);
    let workers = engine::workers(Family::Elementwise, m.saturating_mul(n));
    // SAFETY: every column slice handed out is filled with zeros in full.
    let mut mat = unsafe {
        alloc::build_mat("to Dense", m, n, workers, |_, _, cols| {
            for col in cols.iter_mut() {
                col.fill(zero);
            }
        })
    }?;
    if m == 0 || n == 0 {
        return Ok(Dense::new(mat));
    }
    let mut cols: Vec<&mut [c64]> = mat
        .col_iter_mut()
        .map(|c| {
            c.try_as_col_major_mut()
                .expect("faer columns are contiguous")
                .as_slice_mut()
        })
        .collect();
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    for i in 0..m {
        for k in p[i]..p[i + 1] {
            cols[idx[k]][i] = val[k];
        }
    }
    Ok(Dense::new(mat))
}

/// Keeps the entries that are not exactly zero (`-0.0` counts as zero, NaN does not). O(rows·cols).
///
/// Sparse patterns take one contiguous pass over the columns ([`collect_columns`]) and a counting
/// sort by row; once the non-zeros pass a quarter of the entries, the walk switches to
/// [`dense_to_csr_blocked`], whose two strided passes cost less than scattering that many entries.
pub(crate) fn dense_to_csr(a: &Dense) -> Result<Csr> {
    let (m, n) = a.shape();
    if m == 0 || n == 0 {
        return Csr::zeros_for("to Csr", m, n);
    }
    if a.layout() == Layout::RowMajor {
        return Ok(engine::simd(|| row_major_to_csr(a)));
    }
    let limit = (m * n / 4).max(64);
    let Some(csc) = engine::simd(|| collect_columns(a, limit)) else {
        return Ok(dense_to_csr_blocked(a));
    };
    let mut indptr = csc.row_counts;
    for i in 0..m {
        indptr[i + 1] += indptr[i];
    }
    let nnz = csc.rows.len();
    let mut indices = vec![0usize; nnz];
    let mut data = vec![c64::new(0.0, 0.0); nnz];
    let mut next = indptr[..m].to_vec();
    // Columns in increasing order, so each row's entries come out sorted.
    for j in 0..n {
        let span = csc.colptr[j]..csc.colptr[j + 1];
        for (&i, &v) in csc.rows[span.clone()].iter().zip(&csc.vals[span]) {
            indices[next[i]] = j;
            data[next[i]] = v;
            next[i] += 1;
        }
    }
    // SAFETY: `indptr` is the prefix sum of the row counts (m + 1 pointers from 0 to nnz),
    // each row range is filled exactly, and columns are visited in increasing order (< n).
    Ok(unsafe { Csr::from_parts_unchecked((m, n), indptr, indices, data) })
}

/// The non-zeros of a dense matrix in column order (CSC), with per-row counts.
struct Columns {
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

/// One contiguous pass over `a`'s columns collecting the non-zeros; `None` as soon as there are
/// more than `limit` of them. Runs of 8 zeros are skipped with one OR-reduction; other runs
/// become a bit mask of their non-zeros.
fn collect_columns(a: &Dense, limit: usize) -> Option<Columns> {
    const RUN: usize = 8;
    let (m, n) = a.shape();
    // Reserved up front (small matrices never regrow); large ones grow past 64 Ki entries.
    let reserve = limit.min(1 << 16) + 1;
    let mut out = Columns {
        colptr: Vec::with_capacity(n + 1),
        rows: Vec::with_capacity(reserve),
        vals: Vec::with_capacity(reserve),
        row_counts: vec![0usize; m + 1],
    };
    out.colptr.push(0);
    for j in 0..n {
        let col = a.col(j);
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

/// Dense → Csr for a row-major matrix: one contiguous pass over the rows, each row's non-zeros
/// appended in column order (so sorted). O(rows·cols).
fn row_major_to_csr(a: &Dense) -> Csr {
    let (m, _) = a.shape();
    // A vectorised counting pass, so the arrays are allocated once at their size.
    let mut indptr = Vec::with_capacity(m + 1);
    indptr.push(0);
    for i in 0..m {
        let row = a
            .buffer_col(i)
            .iter()
            .map(|v| usize::from(nonzero_bits(v) != 0));
        indptr.push(indptr[i] + row.sum::<usize>());
    }
    let nnz = indptr[m];
    let (mut indices, mut data) = (Vec::with_capacity(nnz), Vec::with_capacity(nnz));
    for i in 0..m {
        for (j, v) in a.buffer_col(i).iter().enumerate() {
            if nonzero_bits(v) != 0 {
                indices.push(j);
                data.push(*v);
            }
        }
    }
    // SAFETY: m + 1 pointers from 0 to nnz, non-decreasing; each row's columns are < n (the
    // row has n entries) and increasing.
    unsafe { Csr::from_parts_unchecked(a.shape(), indptr, indices, data) }
}

/// Dense → Csr for dense-ish matrices: a vectorised counting pass, then a block of rows at a time
/// over all columns in increasing order, so each row comes out sorted, the reads are contiguous
/// column segments and the writes stay in the block's rows.
fn dense_to_csr_blocked(a: &Dense) -> Csr {
    let (m, n) = a.shape();
    let zero = c64::new(0.0, 0.0);
    let mut indptr = vec![0usize; m + 1];
    engine::simd(|| {
        for j in 0..n {
            for (c, v) in indptr[1..].iter_mut().zip(a.col(j)) {
                *c += usize::from(nonzero_bits(v) != 0);
            }
        }
    });
    for i in 0..m {
        indptr[i + 1] += indptr[i];
    }
    let nnz = indptr[m];
    let mut indices = vec![0usize; nnz];
    let mut data = vec![zero; nnz];
    let mut next = indptr[..m].to_vec();
    const ROW_BLOCK: usize = 64;
    for r0 in (0..m).step_by(ROW_BLOCK) {
        let r1 = (r0 + ROW_BLOCK).min(m);
        for j in 0..n {
            for (i, v) in (r0..r1).zip(&a.col(j)[r0..r1]) {
                if nonzero_bits(v) != 0 {
                    indices[next[i]] = j;
                    data[next[i]] = *v;
                    next[i] += 1;
                }
            }
        }
    }
    // SAFETY: as in `dense_to_csr`: counted rows, filled in increasing column order.
    unsafe { Csr::from_parts_unchecked((m, n), indptr, indices, data) }
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
        // From all-zero through the switch to the blocked walk (limit = 37·29/4 = 268) to full.
        for per_mille in [0, 3, 30, 100, 240, 260, 300, 400, 1000] {
            let a = patterned(per_mille);
            let want = reference(&a);
            same(parts(&dense_to_csr(&a).unwrap()), want.clone());
            same(parts(&dense_to_csr_blocked(&a)), want);
        }
    }

    #[test]
    fn collect_columns_gives_up_past_its_limit() {
        let a = patterned(400);
        let nnz = reference(&a).1.len();
        assert!(collect_columns(&a, nnz - 1).is_none());
        let csc = collect_columns(&a, nnz).expect("within the limit");
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
