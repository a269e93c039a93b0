/* sd_test_encode.h — fixtures encoded through sd_encoder, in one call each
 * (the tests' shorthand; the handle itself is tested in test_units). */
#ifndef SD_TEST_ENCODE_H
#define SD_TEST_ENCODE_H

#include "sdcore.h"

/* `count` frames of `format` with the parameters in `params`: param/value
 * pairs ended by a 0 (NULL: none). */
static inline int sdt_encode(sd_format format, const sd_bitmap *const *frames, const int *delays, size_t count,
                             const int *params, uint8_t **out, size_t *n)
{
    sd_encoder *e = NULL;
    int rc = sd_encoder_new(format, &e);
    for (int i = 0; rc == SD_OK && params != NULL && params[i] != 0; i += 2)
        rc = sd_encoder_set(e, (sd_encoder_param)params[i], params[i + 1]);
    for (size_t i = 0; rc == SD_OK && i < count; i++)
        rc = sd_encoder_add_frame(e, frames[i], delays ? delays[i] : 0);
    if (rc == SD_OK)
        rc = sd_encoder_finish(e, out, n);
    sd_encoder_free(e);
    return rc;
}

static inline int enc_png(const sd_bitmap *b, int level, uint8_t **out, size_t *n)
{
    const int p[] = {SD_ENC_COMPRESSION_LEVEL, level, 0};
    return sdt_encode(SD_FORMAT_PNG, &b, NULL, 1, p, out, n);
}
static inline int enc_jpeg(const sd_bitmap *b, int quality, int progressive, uint8_t **out, size_t *n)
{
    const int p[] = {SD_ENC_QUALITY, quality, SD_ENC_PROGRESSIVE, progressive, 0};
    return sdt_encode(SD_FORMAT_JPEG, &b, NULL, 1, p, out, n);
}
static inline int enc_webp(const sd_bitmap *b, int quality, int lossless, uint8_t **out, size_t *n)
{
    const int p[] = {SD_ENC_QUALITY, quality, SD_ENC_LOSSLESS, lossless, 0};
    return sdt_encode(SD_FORMAT_WEBP, &b, NULL, 1, p, out, n);
}
static inline int enc_avif(const sd_bitmap *b, int quality, int speed, uint8_t **out, size_t *n)
{
    const int p[] = {SD_ENC_QUALITY, quality, SD_ENC_SPEED, speed, 0};
    return sdt_encode(SD_FORMAT_AVIF, &b, NULL, 1, p, out, n);
}
static inline int enc_webp_anim(const sd_bitmap *const *f, const int *delays, size_t count, int loops, int quality,
                                int lossless, uint8_t **out, size_t *n)
{
    const int p[] = {SD_ENC_LOOP_COUNT, loops, SD_ENC_QUALITY, quality, SD_ENC_LOSSLESS, lossless, 0};
    return sdt_encode(SD_FORMAT_WEBP, f, delays, count, p, out, n);
}
static inline int enc_avif_anim(const sd_bitmap *const *f, const int *delays, size_t count, int quality, int speed,
                                uint8_t **out, size_t *n)
{
    const int p[] = {SD_ENC_QUALITY, quality, SD_ENC_SPEED, speed, 0};
    return sdt_encode(SD_FORMAT_AVIF, f, delays, count, p, out, n);
}
static inline int enc_gif(const sd_bitmap *const *f, const int *delays, size_t count, int loops, uint8_t **out,
                          size_t *n)
{
    const int p[] = {SD_ENC_LOOP_COUNT, loops, 0};
    return sdt_encode(SD_FORMAT_GIF, f, delays, count, p, out, n);
}
static inline int enc_apng(const sd_bitmap *const *f, const int *delays, size_t count, int loops, int level,
                           uint8_t **out, size_t *n)
{
    const int p[] = {SD_ENC_LOOP_COUNT, loops, SD_ENC_COMPRESSION_LEVEL, level, 0};
    return sdt_encode(SD_FORMAT_PNG, f, delays, count, p, out, n);
}

#endif
