/*
 * sd_heic.c — HEIC/HEIF on libheif (Debian 12: 1.15, HEVC through
 * libde265, encoding through x265): the whole codec row, decoder and
 * encoder, in this one folder.
 *
 * HEIF needs the whole file (its meta box may point anywhere in it), so
 * the bytes are kept as they arrive and everything happens when input
 * ends: no header facts before, no previews (the row has no
 * SD_CAP_INCREMENTAL). Decoded: the primary image — a grid image from its
 * tiles, `clap` cropped, `irot`/`imir` applied once by libheif (EXIF
 * orientation in HEIF is informative only, as the spec says: orientation
 * 1) — 10/12-bit samples reduced to 8 by libheif, an alpha auxiliary image
 * premultiplied here. Its colour profile (ICC or nclx) goes to colour
 * management. When a thumbnail is asked for and the file carries one at
 * least as large as the output, that thumbnail is decoded instead of the
 * full image (the resampler finishes it). An image sequence (msf1) is not
 * exposed by libheif 1.15: its primary (first) image is decoded.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <libheif/heif.h>

#include "decode/sd_decoder_int.h"

typedef struct {
    sd_decoder *dec;
    sd__buf in;
    sd_bitmap *canvas;
} sd__heic;

/* libheif's plugins (its decoders and encoders) are registered once per
 * process; reference counted by libheif, never released (process life). */
static pthread_once_t heif_once = PTHREAD_ONCE_INIT;
static void heif_start(void) { heif_init(NULL); }

static int he_fail(sd_decoder *d, struct heif_error e, const char *what)
{
    sd__decoder_msg(d, "HEIC: %s: %s", what, e.message ? e.message : "error");
    switch (e.code) {
    case heif_error_Memory_allocation_error: return SD_ENOMEM;
    case heif_error_Unsupported_feature:
    case heif_error_Unsupported_filetype: return SD_EUNSUPPORTED;
    case heif_error_Decoder_plugin_error:
        return e.subcode == heif_suberror_End_of_data ? SD_ETRUNCATED : SD_ECORRUPT;
    case heif_error_Invalid_input:
        return e.subcode == heif_suberror_End_of_data ? SD_ETRUNCATED
               : e.subcode == heif_suberror_Security_limit_exceeded ? SD_ETOOLARGE : SD_ECORRUPT;
    default: return SD_ECORRUPT;
    }
}

static int sdh_init(sd_decoder *d)
{
    pthread_once(&heif_once, heif_start);
    sd__heic *s = sd__calloc(1, sizeof *s);
    SD__RETURN_IF(s == NULL, SD_ENOMEM);
    d->codec_state = s;
    s->dec = d;
    return SD_OK;
}

static void sdh_destroy(sd_decoder *d)
{
    sd__heic *s = d->codec_state;
    if (s == NULL)
        return;
    sd__buf_free(&s->in);
    sd_bitmap_free(s->canvas);
    sd__free(s);
    d->codec_state = NULL;
}

static int sdh_push(sd_decoder *d, const uint8_t *p, size_t n)
{
    sd__heic *s = d->codec_state;
    return sd__buf_put(&s->in, p, n);
}

/* The colour profile: an ICC one, else nclx primaries and transfer. */
static void colour(sd_decoder *d, const struct heif_image_handle *h)
{
    size_t n = heif_image_handle_get_raw_color_profile_size(h);
    if (n > 0 && n <= SD__ICC_MAX) {
        uint8_t *icc = sd__malloc(n);
        if (icc != NULL && heif_image_handle_get_raw_color_profile(h, icc).code == heif_error_Ok)
            sd__color_set_icc(d, icc, n);
        sd__free(icc);
    } else if (n > SD__ICC_MAX) {
        sd__color_set_icc(d, NULL, n); /* the warning, without copying it */
    }
    struct heif_color_profile_nclx *nclx = NULL;
    if (heif_image_handle_get_nclx_color_profile(h, &nclx).code == heif_error_Ok && nclx != NULL) {
        sd__color_set_cicp(d, (int)nclx->color_primaries, (int)nclx->transfer_characteristics);
        heif_nclx_color_profile_free(nclx);
    }
}

/* The embedded thumbnail to decode instead of the image, if the output is
 * no larger than one (the smallest such); NULL for the image itself. */
static struct heif_image_handle *thumbnail_for(sd_decoder *d, const struct heif_image_handle *h)
{
    if (d->decode_w == d->width && d->decode_h == d->height)
        return NULL; /* full size asked for */
    int n = heif_image_handle_get_number_of_thumbnails(h);
    if (n <= 0)
        return NULL;
    heif_item_id ids[16];
    n = heif_image_handle_get_list_of_thumbnail_IDs(h, ids, n < 16 ? n : 16);
    struct heif_image_handle *best = NULL;
    for (int i = 0; i < n; i++) {
        struct heif_image_handle *t = NULL;
        if (heif_image_handle_get_thumbnail(h, ids[i], &t).code != heif_error_Ok || t == NULL)
            continue;
        int tw = heif_image_handle_get_width(t), th = heif_image_handle_get_height(t);
        int fits = tw >= (int)d->decode_w && th >= (int)d->decode_h;
        if (fits && (best == NULL || tw < heif_image_handle_get_width(best))) {
            if (best)
                heif_image_handle_release(best);
            best = t;
        } else {
            heif_image_handle_release(t);
        }
    }
    return best;
}

/* A decoded heif_image (interleaved RGBA) as a new premultiplied bitmap. */
static int to_bitmap(sd_decoder *d, const struct heif_image *img, int premultiplied, sd_bitmap **out)
{
    int w = heif_image_get_width(img, heif_channel_interleaved), h = heif_image_get_height(img, heif_channel_interleaved);
    int stride = 0;
    const uint8_t *px = heif_image_get_plane_readonly(img, heif_channel_interleaved, &stride);
    if (px == NULL || w <= 0 || h <= 0) {
        sd__decoder_msg(d, "HEIC: the decoder gave no pixels");
        return SD_ECORRUPT;
    }
    sd_bitmap *b;
    SD__FORWARD_IF_ERROR(sd__bitmap_alloc((uint32_t)w, (uint32_t)h, 0, &b));
    for (int y = 0; y < h; y++) {
        const uint8_t *src = px + (size_t)y * (size_t)stride;
        uint8_t *dst = b->pixels + (size_t)y * b->stride;
        if (!premultiplied) {
            sd_premultiply_rgba(src, dst, (size_t)w);
            continue;
        }
        uint32_t *o = (uint32_t *)(void *)dst; /* already premultiplied: packed as it is */
        for (int x = 0; x < w; x++, src += 4) {
            uint32_t a = src[3], r = SD__MIN((uint32_t)src[0], a), g = SD__MIN((uint32_t)src[1], a),
                     bl = SD__MIN((uint32_t)src[2], a);
            o[x] = a << 24 | r << 16 | g << 8 | bl;
        }
    }
    *out = b;
    return SD_OK;
}

static int decode_all(sd_decoder *d, sd__heic *s)
{
    struct heif_context *ctx = heif_context_alloc();
    SD__RETURN_IF(ctx == NULL, SD_ENOMEM);
    /* libheif's own limit on a side, no looser than ours */
    heif_context_set_maximum_image_size_limit(ctx, (int)SD__MIN(d->max_dimension, (int64_t)INT32_MAX));
    struct heif_image_handle *h = NULL, *thumb = NULL;
    struct heif_image *img = NULL;
    struct heif_decoding_options *opt = NULL;
    int rc = SD_OK;
    struct heif_error e = heif_context_read_from_memory_without_copy(ctx, s->in.data, s->in.len, NULL);
    if (e.code != heif_error_Ok) {
        rc = he_fail(d, e, "file");
        goto done;
    }
    if ((e = heif_context_get_primary_image_handle(ctx, &h)).code != heif_error_Ok) {
        rc = he_fail(d, e, "primary image");
        goto done;
    }
    int w = heif_image_handle_get_width(h), hh = heif_image_handle_get_height(h);
    int alpha = heif_image_handle_has_alpha_channel(h);
    /* after irot/clap as libheif reports it: the picture is upright */
    if ((rc = sd__decoder_set_header(d, w > 0 ? (uint32_t)w : 0, hh > 0 ? (uint32_t)hh : 0, 1, 0, alpha)) < 0)
        goto done;
    colour(d, h);
    d->animated = 0; /* a sequence's frames are not exposed by libheif 1.15 */
    /* what libheif may allocate: no side much past the one checked above (a
     * grid whose own box claims a larger picture than its ispe is refused by
     * libheif's security limit instead of allocated: fuzz_heic). The slack:
     * libheif checks its planes with >=, and coded planes are padded. */
    heif_context_set_maximum_image_size_limit(ctx, SD__MAX(w, hh) + 256);
    thumb = thumbnail_for(d, h);
    const struct heif_image_handle *which = thumb ? thumb : h;
    int tw = heif_image_handle_get_width(which), th = heif_image_handle_get_height(which);
    /* the decoded planes (up to 16 bits a sample), their RGBA and the canvas */
    if ((rc = sd__decoder_charge(d, (uint64_t)tw * (uint64_t)th * (8 + 4 + 4), "the HEIC planes and canvas")) < 0)
        goto done;
    if ((opt = heif_decoding_options_alloc()) == NULL) {
        rc = SD_ENOMEM;
        goto done;
    }
    opt->convert_hdr_to_8bit = 1;
    e = heif_decode_image(which, &img, heif_colorspace_RGB, heif_chroma_interleaved_RGBA, opt);
    if (e.code != heif_error_Ok) {
        rc = he_fail(d, e, "decode");
        goto done;
    }
    rc = to_bitmap(d, img, alpha && heif_image_handle_is_premultiplied_alpha(which), &s->canvas);
    if (rc == SD_OK && thumb == NULL &&
        (s->canvas->width != (uint32_t)w || s->canvas->height != (uint32_t)hh)) {
        sd__decoder_msg(d, "HEIC: decoded %ux%u, the file says %dx%d", s->canvas->width, s->canvas->height, w, hh);
        rc = SD_ECORRUPT;
    }
    if (rc == SD_OK) {
        d->load_w = s->canvas->width; /* a thumbnail's own size: the resampler finishes */
        d->load_h = s->canvas->height;
    }
done:
    if (img)
        heif_image_release(img);
    heif_decoding_options_free(opt);
    if (thumb)
        heif_image_handle_release(thumb);
    if (h)
        heif_image_handle_release(h);
    heif_context_free(ctx);
    return rc;
}

static int sdh_finish(sd_decoder *d)
{
    sd__heic *s = d->codec_state;
    SD__FORWARD_IF_ERROR(decode_all(d, s));
    d->rows = s->canvas->height;
    d->scans = 1;
    d->complete = 1;
    d->end_reached = 1;
    return SD_OK;
}

static int sdh_canvas(sd_decoder *d, int final, sd_bitmap **out, int *owned)
{
    sd__heic *s = d->codec_state;
    *owned = 0;
    if (!final || s->canvas == NULL)
        return final ? SD_EBADSTATE : SD_EAGAIN; /* no previews: the whole file first */
    *out = s->canvas;
    *owned = 1;
    s->canvas = NULL;
    return SD_OK;
}

/* ---- the encoder: HEVC through libheif's x265 plugin ---- */

typedef struct {
    uint8_t *data;
    size_t len, cap;
    int failed;
} sd__heic_out;

static struct heif_error write_out(struct heif_context *ctx, const void *data, size_t size, void *user)
{
    (void)ctx;
    sd__heic_out *o = user;
    struct heif_error ok = {heif_error_Ok, heif_suberror_Unspecified, "ok"};
    if (o->len + size > o->cap) {
        size_t cap = SD__MAX(o->cap * 2, o->len + size);
        uint8_t *p = sd__realloc(o->data, cap);
        if (p == NULL) {
            o->failed = 1;
            struct heif_error no = {heif_error_Memory_allocation_error, heif_suberror_Unspecified, "out of memory"};
            return no;
        }
        o->data = p, o->cap = cap;
    }
    memcpy(o->data + o->len, data, size);
    o->len += size;
    return ok;
}

static int sd__heic_encode(const sd__encode_job *j, uint8_t **out, size_t *out_length)
{
    pthread_once(&heif_once, heif_start);
    if (!heif_have_encoder_for_format(heif_compression_HEVC))
        return SD_EUNSUPPORTED; /* libheif built without an HEVC encoder */
    const sd_bitmap *b = j->frames[0];
    const int alpha = sd_bitmap_has_alpha(b);
    struct heif_context *ctx = heif_context_alloc();
    struct heif_encoder *enc = NULL;
    struct heif_image *img = NULL;
    sd__heic_out o = {0};
    int rc = ctx == NULL ? SD_ENOMEM : SD_OK;
    if (rc == SD_OK && heif_context_get_encoder_for_format(ctx, heif_compression_HEVC, &enc).code != heif_error_Ok)
        rc = SD_EUNSUPPORTED;
    if (rc == SD_OK) {
        heif_encoder_set_lossy_quality(enc, j->quality);
        heif_encoder_set_lossless(enc, j->lossless);
        if (heif_image_create((int)b->width, (int)b->height, heif_colorspace_RGB,
                              alpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB, &img).code !=
                heif_error_Ok ||
            heif_image_add_plane(img, heif_channel_interleaved, (int)b->width, (int)b->height, 8).code !=
                heif_error_Ok)
            rc = SD_ENOMEM;
    }
    if (rc == SD_OK) {
        int stride = 0;
        uint8_t *px = heif_image_get_plane(img, heif_channel_interleaved, &stride);
        uint8_t *row = sd__malloc((size_t)b->width * 4);
        rc = row == NULL ? SD_ENOMEM : SD_OK;
        for (uint32_t y = 0; rc == SD_OK && y < b->height; y++) {
            sd_unpremultiply_argb(b->pixels + (size_t)y * b->stride, row, b->width); /* straight R, G, B, A */
            uint8_t *dst = px + (size_t)y * (size_t)stride;
            if (alpha) {
                memcpy(dst, row, (size_t)b->width * 4);
            } else {
                for (uint32_t x = 0; x < b->width; x++)
                    memcpy(dst + x * 3, row + x * 4, 3);
            }
        }
        sd__free(row);
    }
    if (rc == SD_OK && j->icc_len > 0)
        heif_image_set_raw_color_profile(img, "prof", j->icc, j->icc_len);
    if (rc == SD_OK && heif_context_encode_image(ctx, img, enc, NULL, NULL).code != heif_error_Ok)
        rc = SD_ECORRUPT;
    struct heif_writer writer = {1, write_out};
    if (rc == SD_OK && heif_context_write(ctx, &writer, &o).code != heif_error_Ok)
        rc = o.failed ? SD_ENOMEM : SD_ECORRUPT;
    if (img)
        heif_image_release(img);
    if (enc)
        heif_encoder_release(enc);
    if (ctx)
        heif_context_free(ctx);
    if (rc != SD_OK) {
        sd__free(o.data);
        return rc;
    }
    *out = o.data;
    *out_length = o.len;
    return SD_OK;
}

/* ISO BMFF "ftyp" with a HEIC brand (the registry's shared brand check). */
static int sniff_heic(const uint8_t *p, size_t n) { return sd__sniff_heic(p, n); }

const sd__codec sd__heic_codec = {
    SD_FORMAT_HEIC, "HEIC", "image/heic", sniff_heic,
    SD_CAP_DECODE | SD_CAP_ENCODE | SD_CAP_ENCODE_ALPHA | SD_CAP_ENCODE_QUALITY,
    sdh_init, sdh_push, sdh_finish, sdh_canvas, sdh_destroy, NULL, /* a still: no frame() */
    sd__heic_encode,
};
