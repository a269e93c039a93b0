/*
 * bench_fetch.c — `sdcore-bench fetch`: the transfer loop against its
 * ceiling, in one run, over loopback nginx serving generated photo JPEGs:
 *   plain:   a bare libcurl multi loop with reused easy handles (the ceiling);
 *   sd_loop: download only, and download + decode on the worker pool;
 *   decode:  the same files decoded from memory by the same number of
 *            threads, no network (what decoding alone costs).
 * Reported as images/s, MB/s and ratios, at concurrency 6 and 32.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include <sdcore.h>

#include "../../Tests/C/sd_test_encode.h"

#ifndef SD_SOURCE_DIR
#define SD_SOURCE_DIR "."
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of the whole process (all threads), user + system */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char dir[256], base_url[256];
static int nfiles;
static char **urls;
static unsigned char **blobs;
static size_t *blob_len;
static double total_mb;

/* ---- corpus: photo-like JPEGs of mixed sizes ---- */

static sd_bitmap *photo(int w, int h, unsigned seed)
{
    sd_bitmap *b;
    sd_bitmap_new((uint32_t)w, (uint32_t)h, &b);
    uint8_t *p = sd_bitmap_pixels(b);
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            seed = seed * 1664525u + 1013904223u;
            int n = (int)(seed >> 28);
            uint8_t px[4] = {(uint8_t)((x * 200 / w + n * 3) & 255), (uint8_t)((y * 180 / h + (x * y >> 9) + n) & 255),
                             (uint8_t)(((x + y) * 90 / (w + h) + n * 2) & 255), 255};
            sd_premultiply_rgba(px, p + (size_t)y * sd_bitmap_stride(b) + (size_t)x * 4, 1);
        }
    }
    return b;
}

static int write_file(const char *path, const void *d, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    fwrite(d, 1, n, f);
    fclose(f);
    return 0;
}

static int make_corpus(int count)
{
    static const int sizes[][2] = {{320, 240}, {640, 480}, {800, 600}, {1024, 768}, {1600, 1200}};
    enum { DISTINCT = 10 };
    unsigned char *dist[DISTINCT];
    size_t dist_len[DISTINCT];
    for (int i = 0; i < DISTINCT; i++) {
        const int *s = sizes[i % 5];
        sd_bitmap *b = photo(s[0], s[1], 7u + (unsigned)i);
        enc_jpeg(b, 85, i % 4 == 3, &dist[i], &dist_len[i]);
        sd_bitmap_free(b);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/www/img", dir);
    mkdir(path, 0755);
    nfiles = count;
    urls = calloc((size_t)count, sizeof *urls);
    blobs = calloc((size_t)count, sizeof *blobs);
    blob_len = calloc((size_t)count, sizeof *blob_len);
    for (int i = 0; i < count; i++) {
        int k = i % DISTINCT;
        snprintf(path, sizeof path, "%s/www/img/p%03d.jpg", dir, i);
        if (write_file(path, dist[k], dist_len[k]))
            return -1;
        urls[i] = malloc(1024);
        snprintf(urls[i], 1024, "%s/img/p%03d.jpg", base_url, i);
        /* one buffer per file, like the fetched bodies: the decode-only
         * baseline must not enjoy 10 cache-hot blobs the fetch run lacks */
        blobs[i] = malloc(dist_len[k]);
        if (blobs[i] == NULL)
            return -1;
        memcpy(blobs[i], dist[k], dist_len[k]);
        blob_len[i] = dist_len[k];
        total_mb += (double)dist_len[k] / 1e6;
    }
    /* the fault server in servers.sh wants these two */
    snprintf(path, sizeof path, "%s/www/img/small.jpg", dir);
    write_file(path, dist[0], dist_len[0]);
    snprintf(path, sizeof path, "%s/www/img/prog.jpg", dir);
    write_file(path, dist[3], dist_len[3]);
    for (int i = 0; i < DISTINCT; i++)
        sd_free(dist[i]);
    return 0;
}

/* ---- the ceiling: a plain curl multi loop with reused handles ---- */

typedef struct {
    unsigned char *buf;
    size_t len, cap;
} sink_t;

static size_t sink_write(char *p, size_t s, size_t n, void *ud)
{
    sink_t *k = ud;
    size_t len = s * n;
    if (k->len + len > k->cap) {
        k->cap = (k->len + len) * 2;
        k->buf = realloc(k->buf, k->cap);
    }
    memcpy(k->buf + k->len, p, len);
    k->len += len;
    return len;
}

/* `buffer`: curl's receive buffer; 0 keeps curl's default (16 KiB) */
static double plain_curl(int conc, int rounds, long buffer)
{
    CURLM *m = curl_multi_init();
    CURL **h = calloc((size_t)conc, sizeof *h);
    sink_t *sinks = calloc((size_t)conc, sizeof *sinks);
    int next = 0, total = nfiles * rounds, done = 0;
    double t0 = now_s();
    for (int i = 0; i < conc && next < total; i++) {
        h[i] = curl_easy_init();
        if (buffer > 0)
            curl_easy_setopt(h[i], CURLOPT_BUFFERSIZE, buffer);
        curl_easy_setopt(h[i], CURLOPT_WRITEFUNCTION, sink_write);
        curl_easy_setopt(h[i], CURLOPT_WRITEDATA, &sinks[i]);
        curl_easy_setopt(h[i], CURLOPT_PRIVATE, (char *)(intptr_t)i);
        curl_easy_setopt(h[i], CURLOPT_URL, urls[next++ % nfiles]);
        curl_multi_add_handle(m, h[i]);
    }
    while (done < total) {
        int still;
        curl_multi_perform(m, &still);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            intptr_t i;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&i);
            if (msg->data.result != CURLE_OK)
                fprintf(stderr, "plain: %s\n", curl_easy_strerror(msg->data.result));
            done++;
            sinks[i].len = 0;
            curl_multi_remove_handle(m, h[i]);
            if (next < total) {
                curl_easy_setopt(h[i], CURLOPT_URL, urls[next++ % nfiles]);
                curl_multi_add_handle(m, h[i]);
            }
        }
        if (done < total)
            curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    double t = now_s() - t0;
    for (int i = 0; i < conc; i++) {
        if (h[i])
            curl_easy_cleanup(h[i]);
        free(sinks[i].buf);
    }
    free(h);
    free(sinks);
    curl_multi_cleanup(m);
    return t;
}

/* ---- sd_loop ---- */

static atomic_int completed, failures, connections;
static int target; /* completions run_loop waits for */
static pthread_mutex_t done_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;

static void on_done(sd_transfer_id id, sd_result *r, void *u)
{
    (void)id;
    (void)u;
    if (sd_result_status(r) != SD_OK && atomic_fetch_add(&failures, 1) == 0)
        fprintf(stderr, "sd_loop: %s\n", sd_result_message(r));
    atomic_fetch_add(&connections, (int)sd_result_metric(r, SD_METRIC_CONNECTIONS));
    sd_result_free(r);
    if (atomic_fetch_add(&completed, 1) + 1 == target) {
        pthread_mutex_lock(&done_mu);
        pthread_cond_signal(&done_cv);
        pthread_mutex_unlock(&done_mu);
    }
}

static double run_loop(int conc, int rounds, int decode, int threads)
{
    sd_loop *l;
    sd_loop_new(&l);
    sd_loop_set(l, SD_LOOP_MAX_CONCURRENT, conc);
    sd_loop_use_decoder(l, threads);
    sd_loop_start(l);
    sd_transfer_events ev = SD_TRANSFER_EVENTS_INIT;
    ev.complete = on_done;
    atomic_store(&completed, 0);
    atomic_store(&connections, 0);
    int total = nfiles * rounds;
    target = total;
    double t0 = now_s();
    for (int i = 0; i < total; i++) {
        sd_request *r;
        sd_request_new(urls[i % nfiles], &r);
        sd_request_set(r, SD_REQ_USE_SINK, decode);
        sd_loop_submit(l, r, &ev, NULL, NULL);
        sd_request_free(r);
    }
    /* sleep until the last completion: a polling waiter would cost the
     * loop a context switch every few hundred microseconds on a busy box */
    pthread_mutex_lock(&done_mu);
    while (atomic_load(&completed) < total)
        pthread_cond_wait(&done_cv, &done_mu);
    pthread_mutex_unlock(&done_mu);
    double t = now_s() - t0;
    sd_loop_free(l);
    return t;
}

/* ---- decode only, same thread count ---- */

static atomic_int next_decode;
static int decode_total;

static void *decode_worker(void *arg)
{
    (void)arg;
    int i;
    while ((i = atomic_fetch_add(&next_decode, 1)) < decode_total) {
        sd_bitmap *b;
        if (sd_decode(blobs[i % nfiles], blob_len[i % nfiles], &b) == SD_OK)
            sd_bitmap_free(b);
    }
    return NULL;
}

static double decode_only(int threads, int rounds)
{
    pthread_t th[64];
    atomic_store(&next_decode, 0);
    decode_total = nfiles * rounds;
    double t0 = now_s();
    for (int i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, decode_worker, NULL);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    return now_s() - t0;
}

#define SD_MINF(a, b) ((a) < (b) ? (a) : (b))
#define SD_MAXI(a, b) ((a) > (b) ? (a) : (b))

int bench_fetch_main(int argc, char **argv)
{
    int count = 300, rounds = 8, json = 0, reps = 3;
    const char *external = NULL, *only = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--quick"))
            count = 60, rounds = 1, reps = 1;
        else if (!strcmp(argv[i], "--count") && i + 1 < argc)
            count = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i]; /* plain | plain-tuned | download | decode: one mode, for profilers;
                                 serve (with --keep-server): just serve the files */
        else if (!strcmp(argv[i], "--keep-server") && i + 1 < argc)
            external = argv[++i]; /* write the server's base URL here and wait (for sdimage) */
        else {
            fprintf(stderr, "usage: sdcore-bench fetch [--count N] [--rounds N] [--quick] [--json] [--only plain|plain-tuned|download|decode|serve] [--keep-server FILE]\n");
            return 2;
        }
    }
    if (getenv("SDCORE_BENCH_REPS")) /* more repetitions: steadier best-of on a noisy machine */
        reps = SD_MAXI(1, atoi(getenv("SDCORE_BENCH_REPS")));
    curl_global_init(CURL_GLOBAL_DEFAULT);
    snprintf(dir, sizeof dir, "/tmp/sdbench.XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    char p[512], cmd[1024];
    snprintf(p, sizeof p, "%s/www", dir);
    mkdir(p, 0755);
    snprintf(base_url, sizeof base_url, "http://127.0.0.1:0"); /* set after start */
    /* generate files first (URLs fixed up once the port is known) */
    if (make_corpus(count)) {
        fprintf(stderr, "sdcore-bench: cannot write the corpus\n");
        return 1;
    }
    snprintf(cmd, sizeof cmd, "bash %s/Tests/Servers/servers.sh start %s %d", SD_SOURCE_DIR, dir, (int)getpid());
    if (system(cmd) != 0) {
        fprintf(stderr, "sdcore-bench: cannot start nginx (Tests/Servers/servers.sh)\n");
        return 1;
    }
    snprintf(p, sizeof p, "%s/env", dir);
    FILE *f = fopen(p, "r");
    char line[200];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "SD_TEST_HTTP=", 13)) {
            line[strcspn(line, "\n")] = 0;
            snprintf(base_url, sizeof base_url, "%s", line + 13);
        }
    if (f)
        fclose(f);
    for (int i = 0; i < nfiles; i++)
        snprintf(urls[i], 1024, "%s/img/p%03d.jpg", base_url, i);
    if (external) {
        FILE *o = fopen(external, "w");
        if (o) {
            fprintf(o, "%s %d\n", base_url, nfiles);
            fclose(o);
        }
    }

    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = cores > 0 ? (int)cores : 2;
    int concs[2] = {6, 32};
    double t_plain[2], t_tuned[2], t_dl[2], t_dec[2];
    /* warm the page cache and the connections once */
    plain_curl(6, 1, 0);
    if (only && !strcmp(only, "serve") && external) {
        /* only the server and its files, for sdimage's own benchmarks */
        printf("{\"bench\":\"serve\",\"images\":%d}\n", nfiles);
        fflush(stdout);
        char stop[600];
        snprintf(stop, sizeof stop, "%s.stop", external);
        for (int i = 0; i < 36000 && access(stop, F_OK) != 0; i++)
            usleep(100000);
        snprintf(cmd, sizeof cmd, "bash %s/Tests/Servers/servers.sh stop %s; rm -rf %s", SD_SOURCE_DIR, dir, dir);
        return system(cmd) == 0 ? 0 : 1;
    }
    if (only) {
        int oc = getenv("SDCORE_BENCH_CONCURRENCY") ? atoi(getenv("SDCORE_BENCH_CONCURRENCY")) : 32;
        double t = !strcmp(only, "plain") ? plain_curl(oc, rounds, 0)
                 : !strcmp(only, "plain-tuned") ? plain_curl(oc, rounds, SD_DEFAULT_RECEIVE_BUFFER)
                 : !strcmp(only, "download") ? run_loop(oc, rounds, 0, threads)
                 : run_loop(oc, rounds, 1, threads);
        printf("%s: %.0f images/s", only, nfiles * rounds / t);
        if (strncmp(only, "plain", 5) != 0)
            printf(" (%d new connections for %d transfers)", atomic_load(&connections), nfiles * rounds);
        printf("\n");
        snprintf(cmd, sizeof cmd, "bash %s/Tests/Servers/servers.sh stop %s; rm -rf %s", SD_SOURCE_DIR, dir, dir);
        return system(cmd) == 0 ? 0 : 1;
    }
    /* modes interleaved, best of `reps`, so drift and neighbours hit all
     * alike; the order rotates so no lane always runs first. Lanes: plain
     * curl as it comes (the ceiling the targets name), plain curl with the
     * receive buffer the loop uses (the same tuning, for an honest
     * comparison), and the loop. */
    double t_decode_only = 1e30;
    for (int c = 0; c < 2; c++)
        t_plain[c] = t_tuned[c] = t_dl[c] = t_dec[c] = 1e30;
    for (int r = 0; r < reps; r++) {
        for (int c = 0; c < 2; c++) {
            double t[3], cpu[3];
            for (int k = 0; k < 3; k++) {
                int lane = (k + r) % 3;
                double c0 = cpu_s();
                t[lane] = lane == 0 ? plain_curl(concs[c], rounds, 0)
                        : lane == 1 ? plain_curl(concs[c], rounds, SD_DEFAULT_RECEIVE_BUFFER)
                                    : run_loop(concs[c], rounds, 0, threads);
                cpu[lane] = (cpu_s() - c0) * 1e6 / (nfiles * rounds);
            }
            if (getenv("SDCORE_BENCH_VERBOSE")) /* client CPU per transfer is steadier than wall time */
                fprintf(stderr, "c%d rep %d: plain %.0f/s %.1f us cpu, plain-tuned %.0f/s %.1f us cpu, "
                        "sd_loop %.0f/s %.1f us cpu\n", concs[c], r, nfiles * rounds / t[0], cpu[0],
                        nfiles * rounds / t[1], cpu[1], nfiles * rounds / t[2], cpu[2]);
            t_plain[c] = SD_MINF(t_plain[c], t[0]);
            t_tuned[c] = SD_MINF(t_tuned[c], t[1]);
            t_dl[c] = SD_MINF(t_dl[c], t[2]);
        }
    }
    int drounds = SD_MAXI(1, rounds / 4); /* decoding is ~20x slower: fewer rounds */
    for (int r = 0; r < reps; r++) {
        t_decode_only = SD_MINF(t_decode_only, decode_only(threads, drounds));
        for (int c = 0; c < 2; c++)
            t_dec[c] = SD_MINF(t_dec[c], run_loop(concs[c], drounds, 1, threads));
    }
    int dn = nfiles * drounds;
    int n = nfiles * rounds;
    double mb = total_mb * rounds;

    if (json) {
        printf("{\"bench\":\"fetch\",\"images\":%d,\"mb\":%.1f,\"decode_threads\":%d,\"decode_only_ips\":%.0f", n, mb,
               threads, dn / t_decode_only);
        for (int c = 0; c < 2; c++)
            printf(",\"c%d\":{\"plain_curl_ips\":%.0f,\"plain_curl_tuned_ips\":%.0f,\"download_ips\":%.0f,"
                   "\"download_mbps\":%.1f,\"download_ratio\":%.3f,\"download_ratio_tuned\":%.3f,"
                   "\"decode_ips\":%.0f,\"decode_ratio\":%.3f}",
                   concs[c], n / t_plain[c], n / t_tuned[c], n / t_dl[c], mb / t_dl[c], t_plain[c] / t_dl[c],
                   t_tuned[c] / t_dl[c], dn / t_dec[c], t_decode_only / t_dec[c]);
        printf(",\"failures\":%d}\n", atomic_load(&failures));
    } else {
        printf("sdcore-bench fetch: %d JPEGs (%.1f MB) x %d rounds from nginx on loopback, best of %d\n", nfiles,
               total_mb, rounds, reps);
        printf("decode threads: %d; decode-only (same threads, same files, from memory): %.0f images/s\n\n", threads,
               dn / t_decode_only);
        printf("%-34s %12s %12s %10s %8s\n", "", "images/s", "MB/s", "ratio", "target");
        for (int c = 0; c < 2; c++) {
            printf("concurrency %d\n", concs[c]);
            printf("  %-32s %12.0f %12.1f %10s %8s\n", "plain curl multi (ceiling)", n / t_plain[c],
                   mb / t_plain[c], "1.000", "");
            printf("  %-32s %12.0f %12.1f %10.3f %8s\n", "plain curl, loop's recv buffer", n / t_tuned[c],
                   mb / t_tuned[c], t_plain[c] / t_tuned[c], "");
            printf("  %-32s %12.0f %12.1f %10.3f %8s\n", "sd_loop download only", n / t_dl[c], mb / t_dl[c],
                   t_plain[c] / t_dl[c], ">=0.9");
            printf("  %-32s %12s %12s %10.3f %8s\n", "  ... against the tuned plain", "", "",
                   t_tuned[c] / t_dl[c], "");
            printf("  %-32s %12.0f %12.1f %10.3f %8s\n", "sd_loop download + decode", dn / t_dec[c],
                   total_mb * drounds / t_dec[c], t_decode_only / t_dec[c], ">=0.85");
        }
        printf("\n(download + decode ratio is against the decode-only run; the plain ceiling uses curl's\n"
               " default 16 KiB receive buffer, the loop %d KiB: the tuned row shows plain curl with it)\n",
               SD_DEFAULT_RECEIVE_BUFFER / 1024);
        if (atomic_load(&failures))
            printf("FAILURES: %d transfers failed\n", atomic_load(&failures));
    }
    fflush(stdout); /* a reader (sdimage) needs the results before we wait */
    if (external) {
        /* sdimage measures URLSession against the same server, then tells us to stop */
        char stop[600];
        snprintf(stop, sizeof stop, "%s.stop", external);
        for (int i = 0; i < 6000 && access(stop, F_OK) != 0; i++)
            usleep(100000);
    }
    snprintf(cmd, sizeof cmd, "bash %s/Tests/Servers/servers.sh stop %s; rm -rf %s", SD_SOURCE_DIR, dir, dir);
    if (system(cmd) != 0)
        return 1;
    return atomic_load(&failures) ? 1 : 0;
}
