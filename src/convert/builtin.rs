//! The built-in kinds and the converters between them.

use super::{Batch, Conversion};
use crate::c64;
use crate::error::Result;
use crate::storage::{Csr, Dense};

/// Dense and Csr (in that order: their kinds are fixed) and the two converters, with QuTiP's
/// weights.
pub(super) fn register(b: &mut Batch) {
    b.register_type::<Dense>("Dense", &["dense", "mat", "matrix"])
        .register_type::<Csr>("Csr", &["csr", "sparse"])
        .add_conversion(Conversion::new(csr_to_dense, 1.0))
        .add_conversion(Conversion::new(dense_to_csr, 1.4));
}

/// Scatters the stored entries into a zeroed column-major matrix. O(rows·cols + nnz).
pub(crate) fn csr_to_dense(a: &Csr) -> Result<Dense> {
    let (m, n) = a.shape();
    let mut out = Dense::zeros(m, n);
    let mat = out.as_mat_mut();
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    for i in 0..m {
        for k in p[i]..p[i + 1] {
            mat[(i, idx[k])] += val[k];
        }
    }
    Ok(out)
}

/// Keeps the entries that are not exactly zero. O(rows·cols).
pub(crate) fn dense_to_csr(a: &Dense) -> Result<Csr> {
    let (m, n) = a.shape();
    let zero = c64::new(0.0, 0.0);
    // Count per row first so the arrays are allocated exactly once.
    let mut indptr = vec![0usize; m + 1];
    for j in 0..n {
        for (i, v) in a.col(j).iter().enumerate() {
            if *v != zero {
                indptr[i + 1] += 1;
            }
        }
    }
    for i in 0..m {
        indptr[i + 1] += indptr[i];
    }
    let nnz = indptr[m];
    let mut indices = vec![0usize; nnz];
    let mut data = vec![zero; nnz];
    let mut next = indptr[..m].to_vec();
    // Columns are visited in increasing order, so each row comes out sorted.
    for j in 0..n {
        for (i, v) in a.col(j).iter().enumerate() {
            if *v != zero {
                indices[next[i]] = j;
                data[next[i]] = *v;
                next[i] += 1;
            }
        }
    }
    Ok(Csr::from_parts((m, n), indptr, indices, data))
}
