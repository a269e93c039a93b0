/*
 * sd_avif.c — AVIF stills on libavif (Debian 12: 0.11).
 *
 * libavif reads through an avifIO of ours over the bytes so far: a read
 * past them answers AVIF_RESULT_WAITING_ON_IO, so avifDecoderParse gives
 * the header facts as soon as the boxes are in, and the image is decoded
 * once input ends. Output: 8-bit BGRA straight, then premultiplied with the
 * contract's rounding; 10/12-bit samples are truncated to 8 bits (as 16-bit
 * PNG is). The irot/imir boxes are reported as the EXIF orientation they
 * equal, so they are applied (or not, SD_DEC_APPLY_ORIENTATION) like a
 * JPEG's. An image sequence (animated AVIF) is an animation once input
 * ends: its frames are listed from the sample table (durations, key frames)
 * and each is decoded on request by avifDecoderNthImage, which starts at the
 * nearest key frame, so sequential playback is one AV1 frame decode per
 * frame. libavif 0.11 reads no repetition count: a sequence loops forever,
 * as browsers play it.
 */
#include <stdio.h>
#include <string.h>

#include <avif/avif.h>

#include "decode/anim/sd_anim_int.h"

typedef struct {
    sd__anim_state a; /* first: the decoder, the bytes, the canvas, the frames kept */
    int ended, parsed;
    avifIO io;
    avifDecoder *avif;
    int anim;    /* an image sequence played as one */
    int charged; /* the planes and a frame are charged */
} sd__avif;

static avifResult io_read(avifIO *io, uint32_t flags, uint64_t offset, size_t size, avifROData *out)
{
    sd__avif *s = io->data;
    if (flags != 0 || offset > s->a.w.in.len)
        return s->ended ? AVIF_RESULT_IO_ERROR : AVIF_RESULT_WAITING_ON_IO;
    uint64_t avail = s->a.w.in.len - offset;
    if (size > avail && !s->ended)
        return AVIF_RESULT_WAITING_ON_IO;
    out->data = s->a.w.in.data + offset;
    out->size = (size_t)SD__MIN((uint64_t)size, avail);
    return AVIF_RESULT_OK;
}

static void io_destroy(avifIO *io) { (void)io; /* part of sd__avif */ }

static int av_fail(sd__avif *s, avifResult r, const char *what)
{
    const char *diag = s->avif ? s->avif->diag.error : "";
    sd__decoder_msg(s->a.w.dec, "AVIF: %s: %s%s%s", what, avifResultToString(r), diag[0] ? ": " : "", diag);
    switch (r) {
    case AVIF_RESULT_OUT_OF_MEMORY: return SD_ENOMEM;
    case AVIF_RESULT_TRUNCATED_DATA: return SD_ETRUNCATED;
    case AVIF_RESULT_NO_CODEC_AVAILABLE:
    case AVIF_RESULT_NOT_IMPLEMENTED: return SD_EUNSUPPORTED;
    default: return SD_ECORRUPT;
    }
}

/* irot (a x 90 degrees anti-clockwise) then imir (0: top-bottom, 1:
 * left-right), as the EXIF orientation that does the same. */
static int orientation(const avifImage *im)
{
    int rot = (im->transformFlags & AVIF_TRANSFORM_IROT) ? im->irot.angle & 3 : 0;
    int mir = (im->transformFlags & AVIF_TRANSFORM_IMIR) ? (im->imir.mode ? 1 : 0) : -1;
    static const int plain[4] = {1, 8, 3, 6};
    static const int mirrored[4][2] = {{4, 2}, {5, 7}, {2, 4}, {7, 5}}; /* [rot][mode] */
    return mir < 0 ? plain[rot] : mirrored[rot][mir];
}

static int parse(sd__avif *s)
{
    avifResult r = avifDecoderParse(s->avif);
    if (r == AVIF_RESULT_WAITING_ON_IO && !s->ended)
        return SD_OK;
    if (r != AVIF_RESULT_OK)
        return av_fail(s, r, "header");
    const avifImage *im = s->avif->image;
    s->parsed = 1;
    s->a.w.dec->animated = s->avif->imageCount > 1;
    s->anim = s->a.w.dec->animated && !s->a.w.dec->first_frame_only;
    if (s->anim)
        s->a.w.dec->loop_count = 0; /* no repetition count in libavif 0.11: forever */
    /* colr: an ICC profile, else nclx primaries and transfer (the decoder
     * converts the YUV with the matrix; the rest is colour management's) */
    if (im->icc.size > 0)
        sd__color_set_icc(&s->a.w.dec->color, im->icc.data, im->icc.size);
    sd__color_set_cicp(&s->a.w.dec->color, (int)im->colorPrimaries, (int)im->transferCharacteristics);
    return sd__decoder_set_header(s->a.w.dec, im->width, im->height, orientation(im), 0, s->avif->alphaPresent);
}

static int sda_init(sd_decoder *d)
{
    SD__FORWARD_IF_ERROR(sd__anim_state_init(d, sizeof(sd__avif)));
    sd__avif *s = d->codec_state;
    s->avif = avifDecoderCreate();
    SD__RETURN_IF(s->avif == NULL, SD_ENOMEM);
    s->avif->ignoreExif = s->avif->ignoreXMP = 1;
    /* As browsers and libheif read them: a file without a pixi property
     * (libheif <= 1.11 wrote none) or with a clap that does not fit. */
    s->avif->strictFlags &= ~(avifStrictFlags)(AVIF_STRICT_PIXI_REQUIRED | AVIF_STRICT_CLAP_VALID);
    /* Our limits are checked with the header (SD_ETOOLARGE and a clear
     * message); libavif's own stay as a backstop no tighter than ours. */
    s->avif->imageSizeLimit = (uint32_t)SD__MIN(SD__MAX(d->max_pixels, (int64_t)AVIF_DEFAULT_IMAGE_SIZE_LIMIT),
                                                (int64_t)UINT32_MAX);
    s->avif->imageDimensionLimit = 0; /* none: max_dimension is ours */
    s->avif->maxThreads = 1; /* the caller's thread; the loop runs several decoders */
    s->io = (avifIO){.destroy = io_destroy, .read = io_read, .persistent = AVIF_FALSE, .data = s};
    avifDecoderSetIO(s->avif, &s->io);
    return SD_OK;
}

static void sda_destroy(sd_decoder *d)
{
    sd__avif *s = d->codec_state;
    if (s == NULL)
        return;
    if (s->avif != NULL)
        avifDecoderDestroy(s->avif);
    sd__anim_state_destroy(d);
}

static int sda_push(sd_decoder *d, const uint8_t *p, size_t n)
{
    sd__avif *s = d->codec_state;
    SD__FORWARD_IF_ERROR(sd__buf_put(&s->a.w.in, p, n));
    return s->parsed ? SD_OK : parse(s);
}

/* Before the AV1 decoder allocates: its Y, U, V (and alpha) planes at up
 * to 2 bytes a sample, the canvas, and the 16-bit RGB of a deep image. */
static int charge(sd__avif *s)
{
    if (s->charged)
        return SD_OK;
    const avifImage *hd = s->avif->image;
    uint64_t px = (uint64_t)hd->width * hd->height, deep = hd->depth > 8;
    SD__FORWARD_IF_ERROR(sd__decoder_charge(s->a.w.dec, px * 4 * (deep ? 2 : 1) + px * 4 + (deep ? px * 8 : 0),
                                            "the AVIF planes and canvas"));
    s->charged = 1;
    return SD_OK;
}

/* The image libavif decoded last, as a new premultiplied bitmap. */
static int to_bitmap(sd__avif *s, sd_bitmap **out)
{
    const avifImage *im = s->avif->image;
    if (im->width != s->a.w.dec->width || im->height != s->a.w.dec->height) {
        sd__decoder_msg(s->a.w.dec, "AVIF: a frame of %ux%u in a %ux%u sequence", im->width, im->height,
                        s->a.w.dec->width, s->a.w.dec->height);
        return SD_ECORRUPT;
    }
    sd_bitmap *b;
    SD__FORWARD_IF_ERROR(sd__bitmap_alloc(im->width, im->height, 0, &b));
    avifRGBImage rgb;
    avifRGBImageSetDefaults(&rgb, im);
    rgb.format = AVIF_RGB_FORMAT_BGRA;
    uint16_t *wide = NULL;
    if (im->depth > 8) { /* 16-bit samples, truncated to 8 below */
        rgb.depth = im->depth;
        rgb.rowBytes = im->width * 8;
        wide = sd__malloc((size_t)rgb.rowBytes * im->height);
        if (wide == NULL) {
            sd_bitmap_free(b);
            return SD_ENOMEM;
        }
        rgb.pixels = (uint8_t *)wide;
    } else {
        rgb.depth = 8;
        rgb.rowBytes = (uint32_t)b->stride;
        rgb.pixels = b->pixels;
    }
    avifResult r = avifImageYUVToRGB(im, &rgb);
    if (r != AVIF_RESULT_OK) {
        sd__free(wide);
        sd_bitmap_free(b);
        return av_fail(s, r, "colour conversion");
    }
    /* libavif writes alpha 255 when the image has no alpha plane: no pass */
    if (wide != NULL || im->alphaPlane != NULL) {
        for (uint32_t y = 0; y < im->height; y++) {
            uint8_t *row = b->pixels + (size_t)y * b->stride;
            if (wide != NULL) {
                const uint16_t *w = wide + (size_t)y * im->width * 4;
                for (size_t i = 0; i < (size_t)im->width * 4; i++)
                    row[i] = (uint8_t)(w[i] >> (im->depth - 8));
            }
            if (im->alphaPlane != NULL)
                sd__premultiply_bgra(row, row, im->width);
        }
    }
    sd__free(wide);
    *out = b;
    return SD_OK;
}

static int sda_finish(sd_decoder *d)
{
    sd__avif *s = d->codec_state;
    s->ended = 1;
    if (!s->parsed)
        SD__FORWARD_IF_ERROR(parse(s));
    if (s->anim) {
        /* the whole sample table is in: list every frame (no pixels yet) */
        for (uint32_t i = 0; i < (uint32_t)s->avif->imageCount; i++) {
            avifImageTiming t;
            if (avifDecoderNthImageTiming(s->avif, i, &t) != AVIF_RESULT_OK)
                return av_fail(s, AVIF_RESULT_BMFF_PARSE_FAILED, "frame timing");
            double ms = t.duration * 1000.0 + 0.5;
            SD__FORWARD_IF_ERROR(sd__decoder_add_frame(d, ms >= 0 && ms < (double)UINT32_MAX ? (uint32_t)ms : 0,
                                                       avifDecoderIsKeyframe(s->avif, i)));
        }
        d->framed = 1;
        d->complete = 1; /* until a frame fails to decode (sd__anim_frame) */
        d->end_reached = 1;
        return SD_OK;
    }
    SD__FORWARD_IF_ERROR(charge(s));
    avifResult r = avifDecoderNextImage(s->avif);
    if (r != AVIF_RESULT_OK)
        return av_fail(s, r, "decode");
    SD__FORWARD_IF_ERROR(to_bitmap(s, &s->a.w.canvas));
    d->rows = s->a.w.canvas->height;
    d->scans = 1;
    d->complete = 1;
    d->end_reached = 1;
    return SD_OK;
}

/* Frame `index` of a sequence: libavif seeks from the nearest key frame
 * (or steps on from the frame it decoded last). */
static int render(void *state, uint32_t index, sd_bitmap **out, int *owned)
{
    sd__avif *s = state;
    SD__FORWARD_IF_ERROR(charge(s));
    avifResult r = avifDecoderNthImage(s->avif, index);
    if (r != AVIF_RESULT_OK) {
        char what[48];
        snprintf(what, sizeof what, "frame %u", index);
        return av_fail(s, r, what);
    }
    SD__FORWARD_IF_ERROR(to_bitmap(s, out));
    *owned = 1;
    sd__frame_cache_put(&s->a.cache, index, *out);
    return SD_OK;
}

static int sda_frame(sd_decoder *d, uint32_t index, sd_bitmap **out, int *owned)
{
    sd__avif *s = d->codec_state;
    return sd__anim_frame(d, &s->a.cache, &s->a.bad_from, index, render, s, out, owned);
}

static int sda_canvas(sd_decoder *d, int final, sd_bitmap **out, int *owned)
{
    sd__avif *s = d->codec_state;
    *owned = 0;
    if (s->anim && d->framed) /* the first frame */
        return final ? sda_frame(d, 0, out, owned) : SD_EAGAIN;
    if (!final || s->a.w.canvas == NULL)
        return final ? SD_EBADSTATE : SD_EAGAIN; /* no previews: decoded at the end */
    *out = s->a.w.canvas;
    *owned = 1;
    s->a.w.canvas = NULL;
    return SD_OK;
}

const sd__codec sd__avif_codec = {
    SD_FORMAT_AVIF, "AVIF", "image/avif", sd__sniff_avif,
    SD_CAP_DECODE | SD_CAP_ANIMATION
        | SD_CAP_ENCODE | SD_CAP_ENCODE_ANIMATION | SD_CAP_ENCODE_ALPHA | SD_CAP_ENCODE_QUALITY,
    sda_init, sda_push, sda_finish, sda_canvas, sda_destroy, sda_frame, sd__avif_encode,
};
