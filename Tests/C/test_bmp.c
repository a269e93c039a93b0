/*
 * test_bmp.c — the BMP codec, added to the core as one codec row (no Swift):
 * files made here byte by byte for every header, depth and compression it
 * reads, each pixel checked; hostile headers refused with a reason; a file
 * cut short decoded as far as it goes; our encoder's files read back
 * exactly; and ImageMagick (imagemagick, a test package) as the reference:
 * its BMP variants of one picture decode here to the pixels ImageMagick
 * itself reads from them (skipped without it). Fed whole, byte by byte and
 * in random chunks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sd_test.h"
#include "sd_test_util.h"

/* ---- a BMP writer of our own, for files our encoder never makes ---- */

typedef struct {
    uint8_t b[8192];
    size_t n;
} file;

static void u8(file *f, uint32_t v) { f->b[f->n++] = (uint8_t)v; }
static void u16(file *f, uint32_t v) { u8(f, v & 0xFF), u8(f, v >> 8); }
static void u32(file *f, uint32_t v) { u16(f, v & 0xFFFF), u16(f, v >> 16); }
static void bytes(file *f, const void *p, size_t n)
{
    memcpy(f->b + f->n, p, n);
    f->n += n;
}

typedef struct {
    int dib;              /* 12, 40, 56, 108, 124 */
    int32_t w, h;         /* h < 0: top-down */
    int bpp;
    uint32_t compression;
    const uint32_t *masks; /* R, G, B[, A]; NULL: none */
    int nmasks;
    const uint32_t *pal; /* 0x00RRGGBB */
    int npal;
} hdr;

/* File header, info header, masks, palette; the pixel offset points after
 * them. The caller appends the pixel bytes. */
static void begin(file *f, const hdr *h)
{
    f->n = 0;
    int after = h->dib == 40 && h->masks ? h->nmasks : 0;
    size_t entry = h->dib == 12 ? 3 : 4;
    uint32_t offset = (uint32_t)(14 + h->dib + 4 * after + entry * (size_t)h->npal);
    u8(f, 'B'), u8(f, 'M'), u32(f, 0), u32(f, 0), u32(f, offset);
    size_t start = f->n;
    u32(f, (uint32_t)h->dib);
    if (h->dib == 12) {
        u16(f, (uint32_t)h->w), u16(f, (uint32_t)h->h), u16(f, 1), u16(f, (uint32_t)h->bpp);
    } else {
        u32(f, (uint32_t)h->w), u32(f, (uint32_t)h->h), u16(f, 1), u16(f, (uint32_t)h->bpp);
        u32(f, h->compression), u32(f, 0), u32(f, 2835), u32(f, 2835), u32(f, (uint32_t)h->npal), u32(f, 0);
        for (int i = 0; h->dib > 40 && i < 4; i++)
            u32(f, h->masks && i < h->nmasks ? h->masks[i] : 0);
        while (f->n < start + (size_t)h->dib)
            u8(f, 0);
    }
    for (int i = 0; i < after; i++)
        u32(f, h->masks[i]);
    for (int i = 0; i < h->npal; i++) {
        u8(f, h->pal[i] & 0xFF), u8(f, h->pal[i] >> 8 & 0xFF), u8(f, h->pal[i] >> 16 & 0xFF);
        if (entry == 4)
            u8(f, 0);
    }
}

static uint32_t px(const sd_bitmap *b, uint32_t x, uint32_t y)
{
    uint32_t v;
    memcpy(&v, sd_bitmap_pixels(b) + y * sd_bitmap_stride(b) + x * 4, 4);
    return v;
}

/* Decodes whole, byte by byte and in random chunks; all three must agree
 * (pixels and completeness). *out is the whole decode. */
static int decode3(const file *f, sd_bitmap **out, int64_t *complete)
{
    sd_bitmap *whole = NULL;
    int rc = SD_OK;
    for (int mode = 0; mode < 3; mode++) {
        sd_decoder *d;
        ASSERT_OK(sd_decoder_new(&d));
        sd_bitmap *b = NULL;
        rc = sd_decode_chunked(d, f->b, f->n, mode == 0 ? 0 : mode == 1 ? 1 : -1, 7u + (unsigned)mode, 0, &b);
        int64_t c = -1;
        sd_decoder_get(d, SD_DEC_INFO_COMPLETE, &c);
        sd_decoder_free(d);
        if (rc != SD_OK) {
            ASSERT(mode == 0 && b == NULL);
            return rc;
        }
        if (mode == 0) {
            whole = b;
            *complete = c;
            continue;
        }
        ASSERT_EQ(c, *complete);
        ASSERT(sd_bitmap_width(b) == sd_bitmap_width(whole) && sd_bitmap_height(b) == sd_bitmap_height(whole));
        for (uint32_t y = 0; y < sd_bitmap_height(b); y++)
            ASSERT(memcmp(sd_bitmap_pixels(b) + y * sd_bitmap_stride(b), sd_bitmap_pixels(whole) + y * sd_bitmap_stride(whole),
                          sd_bitmap_width(b) * 4) == 0);
        sd_bitmap_free(b);
    }
    *out = whole;
    return SD_OK;
}

#define OPAQUE(rgb) (0xFF000000u | (rgb))

static int test_palettes_and_layouts(void)
{
    static const uint32_t pal[4] = {0x000000, 0xFF0000, 0x00FF00, 0x0000FF};
    sd_bitmap *b;
    int64_t complete;
    file f;
    /* 8-bit, 3x2, bottom-up: rows padded to 4 bytes; index 9 is past the palette */
    hdr h8 = {40, 3, 2, 8, 0, NULL, 0, pal, 4};
    begin(&f, &h8);
    bytes(&f, "\x01\x02\x03\x00", 4); /* bottom row: red green blue */
    bytes(&f, "\x03\x09\x01\x00", 4); /* top row: blue (past) red */
    ASSERT_OK(decode3(&f, &b, &complete));
    ASSERT_EQ(complete, 1);
    ASSERT(sd_bitmap_width(b) == 3 && sd_bitmap_height(b) == 2 && !sd_bitmap_has_alpha(b));
    ASSERT_EQ(px(b, 0, 1), OPAQUE(0xFF0000));
    ASSERT_EQ(px(b, 2, 1), OPAQUE(0x0000FF));
    ASSERT_EQ(px(b, 0, 0), OPAQUE(0x0000FF));
    ASSERT_EQ(px(b, 1, 0), OPAQUE(0x000000)); /* an index past the palette: black */
    sd_bitmap_free(b);
    /* the same rows top-down (negative height) */
    hdr td = h8;
    td.h = -2;
    begin(&f, &td);
    bytes(&f, "\x01\x02\x03\x00\x03\x00\x01\x00", 8);
    ASSERT_OK(decode3(&f, &b, &complete));
    ASSERT_EQ(px(b, 0, 0), OPAQUE(0xFF0000));
    ASSERT_EQ(px(b, 0, 1), OPAQUE(0x0000FF));
    sd_bitmap_free(b);
    /* 1-bit, 10 wide: bits from the top of each byte */
    hdr h1 = {40, 10, 1, 1, 0, NULL, 0, pal + 1, 2};
    begin(&f, &h1);
    bytes(&f, "\xA5\x40\x00\x00", 4); /* 1010 0101 01 */
    ASSERT_OK(decode3(&f, &b, &complete));
    for (uint32_t x = 0; x < 10; x++)
        ASSERT_EQ(px(b, x, 0), OPAQUE(((0xA540u >> (15 - x)) & 1) ? 0x00FF00 : 0xFF0000));
    sd_bitmap_free(b);
    /* 4-bit, 3 wide: high nibble first */
    hdr h4 = {40, 3, 1, 4, 0, NULL, 0, pal, 4};
    begin(&f, &h4);
    bytes(&f, "\x31\x20\x00\x00", 4);
    ASSERT_OK(decode3(&f, &b, &complete));
    ASSERT(px(b, 0, 0) == OPAQUE(0x0000FF) && px(b, 1, 0) == OPAQUE(0xFF0000) && px(b, 2, 0) == OPAQUE(0x00FF00));
    sd_bitmap_free(b);
    /* OS/2 core header, 24-bit B,G,R */
    hdr core = {12, 2, 1, 24, 0, NULL, 0, NULL, 0};
    begin(&f, &core);
    bytes(&f, "\x10\x20\x30\x40\x50\x60\x00\x00", 8);
    ASSERT_OK(decode3(&f, &b, &complete));
    ASSERT(px(b, 0, 0) == OPAQUE(0x302010) && px(b, 1, 0) == OPAQUE(0x605040));
    sd_bitmap_free(b);
    return 0;
}

static int test_bitfields_and_alpha(void)
{
    sd_bitmap *b;
    int64_t complete;
    file f;
    /* 16-bit default 5-5-5: 0x7FFF white, 0x001F blue */
    hdr h16 = {40, 2, 1, 16, 0, NULL, 0, NULL, 0};
    begin(&f, &h16);
    bytes(&f, "\xFF\x7F\x1F\x00", 4);
    ASSERT_OK(decode3(&f, &b, &complete));
    ASSERT(px(b, 0, 0) == OPAQUE(0xFFFFFF) && px(b, 1, 0) == OPAQUE(0x0000FF));
    sd_bitmap_free(b);
    /* 16-bit 5-6-5 bit fields after a 40-byte header: 0x07E0 is full green; 0x0410 half-ish */
    static const uint32_t m565[3] = {0xF800, 0x07E0, 0x001F};
    hdr h565 = {40, 2, 1, 16, 3, m565, 3, NULL, 0};
    begin(&f, &h565);
    bytes(&f, "\xE0\x07\x10\x84", 4); /* 0x07E0, 0x8410 */
    ASSERT_OK(decode3(&f, &b, &complete));
    ASSERT_EQ(px(b, 0, 0), OPAQUE(0x00FF00));
    /* 5 bits 10000 -> 10000100, 6 bits 100000 -> 10000010: high bits repeated */
    ASSERT_EQ(px(b, 1, 0), OPAQUE(0x848284));
    sd_bitmap_free(b);
    /* a zero mask: that channel is absent (0), not a hang (found by fuzz_decode_chunked) */
    static const uint32_t no_green[3] = {0xF800, 0, 0x001F};
    hdr h0 = {40, 1, 1, 16, 3, no_green, 3, NULL, 0};
    begin(&f, &h0);
    bytes(&f, "\xFF\xFF\x00\x00", 4);
    ASSERT_OK(decode3(&f, &b, &complete));
    ASSERT_EQ(px(b, 0, 0), OPAQUE(0xFF00FF));
    sd_bitmap_free(b);
    /* 32-bit BI_RGB: the fourth byte is padding, not alpha */
    hdr h32 = {40, 1, 1, 32, 0, NULL, 0, NULL, 0};
    begin(&f, &h32);
    bytes(&f, "\x11\x22\x33\x00", 4);
    ASSERT_OK(decode3(&f, &b, &complete));
    ASSERT(px(b, 0, 0) == OPAQUE(0x332211) && !sd_bitmap_has_alpha(b));
    sd_bitmap_free(b);
    /* 32-bit bit fields with alpha, in a V5 header: premultiplied on the way out */
    static const uint32_t rgba[4] = {0x00FF0000, 0x0000FF00, 0x000000FF, 0xFF000000};
    hdr v5 = {124, 2, 1, 32, 3, rgba, 4, NULL, 0};
    begin(&f, &v5);
    bytes(&f, "\x00\x00\xFF\x80\x10\x20\x30\x00", 8); /* red at alpha 128, then fully transparent */
    ASSERT_OK(decode3(&f, &b, &complete));
    uint8_t straight[8] = {255, 0, 0, 128, 0x30, 0x20, 0x10, 0}, want[8];
    sd_premultiply_rgba(straight, want, 2);
    ASSERT(memcmp(sd_bitmap_pixels(b), want, 8) == 0 && sd_bitmap_has_alpha(b));
    sd_bitmap_free(b);
    return 0;
}

static int test_rle(void)
{
    static const uint32_t pal[3] = {0x000000, 0xFF0000, 0x00FF00};
    sd_bitmap *b;
    int64_t complete;
    file f;
    /* RLE8, 4x3: row 0 = run of 3 red + 1 green (absolute, padded); row 1 skipped by a
     * delta (transparent) but for x=3; row 2 = 2 green, then end of bitmap */
    hdr r8 = {40, 4, 3, 8, 1, NULL, 0, pal, 3};
    begin(&f, &r8);
    static const uint8_t rle8[] = {3, 1, 0, 3, 2, 1, 2, 0, /* 3 red; absolute [green red green] + pad */
                                   0, 0,                   /* end of line */
                                   0, 2, 3, 0,             /* delta: x+3 */
                                   1, 2,                   /* 1 green at (3, 1) */
                                   0, 0, 2, 2, 0, 1};      /* next line: 2 green; end of bitmap */
    bytes(&f, rle8, sizeof rle8);
    ASSERT_OK(decode3(&f, &b, &complete));
    ASSERT_EQ(complete, 1);
    /* stored row 0 is the bottom (y = 2): red red red, then the absolute run clipped at width */
    ASSERT(px(b, 0, 2) == OPAQUE(0xFF0000) && px(b, 2, 2) == OPAQUE(0xFF0000) && px(b, 3, 2) == OPAQUE(0x00FF00));
    ASSERT(px(b, 0, 1) == 0 && px(b, 2, 1) == 0 && px(b, 3, 1) == OPAQUE(0x00FF00)); /* skipped: transparent */
    ASSERT(px(b, 0, 0) == OPAQUE(0x00FF00) && px(b, 1, 0) == OPAQUE(0x00FF00) && px(b, 2, 0) == 0);
    ASSERT(sd_bitmap_has_alpha(b));
    sd_bitmap_free(b);
    /* RLE4, 6x1: a run alternating two nibbles, then an absolute run of 3 (2 bytes) */
    hdr r4 = {40, 6, 1, 4, 2, NULL, 0, pal, 3};
    begin(&f, &r4);
    static const uint8_t rle4[] = {3, 0x12, 0, 3, 0x21, 0x20, 0, 1};
    bytes(&f, rle4, sizeof rle4);
    ASSERT_OK(decode3(&f, &b, &complete));
    ASSERT_EQ(complete, 1);
    for (uint32_t x = 0; x < 6; x++)
        ASSERT_EQ(px(b, x, 0), OPAQUE(x & 1 ? 0x00FF00 : 0xFF0000));
    sd_bitmap_free(b);
    /* RLE without its end mark, cut short: what arrived, flagged incomplete */
    begin(&f, &r8);
    bytes(&f, rle8, 4);
    ASSERT_OK(decode3(&f, &b, &complete));
    ASSERT_EQ(complete, 0);
    ASSERT(px(b, 0, 2) == OPAQUE(0xFF0000) && px(b, 0, 0) == 0);
    sd_bitmap_free(b);
    return 0;
}

static int test_cut_and_hostile(void)
{
    static const uint32_t pal[2] = {0xFFFFFF, 0x000000};
    sd_bitmap *b = NULL;
    int64_t complete;
    file f;
    /* 24-bit 2x3 cut after one row: the bottom row, the rest transparent */
    hdr h24 = {40, 2, 3, 24, 0, NULL, 0, NULL, 0};
    begin(&f, &h24);
    bytes(&f, "\x01\x02\x03\x04\x05\x06\x00\x00\x07\x08", 10);
    ASSERT_OK(decode3(&f, &b, &complete));
    ASSERT_EQ(complete, 0);
    ASSERT(px(b, 0, 2) == OPAQUE(0x030201) && px(b, 1, 2) == OPAQUE(0x060504) && px(b, 0, 1) == 0);
    sd_bitmap_free(b);
    /* cut inside the headers */
    file cut = f;
    cut.n = 30;
    sd_decoder *d;
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_push(d, cut.b, cut.n));
    ASSERT_EQ(sd_decoder_finish(d), SD_ETRUNCATED);
    ASSERT(strstr(sd_decoder_message(d), "BMP") != NULL);
    sd_decoder_free(d);
    struct {
        hdr h;
        int rc;
        const char *why;
    } bad[] = {
        {{40, 0, 1, 24, 0, NULL, 0, NULL, 0}, SD_ECORRUPT, "no pixels"},
        {{40, 1, 1, 7, 0, NULL, 0, NULL, 0}, SD_ECORRUPT, "bit depth"},
        {{40, 1, 1, 24, 1, NULL, 0, NULL, 0}, SD_ECORRUPT, "bit depth"},      /* RLE8 at 24 bits */
        {{40, 1, -1, 8, 1, NULL, 0, pal, 2}, SD_ECORRUPT, "top-down rows with RLE"},
        {{40, 1, 1, 16, 3, (const uint32_t[]){0xF00F, 0x0F00, 0x00F0}, 3, NULL, 0}, SD_ECORRUPT, "gaps"},
        {{40, 1, 1, 24, 5, NULL, 0, NULL, 0}, SD_EUNSUPPORTED, "embedded PNG"},
        {{40, 1, 1, 24, 4, NULL, 0, NULL, 0}, SD_EUNSUPPORTED, "embedded JPEG"},
        {{40, 1, 1, 24, 11, NULL, 0, NULL, 0}, SD_EUNSUPPORTED, "unknown compression"},
        {{40, 1 << 30, 1 << 30, 24, 0, NULL, 0, NULL, 0}, SD_ETOOLARGE, "too large"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        begin(&f, &bad[i].h);
        bytes(&f, "\0\0\0\0\0\0\0\0", 8);
        ASSERT_EQ(decode3(&f, &b, &complete), bad[i].rc);
        ASSERT_OK(sd_decoder_new(&d));
        sd_decoder_push(d, f.b, f.n);
        if (strstr(sd_decoder_message(d), bad[i].why) == NULL) {
            fprintf(stderr, "case %zu: message \"%s\" lacks \"%s\"\n", i, sd_decoder_message(d), bad[i].why);
            return 1;
        }
        sd_decoder_free(d);
    }
    /* an unknown header size; a pixel offset inside the headers */
    begin(&f, &h24);
    f.b[14] = 200;
    bytes(&f, "\0\0\0\0", 4);
    ASSERT_EQ(decode3(&f, &b, &complete), SD_ECORRUPT);
    begin(&f, &h24);
    f.b[10] = 20;
    bytes(&f, "\0\0\0\0", 4);
    ASSERT_EQ(decode3(&f, &b, &complete), SD_ECORRUPT);
    return 0;
}

/* Our encoder: opaque as 24-bit, alpha as 32-bit bit fields; both read back
 * exactly; a thumbnail of a BMP through the front end's scaler. */
static int test_encoder_roundtrip(void)
{
    for (int alpha = 0; alpha < 2; alpha++) {
        sd_bitmap *src;
        ASSERT_OK(sd_bitmap_new(33, 17, &src));
        for (uint32_t y = 0; y < 17; y++) {
            uint8_t rgba[33 * 4];
            for (uint32_t x = 0; x < 33; x++) {
                rgba[4 * x] = (uint8_t)(x * 7), rgba[4 * x + 1] = (uint8_t)(y * 15), rgba[4 * x + 2] = (uint8_t)(x ^ y);
                rgba[4 * x + 3] = alpha ? (uint8_t)(x * 255 / 32) : 255;
            }
            sd_premultiply_rgba(rgba, sd_bitmap_pixels(src) + y * sd_bitmap_stride(src), 33);
        }
        file f;
        uint8_t *out;
        size_t n;
        const sd_bitmap *one[1] = {src};
        ASSERT_OK(sdt_encode(SD_FORMAT_BMP, one, NULL, 1, NULL, &out, &n));
        ASSERT(n <= sizeof f.b);
        memcpy(f.b, out, n);
        f.n = n;
        sd_free(out);
        ASSERT_EQ(sd_sniff_format(f.b, f.n), SD_FORMAT_BMP);
        ASSERT_EQ(f.b[28], alpha ? 32 : 24);
        sd_bitmap *back;
        int64_t complete;
        ASSERT_OK(decode3(&f, &back, &complete));
        ASSERT_EQ(complete, 1);
        for (uint32_t y = 0; y < 17; y++)
            ASSERT(memcmp(sd_bitmap_pixels(back) + y * sd_bitmap_stride(back),
                          sd_bitmap_pixels(src) + y * sd_bitmap_stride(src), 33 * 4) == 0);
        sd_bitmap_free(back);
        /* a thumbnail: the front end scales what the codec decoded */
        sd_decoder *d;
        ASSERT_OK(sd_decoder_new(&d));
        ASSERT_OK(sd_decoder_set(d, SD_DEC_MAX_PIXEL_SIZE, 11));
        ASSERT_OK(sd_decoder_push(d, f.b, f.n));
        ASSERT_OK(sd_decoder_finish(d));
        ASSERT_OK(sd_decoder_take_bitmap(d, &back));
        ASSERT(sd_bitmap_width(back) == 11 && sd_bitmap_height(back) == 6);
        sd_bitmap_free(back);
        sd_decoder_free(d);
        sd_bitmap_free(src);
    }
    return 0;
}

/* ---- ImageMagick as the reference ---- */

static char dir[64];

static int sh(const char *cmd)
{
    int rc = system(cmd);
    if (rc != 0)
        fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
    return rc;
}

/* ImageMagick's reading of `path`: straight RGBA, premultiplied here. */
static sd_bitmap *magick_reads(const char *path, uint32_t w, uint32_t h)
{
    char cmd[512], raw[128];
    snprintf(raw, sizeof raw, "%s/ref.rgba", dir);
    snprintf(cmd, sizeof cmd, "convert '%s' -depth 8 'rgba:%s'", path, raw);
    if (sh(cmd) != 0)
        return NULL;
    size_t n;
    uint8_t *rgba = sd_read_file(raw, &n);
    sd_bitmap *b = NULL;
    if (rgba != NULL && n == (size_t)w * h * 4 && sd_bitmap_new(w, h, &b) == SD_OK)
        for (uint32_t y = 0; y < h; y++)
            sd_premultiply_rgba(rgba + (size_t)y * w * 4, sd_bitmap_pixels(b) + y * sd_bitmap_stride(b), w);
    free(rgba);
    return b;
}

static int test_imagemagick_reference(void)
{
    if (system("convert -version >/dev/null 2>&1") != 0) {
        printf("skip: ImageMagick's convert is not installed\n");
        return 77;
    }
    snprintf(dir, sizeof dir, "/tmp/sdbmp.XXXXXX");
    ASSERT(mkdtemp(dir) != NULL);
    /* a 37x23 picture with an alpha ramp, as PNG */
    const uint32_t w = 37, h = 23;
    sd_bitmap *src;
    ASSERT_OK(sd_bitmap_new(w, h, &src));
    for (uint32_t y = 0; y < h; y++) {
        uint8_t rgba[37 * 4];
        for (uint32_t x = 0; x < w; x++) {
            rgba[4 * x] = (uint8_t)(x * 255 / (w - 1)), rgba[4 * x + 1] = (uint8_t)(y * 255 / (h - 1));
            rgba[4 * x + 2] = (uint8_t)((x * 7 + y * 13) & 0xFF), rgba[4 * x + 3] = (uint8_t)(255 - x * 4);
        }
        sd_premultiply_rgba(rgba, sd_bitmap_pixels(src) + y * sd_bitmap_stride(src), w);
    }
    uint8_t *png;
    size_t pn;
    ASSERT_OK(enc_png(src, 6, &png, &pn));
    char path[128], cmd[512];
    snprintf(path, sizeof path, "%s/in.png", dir);
    FILE *fp = fopen(path, "wb");
    ASSERT(fp != NULL && fwrite(png, 1, pn, fp) == pn);
    fclose(fp);
    sd_free(png);
    sd_bitmap_free(src);
    /* ImageMagick's BMP variants of it: what each is, and the arguments */
    struct {
        const char *name, *args, *out;
    } v[] = {
        {"v5, 32-bit bit fields with alpha", "", "BMP:"},
        {"v3, 24-bit", "-background '#336699' -alpha remove -alpha off", "BMP3:"},
        {"v3, 8-bit palette", "-alpha off -colors 200 -type Palette -compress None", "BMP3:"},
        {"v3, 8-bit palette, RLE8", "-alpha off -colors 200 -type Palette -compress RLE", "BMP3:"},
        {"v3, 4-bit palette", "-alpha off -colors 12 -type Palette -compress None", "BMP3:"},
        {"v5, 8-bit palette", "-alpha off -colors 100 -type Palette -compress None", "BMP:"},
        {"v5, 24-bit, bottom-up", "-alpha off", "BMP:"},
        {"v3, 1-bit", "-alpha off -type Bilevel", "BMP3:"},
        {"v2 (OS/2-style), 24-bit", "-alpha off", "BMP2:"},
        {"16-bit 5-6-5", "-alpha off -define bmp:subtype=RGB565", "BMP:"},
    };
    int checked = 0;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char bmp[128];
        snprintf(bmp, sizeof bmp, "%s/v%zu.bmp", dir, i);
        snprintf(cmd, sizeof cmd, "convert '%s' %s '%s%s'", path, v[i].args, v[i].out, bmp);
        ASSERT_EQ(sh(cmd), 0);
        size_t n;
        uint8_t *data = sd_read_file(bmp, &n);
        ASSERT(data != NULL && n <= sizeof ((file *)0)->b);
        file f;
        memcpy(f.b, data, n);
        f.n = n;
        free(data);
        sd_bitmap *ours, *ref = magick_reads(bmp, w, h);
        int64_t complete;
        ASSERT(ref != NULL);
        int rc = decode3(&f, &ours, &complete);
        if (rc != SD_OK) {
            fprintf(stderr, "%s: %s\n", v[i].name, sd_strerror(rc));
            return 1;
        }
        ASSERT_EQ(complete, 1);
        int diff = 0;
        for (uint32_t y = 0; y < h && !diff; y++)
            diff = memcmp(sd_bitmap_pixels(ours) + y * sd_bitmap_stride(ours),
                          sd_bitmap_pixels(ref) + y * sd_bitmap_stride(ref), w * 4) != 0;
        unsigned hsize = f.b[14], bits = hsize == 12 ? f.b[24] : f.b[28], comp = hsize == 12 ? 0 : f.b[30];
        if (diff) {
            fprintf(stderr, "%s (header %u bytes, %u bits, compression %u): pixels differ from ImageMagick's\n",
                    v[i].name, hsize, bits, comp);
            return 1;
        }
        printf("  %-36s header %3u, %2u bits, compression %u: same pixels\n", v[i].name, hsize, bits, comp);
        checked++;
        sd_bitmap_free(ours);
        sd_bitmap_free(ref);
    }
    ASSERT_EQ(checked, (int)(sizeof v / sizeof v[0]));
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    sh(cmd);
    return 0;
}

int main(int argc, char **argv)
{
    static const sd_test_case tests[] = {
        {"palettes_and_layouts", test_palettes_and_layouts},
        {"bitfields_and_alpha", test_bitfields_and_alpha},
        {"rle", test_rle},
        {"cut_and_hostile", test_cut_and_hostile},
        {"encoder_roundtrip", test_encoder_roundtrip},
        {"imagemagick_reference", test_imagemagick_reference},
        {NULL, NULL},
    };
    return sd_test_run(tests, argc, argv);
}
