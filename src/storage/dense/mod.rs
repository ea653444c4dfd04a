//! Dense storage on top of `faer::Mat`, column-major or row-major.

use std::fmt;
use std::sync::OnceLock;

use faer::{Mat, MatRef};

use super::{Layout, Storage, alloc, display};
use crate::error::Result;
use crate::scalar::c64;

mod build;

/// A dense matrix: a [`faer::Mat<c64>`] buffer, column-major or row-major ([`Layout`]).
///
/// A row-major `Dense` keeps its transpose as a column-major faer matrix, so both layouts are
/// faer buffers and [`as_ref`](Dense::as_ref) views either one as a strided
/// [`MatRef`](faer::MatRef) of the right shape.
///
/// # Layouts in kernels
///
/// * Entry-wise kernels (`add`, `sub`, `mul`, `neg`, `conj`, scaling, `tidyup`, norms, `trace`,
///   `isherm`, conversion to Csr) read either layout directly; when both operands share a
///   layout the result keeps it.
/// * `transpose` and `adjoint` flip the layout: one contiguous copy (a conjugating one for the
///   adjoint).
/// * Products go through faer (`matmul`, `matmul_dag`, `kron`, `expm`, decompositions) on the
///   strided view, which faer handles in either orientation. Dense·ket and `expect` on a ket
///   run polymat's matrix–vector kernel instead: column axpys for a column-major matrix, row
///   dot products for a row-major one (`matmul_dag` with a bra: column-major only).
/// * The column accessors ([`col`](Dense::col), [`columns`](Dense::columns),
///   [`as_mat`](Dense::as_mat)) and the kernels written on them normalise a row-major matrix
///   once: the column-major copy is made on first use and kept beside the buffer (twice the
///   memory for that matrix while it lives); the `&mut` accessors convert in place. If that
///   copy cannot be allocated (past [`set_dense_limit`](crate::set_dense_limit) or refused by
///   the system), a kernel returns [`Error::TooLarge`](crate::Error::TooLarge) naming its operation; the accessors
///   have `try_` forms ([`try_col`](Dense::try_col), [`try_as_mat`](Dense::try_as_mat), …)
///   that return it, and the plain ones panic with it.
///
/// # Memory of a one-row matrix
///
/// faer pads every column of a buffer to a multiple of four rows (64 bytes), so a
/// column-major one-row buffer would take four entries of memory for each entry, and a pass
/// over it would read one entry per cache line. A bra (one row, several columns) is therefore
/// made row-major, its entries in one buffer column: by [`zeros`](Dense::zeros),
/// [`from_fn`](Dense::from_fn), [`from_rows`](Dense::from_rows), the
/// [`zeros`](crate::ops::zeros) operation, conversion from Csr, the
/// [`adjoint`](crate::adjoint) or [`transpose`](crate::transpose()) of a ket, a bra times a
/// matrix, the Kronecker product of two bras, [`reshape`](crate::ops::reshape()),
/// [`permute::indices`](crate::ops::permute::indices), one row taken by
/// [`block_extract`](crate::ops::block_extract()), [`block_build`](crate::block_build()),
/// [`kron_transpose`](crate::kron_transpose()), [`diag`](crate::diag()),
/// [`matmul_outer`](crate::matmul_outer()), [`matmul_dag`](crate::matmul_dag()), conversion
/// from Dia, products with Dia, [`read_npy`](crate::io::read_npy) (a ket too is read into one
/// buffer column, whatever the file's order), Matrix Market arrays, and nalgebra and serde
/// (features). A column-major bra comes from asking for one
/// ([`from_col_major`](Dense::from_col_major), [`into_layout`](Dense::into_layout)), from an
/// operation that keeps its operand's layout ([`conj`](crate::conj()), [`mul`](crate::mul()),
/// …) on one, or from a tiny bra product held in registers (at most 64 products, 16 for a Csr
/// bra). The memory check before a dense allocation counts the padding.
///
/// ```
/// use polymat::{Dense, Layout, Out, c64};
///
/// let bra = Dense::from_fn(1, 1000, |_, j| c64::new(j as f64, 1.0));
/// assert_eq!(bra.shape(), (1, 1000));
/// assert_eq!(bra.layout(), Layout::RowMajor); // its 1000 entries in one buffer column
/// assert_eq!(bra.buffer().nrows(), 1000);
/// let ket = Dense::from_fn(1000, 1, |i, _| c64::new(i as f64, 1.0));
/// let dag = polymat::adjoint(&ket.into(), Out::Auto)?;
/// assert_eq!(dag.downcast_ref::<Dense>().unwrap().layout(), Layout::RowMajor);
/// # Ok::<(), polymat::Error>(())
/// ```
///
/// ```
/// use polymat::{Dense, c64};
///
/// let m = Dense::from_rows(&[
///     vec![c64::new(1.0, 0.0), c64::new(0.0, 2.0)],
///     vec![c64::new(0.0, 0.0), c64::new(3.0, 0.0)],
/// ]).unwrap();
/// assert_eq!(m.shape(), (2, 2));
/// assert_eq!(m.get(0, 1), c64::new(0.0, 2.0));
/// assert_eq!(m.nnz(), 3);
/// assert_eq!(m.to_string(), "[[1, 0+2i], [0, 3]]");
/// assert_eq!(format!("{m:#}"), "Dense(2×2)");
/// ```
pub struct Dense {
    // The fields are shared with `layout.rs` (the layout methods), nothing else.
    /// Column-major: the matrix. Row-major: its transpose, column-major (the same memory as
    /// the row-major matrix).
    pub(super) buf: Mat<c64>,
    pub(super) layout: Layout,
    /// A row-major matrix's column-major copy, made by the column accessors on first use.
    /// Boxed: it is rarely made, and unboxed it doubled the size of every `Dense` moved into
    /// a `Data` (128 bytes, a `memmove` call on every small result).
    pub(super) cols: OnceLock<Box<Mat<c64>>>,
}

impl Drop for Dense {
    /// A small buffer goes back to its thread's pool for the next result of its shape.
    fn drop(&mut self) {
        alloc::pool::give(std::mem::replace(&mut self.buf, Mat::new()));
    }
}

impl Clone for Dense {
    fn clone(&self) -> Dense {
        let (r, c) = (self.buf.nrows(), self.buf.ncols());
        if r == 0 || c == 0 {
            // faer's clone walks every column, even of an empty 0×2⁶³ matrix. This shape was
            // representable for `self`, so it is again.
            if let Ok(m) = alloc::empty_mat(r, c) {
                return Dense::with_layout(m, self.layout);
            }
        }
        // A small matrix takes a buffer of its shape from the thread's pool (where dropped
        // results go) instead of faer's aligned allocation (Csr + Dense 2 × 2, which clones
        // the Dense: 1 524 → 822 instructions a call).
        if let Some(mut m) = alloc::pool::take(r, c) {
            // SAFETY: the buffer's capacity covers r × c (`take` gives one of this shape);
            // `copy_from` writes every entry without reading the destination, and c64 has no
            // drop glue.
            unsafe { m.set_dims(r, c) };
            m.copy_from(&self.buf);
            return Dense::with_layout(m, self.layout);
        }
        // Larger ones: one `memcpy` of the buffer (`alloc::copy_whole`, as `transpose`'s copy).
        // faer's clone writes entry by entry: 5.7 % of `eigs` on the XXZ chain at N = 16,
        // which copies its kets. Where that copy cannot be made, faer's clone.
        if let Ok(Some(m)) = alloc::copy_whole("clone", self.buf.as_ref()) {
            return Dense::with_layout(m, self.layout);
        }
        Dense::with_layout(self.buf.clone(), self.layout)
    }
}

impl PartialEq for Dense {
    fn eq(&self, other: &Dense) -> bool {
        let (r, c) = self.shape();
        self.shape() == other.shape()
            && (r == 0
                || c == 0
                || if self.layout == other.layout {
                    self.buf == other.buf
                } else {
                    self.as_ref() == other.as_ref()
                })
    }
}

impl Dense {
    /// Wraps a column-major `faer` matrix (no copy).
    pub fn new(mat: Mat<c64>) -> Dense {
        Dense::with_layout(mat, Layout::ColMajor)
    }

    /// Wraps a buffer: for [`Layout::RowMajor`], `buf` is the transpose of the matrix meant,
    /// stored column-major (that is, the matrix row-major).
    pub(crate) fn with_layout(buf: Mat<c64>, layout: Layout) -> Dense {
        Dense {
            buf,
            layout,
            cols: OnceLock::new(),
        }
    }

    /// `(rows, columns)`.
    #[inline]
    pub fn shape(&self) -> (usize, usize) {
        match self.layout {
            Layout::ColMajor => (self.buf.nrows(), self.buf.ncols()),
            Layout::RowMajor => (self.buf.ncols(), self.buf.nrows()),
        }
    }

    /// The number of entries that are not exactly zero. O(rows·cols).
    pub fn nnz(&self) -> usize {
        if self.buf.nrows() == 0 {
            return 0;
        }
        (0..self.buf.ncols())
            .map(|j| {
                self.buf
                    .col_as_slice(j)
                    .iter()
                    .filter(|z| **z != c64::new(0.0, 0.0))
                    .count()
            })
            .sum()
    }

    /// Entry `(i, j)`.
    ///
    /// # Panics
    /// If `(i, j)` is out of bounds, like slice indexing and [`Csr::get`](crate::Csr::get);
    /// [`Dense::try_get`] returns `None` instead.
    #[inline]
    pub fn get(&self, i: usize, j: usize) -> c64 {
        self.try_get(i, j).unwrap_or_else(|| {
            let (r, c) = self.shape();
            panic!("index ({i}, {j}) out of bounds for a {r}×{c} Dense (Dense::try_get returns None instead)")
        })
    }

    /// Entry `(i, j)`, or `None` if it is out of bounds.
    ///
    /// ```
    /// use polymat::{Dense, c64};
    /// let i = Dense::identity(2);
    /// assert_eq!(i.try_get(1, 1), Some(c64::new(1.0, 0.0)));
    /// assert_eq!(i.try_get(0, 99), None);
    /// ```
    #[inline]
    pub fn try_get(&self, i: usize, j: usize) -> Option<c64> {
        let (r, c) = self.shape();
        (i < r && j < c).then(|| self.at(i, j))
    }

    /// Entry `(i, j)`, in bounds.
    #[inline]
    fn at(&self, i: usize, j: usize) -> c64 {
        match self.layout {
            Layout::ColMajor => self.buf[(i, j)],
            Layout::RowMajor => self.buf[(j, i)],
        }
    }

    /// Column `j` as a contiguous slice. A row-major matrix makes its column-major copy on
    /// the first call (see [`Dense`]); [`as_ref`](Dense::as_ref)`().col(j)` is a strided view
    /// without a copy.
    ///
    /// # Panics
    /// If `j` is out of bounds, or if a row-major matrix's column-major copy cannot be
    /// allocated ([`try_col`](Dense::try_col) returns that error instead).
    #[inline]
    pub fn col(&self, j: usize) -> &[c64] {
        self.try_col(j)
            .unwrap_or_else(|e| panic!("{e} (Dense::try_col returns this as an Error)"))
    }

    /// Column `j` as a contiguous slice, as [`col`](Dense::col).
    ///
    /// ```
    /// use polymat::{Dense, Layout, c64};
    /// let one = c64::new(1.0, 0.0);
    /// let m = Dense::from_row_major(2, 2, &[one, 2.0 * one, 3.0 * one, 4.0 * one])?;
    /// assert_eq!(m.layout(), Layout::RowMajor);
    /// assert_eq!(m.try_col(1)?, &[2.0 * one, 4.0 * one]);
    /// # Ok::<(), polymat::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::TooLarge`](crate::Error::TooLarge) if a row-major matrix's column-major copy
    /// cannot be allocated.
    ///
    /// # Panics
    /// If `j` is out of bounds.
    #[inline]
    pub fn try_col(&self, j: usize) -> Result<&[c64]> {
        Ok(self.col_major("Dense::col")?.col_as_slice(j))
    }

    /// The columns as contiguous slices, in order; none at all when the matrix has no rows
    /// (so an empty 0×2⁶² matrix costs nothing to walk). Row-major: as [`col`](Dense::col).
    ///
    /// # Panics
    /// As [`col`](Dense::col) ([`try_columns`](Dense::try_columns) returns the error).
    pub fn columns(&self) -> impl Iterator<Item = &[c64]> + Clone + '_ {
        self.try_columns()
            .unwrap_or_else(|e| panic!("{e} (Dense::try_columns returns this as an Error)"))
    }

    /// The columns as contiguous slices, as [`columns`](Dense::columns).
    ///
    /// # Errors
    /// As [`try_col`](Dense::try_col).
    pub fn try_columns(&self) -> Result<impl Iterator<Item = &[c64]> + Clone + '_> {
        let (r, c) = self.shape();
        let n = if r == 0 { 0 } else { c };
        let mat = if n == 0 {
            &self.buf
        } else {
            self.col_major("Dense::columns")?
        };
        Ok((0..n).map(move |j| mat.col_as_slice(j)))
    }

    /// Column `j` as a contiguous mutable slice; a row-major matrix is converted to
    /// column-major first (once).
    ///
    /// # Panics
    /// As [`col`](Dense::col) ([`try_col_mut`](Dense::try_col_mut) returns the error).
    #[inline]
    pub fn col_mut(&mut self, j: usize) -> &mut [c64] {
        self.try_col_mut(j)
            .unwrap_or_else(|e| panic!("{e} (Dense::try_col_mut returns this as an Error)"))
    }

    /// Column `j` as a contiguous mutable slice, as [`col_mut`](Dense::col_mut).
    ///
    /// # Errors
    /// As [`try_col`](Dense::try_col).
    ///
    /// # Panics
    /// If `j` is out of bounds.
    #[inline]
    pub fn try_col_mut(&mut self, j: usize) -> Result<&mut [c64]> {
        Ok(self.col_major_mut("Dense::col_mut")?.col_as_slice_mut(j))
    }

    /// The matrix as a strided `faer` view of the right shape, in either layout (no copy).
    #[inline]
    pub fn as_ref(&self) -> MatRef<'_, c64> {
        match self.layout {
            Layout::ColMajor => self.buf.as_ref(),
            Layout::RowMajor => self.buf.as_ref().transpose(),
        }
    }

    /// The matrix as a column-major `faer` matrix (a row-major one: its column-major copy,
    /// made once).
    ///
    /// # Panics
    /// As [`col`](Dense::col) ([`try_as_mat`](Dense::try_as_mat) returns the error).
    #[inline]
    pub fn as_mat(&self) -> &Mat<c64> {
        self.try_as_mat()
            .unwrap_or_else(|e| panic!("{e} (Dense::try_as_mat returns this as an Error)"))
    }

    /// The matrix as a column-major `faer` matrix, as [`as_mat`](Dense::as_mat).
    ///
    /// # Errors
    /// As [`try_col`](Dense::try_col).
    #[inline]
    pub fn try_as_mat(&self) -> Result<&Mat<c64>> {
        self.col_major("Dense::as_mat")
    }

    /// The underlying `faer` matrix, mutably; a row-major matrix is converted to column-major
    /// first.
    ///
    /// # Panics
    /// As [`col`](Dense::col) ([`try_as_mat_mut`](Dense::try_as_mat_mut) returns the error).
    #[inline]
    pub fn as_mat_mut(&mut self) -> &mut Mat<c64> {
        self.try_as_mat_mut()
            .unwrap_or_else(|e| panic!("{e} (Dense::try_as_mat_mut returns this as an Error)"))
    }

    /// The underlying `faer` matrix, mutably, as [`as_mat_mut`](Dense::as_mat_mut).
    ///
    /// # Errors
    /// As [`try_col`](Dense::try_col); the matrix is then unchanged.
    #[inline]
    pub fn try_as_mat_mut(&mut self) -> Result<&mut Mat<c64>> {
        self.col_major_mut("Dense::as_mat_mut")
    }

    /// Unwraps the column-major `faer` matrix (no copy when the matrix is column-major).
    ///
    /// # Panics
    /// As [`col`](Dense::col) ([`try_into_mat`](Dense::try_into_mat) returns the error).
    pub fn into_mat(self) -> Mat<c64> {
        self.try_into_mat()
            .unwrap_or_else(|e| panic!("{e} (Dense::try_into_mat returns this as an Error)"))
    }

    /// Unwraps the column-major `faer` matrix, as [`into_mat`](Dense::into_mat).
    ///
    /// ```
    /// use polymat::{Dense, c64};
    /// let m = Dense::from_row_major(1, 2, &[c64::new(1.0, 0.0), c64::new(2.0, 0.0)])?;
    /// let mat = m.try_into_mat()?;
    /// assert_eq!(mat[(0, 1)], c64::new(2.0, 0.0));
    /// # Ok::<(), polymat::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`try_col`](Dense::try_col).
    pub fn try_into_mat(mut self) -> Result<Mat<c64>> {
        self.col_major_mut("Dense::into_mat")?;
        Ok(std::mem::replace(&mut self.buf, Mat::new()))
    }

    /// The entries in row-major nested vectors (for tests and small printouts).
    ///
    /// # Panics
    /// If the rows cannot be listed in memory (an empty matrix with 2⁶⁰ rows, say).
    pub fn to_rows(&self) -> Vec<Vec<c64>> {
        let (r, c) = self.shape();
        (0..r)
            .map(|i| (0..c).map(|j| self.at(i, j)).collect())
            .collect()
    }
}

impl Storage for Dense {
    fn shape(&self) -> (usize, usize) {
        Dense::shape(self)
    }
}

impl From<Mat<c64>> for Dense {
    fn from(mat: Mat<c64>) -> Dense {
        Dense::new(mat)
    }
}

impl From<Dense> for Mat<c64> {
    /// As [`Dense::into_mat`].
    fn from(d: Dense) -> Mat<c64> {
        d.into_mat()
    }
}

impl fmt::Display for Dense {
    /// The entries, as numpy prints an array (`[[1, 0+2i], [0, 3]]`, truncated with `...`
    /// above 1000 entries, precision from the formatter); `{:#}` prints the summary
    /// `Dense(2×2)`. See [`storage`](crate::storage#printing) for the rules.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            let (r, c) = self.shape();
            return write!(f, "Dense({r}×{c})");
        }
        display::matrix(f, self.shape(), |i, j| self.at(i, j))
    }
}

impl fmt::Debug for Dense {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (r, c) = self.shape();
        if r.checked_mul(c).is_some_and(|n| n <= 64) {
            write!(f, "Dense({r}×{c}) {:?}", self.to_rows())
        } else {
            write!(f, "Dense({r}×{c})")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small clone takes the buffer a dropped matrix of its shape left in the thread's pool,
    /// and holds the same entries in the same layout (column- and row-major); a clone of
    /// another shape does not take it.
    #[test]
    fn a_small_clone_takes_a_pooled_buffer() {
        std::thread::spawn(|| {
            let value = |i: usize, j: usize| c64::new(i as f64 - 1.5, 2.0 * j as f64 + 0.25);
            for layout in [Layout::ColMajor, Layout::RowMajor] {
                let a = Dense::from_fn(3, 2, value).into_layout(layout).unwrap();
                let spare = Dense::from_fn(a.buf.nrows(), a.buf.ncols(), |_, _| c64::new(7.0, 7.0));
                let ptr = spare.buf.as_ptr();
                drop(spare);
                let b = a.clone();
                assert_eq!(b.buf.as_ptr(), ptr, "{layout:?}");
                assert_eq!((b.layout(), b.shape()), (layout, (3, 2)));
                for (i, j) in (0..3).flat_map(|i| (0..2).map(move |j| (i, j))) {
                    assert_eq!(b.get(i, j), value(i, j), "{layout:?} ({i}, {j})");
                }
                // Back in the pool, the buffer goes to no clone of another shape.
                drop(b);
                let other = Dense::from_fn(4, 4, value);
                assert_ne!(other.clone().buf.as_ptr(), ptr);
            }
        })
        .join()
        .unwrap();
    }

    /// Larger clones copy the buffer whole (padding included): the same entries in the same
    /// layout, a buffer of their own, for odd and padded row counts, kets and bras, empty
    /// shapes.
    #[test]
    fn a_large_clone_copies_every_entry() {
        let value = |i: usize, j: usize| c64::new(i as f64 * 0.5 - j as f64, (i * j % 7) as f64);
        for (m, n) in [
            (1000, 1),
            (1, 700),
            (37, 41),
            (64, 64),
            (129, 3),
            (0, 500),
            (500, 0),
        ] {
            for layout in [Layout::ColMajor, Layout::RowMajor] {
                let a = Dense::from_fn(m, n, value).into_layout(layout).unwrap();
                let b = a.clone();
                assert_eq!((b.layout(), b.shape()), (layout, (m, n)));
                if m > 0 && n > 0 {
                    assert_ne!(b.buf.as_ptr(), a.buf.as_ptr());
                }
                for (i, j) in (0..m).flat_map(|i| (0..n).map(move |j| (i, j))) {
                    assert_eq!(b.get(i, j), value(i, j), "{m}×{n} {layout:?} ({i}, {j})");
                }
            }
        }
    }

    #[test]
    fn ragged_rows_are_an_error() {
        let z = c64::new(0.0, 0.0);
        let err = Dense::from_rows(&[vec![z, z], vec![z]]).unwrap_err();
        assert!(err.to_string().contains("row 1 has 1 entries"));
    }

    #[test]
    fn col_major_round_trip() {
        let v: Vec<c64> = (0..6).map(|k| c64::new(k as f64, 0.0)).collect();
        let d = Dense::from_col_major(2, 3, &v).unwrap();
        assert_eq!(d.get(1, 2), c64::new(5.0, 0.0));
        assert!(Dense::from_col_major(2, 2, &v).is_err());
    }

    #[test]
    fn nnz_counts_nonzeros() {
        let mut d = Dense::zeros(3, 3);
        d.col_mut(1)[2] = c64::new(1.0, 0.0);
        assert_eq!(d.nnz(), 1);
    }
}
