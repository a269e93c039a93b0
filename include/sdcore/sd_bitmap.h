/*
 * sd_bitmap.h — the decoded image: premultiplied ARGB32 in native byte order.
 *
 * Pixel format: 32 bits per pixel, premultiplied alpha, stored as one native
 * uint32 0xAARRGGBB; on little-endian machines the bytes in memory are
 * B, G, R, A. This is cairo's CAIRO_FORMAT_ARGB32 and pixman's a8r8g8b8, so
 * C consumers can blit without conversion. Rows are top-first; `stride` is
 * the distance in bytes between rows (libsdcore always produces
 * stride == width * 4, but consumers should honour `stride`).
 *
 * Ownership: a bitmap is owned by whoever received it from a `_new`,
 * `sd_decoder_take_bitmap`, `sd_decoder_snapshot` or `sd_decode` call, and
 * must be released with sd_bitmap_free(). Bitmaps are immutable after they
 * are handed out except through sd_bitmap_pixels(); they may be read from
 * any thread, and freed from any thread.
 */
#ifndef SDCORE_SD_BITMAP_H
#define SDCORE_SD_BITMAP_H

#include "sd_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sd_bitmap sd_bitmap;

/*
 * Name: sd_bitmap_new
 * Desc: Allocate a width x height bitmap, all pixels transparent (0).
 * Returns: SD_OK, SD_EINVAL (zero or NULL), SD_ETOOLARGE (size overflows),
 *          SD_ENOMEM.
 */
SD_API int sd_bitmap_new(uint32_t width, uint32_t height, sd_bitmap **out);

/* Name: sd_bitmap_free — Desc: release a bitmap; NULL is accepted. */
SD_API void sd_bitmap_free(sd_bitmap *bitmap);

/*
 * Pixel buffer pool. Freed pixel buffers of 64 KiB and more are kept (up to
 * a byte limit, oldest dropped first) and handed to the next bitmap of about
 * the same size, so a stream of decodes does not pay a page fault per 4 KiB
 * for every new canvas. Canvases over half the limit (a 12 MP photo at the
 * default) are kept apart: the most recent of each size class, at most four
 * and twice the limit in bytes — so the pool holds at most three times the
 * limit idle (192 MiB at the default). Process-wide and thread-safe.
 *
 * Name: sd_bitmap_pool_limit
 * Desc: Set the most bytes the pool may hold idle (0 turns it off and frees
 *       what it holds). Default SD_DEFAULT_PIXEL_POOL_BYTES.
 * Returns: the previous limit.
 */
#define SD_DEFAULT_PIXEL_POOL_BYTES 67108864LL /* 64 MiB */
SD_API size_t sd_bitmap_pool_limit(size_t bytes);
/* Returns the bytes the pool holds idle right now. */
SD_API size_t sd_bitmap_pool_bytes(void);
/* Name: sd_bitmap_pool_trim — Desc: free every block the pool holds idle,
 * keeping its limit (for memory pressure). Since 0.6.
 * Returns: the bytes given back. */
SD_API size_t sd_bitmap_pool_trim(void);

/* Accessors. Returns the width and height in pixels, and the bytes from
 * one row to the next (width * 4 or more); 0 for NULL. */
SD_API uint32_t sd_bitmap_width(const sd_bitmap *bitmap);
SD_API uint32_t sd_bitmap_height(const sd_bitmap *bitmap);
SD_API size_t sd_bitmap_stride(const sd_bitmap *bitmap);
/* Returns a pointer to the first byte of the top row (the bitmap's: valid
 * until sd_bitmap_free); NULL for NULL. */
SD_API uint8_t *sd_bitmap_pixels(const sd_bitmap *bitmap);
/* Returns stride * height: the number of bytes behind sd_bitmap_pixels(). */
SD_API size_t sd_bitmap_size(const sd_bitmap *bitmap);

/*
 * Name: sd_bitmap_has_alpha
 * Desc: Whether any pixel is not opaque (scans the pixels).
 * Returns: 1 if any pixel has alpha < 255, else 0 (also for NULL).
 */
SD_API int sd_bitmap_has_alpha(const sd_bitmap *bitmap);

/* Resampling kernels (separable, windowed; stretched by the reduction
 * factor when shrinking, so they low-pass at the output's scale). */
typedef enum sd_filter {
    SD_FILTER_LANCZOS3 = 0,    /* windowed sinc, 3 lobes: the default, sharpest */
    SD_FILTER_MITCHELL = 1,    /* bicubic, B = C = 1/3: softer, no ringing to speak of */
    SD_FILTER_CATMULL_ROM = 2, /* bicubic, B = 0, C = 1/2: sharp, little ringing */
    SD_FILTER_BILINEAR = 3,    /* triangle */
    SD_FILTER_BOX = 4          /* area average (nearest-area when enlarging): fastest */
} sd_filter;

/* Flags of sd_bitmap_resample and SD_DEC_RESAMPLE_LINEAR: filter in linear
 * light (sRGB decoded, filtered, encoded again), as libvips' --linear;
 * slower (a float path), truer on fine bright-dark detail. */
#define SD_RESAMPLE_LINEAR 1u

/*
 * Name: sd_bitmap_resample
 * Desc: Resample to width x height into a new bitmap with `filter`, up or
 *       down, each axis on its own. Works on the premultiplied pixels (no
 *       dark fringes at transparent edges; a colour channel never exceeds
 *       its alpha), in fixed point: within 1 of a double-precision
 *       resampler, the same bytes on every CPU path (SSE2 or scalar).
 *       Edges extend the outermost pixels; an axis that keeps its size
 *       is copied as it is (whatever the filter).
 * Returns: SD_OK, SD_EINVAL (NULL, a zero size, an unknown filter or
 *          flag), SD_ENOMEM.
 */
SD_API int sd_bitmap_resample(const sd_bitmap *src, uint32_t width, uint32_t height,
                              sd_filter filter, unsigned flags, sd_bitmap **out);

/*
 * Name: sd_bitmap_scale
 * Desc: sd_bitmap_resample with SD_FILTER_LANCZOS3 and no flags.
 * Returns: SD_OK, SD_EINVAL, SD_ENOMEM.
 */
SD_API int sd_bitmap_scale(const sd_bitmap *src, uint32_t width,
                           uint32_t height, sd_bitmap **out);

/*
 * Name: sd_premultiply_rgba / sd_unpremultiply_argb
 * Desc: Row converters. sd_premultiply_rgba reads `count` straight-alpha
 *       pixels as bytes R,G,B,A and writes native premultiplied ARGB32
 *       (c' = (c*a + 127) / 255, exact). sd_unpremultiply_argb does the
 *       reverse into R,G,B,A bytes (c = (c'*255 + a/2) / a, clamped).
 *       `src` and `dst` may be the same buffer.
 */
SD_API void sd_premultiply_rgba(const uint8_t *src, uint8_t *dst, size_t count);
SD_API void sd_unpremultiply_argb(const uint8_t *src, uint8_t *dst, size_t count);

#ifdef __cplusplus
}
#endif
#endif /* SDCORE_SD_BITMAP_H */
