//! The element type of every matrix, and its two constants.

/// The element type: a double-precision complex number (`num_complex::Complex64`, which is
/// also `faer::c64`).
#[allow(non_camel_case_types)]
pub type c64 = num_complex::Complex64;

/// `0 + 0i`.
pub(crate) const ZERO: c64 = c64::new(0.0, 0.0);

/// `1 + 0i`.
pub(crate) const ONE: c64 = c64::new(1.0, 0.0);

/// `−1 + 0i`: a scale the sums take as a subtraction (`x − y`, not `x + (−1)·y`, whose complex
/// product turns an infinite part of `y` into NaN: numpy's `a - b` and `-a` keep it).
pub(crate) const MINUS_ONE: c64 = c64::new(-1.0, 0.0);

/// `s·y` as the sums use it: `−y` (a sign flip) for `s = −1`, else the complex product, so
/// that `x + scaled(s, y)` is `x − y` for a subtraction (see [`MINUS_ONE`]).
#[inline(always)]
pub(crate) fn scaled(s: c64, y: c64) -> c64 {
    if s == MINUS_ONE { -y } else { s * y }
}
