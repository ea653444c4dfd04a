//! Storage types and the type-erased [`Data`] handle.
//!
//! A *storage type* is any Rust type that holds a matrix of [`c64`](crate::c64) and implements
//! [`Storage`]. Each registered storage type has a [`Kind`]: a small integer assigned at
//! registration, used by the dispatcher to index its tables without hashing. [`Dense`] and
//! [`Csr`] are built in; others are added with
//! [`ConversionRegistry::register_type`](crate::ConversionRegistry::register_type).

pub(crate) mod alloc;
mod csr;
mod data;
mod dense;
mod diagonals;
mod kind;

pub use csr::Csr;
pub use data::Data;
pub use dense::Dense;
pub use diagonals::Diagonals;
pub use kind::Kind;

use std::any::Any;
use std::fmt;

/// A matrix storage format.
///
/// Implement it for a type to register that type as a new kind of storage. The type must be
/// `Send + Sync + 'static` because [`Data`] handles are shared between threads.
///
/// ```compile_fail
/// // A storage type must be Send + Sync: an Rc inside is rejected at compile time.
/// #[derive(Debug)]
/// struct NotSync(std::rc::Rc<u8>);
/// impl polymat::Storage for NotSync {
///     fn shape(&self) -> (usize, usize) { (1, 1) }
/// }
/// ```
pub trait Storage: Any + Send + Sync + fmt::Debug {
    /// `(rows, columns)`.
    fn shape(&self) -> (usize, usize);
}
