/*
 * bench_thumbnail.c — `sdcore-bench thumbnail`: thumbnails that fit in a
 * box (default 256x256), ours against libvips 8.14 in the same run, speed
 * and quality.
 *
 * Ours: sd_decoder with SD_DEC_MAX_PIXEL_SIZE and default settings (shrink
 * on load to 2x the box, then Lanczos-3), also the old way (shrink all the
 * way, box filter: SD_DEC_SHRINK_ON_LOAD_MARGIN 1 + SD_FILTER_BOX) for
 * reference. libvips: vips_thumbnail_buffer(buf, len, &out, N, "height", N)
 * + vips_image_write_to_memory (its default: shrink on load leaving 2x,
 * then Lanczos-3), VIPS_CONCURRENCY=1, vips_cache_set_max(0).
 * Like for like: one thread each, the encoded files in memory, the pixels
 * forced into memory on both sides (our bitmap; libvips' write_to_memory
 * buffer), a new decoder/pipeline per image, both sides' outputs freed
 * (ours to the pixel pool at its default limit, libvips' with g_free);
 * rounds interleaved (ours, libvips, the old way, per image), the median
 * round reported.
 *
 * Quality: PSNR (RGB, 8-bit) of each side's thumbnail against the bench's
 * own reference at the same size: the full-size decode (ours; bit-exact with
 * libjpeg/libpng) resampled by one exact Lanczos-3 pass in double
 * precision (separable, kernel stretched by the reduction, edges extended,
 * weights normalised). Median and worst per corpus.
 *
 * Corpora, generated in memory (deterministic): photo-like JPEGs (q85,
 * 0.3-12 MP) and PNGs, a quarter of the photos also as lossy WebP (q85;
 * libvips shrinks those on load too, by webpload's scale); odd-sized photos
 * (1411x1411, 741x500, 640x427, 1023x767, 2999x1999: sides the shrink
 * factors do not divide) as JPEG, PNG and WebP; and a high-frequency set (zone plate, 1-, 2- and
 * 3-px stripes, 4-px checkers, text-like noise) at 1-12 MP, as JPEG (q95)
 * and PNG.
 *
 * --resize: sd_bitmap_resample (Lanczos-3, what SDImageResizingTransformer
 * runs) against vips_resize (Lanczos-3) on the same in-memory bitmaps, MP/s.
 * --sheet FILE: a PNG of the zone plate's thumbnails side by side: the
 * reference, ours the old way, ours now, libvips.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vips/vips.h>

#include <sdcore.h>

#include "../../Tests/C/sd_test_encode.h"

sd_bitmap *bench_photo(int w, int h, int alpha); /* bench_decode.c */

typedef struct {
    char name[64];
    uint8_t *data;
    size_t len;
    int hf; /* 0 photos, 1 the high-frequency set, 2 odd-sized photos */
    int fmt; /* 0 JPEG, 1 PNG, 2 WebP */
    double psnr[4]; /* ours, libvips, ours the old way, ours at margin 1 (Lanczos-3) */
    double t[3][5]; /* seconds per round */
} tfile;

static tfile files[400];
static int nfiles;
static int box = 256;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the reference: exact Lanczos-3 in double ---- */

static double lanczos3(double x)
{
    if (x == 0)
        return 1;
    if (fabs(x) >= 3)
        return 0;
    double px = M_PI * x;
    return 3 * sin(px) * sin(px / 3) / (px * px);
}

typedef struct {
    int first, count;
    double *w;
} rrun;

static rrun *ref_axis(int n, int m)
{
    rrun *r = calloc((size_t)m, sizeof *r);
    double scale = (double)n / m, s = scale > 1 ? scale : 1, reach = 3 * s;
    for (int i = 0; i < m; i++) {
        double c = (i + 0.5) * scale;
        int lo = (int)floor(c - reach - 0.5), hi = (int)ceil(c + reach - 0.5);
        int f = lo < 0 ? 0 : lo, l = hi > n - 1 ? n - 1 : hi;
        r[i].first = f;
        r[i].count = l - f + 1;
        r[i].w = calloc((size_t)r[i].count, sizeof(double));
        double sum = 0;
        for (int j = lo; j <= hi; j++) {
            double w = n == m ? (j == i) : lanczos3((j + 0.5 - c) / s);
            int k = j < f ? f : (j > l ? l : j);
            r[i].w[k - f] += w;
            sum += w;
        }
        for (int k = 0; k < r[i].count; k++)
            r[i].w[k] /= sum;
    }
    return r;
}

static void ref_free(rrun *r, int m)
{
    for (int i = 0; i < m; i++)
        free(r[i].w);
    free(r);
}

/* Straight RGB doubles of the reference at w x h (opaque inputs). */
static double *reference(const sd_bitmap *full, int w, int h)
{
    int sw = (int)sd_bitmap_width(full), sh = (int)sd_bitmap_height(full);
    rrun *H = ref_axis(sw, w), *V = ref_axis(sh, h);
    double *tmp = malloc(sizeof(double) * (size_t)sw * 3), *out = malloc(sizeof(double) * (size_t)w * h * 3);
    for (int y = 0; y < h; y++) {
        memset(tmp, 0, sizeof(double) * (size_t)sw * 3);
        for (int k = 0; k < V[y].count; k++) {
            const uint8_t *row = sd_bitmap_pixels(full) + (size_t)(V[y].first + k) * sd_bitmap_stride(full);
            double wk = V[y].w[k];
            for (int x = 0; x < sw; x++) {
                uint32_t p;
                memcpy(&p, row + x * 4, 4);
                tmp[x * 3] += wk * ((p >> 16) & 255);
                tmp[x * 3 + 1] += wk * ((p >> 8) & 255);
                tmp[x * 3 + 2] += wk * (p & 255);
            }
        }
        for (int x = 0; x < w; x++) {
            double acc[3] = {0, 0, 0};
            for (int k = 0; k < H[x].count; k++)
                for (int c = 0; c < 3; c++)
                    acc[c] += H[x].w[k] * tmp[(H[x].first + k) * 3 + c];
            for (int c = 0; c < 3; c++)
                out[((size_t)y * w + x) * 3 + c] = fmin(255, fmax(0, round(acc[c])));
        }
    }
    ref_free(H, w);
    ref_free(V, h);
    free(tmp);
    return out;
}

static double psnr(const double *ref, const uint8_t *rgb, size_t n)
{
    double se = 0;
    for (size_t i = 0; i < n; i++) {
        double d = ref[i] - rgb[i];
        se += d * d;
    }
    return se == 0 ? 99 : 10 * log10(255.0 * 255.0 / (se / n));
}

/* ---- the two sides ---- */

/* old: 0 ours, 1 the old way (margin 1 + box), 2 margin 1 with Lanczos-3
 * (sdimage serve --shrink-margin 1, as imgproxy and thumbor shrink) */
static sd_bitmap *ours(const tfile *f, int old)
{
    sd_decoder *d;
    sd_bitmap *b = NULL;
    sd_decoder_new(&d);
    sd_decoder_set(d, SD_DEC_MAX_PIXEL_SIZE, box);
    if (old)
        sd_decoder_set(d, SD_DEC_SHRINK_ON_LOAD_MARGIN, 1);
    if (old == 1)
        sd_decoder_set(d, SD_DEC_RESAMPLE_FILTER, SD_FILTER_BOX);
    if (sd_decoder_decode(d, f->data, f->len, &b) != SD_OK)
        b = NULL;
    sd_decoder_free(d);
    return b;
}

/* libvips' thumbnail as straight RGB(A) bytes (g_free them). */
static uint8_t *vips_side(const tfile *f, int *w, int *h, int *bands)
{
    VipsImage *out = NULL;
    if (vips_thumbnail_buffer(f->data, f->len, &out, box, "height", box, NULL) != 0)
        return NULL;
    size_t size;
    uint8_t *mem = vips_image_write_to_memory(out, &size);
    *w = vips_image_get_width(out);
    *h = vips_image_get_height(out);
    *bands = vips_image_get_bands(out);
    g_object_unref(out);
    return mem;
}

/* ---- corpora ---- */

static void add(const char *name, uint8_t *data, size_t len, int hf, int fmt)
{
    if (nfiles >= (int)(sizeof files / sizeof files[0]))
        return;
    tfile *f = &files[nfiles++];
    snprintf(f->name, sizeof f->name, "%s", name);
    f->data = data;
    f->len = len;
    f->hf = hf;
    f->fmt = fmt;
}

static void put_grey(sd_bitmap *b, int x, int y, int v)
{
    uint32_t p = 0xFF000000u | (uint32_t)v << 16 | (uint32_t)v << 8 | (uint32_t)v;
    memcpy(sd_bitmap_pixels(b) + (size_t)y * sd_bitmap_stride(b) + (size_t)x * 4, &p, 4);
}

static sd_bitmap *high_frequency(int kind, int w, int h)
{
    sd_bitmap *b;
    if (sd_bitmap_new((uint32_t)w, (uint32_t)h, &b) != SD_OK)
        return NULL;
    unsigned seed = 99;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int v;
            switch (kind) {
            case 0: { /* zone plate: frequency r / w */
                double dx = x + 0.5 - w / 2.0, dy = y + 0.5 - h / 2.0;
                v = (int)lround(127.5 + 127.5 * cos(M_PI * (dx * dx + dy * dy) / w));
                break;
            }
            case 1: v = x % 2 ? 255 : 0; break;         /* 1-px stripes */
            case 2: v = (x / 2) % 2 ? 230 : 20; break;  /* 2-px stripes */
            case 3: v = (y / 3) % 2 ? 200 : 40; break;  /* 3-px stripes, horizontal */
            case 4: v = ((x / 4) + (y / 4)) % 2 ? 255 : 0; break; /* 4-px checkers */
            default: /* text-like: dark strokes on light, in lines */
                seed = seed * 1103515245u + 12345u;
                v = (y % 24) < 14 && (x % 9) < 6 && ((seed >> 16) % 3 == 0) ? 30 : 235;
                break;
            }
            put_grey(b, x, y, v);
        }
    return b;
}

static void generate(int photos)
{
    static const int sizes[][2] = {{640, 480}, {800, 600}, {1024, 768}, {1280, 960}, {1600, 1200},
                                   {2048, 1536}, {2592, 1944}, {3264, 2448}, {4000, 3000}, {1200, 1600}};
    char name[64];
    for (int i = 0; i < photos; i++) {
        const int *s = sizes[i % 10];
        sd_bitmap *b = bench_photo(s[0], s[1], 0);
        uint8_t *out;
        size_t n;
        int png = i % 4 == 3; /* one in four a PNG */
        if (png ? enc_png(b, 3, &out, &n) : enc_jpeg(b, 85, 0, &out, &n)) {
            sd_bitmap_free(b);
            continue;
        }
        snprintf(name, sizeof name, "photo-%d-%dx%d.%s", i, s[0], s[1], png ? "png" : "jpg");
        add(name, out, n, 0, png);
        if (i % 4 == 1 && enc_webp(b, 85, 0, &out, &n) == 0) { /* the same photo as lossy WebP */
            snprintf(name, sizeof name, "photo-%d-%dx%d.webp", i, s[0], s[1]);
            add(name, out, n, 0, 2);
        }
        sd_bitmap_free(b);
    }
    static const int odd[][2] = {{1411, 1411}, {741, 500}, {640, 427}, {1023, 767}, {2999, 1999}};
    for (int i = 0; i < 5; i++) {
        sd_bitmap *b = bench_photo(odd[i][0], odd[i][1], 0);
        for (int fmt = 0; fmt < 3; fmt++) {
            uint8_t *out;
            size_t n;
            if (fmt == 0 ? enc_jpeg(b, 85, 0, &out, &n) : fmt == 1 ? enc_png(b, 3, &out, &n) : enc_webp(b, 85, 0, &out, &n))
                continue;
            snprintf(name, sizeof name, "odd-%dx%d.%s", odd[i][0], odd[i][1], fmt == 0 ? "jpg" : fmt == 1 ? "png" : "webp");
            add(name, out, n, 2, fmt);
        }
        sd_bitmap_free(b);
    }
    static const char *kinds[] = {"zone-plate", "stripes-1px", "stripes-2px", "stripes-3px", "checkers-4px", "text"};
    static const int hsz[][2] = {{1024, 1024}, {2000, 1500}, {4000, 3000}, {1600, 1200}, {3000, 2000}, {1280, 960}};
    for (int k = 0; k < 6; k++) {
        sd_bitmap *b = high_frequency(k, hsz[k][0], hsz[k][1]);
        for (int png = 0; png <= 1; png++) {
            uint8_t *out;
            size_t n;
            if (png ? enc_png(b, 3, &out, &n) : enc_jpeg(b, 95, 0, &out, &n))
                continue;
            snprintf(name, sizeof name, "%s-%dx%d.%s", kinds[k], hsz[k][0], hsz[k][1], png ? "png" : "jpg");
            add(name, out, n, 1, png);
        }
        sd_bitmap_free(b);
    }
}

/* ---- quality ---- */

static void rgb_of_bitmap(const sd_bitmap *b, uint8_t *rgb)
{
    for (uint32_t y = 0; y < sd_bitmap_height(b); y++)
        for (uint32_t x = 0; x < sd_bitmap_width(b); x++) {
            uint32_t p;
            memcpy(&p, sd_bitmap_pixels(b) + y * sd_bitmap_stride(b) + x * 4, 4);
            uint8_t *o = rgb + ((size_t)y * sd_bitmap_width(b) + x) * 3;
            o[0] = (uint8_t)(p >> 16), o[1] = (uint8_t)(p >> 8), o[2] = (uint8_t)p;
        }
}

static int measure_quality(tfile *f)
{
    sd_bitmap *full = NULL;
    if (sd_decode(f->data, f->len, &full) != SD_OK)
        return -1;
    for (int side = 0; side < 4; side++) {
        int w, h, bands = 3;
        uint8_t *rgb;
        if (side == 1) {
            uint8_t *v = vips_side(f, &w, &h, &bands);
            if (v == NULL)
                return -1;
            rgb = malloc((size_t)w * h * 3);
            for (size_t i = 0; i < (size_t)w * h; i++)
                memcpy(rgb + i * 3, v + i * bands, 3);
            g_free(v);
        } else {
            sd_bitmap *b = ours(f, side == 2 ? 1 : side == 3 ? 2 : 0);
            if (b == NULL)
                return -1;
            w = (int)sd_bitmap_width(b), h = (int)sd_bitmap_height(b);
            rgb = malloc((size_t)w * h * 3);
            rgb_of_bitmap(b, rgb);
            sd_bitmap_free(b);
        }
        double *ref = reference(full, w, h);
        f->psnr[side] = psnr(ref, rgb, (size_t)w * h * 3);
        free(ref);
        free(rgb);
    }
    sd_bitmap_free(full);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n == 0 ? 0 : (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

/* ---- speed ---- */

static void time_rounds(int rounds)
{
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < nfiles; i++) {
            tfile *f = &files[i];
            for (int k = 0; k < 3; k++) {
                int side = (k + r + i) % 3; /* the order turns each time */
                double t0 = now();
                if (side == 1) {
                    int w, h, bands;
                    g_free(vips_side(f, &w, &h, &bands));
                } else {
                    sd_bitmap_free(ours(f, side == 2));
                }
                f->t[side][r] = now() - t0;
            }
        }
}

/* images/s of one side over a set (fmt -1: every format), the median round */
static double rate(int side, int hf, int fmt, int rounds)
{
    double per[5];
    int n = 0;
    for (int r = 0; r < rounds; r++) {
        double t = 0;
        n = 0;
        for (int i = 0; i < nfiles; i++)
            if (files[i].hf == hf && (fmt < 0 || files[i].fmt == fmt)) {
                t += files[i].t[side][r];
                n++;
            }
        per[r] = t;
    }
    return n / median(per, rounds);
}

static void quality_row(const char *label, int hf, int fmt, int json)
{
    double v[4][400], worst[4] = {99, 99, 99, 99};
    int n = 0;
    for (int i = 0; i < nfiles; i++) {
        if (files[i].hf != hf || (fmt >= 0 && files[i].fmt != fmt))
            continue;
        for (int s = 0; s < 4; s++) {
            v[s][n] = files[i].psnr[s];
            worst[s] = fmin(worst[s], files[i].psnr[s]);
        }
        n++;
    }
    double m[4] = {median(v[0], n), median(v[1], n), median(v[2], n), median(v[3], n)};
    if (json)
        printf(" \"psnr_%s\":{\"ours_median\":%.2f,\"ours_worst\":%.2f,\"libvips_median\":%.2f,\"libvips_worst\":%.2f,"
               "\"old_median\":%.2f,\"old_worst\":%.2f,\"margin1_median\":%.2f,\"margin1_worst\":%.2f},\n",
               label, m[0], worst[0], m[1], worst[1], m[2], worst[2], m[3], worst[3]);
    else
        printf("%-34s %7.2f / %5.2f  %7.2f / %5.2f  %7.2f / %5.2f  %7.2f / %5.2f\n", label, m[0], worst[0], m[1],
               worst[1], m[2], worst[2], m[3], worst[3]);
}

/* ---- memory ---- */

/* Peak RSS (KiB) of a child that makes `f`'s thumbnail once (old: the old
 * way; -1: nothing, the baseline). Forked before libvips starts a thread. */
static long child_peak_kib(const tfile *f, int old)
{
    pid_t pid = fork();
    if (pid == 0) {
        sd_bitmap *b = old >= 0 ? ours(f, old) : NULL;
        _exit(old >= 0 && b == NULL ? 1 : 0);
    }
    int status;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    return ru.ru_maxrss;
}

/* ---- resize ---- */

static void bench_resize(int json)
{
    static const int sz[][4] = {{2000, 1500, 256, 192}, {1024, 768, 512, 384}, {640, 480, 1280, 960}};
    if (!json)
        printf("\nresize (Lanczos-3) of an in-memory premultiplied bitmap, one thread, MP/s of source (best of 5);\n"
               "vips_resize on the same bytes as four plain bands, + vips_image_write_to_memory:\n");
    for (int i = 0; i < 3; i++) {
        sd_bitmap *b = bench_photo(sz[i][0], sz[i][1], 0);
        double best_ours = 1e9, best_vips = 1e9;
        VipsImage *mem = vips_image_new_from_memory(sd_bitmap_pixels(b), sd_bitmap_size(b), sz[i][0], sz[i][1], 4,
                                                    VIPS_FORMAT_UCHAR), *in = NULL;
        /* four plain bands: the pixels are premultiplied already, so libvips
         * must not premultiply them again as it would an sRGB + alpha image */
        vips_copy(mem, &in, "interpretation", VIPS_INTERPRETATION_MULTIBAND, NULL);
        g_object_unref(mem);
        for (int r = 0; r < 5; r++) {
            double t0 = now();
            sd_bitmap *o = NULL;
            sd_bitmap_resample(b, (uint32_t)sz[i][2], (uint32_t)sz[i][3], SD_FILTER_LANCZOS3, 0, &o);
            best_ours = fmin(best_ours, now() - t0);
            sd_bitmap_free(o);
            t0 = now();
            VipsImage *out = NULL;
            /* vips_resize picks the scale per axis; the same output size */
            vips_resize(in, &out, (double)sz[i][2] / sz[i][0], "vscale", (double)sz[i][3] / sz[i][1], "kernel",
                        VIPS_KERNEL_LANCZOS3, NULL);
            size_t size;
            g_free(vips_image_write_to_memory(out, &size));
            best_vips = fmin(best_vips, now() - t0);
            g_object_unref(out);
        }
        g_object_unref(in);
        double mp = sz[i][0] * (double)sz[i][1] / 1e6;
        if (json)
            printf(" \"resize_%dx%d_to_%dx%d\":{\"ours_mps\":%.1f,\"vips_resize_mps\":%.1f,\"ratio\":%.2f},\n", sz[i][0],
                   sz[i][1], sz[i][2], sz[i][3], mp / best_ours, mp / best_vips, best_vips / best_ours);
        else
            printf("  %4dx%-4d -> %4dx%-4d  ours %7.1f  vips_resize %7.1f  ratio %.2f\n", sz[i][0], sz[i][1], sz[i][2],
                   sz[i][3], mp / best_ours, mp / best_vips, best_vips / best_ours);
        sd_bitmap_free(b);
    }
}

/* ---- the sheet ---- */

static int write_sheet(const char *path)
{
    sd_bitmap *zp = high_frequency(0, 1024, 1024), *full = zp;
    uint8_t *png;
    size_t n;
    enc_png(zp, 3, &png, &n);
    tfile f = {.data = png, .len = n};
    int w = box, h = box, bands;
    sd_bitmap *sheet;
    if (sd_bitmap_new((uint32_t)w * 4 + 3 * 8, (uint32_t)h, &sheet) != SD_OK)
        return -1;
    memset(sd_bitmap_pixels(sheet), 0xFF, sd_bitmap_size(sheet));
    for (int panel = 0; panel < 4; panel++) {
        uint8_t *rgb = malloc((size_t)w * h * 3);
        if (panel == 0) {
            double *ref = reference(full, w, h);
            for (size_t i = 0; i < (size_t)w * h * 3; i++)
                rgb[i] = (uint8_t)ref[i];
            free(ref);
        } else if (panel == 3) {
            uint8_t *v = vips_side(&f, &w, &h, &bands);
            for (size_t i = 0; i < (size_t)w * h; i++)
                memcpy(rgb + i * 3, v + i * bands, 3);
            g_free(v);
        } else {
            sd_bitmap *b = ours(&f, panel == 1);
            rgb_of_bitmap(b, rgb);
            sd_bitmap_free(b);
        }
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                const uint8_t *c = rgb + ((size_t)y * w + x) * 3;
                uint32_t p = 0xFF000000u | (uint32_t)c[0] << 16 | (uint32_t)c[1] << 8 | c[2];
                memcpy(sd_bitmap_pixels(sheet) + (size_t)y * sd_bitmap_stride(sheet) + (size_t)(panel * (w + 8) + x) * 4,
                       &p, 4);
            }
        free(rgb);
    }
    uint8_t *out;
    size_t len;
    int rc = enc_png(sheet, 6, &out, &len);
    FILE *fp = rc == SD_OK ? fopen(path, "wb") : NULL;
    if (fp) {
        fwrite(out, 1, len, fp);
        fclose(fp);
        printf("sheet: %s — zone plate 1024 -> %d: reference (exact Lanczos-3) | ours, old way (shrink all the way + "
               "box) | ours | libvips thumbnail\n", path, box);
    }
    sd_free(out);
    sd_free(png);
    sd_bitmap_free(sheet);
    sd_bitmap_free(zp);
    return fp ? 0 : -1;
}

int bench_thumbnail_main(int argc, char **argv)
{
    int photos = 40, rounds = 3, json = 0, resize = 1;
    const char *sheet = NULL;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--photos") == 0 && i + 1 < argc)
            photos = atoi(argv[++i]);
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--box") == 0 && i + 1 < argc)
            box = atoi(argv[++i]);
        else if (strcmp(argv[i], "--sheet") == 0 && i + 1 < argc)
            sheet = argv[++i];
        else if (strcmp(argv[i], "--no-resize") == 0)
            resize = 0;
        else if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else {
            fprintf(stderr, "usage: sdcore-bench thumbnail [--photos N (40)] [--rounds N (3, at most 5)] [--box PX (256)] "
                            "[--sheet FILE.png] [--no-resize] [--json]\n");
            return 2;
        }
    }
    if (photos < 1 || photos > 300 || rounds < 1 || rounds > 5 || box < 8) {
        fprintf(stderr, "sdcore-bench thumbnail: --photos 1..300, --rounds 1..5, --box >= 8\n");
        return 2;
    }
    setenv("VIPS_CONCURRENCY", "1", 1);
    const tfile *largest = NULL;
    long rss_base = -1, rss_ours = -1, rss_old = -1;
    if (!sheet) {
        generate(photos);
        /* memory first, forked before libvips starts: the largest photo JPEG */
        for (int i = 0; i < nfiles; i++)
            if (!files[i].hf && files[i].fmt == 0 && strstr(files[i].name, "4000x3000"))
                largest = &files[i];
        if (largest) {
            rss_base = child_peak_kib(largest, -1);
            rss_ours = child_peak_kib(largest, 0);
            rss_old = child_peak_kib(largest, 1);
        }
    }
    if (VIPS_INIT("sdcore-bench"))
        return 1;
    vips_concurrency_set(1);
    vips_cache_set_max(0);
    if (sheet)
        return write_sheet(sheet) ? 1 : 0;
    for (int i = 0; i < nfiles; i++)
        if (measure_quality(&files[i]) < 0) {
            fprintf(stderr, "sdcore-bench thumbnail: %s failed\n", files[i].name);
            return 1;
        }
    time_rounds(rounds);
    double r_ours = rate(0, 0, 0, rounds), r_vips = rate(1, 0, 0, rounds), r_old = rate(2, 0, 0, rounds);
    double p_ours = rate(0, 0, 1, rounds), p_vips = rate(1, 0, 1, rounds), p_old = rate(2, 0, 1, rounds);
    double h_ours = rate(0, 1, -1, rounds), h_vips = rate(1, 1, -1, rounds), h_old = rate(2, 1, -1, rounds);
    double w_ours = rate(0, 0, 2, rounds), w_vips = rate(1, 0, 2, rounds), w_old = rate(2, 0, 2, rounds);
    double o_ours = rate(0, 2, -1, rounds), o_vips = rate(1, 2, -1, rounds), o_old = rate(2, 2, -1, rounds);
    if (json) {
        printf("{\"bench\":\"thumbnail\",\"box\":%d,\"rounds\":%d,\"libvips\":\"%s\",\n", box, rounds, vips_version_string());
        printf(" \"photo_jpeg_ips\":{\"ours\":%.1f,\"libvips\":%.1f,\"old\":%.1f,\"ratio\":%.3f},\n", r_ours, r_vips, r_old,
               r_ours / r_vips);
        printf(" \"photo_png_ips\":{\"ours\":%.1f,\"libvips\":%.1f,\"old\":%.1f,\"ratio\":%.3f},\n", p_ours, p_vips, p_old,
               p_ours / p_vips);
        printf(" \"photo_webp_ips\":{\"ours\":%.1f,\"libvips\":%.1f,\"old\":%.1f,\"ratio\":%.3f},\n", w_ours, w_vips, w_old,
               w_ours / w_vips);
        printf(" \"odd_sized_ips\":{\"ours\":%.1f,\"libvips\":%.1f,\"old\":%.1f,\"ratio\":%.3f},\n", o_ours, o_vips, o_old,
               o_ours / o_vips);
        printf(" \"high_frequency_ips\":{\"ours\":%.1f,\"libvips\":%.1f,\"old\":%.1f,\"ratio\":%.3f},\n", h_ours, h_vips,
               h_old, h_ours / h_vips);
        quality_row("photo_jpeg", 0, 0, 1);
        quality_row("photo_png", 0, 1, 1);
        quality_row("photo_webp", 0, 2, 1);
        quality_row("odd_sized", 2, -1, 1);
        quality_row("high_frequency", 1, -1, 1);
        printf(" \"high_frequency_files\":[");
        for (int i = 0, k = 0; i < nfiles; i++)
            if (files[i].hf == 1)
                printf("%s{\"name\":\"%s\",\"ours\":%.2f,\"libvips\":%.2f,\"old\":%.2f,\"margin1\":%.2f}", k++ ? "," : "", files[i].name,
                       files[i].psnr[0], files[i].psnr[1], files[i].psnr[2], files[i].psnr[3]);
        printf("],\n");
        printf(" \"peak_rss_kib_12mp_thumbnail\":{\"ours\":%ld,\"old\":%ld,\"full_canvas\":%ld},\n",
               rss_ours - rss_base, rss_old - rss_base, 4000L * 3000 * 4 / 1024);
        if (resize)
            bench_resize(1);
        printf(" \"photos\":%d}\n", photos);
        return 0;
    }
    printf("sdcore-bench thumbnail: fit in %dx%d, one thread each, files in memory, pixels forced, a new\n"
           "decoder per image; ours = sd_decoder (shrink on load to 2x, Lanczos-3), old = margin 1 + box,\n"
           "margin 1 = shrink on load to 1x, Lanczos-3 (sdimage serve --shrink-margin 1; PSNR only),\n"
           "libvips %s = vips_thumbnail_buffer + write_to_memory (VIPS_CONCURRENCY=1, no cache);\n"
           "rounds interleaved, median of %d. PSNR against an exact double Lanczos-3 of the full decode.\n\n",
           box, box, vips_version_string(), rounds);
    printf("%-34s %10s %10s %10s %8s %8s\n", "images/s", "ours", "libvips", "old", "ratio", "target");
    printf("%-34s %10.1f %10.1f %10.1f %8.3f %8s\n", "photo JPEGs", r_ours, r_vips, r_old, r_ours / r_vips, ">=1.5");
    printf("%-34s %10.1f %10.1f %10.1f %8.3f %8s\n", "photo PNGs", p_ours, p_vips, p_old, p_ours / p_vips, "ref");
    printf("%-34s %10.1f %10.1f %10.1f %8.3f %8s\n", "photo WebPs (lossy q85)", w_ours, w_vips, w_old, w_ours / w_vips,
           "ref");
    printf("%-34s %10.1f %10.1f %10.1f %8.3f %8s\n", "odd-sized photos (JPEG, PNG, WebP)", o_ours, o_vips, o_old,
           o_ours / o_vips, "ref");
    printf("%-34s %10.1f %10.1f %10.1f %8.3f %8s\n", "high-frequency (JPEG + PNG)", h_ours, h_vips, h_old,
           h_ours / h_vips, "ref");
    printf("\n%-34s %15s  %15s  %15s  %15s\n", "PSNR dB, median / worst", "ours", "libvips", "old", "margin 1");
    quality_row("photo JPEGs", 0, 0, 0);
    quality_row("photo PNGs", 0, 1, 0);
    quality_row("photo WebPs", 0, 2, 0);
    quality_row("odd-sized photos", 2, -1, 0);
    quality_row("high-frequency", 1, -1, 0);
    for (int i = 0; i < nfiles; i++)
        if (files[i].hf >= 1) /* each odd-sized photo, then each high-frequency image */
            printf("  %-32s %7.2f          %7.2f          %7.2f          %7.2f   %+.2f vs libvips\n", files[i].name,
                   files[i].psnr[0], files[i].psnr[1], files[i].psnr[2], files[i].psnr[3],
                   files[i].psnr[0] - files[i].psnr[1]);
    if (largest)
        printf("\npeak RSS over the process's own, one 12 MP JPEG -> %d: ours %.1f MB (the 1/4 canvas is %.1f MB), "
               "old way %.1f MB; a full-size canvas would be %.1f MB\n", box, (rss_ours - rss_base) / 1024.0,
               1000.0 * 750 * 4 / 1048576, (rss_old - rss_base) / 1024.0, 4000.0 * 3000 * 4 / 1048576);
    if (resize)
        bench_resize(0);
    return 0;
}
