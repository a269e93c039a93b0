/* sd_buf.c — the one growable byte buffer of libsdcore (sd_internal.h). */
#include <string.h>

#include "common/sd_internal.h"

int sd__buf_put(sd__buf *b, const void *p, size_t n)
{
    if (b->oom)
        return SD_ENOMEM;
    if (n > b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len < n) {
            if (cap > SIZE_MAX / 2) {
                b->oom = 1;
                return SD_ENOMEM;
            }
            cap *= 2;
        }
        uint8_t *d = sd__realloc(b->data, cap);
        if (d == NULL) {
            b->oom = 1;
            return SD_ENOMEM;
        }
        b->data = d;
        b->cap = cap;
    }
    if (n > 0)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    return SD_OK;
}

void sd__buf_free(sd__buf *b)
{
    sd__free(b->data);
    *b = (sd__buf){0};
}
