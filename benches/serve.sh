#!/usr/bin/env bash
# Load on `age2048 serve` (loopback only): starts the server over DATA (default data/, which
# `make solve` writes), runs examples/serve_load.rs with CLIENTS clients (default 32) for
# SECONDS (default 60), and writes the table with the processor and the commit to
# reports/bench/serve.md. The start-up time and a warm look-up's time are measured first.
#
#   benches/serve.sh [DATA] [CLIENTS] [SECONDS]
#
# The script overwrites reports/bench/serve.md (keep what it held with git).
#
# SERVE_BIN names another build of the server to measure (an older commit's, for a before and
# after in the same conditions); the table then says which.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:-data}
clients=${2:-32}
seconds=${3:-60}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/age2048/target}
export DUCKDB_LIB_DIR=${DUCKDB_LIB_DIR:-$(scripts/duckdb.sh "$HOME/.cache/age2048/duckdb")}
cargo build -q --bin age2048 --example serve_load
bin=${SERVE_BIN:-$CARGO_TARGET_DIR/debug/age2048}
load=$CARGO_TARGET_DIR/debug/examples/serve_load
out=$(mktemp)
t0=$(date +%s.%N)
"$bin" serve --data "$data" --port 0 --reports "$(mktemp -d)" > "$out" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$out"' EXIT
until grep -q '^serving ' "$out"; do sleep 0.01; kill -0 $pid; done
t1=$(date +%s.%N)
addr=$(sed -n 's|^age2048 serve: http://\(.*\)/$|\1|p' "$out")
# A warm look-up: the median of 200, each on a new connection (curl's time to the last byte).
board='2%200%204%2F0%208%200%2F0%200%202'
curl -s -o /dev/null "http://$addr/api/best?board=3x3&b=$board"
lookup=$(for _ in $(seq 200); do curl -s -o /dev/null -w '%{time_total}\n' "http://$addr/api/best?board=3x3&b=$board"; done \
  | sort -n | sed -n 100p)
# The server's own memory before the load, to hold what the load adds against its bound.
anon0=$(awk '/^RssAnon:/ {print int($2 / 1024)}' /proc/$pid/status)
table=$("$load" "$addr" "$pid" "$clients" "$seconds")
# The bounds the server states at its start, beside what was measured.
heap_bound=$(sed -n "s/^memory bound: the server's own heap at most \([0-9]*\) MiB.*/\1/p" "$out")
data_bound=$(sed -n "s/^memory bound: .*the query processes' data at most \([0-9]*\) MiB.*/\1/p" "$out")
anon_max=$(sed -n 's/^of which its own (RssAnon.*at most \([0-9]*\) MiB.*/\1/p' <<< "$table")
workers_max=$(sed -n "s/^query processes' resident memory, together: at most \([0-9]*\) MiB.*/\1/p" <<< "$table")
verdict() {
  if [ -z "$1" ] || [ -z "$2" ]; then echo "not stated"; elif [ "$1" -le "$2" ]; then echo within; else echo "**over**"; fi
}
bounds="- Against the bounds the server states at its start: its own heap (RssAnon) ${anon0:-?} MiB before the load, at most ${anon_max:-?} MiB under it, $(( ${anon_max:-0} - ${anon0:-0} )) MiB beyond the start against its bound of ${heap_bound:-?} MiB: $(verdict $(( ${anon_max:-0} - ${anon0:-0} )) "$heap_bound"); the query processes at most ${workers_max:-?} MiB resident together against their data bound of ${data_bound:-?} MiB: $(verdict "$workers_max" "$data_bound")."
load_avg=$(cut -d' ' -f1-3 /proc/loadavg)
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
cpu="$cpu, family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model $(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')"
{
  echo "# age2048 serve under load"
  echo
  echo "Measured $(date -u +%Y-%m-%d) at commit $(git rev-parse --short HEAD)${SERVE_BIN:+ (the server: $SERVE_BIN)} on $cpu ($(nproc) cores),"
  echo "data \`$data\` ($(sed -n 's/^serving \([0-9]*\) solves.*/\1/p' "$out") solves), by \`benches/serve.sh $data $clients $seconds\`."
  echo
  echo "- start-up (process start to listening, the data checked and opened): $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") s"
  echo "- a warm look-up (\`GET /api/best\` of a 3x3 board, a new connection each, curl's total time): median of 200: $(awk "BEGIN{printf \"%.2f\", $lookup * 1000}") ms"
  echo
  echo "$clients clients, each on a keep-alive connection from a loopback address of its own (127.0.0.2, 127.0.0.3, …), for $seconds s: client 0 runs a slow query over every 3x3 state"
  echo "(the median state value of each age, ≈ 48.7 M rows) again and again, client 1 hostile ones in turn"
  echo "(\`SELECT repeat('x', 1000000) AS s FROM range(1000)\`: a gigabyte of rows, cut at the reply's 32 MiB;"
  echo "\`SELECT range(100000000) AS r\`: a constant DuckDB folds while binding, refused at the query process's limit);"
  echo "the others mix look-ups (70 %), game steps (22 %, a game growing by the best move) and a cheap query (8 %)."
  echo "Latency is the client's, request sent to response read:"
  echo
  echo "$table"
  echo
  echo "$bounds"
  echo "- Load average (1, 5, 15 min) when the load ended: $load_avg."
} > reports/bench/serve.md
cat reports/bench/serve.md
