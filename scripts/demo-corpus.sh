#!/usr/bin/env bash
# The main job until the transfer loop lands: decode every image of the
# corpus with `sdimage decode`, check each against the oracle, print a table,
# and write thumbnails. No network at all.
set -u
cd "$(dirname "$0")/.."
bin=$(swift build --show-bin-path)/sdimage
corpus=${SD_CORPUS_DIR:-../shared/corpus}
out=${OUT:-$PWD/build/demo}
mkdir -p "$out"
if [ ! -f "$corpus/MANIFEST.tsv" ]; then
  echo "corpus not found at $corpus (set SD_CORPUS_DIR)"; exit 1
fi
printf '%-44s %-5s %11s %3s %8s  %s\n' file fmt size ori ms result
ok=0; bad=0
while IFS=$'\x1f' read -r file source format w h o expected note; do
  [ "$file" = file ] && continue
  t0=$(date +%s%N)
  sum=$("$bin" decode "$corpus/$file" --raw - --keep-source-colors 2>"$out/.err" | sha256sum | cut -d' ' -f1)
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  last=$(tail -1 "$out/.err")
  if [ "$expected" = error ]; then
    if grep -q '^sdimage: ' "$out/.err"; then res="rejected as expected"; ok=$((ok+1)); else res="MISMATCH (decoded)"; bad=$((bad+1)); fi
    size=-; fmt=-
  else
    size=${last%% *}; fmt=$(echo "$last" | cut -d' ' -f2)
    if [ "$sum" = "$expected" ]; then res="matches oracle"; ok=$((ok+1)); else res="MISMATCH"; bad=$((bad+1)); fi
  fi
  printf '%-44s %-5s %11s %3s %8s  %s\n' "$file" "$fmt" "$size" "$o" "$ms" "$res"
done < <(tr '\t' '\037' < "$corpus/MANIFEST.tsv")
for f in exif-orientation/Landscape_5.jpg exif-orientation/Portrait_8.jpg jpeg/jpeg-decoder/progressive3.jpg pngsuite/basn6a08.png; do
  "$bin" decode "$corpus/$f" --max-pixel-size 256 --png "$out/$(basename "${f%.*}").thumb.png" 2>/dev/null
done
rm -f "$out/.err"
echo
echo "demo: $ok of $((ok + bad)) corpus images decoded exactly as the oracle says (fed through sdimage decode)"
echo "thumbnails (256 px, upright): $out/*.thumb.png"
[ $bad -eq 0 ]
