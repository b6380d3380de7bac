#!/usr/bin/env bash
# The solve over MPI on one machine (issue 55): one process with T threads against
# `mpirun -np N` processes of one thread each, by the tiles, the hash and the line-sum parts;
# `hosts`: the tiles over two hosts of this machine (scripts/hosts.sh, as root), N/2
# processes a host, TCP between them instead of shared memory.
# Prints one tab-separated row a run (append them to reports/bench/mpi.tsv):
#   date commit processor board variant how wall_s forward_s backward_s boards
#   sent_forward_bytes sent_backward_bytes (all processes) bytes_per_board_forward
#   bytes_per_board_backward
#
#   benches/mpi.sh BIN "BOARD VARIANT" [REPEATS]    e.g. benches/mpi.sh target/release/age2048 "3x3 expectation" 2
# BIN must be built with `--features mpi`. env: NP (default 2), WORK (default /tmp/age2048-mpi-bench),
# HOWS (default "one tiles hash sums": which runs, in this order, each repeat; `hosts` too),
# COMMIT (the commit BIN was built at; default HEAD), TRACE (a folder: each run also writes its
# processes' `--trace-memory` files there, TRACE/HOW.tsv.R, for benches/mpi_ages.py's bytes
# age by age), BIND (the processes' binding on one machine, default core; over hosts none:
# each host would bind its first process to the same core).
set -euo pipefail
bin=$(realpath "${1:?usage: benches/mpi.sh BIN \"BOARD VARIANT\" [REPEATS]}")
read -r board variant <<<"${2:?board and variant}"
repeats=${3:-1}
np=${NP:-2}
work=${WORK:-/tmp/age2048-mpi-bench}
hows=${HOWS:-one tiles hash sums}
cd "$(dirname "$0")/.."
cpu=$(bash benches/cpu.sh)
commit=${COMMIT:-$(git rev-parse --short HEAD)}
bind=${BIND:-core}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
hosts=
if [[ " $hows " == *" hosts "* ]]; then
  hosts=a2hbench$$
  trap 'scripts/hosts.sh down "$hosts"' EXIT
  scripts/hosts.sh up "$hosts"
fi
row() { # how, data, log, seconds
  local how=$1 data=$2 log=$3 secs=$4
  python3 - "$data" "$board" "$variant" "$log" "$secs" "$how" "$cpu" "$commit" <<'EOF'
import json, re, sys, datetime
data, board, variant, log, secs, how, cpu, commit = sys.argv[1:]
m = json.load(open(f"{data}/manifest/board={board}/variant={variant}.json"))
boards = m["n_states"] + m["n_afterstates"]
fwd = bwd = 0
for line in open(log):
    x = re.search(r"sent (\d+) bytes in the forward pass, (\d+) in the backward", line)
    if x:
        fwd += int(x.group(1)); bwd += int(x.group(2))
t = m["timings"]
print("\t".join(map(str, [datetime.date.today(), commit, cpu, board, variant, how,
    f"{float(secs):.1f}", f"{t['forward_s']:.1f}", f"{t['backward_s']:.1f}", boards, fwd, bwd,
    f"{fwd / boards:.2f}", f"{bwd / boards:.2f}"])))
EOF
}
for r in $(seq "$repeats"); do
  for how in $hows; do
    data=$work/$how
    rm -rf "$data"
    log=$work/$how.log
    mkdir -p "$work"
    start=$(date +%s.%N)
    trace=()
    if [ -n "${TRACE:-}" ]; then
      mkdir -p "$TRACE"
      trace=(--trace-memory "$(realpath "$TRACE")/$how.tsv")
    fi
    if [ "$how" = one ]; then
      "$bin" solve --quiet --board "$board" --variant "$variant" --data "$data" --threads "$np" \
        "${trace[@]}" >"$log" 2>&1
    elif [ "$how" = hosts ]; then
      scripts/hosts.sh mpirun "$hosts" -np "$np" --host "$hosts-a:$((np / 2)),$hosts-b:$((np - np / 2))" \
        "$bin" solve --quiet --board "$board" --variant "$variant" --data "$data" --threads 1 \
        --parts tiles "${trace[@]}" >"$log" 2>&1
    else
      mpirun -np "$np" --bind-to "$bind" "$bin" solve --quiet --board "$board" --variant "$variant" \
        --data "$data" --threads 1 --parts "$how" "${trace[@]}" >"$log" 2>&1
    fi
    end=$(date +%s.%N)
    row "$how" "$data" "$log" "$(echo "$end - $start" | bc)"
    # A 4x4 goal-32 solve takes 13–15 GB: one at a time on the disk.
    rm -rf "$data"
  done
done
rm -rf "$work"
