#!/usr/bin/env bash
# Slizkov's appendix A.1 (guaranteed reachability under caps, from the empty board with the
# spawner to move) reproduced row by row: writes reports/slizkov/a1.tsv with his result beside
# ours, the boards valued, the time (wall and CPU), the peak memory, the flips the search
# identified boards by, the processor and the commit.
#   benches/slizkov_a1.sh [BIN]    (BIN defaults to the Makefile's debug build, which is optimised)
# A row whose solve takes more than ROW_CPU seconds of CPU (default 1200; a limit in CPU time,
# not wall time, as on a shared machine a niced run may wait longer than it computes) is
# written as "timeout"; its minimal/maximal check (the solves with one cap changed) runs after
# it, under the same limit, and is written as "not checked" when it runs out. BOARDS (a
# regular expression, default all) picks the rows, and GOALS (one, default all) the goals;
# CLAIMS=0 skips the minimal/maximal checks; APPEND=1 adds them to the file (OUT, default
# reports/slizkov/a1.tsv) instead of writing it anew.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-${CARGO_TARGET_DIR:-$HOME/.cache/age2048/target}/debug/age2048}
ROW_CPU=${ROW_CPU:-1200}
OUT=${OUT:-reports/slizkov/a1.tsv}
CPU=$(bash benches/cpu.sh)
COMMIT=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo "+dirty")
mkdir -p reports/slizkov
# The rows of his table (field, caps row-major, goal, result), as published.
ROWS='2x4|16 16 16 8 16 16 16 8|32|Winnable, minimal
2x4|32 32 32 32 32 32 32 32|64|Not winnable
3x3|16 16 16 16 16 16 8 8 8|32|Winnable, minimal
3x3|16 16 8 16 16 8 8 16 16|32|Winnable, minimal
3x3|16 8 16 16 16 16 16 8 16|32|Not winnable, maximal
3x3|16 16 16 16 8 16 16 16 16|32|Not winnable, maximal
3x3|32 32 32 32 32 32 32 32 32|64|Not winnable
2x5|16 16 16 16 8 16 16 16 8 8|32|Winnable, minimal
2x5|32 32 32 32 32 32 32 32 32 32|64|Not winnable
2x6|16 32 32 32 32 16 16 32 32 32 32 16|64|Winnable, minimal
2x6|64 64 64 64 64 64 64 64 64 64 64 64|128|Not winnable
3x4|32 32 32 16 16 32 32 16 16 16 16 16|64|Winnable, minimal
3x4|16 32 32 16 32 32 32 16 16 16 16 8|64|Winnable, minimal
3x4|32 32 16 32 32 32 32 16 32 16 16 32|64|Not winnable, maximal
3x4|32 32 32 32 32 32 16 32 32 32 16 32|64|Not winnable, maximal
3x4|16 32 32 16 16 32 32 16 32 16 16 32|64|Not winnable, maximal
3x4|64 64 64 64 64 64 64 64 64 64 64 64|128|Not winnable'
[ "${APPEND:-0}" = 1 ] || printf 'board\tcaps\tgoal\this_result\tours\tstates\tafterstates\tseconds\tseconds_with_changes\tcpu_seconds\tpeak_mib\tsymmetry\tprocessor\tcommit\n' >"$OUT"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# Peak memory and CPU seconds by GNU time (Debian's `time`); without it the row says `-`.
measure() {
  if [ -x /usr/bin/time ]; then /usr/bin/time -f '%M %U %S' -o "$tmp.mem" "$@"
  else echo '- - -' >"$tmp.mem"; "$@"; fi
}
while IFS='|' read -r board caps goal his; do
  [[ "$board" =~ ${BOARDS:-.} ]] || continue
  [[ "$goal" =~ ^(${GOALS:-.*})$ ]] || continue
  if measure prlimit --cpu="$ROW_CPU" "$BIN" guaranteed --board "$board" \
      --caps "$caps" --goal "$goal" --format csv >"$tmp"; then
    IFS=',' read -r _ _ _ _ result _ states afters _ secs _ sym < <(tail -1 "$tmp")
    ours=$result secs_all=$secs
    peak=$(tail -1 "$tmp.mem" | awk '$1 == "-" { print "-"; next } {printf "%.0f", $1 / 1024}')
    cpu=$(tail -1 "$tmp.mem" | awk '$2 == "-" { print "-"; next } {printf "%.2f", $2 + $3}')
    case "${CLAIMS:-1}$his" in 0*minimal*|0*maximal*) ours="$result, claim not checked" ;;
    1*minimal*|1*maximal*)
      if prlimit --cpu="$ROW_CPU" "$BIN" guaranteed --board "$board" --caps "$caps" --goal "$goal" \
          --minimal --format csv >"$tmp"; then
        IFS=, read -r _ _ _ _ _ claim _ _ _ _ secs_all _ < <(tail -1 "$tmp")
        ours="$result, $claim"
      else
        ours="$result, claim not checked" secs_all="> $ROW_CPU CPU s"
      fi ;;
    esac
  else
    ours=timeout states=- afters=- secs=- secs_all=- peak=- sym=-
    cpu=">$(tail -1 "$tmp.mem" | awk '$2 == "-" { print "?"; next } {printf "%.0f", $2 + $3}')"
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$board" "$caps" "$goal" \
    "$his" "${ours^}" "$states" "$afters" "$secs" "$secs_all" "$cpu" "$peak" "$sym" "$CPU" \
    "$COMMIT" >>"$OUT"
  tail -1 "$OUT"
done <<<"$ROWS"
rm -f "$tmp.mem"
