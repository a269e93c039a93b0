/* sd_isolate_int.h — the wire between the pool (sd_isolate.c) and its
 * workers (sd_worker.c): one request (this header, then `length` bytes),
 * one reply (this header, with the memfd of the pixels when it succeeded,
 * as SCM_RIGHTS). Both ends are the same build: the version is checked. */
#ifndef SD_ISOLATE_INT_H
#define SD_ISOLATE_INT_H

#include "common/sd_internal.h"
#include "sdcore/sd_isolate.h"

#define SD__ISO_MAGIC 0x53444957u /* "SDIW" */
#define SD__ISO_VERSION 1
#define SD__ISO_PARAMS 32
#define SD__ISO_FD 3 /* the worker's socket */
#define SD__ISO_ARG "--sdcore-worker"

enum {
    SD__ISO_DECODE = 1,
    SD__ISO_PROBE = 2 /* tests: make a forbidden system call (`probe`), for the sandbox to stop */
};

/* What a probe tries. */
enum { SD__PROBE_OPEN = 1, SD__PROBE_SOCKET = 2, SD__PROBE_EXEC = 3, SD__PROBE_SPIN = 4, SD__PROBE_UNSEALED = 5,
       SD__PROBE_OPEN_WRITE = 6 };

typedef struct sd__iso_request {
    uint32_t magic, version, command, probe;
    uint64_t length; /* bytes of image data after this header */
    int32_t count;   /* decoder options */
    int32_t keys[SD__ISO_PARAMS];
    int64_t values[SD__ISO_PARAMS];
    int32_t has_render;
    sd_render render;
} sd__iso_request;

typedef struct sd__iso_reply {
    uint32_t magic;
    int32_t status;
    uint32_t width, height;
    uint64_t stride;
    sd_isolate_info info;
    char message[256];
} sd__iso_reply;

/* Tests: make the pool's next worker try `what` (SD__PROBE_*); `out`, when
 * not NULL, takes a bitmap the answer carries. */
SD__HIDDEN int sd__isolate_probe(sd_isolate_pool *pool, int what, sd_bitmap **out, char *message, size_t size);

#endif
