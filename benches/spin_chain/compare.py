#!/usr/bin/env python3
"""Side by side on the XXZ spin chain: polymat against QuTiP 5 and scipy, in the same run.

For N = 12, 14, 16 (``--sizes``) and each operation, the implementations are timed in
interleaved rounds (QuTiP/scipy here, polymat through ``examples/chain_bench``), and the table
reports each one's median over the rounds and the ratio reference/polymat (> 1: polymat is
faster).

* ``eigs``: the 4 lowest eigenvalues, no vectors: ``Qobj.eigenenergies(sparse=True,
  eigvals=4, sort="low")`` (ARPACK through scipy's ``eigsh``, tol = 0) against
  ``polymat::eigs`` with ``count: Some(4)``.
* ``expm_multiply``: ``exp(-0.5i H) psi``: ``scipy.sparse.linalg.expm_multiply`` against
  ``polymat::expm_multiply``.
* ``matvec``: ``H @ psi`` (scipy CSR) against ``polymat::matmul`` (Csr·Dense).
* ``build``: H itself, 3(N - 1) terms ``c * kron(kron(I, P⊗P), I)`` summed one by one, in
  scipy (``xxz`` below) and in polymat (``examples/common/xxz.rs``): the same calls.

The thread count is pinned with ``--threads`` for both sides (OMP_NUM_THREADS, OPENBLAS,
POLYMAT_NUM_THREADS). Usage: ``benches/spin_chain/run.sh [--sizes 12 14 16] [--rounds 5]
[--ops eigs expm_multiply matvec build]``.
"""
import argparse
import os
import subprocess
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--sizes", type=int, nargs="+", default=[12, 14, 16])
p.add_argument("--rounds", type=int, default=5)
p.add_argument("--threads", type=int, default=1)
p.add_argument("--ops", nargs="+", default=["eigs", "expm_multiply", "matvec", "build"],
               choices=["eigs", "expm_multiply", "matvec", "build"])
p.add_argument("--bin", default=os.environ.get("CHAIN_BENCH", "target/release/examples/chain_bench"))
args = p.parse_args()
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(args.threads)
os.environ["POLYMAT_NUM_THREADS"] = str(args.threads)

import numpy as np  # noqa: E402
import qutip as qt  # noqa: E402
import scipy  # noqa: E402
import scipy.sparse as sp  # noqa: E402
import scipy.sparse.linalg as sla  # noqa: E402

X = sp.csr_matrix(np.array([[0, 1], [1, 0]], dtype=complex))
Y = sp.csr_matrix(np.array([[0, -1j], [1j, 0]], dtype=complex))
Z = sp.csr_matrix(np.array([[1, 0], [0, -1]], dtype=complex))


def xxz(n):
    h = sp.csr_matrix((2**n, 2**n), dtype=complex)
    for op, c in ((X, 1.0), (Y, 1.0), (Z, 0.7)):
        pp = sp.kron(op, op, format="csr")
        for i in range(n - 1):
            left = sp.identity(2**i, dtype=complex, format="csr")
            right = sp.identity(2 ** (n - i - 2), dtype=complex, format="csr")
            h = h + c * sp.kron(sp.kron(left, pp, format="csr"), right, format="csr")
    h.eliminate_zeros()
    return h


def start(dim):
    k = np.arange(dim)
    v = np.cos(0.1 * k) + 1j * np.sin(0.37 * k)
    return v / np.linalg.norm(v)


def timed(f, reps):
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def polymat(n, op, reps):
    out = subprocess.run([args.bin, str(n), op, str(reps)], capture_output=True, text=True,
                         check=True)
    return float(out.stdout.split()[0])


rows = []
print(f"# qutip {qt.__version__}, scipy {scipy.__version__}, numpy {np.__version__}, "
      f"threads {args.threads}, rounds {args.rounds}", file=sys.stderr)
for n in args.sizes:
    h = xxz(n)
    q = qt.Qobj(h, dims=[[2] * n, [2] * n]).to("CSR")
    psi = start(2**n)
    reps = {"eigs": 1 if n >= 16 else 3, "expm_multiply": 1 if n >= 16 else 5, "matvec": 50,
            "build": 1 if n >= 18 else 3}
    ref = {
        "eigs": ("qutip", lambda: q.eigenenergies(sparse=True, eigvals=4, sort="low")),
        "expm_multiply": ("scipy", lambda: sla.expm_multiply(-0.5j * h, psi)),
        "matvec": ("scipy", lambda: h @ psi),
        "build": ("scipy", lambda n=n: xxz(n)),
    }
    ref = {op: ref[op] for op in args.ops}
    times = {op: ([], []) for op in ref}
    for _ in range(args.rounds):
        for op, (_, f) in ref.items():
            times[op][0].append(timed(f, reps[op]))
            times[op][1].append(polymat(n, op, reps[op]))
    for op, (name, _) in ref.items():
        r, m = np.median(times[op][0]), np.median(times[op][1])
        rows.append((op, n, h.shape[0], h.nnz, name, r, m))
        print(f"  {op} N={n}: {name} {r * 1e3:.3f} ms, polymat {m * 1e3:.3f} ms", file=sys.stderr)

print("| operation | N | dim | nnz | reference | reference (ms) | polymat (ms) | reference / polymat |")
print("|---|---:|---:|---:|---|---:|---:|---:|")
for op, n, dim, nnz, name, r, m in rows:
    print(f"| {op} | {n} | {dim} | {nnz} | {name} | {r * 1e3:.3f} | {m * 1e3:.3f} | {r / m:.2f} |")
