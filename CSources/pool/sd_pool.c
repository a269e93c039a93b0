/* sd_pool.c — decode worker threads; per-job order, jobs run in parallel. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pool/sd_pool.h"

typedef struct sd__chunk {
    struct sd__chunk *next;
    size_t len;
    uint8_t data[];
} sd__chunk;

struct sd__job {
    sd__pool *pool;
    uint64_t id;
    sd__job_options opts;
    sd__job_sink sink;
    /* guarded by pool->mu */
    sd__chunk *head, *tail;
    int input_done;  /* finish() was called */
    int abandoned;
    int scheduled;   /* in the run queue or on a worker */
    int refs;        /* the owner's + the pool's while scheduled */
    sd__job *next_run;
    /* worker-only (one worker at a time) */
    sd_decoder *dec;
    int failed;
    int done_sent;
    int rejected;    /* atomic: set once by the worker, read by the loop */
    int64_t last_preview_ms, last_preview_mark;
    double decode_ms;
    sd__job_result *result; /* preallocated; handed to sink.done */
};

struct sd__pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sd__job *run_head, *run_tail;
    int stop;
    int nthreads;
    pthread_t *threads;
};

static double ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void free_chunks(sd__chunk *c)
{
    while (c) {
        sd__chunk *n = c->next;
        free(c);
        c = n;
    }
}

/* Drop one reference; the last one frees. Caller holds pool->mu. */
static void unref_locked(sd__job *j)
{
    if (--j->refs > 0)
        return;
    free_chunks(j->head);
    sd_decoder_free(j->dec);
    free(j->result);
    free(j);
}

static void schedule_locked(sd__pool *p, sd__job *j)
{
    if (j->scheduled)
        return;
    j->scheduled = 1;
    j->refs++;
    j->next_run = NULL;
    if (p->run_tail)
        p->run_tail->next_run = j;
    else
        p->run_head = j;
    p->run_tail = j;
    pthread_cond_signal(&p->cv);
}

static void fill_info(sd__job *j, sd__job_result *r)
{
    for (int k = 0; k < SD__JOB_INFO_COUNT; k++) {
        int64_t v;
        if (j->dec && sd_decoder_get(j->dec, (sd_decoder_param)(SD_DEC_INFO_FORMAT + k), &v) == SD_OK) {
            r->info[k] = v;
            r->info_known[k] = 1;
        }
    }
}

static void send_done(sd__job *j, int status, sd_bitmap *bmp)
{
    sd__job_result *r = j->result;
    j->result = NULL;
    r->id = j->id;
    r->status = status;
    r->bitmap = bmp;
    if (status != SD_OK && j->dec)
        snprintf(r->message, sizeof r->message, "%s", sd_decoder_message(j->dec));
    fill_info(j, r);
    r->decode_ms = j->decode_ms;
    j->done_sent = 1;
    j->sink.done(j->sink.ctx, j->id, r);
}

/* Previews: progressive JPEGs when the decoder rendered a new scan (it
 * throttles itself); other images when new rows arrived and the interval
 * has passed. */
static void maybe_preview(sd__job *j)
{
    int64_t prog = 0, mark = 0;
    sd_decoder_get(j->dec, SD_DEC_INFO_PROGRESSIVE, &prog);
    int64_t fmt = 0;
    sd_decoder_get(j->dec, SD_DEC_INFO_FORMAT, &fmt);
    int64_t now = sd__now_ms();
    if (prog && fmt == SD_FORMAT_JPEG) {
        sd_decoder_get(j->dec, SD_DEC_INFO_PREVIEWS, &mark);
    } else {
        int64_t rows = 0, scans = 0;
        sd_decoder_get(j->dec, SD_DEC_INFO_ROWS, &rows);
        sd_decoder_get(j->dec, SD_DEC_INFO_SCANS, &scans);
        mark = scans * (1LL << 32) + rows;
        if (j->last_preview_ms && now - j->last_preview_ms < j->opts.preview_interval_ms)
            return;
    }
    if (mark <= j->last_preview_mark)
        return;
    sd_bitmap *snap = NULL;
    if (sd_decoder_snapshot(j->dec, &snap) == SD_OK) {
        j->last_preview_mark = mark;
        j->last_preview_ms = now;
        j->sink.preview(j->sink.ctx, j->id, snap);
    }
}

/* Work through what the job has, and keep going while more arrives: one
 * decoder stays hot in cache instead of round-robin over every transfer.
 * Runs on one worker at a time per job. */
static void run_job(sd__pool *p, sd__job *j)
{
    for (;;) {
        pthread_mutex_lock(&p->mu);
        sd__chunk *chunks = j->head;
        j->head = j->tail = NULL;
        int input_done = j->input_done, abandoned = j->abandoned;
        pthread_mutex_unlock(&p->mu);
        if (abandoned || j->done_sent || j->failed) {
            free_chunks(chunks);
            return;
        }
        if (chunks == NULL && !input_done)
            return; /* nothing now; a later push schedules us again */
        double t0 = ms_now();
        for (sd__chunk *c = chunks; c && !j->failed; c = c->next) {
            int rc = sd_decoder_push(j->dec, c->data, c->len);
            if (rc != SD_OK) {
                j->failed = 1;
                __atomic_store_n(&j->rejected, 1, __ATOMIC_RELEASE);
                j->decode_ms += ms_now() - t0;
                send_done(j, rc, NULL);
            }
        }
        free_chunks(chunks);
        if (j->failed)
            return;
        if (chunks == NULL && input_done) {
            /* every chunk is in (finish comes after the last push) */
            sd_bitmap *bmp = NULL;
            int rc = sd_decoder_finish(j->dec);
            if (rc == SD_OK)
                rc = sd_decoder_take_bitmap(j->dec, &bmp);
            j->decode_ms += ms_now() - t0;
            send_done(j, rc, bmp);
            return;
        }
        if (j->opts.previews && !input_done)
            maybe_preview(j);
        j->decode_ms += ms_now() - t0;
    }
}

static void *worker_main(void *arg)
{
    sd__pool *p = arg;
    pthread_setname_np(pthread_self(), "sd-decode");
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->run_head == NULL)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->run_head == NULL && p->stop)
            break;
        sd__job *j = p->run_head;
        p->run_head = j->next_run;
        if (p->run_head == NULL)
            p->run_tail = NULL;
        pthread_mutex_unlock(&p->mu);
        run_job(p, j);
        pthread_mutex_lock(&p->mu);
        j->scheduled = 0;
        /* chunks that arrived while we worked: go again (keeps order) */
        if (!j->abandoned && !j->done_sent && (j->head != NULL || (j->input_done && !j->failed)))
            schedule_locked(p, j);
        unref_locked(j);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int sd__pool_new(int threads, sd__pool **out)
{
    sd__pool *p = calloc(1, sizeof *p);
    SD__RETURN_IF(p == NULL, SD_ENOMEM);
    threads = SD__MAX(1, threads);
    p->threads = calloc((size_t)threads, sizeof *p->threads);
    if (p->threads == NULL) {
        free(p);
        return SD_ENOMEM;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&p->threads[i], NULL, worker_main, p) != 0)
            break;
        p->nthreads++;
    }
    if (p->nthreads == 0) {
        sd__pool_free(p);
        return SD_ENOMEM;
    }
    *out = p;
    return SD_OK;
}

void sd__pool_free(sd__pool *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->threads);
    free(p);
}

int sd__job_new(sd__pool *p, uint64_t id, const sd__job_options *opts, const sd__job_sink *sink,
                sd__job **out)
{
    sd__job *j = calloc(1, sizeof *j);
    SD__RETURN_IF(j == NULL, SD_ENOMEM);
    j->result = calloc(1, sizeof *j->result);
    int rc = j->result ? sd_decoder_new(&j->dec) : SD_ENOMEM;
    for (int i = 0; rc == SD_OK && i < opts->nparams; i++)
        rc = sd_decoder_set(j->dec, (sd_decoder_param)opts->params[i], opts->values[i]);
    if (rc == SD_OK && opts->previews) {
        rc = sd_decoder_set(j->dec, SD_DEC_PREVIEWS, 1);
        if (rc == SD_OK)
            rc = sd_decoder_set(j->dec, SD_DEC_PREVIEW_INTERVAL_MS, opts->preview_interval_ms);
    }
    if (rc != SD_OK) {
        sd_decoder_free(j->dec);
        free(j->result);
        free(j);
        return rc;
    }
    j->pool = p;
    j->id = id;
    j->opts = *opts;
    j->sink = *sink;
    j->refs = 1;
    *out = j;
    return SD_OK;
}

int sd__job_push(sd__job *j, const uint8_t *data, size_t len)
{
    if (len == 0)
        return SD_OK;
    sd__chunk *c = malloc(sizeof *c + len);
    SD__RETURN_IF(c == NULL, SD_ENOMEM);
    c->next = NULL;
    c->len = len;
    memcpy(c->data, data, len);
    sd__pool *p = j->pool;
    pthread_mutex_lock(&p->mu);
    if (j->tail)
        j->tail->next = c;
    else
        j->head = c;
    j->tail = c;
    schedule_locked(p, j);
    pthread_mutex_unlock(&p->mu);
    return SD_OK;
}

void sd__job_finish(sd__job *j)
{
    sd__pool *p = j->pool;
    pthread_mutex_lock(&p->mu);
    j->input_done = 1;
    schedule_locked(p, j);
    unref_locked(j);
    pthread_mutex_unlock(&p->mu);
}

void sd__job_abandon(sd__job *j)
{
    sd__pool *p = j->pool;
    pthread_mutex_lock(&p->mu);
    j->abandoned = 1;
    free_chunks(j->head);
    j->head = j->tail = NULL;
    unref_locked(j);
    pthread_mutex_unlock(&p->mu);
}

int sd__job_rejected(const sd__job *job) { return __atomic_load_n(&job->rejected, __ATOMIC_ACQUIRE); }
