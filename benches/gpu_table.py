#!/usr/bin/env python3
"""Markdown table of `cargo bench --features cuda --bench gpu`: criterion's medians per case,
with the ratios measured in the same run (CPU / GPU, polymat / raw cuBLAS for matmul, and the
raw-call variants: a fresh result each call, Gauss's Zgemm3m; expm with and without Gauss)."""
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/criterion")


def median(group, variant, n):
    p = root / group / variant / str(n) / "new" / "estimates.json"
    if not p.exists():
        return None
    return json.loads(p.read_text())["median"]["point_estimate"]  # ns


def fmt(ns):
    if ns is None:
        return "–"
    for unit, f in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= f:
            return f"{ns / f:.3g} {unit}"
    return f"{ns:.3g} ns"


print("| op | n | polymat GpuDense | raw cuBLAS | polymat / raw | Dense (CPU) | CPU / GPU |")
print("|---|---:|---:|---:|---:|---:|---:|")
for group in ("gpu_matmul", "gpu_add", "gpu_expm"):
    for n in (256, 512, 1024, 2048, 4096, 8192):
        g = median(group, "polymat_gpu", n)
        if g is None:
            continue
        raw = median(group, "cublas_raw", n)
        cpu = median(group, "dense_cpu", n)
        ratio = f"{g / raw:.3f}" if raw else "–"
        speed = f"{cpu / g:.1f}×" if cpu else "–"
        print(f"| {group[4:]} | {n} | {fmt(g)} | {fmt(raw)} | {ratio} | {fmt(cpu)} | {speed} |")

print()
print("| n | matmul: raw Zgemm, fresh result | raw Zgemm3m | expm: default (Gauss) | expm, Zgemm | Zgemm / Gauss |")
print("|---:|---:|---:|---:|---:|---:|")
for n in (256, 512, 1024, 2048, 4096, 8192):
    fresh = median("gpu_matmul", "cublas_raw_fresh", n)
    m3 = median("gpu_matmul", "cublas_raw_3m", n)
    eg = median("gpu_expm", "polymat_gpu", n)
    ez = median("gpu_expm", "polymat_gpu_zgemm", n)
    if not any((fresh, m3, eg, ez)):
        continue
    ratio = f"{ez / eg:.3f}" if eg and ez else "–"
    print(f"| {n} | {fmt(fresh)} | {fmt(m3)} | {fmt(eg)} | {fmt(ez)} | {ratio} |")

print()
print("| op | n | polymat GPU | CPU | CPU / GPU |")
print("|---|---:|---:|---:|---:|")
for group, cpu_variant, sizes in (
    ("gpu_eigh", "dense_cpu", (256, 512, 1024, 2048, 4096)),
    ("gpu_svd", "dense_cpu", (256, 512, 1024, 2048, 4096)),
    ("gpu_spmv", "csr_cpu", (16, 18, 20, 22)),
    ("gpu_spmm", "csr_cpu", (16, 18, 20, 22)),
):
    for n in sizes:
        g = median(group, "polymat_gpu", n)
        if g is None:
            continue
        cpu = median(group, cpu_variant, n)
        speed = f"{cpu / g:.1f}×" if cpu else "–"
        label = f"N = {n}" if group in ("gpu_spmv", "gpu_spmm") else str(n)
        print(f"| {group[4:]} | {label} | {fmt(g)} | {fmt(cpu)} | {speed} |")
