#!/usr/bin/env bash
# What `make deps` installs (the build packages and everything they depend
# on) holds no server: no nginx, redis-server, Xvfb or other daemon that
# Debian would start on install. The test packages are the Makefile's other
# list; both lists are read from the Makefile.
set -eu
cd "$(dirname "$0")/.."
build=$(make -s -f Makefile -pn 2>/dev/null | sed -n 's/^BUILD_PACKAGES := //p' | head -1)
tests=$(make -s -f Makefile -pn 2>/dev/null | sed -n 's/^TEST_PACKAGES := //p' | head -1)
[ -n "$build" ] && [ -n "$tests" ] || { echo "deps: cannot read the package lists"; exit 1; }
closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
  --no-replaces --no-enhances $build 2>/dev/null | grep -v '^ ' | sort -u)
[ "$(echo "$closure" | wc -l)" -gt 20 ] || { echo "deps: apt-cache gave no dependency closure (run apt-get update)"; exit 1; }
bad=$(echo "$closure" | grep -Ex 'nginx.*|redis-server|redis-tools|xvfb|xserver-.*|dbus|systemd|apache2.*|memcached|postgresql.*' || true)
pass=0; fail=0
check() { if eval "$2"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED: $1"; fi; }
check "make deps pulls in no server (closure of $(echo "$closure" | wc -l) packages)" '[ -z "$bad" ] || { echo "  $bad"; false; }'
check "the servers the tests use are in the test list" \
  '( for p in nginx-light redis-server xvfb; do echo " $tests " | grep -q " $p " || exit 1; done )'
check "no package in both lists" '[ -z "$(comm -12 <(tr " " "\n" <<<"$build" | sort -u) <(tr " " "\n" <<<"$tests" | sort -u) | grep .)" ]'
echo "deps: $pass passed, $fail failed"
[ $fail -eq 0 ]
