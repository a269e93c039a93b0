/*
 * sd_decode_sink.c — decoding while streaming, as a body sink of the loop
 * (sd_decode_sink.h). Each transfer gets a job: the loop pushes body pieces
 * into its queue, and one worker at a time decodes them in order, keeping
 * one decoder hot in cache while more arrives. Results leave through the
 * job's port. This file is the bridge between loop and decode: the loop
 * itself never sees a decoder or a bitmap.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common/sd_internal.h"
#include "sdcore/sd_decode_sink.h"
#include "work/sd_work.h"

#define SD__JOB_INFO_COUNT (SD_DEC_INFO_SETTLE_BOUND - SD_DEC_INFO_FORMAT + 1)
/* Bytes queued for the decoder before the transfer is paused (back-pressure:
 * a decoder slower than the network does not buffer a 200 MiB body twice). */
#define SD__JOB_MAX_QUEUED ((size_t)32 << 20)

typedef struct {
    sd_bitmap *bitmap;
    int64_t info[SD__JOB_INFO_COUNT];
    uint8_t known[SD__JOB_INFO_COUNT];
    uint8_t *icc; /* the image's ICC profile (a copy), or NULL */
    size_t icc_len;
} sd__decode_output;

typedef struct sd__chunk {
    struct sd__chunk *next;
    size_t len;
    uint8_t data[];
} sd__chunk;

typedef struct {
    sd__work_pool *pool;
    pthread_mutex_t mu; /* guards every job's queue and flags */
} sd__dsink;

typedef struct sd__job {
    sd__task task; /* first: the worker gets the job back from it */
    sd__dsink *sink;
    sd_sink_port *port;
    /* guarded by sink->mu */
    sd__chunk *head, *tail;
    size_t queued;  /* written under mu; room() reads it without (atomic) */
    int said_full;  /* room() answered 0: resume the port when drained */
    int input_done; /* finish() was called */
    int abandoned;
    int scheduled;  /* posted to the pool or running */
    int refs;       /* the loop's + the pool's while scheduled */
    /* worker-only (one worker at a time) */
    sd_decoder *dec;
    int failed, done_sent;
    int rejected; /* atomic: set once by the worker, read by the loop (not an
                   * image, or settled early: read no more of the body) */
    int declined; /* atomic: the format is another decoder's (SD_DEC_FORMATS):
                   * set once by the worker; pushes are dropped, the body
                   * passes through, the done carries no bitmap */
    int previews;
    int end_early; /* SD_DEC_END_WHEN_SETTLED: done as soon as the decoder settles */
    int64_t preview_interval_ms, last_preview_ms, last_preview_mark;
    int framed;             /* SD_DEC_PREVIEW_FRAME_BYTES set: partials are sd_preview */
    int64_t frame_bytes;    /* of frames still to send */
    uint32_t frames_sent;   /* an animation's whole frames sent as partials */
    double decode_ms;
    sd__decode_output *out; /* preallocated: the end is never lost */
} sd__job;

static void output_free(void *p)
{
    sd__decode_output *o = p;
    if (o) {
        sd_bitmap_free(o->bitmap);
        sd__free(o->icc);
        sd__free(o);
    }
}

static void bitmap_free(void *p) { sd_bitmap_free(p); }

void sd_preview_free(sd_preview *p)
{
    if (p) {
        sd_bitmap_free(p->bitmap);
        sd__free(p);
    }
}

static void preview_free(void *p) { sd_preview_free(p); }

/* A partial: the bitmap, or an sd_preview around it (SD_DEC_PREVIEW_FRAME_BYTES). */
static void send_partial(sd__job *j, sd_bitmap *b, int64_t frame, int64_t ms, int64_t loops, int framed)
{
    if (!framed) {
        sd_sink_port_partial(j->port, b, bitmap_free);
        return;
    }
    sd_preview *p = sd__calloc(1, sizeof *p);
    if (p == NULL) { /* partials may be dropped */
        sd_bitmap_free(b);
        return;
    }
    int64_t format = SD_FORMAT_UNKNOWN;
    sd_decoder_get(j->dec, SD_DEC_INFO_FORMAT, &format);
    *p = (sd_preview){.bitmap = b, .frame = frame, .duration_ms = ms, .loop_count = loops, .format = format};
    sd_sink_port_partial(j->port, p, preview_free);
}

static void free_chunks(sd__chunk *c)
{
    while (c) {
        sd__chunk *n = c->next;
        sd__free(c);
        c = n;
    }
}

/* Drop one reference; the last one frees. Caller holds sink->mu. */
static void unref_locked(sd__job *j)
{
    if (--j->refs > 0)
        return;
    free_chunks(j->head);
    sd_decoder_free(j->dec);
    output_free(j->out);
    sd_sink_port_release(j->port);
    sd__free(j);
}

static void schedule_locked(sd__job *j)
{
    if (j->scheduled)
        return;
    j->scheduled = 1;
    j->refs++;
    sd__work_post(j->sink->pool, &j->task);
}

static void send_done(sd__job *j, int rc, sd_bitmap *bmp)
{
    sd__decode_output *o = j->out;
    j->out = NULL;
    o->bitmap = bmp;
    for (int k = 0; k < SD__JOB_INFO_COUNT; k++) {
        int64_t v;
        if (sd_decoder_get(j->dec, (sd_decoder_param)(SD_DEC_INFO_FORMAT + k), &v) == SD_OK) {
            o->info[k] = v;
            o->known[k] = 1;
        }
    }
    const uint8_t *icc;
    size_t icc_len;
    int64_t managed = 1;
    sd_decoder_get(j->dec, SD_DEC_COLOR_MANAGE, &managed);
    if (!managed && sd_decoder_icc_profile(j->dec, &icc, &icc_len) == SD_OK && icc_len > 0 &&
        (o->icc = sd__malloc(icc_len)) != NULL) { /* out of memory: no profile, the image still comes */
        memcpy(o->icc, icc, icc_len);
        o->icc_len = icc_len;
    }
    /* the transfer fails as "not decodable", with the decoder's reason (its
     * format's name when the core knows the format but cannot decode it) */
    int status = rc == SD_OK ? SD_OK : SD_EDECODE;
    char msg[300] = "";
    if (rc != SD_OK) {
        const char *m = sd_decoder_message(j->dec);
        snprintf(msg, sizeof msg, "%s", m && *m ? m : sd_strerror(rc));
    }
    j->done_sent = 1;
    sd_sink_port_done(j->port, status, rc == SD_OK ? NULL : msg, o, output_free, j->decode_ms);
}

/* An animation's whole frames (SD_DEC_PREVIEW_FRAME_BYTES): once its
 * second frame is complete, every frame not sent yet, in order, while the
 * budget lasts. 1 when the transfer is such an animation (its images so
 * far are over), else 0. */
static int send_frames(sd__job *j)
{
    int64_t count = 0, loops = 1;
    if (sd_decoder_get(j->dec, SD_DEC_INFO_FRAME_COUNT, &count) != SD_OK || (count < 2 && j->frames_sent == 0))
        return 0;
    sd_decoder_get(j->dec, SD_DEC_INFO_LOOP_COUNT, &loops);
    while (j->frames_sent < count && j->frame_bytes > 0) {
        sd_bitmap *b = NULL;
        int64_t ms = 0;
        if (sd_decoder_frame(j->dec, j->frames_sent, &b) != SD_OK)
            break; /* no memory now: the next push tries again */
        if ((int64_t)sd_bitmap_size(b) > j->frame_bytes) {
            sd_bitmap_free(b);
            j->frame_bytes = 0; /* the budget is spent: the result has the rest */
            break;
        }
        j->frame_bytes -= (int64_t)sd_bitmap_size(b);
        sd_decoder_frame_get(j->dec, j->frames_sent, SD_FRAME_DURATION_MS, &ms);
        send_partial(j, b, j->frames_sent, ms, loops, 1);
        j->frames_sent++;
    }
    return 1;
}

/* Previews: an animation's frames (send_frames); else when the codec
 * rendered a new scan (it throttles itself), or for line-by-line formats
 * when new rows arrived and the interval passed. */
static void maybe_preview(sd__job *j)
{
    if (j->framed && send_frames(j))
        return;
    int64_t mark = 0, now = sd__now_ms(), fmt = 0, prog = 0;
    sd_decoder_get(j->dec, SD_DEC_INFO_FORMAT, &fmt);
    sd_decoder_get(j->dec, SD_DEC_INFO_PROGRESSIVE, &prog);
    if (prog && (sd_format_capabilities((sd_format)fmt) & SD_CAP_SCAN_PREVIEWS)) {
        sd_decoder_get(j->dec, SD_DEC_INFO_PREVIEWS, &mark); /* the codec renders per scan */
    } else {
        int64_t rows = 0, scans = 0;
        sd_decoder_get(j->dec, SD_DEC_INFO_ROWS, &rows);
        sd_decoder_get(j->dec, SD_DEC_INFO_SCANS, &scans);
        mark = scans * (1LL << 32) + rows;
        if (j->last_preview_ms && now - j->last_preview_ms < j->preview_interval_ms)
            return;
    }
    if (mark <= j->last_preview_mark)
        return;
    sd_bitmap *snap = NULL;
    if (sd_decoder_snapshot(j->dec, &snap) == SD_OK) {
        j->last_preview_mark = mark;
        j->last_preview_ms = now;
        send_partial(j, snap, -1, 0, 0, j->framed);
    }
}

/* Work through what the job has, and keep going while more arrives. */
static void run_job(sd__job *j)
{
    sd__dsink *s = j->sink;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        sd__chunk *chunks = j->head;
        j->head = j->tail = NULL;
        __atomic_store_n(&j->queued, 0, __ATOMIC_RELAXED);
        int resume = j->said_full;
        j->said_full = 0;
        int input_done = j->input_done, abandoned = j->abandoned;
        pthread_mutex_unlock(&s->mu);
        if (resume && !abandoned)
            sd_sink_port_resume(j->port);
        if (abandoned || j->done_sent || j->failed) {
            free_chunks(chunks);
            return;
        }
        if (__atomic_load_n(&j->declined, __ATOMIC_RELAXED)) {
            free_chunks(chunks);
            if (input_done)
                send_done(j, SD_OK, NULL); /* the body, undecoded */
            return;
        }
        if (chunks == NULL && !input_done)
            return; /* nothing now; a later push schedules us again */
        double t0 = sd__now_msf();
        for (sd__chunk *c = chunks; c && !j->failed; c = c->next) {
            int rc = sd_decoder_push(j->dec, c->data, c->len);
            int64_t declined = 0;
            if (rc == SD_EUNSUPPORTED && sd_decoder_get(j->dec, SD_DEC_INFO_DECLINED, &declined) == SD_OK && declined) {
                __atomic_store_n(&j->declined, 1, __ATOMIC_RELEASE);
                break;
            }
            if (rc != SD_OK) {
                j->failed = 1;
                __atomic_store_n(&j->rejected, 1, __ATOMIC_RELEASE);
                j->decode_ms += sd__now_msf() - t0;
                send_done(j, rc, NULL);
            }
        }
        free_chunks(chunks);
        if (j->failed)
            return;
        if (__atomic_load_n(&j->declined, __ATOMIC_RELAXED)) {
            j->decode_ms += sd__now_msf() - t0;
            continue; /* the branch above ends it once the input has */
        }
        int64_t settled = 0;
        int early = j->end_early && !input_done && sd_decoder_get(j->dec, SD_DEC_INFO_SETTLED, &settled) == SD_OK &&
                    settled;
        if (early) /* complete at its size: room() refuses the rest of the body, the done ends the transfer */
            __atomic_store_n(&j->rejected, 1, __ATOMIC_RELEASE);
        if ((chunks == NULL && input_done) || early) {
            /* every chunk is in (finish comes after the last push), or the rest is not needed */
            sd_bitmap *bmp = NULL;
            int rc = sd_decoder_finish(j->dec);
            if (rc == SD_OK)
                rc = sd_decoder_take_bitmap(j->dec, &bmp);
            j->decode_ms += sd__now_msf() - t0;
            send_done(j, rc, bmp);
            return;
        }
        if (j->previews && !input_done)
            maybe_preview(j);
        j->decode_ms += sd__now_msf() - t0;
    }
}

static void job_task(sd__task *t)
{
    sd__job *j = (sd__job *)t;
    sd__dsink *s = j->sink;
    run_job(j);
    pthread_mutex_lock(&s->mu);
    j->scheduled = 0;
    /* chunks that arrived while we worked: go again (keeps order) */
    if (!j->abandoned && !j->done_sent && (j->head != NULL || (j->input_done && !j->failed)))
        schedule_locked(j);
    unref_locked(j);
    pthread_mutex_unlock(&s->mu);
}

/* ---- the sink vtable (loop thread) ---- */

static int sink_open(void *ctx, const sd_request *req, sd_sink_port *port, void **state)
{
    sd__job *j = sd__calloc(1, sizeof *j);
    SD__RETURN_IF(j == NULL, SD_ENOMEM);
    j->out = sd__calloc(1, sizeof *j->out);
    int rc = j->out ? sd_decoder_new(&j->dec) : SD_ENOMEM;
    int key;
    int64_t v, previews = 0;
    j->preview_interval_ms = SD_DEFAULT_PREVIEW_INTERVAL_MS;
    for (int i = 0; rc == SD_OK && sd_request_sink_param_at(req, i, &key, &v) == SD_OK; i++) {
        if (key == SD_DEC_PREVIEWS)
            previews = v;
        else if (key == SD_DEC_PREVIEW_INTERVAL_MS)
            j->preview_interval_ms = v;
        else if (key == SD_DEC_PREVIEW_FRAME_BYTES)
            j->framed = (j->frame_bytes = v) > 0;
        else if (key == SD_DEC_END_WHEN_SETTLED)
            j->end_early = v != 0;
        rc = sd_decoder_set(j->dec, (sd_decoder_param)key, v);
    }
    const void *data;
    size_t len;
    if (rc == SD_OK && sd_request_sink_data(req, &data, &len) == SD_OK && data != NULL)
        rc = len == sizeof(sd_render) ? sd_decoder_set_render(j->dec, data) : SD_EINVAL;
    /* renders nobody will see are not worth an IDCT pass each */
    j->previews = previews && sd_sink_port_wants_partials(port);
    if (rc == SD_OK && previews && !j->previews)
        rc = sd_decoder_set(j->dec, SD_DEC_PREVIEWS, 0);
    if (rc != SD_OK) {
        sd_decoder_free(j->dec);
        sd__free(j->out);
        sd__free(j);
        return rc;
    }
    j->task.run = job_task;
    j->sink = ctx;
    j->port = port;
    j->refs = 1;
    *state = j;
    return SD_OK;
}

static int sink_push(void *state, const uint8_t *data, size_t len)
{
    sd__job *j = state;
    if (len == 0 || __atomic_load_n(&j->declined, __ATOMIC_ACQUIRE))
        return SD_OK; /* declined: the loop keeps the body, nothing to decode */
    sd__chunk *c = sd__malloc(sizeof *c + len);
    SD__RETURN_IF(c == NULL, SD_ENOMEM);
    c->next = NULL;
    c->len = len;
    memcpy(c->data, data, len);
    pthread_mutex_lock(&j->sink->mu);
    if (j->tail)
        j->tail->next = c;
    else
        j->head = c;
    j->tail = c;
    __atomic_store_n(&j->queued, j->queued + len, __ATOMIC_RELAXED);
    schedule_locked(j);
    pthread_mutex_unlock(&j->sink->mu);
    return SD_OK;
}

static int64_t sink_room(void *state)
{
    sd__job *j = state;
    if (__atomic_load_n(&j->rejected, __ATOMIC_ACQUIRE))
        return -1; /* not an image: read no further, the done is on its way */
    /* called before every push: no lock unless the queue looks full */
    size_t queued = __atomic_load_n(&j->queued, __ATOMIC_RELAXED);
    if (queued < SD__JOB_MAX_QUEUED)
        return (int64_t)(SD__JOB_MAX_QUEUED - queued);
    pthread_mutex_lock(&j->sink->mu);
    int full = j->queued >= SD__JOB_MAX_QUEUED; /* the worker may have drained it meanwhile */
    if (full)
        j->said_full = 1; /* the worker resumes us when it takes the queue */
    pthread_mutex_unlock(&j->sink->mu);
    return full ? 0 : 1;
}

static void sink_finish(void *state)
{
    sd__job *j = state;
    sd__dsink *s = j->sink; /* the unref may free j */
    pthread_mutex_lock(&s->mu);
    j->input_done = 1;
    schedule_locked(j);
    unref_locked(j);
    pthread_mutex_unlock(&s->mu);
}

static void sink_abort(void *state)
{
    sd__job *j = state;
    sd__dsink *s = j->sink; /* the unref may free j */
    pthread_mutex_lock(&s->mu);
    j->abandoned = 1;
    free_chunks(j->head);
    j->head = j->tail = NULL;
    unref_locked(j);
    pthread_mutex_unlock(&s->mu);
}

static const sd_body_sink decode_sink = {
    .size = sizeof(sd_body_sink),
    .open = sink_open,
    .push = sink_push,
    .room = sink_room,
    .finish = sink_finish,
    .abort = sink_abort,
    .release = sd_decode_sink_free,
};

/* ---- public API ---- */

int sd_decode_sink_new(int threads, const sd_body_sink **sink, void **ctx)
{
    SD__RETURN_IF(sink == NULL || ctx == NULL || threads < 0 || threads > 256, SD_EINVAL);
    if (threads == 0)
        threads = sd__cpu_count();
    sd__dsink *s = sd__calloc(1, sizeof *s);
    SD__RETURN_IF(s == NULL, SD_ENOMEM);
    int rc = sd__work_pool_new(threads, "sd-decode", &s->pool);
    if (rc != SD_OK) {
        sd__free(s);
        return rc;
    }
    pthread_mutex_init(&s->mu, NULL);
    *sink = &decode_sink;
    *ctx = s;
    return SD_OK;
}

void sd_decode_sink_free(void *ctx)
{
    sd__dsink *s = ctx;
    if (s == NULL)
        return;
    sd__work_pool_free(s->pool); /* workers finish the chunk in hand, then stop */
    pthread_mutex_destroy(&s->mu);
    sd__free(s);
}

int sd_loop_use_decoder(sd_loop *loop, int threads)
{
    SD__RETURN_IF(loop == NULL || threads < 0 || threads > 256, SD_EINVAL);
    const sd_body_sink *sink;
    void *ctx;
    SD__FORWARD_IF_ERROR(sd_decode_sink_new(threads, &sink, &ctx));
    int rc = sd_loop_set_body_sink(loop, sink, ctx);
    if (rc != SD_OK) {
        sd_decode_sink_free(ctx);
        return rc;
    }
    sd__loop_default_backlog(loop, 4 * (int64_t)(threads ? threads : sd__cpu_count()));
    return SD_OK;
}

int sd_request_set_decoder_param(sd_request *r, sd_decoder_param p, int64_t v)
{
    SD__RETURN_IF(r == NULL || (int)p < 1 || (int)p >= SD_DEC_INFO_FORMAT || v < 0, SD_EINVAL);
    return sd_request_set_sink_param(r, (int)p, v);
}

int sd_request_set_render(sd_request *r, const sd_render *render)
{
    SD__RETURN_IF(r == NULL, SD_EINVAL);
    if (render == NULL)
        return sd_request_set_sink_data(r, NULL, 0);
    sd_render_plan probe; /* refused now, not when the transfer starts */
    SD__RETURN_IF(sd_render_plan_for(render, 1, 1, 1, &probe) == SD_EINVAL, SD_EINVAL);
    return sd_request_set_sink_data(r, render, sizeof *render);
}

int sd_request_use_server_preset(sd_request *r)
{
    SD__FORWARD_IF_ERROR(sd_request_use_server_transport(r));
    SD__FORWARD_IF_ERROR(sd_request_set_decoder_param(r, SD_DEC_MAX_PIXELS, SD_SERVER_MAX_PIXELS));
    SD__FORWARD_IF_ERROR(sd_request_set_decoder_param(r, SD_DEC_MAX_DIMENSION, SD_SERVER_MAX_DIMENSION));
    return sd_request_set_decoder_param(r, SD_DEC_MAX_MEMORY, SD_SERVER_MAX_MEMORY);
}

static sd__decode_output *decode_output(const sd_result *r)
{
    void (*f)(void *) = NULL;
    sd__decode_output *o = sd_result_output(r, &f);
    return f == output_free ? o : NULL; /* another sink's output is not ours */
}

sd_bitmap *sd_result_take_bitmap(sd_result *r)
{
    sd__decode_output *o = decode_output(r);
    if (o == NULL)
        return NULL;
    sd_bitmap *b = o->bitmap;
    o->bitmap = NULL;
    return b;
}

int sd_result_icc_profile(const sd_result *r, const uint8_t **data, size_t *length)
{
    SD__RETURN_IF(r == NULL || data == NULL || length == NULL, SD_EINVAL);
    *data = NULL;
    *length = 0;
    sd__decode_output *o = decode_output(r);
    SD__RETURN_IF(o == NULL, SD_EINVAL);
    *data = o->icc;
    *length = o->icc_len;
    return SD_OK;
}

int sd_result_decoder_info(const sd_result *r, sd_decoder_param p, int64_t *v)
{
    SD__RETURN_IF(r == NULL || v == NULL, SD_EINVAL);
    int k = (int)p - SD_DEC_INFO_FORMAT;
    SD__RETURN_IF(k < 0 || k >= SD__JOB_INFO_COUNT, SD_EINVAL);
    sd__decode_output *o = decode_output(r);
    SD__RETURN_IF(o == NULL, SD_EINVAL);
    SD__RETURN_IF(!o->known[k], SD_EAGAIN);
    *v = o->info[k];
    return SD_OK;
}
