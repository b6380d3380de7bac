#!/usr/bin/env bash
# Renders the rows of reports/slizkov/{a1,fig3,a2}.tsv (written by benches/slizkov_a1.sh,
# benches/slizkov_fig3.sh and benches/slizkov_a2.sh) as Markdown tables into
# reports/slizkov/README.md, each between its markers `<!-- table NAME -->` and
# `<!-- end table NAME -->`; the text around them is kept. Columns whose values are the same on
# every row (processor, commit, command) are written once under the table instead.
#   DEST=FILE: render into FILE (a copy of the README) instead of the README itself.
#   FRESH=TSV: rows of A.1 made on this clone (`make solve` writes the small boards' rows):
#   each replaces the row of the same board, caps and goal, so the page shows this clone's.
set -euo pipefail
cd "$(dirname "$0")/.."
README=reports/slizkov/README.md
if [ -n "${DEST:-}" ]; then
  mkdir -p "$(dirname "$DEST")"
  cp "$README" "$DEST"
  README=$DEST
fi
render() {
  awk -F'\t' '
    NR == 1 { n = NF; for (j = 1; j <= NF; j++) head[j] = $j; next }
    {
      rows++
      for (j = 1; j <= n; j++) {
        cell[rows, j] = $j
        if (rows == 1) same[j] = 1
        else if ($j != cell[1, j]) same[j] = 0
      }
    }
    END {
      if (rows == 0) exit
      line = "|"; rule = "|"
      for (j = 1; j <= n; j++) if (!(same[j] && rows > 1 && head[j] ~ /^(processor|commit|command)$/)) {
        line = line " " head[j] " |"
        rule = rule (cell[1, j] ~ /^[-0-9.>]+$/ ? "---:|" : "---|")
      }
      print line; print rule
      for (i = 1; i <= rows; i++) {
        line = "|"
        for (j = 1; j <= n; j++) if (!(same[j] && rows > 1 && head[j] ~ /^(processor|commit|command)$/))
          line = line " " cell[i, j] " |"
        print line
      }
      for (j = 1; j <= n; j++) if (same[j] && rows > 1 && head[j] ~ /^(processor|commit|command)$/)
        printf "\n%s, every row: `%s`\n", head[j], cell[1, j]
    }' "$1"
}
for name in a1 fig3 a2; do
  tsv=reports/slizkov/$name.tsv
  [ -f "$tsv" ] || continue
  if [ "$name" = a1 ] && [ -s "${FRESH:-}" ]; then
    merged=$(mktemp)
    awk -F'\t' 'NR == FNR { if (FNR > 1) fresh[$1 FS $2 FS $3] = $0; next }
      FNR > 1 && ($1 FS $2 FS $3) in fresh { print fresh[$1 FS $2 FS $3]; next } { print }' \
      "$FRESH" "$tsv" >"$merged"
    tsv=$merged
    trap 'rm -f "$merged"' EXIT
  fi
  grep -q "<!-- table $name -->" "$README" || continue
  table=$(render "$tsv")
  awk -v name="$name" -v table="$table" '
    $0 == "<!-- table " name " -->" { print; print table; skip = 1; next }
    $0 == "<!-- end table " name " -->" { skip = 0 }
    !skip { print }' "$README" >"$README.tmp"
  mv "$README.tmp" "$README"
done
