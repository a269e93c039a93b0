#!/usr/bin/env bash
# make deb: the Debian packages libsdcore0, libsdcore-dev and sdimage (with
# sdimage-serve.service, man pages and bash/zsh/fish completions), built by
# debhelper from debian/ on a copy of this tree, then checked by lintian.
# The .debs land in $OUT (default build/deb). SwiftPM's release build of
# sdimage is kept in .build-deb between runs (SWIFT_SCRATCH to move it).
set -eu
cd "$(dirname "$0")/.."
repo=$(pwd)
out=${OUT:-$repo/build/deb}
scratch=${SWIFT_SCRATCH:-$repo/.build-deb}
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
hv=$(awk '/^#define SD_VERSION_(MAJOR|MINOR|PATCH) /{v=v (v?".":"") $3} END{print v}' include/sdcore/sd_common.h)
[ "$version" = "$hv" ] || { echo "make-deb: debian/changelog says $version, sd_common.h $hv"; exit 1; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
src=$work/sdwebimage-linux-$version
mkdir -p "$src"
# the tree as it is (tracked and new files, nothing git ignores)
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
  [ -e "$f" ] && printf '%s\0' "$f"
done | tar -c --null -T - | tar -x -C "$src"
(cd "$src" && SWIFT_SCRATCH="$scratch" dpkg-buildpackage -b -us -uc -d) > "$work/build.log" 2>&1 || {
  tail -40 "$work/build.log"; echo "make-deb: dpkg-buildpackage failed (log above)"; exit 1; }
mkdir -p "$out"
rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
mv "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out"/
echo "make-deb: $(cd "$out" && ls *.deb | tr '\n' ' ')in $out"
# lintian: no error and no warning (each override in debian/*.lintian-overrides says why)
lintian --fail-on error,warning --suppress-tags-from-file /dev/null "$out"/*.changes
echo "make-deb: lintian clean"
