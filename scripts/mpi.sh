#!/usr/bin/env bash
# What the feature `mpi` needs, installed where missing (as scripts/browser-test.sh installs
# Chromium): Debian's Open MPI (`mpirun`, and `mpicc`, through which the `mpi` crate finds the
# library) and libclang (the crate generates its bindings with it at build time).
set -euo pipefail
have_clang() {
  ls /usr/lib/llvm-*/lib/libclang*.so* /usr/lib/x86_64-linux-gnu/libclang*.so* >/dev/null 2>&1
}
if command -v mpirun >/dev/null && command -v mpicc >/dev/null && have_clang; then
  exit 0
fi
command -v apt-get >/dev/null || {
  echo "mpi: install Open MPI (mpirun, mpicc) and libclang, or build without --features mpi" >&2
  exit 1
}
as_root=""
[ "$(id -u)" = 0 ] || as_root="sudo -n"
echo "mpi: installing Debian's openmpi-bin, libopenmpi-dev and libclang-dev" >&2
$as_root apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq openmpi-bin libopenmpi-dev libclang-dev >/dev/null
