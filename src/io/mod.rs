//! Files: Matrix Market (`.mtx`) for every kind, numpy's `.npy` for dense matrices.
//!
//! | format | reads | writes |
//! |---|---|---|
//! | Matrix Market `coordinate` | [`Csr`] (real, double, integer, complex, pattern; general, symmetric, skew-symmetric, hermitian) | [`Csr`] and every kind but the dense ones, `general`, `real` when no entry has an imaginary part, else `complex` |
//! | Matrix Market `array` | [`Dense`] (real, double, integer, complex; all symmetries) | [`Dense`] and [`GpuDense`](crate::GpuDense) |
//! | `.npy` (versions 1–3) | [`Dense`] from `complex128/64`, `float64/32`, signed and unsigned integers, either byte order, C or Fortran order (a vector in either read as a ket column-major, a bra row-major); a 1-D array is a column, a 0-D one 1×1 | [`Dense`] as `<c16`, in its [`Layout`](crate::Layout): Fortran order for column-major, C order for row-major (no transposition either way) |
//!
//! Everything read is checked: a malformed header, an index out of range, a count that does
//! not match, a value that does not parse, a file that ends early or a shape over the dense
//! limit is an [`Error::Format`] (with the line for text) or an
//! [`Error::TooLarge`], never a panic; nothing is allocated from a
//! size in a header before the entries behind it have been read (dense arrays excepted, which
//! are checked against the dense limit first). Files that fail to open or write are an
//! [`Error::Io`].
//!
//! Numbers are written in Rust's shortest round-trip form, so writing and reading back gives
//! the same bits (explicitly stored zeros of a [`Csr`] included). The writers take a
//! [`Data`], a [`Dense`] or a [`Csr`] ([`MatrixRef`]).
//!
//! ```
//! use polymat::{Csr, Data, Dense, c64, io};
//!
//! let dir = std::env::temp_dir().join(format!("polymat-io-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//!
//! let h = Csr::from_triplets((3, 3), &[0, 1, 2], &[1, 0, 2], &[
//!     c64::new(1.0, 0.5), c64::new(1.0, -0.5), c64::new(-2.0, 0.0),
//! ])?;
//! io::write_matrix_market(dir.join("h.mtx"), &h)?;
//! let back: Data = io::read_matrix_market(dir.join("h.mtx"))?;
//! assert_eq!(back.as_csr(), Some(&h));
//!
//! let rho = Dense::from_fn(2, 2, |i, j| c64::new((i + 2 * j) as f64, 0.0));
//! io::write_npy(dir.join("rho.npy"), &rho)?;
//! assert_eq!(io::read_npy(dir.join("rho.npy"))?, rho);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # Ok::<(), polymat::Error>(())
//! ```

mod mtx;
mod mtx_write;
mod npy;

pub use mtx::{read_matrix_market, read_matrix_market_from};
pub use mtx_write::{write_matrix_market, write_matrix_market_to};
pub use npy::{read_npy, read_npy_from, write_npy, write_npy_to};

use std::borrow::Cow;
use std::path::Path;

use crate::error::{Error, Result};
use crate::storage::{Csr, Data, Dense, Kind};

/// A matrix the writers accept: a [`Data`] of any kind, or a [`Dense`] or [`Csr`] without
/// wrapping it. Built by `From`, so `write_npy(path, &dense)` and `write_npy(path, &data)` both
/// read naturally.
#[derive(Clone, Copy, Debug)]
pub enum MatrixRef<'a> {
    /// Any kind, converted as needed.
    Data(&'a Data),
    /// A dense matrix.
    Dense(&'a Dense),
    /// A sparse matrix.
    Csr(&'a Csr),
}

impl<'a> From<&'a Data> for MatrixRef<'a> {
    fn from(d: &'a Data) -> Self {
        MatrixRef::Data(d)
    }
}

impl<'a> From<&'a Dense> for MatrixRef<'a> {
    fn from(d: &'a Dense) -> Self {
        MatrixRef::Dense(d)
    }
}

impl<'a> From<&'a Csr> for MatrixRef<'a> {
    fn from(c: &'a Csr) -> Self {
        MatrixRef::Csr(c)
    }
}

impl<'a> MatrixRef<'a> {
    /// The storage kind.
    pub fn kind(self) -> Kind {
        match self {
            MatrixRef::Data(d) => d.kind(),
            MatrixRef::Dense(_) => Kind::DENSE,
            MatrixRef::Csr(_) => Kind::CSR,
        }
    }

    /// The matrix as a Dense, converted if needed (so a sparse matrix over the dense limit is
    /// an [`Error::TooLarge`], never densified).
    fn dense(self) -> Result<Cow<'a, Dense>> {
        match self {
            MatrixRef::Dense(d) => Ok(Cow::Borrowed(d)),
            MatrixRef::Data(d) => match d.as_dense() {
                Some(dense) => Ok(Cow::Borrowed(dense)),
                None => d.to_type::<Dense>().map(Cow::Owned),
            },
            MatrixRef::Csr(c) => Data::from(c.clone()).to_type::<Dense>().map(Cow::Owned),
        }
    }

    /// The matrix as a Csr, converted if needed.
    fn csr(self) -> Result<Cow<'a, Csr>> {
        match self {
            MatrixRef::Csr(c) => Ok(Cow::Borrowed(c)),
            MatrixRef::Data(d) => match d.as_csr() {
                Some(csr) => Ok(Cow::Borrowed(csr)),
                None => d.to_type::<Csr>().map(Cow::Owned),
            },
            MatrixRef::Dense(d) => Data::from(d.clone()).to_type::<Csr>().map(Cow::Owned),
        }
    }
}

/// `Error::Io` for `op` on `path`.
fn io_error(op: &str, path: &Path, e: &std::io::Error) -> Error {
    Error::Io {
        op: op.to_owned(),
        path: path.display().to_string(),
        kind: e.kind(),
        message: e.to_string(),
    }
}

/// An error from reading a stream, with the stream's `Error::Io` placed at `path`.
fn at_path(e: Error, path: &Path) -> Error {
    match e {
        Error::Io {
            op, kind, message, ..
        } => Error::Io {
            op,
            path: path.display().to_string(),
            kind,
            message,
        },
        e => e,
    }
}

/// `Error::Io` for `op` on a stream.
fn stream_error(op: &str, e: &std::io::Error) -> Error {
    Error::Io {
        op: op.to_owned(),
        path: "<stream>".to_owned(),
        kind: e.kind(),
        message: e.to_string(),
    }
}

/// The kinds the Matrix Market writer stores as `array`; every other kind is written as
/// `coordinate` through [`Csr`].
fn is_dense_kind(kind: Kind) -> bool {
    kind == Kind::DENSE || kind == Kind::GPU_DENSE
}
