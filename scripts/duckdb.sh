#!/usr/bin/env bash
# Puts DuckDB's official prebuilt shared library where the build links it (DUCKDB_LIB_DIR)
# and the binary finds it at run time (its rpath), or says in one line why the build will
# compile DuckDB from source instead.
#
#   scripts/duckdb.sh ROOT   fetch (once) and verify libduckdb.so into ROOT/VERSION/ and print
#                            that directory; print nothing (and say why on stderr) if no
#                            prebuilt library fits this OS/CPU: the build then compiles DuckDB
#
# The library is the one inside the Linux x86-64 package of DuckDB's Node bindings on the npm
# registry: the same libduckdb.so DuckDB publishes, pinned by version and SHA-256 of the
# package. Its version must be the one the `duckdb` crate encodes (=1.MMmmpp.x → vMM.mm.pp).
set -euo pipefail
VERSION=1.5.6
PACKAGE=node-bindings-linux-x64-${VERSION}-r.1.tgz
URL=https://registry.npmjs.org/@duckdb/node-bindings-linux-x64/-/${PACKAGE}
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
  if command -v curl >/dev/null; then curl -fsSL --retry 3 -o "$tmp/$PACKAGE" "$URL"
  else wget -q -O "$tmp/$PACKAGE" "$URL"; fi
}
# One line whatever happens: the downloader's own message goes into ours.
if ! fetch 2>"$tmp/fetch.err"; then
  why=$(tr -s '\n' ' ' < "$tmp/fetch.err" | cut -c1-160)
  echo "duckdb: cannot download $URL (${why% }): compiling DuckDB ${VERSION} from source instead (or set DUCKDB_LIB_DIR to a libduckdb ${VERSION})" >&2
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
