"""Markdown table of a qutip_anchor.py + polymat plugin run, with ratios and the issue's targets.

    python3 benches/qutip_compare/table.py RESULTS.json > table.md

Ratios are of medians from the same interleaved group: `qutip/polymat` > 1 means polymat is
faster than QuTiP's dispatcher; `ref/polymat` compares with scipy (Csr inputs) or numpy (Dense);
`polymat/raw` is polymat over the raw faer or sprs call on the same inputs (1.00 = no overhead).
"""
import json
import sys


def fmt(s):
    if s is None:
        return ""
    if s < 1e-6:
        return f"{s * 1e9:.1f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.2f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.3f} s"


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else ""


def main(path):
    with open(path) as f:
        data = json.load(f)
    meta, recs = data[0], data[1:]
    groups = {}
    for r in recs:
        groups.setdefault(r["group"], {})[r["impl"]] = r
    print(f"QuTiP {meta['qutip']}, numpy {meta['numpy']}, scipy {meta['scipy']}, "
          f"{meta['cpu_model']} ({meta['cpu_count']} CPUs), started {meta['started']}, "
          f"malloc: {meta['malloc']}.\n")
    print("| op | types | n | structure | thr | qutip | scipy/numpy | polymat | polymat-2t "
          "| faer/sprs | qutip/polymat | ref/polymat | polymat/raw | check |")
    print("|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    stats = {"all": [0, 0], "small": [0, 0], "big2t": [0, 0], "raw": [0, 0], "numpy": [0, 0]}
    misses = []
    for g, by in groups.items():
        r0 = next(iter(by.values()))
        if r0["op"] == "noop":
            continue
        med = {k: v["seconds_median"] for k, v in by.items()}
        q, p = med.get("qutip"), med.get("polymat")
        ref = med.get("scipy") or med.get("numpy")
        p2 = med.get("polymat-2t")
        raw = med.get("faer") or med.get("sprs")
        check = by["polymat"]["check"] if "polymat" in by else "—"
        print(f"| {r0['op']} | {r0['types']} | {r0['n']} | {r0['structure']} | {r0['threads']} "
              f"| {fmt(q)} | {fmt(ref)} | {fmt(p)} | {fmt(p2)} | {fmt(raw)} | {ratio(q, p)} "
              f"| {ratio(ref, p)} | {ratio(p, raw)} | {check} |")
        if q and p:
            key = f"{r0['op']}[{r0['types']}] n={r0['n']} {r0['structure']} thr={r0['threads']}"
            stats["all"][1] += 1
            stats["all"][0] += q >= p
            if q < p:
                misses.append(f"polymat < QuTiP: {key} ({q / p:.2f}×)")
            if r0["n"] <= 100:
                stats["small"][1] += 1
                stats["small"][0] += q >= 3 * p
            if r0["n"] >= 10_000 and p2:
                stats["big2t"][1] += 1
                stats["big2t"][0] += q >= 1.5 * p2
        if raw and p and r0["section"] == "kernel":
            stats["raw"][1] += 1
            limit = 1.05 if "faer" in by else 1.0
            stats["raw"][0] += p <= limit * raw
        if r0["op"] in ("add", "mul", "expect", "inner") and "numpy" in med and p \
                and "CSR" not in r0["types"] and r0["section"] == "kernel":
            stats["numpy"][1] += 1
            stats["numpy"][0] += p < med["numpy"]
    print()
    print(f"- polymat ≥ QuTiP: {stats['all'][0]} of {stats['all'][1]} cases")
    print(f"- n ≤ 100, polymat ≥ 3× QuTiP: {stats['small'][0]} of {stats['small'][1]} cases")
    print(f"- n ≥ 10⁴, polymat on 2 threads ≥ 1.5× QuTiP: "
          f"{stats['big2t'][0]} of {stats['big2t'][1]} cases")
    print(f"- kernel cases within 1.05× of faer (Dense) / ≤ 1.00× of sprs (Csr): "
          f"{stats['raw'][0]} of {stats['raw'][1]}")
    print(f"- Dense add/mul/expect/inner faster than numpy: "
          f"{stats['numpy'][0]} of {stats['numpy'][1]}")
    for m in misses:
        print(f"  - {m}")


if __name__ == "__main__":
    main(sys.argv[1])
