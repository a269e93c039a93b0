/* sd_encode_apng.c — frames to an APNG on libpng, which writes no APNG
 * chunks itself: libpng writes each frame's changed rectangle as a PNG of
 * its own, and its IDAT data is repackaged — IDAT for frame 0 (the default
 * image is the first frame), fdAT with a sequence number for the others —
 * behind acTL and one fcTL per frame. A frame replaces its rectangle (blend
 * SOURCE, dispose NONE), so the canvas after frame i is frame i exactly. */
#include <string.h>

#include <zlib.h>

#include "bitmap/sd_bitmap_int.h"
#include "encode/sd_encode_int.h"
#include "sdcore.h"

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A chunk of `head` then `body` (either may be empty), with its CRC. */
static void chunk(sd__buf *m, const char *type, const uint8_t *head, size_t head_len,
                  const uint8_t *body, size_t body_len)
{
    uint8_t b[8];
    put32(b, (uint32_t)(head_len + body_len));
    memcpy(b + 4, type, 4);
    (void)sd__buf_put(m, b, 8);
    uLong crc = crc32(0, (const Bytef *)type, 4);
    if (head_len) {
        (void)sd__buf_put(m, head, head_len);
        crc = crc32(crc, head, (uInt)head_len);
    }
    if (body_len) {
        (void)sd__buf_put(m, body, body_len);
        crc = crc32(crc, body, (uInt)body_len);
    }
    put32(b, (uint32_t)crc);
    (void)sd__buf_put(m, b, 4);
}

/* The smallest rectangle {x, y, w, h} where `b` differs from `a`; 1x1 at
 * the origin when they are the same (a frame has at least one pixel). */
static void changed(const sd_bitmap *a, const sd_bitmap *b, uint32_t r[4])
{
    uint32_t x0 = UINT32_MAX, y0 = UINT32_MAX, x1 = 0, y1 = 0;
    const size_t row = (size_t)a->width * 4;
    for (uint32_t y = 0; y < a->height; y++) {
        const uint32_t *pa = (const uint32_t *)(const void *)(a->pixels + (size_t)y * a->stride);
        const uint32_t *pb = (const uint32_t *)(const void *)(b->pixels + (size_t)y * b->stride);
        if (memcmp(pa, pb, row) == 0)
            continue;
        uint32_t l = 0, h = a->width - 1;
        while (pa[l] == pb[l])
            l++;
        while (pa[h] == pb[h])
            h--;
        x0 = SD__MIN(x0, l);
        x1 = SD__MAX(x1, h);
        if (y0 == UINT32_MAX)
            y0 = y;
        y1 = y;
    }
    if (y0 == UINT32_MAX) {
        r[0] = r[1] = 0;
        r[2] = r[3] = 1;
        return;
    }
    r[0] = x0;
    r[1] = y0;
    r[2] = x1 - x0 + 1;
    r[3] = y1 - y0 + 1;
}

/* Walk a PNG libpng wrote: IHDR's 13 bytes, and the IDAT payloads as
 * (offset, length) pairs appended to `spans`. */
static int spans_of(const uint8_t *png, size_t n, uint8_t ihdr[13], sd__buf *spans)
{
    for (size_t at = 8; at + 12 <= n;) {
        uint32_t len = be32(png + at);
        SD__RETURN_IF(at + 12 + (size_t)len > n, SD_ECORRUPT);
        const uint8_t *type = png + at + 4;
        if (memcmp(type, "IHDR", 4) == 0 && len == 13)
            memcpy(ihdr, png + at + 8, 13);
        else if (memcmp(type, "IDAT", 4) == 0) {
            size_t span[2] = {at + 8, len};
            (void)sd__buf_put(spans, span, sizeof span);
        }
        at += 12 + (size_t)len;
    }
    return spans->oom ? SD_ENOMEM : SD_OK;
}

/* One frame: fcTL, then its data as IDAT (the first frame, after IHDR and
 * `actl`) or fdAT chunks. */
static int put_frame(sd__buf *m, const sd_bitmap *frame, const uint32_t r[4], int delay_ms, int level,
                     int alpha, uint32_t *seq, const uint8_t *actl)
{
    sd_bitmap sub = *frame; /* a view of the rectangle */
    sub.pixels = frame->pixels + (size_t)r[1] * frame->stride + (size_t)r[0] * 4;
    sub.width = r[2];
    sub.height = r[3];
    uint8_t *png = NULL;
    size_t png_len = 0;
    SD__FORWARD_IF_ERROR(sd__encode_png(&sub, level, alpha, &png, &png_len));
    sd__buf spans = {0};
    uint8_t ihdr[13] = {0};
    int rc = spans_of(png, png_len, ihdr, &spans);
    if (rc == SD_OK) {
        if (actl != NULL) {
            chunk(m, "IHDR", ihdr, 13, NULL, 0);
            chunk(m, "acTL", actl, 8, NULL, 0);
        }
        /* the delay as num/den: milliseconds when they fit in 16 bits, else
         * hundredths (up to 655 s) */
        uint32_t num = (uint32_t)delay_ms, den = 1000;
        if (num > 65535) {
            num = SD__MIN(num / 10, 65535u);
            den = 100;
        }
        uint8_t f[26];
        put32(f, (*seq)++);
        put32(f + 4, r[2]);
        put32(f + 8, r[3]);
        put32(f + 12, r[0]);
        put32(f + 16, r[1]);
        f[20] = (uint8_t)(num >> 8);
        f[21] = (uint8_t)num;
        f[22] = (uint8_t)(den >> 8);
        f[23] = (uint8_t)den;
        f[24] = 0; /* dispose NONE */
        f[25] = 0; /* blend SOURCE */
        chunk(m, "fcTL", f, sizeof f, NULL, 0);
        const size_t *sp = (const size_t *)(const void *)spans.data;
        for (size_t i = 0; i < spans.len / (2 * sizeof(size_t)); i++) {
            if (actl != NULL) {
                chunk(m, "IDAT", NULL, 0, png + sp[2 * i], sp[2 * i + 1]);
            } else {
                uint8_t s[4];
                put32(s, (*seq)++);
                chunk(m, "fdAT", s, 4, png + sp[2 * i], sp[2 * i + 1]);
            }
        }
    }
    sd__free(spans.data);
    sd__free(png);
    return rc;
}

int sd_encode_apng(const sd_bitmap *const *frames, const int *delays_ms, size_t count, int loop_count,
                   int level, uint8_t **out, size_t *out_len)
{
    SD__RETURN_IF(frames == NULL || count == 0 || out == NULL || out_len == NULL || loop_count < 0 || level > 9,
                  SD_EINVAL);
    *out = NULL;
    *out_len = 0;
    int alpha = 0;
    for (size_t i = 0; i < count; i++) {
        SD__RETURN_IF(frames[i] == NULL || frames[i]->width != frames[0]->width ||
                          frames[i]->height != frames[0]->height || (delays_ms && delays_ms[i] < 0),
                      SD_EINVAL);
        alpha |= sd_bitmap_has_alpha(frames[i]);
    }
    SD__RETURN_IF(count > INT32_MAX, SD_ETOOLARGE); /* acTL's frame count is below 2^31 */
    sd__buf m = {0};
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    (void)sd__buf_put(&m, sig, sizeof sig);
    uint8_t actl[8];
    put32(actl, (uint32_t)count);
    put32(actl + 4, (uint32_t)loop_count);
    uint32_t seq = 0;
    int rc = SD_OK;
    for (size_t i = 0; i < count && rc == SD_OK && !m.oom; i++) {
        uint32_t r[4] = {0, 0, frames[0]->width, frames[0]->height};
        if (i > 0)
            changed(frames[i - 1], frames[i], r);
        rc = put_frame(&m, frames[i], r, delays_ms ? delays_ms[i] : 0, level, alpha, &seq, i == 0 ? actl : NULL);
    }
    chunk(&m, "IEND", NULL, 0, NULL, 0);
    if (rc == SD_OK && m.oom)
        rc = SD_ENOMEM;
    if (rc != SD_OK) {
        sd__free(m.data);
        return rc;
    }
    *out = m.data;
    *out_len = m.len;
    return SD_OK;
}
