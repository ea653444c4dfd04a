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
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};
use pyo3::{IntoPyObjectExt, intern};

use crate::errors::IntoPy;
use crate::functions::matmul_scaled;
use crate::matrix::{PyData, Work, detach_by, parse_out, wrap};
use crate::scalar::Scalar;

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

/// What building a result of a QuTiP class takes, looked up once: the class's constructor
/// (`tp_new`, Cython's for `Data`, which the Python subclasses inherit) and `Data`'s
/// initialiser (`tp_init`, which sets the read-only `shape`), called through their slots.
/// Through `cls.__new__(cls)` and `Data.__init__(obj, shape)` the same two cost ~165 ns more a
/// result (a tuple, a bound method and argument checks each), more than QuTiP's own `adjoint`
/// of a 2 × 2 matrix takes.
struct OutClass {
    cls: Py<PyType>,
    new: ffi::newfunc,
    init: ffi::initproc,
}

impl OutClass {
    fn new(py: Python<'_>, cls: Py<PyType>) -> PyResult<OutClass> {
        let data = py
            .import("qutip.core.data.base")?
            .getattr("Data")?
            .cast_into::<PyType>()?;
        // `Data`'s initialiser is run on instances of `cls`: it must be a `Data`.
        if !cls.bind(py).is_subclass(&data)? {
            return Err(PyTypeError::new_err(format!(
                "QSpec: {} is not a qutip.core.data.Data",
                cls.bind(py).name()?
            )));
        }
        // SAFETY: both are live type objects (`data` is held above, `cls` by the caller);
        // `PyType_GetSlot` reads static types' slots too from Python 3.10, the oldest the
        // package supports (`requires-python`).
        let (new, init) = unsafe {
            (
                ffi::PyType_GetSlot(cls.as_ptr().cast(), ffi::Py_tp_new),
                ffi::PyType_GetSlot(data.as_type_ptr(), ffi::Py_tp_init),
            )
        };
        if new.is_null() || init.is_null() {
            return Err(PyErr::take(py).unwrap_or_else(|| {
                PyTypeError::new_err("QSpec: the result class has no constructor")
            }));
        }
        // SAFETY: the slots `Py_tp_new` and `Py_tp_init` hold functions of these types.
        let (new, init) = unsafe {
            (
                std::mem::transmute::<*mut std::ffi::c_void, ffi::newfunc>(new),
                std::mem::transmute::<*mut std::ffi::c_void, ffi::initproc>(init),
            )
        };
        Ok(OutClass { cls, new, init })
    }

    /// An instance of the class holding `inner`, of shape `shape`, without the class's own
    /// `__init__` (which would check and convert its argument again).
    fn build(
        &self,
        py: Python<'_>,
        inner: Py<PyAny>,
        shape: (usize, usize),
    ) -> PyResult<Py<PyAny>> {
        let cls = self.cls.bind(py);
        let empty = PyTuple::empty(py);
        // SAFETY: `new` is `cls`'s own `tp_new`, called as `cls.__new__(cls)` calls it: with
        // `cls`, an empty argument tuple and no keywords; it returns a new reference or null
        // with an exception set.
        let obj = unsafe {
            Bound::from_owned_ptr_or_err(
                py,
                (self.new)(cls.as_ptr().cast(), empty.as_ptr(), std::ptr::null_mut()),
            )?
        };
        // A `__new__` may return another type's object; `Data`'s initialiser needs a `Data`'s
        // layout, which an exact instance of `cls` (checked a `Data` subclass) has.
        if !obj.get_type().is(cls) {
            return Err(PyTypeError::new_err(format!(
                "QSpec: {}.__new__ returned another type",
                cls.name()?
            )));
        }
        let args = PyTuple::new(py, [shape])?;
        // SAFETY: `obj` is an instance of a `Data` subclass (above), `init` is `Data`'s
        // `tp_init`, `args` a tuple; it returns -1 with an exception set on failure.
        if unsafe { (self.init)(obj.as_ptr(), args.as_ptr(), std::ptr::null_mut()) } < 0 {
            return Err(PyErr::fetch(py));
        }
        obj.setattr(intern!(py, "_pm"), inner)?;
        Ok(obj.unbind())
    }
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
        return Ok(args.get_item(i)?.extract::<Scalar>()?.0);
    }
    if let Some(k) = kwargs
        && let Some(v) = k.get_item(name)?
    {
        return Ok(v.extract::<Scalar>()?.0);
    }
    default.ok_or_else(|| PyTypeError::new_err(format!("missing argument {name:?}")))
}

impl QSpec {
    /// What the call's work is proportional to: a Csr's stored entries for entrywise maps and
    /// sums into a result that is not Dense (a Dense result is m·n entries written whatever
    /// the inputs store), the diagonal for `trace`, the shape otherwise.
    fn work(&self) -> Work {
        match self.op {
            Op::Trace => Work::Diagonal,
            Op::Adjoint | Op::Transpose | Op::Conj | Op::Neg | Op::Mul | Op::Add | Op::Sub
                if matches!(self.out, Out::Auto | Out::Csr) =>
            {
                Work::Stored
            }
            _ => Work::Shape,
        }
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
        let out_cls = out_cls.map(|cls| OutClass::new(py, cls)).transpose()?;
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
        let work = self.work();
        let r = match bd {
            Some(bd) => detach_by(py, &[ad, bd], work, || self.run(ad, Some(bd), s)),
            None => detach_by(py, &[ad], work, || self.run(ad, None, s)),
        }
        .py_err()?;
        match r {
            Err(scalar) => scalar.into_py_any(py),
            Ok(data) => {
                let shape = data.shape();
                let inner = wrap(py, data)?;
                match &self.out_cls {
                    Some(out) => out.build(py, inner, shape),
                    None => Ok(inner),
                }
            }
        }
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<QSpec>()
}
