/*
 * sd_pixel.h — per-pixel conversion into native premultiplied ARGB32.
 * Pixels are written as uint32 values 0xAARRGGBB, which is the native layout
 * on either byte order (B,G,R,A bytes on little-endian).
 */
#ifndef SD_PIXEL_H
#define SD_PIXEL_H

#include <stddef.h>
#include <stdint.h>
#if defined(__SSE2__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#include <emmintrin.h>
#define SD__PREMUL_SSE2 1
#endif

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

/* Straight 8-bit pixels to native premultiplied ARGB32, four a step where
 * SSE2 is there (x86-64's baseline; little-endian), in place too: bytes
 * R,G,B,A (`rgba`) or B,G,R,A. Exact: t = c*a + 128 and t + (t >> 8) fit
 * in 16-bit lanes, and alpha times 255 through the same formula stays
 * alpha. Returns how many pixels it did; the caller does the rest. */
static inline size_t sd__premultiply_vector(const uint8_t *src, uint8_t *dst, size_t count, int rgba)
{
    size_t i = 0;
#ifdef SD__PREMUL_SSE2
    const __m128i zero = _mm_setzero_si128(), bias = _mm_set1_epi16(128);
    const __m128i keep_a = _mm_set_epi16(255, 0, 0, 0, 255, 0, 0, 0);
    const __m128i color = _mm_set_epi16(0, -1, -1, -1, 0, -1, -1, -1);
    const __m128i ones = _mm_set1_epi8(-1);
    for (; i + 4 <= count; i += 4) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(src + i * 4));
        /* four opaque B,G,R,A pixels are already what they become; four
         * transparent ones become 0 (a canvas's cleared areas) */
        if (!rgba && (_mm_movemask_epi8(_mm_cmpeq_epi8(v, ones)) & 0x8888) == 0x8888) {
            _mm_storeu_si128((__m128i *)(void *)(dst + i * 4), v);
            continue;
        }
        if ((_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero)) & 0x8888) == 0x8888) {
            _mm_storeu_si128((__m128i *)(void *)(dst + i * 4), zero);
            continue;
        }
        __m128i halves[2] = {_mm_unpacklo_epi8(v, zero), _mm_unpackhi_epi8(v, zero)};
        for (int h = 0; h < 2; h++) {
            __m128i px = halves[h];
            if (rgba) /* lanes become B,G,R,A */
                px = _mm_shufflehi_epi16(_mm_shufflelo_epi16(px, _MM_SHUFFLE(3, 0, 1, 2)), _MM_SHUFFLE(3, 0, 1, 2));
            __m128i a = _mm_shufflehi_epi16(_mm_shufflelo_epi16(halves[h], _MM_SHUFFLE(3, 3, 3, 3)),
                                            _MM_SHUFFLE(3, 3, 3, 3));
            a = _mm_or_si128(_mm_and_si128(a, color), keep_a); /* a, a, a, 255 */
            __m128i t = _mm_add_epi16(_mm_mullo_epi16(px, a), bias);
            halves[h] = _mm_srli_epi16(_mm_add_epi16(t, _mm_srli_epi16(t, 8)), 8);
        }
        _mm_storeu_si128((__m128i *)(void *)(dst + i * 4), _mm_packus_epi16(halves[0], halves[1]));
    }
#else
    (void)src, (void)dst, (void)count, (void)rgba;
#endif
    return i;
}

#endif
