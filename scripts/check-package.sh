#!/usr/bin/env bash
# The package plays by the rules a user relies on: deps by role (no server in
# what `make deps` installs), a licence named everywhere, one version that
# the changelog knows.
set -u
cd "$(dirname "$0")/.."
pass=0; fail=0
check() { if eval "$2"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED: $1"; fi; }
check "deps by role (scripts/check-deps.sh)" 'bash scripts/check-deps.sh >/tmp/check-deps.$$ 2>&1 || { cat /tmp/check-deps.$$; false; }'
rm -f /tmp/check-deps.$$
check "LICENSE is MIT" 'head -1 LICENSE | grep -qx "MIT License"'
check "the licence named in Package.swift, README, sdcore.pc and the CMake package" \
  'grep -q "License: MIT" Package.swift && grep -q "MIT" README.md && grep -q "^License: MIT" cmake/sdcore.pc.in &&
   grep -q "sdcore_LICENSE \"MIT\"" cmake/sdcoreConfig.cmake.in'
hv=$(awk '/^#define SD_VERSION_(MAJOR|MINOR|PATCH) /{v=v (v?".":"") $3} END{print v}' include/sdcore/sd_common.h)
check "CHANGELOG.md has Unreleased and the current version $hv" \
  'grep -q "^## \[Unreleased\]" CHANGELOG.md && grep -q "^## \[$hv\]" CHANGELOG.md'
check "every C library the core links is a system-library target with an apt provider (no bare linkedLibrary but libc's libm and libdl)" \
  '[ -z "$(grep -o "linkedLibrary(\"[a-z0-9]*\")" Package.swift | grep -vE "\"(m|dl)\"")" ] &&
   [ $(ls Sources/CSystemLibraries | wc -l) -eq $(grep -c "^    (\"C[A-Za-z]*\", \"[a-z0-9]*\", \"[a-z0-9-]*-dev\")," Package.swift) ]'
# libheif and libjxl are loaded, not linked, so no system-library target
# names their packages: their codecs' sources do, before any include. With
# no include path at all (-nostdinc) each names its package.
check "a missing libheif or libjxl header names its Debian package" \
  'gcc -fsyntax-only -nostdinc -I include -I CSources CSources/decode/heic/sd_heic.c 2>&1 | grep -q "apt-get install libheif-dev" &&
   gcc -fsyntax-only -nostdinc -I include -I CSources CSources/decode/jxl/sd_jxl.c 2>&1 | grep -q "apt-get install libjxl-dev"'
check "SECURITY.md says how to report privately" 'grep -qi "private vulnerability report" SECURITY.md'
echo "package: $pass passed, $fail failed"
[ $fail -eq 0 ]
