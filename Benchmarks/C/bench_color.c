/*
 * bench_color.c — `sdcore-bench color`: what colour management costs.
 *
 * One 12 MP photo-like JPEG (q85), as stored untagged, tagged sRGB (lcms2's
 * own sRGB profile: recognised by content, so no conversion) and tagged
 * Display P3 (built with cmsCreateRGBProfile: P3 primaries, D65, the sRGB
 * curve; APP2 written by sd_encoder_set_icc_profile). Each decoded by sd_decoder, one thread, a new
 * decoder per image, full size and as a 256 px thumbnail, the P3 file with
 * SD_DEC_COLOR_MANAGE on and off; rounds interleaved, best of N. The cost of
 * a row is its time over the same file decoded without conversion.
 * Then the conversion alone against calling lcms2 directly on the same
 * bitmap (a transform made once, TYPE_BGRA_8 in place as ours, the same
 * flags) — ours measured as the managed decode minus the unmanaged one.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lcms2.h>

#include <sdcore.h>

#include "../../Tests/C/sd_test_encode.h"

sd_bitmap *bench_photo(int w, int h, int alpha); /* bench_decode.c */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* `b` as a JPEG at `quality` carrying `icc` (sd_encoder_set_icc_profile's APP2). */
static uint8_t *tagged_jpeg(const sd_bitmap *b, int quality, const uint8_t *icc, size_t len, size_t *out)
{
    sd_encoder *e;
    uint8_t *o = NULL;
    if (sd_encoder_new(SD_FORMAT_JPEG, &e) != SD_OK)
        return NULL;
    if (sd_encoder_set(e, SD_ENC_QUALITY, quality) != SD_OK || sd_encoder_set_icc_profile(e, icc, len) != SD_OK ||
        sd_encoder_add_frame(e, b, 0) != SD_OK || sd_encoder_finish(e, &o, out) != SD_OK)
        o = NULL;
    sd_encoder_free(e);
    return o;
}

static uint8_t *saved(cmsHPROFILE h, size_t *len)
{
    cmsUInt32Number n = 0;
    cmsSaveProfileToMem(h, NULL, &n);
    uint8_t *b = malloc(n);
    cmsSaveProfileToMem(h, b, &n);
    *len = n;
    return b;
}

static double decode_once(const uint8_t *d, size_t n, int manage, int thumb)
{
    sd_decoder *dec;
    sd_bitmap *b = NULL;
    sd_decoder_new(&dec);
    sd_decoder_set(dec, SD_DEC_COLOR_MANAGE, manage);
    if (thumb)
        sd_decoder_set(dec, SD_DEC_MAX_PIXEL_SIZE, thumb);
    double t0 = now();
    sd_decoder_decode(dec, d, n, &b);
    double t = now() - t0;
    sd_bitmap_free(b);
    sd_decoder_free(dec);
    return t;
}

/* --sheet: a Display P3 picture (saturated ramps) decoded three ways, side
 * by side: unmanaged (the P3 numbers shown as sRGB: dull), ours converted,
 * lcms2's unoptimised float transform of the stored pixels (the reference). */
static int write_sheet(const char *path, cmsHPROFILE p3p, cmsHPROFILE srgbp, const uint8_t *icc, size_t icc_len)
{
    const uint32_t w = 256, h = 192, gap = 8;
    sd_bitmap *pic;
    if (sd_bitmap_new(w, h, &pic) != SD_OK)
        return -1;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint32_t band = y / 32, v = x * 255 / (w - 1), r = 0, g = 0, b = 0;
            switch (band) {
            case 0: r = v; break;
            case 1: g = v; break;
            case 2: b = v; break;
            case 3: r = v, g = 255 - v / 2; break;
            case 4: r = 255 - v / 3, b = v; break;
            default: r = g = b = v; break;
            }
            uint32_t px = 0xFF000000u | r << 16 | g << 8 | b;
            memcpy(sd_bitmap_pixels(pic) + y * sd_bitmap_stride(pic) + x * 4, &px, 4);
        }
    size_t tn;
    uint8_t *tagged = tagged_jpeg(pic, 100, icc, icc_len, &tn); /* q100 */
    if (tagged == NULL)
        return -1;
    sd_bitmap *panels[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 2; k++) {
        sd_decoder *d;
        sd_decoder_new(&d);
        sd_decoder_set(d, SD_DEC_COLOR_MANAGE, k);
        sd_decoder_decode(d, tagged, tn, &panels[k]);
        sd_decoder_free(d);
    }
    if (panels[0] == NULL || panels[1] == NULL)
        return -1;
    sd_bitmap_new(w, h, &panels[2]);
    cmsHTRANSFORM t = cmsCreateTransform(p3p, TYPE_BGRA_8, srgbp, TYPE_BGRA_8, INTENT_RELATIVE_COLORIMETRIC,
                                         cmsFLAGS_NOOPTIMIZE | cmsFLAGS_NOCACHE | cmsFLAGS_COPY_ALPHA);
    for (uint32_t y = 0; y < h; y++)
        cmsDoTransform(t, sd_bitmap_pixels(panels[0]) + y * sd_bitmap_stride(panels[0]),
                       sd_bitmap_pixels(panels[2]) + y * sd_bitmap_stride(panels[2]), w);
    cmsDeleteTransform(t);
    sd_bitmap *sheet;
    sd_bitmap_new(3 * w + 2 * gap, h, &sheet);
    memset(sd_bitmap_pixels(sheet), 0xFF, sd_bitmap_size(sheet));
    for (int k = 0; k < 3; k++)
        for (uint32_t y = 0; y < h; y++)
            memcpy(sd_bitmap_pixels(sheet) + y * sd_bitmap_stride(sheet) + (size_t)k * (w + gap) * 4,
                   sd_bitmap_pixels(panels[k]) + y * sd_bitmap_stride(panels[k]), (size_t)w * 4);
    uint8_t *out;
    size_t on;
    int rc = enc_png(sheet, 9, &out, &on);
    FILE *f = rc == SD_OK ? fopen(path, "wb") : NULL;
    if (f) {
        fwrite(out, 1, on, f);
        fclose(f);
        printf("sheet: %s — a Display P3 JPEG: unmanaged (P3 numbers shown as sRGB) | ours, converted | "
               "lcms2's float transform (reference)\n", path);
    }
    sd_free(out);
    sd_free(tagged);
    for (int k = 0; k < 3; k++)
        sd_bitmap_free(panels[k]);
    sd_bitmap_free(sheet);
    sd_bitmap_free(pic);
    return f ? 0 : -1;
}

int bench_color_main(int argc, char **argv)
{
    int rounds = 7, json = 0;
    const char *sheet = NULL;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--sheet") == 0 && i + 1 < argc)
            sheet = argv[++i];
        else if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--quick") == 0)
            rounds = 2;
        else {
            fprintf(stderr, "usage: sdcore-bench color [--quick] [--json] [--sheet FILE.png]\n");
            return 2;
        }
    }
    if (sheet) {
        cmsCIExyY wp = {0.3127, 0.3290, 1};
        cmsCIExyYTRIPLE pr = {{0.680, 0.320, 1}, {0.265, 0.690, 1}, {0.150, 0.060, 1}};
        const double c4[5] = {2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045};
        cmsToneCurve *tc = cmsBuildParametricToneCurve(NULL, 4, c4), *tcs[3] = {tc, tc, tc};
        cmsHPROFILE a = cmsCreateRGBProfile(&wp, &pr, tcs), b = cmsCreate_sRGBProfile();
        size_t n;
        uint8_t *icc = saved(a, &n);
        int rc = write_sheet(sheet, a, b, icc, n);
        free(icc);
        cmsCloseProfile(a);
        cmsCloseProfile(b);
        cmsFreeToneCurve(tc);
        return rc ? 1 : 0;
    }
    sd_bitmap *photo = bench_photo(4000, 3000, 0);
    uint8_t *jpg;
    size_t jn;
    if (photo == NULL || enc_jpeg(photo, 85, 0, &jpg, &jn) != SD_OK)
        return 1;
    cmsCIExyY white = {0.3127, 0.3290, 1};
    cmsCIExyYTRIPLE p3 = {{0.680, 0.320, 1}, {0.265, 0.690, 1}, {0.150, 0.060, 1}};
    const double sp[5] = {2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045};
    cmsToneCurve *curve = cmsBuildParametricToneCurve(NULL, 4, sp), *curves[3] = {curve, curve, curve};
    cmsHPROFILE p3p = cmsCreateRGBProfile(&white, &p3, curves), srgbp = cmsCreate_sRGBProfile();
    size_t p3n, sn, p3_len, s_len;
    uint8_t *p3icc = saved(p3p, &p3n), *sicc = saved(srgbp, &sn);
    uint8_t *p3jpg = tagged_jpeg(photo, 85, p3icc, p3n, &p3_len), *sjpg = tagged_jpeg(photo, 85, sicc, sn, &s_len);
    if (p3jpg == NULL || sjpg == NULL)
        return 1;

    /* rows: 0 untagged, 1 sRGB-tagged, 2 P3 unmanaged, 3 P3 managed; full and thumbnail */
    double best[2][4];
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 4; k++)
            best[t][k] = 1e9;
    for (int r = 0; r < rounds; r++)
        for (int t = 0; t < 2; t++)
            for (int k = 0; k < 4; k++) {
                int kk = (k + r) % 4; /* the order turns */
                const uint8_t *d = kk == 0 ? jpg : (kk == 1 ? sjpg : p3jpg);
                size_t n = kk == 0 ? jn : (kk == 1 ? s_len : p3_len);
                double s = decode_once(d, n, kk != 2, t ? 256 : 0);
                best[t][kk] = fmin(best[t][kk], s);
            }
    /* lcms2 directly on the unmanaged P3 bitmap, in place */
    sd_bitmap *raw = NULL;
    sd_decoder *dec;
    sd_decoder_new(&dec);
    sd_decoder_set(dec, SD_DEC_COLOR_MANAGE, 0);
    sd_decoder_decode(dec, p3jpg, p3_len, &raw);
    sd_decoder_free(dec);
    cmsHTRANSFORM xf = cmsCreateTransform(p3p, TYPE_BGRA_8, srgbp, TYPE_BGRA_8, INTENT_RELATIVE_COLORIMETRIC,
                                          cmsFLAGS_NOCACHE | cmsFLAGS_COPY_ALPHA);
    double direct = 1e9;
    uint8_t *tmp = malloc(sd_bitmap_stride(raw));
    for (int r = 0; r < rounds; r++) {
        double t0 = now();
        for (uint32_t y = 0; y < sd_bitmap_height(raw); y++) {
            uint8_t *row = sd_bitmap_pixels(raw) + y * sd_bitmap_stride(raw);
            cmsDoTransform(xf, row, tmp, sd_bitmap_width(raw)); /* ours: to a row, copied back */
            memcpy(row, tmp, (size_t)sd_bitmap_width(raw) * 4);
        }
        direct = fmin(direct, now() - t0);
    }
    double ours = best[0][3] - best[0][2];
    static const char *label[4] = {"untagged", "sRGB-tagged (by content: no conversion)", "Display P3, not managed",
                                   "Display P3, converted to sRGB"};
    if (json) {
        printf("{\"bench\":\"color\",\"rounds\":%d,\"lcms2\":%d,"
               "\"full_ms\":{\"untagged\":%.2f,\"srgb\":%.2f,\"p3_off\":%.2f,\"p3_on\":%.2f},"
               "\"thumb_ms\":{\"untagged\":%.3f,\"srgb\":%.3f,\"p3_off\":%.3f,\"p3_on\":%.3f},"
               "\"p3_full_cost\":%.3f,\"p3_thumb_cost\":%.3f,\"srgb_cost\":%.3f,\"ours_vs_lcms2_direct\":%.3f}\n",
               rounds, LCMS_VERSION, best[0][0] * 1e3, best[0][1] * 1e3, best[0][2] * 1e3, best[0][3] * 1e3,
               best[1][0] * 1e3, best[1][1] * 1e3, best[1][2] * 1e3, best[1][3] * 1e3, best[0][3] / best[0][2],
               best[1][3] / best[1][2], best[0][1] / best[0][0], direct / ours);
    } else {
        printf("sdcore-bench color: one 12 MP photo JPEG (q85), one thread, a new decoder per image, best of %d\n"
               "interleaved rounds; lcms2 %d. Cost = time / the same file decoded without conversion.\n\n",
               rounds, LCMS_VERSION);
        printf("%-44s %12s %12s\n", "ms", "full size", "256 px");
        for (int k = 0; k < 4; k++)
            printf("%-44s %12.2f %12.3f\n", label[k], best[0][k] * 1e3, best[1][k] * 1e3);
        printf("\n%-44s %12.3f %12.3f   target <= 1.10 / 1.03\n", "P3 converted, cost x", best[0][3] / best[0][2],
               best[1][3] / best[1][2]);
        printf("%-44s %12.3f %12.3f   target <= 1.01\n", "sRGB-tagged vs untagged, cost x", best[0][1] / best[0][0],
               best[1][1] / best[1][0]);
        printf("%-44s %12.3f %12s   target >= 1.0 (ours %.1f ms, lcms2 %.1f ms)\n",
               "conversion: lcms2 direct / ours, full size", direct / ours, "", ours * 1e3, direct * 1e3);
    }
    free(tmp);
    cmsDeleteTransform(xf);
    cmsCloseProfile(p3p);
    cmsCloseProfile(srgbp);
    cmsFreeToneCurve(curve);
    free(p3icc), free(sicc), sd_free(p3jpg), sd_free(sjpg);
    sd_bitmap_free(raw);
    sd_free(jpg);
    sd_bitmap_free(photo);
    return 0;
}
