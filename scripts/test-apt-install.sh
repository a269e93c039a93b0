#!/usr/bin/env bash
# scripts/apt-install.sh's policy-rc.d: removed on every exit path (done,
# failed, interrupted by INT, TERM or HUP), and one that was there before is
# left as it was. apt-get is a stand-in on PATH that waits to be interrupted
# (or fails), and the policy goes to a folder of the test's (POLICY_RC_D), so
# nothing on the host is installed or touched.
set -u
# job control: each run gets a process group of its own, and the signal goes
# to the whole group, as a terminal's Ctrl-C or a CI runner's kill does (bash
# runs a trap only once its foreground child, apt, has ended)
set -m
cd "$(dirname "$0")/.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
check() { if eval "$2"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED: $1"; fi; }
mkdir -p "$tmp/bin"
# the stand-ins: dpkg-query says nothing is installed; apt-get does what $FAKE_APT says
printf '#!/bin/sh\nexit 1\n' > "$tmp/bin/dpkg-query"
cat > "$tmp/bin/apt-get" <<'SH'
#!/bin/sh
case "$FAKE_APT" in
  wait) touch "$FAKE_DIR/apt-running"; exec sleep 600 ;;
  fail) exit 100 ;;
  *) exit 0 ;;
esac
SH
chmod +x "$tmp/bin/"*
run() {  # run NAME MODE: apt-install.sh in the background with the stand-ins; $pid
  PATH="$tmp/bin:$PATH" FAKE_APT=$2 FAKE_DIR=$tmp POLICY_RC_D="$tmp/policy-rc.d" PACKAGES="no-such-package" \
    NO_SERVICES=1 bash scripts/apt-install.sh >"$tmp/$1.log" 2>&1 &
  pid=$!
}
for sig in INT TERM HUP; do
  rm -f "$tmp/apt-running" "$tmp/policy-rc.d"
  run "$sig" wait
  for _ in $(seq 600); do [ -e "$tmp/apt-running" ] && break; sleep 0.1; done
  check "$sig: the policy is in place while apt runs" '[ -x "$tmp/policy-rc.d" ]'
  kill -s "$sig" -- -"$pid"
  wait "$pid"; rc=$?
  check "$sig: interrupted ($rc), the policy is gone" '[ $rc -ne 0 ] && [ ! -e "$tmp/policy-rc.d" ]'
done
rm -f "$tmp/policy-rc.d"; run fail fail; wait "$pid"; rc=$?
check "apt fails: its status ($rc), the policy is gone" '[ $rc -eq 100 ] && [ ! -e "$tmp/policy-rc.d" ]'
rm -f "$tmp/policy-rc.d"; run ok ok; wait "$pid"; rc=$?
check "apt succeeds: the policy is gone" '[ $rc -eq 0 ] && [ ! -e "$tmp/policy-rc.d" ]'
# a policy that was there before: untouched, interrupted or not
printf '#!/bin/sh\n# the admin'"'"'s own\nexit 0\n' > "$tmp/policy-rc.d"
before=$(sha256sum < "$tmp/policy-rc.d")
rm -f "$tmp/apt-running"
run theirs wait
for _ in $(seq 600); do [ -e "$tmp/apt-running" ] && break; sleep 0.1; done
kill -TERM -- -"$pid"; wait "$pid"
check "a policy there before is left as it was" '[ "$(sha256sum < "$tmp/policy-rc.d")" = "$before" ]'
echo "apt-install: $pass passed, $fail failed"
[ $fail -eq 0 ]
