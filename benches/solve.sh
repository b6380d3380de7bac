#!/usr/bin/env bash
# Times whole solves side by side with the plain C++ reference solver (../shared/reference),
# alternating runs of ours and the baseline (A B A B …) so that both see the same machine at
# the same moment, and records medians, their ratio, CPU/wall and peak memory into
# reports/bench/solve.md.
#
# Usage: benches/solve.sh [PAIRS]   (default 3 pairs; each "pair" is a run of ours in the full
# layout, one of the reference, one of ours in the compact layout)
#
# Ours: the release build without the reporting layer, `age2048 solve --board 3x3` into a fresh
# data directory (Parquet, indexes, manifest written), in the full and in the compact layout.
# The reference: `oracle2048 3 3 --samples 0` (six variants valued in one backward pass, CSV
# summaries only). Then ours alone on 3x3 goal-1024 and 4x4 goal-16. Timings never go into tests.
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-3}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/age2048/target}"
cargo build --release --no-default-features --bin age2048 >&2
ours="$CARGO_TARGET_DIR/release/age2048"
ref_src=../shared/reference/oracle2048.cpp
ref="$CARGO_TARGET_DIR/oracle2048"
if [ ! -x "$ref" ] || [ "$ref_src" -nt "$ref" ]; then
  g++ -O2 -std=c++17 -pthread -o "$ref" "$ref_src"
fi
out=reports/bench
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A run's files are deleted right after it, and the next run starts no sooner than the kernel's
# dirty-expiry interval after that deletion: ext4 as this machine mounts it skips inodes deleted
# within that interval when it allocates new ones (`recently_deleted` in a kernel profile,
# ≈ 6 % of a 3x3 solve's CPU), scanning past each of them, so a solve that
# starts right after thousands of deletions (the previous solve's 3,000 files) pays seconds of
# kernel time for a cost it did not cause. Measured on 3x3: 2 to 5 s more wall and 2 s more
# system time right after the deletion than 40 s later.
expiry=$(( $(cat /proc/sys/vm/dirty_expire_centisecs 2>/dev/null || echo 3000) / 100 + 1 ))
deleted_at=0

# run NAME CMD… : one timed run; appends "wall user sys maxrss_kb" to $tmp/NAME
run() {
  local name=$1; shift
  local wait=$(( deleted_at + expiry - $(date +%s) ))
  if [ "$wait" -gt 0 ]; then sleep "$wait"; fi
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/t" "$@" > /dev/null 2>&1
  cat "$tmp/t" >> "$tmp/$name"
  rm -rf "$tmp/data" "$tmp/ref-out"
  deleted_at=$(date +%s)
}

# stats NAME : "median_wall min max median_cpu median_rss_MB cpu/wall"
stats() {
  python3 - "$tmp/$1" <<'EOF'
import sys, statistics as st
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
wall = [r[0] for r in rows]; cpu = [r[1] + r[2] for r in rows]; rss = [r[3] / 1024 for r in rows]
print(f"{st.median(wall):.2f} {min(wall):.2f} {max(wall):.2f} {st.median(cpu):.2f} "
      f"{st.median(rss):.0f} {st.median([c / w for c, w in zip(cpu, wall)]):.2f}")
EOF
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for i in $(seq "$pairs"); do
  run ours "$ours" solve --board 3x3 --data "$tmp/data" --quiet
  run ref "$ref" 3 3 --samples 0 --out "$tmp/ref-out"
  run compact "$ours" solve --board 3x3 --layout compact --data "$tmp/data" --quiet
done
run goal1024 "$ours" solve --board 3x3 --variant goal-1024 --data "$tmp/data" --quiet
run goal1024 "$ours" solve --board 3x3 --variant goal-1024 --data "$tmp/data" --quiet
run goal1024 "$ours" solve --board 3x3 --variant goal-1024 --data "$tmp/data" --quiet
run g16 "$ours" solve --board 4x4 --variant goal-16 --data "$tmp/data" --quiet
run g16 "$ours" solve --board 4x4 --variant goal-16 --data "$tmp/data" --quiet
run g16 "$ours" solve --board 4x4 --variant goal-16 --data "$tmp/data" --quiet
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

read -r o_med o_min o_max o_cpu o_rss o_par <<< "$(stats ours)"
read -r r_med r_min r_max r_cpu r_rss r_par <<< "$(stats ref)"
read -r c_med c_min c_max c_cpu c_rss c_par <<< "$(stats compact)"
read -r g_med g_min g_max g_cpu g_rss g_par <<< "$(stats goal1024)"
read -r f_med f_min f_max f_cpu f_rss f_par <<< "$(stats g16)"
ratio=$(python3 -c "print(f'{$r_med / $o_med:.2f}')")
ratio_compact=$(python3 -c "print(f'{$r_med / $c_med:.2f}')")
# The processor, which the times depend on as much as the code.
cpu=$(bash benches/cpu.sh)
{
  echo "# Solve benchmark"
  echo
  echo "\`make bench\` (\`benches/solve.sh $pairs\`), $(date -u +%Y-%m-%d). Machine: $(nproc) cores, $cpu,"
  echo "$(free -g | awk '/Mem:/{print $2}') GiB; load average before $load_before, after $load_after."
  echo
  echo "Ours: \`age2048 solve --board 3x3\` (release, no reporting layer; Parquet, indexes and manifest"
  echo "written, fresh directory). Reference: \`oracle2048 3 3 --samples 0\` from ../shared/reference"
  echo "(\`g++ -O2\`, 2 threads, six variants, CSV summaries only). Runs alternate ours (full"
  echo "layout), the reference and ours (\`--layout compact\`), $pairs times each; medians over the"
  echo "runs; CPU = user + system. Each run's files are deleted right after it, and no run starts"
  echo "within ${expiry} s (the kernel's dirty-expiry interval) of that deletion: ext4 scans past"
  echo "inodes deleted that recently whenever it allocates one."
  echo
  echo "| solve | runs | median wall (s) | min | max | median CPU (s) | CPU/wall | median peak RSS (MB) |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
  echo "| 3x3 expectation, ours | $pairs | $o_med | $o_min | $o_max | $o_cpu | $o_par | $o_rss |"
  echo "| 3x3 expectation, ours, \`--layout compact\` | $pairs | $c_med | $c_min | $c_max | $c_cpu | $c_par | $c_rss |"
  echo "| 3x3, reference solver | $pairs | $r_med | $r_min | $r_max | $r_cpu | $r_par | $r_rss |"
  echo "| 3x3 goal-1024, ours | 3 | $g_med | $g_min | $g_max | $g_cpu | $g_par | $g_rss |"
  echo "| 4x4 goal-16, ours | 3 | $f_med | $f_min | $f_max | $f_cpu | $f_par | $f_rss |"
  echo
  echo "Wall-time ratio, reference / ours (3x3, medians of the runs side by side): **$ratio** in the"
  echo "full layout, **$ratio_compact** in the compact layout."
} > "$out/solve.md"
cat "$out/solve.md"
