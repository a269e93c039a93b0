/*
 * sd_loop.c — one thread owns the CURLM and every easy handle (curl's rule).
 * Other threads talk to it through a mutex-protected command queue plus
 * curl_multi_wakeup(); body sinks hand their results back through the
 * inbox the same way (sd_inbox.c), delivered here to their transfers. The loop: commands -> sink messages ->
 * start queued transfers -> perform -> info_read -> poll. It never sleeps
 * while work is ready: a finished transfer that frees a slot loops again
 * without polling.
 *
 * The loop moves bytes, never pixels: bodies go to a body sink, and what the
 * sink makes of them comes back opaque, only forwarded to the callbacks.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "loop/sd_loop_int.h"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

/* ---- what the sinks posted, to the transfers (loop thread) ---- */

static void deliver_inbox(sd_loop *l)
{
    sd__inbox *in = l->inbox;
    pthread_mutex_lock(&in->mu);
    in->wake_pending = 0;
    sd__partial *pv = in->pv_head;
    sd_sink_port *dn = in->dn_head, *rs = in->rs_head;
    in->pv_head = in->pv_tail = NULL;
    in->dn_head = in->dn_tail = in->rs_head = in->rs_tail = NULL;
    for (sd_sink_port *p = rs; p; p = p->next_resume)
        p->resume_queued = 0;
    pthread_mutex_unlock(&in->mu);

    for (sd__partial *n; pv; pv = n) {
        n = pv->next;
        sd__xfer *x = sd__table_get(l, pv->id);
        if (x && x->ev.partial && (x->state == XF_RUNNING || x->state == XF_SINKING)) {
            if (x->relay)
                sd__relay_partial(x->relay, x->id, pv->item, pv->item_free);
            else
                x->ev.partial(x->id, pv->item, x->user);
        } else if (pv->item_free) {
            pv->item_free(pv->item); /* completed or cancelled meanwhile */
        }
        sd__free(pv);
    }
    for (sd_sink_port *n; rs; rs = n) {
        n = rs->next_resume;
        sd__xfer *x = sd__table_get(l, rs->id);
        if (x && x->port == rs && x->paused && x->easy) {
            x->paused = 0;
            x->last_byte_ms = sd__now_ms();
            curl_easy_pause(x->easy, CURLPAUSE_CONT); /* may deliver the held bytes now */
        }
        sd__port_unref(rs);
    }
    for (sd_sink_port *n; dn; dn = n) {
        n = dn->next_done;
        sd__xfer *x = sd__table_get(l, dn->id);
        if (x && x->port == dn) /* the sink's end is the transfer's (an early one stops the download too) */
            sd__complete(l, x, dn->status, dn->message, dn);
        sd__port_unref(dn);
    }
}

/* ---- commands (loop thread) ---- */

static void handle_command(sd_loop *l, sd__cmd *c)
{
    sd__xfer *x;
    switch (c->type) {
    case CMD_SUBMIT:
        x = c->x;
        x->state = XF_QUEUED;
        if (sd__table_put(l, x) != SD_OK) {
            sd__queue_insert(l, x); /* so complete() can unlink it */
            sd__complete(l, x, SD_ENOMEM, NULL, NULL);
            break;
        }
        sd__queue_insert(l, x);
        break;
    case CMD_CANCEL:
        if ((x = sd__table_get(l, c->id)) != NULL)
            sd__complete(l, x, SD_ECANCELLED, "cancelled", NULL);
        break;
    case CMD_PRIORITY:
        if ((x = sd__table_get(l, c->id)) != NULL && x->state == XF_QUEUED) {
            sd__queue_unlink(l, x);
            x->priority = (int)c->value;
            sd__queue_insert(l, x);
        }
        break;
    case CMD_CANCEL_ALL:
        sd__cancel_all(l, SD_ECANCELLED);
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
            sd__cmd *nb = sd__realloc(batch, sizeof *nb * (size_t)n);
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
            if (batch[i].type == CMD_SUBMIT) {
                l->pending_submits--;
                l->pub_queued++; /* counted as queued until the turn publishes its counts */
            }
        int stopping = l->shutting_down;
        int64_t max = l->max_concurrent, order = l->order, suspended = l->suspended;
        l->recv_buffer_now = l->recv_buffer;
        int64_t max_host = l->max_host;
        int64_t backlog = l->max_backlog ? l->max_backlog : l->default_backlog;
        pthread_mutex_unlock(&l->mu);
        if (leftover)
            curl_multi_wakeup(l->multi); /* the rest next turn, without sleeping */

        for (int i = 0; i < n; i++)
            handle_command(l, &batch[i]);
        deliver_inbox(l);
        if (stopping) {
            pthread_mutex_lock(&l->mu);
            int more = l->ncmds > 0;
            pthread_mutex_unlock(&l->mu);
            if (more)
                continue; /* submits accepted before shutdown still complete once */
            sd__cancel_all(l, SD_ECANCELLED);
            break;
        }
        if (max_host != l->max_host_applied) { /* the multi is ours alone: set it here */
            curl_multi_setopt(l->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)max_host);
            l->max_host_applied = max_host;
        }
        sd__start_queued(l, max, order, suspended, backlog);
        int still = 0;
        CURLMcode mc = curl_multi_perform(l->multi, &still);
        if (mc != CURLM_OK)
            sd__log(SD_LOG_ERROR, "loop: curl_multi_perform: %s", curl_multi_strerror(mc));
        int before = l->running;
        sd__read_done(l);

        pthread_mutex_lock(&l->mu);
        l->pub_queued = l->queued;
        l->pub_running = l->running;
        pthread_mutex_unlock(&l->mu);

        if (l->running < before && l->queued > 0 && !suspended)
            continue; /* a slot opened: fill it before sleeping */
        mc = curl_multi_poll(l->multi, NULL, 0, 1000, NULL);
        if (mc != CURLM_OK)
            sd__log(SD_LOG_ERROR, "loop: curl_multi_poll: %s", curl_multi_strerror(mc));
    }
    sd__free(batch);
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
    sd_loop *l = sd__calloc(1, sizeof *l);
    SD__RETURN_IF(l == NULL, SD_ENOMEM);
    pthread_mutex_init(&l->mu, NULL);
    l->max_concurrent = SD_DEFAULT_MAX_CONCURRENT;
    l->recv_buffer = l->recv_buffer_now = SD_DEFAULT_RECEIVE_BUFFER;
    l->default_backlog = 4 * sd__cpu_count(); /* a few bodies per core */
    l->multi = curl_multi_init();
    l->share = curl_share_init();
    l->spare = sd__calloc(SD__SPARE_EASY, sizeof *l->spare);
    l->inbox = l->multi ? sd__inbox_new(l->multi) : NULL;
    if (l->multi == NULL || l->share == NULL || l->spare == NULL || l->inbox == NULL) {
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
    case SD_LOOP_MAX_SINK_BACKLOG: if (v < 1) rc = SD_EINVAL; else l->max_backlog = v; break;
    case SD_LOOP_RECEIVE_BUFFER:
        if (v < 1024 || v > 1048576) rc = SD_EINVAL;
        else l->recv_buffer = v;
        break;
    case SD_LOOP_MAX_HOST_CONNECTIONS: if (v > 100000) rc = SD_EINVAL; else l->max_host = v; break;
    case SD_LOOP_DISPATCH:
        if (v > 1)
            rc = SD_EINVAL;
        else if (l->started || l->shutting_down)
            rc = SD_EBADSTATE;
        else if (v == 1 && l->outbox == NULL && (l->outbox = sd__outbox_new()) == NULL)
            rc = SD_ENOMEM;
        else if (v == 0) {
            sd__outbox_free(l->outbox);
            l->outbox = NULL;
        }
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
    case SD_LOOP_MAX_SINK_BACKLOG: *v = l->max_backlog ? l->max_backlog : l->default_backlog; break;
    case SD_LOOP_RECEIVE_BUFFER: *v = l->recv_buffer; break;
    case SD_LOOP_MAX_HOST_CONNECTIONS: *v = l->max_host; break;
    case SD_LOOP_DISPATCH: *v = l->outbox != NULL; break;
    case SD_LOOP_INFO_QUEUED: *v = l->pub_queued + l->pending_submits; break;
    case SD_LOOP_INFO_RUNNING: *v = l->pub_running; break;
    default: rc = SD_EINVAL; break;
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}

int sd_loop_set_body_sink(sd_loop *l, const sd_body_sink *sink, void *ctx)
{
    SD__RETURN_IF(l == NULL || sink == NULL, SD_EINVAL);
    sd_body_sink copy;
    SD__FORWARD_IF_ERROR(sd__body_sink_copy(&copy, sink));
    pthread_mutex_lock(&l->mu);
    int bad = l->started || l->shutting_down || l->has_sink;
    if (!bad) {
        l->sink = copy;
        l->sink_ctx = ctx;
        l->has_sink = 1;
    }
    pthread_mutex_unlock(&l->mu);
    return bad ? SD_EBADSTATE : SD_OK;
}

int sd_loop_body_sink(sd_loop *l, sd_body_sink *sink, void **ctx)
{
    SD__RETURN_IF(l == NULL || sink == NULL || ctx == NULL || sink->size < SD__SIZE_THROUGH(sd_body_sink, release),
                  SD_EINVAL);
    pthread_mutex_lock(&l->mu);
    const int has = l->has_sink;
    sd_body_sink copy = l->sink;
    void *c = l->sink_ctx;
    pthread_mutex_unlock(&l->mu);
    SD__RETURN_IF(!has, SD_EAGAIN);
    const size_t theirs = sink->size, n = SD__MIN(theirs, sizeof copy);
    memset(sink, 0, theirs); /* newer headers: members we do not have are NULL */
    memcpy(sink, &copy, n);
    sink->size = theirs;
    *ctx = c;
    return SD_OK;
}

void sd__loop_default_backlog(sd_loop *l, int64_t backlog)
{
    pthread_mutex_lock(&l->mu);
    l->default_backlog = SD__MAX(1, backlog);
    pthread_mutex_unlock(&l->mu);
}

int sd_loop_start(sd_loop *l)
{
    SD__RETURN_IF(l == NULL, SD_EINVAL);
    pthread_mutex_lock(&l->mu);
    int bad = l->started || l->shutting_down;
    pthread_mutex_unlock(&l->mu);
    SD__RETURN_IF(bad, SD_EBADSTATE);
    SD__RETURN_IF(pthread_create(&l->thread, NULL, loop_main, l) != 0, SD_ENOMEM);
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
        sd__cmd *n = sd__realloc(l->cmds, sizeof *n * (size_t)cap);
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
    int wake = sd__needs_wake(&l->wake_pending);
    pthread_mutex_unlock(&l->mu);
    if (wake)
        curl_multi_wakeup(l->multi);
    return SD_OK;
}

int sd_loop_submit(sd_loop *l, const sd_request *req, const sd_transfer_events *ev, void *user,
                   sd_transfer_id *id)
{
    SD__RETURN_IF(l == NULL || req == NULL || ev == NULL, SD_EINVAL);
    sd_transfer_events events;
    SD__FORWARD_IF_ERROR(sd__copy_sized(&events, sizeof events, ev, SD__SIZE_THROUGH(sd_transfer_events, complete)));
    sd__xfer *x = sd__calloc(1, sizeof *x);
    SD__RETURN_IF(x == NULL, SD_ENOMEM);
    x->file_fd = -1;
    x->result = sd__calloc(1, sizeof *x->result);
    int rc = x->result ? sd__request_copy(req, &x->req) : SD_ENOMEM;
    if (rc != SD_OK) {
        sd__free(x->result);
        sd__free(x);
        return rc;
    }
    x->ev = events;
    x->user = user;
    pthread_mutex_lock(&l->mu);
    sd__outbox *ob = l->outbox; /* fixed once started */
    pthread_mutex_unlock(&l->mu);
    if (ob && (rc = sd__relay_attach(ob, x)) != SD_OK) {
        sd__xfer_free(x);
        return rc;
    }
    x->priority = (int)req->params[SD_REQ_PRIORITY];
    x->t_submit = sd__now_msf();
    sd__cmd c = {CMD_SUBMIT, 0, 0, x};
    sd_transfer_id assigned = 0;
    rc = push_cmd(l, c, &assigned);
    if (rc != SD_OK) {
        sd__relay_free(x->relay);
        sd__xfer_free(x);
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
    if (l->outbox && sd__outbox_on_runner(l->outbox)) {
        l->free_deferred = 1; /* from a dispatched callback: sd_loop_dispatch frees it on return */
        return;
    }
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
    if (l->outbox) /* every transfer has completed: their callbacks run here (rule 4) */
        while (sd__outbox_run(l->outbox, 0, NULL) > 0) {
        }
    loop_destroy(l);
}

/* ---- dispatch mode ---- */

int sd_loop_dispatch_fd(sd_loop *l, int *fd)
{
    SD__RETURN_IF(l == NULL || fd == NULL, SD_EINVAL);
    SD__RETURN_IF(l->outbox == NULL, SD_EBADSTATE);
    *fd = sd__outbox_fd(l->outbox);
    return SD_OK;
}

int sd_loop_dispatch(sd_loop *l, int max)
{
    SD__RETURN_IF(l == NULL || max < 0, SD_EINVAL);
    SD__RETURN_IF(l->outbox == NULL, SD_EBADSTATE);
    int ran = sd__outbox_run(l->outbox, max, &l->free_deferred);
    if (l->free_deferred) {
        l->free_deferred = 0;
        sd_loop_free(l); /* not on the runner any more: the full shutdown */
        return SD_ESHUTDOWN;
    }
    return ran;
}

int sd_loop_wait(sd_loop *l, int timeout_ms)
{
    SD__RETURN_IF(l == NULL, SD_EINVAL);
    SD__RETURN_IF(l->outbox == NULL, SD_EBADSTATE);
    return sd__outbox_wait(l->outbox, timeout_ms < 0 ? -1 : timeout_ms);
}

/* Everything but the thread, which has ended (or is the caller, about to). */
static void loop_destroy(sd_loop *l)
{
    /* the sink's threads end first (the decode sink: its workers finish the
     * piece in hand), so nothing posts to the inbox while it closes */
    if (l->has_sink && l->sink.release)
        l->sink.release(l->sink_ctx);
    if (l->inbox)
        sd__inbox_close(l->inbox);
    sd__outbox_free(l->outbox);
    for (int i = 0; i < l->nspare; i++)
        curl_easy_cleanup(l->spare[i]);
    if (l->multi)
        curl_multi_cleanup(l->multi);
    if (l->share)
        curl_share_cleanup(l->share);
    sd__free(l->spare);
    sd__free(l->table);
    sd__free(l->cmds);
    pthread_mutex_destroy(&l->mu);
    sd__free(l);
}
