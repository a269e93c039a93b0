/* sd_anim.c — kept input and kept frames for the animated codecs. */
#include <string.h>

#include "decode/anim/sd_anim_int.h"
#include "bitmap/sd_pixel.h"

void sd__frame_cache_put(sd__frame_cache *c, uint32_t index, const sd_bitmap *frame)
{
    int64_t size = (int64_t)frame->stride * frame->height, limit, used;
    if (c->bytes + size > c->budget || sd__frame_cache_get(c, index) != NULL)
        return;
    if (sd__budget_take(size, &limit, &used) != SD_OK)
        return; /* the process-wide budget is spent: make the frame again later */
    if (index >= c->nslots) {
        uint32_t n = SD__MAX(index + 1, c->nslots * 2);
        n = SD__MAX(n, 16u);
        sd_bitmap **s = sd__realloc(c->slot, (size_t)n * sizeof *s);
        if (s == NULL) {
            sd__budget_give(size);
            return;
        }
        memset(s + c->nslots, 0, (size_t)(n - c->nslots) * sizeof *s);
        c->slot = s;
        c->nslots = n;
    }
    if (sd__bitmap_copy(frame, &c->slot[index]) == SD_OK)
        c->bytes += size;
    else
        sd__budget_give(size);
}

const sd_bitmap *sd__frame_cache_get(const sd__frame_cache *c, uint32_t index)
{
    return index < c->nslots ? c->slot[index] : NULL;
}

void sd__frame_cache_free(sd__frame_cache *c)
{
    for (uint32_t i = 0; i < c->nslots; i++)
        sd_bitmap_free(c->slot[i]);
    sd__free(c->slot);
    sd__budget_give(c->bytes);
    c->slot = NULL;
    c->nslots = 0;
    c->bytes = 0;
}

int sd__anim_frame(sd_decoder *d, const sd__frame_cache *c, uint32_t *end, uint32_t index,
                   sd__anim_render render, void *state, sd_bitmap **out, int *owned)
{
    *owned = 0;
    if (index >= *end)
        return SD_ECORRUPT;
    const sd_bitmap *kept = sd__frame_cache_get(c, index);
    if (kept != NULL) {
        *out = (sd_bitmap *)(uintptr_t)kept;
        return SD_OK;
    }
    int rc = render(state, index, out, owned);
    if (rc < 0 && rc != SD_ENOMEM && index > 0) {
        *end = index;
        d->nframes = index;
        d->complete = 0;
        d->end_reached = 1;
    }
    return rc;
}

/* Straight B,G,R,A bytes to native premultiplied ARGB32 (in place too);
 * animations premultiply a canvas per frame, so the vector path matters. */
void sd__premultiply_bgra(const uint8_t *src, uint8_t *dst, size_t count)
{
    size_t i = sd__premultiply_vector(src, dst, count, 0);
    uint32_t *out = (uint32_t *)(void *)dst;
    src += i * 4;
    for (; i < count; i++, src += 4) {
        uint32_t b = src[0], g = src[1], r = src[2], a = src[3];
        out[i] = sd__pack_premul(r, g, b, a);
    }
}

int sd__anim_state_init(sd_decoder *d, size_t size)
{
    SD__FORWARD_IF_ERROR(sd__whole_init(d, size));
    sd__anim_state *a = d->codec_state;
    a->bad_from = UINT32_MAX;
    a->cache.budget = d->frame_cache_bytes;
    return SD_OK;
}

void sd__anim_state_destroy(sd_decoder *d)
{
    sd__anim_state *a = d->codec_state;
    if (a == NULL)
        return;
    sd__frame_cache_free(&a->cache);
    sd__whole_destroy(d); /* the bytes, the canvas, the state */
}
