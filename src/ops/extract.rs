//! Extraction of the underlying `faer` / `sprs` matrix.

use faer::Mat;
use sprs::CsMat;

use crate::convert::to_type;
use crate::error::Result;
use crate::scalar::c64;
use crate::storage::{Csr, Data, Dense};

/// A plain matrix type that [`extract`] can produce from any [`Data`].
pub trait Extract: Sized {
    /// Converts `data` (through the registry's cheapest chain if needed) and unwraps it.
    ///
    /// # Errors
    /// [`Error::NoConversion`](crate::Error::NoConversion) if `data`'s kind cannot reach the
    /// storage type behind `Self`.
    fn extract(data: &Data) -> Result<Self>;
}

impl Extract for Mat<c64> {
    fn extract(data: &Data) -> Result<Self> {
        Ok(to_type::<Dense>(data)?.into_mat())
    }
}

impl Extract for CsMat<c64> {
    fn extract(data: &Data) -> Result<Self> {
        Ok(to_type::<Csr>(data)?.into_csmat())
    }
}

/// The data as a `faer::Mat<c64>` or a `sprs::CsMat<c64>` (QuTiP's `extract`), converting if
/// needed. When `data` already has the right kind its storage is copied (the handle keeps
/// it); a freshly converted value is moved out without a copy.
///
/// # Errors
/// [`Error::NoConversion`](crate::Error::NoConversion) if the kind cannot be converted.
///
/// ```
/// use polymat::{Csr, c64};
/// let a: polymat::Data = Csr::identity(3).into();
/// let m: faer::Mat<c64> = polymat::extract(&a).unwrap();
/// assert_eq!(m[(2, 2)], c64::new(1.0, 0.0));
/// let s: sprs::CsMat<c64> = polymat::extract(&a).unwrap();
/// assert_eq!(s.nnz(), 3);
/// ```
pub fn extract<T: Extract>(data: &Data) -> Result<T> {
    T::extract(data)
}
