/*
 * sd_pixel.h — per-pixel conversion into native premultiplied ARGB32.
 * Pixels are written as uint32 values 0xAARRGGBB, which is the native layout
 * on either byte order (B,G,R,A bytes on little-endian).
 */
#ifndef SD_PIXEL_H
#define SD_PIXEL_H

#include <stdint.h>

/* round(c*a/255), exact for all 8-bit c, a (== (c*a + 127) / 255). */
static inline uint32_t sd__mul_div255(uint32_t c, uint32_t a)
{
    uint32_t t = c * a + 128;
    return (t + (t >> 8)) >> 8;
}

static inline uint32_t sd__pack_premul(uint32_t r, uint32_t g, uint32_t b, uint32_t a)
{
    if (a == 255)
        return 0xFF000000u | (r << 16) | (g << 8) | b;
    if (a == 0)
        return 0;
    return (a << 24) | (sd__mul_div255(r, a) << 16) |
           (sd__mul_div255(g, a) << 8) | sd__mul_div255(b, a);
}

static inline uint32_t sd__pack_opaque(uint32_t r, uint32_t g, uint32_t b)
{
    return 0xFF000000u | (r << 16) | (g << 8) | b;
}

#endif
