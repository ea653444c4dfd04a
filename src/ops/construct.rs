//! Constructors: zero and identity matrices of any kind.

use std::sync::LazyLock;

use crate::c64;
use crate::dispatch::{Dispatcher, Out, Specialisation};
use crate::error::Result;
use crate::storage::{Csr, Data, Dense};

/// The `rows × cols` zero matrix. Parameter: `(rows, cols)`. Kernels: Dense, Csr;
/// `Out::Auto` gives Csr (no stored entries).
pub static ZEROS: LazyLock<Dispatcher<(usize, usize)>> = LazyLock::new(|| {
    // Registered last, Csr wins the tie under Out::Auto.
    Dispatcher::builder("zeros", 0)
        .specialisation(Specialisation::nullary(
            "zeros_dense",
            |&(r, c): &(usize, usize)| Ok(Dense::zeros(r, c)),
        ))
        .specialisation(Specialisation::nullary(
            "zeros_csr",
            |&(r, c): &(usize, usize)| Ok(Csr::zeros(r, c)),
        ))
        .build()
        .unwrap_or_else(|e| unreachable!("built-in dispatcher: {e}"))
});

/// `scale` times the `n × n` identity. Parameter: `(n, scale)`. Kernels: Dense, Csr;
/// `Out::Auto` gives Csr.
pub static IDENTITY: LazyLock<Dispatcher<(usize, c64)>> = LazyLock::new(|| {
    Dispatcher::builder("identity", 0)
        .specialisation(Specialisation::nullary(
            "identity_dense",
            |&(n, s): &(usize, c64)| {
                Ok(Dense::from_fn(
                    n,
                    n,
                    |i, j| if i == j { s } else { super::ZERO },
                ))
            },
        ))
        .specialisation(Specialisation::nullary(
            "identity_csr",
            |&(n, s): &(usize, c64)| Ok(Csr::scaled_identity(n, s)),
        ))
        .build()
        .unwrap_or_else(|e| unreachable!("built-in dispatcher: {e}"))
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
/// assert_eq!(polymat::zeros(2, 3, Out::Auto).unwrap().to_string(), "Csr(2×3, nnz=0)");
/// assert_eq!(polymat::zeros(2, 3, Out::Dense).unwrap().to_string(), "Dense(2×3)");
/// ```
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
pub fn identity(n: usize, out: Out) -> Result<Data> {
    IDENTITY.call(&[], out, &(n, super::ONE))
}
