#!/usr/bin/env bash
# Times the same solves in the policy and the compact layout side by side (A B A B …), so that
# a change that makes one layout slower than the other shows the day it lands: medians of wall
# and CPU time (user + system), their ratio policy / compact, and the policy files' bytes.
#
# Usage: benches/layouts.sh [PAIRS] [TABLE…]   (default 3 pairs; tables "3x3 goal-1024" and
#        "3x3 expectation"; a table is "BOARD VARIANT [more solve arguments]")
#
# Ours: the release build without the reporting layer, `age2048 solve --quiet` into a fresh
# directory each run; or the binary AGE2048 names, PROFILE naming its build (e.g. "dev"): the
# `build` column says which, as the same code's times differ between profiles. The runs'
# directories are removed together at the end: a run never starts right after thousands of
# deletions (see benches/solve.sh). Appends its rows to
# reports/bench/layouts.tsv and prints them as Markdown. Timings never go into tests.
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-3}
shift || true
tables=("$@")
if [ ${#tables[@]} -eq 0 ]; then
  tables=("3x3 goal-1024" "3x3 expectation")
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/age2048/target}"
bin=${AGE2048:-}
if [ -z "$bin" ]; then
  cargo build --release --no-default-features --bin age2048 >&2
  bin="$CARGO_TARGET_DIR/release/age2048"
  profile=release
else
  profile=${PROFILE:-unnamed}
fi
out=reports/bench
mkdir -p "$out"
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/layouts.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
cpu=$(bash benches/cpu.sh)
tsv=$out/layouts.tsv
[ -s "$tsv" ] || printf 'date\tcommit\tprocessor\tload_before\ttable\tlayout\truns\twall_median\tcpu_median\tpolicy_bytes\tbuild\n' > "$tsv"

n=0
# run TABLE LAYOUT : one timed run; appends "wall cpu" to $tmp/<slug>.<layout>
run() {
  local table=$1 layout=$2 board variant rest
  read -r board variant rest <<< "$table"
  n=$((n + 1))
  local dir=$tmp/run$n
  # shellcheck disable=SC2086
  /usr/bin/time -f "%e %U %S" -o "$tmp/t" "$bin" solve --board "$board" --variant "$variant" \
    $rest --layout "$layout" --data "$dir" --quiet > /dev/null 2>&1
  awk '{print $1, $2 + $3}' "$tmp/t" >> "$tmp/$(slug "$table").$layout"
  if [ "$layout" = policy ]; then
    find "$dir" -name '*.a2p' -printf '%s\n' | awk '{s += $1} END {print s + 0}' > "$tmp/$(slug "$table").bytes"
  fi
}
slug() { echo "$1" | tr -c 'A-Za-z0-9' '_'; }
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }

load=$(cut -d' ' -f1-3 /proc/loadavg)
for table in "${tables[@]}"; do
  for _ in $(seq "$pairs"); do
    run "$table" policy
    run "$table" compact
  done
done

echo "| table | build | processor | load before | commit | policy wall (s) | compact wall (s) | ratio | policy CPU (s) | compact CPU (s) | ratio | policy bytes |"
echo "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|"
for table in "${tables[@]}"; do
  s=$(slug "$table")
  pw=$(cut -d' ' -f1 "$tmp/$s.policy" | median)
  cw=$(cut -d' ' -f1 "$tmp/$s.compact" | median)
  pc=$(cut -d' ' -f2 "$tmp/$s.policy" | median)
  cc=$(cut -d' ' -f2 "$tmp/$s.compact" | median)
  bytes=$(cat "$tmp/$s.bytes")
  for l in policy compact; do
    w=$([ $l = policy ] && echo "$pw" || echo "$cw")
    c=$([ $l = policy ] && echo "$pc" || echo "$cc")
    b=$([ $l = policy ] && echo "$bytes" || echo "")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%d)" "$commit" "$cpu" \
      "$load" "$table" "$l" "$pairs" "$w" "$c" "$b" "$profile" >> "$tsv"
  done
  python3 - "$table" "$profile" "$cpu" "$load" "$commit" "$pw" "$cw" "$pc" "$cc" "$bytes" <<'EOF'
import sys
t, profile, cpu, load, commit, pw, cw, pc, cc, b = sys.argv[1:]
pw, cw, pc, cc = map(float, (pw, cw, pc, cc))
print(f"| {t} | {profile} | {cpu} | {load} | {commit} | {pw:.2f} | {cw:.2f} | {pw / cw:.2f} | "
      f"{pc:.2f} | {cc:.2f} | {pc / cc:.2f} | {int(b):,} |")
EOF
done
