/*
 * sd_encoder.c — the encoder handle (TurboJPEG 3's tj3Set shape): a format,
 * parameters, frames, then sd_encoder_finish. Which formats encode, and
 * with what entry point, is the codec row's (codec/sd_codecs.c); this file
 * only checks and resolves the parameters and hands the codec one job.
 * The rows' entry points are at the bottom: each is a format's encoder
 * (sd_encode.c, sd_encode_gif.c, sd_encode_apng.c, sd_encode_lossy.c).
 */
#include <string.h>

#include "bitmap/sd_bitmap_int.h"
#include "codec/sd_codec.h"
#include "encode/sd_encode_int.h"

/* The last sd_encoder_param: the tables below and the range checks end here. */
#define SD__ENC_LAST SD_ENC_OPTIMIZE_CODING

struct sd_encoder {
    const sd__codec *codec;
    int params[SD__ENC_LAST + 1];
    const sd_bitmap **frames;
    int *delays;
    uint32_t count, cap, dcap;
    uint8_t *icc; /* sd_encoder_set_icc_profile's copy, or NULL */
    size_t icc_len;
};

/* The ICC header's own checks: its size field is the length, 'acsp' at 36. */
static int looks_like_icc(const uint8_t *p, size_t n)
{
    return n >= 132 && ((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]) == n &&
           memcmp(p + 36, "acsp", 4) == 0;
}

int sd_encoder_set_icc_profile(sd_encoder *enc, const uint8_t *data, size_t length)
{
    SD__RETURN_IF(enc == NULL || (data == NULL && length > 0), SD_EINVAL);
    SD__RETURN_IF(length > ((size_t)4 << 20) || (length > 0 && !looks_like_icc(data, length)), SD_EINVAL);
    uint8_t *copy = NULL;
    if (length > 0) {
        copy = sd__malloc(length);
        SD__RETURN_IF(copy == NULL, SD_ENOMEM);
        memcpy(copy, data, length);
    }
    sd__free(enc->icc);
    enc->icc = copy;
    enc->icc_len = length;
    return SD_OK;
}

/* Each parameter's range and default (index = sd_encoder_param). */
static const struct { int lo, hi, dflt; } ranges[SD__ENC_LAST + 1] = {
    [SD_ENC_QUALITY] = {0, 100, 90},
    [SD_ENC_LOSSLESS] = {0, 1, 0},
    [SD_ENC_PROGRESSIVE] = {0, 1, 0},
    [SD_ENC_COMPRESSION_LEVEL] = {-1, 9, -1},
    [SD_ENC_SPEED] = {-1, 10, -1},
    [SD_ENC_LOOP_COUNT] = {0, 65535, 0},
    [SD_ENC_OPTIMIZE_CODING] = {0, 1, 0},
};

int sd_encoder_new(sd_format format, sd_encoder **out)
{
    SD__RETURN_IF(out == NULL, SD_EINVAL);
    *out = NULL;
    const sd__codec *c = sd__codec_for(format);
    SD__RETURN_IF(c == NULL, SD_EINVAL);
    SD__RETURN_IF(!(c->caps & SD_CAP_ENCODE) || c->encode == NULL, SD_EUNSUPPORTED);
    sd_encoder *e = sd__calloc(1, sizeof *e);
    SD__RETURN_IF(e == NULL, SD_ENOMEM);
    e->codec = c;
    for (int p = SD_ENC_QUALITY; p <= SD__ENC_LAST; p++)
        e->params[p] = ranges[p].dflt;
    *out = e;
    return SD_OK;
}

int sd_encoder_set(sd_encoder *enc, sd_encoder_param param, int value)
{
    SD__RETURN_IF(enc == NULL || param < SD_ENC_QUALITY || param > SD__ENC_LAST, SD_EINVAL);
    SD__RETURN_IF(value < ranges[param].lo || value > ranges[param].hi, SD_EINVAL);
    enc->params[param] = value;
    return SD_OK;
}

int sd_encoder_get(const sd_encoder *enc, sd_encoder_param param, int *value)
{
    SD__RETURN_IF(enc == NULL || value == NULL || param < SD_ENC_QUALITY || param > SD__ENC_LAST, SD_EINVAL);
    *value = enc->params[param];
    return SD_OK;
}

int sd_encoder_add_frame(sd_encoder *enc, const sd_bitmap *frame, int delay_ms)
{
    SD__RETURN_IF(enc == NULL || frame == NULL || delay_ms < 0, SD_EINVAL);
    SD__RETURN_IF(frame->width == 0 || frame->height == 0, SD_EINVAL);
    if (enc->count > 0) {
        SD__RETURN_IF(!(enc->codec->caps & SD_CAP_ENCODE_ANIMATION), SD_EUNSUPPORTED);
        SD__RETURN_IF(frame->width != enc->frames[0]->width || frame->height != enc->frames[0]->height, SD_EINVAL);
    }
    uint32_t cap = enc->cap;
    SD__RESERVE(enc->frames, enc->count, enc->cap);
    if (enc->cap != cap || enc->delays == NULL) {
        int *d = sd__realloc(enc->delays, (size_t)enc->cap * sizeof *d);
        SD__RETURN_IF(d == NULL, SD_ENOMEM);
        enc->delays = d;
    }
    enc->frames[enc->count] = frame;
    enc->delays[enc->count] = delay_ms;
    enc->count++;
    return SD_OK;
}

int sd_encoder_finish(sd_encoder *enc, uint8_t **out, size_t *out_length)
{
    SD__RETURN_IF(enc == NULL || out == NULL || out_length == NULL, SD_EINVAL);
    *out = NULL;
    *out_length = 0;
    SD__RETURN_IF(enc->count == 0, SD_EINVAL);
    sd__encode_job job = {
        .frames = enc->frames,
        .delays_ms = enc->delays,
        .count = enc->count,
        .quality = enc->params[SD_ENC_QUALITY],
        .lossless = enc->params[SD_ENC_LOSSLESS],
        .progressive = enc->params[SD_ENC_PROGRESSIVE],
        .level = enc->params[SD_ENC_COMPRESSION_LEVEL],
        .speed = enc->params[SD_ENC_SPEED],
        .loop_count = enc->params[SD_ENC_LOOP_COUNT],
        .optimize = enc->params[SD_ENC_OPTIMIZE_CODING],
        .icc = enc->icc,
        .icc_len = enc->icc_len,
    };
    return enc->codec->encode(&job, out, out_length);
}

/* The codec's file, with the job's profile added by `add` (if it has one). */
static int with_icc(const sd__encode_job *j, int rc,
                    int (*add)(const uint8_t *, size_t, const sd__icc *, uint8_t **, size_t *), uint8_t **out,
                    size_t *out_length)
{
    if (rc != SD_OK || j->icc_len == 0)
        return rc;
    const sd__icc icc = {j->icc, j->icc_len};
    uint8_t *tagged;
    size_t n;
    rc = add(*out, *out_length, &icc, &tagged, &n);
    sd__free(*out);
    *out = rc == SD_OK ? tagged : NULL;
    *out_length = rc == SD_OK ? n : 0;
    return rc;
}

void sd_encoder_free(sd_encoder *enc)
{
    if (enc == NULL)
        return;
    sd__free(enc->frames);
    sd__free(enc->delays);
    sd__free(enc->icc);
    sd__free(enc);
}

/* ---- the rows' entry points ---- */

int sd__jpeg_encode(const sd__encode_job *j, uint8_t **out, size_t *out_length)
{
    int rc = sd__encode_jpeg(j->frames[0], SD__MAX(j->quality, 1), j->progressive, j->optimize, out, out_length);
    return with_icc(j, rc, sd__jpeg_add_icc, out, out_length);
}

int sd__png_encode(const sd__encode_job *j, uint8_t **out, size_t *out_length)
{
    int rc = j->count == 1 ? sd_encode_png(j->frames[0], j->level, out, out_length)
                           : sd_encode_apng(j->frames, j->delays_ms, j->count, j->loop_count, j->level, out, out_length);
    return with_icc(j, rc, sd__png_add_icc, out, out_length);
}

int sd__gif_encode(const sd__encode_job *j, uint8_t **out, size_t *out_length)
{
    return sd_encode_gif(j->frames, j->delays_ms, j->count, j->loop_count, out, out_length);
}

int sd__webp_encode(const sd__encode_job *j, uint8_t **out, size_t *out_length)
{
    int rc = j->count == 1 ? sd_encode_webp(j->frames[0], j->quality, j->lossless, out, out_length)
                           : sd_encode_webp_anim(j->frames, j->delays_ms, j->count, j->loop_count, j->quality,
                                                 j->lossless, out, out_length);
    return with_icc(j, rc, sd__webp_add_icc, out, out_length);
}

/* AVIF is lossless at quality 100. */
int sd__avif_encode(const sd__encode_job *j, uint8_t **out, size_t *out_length)
{
    const sd__icc icc = {j->icc, j->icc_len};
    return sd__encode_avif(j->frames, j->delays_ms, j->count, j->lossless ? 100 : j->quality, j->speed, &icc, out,
                           out_length);
}
