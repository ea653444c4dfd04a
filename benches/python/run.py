"""The QuTiP plugin measured against QuTiP's own data layer (one process, one thread each).

    python benches/python/run.py [--mesolve 6 8 10] [--quick]

Prints three tables (medians over batches of calls in the same run, QuTiP's and polymat's
batches alternated; ratios QuTiP / polymat):
1. the cost of a call: polymat's Python function, the plugin's specialisation called
   directly, and QuTiP's dispatcher reaching it, at n = 2;
2. QuTiP's data-layer operations on polymat's types against QuTiP's own types, n = 10 … 10⁴;
3. ``mesolve`` of the dissipative XXZ chain (issue "Operators too large to store") with QuTiP's
   default data, and with polymat's lazy Liouvillian built from local factors (KronSum) or
   from QuTiP's stored operators.
Set POLYMAT_THREADS=1 / OMP_NUM_THREADS=1 for one-thread figures (the script sets both).
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("POLYMAT_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import qutip  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from qutip.core import data as qd  # noqa: E402

import polymat as pm  # noqa: E402
import qutip_polymat  # noqa: E402
from qutip_polymat import PolymatCsr, PolymatDense  # noqa: E402

pm.set_threads(1)


def batch_size(fn, target=50e-6):
    """Calls of `fn` that take about `target` seconds together (at least one): a sub-microsecond
    call timed alone would be mostly the clock's own cost."""
    fn()
    k = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(k):
            fn()
        if time.perf_counter() - t0 >= target or k >= 1 << 16:
            return k
        k *= 2


def batch(fn, k):
    """Seconds per call over one batch of `k` calls."""
    t0 = time.perf_counter()
    for _ in range(k):
        fn()
    return (time.perf_counter() - t0) / k


def median_time(fn, min_time=0.2):
    """The median over batches of `fn`'s time per call."""
    k = batch_size(fn)
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < min_time or len(times) < 5:
        times.append(batch(fn, k))
    return statistics.median(times)


def paired_times(fa, fb, min_time=0.2):
    """Medians of the time per call of `fa` and of `fb`, their batches alternated so both see
    the same load on a shared machine."""
    ka, kb = batch_size(fa), batch_size(fb)
    ta, tb, start = [], [], time.perf_counter()
    while time.perf_counter() - start < 2 * min_time or len(ta) < 5:
        ta.append(batch(fa, ka))
        tb.append(batch(fb, kb))
    return statistics.median(ta), statistics.median(tb)


def per_call(min_time):
    print("## 1. cost of a call at n = 2 (median over batches, ns)\n")
    print("| call | ns |")
    print("|---|---:|")
    a = qutip.rand_herm(2, density=1)
    qa = a.data.copy()
    pa = qutip_polymat.PolymatDense(a.full())
    raw = pa._pm
    spec = qd.add[PolymatDense, PolymatDense, PolymatDense]
    rows = [
        ("polymat.add (Python → Rust)", lambda: pm.add(raw, raw)),
        ("plugin specialisation, called directly", lambda: spec(pa, pa)),
        ("qutip.data.add(PolymatDense, PolymatDense)", lambda: qd.add(pa, pa)),
        ("qutip.data.add(Dense, Dense) (QuTiP's own)", lambda: qd.add(qa, qa)),
        ("polymat.trace", lambda: pm.trace(raw)),
        ("qutip.data.trace(PolymatDense)", lambda: qd.trace(pa)),
        ("qutip.data.trace(Dense) (QuTiP's own)", lambda: qd.trace(qa)),
    ]
    for name, fn in rows:
        print(f"| {name} | {median_time(fn, min_time) * 1e9:.0f} |")
    print()


def random_sparse(n, seed):
    rng = np.random.default_rng(seed)
    density = min(1.0, 5.0 / n)
    m = sp.random(n, n, density=density, random_state=rng, format="csr")
    return qutip.Qobj(m + 1j * sp.random(n, n, density=density, random_state=rng, format="csr"))


def operations(sizes, min_time):
    print("## 2. QuTiP data-layer operations: QuTiP's types against polymat's (median over batches, µs)\n")
    print("| operation | n | QuTiP | polymat | QuTiP / polymat |")
    print("|---|---:|---:|---:|---:|")
    for n in sizes:
        a, b = random_sparse(n, 1), random_sparse(n, 2)
        rng = np.random.default_rng(3)
        # (qutip.rand_ket's default Haar distribution builds an n × n unitary: not at 10⁴.)
        ket = qutip.Qobj(rng.normal(size=(n, 1)) + 1j * rng.normal(size=(n, 1))).unit()
        cases = [("CSR", "polymat_csr", a, b, ket)]
        if n <= 1000:
            cases.append(("Dense", "polymat_dense", a.to("dense"), b.to("dense"), ket))
        for qt, pt, x, y, k in cases:
            qx, qy, qk = x.to(qt).data, y.to(qt).data, k.to("dense").data
            px, py, pk = x.to(pt).data, y.to(pt).data, k.to("polymat_dense").data
            ops = [
                ("add", lambda x, y, k: qd.add(x, y)),
                ("matmul (operator)", lambda x, y, k: qd.matmul(x, y)),
                ("matmul (ket)", lambda x, y, k: qd.matmul(x, k)),
                ("mul", lambda x, y, k: qd.mul(x, 0.5j)),
                ("adjoint", lambda x, y, k: qd.adjoint(x)),
                ("expect", lambda x, y, k: qd.expect(x, k)),
                ("trace", lambda x, y, k: qd.trace(x)),
                ("kron", lambda x, y, k: qd.kron(x, y)),
            ]
            for name, op in ops:
                if name == "kron" and (n > 100 or (n == 100 and qt == "Dense")):
                    continue
                if name == "matmul (operator)" and qt == "Dense" and n > 1000:
                    continue
                tq, tp = paired_times(
                    lambda: op(qx, qy, qk), lambda: op(px, py, pk), min_time
                )
                print(f"| {name} ({qt}) | {n} | {tq * 1e6:.1f} | {tp * 1e6:.1f} | {tq / tp:.2f} |")
    print()


def chain(n, gamma=0.1):
    sx, sy, sz, sm = qutip.sigmax(), qutip.sigmay(), qutip.sigmaz(), qutip.sigmam()

    def site(op, k):
        return qutip.tensor([op if j == k else qutip.qeye(2) for j in range(n)])

    h = sum(site(sx, k) * site(sx, k + 1) + site(sy, k) * site(sy, k + 1)
            + 0.7 * site(sz, k) * site(sz, k + 1) for k in range(n - 1))
    c_ops = [np.sqrt(gamma) * site(sm, k) for k in range(n)]
    psi = qutip.Qobj(np.array([np.cos(0.1 * k) + 1j * np.sin(0.37 * k) for k in range(2**n)]),
                     dims=[[2] * n, [1] * n]).unit()
    return h, c_ops, psi * psi.dag(), site(sz, 0)


def local_chain(n, gamma=0.1):
    """The same chain's H and collapse operators as polymat KronSum Qobjs (local factors)."""
    sx, sy, sz, sm = (pm.csr(o.full()) for o in (qutip.sigmax(), qutip.sigmay(), qutip.sigmaz(), qutip.sigmam()))
    terms = []
    for k in range(n - 1):
        terms += [(1.0, [(k, sx), (k + 1, sx)]), (1.0, [(k, sy), (k + 1, sy)]),
                  (0.7, [(k, sz), (k + 1, sz)])]
    dims = [[2] * n, [2] * n]
    h = qutip.Qobj(pm.kron_sum([2] * n, terms), dims=dims)
    c_ops = [qutip.Qobj(pm.kron_sum([2] * n, [(np.sqrt(gamma), [(k, sm)])]), dims=dims)
             for k in range(n)]
    return h, c_ops


def mesolve(sizes):
    print("## 3. mesolve of the dissipative XXZ chain, t = 0 … 1 (5 points), ⟨Z₀⟩ (seconds)\n")
    print("| N | QuTiP: build L | QuTiP: total | polymat, lazy L of local factors | ratio | "
          "polymat, lazy L of QuTiP's stored H, Cₖ | ratio | local factors, method=\"polymat\" | "
          "ratio | max abs(Δ⟨Z₀⟩) ODE, polymat |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    t = np.linspace(0, 1, 5)
    for n in sizes:
        h, c_ops, rho0, z0 = chain(n)
        t0 = time.perf_counter()
        qutip.liouvillian(h, c_ops)
        tb = time.perf_counter() - t0
        t0 = time.perf_counter()
        ref = qutip.mesolve(h, rho0, t, c_ops, e_ops=[z0]).expect[0]
        tq = time.perf_counter() - t0
        t0 = time.perf_counter()
        hl, cl = local_chain(n)
        L = qutip_polymat.liouvillian(hl, cl)
        got = qutip.mesolve(L, rho0, t, e_ops=[z0]).expect[0]
        tl = time.perf_counter() - t0
        t0 = time.perf_counter()
        L = qutip_polymat.liouvillian(h.to("polymat_csr"), [c.to("polymat_csr") for c in c_ops])
        got2 = qutip.mesolve(L, rho0, t, e_ops=[z0]).expect[0]
        ts = time.perf_counter() - t0
        t0 = time.perf_counter()
        hl, cl = local_chain(n)
        L = qutip_polymat.liouvillian(hl, cl)
        got3 = qutip.mesolve(L, rho0, t, e_ops=[z0], options={"method": "polymat"}).expect[0]
        tk = time.perf_counter() - t0
        err = max(float(np.max(np.abs(np.asarray(g) - np.asarray(ref)))) for g in (got, got2))
        errk = float(np.max(np.abs(np.asarray(got3) - np.asarray(ref))))
        print(f"| {n} | {tb:.2f} | {tq:.2f} | {tl:.2f} | {tq / tl:.2f} | {ts:.2f} | {tq / ts:.2f} "
              f"| {tk:.2f} | {tq / tk:.2f} | {err:.1e}, {errk:.1e} |")
    print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[10, 100, 1000, 10000])
    ap.add_argument("--mesolve", type=int, nargs="*", default=[6, 8])
    ap.add_argument("--quick", action="store_true", help="shorter timings (0.05 s per case)")
    args = ap.parse_args()
    min_time = 0.05 if args.quick else 0.2
    per_call(min_time)
    operations(args.sizes, min_time)
    if args.mesolve:
        mesolve(args.mesolve)


if __name__ == "__main__":
    main()
