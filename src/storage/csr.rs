//! Compressed sparse row storage on top of `sprs::CsMat`.

use std::fmt;

use sprs::CsMat;

use super::{Storage, alloc, display};
use crate::error::{Error, Result};
use crate::scalar::{ONE, ZERO, c64};
use crate::shape::indptr_len;

/// A sparse matrix in compressed sparse row form: an [`sprs::CsMat<c64>`].
///
/// Invariants, checked by every constructor: CSR storage, row pointers starting at 0 and
/// non-decreasing, column indices in range and strictly increasing within each row (so no
/// duplicates). Explicit zeros may be stored.
///
/// ```
/// use polymat::{Csr, c64};
///
/// // Unsorted columns are sorted and duplicates summed.
/// let one = c64::new(1.0, 0.0);
/// let m = Csr::from_raw((2, 3), vec![0, 3, 3], vec![2, 0, 2], vec![one, one, one]).unwrap();
/// assert_eq!(m.nnz(), 2);
/// assert_eq!(m.get(0, 2), c64::new(2.0, 0.0));
/// assert_eq!(m.to_string(), "[[1, 0, 2], [0, 0, 0]]");
/// assert_eq!(format!("{m:#}"), "Csr(2×3, nnz=2)");
///
/// // Bad arrays are an error, never a panic.
/// assert!(Csr::from_raw((2, 3), vec![0, 1], vec![5], vec![one]).is_err());
/// ```
#[derive(Clone, PartialEq)]
pub struct Csr {
    mat: CsMat<c64>,
}

fn invalid(shape: (usize, usize), reason: impl Into<String>) -> Error {
    Error::InvalidCsr {
        shape,
        reason: reason.into(),
    }
}

impl Csr {
    /// Builds from raw CSR arrays, validating them.
    ///
    /// Columns within a row may come in any order (they are sorted); duplicate entries in a row
    /// are summed.
    ///
    /// # Errors
    /// [`Error::InvalidCsr`] if `indptr` does not have `rows + 1` entries, does not start at 0,
    /// decreases or does not end at `indices.len()`; if `indices` and `data` differ in length;
    /// or if a column index is out of range.
    ///
    /// # Cost
    /// O(nnz) when the columns are already sorted, O(nnz log(row length)) otherwise.
    pub fn from_raw(
        shape: (usize, usize),
        indptr: Vec<usize>,
        mut indices: Vec<usize>,
        mut data: Vec<c64>,
    ) -> Result<Csr> {
        let rows = shape.0;
        let sorted =
            check_arrays(shape, &indptr, &indices, data.len()).map_err(|r| invalid(shape, r))?;
        if sorted {
            // SAFETY: `check_arrays` checked every structural property: rows + 1 row pointers
            // from 0 to nnz, non-decreasing, and sorted, unique, in-range columns in every row.
            return Ok(unsafe { Csr::from_parts_unchecked(shape, indptr, indices, data) });
        }
        // Sort each row by column and sum duplicates, compacting in place: the arrays and the
        // row pointers too (a row's new end is never past its old one, read before it is
        // overwritten), so no second array of rows + 1 pointers.
        let mut indptr = indptr;
        let longest = indptr.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
        let mut row: Vec<(usize, c64)> = alloc::try_with_capacity("Csr::from_raw", shape, longest)?;
        let (mut write, mut begin) = (0, 0);
        for i in 0..rows {
            let end = indptr[i + 1];
            row.clear();
            row.extend((begin..end).map(|k| (indices[k], data[k])));
            begin = end;
            row.sort_unstable_by_key(|e| e.0);
            let start = write;
            for &(c, v) in &row {
                if write > start && indices[write - 1] == c {
                    data[write - 1] += v;
                } else {
                    indices[write] = c;
                    data[write] = v;
                    write += 1;
                }
            }
            indptr[i + 1] = write;
        }
        indices.truncate(write);
        data.truncate(write);
        // SAFETY: the row pointers count the entries written row by row (rows + 1 of them,
        // from 0), and each row was sorted with duplicates merged; columns were range-checked.
        Ok(unsafe { Csr::from_parts_unchecked(shape, indptr, indices, data) })
    }

    /// Builds from `(row, column, value)` triplets; duplicates are summed.
    ///
    /// # Errors
    /// [`Error::InvalidCsr`] if the three slices differ in length or an index is out of range.
    pub fn from_triplets(
        shape: (usize, usize),
        rows: &[usize],
        cols: &[usize],
        values: &[c64],
    ) -> Result<Csr> {
        if rows.len() != cols.len() || rows.len() != values.len() {
            return Err(invalid(
                shape,
                format!(
                    "triplet arrays differ in length: {} rows, {} columns, {} values",
                    rows.len(),
                    cols.len(),
                    values.len()
                ),
            ));
        }
        if let Some(&r) = rows.iter().find(|&&r| r >= shape.0) {
            return Err(invalid(
                shape,
                format!("row index {r} is out of range for {} rows", shape.0),
            ));
        }
        if let Some(&c) = cols.iter().find(|&&c| c >= shape.1) {
            return Err(invalid(
                shape,
                format!("column index {c} is out of range for {} columns", shape.1),
            ));
        }
        // Counting sort by row (the cursors in the row pointers), then from_raw sorts columns
        // and sums duplicates.
        const OP: &str = "Csr::from_triplets";
        let (len, nnz) = (indptr_len(OP, shape)?, rows.len());
        alloc::check_memory(OP, shape, alloc::csr::csr_bytes(len.saturating_add(1), nnz))?;
        // SAFETY: every row index is below shape.0 (checked above).
        let mut indptr = unsafe { alloc::csr::counting_cursors(OP, shape, rows, shape.0)? };
        let mut indices = alloc::try_vec(OP, shape, nnz, 0usize)?;
        let mut data = alloc::try_vec(OP, shape, nnz, c64::new(0.0, 0.0))?;
        for k in 0..nnz {
            let slot = &mut indptr[rows[k] + 1];
            indices[*slot] = cols[k];
            data[*slot] = values[k];
            *slot += 1;
        }
        indptr.truncate(len);
        Csr::from_raw(shape, indptr, indices, data)
    }

    /// A matrix from dense rows, keeping the entries that are not exactly zero.
    ///
    /// # Errors
    /// [`Error::InvalidCsr`] if the rows have different lengths.
    pub fn from_rows<R: AsRef<[c64]>>(rows: &[R]) -> Result<Csr> {
        let ncols = rows.first().map_or(0, |r| r.as_ref().len());
        let shape = (rows.len(), ncols);
        let mut indptr = Vec::with_capacity(rows.len() + 1);
        indptr.push(0);
        let (mut indices, mut data) = (Vec::new(), Vec::new());
        for (i, r) in rows.iter().enumerate() {
            let r = r.as_ref();
            if r.len() != ncols {
                return Err(invalid(
                    shape,
                    format!("row {i} has {} entries but row 0 has {ncols}", r.len()),
                ));
            }
            for (j, &v) in r.iter().enumerate() {
                if v != c64::new(0.0, 0.0) {
                    indices.push(j);
                    data.push(v);
                }
            }
            indptr.push(indices.len());
        }
        // SAFETY: one pointer per row plus the leading 0, non-decreasing; columns are pushed in
        // increasing order within a row and are below `ncols`.
        Ok(unsafe { Csr::from_parts_unchecked(shape, indptr, indices, data) })
    }

    /// Wraps an `sprs` matrix; a CSC matrix is converted to CSR.
    ///
    /// # Errors
    /// [`Error::InvalidCsr`] if its structure is invalid (sprs allows some structures polymat
    /// does not, such as row pointers that do not start at zero; those are normalised).
    pub fn from_csmat(mat: CsMat<c64>) -> Result<Csr> {
        let mat = if mat.is_csr() { mat } else { mat.to_csr() };
        let shape = mat.shape();
        let (indptr, indices, data) = mat.into_raw_storage();
        let base = indptr.first().copied().unwrap_or(0);
        let indptr = if base == 0 {
            indptr
        } else {
            indptr.iter().map(|p| p - base).collect()
        };
        let (indices, data) = if base == 0 {
            (indices, data)
        } else {
            let end = base + indptr.last().copied().unwrap_or(0);
            (indices[base..end].to_vec(), data[base..end].to_vec())
        };
        Csr::from_raw(shape, indptr, indices, data)
    }

    /// Builds from raw CSR arrays without checking them: O(1) in release builds.
    ///
    /// In debug builds the whole structure is checked (and a violation panics), so a kernel that
    /// builds bad arrays fails its tests.
    ///
    /// # Safety
    /// The arrays must satisfy every invariant [`Csr::from_raw`] checks, in their strict form:
    /// `indptr.len() == shape.0 + 1`, `indptr[0] == 0`, `indptr` non-decreasing and ending at
    /// `indices.len() == data.len()`, and within each row the column indices strictly
    /// increasing and below `shape.1`. Kernels index the arrays without bounds checks on the
    /// strength of this, so a violation is undefined behaviour.
    ///
    /// ```
    /// use polymat::{Csr, c64};
    /// let one = c64::new(1.0, 0.0);
    /// // SAFETY: two rows, row 0 holds column 1, row 1 holds column 0: sorted and in range.
    /// let x = unsafe { Csr::from_parts_unchecked((2, 2), vec![0, 1, 2], vec![1, 0], vec![one, one]) };
    /// assert_eq!(x.get(0, 1), one);
    /// ```
    #[inline]
    pub unsafe fn from_parts_unchecked(
        shape: (usize, usize),
        indptr: Vec<usize>,
        indices: Vec<usize>,
        data: Vec<c64>,
    ) -> Csr {
        #[cfg(debug_assertions)]
        if let Err(reason) = check_structure(shape, &indptr, &indices, &data) {
            panic!("Csr::from_parts_unchecked on invalid arrays: {reason}");
        }
        // SAFETY: the caller guarantees the structure sprs requires (this function's contract),
        // which is what `new_unchecked` trusts.
        let mat = unsafe {
            CsMat::new_unchecked(sprs::CompressedStorage::CSR, shape, indptr, indices, data)
        };
        Csr { mat }
    }

    /// The `rows × cols` zero matrix (no stored entries).
    ///
    /// # Panics
    /// If `rows + 1` row pointers cannot be allocated; [`Csr::try_zeros`] returns the error.
    pub fn zeros(rows: usize, cols: usize) -> Csr {
        Csr::try_zeros(rows, cols)
            .unwrap_or_else(|e| panic!("{e} (Csr::try_zeros returns this as an Error)"))
    }

    /// The `rows × cols` zero matrix (no stored entries): O(rows) memory for the row pointers.
    ///
    /// # Errors
    /// [`Error::Shape`] if `rows + 1` overflows, [`Error::TooLarge`] if the row pointers
    /// cannot be allocated.
    ///
    /// ```
    /// use polymat::Csr;
    /// assert_eq!(Csr::try_zeros(3, usize::MAX)?.nnz(), 0);
    /// assert!(Csr::try_zeros(usize::MAX, 1).is_err());
    /// # Ok::<(), polymat::Error>(())
    /// ```
    pub fn try_zeros(rows: usize, cols: usize) -> Result<Csr> {
        Csr::zeros_for("Csr::zeros", rows, cols)
    }

    /// [`Csr::try_zeros`] with errors naming `op`.
    pub(crate) fn zeros_for(op: &str, rows: usize, cols: usize) -> Result<Csr> {
        let len = indptr_len(op, (rows, cols))?;
        let indptr = alloc::try_vec(op, (rows, cols), len, 0usize)?;
        // SAFETY: all row pointers 0, no entries.
        Ok(unsafe { Csr::from_parts_unchecked((rows, cols), indptr, Vec::new(), Vec::new()) })
    }

    /// The `n × n` identity.
    ///
    /// # Panics
    /// If it cannot be allocated; [`Csr::try_identity`] returns the error.
    pub fn identity(n: usize) -> Csr {
        Csr::scaled_identity(n, ONE)
    }

    /// The `n × n` identity.
    ///
    /// # Errors
    /// As [`Csr::try_scaled_identity`].
    pub fn try_identity(n: usize) -> Result<Csr> {
        Csr::try_scaled_identity(n, ONE)
    }

    /// `scale` times the `n × n` identity.
    ///
    /// # Panics
    /// If it cannot be allocated; [`Csr::try_scaled_identity`] returns the error.
    pub fn scaled_identity(n: usize, scale: c64) -> Csr {
        Csr::try_scaled_identity(n, scale)
            .unwrap_or_else(|e| panic!("{e} (Csr::try_scaled_identity returns this as an Error)"))
    }

    /// `scale` times the `n × n` identity.
    ///
    /// # Errors
    /// [`Error::Shape`] if `n + 1` overflows, [`Error::TooLarge`] if the arrays cannot be
    /// allocated.
    pub fn try_scaled_identity(n: usize, scale: c64) -> Result<Csr> {
        const OP: &str = "identity";
        let len = indptr_len(OP, (n, n))?;
        let (mut indptr, mut indices, mut data) = alloc::csr::csr_buffers(OP, (n, n), len, n)?;
        indptr.extend(0..len);
        indices.extend(0..n);
        data.resize(n, scale);
        // SAFETY: row i holds the single column i.
        Ok(unsafe { Csr::from_parts_unchecked((n, n), indptr, indices, data) })
    }

    /// `(rows, columns)`.
    #[inline]
    pub fn shape(&self) -> (usize, usize) {
        self.mat.shape()
    }

    /// The number of stored entries (explicit zeros included).
    #[inline]
    pub fn nnz(&self) -> usize {
        self.mat.nnz()
    }

    /// Whether every one of the m·n entries is stored (some m·n > 0 of them). Columns are
    /// sorted and distinct, so each row then holds 0..n and the values are the matrix
    /// row-major: the transposes and Csr → Dense take one transposing copy of them.
    pub(crate) fn stores_every_entry(&self) -> bool {
        let (m, n) = self.shape();
        self.nnz() > 0 && Some(self.nnz()) == m.checked_mul(n)
    }

    /// Row pointers: row `i` is stored at `indptr()[i]..indptr()[i + 1]`.
    #[inline]
    pub fn indptr(&self) -> &[usize] {
        self.mat.indptr().into_raw_storage()
    }

    /// Column indices of the stored entries.
    #[inline]
    pub fn indices(&self) -> &[usize] {
        self.mat.indices()
    }

    /// Values of the stored entries.
    #[inline]
    pub fn data(&self) -> &[c64] {
        self.mat.data()
    }

    /// Values of the stored entries, mutably (the structure stays fixed).
    #[inline]
    pub fn data_mut(&mut self) -> &mut [c64] {
        self.mat.data_mut()
    }

    /// Entry `(i, j)`, zero if not stored. O(log(row length)).
    ///
    /// # Panics
    /// If `(i, j)` is out of bounds, like [`Dense::get`](crate::Dense::get);
    /// [`Csr::try_get`] returns `None` instead.
    pub fn get(&self, i: usize, j: usize) -> c64 {
        self.try_get(i, j).unwrap_or_else(|| {
            let (r, c) = self.shape();
            panic!("index ({i}, {j}) out of bounds for a {r}×{c} Csr (Csr::try_get returns None instead)")
        })
    }

    /// Entry `(i, j)` (zero if not stored), or `None` if it is out of bounds.
    ///
    /// ```
    /// use polymat::{Csr, c64};
    /// let i = Csr::identity(2);
    /// assert_eq!(i.try_get(1, 1), Some(c64::new(1.0, 0.0)));
    /// assert_eq!(i.try_get(0, 1), Some(c64::new(0.0, 0.0)));
    /// assert_eq!(i.try_get(0, 99), None);
    /// ```
    pub fn try_get(&self, i: usize, j: usize) -> Option<c64> {
        let (r, c) = self.shape();
        if i >= r || j >= c {
            return None;
        }
        let p = self.indptr();
        let cols = &self.indices()[p[i]..p[i + 1]];
        Some(match cols.binary_search(&j) {
            Ok(k) => self.data()[p[i] + k],
            Err(_) => ZERO,
        })
    }

    /// The underlying `sprs` matrix.
    #[inline]
    pub fn as_csmat(&self) -> &CsMat<c64> {
        &self.mat
    }

    /// Unwraps the `sprs` matrix (no copy).
    pub fn into_csmat(self) -> CsMat<c64> {
        self.mat
    }

    /// Unwraps into `(indptr, indices, data)` (no copy).
    pub fn into_raw(self) -> (Vec<usize>, Vec<usize>, Vec<c64>) {
        self.mat.into_raw_storage()
    }
}

impl Storage for Csr {
    fn shape(&self) -> (usize, usize) {
        Csr::shape(self)
    }
}

impl TryFrom<CsMat<c64>> for Csr {
    type Error = Error;
    fn try_from(mat: CsMat<c64>) -> Result<Csr> {
        Csr::from_csmat(mat)
    }
}

impl From<Csr> for CsMat<c64> {
    fn from(c: Csr) -> CsMat<c64> {
        c.mat
    }
}

impl fmt::Display for Csr {
    /// The entries, as numpy prints the dense array (`[[0, 1], [1, 0]]`, truncated with `...`
    /// above 1000 entries, so that printing a huge operator looks up at most 49 of them); `{:#}` prints
    /// the summary `Csr(2×2, nnz=2)`. See [`storage`](crate::storage#printing) for the rules.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            let (r, c) = self.shape();
            return write!(f, "Csr({r}×{c}, nnz={})", self.nnz());
        }
        display::matrix(f, self.shape(), |i, j| self.try_get(i, j).unwrap_or(ZERO))
    }
}

impl fmt::Debug for Csr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:#}")
    }
}

/// Checks raw CSR arrays: rows + 1 row pointers from 0 to nnz, non-decreasing, as many indices
/// as values, columns in range. Returns whether every row is also strictly increasing (sorted,
/// no duplicates), the remaining part of [`Csr::from_parts_unchecked`]'s contract.
fn check_arrays(
    shape: (usize, usize),
    indptr: &[usize],
    indices: &[usize],
    values: usize,
) -> std::result::Result<bool, String> {
    let (rows, cols) = shape;
    if rows.checked_add(1) != Some(indptr.len()) {
        return Err(format!(
            "indptr has {} entries, expected rows + 1 = {}",
            indptr.len(),
            rows as u128 + 1
        ));
    }
    if indices.len() != values {
        return Err(format!(
            "indices has {} entries but data has {values}",
            indices.len()
        ));
    }
    if indptr[0] != 0 {
        return Err(format!("indptr[0] is {}, expected 0", indptr[0]));
    }
    if let Some(i) = indptr.windows(2).position(|w| w[1] < w[0]) {
        return Err(format!(
            "indptr decreases at row {i}: {} > {}",
            indptr[i],
            indptr[i + 1]
        ));
    }
    if indptr[rows] != indices.len() {
        return Err(format!(
            "indptr ends at {} but there are {} entries",
            indptr[rows],
            indices.len()
        ));
    }
    if let Some(&c) = indices.iter().find(|&&c| c >= cols) {
        return Err(format!(
            "column index {c} is out of range for {cols} columns"
        ));
    }
    Ok(indptr
        .windows(2)
        .all(|w| indices[w[0]..w[1]].windows(2).all(|c| c[0] < c[1])))
}

/// The full structural check of [`Csr::from_parts_unchecked`]'s contract.
#[cfg(any(debug_assertions, test))]
fn check_structure(
    shape: (usize, usize),
    indptr: &[usize],
    indices: &[usize],
    data: &[c64],
) -> std::result::Result<(), String> {
    match check_arrays(shape, indptr, indices, data.len())? {
        true => Ok(()),
        false => Err("a row's columns are not strictly increasing".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(x: f64) -> c64 {
        c64::new(x, 0.0)
    }

    #[test]
    fn raw_validation_errors() {
        type Case = (Vec<usize>, Vec<usize>, Vec<c64>, &'static str);
        let cases: Vec<Case> = vec![
            (vec![0, 1], vec![0], vec![r(1.0)], "indptr has 2 entries"),
            (vec![1, 1, 1], vec![], vec![], "indptr[0] is 1"),
            (vec![0, 2, 1], vec![0, 1], vec![r(1.0), r(1.0)], "decreases"),
            (vec![0, 1, 1], vec![0], vec![], "data has 0"),
            (vec![0, 1, 1], vec![3], vec![r(1.0)], "out of range"),
            (vec![0, 1, 3], vec![0, 1], vec![r(1.0), r(1.0)], "ends at 3"),
        ];
        for (p, i, d, msg) in cases {
            let err = Csr::from_raw((2, 3), p, i, d).unwrap_err();
            assert!(err.to_string().contains(msg), "{err} lacks {msg}");
        }
    }

    #[test]
    fn unsorted_and_duplicates() {
        let m = Csr::from_raw(
            (2, 3),
            vec![0, 4, 5],
            vec![2, 0, 2, 1, 0],
            vec![r(1.0), r(2.0), r(3.0), r(4.0), r(5.0)],
        )
        .unwrap();
        assert_eq!(m.indptr(), &[0, 3, 4]);
        assert_eq!(m.indices(), &[0, 1, 2, 0]);
        assert_eq!(m.data(), &[r(2.0), r(4.0), r(4.0), r(5.0)]);
        assert!(m.as_csmat().check_compressed_structure().is_ok());
    }

    #[test]
    fn triplets() {
        let m =
            Csr::from_triplets((3, 3), &[2, 0, 2], &[1, 0, 1], &[r(1.0), r(2.0), r(3.0)]).unwrap();
        assert_eq!(m.get(2, 1), r(4.0));
        assert_eq!(m.get(0, 0), r(2.0));
        assert_eq!(m.nnz(), 2);
        assert!(Csr::from_triplets((3, 3), &[3], &[0], &[r(1.0)]).is_err());
        assert!(Csr::from_triplets((3, 3), &[0], &[0, 1], &[r(1.0)]).is_err());
    }

    #[test]
    fn structure_check_catches_every_violation() {
        let one = r(1.0);
        assert!(check_structure((2, 3), &[0, 1, 2], &[2, 0], &[one, one]).is_ok());
        for (p, i, why) in [
            (vec![0, 1], vec![0], "pointers"),
            (vec![1, 1, 2], vec![0, 1], "from 0"),
            (vec![0, 2, 1], vec![0, 1], "from 0 to nnz / decrease"),
            (vec![0, 2, 2], vec![1, 0], "unsorted"),
            (vec![0, 2, 2], vec![1, 1], "duplicate"),
            (vec![0, 1, 2], vec![0, 3], "out of range"),
        ] {
            let d = vec![one; i.len()];
            assert!(check_structure((2, 3), &p, &i, &d).is_err(), "{why}");
        }
    }

    #[test]
    fn csc_input_becomes_csr() {
        let csc = CsMat::new_csc((2, 2), vec![0, 1, 2], vec![1, 0], vec![r(1.0), r(2.0)]);
        let m = Csr::from_csmat(csc).unwrap();
        assert_eq!(m.get(1, 0), r(1.0));
        assert_eq!(m.get(0, 1), r(2.0));
    }
}
