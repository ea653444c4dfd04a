//! The extension module `polymat._polymat`: polymat's kinds as Python classes and its
//! operations as functions. The Python package `polymat` re-exports all of it; `qutip_polymat`
//! builds QuTiP's data-layer plugin on top.
//!
//! Layers: [`errors`] (polymat's errors as Python exceptions) and [`scalar`] (complex
//! arguments from Python numbers) ← [`matrix`] (the classes and
//! their numpy/scipy interop) ← [`functions`] (the operations) and [`qutip`] (the QuTiP
//! plugin's native specialisations) ← this module (registration).
//! Every kernel call releases the GIL.

mod errors;
mod functions;
mod matrix;
mod qutip;
mod scalar;

use pyo3::prelude::*;

#[pymodule]
fn _polymat(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("PolymatError", py.get_type::<errors::PolymatError>())?;
    m.add("TooLargeError", py.get_type::<errors::TooLargeError>())?;
    m.add("StoppedError", py.get_type::<errors::StoppedError>())?;
    matrix::register(m)?;
    functions::register(m)?;
    qutip::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
