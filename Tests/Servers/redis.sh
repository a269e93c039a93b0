#!/usr/bin/env bash
# redis.sh start DIR [OWNER_PID] [extra redis-server args...]
#        | stop DIR | pause DIR | resume DIR | kill9 DIR | restart DIR | garbage DIR
# start: redis-server (redis.conf: loopback, no persistence) on a free port,
# writes DIR/env with SD_TEST_REDIS=redis://127.0.0.1:PORT; a watchdog ends
# it when OWNER_PID dies. pause/resume: SIGSTOP/SIGCONT (a hung Redis);
# kill9 then restart: a crash and a restart on the same port (empty);
# garbage: a server on a free port that answers every connection with
# bytes that are not RESP (SD_TEST_GARBAGE in DIR/env.garbage).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cmd=$1; mkdir -p "$2"; dir=$(cd "$2" && pwd)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
run() {
  redis-server "$here/redis.conf" --port "$(cat "$dir/port")" --dir "$dir" ${extra:-} </dev/null >/dev/null 2>"$dir/redis.stderr" &
  echo $! > "$dir/redis.pid"
  for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/"$(cat "$dir/port")") 2>/dev/null && return 0; sleep 0.05; done
  echo "redis-server did not start" >&2; return 1
}
case "$cmd" in
start)
  free_port > "$dir/port"
  shift 2; owner=${1:-}; [ $# -gt 0 ] && shift; extra="$*"; echo "$extra" > "$dir/extra"
  run
  if [ -n "$owner" ]; then
    ( while kill -0 "$owner" 2>/dev/null; do sleep 0.5; done
      kill -CONT "$(cat "$dir/redis.pid")" 2>/dev/null; kill -9 "$(cat "$dir/redis.pid")" 2>/dev/null
      [ -f "$dir/garbage.pid" ] && kill "$(cat "$dir/garbage.pid")" 2>/dev/null
      rm -rf "$dir" ) </dev/null >/dev/null 2>&1 &
  fi
  echo "SD_TEST_REDIS=redis://127.0.0.1:$(cat "$dir/port")" > "$dir/env"
  ;;
stop) kill -CONT "$(cat "$dir/redis.pid")" 2>/dev/null; kill -9 "$(cat "$dir/redis.pid")" 2>/dev/null
  [ -f "$dir/garbage.pid" ] && kill "$(cat "$dir/garbage.pid")" 2>/dev/null; true ;;
pause) kill -STOP "$(cat "$dir/redis.pid")" ;;
resume) kill -CONT "$(cat "$dir/redis.pid")" ;;
kill9) kill -9 "$(cat "$dir/redis.pid")"; sleep 0.1 ;;
restart) extra=$(cat "$dir/extra"); run ;;
garbage)
  p=$(free_port)
  python3 -c '
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64)
def serve(c):
    try:
        c.recv(65536); c.sendall(b"HTTP/1.1 200 OK\r\n\x00\xff garbage\r\n" * 4)
    except OSError: pass
    c.close()
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
' "$p" </dev/null >/dev/null 2>&1 &
  echo $! > "$dir/garbage.pid"
  for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && break; sleep 0.05; done
  echo "SD_TEST_GARBAGE=redis://127.0.0.1:$p" > "$dir/env.garbage"
  ;;
*) echo "usage: $0 start|stop|pause|resume|kill9|restart|garbage DIR" >&2; exit 2 ;;
esac
