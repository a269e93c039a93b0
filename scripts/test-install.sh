#!/usr/bin/env bash
# cmake --install into a temporary prefix, then build examples/c twice: with
# pkg-config (static and shared) and with find_package(sdcore); run them, the
# fetching one against nginx; then build and run the Swift consumer package
# in examples/swift (it depends on this checkout by path).
set -eu
cd "$(dirname "$0")/.."
prefix=$(mktemp -d); trap 'rm -rf "$prefix"' EXIT
cmake --install build/release --prefix "$prefix" >/dev/null
pass=0; fail=0
check() { if eval "$2"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED: $1"; fi; }
check "headers installed" '[ -f "$prefix/include/sdcore.h" ] && [ -f "$prefix/include/sdcore/sd_loop.h" ]'
check "module map not installed" '[ ! -e "$prefix/include/module.modulemap" ]'
check "licence installed and named" '[ -f "$prefix/share/doc/sdcore/LICENSE" ] && grep -q "^MIT License" "$prefix/share/doc/sdcore/LICENSE"'
libdir=$(ls -d "$prefix"/lib*/ | head -1)
check "only sd_ symbols exported" '[ -z "$(nm -D --defined-only "$libdir"/libsdcore.so | awk "\$2 ~ /[TDB]/ {print \$3}" | grep -v "^sd_")" ]'
# the version from its one place (sd_common.h) everywhere it is installed
hv=$(awk '/^#define SD_VERSION_(MAJOR|MINOR|PATCH) /{v=v (v?".":"") $3} END{print v}' include/sdcore/sd_common.h)
check "version $hv in sdcore.pc, sdcoreConfigVersion.cmake and the soname" \
  '[ "$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --modversion sdcore)" = "$hv" ] &&
   grep -q "PACKAGE_VERSION \"$hv\"" "$libdir/cmake/sdcore/sdcoreConfigVersion.cmake" &&
   [ -e "$libdir/libsdcore.so.$hv" ]'
img=$prefix/t.png  # a 300x200 RGB PNG made here
python3 scripts/make-test-png.py "$img"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -std=c11 -Wall -Wextra -Werror examples/c/decode_file.c $(pkg-config --cflags --libs sdcore) -o "$prefix/ex_pc"
check "pkg-config consumer runs" 'LD_LIBRARY_PATH="$libdir" "$prefix/ex_pc" "$img" | grep -q "^256x171 "'
# static libsdcore, shared system libraries (Debian's libcurl has no static
# closure): the libraries sdcore.pc requires privately (librsvg among them
# when built with SDCORE_WITH_SVG)
cc -std=c11 examples/c/decode_file.c $(pkg-config --cflags sdcore) "$libdir/libsdcore.a" \
    $(pkg-config --libs $(pkg-config --print-requires-private sdcore)) -lgif -lm -lpthread -o "$prefix/ex_static"
check "static consumer runs" '"$prefix/ex_static" "$img" | grep -q "^256x171 "'
# the README's C example, as a reader copies it, built with pkg-config
readme_block() { python3 scripts/readme-example.py "$1"; }
readme_block c > "$prefix/thumb.c"
check "README C example builds with pkg-config" '[ -s "$prefix/thumb.c" ] && cc -std=c11 -Wall -Wextra -Werror "$prefix/thumb.c" $(pkg-config --cflags --libs sdcore) -o "$prefix/thumb"'
check "README C example runs" '[ "$(LD_LIBRARY_PATH="$libdir" "$prefix/thumb" "$img")" = "256x171 premultiplied ARGB32" ]'
# the sandboxed decoder worker is installed where pkg-config and CMake say
worker=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --variable=worker sdcore)
cat > "$prefix/iso.c" <<'C'
#include <sdcore.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    FILE *f = fopen(argv[2], "rb");
    static unsigned char data[1 << 20];
    size_t n = f ? fread(data, 1, sizeof data, f) : 0;
    sd_isolate_pool *pool;
    sd_bitmap *b = NULL;
    char why[256] = "";
    if (argc < 3 || n == 0 || sd_isolate_pool_new(argv[1], 1, NULL, &pool) != SD_OK)
        return 2;
    int rc = sd_isolate_decode(pool, data, n, NULL, NULL, 0, NULL, NULL, &b, NULL, why, sizeof why);
    if (rc == SD_OK)
        printf("%ux%u\n", sd_bitmap_width(b), sd_bitmap_height(b));
    else
        fprintf(stderr, "%s\n", why);
    sd_bitmap_free(b);
    sd_isolate_pool_free(pool);
    return rc == SD_OK ? 0 : 1;
}
C
cc -std=c11 -Wall -Wextra -Werror "$prefix/iso.c" $(pkg-config --cflags --libs sdcore) -o "$prefix/iso"
check "the decoder worker installed at pkg-config's worker path decodes in its sandbox ($worker)" \
  '[ -x "$worker" ] && [ "$(LD_LIBRARY_PATH="$libdir" "$prefix/iso" "$worker" "$img")" = "$(/usr/bin/python3 -c "import sys; from PIL import Image; print(\"%dx%d\" % Image.open(sys.argv[1]).size)" "$img")" ]'
check "find_package's sdcore_WORKER names it" 'grep -q "sdcore_WORKER" "$libdir/cmake/sdcore/sdcoreConfig.cmake"'
cmake -S examples/c -B "$prefix/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null && cmake --build "$prefix/build" >/dev/null
check "find_package consumer runs" 'LD_LIBRARY_PATH="$libdir" "$prefix/build/decode_file" "$img" | grep -q "^256x171 "'
# the fetching example, both ways, against nginx on loopback
www=$prefix/srv
mkdir -p "$www/www/img"
chmod a+x "$prefix"  # nginx workers run as nobody under root: they must traverse it
cp "$img" "$www/www/img/small.jpg"; cp "$img" "$www/www/img/prog.jpg"; cp "$img" "$www/www/img/t.png"
if bash Tests/Servers/servers.sh start "$www" $$ >/dev/null 2>&1; then
  base=$(grep '^SD_TEST_HTTP=' "$www/env" | cut -d= -f2)
  cc -std=c11 -Wall -Wextra -Werror examples/c/fetch_image.c $(pkg-config --cflags --libs sdcore) -o "$prefix/fetch_pc"
  check "pkg-config fetch example loads from nginx" 'LD_LIBRARY_PATH="$libdir" "$prefix/fetch_pc" "$base/img/t.png" | grep -q "^300x200$"'
  check "find_package fetch example loads from nginx" 'LD_LIBRARY_PATH="$libdir" "$prefix/build/fetch_image" "$base/img/t.png" | grep -q "^300x200$"'
  rc=0; LD_LIBRARY_PATH="$libdir" "$prefix/fetch_pc" "$base/img/none.png" 2>"$prefix/err" || rc=$?
  check "fetch example reports a 404" '[ $rc -eq 1 ] && grep -q "404" "$prefix/err"'
  # the README's Swift example in a package of its own outside the tree, whose
  # manifest is the README's exactly as printed: it depends on the package by
  # its URL and `from:` a version. The URL is served by a bare clone of this
  # repository's HEAD, tagged with the version (git's insteadOf points the
  # printed URL at it: no network), and SwiftPM resolves the tag.
  ex=$prefix/MyApp
  git clone -q --bare . "$prefix/git/sdwebimage-linux"
  git -C "$prefix/git/sdwebimage-linux" tag -f "$hv" HEAD >/dev/null
  mkdir -p "$ex/Sources/MyApp"
  readme_block swift > "$ex/Sources/MyApp/main.swift"
  readme_block manifest > "$ex/Package.swift"
  check "README manifest names the URL and from: $hv" \
    'grep -qF ".package(url: \"https://github.com/sdwebimage-linux/sdwebimage-linux\", from: \"$hv\")" "$ex/Package.swift"'
  export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0="url.$prefix/git/.insteadOf" \
         GIT_CONFIG_VALUE_0="https://github.com/sdwebimage-linux/"
  # a cache and a trust store of its own: SwiftPM remembers which commit a
  # version was (trust on first use), and every run tags a new one
  spm=(--package-path "$ex" --scratch-path "$prefix/swift-url" --cache-path "$prefix/swiftpm-cache"
       --security-path "$prefix/swiftpm-security")
  if swift build --disable-index-store "${spm[@]}" >"$prefix/readme.log" 2>&1; then
    check "README manifest resolved the tag $hv" \
      'swift package "${spm[@]}" show-dependencies 2>/dev/null | grep -q "sdwebimage-linux<.*@$hv>"'
    "$prefix/swift-url/debug/MyApp" "$base/img/t.png" >"$prefix/readme.out" 2>&1
    check "README Swift example loads from nginx" 'grep -q "^256x171 from " "$prefix/readme.out" || { cat "$prefix/readme.out"; false; }'
  else
    tail -20 "$prefix/readme.log"
    check "README manifest resolves by URL and builds" 'false'
  fi
  unset GIT_CONFIG_COUNT GIT_CONFIG_KEY_0 GIT_CONFIG_VALUE_0
  # a Swift consumer package that depends on this checkout by path
  if swift build --disable-index-store --package-path examples/swift --scratch-path "$prefix/swift" >"$prefix/swift.log" 2>&1; then
    "$prefix/swift/debug/sdwebimage-example" "$base/img/t.png" >"$prefix/swift.out" 2>&1
    check "Swift consumer loads from nginx, then from memory" \
      'grep -q "^t.png 256x171 network pass 1$" "$prefix/swift.out" && grep -q "^t.png 256x171 memory pass 2$" "$prefix/swift.out"'
  else
    tail -20 "$prefix/swift.log"
    check "Swift consumer package builds" 'false'
  fi
  bash Tests/Servers/servers.sh stop "$www" >/dev/null 2>&1
else
  check "nginx for the fetch example" 'false'
fi
echo "install: $pass passed, $fail failed"
[ $fail -eq 0 ]
