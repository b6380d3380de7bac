#!/usr/bin/env bash
# Two hosts on this machine, as a cluster has them: PREFIX-a and PREFIX-b, each a network
# namespace (its own interfaces: `lo` and one end of a veth pair, 10.67.0.1/24 and
# 10.67.0.2/24, addresses that exist only inside the two) and a UTS namespace (its own
# hostname, the host's name). Open MPI reaches the second host through `agent`, which enters
# its namespaces as ssh would log in to it; the processes talk TCP over the veth pair only.
# Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN), `ip`, `unshare` and `nsenter`.
#
#   scripts/hosts.sh up PREFIX             make the two hosts (PREFIX: letters, digits, '-')
#   scripts/hosts.sh down PREFIX           end their processes and remove them (what is left)
#   scripts/hosts.sh mpirun PREFIX ARGS…   mpirun on PREFIX-a, as root, TCP over the veth only:
#       scripts/hosts.sh mpirun h -np 2 --host h-a:1,h-b:1 age2048 solve --board 3x3 --data /shared/d
#   scripts/hosts.sh on HOST CMD…          a command on one host (PREFIX-a or PREFIX-b)
#   scripts/hosts.sh agent [-opts] HOST CMD…   Open MPI's plm_rsh_agent (what `mpirun` uses)
#
# The namespaces are named after the hosts: `ip netns` holds the network ones
# (/run/netns/HOST), /run/age2048-hosts/HOST.uts the UTS ones (bind mounts, no process
# keeps them). Different prefixes never collide, so tests can make hosts side by side.
set -euo pipefail
uts_dir=/run/age2048-hosts
iface=veth0
script=$(realpath "$0")

die() { echo "hosts.sh: $*" >&2; exit 2; }

check_prefix() {
  [[ ${1:-} =~ ^[A-Za-z0-9][A-Za-z0-9-]{0,40}$ ]] || die "'${1:-}': a prefix is letters, digits and '-'"
}

# The namespaces of HOST, or one line saying it was not made.
check_host() {
  [ -e "/run/netns/$1" ] && [ -e "$uts_dir/$1.uts" ] || die "no host $1 (scripts/hosts.sh up PREFIX makes PREFIX-a and PREFIX-b)"
}

# Runs CMD… inside HOST's network and UTS namespaces.
enter() {
  local host=$1; shift
  check_host "$host"
  exec nsenter --net="/run/netns/$host" --uts="$uts_dir/$host.uts" -- "$@"
}

up() {
  check_prefix "$1"
  local p=$1 n=1 h
  for tool in ip unshare nsenter; do
    command -v "$tool" >/dev/null || die "cannot make hosts: '$tool' is not installed"
  done
  [ "$(id -u)" = 0 ] || die "cannot make hosts: network and UTS namespaces need root (uid $(id -u))"
  mkdir -p "$uts_dir"
  for h in a b; do
    [ ! -e "/run/netns/$p-$h" ] || die "host $p-$h exists already (scripts/hosts.sh down $p)"
    # A failed step leaves what it made for `down`: the caller tears down either way.
    ip netns add "$p-$h" 2>/dev/null || die "cannot make hosts: 'ip netns add $p-$h' refused (no CAP_SYS_ADMIN?)"
    : >"$uts_dir/$p-$h.uts"
    unshare --uts="$uts_dir/$p-$h.uts" hostname "$p-$h" 2>/dev/null \
      || die "cannot make hosts: no UTS namespace for $p-$h (unshare --uts refused)"
  done
  ip link add "$iface" netns "$p-a" type veth peer name "$iface" netns "$p-b" 2>/dev/null \
    || die "cannot make hosts: no veth pair between $p-a and $p-b (no CAP_NET_ADMIN or no veth driver?)"
  for h in a b; do
    ip -n "$p-$h" addr add "10.67.0.$n/24" dev "$iface"
    ip -n "$p-$h" link set lo up
    ip -n "$p-$h" link set "$iface" up
    n=$((n + 1))
  done
}

down() {
  check_prefix "$1"
  local p=$1 h pids
  for h in a b; do
    if [ -e "/run/netns/$p-$h" ]; then
      # Whatever still runs on the host (a job's orted, a killed solve's processes) ends.
      pids=$(ip netns pids "$p-$h" 2>/dev/null || true)
      if [ -n "$pids" ]; then
        # shellcheck disable=SC2086
        kill -KILL $pids 2>/dev/null || true
      fi
      ip netns del "$p-$h" 2>/dev/null || true
    fi
    if [ -e "$uts_dir/$p-$h.uts" ]; then
      umount "$uts_dir/$p-$h.uts" 2>/dev/null || true
      rm -f "$uts_dir/$p-$h.uts"
    fi
  done
}

# mpirun on PREFIX-a: the agent for the other host, TCP between processes (also between two on
# one host: no shared memory), the launcher's and the processes' traffic on the veth only.
run_mpirun() {
  check_prefix "$1"
  local p=$1; shift
  check_host "$p-a"
  check_host "$p-b"
  enter "$p-a" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun --mca plm_rsh_agent "$script agent" --mca plm_rsh_no_tree_spawn 1 \
    --mca pml ob1 --mca osc '^ucx' --mca btl tcp,self \
    --mca btl_tcp_if_include "$iface" --mca oob_tcp_if_include "$iface" \
    --bind-to none --oversubscribe "$@"
}

# As ssh would: ssh's options skipped, the rest one command line for the host's shell, in a
# login's environment (not the launcher's: what the processes need, mpirun passes them).
agent() {
  while [ $# -gt 0 ] && [[ $1 == -* ]]; do shift; done
  local host=${1:?"usage: hosts.sh agent HOST CMD…"}; shift
  enter "$host" env -i PATH="$PATH" HOME="${HOME:-/root}" USER="${USER:-root}" \
    TMPDIR="${TMPDIR:-/tmp}" /bin/sh -c "$*"
}

cmd=${1:-}
shift || true
case $cmd in
  up) up "${1:-}" ;;
  down) down "${1:-}" ;;
  mpirun) run_mpirun "$@" ;;
  on) enter "${1:?usage: hosts.sh on HOST CMD…}" "${@:2}" ;;
  agent) agent "$@" ;;
  *) die "usage: hosts.sh up|down PREFIX, mpirun PREFIX ARGS…, on HOST CMD…, agent HOST CMD…" ;;
esac
