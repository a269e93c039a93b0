/*
 * test_corpus.c — every row of the corpus MANIFEST must decode to the exact
 * expected bitmap (or fail cleanly where the row says `error`), fed whole, in
 * 1-byte chunks, and in random chunk sizes with snapshots in between.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sd_test.h"
#include "sd_test_util.h"

typedef struct {
    char file[256];
    unsigned width, height;
    int orientation;
    char expected[80];
} row_t;

static row_t *rows;
static int nrows;

static int load_manifest(void)
{
    const char *dir = sd_corpus_dir();
    if (dir == NULL) {
        fprintf(stderr, "  corpus not found (../shared/corpus or SD_CORPUS_DIR): skipping\n");
        return 77;
    }
    if (rows)
        return 0;
    char path[4096], line[4096];
    snprintf(path, sizeof path, "%s/MANIFEST.tsv", dir);
    FILE *f = fopen(path, "r");
    ASSERT_NOT_NULL(f);
    rows = calloc(1024, sizeof *rows);
    while (fgets(line, sizeof line, f) && nrows < 1024) {
        char *cols[8] = {0};
        int n = 0;
        for (char *p = line, *tok; n < 8 && (tok = strsep(&p, "\t\n")) != NULL;)
            cols[n++] = tok;
        if (n < 7 || strcmp(cols[0], "file") == 0)
            continue;
        row_t *r = &rows[nrows++];
        snprintf(r->file, sizeof r->file, "%s", cols[0]);
        r->width = (unsigned)atoi(cols[3]);
        r->height = (unsigned)atoi(cols[4]);
        r->orientation = atoi(cols[5]);
        snprintf(r->expected, sizeof r->expected, "%s", cols[6]);
    }
    fclose(f);
    ASSERT(nrows >= 200);
    return 0;
}

/* mode: 0 whole, 1 one byte, -1 random; returns the number of mismatches */
static int check_all(int mode)
{
    int rc = load_manifest();
    if (rc)
        return rc;
    int bad = 0;
    for (int i = 0; i < nrows; i++) {
        row_t *r = &rows[i];
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", sd_corpus_dir(), r->file);
        size_t len;
        unsigned char *data = sd_read_file(path, &len);
        ASSERT_NOT_NULL(data);
        sd_decoder *d;
        ASSERT_OK(sd_decoder_new(&d));
        ASSERT_OK(sd_decoder_set(d, SD_DEC_COLOR_MANAGE, 0)); /* the oracle's convention: stored values */
        sd_bitmap *b = NULL;
        int st = sd_decode_chunked(d, data, len, mode, 1234u + (unsigned)i, mode < 0 ? 3 : 0, &b);
        int expect_error = strcmp(r->expected, "error") == 0;
        if (expect_error) {
            if (st == SD_OK) {
                fprintf(stderr, "  %s: decoded, expected an error\n", r->file);
                bad++;
            }
        } else if (st != SD_OK) {
            fprintf(stderr, "  %s: %s (%s)\n", r->file, sd_strerror(st), sd_decoder_message(d));
            bad++;
        } else {
            char hex[65];
            sd_bitmap_sha256(b, hex);
            int64_t o = 0;
            sd_decoder_get(d, SD_DEC_INFO_ORIENTATION, &o);
            if (sd_bitmap_width(b) != r->width || sd_bitmap_height(b) != r->height ||
                strcmp(hex, r->expected) != 0 || o != r->orientation) {
                fprintf(stderr, "  %s: got %ux%u o=%lld %.12s, want %ux%u o=%d %.12s\n", r->file,
                        sd_bitmap_width(b), sd_bitmap_height(b), (long long)o, hex, r->width,
                        r->height, r->orientation, r->expected);
                bad++;
            }
        }
        sd_bitmap_free(b);
        sd_decoder_free(d);
        free(data);
    }
    if (bad)
        fprintf(stderr, "  %d of %d rows wrong\n", bad, nrows);
    return bad ? 1 : 0;
}

static int test_corpus_whole(void) { return check_all(0); }
static int test_corpus_one_byte_chunks(void) { return check_all(1); }
static int test_corpus_random_chunks(void) { return check_all(-1); }


/* ---- PNG eXIf orientation (issue 19): the corpus has JPEG rows only, so
 * the PNG ones are made here. For each source PNG, an eXIf chunk (a bare
 * TIFF header, as the PNG extension says: no "Exif\0\0") saying orientation
 * 1..8 in either byte order is put after IHDR; the decode must equal the
 * un-rotated decode turned by sd_bitmap_orient, pixel for pixel, fed whole
 * and one byte at a time, and as a thumbnail. ---- */

static uint32_t crc32_png(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
    }
    return c ^ 0xFFFFFFFFu;
}

static void put32be(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v; }

/* The file with an eXIf chunk after IHDR (8 + 25 bytes in); caller frees. */
static uint8_t *with_exif(const uint8_t *png, size_t n, int orientation, int le, size_t *out_len)
{
    uint8_t tiff[26];
    size_t t = 0;
#define W16(v) do { if (le) { tiff[t++] = (uint8_t)(v); tiff[t++] = (uint8_t)((v) >> 8); } \
                    else { tiff[t++] = (uint8_t)((v) >> 8); tiff[t++] = (uint8_t)(v); } } while (0)
#define W32(v) do { if (le) { W16((v) & 0xFFFF); W16((v) >> 16); } else { W16((v) >> 16); W16((v) & 0xFFFF); } } while (0)
    tiff[t++] = le ? 'I' : 'M';
    tiff[t++] = le ? 'I' : 'M';
    W16(42);
    W32(8u);               /* IFD0 at 8 */
    W16(1);                /* one entry */
    W16(0x0112);           /* Orientation */
    W16(3);                /* SHORT */
    W32(1u);               /* count */
    W16((unsigned)orientation);
    W16(0);                /* value padding */
    W32(0u);               /* no next IFD */
#undef W16
#undef W32
    size_t at = 8 + 25, clen = 12 + t;
    uint8_t *o = malloc(n + clen);
    memcpy(o, png, at);
    put32be(o + at, (uint32_t)t);
    memcpy(o + at + 4, "eXIf", 4);
    memcpy(o + at + 8, tiff, t);
    put32be(o + at + 8 + t, crc32_png(o + at + 4, 4 + t));
    memcpy(o + at + clen, png + at, n - at);
    *out_len = n + clen;
    return o;
}

static int same_pixels(const sd_bitmap *a, const sd_bitmap *b)
{
    if (sd_bitmap_width(a) != sd_bitmap_width(b) || sd_bitmap_height(a) != sd_bitmap_height(b))
        return 0;
    for (uint32_t y = 0; y < sd_bitmap_height(a); y++)
        if (memcmp(sd_bitmap_pixels(a) + y * sd_bitmap_stride(a), sd_bitmap_pixels(b) + y * sd_bitmap_stride(b),
                   (size_t)sd_bitmap_width(a) * 4) != 0)
            return 0;
    return 1;
}

/* mode 0 whole, 1 one byte at a time; tw/th: a thumbnail box (0: full size) */
static int decode_png(const uint8_t *data, size_t n, int apply, uint32_t tw, uint32_t th, int mode,
                      sd_bitmap **out, int64_t *orientation)
{
    sd_decoder *d;
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_APPLY_ORIENTATION, apply));
    if (tw) {
        ASSERT_OK(sd_decoder_set(d, SD_DEC_TARGET_WIDTH, tw));
        ASSERT_OK(sd_decoder_set(d, SD_DEC_TARGET_HEIGHT, th));
    }
    if (mode == 0) {
        ASSERT_OK(sd_decoder_decode(d, data, n, out));
    } else {
        for (size_t i = 0; i < n; i++)
            ASSERT_OK(sd_decoder_push(d, data + i, 1));
        ASSERT_OK(sd_decoder_finish(d));
        ASSERT_OK(sd_decoder_take_bitmap(d, out));
    }
    ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_ORIENTATION, orientation));
    sd_decoder_free(d);
    return 0;
}

static int test_png_exif_orientation(void)
{
    const char *dir = sd_corpus_dir();
    if (dir == NULL)
        return 77;
    /* RGBA, palette + tRNS, 16-bit Adam7 (RGBA and RGB), gray, gray Adam7 */
    const char *files[] = {"basn6a08.png", "tbbn3p08.png", "basi6a16.png", "basi2c16.png", "basn0g08.png",
                           "basi0g08.png"};
    int checked = 0;
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/pngsuite/%s", dir, files[f]);
        size_t n;
        uint8_t *png = sd_read_file(path, &n);
        ASSERT_NOT_NULL(png);
        sd_bitmap *plain = NULL, *plain_thumb = NULL, *plain_thumb_t = NULL;
        int64_t o = 0;
        ASSERT_OK(decode_png(png, n, 0, 0, 0, 0, &plain, &o));
        ASSERT_EQ(o, 1);
        ASSERT_OK(decode_png(png, n, 0, 12, 9, 0, &plain_thumb, &o));   /* stored-orientation box */
        ASSERT_OK(decode_png(png, n, 0, 9, 12, 0, &plain_thumb_t, &o)); /* the box turned */
        for (int orient = 1; orient <= 8; orient++) {
            sd_bitmap *want = NULL, *want_thumb = NULL;
            ASSERT_OK(sd_bitmap_orient(plain, orient, &want));
            int swaps = orient >= 5;
            ASSERT_OK(sd_bitmap_orient(swaps ? plain_thumb_t : plain_thumb, orient, &want_thumb));
            for (int le = 0; le <= 1; le++) {
                size_t m;
                uint8_t *ex = with_exif(png, n, orient, le, &m);
                for (int mode = 0; mode <= 1; mode++) {
                    sd_bitmap *got = NULL;
                    ASSERT_OK(decode_png(ex, m, 1, 0, 0, mode, &got, &o));
                    if (o != orient || !same_pixels(got, want))
                        fprintf(stderr, "  %s orientation %d %s mode %d: got orientation %lld\n", files[f], orient,
                                le ? "II" : "MM", mode, (long long)o);
                    ASSERT_EQ(o, orient);
                    ASSERT(same_pixels(got, want));
                    sd_bitmap_free(got);
                    checked++;
                }
                sd_bitmap *thumb = NULL;
                ASSERT_OK(decode_png(ex, m, 1, 12, 9, 0, &thumb, &o));
                if (!same_pixels(thumb, want_thumb))
                    fprintf(stderr, "  %s orientation %d thumbnail: %ux%u, want %ux%u\n", files[f], orient,
                            sd_bitmap_width(thumb), sd_bitmap_height(thumb), sd_bitmap_width(want_thumb),
                            sd_bitmap_height(want_thumb));
                ASSERT(same_pixels(thumb, want_thumb));
                sd_bitmap_free(thumb);
                /* not applied when asked not to: the stored pixels */
                sd_bitmap *raw = NULL;
                ASSERT_OK(decode_png(ex, m, 0, 0, 0, 0, &raw, &o));
                ASSERT(o == orient && same_pixels(raw, plain));
                sd_bitmap_free(raw);
                free(ex);
            }
            sd_bitmap_free(want);
            sd_bitmap_free(want_thumb);
        }
        sd_bitmap_free(plain);
        sd_bitmap_free(plain_thumb);
        sd_bitmap_free(plain_thumb_t);
        free(png);
    }
    ASSERT_EQ(checked, 6 * 8 * 2 * 2);
    return 0;
}

/* ---- WebP EXIF orientation (issue 38): a still's EXIF chunk (after the
 * image data, as the container puts it; VP8X's EXIF flag set) saying 1..8
 * in either byte order, with and without the "Exif\0\0" prefix some writers
 * add; lossless and lossy, a non-square image: the decode equals the plain
 * decode turned by sd_bitmap_orient, whole and one byte at a time, as a
 * thumbnail, and untouched when orientation is not applied. ---- */

static void put24le(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); }
static void put32le(uint8_t *p, uint32_t v) { put24le(p, v); p[3] = (uint8_t)(v >> 24); }

/* A simple-format WebP (RIFF, WEBP, one VP8/VP8L chunk) as an extended one
 * with an EXIF chunk after the image; caller frees. */
static uint8_t *webp_with_exif(const uint8_t *webp, size_t n, uint32_t w, uint32_t h, int orientation, int le,
                               int prefix, size_t *out_len)
{
    uint8_t tiff[32];
    size_t t = 0;
    if (prefix) {
        memcpy(tiff, "Exif\0\0", 6);
        t = 6;
    }
#define W16(v) do { if (le) { tiff[t++] = (uint8_t)(v); tiff[t++] = (uint8_t)((v) >> 8); } \
                    else { tiff[t++] = (uint8_t)((v) >> 8); tiff[t++] = (uint8_t)(v); } } while (0)
#define W32(v) do { if (le) { W16((v) & 0xFFFF); W16((v) >> 16); } else { W16((v) >> 16); W16((v) & 0xFFFF); } } while (0)
    tiff[t++] = le ? 'I' : 'M';
    tiff[t++] = le ? 'I' : 'M';
    W16(42);
    W32(8u);
    W16(1);
    W16(0x0112);
    W16(3);
    W32(1u);
    W16((unsigned)orientation);
    W16(0);
    W32(0u);
#undef W16
#undef W32
    int extended = memcmp(webp + 12, "VP8X", 4) == 0; /* lossy with alpha: VP8X, ALPH, VP8 */
    size_t head = extended ? 0 : 18, image = n - 12, exif = 8 + t + (t & 1);
    size_t total = 12 + head + image + exif;
    uint8_t *o = calloc(1, total);
    memcpy(o, "RIFFxxxxWEBP", 12);
    put32le(o + 4, (uint32_t)(total - 8));
    if (!extended) {
        memcpy(o + 12, "VP8X", 4);
        put32le(o + 16, 10);
        o[20] = 0x10; /* alpha */
        put24le(o + 24, w - 1);
        put24le(o + 27, h - 1);
    }
    memcpy(o + 12 + head, webp + 12, image);
    o[20] |= 0x08; /* EXIF */
    memcpy(o + 12 + head + image, "EXIF", 4);
    put32le(o + 12 + head + image + 4, (uint32_t)t);
    memcpy(o + 12 + head + image + 8, tiff, t);
    *out_len = total;
    return o;
}

static int test_webp_exif_orientation(void)
{
    const uint32_t W = 40, H = 30;
    sd_bitmap *src = NULL;
    ASSERT_OK(sd_bitmap_new(W, H, &src));
    for (uint32_t y = 0; y < H; y++)
        for (uint32_t x = 0; x < W; x++) {
            uint8_t rgba[4] = {(uint8_t)(x * 6), (uint8_t)(y * 8), (uint8_t)((x ^ y) * 9), (uint8_t)(x < 5 ? 128 : 255)};
            sd_premultiply_rgba(rgba, sd_bitmap_pixels(src) + y * sd_bitmap_stride(src) + x * 4, 1);
        }
    int checked = 0;
    for (int lossless = 0; lossless <= 1; lossless++) {
        uint8_t *webp = NULL;
        size_t n = 0;
        ASSERT_OK(enc_webp(src, 90, lossless, &webp, &n));
        ASSERT(n > 20 && memcmp(webp + 12, lossless ? "VP8L" : "VP8X", 4) == 0);
        sd_bitmap *plain = NULL, *plain_thumb = NULL, *plain_thumb_t = NULL;
        int64_t o = 0;
        ASSERT_OK(decode_png(webp, n, 0, 0, 0, 0, &plain, &o));
        ASSERT_OK(decode_png(webp, n, 0, 12, 9, 0, &plain_thumb, &o));
        ASSERT_OK(decode_png(webp, n, 0, 9, 12, 0, &plain_thumb_t, &o));
        for (int orient = 1; orient <= 8; orient++) {
            sd_bitmap *want = NULL, *want_thumb = NULL;
            ASSERT_OK(sd_bitmap_orient(plain, orient, &want));
            ASSERT_OK(sd_bitmap_orient(orient >= 5 ? plain_thumb_t : plain_thumb, orient, &want_thumb));
            for (int variant = 0; variant < 4; variant++) {
                int le = variant & 1, prefix = variant >> 1;
                size_t m;
                uint8_t *ex = webp_with_exif(webp, n, W, H, orient, le, prefix, &m);
                for (int mode = 0; mode <= 1; mode++) {
                    sd_bitmap *got = NULL;
                    ASSERT_OK(decode_png(ex, m, 1, 0, 0, mode, &got, &o));
                    if (o != orient || !same_pixels(got, want))
                        fprintf(stderr, "  webp lossless=%d orientation %d variant %d mode %d: got %lld, %ux%u\n",
                                lossless, orient, variant, mode, (long long)o, sd_bitmap_width(got),
                                sd_bitmap_height(got));
                    ASSERT_EQ(o, orient);
                    ASSERT(same_pixels(got, want));
                    sd_bitmap_free(got);
                    checked++;
                }
                sd_bitmap *thumb = NULL;
                ASSERT_OK(decode_png(ex, m, 1, 12, 9, 0, &thumb, &o));
                ASSERT(same_pixels(thumb, want_thumb));
                sd_bitmap_free(thumb);
                sd_bitmap *raw = NULL;
                ASSERT_OK(decode_png(ex, m, 0, 0, 0, 0, &raw, &o));
                ASSERT(o == orient && same_pixels(raw, plain));
                sd_bitmap_free(raw);
                free(ex);
            }
            sd_bitmap_free(want);
            sd_bitmap_free(want_thumb);
        }
        /* an EXIF chunk cut short by the end of the file: no orientation, the image whole */
        size_t m;
        uint8_t *ex = webp_with_exif(webp, n, W, H, 6, 1, 0, &m);
        sd_bitmap *cut = NULL;
        ASSERT_OK(decode_png(ex, m - 4, 1, 0, 0, 0, &cut, &o));
        ASSERT(o == 1 && same_pixels(cut, plain));
        sd_bitmap_free(cut);
        free(ex);
        sd_bitmap_free(plain);
        sd_bitmap_free(plain_thumb);
        sd_bitmap_free(plain_thumb_t);
        sd_free(webp);
    }
    sd_bitmap_free(src);
    ASSERT_EQ(checked, 2 * 8 * 4 * 2);
    return 0;
}

int main(int argc, char **argv)
{
    static const sd_test_case tests[] = {
        {"corpus_whole", test_corpus_whole},
        {"corpus_random_chunks_with_snapshots", test_corpus_random_chunks},
        {"corpus_one_byte_chunks", test_corpus_one_byte_chunks},
        {"png_exif_orientation", test_png_exif_orientation},
        {"webp_exif_orientation", test_webp_exif_orientation},
        {NULL, NULL},
    };
    int rc = sd_test_run(tests, argc, argv);
    free(rows);
    return rc;
}
