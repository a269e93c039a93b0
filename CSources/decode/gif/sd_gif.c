/*
 * sd_gif.c — GIF codec: our own block walker over the bytes as they arrive,
 * giflib for each image's LZW data, our own compositing.
 *
 * giflib reads a whole file from a callback and has no way to wait for more
 * bytes, so it is only ever pointed at bytes that are all there: the walker
 * finds where each image (descriptor, local table, every data sub-block up
 * to the terminator) begins and ends, announces it as a frame once complete,
 * and giflib decodes it when a frame is asked for (DGifGetImageHeader at the
 * image's offset: no SavedImages, nothing kept by giflib between frames).
 *
 * Frames on demand: one working canvas (and the rectangle under a
 * restore-to-previous frame) steps forward one frame decode per frame;
 * going back restarts from the nearest key frame or a kept frame
 * (decode/anim). Pixels are opaque or fully transparent, so the canvas is
 * already premultiplied ARGB32. Rules: ../shared/corpus-anim/README.md.
 */
#include <string.h>

#include <gif_lib.h>

#include "decode/anim/sd_anim_int.h"
#include "bitmap/sd_pixel.h"

typedef struct {
    size_t off;          /* the image descriptor, after its 0x2C */
    uint32_t x, y, w, h; /* as stored (may lie partly or wholly off the screen) */
    uint8_t disposal;    /* 0..7; 4 acts as 3, 5..7 as 1 */
    int16_t transparent; /* index, -1 none */
    uint8_t blank_before; /* the canvas is all transparent before this frame */
} gif_frame;

enum { W_HEADER, W_RECORD, W_EXT, W_IMAGE, W_SUBBLOCKS, W_DONE };

typedef struct {
    sd__anim_state a; /* first: the decoder, the bytes, the canvas, the frames kept */
    /* walker */
    int state;
    size_t at;         /* next byte the walker reads */
    int ext_label;     /* the extension being walked; -1 image data */
    int ext_block;     /* sub-blocks seen in that extension */
    int netscape;      /* the extension is NETSCAPE2.0 / ANIMEXTS1.0 */
    int loop_seen;
    int gce_disposal, gce_transparent, gce_delay; /* pending GCE, -1 none */
    gif_frame pending;
    int trailer, broken;
    int first_whole; /* SD_DEC_FIRST_FRAME_ONLY: the first image is all in */
    gif_frame *frames;
    uint32_t nframes, cap;
    /* renderer */
    GifFileType *gif;
    size_t rd; /* giflib's read position in `in` */
    int64_t cur;      /* frame drawn on the canvas (before its disposal), -1 none */
    uint32_t *saved;  /* the rectangle under the current frame, when it restores */
    size_t saved_cap;
    uint8_t *line;
    size_t line_cap;
    uint32_t gpal[256]; /* the global colour table, packed */
    int gpal_ready;
} sd__gif;

static int g_read(GifFileType *g, GifByteType *buf, int n)
{
    sd__gif *s = g->UserData;
    size_t k = SD__MIN((size_t)n, s->a.w.in.len - s->rd);
    memcpy(buf, s->a.w.in.data + s->rd, k);
    s->rd += k;
    return (int)k;
}

static uint32_t le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

static int covers(const sd_decoder *d, const gif_frame *f)
{
    return f->x == 0 && f->y == 0 && f->w >= d->width && f->h >= d->height;
}

static int restores(const gif_frame *f) { return f->disposal == 3 || f->disposal == 4; }

/* An image is complete: record it, announce it. */
static int add_frame(sd__gif *s)
{
    sd_decoder *d = s->a.w.dec;
    SD__RESERVE(s->frames, s->nframes, s->cap);
    gif_frame *f = &s->frames[s->nframes];
    *f = s->pending;
    if (s->nframes == 0) {
        f->blank_before = 1;
    } else {
        const gif_frame *p = f - 1;
        f->blank_before = restores(p) ? p->blank_before : (p->disposal == 2 && covers(d, p));
    }
    int key = f->blank_before || (covers(d, f) && f->transparent < 0 && !restores(f));
    SD__FORWARD_IF_ERROR(sd__decoder_add_frame(d, s->gce_delay < 0 ? 0 : (uint32_t)s->gce_delay * 10, key));
    s->nframes++;
    if (s->nframes == 2)
        d->animated = 1;
    s->gce_disposal = s->gce_transparent = s->gce_delay = -1;
    return SD_OK;
}

/* Walk as far as the bytes go. Damage after the header ends the walk: the
 * frames found so far stand (the file is then incomplete). */
static int walk(sd__gif *s)
{
    sd_decoder *d = s->a.w.dec;
    const uint8_t *p = s->a.w.in.data;
    size_t n = s->a.w.in.len;
    if (s->a.bad_from != UINT32_MAX)
        s->state = W_DONE; /* a frame failed: the animation ends before it */
    for (;;) {
        switch (s->state) {
        case W_HEADER: {
            if (n < 13)
                return SD_OK;
            size_t gct = (p[10] & 0x80) ? 3u << ((p[10] & 7) + 1) : 0;
            if (n < 13 + gct)
                return SD_OK;
            SD__FORWARD_IF_ERROR(sd__decoder_set_header(d, le16(p + 6), le16(p + 8), 1, 0, 1));
            int err = 0;
            s->rd = 0;
            s->gif = DGifOpen(s, g_read, &err);
            if (s->gif == NULL) {
                sd__decoder_msg(d, "GIF: %s", GifErrorString(err));
                return err == D_GIF_ERR_NOT_ENOUGH_MEM ? SD_ENOMEM : SD_ECORRUPT;
            }
            s->at = 13 + gct;
            s->state = W_RECORD;
            break;
        }
        case W_RECORD:
            if (s->at >= n)
                return SD_OK;
            if (p[s->at] == 0x3B) {
                s->trailer = 1;
                s->state = W_DONE;
            } else if (p[s->at] == 0x21) {
                s->state = W_EXT;
            } else if (p[s->at] == 0x2C) {
                s->state = W_IMAGE;
            } else {
                if (d->warnings++ == 0)
                    sd__decoder_msg(d, "GIF: unknown block 0x%02x at byte %zu: the rest is ignored", p[s->at], s->at);
                s->broken = 1;
                s->state = W_DONE;
            }
            break;
        case W_EXT:
            if (s->at + 2 > n)
                return SD_OK;
            s->ext_label = p[s->at + 1];
            s->ext_block = 0;
            s->netscape = 0;
            s->at += 2;
            s->state = W_SUBBLOCKS;
            break;
        case W_IMAGE: {
            if (s->at + 10 > n)
                return SD_OK;
            const uint8_t *q = p + s->at + 1;
            size_t lct = (q[8] & 0x80) ? 3u << ((q[8] & 7) + 1) : 0;
            if (s->at + 10 + lct + 1 > n) /* + the LZW code size */
                return SD_OK;
            s->pending = (gif_frame){
                .off = s->at + 1, .x = le16(q), .y = le16(q + 2), .w = le16(q + 4), .h = le16(q + 6),
                .disposal = (uint8_t)(s->gce_disposal < 0 ? 0 : s->gce_disposal),
                .transparent = (int16_t)s->gce_transparent,
            };
            if (d->first_frame_only && s->nframes == 1) {
                s->state = W_DONE; /* a second image: it is an animation; we stop here */
                s->first_whole = 1; /* what was asked for is all here */
                d->animated = 1;
                break;
            }
            s->ext_label = -1;
            s->at += 10 + lct + 1;
            s->state = W_SUBBLOCKS;
            break;
        }
        case W_SUBBLOCKS: {
            if (s->at >= n)
                return SD_OK;
            size_t len = p[s->at];
            if (s->at + 1 + len > n)
                return SD_OK;
            const uint8_t *b = p + s->at + 1;
            s->at += 1 + len;
            if (len == 0) { /* the terminator: the record is complete */
                s->state = W_RECORD;
                if (s->ext_label < 0) {
                    SD__FORWARD_IF_ERROR(add_frame(s));
                }
                break;
            }
            if (s->ext_label == 0xF9 && s->ext_block == 0 && len >= 4) {
                s->gce_disposal = (b[0] >> 2) & 7;
                s->gce_transparent = (b[0] & 1) ? b[3] : -1;
                s->gce_delay = (int)le16(b + 1);
            } else if (s->ext_label == 0xFF && s->ext_block == 0 && len == 11) {
                s->netscape = memcmp(b, "NETSCAPE2.0", 11) == 0 || memcmp(b, "ANIMEXTS1.0", 11) == 0;
            } else if (s->ext_label == 0xFF && s->ext_block == 1 && s->netscape && len >= 3 &&
                       b[0] == 1 && !s->loop_seen) {
                s->loop_seen = 1;
                d->loop_count = le16(b + 1);
                d->animated = 1;
            }
            s->ext_block++;
            break;
        }
        default: /* W_DONE */
            d->end_reached = 1;
            return SD_OK;
        }
    }
}

static int sdg_init(sd_decoder *d)
{
    SD__FORWARD_IF_ERROR(sd__anim_state_init(d, sizeof(sd__gif)));
    sd__gif *s = d->codec_state;
    s->cur = -1;
    s->gce_disposal = s->gce_transparent = s->gce_delay = -1;
    d->framed = 1; /* even a one-image GIF has a delay (browsers: 100 ms) */
    return SD_OK;
}

static void sdg_destroy(sd_decoder *d)
{
    sd__gif *s = d->codec_state;
    if (s == NULL)
        return;
    if (s->gif != NULL)
        DGifCloseFile(s->gif, NULL);
    sd__free(s->frames);
    sd__free(s->saved);
    sd__free(s->line);
    sd__anim_state_destroy(d);
}

static int sdg_push(sd_decoder *d, const uint8_t *p, size_t n)
{
    sd__gif *s = d->codec_state;
    SD__FORWARD_IF_ERROR(sd__buf_put(&s->a.w.in, p, n));
    return walk(s);
}

static int sdg_finish(sd_decoder *d)
{
    sd__gif *s = d->codec_state;
    if (s->state == W_HEADER) {
        sd__decoder_msg(d, "GIF: input ended inside the header or the global colour table");
        return SD_ETRUNCATED;
    }
    if (s->nframes == 0) {
        if (d->message[0] == '\0')
            sd__decoder_msg(d, "GIF: no complete image in the file");
        return s->broken ? SD_ECORRUPT : SD_ETRUNCATED;
    }
    /* complete: the whole file, or with SD_DEC_FIRST_FRAME_ONLY the whole
     * first frame (the walk stops at the second image) */
    d->complete = (s->trailer || s->first_whole) && !s->broken && s->a.bad_from == UINT32_MAX;
    d->end_reached = 1;
    return SD_OK;
}

/* Clear the frame's rectangle (clipped to the canvas) to transparent, or put
 * back what was under it. */
static void rect_clip(const sd_decoder *d, const gif_frame *f, uint32_t *x0, uint32_t *y0,
                      uint32_t *x1, uint32_t *y1)
{
    *x0 = SD__MIN(f->x, d->width);
    *y0 = SD__MIN(f->y, d->height);
    *x1 = (uint32_t)SD__MIN((uint64_t)f->x + f->w, d->width);
    *y1 = (uint32_t)SD__MIN((uint64_t)f->y + f->h, d->height);
}

static void dispose(sd__gif *s, const gif_frame *f)
{
    uint32_t x0, y0, x1, y1;
    rect_clip(s->a.w.dec, f, &x0, &y0, &x1, &y1);
    if (x0 >= x1 || y0 >= y1)
        return;
    size_t w = x1 - x0;
    for (uint32_t y = y0; y < y1; y++) {
        uint32_t *row = (uint32_t *)(void *)(s->a.w.canvas->pixels + (size_t)y * s->a.w.canvas->stride) + x0;
        if (f->disposal == 2)
            memset(row, 0, w * 4);
        else if (restores(f))
            memcpy(row, s->saved + (size_t)(y - y0) * w, w * 4);
    }
}

static int save_under(sd__gif *s, const gif_frame *f)
{
    uint32_t x0, y0, x1, y1;
    rect_clip(s->a.w.dec, f, &x0, &y0, &x1, &y1);
    if (x0 >= x1 || y0 >= y1)
        return SD_OK;
    size_t w = x1 - x0, need = w * (y1 - y0);
    if (need > s->saved_cap) {
        uint32_t *p = sd__realloc(s->saved, need * 4);
        SD__RETURN_IF(p == NULL, SD_ENOMEM);
        s->saved = p;
        s->saved_cap = need;
    }
    for (uint32_t y = y0; y < y1; y++)
        memcpy(s->saved + (size_t)(y - y0) * w,
               (uint32_t *)(void *)(s->a.w.canvas->pixels + (size_t)y * s->a.w.canvas->stride) + x0, w * 4);
    return SD_OK;
}

static int gif_fail(sd__gif *s, uint32_t index)
{
    int e = s->gif->Error;
    sd__decoder_msg(s->a.w.dec, "GIF: frame %u: %s", index, GifErrorString(e) ? GifErrorString(e) : "decode error");
    return e == D_GIF_ERR_NOT_ENOUGH_MEM ? SD_ENOMEM : SD_ECORRUPT;
}

static void pack_palette(const ColorMapObject *cm, uint32_t pal[256])
{
    int n = SD__MIN(cm->ColorCount, 256);
    for (int i = 0; i < n; i++)
        pal[i] = sd__pack_opaque(cm->Colors[i].Red, cm->Colors[i].Green, cm->Colors[i].Blue);
    for (int i = n; i < 256; i++)
        pal[i] = 0xFF000000u; /* an index past the table: black */
}

/* Draw frame i onto the canvas with giflib. */
static int draw(sd__gif *s, uint32_t index)
{
    sd_decoder *d = s->a.w.dec;
    const gif_frame *f = &s->frames[index];
    uint32_t x0, y0, x1, y1;
    rect_clip(d, f, &x0, &y0, &x1, &y1);
    if (x0 >= x1 || y0 >= y1)
        return SD_OK; /* wholly off the screen (or empty): nothing changes */
    if ((int64_t)f->w * f->h > d->max_pixels) {
        sd__decoder_msg(d, "GIF: frame %u is %ux%u, over the pixel limit", index, f->w, f->h);
        return SD_ETOOLARGE;
    }
    s->rd = f->off;
    if (DGifGetImageHeader(s->gif) == GIF_ERROR)
        return gif_fail(s, index);
    const ColorMapObject *cm = s->gif->Image.ColorMap ? s->gif->Image.ColorMap : s->gif->SColorMap;
    if (cm == NULL) {
        sd__decoder_msg(d, "GIF: frame %u has no colour table", index);
        return SD_ECORRUPT;
    }
    /* the global table is packed once: a GIF of many small frames would
     * otherwise pack 256 colours for every few pixels */
    uint32_t local[256], *pal = local;
    if (cm == s->gif->SColorMap) {
        pal = s->gpal;
        if (!s->gpal_ready)
            pack_palette(cm, s->gpal);
        s->gpal_ready = 1;
    } else {
        pack_palette(cm, local);
    }
    /* a small frame wholly on the screen in one call to giflib (as
     * DGifSlurp does), else row by row */
    const int whole = !s->gif->Image.Interlace && (uint64_t)f->y + f->h <= d->height && (size_t)f->w * f->h <= 65536;
    size_t need = whole ? (size_t)f->w * f->h : f->w;
    if (need > s->line_cap) {
        uint8_t *l = sd__realloc(s->line, need);
        SD__RETURN_IF(l == NULL, SD_ENOMEM);
        s->line = l;
        s->line_cap = need;
    }
    if (whole && DGifGetLine(s->gif, s->line, (int)need) == GIF_ERROR)
        return gif_fail(s, index);
    /* Interlaced rows arrive in passes: 0,8,16..; 4,12..; 2,6..; 1,3,5.. */
    static const uint8_t start[4] = {0, 4, 2, 1}, step[4] = {8, 8, 4, 2};
    int pass = 0;
    uint32_t ry = 0;
    const int tidx = f->transparent;
    for (uint32_t r = 0; r < f->h; r++) {
        uint32_t row;
        if (s->gif->Image.Interlace) {
            while (ry >= f->h && pass < 3) {
                pass++;
                ry = start[pass];
            }
            row = ry;
            ry += step[pass];
        } else {
            row = r;
        }
        uint64_t y = (uint64_t)f->y + row;
        if (!s->gif->Image.Interlace && y >= d->height)
            break; /* the rest lies below the screen */
        if (!whole && DGifGetLine(s->gif, s->line, (int)f->w) == GIF_ERROR)
            return gif_fail(s, index);
        if (y >= d->height)
            continue;
        uint32_t *out = (uint32_t *)(void *)(s->a.w.canvas->pixels + (size_t)y * s->a.w.canvas->stride);
        const uint8_t *src = s->line + (whole ? (size_t)r * f->w : 0) + (x0 - f->x);
        if (tidx < 0) {
            for (uint32_t x = x0; x < x1; x++, src++)
                out[x] = pal[*src];
        } else { /* a select, not a branch: transparency comes in runs and specks */
            for (uint32_t x = x0; x < x1; x++, src++) {
                uint32_t keep = out[x], c = pal[*src];
                out[x] = *src == tidx ? keep : c;
            }
        }
    }
    return SD_OK;
}

/* Bring the canvas to frame `index`: forward from the current frame, or
 * from the nearest key frame, or from a kept frame after it. */
static int render(sd__gif *s, uint32_t index)
{
    sd_decoder *d = s->a.w.dec;
    if (s->a.w.canvas == NULL) {
        /* the canvas and at most a canvas saved under a restoring frame */
        SD__FORWARD_IF_ERROR(sd__decoder_charge(d, (uint64_t)d->width * d->height * 8, "the GIF canvas"));
        SD__FORWARD_IF_ERROR(sd__bitmap_alloc(d->width, d->height, 0, &s->a.w.canvas));
    }
    if (s->cur == (int64_t)index)
        return SD_OK;
    int restart;
    uint32_t next = sd__anim_first_step(d, s->cur, index, &restart);
    if (restart) {
        uint32_t k = next;
        s->cur = -1;
        for (uint32_t j = index; j > k; j--) {
            const sd_bitmap *c = sd__frame_cache_get(&s->a.cache, j - 1);
            if (c != NULL && !restores(&s->frames[j - 1])) {
                for (uint32_t y = 0; y < c->height; y++)
                    memcpy(s->a.w.canvas->pixels + (size_t)y * s->a.w.canvas->stride,
                           c->pixels + (size_t)y * c->stride, (size_t)c->width * 4);
                s->cur = j - 1;
                next = j;
                break;
            }
        }
        if (s->cur < 0)
            for (uint32_t y = 0; y < d->height; y++)
                memset(s->a.w.canvas->pixels + (size_t)y * s->a.w.canvas->stride, 0, (size_t)d->width * 4);
    }
    for (uint32_t i = next; i <= index; i++) {
        if (s->cur >= 0)
            dispose(s, &s->frames[s->cur]);
        s->cur = -1;
        if (restores(&s->frames[i]))
            SD__FORWARD_IF_ERROR(save_under(s, &s->frames[i]));
        SD__FORWARD_IF_ERROR(draw(s, i));
        s->cur = i;
        sd__frame_cache_put(&s->a.cache, i, s->a.w.canvas);
    }
    return SD_OK;
}

static int render_view(void *state, uint32_t index, sd_bitmap **out, int *owned)
{
    sd__gif *s = state;
    SD__FORWARD_IF_ERROR(render(s, index));
    *out = s->a.w.canvas;
    *owned = 0;
    return SD_OK;
}

static int sdg_frame(sd_decoder *d, uint32_t index, sd_bitmap **out, int *owned)
{
    sd__gif *s = d->codec_state;
    return sd__anim_frame(d, &s->a.cache, &s->a.bad_from, index, render_view, s, out, owned);
}

/* A still's view of the file: its first frame, once complete. */
static int sdg_canvas(sd_decoder *d, int final, sd_bitmap **out, int *owned)
{
    if (d->nframes == 0)
        return final ? SD_EBADSTATE : SD_EAGAIN;
    return sdg_frame(d, 0, out, owned);
}

static int sniff_gif(const uint8_t *p, size_t n)
{
    size_t k = SD__MIN(n, 6);
    if (memcmp(p, "GIF87a", k) == 0 || memcmp(p, "GIF89a", k) == 0)
        return n >= 6 ? 1 : -1;
    return 0;
}

const sd__codec sd__gif_codec = {
    SD_FORMAT_GIF, "GIF", "image/gif", sniff_gif,
    SD_CAP_DECODE | SD_CAP_INCREMENTAL | SD_CAP_ANIMATION
        | SD_CAP_ENCODE | SD_CAP_ENCODE_ANIMATION | SD_CAP_ENCODE_ALPHA,
    sdg_init, sdg_push, sdg_finish, sdg_canvas, sdg_destroy, sdg_frame, sd__gif_encode,
};
