"""A QuTiP integrator that evolves with polymat's ``expm_multiply``: ``method="polymat"``.

For a constant generator (``sesolve``'s ``-iH``, ``mesolve``'s Liouvillian) the state at
``t + dt`` is ``exp(dt·L)·ψ``, computed by polymat's Krylov ``expm_multiply`` through the
dispatcher: a lazy Liouvillian stays lazy, a stored one is applied as it is stored, and the
state stays a polymat matrix between steps (no copy to and from numpy per step). The result is
exact to the Krylov method's tolerance, not to an ODE step's.
"""

from qutip.solver.integrator import Integrator

import polymat as pm

from .types import PolymatData, PolymatDense

__all__ = ["IntegratorPolymat"]


def _as_polymat(d):
    if isinstance(d, PolymatData):
        return d._pm
    if hasattr(d, "as_scipy"):
        return pm.csr(d.as_scipy())
    return pm.dense(d.to_array())


class IntegratorPolymat(Integrator):
    """Exact evolution of a constant system by polymat's ``expm_multiply``.

    Usable with ``options={"method": "polymat"}`` in ``sesolve`` and ``mesolve`` (constant
    generators only).
    """

    integrator_options = {}
    support_time_dependant = False
    supports_blackbox = False
    method = "polymat"

    def __init__(self, system, options):
        if not system.isconstant:
            raise ValueError("method='polymat' evolves constant generators only")
        super().__init__(system, options)

    def _prepare(self):
        self._L = _as_polymat(self.system(0).data)
        self.name = "polymat expm_multiply"

    def set_state(self, t, state0):
        self._t = t
        self._y = _as_polymat(state0).to("Dense")
        self._is_set = True

    def get_state(self, copy=True):
        return self._t, PolymatDense._fast(self._y)

    def integrate(self, t, copy=True):
        dt = t - self._t
        if dt != 0:
            self._y = pm.expm_multiply(self._L, self._y, complex(dt))
            self._t = t
        return self.get_state(copy)

    def mcstep(self, t, copy=True):
        return self.integrate(t, copy=copy)

    @property
    def options(self):
        """No options: the Krylov method chooses its own steps to polymat's tolerance."""
        return self._options

    @options.setter
    def options(self, new_options):
        Integrator.options.fset(self, new_options)


def register():
    from qutip.solver.mesolve import MESolver
    from qutip.solver.sesolve import SESolver

    MESolver.add_integrator(IntegratorPolymat, "polymat")
    SESolver.add_integrator(IntegratorPolymat, "polymat")

