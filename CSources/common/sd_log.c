/* sd_log.c — libsdcore's diagnostics go to the program's callback, if it set
 * one (sd_set_log_callback): libsdcore itself never prints. The level is
 * checked before anything is formatted, so a silent library costs one
 * atomic load per would-be message. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

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

/* Writes c at *n when it fits (leaving room for the NUL), counts it always. */
static void put(char *out, size_t cap, size_t *n, char c)
{
    if (*n + 1 < cap)
        out[*n] = c;
    (*n)++;
}

static void put_str(char *out, size_t cap, size_t *n, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        put(out, cap, n, s[i]);
}

/* RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) */
static int is_scheme(const char *s, size_t len)
{
    if (len == 0 || !((s[0] | 0x20) >= 'a' && (s[0] | 0x20) <= 'z'))
        return 0;
    for (size_t i = 1; i < len; i++) {
        char c = s[i];
        if (!(((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'))
            return 0;
    }
    return 1;
}

int sd_redact_url(const char *url, char *out, size_t cap)
{
    SD__RETURN_IF(url == NULL || (out == NULL && cap > 0), SD_EINVAL);
    size_t n = 0;
    const char *p = url;
    const char *sep = strstr(url, "://");
    if (sep && is_scheme(url, (size_t)(sep - url))) {
        const char *auth = sep + 3;
        size_t alen = strcspn(auth, "/?#");
        const char *at = NULL;
        for (size_t i = 0; i < alen; i++)
            if (auth[i] == '@')
                at = auth + i; /* the last one: a password may hold an '@' */
        put_str(out, cap, &n, url, (size_t)(auth - url));
        if (at) {
            put_str(out, cap, &n, "***@", 4);
            p = at + 1;
        } else {
            p = auth;
        }
    }
    size_t plain = strcspn(p, "?#");
    put_str(out, cap, &n, p, plain);
    p += plain;
    if (*p == '?') {
        put(out, cap, &n, '?');
        p++;
        for (;;) {
            size_t len = strcspn(p, "&#");
            const char *eq = memchr(p, '=', len);
            if (eq) { /* the name says which option; the value may be a token */
                put_str(out, cap, &n, p, (size_t)(eq - p));
                put_str(out, cap, &n, "=***", 4);
            } else if (len > 0) {
                put_str(out, cap, &n, "***", 3); /* a bare token */
            }
            p += len;
            if (*p != '&')
                break;
            put(out, cap, &n, '&');
            p++;
        }
    }
    if (*p == '#')
        put_str(out, cap, &n, "#***", 4);
    if (cap > 0)
        out[n < cap ? n : cap - 1] = '\0';
    return n > INT32_MAX ? INT32_MAX : (int)n;
}
