#!/usr/bin/env bash
# Times ours on the six goal tables of reports/bench/peers.md (2x4 and 3x3, goals 128 to 1024)
# in every layout (full, compact, policy), the layouts alternating within each round, and
# appends a row a table and layout (median wall and CPU seconds) to reports/bench/peers.tsv.
# The peer (2048EndgameTablebase's native core, C++/OpenMP, reached through its Python
# binding) runs beside ours where PEER names a command that builds one of its tables, given as
# `2x4-128` … `3x3-1024`, and prints `TABLE WALL_S CPU_S` (benches/peer/run.sh, after
# benches/peer/build.sh); its rows say `peer`.
#
# Usage: [PEER=CMD] benches/peers.sh [ROUNDS]   (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/age2048/target}"
bin=${AGE2048:-}
if [ -z "$bin" ]; then
  cargo build --release --no-default-features --bin age2048 >&2
  bin="$CARGO_TARGET_DIR/release/age2048"
fi
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/peers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tsv=reports/bench/peers.tsv
[ -s "$tsv" ] || printf 'date\tcommit\tprocessor\tload_before\ttable\tlayout\truns\twall_median\tcpu_median\n' > "$tsv"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
cpu=$(bash benches/cpu.sh)
load=$(cut -d' ' -f1-3 /proc/loadavg)
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }
n=0
for table in "2x4 goal-128" "2x4 goal-256" "2x4 goal-512" "3x3 goal-256" "3x3 goal-512" "3x3 goal-1024"; do
  read -r board variant <<< "$table"
  for _ in $(seq "$rounds"); do
    if [ -n "${PEER:-}" ]; then
      # The peer first in each round, then our layouts in their order.
      $PEER "$board-${variant#goal-}" | awk '{print $2, $3}' >> "$tmp/$board.$variant.peer"
    fi
    for layout in full compact policy; do
      n=$((n + 1))
      /usr/bin/time -f "%e %U %S" -o "$tmp/t" "$bin" solve --board "$board" --variant "$variant" \
        --layout "$layout" --data "$tmp/run$n" --quiet > /dev/null 2>&1
      awk '{print $1, $2 + $3}' "$tmp/t" >> "$tmp/$board.$variant.$layout"
    done
  done
  for layout in ${PEER:+peer} full compact policy; do
    f=$tmp/$board.$variant.$layout
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%d)" "$commit" "$cpu" "$load" \
      "$table" "$layout" "$rounds" "$(cut -d' ' -f1 "$f" | median)" "$(cut -d' ' -f2 "$f" | median)" \
      | tee -a "$tsv"
  done
done
