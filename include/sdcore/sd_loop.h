/*
 * sd_loop.h — the transfer loop: one libcurl multi handle on its own thread,
 * streaming response bodies into a body sink. The loop moves bytes and knows
 * nothing of images: decoding while streaming is one sink (sd_decode_sink.h,
 * sd_loop_use_decoder); a caller may plug in its own (sd_body_sink).
 *
 *     sd_loop *loop;
 *     sd_loop_new(&loop);
 *     sd_loop_use_decoder(loop, 0);   // sd_decode_sink.h: decode every body
 *     sd_loop_start(loop);
 *     sd_request *req;
 *     sd_request_new("https://example.com/a.jpg", &req);
 *     sd_request_set_decoder_param(req, SD_DEC_MAX_PIXEL_SIZE, 256);
 *     sd_transfer_events ev = SD_TRANSFER_EVENTS_INIT;
 *     ev.complete = on_complete;
 *     sd_loop_submit(loop, req, &ev, my_data, &id);   // req may be freed now
 *     ...
 *     sd_loop_free(loop);     // cancels what is left, joins the threads
 *
 * Rules (libuv style):
 *  1. Every sd_*_new that succeeded is paired with its sd_*_free.
 *  2. A submit that fails never calls any of its callbacks.
 *  3. Callbacks run on the loop thread, one at a time. Keep them short and
 *     never block in them; calling sd_loop_* from a callback is allowed.
 *  4. Every accepted transfer ends with exactly one `complete` callback —
 *     success, error, cancel or shutdown alike — and no callback of that
 *     transfer runs after it. Its `user` pointer may be released then.
 *
 * Dispatch mode (SD_LOOP_DISPATCH) is for programs that own a main loop
 * (GLib/GTK, SDL, libuv, epoll): the loop thread still does all the
 * network, but the callbacks run on the thread that calls
 * sd_loop_dispatch, when sd_loop_dispatch_fd is readable:
 *
 *     sd_loop_set(loop, SD_LOOP_DISPATCH, 1);   // before sd_loop_start
 *     int fd;
 *     sd_loop_dispatch_fd(loop, &fd);           // watch it for POLLIN
 *     ...                                       // when readable:
 *     sd_loop_dispatch(loop, 0);                // callbacks run here
 *
 * or, in a program without a main loop, `sd_loop_wait(loop, -1)` then
 * `sd_loop_dispatch(loop, 0)`. Rules 1-4 hold, with rule 3 on the
 * dispatching thread. A progress or a partial not yet dispatched is
 * replaced by the newer one (the replaced partial is freed): a main loop
 * that falls behind sees the latest state, never a backlog.
 *
 * libcurl: the first sd_loop_new calls curl_global_init(CURL_GLOBAL_DEFAULT)
 * (once per process). A program that also uses libcurl itself should call
 * curl_global_init before creating threads and before sd_loop_new, and
 * curl_global_cleanup only after freeing every loop; curl_global_init is
 * reference-counted, so both calling it is fine.
 *
 * Thread safety: every sd_loop_* function is safe from any thread (commands
 * go through a queue and wake the loop with curl_multi_wakeup). sd_request
 * objects are plain values owned by the caller; submit copies what it needs.
 * The loop thread does network I/O only: a sink does its work elsewhere (the
 * decode sink on worker threads, in order per transfer), so a slow decode
 * never stalls other transfers.
 */
#ifndef SDCORE_SD_LOOP_H
#define SDCORE_SD_LOOP_H

#include "sd_common.h"
#include "sd_request.h"
#include "sd_result.h"
#include "sd_sink.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sd_loop sd_loop;
typedef uint64_t sd_transfer_id;

typedef enum sd_order {
    SD_ORDER_FIFO = 0, /* first submitted runs first (default) */
    SD_ORDER_LIFO = 1  /* last submitted runs first (SDWebImage's LIFO) */
} sd_order;

#define SD_DEFAULT_MAX_CONCURRENT 6
#define SD_DEFAULT_RECEIVE_BUFFER 131072 /* 128 KiB */

typedef enum sd_loop_param {
    /* Network transfers at most (default 6); any time. A transfer's slot is
     * freed when its body is in: decoding goes on in the pool meanwhile, so
     * slow decodes never hold network capacity. */
    SD_LOOP_MAX_CONCURRENT = 1,
    SD_LOOP_ORDER = 2,          /* sd_order; any time */
    /* 3: reserved (was the decode thread count: sd_loop_use_decoder) */
    SD_LOOP_SUSPENDED = 4,      /* 1: start no queued transfer; any time */
    /* Back-pressure: while this many transfers have their body in and wait
     * for their sink to finish (the decode sink: decoding), no new transfer
     * with a sink starts, so the network never runs ahead of the sinks by
     * more than this many bodies. Default 8 (the decode sink sets 4 x its
     * threads unless this was set); any time. */
    SD_LOOP_MAX_SINK_BACKLOG = 5,
    /* Bytes of curl's receive buffer per running transfer: one recv() and
     * one body write per buffer. Default 128 KiB (curl's own is 16 KiB,
     * which costs the loop thread ~35% more CPU per photo); 1024..1 MiB;
     * any time, for transfers that start later. */
    SD_LOOP_RECEIVE_BUFFER = 6,
    /* Connections open to one host at most (curl's
     * CURLMOPT_MAX_HOST_CONNECTIONS; default 0 = no limit beyond
     * SD_LOOP_MAX_CONCURRENT): transfers over it wait for a free connection,
     * as browsers keep to ~6 per host. Any time. */
    SD_LOOP_MAX_HOST_CONNECTIONS = 7,
    /* 1: dispatch mode (since 0.4): callbacks wait for sd_loop_dispatch and
     * run on its thread; 0 (default): on the loop thread. Before
     * sd_loop_start (SD_EBADSTATE after; SD_ENOMEM when no eventfd could
     * be made). */
    SD_LOOP_DISPATCH = 8,
    /* read-only */
    SD_LOOP_INFO_QUEUED = 100,
    SD_LOOP_INFO_RUNNING = 101
} sd_loop_param;

/* ---- the loop ---- */

/* A new loop, not started: *out is the caller's (sd_loop_free).
 * Returns: SD_OK; SD_EINVAL (out NULL); SD_ENOMEM (*out is NULL then). */
SD_API int sd_loop_new(sd_loop **out);
/* Set or read an sd_loop_param (each says when it may change); read-only
 * ones only with sd_loop_get. Safe from any thread.
 * Returns: SD_OK; SD_EINVAL (unknown or read-only parameter, or a value out
 * of its range); for SD_LOOP_DISPATCH also SD_EBADSTATE (after start) and
 * SD_ENOMEM (no eventfd). */
SD_API int sd_loop_set(sd_loop *loop, sd_loop_param param, int64_t value);
SD_API int sd_loop_get(sd_loop *loop, sd_loop_param param, int64_t *value);
/* Start the loop thread (and the sink's workers, which start with it).
 * Returns: SD_OK; SD_EINVAL; SD_EBADSTATE (started already, or shutting
 * down); SD_ENOMEM (no thread could be created). */
SD_API int sd_loop_start(sd_loop *loop);
/*
 * Name: sd_loop_free
 * Desc: Shut down: refuse new submits, complete every queued and running
 *       transfer with SD_ECANCELLED (callbacks on the loop thread), join the
 *       threads, free. NULL is accepted.
 *       In dispatch mode the callbacks of those ends run on the calling
 *       thread before it returns; call it on the dispatching thread (or
 *       from one of its callbacks: the loop is freed when sd_loop_dispatch
 *       returns).
 *       From a callback (directly, or because a language runtime dropped its
 *       last reference there) it returns at once: the loop refuses new
 *       submits, and once the callback returns completes what is left and
 *       frees itself on its own thread. Do not use `loop` after the call.
 */
SD_API void sd_loop_free(sd_loop *loop);

/*
 * Name: sd_loop_dispatch_fd
 * Desc: Dispatch mode's file descriptor: readable (POLLIN) while callbacks
 *       wait for sd_loop_dispatch. The loop's (never close or read it);
 *       valid until sd_loop_free. Add it to a main loop: GLib
 *       g_unix_fd_add / g_source_add_unix_fd, SDL via a thread or a timer
 *       and sd_loop_wait(loop, 0), libuv uv_poll_start, epoll EPOLLIN.
 * Returns: SD_OK and *fd; SD_EINVAL; SD_EBADSTATE (not in dispatch mode).
 */
SD_API int sd_loop_dispatch_fd(sd_loop *loop, int *fd);
/*
 * Name: sd_loop_dispatch
 * Desc: Run the callbacks waiting in dispatch mode on the calling thread,
 *       in order: at most `max` (0: all that are waiting at the call; ones
 *       that arrive meanwhile wait for the next call, so a busy loop never
 *       starves the caller). Call it from one thread at a time. A callback
 *       may submit, cancel and call sd_loop_free: the loop is then freed
 *       when this returns (SD_ESHUTDOWN; do not use `loop` after it).
 * Returns: how many callbacks ran (>= 0); SD_EINVAL; SD_EBADSTATE (not in
 *          dispatch mode, or called from one of its callbacks or on two
 *          threads at once); SD_ESHUTDOWN (a callback freed the loop).
 */
SD_API int sd_loop_dispatch(sd_loop *loop, int max);
/*
 * Name: sd_loop_wait
 * Desc: Block until callbacks wait for sd_loop_dispatch, at most
 *       `timeout_ms` (< 0: no limit; 0: just look). For programs without a
 *       main loop of their own.
 * Returns: SD_OK (callbacks are waiting); SD_ETIMEDOUT; SD_EINVAL;
 *          SD_EBADSTATE (not in dispatch mode); SD_EIO (poll failed).
 */
SD_API int sd_loop_wait(sd_loop *loop, int timeout_ms);

/* The callbacks of one transfer. Versioned: `size` is the caller's
 * sizeof(sd_transfer_events), so a later version can append callbacks and
 * binaries built against this one keep working (the library treats what
 * they lack as NULL). Set it with SD_TRANSFER_EVENTS_INIT or by hand.
 * Pointers passed to a callback are valid during that call only, unless
 * the line says the callee owns them. */
typedef struct sd_transfer_events {
    size_t size;
    /* Response headers arrived (final response after redirects); `response`
     * is valid during this call (the result carries it later). */
    void (*response)(sd_transfer_id id, const sd_response *response, void *user);
    /* Body progress: bytes so far and expected total (0 = unknown). */
    void (*progress)(sd_transfer_id id, uint64_t received, uint64_t expected, void *user);
    /* Something the sink made of the partial body, while it streams in (the
     * decode sink: a preview, an sd_bitmap *). The callee owns `partial`.
     * Only asked of the sink when this is set. */
    void (*partial)(sd_transfer_id id, void *partial, void *user);
    /* The end, exactly once; the callee owns `result` (sd_result_free). */
    void (*complete)(sd_transfer_id id, sd_result *result, void *user);
} sd_transfer_events;
#define SD_TRANSFER_EVENTS_INIT {sizeof(sd_transfer_events), NULL, NULL, NULL, NULL}

/*
 * Name: sd_loop_set_body_sink
 * Desc: The sink of every transfer with SD_REQ_USE_SINK and no sink of its
 *       own. `sink` is copied; `ctx` is the loop's until its release.
 *       Before sd_loop_start.
 * Returns: SD_OK, SD_EINVAL, SD_EBADSTATE (started, or a sink was set).
 */
SD_API int sd_loop_set_body_sink(sd_loop *loop, const sd_body_sink *sink, void *ctx);
/*
 * Name: sd_loop_body_sink
 * Desc: The loop's body sink (sd_loop_set_body_sink, sd_loop_use_decoder)
 *       and its context, for a sink of one request's own that wraps it — a
 *       tee that watches the bytes and hands every call on. Set
 *       `sink->size` first (SD_BODY_SINK_INIT). The context stays the
 *       loop's: valid until sd_loop_free. Since 0.5 (SDCORE_0.5).
 * Returns: SD_OK, SD_EINVAL, SD_EAGAIN (no sink was set).
 */
SD_API int sd_loop_body_sink(sd_loop *loop, sd_body_sink *sink, void **ctx);
/*
 * Name: sd_loop_submit
 * Desc: Queue a transfer. `request` and `events` are copied and may be
 *       freed at once; `user` is the caller's and is passed to every
 *       callback until `complete` (after which the loop forgets it). The
 *       transfer's result is allocated here, so an accepted transfer gets
 *       its `complete` even when memory runs out later.
 * Returns: SD_OK and *id; SD_EINVAL (also: events->size smaller than the
 *          first version's); SD_EUNSUPPORTED (events from newer headers
 *          that set a callback this library does not have); SD_ENOMEM;
 *          SD_ESHUTDOWN once sd_loop_free began; SD_EBADSTATE before
 *          sd_loop_start. On failure no callback fires.
 */
SD_API int sd_loop_submit(sd_loop *loop, const sd_request *request,
                          const sd_transfer_events *events, void *user,
                          sd_transfer_id *id);
/* Cancel one transfer: it completes with SD_ECANCELLED unless it already
 * completed (then nothing happens). Returns: SD_OK; SD_EINVAL (id 0);
 * SD_ENOMEM; SD_ESHUTDOWN; SD_EBADSTATE before sd_loop_start. */
SD_API int sd_loop_cancel(sd_loop *loop, sd_transfer_id id);
/* Change the priority of a queued transfer (no effect once running, or
 * once completed). Returns: SD_OK; SD_EINVAL (id 0, priority out of range);
 * SD_ENOMEM; SD_ESHUTDOWN; SD_EBADSTATE before sd_loop_start. */
SD_API int sd_loop_set_priority(sd_loop *loop, sd_transfer_id id, sd_priority priority);
/* Cancel every queued and running transfer: each completes with
 * SD_ECANCELLED. Returns: SD_OK; SD_EINVAL; SD_ENOMEM; SD_ESHUTDOWN;
 * SD_EBADSTATE before sd_loop_start. */
SD_API int sd_loop_cancel_all(sd_loop *loop);

#ifdef __cplusplus
}
#endif
#endif /* SDCORE_SD_LOOP_H */
