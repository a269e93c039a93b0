/* The decoder fed the whole input at once, with default output options
 * (built with SD_FUZZ_ONLY: one format's decoder alone, e.g. fuzz_heic). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sd_decoder *d;
    sd_bitmap *b = NULL;
    if (sd_decoder_new(&d) != SD_OK)
        return 0;
    fuzz_limits(d);
#ifdef SD_FUZZ_ONLY /* one format's decoder alone: others are declined at once */
    sd_decoder_set(d, SD_DEC_FORMATS, (int64_t)1 << SD_FUZZ_ONLY);
#endif
    if (sd_decoder_decode(d, data, size, &b) == SD_OK) {
        int64_t w = 0, h = 0;
        sd_decoder_get(d, SD_DEC_INFO_OUTPUT_WIDTH, &w);
        sd_decoder_get(d, SD_DEC_INFO_OUTPUT_HEIGHT, &h);
        if (w != sd_bitmap_width(b) || h != sd_bitmap_height(b))
            __builtin_trap(); /* the promised size must be the delivered size */
        fuzz_touch(b);
    }
    sd_bitmap_free(b);
    sd_decoder_free(d);
    return 0;
}
