#!/usr/bin/env bash
# make profile: RelWithDebInfo with frame pointers, then the C decode and
# fetch benchmarks under perf (where it works) or callgrind; prints the top
# functions of each. Outputs stay in build/profile.
set -eu
cd "$(dirname "$0")/.."
out=build/profile
cmake -S . -B "$out" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSD_BUILD_TESTS=OFF \
  -DCMAKE_C_FLAGS="-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer" >/dev/null
cmake --build "$out" -j "$(nproc)" --target sdcore-bench >/dev/null
bench=$out/sdcore-bench
top() { head -n "${TOP:-25}"; }
if perf record -q -o /dev/null true >/dev/null 2>&1; then
  for job in "decode --quick" "fetch --quick --only decode"; do
    name=${job%% *}
    echo "== perf: sdcore-bench $job (top functions, self time)"
    perf record -q -g -o "$out/$name.perf" -- $bench $job >/dev/null 2>&1
    # our threads only (the benchmark also starts nginx, openssl and python)
    perf report -i "$out/$name.perf" --comm sdcore-bench,sd-loop,sd-decode --no-children --sort dso,sym \
      --stdio -g none 2>/dev/null \
      | grep -v '^#' | grep -v '^$' | top
    echo "   full profile: perf report -i $out/$name.perf"
  done
else
  echo "perf is not available here (perf_event_paranoid or no PMU): using callgrind (instruction counts)"
  for job in "decode --quick"; do
    name=${job%% *}
    echo "== callgrind: sdcore-bench $job"
    JSIMD_FORCENONE=1 valgrind --tool=callgrind --callgrind-out-file="$out/$name.callgrind" $bench $job >/dev/null 2>&1
    callgrind_annotate "$out/$name.callgrind" 2>/dev/null | grep -E '^ *[0-9,]+ ' | top
    echo "   full profile: callgrind_annotate $out/$name.callgrind"
  done
fi
