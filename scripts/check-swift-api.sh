#!/usr/bin/env bash
# The Swift public API against its committed baseline (api/<Module>.json,
# swift-api-digester -dump-sdk of each library module, from the debug build):
# any source-breaking change (a removed, renamed or retyped declaration, a
# changed generic signature or conformance) fails until the baseline is
# refreshed on purpose (`make api-baseline`) and CHANGELOG.md says so. The
# check proves itself first: a doctored baseline (one declaration renamed)
# must be reported.
#   scripts/check-swift-api.sh            check
#   scripts/check-swift-api.sh --update   write the baselines
set -u
cd "$(dirname "$0")/.."
MODULES=$(bash scripts/swift-library.sh modules)
bin=$(swift build --show-bin-path)
[ -d "$bin/Modules" ] || { echo "swift api: build first (swift build)"; exit 1; }
mapfile -t ARGS < <(bash scripts/swift-library.sh args "$bin")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
dump() { # module output
  swift-api-digester -dump-sdk -module "$1" -o "$2" "${ARGS[@]}" -abort-on-module-fail >"$work/dump.log" 2>&1 \
    || { cat "$work/dump.log"; return 1; }
  # not API: the command that made the dump (this checkout's paths), and the
  # `package` declarations the modules share among themselves (isInternal)
  python3 - "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["ABIRoot"].pop("tool_arguments", None)
def prune(n):
    if "children" in n:
        n["children"] = [prune(c) for c in n["children"] if not c.get("isInternal")]
    return n
json.dump(prune(d), open(sys.argv[1], "w"), indent=1, sort_keys=True)
PY
}
changes() { # baseline current -> the lines that report a change
  swift-api-digester -diagnose-sdk -input-paths "$1" -input-paths "$2" 2>&1 | grep -v '^/\*' | grep -v '^\s*$'
}
if [ "${1:-}" = "--update" ]; then
  mkdir -p api
  for m in $MODULES; do dump "$m" "api/$m.json" || exit 1; echo "api/$m.json"; done
  exit 0
fi
pass=0; fail=0
check() { if eval "$2"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED: $1"; fi; }
for m in $MODULES; do
  if [ ! -f "api/$m.json" ]; then check "api/$m.json exists (make api-baseline)" 'false'; continue; fi
  dump "$m" "$work/$m.json" || { check "dump $m" 'false'; continue; }
  changes "api/$m.json" "$work/$m.json" > "$work/$m.diff"
  check "$m: no breaking change against api/$m.json" '[ ! -s "$work/$m.diff" ] || { sed "s/^/  /" "$work/$m.diff"; false; }'
done
# the check catches a break: rename one public declaration in a copy of the baseline
name=$(grep -o '"printedName": "[a-z][A-Za-z]*([a-zA-Z]*:[^"]*)"' api/SDWebImage.json | head -1 | sed 's/.*: "//; s/"$//')
sed "s/\"printedName\": \"$name\"/\"printedName\": \"doctored_$name\"/" api/SDWebImage.json > "$work/doctored.json"
check "a doctored baseline (\"$name\" renamed) is reported" '[ -n "$name" ] && [ -n "$(changes "$work/doctored.json" "$work/SDWebImage.json")" ]'
echo "swift api: $pass passed, $fail failed"
[ $fail -eq 0 ]
