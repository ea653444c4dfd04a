"""QuTiP's own data-layer tests (``qutip/tests/core/data``), run for polymat's types.

As qutip-jax does: QuTiP's mixin classes are subclassed with ``specialisations`` listing the
plugin's functions; the random cases of each polymat type are QuTiP's own (the same sparse,
filled, unsorted and zero matrices, converted), for every specialisation the plugin registers.
Failures and skips are explained in ``docs/python.md``.
"""

import numbers

import numpy as np
import pytest
import qutip
import qutip.tests.core.data.test_expect as qt_expect
import qutip.tests.core.data.test_mathematics as qt_math
import qutip.tests.core.data.test_mean as qt_mean
import qutip.tests.core.data.test_norm as qt_norm
import qutip.tests.core.data.test_operators as qt_operators
import qutip.tests.core.data.test_properties as qt_properties
import qutip.tests.core.data.test_ptrace as qt_ptrace
import qutip.tests.core.data.test_reshape as qt_reshape
from qutip.core import data as _data
from qutip.tests.core.data import conftest as qt_conftest

import polymat as pm
import qutip_polymat
from qutip_polymat import PolymatCsr, PolymatDense, PolymatDia
from qutip_polymat.specialisations import SPECIALISATIONS

STORED = (PolymatDense, PolymatCsr, PolymatDia)


def _cases_csr(shape):
    def factory(density, sort):
        return lambda: PolymatCsr(qt_conftest.random_csr(shape, density, sort))
    return [
        pytest.param(factory(0.001, True), id="sparse"),
        pytest.param(factory(0.8, True), id="filled,sorted"),
        pytest.param(factory(0.8, False), id="filled,unsorted"),
        pytest.param(lambda: PolymatCsr(_data.csr.zeros(*shape)), id="zero"),
    ]


def _cases_dense(shape):
    def factory(fortran):
        return lambda: PolymatDense(qt_conftest.random_dense(shape, fortran))
    return [pytest.param(factory(False), id="C"), pytest.param(factory(True), id="Fortran")]


def _cases_dia(shape):
    def factory(density, sort=False):
        return lambda: PolymatDia(qt_conftest.random_diag(shape, density, sort))
    return [
        pytest.param(factory(0.001), id="sparse"),
        pytest.param(factory(0.8, True), id="filled,sorted"),
        pytest.param(factory(0.8, False), id="filled,unsorted"),
        pytest.param(lambda: PolymatDia(_data.dia.zeros(*shape)), id="zero"),
    ]


qt_math._ALL_CASES.update({PolymatCsr: _cases_csr, PolymatDense: _cases_dense, PolymatDia: _cases_dia})
qt_math._RANDOM.update({
    PolymatCsr: lambda shape: [lambda: PolymatCsr(qt_conftest.random_csr(shape, 0.5, True))],
    PolymatDense: lambda shape: [lambda: PolymatDense(qt_conftest.random_dense(shape, False))],
    PolymatDia: lambda shape: [lambda: PolymatDia(qt_conftest.random_diag(shape, 0.5))],
})


def specs(op, result=None):
    """pytest params for the plugin's specialisations of `op` on stored types; `result` is
    the type QuTiP's test expects for a non-matrix result."""
    out = []
    for fn, *types, out_type in SPECIALISATIONS[op]:
        if not all(t in STORED for t in types):
            continue
        if out_type is None:
            out.append(pytest.param(fn, *types, result))
        elif out_type in STORED:
            out.append(pytest.param(fn, *types, out_type))
    return out


def wrapped(params, wrap):
    """The same params with each function wrapped as QuTiP's own test wraps its kernels."""
    out = []
    for p in params:
        fn, *rest = p.values
        w = wrap(fn)
        w.__name__ = fn.__name__
        out.append(pytest.param(w, *rest))
    return out


def same_type(op):
    """Unary specialisations whose output is their input's type (zeros_like, ...)."""
    return [pytest.param(fn, t, t) for fn, t, _ in SPECIALISATIONS[op]]


# test_mathematics.py ------------------------------------------------------------------------

class TestAdd(qt_math.TestAdd):
    specialisations = specs("add")


class TestSub(qt_math.TestSub):
    specialisations = specs("sub")


class TestMul(qt_math.TestMul):
    specialisations = specs("mul")


class TestNeg(qt_math.TestNeg):
    specialisations = specs("neg")


class TestAdjoint(qt_math.TestAdjoint):
    specialisations = specs("adjoint")


class TestConj(qt_math.TestConj):
    specialisations = specs("conj")


class TestTranspose(qt_math.TestTranspose):
    specialisations = specs("transpose")


class TestInner(qt_math.TestInner):
    specialisations = specs("inner", complex)


class TestInnerOp(qt_math.TestInnerOp):
    specialisations = specs("inner_op", complex)


class TestKron(qt_math.TestKron):
    specialisations = specs("kron")


class TestKronT(qt_math.TestKronT):
    specialisations = specs("kron_transpose")


class TestMatmul(qt_math.TestMatmul):
    specialisations = specs("matmul")


class TestMatmulDag(qt_math.TestMatmulDag):
    # QuTiP's test passes right.adjoint() so that the expected value is left @ right.
    specialisations = wrapped(
        specs("matmul_dag"),
        lambda fn: lambda left, right, scale=1: fn(left, right.adjoint(), scale),
    )


class TestMultiply(qt_math.TestMultiply):
    specialisations = specs("multiply")


class TestMatmul_Outer(qt_math.TestMatmul_Outer):
    specialisations = specs("matmul_outer")


class TestTrace(qt_math.TestTrace):
    specialisations = specs("trace", complex)


class TestTrace_oper_ket(qt_math.TestTrace_oper_ket):
    specialisations = specs("trace_oper_ket", complex)


class TestPow(qt_math.TestPow):
    specialisations = specs("pow")


class TestExpm(qt_math.TestExpm):
    specialisations = specs("expm")


class TestLogm(qt_math.TestLogm):
    specialisations = specs("logm")


class TestSqrtm(qt_math.TestSqrtm):
    specialisations = specs("sqrtm")


class TestProject(qt_math.TestProject):
    specialisations = specs("project")


def _shifted(fn):
    # QuTiP's test adds 2·I so that the random matrix is not singular.
    def inv(matrix):
        two = _data.diag([2.0] * matrix.shape[0], shape=matrix.shape, dtype=type(matrix))
        return fn(_data.add(matrix, two))
    return inv


class TestInv(qt_math.TestInv):
    specialisations = wrapped(specs("inv"), _shifted)


class TestZeros_like(qt_math.TestZeros_like):
    specialisations = same_type("zeros_like")


class TestIdentity_like(qt_math.TestIdentity_like):
    specialisations = same_type("identity_like")


class TestWRMN_error(qt_math.TestWRMN_error):
    specialisations = specs("ode.wrmn_error", float)


# test_expect.py, test_norm.py, test_reshape.py, test_ptrace.py ------------------------------

class TestExpect(qt_expect.TestExpect):
    specialisations = specs("expect", complex)


class TestExpectSuper(qt_expect.TestExpectSuper):
    specialisations = specs("expect_super", complex)


class TestOneNorm(qt_norm.TestOneNorm):
    specialisations = specs("norm.one", numbers.Number)


class TestFrobeniusNorm(qt_norm.TestFrobeniusNorm):
    specialisations = specs("norm.frobenius", numbers.Number)


class TestMaxNorm(qt_norm.TestMaxNorm):
    specialisations = specs("norm.max", numbers.Number)


class TestL2Norm(qt_norm.TestL2Norm):
    specialisations = specs("norm.l2", numbers.Number)


class TestTraceNorm(qt_norm.TestTraceNorm):
    specialisations = specs("norm.trace", numbers.Number)


class TestSplitColumns(qt_reshape.TestSplitColumns):
    specialisations = specs("split_columns", list)


class TestColumnStack(qt_reshape.TestColumnStack):
    specialisations = specs("column_stack")


class TestColumnUnstack(qt_reshape.TestColumnUnstack):
    specialisations = specs("column_unstack")


class TestReshape(qt_reshape.TestReshape):
    specialisations = specs("reshape")


class TestPtrace(qt_ptrace.TestPtrace):
    specialisations = specs("ptrace")


# test_properties.py: the same tests, with polymat's types as `datatype` ----------------------

@pytest.fixture(params=STORED, ids=[t.__name__ for t in STORED])
def datatype(request):
    return request.param


class Test_isherm(qt_properties.Test_isherm):
    pass


class Test_isdiag(qt_properties.Test_isdiag):
    pass


# test_operators.py: Python's operators on Data equal the dispatchers -------------------------

@pytest.mark.parametrize("type_left", STORED)
@pytest.mark.parametrize("type_right", STORED)
@pytest.mark.parametrize(["operator", "dispatch"], [
    pytest.param(lambda left, right: left + right, _data.add, id="add"),
    pytest.param(lambda left, right: left - right, _data.sub, id="sub"),
    pytest.param(lambda left, right: left @ right, _data.matmul, id="matmul"),
])
def test_data_binary_operator(type_left, type_right, operator, dispatch):
    qt_operators.test_data_binary_operator(type_left, type_right, operator, dispatch)


@pytest.mark.parametrize("type_", STORED)
@pytest.mark.parametrize(["operator", "dispatch"], [
    pytest.param(lambda data, number: data * number, _data.mul, id="mul"),
    pytest.param(lambda data, number: number * data, _data.mul, id="rmul"),
    pytest.param(lambda data, number: data / number,
                 lambda data, number: _data.mul(data, 1 / number), id="div"),
])
def test_data_scalar_operator(type_, operator, dispatch):
    qt_operators.test_data_scalar_operator(type_, operator, dispatch)


@pytest.mark.parametrize("type_", STORED)
def test_data_neg_operator(type_):
    qt_operators.test_data_neg_operator(type_)


@pytest.mark.parametrize("type_left", STORED)
@pytest.mark.parametrize("type_right", STORED)
def test_data_eq_operator(type_left, type_right):
    qt_operators.test_data_eq_operator(type_left, type_right)


# test_convert.py's TestConvert: the plugin's conversions -------------------------------------

class TestConvert(qt_math.UnaryOpMixin):
    def op_numpy(self, mat):
        return mat

    specialisations = [
        pytest.param(qutip_polymat._from_qutip_dense, _data.Dense, PolymatDense),
        pytest.param(qutip_polymat._to_qutip_dense, PolymatDense, _data.Dense),
        pytest.param(qutip_polymat._from_qutip_csr, _data.CSR, PolymatCsr),
        pytest.param(qutip_polymat._to_qutip_csr, PolymatCsr, _data.CSR),
        pytest.param(qutip_polymat._from_qutip_dia, _data.Dia, PolymatDia),
        pytest.param(qutip_polymat._to_qutip_dia, PolymatDia, _data.Dia),
        pytest.param(lambda m: _data.to(PolymatCsr, m), PolymatDense, PolymatCsr),
        pytest.param(lambda m: _data.to(PolymatDia, m), PolymatCsr, PolymatDia),
        pytest.param(lambda m: _data.to(PolymatDense, m), PolymatDia, PolymatDense),
    ]


@pytest.mark.parametrize("dtype", ["polymat_dense", "polymat_csr", "polymat_dia", "polymat"])
def test_qobj_to_alias(dtype):
    q = qutip.rand_herm(6)
    p = q.to(dtype)
    assert isinstance(p.data, qutip_polymat.PolymatData)
    np.testing.assert_allclose(p.full(), q.full(), atol=1e-14)


# test_mean.py: QuTiP's mean functions (not dispatchers) against polymat's ------------------

def _mean(matrix):
    return pm.mean_nonzero(matrix._pm)


def _mean_abs(matrix):
    return pm.mean_abs_nonzero(matrix._pm)


_NO_ATOL = ("polymat's mean_nonzero counts the stored nonzero entries; QuTiP's mean takes an "
            "atol and ignores entries within it (docs/python.md)")


class TestMean(qt_mean.TestMean):
    specialisations = [pytest.param(_mean, t, numbers.Complex) for t in STORED]

    @pytest.mark.skip(reason=_NO_ATOL)
    def test_atol_boundary(self):
        pass


class TestAbsMean(qt_mean.TestAbsMean):
    specialisations = [pytest.param(_mean_abs, t, numbers.Real) for t in STORED]

    @pytest.mark.skip(reason=_NO_ATOL)
    def test_atol_boundary(self):
        pass
