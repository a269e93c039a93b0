/*
 * sd_encoder.h — encode sd_bitmaps to any format this build writes (PNG
 * and APNG, JPEG, WebP, AVIF, GIF): one handle with parameters, as
 * TurboJPEG 3's tj3Set. The output is allocated by the core and owned by
 * the caller (release it with sd_free()). The positional sd_encode_*
 * functions of 0.9 are in sd_compat.h.
 */
#ifndef SDCORE_SD_ENCODER_H
#define SDCORE_SD_ENCODER_H

#include "sd_bitmap.h"
#include "sd_decoder.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sd_encoder sd_encoder;

/* What sd_encoder_set sets; each has a range and a default, and a format
 * ignores the parameters it does not use (so one set of calls serves every
 * format). */
typedef enum sd_encoder_param {
    SD_ENC_QUALITY = 1,           /* 0..100, default 90: JPEG (0 reads as 1), WebP,
                                   * AVIF (quantizer 63..0; 100 is lossless) */
    SD_ENC_LOSSLESS = 2,          /* 0/1, default 0: WebP lossless; AVIF at quality 100 */
    SD_ENC_PROGRESSIVE = 3,       /* 0/1, default 0: a progressive JPEG; JPEG XL in passes */
    SD_ENC_COMPRESSION_LEVEL = 4, /* -1..9, default -1 (libpng's, 6): PNG/APNG's zlib level */
    SD_ENC_SPEED = 5,             /* -1..10, default -1 (libavif's): AVIF slowest..fastest */
    SD_ENC_LOOP_COUNT = 6,        /* 0..65535, default 0 = forever: GIF, APNG, WebP
                                   * (an AVIF sequence always plays forever) */
    SD_ENC_OPTIMIZE_CODING = 7    /* 0/1, default 0: JPEG with Huffman tables made for
                                   * the image (TurboJPEG's TJPARAM_OPTIMIZE, libvips'
                                   * optimize_coding): the same pixels in a smaller
                                   * file, for a second pass over the coefficients.
                                   * Since 0.10. */
} sd_encoder_param;

/*
 * Name: sd_encoder_new
 * Desc: An encoder writing `format` (whose sd_format_capabilities has
 *       SD_CAP_ENCODE): set parameters, add one frame (or several where
 *       the format has SD_CAP_ENCODE_ANIMATION), then sd_encoder_finish.
 *       One encoder is used by one thread at a time; encoders are
 *       independent. What each format writes: JPEG 4:2:0 YCbCr, alpha
 *       dropped (premultiplied colours, i.e. over black); PNG 8-bit RGBA
 *       (RGB when opaque), an APNG for several frames (frame 0 the default
 *       image, later frames as the rectangle that changed); GIF one
 *       255-colour palette per frame (median cut, no dithering), alpha
 *       below 128 transparent, delays in hundredths; WebP still or animated
 *       (libwebp), alpha kept; AVIF 8-bit (4:4:4 identity when lossless,
 *       else 4:2:0), one thread, alpha kept. Since 0.10 (SDCORE_0.10).
 * Returns: SD_OK and *out; SD_EUNSUPPORTED (this build does not encode the
 *          format), SD_EINVAL (an unknown format or out NULL), SD_ENOMEM.
 */
SD_API int sd_encoder_new(sd_format format, sd_encoder **out);

/*
 * Name: sd_encoder_set
 * Desc: Sets one parameter (see sd_encoder_param for ranges and defaults).
 * Returns: SD_OK; SD_EINVAL for an unknown parameter or a value out of range
 *          (the old value stays).
 */
SD_API int sd_encoder_set(sd_encoder *encoder, sd_encoder_param param, int value);

/*
 * Name: sd_encoder_get
 * Desc: A parameter's current value in *value (its default until set).
 * Returns: SD_OK; SD_EINVAL for an unknown parameter or a NULL argument.
 */
SD_API int sd_encoder_get(const sd_encoder *encoder, sd_encoder_param param, int *value);

/*
 * Name: sd_encoder_set_icc_profile
 * Desc: Embeds an ICC profile in what sd_encoder_finish writes (the
 *       encoder keeps a copy; NULL, 0 removes it): JPEG APP2 ICC_PROFILE
 *       segments, PNG/APNG iCCP, WebP ICCP (an extended file), AVIF colr.
 *       GIF has no standard place for one and writes none. Use it for
 *       pixels kept in their source colours (SD_DEC_COLOR_MANAGE 0 with
 *       sd_decoder_icc_profile); pixels the decoder converted are sRGB and
 *       encode untagged. Since 0.10 (SDCORE_0.10).
 * Returns: SD_OK; SD_EINVAL (encoder NULL, data NULL with a length, over
 *          4 MiB, or a header that is not an ICC profile's: its size
 *          field must be `length` and bytes 36..39 "acsp"), SD_ENOMEM.
 */
SD_API int sd_encoder_set_icc_profile(sd_encoder *encoder, const uint8_t *data, size_t length);

/*
 * Name: sd_encoder_add_frame
 * Desc: Appends a frame shown for `delay_ms` (ignored for a still). The
 *       encoder keeps a reference: `frame` must stay valid and unchanged
 *       until sd_encoder_finish or sd_encoder_free.
 * Returns: SD_OK; SD_EINVAL (NULL, an empty bitmap, a negative delay, or a
 *          size other than the first frame's), SD_EUNSUPPORTED (a second
 *          frame for a format without SD_CAP_ENCODE_ANIMATION), SD_ENOMEM.
 */
SD_API int sd_encoder_add_frame(sd_encoder *encoder, const sd_bitmap *frame, int delay_ms);

/*
 * Name: sd_encoder_finish
 * Desc: Encodes the frames added so far into a new buffer (*out, freed
 *       with sd_free). The encoder may be finished again (frames and
 *       parameters kept, e.g. to try another quality) or freed.
 * Returns: SD_OK; SD_EINVAL (no frames), SD_ETOOLARGE (over the format's
 *          size limit: WebP 16383, GIF 65535 a side), SD_ENOMEM,
 *          SD_EUNSUPPORTED (libavif was built without an AV1 encoder),
 *          SD_ECORRUPT (the codec library failed).
 */
SD_API int sd_encoder_finish(sd_encoder *encoder, uint8_t **out, size_t *out_length);

/*
 * Name: sd_encoder_free
 * Desc: Releases the encoder (not the frames, which stay the caller's).
 *       NULL is a no-op.
 */
SD_API void sd_encoder_free(sd_encoder *encoder);

#ifdef __cplusplus
}
#endif
#endif /* SDCORE_SD_ENCODER_H */
