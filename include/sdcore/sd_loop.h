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

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sd_loop sd_loop;
typedef struct sd_request sd_request;
typedef struct sd_response sd_response;
typedef struct sd_result sd_result;
typedef uint64_t sd_transfer_id;
typedef struct sd_sink_port sd_sink_port;

typedef enum sd_priority {
    SD_PRIORITY_LOW = -1,
    SD_PRIORITY_NORMAL = 0,
    SD_PRIORITY_HIGH = 1
} sd_priority;

typedef enum sd_order {
    SD_ORDER_FIFO = 0, /* first submitted runs first (default) */
    SD_ORDER_LIFO = 1  /* last submitted runs first (SDWebImage's LIFO) */
} sd_order;

#define SD_DEFAULT_MAX_CONCURRENT 6
#define SD_DEFAULT_TIMEOUT_MS 15000
#define SD_DEFAULT_CONNECT_TIMEOUT_MS 10000
#define SD_DEFAULT_MAX_REDIRECTS 10
#define SD_DEFAULT_MAX_RESPONSE_BYTES 209715200LL /* 200 MiB */
#define SD_DEFAULT_ACCEPT "image/*,*/*;q=0.8"
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

typedef enum sd_request_param {
    SD_REQ_PRIORITY = 1,           /* sd_priority, default NORMAL */
    SD_REQ_TIMEOUT_MS = 2,         /* whole transfer, default 15000; 0 = none */
    SD_REQ_CONNECT_TIMEOUT_MS = 3, /* default 10000 */
    SD_REQ_LOW_SPEED_BYTES = 4,    /* abort when below this many bytes/s ... */
    SD_REQ_LOW_SPEED_TIME_MS = 5,  /* ... for this long (0 = off, the default) */
    SD_REQ_MAX_BYTES = 6,          /* response body limit, default 200 MiB; 0 = none */
    SD_REQ_MAX_REDIRECTS = 7,      /* default 10; 0 = do not follow */
    SD_REQ_ALLOW_INVALID_CERTS = 8, /* 1: skip TLS peer/host verification */
    SD_REQ_COOKIES = 9,            /* 1: use the loop's cookie engine */
    /* 1 (default): the body also goes to the sink (the request's, else the
     * loop's, if any); 0: bytes only, into the result. */
    SD_REQ_USE_SINK = 10,
    /* 11, 12: reserved (previews are sink parameters: SD_DEC_PREVIEWS) */
    SD_REQ_PROGRESS_INTERVAL_MS = 13, /* minimum between progress calls, default 0 */
    SD_REQ_STATUS_MIN = 14,        /* acceptable statuses [MIN, MAX], default 200..299 */
    SD_REQ_STATUS_MAX = 15,
    SD_REQ_HTTP2 = 16,             /* 1 (default): HTTP/2 over TLS when offered */
    /* Policy for untrusted URLs (SECURITY.md). Address classes (sd_address
     * bits) that no connection may go to: checked on the resolved address
     * of every connection, redirects and reused connections included, before
     * a byte is sent, so DNS rebinding does not get past it. Default 0. */
    SD_REQ_BLOCK_ADDRESSES = 17,
    /* 1: a redirect from https to http fails (SD_EPOLICY). Default 0. */
    SD_REQ_NO_DOWNGRADE = 18,
    /* Fail with SD_ETIMEDOUT when no byte (header or body) arrived for this
     * long: URLSession's timeoutInterval, which SDWebImage's downloadTimeout
     * is. Checked about once a second. Default 0 = off (then only
     * SD_REQ_TIMEOUT_MS bounds the transfer). */
    SD_REQ_IDLE_TIMEOUT_MS = 19
} sd_request_param;

/* Address classes for SD_REQ_BLOCK_ADDRESSES (IPv4, IPv6 and IPv4-mapped). */
typedef enum sd_address {
    SD_ADDRESS_LOOPBACK = 1,    /* 127/8, ::1 */
    SD_ADDRESS_PRIVATE = 2,     /* 10/8, 172.16/12, 192.168/16, 100.64/10, 198.18/15,
                                   192.0.0/24, fc00::/7, 64:ff9b:1::/48 */
    SD_ADDRESS_LINK_LOCAL = 4,  /* 169.254/16 (cloud metadata), fe80::/10 */
    SD_ADDRESS_MULTICAST = 8,   /* and reserved: 224/4, 240/4, 255.255.255.255, the
                                   TEST-NETs, 192.88.99/24, ff00::/8, 2001:db8::/32 */
    SD_ADDRESS_UNSPECIFIED = 16, /* 0/8, ::, 100::/64 */
    /* An IPv6 address that carries an IPv4 one (::ffff:a.b.c.d, ::a.b.c.d,
     * NAT64 64:ff9b::a.b.c.d, 6to4 2002:AABB:CCDD::, Teredo's client) is in
     * the class of that IPv4 address. */
    SD_ADDRESS_NON_PUBLIC = 31  /* all of the above */
} sd_address;

typedef enum sd_request_string {
    SD_REQ_USERNAME = 1,           /* HTTP Basic auth */
    SD_REQ_PASSWORD = 2,
    SD_REQ_USER_AGENT = 3,         /* default "SDWebImage-Linux/<version>" */
    SD_REQ_ACCEPT = 4,             /* default SD_DEFAULT_ACCEPT */
    SD_REQ_IF_NONE_MATCH = 5,      /* conditional request (revalidation) */
    SD_REQ_IF_MODIFIED_SINCE = 6,
    SD_REQ_ACCEPT_CONTENT_TYPES = 7, /* comma list of prefixes, e.g. "image/";
                                      * NULL/empty = any */
    SD_REQ_CA_FILE = 8,            /* extra trust anchors (PEM) */
    /* Policy for untrusted URLs; comma lists, checked for the first URL and
     * every redirect. Schemes allowed (default "http,https,file"); a
     * redirect never goes to file. */
    SD_REQ_ALLOWED_SCHEMES = 9,
    /* Host patterns: "example.com" (that host), "*.example.com" (its
     * subdomains), an IP literal as written. Allowed: if set, only these;
     * blocked: never these; trusted: exempt from SD_REQ_BLOCK_ADDRESSES
     * (an internal CDN; loopback test servers). Case-insensitive. */
    SD_REQ_ALLOWED_HOSTS = 10,
    SD_REQ_BLOCKED_HOSTS = 11,
    SD_REQ_TRUSTED_HOSTS = 12,
    /* Proxy URL ("http://10.0.0.5:3128", "socks5h://..."; since 0.3).
     * Unset: curl's environment variables (http_proxy, https_proxy,
     * all_proxy, no_proxy) — except under SD_REQ_BLOCK_ADDRESSES, which
     * must judge the destination and so ignores them. "": no proxy. With a
     * proxy and SD_REQ_BLOCK_ADDRESSES, every connection goes to the proxy
     * (no_proxy ignored), which is trusted as the operator's; the URL's
     * host is judged when it is an IP literal, a name is the proxy's to
     * resolve and police. */
    SD_REQ_PROXY = 13
} sd_request_string;

/*
 * Name: sd_request_use_server_transport
 * Desc: The transport half of sd_request_use_server_preset (sd_decode_sink.h,
 *       which adds the decoder's limits): http and https only (no file), no
 *       connection to a non-public address (SD_ADDRESS_NON_PUBLIC), no
 *       https -> http redirect, at most 3 redirects, 30 s for the whole
 *       transfer, 5 s to connect, under 1 KiB/s for 10 s aborts, 20 MiB
 *       bodies. Set anything after it to differ.
 * Returns: SD_OK, SD_EINVAL, SD_ENOMEM.
 */
SD_API int sd_request_use_server_transport(sd_request *request);

typedef enum sd_metric {
    SD_METRIC_DNS_MS = 1,          /* doubles: milliseconds from the start */
    SD_METRIC_CONNECT_MS = 2,
    SD_METRIC_TLS_MS = 3,
    SD_METRIC_FIRST_BYTE_MS = 4,
    SD_METRIC_TOTAL_MS = 5,
    SD_METRIC_QUEUED_MS = 6,       /* time spent waiting in our queue */
    SD_METRIC_BYTES = 7,           /* body bytes received (resumed ones not counted) */
    SD_METRIC_HTTP_VERSION = 8,    /* 10, 11, 20 */
    SD_METRIC_REDIRECTS = 9,
    SD_METRIC_SINK_MS = 10,        /* time the body sink worked (decoding) */
    SD_METRIC_CONNECTIONS = 11,    /* new connections opened (0 = reused) */
    SD_METRIC_RESUMED_BYTES = 12   /* bytes reused from sd_request_set_resume */
} sd_metric;

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

/* ---- requests (caller-owned values) ---- */

/* A request for an absolute URL (`url` is copied): *out is the caller's
 * (sd_request_free), reusable for any number of submits.
 * Returns: SD_OK; SD_EINVAL (NULL or empty); SD_EURL (relative, control
 * characters, longer than curl takes); SD_ENOMEM. */
SD_API int sd_request_new(const char *url, sd_request **out);
/* Free a request (NULL accepted); transfers submitted with it keep their
 * own copies. */
SD_API void sd_request_free(sd_request *request);
/* Set an sd_request_param. Returns: SD_OK, or SD_EINVAL (unknown parameter,
 * or a value out of its range). */
SD_API int sd_request_set(sd_request *request, sd_request_param param, int64_t value);
/* Set an sd_request_string (copied; NULL restores the default). Returns:
 * SD_OK; SD_EINVAL (unknown string, or a control character in it: no
 * header injection); SD_ENOMEM. */
SD_API int sd_request_set_string(sd_request *request, sd_request_string param, const char *value);
/*
 * Name: sd_request_set_resume
 * Desc: Continue an earlier transfer of the same URL that stopped after
 *       `length` bytes (`data`, copied): the request asks for the rest
 *       ("Range: bytes=<length>-") on condition that the resource is the
 *       same ("If-Range: <validator>", the ETag or Last-Modified of the
 *       response those bytes came from; a weak ETag never matches). A 206
 *       whose Content-Range starts at `length` continues them: the body and
 *       the decoder get `data` first, then the rest; the response keeps its
 *       206 status and the expected length is the whole resource's;
 *       SD_METRIC_RESUMED_BYTES says how much was reused, and the first
 *       progress call reports `length` received. Any other answer (a 200
 *       because the resource changed or the server ignores ranges) is taken
 *       as it comes and `data` is dropped; a 206 for another range fails
 *       with SD_EHTTPSTATUS. `length` 0 clears.
 * Returns: SD_OK, SD_EINVAL (no validator), SD_ENOMEM.
 */
SD_API int sd_request_set_resume(sd_request *request, const uint8_t *data, size_t length,
                                 const char *validator);
/* Extra header line "Name: value" (copied; replaces a default of the same
 * name). Returns: SD_OK; SD_EINVAL (no colon, control characters);
 * SD_ENOMEM. */
SD_API int sd_request_add_header(sd_request *request, const char *line);

/* ---- responses and results ----
 * A response is its owner's: the one passed to the `response` callback is
 * valid during that call; the one of a result (sd_result_response) until
 * sd_result_free. Every string returned is the response's (copy to keep). */

/* Returns the HTTP status (200, 206, 304, ...); 0 for NULL. */
SD_API long sd_response_status(const sd_response *response);
/* Returns the last value of a header (case-insensitive name), NULL if
 * absent. */
SD_API const char *sd_response_header(const sd_response *response, const char *name);
/* Headers in arrival order. Returns: the count (0 for NULL); the i-th
 * name and value: SD_OK, or SD_EINVAL past the end. */
SD_API int sd_response_header_count(const sd_response *response);
SD_API int sd_response_header_at(const sd_response *response, int index,
                                 const char **name, const char **value);
/* Returns the Content-Length of the body, 0 when unknown. */
SD_API uint64_t sd_response_expected_length(const sd_response *response);
/* Returns the Content-Type, and the URL after redirects; NULL when none. */
SD_API const char *sd_response_content_type(const sd_response *response);
SD_API const char *sd_response_effective_url(const sd_response *response);

/* A result is the `complete` callback's to keep or free (sd_result_free);
 * what these return is the result's unless taken. */

/* Returns the sd_status of the transfer: SD_OK, or why it failed. */
SD_API int sd_result_status(const sd_result *result);
/* Returns the detail text (curl's, the decoder's, or the status line);
 * never NULL. */
SD_API const char *sd_result_message(const sd_result *result);
/* Returns the final response, or NULL when none was received. */
SD_API const sd_response *sd_result_response(const sd_result *result);
/* Returns the raw body (kept for disk caches) and *length; NULL when there
 * is none or it was taken. Valid until sd_result_free. */
SD_API const uint8_t *sd_result_body(const sd_result *result, size_t *length);
/* Take the body: the caller owns *data (sd_free). A failed transfer keeps
 * what arrived before the failure (a start for sd_request_set_resume).
 * Returns: SD_OK (*data NULL when there was no body); SD_EINVAL. */
SD_API int sd_result_take_body(sd_result *result, uint8_t **data, size_t *length);
/* Take the body with the size of its block (*capacity >= *length). Give it
 * back with sd_body_free(data, capacity): a block of 64 KiB or more then goes
 * to the pixel pool (sd_bitmap_pool_limit), already mapped for the next
 * transfer or canvas. sd_free works too, without the reuse. Since 0.6.
 * Returns: SD_OK (*data NULL, *capacity 0 when there was no body); SD_EINVAL. */
SD_API int sd_result_take_body_block(sd_result *result, uint8_t **data, size_t *length, size_t *capacity);
/* Name: sd_body_free — Desc: release a body taken with
 * sd_result_take_body_block, `capacity` as it gave (on glibc a bigger one
 * is caught and not believed); NULL accepted. */
SD_API void sd_body_free(void *data, size_t capacity);
/* Returns the sink's output (sd_sink_port_done) and, if `output_free` is
 * not NULL, its destructor, which tells whose it is. NULL when there is
 * none. The result keeps it (sd_result_free frees it). */
SD_API void *sd_result_output(const sd_result *result, void (**output_free)(void *));
/* Take the sink's output. Returns it (NULL when none); the caller frees it
 * with *output_free. */
SD_API void *sd_result_take_output(sd_result *result, void (**output_free)(void *));
/* Returns an sd_metric of the transfer; 0 when unknown or not measured. */
SD_API double sd_result_metric(const sd_result *result, sd_metric metric);
/* Free a result and whatever it still holds (body, output); NULL accepted. */
SD_API void sd_result_free(sd_result *result);

#ifdef __cplusplus
}
#endif
#endif /* SDCORE_SD_LOOP_H */
