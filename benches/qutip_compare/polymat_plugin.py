"""polymat plugin for shared/bench/qutip_anchor.py (``--plugin``).

Adds three implementations to every anchor case, timed in the same interleaved rounds as
QuTiP, scipy and numpy:

* ``polymat``     the public API (``polymat::add(&a, &b, out)``, ...), so dispatch included,
                  with ``POLYMAT_NUM_THREADS`` = the anchor's ``--threads`` (1 by default);
* ``polymat-2t``  the same with 2 threads, for cases with n >= 10 000 (the issue's 2-thread
                  target), when the anchor itself runs single-threaded;
* ``faer`` / ``sprs``  the underlying library called directly on the same input buffers
                  (Dense cases through faer, Csr cases through sprs), the raw-kernel baseline;
                  left out for the n = 10 000 dense cases, to keep the run short. It is
                  registered before ``polymat``, so that polymat's timed block follows a block
                  on its own inputs, as QuTiP's follows numpy's.

Each is an *external timer*: a long-lived Rust process (``examples/qutip_server``, built by
``benches/qutip_compare/run.sh``) loads the case's inputs once and, on request, runs ``number``
calls back to back and reports the elapsed time, so the pipe round trip is not counted.
The server binary is ``$POLYMAT_SERVER`` or ``target/release/examples/qutip_server``.
"""
import atexit
import os
import subprocess
import sys
import tempfile

import numpy as np
import scipy.sparse as sp

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))
_BIN = os.environ.get("POLYMAT_SERVER",
                      os.path.join(_ROOT, "target", "release", "examples", "qutip_server"))
_TMP = tempfile.mkdtemp(prefix="polymat-bench-")
_THREADS = int(os.environ.get("OMP_NUM_THREADS", "1") or 1)


class _Server:
    """The server process; each loaded case carries its own thread count."""

    def __init__(self):
        self.proc = subprocess.Popen([_BIN], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)
        self.live = []
        mode = self.request("malloc")
        if mode != "reuse":
            print(f"    [polymat] server malloc mode: {mode}", file=sys.stderr)

    def request(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline().strip()
        if not reply:
            raise RuntimeError(f"polymat server died on {line!r}")
        if reply == "unsupported":
            return None
        if not reply.startswith("ok"):
            raise RuntimeError(f"polymat server: {reply} (request {line!r})")
        return reply[3:]

    def free_all(self):
        for case_id in self.live:
            self.request(f"free {case_id}")
        self.live = []

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()


_SERVER = []


def _server():
    """The live server, started (again, if an earlier one died) on demand."""
    if _SERVER and _SERVER[0].proc.poll() is not None:
        print(f"    [polymat] server exited ({_SERVER[0].proc.returncode}); restarting",
              file=sys.stderr)
        _SERVER.clear()
    if not _SERVER:
        _SERVER.append(_Server())
    return _SERVER[0]


@atexit.register
def _shutdown():
    for s in _SERVER:
        s.close()
    for f in os.listdir(_TMP):
        os.unlink(os.path.join(_TMP, f))
    os.rmdir(_TMP)


def _write_inputs_one(f, tname, obj):
    """One matrix block of the server's input format (``CSR`` or ``Dense``)."""
    if tname == "CSR":
        m = sp.csr_array(obj)
        f.write(b"CSR %d %d %d\n" % (m.shape[0], m.shape[1], m.nnz))
        f.write(np.ascontiguousarray(m.indptr, dtype="<i8").tobytes())
        f.write(np.ascontiguousarray(m.indices, dtype="<i8").tobytes())
        f.write(np.ascontiguousarray(m.data, dtype="<c16").tobytes())
    else:
        a = np.asarray(obj, dtype=np.complex128)
        f.write(b"Dense %d %d\n" % a.shape)
        # column-major
        f.write(np.asfortranarray(a).tobytes(order="F"))


def _write_inputs(path, inputs):
    with open(path, "wb") as f:
        for tname, obj in inputs:
            _write_inputs_one(f, tname, obj)


def _read_result(path):
    with open(path, "rb") as f:
        head = f.readline().split()
        rows, cols = int(head[1]), int(head[2])
        if head[0] == b"Dense":
            v = np.frombuffer(f.read(rows * cols * 16), dtype="<c16")
            return v.reshape((rows, cols), order="F")
        nnz = int(head[3])
        indptr = np.frombuffer(f.read((rows + 1) * 8), dtype="<i8")
        indices = np.frombuffer(f.read(nnz * 8), dtype="<i8")
        data = np.frombuffer(f.read(nnz * 16), dtype="<c16")
        return sp.csr_array((data, indices, indptr), shape=(rows, cols))


class _Timer:
    """External timer (see qutip_anchor.py): ``number`` calls timed inside the server."""

    def __init__(self, server, case_id):
        self.server, self.case_id = server, case_id

    def timeit(self, number):
        return float(self.server.request(f"time {self.case_id} {number}"))

    def result(self):
        path = os.path.join(_TMP, f"result-{self.case_id}.bin")
        kind = self.server.request(f"result {self.case_id} {path}")
        if kind.startswith("scalar"):
            _, re, im = kind.split()
            return complex(float(re), float(im))
        try:
            return _read_result(path)
        finally:
            os.unlink(path)


def _load(server, variant, threads, case, path):
    scale = complex(case["params"].get("scale", 0))
    out = case["out"] or "-"
    if case["op"] == "to":
        out = case["types"].split("->")[1]
    reply = server.request(f"load {variant} {threads} {case['op']} {out} {scale.real!r} "
                           f"{scale.imag!r} {path}")
    if reply is None:
        return None
    server.live.append(reply)
    return _Timer(server, reply)


def build(case):
    if case["op"] == "noop":
        return None
    # The raw kernel first: the anchor times its variants in this order, rotated by one each
    # round, so polymat's block mostly follows the raw kernel's block on the same inputs, as
    # QuTiP's follows numpy's on the array they share (docs/benchmarks.md, "The order of the
    # variants").
    plans = []
    kinds = {t for t, _ in case["inputs"]}
    if case["op"] != "to" and case["out"] is None:
        if kinds == {"Dense"} and case["n"] < 10_000:
            plans.append(("faer", _THREADS, "faer"))
        elif case["inputs"][0][0] == "CSR":
            plans.append(("sprs", _THREADS, "sprs"))
    plans.append(("polymat", _THREADS, "polymat"))
    if _THREADS == 1 and case["n"] >= 10_000:
        plans.append(("polymat-2t", 2, "polymat"))
    # Inputs of the previous case are no longer needed: free them before loading new ones.
    server = _server()
    server.free_all()
    path = os.path.join(_TMP, "inputs.bin")
    _write_inputs(path, case["inputs"])
    try:
        variants = {}
        for name, threads, variant in plans:
            t = _load(server, variant, threads, case, path)
            if t is not None:
                variants[name] = t
        return variants or None
    finally:
        os.unlink(path)


IMPLS = {"polymat": build}
