/* sd_alloc.c — every block libsdcore allocates for itself goes through here,
 * so a program (or a test) can supply its own allocator: sd_set_allocator,
 * libspng's spng_alloc / curl_global_init_mem shape. The libraries under us
 * (libcurl, libjpeg, libpng, giflib, libwebp, libavif) keep their own. */
#include <string.h>

#include "common/sd_internal.h"

static sd_allocator g_alloc;
static int g_custom;

int sd_set_allocator(const sd_allocator *a)
{
    if (a == NULL) {
        sd__pool_drain();
        g_custom = 0;
        memset(&g_alloc, 0, sizeof g_alloc);
        return SD_OK;
    }
    sd_allocator copy;
    SD__FORWARD_IF_ERROR(sd__copy_sized(&copy, sizeof copy, a, SD__SIZE_THROUGH(sd_allocator, user)));
    SD__RETURN_IF(copy.malloc_fn == NULL || copy.realloc_fn == NULL || copy.free_fn == NULL, SD_EINVAL);
    sd__pool_drain(); /* recycled blocks came from the allocator before */
    g_alloc = copy;
    g_custom = 1;
    return SD_OK;
}

int sd__alloc_is_custom(void) { return g_custom; }

void *sd__malloc(size_t n)
{
    if (SD__LIKELY(!g_custom))
        return malloc(n);
    return g_alloc.malloc_fn(n ? n : 1, g_alloc.user);
}

void *sd__calloc(size_t count, size_t n)
{
    if (SD__LIKELY(!g_custom))
        return calloc(count, n);
    SD__RETURN_IF(n && count > SIZE_MAX / n, NULL);
    size_t bytes = count * n;
    if (bytes == 0)
        bytes = 1;
    if (g_alloc.calloc_fn)
        return g_alloc.calloc_fn(1, bytes, g_alloc.user);
    void *p = g_alloc.malloc_fn(bytes, g_alloc.user);
    if (p)
        memset(p, 0, bytes);
    return p;
}

void *sd__realloc(void *p, size_t n)
{
    if (SD__LIKELY(!g_custom))
        return realloc(p, n);
    return g_alloc.realloc_fn(p, n ? n : 1, g_alloc.user);
}

void sd__free(void *p)
{
    if (p == NULL)
        return;
    if (SD__LIKELY(!g_custom))
        free(p);
    else
        g_alloc.free_fn(p, g_alloc.user);
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
