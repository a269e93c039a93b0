/* sd_bitmap.c — allocation, accessors, row conversion (resampling: sd_resample.c). */
#include <string.h>

#include "bitmap/sd_bitmap_int.h"
#include "sdcore.h"
#include "bitmap/sd_pixel.h"

int sd__bitmap_alloc(uint32_t width, uint32_t height, int zeroed, sd_bitmap **out)
{
    SD__RETURN_IF(out == NULL, SD_EINVAL);
    *out = NULL;
    SD__RETURN_IF(width == 0 || height == 0, SD_EINVAL);
    /* stride * height must fit comfortably in size_t and in a 31-bit row count */
    uint64_t stride = (uint64_t)width * 4;
    uint64_t bytes = stride * height;
    SD__RETURN_IF(bytes > ((uint64_t)SIZE_MAX >> 1), SD_ETOOLARGE);
    sd_bitmap *b = sd__malloc(sizeof *b);
    SD__RETURN_IF(b == NULL, SD_ENOMEM);
    b->pixels = sd__pixels_alloc((size_t)bytes, zeroed, &b->capacity);
    if (b->pixels == NULL) {
        sd__free(b);
        return SD_ENOMEM;
    }
    b->width = width;
    b->height = height;
    b->stride = (size_t)stride;
    b->release = NULL;
    *out = b;
    return SD_OK;
}

int sd__bitmap_wrap(uint32_t width, uint32_t height, size_t stride, uint8_t *pixels, size_t bytes,
                    void (*release)(uint8_t *, size_t), sd_bitmap **out)
{
    SD__RETURN_IF(out == NULL || pixels == NULL || release == NULL || width == 0 || height == 0 ||
                      stride < (size_t)width * 4 || bytes < stride * height,
                  SD_EINVAL);
    sd_bitmap *b = sd__malloc(sizeof *b);
    SD__RETURN_IF(b == NULL, SD_ENOMEM);
    *b = (sd_bitmap){width, height, stride, pixels, bytes, release};
    *out = b;
    return SD_OK;
}

int sd_bitmap_new(uint32_t width, uint32_t height, sd_bitmap **out)
{
    return sd__bitmap_alloc(width, height, 1, out);
}

int sd__bitmap_copy(const sd_bitmap *src, sd_bitmap **out)
{
    SD__FORWARD_IF_ERROR(sd__bitmap_alloc(src->width, src->height, 0, out));
    for (uint32_t y = 0; y < src->height; y++)
        memcpy((*out)->pixels + y * (*out)->stride, src->pixels + y * src->stride,
               (size_t)src->width * 4);
    return SD_OK;
}

void sd_bitmap_free(sd_bitmap *bitmap)
{
    if (bitmap == NULL)
        return;
    if (bitmap->release != NULL)
        bitmap->release(bitmap->pixels, bitmap->capacity);
    else
        sd__pixels_free(bitmap->pixels, bitmap->capacity);
    sd__free(bitmap);
}

uint32_t sd_bitmap_width(const sd_bitmap *b) { return b ? b->width : 0; }
uint32_t sd_bitmap_height(const sd_bitmap *b) { return b ? b->height : 0; }
size_t sd_bitmap_stride(const sd_bitmap *b) { return b ? b->stride : 0; }
uint8_t *sd_bitmap_pixels(const sd_bitmap *b) { return b ? b->pixels : NULL; }
size_t sd_bitmap_size(const sd_bitmap *b) { return b ? b->stride * b->height : 0; }

int sd_bitmap_has_alpha(const sd_bitmap *b)
{
    if (b == NULL)
        return 0;
    for (uint32_t y = 0; y < b->height; y++) {
        const uint32_t *row = (const uint32_t *)(b->pixels + y * b->stride);
        uint32_t all = 0xFF000000u;
        for (uint32_t x = 0; x < b->width; x++)
            all &= row[x];
        if ((all & 0xFF000000u) != 0xFF000000u)
            return 1;
    }
    return 0;
}

void sd_premultiply_rgba(const uint8_t *src, uint8_t *dst, size_t count)
{
    size_t i = sd__premultiply_vector(src, dst, count, 1);
    uint32_t *out = (uint32_t *)(void *)dst;
    for (; i < count; i++)
        out[i] = sd__pack_premul(src[i * 4], src[i * 4 + 1], src[i * 4 + 2], src[i * 4 + 3]);
}

/* (n + a/2) / a without a division: n * ceil(2^32 / a) >> 32 is exact for
 * every n < 2^16 (the error term n * (m*a - 2^32) stays below 2^32 / a);
 * checked for all a and c by the unit test unpremultiply_exhaustive. */
#define SD__INV1(a) ((a) ? ((UINT64_C(1) << 32) + (a)-1) / ((a) ? (a) : 1) : 0)
#define SD__INV4(a) SD__INV1(a), SD__INV1(a + 1), SD__INV1(a + 2), SD__INV1(a + 3)
#define SD__INV16(a) SD__INV4(a), SD__INV4(a + 4), SD__INV4(a + 8), SD__INV4(a + 12)
#define SD__INV64(a) SD__INV16(a), SD__INV16(a + 16), SD__INV16(a + 32), SD__INV16(a + 48)
static const uint64_t sd__inv_alpha[256] = {SD__INV64(0), SD__INV64(64), SD__INV64(128), SD__INV64(192)};

static inline uint32_t sd__unpremul(uint32_t c, uint32_t a)
{
    uint32_t v = (uint32_t)(((uint64_t)(c * 255 + a / 2) * sd__inv_alpha[a]) >> 32);
    return v > 255 ? 255 : v;
}

/* One premultiplied ARGB32 pixel to straight 0xAARRGGBB (alpha 0: all 0). */
static inline uint32_t sd__unpremul_pixel(uint32_t p)
{
    const uint32_t a = p >> 24;
    if (a == 255)
        return p;
    if (a == 0)
        return 0;
    return a << 24 | sd__unpremul((p >> 16) & 0xFF, a) << 16 | sd__unpremul((p >> 8) & 0xFF, a) << 8 |
           sd__unpremul(p & 0xFF, a);
}

void sd__unpremultiply_to_argb32(const uint8_t *src, uint32_t *dst, size_t count)
{
    for (size_t i = 0; i < count; i++, src += 4) {
        uint32_t p;
        memcpy(&p, src, 4);
        dst[i] = sd__unpremul_pixel(p);
    }
}

void sd_unpremultiply_argb(const uint8_t *src, uint8_t *dst, size_t count)
{
    for (size_t i = 0; i < count; i++, src += 4, dst += 4) {
        uint32_t p;
        memcpy(&p, src, 4);
        p = sd__unpremul_pixel(p);
        dst[0] = (uint8_t)(p >> 16);
        dst[1] = (uint8_t)(p >> 8);
        dst[2] = (uint8_t)p;
        dst[3] = (uint8_t)(p >> 24);
    }
}
