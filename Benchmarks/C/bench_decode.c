/*
 * bench_decode.c — `sdcore-bench decode`: single-thread decode throughput of
 * libsdcore against its own ceilings, measured in the same run:
 *   JPEG: TurboJPEG tjDecompress2 to BGRA (same IDCT and upsampling);
 *   PNG:  libpng's simplified API to BGRA plus a separate premultiply pass;
 *   thumbnails: our 1/8 DCT-scaled decode vs our full decode (and
 *   TurboJPEG's own 1/8 vs full, for reference), with peak RSS;
 *   previews: a progressive JPEG fed in 16 KiB chunks with previews on vs
 *   one plain decode.
 * Results are source megapixels per second (best of several runs per file)
 * and ratios. Without --corpus a photo-like corpus is generated in memory.
 *
 * Buffer discipline, like for like: in the main rows every side writes into
 * reused, pre-faulted memory — the baselines into one destination buffer
 * kept across images (grown and touched once), ours into bitmaps the pixel
 * pool recycles, its limit raised from the default 64 MiB to 256 MiB for
 * these rows (the pool keeps a canvas up to half its limit: a 12 MP canvas
 * is 48 MB) — so no side pays page faults the other does not. The
 * "fresh memory" rows give every side a new allocation per image instead
 * (baselines: malloc/free; ours: the pixel pool off). Per-image setup is
 * the same on both sides: a new decoder handle for each image (sd_decode,
 * tjInitDecompress, png_image_begin_read). One thread throughout.
 */
#include <dirent.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <png.h>
#include <turbojpeg.h>
#include <jconfig.h> /* LIBJPEG_TURBO_VERSION_NUMBER */

#include <sdcore.h>

#include "../../Tests/C/sd_test_encode.h"

typedef struct {
    char name[256];
    unsigned char *data;
    size_t len;
    sd_format format;
    int width, height, progressive;
} bench_file;

static bench_file files[512];
static int nfiles;
static double min_seconds = 0.25; /* per file and method */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- corpus ---- */

static unsigned rng = 12345;
static unsigned rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

/* Photo-like content: octaves of smooth value noise plus fine grain, so JPEG
 * lands near 2 bits per pixel like real photos. */
sd_bitmap *bench_photo(int w, int h, int alpha);
sd_bitmap *bench_photo(int w, int h, int alpha)
{
    sd_bitmap *b;
    if (sd_bitmap_new((uint32_t)w, (uint32_t)h, &b) != SD_OK)
        return NULL;
    enum { G = 33 };
    static float grid[4][3][G][G];
    for (int o = 0; o < 4; o++)
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < G; y++)
                for (int x = 0; x < G; x++)
                    grid[o][c][y][x] = (float)(rnd() % 1000) / 1000.0f;
    uint8_t *row = malloc((size_t)w * 4);
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            for (int c = 0; c < 3; c++) {
                float v = 0, amp = 0.55f;
                for (int o = 0; o < 4; o++, amp *= 0.5f) {
                    float cells = (float)(2 << o);
                    float fx = (float)x / (float)w * cells, fy = (float)y / (float)h * cells;
                    int ix = (int)fx, iy = (int)fy;
                    float tx = fx - (float)ix, ty = fy - (float)iy;
                    float a = grid[o][c][iy][ix], bb = grid[o][c][iy][ix + 1];
                    float cc = grid[o][c][iy + 1][ix], d = grid[o][c][iy + 1][ix + 1];
                    v += amp * ((a * (1 - tx) + bb * tx) * (1 - ty) + (cc * (1 - tx) + d * tx) * ty);
                }
                v = v * 230.0f + (float)(rnd() % 24);
                row[x * 4 + c] = (uint8_t)(v > 255 ? 255 : v);
            }
            float dx = (float)x / (float)w - 0.5f, dy = (float)y / (float)h - 0.5f;
            float a = 1.0f - 2.0f * sqrtf(dx * dx + dy * dy);
            row[x * 4 + 3] = alpha ? (uint8_t)(a < 0 ? 0 : a * 255) : 255;
        }
        sd_premultiply_rgba(row, sd_bitmap_pixels(b) + (size_t)y * sd_bitmap_stride(b), (size_t)w);
    }
    free(row);
    return b;
}

static void add_file(const char *name, unsigned char *data, size_t len)
{
    if (nfiles >= (int)(sizeof files / sizeof files[0]))
        return;
    sd_decoder *d;
    sd_decoder_new(&d);
    sd_decoder_push(d, data, len);
    int64_t w = 0, h = 0, p = 0;
    if (sd_decoder_get(d, SD_DEC_INFO_WIDTH, &w) != SD_OK) {
        sd_decoder_free(d);
        free(data);
        return; /* not an image we decode */
    }
    sd_decoder_get(d, SD_DEC_INFO_HEIGHT, &h);
    sd_decoder_get(d, SD_DEC_INFO_PROGRESSIVE, &p);
    bench_file *f = &files[nfiles++];
    snprintf(f->name, sizeof f->name, "%s", name);
    f->data = data;
    f->len = len;
    f->format = sd_sniff_format(data, len);
    f->width = (int)w;
    f->height = (int)h;
    f->progressive = (int)p;
    sd_decoder_free(d);
}

static void generate_corpus(void)
{
    static const int jpeg_sizes[][2] = {{640, 480}, {1024, 768}, {1600, 1200}, {2592, 1944}, {4000, 3000}};
    static const int prog_sizes[][2] = {{1024, 768}, {2592, 1944}};
    static const int png_sizes[][3] = {{640, 480, 1}, {1024, 768, 1}, {1600, 1200, 1}, {1600, 1200, 0}};
    char name[64];
    for (size_t i = 0; i < sizeof jpeg_sizes / sizeof jpeg_sizes[0]; i++) {
        sd_bitmap *b = bench_photo(jpeg_sizes[i][0], jpeg_sizes[i][1], 0);
        uint8_t *out;
        size_t n;
        enc_jpeg(b, 85, 0, &out, &n);
        snprintf(name, sizeof name, "photo-%dx%d.jpg", jpeg_sizes[i][0], jpeg_sizes[i][1]);
        add_file(name, out, n);
        sd_bitmap_free(b);
    }
    for (size_t i = 0; i < sizeof prog_sizes / sizeof prog_sizes[0]; i++) {
        sd_bitmap *b = bench_photo(prog_sizes[i][0], prog_sizes[i][1], 0);
        uint8_t *out;
        size_t n;
        enc_jpeg(b, 85, 1, &out, &n);
        snprintf(name, sizeof name, "photo-%dx%d-progressive.jpg", prog_sizes[i][0], prog_sizes[i][1]);
        add_file(name, out, n);
        sd_bitmap_free(b);
    }
    for (size_t i = 0; i < sizeof png_sizes / sizeof png_sizes[0]; i++) {
        sd_bitmap *b = bench_photo(png_sizes[i][0], png_sizes[i][1], png_sizes[i][2]);
        uint8_t *out;
        size_t n;
        enc_png(b, 6, &out, &n);
        snprintf(name, sizeof name, "photo-%dx%d-%s.png", png_sizes[i][0], png_sizes[i][1],
                 png_sizes[i][2] ? "rgba" : "rgb");
        add_file(name, out, n);
        sd_bitmap_free(b);
    }
}

static int load_corpus(const char *dir)
{
    DIR *dp = opendir(dir);
    if (dp == NULL)
        return -1;
    struct dirent *e;
    while ((e = readdir(dp)) != NULL) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *fp = fopen(path, "rb");
        if (fp == NULL)
            continue;
        fseek(fp, 0, SEEK_END);
        long n = ftell(fp);
        fseek(fp, 0, SEEK_SET);
        unsigned char *buf = n > 0 ? malloc((size_t)n) : NULL;
        if (buf && fread(buf, 1, (size_t)n, fp) == (size_t)n)
            add_file(e->d_name, buf, (size_t)n);
        else
            free(buf);
        fclose(fp);
    }
    closedir(dp);
    return 0;
}

/* ---- the decoders under test ---- */

typedef int (*decode_fn)(const bench_file *f);

static int ours_full(const bench_file *f)
{
    sd_bitmap *b;
    int rc = sd_decode(f->data, f->len, &b);
    sd_bitmap_free(b);
    return rc;
}

static int ours_eighth(const bench_file *f)
{
    sd_decoder *d;
    sd_bitmap *b = NULL;
    sd_decoder_new(&d);
    int longest = f->width > f->height ? f->width : f->height;
    sd_decoder_set(d, SD_DEC_MAX_PIXEL_SIZE, (longest + 7) / 8);
    sd_decoder_set(d, SD_DEC_SHRINK_ON_LOAD_MARGIN, 1); /* the DCT's 1/8 itself, as TurboJPEG's */
    int rc = sd_decoder_decode(d, f->data, f->len, &b);
    sd_bitmap_free(b);
    sd_decoder_free(d);
    return rc;
}

/* The baselines' destination: one buffer reused across images and touched
 * when it grows (what the pixel pool gives our side), or with fresh_memory
 * a new malloc per image. */
static int fresh_memory;
/* per thread: the threaded baseline gives each thread its own */
static _Thread_local unsigned char *reuse_buf;
static _Thread_local size_t reuse_cap;

static unsigned char *dst_get(size_t n)
{
    if (fresh_memory)
        return malloc(n);
    if (n > reuse_cap) {
        free(reuse_buf);
        reuse_buf = malloc(n);
        if (reuse_buf == NULL) {
            reuse_cap = 0;
            return NULL;
        }
        memset(reuse_buf, 0, n); /* pre-fault */
        reuse_cap = n;
    }
    return reuse_buf;
}

static void dst_put(unsigned char *p)
{
    if (fresh_memory)
        free(p);
}

static int tj_decode(const bench_file *f, int w, int h)
{
    tjhandle tj = tjInitDecompress();
    unsigned char *dst = dst_get((size_t)w * h * 4);
    int rc = dst ? tjDecompress2(tj, f->data, (unsigned long)f->len, dst, w, 0, h, TJPF_BGRA, 0) : -1;
    dst_put(dst);
    tjDestroy(tj);
    return rc;
}

static int tj_full(const bench_file *f) { return tj_decode(f, f->width, f->height); }
static int tj_eighth(const bench_file *f) { return tj_decode(f, (f->width + 7) / 8, (f->height + 7) / 8); }

/* What a libpng user writes today: simplified API to BGRA, then premultiply. */
static int libpng_simplified(const bench_file *f)
{
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&img, f->data, f->len))
        return -1;
    img.format = PNG_FORMAT_BGRA;
    size_t n = PNG_IMAGE_SIZE(img);
    unsigned char *buf = dst_get(n);
    if (buf == NULL) {
        png_image_free(&img);
        return -1;
    }
    int ok = png_image_finish_read(&img, NULL, buf, 0, NULL);
    for (size_t i = 0; i < n; i += 4) {
        unsigned a = buf[i + 3];
        if (a == 255)
            continue;
        buf[i] = (unsigned char)((buf[i] * a + 127) / 255);
        buf[i + 1] = (unsigned char)((buf[i + 1] * a + 127) / 255);
        buf[i + 2] = (unsigned char)((buf[i + 2] * a + 127) / 255);
    }
    dst_put(buf);
    return ok ? 0 : -1;
}

static int64_t preview_interval = SD_DEFAULT_PREVIEW_INTERVAL_MS;
static int64_t previews_seen;

/* Progressive load: 16 KiB chunks, previews on, a snapshot taken whenever
 * the decoder has rendered a new one (what the transfer loop will deliver). */
static int ours_streamed_previews(const bench_file *f)
{
    sd_decoder *d;
    sd_bitmap *b = NULL;
    sd_decoder_new(&d);
    sd_decoder_set(d, SD_DEC_PREVIEWS, 1);
    sd_decoder_set(d, SD_DEC_PREVIEW_INTERVAL_MS, preview_interval);
    int64_t seen = 0;
    int rc = SD_OK;
    for (size_t pos = 0; pos < f->len && rc == SD_OK; pos += 16384) {
        size_t n = f->len - pos < 16384 ? f->len - pos : 16384;
        rc = sd_decoder_push(d, f->data + pos, n);
        int64_t p = 0;
        sd_decoder_get(d, SD_DEC_INFO_PREVIEWS, &p);
        if (p > seen) {
            seen = p;
            sd_bitmap *snap = NULL;
            sd_decoder_snapshot(d, &snap);
            sd_bitmap_free(snap);
        }
    }
    previews_seen += seen;
    if (rc == SD_OK && (rc = sd_decoder_finish(d)) == SD_OK)
        rc = sd_decoder_take_bitmap(d, &b);
    sd_bitmap_free(b);
    sd_decoder_free(d);
    return rc;
}

/* Best time of repeated runs, methods interleaved so drift hits all alike. */
static void time_methods(const bench_file *f, decode_fn *fns, int nfn, double *best)
{
    for (int m = 0; m < nfn; m++)
        best[m] = 1e30;
    double spent = 0;
    int rounds = 0;
    while (rounds < 3 || (spent < min_seconds * nfn && rounds < 200)) {
        for (int m = 0; m < nfn; m++) {
            double t0 = now();
            if (fns[m](f) != 0) {
                fprintf(stderr, "sdcore-bench: %s failed on %s\n", m ? "baseline" : "ours", f->name);
                exit(1);
            }
            double t = now() - t0;
            spent += t;
            if (t < best[m])
                best[m] = t;
        }
        rounds++;
    }
}

typedef struct {
    double mp, t_ours, t_base;
} agg;

/* JPEG full decodes at the library's default settings (the pixel pool at
 * its default limit): every JPEG once per round, in corpus order, ours then
 * tjDecompress2 (one reused, pre-faulted buffer) file by file, so each of our
 * canvases comes from whatever the pool kept from the files before it — what
 * a program calling sd_decode on a stream of photos gets. Each side's time
 * per file is its best over the rounds. */
static void time_default_settings(agg *a)
{
    enum { ROUNDS = 7 };
    double best[2][4096];
    int n = nfiles < 4096 ? nfiles : 4096;
    for (int i = 0; i < n; i++)
        best[0][i] = best[1][i] = 1e30;
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < n; i++) {
            const bench_file *f = &files[i];
            if (f->format != SD_FORMAT_JPEG)
                continue;
            decode_fn fns[2] = {ours_full, tj_full};
            for (int m = 0; m < 2; m++) {
                double t0 = now();
                if (fns[m](f) != 0) {
                    fprintf(stderr, "sdcore-bench: %s failed on %s\n", m ? "baseline" : "ours", f->name);
                    exit(1);
                }
                double t = now() - t0;
                if (t < best[m][i])
                    best[m][i] = t;
            }
        }
    for (int i = 0; i < n; i++)
        if (files[i].format == SD_FORMAT_JPEG) {
            a->mp += (double)files[i].width * files[i].height / 1e6;
            a->t_ours += best[0][i];
            a->t_base += best[1][i];
        }
}

/* Peak RSS (KiB) of a child that decodes `f` once with `fn` (NULL: only loads). */
static long child_peak_kib(const bench_file *f, decode_fn fn)
{
    pid_t pid = fork();
    if (pid == 0) {
        int rc = fn ? fn(f) : 0;
        _exit(rc == 0 ? 0 : 1);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    return ru.ru_maxrss;
}


/* --baseline-only: one thread decoding every file once with the libraries
 * alone (tjDecompress2 / libpng simplified + premultiply, one reused
 * pre-faulted buffer), best of at least three rounds per file; prints the
 * total seconds as JSON. */
static int baseline_seconds(void)
{
    double total = 0, mp = 0, best;
    for (int i = 0; i < nfiles; i++) {
        decode_fn fn = files[i].format == SD_FORMAT_JPEG ? tj_full : libpng_simplified;
        time_methods(&files[i], &fn, 1, &best);
        total += best;
        mp += (double)files[i].width * files[i].height / 1e6;
    }
    printf("{\"bench\":\"decode-baseline\",\"files\":%d,\"megapixels\":%.1f,\"seconds\":%.4f}\n", nfiles, mp, total);
    return 0;
}

/* --baseline-only --threads N: N threads decoding every file once between
 * them (each takes the next file), best wall time of three rounds after an
 * untimed one. Each thread writes into its own buffer, sized for the
 * largest file and pre-faulted before any timing, kept across rounds. The
 * floor on N cores for any program that must decode these files: no
 * network, no loop, no library in the way. */
static int next_file;

typedef struct {
    unsigned char *buf;
    size_t cap;
    int failed;
} baseline_thread;

static void *baseline_worker(void *arg)
{
    baseline_thread *bt = arg;
    reuse_buf = bt->buf; /* dst_get finds it big enough: never grows */
    reuse_cap = bt->cap;
    for (int i; (i = __atomic_fetch_add(&next_file, 1, __ATOMIC_RELAXED)) < nfiles;) {
        decode_fn fn = files[i].format == SD_FORMAT_JPEG ? tj_full : libpng_simplified;
        if (fn(&files[i]) != 0)
            bt->failed = 1;
    }
    reuse_buf = NULL;
    reuse_cap = 0;
    return NULL;
}

static int baseline_threaded_seconds(int threads)
{
    double best = 1e30, mp = 0;
    size_t largest = 0;
    for (int i = 0; i < nfiles; i++) {
        mp += (double)files[i].width * files[i].height / 1e6;
        size_t n = (size_t)files[i].width * files[i].height * 4;
        largest = n > largest ? n : largest;
    }
    baseline_thread bt[64];
    for (int t = 0; t < threads; t++) {
        bt[t].cap = largest;
        bt[t].buf = malloc(largest);
        if (bt[t].buf == NULL) {
            fprintf(stderr, "sdcore-bench: out of memory\n");
            exit(1);
        }
        memset(bt[t].buf, 0, largest); /* pre-fault */
    }
    for (int round = 0; round < 4; round++) { /* the first one warms */
        pthread_t tid[64];
        next_file = 0;
        double t0 = now();
        for (int t = 0; t < threads; t++) {
            bt[t].failed = 0;
            if (pthread_create(&tid[t], NULL, baseline_worker, &bt[t]) != 0) {
                fprintf(stderr, "sdcore-bench: cannot start a thread\n");
                exit(1);
            }
        }
        for (int t = 0; t < threads; t++)
            pthread_join(tid[t], NULL);
        double t = now() - t0;
        for (int k = 0; k < threads; k++)
            if (bt[k].failed) {
                fprintf(stderr, "sdcore-bench: a baseline decode failed\n");
                exit(1);
            }
        if (round > 0 && t < best)
            best = t;
    }
    for (int t = 0; t < threads; t++)
        free(bt[t].buf);
    printf("{\"bench\":\"decode-baseline\",\"files\":%d,\"megapixels\":%.1f,\"threads\":%d,\"seconds\":%.4f}\n",
           nfiles, mp, threads, best);
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: sdcore-bench decode [--corpus DIR] [--json] [--quick] [--baseline-only [--threads N]]\n"
                    "       sdcore-bench fetch [--count N] [--rounds N] [--quick] [--json]\n"
                    "       sdcore-bench anim [--corpus-anim DIR] [--json]\n"
                    "       sdcore-bench encode [--quick] [--json]\n"
                    "       sdcore-bench make-anim OUT.gif [--frames N] [--size S] [--delay-ms D]\n"
                    "       sdcore-bench anim-memory [FILE.gif] [--kept-mib N]... [--json]\n"
                    "       sdcore-bench thumbnail [--photos N] [--rounds N] [--box PX] [--sheet FILE.png] [--json]\n"
                    "       sdcore-bench color [--quick] [--json]\n"
                    "       sdcore-bench formats [--quick] [--rounds N] [--json]\n");
}

int bench_fetch_main(int argc, char **argv); /* bench_fetch.c */
int bench_anim_main(int argc, char **argv);  /* bench_anim.c */
int bench_encode_main(int argc, char **argv); /* bench_encode.c */
int bench_make_anim_main(int argc, char **argv); /* bench_anim.c */
int bench_anim_memory_main(int argc, char **argv); /* bench_anim.c */
#ifdef SD_BENCH_VIPS
int bench_thumbnail_main(int argc, char **argv); /* bench_thumbnail.c */
#endif
int bench_color_main(int argc, char **argv); /* bench_color.c */
int bench_formats_main(int argc, char **argv); /* bench_formats.c */
int bench_load_main(int argc, char **argv); /* bench_load.c */

int main(int argc, char **argv)
{
    const char *corpus = NULL;
    int json = 0, baseline_only = 0, threads = 1;
    if (argc >= 2 && strcmp(argv[1], "fetch") == 0)
        return bench_fetch_main(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "anim") == 0)
        return bench_anim_main(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "encode") == 0)
        return bench_encode_main(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "make-anim") == 0)
        return bench_make_anim_main(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "anim-memory") == 0)
        return bench_anim_memory_main(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "color") == 0)
        return bench_color_main(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "formats") == 0)
        return bench_formats_main(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "load") == 0)
        return bench_load_main(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "thumbnail") == 0) {
#ifdef SD_BENCH_VIPS
        return bench_thumbnail_main(argc, argv);
#else
        fprintf(stderr, "sdcore-bench thumbnail: built without libvips (install libvips-dev: make deps-test)\n");
        return 2;
#endif
    }
    if (argc < 2 || strcmp(argv[1], "decode") != 0) {
        usage();
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--corpus") == 0 && i + 1 < argc)
            corpus = argv[++i];
        else if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--quick") == 0)
            min_seconds = 0.02;
        else if (strcmp(argv[i], "--baseline-only") == 0)
            baseline_only = 1;
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc && atoi(argv[i + 1]) >= 1 && atoi(argv[i + 1]) <= 64)
            threads = atoi(argv[++i]);
        else {
            usage();
            return 2;
        }
    }
    if (corpus) {
        if (load_corpus(corpus) < 0) {
            fprintf(stderr, "sdcore-bench: cannot read %s\n", corpus);
            return 1;
        }
    } else {
        generate_corpus();
    }
    if (nfiles == 0) {
        fprintf(stderr, "sdcore-bench: no JPEG or PNG files\n");
        return 1;
    }
    if (baseline_only) /* what one thread (or N) needs to decode the corpus (scripts/bench-sdimage-fetch.py) */
        return threads > 1 ? baseline_threaded_seconds(threads) : baseline_seconds();

    agg jpeg = {0}, eighth = {0}, tj8 = {0}, png = {0}, prev = {0}, prev_all = {0}, jpeg_default = {0};
    agg prog8 = {0}; /* the 1/8 rows' progressive files alone: ours reads only the scans 1/8 needs */
    time_default_settings(&jpeg_default); /* first: the pool as a program gets it */
    size_t default_pool = sd_bitmap_pool_limit(256u << 20); /* every canvas recycled, as the baselines' buffer is */
    const bench_file *largest = NULL;
    int njpeg = 0, npng = 0, nprog = 0;
    for (int i = 0; i < nfiles; i++) {
        const bench_file *f = &files[i];
        double mp = (double)f->width * f->height / 1e6, best[3];
        if (f->format == SD_FORMAT_JPEG) {
            decode_fn full[2] = {ours_full, tj_full};
            time_methods(f, full, 2, best);
            jpeg.mp += mp, jpeg.t_ours += best[0], jpeg.t_base += best[1];
            double t_full_ours = best[0], t_full_tj = best[1];
            decode_fn small[2] = {ours_eighth, tj_eighth};
            time_methods(f, small, 2, best);
            eighth.mp += mp, eighth.t_ours += best[0], eighth.t_base += t_full_ours;
            tj8.mp += mp, tj8.t_ours += best[1], tj8.t_base += t_full_tj;
            if (f->progressive)
                prog8.mp += mp, prog8.t_ours += best[0], prog8.t_base += best[1];
            njpeg++;
            if (!f->progressive && (largest == NULL || f->width * f->height > largest->width * largest->height))
                largest = f;
            if (f->progressive) {
                decode_fn stream[1] = {ours_streamed_previews};
                preview_interval = SD_DEFAULT_PREVIEW_INTERVAL_MS;
                time_methods(f, stream, 1, best);
                prev.mp += mp, prev.t_ours += best[0], prev.t_base += t_full_ours;
                preview_interval = 0;
                previews_seen = 0;
                time_methods(f, stream, 1, best);
                prev_all.mp += mp, prev_all.t_ours += best[0], prev_all.t_base += t_full_ours;
                nprog++;
            }
        } else {
            decode_fn fns[2] = {ours_full, libpng_simplified};
            time_methods(f, fns, 2, best);
            png.mp += mp, png.t_ours += best[0], png.t_base += best[1];
            npng++;
        }
    }
    /* the same full decodes, every side allocating fresh memory per image */
    agg jpeg_fresh = {0}, png_fresh = {0};
    fresh_memory = 1;
    sd_bitmap_pool_limit(0);
    for (int i = 0; i < nfiles; i++) {
        const bench_file *f = &files[i];
        double mp = (double)f->width * f->height / 1e6, best[2];
        decode_fn fns[2] = {ours_full, f->format == SD_FORMAT_JPEG ? tj_full : libpng_simplified};
        time_methods(f, fns, 2, best);
        agg *a = f->format == SD_FORMAT_JPEG ? &jpeg_fresh : &png_fresh;
        a->mp += mp, a->t_ours += best[0], a->t_base += best[1];
    }
    sd_bitmap_pool_limit(default_pool);
    fresh_memory = 0;
    long rss_base = -1, rss_full = -1, rss_eighth = -1;
    if (largest) {
        rss_base = child_peak_kib(largest, NULL);
        rss_full = child_peak_kib(largest, ours_full);
        rss_eighth = child_peak_kib(largest, ours_eighth);
    }

#define MPS(a, t) ((a).mp / (a).t)
#define RATIO(a) ((a).t_base / (a).t_ours)
    if (json) {
        printf("{\"bench\":\"decode\",\"corpus\":\"%s\",\"files\":{\"jpeg\":%d,\"progressive\":%d,\"png\":%d},\n",
               corpus ? corpus : "generated", njpeg, nprog, npng);
        if (njpeg) {
            printf(" \"jpeg_full_default_settings\":{\"ours_mps\":%.1f,\"turbojpeg_mps\":%.1f,\"ratio\":%.3f},\n",
                   MPS(jpeg_default, t_ours), MPS(jpeg_default, t_base), RATIO(jpeg_default));
            printf(" \"jpeg_full\":{\"ours_mps\":%.1f,\"turbojpeg_mps\":%.1f,\"ratio\":%.3f,"
                   "\"ours_seconds\":%.4f,\"turbojpeg_seconds\":%.4f},\n",
                   MPS(jpeg, t_ours), MPS(jpeg, t_base), RATIO(jpeg), jpeg.t_ours, jpeg.t_base);
            printf(" \"jpeg_full_fresh_memory\":{\"ours_mps\":%.1f,\"turbojpeg_mps\":%.1f,\"ratio\":%.3f},\n",
                   MPS(jpeg_fresh, t_ours), MPS(jpeg_fresh, t_base), RATIO(jpeg_fresh));
            printf(" \"jpeg_eighth\":{\"ours_mps\":%.1f,\"ratio_vs_ours_full\":%.3f,\"turbojpeg_ratio_vs_full\":%.3f,"
                   "\"ratio_vs_turbojpeg_eighth\":%.3f,\"progressive_ratio_vs_turbojpeg_eighth\":%.3f},\n",
                   MPS(eighth, t_ours), RATIO(eighth), RATIO(tj8), tj8.t_ours / eighth.t_ours,
                   prog8.mp > 0 ? RATIO(prog8) : 0.0);
            printf(" \"peak_rss_kib\":{\"file\":\"%s\",\"baseline\":%ld,\"full\":%ld,\"eighth\":%ld},\n",
                   largest ? largest->name : "", rss_base, rss_full, rss_eighth);
        }
        if (nprog)
            printf(" \"progressive_previews\":{\"cost_vs_plain\":%.3f,\"cost_vs_plain_every_scan\":%.3f},\n",
                   1.0 / RATIO(prev), 1.0 / RATIO(prev_all));
        if (npng)
            printf(" \"png_full\":{\"ours_mps\":%.1f,\"libpng_simplified_premultiply_mps\":%.1f,\"ratio\":%.3f},\n",
                   MPS(png, t_ours), MPS(png, t_base), RATIO(png));
        if (npng)
            printf(" \"png_full_fresh_memory\":{\"ours_mps\":%.1f,\"libpng_simplified_premultiply_mps\":%.1f,"
                   "\"ratio\":%.3f},\n",
                   MPS(png_fresh, t_ours), MPS(png_fresh, t_base), RATIO(png_fresh));
        printf(" \"libjpeg_turbo\":\"%d\",\"libpng\":\"%s\"}\n", LIBJPEG_TURBO_VERSION_NUMBER,
               PNG_LIBPNG_VER_STRING);
        return 0;
    }
    printf("sdcore-bench decode: single thread, source megapixels/s (best of repeated runs per file);\n"
           "the baselines write into one reused, pre-faulted buffer; ours into canvases from the pixel\n"
           "pool — at its default limit in the default-settings row (every JPEG in turn, 7 rounds), at\n"
           "256 MiB in the others (every canvas recycled) — unless the row says fresh memory\n");
    printf("corpus: %s — %d JPEG (%d progressive), %d PNG; libjpeg-turbo %d, libpng %s\n\n",
           corpus ? corpus : "generated photo-like images, 0.3-12 MP", njpeg, nprog, npng,
           LIBJPEG_TURBO_VERSION_NUMBER, PNG_LIBPNG_VER_STRING);
    printf("%-38s %10s %10s %8s %8s\n", "", "ours", "baseline", "ratio", "target");
    if (njpeg)
        printf("%-38s %10.1f %10.1f %8.3f %8s\n", "JPEG full decode, default settings",
               MPS(jpeg_default, t_ours), MPS(jpeg_default, t_base), RATIO(jpeg_default), ">=1.0");
    if (njpeg) {
        printf("%-38s %10.1f %10.1f %8.3f %8s\n", "JPEG full decode vs tjDecompress2 BGRA",
               MPS(jpeg, t_ours), MPS(jpeg, t_base), RATIO(jpeg), ">=1.0");
        printf("%-38s %10.1f %10.1f %8.3f %8s\n", "JPEG 1/8 (DCT) vs our full decode",
               MPS(eighth, t_ours), MPS(eighth, t_base), RATIO(eighth), "ref");
        printf("%-38s %10.1f %10.1f %8.3f %8s\n", "  (TurboJPEG's own 1/8 vs its full)",
               MPS(tj8, t_ours), MPS(tj8, t_base), RATIO(tj8), "ref");
        printf("%-38s %10.1f %10.1f %8.3f %8s\n", "JPEG 1/8 vs TurboJPEG's own 1/8",
               MPS(eighth, t_ours), MPS(tj8, t_ours), tj8.t_ours / eighth.t_ours, ">=0.98");
        if (prog8.mp > 0)
            printf("%-38s %10.1f %10.1f %8.3f %8s\n", "  progressive files alone", MPS(prog8, t_ours),
                   MPS(prog8, t_base), RATIO(prog8), "ref");
        if (largest)
            printf("%-38s %9.1fM %9.1fM %8s %8s\n", "  peak RSS over baseline, 1/8 vs full",
                   (rss_eighth - rss_base) / 1024.0, (rss_full - rss_base) / 1024.0, largest->name, "");
    }
    if (nprog) {
        printf("%-38s %10s %10s %8.3f %8s\n", "progressive 16 KiB chunks + previews", "", "cost x",
               1.0 / RATIO(prev), "<=3");
        printf("%-38s %10s %10s %8.3f %8s\n", "  (a preview after every scan)", "", "cost x",
               1.0 / RATIO(prev_all), "ref");
    }
    if (npng)
        printf("%-38s %10.1f %10.1f %8.3f %8s\n", "PNG vs libpng simplified + premultiply",
               MPS(png, t_ours), MPS(png, t_base), RATIO(png), ">=1.05");
    if (njpeg)
        printf("%-38s %10.1f %10.1f %8.3f %8s\n", "JPEG full, fresh memory per image",
               MPS(jpeg_fresh, t_ours), MPS(jpeg_fresh, t_base), RATIO(jpeg_fresh), "ref");
    if (npng)
        printf("%-38s %10.1f %10.1f %8.3f %8s\n", "PNG full, fresh memory per image",
               MPS(png_fresh, t_ours), MPS(png_fresh, t_base), RATIO(png_fresh), "ref");
    return 0;
}
