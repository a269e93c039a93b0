/*
 * sd_apng.c — APNG on a libpng without the APNG patch (Debian's): we walk
 * acTL/fcTL/fdAT ourselves, and each frame is handed to libpng as a PNG of
 * its own (the file's IHDR with the frame's size, its PLTE and tRNS, the
 * frame's data as one IDAT). Frames are converted to straight 8-bit RGBA as
 * any PNG is (sd_png.c's transforms), composited in straight alpha (SOURCE,
 * or OVER with FFmpeg's integer formula), then premultiplied. Rules and
 * static fallback: ../shared/corpus-anim/README.md. Decoding is on demand:
 * the canvas steps forward one frame decode per frame; going back restarts
 * at the nearest key frame. A frame whose data does not decode ends the
 * animation there (the still fallback would need every frame decoded up
 * front, before the first could be shown).
 */
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <png.h>
#include <zlib.h>

#include "decode/png/sd_png_int.h"
#include "decode/anim/sd_anim_int.h"

enum { DISPOSE_NONE, DISPOSE_BACKGROUND, DISPOSE_PREVIOUS };
enum { BLEND_SOURCE, BLEND_OVER };

typedef struct {
    uint32_t x, y, w, h;
    uint32_t delay_ms;
    uint8_t dispose, blend, ok, blank_before;
    uint32_t first_data, ndata; /* chunks in `data` */
    size_t bytes;               /* compressed bytes over those chunks */
} ap_frame;

typedef struct {
    size_t off, len; /* zlib data in the kept bytes */
} ap_data;

struct sd__apng {
    sd_decoder *dec;
    sd__buf in;
    size_t at; /* next chunk header */
    int decision;
    /* IHDR and the chunks every frame needs */
    uint32_t W, H;
    uint8_t depth, color, interlace, have_ihdr, trns;
    size_t plte_off, plte_len, trns_off, trns_len; /* whole chunks (header + CRC) */
    /* colour chunks (data offset and length; 0: none), applied at the
     * first IDAT in the spec's precedence: cICP > iCCP > sRGB > cHRM/gAMA */
    size_t cicp_off, iccp_off, iccp_len, chrm_off, gama_off;
    int srgb;
    /* animation chunks */
    int actl_count, idat_seen, iend, invalid;
    uint32_t num_frames, num_plays, next_seq;
    int idat_frame; /* an fcTL came before IDAT: the default image is frame 0 */
    ap_frame *frames;
    uint32_t nframes, fcap;
    ap_data *data;
    uint32_t ndata, dcap;
    uint32_t bad_from;
    /* renderer */
    uint8_t *C;        /* straight RGBA canvas */
    uint8_t *F;        /* one frame, straight RGBA */
    size_t F_cap;
    uint8_t *saved;    /* the rectangle under a PREVIOUS frame */
    size_t saved_cap;
    uint8_t *png;      /* the frame's PNG, made up */
    size_t png_cap;
    sd_bitmap *out;
    int64_t cur;
    sd__frame_cache cache;
};

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

int sd__apng_new(sd_decoder *d, sd__apng **out)
{
    sd__apng *a = sd__calloc(1, sizeof *a);
    SD__RETURN_IF(a == NULL, SD_ENOMEM);
    a->dec = d;
    a->at = 8; /* after the signature (the sniffer saw it) */
    a->cur = -1;
    a->bad_from = UINT32_MAX;
    a->cache.budget = d->frame_cache_bytes;
    *out = a;
    return SD_OK;
}

void sd__apng_free(sd__apng *a)
{
    if (a == NULL)
        return;
    sd__buf_free(&a->in);
    sd__free(a->frames);
    sd__free(a->data);
    sd__free(a->C);
    sd__free(a->F);
    sd__free(a->saved);
    sd__free(a->png);
    sd_bitmap_free(a->out);
    sd__frame_cache_free(&a->cache);
    sd__free(a);
}

const uint8_t *sd__apng_bytes(const sd__apng *a, size_t *len, size_t *walked)
{
    *len = a->in.len;
    *walked = SD__MIN(a->at, a->in.len);
    return a->in.data;
}

static int crc_ok(const uint8_t *chunk, uint32_t len)
{
    uint32_t c = (uint32_t)crc32(0, chunk + 4, len + 4);
    return c == be32(chunk + 8 + len);
}

/* The sequence number of an fcTL or fdAT: 0, 1, 2... in file order. */
static void sequence(sd__apng *a, const uint8_t *payload, uint32_t len)
{
    if (len < 4 || be32(payload) != a->next_seq)
        a->invalid = 1;
    a->next_seq++;
}

static int add_data(sd__apng *a, size_t off, size_t len)
{
    if (a->nframes == 0) {
        a->invalid = 1; /* frame data before any fcTL */
        return SD_OK;
    }
    SD__RESERVE(a->data, a->ndata, a->dcap);
    a->data[a->ndata++] = (ap_data){off, len};
    if (a->nframes > 0) {
        ap_frame *f = &a->frames[a->nframes - 1];
        if (f->ndata == 0)
            f->first_data = a->ndata - 1;
        f->ndata++;
        f->bytes += len;
    }
    return SD_OK;
}

static int add_fctl(sd__apng *a, const uint8_t *p, uint32_t len)
{
    SD__RESERVE(a->frames, a->nframes, a->fcap);
    ap_frame f = {0};
    if (len == 26) {
        f.w = be32(p + 4);
        f.h = be32(p + 8);
        f.x = be32(p + 12);
        f.y = be32(p + 16);
        uint32_t num = (uint32_t)p[20] << 8 | p[21], den = (uint32_t)p[22] << 8 | p[23];
        f.delay_ms = (uint32_t)(1000ull * num / (den ? den : 100));
        f.dispose = p[24];
        f.blend = p[25];
        f.ok = f.w > 0 && f.h > 0 && (uint64_t)f.x + f.w <= a->W && (uint64_t)f.y + f.h <= a->H &&
               f.dispose <= 2 && f.blend <= 1;
        if (!a->idat_seen && (f.x || f.y || f.w != a->W || f.h != a->H))
            f.ok = 0; /* the default image's frame covers the canvas */
    }
    if (!f.ok)
        a->invalid = 1;
    if (!a->idat_seen && a->nframes == 0)
        a->idat_frame = 1;
    a->frames[a->nframes++] = f;
    return SD_OK;
}

/* The colour chunks seen before the image data, handed to the colour
 * layer as sd_png.c hands libpng's (an animated file never reaches it). */
static void apply_colour(sd__apng *a)
{
    sd_decoder *d = a->dec;
    const uint8_t *b = a->in.data;
    if (a->cicp_off && b[a->cicp_off + 2] == 0) /* RGB (matrix 0) only */
        sd__color_set_cicp(&d->color, b[a->cicp_off], b[a->cicp_off + 1]);
    if (a->iccp_off) { /* keyword (1-79), NUL, method 0, zlib data */
        const uint8_t *p = b + a->iccp_off, *nul = memchr(p, 0, SD__MIN(a->iccp_len, (size_t)80));
        size_t zoff = nul ? (size_t)(nul - p) + 2 : 0;
        uint8_t *icc = NULL;
        uLongf n = 0;
        if (nul != NULL && zoff <= a->iccp_len && p[zoff - 1] == 0 && (icc = sd__malloc(SD__ICC_MAX + 1)) != NULL) {
            n = SD__ICC_MAX + 1; /* one more than the limit: a larger one is reported as such */
            int zr = uncompress(icc, &n, p + zoff, (uLong)(a->iccp_len - zoff));
            if (zr != Z_OK && zr != Z_BUF_ERROR)
                n = 0;
        }
        if (n > 0)
            sd__color_set_icc(&d->color, icc, n);
        else if (d->warnings++ == 0)
            sd__decoder_msg(d, "colour: APNG iCCP chunk that does not inflate ignored; decoded as sRGB");
        sd__free(icc);
    }
    if (a->srgb) {
        sd__color_set_srgb(&d->color);
    } else if (d->color.space == SD_COLOR_SRGB && (a->chrm_off || a->gama_off)) {
        double xy[8] = {0};
        for (int i = 0; i < 8 && a->chrm_off; i++)
            xy[i] = be32(b + a->chrm_off + 4 * i) / 100000.0;
        sd__color_set_chrm_gama(&d->color, a->chrm_off ? xy : NULL, a->gama_off ? be32(b + a->gama_off) / 100000.0 : 0);
    }
}

int sd__apng_push(sd__apng *a, const uint8_t *p, size_t n)
{
    SD__FORWARD_IF_ERROR(sd__buf_put(&a->in, p, n));
    const uint8_t *b = a->in.data;
    while (a->decision != SD__APNG_PLAIN && !a->iend && a->at + 8 <= a->in.len) {
        uint32_t len = be32(b + a->at);
        const uint8_t *type = b + a->at + 4;
        int is_idat = memcmp(type, "IDAT", 4) == 0;
        if (len > 0x7FFFFFFFu || (is_idat && a->actl_count == 0)) {
            a->decision = SD__APNG_PLAIN; /* libpng takes it from here */
            break;
        }
        if (a->at + 12 + (size_t)len > a->in.len)
            break; /* the chunk is not complete yet */
        const uint8_t *data = b + a->at + 8;
        if (memcmp(type, "IHDR", 4) == 0 && len == 13) {
            a->W = be32(data);
            a->H = be32(data + 4);
            a->depth = data[8];
            a->color = data[9];
            a->interlace = data[12];
            a->have_ihdr = 1;
        } else if (memcmp(type, "PLTE", 4) == 0 && !a->idat_seen) {
            a->plte_off = a->at;
            a->plte_len = 12 + (size_t)len;
        } else if (memcmp(type, "tRNS", 4) == 0 && !a->idat_seen) {
            a->trns_off = a->at;
            a->trns_len = 12 + (size_t)len;
            a->trns = 1;
        } else if (memcmp(type, "acTL", 4) == 0) {
            a->actl_count++;
            if (len != 8 || !crc_ok(b + a->at, len)) {
                a->invalid = 1;
            } else if (a->actl_count == 1) {
                a->num_frames = be32(data);
                a->num_plays = be32(data + 4);
            }
            if (a->decision == SD__APNG_UNDECIDED && a->have_ihdr) {
                a->decision = SD__APNG_ANIMATED;
                int alpha = (a->color & 4) || a->trns;
                SD__FORWARD_IF_ERROR(sd__decoder_set_header(a->dec, a->W, a->H, 1, a->interlace != 0, alpha));
            }
        } else if (memcmp(type, "fcTL", 4) == 0) {
            if (!crc_ok(b + a->at, len))
                a->invalid = 1;
            sequence(a, data, len);
            SD__FORWARD_IF_ERROR(add_fctl(a, data, len));
        } else if (memcmp(type, "fdAT", 4) == 0) {
            if (!crc_ok(b + a->at, len))
                a->invalid = 1;
            sequence(a, data, len);
            if (!a->idat_seen || (a->nframes == 1 && a->idat_frame))
                a->invalid = 1; /* an fdAT that is not its own fcTL's */
            else if (len > 4) /* an empty fdAT is legal, it adds nothing */
                SD__FORWARD_IF_ERROR(add_data(a, a->at + 12, len - 4));
        } else if (!a->idat_seen && crc_ok(b + a->at, len) &&
                   ((memcmp(type, "cICP", 4) == 0 && len == 4) || memcmp(type, "iCCP", 4) == 0 ||
                    (memcmp(type, "sRGB", 4) == 0 && len == 1) || (memcmp(type, "cHRM", 4) == 0 && len == 32) ||
                    (memcmp(type, "gAMA", 4) == 0 && len == 4))) {
            size_t off = a->at + 8;
            switch (type[1]) { /* the first of each kind counts */
            case 'I': a->cicp_off = a->cicp_off ? a->cicp_off : off; break;
            case 'C': if (!a->iccp_off) a->iccp_off = off, a->iccp_len = len; break;
            case 'R': a->srgb = 1; break;
            case 'H': a->chrm_off = a->chrm_off ? a->chrm_off : off; break;
            default: a->gama_off = a->gama_off ? a->gama_off : off; break;
            }
        } else if (is_idat) {
            int first = !a->idat_seen;
            if (first && a->decision == SD__APNG_ANIMATED)
                apply_colour(a);
            a->idat_seen = 1;
            if (!crc_ok(b + a->at, len))
                a->invalid = 1; /* the still path reports it (a critical chunk) */
            if (a->idat_frame && a->nframes == 1)
                SD__FORWARD_IF_ERROR(add_data(a, a->at + 8, len));
            else if (first && a->nframes > 1)
                a->invalid = 1;
        } else if (memcmp(type, "IEND", 4) == 0) {
            a->iend = 1;
            a->dec->end_reached = a->decision == SD__APNG_ANIMATED;
        }
        a->at += 12 + (size_t)len;
    }
    return a->decision;
}

/* A frame is key when nothing before it shows through. */
static void plan_keys(sd__apng *a)
{
    for (uint32_t i = 0; i < a->nframes; i++) {
        ap_frame *f = &a->frames[i];
        if (i == 0 && f->dispose == DISPOSE_PREVIOUS)
            f->dispose = DISPOSE_BACKGROUND; /* the README: PREVIOUS first acts as BACKGROUND */
        if (i == 0) {
            f->blank_before = 1;
        } else {
            const ap_frame *p = f - 1;
            int covers = p->x == 0 && p->y == 0 && p->w == a->W && p->h == a->H;
            /* PREVIOUS puts back the canvas before p; BACKGROUND clears p's
             * rectangle, all p drew */
            f->blank_before = p->dispose == DISPOSE_PREVIOUS ? p->blank_before
                            : p->dispose == DISPOSE_BACKGROUND && (covers || p->blank_before);
        }
    }
}

int sd__apng_finish(sd__apng *a)
{
    sd_decoder *d = a->dec;
    int valid = !a->invalid && a->actl_count == 1 && a->num_frames > 0 && a->num_frames == a->nframes;
    for (uint32_t i = 0; valid && i < a->nframes; i++)
        valid = a->frames[i].bytes > 0;
    if (!valid) {
        d->end_reached = 0; /* libpng still has the default image to read */
        return 0;
    }
    plan_keys(a);
    d->framed = d->animated = 1;
    d->loop_count = a->num_plays;
    for (uint32_t i = 0; i < a->nframes; i++) {
        const ap_frame *f = &a->frames[i];
        int covers = f->x == 0 && f->y == 0 && f->w == a->W && f->h == a->H;
        int key = f->blank_before || (covers && f->blend == BLEND_SOURCE && f->dispose != DISPOSE_PREVIOUS);
        SD__FORWARD_IF_ERROR(sd__decoder_add_frame(d, f->delay_ms, key));
    }
    d->complete = a->iend;
    d->end_reached = 1;
    return 1;
}

/* ---- one frame through libpng ---- */

typedef struct {
    const uint8_t *p;
    size_t n, at;
    sd__apng *a;
} reader;

static void r_error(png_structp png, png_const_charp msg)
{
    reader *r = png_get_error_ptr(png);
    sd__decoder_msg(r->a->dec, "APNG: %s", msg);
    png_longjmp(png, 1);
}

static void r_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static void r_read(png_structp png, png_bytep out, size_t n)
{
    reader *r = png_get_io_ptr(png);
    if (n > r->n - r->at)
        png_error(png, "frame data ended early");
    memcpy(out, r->p + r->at, n);
    r->at += n;
}

static uint8_t *chunk(uint8_t *p, const char *type, const uint8_t *data, uint32_t len)
{
    put32(p, len);
    memcpy(p + 4, type, 4);
    if (len)
        memcpy(p + 8, data, len);
    put32(p + 8 + len, (uint32_t)crc32(0, p + 4, len + 4));
    return p + 12 + len;
}

/* Frame i's pixels as straight RGBA in F (w*h*4). */
static int decode_frame(sd__apng *a, uint32_t i)
{
    const ap_frame *f = &a->frames[i];
    size_t need = 8 + 25 + a->plte_len + a->trns_len + 12 + f->bytes + 12;
    if (need > a->png_cap) {
        uint8_t *p = sd__realloc(a->png, need);
        SD__RETURN_IF(p == NULL, SD_ENOMEM);
        a->png = p;
        a->png_cap = need;
    }
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
    uint8_t ihdr[13], *q = a->png;
    memcpy(q, sig, 8);
    put32(ihdr, f->w);
    put32(ihdr + 4, f->h);
    ihdr[8] = a->depth;
    ihdr[9] = a->color;
    ihdr[10] = ihdr[11] = 0;
    ihdr[12] = a->interlace;
    q = chunk(q + 8, "IHDR", ihdr, 13);
    memcpy(q, a->in.data + a->plte_off, a->plte_len);
    q += a->plte_len;
    memcpy(q, a->in.data + a->trns_off, a->trns_len);
    q += a->trns_len;
    /* one IDAT with every data chunk's bytes, in order */
    uint8_t *idat = q;
    size_t at = 8;
    for (uint32_t k = 0; k < f->ndata; k++) {
        const ap_data *c = &a->data[f->first_data + k];
        memcpy(idat + at, a->in.data + c->off, c->len);
        at += c->len;
    }
    put32(idat, (uint32_t)f->bytes);
    memcpy(idat + 4, "IDAT", 4);
    put32(idat + at, (uint32_t)crc32(0, idat + 4, (uInt)(f->bytes + 4)));
    q = chunk(idat + at + 4, "IEND", NULL, 0);

    size_t fbytes = (size_t)f->w * f->h * 4;
    if (fbytes > a->F_cap) {
        uint8_t *F = sd__realloc(a->F, fbytes);
        SD__RETURN_IF(F == NULL, SD_ENOMEM);
        a->F = F;
        a->F_cap = fbytes;
    }
    png_bytep *rows = sd__malloc((size_t)f->h * sizeof *rows);
    SD__RETURN_IF(rows == NULL, SD_ENOMEM);
    for (uint32_t y = 0; y < f->h; y++)
        rows[y] = a->F + (size_t)y * f->w * 4;
    reader r = {a->png, (size_t)(q - a->png), 0, a};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r, r_error, r_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    int rc = SD_OK;
    if (png == NULL || info == NULL) {
        rc = SD_ENOMEM;
    } else if (setjmp(png_jmpbuf(png))) {
        rc = SD_ECORRUPT;
    } else {
        png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
        png_set_read_fn(png, &r, r_read);
        png_read_info(png, info);
        /* sd_png.c's transforms: 8-bit RGBA, 16-bit truncated, no gamma */
        png_set_expand(png);
        png_set_strip_16(png);
        png_set_gray_to_rgb(png);
        png_set_add_alpha(png, 0xFF, PNG_FILLER_AFTER);
        png_set_interlace_handling(png);
        png_read_update_info(png, info);
        if (png_get_rowbytes(png, info) != (size_t)f->w * 4)
            png_error(png, "unexpected row layout after transforms");
        png_read_image(png, rows);
    }
    png_destroy_read_struct(png ? &png : NULL, info ? &info : NULL, NULL);
    sd__free(rows);
    if (rc == SD_ECORRUPT) {
        char msg[sizeof a->dec->message];
        memcpy(msg, a->dec->message, sizeof msg);
        sd__decoder_msg(a->dec, "%.200s (frame %u)", msg, i);
    }
    return rc;
}

/* FFmpeg's integer OVER on straight RGBA (the README's formula). */
static void over(const uint8_t *s, uint8_t *d)
{
    uint32_t sa = s[3];
    if (sa == 255) {
        memcpy(d, s, 4);
        return;
    }
    if (sa == 0)
        return;
    uint32_t da = d[3];
    uint32_t oa = sa + (da * (255 - sa) + 127) / 255;
    for (int c = 0; c < 3; c++) {
        if (da == 255)
            d[c] = (uint8_t)((sa * s[c] + (255 - sa) * d[c] + 127) / 255);
        else
            d[c] = (uint8_t)((255 * sa * s[c] + (255 - sa) * da * d[c]) / (255 * oa));
    }
    d[3] = (uint8_t)oa;
}

static int draw(sd__apng *a, uint32_t i)
{
    const ap_frame *f = &a->frames[i];
    SD__FORWARD_IF_ERROR(decode_frame(a, i));
    size_t W = a->W, row = (size_t)f->w * 4;
    if (f->dispose == DISPOSE_PREVIOUS) {
        size_t need = row * f->h;
        if (need > a->saved_cap) {
            uint8_t *s = sd__realloc(a->saved, need);
            SD__RETURN_IF(s == NULL, SD_ENOMEM);
            a->saved = s;
            a->saved_cap = need;
        }
        for (uint32_t y = 0; y < f->h; y++)
            memcpy(a->saved + y * row, a->C + ((f->y + y) * W + f->x) * 4, row);
    }
    for (uint32_t y = 0; y < f->h; y++) {
        const uint8_t *s = a->F + y * row;
        uint8_t *d = a->C + ((f->y + y) * W + f->x) * 4;
        if (f->blend == BLEND_SOURCE) {
            memcpy(d, s, row);
            continue;
        }
        for (uint32_t x = 0; x < f->w; x++, s += 4, d += 4)
            over(s, d);
    }
    return SD_OK;
}

static void dispose(sd__apng *a, const ap_frame *f)
{
    size_t W = a->W, row = (size_t)f->w * 4;
    for (uint32_t y = 0; y < f->h && f->dispose != DISPOSE_NONE; y++) {
        uint8_t *d = a->C + ((f->y + y) * W + f->x) * 4;
        if (f->dispose == DISPOSE_BACKGROUND)
            memset(d, 0, row);
        else
            memcpy(d, a->saved + y * row, row);
    }
}

static int render(sd__apng *a, uint32_t index)
{
    sd_decoder *d = a->dec;
    if (a->C == NULL) {
        /* the straight canvas, the premultiplied frame, and at most a canvas
         * saved under a dispose-to-previous frame */
        SD__FORWARD_IF_ERROR(sd__decoder_charge(d, (uint64_t)a->W * a->H * 12, "the APNG canvases"));
        a->C = sd__malloc((size_t)a->W * a->H * 4);
        SD__RETURN_IF(a->C == NULL, SD_ENOMEM);
        SD__FORWARD_IF_ERROR(sd__bitmap_alloc(a->W, a->H, 0, &a->out));
    }
    if (a->cur == (int64_t)index)
        return SD_OK;
    int restart;
    uint32_t next = sd__anim_first_step(d, a->cur, index, &restart);
    if (restart) {
        memset(a->C, 0, (size_t)a->W * a->H * 4);
        a->cur = -1;
    }
    for (uint32_t i = next; i <= index; i++) {
        if (a->cur >= 0)
            dispose(a, &a->frames[a->cur]);
        a->cur = -1;
        SD__FORWARD_IF_ERROR(draw(a, i));
        a->cur = i;
    }
    for (uint32_t y = 0; y < a->H; y++)
        sd_premultiply_rgba(a->C + (size_t)y * a->W * 4, a->out->pixels + (size_t)y * a->out->stride, a->W);
    sd__frame_cache_put(&a->cache, index, a->out);
    return SD_OK;
}

static int render_view(void *state, uint32_t index, sd_bitmap **out, int *owned)
{
    sd__apng *a = state;
    SD__FORWARD_IF_ERROR(render(a, index));
    *out = a->out;
    *owned = 0;
    return SD_OK;
}

int sd__apng_frame(sd__apng *a, uint32_t index, sd_bitmap **out, int *owned)
{
    return sd__anim_frame(a->dec, &a->cache, &a->bad_from, index, render_view, a, out, owned);
}
