#!/usr/bin/env bash
# Build the libFuzzer targets (clang from the Swift toolchain, ASan+UBSan),
# seed them from ../shared/corpus, replay the regression files under
# Tests/Fuzz/regressions/<target>/, then fuzz each target for SECONDS.
#   SECONDS=N bash scripts/fuzz.sh        (make fuzz SECONDS=N; make test uses a few seconds)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-10}
CC=${FUZZ_CC:-clang}
out=build/fuzz
corpus=${SD_CORPUS_DIR:-../shared/corpus}
anim=${SD_CORPUS_ANIM_DIR:-../shared/corpus-anim}
targets=(decode_whole decode_chunked exif downscale request frames_gif frames_apng frames_webp icc heic jxl svg)
[ -n "${FUZZ_TARGETS:-}" ] && read -ra targets <<< "$FUZZ_TARGETS" # e.g. FUZZ_TARGETS="heic jxl"
mkdir -p "$out"
lib_srcs=$(find CSources -name '*.c' | sort)
lib_srcs_skip=""
flags="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -D_GNU_SOURCE -std=c11 -Iinclude -ICSources"
libs="-ljpeg -lpng16 -lgif -lwebpdemux -lwebpmux -lwebp -lavif -llcms2 -lheif -ljxl -lz -lcurl -lpthread -lm"
# SVG (librsvg, as CMake's SDCORE_WITH_SVG builds it) when librsvg2-dev is there
if pkg-config --exists librsvg-2.0; then
  flags="$flags -DSD_WITH_SVG $(pkg-config --cflags librsvg-2.0)"
  libs="$libs $(pkg-config --libs librsvg-2.0)"
else
  lib_srcs_skip=CSources/decode/svg/
  targets=("${targets[@]/svg/}")
fi
# The library once (instrumented, not linked with the fuzzer's main), then
# each target against it: compiling CSources/ per target cost ~100 s of
# make test's fuzz smoke.
lib=$out/libsdcore-fuzz.a
if [ ! -f "$lib" ] || [ -n "$(find CSources include -newer "$lib" -name '*.[ch]' | head -1)" ]; then
  rm -rf "$out/obj"; mkdir -p "$out/obj"
  lib_flags=${flags/-fsanitize=fuzzer,/-fsanitize=fuzzer-no-link,}
  [ -n "$lib_srcs_skip" ] && lib_srcs=$(printf '%s\n' $lib_srcs | grep -v "^$lib_srcs_skip")
  printf '%s\n' $lib_srcs | xargs -P "$(nproc)" -I{} sh -c \
    'o="$0/$(echo "{}" | tr / _).o"; '"$CC"' '"$lib_flags"' -c "{}" -o "$o"' "$out/obj"
  rm -f "$lib"; ar rcs "$lib" "$out"/obj/*.o
fi
for t in "${targets[@]}"; do
  [ -n "$t" ] || continue
  src="Tests/Fuzz/fuzz_$t.c"; extra=""
  case $t in frames_*) f=${t#frames_}; src=Tests/Fuzz/fuzz_frames.c; extra="-DSD_FUZZ_FORMAT=SD_FORMAT_${f^^}";; esac
  [ "$t" = frames_apng ] && extra="-DSD_FUZZ_FORMAT=SD_FORMAT_PNG"
  # one format's decoder alone (SD_DEC_FORMATS): mutations stay in its parser
  case $t in heic | jxl | svg) src=Tests/Fuzz/fuzz_decode_whole.c; extra="-DSD_FUZZ_ONLY=SD_FORMAT_${t^^}";; esac
  if [ ! -x "$out/fuzz_$t" ] || [ "$lib" -nt "$out/fuzz_$t" ] || [ -n "$(find Tests/Fuzz Tests/C -newer "$out/fuzz_$t" -name '*.[ch]' | head -1)" ]; then
    $CC $flags $extra "$src" "$lib" $libs -o "$out/fuzz_$t" 2> >(grep -v 'ld.gold: warning' >&2)
  fi
done

# Seeds: corpus images; parameter bytes prepended where a target reads them.
seed() { # target prefix-bytes
  local dir="$out/seeds/$1"; [ -d "$dir" ] && return; mkdir -p "$dir"
  [ -f "$corpus/MANIFEST.tsv" ] || return 0
  local i=0
  while IFS= read -r f; do
    i=$((i + 1))
    { printf "$2"; cat "$f"; } > "$dir/seed$i"
  done < <(find "$corpus" -name '*.png' -size -64k; find "$corpus" -name '*.jpg' -size -64k)
  # BMP in its variants (ImageMagick, a test package): headers, palettes, RLE, bit fields
  command -v convert >/dev/null || return 0
  local png variant=0
  for png in $(find "$corpus" -name '*.png' -size -8k | sort | head -3); do
    for args in "BMP:" "-alpha off BMP3:" "-alpha off -colors 200 -type Palette BMP3:" \
                "-alpha off -colors 12 -type Palette -compress None BMP3:" "-alpha off -type Bilevel BMP3:" \
                "-alpha off BMP2:" "-alpha off -define bmp:subtype=RGB565 BMP:"; do
      variant=$((variant + 1))
      local opts=${args% *}
      [ "$opts" = "$args" ] && opts=""
      convert "$png" $opts "${args##* }$out/bmp.tmp" 2>/dev/null || continue
      { printf "$2"; cat "$out/bmp.tmp"; } > "$dir/bmp$variant"
    done
  done
  rm -f "$out/bmp.tmp"
}
seed decode_whole ''
seed decode_chunked '\x07\x00'
seed downscale '\x40\x00\x30\x00\x02\x20\x13'
# the animated corpus, small files, per format (frames_*: chunking + option bytes)
for f in gif apng webp; do
  dir="$out/seeds/frames_$f"
  [ -d "$dir" ] || [ ! -f "$anim/MANIFEST.tsv" ] && continue
  mkdir -p "$dir"; i=0
  while IFS=$'\t' read -r file fmt _; do
    [ "$fmt" = "$f" ] || continue
    [ "$(stat -c %s "$anim/$file")" -lt 65536 ] || continue
    i=$((i + 1)); { printf '\x07\x00'; cat "$anim/$file"; } > "$dir/seed$i"
  done < "$anim/MANIFEST.tsv"
done
if [ ! -d "$out/seeds/request" ]; then
  mkdir -p "$out/seeds/request"
  printf 'http://127.0.0.1/a.jpg\0"etag-1"\0X-A: b\0ETag: "v"\0*.example.com' > "$out/seeds/request/s1"
  printf 'https://[::1]:8080/x\0v\r\nX: 1\0X-B: c\x7f\0Location: http://localhost/\0localhost' > "$out/seeds/request/s2"
fi
# HEIC: a few corpus pictures through heif-enc (libheif-examples), one with alpha and a thumbnail
if [ ! -d "$out/seeds/heic" ] && command -v heif-enc >/dev/null && [ -f "$corpus/MANIFEST.tsv" ]; then
  mkdir -p "$out/seeds/heic"; i=0
  # 8-bit RGB(A) PNGs and small JPEGs (heif-enc 1.15 asserts on low-bit-depth PNGs)
  for src in $(find "$corpus" \( -name 'basn2c08.png' -o -name 'basn6a08.png' -o -name 'basi2c08.png' \); \
               find "$corpus" -name '*.jpg' -size -16k | sort | head -2); do
    i=$((i + 1))
    heif-enc -q 50 $([ $i = 2 ] && echo "-t 16") "$src" -o "$out/seeds/heic/s$i.heic" >/dev/null 2>&1 || true
  done
fi
# JPEG XL: corpus pictures through cjxl (libjxl-tools): lossy, lossless, progressive, an animation
if [ ! -d "$out/seeds/jxl" ] && command -v cjxl >/dev/null && [ -f "$corpus/MANIFEST.tsv" ]; then
  mkdir -p "$out/seeds/jxl"; i=0
  for png in $(find "$corpus" -name '*.png' -size -8k | sort | head -4); do
    i=$((i + 1))
    case $i in 1) a="-d 1";; 2) a="-d 0";; 3) a="-p -d 2";; *) a="-d 0 -e 1";; esac
    cjxl "$png" "$out/seeds/jxl/s$i.jxl" $a >/dev/null 2>&1 || true
  done
  cjxl "$anim/gif/dispose1_trans.gif" "$out/seeds/jxl/anim.jxl" -d 0 >/dev/null 2>&1 || true
fi
# ICC profiles: colord-data's and ghostscript's (libgs-common: LUT-based
# CMYK, v4 XYZ) (test packages) and lcms2's own sRGB
if [ ! -d "$out/seeds/icc" ]; then
  mkdir -p "$out/seeds/icc"
  for f in /usr/share/color/icc/colord/*.icc /usr/share/color/icc/ghostscript/*.icc; do [ -f "$f" ] && [ $(stat -c %s "$f") -lt 60000 ] && cp "$f" "$out/seeds/icc/$(basename "$(dirname "$f")")-$(basename "$f")"; done
  printf 'not a profile' > "$out/seeds/icc/garbage"
  # a CMYK output profile (none ships in Debian's test packages): a 3-point
  # CLUT from ink to Lab, made with lcms2 as c.color makes its own
  cat > "$out/mkcmyk.c" <<'C'
#include <stdio.h>
#include <lcms2.h>
static cmsInt32Number s(const cmsUInt16Number in[], cmsUInt16Number out[], void *c)
{
    (void)c;
    cmsCIELab lab = {100 - (in[0] + in[1] + in[2] + in[3]) / 2621.0, (in[1] - in[0]) / 700.0, (in[2] - in[1]) / 700.0};
    cmsFloat2LabEncoded(out, &lab);
    return TRUE;
}
int main(int argc, char **argv)
{
    cmsHPROFILE p = cmsCreateProfilePlaceholder(NULL);
    cmsSetProfileVersion(p, 4.3), cmsSetDeviceClass(p, cmsSigOutputClass);
    cmsSetColorSpace(p, cmsSigCmykData), cmsSetPCS(p, cmsSigLabData);
    cmsPipeline *a = cmsPipelineAlloc(NULL, 4, 3);
    cmsStage *clut = cmsStageAllocCLut16bit(NULL, 3, 4, 3, NULL);
    cmsStageSampleCLut16bit(clut, s, NULL, 0);
    cmsPipelineInsertStage(a, cmsAT_END, cmsStageAllocToneCurves(NULL, 4, NULL));
    cmsPipelineInsertStage(a, cmsAT_END, clut);
    cmsPipelineInsertStage(a, cmsAT_END, cmsStageAllocToneCurves(NULL, 3, NULL));
    cmsWriteTag(p, cmsSigAToB0Tag, a), cmsWriteTag(p, cmsSigMediaWhitePointTag, cmsD50_XYZ());
    return argc > 1 && cmsSaveProfileToFile(p, argv[1]) ? 0 : 1;
}
C
  cc -o "$out/mkcmyk" "$out/mkcmyk.c" -llcms2 2>/dev/null && "$out/mkcmyk" "$out/seeds/icc/cmyk-lut.icc" || true
fi
if [ ! -d "$out/seeds/exif" ]; then
  mkdir -p "$out/seeds/exif"
  # TIFF payloads of the corpus' Exif APP1 segments
  [ -f "$corpus/MANIFEST.tsv" ] && python3 - "$corpus/exif-orientation" "$out/seeds/exif" <<'PY'
import os, sys
src, dst = sys.argv[1:3]
for name in sorted(os.listdir(src)):
    if not name.endswith('.jpg'): continue
    b = open(os.path.join(src, name), 'rb').read()
    i = 2
    while i + 4 <= len(b) and b[i] == 0xFF:
        m, n = b[i + 1], int.from_bytes(b[i + 2:i + 4], 'big')
        seg = b[i + 4:i + 2 + n]
        if m == 0xE1 and seg.startswith(b'Exif\0\0'):
            open(os.path.join(dst, name + '.tiff'), 'wb').write(seg[6:])
            break
        if m == 0xDA: break
        i += 2 + n
PY
fi

# SVG: documents written here — shapes, paths, gradients, patterns, text,
# <use>, filters, masks, clips, CSS, a viewBox only, an inline image
if [ ! -d "$out/seeds/svg" ]; then
  mkdir -p "$out/seeds/svg"
  h='<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="64" height="48" viewBox="0 0 32 24">'
  printf '%s\n' \
    '<rect x="1" y="1" width="30" height="22" rx="3" fill="#08f" fill-opacity=".5" stroke="red"/>' \
    '<path d="M2 20 C 8 2, 24 2, 30 20 S 10 22 2 20 Z" fill="none" stroke="#000" stroke-dasharray="2 1"/>' \
    '<defs><linearGradient id="g"><stop offset="0" stop-color="red"/><stop offset="1" stop-color="blue" stop-opacity=".2"/></linearGradient></defs><circle cx="16" cy="12" r="10" fill="url(#g)"/>' \
    '<defs><radialGradient id="r" gradientUnits="userSpaceOnUse" cx="16" cy="12" r="9"><stop offset=".3" stop-color="#ff0"/><stop offset="1" stop-color="#0a0"/></radialGradient><pattern id="p" width="4" height="4" patternUnits="userSpaceOnUse"><rect width="2" height="2" fill="#333"/></pattern></defs><rect width="32" height="24" fill="url(#p)"/><ellipse cx="16" cy="12" rx="12" ry="8" fill="url(#r)"/>' \
    '<text x="2" y="14" font-family="sans-serif" font-size="8" fill="#123">Ag<tspan dy="2" fill="red">z</tspan></text>' \
    '<defs><g id="u"><rect width="4" height="4"/></g></defs><use xlink:href="#u" x="2"/><use href="#u" x="8" transform="rotate(20)"/>' \
    '<defs><filter id="f"><feGaussianBlur stdDeviation="1.5"/><feOffset dx="1" dy="1"/><feComposite operator="over" in2="SourceGraphic"/></filter></defs><rect x="4" y="4" width="20" height="12" fill="#a0f" filter="url(#f)"/>' \
    '<defs><mask id="m"><rect width="32" height="24" fill="#fff"/><circle cx="16" cy="12" r="6"/></mask><clipPath id="c"><circle cx="10" cy="10" r="8"/></clipPath></defs><rect width="32" height="24" fill="teal" mask="url(#m)" clip-path="url(#c)"/>' \
    '<style>.a { fill: orange; stroke: navy; stroke-width: 2 } rect:nth-child(2) { opacity: .5 }</style><rect class="a" width="10" height="10"/><rect class="a" x="12" width="10" height="10"/>' \
    '<image width="8" height="8" href="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAYAAABytg0kAAAAFklEQVR4nGP4z8DwHwyBNAODAkMDAAuqAv9ih3YdAAAAAElFTkSuQmCC"/>' \
    | { i=0; while IFS= read -r body; do i=$((i + 1)); printf '%s%s</svg>\n' "$h" "$body" > "$out/seeds/svg/s$i.svg"; done; }
  printf '<?xml version="1.0"?>\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "x">\n<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 5"><polygon points="0,0 10,0 5,5"/></svg>\n' > "$out/seeds/svg/viewbox.svg"
fi

status=0
# fontconfig's caches (pango, for SVG text) and the rest of Tests/C/lsan.supp
export LSAN_OPTIONS="suppressions=$PWD/Tests/C/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
# One target: its regressions replayed, then fuzzed; what it says goes to
# $out/$t.summary, its status to $out/$t.rc.
fuzz_one() {
  local t=$1 reg="Tests/Fuzz/regressions/$1" rc=0
  if [ -d "$reg" ] && [ -n "$(ls -A "$reg")" ]; then
    echo "fuzz_$t: replaying $(ls "$reg" | wc -l) regression files"
    "$out/fuzz_$t" -runs=0 "$reg"/* >/dev/null 2>"$out/$t.replay.log" || { cat "$out/$t.replay.log"; rc=1; }
  fi
  mkdir -p "$out/corpus/$t" "$out/crashes/$t"
  echo "fuzz_$t: ${secs}s"
  if ! "$out/fuzz_$t" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=20 -print_final_stats=0 \
       -artifact_prefix="$out/crashes/$t/" "$out/corpus/$t" "$out/seeds/$t" >"$out/$t.log" 2>&1; then
    tail -40 "$out/$t.log"
    echo "fuzz_$t FOUND A CRASH: $(ls "$out/crashes/$t")  (copy it to $reg/ as a regression)"
    rc=1
  else
    grep -E "^#[0-9]+.*(DONE|pulse)" "$out/$t.log" | tail -1 || true
  fi
  echo $rc > "$out/$t.rc"
}
# The targets run side by side, one a core (FUZZ_LANES): each fuzzer is one thread.
lanes=${FUZZ_LANES:-$(nproc)}
for t in "${targets[@]}"; do
  [ -n "$t" ] || continue
  rm -f "$out/$t.rc"
  fuzz_one "$t" >"$out/$t.summary" 2>&1 &
  while [ "$(jobs -rp | wc -l)" -ge "$lanes" ]; do wait -n || true; done
done
wait
for t in "${targets[@]}"; do
  [ -n "$t" ] || continue
  cat "$out/$t.summary"
  [ "$(cat "$out/$t.rc" 2>/dev/null)" = 0 ] || status=1
done
exit $status
