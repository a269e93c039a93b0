/* sd_encode_icc.c — an ICC profile added to an encoded JPEG or PNG, for an
 * image kept in its source colours (sd_encoder_set_icc_profile). The
 * encoders write their files as always; the profile goes in after, where
 * each format's readers look for it: JPEG APP2 "ICC_PROFILE" segments
 * (numbered, 65,519 profile bytes each, the ICC spec's Annex B) after SOI
 * and a leading JFIF APP0 / Exif APP1; PNG one iCCP chunk (zlib) right
 * after IHDR, before PLTE and IDAT as the spec orders. */
#include <string.h>

#include <zlib.h>

#include "encode/sd_encode_int.h"

#define SD__APP2_PROFILE_MAX 65519 /* 65535 - 2 (length) - 12 ("ICC_PROFILE\0") - 2 (seq, count) */

int sd__jpeg_add_icc(const uint8_t *in, size_t n, const sd__icc *icc, uint8_t **out, size_t *out_len)
{
    SD__RETURN_IF(n < 4 || in[0] != 0xFF || in[1] != 0xD8, SD_EINVAL);
    size_t segs = (icc->len + SD__APP2_PROFILE_MAX - 1) / SD__APP2_PROFILE_MAX;
    SD__RETURN_IF(segs == 0 || segs > 255, SD_EINVAL);
    /* after SOI and the APP0/APP1 segments that must lead (JFIF, Exif) */
    size_t at = 2;
    while (at + 4 <= n && in[at] == 0xFF && (in[at + 1] == 0xE0 || in[at + 1] == 0xE1)) {
        size_t len = (size_t)in[at + 2] << 8 | in[at + 3];
        SD__RETURN_IF(len < 2 || at + 2 + len > n, SD_EINVAL);
        at += 2 + len;
    }
    size_t total = n + segs * (2 + 2 + 12 + 2) + icc->len;
    uint8_t *o = sd__malloc(total), *w = o;
    SD__RETURN_IF(o == NULL, SD_ENOMEM);
    memcpy(w, in, at), w += at;
    for (size_t s = 0; s < segs; s++) {
        size_t off = s * SD__APP2_PROFILE_MAX, len = SD__MIN(icc->len - off, (size_t)SD__APP2_PROFILE_MAX);
        *w++ = 0xFF, *w++ = 0xE2;
        *w++ = (uint8_t)((len + 16) >> 8), *w++ = (uint8_t)(len + 16);
        memcpy(w, "ICC_PROFILE", 12), w += 12;
        *w++ = (uint8_t)(s + 1), *w++ = (uint8_t)segs;
        memcpy(w, icc->data + off, len), w += len;
    }
    memcpy(w, in + at, n - at);
    *out = o;
    *out_len = total;
    return SD_OK;
}

static void be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

int sd__png_add_icc(const uint8_t *in, size_t n, const sd__icc *icc, uint8_t **out, size_t *out_len)
{
    static const char name[] = "ICC profile"; /* keyword, NUL, method 0 (zlib) */
    const size_t ihdr_end = 8 + 8 + 13 + 4;
    SD__RETURN_IF(n < ihdr_end || memcmp(in + 12, "IHDR", 4) != 0, SD_EINVAL);
    uLongf zlen = compressBound((uLong)icc->len);
    uint8_t *z = sd__malloc(zlen);
    SD__RETURN_IF(z == NULL, SD_ENOMEM);
    if (compress2(z, &zlen, icc->data, (uLong)icc->len, Z_BEST_COMPRESSION) != Z_OK) {
        sd__free(z);
        return SD_ENOMEM;
    }
    size_t data_len = sizeof name + 1 + zlen, total = n + 12 + data_len;
    uint8_t *o = sd__malloc(total), *w = o;
    if (o == NULL) {
        sd__free(z);
        return SD_ENOMEM;
    }
    memcpy(w, in, ihdr_end), w += ihdr_end;
    be32(w, (uint32_t)data_len), w += 4;
    uint8_t *type = w;
    memcpy(w, "iCCP", 4), w += 4;
    memcpy(w, name, sizeof name), w += sizeof name; /* with its NUL */
    *w++ = 0;                                        /* compression method: zlib */
    memcpy(w, z, zlen), w += zlen;
    be32(w, (uint32_t)crc32(crc32(0, Z_NULL, 0), type, (uInt)(4 + data_len))), w += 4;
    memcpy(w, in + ihdr_end, n - ihdr_end);
    sd__free(z);
    *out = o;
    *out_len = total;
    return SD_OK;
}
