/*
 * sd_sink.h — body sinks: where a transfer's bytes go besides its result,
 * and the port a sink answers through. The decode sink (sd_decode_sink.h)
 * is one; a caller may plug in its own. Part of the transfer loop's API
 * (sd_loop.h includes it).
 */
#ifndef SDCORE_SD_SINK_H
#define SDCORE_SD_SINK_H

#include "sd_request.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sd_sink_port sd_sink_port;

/* ---- body sinks ----
 *
 * Where a transfer's bytes go besides the result's body: a small vtable, the
 * libuv/curl shape. The loop calls it on its own thread, in this order:
 * open once when the transfer starts; push for every piece of body, in
 * order (room first, for back-pressure); then exactly one of finish (the
 * body is all in) or abort (the transfer ended otherwise: error, cancel,
 * shutdown, or after the sink's early done). The sink answers through its
 * port, from any thread: partials while the body streams in, and after
 * finish exactly one done, which completes the transfer with the sink's
 * output (sd_result_output). Until then the transfer counts against
 * SD_LOOP_MAX_SINK_BACKLOG. A sink may also call done before finish to
 * refuse the body (not an image): room then returns < 0, the loop stops
 * reading, and the done completes the transfer.
 */
typedef struct sd_body_sink {
    /* sizeof(sd_body_sink) as the caller compiled it (SD_BODY_SINK_INIT):
     * versioned like sd_transfer_events. The sink is copied when set. */
    size_t size;
    /* A transfer starts. `request` is the transfer's copy (its sink
     * parameters: sd_request_sink_param_at), valid during this call only;
     * `port` is the sink's until it calls sd_sink_port_release. *state is passed to the calls below.
     * Returns SD_OK, or an error that fails the transfer (then no other
     * call, and the port is released by the loop). */
    int (*open)(void *ctx, const sd_request *request, sd_sink_port *port, void **state);
    /* Bytes of the body, in order; copy what you keep. An error fails the
     * transfer with that status. */
    int (*push)(void *state, const uint8_t *data, size_t length);
    /* Bytes the sink takes now: > 0 go on; 0 full: the loop pauses this
     * transfer until sd_sink_port_resume; < 0 refused (a done is on its
     * way): the loop reads no more of the body. NULL: always room. */
    int64_t (*room)(void *state);
    /* The whole body was pushed: finish and call sd_sink_port_done once.
     * `state` is the sink's from here on. */
    void (*finish)(void *state);
    /* The transfer is over without finish: stop. After return the sink calls
     * no port function but sd_sink_port_release (a call already running may
     * end). `state` is the sink's to free. */
    void (*abort)(void *state);
    /* The loop no longer uses `ctx` (sd_loop_free, after its threads ended),
     * for a sink set with sd_loop_set_body_sink. May be NULL. */
    void (*release)(void *ctx);
} sd_body_sink;
#define SD_BODY_SINK_INIT {sizeof(sd_body_sink), NULL, NULL, NULL, NULL, NULL, NULL}

/* The same for one request: `sink` is copied; `ctx` stays the caller's and
 * must outlive the complete callback of every transfer submitted with it
 * (release is not called). NULL clears.
 * Returns: SD_OK; SD_EINVAL (no request, sink->size unset, or open, push,
 * finish or abort missing); SD_EUNSUPPORTED (newer sink, unknown calls set). */
SD_API int sd_request_set_body_sink(sd_request *request, const sd_body_sink *sink, void *ctx);
/* Parameters for the sink (the decode sink: sd_decoder_param), at most 32:
 * the loop only carries them. Setting a key again replaces its value.
 * Returns: SD_OK, or SD_EINVAL (no request, or 32 keys already). */
SD_API int sd_request_set_sink_param(sd_request *request, int key, int64_t value);
/* The i-th sink parameter (0-based). Returns SD_OK, or SD_EINVAL past the end. */
SD_API int sd_request_sink_param_at(const sd_request *request, int index, int *key, int64_t *value);
/* One block of typed data for the sink (the decode sink: an sd_render,
 * sd_request_set_render), copied; the loop only carries it. NULL or 0
 * bytes clear it. Returns SD_OK, SD_EINVAL (no request, or over 4 KiB),
 * SD_ENOMEM. Since 0.10. */
SD_API int sd_request_set_sink_data(sd_request *request, const void *data, size_t length);
/* That block, lent until the request changes or is freed (NULL and 0 when
 * none). Returns SD_OK or SD_EINVAL. Since 0.10. */
SD_API int sd_request_sink_data(const sd_request *request, const void **data, size_t *length);

/* Port functions: safe from any thread, until sd_sink_port_release. */
/* Returns 1 when the transfer has a partial callback (worth making
 * previews for), else 0 (also for NULL). */
SD_API int sd_sink_port_wants_partials(const sd_sink_port *port);
/* Hand a partial to the transfer's partial callback (on the loop thread);
 * `item` is freed with `item_free` if it cannot be delivered (the transfer
 * ended meanwhile, or no memory: partials may be dropped). */
SD_API void sd_sink_port_partial(sd_sink_port *port, void *item, void (*item_free)(void *));
/* Room again after room returned 0: the loop resumes the transfer. */
SD_API void sd_sink_port_resume(sd_sink_port *port);
/*
 * Name: sd_sink_port_done
 * Desc: The sink's end, at most once: status SD_OK or why it failed (the
 *       transfer completes with it; `message` is copied, may be NULL),
 *       `output` with its destructor (NULL for none), `work_ms` for
 *       SD_METRIC_SINK_MS. Never fails: its memory came with the port.
 */
SD_API void sd_sink_port_done(sd_sink_port *port, int status, const char *message, void *output,
                              void (*output_free)(void *), double work_ms);
/* The sink drops the port (once, when it is done with the transfer). */
SD_API void sd_sink_port_release(sd_sink_port *port);

#ifdef __cplusplus
}
#endif
#endif /* SDCORE_SD_SINK_H */
