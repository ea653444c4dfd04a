//! Csr builders shared by the kernels and converters that form a sparse result row by row.

use super::{Csr, alloc};
use crate::error::Result;
use crate::scalar::{ZERO, c64};
use crate::shape::indptr_len;

/// Sorts one row's entries by column and sums those of the same column, in place; entries
/// that sum to exactly zero are dropped. Returns the merged length (the row is
/// `row[..len]`).
pub(crate) fn merge_row(row: &mut [(usize, c64)]) -> usize {
    row.sort_unstable_by_key(|e| e.0);
    let mut len = 0;
    let mut k = 0;
    while k < row.len() {
        let (c, mut v) = row[k];
        k += 1;
        while k < row.len() && row[k].0 == c {
            v += row[k].1;
            k += 1;
        }
        if v != ZERO {
            row[len] = (c, v);
            len += 1;
        }
    }
    len
}

/// A Csr whose row `i` holds the entries `fill(i, &mut row)` appends (any column order;
/// entries of one column summed, exact zeros dropped). `fill` runs twice per row: once to
/// count, once to fill, so the arrays are allocated at their exact size (fallibly, checked
/// against the memory available) and no per-row list is kept. O(Σ generated entries ·
/// log(row length)).
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) naming `op` if the arrays cannot be allocated;
/// [`Error::Shape`](crate::Error::Shape) if the row pointers overflow.
pub(crate) fn csr_from_row_fn(
    op: &str,
    shape: (usize, usize),
    mut fill: impl FnMut(usize, &mut Vec<(usize, c64)>),
) -> Result<Csr> {
    let ptrs = indptr_len(op, shape)?;
    // The row pointers alone must fit before the counting pass walks every row (a row count
    // past the memory would otherwise be walked for nothing).
    alloc::check_memory(op, shape, ptrs as u128 * 8)?;
    let mut row = Vec::new();
    let mut nnz = 0usize;
    for i in 0..shape.0 {
        row.clear();
        fill(i, &mut row);
        nnz += merge_row(&mut row);
    }
    let (mut indptr, mut indices, mut data) = alloc::csr_buffers(op, shape, ptrs, nnz)?;
    indptr.push(0);
    for i in 0..shape.0 {
        row.clear();
        fill(i, &mut row);
        let len = merge_row(&mut row);
        for &(c, v) in &row[..len] {
            debug_assert!(c < shape.1, "{op}: column {c} of a {shape:?} result");
            indices.push(c);
            data.push(v);
        }
        indptr.push(indices.len());
    }
    debug_assert_eq!(
        indices.len(),
        nnz,
        "{op}: the generator is not deterministic"
    );
    // SAFETY: one pointer per row after the leading 0, non-decreasing; each row sorted with
    // equal columns merged by `merge_row`; the generators' columns are below `shape.1`
    // (debug-checked above).
    Ok(unsafe { Csr::from_parts_unchecked(shape, indptr, indices, data) })
}

/// `aᵀ` by a counting sort of the columns. O(nnz + rows + cols).
///
/// # Errors
/// As [`csr_from_row_fn`].
pub(crate) fn transpose(op: &str, a: &Csr) -> Result<Csr> {
    let (m, n) = a.shape();
    let shape = (n, m);
    let ptrs = indptr_len(op, shape)?;
    let (mut indptr, mut indices, mut data) = alloc::csr_buffers(op, shape, ptrs, a.nnz())?;
    indptr.resize(ptrs, 0);
    for &c in a.indices() {
        indptr[c + 1] += 1;
    }
    for k in 0..n {
        indptr[k + 1] += indptr[k];
    }
    indices.resize(a.nnz(), 0);
    data.resize(a.nnz(), ZERO);
    let mut next = indptr.clone();
    for i in 0..m {
        for p in a.indptr()[i]..a.indptr()[i + 1] {
            let c = a.indices()[p];
            let at = next[c];
            indices[at] = i;
            data[at] = a.data()[p];
            next[c] += 1;
        }
    }
    // SAFETY: a counting sort of valid Csr entries: pointers are the prefix sums of the column
    // counts, and each transposed row receives its entries in increasing original row.
    Ok(unsafe { Csr::from_parts_unchecked(shape, indptr, indices, data) })
}

/// The stored entries of row `i` of `a` as `(column, value)` pairs.
pub(crate) fn row(a: &Csr, i: usize) -> impl Iterator<Item = (usize, c64)> + '_ {
    let (p, q) = (a.indptr()[i], a.indptr()[i + 1]);
    a.indices()[p..q]
        .iter()
        .copied()
        .zip(a.data()[p..q].iter().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_merged_and_zeros_dropped() {
        let one = c64::new(1.0, 0.0);
        let m = csr_from_row_fn("test", (2, 3), |i, row| {
            if i == 0 {
                row.extend([(2, one), (0, one), (2, one), (1, one), (1, -one)]);
            }
        })
        .unwrap();
        assert_eq!(m.indptr(), &[0, 2, 2]);
        assert_eq!(m.indices(), &[0, 2]);
        assert_eq!(m.data(), &[one, c64::new(2.0, 0.0)]);
    }

    #[test]
    fn transpose_matches_entries() {
        let a = Csr::from_triplets(
            (2, 3),
            &[0, 0, 1],
            &[1, 2, 0],
            &[c64::new(1.0, 0.0), c64::new(2.0, 0.0), c64::new(3.0, 1.0)],
        )
        .unwrap();
        let t = transpose("test", &a).unwrap();
        assert_eq!(t.shape(), (3, 2));
        for i in 0..2 {
            for j in 0..3 {
                assert_eq!(a.get(i, j), t.get(j, i));
            }
        }
        assert_eq!(
            row(&t, 2).collect::<Vec<_>>(),
            vec![(0, c64::new(2.0, 0.0))]
        );
    }
}
