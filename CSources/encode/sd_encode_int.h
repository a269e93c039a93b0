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

#endif
