/* sd_bitmap_int.h — the bitmap's fields and helpers, for the files that make
 * or transform pixels (bitmap/, decode/, orientation/, encode/). */
#ifndef SD_BITMAP_INT_H
#define SD_BITMAP_INT_H

#include "common/sd_internal.h"
#include "sdcore/sd_bitmap.h"

/* The bitmap is public only as an opaque type; internals see the fields. */
struct sd_bitmap {
    uint32_t width;
    uint32_t height;
    size_t stride;
    uint8_t *pixels;
    size_t capacity; /* bytes behind `pixels` (>= stride * height when recycled) */
    void (*release)(uint8_t *pixels, size_t bytes); /* pixels not ours (a mapping): how to let them go */
};

/* A bitmap over pixels someone else made (a worker's memfd mapping):
 * `release(pixels, bytes)` when it is freed. */
SD__HIDDEN int sd__bitmap_wrap(uint32_t width, uint32_t height, size_t stride, uint8_t *pixels, size_t bytes,
                               void (*release)(uint8_t *, size_t), sd_bitmap **out);

/* Bitmap allocation that reports overflow as SD_ETOOLARGE. */
SD__HIDDEN int sd__bitmap_alloc(uint32_t width, uint32_t height, int zeroed,
                                sd_bitmap **out);
SD__HIDDEN int sd__bitmap_copy(const sd_bitmap *src, sd_bitmap **out);
/* Premultiplied ARGB32 to straight ARGB32 words (0xAARRGGBB), the layout
 * libwebp's ARGB pictures hold: the encoders' unpremultiply, one pass. */
SD__HIDDEN void sd__unpremultiply_to_argb32(const uint8_t *src, uint32_t *dst, size_t count);

#endif
