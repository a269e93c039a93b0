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
  "$bin" decode "$f" --no-orientation 2>"$tmp/err"
  check "no-orientation keeps stored shape" 'tail -1 "$tmp/err" | grep -q "^1800x1200 jpeg orientation=6$"'
  head -c 100000 "$f" > "$tmp/cut.jpg"
  "$bin" decode "$tmp/cut.jpg" --png "$tmp/cut.png" 2>"$tmp/err"; rc=$?
  check "truncated file still decodes" '[ $rc -eq 0 ] && [ -s "$tmp/cut.png" ]'
  check "truncated file says incomplete" 'tail -1 "$tmp/err" | grep -q "incomplete"'
  "$bin" decode "$corpus/pngsuite/xc9n2c08.png" 2>"$tmp/err"; rc=$?
  check "corrupt png fails" '[ $rc -ne 0 ] && [ $(wc -l < "$tmp/err") -eq 1 ]'
else
  echo "corpus not found at $corpus: corpus checks skipped"
fi
printf '<html>404</html>' > "$tmp/page.jpg"
"$bin" decode "$tmp/page.jpg" 2>"$tmp/err"; rc=$?
check "html fails with one line" '[ $rc -eq 1 ] && [ $(wc -l < "$tmp/err") -eq 1 ] && grep -q "unsupported format" "$tmp/err"'
"$bin" decode "$tmp/missing.jpg" 2>/dev/null; rc=$?
check "missing file fails" '[ $rc -eq 1 ]'
"$bin" decode "$f" --max-pixel-size 0 2>/dev/null; rc=$?
check "usage error exits 2" '[ $rc -eq 2 ]'
echo "cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
