#!/usr/bin/env bash
# The Swift library modules whose public API the checks read (the API
# baseline, scripts/check-swift-api.sh; doc coverage,
# scripts/check-doc-coverage.py), and the arguments a Swift tool needs to
# load them from a build (our C modules' maps, the build's Swift modules):
# one list for both, so a new module or module map is added once.
#   bash scripts/swift-library.sh modules      one module per line
#   bash scripts/swift-library.sh args BIN     one argument per line (BIN: swift build --show-bin-path)
set -u
cd "$(dirname "$0")/.."
case "${1:-}" in
  modules) printf '%s\n' SDCoders SDDownloader SDCache SDWebImage SDWebImageRedis SDWebImageSVGCoder ;;
  args)
    bin=${2:?swift-library.sh args BIN}
    printf '%s\n' -I "$bin/Modules" -Xcc -I -Xcc "$PWD/include" \
      -Xcc "-fmodule-map-file=$bin/CSDSystem.build/module.modulemap" \
      -Xcc "-fmodule-map-file=$PWD/Sources/CHiredis/module.modulemap" \
      -target "$(uname -m)-unknown-linux-gnu" ;;
  *) echo "usage: swift-library.sh modules | args BIN" >&2; exit 2 ;;
esac
