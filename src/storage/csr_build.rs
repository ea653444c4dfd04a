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
    let (mut indptr, mut indices, mut data) = alloc::csr::csr_buffers(op, shape, ptrs, nnz)?;
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
    let (mut indptr, mut indices, mut data) = alloc::csr::csr_buffers(op, shape, ptrs, a.nnz())?;
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

/// A new Csr with the same structure and `f` applied to every stored value.
///
/// # Errors
/// As [`csr_with_values`].
pub(crate) fn csr_map(op: &str, a: &Csr, f: impl Fn(c64) -> c64) -> Result<Csr> {
    csr_with_values(op, a, |d| d.extend(a.data().iter().map(|&x| f(x))))
}

/// A new Csr with `a`'s structure and the values `fill` appends to an empty vector with room
/// for nnz(a). The three arrays come from `storage::alloc::csr::csr_buffers`: fallible, checked
/// against the memory available, advised as huge pages (with plain `to_vec` copies, `mul` of
/// the XXZ chain's H at N = 20, 1.1·10⁷ entries, took 174–181 ms, mostly faulting in 4 KiB
/// pages; now 40 ms, scipy's `2.0 * h` 33 ms).
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) when the arrays cannot be allocated.
///
/// # Panics
/// If `fill` does not append exactly nnz(a) values (a caller's bug).
pub(crate) fn csr_with_values(op: &str, a: &Csr, fill: impl FnOnce(&mut Vec<c64>)) -> Result<Csr> {
    let (mut indptr, mut indices, mut data) =
        alloc::csr::csr_buffers(op, a.shape(), a.indptr().len(), a.nnz())?;
    indptr.extend_from_slice(a.indptr());
    indices.extend_from_slice(a.indices());
    fill(&mut data);
    assert_eq!(
        data.len(),
        a.nnz(),
        "csr_with_values: one value per stored entry"
    );
    // SAFETY: the structure is copied unchanged from a valid Csr, with one value per entry.
    Ok(unsafe { Csr::from_parts_unchecked(a.shape(), indptr, indices, data) })
}

/// Whether every product `x·y` of a value of `a` and a value of `b` is non-zero once rounded, so
/// a kernel that only multiplies such pairs (a Kronecker product) can skip
/// [`drop_exact_zeros`]. True when no value is an exact zero and the smallest non-zero real or
/// imaginary parts of the two sides multiply to at least 2⁻⁹⁶⁰ (no partial product
/// underflows): then each part of the rounded product carries an error of at most γ₂ times its
/// two terms, so both parts vanishing would need `|x|²|y|² ≤ 2γ₂²|x|²|y|²`, impossible.
/// NaN and infinite values never give an exact zero. O(len(a) + len(b)).
pub(crate) fn products_nonzero(a: &[c64], b: &[c64]) -> bool {
    use crate::simd::smallest_part;
    match (smallest_part(a), smallest_part(b)) {
        (Some(x), Some(y)) => x * y >= f64::powi(2.0, -960),
        _ => false,
    }
}

crate::simd::avx2_fn! {
    /// Whether a value is exactly zero (one branch-free pass).
    fn any_exact_zero(data: &[c64]) -> bool {
        data.iter().fold(false, |acc, v| acc | (*v == ZERO))
    }
}

/// `parts + 1` cut points in `0..=starts.len()` splitting `total` entries into `parts` runs of
/// about equal size, where `starts` (non-decreasing) holds where each item's entries begin:
/// cut t is the first item starting at or after t·total / parts; the first cut is 0 and the
/// last `starts.len()`.
pub(crate) fn even_split(starts: &[usize], total: usize, parts: usize) -> Vec<usize> {
    let mut cuts: Vec<usize> = (0..=parts)
        .map(|t| {
            let k = (total as u128 * t as u128 / parts as u128) as usize;
            starts.partition_point(|&x| x < k)
        })
        .collect();
    cuts[parts] = starts.len();
    cuts
}

/// Removes the entries that are exactly zero (`0 + 0i`, either sign; NaN is kept) from CSR
/// arrays, in place. One vectorised scan when there are none, one compacting pass otherwise.
pub(crate) fn drop_exact_zeros(
    indptr: &mut [usize],
    indices: &mut Vec<usize>,
    data: &mut Vec<c64>,
) {
    let any = any_exact_zero(data);
    if !any {
        return;
    }
    let mut write = 0;
    let mut start = 0;
    for p in indptr.iter_mut().skip(1) {
        let end = *p;
        for k in start..end {
            if data[k] != ZERO {
                indices[write] = indices[k];
                data[write] = data[k];
                write += 1;
            }
        }
        start = end;
        *p = write;
    }
    indices.truncate(write);
    data.truncate(write);
}

/// Appends one row's entries, sorted by column, to `indices` and `data`, entries of the same
/// column summed (`row` is left sorted). The caller pushes the row pointer.
pub(crate) fn push_merged_row(
    row: &mut [(usize, c64)],
    indices: &mut Vec<usize>,
    data: &mut Vec<c64>,
) {
    row.sort_unstable_by_key(|e| e.0);
    let start = indices.len();
    for &(c, v) in row.iter() {
        if indices.len() > start && indices[indices.len() - 1] == c {
            let end = data.len() - 1;
            data[end] += v;
        } else {
            indices.push(c);
            data.push(v);
        }
    }
}

/// A Csr from one entry list per row, in any column order; entries of the same column are
/// summed. Each list is freed once copied, and arrays left less than half full by the summing
/// are shrunk (a 2 × 2 partial trace of a 2¹⁸-dimensional operator kept 6 MB of room for the
/// 2¹⁸ entries it summed). O(nnz log(row length) + rows).
///
/// # Errors
/// [`Error::TooLarge`](crate::Error::TooLarge) naming `op` if the arrays cannot be allocated.
pub(crate) fn csr_from_row_lists(
    op: &str,
    shape: (usize, usize),
    rows: &mut [Vec<(usize, c64)>],
) -> Result<Csr> {
    let nnz = rows.iter().map(Vec::len).sum();
    let ptrs = crate::shape::indptr_len(op, (rows.len(), shape.1))?;
    let (mut indptr, mut indices, mut data) = alloc::csr::csr_buffers(op, shape, ptrs, nnz)?;
    indptr.push(0);
    for row in rows.iter_mut() {
        push_merged_row(&mut std::mem::take(row), &mut indices, &mut data);
        indptr.push(indices.len());
    }
    if indices.len() < indices.capacity() / 2 {
        indices.shrink_to_fit();
        data.shrink_to_fit();
    }
    // SAFETY: one pointer per row after the leading 0, non-decreasing; each row was sorted
    // with equal columns merged. The callers' columns are below `shape.1` (debug-checked).
    Ok(unsafe { Csr::from_parts_unchecked(shape, indptr, indices, data) })
}
