//! `ndarray::Array2<c64>` ↔ [`Dense`] (feature `ndarray`).

use ndarray::{Array2, ArrayBase, ArrayView2, Ix2, ShapeBuilder};

use crate::error::{Error, Result};
use crate::scalar::c64;
use crate::storage::{Data, Dense};

impl TryFrom<ArrayView2<'_, c64>> for Dense {
    type Error = Error;
    /// Copies the entries, whatever the view's layout or strides.
    ///
    /// # Errors
    /// [`Error::TooLarge`] over the dense limit.
    ///
    /// ```
    /// use ndarray::array;
    /// use polymat::{Dense, c64};
    /// let a = array![[c64::new(1.0, 0.0), c64::new(0.0, 1.0)]];
    /// let d = Dense::try_from(a.view())?;
    /// assert_eq!(d.to_string(), "[[1, 0+1i]]");
    /// let back: ndarray::Array2<c64> = (&d).into();
    /// assert_eq!(back, a);
    /// # Ok::<(), polymat::Error>(())
    /// ```
    fn try_from(a: ArrayView2<'_, c64>) -> Result<Dense> {
        let (r, c) = a.dim();
        Dense::try_from_fn(r, c, |i, j| a[[i, j]])
    }
}

impl<S: ndarray::Data<Elem = c64>> TryFrom<&ArrayBase<S, Ix2>> for Dense {
    type Error = Error;
    /// Copies the entries (see the `ArrayView2` form).
    fn try_from(a: &ArrayBase<S, Ix2>) -> Result<Dense> {
        Dense::try_from(a.view())
    }
}

impl From<&Dense> for Array2<c64> {
    /// Copies into a column-major (Fortran-order) array, the layout of [`Dense`].
    fn from(d: &Dense) -> Array2<c64> {
        Array2::from_shape_fn(d.shape().f(), |(i, j)| d.as_ref()[(i, j)])
    }
}

impl From<Dense> for Array2<c64> {
    fn from(d: Dense) -> Array2<c64> {
        Array2::from(&d)
    }
}

impl TryFrom<&Data> for Array2<c64> {
    type Error = Error;
    /// Converts any kind to [`Dense`] first (so a sparse matrix over the dense limit is an
    /// [`Error::TooLarge`], never densified).
    fn try_from(data: &Data) -> Result<Array2<c64>> {
        match data.as_dense() {
            Some(d) => Ok(d.into()),
            None => Ok(Array2::from(&data.to_type::<Dense>()?)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::s;

    #[test]
    fn layouts_and_strides_survive() {
        let a = Array2::from_shape_fn((4, 5), |(i, j)| c64::new(i as f64, j as f64));
        let strided = a.slice(s![..;2, 1..;2]);
        let d = Dense::try_from(strided).unwrap();
        assert_eq!(d.shape(), (2, 2));
        assert_eq!(d.get(1, 1), c64::new(2.0, 3.0));
        let t = Dense::try_from(&a.t().to_owned()).unwrap();
        assert_eq!(t.get(4, 3), c64::new(3.0, 4.0));
        let back: Array2<c64> = (&Dense::try_from(&a).unwrap()).into();
        assert_eq!(back, a);
        let data: Data = crate::Csr::identity(3).into();
        assert_eq!(
            Array2::try_from(&data).unwrap(),
            Array2::from_diag_elem(3, c64::new(1.0, 0.0))
        );
        let empty = Array2::<c64>::zeros((0, 3));
        assert_eq!(Dense::try_from(&empty).unwrap().shape(), (0, 3));
    }
}
