#!/usr/bin/env bash
# Slizkov's Figure 3 (the largest tile guaranteed from the empty board, the spawner to move and
# choosing the cell and the tile) reproduced board by board: writes reports/slizkov/fig3.tsv
# with his figure beside ours.
#   benches/slizkov_fig3.sh [BIN]    (BIN defaults to the Makefile's debug build, which is optimised)
# Ours is the largest goal T for which `guaranteed --caps <T/2 in every cell> --goal T` is
# winnable (a cap of half the goal bars nothing, so this is the unrestricted question), trying
# T = 4, 8, … until one is not; a board where even 4 is not forced forces the 2 the spawner
# must put down. On boards of at most 9 cells the age-layered answer (`guaranteed --board B`,
# the whole game solved per goal) is written beside it as a check. A goal whose solve takes
# more than ROW_CPU seconds of CPU (default 1200) ends the row as "timeout". BOARDS (a regular
# expression, default all) picks the rows; APPEND=1 adds them to the file (OUT, default
# reports/slizkov/fig3.tsv) instead.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-${CARGO_TARGET_DIR:-$HOME/.cache/age2048/target}/debug/age2048}
ROW_CPU=${ROW_CPU:-1200}
OUT=${OUT:-reports/slizkov/fig3.tsv}
CPU=$(bash benches/cpu.sh)
COMMIT=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo "+dirty")
mkdir -p reports/slizkov
# His Figure 3, as published (board and tile), boards of at most 12 cells; 4x3 is 3x4 turned
# (the same game, its moves relabelled), so it is not solved twice.
ROWS='1x1 2
1x2 4
1x3 4
1x4 4
1x5 4
1x6 4
2x2 8
2x3 16
2x4 32
2x5 32
2x6 64
3x3 32
3x4 64'
[ "${APPEND:-0}" = 1 ] || printf 'board\this_tile\tour_tile\tlayered_check\tlast_won_goal\twon_states\twon_afterstates\twon_seconds\tfirst_lost_goal\tlost_states\tlost_afterstates\tlost_seconds\tcpu_seconds_all\tpeak_mib\tsymmetry\tcommand\tprocessor\tcommit\n' >"$OUT"
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.time"' EXIT
while read -r board his; do
  [[ "$board" =~ ${BOARDS:-.} ]] || continue
  cells=$(( ${board%x*} * ${board#*x} ))
  ours=2 won=(- - - -) lost=(- - - -) cpu=0 peak=0 sym=-
  for ((t = 4; t <= 32768; t *= 2)); do
    cap=$(( t / 2 < 4 ? 4 : t / 2 ))
    caps=$(printf "$cap %.0s" $(seq "$cells"))
    if ! /usr/bin/time -f '%U %S %M' -o "$tmp.time" prlimit --cpu="$ROW_CPU" "$BIN" guaranteed \
        --board "$board" --caps "${caps% }" --goal "$t" --format csv >"$tmp"; then
      lost=("$t" - - "> $ROW_CPU CPU s") ours="timeout"
      break
    fi
    read -r u s m <"$tmp.time"
    cpu=$(awk -v c="$cpu" -v u="$u" -v s="$s" 'BEGIN {printf "%.2f", c + u + s}')
    peak=$(awk -v p="$peak" -v m="$m" 'BEGIN {print (m / 1024 > p) ? int(m / 1024 + 0.5) : p}')
    IFS=',' read -r _ _ _ _ result _ states afters _ secs _ sym < <(tail -1 "$tmp")
    if [ "$result" = winnable ]; then
      ours=$t won=("$t" "$states" "$afters" "$secs")
    else
      lost=("$t" "$states" "$afters" "$secs")
      break
    fi
  done
  layered=-
  if [ "$cells" -le 9 ]; then
    layered=$("$BIN" guaranteed --board "$board" --format csv | awk -F, 'NR == 2 {print $2}')
  fi
  cmd="guaranteed --board $board --caps '<T/2 (at least 4) in every cell>' --goal T, T = 4, 8, … ${lost[0]}"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$board" "$his" \
    "$ours" "$layered" "${won[@]}" "${lost[@]}" "$cpu" "$peak" "$sym" "$cmd" "$CPU" "$COMMIT" >>"$OUT"
  tail -1 "$OUT"
done <<<"$ROWS"
