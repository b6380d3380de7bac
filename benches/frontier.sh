#!/usr/bin/env bash
# A solve longer than a session (issue "frontier"): run in the background as parts, each
# killed at will and resumed by the next (the solve picks up after its last finished age),
# every part recorded. Far too long for CI: run it by hand.
#
# Usage:
#   benches/frontier.sh start DATA "BOARD VARIANT [SOLVE ARGS…]"  start (or resume) a part
#   benches/frontier.sh stop DATA                                 kill the running part
#   benches/frontier.sh status DATA                               parts so far, last lines
#
# DATA/frontier/ keeps: spec (the solve's arguments, fixed at the first start), parts.tsv (one
# row a part: start, end, wall, peak RSS, exit status, processor, commit, the part's last
# progress line), part-N.log (progress lines, time-stamped), disk.tsv (every 10 s: work and
# data directory sizes in MB, free disk in MB, the solve's resident MB). A finished solve's figures are in its manifest; the
# record of the whole run (a row of reports/bench/scale.tsv) is made from parts.tsv by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
cmd=${1:?usage: benches/frontier.sh start|stop|status DATA [SPEC]}
data=${2:?DATA}
dir="$data/frontier"
mkdir -p "$dir"
case "$cmd" in
start)
  if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
    echo "a part is running (pid $(cat "$dir/pid"))" >&2
    exit 1
  fi
  if [ ! -f "$dir/spec" ]; then
    echo "${3:?SPEC: \"BOARD VARIANT [ARGS]\"}" > "$dir/spec"
  fi
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/age2048/target}"
  cargo build --release --no-default-features --bin age2048 >&2
  bin="$CARGO_TARGET_DIR/release/age2048"
  read -r board variant extra < "$dir/spec"
  part=$(( $(find "$dir" -name "part-*.log" | wc -l) + 1 ))
  [ -f "$dir/parts.tsv" ] || printf 'part\tstart\tend\twall_s\tpeak_rss_mb\texit\tcpu\tcommit\tlast\n' > "$dir/parts.tsv"
  cpu=$(bash benches/cpu.sh)
  commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src Cargo.toml || echo "+")
  # The part itself, detached: the solve's progress lines time-stamped into its log, its
  # peak from time(1), a row when it ends (killed or not); beside it the disk sampler.
  nohup bash -c '
    dir=$1 part=$2 bin=$3 board=$4 variant=$5 extra=$6 cpu=$7 commit=$8 data=$9
    start=$(date -u +%FT%TZ); t0=$(date +%s)
    ( while sleep 10; do
        w=$(du -sm "$data/.work" 2>/dev/null | cut -f1 | head -n1 || true)
        d=$(du -sm --exclude=.work --exclude=frontier "$data" 2>/dev/null | cut -f1 | head -n1 || true)
        f=$(df -m --output=avail "$data" | tail -n1 | tr -d " ")
        r=$(ps -o rss= -p "$(pgrep -f "^[^ ]*age2048 solve .*--data $data" | head -n1)" 2>/dev/null | tr -d " " || true)
        printf "%s\t%s\t%s\t%s\t%s\n" "$(date -u +%FT%TZ)" "${w:-0}" "${d:-0}" "$f" \
          "$(( ${r:-0} / 1024 ))" >> "$dir/disk.tsv"
      done ) &
    sampler=$!
    set +e
    # shellcheck disable=SC2086
    /usr/bin/time -f "%M" -o "$dir/part-$part.rss" "$bin" solve --board "$board" \
      --variant "$variant" --data "$data" $extra 2>&1 \
      | while IFS= read -r line; do printf "%s %s\n" "$(date -u +%T)" "$line"; done \
      >> "$dir/part-$part.log"
    status=${PIPESTATUS[0]}
    kill $sampler 2>/dev/null
    rss=$(tail -n1 "$dir/part-$part.rss" 2>/dev/null | grep -Eo "^[0-9]+$" || echo 0)
    # A killed part has no figure from time(1): the largest RSS sampled since it started.
    [ "$rss" -gt 0 ] || rss=$(( $(awk -F"\t" -v s="$start" '"'"'$1 >= s && $5 > m { m = $5 } END { print m + 0 }'"'"' "$dir/disk.tsv") * 1024 ))
    last=$(grep -E "forward: age|backward: age|solved in" "$dir/part-$part.log" | tail -n1 | cut -c10-)
    printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$part" "$start" "$(date -u +%FT%TZ)" \
      "$(( $(date +%s) - t0 ))" "$(( rss / 1024 ))" "$status" "$cpu" "$commit" "$last" \
      >> "$dir/parts.tsv"
    rm -f "$dir/pid"
  ' _ "$dir" "$part" "$bin" "$board" "$variant" "${extra:-}" "$cpu" "$commit" "$data" \
    > /dev/null 2>&1 &
  echo $! > "$dir/pid"
  echo "part $part started (pid $!): $board $variant ${extra:-}; log $dir/part-$part.log"
  ;;
stop)
  # The solve is the process tree's age2048: killing it ends the part, whose row is then
  # written by the part's own shell.
  pkill -f "^[^ ]*age2048 solve .*--data $data" || echo "no part running" >&2
  ;;
status)
  column -t -s $'\t' "$dir/parts.tsv" 2>/dev/null || true
  for f in $(find "$dir" -name "part-*.log" | sort -V | tail -n1); do
    echo "== $f"; tail -n 5 "$f"
  done
  tail -n 1 "$dir/disk.tsv" 2>/dev/null || true
  ;;
*)
  echo "usage: benches/frontier.sh start|stop|status DATA [SPEC]" >&2
  exit 2
  ;;
esac
