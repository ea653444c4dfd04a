//! Csr → Dense: the scatter of the stored entries into a zeroed column-major matrix.

use rayon::prelude::*;

use crate::engine::{self, Family, OutColumns};
use crate::error::Result;
use crate::scalar::{ZERO, c64};
use crate::storage::{Csr, Dense, alloc};

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
            let (lo, hi) = (p[i], p[i + 1]);
            for (&c, &v) in idx[lo..hi].iter().zip(&val[lo..hi]) {
                // SAFETY: i < m and c < n (the Csr invariant), so the offset is inside the
                // m × n allocation of column stride `stride`; each row is written by one worker
                // only, and nothing reads the matrix until the scatter ends.
                unsafe { *ptr.add(i + c * stride) = v };
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
