/*
 * sd_encode_bmp.c — sd_bitmap to BMP, no library: an opaque bitmap as
 * 24-bit BI_RGB under a 40-byte BITMAPINFOHEADER (what every reader
 * takes), one with alpha as 32-bit BI_BITFIELDS with an alpha mask under a
 * 108-byte BITMAPV4HEADER tagged sRGB, straight (unpremultiplied) B,G,R,A.
 * Rows bottom-up, 72 dpi. One frame.
 */
#include <string.h>

#include "bitmap/sd_bitmap_int.h"
#include "codec/sd_codec.h"

static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, v & 0xFFFF), put16(p + 2, v >> 16); }

int sd__bmp_encode(const sd__encode_job *j, uint8_t **out, size_t *out_length)
{
    const sd_bitmap *b = j->frames[0];
    int alpha = sd_bitmap_has_alpha(b);
    uint32_t header = alpha ? 108 : 40, bpp = alpha ? 32 : 24;
    uint64_t row = ((uint64_t)b->width * bpp + 31) / 32 * 4;
    uint64_t size = 14 + header + row * b->height;
    SD__RETURN_IF(b->width > INT32_MAX || b->height > INT32_MAX || size > UINT32_MAX, SD_ETOOLARGE);
    uint8_t *f = sd__calloc(1, (size_t)size);
    SD__RETURN_IF(f == NULL, SD_ENOMEM);
    f[0] = 'B', f[1] = 'M';
    put32(f + 2, (uint32_t)size);
    put32(f + 10, 14 + header);
    uint8_t *h = f + 14;
    put32(h, header);
    put32(h + 4, b->width);
    put32(h + 8, b->height); /* positive: bottom-up */
    put16(h + 12, 1);
    put16(h + 14, bpp);
    put32(h + 16, alpha ? 3 : 0); /* BI_BITFIELDS : BI_RGB */
    put32(h + 20, (uint32_t)(row * b->height));
    put32(h + 24, 2835); /* 72 dpi */
    put32(h + 28, 2835);
    if (alpha) {
        put32(h + 40, 0x00FF0000); /* R, G, B, A masks */
        put32(h + 44, 0x0000FF00);
        put32(h + 48, 0x000000FF);
        put32(h + 52, 0xFF000000);
        put32(h + 56, 0x73524742); /* LCS_sRGB */
    }
    uint32_t *words = alpha ? sd__malloc((size_t)b->width * 4) : NULL;
    if (alpha && words == NULL) {
        sd__free(f);
        return SD_ENOMEM;
    }
    uint8_t *px = f + 14 + header;
    for (uint32_t y = 0; y < b->height; y++) {
        const uint8_t *src = b->pixels + (size_t)(b->height - 1 - y) * b->stride;
        uint8_t *dst = px + (size_t)(row * y);
        if (alpha) {
            /* 0xAARRGGBB words, written little-endian: B, G, R, A */
            sd__unpremultiply_to_argb32(src, words, b->width);
            for (uint32_t x = 0; x < b->width; x++)
                put32(dst + 4 * (size_t)x, words[x]);
        } else {
            for (uint32_t x = 0; x < b->width; x++) {
                uint32_t v;
                memcpy(&v, src + 4 * (size_t)x, 4); /* opaque: premultiplied is straight */
                dst[3 * (size_t)x] = (uint8_t)v;
                dst[3 * (size_t)x + 1] = (uint8_t)(v >> 8);
                dst[3 * (size_t)x + 2] = (uint8_t)(v >> 16);
            }
        }
    }
    sd__free(words);
    *out = f;
    *out_length = (size_t)size;
    return SD_OK;
}
