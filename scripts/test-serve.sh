#!/usr/bin/env bash
# make test-serve: `sdimage serve` (built with the Serve trait) against nginx
# and the fault server on loopback (Tests/Servers), by scripts/test_serve.py.
set -u
cd "$(dirname "$0")/.."
# patient: a queued render waits for its turn as long as it takes, unless a
# check is about that wait (it passes --queue-timeout, which wins)
export SDIMAGE_SERVE_QUEUE_TIMEOUT=0
bin=${SDIMAGE_SERVE_BIN:-$(swift build --show-bin-path)/sdimage}
[ -x "$bin" ] || { echo "test-serve: $bin missing (make serve: swift build --traits Serve)"; exit 1; }
work=$(mktemp -d /tmp/sdserve.XXXXXX)
trap 'bash Tests/Servers/redis.sh stop "$work/redis" >/dev/null 2>&1; bash Tests/Servers/servers.sh stop "$work" >/dev/null 2>&1; [ -n "${KEEP_WORK:-}" ] || rm -rf "$work"' EXIT
base=$(bash scripts/serve-samples.sh "$bin" "$work" $$ --count 24 --max-size 600) \
  || { echo "test-serve: could not make and serve the samples"; exit 1; }
fault=$(grep '^SD_TEST_FAULT=' "$work/env" | cut -d= -f2)
# the fleet checks: a redis-server of their own, and sources under /fleet/,
# which nginx logs (each origin request counted)
mkdir -p "$work/www/fleet"
for f in $(ls "$work/www/img" | grep -E '^(photo|progressive)-' | head -8); do cp "$work/www/img/$f" "$work/www/fleet/"; done
bash Tests/Servers/redis.sh start "$work/redis" $$ >/dev/null || { echo "test-serve: redis-server did not start"; exit 1; }
export SD_TEST_REDIS_DIR=$work/redis
export SD_TEST_REDIS=$(grep '^SD_TEST_REDIS=' "$work/redis/env" | cut -d= -f2)
py=/usr/bin/python3; [ -x "$py" ] || py=python3   # Debian's, with python3-pil
"$py" scripts/test_serve.py "$bin" "$work" "$base" "$fault"
