#!/usr/bin/env bash
# The dissipative XXZ chain side by side: polymat's lazy Liouvillian against QuTiP's stored one
# and scipy's expm_multiply (see compare.py). Needs python3 with numpy, scipy and qutip.
#
#   benches/open_chain/run.sh                          # N = 6, 8, 10; 1 thread, 3 rounds
#   benches/open_chain/run.sh --sizes 12 13 --rounds 1 # polymat alone past --qutip-max
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cargo build --release --example open_bench --manifest-path "$root/Cargo.toml"
OPEN_BENCH="$root/target/release/examples/open_bench" python3 "$root/benches/open_chain/compare.py" "$@"
