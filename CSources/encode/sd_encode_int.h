/* sd_encode_int.h — what the encoders share. */
#ifndef SD_ENCODE_INT_H
#define SD_ENCODE_INT_H

#include "common/sd_internal.h"
#include "sdcore.h"
#define SD_COMPAT_QUIET /* the encoders define the 0.9 positional functions */
#include "sdcore/sd_compat.h"

/* sd_encode_png with the colour type chosen by the caller: RGBA when
 * `alpha`, else RGB (an APNG's frames must all have the file's). */
SD__HIDDEN int sd__encode_png(const sd_bitmap *b, int level, int alpha, uint8_t **out, size_t *out_len);

/* JPEG 4:2:0 at `quality` 1..100; progressive and optimize (Huffman
 * tables made for the image) 0/1. */
SD__HIDDEN int sd__encode_jpeg(const sd_bitmap *b, int quality, int progressive, int optimize, uint8_t **out,
                               size_t *out_len);

/* An ICC profile to embed (sd_encoder_set_icc_profile); len 0: none. */
typedef struct sd__icc {
    const uint8_t *data;
    size_t len;
} sd__icc;

/* AVIF still (one frame) or sequence, with a colr ICC box when icc has one. */
SD__HIDDEN int sd__encode_avif(const sd_bitmap *const *frames, const int *delays_ms, size_t count, int quality,
                               int speed, const sd__icc *icc, uint8_t **out, size_t *out_len);
/* An encoded file with the profile added: JPEG APP2 ICC_PROFILE segments
 * after SOI and its APP0/APP1, PNG an iCCP chunk after IHDR, WebP an ICCP
 * chunk (libwebpmux). A new buffer in *out; `in` stays the caller's. */
SD__HIDDEN int sd__jpeg_add_icc(const uint8_t *in, size_t n, const sd__icc *icc, uint8_t **out, size_t *out_len);
SD__HIDDEN int sd__png_add_icc(const uint8_t *in, size_t n, const sd__icc *icc, uint8_t **out, size_t *out_len);
SD__HIDDEN int sd__webp_add_icc(const uint8_t *in, size_t n, const sd__icc *icc, uint8_t **out, size_t *out_len);

#endif
