//! The element type of every matrix, and its two constants.

/// The element type: a double-precision complex number (`num_complex::Complex64`, which is
/// also `faer::c64`).
#[allow(non_camel_case_types)]
pub type c64 = num_complex::Complex64;

/// `0 + 0i`.
pub(crate) const ZERO: c64 = c64::new(0.0, 0.0);

/// `1 + 0i`.
pub(crate) const ONE: c64 = c64::new(1.0, 0.0);
