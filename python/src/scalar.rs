//! Complex scalar arguments read from Python numbers.
//!
//! pyo3's own conversion to `Complex<f64>`, in a build for the stable ABI, looks up
//! `__complex__` on every argument that is not a `complex`: on a `float` or an `int` that lookup
//! fails and builds an `AttributeError` first, about 0.8 µs a call, twice what QuTiP's whole
//! `mul` of a 2 × 2 matrix takes (measured when the extension was built that way). Built for
//! one interpreter, as it is now, pyo3 goes through `PyComplex_AsCComplex`, which looks the
//! method up on the type without an exception. [`Scalar`] reads `float`, `complex` and `int`
//! (numpy's `float64` and `complex128` are subclasses of the first two) by a type check either
//! way, so a stable-ABI build does not fall back into that cost, and leaves anything else to
//! pyo3.

use polymat::c64;
use pyo3::prelude::*;
use pyo3::types::{PyComplex, PyFloat, PyInt};

/// A complex scalar argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Scalar(pub(crate) c64);

impl Scalar {
    /// 1, the default scale.
    pub(crate) const ONE: Scalar = Scalar(c64::new(1.0, 0.0));
}

impl<'a, 'py> FromPyObject<'a, 'py> for Scalar {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Scalar> {
        if let Ok(f) = obj.cast::<PyFloat>() {
            return Ok(Scalar(c64::new(f.value(), 0.0)));
        }
        if let Ok(z) = obj.cast::<PyComplex>() {
            return Ok(Scalar(c64::new(z.real(), z.imag())));
        }
        if obj.is_instance_of::<PyInt>() {
            // Through `float(obj)`: an int too large for a double raises OverflowError.
            return Ok(Scalar(c64::new(obj.extract::<f64>()?, 0.0)));
        }
        Ok(Scalar(obj.extract::<c64>()?))
    }
}
