/*
 * sd_isolate.h — decoding untrusted bytes in sandboxed worker processes.
 *
 * A pool of long-lived workers, each a process of its own confined by
 * seccomp-bpf (read and write on the descriptors it was given, memory,
 * threads, clocks, exit: no open, no socket, no exec — anything else kills
 * it), PR_SET_NO_NEW_PRIVS, RLIMIT_AS, an empty environment and no
 * working directory. The bytes go in over a socketpair; the bitmap comes
 * back in a memfd the caller maps (the pixels are not copied between the
 * processes). The caller enforces CPU time and wall time per decode from
 * outside (SIGKILL); a worker that dies, overruns or is killed turns into
 * the decode's error (with the reason) and is replaced on the next decode.
 *
 *     sd_isolate_pool *pool;
 *     sd_isolate_pool_new("/usr/lib/x/sdcore-worker", 0, NULL, &pool);
 *     sd_bitmap *b; sd_isolate_info info; char why[256];
 *     int rc = sd_isolate_decode(pool, data, len, NULL, NULL, 0, &render, NULL, &b, &info, why, sizeof why);
 *
 * The worker is any program whose main calls sd_worker_main first (the C
 * library ships `sdcore-worker`, installed as libdir/sdcore/sdcore-worker:
 * `pkg-config --variable=worker sdcore`, CMake's sdcore_WORKER after
 * find_package(sdcore); `sdimage` is one too).
 */
#ifndef SDCORE_SD_ISOLATE_H
#define SDCORE_SD_ISOLATE_H

#include "sd_bitmap.h"
#include "sd_decoder.h"
#include "sd_render.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sd_isolate_pool sd_isolate_pool;

/* Per decode: what one render may cost. 0 takes the default. */
typedef struct sd_isolate_limits {
    int64_t cpu_ms;       /* CPU time of the worker for one decode (2000) */
    int64_t wall_ms;      /* wall time from sending the bytes to the answer (10000) */
    int64_t memory_bytes; /* the worker's address space, RLIMIT_AS (2 GiB) */
} sd_isolate_limits;

/* What the worker's decoder said (SD_DEC_INFO_* of the decode). */
typedef struct sd_isolate_info {
    int64_t format, source_width, source_height, orientation, complete, warnings, animated, frame_count,
        color_space;
} sd_isolate_info;

/*
 * Name: sd_worker_main
 * Desc: Call first in a worker program's main. When argv[1] is
 *       "--sdcore-worker" (the pool starts workers so, the socket on
 *       descriptor 3) it sandboxes the process, serves decodes until the
 *       pool closes the socket, and exits; it never returns then.
 * Returns: 0 when the program was not started as a worker.
 * Since: 0.10
 */
SD_API int sd_worker_main(int argc, char **argv);

/*
 * Name: sd_isolate_pool_new / sd_isolate_pool_free
 * Desc: A pool of at most `workers` workers (0: one per core), started from
 *       the program at `worker_path` as they are needed. `limits` NULL: the
 *       defaults. Free ends every worker (after the decodes in flight).
 * Returns: SD_OK, SD_EINVAL (no path, or not an executable), SD_ENOMEM.
 * Since: 0.10
 */
SD_API int sd_isolate_pool_new(const char *worker_path, int workers, const sd_isolate_limits *limits,
                               sd_isolate_pool **out);
SD_API void sd_isolate_pool_free(sd_isolate_pool *pool);

/*
 * Name: sd_isolate_decode
 * Desc: Decode `data` in a worker of the pool, waiting for a free one:
 *       the decoder's options `keys`/`values` (`count` of them, as
 *       sd_decoder_set), the render (NULL: none) — the first frame, whole.
 *       The bitmap is the caller's (sd_bitmap_free unmaps it). When
 *       `cancel` is not NULL and another thread sets *cancel to non-zero,
 *       the decode ends within ~50 ms: its worker is killed (a fresh one
 *       takes the next decode) and SD_ECANCELLED is returned.
 * Returns: SD_OK; the decoder's error (its message in `message`);
 *          SD_ELIMIT when the worker was killed for the decode: over its
 *          CPU or wall time, stopped by its sandbox, or dead of a signal
 *          or its memory limit (`message` says which: the source's doing,
 *          not the caller's); SD_ECANCELLED when `cancel` was set;
 *          SD_EINVAL, SD_ENOMEM; SD_EIO when a worker cannot be started.
 * Since: 0.10
 */
SD_API int sd_isolate_decode(sd_isolate_pool *pool, const void *data, size_t length, const int *keys,
                             const int64_t *values, int count, const sd_render *render, const int *cancel,
                             sd_bitmap **out,
                             sd_isolate_info *info, char *message, size_t message_size);

/* Set and read a cancel flag of sd_isolate_decode, from any thread. */
static inline void sd_isolate_cancel_set(int *flag)
{
    __atomic_store_n(flag, 1, __ATOMIC_RELEASE);
}
static inline int sd_isolate_cancel_get(const int *flag)
{
    return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

/*
 * Name: sd_isolate_pool_pids
 * Desc: The process ids of the pool's live workers (for tests and
 *       monitoring), at most `max`.
 * Returns: how many were written.
 * Since: 0.10
 */
SD_API int sd_isolate_pool_pids(sd_isolate_pool *pool, int *pids, int max);

#ifdef __cplusplus
}
#endif

#endif
