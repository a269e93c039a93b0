/* fuzz_common.h — shared limits for the libFuzzer targets. Limits keep a
 * single input under the fuzzer's memory and time budget; the limit paths
 * themselves are tested in Tests/C/test_damaged.c. */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H
#include <string.h>

#include <sdcore.h>

static inline void fuzz_limits(sd_decoder *d)
{
    sd_decoder_set(d, SD_DEC_MAX_PIXELS, 4 * 1024 * 1024);
    sd_decoder_set(d, SD_DEC_MAX_MEMORY, 256 * 1024 * 1024);
    sd_decoder_set(d, SD_DEC_RENDER_DEADLINE_MS, 2000); /* an SVG: well inside -timeout */
}

/* Decoded bitmaps must be fully readable (ASan/MSan-style touch). */
static inline unsigned fuzz_touch(const sd_bitmap *b)
{
    unsigned acc = 0;
    const uint8_t *p = sd_bitmap_pixels(b);
    for (size_t i = 0; i < sd_bitmap_size(b); i += 61)
        acc += p[i];
    return acc;
}
#endif
