"""polymat's kernels as specialisations of QuTiP's dispatchers.

Every function here has the signature of the QuTiP dispatcher it specialises (dispatched
arguments positional, the rest by name) and is registered for each tuple of polymat input
types with polymat's own choice of output type (another requested ``dtype`` is a conversion
of the result). ``SPECIALISATIONS`` maps each dispatcher's name to its
``(function, *input_types, output_type)`` tuples, the form QuTiP's test mixins take.
"""

import itertools

import numpy as np
from qutip import settings

import polymat as pm
from polymat._polymat import QSpec

from .types import (
    PolymatCsr,
    PolymatDense,
    PolymatDia,
    PolymatKronSum,
    PolymatSuperOp,
    wrap,
)

STORED = (PolymatDense, PolymatCsr, PolymatDia)
LAZY = (PolymatSuperOp, PolymatKronSum)

#: dispatcher name -> list of (function, *input types, output type or None)
SPECIALISATIONS = {}


def _natural(types):
    """polymat's own choice of output for stored inputs of these types."""
    if all(t is types[0] for t in types):
        return types[0]
    return PolymatDense if PolymatDense in types else PolymatCsr


def _outputs(types):
    # One output per input tuple, polymat's own choice: another requested output is one
    # conversion of the result. (Every specialisation more costs each rebuild of QuTiP's
    # tables, which `CoreOptions` triggers on entry and exit: products of all registered types.)
    return [_natural(types)]


def _named(fn, op, types, out):
    fn.__name__ = fn.__qualname__ = _spec_name(op, types, out)
    return fn


def _register(op, fn, types, out):
    SPECIALISATIONS.setdefault(op, []).append((_named(fn, op, types, out), *types, out))


def _spec_name(op, types, out):
    names = "_".join(t.kind.lower() for t in types)
    return f"{op}_{names}" + (f"_{out.kind.lower()}" if out is not None else "")


def _native(op, arity, with_output=True):
    """The most frequent operations run as polymat's native callable (``QSpec``): QuTiP's
    dispatcher calls it directly, without a Python frame in between."""
    for types in itertools.product(STORED, repeat=arity):
        if not with_output:
            spec = QSpec(op, None, None, _spec_name(op, types, None))
            SPECIALISATIONS.setdefault(op, []).append((spec, *types, None))
            continue
        for out in _outputs(types):
            spec = QSpec(op, out.kind, out, _spec_name(op, types, out))
            SPECIALISATIONS.setdefault(op, []).append((spec, *types, out))


def _tol(tol):
    return settings.core["atol"] if tol is None or tol < 0 else tol


# --- Operations with a matrix result, dispatched on the output too -----------------------

def _unary(op, call):
    """``op(matrix)`` for every stored input type."""
    for t in STORED:
        for out in _outputs((t,)):
            def fn(matrix, _out=out):
                return _out._fast(call(matrix._pm, _out.kind))
            _register(op, fn, (t,), out)


def _binary(op, call, inputs=STORED):
    """``op(left, right)`` for every pair of input types."""
    for types in itertools.product(inputs, repeat=2):
        for out in _outputs(types):
            def fn(left, right, _out=out):
                return _out._fast(call(left._pm, right._pm, _out.kind))
            _register(op, fn, types, out)


def _binary_scaled(op, call):
    for types in itertools.product(STORED, repeat=2):
        for out in _outputs(types):
            def fn(left, right, scale=1, _out=out):
                return _out._fast(call(left._pm, right._pm, complex(scale), _out.kind))
            _register(op, fn, types, out)


for _op in ("add", "iadd", "sub", "matmul", "kron"):
    _native(_op, 2)
for _op in ("adjoint", "transpose", "conj", "neg", "mul", "imul"):
    _native(_op, 1)
_native("trace", 1, with_output=False)
_native("expect", 2, with_output=False)
_binary_scaled(
    "matmul_dag",
    lambda a, b, s, out: pm.mul(pm.matmul_dag(a, b, out=out), s, out=out)
    if s != 1 else pm.matmul_dag(a, b, out=out),
)


def _outer(a, b, s, out):
    # QuTiP's matmul_outer is a product tuned for ket·bra; any other shapes are a matmul.
    if a.shape[1] == 1 and b.shape[0] == 1:
        p = pm.matmul_outer(a, b, out=out)
        return pm.mul(p, s, out=out) if s != 1 else p
    return pm.matmul(a, b, s, out=out)


_binary_scaled("matmul_outer", _outer)
_binary("multiply", lambda a, b, out: pm.multiply(a, b, out=out))
_binary("kron_transpose", lambda a, b, out: pm.kron_transpose(a, b, out=out))

_unary("expm", lambda a, out: pm.expm(a, out=out))
_unary("logm", lambda a, out: pm.logm(a, out=out))
_unary("inv", lambda a, out: pm.inv(a, out=out))
_unary("project", lambda a, out: pm.project(a, out=out))
_unary("column_stack", lambda a, out: pm.column_stack(a, out=out))

for _t in STORED:
    for _out in _outputs((_t,)):
        def _pow(matrix, n, _out=_out):
            if n < 0:
                raise ValueError("pow: n must be a non-negative integer")
            return _out._fast(pm.pow(matrix._pm, int(n), out=_out.kind))
        _register("pow", _pow, (_t,), _out)

        def _sqrtm(matrix, isherm=None, _out=_out):
            return _out._fast(pm.sqrtm(matrix._pm, out=_out.kind))
        _register("sqrtm", _sqrtm, (_t,), _out)

        def _ptrace(matrix, dims, sel, _out=_out):
            # QuTiP's data-layer ptrace takes square operators only (Qobj.ptrace projects
            # kets first); polymat's also takes kets, so the contract is checked here.
            if matrix.shape[0] != matrix.shape[1]:
                raise ValueError(f"ptrace: a square matrix is needed, got {matrix.shape}")
            dims = [int(d) for d in np.atleast_1d(dims)]
            sel = [int(s) for s in np.atleast_1d(sel)]
            if any(d <= 0 for d in dims) or int(np.prod(dims)) != matrix.shape[0]:
                raise ValueError(f"ptrace: dims {dims} do not multiply to {matrix.shape[0]}")
            if any(s < 0 or s >= len(dims) for s in sel) or len(set(sel)) != len(sel):
                # IndexError, as QuTiP's own kernels raise for a subsystem out of range.
                raise IndexError(f"ptrace: sel {sel} must list distinct subsystems of 0..{len(dims) - 1}")
            sel = sorted(sel)
            return _out._fast(pm.ptrace(matrix._pm, dims, sel, out=_out.kind))
        _register("ptrace", _ptrace, (_t,), _out)

        def _reshape(matrix, n_rows_out, n_cols_out, _out=_out):
            if n_rows_out <= 0 or n_cols_out <= 0:
                raise ValueError(f"reshape: the shape ({n_rows_out}, {n_cols_out}) must be positive")
            return _out._fast(pm.reshape(matrix._pm, int(n_rows_out), int(n_cols_out), out=_out.kind))
        _register("reshape", _reshape, (_t,), _out)

        def _column_unstack(matrix, rows, _out=_out):
            if rows <= 0:
                raise ValueError(f"column_unstack: rows must be positive, got {rows}")
            return _out._fast(pm.column_unstack(matrix._pm, int(rows), out=_out.kind))
        _register("column_unstack", _column_unstack, (_t,), _out)

        def _solve(matrix, target, method=None, options={}, _t=_t, _out=_out):  # noqa: B006
            methods = {None: "lu", "spsolve": "lu", "solve": "lu", "splu": "lu",
                       "lstsq": "lstsq", "gmres": "gmres", "bicgstab": "bicgstab", "cg": "cg"}
            if method not in methods:
                raise ValueError(f"solve: method {method!r} is not one of {sorted(map(str, methods))}")
            return _out._fast(pm.solve(matrix._pm, target._pm, methods[method], out=_out.kind))
        for _b in STORED:
            _register("solve", _solve, (_t, _b), _out)


# --- Creation: dispatched on the output type only ----------------------------------------

for _out in STORED:
    def _zeros(rows, cols, _out=_out):
        return _out._fast(pm.zeros(int(rows), int(cols), out=_out.kind))
    _register("zeros", _zeros, (), _out)

    def _identity(dimension, scale=1, _out=_out):
        p = pm.identity(int(dimension), out=_out.kind)
        if scale != 1:
            p = pm.mul(p, complex(scale), out=_out.kind)
        return _out._fast(p)
    _register("identity", _identity, (), _out)

    def _one_element(shape, position, value=1.0, _out=_out):
        return _out._fast(pm.one_element(tuple(shape), tuple(position), complex(value), out=_out.kind))
    _register("one_element", _one_element, (), _out)

    def _diag(diagonals, offsets=0, shape=None, _out=_out):
        offs = [int(o) for o in np.atleast_1d(offsets)]
        if np.ndim(offsets) == 0:
            diags = [np.atleast_1d(np.asarray(diagonals, dtype=complex))]
        else:
            diags = [np.atleast_1d(np.asarray(d, dtype=complex)) for d in diagonals]
        if len(diags) != len(offs):
            raise ValueError("diag: as many diagonals as offsets are needed")
        if shape is None:
            n = max(len(d) + abs(o) for d, o in zip(diags, offs))
            shape = (n, n)
        rows, cols = (int(s) for s in shape)
        full = []
        for d, o in zip(diags, offs):
            length = max(0, min(rows + min(o, 0), cols - max(o, 0)))
            if len(d) == 1 and length != 1:
                d = np.full(length, d[0])
            if len(d) != length:
                raise ValueError(f"diag: the diagonal at offset {o} needs {length} values, got {len(d)}")
            full.append([complex(v) for v in d])
        return _out._fast(pm.diag(full, offs, (rows, cols), out=_out.kind))
    _register("diag", _diag, (), _out)


# --- Results that are not matrices: dispatched on the inputs only ------------------------

def _reduce(op, fn, arity=1):
    for types in itertools.product(STORED, repeat=arity):
        def f(*args, _fn=fn, **kwargs):
            return _fn(*args, **kwargs)
        _register(op, f, types, None)


_reduce("trace_oper_ket", lambda matrix: pm.trace_oper_ket(matrix._pm))
_reduce("expect_super", lambda op, state: pm.expect_super(op._pm, state._pm), 2)
_reduce("isdiag", lambda matrix: pm.isdiag(matrix._pm, 0.0))
_reduce("zeros_like", lambda data: type(data)._fast(pm.zeros_like(data._pm)))
_reduce("identity_like", lambda data: type(data)._fast(pm.identity_like(data._pm)))
_reduce("split_columns", lambda matrix, copy=1: [type(matrix)._fast(c) for c in pm.split_columns(matrix._pm)])


def _inner(left, right, scalar_is_ket=False):
    if left.shape == (1, 1) and right.shape == (1, 1) and scalar_is_ket:
        return complex(np.conj(pm.trace(left._pm)) * pm.trace(right._pm))
    return pm.inner(left._pm, right._pm)


def _inner_op(left, op, right, scalar_is_ket=False):
    if left.shape == (1, 1) and op.shape == (1, 1) and right.shape == (1, 1) and scalar_is_ket:
        return complex(np.conj(pm.trace(left._pm)) * pm.trace(op._pm) * pm.trace(right._pm))
    return pm.inner_op(left._pm, op._pm, right._pm)


_reduce("inner", _inner, 2)
for _t in STORED:
    def _inner_op_same(left, op, right, scalar_is_ket=False):
        return _inner_op(left, op, right, scalar_is_ket)
    _register("inner_op", _inner_op_same, (_t, _t, _t), None)
_reduce("isherm", lambda matrix, tol=-1: pm.isherm(matrix._pm, _tol(tol)))
_reduce("iszero", lambda matrix, tol=-1: pm.iszero(matrix._pm, _tol(tol)))
_reduce(
    "isequal",
    lambda A, B, atol=-1, rtol=-1: pm.isequal(
        A._pm, B._pm, _tol(atol), settings.core["rtol"] if rtol < 0 else rtol
    ),
    2,
)


def _tidyup(matrix, tol, inplace=True):
    return type(matrix)._fast(pm.tidyup(matrix._pm, float(tol), out=matrix.kind))


_reduce("tidyup", _tidyup)
_reduce("norm.frobenius", lambda matrix: pm.norm_frobenius(matrix._pm))
_reduce("norm.one", lambda matrix: pm.norm_one(matrix._pm))
_reduce("norm.max", lambda matrix: pm.norm_max(matrix._pm))
_reduce("norm.trace", lambda matrix: pm.norm_trace(matrix._pm))
_reduce("norm.l2", lambda vector: pm.norm_l2(vector._pm))


def _eigs(data, isherm=None, vecs=True, sort="low", eigvals=0):
    if data.shape[0] != data.shape[1]:
        raise ValueError(f"eigs: a square matrix is needed, got {data.shape}")
    if sort not in ("low", "high"):
        raise ValueError("eigs: sort must be 'low' or 'high'")
    values, vectors = pm.eigs(data._pm, isherm=isherm, vecs=vecs, sort=sort,
                              count=eigvals if eigvals > 0 else None)
    values = np.asarray(values, dtype=complex)
    if isherm:
        values = values.real
    if not vecs:
        return values
    return values, PolymatDense._fast(vectors)


_reduce("eigs", _eigs)


def _wrmn_error(diff, state, atol, rtol):
    # The ODE integrators' weighted RMS error, O(n) on the entries.
    if diff.shape != state.shape:
        raise ValueError(f"wrmn_error: shapes {diff.shape} and {state.shape} differ")
    d, s = np.abs(diff.to_array()), np.abs(state.to_array())
    return float(np.linalg.norm(d / (atol + rtol * s)) / d.size**0.5)


_reduce("ode.wrmn_error", _wrmn_error, 2)


# --- The lazy kinds: applied, summed and scaled without being stored ---------------------

for _lazy in LAZY:
    def _lazy_matmul(left, right, scale=1, _lazy=_lazy):
        p = pm.matmul(left._pm, right._pm, complex(scale), out="Dense")
        return PolymatDense._fast(p)
    _register("matmul", _lazy_matmul, (_lazy, PolymatDense), PolymatDense)

    def _lazy_add(left, right, scale=1, _lazy=_lazy):
        return _lazy._fast(pm.add(left._pm, right._pm, complex(scale)))
    _register("add", _lazy_add, (_lazy, _lazy), _lazy)

    def _lazy_sub(left, right, _lazy=_lazy):
        return _lazy._fast(pm.sub(left._pm, right._pm))
    _register("sub", _lazy_sub, (_lazy, _lazy), _lazy)

    def _lazy_mul(matrix, value, _lazy=_lazy):
        if value == 0:
            # QuTiP adds `0 · identity` to a generator's constant part; a zero with no
            # factors to apply keeps that element from costing a full application per step.
            rows, cols = matrix.shape
            return _zeros_superop(rows, cols) if _lazy is PolymatSuperOp else _zeros_kronsum(rows, cols)
        return _lazy._fast(pm.mul(matrix._pm, complex(value)))
    _register("mul", _lazy_mul, (_lazy,), _lazy)

    def _lazy_neg(matrix, _lazy=_lazy):
        return _lazy._fast(pm.neg(matrix._pm))
    _register("neg", _lazy_neg, (_lazy,), _lazy)



def _superop_side(op, dimension):
    n = int(round(dimension ** 0.5))
    if n * n != dimension:
        raise ValueError(f"{op}: a superoperator acts on n² entries; {dimension} is not a square")
    return n


# Identities and zeros of the lazy kinds (QuTiP forms them for sums such as `L + 0`).
def _identity_superop(dimension, scale=1):
    n = _superop_side("identity", dimension)
    return PolymatSuperOp._fast(pm.spre(pm.identity(n, out="csr") * complex(scale)))


def _zeros_superop(rows, cols):
    if rows != cols:
        raise ValueError(f"zeros: a lazy superoperator is square, got {rows}×{cols}")
    n = _superop_side("zeros", rows)
    return PolymatSuperOp._fast(pm.spre(pm.zeros(n, n, out="csr")))


def _identity_kronsum(dimension, scale=1):
    return PolymatKronSum._fast(pm.kron_sum([int(dimension)], [(complex(scale), [])]))


def _zeros_kronsum(rows, cols):
    if rows != cols:
        raise ValueError(f"zeros: a KronSum is square, got {rows}×{cols}")
    return PolymatKronSum._fast(pm.kron_sum([int(rows)], []))


def _lazy_iszero(matrix, tol=-1):
    # One application to a random vector instead of forming the operator: a nonzero matrix
    # sends a random Gaussian vector to zero with probability 0, and |(Lx)_i| > tol·‖x‖₁ proves
    # an entry above tol. (QuTiP asks this of every constant part of a QobjEvo.)
    rows, cols = matrix.shape
    rng = np.random.default_rng(0x9E3779B9)
    x = rng.normal(size=(cols, 1)) + 1j * rng.normal(size=(cols, 1))
    y = pm.matmul(matrix._pm, pm.dense(x))
    return pm.norm_max(y) <= _tol(tol) * float(np.abs(x).sum())


for _lazy in LAZY:
    _register("iszero", _lazy_iszero, (_lazy,), None)

_register("identity", _identity_superop, (), PolymatSuperOp)
_register("zeros", _zeros_superop, (), PolymatSuperOp)
_register("identity", _identity_kronsum, (), PolymatKronSum)
_register("zeros", _zeros_kronsum, (), PolymatKronSum)

_register(
    "expect_super",
    lambda op, state: pm.expect_super(op._pm, state._pm),
    (PolymatSuperOp, PolymatDense),
    None,
)

__all__ = ["SPECIALISATIONS", "wrap"]
