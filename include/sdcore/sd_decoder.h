/*
 * sd_decoder.h — incremental JPEG, PNG/APNG, GIF, WebP and AVIF decoder into
 * premultiplied ARGB32.
 *
 * Push model (zstd-style): feed the encoded bytes in order, in chunks of any
 * size, with sd_decoder_push(); call sd_decoder_finish() when the input ends;
 * then take the result with sd_decoder_take_bitmap(). In between, header
 * facts are available through sd_decoder_get() as soon as the bytes allow,
 * and sd_decoder_snapshot() renders what has been decoded so far.
 *
 *     sd_decoder *d; sd_bitmap *bmp;
 *     sd_decoder_new(&d);
 *     sd_decoder_set(d, SD_DEC_MAX_PIXEL_SIZE, 256);    // optional thumbnail
 *     while ((n = read(fd, buf, sizeof buf)) > 0)
 *         if (sd_decoder_push(d, buf, n) != SD_OK) break;
 *     if (sd_decoder_finish(d) == SD_OK && sd_decoder_take_bitmap(d, &bmp) == SD_OK)
 *         use(bmp), sd_bitmap_free(bmp);
 *     sd_decoder_free(d);
 *
 * Errors are sticky: after a call fails with anything but SD_EAGAIN/SD_EINVAL,
 * every later call returns SD_EBADSTATE and touches nothing; the message of
 * the original failure stays available from sd_decoder_message().
 *
 * Truncated input: when the header was complete, finish() succeeds and the
 * bitmap is full-size with SD_DEC_INFO_COMPLETE == 0. JPEG follows libjpeg
 * (missing data decodes as grey, corrupt-data warnings are counted, not
 * fatal); PNG leaves rows that never arrived transparent. Input that ends
 * inside the header fails with SD_ETRUNCATED.
 *
 * Frames: every image is a sequence of frames drawn on one canvas (the
 * source size, SD_DEC_INFO_WIDTH x HEIGHT). A still image is one frame with
 * duration 0 that plays once; an animation (GIF, APNG, animated WebP, once
 * their codecs land: sd_format_capabilities says SD_CAP_ANIMATION) has
 * SD_DEC_INFO_FRAME_COUNT frames, each with a duration, and a loop count.
 * Frames are not decoded into memory whole: sd_decoder_frame() composites
 * frame N on request (from the nearest key frame or a kept canvas, within
 * SD_DEC_FRAME_CACHE_BYTES), at the output size and orientation, so
 * sequential playback costs one frame decode per frame. The classic calls
 * (take_bitmap, snapshot, sd_decode) see the first frame, so a caller that
 * knows nothing of animation keeps working.
 *
 *     int64_t n, loops, ms;
 *     sd_decoder_finish(d);
 *     sd_decoder_get(d, SD_DEC_INFO_FRAME_COUNT, &n);
 *     sd_decoder_get(d, SD_DEC_INFO_LOOP_COUNT, &loops);      // 0 = forever
 *     for (uint32_t i = 0; i < n; i++) {
 *         sd_decoder_frame_get(d, i, SD_FRAME_DURATION_MS, &ms);
 *         if (sd_decoder_frame(d, i, &bmp) == SD_OK) show(bmp, ms), sd_bitmap_free(bmp);
 *     }
 *
 * Threads: a decoder is confined to one thread at a time (it may move
 * between threads with proper hand-off). Different decoders are independent.
 */
#ifndef SDCORE_SD_DECODER_H
#define SDCORE_SD_DECODER_H

#include "sd_bitmap.h"
#include "sd_render.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sd_decoder sd_decoder;

/* Every format the core recognises, whether or not it can decode it
 * (sd_format_capabilities says). The one format enum: Swift mirrors it. */
typedef enum sd_format {
    SD_FORMAT_UNKNOWN = 0,
    SD_FORMAT_JPEG = 1,
    SD_FORMAT_PNG = 2,
    SD_FORMAT_GIF = 3,
    SD_FORMAT_WEBP = 4,
    SD_FORMAT_AVIF = 5,
    SD_FORMAT_HEIC = 6,
    SD_FORMAT_JXL = 7,
    SD_FORMAT_BMP = 8,
    SD_FORMAT_TIFF = 9,
    SD_FORMAT_SVG = 10,
    SD_FORMAT_ICO = 11
} sd_format;

/* What this build can do with a format (bits). */
typedef enum sd_capability {
    SD_CAP_DECODE = 1,        /* sd_decoder decodes it */
    SD_CAP_INCREMENTAL = 2,   /* header facts and snapshots while bytes arrive */
    SD_CAP_SCAN_PREVIEWS = 4, /* renders a preview per progressive scan (SD_DEC_PREVIEWS) */
    SD_CAP_DOWNSCALE = 8,     /* scales while decoding (cheaper thumbnails) */
    SD_CAP_ANIMATION = 16,    /* decodes animations (frames: see below) */
    SD_CAP_ENCODE = 32,       /* sd_encoder writes it (sd_encoder_new) */
    SD_CAP_ENCODE_ANIMATION = 64, /* sd_encoder writes more than one frame (since 0.10) */
    SD_CAP_ENCODE_ALPHA = 128,    /* sd_encoder keeps alpha (without: composited over black) */
    SD_CAP_ENCODE_QUALITY = 256   /* lossy: SD_ENC_QUALITY trades size for fidelity */
} sd_capability;

/* Returns a static name: "JPEG", "PNG", "GIF", …; "unknown" for
 * SD_FORMAT_UNKNOWN or a bad value. */
SD_API const char *sd_format_name(sd_format format);
/* Returns a static MIME type: "image/jpeg", …; NULL for an unknown format. */
SD_API const char *sd_format_mime(sd_format format);
/* Returns the sd_capability bits of this build for `format`; 0 =
 * recognised only. HEIC, JPEG XL and SVG are built in but their libraries
 * (libheif, libjxl, librsvg) are loaded on first use: where one is missing
 * at run time, the format still reports its bits, and decoding or encoding
 * it fails with SD_EUNSUPPORTED and a message naming the library (setting
 * SDCORE_HEIF_LIBRARY, SDCORE_JXL_LIBRARY or SDCORE_RSVG_LIBRARY to a file
 * that does not load shows it). */
SD_API unsigned sd_format_capabilities(sd_format format);

/* Defaults for the limits below (plain literals so Swift imports them). */
#define SD_DEFAULT_MAX_PIXELS 268435456LL        /* 2^28 px, e.g. 16384 x 16384 */
#define SD_DEFAULT_MAX_DIMENSION 65535
#define SD_DEFAULT_MAX_MEMORY 1073741824LL       /* 1 GiB of codec working memory */
/* SDWebImage's scale-down-large-images budget (kDestImageLimitBytes). */
#define SD_DEFAULT_SCALE_DOWN_BYTES 62914560LL   /* 60 MiB */
#define SD_DEFAULT_PREVIEW_INTERVAL_MS 100
#define SD_DEFAULT_MAX_FRAMES 10000
#define SD_DEFAULT_FRAME_CACHE_BYTES 67108864LL  /* 64 MiB of kept frames */
#define SD_DEFAULT_RENDER_DEADLINE_MS 10000      /* an SVG's rendering */
/* sd_request_use_server_preset's decoder limits (Swift: DecodeLimits.server). */
#define SD_SERVER_MAX_PIXELS 40000000LL
#define SD_SERVER_MAX_DIMENSION 8192
#define SD_SERVER_MAX_MEMORY 268435456LL         /* 256 MiB */
/* Durations at or below this many ms are shown as SD_FRAME_MIN_SHOWN_MS
 * (Chromium, Firefox and SDWebImage: a "0" GIF delay plays at 10 fps). */
#define SD_FRAME_FAST_MS 10
#define SD_FRAME_MIN_SHOWN_MS 100

/* Where an image's colours come from (SD_DEC_INFO_COLOR_SPACE). */
typedef enum sd_color_space {
    SD_COLOR_SRGB = 0,       /* untagged, or tagged sRGB: used as they are */
    SD_COLOR_ICC = 1,        /* an embedded ICC profile (RGB or gray) */
    SD_COLOR_CICP = 2,       /* coded primaries and transfer (AVIF nclx, PNG cICP) */
    SD_COLOR_CHRM_GAMA = 3,  /* PNG cHRM and/or gAMA */
    SD_COLOR_CMYK = 4,       /* a CMYK JPEG: converted with its CMYK profile (since 0.10),
                              * else inverted CMYK as browsers do */
    SD_COLOR_HDR = 5         /* a PQ or HLG transfer: reported, not tone-mapped */
} sd_color_space;

typedef enum sd_decoder_param {
    /* ---- Options: set before the first push (SD_EBADSTATE after). ---- */
    /* 1 (default): the bitmap comes out upright; 0: only report it. */
    SD_DEC_APPLY_ORIENTATION = 1,
    /* Thumbnail box in output (upright) pixels; 0 = unbounded (default). */
    SD_DEC_TARGET_WIDTH = 2,
    SD_DEC_TARGET_HEIGHT = 3,
    /* 1 (default): fit inside the box keeping the aspect ratio; 0: fill the
     * box exactly. Never upscales: a side smaller than the box is kept. */
    SD_DEC_PRESERVE_ASPECT = 4,
    /* Shorthand: TARGET_WIDTH = TARGET_HEIGHT = value, aspect kept. */
    SD_DEC_MAX_PIXEL_SIZE = 5,
    /* Byte budget of the output bitmap (width*height*4); 0 = none (default).
     * The size is chosen before any full-size allocation; at least 1x1.
     * With a render (sd_decoder_set_render) it binds a plain resize only
     * (no cut, no canvas: a thumbnail box handed over as a render). */
    SD_DEC_MAX_BYTES = 6,
    /* Limits on the *source* image; beyond them: SD_ETOOLARGE, before any
     * pixel memory is allocated. */
    SD_DEC_MAX_PIXELS = 7,      /* width*height, default SD_DEFAULT_MAX_PIXELS */
    SD_DEC_MAX_DIMENSION = 8,   /* either side, default SD_DEFAULT_MAX_DIMENSION */
    SD_DEC_MAX_MEMORY = 9,      /* codec working memory, default SD_DEFAULT_MAX_MEMORY */
    /* 1: render previews of progressive JPEGs as scans complete (a render is
     * an IDCT pass over the image, so it is opt-in). Default 0. */
    SD_DEC_PREVIEWS = 10,
    /* Minimum milliseconds between two preview renders; a scan that
     * completes sooner is skipped. Default SD_DEFAULT_PREVIEW_INTERVAL_MS. */
    SD_DEC_PREVIEW_INTERVAL_MS = 11,
    /* 1: an animation decodes and reports its first frame only
     * (SDWebImage's .decodeFirstFrameOnly). Default 0. */
    SD_DEC_FIRST_FRAME_ONLY = 12,
    /* Frames an animation may have; one more fails with SD_ETOOLARGE.
     * Default SD_DEFAULT_MAX_FRAMES. */
    SD_DEC_MAX_FRAMES = 13,
    /* Bytes of composited frames an animation may keep to answer
     * sd_decoder_frame() without recompositing (0 = only the working
     * canvas). Default SD_DEFAULT_FRAME_CACHE_BYTES. */
    SD_DEC_FRAME_CACHE_BYTES = 14,
    /* The formats this decoder decodes: bit (1 << sd_format) for each, bits
     * 0..61; 0 (the default) = every format this build decodes. A file of
     * another format is declined: the push that names it fails with
     * SD_EUNSUPPORTED and SD_DEC_INFO_DECLINED reads 1 (a decode sink then
     * passes the body through undecoded, for another decoder: a user's
     * coder). Data no codec recognises is declined too unless bit 0
     * (SD_FORMAT_UNKNOWN) is set; with it, such data fails as ever. Since 0.10. */
    SD_DEC_FORMATS = 15,
    /* The sd_filter that resamples to the output size (the thumbnail box,
     * SD_DEC_MAX_BYTES): default SD_FILTER_LANCZOS3. Since 0.10. */
    SD_DEC_RESAMPLE_FILTER = 16,
    /* 1: resample in linear light (SD_RESAMPLE_LINEAR). Default 0. Since 0.10. */
    SD_DEC_RESAMPLE_LINEAR = 17,
    /* Shrink-on-load (JPEG's DCT scaling, PNG's and WebP's reduction while
     * decoding) stops where the image is still this many times the output
     * size, and the filter does the rest: 2 (default) gives libvips'
     * quality; 1 shrinks as far as the output allows (fastest, aliases
     * fine detail). 1..8. Since 0.10. */
    SD_DEC_SHRINK_ON_LOAD_MARGIN = 18,
    /* 1 (default): colours come out in sRGB — an embedded ICC profile, PNG's
     * cHRM/gAMA or coded CICP primaries are converted (lcms2, relative
     * colorimetric); 0: the pixels stay as stored (sd_decoder_icc_profile
     * gives the profile). Since 0.10. */
    SD_DEC_COLOR_MANAGE = 19,
    /* Vector formats (SVG): the longest rendering may take, in ms, read
     * between bands of four megapixels (one band is not interrupted);
     * past it, SD_ETOOLARGE. 0 = no deadline. Default
     * SD_DEFAULT_RENDER_DEADLINE_MS. Since 0.10. */
    SD_DEC_RENDER_DEADLINE_MS = 20,
    /* For a decode sink (sd_decode_sink.h) with SD_DEC_PREVIEWS: an
     * animation's frames go to the transfer's partial callback as they
     * complete, as sd_preview, until their bitmaps total this many bytes
     * (0, the default: no frames; a decoder alone only keeps the value).
     * Since 0.10. */
    SD_DEC_PREVIEW_FRAME_BYTES = 21,
    /* A progressive JPEG read for a reduced size stops at the first scan
     * boundary where the scans still to come can move no output sample by
     * more than this many levels (at the planned DCT scale, before the
     * filter; each side's rounding may add one): for every coefficient the
     * reduced IDCT reads, its successive-approximation bits still missing
     * times its quantizer times its basis' largest value, summed, through
     * YCbCr to RGB. The image is then complete at that size
     * (SD_DEC_INFO_SETTLED). 0 (default): only when nothing can change it
     * (the output is the whole file's, byte for byte). Since 0.11. */
    SD_DEC_SETTLE_LEVELS = 22,
    /* For a decode sink: 1 ends the transfer as soon as the image is
     * settled (SD_DEC_INFO_SETTLED): the result is complete at its size,
     * its body a prefix of the file (SD_METRIC_ENDED_EARLY). Default 0: the
     * body is read to its end. A decoder alone only keeps the value.
     * Since 0.11. */
    SD_DEC_END_WHEN_SETTLED = 23,

    /* ---- Information (read-only; SD_EAGAIN until the header is known). ---- */
    SD_DEC_INFO_FORMAT = 100,      /* sd_format; known after a few bytes */
    SD_DEC_INFO_WIDTH = 101,       /* source size as stored (before orientation) */
    SD_DEC_INFO_HEIGHT = 102,
    SD_DEC_INFO_ORIENTATION = 103, /* EXIF orientation 1..8 */
    SD_DEC_INFO_PROGRESSIVE = 104, /* 1 for progressive/multi-scan JPEG or Adam7 PNG */
    SD_DEC_INFO_HAS_ALPHA = 105,   /* 1 if the format can carry transparency */
    SD_DEC_INFO_OUTPUT_WIDTH = 106, /* size of the bitmap that will come out */
    SD_DEC_INFO_OUTPUT_HEIGHT = 107,
    SD_DEC_INFO_SCANS = 108,       /* completed progressive scans / Adam7 passes (a reduced-size
                                    * JPEG stops after the last scan its scale needs) */
    SD_DEC_INFO_ROWS = 109,        /* rows decoded so far in the current pass */
    SD_DEC_INFO_PREVIEWS = 110,    /* previews rendered so far; grows by 1 each */
    SD_DEC_INFO_COMPLETE = 111,    /* after finish: 1 if every pixel was decoded */
    SD_DEC_INFO_WARNINGS = 112,    /* non-fatal data warnings so far */
    SD_DEC_INFO_FINISHED = 113,    /* 1 once the end of the image was reached */
    /* Frames sd_decoder_frame() can render now: an animation's grow as its
     * bytes arrive (a frame counts once all its data is in); a still
     * image's one frame counts after finish. 0 while none. */
    SD_DEC_INFO_FRAME_COUNT = 114,
    /* Times the animation plays, as stored; 0 = forever. 1 for a still
     * image and for an animation that does not say (a GIF without
     * NETSCAPE2.0). Known with the header. */
    SD_DEC_INFO_LOOP_COUNT = 115,
    /* 1 if the file is an animation (even with SD_DEC_FIRST_FRAME_ONLY, or
     * when it turns out to hold one frame); 0 for a still image. */
    SD_DEC_INFO_ANIMATED = 116,
    /* 1 when the file was declined (its format is outside SD_DEC_FORMATS),
     * 0 once its format is known and taken. Since 0.10. */
    SD_DEC_INFO_DECLINED = 117,
    /* The size the codec decoded at before the filter (stored orientation):
     * the source size, or less after shrink-on-load. Since 0.10. */
    SD_DEC_INFO_LOAD_WIDTH = 118,
    SD_DEC_INFO_LOAD_HEIGHT = 119,
    /* sd_color_space: what the source's colours were. Since 0.10. */
    SD_DEC_INFO_COLOR_SPACE = 120,
    /* 1 when the codec stopped before the end of its input because the
     * rest cannot move the output at its size by more than
     * SD_DEC_SETTLE_LEVELS: the image is complete up to SD_DEC_INFO_LOAD_
     * WIDTH x HEIGHT (a later load that reduces as far or further may
     * decode the same bytes). Since 0.11. */
    SD_DEC_INFO_SETTLED = 121,
    /* The bound it stopped at, in hundredths of a level (0: exact). Since 0.11. */
    SD_DEC_INFO_SETTLE_BOUND = 122
} sd_decoder_param;

/*
 * Name: sd_decoder_new / sd_decoder_free
 * Desc: Create a decoder with default options; free one (NULL is accepted).
 * Returns: SD_OK, SD_EINVAL, SD_ENOMEM.
 */
SD_API int sd_decoder_new(sd_decoder **out);
SD_API void sd_decoder_free(sd_decoder *dec);

/*
 * Name: sd_decoder_set / sd_decoder_get
 * Desc: Set an option (SD_DEC_* below 100) or read an option or info value.
 * Returns: SD_OK; SD_EINVAL for an unknown parameter or a negative value;
 *          SD_EBADSTATE when setting an option after the first push;
 *          SD_EAGAIN for information not known yet.
 */
SD_API int sd_decoder_set(sd_decoder *dec, sd_decoder_param param, int64_t value);
SD_API int sd_decoder_get(const sd_decoder *dec, sd_decoder_param param,
                          int64_t *value);

/*
 * Name: sd_decoder_set_render
 * Desc: Decode to `render`'s plan (sd_render.h), copied: the box and resize
 *       type, crops, gravity, extend, padding, rotation and flips, planned
 *       for the source once its header is read, and read at the reduction
 *       the plan's scale needs. It replaces SD_DEC_TARGET_*, SD_DEC_PRESERVE_
 *       ASPECT, SD_DEC_APPLY_ORIENTATION (render->auto_rotate) and the byte
 *       budget (SD_DEC_MAX_BYTES); SD_DEC_INFO_OUTPUT_* tell the result's
 *       size. A result over render->max_result_* fails the header with
 *       SD_ETOOLARGE, before any pixel is allocated. NULL: back to those
 *       options.
 * Returns: SD_OK; SD_EINVAL for a render sd_render_plan_for refuses;
 *          SD_EBADSTATE after the first push.
 * Since: 0.10
 */
SD_API int sd_decoder_set_render(sd_decoder *dec, const sd_render *render);

/*
 * Name: sd_decoder_icc_profile
 * Desc: The ICC profile embedded in the image, as stored (JPEG APP2
 *       segments joined, PNG iCCP inflated, WebP ICCP, AVIF colr), for a
 *       program that manages colour itself (SD_DEC_COLOR_MANAGE 0).
 *       `*data` is lent: valid until sd_decoder_free. An image without a
 *       profile (or with one over 4 MiB, ignored) gives NULL and 0.
 * Returns: SD_OK; SD_EAGAIN before the header is known; SD_EINVAL.
 */
SD_API int sd_decoder_icc_profile(const sd_decoder *dec, const uint8_t **data, size_t *length);

/*
 * Name: sd_decoder_push
 * Desc: Feed the next `length` bytes of the encoded image. All bytes are
 *       consumed (what the codec cannot use yet is buffered). Bytes after
 *       the end of the image are ignored. `data` is not retained.
 * Returns: SD_OK, or a sticky error: SD_EUNSUPPORTED (not a format
 *          sd_format_capabilities lists as decodable),
 *          SD_ECORRUPT, SD_ETOOLARGE, SD_ENOMEM, SD_EBADSTATE.
 */
SD_API int sd_decoder_push(sd_decoder *dec, const void *data, size_t length);

/*
 * Name: sd_decoder_finish
 * Desc: Declare the end of input and complete the decode.
 * Returns: SD_OK (see SD_DEC_INFO_COMPLETE), SD_ETRUNCATED (header never
 *          completed), or a sticky error.
 */
SD_API int sd_decoder_finish(sd_decoder *dec);

/*
 * Name: sd_decoder_take_bitmap
 * Desc: After a successful finish, hand over the final bitmap (upright unless
 *       SD_DEC_APPLY_ORIENTATION is 0, at SD_DEC_INFO_OUTPUT_* size).
 * Returns: SD_OK; SD_EOI if it was already taken; SD_EBADSTATE before finish.
 */
SD_API int sd_decoder_take_bitmap(sd_decoder *dec, sd_bitmap **out);

/*
 * Name: sd_decoder_snapshot
 * Desc: A new bitmap (owned by the caller, output size and orientation) of
 *       the image as decoded so far. Progressive JPEG with SD_DEC_PREVIEWS:
 *       the latest preview rendered at a scan boundary (never a half scan);
 *       without it, the coefficients as they stand. Baseline JPEG and
 *       non-interlaced PNG: the rows decoded so far, the rest transparent.
 *       Adam7 PNG: the latest completed pass, pixels replicated to fill.
 *       Costs one copy of the output (no re-decoding).
 * Returns: SD_OK, SD_EAGAIN (nothing to show yet), or an error.
 */
SD_API int sd_decoder_snapshot(sd_decoder *dec, sd_bitmap **out);

/* Per-frame facts (sd_decoder_frame_get). */
typedef enum sd_frame_param {
    /* Milliseconds the frame is shown: the stored duration, except that
     * one of SD_FRAME_FAST_MS or less is shown SD_FRAME_MIN_SHOWN_MS; 0 for
     * a still image (it has no timing). */
    SD_FRAME_DURATION_MS = 1,
    /* The duration as the file stores it, in ms (GIF: 10 x delay; APNG:
     * 1000 x num / den with den 0 read as 100; WebP: as stored). */
    SD_FRAME_STORED_DURATION_MS = 2,
    /* 1 if the frame does not depend on the frames before it (rendering it
     * costs one frame decode). */
    SD_FRAME_IS_KEY = 3
} sd_frame_param;

/*
 * Name: sd_decoder_frame_get
 * Desc: A fact about frame `index` (0-based).
 * Returns: SD_OK; SD_EAGAIN if that frame is not complete yet (push more);
 *          SD_EOI if there is no such frame (index >= the final
 *          SD_DEC_INFO_FRAME_COUNT); SD_EINVAL for an unknown parameter.
 */
SD_API int sd_decoder_frame_get(const sd_decoder *dec, uint32_t index,
                                sd_frame_param param, int64_t *value);

/*
 * Name: sd_decoder_frame
 * Desc: A new bitmap (owned by the caller; free with sd_bitmap_free) of
 *       frame `index` fully composited on the canvas, at the output size
 *       (SD_DEC_INFO_OUTPUT_*) and orientation. An animation's complete
 *       frames can be asked for while bytes still arrive and after
 *       sd_decoder_take_bitmap(); a still image's one frame after finish
 *       and until sd_decoder_take_bitmap() hands it over.
 * Returns: SD_OK; SD_EAGAIN (not complete yet); SD_EOI (no such frame);
 *          SD_EBADSTATE (the still image was taken, or an earlier failure);
 *          SD_ENOMEM.
 */
SD_API int sd_decoder_frame(sd_decoder *dec, uint32_t index, sd_bitmap **out);

/*
 * Name: sd_decoder_frame_view
 * Desc: Frame `index` as sd_decoder_frame() makes it, but lent, not given
 *       (as WebPAnimDecoderGetNext lends its canvas): *out belongs to the
 *       decoder, must not be changed or freed, and stays valid until the
 *       next call on `dec` (any call may draw on it). Usually it is the
 *       decoder's own picture, so no copy is made: stepping through an
 *       animation holds the working canvas and the kept frames, not a frame
 *       more. Resampling or orienting makes a bitmap the decoder keeps until
 *       the next view. Copy the frame (or use sd_decoder_frame) to keep it.
 * Returns: as sd_decoder_frame.
 * Since 0.8.
 */
SD_API int sd_decoder_frame_view(sd_decoder *dec, uint32_t index, const sd_bitmap **out);

/*
 * Name: sd_decoder_message
 * Desc: Detail of the last failure or warning, e.g. libjpeg's or libpng's
 *       own message. Valid until the next call on `dec`.
 * Returns: the decoder's string, "" when there is none; never NULL.
 */
SD_API const char *sd_decoder_message(const sd_decoder *dec);

/*
 * Name: sd_decoder_decode
 * Desc: One-shot: push the whole buffer, finish, take the bitmap, using the
 *       options already set on `dec` (a fresh decoder). *out is the
 *       caller's (sd_bitmap_free).
 * Returns: SD_OK and *out; otherwise what push, finish or take returned
 *          (*out NULL); sd_decoder_message says more.
 */
SD_API int sd_decoder_decode(sd_decoder *dec, const void *data, size_t length,
                             sd_bitmap **out);

/*
 * Name: sd_decode
 * Desc: One-shot with default options (upright, full size); *out is the
 *       caller's (sd_bitmap_free).
 * Returns: as sd_decoder_decode, and SD_ENOMEM.
 */
SD_API int sd_decode(const void *data, size_t length, sd_bitmap **out);

/*
 * Name: sd_set_decode_memory_budget / sd_decode_memory
 * Desc: One memory budget for every decoder of the process (since 0.3).
 *       A decoder charges the working memory it is about to allocate —
 *       its canvases, a progressive JPEG's coefficient buffers (which a
 *       thumbnail needs whole), an AVIF's planes — when the header is
 *       known, and gives it back in sd_decoder_free. A decode whose charge
 *       does not fit fails at once with SD_ENOMEM and a message naming the
 *       budget, before it allocates; decodes in flight go on. Kept frames
 *       of animations (SD_DEC_FRAME_CACHE_BYTES) are charged as they are
 *       kept and simply not kept when the budget is spent. The bitmaps
 *       handed out are the caller's and not charged. `bytes` 0 restores the
 *       default: half of the machine's memory or of the cgroup's limit,
 *       whichever is less, at least 256 MiB; under an address-space limit
 *       (RLIMIT_AS, RLIMIT_DATA: ulimit -v, -d) at most half of the room
 *       left when the first decode starts (since 0.10). A charge larger
 *       than the whole budget fails with "too large for the memory limit".
 *       The per-decoder limits
 *       (SD_DEC_MAX_PIXELS, SD_DEC_MAX_MEMORY) still apply to each decode.
 * Returns: SD_OK; SD_EINVAL (negative).
 */
SD_API int sd_set_decode_memory_budget(int64_t bytes);
/* The budget in force and the bytes charged by live decoders now (either
 * pointer may be NULL). */
SD_API void sd_decode_memory(int64_t *budget, int64_t *in_use);

/*
 * Name: sd_sniff_format
 * Desc: The format named by the magic bytes at the start of `data` (the
 *       first 4 KiB at most: room for an SVG's XML prolog before `<svg`).
 * Returns: the format; SD_FORMAT_UNKNOWN when too short or unrecognised.
 */
SD_API sd_format sd_sniff_format(const void *data, size_t length);

#ifdef __cplusplus
}
#endif
#endif /* SDCORE_SD_DECODER_H */
