/*
 * sd_compat.h — every compatibility name in one place, kept until 0.11 and
 * not included by <sdcore.h> (include it by name): the positional
 * encoders of 0.9 and before, wrappers of the same code as sd_encoder
 * (sd_encoder.h), marked deprecated (define SD_COMPAT_QUIET before
 * including this header to silence that); and the decode-named aliases of
 * the loop's sink parameters (0.4 and before).
 */
#ifndef SDCORE_SD_COMPAT_H
#define SDCORE_SD_COMPAT_H

#include "sd_bitmap.h"
#include "sd_loop.h"

/* Older names of the loop's sink parameters. */
#define SD_REQ_DECODE SD_REQ_USE_SINK
#define SD_METRIC_DECODE_MS SD_METRIC_SINK_MS
#define SD_LOOP_MAX_DECODE_BACKLOG SD_LOOP_MAX_SINK_BACKLOG

#ifdef __cplusplus
extern "C" {
#endif

#if defined(SD_COMPAT_QUIET) || !defined(__GNUC__)
#define SD_COMPAT_DEPRECATED
#else
#define SD_COMPAT_DEPRECATED __attribute__((deprecated("use sd_encoder_new/sd_encoder_set (sd_encoder.h)")))
#endif

/*
 * Name: sd_encode_png
 * Desc: 8-bit RGBA PNG (RGB when the bitmap is opaque), un-premultiplied.
 *       `compression` 0..9 (zlib level), -1 for the default (6).
 * Returns: SD_OK, SD_EINVAL, SD_ENOMEM, SD_ECORRUPT (libpng failure).
 */
SD_API SD_COMPAT_DEPRECATED int sd_encode_png(const sd_bitmap *bitmap, int compression,
                         uint8_t **out, size_t *out_length);

/*
 * Name: sd_encode_jpeg
 * Desc: 4:2:0 YCbCr JPEG at `quality` 1..100; `progressive` 1 for a
 *       progressive file. Alpha is dropped (premultiplied colours are
 *       written, i.e. composited over black).
 * Returns: SD_OK, SD_EINVAL, SD_ENOMEM, SD_ECORRUPT (libjpeg failure).
 */
SD_API SD_COMPAT_DEPRECATED int sd_encode_jpeg(const sd_bitmap *bitmap, int quality, int progressive,
                          uint8_t **out, size_t *out_length);

/*
 * Name: sd_encode_webp
 * Desc: A still WebP (libwebp): lossy at `quality` 0..100, or lossless
 *       (`lossless` 1: `quality` is ignored). Alpha is kept (straight).
 * Returns: SD_OK, SD_EINVAL, SD_ETOOLARGE (over 16383 a side), SD_ENOMEM,
 *          SD_ECORRUPT (libwebp failure).
 */
SD_API SD_COMPAT_DEPRECATED int sd_encode_webp(const sd_bitmap *bitmap, int quality, int lossless,
                          uint8_t **out, size_t *out_length);

/*
 * Name: sd_encode_webp_anim
 * Desc: An animated WebP (libwebp's WebPAnimEncoder) of `count` frames of
 *       one size: lossy at `quality` 0..100 or lossless (`lossless` 1);
 *       the encoder picks sub-rectangles, blending and key frames. Frame i
 *       shows for `delays_ms[i]` (NULL: 0); `loop_count` 0 = forever
 *       (0..65535). Alpha is kept (straight).
 * Returns: SD_OK, SD_EINVAL (no frames, sizes differ, a negative delay or
 *          out-of-range quality/loop), SD_ETOOLARGE (over 16383 a side),
 *          SD_ENOMEM, SD_ECORRUPT (libwebp failure).
 */
SD_API SD_COMPAT_DEPRECATED int sd_encode_webp_anim(const sd_bitmap *const *frames, const int *delays_ms, size_t count,
                               int loop_count, int quality, int lossless,
                               uint8_t **out, size_t *out_length);

/*
 * Name: sd_encode_avif
 * Desc: A still AVIF (libavif, 8-bit): `quality` 0..100 maps to the AV1
 *       quantizer 63..0; 100 is lossless (YUV 4:4:4, identity matrix),
 *       below it 4:2:0. Alpha is kept when there is any. `speed` 0..10
 *       (slowest..fastest), -1 for libavif's default. One thread.
 * Returns: SD_OK, SD_EINVAL, SD_ENOMEM, SD_EUNSUPPORTED (libavif was built
 *          without an AV1 encoder), SD_ECORRUPT (encoder failure).
 */
SD_API SD_COMPAT_DEPRECATED int sd_encode_avif(const sd_bitmap *bitmap, int quality, int speed,
                          uint8_t **out, size_t *out_length);

/*
 * Name: sd_encode_avif_anim
 * Desc: An AVIF image sequence (libavif) of `count` frames of one size,
 *       with sd_encode_avif's quality and speed; frame i shows for
 *       `delays_ms[i]` (NULL or 0: 1 ms, the shortest sample). Only the
 *       first frame is a key frame (libavif's default). Every frame has an
 *       alpha plane unless all are opaque. It plays forever: libavif 0.11
 *       writes no repetition count.
 * Returns: SD_OK, SD_EINVAL (no frames, sizes differ, a negative delay or
 *          out-of-range quality/speed), SD_ENOMEM, SD_EUNSUPPORTED (libavif
 *          was built without an AV1 encoder), SD_ECORRUPT (encoder failure).
 */
SD_API SD_COMPAT_DEPRECATED int sd_encode_avif_anim(const sd_bitmap *const *frames, const int *delays_ms, size_t count,
                               int quality, int speed, uint8_t **out, size_t *out_length);

/*
 * Name: sd_encode_gif
 * Desc: A GIF of `count` frames of one size (an animation when count > 1):
 *       each frame full-canvas, quantised to its own palette of 255 colours
 *       (giflib's median cut, no dithering), alpha below 128 transparent,
 *       disposal restore-to-background. `delays_ms` (NULL: 0) rounded to
 *       hundredths; `loop_count` 0 = forever (NETSCAPE2.0, written when
 *       count > 1).
 * Returns: SD_OK, SD_EINVAL (no frames, sizes differ, negative delay),
 *          SD_ETOOLARGE (over 65535 a side), SD_ENOMEM, SD_ECORRUPT.
 */
SD_API SD_COMPAT_DEPRECATED int sd_encode_gif(const sd_bitmap *const *frames, const int *delays_ms, size_t count,
                         int loop_count, uint8_t **out, size_t *out_length);

/*
 * Name: sd_encode_apng
 * Desc: An APNG of `count` frames of one size (libpng writes each frame's
 *       data; the APNG chunks are ours): frame 0 is the default image; each
 *       later frame is the rectangle where it differs from the one before,
 *       replacing it (blend source, dispose none), so a decoder's canvas
 *       after frame i is frame i exactly. Colour type RGBA when any frame
 *       has alpha, else RGB; `level` is zlib's 0..9 (-1: libpng's default).
 *       Frame i shows for `delays_ms[i]` (NULL: 0; stored as num/den of a
 *       second: 1000ths up to 65535 ms, else 100ths); `loop_count` 0 =
 *       forever. One frame gives a plain PNG's pixels with an acTL.
 *       Since 0.5 (SDCORE_0.5).
 * Returns: SD_OK, SD_EINVAL (no frames, sizes differ, a negative delay or
 *          loop count, level over 9), SD_ETOOLARGE, SD_ENOMEM, SD_ECORRUPT
 *          (libpng failure). *out is freed with sd_free.
 */
SD_API SD_COMPAT_DEPRECATED int sd_encode_apng(const sd_bitmap *const *frames, const int *delays_ms, size_t count,
                          int loop_count, int level, uint8_t **out, size_t *out_length);

#ifdef __cplusplus
}
#endif
#endif /* SDCORE_SD_COMPAT_H */
