//! polymat's operations as Python functions: the same names and arguments as the Rust crate's
//! free functions, `out` given as a kind's name (`None` or `"auto"`: the dispatcher chooses).
//! Each releases the GIL for the whole dispatched call, conversions included.

use polymat::c64;
use polymat::ops::{EigOrder, EigsOptions, Ptrace, SteadyState};
use polymat::{Data, KronSum, Out};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::wrap_pyfunction;

use crate::errors::{IntoPy, PolymatError};
use crate::matrix::{PyData, Work, detach_by, detach_for, parse_out, wrap, wrap_all};
use crate::scalar::Scalar;

type Obj = PyResult<Py<PyAny>>;
/// `kron_sum`'s terms: `(coeff, [(site, factor), ...])`.
type Terms<'py> = Vec<(Scalar, Vec<(usize, PyRef<'py, PyData>)>)>;

/// One matrix in, one matrix out, with an output kind.
macro_rules! unary {
    ($($(#[$doc:meta])* $name:ident => $f:path;)*) => {$(
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (a, out=None))]
        fn $name(py: Python<'_>, a: PyRef<'_, PyData>, out: Option<&str>) -> Obj {
            let out = parse_out(out)?;
            let a = &a.inner;
            wrap(py, detach_for(py, &[a], || $f(a, out)).py_err()?)
        }
    )*};
}

/// Two matrices in, one matrix out, with an output kind.
macro_rules! binary {
    ($($(#[$doc:meta])* $name:ident => $f:path;)*) => {$(
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (a, b, out=None))]
        fn $name(py: Python<'_>, a: PyRef<'_, PyData>, b: PyRef<'_, PyData>, out: Option<&str>) -> Obj {
            let out = parse_out(out)?;
            let (a, b) = (&a.inner, &b.inner);
            wrap(py, detach_for(py, &[a, b], || $f(a, b, out)).py_err()?)
        }
    )*};
}

/// A call's [`Work`]: every entry of the shape unless given.
macro_rules! work {
    () => {
        Work::Shape
    };
    ($work:expr) => {
        $work
    };
}

/// One matrix in, a scalar (or flag) out; the work is every entry unless `[Work::…]` says.
macro_rules! reduce {
    ($($(#[$doc:meta])* $name:ident -> $t:ty $([$work:expr])? => $f:path;)*) => {$(
        $(#[$doc])*
        #[pyfunction]
        fn $name(py: Python<'_>, a: PyRef<'_, PyData>) -> PyResult<$t> {
            let a = &a.inner;
            detach_by(py, &[a], work!($($work)?), || $f(a)).py_err()
        }
    )*};
}

unary! {
    /// The conjugate transpose.
    adjoint => polymat::adjoint;
    /// The transpose.
    transpose => polymat::transpose;
    /// The entrywise complex conjugate.
    conj => polymat::conj;
    /// `−a`.
    neg => polymat::neg;
    /// The matrix exponential.
    expm => polymat::expm;
    /// The principal matrix logarithm.
    logm => polymat::logm;
    /// The principal matrix square root.
    sqrtm => polymat::sqrtm;
    /// The inverse.
    inv => polymat::inv;
    /// `|ψ⟩⟨ψ|` of a ket, `|ψ⟩⟨ψ|` of the ket of a bra.
    project => polymat::project;
    /// The columns stacked into one (QuTiP's `column_stack`, `operator_to_vector`).
    column_stack => polymat::column_stack;
    /// A zero matrix of `a`'s shape.
    zeros_like => polymat::zeros_like;
    /// The identity of `a`'s (square) shape.
    identity_like => polymat::identity_like;
}

binary! {
    /// `a − b`.
    sub => polymat::sub;
    /// `a ∘ b`, the entrywise product.
    multiply => polymat::multiply;
    /// `a ⊗ b`.
    kron => polymat::kron;
    /// `aᵀ ⊗ b`.
    kron_transpose => polymat::kron_transpose;
    /// `a · b†`.
    matmul_dag => polymat::matmul_dag;
    /// `|ket⟩⟨bra|` (a bra, or a ket taken as its bra).
    matmul_outer => polymat::matmul_outer;
}

reduce! {
    /// The trace (square matrices).
    trace -> c64 [Work::Diagonal] => polymat::trace;
    /// The trace of the operator whose column stacking is this ket.
    trace_oper_ket -> c64 => polymat::trace_oper_ket;
    /// The mean of the nonzero entries.
    mean_nonzero -> c64 => polymat::mean_nonzero;
    /// The mean absolute value of the nonzero entries.
    mean_abs_nonzero -> f64 => polymat::mean_abs_nonzero;
    /// The Frobenius norm.
    norm_frobenius -> f64 => polymat::ops::norm::frobenius;
    /// The 1-norm (largest column sum).
    norm_one -> f64 => polymat::ops::norm::one;
    /// The largest absolute entry.
    norm_max -> f64 => polymat::ops::norm::max;
    /// The trace norm (sum of singular values).
    norm_trace -> f64 => polymat::ops::norm::trace;
    /// The 2-norm of a vector.
    norm_l2 -> f64 => polymat::ops::norm::l2;
}

/// `a + scale·b`.
#[pyfunction]
#[pyo3(signature = (a, b, scale=Scalar::ONE, out=None))]
fn add(
    py: Python<'_>,
    a: PyRef<'_, PyData>,
    b: PyRef<'_, PyData>,
    scale: Scalar,
    out: Option<&str>,
) -> Obj {
    let out = parse_out(out)?;
    let (a, b) = (&a.inner, &b.inner);
    wrap(
        py,
        detach_for(py, &[a, b], || polymat::add_scaled(a, b, scale.0, out)).py_err()?,
    )
}

/// `scale · a · b`.
#[pyfunction]
#[pyo3(signature = (a, b, scale=Scalar::ONE, out=None))]
fn matmul(
    py: Python<'_>,
    a: PyRef<'_, PyData>,
    b: PyRef<'_, PyData>,
    scale: Scalar,
    out: Option<&str>,
) -> Obj {
    let out = parse_out(out)?;
    let (a, b) = (&a.inner, &b.inner);
    let r = detach_for(py, &[a, b], || matmul_scaled(a, b, scale.0, out)).py_err()?;
    wrap(py, r)
}

/// `scale·a·b` (the scaling skipped when it is 1), shared with the QuTiP plugin's `QSpec`.
pub(crate) fn matmul_scaled(a: &Data, b: &Data, scale: c64, out: Out) -> polymat::Result<Data> {
    let p = polymat::matmul(a, b, out)?;
    if scale == c64::new(1.0, 0.0) {
        Ok(p)
    } else {
        polymat::mul(&p, scale, out)
    }
}

/// `s · a`.
#[pyfunction]
#[pyo3(signature = (a, scalar, out=None))]
fn mul(py: Python<'_>, a: PyRef<'_, PyData>, scalar: Scalar, out: Option<&str>) -> Obj {
    let out = parse_out(out)?;
    let a = &a.inner;
    wrap(
        py,
        detach_for(py, &[a], || polymat::mul(a, scalar.0, out)).py_err()?,
    )
}

/// `aⁿ` for a square `a`.
#[pyfunction]
#[pyo3(signature = (a, n, out=None))]
fn pow(py: Python<'_>, a: PyRef<'_, PyData>, n: u32, out: Option<&str>) -> Obj {
    let out = parse_out(out)?;
    let a = &a.inner;
    wrap(py, py.detach(|| polymat::pow(a, n, out)).py_err()?)
}

/// `⟨state|op|state⟩` for a ket, `Tr(op·ρ)` for a density matrix.
#[pyfunction]
fn expect(py: Python<'_>, op: PyRef<'_, PyData>, state: PyRef<'_, PyData>) -> PyResult<c64> {
    let (a, b) = (&op.inner, &state.inner);
    detach_for(py, &[a, b], || polymat::expect(a, b)).py_err()
}

/// `Tr(unstack(s · vec ρ))` for a superoperator `s` and a column-stacked `ρ`.
#[pyfunction]
fn expect_super(py: Python<'_>, s: PyRef<'_, PyData>, rho: PyRef<'_, PyData>) -> PyResult<c64> {
    let (a, b) = (&s.inner, &rho.inner);
    py.detach(|| polymat::expect_super(a, b)).py_err()
}

/// `⟨left|right⟩` (`left` a bra, or a ket taken as its bra).
#[pyfunction]
fn inner(py: Python<'_>, left: PyRef<'_, PyData>, right: PyRef<'_, PyData>) -> PyResult<c64> {
    let (a, b) = (&left.inner, &right.inner);
    detach_for(py, &[a, b], || polymat::inner(a, b)).py_err()
}

/// `⟨left|op|right⟩`.
#[pyfunction]
fn inner_op(
    py: Python<'_>,
    left: PyRef<'_, PyData>,
    op: PyRef<'_, PyData>,
    right: PyRef<'_, PyData>,
) -> PyResult<c64> {
    let (a, o, b) = (&left.inner, &op.inner, &right.inner);
    py.detach(|| polymat::inner_op(a, o, b)).py_err()
}

/// The partial trace keeping the subsystems `keep` of dimensions `dims`.
#[pyfunction]
#[pyo3(signature = (a, dims, keep, out=None))]
fn ptrace(
    py: Python<'_>,
    a: PyRef<'_, PyData>,
    dims: Vec<usize>,
    keep: Vec<usize>,
    out: Option<&str>,
) -> Obj {
    let out = parse_out(out)?;
    let a = &a.inner;
    let p = Ptrace { dims, keep };
    wrap(py, py.detach(|| polymat::ptrace(a, &p, out)).py_err()?)
}

/// The same entries read column by column into `rows × cols`.
#[pyfunction]
#[pyo3(signature = (a, rows, cols, out=None))]
fn reshape(
    py: Python<'_>,
    a: PyRef<'_, PyData>,
    rows: usize,
    cols: usize,
    out: Option<&str>,
) -> Obj {
    let out = parse_out(out)?;
    let a = &a.inner;
    wrap(
        py,
        py.detach(|| polymat::reshape(a, (rows, cols), out))
            .py_err()?,
    )
}

/// The column-stacked vector `a` cut back into columns of `rows` entries.
#[pyfunction]
#[pyo3(signature = (a, rows, out=None))]
fn column_unstack(py: Python<'_>, a: PyRef<'_, PyData>, rows: usize, out: Option<&str>) -> Obj {
    let out = parse_out(out)?;
    let a = &a.inner;
    wrap(
        py,
        py.detach(|| polymat::column_unstack(a, rows, out))
            .py_err()?,
    )
}

/// The columns, each an n×1 matrix of `a`'s kind.
#[pyfunction]
fn split_columns<'py>(py: Python<'py>, a: PyRef<'_, PyData>) -> PyResult<Bound<'py, PyTuple>> {
    let a = &a.inner;
    wrap_all(py, py.detach(|| polymat::split_columns(a)).py_err()?)
}

/// One matrix and a tolerance in, a flag out.
macro_rules! property {
    ($($(#[$doc:meta])* $name:ident => $f:path;)*) => {$(
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (a, atol=1e-12))]
        fn $name(py: Python<'_>, a: PyRef<'_, PyData>, atol: f64) -> PyResult<bool> {
            let a = &a.inner;
            detach_for(py, &[a], || $f(a, atol)).py_err()
        }
    )*};
}

property! {
    /// Whether `a` equals its adjoint within `atol`.
    isherm => polymat::isherm;
    /// Whether every entry is within `atol` of 0.
    iszero => polymat::iszero;
    /// Whether every entry off the diagonal is within `atol` of 0.
    isdiag => polymat::isdiag;
}

/// Whether `|a − b| ≤ atol + rtol·|b|` entry by entry.
#[pyfunction]
#[pyo3(signature = (a, b, atol=1e-12, rtol=0.0))]
fn isequal(
    py: Python<'_>,
    a: PyRef<'_, PyData>,
    b: PyRef<'_, PyData>,
    atol: f64,
    rtol: f64,
) -> PyResult<bool> {
    let (a, b) = (&a.inner, &b.inner);
    py.detach(|| polymat::isequal(a, b, atol, rtol)).py_err()
}

/// Entries with modulus below `atol` set to zero (real and imaginary parts separately).
#[pyfunction]
#[pyo3(signature = (a, atol, out=None))]
fn tidyup(py: Python<'_>, a: PyRef<'_, PyData>, atol: f64, out: Option<&str>) -> Obj {
    let out = parse_out(out)?;
    let a = &a.inner;
    wrap(py, py.detach(|| polymat::tidyup(a, atol, out)).py_err()?)
}

/// The `rows × cols` zero matrix.
#[pyfunction]
#[pyo3(signature = (rows, cols, out=None))]
fn zeros(py: Python<'_>, rows: usize, cols: usize, out: Option<&str>) -> Obj {
    let out = parse_out(out)?;
    wrap(py, py.detach(|| polymat::zeros(rows, cols, out)).py_err()?)
}

/// The `n × n` identity.
#[pyfunction]
#[pyo3(signature = (n, out=None))]
fn identity(py: Python<'_>, n: usize, out: Option<&str>) -> Obj {
    let out = parse_out(out)?;
    wrap(py, py.detach(|| polymat::identity(n, out)).py_err()?)
}

/// A matrix from its diagonals (`diagonals[k]` on offset `offsets[k]`, QuTiP's `diag`).
#[pyfunction]
#[pyo3(signature = (diagonals, offsets, shape, out=None))]
fn diag(
    py: Python<'_>,
    diagonals: Vec<Vec<Scalar>>,
    offsets: Vec<isize>,
    shape: (usize, usize),
    out: Option<&str>,
) -> Obj {
    let out = parse_out(out)?;
    wrap(
        py,
        py.detach(|| {
            let diagonals = diagonals
                .into_iter()
                .map(|d| d.into_iter().map(|s| s.0).collect());
            polymat::diag(diagonals.collect(), offsets, shape, out)
        })
        .py_err()?,
    )
}

/// A matrix with one nonzero entry.
#[pyfunction]
#[pyo3(signature = (shape, position, value=Scalar::ONE, out=None))]
fn one_element(
    py: Python<'_>,
    shape: (usize, usize),
    position: (usize, usize),
    value: Scalar,
    out: Option<&str>,
) -> Obj {
    let out = parse_out(out)?;
    wrap(
        py,
        py.detach(|| polymat::one_element(shape, position, value.0, out))
            .py_err()?,
    )
}

/// `exp(t·a)·v` without forming `exp(t·a)` (Krylov; `a` may be a lazy kind).
#[pyfunction]
#[pyo3(signature = (a, v, t=Scalar::ONE, out=None))]
fn expm_multiply(
    py: Python<'_>,
    a: PyRef<'_, PyData>,
    v: PyRef<'_, PyData>,
    t: Scalar,
    out: Option<&str>,
) -> Obj {
    let out = parse_out(out)?;
    let (a, v) = (&a.inner, &v.inner);
    wrap(
        py,
        py.detach(|| polymat::expm_multiply(a, v, t.0, out))
            .py_err()?,
    )
}

/// `x` with `a·x = b` (LU; least squares with `method="lstsq"`).
#[pyfunction]
#[pyo3(signature = (a, b, method="lu", out=None))]
fn solve(
    py: Python<'_>,
    a: PyRef<'_, PyData>,
    b: PyRef<'_, PyData>,
    method: &str,
    out: Option<&str>,
) -> Obj {
    use polymat::ops::{Iterative, SolveMethod};
    let out = parse_out(out)?;
    let m = match method {
        "lu" => SolveMethod::Lu,
        "lstsq" => SolveMethod::Lstsq,
        "gmres" => SolveMethod::Gmres(Iterative::default()),
        "bicgstab" => SolveMethod::Bicgstab(Iterative::default()),
        "cg" => SolveMethod::Cg(Iterative::default()),
        other => {
            return Err(PolymatError::new_err(format!(
                "solve: unknown method {other:?} (lu, lstsq, gmres, bicgstab, cg)"
            )));
        }
    };
    let (a, b) = (&a.inner, &b.inner);
    wrap(py, py.detach(|| polymat::solve(a, b, m, out)).py_err()?)
}

/// Eigenvalues (and unit eigenvectors as the columns of a Dense) sorted as QuTiP's `sort`;
/// `count` of them (all when `None`), the Krylov path for large sparse or lazy matrices.
/// Returns `(values, vectors or None)`.
#[pyfunction]
#[pyo3(signature = (a, isherm=None, vecs=true, sort="low", count=None, sigma=None, tol=0.0, maxiter=0))]
#[allow(clippy::too_many_arguments)]
fn eigs<'py>(
    py: Python<'py>,
    a: PyRef<'_, PyData>,
    isherm: Option<bool>,
    vecs: bool,
    sort: &str,
    count: Option<usize>,
    sigma: Option<Scalar>,
    tol: f64,
    maxiter: usize,
) -> PyResult<(Vec<c64>, Py<PyAny>)> {
    let order = match sort {
        "low" => EigOrder::Low,
        "high" => EigOrder::High,
        other => {
            return Err(PolymatError::new_err(format!(
                "eigs: sort must be \"low\" or \"high\", got {other:?}"
            )));
        }
    };
    let mut o = EigsOptions::default()
        .hermitian(isherm)
        .vectors(vecs)
        .order(order)
        .count(count)
        .sigma(sigma.map(|s| s.0));
    if tol > 0.0 {
        o = o.tol(tol);
    }
    if maxiter > 0 {
        o = o.max_iter(maxiter);
    }
    let a = &a.inner;
    let e = py.detach(|| polymat::eigs(a, o)).py_err()?;
    let v = match e.vectors {
        Some(d) => wrap(py, d.into())?,
        None => py.None(),
    };
    Ok((e.values, v))
}

/// `A·ρ` as a lazy superoperator (QuTiP's `spre`).
#[pyfunction]
fn spre(py: Python<'_>, a: PyRef<'_, PyData>) -> Obj {
    wrap(py, polymat::spre(&a.inner).py_err()?)
}

/// `ρ·B` as a lazy superoperator (QuTiP's `spost`).
#[pyfunction]
fn spost(py: Python<'_>, b: PyRef<'_, PyData>) -> Obj {
    wrap(py, polymat::spost(&b.inner).py_err()?)
}

/// `A·ρ·B` as a lazy superoperator (QuTiP's `sprepost`).
#[pyfunction]
fn sprepost(py: Python<'_>, a: PyRef<'_, PyData>, b: PyRef<'_, PyData>) -> Obj {
    wrap(py, polymat::sprepost(&a.inner, &b.inner).py_err()?)
}

/// `D[a, b](ρ) = a·ρ·b† − ½(b†a·ρ + ρ·b†a)` as a lazy superoperator (`b = a` by default).
#[pyfunction]
#[pyo3(signature = (a, b=None))]
fn lindblad_dissipator(py: Python<'_>, a: PyRef<'_, PyData>, b: Option<PyRef<'_, PyData>>) -> Obj {
    let b = b.as_ref().map(|b| &b.inner);
    wrap(py, polymat::lindblad_dissipator(&a.inner, b).py_err()?)
}

/// The Lindblad generator `−i[H, ·] + Σ D[cₖ]` as a lazy superoperator (QuTiP's
/// `liouvillian`, column stacking); it is never stored unless converted.
#[pyfunction]
#[pyo3(signature = (h=None, c_ops=Vec::new()))]
fn liouvillian(py: Python<'_>, h: Option<PyRef<'_, PyData>>, c_ops: Vec<PyRef<'_, PyData>>) -> Obj {
    let c: Vec<Data> = c_ops.iter().map(|c| c.inner.clone()).collect();
    let h = h.as_ref().map(|h| &h.inner);
    let r = py.detach(|| polymat::liouvillian(h, &c)).py_err()?;
    wrap(py, r)
}

/// The steady state ρ (n × n, unit trace) of a Liouvillian, by GMRES with QuTiP's trace row.
#[pyfunction]
#[pyo3(signature = (l, tol=0.0, maxiter=0))]
fn steadystate(py: Python<'_>, l: PyRef<'_, PyData>, tol: f64, maxiter: usize) -> Obj {
    let mut o = SteadyState::default();
    if tol > 0.0 {
        o = o.tol(tol);
    }
    if maxiter > 0 {
        o = o.max_iter(maxiter);
    }
    let l = &l.inner;
    wrap(py, py.detach(|| polymat::steadystate(l, &o)).py_err()?)
}

/// A lazy `Σₜ cₜ ⊗ₛ Fₜₛ` on subsystems of dimensions `dims`; `terms` is a list of
/// `(coeff, [(site, factor), ...])`, sites not listed carrying the identity.
#[pyfunction]
fn kron_sum(py: Python<'_>, dims: Vec<usize>, terms: Terms<'_>) -> Obj {
    let mut k = KronSum::new(&dims).py_err()?;
    for (c, fs) in terms {
        k.push_term(c.0, fs.into_iter().map(|(s, f)| (s, f.inner.clone())))
            .py_err()?;
    }
    wrap(py, Data::from(k))
}

/// What the dispatcher of operation `op` does for inputs of `kinds` and output `out`: the
/// kernel, the conversions before and after, and their weights.
#[pyfunction]
#[pyo3(signature = (op, kinds, out=None))]
fn explain(op: &str, kinds: Vec<String>, out: Option<&str>) -> PyResult<String> {
    use polymat::ops as o;
    let out = parse_out(out)?;
    let ks = kinds
        .iter()
        .map(|k| polymat::registry().parse_kind(k))
        .collect::<polymat::Result<Vec<_>>>()
        .py_err()?;
    let e = match op {
        "add" => o::ADD.explain(&ks, out),
        "sub" => o::SUB.explain(&ks, out),
        "mul" => o::MUL.explain(&ks, out),
        "neg" => o::NEG.explain(&ks, out),
        "matmul" => o::MATMUL.explain(&ks, out),
        "matmul_dag" => o::MATMUL_DAG.explain(&ks, out),
        "multiply" => o::MULTIPLY.explain(&ks, out),
        "kron" => o::KRON.explain(&ks, out),
        "adjoint" => o::ADJOINT.explain(&ks, out),
        "transpose" => o::TRANSPOSE.explain(&ks, out),
        "conj" => o::CONJ.explain(&ks, out),
        "trace" => o::TRACE.explain(&ks, out),
        "expect" => o::EXPECT.explain(&ks, out),
        "inner" => o::INNER.explain(&ks, out),
        "expm" => o::EXPM.explain(&ks, out),
        "expm_multiply" => o::EXPM_MULTIPLY.explain(&ks, out),
        "pow" => o::POW.explain(&ks, out),
        "ptrace" => o::PTRACE.explain(&ks, out),
        other => {
            return Err(PolymatError::new_err(format!(
                "explain: no operation named {other:?}"
            )));
        }
    }
    .py_err()?;
    Ok(e.to_string())
}

/// The names of the registered kinds.
#[pyfunction]
fn kinds() -> Vec<String> {
    let r = polymat::registry();
    r.kinds().into_iter().map(|k| r.kind_name(k)).collect()
}

/// polymat's worker threads (0: rayon's default), as the Rust crate's `set_threads`.
#[pyfunction]
fn set_threads(n: usize) {
    polymat::set_threads(n);
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    macro_rules! add {
        ($($f:ident),* $(,)?) => {$( m.add_function(wrap_pyfunction!($f, m)?)?; )*};
    }
    add!(
        adjoint,
        transpose,
        conj,
        neg,
        expm,
        logm,
        sqrtm,
        inv,
        project,
        column_stack,
        zeros_like,
        identity_like,
        sub,
        multiply,
        kron,
        kron_transpose,
        matmul_dag,
        matmul_outer,
        trace,
        trace_oper_ket,
        mean_nonzero,
        mean_abs_nonzero,
        norm_frobenius,
        norm_one,
        norm_max,
        norm_trace,
        norm_l2,
        add,
        matmul,
        mul,
        pow,
        expect,
        expect_super,
        inner,
        inner_op,
        ptrace,
        reshape,
        column_unstack,
        split_columns,
        isherm,
        iszero,
        isdiag,
        isequal,
        tidyup,
        zeros,
        identity,
        diag,
        one_element,
        expm_multiply,
        solve,
        eigs,
        spre,
        spost,
        sprepost,
        lindblad_dissipator,
        liouvillian,
        steadystate,
        kron_sum,
        explain,
        kinds,
        set_threads,
    );
    Ok(())
}
