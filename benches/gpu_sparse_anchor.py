#!/usr/bin/env python3
"""GPU anchor for GpuCsr and the cuSOLVER kernels, the pattern of shared/bench/gpu_anchor.py:
CuPy's cupyx.scipy.sparse SpMV (one ket) and SpMM (16 columns) on the XXZ chain of N = 16 … 22
spins (J = 1, Δ = 0.7, open ends: examples/common/xxz.rs), and cupy.linalg / torch.linalg eigh
and svd (complex128) at n = 256 … 4096, the cases of `cargo bench --features cuda --bench gpu`.
Median of timed calls, each followed by a device sync. Prints JSON lines
{"lib", "op", "n", "median_ns", "runs"}; a library that is missing is skipped with a note."""
import json
import statistics
import sys
import time

SPINS = [16, 18, 20, 22]
SIZES = [256, 512, 1024, 2048, 4096]


def bench(fn, sync, budget=2.0, min_runs=5, max_runs=200):
    fn()
    sync()  # warm-up (plans, kernels, pool)
    times = []
    start = time.perf_counter()
    while len(times) < min_runs or (time.perf_counter() - start < budget and len(times) < max_runs):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e9, len(times)


def emit(lib, op, n, ns, runs):
    print(json.dumps({"lib": lib, "op": op, "n": n, "median_ns": ns, "runs": runs}), flush=True)


def xxz(n, j=1.0, delta=0.7):
    import scipy.sparse as sp

    x = sp.csr_matrix([[0, 1], [1, 0]], dtype=complex)
    y = sp.csr_matrix([[0, -1j], [1j, 0]], dtype=complex)
    z = sp.csr_matrix([[1, 0], [0, -1]], dtype=complex)
    h = sp.csr_matrix((1 << n, 1 << n), dtype=complex)
    for p, c in ((x, j), (y, j), (z, delta)):
        pp = sp.kron(p, p, format="csr")
        for i in range(n - 1):
            term = sp.kron(sp.kron(sp.identity(1 << i, format="csr"), pp), sp.identity(1 << (n - i - 2)), format="csr")
            h = h + c * term
    h.sum_duplicates()
    h.eliminate_zeros()
    return h.tocsr()


def cupy_cases():
    import cupy as cp
    import cupyx.scipy.sparse as cps

    sync = cp.cuda.Device().synchronize
    for n in SPINS:
        h = cps.csr_matrix(xxz(n))
        for op, cols in (("spmv", 1), ("spmm", 16)):
            x = cp.random.default_rng(7).standard_normal((1 << n, cols)) + 0.5j
            x = x.astype(cp.complex128)
            v = x[:, 0].copy() if cols == 1 else x
            emit("cupy", op, n, *bench(lambda: h @ v, sync))
    rng = cp.random.default_rng(6)
    for n in SIZES:
        a = (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))).astype(cp.complex128)
        hm = a + a.conj().T
        emit("cupy", "eigh", n, *bench(lambda: cp.linalg.eigh(hm), sync, min_runs=3))
        emit("cupy", "svd", n, *bench(lambda: cp.linalg.svd(a, full_matrices=False), sync, min_runs=3))


def torch_cases():
    import torch

    dev = torch.device("cuda")
    sync = torch.cuda.synchronize
    g = torch.Generator(device=dev).manual_seed(6)
    for n in SIZES:
        a = torch.randn(n, n, dtype=torch.complex128, device=dev, generator=g)
        hm = a + a.conj().T
        emit("torch", "eigh", n, *bench(lambda: torch.linalg.eigh(hm), sync, min_runs=3))
        emit("torch", "svd", n, *bench(lambda: torch.linalg.svd(a, full_matrices=False), sync, min_runs=3))


if __name__ == "__main__":
    for name, cases in (("cupy", cupy_cases), ("torch", torch_cases)):
        try:
            cases()
        except ImportError as e:
            print(f"# {name} skipped: {e}", file=sys.stderr)
