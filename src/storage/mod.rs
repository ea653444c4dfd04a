//! Storage types and the type-erased [`Data`] handle.
//!
//! A *storage type* is any Rust type that holds a matrix of [`c64`](crate::c64) and implements
//! [`Storage`]. Each registered storage type has a [`Kind`]: a small integer assigned at
//! registration, used by the dispatcher to index its tables without hashing. [`Dense`] and
//! [`Csr`] are built in; others are added with
//! [`ConversionRegistry::register_type`](crate::ConversionRegistry::register_type).
//!
//! # Printing
//!
//! `Display` of [`Dense`], [`Csr`] and a [`Data`] holding one prints the entries the way numpy
//! prints an array; `{:#}` prints a one-line summary instead.
//!
//! * An entry prints as `re` when its imaginary part is zero, else as `re+imi`: `0+2i`, `1-0.5i`.
//!   Up to 8 decimals with trailing zeros trimmed (`{:.3}` sets another precision), exponent form
//!   outside `1e-4 ≤ |x| < 1e8` (`1.5e-10`).
//! * A matrix prints on one line when that fits in 75 characters, else one row per line with
//!   aligned columns.
//! * Above 1000 entries only the first and last 3 rows and columns print, with `...` between,
//!   so printing a sparse operator of any size looks up at most 49 entries.
//!
//! ```
//! use polymat::{Csr, Data, Dense, c64};
//!
//! let sy = Dense::from_rows(&[
//!     [c64::new(0.0, 0.0), c64::new(0.0, -1.0)],
//!     [c64::new(0.0, 1.0), c64::new(0.0, 0.0)],
//! ])?;
//! assert_eq!(sy.to_string(), "[[0, 0-1i], [0+1i, 0]]");
//! assert_eq!(format!("{sy:#}"), "Dense(2×2)");
//!
//! let big: Data = Csr::identity(1_000_000).into();
//! assert_eq!(format!("{big:#}"), "Csr(1000000×1000000, nnz=1000000)");
//! assert_eq!(big.to_string().lines().next(), Some("[[1, 0, 0, ..., 0, 0, 0],"));
//! # Ok::<(), polymat::Error>(())
//! ```

pub(crate) mod alloc;
mod csr;
pub(crate) mod csr_build;
mod data;
mod dense;
mod dia;
mod diagonals;
mod display;
mod kind;
mod kron_sum;
mod layout;
pub(crate) mod scratch;
mod super_op;

pub use csr::Csr;
pub use data::Data;
pub use dense::Dense;
pub use dia::Dia;
pub(crate) use dia::valid_cols;
pub use diagonals::Diagonals;
pub use kind::Kind;
pub use kron_sum::{KronSum, KronTerm};
pub use layout::Layout;
pub(crate) use layout::transpose_values;
pub(crate) use super_op::{RawTerm, merge_terms};
pub use super_op::{SuperOp, SuperTerm};

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
