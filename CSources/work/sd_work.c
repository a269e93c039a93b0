/* sd_work.c — worker threads taking tasks from one FIFO. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "work/sd_work.h"

struct sd__work_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sd__task *head, *tail; /* guarded by mu */
    int stop;
    int nthreads;
    pthread_t *threads;
    char name[16];
};

static void *worker_main(void *arg)
{
    sd__work_pool *p = arg;
    pthread_setname_np(pthread_self(), p->name);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->head == NULL)
            pthread_cond_wait(&p->cv, &p->mu);
        sd__task *t = p->head;
        if (t == NULL)
            break; /* stopping, and nothing left */
        p->head = t->next;
        if (p->head == NULL)
            p->tail = NULL;
        pthread_mutex_unlock(&p->mu);
        t->run(t); /* may post again (itself too) */
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int sd__work_pool_new(int threads, const char *name, sd__work_pool **out)
{
    sd__work_pool *p = sd__calloc(1, sizeof *p);
    SD__RETURN_IF(p == NULL, SD_ENOMEM);
    threads = SD__MAX(1, threads);
    p->threads = sd__calloc((size_t)threads, sizeof *p->threads);
    if (p->threads == NULL) {
        sd__free(p);
        return SD_ENOMEM;
    }
    snprintf(p->name, sizeof p->name, "%s", name ? name : "sd-work");
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&p->threads[i], NULL, worker_main, p) != 0)
            break;
        p->nthreads++;
    }
    if (p->nthreads == 0) {
        sd__work_pool_free(p);
        return SD_ENOMEM;
    }
    *out = p;
    return SD_OK;
}

void sd__work_pool_free(sd__work_pool *p)
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
    sd__free(p->threads);
    sd__free(p);
}

void sd__work_post(sd__work_pool *p, sd__task *t)
{
    t->next = NULL;
    pthread_mutex_lock(&p->mu);
    if (p->tail)
        p->tail->next = t;
    else
        p->head = t;
    p->tail = t;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}
