#!/usr/bin/env bash
# check-abi.sh [LIB] [--update] — libsdcore's ABI, as C programs link it:
#  1. the exported symbols are exactly cmake/sdcore.map's, each versioned, each
#     declared SD_API in a public header (and every SD_API function exported);
#  2. abidiff against the committed baseline cmake/libsdcore.abi (types from
#     include/sdcore only: opaque handles' insides are not ABI) finds no
#     removed or changed function, variable or public type; added functions
#     pass (refresh the baseline with --update when releasing them). No
#     suppressions: a member appended to a versioned struct (compatible by
#     design, sd__copy_sized) also needs a deliberate --update — libabigail's
#     "inserted at end" suppression was found to hide insertions in the middle
#     too, which the self-test below now catches;
#  3. the check itself fails on doctored baselines (a function removed, an
#     enum value changed, a struct member moved).
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
# the codec libraries loaded on first use (CSources/common/sd_dl.h) are not linked
linked=$(readelf -d "$lib" | grep NEEDED | grep -oE 'lib(heif|jxl|rsvg)[^]]*' || true)
[ -z "$linked" ] || fail "linked, though loaded on first use: $linked"
# SD_API declarations, from the preprocessed headers: the name before the
# first "(" of each exported declaration
printf '#include "sdcore.h"\n#define SD_COMPAT_QUIET\n#include "sdcore/sd_compat.h"\n' | gcc -E -P -Iinclude -x c - | tr '\n' ' ' \
  | grep -oE 'visibility\("default"\)\)\)[^;]*;' | sed -E 's/^visibility\("default"\)\)\) *//' \
  | sed -E 's/ *\(.*//' | grep -oE 'sd_[a-z_0-9]+$' | sort -u >"$tmp/declared"
diff -u "$tmp/declared" "$tmp/exported" >"$tmp/d" || { cat "$tmp/d"; fail "SD_API declarations differ from the exported symbols"; }

# 2. the baseline
abidiff_ok() { # baseline current -> 0 when nothing but additions
  local rc=0
  abidiff "$1" "$2" >"$tmp/diff" 2>&1 || rc=$?
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

# 3. the check can fail: the same library against baselines doctored three
# ways — one more function, an enum value that was different, a callback of a
# versioned struct that sat elsewhere — each must be an incompatible change
python3 - "$tmp/now.abi" "$tmp" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
cases = {
    "removed": s.replace("'sd_loop_cancel'", "'sd_loop_cancel_was_here'"),
    "enum": s.replace("<enumerator name='SD_REQ_TIMEOUT_MS' value='2'/>",
                      "<enumerator name='SD_REQ_TIMEOUT_MS' value='22'/>"),
    "member": re.sub(r"layout-offset-in-bits='(\d+)'>(\s*<var-decl name='complete')",
                     lambda m: "layout-offset-in-bits='%d'>%s" % (int(m.group(1)) + 64, m.group(2)), s, count=1),
}
for name, doctored in cases.items():
    assert doctored != s, name
    open(f"{sys.argv[2]}/doctored-{name}.abi", "w").write(doctored)
PY
for c in removed enum member; do
  if abidiff_ok "$tmp/doctored-$c.abi" "$tmp/now.abi"; then
    fail "self-test: a doctored baseline ($c) was not noticed"
  fi
done
echo "abi: $(wc -l <"$tmp/exported") symbols, all versioned and declared; no incompatible change against cmake/libsdcore.abi${added:+ ($added: refresh the baseline with --update when releasing)}"
