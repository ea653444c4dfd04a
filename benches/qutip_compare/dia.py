"""Dia side by side: polymat's Dia kernels against QuTiP 5's Dia kernels and polymat's own Csr.

    cargo build --profile bench --example qutip_server
    python3 benches/qutip_compare/dia.py            # n = 10 ... 10^5 (~6 min on 2 cores)
    python3 benches/qutip_compare/dia.py --quick    # n = 10 ... 10^4

Operators: a banded complex matrix with 3 diagonals (offsets -1, 0, 1: "tridiag") or 11
(offsets -5 ... 5: "band11"), Hermitian so that `isherm` scans every entry; states are dense
kets. Every case is timed in the same interleaved rounds for four implementations, one thread:

* ``qutip``       QuTiP's dispatcher on ``qutip.core.data.Dia`` inputs (``qd.matmul(a, b)``, ...),
                  which runs its Dia kernels (``matmul_dia_dense_dense``, ``add_dia``, ...);
* ``qutip-csr``   the same operator as QuTiP CSR, for reference;
* ``polymat-dia`` ``polymat::matmul(&a, &b, Out::Auto)`` ... on ``Dia`` inputs (the Dia kernels);
* ``polymat-csr`` the same call on the operator as ``Csr``.

Each batch runs ``number`` calls (calibrated to >= 20 ms); the reported time is the median over
the rounds. Results are checked against QuTiP's (atol 1e-10, rtol 1e-7) before timing. Writes the
markdown table to stdout and ``target/qutip_compare/dia_table.md``.
"""
import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

warnings.filterwarnings("ignore")
import qutip.core.data as qd  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
import polymat_plugin as pp  # noqa: E402  (the server process and its file format)

OFFSETS = {"tridiag": list(range(-1, 2)), "band11": list(range(-5, 6))}


def banded(n, structure, tag=0):
    """A Hermitian banded n×n matrix as scipy dia_matrix."""
    rng = np.random.default_rng([n, tag, len(OFFSETS[structure])])
    diags = {}
    for o in OFFSETS[structure]:
        if o < 0 or o >= n:
            continue
        m = n - o
        v = rng.standard_normal(m) + 1j * rng.standard_normal(m)
        if o == 0:
            v = v.real + 0j
        diags[o] = v
        if o > 0:
            diags[-o] = v.conj()
    offs = sorted(diags)
    return sp.diags([diags[o] for o in offs], offs, shape=(n, n), format="dia")


def ket(n, tag=5):
    rng = np.random.default_rng([n, tag])
    return (rng.standard_normal((n, 1)) + 1j * rng.standard_normal((n, 1))) / np.sqrt(n)


def write_inputs(path, inputs):
    with open(path, "wb") as f:
        for tname, obj in inputs:
            if tname == "Dia":
                m = sp.dia_matrix(obj)
                order = np.argsort(m.offsets)
                offs = np.ascontiguousarray(m.offsets[order], dtype="<i8")
                # scipy may store fewer than `cols` values per diagonal: pad to cols
                data = np.zeros((len(offs), m.shape[1]), dtype="<c16")
                w = min(m.data.shape[1], m.shape[1])
                data[:, :w] = m.data[order, :w]
                # polymat keeps the padding zero
                for k, o in enumerate(offs):
                    j = np.arange(m.shape[1])
                    data[k, (j - o < 0) | (j - o >= m.shape[0])] = 0
                f.write(b"Dia %d %d %d\n" % (m.shape[0], m.shape[1], len(offs)))
                f.write(offs.tobytes())
                f.write(data.tobytes())
            else:
                pp._write_inputs_one(f, tname, obj)


def cases(quick):
    sizes = (10, 100, 1000, 10_000) if quick else (10, 100, 1000, 10_000, 100_000)
    out = []
    for structure in OFFSETS:
        for n in sizes:
            A = lambda n=n, s=structure: banded(n, s, 0)  # noqa: E731
            B = lambda n=n, s=structure: banded(n, s, 1)  # noqa: E731
            K = lambda n=n: ket(n)  # noqa: E731
            out += [
                ("matmul", structure + "@ket", n, [A, K], ["op", "ket"]),
                ("matmul", structure + "@" + structure, n, [A, B], ["op", "op"]),
                ("add", structure, n, [A, B], ["op", "op"]),
                ("mul", structure, n, [A], ["op"]),
                ("adjoint", structure, n, [A], ["op"]),
                ("trace", structure, n, [A], ["op"]),
                ("expect", structure + ",ket", n, [A, K], ["op", "ket"]),
                ("isherm", structure, n, [A], ["op"]),
            ]
            if n <= 300:
                out.append(("kron", structure, n, [A, B], ["op", "op"]))
    return out


SCALE = 2j


def qutip_call(op, ins):
    f = {
        "matmul": lambda: qd.matmul(ins[0], ins[1]),
        "add": lambda: qd.add(ins[0], ins[1]),
        "mul": lambda: qd.mul(ins[0], SCALE),
        "adjoint": lambda: qd.adjoint(ins[0]),
        "trace": lambda: qd.trace(ins[0]),
        "expect": lambda: qd.expect(ins[0], ins[1]),
        "isherm": lambda: qd.isherm(ins[0], 1e-12),
        "kron": lambda: qd.kron(ins[0], ins[1]),
    }[op]
    return f


class PyTimer:
    def __init__(self, f):
        self.f = f

    def timeit(self, number):
        f = self.f
        t = time.perf_counter()
        for _ in range(number):
            f()
        return time.perf_counter() - t

    def result(self):
        return self.f()


def normalise(x):
    if isinstance(x, qd.Data):
        x = x.as_scipy() if hasattr(x, "as_scipy") else x.to_array()
    if isinstance(x, (bool, np.bool_)):
        return complex(int(x))
    if sp.issparse(x):
        return sp.csr_array(x)
    return x


def agree(a, b):
    a, b = normalise(a), normalise(b)
    if np.isscalar(a) or np.isscalar(b):
        return abs(complex(a) - complex(b)) <= 1e-10 + 1e-7 * abs(complex(b))
    if sp.issparse(a) or sp.issparse(b):
        d = sp.csr_array(a) - sp.csr_array(b)
        bn = abs(sp.csr_array(b)).max() if sp.csr_array(b).nnz else 0.0
        return d.nnz == 0 or abs(d).max() <= 1e-10 + 1e-7 * bn
    return np.allclose(a, b, atol=1e-10, rtol=1e-7)


def polymat_timer(server, op, path):
    scale = complex(SCALE) if op == "mul" else 0j
    reply = server.request(f"load polymat 1 {op} - {scale.real!r} {scale.imag!r} {path}")
    if reply is None:
        raise RuntimeError(f"polymat server does not run {op}")
    server.live.append(reply)
    return pp._Timer(server, reply)


def calibrate(timer, target=0.02):
    number = 1
    while True:
        t = timer.timeit(number)
        if t >= target or number >= 1 << 24:
            return number
        number = max(number * 2, int(number * target / max(t, 1e-9) * 1.2))


def medians(timers, rounds):
    """Calibrates every timer, then times them in `rounds` interleaved rounds; returns each
    one's median seconds a call."""
    numbers = {k: calibrate(t) for k, t in timers.items()}
    samples = {k: [] for k in timers}
    for _ in range(rounds):
        for k, t in timers.items():
            samples[k].append(t.timeit(numbers[k]) / numbers[k])
    return {k: statistics.median(v) for k, v in samples.items()}


def save_table(lines, name):
    """Prints the markdown table and writes it to target/qutip_compare/NAME."""
    table = "\n".join(lines)
    print(table)
    out = os.path.join(pp._ROOT, "target", "qutip_compare")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, name), "w") as f:
        f.write(table + "\n")


def fmt(s):
    for unit, f in (("s", 1), ("ms", 1e3), ("µs", 1e6), ("ns", 1e9)):
        if s * f >= 1:
            return f"{s * f:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", nargs="*", default=None, help="operations to run (default: all)")
    ap.add_argument("--n", nargs="*", type=int, default=None, help="sizes to run (default: all)")
    args = ap.parse_args()
    server = pp._server()
    rows = []
    for op, structure, n, makers, roles in cases(args.quick):
        if (args.only and op not in args.only) or (args.n and n not in args.n):
            continue
        mats = [m() for m in makers]
        q_dia = [qd.Dia(m) if r == "op" else qd.Dense(m) for m, r in zip(mats, roles)]
        q_csr = [qd.CSR(sp.csr_matrix(m)) if r == "op" else qd.Dense(m)
                 for m, r in zip(mats, roles)]
        server.free_all()
        timers = {
            "qutip": PyTimer(qutip_call(op, q_dia)),
            "qutip-csr": PyTimer(qutip_call(op, q_csr)),
        }
        # The server caches inputs by path: one file per kind.
        for kind, name in (("Dia", "polymat-dia"), ("CSR", "polymat-csr")):
            path = os.path.join(pp._TMP, f"{kind}-{op}-{structure}-{n}.bin")
            write_inputs(path, [(kind if r == "op" else "Dense", m) for m, r in zip(mats, roles)])
            timers[name] = polymat_timer(server, op, path)
            os.unlink(path)
        want = timers["qutip"].result()
        for name, t in timers.items():
            if not agree(t.result(), want):
                raise SystemExit(f"{op} {structure} n={n}: {name} disagrees with qutip")
        med = medians(timers, args.rounds)
        rows.append((op, structure, n, med))
        print(f"{op:8} {structure:18} {n:>7}  " + "  ".join(
            f"{k} {fmt(v)}" for k, v in med.items()), file=sys.stderr, flush=True)
    lines = [
        "| op | operator | n | QuTiP Dia | polymat Dia | QuTiP/polymat | polymat Csr | "
        "Csr/Dia (polymat) | QuTiP CSR |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for op, structure, n, med in rows:
        lines.append(
            f"| {op} | {structure} | {n} | {fmt(med['qutip'])} | {fmt(med['polymat-dia'])} | "
            f"**{med['qutip'] / med['polymat-dia']:.2f}** | {fmt(med['polymat-csr'])} | "
            f"{med['polymat-csr'] / med['polymat-dia']:.2f} | {fmt(med['qutip-csr'])} |")
    behind = [r for r in rows if r[3]["qutip"] < r[3]["polymat-dia"]]
    lines.append("")
    lines.append(f"polymat Dia >= QuTiP Dia in {len(rows) - len(behind)} of {len(rows)} cases.")
    save_table(lines, "dia_table.md")


if __name__ == "__main__":
    main()
