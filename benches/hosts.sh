#!/usr/bin/env bash
# The solve over two hosts against the same processes on one machine (issue 67): 4x4 `goal-32`
# by tiles, one process a host talking TCP over a veth pair (scripts/hosts.sh: network and UTS
# namespaces, as root) beside two processes sharing memory, both unbound (`--bind-to none`),
# run alternately. One row a run, as benches/mpi.sh prints them (append to
# reports/bench/mpi.tsv); the `hosts` rows are the TCP ones.
#
#   benches/hosts.sh BIN ["BOARD VARIANT"] [REPEATS]   e.g. benches/hosts.sh target/release/age2048 "4x4 goal-16" 1
# BIN must be built with `--features mpi`. The 4x4 goal-32 pair takes 13–15 GB of disk a run
# (one at a time) and about half an hour on two cores.
set -euo pipefail
bin=$(realpath "${1:?usage: benches/hosts.sh BIN [\"BOARD VARIANT\"] [REPEATS]}")
cd "$(dirname "$0")/.."
HOWS="tiles hosts" BIND=none NP=2 exec bash benches/mpi.sh "$bin" "${2:-4x4 goal-32}" "${3:-1}"
