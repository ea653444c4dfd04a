//! The built-in kinds and the converters between them.

use super::{Batch, Conversion};
use crate::c64;
use crate::engine::{self, Family};
use crate::error::Result;
use crate::storage::{Csr, Dense};

/// Dense, Csr and GpuDense (in that order: their kinds are fixed) and the converters, with
/// QuTiP's and qutip-jax's weights.
pub(super) fn register(b: &mut Batch) {
    b.register_type::<Dense>("Dense", &["dense", "mat", "matrix"])
        .register_type::<Csr>("Csr", &["csr", "sparse"])
        .add_conversion(Conversion::new(csr_to_dense, 1.0))
        .add_conversion(Conversion::new(dense_to_csr, 1.4));
    crate::gpu::register(b);
}

/// Scatters the stored entries into a zeroed column-major matrix. O(rows·cols + nnz).
pub(crate) fn csr_to_dense(a: &Csr) -> Result<Dense> {
    let (m, n) = a.shape();
    let zero = std::mem::MaybeUninit::new(c64::new(0.0, 0.0));
    let workers = engine::workers(Family::Elementwise, m * n);
    let mut mat = engine::dense_build(m, n, workers, |_, _, cols| {
        for col in cols.iter_mut() {
            col.fill(zero);
        }
    });
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

/// Keeps the entries that are not exactly zero. O(rows·cols).
pub(crate) fn dense_to_csr(a: &Dense) -> Result<Csr> {
    let (m, n) = a.shape();
    let zero = c64::new(0.0, 0.0);
    // Count per row first so the arrays are allocated exactly once (branch-free, vectorised).
    let mut indptr = vec![0usize; m + 1];
    engine::simd(|| {
        for j in 0..n {
            for (c, v) in indptr[1..].iter_mut().zip(a.col(j)) {
                *c += usize::from(*v != zero);
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
    // A block of rows at a time, all columns in increasing order: each row comes out sorted,
    // the reads are contiguous column segments and the writes stay in the block's rows.
    const ROW_BLOCK: usize = 64;
    for r0 in (0..m).step_by(ROW_BLOCK) {
        let r1 = (r0 + ROW_BLOCK).min(m);
        for j in 0..n {
            for (i, v) in (r0..r1).zip(&a.col(j)[r0..r1]) {
                if *v != zero {
                    indices[next[i]] = j;
                    data[next[i]] = *v;
                    next[i] += 1;
                }
            }
        }
    }
    Ok(Csr::from_parts((m, n), indptr, indices, data))
}
