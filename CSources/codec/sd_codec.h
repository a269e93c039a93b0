/*
 * sd_codec.h — the codec row: one per format the core recognises, listed
 * once in codec/sd_codecs.c. A row says how to recognise the format's
 * bytes, what this build can do with it (SD_CAP_*), and its entry points:
 * the decoder's (decode/<format>/) and the encoder's (encode/). Swift's
 * built-in coders are derived from these rows (sd_format_capabilities), so
 * a format added here decodes and encodes from Swift with no Swift change.
 */
#ifndef SD_CODEC_H
#define SD_CODEC_H

#include "common/sd_internal.h"
#include "sdcore.h"

/* Sniffing: 1 these bytes are this format, 0 they are not, -1 undecided
 * (need more; the front end buffers up to SD__SNIFF_MAX bytes). */
#define SD__SNIFF_MAX 4096 /* an SVG's prolog (XML declaration, comments, a DOCTYPE) can be long */
typedef int (*sd__sniff_fn)(const uint8_t *p, size_t n);

/* What sd_encoder hands a codec's encode entry: the frames (all one size;
 * count >= 1, and 1 unless the row has SD_CAP_ENCODE_ANIMATION), their
 * delays, and every parameter, resolved (a format ignores what it does not
 * use; -1 = the format's own default where the text says so). */
typedef struct sd__encode_job {
    const sd_bitmap *const *frames;
    const int *delays_ms; /* count entries, each >= 0 */
    size_t count;
    int quality;     /* 1..100 (SD_ENC_QUALITY) */
    int lossless;    /* 0/1 */
    int progressive; /* 0/1 (JPEG) */
    int level;       /* zlib level 0..9, -1 default (PNG, APNG) */
    int speed;       /* 0..10, -1 default (AVIF) */
    int loop_count;  /* 0 = forever */
    int optimize;    /* 0/1: Huffman tables made for the image (JPEG) */
    const uint8_t *icc; /* a profile to embed (icc_len 0: none); GIF has no place for one */
    size_t icc_len;
} sd__encode_job;

typedef struct sd__codec {
    sd_format format;
    const char *name; /* "JPEG": in messages and sd_format_name */
    const char *mime; /* "image/jpeg" */
    sd__sniff_fn sniff;
    unsigned caps;    /* SD_CAP_*; 0 for a format we only recognise */
    /* Decoder entry points; all NULL unless caps has SD_CAP_DECODE. */
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
    /* The encoder (caps has SD_CAP_ENCODE, else NULL): the file in *out
     * (sd__malloc'd, freed with sd_free), or an SD_E* code. */
    int (*encode)(const sd__encode_job *job, uint8_t **out, size_t *out_length);
} sd__codec;

/* The registry (sd_codecs.c): the codec of a format (NULL if unknown), and
 * sniffing over every codec: the format, SD_FORMAT_UNKNOWN when no codec
 * claims the bytes, or -1 while some codec is undecided. */
SD__HIDDEN const sd__codec *sd__codec_for(sd_format format);
SD__HIDDEN int sd__sniff(const uint8_t *p, size_t n);
/* "JPEG, PNG, GIF, WebP or AVIF": the formats this build decodes, for messages. */
SD__HIDDEN void sd__decodable_names(char *out, size_t size);
/* The ISO BMFF brand checks of AVIF and HEIC (one parser, sd_codecs.c). */
SD__HIDDEN int sd__sniff_avif(const uint8_t *p, size_t n);
SD__HIDDEN int sd__sniff_heic(const uint8_t *p, size_t n);
SD__HIDDEN int sd__sniff_svg(const uint8_t *p, size_t n);
/* An optional codec's row, added by its own build target when linked (a
 * constructor in decode/svg/ under SwiftPM): it takes the place of the
 * row that only recognises its format. SD_EINVAL for a format that has a
 * codec already. Before main, or at least before any decoding starts. */
SD__HIDDEN int sd__codec_plug(const sd__codec *c);

/* The encoders' entry points (encode/), named in their formats' rows. */
SD__HIDDEN int sd__jpeg_encode(const sd__encode_job *job, uint8_t **out, size_t *out_length);
SD__HIDDEN int sd__png_encode(const sd__encode_job *job, uint8_t **out, size_t *out_length);
SD__HIDDEN int sd__gif_encode(const sd__encode_job *job, uint8_t **out, size_t *out_length);
SD__HIDDEN int sd__webp_encode(const sd__encode_job *job, uint8_t **out, size_t *out_length);
SD__HIDDEN int sd__avif_encode(const sd__encode_job *job, uint8_t **out, size_t *out_length);
SD__HIDDEN int sd__bmp_encode(const sd__encode_job *job, uint8_t **out, size_t *out_length);

#endif
