"""QuTiP data-layer types that hold a polymat matrix.

QuTiP's ``Data`` is a Cython class and PyO3 cannot subclass it, so each type here is a thin
Python subclass holding the polymat object in ``_pm`` (as qutip-jax's ``JaxArray`` holds its
array). polymat's matrices are immutable from Python, so ``copy`` shares the object.
"""

import numpy as np
from qutip.core.data import Data

import polymat as pm

__all__ = [
    "PolymatData",
    "PolymatDense",
    "PolymatCsr",
    "PolymatDia",
    "PolymatSuperOp",
    "PolymatKronSum",
    "wrap",
]


class PolymatData(Data):
    """Base of the polymat types: a QuTiP ``Data`` whose entries live in a polymat matrix.

    ``PolymatCsr(x)`` (and the others) accept a polymat matrix, a QuTiP ``Data``, a scipy
    sparse matrix or a 2-D array-like; ``shape`` may reshape a vector-like input.
    """

    # The polymat object only: no per-instance dict, as QuTiP's own (Cython) types have none;
    # building a result and reading `_pm` are then the attribute slot's, not a dict's.
    __slots__ = ("_pm",)
    _pm: "pm.Data"
    #: polymat's kind name (``"Dense"``, ``"Csr"``, ...), the class's storage.
    kind = None

    def __init__(self, arg=None, shape=None, copy=True):
        if isinstance(arg, Data) and not isinstance(arg, PolymatData):
            arg = arg.to_array() if self.kind == "Dense" else _scipy_of(arg)
        p = arg._pm if isinstance(arg, PolymatData) else arg
        p = _to_kind(pm.asdata(p) if not isinstance(p, pm.Data) else p, self.kind)
        if shape is not None and tuple(shape) != p.shape:
            shape = tuple(int(s) for s in shape)
            if len(shape) != 2 or shape[0] * shape[1] != p.shape[0] * p.shape[1]:
                raise ValueError(f"shape {shape} does not match the data's shape {p.shape}")
            p = pm.reshape(p, shape[0], shape[1], out=self.kind)
        self._pm = p
        Data.__init__(self, p.shape)

    @classmethod
    def _fast(cls, p):
        """Wraps polymat matrix ``p``, of this class's kind, without checks."""
        out = cls.__new__(cls)
        Data.__init__(out, p.shape)
        out._pm = p
        return out

    def copy(self):
        return type(self)._fast(self._pm)

    def to_array(self):
        return self._pm.to_array()

    def conj(self):
        return type(self)._fast(pm.conj(self._pm, out=self.kind))

    def transpose(self):
        return type(self)._fast(pm.transpose(self._pm, out=self.kind))

    def adjoint(self):
        return type(self)._fast(pm.adjoint(self._pm, out=self.kind))

    def trace(self):
        return pm.trace(self._pm)

    def __repr__(self):
        return f"{type(self).__name__}({self._pm!r})"

    def __reduce__(self):
        return (_rebuild, (type(self), self.to_array()))


def _rebuild(cls, array):
    return cls(array)


class PolymatDense(PolymatData):
    """polymat's column-major ``Dense``."""

    __slots__ = ()

    kind = "Dense"

    @classmethod
    def sparcity(cls):
        return "dense"


class PolymatCsr(PolymatData):
    """polymat's ``Csr``."""

    __slots__ = ()

    kind = "Csr"

    @classmethod
    def sparcity(cls):
        return "sparse"


class PolymatDia(PolymatData):
    """polymat's ``Dia`` (scipy's ``dia_array`` layout)."""

    __slots__ = ()

    kind = "Dia"

    @classmethod
    def sparcity(cls):
        return "diagonal"


class _Lazy(PolymatData):
    """A lazy kind: applied without being stored; only built by polymat's constructors."""

    __slots__ = ()

    def __init__(self, arg=None, shape=None, copy=True):
        if isinstance(arg, PolymatData):
            arg = arg._pm
        if not (isinstance(arg, pm.Data) and arg.kind == self.kind):
            raise TypeError(
                f"a {type(self).__name__} wraps a polymat {self.kind} (built by polymat's "
                "constructors: polymat.liouvillian, spre, ... or polymat.kron_sum); a stored "
                "matrix cannot be made lazy"
            )
        self._pm = arg
        Data.__init__(self, arg.shape)

    @classmethod
    def sparcity(cls):
        return "sparse"


class PolymatSuperOp(_Lazy):
    """polymat's lazy ``SuperOp``: ``spre``, ``spost``, ``sprepost``, ``lindblad_dissipator``
    and ``liouvillian`` without the superoperator being stored."""

    __slots__ = ()

    kind = "SuperOp"


class PolymatKronSum(_Lazy):
    """polymat's lazy ``KronSum``: a sum of Kronecker products of local factors."""

    __slots__ = ()

    kind = "KronSum"


_BY_KIND = {
    "Dense": PolymatDense,
    "Csr": PolymatCsr,
    "Dia": PolymatDia,
    "SuperOp": PolymatSuperOp,
    "KronSum": PolymatKronSum,
}


def wrap(p):
    """The QuTiP type for polymat matrix ``p``, by its kind."""
    cls = _BY_KIND.get(p.kind)
    if cls is None:
        p = p.to("Csr")
        cls = PolymatCsr
    return cls._fast(p)


def _to_kind(p, kind):
    return p if p.kind == kind else p.to(kind)


def _scipy_of(x):
    """A scipy sparse form of a QuTiP CSR/Dia (``as_scipy``), the array of anything else."""
    if hasattr(x, "as_scipy"):
        return x.as_scipy()
    return np.asarray(x.to_array())
