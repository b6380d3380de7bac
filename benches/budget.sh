#!/usr/bin/env bash
# The memory budget kept (`solve --memory`): per solve given, an unbudgeted solve (its wall
# time, peak resident memory and the smallest budget its plan names), then the same solve
# given that smallest budget, each from an empty data directory of its own, one after the
# other on this machine. A row per solve is appended to reports/bench/budget.tsv (kept across
# runs, the processor named in each row); reports/bench/budget.md reads them. Far too long for
# CI (4x4 goal-32: about half an hour a solve on two cores): run it by hand.
#
# Usage: benches/budget.sh DATA_ROOT "BOARD VARIANTS [EXTRA ARGS…]" …
#   e.g. benches/budget.sh /var/tmp/budget "4x4 goal-32 --discount 0.95 --layout policy"
# Each DATA_ROOT/<n>-{plain,budgeted} is removed first.
set -euo pipefail
cd "$(dirname "$0")/.."
root=${1:?usage: benches/budget.sh DATA_ROOT "BOARD VARIANTS [ARGS]" …}
shift
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/age2048/target}"
cargo build --release --no-default-features --bin age2048 >&2
bin="$CARGO_TARGET_DIR/release/age2048"
tsv=reports/bench/budget.tsv
mkdir -p "$root" reports/bench
[ -f "$tsv" ] || printf 'date\tcommit\tboard\tvariants\targs\tmax_age_states\tplain_s\tplain_peak_mib\tsmallest_mib\tbudgeted_s\tbudgeted_peak_mib\ttime_ratio\tbytes_a_state\tvalue_plain\tvalue_budgeted\tcpu\n' > "$tsv"
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src Cargo.toml || echo "+")
cpu=$(bash benches/cpu.sh)
n=0
for spec in "$@"; do
  n=$((n + 1))
  read -r board variants extra <<< "$spec"
  # One solve: its wall seconds and peak KiB (GNU time), its stderr kept for the plan line.
  run() {
    local data=$1
    shift
    rm -rf "$data"
    # shellcheck disable=SC2086
    /usr/bin/time -f "%e %M" -o "$data.time" "$bin" solve --board "$board" \
      --variant "$variants" --data "$data" $extra "$@" 2> "$data.log"
    cat "$data.time"
  }
  read -r plain_s plain_kb < <(run "$root/$n-plain")
  smallest=$(grep -o 'the smallest that holds every age: --memory [0-9]*M' "$root/$n-plain.log" \
    | head -n1 | grep -o '[0-9]*M$')
  read -r budgeted_s budgeted_kb < <(run "$root/$n-budgeted" --memory "$smallest")
  python3 - "$root/$n-plain" "$root/$n-budgeted" "$board" "$variants" "${extra:-}" "$commit" \
    "$plain_s" "$plain_kb" "$smallest" "$budgeted_s" "$budgeted_kb" "$cpu" >> "$tsv" <<'PY'
import datetime, json, os, sys
plain, budgeted, board, variants, extra, commit, ps, pkb, smallest, bs, bkb, cpu = sys.argv[1:]
def manifest(data):
    # The first variant's manifest, found by its contents (the store owns its path).
    for d, _, fs in os.walk(data):
        for f in fs:
            if f.endswith(".json") and "/.work" not in d:
                try:
                    m = json.load(open(os.path.join(d, f)))
                except ValueError:
                    continue
                if isinstance(m, dict) and m.get("board") == board:
                    return m
    raise SystemExit(f"no manifest in {data}")
mp, mb = manifest(plain), manifest(budgeted)
top = max(a["n_states"] for a in mp["ages"])
mib = lambda kb: int(kb) / 1024
fixed = 256  # solver::plan::FIXED, MiB
print("\t".join(str(x) for x in [
    datetime.date.today().isoformat(), commit, board, variants, extra, top,
    f"{float(ps):.1f}", f"{mib(pkb):.0f}", smallest[:-1], f"{float(bs):.1f}",
    f"{mib(bkb):.0f}", f"{float(bs) / float(ps):.3f}",
    f"{(mib(bkb) - fixed) * 2**20 / top:.1f}",
    f"{mp['value_two_2_tiles']:.9f}", f"{mb['value_two_2_tiles']:.9f}", cpu]))
PY
  tail -n1 "$tsv"
done
