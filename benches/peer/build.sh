#!/usr/bin/env bash
# Build the native core of game-difficulty/2048EndgameTablebase (formation_core + bookgen_native)
# the way native_core/make.sh does, restricted to the two targets the table builder needs.
# Flags: the repo's own CMake Release flags (-Ofast -ffast-math -funroll-loops -fomit-frame-pointer
# -march=x86-64-v3 -mtune=generic -fopenmp, LTO when supported, -static-libstdc++);
# x86-simd-sort via meson --buildtype=release -Duse_openmp=true (its own -march=haswell / skylake-avx512 kernels).
set -euo pipefail

# The checkout to build: PEER_SRC (default /var/tmp/peer-src), made with
#   git clone https://github.com/game-difficulty/2048EndgameTablebase "$PEER_SRC"
#   git -C "$PEER_SRC" checkout 64f231b70cfede26e29a52630414e1bcf1c30944
PEER_SRC="${PEER_SRC:-/var/tmp/peer-src}"
NC="$PEER_SRC/native_core"
PY=/usr/bin/python3          # Debian's python3.11 (python3-dev + python3-numpy); not the pyenv shim
JOBS="${JOBS:-2}"
NICE="nice -n 19"

# Debian packages the build needs (only those missing are installed)
need=()
command -v cmake  >/dev/null || need+=(cmake)
command -v meson  >/dev/null || need+=(meson)
command -v ninja  >/dev/null || need+=(ninja-build)
command -v 7z     >/dev/null || need+=(p7zip-full)
$PY -c 'import numpy' 2>/dev/null || need+=(python3-numpy)
dpkg -s python3-dev  >/dev/null 2>&1 || need+=(python3-dev)
dpkg -s liblzma-dev  >/dev/null 2>&1 || need+=(liblzma-dev)
if ((${#need[@]})); then
  echo "apt-get install: ${need[*]}"
  apt-get install -y --no-install-recommends "${need[@]}"
fi

cd "$NC"
# 1. generated egtb_data_*.cpp (only ai_core uses them, but CMakeLists.txt refuses to configure without them)
[ -f src/egtb_data_512.cpp ] || 7z x -y -osrc egtb_data.7z >/dev/null

# 2. x86-simd-sort static library (used by bookgen_native's sort_uint64), as in make.sh
XSS=x86simdsort/x86-simd-sort
if [ -d "$XSS/builddir" ]; then
  $NICE meson setup "$XSS/builddir" "$XSS" --buildtype=release -Duse_openmp=true --reconfigure
else
  $NICE meson setup "$XSS/builddir" "$XSS" --buildtype=release -Duse_openmp=true
fi
$NICE meson compile -C "$XSS/builddir" -j "$JOBS"
cp "$XSS/builddir/libx86simdsortcpp.a" libx86simdsortcpp.a

# 3. the native modules, as in make.sh (Release, tests off), but only the targets the table build uses:
#    formation_core (Python extension: run_pattern_build) and bookgen_native.so (dlopen'ed sort/merge)
$NICE cmake -S . -B build-formation -DCMAKE_BUILD_TYPE=Release -DNATIVE_BUILD_TESTS=OFF \
      -DPython_EXECUTABLE="$PY" ${PORTABLE_X86_64_ARCH:+-DPORTABLE_X86_64_ARCH=$PORTABLE_X86_64_ARCH}
$NICE cmake --build build-formation --config Release --target formation_core bookgen_native -j "$JOBS"

ls -l "$NC"/formation_core*.so "$NC"/bookgen_native.so
