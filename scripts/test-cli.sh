#!/usr/bin/env bash
# sdimage decode: output, exit codes, one-line errors, incomplete files.
set -u
cd "$(dirname "$0")/.."
bin=$(swift build --show-bin-path)/sdimage
corpus=${SD_CORPUS_DIR:-../shared/corpus}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
check() { if eval "$2"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED: $1"; fi; }

"$bin" decode --help >/dev/null; check "decode --help" '[ $? -eq 0 ]'
hv=$(awk '/^#define SD_VERSION_(MAJOR|MINOR|PATCH) /{v=v (v?".":"") $3} END{print v}' include/sdcore/sd_common.h)
check "--version prints the one version ($hv)" '[ "$("$bin" --version)" = "$hv" ]'
check "links none of libheif, libjxl, librsvg (loaded on first use)" '! readelf -d "$bin" | grep NEEDED | grep -qE "lib(heif|jxl|rsvg)"'
check "--help documents the exit codes" '"$bin" --help | grep -q "Exit codes: 0"'
check "fetch --help groups its options" '[ $("$bin" fetch --help | grep -cE "^(NETWORK|UNTRUSTED URLS|CACHE|DECODE|OUTPUT|FLEET.*):$") -eq 6 ]'
if [ -f "$corpus/MANIFEST.tsv" ]; then
  f="$corpus/exif-orientation/Portrait_6.jpg"
  "$bin" decode "$f" --raw "$tmp/raw" 2>"$tmp/err"; rc=$?
  check "decode ok" '[ $rc -eq 0 ]'
  check "last stderr line is WxH" 'tail -1 "$tmp/err" | grep -q "^1200x1800 jpeg orientation=6$"'
  want=$(awk -F'\t' '$1=="exif-orientation/Portrait_6.jpg"{print $7}' "$corpus/MANIFEST.tsv")
  check "raw bytes match the oracle" '[ "$(sha256sum < "$tmp/raw" | cut -d" " -f1)" = "$want" ]'
  check "raw to stdout" '[ "$("$bin" decode "$f" --raw - 2>/dev/null | sha256sum | cut -d" " -f1)" = "$want" ]'
  "$bin" decode "$f" --max-pixel-size 90 --png "$tmp/t.png" 2>"$tmp/err"
  check "thumbnail size" 'tail -1 "$tmp/err" | grep -q "^60x90 "'
  check "png written and decodable" '"$bin" decode "$tmp/t.png" 2>&1 | grep -q "^60x90 png"'
  # --filter / --linear / --shrink-margin reach the decoder: each its own pixels, the same size
  for k in lanczos3 mitchell catmull-rom bilinear box; do
    "$bin" decode "$f" --max-pixel-size 90 --filter $k --raw - 2>"$tmp/err" | sha256sum > "$tmp/f.$k"
    check "--filter $k keeps the size" 'tail -1 "$tmp/err" | grep -q "^60x90 "'
  done
  "$bin" decode "$f" --max-pixel-size 90 --linear --raw - 2>/dev/null | sha256sum > "$tmp/f.linear"
  "$bin" decode "$f" --max-pixel-size 90 --shrink-margin 4 --filter box --raw - 2>/dev/null | sha256sum > "$tmp/f.margin4"
  check "filters, linear light and the shrink margin give different pixels" \
    '[ $(cat "$tmp"/f.* | sort -u | wc -l) -eq 7 ]'
  "$bin" decode "$f" --max-pixel-size 90 --filter sinc 2>"$tmp/err"; rc=$?
  check "--filter with an unknown name: usage error naming the filters" '[ $rc -eq 2 ] && grep -q "catmull-rom" "$tmp/err"'
  "$bin" decode "$f" --no-orientation 2>"$tmp/err"
  check "no-orientation keeps stored shape" 'tail -1 "$tmp/err" | grep -q "^1800x1200 jpeg orientation=6$"'
  head -c 100000 "$f" > "$tmp/cut.jpg"
  "$bin" decode "$tmp/cut.jpg" --png "$tmp/cut.png" 2>"$tmp/err"; rc=$?
  check "truncated file still decodes" '[ $rc -eq 0 ] && [ -s "$tmp/cut.png" ]'
  check "truncated file says incomplete" 'tail -1 "$tmp/err" | grep -q "incomplete"'
  # --out converts through the coders manager; the result decodes back
  "$bin" decode "$f" --max-pixel-size 300 --out "$tmp/c.webp" --quality 80 2>"$tmp/err"
  check "--out webp" '"$bin" decode "$tmp/c.webp" 2>&1 | grep -q "^200x300 webp"'
  "$bin" decode "$tmp/c.webp" --out "$tmp/c.avif" --quality 100 2>"$tmp/err"
  check "--out avif (lossless) decodes to the same pixels" \
    '[ "$("$bin" decode "$tmp/c.avif" --raw - 2>/dev/null | sha256sum)" = "$("$bin" decode "$tmp/c.webp" --raw - 2>/dev/null | sha256sum)" ]'
  "$bin" decode "$tmp/c.webp" --out "$tmp/c.bmp" 2>"$tmp/err"
  check "--out bmp (a format with no Swift of its own) decodes to the same pixels" \
    '[ "$("$bin" decode "$tmp/c.bmp" --raw - 2>/dev/null | sha256sum)" = "$("$bin" decode "$tmp/c.webp" --raw - 2>/dev/null | sha256sum)" ]'
  "$bin" decode "$tmp/c.webp" --out "$tmp/c.jxl" --lossless 2>"$tmp/err"
  check "--out jxl (lossless; a codec row with no Swift of its own) decodes to the same pixels" \
    '[ "$("$bin" decode "$tmp/c.jxl" --raw - 2>/dev/null | sha256sum)" = "$("$bin" decode "$tmp/c.webp" --raw - 2>/dev/null | sha256sum)" ]'
  "$bin" decode "$f" --max-pixel-size 300 --out "$tmp/c.heic" --quality 80 2>"$tmp/err"
  check "--out heic (x265 through libheif) decodes back" '"$bin" decode "$tmp/c.heic" 2>&1 | grep -q "^200x300 heic"'
  # SVG (sdimage links SDWebImageSVGCoder): drawn at the size asked for, as rsvg-convert draws it
  printf '%s' '<svg xmlns="http://www.w3.org/2000/svg" width="60" height="40"><circle cx="30" cy="20" r="18" fill="#c03" fill-opacity=".6"/></svg>' > "$tmp/s.svg"
  "$bin" decode "$tmp/s.svg" --max-pixel-size 300 --png "$tmp/s.png" 2>"$tmp/err"
  check "an SVG decodes at --max-pixel-size (vector: up to 300x200)" 'tail -1 "$tmp/err" | grep -q "^300x200 svg"'
  if command -v rsvg-convert >/dev/null; then
    rsvg-convert -w 300 -a -o "$tmp/s-ref.png" < "$tmp/s.svg"
    "$bin" decode "$tmp/s.svg" --max-pixel-size 300 --raw "$tmp/s.raw" 2>/dev/null
    "$bin" decode "$tmp/s-ref.png" --raw "$tmp/s-ref.raw" 2>/dev/null
    # within 1: rsvg-convert's PNG holds cairo's pixels unpremultiplied
    check "the SVG's pixels are rsvg-convert's (within 1)" \
      'python3 -c "import sys; a, b = (open(f, \"rb\").read() for f in sys.argv[1:]); sys.exit(not (len(a) == len(b) == 240000 and max(abs(x - y) for x, y in zip(a, b)) <= 1))" "$tmp/s.raw" "$tmp/s-ref.raw"'
  fi
  big=$(stat -c %s "$tmp/c.webp")
  "$bin" decode "$f" --max-pixel-size 300 --out "$tmp/small.jpg" --max-file-size $((big / 2)) 2>"$tmp/err"
  check "--max-file-size is honoured" '[ $(stat -c %s "$tmp/small.jpg") -le $((big / 2)) ]'
  "$bin" decode "$f" --out "$tmp/x.tiff" 2>"$tmp/err"; rc=$?
  check "--out with an unknown extension fails" '[ $rc -ne 0 ] && grep -q "unknown extension" "$tmp/err"'
  "$bin" decode "$corpus/pngsuite/xc9n2c08.png" 2>"$tmp/err"; rc=$?
  check "corrupt png fails" '[ $rc -ne 0 ] && [ $(wc -l < "$tmp/err") -eq 1 ]'
else
  echo "corpus not found at $corpus: corpus checks skipped"
fi
# every frame of the animated corpus, through the README's harness protocol
anim=${SD_CORPUS_ANIM_DIR:-../shared/corpus-anim}
if [ -f "$anim/MANIFEST.tsv" ]; then
  check "decode --frames matches corpus-anim" 'python3 scripts/corpus-anim-harness.py "$bin" "$anim" gif,webp,apng'
  "$bin" decode "$anim/gif/loop_5.gif" --frames 2>"$tmp/err" >/dev/null
  check "--frames without --raw reports frames and loop" 'grep -c "^frame " "$tmp/err" | grep -q "^3$" && grep -q "^loop 5$" "$tmp/err"'
  "$bin" decode "$anim/gif/loop_5.gif" --raw - 2>"$tmp/err" | wc -c > "$tmp/n"
  check "without --frames: the first frame only" '[ "$(cat "$tmp/n")" = 256 ] && tail -1 "$tmp/err" | grep -q "^8x8 gif"'
  # a full disk under --raw: a clear error and exit 1, not a crash
  "$bin" decode "$anim/gif/loop_5.gif" --frames --raw - >/dev/full 2>"$tmp/err"; rc=$?
  check "--frames --raw onto a full disk: cannot write, exit 1" '[ $rc -eq 1 ] && grep -q "cannot write -" "$tmp/err"'
  "$bin" decode "$anim/gif/loop_5.gif" --raw - >/dev/full 2>"$tmp/err"; rc=$?
  check "--raw onto a full disk: cannot write, exit 1" '[ $rc -eq 1 ] && grep -q "cannot write -" "$tmp/err"'
  # an animation converted to WebP (lossless), GIF, PNG (APNG) or AVIF (quality 100: lossless)
  # keeps every frame, its delays and loop count (pixels exact: lossless WebP and AVIF, a GIF of at
  # most 255 colours a frame gets its exact palette, and APNG's straight 8-bit pixels are exact for
  # alpha 0 and 255; this GIF loops forever, as every AVIF sequence does)
  src="$anim/gif/dispose2_trans.gif"
  for ext in webp gif png avif; do
    "$bin" decode "$src" --out "$tmp/anim.$ext" --lossless --quality 100 2>"$tmp/err"
    check "gif -> $ext keeps the animation" 'grep -q "(4 frames)" "$tmp/err" && [ "$("$bin" decode "$tmp/anim.$ext" --frames --raw - 2>"$tmp/err2" | sha256sum)" = "$("$bin" decode "$src" --frames --raw - 2>"$tmp/err3" | sha256sum)" ] && [ "$(cat "$tmp/err2")" = "$(cat "$tmp/err3")" ]'
  done
else
  echo "corpus-anim not found at $anim: animated checks skipped"
fi
printf '<html>404</html>' > "$tmp/page.jpg"
"$bin" decode "$tmp/page.jpg" 2>"$tmp/err"; rc=$?
check "html fails with one line" '[ $rc -eq 1 ] && [ $(wc -l < "$tmp/err") -eq 1 ] && grep -q "unsupported format" "$tmp/err"'
"$bin" decode "$tmp/missing.jpg" 2>/dev/null; rc=$?
check "missing file fails" '[ $rc -eq 1 ]'
"$bin" decode "$tmp/page.jpg" --max-pixel-size 0 2>/dev/null; rc=$?
check "usage error exits 2" '[ $rc -eq 2 ]'

# Huge images under an address-space limit (ulimit -v 2 GiB): a clean
# error before allocating, never a trap (a failed Swift allocation is
# SIGILL). The decode budget takes half of the room left under the limit.
printf '<svg xmlns="http://www.w3.org/2000/svg" width="100000" height="100000"><rect width="100%%" height="100%%" fill="red"/></svg>' > "$tmp/huge.svg"
(ulimit -v 2097152; exec "$bin" decode "$tmp/huge.svg" --raw "$tmp/huge.raw") 2>"$tmp/err"; rc=$?
check "a 100000x100000 SVG under ulimit -v 2 GiB: 'too large for the memory limit', exit 1 ($rc)" '[ $rc -eq 1 ] && grep -q "too large for the memory limit" "$tmp/err"'
/usr/bin/python3 -c 'from PIL import Image; Image.new("RGB", (16000, 16000), (58, 170, 102)).save("'"$tmp"'/huge.jpg", quality=50)'
(ulimit -v 2097152; exec "$bin" decode "$tmp/huge.jpg" --raw "$tmp/huge.raw") 2>"$tmp/err"; rc=$?
check "a 16000x16000 JPEG under ulimit -v 2 GiB: 'too large for the memory limit', exit 1 ($rc)" '[ $rc -eq 1 ] && grep -q "too large for the memory limit" "$tmp/err"'
# with room for the canvas the JPEG is written whole. The room is what the
# limit leaves beside the process's own mappings, which grow with its
# threads (8 MiB stacks, 64 MiB malloc arenas): 4 GiB and two arenas. (The
# SVG would do too, but its render has a wall-clock deadline, 10 s, which
# a 16384x16384 fill overran on a loaded machine.)
(ulimit -v 4194304; MALLOC_ARENA_MAX=2 exec "$bin" decode "$tmp/huge.jpg" --raw "$tmp/huge.raw") 2>"$tmp/err"; rc=$?
check "the same JPEG under ulimit -v 4 GiB: 16000x16000 written raw ($rc: $(tail -1 "$tmp/err"))" '[ $rc -eq 0 ] && [ "$(stat -c %s "$tmp/huge.raw")" -eq $((16000 * 16000 * 4)) ] && grep -q "^16000x16000 jpeg" "$tmp/err"'
rm -f "$tmp/huge.raw" "$tmp/huge.jpg"

# samples, fetch and cache against nginx on loopback
"$bin" samples --out "$tmp/www/img" --count 8 >/dev/null; rc=$?
check "samples written" '[ $rc -eq 0 ] && [ $(ls "$tmp/www/img" | wc -l) -eq 12 ]'
check "animated samples: a GIF and a WebP of 16 frames each" '"$bin" decode "$tmp"/www/img/anim-000.gif --frames 2>&1 | grep -c "^frame " | grep -q "^16$" && "$bin" decode "$tmp"/www/img/anim-001.webp --frames 2>&1 | grep -q "^frame 15 280x240 80"'
check "every sample decodes" 'for f in "$tmp"/www/img/*; do "$bin" decode "$f" 2>/dev/null || exit 1; done'
check "EXIF samples carry their orientation" '"$bin" decode "$tmp"/www/img/exif*-003.jpg 2>&1 | grep -q "orientation=[68]"'
cp "$tmp"/www/img/photo-000.jpg "$tmp/www/img/small.jpg"; cp "$tmp"/www/img/progressive-001.jpg "$tmp/www/img/prog.jpg"
if bash Tests/Servers/servers.sh start "$tmp" $$ >/dev/null 2>&1; then
  base=$(grep '^SD_TEST_HTTP=' "$tmp/env" | cut -d= -f2)
  for f in photo-000.jpg progressive-001.jpg alpha-002.png; do echo "$base/img/$f"; done > "$tmp/list.txt"
  "$bin" fetch --list "$tmp/list.txt" --cache-dir "$tmp/cache" --json >"$tmp/out.json" 2>"$tmp/err"; rc=$?
  check "fetch ok" '[ $rc -eq 0 ] && grep -q "ok.:3," "$tmp/out.json" && grep -q "network.:3," "$tmp/out.json"'
  # the library's decoderIsolation: the same three decoded in sandboxed
  # workers (the same pixels as here), and a hostile SVG (a turbulence
  # filter of ~4 CPU-seconds) ending as its load's error, within its budget
  "$bin" fetch --list "$tmp/list.txt" --no-cache --isolate-decoders --out "$tmp/iso" --json >"$tmp/out.json" 2>"$tmp/err"; rc=$?
  "$bin" fetch --list "$tmp/list.txt" --no-cache --out "$tmp/here" --json >/dev/null 2>&1
  check "fetch --isolate-decoders: 3 ok, the same PNGs as decoded here ($rc)" '[ $rc -eq 0 ] && grep -q "ok.:3," "$tmp/out.json" && [ $(ls "$tmp/iso" | wc -l) -eq 3 ] && diff -r "$tmp/iso" "$tmp/here" >/dev/null'
  printf "%s" "<svg xmlns='http://www.w3.org/2000/svg' width='2000' height='2000'><filter id='f'><feTurbulence baseFrequency='0.05' numOctaves='2000'/></filter><rect width='2000' height='2000' filter='url(#f)'/></svg>" > "$tmp/www/img/hostile.svg"
  "$bin" fetch "$base/img/hostile.svg" --thumbnail 200 --no-cache --isolate-decoders --decode-cpu-ms 500 >"$tmp/out" 2>"$tmp/err"; rc=$?
  check "fetch --isolate-decoders: a hostile SVG fails with its decode budget ($rc: $(tail -1 "$tmp/err"))" '[ $rc -eq 1 ] && grep -q "ms of CPU\|took more than" "$tmp/err"'
  "$bin" fetch --list "$tmp/list.txt" --cache-dir "$tmp/cache" --json >"$tmp/out.json" 2>/dev/null
  check "second run comes from disk" 'grep -q "disk.:3," "$tmp/out.json"'
  "$bin" fetch --list "$tmp/list.txt" --cache-dir "$tmp/cache" --max-pixels 1000 --json >"$tmp/out.json" 2>/dev/null; rc=$?
  check "--max-pixels binds disk hits too (refused there and on the network)" '[ $rc -eq 1 ] && grep -q "ok.:0," "$tmp/out.json" && grep -q "disk.:0," "$tmp/out.json"'
  "$bin" fetch --list "$tmp/list.txt" --cache-dir "$tmp/cache" --json >"$tmp/out.json" 2>/dev/null
  check "entries refused by the caps stay on disk" 'grep -q "disk.:3," "$tmp/out.json"'
  "$bin" fetch "$base/img/photo-000.jpg" "$base/img/photo-000.jpg" --concurrency 1 --cache-dir "$tmp/cache-m" --json >"$tmp/out.json" 2>/dev/null
  check "a repeated URL comes from the memory cache" 'grep -q "network.:1," "$tmp/out.json" && grep -q "memory.:1" "$tmp/out.json"'
  # a thumbnail of a progressive JPEG ends its transfer once settled (grey,
  # libjpeg's script: the first scan settles a 1/8 thumbnail within a level),
  # and fetch prints the bytes against the file's. The fault server sends
  # the first half and holds the rest until its gate opens: only an early
  # end completes, whatever the machine's speed.
  fault=$(grep '^SD_TEST_FAULT=' "$tmp/env" | cut -d= -f2)
  mkdir -p "$tmp/www/trickle"
  djpeg "$corpus/exif-orientation/Landscape_1.jpg" | cjpeg -quality 85 -grayscale -progressive > "$tmp/www/trickle/grey.jpg"
  size=$(stat -c %s "$tmp/www/trickle/grey.jpg")
  held="$fault/drip-file?name=trickle/grey.jpg&piece=4096&gap=0&mid=cli$$&id=cli$$"
  "$bin" fetch "$held" --thumbnail 112 --no-cache --json >"$tmp/out.json" 2>"$tmp/err"; rc=$?
  /usr/bin/python3 -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1] + '/open?gate=cli$$', timeout=60).read()" "$fault"
  check "fetch --thumbnail: the transfer ends early; bytes fetched of the whole file in the summary" '[ $rc -eq 0 ] && python3 -c "
import json, sys; s = json.load(open(sys.argv[1]))
sys.exit(not (s[\"ok\"] == 1 and 0 < s[\"bytes_fetched\"] <= s[\"bytes_whole\"] / 2 + 4096 and s[\"bytes_whole\"] == int(sys.argv[2])))" "$tmp/out.json" $size || { cat "$tmp/out.json"; false; }'
  "$bin" fetch "$held" --thumbnail 112 --no-cache --whole-file --json >"$tmp/out.json" 2>/dev/null
  check "fetch --whole-file: the whole file" 'grep -q "\"bytes_fetched\":$size," "$tmp/out.json" && grep -q "\"bytes_whole\":$size," "$tmp/out.json"'
  "$bin" fetch "$held" --thumbnail 112 --no-cache >"$tmp/out" 2>/dev/null
  check "fetch's table: MB fetched and the share of whole files" 'grep -q "^MB fetched" "$tmp/out" && grep -qE "^of whole files +[0-9]+%" "$tmp/out"'
  "$bin" fetch "$base/img/alpha-002.png" "$base/img/alpha-002.png" --concurrency 1 --cache-dir "$tmp/cache-m" --memory-cache 0 --json >"$tmp/out.json" 2>/dev/null
  check "--memory-cache 0 keeps nothing in memory" 'grep -q "network.:1," "$tmp/out.json" && grep -q "disk.:1," "$tmp/out.json" && grep -q "memory.:0" "$tmp/out.json"'
  if [ -f "$anim/gif/loop_5.gif" ]; then
    cp "$anim/gif/loop_5.gif" "$tmp/www/img/anim.gif"
    "$bin" fetch "$base/img/anim.gif" --no-cache --json >"$tmp/out.json" 2>/dev/null
    check "fetch reports an animation and its frames" 'grep -q "\"animated\":1," "$tmp/out.json" && grep -q "\"animated_frames\":3," "$tmp/out.json"'
  fi
  "$bin" fetch --list "$tmp/list.txt" --cache-dir "$tmp/cache" --cold-warm-hot --out "$tmp/png"       --contact-sheet "$tmp/sheet.png" >"$tmp/out.txt" 2>/dev/null; rc=$?
  check "cold-warm-hot summary" '[ $rc -eq 0 ] && grep -q "from memory  *0  *0  *3" "$tmp/out.txt"'
  check "decoded PNGs written" '[ $(ls "$tmp/png" | wc -l) -eq 3 ]'
  check "contact sheet decodes" '"$bin" decode "$tmp/sheet.png" 2>&1 | grep -q " png "'
  # an animation's cell carries the badge (its red tag, 24x16 less the triangle), a still's does not
  "$bin" fetch "$base/img/anim-001.webp" "$base/img/photo-000.jpg" --no-cache --contact-sheet "$tmp/sheet2.png" >/dev/null 2>&1
  "$bin" decode "$tmp/sheet2.png" --raw "$tmp/sheet2.raw" 2>"$tmp/err"
  check "contact sheet badges animations only" 'python3 -c "
import sys; d=open(sys.argv[1],\"rb\").read(); w=int(sys.argv[2])
red=lambda x0: sum(1 for y in range(8,168) for x in range(x0,x0+160) if d[(y*w+x)*4:(y*w+x)*4+4]==bytes((0x31,0x3c,0xe0,0xff)))
sys.exit(0 if red(8) > 300 and red(176) == 0 else 1)" "$tmp/sheet2.raw" "$(tail -1 "$tmp/err" | cut -dx -f1)"'
  "$bin" fetch "$base/img/photo-000.jpg" "$base/img/none.jpg" --cache-dir "$tmp/cache" >/dev/null 2>"$tmp/err"; rc=$?
  check "a failure exits 1 with one line naming it" '[ $rc -eq 1 ] && [ $(grep -c FAILED "$tmp/err") -eq 1 ] && grep -q "none.jpg" "$tmp/err"'
  fault=$(grep '^SD_TEST_FAULT=' "$tmp/env" | cut -d= -f2)
  "$bin" fetch "$fault/flaky?id=cli$$&fail=2" --no-cache --retries 2 --json >"$tmp/out.json" 2>"$tmp/err"; rc=$?
  check "--retries rides out two 503s" '[ $rc -eq 0 ] && grep -q "ok.:1," "$tmp/out.json"'
  "$bin" fetch "$fault/flaky?id=cli0$$&fail=1" --no-cache >/dev/null 2>&1; rc=$?
  check "without --retries a 503 fails" '[ $rc -eq 1 ]'
  # --refresh while the server changed every image (issue 13, defect 1: a trap,
  # URLs counted twice, a slow one dropped); three speeds, one run
  for d in 0 400 50; do echo "$fault/changing?id=cli$$-$d&delay=$d"; done > "$tmp/changing.txt"
  "$bin" fetch --list "$tmp/changing.txt" --cache-dir "$tmp/rcache" --json >/dev/null 2>&1
  "$bin" fetch --list "$tmp/changing.txt" --cache-dir "$tmp/rcache" --refresh --json >"$tmp/out.json" 2>"$tmp/err"; rc=$?
  check "--refresh with changed images: each URL once, from the network" \
    '[ $rc -eq 0 ] && grep -q "images.:3," "$tmp/out.json" && grep -q "ok.:3," "$tmp/out.json" && grep -q "network.:3," "$tmp/out.json" && grep -q "failed.:0," "$tmp/out.json"'
  "$bin" fetch --list "$tmp/list.txt" --cache-dir "$tmp/cache" --refresh --json >"$tmp/out.json" 2>"$tmp/err"; rc=$?
  check "--refresh with unchanged images: served from the cache" \
    '[ $rc -eq 0 ] && grep -q "ok.:3," "$tmp/out.json" && grep -q "disk.:3," "$tmp/out.json"'
  # --server-policy: a redirect to localhost refused; the trusted host served; file:// refused
  fport=${fault##*:}
  "$bin" fetch "$fault/redirect?to=http%3A%2F%2Flocalhost%3A$fport%2Fok" "$fault/ok" "file://$tmp/www/img/small.jpg" \
    --no-cache --server-policy --trust-host 127.0.0.1 --json >"$tmp/out.json" 2>"$tmp/err"; rc=$?
  check "--server-policy refuses loopback redirects and file URLs, serves the trusted host" \
    '[ $rc -eq 1 ] && grep -q "ok.:1," "$tmp/out.json" && grep -q "failed.:2," "$tmp/out.json" && grep -q "loopback" "$tmp/out.json"'
  "$bin" fetch "$fault/redirect?to=http%3A%2F%2Flocalhost%3A$fport%2Fok" --no-cache --json >"$tmp/out.json" 2>/dev/null; rc=$?
  check "without --server-policy the same redirect loads" '[ $rc -eq 0 ] && grep -q "ok.:1," "$tmp/out.json"'
  # --redis (issue 17): a second process with an empty local cache gets every image from Redis;
  # with Redis dead the fetch still completes from the network
  if command -v redis-server >/dev/null && bash Tests/Servers/redis.sh start "$tmp/redis" $$ >/dev/null 2>&1; then
    rurl=$(cut -d= -f2 "$tmp/redis/env")
    "$bin" fetch --list "$tmp/list.txt" --cache-dir "$tmp/rc1" --redis "$rurl" --json >"$tmp/out.json" 2>/dev/null; rc=$?
    check "--redis: first fetch from the network" '[ $rc -eq 0 ] && grep -q "network.:3," "$tmp/out.json"'
    "$bin" fetch --list "$tmp/list.txt" --cache-dir "$tmp/rc2" --redis "$rurl" --json >"$tmp/out.json" 2>/dev/null; rc=$?
    check "--redis: a fresh local cache is served from Redis (counted as such)" '[ $rc -eq 0 ] && grep -q "network.:0," "$tmp/out.json" && grep -q "redis.:3," "$tmp/out.json" && grep -q "disk.:0," "$tmp/out.json"'
    check "--redis: the local cache is filled too" '"$bin" cache info --cache-dir "$tmp/rc2" --json | grep -q "entries.:3,"'
    "$bin" fetch --list "$tmp/list.txt" --cache-dir "$tmp/rc2" --redis "$rurl" --json >"$tmp/out.json" 2>/dev/null; rc=$?
    check "--redis: then from the local disk" '[ $rc -eq 0 ] && grep -q "disk.:3," "$tmp/out.json" && grep -q "redis.:0," "$tmp/out.json"'
    "$bin" fetch --list "$tmp/list.txt" --cache-dir "$tmp/rc4" --redis "$rurl" --max-pixels 1000 --json >"$tmp/out.json" 2>/dev/null; rc=$?
    check "--redis: --max-pixels binds Redis hits too" '[ $rc -eq 1 ] && grep -q "ok.:0," "$tmp/out.json" && grep -q "redis.:0," "$tmp/out.json"'
    "$bin" cache info --redis "$rurl" --json >"$tmp/info.json" 2>/dev/null; rc=$?
    check "cache info --redis: entries, bytes, hit rate" '[ $rc -eq 0 ] && python3 -c "
import json, sys; s = json.load(open(sys.argv[1]))
sys.exit(0 if s[\"entries\"] == 3 and s[\"bytes\"] > 0 and s[\"keyspace_hits\"] >= 3 and 0 < s[\"hit_rate\"] <= 1 else 1)" "$tmp/info.json"'
    bash Tests/Servers/redis.sh kill9 "$tmp/redis" >/dev/null 2>&1
    "$bin" cache info --redis "$rurl" >/dev/null 2>"$tmp/err"; rc=$?
    check "cache info --redis with Redis down: exit 1, says so" '[ $rc -eq 1 ] && grep -q "did not answer" "$tmp/err"'
    "$bin" fetch --list "$tmp/list.txt" --cache-dir "$tmp/rc3" --redis "$rurl" --json >"$tmp/out.json" 2>"$tmp/err"; rc=$?
    check "--redis down: every image still loads, one warning" '[ $rc -eq 0 ] && grep -q "ok.:3," "$tmp/out.json" && [ $(grep -c "unavailable" "$tmp/err") -eq 1 ]'
  else
    check "redis-server for the --redis checks" 'false'
  fi
  # decode caps (issue 13): per image, and the budget all decodes in flight share
  "$bin" fetch "$base/img/photo-000.jpg" --no-cache --max-dimension 100 --json >"$tmp/out.json" 2>"$tmp/err"; rc=$?
  check "--max-dimension refuses a larger image" '[ $rc -eq 1 ] && grep -q "too large" "$tmp/out.json"'
  "$bin" fetch "$base/img/progressive-001.jpg" --no-cache --max-codec-memory 1 --json >"$tmp/out.json" 2>"$tmp/err"; rc=$?
  check "--max-codec-memory 1 refuses a progressive JPEG's coefficients" '[ $rc -eq 1 ] && grep -q "failed.:1," "$tmp/out.json"'
  "$bin" fetch "$base/img/photo-000.jpg" --no-cache --max-codec-memory 1 --json >"$tmp/out.json" 2>/dev/null; rc=$?
  check "--max-codec-memory 1 still loads a baseline JPEG" '[ $rc -eq 0 ]'
  "$bin" fetch "$base/img/photo-000.jpg" --no-cache --decode-budget 1 --json >"$tmp/out.json" 2>"$tmp/err"; rc=$?
  check "--decode-budget 1 refuses a canvas over 1 MiB, naming the budget" '[ $rc -eq 1 ] && grep -q "budget" "$tmp/out.json"'
  # --max-redirects and --timeout (issue 13: every cap of the preset is a flag)
  "$bin" fetch "$fault/redirect?to=%2Fok" --no-cache --max-redirects 0 --json >"$tmp/out.json" 2>/dev/null; rc=$?
  check "--max-redirects 0 refuses a redirect" '[ $rc -eq 1 ] && grep -q "failed.:1," "$tmp/out.json"'
  "$bin" fetch "$fault/redirect?to=%2Fok" --no-cache --max-redirects 1 --json >"$tmp/out.json" 2>/dev/null; rc=$?
  check "--max-redirects 1 follows one" '[ $rc -eq 0 ]'
  start=$(date +%s%N)
  "$bin" fetch "$fault/stall?id=cli$$" --no-cache --timeout 1 --json >"$tmp/out.json" 2>/dev/null; rc=$?
  took=$(( ($(date +%s%N) - start) / 1000000 ))
  check "--timeout 1 ends a stalled download (in ${took} ms)" '[ $rc -eq 1 ] && grep -qi "time" "$tmp/out.json" && [ $took -lt 20000 ]'
  # --proxy: a name only the (stand-in) proxy can reach loads; under --server-policy a private literal does not
  "$bin" fetch "http://images.example.invalid/ok" --no-cache --proxy "$fault" --json >"$tmp/out.json" 2>/dev/null; rc=$?
  check "--proxy carries the fetch" '[ $rc -eq 0 ] && grep -q "ok.:1," "$tmp/out.json"'
  "$bin" fetch "http://169.254.169.254/latest/meta-data/" "http://images.example.invalid/ok" --no-cache --server-policy --proxy "$fault" --json >"$tmp/out.json" 2>/dev/null; rc=$?
  check "--server-policy --proxy: a link-local literal refused, a name through the proxy" '[ $rc -eq 1 ] && grep -q "ok.:1," "$tmp/out.json" && grep -q "link-local" "$tmp/out.json"'
  printf 'ftp://127.0.0.1/a.jpg\nimg/relative.jpg\n' > "$tmp/bad.txt"
  "$bin" fetch --list "$tmp/bad.txt" --no-cache >/dev/null 2>"$tmp/err"; rc=$?
  check "unsupported scheme and relative URL say so" \
    '[ $rc -eq 1 ] && grep -q "scheme" "$tmp/err" && grep -qi "relative" "$tmp/err"'
  "$bin" fetch "$base/img/photo-000.jpg" --no-cache --thumbnail 64 --out "$tmp/thumb" >/dev/null 2>&1
  check "thumbnail without cache" '"$bin" decode "$tmp"/thumb/*.png 2>&1 | grep -q "^64x"'
  "$bin" cache info --cache-dir "$tmp/cache" --json >"$tmp/info.json"
  check "cache info counts entries" 'grep -q "entries.:3," "$tmp/info.json"'
  "$bin" cache trim --cache-dir "$tmp/cache" --max-age 0 >/dev/null
  check "cache trim --max-age 0 empties it" '"$bin" cache info --cache-dir "$tmp/cache" | grep -q "^entries   0"'
  "$bin" fetch --list "$tmp/list.txt" --cache-dir "$tmp/cache" >/dev/null 2>&1
  "$bin" cache clear --cache-dir "$tmp/cache" >/dev/null
  check "cache clear empties it" '"$bin" cache info --cache-dir "$tmp/cache" | grep -q "^entries   0"'
  bash Tests/Servers/servers.sh stop "$tmp" >/dev/null 2>&1
else
  check "nginx for the fetch checks" 'false'
fi
# a short soak: random cancels, priorities, hits; no failed load, descriptors back to the baseline
if [ -x build/release/sdcore-bench ]; then
  SDCORE_BENCH=build/release/sdcore-bench "$bin" bench soak --loads 600 --count 60 --memory-mib 16 --json >"$tmp/soak.json" 2>&1; rc=$?
  check "soak: no failure, fds back to baseline" '[ $rc -eq 0 ] && grep -q "failed.:0," "$tmp/soak.json"'
  # the media benches run end to end (a smoke run; the numbers are measured by hand, README)
  TMPDIR="$tmp" SDCORE_BENCH=build/release/sdcore-bench "$bin" bench player --frames 40 --size 300 --buffer-mib 2 --json >"$tmp/player.json" 2>&1; rc=$?
  check "bench player: every frame shown once, budget honoured" '[ $rc -eq 0 ] && grep -q "\"budget_honoured\":true" "$tmp/player.json" && grep -q "\"distinct_frames\":40," "$tmp/player.json"'
  build/release/sdcore-bench make-anim "$tmp/steps.gif" --frames 60 --size 400 >/dev/null 2>&1 &&
    build/release/sdcore-bench anim-memory "$tmp/steps.gif" --kept-mib 0 --kept-mib 4 --json >"$tmp/steps.json" 2>&1; rc=$?
  check "sdcore-bench anim-memory: peak RSS within kept budget + canvas (+ frame out when given)" '[ $rc -eq 0 ] && [ "$(grep -c "\"frames\":\"given\",\"count\":60," "$tmp/steps.json")" = 2 ] && [ "$(grep -c "\"frames\":\"lent\",\"count\":60," "$tmp/steps.json")" = 2 ]'
  if command -v redis-server >/dev/null; then
    SDCORE_BENCH=build/release/sdcore-bench "$bin" bench redis --count 12 --rounds 1 --json >"$tmp/redis.json" 2>&1; rc=$?
    check "bench redis: every row measured (its own redis-server)" '[ $rc -eq 0 ] && python3 -c "
import json, sys; s = json.load(open(sys.argv[1]))
sys.exit(0 if all(s[k] > 0 for k in [\"l2_hit_ms_p50\", \"disk_hit_ms_p50\", \"fetch_ms_p50\", \"fleet_lock_3_ips\", \"fleet_nolock_3_ips\"]) else 1)" "$tmp/redis.json"'
  fi
  SDCORE_BENCH=build/release/sdcore-bench "$bin" bench encode --quick --json >"$tmp/encode.json" 2>&1; rc=$?
  check "bench encode: same bytes as the library calls, every row" '[ $rc -eq 0 ] && [ "$(grep -c "\"ratio\"" "$tmp/encode.json")" -eq 7 ]'
else
  echo "build/release/sdcore-bench missing (make build-c): soak check skipped"
fi
"$bin" fetch >/dev/null 2>&1; rc=$?
check "fetch without URLs is a usage error" '[ $rc -eq 2 ]'
for c in fetch samples "cache info" "bench cache"; do "$bin" $c --help >/dev/null 2>&1 || { check "$c --help" false; }; done

echo "cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
