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
  wait) : > "$FAKE_DIR/apt-running"; exec sleep 600 ;;
  fail) exit 100 ;;
  *) exit 0 ;;
esac
SH
chmod +x "$tmp/bin/"*
# until apt is the job's sleep (the process the signal must end), however
# slow the machine: no signal goes out before there is one to end it
apt_sleeping() {
  for _ in $(seq 6000); do
    awk -v g="$1" '$2 == "(sleep)" && $5 == g { found = 1 } END { exit !found }' /proc/[0-9]*/stat 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
# With the signals' default actions whatever this test inherited: started
# under nohup, or as a background job of a shell without job control, INT
# and HUP come in ignored, a shell cannot trap a signal ignored at its start,
# and apt-install.sh then slept through them (10 min each, status 0: a
# loaded run started with `nohup … &` failed so).
run() {  # run NAME MODE: apt-install.sh in the background with the stand-ins; $pid
  PATH="$tmp/bin:$PATH" FAKE_APT=$2 FAKE_DIR=$tmp POLICY_RC_D="$tmp/policy-rc.d" PACKAGES="no-such-package" \
    NO_SERVICES=1 env --default-signal=INT,HUP,TERM bash scripts/apt-install.sh >"$tmp/$1.log" 2>&1 &
  pid=$!
}
for sig in INT TERM HUP; do
  rm -f "$tmp/apt-running" "$tmp/policy-rc.d"
  run "$sig" wait
  apt_sleeping "$pid"
  check "$sig: apt runs, the policy is in place" '[ -e "$tmp/apt-running" ] && [ -x "$tmp/policy-rc.d" ]'
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
apt_sleeping "$pid"
kill -TERM -- -"$pid"; wait "$pid"
check "a policy there before is left as it was" '[ "$(sha256sum < "$tmp/policy-rc.d")" = "$before" ]'
echo "apt-install: $pass passed, $fail failed"
[ $fail -eq 0 ]
