/* sd_webp_int.h — inside decode/webp/: the codec's state, shared by the
 * codec (sd_webp.c: stills, drawing frames) and the frame list
 * (sd_webp_scan.c: the chunk walker, our ANMF reader, libwebpdemux). */
#ifndef SD_WEBP_INT_H
#define SD_WEBP_INT_H

#include <webp/decode.h>
#include <webp/demux.h>

#include "decode/anim/sd_anim_int.h"

typedef struct {
    size_t off, len; /* the frame's bitstream (ALPH + VP8, or VP8L) in `in` */
    uint32_t x, y, w, h, duration;
    uint8_t dispose_bg, blend, has_alpha;
    uint8_t opaque; /* lossy without ALPH: every pixel's alpha is 255 */
} wp_frame;

typedef struct {
    sd__anim_state a; /* first; its bytes: until the still decoder has them, an animation keeps them */
    int have_header, anim;
    /* still */
    WebPIDecoder *idec;
    WebPDecoderConfig cfg; /* the decoder keeps pointers into it */
    /* (the still's canvas, a.w.canvas: straight BGRA until finish, then premultiplied) */
    int still_done, taken;
    /* animation */
    size_t at, riff_end; /* chunk walker */
    size_t scanned;      /* bytes the last demux scan saw */
    size_t frame_at;     /* our own frame walk: the next top-level chunk */
    int demux_done, iterate; /* iterate: list with libwebp's iterator */
    wp_frame *frames;
    uint32_t nframes, cap;
    uint8_t *C;         /* straight canvas, W*H*4 */
    uint8_t *F;         /* one decoded frame */
    size_t F_cap;
    sd_bitmap *out;     /* C premultiplied: what frame() shows by a copy */
    int out_stale;      /* `out` was not made from C's last frame */
    int64_t cur;        /* frame on C (before its disposal), -1 none */
    uint32_t dx0, dy0, dx1, dy1; /* what changed on C since `out` was made from it */
} sd__webp;

static inline uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline int covers(const sd_decoder *d, const wp_frame *f)
{
    return f->w == d->width && f->h == d->height; /* frames lie inside the canvas */
}

/* The padded end of the chunk at `at` when all of it lies before `end`;
 * 0 when it does not (yet). */
SD__HIDDEN size_t sd__webp_chunk_end(const uint8_t *buf, size_t at, size_t end);
/* Frames libwebpdemux finds complete in the bytes so far, announced. */
SD__HIDDEN int sd__webp_demux_scan(sd__webp *s);
/* Scan again whenever a RIFF chunk has come in whole. */
SD__HIDDEN int sd__webp_anim_walk(sd__webp *s);

#endif
