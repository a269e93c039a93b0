/*
 * test_isolate.c — decoding in sandboxed workers (sd_isolate.h), with real
 * worker processes (sdcore-worker): the same pixels as decoding here, a
 * render included; the seccomp policy killing a worker that tries open,
 * socket or execve; a worker killed mid-decode (SIGKILL from the test), one
 * over its CPU time, one over its wall time and one over its memory, each
 * turned into an error and a fresh worker; a reply whose memfd the worker
 * could still shrink, refused. No timing is assumed: the slow cases spin
 * forever, so only the limit under test can end them.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sd_test.h"
#include "sd_test_util.h"
#include "sd_test_encode.h"

/* the library's test hook (isolate/sd_isolate_int.h) */
int sd__isolate_probe(sd_isolate_pool *pool, int what, sd_bitmap **out, char *message, size_t size);
enum { PROBE_OPEN = 1, PROBE_SOCKET = 2, PROBE_EXEC = 3, PROBE_SPIN = 4, PROBE_UNSEALED = 5, PROBE_OPEN_WRITE = 6 };

static sd_bitmap *gradient(uint32_t w, uint32_t h)
{
    sd_bitmap *b;
    if (sd_bitmap_new(w, h, &b) != SD_OK)
        return NULL;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++)
            ((uint32_t *)(void *)(sd_bitmap_pixels(b) + y * sd_bitmap_stride(b)))[x] =
                0xff000000u | (x * 255 / w) << 16 | (y * 255 / h) << 8 | ((x ^ y) & 0xff);
    return b;
}

static int same(const sd_bitmap *a, const sd_bitmap *b)
{
    return sd_bitmap_width(a) == sd_bitmap_width(b) && sd_bitmap_height(a) == sd_bitmap_height(b) &&
           sd_bitmap_max_diff(a, b) == 0;
}

/* A decode that works: the pool is healthy again after each failure. */
static int healthy(sd_isolate_pool *pool, const uint8_t *png, size_t n)
{
    sd_bitmap *b = NULL;
    char why[256];
    int rc = sd_isolate_decode(pool, png, n, NULL, NULL, 0, NULL, NULL, &b, NULL, why, sizeof why);
    if (rc != SD_OK)
        fprintf(stderr, "  the next decode failed: %d %s\n", rc, why);
    sd_bitmap_free(b);
    return rc == SD_OK;
}

static int test_same_pixels(void)
{
    sd_bitmap *src = gradient(300, 200);
    ASSERT_NOT_NULL(src);
    uint8_t *png = NULL, *jpg = NULL;
    size_t pn, jn;
    ASSERT_OK(enc_png(src, 1, &png, &pn));
    ASSERT_OK(enc_jpeg(src, 90, 1, &jpg, &jn));
    sd_isolate_pool *pool;
    ASSERT_OK(sd_isolate_pool_new(SD_WORKER_PATH, 2, NULL, &pool));
    sd_render r;
    sd_render_init(&r);
    r.width = 100;
    r.height = 100;
    r.resize = SD_RESIZE_FILL;
    r.gravity.type = SD_GRAVITY_EAST;
    const int keys[] = {SD_DEC_RESAMPLE_FILTER};
    const int64_t values[] = {SD_FILTER_MITCHELL};
    for (int k = 0; k < 4; k++) {
        const uint8_t *data = k & 1 ? jpg : png;
        size_t n = k & 1 ? jn : pn;
        const sd_render *render = k >= 2 ? &r : NULL;
        sd_bitmap *got = NULL, *want = NULL;
        sd_isolate_info info;
        char why[256];
        ASSERT_OK(sd_isolate_decode(pool, data, n, keys, values, 1, render, NULL, &got, &info, why, sizeof why));
        sd_decoder *d;
        ASSERT_OK(sd_decoder_new(&d));
        ASSERT_OK(sd_decoder_set(d, SD_DEC_RESAMPLE_FILTER, SD_FILTER_MITCHELL));
        if (render)
            ASSERT_OK(sd_decoder_set_render(d, render));
        ASSERT_OK(sd_decoder_decode(d, data, n, &want));
        sd_decoder_free(d);
        if (!same(got, want))
            SD_TEST_FAIL_("case %d: %ux%u from the worker, %ux%u here, max diff %d", k, sd_bitmap_width(got),
                          sd_bitmap_height(got), sd_bitmap_width(want), sd_bitmap_height(want),
                          sd_bitmap_max_diff(got, want));
        ASSERT_EQ(info.source_width, 300);
        ASSERT_EQ(info.format, k & 1 ? SD_FORMAT_JPEG : SD_FORMAT_PNG);
        ASSERT_EQ(info.complete, 1);
        sd_bitmap_free(got);
        sd_bitmap_free(want);
    }
    /* the decoder's own errors come back as they are */
    static const uint8_t junk[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R',
                                   0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0, 0, 0, 0};
    sd_bitmap *b = NULL;
    char why[256];
    int rc = sd_isolate_decode(pool, junk, sizeof junk, NULL, NULL, 0, NULL, NULL, &b, NULL, why, sizeof why);
    ASSERT(rc != SD_OK && rc != SD_ECANCELLED && rc != SD_ELIMIT && b == NULL && why[0] != '\0');
    ASSERT(healthy(pool, png, pn));
    /* an SVG with text: its fonts were loaded before the sandbox closed */
#ifdef SD_TEST_WITH_SVG
    static const char svg[] = "<svg xmlns='http://www.w3.org/2000/svg' width='64' height='32'>"
                              "<text x='2' y='24' font-size='20' font-family='sans-serif'>Ab</text>"
                              "<text x='30' y='30' font-size='13' font-family='serif' font-weight='bold'>Qz</text>"
                              "<text x='2' y='10' font-size='8'>x</text></svg>";
    rc = sd_isolate_decode(pool, svg, sizeof svg - 1, NULL, NULL, 0, NULL, NULL, &b, NULL, why, sizeof why);
    if (rc != SD_OK)
        SD_TEST_FAIL_("an SVG with text in a worker: %d (%s)", rc, why);
    ASSERT_EQ(sd_bitmap_width(b), 64);
    ASSERT(sd_bitmap_has_alpha(b)); /* drawn, on transparency */
    sd_bitmap_free(b);
#endif
    sd_isolate_pool_free(pool);
    sd_free(png);
    sd_free(jpg);
    sd_bitmap_free(src);
    return 0;
}

/* Every format decodes in a worker as it does here: WebP, AVIF and GIF by
 * our encoders, HEIC and JPEG XL by heif-enc and cjxl (when installed):
 * their libraries, loaded before the sandbox closed, work inside it. */
static int test_formats(void)
{
    sd_bitmap *src = gradient(120, 80);
    ASSERT_NOT_NULL(src);
    char dir[] = "/tmp/sd-isolate-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    char png[300], heic[300], jxl[300], cmd[1024];
    snprintf(png, sizeof png, "%s/in.png", dir);
    snprintf(heic, sizeof heic, "%s/in.heic", dir);
    snprintf(jxl, sizeof jxl, "%s/in.jxl", dir);
    uint8_t *bytes = NULL;
    size_t n;
    ASSERT_OK(enc_png(src, 1, &bytes, &n));
    ASSERT_EQ(sd_write_file(png, bytes, n), 0);
    sd_free(bytes);
    struct {
        const char *name;
        uint8_t *data;
        size_t n;
        int mine; /* sd_free'd (ours), else free'd (read from a file) */
    } files[5];
    int count = 0;
    ASSERT_OK(enc_webp(src, 80, 0, &files[count].data, &files[count].n));
    files[count].name = "webp", files[count++].mine = 1;
    ASSERT_OK(enc_avif(src, 60, 8, &files[count].data, &files[count].n));
    files[count].name = "avif", files[count++].mine = 1;
    const sd_bitmap *frames[] = {src, src};
    const int delays[] = {100, 100};
    ASSERT_OK(enc_gif(frames, delays, 2, 0, &files[count].data, &files[count].n));
    files[count].name = "gif", files[count++].mine = 1;
    snprintf(cmd, sizeof cmd, "heif-enc -q 80 %s -o %s", png, heic);
    if (access("/usr/bin/heif-enc", X_OK) == 0 && sd_run_quiet(cmd) == 0 &&
        (files[count].data = sd_read_file(heic, &files[count].n)) != NULL)
        files[count].name = "heic", files[count++].mine = 0;
    snprintf(cmd, sizeof cmd, "cjxl -q 90 %s %s", png, jxl);
    if (access("/usr/bin/cjxl", X_OK) == 0 && sd_run_quiet(cmd) == 0 &&
        (files[count].data = sd_read_file(jxl, &files[count].n)) != NULL)
        files[count].name = "jxl", files[count++].mine = 0;
    sd_isolate_pool *pool;
    ASSERT_OK(sd_isolate_pool_new(SD_WORKER_PATH, 1, NULL, &pool));
    for (int i = 0; i < count; i++) {
        sd_bitmap *got = NULL, *want = NULL;
        char why[256];
        int rc = sd_isolate_decode(pool, files[i].data, files[i].n, NULL, NULL, 0, NULL, NULL, &got, NULL, why, sizeof why);
        if (rc != SD_OK)
            SD_TEST_FAIL_("%s in a worker: %d (%s)", files[i].name, rc, why);
        /* under valgrind here (not in the worker): HEVC's assembly reads as
         * uninitialised to it, and libjxl picks another SIMD target (1 level) */
        int hevc = strcmp(files[i].name, "heic") == 0, jxl_ = strcmp(files[i].name, "jxl") == 0;
        if (hevc && sd_under_valgrind()) {
            ASSERT_EQ(sd_bitmap_width(got), 120);
            sd_bitmap_free(got);
            continue;
        }
        ASSERT_OK(sd_decode(files[i].data, files[i].n, &want));
        int tolerance = jxl_ && sd_under_valgrind() ? 1 : 0;
        if (sd_bitmap_width(got) != sd_bitmap_width(want) || sd_bitmap_height(got) != sd_bitmap_height(want) ||
            sd_bitmap_max_diff(got, want) > tolerance)
            SD_TEST_FAIL_("%s: the worker's pixels differ (max %d)", files[i].name, sd_bitmap_max_diff(got, want));
        sd_bitmap_free(got);
        sd_bitmap_free(want);
        printf("  %s: the same in a worker\n", files[i].name);
    }
    sd_isolate_pool_free(pool);
    for (int i = 0; i < count; i++) {
        if (files[i].mine)
            sd_free(files[i].data);
        else
            free(files[i].data);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ASSERT_EQ(system(cmd), 0);
    sd_bitmap_free(src);
    return 0;
}

static int test_sandbox_kills(void)
{
    sd_bitmap *src = gradient(40, 30);
    uint8_t *png = NULL;
    size_t n;
    ASSERT_OK(enc_png(src, 1, &png, &n));
    sd_isolate_pool *pool;
    ASSERT_OK(sd_isolate_pool_new(SD_WORKER_PATH, 1, NULL, &pool));
    /* reading a file outside the fonts: refused (Landlock), or the worker
     * killed where the kernel has no Landlock — never read */
    char why[256] = "";
    int rc = sd__isolate_probe(pool, PROBE_OPEN, NULL, why, sizeof why);
    if (!((rc == SD_EIO && strstr(why, "Permission denied") != NULL) ||
          (rc == SD_ELIMIT && strstr(why, "sandbox") != NULL)))
        SD_TEST_FAIL_("reading /etc/hostname: %d (%s)", rc, why);
    ASSERT(healthy(pool, png, n));
    /* opening to write, a socket, an exec: killed */
    static const int probes[] = {PROBE_OPEN_WRITE, PROBE_SOCKET, PROBE_EXEC};
    for (size_t i = 0; i < 3; i++) {
        int pids[1] = {0};
        ASSERT(healthy(pool, png, n));
        ASSERT_EQ(sd_isolate_pool_pids(pool, pids, 1), 1);
        rc = sd__isolate_probe(pool, probes[i], NULL, why, sizeof why);
        if (rc != SD_ELIMIT || strstr(why, "sandbox") == NULL)
            SD_TEST_FAIL_("probe %d: %d (%s), not stopped by the sandbox", probes[i], rc, why);
        /* that worker is gone; the next decode has a fresh one */
        int after[1] = {0};
        ASSERT_EQ(sd_isolate_pool_pids(pool, after, 1), 0);
        ASSERT(healthy(pool, png, n));
        ASSERT_EQ(sd_isolate_pool_pids(pool, after, 1), 1);
        ASSERT(after[0] != pids[0]);
    }
    sd_isolate_pool_free(pool);
    sd_free(png);
    sd_bitmap_free(src);
    return 0;
}

typedef struct {
    sd_isolate_pool *pool;
    int probe, rc;
    char why[256];
} probe_job;

static void *probe_thread(void *arg)
{
    probe_job *j = arg;
    j->rc = sd__isolate_probe(j->pool, j->probe, NULL, j->why, sizeof j->why);
    return NULL;
}

static int test_limits(void)
{
    sd_bitmap *src = gradient(40, 30);
    uint8_t *png = NULL;
    size_t n;
    ASSERT_OK(enc_png(src, 1, &png, &n));
    /* killed from outside mid-decode: the caller gets an error, not a hang */
    sd_isolate_limits patient = {.cpu_ms = (int64_t)1 << 40, .wall_ms = (int64_t)1 << 40};
    sd_isolate_pool *pool;
    ASSERT_OK(sd_isolate_pool_new(SD_WORKER_PATH, 1, &patient, &pool));
    ASSERT(healthy(pool, png, n));
    probe_job j = {pool, PROBE_SPIN, 0, ""};
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, probe_thread, &j), 0);
    int pid[1] = {0};
    ASSERT_EQ(sd_isolate_pool_pids(pool, pid, 1), 1);
    ASSERT_EQ(kill(pid[0], SIGKILL), 0);
    pthread_join(t, NULL);
    if (j.rc != SD_ELIMIT || strstr(j.why, "signal 9") == NULL)
        SD_TEST_FAIL_("killed mid-decode: %d (%s)", j.rc, j.why);
    ASSERT(healthy(pool, png, n));
    sd_isolate_pool_free(pool);

    /* over its CPU time: a worker that spins forever is killed by the limit */
    sd_isolate_limits cpu = {.cpu_ms = 200, .wall_ms = (int64_t)1 << 40};
    ASSERT_OK(sd_isolate_pool_new(SD_WORKER_PATH, 1, &cpu, &pool));
    char why[256];
    int rc = sd__isolate_probe(pool, PROBE_SPIN, NULL, why, sizeof why);
    if (rc != SD_ELIMIT || strstr(why, "CPU") == NULL)
        SD_TEST_FAIL_("over its CPU time: %d (%s)", rc, why);
    ASSERT(healthy(pool, png, n));
    sd_isolate_pool_free(pool);

    /* over its wall time */
    sd_isolate_limits wall = {.cpu_ms = (int64_t)1 << 40, .wall_ms = 300};
    ASSERT_OK(sd_isolate_pool_new(SD_WORKER_PATH, 1, &wall, &pool));
    rc = sd__isolate_probe(pool, PROBE_SPIN, NULL, why, sizeof why);
    if (rc != SD_ELIMIT || strstr(why, "took more than") == NULL)
        SD_TEST_FAIL_("over its wall time: %d (%s)", rc, why);
    sd_isolate_pool_free(pool);

    /* over its memory: a 12000 x 12000 canvas does not fit in 256 MiB;
     * the decode fails cleanly (or the worker dies) and the pool goes on
     * (not under AddressSanitizer: its workers run without RLIMIT_AS) */
#if defined(__SANITIZE_ADDRESS__)
#define SD_NO_RLIMIT_AS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SD_NO_RLIMIT_AS 1
#endif
#endif
#ifndef SD_NO_RLIMIT_AS
    /* not under valgrind either: the 12000^2 source is encoded here, in the
     * process valgrind slows ~50x (~250 s of the valgrind lane); the worker's
     * limit is the kernel's, checked by the release and UBSan runs */
    if (sd_under_valgrind()) {
        sd_free(png);
        sd_bitmap_free(src);
        return 0;
    }
    sd_isolate_limits mem = {.cpu_ms = (int64_t)1 << 40, .wall_ms = (int64_t)1 << 40, .memory_bytes = 256 << 20};
    ASSERT_OK(sd_isolate_pool_new(SD_WORKER_PATH, 1, &mem, &pool));
    sd_bitmap *big;
    ASSERT_OK(sd_bitmap_new(12000, 12000, &big));
    uint8_t *bigpng = NULL;
    size_t bn;
    ASSERT_OK(enc_png(big, 1, &bigpng, &bn));
    sd_bitmap_free(big);
    sd_bitmap *b = NULL;
    rc = sd_isolate_decode(pool, bigpng, bn, NULL, NULL, 0, NULL, NULL, &b, NULL, why, sizeof why);
    if (rc == SD_OK)
        SD_TEST_FAIL_("a 12000x12000 decode fit in 256 MiB (%ux%u)", sd_bitmap_width(b), sd_bitmap_height(b));
    ASSERT(why[0] != '\0');
    ASSERT(healthy(pool, png, n));
    sd_free(bigpng);
    sd_isolate_pool_free(pool);
#endif
    sd_free(png);
    sd_bitmap_free(src);
    return 0;
}

#ifdef SD_TEST_WITH_SVG
typedef struct {
    sd_isolate_pool *pool;
    const char *svg;
    int cancel, rc;
    char why[256];
} cancel_job;

static void *cancel_thread(void *arg)
{
    cancel_job *j = arg;
    sd_bitmap *b = NULL;
    j->rc = sd_isolate_decode(j->pool, j->svg, strlen(j->svg), NULL, NULL, 0, NULL, &j->cancel, &b, NULL, j->why,
                              sizeof j->why);
    sd_bitmap_free(b);
    return NULL;
}
#endif

/* A decode its caller gives up (a client gone) ends at once: the worker
 * is killed, not left to burn its budget, and the next decode has a fresh
 * one. The SVG's filter costs far more than the limits allow any test. */
static int test_cancel(void)
{
#ifdef SD_TEST_WITH_SVG
    sd_isolate_limits patient = {.cpu_ms = (int64_t)1 << 40, .wall_ms = (int64_t)1 << 40};
    sd_isolate_pool *pool;
    ASSERT_OK(sd_isolate_pool_new(SD_WORKER_PATH, 1, &patient, &pool));
    sd_bitmap *src = gradient(8, 8);
    uint8_t *png = NULL;
    size_t n;
    ASSERT_OK(enc_png(src, 1, &png, &n));
    ASSERT(healthy(pool, png, n));
    cancel_job j = {pool,
                    "<svg xmlns='http://www.w3.org/2000/svg' width='4000' height='4000'><filter id='f'>"
                    "<feTurbulence baseFrequency='0.05' numOctaves='100000'/></filter>"
                    "<rect width='4000' height='4000' filter='url(#f)'/></svg>",
                    0, 0, ""};
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, cancel_thread, &j), 0);
    __atomic_store_n(&j.cancel, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    if (j.rc != SD_ECANCELLED || strstr(j.why, "cancelled by its caller") == NULL)
        SD_TEST_FAIL_("a cancelled decode: %d (%s)", j.rc, j.why);
    int pid[1];
    ASSERT_EQ(sd_isolate_pool_pids(pool, pid, 1), 0); /* killed */
    ASSERT(healthy(pool, png, n));
    sd_isolate_pool_free(pool);
    sd_free(png);
    sd_bitmap_free(src);
    return 0;
#else
    return 77;
#endif
}

/* A worker whose pool's process dies (SIGKILL) ends too, even mid-decode:
 * no orphan goes on burning its budget on a result nobody reads. */
static int test_orphan(void)
{
#ifdef SD_TEST_WITH_SVG
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t child = fork();
    ASSERT(child >= 0);
    if (child == 0) { /* the pool's process: a hostile decode, its worker's pid told, then killed */
        close(fds[0]);
        sd_isolate_limits patient = {.cpu_ms = (int64_t)1 << 40, .wall_ms = (int64_t)1 << 40};
        sd_isolate_pool *pool;
        if (sd_isolate_pool_new(SD_WORKER_PATH, 1, &patient, &pool) != SD_OK)
            _exit(1);
        cancel_job j = {pool,
                        "<svg xmlns='http://www.w3.org/2000/svg' width='4000' height='4000'><filter id='f'>"
                        "<feTurbulence baseFrequency='0.05' numOctaves='100000'/></filter>"
                        "<rect width='4000' height='4000' filter='url(#f)'/></svg>",
                        0, 0, ""};
        pthread_t t;
        pthread_create(&t, NULL, cancel_thread, &j);
        int pid = 0;
        while (sd_isolate_pool_pids(pool, &pid, 1) == 0)
            usleep(10000);
        if (write(fds[1], &pid, sizeof pid) != (ssize_t)sizeof pid)
            _exit(1);
        for (;;)
            pause();
    }
    close(fds[1]);
    int worker = 0;
    ASSERT_EQ(read(fds[0], &worker, sizeof worker), (ssize_t)sizeof worker);
    close(fds[0]);
    usleep(100000); /* the decode under way */
    ASSERT_EQ(kill(child, SIGKILL), 0);
    ASSERT_EQ(waitpid(child, NULL, 0), child);
    /* the worker goes (or is a zombie of whoever adopted it) */
    int gone = 0;
    for (int i = 0; i < 12000 && !gone; i++) {
        char path[64], state = 0;
        snprintf(path, sizeof path, "/proc/%d/stat", worker);
        FILE *f = fopen(path, "r");
        if (f == NULL) {
            gone = 1;
            break;
        }
        if (fscanf(f, "%*d %*s %c", &state) == 1 && (state == 'Z' || state == 'X'))
            gone = 1;
        fclose(f);
        if (!gone)
            usleep(10000);
    }
    if (!gone) {
        kill(worker, SIGKILL);
        SD_TEST_FAIL_("worker %d outlived its pool's process", worker);
    }
    return 0;
#else
    return 77;
#endif
}

/* A reply whose memfd is not sealed could be shrunk under the mapping
 * (SIGBUS here): refused, and that worker not trusted again. */
static int test_unsealed_refused(void)
{
    sd_isolate_pool *pool;
    ASSERT_OK(sd_isolate_pool_new(SD_WORKER_PATH, 1, NULL, &pool));
    sd_bitmap *b = NULL;
    char why[256];
    int rc = sd__isolate_probe(pool, PROBE_UNSEALED, &b, why, sizeof why);
    if (rc != SD_ECORRUPT || b != NULL)
        SD_TEST_FAIL_("an unsealed bitmap: %d (%s)", rc, why);
    int pid[1];
    ASSERT_EQ(sd_isolate_pool_pids(pool, pid, 1), 0);
    sd_isolate_pool_free(pool);
    return 0;
}

/* A worker holds its socket and the standard descriptors, nothing of the
 * program that started it (a listening socket kept open there would go on
 * accepting connections after the program closed it). */
static int test_descriptors(void)
{
    int leak[2];
    ASSERT_EQ(pipe(leak), 0); /* not close-on-exec */
    sd_bitmap *src = gradient(8, 8);
    uint8_t *png = NULL;
    size_t n;
    ASSERT_OK(enc_png(src, 1, &png, &n));
    sd_isolate_pool *pool;
    ASSERT_OK(sd_isolate_pool_new(SD_WORKER_PATH, 1, NULL, &pool));
    ASSERT(healthy(pool, png, n));
    int pid[1];
    ASSERT_EQ(sd_isolate_pool_pids(pool, pid, 1), 1);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "test \"$(ls /proc/%d/fd | sort -n | tr '\\n' ' ')\" = '0 1 2 3 '", pid[0]);
    /* the worker closes the memfd of its last answer just after sending
     * it, so the answer can arrive first: wait for that one to go (a
     * descriptor inherited from here never does; 10 minutes at most) */
    int rc = system(cmd);
    for (int i = 0; rc != 0 && i < 6000; i++) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        rc = system(cmd);
    }
    if (rc != 0) {
        snprintf(cmd, sizeof cmd, "ls -l /proc/%d/fd >&2", pid[0]);
        (void)system(cmd);
        SD_TEST_FAIL_("the worker holds descriptors beyond 0-3 (%d)", rc);
    }
    sd_isolate_pool_free(pool);
    close(leak[0]);
    close(leak[1]);
    sd_free(png);
    sd_bitmap_free(src);
    return 0;
}

static int test_arguments(void)
{
    sd_isolate_pool *pool = NULL;
    ASSERT_EQ(sd_isolate_pool_new("/nonexistent/worker", 1, NULL, &pool), SD_EINVAL);
    ASSERT(pool == NULL);
    ASSERT_EQ(sd_isolate_pool_new(NULL, 1, NULL, &pool), SD_EINVAL);
    ASSERT_OK(sd_isolate_pool_new(SD_WORKER_PATH, 0, NULL, &pool));
    sd_bitmap *b = (sd_bitmap *)1;
    ASSERT_EQ(sd_isolate_decode(pool, NULL, 5, NULL, NULL, 0, NULL, NULL, &b, NULL, NULL, 0), SD_EINVAL);
    ASSERT(b == NULL);
    ASSERT_EQ(sd_isolate_decode(pool, "x", 1, NULL, NULL, 1, NULL, NULL, &b, NULL, NULL, 0), SD_EINVAL);
    sd_isolate_pool_free(pool);
    sd_isolate_pool_free(NULL);
    /* a program started as a worker without a pool's socket refuses */
    ASSERT(system(SD_WORKER_PATH " --sdcore-worker 3</dev/null >/dev/null 2>&1") != 0);
    return 0;
}

int main(int argc, char **argv)
{
    static const sd_test_case tests[] = {
        {"same_pixels", test_same_pixels},
        {"formats", test_formats},
        {"sandbox_kills", test_sandbox_kills},
        {"limits", test_limits},
        {"cancel", test_cancel},
        {"orphan", test_orphan},
        {"unsealed_refused", test_unsealed_refused},
        {"descriptors", test_descriptors},
        {"arguments", test_arguments},
        {NULL, NULL},
    };
    return sd_test_run(tests, argc, argv);
}
