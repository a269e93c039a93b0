/*
 * sd_decoder_int.h — what the decoder front end shares with its codecs.
 * A codec (jpeg/, png/) implements sd__codec and reports header facts with
 * sd__decoder_set_header(), which enforces the limits and plans the size.
 */
#ifndef SD_DECODER_INT_H
#define SD_DECODER_INT_H

#include "bitmap/sd_bitmap_int.h"
#include "sdcore.h"

typedef struct sd__codec {
    /* Create the codec state; called once when the format is known. */
    int (*init)(sd_decoder *dec);
    /* Consume bytes (all of them: buffer what cannot be used yet). */
    int (*push)(sd_decoder *dec, const uint8_t *data, size_t length);
    /* End of input: finish decoding what can be decoded. */
    int (*finish)(sd_decoder *dec);
    /* The picture at decode size, stored orientation. final=0: a view of the
     * current state (SD_EAGAIN if nothing to show); final=1: the result,
     * after finish. *owned says whether the caller now owns *out. */
    int (*canvas)(sd_decoder *dec, int final, sd_bitmap **out, int *owned);
    void (*destroy)(sd_decoder *dec);
} sd__codec;

SD__HIDDEN extern const sd__codec sd__jpeg_codec;
SD__HIDDEN extern const sd__codec sd__png_codec;

struct sd_decoder {
    /* options */
    int apply_orientation;
    uint32_t target_w, target_h;
    int preserve_aspect;
    int64_t max_bytes, max_pixels, max_dimension, max_memory;
    int previews;
    int64_t preview_interval_ms;

    /* front-end state */
    int started;  /* first push happened: options are frozen */
    int error;    /* sticky failure (< 0), 0 while healthy */
    int finished; /* finish() succeeded */
    int taken;    /* the result was handed out */
    uint8_t sniff[8];
    size_t sniff_len;
    char message[256];

    /* facts */
    sd_format format;
    int header_ready;
    uint32_t width, height; /* stored */
    int orientation;
    int progressive;
    int has_alpha;
    uint32_t decode_w, decode_h; /* output size before orientation */
    int64_t scans, rows, previews_rendered, warnings;
    int complete;
    int end_reached; /* the codec saw the end of the image */

    const sd__codec *codec;
    void *codec_state;
};

/* Record header facts; checks the limits and plans decode_w x decode_h. */
SD__HIDDEN int sd__decoder_set_header(sd_decoder *dec, uint32_t width, uint32_t height,
                                      int orientation, int progressive, int has_alpha);

/* printf into dec->message. */
SD__HIDDEN void sd__decoder_msg(sd_decoder *dec, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
