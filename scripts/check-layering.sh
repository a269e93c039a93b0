#!/usr/bin/env bash
# The import rules of docs/ARCHITECTURE.md, checked on every `make test` so
# they cannot erode silently. Prints each violation; exit 1 if any.
set -u
cd "$(dirname "$0")/.."
bad=0
violation() { echo "layering violation: $*"; bad=1; }
# files under $1 whose text matches the extended regex $2 (minus exceptions $3)
check() {
  local dir=$1 re=$2 except=${3:-^$} why=$4 f
  for f in $(grep -rlE "$re" $dir 2>/dev/null | grep -vE "$except"); do violation "$f: $why"; done
}

# System headers only where they belong.
check include '#include <(curl/curl|jpeglib|png)\.h>' '' 'public headers expose no curl, jpeg or png types'
check CSources 'curl/curl\.h' '^CSources/loop/' 'curl belongs to loop/'
check CSources 'jpeglib\.h' '^CSources/(decode/jpeg|encode)/' 'libjpeg belongs to decode/jpeg and encode'
check CSources '<png\.h>' '^CSources/(decode/png|encode)/' 'libpng belongs to decode/png and encode'
check CSources '<lcms2(_plugin)?\.h>' '^CSources/color/' 'lcms2 belongs to color/'

# The loop moves bytes: no decoder, no bitmap, no pixels.
check 'include/sdcore/sd_loop.h include/sdcore/sd_request.h include/sdcore/sd_result.h include/sdcore/sd_sink.h' '#include "sd_(decoder|bitmap|decode_sink|encoder)\.h"' '' 'the loop headers know no images'
check CSources/loop '#include "(sdcore\.h|sdcore/sd_(decoder|bitmap|decode_sink|orientation|encoder)\.h|decode/|bitmap/|orientation/|encode/|work/)' '' 'loop/ includes no image header'
check CSources/loop '(sd_decoder|sd_bitmap|sd__bitmap|sd__pixels)_?[a-z_]*\(' '' 'loop/ calls no decoder or bitmap function'

# Lower layers stay below.
check CSources/common '#include "(loop|decode|bitmap|orientation|encode|work|color|codec|sink|render|isolate)/' '' 'common/ depends on nothing'
check "$(echo CSources/common/*.c)" 'sd__(color|ctab|xform|decoder|bitmap|loop|work)_[a-z_]*\(' '' 'common/ calls nothing above it (a cache above registers its drain)'
# Colour converts what it is handed: its own context, no decoder.
check CSources/color '#include "(loop|decode|work|encode|codec|sink|orientation)/' '' 'color/ knows no decoder, codec or loop'
check CSources/color 'sd_decoder \*|struct sd_decoder|sd__decoder_' '' 'color/ takes an sd__color, never the decoder'
# Encoders take bitmaps: no decoder insides, no loop.
check CSources/encode '#include "(loop|decode|work|sink|color)/' '' 'encode/ knows no decoder, loop or colour conversion'
check CSources/work '#include "(loop|decode|bitmap|orientation|encode)/|sdcore\.h"' '' 'the work pool knows no payload'
check CSources/bitmap '#include "(loop|decode|work|render)/|curl' '' 'bitmap/ is below decode and loop'
check CSources/orientation '#include "(loop|decode|work)/' '' 'orientation/ is below decode and loop'
# The render planner plans and draws its last step: bitmaps, no decoder.
check CSources/render '#include "(loop|decode|work|encode|codec|sink|color|orientation)/' '' 'render/ knows no decoder, codec, colour or loop'
check CSources/render 'sd_decoder \*|struct sd_decoder|sd__decoder_' '' 'render/ plans for a size and an orientation, never the decoder'
# Isolation runs decoders elsewhere: the public decoder API, a bitmap made
# of the worker's mapping, nothing of a codec or the loop.
check CSources/isolate '#include "(loop|decode|work|encode|codec|sink|color|orientation|render)/' '' 'isolate/ uses the public decoder API, common and bitmap only'
# The codec registry names entry points; it includes no layer's insides.
check CSources/codec '#include "(loop|decode|encode|work)/' '' 'codec/ is the registry: rows, not codecs'
# decode/ knows no loop and posts no work: the decode sink (sink/) bridges
# them through the public headers alone.
check CSources/decode '#include "(loop/|work/|sdcore/sd_(loop|request|result|sink|decode_sink)\.h)' '' 'decode/ knows no loop; the decode sink is in sink/'
check CSources/sink '#include "(loop/|decode/|bitmap/|encode/|codec/)' '' 'the decode sink uses public headers, common and work only'

# Tests and benchmarks in C see the public API only.
check 'Tests/C Benchmarks/C examples/c tools' '#include "(common|loop|decode|bitmap|orientation|encode|work)/' '' 'C tests use the public API'

# Swift: the wrapper modules own the C; the rest never imports CSDCore.
check 'Sources/SDCache' '^import (CSDCore|SDCoders|SDDownloader|SDWebImage)' '' 'SDCache is Foundation only (and SDSync)'
check 'Sources/SDSync' '^import [^F]' '' 'SDSync is Foundation only: the locks every module shares'
check 'Sources/SDWebImage' '^import CSDCore' '' 'SDWebImage goes through SDCoders/SDDownloader'
check 'Sources/SDCoders' '^import (SDDownloader|SDCache|SDWebImage)$' '' 'SDCoders is below the facade'
# SDDownloader hands out what the decode sink made, as SDCoders' Bitmap
check 'Sources/SDDownloader' '^import (SDCache|SDWebImage)$' '' 'SDDownloader is below the facade'

# Libraries never print: Swift logs through swift-log, the C core through its
# log callback (sd_set_log_callback).
check 'Sources/SDWebImageRedis' '^import (CSDCore|SDDownloader)$' '' 'the Redis tier is a cache: bytes and the SDWebImage API only'
check 'Sources/SDCoders Sources/SDDownloader Sources/SDCache Sources/SDWebImage Sources/SDWebImageRedis' '(^|[^.[:alnum:]_])(print|debugPrint|dump)\(' '[.]docc/' 'the library logs through swift-log, never print'
check 'CSources' '\b(printf|fprintf|puts|fputs|perror|vfprintf)\(' '' 'libsdcore logs through sd_set_log_callback, never prints'

exit $bad
