#!/usr/bin/env bash
# Make vendor/libsqlite3-sys again from the published crate of the version given, and apply
# our one change to the SQLite it bundles (sqlite-wal-frames.patch). Run it when rusqlite
# moves to another libsqlite3-sys: set the version rusqlite asks for, then build and run the
# tests (`src/store/sqlite/frames.rs` holds what the change must not alter).
#
#   bash vendor/update.sh 0.40.0
#
# When the patch no longer applies, SQLite's `walFrames()` changed: make the same change by
# hand (the patch's comment says what it is) and write the patch again with
#   diff -u --label a/sqlite3/sqlite3.c --label b/sqlite3/sqlite3.c <published> <changed>
set -euo pipefail
version="${1:?usage: bash vendor/update.sh <libsqlite3-sys version>}"
here="$(cd "$(dirname "$0")" && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# A throwaway package that depends on the published crate, so that cargo fetches it and says
# where its source is.
mkdir -p "$scratch/src"
: > "$scratch/src/lib.rs"
cat > "$scratch/Cargo.toml" <<TOML
[package]
name = "fetch-libsqlite3-sys"
version = "0.0.0"
edition = "2024"

[dependencies]
libsqlite3-sys = { version = "=$version", features = ["bundled"] }
TOML
manifest="$(cd "$scratch" && cargo metadata --format-version 1 |
  grep -o "\"manifest_path\":\"[^\"]*libsqlite3-sys-$version/Cargo.toml\"" | head -1 | cut -d'"' -f4)"
[ -n "$manifest" ] || { echo "cargo did not find libsqlite3-sys $version" >&2; exit 1; }

rm -rf "$here/libsqlite3-sys"
cp -r "$(dirname "$manifest")" "$here/libsqlite3-sys"
rm -f "$here/libsqlite3-sys/.cargo-ok"
(cd "$here/libsqlite3-sys" && patch -p1 --no-backup-if-mismatch < "$here/sqlite-wal-frames.patch")
echo "vendor/libsqlite3-sys is libsqlite3-sys $version with sqlite-wal-frames.patch applied"
