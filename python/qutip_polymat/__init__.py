"""QuTiP data-layer plugin for polymat.

``import qutip_polymat`` registers polymat's kinds as QuTiP data types:

=====================  ==========================  ==============================
QuTiP type             aliases                     polymat kind
=====================  ==========================  ==============================
``PolymatDense``       ``"polymat_dense"``         ``Dense`` (column-major)
``PolymatCsr``         ``"polymat_csr"``           ``Csr``
``PolymatDia``         ``"polymat_dia"``           ``Dia``
``PolymatSuperOp``     ``"polymat_superop"``       lazy ``SuperOp``
``PolymatKronSum``     ``"polymat_kronsum"``       lazy ``KronSum``
=====================  ==========================  ==============================

with conversions to and from QuTiP's ``Dense``, ``CSR`` and ``Dia``, the family ``"polymat"``
(``qobj.to("polymat")`` keeps the density: dense, sparse or diagonal), creators (a polymat
matrix passed to ``Qobj`` keeps its kind) and specialisations on every QuTiP dispatcher
polymat implements (:data:`SPECIALISATIONS`). Then::

    import qutip, qutip_polymat
    h = qutip.sigmax().to("polymat_csr")
    (h @ h).data            # PolymatCsr, computed by polymat

The lazy types are built from polymat: :func:`liouvillian` returns a superoperator ``Qobj``
whose data is polymat's lazy Liouvillian; ``qutip.mesolve`` evolves with it without the
superoperator being stored. ``options={"method": "polymat"}`` evolves a constant system by
polymat's ``expm_multiply`` instead of an ODE integrator (:class:`IntegratorPolymat`).
"""

import qutip
from qutip.core import data as _data

import polymat as pm

from .integrator import IntegratorPolymat
from .integrator import register as _register_integrator
from .specialisations import SPECIALISATIONS
from .types import (
    PolymatCsr,
    PolymatData,
    PolymatDense,
    PolymatDia,
    PolymatKronSum,
    PolymatSuperOp,
    wrap,
)

__all__ = [
    "PolymatData",
    "PolymatDense",
    "PolymatCsr",
    "PolymatDia",
    "PolymatSuperOp",
    "PolymatKronSum",
    "SPECIALISATIONS",
    "IntegratorPolymat",
    "liouvillian",
    "wrap",
]
__version__ = pm.__version__


def _from_qutip_dense(x):
    return PolymatDense._fast(pm.Dense(x.as_ndarray()))


def _to_qutip_dense(x):
    return _data.Dense(x._pm.to_array(), copy=False)


def _from_qutip_csr(x):
    return PolymatCsr._fast(pm.csr(x.as_scipy()))


def _to_qutip_csr(x):
    import numpy as np
    import scipy.sparse as sp

    # QuTiP's CSR wraps scipy's arrays without a copy when their index type is its own.
    data, indices, indptr = x._pm.csr_arrays()
    idx = _data.base.idxint_dtype
    m = sp.csr_matrix((data, indices.astype(idx, copy=False), indptr.astype(idx, copy=False)),
                      shape=x.shape)
    return _data.CSR(m, copy=False)


def _from_qutip_dia(x):
    return PolymatDia._fast(pm.dia(x.as_scipy()))


def _to_qutip_dia(x):
    import scipy.sparse as sp

    return _data.Dia(sp.dia_matrix(x._pm.to_scipy()), copy=False)


def _between(cls):
    def convert(x):
        return cls._fast(x._pm.to(cls.kind))
    convert.__name__ = f"to_{cls.__name__}"
    return convert


def _refuse(cls):
    def convert(x):
        raise TypeError(
            f"a stored {type(x).__name__} cannot become a lazy {cls.__name__}; build the lazy "
            "operator with polymat (qutip_polymat.liouvillian, polymat.spre, polymat.kron_sum)"
        )
    return convert


# Stored kinds: one step each way to QuTiP's counterpart, as cheap as QuTiP's own Dense <->
# CSR (weight 1). Forming a lazy kind costs a stored superoperator (weight 20: only when
# nothing else serves); the way back into a lazy kind does not exist (weight 1e6, raises).
_data.to.add_conversions([
    (PolymatDense, _data.Dense, _from_qutip_dense, 1),
    (_data.Dense, PolymatDense, _to_qutip_dense, 1),
    (PolymatCsr, _data.CSR, _from_qutip_csr, 1),
    (_data.CSR, PolymatCsr, _to_qutip_csr, 1),
    (PolymatDia, _data.Dia, _from_qutip_dia, 1),
    (_data.Dia, PolymatDia, _to_qutip_dia, 1),
    (PolymatCsr, PolymatDense, _between(PolymatCsr), 1),
    (PolymatDense, PolymatCsr, _between(PolymatDense), 1),
    (PolymatDia, PolymatCsr, _between(PolymatDia), 1),
    (PolymatCsr, PolymatDia, _between(PolymatCsr), 1),
    (PolymatDense, PolymatDia, _between(PolymatDense), 1),
    (PolymatDia, PolymatDense, _between(PolymatDia), 1),
    (PolymatCsr, PolymatSuperOp, _between(PolymatCsr), 20),
    (PolymatCsr, PolymatKronSum, _between(PolymatCsr), 20),
    (PolymatSuperOp, PolymatCsr, _refuse(PolymatSuperOp), 1e6),
    (PolymatKronSum, PolymatCsr, _refuse(PolymatKronSum), 1e6),
])

_data.to.register_aliases(["polymat_dense", "PolymatDense"], PolymatDense)
_data.to.register_aliases(["polymat_csr", "PolymatCsr"], PolymatCsr)
_data.to.register_aliases(["polymat_dia", "PolymatDia"], PolymatDia)
_data.to.register_aliases(["polymat_superop", "PolymatSuperOp"], PolymatSuperOp)
_data.to.register_aliases(["polymat_kronsum", "PolymatKronSum"], PolymatKronSum)
_data.to.register_group(["polymat"], dense=PolymatDense, sparse=PolymatCsr, diagonal=PolymatDia)


def _is(kind):
    return lambda x: isinstance(x, pm.Data) and x.kind == kind


def _create(x, shape=None, copy=True):
    return wrap(x)


_data.create.add_creators([
    (_is("Dense"), _create, 85),
    (_is("Csr"), _create, 85),
    (_is("Dia"), _create, 85),
    (_is("SuperOp"), _create, 85),
    (_is("KronSum"), _create, 85),
])


def _dispatcher(name):
    obj = _data
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


for _name, _specs in SPECIALISATIONS.items():
    _dispatcher(_name).add_specialisations(
        [tuple(types) + (fn,) if out is None else tuple(types) + (out, fn)
         for fn, *types, out in _specs],
        _defer=True,
    )
for _name in SPECIALISATIONS:
    _dispatcher(_name).rebuild_lookup()

# options={"method": "polymat"} in sesolve and mesolve: exact evolution by expm_multiply.
_register_integrator()


def liouvillian(H=None, c_ops=()):
    """QuTiP's ``liouvillian(H, c_ops)`` as a superoperator ``Qobj`` whose data is polymat's
    lazy Liouvillian (column stacking, equal to QuTiP's entry for entry). ``H`` and ``c_ops``
    are ``Qobj`` operators of any data type (converted to ``PolymatCsr`` unless already
    polymat's). ``qutip.mesolve(L, rho0, tlist)`` then evolves without forming it."""
    ops = [H] if H is not None else []
    ops += list(c_ops)
    if not ops:
        raise ValueError("liouvillian: H or at least one collapse operator is needed")

    def pmdata(q):
        d = q.data
        return d._pm if isinstance(d, PolymatData) else pm.csr(d.as_scipy() if hasattr(d, "as_scipy") else d.to_array())

    h = pmdata(H) if H is not None else None
    cs = [pmdata(c) for c in c_ops]
    L = pm.liouvillian(h, cs)
    dims = ops[0].dims
    return qutip.Qobj(PolymatSuperOp._fast(L), dims=[dims, dims], superrep="super", copy=False)
