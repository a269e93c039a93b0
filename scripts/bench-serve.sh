#!/usr/bin/env bash
# make bench-serve: `sdimage serve` (release) against thumbor 7.8 (PyPI, in
# build/bench-venv) on the same machine, both reading the same photos from
# one loopback nginx; and our two-thread render floor (`sdimage bench serve`)
# in the same run. scripts/bench_serve.py is the load generator and prints
# the table (its docstring says how each figure is measured). SERVE_ARGS
# adds flags to our server (e.g. "--max-renders 2"), SERVE_ENV runs it under
# `env …` (e.g. "env MALLOC_ARENA_MAX=2"); COUNT sets the photos per size;
# SHRINK_MARGIN=N gives our server and our floor --shrink-margin N.
# Neither server keeps sources or results on disk (thumbor: no storage, no
# result storage; ours: --source-disk-mb 0 --result-disk-mb 0); ours keeps
# results in memory for the hit row.
set -u
cd "$(dirname "$0")/.."
swift build -c release --traits Serve --product sdimage >/tmp/bench-serve-build.$$ 2>&1 \
  || { tail -30 /tmp/bench-serve-build.$$; exit 1; }
rm -f /tmp/bench-serve-build.$$
bin=$(swift build -c release --show-bin-path)/sdimage
venv=build/bench-venv
if [ ! -x "$venv/bin/thumbor" ]; then
  python3 -m venv "$venv" && "$venv/bin/pip" install -q "thumbor==7.8.0" || { echo "bench-serve: could not install thumbor"; exit 1; }
fi
work=$(mktemp -d /tmp/sdbench-serve.XXXXXX)
pids=()
# thumbor --processes 2 forks its workers, which outlive their parent's
# SIGTERM: each process's children go first (a run used to leave two
# workers behind, each taking ~1% of a core in every later benchmark)
cleanup() {
  for p in "${pids[@]}"; do pkill -TERM -P "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
  bash Tests/Servers/servers.sh stop "$work" >/dev/null 2>&1; rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/www/photos"
# photos of 0.2 to 12 megapixels: sdimage samples at three largest sides
# (each set spans half its side to all of it), baseline and progressive JPEGs
for side in 1000 2000 4000; do
  "$bin" samples --out "$work/samples-$side" --count "${COUNT:-24}" --max-size $side >/dev/null 2>&1 \
    || { echo "bench-serve: samples failed"; exit 1; }
  for f in "$work/samples-$side"/photo-* "$work/samples-$side"/progressive-*; do cp "$f" "$work/www/photos/$side-$(basename "$f")"; done
done
cp "$work/www/photos/$(ls "$work/www/photos" | head -1)" "$work/www/small.jpg"
mkdir -p "$work/www/img" && cp "$work/www/small.jpg" "$work/www/img/small.jpg" && cp "$work/www/small.jpg" "$work/www/img/prog.jpg"
# real photographs for the quality row (scripts/bench_photos.py: scikit-image's,
# from PyPI once), and the corpus' photo in both orientations
"$venv/bin/python" scripts/bench_photos.py build/bench-photos || { echo "bench-serve: no real photos"; exit 1; }
mkdir -p "$work/www/real" && cp build/bench-photos/*.jpg "$work/www/real/"
corpus=${SD_CORPUS_DIR:-../shared/corpus}
cp "$corpus/exif-orientation/Landscape_1.jpg" "$corpus/exif-orientation/Portrait_1.jpg" "$work/www/real/" \
  || { echo "bench-serve: the corpus' exif-orientation photos are missing"; exit 1; }
bash Tests/Servers/servers.sh start "$work" $$ >/dev/null || { echo "bench-serve: nginx did not start"; exit 1; }
origin=$(grep '^SD_TEST_HTTP=' "$work/env" | cut -d= -f2)
echo "photos: $(ls "$work/www/photos" | wc -l) JPEGs, $(du -sh "$work/www/photos" | cut -f1), served by nginx at $origin"

${SERVE_ENV:-} "$bin" serve --listen 127.0.0.1:0 --insecure-allow-unsigned --allow-source-host 127.0.0.1 \
  --cache-dir "$work/cache" --result-disk-mb 0 --source-disk-mb 0 --queue-depth 1024 ${SHRINK_MARGIN:+--shrink-margin $SHRINK_MARGIN} ${SERVE_ARGS:-} > "$work/ours.out" 2> "$work/ours.err" &
pids+=($!); ours_pid=$!
cat > "$work/thumbor.conf" <<CONF
STORAGE = 'thumbor.storages.no_storage'
RESULT_STORAGE = 'thumbor.result_storages.no_storage'
ENGINE = 'thumbor.engines.pil'
LOADER = 'thumbor.loaders.http_loader'
ALLOW_UNSAFE_URL = True
AUTO_WEBP = False
QUALITY = 80
HTTP_LOADER_MAX_CLIENTS = 32
CONF
tport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$venv/bin/thumbor" --ip 127.0.0.1 --port "$tport" --conf "$work/thumbor.conf" --processes 2 -l warning \
  > "$work/thumbor.out" 2>&1 &
pids+=($!); thumbor_pid=$!
for _ in $(seq 600); do
  grep -q "listening on" "$work/ours.out" 2>/dev/null && curl -sf "http://127.0.0.1:$tport/healthcheck" >/dev/null && break
  sleep 0.1
done
ours=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/ours.out" | head -1)
[ -n "$ours" ] || { echo "bench-serve: sdimage serve did not start"; cat "$work/ours.err"; exit 1; }
curl -sf "http://127.0.0.1:$tport/healthcheck" >/dev/null || { echo "bench-serve: thumbor did not start"; cat "$work/thumbor.out"; exit 1; }
echo "sdimage serve at $ours (release, pid $ours_pid); thumbor $("$venv/bin/thumbor" --version | tail -1) at :$tport, --processes 2"
echo
echo "render floor (no HTTP, from memory, 2 threads, same box/format/quality):"
"$bin" bench serve --dir "$work/www/photos" --format webp --threads 2 ${SHRINK_MARGIN:+--shrink-margin $SHRINK_MARGIN}
"$bin" bench serve --dir "$work/www/photos" --format jpeg --threads 2 ${SHRINK_MARGIN:+--shrink-margin $SHRINK_MARGIN}
# fill and crop shrink on load like fit (one render plan): the same floor, 256x256
"$bin" bench serve --dir "$work/www/photos" --format webp --threads 2 --resize fill ${SHRINK_MARGIN:+--shrink-margin $SHRINK_MARGIN}
"$bin" bench serve --dir "$work/www/photos" --format webp --threads 2 --resize crop ${SHRINK_MARGIN:+--shrink-margin $SHRINK_MARGIN}
# a smart cut (g:sm) against the centre's, the same fill
"$bin" bench serve --dir "$work/www/photos" --format webp --threads 2 --resize fill --gravity sm ${SHRINK_MARGIN:+--shrink-margin $SHRINK_MARGIN}
# the floor with the decoders in sandboxed workers (sdimage serve's default), same run
"$bin" bench serve --dir "$work/www/photos" --format webp --threads 2 --isolate-decoders ${SHRINK_MARGIN:+--shrink-margin $SHRINK_MARGIN}
"$bin" bench serve --dir "$work/www/photos" --format jpeg --threads 2 --isolate-decoders ${SHRINK_MARGIN:+--shrink-margin $SHRINK_MARGIN}
echo
SDIMAGE_BIN="$bin" /usr/bin/python3 scripts/bench_serve.py "$ours" "http://127.0.0.1:$tport" "$origin" "$work/www/photos" \
  "${OUT:-build/bench-serve.json}" "$ours_pid" "$thumbor_pid"
echo
"$venv/bin/python" scripts/bench_jpeg_settings.py "$bin" "$work/www/real"
