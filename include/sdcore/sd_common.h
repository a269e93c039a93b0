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

#define SD_VERSION_MAJOR 0
#define SD_VERSION_MINOR 1
#define SD_VERSION_PATCH 0
/* MAJOR*10000 + MINOR*100 + PATCH */
#define SD_VERSION_NUMBER \
    (SD_VERSION_MAJOR * 10000 + SD_VERSION_MINOR * 100 + SD_VERSION_PATCH)

typedef enum sd_status {
    SD_OK = 0,
    SD_EAGAIN = -1,        /* not available yet: push more input */
    SD_EINVAL = -2,        /* invalid argument */
    SD_ENOMEM = -3,        /* out of memory */
    SD_EUNSUPPORTED = -4,  /* not a JPEG or PNG, or a variant we do not decode */
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
    SD_EPOLICY = -38       /* refused by the request's policy (scheme, host, address, downgrade) */
} sd_status;

/*
 * Name: sd_strerror
 * Desc: A static English description of a status code. Never NULL; an
 *       unknown code yields "unknown error". Thread-safe.
 */
SD_API const char *sd_strerror(int status);

/* Name: sd_free — Desc: free a buffer returned by libsdcore (an encoded
 * image, a taken body); NULL accepted. */
SD_API void sd_free(void *buffer);

/*
 * Name: sd_version_number / sd_version_string
 * Desc: The library's version, as linked (not as compiled against).
 */
SD_API int sd_version_number(void);
SD_API const char *sd_version_string(void);

#ifdef __cplusplus
}
#endif
#endif /* SDCORE_SD_COMMON_H */
