/* Profile parsing: the input is an ICC profile, embedded in a small JPEG
 * (APP2), a CMYK JPEG (Adobe, APP2: the CMYK transform's path), a PNG
 * (iCCP) and a WebP (VP8X + ICCP) made once here, each decoded with colour
 * management on, whole and as a thumbnail. A hostile profile must give a
 * warning and sRGB pixels, never a crash, leak or failure. */
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>
#include <jpeglib.h>

#include "fuzz_common.h"
#include "../C/sd_test_encode.h"

static uint8_t *jpg, *png, *webp, *cmyk;
static size_t jn, pn, wn, cn_;

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

static void le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

static void make_images(void)
{
    sd_bitmap *b;
    if (sd_bitmap_new(24, 16, &b) != SD_OK)
        abort();
    for (uint32_t y = 0; y < 16; y++)
        for (uint32_t x = 0; x < 24; x++) {
            uint8_t rgba[4] = {(uint8_t)(x * 10), (uint8_t)(y * 15), (uint8_t)(x * y), (uint8_t)(128 + x * 5)};
            sd_premultiply_rgba(rgba, sd_bitmap_pixels(b) + y * sd_bitmap_stride(b) + x * 4, 1);
        }
    if (enc_jpeg(b, 90, 0, &jpg, &jn) || enc_png(b, 6, &png, &pn) || enc_webp(b, 100, 1, &webp, &wn))
        abort();
    sd_bitmap_free(b);
    /* a 24x16 CMYK JPEG (libjpeg writes Adobe's APP14 for it) */
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr err;
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    unsigned long n = 0;
    jpeg_mem_dest(&c, &cmyk, &n);
    c.image_width = 24, c.image_height = 16, c.input_components = 4, c.in_color_space = JCS_CMYK;
    jpeg_set_defaults(&c);
    jpeg_start_compress(&c, TRUE);
    uint8_t row[24 * 4];
    while (c.next_scanline < 16) {
        for (int i = 0; i < 24 * 4; i++)
            row[i] = (uint8_t)(i * 11 + c.next_scanline * 7);
        JSAMPROW r = row;
        jpeg_write_scanlines(&c, &r, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    cn_ = n;
}

/* `base` (a JPEG) with the profile as one APP2 segment after SOI. */
static uint8_t *with_app2(const uint8_t *base, size_t bn, const uint8_t *icc, size_t len, size_t *out)
{
    uint8_t *o = malloc(bn + len + 18), *w = o;
    memcpy(w, base, 2), w += 2;
    *w++ = 0xFF, *w++ = 0xE2, *w++ = (uint8_t)((len + 16) >> 8), *w++ = (uint8_t)(len + 16);
    memcpy(w, "ICC_PROFILE", 12), w += 12;
    *w++ = 1, *w++ = 1;
    memcpy(w, icc, len), w += len;
    memcpy(w, base + 2, bn - 2), w += bn - 2;
    *out = (size_t)(w - o);
    return o;
}

static void decode(const uint8_t *d, size_t n, int thumb)
{
    sd_decoder *dec;
    sd_bitmap *out = NULL;
    if (sd_decoder_new(&dec) != SD_OK)
        return;
    fuzz_limits(dec);
    if (thumb)
        sd_decoder_set(dec, SD_DEC_MAX_PIXEL_SIZE, 7);
    if (sd_decoder_decode(dec, d, n, &out) != SD_OK)
        __builtin_trap(); /* a profile must never make a good image fail */
    fuzz_touch(out);
    sd_bitmap_free(out);
    sd_decoder_free(dec);
}

int LLVMFuzzerTestOneInput(const uint8_t *icc, size_t len)
{
    if (jpg == NULL)
        make_images();
    if (len > 60000)
        return 0;
    /* JPEG and CMYK JPEG: one APP2 segment after SOI */
    size_t on;
    uint8_t *o = with_app2(jpg, jn, icc, len, &on);
    decode(o, on, 0);
    decode(o, on, 1);
    free(o);
    o = with_app2(cmyk, cn_, icc, len, &on);
    decode(o, on, 0);
    decode(o, on, 1);
    free(o);
    /* PNG: iCCP after IHDR */
    uLongf z = compressBound((uLong)len);
    uint8_t *chunk = malloc(12 + 5 + z);
    memcpy(chunk + 4, "iCCPicc\0\0", 9);
    compress2(chunk + 13, &z, icc, (uLong)len, 6);
    put32(chunk, (uint32_t)(5 + z));
    put32(chunk + 13 + z, (uint32_t)crc32(0, chunk + 4, (uInt)(9 + z)));
    size_t cn = 12 + 5 + z;
    o = malloc(pn + cn);
    memcpy(o, png, 33);
    memcpy(o + 33, chunk, cn);
    memcpy(o + 33 + cn, png + 33, pn - 33);
    decode(o, pn + cn, 0);
    decode(o, pn + cn, 1);
    free(o);
    free(chunk);
    /* WebP: VP8X (ICC, alpha) + ICCP + the lossless image */
    size_t pad = len & 1, total = 12 + 18 + 8 + len + pad + (wn - 12);
    o = calloc(1, total);
    memcpy(o, "RIFF", 4), le32(o + 4, (uint32_t)(total - 8)), memcpy(o + 8, "WEBPVP8X", 8), le32(o + 16, 10);
    o[20] = 0x30, o[24] = 23, o[27] = 15;
    memcpy(o + 30, "ICCP", 4), le32(o + 34, (uint32_t)len), memcpy(o + 38, icc, len);
    memcpy(o + 38 + len + pad, webp + 12, wn - 12);
    decode(o, total, 0);
    free(o);
    return 0;
}
