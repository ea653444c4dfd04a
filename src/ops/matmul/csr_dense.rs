//! Csr·Dense → Dense, re-exported as [`matmul::matmul_csr_dense`](super::matmul_csr_dense)
//! and registered in the `matmul` dispatcher.

use std::mem::MaybeUninit;

use faer::MatRef;

use super::registers::{bra_times, one_row_past_registers, register_product};
use crate::engine::{self, Family, OutColumns};
use crate::error::Result;
use crate::scalar::c64;
use crate::shape::matmul_shapes;
use crate::simd::gemm::{self, MAX_INNER, MAX_ROWS};
use crate::storage::{Csr, Dense, Layout, alloc};

/// Csr·Dense → Dense. O(nnz(a)·n). A column-major `b` gives a column-major result, column by
/// column; a row-major `b` (more than one column) a row-major one, each result row a sum of
/// contiguous rows of `b` (scipy's order). A small `a` (at most 12 rows and 64 columns) that
/// stores every entry, times a column-major `b` of several columns, is copied into a padded
/// buffer and multiplied as a small Dense·Dense (each result column in registers): 10 × 10
/// 7 137 → 3 974 instructions a call; at most 8 multiply-adds (2 × 2 · 2 × 2), each entry is
/// one plain dot. (Only a fully stored `a`: a structural zero copied as 0 would turn an
/// infinity of `b` into NaN where the sparse product adds nothing.)
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) on mismatched inner dimensions.
pub fn matmul_csr_dense(a: &Csr, b: &Dense) -> Result<Dense> {
    matmul_shapes("matmul", a.shape(), b.shape())?;
    let m = a.shape().0;
    let n = b.shape().1;
    let k = a.shape().1;
    let workers = engine::workers(Family::CsrRows, a.nnz().max(m).saturating_mul(n));
    // Every entry stored, and more than one column-major column of b: the values are a,
    // row-major, and no zero multiplied below is one the sparse product would skip.
    if n > 1 && b.layout() == Layout::ColMajor && a.stores_every_entry() {
        // At most 8 multiply-adds (2 × 2 · 2 × 2): plain dots, cheaper than the padded copy.
        if m.saturating_mul(k).saturating_mul(n) <= TINY_PRODUCT {
            return tiny_product(a, b);
        }
        // At most 12 rows and 64 columns: a's entries into a padded copy and each result
        // column in registers, as a small Dense·Dense (`simd::gemm`). A bra from 5 × 5 on is
        // read in place below, where faer is faster (8 × 8 1.4×).
        if workers == 1 && !one_row_past_registers(m, k, n, 16) {
            let mut buf = [MaybeUninit::uninit(); MAX_ROWS * MAX_INNER];
            if let Some(ap) = gemm::Operand::from_row_major(&mut buf, (m, k), a.data()) {
                return register_product(&ap, b);
            }
        }
    }
    if m == 1 && n > 1 && a.stores_every_entry() {
        // A bra with every entry stored: its values are the bra in order (columns sorted and
        // distinct), read in place as one column. 1 000 × 1 000: 902 → 399 µs, and the result
        // row-major and unpadded instead of padded four times (docs/benchmarks.md).
        let p = a.indptr();
        let x = MatRef::from_column_major_slice(&a.data()[p[0]..p[1]], k, 1);
        return bra_times(x, b, k.saturating_mul(n));
    }
    if workers == 1 && n == 1 && m > 0 {
        // A ket on one thread: its one column written straight into a fresh buffer by the row
        // dots, without the column blocks of `build_mat` or `csr_dense_cols`' groups of columns.
        let x = match b.vector_slice() {
            Some(x) => x,
            None => b.try_col(0)?,
        };
        let (p, idx, val) = (a.indptr(), a.indices(), a.data());
        // SAFETY: `csr_row_dots` writes all m entries of the column it is handed; rows 0..m
        // are a's, whose Csr invariants bound their ranges, and its column indices are below
        // its column count, b's row count (`matmul_shapes`), the length of x.
        let mat = unsafe {
            filled_column((m, 1), m, |out| {
                crate::simd::csr_row_dots(p, idx, val, [x], 0..m, &mut [out]);
                Ok(())
            })
        }?;
        return Ok(Dense::new(mat));
    }
    if b.layout() == Layout::RowMajor && n > 1 {
        // The result's buffer is n × m: its column i is result row i, `cols` a segment of it.
        // SAFETY: `csr_dense_rows` initialises every element of every slice it is handed.
        let mat = unsafe {
            alloc::build_mat("matmul", n, m, workers, |cols, i0, rows| {
                csr_dense_rows(a, b, cols, i0, rows);
            })
        }?;
        return Ok(Dense::with_layout(mat, Layout::RowMajor));
    }
    if m == 1 && n > 1 && workers == 1 {
        // A sparse bra on one thread: the kernel below, its one-entry result columns the
        // entries of one buffer column, so the result is a row-major bra, unpadded (`Dense`'s
        // docs, "Memory of a one-row matrix"), with the same sums.
        // SAFETY: each of the n one-entry slices is result column j's one row, and
        // `csr_dense_cols` writes every element of every slice.
        let mat = unsafe {
            filled_column((1, n), n, |all| {
                let mut outs = alloc::try_with_capacity("matmul", (1, n), n)?;
                outs.extend(all.chunks_mut(1));
                csr_dense_cols(a, b, 0..1, 0, &mut outs);
                Ok(())
            })
        }?;
        return Ok(Dense::bra_from_column(mat));
    }
    // SAFETY: `csr_dense_cols` writes every element of every output slice (one per row in
    // `rows`).
    let mat = unsafe {
        alloc::build_mat("matmul", m, n, workers, |rows, j0, cols| {
            csr_dense_cols(a, b, rows, j0, cols);
        })
    }?;
    Ok(Dense::new(mat))
}

/// The most multiply-adds of a Csr·Dense product made by [`tiny_product`]: a 2 × 2 times
/// 2 × 2.
const TINY_PRODUCT: usize = 8;

/// a·b for a Csr `a` that stores every entry (its values are then a, row-major) and a
/// column-major `b`: each result entry the dot of a row of a and a column of b, both
/// contiguous, written into a fresh column-major result. For the smallest products, where the
/// register kernel's padded copy and set-up cost more than the few multiply-adds.
fn tiny_product(a: &Csr, b: &Dense) -> Result<Dense> {
    let ((m, k), n) = (a.shape(), b.shape().1);
    let mut mat = alloc::reserve_mat("matmul", m, n)?;
    let cs = usize::try_from(mat.col_stride()).unwrap_or(m);
    let out = mat.as_ptr_mut();
    for j in 0..n {
        let bj = &b.buffer_col(j)[..k];
        for (i, row) in a.data().chunks_exact(k.max(1)).enumerate() {
            let s: c64 = row.iter().zip(bj).map(|(x, y)| x * y).sum();
            // SAFETY: i < m and j < n, within the reserved m × n block of column stride cs.
            unsafe { out.add(j * cs + i).write(s) };
        }
    }
    // SAFETY: every one of the m × n entries was written above; c64 has no drop glue.
    unsafe { mat.set_dims(m, n) };
    Ok(Dense::from(mat))
}

/// A fresh `len × 1` buffer whose one column `fill` writes, for the one-thread Csr·Dense
/// products of one column or one row (without the column blocks of `build_mat`); allocation
/// errors name the result's `shape`. An error from `fill` is returned, the buffer dropped.
///
/// # Safety
/// `fill` must initialise every element of the slice it is handed when it returns `Ok`.
unsafe fn filled_column(
    shape: (usize, usize),
    len: usize,
    fill: impl FnOnce(&mut [MaybeUninit<c64>]) -> Result<()>,
) -> Result<faer::Mat<c64>> {
    let mut mat = alloc::reserve_mat("matmul", len, 1).map_err(alloc::for_shape(shape))?;
    // SAFETY: `mat` has room for len × 1 entries, fresh, overlapping no operand; on `Ok`
    // `fill` has written every one (this function's contract), so the dimensions may be
    // set; c64 has no drop glue.
    unsafe {
        fill(std::slice::from_raw_parts_mut(
            mat.as_ptr_mut().cast::<MaybeUninit<c64>>(),
            len,
        ))?;
        mat.set_dims(len, 1);
    }
    Ok(mat)
}

crate::simd::avx2_fn! {
    /// Result rows `i0..` of a·b for row-major `b`, columns `cols` of each, into `rows`: each
    /// row a sum of contiguous rows of `b` (scipy's order).
    fn csr_dense_rows(
        a: &Csr,
        b: &Dense,
        cols: std::ops::Range<usize>,
        i0: usize,
        rows: &mut OutColumns<'_>,
    ) {
        let (p, idx, val) = (a.indptr(), a.indices(), a.data());
        for (k, out) in rows.iter_mut().enumerate() {
            let i = i0 + k;
            let out = engine::zeroed(out);
            for (v, &c) in val[p[i]..p[i + 1]].iter().zip(&idx[p[i]..p[i + 1]]) {
                // Row c of b (c < b's rows, the Csr invariant checked by the shapes).
                for (o, x) in out.iter_mut().zip(&b.buffer_col(c)[cols.clone()]) {
                    *o += v * x;
                }
            }
        }
    }
}

/// Rows `rows` of columns `j0..` of a·b for column-major `b`, into `cols`: the rows' sparse
/// dots against four columns at a time ([`crate::simd::csr_row_dots`]: each stored entry is
/// loaded once for four products), then the last one to three columns in one pass. A
/// column's sums do not depend on the group it falls in, so neither does the result on the
/// blocks (serial = parallel, bit for bit).
fn csr_dense_cols(
    a: &Csr,
    b: &Dense,
    rows: std::ops::Range<usize>,
    j0: usize,
    cols: &mut OutColumns<'_>,
) {
    // The unchecked reads of `csr_row_dots` rely on this (the caller checked the shapes).
    assert_eq!(a.shape().1, b.shape().0, "csr_dense_cols: inner dimensions");
    let (p, idx, val) = (a.indptr(), a.indices(), a.data());
    let (quads, rest) = cols.as_chunks_mut::<4>();
    let full = 4 * quads.len();
    for (q, quad) in quads.iter_mut().enumerate() {
        let bs: [&[c64]; 4] = std::array::from_fn(|t| b.col(j0 + 4 * q + t));
        // SAFETY: `rows` are rows of a, whose Csr invariants bound the row ranges, and its
        // column indices are below its column count, b's row count (asserted above), the
        // length of each column of b.
        unsafe { crate::simd::csr_row_dots(p, idx, val, bs, rows.clone(), quad) };
    }
    // The last one to three columns in one pass too (10 columns: three passes over a, not
    // four).
    let col = |t: usize| b.col(j0 + full + t);
    // SAFETY: as above, for the remaining columns.
    unsafe {
        match rest {
            [x, y] => crate::simd::csr_row_dots(p, idx, val, [col(0), col(1)], rows, &mut [x, y]),
            [x, y, z] => {
                let xs = [col(0), col(1), col(2)];
                crate::simd::csr_row_dots(p, idx, val, xs, rows, &mut [x, y, z]);
            }
            // No column, or one (`as_chunks_mut` leaves fewer than four).
            _ => {
                for (t, out) in rest.iter_mut().enumerate() {
                    crate::simd::csr_row_dots(p, idx, val, [col(t)], rows.clone(), &mut [out]);
                }
            }
        }
    }
}
