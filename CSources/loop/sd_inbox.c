/*
 * sd_inbox.c — what body sinks post back to the loop thread (partials,
 * resumes, dones) through their ports; the loop thread takes it in
 * (sd_loop.c: deliver_inbox), so ports know no transfer. Posting
 * never blocks the poster for long (one mutex, one coalesced wakeup), and a
 * done never fails: its memory is the port itself, queued intrusively.
 */
#include <stdio.h>
#include <string.h>

#include "loop/sd_loop_int.h"

/* Append `node` to the intrusive FIFO (head, tail) linked through `link`. */
#define SD__FIFO_PUSH(head, tail, node, link) \
    do {                                      \
        (node)->link = NULL;                  \
        if (tail)                             \
            (tail)->link = (node);            \
        else                                  \
            (head) = (node);                  \
        (tail) = (node);                      \
    } while (0)

int sd__needs_wake(int *wake_pending)
{
    if (*wake_pending)
        return 0;
    *wake_pending = 1;
    return 1;
}

sd__inbox *sd__inbox_new(CURLM *multi)
{
    sd__inbox *in = sd__calloc(1, sizeof *in);
    if (in == NULL)
        return NULL;
    pthread_mutex_init(&in->mu, NULL);
    in->refs = 1;
    in->multi = multi;
    return in;
}

static void inbox_unref_locked(sd__inbox *in, int *free_it)
{
    *free_it = --in->refs == 0;
}

static void inbox_free(sd__inbox *in)
{
    pthread_mutex_destroy(&in->mu);
    sd__free(in);
}

/* The port's memory goes with its last reference; it holds one on the inbox. */
static void port_unref_locked(sd_sink_port *p, int *free_port, int *free_inbox)
{
    *free_port = --p->refs == 0;
    *free_inbox = 0;
    if (*free_port)
        inbox_unref_locked(p->inbox, free_inbox);
}

static void port_free(sd_sink_port *p)
{
    if (p->output_free)
        p->output_free(p->output);
    sd__free(p);
}

void sd__port_unref(sd_sink_port *p)
{
    if (p == NULL)
        return;
    sd__inbox *in = p->inbox;
    int fp, fi;
    pthread_mutex_lock(&in->mu);
    port_unref_locked(p, &fp, &fi);
    pthread_mutex_unlock(&in->mu);
    if (fp)
        port_free(p);
    if (fi)
        inbox_free(in);
}

sd_sink_port *sd__port_new(sd__inbox *in, sd_transfer_id id, int wants_partials)
{
    sd_sink_port *p = sd__calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    p->inbox = in;
    p->id = id;
    p->wants_partials = wants_partials;
    p->refs = 2; /* the loop's and the sink's */
    pthread_mutex_lock(&in->mu);
    in->refs++;
    pthread_mutex_unlock(&in->mu);
    return p;
}

void sd__inbox_close(sd__inbox *in)
{
    pthread_mutex_lock(&in->mu);
    in->closed = 1;
    in->multi = NULL;
    sd__partial *pv = in->pv_head;
    sd_sink_port *dn = in->dn_head, *rs = in->rs_head;
    in->pv_head = in->pv_tail = NULL;
    in->dn_head = in->dn_tail = in->rs_head = in->rs_tail = NULL;
    pthread_mutex_unlock(&in->mu);
    for (sd__partial *n; pv; pv = n) {
        n = pv->next;
        if (pv->item_free)
            pv->item_free(pv->item);
        sd__free(pv);
    }
    for (sd_sink_port *n; dn; dn = n) {
        n = dn->next_done;
        sd__port_unref(dn);
    }
    for (sd_sink_port *n; rs; rs = n) {
        n = rs->next_resume;
        sd__port_unref(rs);
    }
    int fi;
    pthread_mutex_lock(&in->mu);
    inbox_unref_locked(in, &fi);
    pthread_mutex_unlock(&in->mu);
    if (fi)
        inbox_free(in);
}

/* ---- the port API (any thread) ---- */

int sd_sink_port_wants_partials(const sd_sink_port *p) { return p ? p->wants_partials : 0; }

void sd_sink_port_partial(sd_sink_port *p, void *item, void (*item_free)(void *))
{
    sd__partial *e = p ? sd__calloc(1, sizeof *e) : NULL;
    if (e == NULL) {
        if (item_free)
            item_free(item); /* a partial may be skipped; the end may not */
        return;
    }
    e->id = p->id;
    e->item = item;
    e->item_free = item_free;
    sd__inbox *in = p->inbox;
    pthread_mutex_lock(&in->mu);
    if (in->closed) {
        pthread_mutex_unlock(&in->mu);
        if (item_free)
            item_free(item);
        sd__free(e);
        return;
    }
    SD__FIFO_PUSH(in->pv_head, in->pv_tail, e, next);
    CURLM *wake = sd__needs_wake(&in->wake_pending) ? in->multi : NULL;
    if (wake)
        curl_multi_wakeup(wake); /* under mu: the multi lives while the inbox is open */
    pthread_mutex_unlock(&in->mu);
}

void sd_sink_port_resume(sd_sink_port *p)
{
    if (p == NULL)
        return;
    sd__inbox *in = p->inbox;
    pthread_mutex_lock(&in->mu);
    if (!in->closed && !p->resume_queued && !p->done) {
        p->resume_queued = 1;
        p->refs++;
        SD__FIFO_PUSH(in->rs_head, in->rs_tail, p, next_resume);
        if (sd__needs_wake(&in->wake_pending))
            curl_multi_wakeup(in->multi);
    }
    pthread_mutex_unlock(&in->mu);
}

void sd_sink_port_done(sd_sink_port *p, int status, const char *message, void *output,
                       void (*output_free)(void *), double work_ms)
{
    if (p == NULL) {
        if (output_free)
            output_free(output);
        return;
    }
    sd__inbox *in = p->inbox;
    pthread_mutex_lock(&in->mu);
    if (p->done) { /* at most once: a second one is dropped */
        pthread_mutex_unlock(&in->mu);
        if (output_free)
            output_free(output);
        return;
    }
    p->done = 1;
    p->status = status;
    snprintf(p->message, sizeof p->message, "%s", message ? message : "");
    p->output = output;
    p->output_free = output_free;
    p->work_ms = work_ms;
    if (!in->closed) {
        p->refs++;
        SD__FIFO_PUSH(in->dn_head, in->dn_tail, p, next_done);
        if (sd__needs_wake(&in->wake_pending))
            curl_multi_wakeup(in->multi);
    }
    pthread_mutex_unlock(&in->mu);
}

void sd_sink_port_release(sd_sink_port *p) { sd__port_unref(p); }
