/*
 * bench_encode.c — `sdcore-bench encode`: our encoders against the library
 * calls `cwebp` and `avifenc` make, with the same settings, in the same run.
 *
 * Like for like: both sides start from pixels in memory and end with the
 * encoded bytes in a malloc'd buffer; one thread; best of several
 * interleaved rounds. Ours starts from the premultiplied bitmap it is given
 * (an opaque one is handed over as it lies; one with alpha is
 * unpremultiplied first — that pass is part of our cost); the baseline
 * starts from the straight RGBA a libwebp/libavif user already holds
 * (prepared before timing). Same settings means the same bytes: every row
 * checks that both outputs are identical, so the comparison cannot drift
 * into comparing different work.
 *   WebP lossy q75 / lossless (effort 70): WebPConfigInit + quality (+ lossless),
 *        WebPPictureImportRGBA, WebPEncode into a WebPMemoryWriter.
 *   AVIF q60 speed 6 (quantizer 25, 4:2:0, one thread): avifImageCreate,
 *        avifImageRGBToYUV, avifEncoderWrite.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <avif/avif.h>
#include <webp/encode.h>

#include <sdcore.h>

#include "../../Tests/C/sd_test_encode.h"

sd_bitmap *bench_photo(int w, int h, int alpha); /* bench_decode.c */

typedef struct {
    const sd_bitmap *bitmap; /* what ours gets */
    uint8_t *rgba;           /* what the baseline gets: straight R,G,B,A */
    int w, h, alpha;
} job;

typedef struct {
    uint8_t *data;
    size_t len;
} blob;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static blob ours_webp_lossy(const job *j)
{
    blob b = {0};
    return enc_webp(j->bitmap, 75, 0, &b.data, &b.len) == SD_OK ? b : (blob){0};
}

static blob ours_webp_lossless(const job *j)
{
    blob b = {0};
    return enc_webp(j->bitmap, 0, 1, &b.data, &b.len) == SD_OK ? b : (blob){0};
}

static blob ours_avif(const job *j)
{
    blob b = {0};
    return enc_avif(j->bitmap, 60, 6, &b.data, &b.len) == SD_OK ? b : (blob){0};
}

/* cwebp's path through the advanced API, output copied out as ours is. */
static blob libwebp(const job *j, int lossless)
{
    blob b = {0};
    WebPConfig config;
    WebPPicture pic;
    if (!WebPConfigInit(&config) || !WebPPictureInit(&pic))
        return b;
    config.quality = lossless ? 70.0f : 75.0f; /* 70: libwebp's lossless default effort */
    config.lossless = lossless;
    pic.use_argb = lossless;
    pic.width = j->w;
    pic.height = j->h;
    WebPMemoryWriter wr;
    WebPMemoryWriterInit(&wr);
    pic.writer = WebPMemoryWrite;
    pic.custom_ptr = &wr;
    if (WebPPictureImportRGBA(&pic, j->rgba, j->w * 4) && WebPEncode(&config, &pic)) {
        b.data = malloc(wr.size);
        memcpy(b.data, wr.mem, wr.size);
        b.len = wr.size;
    }
    WebPMemoryWriterClear(&wr);
    WebPPictureFree(&pic);
    return b;
}

static blob libwebp_lossy(const job *j) { return libwebp(j, 0); }
static blob libwebp_lossless(const job *j) { return libwebp(j, 1); }

static blob libavif(const job *j)
{
    blob b = {0};
    avifImage *img = avifImageCreate((uint32_t)j->w, (uint32_t)j->h, 8, AVIF_PIXEL_FORMAT_YUV420);
    img->yuvRange = AVIF_RANGE_FULL;
    avifRGBImage rgb;
    avifRGBImageSetDefaults(&rgb, img);
    rgb.format = AVIF_RGB_FORMAT_RGBA;
    rgb.depth = 8;
    rgb.pixels = j->rgba;
    rgb.rowBytes = (uint32_t)j->w * 4;
    avifImageRGBToYUV(img, &rgb);
    if (!j->alpha)
        avifImageFreePlanes(img, AVIF_PLANES_A);
    avifEncoder *enc = avifEncoderCreate();
    enc->speed = 6;
    enc->minQuantizer = enc->maxQuantizer = 25; /* quality 60 */
    enc->minQuantizerAlpha = enc->maxQuantizerAlpha = 25;
    enc->maxThreads = 1;
    avifRWData out = AVIF_DATA_EMPTY;
    if (avifEncoderWrite(enc, img, &out) == AVIF_RESULT_OK) {
        b.data = malloc(out.size);
        memcpy(b.data, out.data, out.size);
        b.len = out.size;
    }
    avifRWDataFree(&out);
    avifEncoderDestroy(enc);
    avifImageDestroy(img);
    return b;
}

typedef blob (*fn)(const job *);

static int row(const char *what, const job *j, fn ours, fn base, double min_seconds, int json)
{
    double best[2] = {1e30, 1e30}, spent = 0;
    size_t len[2] = {0, 0};
    for (int r = 0; r < 3 || (spent < min_seconds && r < 50); r++) {
        for (int m = 0; m < 2; m++) {
            int which = r % 2 ? 1 - m : m; /* alternate who goes first */
            double t0 = now();
            blob b = (which ? base : ours)(j);
            double t = now() - t0;
            spent += t;
            if (b.data == NULL) {
                fprintf(stderr, "sdcore-bench encode: %s failed (%s)\n", which ? "baseline" : "ours", what);
                return 1;
            }
            best[which] = t < best[which] ? t : best[which];
            len[which] = b.len;
            static blob first; /* the two sides' outputs must be the same bytes */
            if (r == 0 && m == 0) {
                first = b;
            } else {
                if (r == 0 && (b.len != first.len || memcmp(b.data, first.data, b.len) != 0)) {
                    fprintf(stderr, "sdcore-bench encode: %s: ours and the baseline made different files "
                                    "(%zu vs %zu bytes): not the same settings\n", what, first.len, b.len);
                    return 1;
                }
                if (r == 0) {
                    sd_free(first.data);
                    first.data = NULL;
                }
                sd_free(b.data);
            }
        }
    }
    double mp = (double)j->w * j->h / 1e6, ratio = best[1] / best[0];
    if (json)
        printf("{\"row\":\"%s\",\"width\":%d,\"height\":%d,\"alpha\":%d,\"bytes\":%zu,\"ours_ms\":%.3f,"
               "\"baseline_ms\":%.3f,\"ours_mps\":%.3f,\"baseline_mps\":%.3f,\"ratio\":%.3f}\n",
               what, j->w, j->h, j->alpha, len[0], best[0] * 1e3, best[1] * 1e3, mp / best[0], mp / best[1], ratio);
    else
        printf("%-22s %5dx%-5d %-6s %8zu B  ours %9.2f ms  library %9.2f ms  %.3fx\n", what, j->w, j->h,
               j->alpha ? "alpha" : "opaque", len[0], best[0] * 1e3, best[1] * 1e3, ratio);
    return 0;
}

static job make_job(int w, int h, int alpha)
{
    job j = {bench_photo(w, h, alpha), NULL, w, h, alpha};
    j.rgba = malloc((size_t)w * h * 4);
    for (int y = 0; y < h; y++)
        sd_unpremultiply_argb(sd_bitmap_pixels(j.bitmap) + (size_t)y * sd_bitmap_stride(j.bitmap),
                              j.rgba + (size_t)y * w * 4, (size_t)w);
    return j;
}

int bench_encode_main(int argc, char **argv)
{
    int json = 0;
    double min_seconds = 2.0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--quick") == 0)
            min_seconds = 0;
        else {
            fprintf(stderr, "usage: sdcore-bench encode [--quick] [--json]\n");
            return 2;
        }
    }
    if (!json)
        printf("like for like: pixels in memory -> encoded bytes in a malloc'd buffer, same settings "
               "(outputs checked identical), one thread, best of >= 3 interleaved rounds\n");
    job photo = make_job(1024, 768, 0), cutout = make_job(1024, 768, 1), small = make_job(512, 384, 0);
    job avif_photo = make_job(640, 480, 0), avif_cutout = make_job(640, 480, 1);
    int rc = row("webp lossy q75", &photo, ours_webp_lossy, libwebp_lossy, min_seconds, json) ||
             row("webp lossy q75", &cutout, ours_webp_lossy, libwebp_lossy, min_seconds, json) ||
             row("webp lossless", &small, ours_webp_lossless, libwebp_lossless, min_seconds, json) ||
             row("avif q60 speed 6", &avif_photo, ours_avif, libavif, min_seconds, json) ||
             row("avif q60 speed 6", &avif_cutout, ours_avif, libavif, min_seconds, json);
    job all[] = {photo, cutout, small, avif_photo, avif_cutout};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        sd_bitmap_free((sd_bitmap *)all[i].bitmap);
        free(all[i].rgba);
    }
    return rc;
}
