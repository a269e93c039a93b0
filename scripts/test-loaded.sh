#!/usr/bin/env bash
# `make test` from fresh clones, RUNS times in a row, with `stress-ng --cpu
# LOAD` beside it the whole time (load >= 6 on 2 cores: the suite must not
# depend on the clock running at a normal speed). Each run clones the
# committed HEAD into a folder of its own under $OUT, so nothing of this
# checkout's builds is reused. Prints one line a run (status, wall time, the
# load average seen) and exits 1 if any run failed; the logs stay in $OUT.
#   RUNS=5 LOAD=4 OUT=/tmp/sd-loaded bash scripts/test-loaded.sh
set -u
cd "$(dirname "$0")/.."
runs=${RUNS:-5}
load=${LOAD:-4}
out=${OUT:-$(mktemp -d /tmp/sd-loaded.XXXXXX)}
mkdir -p "$out"
repo=$(pwd)
shared=$(cd .. && pwd)/shared
head=$(git rev-parse --short HEAD)
command -v stress-ng >/dev/null || PACKAGES="stress-ng" NO_SERVICES=1 bash scripts/apt-install.sh
stress-ng --cpu "$load" --timeout 0 --quiet &
stress=$!
# the load average, sampled every 10 s while the runs go on
( while sleep 10; do cut -d' ' -f1 /proc/loadavg; done ) > "$out/loadavg.txt" &
sampler=$!
trap 'kill $stress $sampler 2>/dev/null; wait 2>/dev/null' EXIT
echo "loaded runs of $head: $runs x make test beside stress-ng --cpu $load; logs in $out"
failed=0
for i in $(seq 1 "$runs"); do
  # as CI has it: a fresh clone with ../shared beside it
  rm -rf "$out/run$i"
  mkdir -p "$out/run$i"
  ln -s "$shared" "$out/run$i/shared"
  dir=$out/run$i/main
  git clone -q "$repo" "$dir"
  : > "$out/loadavg.txt"
  t0=$SECONDS
  # without this script's settings: gallery-check.sh reads OUT as its own
  # output folder and empties it (this script's OUT once lost two runs)
  if (cd "$dir" && env -u OUT -u RUNS -u LOAD make test) > "$out/run$i.log" 2>&1; then how=passed; else how=FAILED; failed=1; fi
  avg=$(awk '{ s += $1; n++ } END { if (n) printf "%.1f", s / n; else print "?" }' "$out/loadavg.txt")
  echo "run $i ($(git -C "$dir" rev-parse --short HEAD)): $how in $((SECONDS - t0)) s, load average $avg; $(tail -1 "$out/run$i.log")"
  # the clone's builds are large (Swift scratch folders): keep the log only
  rm -rf "$out/run$i"
done
exit $failed
