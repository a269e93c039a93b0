/*
 * sd_pool.h — decode workers: each transfer that decodes gets a job; the loop
 * pushes body chunks into it and the workers decode them in order, one
 * worker per job at a time. Results leave through the sink callbacks, which
 * run on a worker thread and must only hand the result over (the loop posts
 * them to its inbox). No curl here; the loop never touches a decoder.
 */
#ifndef SD_POOL_H
#define SD_POOL_H

#include "common/sd_internal.h"

typedef struct sd__pool sd__pool;
typedef struct sd__job sd__job;

#define SD__JOB_MAX_PARAMS 16
#define SD__JOB_INFO_COUNT 14 /* SD_DEC_INFO_FORMAT .. SD_DEC_INFO_FINISHED */

typedef struct sd__job_result {
    struct sd__job_result *next; /* free for the receiver's queue */
    uint64_t id;
    int status;                 /* SD_OK or the decoder's failure */
    char message[256];
    sd_bitmap *bitmap;          /* owned by the receiver */
    int64_t info[SD__JOB_INFO_COUNT];
    uint8_t info_known[SD__JOB_INFO_COUNT];
    double decode_ms;
} sd__job_result;  /* allocated with the job: handing it over never fails */

typedef struct {
    /* Called on a worker; `bitmap` belongs to the callee. */
    void (*preview)(void *ctx, uint64_t id, sd_bitmap *bitmap);
    /* Called once on a worker when decoding ended; `result` is the callee's
     * (preallocated at sd__job_new, so the end of a job can never be lost). */
    void (*done)(void *ctx, uint64_t id, sd__job_result *result);
    void *ctx;
} sd__job_sink;

typedef struct {
    int nparams;
    int params[SD__JOB_MAX_PARAMS];
    int64_t values[SD__JOB_MAX_PARAMS];
    int previews;
    int64_t preview_interval_ms;
} sd__job_options;

SD__HIDDEN int sd__pool_new(int threads, sd__pool **out);
/* Stops the workers after the jobs in hand; jobs must be finished or abandoned. */
SD__HIDDEN void sd__pool_free(sd__pool *pool);

SD__HIDDEN int sd__job_new(sd__pool *pool, uint64_t id, const sd__job_options *opts,
                           const sd__job_sink *sink, sd__job **out);
/* Copy a chunk into the job's queue and schedule it. */
SD__HIDDEN int sd__job_push(sd__job *job, const uint8_t *data, size_t length);
/* 1 once the decoder refused the input (its result is on its way): any
 * thread may ask, so the loop can stop reading a body nobody can decode. */
SD__HIDDEN int sd__job_rejected(const sd__job *job);
/* End of input: the job finishes decoding and calls done. Releases the
 * caller's reference. */
SD__HIDDEN void sd__job_finish(sd__job *job);
/* Stop: no sink call starts after this returns (one in progress may end).
 * Releases the caller's reference. */
SD__HIDDEN void sd__job_abandon(sd__job *job);

#endif
