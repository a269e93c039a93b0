/* sd_encode.c — sd_bitmap to PNG (libpng) or JPEG (libjpeg) in memory. */
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <jpeglib.h>
#include <png.h>

#include "bitmap/sd_bitmap_int.h"
#include "encode/sd_encode_int.h"
#include "sdcore.h"

/* ---- PNG ---- */

static void png_write_cb(png_structp png, png_bytep p, size_t n)
{
    (void)sd__buf_put(png_get_io_ptr(png), p, n);
}
static void png_flush_cb(png_structp png) { (void)png; }
static void png_err_cb(png_structp png, png_const_charp msg)
{
    (void)msg;
    png_longjmp(png, 1);
}
static void png_warn_cb(png_structp png, png_const_charp msg) { (void)png; (void)msg; }

int sd_encode_png(const sd_bitmap *b, int level, uint8_t **out, size_t *out_len)
{
    SD__RETURN_IF(b == NULL || out == NULL || out_len == NULL || level > 9, SD_EINVAL);
    return sd__encode_png(b, level, sd_bitmap_has_alpha(b), out, out_len);
}

int sd__encode_png(const sd_bitmap *b, int level, int alpha, uint8_t **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    sd__buf m = {0};
    uint8_t *row = sd__malloc(b->width * (size_t)4);
    SD__RETURN_IF(row == NULL, SD_ENOMEM);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, png_err_cb, png_warn_cb);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (png == NULL || info == NULL) {
        png_destroy_write_struct(&png, NULL);
        sd__free(row);
        return SD_ENOMEM;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        sd__free(row);
        sd__free(m.data);
        return SD_ECORRUPT;
    }
    png_set_write_fn(png, &m, png_write_cb, png_flush_cb);
    png_set_IHDR(png, info, b->width, b->height, 8,
                 alpha ? PNG_COLOR_TYPE_RGB_ALPHA : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (level >= 0)
        png_set_compression_level(png, level);
    png_write_info(png, info);
    for (uint32_t y = 0; y < b->height; y++) {
        const uint8_t *src = b->pixels + (size_t)y * b->stride;
        sd_unpremultiply_argb(src, row, b->width); /* -> R,G,B,A bytes */
        if (!alpha)
            for (uint32_t x = 0; x < b->width; x++)
                memmove(row + x * 3, row + x * 4, 3);
        png_write_row(png, row);
    }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    sd__free(row);
    if (m.oom) {
        sd__free(m.data);
        return SD_ENOMEM;
    }
    *out = m.data;
    *out_len = m.len;
    return SD_OK;
}

/* ---- JPEG ---- */

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jb;
} sd__jencerr;

static void jenc_error_exit(j_common_ptr c) { longjmp(((sd__jencerr *)c->err)->jb, 1); }
static void jenc_output(j_common_ptr c) { (void)c; }

typedef struct {
    struct jpeg_destination_mgr pub;
    sd__buf m;
    JOCTET chunk[16384];
} sd__jdest;

static void jdest_init(j_compress_ptr c)
{
    sd__jdest *d = (sd__jdest *)c->dest;
    d->pub.next_output_byte = d->chunk;
    d->pub.free_in_buffer = sizeof d->chunk;
}
static boolean jdest_empty(j_compress_ptr c)
{
    sd__jdest *d = (sd__jdest *)c->dest;
    (void)sd__buf_put(&d->m, d->chunk, sizeof d->chunk);
    d->pub.next_output_byte = d->chunk;
    d->pub.free_in_buffer = sizeof d->chunk;
    return TRUE;
}
static void jdest_term(j_compress_ptr c)
{
    sd__jdest *d = (sd__jdest *)c->dest;
    (void)sd__buf_put(&d->m, d->chunk, sizeof d->chunk - d->pub.free_in_buffer);
}

int sd_encode_jpeg(const sd_bitmap *b, int quality, int progressive, uint8_t **out,
                   size_t *out_len)
{
    return sd__encode_jpeg(b, quality, progressive, 0, out, out_len);
}

int sd__encode_jpeg(const sd_bitmap *b, int quality, int progressive, int optimize, uint8_t **out, size_t *out_len)
{
    SD__RETURN_IF(b == NULL || out == NULL || out_len == NULL, SD_EINVAL);
    SD__RETURN_IF(quality < 1 || quality > 100, SD_EINVAL);
    *out = NULL;
    *out_len = 0;
    struct jpeg_compress_struct c;
    sd__jencerr err;
    sd__jdest *dest = sd__calloc(1, sizeof *dest);
    SD__RETURN_IF(dest == NULL, SD_ENOMEM);
    c.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = jenc_error_exit;
    err.pub.output_message = jenc_output;
    if (setjmp(err.jb)) {
        jpeg_destroy_compress(&c);
        sd__free(dest->m.data);
        sd__free(dest);
        return SD_ECORRUPT;
    }
    jpeg_create_compress(&c);
    dest->pub.init_destination = jdest_init;
    dest->pub.empty_output_buffer = jdest_empty;
    dest->pub.term_destination = jdest_term;
    c.dest = &dest->pub;
    c.image_width = b->width;
    c.image_height = b->height;
    c.input_components = 4;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    c.in_color_space = JCS_EXT_BGRX;
#else
    c.in_color_space = JCS_EXT_XRGB;
#endif
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, quality, TRUE);
    c.optimize_coding = optimize ? TRUE : FALSE; /* a progressive file's are made for it anyway */
    if (progressive)
        jpeg_simple_progression(&c);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW r = b->pixels + (size_t)c.next_scanline * b->stride;
        jpeg_write_scanlines(&c, &r, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    int oom = dest->m.oom;
    *out = dest->m.data;
    *out_len = dest->m.len;
    sd__free(dest);
    if (oom) {
        sd__free(*out);
        *out = NULL;
        *out_len = 0;
        return SD_ENOMEM;
    }
    return SD_OK;
}
