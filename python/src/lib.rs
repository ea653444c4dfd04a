//! The extension module `polymat._polymat`: polymat's kinds as Python classes and its
//! operations as functions. The Python package `polymat` re-exports all of it; `qutip_polymat`
//! builds QuTiP's data-layer plugin on top.
//!
//! Layers: [`errors`] (polymat's errors as Python exceptions) and [`scalar`] (complex
//! arguments from Python numbers) ← [`matrix`] (the classes, their numpy/scipy interop, the
//! GIL rule) ← [`functions`] (the operations) and [`qutip`] (the QuTiP plugin's native
//! specialisations) ← this module (registration).
//! Every kernel call releases the GIL unless its work is small (`matrix::detach_by`).

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
