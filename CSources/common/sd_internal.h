/*
 * sd_internal.h — helpers shared by every file of libsdcore (never installed).
 * Internal symbols crossing files use the sd__ prefix and hidden visibility.
 */
#ifndef SD_INTERNAL_H
#define SD_INTERNAL_H

#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>

#include "sdcore.h"
#include "common/sd_config.h"

#define SD__HIDDEN __attribute__((visibility("hidden")))

/* Flat error handling (zstd's RETURN_ERROR_IF / FORWARD_IF_ERROR). */
#define SD__RETURN_IF(cond, err) \
    do { if (cond) return (err); } while (0)
#define SD__FORWARD_IF_ERROR(expr) \
    do { int sd__rc = (expr); if (sd__rc < 0) return sd__rc; } while (0)

#define SD__MIN(a, b) ((a) < (b) ? (a) : (b))
#define SD__MAX(a, b) ((a) > (b) ? (a) : (b))

#if defined(__GNUC__)
#define SD__LIKELY(x) __builtin_expect(!!(x), 1)
#define SD__UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define SD__LIKELY(x) (x)
#define SD__UNLIKELY(x) (x)
#endif

/* The bitmap is public only as an opaque type; internals see the fields. */
struct sd_bitmap {
    uint32_t width;
    uint32_t height;
    size_t stride;
    uint8_t *pixels;
    size_t capacity; /* bytes behind `pixels` (>= stride * height when recycled) */
};

/* Pixel buffers, recycled through a small pool (bitmap/sd_pixel_pool.c). */
SD__HIDDEN void *sd__pixels_alloc(size_t bytes, int zeroed, size_t *capacity);
SD__HIDDEN void sd__pixels_free(void *pixels, size_t capacity);
/* Response bodies from the same pool; always heap blocks (free() is valid). */
SD__HIDDEN void *sd__body_alloc(size_t bytes, size_t *capacity);
SD__HIDDEN void sd__body_free(void *body, size_t capacity);

/* Monotonic milliseconds, for throttling. */
SD__HIDDEN int64_t sd__now_ms(void);

/* Bitmap allocation that reports overflow as SD_ETOOLARGE. */
SD__HIDDEN int sd__bitmap_alloc(uint32_t width, uint32_t height, int zeroed,
                                sd_bitmap **out);
SD__HIDDEN int sd__bitmap_copy(const sd_bitmap *src, sd_bitmap **out);

#endif
