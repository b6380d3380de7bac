#!/usr/bin/env bash
# usage: run.sh TABLE   (TABLE: 2x4-128 2x4-256 2x4-512 3x3-256 3x3-512 3x3-1024)
# Builds the peer's table for that board and goal into a fresh temporary directory, times the
# build (/usr/bin/time: wall, user, sys), reads the start values back (untimed, to the log),
# deletes the table and prints:  TABLE wall_seconds cpu_seconds   (cpu = user + sys)
# Env: PEER_THREADS (default 2) = RunOptions.num_threads; PEER_TMP (default /tmp) = where the
# table is written (the core uses O_DIRECT file I/O, so not tmpfs); PEER_SRC (default
# /var/tmp/peer-src) the checkout build.sh built; the log goes to PEER_LOGS (default
# /var/tmp/peer-logs)/TABLE.log.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
TABLE="${1:?usage: run.sh TABLE}"
case "$TABLE" in
  2x4-128|2x4-256|2x4-512|3x3-256|3x3-512|3x3-1024) ;;
  *) echo "unknown table $TABLE" >&2; exit 2 ;;
esac
BOARD="${TABLE%-*}" GOAL="${TABLE#*-}"
export PEER_THREADS="${PEER_THREADS:-2}"
export OMP_NUM_THREADS="$PEER_THREADS"
# bookgen_native.so (x86-simd-sort sort / merge) is dlopen'ed by bare name
export PEER_SRC="${PEER_SRC:-/var/tmp/peer-src}"
export LD_LIBRARY_PATH="$PEER_SRC/native_core${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
PY=/usr/bin/python3
LOGS="${PEER_LOGS:-/var/tmp/peer-logs}"
mkdir -p "$LOGS"
LOG="$LOGS/$TABLE.log"
OUT="$(mktemp -d "${PEER_TMP:-/tmp}/peer-$TABLE.XXXXXX")"
TIMEF="$OUT.time"
trap 'rm -rf "$OUT" "$TIMEF"' EXIT

if ! /usr/bin/time -f '%e %U %S' -o "$TIMEF" \
     "$PY" "$HERE/peer_build.py" build "$BOARD" "$GOAL" "$OUT" 2>"$LOG"; then
  tail -n 20 "$LOG" >&2; exit 1
fi
"$PY" "$HERE/peer_build.py" value "$BOARD" "$GOAL" "$OUT" 2>>"$LOG" || true
{ echo "# files: $(ls "$OUT" | wc -l), bytes: $(du -sb "$OUT" | cut -f1)"; echo "# stats.txt:"; cat "$OUT"/*stats.txt 2>/dev/null | sed 's/^/#   /'; } >>"$LOG"
read -r WALL USR SYS < <(tail -n 1 "$TIMEF")
echo "$TABLE $WALL $(awk -v u="$USR" -v s="$SYS" 'BEGIN { printf "%.2f", u + s }')"
