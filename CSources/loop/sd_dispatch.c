/*
 * sd_dispatch.c — dispatch mode (SD_LOOP_DISPATCH): a transfer's callbacks
 * run on the thread that calls sd_loop_dispatch instead of the loop thread,
 * for programs that own a main loop (GLib, SDL, libuv, epoll).
 *
 * Each transfer gets a relay whose callbacks the loop thread calls as
 * before; they queue deliveries in the outbox, whose eventfd stays readable
 * while anything is queued. A relay embeds one delivery per kind, so the
 * loop thread allocates nothing but a copy of the response: a progress or a
 * preview not yet dispatched is replaced by the newer one (a main loop that
 * falls behind sees the latest state, not a backlog), and the complete can
 * always be queued. Within a transfer the order is kept: response, progress
 * and previews as they came, complete last.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "loop/sd_loop_int.h"

enum { DL_RESPONSE, DL_PROGRESS, DL_PARTIAL, DL_COMPLETE, DL_KINDS };

typedef struct sd__delivery {
    struct sd__delivery *next;
    sd__relay *relay;
    int kind;
    int queued; /* in the outbox's list; under its mu */
} sd__delivery;

struct sd__relay {
    sd__outbox *ob;
    sd_transfer_id id;     /* set by the first callback (ids come after attach) */
    sd_transfer_events ev; /* the caller's */
    void *user;
    sd__delivery slot[DL_KINDS];
    /* what the queued slots carry; under ob->mu */
    sd_response *response;
    uint64_t received, expected;
    void *partial;
    void (*partial_free)(void *);
    sd_result *result;
};

struct sd__outbox {
    pthread_mutex_t mu;
    int fd;       /* eventfd: readable while `head` is not empty */
    int signaled; /* the eventfd holds a count; under mu */
    sd__delivery *head, *tail;
    /* the thread running callbacks now (sd__outbox_run), if any */
    pthread_t runner;
    int running;
};

sd__outbox *sd__outbox_new(void)
{
    sd__outbox *ob = sd__calloc(1, sizeof *ob);
    if (ob == NULL)
        return NULL;
    ob->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ob->fd < 0) {
        sd__free(ob);
        return NULL;
    }
    pthread_mutex_init(&ob->mu, NULL);
    return ob;
}

void sd__outbox_free(sd__outbox *ob)
{
    if (ob == NULL)
        return;
    /* sd_loop_free ran everything; this is for a loop that never started */
    for (sd__delivery *d = ob->head, *n; d; d = n) {
        n = d->next;
        sd__relay *r = d->relay;
        if (d->kind == DL_RESPONSE)
            sd__response_free(r->response);
        else if (d->kind == DL_PARTIAL && r->partial_free)
            r->partial_free(r->partial);
        else if (d->kind == DL_COMPLETE) {
            sd_result_free(r->result);
            sd__free(r);
        }
    }
    close(ob->fd);
    pthread_mutex_destroy(&ob->mu);
    sd__free(ob);
}

int sd__outbox_fd(const sd__outbox *ob) { return ob->fd; }

static void enqueue(sd__outbox *ob, sd__delivery *d) /* under mu */
{
    if (d->queued)
        return; /* already waiting: it will carry the newest values */
    d->queued = 1;
    d->next = NULL;
    if (ob->tail)
        ob->tail->next = d;
    else
        ob->head = d;
    ob->tail = d;
    if (!ob->signaled) {
        uint64_t one = 1;
        ob->signaled = write(ob->fd, &one, sizeof one) == (ssize_t)sizeof one;
    }
}

/* ---- the relay's callbacks (loop thread) ---- */

static void relay_response(sd_transfer_id id, const sd_response *resp, void *user)
{
    sd__relay *r = user;
    sd_response *copy = sd__response_copy(resp); /* the loop's is valid during this call only */
    if (copy == NULL) {
        sd__log(SD_LOG_WARNING, "loop: out of memory: a response callback was dropped");
        return;
    }
    pthread_mutex_lock(&r->ob->mu);
    r->id = id;
    sd__response_free(r->response); /* a second response replaces a first not yet dispatched */
    r->response = copy;
    enqueue(r->ob, &r->slot[DL_RESPONSE]);
    pthread_mutex_unlock(&r->ob->mu);
}

static void relay_progress(sd_transfer_id id, uint64_t received, uint64_t expected, void *user)
{
    sd__relay *r = user;
    pthread_mutex_lock(&r->ob->mu);
    r->id = id;
    r->received = received;
    r->expected = expected;
    enqueue(r->ob, &r->slot[DL_PROGRESS]);
    pthread_mutex_unlock(&r->ob->mu);
}

static void relay_complete(sd_transfer_id id, sd_result *result, void *user)
{
    sd__relay *r = user;
    pthread_mutex_lock(&r->ob->mu);
    r->id = id;
    r->result = result;
    enqueue(r->ob, &r->slot[DL_COMPLETE]);
    pthread_mutex_unlock(&r->ob->mu);
}

/* Never called: sd_inbox.c hands partials to sd__relay_partial with their
 * destructor. Set so the sink knows the transfer wants partials. */
static void relay_partial_marker(sd_transfer_id id, void *item, void *user)
{
    (void)id;
    (void)item;
    (void)user;
}

void sd__relay_partial(sd__relay *r, sd_transfer_id id, void *item, void (*item_free)(void *))
{
    void *older = NULL;
    void (*older_free)(void *) = NULL;
    pthread_mutex_lock(&r->ob->mu);
    if (r->slot[DL_PARTIAL].queued) { /* not dispatched yet: the newer one wins */
        older = r->partial;
        older_free = r->partial_free;
    }
    r->id = id;
    r->partial = item;
    r->partial_free = item_free;
    enqueue(r->ob, &r->slot[DL_PARTIAL]);
    pthread_mutex_unlock(&r->ob->mu);
    if (older && older_free)
        older_free(older);
}

int sd__relay_attach(sd__outbox *ob, sd__xfer *x)
{
    sd__relay *r = sd__calloc(1, sizeof *r);
    SD__RETURN_IF(r == NULL, SD_ENOMEM);
    r->ob = ob;
    r->ev = x->ev;
    r->user = x->user;
    for (int k = 0; k < DL_KINDS; k++) {
        r->slot[k].relay = r;
        r->slot[k].kind = k;
    }
    sd_transfer_events ev = SD_TRANSFER_EVENTS_INIT;
    ev.response = r->ev.response ? relay_response : NULL;
    ev.progress = r->ev.progress ? relay_progress : NULL;
    ev.partial = r->ev.partial ? relay_partial_marker : NULL;
    ev.complete = relay_complete; /* always: the relay is freed after it */
    x->ev = ev;
    x->user = r;
    x->relay = r;
    return SD_OK;
}

void sd__relay_free(sd__relay *r) { sd__free(r); } /* one whose transfer was never accepted */

/* ---- running them (the caller's thread) ---- */

int sd__outbox_on_runner(sd__outbox *ob)
{
    pthread_mutex_lock(&ob->mu);
    int yes = ob->running && pthread_equal(ob->runner, pthread_self());
    pthread_mutex_unlock(&ob->mu);
    return yes;
}

int sd__outbox_run(sd__outbox *ob, int max, const int *stop)
{
    pthread_mutex_lock(&ob->mu);
    if (ob->running) {
        pthread_mutex_unlock(&ob->mu);
        return SD_EBADSTATE; /* from a callback, or two threads at once */
    }
    ob->running = 1;
    ob->runner = pthread_self();
    int pending = 0; /* what is queued now: later arrivals wait for the next call */
    for (sd__delivery *d = ob->head; d; d = d->next)
        pending++;
    if (max > 0 && max < pending)
        pending = max;
    int ran = 0;
    while (ran < pending && ob->head && !(stop && *stop)) {
        sd__delivery *d = ob->head;
        ob->head = d->next;
        if (ob->head == NULL) {
            ob->tail = NULL;
            uint64_t count;
            if (ob->signaled && read(ob->fd, &count, sizeof count) < 0 && errno != EAGAIN)
                sd__log(SD_LOG_ERROR, "loop: reading the dispatch eventfd: %s", strerror(errno));
            ob->signaled = 0;
        }
        d->queued = 0;
        sd__relay *r = d->relay;
        /* take what the slot carries while the lock is held: the loop
         * thread may queue the slot again as soon as it is released */
        sd_response *resp = NULL;
        uint64_t received = 0, expected = 0;
        void *partial = NULL;
        sd_result *result = NULL;
        switch (d->kind) {
        case DL_RESPONSE: resp = r->response; r->response = NULL; break;
        case DL_PROGRESS: received = r->received; expected = r->expected; break;
        case DL_PARTIAL: partial = r->partial; r->partial = NULL; break;
        default: result = r->result; r->result = NULL; break;
        }
        sd_transfer_id id = r->id;
        pthread_mutex_unlock(&ob->mu);
        switch (d->kind) {
        case DL_RESPONSE:
            r->ev.response(id, resp, r->user);
            sd__response_free(resp);
            break;
        case DL_PROGRESS: r->ev.progress(id, received, expected, r->user); break;
        case DL_PARTIAL: r->ev.partial(id, partial, r->user); break;
        default:
            if (r->ev.complete)
                r->ev.complete(id, result, r->user);
            else
                sd_result_free(result);
            sd__free(r); /* nothing of this transfer is queued after its complete */
            break;
        }
        ran++;
        pthread_mutex_lock(&ob->mu);
    }
    ob->running = 0;
    pthread_mutex_unlock(&ob->mu);
    return ran;
}

int sd__outbox_wait(sd__outbox *ob, int timeout_ms)
{
    struct pollfd p = {ob->fd, POLLIN, 0};
    int rc;
    do
        rc = poll(&p, 1, timeout_ms);
    while (rc < 0 && errno == EINTR);
    SD__RETURN_IF(rc < 0, SD_EIO);
    return rc == 0 ? SD_ETIMEDOUT : SD_OK;
}
