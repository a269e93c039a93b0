#!/usr/bin/env bash
# Runs every suite, keeps going after a failure, prints one summary line.
set -u
cd "$(dirname "$0")/.."
passed=0; failed=0; failures=()
run() {
  local name=$1; shift
  echo "=== $name"
  local t0=$SECONDS
  if "$@"; then passed=$((passed + 1)); echo "=== $name: ok ($((SECONDS - t0)) s)"
  else failed=$((failed + 1)); failures+=("$name"); echo "=== $name: FAILED ($((SECONDS - t0)) s)"; fi
}
# Import rules (docs/ARCHITECTURE.md): loop knows no images, layers one way.
layering() { bash scripts/check-layering.sh; }
run "layering" layering
run "package (deps by role, licence, version)" bash scripts/check-package.sh
run "c (ctest)" make --no-print-directory test-c
run "c abi (abidiff baseline, symbol versions, header docs)" make --no-print-directory test-abi
run "c install (pkg-config, find_package)" bash scripts/test-install.sh
run "c asan+ubsan (ctest)" make --no-print-directory test-asan
run "c tsan (loop races)" make --no-print-directory test-tsan
run "c valgrind (ctest -T memcheck)" make --no-print-directory test-valgrind
run "fuzz smoke (libFuzzer)" make --no-print-directory fuzz-smoke
run "swift (swift test)" make --no-print-directory test-swift
run "swift api (baseline, swift-api-digester)" make --no-print-directory test-swift-api
run "swift tsan (swift test --sanitize=thread)" make --no-print-directory test-swift-tsan
run "swift asan+lsan (manager soak)" make --no-print-directory test-swift-asan
run "cli" make --no-print-directory test-cli
run "fleet (3 sdimage processes, nginx origin, Redis)" make --no-print-directory test-fleet
run "serve (sdimage serve, nginx origin, fault server)" make --no-print-directory test-serve
run "gallery (GTK 4 and SDL2 under Xvfb, screenshots checked)" make --no-print-directory gallery-check
run "docs (DocC, warnings as errors; doc coverage; named tests)" make --no-print-directory test-docs
echo
[ $failed -eq 0 ] || echo "failed suites: ${failures[*]}"
echo "suites: $passed passed, $failed failed"
[ $failed -eq 0 ]
