"""scipy's side of benches/tools/solve_probe.rs: the same shifted 2-D Laplacian (complex), solved
three times by scipy.sparse.linalg.cg / bicgstab / gmres (rtol 1e-8; gmres with scipy's restart
of 20 unless a third argument gives another). Prints each time and the true relative residual.

    python3 benches/iterative/solve_scipy.py 300 gmres [RESTART]
"""
import sys
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla

k, meth = int(sys.argv[1]), sys.argv[2]
restart = int(sys.argv[3]) if len(sys.argv) > 3 else None
eye = sp.identity(k, dtype=complex)
t = sp.diags([-1.0, 0.0, -1.0], [-1, 0, 1], shape=(k, k), dtype=complex)
a = (sp.kron(eye, t) + sp.kron(t, eye) + 4.1 * sp.identity(k * k, dtype=complex)).tocsr()
b = np.cos(0.1 * np.arange(k * k)).astype(complex)
solver = {"cg": sla.cg, "bicgstab": sla.bicgstab, "gmres": sla.gmres}[meth]
extra = {"restart": restart} if meth == "gmres" and restart else {}
for _ in range(3):
    t0 = time.perf_counter()
    x, info = solver(a, b, rtol=1e-8, maxiter=100000, **extra)
    dt = time.perf_counter() - t0
    rel = np.linalg.norm(a @ x - b) / np.linalg.norm(b)
    print(f"{meth} {dt * 1e3:.3f} ms info {info} residual {rel:.3e}")
