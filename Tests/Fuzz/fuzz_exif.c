/* The EXIF orientation parser: always 1..8, never out of bounds. */
#include <string.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int o = sd_exif_orientation(data, size);
    if (o < 1 || o > 8)
        __builtin_trap();
    /* and as a JPEG APP1 payload */
    static uint8_t buf[65536 + 6];
    if (size <= 65536) {
        memcpy(buf, "Exif\0\0", 6);
        memcpy(buf + 6, data, size);
        o = sd_exif_orientation(buf, size + 6);
        if (o < 1 || o > 8)
            __builtin_trap();
    }
    return 0;
}
