/*
 * sd_work.h — a generic pool of worker threads (libuv's threadpool shape):
 * post a task, a worker runs it. Tasks are intrusive (the caller embeds an
 * sd__task in its own state), so posting never allocates and never fails.
 * Order between tasks is the caller's business: a task that must not run
 * twice at once is posted again only after it ran (the decode sink keeps
 * one task per transfer and a "scheduled" flag). Nothing here knows what a
 * task does.
 */
#ifndef SD_WORK_H
#define SD_WORK_H

#include "common/sd_internal.h"

typedef struct sd__work_pool sd__work_pool;
typedef struct sd__task sd__task;

struct sd__task {
    void (*run)(sd__task *task); /* on a worker thread */
    sd__task *next;              /* the pool's */
};

/* Start `threads` workers named `name` (shows in top and gdb). */
SD__HIDDEN int sd__work_pool_new(int threads, const char *name, sd__work_pool **out);
/* Run what was posted, then stop and join the workers. NULL is accepted. */
SD__HIDDEN void sd__work_pool_free(sd__work_pool *pool);
/* Queue `task` (not queued already) for a worker; FIFO. */
SD__HIDDEN void sd__work_post(sd__work_pool *pool, sd__task *task);

#endif
