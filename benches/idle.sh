#!/usr/bin/env bash
# Where a solve leaves a core idle: what the solve ran on one CPU while the other idled.
#
# Usage: benches/idle.sh BIN [solve arguments…]   e.g.
#        benches/idle.sh target/release/age2048 --board 3x3 --variant expectation --layout compact
#
# Samples every CPU (`perf record -a`, call graphs from DWARF, ~1 kHz) over one
# `BIN solve --quiet` into a fresh directory on $TMPDIR, then, for each sample of a CPU in the
# idle loop, takes the other CPU's sample nearest in time: if the solve ran there, its stack
# (the solver's frames, rayon's and the standard library's left out) counts as "ran while the
# other core idled". What leads the list is work no other thread shared: serial steps, the
# tails of parallel loops, a thread waited on. Prints the idle samples' total and the stacks
# that ran beside them, most first. Needs perf (Debian's `linux-perf`) and a machine of two
# CPUs or more (the pairs are taken among all CPUs' samples in time order). Timings never go
# into tests.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BIN [solve arguments…]" >&2; exit 2; }
bin=$1
shift
command -v perf >/dev/null || { echo "$0: perf is not installed" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/idle.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
perf record -q -F 997 -a --call-graph dwarf,16384 -o "$tmp/perf.data" \
  "$bin" solve --quiet --data "$tmp/data" "$@" >/dev/null 2>&1
comm=$(basename "$bin" | cut -c1-15)
perf script -i "$tmp/perf.data" -F time,cpu,comm,ip,sym 2>/dev/null |
  python3 "$(dirname "$0")/idle.py" "$comm"
