#!/usr/bin/env bash
# The Debian packages as an operator meets them: make-deb.sh builds them
# (lintian clean), then dpkg -i installs libsdcore0, libsdcore-dev and sdimage
# on this machine; sdimage --version, its man pages and completions, the
# README's C example built against the installed sdcore.pc, sdimage serve
# started from the installed binary on loopback, the unit checked by
# systemd-analyze (verify, and security at 2.0 "OK" or better; nothing is
# started); then dpkg --purge, and nothing of theirs is left on the system.
# Needs root (dpkg); refuses to touch packages that were installed already.
set -u
cd "$(dirname "$0")/.."
pass=0; fail=0
check() { if eval "$2"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED: $1"; fi; }
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
pkgs="sdimage libsdcore-dev libsdcore0"
for p in $pkgs; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    echo "FAILED: $p is installed already (remove it first: the test installs and purges its own)"; exit 1
  fi
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# the packaging as released, but sdimage in SwiftPM's debug configuration
# from the suite's own build folder (.build, built for swift test with the
# Serve trait): the release build of the server stack alone is ~8
# CPU-minutes, `make deb` makes it
OUT=$tmp/deb DEB_BUILD_OPTIONS=noopt SWIFT_SCRATCH=${SWIFT_SCRATCH:-$(pwd)/.build} \
  bash scripts/make-deb.sh > "$tmp/make-deb.log" 2>&1; rc=$?
check "make-deb: built, lintian clean ($(tail -1 "$tmp/make-deb.log"))" '[ $rc -eq 0 ] || { tail -30 "$tmp/make-deb.log"; false; }'
[ $rc -eq 0 ] || { echo "deb: $pass passed, $fail failed"; exit 1; }
hv=$(awk '/^#define SD_VERSION_(MAJOR|MINOR|PATCH) /{v=v (v?".":"") $3} END{print v}' include/sdcore/sd_common.h)
deb() { ls "$tmp"/deb/"$1"_"$hv"_*.deb; }
check "Depends computed from the binaries (dpkg-shlibdeps)" \
  'dpkg-deb -f "$(deb sdimage)" Depends | grep -q "libcurl4" && dpkg-deb -f "$(deb libsdcore0)" Depends | grep -q "libjpeg62-turbo" &&
   ! dpkg-deb -f "$(deb sdimage)" Depends | grep -qi "swift"'
# what is on the system before, to compare after the purge
snap() { find /usr /etc /var/lib/systemd /var/cache/sdimage-serve /var/lib/sdimage-serve -xdev 2>/dev/null | sort; }
snap > "$tmp/before"
$SUDO dpkg -i "$(deb libsdcore0)" "$(deb libsdcore-dev)" "$(deb sdimage)" > "$tmp/dpkg.log" 2>&1; rc=$?
check "dpkg -i of the three packages ($rc)" '[ $rc -eq 0 ] || { tail -20 "$tmp/dpkg.log"; false; }'
check "sdimage --version is $hv, from /usr/bin" '[ "$(command -v sdimage)" = /usr/bin/sdimage ] && [ "$(/usr/bin/sdimage --version)" = "$hv" ]'
check "man -w sdimage and sdimage.serve" 'man -w sdimage | grep -q "^/usr/share/man/man1/sdimage.1" && man -w sdimage.serve | grep -q sdimage.serve.1'
check "bash, zsh and fish completions" '[ -s /usr/share/bash-completion/completions/sdimage ] && [ -s /usr/share/zsh/vendor-completions/_sdimage ] &&
   [ -s /usr/share/fish/vendor_completions.d/sdimage.fish ] && bash -n /usr/share/bash-completion/completions/sdimage'
# the README's C example against the installed library, by pkg-config alone
python3 scripts/make-test-png.py "$tmp/t.png"
python3 scripts/readme-example.py c > "$tmp/thumb.c"
check "README C example builds against the installed sdcore.pc and runs" \
  'env -u PKG_CONFIG_PATH cc -std=c11 -Wall -Wextra -Werror "$tmp/thumb.c" $(env -u PKG_CONFIG_PATH pkg-config --cflags --libs sdcore) -o "$tmp/thumb" &&
   [ "$("$tmp/thumb" "$tmp/t.png")" = "256x171 premultiplied ARGB32" ] && ldd "$tmp/thumb" | grep -qE "libsdcore.so.0 => /(usr/)?lib/"'
# the installed server, on loopback, from its own binary
/usr/bin/sdimage serve --dev --listen 127.0.0.1:0 --cache-dir "$tmp/serve-cache" > "$tmp/serve.out" 2>"$tmp/serve.err" &
spid=$!
for _ in $(seq 600); do grep -q "http://127.0.0.1:" "$tmp/serve.out" && break; sleep 0.1; done
base=$(grep -o "http://127.0.0.1:[0-9]*" "$tmp/serve.out" | head -1)
check "the installed sdimage serve answers /health on loopback ($base)" '[ -n "$base" ] && [ "$(python3 -c "import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1] + \"/health\", timeout=600).status)" "$base")" = 200 ]'
kill -TERM $spid 2>/dev/null; wait $spid 2>/dev/null
unit=$(dpkg -L sdimage | grep "/systemd/system/sdimage-serve.service$")
check "sdimage-serve.service shipped ($unit), disabled, not started" '[ -n "$unit" ] && [ ! -e /etc/systemd/system/multi-user.target.wants/sdimage-serve.service ]'
check "systemd-analyze verify passes" 'systemd-analyze verify "$unit" > "$tmp/verify" 2>&1 || { cat "$tmp/verify"; false; }'
systemd-analyze security --offline=true --threshold=20 "$unit" > "$tmp/security" 2>&1; rc=$?
level=$(sed -n 's/.*Overall exposure level for sdimage-serve.service: \([0-9.]*\).*/\1/p' "$tmp/security")
check "systemd-analyze security: $level, at most 2.0 (OK)" '[ $rc -eq 0 ] && [ -n "$level" ] && awk -v l="$level" "BEGIN { exit !(l <= 2.0) }"'
check "/etc/default/sdimage-serve is a conffile" 'dpkg-query -W -f="\${Conffiles}" sdimage | grep -q "/etc/default/sdimage-serve"'
$SUDO dpkg --purge $pkgs > "$tmp/purge.log" 2>&1; rc=$?
check "dpkg --purge ($rc)" '[ $rc -eq 0 ] || { cat "$tmp/purge.log"; false; }'
snap > "$tmp/after"
check "nothing left behind (the file system as before)" 'diff "$tmp/before" "$tmp/after" > "$tmp/left" || { head -20 "$tmp/left"; false; }'
check "no package left installed" '! dpkg-query -W -f="\${Status}\n" $pkgs 2>/dev/null | grep -q "installed"'
echo "deb: $pass passed, $fail failed"
[ $fail -eq 0 ]
