#!/usr/bin/env bash
# make deb: the Debian packages libsdcore0, libsdcore-dev and sdimage (with
# sdimage-serve.service, man pages and bash/zsh/fish completions), built by
# debhelper from debian/ on a copy of this tree, then checked by lintian.
# The .debs land in $OUT (default build/deb). SwiftPM builds sdimage from
# this checkout into .build-deb (SWIFT_SCRATCH to move it), kept between
# runs; DEB_BUILD_OPTIONS=noopt builds the debug configuration instead
# (scripts/test-deb.sh: with SWIFT_SCRATCH=.build, the suite's own build).
set -eu
cd "$(dirname "$0")/.."
repo=$(pwd)
out=${OUT:-$repo/build/deb}
scratch=${SWIFT_SCRATCH:-$repo/.build-deb}
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
hv=$(awk '/^#define SD_VERSION_(MAJOR|MINOR|PATCH) /{v=v (v?".":"") $3} END{print v}' include/sdcore/sd_common.h)
[ "$version" = "$hv" ] || { echo "make-deb: debian/changelog says $version, sd_common.h $hv"; exit 1; }
# the tree as it is (tracked and new files, nothing git ignores), copied to a
# folder kept between runs (dpkg-buildpackage writes beside the source, and
# SwiftPM rebuilds what moved: same place, same times, only what changed)
work=$repo/build/deb-src
src=$work/sdwebimage-linux-$version
mkdir -p "$src"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
  [ -e "$f" ] && printf '%s\0' "$f"
done > "$work/files"
rsync -a --from0 --files-from="$work/files" ./ "$src/"
# and a file gone from the tree goes from the copy (SwiftPM would build it):
# every file of the copy but what the build writes must be in the list
(cd "$src" && find . -type f -not -path './obj-*' -not -path './debian/tmp/*' -not -path './debian/.debhelper/*' \
   -not -path './debian/libsdcore*' -not -path './debian/sdimage/*' -not -path './debian/files' \
   -not -name '*.substvars' -not -name '*debhelper.log' -not -path './debian/debhelper-build-stamp' -printf '%P\0') |
  sort -z > "$work/copied"
tr '\0' '\n' < "$work/files" | sort > "$work/wanted"
tr '\0' '\n' < "$work/copied" | sort | comm -23 - "$work/wanted" | while IFS= read -r f; do rm -f "$src/$f"; done
rm -f "$work"/*.deb "$work"/*.ddeb "$work"/*.changes "$work"/*.buildinfo
(cd "$src" && SWIFT_PACKAGE="$repo" SWIFT_SCRATCH="$scratch" dpkg-buildpackage -b -us -uc -d) > "$work/build.log" 2>&1 || {
  tail -40 "$work/build.log"; echo "make-deb: dpkg-buildpackage failed ($work/build.log)"; exit 1; }
mkdir -p "$out"
rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
mv "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out"/
[ -z "$(ls "$work"/*.ddeb 2>/dev/null)" ] || mv "$work"/*.ddeb "$out"/
echo "make-deb: $(cd "$out" && ls *.deb | tr '\n' ' ')in $out"
# lintian: no error and no warning (each override in debian/*.lintian-overrides says why)
lintian --fail-on error,warning --suppress-tags-from-file /dev/null "$out"/*.changes
echo "make-deb: lintian clean"
