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
/* First, before any include. Headers only: libheif is loaded on first use, not linked, so no
 * system-library target (SwiftPM links what pkg-config names) can say
 * which package is missing; this does (scripts/check-package.sh). */
#if !__has_include(<libheif/heif.h>)
#error "libheif's headers are missing: apt-get install libheif-dev (make deps installs every build dependency)"
#endif
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <libheif/heif.h>

#include "common/sd_dl.h"
#include "decode/sd_decoder_int.h"

/* The functions of libheif this file calls, loaded on first use (sd_dl.h). */
#define SD__HEIF_FNS(X) \
    X(heif_context_alloc) \
    X(heif_context_encode_image) \
    X(heif_context_free) \
    X(heif_context_get_encoder_for_format) \
    X(heif_context_get_primary_image_handle) \
    X(heif_context_read_from_memory_without_copy) \
    X(heif_context_set_maximum_image_size_limit) \
    X(heif_context_write) \
    X(heif_decode_image) \
    X(heif_decoding_options_alloc) \
    X(heif_decoding_options_free) \
    X(heif_encoder_release) \
    X(heif_encoder_set_lossless) \
    X(heif_encoder_set_lossy_quality) \
    X(heif_have_encoder_for_format) \
    X(heif_image_add_plane) \
    X(heif_image_create) \
    X(heif_image_get_height) \
    X(heif_image_get_plane) \
    X(heif_image_get_plane_readonly) \
    X(heif_image_get_width) \
    X(heif_image_handle_get_height) \
    X(heif_image_handle_get_list_of_thumbnail_IDs) \
    X(heif_image_handle_get_nclx_color_profile) \
    X(heif_image_handle_get_number_of_thumbnails) \
    X(heif_image_handle_get_raw_color_profile) \
    X(heif_image_handle_get_raw_color_profile_size) \
    X(heif_image_handle_get_thumbnail) \
    X(heif_image_handle_get_width) \
    X(heif_image_handle_has_alpha_channel) \
    X(heif_image_handle_is_premultiplied_alpha) \
    X(heif_image_handle_release) \
    X(heif_image_release) \
    X(heif_image_set_raw_color_profile) \
    X(heif_init) \
    X(heif_nclx_color_profile_free)
/* the library built against (CMake reads its SONAME), else Debian 12's;
 * then the development link, which matches the headers */
#ifndef SD_HEIF_SONAME
#define SD_HEIF_SONAME "libheif.so.1"
#endif
SD__DL_TABLE(heif, SD__HEIF_FNS, "SDCORE_HEIF_LIBRARY", SD_HEIF_SONAME, "libheif.so");
#define heif_context_alloc SD__DL_FN(heif, heif_context_alloc)
#define heif_context_encode_image SD__DL_FN(heif, heif_context_encode_image)
#define heif_context_free SD__DL_FN(heif, heif_context_free)
#define heif_context_get_encoder_for_format SD__DL_FN(heif, heif_context_get_encoder_for_format)
#define heif_context_get_primary_image_handle SD__DL_FN(heif, heif_context_get_primary_image_handle)
#define heif_context_read_from_memory_without_copy SD__DL_FN(heif, heif_context_read_from_memory_without_copy)
#define heif_context_set_maximum_image_size_limit SD__DL_FN(heif, heif_context_set_maximum_image_size_limit)
#define heif_context_write SD__DL_FN(heif, heif_context_write)
#define heif_decode_image SD__DL_FN(heif, heif_decode_image)
#define heif_decoding_options_alloc SD__DL_FN(heif, heif_decoding_options_alloc)
#define heif_decoding_options_free SD__DL_FN(heif, heif_decoding_options_free)
#define heif_encoder_release SD__DL_FN(heif, heif_encoder_release)
#define heif_encoder_set_lossless SD__DL_FN(heif, heif_encoder_set_lossless)
#define heif_encoder_set_lossy_quality SD__DL_FN(heif, heif_encoder_set_lossy_quality)
#define heif_have_encoder_for_format SD__DL_FN(heif, heif_have_encoder_for_format)
#define heif_image_add_plane SD__DL_FN(heif, heif_image_add_plane)
#define heif_image_create SD__DL_FN(heif, heif_image_create)
#define heif_image_get_height SD__DL_FN(heif, heif_image_get_height)
#define heif_image_get_plane SD__DL_FN(heif, heif_image_get_plane)
#define heif_image_get_plane_readonly SD__DL_FN(heif, heif_image_get_plane_readonly)
#define heif_image_get_width SD__DL_FN(heif, heif_image_get_width)
#define heif_image_handle_get_height SD__DL_FN(heif, heif_image_handle_get_height)
#define heif_image_handle_get_list_of_thumbnail_IDs SD__DL_FN(heif, heif_image_handle_get_list_of_thumbnail_IDs)
#define heif_image_handle_get_nclx_color_profile SD__DL_FN(heif, heif_image_handle_get_nclx_color_profile)
#define heif_image_handle_get_number_of_thumbnails SD__DL_FN(heif, heif_image_handle_get_number_of_thumbnails)
#define heif_image_handle_get_raw_color_profile SD__DL_FN(heif, heif_image_handle_get_raw_color_profile)
#define heif_image_handle_get_raw_color_profile_size SD__DL_FN(heif, heif_image_handle_get_raw_color_profile_size)
#define heif_image_handle_get_thumbnail SD__DL_FN(heif, heif_image_handle_get_thumbnail)
#define heif_image_handle_get_width SD__DL_FN(heif, heif_image_handle_get_width)
#define heif_image_handle_has_alpha_channel SD__DL_FN(heif, heif_image_handle_has_alpha_channel)
#define heif_image_handle_is_premultiplied_alpha SD__DL_FN(heif, heif_image_handle_is_premultiplied_alpha)
#define heif_image_handle_release SD__DL_FN(heif, heif_image_handle_release)
#define heif_image_release SD__DL_FN(heif, heif_image_release)
#define heif_image_set_raw_color_profile SD__DL_FN(heif, heif_image_set_raw_color_profile)
#define heif_init SD__DL_FN(heif, heif_init)
#define heif_nclx_color_profile_free SD__DL_FN(heif, heif_nclx_color_profile_free)

typedef struct {
    sd__whole w; /* the decoder, the bytes, the canvas */
} sd__heic;

/* libheif, loaded when the first HEIC is met; its plugins (decoders and
 * encoders) registered once per process, reference counted by libheif and
 * never released (process life). */
static pthread_once_t heif_once = PTHREAD_ONCE_INIT;
static void heif_start(void)
{
    if (sd__dl_load(&heif_dl) == SD_OK)
        heif_init(NULL);
}

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
    if (sd__dl_load(&heif_dl) != SD_OK) {
        sd__decoder_msg(d, "HEIC: %s", heif_dl.message);
        return SD_EUNSUPPORTED;
    }
    return sd__whole_init(d, sizeof(sd__heic));
}

static int sdh_push(sd_decoder *d, const uint8_t *p, size_t n)
{
    sd__heic *s = d->codec_state;
    return sd__buf_put(&s->w.in, p, n);
}

/* ---- the HEVC streams' own picture sizes, before libde265 sees them ----
 * libde265 sizes its buffers by each stream's SPS, which libheif 1.15 does
 * not check against the image's ispe; so every hvcC property in the meta
 * box is read here and its SPS width and height compared first. */

typedef struct {
    const uint8_t *p;
    size_t n, bit;
} sd__bits;

static uint32_t bits(sd__bits *b, int k)
{
    uint32_t v = 0;
    for (int i = 0; i < k; i++, b->bit++)
        v = v << 1 | (b->bit / 8 < b->n ? (b->p[b->bit / 8] >> (7 - b->bit % 8)) & 1 : 0);
    return v;
}

static uint32_t ue(sd__bits *b)
{
    int zeros = 0;
    while (zeros < 32 && bits(b, 1) == 0 && b->bit / 8 < b->n)
        zeros++;
    return zeros >= 32 ? UINT32_MAX : (uint32_t)((1ull << zeros) - 1 + bits(b, zeros));
}

/* An SPS NAL unit's pic_width/height_in_luma_samples (0 if unreadable). */
static void sps_size(const uint8_t *nal, size_t n, uint32_t *w, uint32_t *h)
{
    uint8_t rbsp[128]; /* the fields needed come within the first bytes */
    size_t m = 0;
    for (size_t i = 2; i < n && m < sizeof rbsp; i++) { /* after the NAL header, emulation prevention removed */
        if (i >= 4 && nal[i] == 3 && nal[i - 1] == 0 && nal[i - 2] == 0)
            continue;
        rbsp[m++] = nal[i];
    }
    sd__bits b = {rbsp, m, 0};
    bits(&b, 4); /* vps id */
    uint32_t sub = bits(&b, 3);
    bits(&b, 1);
    bits(&b, 96); /* general profile_tier_level and level */
    uint32_t prof[8] = {0}, lev[8] = {0};
    for (uint32_t i = 0; i < sub; i++)
        prof[i] = bits(&b, 1), lev[i] = bits(&b, 1);
    if (sub > 0)
        for (uint32_t i = sub; i < 8; i++)
            bits(&b, 2);
    for (uint32_t i = 0; i < sub; i++)
        bits(&b, (int)(prof[i] ? 88 : 0) + (int)(lev[i] ? 8 : 0));
    ue(&b); /* sps id */
    if (ue(&b) == 3)
        bits(&b, 1);
    *w = ue(&b);
    *h = ue(&b);
    if (b.bit / 8 >= m)
        *w = *h = 0;
}

/* 0 when every SPS in the meta box's hvcC properties fits in `limit` a
 * side, else SD_ETOOLARGE with the size it claims. */
static int check_streams(sd_decoder *d, const uint8_t *p, size_t n, uint32_t limit)
{
    size_t at = 0, meta = 0, meta_end = 0;
    while (at + 8 <= n) { /* the top-level boxes: the meta box's range */
        uint64_t size = (uint64_t)p[at] << 24 | (uint64_t)p[at + 1] << 16 | (uint64_t)p[at + 2] << 8 | p[at + 3];
        size_t hdr = 8;
        if (size == 1 && at + 16 <= n) {
            size = 0;
            for (int i = 0; i < 8; i++)
                size = size << 8 | p[at + 8 + i];
            hdr = 16;
        } else if (size == 0) {
            size = n - at;
        }
        if (size < hdr || size > n - at)
            break;
        if (memcmp(p + at + 4, "meta", 4) == 0) {
            meta = at + hdr, meta_end = at + (size_t)size;
            break;
        }
        at += (size_t)size;
    }
    for (size_t i = meta + 4; meta && i + 4 + 23 <= meta_end; i++) {
        if (memcmp(p + i, "hvcC", 4) != 0)
            continue;
        size_t box = (size_t)p[i - 4] << 24 | (size_t)p[i - 3] << 16 | (size_t)p[i - 2] << 8 | p[i - 1];
        size_t end = i - 4 + box, q = i + 4 + 22;
        if (box < 8 + 23 || end > meta_end)
            continue;
        uint32_t arrays = p[q++];
        for (uint32_t a = 0; a < arrays && q + 3 <= end; a++) {
            int type = p[q] & 0x3F;
            uint32_t count = (uint32_t)p[q + 1] << 8 | p[q + 2];
            q += 3;
            for (uint32_t k = 0; k < count && q + 2 <= end; k++) {
                size_t len = (size_t)p[q] << 8 | p[q + 1];
                q += 2;
                if (len > end - q)
                    break;
                uint32_t w = 0, h = 0;
                if (type == 33)
                    sps_size(p + q, len, &w, &h);
                if (w > limit || h > limit) {
                    sd__decoder_msg(d, "HEIC: an HEVC stream claims %ux%u in an image of at most %u a side", w, h,
                                    limit);
                    return SD_ETOOLARGE;
                }
                q += len;
            }
        }
    }
    return SD_OK;
}

/* The colour profile: an ICC one, else nclx primaries and transfer. */
static void colour(sd_decoder *d, const struct heif_image_handle *h)
{
    size_t n = heif_image_handle_get_raw_color_profile_size(h);
    if (n > 0 && n <= SD__ICC_MAX) {
        uint8_t *icc = sd__malloc(n);
        if (icc != NULL && heif_image_handle_get_raw_color_profile(h, icc).code == heif_error_Ok)
            sd__color_set_icc(&d->color, icc, n);
        sd__free(icc);
    } else if (n > SD__ICC_MAX) {
        sd__color_set_icc(&d->color, NULL, n); /* the warning, without copying it */
    }
    struct heif_color_profile_nclx *nclx = NULL;
    if (heif_image_handle_get_nclx_color_profile(h, &nclx).code == heif_error_Ok && nclx != NULL) {
        sd__color_set_cicp(&d->color, (int)nclx->color_primaries, (int)nclx->transfer_characteristics);
        heif_nclx_color_profile_free(nclx);
    }
}

/* The embedded thumbnail to decode instead of the image, if the output is
 * no larger than one (the smallest such); NULL for the image itself. */
static struct heif_image_handle *thumbnail_for(sd_decoder *d, const struct heif_image_handle *h)
{
    if (d->need_w >= d->width && d->need_h >= d->height)
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
        int fits = tw >= (int64_t)d->need_w && th >= (int64_t)d->need_h;
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
    struct heif_error e = heif_context_read_from_memory_without_copy(ctx, s->w.in.data, s->w.in.len, NULL);
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
    /* what libheif may allocate: no side much past the one checked above
     * (libheif checks each plane it allocates with >=; coded planes are
     * padded: 64 of slack), and no HEVC stream whose SPS claims more
     * (check_streams: libde265 sizes by it). fuzz_heic found a 32x32 grid
     * image claiming 8192x24576 that took 2 GB and 40 s with 256 (or 96 rounded
     * up to 128) of slack and is refused at once with 64; where libheif
     * spends that memory was not traced (docs/decoder.md). */
    const int limit = SD__MAX(w, hh) + 64; /* coded sizes round up (x265: a 32 px image codes 64x64) */
    heif_context_set_maximum_image_size_limit(ctx, limit);
    if ((rc = check_streams(d, s->w.in.data, s->w.in.len, (uint32_t)limit)) < 0)
        goto done;
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
    rc = to_bitmap(d, img, alpha && heif_image_handle_is_premultiplied_alpha(which), &s->w.canvas);
    if (rc == SD_OK && thumb == NULL &&
        (s->w.canvas->width != (uint32_t)w || s->w.canvas->height != (uint32_t)hh)) {
        sd__decoder_msg(d, "HEIC: decoded %ux%u, the file says %dx%d", s->w.canvas->width, s->w.canvas->height, w, hh);
        rc = SD_ECORRUPT;
    }
    if (rc == SD_OK) {
        d->load_w = s->w.canvas->width; /* a thumbnail's own size: the resampler finishes */
        d->load_h = s->w.canvas->height;
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
    d->rows = s->w.canvas->height;
    d->scans = 1;
    d->complete = 1;
    d->end_reached = 1;
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
    SD__RETURN_IF(sd__dl_load(&heif_dl) != SD_OK, SD_EUNSUPPORTED); /* no libheif on this machine */
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
    sdh_init, sdh_push, sdh_finish, sd__whole_canvas, sd__whole_destroy, NULL, /* a still: no frame() */
    sd__heic_encode,
};
