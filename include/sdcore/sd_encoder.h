/*
 * sd_encoder.h — encode an sd_bitmap to PNG or JPEG in memory.
 *
 * The output buffer is allocated with malloc() and owned by the caller
 * (release it with sd_free()). Pure functions; thread-safe.
 */
#ifndef SDCORE_SD_ENCODER_H
#define SDCORE_SD_ENCODER_H

#include "sd_bitmap.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Name: sd_encode_png
 * Desc: 8-bit RGBA PNG (RGB when the bitmap is opaque), un-premultiplied.
 *       `compression` 0..9 (zlib level), -1 for the default (6).
 * Returns: SD_OK, SD_EINVAL, SD_ENOMEM, SD_ECORRUPT (libpng failure).
 */
SD_API int sd_encode_png(const sd_bitmap *bitmap, int compression,
                         uint8_t **out, size_t *out_length);

/*
 * Name: sd_encode_jpeg
 * Desc: 4:2:0 YCbCr JPEG at `quality` 1..100; `progressive` 1 for a
 *       progressive file. Alpha is dropped (premultiplied colours are
 *       written, i.e. composited over black).
 * Returns: SD_OK, SD_EINVAL, SD_ENOMEM, SD_ECORRUPT (libjpeg failure).
 */
SD_API int sd_encode_jpeg(const sd_bitmap *bitmap, int quality, int progressive,
                          uint8_t **out, size_t *out_length);


#ifdef __cplusplus
}
#endif
#endif /* SDCORE_SD_ENCODER_H */
