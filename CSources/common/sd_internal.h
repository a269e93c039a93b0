/*
 * sd_internal.h — helpers shared by every file of libsdcore (never installed).
 * Internal symbols crossing files use the sd__ prefix and hidden visibility.
 */
#ifndef SD_INTERNAL_H
#define SD_INTERNAL_H

#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>

#include "sdcore/sd_common.h"
#include "common/sd_config.h"

#define SD__HIDDEN __attribute__((visibility("hidden")))

/* Flat error handling (zstd's RETURN_ERROR_IF / FORWARD_IF_ERROR). */
#define SD__RETURN_IF(cond, err) \
    do { if (cond) return (err); } while (0)
#define SD__FORWARD_IF_ERROR(expr) \
    do { int sd__rc = (expr); if (sd__rc < 0) return sd__rc; } while (0)

/* Room for element `n` of a doubling array `arr` with capacity `cap`
 * (uint32_t); returns SD_ENOMEM from the calling function when out. */
#define SD__RESERVE(arr, n, cap)                                               \
    do {                                                                       \
        if ((n) >= (cap)) {                                                    \
            uint32_t sd__c = (cap) ? (cap) * 2 : 16;                           \
            void *sd__p = sd__realloc((arr), (size_t)sd__c * sizeof *(arr));       \
            if (sd__p == NULL)                                                 \
                return SD_ENOMEM;                                              \
            (arr) = sd__p;                                                     \
            (cap) = sd__c;                                                     \
        }                                                                      \
    } while (0)

/* Bytes that grow by doubling (sd_buf.c): the input a codec keeps, an
 * encoder's output. A failed growth sets `oom`: that put and every later one
 * return SD_ENOMEM and change nothing, so a writer callback can ignore the
 * result and check `oom` once at the end. */
typedef struct sd__buf {
    uint8_t *data;
    size_t len, cap;
    int oom;
} sd__buf;
SD__HIDDEN int sd__buf_put(sd__buf *b, const void *p, size_t n);
SD__HIDDEN void sd__buf_free(sd__buf *b);

#define SD__MIN(a, b) ((a) < (b) ? (a) : (b))
#define SD__MAX(a, b) ((a) > (b) ? (a) : (b))

#if defined(__GNUC__)
#define SD__LIKELY(x) __builtin_expect(!!(x), 1)
#define SD__UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define SD__LIKELY(x) (x)
#define SD__UNLIKELY(x) (x)
#endif

/* libsdcore's own allocations (common/sd_alloc.c): the allocator set with
 * sd_set_allocator, else the C library's. Never mixed with free(). */
SD__HIDDEN void *sd__malloc(size_t bytes);
SD__HIDDEN void *sd__calloc(size_t count, size_t bytes);
SD__HIDDEN void *sd__realloc(void *p, size_t bytes);
SD__HIDDEN void sd__free(void *p);
SD__HIDDEN char *sd__strdup(const char *s);
SD__HIDDEN int sd__alloc_is_custom(void);
/* Count blocks libsdcore holds outside sd__malloc (mapped canvases). */
SD__HIDDEN void sd__alloc_track(long delta);
/* Drop the pool's recycled blocks (before the allocator changes). */
SD__HIDDEN void sd__pool_drain(void);
/* A layer above that caches blocks of this allocator (color/'s transforms)
 * registers how to give them back: sd_set_allocator calls it first. At
 * most four; registering twice is once. */
SD__HIDDEN void sd__register_drain(void (*drain)(void));

/* Diagnostics to the program's log callback (common/sd_log.c); nothing is
 * formatted unless a callback wants `level`. */
SD__HIDDEN int sd__log_enabled(sd_log_level level);
SD__HIDDEN void sd__log(sd_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Versioned public structs start with `size_t size` (the caller's sizeof):
 * copy the caller's version into ours, zero what it does not have; SD_EINVAL
 * below `min_size`, SD_EUNSUPPORTED when a newer caller set fields this
 * library does not know. */
SD__HIDDEN int sd__copy_sized(void *dst, size_t dst_size, const void *src, size_t min_size);
/* Bytes of `type` up to and including `member`: a struct version's size. */
#define SD__SIZE_THROUGH(type, member) (offsetof(type, member) + sizeof(((type *)0)->member))

/* Buffers recycled through a small pool (common/sd_buffer_pool.c). */
SD__HIDDEN void *sd__pixels_alloc(size_t bytes, int zeroed, size_t *capacity);
SD__HIDDEN void sd__pixels_free(void *pixels, size_t capacity);
/* Response bodies from the same pool; always heap blocks (sd_free is valid). */
SD__HIDDEN void *sd__body_alloc(size_t bytes, size_t *capacity);
SD__HIDDEN void sd__body_free(void *body, size_t capacity);

/* The loop's SD_LOOP_MAX_SINK_BACKLOG when the caller set none: the sink
 * that knows its parallelism says (loop/sd_loop.c). */
struct sd_loop;
SD__HIDDEN void sd__loop_default_backlog(struct sd_loop *loop, int64_t backlog);

/* Monotonic milliseconds, for throttling; and with fractions, for metrics. */
SD__HIDDEN int64_t sd__now_ms(void);
SD__HIDDEN double sd__now_msf(void);
/* Online cores (1..256; 2 when unknown): default thread counts and backlogs. */
SD__HIDDEN int sd__cpu_count(void);

#endif
