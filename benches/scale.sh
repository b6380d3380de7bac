#!/usr/bin/env bash
# Big solves for the record (issue "scale"): one solve per line of SOLVES, each into its own
# data directory, with its wall time, peak memory, the peak size of its work files (sampled
# every 2 s) and its output, and the per-core rates of both passes from its manifest; rows
# are appended to reports/bench/scale.tsv (one line per solve, kept across runs) and
# reports/bench/scale.md is rewritten from that table, with projections to bigger boards
# (benches/scale_report.py). Far too long for CI: run it by hand.
#
# Usage: benches/scale.sh DATA_ROOT "BOARD VARIANTS [EXTRA ARGS…]" …
#   e.g. benches/scale.sh /var/tmp/scale "4x3 goal-64" "3x4 goal-64" "4x4 goal-32"
# DATA_ROOT keeps the solved data (a solve already there is resumed, not redone).
# The projections are for the processor of the latest quiet row; PROJECT_ON="<processor as the
# table names it>" projects for another (e.g. the one whose compact solves are the bases).
set -euo pipefail
cd "$(dirname "$0")/.."
root=${1:?usage: benches/scale.sh DATA_ROOT "BOARD VARIANTS [ARGS]" …}
shift
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/age2048/target}"
cargo build --release --no-default-features --bin age2048 >&2
bin="$CARGO_TARGET_DIR/release/age2048"
out=reports/bench
mkdir -p "$out" "$root"
tsv=$out/scale.tsv
[ -f "$tsv" ] || printf 'date\tcommit\tboard\tvariants\targs\tthreads\twall_s\tforward_s\tbackward_s\tstates\tafterstates\tpeak_rss_mb\tpeak_work_mb\toutput_mb\tload\tmax_age_states\tid_bits\tcpu\n' > "$tsv"
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src Cargo.toml || echo "+")
# The processor, which the times depend on as much as the code.
cpu=$(bash benches/cpu.sh)

for spec in "$@"; do
  read -r board variants extra <<< "$spec"
  data="$root/$board-${variants//,/_}${extra:+-${extra// /}}"
  work="$data/.work"
  peak=$(mktemp)
  echo 0 > "$peak"
  ( while sleep 2; do
      # du fails (and still prints its total) when a file goes while it counts: its first
      # line only, whatever its status (pipefail made that "0" a second line, and the sample
      # was lost to a test of "3041\n0").
      s=$(du -sm "$work" 2>/dev/null | cut -f1 | head -n1 || true)
      [ "${s:-0}" -gt "$(cat "$peak")" ] && echo "$s" > "$peak"
    done ) &
  sampler=$!
  load=$(cut -d' ' -f1 /proc/loadavg)
  # shellcheck disable=SC2086
  /usr/bin/time -f "%e %M" -o "$peak.time" "$bin" solve --board "$board" --variant "$variants" \
    --data "$data" $extra
  kill "$sampler" 2>/dev/null || true
  read -r wall rss_kb < "$peak.time"
  first=${variants%%,*}
  python3 - "$data" "$board" "$first" "$wall" "$rss_kb" "$(cat "$peak")" "$load" \
    "$commit" "$variants" "${extra:-}" "$cpu" >> "$tsv" <<'EOF'
import json, sys, os, datetime
data, board, variant, wall, rss_kb, work_mb, load, commit, variants, extra, cpu = sys.argv[1:]
# The manifest of the first variant: found by its contents (the store owns its path).
def manifests():
    for d, _, fs in os.walk(data):
        for f in fs:
            if f.endswith(".json") and "/.work" not in d:
                try:
                    yield json.load(open(os.path.join(d, f)))
                except (ValueError, OSError):
                    pass
m = next(m for m in manifests()
         if isinstance(m, dict) and m.get("board") == board
         # `--p4`/`--discount` extend the name: goal-32 → goal-32-discount=0.95
         and (m.get("variant") == variant or str(m.get("variant")).startswith(variant + "-")))
out = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(data)
          if "/.work" not in d for f in fs)
t = m["timings"]
# Bits an afterstate id in the age indexes (the Elias-Fano sets and their inventories).
id_bits = 8 * sum(a["index"]["afterstate_id_bytes"] for a in m["ages"]) / max(1, m["n_afterstates"])
print("\t".join(str(x) for x in [
    datetime.date.today().isoformat(), commit, board, variants, extra, m["threads"],
    f"{float(wall):.1f}", f"{t['forward_s']:.1f}", f"{t['backward_s']:.1f}",
    m["n_states"], m["n_afterstates"], f"{int(rss_kb) / 1024:.0f}", work_mb,
    f"{out / 2**20:.0f}", load, max(a["n_states"] for a in m["ages"]), f"{id_bits:.2f}", cpu]))
EOF
  rm -f "$peak" "$peak.time"
done

python3 benches/scale_report.py "$tsv" > "$out/scale.md"
echo "wrote $out/scale.md" >&2
