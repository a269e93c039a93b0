/*
 * sdcore.h — umbrella header of libsdcore, the C core of SDWebImage for Linux.
 * The only header a C consumer needs: `#include <sdcore.h>`.
 */
#ifndef SDCORE_H
#define SDCORE_H

#include "sdcore/sd_common.h"
#include "sdcore/sd_bitmap.h"
#include "sdcore/sd_orientation.h"
#include "sdcore/sd_render.h"
#include "sdcore/sd_decoder.h"
#include "sdcore/sd_encoder.h"
#include "sdcore/sd_loop.h"
#include "sdcore/sd_decode_sink.h"
#include "sdcore/sd_isolate.h"

#endif /* SDCORE_H */
