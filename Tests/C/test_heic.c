/*
 * test_heic.c — HEIC against libheif's own tools (libheif-examples):
 * pictures of our own are written as PNG, encoded by heif-enc, and decoded
 * here and by heif-convert (the reference): within 1 a channel, whole,
 * byte by byte and in random chunks, with and without alpha, odd sizes.
 * Then: the embedded thumbnail used for a small request (and not for a
 * larger one), the colour profile handed to colour management, our
 * encoder read back by heif-convert, truncated and hostile files, limits.
 * Skipped when the tools are missing.
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
        for (uint32_t x = 0; x < w; x++) { /* smooth: lossy HEVC keeps it close */
            rgba[4 * x] = (uint8_t)(x * 255 / (w - 1));
            rgba[4 * x + 1] = (uint8_t)(y * 255 / (h - 1));
            rgba[4 * x + 2] = (uint8_t)(128 + (int)(x / 2) - (int)(y / 3));
            rgba[4 * x + 3] = alpha ? (uint8_t)(255 - (x + y) * 200 / (w + h - 2)) : 255;
        }
        sd_premultiply_rgba(rgba, sd_bitmap_pixels(b) + y * sd_bitmap_stride(b), w);
    }
    free(rgba);
    return b;
}

/* Decode `data` (chunk as sd_decode_chunked); max > 0: a thumbnail. */
static int decode(const uint8_t *data, size_t n, int chunk, int max, sd_bitmap **out, int64_t *load_w)
{
    sd_decoder *d;
    ASSERT_OK(sd_decoder_new(&d));
    if (max > 0)
        ASSERT_OK(sd_decoder_set(d, SD_DEC_MAX_PIXEL_SIZE, max));
    int rc = sd_decode_chunked(d, data, n, chunk, 99, 0, out);
    if (rc == SD_OK && load_w != NULL)
        sd_decoder_get(d, SD_DEC_INFO_LOAD_WIDTH, load_w);
    sd_decoder_free(d);
    return rc;
}

static uint8_t *file(const char *name, size_t *n)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return sd_read_file(path, n);
}

/* heif-enc's file of our picture, and heif-convert's PNG of it decoded. */
static int make(uint32_t w, uint32_t h, int alpha, const char *extra, uint8_t **heic, size_t *heic_n,
                sd_bitmap **ref)
{
    sd_bitmap *pic = pattern(w, h, alpha);
    uint8_t *png;
    size_t pn;
    ASSERT_OK(enc_png(pic, 1, &png, &pn));
    char in[128], out[128], back[128], cmd[600];
    snprintf(in, sizeof in, "%s/in.png", dir);
    snprintf(out, sizeof out, "%s/out.heic", dir);
    snprintf(back, sizeof back, "%s/back.png", dir);
    ASSERT_EQ(sd_write_file(in, png, pn), 0);
    snprintf(cmd, sizeof cmd, "heif-enc -q 90 %s %s -o %s", extra, in, out);
    ASSERT_EQ(sd_run_quiet(cmd), 0);
    snprintf(cmd, sizeof cmd, "heif-convert %s %s", out, back);
    ASSERT_EQ(sd_run_quiet(cmd), 0);
    *heic = file("out.heic", heic_n);
    size_t bn;
    uint8_t *b = file("back.png", &bn);
    ASSERT(*heic != NULL && b != NULL);
    ASSERT_OK(decode(b, bn, 0, 0, ref, NULL));
    free(b);
    sd_free(png);
    sd_bitmap_free(pic);
    return 0;
}

static int test_decode_matches_heif_convert(void)
{
    static const struct { uint32_t w, h; int alpha; } cases[] = {{97, 61, 0}, {64, 64, 1}, {33, 120, 1}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        uint8_t *heic;
        size_t n;
        sd_bitmap *ref;
        ASSERT_EQ(make(cases[k].w, cases[k].h, cases[k].alpha, "", &heic, &n, &ref), 0);
        ASSERT_EQ(sd_sniff_format(heic, n), SD_FORMAT_HEIC);
        for (int chunk = 0; chunk >= -1; chunk = chunk == 0 ? 1 : (chunk == 1 ? -1 : -2)) {
            sd_bitmap *got = NULL;
            ASSERT_OK(decode(heic, n, chunk, 0, &got, NULL));
            int worst = sd_bitmap_max_diff(got, ref);
            printf("  %ux%u%s chunk %d: within %d of heif-convert\n", cases[k].w, cases[k].h,
                   cases[k].alpha ? " alpha" : "", chunk, worst);
            ASSERT(worst <= 1);
            ASSERT_EQ(sd_bitmap_has_alpha(got), cases[k].alpha);
            sd_bitmap_free(got);
        }
        sd_bitmap_free(ref);
        free(heic);
    }
    return 0;
}

/* heif-enc -t N embeds a thumbnail N px on its long side: a request that
 * size or smaller decodes it; a larger one decodes the image. */
static int test_thumbnail(void)
{
    uint8_t *heic;
    size_t n;
    sd_bitmap *ref, *small = NULL, *large = NULL;
    ASSERT_EQ(make(400, 300, 0, "-t 96", &heic, &n, &ref), 0);
    int64_t load_small = 0, load_large = 0;
    ASSERT_OK(decode(heic, n, 0, 64, &small, &load_small));
    ASSERT_OK(decode(heic, n, 0, 200, &large, &load_large));
    printf("  request 64: decoded %lld px wide; request 200: %lld px wide\n", (long long)load_small,
           (long long)load_large);
    ASSERT(load_small == 96 && load_large == 400);
    ASSERT(sd_bitmap_width(small) == 64 && sd_bitmap_height(small) == 48);
    ASSERT(sd_bitmap_width(large) == 200 && sd_bitmap_height(large) == 150);
    /* the thumbnail's pixels: close to the full image scaled */
    sd_bitmap *scaled;
    ASSERT_OK(sd_bitmap_resample(ref, 64, 48, SD_FILTER_LANCZOS3, 0, &scaled));
    double mean = sd_bitmap_mean_diff(small, scaled);
    printf("  thumbnail vs the image scaled: mean difference %.2f, worst %d\n", mean, sd_bitmap_max_diff(small, scaled));
    ASSERT(mean < 3.0); /* the same picture, two lossy encodes */
    sd_bitmap_free(scaled);
    sd_bitmap_free(small);
    sd_bitmap_free(large);
    sd_bitmap_free(ref);
    free(heic);
    return 0;
}

/* Our encoder: quality, alpha, a profile; heif-convert reads what it writes. */
static int test_encode(void)
{
    if (!(sd_format_capabilities(SD_FORMAT_HEIC) & SD_CAP_ENCODE))
        return 77;
    for (int alpha = 0; alpha < 2; alpha++) {
        sd_bitmap *pic = pattern(90, 70, alpha);
        uint8_t *heic;
        size_t n;
        int rc = sdt_encode(SD_FORMAT_HEIC, (const sd_bitmap *const *)&pic, NULL, 1,
                            (const int[]){SD_ENC_QUALITY, 95, 0}, &heic, &n);
        if (rc == SD_EUNSUPPORTED) { /* libheif without an HEVC encoder: said, not faked */
            sd_bitmap_free(pic);
            return 77;
        }
        ASSERT_OK(rc);
        ASSERT_EQ(sd_sniff_format(heic, n), SD_FORMAT_HEIC);
        sd_bitmap *got = NULL;
        ASSERT_OK(decode(heic, n, 0, 0, &got, NULL));
        int worst = sd_bitmap_max_diff(got, pic);
        char path[128], back[128], cmd[400];
        snprintf(path, sizeof path, "%s/ours.heic", dir);
        snprintf(back, sizeof back, "%s/ours.png", dir);
        ASSERT_EQ(sd_write_file(path, heic, n), 0);
        snprintf(cmd, sizeof cmd, "heif-convert %s %s", path, back);
        ASSERT_EQ(sd_run_quiet(cmd), 0);
        size_t bn;
        uint8_t *b = file("ours.png", &bn);
        sd_bitmap *theirs = NULL;
        ASSERT_OK(decode(b, bn, 0, 0, &theirs, NULL));
        int vs = sd_bitmap_max_diff(got, theirs);
        printf("  encoded%s: %zu bytes, within %d of the source, %d of heif-convert's decode\n",
               alpha ? " with alpha" : "", n, worst, vs);
        ASSERT(worst <= 12 && vs <= 1 && sd_bitmap_has_alpha(got) == alpha);
        free(b);
        sd_bitmap_free(theirs);
        sd_bitmap_free(got);
        sd_free(heic);
        sd_bitmap_free(pic);
    }
    return 0;
}

/* A profile travels: encoded with one, decoded as that ICC source. */
static int test_profile(void)
{
    if (!(sd_format_capabilities(SD_FORMAT_HEIC) & SD_CAP_ENCODE) ||
        access("/usr/share/color/icc/colord/AdobeRGB1998.icc", R_OK) != 0)
        return 77;
    size_t icc_len;
    uint8_t *icc = sd_read_file("/usr/share/color/icc/colord/AdobeRGB1998.icc", &icc_len);
    sd_bitmap *pic = pattern(64, 48, 0);
    sd_encoder *e;
    ASSERT_OK(sd_encoder_new(SD_FORMAT_HEIC, &e));
    ASSERT_OK(sd_encoder_set_icc_profile(e, icc, icc_len));
    ASSERT_OK(sd_encoder_add_frame(e, pic, 0));
    uint8_t *heic;
    size_t n;
    ASSERT_OK(sd_encoder_finish(e, &heic, &n));
    sd_encoder_free(e);
    sd_decoder *d;
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_COLOR_MANAGE, 0));
    ASSERT_OK(sd_decoder_push(d, heic, n));
    ASSERT_OK(sd_decoder_finish(d));
    int64_t space;
    const uint8_t *got;
    size_t got_len;
    ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_COLOR_SPACE, &space));
    ASSERT_OK(sd_decoder_icc_profile(d, &got, &got_len));
    ASSERT(space == SD_COLOR_ICC && got_len == icc_len && memcmp(got, icc, icc_len) == 0);
    sd_decoder_free(d);
    /* converted by default: not the stored numbers */
    sd_bitmap *managed = NULL, *stored = NULL;
    ASSERT_OK(decode(heic, n, 0, 0, &managed, NULL));
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_COLOR_MANAGE, 0));
    ASSERT_OK(sd_decode_chunked(d, heic, n, 0, 1, 0, &stored));
    sd_decoder_free(d);
    ASSERT(sd_bitmap_max_diff(managed, stored) > 4);
    sd_bitmap_free(managed);
    sd_bitmap_free(stored);
    sd_free(heic);
    sd_bitmap_free(pic);
    free(icc);
    return 0;
}

/* Cut short, garbage after the header, over the limits: an error, no crash. */
static int test_bad_files(void)
{
    uint8_t *heic;
    size_t n;
    sd_bitmap *ref, *out = NULL;
    ASSERT_EQ(make(120, 80, 1, "", &heic, &n, &ref), 0);
    for (size_t cut = 16; cut < n; cut += n / 7) {
        int rc = decode(heic, cut, 0, 0, &out, NULL);
        ASSERT(rc < 0 && out == NULL);
    }
    uint8_t *bad = malloc(n);
    memcpy(bad, heic, n);
    for (size_t i = n / 2; i < n; i += 3)
        bad[i] ^= 0x5A;
    int rc = decode(bad, n, 0, 0, &out, NULL); /* damaged HEVC: an error or some picture, never a crash */
    if (rc == SD_OK)
        sd_bitmap_free(out);
    out = NULL;
    sd_decoder *d;
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_MAX_PIXELS, 1000));
    ASSERT_EQ(sd_decode_chunked(d, heic, n, 0, 1, 0, &out), SD_ETOOLARGE);
    ASSERT(strstr(sd_decoder_message(d), "too large") != NULL);
    sd_decoder_free(d);
    free(bad);
    sd_bitmap_free(ref);
    free(heic);
    return 0;
}

/* libheif is loaded when the first HEIC arrives: without it (a child with
 * SDCORE_HEIF_LIBRARY naming a file that is not there) a HEIC fails with
 * SD_EUNSUPPORTED and a message naming the file, encoding too, and the
 * rest of the core works. */
static int test_missing_library(void)
{
    uint8_t *heic;
    size_t n;
    sd_bitmap *ref;
    ASSERT_OK(make(64, 48, 0, "", &heic, &n, &ref));
    char path[128];
    snprintf(path, sizeof path, "%s/out.heic", dir);
    ASSERT_EQ(sd_missing_library(SD_FORMAT_HEIC, "SDCORE_HEIF_LIBRARY", path, 0, NULL), 0);
    free(heic);
    sd_bitmap_free(ref);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--missing-library-child") == 0)
        return sd_missing_library(SD_FORMAT_HEIC, NULL, NULL, argc, argv);
    if (access("/usr/bin/heif-enc", X_OK) != 0 || access("/usr/bin/heif-convert", X_OK) != 0) {
        printf("heif-enc/heif-convert missing (libheif-examples): skipped\n");
        return 77;
    }
    snprintf(dir, sizeof dir, "/tmp/sdheicXXXXXX");
    if (mkdtemp(dir) == NULL)
        return 1;
    static const sd_test_case tests[] = {
        {"decode_matches_heif_convert", test_decode_matches_heif_convert},
        {"thumbnail", test_thumbnail},
        {"encode", test_encode},
        {"profile", test_profile},
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
