//! `nalgebra::DMatrix<c64>` ↔ [`Dense`], `nalgebra_sparse::CsrMatrix<c64>` ↔ [`Csr`]
//! (feature `nalgebra`).

use nalgebra::DMatrix;
use nalgebra_sparse::CsrMatrix;

use crate::error::{Error, Result};
use crate::scalar::c64;
use crate::storage::{Csr, Data, Dense};

impl TryFrom<&DMatrix<c64>> for Dense {
    type Error = Error;
    /// Copies the entries (both are column-major: one pass).
    ///
    /// # Errors
    /// [`Error::TooLarge`] over the dense limit.
    ///
    /// ```
    /// use nalgebra::DMatrix;
    /// use polymat::{Dense, c64};
    /// let m = DMatrix::from_fn(2, 2, |i, j| c64::new(i as f64, j as f64));
    /// let d = Dense::try_from(&m)?;
    /// assert_eq!(d.to_string(), "[[0, 0+1i], [1, 1+1i]]");
    /// assert_eq!(DMatrix::from(&d), m);
    /// # Ok::<(), polymat::Error>(())
    /// ```
    fn try_from(m: &DMatrix<c64>) -> Result<Dense> {
        // A row vector row-major, unpadded (`Dense`'s "Memory of a one-row matrix").
        Dense::from_col_major_public("from DMatrix", m.nrows(), m.ncols(), m.as_slice())
    }
}

impl From<&Dense> for DMatrix<c64> {
    fn from(d: &Dense) -> DMatrix<c64> {
        let (r, c) = d.shape();
        DMatrix::from_fn(r, c, |i, j| d.as_ref()[(i, j)])
    }
}

impl From<Dense> for DMatrix<c64> {
    fn from(d: Dense) -> DMatrix<c64> {
        DMatrix::from(&d)
    }
}

impl TryFrom<&Data> for DMatrix<c64> {
    type Error = Error;
    /// Converts any kind to [`Dense`] first (never densifying past the dense limit).
    fn try_from(data: &Data) -> Result<DMatrix<c64>> {
        match data.as_dense() {
            Some(d) => Ok(d.into()),
            None => Ok(DMatrix::from(&data.to_type::<Dense>()?)),
        }
    }
}

impl TryFrom<&CsrMatrix<c64>> for Csr {
    type Error = Error;
    /// Copies the three arrays and validates them ([`Csr::from_raw`]).
    ///
    /// ```
    /// use nalgebra_sparse::CsrMatrix;
    /// use polymat::{Csr, c64};
    /// let m = CsrMatrix::<c64>::identity(3);
    /// let c = Csr::try_from(&m)?;
    /// assert_eq!(c.nnz(), 3);
    /// assert_eq!(CsrMatrix::try_from(&c)?, m);
    /// # Ok::<(), polymat::Error>(())
    /// ```
    fn try_from(m: &CsrMatrix<c64>) -> Result<Csr> {
        let (p, i, v) = m.csr_data();
        Csr::from_raw((m.nrows(), m.ncols()), p.to_vec(), i.to_vec(), v.to_vec())
    }
}

impl TryFrom<&Csr> for CsrMatrix<c64> {
    type Error = Error;
    /// Copies the three arrays.
    ///
    /// # Errors
    /// Never for a valid [`Csr`]; nalgebra-sparse's own check is mapped to
    /// [`Error::InvalidCsr`].
    fn try_from(c: &Csr) -> Result<CsrMatrix<c64>> {
        let (r, n) = c.shape();
        CsrMatrix::try_from_csr_data(
            r,
            n,
            c.indptr().to_vec(),
            c.indices().to_vec(),
            c.data().to_vec(),
        )
        .map_err(|e| Error::InvalidCsr {
            shape: (r, n),
            reason: format!("nalgebra-sparse refused the arrays: {e}"),
        })
    }
}

impl TryFrom<&Data> for CsrMatrix<c64> {
    type Error = Error;
    /// Converts any kind to [`Csr`] first.
    fn try_from(data: &Data) -> Result<CsrMatrix<c64>> {
        match data.as_csr() {
            Some(c) => CsrMatrix::try_from(c),
            None => CsrMatrix::try_from(&data.to_type::<Csr>()?),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let m = DMatrix::from_fn(3, 2, |i, j| c64::new(i as f64, -(j as f64)));
        let d = Dense::try_from(&m).unwrap();
        assert_eq!(d.get(2, 1), c64::new(2.0, -1.0));
        assert_eq!(DMatrix::from(d), m);
        let c = Csr::from_triplets(
            (2, 3),
            &[1, 0],
            &[2, 0],
            &[c64::new(1.0, 1.0), c64::new(2.0, 0.0)],
        )
        .unwrap();
        let n = CsrMatrix::try_from(&c).unwrap();
        assert_eq!(Csr::try_from(&n).unwrap(), c);
        let data: Data = c.clone().into();
        assert_eq!(CsrMatrix::try_from(&data).unwrap(), n);
        let dm = DMatrix::try_from(&data).unwrap();
        assert_eq!(dm[(1, 2)], c64::new(1.0, 1.0));
        assert_eq!(
            Dense::try_from(&DMatrix::<c64>::zeros(0, 4))
                .unwrap()
                .shape(),
            (0, 4)
        );
    }

    #[test]
    fn a_row_vector_is_held_in_one_buffer_column() {
        let m = DMatrix::from_fn(1, 9, |_, j| c64::new(j as f64, 1.0));
        let d = Dense::try_from(&m).unwrap();
        assert_eq!(d.layout(), crate::Layout::RowMajor);
        assert_eq!(d.buffer().shape(), (9, 1));
        assert_eq!(d.get(0, 7), c64::new(7.0, 1.0));
        assert_eq!(DMatrix::from(&d), m);
        // A column vector as before: column-major, one buffer column.
        let k = Dense::try_from(&m.transpose()).unwrap();
        assert_eq!(
            (k.layout(), k.buffer().shape()),
            (crate::Layout::ColMajor, (9, 1))
        );
    }
}
