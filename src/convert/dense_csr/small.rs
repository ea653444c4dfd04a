//! Dense → Csr for small column-major matrices: the branch-free walk by rows and the walk
//! through a bit mask of the non-zeros.

use std::mem::MaybeUninit;

use super::{csr_from_row_counts_unchecked, fill_rows};
use crate::error::Result;
use crate::scalar::c64;
use crate::simd::nonzero_bits;
use crate::storage::{Csr, Dense, alloc};

crate::simd::avx2_fn! {
    /// Dense → Csr of a column-major matrix of at most [`BRANCH_FREE`](super::BRANCH_FREE)
    /// entries: one count of the non-zeros over the columns, then one walk by rows that stores
    /// every entry at the write position and advances it only past a non-zero (no branch on
    /// the values, no cursor per row; each row's pointer is the position at its end). The arrays get one row of
    /// slack for the stores after the last non-zero. A 10 × 10 full conversion: 5 636 → 4 217
    /// instructions and 0.43 → 0.33 µs per call (4 × 4: 0.28 → 0.21 µs).
    pub(super) fn branch_free_walk(a: &Dense) -> Result<Csr> {
        const OP: &str = "to Csr";
        let (m, n) = a.shape();
        // The count vectorised across each column (`simd::zero_count`: a 10 × 10, full or
        // tridiagonal, 7–10 % faster a conversion); columns shorter than one register of four
        // values by the compiler's loop (2 × 2: 4 % slower through the kernel's call).
        let cols = a.buffer_cols(0..m, 0, n);
        let zeros = if m >= 4 {
            crate::simd::zero_count(cols)
        } else {
            crate::simd::scalar_zero_count(cols)
        };
        let nnz = m * n - zeros;
        if nnz == m * n {
            return full(a);
        }
        // One row of slack: a row's stores past the last non-zero land there.
        let room = nnz + n;
        let (mut indptr, mut indices, mut data) = alloc::csr::csr_buffers(OP, (m, n), m + 1, room)?;
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

/// Dense → Csr of a small column-major matrix with no zero entry: the pattern is known (row
/// i holds columns 0..n) and the values are the buffer read row by row (one blocked transpose,
/// `storage::transpose_values`), so nothing is tested per entry. A 10 × 10 full conversion:
/// 2 774 → 2 378 instructions, 0.238–0.254 → 0.195–0.197 µs a call. (Writing the indices by
/// raw pointers instead of `extend`, and counting the non-zeros from the AVX2 masks, were
/// measured too: level, and 0.23 µs.)
fn full(a: &Dense) -> Result<Csr> {
    const OP: &str = "to Csr";
    let (m, n) = a.shape();
    // m·n ≤ BRANCH_FREE: no product or length below overflows.
    let (mut indptr, mut indices, mut data) = alloc::csr::csr_buffers(OP, (m, n), m + 1, m * n)?;
    indptr.extend((0..=m).map(|i| i * n));
    for _ in 0..m {
        indices.extend(0..n);
    }
    let buf = a.buffer();
    let cs = usize::try_from(buf.col_stride()).unwrap_or(m);
    // SAFETY: read row by row, the buffer (unit row stride: an owned column-major Mat, whose
    // column stride cs ≥ m is its row capacity) holds a(j, i) at i·cs + j for i < n, j < m;
    // `data` has capacity m·n, slot j·n + i for a(j, i) (stride n ≥ n); distinct buffers.
    unsafe {
        crate::storage::transpose_values((buf.as_ptr(), cs), (n, m), (data.as_mut_ptr(), n), |x| x);
        // Every slot j·n + i, j < m, i < n, was written: all m·n of them.
        data.set_len(m * n);
    }
    // SAFETY: m + 1 pointers stepping by n from 0 to m·n = nnz; every row holds columns 0..n
    // in order; its values are row i of `a` (all non-zero, as counted).
    Ok(unsafe { Csr::from_parts_unchecked((m, n), indptr, indices, data) })
}

/// Serial Dense → Csr of column-major `a` through a bit mask of its non-zeros: one pass over
/// the values builds the masks (64 rows of a column per word) and the row counts; the fill then
/// visits only the marked entries, 64 rows at a time and every column in increasing order, so
/// each row comes out sorted. Past that one pass, only the non-zeros are read again, and no
/// branch depends on a single value (the two-pass walk's branch per entry was mispredicted on
/// scattered patterns). A mostly non-zero matrix (over half) is filled by the row-block walk
/// of [`fill_rows`] instead, whose branch is then well predicted.
pub(super) fn by_masks(a: &Dense) -> Result<Csr> {
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

/// `masks[j·⌈m/64⌉ + c]` = the non-zeros of rows 64c.. of column j of column-major `a`, one
/// bit each, and `counts[i]` += the non-zeros of row i.
///
/// By blocks of 64 rows, every column of a block before the next block: the block's row counts
/// stay in 64 `u16` lanes ([`mask_columns`](crate::simd::mask_columns)), flushed into `counts`
/// every `u16::MAX` columns, so no lane overflows.
fn scan_masks(a: &Dense, masks: &mut [u64], counts: &mut [usize]) {
    let (m, n) = a.shape();
    let words = m.div_ceil(64);
    let flush = usize::from(u16::MAX);
    for c in 0..words {
        let rows = c * 64..(c * 64 + 64).min(m);
        let mut block = [0u16; 64];
        for j0 in (0..n).step_by(flush) {
            let cols = j0..(j0 + flush).min(n);
            let outs = masks[j0 * words + c..].iter_mut().step_by(words);
            let chunks = cols.map(|j| &a.buffer_col(j)[rows.clone()]);
            crate::simd::mask_columns(chunks.zip(outs), &mut block);
            for (k, x) in counts[rows.clone()].iter_mut().zip(&mut block) {
                *k += usize::from(std::mem::take(x));
            }
        }
    }
}
