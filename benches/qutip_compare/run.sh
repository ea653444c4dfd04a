#!/usr/bin/env bash
# The side-by-side benchmark: polymat vs QuTiP 5 vs scipy/numpy vs raw faer/sprs, every case of
# shared/bench/qutip_anchor.py, interleaved in the same timing rounds.
#
#   benches/qutip_compare/run.sh                 # full run (~25 min on the 2-core VM)
#   benches/qutip_compare/run.sh --quick         # reduced set (~1 min)
#   benches/qutip_compare/run.sh --only add      # any other qutip_anchor.py option
#
# Writes target/qutip_compare/results.json and prints the markdown table (also saved as
# target/qutip_compare/table.md) that docs/benchmarks.md keeps. ANCHOR points at the anchor's
# run_anchor.sh (default: ../shared/bench/run_anchor.sh beside the repository).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
anchor="${ANCHOR:-$root/../shared/bench/run_anchor.sh}"
out="$root/target/qutip_compare"
mkdir -p "$out"
cargo build --profile bench --example qutip_server --manifest-path "$root/Cargo.toml"
export POLYMAT_SERVER="$root/target/release/examples/qutip_server"
bash "$anchor" --json "$out/results.json" \
  --plugin "$root/benches/qutip_compare/polymat_plugin.py" "$@"
python3 "$root/benches/qutip_compare/table.py" "$out/results.json" | tee "$out/table.md"
