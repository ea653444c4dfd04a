#!/usr/bin/env python3
"""The dissipative XXZ chain side by side: polymat's lazy Liouvillian against QuTiP 5's stored
one and scipy's ``expm_multiply``, in the same run.

The chain of ``examples/open_chain.rs`` (J = 1, Delta = 0.7, open ends, sqrt(0.1) sigmam() on
every site; rho0 = |psi><psi| with psi_k ~ cos(0.1 k) + i sin(0.37 k)). For each N
(``--sizes``), in separate processes (so that each one's peak memory is its own):

* QuTiP: ``liouvillian(H, c_ops)`` (build), ``scipy.sparse.linalg.expm_multiply(L, vec rho0)``
  to t = 1 (evolve), ``mesolve`` at t = 0, 0.25, ..., 1 (with ``--mesolve``), peak memory;
* polymat: ``examples/open_bench`` (``benches/open_chain/bench.rs``): the lazy Liouvillian,
  ``expm_multiply`` to t = 1, four steps of 0.25 (the points), peak memory.

Each side runs ``--rounds`` times, alternating; the table gives the medians and the ratios
QuTiP/polymat (> 1: polymat faster or smaller). QuTiP is skipped past ``--qutip-max`` spins
(it needs ~5 GB at N = 12 and more than 20 GB at N = 13). Usage:
``benches/open_chain/run.sh [--sizes 6 8 10] [--rounds 3] [--threads 1] [--mesolve]``.
"""
import argparse
import os
import statistics
import subprocess
import sys

p = argparse.ArgumentParser()
p.add_argument("--sizes", type=int, nargs="+", default=[6, 8, 10])
p.add_argument("--rounds", type=int, default=3)
p.add_argument("--threads", type=int, default=1)
p.add_argument("--qutip-max", type=int, default=11)
p.add_argument("--mesolve", action="store_true")
p.add_argument("--bin", default=os.environ.get("OPEN_BENCH", "target/release/examples/open_bench"))
p.add_argument("--qutip-child", type=int, help=argparse.SUPPRESS)
args = p.parse_args()
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(args.threads)
os.environ["POLYMAT_NUM_THREADS"] = str(args.threads)


def qutip_child(n):
    """One QuTiP measurement in this (fresh) process: prints key=value pairs."""
    import resource
    import time

    import numpy as np
    import qutip as qt
    import scipy.sparse.linalg as sla

    def site(op, k):
        return qt.tensor([op if i == k else qt.qeye(2) for i in range(n)])

    h = 0
    for k in range(n - 1):
        for op, c in ((qt.sigmax(), 1.0), (qt.sigmay(), 1.0), (qt.sigmaz(), 0.7)):
            h = h + c * site(op, k) * site(op, k + 1)
    c_ops = [np.sqrt(0.1) * site(qt.sigmam(), k) for k in range(n)]
    kk = np.arange(2**n)
    v = np.cos(0.1 * kk) + 1j * np.sin(0.37 * kk)
    psi = qt.Qobj(v / np.linalg.norm(v), dims=[[2] * n, [1] * n])
    rho0 = psi * psi.dag()
    z0 = site(qt.sigmaz(), 0)
    t = time.perf_counter()
    lv = qt.liouvillian(h, c_ops)
    build = time.perf_counter() - t
    lm = lv.data.as_scipy()
    vec = qt.operator_to_vector(rho0).full().ravel()
    t = time.perf_counter()
    out = sla.expm_multiply(lm, vec)
    evolve = time.perf_counter() - t
    r1 = qt.vector_to_operator(qt.Qobj(out.reshape(-1, 1), dims=[[[2] * n, [2] * n], [1]]))
    z1 = (z0 * r1).tr().real
    line = f"n={n} build={build:.6f} evolve={evolve:.6f} z1={z1:.12f} nnz={lm.nnz}"
    if args.mesolve:
        t = time.perf_counter()
        qt.mesolve(h, rho0, [0, 0.25, 0.5, 0.75, 1.0], c_ops, e_ops=[z0])
        line += f" mesolve={time.perf_counter() - t:.6f}"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(line + f" peak_mb={peak:.0f}")


if args.qutip_child is not None:
    qutip_child(args.qutip_child)
    sys.exit(0)


def parse(line):
    return {k: (float(v) if k != "n" else int(v)) for k, v in (f.split("=") for f in line.split())}


def run(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()
    return parse(out.splitlines()[-1])


rows = []
for n in args.sizes:
    ours, theirs = [], []
    for _ in range(args.rounds):
        ours.append(run([args.bin, str(n), "--points"]))
        if n <= args.qutip_max:
            theirs.append(run([sys.executable, __file__, "--qutip-child", str(n),
                               "--threads", str(args.threads)] + (["--mesolve"] if args.mesolve else [])))
    med = lambda rs, k: statistics.median(r[k] for r in rs) if rs and k in rs[0] else float("nan")
    rows.append((n, ours, theirs, med))
    z_ours = ours[0]["z1"]
    z_q = theirs[0]["z1"] if theirs else float("nan")
    print(f"N={n}: <Z0>(1) polymat {z_ours:+.12f}  QuTiP/scipy {z_q:+.12f}", file=sys.stderr)

print(f"one thread each side (threads = {args.threads}), {args.rounds} rounds, medians")
print("| N | dim of L | stored entries (QuTiP) | build L: QuTiP / polymat | evolve to t = 1: scipy / polymat | ratio | mesolve (5 points) / polymat 4 steps | peak memory: QuTiP / polymat | memory ratio |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for n, ours, theirs, med in rows:
    dim = 4**n
    nnz = med(theirs, "nnz")
    qb, pb = med(theirs, "build"), med(ours, "build")
    qe, pe = med(theirs, "evolve"), med(ours, "evolve")
    qm, pm = med(theirs, "mesolve"), med(ours, "points")
    qp, pp = med(theirs, "peak_mb"), med(ours, "peak_mb")
    nnz_s = f"{nnz:,.0f}".replace(",", " ") if nnz == nnz else "—"
    print(f"| {n} | {dim:,} | {nnz_s} | {qb:.3f} s / {pb:.4f} s | {qe:.3f} s / {pe:.3f} s | "
          f"{qe / pe:.2f}× | {qm:.3f} s / {pm:.3f} s | {qp:.0f} MB / {pp:.0f} MB | {qp / pp:.1f}× |".replace(",", " "))
