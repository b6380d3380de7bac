#!/usr/bin/env bash
# Where a big solve's memory goes, phase by phase (reports/bench/memory.md): one solve with
# `--trace-memory` (the process's peak resident memory at the end of every forward age and of
# each of the five phases of every backward age), then benches/memory_fit.py over the trace,
# written to reports/bench/memory_fit.md (whole-run peak, the largest age's phases, a fit of
# each phase against the sizes of the ages it holds, and its projection to 4x3's largest
# age); the trace itself is kept as reports/bench/memory.tsv. Far too long for CI (4x3
# goal-256 compact: about an hour): run it by hand.
#
# Usage: benches/memory.sh DATA_DIR "BOARD VARIANTS [EXTRA ARGS…]" [MIN_STATES]
#   e.g. benches/memory.sh /var/tmp/mem "4x3 goal-256 --layout compact"
# DATA_DIR is solved afresh (removed first).
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:?usage: benches/memory.sh DATA_DIR "BOARD VARIANTS [ARGS]" [MIN_STATES]}
spec=${2:?usage: benches/memory.sh DATA_DIR "BOARD VARIANTS [ARGS]" [MIN_STATES]}
min=${3:-4194304}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/age2048/target}"
cargo build --release --no-default-features --bin age2048 >&2
bin="$CARGO_TARGET_DIR/release/age2048"
read -r board variants extra <<< "$spec"
rm -rf "$data"
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src Cargo.toml || echo "+")
# shellcheck disable=SC2086
"$bin" solve --board "$board" --variant "$variants" --data "$data" --quiet \
  --trace-memory reports/bench/memory.tsv $extra
python3 benches/memory_fit.py reports/bench/memory.tsv --min-states "$min" \
  --label "$board $variants${extra:+ $extra} at $commit, $(date -u +%F)" \
  > reports/bench/memory_fit.md
echo "wrote reports/bench/memory_fit.md and memory.tsv" >&2
