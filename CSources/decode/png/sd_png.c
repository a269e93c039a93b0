/*
 * sd_png.c — PNG codec on libpng's progressive (push) reader.
 *
 * libpng expands every format to 8-bit RGBA (palette, tRNS, low bit depths,
 * gray; 16-bit is truncated), and each row is premultiplied straight into
 * the canvas in one pass. Interlace handling is ours, not libpng's: Adam7
 * pass rows arrive compact and we place their pixels, which lets a snapshot
 * replicate the latest completed pass and lets a thumbnail be accumulated
 * in any pixel order.
 *
 * Thumbnails: pixels are summed into boxes of fx x fy source pixels as they
 * stream (only one band of boxes for non-interlaced files), so the full-size
 * image is never held; the box image is then resampled to the exact size.
 */
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <png.h>

#include "decode/png/sd_png_int.h"
#include "bitmap/sd_pixel.h"

static const uint8_t adam7_x0[7] = {0, 4, 0, 2, 0, 1, 0};
static const uint8_t adam7_y0[7] = {0, 0, 4, 0, 2, 0, 1};
static const uint8_t adam7_dx[7] = {8, 8, 4, 4, 2, 2, 1};
static const uint8_t adam7_dy[7] = {8, 8, 8, 4, 4, 2, 2};
/* Block covered by each known pixel once passes 1..k are complete. */
static const uint8_t adam7_bw[7] = {8, 4, 4, 2, 2, 1, 1};
static const uint8_t adam7_bh[7] = {8, 8, 4, 4, 2, 2, 1};

typedef struct {
    png_structp png;
    png_infop info;
    sd_decoder *dec;
    int code;       /* sd_status for the error being thrown */
    int have_info;
    int interlaced;
    int ended;
    int last_row;   /* the image's last row (of its last pass) arrived */
    int passes_done;
    sd_bitmap *canvas; /* full size, or the box image when reducing */
    /* box reduction */
    uint32_t fx, fy, rw, rh;
    uint32_t acc_rows;  /* 1 (a rolling band) or rh (interlaced) */
    uint32_t *acc;      /* B,G,R,A sums and a count per box */
    uint32_t band;      /* box row being filled (non-interlaced) */
    /* APNG or not (sd_png_int.h): chunks kept until it is known */
    sd__apng *apng;
    int mode;           /* SD__APNG_* */
    size_t fed;         /* kept bytes libpng has had */
    /* a 16-bit source with colours to convert: rows stay 16-bit (RGBA16)
     * until converted (sd__color_row16), then go on as 8-bit rows */
    int sixteen;
    int straight;       /* an 8-bit image with alpha, full size: rows converted before premultiplying */
    uint8_t *row8;      /* one converted row, 8-bit straight RGBA */
    float *cm_buf;      /* the conversion's floats, 8 a pixel */
} sd__png;

static void p_error(png_structp png, png_const_charp msg)
{
    sd__png *s = png_get_error_ptr(png);
    sd__decoder_msg(s->dec, "PNG: %s", msg);
    if (s->code == 0)
        s->code = SD_ECORRUPT;
    png_longjmp(png, 1);
}

static void p_warning(png_structp png, png_const_charp msg)
{
    sd__png *s = png_get_error_ptr(png);
    if (s->dec->warnings++ == 0)
        sd__decoder_msg(s->dec, "PNG warning: %s", msg);
}

static void emit_box_row(sd__png *s, uint32_t by)
{
    uint32_t *a = s->acc + (size_t)(by % s->acc_rows) * s->rw * 5;
    uint32_t *out = (uint32_t *)(void *)(s->canvas->pixels + (size_t)by * s->canvas->stride);
    for (uint32_t x = 0; x < s->rw; x++, a += 5) {
        uint32_t n = a[4];
        if (n == 0) {
            out[x] = 0;
            continue;
        }
        uint32_t h = n / 2;
        out[x] = ((a[3] + h) / n) << 24 | ((a[2] + h) / n) << 16 | ((a[1] + h) / n) << 8 |
                 ((a[0] + h) / n);
    }
}

static void p_info(png_structp png, png_infop info)
{
    sd__png *s = png_get_progressive_ptr(png);
    sd_decoder *d = s->dec;
    png_uint_32 w, h;
    int depth, color, interlace;
    png_get_IHDR(png, info, &w, &h, &depth, &color, &interlace, NULL, NULL);

    int orientation = 1;
    png_unknown_chunkp chunks = NULL;
    int nchunks = png_get_unknown_chunks(png, info, &chunks);
    for (int i = 0; i < nchunks; i++) {
        if (memcmp(chunks[i].name, "eXIf", 4) == 0) /* before IDAT, as the extension says */
            orientation = sd_exif_orientation(chunks[i].data, chunks[i].size);
        if (memcmp(chunks[i].name, "cICP", 4) == 0 && chunks[i].size == 4 && chunks[i].data[2] == 0)
            sd__color_set_cicp(&d->color, chunks[i].data[0], chunks[i].data[1]); /* RGB (matrix 0) only */
    }
    /* colour, in the spec's precedence: cICP > iCCP > sRGB > cHRM/gAMA
     * (each setter ignores what comes after a stronger source) */
    png_charp icc_name;
    int icc_comp;
    png_bytep icc;
    png_uint_32 icc_len;
    if (png_get_iCCP(png, info, &icc_name, &icc_comp, &icc, &icc_len) & PNG_INFO_iCCP)
        sd__color_set_icc(&d->color, icc, icc_len);
    if (png_get_valid(png, info, PNG_INFO_sRGB)) {
        sd__color_set_srgb(&d->color);
    } else if (d->color.space == SD_COLOR_SRGB &&
               png_get_valid(png, info, PNG_INFO_cHRM | PNG_INFO_gAMA)) {
        double xy[8] = {0}, g = 0;
        int has_chrm = png_get_cHRM(png, info, &xy[0], &xy[1], &xy[2], &xy[3], &xy[4], &xy[5], &xy[6], &xy[7]) != 0;
        png_get_gAMA(png, info, &g);
        if (g > 0 || has_chrm)
            sd__color_set_chrm_gama(&d->color, has_chrm ? xy : NULL, g);
    }
#ifdef PNG_eXIf_SUPPORTED
    png_uint_32 exif_len = 0;
    png_bytep exif = NULL;
    if (nchunks == 0 && (png_get_eXIf_1(png, info, &exif_len, &exif) & PNG_INFO_eXIf)) /* a libpng that parses it */
        orientation = sd_exif_orientation(exif, exif_len);
#endif
    int alpha = (color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS);
    s->interlaced = interlace != PNG_INTERLACE_NONE;
    int rc = sd__decoder_set_header(d, w, h, orientation, s->interlaced, alpha);
    if (rc < 0) {
        s->code = rc;
        png_longjmp(png, 1);
    }

    /* The reference transforms: everything to 8-bit RGBA, 16-bit truncated,
     * no gamma. No png_set_interlace_handling: we place Adam7 pixels. A
     * 16-bit image with colours to convert keeps its 16 bits until then
     * (reduced first, colours near the gamut edge err by up to 9 levels). */
    s->sixteen = depth == 16 && sd__color_rows16_begin(&d->color);
    png_set_expand(png);
    if (s->sixteen) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        png_set_swap(png); /* native uint16 */
#endif
        s->row8 = sd__malloc((size_t)w * 4);
        s->cm_buf = sd__malloc((size_t)w * 8 * sizeof *s->cm_buf);
        if (s->row8 == NULL || s->cm_buf == NULL) {
            s->code = SD_ENOMEM;
            png_error(png, "out of memory");
        }
    } else {
        png_set_strip_16(png);
    }
    png_set_gray_to_rgb(png);
    png_set_add_alpha(png, s->sixteen ? 0xFFFF : 0xFF, PNG_FILLER_AFTER);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != (size_t)w * (s->sixteen ? 8 : 4)) {
        s->code = SD_EUNSUPPORTED;
        png_error(png, "unexpected row layout after transforms");
    }

    /* shrink on load by whole factors (box sums of the rows as they come),
     * down to the margin times the planned size; the resampler finishes */
    s->fx = sd__decoder_shrink_factor(d, w, d->need_w);
    s->fy = sd__decoder_shrink_factor(d, h, d->need_h);
    s->rw = (w + s->fx - 1) / s->fx;
    s->rh = (h + s->fy - 1) / s->fy;
    d->load_w = s->rw;
    d->load_h = s->rh;
    d->load_span_w = (double)w / s->fx; /* a last box of fewer columns holds part of a pixel's span */
    d->load_span_h = (double)h / s->fy;
    /* translucent colours convert from their straight values while there
     * are any: recovered from premultiplied bytes they lose bits that a
     * conversion near the gamut edge magnifies (5 levels on a P3 ramp) */
    s->straight = !s->sixteen && alpha && sd__color_straight_begin(&d->color, sd__decoder_full_size(d));
    if (s->straight && (s->row8 = sd__malloc((size_t)w * 8)) == NULL) {
        s->code = SD_ENOMEM;
        png_longjmp(png, 1);
    }
    uint64_t acc_rows = s->interlaced ? s->rh : 1;
    rc = sd__decoder_charge(d, (uint64_t)s->rw * s->rh * 4 +
                                   (s->fx > 1 || s->fy > 1 ? (uint64_t)s->rw * acc_rows * 5 * sizeof *s->acc : 0),
                            "the PNG canvas");
    if (rc < 0) {
        s->code = rc;
        png_longjmp(png, 1); /* the budget's message says why */
    }
    rc = sd__bitmap_alloc(s->rw, s->rh, 1, &s->canvas);
    if (rc == SD_OK && (s->fx > 1 || s->fy > 1)) {
        s->acc_rows = s->interlaced ? s->rh : 1;
        s->acc = sd__calloc((size_t)s->rw * s->acc_rows * 5, sizeof *s->acc);
        if (s->acc == NULL)
            rc = SD_ENOMEM;
    }
    if (rc < 0) {
        s->code = rc;
        png_error(png, sd_strerror(rc));
    }
    s->have_info = 1;
}

/* The last Adam7 pass with any pixel (libpng skips empty ones). */
static int last_pass(uint32_t W, uint32_t H)
{
    int p = 6;
    while (p > 0 && (W <= adam7_x0[p] || H <= adam7_y0[p]))
        p--;
    return p;
}

static void p_row(png_structp png, png_bytep row, png_uint_32 row_num, int pass)
{
    sd__png *s = png_get_progressive_ptr(png);
    sd_decoder *d = s->dec;
    if (row == NULL)
        return;
    const uint32_t W = d->width, H = d->height;
    uint32_t x0 = 0, dx = 1, y = row_num;
    if (s->interlaced) {
        x0 = adam7_x0[pass];
        dx = adam7_dx[pass];
        y = adam7_y0[pass] + row_num * adam7_dy[pass];
    }
    if (y >= H)
        return;
    uint32_t n = x0 < W ? (W - x0 + dx - 1) / dx : 0;
    if (s->sixteen) { /* to sRGB from the 16-bit values, then on as 8-bit */
        sd__color_row16(&d->color, (const uint16_t *)(const void *)row, s->row8, n, s->cm_buf);
        row = s->row8;
    } else if (s->straight) {
        int rc = sd__color_straight_row(&d->color, row, s->row8, n, (uint32_t *)(void *)(s->row8 + (size_t)d->width * 4));
        if (rc < 0) {
            s->code = rc;
            png_error(png, sd_strerror(rc));
        }
        row = s->row8;
    }

    if (s->acc == NULL) {
        uint32_t *out = (uint32_t *)(void *)(s->canvas->pixels + (size_t)y * s->canvas->stride);
        const uint8_t *p = row;
        if (dx == 1) {
            sd_premultiply_rgba(p, (uint8_t *)out, n);
        } else {
            for (uint32_t i = 0, x = x0; i < n; i++, x += dx, p += 4)
                out[x] = sd__pack_premul(p[0], p[1], p[2], p[3]);
        }
    } else {
        uint32_t by = y / s->fy;
        uint32_t *a = s->acc + (size_t)(by % s->acc_rows) * s->rw * 5;
        const uint8_t *p = row;
        for (uint32_t i = 0, x = x0; i < n; i++, x += dx, p += 4) {
            uint32_t px = sd__pack_premul(p[0], p[1], p[2], p[3]);
            uint32_t *b = a + (size_t)(x / s->fx) * 5;
            b[0] += px & 0xFF;
            b[1] += (px >> 8) & 0xFF;
            b[2] += (px >> 16) & 0xFF;
            b[3] += px >> 24;
            b[4] += 1;
        }
        if (!s->interlaced && ((y + 1) % s->fy == 0 || y + 1 == H)) {
            emit_box_row(s, by);
            memset(a, 0, (size_t)s->rw * 5 * sizeof *a);
            s->band = by + 1;
        }
    }

    if (s->interlaced) {
        uint32_t y0 = adam7_y0[pass], dy = adam7_dy[pass];
        uint32_t pass_rows = H > y0 ? (H - y0 + dy - 1) / dy : 0;
        d->rows = row_num + 1;
        if (row_num + 1 == pass_rows) {
            s->passes_done = pass + 1;
            d->scans = s->passes_done;
            s->last_row = pass == last_pass(W, H);
        }
    } else {
        d->rows = y + 1;
        s->last_row = y + 1 == H;
    }
}

static void p_end(png_structp png, png_infop info)
{
    (void)info;
    sd__png *s = png_get_progressive_ptr(png);
    s->ended = 1;
    s->dec->end_reached = 1;
    if (!s->interlaced)
        s->dec->scans = 1;
}

static int sdp_init(sd_decoder *d)
{
    sd__png *s = sd__calloc(1, sizeof *s);
    SD__RETURN_IF(s == NULL, SD_ENOMEM);
    d->codec_state = s;
    s->dec = d;
    s->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, s, p_error, p_warning);
    SD__RETURN_IF(s->png == NULL, SD_ENOMEM);
    s->info = png_create_info_struct(s->png);
    SD__RETURN_IF(s->info == NULL, SD_ENOMEM);
    if (setjmp(png_jmpbuf(s->png)))
        return s->code ? s->code : SD_ECORRUPT;
    /* Our own limits apply (with a clear error); lift libpng's 1e6 default. */
    png_set_user_limits(s->png, 0x7fffffff, 0x7fffffff);
    png_set_keep_unknown_chunks(s->png, PNG_HANDLE_CHUNK_NEVER, NULL, 0);
    /* libpng's push reader (1.6) has no eXIf handler: as an unknown chunk it
     * was dropped and its orientation never applied. Keep that one chunk
     * (only it is buffered) and read it in p_info. */
    /* cICP (PNG third edition) is unknown to this libpng too. */
    static const png_byte kept[10] = {'e', 'X', 'I', 'f', '\0', 'c', 'I', 'C', 'P', '\0'};
    png_set_keep_unknown_chunks(s->png, PNG_HANDLE_CHUNK_ALWAYS, kept, 2);
    /* a chunk (an eXIf, an inflated iCCP) over 4 MiB is an attack; libpng
     * drops it with a warning (an iCCP that large: no profile, sRGB) */
    png_set_chunk_malloc_max(s->png, SD__ICC_MAX);
    png_set_progressive_read_fn(s->png, s, p_info, p_row, p_end);
    return sd__apng_new(d, &s->apng);
}

static void sdp_destroy(sd_decoder *d)
{
    sd__png *s = d->codec_state;
    if (s == NULL)
        return;
    if (s->png != NULL)
        png_destroy_read_struct(&s->png, s->info ? &s->info : NULL, NULL);
    sd_bitmap_free(s->canvas);
    sd__free(s->acc);
    sd__free(s->row8);
    sd__free(s->cm_buf);
    sd__apng_free(s->apng);
    sd__free(s);
    d->codec_state = NULL;
}

static int feed(sd__png *s, const uint8_t *p, size_t n)
{
    if (s->ended || n == 0)
        return SD_OK;
    if (setjmp(png_jmpbuf(s->png)))
        return s->code ? s->code : SD_ECORRUPT;
    png_process_data(s->png, s->info, (png_bytep)(uintptr_t)p, n);
    return SD_OK;
}

/* libpng gets the kept bytes up to `upto`. */
static int feed_kept(sd__png *s, int all)
{
    size_t len, walked;
    const uint8_t *b = sd__apng_bytes(s->apng, &len, &walked);
    size_t upto = all ? len : walked;
    if (upto <= s->fed)
        return SD_OK;
    size_t from = s->fed;
    s->fed = upto;
    return feed(s, b + from, upto - from);
}

static int sdp_push(sd_decoder *d, const uint8_t *p, size_t n)
{
    sd__png *s = d->codec_state;
    if (s->mode == SD__APNG_PLAIN)
        return feed(s, p, n);
    int m = sd__apng_push(s->apng, p, n);
    if (m < 0)
        return m;
    s->mode = m;
    if (m == SD__APNG_ANIMATED)
        return SD_OK; /* kept whole until the end says animation or still */
    int rc = feed_kept(s, m == SD__APNG_PLAIN);
    if (m == SD__APNG_PLAIN) { /* a plain PNG: nothing more is kept */
        sd__apng_free(s->apng);
        s->apng = NULL;
    }
    return rc;
}

/* Interlaced box image: every box from its own sums (any pixel order). */
static void emit_all_boxes(sd__png *s)
{
    for (uint32_t by = 0; by < s->rh; by++)
        emit_box_row(s, by);
}

/* Adam7 after `k` complete passes: each known pixel fills its block. */
static int replicate(sd__png *s, int k, sd_bitmap **out)
{
    sd_bitmap *src = s->canvas, *dst;
    SD__FORWARD_IF_ERROR(sd__bitmap_alloc(src->width, src->height, 0, &dst));
    uint32_t bw = adam7_bw[k - 1], bh = adam7_bh[k - 1];
    for (uint32_t y = 0; y < dst->height; y++) {
        const uint32_t *srow = (const uint32_t *)(void *)(src->pixels + (size_t)(y & ~(bh - 1)) * src->stride);
        uint32_t *drow = (uint32_t *)(void *)(dst->pixels + (size_t)y * dst->stride);
        for (uint32_t x = 0; x < dst->width; x++)
            drow[x] = srow[x & ~(bw - 1)];
    }
    *out = dst;
    return SD_OK;
}

static int sdp_finish(sd_decoder *d)
{
    sd__png *s = d->codec_state;
    if (s->mode == SD__APNG_ANIMATED) {
        int valid = sd__apng_finish(s->apng);
        if (valid != 0)
            return valid < 0 ? valid : SD_OK;
    }
    if (s->mode != SD__APNG_PLAIN) { /* a still after all: libpng reads what was kept */
        s->mode = SD__APNG_PLAIN;
        SD__FORWARD_IF_ERROR(feed_kept(s, 1));
    }
    if (!s->have_info) {
        sd__decoder_msg(d, "PNG: input ended before the image data began");
        return SD_ETRUNCATED;
    }
    if (s->acc != NULL && !s->interlaced && !s->ended && s->band < s->rh)
        emit_box_row(s, s->band); /* the partial band of a truncated file */
    if (s->acc != NULL && s->interlaced)
        emit_all_boxes(s);
    /* Complete: every row of every pass arrived. libpng reaches IEND after a
     * zlib stream whose checksum is bad, having dropped the row it was on. */
    d->complete = s->ended && s->last_row;
    if (s->ended && !s->last_row)
        sd__decoder_msg(d, "PNG: the image data ended before its last row");
    return SD_OK;
}

static int sdp_frame(sd_decoder *d, uint32_t index, sd_bitmap **out, int *owned)
{
    sd__png *s = d->codec_state;
    return sd__apng_frame(s->apng, index, out, owned);
}

static int sdp_canvas(sd_decoder *d, int final, sd_bitmap **out, int *owned)
{
    sd__png *s = d->codec_state;
    *owned = 0;
    if (d->framed) /* an animation shows its first frame */
        return d->nframes ? sdp_frame(d, 0, out, owned) : final ? SD_EBADSTATE : SD_EAGAIN;
    SD__RETURN_IF(s->canvas == NULL, final ? SD_EBADSTATE : SD_EAGAIN);
    if (final) {
        /* A truncated Adam7 image shows its last complete pass, filled. */
        if (s->interlaced && s->acc == NULL && !s->ended && s->passes_done > 0) {
            *owned = 1;
            return replicate(s, s->passes_done, out);
        }
        *out = s->canvas;
        *owned = 1;
        s->canvas = NULL;
        return SD_OK;
    }
    SD__RETURN_IF(d->rows == 0 && s->passes_done == 0, SD_EAGAIN);
    if (s->interlaced) {
        if (s->acc != NULL) {
            emit_all_boxes(s);
        } else if (!s->ended) {
            SD__RETURN_IF(s->passes_done == 0, SD_EAGAIN);
            *owned = 1;
            return replicate(s, s->passes_done, out);
        }
    }
    *out = s->canvas;
    return SD_OK;
}

static int sniff_png(const uint8_t *p, size_t n)
{
    static const uint8_t magic[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
    return memcmp(p, magic, SD__MIN(n, 8)) != 0 ? 0 : n >= 8 ? 1 : -1;
}

const sd__codec sd__png_codec = {
    SD_FORMAT_PNG, "PNG", "image/png", sniff_png,
    SD_CAP_DECODE | SD_CAP_INCREMENTAL | SD_CAP_DOWNSCALE | SD_CAP_ANIMATION
        | SD_CAP_ENCODE | SD_CAP_ENCODE_ANIMATION | SD_CAP_ENCODE_ALPHA,
    sdp_init, sdp_push, sdp_finish, sdp_canvas, sdp_destroy, sdp_frame, sd__png_encode,
};
