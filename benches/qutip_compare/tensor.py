"""Tensor products of local operators side by side: polymat's Csr `kron` against QuTiP 5's.

    cargo build --profile bench --example qutip_server
    python3 benches/qutip_compare/tensor.py            # every case (~1 min on 2 cores)
    python3 benches/qutip_compare/tensor.py --quick    # results of at most 10^4 entries

The anchor's `kron` cases multiply two random or two tridiagonal factors. Operators of many-body
quantum systems are built otherwise: an identity on every site but one or two
(`I ⊗ σx ⊗ I`), superoperators `I ⊗ H` and `Hᵀ ⊗ I` (QuTiP's `spre` / `spost`). Here a
factor is the identity ("eye"), a Pauli-like matrix with one entry a row ("perm": (i, i + 1 mod
n), random values; σx for n = 2), tridiagonal ("tridiag") or the anchor's 10 random entries a
row ("rand10"). Every case is timed in the same interleaved rounds, one thread:

* ``qutip``   ``qutip.core.data.kron`` on CSR inputs (QuTiP's ``kron_csr``);
* ``polymat`` ``polymat::kron(&a, &b, Out::Auto)`` on Csr inputs (``kron_csr``).

Each batch runs ``number`` calls (calibrated to >= 20 ms); the reported time is the median over
the rounds. Results are checked against QuTiP's (atol 1e-10, rtol 1e-7) before timing. Writes
the markdown table to stdout and ``target/qutip_compare/tensor_table.md``.
"""
import argparse
import os
import sys
import warnings

import numpy as np
import scipy.sparse as sp

warnings.filterwarnings("ignore")
import qutip.core.data as qd  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
import polymat_plugin as pp  # noqa: E402  (the server process and its file format)
from dia import PyTimer, agree, fmt, medians, polymat_timer, save_table  # noqa: E402


def factor(kind, n, tag):
    """An n×n factor as scipy CSR."""
    rng = np.random.default_rng([n, tag, len(kind)])

    def values(k):
        return rng.standard_normal(k) + 1j * rng.standard_normal(k)

    if kind == "eye":
        return sp.identity(n, dtype=complex, format="csr")
    if kind == "perm":
        return sp.csr_matrix((values(n), (np.arange(n), (np.arange(n) + 1) % n)), shape=(n, n))
    if kind == "tridiag":
        return sp.diags([values(n - 1), values(n), values(n - 1)], [-1, 0, 1],
                        shape=(n, n), format="csr")
    # rand10: 10 random columns a row (every column when n <= 10), duplicates summed
    per = min(10, n)
    rows = np.repeat(np.arange(n), per)
    cols = np.tile(np.arange(n), n) if per == n else rng.integers(0, n, n * per)
    m = sp.csr_matrix((values(n * per), (rows, cols)), shape=(n, n))
    m.sum_duplicates()
    return m


def cases(quick):
    out = [
        ("eye", 5, "perm", 2), ("perm", 2, "eye", 5),
        ("eye", 10, "tridiag", 10), ("tridiag", 10, "eye", 10),
        ("eye", 10, "rand10", 10), ("rand10", 10, "eye", 10),
        ("eye", 2, "perm", 2),
    ]
    if not quick:
        out += [
            ("eye", 50_000, "perm", 2), ("perm", 2, "eye", 50_000),
            ("eye", 1000, "tridiag", 100), ("tridiag", 100, "eye", 1000),
            ("eye", 1000, "eye", 100),
            # spre / spost of a 100 × 100 Hamiltonian: a 10^4 × 10^4 superoperator
            ("eye", 100, "rand10", 100), ("rand10", 100, "eye", 100),
        ]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    server = pp._server()
    rows = []
    for ka, na, kb, nb in cases(args.quick):
        a, b = factor(ka, na, 0), factor(kb, nb, 1)
        server.free_all()
        qa, qb = qd.CSR(a), qd.CSR(b)
        timers = {"qutip": PyTimer(lambda qa=qa, qb=qb: qd.kron(qa, qb))}
        path = os.path.join(pp._TMP, f"kron-{ka}{na}-{kb}{nb}.bin")
        with open(path, "wb") as f:
            pp._write_inputs_one(f, "CSR", a)
            pp._write_inputs_one(f, "CSR", b)
        timers["polymat"] = polymat_timer(server, "kron", path)
        os.unlink(path)
        want = timers["qutip"].result()
        if not agree(timers["polymat"].result(), want):
            raise SystemExit(f"kron {ka}{na} ⊗ {kb}{nb}: polymat disagrees with qutip")
        med = medians(timers, args.rounds)
        nnz = a.nnz * b.nnz
        rows.append((f"{ka}({na}) ⊗ {kb}({nb})", nnz, med))
        print(f"{ka}({na}) x {kb}({nb}) nnz {nnz}: " + "  ".join(
            f"{k} {fmt(v)}" for k, v in med.items()), file=sys.stderr, flush=True)
    lines = [
        "| a ⊗ b | entries | QuTiP | polymat | QuTiP/polymat | polymat ns/entry |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, nnz, med in rows:
        lines.append(
            f"| {name} | {nnz} | {fmt(med['qutip'])} | {fmt(med['polymat'])} | "
            f"**{med['qutip'] / med['polymat']:.2f}** | {med['polymat'] * 1e9 / nnz:.2f} |")
    behind = [r for r in rows if r[2]["qutip"] < r[2]["polymat"]]
    lines.append("")
    lines.append(f"polymat >= QuTiP in {len(rows) - len(behind)} of {len(rows)} cases.")
    save_table(lines, "tensor_table.md")


if __name__ == "__main__":
    main()
