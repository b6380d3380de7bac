#!/usr/bin/env bash
# The browser tests of `age2048 serve` (tests/browser/run.mjs), with what they need installed
# where it is missing: Debian's `chromium` (apt-get, as root or through sudo) and the npm
# packages of tests/browser's lockfile (`npm ci`: playwright-core, which downloads no browser).
#
#   scripts/browser-test.sh BIN         BIN: the age2048 binary to serve with
#   scripts/browser-test.sh --install   only install what is missing (`make test` runs it
#                                       while cargo builds and runs the tests)
# env: CHROMIUM (default /usr/bin/chromium), WORK (screenshots, and the solves unless DATA;
# default $CARGO_TARGET_DIR/browser or $TMPDIR/age2048-browser), DATA (default: the solves of
# the integration tests under $AGE2048_TEST_TMPDIR, else $CARGO_TARGET_DIR/tmp), SCREENSHOTS.
set -euo pipefail
bin=${1:?usage: scripts/browser-test.sh BIN|--install}
cd "$(dirname "$0")/.."
chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  if command -v apt-get >/dev/null; then
    as_root=""
    [ "$(id -u)" = 0 ] || as_root="sudo -n"
    echo "browser tests: installing Debian's chromium" >&2
    $as_root apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq chromium >/dev/null
  fi
  [ -x "$chromium" ] || { echo "browser tests: no Chromium at $chromium (install Debian's chromium, or set CHROMIUM)" >&2; exit 1; }
fi
command -v node >/dev/null && command -v npm >/dev/null \
  || { echo "browser tests: node and npm are needed (Node 18 or later)" >&2; exit 1; }
# The packages of the lockfile, installed again only when the lockfile changed.
if [ ! -f tests/browser/node_modules/.package-lock.json ] \
   || ! cmp -s tests/browser/package-lock.json tests/browser/node_modules/.age2048-lock; then
  (cd tests/browser && npm ci --no-audit --no-fund --loglevel=error && cp package-lock.json node_modules/.age2048-lock)
fi
[ "$bin" = --install ] && exit 0
export WORK=${WORK:-${CARGO_TARGET_DIR:+$CARGO_TARGET_DIR/browser}}
export WORK=${WORK:-${TMPDIR:-/tmp}/age2048-browser}
# The solves the integration tests read (tests/integration/common.rs, shared_solves), where
# make test has just made them (AGE2048_TEST_TMPDIR, else the build cache's tmp): one folder,
# keyed by the binary's build.
scratch=${AGE2048_TEST_TMPDIR:-${CARGO_TARGET_DIR:+$CARGO_TARGET_DIR/tmp}}
if [ -z "${DATA:-}" ] && [ -n "$scratch" ]; then
  DATA=$(ls -td "$scratch"/shared_data-* 2>/dev/null | head -n 1 || true)
  if [ -n "$DATA" ]; then export DATA; fi
fi
AGE2048_BIN=$(realpath "$bin") CHROMIUM=$chromium node tests/browser/run.mjs
