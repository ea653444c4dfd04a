//! The QuTiP plugin's most frequent specialisations as one native callable, `QSpec`.
//!
//! A specialisation written in Python costs an interpreter frame, a lambda and a wrapper
//! object on top of the Rust call: about 1.3 µs, more than QuTiP's own Cython kernels take on a
//! small matrix. `QSpec` is called by QuTiP's dispatcher directly (with QuTiP's arguments:
//! dispatched data first, then the operation's own), reads the polymat object from each
//! argument's `_pm` attribute, runs the operation, and builds the QuTiP object of the output
//! class without running its `__init__`. Small inputs keep the GIL: releasing and retaking it
//! costs more than their kernels (for a Csr, small is judged by its stored entries where the
//! operation's work is those, `detach_by`).

use polymat::{Data, Out, c64};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};
use pyo3::{IntoPyObjectExt, intern};

use crate::errors::IntoPy;
use crate::functions::matmul_scaled;
use crate::matrix::{PyData, detach_by, parse_out, wrap};

/// The operations `QSpec` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Add,
    Sub,
    Mul,
    Neg,
    Matmul,
    Adjoint,
    Transpose,
    Conj,
    Kron,
    Trace,
    Expect,
}

impl Op {
    fn parse(name: &str) -> PyResult<Op> {
        Ok(match name {
            "add" | "iadd" => Op::Add,
            "sub" => Op::Sub,
            "mul" | "imul" => Op::Mul,
            "neg" => Op::Neg,
            "matmul" => Op::Matmul,
            "adjoint" => Op::Adjoint,
            "transpose" => Op::Transpose,
            "conj" => Op::Conj,
            "kron" => Op::Kron,
            "trace" => Op::Trace,
            "expect" => Op::Expect,
            other => {
                return Err(PyValueError::new_err(format!(
                    "QSpec: no native specialisation for {other:?}"
                )));
            }
        })
    }

    /// Dispatched data arguments.
    fn arity(self) -> usize {
        match self {
            Op::Add | Op::Sub | Op::Matmul | Op::Kron | Op::Expect => 2,
            _ => 1,
        }
    }
}

/// A QuTiP specialisation run natively: `QSpec(op, out_kind, out_class, name)`. `out_kind`
/// and `out_class` are `None` for operations whose result is a scalar (`trace`, `expect`).
#[pyclass(frozen, module = "polymat")]
pub(crate) struct QSpec {
    op: Op,
    out: Out,
    /// The QuTiP class of the result (`None` for a scalar result).
    out_cls: Option<OutClass>,
    name: String,
}

/// What building a result of a QuTiP class takes, looked up once.
struct OutClass {
    cls: Py<PyType>,
    /// The class's `__new__` (`Data`'s constructor).
    new: Py<PyAny>,
    /// `qutip.core.data.Data.__init__`, which sets the (read-only) `shape`.
    init: Py<PyAny>,
}

/// A scalar argument given by position `i` (after the data) or by name.
fn scalar(
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
    i: usize,
    name: &str,
    default: Option<c64>,
) -> PyResult<c64> {
    // Checked first: `get_item` past the end builds an IndexError, more than the call costs.
    if i < args.len() {
        return args.get_item(i)?.extract::<c64>();
    }
    if let Some(k) = kwargs
        && let Some(v) = k.get_item(name)?
    {
        return v.extract::<c64>();
    }
    default.ok_or_else(|| PyTypeError::new_err(format!("missing argument {name:?}")))
}

impl QSpec {
    /// Whether the call's work on Csr inputs is their stored entries: entrywise maps, the
    /// trace and sums, into a result that is not Dense (a Dense result is m·n entries written
    /// whatever the inputs store).
    fn works_on_stored(&self) -> bool {
        matches!(
            self.op,
            Op::Adjoint
                | Op::Transpose
                | Op::Conj
                | Op::Neg
                | Op::Mul
                | Op::Trace
                | Op::Add
                | Op::Sub
        ) && matches!(self.out, Out::Auto | Out::Csr)
    }

    fn run(&self, a: &Data, b: Option<&Data>, s: c64) -> polymat::Result<Result<Data, c64>> {
        let out = self.out;
        // `__call__` checked the arity: a binary operation has its `b`; unary ones ignore it.
        let b = b.unwrap_or(a);
        Ok(Ok(match self.op {
            Op::Add => polymat::add_scaled(a, b, s, out)?,
            Op::Sub => polymat::sub(a, b, out)?,
            Op::Mul => polymat::mul(a, s, out)?,
            Op::Neg => polymat::neg(a, out)?,
            Op::Matmul => matmul_scaled(a, b, s, out)?,
            Op::Adjoint => polymat::adjoint(a, out)?,
            Op::Transpose => polymat::transpose(a, out)?,
            Op::Conj => polymat::conj(a, out)?,
            Op::Kron => polymat::kron(a, b, out)?,
            Op::Trace => return Ok(Err(polymat::trace(a)?)),
            Op::Expect => return Ok(Err(polymat::expect(a, b)?)),
        }))
    }
}

fn pm_of<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyData>> {
    let p = obj.getattr(intern!(obj.py(), "_pm"))?;
    Ok(p.cast_into::<PyData>()?)
}

#[pymethods]
impl QSpec {
    #[new]
    #[pyo3(signature = (op, out_kind, out_cls, name))]
    fn new(
        py: Python<'_>,
        op: &str,
        out_kind: Option<&str>,
        out_cls: Option<Py<PyType>>,
        name: String,
    ) -> PyResult<QSpec> {
        let out_cls = match out_cls {
            Some(cls) => {
                let init = py
                    .import("qutip.core.data.base")?
                    .getattr("Data")?
                    .getattr("__init__")?
                    .unbind();
                let new = cls.bind(py).getattr("__new__")?.unbind();
                Some(OutClass { cls, new, init })
            }
            None => None,
        };
        Ok(QSpec {
            op: Op::parse(op)?,
            out: parse_out(out_kind)?,
            out_cls,
            name,
        })
    }

    /// The specialisation's name (QuTiP's tests use it in their ids).
    #[getter]
    fn __name__(&self) -> &str {
        &self.name
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let n = self.op.arity();
        if args.len() < n {
            return Err(PyTypeError::new_err(format!(
                "{}: {n} data arguments are needed, got {}",
                self.name,
                args.len()
            )));
        }
        let a = pm_of(&args.get_item(0)?)?;
        let b = if n == 2 {
            Some(pm_of(&args.get_item(1)?)?)
        } else {
            None
        };
        let s = match self.op {
            Op::Add | Op::Matmul => scalar(args, kwargs, n, "scale", Some(c64::new(1.0, 0.0)))?,
            Op::Mul => scalar(args, kwargs, n, "value", None)?,
            _ => c64::new(0.0, 0.0),
        };
        let (ad, bd) = (&a.get().inner, b.as_ref().map(|b| &b.get().inner));
        // A Dense input still counts by its shape, which its work is.
        let stored = self.works_on_stored();
        let r = match bd {
            Some(bd) => detach_by(py, &[ad, bd], stored, || self.run(ad, Some(bd), s)),
            None => detach_by(py, &[ad], stored, || self.run(ad, None, s)),
        }
        .py_err()?;
        match r {
            Err(scalar) => scalar.into_py_any(py),
            Ok(data) => {
                let shape = data.shape();
                let inner = wrap(py, data)?;
                let Some(OutClass { cls, new, init }) = &self.out_cls else {
                    return Ok(inner);
                };
                // The QuTiP object without the subclass's __init__: Data's constructor
                // (tp_new) and Data.__init__ (the read-only shape), then the polymat object.
                let obj = new.bind(py).call1((cls.bind(py),))?;
                init.bind(py).call1((&obj, shape))?;
                obj.setattr(intern!(py, "_pm"), inner)?;
                Ok(obj.unbind())
            }
        }
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<QSpec>()
}
