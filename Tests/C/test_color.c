/*
 * test_color.c — colour management: images tagged here (never committed
 * binaries) with Display P3, Adobe RGB (1998), ProPhoto, Rec.2020 (built with
 * lcms2's cmsCreateRGBProfile, or Debian's colord-data profiles), a v4
 * profile and gray γ2.2, embedded in JPEG (APP2), PNG (iCCP) and WebP
 * (ICCP); PNG gAMA/cHRM and sRGB chunks; AVIF nclx and ICC (avifenc). The
 * contract: within 2 per channel of lcms2's unoptimised floating-point
 * transform (relative colorimetric, no black-point compensation) of the
 * stored pixels, fed whole, byte by byte and in random chunks, and as
 * thumbnails; transicc (lcms2's own tool) agrees on a sample; an sRGB
 * profile (by content) and untagged images are left exactly alone;
 * SD_DEC_COLOR_MANAGE 0 returns the stored pixels and the exact profile
 * bytes; bad profiles are a warning and sRGB, never a failure. At the
 * gamut edges (hue sweeps, saturated inks): v4 Lab and v2 XYZ LUT profiles
 * made here, ghostscript's CMYK profiles (libgs-common), a P3 alpha ramp
 * against the file's straight values — each with the mutation it must
 * catch (a coarse table; colour recovered from premultiplied bytes).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <math.h>

#include <lcms2.h>
#include <zlib.h>
#include <jpeglib.h>

#include "sd_test.h"
#include "sd_test_util.h"

/* the library's test hook (color/sd_color.h) */
int sd__color_force_scalar(int on);
void sd__color_mutate(int which); /* 1: coarse tables, 2: PNG alpha rows from premultiplied bytes */
#include "sd_test_encode.h"

/* ---- profiles ---- */

static cmsHPROFILE rgb(double wx, double wy, const double p[6], cmsToneCurve *c)
{
    cmsCIExyY w = {wx, wy, 1};
    cmsCIExyYTRIPLE t = {{p[0], p[1], 1}, {p[2], p[3], 1}, {p[4], p[5], 1}};
    cmsToneCurve *cs[3] = {c, c, c};
    cmsHPROFILE h = cmsCreateRGBProfile(&w, &t, cs);
    cmsFreeToneCurve(c);
    return h;
}

static cmsToneCurve *srgb_trc(void)
{
    const double p[5] = {2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045};
    return cmsBuildParametricToneCurve(NULL, 4, p);
}

static uint8_t *save(cmsHPROFILE h, size_t *len)
{
    cmsUInt32Number n = 0;
    cmsSaveProfileToMem(h, NULL, &n);
    uint8_t *b = malloc(n);
    cmsSaveProfileToMem(h, b, &n);
    *len = n;
    return b;
}

static uint8_t *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n);
    if (fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

enum { P_P3, P_P3_V4, P_ADOBE, P_PROPHOTO, P_REC2020, P_GRAY, P_SRGB, P_COUNT };
static const char *pname[P_COUNT] = {"display-p3", "display-p3-v4", "adobe-rgb-1998", "prophoto", "rec2020",
                                     "gray-2.2", "srgb"};

static uint8_t *profile(int which, size_t *len)
{
    static const double p3[6] = {0.680, 0.320, 0.265, 0.690, 0.150, 0.060};
    static const double bt2020[6] = {0.708, 0.292, 0.170, 0.797, 0.131, 0.046};
    cmsHPROFILE h = NULL;
    switch (which) {
    case P_P3:
    case P_P3_V4:
        h = rgb(0.3127, 0.3290, p3, srgb_trc());
        cmsSetProfileVersion(h, which == P_P3_V4 ? 4.3 : 2.1);
        break;
    case P_ADOBE: { /* colord's, else built the same way */
        uint8_t *b = read_all("/usr/share/color/icc/colord/AdobeRGB1998.icc", len);
        if (b)
            return b;
        static const double a[6] = {0.64, 0.33, 0.21, 0.71, 0.15, 0.06};
        h = rgb(0.3127, 0.3290, a, cmsBuildGamma(NULL, 563.0 / 256));
        break;
    }
    case P_PROPHOTO: {
        uint8_t *b = read_all("/usr/share/color/icc/colord/ProPhotoRGB.icc", len);
        if (b)
            return b;
        static const double pp[6] = {0.7347, 0.2653, 0.1596, 0.8404, 0.0366, 0.0001};
        h = rgb(0.3457, 0.3585, pp, cmsBuildGamma(NULL, 1.8));
        break;
    }
    case P_REC2020: h = rgb(0.3127, 0.3290, bt2020, cmsBuildGamma(NULL, 2.4)); break;
    case P_GRAY: {
        cmsCIExyY w = {0.3127, 0.3290, 1};
        cmsToneCurve *g = cmsBuildGamma(NULL, 2.2);
        h = cmsCreateGrayProfile(&w, g);
        cmsFreeToneCurve(g);
        break;
    }
    default: h = cmsCreate_sRGBProfile(); break;
    }
    uint8_t *b = save(h, len);
    cmsCloseProfile(h);
    return b;
}

/* ---- files ---- */

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* JPEG: APP2 ICC_PROFILE segments right after SOI (`order` 1: reversed). */
static uint8_t *jpeg_with_icc(const uint8_t *jpg, size_t n, const uint8_t *icc, size_t icc_len, int reversed,
                              size_t *out_len)
{
    const size_t per = 65519;
    size_t segs = (icc_len + per - 1) / per;
    uint8_t *o = malloc(n + segs * (18 + 2) + icc_len), *w = o;
    memcpy(w, jpg, 2), w += 2;
    for (size_t k = 0; k < segs; k++) {
        size_t s = reversed ? segs - 1 - k : k, off = s * per, len = icc_len - off < per ? icc_len - off : per;
        *w++ = 0xFF, *w++ = 0xE2;
        *w++ = (uint8_t)((len + 16) >> 8), *w++ = (uint8_t)(len + 16);
        memcpy(w, "ICC_PROFILE", 12), w += 12;
        *w++ = (uint8_t)(s + 1), *w++ = (uint8_t)segs;
        memcpy(w, icc + off, len), w += len;
    }
    memcpy(w, jpg + 2, n - 2), w += n - 2;
    *out_len = (size_t)(w - o);
    return o;
}

/* PNG: chunks inserted after IHDR. */
static uint8_t *png_with_chunk(const uint8_t *png, size_t n, const char *type, const uint8_t *data, size_t len,
                               size_t *out_len)
{
    size_t at = 8 + 25; /* signature + IHDR */
    uint8_t *o = malloc(n + len + 12), *w = o;
    memcpy(w, png, at), w += at;
    put32(w, (uint32_t)len), w += 4;
    memcpy(w, type, 4), w += 4;
    memcpy(w, data, len), w += len;
    uint32_t crc = (uint32_t)crc32(0, (const Bytef *)type, 4);
    crc = (uint32_t)crc32(crc, data, (uInt)len);
    put32(w, crc), w += 4;
    memcpy(w, png + at, n - at), w += n - at;
    *out_len = (size_t)(w - o);
    return o;
}

static uint8_t *png_with_icc(const uint8_t *png, size_t n, const uint8_t *icc, size_t icc_len, size_t *out_len)
{
    uLongf z = compressBound((uLong)icc_len);
    uint8_t *data = malloc(5 + z);
    memcpy(data, "icc\0\0", 5); /* name, NUL, compression method 0 */
    compress2(data + 5, &z, icc, (uLong)icc_len, 9);
    uint8_t *o = png_with_chunk(png, n, "iCCP", data, 5 + z, out_len);
    free(data);
    return o;
}

static void le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

/* WebP: a simple file (RIFF WEBP VP8L/VP8) rewrapped as VP8X + ICCP + it. */
static uint8_t *webp_with_icc(const uint8_t *webp, size_t n, const uint8_t *icc, size_t icc_len, uint32_t w,
                              uint32_t h, int alpha, size_t *out_len)
{
    size_t pad = icc_len & 1, total = 12 + 18 + 8 + icc_len + pad + (n - 12);
    uint8_t *o = calloc(1, total), *p = o;
    memcpy(p, "RIFF", 4), le32(p + 4, (uint32_t)(total - 8)), memcpy(p + 8, "WEBP", 4), p += 12;
    memcpy(p, "VP8X", 4), le32(p + 4, 10);
    p[8] = (uint8_t)(0x20 | (alpha ? 0x10 : 0));
    p[12] = (uint8_t)(w - 1), p[13] = (uint8_t)((w - 1) >> 8), p[14] = (uint8_t)((w - 1) >> 16);
    p[15] = (uint8_t)(h - 1), p[16] = (uint8_t)((h - 1) >> 8), p[17] = (uint8_t)((h - 1) >> 16);
    p += 18;
    memcpy(p, "ICCP", 4), le32(p + 4, (uint32_t)icc_len), memcpy(p + 8, icc, icc_len), p += 8 + icc_len + pad;
    memcpy(p, webp + 12, n - 12);
    *out_len = total;
    return o;
}

static uint8_t *png_rgba(const uint8_t *rgba, uint32_t w, uint32_t h, const uint8_t *icc, size_t icc_len,
                         size_t *out_len);

/* ---- pictures and expectations ---- */

/* Saturated and pale colours, ramps, a gray strip: every gamut edge;
 * straight RGBA (w*h*4). */
static uint8_t *picture_rgba(uint32_t w, uint32_t h, int alpha, int gray)
{
    uint8_t *px = malloc((size_t)w * h * 4);
    for (uint32_t y = 0; y < h; y++) {
        for (uint32_t x = 0; x < w; x++) {
            uint8_t *p = px + ((size_t)y * w + x) * 4;
            uint32_t r = x * 255 / (w - 1), g = y * 255 / (h - 1), bl = ((x + y) * 7) & 255;
            if (y < h / 8)
                r = g = bl = x * 255 / (w - 1);
            if (gray)
                r = g = bl = (r * 3 + g * 5 + bl * 2) / 10;
            p[0] = (uint8_t)r, p[1] = (uint8_t)g, p[2] = (uint8_t)bl;
            p[3] = alpha ? (uint8_t)(128 + (x * 127) / (w - 1)) : 255;
        }
    }
    return px;
}

/* Straight RGBA (w*h*4) as a premultiplied bitmap. */
static sd_bitmap *premultiplied(const uint8_t *rgba, uint32_t w, uint32_t h)
{
    sd_bitmap *b;
    if (sd_bitmap_new(w, h, &b) != SD_OK)
        return NULL;
    for (uint32_t y = 0; y < h; y++)
        sd_premultiply_rgba(rgba + (size_t)y * w * 4, sd_bitmap_pixels(b) + (size_t)y * sd_bitmap_stride(b), w);
    return b;
}

static sd_bitmap *picture(uint32_t w, uint32_t h, int alpha, int gray)
{
    uint8_t *px = picture_rgba(w, h, alpha, gray);
    sd_bitmap *b = premultiplied(px, w, h);
    free(px);
    return b;
}

/* Decode with options; chunked 0 whole, 1 byte by byte, 2 random. */
static int decode(const uint8_t *data, size_t n, int manage, int thumb, int chunked, sd_bitmap **out, int64_t *space,
                  int64_t *warnings, uint8_t **icc, size_t *icc_len)
{
    sd_decoder *d;
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_COLOR_MANAGE, manage));
    if (thumb)
        ASSERT_OK(sd_decoder_set(d, SD_DEC_MAX_PIXEL_SIZE, thumb));
    int rc = sd_decode_chunked(d, data, n, chunked == 0 ? 0 : (chunked == 1 ? 1 : -1), 77, 0, out);
    if (rc != SD_OK) {
        sd_decoder_free(d);
        return rc;
    }
    if (space)
        ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_COLOR_SPACE, space));
    if (warnings)
        ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_WARNINGS, warnings));
    if (icc) {
        const uint8_t *p;
        ASSERT_OK(sd_decoder_icc_profile(d, &p, icc_len));
        *icc = *icc_len ? malloc(*icc_len) : NULL;
        if (*icc_len)
            memcpy(*icc, p, *icc_len);
    }
    sd_decoder_free(d);
    return SD_OK;
}

/* Largest channel difference between `got` and lcms2's unoptimised float
 * transform of `stored` from `prof` to sRGB, for opaque pixels; *worst_alpha
 * gets the same over semi-transparent ones. Their colour is `straight`'s
 * (RGBA, the file's own values) when given; else it is recovered from the
 * premultiplied bytes, and only alpha >= 128 counts (fainter ones carry
 * too few bits to compare). */
static int worst_alpha;
static int worst_vs_lcms(const sd_bitmap *stored, const sd_bitmap *got, cmsHPROFILE prof, const uint8_t *straight,
                         int *compared)
{
    cmsHPROFILE srgb = cmsCreate_sRGBProfile();
    int gray = cmsGetColorSpace(prof) == cmsSigGrayData;
    cmsHTRANSFORM t = cmsCreateTransform(prof, gray ? TYPE_GRAY_DBL : TYPE_RGB_DBL, srgb, TYPE_RGB_DBL,
                                         INTENT_RELATIVE_COLORIMETRIC, cmsFLAGS_NOOPTIMIZE | cmsFLAGS_NOCACHE);
    int worst = 0;
    *compared = 0;
    uint32_t w = sd_bitmap_width(stored);
    for (uint32_t y = 0; y < sd_bitmap_height(stored); y++)
        for (uint32_t x = 0; x < w; x++) {
            uint32_t s, g;
            memcpy(&s, sd_bitmap_pixels(stored) + y * sd_bitmap_stride(stored) + x * 4, 4);
            memcpy(&g, sd_bitmap_pixels(got) + y * sd_bitmap_stride(got) + x * 4, 4);
            uint32_t a = s >> 24;
            const uint8_t *sp = straight ? straight + ((size_t)y * w + x) * 4 : NULL;
            if (a == 0 || (sp == NULL && a < 128))
                continue;
            double in[3], out[3];
            for (int c = 0; c < 3; c++) /* straight 0..1 */
                in[c] = sp ? sp[c] / 255.0 : fmin(1.0, ((s >> (16 - 8 * c)) & 255) / (double)a);
            cmsDoTransform(t, gray ? &in[2] : in, out, 1); /* gray: B = G = R */
            for (int c = 0; c < 3; c++) {
                double want = fmin(255, fmax(0, out[c] * 255)) * a / 255.0;
                int d = abs((int)((g >> (16 - 8 * c)) & 255) - (int)lround(want));
                if (a == 255)
                    worst = d > worst ? d : worst;
                else
                    worst_alpha = d > worst_alpha ? d : worst_alpha;
            }
            (*compared) += a == 255;
        }
    cmsDeleteTransform(t);
    cmsCloseProfile(srgb);
    return worst;
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

/* Every profile x JPEG, PNG (opaque and with alpha), WebP x whole, byte by
 * byte, random chunks, and a thumbnail. */
static int test_profiles_every_codec(void)
{
    for (int p = 0; p < P_COUNT; p++) {
        size_t icc_len;
        uint8_t *icc = profile(p, &icc_len);
        ASSERT_NOT_NULL(icc);
        cmsHPROFILE prof = cmsOpenProfileFromMem(icc, (cmsUInt32Number)icc_len);
        ASSERT_NOT_NULL(prof);
        for (int kind = 0; kind < 4; kind++) { /* jpeg, png, png+alpha, webp */
            int alpha = kind == 2, gray = p == P_GRAY;
            if (gray && kind == 3)
                continue; /* a gray ICC in an RGB WebP is not valid */
            sd_bitmap *pic = picture(96, 64, alpha, gray);
            /* with alpha: a PNG of straight colours made here, the reference's too */
            uint8_t *straight = alpha ? picture_rgba(96, 64, 1, gray) : NULL;
            uint8_t *plain, *tagged;
            size_t plain_n, tagged_n;
            if (alpha) {
                plain = png_rgba(straight, 96, 64, NULL, 0, &plain_n);
                tagged = png_rgba(straight, 96, 64, icc, icc_len, &tagged_n);
            } else if (kind == 0) {
                ASSERT_OK(enc_jpeg(pic, 95, 0, &plain, &plain_n));
                tagged = jpeg_with_icc(plain, plain_n, icc, icc_len, 0, &tagged_n);
            } else if (kind < 3) {
                ASSERT_OK(enc_png(pic, 6, &plain, &plain_n));
                if (gray) { /* a gray profile needs a gray PNG: re-encode as such via the stored values */
                    sd_free(plain);
                    ASSERT_OK(enc_png(pic, 6, &plain, &plain_n));
                }
                tagged = png_with_icc(plain, plain_n, icc, icc_len, &tagged_n);
            } else {
                ASSERT_OK(enc_webp(pic, 100, 1, &plain, &plain_n));
                tagged = webp_with_icc(plain, plain_n, icc, icc_len, 96, 64, alpha, &tagged_n);
            }
            /* stored pixels and the exact profile, with management off */
            sd_bitmap *stored = NULL, *untagged = NULL;
            uint8_t *got_icc = NULL;
            size_t got_len = 0;
            int64_t space = -1;
            ASSERT_OK(decode(tagged, tagged_n, 0, 0, 0, &stored, &space, NULL, &got_icc, &got_len));
            ASSERT_OK(decode(plain, plain_n, 1, 0, 0, &untagged, NULL, NULL, NULL, NULL));
            int icc_kept = got_len == icc_len && memcmp(got_icc, icc, icc_len) == 0;
            /* libpng drops a gray profile in an RGB PNG as invalid: then no profile, sRGB */
            int png_gray_dropped = gray && kind != 0 && got_len == 0;
            if (!png_gray_dropped) {
                ASSERT(icc_kept);
                ASSERT_EQ(space, p == P_SRGB ? SD_COLOR_ICC : SD_COLOR_ICC);
            }
            ASSERT(same_pixels(stored, untagged)); /* management off: the stored values */
            for (int chunked = 0; chunked < 3; chunked++) {
                sd_bitmap *got = NULL;
                int64_t warnings = -1;
                ASSERT_OK(decode(tagged, tagged_n, 1, 0, chunked, &got, &space, &warnings, NULL, NULL));
                if (p == P_SRGB || png_gray_dropped) {
                    ASSERT(same_pixels(got, untagged)); /* sRGB by content: left exactly alone */
                } else {
                    if (!sd_under_valgrind()) { /* the reference per pixel: the release and ASan runs */
                        worst_alpha = 0;
                        int n = 0, worst = worst_vs_lcms(stored, got, prof, straight, &n);
                        if (worst > 2 || worst_alpha > 2)
                            fprintf(stderr, "  %s kind %d chunked %d: off by %d (%d where translucent)\n", pname[p],
                                    kind, chunked, worst, worst_alpha);
                        ASSERT(worst <= 2 && worst_alpha <= 2 && n > (alpha ? 0 : 96 * 64 / 2));
                    }
                    ASSERT(!same_pixels(got, untagged)); /* it did convert */
                }
                /* libpng refuses a gray profile in an RGB PNG with a warning */
                ASSERT(png_gray_dropped ? warnings >= 1 : warnings == 0);
                sd_bitmap_free(got);
            }
            /* a thumbnail converts its own pixels: the stored thumbnail, transformed */
            sd_bitmap *st = NULL, *tt = NULL;
            ASSERT_OK(decode(tagged, tagged_n, 0, 40, 0, &st, NULL, NULL, NULL, NULL));
            ASSERT_OK(decode(tagged, tagged_n, 1, 40, 0, &tt, NULL, NULL, NULL, NULL));
            if (p != P_SRGB && !png_gray_dropped && !sd_under_valgrind()) {
                worst_alpha = 0;
                int n = 0, worst = worst_vs_lcms(st, tt, prof, NULL, &n);
                ASSERT(worst <= 2 && worst_alpha <= 2 && (n > 0 || alpha));
            }
            sd_bitmap_free(st);
            sd_bitmap_free(tt);
            free(got_icc);
            sd_bitmap_free(stored);
            sd_bitmap_free(untagged);
            free(tagged);
            if (alpha)
                free(plain); /* ours */
            else
                sd_free(plain);
            free(straight);
            sd_bitmap_free(pic);
        }
        cmsCloseProfile(prof);
        free(icc);
    }
    return 0;
}

/* transicc, lcms2's own calculator, agrees with us on Adobe RGB. */
static int test_transicc_agrees(void)
{
    if (access("/usr/bin/transicc", X_OK) != 0 || access("/usr/share/color/icc/colord/AdobeRGB1998.icc", R_OK) != 0)
        return 77;
    size_t icc_len, plain_n, tagged_n;
    uint8_t *icc = profile(P_ADOBE, &icc_len), *plain;
    sd_bitmap *pic = picture(16, 16, 0, 0), *stored = NULL, *got = NULL;
    ASSERT_OK(enc_png(pic, 6, &plain, &plain_n));
    uint8_t *tagged = png_with_icc(plain, plain_n, icc, icc_len, &tagged_n);
    ASSERT_OK(decode(tagged, tagged_n, 0, 0, 0, &stored, NULL, NULL, NULL, NULL));
    ASSERT_OK(decode(tagged, tagged_n, 1, 0, 0, &got, NULL, NULL, NULL, NULL));
    char in_path[] = "/tmp/sdcolorXXXXXX";
    int fd = mkstemp(in_path);
    ASSERT(fd >= 0);
    FILE *f = fdopen(fd, "w");
    for (uint32_t i = 0; i < 256; i += 5) {
        uint32_t s;
        memcpy(&s, sd_bitmap_pixels(stored) + (i / 16) * sd_bitmap_stride(stored) + (i % 16) * 4, 4);
        fprintf(f, "%u %u %u\n", (s >> 16) & 255, (s >> 8) & 255, s & 255);
    }
    fclose(f);
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "transicc -i /usr/share/color/icc/colord/AdobeRGB1998.icc -o '*sRGB' -t 1 -n < %s 2>/dev/null", in_path);
    FILE *pp = popen(cmd, "r");
    ASSERT_NOT_NULL(pp);
    char line[256];
    int worst = 0, rows = 0;
    uint32_t i = 0;
    while (fgets(line, sizeof line, pp)) {
        double r, g, b;
        if (sscanf(line, "%lf %lf %lf", &r, &g, &b) != 3)
            continue; /* the banner */
        uint32_t o;
        memcpy(&o, sd_bitmap_pixels(got) + (i / 16) * sd_bitmap_stride(got) + (i % 16) * 4, 4);
        double want[3] = {r, g, b};
        for (int c = 0; c < 3; c++) {
            int d = abs((int)((o >> (16 - 8 * c)) & 255) - (int)lround(fmin(255, fmax(0, want[c]))));
            worst = d > worst ? d : worst;
        }
        i += 5;
        rows++;
    }
    pclose(pp);
    unlink(in_path);
    printf("  transicc, %d colours: worst %d\n", rows, worst);
    ASSERT(rows == 52 && worst <= 2);
    sd_bitmap_free(stored);
    sd_bitmap_free(got);
    free(tagged);
    sd_free(plain);
    sd_bitmap_free(pic);
    free(icc);
    return 0;
}

/* PNG's colour chunks, in the spec's precedence. */
static int png_chunks(int anim);
static int test_png_chunks(void)
{
    for (int anim = 0; anim < 2; anim++) /* a still PNG, then an APNG (its own chunk walker) */
        if (png_chunks(anim) != 0)
            return 1;
    return 0;
}

static int png_chunks(int anim)
{
    sd_bitmap *pic = picture(64, 48, 0, 0), *untagged = NULL;
    uint8_t *plain;
    size_t plain_n;
    if (anim) {
        sd_encoder *e;
        ASSERT_OK(sd_encoder_new(SD_FORMAT_PNG, &e));
        ASSERT_OK(sd_encoder_add_frame(e, pic, 100));
        ASSERT_OK(sd_encoder_add_frame(e, pic, 100));
        ASSERT_OK(sd_encoder_finish(e, &plain, &plain_n));
        sd_encoder_free(e);
    } else {
        ASSERT_OK(enc_png(pic, 6, &plain, &plain_n));
    }
    ASSERT_OK(decode(plain, plain_n, 1, 0, 0, &untagged, NULL, NULL, NULL, NULL));
    uint8_t gama_linear[4], gama_22[4], srgb_chunk[1] = {0};
    put32(gama_linear, 100000); /* gAMA 1.0: linear data */
    put32(gama_22, 45455);
    /* gAMA 1.0 alone: converted, as a linear-light BT.709 image */
    size_t n1, n2, n3;
    uint8_t *lin = png_with_chunk(plain, plain_n, "gAMA", gama_linear, 4, &n1);
    sd_bitmap *got = NULL, *stored = NULL;
    int64_t space;
    ASSERT_OK(decode(lin, n1, 1, 0, 0, &got, &space, NULL, NULL, NULL));
    ASSERT_OK(decode(lin, n1, 0, 0, 0, &stored, NULL, NULL, NULL, NULL));
    ASSERT_EQ(space, SD_COLOR_CHRM_GAMA);
    static const double bt709[6] = {0.64, 0.33, 0.30, 0.60, 0.15, 0.06};
    cmsHPROFILE linear = rgb(0.3127, 0.3290, bt709, cmsBuildGamma(NULL, 1.0));
    int n = 0, worst = worst_vs_lcms(stored, got, linear, NULL, &n);
    ASSERT(worst <= 2 && n > 0);
    ASSERT(!same_pixels(got, untagged));
    cmsCloseProfile(linear);
    sd_bitmap_free(got);
    sd_bitmap_free(stored);
    /* sRGB chunk + gAMA 1.0: sRGB wins, nothing changes */
    uint8_t *both = png_with_chunk(lin, n1, "sRGB", srgb_chunk, 1, &n2);
    ASSERT_OK(decode(both, n2, 1, 0, 0, &got, &space, NULL, NULL, NULL));
    ASSERT_EQ(space, SD_COLOR_SRGB);
    ASSERT(same_pixels(got, untagged));
    sd_bitmap_free(got);
    /* iCCP (P3) beats gAMA 1.0 */
    size_t icc_len;
    uint8_t *icc = profile(P_P3, &icc_len);
    uint8_t *tagged = png_with_icc(lin, n1, icc, icc_len, &n3);
    ASSERT_OK(decode(tagged, n3, 1, 0, 0, &got, &space, NULL, NULL, NULL));
    ASSERT_EQ(space, SD_COLOR_ICC);
    sd_bitmap_free(got);
    /* gAMA 1/2.2 alone is close to sRGB but not it: converted, a little */
    uint8_t *g22 = png_with_chunk(plain, plain_n, "gAMA", gama_22, 4, &n1);
    ASSERT_OK(decode(g22, n1, 1, 0, 0, &got, &space, NULL, NULL, NULL));
    ASSERT_EQ(space, SD_COLOR_CHRM_GAMA);
    sd_bitmap_free(got);
    free(g22);
    free(tagged);
    free(icc);
    free(both);
    free(lin);
    sd_free(plain);
    sd_bitmap_free(untagged);
    sd_bitmap_free(pic);
    return 0;
}

/* Bad profiles: a warning, sRGB pixels, never a failure; JPEG segments in
 * any order are joined; a profile over 4 MiB is ignored. */
static int test_bad_profiles(void)
{
    sd_bitmap *pic = picture(48, 32, 0, 0), *untagged = NULL, *got = NULL;
    uint8_t *jpg;
    size_t jn, icc_len;
    ASSERT_OK(enc_jpeg(pic, 90, 0, &jpg, &jn));
    ASSERT_OK(decode(jpg, jn, 1, 0, 0, &untagged, NULL, NULL, NULL, NULL));
    uint8_t *icc = profile(P_P3, &icc_len);
    uint8_t garbage[600];
    for (size_t i = 0; i < sizeof garbage; i++)
        garbage[i] = (uint8_t)(i * 37 + 11);
    struct { const uint8_t *p; size_t n; } bad[] = {{icc, 300}, {garbage, sizeof garbage}, {icc, 100}};
    for (size_t k = 0; k < 3; k++) {
        size_t tn;
        uint8_t *t = jpeg_with_icc(jpg, jn, bad[k].p, bad[k].n, 0, &tn);
        int64_t warnings = 0;
        for (int chunked = 0; chunked < 3; chunked++) {
            ASSERT_OK(decode(t, tn, 1, 0, chunked, &got, NULL, &warnings, NULL, NULL));
            ASSERT(same_pixels(got, untagged));
            ASSERT(warnings >= 1);
            sd_bitmap_free(got);
        }
        free(t);
    }
    /* the same P3 profile in two segments, stored in reverse order: joined */
    uint8_t *big = malloc(70000);
    memcpy(big, icc, icc_len);
    memset(big + icc_len, 0, 70000 - icc_len); /* padding after the tags: still a valid profile */
    put32(big, 70000); /* its declared size */
    size_t tn;
    uint8_t *t = jpeg_with_icc(jpg, jn, big, 70000, 1, &tn), *got_icc = NULL;
    size_t got_len = 0;
    int64_t space;
    ASSERT_OK(decode(t, tn, 0, 0, 0, &got, &space, NULL, &got_icc, &got_len));
    ASSERT_EQ(got_len, 70000);
    ASSERT(memcmp(got_icc, big, 70000) == 0);
    sd_bitmap_free(got);
    free(got_icc);
    free(t);
    /* over 4 MiB: ignored with a warning */
    size_t huge_n = (4u << 20) + 1000;
    uint8_t *huge = calloc(1, huge_n);
    memcpy(huge, icc, icc_len);
    put32(huge, (uint32_t)huge_n);
    t = jpeg_with_icc(jpg, jn, huge, huge_n, 0, &tn);
    int64_t warnings = 0;
    ASSERT_OK(decode(t, tn, 1, 0, 0, &got, &space, &warnings, &got_icc, &got_len));
    ASSERT(same_pixels(got, untagged) && warnings >= 1 && got_len == 0 && space == SD_COLOR_SRGB);
    sd_bitmap_free(got);
    free(t);
    free(huge);
    free(big);
    free(icc);
    sd_free(jpg);
    sd_bitmap_free(untagged);
    sd_bitmap_free(pic);
    return 0;
}

/* The matrix/TRC fast path: random opaque colours (an odd width, so the
 * vector loop's tail runs) through every RGB profile; the SSE2 and the
 * portable loop write the same bytes, within 1 of lcms2's float
 * transform. */
static int test_fast_path(void)
{
    static const int rgb_profiles[] = {P_P3, P_P3_V4, P_ADOBE, P_PROPHOTO, P_REC2020};
    uint32_t w = 257, h = 129, seed = 42;
    sd_bitmap *pic;
    ASSERT_OK(sd_bitmap_new(w, h, &pic));
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            seed = seed * 1664525u + 1013904223u;
            uint32_t px = 0xFF000000u | (seed >> 8);
            memcpy(sd_bitmap_pixels(pic) + y * sd_bitmap_stride(pic) + x * 4, &px, 4);
        }
    uint8_t *plain;
    size_t plain_n;
    ASSERT_OK(enc_png(pic, 1, &plain, &plain_n));
    for (size_t k = 0; k < sizeof rgb_profiles / sizeof rgb_profiles[0]; k++) {
        size_t icc_len, tagged_n;
        uint8_t *icc = profile(rgb_profiles[k], &icc_len);
        uint8_t *tagged = png_with_icc(plain, plain_n, icc, icc_len, &tagged_n);
        cmsHPROFILE prof = cmsOpenProfileFromMem(icc, (cmsUInt32Number)icc_len);
        sd_bitmap *vec = NULL, *sca = NULL, *sse = NULL;
        ASSERT_OK(decode(tagged, tagged_n, 1, 0, 0, &vec, NULL, NULL, NULL, NULL)); /* AVX2 where the CPU has it */
        int was = sd__color_force_scalar(1);
        ASSERT_OK(decode(tagged, tagged_n, 1, 0, 0, &sca, NULL, NULL, NULL, NULL));
        sd__color_force_scalar(2);
        ASSERT_OK(decode(tagged, tagged_n, 1, 0, 0, &sse, NULL, NULL, NULL, NULL));
        sd__color_force_scalar(was);
        int n = 0, worst = worst_vs_lcms(pic, vec, prof, NULL, &n);
        printf("  %s: worst %d over %d pixels\n", pname[rgb_profiles[k]], worst, n);
        ASSERT(same_pixels(vec, sca) && same_pixels(sse, sca));
        sd_bitmap_free(sse);
        ASSERT(worst <= 1 && n == (int)(w * h));
        sd_bitmap_free(vec);
        sd_bitmap_free(sca);
        cmsCloseProfile(prof);
        free(tagged);
        free(icc);
    }
    sd_free(plain);
    sd_bitmap_free(pic);
    return 0;
}

/* Encoding keeps colour honest: pixels kept in their source colours encode
 * with their profile (JPEG, PNG, APNG, WebP, animated WebP, AVIF) — the
 * decoder finds the same bytes and converts the same as from the
 * original — and GIF writes none; converted pixels encode untagged. */
static int test_encode_keeps_profile(void)
{
    static const struct { sd_format f; int lossless, frames; const char *name; } kinds[] = {
        {SD_FORMAT_JPEG, 0, 1, "JPEG"}, {SD_FORMAT_PNG, 1, 1, "PNG"},   {SD_FORMAT_PNG, 1, 2, "APNG"},
        {SD_FORMAT_WEBP, 1, 1, "WebP"}, {SD_FORMAT_WEBP, 1, 2, "animated WebP"},
        {SD_FORMAT_AVIF, 1, 1, "AVIF"}, {SD_FORMAT_GIF, 1, 1, "GIF"},
        {SD_FORMAT_JXL, 1, 1, "JPEG XL"}, {SD_FORMAT_JXL, 0, 1, "JPEG XL lossy"}, {SD_FORMAT_JXL, 1, 2, "animated JPEG XL"},
        {SD_FORMAT_HEIC, 0, 1, "HEIC"},
    };
    size_t icc_len;
    uint8_t *icc = profile(P_ADOBE, &icc_len);
    cmsHPROFILE prof = cmsOpenProfileFromMem(icc, (cmsUInt32Number)icc_len);
    sd_bitmap *pic = picture(64, 48, 0, 0);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        if (!(sd_format_capabilities(kinds[k].f) & SD_CAP_ENCODE))
            continue;
        if (kinds[k].f == SD_FORMAT_HEIC && getenv("SD_TEST_UNDER_VALGRIND") != NULL)
            continue; /* x265's and libde265's assembly confuse valgrind: HEVC is checked under ASan */
        sd_encoder *e;
        ASSERT_OK(sd_encoder_new(kinds[k].f, &e));
        ASSERT_OK(sd_encoder_set(e, SD_ENC_LOSSLESS, kinds[k].lossless));
        ASSERT_OK(sd_encoder_set(e, SD_ENC_QUALITY, 95));
        if (kinds[k].f == SD_FORMAT_AVIF && sd_under_valgrind()) /* libaom's slowest part, at a twentieth of the speed */
            ASSERT_OK(sd_encoder_set(e, SD_ENC_SPEED, 10));
        for (int i = 0; i < kinds[k].frames; i++)
            ASSERT_OK(sd_encoder_add_frame(e, pic, 100));
        uint8_t *plain, *tagged;
        size_t plain_n, tagged_n;
        ASSERT_OK(sd_encoder_finish(e, &plain, &plain_n));
        ASSERT_OK(sd_encoder_set_icc_profile(e, icc, icc_len));
        ASSERT_OK(sd_encoder_finish(e, &tagged, &tagged_n));
        sd_encoder_free(e);
        uint8_t *got_icc = NULL;
        size_t got_len = 0;
        sd_bitmap *stored = NULL, *managed = NULL, *plain_px = NULL;
        int64_t space = -1;
        ASSERT_OK(decode(tagged, tagged_n, 0, 0, 0, &stored, &space, NULL, &got_icc, &got_len));
        ASSERT_OK(decode(tagged, tagged_n, 1, 0, 0, &managed, NULL, NULL, NULL, NULL));
        ASSERT_OK(decode(plain, plain_n, 0, 0, 0, &plain_px, NULL, NULL, NULL, NULL));
        /* the profile changes no stored pixel — but lossy JPEG XL codes in XYB
         * from the profile's colours, so its stored pixels are its own */
        int xyb = kinds[k].f == SD_FORMAT_JXL && !kinds[k].lossless;
        ASSERT(xyb || same_pixels(stored, plain_px));
        if (kinds[k].f == SD_FORMAT_GIF) {
            ASSERT(tagged_n == plain_n && memcmp(tagged, plain, plain_n) == 0 && got_len == 0);
        } else if (xyb) {
            /* libjxl hands out the pixels with a profile of its own for them
             * (not the embedded bytes); what counts is the colour: managed, the
             * picture comes out as lcms2 puts the source through the profile */
            sd_bitmap *want = NULL;
            ASSERT_OK(sd_bitmap_new(sd_bitmap_width(pic), sd_bitmap_height(pic), &want));
            cmsHPROFILE srgb = cmsCreate_sRGBProfile();
            /* the picture is opaque (premultiplied = straight), B,G,R,A in memory here */
            cmsHTRANSFORM t = cmsCreateTransform(prof, TYPE_BGRA_8, srgb, TYPE_BGRA_8, INTENT_RELATIVE_COLORIMETRIC,
                                                 cmsFLAGS_NOOPTIMIZE | cmsFLAGS_NOCACHE | cmsFLAGS_COPY_ALPHA);
            for (uint32_t y = 0; y < sd_bitmap_height(pic); y++)
                cmsDoTransform(t, sd_bitmap_pixels(pic) + y * sd_bitmap_stride(pic),
                               sd_bitmap_pixels(want) + y * sd_bitmap_stride(want), sd_bitmap_width(pic));
            cmsDeleteTransform(t);
            cmsCloseProfile(srgb);
            double mean = sd_bitmap_mean_diff(managed, want), unmanaged = sd_bitmap_mean_diff(stored, want);
            printf("  %s: managed within %.2f on average of the source converted (unmanaged %.2f; libjxl's "
                   "%zu-byte profile)\n", kinds[k].name, mean, unmanaged, got_len);
            ASSERT(space == SD_COLOR_ICC && mean < 2.0 && unmanaged > mean + 2);
            sd_bitmap_free(want);
        } else {
            ASSERT_EQ(space, SD_COLOR_ICC);
            ASSERT(got_len == icc_len && memcmp(got_icc, icc, icc_len) == 0);
            int n = 0, worst = worst_vs_lcms(stored, managed, prof, NULL, &n);
            printf("  %s: profile kept (%zu bytes), converted within %d\n", kinds[k].name, got_len, worst);
            ASSERT(worst <= 2 && n > 0 && !same_pixels(stored, managed));
        }
        free(got_icc);
        sd_bitmap_free(stored);
        sd_bitmap_free(managed);
        sd_bitmap_free(plain_px);
        sd_free(plain);
        sd_free(tagged);
    }
    /* a JPEG profile larger than one APP2 segment is split and put back together */
    uint8_t *big = malloc(200000);
    memcpy(big, icc, icc_len);
    memset(big + icc_len, 0, 200000 - icc_len);
    put32(big, 200000); /* a valid header; lcms2 ignores bytes past the tags */
    sd_encoder *e;
    ASSERT_OK(sd_encoder_new(SD_FORMAT_JPEG, &e));
    ASSERT_OK(sd_encoder_add_frame(e, pic, 0));
    ASSERT_OK(sd_encoder_set_icc_profile(e, big, 200000));
    uint8_t *jpg, *got_icc = NULL;
    size_t jn, got_len = 0;
    ASSERT_OK(sd_encoder_finish(e, &jpg, &jn));
    sd_bitmap *b = NULL;
    ASSERT_OK(decode(jpg, jn, 0, 0, 0, &b, NULL, NULL, &got_icc, &got_len));
    ASSERT(got_len == 200000 && memcmp(got_icc, big, 200000) == 0);
    /* not a profile, too large, NULL with a length: refused, the old one kept */
    uint8_t junk[200] = {0};
    ASSERT_EQ(sd_encoder_set_icc_profile(e, junk, sizeof junk), SD_EINVAL);
    ASSERT_EQ(sd_encoder_set_icc_profile(e, NULL, 10), SD_EINVAL);
    ASSERT_EQ(sd_encoder_set_icc_profile(e, big, (size_t)5 << 20), SD_EINVAL);
    ASSERT_EQ(sd_encoder_set_icc_profile(NULL, icc, icc_len), SD_EINVAL);
    ASSERT_OK(sd_encoder_set_icc_profile(e, NULL, 0)); /* removed */
    uint8_t *again;
    size_t an;
    ASSERT_OK(sd_encoder_finish(e, &again, &an));
    free(got_icc);
    got_icc = NULL;
    sd_bitmap_free(b);
    ASSERT_OK(decode(again, an, 0, 0, 0, &b, NULL, NULL, &got_icc, &got_len));
    ASSERT_EQ(got_len, 0);
    sd_encoder_free(e);
    sd_bitmap_free(b);
    sd_free(again);
    sd_free(jpg);
    free(got_icc);
    free(big);
    sd_bitmap_free(pic);
    cmsCloseProfile(prof);
    free(icc);
    return 0;
}

/* ---- 16-bit sources ---- */

/* A PNG of `raw` (h rows of `row_bytes`, filter 0 added here), bit depth
 * `depth`, colour type `type`, with `icc` (or none). */
static uint8_t *png_raw(const uint8_t *raw_rows, size_t row_bytes, uint32_t w, uint32_t h, int depth, int type,
                        const uint8_t *icc, size_t icc_len, size_t *out_len)
{
    size_t raw_len = (size_t)h * (1 + row_bytes);
    uint8_t *raw = malloc(raw_len);
    for (uint32_t y = 0; y < h; y++) {
        raw[(size_t)y * (1 + row_bytes)] = 0;
        memcpy(raw + (size_t)y * (1 + row_bytes) + 1, raw_rows + (size_t)y * row_bytes, row_bytes);
    }
    uLongf zn = compressBound((uLong)raw_len);
    uint8_t *z = malloc(zn);
    compress2(z, &zn, raw, (uLong)raw_len, 6);
    uint8_t *o = malloc(8 + 25 + 12 + zn + 12), *w8 = o;
    memcpy(w8, "\x89PNG\r\n\x1a\n", 8), w8 += 8;
    uint8_t ihdr[13];
    put32(ihdr, w), put32(ihdr + 4, h);
    ihdr[8] = (uint8_t)depth, ihdr[9] = (uint8_t)type, ihdr[10] = ihdr[11] = ihdr[12] = 0;
    const struct { const char *t; const uint8_t *d; size_t n; } ch[3] = {{"IHDR", ihdr, 13}, {"IDAT", z, zn}, {"IEND", NULL, 0}};
    for (int k = 0; k < 3; k++) {
        put32(w8, (uint32_t)ch[k].n), memcpy(w8 + 4, ch[k].t, 4);
        if (ch[k].n)
            memcpy(w8 + 8, ch[k].d, ch[k].n);
        put32(w8 + 8 + ch[k].n, (uint32_t)crc32(0, w8 + 4, (uInt)(4 + ch[k].n)));
        w8 += 12 + ch[k].n;
    }
    size_t n = (size_t)(w8 - o);
    uint8_t *tagged = o;
    *out_len = n;
    if (icc != NULL) {
        tagged = png_with_icc(o, n, icc, icc_len, out_len);
        free(o);
    }
    free(z);
    free(raw);
    return tagged;
}

/* An 8-bit RGBA PNG of straight `rgba` (w*h*4), with `icc` (or none). */
static uint8_t *png_rgba(const uint8_t *rgba, uint32_t w, uint32_t h, const uint8_t *icc, size_t icc_len,
                         size_t *out_len)
{
    return png_raw(rgba, (size_t)w * 4, w, h, 8, 6, icc, icc_len, out_len);
}

/* A 16-bit RGB PNG of `px` (w*h*3 values), with `icc`. */
static uint8_t *png16(const uint16_t *px, uint32_t w, uint32_t h, const uint8_t *icc, size_t icc_len, size_t *out_len)
{
    uint8_t *be = malloc((size_t)w * h * 6);
    for (size_t i = 0; i < (size_t)w * h * 3; i++)
        be[i * 2] = (uint8_t)(px[i] >> 8), be[i * 2 + 1] = (uint8_t)px[i];
    uint8_t *png = png_raw(be, (size_t)w * 6, w, h, 16, 2, icc, icc_len, out_len);
    free(be);
    return png;
}

/* A 16-bit PNG tagged with each RGB profile: within 3 of lcms2's float
 * transform of the 16-bit values (not of the 8-bit values they reduce to). */
static int test_sixteen_bit(void)
{
    static const int rgb_profiles[] = {P_P3, P_ADOBE, P_PROPHOTO, P_REC2020};
    const uint32_t w = 128, h = 96;
    uint16_t *px = malloc((size_t)w * h * 3 * sizeof *px);
    for (size_t i = 0; i < (size_t)w * h * 3; i++) { /* ramps, then smooth saturated waves */
        size_t x = (i / 3) % w, y = i / 3 / w, c = i % 3;
        px[i] = (uint16_t)(y < 8 ? (i % (w * 3)) * 65535 / (w * 3 - 1)
                                 : (size_t)lround(32767.5 + 32767.5 * sin((double)x * 0.07 + (double)c * 2.1 + (double)y * 0.05)));
    }
    for (size_t k = 0; k < sizeof rgb_profiles / sizeof rgb_profiles[0]; k++) {
        size_t icc_len, n;
        uint8_t *icc = profile(rgb_profiles[k], &icc_len);
        uint8_t *png = png16(px, w, h, icc, icc_len, &n);
        cmsHPROFILE prof = cmsOpenProfileFromMem(icc, (cmsUInt32Number)icc_len), srgb = cmsCreate_sRGBProfile();
        cmsHTRANSFORM t = cmsCreateTransform(prof, TYPE_RGB_DBL, srgb, TYPE_RGB_DBL, INTENT_RELATIVE_COLORIMETRIC,
                                             cmsFLAGS_NOOPTIMIZE | cmsFLAGS_NOCACHE);
        sd_bitmap *got = NULL;
        ASSERT_OK(decode(png, n, 1, 0, 0, &got, NULL, NULL, NULL, NULL));
        int worst = 0;
        for (uint32_t y = 0; y < h; y++)
            for (uint32_t x = 0; x < w; x++) {
                double in[3], out[3];
                for (int c = 0; c < 3; c++)
                    in[c] = px[((size_t)y * w + x) * 3 + c] / 65535.0;
                cmsDoTransform(t, in, out, 1);
                uint32_t g;
                memcpy(&g, sd_bitmap_pixels(got) + y * sd_bitmap_stride(got) + x * 4, 4);
                for (int c = 0; c < 3; c++) {
                    int d = abs((int)((g >> (16 - 8 * c)) & 255) - (int)lround(fmin(255, fmax(0, out[c] * 255))));
                    worst = d > worst ? d : worst;
                }
            }
        /* a thumbnail: converted once, from the 16-bit rows, then reduced —
         * as the full decode reduced by the same filter (not converted twice) */
        sd_bitmap *thumb = NULL, *want = NULL;
        ASSERT_OK(decode(png, n, 1, 32, 0, &thumb, NULL, NULL, NULL, NULL));
        ASSERT_OK(sd_bitmap_resample(got, sd_bitmap_width(thumb), sd_bitmap_height(thumb), SD_FILTER_LANCZOS3, 0, &want));
        double sum = 0;
        for (uint32_t y = 0; y < sd_bitmap_height(want); y++)
            for (uint32_t x = 0; x < sd_bitmap_width(want); x++)
                for (int c = 0; c < 3; c++)
                    sum += abs((int)sd_bitmap_pixels(thumb)[y * sd_bitmap_stride(thumb) + x * 4 + c] -
                               (int)sd_bitmap_pixels(want)[y * sd_bitmap_stride(want) + x * 4 + c]);
        double mean = sum / (3.0 * sd_bitmap_width(want) * sd_bitmap_height(want));
        printf("  16-bit %s: worst %d; thumbnail vs the converted image reduced: mean %.2f\n", pname[rgb_profiles[k]],
               worst, mean);
        ASSERT(worst <= 3 && mean < 0.6); /* converted twice: 1.35 */
        sd_bitmap_free(thumb);
        sd_bitmap_free(want);
        sd_bitmap_free(got);
        cmsDeleteTransform(t);
        cmsCloseProfile(prof);
        cmsCloseProfile(srgb);
        free(png);
        free(icc);
    }
    free(px);
    return 0;
}

/* ---- CMYK ---- */

/* A press-like CMYK output profile made here: AToB0 a 9-point CLUT from
 * ink to Lab (v4, mAB), inks with dot gain and a K that is not simply
 * subtracted, so the naive inversion is far off; `xyz`: to XYZ in a v2
 * lut16 (mft2) instead, as PostScript's CMYK profile has it. */
static cmsHTRANSFORM srgb_to_pcs;

/* A CLUT node: `rgb` through `t` into XYZ or Lab, 16-bit encoded. */
static cmsInt32Number to_pcs(cmsHTRANSFORM t, int xyz, const double rgb[3], cmsUInt16Number out[3])
{
    if (xyz) {
        cmsCIEXYZ v;
        cmsDoTransform(t, rgb, &v, 1);
        cmsFloat2XYZEncoded(out, &v);
    } else {
        cmsCIELab lab;
        cmsDoTransform(t, rgb, &lab, 1);
        cmsFloat2LabEncoded(out, &lab);
    }
    return TRUE;
}

static cmsInt32Number cmyk_sampler(const cmsUInt16Number in[], cmsUInt16Number out[], void *cargo)
{
    int xyz = *(const int *)cargo;
    double ink[4], rgb[3];
    for (int i = 0; i < 4; i++)
        ink[i] = pow(in[i] / 65535.0, 0.8); /* dot gain */
    for (int i = 0; i < 3; i++)
        rgb[i] = (1 - ink[i] * 0.92) * (1 - ink[3] * 0.85) + 0.02 * ink[(i + 1) % 3];
    return to_pcs(srgb_to_pcs, xyz, rgb, out);
}

static uint8_t *cmyk_profile(int xyz, size_t *len)
{
    cmsHPROFILE srgb = cmsCreate_sRGBProfile(), pcs = xyz ? cmsCreateXYZProfile() : cmsCreateLab4Profile(NULL);
    srgb_to_pcs = cmsCreateTransform(srgb, TYPE_RGB_DBL, pcs, xyz ? TYPE_XYZ_DBL : TYPE_Lab_DBL,
                                     INTENT_RELATIVE_COLORIMETRIC, cmsFLAGS_NOOPTIMIZE);
    cmsHPROFILE p = cmsCreateProfilePlaceholder(NULL);
    cmsSetProfileVersion(p, xyz ? 2.1 : 4.3);
    cmsSetDeviceClass(p, cmsSigOutputClass);
    cmsSetColorSpace(p, cmsSigCmykData);
    cmsSetPCS(p, xyz ? cmsSigXYZData : cmsSigLabData);
    cmsPipeline *a2b = cmsPipelineAlloc(NULL, 4, 3);
    cmsStage *clut = cmsStageAllocCLut16bit(NULL, 9, 4, 3, NULL);
    cmsStageSampleCLut16bit(clut, cmyk_sampler, &xyz, 0);
    /* mAB's shape: A curves, CLUT, B curves (identity curves around it) */
    cmsPipelineInsertStage(a2b, cmsAT_END, cmsStageAllocToneCurves(NULL, 4, NULL));
    cmsPipelineInsertStage(a2b, cmsAT_END, clut);
    cmsPipelineInsertStage(a2b, cmsAT_END, cmsStageAllocToneCurves(NULL, 3, NULL));
    cmsWriteTag(p, cmsSigAToB0Tag, a2b);
    cmsWriteTag(p, cmsSigMediaWhitePointTag, cmsD50_XYZ());
    cmsPipelineFree(a2b);
    uint8_t *out = save(p, len);
    cmsCloseProfile(p);
    cmsDeleteTransform(srgb_to_pcs);
    cmsCloseProfile(pcs);
    cmsCloseProfile(srgb);
    return out;
}

/* A CMYK JPEG (libjpeg writes Adobe's APP14, so the values are stored
 * inverted, as Photoshop does) of `ink` (w*h*4, 0 = no ink), with `icc`. */
static uint8_t *cmyk_jpeg(const uint8_t *ink, uint32_t w, uint32_t h, const uint8_t *icc, size_t icc_len,
                          size_t *out_len)
{
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr err;
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    unsigned char *buf = NULL;
    unsigned long n = 0;
    jpeg_mem_dest(&c, &buf, &n);
    c.image_width = w, c.image_height = h, c.input_components = 4, c.in_color_space = JCS_CMYK;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 100, TRUE);
    jpeg_start_compress(&c, TRUE);
    if (icc)
        jpeg_write_icc_profile(&c, icc, (unsigned int)icc_len);
    uint8_t *row = malloc((size_t)w * 4);
    while (c.next_scanline < h) {
        for (uint32_t i = 0; i < w * 4; i++)
            row[i] = (uint8_t)(255 - ink[(size_t)c.next_scanline * w * 4 + i]);
        JSAMPROW r = row;
        jpeg_write_scanlines(&c, &r, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    free(row);
    *out_len = n;
    return buf;
}

/* The stored (inverted) CMYK bytes of a JPEG, as libjpeg reads them. */
static uint8_t *cmyk_stored(const uint8_t *jpg, size_t n, uint32_t w, uint32_t h)
{
    struct jpeg_decompress_struct c;
    struct jpeg_error_mgr err;
    c.err = jpeg_std_error(&err);
    jpeg_create_decompress(&c);
    jpeg_mem_src(&c, jpg, (unsigned long)n);
    jpeg_read_header(&c, TRUE);
    c.out_color_space = JCS_CMYK;
    c.dct_method = JDCT_ISLOW;
    jpeg_start_decompress(&c);
    uint8_t *px = malloc((size_t)w * h * 4);
    while (c.output_scanline < h) {
        JSAMPROW r = px + (size_t)c.output_scanline * w * 4;
        jpeg_read_scanlines(&c, &r, 1);
    }
    jpeg_finish_decompress(&c);
    jpeg_destroy_decompress(&c);
    return px;
}

/* Worst channel difference of `got` against lcms2's float transform `ref`
 * (CMYK doubles in percent of ink) of the stored inverted bytes; *far:
 * how many channels of `naive` are more than 10 off it. */
static int cmyk_worst(const sd_bitmap *got, const uint8_t *stored, uint32_t w, uint32_t h, cmsHTRANSFORM ref,
                      const sd_bitmap *naive, int *far)
{
    int worst = 0;
    *far = 0;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            double in[4], out[3];
            for (int k = 0; k < 4; k++)
                in[k] = (255 - stored[((size_t)y * w + x) * 4 + k]) * 100.0 / 255;
            cmsDoTransform(ref, in, out, 1);
            uint32_t g, nv;
            memcpy(&g, sd_bitmap_pixels(got) + y * sd_bitmap_stride(got) + x * 4, 4);
            memcpy(&nv, sd_bitmap_pixels(naive) + y * sd_bitmap_stride(naive) + x * 4, 4);
            for (int ch = 0; ch < 3; ch++) {
                int want = (int)lround(fmin(255, fmax(0, out[ch] * 255)));
                int d = abs((int)((g >> (16 - 8 * ch)) & 255) - want);
                worst = d > worst ? d : worst;
                *far += abs((int)((nv >> (16 - 8 * ch)) & 255) - want) > 10;
            }
        }
    return worst;
}

/* A CMYK JPEG with a CMYK profile: within 3 of lcms2's unoptimised float
 * transform of its stored values, whole, in pieces and as a thumbnail's
 * load size; without the profile the naive inversion stays; a profile of
 * the wrong colour space is a warning. */
static int test_cmyk(void)
{
    const uint32_t w = 96, h = 64;
    uint8_t *ink = malloc((size_t)w * h * 4);
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint8_t *p = ink + ((size_t)y * w + x) * 4;
            p[0] = (uint8_t)(x * 255 / (w - 1)), p[1] = (uint8_t)(y * 255 / (h - 1));
            p[2] = (uint8_t)((x + y) * 3), p[3] = (uint8_t)(y < h / 4 ? 0 : (x * 2) & 255);
        }
    size_t icc_len, tagged_n, plain_n, rgb_icc_len, wrong_n;
    uint8_t *icc = cmyk_profile(0, &icc_len);
    ASSERT_NOT_NULL(icc);
    uint8_t *tagged = cmyk_jpeg(ink, w, h, icc, icc_len, &tagged_n);
    uint8_t *plain = cmyk_jpeg(ink, w, h, NULL, 0, &plain_n);
    uint8_t *rgb_icc = profile(P_P3, &rgb_icc_len);
    uint8_t *wrong = cmyk_jpeg(ink, w, h, rgb_icc, rgb_icc_len, &wrong_n);
    uint8_t *stored = cmyk_stored(tagged, tagged_n, w, h);
    /* the reference: lcms2 unoptimised, float, from the stored inverted bytes */
    cmsHPROFILE prof = cmsOpenProfileFromMem(icc, (cmsUInt32Number)icc_len), srgb = cmsCreate_sRGBProfile();
    cmsHTRANSFORM ref = cmsCreateTransform(prof, TYPE_CMYK_DBL, srgb, TYPE_RGB_DBL, INTENT_RELATIVE_COLORIMETRIC,
                                           cmsFLAGS_NOOPTIMIZE | cmsFLAGS_NOCACHE);
    ASSERT_NOT_NULL(ref);
    sd_bitmap *naive = NULL;
    ASSERT_OK(decode(plain, plain_n, 1, 0, 0, &naive, NULL, NULL, NULL, NULL));
    for (int chunked = 0; chunked < 3; chunked++) {
        sd_bitmap *got = NULL;
        int64_t space = -1, warnings = -1;
        ASSERT_OK(decode(tagged, tagged_n, 1, 0, chunked, &got, &space, &warnings, NULL, NULL));
        ASSERT_EQ(space, SD_COLOR_CMYK);
        ASSERT_EQ(warnings, 0);
        int far = 0, worst = cmyk_worst(got, stored, w, h, ref, naive, &far);
        printf("  CMYK profile, chunked %d: worst %d (naive inversion off by > 10 in %d channels)\n", chunked, worst,
               far);
        ASSERT(worst <= 3);
        ASSERT(far > (int)(w * h) / 4); /* the profile mattered */
        sd_bitmap_free(got);
    }
    /* management off, or no profile: the naive inversion */
    sd_bitmap *off = NULL, *wrong_got = NULL, *thumb = NULL;
    ASSERT_OK(decode(tagged, tagged_n, 0, 0, 0, &off, NULL, NULL, NULL, NULL));
    ASSERT(same_pixels(off, naive));
    int64_t space = -1, warnings = -1;
    ASSERT_OK(decode(wrong, wrong_n, 1, 0, 0, &wrong_got, &space, &warnings, NULL, NULL));
    ASSERT(same_pixels(wrong_got, naive) && warnings == 1 && space == SD_COLOR_CMYK);
    /* a thumbnail converts at its load size, then resamples */
    ASSERT_OK(decode(tagged, tagged_n, 1, 24, 0, &thumb, NULL, NULL, NULL, NULL));
    ASSERT_EQ(sd_bitmap_width(thumb), 24);
    sd_bitmap_free(thumb);
    sd_bitmap_free(off);
    sd_bitmap_free(wrong_got);
    sd_bitmap_free(naive);
    cmsDeleteTransform(ref);
    cmsCloseProfile(prof);
    cmsCloseProfile(srgb);
    free(stored);
    free(wrong);
    free(rgb_icc);
    free(plain);
    free(tagged);
    free(icc);
    free(ink);
    return 0;
}

/* CMYK profiles at their gamut edges: ghostscript's default CMYK (v2, Lab,
 * mft2 9 points) and PostScript CMYK (v4, XYZ, mft2 5 points), and ours in
 * XYZ, on ink sweeps — each ink alone 0..100%, then two at a time (the
 * saturated secondaries), each with K 0 and 50% — and ramps: within 3 of
 * lcms2's float transform, whole and in pieces; a coarse table is not. */
static int test_cmyk_edges(void)
{
    static const char *const files[] = {"/usr/share/color/icc/ghostscript/default_cmyk.icc",
                                        "/usr/share/color/icc/ghostscript/ps_cmyk.icc", NULL};
    const uint32_t w = 256, h = 64;
    uint8_t *ink = malloc((size_t)w * h * 4);
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint8_t *p = ink + ((size_t)y * w + x) * 4;
            uint32_t band = y / 4; /* 16 bands of 4 rows */
            memset(p, 0, 4);
            if (band < 8) { /* C, M, Y, K alone; with K 50% */
                p[band % 4] = (uint8_t)x;
                if (band >= 4 && band % 4 != 3)
                    p[3] = 128;
            } else if (band < 14) { /* C+M, M+Y, C+Y (blue, red, green); with K 50% */
                p[(band - 8) % 3] = (uint8_t)x, p[(band - 8 + 1) % 3] = 255;
                if (band >= 11)
                    p[3] = 128;
            } else { /* ramps of everything */
                p[0] = (uint8_t)x, p[1] = (uint8_t)(y * 4), p[2] = (uint8_t)((x + y) * 3), p[3] = (uint8_t)(x / 2);
            }
        }
    for (int k = 0; k < 3; k++) {
        if (sd_under_valgrind() && k != 1)
            continue; /* one table's build is what memcheck looks at: PostScript's */
        size_t icc_len = 0, tagged_n, plain_n;
        uint8_t *icc = files[k] ? read_all(files[k], &icc_len) : cmyk_profile(1, &icc_len);
        if (icc == NULL)
            fprintf(stderr, "  %s missing: `make deps-test` installs libgs-common\n", files[k]);
        ASSERT_NOT_NULL(icc);
        uint8_t *tagged = cmyk_jpeg(ink, w, h, icc, icc_len, &tagged_n), *plain = cmyk_jpeg(ink, w, h, NULL, 0, &plain_n);
        uint8_t *stored = cmyk_stored(tagged, tagged_n, w, h);
        cmsHPROFILE prof = cmsOpenProfileFromMem(icc, (cmsUInt32Number)icc_len), srgb = cmsCreate_sRGBProfile();
        ASSERT(prof != NULL && cmsGetColorSpace(prof) == cmsSigCmykData);
        cmsHTRANSFORM ref = cmsCreateTransform(prof, TYPE_CMYK_DBL, srgb, TYPE_RGB_DBL, INTENT_RELATIVE_COLORIMETRIC,
                                               cmsFLAGS_NOOPTIMIZE | cmsFLAGS_NOCACHE);
        ASSERT_NOT_NULL(ref);
        sd_bitmap *naive = NULL;
        ASSERT_OK(decode(plain, plain_n, 1, 0, 0, &naive, NULL, NULL, NULL, NULL));
        int worst[3], far = 0;
        for (int mode = 0; mode < 3; mode++) { /* whole, random chunks, a coarse table */
            sd__color_mutate(mode == 2 ? 1 : 0);
            sd_bitmap *got = NULL;
            int64_t space = -1;
            ASSERT_OK(decode(tagged, tagged_n, 1, 0, mode == 1 ? 2 : 0, &got, &space, NULL, NULL, NULL));
            ASSERT_EQ(space, SD_COLOR_CMYK);
            worst[mode] = cmyk_worst(got, stored, w, h, ref, naive, &far);
            sd_bitmap_free(got);
        }
        sd__color_mutate(0);
        printf("  %s (%s, PCS %s): worst %d whole, %d in pieces; a coarse table %d\n",
               files[k] ? strrchr(files[k], '/') + 1 : "ours", cmsGetEncodedICCversion(prof) >= 0x4000000 ? "v4" : "v2",
               cmsGetPCS(prof) == cmsSigXYZData ? "XYZ" : "Lab", worst[0], worst[1], worst[2]);
        ASSERT(worst[0] <= 1 && worst[1] <= 1); /* the README's "within 1 level" (the tolerance: 3) */
        ASSERT(worst[2] > 3);
        sd_bitmap_free(naive);
        cmsDeleteTransform(ref);
        cmsCloseProfile(prof);
        cmsCloseProfile(srgb);
        free(stored);
        free(plain);
        free(tagged);
        free(icc);
    }
    free(ink);
    return 0;
}

/* AVIF: nclx Display P3 and an ICC profile, through avifenc (libavif-bin). */
static int test_avif(void)
{
    if (access("/usr/bin/avifenc", X_OK) != 0)
        return 77;
    sd_bitmap *pic = picture(64, 48, 0, 0);
    uint8_t *png;
    size_t pn, icc_len;
    ASSERT_OK(enc_png(pic, 6, &png, &pn));
    char dir[] = "/tmp/sdcolorXXXXXX";
    ASSERT_NOT_NULL(mkdtemp(dir));
    char in[256], out[256], iccp[256], cmd[1024];
    snprintf(in, sizeof in, "%s/in.png", dir);
    snprintf(out, sizeof out, "%s/out.avif", dir);
    snprintf(iccp, sizeof iccp, "%s/p3.icc", dir);
    FILE *f = fopen(in, "wb");
    fwrite(png, 1, pn, f);
    fclose(f);
    uint8_t *icc = profile(P_P3, &icc_len);
    f = fopen(iccp, "wb");
    fwrite(icc, 1, icc_len, f);
    fclose(f);
    cmsHPROFILE p3 = cmsOpenProfileFromMem(icc, (cmsUInt32Number)icc_len);
    for (int variant = 0; variant < 2; variant++) {
        /* lossless (identity matrix, 4:4:4) so the stored RGB is exact */
        snprintf(cmd, sizeof cmd, "avifenc -l %s %s %s %s >/dev/null 2>&1",
                 variant == 0 ? "--cicp 12/13/0" : "--icc", variant == 0 ? "" : iccp, in, out);
        ASSERT_EQ(system(cmd), 0);
        size_t an;
        uint8_t *avif = read_all(out, &an);
        sd_bitmap *stored = NULL, *got = NULL;
        int64_t space;
        ASSERT_OK(decode(avif, an, 0, 0, 0, &stored, NULL, NULL, NULL, NULL));
        ASSERT_OK(decode(avif, an, 1, 0, 0, &got, &space, NULL, NULL, NULL));
        ASSERT_EQ(space, variant == 0 ? SD_COLOR_CICP : SD_COLOR_ICC);
        int n = 0, worst = worst_vs_lcms(stored, got, p3, NULL, &n);
        printf("  AVIF %s: worst %d over %d pixels\n", variant == 0 ? "nclx P3" : "ICC P3", worst, n);
        ASSERT(worst <= 2 && n > 0);
        sd_bitmap_free(stored);
        sd_bitmap_free(got);
        free(avif);
    }
    cmsCloseProfile(p3);
    unlink(in), unlink(out), unlink(iccp), rmdir(dir);
    free(icc);
    sd_free(png);
    sd_bitmap_free(pic);
    return 0;
}

/* ---- gamut edges: LUT profiles, saturated inks, translucent colours ---- */

/* Hue sweeps (hue across, bands down: full saturation and value, 3/4 and
 * 1/4 value, half saturation), straight RGBA, `alpha`: 1..255 across. */
static uint8_t *sweeps_rgba(uint32_t w, uint32_t h, int alpha)
{
    static const double band[4][2] = {{1, 1}, {1, 0.75}, {1, 0.25}, {0.5, 1}}; /* S, V */
    uint8_t *px = malloc((size_t)w * h * 4);
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            const double *sv = band[y * 4 / h];
            double hue = (alpha ? (double)(y % (h / 4)) / (h / 4) : (double)x / w) * 6, f = hue - floor(hue);
            double v = sv[1], p = v * (1 - sv[0]), q = v * (1 - sv[0] * f), t = v * (1 - sv[0] * (1 - f)), rgb[3];
            switch ((int)hue % 6) {
            case 0: rgb[0] = v, rgb[1] = t, rgb[2] = p; break;
            case 1: rgb[0] = q, rgb[1] = v, rgb[2] = p; break;
            case 2: rgb[0] = p, rgb[1] = v, rgb[2] = t; break;
            case 3: rgb[0] = p, rgb[1] = q, rgb[2] = v; break;
            case 4: rgb[0] = t, rgb[1] = p, rgb[2] = v; break;
            default: rgb[0] = v, rgb[1] = p, rgb[2] = q; break;
            }
            uint8_t *o = px + ((size_t)y * w + x) * 4;
            for (int c = 0; c < 3; c++)
                o[c] = (uint8_t)lround(rgb[c] * 255);
            o[3] = alpha ? (uint8_t)(1 + x * 254 / (w - 1)) : 255;
        }
    return px;
}

/* Display P3 as a v4 LUT profile, as colour-managed apps write them: AToB0
 * = the sRGB curve, a 17-point CLUT from linear P3 to Lab, identity output
 * curves; the matrix and curves tags too (lcms2 prefers the LUT). `xyz`:
 * a v2 lut16 (mft2) to XYZ instead. */
static cmsHTRANSFORM lut_sampler_to_pcs;
static cmsInt32Number lut_sampler(const cmsUInt16Number in[], cmsUInt16Number out[], void *cargo)
{
    int xyz = *(const int *)cargo;
    double rgb[3] = {in[0] / 65535.0, in[1] / 65535.0, in[2] / 65535.0};
    return to_pcs(lut_sampler_to_pcs, xyz, rgb, out);
}

static uint8_t *p3_lut_profile(int xyz, size_t *len)
{
    static const double p3[6] = {0.680, 0.320, 0.265, 0.690, 0.150, 0.060};
    cmsHPROFILE linear = rgb(0.3127, 0.3290, p3, cmsBuildGamma(NULL, 1.0));
    cmsHPROFILE pcs = xyz ? cmsCreateXYZProfile() : cmsCreateLab4Profile(NULL);
    lut_sampler_to_pcs = cmsCreateTransform(linear, TYPE_RGB_DBL, pcs, xyz ? TYPE_XYZ_DBL : TYPE_Lab_DBL,
                                            INTENT_RELATIVE_COLORIMETRIC, cmsFLAGS_NOOPTIMIZE);
    cmsHPROFILE p = rgb(0.3127, 0.3290, p3, srgb_trc()); /* the matrix and curves tags */
    cmsSetProfileVersion(p, xyz ? 2.1 : 4.3);
    cmsSetPCS(p, xyz ? cmsSigXYZData : cmsSigLabData);
    cmsToneCurve *trc = srgb_trc(), *curves[3] = {trc, trc, trc};
    cmsPipeline *a2b = cmsPipelineAlloc(NULL, 3, 3);
    cmsStage *clut = cmsStageAllocCLut16bit(NULL, 17, 3, 3, NULL);
    cmsStageSampleCLut16bit(clut, lut_sampler, &xyz, 0);
    cmsPipelineInsertStage(a2b, cmsAT_END, cmsStageAllocToneCurves(NULL, 3, curves));
    cmsPipelineInsertStage(a2b, cmsAT_END, clut);
    cmsPipelineInsertStage(a2b, cmsAT_END, cmsStageAllocToneCurves(NULL, 3, NULL));
    cmsWriteTag(p, cmsSigAToB0Tag, a2b);
    cmsPipelineFree(a2b);
    cmsFreeToneCurve(trc);
    uint8_t *out = save(p, len);
    cmsCloseProfile(p);
    cmsDeleteTransform(lut_sampler_to_pcs);
    cmsCloseProfile(pcs);
    cmsCloseProfile(linear);
    return out;
}

/* Worst opaque difference of `tagged` decoded (whole, or in random chunks,
 * or as a 40-px thumbnail) against lcms2's float transform of its stored
 * pixels from `prof`. */
static int rgb_worst(const uint8_t *tagged, size_t n, cmsHPROFILE prof, int chunked, int thumb)
{
    sd_bitmap *stored = NULL, *got = NULL;
    if (decode(tagged, n, 0, thumb, 0, &stored, NULL, NULL, NULL, NULL) != SD_OK ||
        decode(tagged, n, 1, thumb, chunked, &got, NULL, NULL, NULL, NULL) != SD_OK)
        return 1000;
    int compared = 0, worst = worst_vs_lcms(stored, got, prof, NULL, &compared);
    sd_bitmap_free(stored);
    sd_bitmap_free(got);
    return compared > 0 ? worst : 1000;
}

/* RGB LUT profiles (v4 Lab, v2 XYZ) on hue sweeps and ramps, in PNG and
 * JPEG: within 2, whole, in pieces and as thumbnails; a coarse table
 * (7 uniform points) fails that. */
static int test_lut_profiles(void)
{
    const uint32_t w = 192, h = 64;
    uint8_t *sw = sweeps_rgba(w, h, 0);
    sd_bitmap *sweeps = premultiplied(sw, w, h), *ramps = picture(96, 64, 0, 0);
    for (int xyz = 0; xyz < 2; xyz++) {
        size_t icc_len;
        uint8_t *icc = p3_lut_profile(xyz, &icc_len);
        cmsHPROFILE prof = cmsOpenProfileFromMem(icc, (cmsUInt32Number)icc_len);
        ASSERT(prof != NULL && cmsIsTag(prof, cmsSigAToB0Tag) && cmsIsMatrixShaper(prof));
        for (int pic = 0; pic < 2; pic++)
            for (int kind = 0; kind < 2; kind++) { /* png, jpeg */
                if (sd_under_valgrind() && (xyz || pic || kind))
                    continue; /* memcheck: one of each path */
                const sd_bitmap *b = pic ? ramps : sweeps;
                uint8_t *plain, *tagged;
                size_t plain_n, tagged_n;
                if (kind == 0) {
                    ASSERT_OK(enc_png(b, 6, &plain, &plain_n));
                    tagged = png_with_icc(plain, plain_n, icc, icc_len, &tagged_n);
                } else {
                    ASSERT_OK(enc_jpeg(b, 95, 0, &plain, &plain_n));
                    tagged = jpeg_with_icc(plain, plain_n, icc, icc_len, 0, &tagged_n);
                }
                int whole = rgb_worst(tagged, tagged_n, prof, 0, 0), pieces = rgb_worst(tagged, tagged_n, prof, 2, 0),
                    thumb = rgb_worst(tagged, tagged_n, prof, 0, 40);
                sd__color_mutate(1);
                int coarse = rgb_worst(tagged, tagged_n, prof, 0, 0);
                sd__color_mutate(0);
                printf("  P3 LUT (%s), %s %s: worst %d whole, %d in pieces, %d as a thumbnail; a coarse table %d\n",
                       xyz ? "v2 XYZ" : "v4 Lab", pic ? "ramps" : "hue sweeps", kind ? "JPEG" : "PNG", whole, pieces,
                       thumb, coarse);
                ASSERT(whole <= 1 && pieces <= 1 && thumb <= 1); /* "within 1 level" (tolerance: 2) */
                ASSERT(coarse > 2); /* the check sees a coarser table */
                free(tagged);
                sd_free(plain);
            }
        cmsCloseProfile(prof);
        free(icc);
    }
    sd_bitmap_free(sweeps);
    sd_bitmap_free(ramps);
    free(sw);
    return 0;
}

/* A P3 PNG of saturated hues with an alpha ramp (1..255), and greens just
 * inside sRGB's red edge (R 90..135 of high G: sRGB red near 0) at alpha
 * 128..255: translucent colours within 2 of lcms2's float transform of the
 * file's straight values, premultiplied; converted from premultiplied
 * bytes instead, they are not (the bits lost there are magnified where an
 * sRGB channel nears 0). */
static int test_alpha_ramp(void)
{
    const uint32_t w = 256, h = 128;
    uint8_t *px = sweeps_rgba(w, h, 1);
    for (uint32_t y = h / 2; y < h; y++) /* the red edge, over the sweeps' lower half */
        for (uint32_t x = 0; x < w; x++) {
            uint8_t *p = px + ((size_t)y * w + x) * 4;
            p[0] = (uint8_t)(90 + (x * 7 + y) % 46), p[1] = (uint8_t)(200 + (y * 3 + x) % 56);
            p[2] = (uint8_t)((x * 13 + y * 29) % 256), p[3] = (uint8_t)(128 + (x * 31 + y * 17) % 128);
        }
    size_t icc_len, n;
    uint8_t *icc = profile(P_P3, &icc_len), *png = png_rgba(px, w, h, icc, icc_len, &n);
    cmsHPROFILE prof = cmsOpenProfileFromMem(icc, (cmsUInt32Number)icc_len);
    int worst[4];
    for (int mode = 0; mode < 4; mode++) { /* whole, byte by byte, random chunks; premultiplied rows */
        sd__color_mutate(mode == 3 ? 2 : 0);
        sd_bitmap *stored = NULL, *got = NULL;
        ASSERT_OK(decode(png, n, 0, 0, 0, &stored, NULL, NULL, NULL, NULL));
        ASSERT_OK(decode(png, n, 1, 0, mode == 3 ? 0 : mode, &got, NULL, NULL, NULL, NULL));
        int compared = 0;
        worst_alpha = 0;
        int opaque = worst_vs_lcms(stored, got, prof, px, &compared);
        worst[mode] = worst_alpha > opaque ? worst_alpha : opaque;
        sd_bitmap_free(stored);
        sd_bitmap_free(got);
    }
    sd__color_mutate(0);
    printf("  P3 PNG, alpha ramp: worst %d whole, %d byte by byte, %d in chunks; from premultiplied bytes %d\n",
           worst[0], worst[1], worst[2], worst[3]);
    ASSERT(worst[0] <= 1 && worst[1] <= 1 && worst[2] <= 1); /* "within 1 level" (tolerance: 2) */
    ASSERT(worst[3] > 2);
    cmsCloseProfile(prof);
    free(png);
    free(icc);
    free(px);
    return 0;
}

int main(int argc, char **argv)
{
    static const sd_test_case tests[] = {
        {"profiles_every_codec", test_profiles_every_codec},
        {"transicc_agrees", test_transicc_agrees},
        {"png_chunks", test_png_chunks},
        {"bad_profiles", test_bad_profiles},
        {"avif", test_avif},
        {"fast_path", test_fast_path},
        {"encode_keeps_profile", test_encode_keeps_profile},
        {"cmyk", test_cmyk},
        {"cmyk_edges", test_cmyk_edges},
        {"sixteen_bit", test_sixteen_bit},
        {"lut_profiles", test_lut_profiles},
        {"alpha_ramp", test_alpha_ramp},
        {NULL, NULL},
    };
    return sd_test_run(tests, argc, argv);
}
