//! Diagonal storage (QuTiP's and scipy's `dia` format).

use std::fmt;

use super::{Storage, alloc, display};
use crate::error::{Error, Result};
use crate::scalar::{ONE, ZERO, c64};

/// A sparse matrix stored by diagonals, in QuTiP's (and scipy's `dia_matrix`) layout.
///
/// `offsets` lists the stored diagonals, strictly increasing: 0 is the main diagonal, `k > 0`
/// lies `k` columns above it, `k < 0` below. `data` holds one row of `cols` values per offset,
/// **indexed by column**: `data[k·cols + j]` is entry `(j − offsets[k], j)`. Positions of a row
/// that fall outside the matrix (`j − offsets[k]` not a row) are padding; polymat keeps them
/// zero and never reads them. Every offset lies inside the matrix
/// (`−(rows − 1) ≤ k ≤ cols − 1`).
///
/// Dia suits banded operators (`destroy`, `num`, nearest-neighbour hoppings, finite
/// differences): a matrix-vector product streams each diagonal once with no index arrays.
/// Arbitrary sparsity patterns belong in [`Csr`](crate::Csr): a random matrix has up to
/// `rows + cols − 1` diagonals and its Dia form is as large as the dense one.
///
/// ```
/// use polymat::{Dia, c64};
///
/// // The 3×3 lowering operator a: √1, √2 on the first diagonal above the main one.
/// let (r1, r2) = (c64::new(1.0, 0.0), c64::new(2f64.sqrt(), 0.0));
/// let a = Dia::new((3, 3), vec![1], vec![c64::new(0.0, 0.0), r1, r2])?;
/// assert_eq!(a.get(0, 1), r1);
/// assert_eq!(a.get(1, 2), r2);
/// assert_eq!(a.diagonal(1), Some(&[r1, r2][..]));
/// assert_eq!(a.diagonal(0), None);
/// assert_eq!(a.nnz(), 2);
/// assert_eq!(format!("{a:#}"), "Dia(3×3, 1 diagonal)");
/// # Ok::<(), polymat::Error>(())
/// ```
#[derive(Clone, PartialEq)]
pub struct Dia {
    shape: (usize, usize),
    offsets: Vec<isize>,
    data: Vec<c64>,
}

fn invalid(shape: (usize, usize), reason: impl Into<String>) -> Error {
    Error::InvalidArgument {
        op: format!("Dia({}×{})", shape.0, shape.1),
        reason: reason.into(),
    }
}

/// The columns `j` where the diagonal at `offset` has an entry `(j − offset, j)`.
#[inline]
pub(crate) fn valid_cols(shape: (usize, usize), offset: isize) -> std::ops::Range<usize> {
    let (rows, cols) = shape;
    let lo = offset.max(0).unsigned_abs().min(cols);
    // j − offset < rows  ⇔  j < rows + offset
    let hi = if offset >= 0 {
        rows.saturating_add(offset.unsigned_abs()).min(cols)
    } else {
        rows.saturating_sub(offset.unsigned_abs()).min(cols)
    };
    lo..hi.max(lo)
}

/// Whether `offset` names a diagonal inside a `rows × cols` matrix.
fn offset_inside(shape: (usize, usize), offset: isize) -> bool {
    !valid_cols(shape, offset).is_empty()
}

impl Dia {
    /// A matrix from offsets and column-indexed diagonals (see the type's documentation).
    /// Offsets may come in any order; repeated offsets are summed. Padding is set to zero.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `data` does not hold `offsets.len() × cols` values or an
    /// offset lies outside the matrix; [`Error::TooLarge`] if the storage cannot be allocated.
    ///
    /// ```
    /// use polymat::{Dia, c64};
    /// let one = c64::new(1.0, 0.0);
    /// assert!(Dia::new((2, 2), vec![0], vec![one; 3]).is_err()); // needs 2 values
    /// assert!(Dia::new((2, 2), vec![2], vec![one; 2]).is_err()); // outside a 2×2 matrix
    /// let i = Dia::new((2, 2), vec![0, 0], vec![one; 4])?; // offset 0 twice: summed
    /// assert_eq!(i.get(1, 1), c64::new(2.0, 0.0));
    /// # Ok::<(), polymat::Error>(())
    /// ```
    pub fn new(shape: (usize, usize), offsets: Vec<isize>, data: Vec<c64>) -> Result<Dia> {
        let cols = shape.1;
        if offsets.len().checked_mul(cols) != Some(data.len()) {
            return Err(invalid(
                shape,
                format!(
                    "{} diagonals need {} × {cols} values, got {}",
                    offsets.len(),
                    offsets.len(),
                    data.len()
                ),
            ));
        }
        if let Some(&k) = offsets.iter().find(|&&k| !offset_inside(shape, k)) {
            return Err(invalid(
                shape,
                format!("offset {k} lies outside a {}×{} matrix", shape.0, shape.1),
            ));
        }
        let mut order: Vec<usize> = (0..offsets.len()).collect();
        order.sort_by_key(|&k| offsets[k]);
        let mut out_offsets: Vec<isize> = Vec::with_capacity(offsets.len());
        let mut out = alloc::try_with_capacity::<c64>("Dia::new", shape, data.len())?;
        for k in order {
            let o = offsets[k];
            let row = &data[k * cols..(k + 1) * cols];
            let js = valid_cols(shape, o);
            if out_offsets.last() == Some(&o) {
                let base = out.len() - cols;
                for j in js {
                    out[base + j] += row[j];
                }
            } else {
                out_offsets.push(o);
                let base = out.len();
                out.resize(base + cols, ZERO);
                out[base + js.start..base + js.end].copy_from_slice(&row[js]);
            }
        }
        Ok(Dia {
            shape,
            offsets: out_offsets,
            data: out,
        })
    }

    /// Wraps arrays without checking them.
    ///
    /// # Safety
    /// `offsets` must be strictly increasing with every offset inside the matrix, and
    /// `data.len() == offsets.len() × shape.1`. Kernels index `data` by these rules without
    /// bounds checks. (Padding need not be zero: it is never read.) Debug builds check all
    /// of this.
    pub unsafe fn from_parts_unchecked(
        shape: (usize, usize),
        offsets: Vec<isize>,
        data: Vec<c64>,
    ) -> Dia {
        debug_assert!(
            offsets.windows(2).all(|w| w[0] < w[1])
                && offsets.iter().all(|&k| offset_inside(shape, k))
                && offsets.len().checked_mul(shape.1) == Some(data.len()),
            "Dia::from_parts_unchecked: invalid arrays for {shape:?}"
        );
        Dia {
            shape,
            offsets,
            data,
        }
    }

    /// The `rows × cols` zero matrix: no diagonals, nothing allocated.
    pub fn zeros(rows: usize, cols: usize) -> Dia {
        Dia {
            shape: (rows, cols),
            offsets: Vec::new(),
            data: Vec::new(),
        }
    }

    /// The `n × n` identity.
    ///
    /// # Errors
    /// [`Error::TooLarge`] if the diagonal cannot be allocated.
    pub fn try_identity(n: usize) -> Result<Dia> {
        Dia::try_scaled_identity(n, ONE)
    }

    /// `s·I`, `n × n`.
    ///
    /// # Errors
    /// [`Error::TooLarge`] if the diagonal cannot be allocated.
    pub fn try_scaled_identity(n: usize, s: c64) -> Result<Dia> {
        if n == 0 || s == ZERO {
            return Ok(Dia::zeros(n, n));
        }
        let data = alloc::try_vec("Dia::identity", (n, n), n, s)?;
        Ok(Dia {
            shape: (n, n),
            offsets: vec![0],
            data,
        })
    }

    /// The `n × n` identity.
    ///
    /// # Panics
    /// If the diagonal cannot be allocated; [`Dia::try_identity`] returns the error instead.
    pub fn identity(n: usize) -> Dia {
        Dia::try_identity(n)
            .unwrap_or_else(|e| panic!("{e} (Dia::try_identity returns this as an Error)"))
    }

    /// `(rows, columns)`.
    #[inline]
    pub fn shape(&self) -> (usize, usize) {
        self.shape
    }

    /// The stored offsets, strictly increasing.
    #[inline]
    pub fn offsets(&self) -> &[isize] {
        &self.offsets
    }

    /// The column-indexed diagonals, `offsets().len() × cols` values (padding included).
    #[inline]
    pub fn data(&self) -> &[c64] {
        &self.data
    }

    /// The number of stored diagonals.
    #[inline]
    pub fn num_diagonals(&self) -> usize {
        self.offsets.len()
    }

    /// The row of `data` of stored diagonal number `k` (padding included), indexed by column.
    #[inline]
    pub(crate) fn row(&self, k: usize) -> &[c64] {
        let cols = self.shape.1;
        &self.data[k * cols..(k + 1) * cols]
    }

    /// The entries of the diagonal at `offset`, from its top-left end, or `None` if it is not
    /// stored.
    pub fn diagonal(&self, offset: isize) -> Option<&[c64]> {
        let k = self.offsets.binary_search(&offset).ok()?;
        Some(&self.row(k)[valid_cols(self.shape, offset)])
    }

    /// The number of stored entries (the lengths of the stored diagonals; stored zeros count).
    pub fn nnz(&self) -> usize {
        self.offsets
            .iter()
            .map(|&o| valid_cols(self.shape, o).len())
            .sum()
    }

    /// Entry `(i, j)` (zero if its diagonal is not stored), or `None` out of bounds.
    /// O(log(diagonals)).
    pub fn try_get(&self, i: usize, j: usize) -> Option<c64> {
        let (r, c) = self.shape;
        if i >= r || j >= c {
            return None;
        }
        // An offset that does not fit an isize cannot be a stored diagonal.
        let Ok(o) = isize::try_from(j as i128 - i as i128) else {
            return Some(ZERO);
        };
        Some(match self.offsets.binary_search(&o) {
            Ok(k) => self.row(k)[j],
            Err(_) => ZERO,
        })
    }

    /// Entry `(i, j)`.
    ///
    /// # Panics
    /// If `(i, j)` is out of bounds, like [`Dense::get`](crate::Dense::get);
    /// [`Dia::try_get`] returns `None` instead.
    pub fn get(&self, i: usize, j: usize) -> c64 {
        self.try_get(i, j).unwrap_or_else(|| {
            let (r, c) = self.shape;
            panic!("index ({i}, {j}) out of bounds for a {r}×{c} Dia (Dia::try_get returns None instead)")
        })
    }

    /// Unwraps into `(offsets, data)`.
    pub fn into_parts(self) -> (Vec<isize>, Vec<c64>) {
        (self.offsets, self.data)
    }
}

impl Storage for Dia {
    fn shape(&self) -> (usize, usize) {
        self.shape
    }
}

impl fmt::Display for Dia {
    /// The entries, as numpy prints the dense array; `{:#}` prints the summary
    /// `Dia(3×3, 2 diagonals)`. See [`storage`](crate::storage#printing).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            let (r, c) = self.shape;
            let n = self.offsets.len();
            return write!(
                f,
                "Dia({r}×{c}, {n} diagonal{})",
                if n == 1 { "" } else { "s" }
            );
        }
        display::matrix(f, self.shape, |i, j| self.try_get(i, j).unwrap_or(ZERO))
    }
}

impl fmt::Debug for Dia {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:#} offsets {:?}", self.offsets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(x: f64) -> c64 {
        c64::new(x, 0.0)
    }

    #[test]
    fn layout_is_column_indexed() {
        // 3×4: offsets −1, 0, 2
        let data = vec![
            c(1.0),
            c(2.0),
            c(3.0),
            c(9.0), // −1: (1,0) (2,1) (3,2)→outside, j=3 padding
            c(4.0),
            c(5.0),
            c(6.0),
            c(9.0), // 0: (0,0) (1,1) (2,2); j=3 padding
            c(9.0),
            c(9.0),
            c(7.0),
            c(8.0), // 2: (0,2) (1,3)
        ];
        let d = Dia::new((3, 4), vec![2, -1, 0], {
            // given in the order 2, −1, 0
            let mut v = data[8..12].to_vec();
            v.extend_from_slice(&data[0..4]);
            v.extend_from_slice(&data[4..8]);
            v
        })
        .unwrap();
        assert_eq!(d.offsets(), &[-1, 0, 2]);
        assert_eq!(d.to_string(), "[[4, 0, 7, 0], [1, 5, 0, 8], [0, 2, 6, 0]]");
        assert_eq!(d.nnz(), 7);
        assert_eq!(d.diagonal(-1), Some(&[c(1.0), c(2.0)][..]));
        assert_eq!(d.diagonal(2), Some(&[c(7.0), c(8.0)][..]));
        // padding was zeroed
        assert_eq!(d.data()[3], ZERO);
        assert_eq!(d.data()[8], ZERO);
    }

    #[test]
    fn valid_columns() {
        assert_eq!(valid_cols((3, 4), -1), 0..2);
        assert_eq!(valid_cols((3, 4), 0), 0..3);
        assert_eq!(valid_cols((3, 4), 3), 3..4);
        assert_eq!(valid_cols((3, 4), 4), 4..4);
        assert_eq!(valid_cols((3, 4), -3), 0..0);
        assert_eq!(valid_cols((0, 4), 0), 0..0);
        assert_eq!(valid_cols((usize::MAX, 2), -5), 0..2);
    }

    #[test]
    fn empty_and_identity() {
        assert_eq!(Dia::zeros(usize::MAX, usize::MAX).nnz(), 0);
        let i = Dia::identity(3);
        assert_eq!(i.get(2, 2), ONE);
        assert_eq!(i.try_get(3, 0), None);
        assert!(Dia::new((0, 0), vec![0], vec![]).is_err());
    }
}
