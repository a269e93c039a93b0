/* sd_bitmap.c — allocation, accessors, row conversion, area resampling. */
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

/*
 * Resampling weights for one axis, n source pixels to m, exact in integers;
 * every output's weights sum to *den.
 * Reducing (m <= n), area average: output i covers the source span
 * [i*n/m, (i+1)*n/m); in units of 1/m each source pixel is m wide and each
 * output pixel n wide, so overlaps are integers summing to n.
 * Enlarging (m > n), linear interpolation between pixel centres: output i
 * sits at source x = (i + 1/2) * n/m - 1/2, i.e. ((2i+1)n - m) / 2m, split
 * between its two neighbours in units of 1/2m (edges clamp). Replicating
 * pixels instead would make blocks of an upscaled thumbnail.
 */
typedef struct {
    uint32_t first;  /* first source index */
    uint32_t count;  /* contributing source pixels */
    uint32_t offset; /* into the weight array */
} sd__span;

static int sd__axis_weights(uint32_t n, uint32_t m, sd__span **spans_out, uint32_t **w_out, uint32_t *den)
{
    int enlarge = m > n;
    uint32_t per = enlarge ? 2 : (uint32_t)((n + m - 1) / m) + 1;
    sd__span *spans = sd__malloc(sizeof *spans * m);
    uint32_t *w = sd__malloc(sizeof *w * (size_t)per * m);
    if (spans == NULL || w == NULL) {
        sd__free(spans);
        sd__free(w);
        return SD_ENOMEM;
    }
    uint32_t off = 0;
    for (uint32_t i = 0; i < m; i++) {
        spans[i].offset = off;
        if (enlarge) {
            int64_t pos = (int64_t)(2 * (uint64_t)i + 1) * n - m; /* in 1/2m units */
            int64_t unit = 2 * (int64_t)m;
            if (pos <= 0 || pos >= (int64_t)(n - 1) * unit) { /* before the first / after the last centre */
                spans[i].first = pos <= 0 ? 0 : n - 1;
                spans[i].count = 1;
                w[off] = (uint32_t)unit;
            } else {
                uint32_t j = (uint32_t)(pos / unit), f = (uint32_t)(pos % unit);
                spans[i].first = j;
                spans[i].count = f ? 2 : 1;
                w[off] = (uint32_t)unit - f;
                w[off + 1] = f;
            }
        } else {
            uint64_t lo = (uint64_t)i * n, hi = lo + n; /* in 1/m units */
            uint32_t j0 = (uint32_t)(lo / m), j1 = (uint32_t)((hi + m - 1) / m);
            if (j1 > n)
                j1 = n;
            spans[i].first = j0;
            spans[i].count = 0;
            for (uint32_t j = j0; j < j1; j++) {
                uint64_t a = SD__MAX(lo, (uint64_t)j * m), b = SD__MIN(hi, (uint64_t)(j + 1) * m);
                if (b > a) {
                    w[off + spans[i].count] = (uint32_t)(b - a);
                    spans[i].count++;
                }
            }
        }
        off += spans[i].count;
    }
    *spans_out = spans;
    *w_out = w;
    *den = enlarge ? 2 * m : n;
    return SD_OK;
}

int sd_bitmap_scale(const sd_bitmap *src, uint32_t width, uint32_t height, sd_bitmap **out)
{
    SD__RETURN_IF(src == NULL || out == NULL || width == 0 || height == 0, SD_EINVAL);
    *out = NULL;
    if (width == src->width && height == src->height)
        return sd__bitmap_copy(src, out);

    sd__span *hs = NULL, *vs = NULL;
    uint32_t *hw = NULL, *vw = NULL;
    uint8_t *tmp = NULL;
    sd_bitmap *dst = NULL;
    uint32_t hn = 0, vn = 0; /* each axis's weight sum */
    int rc = sd__axis_weights(src->width, width, &hs, &hw, &hn);
    if (rc == SD_OK)
        rc = sd__axis_weights(src->height, height, &vs, &vw, &vn);
    if (rc == SD_OK) {
        tmp = sd__malloc((size_t)width * 4 * src->height);
        rc = tmp ? SD_OK : SD_ENOMEM;
    }
    if (rc == SD_OK)
        rc = sd__bitmap_alloc(width, height, 0, &dst);
    if (rc != SD_OK)
        goto done;

    /* Horizontal pass: each source row into tmp (width x src->height). */
    for (uint32_t y = 0; y < src->height; y++) {
        const uint8_t *s = src->pixels + (size_t)y * src->stride;
        uint8_t *t = tmp + (size_t)y * width * 4;
        for (uint32_t x = 0; x < width; x++) {
            uint32_t acc[4] = {0, 0, 0, 0};
            const uint32_t *wt = hw + hs[x].offset;
            const uint8_t *p = s + (size_t)hs[x].first * 4;
            for (uint32_t k = 0; k < hs[x].count; k++, p += 4)
                for (int c = 0; c < 4; c++)
                    acc[c] += p[c] * wt[k];
            for (int c = 0; c < 4; c++)
                t[x * 4 + c] = (uint8_t)((acc[c] + hn / 2) / hn);
        }
    }
    /* Vertical pass: rows of tmp into dst. */
    uint32_t *acc = sd__calloc((size_t)width * 4, sizeof *acc);
    if (acc == NULL) {
        rc = SD_ENOMEM;
        goto done;
    }
    for (uint32_t y = 0; y < height; y++) {
        memset(acc, 0, (size_t)width * 4 * sizeof *acc);
        const uint32_t *wt = vw + vs[y].offset;
        for (uint32_t k = 0; k < vs[y].count; k++) {
            const uint8_t *t = tmp + (size_t)(vs[y].first + k) * width * 4;
            for (uint32_t i = 0; i < width * 4; i++)
                acc[i] += t[i] * wt[k];
        }
        uint8_t *d = dst->pixels + (size_t)y * dst->stride;
        for (uint32_t i = 0; i < width * 4; i++)
            d[i] = (uint8_t)((acc[i] + vn / 2) / vn);
    }
    sd__free(acc);
done:
    sd__free(hs);
    sd__free(hw);
    sd__free(vs);
    sd__free(vw);
    sd__free(tmp);
    if (rc != SD_OK) {
        sd_bitmap_free(dst);
        return rc;
    }
    *out = dst;
    return SD_OK;
}
