/* sd_log.c — libsdcore's diagnostics go to the program's callback, if it set
 * one (sd_set_log_callback): libsdcore itself never prints. The level is
 * checked before anything is formatted, so a silent library costs one
 * atomic load per would-be message. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

#include "common/sd_internal.h"

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static sd_log_fn log_fn;
static void *log_user;
static atomic_int log_level; /* 0: off */

int sd_set_log_callback(sd_log_fn fn, sd_log_level max_level, void *user)
{
    SD__RETURN_IF(fn && (max_level < SD_LOG_ERROR || max_level > SD_LOG_DEBUG), SD_EINVAL);
    pthread_mutex_lock(&log_mu);
    log_fn = fn;
    log_user = fn ? user : NULL;
    atomic_store(&log_level, fn ? (int)max_level : 0);
    pthread_mutex_unlock(&log_mu);
    return SD_OK;
}

int sd__log_enabled(sd_log_level level) { return (int)level <= atomic_load_explicit(&log_level, memory_order_relaxed); }

void sd__log(sd_log_level level, const char *fmt, ...)
{
    if (!sd__log_enabled(level))
        return;
    pthread_mutex_lock(&log_mu);
    sd_log_fn fn = log_fn;
    void *user = log_user;
    pthread_mutex_unlock(&log_mu);
    if (fn == NULL)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fn(level, line, user);
}
