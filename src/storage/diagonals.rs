//! A matrix described by its diagonals: the parameter of `diag` and the layout behind `Dia`.

use crate::error::{Error, Result};
use crate::scalar::c64;

/// Diagonals at offsets (positive above the main diagonal) and the shape of the matrix they
/// describe. The parameter of [`diag`](crate::ops::diag).
///
/// The diagonal at offset `k ≥ 0` starts at `(0, k)`, the one at `k < 0` at `(−k, 0)`; each
/// holds exactly as many entries as the diagonal has in a `rows × cols` matrix
/// ([`Diagonals::len_of`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Diagonals {
    /// The values of each diagonal, in order along it.
    pub diagonals: Vec<Vec<c64>>,
    /// The offset of each diagonal: 0 main, `k > 0` above, `k < 0` below.
    pub offsets: Vec<isize>,
    /// `(rows, cols)` of the result.
    pub shape: (usize, usize),
}

/// `(rows, cols, values)` of the entries.
pub(crate) type Triplets = (Vec<usize>, Vec<usize>, Vec<c64>);

impl Diagonals {
    /// The number of entries of the diagonal at `offset` in a `rows × cols` matrix (0 when it
    /// lies outside).
    ///
    /// ```
    /// use polymat::ops::Diagonals;
    /// assert_eq!(Diagonals::len_of((3, 3), 0), 3);
    /// assert_eq!(Diagonals::len_of((3, 3), -2), 1);
    /// assert_eq!(Diagonals::len_of((2, 5), 1), 2);
    /// assert_eq!(Diagonals::len_of((2, 5), 9), 0);
    /// ```
    pub fn len_of(shape: (usize, usize), offset: isize) -> usize {
        let k = offset.unsigned_abs();
        if offset >= 0 {
            shape.0.min(shape.1.saturating_sub(k))
        } else {
            shape.1.min(shape.0.saturating_sub(k))
        }
    }

    /// The `(row, column)` where the diagonal at `offset` starts.
    pub(crate) fn start(offset: isize) -> (usize, usize) {
        if offset >= 0 {
            (0, offset.unsigned_abs())
        } else {
            (offset.unsigned_abs(), 0)
        }
    }

    /// The entries as triplets, after checking that every diagonal has its length.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming `op` if the numbers of diagonals and offsets differ or
    /// a diagonal has the wrong length (an empty diagonal included).
    pub(crate) fn triplets(&self, op: &str) -> Result<Triplets> {
        if self.diagonals.len() != self.offsets.len() {
            return Err(Error::argument(
                op,
                format!(
                    "{} diagonals but {} offsets",
                    self.diagonals.len(),
                    self.offsets.len()
                ),
            ));
        }
        let mut total = 0usize;
        for (d, &k) in self.diagonals.iter().zip(&self.offsets) {
            let len = Diagonals::len_of(self.shape, k);
            if d.len() != len || len == 0 {
                return Err(Error::argument(
                    op,
                    format!(
                        "the diagonal at offset {k} of a {}×{} matrix has {len} entries, got {}",
                        self.shape.0,
                        self.shape.1,
                        d.len()
                    ),
                ));
            }
            total += len;
        }
        let (mut rows, mut cols, mut vals) = (
            Vec::with_capacity(total),
            Vec::with_capacity(total),
            Vec::with_capacity(total),
        );
        for (d, &k) in self.diagonals.iter().zip(&self.offsets) {
            let (r0, c0) = Diagonals::start(k);
            for (t, &v) in d.iter().enumerate() {
                rows.push(r0 + t);
                cols.push(c0 + t);
                vals.push(v);
            }
        }
        Ok((rows, cols, vals))
    }
}
