#!/usr/bin/env bash
# Slizkov's appendices A.2 (float lower bounds) and A.3 (bounds proved in integer arithmetic),
# reproduced row by row: writes reports/slizkov/a2.tsv with his figure beside ours, from his
# start (the empty board, the spawner to move: the `solves` view's `value_empty`).
#   benches/slizkov_a2.sh [BIN]    (BIN defaults to the Makefile's debug build, which is optimised)
# Each row is one restricted solve, `solve --caps GRID --require NEED --variant
# goal-G,goal-G-u32,goal-G-u53 --layout compact`: our f64 value and the bounds proved in
# integers at 2^-32 (his `uint32_t`) and 2^-53. The requirement is his Lemma 1's configuration
# scaled to the goal (reports/slizkov/README.md says why): G/2 and G/4 in the first row's first
# two cells, G/8, G/16 and G/16 in the second row's first three. A row whose solve takes more
# than ROW_CPU seconds of CPU (default 3600) is written as "timeout"; ROWS (a regular
# expression over `board caps goal`, default all) picks rows; APPEND=1 adds them to the file
# (OUT, default reports/slizkov/a2.tsv) instead of writing it anew; WORK (default a fresh
# temporary folder) holds each solve's data while its row is read, then it is deleted.
# LAYOUT (default compact) stores the solve; `policy` keeps a row of billions of states within
# the disk (a few bits a state, where compact's values take bytes), and reads the same values.
# SQL_BIN (default BIN) reads them, for a BIN built without the query layer; MIN_FREE (default
# 256M) is the disk the solve leaves free (it stops, and the row says so, rather than fill it).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-${CARGO_TARGET_DIR:-$HOME/.cache/age2048/target}/debug/age2048}
SQL_BIN=${SQL_BIN:-$BIN}
LAYOUT=${LAYOUT:-compact}
ROW_CPU=${ROW_CPU:-3600}
OUT=${OUT:-reports/slizkov/a2.tsv}
CPU=$(bash benches/cpu.sh)
COMMIT=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo "+dirty")
mkdir -p reports/slizkov
# His rows as published: appendix, board, caps row-major, goal, his arithmetic, his figure.
# (A.2 lists the 4096 row twice, in float32 and float16: one solve answers both.)
HIS='A.2|3x4|256 128 64 64 64 64 64 64 64 64 64 64|512|float32|0.999998
A.2|3x4|256 128 16 16 64 64 32 16 16 16 16 16|512|float32|0.999966
A.2|3x4|512 256 128 128 128 128 128 128 128 128 128 128|1024|float32|0.999544
A.2|3x4|512 256 32 16 128 128 64 16 16 16 16 16|1024|float32|0.998857
A.2|3x4|1024 512 128 128 256 256 128 128 128 128 128 128|2048|float32|0.957837
A.2|3x4|1024 512 64 64 256 256 128 64 64 64 64 64|2048|float32|0.955559
A.2|3x4|1024 512 64 16 256 256 128 16 16 16 32 16|2048|float32|0.910929
A.2|3x4|2048 1024 128 128 512 512 256 128 128 128 128 128|4096|float32|0.447708
A.2|3x4|4096 2048 256 256 1024 1024 512 256 256 256 256 256|8192|float32|0.000140
A.2|4x4|1024 512 64 16 256 256 128 16 16 16 32 16 16 16 16 16|2048|float16|0.997
A.3|3x4|256 128 64 64 64 64 64 64 64 64 64 64|512|uint32|0.99999617
A.3|3x4|512 256 128 128 128 128 128 128 128 128 128 128|1024|uint32|0.99954025
A.3|3x4|1024 512 256 256 256 256 256 256 256 256 256 256|2048|uint32|0.95793830
A.3|3x4|2048 1024 512 512 512 512 512 512 512 512 512 512|4096|uint32|0.45631551
A.3|3x4|4096 2048 256 256 1024 1024 512 256 256 256 256 256|8192|uint32|0.00012353
A.3|4x4|1024 512 64 16 256 256 128 16 16 16 32 16 16 16 16 16|2048|uint32|0.99969486'
# A grid row-major as the CLI's text: rows of C cells split by ` / `.
grid() { awk -v c="$2" '{ for (i = 1; i <= NF; i++) printf "%s%s", $i, (i == NF ? "" : i % c == 0 ? " / " : " ") }' <<<"$1"; }
# Lemma 1's configuration for goal G on a board of C columns and `cells` cells.
need() {
  local g=$1 c=$2 n=$3 i out=""
  for ((i = 0; i < n; i++)); do
    case $i in 0) t=$((g / 2)) ;; 1) t=$((g / 4)) ;; *) t=. ;; esac
    [ "$i" = "$c" ] && t=$((g / 8))
    { [ "$i" = $((c + 1)) ] || [ "$i" = $((c + 2)) ]; } && t=$((g / 16))
    out+="$t "
  done
  grid "${out% }" "$c"
}
[ "${APPEND:-0}" = 1 ] || printf 'appendix\tboard\tcaps\trequire\tgoal\this_type\this_bound\tours_f64\tours_u32\tours_u53\tours_minus_his\tstates\tafterstates\tseconds\tcpu_seconds\tpeak_mib\tsymmetry\tprocessor\tcommit\n' >"$OUT"
work=${WORK:-$(mktemp -d)}
declare -A solved
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.mem"; [ -n "${WORK:-}" ] || rm -rf "$work"' EXIT
while IFS='|' read -r table board caps goal his_type his; do
  [[ "$board $caps $goal" =~ ${ROWS:-.} ]] || continue
  cols=${board#*x} cells=$(wc -w <<<"$caps")
  caps_grid=$(grid "$caps" "$cols") need_grid=$(need "$goal" "$cols" "$cells")
  data="$work/$board-$goal-$(tr -d ' ' <<<"$caps" | cksum | cut -d' ' -f1)"
  # A.2 and A.3 rows of the same caps and goal are one solve: the second reads the first's.
  if [ -n "${solved[$data]:-}" ]; then
    IFS=$'\t' read -r v0 v1 v2 states afters secs cpu peak sym diff <<<"${solved[$data]}"
    v=("$v0" "$v1" "$v2")
  else
    rm -rf "$data"
    start=$(date +%s.%N)
    if /usr/bin/time -f '%M %U %S' -o "$tmp.mem" prlimit --cpu="$ROW_CPU" "$BIN" solve --board "$board" \
        --caps "$caps_grid" --require "$need_grid" --variant "goal-$goal,goal-$goal-u32,goal-$goal-u53" \
        --layout "$LAYOUT" --data "$data" --min-free "${MIN_FREE:-256M}" --quiet >/dev/null 2>"$tmp"; then
      secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
      peak=$(tail -1 "$tmp.mem" | awk '{printf "%.0f", $1 / 1024}')
      cpu=$(tail -1 "$tmp.mem" | awk '{printf "%.1f", $2 + $3}')
      # f64, u32, u53 in that order (the arithmetic's names sort so), from the `solves` view.
      "$SQL_BIN" sql --data "$data" --format csv "SELECT value_empty, n_states, \
        n_afterstates, symmetry FROM solves ORDER BY arithmetic" | tail -n +2 >"$tmp"
      mapfile -t v < <(cut -d, -f1 "$tmp")
      IFS=, read -r _ states afters sym < <(head -1 "$tmp")
    else
      # Out of its CPU time, or another refusal (disk, memory): the solve's own last line says.
      used=$(tail -1 "$tmp.mem" | awk '{printf "%.0f", $2 + $3}')
      why=$(grep -v '^Command' "$tmp" | tail -1 | tr '\t' ' ' | cut -c1-160)
      diff=$([ "$used" -ge "$ROW_CPU" ] && echo timeout || echo "failed: ${why:-no message}")
      v=(- - -) states=- afters=- secs=- peak=- sym=- cpu=">$used"
    fi
    rm -rf "$data"
    solved[$data]=$(printf '%s\t' "${v[@]}" "$states" "$afters" "$secs" "$cpu" "$peak" "$sym" \
      "${diff:-}")
  fi
  if [ "${v[0]}" != - ]; then
    # Ours in his arithmetic (f64 for his floats, the u32 bound for his uint32) minus his figure,
    # which he rounded to 6 or 8 digits.
    diff=$(awk -v t="$his_type" -v his="$his" -v f="${v[0]}" -v u="${v[1]}" \
      'BEGIN { printf "%+.2e", (t == "uint32" ? u : f) - his }')
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$table" \
    "$board" "$caps" "$need_grid" "$goal" "$his_type" "$his" "${v[0]}" "${v[1]}" "${v[2]}" \
    "$diff" "$states" "$afters" "$secs" "$cpu" "$peak" "$sym" "$CPU" "$COMMIT" >>"$OUT"
  tail -1 "$OUT"
done <<<"$HIS"
