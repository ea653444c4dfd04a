"""polymat: matrices in many storage forms behind one multiple-dispatch API.

The classes are polymat's kinds: :class:`Dense` (column-major), :class:`Csr`, :class:`Dia`,
and the lazy :class:`KronSum` and :class:`SuperOp`, all derived from :class:`Data`. Build them
from numpy and scipy with :func:`dense`, :func:`csr`, :func:`dia` or :func:`asdata`; get
numpy and scipy back with ``x.to_array()`` and ``x.to_scipy()``. Every operation is a function
(``polymat.add(a, b)``, ``polymat.matmul(a, b, out="csr")``, ...) that dispatches on the kinds
of its arguments and releases the GIL while it computes. Errors are :class:`PolymatError`, a
``ValueError``, with polymat's message.

``import qutip_polymat`` registers these kinds as QuTiP data types.
"""

import numpy as _np

from ._polymat import *  # noqa: F401,F403
from ._polymat import Csr, Data, Dense, Dia, PolymatError, __version__  # noqa: F401

__all__ = [name for name in dir() if not name.startswith("_")]


def _is_scipy_sparse(x):
    try:
        import scipy.sparse as sp
    except ImportError:  # pragma: no cover - scipy is a dependency
        return False
    return sp.issparse(x)


def _matrix(op, x):
    """A complex 2-D array from an array-like (a 1-D one as a column)."""
    a = _np.asarray(x, dtype=_np.complex128)
    if a.ndim == 1:
        a = a.reshape(-1, 1)
    if a.ndim != 2:
        raise PolymatError(f"{op}: a 2-D array is needed, got {a.ndim} dimensions")
    return a


def dense(x):
    """A :class:`Dense` with the entries of a 2-D array-like, a scipy sparse matrix or any
    polymat matrix (copied once)."""
    if isinstance(x, Data):
        return x.to("dense")
    if _is_scipy_sparse(x):
        x = x.toarray()
    return Dense(_matrix("dense", x))


def csr(x):
    """A :class:`Csr` from a scipy sparse matrix or array (any format), a dense array-like
    (its nonzero entries) or any polymat matrix."""
    if isinstance(x, Data):
        return x.to("csr")
    import scipy.sparse as sp

    x = sp.csr_array(x if sp.issparse(x) else _matrix("csr", x))
    return Csr(
        tuple(int(s) for s in x.shape),
        _np.asarray(x.indptr, dtype=_np.int64),
        _np.asarray(x.indices, dtype=_np.int64),
        _np.asarray(x.data, dtype=_np.complex128),
    )


def dia(x):
    """A :class:`Dia` from a scipy sparse matrix or array, a dense array-like or any polymat
    matrix. scipy's ``data`` rows are cut or padded to the matrix's column count."""
    if isinstance(x, Data):
        return x.to("dia")
    import scipy.sparse as sp

    x = sp.dia_array(x if sp.issparse(x) else _matrix("dia", x))
    rows, cols = (int(s) for s in x.shape)
    data = _np.zeros((len(x.offsets), cols), dtype=_np.complex128)
    width = min(cols, x.data.shape[1]) if x.data.ndim == 2 else 0
    if width:
        data[:, :width] = x.data[:, :width]
    return Dia((rows, cols), _np.asarray(x.offsets, dtype=_np.int64), data)


def asdata(x):
    """``x`` itself if it is a polymat matrix, a :class:`Csr` for a scipy sparse input, a
    :class:`Dense` otherwise."""
    if isinstance(x, Data):
        return x
    if _is_scipy_sparse(x):
        return dia(x) if getattr(x, "format", "") == "dia" else csr(x)
    return dense(x)


__all__ += ["dense", "csr", "dia", "asdata"]
