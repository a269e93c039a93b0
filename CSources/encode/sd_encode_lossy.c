/* sd_encode_lossy.c — sd_bitmap to WebP (libwebp, still or animated) or
 * AVIF (libavif) in memory. Both take straight alpha: an opaque bitmap is
 * handed over as it is (on little-endian hosts its bytes are already
 * B,G,R,A), one with alpha is unpremultiplied once (WebP: into the
 * picture's own ARGB plane; AVIF: into R,G,B,A rows), so the encode costs
 * what the library costs. */
#include <stdlib.h>
#include <string.h>

#include <avif/avif.h>
#include <webp/encode.h>
#include <webp/mux.h>

#include "bitmap/sd_bitmap_int.h"
#include "encode/sd_encode_int.h"
#include "sdcore.h"

/* The whole bitmap as straight R,G,B,A rows without padding. */
static uint8_t *straight_rgba(const sd_bitmap *b)
{
    uint8_t *rgba = sd__malloc((size_t)b->width * b->height * 4);
    if (rgba == NULL)
        return NULL;
    for (uint32_t y = 0; y < b->height; y++)
        sd_unpremultiply_argb(b->pixels + (size_t)y * b->stride, rgba + (size_t)y * b->width * 4, b->width);
    return rgba;
}

/* Pixels the libraries can read: the bitmap itself when opaque (the
 * caller's sd_bitmap_has_alpha answer, so it is scanned once) and laid out
 * B,G,R,A in memory (*bgra = 1, nothing to free), else straight RGBA. */
typedef struct {
    const uint8_t *pixels;
    uint8_t *owned;
    size_t stride;
    int bgra;
} sd__straight;

static int straight_pixels(const sd_bitmap *b, int opaque, sd__straight *s)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (opaque) {
        *s = (sd__straight){b->pixels, NULL, b->stride, 1};
        return SD_OK;
    }
#else
    (void)opaque;
#endif
    uint8_t *rgba = straight_rgba(b);
    SD__RETURN_IF(rgba == NULL, SD_ENOMEM);
    *s = (sd__straight){rgba, rgba, (size_t)b->width * 4, 0};
    return SD_OK;
}

/* Library-owned output copied into malloc'd memory (released with sd_free). */
static int hand_over(const uint8_t *data, size_t len, uint8_t **out, size_t *out_len)
{
    uint8_t *copy = sd__malloc(len ? len : 1);
    SD__RETURN_IF(copy == NULL, SD_ENOMEM);
    memcpy(copy, data, len);
    *out = copy;
    *out_len = len;
    return SD_OK;
}

/* Into a memory writer, with the settings of libwebp's one-call API
 * (WebPEncodeRGBA / WebPEncodeLosslessRGBA: quality, or lossless at 70). */
static int webp_encode_picture(WebPPicture *pic, int quality, int lossless, uint8_t **out, size_t *out_len)
{
    WebPConfig config;
    SD__RETURN_IF(!WebPConfigInit(&config), SD_ECORRUPT);
    config.lossless = lossless != 0;
    config.quality = lossless ? 70.0f : (float)quality;
    WebPMemoryWriter wr;
    WebPMemoryWriterInit(&wr);
    pic->writer = WebPMemoryWrite;
    pic->custom_ptr = &wr;
    int rc = WebPEncode(&config, pic) ? SD_OK
             : pic->error_code == VP8_ENC_ERROR_OUT_OF_MEMORY ? SD_ENOMEM : SD_ECORRUPT;
    if (rc == SD_OK)
        rc = hand_over(wr.mem, wr.size, out, out_len);
    WebPMemoryWriterClear(&wr);
    return rc;
}

/* The bitmap into a WebPPicture (use_argb as the encoder wants it): an
 * opaque one is read in place (its bytes are B,G,R,A already); one with
 * alpha is unpremultiplied straight into the picture's ARGB plane (no
 * buffer of our own; lossy converts it to YUV as an import would). */
static int import_picture(const sd_bitmap *b, int use_argb, WebPPicture *pic)
{
    pic->width = (int)b->width;
    pic->height = (int)b->height;
    int ok;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (!sd_bitmap_has_alpha(b)) {
        pic->use_argb = use_argb;
        ok = WebPPictureImportBGRA(pic, b->pixels, (int)b->stride);
    } else
#endif
    {
        pic->use_argb = 1;
        ok = WebPPictureAlloc(pic);
        for (uint32_t y = 0; ok && y < b->height; y++)
            sd__unpremultiply_to_argb32(b->pixels + (size_t)y * b->stride, pic->argb + (size_t)y * pic->argb_stride,
                                        b->width);
    }
    return ok ? SD_OK : SD_ENOMEM;
}

int sd_encode_webp(const sd_bitmap *b, int quality, int lossless, uint8_t **out, size_t *out_len)
{
    SD__RETURN_IF(b == NULL || out == NULL || out_len == NULL, SD_EINVAL);
    SD__RETURN_IF(quality < 0 || quality > 100, SD_EINVAL);
    SD__RETURN_IF(b->width > WEBP_MAX_DIMENSION || b->height > WEBP_MAX_DIMENSION, SD_ETOOLARGE);
    *out = NULL;
    *out_len = 0;
    WebPPicture pic;
    SD__RETURN_IF(!WebPPictureInit(&pic), SD_ECORRUPT);
    int rc = import_picture(b, lossless != 0, &pic);
    if (rc == SD_OK)
        rc = webp_encode_picture(&pic, quality, lossless, out, out_len);
    WebPPictureFree(&pic);
    return rc;
}

int sd_encode_webp_anim(const sd_bitmap *const *frames, const int *delays_ms, size_t count, int loop_count,
                        int quality, int lossless, uint8_t **out, size_t *out_len)
{
    SD__RETURN_IF(frames == NULL || count == 0 || out == NULL || out_len == NULL, SD_EINVAL);
    SD__RETURN_IF(quality < 0 || quality > 100 || loop_count < 0 || loop_count > 65535, SD_EINVAL);
    *out = NULL;
    *out_len = 0;
    const uint32_t w = frames[0] ? frames[0]->width : 0, h = frames[0] ? frames[0]->height : 0;
    for (size_t i = 0; i < count; i++) {
        SD__RETURN_IF(frames[i] == NULL || frames[i]->width != w || frames[i]->height != h, SD_EINVAL);
        SD__RETURN_IF(delays_ms && delays_ms[i] < 0, SD_EINVAL);
    }
    SD__RETURN_IF(w > WEBP_MAX_DIMENSION || h > WEBP_MAX_DIMENSION, SD_ETOOLARGE);
    WebPAnimEncoderOptions opts;
    WebPConfig config;
    SD__RETURN_IF(!WebPAnimEncoderOptionsInit(&opts) || !WebPConfigInit(&config), SD_ECORRUPT);
    opts.anim_params.loop_count = loop_count;
    opts.anim_params.bgcolor = 0; /* transparent; decoders ignore it anyway */
    config.lossless = lossless != 0;
    config.quality = lossless ? 70.0f : (float)quality;
    WebPAnimEncoder *enc = WebPAnimEncoderNew((int)w, (int)h, &opts);
    SD__RETURN_IF(enc == NULL, SD_ENOMEM);
    int rc = SD_OK;
    int timestamp = 0;
    for (size_t i = 0; i < count && rc == SD_OK; i++) {
        WebPPicture pic;
        if (!WebPPictureInit(&pic)) {
            rc = SD_ECORRUPT;
            break;
        }
        rc = import_picture(frames[i], 1, &pic); /* WebPAnimEncoder wants ARGB */
        if (rc == SD_OK && !WebPAnimEncoderAdd(enc, &pic, timestamp, &config))
            rc = pic.error_code == VP8_ENC_ERROR_OUT_OF_MEMORY ? SD_ENOMEM : SD_ECORRUPT;
        WebPPictureFree(&pic);
        const int delay = delays_ms ? delays_ms[i] : 0;
        if (rc == SD_OK && delay > INT32_MAX - timestamp)
            rc = SD_EINVAL; /* the timeline would overflow */
        else
            timestamp += delay;
    }
    WebPData data;
    WebPDataInit(&data);
    if (rc == SD_OK && (!WebPAnimEncoderAdd(enc, NULL, timestamp, NULL) || !WebPAnimEncoderAssemble(enc, &data)))
        rc = SD_ECORRUPT;
    if (rc == SD_OK)
        rc = hand_over(data.bytes, data.size, out, out_len);
    WebPDataClear(&data);
    WebPAnimEncoderDelete(enc);
    return rc;
}

/* libavif's result as a status. */
static int avif_status(avifResult r)
{
    return r == AVIF_RESULT_OK ? SD_OK
           : r == AVIF_RESULT_OUT_OF_MEMORY ? SD_ENOMEM
           : r == AVIF_RESULT_NO_CODEC_AVAILABLE ? SD_EUNSUPPORTED : SD_ECORRUPT;
}

/* One bitmap (`opaque`: it has no alpha) as an 8-bit avifImage (lossless:
 * 4:4:4, identity matrix; else 4:2:0), with an alpha plane unless `drop_alpha`. */
static int avif_image(const sd_bitmap *b, int opaque, int lossless, int drop_alpha, const sd__icc *icc,
                      avifImage **out)
{
    avifImage *img = avifImageCreate(b->width, b->height, 8, lossless ? AVIF_PIXEL_FORMAT_YUV444 : AVIF_PIXEL_FORMAT_YUV420);
    SD__RETURN_IF(img == NULL, SD_ENOMEM);
    if (icc != NULL && icc->len > 0) /* colr 'prof' */
        avifImageSetProfileICC(img, icc->data, icc->len);
    if (lossless)
        img->matrixCoefficients = AVIF_MATRIX_COEFFICIENTS_IDENTITY;
    img->yuvRange = AVIF_RANGE_FULL;
    sd__straight px;
    int rc = straight_pixels(b, opaque, &px);
    if (rc == SD_OK) {
        avifRGBImage rgb;
        avifRGBImageSetDefaults(&rgb, img);
        rgb.format = px.bgra ? AVIF_RGB_FORMAT_BGRA : AVIF_RGB_FORMAT_RGBA;
        rgb.depth = 8;
        rgb.pixels = (uint8_t *)px.pixels; /* read only: avifImageRGBToYUV does not write it */
        rgb.rowBytes = (uint32_t)px.stride;
        rc = avif_status(avifImageRGBToYUV(img, &rgb));
        sd__free(px.owned);
    }
    if (rc == SD_OK && drop_alpha)
        avifImageFreePlanes(img, AVIF_PLANES_A); /* opaque: no alpha item */
    if (rc != SD_OK) {
        avifImageDestroy(img);
        return rc;
    }
    *out = img;
    return SD_OK;
}

/* An encoder at `quality` (0..100 -> quantizer 63..0, libavif 1.x's own
 * mapping) and `speed`, on one thread. */
static avifEncoder *avif_encoder(int quality, int speed)
{
    avifEncoder *enc = avifEncoderCreate();
    if (enc == NULL)
        return NULL;
    const int q = ((100 - quality) * 63 + 50) / 100;
    enc->speed = speed < 0 ? AVIF_SPEED_DEFAULT : speed;
    enc->minQuantizer = enc->maxQuantizer = q;
    enc->minQuantizerAlpha = enc->maxQuantizerAlpha = q;
    enc->maxThreads = 1;
    return enc;
}

/* One frame: a still image. */
static int avif_still(const sd_bitmap *b, int quality, int speed, const sd__icc *icc, uint8_t **out,
                      size_t *out_len)
{
    SD__RETURN_IF(b == NULL || out == NULL || out_len == NULL, SD_EINVAL);
    SD__RETURN_IF(quality < 0 || quality > 100 || speed < -1 || speed > 10, SD_EINVAL);
    *out = NULL;
    *out_len = 0;
    avifImage *img = NULL;
    const int opaque = !sd_bitmap_has_alpha(b);
    int rc = avif_image(b, opaque, quality == 100, opaque, icc, &img);
    SD__RETURN_IF(rc != SD_OK, rc);
    avifEncoder *enc = avif_encoder(quality, speed);
    avifRWData data = AVIF_DATA_EMPTY;
    rc = enc == NULL ? SD_ENOMEM : avif_status(avifEncoderWrite(enc, img, &data));
    if (rc == SD_OK)
        rc = hand_over(data.data, data.size, out, out_len);
    avifRWDataFree(&data);
    if (enc)
        avifEncoderDestroy(enc);
    avifImageDestroy(img);
    return rc;
}

/* A sequence (one track; every frame has an alpha plane or none does). */
static int avif_anim(const sd_bitmap *const *frames, const int *delays_ms, size_t count, int quality, int speed,
                     const sd__icc *icc, uint8_t **out, size_t *out_len)
{
    SD__RETURN_IF(frames == NULL || count == 0 || out == NULL || out_len == NULL, SD_EINVAL);
    SD__RETURN_IF(quality < 0 || quality > 100 || speed < -1 || speed > 10, SD_EINVAL);
    *out = NULL;
    *out_len = 0;
    const uint32_t w = frames[0] ? frames[0]->width : 0, h = frames[0] ? frames[0]->height : 0;
    size_t first_alpha = count; /* frames before it are opaque; count: all are */
    for (size_t i = 0; i < count; i++) {
        SD__RETURN_IF(frames[i] == NULL || frames[i]->width != w || frames[i]->height != h, SD_EINVAL);
        SD__RETURN_IF(delays_ms && delays_ms[i] < 0, SD_EINVAL);
        if (first_alpha == count && sd_bitmap_has_alpha(frames[i]))
            first_alpha = i;
    }
    const int all_opaque = first_alpha == count;
    avifEncoder *enc = avif_encoder(quality, speed);
    SD__RETURN_IF(enc == NULL, SD_ENOMEM);
    enc->timescale = 1000; /* durations in milliseconds */
    int rc = SD_OK;
    /* every frame has an alpha plane or none does (one alpha track) */
    for (size_t i = 0; i < count && rc == SD_OK; i++) {
        avifImage *img = NULL;
        /* each frame scanned for alpha once: here only those after the first with alpha */
        const int opaque = i < first_alpha || (i > first_alpha && !sd_bitmap_has_alpha(frames[i]));
        rc = avif_image(frames[i], opaque, quality == 100, all_opaque, icc, &img);
        if (rc != SD_OK)
            break;
        /* a duration of 0 is stored as 1 ms: a sample lasts at least one tick */
        const uint64_t ms = delays_ms && delays_ms[i] > 0 ? (uint64_t)delays_ms[i] : 1;
        rc = avif_status(avifEncoderAddImage(enc, img, ms, AVIF_ADD_IMAGE_FLAG_NONE));
        avifImageDestroy(img);
    }
    avifRWData data = AVIF_DATA_EMPTY;
    if (rc == SD_OK)
        rc = avif_status(avifEncoderFinish(enc, &data));
    if (rc == SD_OK)
        rc = hand_over(data.data, data.size, out, out_len);
    avifRWDataFree(&data);
    avifEncoderDestroy(enc);
    return rc;
}

int sd_encode_avif(const sd_bitmap *b, int quality, int speed, uint8_t **out, size_t *out_len)
{
    return avif_still(b, quality, speed, NULL, out, out_len);
}

int sd_encode_avif_anim(const sd_bitmap *const *frames, const int *delays_ms, size_t count, int quality, int speed,
                        uint8_t **out, size_t *out_len)
{
    return avif_anim(frames, delays_ms, count, quality, speed, NULL, out, out_len);
}

int sd__encode_avif(const sd_bitmap *const *frames, const int *delays_ms, size_t count, int quality, int speed,
                    const sd__icc *icc, uint8_t **out, size_t *out_len)
{
    if (count == 1 && frames != NULL)
        return avif_still(frames[0], quality, speed, icc, out, out_len);
    return avif_anim(frames, delays_ms, count, quality, speed, icc, out, out_len);
}

/* A WebP file with an ICCP chunk (libwebpmux writes the VP8X header that
 * announces it). */
int sd__webp_add_icc(const uint8_t *webp, size_t n, const sd__icc *icc, uint8_t **out, size_t *out_len)
{
    WebPData in = {webp, n}, prof = {icc->data, icc->len}, assembled;
    WebPDataInit(&assembled);
    WebPMux *mux = WebPMuxCreate(&in, 0);
    SD__RETURN_IF(mux == NULL, SD_ENOMEM);
    int rc = WebPMuxSetChunk(mux, "ICCP", &prof, 0) == WEBP_MUX_OK && WebPMuxAssemble(mux, &assembled) == WEBP_MUX_OK
                 ? hand_over(assembled.bytes, assembled.size, out, out_len)
                 : SD_ECORRUPT;
    WebPDataClear(&assembled);
    WebPMuxDelete(mux);
    return rc;
}
