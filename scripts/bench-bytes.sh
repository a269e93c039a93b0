#!/usr/bin/env bash
# make bench-bytes: thumbnails from part of a file (sdimage bench bytes).
# Progressive JPEGs are made here with libjpeg-turbo's cjpeg from photos of
# 0.3 to 12 megapixels (sdimage samples at three largest sides, and the
# corpus' photograph): libjpeg's default scan script ("default-") and a
# mozjpeg-like one, the DC and the chroma whole first ("moz-"). An origin
# (scripts/bench_bytes_origin.py: 40 ms to the first byte) serves them
# inside a network namespace made here, whose loopback tc shapes to
# 10 Mbit/s; sdimage runs in the namespace too, so no traffic leaves it.
# Needs root (ip netns). Arguments go to `sdimage bench bytes`.
set -eu
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench-bytes: needs root (ip netns, tc)"; exit 1; }
command -v cjpeg >/dev/null && command -v tc >/dev/null || PACKAGES="libjpeg-turbo-progs iproute2" NO_SERVICES=1 bash scripts/apt-install.sh
if [ -z "${SDIMAGE:-}" ]; then
  swift build -c release --product sdimage >/dev/null
fi
bin=${SDIMAGE:-$(swift build -c release --show-bin-path)/sdimage}
work=$(mktemp -d /tmp/sd-bytes.XXXXXX)
ns=sdbytes$$
origin=
cleanup() { [ -n "$origin" ] && kill "$origin" 2>/dev/null; ip netns del "$ns" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/www"
printf '0 1 2: 0 0 0 0;\n1: 1 63 0 0;\n2: 1 63 0 0;\n0: 1 5 0 1;\n0: 6 63 0 1;\n0: 1 63 1 0;\n' > "$work/moz.txt"
add() { # add NAME SOURCE.jpg: its default and mozjpeg-like progressive versions
  djpeg "$2" > "$work/p.ppm"
  cjpeg -quality 85 -progressive -outfile "$work/www/default-$1.jpg" "$work/p.ppm"
  cjpeg -quality 85 -scans "$work/moz.txt" -outfile "$work/www/moz-$1.jpg" "$work/p.ppm"
}
for side in 800 2000 4000; do
  "$bin" samples --out "$work/s-$side" --count ${COUNT:-4} --max-size $side >/dev/null
  for f in "$work/s-$side"/photo-*.jpg; do add "$side-$(basename "$f" .jpg)" "$f"; done
done
corpus=${SD_CORPUS_DIR:-../shared/corpus}
[ -f "$corpus/exif-orientation/Landscape_1.jpg" ] && add landscape "$corpus/exif-orientation/Landscape_1.jpg"
ip netns add "$ns"
ip netns exec "$ns" ip link set lo up mtu 1500  # a real link's packets (tbf drops any over its burst)
ip netns exec "$ns" tc qdisc add dev lo root tbf rate 10mbit burst 32kbit latency 1s
ip netns exec "$ns" python3 scripts/bench_bytes_origin.py --dir "$work/www" --port 8089 --delay-ms 40 &
origin=$!
for _ in $(seq 100); do ip netns exec "$ns" bash -c 'exec 3<>/dev/tcp/127.0.0.1/8089' 2>/dev/null && break; sleep 0.1; done
echo "bench-bytes: $(ls "$work/www" | wc -l) progressive JPEGs, $(du -sh "$work/www" | cut -f1); 10 Mbit/s, 40 ms to the first byte"
ip netns exec "$ns" "$bin" bench bytes --dir "$work/www" --origin http://127.0.0.1:8089 "$@"
