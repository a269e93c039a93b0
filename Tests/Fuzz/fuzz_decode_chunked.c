/* The decoder fed in fuzzer-chosen chunk sizes with snapshots in between.
 * Byte 0 seeds the chunking, byte 1 picks options; the rest is the image. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    unsigned seed = data[0] * 2654435761u + 1, opts = data[1];
    data += 2;
    size -= 2;
    sd_decoder *d;
    if (sd_decoder_new(&d) != SD_OK)
        return 0;
    fuzz_limits(d);
    sd_decoder_set(d, SD_DEC_PREVIEWS, opts & 1);
    sd_decoder_set(d, SD_DEC_PREVIEW_INTERVAL_MS, 0);
    sd_decoder_set(d, SD_DEC_APPLY_ORIENTATION, (opts >> 1) & 1);
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
        sd_bitmap *snap = NULL;
        if ((seed >> 8) % 3 == 0 && sd_decoder_snapshot(d, &snap) == SD_OK)
            fuzz_touch(snap);
        sd_bitmap_free(snap);
    }
    sd_bitmap *b = NULL;
    if (rc == SD_OK && sd_decoder_finish(d) == SD_OK && sd_decoder_take_bitmap(d, &b) == SD_OK)
        fuzz_touch(b);
    sd_bitmap_free(b);
    sd_decoder_free(d);
    return 0;
}
