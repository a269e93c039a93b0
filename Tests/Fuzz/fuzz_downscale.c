/* The downscaling path: fuzzer-chosen thumbnail box, aspect mode and byte
 * budget on decode, then sd_bitmap_scale and sd_bitmap_orient on the result.
 * Bytes 0..5 are parameters; the rest is the image. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 6)
        return 0;
    unsigned tw = data[0] | (data[1] & 3) << 8, th = data[2] | (data[3] & 3) << 8;
    unsigned mode = data[4], budget = data[5];
    data += 6;
    size -= 6;
    sd_decoder *d;
    if (sd_decoder_new(&d) != SD_OK)
        return 0;
    fuzz_limits(d);
    sd_decoder_set(d, SD_DEC_TARGET_WIDTH, tw);
    sd_decoder_set(d, SD_DEC_TARGET_HEIGHT, th);
    sd_decoder_set(d, SD_DEC_PRESERVE_ASPECT, mode & 1);
    if (mode & 2)
        sd_decoder_set(d, SD_DEC_MAX_BYTES, (int64_t)budget * budget * 16 + 1);
    sd_bitmap *b = NULL;
    if (sd_decoder_decode(d, data, size, &b) == SD_OK) {
        uint32_t w = sd_bitmap_width(b), h = sd_bitmap_height(b);
        int64_t sw = 0, sh = 0;
        sd_decoder_get(d, SD_DEC_INFO_WIDTH, &sw);
        sd_decoder_get(d, SD_DEC_INFO_HEIGHT, &sh);
        if (w == 0 || h == 0 || (uint64_t)w * h > (uint64_t)sw * sh)
            __builtin_trap(); /* never upscale */
        if ((mode & 2) && (uint64_t)w * h * 4 > (uint64_t)budget * budget * 16 + 1 && w * h > 1)
            __builtin_trap(); /* the budget holds */
        sd_bitmap *s = NULL, *o = NULL;
        if (sd_bitmap_scale(b, 1 + tw % 97, 1 + th % 89, &s) == SD_OK)
            fuzz_touch(s);
        if (sd_bitmap_orient(b, (int)(mode >> 2) % 10, &o) == SD_OK)
            fuzz_touch(o);
        sd_bitmap_free(s);
        sd_bitmap_free(o);
    }
    sd_bitmap_free(b);
    sd_decoder_free(d);
    return 0;
}
