//! The constructors of [`Dense`]: zeros, identities, from a function, from rows or a flat
//! column-major slice, each fallible under the dense limit.

use faer::Mat;

use super::Dense;
use crate::error::{Error, Result};
use crate::scalar::{ONE, ZERO, c64};
use crate::storage::{Layout, alloc};

impl Dense {
    /// The `rows × cols` zero matrix.
    ///
    /// # Panics
    /// If the allocation fails or passes the dense limit; [`Dense::try_zeros`] returns the
    /// error instead.
    pub fn zeros(rows: usize, cols: usize) -> Dense {
        Dense::try_zeros(rows, cols)
            .unwrap_or_else(|e| panic!("{e} (Dense::try_zeros returns this as an Error)"))
    }

    /// The `rows × cols` zero matrix. O(1) when `rows` or `cols` is 0.
    ///
    /// A bra (one row, several columns) is made row-major, its entries in one buffer column
    /// (see [`Dense`]'s "Memory of a one-row matrix").
    ///
    /// # Errors
    /// [`Error::TooLarge`] over the dense limit ([`set_dense_limit`](crate::set_dense_limit))
    /// or when the allocator refuses.
    ///
    /// ```
    /// use polymat::{Dense, Error};
    /// assert_eq!(Dense::try_zeros(2, 3)?.shape(), (2, 3));
    /// assert_eq!(Dense::try_zeros(0, usize::MAX)?.shape(), (0, usize::MAX));
    /// assert!(matches!(Dense::try_zeros(1 << 40, 1 << 40), Err(Error::TooLarge { .. })));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn try_zeros(rows: usize, cols: usize) -> Result<Dense> {
        Dense::zeros_public("Dense::zeros", rows, cols)
    }

    /// The zero matrix as the public constructors make it, with allocation errors naming `op`:
    /// a bra (one row, several columns) row-major, its entries in one unpadded buffer column
    /// (see "Memory of a one-row matrix"). The crate's kernels that write into a fresh zero
    /// matrix's buffer use [`Dense::zeros_for`], column-major whatever its shape.
    pub(crate) fn zeros_public(op: &str, rows: usize, cols: usize) -> Result<Dense> {
        if Dense::is_held_bra((rows, cols)) {
            return alloc::zeros_mat(op, cols, 1)
                .map(Dense::bra_from_column)
                .map_err(alloc::for_shape((rows, cols)));
        }
        Dense::zeros_for(op, rows, cols)
    }

    /// Whether a result of this shape is a bra the crate makes row-major (one row, several
    /// columns; see "Memory of a one-row matrix"), the test of every maker that does.
    #[inline]
    pub(crate) fn is_held_bra((rows, cols): (usize, usize)) -> bool {
        rows == 1 && cols > 1
    }

    /// The bra whose entries are the one column of `buf`, in order: row-major, so its buffer
    /// is unpadded (see "Memory of a one-row matrix").
    #[inline]
    pub(crate) fn bra_from_column(buf: Mat<c64>) -> Dense {
        debug_assert_eq!(buf.ncols(), 1, "bra_from_column: one buffer column");
        Dense::with_layout(buf, Layout::RowMajor)
    }

    /// The zero matrix, with allocation errors naming `op`.
    pub(crate) fn zeros_for(op: &str, rows: usize, cols: usize) -> Result<Dense> {
        alloc::zeros_mat(op, rows, cols).map(Dense::new)
    }

    /// The `n × n` identity.
    ///
    /// # Panics
    /// As [`Dense::zeros`]; [`Dense::try_identity`] returns the error instead.
    pub fn identity(n: usize) -> Dense {
        Dense::try_identity(n)
            .unwrap_or_else(|e| panic!("{e} (Dense::try_identity returns this as an Error)"))
    }

    /// The `n × n` identity.
    ///
    /// # Errors
    /// As [`Dense::try_zeros`].
    pub fn try_identity(n: usize) -> Result<Dense> {
        Dense::from_fn_for(
            "Dense::identity",
            n,
            n,
            |i, j| if i == j { ONE } else { ZERO },
        )
    }

    /// A matrix whose entry `(i, j)` is `f(i, j)`.
    ///
    /// # Panics
    /// As [`Dense::zeros`]; [`Dense::try_from_fn`] returns the error instead.
    pub fn from_fn(rows: usize, cols: usize, f: impl FnMut(usize, usize) -> c64) -> Dense {
        Dense::try_from_fn(rows, cols, f)
            .unwrap_or_else(|e| panic!("{e} (Dense::try_from_fn returns this as an Error)"))
    }

    /// A matrix whose entry `(i, j)` is `f(i, j)`, called once per entry, column by column.
    ///
    /// A bra (one row, several columns) is made row-major, its entries in one buffer column
    /// (see [`Dense`]'s "Memory of a one-row matrix").
    ///
    /// # Errors
    /// As [`Dense::try_zeros`].
    pub fn try_from_fn(
        rows: usize,
        cols: usize,
        f: impl FnMut(usize, usize) -> c64,
    ) -> Result<Dense> {
        Dense::from_fn_public("Dense::from_fn", rows, cols, f)
    }

    /// The public constructors' [`Dense::from_fn_for`]: a bra (one row, several columns) is
    /// made row-major, its entries in one unpadded buffer column (see "Memory of a one-row
    /// matrix"), with `f` called in the same order. Kernels that fill their result through
    /// `f` alone use it too (`reshape`, `permute::indices`); those that write into the
    /// buffer afterwards keep `from_fn_for`, column-major whatever its shape.
    pub(crate) fn from_fn_public(
        op: &str,
        rows: usize,
        cols: usize,
        mut f: impl FnMut(usize, usize) -> c64,
    ) -> Result<Dense> {
        if Dense::is_held_bra((rows, cols)) {
            return alloc::mat_from_fn(op, cols, 1, |j, _| f(0, j))
                .map(Dense::bra_from_column)
                .map_err(alloc::for_shape((rows, cols)));
        }
        Dense::from_fn_for(op, rows, cols, f)
    }

    /// [`Dense::try_from_fn`] with allocation errors naming `op`.
    pub(crate) fn from_fn_for(
        op: &str,
        rows: usize,
        cols: usize,
        f: impl FnMut(usize, usize) -> c64,
    ) -> Result<Dense> {
        alloc::mat_from_fn(op, rows, cols, f).map(Dense::new)
    }

    /// A matrix from its rows, for small literals.
    ///
    /// A bra (one row, several columns) is made row-major, its entries in one buffer column
    /// (see [`Dense`]'s "Memory of a one-row matrix").
    ///
    /// # Errors
    /// [`Error::InvalidDense`] if the rows have different lengths, [`Error::TooLarge`] as for
    /// [`Dense::try_zeros`].
    pub fn from_rows<R: AsRef<[c64]>>(rows: &[R]) -> Result<Dense> {
        let ncols = rows.first().map_or(0, |r| r.as_ref().len());
        if let Some((i, r)) = rows
            .iter()
            .enumerate()
            .find(|(_, r)| r.as_ref().len() != ncols)
        {
            return Err(Error::InvalidDense {
                reason: format!(
                    "row {i} has {} entries but row 0 has {ncols}",
                    r.as_ref().len()
                ),
            });
        }
        Dense::from_fn_public("Dense::from_rows", rows.len(), ncols, |i, j| {
            rows[i].as_ref()[j]
        })
    }

    /// A matrix from a column-major buffer of length `rows * cols`.
    ///
    /// # Errors
    /// [`Error::InvalidDense`] if the length does not match, [`Error::TooLarge`] as for
    /// [`Dense::try_zeros`].
    pub fn from_col_major(rows: usize, cols: usize, values: &[c64]) -> Result<Dense> {
        Dense::buffer_from("Dense::from_col_major", (rows, cols), (rows, cols), values)
            .map(Dense::new)
    }

    /// [`Dense::from_col_major`] for conversions from other libraries' column-major matrices
    /// (nalgebra, serde): a bra, whose entries are in the same order in either layout, is made
    /// row-major and unpadded, as the public makers make it (see "Memory of a one-row
    /// matrix"); errors name `op`.
    #[cfg(any(feature = "serde", feature = "nalgebra"))]
    pub(crate) fn from_col_major_public(
        op: &str,
        rows: usize,
        cols: usize,
        values: &[c64],
    ) -> Result<Dense> {
        if Dense::is_held_bra((rows, cols)) {
            return Dense::buffer_from(op, (rows, cols), (cols, rows), values)
                .map(Dense::bra_from_column);
        }
        Dense::buffer_from(op, (rows, cols), (rows, cols), values).map(Dense::new)
    }

    /// `values` copied into a `buffer.0 × buffer.1` column-major buffer; the length error names
    /// the matrix shape `shape` (the constructors from a flat slice, in either layout).
    pub(in crate::storage) fn buffer_from(
        op: &str,
        (rows, cols): (usize, usize),
        (brows, bcols): (usize, usize),
        values: &[c64],
    ) -> Result<Mat<c64>> {
        if rows.checked_mul(cols) != Some(values.len()) {
            return Err(Error::InvalidDense {
                reason: format!("{} values cannot fill a {rows}×{cols} matrix", values.len()),
            });
        }
        alloc::mat_from_fn(op, brows, bcols, |i, j| values[i + j * brows])
            .map_err(alloc::for_shape((rows, cols)))
    }
}
