#!/usr/bin/env bash
# scripts/release.sh VERSION: check that every place that names the version
# agrees, then tag HEAD as VERSION (annotated; push it yourself).
#
#   the one version source   include/sdcore/sd_common.h (SD_VERSION_*)
#   the changelog            a "## [VERSION] - YYYY-MM-DD" section, and an
#                            empty "## [Unreleased]" above it
#   the C ABI                no symbol node in cmake/sdcore.map newer than
#                            VERSION, and the newest one named SDCORE_M.m
#                            when the changelog's section adds C functions
#   sdcore.pc                the version CMake writes into it
#   the Swift API baseline   api/*.json, one per library module of the
#                            manifest (`make release` also runs the ABI and
#                            API checks against the baselines first)
#   the working tree         clean, and no tag VERSION yet
#
# Exit 1 with one line per disagreement; nothing is tagged then.
# RELEASE_DRY_RUN=1: check only.
set -u
cd "$(dirname "$0")/.."
v=${1:-}
bad=0
no() { echo "release: $*"; bad=1; }
if ! [[ $v =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)$ ]]; then
  echo "usage: scripts/release.sh MAJOR.MINOR.PATCH"; exit 2
fi
major=${BASH_REMATCH[1]} minor=${BASH_REMATCH[2]}

hv=$(awk '/^#define SD_VERSION_(MAJOR|MINOR|PATCH) /{v=v (v?".":"") $3} END{print v}' include/sdcore/sd_common.h)
[ "$hv" = "$v" ] || no "include/sdcore/sd_common.h says $hv, not $v (the one version source: change it there)"

# the changelog: this version's section, dated, and nothing left unreleased
grep -qE "^## \[$v\] - [0-9]{4}-[0-9]{2}-[0-9]{2}$" CHANGELOG.md ||
  no "CHANGELOG.md has no '## [$v] - YYYY-MM-DD' section"
unreleased=$(awk '/^## \[Unreleased\]/{on=1; next} /^## /{on=0} on && NF' CHANGELOG.md)
[ -z "$unreleased" ] || no "CHANGELOG.md's [Unreleased] section is not empty: release it under [$v]"
grep -q "^## \[Unreleased\]" CHANGELOG.md || no "CHANGELOG.md has no [Unreleased] section for what comes next"

# the C ABI's symbol nodes: none newer than this version
newest=$(grep -oE '^SDCORE_[0-9]+\.[0-9]+' cmake/sdcore.map | sort -t. -k1,1 -k2,2n -V | tail -1)
if [ -n "$newest" ]; then
  nm=${newest#SDCORE_}
  if [ "${nm%%.*}" -gt "$major" ] || { [ "${nm%%.*}" -eq "$major" ] && [ "${nm#*.}" -gt "$minor" ]; }; then
    no "cmake/sdcore.map has a node $newest, newer than $v"
  fi
  section=$(awk -v v="$v" 'index($0, "## [" v "]") == 1 {on=1; next} /^## /{on=0} on' CHANGELOG.md)
  if grep -qE '`sd_[a-z_0-9]+`' <<<"$(grep -A200 '^### Added' <<<"$section")" && [ "$newest" != "SDCORE_$major.$minor" ]; then
    no "CHANGELOG.md's [$v] adds C functions but cmake/sdcore.map's newest node is $newest, not SDCORE_$major.$minor"
  fi
fi

# sdcore.pc as CMake writes it (a configure in a scratch folder)
pcdir=$(mktemp -d); trap 'rm -rf "$pcdir"' EXIT
if cmake -S . -B "$pcdir" -DCMAKE_BUILD_TYPE=Release >/dev/null 2>&1; then
  pv=$(sed -n 's/^Version: *//p' "$pcdir"/sdcore.pc 2>/dev/null)
  [ "$pv" = "$v" ] || no "sdcore.pc says ${pv:-nothing}, not $v"
else
  no "cmake could not configure the C library (to read sdcore.pc's version)"
fi

# the Swift API baseline: one file per library product's module
for m in $(sed -n 's/^ *\.library(name: "\([A-Za-z]*\)".*/\1/p' Package.swift); do
  [ -s "api/$m.json" ] || no "api/$m.json (the Swift API baseline of $m) is missing: make api-baseline"
done

[ -z "$(git status --porcelain --untracked-files=no)" ] || no "the working tree has uncommitted changes"
if git rev-parse -q --verify "refs/tags/$v" >/dev/null; then no "the tag $v exists already"; fi

if [ $bad -ne 0 ]; then
  echo "release: $v not tagged"; exit 1
fi
if [ -n "${RELEASE_DRY_RUN:-}" ]; then
  echo "release: $v: every place agrees (dry run: not tagged)"; exit 0
fi
git tag -a "$v" -m "sdwebimage-linux $v" && echo "release: tagged $(git rev-parse --short HEAD) as $v (git push origin $v)"
