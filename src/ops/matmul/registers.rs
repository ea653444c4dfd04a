//! Small products with their result columns in registers (`simd::gemm`), and a bra's product
//! through faer, shared by Dense·Dense and Csr·Dense.

use faer::linalg::matmul::matmul as faer_matmul;
use faer::{Accum, MatRef};

use crate::engine::{self, OutColumns};
use crate::error::Result;
use crate::scalar::{ONE, ZERO, c64};
use crate::simd::gemm::{self, MAX_INNER};
use crate::storage::{Dense, Layout, alloc};

/// Whether an `m × k` times `k × n` product is a bra's past `limit` products, from where
/// faer's bᵀ·aᵀ into a row-major bra beats the register kernel.
#[inline]
pub(super) fn one_row_past_registers(m: usize, k: usize, n: usize, limit: usize) -> bool {
    m == 1 && k.saturating_mul(n) > limit
}

/// `a·b` for a bra `a` (one row, n > 1 result columns) read as the column `x` of its k
/// entries: faer's bᵀ·x into the result's one buffer column, row-major and unpadded
/// (`Dense`'s docs, "Memory of a one-row matrix").
pub(super) fn bra_times(x: MatRef<'_, c64>, b: &Dense, work: usize) -> Result<Dense> {
    let n = b.shape().1;
    // SAFETY: faer's product under `Accum::Replace` writes every entry of `out` without
    // reading any, so every entry is written before the result is read.
    let mut out =
        unsafe { alloc::unfilled_mat("matmul", n, 1) }.map_err(alloc::for_shape((1, n)))?;
    engine::product(work, |par| {
        faer_matmul(
            out.as_mut(),
            Accum::Replace,
            b.as_ref().transpose(),
            x,
            ONE,
            par,
        );
    });
    Ok(Dense::bra_from_column(out))
}

/// A·b for a small A held by `ap` (`simd::gemm`; b's rows = A's columns), one result column
/// at a time in registers, written once into an uninitialised column-major result: the small
/// products of [`matmul_dense`](super::matmul_dense) and [`matmul_csr_dense`](super::matmul_csr_dense). A row-major `b`'s column is gathered
/// first.
pub(super) fn register_product(ap: &gemm::Operand<'_>, b: &Dense) -> Result<Dense> {
    let (k, n) = b.shape();
    let m = ap.rows();
    let row_major = b.layout() == Layout::RowMajor;
    let bb = b.buffer();
    if let (false, 1, Ok(bs)) = (row_major, bb.row_stride(), usize::try_from(bb.col_stride())) {
        // Column-major b (every Dense buffer has unit row stride): one call for every column
        // (`gemm::columns`), no column slices handed out. 10 × 10 · 10 × 10: 3 683 → 3 213
        // instructions a call, 0.244–0.245 → 0.232–0.246 µs (the kernel's FMAs are most of
        // it). The closure below stays for row-major b, whose columns are gathered.
        let mut mat = alloc::reserve_mat("matmul", m, n)?;
        let cs = usize::try_from(mat.col_stride()).unwrap_or(m);
        // SAFETY: b's buffer is k × n with unit row stride and column stride `bs`, so column
        // j's k entries (A's column count) lie at j·bs; `mat` has room for m × n at column
        // stride cs ≥ m (an owned Mat's stride is its row capacity), fresh, overlapping
        // neither operand. `columns` writes all m rows of every column, so the dimensions may
        // be set; c64 has no drop glue.
        unsafe {
            gemm::columns(ap, (bb.as_ptr(), bs), (mat.as_ptr_mut(), cs), n);
            mat.set_dims(m, n);
        }
        return Ok(Dense::from(mat));
    }
    let fill = |_: std::ops::Range<usize>, j0: usize, cols: &mut OutColumns<'_>| {
        if !row_major {
            for (t, col) in cols.iter_mut().enumerate() {
                gemm::column(ap, &b.buffer_col(j0 + t)[..k], col);
            }
            return;
        }
        let mut bj = [ZERO; MAX_INNER];
        for (t, col) in cols.iter_mut().enumerate() {
            for (x, y) in bj[..k].iter_mut().enumerate() {
                *y = b.buffer_col(x)[j0 + t];
            }
            gemm::column(ap, &bj[..k], col);
        }
    };
    // SAFETY: `gemm::column` writes all m rows of every column handed out (one worker: whole
    // columns).
    Ok(Dense::from(unsafe {
        alloc::build_mat("matmul", m, n, 1, fill)?
    }))
}
