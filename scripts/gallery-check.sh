#!/usr/bin/env bash
# make gallery-check: the desktop galleries (C on GTK 4, Swift on SDL2 with
# its OpenGL and its software renderer) in a real X server (Xvfb, started
# once), scrolled by synthetic input, their screenshots checked against the
# decoded pixels (scripts/gallery_check.py). Images: `sdimage samples`
# served by nginx on loopback. Screenshots are left in build/gallery/.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/build/gallery}
bin=${SDIMAGE:-$(swift build --show-bin-path)/sdimage}
gtk=${GTK_GALLERY:-build/release/gtk_gallery}
sdl=${SDL_GALLERY:-$(dirname "$bin")/sdgallery}
[ -x "$bin" ] || { echo "gallery-check: $bin missing (swift build)"; exit 1; }
[ -x "$sdl" ] || { echo "gallery-check: $sdl missing (swift build with libsdl2-dev)"; exit 1; }
[ -x "$gtk" ] || { echo "gallery-check: $gtk missing (make build-c with libgtk-4-dev)"; exit 1; }
work=$(mktemp -d /tmp/sdgallery.XXXXXX)
xpid=
cleanup() {
  [ -n "$xpid" ] && kill "$xpid" 2>/dev/null
  bash Tests/Servers/servers.sh stop "$work" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
rm -rf "$out" && mkdir -p "$out"
base=$(bash scripts/serve-samples.sh "$bin" "$work" $$ --count "${COUNT:-$([ -n "${SHOW:-}" ] && echo 300 || echo 100)}" --max-size 600 --animated 4) \
  || { echo "gallery-check: could not make and serve the samples"; exit 1; }

if [ -n "${SHOW:-}" ]; then  # make gallery: on your display, until you close it
  [ -n "${DISPLAY:-}" ] || { echo "gallery: no DISPLAY (make gallery-check runs it under Xvfb)"; exit 1; }
  "$sdl" --list "$work/urls.txt" --cell 128 --width 900 --height 700 --indicators "${INDICATORS:-activity}"
  exit $?
fi

# one X server for every gallery; -displayfd picks a free display number
exec 3>"$work/display"
Xvfb -displayfd 3 -screen 0 1024x768x24 -nolisten tcp >"$work/xvfb.log" 2>&1 &
xpid=$!
for _ in $(seq 100); do [ -s "$work/display" ] && break; sleep 0.1; done
exec 3>&-
[ -s "$work/display" ] || { echo "gallery-check: Xvfb did not start"; cat "$work/xvfb.log"; exit 1; }
display=:$(head -1 "$work/display")
echo "gallery-check: $(wc -l < "$work/urls.txt") images from $base, X server $display"

rc=0
py=/usr/bin/python3; [ -x "$py" ] || py=python3   # Debian's, with python3-pil
# each check's output is also kept, so that its failures can be repeated last
check() { "$py" scripts/gallery_check.py --display "$display" --www "$work/www/img" --sdimage "$bin" \
  --out "$out" --cell 128 "$@" 2>&1 | tee -a "$work/checks.log"; return "${PIPESTATUS[0]}"; }
# a slow cell: the fault server sends all but the last piece of a photo,
# then holds it until the check opens the gate (one gate per gallery)
fault=$(grep '^SD_TEST_FAULT=' "$work/env" | cut -d= -f2)
held=$(grep -m1 '/photo-' "$work/urls.txt" | sed 's|.*/img/||')
# C on GTK 4 (first frames of animations); the slow cell first: a spinner
# must turn in it
{ echo "$fault/drip-file?name=img/$held&gate=gtk"; cat "$work/urls.txt"; } > "$work/urls-gtk.txt"
# (each gallery's load timeout is long: the slow cell waits for as long as the
# checks before the gate take, which on a starved machine was over 15 s)
check --name gtk --expect-indicator -- "$gtk" --list "$work/urls-gtk.txt" --cell 128 --timeout 600 || rc=1
# Swift on SDL2 through the WebCache layer: animations must play; the first
# URL is missing (a 404): its cell shows the gallery's failure image; the
# second is the slow cell: the activity indicator must turn in it
{ echo "$base/missing/none.jpg"; echo "$fault/drip-file?name=img/$held&gate=sdl"; cat "$work/urls.txt"; } > "$work/urls-sdl.txt"
check --name sdl --expect-playing --expect-indicator --idle-cpu -- "$sdl" --list "$work/urls-sdl.txt" --cell 128 \
  --width 700 --height 540 --indicators activity --timeout 600 || rc=1
# the same without a GPU blend (SDL's software renderer): images with alpha composited first
SDL_RENDER_DRIVER=software check --name sdl-software --scrolls 1 -- "$sdl" --list "$work/urls-sdl.txt" --cell 128 \
  --width 700 --height 540 --timeout 600 || rc=1
if [ $rc -ne 0 ]; then  # the failures again, where the end of a long log shows them
  n=$(grep -ac "FAIL" "$work/checks.log")
  echo "gallery-check: $n failures (the first 40 below); screenshots in $out"
  [ "$n" -gt 0 ] && grep -a "FAIL" "$work/checks.log" | head -40
fi
exit $rc
