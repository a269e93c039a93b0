#!/usr/bin/env bash
# make demo: the main job on an embedded default, loopback only.
# Generates sample images, serves them with nginx on 127.0.0.1 (its own
# config and port, stopped on exit), and loads them with `sdimage fetch`
# three times in one process — cold (network), warm (disk), hot (memory) —
# printing the summaries side by side and writing a contact sheet.
# URLS=file.txt fetches a list of yours instead of the samples.
set -u
cd "$(dirname "$0")/.."
bin=$(swift build -c release --show-bin-path)/sdimage
out=${OUT:-$PWD/build/demo}
work=$(mktemp -d /tmp/sdimage-demo.XXXXXX)
cleanup() { bash Tests/Servers/servers.sh stop "$work" >/dev/null 2>&1; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$out"
rm -rf "$out/cache"

if [ -n "${URLS:-}" ]; then
  [ -f "$URLS" ] || { echo "demo: URLS=$URLS is not a file"; exit 2; }
  list=$URLS
  echo "demo: fetching the URLs listed in $URLS"
else
  base=$(bash scripts/serve-samples.sh "$bin" "$work" $$ --count "${COUNT:-48}") \
    || { echo "demo: could not make and serve the samples"; exit 1; }
  list="$work/urls.txt"
  echo "demo: $(wc -l < "$list") sample images served by nginx at $base"
fi
echo
"$bin" fetch --list "$list" --cache-dir "$out/cache" --cold-warm-hot --concurrency 6 \
  --contact-sheet "$out/contact-sheet.png"
rc=$?
echo
echo "cache: $out/cache   contact sheet: $out/contact-sheet.png"
exit $rc
