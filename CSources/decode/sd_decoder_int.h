/*
 * sd_decoder_int.h — what the decoder front end shares with its codecs.
 * A codec (jpeg/, png/) is one sd__codec: how to recognise its bytes, what it
 * can do, and its entry points; it reports header facts with
 * sd__decoder_set_header(), which enforces the limits and plans the size.
 * The codecs are listed once, in codec/sd_codecs.c (codec/sd_codec.h).
 */
#ifndef SD_DECODER_INT_H
#define SD_DECODER_INT_H

#include "bitmap/sd_bitmap_int.h"
#include "codec/sd_codec.h"
#include "color/sd_color.h"
#include "render/sd_render_int.h"

/* One frame of an animation, as announced by its codec. */
typedef struct sd__frame_meta {
    uint32_t stored_ms;
    uint8_t key;
} sd__frame_meta;

struct sd_decoder {
    /* options */
    int apply_orientation;
    uint32_t target_w, target_h;
    int preserve_aspect;
    int64_t max_bytes, max_pixels, max_dimension, max_memory;
    int previews;
    int64_t preview_interval_ms;
    int first_frame_only;
    int64_t formats; /* SD_DEC_FORMATS: bit per sd_format, 0 = all */
    int declined;    /* the format is outside `formats` */
    int64_t max_frames, frame_cache_bytes;
    int filter;             /* sd_filter to the output size */
    int resample_linear;    /* SD_DEC_RESAMPLE_LINEAR */
    uint32_t shrink_margin; /* SD_DEC_SHRINK_ON_LOAD_MARGIN */
    int64_t render_deadline_ms; /* SD_DEC_RENDER_DEADLINE_MS */
    int64_t preview_frame_bytes; /* SD_DEC_PREVIEW_FRAME_BYTES: the decode sink's */
    int render_set;     /* sd_decoder_set_render: `render` is the plan's input, */
    sd_render render;   /* else one made of the box, aspect and orientation options */

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
    sd_render_plan plan;         /* the render, planned for this source (sd_render.c) */
    sd_rect area;                /* plan.area in stored pixels */
    int area_cut;                /* ... and it is not the whole source */
    uint32_t decode_w, decode_h; /* plan.scaled, before orientation: what is resampled to */
    uint32_t need_w, need_h;     /* the whole source at the plan's scale: what a codec
                                  * may shrink on load to (at the margin) */
    uint32_t load_w, load_h;     /* the codec's canvas (after shrink-on-load) */
    double load_span_w, load_span_h; /* how much of it holds the picture, in canvas pixels: less
                                      * than load_w/h when shrinking left a last column/row
                                      * holding part of a pixel (JPEG's DCT scale, PNG's boxes);
                                      * 0: all of it */
    sd__color color;             /* what the codec found about its colours */
    int64_t scans, rows, previews_rendered, warnings;
    int complete;
    int end_reached; /* the codec saw the end of the image */
    int64_t settle_levels;  /* SD_DEC_SETTLE_LEVELS */
    int64_t end_when_settled; /* SD_DEC_END_WHEN_SETTLED (the sink's) */
    int settled;            /* stopped early: the rest cannot move the output past settle_levels */
    int64_t settle_bound;   /* ... the bound then, in hundredths of a level */

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
/* The render the decoder plans: the one set (sd_decoder_set_render), else
 * the box's (SD_DEC_TARGET_*: a fit, or a force, never enlarged). */
SD__HIDDEN void sd__decoder_render(const sd_decoder *dec, sd_render *r);
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
/* The state a whole-file codec (BMP, HEIC, SVG: the bytes kept until the
 * end, then one render) starts with; its own state struct has it as its
 * first member, `w`. sd__whole_init allocates `size` zeroed bytes as the
 * decoder's codec state; sd__whole_canvas hands over the canvas at the end
 * (no previews); sd__whole_destroy frees the bytes, the canvas and the state. */
typedef struct sd__whole {
    sd_decoder *dec;
    sd__buf in;        /* the bytes so far */
    sd_bitmap *canvas; /* what finish renders into */
} sd__whole;
SD__HIDDEN int sd__whole_init(sd_decoder *d, size_t size);
SD__HIDDEN int sd__whole_canvas(sd_decoder *d, int final, sd_bitmap **out, int *owned);
SD__HIDDEN void sd__whole_destroy(sd_decoder *d);

/* The shrink-on-load rule, the one place it is written: a codec reduces
 * the source as far as a reduction keeps the margin (SD_DEC_SHRINK_ON_LOAD_
 * MARGIN) times the planned scale's pixels; the resampler finishes.
 * sd__decoder_load_fits: a reduction to `w` x `h` keeps enough;
 * sd__decoder_shrink_factor: the largest whole factor that does, on a side
 * of `full` pixels whose planned size is `need`. */
static inline int sd__decoder_load_fits(const sd_decoder *d, uint64_t w, uint64_t h)
{
    return w >= (uint64_t)d->need_w * d->shrink_margin && h >= (uint64_t)d->need_h * d->shrink_margin;
}
static inline uint32_t sd__decoder_shrink_factor(const sd_decoder *d, uint64_t full, uint32_t need)
{
    uint64_t f = full / ((uint64_t)(need ? need : 1) * d->shrink_margin);
    return f < 1 ? 1 : (uint32_t)f;
}

/* The codec's canvas is the output's size: nothing left to resample. */
static inline int sd__decoder_full_size(const sd_decoder *d)
{
    return d->load_w == d->decode_w && d->load_h == d->decode_h;
}
SD__HIDDEN void sd__decoder_msg(sd_decoder *dec, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
