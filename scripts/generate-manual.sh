#!/usr/bin/env bash
# generate-manual.sh SDIMAGE OUTDIR [SCRATCH]: sdimage's man pages (one a
# subcommand, section 1) by swift-argument-parser's generate-manual tool.
# The tool is an executable target of swift-argument-parser, not a product,
# so it is built here in a package of its own from the copy of
# swift-argument-parser SwiftPM fetched for this one (SCRATCH/checkouts).
set -eu
bin=$1 out=$2 scratch=${3:-$(cd "$(dirname "$0")/.." && pwd)/.build}
ap=$scratch/checkouts/swift-argument-parser
[ -d "$ap/Tools/generate-manual" ] || { echo "generate-manual: no swift-argument-parser in $scratch/checkouts"; exit 1; }
tool=$scratch/generate-manual-tool

rm -rf "$tool/Sources"; mkdir -p "$tool/Sources"; ln -sfn "$ap/Tools/generate-manual" "$tool/Sources/sd-generate-manual"
cat > "$tool/Package.swift" <<SWIFT
// swift-tools-version:5.9
import PackageDescription
let package = Package(
    name: "generate-manual-tool",
    dependencies: [.package(path: "$ap")],
    targets: [.executableTarget(name: "sd-generate-manual",
                                dependencies: [.product(name: "ArgumentParser", package: "swift-argument-parser")])]
)
SWIFT
swift build -c release --disable-index-store --package-path "$tool" --scratch-path "$tool/.build" >"$tool/build.log" 2>&1 ||
  { tail -20 "$tool/build.log"; exit 1; }
mkdir -p "$out"
"$tool/.build/release/sd-generate-manual" "$bin" --multi-page --section 1 --output-directory "$out"
# What Debian's tools expect of a page (lintian): the NAME of a
# subcommand's page is its file's name (`sdimage.bench`, as git's pages are
# `git-commit`), the synopsis still says the command as typed; no empty
# input line (mdoc wants `.Pp`).
for f in "$out"/*.1; do
  name=$(sed -n 's/^\.Nm "\(.*\)"$/\1/p' "$f" | head -1)
  [ -n "$name" ] || continue
  dotted=$(echo "$name" | tr ' ' '.')
  awk -v name="$name" -v dotted="$dotted" '
    !done && $0 == ".Nm \"" name "\"" { print ".Nm " dotted; done = 1; next }
    $0 == ".Nm" { print ".Nm \"" name "\""; next }
    $0 == "" { print ".Pp"; next }
    { print }' "$f" > "$f.tmp" && mv "$f.tmp" "$f"
done
