#!/usr/bin/env bash
# Install the Debian packages in $PACKAGES that are missing (apt as root, or
# through sudo). NO_SERVICES=1: a policy-rc.d that answers 101 while apt runs,
# so packages that ship a service (nginx, redis-server) do not start one; the
# tests start their own on loopback. Removed again afterwards, whatever apt did.
set -eu
missing=$(for p in $PACKAGES; do dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null \
  | grep -q 'install ok installed' || echo "$p"; done)
if [ -n "$missing" ]; then
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  echo "installing ($([ "${NO_SERVICES:-0}" = 1 ] && echo "for the tests, no service started" || echo "to build")):" $missing
  # POLICY_RC_D: only scripts/test-apt-install.sh points it elsewhere
  policy=${POLICY_RC_D:-/usr/sbin/policy-rc.d}
  placed=0
  # Ours goes on every exit path (an interrupted install must not leave a
  # policy that silently blocks every later service start on the host); one
  # that was there before is never touched.
  cleanup() { if [ $placed = 1 ]; then $SUDO rm -f "$policy"; placed=0; fi; }
  trap cleanup EXIT
  trap 'cleanup; trap - INT; kill -INT $$' INT
  trap 'cleanup; trap - TERM; kill -TERM $$' TERM
  trap 'cleanup; trap - HUP; kill -HUP $$' HUP
  if [ "${NO_SERVICES:-0}" = 1 ] && [ ! -e "$policy" ]; then
    placed=1  # before writing: a signal mid-write still removes it
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null && $SUDO chmod 755 "$policy"
  fi
  rc=0
  { $SUDO apt-get update -qq && \
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null; } || rc=$?
  cleanup
  [ $rc = 0 ] || exit $rc
fi
command -v python3 >/dev/null || { SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo; \
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq python3 >/dev/null; }
