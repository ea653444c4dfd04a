//! polymat's kinds as Python classes, and their numpy/scipy interop.
//!
//! `Data` is the base class: an immutable, shared handle to a matrix of any kind (polymat's
//! `Data`; copies are cheap and copy-on-write). `Dense`, `Csr`, `Dia`, `KronSum` and `SuperOp`
//! derive from it, so `isinstance(x, polymat.Csr)` tells the kind; a user-registered kind
//! comes back as a plain `Data`.
//!
//! Interop copies once each way: a `Dense` owns faer's aligned column-major buffer, which a
//! numpy array cannot lend, and numpy cannot keep a view of Rust memory that outlives the
//! handle without a base object (`to_array` could give one; it copies as QuTiP's does).

use numpy::ndarray::{Array1, Array2, ShapeBuilder};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use polymat::c64;
use polymat::{Kind, Out};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::errors::{IntoPy, PolymatError};
use crate::scalar::Scalar;

/// A matrix of any kind: the base class of `Dense`, `Csr`, `Dia`, `KronSum` and `SuperOp`.
#[pyclass(subclass, frozen, module = "polymat", name = "Data")]
pub(crate) struct PyData {
    pub(crate) inner: polymat::Data,
}

/// A dense matrix (column-major, faer's `Mat`). `Dense(array)` copies a 2-D array-like.
#[pyclass(extends = PyData, frozen, module = "polymat", name = "Dense")]
pub(crate) struct PyDense;

/// A compressed-sparse-row matrix. `Csr(matrix)` takes any scipy sparse matrix or array, or a
/// dense array-like (its nonzero entries).
#[pyclass(extends = PyData, frozen, module = "polymat", name = "Csr")]
pub(crate) struct PyCsr;

/// A diagonal-storage matrix, scipy's `dia_array` layout. `Dia(matrix)` takes a scipy sparse
/// matrix or array, or a dense array-like.
#[pyclass(extends = PyData, frozen, module = "polymat", name = "Dia")]
pub(crate) struct PyDia;

/// A lazy sum of Kronecker products of local factors, applied without being stored (see
/// `polymat.kron_sum` and the Rust crate's `KronSum`).
#[pyclass(extends = PyData, frozen, module = "polymat", name = "KronSum")]
pub(crate) struct PyKronSum;

/// A lazy superoperator, a sum of terms ρ ↦ c·A·ρ·B (QuTiP's column stacking), applied without
/// being stored: what `spre`, `spost`, `sprepost`, `lindblad_dissipator` and `liouvillian`
/// return.
#[pyclass(extends = PyData, frozen, module = "polymat", name = "SuperOp")]
pub(crate) struct PySuperOp;

/// The Python object for `data`: the class of its kind.
pub(crate) fn wrap(py: Python<'_>, data: polymat::Data) -> PyResult<Py<PyAny>> {
    let kind = data.kind();
    let base = PyClassInitializer::from(PyData { inner: data });
    let obj = match kind {
        Kind::DENSE => Py::new(py, base.add_subclass(PyDense))?.into_any(),
        Kind::CSR => Py::new(py, base.add_subclass(PyCsr))?.into_any(),
        Kind::DIA => Py::new(py, base.add_subclass(PyDia))?.into_any(),
        Kind::KRON_SUM => Py::new(py, base.add_subclass(PyKronSum))?.into_any(),
        Kind::SUPER_OP => Py::new(py, base.add_subclass(PySuperOp))?.into_any(),
        _ => Py::new(py, base)?.into_any(),
    };
    Ok(obj)
}

/// Entries below which a call keeps the GIL: releasing and retaking it costs more than the
/// kernels of such small inputs.
pub(crate) const KEEP_GIL_BELOW: usize = 1 << 12;

/// What a call's work is proportional to, for [`detach_by`]'s choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Work {
    /// Every entry of the shape (products, Dense results, anything not below).
    Shape,
    /// A Csr's stored entries (entrywise maps, sparse sums into a sparse result); any other
    /// kind by its shape.
    Stored,
    /// The main diagonal of a stored kind (`trace`); a lazy kind by its shape.
    Diagonal,
}

impl Work {
    /// The entries `d` brings to the call.
    fn entries(self, d: &polymat::Data) -> usize {
        let (m, n) = d.shape();
        let stored_kind = matches!(d.kind(), Kind::DENSE | Kind::CSR | Kind::DIA);
        match (self, d.as_csr()) {
            (Work::Stored, Some(c)) => c.nnz(),
            (Work::Diagonal, _) if stored_kind => m.min(n),
            _ => m.saturating_mul(n),
        }
    }
}

/// Runs `f`, releasing the GIL unless every input is small by its shape (lazy kinds count by
/// their shape).
pub(crate) fn detach_for<T, F>(py: Python<'_>, inputs: &[&polymat::Data], f: F) -> T
where
    T: Send,
    F: FnOnce() -> T + Send,
{
    detach_by(py, inputs, Work::Shape, f)
}

/// [`detach_for`], with the inputs measured by `work`: a 100 × 100 Csr with 5 entries a row
/// keeps the GIL for an entrywise map, and a 100 × 100 Dense for its trace, where by their
/// shapes they would release it. A release and retake cost 50–65 ns a call (`polymat.trace` of
/// a 64 × 64 Dense 192–211 ns when it released, 143–145 ns for a 63 × 63 one, which kept it;
/// Intel Xeon, Python 3.11): a tenth of a small Csr's trace.
pub(crate) fn detach_by<T, F>(py: Python<'_>, inputs: &[&polymat::Data], work: Work, f: F) -> T
where
    T: Send,
    F: FnOnce() -> T + Send,
{
    if inputs.iter().any(|d| work.entries(d) >= KEEP_GIL_BELOW) {
        py.detach(f)
    } else {
        f()
    }
}

/// `None`, `"auto"` or the name (or alias) of a registered kind, as polymat's `Out`.
pub(crate) fn parse_out(out: Option<&str>) -> PyResult<Out> {
    match out {
        None => Ok(Out::Auto),
        Some(s) if s.eq_ignore_ascii_case("auto") => Ok(Out::Auto),
        Some(s) => polymat::registry().parse_kind(s).map(Out::from).py_err(),
    }
}

/// A Dense from a complex 2-D numpy array (any layout).
fn dense_from_numpy(a: &PyReadonlyArray2<'_, c64>) -> PyResult<polymat::Dense> {
    let view = a.as_array();
    let (rows, cols) = view.dim();
    if view.t().is_standard_layout() {
        // Fortran order: the memory is already column-major.
        if let Some(slice) = view.as_slice_memory_order() {
            return polymat::Dense::from_col_major(rows, cols, slice).py_err();
        }
    }
    polymat::Dense::try_from_fn(rows, cols, |i, j| view[(i, j)]).py_err()
}

/// The entries of a Dense as a Fortran-ordered numpy array (one copy).
fn dense_to_numpy<'py>(py: Python<'py>, d: &polymat::Dense) -> PyResult<Bound<'py, PyArray2<c64>>> {
    let (rows, cols) = d.shape();
    let len = rows
        .checked_mul(cols)
        .ok_or_else(|| PolymatError::new_err("to_array: the matrix has too many entries"))?;
    let mut buf = Vec::new();
    buf.try_reserve_exact(len).map_err(|_| {
        PolymatError::new_err(format!(
            "to_array: {rows}×{cols} entries do not fit in memory"
        ))
    })?;
    for col in d.try_columns().py_err()? {
        buf.extend_from_slice(col);
    }
    let arr = Array2::from_shape_vec((rows, cols).f(), buf)
        .map_err(|e| PolymatError::new_err(format!("to_array: {e}")))?;
    Ok(arr.into_pyarray(py))
}

fn indices(op: &str, a: &PyReadonlyArray1<'_, i64>) -> PyResult<Vec<usize>> {
    a.as_array()
        .iter()
        .map(|&i| usize::try_from(i))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| PolymatError::new_err(format!("{op}: a negative index")))
}

fn values(a: &PyReadonlyArray1<'_, c64>) -> Vec<c64> {
    a.as_array().iter().copied().collect()
}

#[pymethods]
impl PyData {
    /// `(rows, columns)`.
    #[getter]
    fn shape(&self) -> (usize, usize) {
        self.inner.shape()
    }

    /// The name of the kind: `"Dense"`, `"Csr"`, `"Dia"`, `"KronSum"`, `"SuperOp"`, or a
    /// registered kind's name.
    #[getter]
    fn kind(&self) -> String {
        polymat::registry().kind_name(self.inner.kind())
    }

    /// This matrix converted to another kind (`"dense"`, `"csr"`, `"dia"`, ... or an alias),
    /// through the registry's cheapest chain.
    fn to(&self, py: Python<'_>, kind: &str) -> PyResult<Py<PyAny>> {
        let k = polymat::registry().parse_kind(kind).py_err()?;
        let d = &self.inner;
        let r = py.detach(|| polymat::to(k, d)).py_err()?;
        wrap(py, r)
    }

    /// The entries as a new complex numpy array (a lazy kind is formed: mind its size).
    fn to_array<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<c64>>> {
        let d = &self.inner;
        let dense = match d.as_dense() {
            Some(x) => x.clone(),
            None => py
                .detach(|| polymat::to_type::<polymat::Dense>(d))
                .py_err()?,
        };
        dense_to_numpy(py, &dense)
    }

    /// numpy's array protocol: `np.asarray(x)` gives the entries.
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if copy == Some(false) {
            return Err(PolymatError::new_err(
                "__array__: polymat's matrices own their memory; a copy is needed",
            ));
        }
        let arr = self.to_array(py)?.into_any();
        match dtype {
            Some(dt) => arr.call_method1("astype", (dt,)),
            None => Ok(arr),
        }
    }

    /// The Csr arrays `(data, indices, indptr)` (int64 indices), as scipy's constructors take
    /// them. Other kinds are converted to Csr first.
    #[allow(clippy::type_complexity)]
    fn csr_arrays<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(
        Bound<'py, PyArray1<c64>>,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i64>>,
    )> {
        let d = &self.inner;
        let csr = match d.as_csr() {
            Some(c) => c.clone(),
            None => py.detach(|| polymat::to_type::<polymat::Csr>(d)).py_err()?,
        };
        let to_i64 = |v: &[usize]| -> Array1<i64> { v.iter().map(|&i| i as i64).collect() };
        Ok((
            Array1::from(csr.data().to_vec()).into_pyarray(py),
            to_i64(csr.indices()).into_pyarray(py),
            to_i64(csr.indptr()).into_pyarray(py),
        ))
    }

    /// The Dia arrays `(data, offsets)`: `data[k, j] = A[j − offsets[k], j]`, scipy's
    /// `dia_array` layout. Other kinds are converted to Dia first.
    #[allow(clippy::type_complexity)]
    fn dia_arrays<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyArray2<c64>>, Bound<'py, PyArray1<i64>>)> {
        let d = &self.inner;
        let dia = match d.as_dia() {
            Some(x) => x.clone(),
            None => py.detach(|| polymat::to_type::<polymat::Dia>(d)).py_err()?,
        };
        let cols = dia.shape().1;
        let offsets: Array1<i64> = dia.offsets().iter().map(|&k| k as i64).collect();
        let data = Array2::from_shape_vec((dia.num_diagonals(), cols), dia.data().to_vec())
            .map_err(|e| PolymatError::new_err(format!("dia_arrays: {e}")))?;
        Ok((data.into_pyarray(py), offsets.into_pyarray(py)))
    }

    /// As a scipy sparse array: `dia_array` for a Dia, `csr_array` for every other kind
    /// (converted to Csr first).
    fn to_scipy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let sparse = py.import("scipy.sparse")?;
        let shape = self.inner.shape();
        if self.inner.kind() == Kind::DIA {
            let (data, offsets) = self.dia_arrays(py)?;
            sparse.getattr("dia_array")?.call1(((data, offsets), shape))
        } else {
            let (data, indices, indptr) = self.csr_arrays(py)?;
            sparse
                .getattr("csr_array")?
                .call1(((data, indices, indptr), shape))
        }
    }

    /// The same matrix (polymat's matrices are immutable from Python; this is a new handle).
    fn copy(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, self.inner.clone())
    }

    /// The entrywise complex conjugate.
    fn conj(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let d = &self.inner;
        wrap(py, py.detach(|| polymat::conj(d, Out::Auto)).py_err()?)
    }

    /// The transpose.
    fn transpose(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let d = &self.inner;
        wrap(py, py.detach(|| polymat::transpose(d, Out::Auto)).py_err()?)
    }

    /// The conjugate transpose.
    fn adjoint(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let d = &self.inner;
        wrap(py, py.detach(|| polymat::adjoint(d, Out::Auto)).py_err()?)
    }

    /// The trace (square matrices).
    fn trace(&self, py: Python<'_>) -> PyResult<c64> {
        let d = &self.inner;
        py.detach(|| polymat::trace(d)).py_err()
    }

    fn __add__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let Ok(o) = other.cast::<PyData>() else {
            return Ok(py.NotImplemented());
        };
        let (a, b) = (&self.inner, &o.get().inner);
        wrap(py, py.detach(|| polymat::add(a, b, Out::Auto)).py_err()?)
    }

    fn __sub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let Ok(o) = other.cast::<PyData>() else {
            return Ok(py.NotImplemented());
        };
        let (a, b) = (&self.inner, &o.get().inner);
        wrap(py, py.detach(|| polymat::sub(a, b, Out::Auto)).py_err()?)
    }

    fn __matmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let Ok(o) = other.cast::<PyData>() else {
            return Ok(py.NotImplemented());
        };
        let (a, b) = (&self.inner, &o.get().inner);
        wrap(py, py.detach(|| polymat::matmul(a, b, Out::Auto)).py_err()?)
    }

    fn __mul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let Ok(Scalar(s)) = other.extract::<Scalar>() else {
            return Ok(py.NotImplemented());
        };
        let a = &self.inner;
        wrap(py, py.detach(|| polymat::mul(a, s, Out::Auto)).py_err()?)
    }

    fn __rmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.__mul__(py, other)
    }

    fn __truediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let Ok(Scalar(s)) = other.extract::<Scalar>() else {
            return Ok(py.NotImplemented());
        };
        let a = &self.inner;
        wrap(
            py,
            py.detach(|| polymat::mul(a, s.inv(), Out::Auto)).py_err()?,
        )
    }

    fn __neg__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let a = &self.inner;
        wrap(py, py.detach(|| polymat::neg(a, Out::Auto)).py_err()?)
    }

    /// The entries, as numpy prints them.
    fn __str__(&self) -> String {
        self.inner.to_string()
    }

    /// A summary: kind, shape and stored entries.
    fn __repr__(&self) -> String {
        format!("{:#}", self.inner)
    }
}

#[pymethods]
impl PyDense {
    #[new]
    fn new(array: PyReadonlyArray2<'_, c64>) -> PyResult<PyClassInitializer<Self>> {
        let d = dense_from_numpy(&array)?;
        Ok(PyClassInitializer::from(PyData { inner: d.into() }).add_subclass(PyDense))
    }

    /// Whether the buffer is column-major (QuTiP's `fortran` flag); a transpose, for one, is
    /// row-major.
    #[getter]
    fn fortran(slf: PyRef<'_, Self>) -> bool {
        slf.as_super()
            .inner
            .as_dense()
            .is_none_or(|d| d.layout() == polymat::Layout::ColMajor)
    }
}

#[pymethods]
impl PyCsr {
    /// From the CSR arrays (`shape`, `indptr`, `indices`, `data`); columns in a row may come
    /// in any order, duplicates are summed. The Python class `polymat.Csr` wraps this with
    /// scipy and dense inputs.
    #[new]
    fn new(
        shape: (usize, usize),
        indptr: PyReadonlyArray1<'_, i64>,
        indices_: PyReadonlyArray1<'_, i64>,
        data: PyReadonlyArray1<'_, c64>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let indptr = indices("Csr", &indptr)?;
        let idx = indices("Csr", &indices_)?;
        let csr = polymat::Csr::from_raw(shape, indptr, idx, values(&data)).py_err()?;
        Ok(PyClassInitializer::from(PyData { inner: csr.into() }).add_subclass(PyCsr))
    }

    /// Stored entries.
    #[getter]
    fn nnz(slf: PyRef<'_, Self>) -> usize {
        slf.as_super().inner.as_csr().map_or(0, |c| c.nnz())
    }
}

#[pymethods]
impl PyDia {
    /// From `shape`, `offsets` and `data` (`data[k, j] = A[j − offsets[k], j]`, one row per
    /// offset and as many columns as the matrix; repeated offsets are summed).
    #[new]
    fn new(
        shape: (usize, usize),
        offsets: PyReadonlyArray1<'_, i64>,
        data: PyReadonlyArray2<'_, c64>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let offs = offsets
            .as_array()
            .iter()
            .map(|&k| isize::try_from(k))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| PolymatError::new_err("Dia: an offset out of range"))?;
        let view = data.as_array();
        let vals: Vec<c64> = view.iter().copied().collect();
        let dia = polymat::Dia::new(shape, offs, vals).py_err()?;
        Ok(PyClassInitializer::from(PyData { inner: dia.into() }).add_subclass(PyDia))
    }
}

#[pymethods]
impl PyKronSum {}

#[pymethods]
impl PySuperOp {}

/// A tuple of Python objects for a list of matrices.
pub(crate) fn wrap_all<'py>(
    py: Python<'py>,
    v: Vec<polymat::Data>,
) -> PyResult<Bound<'py, PyTuple>> {
    let items = v
        .into_iter()
        .map(|d| wrap(py, d))
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, items)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyData>()?;
    m.add_class::<PyDense>()?;
    m.add_class::<PyCsr>()?;
    m.add_class::<PyDia>()?;
    m.add_class::<PyKronSum>()?;
    m.add_class::<PySuperOp>()?;
    Ok(())
}
