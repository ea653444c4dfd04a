//! Extraction of the underlying `faer` / `sprs` matrix.

use faer::Mat;
use sprs::CsMat;

use crate::convert::{registry, to_type};
use crate::error::{Error, Result};
use crate::scalar::c64;
use crate::storage::{Csr, Data, Dense, Dia, Storage};

/// A plain matrix type that [`extract`] can produce from any [`Data`].
pub trait Extract: Sized {
    /// Converts `data` (through the registry's cheapest chain if needed) and unwraps it.
    ///
    /// # Errors
    /// [`Error::NoConversion`] if `data`'s kind cannot reach the
    /// storage type behind `Self`.
    fn extract(data: &Data) -> Result<Self>;
}

impl Extract for Mat<c64> {
    fn extract(data: &Data) -> Result<Self> {
        to_type::<Dense>(data)?.try_into_mat()
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
/// [`Error::NoConversion`] if the kind cannot be converted.
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

impl Extract for Dense {
    fn extract(data: &Data) -> Result<Self> {
        to_type::<Dense>(data)
    }
}

impl Extract for Csr {
    fn extract(data: &Data) -> Result<Self> {
        to_type::<Csr>(data)
    }
}

impl Extract for Dia {
    fn extract(data: &Data) -> Result<Self> {
        to_type::<Dia>(data)
    }
}

/// `data` converted to `T` and moved out: no copy when `data` is the only handle and already a
/// `T` (the converted value, a fresh one, is never copied).
fn into_type<T: Storage + Clone>(data: Data) -> Result<T> {
    let kind = registry().kind_of::<T>()?;
    let from = data.kind().name();
    let converted = registry().convert(&data, kind)?;
    // The same kind comes back as a second handle to the same value: drop the first.
    drop(data);
    let got = converted.kind().name();
    converted
        .into_inner::<T>()
        .ok_or_else(|| Error::ConverterOutput {
            from,
            to: kind.name(),
            got,
        })
}

/// `TryFrom<&Data>` and `TryFrom<Data>` for each [`Extract`] type: `let m: Mat<c64> =
/// (&data).try_into()?`. The owned form moves the value out without a copy when the handle is
/// the only one and already has the right kind.
macro_rules! try_from_data {
    ($($t:ty => $storage:ty),* $(,)?) => {$(
        impl TryFrom<&Data> for $t {
            type Error = Error;
            /// [`extract`]: converts through the registry's cheapest chain if needed.
            fn try_from(data: &Data) -> Result<$t> {
                <$t as Extract>::extract(data)
            }
        }
        impl TryFrom<Data> for $t {
            type Error = Error;
            /// Like the `&Data` form, without a copy when `data` is the only handle to a value
            /// of the right kind.
            fn try_from(data: Data) -> Result<$t> {
                into_type::<$storage>(data).map(Into::into)
            }
        }
    )*};
}

try_from_data!(Mat<c64> => Dense, CsMat<c64> => Csr, Dense => Dense, Csr => Csr, Dia => Dia);
