#!/usr/bin/env bash
# The spin-chain side-by-side (eigs, expm_multiply, H·psi at N = 12, 14, 16) against QuTiP 5 and
# scipy in the same run; see compare.py. Needs python3 with numpy, scipy and qutip.
#
#   benches/spin_chain/run.sh                     # 1 thread, 5 rounds
#   benches/spin_chain/run.sh --threads 2 --rounds 3
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cargo build --profile bench --example chain_bench --manifest-path "$root/Cargo.toml"
CHAIN_BENCH="$root/target/release/examples/chain_bench" python3 "$root/benches/spin_chain/compare.py" "$@"
