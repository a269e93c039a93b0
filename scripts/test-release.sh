#!/usr/bin/env bash
# scripts/release.sh on throwaway clones of HEAD: it tags when every place
# agrees, and refuses (no tag) a version the sources do not say, a changelog
# with something unreleased, a C symbol node newer than the version, and a
# dirty tree. Needs only git and cmake (the configure that writes sdcore.pc).
set -u
cd "$(dirname "$0")/.."
repo=$(pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
check() { if eval "$2"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED: $1"; fi; }
hv=$(awk '/^#define SD_VERSION_(MAJOR|MINOR|PATCH) /{v=v (v?".":"") $3} END{print v}' include/sdcore/sd_common.h)
n=0
clone() {  # a fresh clone of HEAD without a tag $hv, in $c, as its release commit would be
  n=$((n + 1)); c=$tmp/c$n
  git clone -q "$repo" "$c" && git -C "$c" tag -d "$hv" >/dev/null 2>&1
  git -C "$c" config user.email t@example.invalid; git -C "$c" config user.name test
  # what HEAD has under [Unreleased] (work since $hv) is filed under [$hv]
  # here, as a release would: each case below then fails for its own mismatch
  # alone, whatever is being worked on
  if awk '/^## \[Unreleased\]/{on=1; next} /^## /{on=0} on && NF {found=1} END{exit !found}' "$c/CHANGELOG.md"; then
    awk -v hv="$hv" '
      /^## \[Unreleased\]/ { print; print ""; on = 1; next }
      on && /^## / { on = 0; print; printf "%s", held; next }
      on { if (NF || held != "") held = held $0 "\n"; next }
      { print }' "$c/CHANGELOG.md" > "$c/CHANGELOG.new" && mv "$c/CHANGELOG.new" "$c/CHANGELOG.md"
    git -C "$c" commit -qam "what is unreleased, filed under $hv"
  fi
  return 0
}
tagged() { git -C "$c" rev-parse -q --verify "refs/tags/$hv" >/dev/null; }

clone
bash "$c/scripts/release.sh" "$hv" >"$tmp/out" 2>&1; rc=$?
check "HEAD as it is: $hv tagged ($rc: $(tail -1 "$tmp/out"))" '[ $rc -eq 0 ] && tagged && [ "$(git -C "$c" cat-file -t "$hv")" = tag ]'
bash "$c/scripts/release.sh" "$hv" >"$tmp/out" 2>&1; rc=$?
check "the same tag twice: refused" '[ $rc -eq 1 ] && grep -q "exists already" "$tmp/out"'

clone
sed -i 's/^#define SD_VERSION_PATCH \([0-9]*\)$/#define SD_VERSION_PATCH 9\1/' "$c/include/sdcore/sd_common.h"
git -C "$c" commit -qam "a version the changelog does not know"
bash "$c/scripts/release.sh" "$hv" >"$tmp/out" 2>&1; rc=$?
check "sd_common.h says another version: refused, not tagged" '[ $rc -eq 1 ] && ! tagged && grep -q "sd_common.h says" "$tmp/out" && grep -q "sdcore.pc says" "$tmp/out"'

clone
sed -i 's/^## \[Unreleased\]$/## [Unreleased]\n\n### Fixed\n- something not released yet/' "$c/CHANGELOG.md"
git -C "$c" commit -qam "something unreleased"
bash "$c/scripts/release.sh" "$hv" >"$tmp/out" 2>&1; rc=$?
check "an unreleased changelog entry: refused, not tagged" '[ $rc -eq 1 ] && ! tagged && grep -q "Unreleased\] section is not empty" "$tmp/out"'

clone
printf '\nSDCORE_99.0 {\n  global: sd_not_yet;\n} SDCORE_0.2;\n' >> "$c/cmake/sdcore.map"
git -C "$c" commit -qam "a node of a later version"
bash "$c/scripts/release.sh" "$hv" >"$tmp/out" 2>&1; rc=$?
check "a C symbol node newer than the version: refused, not tagged" '[ $rc -eq 1 ] && ! tagged && grep -q "SDCORE_99.0, newer than" "$tmp/out"'

clone
echo "// uncommitted" >> "$c/Package.swift"
bash "$c/scripts/release.sh" "$hv" >"$tmp/out" 2>&1; rc=$?
check "a dirty tree: refused, not tagged" '[ $rc -eq 1 ] && ! tagged && grep -q "uncommitted" "$tmp/out"'

bash "$c/scripts/release.sh" "not-a-version" >/dev/null 2>&1; rc=$?
check "a malformed version: usage error" '[ $rc -eq 2 ]'
echo "release: $pass passed, $fail failed"
[ $fail -eq 0 ]
