/*
 * test_avif.c — AVIF decoding against the pixels it was made from. Images
 * of our own (gradients, alpha ramps) are written as PNG, encoded by
 * libavif's avifenc (libavif-bin) and decoded here: lossless files must
 * equal the PNG's decode exactly (also with irot/imir, against the PNG
 * turned by sd_bitmap_orient, and 10-bit within 1 of 8-bit: truncation);
 * lossy ones within a stated tolerance. Fed whole, byte by byte and in
 * random chunks. Skipped when avifenc is missing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <math.h>

#include "sd_test.h"
#include "sd_test_util.h"

static char dir[64];

static sd_bitmap *pattern(uint32_t w, uint32_t h, int alpha)
{
    sd_bitmap *b;
    if (sd_bitmap_new(w, h, &b) != SD_OK)
        return NULL;
    for (uint32_t y = 0; y < h; y++) {
        uint8_t rgba[4 * 512];
        for (uint32_t x = 0; x < w; x++) {
            rgba[4 * x] = (uint8_t)(x * 255 / (w - 1));
            rgba[4 * x + 1] = (uint8_t)(y * 255 / (h - 1));
            rgba[4 * x + 2] = (uint8_t)((x * 7 + y * 13) & 0xFF);
            rgba[4 * x + 3] = alpha ? (uint8_t)(255 - (x + y) * 255 / (w + h - 2)) : 255;
        }
        sd_premultiply_rgba(rgba, sd_bitmap_pixels(b) + y * sd_bitmap_stride(b), w);
    }
    return b;
}

/* PNG of the pattern at `png`, its decode (the reference) returned. */
static sd_bitmap *write_png(const char *png, uint32_t w, uint32_t h, int alpha)
{
    sd_bitmap *src = pattern(w, h, alpha), *ref = NULL;
    uint8_t *bytes;
    size_t n;
    if (src == NULL || enc_png(src, 6, &bytes, &n) != SD_OK)
        return NULL;
    FILE *f = fopen(png, "wb");
    fwrite(bytes, 1, n, f);
    fclose(f);
    sd_decode(bytes, n, &ref);
    sd_free(bytes);
    sd_bitmap_free(src);
    return ref;
}

static int avifenc(const char *args, const char *png, const char *avif)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "avifenc %s '%s' '%s' >/dev/null 2>&1", args, png, avif);
    return system(cmd);
}

/* Decode `path` fed whole (0), byte by byte (1) or in random chunks (-1). */
static sd_bitmap *decode_file(const char *path, int mode, int64_t *orientation)
{
    size_t n;
    unsigned char *data = sd_read_file(path, &n);
    if (data == NULL)
        return NULL;
    sd_decoder *d;
    sd_bitmap *b = NULL;
    sd_decoder_new(&d);
    int rc = sd_decode_chunked(d, data, n, mode, 99, mode < 0 ? 2 : 0, &b);
    if (rc != SD_OK)
        fprintf(stderr, "  %s: %s (%s)\n", path, sd_strerror(rc), sd_decoder_message(d));
    if (orientation)
        sd_decoder_get(d, SD_DEC_INFO_ORIENTATION, orientation);
    sd_decoder_free(d);
    free(data);
    return b;
}

/* Largest and mean channel difference, and the PSNR in dB. */
static double psnr;
static void diff(const sd_bitmap *a, const sd_bitmap *b, int *max, double *mean)
{
    long sum = 0;
    double sq = 0;
    *max = 0;
    size_t n = 0;
    for (uint32_t y = 0; y < sd_bitmap_height(a); y++) {
        const uint8_t *p = sd_bitmap_pixels(a) + y * sd_bitmap_stride(a);
        const uint8_t *q = sd_bitmap_pixels(b) + y * sd_bitmap_stride(b);
        for (uint32_t i = 0; i < sd_bitmap_width(a) * 4; i++, n++) {
            int d = abs((int)p[i] - (int)q[i]);
            sum += d;
            sq += (double)d * d;
            if (d > *max)
                *max = d;
        }
    }
    *mean = n ? (double)sum / (double)n : 0;
    psnr = sq > 0 ? 10 * log10(255.0 * 255.0 * (double)n / sq) : 99;
}

static int have_avifenc(void)
{
    if (system("avifenc --version >/dev/null 2>&1") != 0) {
        fprintf(stderr, "  avifenc (libavif-bin) not found: skipping\n");
        return 0;
    }
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/sd_avif_XXXXXX");
        if (mkdtemp(dir) == NULL)
            return 0;
    }
    return 1;
}

static int test_lossless_exact(void)
{
    if (!have_avifenc())
        return 77;
    for (int alpha = 0; alpha < 2; alpha++) {
        char png[128], avif[128];
        snprintf(png, sizeof png, "%s/src%d.png", dir, alpha);
        snprintf(avif, sizeof avif, "%s/lossless%d.avif", dir, alpha);
        sd_bitmap *ref = write_png(png, 61, 37, alpha);
        ASSERT_NOT_NULL(ref);
        ASSERT_EQ(avifenc("--lossless -s 10", png, avif), 0);
        for (int mode = -1; mode <= 1; mode++) {
            sd_bitmap *got = decode_file(avif, mode, NULL);
            ASSERT_NOT_NULL(got);
            int max;
            double mean;
            ASSERT_EQ(sd_bitmap_width(got), 61);
            ASSERT_EQ(sd_bitmap_height(got), 37);
            diff(ref, got, &max, &mean);
            ASSERT_EQ(max, 0);
            sd_bitmap_free(got);
        }
        sd_bitmap_free(ref);
    }
    return 0;
}

/* irot/imir: the decode is the PNG turned as the EXIF orientation says. */
static int test_transforms(void)
{
    if (!have_avifenc())
        return 77;
    char png[128], avif[128], args[128];
    snprintf(png, sizeof png, "%s/t.png", dir);
    sd_bitmap *ref = write_png(png, 24, 16, 1);
    ASSERT_NOT_NULL(ref);
    static const int want[4][3] = {{1, 4, 2}, {8, 5, 7}, {3, 2, 4}, {6, 7, 5}}; /* [irot][none, imir 0, imir 1] */
    for (int rot = 0; rot < 4; rot++) {
        for (int mir = -1; mir <= 1; mir++) {
            snprintf(avif, sizeof avif, "%s/t_%d_%d.avif", dir, rot, mir);
            if (mir < 0)
                snprintf(args, sizeof args, "--lossless -s 10 --irot %d", rot);
            else
                snprintf(args, sizeof args, "--lossless -s 10 --irot %d --imir %d", rot, mir);
            ASSERT_EQ(avifenc(args, png, avif), 0);
            int64_t o = 0;
            sd_bitmap *got = decode_file(avif, 0, &o), *turned = NULL;
            ASSERT_NOT_NULL(got);
            ASSERT_EQ(o, want[rot][mir + 1]);
            ASSERT_OK(sd_bitmap_orient(ref, (int)o, &turned));
            int max;
            double mean;
            ASSERT_EQ(sd_bitmap_width(got), sd_bitmap_width(turned));
            diff(turned, got, &max, &mean);
            ASSERT_EQ(max, 0);
            sd_bitmap_free(got);
            sd_bitmap_free(turned);
        }
    }
    sd_bitmap_free(ref);
    return 0;
}

/* Lossy (quantizer 20): mean channel error at most 3, PSNR at least 36 dB
 * in 4:4:4 and 28 dB in 4:2:0 (the pattern's blue channel changes every
 * pixel, which chroma subsampling cannot keep); 10-bit lossless truncated
 * to 8 within 1. */
static int test_lossy_and_deep(void)
{
    if (!have_avifenc())
        return 77;
    char png[128], avif[128];
    snprintf(png, sizeof png, "%s/l.png", dir);
    sd_bitmap *ref = write_png(png, 64, 48, 1);
    ASSERT_NOT_NULL(ref);
    snprintf(avif, sizeof avif, "%s/lossy.avif", dir);
    int max;
    double mean;
    static const struct { const char *yuv; double min_psnr; } lossy[] = {{"444", 36.0}, {"420", 28.0}};
    for (int k = 0; k < 2; k++) {
        char args[128];
        snprintf(args, sizeof args, "-s 10 --min 20 --max 20 --minalpha 20 --maxalpha 20 -y %s", lossy[k].yuv);
        ASSERT_EQ(avifenc(args, png, avif), 0);
        sd_bitmap *got = decode_file(avif, -1, NULL);
        ASSERT_NOT_NULL(got);
        diff(ref, got, &max, &mean);
        fprintf(stderr, "  lossy q20 %s: mean %.2f, max %d, PSNR %.1f dB (at least %.0f)\n", lossy[k].yuv, mean,
                max, psnr, lossy[k].min_psnr);
        ASSERT(mean <= 3.0 && psnr >= lossy[k].min_psnr);
        sd_bitmap_free(got);
    }
    sd_bitmap *got;
    snprintf(avif, sizeof avif, "%s/deep.avif", dir);
    ASSERT_EQ(avifenc("--lossless -s 10 -d 10", png, avif), 0);
    got = decode_file(avif, 0, NULL);
    ASSERT_NOT_NULL(got);
    diff(ref, got, &max, &mean);
    fprintf(stderr, "  10-bit lossless: mean %.3f, max %d\n", mean, max);
    ASSERT(max <= 1);
    sd_bitmap_free(got);
    sd_bitmap_free(ref);
    return 0;
}

/* The file lossless_exact made (NULL, a skip, without avifenc or it). */
static unsigned char *lossless1(size_t *n)
{
    if (!have_avifenc())
        return NULL;
    char avif[128];
    snprintf(avif, sizeof avif, "%s/lossless1.avif", dir);
    return sd_read_file(avif, n);
}

/* Truncated and damaged files fail cleanly; a thumbnail is scaled. */
static int test_damaged_and_thumbnail(void)
{
    size_t n;
    unsigned char *data = lossless1(&n);
    if (data == NULL)
        return 77;
    for (size_t cut = 0; cut < n; cut += n / 23 + 1) {
        sd_bitmap *b = NULL;
        int rc = sd_decode(data, cut, &b);
        ASSERT(rc != SD_OK || b != NULL);
        sd_bitmap_free(b);
    }
    unsigned char *bad = malloc(n);
    memcpy(bad, data, n);
    for (size_t i = n / 2; i < n; i += 7)
        bad[i] ^= 0x5A;
    sd_bitmap *b = NULL;
    if (sd_decode(bad, n, &b) == SD_OK)
        ASSERT_NOT_NULL(b);
    sd_bitmap_free(b);
    free(bad);
    sd_decoder *d;
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_MAX_PIXEL_SIZE, 20));
    b = NULL;
    ASSERT_OK(sd_decoder_decode(d, data, n, &b));
    ASSERT_EQ(sd_bitmap_width(b), 20);
    ASSERT_EQ(sd_bitmap_height(b), 12);
    sd_bitmap_free(b);
    sd_decoder_free(d);
    /* the pixel limit is checked before decoding */
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_MAX_PIXELS, 100));
    ASSERT_EQ(sd_decoder_push(d, data, n), SD_ETOOLARGE);
    sd_decoder_free(d);
    free(data);
    return 0;
}

/* A file without a pixi property, as libheif <= 1.11 wrote them (issue 38):
 * the same file with its pixi box renamed to a property nobody knows decodes
 * to the same pixels (libavif's strict default refuses it). */
static int test_no_pixi(void)
{
    size_t n;
    unsigned char *data = lossless1(&n);
    if (data == NULL)
        return 77;
    sd_bitmap *want = NULL, *got = NULL;
    ASSERT_OK(sd_decode(data, n, &want));
    int renamed = 0;
    for (size_t i = 0; i + 4 <= n; i++)
        if (memcmp(data + i, "pixi", 4) == 0) {
            data[i] = 'x';
            renamed++;
        }
    ASSERT(renamed >= 1);
    int rc = sd_decode(data, n, &got);
    if (rc != SD_OK)
        fprintf(stderr, "  without pixi: %s\n", sd_strerror(rc));
    ASSERT_OK(rc);
    ASSERT(sd_bitmap_width(got) == sd_bitmap_width(want) && sd_bitmap_height(got) == sd_bitmap_height(want));
    int max;
    double mean;
    diff(want, got, &max, &mean);
    ASSERT_EQ(max, 0);
    sd_bitmap_free(want);
    sd_bitmap_free(got);
    free(data);
    return 0;
}

/* An image sequence (lossless, three images given to avifenc with their
 * durations, the last 10 ms: shown 100) is an animation: every frame equals
 * libavif's own decode of it (avifdec --index), asked in order, out of order
 * and again, fed whole, byte by byte and in random pieces; the
 * stored durations and key frames are libavif's; it loops forever; sd_decode
 * and SD_DEC_FIRST_FRAME_ONLY give the first image as a still. */
static int test_sequence(void)
{
    if (!have_avifenc())
        return 77;
    char png[3][128], avif[128];
    sd_bitmap *want[3];
    for (int i = 0; i < 3; i++) {
        snprintf(png[i], sizeof png[i], "%s/seq_%d.png", dir, i);
        want[i] = write_png(png[i], 16, 12, i != 1); /* the middle one opaque */
        ASSERT(want[i] != NULL);
    }
    /* make the frames differ beyond alpha: the second is the first mirrored */
    sd_bitmap_free(want[2]);
    sd_bitmap *src = pattern(16, 12, 1), *mirrored = NULL;
    ASSERT_OK(sd_bitmap_orient(src, 2, &mirrored));
    uint8_t *bytes;
    size_t nbytes;
    ASSERT_OK(enc_png(mirrored, 6, &bytes, &nbytes));
    FILE *f = fopen(png[2], "wb");
    fwrite(bytes, 1, nbytes, f);
    fclose(f);
    ASSERT_OK(sd_decode(bytes, nbytes, &want[2]));
    sd_free(bytes);
    sd_bitmap_free(src);
    sd_bitmap_free(mirrored);
    snprintf(avif, sizeof avif, "%s/seq.avif", dir);
    char cmd[900];
    snprintf(cmd, sizeof cmd,
             "avifenc --lossless -s 6 --timescale 1000 --duration 100 '%s' --duration 250 '%s' --duration 10 '%s' "
             "'%s' >/dev/null 2>&1",
             png[0], png[1], png[2], avif);
    ASSERT_EQ(system(cmd), 0);
    /* the oracle: each frame as libavif's avifdec decodes it (AV1 inter
     * frames are not bit-exact here even with --lossless); the key frame
     * must still equal its PNG, and the frames must differ (speed 6: at 8
     * and above avifenc 0.11's lossless repeats frame 0's pixels) */
    sd_bitmap *source0 = want[0];
    for (int i = 0; i < 3; i++) {
        char ref[160];
        snprintf(ref, sizeof ref, "%s/seq_ref_%d.png", dir, i);
        snprintf(cmd, sizeof cmd, "avifdec --index %d '%s' '%s' >/dev/null 2>&1", i, avif, ref);
        ASSERT_EQ(system(cmd), 0);
        size_t rn;
        unsigned char *rb = sd_read_file(ref, &rn);
        ASSERT_NOT_NULL(rb);
        if (i > 0)
            sd_bitmap_free(want[i]);
        want[i] = NULL;
        ASSERT_OK(sd_decode(rb, rn, &want[i]));
        free(rb);
    }
    {
        int max;
        double mean;
        diff(source0, want[0], &max, &mean);
        ASSERT_EQ(max, 0);
        diff(want[0], want[1], &max, &mean);
        ASSERT(max > 0);
        diff(want[0], want[2], &max, &mean);
        ASSERT(max > 0);
        sd_bitmap_free(source0);
    }
    size_t n;
    unsigned char *data = sd_read_file(avif, &n);
    ASSERT_NOT_NULL(data);
    static const int64_t stored[3] = {100, 250, 10}, shown[3] = {100, 250, 100};
    for (int mode = 0; mode < 3; mode++) { /* whole, byte by byte, random pieces */
        sd_decoder *d;
        ASSERT_OK(sd_decoder_new(&d));
        int rc = SD_OK;
        if (mode == 0) {
            rc = sd_decoder_push(d, data, n);
        } else {
            srand(7);
            for (size_t at = 0; at < n && rc == SD_OK;) {
                size_t k = mode == 1 ? 1 : 1 + (size_t)rand() % 300;
                k = k < n - at ? k : n - at;
                rc = sd_decoder_push(d, data + at, k);
                at += k;
            }
        }
        ASSERT_OK(rc);
        ASSERT_OK(sd_decoder_finish(d));
        int64_t v = 0;
        ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_ANIMATED, &v));
        ASSERT_EQ(v, 1);
        ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_FRAME_COUNT, &v));
        ASSERT_EQ(v, 3);
        ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_LOOP_COUNT, &v));
        ASSERT_EQ(v, 0);
        ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_COMPLETE, &v));
        ASSERT_EQ(v, 1);
        for (uint32_t i = 0; i < 3; i++) {
            ASSERT_OK(sd_decoder_frame_get(d, i, SD_FRAME_STORED_DURATION_MS, &v));
            ASSERT_EQ(v, stored[i]);
            ASSERT_OK(sd_decoder_frame_get(d, i, SD_FRAME_DURATION_MS, &v));
            ASSERT_EQ(v, shown[i]);
        }
        ASSERT_OK(sd_decoder_frame_get(d, 0, SD_FRAME_IS_KEY, &v));
        ASSERT_EQ(v, 1);
        static const uint32_t order[] = {0, 1, 2, 2, 0, 2, 1, 0};
        for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
            sd_bitmap *got = NULL;
            ASSERT_OK(sd_decoder_frame(d, order[k], &got));
            int max;
            double mean;
            diff(want[order[k]], got, &max, &mean);
            if (max != 0)
                fprintf(stderr, "  mode %d, frame %u (step %zu): max diff %d\n", mode, order[k], k, max);
            ASSERT_EQ(max, 0);
            sd_bitmap_free(got);
        }
        sd_bitmap *none = NULL;
        ASSERT_EQ(sd_decoder_frame(d, 3, &none), SD_EOI);
        sd_bitmap *first = NULL;
        ASSERT_OK(sd_decoder_take_bitmap(d, &first));
        int max;
        double mean;
        diff(want[0], first, &max, &mean);
        ASSERT_EQ(max, 0);
        sd_bitmap_free(first);
        sd_decoder_free(d);
    }
    /* sd_decode and SD_DEC_FIRST_FRAME_ONLY: the first image, a still */
    sd_bitmap *got = NULL;
    ASSERT_OK(sd_decode(data, n, &got));
    int max;
    double mean;
    diff(want[0], got, &max, &mean);
    ASSERT_EQ(max, 0);
    sd_bitmap_free(got);
    sd_decoder *d;
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_FIRST_FRAME_ONLY, 1));
    ASSERT_OK(sd_decoder_decode(d, data, n, &got));
    int64_t v = 0;
    ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_ANIMATED, &v));
    ASSERT_EQ(v, 1);
    ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_FRAME_COUNT, &v));
    ASSERT_EQ(v, 1);
    diff(want[0], got, &max, &mean);
    ASSERT_EQ(max, 0);
    sd_bitmap_free(got);
    sd_decoder_free(d);
    /* cut inside the last frame's data: the frames before it still play,
     * and the animation ends (incomplete) where the data does */
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_push(d, data, n - 8));
    int rc = sd_decoder_finish(d);
    if (rc == SD_OK) {
        ASSERT_OK(sd_decoder_frame(d, 0, &got));
        diff(want[0], got, &max, &mean);
        ASSERT_EQ(max, 0);
        sd_bitmap_free(got);
        sd_bitmap *late = NULL;
        int last = SD_OK;
        for (uint32_t i = 1; i < 3 && last == SD_OK; i++) {
            last = sd_decoder_frame(d, i, &late);
            sd_bitmap_free(late);
            late = NULL;
        }
        ASSERT(last != SD_OK);
        ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_COMPLETE, &v));
        ASSERT_EQ(v, 0);
    } else {
        ASSERT(rc == SD_ETRUNCATED || rc == SD_ECORRUPT); /* a clear error, never a crash */
    }
    sd_decoder_free(d);
    for (int i = 0; i < 3; i++)
        sd_bitmap_free(want[i]);
    free(data);
    return 0;
}

int main(int argc, char **argv)
{
    static const sd_test_case tests[] = {
        {"avif_lossless_exact", test_lossless_exact},
        {"avif_transforms", test_transforms},
        {"avif_lossy_and_deep", test_lossy_and_deep},
        {"avif_damaged_and_thumbnail", test_damaged_and_thumbnail},
        {"avif_sequence", test_sequence},
        {"avif_no_pixi", test_no_pixi},
        {NULL, NULL},
    };
    int rc = sd_test_run(tests, argc, argv);
    if (dir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            rc = 1;
    }
    return rc;
}
