/*
 * sd_anim_int.h — what the animated codecs (gif/, webp/, png/ for APNG)
 * share: the input they keep (frames are re-decoded on demand, so the
 * compressed bytes stay), and the cache of composited frames that answers
 * sd_decoder_frame() without recompositing, within SD_DEC_FRAME_CACHE_BYTES.
 */
#ifndef SD_ANIM_INT_H
#define SD_ANIM_INT_H

#include "decode/sd_decoder_int.h"

/* Composited frames kept by index. Filled in the order frames are made
 * until the budget is spent, never evicted: the first frames of a loop are
 * the ones a player comes back to, and the codec's working canvas serves
 * sequential playback past them at one frame decode per frame. */
typedef struct sd__frame_cache {
    sd_bitmap **slot; /* by frame index; NULL = not kept */
    uint32_t nslots;
    int64_t bytes, budget;
} sd__frame_cache;

/* Keep a copy of `frame` as frame `index` if the budget allows (a failure
 * to keep is not an error: the frame can be made again). */
SD__HIDDEN void sd__frame_cache_put(sd__frame_cache *c, uint32_t index, const sd_bitmap *frame);
SD__HIDDEN const sd_bitmap *sd__frame_cache_get(const sd__frame_cache *c, uint32_t index);
SD__HIDDEN void sd__frame_cache_free(sd__frame_cache *c);

/* The state an animated codec (GIF, WebP, AVIF, JPEG XL) starts with: the
 * whole-file part (the decoder, the bytes kept, the working canvas), the
 * frames kept, and where the animation broke. The codec's own state struct
 * has it as its first member, `a`. sd__anim_state_init allocates `size`
 * zeroed bytes as the decoder's codec state (the cache's budget from
 * SD_DEC_FRAME_CACHE_BYTES, nothing broken); sd__anim_state_destroy frees
 * the bytes, the canvas, the frames kept and the state, after the codec
 * freed what is its own. */
typedef struct sd__anim_state {
    sd__whole w;
    sd__frame_cache cache;
    uint32_t bad_from; /* frames from here failed to decode (UINT32_MAX: none) */
} sd__anim_state;
SD__HIDDEN int sd__anim_state_init(sd_decoder *d, size_t size);
SD__HIDDEN void sd__anim_state_destroy(sd_decoder *d);

/* A codec's way to bring frame `index` onto its canvas (*out: a view). */
/* Whether frame `index` is best made by stepping on from the working
 * canvas (frame `cur` on it, -1 none): only when it is behind `index` and
 * no key frame lies after it up to `index` — else start at that key frame
 * (a jump forward over a key frame must not decode every frame between). */
static inline int sd__anim_steps_on(const sd_decoder *d, int64_t cur, uint32_t index)
{
    if (cur < 0 || cur >= (int64_t)index)
        return 0;
    for (uint32_t k = index; k > (uint32_t)cur; k--)
        if (d->frames[k].key)
            return 0;
    return 1;
}

/* The first frame to draw on the way to frame `index`: the one after `cur`
 * when stepping on, else the nearest key frame at or before `index`, and
 * then *restart = 1 (the caller's canvas starts afresh). */
static inline uint32_t sd__anim_first_step(const sd_decoder *d, int64_t cur, uint32_t index, int *restart)
{
    *restart = !sd__anim_steps_on(d, cur, index);
    if (!*restart)
        return (uint32_t)cur + 1;
    uint32_t k = index;
    while (k > 0 && !d->frames[k].key)
        k--;
    return k;
}

/* Makes frame `index`: *out is the codec's own bitmap (*owned 0: shown by a
 * copy) or a new one handed over (*owned 1). */
typedef int (*sd__anim_render)(void *codec_state, uint32_t index, sd_bitmap **out, int *owned);

/* The codec->frame entry of every animated codec: a kept frame, else
 * `render`. A frame after the first that fails to render (not for want of
 * memory) ends the animation before it: *end = index, the decoder lists
 * `index` frames and counts as incomplete; later frames fail at once. */
SD__HIDDEN int sd__anim_frame(sd_decoder *dec, const sd__frame_cache *c, uint32_t *end, uint32_t index,
                              sd__anim_render render, void *codec_state, sd_bitmap **out, int *owned);

/* Straight-alpha B,G,R,A bytes to native premultiplied ARGB32, with the
 * contract's (c*a + 127) / 255; `dst` may be `src`. */
SD__HIDDEN void sd__premultiply_bgra(const uint8_t *src, uint8_t *dst, size_t count);

#endif
