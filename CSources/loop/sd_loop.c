/*
 * sd_loop.c — one thread owns the CURLM and every easy handle (curl's rule).
 * Other threads talk to it through a mutex-protected command queue plus
 * curl_multi_wakeup(); decode workers hand results back through an inbox the
 * same way. The loop: commands -> start queued transfers -> perform ->
 * info_read -> poll. It never sleeps while work is ready: a finished
 * transfer that frees a slot loops again without polling.
 *
 * The loop moves bytes, never pixels: body chunks are copied into the
 * transfer's decode job (CSources/pool) and bitmaps come back as opaque
 * results that are only forwarded to the callbacks.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "loop/sd_loop_int.h"

enum { XF_QUEUED = 1, XF_RUNNING, XF_DECODING };
enum { CMD_SUBMIT = 1, CMD_CANCEL, CMD_PRIORITY, CMD_CANCEL_ALL };

typedef struct sd__xfer sd__xfer;
struct sd__xfer {
    sd_transfer_id id;
    sd_request *req;
    sd_transfer_events ev;
    void *user;
    int priority;
    int state;
    sd__xfer *prev, *next; /* queue list (per priority) */
    CURL *easy;
    struct curl_slist *hdrs;
    sd_response *resp;
    int resp_checked;
    int head_status;   /* status of the response whose headers are arriving */
    int policy_refused; /* a connection was refused by SD_REQ_BLOCK_ADDRESSES */
    char policy_msg[200];
    uint8_t *body;
    size_t len, cap;
    int abort_status;
    char abort_msg[256];
    sd__job *job;
    int rejected;   /* the decoder refused the bytes: stop reading, let its result complete us */
    int file_fd;    /* file:// only: the checked file, read by curl through /proc/self/fd */
    int64_t last_progress_ms;
    int64_t last_byte_ms; /* SD_REQ_IDLE_TIMEOUT_MS: when bytes last came */
    double t_submit, t_start;
    double metrics[16];
    char errbuf[CURL_ERROR_SIZE];
};

typedef struct {
    int type;
    sd_transfer_id id;
    int64_t value;
    sd__xfer *x;
} sd__cmd;

/* A preview from a worker; dropped (not queued) if it cannot be allocated. */
typedef struct sd__preview {
    struct sd__preview *next;
    uint64_t id;
    sd_bitmap *bitmap;
} sd__preview;

struct sd_loop {
    pthread_mutex_t mu;
    /* guarded by mu */
    sd__cmd *cmds;
    int ncmds, capcmds;
    sd__preview *pv_head, *pv_tail;    /* previews from the workers */
    sd__job_result *dn_head, *dn_tail; /* finished jobs (never lost: preallocated) */
    int shutting_down, started;
    int self_free; /* sd_loop_free was called on the loop thread: it frees itself */
    int64_t max_concurrent, order, suspended, decode_threads, max_backlog;
    int64_t pub_queued, pub_running, pending_submits;
    int wake_pending; /* a wakeup is on its way: the loop has not taken the inbox since */
    int64_t max_host, max_host_applied; /* SD_LOOP_MAX_HOST_CONNECTIONS: asked (mu), set on the multi (loop thread) */
    int64_t recv_buffer;     /* SD_LOOP_RECEIVE_BUFFER, under mu */
    int64_t recv_buffer_now; /* its copy for the loop thread */
    uint64_t next_id;
    /* loop thread only */
    pthread_t thread;
    CURLM *multi;
    CURLSH *share;
    sd__pool *pool;
    sd__xfer *qhead[3], *qtail[3]; /* index: priority + 1 */
    int queued, running, decoding;
    sd__xfer **table; /* open addressing by id */
    size_t tcap, tcount, ttomb;
    CURL **spare;
    int nspare;
    char user_agent[96];
};

#define SD__TOMB ((sd__xfer *)(uintptr_t)1)
#define SD__SPARE_EASY 32

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

static double ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- id table ---- */

static size_t slot_of(uint64_t id, size_t cap) { return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1); }

static int table_put(sd_loop *l, sd__xfer *x)
{
    if ((l->tcount + l->ttomb + 1) * 2 > l->tcap) {
        size_t ncap = l->tcap ? l->tcap : 64;
        while ((l->tcount + 1) * 4 > ncap)
            ncap *= 2;
        if (ncap == l->tcap && l->ttomb == 0)
            ncap *= 2;
        sd__xfer **nt = calloc(ncap, sizeof *nt);
        SD__RETURN_IF(nt == NULL, SD_ENOMEM);
        for (size_t i = 0; i < l->tcap; i++) {
            sd__xfer *e = l->table[i];
            if (e && e != SD__TOMB) {
                size_t s = slot_of(e->id, ncap);
                while (nt[s])
                    s = (s + 1) & (ncap - 1);
                nt[s] = e;
            }
        }
        free(l->table);
        l->table = nt;
        l->tcap = ncap;
        l->ttomb = 0;
    }
    size_t s = slot_of(x->id, l->tcap);
    while (l->table[s] && l->table[s] != SD__TOMB)
        s = (s + 1) & (l->tcap - 1);
    if (l->table[s] == SD__TOMB)
        l->ttomb--;
    l->table[s] = x;
    l->tcount++;
    return SD_OK;
}

static sd__xfer *table_get(sd_loop *l, uint64_t id, size_t *where)
{
    if (l->tcap == 0)
        return NULL;
    size_t s = slot_of(id, l->tcap);
    while (l->table[s]) {
        if (l->table[s] != SD__TOMB && l->table[s]->id == id) {
            if (where)
                *where = s;
            return l->table[s];
        }
        s = (s + 1) & (l->tcap - 1);
    }
    return NULL;
}

static void table_del(sd_loop *l, uint64_t id)
{
    size_t s;
    if (table_get(l, id, &s)) {
        l->table[s] = SD__TOMB;
        l->tcount--;
        l->ttomb++;
    }
}

/* ---- queue (per priority, kept in submission order) ---- */

static void q_unlink(sd_loop *l, sd__xfer *x)
{
    int p = x->priority + 1;
    if (x->prev)
        x->prev->next = x->next;
    else
        l->qhead[p] = x->next;
    if (x->next)
        x->next->prev = x->prev;
    else
        l->qtail[p] = x->prev;
    x->prev = x->next = NULL;
    l->queued--;
}

static void q_insert(sd_loop *l, sd__xfer *x)
{
    int p = x->priority + 1;
    sd__xfer *after = l->qtail[p];
    while (after && after->id > x->id) /* ids grow with submission */
        after = after->prev;
    x->prev = after;
    x->next = after ? after->next : l->qhead[p];
    if (x->next)
        x->next->prev = x;
    else
        l->qtail[p] = x;
    if (after)
        after->next = x;
    else
        l->qhead[p] = x;
    l->queued++;
}

/* ---- completion ---- */

static void xfer_free(sd__xfer *x)
{
    if (x->file_fd >= 0)
        close(x->file_fd);
    sd_request_free(x->req);
    curl_slist_free_all(x->hdrs);
    sd__response_free(x->resp);
    sd__body_free(x->body, x->cap);
    free(x);
}

/* Keep a finished handle for the next transfer (curl_easy_reset keeps the
 * connection and DNS caches of the multi). A handle that had the cookie
 * engine on is not kept: curl_easy_reset leaves it attached to the share's
 * cookie jar, so a later transfer that never asked for cookies would send
 * them. */
static void recycle_easy(sd_loop *l, CURL *e, int used_cookies)
{
    if (e == NULL)
        return;
    if (used_cookies) {
        curl_easy_setopt(e, CURLOPT_SHARE, NULL);
        curl_easy_cleanup(e);
        return;
    }
    if (l->nspare < SD__SPARE_EASY) {
        curl_easy_reset(e); /* keeps the DNS/connection caches of the multi */
        l->spare[l->nspare++] = e;
    } else {
        curl_easy_cleanup(e);
    }
}

/* Detach from curl and the pool; then the one and only complete callback. */
static void complete(sd_loop *l, sd__xfer *x, int status, const char *msg, sd__job_result *jr)
{
    if (x->state == XF_QUEUED)
        q_unlink(l, x);
    if (x->easy) {
        curl_multi_remove_handle(l->multi, x->easy);
        recycle_easy(l, x->easy, x->req->params[SD_REQ_COOKIES] != 0);
        x->easy = NULL;
        l->running--;
    }
    if (x->state == XF_DECODING)
        l->decoding--;
    if (x->job) {
        sd__job_abandon(x->job);
        x->job = NULL;
    }
    table_del(l, x->id);
    sd_result *r = calloc(1, sizeof *r);
    if (r != NULL) {
        r->status = status;
        snprintf(r->message, sizeof r->message, "%s", msg && *msg ? msg : sd_strerror(status));
        r->response = x->resp;
        x->resp = NULL;
        r->body = x->body;
        r->body_len = x->len;
        r->body_cap = x->cap;
        x->body = NULL;
        memcpy(r->metrics, x->metrics, sizeof r->metrics);
        if (jr) {
            r->bitmap = jr->bitmap;
            jr->bitmap = NULL;
            memcpy(r->info, jr->info, sizeof r->info);
            memcpy(r->info_known, jr->info_known, sizeof r->info_known);
            r->metrics[SD_METRIC_DECODE_MS] = jr->decode_ms;
        }
    }
    if (x->ev.complete && r)
        x->ev.complete(x->id, r, x->user);
    else
        sd_result_free(r);
    xfer_free(x);
}

/* ---- curl callbacks (loop thread) ---- */

static int content_type_ok(const char *list, const char *ct)
{
    if (list == NULL || *list == '\0')
        return 1;
    if (ct == NULL)
        return 0;
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = strcspn(p, ",");
        size_t m = n;
        while (m > 0 && p[m - 1] == ' ')
            m--;
        if (m > 0 && strncasecmp(ct, p, m) == 0)
            return 1;
        p += n;
    }
    return 0;
}

/* The body would grow to `total` bytes: over SD_REQ_MAX_BYTES, abort. */
static int over_max(sd__xfer *x, size_t total)
{
    int64_t max = x->req->params[SD_REQ_MAX_BYTES];
    if (max <= 0 || (int64_t)total <= max)
        return 0;
    x->abort_status = SD_ETOOBIG;
    snprintf(x->abort_msg, sizeof x->abort_msg, "response exceeds %lld bytes", (long long)max);
    return 1;
}

/* A 206 to a resumed request: if it continues our bytes, they become the
 * start of the body and of the decoder's input. */
static int resume(sd__xfer *x)
{
    const sd_request *r = x->req;
    const char *range = sd_response_header(x->resp, "content-range");
    unsigned long long first = 0, last = 0;
    if (range == NULL || sscanf(range, "bytes %llu-%llu", &first, &last) != 2 || first != r->resume_len ||
        last < first || last >= (unsigned long long)(SIZE_MAX / 2)) {
        x->abort_status = SD_EHTTPSTATUS;
        snprintf(x->abort_msg, sizeof x->abort_msg, "HTTP 206 for a range that does not continue byte %zu (%s)",
                 r->resume_len, range ? range : "no Content-Range");
        return x->abort_status;
    }
    size_t need = r->resume_len + (size_t)(last - first + 1), got;
    if (over_max(x, need))
        return x->abort_status;
    /* room for what the range says, within reason: a hostile Content-Range
     * gets no big allocation up front (the body grows as bytes come) */
    uint8_t *b = sd__body_alloc(SD__MAX(SD__MIN(need, r->resume_len + ((size_t)64 << 20)), 16384), &got);
    if (b == NULL) {
        x->abort_status = SD_ENOMEM;
        return x->abort_status;
    }
    memcpy(b, r->resume, r->resume_len);
    sd__body_free(x->body, x->cap);
    x->body = b;
    x->cap = got;
    x->len = r->resume_len;
    x->resp->expected = need;
    x->metrics[SD_METRIC_RESUMED_BYTES] = (double)r->resume_len;
    if (x->job && sd__job_push(x->job, r->resume, r->resume_len) != SD_OK) {
        x->abort_status = SD_ENOMEM;
        return x->abort_status;
    }
    return 0;
}

/* Headers are complete: record them, check status and type, tell the caller. */
static int check_response(sd_loop *l, sd__xfer *x)
{
    (void)l;
    if (x->resp_checked)
        return x->abort_status;
    x->resp_checked = 1;
    long code = 0;
    char *ct = NULL, *url = NULL, *scheme = NULL;
    curl_off_t cl = -1;
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ct);
    curl_easy_getinfo(x->easy, CURLINFO_EFFECTIVE_URL, &url);
    curl_easy_getinfo(x->easy, CURLINFO_SCHEME, &scheme);
    curl_easy_getinfo(x->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
    x->resp->status = code;
    x->resp->expected = cl > 0 ? (uint64_t)cl : 0;
    if (x->req->resume_len > 0 && code == 206 && resume(x) != 0)
        return x->abort_status;
    free(x->resp->content_type);
    free(x->resp->effective_url);
    x->resp->content_type = ct ? strdup(ct) : NULL;
    /* a file:// transfer reads /proc/self/fd/N: report the URL asked for */
    x->resp->effective_url = x->file_fd >= 0 ? strdup(x->req->url) : url ? strdup(url) : NULL;
    int is_http = scheme && (strcasecmp(scheme, "http") == 0 || strcasecmp(scheme, "https") == 0);
    const int64_t *p = x->req->params;
    if (is_http && code == 304) {
        x->abort_status = SD_ENOTMODIFIED;
        snprintf(x->abort_msg, sizeof x->abort_msg, "HTTP 304 Not Modified");
    } else if (is_http && (code < p[SD_REQ_STATUS_MIN] || code > p[SD_REQ_STATUS_MAX])) {
        x->abort_status = SD_EHTTPSTATUS;
        snprintf(x->abort_msg, sizeof x->abort_msg, "HTTP status %ld", code);
    } else if (is_http && !content_type_ok(x->req->strings[SD_REQ_ACCEPT_CONTENT_TYPES], ct)) {
        x->abort_status = SD_ECONTENTTYPE;
        snprintf(x->abort_msg, sizeof x->abort_msg, "content type %s not acceptable", ct ? ct : "(none)");
    }
    if (x->ev.response)
        x->ev.response(x->id, x->resp, x->user);
    if (x->abort_status == 0 && x->ev.progress) {
        x->ev.progress(x->id, x->len, x->resp->expected, x->user); /* 0, or the resumed bytes */
        x->last_progress_ms = sd__now_ms();
    }
    return x->abort_status;
}

/* The idle watchdog: curl calls this at least once a second while a
 * transfer runs, bytes or not. */
static int on_xferinfo(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    sd__xfer *x = ud;
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    int64_t idle = x->req->params[SD_REQ_IDLE_TIMEOUT_MS], now = sd__now_ms();
    if (x->last_byte_ms == 0)
        x->last_byte_ms = now; /* the clock starts with the transfer */
    if (now - x->last_byte_ms < idle)
        return 0;
    x->abort_status = SD_ETIMEDOUT;
    snprintf(x->abort_msg, sizeof x->abort_msg, "no data for %lld ms (idle timeout)", (long long)idle);
    return 1;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    sd__xfer *x = ud;
    size_t len = size * n;
    x->last_byte_ms = sd__now_ms();
    if (len > 9 && strncmp(p, "HTTP/", 5) == 0) {
        const char *sp = memchr(p, ' ', len);
        x->head_status = sp ? atoi(sp + 1) : 0;
    } else if (x->head_status >= 300 && x->head_status < 400 && len > 9 && strncasecmp(p, "Location:", 9) == 0
               && x->req->params[SD_REQ_MAX_REDIRECTS] > 0) {
        /* a redirect curl is about to follow: the policy judges its target
         * first (scheme, host, downgrade); addresses are judged on connect */
        char target[2048];
        size_t tl = len - 9;
        const char *t = p + 9;
        while (tl > 0 && (*t == ' ' || *t == '\t'))
            t++, tl--;
        while (tl > 0 && (t[tl - 1] == '\r' || t[tl - 1] == '\n' || t[tl - 1] == ' '))
            tl--;
        if (tl >= sizeof target) {
            x->abort_status = SD_EPOLICY;
            snprintf(x->abort_msg, sizeof x->abort_msg, "redirect target too long");
            return 0;
        }
        memcpy(target, t, tl);
        target[tl] = '\0';
        char *from = NULL;
        curl_easy_getinfo(x->easy, CURLINFO_EFFECTIVE_URL, &from);
        int rc = sd__policy_check_url(x->req, target, from, x->abort_msg, sizeof x->abort_msg);
        if (rc != SD_OK) {
            x->abort_status = rc;
            return 0;
        }
    }
    return sd__response_add_header(x->resp, p, len) == SD_OK ? len : 0;
}

/* The host of the URL this transfer is on now (the redirect's once curl
 * follows one), for SD_REQ_TRUSTED_HOSTS. */
static int on_trusted_host(sd__xfer *x)
{
    const char *trusted = x->req->strings[SD_REQ_TRUSTED_HOSTS];
    if (trusted == NULL || *trusted == '\0')
        return 0;
    char *url = NULL, *host = NULL;
    curl_easy_getinfo(x->easy, CURLINFO_EFFECTIVE_URL, &url);
    CURLU *u = curl_url();
    int ok = 0;
    if (u && url && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK
        && curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK)
        ok = sd__host_matches(trusted, host);
    curl_free(host);
    curl_url_cleanup(u);
    return ok;
}

static const char *class_name(int c)
{
    return c & SD_ADDRESS_LOOPBACK ? "loopback" : c & SD_ADDRESS_PRIVATE ? "private"
         : c & SD_ADDRESS_LINK_LOCAL ? "link-local" : c & SD_ADDRESS_MULTICAST ? "multicast or reserved"
         : "unspecified";
}

/* 1 when the policy refuses this numeric address (and records why). */
static int address_refused(sd__xfer *x, int family, const void *addr)
{
    int cls = sd__address_class(family, addr) & (int)x->req->params[SD_REQ_BLOCK_ADDRESSES];
    if (cls == 0 || on_trusted_host(x))
        return 0;
    char text[INET6_ADDRSTRLEN] = "?";
    inet_ntop(family, addr, text, sizeof text);
    x->policy_refused = 1;
    snprintf(x->policy_msg, sizeof x->policy_msg, "connection to %s refused by policy (%s address)", text,
             class_name(cls));
    return 1;
}

/* Every new connection: the resolved address is judged before connect(). */
static curl_socket_t on_open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
    sd__xfer *x = ud;
    (void)purpose;
    const void *ip = a->family == AF_INET ? (const void *)&((struct sockaddr_in *)(void *)&a->addr)->sin_addr
                   : a->family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)(void *)&a->addr)->sin6_addr
                   : NULL;
    uint8_t none[16] = {0};
    if (address_refused(x, ip ? a->family : AF_UNSPEC, ip ? ip : none))
        return CURL_SOCKET_BAD;
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

#if LIBCURL_VERSION_NUM >= 0x075000
/* Every request, on a new or a reused connection (a reused one was opened
 * for another transfer, maybe under no policy). */
static int on_prereq(void *ud, char *primary_ip, char *local_ip, int primary_port, int local_port)
{
    sd__xfer *x = ud;
    (void)local_ip, (void)primary_port, (void)local_port;
    uint8_t addr[16];
    int family = AF_UNSPEC;
    if (inet_pton(AF_INET, primary_ip, addr) == 1)
        family = AF_INET;
    else if (inet_pton(AF_INET6, primary_ip, addr) == 1)
        family = AF_INET6;
    if (family == AF_UNSPEC)
        return CURL_PREREQFUNC_OK; /* file:, or a Unix socket: no address */
    return address_refused(x, family, addr) ? CURL_PREREQFUNC_ABORT : CURL_PREREQFUNC_OK;
}
#endif

static size_t on_write(char *p, size_t size, size_t n, void *ud)
{
    sd__xfer *x = ud;
    size_t len = size * n;
    if (x->req->params[SD_REQ_IDLE_TIMEOUT_MS] > 0)
        x->last_byte_ms = sd__now_ms();
    if (check_response(NULL, x) != 0)
        return 0; /* abort: CURLE_WRITE_ERROR, mapped from abort_status */
    if (x->job && sd__job_rejected(x->job)) {
        /* not an image: read no further (curl reads a file:// body in one
         * go, so without this /dev/zero-like input ran to the size limit);
         * the job's result, with the decoder's reason, completes us */
        x->rejected = 1;
        return 0;
    }
    if (over_max(x, x->len + len))
        return 0;
    if (x->len + len > x->cap) {
        int64_t max = x->req->params[SD_REQ_MAX_BYTES];
        size_t cap = SD__MAX(x->cap * 2, x->len + len);
        if (x->resp->expected > cap && (max <= 0 || x->resp->expected <= (uint64_t)max))
            cap = (size_t)x->resp->expected; /* one allocation when the length is known */
        cap = SD__MAX(cap, 16384);
        /* recycled buffers: a fresh one per transfer costs a fault per page */
        size_t got;
        uint8_t *nb = sd__body_alloc(cap, &got);
        if (nb == NULL) {
            x->abort_status = SD_ENOMEM;
            return 0;
        }
        if (x->len)
            memcpy(nb, x->body, x->len);
        sd__body_free(x->body, x->cap);
        x->body = nb;
        x->cap = got;
    }
    memcpy(x->body + x->len, p, len);
    x->len += len;
    if (x->job && sd__job_push(x->job, (const uint8_t *)p, len) != SD_OK) {
        x->abort_status = SD_ENOMEM;
        return 0;
    }
    if (x->ev.progress) {
        int64_t now = sd__now_ms();
        if (now - x->last_progress_ms >= x->req->params[SD_REQ_PROGRESS_INTERVAL_MS]) {
            x->last_progress_ms = now;
            x->ev.progress(x->id, x->len, x->resp->expected, x->user);
        }
    }
    return len;
}

/* ---- starting a transfer ---- */

static int map_curl(CURLcode c)
{
    switch (c) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY: return SD_ERESOLVE;
    case CURLE_COULDNT_CONNECT: return SD_ECONNECT;
    case CURLE_OPERATION_TIMEDOUT: return SD_ETIMEDOUT;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_USE_SSL_FAILED: return SD_ETLS;
    case CURLE_TOO_MANY_REDIRECTS: return SD_EREDIRECT;
    case CURLE_FILESIZE_EXCEEDED: return SD_ETOOBIG;
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2_STREAM: return SD_EBODY;
    case CURLE_UNSUPPORTED_PROTOCOL: return SD_ESCHEME;
    case CURLE_URL_MALFORMAT: return SD_EURL;
    case CURLE_WEIRD_SERVER_REPLY: return SD_EPROTOCOL;
    case CURLE_FILE_COULDNT_READ_FILE:
    case CURLE_READ_ERROR: return SD_EIO;
    case CURLE_OUT_OF_MEMORY: return SD_ENOMEM;
    default: return SD_ENETWORK;
    }
}

static int add_header(struct curl_slist **h, const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 3;
    char stack[512], *line = n <= sizeof stack ? stack : malloc(n); /* long validators are not cut */
    SD__RETURN_IF(line == NULL, SD_ENOMEM);
    size_t nl = strlen(name);
    memcpy(line, name, nl);
    memcpy(line + nl, ": ", 2);
    memcpy(line + nl + 2, value, n - nl - 2); /* with the NUL */
    struct curl_slist *l = curl_slist_append(*h, line);
    if (line != stack)
        free(line);
    SD__RETURN_IF(l == NULL, SD_ENOMEM);
    *h = l;
    return SD_OK;
}

/* A default header is dropped when the caller gave one of the same name. */
static int has_custom(const sd_request *r, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < r->nheaders; i++)
        if (strncasecmp(r->headers[i], name, n) == 0 && r->headers[i][n] == ':')
            return 1;
    return 0;
}

/* A file:// URL must name a regular file: curl's open() of a FIFO blocks the
 * loop thread until a writer comes (no timeout fires, cancel and free hang),
 * and a device reads forever. The file is opened here without blocking,
 * checked, and curl reads that same open file through /proc/self/fd/N, so it
 * cannot be swapped for a FIFO between the check and the read. */
static int open_file_url(sd__xfer *x, char *url_out, size_t url_cap, char *msg, size_t msg_cap)
{
    CURLU *u = curl_url();
    char *path = NULL;
    SD__RETURN_IF(u == NULL, SD_ENOMEM);
    int rc = SD_OK;
    if (curl_url_set(u, CURLUPART_URL, x->req->url, 0) != CURLUE_OK
        || curl_url_get(u, CURLUPART_PATH, &path, CURLU_URLDECODE) != CURLUE_OK || path == NULL || *path != '/') {
        snprintf(msg, msg_cap, "malformed file URL");
        rc = SD_EURL;
    }
    int fd = rc == SD_OK ? open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY) : -1;
    struct stat st;
    if (rc == SD_OK && (fd < 0 || fstat(fd, &st) != 0)) {
        snprintf(msg, msg_cap, "cannot open %s: %s", path, strerror(errno));
        rc = SD_EIO;
    } else if (rc == SD_OK && !S_ISREG(st.st_mode)) {
        snprintf(msg, msg_cap, "%s is not a regular file (%s)", path,
                 S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO"
                 : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : S_ISSOCK(st.st_mode) ? "a socket" : "special");
        rc = SD_ENOTFILE;
    } else if (rc == SD_OK && x->req->params[SD_REQ_MAX_BYTES] > 0 && st.st_size > x->req->params[SD_REQ_MAX_BYTES]) {
        snprintf(msg, msg_cap, "%s is %lld bytes, over the %lld-byte limit", path, (long long)st.st_size,
                 (long long)x->req->params[SD_REQ_MAX_BYTES]);
        rc = SD_ETOOBIG;
    }
    if (rc == SD_OK) {
        x->file_fd = fd;
        snprintf(url_out, url_cap, "file:///proc/self/fd/%d", fd);
        if (access(url_out + 7, R_OK) != 0) /* no /proc: the checked path itself */
            snprintf(url_out, url_cap, "%s", x->req->url);
    } else if (fd >= 0) {
        close(fd);
    }
    curl_free(path);
    curl_url_cleanup(u);
    return rc;
}

static int setup_easy(sd_loop *l, sd__xfer *x, char *msg, size_t msg_cap)
{
    const sd_request *r = x->req;
    const int64_t *p = r->params;
    char file_url[64];
    const char *url = r->url;
    SD__FORWARD_IF_ERROR(sd__policy_check_url(r, url, NULL, msg, msg_cap));
    if (strncasecmp(url, "file:", 5) == 0) {
        SD__FORWARD_IF_ERROR(open_file_url(x, file_url, sizeof file_url, msg, msg_cap));
        if (x->file_fd >= 0 && strncmp(file_url, "file:///proc/", 13) == 0)
            url = file_url;
    }
    CURL *e = l->nspare ? l->spare[--l->nspare] : curl_easy_init();
    SD__RETURN_IF(e == NULL, SD_ENOMEM);
    x->easy = e;
    x->resp = sd__response_new();
    SD__RETURN_IF(x->resp == NULL, SD_ENOMEM);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    /* curl's 16 KiB default means a recv() and a write callback per 16 KiB
     * of a photo of hundreds; 128 KiB cut the loop's CPU per image by ~35%
     * over loopback (sdcore-bench fetch); 512 KiB was slower again at 32
     * transfers (16 MiB of buffers fall out of cache) */
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE, (long)l->recv_buffer_now);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
    if (p[SD_REQ_IDLE_TIMEOUT_MS] > 0) {
        x->last_byte_ms = 0;
        curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_xferinfo);
        curl_easy_setopt(e, CURLOPT_XFERINFODATA, x);
        curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    }
    if (p[SD_REQ_BLOCK_ADDRESSES]) {
        curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
        curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, x);
#if LIBCURL_VERSION_NUM >= 0x075000
        curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq);
        curl_easy_setopt(e, CURLOPT_PREREQDATA, x);
#endif
    }
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https,file");
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, p[SD_REQ_MAX_REDIRECTS] > 0 ? 1L : 0L);
    curl_easy_setopt(e, CURLOPT_MAXREDIRS, (long)p[SD_REQ_MAX_REDIRECTS]);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)p[SD_REQ_TIMEOUT_MS]);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)p[SD_REQ_CONNECT_TIMEOUT_MS]);
    if (p[SD_REQ_LOW_SPEED_TIME_MS] > 0) {
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, (long)SD__MAX(1, p[SD_REQ_LOW_SPEED_BYTES]));
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)((p[SD_REQ_LOW_SPEED_TIME_MS] + 999) / 1000));
    }
    if (p[SD_REQ_MAX_BYTES] > 0)
        curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)p[SD_REQ_MAX_BYTES]);
    if (p[SD_REQ_ALLOW_INVALID_CERTS]) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (r->strings[SD_REQ_CA_FILE])
        curl_easy_setopt(e, CURLOPT_CAINFO, r->strings[SD_REQ_CA_FILE]);
    /* h2c prior knowledge is broken for reused connections in 7.88 (curl
     * issue 10634): HTTP/2 only over TLS, where ALPN negotiates it. */
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
                     p[SD_REQ_HTTP2] ? (long)CURL_HTTP_VERSION_2TLS : (long)CURL_HTTP_VERSION_1_1);
    /* waiting to multiplex only pays where HTTP/2 can happen */
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, p[SD_REQ_HTTP2] && strncasecmp(r->url, "https:", 6) == 0 ? 1L : 0L);
    curl_easy_setopt(e, CURLOPT_USERAGENT,
                     r->strings[SD_REQ_USER_AGENT] ? r->strings[SD_REQ_USER_AGENT] : l->user_agent);
    if (r->strings[SD_REQ_USERNAME]) {
        curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(e, CURLOPT_USERNAME, r->strings[SD_REQ_USERNAME]);
        curl_easy_setopt(e, CURLOPT_PASSWORD, r->strings[SD_REQ_PASSWORD] ? r->strings[SD_REQ_PASSWORD] : "");
    }
    if (p[SD_REQ_COOKIES]) {
        curl_easy_setopt(e, CURLOPT_COOKIEFILE, ""); /* engine on, in memory */
        curl_easy_setopt(e, CURLOPT_SHARE, l->share);
    }
    int rc = SD_OK;
    if (!has_custom(r, "Accept"))
        rc = add_header(&x->hdrs, "Accept", r->strings[SD_REQ_ACCEPT] ? r->strings[SD_REQ_ACCEPT] : SD_DEFAULT_ACCEPT);
    if (rc == SD_OK && r->strings[SD_REQ_IF_NONE_MATCH])
        rc = add_header(&x->hdrs, "If-None-Match", r->strings[SD_REQ_IF_NONE_MATCH]);
    if (rc == SD_OK && r->strings[SD_REQ_IF_MODIFIED_SINCE])
        rc = add_header(&x->hdrs, "If-Modified-Since", r->strings[SD_REQ_IF_MODIFIED_SINCE]);
    if (rc == SD_OK && r->resume_len > 0) {
        char from[32];
        snprintf(from, sizeof from, "bytes=%zu-", r->resume_len);
        rc = add_header(&x->hdrs, "Range", from);
        if (rc == SD_OK)
            rc = add_header(&x->hdrs, "If-Range", r->resume_validator);
    }
    for (int i = 0; rc == SD_OK && i < r->nheaders; i++) {
        struct curl_slist *n = curl_slist_append(x->hdrs, r->headers[i]);
        if (n == NULL)
            rc = SD_ENOMEM;
        else
            x->hdrs = n;
    }
    SD__FORWARD_IF_ERROR(rc);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->hdrs);
    return SD_OK;
}

static void on_job_preview(void *ctx, uint64_t id, sd_bitmap *bitmap);
static void on_job_done(void *ctx, uint64_t id, sd__job_result *result);

static void start_one(sd_loop *l, sd__xfer *x)
{
    q_unlink(l, x);
    x->state = XF_RUNNING;
    x->t_start = ms_now();
    x->metrics[SD_METRIC_QUEUED_MS] = x->t_start - x->t_submit;
    char msg[300] = "";
    int rc = setup_easy(l, x, msg, sizeof msg);
    if (rc == SD_OK && x->req->params[SD_REQ_DECODE]) {
        sd__job_options o = x->req->dec;
        o.previews = x->req->params[SD_REQ_PREVIEWS] && x->ev.preview;
        o.preview_interval_ms = x->req->params[SD_REQ_PREVIEW_INTERVAL_MS];
        sd__job_sink sink = {on_job_preview, on_job_done, l};
        rc = sd__job_new(l->pool, x->id, &o, &sink, &x->job);
    }
    if (rc == SD_OK && curl_multi_add_handle(l->multi, x->easy) != CURLM_OK)
        rc = SD_ENOMEM;
    if (rc != SD_OK) {
        if (x->easy) {
            recycle_easy(l, x->easy, x->req->params[SD_REQ_COOKIES] != 0);
            x->easy = NULL;
        }
        complete(l, x, rc, msg[0] ? msg : "could not start the transfer", NULL);
        return;
    }
    l->running++;
}

static void start_queued(sd_loop *l, int64_t max, int64_t order, int64_t suspended, int64_t backlog)
{
    while (!suspended && l->running < max && l->queued > 0) {
        sd__xfer *x = NULL;
        for (int p = 2; p >= 0 && x == NULL; p--)
            x = order == SD_ORDER_LIFO ? l->qtail[p] : l->qhead[p];
        if (x == NULL)
            break;
        /* bodies waiting for the decoders are memory and cold cache: do not
         * fetch further ahead than the decoders can use */
        if (x->req->params[SD_REQ_DECODE] && l->decoding + l->running >= backlog + max)
            break;
        start_one(l, x);
    }
}

static void collect_metrics(sd__xfer *x)
{
    curl_off_t v;
    long lv;
    if (curl_easy_getinfo(x->easy, CURLINFO_NAMELOOKUP_TIME_T, &v) == CURLE_OK)
        x->metrics[SD_METRIC_DNS_MS] = (double)v / 1e3;
    if (curl_easy_getinfo(x->easy, CURLINFO_CONNECT_TIME_T, &v) == CURLE_OK)
        x->metrics[SD_METRIC_CONNECT_MS] = (double)v / 1e3;
    if (curl_easy_getinfo(x->easy, CURLINFO_APPCONNECT_TIME_T, &v) == CURLE_OK)
        x->metrics[SD_METRIC_TLS_MS] = (double)v / 1e3;
    if (curl_easy_getinfo(x->easy, CURLINFO_STARTTRANSFER_TIME_T, &v) == CURLE_OK)
        x->metrics[SD_METRIC_FIRST_BYTE_MS] = (double)v / 1e3;
    if (curl_easy_getinfo(x->easy, CURLINFO_TOTAL_TIME_T, &v) == CURLE_OK)
        x->metrics[SD_METRIC_TOTAL_MS] = (double)v / 1e3;
    x->metrics[SD_METRIC_BYTES] = (double)x->len - x->metrics[SD_METRIC_RESUMED_BYTES]; /* from the network */
    if (curl_easy_getinfo(x->easy, CURLINFO_HTTP_VERSION, &lv) == CURLE_OK)
        x->metrics[SD_METRIC_HTTP_VERSION] = lv == CURL_HTTP_VERSION_2_0 ? 20
                                           : lv == CURL_HTTP_VERSION_1_1 ? 11
                                           : lv == CURL_HTTP_VERSION_1_0 ? 10 : 0;
    if (curl_easy_getinfo(x->easy, CURLINFO_REDIRECT_COUNT, &lv) == CURLE_OK)
        x->metrics[SD_METRIC_REDIRECTS] = (double)lv;
    if (curl_easy_getinfo(x->easy, CURLINFO_NUM_CONNECTS, &lv) == CURLE_OK)
        x->metrics[SD_METRIC_CONNECTIONS] = (double)lv;
}

/* curl finished a transfer: error now, or hand the end of input to the job. */
static void on_curl_done(sd_loop *l, sd__xfer *x, CURLcode code)
{
    collect_metrics(x);
    int status = SD_OK;
    const char *msg = NULL;
    if (x->rejected) {
        /* stopped reading because the decoder refused the bytes: the job's
         * result (queued or on its way) completes us with its reason */
    } else if (x->policy_refused && code != CURLE_OK) {
        status = SD_EPOLICY;
        msg = x->policy_msg;
    } else if (x->abort_status) {
        status = x->abort_status;
        msg = x->abort_msg;
    } else if (code != CURLE_OK) {
        status = map_curl(code);
        msg = x->errbuf[0] ? x->errbuf : curl_easy_strerror(code);
        /* curl says "unsupported protocol" both for a scheme it may not use
         * and for a reply that is no HTTP status line (HTTP/0.9) */
        if (code == CURLE_UNSUPPORTED_PROTOCOL && strstr(x->errbuf, "HTTP/0.9"))
            status = SD_EPROTOCOL;
        /* curl 7.88 reports a header line over its 100 KiB limit as "out of
         * memory" with no detail: a request that went out and got no usable
         * head back is the server's fault, not ours */
        long sent = 0;
        curl_easy_getinfo(x->easy, CURLINFO_REQUEST_SIZE, &sent);
        if (code == CURLE_OUT_OF_MEMORY && sent > 0 && !x->resp_checked && !x->errbuf[0]) {
            status = SD_EPROTOCOL;
            msg = "response header too large (a line over 100 KiB)";
        }
    } else if (check_response(l, x) != 0) { /* a body-less response */
        status = x->abort_status;
        msg = x->abort_msg;
    }
    if (status == SD_OK && !x->rejected && x->ev.progress)
        x->ev.progress(x->id, x->len, x->resp->expected, x->user); /* the final call */
    if (status != SD_OK || x->job == NULL) {
        complete(l, x, status, msg, NULL);
        return;
    }
    curl_multi_remove_handle(l->multi, x->easy);
    recycle_easy(l, x->easy, x->req->params[SD_REQ_COOKIES] != 0);
    x->easy = NULL;
    l->running--;
    x->state = XF_DECODING;
    l->decoding++;
    sd__job_finish(x->job); /* the pool holds it now; its result completes us */
    x->job = NULL;
}

static void read_done(sd_loop *l)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(l->multi, &left)) != NULL) {
        if (m->msg != CURLMSG_DONE)
            continue;
        sd__xfer *x = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        if (x)
            on_curl_done(l, x, m->data.result);
    }
}

/* ---- worker results (posted from worker threads) ---- */

/* Called with l->mu held after queueing something for the loop: one wakeup
 * per batch is enough, since the loop takes the whole inbox at once (a burst
 * of submits or worker results would otherwise write the eventfd and wake
 * the loop once per item). */
static int needs_wake(sd_loop *l)
{
    if (l->wake_pending)
        return 0;
    l->wake_pending = 1;
    return 1;
}

static void on_job_preview(void *ctx, uint64_t id, sd_bitmap *bitmap)
{
    sd_loop *l = ctx;
    sd__preview *e = calloc(1, sizeof *e);
    if (e == NULL) {
        sd_bitmap_free(bitmap); /* a preview may be skipped; the result may not */
        return;
    }
    e->id = id;
    e->bitmap = bitmap;
    pthread_mutex_lock(&l->mu);
    if (l->pv_tail)
        l->pv_tail->next = e;
    else
        l->pv_head = e;
    l->pv_tail = e;
    int wake = needs_wake(l);
    pthread_mutex_unlock(&l->mu);
    if (wake)
        curl_multi_wakeup(l->multi);
}

static void on_job_done(void *ctx, uint64_t id, sd__job_result *r)
{
    sd_loop *l = ctx;
    (void)id; /* r->id */
    r->next = NULL;
    pthread_mutex_lock(&l->mu);
    if (l->dn_tail)
        l->dn_tail->next = r;
    else
        l->dn_head = r;
    l->dn_tail = r;
    int wake = needs_wake(l);
    pthread_mutex_unlock(&l->mu);
    if (wake)
        curl_multi_wakeup(l->multi);
}

static void free_result(sd__job_result *r)
{
    sd_bitmap_free(r->bitmap);
    free(r);
}

static void handle_preview(sd_loop *l, sd__preview *e)
{
    sd__xfer *x = table_get(l, e->id, NULL);
    if (x && x->ev.preview && (x->state == XF_RUNNING || x->state == XF_DECODING)) {
        x->ev.preview(x->id, e->bitmap, x->user);
        e->bitmap = NULL;
    }
    sd_bitmap_free(e->bitmap); /* completed or cancelled meanwhile */
    free(e);
}

static void handle_done(sd_loop *l, sd__job_result *r)
{
    sd__xfer *x = table_get(l, r->id, NULL);
    if (x != NULL) {
        if (r->status == SD_OK) {
            complete(l, x, SD_OK, NULL, r);
        } else {
            /* undecodable: stop downloading too (an HTML page, a bad file) */
            char msg[300];
            snprintf(msg, sizeof msg, "%s", r->message[0] ? r->message : sd_strerror(r->status));
            complete(l, x, SD_EDECODE, msg, r);
        }
    }
    free_result(r);
}

/* ---- commands ---- */

static void cancel_all(sd_loop *l, int status)
{
    for (size_t i = 0; i < l->tcap; i++) {
        sd__xfer *x = l->table[i];
        if (x && x != SD__TOMB)
            complete(l, x, status, status == SD_ECANCELLED ? "cancelled" : NULL, NULL);
    }
}

static void handle_command(sd_loop *l, sd__cmd *c)
{
    sd__xfer *x;
    switch (c->type) {
    case CMD_SUBMIT:
        x = c->x;
        x->state = XF_QUEUED;
        if (table_put(l, x) != SD_OK) {
            q_insert(l, x); /* so complete() can unlink it */
            complete(l, x, SD_ENOMEM, NULL, NULL);
            break;
        }
        q_insert(l, x);
        break;
    case CMD_CANCEL:
        if ((x = table_get(l, c->id, NULL)) != NULL)
            complete(l, x, SD_ECANCELLED, "cancelled", NULL);
        break;
    case CMD_PRIORITY:
        if ((x = table_get(l, c->id, NULL)) != NULL && x->state == XF_QUEUED) {
            q_unlink(l, x);
            x->priority = (int)c->value;
            q_insert(l, x);
        }
        break;
    case CMD_CANCEL_ALL:
        cancel_all(l, SD_ECANCELLED);
        break;
    }
}

static void loop_destroy(sd_loop *l);

static void *loop_main(void *arg)
{
    sd_loop *l = arg;
    pthread_setname_np(pthread_self(), "sd-loop"); /* shows in perf, top, gdb */
    sd__cmd *batch = NULL;
    int cap = 0;
    for (;;) {
        pthread_mutex_lock(&l->mu);
        l->wake_pending = 0; /* we take everything queued so far */
        int n = l->ncmds;
        if (n > cap) {
            sd__cmd *nb = realloc(batch, sizeof *nb * (size_t)n);
            if (nb) {
                batch = nb;
                cap = n;
            } else {
                n = cap; /* take what fits; the rest waits a turn */
            }
        }
        if (n)
            memcpy(batch, l->cmds, sizeof *batch * (size_t)n);
        if (l->ncmds > n)
            memmove(l->cmds, l->cmds + n, sizeof *l->cmds * (size_t)(l->ncmds - n));
        l->ncmds -= n;
        int leftover = l->ncmds > 0;
        for (int i = 0; i < n; i++)
            if (batch[i].type == CMD_SUBMIT)
                l->pending_submits--;
        sd__preview *previews = l->pv_head;
        sd__job_result *done = l->dn_head;
        l->pv_head = l->pv_tail = NULL;
        l->dn_head = l->dn_tail = NULL;
        int stopping = l->shutting_down;
        int64_t max = l->max_concurrent, order = l->order, suspended = l->suspended;
        l->recv_buffer_now = l->recv_buffer;
        int64_t max_host = l->max_host;
        int64_t backlog = l->max_backlog ? l->max_backlog : 4 * l->decode_threads;
        pthread_mutex_unlock(&l->mu);
        if (leftover)
            curl_multi_wakeup(l->multi); /* the rest next turn, without sleeping */

        for (int i = 0; i < n; i++)
            handle_command(l, &batch[i]);
        while (previews) {
            sd__preview *next = previews->next;
            handle_preview(l, previews);
            previews = next;
        }
        while (done) {
            sd__job_result *next = done->next;
            handle_done(l, done);
            done = next;
        }
        if (stopping) {
            pthread_mutex_lock(&l->mu);
            int more = l->ncmds > 0;
            pthread_mutex_unlock(&l->mu);
            if (more)
                continue; /* submits accepted before shutdown still complete once */
            cancel_all(l, SD_ECANCELLED);
            break;
        }
        if (max_host != l->max_host_applied) { /* the multi is ours alone: set it here */
            curl_multi_setopt(l->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)max_host);
            l->max_host_applied = max_host;
        }
        start_queued(l, max, order, suspended, backlog);
        int still = 0;
        curl_multi_perform(l->multi, &still);
        int before = l->running;
        read_done(l);

        pthread_mutex_lock(&l->mu);
        l->pub_queued = l->queued;
        l->pub_running = l->running;
        pthread_mutex_unlock(&l->mu);

        if (l->running < before && l->queued > 0 && !suspended)
            continue; /* a slot opened: fill it before sleeping */
        curl_multi_poll(l->multi, NULL, 0, 1000, NULL);
    }
    free(batch);
    pthread_mutex_lock(&l->mu);
    l->pub_queued = l->pub_running = 0;
    int self_free = l->self_free;
    pthread_mutex_unlock(&l->mu);
    if (self_free) {
        pthread_detach(pthread_self()); /* nobody joins us */
        loop_destroy(l);
    }
    return NULL;
}

/* ---- public API ---- */

int sd_loop_new(sd_loop **out)
{
    SD__RETURN_IF(out == NULL, SD_EINVAL);
    *out = NULL;
    pthread_once(&curl_once, curl_init_once);
    sd_loop *l = calloc(1, sizeof *l);
    SD__RETURN_IF(l == NULL, SD_ENOMEM);
    pthread_mutex_init(&l->mu, NULL);
    l->max_concurrent = SD_DEFAULT_MAX_CONCURRENT;
    l->recv_buffer = l->recv_buffer_now = SD_DEFAULT_RECEIVE_BUFFER;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    l->decode_threads = cores > 0 ? cores : 2;
    l->multi = curl_multi_init();
    l->share = curl_share_init();
    l->spare = calloc(SD__SPARE_EASY, sizeof *l->spare);
    if (l->multi == NULL || l->share == NULL || l->spare == NULL) {
        sd_loop_free(l);
        return SD_ENOMEM;
    }
    /* all handles live on the loop thread: the share needs no locks */
    curl_share_setopt(l->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_COOKIE);
    curl_multi_setopt(l->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    snprintf(l->user_agent, sizeof l->user_agent, "SDWebImage-Linux/%s libcurl/%s",
             sd_version_string(), curl_version_info(CURLVERSION_NOW)->version);
    *out = l;
    return SD_OK;
}

int sd_loop_set(sd_loop *l, sd_loop_param p, int64_t v)
{
    SD__RETURN_IF(l == NULL || v < 0, SD_EINVAL);
    int rc = SD_OK;
    pthread_mutex_lock(&l->mu);
    switch (p) {
    case SD_LOOP_MAX_CONCURRENT: if (v < 1) rc = SD_EINVAL; else l->max_concurrent = v; break;
    case SD_LOOP_ORDER: if (v > 1) rc = SD_EINVAL; else l->order = v; break;
    case SD_LOOP_SUSPENDED: l->suspended = v != 0; break;
    case SD_LOOP_MAX_DECODE_BACKLOG: if (v < 1) rc = SD_EINVAL; else l->max_backlog = v; break;
    case SD_LOOP_RECEIVE_BUFFER:
        if (v < 1024 || v > 1048576) rc = SD_EINVAL;
        else l->recv_buffer = v;
        break;
    case SD_LOOP_MAX_HOST_CONNECTIONS: if (v > 100000) rc = SD_EINVAL; else l->max_host = v; break;
    case SD_LOOP_DECODE_THREADS:
        if (l->started) rc = SD_EBADSTATE;
        else if (v < 1 || v > 256) rc = SD_EINVAL;
        else l->decode_threads = v;
        break;
    default: rc = SD_EINVAL; break;
    }
    int started = l->started;
    pthread_mutex_unlock(&l->mu);
    if (rc == SD_OK && started)
        curl_multi_wakeup(l->multi);
    return rc;
}

int sd_loop_get(sd_loop *l, sd_loop_param p, int64_t *v)
{
    SD__RETURN_IF(l == NULL || v == NULL, SD_EINVAL);
    int rc = SD_OK;
    pthread_mutex_lock(&l->mu);
    switch (p) {
    case SD_LOOP_MAX_CONCURRENT: *v = l->max_concurrent; break;
    case SD_LOOP_ORDER: *v = l->order; break;
    case SD_LOOP_SUSPENDED: *v = l->suspended; break;
    case SD_LOOP_MAX_DECODE_BACKLOG: *v = l->max_backlog ? l->max_backlog : 4 * l->decode_threads; break;
    case SD_LOOP_DECODE_THREADS: *v = l->decode_threads; break;
    case SD_LOOP_RECEIVE_BUFFER: *v = l->recv_buffer; break;
    case SD_LOOP_MAX_HOST_CONNECTIONS: *v = l->max_host; break;
    case SD_LOOP_INFO_QUEUED: *v = l->pub_queued + l->pending_submits; break;
    case SD_LOOP_INFO_RUNNING: *v = l->pub_running; break;
    default: rc = SD_EINVAL; break;
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}

int sd_loop_start(sd_loop *l)
{
    SD__RETURN_IF(l == NULL, SD_EINVAL);
    pthread_mutex_lock(&l->mu);
    int bad = l->started || l->shutting_down;
    int threads = (int)l->decode_threads;
    pthread_mutex_unlock(&l->mu);
    SD__RETURN_IF(bad, SD_EBADSTATE);
    SD__FORWARD_IF_ERROR(sd__pool_new(threads, &l->pool));
    if (pthread_create(&l->thread, NULL, loop_main, l) != 0) {
        sd__pool_free(l->pool);
        l->pool = NULL;
        return SD_ENOMEM;
    }
    pthread_mutex_lock(&l->mu);
    l->started = 1;
    pthread_mutex_unlock(&l->mu);
    return SD_OK;
}

static int push_cmd(sd_loop *l, sd__cmd c, sd_transfer_id *new_id)
{
    pthread_mutex_lock(&l->mu);
    if (!l->started || l->shutting_down) {
        int rc = l->shutting_down ? SD_ESHUTDOWN : SD_EBADSTATE;
        pthread_mutex_unlock(&l->mu);
        return rc;
    }
    if (l->ncmds == l->capcmds) {
        int cap = l->capcmds ? l->capcmds * 2 : 64;
        sd__cmd *n = realloc(l->cmds, sizeof *n * (size_t)cap);
        if (n == NULL) {
            pthread_mutex_unlock(&l->mu);
            return SD_ENOMEM;
        }
        l->cmds = n;
        l->capcmds = cap;
    }
    if (c.type == CMD_SUBMIT) {
        c.x->id = c.id = ++l->next_id;
        l->pending_submits++;
        if (new_id)
            *new_id = c.id; /* before the loop can run (and free) it */
    }
    l->cmds[l->ncmds++] = c;
    int wake = needs_wake(l);
    pthread_mutex_unlock(&l->mu);
    if (wake)
        curl_multi_wakeup(l->multi);
    return SD_OK;
}

int sd_loop_submit(sd_loop *l, const sd_request *req, const sd_transfer_events *ev, void *user,
                   sd_transfer_id *id)
{
    SD__RETURN_IF(l == NULL || req == NULL || ev == NULL, SD_EINVAL);
    sd__xfer *x = calloc(1, sizeof *x);
    SD__RETURN_IF(x == NULL, SD_ENOMEM);
    x->file_fd = -1;
    int rc = sd__request_copy(req, &x->req);
    if (rc != SD_OK) {
        free(x);
        return rc;
    }
    x->ev = *ev;
    x->user = user;
    x->priority = (int)req->params[SD_REQ_PRIORITY];
    x->t_submit = ms_now();
    sd__cmd c = {CMD_SUBMIT, 0, 0, x};
    sd_transfer_id assigned = 0;
    rc = push_cmd(l, c, &assigned);
    if (rc != SD_OK) {
        xfer_free(x);
        return rc;
    }
    if (id)
        *id = assigned;
    return SD_OK;
}

int sd_loop_cancel(sd_loop *l, sd_transfer_id id)
{
    SD__RETURN_IF(l == NULL || id == 0, SD_EINVAL);
    sd__cmd c = {CMD_CANCEL, id, 0, NULL};
    return push_cmd(l, c, NULL);
}

int sd_loop_set_priority(sd_loop *l, sd_transfer_id id, sd_priority priority)
{
    SD__RETURN_IF(l == NULL || id == 0, SD_EINVAL);
    SD__RETURN_IF(priority < SD_PRIORITY_LOW || priority > SD_PRIORITY_HIGH, SD_EINVAL);
    sd__cmd c = {CMD_PRIORITY, id, priority, NULL};
    return push_cmd(l, c, NULL);
}

int sd_loop_cancel_all(sd_loop *l)
{
    SD__RETURN_IF(l == NULL, SD_EINVAL);
    sd__cmd c = {CMD_CANCEL_ALL, 0, 0, NULL};
    return push_cmd(l, c, NULL);
}

void sd_loop_free(sd_loop *l)
{
    if (l == NULL)
        return;
    pthread_mutex_lock(&l->mu);
    int started = l->started;
    int on_loop = started && pthread_equal(pthread_self(), l->thread);
    if (on_loop && (l->shutting_down || l->self_free)) {
        pthread_mutex_unlock(&l->mu); /* already going away */
        return;
    }
    l->shutting_down = 1;
    l->self_free = on_loop;
    pthread_mutex_unlock(&l->mu);
    if (on_loop)
        return; /* from a callback: the loop finishes the shutdown and frees itself */
    if (started) {
        curl_multi_wakeup(l->multi);
        pthread_join(l->thread, NULL);
    }
    loop_destroy(l);
}

/* Everything but the thread, which has ended (or is the caller, about to). */
static void loop_destroy(sd_loop *l)
{
    sd__pool_free(l->pool); /* workers finish the chunk in hand, then stop */
    for (sd__preview *e = l->pv_head, *n; e; e = n) {
        n = e->next;
        sd_bitmap_free(e->bitmap);
        free(e);
    }
    for (sd__job_result *r = l->dn_head, *n; r; r = n) {
        n = r->next;
        free_result(r);
    }
    for (int i = 0; i < l->nspare; i++)
        curl_easy_cleanup(l->spare[i]);
    if (l->multi)
        curl_multi_cleanup(l->multi);
    if (l->share)
        curl_share_cleanup(l->share);
    free(l->spare);
    free(l->table);
    free(l->cmds);
    pthread_mutex_destroy(&l->mu);
    free(l);
}
