#!/usr/bin/env bash
# Runs every suite, keeps going after a failure, prints one summary line.
#
# Two lanes run side by side: the C suites (release, ABI, install, ASan, TSan,
# valgrind, fuzz, then Swift's ASan soak, the serve suite and the galleries)
# and the Swift ones (swift test, the CLI and fleet suites, API, TSan, docs). Each lane alone leaves a core
# idle much of the time (a test waiting on a server, a link step, a lane's
# single-threaded checks); together they keep both busy. The suites are
# written for a starved machine (no test assumes the clock runs at a normal
# speed), and each starts its own servers on free loopback ports, so the lanes
# share nothing but the C release build, which `make build-c` builds once
# under a lock. The C lane's output goes to $BUILD/test-c-lane.log and is
# printed when both are done. SERIAL=1 runs the lanes one after the other.
set -u
cd "$(dirname "$0")/.."
build=${BUILD:-build}
mkdir -p "$build"
results=$build/test-results.txt
: > "$results"
# CPU seconds (user+sys) of this shell's finished children so far: each lane
# is a shell of its own, so a suite's CPU is the difference around it.
# `times` must run in this shell (a $(...) subshell has no children), so the
# answer is left in $CPU.
cpu() {
  local f=$build/.times.$BASHPID
  times > "$f"
  CPU=$(awk 'END { t = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); t += a[1] * 60 + a[2] } printf "%d", t }' "$f")
  rm -f "$f"
}
run() {
  local name=$1; shift
  echo "=== $name"
  local t0=$SECONDS c0; cpu; c0=$CPU
  local how=FAILED
  if "$@"; then how=ok; fi
  echo "$how $name" >> "$results"
  cpu
  echo "=== $name: $how ($((SECONDS - t0)) s, $((CPU - c0)) CPU-s)"
}
# Import rules (docs/ARCHITECTURE.md): loop knows no images, layers one way.
layering() { bash scripts/check-layering.sh; }
# Every test is patient unless it tests a timeout: no default-timeout
# downloader, request or Redis option in Tests/ (and the check's own rules
# each refuse their pattern).
patience() { python3 scripts/check-test-patience.py --self-test && python3 scripts/check-test-patience.py; }
lane_c() {
  run "c (ctest)" make --no-print-directory test-c
  run "c abi (abidiff baseline, symbol versions, header docs)" make --no-print-directory test-abi
  run "c install (pkg-config, find_package)" bash scripts/test-install.sh
  run "c asan+ubsan (ctest)" make --no-print-directory test-asan
  run "c tsan (loop races)" make --no-print-directory test-tsan
  run "c valgrind (ctest -T memcheck)" make --no-print-directory test-valgrind
  run "fuzz smoke (libFuzzer)" make --no-print-directory fuzz-smoke
  # Swift, but in a scratch folder of its own and needing only the C build:
  # here it evens out the lanes (the Swift one is the longer)
  run "swift asan+lsan (manager soak)" make --no-print-directory test-swift-asan
  # and two suites of the Swift lane's debug build, for the same reason (the
  # C lane gets here about 4 minutes after that build is done; were it not,
  # SwiftPM's lock on the build folder would make them wait for it)
  run "serve (sdimage serve, nginx origin, fault server)" make --no-print-directory test-serve
  run "gallery (GTK 4 and SDL2 under Xvfb, screenshots checked)" make --no-print-directory gallery-check
}
# The suites that mostly wait (on servers, on X) come right after the debug
# build, while the C lane still keeps a core busy; the sanitizer builds,
# which take both cores, come after them.
lane_swift() {
  run "swift (swift test)" make --no-print-directory test-swift
  run "cli" make --no-print-directory test-cli
  run "fleet (3 sdimage processes, nginx origin, Redis)" make --no-print-directory test-fleet
  run "swift api (baseline, swift-api-digester)" make --no-print-directory test-swift-api
  run "swift tsan (swift test --sanitize=thread)" make --no-print-directory test-swift-tsan
  run "docs (DocC, warnings as errors; doc coverage; named tests)" make --no-print-directory test-docs
  # the Debian packages built (lintian), installed with dpkg, used, the
  # unit checked by systemd-analyze, purged: reuses the Swift debug build
  # (here, where nothing else holds its folder; the C lane is the longer)
  run "deb (packages: lintian, dpkg -i, systemd-analyze, purge)" bash scripts/test-deb.sh
}
t_all=$SECONDS
run "layering" layering
run "patient tests (no default timeouts in Tests/)" patience
run "package (deps by role, licence, version)" bash scripts/check-package.sh
run "apt-install (its policy-rc.d gone on every exit path)" bash scripts/test-apt-install.sh
run "release (scripts/release.sh on throwaway clones)" bash scripts/test-release.sh
if [ -n "${SERIAL:-}" ]; then
  lane_c
  lane_swift
else
  lane_c > "$build/test-c-lane.log" 2>&1 &
  c_pid=$!
  echo "(the C lane runs beside this one: $build/test-c-lane.log, printed at the end)"
  # in a subshell of its own: this shell reaps the C lane, and its CPU
  # would count in the Swift suite that is running when it ends
  ( lane_swift )
  wait "$c_pid"
  echo
  echo "--- the C lane ($build/test-c-lane.log)"
  cat "$build/test-c-lane.log"
fi
passed=$(grep -c '^ok ' "$results")
failed=$(grep -c '^FAILED ' "$results")
echo
echo "all suites: $((SECONDS - t_all)) s"
[ "$failed" -eq 0 ] || echo "failed suites: $(sed -n 's/^FAILED //p' "$results" | paste -sd, -)"
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
