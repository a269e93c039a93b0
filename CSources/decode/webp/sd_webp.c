/*
 * sd_webp.c — WebP codec on libwebp.
 *
 * Stills (lossy, lossless, lossy + alpha) stream through WebPIDecoder into
 * the canvas as straight BGRA (libwebp scales there for a thumbnail), then
 * one premultiply pass with the contract's rounding: libwebp's own
 * premultiplied modes truncate on x86-64 (../shared/corpus-anim/README.md).
 *
 * Animations: a chunk walker notices when a RIFF chunk is complete, then
 * libwebpdemux (WebPDemuxPartial over the bytes so far) validates the file
 * and says how many frames are whole. We read the new frames' ANMF chunks
 * ourselves (libwebp's iterator walks its frame list from the start for
 * every step, so listing n frames with it costs O(n^2)) and check the last
 * one against libwebp's; each is announced and later decoded on demand with WebPDecode
 * and composited by hand exactly as libwebp's WebPAnimDecoder does (its key
 * frame rule, its non-premultiplied blend, no blending inside a rectangle
 * just disposed to background). The straight canvas steps forward one
 * frame decode per frame; going back restarts at the nearest key frame.
 * What is shown is premultiplied from the canvas where it changed (then
 * copied out), or into a new bitmap handed over when most of it changed; an
 * opaque lossy key frame covering the canvas is decoded straight into that
 * bitmap (alpha 255 is already premultiplied) and copied to the canvas only
 * when the next frame builds on it.
 */
#include <stdio.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "decode/webp/sd_webp_int.h"

static const char *vp8_status(VP8StatusCode st)
{
    switch (st) {
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "not enough data";
    default: return "ok";
    }
}

static int wp_fail(sd_decoder *d, VP8StatusCode st, const char *what)
{
    sd__decoder_msg(d, "WebP: %s: %s", what, vp8_status(st));
    return st == VP8_STATUS_OUT_OF_MEMORY ? SD_ENOMEM
         : st == VP8_STATUS_UNSUPPORTED_FEATURE ? SD_EUNSUPPORTED
         : st == VP8_STATUS_NOT_ENOUGH_DATA ? SD_ETRUNCATED : SD_ECORRUPT;
}

/* ---- still ---- */

static int still_start(sd__webp *s)
{
    sd_decoder *d = s->a.w.dec;
    /* the canvas, and libwebp's own full-size buffers: a lossless image's
     * ARGB pixels, a lossy one's alpha plane (an upper bound for both) */
    /* libwebp shrinks while decoding (an area average), by whole factors
     * down to the margin times the planned size, as PNG's boxes do; the
     * resampler finishes. A fractional factor (741 columns to 512 for a
     * 256 box) averages areas of a non-integer width, which blurs and
     * aliases: 45-48 dB against 56 for the full decode resampled, on real
     * photos against a Lanczos-3 of the whole image. */
    uint64_t fx = sd__decoder_shrink_factor(d, d->width, d->need_w);
    uint64_t fy = sd__decoder_shrink_factor(d, d->height, d->need_h);
    d->load_w = (uint32_t)((d->width + fx - 1) / fx);
    d->load_h = (uint32_t)((d->height + fy - 1) / fy);
    SD__FORWARD_IF_ERROR(sd__decoder_charge(d, (uint64_t)d->load_w * d->load_h * 4 +
                                                   (uint64_t)d->width * d->height * 4,
                                            "the WebP canvas"));
    SD__FORWARD_IF_ERROR(sd__bitmap_alloc(d->load_w, d->load_h, 1, &s->a.w.canvas));
    WebPDecoderConfig *cfg = &s->cfg;
    if (!WebPInitDecoderConfig(cfg))
        return SD_EUNSUPPORTED;
    cfg->output.colorspace = MODE_BGRA; /* straight: we premultiply */
    cfg->output.is_external_memory = 1;
    cfg->output.u.RGBA.rgba = s->a.w.canvas->pixels;
    cfg->output.u.RGBA.stride = (int)s->a.w.canvas->stride;
    cfg->output.u.RGBA.size = s->a.w.canvas->stride * s->a.w.canvas->height;
    if (d->load_w != d->width || d->load_h != d->height) {
        cfg->options.use_scaling = 1;
        cfg->options.scaled_width = (int)d->load_w;
        cfg->options.scaled_height = (int)d->load_h;
    }
    s->idec = WebPIDecode(NULL, 0, cfg);
    SD__RETURN_IF(s->idec == NULL, SD_ENOMEM);
    VP8StatusCode st = WebPIAppend(s->idec, s->a.w.in.data, s->a.w.in.len);
    sd__buf_free(&s->a.w.in); /* WebPIAppend keeps what it needs */
    if (st == VP8_STATUS_OK)
        s->still_done = d->end_reached = 1;
    else if (st != VP8_STATUS_SUSPENDED)
        return wp_fail(d, st, "decode");
    return SD_OK;
}

static int still_push(sd__webp *s, const uint8_t *p, size_t n)
{
    VP8StatusCode st = WebPIAppend(s->idec, p, n);
    if (st == VP8_STATUS_OK)
        s->still_done = s->a.w.dec->end_reached = 1;
    else if (st != VP8_STATUS_SUSPENDED)
        return wp_fail(s->a.w.dec, st, "decode");
    return SD_OK;
}

static int still_rows(const sd__webp *s)
{
    int last_y = 0, w, h, stride;
    if (WebPIDecGetRGB(s->idec, &last_y, &w, &h, &stride) == NULL)
        return 0;
    return last_y;
}

/* ---- animation: drawing (the frame list: sd_webp_scan.c) ---- */

/* (1 << 24) / a, libwebp's per-pixel division, looked up */
#define BS1(a) ((1u << 24) / ((a) + !(a))) /* [0] unused */
#define BS4(a) BS1(a), BS1((a) + 1), BS1((a) + 2), BS1((a) + 3)
#define BS16(a) BS4(a), BS4((a) + 4), BS4((a) + 8), BS4((a) + 12)
#define BS64(a) BS16(a), BS16((a) + 16), BS16((a) + 32), BS16((a) + 48)
static const uint32_t blend_scale[256] = {BS64(0), BS64(64), BS64(128), BS64(192)};

/* libwebp's BlendPixelRowNonPremult (anim_decode.c) for one pixel, on B,G,R,A
 * bytes. */
static inline void blend_px(const uint8_t *src, uint8_t *dst)
{
    uint32_t sa = src[3];
    if (sa == 0)
        return; /* dst stays */
    if (sa == 255) { /* libwebp's row loop leaves an opaque pixel as it is */
        memcpy(dst, src, 4);
        return;
    }
    uint32_t da = dst[3];
    uint32_t dfa = (da * (256 - sa)) >> 8;
    uint32_t a = sa + dfa; /* 1..255 */
    uint64_t scale = blend_scale[a];
    for (int c = 0; c < 3; c++)
        dst[c] = (uint8_t)(((uint64_t)(src[c] * sa + dst[c] * dfa) * scale) >> 24);
    dst[3] = (uint8_t)a;
}

/* n pixels of a frame over the canvas; an opaque pixel replaces and a
 * transparent one leaves the canvas, so groups of four of either kind are
 * done at once. */
static void blend_row(const uint8_t *src, uint8_t *dst, uint32_t n)
{
    uint32_t x = 0;
#if defined(__SSE2__) /* x86: little-endian, alpha in each pixel's top byte */
    const __m128i amask = _mm_set1_epi32((int)0xff000000u);
    for (; x + 4 <= n; x += 4) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(src + (size_t)x * 4));
        __m128i a = _mm_and_si128(v, amask);
        __m128i opaque = _mm_cmpeq_epi32(a, amask), clear = _mm_cmpeq_epi32(a, _mm_setzero_si128());
        if (_mm_movemask_epi8(_mm_or_si128(opaque, clear)) == 0xffff) {
            /* each pixel opaque (the frame's) or transparent (the canvas's) */
            __m128i *at = (__m128i *)(void *)(dst + (size_t)x * 4);
            __m128i c = _mm_loadu_si128(at);
            _mm_storeu_si128(at, _mm_or_si128(_mm_and_si128(opaque, v), _mm_andnot_si128(opaque, c)));
        } else {
            for (uint32_t k = x; k < x + 4; k++)
                blend_px(src + (size_t)k * 4, dst + (size_t)k * 4);
        }
    }
#endif
    for (; x < n; x++)
        blend_px(src + (size_t)x * 4, dst + (size_t)x * 4);
}

/* Grow the changed rectangle by (x, y, w, h). */
static void dirty(sd__webp *s, uint32_t x, uint32_t y, uint32_t w, uint32_t h)
{
    if (s->dx0 >= s->dx1) {
        s->dx0 = x, s->dy0 = y, s->dx1 = x + w, s->dy1 = y + h;
        return;
    }
    s->dx0 = SD__MIN(s->dx0, x);
    s->dy0 = SD__MIN(s->dy0, y);
    s->dx1 = SD__MAX(s->dx1, x + w);
    s->dy1 = SD__MAX(s->dy1, y + h);
}

/* A key frame owes nothing to the canvas under it, so it is decoded straight
 * into the bitmap handed out (the rest of it transparent) and premultiplied
 * there, without C — when no frame steps on from it (the next is a key frame,
 * or the listing is complete and it is the last), or when it is opaque and
 * covers the canvas (then C becomes a copy of it). */
static int direct(const sd__webp *s, uint32_t i)
{
    const wp_frame *f = &s->frames[i];
    const sd_decoder *d = s->a.w.dec;
    if (!d->frames[i].key)
        return 0;
    if (i + 1 < s->nframes ? d->frames[i + 1].key : s->demux_done)
        return 1;
    return f->opaque && covers(d, f);
}

static int decode_into(sd__webp *s, uint32_t i, uint8_t *dst, size_t stride)
{
    const wp_frame *f = &s->frames[i];
    WebPDecoderConfig cfg;
    if (!WebPInitDecoderConfig(&cfg))
        return SD_EUNSUPPORTED;
    cfg.output.colorspace = MODE_BGRA;
    cfg.output.is_external_memory = 1;
    cfg.output.u.RGBA.rgba = dst;
    cfg.output.u.RGBA.stride = (int)stride;
    cfg.output.u.RGBA.size = (f->h - 1) * stride + (size_t)f->w * 4;
    VP8StatusCode st = WebPDecode(s->a.w.in.data + f->off, f->len, &cfg);
    if (st != VP8_STATUS_OK) {
        char what[48];
        snprintf(what, sizeof what, "frame %u", i);
        return wp_fail(s->a.w.dec, st, what);
    }
    return SD_OK;
}

static int draw(sd__webp *s, uint32_t i)
{
    sd_decoder *d = s->a.w.dec;
    const wp_frame *f = &s->frames[i];
    const size_t W = d->width;
    int key = d->frames[i].key;
    /* an opaque frame over the canvas is the frame: nothing to blend */
    int blend = i > 0 && f->blend && !key && !f->opaque;
    if (key) {
        /* a frame that covers the canvas writes every pixel of it */
        if (!covers(d, f))
            memset(s->C, 0, W * d->height * 4);
        dirty(s, 0, 0, d->width, d->height);
    } else if (s->cur >= 0 && s->frames[s->cur].dispose_bg) {
        const wp_frame *p = &s->frames[s->cur];
        for (uint32_t y = p->y; y < p->y + p->h; y++)
            memset(s->C + (y * W + p->x) * 4, 0, (size_t)p->w * 4);
        dirty(s, p->x, p->y, p->w, p->h);
    }
    dirty(s, f->x, f->y, f->w, f->h);
    /* without blending the frame replaces its rectangle: libwebp decodes
     * straight into the canvas (as WebPAnimDecoder does); blending needs
     * the frame on its own first */
    size_t need = (size_t)f->w * f->h * 4;
    if (blend && need > s->F_cap) {
        uint8_t *F = sd__realloc(s->F, need);
        SD__RETURN_IF(F == NULL, SD_ENOMEM);
        s->F = F;
        s->F_cap = need;
    }
    SD__FORWARD_IF_ERROR(blend ? decode_into(s, i, s->F, (size_t)f->w * 4)
                               : decode_into(s, i, s->C + ((size_t)f->y * W + f->x) * 4, W * 4));
    if (!blend)
        return SD_OK;
    const wp_frame *prev = &s->frames[i - 1];
    for (uint32_t y = 0; y < f->h; y++) {
        const uint8_t *src = s->F + (size_t)y * f->w * 4;
        uint8_t *dst = s->C + ((f->y + y) * W + f->x) * 4;
        /* inside the rectangle just disposed to background: no blending */
        uint32_t cy = f->y + y, lo = f->w, hi = f->w; /* in frame columns */
        if (prev->dispose_bg && cy >= prev->y && cy < prev->y + prev->h) {
            lo = SD__MIN(f->w, prev->x > f->x ? prev->x - f->x : 0);
            hi = SD__MAX(lo, SD__MIN(f->w, prev->x + prev->w > f->x ? prev->x + prev->w - f->x : 0));
        }
        blend_row(src, dst, lo);
        memcpy(dst + (size_t)lo * 4, src + (size_t)lo * 4, (size_t)(hi - lo) * 4);
        blend_row(src + (size_t)hi * 4, dst + (size_t)hi * 4, f->w - hi);
    }
    return SD_OK;
}

/* Key frame i alone on a new bitmap: transparent around its rectangle,
 * decoded in place and premultiplied there. */
static int draw_direct(sd__webp *s, uint32_t i, sd_bitmap **out)
{
    sd_decoder *d = s->a.w.dec;
    const wp_frame *f = &s->frames[i];
    sd_bitmap *b;
    SD__FORWARD_IF_ERROR(sd__bitmap_alloc(d->width, d->height, 0, &b));
    if (!covers(d, f)) {
        for (uint32_t y = 0; y < d->height; y++) {
            uint8_t *row = b->pixels + (size_t)y * b->stride;
            if (y < f->y || y >= f->y + f->h) {
                memset(row, 0, (size_t)d->width * 4);
            } else {
                memset(row, 0, (size_t)f->x * 4);
                memset(row + (size_t)(f->x + f->w) * 4, 0, (size_t)(d->width - f->x - f->w) * 4);
            }
        }
    }
    uint8_t *at = b->pixels + (size_t)f->y * b->stride + (size_t)f->x * 4;
    int rc = decode_into(s, i, at, b->stride);
    if (rc < 0) {
        sd_bitmap_free(b);
        s->cur = -1;
        return rc;
    }
    if (!f->opaque) /* alpha 255 everywhere needs no pass */
        for (uint32_t y = 0; y < f->h; y++)
            sd__premultiply_bgra(at + (size_t)y * b->stride, at + (size_t)y * b->stride, f->w);
    *out = b;
    return SD_OK;
}

/* Frame `index` composited on C. Premultiplied into `out` where C changed
 * when that is a small part (then shown by a copy: *fresh = NULL), else into
 * a new bitmap handed over (*fresh; one pass instead of a premultiply and a
 * copy). */
static int render(sd__webp *s, uint32_t index, sd_bitmap **fresh)
{
    sd_decoder *d = s->a.w.dec;
    if (s->C == NULL) {
        /* the straight canvas, the premultiplied frame, and at most a canvas
         * saved for a frame's dispose */
        SD__FORWARD_IF_ERROR(sd__decoder_charge(d, (uint64_t)d->width * d->height * 12, "the WebP canvases"));
        s->C = sd__malloc((size_t)d->width * d->height * 4);
        SD__RETURN_IF(s->C == NULL, SD_ENOMEM);
    }
    if (s->cur == (int64_t)index && s->out != NULL && !s->out_stale)
        return SD_OK; /* `out` shows it */
    if (s->cur != (int64_t)index) {
        int restart;
        uint32_t next = sd__anim_first_step(d, s->cur, index, &restart);
        if (restart)
            s->cur = -1;
        for (uint32_t i = next; i <= index; i++) {
            if (i == index && direct(s, i)) {
                sd_bitmap *b;
                SD__FORWARD_IF_ERROR(draw_direct(s, i, &b));
                /* C is needed only to step on to a frame that is not a key
                 * frame; else nothing steps on from here */
                if (i + 1 < s->nframes && !d->frames[i + 1].key) {
                    for (uint32_t y = 0; y < d->height; y++)
                        memcpy(s->C + (size_t)y * d->width * 4, b->pixels + (size_t)y * b->stride, (size_t)d->width * 4);
                    s->cur = i;
                } else {
                    s->cur = -1;
                }
                s->dx0 = s->dx1 = s->dy0 = s->dy1 = 0;
                s->out_stale = 1;
                sd__frame_cache_put(&s->a.cache, index, b);
                *fresh = b;
                return SD_OK;
            }
            int rc = draw(s, i);
            if (rc < 0) {
                s->cur = -1;
                return rc;
            }
            s->cur = i;
        }
    }
    uint64_t changed = (uint64_t)(s->dx1 - s->dx0) * (s->dy1 - s->dy0), all = (uint64_t)d->width * d->height;
    sd_bitmap *dst = s->out;
    if (changed * 4 >= all * 3) {
        SD__FORWARD_IF_ERROR(sd__bitmap_alloc(d->width, d->height, 0, &dst));
        s->out_stale = 1;
    } else if (s->out == NULL || s->out_stale) {
        if (s->out == NULL)
            SD__FORWARD_IF_ERROR(sd__bitmap_alloc(d->width, d->height, 0, &s->out));
        dst = s->out;
        s->out_stale = 0;
    } else {
        all = 0; /* only what changed: `out` holds the rest from the frame before
                  * (every restart begins at a key frame, which marks the whole canvas) */
    }
    uint32_t x0 = all ? 0 : s->dx0, y0 = all ? 0 : s->dy0, x1 = all ? d->width : s->dx1, y1 = all ? d->height : s->dy1;
    for (uint32_t y = y0; y < y1; y++)
        sd__premultiply_bgra(s->C + ((size_t)y * d->width + x0) * 4, dst->pixels + (size_t)y * dst->stride + (size_t)x0 * 4,
                             x1 - x0);
    s->dx0 = s->dx1 = s->dy0 = s->dy1 = 0;
    sd__frame_cache_put(&s->a.cache, index, dst);
    *fresh = dst == s->out ? NULL : dst;
    return SD_OK;
}

/* ---- codec ---- */

static int sdw_init(sd_decoder *d)
{
    SD__FORWARD_IF_ERROR(sd__anim_state_init(d, sizeof(sd__webp)));
    sd__webp *s = d->codec_state;
    s->cur = -1;
    return SD_OK;
}

static void sdw_destroy(sd_decoder *d)
{
    sd__webp *s = d->codec_state;
    if (s == NULL)
        return;
    if (s->idec != NULL)
        WebPIDelete(s->idec);
    sd_bitmap_free(s->out);
    sd__free(s->frames);
    sd__free(s->C);
    sd__free(s->F);
    sd__anim_state_destroy(d);
}

/* A still's EXIF orientation (issue 38), as libvips and JPEG/PNG here apply
 * it: VP8X's EXIF flag says there is an EXIF chunk, which the container puts
 * after the image data. 1..8 once known; 0 while the chunk may still come
 * (then no header yet: such a file gives no preview). Animations keep 1. */
static int still_orientation(const sd__webp *s, int at_end)
{
    const uint8_t *p = s->a.w.in.data;
    size_t n = s->a.w.in.len;
    if (n < 30 || memcmp(p + 12, "VP8X", 4) != 0 || !(p[20] & 0x08))
        return 1;
    size_t riff_end = 8 + (size_t)le32(p + 4), end = SD__MIN(n, riff_end), at = 12, next;
    while ((next = sd__webp_chunk_end(p, at, end)) != 0) {
        if (memcmp(p + at, "EXIF", 4) == 0)
            return sd_exif_orientation(p + at + 8, le32(p + at + 4));
        at = next;
    }
    return at_end || at >= riff_end ? 1 : 0;
}

/* VP8X's ICC flag says an ICCP chunk follows it, before the image data
 * (libwebp knows the features from VP8X alone, before it). 1 when read or
 * there is none; 0 while it may still come. */
static int webp_icc(sd__webp *s, int at_end)
{
    const uint8_t *p = s->a.w.in.data;
    size_t n = s->a.w.in.len;
    if (n < 30 || memcmp(p + 12, "VP8X", 4) != 0 || !(p[20] & 0x20))
        return 1;
    size_t riff_end = 8 + (size_t)le32(p + 4), end = SD__MIN(n, riff_end), at = 12, next;
    while ((next = sd__webp_chunk_end(p, at, end)) != 0) {
        if (memcmp(p + at, "ICCP", 4) == 0) {
            sd__color_set_icc(&s->a.w.dec->color, p + at + 8, le32(p + at + 4));
            return 1;
        }
        if (memcmp(p + at, "VP8 ", 4) == 0 || memcmp(p + at, "VP8L", 4) == 0 || memcmp(p + at, "ANMF", 4) == 0)
            return 1; /* the image began: no profile after all */
        at = next;
    }
    return at_end || at >= riff_end;
}

/* The header once the features (and a still's orientation) are known. */
static int header(sd__webp *s, int at_end)
{
    sd_decoder *d = s->a.w.dec;
    WebPBitstreamFeatures f;
    VP8StatusCode st = WebPGetFeatures(s->a.w.in.data, s->a.w.in.len, &f);
    if (st == VP8_STATUS_NOT_ENOUGH_DATA)
        return SD_OK;
    if (st != VP8_STATUS_OK)
        return wp_fail(d, st, "header");
    int orientation = f.has_animation ? 1 : still_orientation(s, at_end);
    if (orientation == 0 || !webp_icc(s, at_end))
        return SD_OK;
    SD__FORWARD_IF_ERROR(sd__decoder_set_header(d, (uint32_t)f.width, (uint32_t)f.height, orientation, 0, f.has_alpha));
    s->have_header = 1;
    s->anim = f.has_animation;
    d->animated = d->framed = s->anim;
    return s->anim ? SD_OK : still_start(s);
}

static int sdw_push(sd_decoder *d, const uint8_t *p, size_t n)
{
    sd__webp *s = d->codec_state;
    if (s->idec != NULL)
        return still_push(s, p, n);
    SD__FORWARD_IF_ERROR(sd__buf_put(&s->a.w.in, p, n));
    if (!s->have_header) {
        SD__FORWARD_IF_ERROR(header(s, 0));
        if (!s->have_header || !s->anim)
            return SD_OK;
    }
    return sd__webp_anim_walk(s);
}

static int sdw_finish(sd_decoder *d)
{
    sd__webp *s = d->codec_state;
    if (!s->have_header)
        SD__FORWARD_IF_ERROR(header(s, 1)); /* an EXIF chunk cut short: no orientation */
    if (!s->have_header) {
        sd__decoder_msg(d, "WebP: input ended inside the header");
        return SD_ETRUNCATED;
    }
    if (!s->anim) {
        int rows = s->still_done ? (int)s->a.w.canvas->height : still_rows(s);
        if (rows <= 0) {
            sd__decoder_msg(d, "WebP: input ended before any row could be decoded");
            return SD_ETRUNCATED;
        }
        /* rows never decoded stay transparent */
        for (uint32_t y = (uint32_t)rows; y < s->a.w.canvas->height; y++)
            memset(s->a.w.canvas->pixels + (size_t)y * s->a.w.canvas->stride, 0, s->a.w.canvas->stride);
        for (uint32_t y = 0; y < s->a.w.canvas->height; y++) {
            uint8_t *row = s->a.w.canvas->pixels + (size_t)y * s->a.w.canvas->stride;
            sd__premultiply_bgra(row, row, s->a.w.canvas->width);
        }
        d->complete = s->still_done;
        d->end_reached = 1;
        return SD_OK;
    }
    if (!s->demux_done)
        SD__FORWARD_IF_ERROR(sd__webp_demux_scan(s));
    if (s->nframes == 0) {
        sd__decoder_msg(d, "WebP: no complete frame in the file");
        return SD_ETRUNCATED;
    }
    d->complete = s->demux_done && s->a.bad_from == UINT32_MAX;
    d->end_reached = 1;
    return SD_OK;
}

static int render_view(void *state, uint32_t index, sd_bitmap **out, int *owned)
{
    sd__webp *s = state;
    sd_bitmap *fresh = NULL;
    SD__FORWARD_IF_ERROR(render(s, index, &fresh));
    *out = fresh ? fresh : s->out;
    *owned = fresh != NULL;
    return SD_OK;
}

static int sdw_frame(sd_decoder *d, uint32_t index, sd_bitmap **out, int *owned)
{
    sd__webp *s = d->codec_state;
    return sd__anim_frame(d, &s->a.cache, &s->a.bad_from, index, render_view, s, out, owned);
}

static int sdw_canvas(sd_decoder *d, int final, sd_bitmap **out, int *owned)
{
    sd__webp *s = d->codec_state;
    *owned = 0;
    if (s->anim) {
        if (d->nframes == 0)
            return final ? SD_EBADSTATE : SD_EAGAIN;
        return sdw_frame(d, 0, out, owned);
    }
    SD__RETURN_IF(s->a.w.canvas == NULL, final ? SD_EBADSTATE : SD_EAGAIN);
    if (final) { /* premultiplied by finish; hand it over */
        *out = s->a.w.canvas;
        *owned = 1;
        s->a.w.canvas = NULL;
        return SD_OK;
    }
    /* a preview: the rows so far, premultiplied, the rest transparent */
    int rows = still_rows(s);
    SD__RETURN_IF(rows <= 0, SD_EAGAIN);
    sd_bitmap *b;
    SD__FORWARD_IF_ERROR(sd__bitmap_alloc(s->a.w.canvas->width, s->a.w.canvas->height, 1, &b));
    for (uint32_t y = 0; y < (uint32_t)rows; y++)
        sd__premultiply_bgra(s->a.w.canvas->pixels + (size_t)y * s->a.w.canvas->stride,
                             b->pixels + (size_t)y * b->stride, b->width);
    *out = b;
    *owned = 1;
    return SD_OK;
}

static int sniff_webp(const uint8_t *p, size_t n)
{
    if (memcmp(p, "RIFF", SD__MIN(n, 4)) != 0)
        return 0;
    if (n < 12)
        return n > 8 && memcmp(p + 8, "WEBP", n - 8) != 0 ? 0 : -1;
    return memcmp(p + 8, "WEBP", 4) == 0;
}

const sd__codec sd__webp_codec = {
    SD_FORMAT_WEBP, "WebP", "image/webp", sniff_webp,
    SD_CAP_DECODE | SD_CAP_INCREMENTAL | SD_CAP_DOWNSCALE | SD_CAP_ANIMATION
        | SD_CAP_ENCODE | SD_CAP_ENCODE_ANIMATION | SD_CAP_ENCODE_ALPHA
        | SD_CAP_ENCODE_QUALITY,
    sdw_init, sdw_push, sdw_finish, sdw_canvas, sdw_destroy, sdw_frame, sd__webp_encode,
};
