/* sd_xfer.c — transfers on the loop thread: the id table, the queues per
 * priority, starting, curl's end of a transfer, and completion. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "loop/sd_loop_int.h"

#define SD__TOMB ((sd__xfer *)(uintptr_t)1)

/* ---- id table ---- */

static size_t slot_of(uint64_t id, size_t cap) { return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1); }

int sd__table_put(sd_loop *l, sd__xfer *x)
{
    if ((l->tcount + l->ttomb + 1) * 2 > l->tcap) {
        size_t ncap = l->tcap ? l->tcap : 64;
        while ((l->tcount + 1) * 4 > ncap)
            ncap *= 2;
        if (ncap == l->tcap && l->ttomb == 0)
            ncap *= 2;
        sd__xfer **nt = sd__calloc(ncap, sizeof *nt);
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
        sd__free(l->table);
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

static sd__xfer *table_find(sd_loop *l, uint64_t id, size_t *where)
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

sd__xfer *sd__table_get(sd_loop *l, sd_transfer_id id) { return table_find(l, id, NULL); }

static void table_del(sd_loop *l, uint64_t id)
{
    size_t s;
    if (table_find(l, id, &s)) {
        l->table[s] = SD__TOMB;
        l->tcount--;
        l->ttomb++;
    }
}

/* ---- queue (per priority, kept in submission order) ---- */

void sd__queue_unlink(sd_loop *l, sd__xfer *x)
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

void sd__queue_insert(sd_loop *l, sd__xfer *x)
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

void sd__xfer_free(sd__xfer *x)
{
    if (x->file_fd >= 0)
        close(x->file_fd);
    sd_request_free(x->req);
    curl_slist_free_all(x->hdrs);
    sd__response_free(x->resp);
    sd__body_free(x->body, x->cap);
    sd__port_unref(x->port);
    sd_result_free(x->result);
    sd__free(x);
}

void sd__complete(sd_loop *l, sd__xfer *x, int status, const char *msg, sd_sink_port *done)
{
    if (x->state == XF_QUEUED)
        sd__queue_unlink(l, x);
    /* The sink's done while bytes were still coming (or refused): with
     * SD_OK, its output is complete without the rest (SD_DEC_END_WHEN_
     * SETTLED), and the body is a prefix of the file. */
    int early = done != NULL && status == SD_OK && (x->easy != NULL || x->rejected);
    if (early && x->easy)
        sd__easy_metrics(x);
    if (x->easy) {
        curl_multi_remove_handle(l->multi, x->easy);
        sd__easy_recycle(l, x->easy, x->req->params[SD_REQ_COOKIES] != 0);
        x->easy = NULL;
        l->running--;
    }
    if (x->state == XF_SINKING)
        l->sinking--;
    if (x->sink_state) { /* opened, never finished: stop it */
        x->sink->abort(x->sink_state);
        x->sink_state = NULL;
    }
    table_del(l, x->id);
    if (status != SD_OK && status != SD_ECANCELLED && status != SD_ENOTMODIFIED) {
        sd_log_level level = status == SD_ENOMEM ? SD_LOG_WARNING : status == SD_EPOLICY ? SD_LOG_INFO : SD_LOG_DEBUG;
        if (sd__log_enabled(level)) {
            char shown[1024]; /* logs never carry credentials (sd_redact_url) */
            sd_redact_url(x->req->url, shown, sizeof shown);
            sd__log(level, "transfer %llu (%s) failed: %s: %s", (unsigned long long)x->id, shown,
                    sd_strerror(status), msg && *msg ? msg : "-");
        }
    }
    sd_result *r = x->result; /* allocated at submit: every transfer gets its end */
    x->result = NULL;
    {
        r->status = status;
        snprintf(r->message, sizeof r->message, "%s", msg && *msg ? msg : sd_strerror(status));
        r->response = x->resp;
        x->resp = NULL;
        r->body = x->body;
        r->body_len = x->len;
        r->body_cap = x->cap;
        x->body = NULL;
        memcpy(r->metrics, x->metrics, sizeof r->metrics);
        if (early && (r->response == NULL || r->response->expected == 0 || r->body_len < r->response->expected))
            r->metrics[SD_METRIC_ENDED_EARLY] = 1;
        if (done) {
            r->output = done->output;
            r->output_free = done->output_free;
            done->output = NULL;
            r->metrics[SD_METRIC_SINK_MS] = done->work_ms;
        }
    }
    if (x->ev.complete)
        x->ev.complete(x->id, r, x->user);
    else
        sd_result_free(r);
    sd__xfer_free(x);
}

void sd__cancel_all(sd_loop *l, int status)
{
    for (size_t i = 0; i < l->tcap; i++) {
        sd__xfer *x = l->table[i];
        if (x && x != SD__TOMB)
            sd__complete(l, x, status, status == SD_ECANCELLED ? "cancelled" : NULL, NULL);
    }
}

/* ---- starting ---- */

/* The sink this transfer's body goes to, if any. */
static const sd_body_sink *sink_of(sd_loop *l, const sd_request *r, void **ctx)
{
    if (!r->params[SD_REQ_USE_SINK])
        return NULL;
    if (r->has_sink) {
        *ctx = r->sink_ctx;
        return &r->sink;
    }
    *ctx = l->sink_ctx;
    return l->has_sink ? &l->sink : NULL;
}

static int open_sink(sd_loop *l, sd__xfer *x)
{
    void *ctx = NULL;
    const sd_body_sink *s = sink_of(l, x->req, &ctx);
    if (s == NULL)
        return SD_OK;
    x->port = sd__port_new(l->inbox, x->id, x->ev.partial != NULL);
    SD__RETURN_IF(x->port == NULL, SD_ENOMEM);
    void *state = NULL;
    int rc = s->open(ctx, x->req, x->port, &state);
    if (rc != SD_OK) {
        sd__port_unref(x->port); /* the sink's reference: it never took it */
        return rc;
    }
    x->sink = s;
    x->sink_state = state;
    return SD_OK;
}

static void start_one(sd_loop *l, sd__xfer *x)
{
    sd__queue_unlink(l, x);
    x->state = XF_RUNNING;
    x->t_start = sd__now_msf();
    x->metrics[SD_METRIC_QUEUED_MS] = x->t_start - x->t_submit;
    char msg[300] = "";
    int rc = sd__easy_setup(l, x, msg, sizeof msg);
    if (rc == SD_OK)
        rc = open_sink(l, x);
    if (rc == SD_OK && curl_multi_add_handle(l->multi, x->easy) != CURLM_OK)
        rc = SD_ENOMEM;
    if (rc != SD_OK) {
        if (x->easy) {
            sd__easy_recycle(l, x->easy, x->req->params[SD_REQ_COOKIES] != 0);
            x->easy = NULL;
        }
        sd__complete(l, x, rc, msg[0] ? msg : "could not start the transfer", NULL);
        return;
    }
    l->running++;
}

void sd__start_queued(sd_loop *l, int64_t max, int64_t order, int64_t suspended, int64_t backlog)
{
    while (!suspended && l->running < max && l->queued > 0) {
        sd__xfer *x = NULL;
        for (int p = SD__NPRIORITIES - 1; p >= 0 && x == NULL; p--)
            x = order == SD_ORDER_LIFO ? l->qtail[p] : l->qhead[p];
        if (x == NULL)
            break;
        /* bodies waiting for their sink are memory and cold cache: do not
         * fetch further ahead than the sinks can use */
        void *ctx;
        if (sink_of(l, x->req, &ctx) && l->sinking + l->running >= backlog + max)
            break;
        start_one(l, x);
    }
}

/* ---- the end of curl's part ---- */

static void on_curl_done(sd_loop *l, sd__xfer *x, CURLcode code)
{
    sd__easy_metrics(x);
    const char *msg = NULL;
    int status = x->rejected ? SD_OK : sd__easy_status(x, code, &msg);
    if (status == SD_OK && !x->rejected && x->ev.progress)
        x->ev.progress(x->id, x->len, x->resp->expected, x->user); /* the final call */
    if (status != SD_OK || x->port == NULL) {
        sd__complete(l, x, status, msg, NULL);
        return;
    }
    curl_multi_remove_handle(l->multi, x->easy);
    sd__easy_recycle(l, x->easy, x->req->params[SD_REQ_COOKIES] != 0);
    x->easy = NULL;
    l->running--;
    x->state = XF_SINKING;
    l->sinking++;
    if (x->rejected)
        return; /* the sink refused the bytes: its done (queued or on its way) completes us */
    void *state = x->sink_state;
    x->sink_state = NULL; /* the sink's from here on */
    x->sink->finish(state);
}

void sd__read_done(sd_loop *l)
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
