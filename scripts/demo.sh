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
  mkdir -p "$work/www/img"
  "$bin" samples --out "$work/www/img" --count "${COUNT:-48}" || exit 1
  # the fault server (started alongside) serves two of them back
  cp "$work/www/img/photo-000.jpg" "$work/www/img/small.jpg"
  cp "$work/www/img/progressive-001.jpg" "$work/www/img/prog.jpg"
  bash Tests/Servers/servers.sh start "$work" $$ || { echo "demo: could not start nginx"; exit 1; }
  base=$(grep '^SD_TEST_HTTP=' "$work/env" | cut -d= -f2)
  list="$work/urls.txt"
  ls "$work/www/img" | grep -v -e '^small.jpg$' -e '^prog.jpg$' | sed "s|^|$base/img/|" > "$list"
  echo "demo: $(wc -l < "$list") sample images served by nginx at $base"
fi
echo
"$bin" fetch --list "$list" --cache-dir "$out/cache" --cold-warm-hot --concurrency 6 \
  --contact-sheet "$out/contact-sheet.png"
rc=$?
echo
echo "cache: $out/cache   contact sheet: $out/contact-sheet.png"
exit $rc
