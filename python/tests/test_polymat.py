"""The Python package itself: interop with numpy and scipy, errors, the GIL, the lazy kinds,
and QuTiP's solvers running on polymat data."""

import threading

import numpy as np
import pytest
import scipy.sparse as sp

import polymat as pm

RNG = np.random.default_rng(7)


def rand(shape):
    return RNG.normal(size=shape) + 1j * RNG.normal(size=shape)


@pytest.mark.parametrize("order", ["C", "F"])
def test_dense_round_trip(order):
    a = np.asarray(rand((7, 5)), order=order)
    d = pm.dense(a)
    assert isinstance(d, pm.Dense) and d.shape == (7, 5) and d.kind == "Dense"
    np.testing.assert_array_equal(d.to_array(), a)
    np.testing.assert_array_equal(np.asarray(d), a)


def test_csr_and_dia_round_trip():
    m = sp.random(40, 30, density=0.1, format="csr", random_state=1) * (1 + 2j)
    c = pm.csr(m)
    assert isinstance(c, pm.Csr) and c.nnz == m.nnz
    back = c.to_scipy()
    assert back.format == "csr"
    np.testing.assert_array_equal(back.toarray(), m.toarray())
    d = pm.dia(sp.diags([[1, 2, 3], [4, 5]], [0, 1], shape=(3, 3)))
    assert isinstance(d, pm.Dia) and d.to_scipy().format == "dia"
    np.testing.assert_array_equal(d.to_array(), sp.diags([[1, 2, 3], [4, 5]], [0, 1]).toarray())


def test_unsorted_and_duplicate_csr_entries_are_merged():
    c = pm.Csr((2, 2), np.array([0, 3, 3]), np.array([1, 0, 1]), np.array([1, 2, 3], dtype=complex))
    np.testing.assert_array_equal(c.to_array(), [[2, 4], [0, 0]])


@pytest.mark.parametrize("kind", ["dense", "csr", "dia"])
def test_operations_match_numpy(kind):
    a, b = rand((6, 6)), rand((6, 6))
    x, y = pm.asdata(a).to(kind), pm.asdata(b).to(kind)
    np.testing.assert_allclose((x + y).to_array(), a + b, atol=1e-12)
    np.testing.assert_allclose((x @ y).to_array(), a @ b, atol=1e-12)
    np.testing.assert_allclose((2j * x).to_array(), 2j * a, atol=1e-12)
    np.testing.assert_allclose(pm.kron(x, y).to_array(), np.kron(a, b), atol=1e-12)
    np.testing.assert_allclose(pm.adjoint(x).to_array(), a.conj().T)
    assert abs(pm.trace(x) - np.trace(a)) < 1e-12
    np.testing.assert_allclose(pm.expm(x).to_array(), __import__("scipy").linalg.expm(a), rtol=1e-9)


def test_out_names_the_result_kind():
    a = pm.dense(np.eye(3))
    assert isinstance(pm.add(a, a, out="csr"), pm.Csr)
    assert isinstance(pm.matmul(a, a, out="Dia"), pm.Dia)
    with pytest.raises(pm.PolymatError, match="unknown storage kind \"nosuchkind\""):
        pm.add(a, a, out="nosuchkind")


def test_errors_are_value_errors_with_polymat_message():
    a, b = pm.dense(np.ones((2, 3))), pm.dense(np.ones((4, 5)))
    with pytest.raises(ValueError, match=r"add: .*\(2, 3\).*\(4, 5\)"):
        pm.add(a, b)
    with pytest.raises(pm.PolymatError):
        pm.matmul(a, b)
    with pytest.raises(pm.PolymatError):
        pm.Csr((2, 2), np.array([0, 1]), np.array([0]), np.array([1j]))


@pytest.mark.parametrize(
    "scalar, value",
    [(2.5, 2.5), (-3, -3), (True, 1), (1 - 3j, 1 - 3j), (np.float64(0.5), 0.5),
     (np.complex128(2j), 2j), (np.int64(4), 4), (np.float32(0.25), 0.25)],
)
def test_scalars_of_every_number_type(scalar, value):
    a = pm.dense(rand((3, 3)))
    want = value * a.to_array()
    got = [pm.mul(a, scalar), a * scalar, pm.add(a, a, scale=scalar) - a,
           pm.matmul(a, pm.identity(3), scale=scalar)]
    if not isinstance(scalar, np.generic):  # numpy's own scalars turn `a` into an array first
        got.append(scalar * a)
    for g in got:
        np.testing.assert_allclose(g.to_array(), want, atol=1e-12)


def test_scalars_that_are_not_numbers_are_refused():
    a = pm.dense(rand((2, 2)))
    with pytest.raises(OverflowError):
        pm.mul(a, 10**400)
    with pytest.raises(TypeError):
        pm.mul(a, "2")
    assert a.__mul__("2") is NotImplemented

    class Complexish:
        def __complex__(self):
            return 1 + 1j

    np.testing.assert_allclose(pm.mul(a, Complexish()).to_array(), (1 + 1j) * a.to_array())


def test_too_large_is_a_memory_error_class():
    assert issubclass(pm.TooLargeError, pm.PolymatError)
    with pytest.raises(pm.TooLargeError):
        pm.zeros(1 << 31, 1 << 31, out="dense")


def test_the_gil_is_released_during_kernels():
    # Two threads multiplying large matrices finish; a counter thread advances meanwhile.
    a = pm.dense(rand((400, 400)))
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)

    t = threading.Thread(target=count)
    t.start()
    for _ in range(5):
        pm.matmul(a, a)
    stop.set()
    t.join()
    assert len(ticks) > 0


def test_explain_and_kinds():
    assert "Csr" in pm.kinds() and "SuperOp" in pm.kinds()
    e = pm.explain("matmul", ["Csr", "Dense"])
    assert "kernel" in e


def test_lazy_liouvillian_equals_qutip():
    qutip = pytest.importorskip("qutip")
    h = qutip.rand_herm(4, seed=3)
    c = [qutip.destroy(4), 0.3 * qutip.num(4)]
    L = pm.liouvillian(pm.csr(h.full()), [pm.csr(x.full()) for x in c])
    assert isinstance(L, pm.SuperOp)
    np.testing.assert_allclose(L.to_array(), qutip.liouvillian(h, c).full(), atol=1e-14)
    rho = pm.dense(qutip.operator_to_vector(qutip.rand_dm(4, seed=1)).full())
    np.testing.assert_allclose(
        pm.matmul(L, rho).to_array(),
        qutip.liouvillian(h, c).full() @ rho.to_array(),
        atol=1e-12,
    )


def test_kron_sum_applies_without_storing():
    x = pm.csr([[0, 1], [1, 0]])
    z = pm.csr([[1, 0], [0, -1]])
    k = pm.kron_sum([2, 2, 2], [(1.0, [(0, x), (1, x)]), (0.5, [(2, z)])])
    assert isinstance(k, pm.KronSum) and k.shape == (8, 8)
    full = np.kron(np.kron(x.to_array(), x.to_array()), np.eye(2)) + 0.5 * np.kron(np.eye(4), z.to_array())
    np.testing.assert_allclose(k.to_array(), full, atol=1e-14)


# --- The QuTiP plugin beyond QuTiP's own data-layer tests -------------------------------------

qutip = pytest.importorskip("qutip")
import qutip_polymat  # noqa: E402


def _chain(n, gamma=0.1):
    sx, sy, sz, sm = qutip.sigmax(), qutip.sigmay(), qutip.sigmaz(), qutip.sigmam()

    def site(op, k):
        return qutip.tensor([op if j == k else qutip.qeye(2) for j in range(n)])

    h = sum(site(sx, k) * site(sx, k + 1) + site(sy, k) * site(sy, k + 1)
            + 0.7 * site(sz, k) * site(sz, k + 1) for k in range(n - 1))
    c_ops = [np.sqrt(gamma) * site(sm, k) for k in range(n)]
    psi = qutip.Qobj(np.array([np.cos(0.1 * k) + 1j * np.sin(0.37 * k) for k in range(2**n)]),
                     dims=[[2] * n, [1] * n]).unit()
    return h, c_ops, psi * psi.dag(), site(sz, 0)


def test_qobj_arithmetic_on_polymat_data():
    a = qutip.rand_herm(5, seed=2).to("polymat_csr")
    b = qutip.rand_herm(5, seed=4).to("polymat_dense")
    ref_a, ref_b = a.to("csr"), b.to("dense")
    for got, want in [(a + b, ref_a + ref_b), (a * b, ref_a * ref_b), (a.dag(), ref_a.dag()),
                      (a.expm(), ref_a.expm()), (2 * a - b, 2 * ref_a - ref_b)]:
        assert isinstance(got.data, qutip_polymat.PolymatData)
        np.testing.assert_allclose(got.full(), want.full(), atol=1e-12)
    assert abs(a.tr() - ref_a.tr()) < 1e-12
    np.testing.assert_allclose(a.eigenenergies(), ref_a.eigenenergies(), atol=1e-10)


def test_sesolve_and_mesolve_with_polymat_data():
    h, c_ops, rho0, z0 = _chain(4)
    t = np.linspace(0, 1, 5)
    ref = qutip.mesolve(h, rho0, t, c_ops, e_ops=[z0]).expect[0]
    hp = h.to("polymat_csr")
    got = qutip.mesolve(hp, rho0, t, [c.to("polymat_csr") for c in c_ops], e_ops=[z0]).expect[0]
    np.testing.assert_allclose(got, ref, atol=1e-6)
    psi0 = qutip.basis([2] * 4, [0, 1, 0, 1])
    ref = qutip.sesolve(h, psi0, t, e_ops=[z0]).expect[0]
    got = qutip.sesolve(hp, psi0, t, e_ops=[z0]).expect[0]
    np.testing.assert_allclose(got, ref, atol=1e-6)


def test_mesolve_with_the_lazy_liouvillian():
    h, c_ops, rho0, z0 = _chain(5)
    t = np.linspace(0, 1, 5)
    L = qutip_polymat.liouvillian(h, c_ops)
    assert isinstance(L.data, qutip_polymat.PolymatSuperOp) and L.issuper
    np.testing.assert_allclose(L.full(), qutip.liouvillian(h, c_ops).full(), atol=1e-14)
    ref = qutip.mesolve(h, rho0, t, c_ops, e_ops=[z0], options={"atol": 1e-10, "rtol": 1e-8}).expect[0]
    got = qutip.mesolve(L, rho0, t, e_ops=[z0], options={"atol": 1e-10, "rtol": 1e-8}).expect[0]
    np.testing.assert_allclose(got, ref, atol=1e-7)
    # The superoperator was applied, never converted to a stored kind.
    assert isinstance(L.data, qutip_polymat.PolymatSuperOp)


def test_steadystate_with_polymat_data():
    h, c_ops, _, _ = _chain(3, gamma=0.3)
    ref = qutip.steadystate(h, c_ops)
    got = qutip.steadystate(h.to("polymat_csr"), [c.to("polymat_csr") for c in c_ops])
    np.testing.assert_allclose(got.full(), ref.full(), atol=1e-8)


def test_a_stored_matrix_does_not_become_lazy():
    with pytest.raises(TypeError, match="cannot become a lazy"):
        qutip.qeye(4).to("polymat_superop")


def test_mesolve_with_a_liouvillian_of_local_factors():
    # H and the collapse operators as polymat KronSums: the lazy Liouvillian then applies
    # 2×2 factors instead of 2ᴺ × 2ᴺ ones.
    n = 4
    h, c_ops, rho0, z0 = _chain(n)
    sx, sy, sz, sm = (pm.csr(o.full()) for o in (qutip.sigmax(), qutip.sigmay(), qutip.sigmaz(), qutip.sigmam()))
    terms = []
    for k in range(n - 1):
        terms += [(1.0, [(k, sx), (k + 1, sx)]), (1.0, [(k, sy), (k + 1, sy)]),
                  (0.7, [(k, sz), (k + 1, sz)])]
    dims = [[2] * n, [2] * n]
    hl = qutip.Qobj(pm.kron_sum([2] * n, terms), dims=dims)
    assert isinstance(hl.data, qutip_polymat.PolymatKronSum)
    np.testing.assert_allclose(hl.full(), h.full(), atol=1e-14)
    cl = [qutip.Qobj(pm.kron_sum([2] * n, [(np.sqrt(0.1), [(k, sm)])]), dims=dims) for k in range(n)]
    L = qutip_polymat.liouvillian(hl, cl)
    t = np.linspace(0, 1, 5)
    opts = {"atol": 1e-10, "rtol": 1e-8}
    ref = qutip.mesolve(h, rho0, t, c_ops, e_ops=[z0], options=opts).expect[0]
    got = qutip.mesolve(L, rho0, t, e_ops=[z0], options=opts).expect[0]
    np.testing.assert_allclose(got, ref, atol=1e-7)


def test_the_polymat_integrator_evolves_exactly():
    h, c_ops, rho0, z0 = _chain(4)
    t = np.linspace(0, 1, 5)
    fine = {"atol": 1e-12, "rtol": 1e-10}
    ref = qutip.mesolve(h, rho0, t, c_ops, e_ops=[z0], options=fine).expect[0]
    L = qutip_polymat.liouvillian(h, c_ops)
    got = qutip.mesolve(L, rho0, t, e_ops=[z0], options={"method": "polymat"}).expect[0]
    np.testing.assert_allclose(got, ref, atol=1e-8)
    psi0 = qutip.basis([2] * 4, [0, 1, 0, 1])
    ref = qutip.sesolve(h, psi0, t, e_ops=[z0], options=fine).expect[0]
    got = qutip.sesolve(h.to("polymat_csr"), psi0, t, e_ops=[z0], options={"method": "polymat"}).expect[0]
    np.testing.assert_allclose(got, ref, atol=1e-8)
    with pytest.raises(ValueError, match="constant"):
        qutip.sesolve([h, [h, "t"]], psi0, t, options={"method": "polymat"})


def test_row_major_dense_reports_its_layout_and_entries():
    a = rand((3, 5))
    t = pm.transpose(pm.dense(a))      # polymat's Dense transpose is a row-major view
    assert pm.dense(a).fortran and not t.fortran
    np.testing.assert_array_equal(t.to_array(), a.T)
    np.testing.assert_allclose(pm.matmul(t, pm.dense(a)).to_array(), a.T @ a, atol=1e-12)


def test_native_specialisations_build_their_result_class():
    from polymat._polymat import QSpec
    from qutip.core.data import Data

    a = qutip_polymat.PolymatDense(rand((3, 3)))
    adj = QSpec("adjoint", "dense", qutip_polymat.PolymatDense, "adjoint_dense")
    got = adj(a)
    assert type(got) is qutip_polymat.PolymatDense and got.shape == (3, 3)
    np.testing.assert_allclose(got.to_array(), a.to_array().conj().T)
    assert got.copy().shape == (3, 3) and isinstance(got, Data)
    scaled = QSpec("mul", "dense", qutip_polymat.PolymatDense, "mul_dense")(a, 0.5)
    np.testing.assert_allclose(scaled.to_array(), 0.5 * a.to_array())
    assert abs(QSpec("trace", None, None, "trace_dense")(a) - np.trace(a.to_array())) < 1e-12
    with pytest.raises(TypeError, match="not a qutip.core.data.Data"):
        QSpec("adjoint", "dense", dict, "adjoint_dense")

    other = qutip_polymat.PolymatCsr(rand((3, 3)))

    class Elsewhere(qutip_polymat.PolymatDense):
        __slots__ = ()

        def __new__(cls, *args):
            return other

    with pytest.raises(TypeError, match="returned another type"):
        QSpec("adjoint", "dense", Elsewhere, "adjoint_dense")(a)
    with pytest.raises(TypeError, match="data arguments are needed"):
        adj()
