//! polymat's errors as Python exceptions, with polymat's message.
//!
//! `PolymatError` derives from `ValueError`: shape mismatches and invalid arguments, the most
//! common errors, are what Python code (and QuTiP's own tests) expect as `ValueError`.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

create_exception!(
    polymat,
    PolymatError,
    PyValueError,
    "An error from polymat; the message names the operation, the kinds and the shapes."
);
create_exception!(
    polymat,
    TooLargeError,
    PolymatError,
    "A result or a work space would not fit in the memory available (RAM, cgroup or ulimit)."
);
create_exception!(
    polymat,
    StoppedError,
    PolymatError,
    "A long computation ended early: the iteration limit, or a watch that stopped it."
);

/// The Python exception for a polymat error.
pub(crate) fn to_py(e: polymat::Error) -> PyErr {
    match e {
        polymat::Error::TooLarge { .. } => TooLargeError::new_err(e.to_string()),
        polymat::Error::Stopped { .. } => StoppedError::new_err(e.to_string()),
        _ => PolymatError::new_err(e.to_string()),
    }
}

/// `Result` of polymat into `PyResult`.
pub(crate) trait IntoPy<T> {
    /// The value, or the error as a Python exception.
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for polymat::Result<T> {
    #[inline]
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
