/* sd_test_util.c — helpers shared by the C tests and the benchmark. */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sd_sha256.h"
#include "sd_test_util.h"

#ifndef SD_DEFAULT_CORPUS
#define SD_DEFAULT_CORPUS "../shared/corpus"
#endif

unsigned char *sd_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf)
        *len = (size_t)n;
    return buf;
}

const char *sd_corpus_dir(void)
{
    const char *env = getenv("SD_CORPUS_DIR");
    const char *dir = env && *env ? env : SD_DEFAULT_CORPUS;
    static char path[4096];
    snprintf(path, sizeof path, "%s/MANIFEST.tsv", dir);
    struct stat st;
    return stat(path, &st) == 0 ? dir : NULL;
}

void sd_bitmap_sha256(const sd_bitmap *b, char out[65])
{
    sd_sha256 s;
    sd_sha256_init(&s);
    for (uint32_t y = 0; y < sd_bitmap_height(b); y++)
        sd_sha256_update(&s, sd_bitmap_pixels(b) + y * sd_bitmap_stride(b),
                         (size_t)sd_bitmap_width(b) * 4);
    sd_sha256_hex(&s, out);
}

unsigned sd_rand(unsigned *state)
{
    unsigned x = *state ? *state : 0x9E3779B9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *state = x;
}

int sd_decode_chunked(sd_decoder *d, const unsigned char *data, size_t len, int chunk,
                      unsigned seed, int snapshot_every, sd_bitmap **out)
{
    size_t pos = 0;
    int pushes = 0;
    *out = NULL;
    while (pos < len) {
        size_t n = len - pos;
        if (chunk == 1)
            n = 1;
        else if (chunk < 0)
            n = 1 + sd_rand(&seed) % (sd_rand(&seed) % 4 == 0 ? 7 : 4096);
        if (n > len - pos)
            n = len - pos;
        int rc = sd_decoder_push(d, data + pos, n);
        if (rc != SD_OK)
            return rc;
        pos += n;
        if (snapshot_every && ++pushes % snapshot_every == 0) {
            sd_bitmap *snap = NULL;
            rc = sd_decoder_snapshot(d, &snap);
            if (rc != SD_OK && rc != SD_EAGAIN)
                return rc;
            sd_bitmap_free(snap);
        }
    }
    int rc = sd_decoder_finish(d);
    if (rc != SD_OK)
        return rc;
    return sd_decoder_take_bitmap(d, out);
}

static void put_le(unsigned char *p, uint32_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

unsigned char *sd_make_webp_anim(const unsigned char *one, size_t one_len, size_t frames, int odd, size_t *len)
{
    if (one == NULL || one_len <= 20 || memcmp(one + 12, "VP8L", 4) != 0)
        return NULL;
    uint32_t vp8l = (uint32_t)one[16] | (uint32_t)one[17] << 8 | (uint32_t)one[18] << 16 | (uint32_t)one[19] << 24;
    size_t chunk = 8 + vp8l + (vp8l & 1), anmf = 8 + 16 + chunk, extra = odd ? 12 : 0;
    if (12 + chunk > one_len)
        return NULL;
    size_t total = 12 + 18 + 14 + frames * anmf + extra;
    unsigned char *w = calloc(1, total), *p = w;
    if (w == NULL)
        return NULL;
    memcpy(p, "RIFF", 4); put_le(p + 4, (uint32_t)(total - 8), 4); memcpy(p + 8, "WEBP", 4); p += 12;
    memcpy(p, "VP8X", 4); put_le(p + 4, 10, 4); p[8] = 0x02 | 0x10; p += 18; /* alpha, animation; 1x1 */
    memcpy(p, "ANIM", 4); put_le(p + 4, 6, 4); p += 14;
    for (size_t i = 0; i < frames; i++) {
        size_t more = odd && i == 1 ? extra : 0;
        memcpy(p, "ANMF", 4); put_le(p + 4, (uint32_t)(16 + chunk + more), 4);
        put_le(p + 20, 20, 3); /* 20 ms; offsets 0, size 1x1 (stored minus one) */
        p[23] = 0x02;          /* no blending: every frame is a key frame */
        memcpy(p + 24, one + 12, chunk);
        if (more) {
            memcpy(p + anmf, "XTRA", 4); put_le(p + anmf + 4, 4, 4); memcpy(p + anmf + 8, "abcd", 4);
        }
        p += anmf + more;
    }
    *len = total;
    return w;
}

int sd_write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return -1;
    size_t w = fwrite(p, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

int sd_under_valgrind(void)
{
    return getenv("SD_TEST_UNDER_VALGRIND") != NULL;
}

int sd_run_quiet(const char *cmd)
{
    char full[2048];
    snprintf(full, sizeof full, "%s >/dev/null 2>&1", cmd);
    return system(full);
}

static int same_size(const sd_bitmap *a, const sd_bitmap *b)
{
    return sd_bitmap_width(a) == sd_bitmap_width(b) && sd_bitmap_height(a) == sd_bitmap_height(b);
}

/* (the library's accessors are looked up once, not per byte: these run
 * over megapixels, under valgrind too) */
int sd_bitmap_max_diff(const sd_bitmap *a, const sd_bitmap *b)
{
    if (!same_size(a, b))
        return 999;
    int worst = 0;
    const uint8_t *pa = sd_bitmap_pixels(a), *pb = sd_bitmap_pixels(b);
    size_t sa = sd_bitmap_stride(a), sb = sd_bitmap_stride(b), n = (size_t)sd_bitmap_width(a) * 4;
    for (uint32_t y = 0, h = sd_bitmap_height(a); y < h; y++, pa += sa, pb += sb)
        for (size_t x = 0; x < n; x++) {
            int d = abs((int)pa[x] - (int)pb[x]);
            worst = d > worst ? d : worst;
        }
    return worst;
}
double sd_bitmap_mean_diff(const sd_bitmap *a, const sd_bitmap *b)
{
    if (!same_size(a, b))
        return 999;
    uint64_t sum = 0;
    const uint8_t *pa = sd_bitmap_pixels(a), *pb = sd_bitmap_pixels(b);
    size_t sa = sd_bitmap_stride(a), sb = sd_bitmap_stride(b), n = (size_t)sd_bitmap_width(a) * 4;
    for (uint32_t y = 0, h = sd_bitmap_height(a); y < h; y++, pa += sa, pb += sb)
        for (size_t x = 0; x < n; x++)
            sum += (uint64_t)abs((int)pa[x] - (int)pb[x]);
    return (double)sum / ((double)sd_bitmap_width(a) * sd_bitmap_height(a) * 4);
}

int sd_missing_library(sd_format format, const char *env, const char *file_path, int argc, char **argv)
{
    static const char missing[] = "/nonexistent/sdcore-test/lib.so.1";
    if (argc == 3 && strcmp(argv[1], "--missing-library-child") == 0) {
        /* the child: `env` names a file that is not there */
        size_t n;
        unsigned char *data = sd_read_file(argv[2], &n);
        sd_decoder *d;
        sd_bitmap *b = NULL;
        if (data == NULL || sd_decoder_new(&d) != SD_OK)
            return 2;
        int rc = sd_decoder_decode(d, data, n, &b);
        int named = strstr(sd_decoder_message(d), missing) != NULL;
        sd_decoder_free(d);
        free(data);
        if (rc != SD_EUNSUPPORTED || !named || b != NULL) {
            fprintf(stderr, "  decode without the library: %s (%s)\n", sd_strerror(rc), named ? "named" : "not named");
            return 3;
        }
        sd_encoder *e = NULL;
        sd_bitmap *px;
        uint8_t *out = NULL;
        size_t len = 0;
        if (sd_bitmap_new(8, 8, &px) != SD_OK)
            return 4;
        rc = sd_encoder_new(format, &e); /* a format we only decode: refused here */
        if (rc == SD_OK)
            rc = sd_encoder_add_frame(e, px, 0);
        if (rc == SD_OK)
            rc = sd_encoder_finish(e, &out, &len);
        sd_encoder_free(e);
        if (rc != SD_EUNSUPPORTED || out != NULL) {
            fprintf(stderr, "  encode without the library: %s\n", sd_strerror(rc));
            return 5;
        }
        /* the rest of the core is untouched: a PNG round trip */
        if (sd_encoder_new(SD_FORMAT_PNG, &e) != SD_OK || sd_encoder_add_frame(e, px, 0) != SD_OK ||
            sd_encoder_finish(e, &out, &len) != SD_OK || sd_decode(out, len, &b) != SD_OK)
            return 6;
        sd_free(out);
        sd_encoder_free(e);
        sd_bitmap_free(b);
        sd_bitmap_free(px);
        return 0;
    }
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k <= 0)
        return -1;
    exe[k] = '\0';
    pid_t pid = fork();
    if (pid == 0) {
        setenv(env, missing, 1);
        execl(exe, exe, "--missing-library-child", file_path, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int sd_test_request_new(const char *url, sd_request **out)
{
    int rc = sd_request_new(url, out); /* patience: the helper itself */
    if (rc != SD_OK)
        return rc;
    if ((rc = sd_request_set(*out, SD_REQ_TIMEOUT_MS, 0)) != SD_OK ||
        (rc = sd_request_set(*out, SD_REQ_CONNECT_TIMEOUT_MS, 120000)) != SD_OK) {
        sd_request_free(*out);
        *out = NULL;
    }
    return rc;
}
