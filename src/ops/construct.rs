//! Constructors: zero and identity matrices of any kind.

use std::sync::LazyLock;

use crate::dispatch::{Dispatcher, Out};
use crate::error::Result;
use crate::gpu::GpuDense;
use crate::scalar::c64;
pub use crate::storage::Diagonals;
use crate::storage::{Csr, Data, Dense, Dia};

/// The `rows × cols` zero matrix. Parameter: `(rows, cols)`. Kernels: Dense, Csr;
/// `Out::Auto` gives Csr (no stored entries).
pub static ZEROS: LazyLock<Dispatcher<(usize, usize)>> = LazyLock::new(|| {
    // Registered last, Csr wins the tie under Out::Auto.
    Dispatcher::builder("zeros", 0)
        .result_shape(|_, &shape| Some(shape))
        .nullary("zeros_gpu", |&(r, c): &(usize, usize)| {
            GpuDense::zeros(r, c)
        })
        .nullary("zeros_dense", |&(r, c): &(usize, usize)| {
            Dense::zeros_public("zeros", r, c)
        })
        .nullary("zeros_dia", |&(r, c): &(usize, usize)| Ok(Dia::zeros(r, c)))
        .nullary("zeros_csr", |&(r, c): &(usize, usize)| {
            Csr::zeros_for("zeros", r, c)
        })
        .builtin()
});

/// `scale` times the `n × n` identity. Parameter: `(n, scale)`. Kernels: Dense, Csr;
/// `Out::Auto` gives Csr.
pub static IDENTITY: LazyLock<Dispatcher<(usize, c64)>> = LazyLock::new(|| {
    Dispatcher::builder("identity", 0)
        .result_shape(|_, &(n, _)| Some((n, n)))
        .nullary("identity_gpu", |&(n, s): &(usize, c64)| {
            GpuDense::scaled_identity(n, s)
        })
        .nullary("identity_dense", |&(n, s): &(usize, c64)| {
            Dense::from_fn_for("identity", n, n, |i, j| {
                if i == j { s } else { crate::scalar::ZERO }
            })
        })
        .nullary("identity_dia", |&(n, s): &(usize, c64)| {
            super::dia::identity_dia(n, s)
        })
        .nullary("identity_csr", |&(n, s): &(usize, c64)| {
            Csr::try_scaled_identity(n, s)
        })
        .builtin()
});

/// The `rows × cols` zero matrix in the requested kind.
///
/// # Errors
/// [`Error::NoSpecialisation`](crate::Error::NoSpecialisation) or
/// [`Error::NoConversion`](crate::Error::NoConversion) if `out` names a kind that cannot be
/// reached.
///
/// ```
/// use polymat::Out;
/// assert_eq!(format!("{:#}", polymat::zeros(2, 3, Out::Auto).unwrap()), "Csr(2×3, nnz=0)");
/// assert_eq!(format!("{:#}", polymat::zeros(2, 3, Out::Dense).unwrap()), "Dense(2×3)");
/// ```
#[inline]
pub fn zeros(rows: usize, cols: usize, out: Out) -> Result<Data> {
    ZEROS.call(&[], out, &(rows, cols))
}

/// The `n × n` identity in the requested kind.
///
/// # Errors
/// As [`zeros`].
///
/// ```
/// use polymat::{Out, c64};
/// let i = polymat::identity(3, Out::Dense).unwrap();
/// assert_eq!(polymat::trace(&i).unwrap(), c64::new(3.0, 0.0));
/// ```
#[inline]
pub fn identity(n: usize, out: Out) -> Result<Data> {
    IDENTITY.call(&[], out, &(n, crate::scalar::ONE))
}

/// Builds a matrix from diagonals; repeated offsets are summed. Kernels: Dense, Csr;
/// `Out::Auto` gives Csr.
pub static DIAG: LazyLock<Dispatcher<Diagonals>> = LazyLock::new(|| {
    Dispatcher::builder("diag", 0)
        .result_shape(|_, p: &Diagonals| Some(p.shape))
        .nullary("diag_gpu", |p: &Diagonals| GpuDense::diag(p))
        .check(|op, _, p: &Diagonals| p.triplets(op).map(|_| ()))
        .nullary("diag_dense", |p: &Diagonals| {
            let (rows, cols, vals) = p.triplets("diag")?;
            // A bra row-major, unpadded (`Dense`'s docs, "Memory of a one-row matrix").
            let mut d = Dense::zeros_public("diag", p.shape.0, p.shape.1)?;
            let mut m = d.view_mut();
            for ((i, j), v) in rows.into_iter().zip(cols).zip(vals) {
                m[(i, j)] += v;
            }
            Ok(d)
        })
        .nullary("diag_dia", |p: &Diagonals| super::dia::diag_dia(p))
        .nullary("diag_csr", |p: &Diagonals| {
            let (rows, cols, vals) = p.triplets("diag")?;
            Csr::from_triplets(p.shape, &rows, &cols, &vals)
        })
        .builtin()
});

/// A matrix from its diagonals.
///
/// # Errors
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) if the number of diagonals and
/// offsets differ or a diagonal does not have the length its offset requires.
///
/// ```
/// use polymat::{Csr, Out, c64};
/// let one = c64::new(1.0, 0.0);
/// // Offset 1 is the first diagonal above the main one: the 3×3 shift matrix, which moves
/// // e₁ to e₀ and e₂ to e₁ (the lowering operator's pattern, without its √n weights).
/// let m = polymat::ops::diag(vec![vec![one, one]], vec![1], (3, 3), Out::Auto).unwrap();
/// assert_eq!(m.downcast_ref::<Csr>().unwrap().get(1, 2), one);
/// assert_eq!(m.to_string(), "[[0, 1, 0], [0, 0, 1], [0, 0, 0]]");
/// ```
pub fn diag(
    diagonals: Vec<Vec<c64>>,
    offsets: Vec<isize>,
    shape: (usize, usize),
    out: Out,
) -> Result<Data> {
    DIAG.call(
        &[],
        out,
        &Diagonals {
            diagonals,
            offsets,
            shape,
        },
    )
}

/// A matrix of the given shape with one nonzero entry `value` at `position`.
///
/// # Errors
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) if `position` is out of range.
///
/// ```
/// use polymat::{Out, c64};
/// let e = polymat::ops::one_element((2, 3), (1, 2), c64::new(5.0, 0.0), Out::Dense).unwrap();
/// assert_eq!(e.downcast_ref::<polymat::Dense>().unwrap().get(1, 2), c64::new(5.0, 0.0));
/// ```
pub fn one_element(
    shape: (usize, usize),
    position: (usize, usize),
    value: c64,
    out: Out,
) -> Result<Data> {
    if position.0 >= shape.0 || position.1 >= shape.1 {
        return Err(crate::error::Error::argument(
            "one_element",
            format!(
                "position {position:?} is outside a {}×{} matrix",
                shape.0, shape.1
            ),
        ));
    }
    let c: Data = Csr::from_triplets(shape, &[position.0], &[position.1], &[value])?.into();
    match out.kind() {
        None => Ok(c),
        Some(k) => crate::convert::registry().convert(&c, k),
    }
}

/// The zero matrix with `a`'s shape, in `a`'s kind unless `out` says otherwise.
///
/// # Errors
/// As [`zeros`]; also if `a`'s kind has no zeros kernel and cannot be reached from one.
///
/// ```
/// use polymat::{Dense, Kind, Out};
/// let z = polymat::ops::zeros_like(&Dense::identity(2).into(), Out::Auto).unwrap();
/// assert_eq!((z.kind(), z.shape()), (Kind::DENSE, (2, 2)));
/// ```
pub fn zeros_like(a: &Data, out: Out) -> Result<Data> {
    let out = if out == Out::Auto {
        Out::from(a.kind())
    } else {
        out
    };
    let (r, c) = a.shape();
    zeros(r, c, out)
}

/// The identity with `a`'s shape, in `a`'s kind unless `out` says otherwise.
///
/// # Errors
/// [`Error::Shape`](crate::Error::Shape) if `a` is not square; otherwise as [`identity`].
///
/// ```
/// use polymat::{Csr, Kind, Out};
/// let i = polymat::ops::identity_like(&Csr::zeros(3, 3).into(), Out::Auto).unwrap();
/// assert_eq!((i.kind(), format!("{i:#}")), (Kind::CSR, "Csr(3×3, nnz=3)".to_string()));
/// ```
pub fn identity_like(a: &Data, out: Out) -> Result<Data> {
    crate::shape::square("identity_like", a.shape())?;
    let out = if out == Out::Auto {
        Out::from(a.kind())
    } else {
        out
    };
    identity(a.shape().0, out)
}
