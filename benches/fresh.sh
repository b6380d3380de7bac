#!/usr/bin/env bash
# What a newcomer sees (issue 45): a fresh clone, an empty build cache and DuckDB cache (its
# own empty HOME), no CARGO_TARGET_DIR, the crates already downloaded (`cargo fetch` first,
# untimed), on an idle machine: the wall time of `make solve report`, then of `make test`,
# then of CI's `bash .ci/run` from another fresh clone with empty caches. Each is timed as a
# whole (GNU time) and its log kept; one row per command is appended to
# reports/bench/fresh.tsv with the processor (benches/cpu.sh), the commit and the load before.
#
# Usage: benches/fresh.sh [WORK_DIR]      (default /var/tmp/age2048-fresh; about 20-30 min)
#        SKIP_CI=1 benches/fresh.sh        (the two README commands only)
# Run it on an idle machine: anything else running makes the figures wrong.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
work=${1:-/var/tmp/age2048-fresh}
commit=$(git rev-parse --short HEAD)
cpu=$(bash benches/cpu.sh)
tsv=$repo/reports/bench/fresh.tsv
[ -f "$tsv" ] || printf 'date\tcommit\tcpu\tcommand\twall_s\tuser_s\tsys_s\tload_before\n' > "$tsv"

# The toolchain and the downloaded crates stay where they are; everything else is new.
export RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup}
export CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
unset CARGO_TARGET_DIR DUCKDB_LIB_DIR
(cd "$repo" && cargo fetch --locked >/dev/null)

rm -rf "$work"
mkdir -p "$work"
timed() { # NAME DIR COMMAND…: runs COMMAND in DIR with the fresh HOME, appends its row
  local name=$1 dir=$2
  shift 2
  local load
  load=$(cut -d' ' -f1 /proc/loadavg)
  echo "== $name (load $load)" >&2
  (cd "$dir" && HOME=$work/home /usr/bin/time -f '%e %U %S' -o "$work/$name.time" "$@" \
    > "$work/$name.log" 2>&1) || { echo "$name failed: see $work/$name.log" >&2; exit 1; }
  read -r wall user sys < "$work/$name.time"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%F)" "$commit" "$cpu" "$name" \
    "$wall" "$user" "$sys" "$load" >> "$tsv"
  echo "$name: $wall s wall ($cpu)" >&2
}

mkdir -p "$work/home"
git clone -q "$repo" "$work/clone"
timed solve-report "$work/clone" make solve report
timed test "$work/clone" make test

[ "${SKIP_CI:-0}" = 1 ] && exit 0
# CI: another clean clone, empty caches again.
rm -rf "$work/home" "$work/clone"
mkdir -p "$work/home"
git clone -q "$repo" "$work/ci"
timed ci "$work/ci" env CI=true bash .ci/run
