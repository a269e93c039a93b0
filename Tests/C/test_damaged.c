/*
 * test_damaged.c — truncated, damaged and hostile input: a clean error or a
 * flagged partial image, never a crash, hang or leak (ASan/valgrind passes
 * run this same binary). Decompression bombs fail before allocation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "sd_test.h"
#include "sd_test_util.h"

static uint32_t px_at(const sd_bitmap *b, uint32_t x, uint32_t y)
{
    uint32_t v;
    memcpy(&v, sd_bitmap_pixels(b) + y * sd_bitmap_stride(b) + x * 4, 4);
    return v;
}

static sd_bitmap *synth(uint32_t w, uint32_t h)
{
    sd_bitmap *b = NULL;
    if (sd_bitmap_new(w, h, &b) != SD_OK)
        return NULL;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint8_t rgba[4] = {(uint8_t)x, (uint8_t)y, (uint8_t)(x * y), 255};
            sd_premultiply_rgba(rgba, sd_bitmap_pixels(b) + y * sd_bitmap_stride(b) + x * 4, 1);
        }
    return b;
}

/* Bytes needed before the header facts are known (fed 1 byte at a time). */
static size_t header_end(const uint8_t *data, size_t n)
{
    sd_decoder *d;
    int64_t w;
    size_t i = 0;
    sd_decoder_new(&d);
    while (i < n && sd_decoder_get(d, SD_DEC_INFO_WIDTH, &w) == SD_EAGAIN)
        if (sd_decoder_push(d, data + i++, 1) != SD_OK)
            break;
    sd_decoder_free(d);
    return i;
}

/* Cut the file at many points: before the header is complete -> ETRUNCATED;
 * after -> a full-size bitmap flagged incomplete. */
static int check_truncations(const uint8_t *data, size_t n, uint32_t w, uint32_t h)
{
    size_t hdr = header_end(data, n);
    ASSERT(hdr > 0 && hdr < n);
    /* Under memcheck the same cuts are taken at a quarter of the places: it
     * checks the same code for uninitialised reads at a twentieth of the
     * speed, and ASan and the release run take every place. */
    size_t step = n / (getenv("SD_TEST_UNDER_VALGRIND") != NULL ? 24 : 97) + 1;
    for (size_t cut = 0; cut < n; cut += (cut < hdr + 8 ? 1 : step)) {
        sd_decoder *d;
        sd_bitmap *b = NULL;
        ASSERT_OK(sd_decoder_new(&d));
        int rc = sd_decoder_decode(d, data, cut, &b);
        if (cut < hdr) {
            if (rc != SD_ETRUNCATED)
                fprintf(stderr, "  cut %zu (header ends at %zu): %s\n", cut, hdr, sd_strerror(rc));
            ASSERT_EQ(rc, SD_ETRUNCATED);
        } else {
            if (rc != SD_OK)
                fprintf(stderr, "  cut %zu: %s: %s\n", cut, sd_strerror(rc), sd_decoder_message(d));
            ASSERT_OK(rc);
            int64_t complete = -1;
            ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_COMPLETE, &complete));
            ASSERT_EQ(complete, 0);
            ASSERT(sd_bitmap_width(b) == w && sd_bitmap_height(b) == h);
        }
        sd_bitmap_free(b);
        sd_decoder_free(d);
    }
    return 0;
}

/* Issue 13, defect 5: a JPEG whose scan data is corrupt decoded "complete"
 * (libjpeg only warns and fills grey), and was then cached as good. Cut in
 * the middle of the scan with an EOI appended, or with a stray marker in the
 * scan: flagged incomplete, with the reason. A benign warning (extraneous
 * bytes before a marker, which real cameras write) stays complete. */
static int damaged_one(const uint8_t *data, size_t n, int64_t want_complete, const char *want_msg)
{
    sd_decoder *d;
    sd_bitmap *b = NULL;
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_decode(d, data, n, &b));
    int64_t complete = -1;
    ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_COMPLETE, &complete));
    if (complete != want_complete || (want_msg && strstr(sd_decoder_message(d), want_msg) == NULL))
        fprintf(stderr, "  complete=%lld: %s\n", (long long)complete, sd_decoder_message(d));
    ASSERT_EQ(complete, want_complete);
    ASSERT(want_msg == NULL || strstr(sd_decoder_message(d), want_msg) != NULL);
    sd_bitmap_free(b);
    sd_decoder_free(d);
    return 0;
}

static int test_jpeg_damaged_scan(void)
{
    const char *dir = sd_corpus_dir();
    if (dir == NULL)
        return 77;
    const char *files[] = {"exif-orientation/Landscape_0.jpg", "jpeg/libjpeg-turbo/testorig.jpg"};
    for (size_t f = 0; f < 2; f++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, files[f]);
        size_t n;
        uint8_t *data = sd_read_file(path, &n);
        ASSERT_NOT_NULL(data);
        size_t sos = 0;
        for (size_t i = 0; i + 1 < n; i++)
            if (data[i] == 0xFF && data[i + 1] == 0xDA)
                sos = i;
        ASSERT(sos > 0);
        size_t mid = sos + (n - sos) / 2;
        while (data[mid - 1] == 0xFF) /* not inside a stuffed FF 00 */
            mid++;
        uint8_t *bad = malloc(n + 2);
        ASSERT_OK(damaged_one(data, n, 1, NULL)); /* as it is: complete */
        /* cut in the middle of the scan, EOI appended */
        memcpy(bad, data, mid);
        bad[mid] = 0xFF;
        bad[mid + 1] = 0xD9;
        ASSERT_OK(damaged_one(bad, mid + 2, 0, "damaged"));
        /* a stray restart marker inside the scan */
        memcpy(bad, data, mid);
        bad[mid] = 0xFF;
        bad[mid + 1] = 0xD5;
        memcpy(bad + mid + 2, data + mid, n - mid);
        ASSERT_OK(damaged_one(bad, n + 2, 0, "damaged"));
        free(bad);
        free(data);
    }
    return 0;
}

/* Issue 38: a PNG whose zlib stream ends with a bad Adler-32 reaches IEND
 * with libpng having dropped the row it was on (a benign error): that image
 * is incomplete, not a whole one with a transparent last row. The checksum
 * is the last 4 bytes of the last IDAT's data; its CRC is made right again. */
static int bad_adler(uint8_t *png, size_t n)
{
    size_t at = 8, last = 0;
    while (at + 12 <= n) {
        uint32_t len = (uint32_t)png[at] << 24 | (uint32_t)png[at + 1] << 16 | (uint32_t)png[at + 2] << 8 | png[at + 3];
        if (memcmp(png + at + 4, "IDAT", 4) == 0)
            last = at;
        at += 12 + (size_t)len;
    }
    if (last == 0)
        return -1;
    uint32_t len = (uint32_t)png[last] << 24 | (uint32_t)png[last + 1] << 16 | (uint32_t)png[last + 2] << 8 | png[last + 3];
    png[last + 8 + len - 1] ^= 0x01;
    uLong crc = crc32(0, png + last + 4, 4 + len);
    uint8_t *c = png + last + 8 + len;
    c[0] = (uint8_t)(crc >> 24), c[1] = (uint8_t)(crc >> 16), c[2] = (uint8_t)(crc >> 8), c[3] = (uint8_t)crc;
    return 0;
}

static int test_png_bad_checksum(void)
{
    uint8_t *png = NULL;
    size_t n = 0;
    sd_bitmap *src = synth(40, 30);
    ASSERT_NOT_NULL(src);
    ASSERT_OK(enc_png(src, 6, &png, &n));
    sd_bitmap_free(src);
    ASSERT_OK(damaged_one(png, n, 1, NULL));
    ASSERT_EQ(bad_adler(png, n), 0);
    ASSERT_OK(damaged_one(png, n, 0, "last row"));
    sd_free(png);
    /* Adam7: the last row of the last pass */
    const char *dir = sd_corpus_dir();
    if (dir == NULL)
        return 0;
    const char *files[] = {"basi6a08.png", "basi0g08.png", "basi2c16.png"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/pngsuite/%s", dir, files[f]);
        uint8_t *data = sd_read_file(path, &n);
        ASSERT_NOT_NULL(data);
        ASSERT_OK(damaged_one(data, n, 1, NULL));
        ASSERT_EQ(bad_adler(data, n), 0);
        ASSERT_OK(damaged_one(data, n, 0, "last row"));
        free(data);
    }
    return 0;
}

static int test_truncated_generated(void)
{
    sd_bitmap *src = synth(200, 120);
    uint8_t *buf;
    size_t n;
    ASSERT_OK(enc_jpeg(src, 85, 0, &buf, &n));
    ASSERT_OK(check_truncations(buf, n, 200, 120));
    sd_free(buf);
    ASSERT_OK(enc_jpeg(src, 85, 1, &buf, &n));
    ASSERT_OK(check_truncations(buf, n, 200, 120));
    sd_free(buf);
    ASSERT_OK(enc_png(src, 6, &buf, &n));
    ASSERT_OK(check_truncations(buf, n, 200, 120));
    /* PNG: rows that never arrived are transparent, the first rows are there */
    sd_bitmap *b;
    sd_decoder *d;
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_decode(d, buf, n / 2, &b));
    ASSERT_EQ(px_at(b, 10, 0), px_at(src, 10, 0));
    ASSERT_EQ(px_at(b, 10, 119), 0);
    sd_bitmap_free(b);
    sd_decoder_free(d);
    sd_free(buf);
    sd_bitmap_free(src);
    return 0;
}

static int test_truncated_corpus(void)
{
    const char *dir = sd_corpus_dir();
    if (dir == NULL)
        return 77;
    static const struct { const char *file; uint32_t w, h; } files[] = {
        {"jpeg/libjpeg-turbo/testorig.jpg", 227, 149},
        {"jpeg/jpeg-decoder/progressive3.jpg", 0, 0},
        {"jpeg/jpeg-decoder/restarts.jpg", 0, 0},
        {"pngsuite/basn6a08.png", 32, 32},
        {"pngsuite/basi6a08.png", 32, 32},
        {"pngsuite/basi3p02.png", 32, 32},
        {"exif-orientation/Landscape_6.jpg", 1200, 1800},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, files[i].file);
        size_t n;
        uint8_t *data = sd_read_file(path, &n);
        ASSERT_NOT_NULL(data);
        sd_bitmap *full;
        ASSERT_OK(sd_decode(data, n, &full));
        int rc = check_truncations(data, n, sd_bitmap_width(full), sd_bitmap_height(full));
        if (rc)
            fprintf(stderr, "  in %s\n", files[i].file);
        ASSERT_OK(rc);
        sd_bitmap_free(full);
        free(data);
    }
    return 0;
}

/* Random byte damage: any status is fine, a crash or a wrong-size image is not. */
static int test_random_damage(void)
{
    sd_bitmap *src = synth(96, 64);
    uint8_t *files[3];
    size_t lens[3];
    ASSERT_OK(enc_jpeg(src, 80, 0, &files[0], &lens[0]));
    ASSERT_OK(enc_jpeg(src, 80, 1, &files[1], &lens[1]));
    ASSERT_OK(enc_png(src, 6, &files[2], &lens[2]));
    unsigned seed = 99;
    for (int f = 0; f < 3; f++) {
        uint8_t *copy = malloc(lens[f]);
        for (int iter = 0; iter < 400; iter++) {
            memcpy(copy, files[f], lens[f]);
            int flips = 1 + (int)(sd_rand(&seed) % 8);
            for (int k = 0; k < flips; k++)
                copy[sd_rand(&seed) % lens[f]] ^= (uint8_t)(1u << (sd_rand(&seed) % 8));
            sd_decoder *d;
            sd_bitmap *b = NULL;
            ASSERT_OK(sd_decoder_new(&d));
            sd_decoder_set(d, SD_DEC_PREVIEWS, iter & 1);
            sd_decoder_set(d, SD_DEC_PREVIEW_INTERVAL_MS, 0);
            if (iter % 3 == 0)
                sd_decoder_set(d, SD_DEC_MAX_PIXEL_SIZE, 20);
            int rc = sd_decode_chunked(d, copy, lens[f], -1, seed, 2, &b);
            if (rc == SD_OK) {
                int64_t ow, oh;
                ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_OUTPUT_WIDTH, &ow));
                ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_OUTPUT_HEIGHT, &oh));
                ASSERT(sd_bitmap_width(b) == ow && sd_bitmap_height(b) == oh);
            } else {
                ASSERT(rc < 0 && strlen(sd_decoder_message(d)) > 0);
            }
            sd_bitmap_free(b);
            sd_decoder_free(d);
        }
        free(copy);
        sd_free(files[f]);
    }
    sd_bitmap_free(src);
    return 0;
}

static void put32be(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Append a PNG chunk with a correct CRC. */
static size_t chunk(uint8_t *out, const char *type, const uint8_t *data, uint32_t len)
{
    put32be(out, len);
    memcpy(out + 4, type, 4);
    if (len)
        memcpy(out + 8, data, len);
    put32be(out + 8 + len, (uint32_t)crc32(crc32(0, NULL, 0), out + 4, len + 4));
    return 12 + len;
}

static int test_png_bomb(void)
{
    /* 100000 x 100000 8-bit gray, a few KB of deflated zeros: must fail as
     * "image too large" before any pixel allocation. */
    static uint8_t file[8192];
    static uint8_t raw[20000], z[4096];
    uint8_t ihdr[13];
    size_t n = 0;
    memcpy(file, "\x89PNG\r\n\x1a\n", 8);
    n = 8;
    put32be(ihdr, 100000);
    put32be(ihdr + 4, 100000);
    ihdr[8] = 8; ihdr[9] = 0; ihdr[10] = 0; ihdr[11] = 0; ihdr[12] = 0;
    n += chunk(file + n, "IHDR", ihdr, 13);
    uLongf zl = sizeof z;
    ASSERT_EQ(compress2(z, &zl, raw, sizeof raw, 9), Z_OK);
    n += chunk(file + n, "IDAT", z, (uint32_t)zl);
    n += chunk(file + n, "IEND", NULL, 0);
    ASSERT(n < 3500);
    sd_decoder *d;
    sd_bitmap *b = NULL;
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_EQ(sd_decoder_decode(d, file, n, &b), SD_ETOOLARGE);
    ASSERT(strstr(sd_decoder_message(d), "too large") != NULL);
    ASSERT(b == NULL);
    sd_decoder_free(d);
    /* lifting the limits is possible; then the thumbnail path never holds the
     * full image (PNG rows are reduced as they stream) */
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_MAX_PIXELS, 20000000000LL));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_MAX_DIMENSION, 100000));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_MAX_PIXEL_SIZE, 64));
    int rc = sd_decoder_decode(d, file, n, &b);
    ASSERT_OK(rc); /* truncated stream of zeros: a 64x64 partial image */
    ASSERT(sd_bitmap_width(b) == 64 && sd_bitmap_height(b) == 64);
    sd_bitmap_free(b);
    sd_decoder_free(d);
    /* zero width is corrupt */
    put32be(ihdr, 0);
    n = 8 + chunk(file + 8, "IHDR", ihdr, 13);
    ASSERT(sd_decode(file, n, &b) < 0);
    return 0;
}

/* A progressive JPEG whose first scan is repeated `copies` more times (the
 * "scan flood": every scan walks the whole coefficient buffer). */
static uint8_t *scan_flood(const uint8_t *jpg, size_t n, int copies, size_t *out_len)
{
    size_t i = 2, sos = 0, end = 0;
    while (i + 4 < n && !sos) {
        if (jpg[i] != 0xFF)
            return NULL;
        if (jpg[i + 1] == 0xDA)
            sos = i;
        else
            i += 2 + ((size_t)jpg[i + 2] << 8 | jpg[i + 3]);
    }
    if (!sos)
        return NULL;
    /* the scan's entropy data ends at the next marker that is not a stuffed
     * 0xFF00 or a restart marker */
    for (end = sos + 2 + ((size_t)jpg[sos + 2] << 8 | jpg[sos + 3]); end + 1 < n; end++)
        if (jpg[end] == 0xFF && jpg[end + 1] != 0 && (jpg[end + 1] < 0xD0 || jpg[end + 1] > 0xD7))
            break;
    size_t scan = end - sos, len = n + scan * (size_t)copies;
    uint8_t *out = malloc(len);
    if (out == NULL)
        return NULL;
    memcpy(out, jpg, end);
    for (int k = 0; k < copies; k++)
        memcpy(out + end + scan * (size_t)k, jpg + sos, scan);
    memcpy(out + end + scan * (size_t)copies, jpg + end, n - end);
    *out_len = len;
    return out;
}

/* More than 1000 scans (SECURITY.md's limit) fail instead of decoding each:
 * whole, in chunks, with previews on and off. 900 copies still decode. */
static int test_jpeg_scan_flood(void)
{
    sd_bitmap *src = synth(64, 48);
    uint8_t *jpg;
    size_t n;
    ASSERT_OK(enc_jpeg(src, 80, 1, &jpg, &n));
    sd_bitmap_free(src);
    for (int previews = 0; previews <= 1; previews++) {
        for (int copies = 900; copies <= 1100; copies += 200) {
            size_t len;
            uint8_t *flood = scan_flood(jpg, n, copies, &len);
            ASSERT_NOT_NULL(flood);
            for (size_t chunk = len; chunk >= 4096; chunk = chunk == len ? 4096 : 0) {
                sd_decoder *d;
                ASSERT_OK(sd_decoder_new(&d));
                ASSERT_OK(sd_decoder_set(d, SD_DEC_PREVIEWS, previews));
                int rc = SD_OK;
                for (size_t pos = 0; pos < len && rc == SD_OK; pos += chunk)
                    rc = sd_decoder_push(d, flood + pos, len - pos < chunk ? len - pos : chunk);
                if (rc == SD_OK)
                    rc = sd_decoder_finish(d);
                if (copies > 1000) {
                    if (rc != SD_ECORRUPT)
                        fprintf(stderr, "  %d scans, previews %d, chunk %zu: %s\n", copies + 1, previews, chunk,
                                sd_strerror(rc));
                    ASSERT_EQ(rc, SD_ECORRUPT);
                    ASSERT(strstr(sd_decoder_message(d), "scans") != NULL);
                } else {
                    ASSERT_OK(rc);
                }
                sd_decoder_free(d);
            }
            free(flood);
        }
    }
    sd_free(jpg);
    return 0;
}

static int test_jpeg_bomb(void)
{
    sd_bitmap *src = synth(16, 16);
    uint8_t *jpg;
    size_t n;
    ASSERT_OK(enc_jpeg(src, 80, 0, &jpg, &n));
    /* patch the SOF0 dimensions to 65500 x 65500 */
    size_t i = 2;
    int patched = 0;
    while (i + 9 < n) {
        ASSERT_EQ(jpg[i], 0xFF);
        uint8_t m = jpg[i + 1];
        size_t seglen = (size_t)jpg[i + 2] << 8 | jpg[i + 3];
        if (m == 0xC0) {
            jpg[i + 5] = 0xFF; jpg[i + 6] = 0xDC; /* height 65500 */
            jpg[i + 7] = 0xFF; jpg[i + 8] = 0xDC; /* width 65500 */
            patched = 1;
            break;
        }
        i += 2 + seglen;
    }
    ASSERT(patched);
    sd_decoder *d;
    sd_bitmap *b = NULL;
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_EQ(sd_decoder_decode(d, jpg, n, &b), SD_ETOOLARGE);
    sd_decoder_free(d);
    sd_free(jpg);
    /* configured limits apply to ordinary images too */
    ASSERT_OK(enc_jpeg(src, 80, 0, &jpg, &n));
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_MAX_PIXELS, 255));
    ASSERT_EQ(sd_decoder_decode(d, jpg, n, &b), SD_ETOOLARGE);
    sd_decoder_free(d);
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_MAX_DIMENSION, 15));
    ASSERT_EQ(sd_decoder_decode(d, jpg, n, &b), SD_ETOOLARGE);
    sd_decoder_free(d);
    sd_free(jpg);
    /* a decoder memory budget too small for a progressive coefficient buffer */
    sd_bitmap *big = synth(512, 512);
    ASSERT_OK(enc_jpeg(big, 80, 1, &jpg, &n));
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_MAX_MEMORY, 100000));
    int rc = sd_decoder_decode(d, jpg, n, &b);
    ASSERT(rc == SD_ETOOLARGE || rc == SD_ENOMEM);
    sd_decoder_free(d);
    sd_free(jpg);
    sd_bitmap_free(big);
    sd_bitmap_free(src);
    return 0;
}

/* Set a JPEG's SOF dimensions (baseline or progressive). */
static int patch_jpeg_size(uint8_t *jpg, size_t n, uint16_t w, uint16_t h)
{
    for (size_t i = 2; i + 9 < n;) {
        if (jpg[i] != 0xFF)
            return 0;
        uint8_t m = jpg[i + 1];
        if (m == 0xC0 || m == 0xC2) {
            jpg[i + 5] = (uint8_t)(h >> 8); jpg[i + 6] = (uint8_t)h;
            jpg[i + 7] = (uint8_t)(w >> 8); jpg[i + 8] = (uint8_t)w;
            return 1;
        }
        i += 2 + ((size_t)jpg[i + 2] << 8 | jpg[i + 3]);
    }
    return 0;
}

static int64_t budget_in_use(void)
{
    int64_t used = -1;
    sd_decode_memory(NULL, &used);
    return used;
}

/* One budget for every decoder of the process (SECURITY.md): a decode that
 * does not fit fails before allocating, holding decoders count, frees give
 * back, and a progressive JPEG's coefficients count even for a thumbnail. */
static int test_decode_memory_budget(void)
{
    int64_t budget = 0;
    sd_decode_memory(&budget, NULL);
    ASSERT(budget >= ((int64_t)256 << 20)); /* the default: half the machine, >= 256 MiB */
    ASSERT_EQ(budget_in_use(), 0);
    sd_bitmap *src = synth(300, 300), *b = NULL;
    uint8_t *png;
    size_t n;
    ASSERT_OK(enc_png(src, 1, &png, &n));
    /* 360 000 bytes of canvas: fits 600 000 once, not twice */
    ASSERT_OK(sd_set_decode_memory_budget(600000));
    sd_decoder *d1, *d2;
    ASSERT_OK(sd_decoder_new(&d1));
    ASSERT_OK(sd_decoder_push(d1, png, n)); /* header seen: canvas charged, not finished */
    ASSERT(budget_in_use() >= 360000);
    ASSERT_OK(sd_decoder_new(&d2));
    ASSERT_EQ(sd_decoder_decode(d2, png, n, &b), SD_ENOMEM);
    ASSERT(b == NULL);
    ASSERT(strstr(sd_decoder_message(d2), "budget") != NULL);
    sd_decoder_free(d2);
    ASSERT_OK(sd_decoder_finish(d1));
    ASSERT_OK(sd_decoder_take_bitmap(d1, &b));
    sd_bitmap_free(b);
    sd_decoder_free(d1);
    ASSERT_EQ(budget_in_use(), 0); /* all given back */
    ASSERT_OK(sd_decoder_new(&d2));
    ASSERT_OK(sd_decoder_decode(d2, png, n, &b)); /* fits now the first is gone */
    ASSERT_EQ(sd_bitmap_width(b), 300);
    sd_bitmap_free(b);
    sd_decoder_free(d2);
    sd_free(png);

    /* a 16384^2 JPEG asked for as a 256 px thumbnail, under 256 MiB: the
     * baseline file needs a 2048^2 canvas (1/8 DCT scale) and passes the
     * budget; the progressive one needs ~768 MB of coefficients whatever
     * the scale and fails before libjpeg allocates them */
    sd_bitmap *tiny = synth(16, 16);
    ASSERT_OK(sd_set_decode_memory_budget((int64_t)256 << 20));
    for (int progressive = 0; progressive <= 1; progressive++) {
        uint8_t *jpg;
        ASSERT_OK(enc_jpeg(tiny, 80, progressive, &jpg, &n));
        ASSERT(patch_jpeg_size(jpg, n, 16384, 16384));
        sd_decoder *d;
        ASSERT_OK(sd_decoder_new(&d));
        ASSERT_OK(sd_decoder_set(d, SD_DEC_MAX_PIXEL_SIZE, 256));
        int rc = sd_decoder_push(d, jpg, n);
        if (progressive) {
            ASSERT_EQ(rc, SD_ENOMEM);
            ASSERT(strstr(sd_decoder_message(d), "coefficients") != NULL);
            ASSERT_EQ(budget_in_use(), 0);
        } else {
            ASSERT_OK(rc);
            int64_t used = budget_in_use();
            ASSERT(used >= 2048 * 2048 * 4 && used < ((int64_t)32 << 20));
        }
        sd_decoder_free(d);
        sd_free(jpg);
    }
    ASSERT_EQ(budget_in_use(), 0);
    sd_bitmap_free(tiny);

    /* kept frames are charged, and simply not kept when the budget is
     * spent: the animation still plays, frame for frame the same */
    enum { FRAMES = 6 };
    sd_bitmap *frames[FRAMES];
    int delays[FRAMES];
    for (int i = 0; i < FRAMES; i++) {
        frames[i] = synth(64 + (uint32_t)i, 64); /* differ frame to frame */
        delays[i] = 50;
    }
    for (int i = 1; i < FRAMES; i++) { /* one size: crop the wider ones */
        sd_bitmap *c;
        ASSERT_OK(sd_bitmap_new(64, 64, &c));
        for (uint32_t y = 0; y < 64; y++)
            memcpy(sd_bitmap_pixels(c) + y * sd_bitmap_stride(c),
                   sd_bitmap_pixels(frames[i]) + y * sd_bitmap_stride(frames[i]) + 4 * (uint32_t)i, 64 * 4);
        sd_bitmap_free(frames[i]);
        frames[i] = c;
    }
    uint8_t *gif;
    ASSERT_OK(enc_gif((const sd_bitmap *const *)frames, delays, FRAMES, 0, &gif, &n));
    uint32_t want[FRAMES];
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: room for everything; pass 1: the canvas and one kept frame */
        ASSERT_OK(sd_set_decode_memory_budget(pass == 0 ? 0 : 64 * 64 * 8 + 64 * 64 * 4));
        sd_decoder *d;
        ASSERT_OK(sd_decoder_new(&d));
        ASSERT_OK(sd_decoder_push(d, gif, n));
        ASSERT_OK(sd_decoder_finish(d));
        int64_t count = 0;
        ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_FRAME_COUNT, &count));
        ASSERT_EQ(count, FRAMES);
        for (int round = 0; round < 2; round++) {
            for (uint32_t i = 0; i < FRAMES; i++) {
                sd_bitmap *f;
                ASSERT_OK(sd_decoder_frame(d, i, &f));
                uint32_t h = 2166136261u;
                for (uint32_t y = 0; y < 64; y++)
                    for (uint32_t x = 0; x < 64 * 4; x++)
                        h = (h ^ sd_bitmap_pixels(f)[y * sd_bitmap_stride(f) + x]) * 16777619u;
                if (pass == 0 && round == 0)
                    want[i] = h;
                else
                    ASSERT_EQ(h, want[i]);
                sd_bitmap_free(f);
            }
        }
        if (pass == 1)
            ASSERT(budget_in_use() <= 64 * 64 * 8 + 64 * 64 * 4);
        sd_decoder_free(d);
        ASSERT_EQ(budget_in_use(), 0);
    }
    for (int i = 0; i < FRAMES; i++)
        sd_bitmap_free(frames[i]);
    sd_free(gif);
    ASSERT_OK(sd_set_decode_memory_budget(0));
    ASSERT_EQ(sd_set_decode_memory_budget(-1), SD_EINVAL);
    sd_bitmap_free(src);
    return 0;
}

int main(int argc, char **argv)
{
    static const sd_test_case tests[] = {
        {"truncated_generated", test_truncated_generated},
        {"truncated_corpus", test_truncated_corpus},
        {"jpeg_damaged_scan", test_jpeg_damaged_scan},
        {"random_damage", test_random_damage},
        {"png_bomb", test_png_bomb},
        {"png_bad_checksum", test_png_bad_checksum},
        {"jpeg_bomb", test_jpeg_bomb},
        {"jpeg_scan_flood", test_jpeg_scan_flood},
        {"decode_memory_budget", test_decode_memory_budget},
        {NULL, NULL},
    };
    return sd_test_run(tests, argc, argv);
}
