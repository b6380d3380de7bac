#!/usr/bin/env bash
# Puts DuckDB's official prebuilt shared library where the build links it (DUCKDB_LIB_DIR)
# and the binary finds it at run time (its rpath), or says in one line why the build will
# compile DuckDB from source instead.
#
#   scripts/duckdb.sh ROOT   fetch (once) and verify libduckdb.so into ROOT/VERSION/ and print
#                            that directory; print nothing (and say why on stderr) if no
#                            prebuilt library fits this OS/CPU: the build then compiles DuckDB
#
# The library is the one inside the Linux x86-64 package of DuckDB's Node bindings, fetched by
# its name through npm (`npm pack`, from whatever registry npm is configured with): the same
# libduckdb.so DuckDB publishes, pinned by version and by the SHA-256 of the package. Its
# version must be the one the `duckdb` crate encodes (=1.MMmmpp.x → vMM.mm.pp).
set -euo pipefail
VERSION=1.5.6
NAME=@duckdb/node-bindings-linux-x64
SPEC=${NAME}@${VERSION}-r.1
PACKAGE=duckdb-node-bindings-linux-x64-${VERSION}-r.1.tgz
SHA256=1b9f82478539bb9a1d1df44bd103121a12ae52142c07158dc52b97d2ec1d69ff

root=${1:?usage: scripts/duckdb.sh ROOT}
dir=$root/$VERSION
if [ "$(uname -s)/$(uname -m)" != "Linux/x86_64" ]; then
  echo "duckdb: no prebuilt library for $(uname -s)/$(uname -m): compiling DuckDB ${VERSION} from source (about 30 min on two cores)" >&2
  exit 0
fi
if [ -f "$dir/libduckdb.so" ] && [ "$(cat "$dir/VERSION" 2>/dev/null)" = "$VERSION $SHA256" ]; then
  echo "$dir"
  exit 0
fi
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fetch() {
  command -v npm >/dev/null || { echo "npm is not installed"; return 1; }
  (cd "$tmp" && npm pack "$SPEC" --pack-destination "$tmp" --loglevel=error >/dev/null)
}
# One line whatever happens: npm's own message goes into ours.
if ! fetch >"$tmp/fetch.err" 2>&1 || [ ! -f "$tmp/$PACKAGE" ]; then
  why=$(tr -s '\n' ' ' < "$tmp/fetch.err" | cut -c1-160)
  echo "duckdb: cannot fetch $SPEC with npm pack (${why% }): compiling DuckDB ${VERSION} from source instead (or set DUCKDB_LIB_DIR to a libduckdb ${VERSION})" >&2
  exit 0
fi
got=$(sha256sum "$tmp/$PACKAGE" | cut -d' ' -f1)
if [ "$got" != "$SHA256" ]; then
  echo "duckdb: $PACKAGE has SHA-256 $got, expected $SHA256: refusing it, compiling DuckDB ${VERSION} from source instead" >&2
  exit 0
fi
tar -xzf "$tmp/$PACKAGE" -C "$tmp" package/libduckdb.so package/LICENSE
mv "$tmp/package/LICENSE" "$dir/LICENSE"
mv "$tmp/package/libduckdb.so" "$dir/libduckdb.so"
echo "$VERSION $SHA256" > "$dir/VERSION"
echo "duckdb: fetched the prebuilt libduckdb ${VERSION} into $dir" >&2
echo "$dir"
