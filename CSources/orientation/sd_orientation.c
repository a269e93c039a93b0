/* sd_orientation.c — bounds-checked EXIF orientation parser and the 8 transforms. */
#include <string.h>

#include "bitmap/sd_bitmap_int.h"
#include "sdcore.h"

static uint32_t rd16(const uint8_t *p, int le)
{
    return le ? (uint32_t)p[0] | (uint32_t)p[1] << 8 : (uint32_t)p[0] << 8 | p[1];
}

static uint32_t rd32(const uint8_t *p, int le)
{
    return le ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24
              : (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int sd_exif_orientation(const uint8_t *data, size_t len)
{
    if (data == NULL)
        return 1;
    if (len >= 6 && memcmp(data, "Exif\0\0", 6) == 0) {
        data += 6;
        len -= 6;
    }
    if (len < 8)
        return 1;
    int le;
    if (data[0] == 'I' && data[1] == 'I' && data[2] == 0x2A && data[3] == 0)
        le = 1;
    else if (data[0] == 'M' && data[1] == 'M' && data[2] == 0 && data[3] == 0x2A)
        le = 0;
    else
        return 1;
    /* IFD0 only: we never follow a next-IFD link, so loops cannot happen. */
    uint64_t ifd = rd32(data + 4, le);
    if (ifd + 2 > len)
        return 1;
    uint32_t count = rd16(data + ifd, le);
    uint64_t avail = (len - ifd - 2) / 12;
    if (count > avail)
        count = (uint32_t)avail; /* a huge count reads only what exists */
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *e = data + ifd + 2 + (uint64_t)i * 12;
        if (rd16(e, le) != 0x0112)
            continue;
        uint32_t type = rd16(e + 2, le), n = rd32(e + 4, le);
        if (type != 3 /* SHORT */ || n < 1)
            return 1;
        uint32_t v = rd16(e + 8, le);
        return (v >= 1 && v <= 8) ? (int)v : 1;
    }
    return 1;
}

int sd_orientation_swaps_axes(int o) { return o >= 5 && o <= 8; }

int sd_bitmap_orient(const sd_bitmap *src, int o, sd_bitmap **out)
{
    SD__RETURN_IF(src == NULL || out == NULL, SD_EINVAL);
    *out = NULL;
    if (o < 1 || o > 8)
        o = 1;
    const int64_t W = src->width, H = src->height, S = (int64_t)(src->stride / 4);
    int64_t base, sx, sy; /* dest(x,y) = src[base + x*sx + y*sy] (in pixels) */
    switch (o) {
    case 2: base = W - 1; sx = -1; sy = S; break;
    case 3: base = (H - 1) * S + W - 1; sx = -1; sy = -S; break;
    case 4: base = (H - 1) * S; sx = 1; sy = -S; break;
    case 5: base = 0; sx = S; sy = 1; break;
    case 6: base = (H - 1) * S; sx = -S; sy = 1; break;
    case 7: base = (H - 1) * S + W - 1; sx = -S; sy = -1; break;
    case 8: base = W - 1; sx = S; sy = -1; break;
    default: base = 0; sx = 1; sy = S; break;
    }
    uint32_t dw = sd_orientation_swaps_axes(o) ? src->height : src->width;
    uint32_t dh = sd_orientation_swaps_axes(o) ? src->width : src->height;
    sd_bitmap *dst;
    SD__FORWARD_IF_ERROR(sd__bitmap_alloc(dw, dh, 0, &dst));
    const uint32_t *s = (const uint32_t *)(const void *)src->pixels;
    /* 32x32 tiles keep both the reads and the writes in cache for the
     * axis-swapping cases. */
    enum { T = 32 };
    for (uint32_t ty = 0; ty < dh; ty += T) {
        uint32_t yend = SD__MIN(dh, ty + T);
        for (uint32_t tx = 0; tx < dw; tx += T) {
            uint32_t xend = SD__MIN(dw, tx + T);
            for (uint32_t y = ty; y < yend; y++) {
                uint32_t *d = (uint32_t *)(void *)(dst->pixels + (size_t)y * dst->stride);
                const uint32_t *row = s + base + (int64_t)y * sy;
                for (uint32_t x = tx; x < xend; x++)
                    d[x] = row[(int64_t)x * sx];
            }
        }
    }
    *out = dst;
    return SD_OK;
}
