/* The downscaling path: fuzzer-chosen thumbnail box, aspect mode, byte
 * budget, filter, linear light and shrink-on-load margin on decode, then
 * sd_bitmap_resample (any filter, up or down) and sd_bitmap_orient on the
 * result; no channel may exceed its alpha. Bytes 0..6 are parameters; the
 * rest is the image. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 7)
        return 0;
    unsigned tw = data[0] | (data[1] & 3) << 8, th = data[2] | (data[3] & 3) << 8;
    unsigned mode = data[4], budget = data[5], rs = data[6];
    data += 7;
    size -= 7;
    sd_decoder *d;
    if (sd_decoder_new(&d) != SD_OK)
        return 0;
    fuzz_limits(d);
    sd_decoder_set(d, SD_DEC_TARGET_WIDTH, tw);
    sd_decoder_set(d, SD_DEC_TARGET_HEIGHT, th);
    sd_decoder_set(d, SD_DEC_PRESERVE_ASPECT, mode & 1);
    if (mode & 2)
        sd_decoder_set(d, SD_DEC_MAX_BYTES, (int64_t)budget * budget * 16 + 1);
    sd_decoder_set(d, SD_DEC_RESAMPLE_FILTER, rs % 5);
    sd_decoder_set(d, SD_DEC_RESAMPLE_LINEAR, (rs >> 3) & 1);
    sd_decoder_set(d, SD_DEC_SHRINK_ON_LOAD_MARGIN, 1 + ((rs >> 4) & 7));
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
        if (sd_bitmap_resample(b, 1 + tw % 97 + (mode & 0x80 ? w : 0), 1 + th % 89, (sd_filter)((rs >> 1) % 5),
                               rs >> 7, &s) == SD_OK) {
            fuzz_touch(s);
            for (uint32_t y = 0; y < sd_bitmap_height(s); y++) {
                const uint8_t *p = sd_bitmap_pixels(s) + y * sd_bitmap_stride(s);
                for (uint32_t x = 0; x < sd_bitmap_width(s); x++, p += 4) {
                    uint32_t v;
                    memcpy(&v, p, 4);
                    uint32_t a = v >> 24;
                    if (((v >> 16) & 255) > a || ((v >> 8) & 255) > a || (v & 255) > a)
                        __builtin_trap(); /* premultiplied stays premultiplied */
                }
            }
        }
        if (sd_bitmap_orient(b, (int)(mode >> 2) % 10, &o) == SD_OK)
            fuzz_touch(o);
        sd_bitmap_free(s);
        sd_bitmap_free(o);
    }
    sd_bitmap_free(b);
    sd_decoder_free(d);
    return 0;
}
