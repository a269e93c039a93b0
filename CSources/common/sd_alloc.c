/* sd_alloc.c — every block libsdcore allocates for itself goes through here,
 * so a program (or a test) can supply its own allocator: sd_set_allocator,
 * libspng's spng_alloc / curl_global_init_mem shape. The libraries under us
 * (libcurl, libjpeg, libpng, giflib, libwebp, libavif) keep their own. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "common/sd_internal.h"

static sd_allocator g_alloc;
static int g_custom;
/* Blocks libsdcore holds (heap and mapped): the allocator may change only at
 * zero, so a block is always freed by the allocator that made it. The release
 * on every free pairs with the acquire in sd_set_allocator: a thread that let
 * go of its last block (a self-freed loop's, say) is done reading g_custom. */
static atomic_long g_live;

static void *counted(void *p)
{
    if (p)
        atomic_fetch_add_explicit(&g_live, 1, memory_order_relaxed);
    return p;
}

/* What layers above cache from this allocator, and how they give it back
 * (common/ calls nothing above it: they register). */
#define SD__DRAINS 4
static void (*g_drain[SD__DRAINS])(void);
static atomic_int g_drains;
static pthread_mutex_t g_drain_lock = PTHREAD_MUTEX_INITIALIZER;

void sd__register_drain(void (*drain)(void))
{
    pthread_mutex_lock(&g_drain_lock);
    int n = atomic_load_explicit(&g_drains, memory_order_relaxed), known = 0;
    for (int i = 0; i < n; i++)
        known |= g_drain[i] == drain;
    if (!known && n < SD__DRAINS) {
        g_drain[n] = drain;
        atomic_store_explicit(&g_drains, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&g_drain_lock);
}

void sd__alloc_track(long delta) { atomic_fetch_add_explicit(&g_live, delta, memory_order_release); }

int sd_set_allocator(const sd_allocator *a)
{
    sd_allocator copy;
    memset(&copy, 0, sizeof copy);
    if (a != NULL) {
        SD__FORWARD_IF_ERROR(sd__copy_sized(&copy, sizeof copy, a, SD__SIZE_THROUGH(sd_allocator, user)));
        SD__RETURN_IF(copy.malloc_fn == NULL || copy.realloc_fn == NULL || copy.free_fn == NULL, SD_EINVAL);
    }
    sd__pool_drain(); /* recycled blocks came from the allocator before */
    int n = atomic_load_explicit(&g_drains, memory_order_acquire);
    for (int i = 0; i < n; i++) /* and what the layers above cache (colour transforms) */
        g_drain[i]();
    SD__RETURN_IF(atomic_load_explicit(&g_live, memory_order_acquire) != 0, SD_EBADSTATE);
    g_alloc = copy;
    g_custom = a != NULL;
    return SD_OK;
}

int sd__alloc_is_custom(void) { return g_custom; }

void *sd__malloc(size_t n)
{
    if (SD__LIKELY(!g_custom))
        return counted(malloc(n));
    return counted(g_alloc.malloc_fn(n ? n : 1, g_alloc.user));
}

void *sd__calloc(size_t count, size_t n)
{
    if (SD__LIKELY(!g_custom))
        return counted(calloc(count, n));
    SD__RETURN_IF(n && count > SIZE_MAX / n, NULL);
    size_t bytes = count * n;
    if (bytes == 0)
        bytes = 1;
    if (g_alloc.calloc_fn)
        return counted(g_alloc.calloc_fn(1, bytes, g_alloc.user));
    void *p = counted(g_alloc.malloc_fn(bytes, g_alloc.user));
    if (p)
        memset(p, 0, bytes);
    return p;
}

void *sd__realloc(void *p, size_t n)
{
    /* never 0 bytes: realloc(p, 0) may free p, which the count would miss */
    void *q = SD__LIKELY(!g_custom) ? realloc(p, n ? n : 1) : g_alloc.realloc_fn(p, n ? n : 1, g_alloc.user);
    return p ? q : counted(q);
}

void sd__free(void *p)
{
    if (p == NULL)
        return;
    if (SD__LIKELY(!g_custom))
        free(p);
    else
        g_alloc.free_fn(p, g_alloc.user);
    sd__alloc_track(-1);
}

char *sd__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = sd__malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

int sd__copy_sized(void *dst, size_t dst_size, const void *src, size_t min_size)
{
    SD__RETURN_IF(src == NULL, SD_EINVAL);
    size_t size;
    memcpy(&size, src, sizeof size); /* every versioned struct starts with its size */
    SD__RETURN_IF(size < min_size, SD_EINVAL);
    if (size > dst_size) { /* built against newer headers: fine if it uses nothing newer */
        const unsigned char *extra = (const unsigned char *)src + dst_size;
        for (size_t i = 0; i < size - dst_size; i++)
            SD__RETURN_IF(extra[i] != 0, SD_EUNSUPPORTED);
    }
    memset(dst, 0, dst_size);
    memcpy(dst, src, SD__MIN(size, dst_size));
    memcpy(dst, &dst_size, sizeof dst_size);
    return SD_OK;
}
