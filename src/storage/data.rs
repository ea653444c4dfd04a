//! The type-erased, shared matrix handle.

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::Arc;

use faer::Mat;
use sprs::CsMat;

use super::{Csr, Dense, Dia, Kind, KronSum, Storage, SuperOp};
use crate::error::{Error, Result};
use crate::scalar::c64;

/// A matrix in any registered storage kind, behind a cheap-to-clone [`Arc`].
///
/// `Data` is what the dispatchers take and return. It knows its [`Kind`] and shape without
/// touching the value (both are stored inline), and gives the concrete value back with
/// [`downcast_ref`](Data::downcast_ref). Cloning a `Data` clones the `Arc`, never the matrix.
///
/// ```
/// use polymat::{Csr, Data, Dense, Kind, c64};
///
/// let d: Data = Dense::identity(3).into();
/// assert_eq!(d.kind(), Kind::DENSE);
/// assert_eq!(d.shape(), (3, 3));
///
/// let s: Data = Csr::identity(3).into();
/// let csr: &Csr = s.downcast_ref::<Csr>().unwrap();
/// assert_eq!(csr.nnz(), 3);
/// assert!(s.downcast_ref::<Dense>().is_none());
/// ```
#[derive(Clone)]
pub struct Data {
    kind: Kind,
    shape: (usize, usize),
    /// `TypeId` of the value behind `inner`, set with it in [`Data::with_kind`] (the one
    /// constructor) and never changed: a downcast compares it inline instead of asking the
    /// value through its vtable.
    type_id: TypeId,
    inner: Arc<dyn Storage>,
}

impl Data {
    /// Wraps a value of any registered storage type.
    ///
    /// # Errors
    /// [`Error::UnregisteredType`] if `T` has not been registered.
    ///
    /// # Cost
    /// One hash lookup of `T`'s `TypeId`; `From<Dense>` and `From<Csr>` skip even that.
    pub fn new<T: Storage>(value: T) -> Result<Data> {
        let kind = crate::convert::registry().kind_of::<T>()?;
        Ok(Data::with_kind(kind, value))
    }

    /// Wraps a value whose kind is already known. The caller guarantees `kind` is `T`'s kind.
    #[inline]
    pub(crate) fn with_kind<T: Storage>(kind: Kind, value: T) -> Data {
        Data {
            kind,
            shape: value.shape(),
            type_id: TypeId::of::<T>(),
            inner: Arc::new(value),
        }
    }

    /// As [`with_kind`](Data::with_kind), with the `Arc`'s reference counts written in place:
    /// `Arc::new` builds them beside the value on the stack and copies both into the
    /// allocation, reloading the two 8-byte count stores as one 16-byte load (a
    /// store-forwarding stall). Which of the two moves a value with fewer stalls depends on
    /// how the caller left it, so each converter that uses this one was measured: Csr → Dense
    /// 2 × 2 68 → 59 ns a conversion, 10 × 10 87 → 79 ns (one thread); Dense → Csr
    /// went the other way (91 → 97 ns) and keeps `with_kind`.
    #[inline(always)]
    pub(crate) fn with_kind_in_place<T: Storage>(kind: Kind, value: T) -> Data {
        let shape = value.shape();
        let slot = Arc::<T>::new_uninit();
        // SAFETY: `slot` was just allocated and has no other reference, so writing its value
        // through the pointer races with nothing; after the write it is initialised.
        let inner = unsafe {
            Arc::as_ptr(&slot)
                .cast_mut()
                .write(std::mem::MaybeUninit::new(value));
            slot.assume_init()
        };
        Data {
            kind,
            shape,
            type_id: TypeId::of::<T>(),
            inner,
        }
    }

    /// The storage kind, in O(1).
    #[inline]
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// `(rows, columns)`, in O(1).
    #[inline]
    pub fn shape(&self) -> (usize, usize) {
        self.shape
    }

    /// The concrete value, if it is a `T`.
    #[inline]
    pub fn downcast_ref<T: Storage>(&self) -> Option<&T> {
        if self.type_id == TypeId::of::<T>() {
            // SAFETY: `type_id` is the `TypeId` of the value `inner` was created from (both
            // set together in `with_kind` and never changed), so `inner` points at a `T`.
            Some(unsafe { &*Arc::as_ptr(&self.inner).cast::<T>() })
        } else {
            None
        }
    }

    /// The concrete value or an [`Error::KernelType`] naming `op` and `kernel`; for kernels.
    #[inline]
    pub(crate) fn downcast_or_err<T: Storage>(&self, op: &str, kernel: &str) -> Result<&T> {
        match self.downcast_ref::<T>() {
            Some(v) => Ok(v),
            None => Err(self.type_error(op, kernel, std::any::type_name::<T>())),
        }
    }

    #[cold]
    #[inline(never)]
    fn type_error(&self, op: &str, kernel: &str, expected: &'static str) -> Error {
        Error::KernelType {
            op: op.to_owned(),
            kernel: kernel.to_owned(),
            expected,
            got: self.kind.name(),
        }
    }

    /// The concrete value, moved out if this handle is the only one, cloned otherwise.
    ///
    /// Returns `None` if the value is not a `T`.
    pub fn into_inner<T: Storage + Clone>(self) -> Option<T> {
        let any: Arc<dyn Any + Send + Sync> = self.inner;
        let arc = any.downcast::<T>().ok()?;
        Some(Arc::try_unwrap(arc).unwrap_or_else(|shared| (*shared).clone()))
    }

    /// The concrete value for in-place updates, if this handle is the only one and it is a `T`.
    ///
    /// Crate-private: a caller must not change the shape, which `Data` caches.
    pub(crate) fn get_mut<T: Storage>(&mut self) -> Option<&mut T> {
        let storage: &mut dyn Storage = Arc::get_mut(&mut self.inner)?;
        let any: &mut dyn Any = storage;
        any.downcast_mut::<T>()
    }

    /// Whether two handles point at the same value (no comparison of entries).
    pub fn ptr_eq(&self, other: &Data) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The value, if it is a [`Dense`]: `data.downcast_ref::<Dense>()` in short. Never converts;
    /// [`Data::to`] and `Dense::try_from(&data)` do.
    ///
    /// ```
    /// use polymat::{Csr, Data, Dense};
    /// let d: Data = Dense::identity(2).into();
    /// assert_eq!(d.as_dense().map(Dense::shape), Some((2, 2)));
    /// assert!(d.as_csr().is_none());
    /// ```
    #[inline]
    pub fn as_dense(&self) -> Option<&Dense> {
        self.downcast_ref::<Dense>()
    }

    /// The value, if it is a [`Csr`]: `data.downcast_ref::<Csr>()` in short. Never converts.
    #[inline]
    pub fn as_csr(&self) -> Option<&Csr> {
        self.downcast_ref::<Csr>()
    }

    /// The value, if it is a [`Dia`]: `data.downcast_ref::<Dia>()` in short. Never converts.
    #[inline]
    pub fn as_dia(&self) -> Option<&Dia> {
        self.downcast_ref::<Dia>()
    }

    /// The value as a `&dyn Storage`.
    pub fn storage(&self) -> &dyn Storage {
        &*self.inner
    }
}

impl fmt::Debug for Data {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.inner, f)
    }
}

impl fmt::Display for Data {
    /// The built-in kinds print their entries (`[[1, 0], [0, 1]]`, see
    /// [`storage`](crate::storage#printing)) and, with `{:#}`, their summary
    /// (`Csr(2×2, nnz=2)`); the lazy kinds print their summary either way
    /// (`KronSum(8×8, 3 terms on 3 subsystems)`); other kinds print `Kind(r×c)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(d) = self.downcast_ref::<Dense>() {
            fmt::Display::fmt(d, f)
        } else if let Some(c) = self.downcast_ref::<Csr>() {
            fmt::Display::fmt(c, f)
        } else if let Some(k) = self.downcast_ref::<KronSum>() {
            fmt::Display::fmt(k, f)
        } else if let Some(s) = self.downcast_ref::<SuperOp>() {
            fmt::Display::fmt(s, f)
        } else {
            write!(f, "{}({}×{})", self.kind, self.shape.0, self.shape.1)
        }
    }
}

impl From<Dense> for Data {
    #[inline]
    fn from(value: Dense) -> Data {
        Data::with_kind(Kind::DENSE, value)
    }
}

impl From<Csr> for Data {
    #[inline]
    fn from(value: Csr) -> Data {
        Data::with_kind(Kind::CSR, value)
    }
}

impl From<Dia> for Data {
    #[inline]
    fn from(value: Dia) -> Data {
        Data::with_kind(Kind::DIA, value)
    }
}

impl From<KronSum> for Data {
    #[inline]
    fn from(value: KronSum) -> Data {
        Data::with_kind(Kind::KRON_SUM, value)
    }
}

impl From<SuperOp> for Data {
    #[inline]
    fn from(value: SuperOp) -> Data {
        Data::with_kind(Kind::SUPER_OP, value)
    }
}

impl From<Mat<c64>> for Data {
    /// Wraps a `faer` matrix as a [`Dense`] `Data` (no copy).
    #[inline]
    fn from(mat: Mat<c64>) -> Data {
        Dense::new(mat).into()
    }
}

impl TryFrom<CsMat<c64>> for Data {
    type Error = Error;
    /// Wraps an `sprs` matrix as a [`Csr`] `Data`, like [`Csr::from_csmat`] (a CSC matrix is
    /// converted to CSR).
    fn try_from(mat: CsMat<c64>) -> Result<Data> {
        Csr::from_csmat(mat).map(Data::from)
    }
}
