/*
 * sd_png_int.h — the PNG codec (sd_png.c) and its APNG part (sd_apng.c).
 *
 * Until the first IDAT a PNG may turn out animated, so its chunks are
 * walked and kept; libpng gets each chunk once complete. At the IDAT header
 * without an acTL it is a plain PNG: libpng gets the rest as it comes and
 * nothing is kept. With an acTL first, everything is kept; at the end the
 * animation is checked as a whole (the static-fallback rules of
 * ../shared/corpus-anim/README.md): valid, its frames are announced and
 * decoded on demand; invalid, libpng gets the kept bytes and the file is
 * the still default image, as in browsers.
 */
#ifndef SD_PNG_INT_H
#define SD_PNG_INT_H

#include "decode/sd_decoder_int.h"

typedef struct sd__apng sd__apng;

enum { SD__APNG_UNDECIDED = 0, SD__APNG_PLAIN = 1, SD__APNG_ANIMATED = 2 };

SD__HIDDEN int sd__apng_new(sd_decoder *dec, sd__apng **out);
SD__HIDDEN void sd__apng_free(sd__apng *a);

/* Keep and walk more bytes: SD__APNG_* or an error. */
SD__HIDDEN int sd__apng_push(sd__apng *a, const uint8_t *p, size_t n);
/* The bytes kept, and how many of them form complete chunks. */
SD__HIDDEN const uint8_t *sd__apng_bytes(const sd__apng *a, size_t *len, size_t *walked);

/* End of input of an SD__APNG_ANIMATED file: 1 the animation is valid (the
 * decoder is framed, its frames announced), 0 fall back to the still. */
SD__HIDDEN int sd__apng_finish(sd__apng *a);

/* Frame `index` composited, premultiplied, full canvas size (a view). */
SD__HIDDEN int sd__apng_frame(sd__apng *a, uint32_t index, sd_bitmap **out, int *owned);

#endif
