/*
 * sd_common.h — export macro, version and status codes of libsdcore.
 *
 * Every libsdcore function that can fail returns an `int` status: 0 (SD_OK)
 * on success, a negative `sd_status` on failure. `sd_strerror()` turns any
 * status into a static, human-readable string. The numeric values are part
 * of the ABI: they never change and new codes are only ever appended.
 */
#ifndef SDCORE_SD_COMMON_H
#define SDCORE_SD_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define SD_API __attribute__((visibility("default")))
#else
#define SD_API
#endif

/* The version, in this one place: CMake reads these three lines (project
 * version, soname, sdcore.pc, sdcoreConfigVersion.cmake) and the library's
 * version string is made from them (sd_config.h). */
#define SD_VERSION_MAJOR 0
#define SD_VERSION_MINOR 10
#define SD_VERSION_PATCH 0
/* MAJOR*10000 + MINOR*100 + PATCH */
#define SD_VERSION_NUMBER \
    (SD_VERSION_MAJOR * 10000 + SD_VERSION_MINOR * 100 + SD_VERSION_PATCH)
/* True when the headers compiled against are x.y.z or newer:
 *     #if SD_VERSION_AT_LEAST(0, 2, 0)  ...  #endif
 * (sd_version_number() tells the version linked at run time.) */
#define SD_VERSION_AT_LEAST(x, y, z) \
    (SD_VERSION_NUMBER >= ((x) * 10000 + (y) * 100 + (z)))

typedef enum sd_status {
    SD_OK = 0,
    SD_EAGAIN = -1,        /* not available yet: push more input */
    SD_EINVAL = -2,        /* invalid argument */
    SD_ENOMEM = -3,        /* out of memory */
    SD_EUNSUPPORTED = -4,  /* a format or variant we do not decode */
    SD_ECORRUPT = -5,      /* the image data is corrupt */
    SD_ETOOLARGE = -6,     /* image dimensions exceed the configured limits */
    SD_ETRUNCATED = -7,    /* input ended before the image header was complete */
    SD_EBADSTATE = -8,     /* call out of order, or the handle failed earlier */
    SD_EIO = -9,           /* file or system I/O error */
    SD_EOI = -10,          /* no more output: the result was already taken */
    /* Transfer errors (sd_loop). */
    SD_ECANCELLED = -20,   /* cancelled by the caller or by shutdown */
    SD_ETIMEDOUT = -21,    /* timed out, or stalled below the low-speed limit */
    SD_ERESOLVE = -22,     /* could not resolve host */
    SD_ECONNECT = -23,     /* could not connect */
    SD_ETLS = -24,         /* TLS handshake or certificate verification failed */
    SD_EHTTPSTATUS = -25,  /* response status not acceptable */
    SD_ENOTMODIFIED = -26, /* 304: the cached copy is still valid */
    SD_ECONTENTTYPE = -27, /* response content type not acceptable */
    SD_ETOOBIG = -28,      /* response body exceeds the maximum size */
    SD_EBODY = -29,        /* body truncated or connection lost mid-body */
    SD_EREDIRECT = -30,    /* too many redirects */
    SD_ENETWORK = -31,     /* other network or protocol failure */
    SD_EDECODE = -32,      /* transfer finished but the body did not decode */
    SD_ESHUTDOWN = -33,    /* the loop is shutting down; request refused */
    SD_ESCHEME = -34,      /* URL scheme not allowed for this request */
    SD_EURL = -35,         /* malformed or relative URL */
    SD_EPROTOCOL = -36,    /* malformed response: bad status line, oversized header */
    SD_ENOTFILE = -37,     /* file:// names no regular file (FIFO, device, directory) */
    SD_EPOLICY = -38,      /* refused by the request's policy (scheme, host, address, downgrade) */
    SD_ELIMIT = -39        /* an isolated decode went over its CPU, wall-time or memory limit, or its
                            * sandbox stopped it: the worker was killed (sd_isolate.h); since 0.10 */
} sd_status;

/*
 * Name: sd_strerror
 * Desc: A static English description of a status code. Thread-safe.
 * Returns: a static string, never NULL; "unknown error" for an unknown
 *          code.
 */
SD_API const char *sd_strerror(int status);

/* Name: sd_free — Desc: free a buffer returned by libsdcore (an encoded
 * image, a taken body); NULL accepted. */
SD_API void sd_free(void *buffer);

/* An allocator (sd_set_allocator). Versioned like sd_transfer_events:
 * `size` is the caller's sizeof(sd_allocator). `user` is passed to every
 * call; the functions may be called from any libsdcore thread. */
typedef struct sd_allocator {
    size_t size;
    void *(*malloc_fn)(size_t bytes, void *user);
    void *(*realloc_fn)(void *ptr, size_t bytes, void *user);
    void *(*calloc_fn)(size_t count, size_t bytes, void *user);
    void (*free_fn)(void *ptr, void *user);
    void *user;
} sd_allocator;

/*
 * Name: sd_set_allocator
 * Desc: The allocator for every block libsdcore allocates itself (handles,
 *       bitmaps, bodies, encoded images, queues), libspng's spng_alloc
 *       shape: for tracking, arenas, or tests that fail the Nth call. The
 *       libraries under libsdcore (libcurl, libjpeg, libpng, giflib,
 *       libwebp, libavif) keep their own. Process-wide, copied: call it
 *       before any other libsdcore call, or when no libsdcore object or
 *       buffer is alive (a block is always freed by the allocator that
 *       made it; libsdcore counts its blocks and refuses otherwise); not
 *       concurrently with other calls. With an allocator set,
 *       bitmaps are not recycled through the pixel pool and big canvases
 *       are not mmap'd: every byte goes through it. `size` is the caller's
 *       sizeof(sd_allocator); calloc_fn may be NULL (malloc_fn + memset).
 *       NULL restores the C library's malloc.
 * Returns: SD_OK; SD_EINVAL (size too small, or malloc/realloc/free NULL);
 *          SD_EBADSTATE (a block libsdcore made is still alive: a handle, a
 *          bitmap, a body or buffer not yet given back to sd_free or
 *          sd_body_free, or a loop freed from its own callback whose
 *          thread is still ending).
 */
SD_API int sd_set_allocator(const sd_allocator *allocator);

/* Severity of a diagnostic, most severe first (syslog's order). */
typedef enum sd_log_level {
    SD_LOG_ERROR = 1,   /* something failed that should not (the loop's poll) */
    SD_LOG_WARNING = 2, /* work lost to a resource limit (out of memory) */
    SD_LOG_INFO = 3,    /* a request refused by its policy */
    SD_LOG_DEBUG = 4    /* every failed transfer, every decoder warning */
} sd_log_level;
/* A diagnostic: `message` is one line without a newline, valid during the
 * call only. Called from any libsdcore thread (the loop's, the decode
 * workers'), possibly at once from several: keep it short and thread-safe;
 * it must not call sd_set_log_callback. */
typedef void (*sd_log_fn)(sd_log_level level, const char *message, void *user);

/*
 * Name: sd_set_log_callback
 * Desc: Where libsdcore's diagnostics go (by default nowhere: libsdcore
 *       never prints). Messages at `max_level` or more severe are formatted
 *       and passed with `user`; NULL turns logging off. Process-wide; may
 *       be called at any time (a message being delivered on another thread
 *       may still reach the previous callback).
 * Returns: SD_OK; SD_EINVAL (max_level out of range).
 */
SD_API int sd_set_log_callback(sd_log_fn fn, sd_log_level max_level, void *user);

/*
 * Name: sd_redact_url
 * Desc: `url` as libsdcore's diagnostics write it, with what may be a
 *       credential replaced by `***`: the user info (`***@` before the
 *       host), every query value (`?w=***&sig=***`; a parameter without
 *       `=` is `***` whole) and the fragment (`#***`). Scheme, host, port
 *       and path are kept, so a line still says which image. Use it
 *       wherever your own logs name a URL libsdcore fetched. Writes at most
 *       `cap` bytes with the terminating NUL, cutting short as snprintf
 *       does; `out` may be NULL when `cap` is 0.
 * Returns: the length of the whole redacted URL (without the NUL; as
 *          snprintf, so a result >= cap means it was cut short);
 *          SD_EINVAL (url NULL, out NULL with cap > 0).
 */
SD_API int sd_redact_url(const char *url, char *out, size_t cap);

/*
 * Name: sd_version_number / sd_version_string
 * Desc: The library's version, as linked (not as compiled against:
 *       SD_VERSION_NUMBER, SD_VERSION_AT_LEAST).
 * Returns: MAJOR*10000 + MINOR*100 + PATCH; "MAJOR.MINOR.PATCH" (static).
 */
SD_API int sd_version_number(void);
SD_API const char *sd_version_string(void);

#ifdef __cplusplus
}
#endif
#endif /* SDCORE_SD_COMMON_H */
