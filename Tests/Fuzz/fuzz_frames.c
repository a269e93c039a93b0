/* Animated decoders (GIF, APNG, WebP; one binary per format, built with
 * -DSD_FUZZ_FORMAT): fed in fuzzer-chosen chunks, frames asked for while the
 * bytes arrive and afterwards in a fuzzer-chosen order, with or without a
 * frame cache. Byte 0 seeds the chunking, byte 1 picks options. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    unsigned seed = data[0] * 2654435761u + 1, opts = data[1];
    data += 2;
    size -= 2;
#ifdef SD_FUZZ_FORMAT
    if (sd_sniff_format(data, size) != SD_FUZZ_FORMAT)
        return 0; /* stay on this decoder */
#endif
    sd_decoder *d;
    if (sd_decoder_new(&d) != SD_OK)
        return 0;
    fuzz_limits(d);
    sd_decoder_set(d, SD_DEC_MAX_FRAMES, 64);
    sd_decoder_set(d, SD_DEC_FRAME_CACHE_BYTES, (opts & 1) ? 0 : 1 << 20);
    sd_decoder_set(d, SD_DEC_FIRST_FRAME_ONLY, (opts >> 1) & 1);
    if (opts & 4)
        sd_decoder_set(d, SD_DEC_MAX_PIXEL_SIZE, 1 + (opts >> 3));
    size_t pos = 0;
    int rc = SD_OK;
    while (pos < size && rc == SD_OK) {
        seed = seed * 1103515245u + 12345u;
        size_t n = 1 + (seed >> 16) % ((seed & 1) ? 16 : 2048);
        if (n > size - pos)
            n = size - pos;
        rc = sd_decoder_push(d, data + pos, n);
        pos += n;
        int64_t count = 0;
        sd_bitmap *b = NULL;
        if ((seed >> 8) % 3 == 0 && sd_decoder_get(d, SD_DEC_INFO_FRAME_COUNT, &count) == SD_OK && count > 0 &&
            sd_decoder_frame(d, (uint32_t)((seed >> 4) % (uint64_t)count), &b) == SD_OK)
            fuzz_touch(b);
        sd_bitmap_free(b);
        b = NULL;
        if ((seed >> 12) % 5 == 0 && sd_decoder_snapshot(d, &b) == SD_OK)
            fuzz_touch(b);
        sd_bitmap_free(b);
    }
    if (rc == SD_OK && sd_decoder_finish(d) == SD_OK) {
        int64_t count = 0;
        sd_decoder_get(d, SD_DEC_INFO_FRAME_COUNT, &count);
        for (int64_t k = 0; k < count + 2; k++) {
            seed = seed * 1103515245u + 12345u;
            uint32_t i = (k & 1) ? (uint32_t)k / 2 : (uint32_t)((seed >> 16) % (uint64_t)(count + 1));
            sd_bitmap *b = NULL;
            int64_t v;
            sd_decoder_frame_get(d, i, SD_FRAME_DURATION_MS, &v);
            if (sd_decoder_frame(d, i, &b) == SD_OK)
                fuzz_touch(b);
            sd_bitmap_free(b);
        }
        sd_bitmap *b = NULL;
        if (sd_decoder_take_bitmap(d, &b) == SD_OK)
            fuzz_touch(b);
        sd_bitmap_free(b);
    }
    sd_decoder_free(d);
    return 0;
}
