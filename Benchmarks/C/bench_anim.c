/*
 * bench_anim.c — `sdcore-bench anim`: the animated and new still formats
 * against their libraries used directly, in the same run, like for like:
 * every method produces every frame as premultiplied BGRA (except where a
 * row says "alone"), into a buffer that is reused (ours: the bitmap pool
 * recycles the freed frame), single thread, best of several rounds.
 *   GIF  full composite: ours (push + sd_decoder_frame for each frame) vs
 *        DGifSlurp + a naive compositing loop (disposal 2/3, transparency)
 *        + a copy of the canvas per frame.
 *   WebP still: ours (sd_decode) vs WebPDecodeBGRAInto + premultiply.
 *   WebP animation: ours vs WebPAnimDecoder (MODE_BGRA) alone (straight, no
 *        premultiply: less work than ours), and vs WebPAnimDecoder in MODE_bgrA
 *        (premultiplied by libwebp: the same output, its rounding).
 *   Ours keeps no frames for going back (SD_DEC_FRAME_CACHE_BYTES 0), as the
 *   baselines keep none; one "kept" row shows the default (64 MiB of frames
 *   kept, each a copy into memory the decoder allocates). Ours gives each
 *   frame (a bitmap the pool recycles); the "lent" rows take each frame from
 *   sd_decoder_frame_view, as WebPAnimDecoderGetNext lends its canvas.
 *   WebP frame list: every frame's facts (count, durations), no pixels, of a
 *        generated 20,000-frame animation: ours (push whole, finish, read
 *        each frame's duration) vs WebPDemux + its frame iterator.
 *   AVIF still: ours (sd_decode) vs avifDecoderReadMemory + avifImageYUVToRGB
 *        to premultiplied BGRA (libavif's alphaPremultiplied) in the reused
 *        buffer; inputs made here by sd_encoder (AVIF q60, speed 6) from
 *        generated photos, opaque and with alpha.
 * Files from ../shared/corpus-anim (--corpus-anim DIR).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gif_lib.h>
#include <webp/decode.h>
#include <webp/demux.h>
#include <avif/avif.h>

#include <sdcore.h>

#include "../../Tests/C/sd_test_util.h"

sd_bitmap *bench_photo(int w, int h, int alpha); /* bench_decode.c */
int bench_make_anim_main(int argc, char **argv);

typedef struct {
    const char *name;
    unsigned char *data;
    size_t len;
} input;

static uint8_t *out_buf; /* the baselines' per-frame output, reused */
static size_t out_cap;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint8_t *out_for(size_t n)
{
    if (n > out_cap) {
        free(out_buf);
        out_buf = malloc(n);
        memset(out_buf, 0, n); /* pre-faulted, as the pool's recycled pages are */
        out_cap = n;
    }
    return out_buf;
}

/* Frames ours keeps for going back (SD_DEC_FRAME_CACHE_BYTES): none, as the
 * baselines keep none, except in the row that says "kept". */
static int64_t kept_frame_bytes = 0;

/* Every frame, given (sd_decoder_frame: a bitmap the pool recycles) or lent
 * (sd_decoder_frame_view, as WebPAnimDecoder lends its canvas). */
static int ours_frames(const input *in, int lend)
{
    sd_decoder *d;
    if (sd_decoder_new(&d) != SD_OK)
        return 1;
    int rc = sd_decoder_set(d, SD_DEC_FRAME_CACHE_BYTES, kept_frame_bytes) != SD_OK ||
             sd_decoder_push(d, in->data, in->len) != SD_OK || sd_decoder_finish(d) != SD_OK;
    int64_t n = 0;
    sd_decoder_get(d, SD_DEC_INFO_FRAME_COUNT, &n);
    for (int64_t i = 0; i < n && rc == 0; i++) {
        sd_bitmap *b = NULL;
        const sd_bitmap *v;
        rc = (lend ? sd_decoder_frame_view(d, (uint32_t)i, &v) : sd_decoder_frame(d, (uint32_t)i, &b)) != SD_OK;
        sd_bitmap_free(b);
    }
    sd_decoder_free(d);
    return rc;
}

static int ours_all_frames(const input *in) { return ours_frames(in, 0); }
static int ours_all_frames_lent(const input *in) { return ours_frames(in, 1); }

static int ours_still(const input *in)
{
    sd_bitmap *b;
    if (sd_decode(in->data, in->len, &b) != SD_OK)
        return 1;
    sd_bitmap_free(b);
    return 0;
}

typedef struct {
    const unsigned char *p;
    size_t n, at;
} mem;

static int mem_read(GifFileType *g, GifByteType *buf, int n)
{
    mem *m = g->UserData;
    size_t k = (size_t)n < m->n - m->at ? (size_t)n : m->n - m->at;
    memcpy(buf, m->p + m->at, k);
    m->at += k;
    return (int)k;
}

/* DGifSlurp, then the straightforward compositing loop a C programmer writes. */
static int giflib_naive(const input *in)
{
    mem m = {in->data, in->len, 0};
    int err;
    GifFileType *g = DGifOpen(&m, mem_read, &err);
    if (g == NULL || DGifSlurp(g) != GIF_OK)
        return 1;
    int W = g->SWidth, H = g->SHeight;
    uint32_t *canvas = calloc((size_t)W * H, 4), *prev = malloc((size_t)W * H * 4);
    uint8_t *out = out_for((size_t)W * H * 4);
    for (int i = 0; i < g->ImageCount; i++) {
        SavedImage *s = &g->SavedImages[i];
        GraphicsControlBlock gcb = {.DisposalMode = 0, .TransparentColor = -1};
        DGifSavedExtensionToGCB(g, i, &gcb);
        if (gcb.DisposalMode == 3 || gcb.DisposalMode == 4)
            memcpy(prev, canvas, (size_t)W * H * 4);
        ColorMapObject *cm = s->ImageDesc.ColorMap ? s->ImageDesc.ColorMap : g->SColorMap;
        int x0 = s->ImageDesc.Left, y0 = s->ImageDesc.Top, w = s->ImageDesc.Width, h = s->ImageDesc.Height;
        for (int y = 0; y < h && cm; y++) {
            if (y0 + y >= H)
                break;
            const GifByteType *src = s->RasterBits + (size_t)y * w;
            uint32_t *row = canvas + (size_t)(y0 + y) * W;
            for (int x = 0; x < w && x0 + x < W; x++) {
                int c = src[x];
                if (c == gcb.TransparentColor || c >= cm->ColorCount)
                    continue;
                GifColorType col = cm->Colors[c];
                row[x0 + x] = 0xFF000000u | (uint32_t)col.Red << 16 | (uint32_t)col.Green << 8 | col.Blue;
            }
        }
        memcpy(out, canvas, (size_t)W * H * 4); /* the frame, handed out */
        if (gcb.DisposalMode == 2) {
            for (int y = y0; y < y0 + h && y < H; y++)
                for (int x = x0; x < x0 + w && x < W; x++)
                    canvas[(size_t)y * W + x] = 0;
        } else if (gcb.DisposalMode == 3 || gcb.DisposalMode == 4) {
            memcpy(canvas, prev, (size_t)W * H * 4);
        }
    }
    free(canvas);
    free(prev);
    DGifCloseFile(g, &err);
    return 0;
}

static void premultiply(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++, p += 4) {
        unsigned a = p[3];
        if (a == 255)
            continue;
        for (int c = 0; c < 3; c++)
            p[c] = (uint8_t)((p[c] * a + 127) / 255);
    }
}

static int webp_still(const input *in)
{
    int w, h;
    if (!WebPGetInfo(in->data, in->len, &w, &h))
        return 1;
    uint8_t *out = out_for((size_t)w * h * 4);
    if (WebPDecodeBGRAInto(in->data, in->len, out, (size_t)w * h * 4, w * 4) == NULL)
        return 1;
    premultiply(out, (size_t)w * h);
    return 0;
}

static int webp_anim(const input *in, WEBP_CSP_MODE mode)
{
    WebPAnimDecoderOptions o;
    WebPAnimDecoderOptionsInit(&o);
    o.color_mode = mode;
    o.use_threads = 0;
    WebPData data = {in->data, in->len};
    WebPAnimDecoder *a = WebPAnimDecoderNew(&data, &o);
    if (a == NULL)
        return 1;
    uint8_t *buf;
    int ts;
    while (WebPAnimDecoderHasMoreFrames(a))
        if (!WebPAnimDecoderGetNext(a, &buf, &ts))
            return 1;
    WebPAnimDecoderDelete(a);
    return 0;
}

/* straight BGRA, as it hands it out: no premultiply at all */
static int webp_anim_alone(const input *in) { return webp_anim(in, MODE_BGRA); }
/* premultiplied B,G,R,A by libwebp itself (its rounding, not the contract's) */
static int webp_anim_premul(const input *in) { return webp_anim(in, MODE_bgrA); }

#define LIST_FRAMES 20000

static int ours_list(const input *in)
{
    sd_decoder *d;
    if (sd_decoder_new(&d) != SD_OK)
        return 1;
    sd_decoder_set(d, SD_DEC_MAX_FRAMES, LIST_FRAMES);
    int rc = sd_decoder_push(d, in->data, in->len);
    if (rc == SD_OK)
        rc = sd_decoder_finish(d);
    int64_t n = 0, dur, sum = 0;
    sd_decoder_get(d, SD_DEC_INFO_FRAME_COUNT, &n);
    for (int64_t i = 0; i < n; i++)
        if (sd_decoder_frame_get(d, (uint32_t)i, SD_FRAME_STORED_DURATION_MS, &dur) == SD_OK)
            sum += dur;
    sd_decoder_free(d);
    return rc != SD_OK || n != LIST_FRAMES || sum != 20LL * LIST_FRAMES;
}

static int webp_list_iterator(const input *in)
{
    WebPData data = {in->data, in->len};
    WebPDemuxer *dmx = WebPDemux(&data);
    if (dmx == NULL)
        return 1;
    WebPIterator it;
    int64_t n = 0, sum = 0;
    if (WebPDemuxGetFrame(dmx, 1, &it)) {
        do {
            n++;
            sum += it.duration;
        } while (WebPDemuxNextFrame(&it));
        WebPDemuxReleaseIterator(&it);
    }
    WebPDemuxDelete(dmx);
    return n != LIST_FRAMES || sum != 20LL * LIST_FRAMES;
}

static int libavif_read(const input *in)
{
    avifDecoder *dec = avifDecoderCreate();
    avifImage *im = avifImageCreateEmpty();
    int rc = 1;
    if (dec && im && avifDecoderReadMemory(dec, im, in->data, in->len) == AVIF_RESULT_OK) {
        avifRGBImage rgb;
        avifRGBImageSetDefaults(&rgb, im);
        rgb.format = AVIF_RGB_FORMAT_BGRA;
        rgb.depth = 8;
        rgb.rowBytes = im->width * 4;
        rgb.alphaPremultiplied = AVIF_TRUE; /* libavif's own premultiply (its rounding) */
        rgb.pixels = out_for((size_t)rgb.rowBytes * im->height);
        rc = avifImageYUVToRGB(im, &rgb) != AVIF_RESULT_OK;
    }
    avifImageDestroy(im);
    avifDecoderDestroy(dec);
    return rc;
}

typedef int (*fn)(const input *);

static void row(const input *in, const char *what, fn ours, fn base, const char *base_name, int json)
{
    double best[2] = {1e30, 1e30}, spent = 0;
    for (int r = 0; r < 5 || (spent < 0.5 && r < 300); r++) {
        for (int m = 0; m < 2; m++) {
            double t0 = now();
            if ((m ? base : ours)(in) != 0) {
                fprintf(stderr, "sdcore-bench anim: %s failed on %s\n", m ? base_name : "ours", in->name);
                exit(1);
            }
            double t = now() - t0;
            spent += t;
            best[m] = t < best[m] ? t : best[m];
        }
    }
    double ratio = best[1] / best[0];
    if (json)
        printf("{\"row\":\"%s\",\"file\":\"%s\",\"ours_ms\":%.3f,\"baseline\":\"%s\",\"baseline_ms\":%.3f,\"ratio\":%.3f}\n",
               what, in->name, best[0] * 1e3, base_name, best[1] * 1e3, ratio);
    else
        printf("%-16s %-36s ours %8.3f ms  %-26s %8.3f ms  %.2fx\n", what, in->name, best[0] * 1e3, base_name,
               best[1] * 1e3, ratio);
}

int bench_anim_main(int argc, char **argv)
{
    const char *dir = "../shared/corpus-anim";
    int json = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--corpus-anim") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--json") == 0)
            json = 1;
    }
    static const struct {
        const char *file, *what;
        fn base;
        const char *base_name;
    } rows[] = {
        {"gif/large_1000x1000.gif", "gif composite", giflib_naive, "DGifSlurp+naive"},
        {"third_party/pillow/chi.gif", "gif composite", giflib_naive, "DGifSlurp+naive"},
        {"third_party/pillow/iss634.gif", "gif composite", giflib_naive, "DGifSlurp+naive"},
        {"gif/many_frames_300.gif", "gif composite", giflib_naive, "DGifSlurp+naive"},
        {"webp/lossy_photo_256x192.webp", "webp still", webp_still, "WebPDecodeBGRAInto+premul"},
        {"webp/lossy_alpha_compressed.webp", "webp still", webp_still, "WebPDecodeBGRAInto+premul"},
        {"third_party/pillow/hopper.webp", "webp still", webp_still, "WebPDecodeBGRAInto+premul"},
        {"third_party/pillow/iss634.webp", "webp animation", webp_anim_alone, "WebPAnimDecoder alone"},
        {"third_party/sdwebimage/TestImageAnimated.webp", "webp animation", webp_anim_alone, "WebPAnimDecoder alone"},
        {"third_party/pillow/iss634.webp", "webp animation", webp_anim_premul, "WebPAnimDecoder bgrA"},
        {"third_party/sdwebimage/TestImageAnimated.webp", "webp animation", webp_anim_premul, "WebPAnimDecoder bgrA"},
    };
    /* Every side's working buffers (WebPAnimDecoder's two canvases, giflib's
     * rasters, our canvas) come from the heap, reused round after round,
     * instead of fresh mmap'd pages faulted in per decoder: glibc's dynamic
     * mmap threshold otherwise decides that differently from row to row. */
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    if (!json)
        printf("like for like: premultiplied BGRA per frame into a reused buffer, one thread, best of >= 5 rounds,"
               " working memory from the heap (no per-round page faults)\n");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, rows[i].file);
        input in = {rows[i].file, NULL, 0};
        in.data = sd_read_file(path, &in.len);
        if (in.data == NULL) {
            fprintf(stderr, "sdcore-bench anim: cannot read %s (--corpus-anim DIR)\n", path);
            return 1;
        }
        int still = strstr(rows[i].what, "still") != NULL;
        row(&in, rows[i].what, still ? ours_still : ours_all_frames, rows[i].base, rows[i].base_name, json);
        free(in.data);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/third_party/sdwebimage/TestImageAnimated.webp", dir);
    input kept = {"third_party/sdwebimage/TestImageAnimated.webp", NULL, 0};
    kept.data = sd_read_file(path, &kept.len);
    if (kept.data) {
        kept_frame_bytes = SD_DEFAULT_FRAME_CACHE_BYTES;
        row(&kept, "webp anim, kept", ours_all_frames, webp_anim_alone, "WebPAnimDecoder alone", json);
        kept_frame_bytes = 0;
        free(kept.data);
    }
    /* frames lent instead of given: no copy out of ours, as none out of
     * WebPAnimDecoder's (straight) canvas */
    const char *lent_files[] = {"third_party/pillow/iss634.webp", "third_party/sdwebimage/TestImageAnimated.webp"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, lent_files[i]);
        input lent = {lent_files[i], NULL, 0};
        lent.data = sd_read_file(path, &lent.len);
        if (lent.data == NULL)
            continue;
        row(&lent, "webp anim, lent", ours_all_frames_lent, webp_anim_alone, "WebPAnimDecoder alone", json);
        free(lent.data);
    }
    snprintf(path, sizeof path, "%s/webp/lossless_1x1_full.webp", dir);
    input one = {"webp/lossless_1x1_full.webp", NULL, 0};
    one.data = sd_read_file(path, &one.len);
    input many = {"20,000 frames of 1x1 (generated)", NULL, 0};
    many.data = sd_make_webp_anim(one.data, one.len, LIST_FRAMES, 0, &many.len);
    if (many.data == NULL) {
        fprintf(stderr, "sdcore-bench anim: cannot make the frame-list input from %s\n", path);
        return 1;
    }
    row(&many, "webp frame list", ours_list, webp_list_iterator, "WebPDemux+iterator", json);
    free(many.data);
    free(one.data);
    for (int alpha = 0; alpha < 2; alpha++) {
        sd_bitmap *photo = bench_photo(640, 480, alpha);
        input av = {alpha ? "640x480 q60 with alpha (generated)" : "640x480 q60 opaque (generated)", NULL, 0};
        if (photo == NULL || enc_avif(photo, 60, 6, &av.data, &av.len) != SD_OK) {
            fprintf(stderr, "sdcore-bench anim: cannot make the AVIF input\n");
            return 1;
        }
        sd_bitmap_free(photo);
        row(&av, "avif still", ours_still, libavif_read, "avifDecoderReadMemory+YUVToRGB", json);
        sd_free(av.data);
    }
    free(out_buf);
    return 0;
}

/*
 * `sdcore-bench make-anim OUT.gif [--frames N] [--size S] [--delay-ms D]`:
 * the player bench's input, written with giflib: N full-canvas S x S frames
 * (every pixel changes each frame: diagonal bands that scroll over a fixed
 * colour field, so each frame costs a whole-canvas LZW decode), one global
 * 216-colour palette, loop forever. Bands compress well, so 500 frames of
 * 1000 x 1000 stay a few tens of MB.
 */
int bench_make_anim_main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: sdcore-bench make-anim OUT.gif [--frames N] [--size S] [--delay-ms D]\n");
        return 2;
    }
    const char *out = argv[2];
    int frames = 500, size = 1000, delay = 20;
    for (int i = 3; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--frames") == 0)
            frames = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--size") == 0)
            size = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--delay-ms") == 0)
            delay = atoi(argv[i + 1]);
    }
    if (frames < 1 || size < 8 || size > 65535 || delay < 0) {
        fprintf(stderr, "sdcore-bench make-anim: bad --frames/--size/--delay-ms\n");
        return 2;
    }
    int err = 0;
    GifFileType *g = EGifOpenFileName(out, 0, &err);
    if (g == NULL) {
        fprintf(stderr, "sdcore-bench make-anim: cannot write %s\n", out);
        return 1;
    }
    GifColorType colors[256] = {{0}};
    for (int i = 0; i < 216; i++)
        colors[i] = (GifColorType){(GifByteType)(i / 36 * 51), (GifByteType)(i / 6 % 6 * 51), (GifByteType)(i % 6 * 51)};
    ColorMapObject *map = GifMakeMapObject(256, colors);
    EGifSetGifVersion(g, 1);
    int ok = map && EGifPutScreenDesc(g, size, size, 8, 0, map) == GIF_OK;
    unsigned char loop[] = {'N', 'E', 'T', 'S', 'C', 'A', 'P', 'E', '2', '.', '0'}, sub[] = {1, 0, 0};
    ok = ok && EGifPutExtensionLeader(g, APPLICATION_EXT_FUNC_CODE) == GIF_OK &&
         EGifPutExtensionBlock(g, sizeof loop, loop) == GIF_OK && EGifPutExtensionBlock(g, sizeof sub, sub) == GIF_OK &&
         EGifPutExtensionTrailer(g) == GIF_OK;
    GifPixelType *line = malloc((size_t)size);
    for (int f = 0; ok && f < frames; f++) {
        GraphicsControlBlock gcb = {.DisposalMode = DISPOSE_DO_NOT, .DelayTime = (delay + 5) / 10, .TransparentColor = -1};
        GifByteType ext[4];
        EGifGCBToExtension(&gcb, ext);
        ok = EGifPutExtension(g, GRAPHICS_EXT_FUNC_CODE, 4, ext) == GIF_OK &&
             EGifPutImageDesc(g, 0, 0, size, size, 0, NULL) == GIF_OK;
        for (int y = 0; ok && y < size; y++) {
            for (int x = 0; x < size; x++) {
                int band = ((x + y + f * 7) / 24) % 6; /* scrolls 7 px a frame */
                int field = (x * 6 / size) * 36 + (y * 6 / size) * 6;
                line[x] = (GifPixelType)(field + band);
            }
            ok = EGifPutLine(g, line, size) == GIF_OK;
        }
    }
    free(line);
    GifFreeMapObject(map);
    if (EGifCloseFile(g, &err) != GIF_OK || !ok) {
        fprintf(stderr, "sdcore-bench make-anim: giflib failed (%d)\n", err);
        return 1;
    }
    return 0;
}

/* VmRSS / VmHWM of this process, in bytes (0 when /proc is missing). */
static int64_t proc_status_bytes(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int64_t kb = 0;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, field, n) == 0)
            kb = atoll(line + n);
    if (f)
        fclose(f);
    return kb * 1024;
}

/* One stepping run in a child of its own, so a run never starts with pages
 * an earlier run freed (the pixel pool and malloc keep them). */
static int step_once(const unsigned char *data, size_t len, int64_t kept, int lend, int json)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid > 0) {
        int status = 0;
        waitpid(pid, &status, 0);
        return !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    sd_decoder *d;
    int64_t n = 0, w = 0, h = 0, budget, in_use0, in_use, in_use_max = 0;
    if (sd_decoder_new(&d) != SD_OK || sd_decoder_set(d, SD_DEC_FRAME_CACHE_BYTES, kept) != SD_OK ||
        sd_decoder_push(d, data, len) != SD_OK || sd_decoder_finish(d) != SD_OK)
        _exit(1);
    sd_decoder_get(d, SD_DEC_INFO_FRAME_COUNT, &n);
    sd_decoder_get(d, SD_DEC_INFO_WIDTH, &w);
    sd_decoder_get(d, SD_DEC_INFO_HEIGHT, &h);
    sd_decode_memory(&budget, &in_use0);
    FILE *clear = fopen("/proc/self/clear_refs", "w"); /* "5": VmHWM := VmRSS */
    if (clear) {
        fputs("5", clear);
        fclose(clear);
    }
    int64_t before = proc_status_bytes("VmRSS:");
    double t0 = now();
    for (int64_t i = 0; i < n; i++) {
        sd_bitmap *b = NULL;
        const sd_bitmap *v;
        if ((lend ? sd_decoder_frame_view(d, (uint32_t)i, &v) : sd_decoder_frame(d, (uint32_t)i, &b)) != SD_OK)
            _exit(1);
        sd_decode_memory(&budget, &in_use);
        in_use_max = in_use > in_use_max ? in_use : in_use_max;
        sd_bitmap_free(b);
    }
    double t = now() - t0;
    /* the decoder holds its working canvas and the kept frames; given
     * frames (sd_decoder_frame), the caller holds one more canvas, the frame
     * handed out (freed before the next is asked for); lent frames
     * (sd_decoder_frame_view) are the working canvas itself */
    int64_t peak = proc_status_bytes("VmHWM:"), canvas = w * h * 4, slack = 1 << 20;
    int64_t allowance = kept + (lend ? 1 : 2) * canvas;
    double grew = (double)(peak - before) / (1 << 20), allowed = (double)allowance / (1 << 20);
    if (json)
        printf("{\"row\":\"anim memory\",\"frames\":\"%s\",\"count\":%lld,\"width\":%lld,\"height\":%lld,\"kept_mib\":%.1f,"
               "\"rss_before_mib\":%.1f,\"peak_rss_mib\":%.1f,\"grew_mib\":%.1f,\"allowed_mib\":%.1f,"
               "\"charged_mib\":%.1f,\"ms_per_frame\":%.3f}\n",
               lend ? "lent" : "given", (long long)n, (long long)w, (long long)h, (double)kept / (1 << 20),
               (double)before / (1 << 20), (double)peak / (1 << 20), grew, allowed,
               (double)(in_use_max - in_use0) / (1 << 20), t * 1e3 / (double)n);
    else
        printf("%lld frames %lldx%lld %s, kept %5.1f MiB: RSS before %6.1f MiB, peak %6.1f MiB, grew %6.1f MiB "
               "(kept budget + working canvas%s %6.1f MiB; charged %5.1f MiB)  %.2f ms a frame\n",
               (long long)n, (long long)w, (long long)h, lend ? "lent " : "given", (double)kept / (1 << 20),
               (double)before / (1 << 20), (double)peak / (1 << 20), grew, lend ? "" : " + frame out", allowed,
               (double)(in_use_max - in_use0) / (1 << 20), t * 1e3 / (double)n);
    fflush(stdout);
    sd_decoder_free(d);
    _exit(peak - before > allowance + slack ? 3 : 0);
}

/*
 * `sdcore-bench anim-memory [FILE.gif] [--kept-mib N]... [--json]`: step once
 * through every frame of an animation (default: a 500-frame 1000x1000 GIF,
 * made with make-anim when FILE does not exist) and report the peak RSS
 * growth against the kept-frame budget plus the decoder's working canvas —
 * plus the frame handed out when frames are given (sd_decoder_frame); lent
 * frames (sd_decoder_frame_view) add nothing. Each budget (default 0, 16 and
 * 64 MiB), given and lent, in a fresh child process. Exit 3 when a run grew
 * more than that (+1 MiB for giflib and malloc's own).
 */
int bench_anim_memory_main(int argc, char **argv)
{
    const char *file = "/tmp/sdcore-bench-anim-500f-1000px-20ms.gif";
    int64_t kept[8];
    int nkept = 0, json = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--kept-mib") == 0 && i + 1 < argc && nkept < 8)
            kept[nkept++] = (int64_t)atoi(argv[++i]) << 20;
        else if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (argv[i][0] != '-')
            file = argv[i];
        else {
            fprintf(stderr, "usage: sdcore-bench anim-memory [FILE.gif] [--kept-mib N]... [--json]\n");
            return 2;
        }
    }
    if (nkept == 0) {
        kept[nkept++] = 0;
        kept[nkept++] = 16 << 20;
        kept[nkept++] = 64 << 20;
    }
    size_t len;
    unsigned char *data = sd_read_file(file, &len);
    if (data == NULL) {
        char *make[] = {argv[0], "make-anim", (char *)file, NULL};
        if (bench_make_anim_main(3, make) != 0 || (data = sd_read_file(file, &len)) == NULL) {
            fprintf(stderr, "sdcore-bench anim-memory: cannot read or make %s\n", file);
            return 1;
        }
    }
    int rc = 0;
    for (int i = 0; i < nkept; i++)
        for (int lend = 0; lend < 2; lend++) {
            int r = step_once(data, len, kept[i], lend, json);
            rc = rc ? rc : r;
        }
    free(data);
    return rc;
}
