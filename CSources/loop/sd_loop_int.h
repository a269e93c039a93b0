/*
 * sd_loop_int.h — internals shared by the files of loop/: the request,
 * response and result values, one transfer, the loop, and its inbox.
 *
 *   sd_request.c   request/response/result values
 *   sd_policy.c    URL and address policy
 *   sd_loop.c      the thread, its commands, the public sd_loop_* calls
 *   sd_xfer.c      transfers: id table, queues, start, curl's end, complete
 *   sd_easy.c      one curl easy handle: setup, callbacks, errors, metrics
 *   sd_inbox.c     sink ports and what sinks post back to the loop thread
 *   sd_file.c      file:// URLs: regular files only, never blocking the loop
 *   sd_dispatch.c  dispatch mode: callbacks on the caller's thread
 *
 * Nothing here knows what a body is: bytes go to a body sink (sd_loop.h).
 */
#ifndef SD_LOOP_INT_H
#define SD_LOOP_INT_H

#include <pthread.h>

#include <curl/curl.h>

#include "common/sd_internal.h"
#include "sdcore/sd_loop.h"

/* ---- values ---- */

#define SD__REQ_PARAM_SLOTS 32 /* room for every sd_request_param (sd_request.c lists them) */
#define SD__REQ_STRING_SLOTS 32 /* room for every sd_request_string (sd_request.c lists them) */
#define SD__REQ_NSINK_PARAMS 32
#define SD__NMETRICS (SD_METRIC_ENDED_EARLY + 1)   /* one per sd_metric */

_Static_assert(SD__NMETRICS == 15, "a new sd_metric needs collecting in sd_easy.c");

struct sd_request {
    char *url;
    int64_t params[SD__REQ_PARAM_SLOTS];
    char *strings[SD__REQ_STRING_SLOTS];
    char **headers;
    int nheaders;
    int nsink;                         /* sink parameters, carried only */
    int sink_keys[SD__REQ_NSINK_PARAMS];
    int64_t sink_values[SD__REQ_NSINK_PARAMS];
    void *sink_data;                   /* sd_request_set_sink_data (a copy) */
    size_t sink_data_len;
    sd_body_sink sink;                 /* sd_request_set_body_sink (a copy) */
    int has_sink;
    void *sink_ctx;
    uint8_t *resume;        /* sd_request_set_resume: bytes we have, */
    size_t resume_len;
    char *resume_validator; /* and the If-Range value */
};

typedef struct {
    char *name;
    char *value;
} sd__header;

struct sd_response {
    long status;
    sd__header *headers;
    int nheaders, cap;
    uint64_t expected;
    char *content_type;
    char *effective_url;
};

struct sd_result {
    int status;
    char message[512];
    sd_response *response;
    uint8_t *body;
    size_t body_len;
    size_t body_cap; /* for sd__body_free */
    void *output;    /* the sink's */
    void (*output_free)(void *);
    double metrics[SD__NMETRICS];
};

/* ---- the inbox: what sinks post to the loop thread ----
 * Its own allocation, counted: a port may outlive the loop (a sink of the
 * caller's releasing it late), and then posts into a closed inbox. */

typedef struct sd__partial {
    struct sd__partial *next;
    sd_transfer_id id;
    void *item;
    void (*item_free)(void *);
} sd__partial;

typedef struct sd__inbox {
    pthread_mutex_t mu;
    int refs;         /* the loop's + one per port; under mu */
    int closed;       /* the loop is gone: posts are dropped */
    int wake_pending; /* a wakeup is on its way (coalesced) */
    CURLM *multi;     /* to wake the loop; valid while !closed */
    sd__partial *pv_head, *pv_tail;
    sd_sink_port *dn_head, *dn_tail;
    sd_sink_port *rs_head, *rs_tail;
} sd__inbox;

struct sd_sink_port {
    sd__inbox *inbox;
    sd_transfer_id id;
    int wants_partials;
    int refs;           /* loop + sink + queued messages; under inbox->mu */
    int done, resume_queued;
    sd_sink_port *next_done, *next_resume;
    /* sd_sink_port_done */
    int status;
    char message[300];
    void *output;
    void (*output_free)(void *);
    double work_ms;
};

/* ---- one transfer (loop thread only) ---- */

enum { XF_QUEUED = 1, XF_RUNNING, XF_SINKING /* body in, waiting for the sink's done */ };

typedef struct sd__xfer sd__xfer;
typedef struct sd__relay sd__relay;
typedef struct sd__outbox sd__outbox;
struct sd__xfer {
    sd_transfer_id id;
    sd_request *req;
    sd_transfer_events ev;
    void *user;
    sd__relay *relay;  /* dispatch mode: ev and user are the relay's */
    sd_result *result; /* allocated with the transfer: the end needs no memory */
    int priority;
    int state;
    sd__xfer *prev, *next; /* queue list (per priority) */
    CURL *easy;
    struct curl_slist *hdrs;
    sd_response *resp;
    int resp_checked;
    int head_status;    /* status of the response whose headers are arriving */
    int policy_refused; /* a connection was refused by SD_REQ_BLOCK_ADDRESSES */
    char policy_msg[200];
    uint8_t *body;
    size_t len, cap;
    int abort_status;
    char abort_msg[256];
    /* the body sink */
    const sd_body_sink *sink;
    void *sink_state;   /* set while open and neither finished nor aborted */
    sd_sink_port *port; /* the loop's reference */
    int rejected;       /* the sink refused the bytes: its done completes us */
    int paused;         /* the sink is full: curl holds the bytes */
    int file_fd;        /* file:// only: the checked file, read through /proc/self/fd */
    int64_t last_progress_ms;
    int64_t last_byte_ms; /* SD_REQ_IDLE_TIMEOUT_MS: when bytes last came */
    double t_submit, t_start;
    double metrics[SD__NMETRICS];
    char errbuf[CURL_ERROR_SIZE];
};

/* ---- the loop ---- */

enum { CMD_SUBMIT = 1, CMD_CANCEL, CMD_PRIORITY, CMD_CANCEL_ALL };

typedef struct {
    int type;
    sd_transfer_id id;
    int64_t value;
    sd__xfer *x;
} sd__cmd;

#define SD__NPRIORITIES (SD_PRIORITY_HIGH - SD_PRIORITY_LOW + 1)
_Static_assert(SD__NPRIORITIES == 3, "queues are indexed by priority + 1");

struct sd_loop {
    pthread_mutex_t mu;
    /* guarded by mu */
    sd__cmd *cmds;
    int ncmds, capcmds;
    int shutting_down, started;
    int self_free; /* sd_loop_free was called on the loop thread: it frees itself */
    int64_t max_concurrent, order, suspended, max_backlog, default_backlog;
    int64_t pub_queued, pub_running, pending_submits;
    int wake_pending; /* a wakeup is on its way: the loop has not taken the commands since */
    int64_t max_host, max_host_applied; /* SD_LOOP_MAX_HOST_CONNECTIONS: asked (mu), set on the multi (loop thread) */
    int64_t recv_buffer;     /* SD_LOOP_RECEIVE_BUFFER, under mu */
    int64_t recv_buffer_now; /* its copy for the loop thread */
    uint64_t next_id;
    sd_body_sink sink; /* sd_loop_set_body_sink; set before start */
    void *sink_ctx;
    int has_sink;
    sd__inbox *inbox;
    sd__outbox *outbox; /* SD_LOOP_DISPATCH: set before start, fixed after */
    int free_deferred;  /* sd_loop_free from a dispatched callback (dispatching thread only) */
    /* loop thread only */
    pthread_t thread;
    CURLM *multi;
    CURLSH *share;
    sd__xfer *qhead[SD__NPRIORITIES], *qtail[SD__NPRIORITIES];
    int queued, running, sinking;
    sd__xfer **table; /* open addressing by id */
    size_t tcap, tcount, ttomb;
    CURL **spare;
    int nspare;
    char user_agent[96];
};

#define SD__SPARE_EASY 32

/* sd_request.c */
/* 1 when `s` holds a control character other than tab (CR, LF, DEL, …). */
SD__HIDDEN int sd__has_control(const char *s);
SD__HIDDEN int sd__request_copy(const sd_request *src, sd_request **out);
SD__HIDDEN int sd__body_sink_copy(sd_body_sink *dst, const sd_body_sink *src);
SD__HIDDEN sd_response *sd__response_new(void);
SD__HIDDEN void sd__response_free(sd_response *r);
SD__HIDDEN void sd__response_reset(sd_response *r);
SD__HIDDEN int sd__response_add_header(sd_response *r, const char *line, size_t len);
/* A deep copy, or NULL when out of memory. */
SD__HIDDEN sd_response *sd__response_copy(const sd_response *r);

/* sd_policy.c */
/* SD_OK, or SD_EPOLICY / SD_ESCHEME / SD_EURL with a message, for `url`
 * (the first URL or a redirect's target; `from` is the URL redirected
 * from, or NULL). */
SD__HIDDEN int sd__policy_check_url(const sd_request *r, const char *url, const char *from, char *msg, size_t cap);
/* The sd_address class bits of a numeric address, 0 for a public one. */
SD__HIDDEN int sd__address_class(int family, const void *addr);
/* 1 when `host` matches one pattern of the comma list. */
SD__HIDDEN int sd__host_matches(const char *list, const char *host);

/* Judge the resolved address of every connection of `x` (SD_REQ_BLOCK_ADDRESSES). */
SD__HIDDEN void sd__policy_watch_addresses(sd__xfer *x, CURL *e);

/* sd_file.c: check and open the file of a file:// request; *url_out is what
 * curl reads (the checked descriptor through /proc/self/fd). */
SD__HIDDEN int sd__file_open(sd__xfer *x, char *url_out, size_t url_cap, char *msg, size_t msg_cap);

/* sd_xfer.c */
SD__HIDDEN int sd__table_put(sd_loop *l, sd__xfer *x);
SD__HIDDEN sd__xfer *sd__table_get(sd_loop *l, sd_transfer_id id);
SD__HIDDEN void sd__queue_insert(sd_loop *l, sd__xfer *x);
SD__HIDDEN void sd__queue_unlink(sd_loop *l, sd__xfer *x);
SD__HIDDEN void sd__xfer_free(sd__xfer *x);
/* Detach from curl and the sink; then the one and only complete callback.
 * `done` is the sink's port when its done ends the transfer. */
SD__HIDDEN void sd__complete(sd_loop *l, sd__xfer *x, int status, const char *msg, sd_sink_port *done);
SD__HIDDEN void sd__cancel_all(sd_loop *l, int status);
SD__HIDDEN void sd__start_queued(sd_loop *l, int64_t max, int64_t order, int64_t suspended, int64_t backlog);
/* curl finished transfers: error now, or hand the end of the body to the sink. */
SD__HIDDEN void sd__read_done(sd_loop *l);

/* sd_easy.c */
/* A ready easy handle for `x` (x->easy), from the spares or new. */
SD__HIDDEN int sd__easy_setup(sd_loop *l, sd__xfer *x, char *msg, size_t msg_cap);
/* Keep a finished handle for the next transfer, or clean it up. */
SD__HIDDEN void sd__easy_recycle(sd_loop *l, CURL *e, int used_cookies);
SD__HIDDEN int sd__easy_status(sd__xfer *x, CURLcode code, const char **msg);
SD__HIDDEN void sd__easy_metrics(sd__xfer *x);
SD__HIDDEN int sd__check_response(sd__xfer *x);

/* sd_inbox.c */
SD__HIDDEN sd__inbox *sd__inbox_new(CURLM *multi);
/* The loop is going: close, drop what is queued, release the loop's reference. */
SD__HIDDEN void sd__inbox_close(sd__inbox *in);
/* A port for transfer `x` (two references: the loop's and the sink's). */
SD__HIDDEN sd_sink_port *sd__port_new(sd__inbox *in, sd_transfer_id id, int wants_partials);
SD__HIDDEN void sd__port_unref(sd_sink_port *port);
/* Called with the lock of a queue held after queueing: one wakeup per batch. */
SD__HIDDEN int sd__needs_wake(int *wake_pending);

/* sd_dispatch.c */
SD__HIDDEN sd__outbox *sd__outbox_new(void);
/* Frees what was never dispatched too (no callbacks). */
SD__HIDDEN void sd__outbox_free(sd__outbox *ob);
SD__HIDDEN int sd__outbox_fd(const sd__outbox *ob);
/* Put a relay between transfer `x` and its callbacks (x->ev, x->user). */
SD__HIDDEN int sd__relay_attach(sd__outbox *ob, sd__xfer *x);
/* A relay whose transfer was not accepted (no callback can come). */
SD__HIDDEN void sd__relay_free(sd__relay *r);
/* A sink's partial for the relay's transfer (loop thread). */
SD__HIDDEN void sd__relay_partial(sd__relay *r, sd_transfer_id id, void *item, void (*item_free)(void *));
/* Run up to `max` queued callbacks (0: all queued at the call) on this
 * thread, stopping early once *stop is set. Returns how many ran, or
 * SD_EBADSTATE when callbacks are already running (a nested call). */
SD__HIDDEN int sd__outbox_run(sd__outbox *ob, int max, const int *stop);
/* 1 when the calling thread is running the outbox's callbacks. */
SD__HIDDEN int sd__outbox_on_runner(sd__outbox *ob);
/* Wait until something is queued: SD_OK, SD_ETIMEDOUT, SD_EIO. */
SD__HIDDEN int sd__outbox_wait(sd__outbox *ob, int timeout_ms);

#endif
