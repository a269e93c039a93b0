/*
 * test_settle.c — a progressive JPEG read for a thumbnail stops once the
 * scans still to come cannot move its output past SD_DEC_SETTLE_LEVELS
 * (the bound: for every coefficient the reduced IDCT reads, the successive
 * approximation bits still missing times its quantizer). Progressive files
 * are made here by libjpeg-turbo's cjpeg from the corpus' photographs, under
 * several scan scripts (libjpeg's default, a mozjpeg-like one with full DC
 * and chroma first, two-bit successive approximation, 4:4:4, grey), then fed
 * in small pieces at 1/8, 1/4 and 1/2: where the decoder settles, and what
 * it gives then against the whole file's decode at the same plan — equal at
 * tolerance 0; within the tolerance (plus one level of rounding on each
 * side) and at least 45 dB above it. Skipped (77) without cjpeg/djpeg.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sd_test.h"
#include "sd_test_util.h"

static char dir[64];
static int verbose;

/* mozjpeg's kind of script: the DC of every component whole, the chroma
 * whole, then luma in two bands with one bit of successive approximation. */
static const char *SCRIPT_MOZ = "0 1 2: 0 0 0 0;\n1: 1 63 0 0;\n2: 1 63 0 0;\n0: 1 5 0 1;\n"
                                "0: 6 63 0 1;\n0: 1 63 1 0;\n";
/* DC with two bits held back, refined one at a time. */
static const char *SCRIPT_SA2 = "0 1 2: 0 0 0 2;\n0: 1 5 0 2;\n1: 1 63 0 1;\n2: 1 63 0 1;\n"
                                "0: 6 63 0 2;\n0 1 2: 0 0 2 1;\n0: 1 63 2 1;\n0 1 2: 0 0 1 0;\n"
                                "1: 1 63 1 0;\n2: 1 63 1 0;\n0: 1 63 1 0;\n";

typedef struct {
    const char *name;
    const char *args; /* cjpeg's, after -quality */
    const char *script; /* written to a file and passed with -scans, or NULL */
} variant;

static const variant VARIANTS[] = {
    {"default", "-progressive", NULL},
    {"moz", "", NULL /* SCRIPT_MOZ */},
    {"sa2", "", NULL /* SCRIPT_SA2 */},
    {"444", "-progressive -sample 1x1", NULL},
    {"grey", "-progressive -grayscale", NULL},
};

/* cjpeg's progressive file of `ppm` at `quality` under variant `v`. */
static uint8_t *make(const char *ppm, int v, int quality, size_t *n)
{
    char out[160], cmd[800], scans[200] = "";
    const char *script = v == 1 ? SCRIPT_MOZ : v == 2 ? SCRIPT_SA2 : NULL;
    if (script) {
        char path[160];
        snprintf(path, sizeof path, "%s/scans%d.txt", dir, v);
        if (sd_write_file(path, script, strlen(script)) != 0)
            return NULL;
        snprintf(scans, sizeof scans, "-scans %s", path);
    }
    snprintf(out, sizeof out, "%s/p.jpg", dir);
    snprintf(cmd, sizeof cmd, "cjpeg -quality %d %s %s -outfile %s %s", quality, VARIANTS[v].args, scans, out, ppm);
    if (sd_run_quiet(cmd) != 0)
        return NULL;
    return sd_read_file(out, n);
}

/* Decode `data` for a `box` thumbnail at margin 1, `piece` bytes a push,
 * tolerance `levels`. *used: the bytes pushed when it settled (n if not). */
static int decode(const uint8_t *data, size_t n, uint32_t box, int levels, size_t piece, size_t *used,
                  int64_t *bound, sd_bitmap **out)
{
    sd_decoder *d;
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_MAX_PIXEL_SIZE, box));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_SHRINK_ON_LOAD_MARGIN, 1));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_SETTLE_LEVELS, levels));
    size_t off = 0;
    int64_t settled = 0;
    while (off < n && !settled) {
        size_t k = n - off < piece ? n - off : piece;
        ASSERT_OK(sd_decoder_push(d, data + off, k));
        off += k;
        ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_SETTLED, &settled));
    }
    *used = off;
    ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_SETTLE_BOUND, bound));
    ASSERT_OK(sd_decoder_finish(d));
    int64_t complete = 0;
    ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_COMPLETE, &complete));
    ASSERT_EQ(complete, 1);
    ASSERT_OK(sd_decoder_take_bitmap(d, out));
    sd_decoder_free(d);
    return 0;
}

static double psnr(const sd_bitmap *a, const sd_bitmap *b)
{
    double se = 0;
    size_t count = 0;
    for (uint32_t y = 0; y < sd_bitmap_height(a); y++) {
        const uint8_t *p = sd_bitmap_pixels(a) + (size_t)y * sd_bitmap_stride(a);
        const uint8_t *q = sd_bitmap_pixels(b) + (size_t)y * sd_bitmap_stride(b);
        for (uint32_t x = 0; x < sd_bitmap_width(a) * 4; x++, count++)
            se += (double)(p[x] - q[x]) * (p[x] - q[x]);
    }
    return se == 0 ? INFINITY : 10 * log10(255.0 * 255.0 * (double)count / se);
}

/* Every variant, quality and scale of one photo: where it settles at
 * tolerances 0 to 3, and what it gives then. `stats` sums the bytes read
 * (of [0]: every file, [1..4]: at each tolerance 0..3) at 1/8. */
static int check_photo(const char *ppm, uint32_t width, double stats[5])
{
    static const int qualities[] = {90, 75, 95};
    /* under valgrind (which checks the library's memory, not these values
     * again): one quality */
    size_t nq = sd_under_valgrind() ? 1 : sizeof qualities / sizeof *qualities;
    for (size_t v = 0; v < sizeof VARIANTS / sizeof *VARIANTS; v++) {
        for (size_t qi = 0; qi < nq; qi++) {
            size_t n;
            uint8_t *jpg = make(ppm, (int)v, qualities[qi], &n);
            ASSERT_NOT_NULL(jpg);
            for (uint32_t den = 8; den >= 2; den /= 2) {
                /* the box is the scale's own size (no filter: the bound
                 * holds exactly), then 10% less (the filter may add one) */
                for (int filtered = 0; filtered <= 1; filtered++) {
                    uint32_t box = (width + den - 1) / den;
                    if (filtered)
                        box = box * 9 / 10;
                    sd_bitmap *whole = NULL;
                    size_t used;
                    int64_t bound;
                    ASSERT_OK(decode(jpg, n, box, 0, n, &used, &bound, &whole));
                    if (den == 8 && !filtered)
                        stats[0] += (double)n;
                    for (int levels = 0; levels <= 3; levels++) {
                        sd_bitmap *early = NULL;
                        ASSERT_OK(decode(jpg, n, box, levels, 1024, &used, &bound, &early));
                        int diff = sd_bitmap_max_diff(early, whole);
                        double db = psnr(early, whole);
                        if (den == 8 && !filtered)
                            stats[1 + levels] += (double)used;
                        if (verbose)
                            printf("  %-7s q%d 1/%u box %4u tol %d: %5.1f%% of %7zu bytes, bound %.2f, max diff %d, %.1f dB\n",
                                   VARIANTS[v].name, qualities[qi], den, box, levels,
                                   100.0 * (double)used / (double)n, n, (double)bound / 100, diff, db);
                        ASSERT(bound <= levels * 100);
                        if (levels == 0)
                            ASSERT_EQ(diff, 0); /* exact: the whole file's, byte for byte */
                        ASSERT(diff <= levels + filtered);
                        ASSERT(db >= 45);
                        sd_bitmap_free(early);
                    }
                    sd_bitmap_free(whole);
                }
            }
            free(jpg);
        }
    }
    return 0;
}

static int test_bound(void)
{
    const char *corpus = sd_corpus_dir();
    ASSERT_NOT_NULL(corpus);
    static const struct {
        const char *path;
        uint32_t width;
    } photos[] = {{"exif-orientation/Landscape_1.jpg", 1800}, {"jpeg/jpeg-decoder/progressive3.jpg", 650}};
    double stats[5] = {0, 0, 0, 0, 0};
    for (size_t p = sd_under_valgrind() ? 1 : 0; p < sizeof photos / sizeof *photos; p++) {
        char src[512], ppm[160], cmd[800];
        snprintf(src, sizeof src, "%s/%s", corpus, photos[p].path);
        snprintf(ppm, sizeof ppm, "%s/photo.ppm", dir);
        snprintf(cmd, sizeof cmd, "djpeg -outfile %s %s", ppm, src);
        ASSERT_EQ(sd_run_quiet(cmd), 0);
        if (verbose)
            printf(" %s\n", photos[p].path);
        ASSERT_OK(check_photo(ppm, photos[p].width, stats));
    }
    printf("  at 1/8, bytes read of all files: %.1f%% exact, %.1f%% / %.1f%% / %.1f%% at 1 / 2 / 3 levels\n",
           100 * stats[1] / stats[0], 100 * stats[2] / stats[0], 100 * stats[3] / stats[0], 100 * stats[4] / stats[0]);
    /* it does stop early, and a tolerance reads no more than exactness */
    if (sd_under_valgrind())
        return 0;
    ASSERT(stats[1] < 0.75 * stats[0]);
    ASSERT(stats[2] <= stats[1] && stats[4] < stats[1]);
    return 0;
}

int main(int argc, char **argv)
{
    if (sd_run_quiet("command -v cjpeg && command -v djpeg") != 0) {
        printf("skipped: cjpeg/djpeg (libjpeg-turbo-progs) are not installed\n");
        return 77;
    }
    verbose = getenv("SD_TEST_VERBOSE") != NULL;
    snprintf(dir, sizeof dir, "/tmp/sdsettle.XXXXXX");
    if (mkdtemp(dir) == NULL)
        return 1;
    static const sd_test_case tests[] = {
        {"bound", test_bound},
        {NULL, NULL},
    };
    int rc = sd_test_run(tests, argc, argv);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    sd_run_quiet(cmd);
    return rc;
}
