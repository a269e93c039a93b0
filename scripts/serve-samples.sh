#!/usr/bin/env bash
# serve-samples.sh SDIMAGE WORK OWNER_PID [samples options...] — `sdimage
# samples` into WORK/www/img, served by nginx on loopback (Tests/Servers,
# stopped with `servers.sh stop WORK`, or when OWNER_PID exits); their URLs
# in WORK/urls.txt; prints the base URL. Used by make demo and make gallery-check.
set -u
bin=$1 work=$2 owner=$3
shift 3
mkdir -p "$work/www/img"
"$bin" samples --out "$work/www/img" "$@" >&2 || exit 1  # its report on stderr: stdout is the base URL
# the fault server (started alongside) serves two of them back
cp "$work/www/img/photo-000.jpg" "$work/www/img/small.jpg"
cp "$work/www/img/progressive-001.jpg" "$work/www/img/prog.jpg"
bash "$(dirname "$0")/../Tests/Servers/servers.sh" start "$work" "$owner" >/dev/null || exit 1
base=$(grep '^SD_TEST_HTTP=' "$work/env" | cut -d= -f2)
ls "$work/www/img" | grep -v -e '^small.jpg$' -e '^prog.jpg$' | sed "s|^|$base/img/|" > "$work/urls.txt"
echo "$base"
