#!/usr/bin/env bash
# check-abi.sh [LIB] [--update] — libsdcore's ABI, as C programs link it:
#  1. the exported symbols are exactly cmake/sdcore.map's, each versioned, each
#     declared SD_API in a public header (and every SD_API function exported);
#  2. abidiff against the committed baseline cmake/libsdcore.abi (types from
#     include/sdcore only: opaque handles' insides are not ABI) finds no
#     removed or changed function, variable or public type; added functions
#     pass (refresh the baseline with --update when releasing them);
#  3. the check itself fails on a doctored baseline (a function removed).
# Needs abigail-tools and a library built with debug info (RelWithDebInfo).
set -euo pipefail
cd "$(dirname "$0")/.."
lib=${1:-build/release/libsdcore.so}
opts=(--headers-dir include/sdcore --no-corpus-path --no-comp-dir-path --drop-private-types
      --drop-undefined-syms --no-show-locs)
if [ "${2:-}" = --update ]; then
  abidw "${opts[@]}" --out-file cmake/libsdcore.abi "$lib"
  echo "abi: baseline cmake/libsdcore.abi written from $lib"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "abi: FAILED: $*"; exit 1; }

# 1. symbols
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sed 's/@.*//' | sort -u >"$tmp/exported"
sed -n '/global:/,/local:/p' cmake/sdcore.map | grep -oE '^[[:space:]]+sd_[a-z0-9_]+;' | tr -d ' ;' | sort -u >"$tmp/mapped"
diff -u "$tmp/mapped" "$tmp/exported" >"$tmp/d" || { cat "$tmp/d"; fail "exported symbols differ from cmake/sdcore.map"; }
unversioned=$(objdump -T "$lib" | awk '$NF ~ /^sd_/ && $0 !~ /SDCORE_[0-9]/ {print $NF}')
[ -z "$unversioned" ] || fail "symbols without a version: $unversioned"
# SD_API declarations, from the preprocessed headers: the name before the
# first "(" of each exported declaration
echo '#include "sdcore.h"' | gcc -E -P -Iinclude -x c - | tr '\n' ' ' \
  | grep -oE 'visibility\("default"\)\)\)[^;]*;' | sed -E 's/^visibility\("default"\)\)\) *//' \
  | sed -E 's/ *\(.*//' | grep -oE 'sd_[a-z_0-9]+$' | sort -u >"$tmp/declared"
diff -u "$tmp/declared" "$tmp/exported" >"$tmp/d" || { cat "$tmp/d"; fail "SD_API declarations differ from the exported symbols"; }

# 2. the baseline
abidiff_ok() { # baseline current -> 0 when nothing but additions
  local rc=0
  abidiff --suppressions cmake/sdcore.abi.suppr "$1" "$2" >"$tmp/diff" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] && return 0
  [ $((rc & 3)) -eq 0 ] || { cat "$tmp/diff"; echo "abidiff could not run (exit $rc)"; return 2; }
  [ $((rc & 8)) -eq 0 ] || return 1 # incompatible (a symbol removed)
  # "ABI changed": fine only if it is additions alone
  grep -qE 'Functions changes summary: 0 Removed, 0 Changed' "$tmp/diff" &&
    grep -qE 'Variables changes summary: 0 Removed, 0 Changed' "$tmp/diff" &&
    ! grep -qE '[1-9][0-9]* Removed' "$tmp/diff"
}
abidw "${opts[@]}" --out-file "$tmp/now.abi" "$lib"
if ! abidiff_ok cmake/libsdcore.abi "$tmp/now.abi"; then
  cat "$tmp/diff"
  fail "incompatible change against cmake/libsdcore.abi (a new major version, or undo it)"
fi
added=$(grep -oE "[1-9][0-9]* Added function" "$tmp/diff" | head -1 || true)

# 3. the check can fail: the same library against a baseline that had one more function
python3 - "$tmp/now.abi" "$tmp/doctored.abi" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
# a baseline that exported one more function than the library has: sd_loop_cancel renamed
s2 = s.replace("'sd_loop_cancel'", "'sd_loop_cancel_was_here'")
assert s2 != s
open(sys.argv[2], "w").write(s2)
PY
if abidiff_ok "$tmp/doctored.abi" "$tmp/now.abi"; then
  fail "self-test: a removed function was not noticed"
fi
echo "abi: $(wc -l <"$tmp/exported") symbols, all versioned and declared; no incompatible change against cmake/libsdcore.abi${added:+ ($added: refresh the baseline with --update when releasing)}"
