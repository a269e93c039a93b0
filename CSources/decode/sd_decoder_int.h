/*
 * sd_decoder_int.h — what the decoder front end shares with its codecs.
 * A codec (jpeg/, png/) is one sd__codec: how to recognise its bytes, what it
 * can do, and its entry points; it reports header facts with
 * sd__decoder_set_header(), which enforces the limits and plans the size.
 * The codecs are listed once, in decode/sd_codecs.c.
 */
#ifndef SD_DECODER_INT_H
#define SD_DECODER_INT_H

#include "bitmap/sd_bitmap_int.h"
#include "sdcore.h"

/* Sniffing: 1 these bytes are this format, 0 they are not, -1 undecided
 * (need more; the front end buffers up to SD__SNIFF_MAX bytes). */
#define SD__SNIFF_MAX 256
typedef int (*sd__sniff_fn)(const uint8_t *p, size_t n);

typedef struct sd__codec {
    sd_format format;
    const char *name; /* "JPEG": in messages and sd_format_name */
    const char *mime; /* "image/jpeg" */
    sd__sniff_fn sniff;
    unsigned caps;    /* SD_CAP_*; 0 for a format we only recognise */
    /* Entry points; all NULL for a format we only recognise. */
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
    /* Animated codecs, while dec->framed: frame `index` (< dec->nframes,
     * announced with sd__decoder_add_frame) composited at decode size,
     * stored orientation; *owned as for canvas. The front end scales,
     * orients and copies. NULL for still codecs: their one frame is the
     * final canvas (so is an unframed file of an animated codec). */
    int (*frame)(sd_decoder *dec, uint32_t index, sd_bitmap **out, int *owned);
} sd__codec;

/* One frame of an animation, as announced by its codec. */
typedef struct sd__frame_meta {
    uint32_t stored_ms;
    uint8_t key;
} sd__frame_meta;

/* The registry (sd_codecs.c): the codec of a format (NULL if unknown), and
 * sniffing over every codec: the format, SD_FORMAT_UNKNOWN when no codec
 * claims the bytes, or -1 while some codec is undecided. */
SD__HIDDEN const sd__codec *sd__codec_for(sd_format format);
SD__HIDDEN int sd__sniff(const uint8_t *p, size_t n);
/* AVIF's ISO BMFF brand check (shared with HEIC's in sd_codecs.c). */
SD__HIDDEN int sd__sniff_avif(const uint8_t *p, size_t n);

struct sd_decoder {
    /* options */
    int apply_orientation;
    uint32_t target_w, target_h;
    int preserve_aspect;
    int64_t max_bytes, max_pixels, max_dimension, max_memory;
    int previews;
    int64_t preview_interval_ms;
    int first_frame_only;
    int64_t max_frames, frame_cache_bytes;

    /* front-end state */
    int started;  /* first push happened: options are frozen */
    int error;    /* sticky failure (< 0), 0 while healthy */
    int finished; /* finish() succeeded */
    int taken;    /* the result was handed out */
    uint8_t sniff[SD__SNIFF_MAX];
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

    /* frames: an animated codec sets `animated`/`loop_count` with its
     * header and announces each complete frame; a still has none listed */
    int animated;
    /* The codec lists its frames (sd__decoder_add_frame) and renders them
     * (codec->frame), each with a duration: GIF always, WebP and APNG when
     * animated. Otherwise the front end serves a still's one frame. */
    int framed;
    int64_t loop_count;
    sd__frame_meta *frames;
    uint32_t nframes, frames_cap;
    sd_bitmap *still; /* a still's frame, kept once sd_decoder_frame asked */
    sd_bitmap *view;  /* a frame made for sd_decoder_frame_view, lent until the next */

    const sd__codec *codec;
    void *codec_state;
    int64_t charged; /* bytes of the process-wide budget this decoder holds */
};

/* Record header facts; checks the limits and plans decode_w x decode_h. */
SD__HIDDEN int sd__decoder_set_header(sd_decoder *dec, uint32_t width, uint32_t height,
                                      int orientation, int progressive, int has_alpha);

/* An animated codec: frame number dec->nframes is complete. Enforces
 * SD_DEC_MAX_FRAMES (SD_ETOOLARGE with a message). */
SD__HIDDEN int sd__decoder_add_frame(sd_decoder *dec, uint32_t stored_ms, int key);

/* The process-wide decode memory budget (sd_budget.c). A codec charges its
 * working memory (canvases, coefficient buffers) before allocating it:
 * SD_ENOMEM with a message when the budget cannot cover it. Everything a
 * decoder charged is given back by sd_decoder_free. */
#define SD__BUDGET_MIN ((int64_t)256 << 20)
SD__HIDDEN int sd__decoder_charge(sd_decoder *dec, uint64_t bytes, const char *what);
SD__HIDDEN void sd__decoder_uncharge_all(sd_decoder *dec);
/* Raw take/give, for memory that is optional (kept frames): take fails
 * with SD_ENOMEM, telling the limit and the bytes in use. */
SD__HIDDEN int sd__budget_take(int64_t bytes, int64_t *limit, int64_t *used);
SD__HIDDEN void sd__budget_give(int64_t bytes);

/* printf into dec->message. */
SD__HIDDEN void sd__decoder_msg(sd_decoder *dec, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
