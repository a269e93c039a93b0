/*
 * sd_bmp.c — Windows and OS/2 bitmaps (BMP), no library: the whole file is
 * kept as it arrives (only up to the end of the pixel data it declares) and
 * decoded when input ends; the header facts are known as soon as its bytes
 * are in. Read: OS/2 core (12-byte) and Windows info headers (40, 52, 56,
 * 64, 108, 124 bytes); 1/4/8-bit palettes, 16-bit (5-5-5 or bit fields),
 * 24-bit, 32-bit (BI_RGB is opaque: its fourth byte is padding, as browsers
 * read it; BI_BITFIELDS/BI_ALPHABITFIELDS with an alpha mask carry alpha);
 * RLE8 and RLE4, where pixels a run skips stay transparent. Bottom-up and
 * top-down rows. Embedded JPEG/PNG and Huffman/CMYK variants are refused
 * by name. A file cut short decodes its rows so far (the rest transparent)
 * and reports SD_DEC_INFO_COMPLETE 0. A palette index past the palette is
 * opaque black.
 */
#include <string.h>

#include "decode/anim/sd_anim_int.h"

enum { BI_RGB = 0, BI_RLE8 = 1, BI_RLE4 = 2, BI_BITFIELDS = 3, BI_JPEG = 4, BI_PNG = 5, BI_ALPHABITFIELDS = 6 };

typedef struct {
    uint32_t mask;
    int shift, bits;
} sd__chan;

typedef struct {
    sd__whole w; /* first: the decoder, the bytes, the canvas */
    int parsed, ended;
    uint32_t offset, width, height, compression, npal;
    int top_down, bpp, alpha;
    uint64_t row_bytes, data_end; /* data_end: where an uncompressed file's pixels end */
    sd__chan chan[4];             /* R, G, B, A */
    uint32_t pal[256];            /* opaque BGRA words */
} sd__bmp;

static uint32_t le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t le32(const uint8_t *p) { return le16(p) | le16(p + 2) << 16; }

static int sniff_bmp(const uint8_t *p, size_t n)
{
    static const char bm[2] = {'B', 'M'};
    if (memcmp(p, bm, SD__MIN(n, 2)) != 0)
        return 0;
    if (n < 10)
        return -1;
    return memcmp(p + 6, "\0\0\0\0", 4) == 0; /* the reserved words are zero */
}

static int bad(sd__bmp *s, int rc, const char *what)
{
    sd__decoder_msg(s->w.dec, "BMP: %s", what);
    return rc;
}

/* A colour mask: its lowest bit and width; contiguous, at most 32 bits. */
static int channel(sd__bmp *s, sd__chan *c, uint32_t mask)
{
    c->mask = mask;
    c->shift = c->bits = 0;
    if (mask == 0)
        return SD_OK;
    while (!(mask & 1)) {
        mask >>= 1;
        c->shift++;
    }
    while (mask & 1) {
        mask >>= 1;
        c->bits++;
    }
    return mask == 0 ? SD_OK : bad(s, SD_ECORRUPT, "a colour mask with gaps");
}

/* A channel's value in 8 bits: the top 8 of a wider one; a narrower one
 * with its high bits repeated below it (5 bits abcde: abcdeabc), as
 * browsers and ImageMagick expand it. */
static uint8_t take(const sd__chan *c, uint32_t px)
{
    if (c->bits == 0)
        return 0; /* no mask: the channel is absent */
    uint32_t v = (px & c->mask) >> c->shift;
    if (c->bits >= 8)
        return (uint8_t)(v >> (c->bits - 8));
    uint32_t x = v << (8 - c->bits);
    for (int s = c->bits; s < 8; s *= 2)
        x |= x >> s;
    return (uint8_t)x;
}

/* The headers, once their bytes are in: SD_OK with s->parsed set, SD_OK
 * without it while more bytes are needed, or an error. */
static int parse(sd__bmp *s)
{
    const uint8_t *p = s->w.in.data;
    size_t n = s->w.in.len;
    if (n < 18)
        return SD_OK;
    uint32_t dib = le32(p + 14);
    if (dib != 12 && dib != 40 && dib != 52 && dib != 56 && dib != 64 && dib != 108 && dib != 124)
        return bad(s, SD_ECORRUPT, "an unknown header size");
    int masks_after = 0;
    if (n < 14 + (size_t)dib)
        return SD_OK;
    const uint8_t *h = p + 14;
    int32_t w, ht;
    uint32_t planes, used = 0;
    if (dib == 12) { /* OS/2 core: 16-bit sizes, 3-byte palette entries */
        w = (int32_t)le16(h + 4);
        ht = (int32_t)le16(h + 6);
        planes = le16(h + 8);
        s->bpp = (int)le16(h + 10);
        s->compression = BI_RGB;
    } else {
        w = (int32_t)le32(h + 4);
        ht = (int32_t)le32(h + 8);
        planes = le16(h + 12);
        s->bpp = (int)le16(h + 14);
        s->compression = le32(h + 16);
        used = le32(h + 32);
        if (dib == 64 && s->compression == 3 && s->bpp == 1)
            return bad(s, SD_EUNSUPPORTED, "OS/2 Huffman 1D compression is not supported");
        if (dib == 64 && s->compression == 4 && s->bpp == 24)
            return bad(s, SD_EUNSUPPORTED, "OS/2 RLE24 compression is not supported");
        masks_after = dib == 40 && (s->compression == BI_BITFIELDS || s->compression == BI_ALPHABITFIELDS);
    }
    if (s->compression == BI_JPEG || s->compression == BI_PNG)
        return bad(s, SD_EUNSUPPORTED, s->compression == BI_JPEG ? "an embedded JPEG is not supported"
                                                                 : "an embedded PNG is not supported");
    if (s->compression > BI_ALPHABITFIELDS)
        return bad(s, SD_EUNSUPPORTED, "an unknown compression (CMYK or another variant)");
    if (planes != 1 || w <= 0 || ht == 0 || ht == INT32_MIN)
        return bad(s, SD_ECORRUPT, "a header with no pixels or a bad plane count");
    int ok_depth = s->bpp == 1 || s->bpp == 4 || s->bpp == 8 || s->bpp == 16 || s->bpp == 24 || s->bpp == 32;
    if (!ok_depth || (s->compression == BI_RLE8 && s->bpp != 8) || (s->compression == BI_RLE4 && s->bpp != 4) ||
        ((s->compression == BI_BITFIELDS || s->compression == BI_ALPHABITFIELDS) && s->bpp != 16 && s->bpp != 32))
        return bad(s, SD_ECORRUPT, "a bit depth that does not fit the compression");
    s->top_down = ht < 0;
    if (s->top_down && (s->compression == BI_RLE8 || s->compression == BI_RLE4))
        return bad(s, SD_ECORRUPT, "top-down rows with RLE compression");
    s->width = (uint32_t)w;
    s->height = (uint32_t)(ht < 0 ? -ht : ht);
    size_t at = 14 + (size_t)dib;
    if (s->offset < at)
        return bad(s, SD_ECORRUPT, "the pixel data starts inside the headers");
    /* colour masks: after a 40-byte header, inside the larger ones */
    uint32_t m[4] = {0, 0, 0, 0};
    if (s->compression == BI_BITFIELDS || s->compression == BI_ALPHABITFIELDS) {
        int count = s->compression == BI_ALPHABITFIELDS || dib >= 56 ? 4 : 3;
        const uint8_t *src = masks_after ? p + at : h + 40;
        if (masks_after) {
            if (n < at + 4 * (size_t)count)
                return SD_OK;
            at += 4 * (size_t)count;
        }
        for (int i = 0; i < count; i++)
            m[i] = le32(src + 4 * i);
    } else if (s->bpp == 16) {
        m[0] = 0x7C00, m[1] = 0x03E0, m[2] = 0x001F;
    } else if (s->bpp == 32) {
        m[0] = 0xFF0000, m[1] = 0xFF00, m[2] = 0xFF; /* the fourth byte is padding */
    }
    for (int i = 0; i < 4; i++)
        SD__FORWARD_IF_ERROR(channel(s, &s->chan[i], m[i]));
    /* the palette: what the header says, within the bytes before the pixels */
    if (s->bpp <= 8) {
        size_t entry = dib == 12 ? 3 : 4, max = (size_t)1 << s->bpp;
        size_t want = used == 0 || used > max ? max : used;
        if (n < at + want * entry && n < s->offset)
            return SD_OK;
        size_t room = s->offset > at ? (s->offset - at) / entry : 0;
        s->npal = (uint32_t)SD__MIN(want, room);
        for (uint32_t i = 0; i < s->npal; i++) {
            const uint8_t *e = p + at + i * entry;
            s->pal[i] = 0xFF000000u | (uint32_t)e[2] << 16 | (uint32_t)e[1] << 8 | e[0];
        }
    }
    s->alpha = s->chan[3].mask != 0 || s->compression == BI_RLE8 || s->compression == BI_RLE4;
    /* the limits first: past them the sizes below cannot overflow */
    SD__FORWARD_IF_ERROR(sd__decoder_set_header(s->w.dec, s->width, s->height, 1, 0, s->alpha));
    s->row_bytes = ((uint64_t)s->width * (uint64_t)s->bpp + 31) / 32 * 4;
    s->data_end = s->compression == BI_RLE8 || s->compression == BI_RLE4
                      ? UINT64_MAX
                      : (uint64_t)s->offset + s->row_bytes * s->height;
    s->parsed = 1;
    return SD_OK;
}

static int sdb_init(sd_decoder *d) { return sd__whole_init(d, sizeof(sd__bmp)); }

static int sdb_push(sd_decoder *d, const uint8_t *p, size_t n)
{
    sd__bmp *s = d->codec_state;
    if (s->parsed && (uint64_t)s->w.in.len >= s->data_end)
        return SD_OK; /* past the pixels: nothing more to keep */
    if (s->parsed && (uint64_t)s->w.in.len + n > s->data_end)
        n = (size_t)(s->data_end - s->w.in.len);
    SD__FORWARD_IF_ERROR(sd__buf_put(&s->w.in, p, n));
    if (!s->parsed && s->w.in.len >= 14 && s->offset == 0)
        s->offset = le32(s->w.in.data + 10);
    return s->parsed ? SD_OK : parse(s);
}

/* Uncompressed rows; returns the rows that were whole. */
static uint32_t plain_rows(sd__bmp *s)
{
    const uint8_t *base = s->w.in.data + s->offset;
    uint64_t have = s->w.in.len > s->offset ? s->w.in.len - s->offset : 0;
    uint32_t rows = (uint32_t)SD__MIN((uint64_t)s->height, have / s->row_bytes);
    sd_bitmap *b = s->w.canvas;
    for (uint32_t r = 0; r < rows; r++) {
        const uint8_t *src = base + (uint64_t)r * s->row_bytes;
        uint32_t y = s->top_down ? r : s->height - 1 - r;
        uint32_t *out = (uint32_t *)(void *)(b->pixels + (size_t)y * b->stride);
        for (uint32_t x = 0; x < s->width; x++) {
            uint32_t px;
            switch (s->bpp) {
            case 1: px = src[x >> 3] >> (7 - (x & 7)) & 1; break;
            case 4: px = src[x >> 1] >> (x & 1 ? 0 : 4) & 15; break;
            case 8: px = src[x]; break;
            case 16: px = le16(src + 2 * (size_t)x); break;
            case 24: px = 0xFF000000u | (uint32_t)src[3 * (size_t)x + 2] << 16 | (uint32_t)src[3 * (size_t)x + 1] << 8 |
                          src[3 * (size_t)x]; break;
            default: px = le32(src + 4 * (size_t)x); break;
            }
            if (s->bpp <= 8) {
                out[x] = px < s->npal ? s->pal[px] : 0xFF000000u;
            } else if (s->bpp == 24) {
                out[x] = px;
            } else {
                uint8_t a = s->chan[3].mask ? take(&s->chan[3], px) : 255;
                out[x] = (uint32_t)a << 24 | (uint32_t)take(&s->chan[0], px) << 16 |
                         (uint32_t)take(&s->chan[1], px) << 8 | take(&s->chan[2], px);
            }
        }
        if (s->chan[3].mask)
            sd__premultiply_bgra((uint8_t *)out, (uint8_t *)out, s->width);
    }
    return rows;
}

/* RLE8/RLE4 (bottom-up only); returns 1 when the end-of-bitmap mark came. */
static int rle(sd__bmp *s)
{
    const uint8_t *p = s->w.in.data, *end = s->w.in.data + s->w.in.len;
    const uint8_t *q = s->offset < s->w.in.len ? p + s->offset : end;
    sd_bitmap *b = s->w.canvas;
    uint32_t x = 0, y = 0; /* y counts stored rows, from the bottom */
    int four = s->compression == BI_RLE4;
#define PUT(idx)                                                                              \
    do {                                                                                      \
        if (x < s->width && y < s->height) {                                                  \
            uint32_t i_ = (idx);                                                              \
            ((uint32_t *)(void *)(b->pixels + (size_t)(s->height - 1 - y) * b->stride))[x] = \
                i_ < s->npal ? s->pal[i_] : 0xFF000000u;                                      \
        }                                                                                     \
        x++;                                                                                  \
    } while (0)
    while (end - q >= 2 && y < s->height) {
        uint32_t count = q[0], value = q[1];
        q += 2;
        if (count > 0) { /* a run of one index (RLE4: two alternating) */
            for (uint32_t k = 0; k < count && x < s->width; k++)
                PUT(four ? (k & 1 ? value & 15 : value >> 4) : value);
            continue;
        }
        if (value == 0) { /* end of line */
            x = 0;
            y++;
        } else if (value == 1) { /* end of bitmap */
            return 1;
        } else if (value == 2) { /* delta */
            if (end - q < 2)
                break;
            x += q[0];
            y += q[1];
            q += 2;
        } else { /* an absolute run of `value` indices, padded to 16 bits */
            size_t bytes = four ? (value + 1) / 2 : value;
            size_t padded = (bytes + 1) & ~(size_t)1;
            if ((size_t)(end - q) < bytes)
                break;
            for (uint32_t k = 0; k < value; k++)
                PUT(four ? (k & 1 ? q[k / 2] & 15 : q[k / 2] >> 4) : q[k]);
            q += SD__MIN(padded, (size_t)(end - q));
        }
    }
#undef PUT
    return y >= s->height; /* rows all done without the mark: whole enough */
}

static int sdb_finish(sd_decoder *d)
{
    sd__bmp *s = d->codec_state;
    s->ended = 1;
    if (!s->parsed)
        return bad(s, SD_ETRUNCATED, "the file ends inside its headers");
    SD__FORWARD_IF_ERROR(sd__decoder_charge(d, (uint64_t)s->width * s->height * 4, "the BMP canvas"));
    SD__FORWARD_IF_ERROR(sd__bitmap_alloc(s->width, s->height, 1, &s->w.canvas));
    int whole;
    if (s->compression == BI_RLE8 || s->compression == BI_RLE4) {
        whole = rle(s);
        d->rows = whole ? s->height : 0;
    } else {
        uint32_t rows = plain_rows(s);
        whole = rows == s->height;
        d->rows = rows;
    }
    if (!whole && d->warnings++ == 0)
        sd__decoder_msg(d, "BMP: the pixel data ends early: the rest is transparent");
    d->scans = 1;
    d->complete = whole;
    d->end_reached = whole;
    return SD_OK;
}

const sd__codec sd__bmp_codec = {
    SD_FORMAT_BMP, "BMP", "image/bmp", sniff_bmp,
    SD_CAP_DECODE | SD_CAP_ENCODE | SD_CAP_ENCODE_ALPHA,
    sdb_init, sdb_push, sdb_finish, sd__whole_canvas, sd__whole_destroy, NULL, /* a still: no frame() */
    sd__bmp_encode,
};
