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

struct sd_encoder {
    const sd__codec *codec;
    int params[SD_ENC_LOOP_COUNT + 1];
    const sd_bitmap **frames;
    int *delays;
    uint32_t count, cap, dcap;
};

/* Each parameter's range and default (index = sd_encoder_param). */
static const struct { int lo, hi, dflt; } ranges[SD_ENC_LOOP_COUNT + 1] = {
    [SD_ENC_QUALITY] = {0, 100, 90},
    [SD_ENC_LOSSLESS] = {0, 1, 0},
    [SD_ENC_PROGRESSIVE] = {0, 1, 0},
    [SD_ENC_COMPRESSION_LEVEL] = {-1, 9, -1},
    [SD_ENC_SPEED] = {-1, 10, -1},
    [SD_ENC_LOOP_COUNT] = {0, 65535, 0},
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
    for (int p = SD_ENC_QUALITY; p <= SD_ENC_LOOP_COUNT; p++)
        e->params[p] = ranges[p].dflt;
    *out = e;
    return SD_OK;
}

int sd_encoder_set(sd_encoder *enc, sd_encoder_param param, int value)
{
    SD__RETURN_IF(enc == NULL || param < SD_ENC_QUALITY || param > SD_ENC_LOOP_COUNT, SD_EINVAL);
    SD__RETURN_IF(value < ranges[param].lo || value > ranges[param].hi, SD_EINVAL);
    enc->params[param] = value;
    return SD_OK;
}

int sd_encoder_get(const sd_encoder *enc, sd_encoder_param param, int *value)
{
    SD__RETURN_IF(enc == NULL || value == NULL || param < SD_ENC_QUALITY || param > SD_ENC_LOOP_COUNT, SD_EINVAL);
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
    };
    return enc->codec->encode(&job, out, out_length);
}

void sd_encoder_free(sd_encoder *enc)
{
    if (enc == NULL)
        return;
    sd__free(enc->frames);
    sd__free(enc->delays);
    sd__free(enc);
}

/* ---- the rows' entry points ---- */

int sd__jpeg_encode(const sd__encode_job *j, uint8_t **out, size_t *out_length)
{
    return sd_encode_jpeg(j->frames[0], SD__MAX(j->quality, 1), j->progressive, out, out_length);
}

int sd__png_encode(const sd__encode_job *j, uint8_t **out, size_t *out_length)
{
    if (j->count == 1)
        return sd_encode_png(j->frames[0], j->level, out, out_length);
    return sd_encode_apng(j->frames, j->delays_ms, j->count, j->loop_count, j->level, out, out_length);
}

int sd__gif_encode(const sd__encode_job *j, uint8_t **out, size_t *out_length)
{
    return sd_encode_gif(j->frames, j->delays_ms, j->count, j->loop_count, out, out_length);
}

int sd__webp_encode(const sd__encode_job *j, uint8_t **out, size_t *out_length)
{
    if (j->count == 1)
        return sd_encode_webp(j->frames[0], j->quality, j->lossless, out, out_length);
    return sd_encode_webp_anim(j->frames, j->delays_ms, j->count, j->loop_count, j->quality, j->lossless, out,
                               out_length);
}

/* AVIF is lossless at quality 100. */
int sd__avif_encode(const sd__encode_job *j, uint8_t **out, size_t *out_length)
{
    int q = j->lossless ? 100 : j->quality;
    if (j->count == 1)
        return sd_encode_avif(j->frames[0], q, j->speed, out, out_length);
    return sd_encode_avif_anim(j->frames, j->delays_ms, j->count, q, j->speed, out, out_length);
}
