/*
 * bench_formats.c — `sdcore-bench formats`: HEIC and JPEG XL decoding
 * against their libraries called directly, like for like.
 *
 * One photo-like 2048x1536 picture (bench_photo), encoded once per run: a
 * HEIC by libheif itself (x265, quality 80, with a 320 px thumbnail, as
 * phones write them) and a JPEG XL by libjxl (distance 1). Each decoded on
 * one thread from memory, a new decoder and a new output bitmap per
 * decode, on both sides:
 *   - ours: sd_decoder (sd_decoder_decode), premultiplied ARGB32 out;
 *   - HEIC anchor: heif_context_read_from_memory_without_copy,
 *     heif_decode_image to interleaved RGBA, then sd_premultiply_rgba into
 *     a new buffer — the conversion ours does;
 *   - JPEG XL anchor: JxlDecoder one shot (whole input, closed), RGBA8 into
 *     a new buffer, then sd_premultiply_rgba into another — as ours does.
 * Rounds interleaved, best of 15 (7 swung ±6% here). Ratio = anchor time / ours (≥ 0.95: the
 * core costs almost nothing beyond the codec). Then a 256 px HEIC
 * thumbnail (SD_DEC_MAX_PIXEL_SIZE 256: the embedded thumbnail decoded) against
 * the full decode, and the same request on the file without a thumbnail.
 *
 * SVG (built with SDCORE_WITH_SVG): a generated document of 600 shapes
 * (paths, gradients, translucent fills, strokes; no text) rendered at
 * 1024x768 and 2048x1536 (each one band of our deadline check), ours
 * (sd_decoder: the reference scan, librsvg, banded drawing into the
 * canvas) against librsvg called directly (rsvg_handle_new_from_stream_sync
 * on the same memory, a cairo ARGB32 surface on one reused buffer zeroed per
 * render, as ours gets a zeroed canvas from its pixel pool,
 * rsvg_handle_render_document scaled to the size): a new handle per render
 * on both sides.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jxl/decode.h>
#include <libheif/heif.h>

#include <sdcore.h>
#ifdef SD_BENCH_SVG
#include <librsvg/rsvg.h>
#endif

#include "../../Tests/C/sd_test_encode.h"

sd_bitmap *bench_photo(int w, int h, int alpha); /* bench_decode.c */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct {
    uint8_t *data;
    size_t len, cap;
} out_buf;

static struct heif_error collect(struct heif_context *ctx, const void *data, size_t size, void *user)
{
    (void)ctx;
    out_buf *o = user;
    if (o->len + size > o->cap) {
        o->cap = (o->len + size) * 2;
        o->data = realloc(o->data, o->cap);
    }
    memcpy(o->data + o->len, data, size);
    o->len += size;
    struct heif_error ok = {heif_error_Ok, heif_suberror_Unspecified, "ok"};
    return ok;
}

/* libheif's own file of `b` (x265 q80), with a thumbnail `thumb` px long (0: none). */
static uint8_t *heic_of(const sd_bitmap *b, int thumb, size_t *n)
{
    struct heif_context *ctx = heif_context_alloc();
    struct heif_encoder *enc;
    if (heif_context_get_encoder_for_format(ctx, heif_compression_HEVC, &enc).code != heif_error_Ok)
        return NULL;
    heif_encoder_set_lossy_quality(enc, 80);
    struct heif_image *img;
    uint32_t w = sd_bitmap_width(b), h = sd_bitmap_height(b);
    heif_image_create((int)w, (int)h, heif_colorspace_RGB, heif_chroma_interleaved_RGB, &img);
    heif_image_add_plane(img, heif_channel_interleaved, (int)w, (int)h, 8);
    int stride;
    uint8_t *px = heif_image_get_plane(img, heif_channel_interleaved, &stride);
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint32_t p;
            memcpy(&p, sd_bitmap_pixels(b) + y * sd_bitmap_stride(b) + x * 4, 4);
            uint8_t *q = px + (size_t)y * (size_t)stride + x * 3;
            q[0] = (uint8_t)(p >> 16), q[1] = (uint8_t)(p >> 8), q[2] = (uint8_t)p;
        }
    struct heif_image_handle *handle;
    heif_context_encode_image(ctx, img, enc, NULL, &handle);
    if (thumb > 0)
        heif_context_encode_thumbnail(ctx, img, handle, enc, NULL, thumb, NULL);
    out_buf o = {0};
    struct heif_writer writer = {1, collect};
    heif_context_write(ctx, &writer, &o);
    heif_image_handle_release(handle);
    heif_image_release(img);
    heif_encoder_release(enc);
    heif_context_free(ctx);
    *n = o.len;
    return o.data;
}

static int ours(const uint8_t *d, size_t n, int max)
{
    sd_decoder *dec;
    sd_bitmap *b = NULL;
    if (sd_decoder_new(&dec) != SD_OK)
        return -1;
    if (max > 0)
        sd_decoder_set(dec, SD_DEC_MAX_PIXEL_SIZE, max);
    int rc = sd_decoder_decode(dec, d, n, &b);
    sd_bitmap_free(b);
    sd_decoder_free(dec);
    return rc;
}

static int heif_direct(const uint8_t *d, size_t n)
{
    struct heif_context *ctx = heif_context_alloc();
    struct heif_image_handle *h = NULL;
    struct heif_image *img = NULL;
    int rc = -1;
    if (heif_context_read_from_memory_without_copy(ctx, d, n, NULL).code == heif_error_Ok &&
        heif_context_get_primary_image_handle(ctx, &h).code == heif_error_Ok &&
        heif_decode_image(h, &img, heif_colorspace_RGB, heif_chroma_interleaved_RGBA, NULL).code == heif_error_Ok) {
        int stride, w = heif_image_get_width(img, heif_channel_interleaved),
                    hh = heif_image_get_height(img, heif_channel_interleaved);
        const uint8_t *px = heif_image_get_plane_readonly(img, heif_channel_interleaved, &stride);
        uint8_t *out = malloc((size_t)w * hh * 4);
        for (int y = 0; y < hh; y++)
            sd_premultiply_rgba(px + (size_t)y * (size_t)stride, out + (size_t)y * w * 4, (size_t)w);
        free(out);
        rc = 0;
    }
    if (img)
        heif_image_release(img);
    if (h)
        heif_image_handle_release(h);
    heif_context_free(ctx);
    return rc;
}

static int jxl_direct(const uint8_t *d, size_t n)
{
    JxlDecoder *j = JxlDecoderCreate(NULL);
    JxlDecoderSubscribeEvents(j, JXL_DEC_BASIC_INFO | JXL_DEC_FULL_IMAGE);
    JxlDecoderSetInput(j, d, n);
    JxlDecoderCloseInput(j);
    JxlBasicInfo info;
    const JxlPixelFormat f = {4, JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0};
    uint8_t *rgba = NULL;
    int rc = -1;
    for (;;) {
        JxlDecoderStatus st = JxlDecoderProcessInput(j);
        if (st == JXL_DEC_BASIC_INFO) {
            JxlDecoderGetBasicInfo(j, &info);
        } else if (st == JXL_DEC_NEED_IMAGE_OUT_BUFFER) {
            rgba = malloc((size_t)info.xsize * info.ysize * 4);
            JxlDecoderSetImageOutBuffer(j, &f, rgba, (size_t)info.xsize * info.ysize * 4);
        } else if (st == JXL_DEC_FULL_IMAGE) {
            uint8_t *out = malloc((size_t)info.xsize * info.ysize * 4);
            for (uint32_t y = 0; y < info.ysize; y++)
                sd_premultiply_rgba(rgba + (size_t)y * info.xsize * 4, out + (size_t)y * info.xsize * 4, info.xsize);
            free(out);
            rc = 0;
            break;
        } else {
            break;
        }
    }
    free(rgba);
    JxlDecoderDestroy(j);
    return rc;
}

#ifdef SD_BENCH_SVG
/* A logo-to-illustration sized document: 600 shapes on a 1024x768 page. */
static char *svg_doc(size_t *n)
{
    size_t cap = 1 << 17, len = 0;
    char *s = malloc(cap);
    len += (size_t)snprintf(s, cap, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1024\" height=\"768\">"
                            "<defs><linearGradient id=\"g\" x2=\"1\" y2=\"1\"><stop offset=\"0\" stop-color=\"#f80\"/>"
                            "<stop offset=\"1\" stop-color=\"#08f\" stop-opacity=\".4\"/></linearGradient></defs>"
                            "<rect width=\"1024\" height=\"768\" fill=\"url(#g)\"/>");
    unsigned r = 12345;
    for (int i = 0; i < 600; i++) {
        r = r * 1103515245 + 12345;
        int x = (int)(r >> 8) % 1000, y = (int)(r >> 4) % 760, k = (int)(r >> 20) % 3;
        if (k == 0)
            len += (size_t)snprintf(s + len, cap - len, "<circle cx=\"%d\" cy=\"%d\" r=\"%d\" fill=\"#%06x\" fill-opacity=\".6\"/>",
                                    x, y, 5 + i % 40, r & 0xFFFFFF);
        else if (k == 1)
            len += (size_t)snprintf(s + len, cap - len, "<path d=\"M%d %d q 40 -60 80 0 t 80 0\" fill=\"none\" stroke=\"#%06x\" "
                                    "stroke-width=\"3\"/>", x, y, r & 0xFFFFFF);
        else
            len += (size_t)snprintf(s + len, cap - len, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"30\" rx=\"6\" "
                                    "fill=\"url(#g)\" stroke=\"#222\"/>", x, y, 20 + i % 60);
    }
    len += (size_t)snprintf(s + len, cap - len, "</svg>");
    *n = len;
    return s;
}

static int svg_ours(const char *d, size_t n, int w, int h)
{
    sd_decoder *dec;
    sd_bitmap *b = NULL;
    if (sd_decoder_new(&dec) != SD_OK)
        return -1;
    sd_decoder_set(dec, SD_DEC_TARGET_WIDTH, w);
    sd_decoder_set(dec, SD_DEC_TARGET_HEIGHT, h);
    int rc = sd_decoder_decode(dec, d, n, &b);
    sd_bitmap_free(b);
    sd_decoder_free(dec);
    return rc;
}

static int svg_direct(const char *d, size_t n, int w, int h)
{
    GInputStream *in = g_memory_input_stream_new_from_data(d, (gssize)n, NULL);
    RsvgHandle *handle = rsvg_handle_new_from_stream_sync(in, NULL, RSVG_HANDLE_FLAGS_NONE, NULL, NULL);
    g_object_unref(in);
    if (handle == NULL)
        return -1;
    rsvg_handle_set_dpi(handle, 96.0);
    double nw, nh;
    rsvg_handle_get_intrinsic_size_in_pixels(handle, &nw, &nh);
    /* like ours (a canvas from the pixel pool, zeroed): one reused buffer per size, zeroed */
    static uint8_t *buf[2];
    int k = w > 1024;
    size_t stride = (size_t)cairo_format_stride_for_width(CAIRO_FORMAT_ARGB32, w);
    if (buf[k] == NULL)
        buf[k] = malloc(stride * (size_t)h);
    memset(buf[k], 0, stride * (size_t)h);
    cairo_surface_t *surf = cairo_image_surface_create_for_data(buf[k], CAIRO_FORMAT_ARGB32, w, h, (int)stride);
    cairo_t *cr = cairo_create(surf);
    cairo_scale(cr, w / nw, h / nh);
    RsvgRectangle vp = {0, 0, nw, nh};
    int rc = rsvg_handle_render_document(handle, cr, &vp, NULL) ? 0 : -1;
    cairo_destroy(cr);
    cairo_surface_flush(surf);
    cairo_surface_destroy(surf);
    g_object_unref(handle);
    return rc;
}
#endif

int bench_formats_main(int argc, char **argv)
{
    int rounds = 15, json = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            rounds = 2;
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else {
            fprintf(stderr, "usage: sdcore-bench formats [--quick] [--rounds N] [--json]\n");
            return 2;
        }
    }
    heif_init(NULL);
    sd_bitmap *photo = bench_photo(2048, 1536, 0);
    size_t hn, hn_plain, jn;
    uint8_t *heic = heic_of(photo, 320, &hn), *heic_plain = heic_of(photo, 0, &hn_plain), *jxl;
    if (heic == NULL || heic_plain == NULL ||
        sdt_encode(SD_FORMAT_JXL, (const sd_bitmap *const *)&photo, NULL, 1, (const int[]){SD_ENC_QUALITY, 90, 0},
                   &jxl, &jn) != SD_OK) {
        fprintf(stderr, "sdcore-bench formats: could not encode the inputs (libheif without x265?)\n");
        return 1;
    }
    /* 0 ours HEIC, 1 libheif, 2 ours JXL, 3 libjxl, 4 ours HEIC 256 px (thumbnail), 5 same without one */
    double best[6];
    for (int k = 0; k < 6; k++)
        best[k] = 1e30;
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 6; k++) {
            double t0 = now();
            int rc = k == 0   ? ours(heic, hn, 0)
                     : k == 1 ? heif_direct(heic, hn)
                     : k == 2 ? ours(jxl, jn, 0)
                     : k == 3 ? jxl_direct(jxl, jn)
                     : k == 4 ? ours(heic, hn, 256)
                              : ours(heic_plain, hn_plain, 256);
            double t = now() - t0;
            if (rc != 0) {
                fprintf(stderr, "sdcore-bench formats: method %d failed (%d)\n", k, rc);
                return 1;
            }
            best[k] = t < best[k] ? t : best[k];
        }
    }
    double heic_ratio = best[1] / best[0], jxl_ratio = best[3] / best[2], thumb_speedup = best[0] / best[4],
           plain_thumb = best[0] / best[5];
    if (json) {
        printf("{\"bench\":\"formats\",\"heic_vs_libheif\":%.3f,\"jxl_vs_libjxl\":%.3f,\"heic_thumb_speedup\":%.2f,"
               "\"heic_thumb_without_embedded\":%.2f,\"heic_ms\":%.2f,\"jxl_ms\":%.2f}\n",
               heic_ratio, jxl_ratio, thumb_speedup, plain_thumb, best[0] * 1e3, best[2] * 1e3);
    } else {
        printf("sdcore-bench formats: a 2048x1536 photo-like picture, one thread, inputs in memory, a new decoder\n"
               "and output per decode on both sides, best of %d interleaved rounds.\n\n", rounds);
        printf("%-52s %9s %9s %8s\n", "", "ours ms", "anchor ms", "ratio");
        printf("%-52s %9.2f %9.2f %8.3f   target >= 0.95\n", "HEIC (x265 q80) vs heif_decode_image + premultiply",
               best[0] * 1e3, best[1] * 1e3, heic_ratio);
        printf("%-52s %9.2f %9.2f %8.3f   target >= 0.95\n", "JPEG XL (d 1) vs JxlDecoder RGBA8 + premultiply",
               best[2] * 1e3, best[3] * 1e3, jxl_ratio);
        printf("%-52s %9.2f %9s %7.1fx   faster than the full decode\n",
               "HEIC 256 px thumbnail (its 320 px thumbnail decoded)", best[4] * 1e3, "", thumb_speedup);
        printf("%-52s %9.2f %9s %7.1fx\n", "HEIC 256 px, a file without a thumbnail", best[5] * 1e3, "",
               plain_thumb);
    }
#ifdef SD_BENCH_SVG
    {
        size_t sn;
        char *svg = svg_doc(&sn);
        /* 0 ours 1024, 1 librsvg 1024, 2 ours 2048, 3 librsvg 2048 */
        double sb[4] = {1e30, 1e30, 1e30, 1e30};
        for (int r = 0; r < rounds; r++)
            for (int k = 0; k < 4; k++) {
                int w = k < 2 ? 1024 : 2048, h = k < 2 ? 768 : 1536;
                double t0 = now();
                int rc = k % 2 == 0 ? svg_ours(svg, sn, w, h) : svg_direct(svg, sn, w, h);
                double t = now() - t0;
                if (rc != 0) {
                    fprintf(stderr, "sdcore-bench formats: SVG method %d failed (%d)\n", k, rc);
                    return 1;
                }
                sb[k] = t < sb[k] ? t : sb[k];
            }
        if (json)
            printf("{\"bench\":\"formats-svg\",\"svg_1024_vs_librsvg\":%.3f,\"svg_2048_vs_librsvg\":%.3f,"
                   "\"svg_1024_ms\":%.2f,\"svg_2048_ms\":%.2f}\n", sb[1] / sb[0], sb[3] / sb[2], sb[0] * 1e3, sb[2] * 1e3);
        else {
            printf("%-52s %9.2f %9.2f %8.3f   target >= 0.95\n", "SVG 600 shapes at 1024x768 vs librsvg directly",
                   sb[0] * 1e3, sb[1] * 1e3, sb[1] / sb[0]);
            printf("%-52s %9.2f %9.2f %8.3f   target >= 0.95\n", "SVG 600 shapes at 2048x1536 vs librsvg directly",
                   sb[2] * 1e3, sb[3] * 1e3, sb[3] / sb[2]);
        }
        free(svg);
    }
#endif
    free(heic);
    free(heic_plain);
    sd_free(jxl);
    sd_bitmap_free(photo);
    return 0;
}
