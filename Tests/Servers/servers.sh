#!/usr/bin/env bash
# servers.sh start DIR [OWNER_PID] | stop DIR
# start: nginx (HTTP, HTTPS+HTTP/2 with a fresh self-signed certificate, Basic
# auth user:secret) serving DIR/www, and the fault server, on free loopback
# ports; writes DIR/env with SD_TEST_* lines. stop: ends both.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cmd=$1; dir=$(cd "$2" && pwd)
case "$cmd" in
start)
  mkdir -p "$dir/tmp" "$dir/www"
  read -r hp sp fp < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(3)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])')
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/key.pem" -out "$dir/cert.pem" -days 2 \
      -subj /CN=127.0.0.1 -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" >/dev/null 2>&1
  printf 'user:%s\n' "$(openssl passwd -apr1 secret)" > "$dir/htpasswd"
  sed -e "s|@PREFIX@|$dir|g" -e "s|@WWW@|$dir/www|g" -e "s|@HTTP_PORT@|$hp|g" -e "s|@HTTPS_PORT@|$sp|g" \
      "$here/nginx.conf.in" > "$dir/nginx.conf"
  chmod -R a+rX "$dir"  # nginx workers run as nobody when started as root
  # never inherit the caller's stdout/stderr: ctest waits for those to close
  nginx -p "$dir" -c "$dir/nginx.conf" -g 'daemon off;' </dev/null >/dev/null 2>"$dir/nginx.stderr" &
  echo $! > "$dir/nginx.pid.bg"
  python3 "$here/fault_server.py" --port "$fp" --file "$dir/www/img/small.jpg" --progressive "$dir/www/img/prog.jpg" </dev/null >/dev/null 2>"$dir/fault.stderr" &
  echo $! > "$dir/fault.pid"
  # watchdog: if the test process dies (crash, timeout), take the servers down.
  # The pids are read now: the owner may delete $dir before it exits.
  if [ -n "${3:-}" ]; then
    npid=$(cat "$dir/nginx.pid.bg"); fpid=$(cat "$dir/fault.pid")
    ( while kill -0 "$3" 2>/dev/null; do sleep 0.5; done
      kill "$npid" "$fpid" 2>/dev/null
      rm -rf "$dir" ) </dev/null >/dev/null 2>&1 &
  fi
  for p in $hp $sp $fp; do
    for _ in $(seq 1 600); do (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && break; sleep 0.05; done
  done
  cat > "$dir/env" <<ENV
SD_TEST_HTTP=http://127.0.0.1:$hp
SD_TEST_HTTPS=https://127.0.0.1:$sp
SD_TEST_FAULT=http://127.0.0.1:$fp
SD_TEST_WWW=$dir/www
SD_TEST_CERT=$dir/cert.pem
ENV
  ;;
stop)
  for f in "$dir/nginx.pid.bg" "$dir/fault.pid"; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  sleep 0.1
  ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
