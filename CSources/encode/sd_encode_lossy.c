/* sd_encode_lossy.c — sd_bitmap to WebP (libwebp) or AVIF (libavif) in
 * memory. Both take straight RGBA, so the bitmap is unpremultiplied once. */
#include <stdlib.h>
#include <string.h>

#include <avif/avif.h>
#include <webp/encode.h>

#include "bitmap/sd_bitmap_int.h"
#include "sdcore.h"

/* The whole bitmap as straight R,G,B,A rows without padding. */
static uint8_t *straight_rgba(const sd_bitmap *b)
{
    uint8_t *rgba = malloc((size_t)b->width * b->height * 4);
    if (rgba == NULL)
        return NULL;
    for (uint32_t y = 0; y < b->height; y++)
        sd_unpremultiply_argb(b->pixels + (size_t)y * b->stride, rgba + (size_t)y * b->width * 4, b->width);
    return rgba;
}

/* Library-owned output copied into malloc'd memory (released with sd_free). */
static int hand_over(const uint8_t *data, size_t len, uint8_t **out, size_t *out_len)
{
    uint8_t *copy = malloc(len ? len : 1);
    SD__RETURN_IF(copy == NULL, SD_ENOMEM);
    memcpy(copy, data, len);
    *out = copy;
    *out_len = len;
    return SD_OK;
}

int sd_encode_webp(const sd_bitmap *b, int quality, int lossless, uint8_t **out, size_t *out_len)
{
    SD__RETURN_IF(b == NULL || out == NULL || out_len == NULL, SD_EINVAL);
    SD__RETURN_IF(quality < 0 || quality > 100, SD_EINVAL);
    SD__RETURN_IF(b->width > WEBP_MAX_DIMENSION || b->height > WEBP_MAX_DIMENSION, SD_ETOOLARGE);
    *out = NULL;
    *out_len = 0;
    uint8_t *rgba = straight_rgba(b);
    SD__RETURN_IF(rgba == NULL, SD_ENOMEM);
    uint8_t *webp = NULL;
    const int stride = (int)b->width * 4;
    size_t len = lossless ? WebPEncodeLosslessRGBA(rgba, (int)b->width, (int)b->height, stride, &webp)
                          : WebPEncodeRGBA(rgba, (int)b->width, (int)b->height, stride, (float)quality, &webp);
    free(rgba);
    if (len == 0 || webp == NULL) {
        WebPFree(webp);
        return SD_ECORRUPT;
    }
    int rc = hand_over(webp, len, out, out_len);
    WebPFree(webp);
    return rc;
}

int sd_encode_avif(const sd_bitmap *b, int quality, int speed, uint8_t **out, size_t *out_len)
{
    SD__RETURN_IF(b == NULL || out == NULL || out_len == NULL, SD_EINVAL);
    SD__RETURN_IF(quality < 0 || quality > 100 || speed < -1 || speed > 10, SD_EINVAL);
    *out = NULL;
    *out_len = 0;
    const int lossless = quality == 100;
    /* quality 0..100 -> quantizer 63..0 (libavif 1.x's own mapping) */
    const int q = ((100 - quality) * 63 + 50) / 100;
    avifImage *img = avifImageCreate(b->width, b->height, 8, lossless ? AVIF_PIXEL_FORMAT_YUV444 : AVIF_PIXEL_FORMAT_YUV420);
    SD__RETURN_IF(img == NULL, SD_ENOMEM);
    if (lossless)
        img->matrixCoefficients = AVIF_MATRIX_COEFFICIENTS_IDENTITY;
    img->yuvRange = AVIF_RANGE_FULL;
    uint8_t *rgba = straight_rgba(b);
    if (rgba == NULL) {
        avifImageDestroy(img);
        return SD_ENOMEM;
    }
    avifRGBImage rgb;
    avifRGBImageSetDefaults(&rgb, img);
    rgb.format = AVIF_RGB_FORMAT_RGBA;
    rgb.depth = 8;
    rgb.pixels = rgba;
    rgb.rowBytes = b->width * 4;
    int rc = SD_OK;
    if (avifImageRGBToYUV(img, &rgb) != AVIF_RESULT_OK)
        rc = SD_ECORRUPT;
    if (rc == SD_OK && !sd_bitmap_has_alpha(b)) {
        avifImageFreePlanes(img, AVIF_PLANES_A); /* opaque: no alpha item */
    }
    avifEncoder *enc = rc == SD_OK ? avifEncoderCreate() : NULL;
    if (rc == SD_OK && enc == NULL)
        rc = SD_ENOMEM;
    avifRWData data = AVIF_DATA_EMPTY;
    if (rc == SD_OK) {
        enc->speed = speed < 0 ? AVIF_SPEED_DEFAULT : speed;
        enc->minQuantizer = enc->maxQuantizer = q;
        enc->minQuantizerAlpha = enc->maxQuantizerAlpha = q;
        enc->maxThreads = 1;
        avifResult r = avifEncoderWrite(enc, img, &data);
        rc = r == AVIF_RESULT_OK ? hand_over(data.data, data.size, out, out_len)
             : r == AVIF_RESULT_OUT_OF_MEMORY ? SD_ENOMEM
             : r == AVIF_RESULT_NO_CODEC_AVAILABLE ? SD_EUNSUPPORTED : SD_ECORRUPT;
    }
    avifRWDataFree(&data);
    if (enc)
        avifEncoderDestroy(enc);
    avifImageDestroy(img);
    free(rgba);
    return rc;
}
