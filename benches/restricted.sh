#!/usr/bin/env bash
# What the restriction costs a state: a restricted solve and the plain solve of the same game,
# side by side (A B A B …). The restricted one is `--board RxC --caps <G/2 in every cell>
# --variant goal-G`: a cap of half the goal bars no move short of the goal, so it is the plain
# game through the restriction's code (every move checked against the caps, the symmetry chosen
# from them); the plain one is `--board CxR --variant goal-G`, the same game turned (on a square
# board, the same board). Both in the compact layout. Prints and appends to
# reports/bench/restricted.tsv the medians of CPU seconds (user + system) and wall, the boards
# (states + afterstates) each solve values, and boards a CPU second, restricted / plain.
#
# Usage: benches/restricted.sh [PAIRS] [GAME…]   (default 3 pairs of the issue's "3x4 128": 3x4
#        under caps of 64 against 4x3 goal-128; a GAME is "RxC G")
#        PLAIN=same benches/restricted.sh …  (the plain solve on the same board, not turned: the
#        restriction alone, without the turn's other paths through the code)
# The binary: AGE2048 (default the Makefile's dev build, our crate at opt-level 3; any build,
# the boards are read from the solve's closing line), PROFILE naming its build. Timings never
# go into tests.
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-3}
shift || true
games=("$@")
[ ${#games[@]} -gt 0 ] || games=("3x4 128")
bin=${AGE2048:-${CARGO_TARGET_DIR:-$HOME/.cache/age2048/target}/debug/age2048}
profile=${PROFILE:-dev}
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/restricted.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
cpu=$(bash benches/cpu.sh)
tsv=reports/bench/restricted.tsv
[ -s "$tsv" ] || printf 'date\tcommit\tprocessor\tload_before\tbuild\trestricted\tplain\truns\tboards_restricted\tboards_plain\tcpu_restricted\tcpu_plain\twall_restricted\twall_plain\tboards_per_cpu_s_ratio\n' >"$tsv"
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }
n=0
# run KIND ARGS… : one timed solve into a fresh directory; appends "wall cpu boards" to $tmp/KIND
run() {
  local kind=$1
  shift
  n=$((n + 1))
  /usr/bin/time -f "%e %U %S" -o "$tmp/t" "$bin" solve "$@" --layout compact --data "$tmp/d$n" \
    >/dev/null 2>"$tmp/log"
  local boards
  # The closing line: "RxC VARIANT: N states, M afterstates, …".
  boards=$(grep -oE '[0-9]+ states, [0-9]+ afterstates' "$tmp/log" | tail -1 |
    awk '{print $1 + $3}')
  [ -n "$boards" ] || { echo "no closing line in the solve's output" >&2; exit 1; }
  awk -v b="$boards" '{print $1, $2 + $3, b}' "$tmp/t" >>"$tmp/$kind"
  rm -rf "$tmp/d$n"
}
load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "| restricted | plain | build | processor | load before | commit | boards (restricted / plain) | CPU s (restricted / plain) | boards a CPU s, restricted / plain |"
echo "|---|---|---|---|---|---|---:|---:|---:|"
for game in "${games[@]}"; do
  read -r board goal <<<"$game"
  rows=${board%x*} cols=${board#*x}
  caps=$(awk -v r="$rows" -v c="$cols" -v t=$((goal / 2)) 'BEGIN {
    for (i = 0; i < r; i++) { for (j = 0; j < c; j++) printf "%s%s", t, (j < c - 1 ? " " : ""); if (i < r - 1) printf " / " } }')
  plain_board=${cols}x$rows
  [ "${PLAIN:-turned}" = same ] && plain_board=$board
  restricted="$board caps $((goal / 2)) goal-$goal" plain="$plain_board goal-$goal"
  rm -f "$tmp/r" "$tmp/p"
  for _ in $(seq "$pairs"); do
    run r --board "$board" --caps "$caps" --variant "goal-$goal"
    run p --board "$plain_board" --variant "goal-$goal"
  done
  wr=$(cut -d' ' -f1 "$tmp/r" | median) wp=$(cut -d' ' -f1 "$tmp/p" | median)
  cr=$(cut -d' ' -f2 "$tmp/r" | median) cp=$(cut -d' ' -f2 "$tmp/p" | median)
  br=$(cut -d' ' -f3 "$tmp/r" | head -1) bp=$(cut -d' ' -f3 "$tmp/p" | head -1)
  ratio=$(awk -v br="$br" -v bp="$bp" -v cr="$cr" -v cp="$cp" 'BEGIN { printf "%.3f", (br / cr) / (bp / cp) }')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%d)" \
    "$commit" "$cpu" "$load" "$profile" "$restricted" "$plain" "$pairs" "$br" "$bp" "$cr" "$cp" \
    "$wr" "$wp" "$ratio" >>"$tsv"
  echo "| $restricted | $plain | $profile | $cpu | $load | $commit | $br / $bp | $cr / $cp | $ratio |"
done
