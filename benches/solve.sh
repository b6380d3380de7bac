#!/usr/bin/env bash
# Times full solves (forward, backward and writing every file) with the release build and
# records the median wall time and the peak resident memory into reports/bench/.
# Usage: benches/solve.sh [RUNS] [BOARD...]   (default: 5 runs of 3x3)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}; shift || true
boards=${*:-3x3}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/age2048/target}"
cargo build --release --no-default-features --bin age2048 >&2
bin="$CARGO_TARGET_DIR/release/age2048"
out=reports/bench
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
{
  echo "# Solve benchmark"
  echo
  echo "Release build (\`cargo build --release --no-default-features\`), \`age2048 solve --board B\`"
  echo "into a fresh data directory, $runs runs each; wall time and peak RSS from /usr/bin/time."
  echo "Machine: $(nproc) cores, $cpu, $(free -g | awk '/Mem:/{print $2}') GiB; load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%Y-%m-%d)."
  echo
  echo "| board | variant | runs | median wall (s) | min (s) | max (s) | median peak RSS (MB) |"
  echo "|---|---|---|---|---|---|---|"
} > "$tmp/report.md"
for b in $boards; do
  for v in expectation goal-1024; do
    [ "$b" = 3x3 ] || [ "$v" = expectation ] || continue
    : > "$tmp/times"
    for i in $(seq "$runs"); do
      rm -rf "$tmp/data"
      /usr/bin/time -f "%e %M" -o "$tmp/t" "$bin" solve --board "$b" --variant "$v" --data "$tmp/data" --quiet 2>/dev/null
      cat "$tmp/t" >> "$tmp/times"
    done
    n=$(wc -l < "$tmp/times")
    mid=$(( (n + 1) / 2 ))
    t_med=$(cut -d' ' -f1 "$tmp/times" | sort -n | sed -n "${mid}p")
    t_min=$(cut -d' ' -f1 "$tmp/times" | sort -n | head -1)
    t_max=$(cut -d' ' -f1 "$tmp/times" | sort -n | tail -1)
    m_med=$(cut -d' ' -f2 "$tmp/times" | sort -n | sed -n "${mid}p")
    echo "| $b | $v | $n | $t_med | $t_min | $t_max | $(( m_med / 1024 )) |" >> "$tmp/report.md"
  done
done
cp "$tmp/report.md" "$out/solve.md"
cat "$out/solve.md"
