/*
 * test_jxl.c — JPEG XL against libjxl's own tools (libjxl-tools): pictures
 * of our own written as PNG, encoded by cjxl (lossy and lossless, with and
 * without alpha, odd sizes), decoded here and by djxl (the reference):
 * within 1 a channel, whole, byte by byte and in random chunks. Then:
 * progressive previews as a progressive file streams in (one per pass at
 * most, never more than the passes), an animation made by cjxl from a
 * corpus-anim GIF (every frame equal to the GIF's, durations and loop
 * count), a JPEG recompressed losslessly with its orientation, our encoder
 * read back by djxl, truncated and hostile files, limits. Skipped when the
 * tools are missing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sd_test.h"
#include "sd_test_util.h"
#include "sd_test_encode.h"

static char dir[64];

static sd_bitmap *pattern(uint32_t w, uint32_t h, int alpha)
{
    sd_bitmap *b;
    if (sd_bitmap_new(w, h, &b) != SD_OK)
        return NULL;
    uint8_t *rgba = malloc((size_t)w * 4);
    for (uint32_t y = 0; y < h; y++) {
        for (uint32_t x = 0; x < w; x++) {
            rgba[4 * x] = (uint8_t)(x * 255 / (w - 1));
            rgba[4 * x + 1] = (uint8_t)(y * 255 / (h - 1));
            rgba[4 * x + 2] = (uint8_t)((x * 7 + y * 13) & 0xFF);
            rgba[4 * x + 3] = alpha ? (uint8_t)(255 - (x + y) * 200 / (w + h - 2)) : 255;
        }
        sd_premultiply_rgba(rgba, sd_bitmap_pixels(b) + y * sd_bitmap_stride(b), w);
    }
    free(rgba);
    return b;
}

static uint8_t *file(const char *name, size_t *n)
{
    char path[160];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return sd_read_file(path, n);
}

static int decode(const uint8_t *data, size_t n, int chunk, sd_bitmap **out)
{
    sd_decoder *d;
    ASSERT_OK(sd_decoder_new(&d));
    int rc = sd_decode_chunked(d, data, n, chunk, 5, 0, out);
    sd_decoder_free(d);
    return rc;
}

/* djxl's PNG of `jxl`, decoded by us (PNG: the oracle-tested path). */
static int djxl_ref(const uint8_t *jxl, size_t n, sd_bitmap **ref)
{
    char in[160], out[160], cmd[400];
    snprintf(in, sizeof in, "%s/ref.jxl", dir);
    snprintf(out, sizeof out, "%s/ref.png", dir);
    ASSERT_EQ(sd_write_file(in, jxl, n), 0);
    snprintf(cmd, sizeof cmd, "djxl %s %s --bits_per_sample=8", in, out);
    ASSERT_EQ(sd_run_quiet(cmd), 0);
    size_t pn;
    uint8_t *png = file("ref.png", &pn);
    ASSERT_NOT_NULL(png);
    ASSERT_OK(decode(png, pn, 0, ref));
    free(png);
    return 0;
}

/* cjxl's file of our picture. */
static uint8_t *cjxl(uint32_t w, uint32_t h, int alpha, const char *args, size_t *n)
{
    sd_bitmap *pic = pattern(w, h, alpha);
    uint8_t *png;
    size_t pn;
    if (enc_png(pic, 1, &png, &pn) != SD_OK)
        return NULL;
    char in[160], out[160], cmd[600];
    snprintf(in, sizeof in, "%s/in.png", dir);
    snprintf(out, sizeof out, "%s/out.jxl", dir);
    uint8_t *jxl = NULL;
    if (sd_write_file(in, png, pn) == 0) {
        snprintf(cmd, sizeof cmd, "cjxl %s %s %s", in, out, args);
        if (sd_run_quiet(cmd) == 0)
            jxl = file("out.jxl", n);
    }
    sd_free(png);
    sd_bitmap_free(pic);
    return jxl;
}

static int test_decode_matches_djxl(void)
{
    static const struct { uint32_t w, h; int alpha; const char *args; } cases[] = {
        {97, 61, 0, "-d 1"}, {64, 64, 1, "-d 1"}, {33, 120, 1, "-d 0"}, {300, 200, 0, "-d 0 -e 3"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t n;
        uint8_t *jxl = cjxl(cases[k].w, cases[k].h, cases[k].alpha, cases[k].args, &n);
        ASSERT_NOT_NULL(jxl);
        ASSERT_EQ(sd_sniff_format(jxl, n), SD_FORMAT_JXL);
        sd_bitmap *ref;
        ASSERT_EQ(djxl_ref(jxl, n, &ref), 0);
        for (int chunk = 0; chunk >= -1; chunk = chunk == 0 ? 1 : (chunk == 1 ? -1 : -2)) {
            sd_bitmap *got = NULL;
            ASSERT_OK(decode(jxl, n, chunk, &got));
            int worst = sd_bitmap_max_diff(got, ref);
            printf("  %ux%u%s %s chunk %d: within %d of djxl\n", cases[k].w, cases[k].h,
                   cases[k].alpha ? " alpha" : "", cases[k].args, chunk, worst);
            ASSERT(worst <= 1);
            ASSERT_EQ(sd_bitmap_has_alpha(got), cases[k].alpha);
            sd_bitmap_free(got);
        }
        sd_bitmap_free(ref);
        free(jxl);
    }
    return 0;
}

/* A progressive file (our encoder, SD_ENC_PROGRESSIVE) fed in 64 pieces:
 * previews come at pass boundaries — libjxl 0.7 signals one, the DC pass
 * (measured: one JXL_DEC_FRAME_PROGRESSION for cjxl -p, --progressive_ac
 * and --progressive_dc files alike) — long before the last byte, a whole
 * picture near the final one; the final image as djxl's. */
static int test_progressive_previews(void)
{
    sd_bitmap *pic = pattern(512, 384, 0);
    for (uint32_t y = 0; y < 384; y++) /* smooth with fine texture, as photos are: most bytes are AC */
        for (uint32_t x = 0; x < 512; x++) {
            uint32_t t = ((x * 7 + y * 13) & 31) + ((x * y) & 15);
            uint32_t px = 0xFF000000u | (x / 4 + t) << 16 | (y * 200 / 383 + t) << 8 |
                          (uint32_t)(100 + (int)(x / 4) - (int)(y / 4) + (int)t);
            memcpy(sd_bitmap_pixels(pic) + y * sd_bitmap_stride(pic) + x * 4, &px, 4);
        }
    uint8_t *jxl;
    size_t n;
    ASSERT_OK(sdt_encode(SD_FORMAT_JXL, (const sd_bitmap *const *)&pic, NULL, 1,
                         (const int[]){SD_ENC_QUALITY, 90, SD_ENC_PROGRESSIVE, 1, 0}, &jxl, &n));
    sd_bitmap *ref;
    ASSERT_EQ(djxl_ref(jxl, n, &ref), 0);
    sd_decoder *d;
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_PREVIEWS, 1));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_PREVIEW_INTERVAL_MS, 0));
    int64_t seen = 0;
    int previews = 0, last_err = 1 << 30, improving = 1;
    size_t first_at = 0;
    const size_t pieces = 64;
    for (size_t i = 0; i < pieces; i++) {
        size_t a = n * i / pieces, b = n * (i + 1) / pieces;
        ASSERT_OK(sd_decoder_push(d, jxl + a, b - a));
        int64_t count;
        ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_PREVIEWS, &count));
        if (count > seen && i + 1 < pieces) {
            seen = count;
            sd_bitmap *snap;
            ASSERT_OK(sd_decoder_snapshot(d, &snap));
            ASSERT(sd_bitmap_width(snap) == 512 && sd_bitmap_height(snap) == 384);
            int err = (int)(sd_bitmap_mean_diff(snap, ref) * 100);
            improving &= err <= last_err;
            last_err = err;
            if (previews++ == 0)
                first_at = b;
            sd_bitmap_free(snap);
        }
    }
    ASSERT_OK(sd_decoder_finish(d));
    sd_bitmap *final;
    ASSERT_OK(sd_decoder_take_bitmap(d, &final));
    int64_t complete;
    ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_COMPLETE, &complete));
    printf("  %zu bytes in %zu pieces: %d previews, the first at byte %zu, each nearer the final (mean error x100 "
           "last %d)\n", n, pieces, previews, first_at, last_err);
    ASSERT(previews >= 1 && previews < (int)pieces && improving && complete == 1);
    ASSERT(first_at < n / 2 && last_err < 1000); /* early, and within 10 levels on average */
    ASSERT(sd_bitmap_max_diff(final, ref) <= 1);
    sd_bitmap_free(final);
    sd_decoder_free(d);
    /* cut short at 60%: the passes so far, flagged incomplete */
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_push(d, jxl, n * 6 / 10));
    ASSERT_OK(sd_decoder_finish(d));
    ASSERT_OK(sd_decoder_take_bitmap(d, &final));
    ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_COMPLETE, &complete));
    ASSERT(complete == 0 && sd_bitmap_width(final) == 512);
    sd_bitmap_free(final);
    sd_decoder_free(d);
    sd_bitmap_free(ref);
    sd_free(jxl);
    sd_bitmap_free(pic);
    return 0;
}

/* cjxl turns a corpus-anim GIF into a lossless JXL animation: every frame
 * equals the GIF's own (our GIF decoder is checked against the oracle),
 * with its durations and loop count. */
static int test_animation(void)
{
    char gif[512], cmd[900];
    /* every frame shown for a while (JPEG XL merges a frame of duration 0 into the next) */
    snprintf(gif, sizeof gif, "%s/../corpus-anim/gif/dispose1_trans.gif", sd_corpus_dir()); /* cjxl 0.7 refuses dispose-to-background */
    if (access(gif, R_OK) != 0)
        return 77;
    snprintf(cmd, sizeof cmd, "cjxl %s %s/anim.jxl -d 0", gif, dir);
    ASSERT_EQ(sd_run_quiet(cmd), 0);
    size_t gn, jn;
    uint8_t *g = sd_read_file(gif, &gn), *j = file("anim.jxl", &jn);
    ASSERT(g != NULL && j != NULL);
    sd_decoder *dg, *dj;
    ASSERT_OK(sd_decoder_new(&dg));
    ASSERT_OK(sd_decoder_new(&dj));
    ASSERT_OK(sd_decoder_push(dg, g, gn));
    ASSERT_OK(sd_decoder_finish(dg));
    for (size_t i = 0; i < jn; i += 97) /* in pieces */
        ASSERT_OK(sd_decoder_push(dj, j + i, jn - i < 97 ? jn - i : 97));
    ASSERT_OK(sd_decoder_finish(dj));
    int64_t fg, fj, lg, lj, animated;
    ASSERT_OK(sd_decoder_get(dg, SD_DEC_INFO_FRAME_COUNT, &fg));
    ASSERT_OK(sd_decoder_get(dj, SD_DEC_INFO_FRAME_COUNT, &fj));
    ASSERT_OK(sd_decoder_get(dg, SD_DEC_INFO_LOOP_COUNT, &lg));
    ASSERT_OK(sd_decoder_get(dj, SD_DEC_INFO_LOOP_COUNT, &lj));
    ASSERT_OK(sd_decoder_get(dj, SD_DEC_INFO_ANIMATED, &animated));
    printf("  %lld frames (GIF %lld), loops %lld (GIF %lld)\n", (long long)fj, (long long)fg, (long long)lj,
           (long long)lg);
    ASSERT(animated == 1 && fj == fg && fj > 1 && lj == lg);
    /* every frame, in order, then one back (the player restarts and skips) */
    for (int64_t k = 0; k <= fj; k++) {
        uint32_t i = (uint32_t)(k < fj ? k : fj / 2);
        sd_bitmap *a, *b;
        int64_t da, db;
        ASSERT_OK(sd_decoder_frame(dg, i, &a));
        ASSERT_OK(sd_decoder_frame(dj, i, &b));
        ASSERT_OK(sd_decoder_frame_get(dg, i, SD_FRAME_STORED_DURATION_MS, &da));
        ASSERT_OK(sd_decoder_frame_get(dj, i, SD_FRAME_STORED_DURATION_MS, &db));
        ASSERT_EQ(sd_bitmap_max_diff(a, b), 0);
        ASSERT_EQ(da, db);
        sd_bitmap_free(a);
        sd_bitmap_free(b);
    }
    sd_decoder_free(dg);
    sd_decoder_free(dj);
    free(g);
    free(j);
    return 0;
}

/* A JPEG recompressed losslessly (jbrd) decodes as any JXL, upright. */
static int test_from_jpeg(void)
{
    char jpg[512], cmd[900];
    snprintf(jpg, sizeof jpg, "%s/exif-orientation/Landscape_6.jpg", sd_corpus_dir());
    if (access(jpg, R_OK) != 0)
        return 77;
    snprintf(cmd, sizeof cmd, "cjxl %s %s/j.jxl", jpg, dir);
    ASSERT_EQ(sd_run_quiet(cmd), 0);
    size_t jn, pn;
    uint8_t *j = file("j.jxl", &jn);
    snprintf(cmd, sizeof cmd, "djxl %s/j.jxl %s/j.png --bits_per_sample=8", dir, dir);
    ASSERT_EQ(sd_run_quiet(cmd), 0);
    uint8_t *png = file("j.png", &pn);
    ASSERT(j != NULL && png != NULL);
    sd_bitmap *got, *ref, *jpeg;
    ASSERT_OK(decode(j, jn, 0, &got));
    ASSERT_OK(decode(png, pn, 0, &ref));
    size_t on;
    uint8_t *orig = sd_read_file(jpg, &on);
    ASSERT_OK(decode(orig, on, 0, &jpeg));
    int worst = sd_bitmap_max_diff(got, ref);
    double mean = sd_bitmap_mean_diff(got, jpeg); /* libjxl's own IDCT and chroma upsampling: close, not equal */
    printf("  %ux%u: within %d of djxl; mean difference %.2f from the JPEG decoded by libjpeg\n",
           sd_bitmap_width(got), sd_bitmap_height(got), worst, mean);
    ASSERT(worst <= 1 && mean < 1.0); /* upright as the JPEG is: its orientation travelled */
    free(orig);
    sd_bitmap_free(jpeg);
    sd_bitmap_free(got);
    sd_bitmap_free(ref);
    free(png);
    free(j);
    return 0;
}

/* Our encoder: lossless exact, lossy close, animated; djxl reads it. */
static int test_encode(void)
{
    sd_bitmap *pic = pattern(90, 70, 0), *alpha = pattern(90, 70, 1);
    uint8_t *jxl;
    size_t n;
    ASSERT_OK(sdt_encode(SD_FORMAT_JXL, (const sd_bitmap *const *)&pic, NULL, 1,
                         (const int[]){SD_ENC_LOSSLESS, 1, 0}, &jxl, &n));
    sd_bitmap *got, *ref;
    ASSERT_OK(decode(jxl, n, 0, &got));
    ASSERT_EQ(sd_bitmap_max_diff(got, pic), 0);
    ASSERT_EQ(djxl_ref(jxl, n, &ref), 0);
    ASSERT_EQ(sd_bitmap_max_diff(ref, pic), 0);
    sd_bitmap_free(got);
    sd_bitmap_free(ref);
    sd_free(jxl);
    ASSERT_OK(sdt_encode(SD_FORMAT_JXL, (const sd_bitmap *const *)&alpha, NULL, 1,
                         (const int[]){SD_ENC_QUALITY, 90, 0}, &jxl, &n));
    ASSERT_OK(decode(jxl, n, 0, &got));
    double mean = sd_bitmap_mean_diff(got, alpha);
    printf("  lossy q90 with alpha: %zu bytes, mean difference %.2f from the source\n", n, mean);
    ASSERT(mean < 3.0 && sd_bitmap_has_alpha(got));
    sd_bitmap_free(got);
    sd_free(jxl);
    const sd_bitmap *frames[3] = {pic, alpha, pic};
    const int delays[3] = {100, 250, 40};
    ASSERT_OK(sdt_encode(SD_FORMAT_JXL, frames, delays, 3, (const int[]){SD_ENC_LOSSLESS, 1, SD_ENC_LOOP_COUNT, 3, 0},
                         &jxl, &n));
    sd_decoder *d;
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_push(d, jxl, n));
    ASSERT_OK(sd_decoder_finish(d));
    int64_t count, loops;
    ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_FRAME_COUNT, &count));
    ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_LOOP_COUNT, &loops));
    ASSERT(count == 3 && loops == 3);
    for (uint32_t i = 0; i < 3; i++) {
        sd_bitmap *f;
        int64_t ms;
        ASSERT_OK(sd_decoder_frame(d, i, &f));
        ASSERT_OK(sd_decoder_frame_get(d, i, SD_FRAME_STORED_DURATION_MS, &ms));
        ASSERT(ms == delays[i] && sd_bitmap_max_diff(f, frames[i]) <= 1);
        sd_bitmap_free(f);
    }
    sd_decoder_free(d);
    sd_free(jxl);
    sd_bitmap_free(alpha);
    sd_bitmap_free(pic);
    return 0;
}

/* Cut short, damaged, over the limits: an error or an incomplete image. */
static int test_bad_files(void)
{
    size_t n;
    uint8_t *jxl = cjxl(200, 150, 1, "-d 1", &n);
    ASSERT_NOT_NULL(jxl);
    sd_bitmap *out = NULL;
    ASSERT_EQ(decode(jxl, 5, 0, &out), SD_ETRUNCATED);
    for (size_t cut = 20; cut < n; cut += n / 9) {
        sd_decoder *d;
        ASSERT_OK(sd_decoder_new(&d));
        int rc = sd_decode_chunked(d, jxl, cut, 0, 1, 0, &out);
        int64_t complete = 1;
        sd_decoder_get(d, SD_DEC_INFO_COMPLETE, &complete);
        ASSERT(rc < 0 || complete == 0);
        if (rc == SD_OK)
            sd_bitmap_free(out);
        out = NULL;
        sd_decoder_free(d);
    }
    uint8_t *bad = malloc(n);
    memcpy(bad, jxl, n);
    for (size_t i = n / 3; i < n; i += 5)
        bad[i] ^= 0xA5;
    if (decode(bad, n, 0, &out) == SD_OK)
        sd_bitmap_free(out);
    out = NULL;
    sd_decoder *d;
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_MAX_PIXELS, 1000));
    ASSERT_EQ(sd_decode_chunked(d, jxl, n, 0, 1, 0, &out), SD_ETOOLARGE);
    sd_decoder_free(d);
    free(bad);
    free(jxl);
    return 0;
}

/* libjxl is loaded when the first JPEG XL arrives: without it (a child with
 * SDCORE_JXL_LIBRARY naming a file that is not there) a JPEG XL fails with
 * SD_EUNSUPPORTED and a message naming the file, encoding too, and the
 * rest of the core works. */
static int test_missing_library(void)
{
    size_t n;
    uint8_t *jxl = cjxl(64, 48, 0, "-d 1", &n);
    ASSERT(jxl != NULL);
    char path[160];
    snprintf(path, sizeof path, "%s/out.jxl", dir);
    ASSERT_EQ(sd_missing_library(SD_FORMAT_JXL, "SDCORE_JXL_LIBRARY", path, 0, NULL), 0);
    free(jxl);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--missing-library-child") == 0)
        return sd_missing_library(SD_FORMAT_JXL, NULL, NULL, argc, argv);
    if (access("/usr/bin/cjxl", X_OK) != 0 || access("/usr/bin/djxl", X_OK) != 0) {
        printf("cjxl/djxl missing (libjxl-tools): skipped\n");
        return 77;
    }
    snprintf(dir, sizeof dir, "/tmp/sdjxlXXXXXX");
    if (mkdtemp(dir) == NULL)
        return 1;
    static const sd_test_case tests[] = {
        {"decode_matches_djxl", test_decode_matches_djxl},
        {"progressive_previews", test_progressive_previews},
        {"animation", test_animation},
        {"from_jpeg", test_from_jpeg},
        {"encode", test_encode},
        {"bad_files", test_bad_files},
        {"missing_library", test_missing_library},
        {NULL, NULL},
    };
    int rc = sd_test_run(tests, argc, argv);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    sd_run_quiet(cmd);
    return rc;
}
