/* sd_easy.c — one curl easy handle: its setup from a request, the curl
 * callbacks (headers, body, idle watchdog, address policy), the mapping of
 * curl's errors to sd_status, and the metrics. Loop thread only. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "loop/sd_loop_int.h"

/* Keep a finished handle for the next transfer (curl_easy_reset keeps the
 * connection and DNS caches of the multi). A handle that had the cookie
 * engine on is not kept: curl_easy_reset leaves it attached to the share's
 * cookie jar, so a later transfer that never asked for cookies would send
 * them. */
void sd__easy_recycle(sd_loop *l, CURL *e, int used_cookies)
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
    if (x->sink_state && (x->abort_status = x->sink->push(x->sink_state, r->resume, r->resume_len)) != SD_OK)
        return x->abort_status;
    return 0;
}

/* Headers are complete: record them, check status and type, tell the caller. */
int sd__check_response(sd__xfer *x)
{
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
    sd__free(x->resp->content_type);
    sd__free(x->resp->effective_url);
    x->resp->content_type = ct ? sd__strdup(ct) : NULL;
    /* a file:// transfer reads /proc/self/fd/N: report the URL asked for */
    x->resp->effective_url = x->file_fd >= 0 ? sd__strdup(x->req->url) : url ? sd__strdup(url) : NULL;
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
    if (x->last_byte_ms == 0 || x->paused)
        x->last_byte_ms = now; /* the clock starts with the transfer; waiting on our sink is not idle */
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


static size_t on_write(char *p, size_t size, size_t n, void *ud)
{
    sd__xfer *x = ud;
    size_t len = size * n;
    if (x->req->params[SD_REQ_IDLE_TIMEOUT_MS] > 0)
        x->last_byte_ms = sd__now_ms();
    if (sd__check_response(x) != 0)
        return 0; /* abort: CURLE_WRITE_ERROR, mapped from abort_status */
    if (x->sink_state && x->sink->room) {
        int64_t room = x->sink->room(x->sink_state);
        if (room < 0) {
            /* refused (not an image): read no further (curl reads a file://
             * body in one go, so without this /dev/zero-like input ran to
             * the size limit); the sink's done, with its reason, completes us */
            x->rejected = 1;
            return 0;
        }
        if (room == 0) {
            x->paused = 1; /* curl keeps these bytes until the port's resume */
            return CURL_WRITEFUNC_PAUSE;
        }
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
    if (x->sink_state && (x->abort_status = x->sink->push(x->sink_state, (const uint8_t *)p, len)) != SD_OK)
        return 0;
    if (x->ev.progress) {
        int64_t now = sd__now_ms();
        if (now - x->last_progress_ms >= x->req->params[SD_REQ_PROGRESS_INTERVAL_MS]) {
            x->last_progress_ms = now;
            x->ev.progress(x->id, x->len, x->resp->expected, x->user);
        }
    }
    return len;
}

/* ---- errors and metrics ---- */

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
    char stack[512], *line = n <= sizeof stack ? stack : sd__malloc(n); /* long validators are not cut */
    SD__RETURN_IF(line == NULL, SD_ENOMEM);
    size_t nl = strlen(name);
    memcpy(line, name, nl);
    memcpy(line + nl, ": ", 2);
    memcpy(line + nl + 2, value, n - nl - 2); /* with the NUL */
    struct curl_slist *l = curl_slist_append(*h, line);
    if (line != stack)
        sd__free(line);
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

int sd__easy_setup(sd_loop *l, sd__xfer *x, char *msg, size_t msg_cap)
{
    const sd_request *r = x->req;
    const int64_t *p = r->params;
    char file_url[64];
    const char *url = r->url;
    SD__FORWARD_IF_ERROR(sd__policy_check_url(r, url, NULL, msg, msg_cap));
    if (strncasecmp(url, "file:", 5) == 0) {
        SD__FORWARD_IF_ERROR(sd__file_open(x, file_url, sizeof file_url, msg, msg_cap));
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
    if (p[SD_REQ_BLOCK_ADDRESSES])
        sd__policy_watch_addresses(x, e);
    if (r->strings[SD_REQ_PROXY]) {
        curl_easy_setopt(e, CURLOPT_PROXY, r->strings[SD_REQ_PROXY]);
        if (p[SD_REQ_BLOCK_ADDRESSES]) /* all through the proxy: what the policy judges */
            curl_easy_setopt(e, CURLOPT_NOPROXY, "");
    } else if (p[SD_REQ_BLOCK_ADDRESSES]) {
        /* an environment's proxy would hide the destination from the rule */
        curl_easy_setopt(e, CURLOPT_PROXY, "");
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

void sd__easy_metrics(sd__xfer *x)
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
    x->metrics[SD_METRIC_FULL_LENGTH] = (double)x->resp->expected;
    if (curl_easy_getinfo(x->easy, CURLINFO_HTTP_VERSION, &lv) == CURLE_OK)
        x->metrics[SD_METRIC_HTTP_VERSION] = lv == CURL_HTTP_VERSION_2_0 ? 20
                                           : lv == CURL_HTTP_VERSION_1_1 ? 11
                                           : lv == CURL_HTTP_VERSION_1_0 ? 10 : 0;
    if (curl_easy_getinfo(x->easy, CURLINFO_REDIRECT_COUNT, &lv) == CURLE_OK)
        x->metrics[SD_METRIC_REDIRECTS] = (double)lv;
    if (curl_easy_getinfo(x->easy, CURLINFO_NUM_CONNECTS, &lv) == CURLE_OK)
        x->metrics[SD_METRIC_CONNECTIONS] = (double)lv;
}

/* The transfer's status once curl is done with it (SD_OK: body complete). */
int sd__easy_status(sd__xfer *x, CURLcode code, const char **msg)
{
    int status = SD_OK;
    if (x->policy_refused && code != CURLE_OK) {
        status = SD_EPOLICY;
        *msg = x->policy_msg;
    } else if (x->abort_status) {
        status = x->abort_status;
        *msg = x->abort_msg;
    } else if (code != CURLE_OK) {
        status = map_curl(code);
        *msg = x->errbuf[0] ? x->errbuf : curl_easy_strerror(code);
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
            *msg = "response header too large (a line over 100 KiB)";
        }
    } else if (sd__check_response(x) != 0) { /* a body-less response */
        status = x->abort_status;
        *msg = x->abort_msg;
    }
    return status;
}
