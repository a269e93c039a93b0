#!/usr/bin/env bash
# The fleet test (issue 17): three sdimage processes ("hosts"), each with its
# own empty disk cache, one origin nginx with an access log, one redis-server,
# all on loopback. They load the same 300 URLs at once:
#   1. with --fleet-lock: the origin must see exactly 300 image requests;
#   2. without it: the stampede, reported (more than 300);
#   3. with --fleet-lock, Redis killed (-9) once the origin has served 100:
#      every load in every process must still complete.
# Every process must load every image in every run.
set -u
cd "$(dirname "$0")/.."
bin=$(swift build --show-bin-path)/sdimage
corpus=${SD_CORPUS_DIR:-../shared/corpus}
[ -f "$corpus/MANIFEST.tsv" ] || { echo "corpus not found at $corpus"; exit 1; }
tmp=$(mktemp -d); chmod 755 "$tmp"  # nginx workers (nobody) must reach the web root
srv=$tmp/srv; rds=$tmp/redis
cleanup() {
  bash Tests/Servers/servers.sh stop "$srv" 2>/dev/null
  bash Tests/Servers/redis.sh stop "$rds" 2>/dev/null
  [ -n "${KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
pass=0; fail=0
check() { if eval "$2"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED: $1"; fi; }

# the web root: every decodable corpus image, and the fault server's two files
mkdir -p "$srv/www/fleet" "$srv/www/img"
cp "$corpus/exif-orientation/Landscape_1.jpg" "$srv/www/img/small.jpg"
cp "$corpus/jpeg/mozilla/jpg-progressive.jpg" "$srv/www/img/prog.jpg"
i=0
while read -r f; do
  cp "$corpus/$f" "$srv/www/fleet/$(printf %03d $i).${f##*.}"; i=$((i + 1))
done < <(awk -F'\t' 'NR > 1 && length($7) == 64 { print $1 }' "$corpus/MANIFEST.tsv")
bash Tests/Servers/servers.sh start "$srv" $$ || exit 1
bash Tests/Servers/redis.sh start "$rds" $$ || exit 1
. "$srv/env"; . "$rds/env"
files=("$srv"/www/fleet/*)
: > "$tmp/urls"
for n in $(seq 0 299); do   # 300 URLs (a query string makes a distinct cache key)
  echo "$SD_TEST_HTTP/fleet/$(basename "${files[n % ${#files[@]}]}")?n=$n" >> "$tmp/urls"
done
log=$srv/fleet.log
origin() { grep -c "GET /fleet/" "$log"; }

# start the three hosts of run $1 on Redis database $2 with flags $3
start() {
  pids=()
  for h in 1 2 3; do
    "$bin" fetch --list "$tmp/urls" --cache-dir "$tmp/cache-$1-$h" --redis "$SD_TEST_REDIS/$2" $3 \
        --concurrency 8 --json > "$tmp/out-$1-$h" 2> "$tmp/err-$1-$h" &
    pids+=($!)
  done
}
# every host of run $1 exited 0 having loaded all 300
finish() {
  local ok=0
  for h in 1 2 3; do
    wait "${pids[h-1]}" && python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
sys.exit(0 if s["ok"] == 300 and s["failed"] == 0 else 1)' "$tmp/out-$1-$h" && ok=$((ok + 1))
  done
  [ $ok -eq 3 ]
}
fleet() { python3 -c '
import json, sys
f = [json.load(open(p)).get("fleet", {}) for p in sys.argv[1:]]
print(", ".join(f"{k} {sum(x.get(k, 0) for x in f)}" for k in ["fetched", "shared", "took_over", "uncoordinated"]))' "$@"; }

: > "$log"
start lock 1 --fleet-lock
finish lock; check "with --fleet-lock every host loads all 300" '[ $? -eq 0 ]'
locked=$(origin)
check "with --fleet-lock the origin serves each image once (300 requests, saw $locked)" '[ "$locked" -eq 300 ]'
echo "with --fleet-lock:    $locked origin requests for 3 x 300 loads ($(fleet "$tmp"/out-lock-*))"

: > "$log"
start stampede 2 ""
finish stampede; check "without the lock every host loads all 300" '[ $? -eq 0 ]'
stampede=$(origin)
check "without the lock the cold fleet stampedes ($stampede requests)" '[ "$stampede" -gt 300 ]'
echo "without --fleet-lock: $stampede origin requests for 3 x 300 loads"

: > "$log"
start kill 3 --fleet-lock
for _ in $(seq 1 3000); do [ "$(origin)" -ge 100 ] && break; sleep 0.01; done
at=$(origin)
alive=0; for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
bash Tests/Servers/redis.sh kill9 "$rds"
check "Redis killed mid-run (origin had served $at of 300, $alive hosts running)" '[ "$at" -lt 300 ] && [ $alive -eq 3 ]'
finish kill; check "with Redis killed every host still loads all 300" '[ $? -eq 0 ]'
echo "Redis killed after $at origin requests: $(origin) in all ($(fleet "$tmp"/out-kill-*)); every load completed"

echo "fleet: $pass passed, $fail failed"
[ $fail -eq 0 ]
