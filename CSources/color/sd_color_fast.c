/*
 * sd_color_fast.c — our own path for opaque pixels of an RGB matrix/TRC
 * source (Display P3, Adobe RGB, ProPhoto, Rec.2020, cHRM/gAMA, CICP): each
 * source channel value's share of linear sRGB B, G, R — its curve and
 * matrix column folded into one table of Q21 integers — so a pixel is
 * three table rows added (one SSE2 add each), rounded to Q13 and encoded
 * by an 8192-step table: within 1 of lcms2's float transform, ~4.7x
 * faster than its 8-bit one.
 */
#include <math.h>

#include "color/sd_color_int.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* 3x3 inverse (row-major); 0 when singular. */
static int invert3(const double a[9], double out[9])
{
    double d = a[0] * (a[4] * a[8] - a[5] * a[7]) - a[1] * (a[3] * a[8] - a[5] * a[6]) + a[2] * (a[3] * a[7] - a[4] * a[6]);
    if (fabs(d) < 1e-12)
        return 0;
    out[0] = (a[4] * a[8] - a[5] * a[7]) / d, out[1] = (a[2] * a[7] - a[1] * a[8]) / d, out[2] = (a[1] * a[5] - a[2] * a[4]) / d;
    out[3] = (a[5] * a[6] - a[3] * a[8]) / d, out[4] = (a[0] * a[8] - a[2] * a[6]) / d, out[5] = (a[2] * a[3] - a[0] * a[5]) / d;
    out[6] = (a[3] * a[7] - a[4] * a[6]) / d, out[7] = (a[1] * a[6] - a[0] * a[7]) / d, out[8] = (a[0] * a[4] - a[1] * a[3]) / d;
    return 1;
}

/* The colorants of a matrix/TRC profile as a matrix RGB -> XYZ (D50). */
static int colorants(cmsHPROFILE p, double m[9])
{
    static const cmsTagSignature col[3] = {cmsSigRedColorantTag, cmsSigGreenColorantTag, cmsSigBlueColorantTag};
    for (int c = 0; c < 3; c++) {
        const cmsCIEXYZ *v = cmsReadTag(p, col[c]);
        if (v == NULL)
            return 0;
        m[c] = v->X, m[3 + c] = v->Y, m[6 + c] = v->Z;
    }
    return 1;
}

/* Our own path for an RGB matrix/TRC source (x->fast), if it has one. */
void sd__color_make_fast(sd__xform *x, cmsHPROFILE src, cmsHPROFILE srgb)
{
    static const cmsTagSignature trc[3] = {cmsSigRedTRCTag, cmsSigGreenTRCTag, cmsSigBlueTRCTag};
    double s[9], d[9], di[9];
    if (cmsGetColorSpace(src) != cmsSigRgbData || !cmsIsMatrixShaper(src) || !colorants(src, s) ||
        !colorants(srgb, d) || !invert3(d, di))
        return;
    double m[9]; /* source linear RGB -> linear sRGB */
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            m[r * 3 + c] = di[r * 3] * s[c] + di[r * 3 + 1] * s[3 + c] + di[r * 3 + 2] * s[6 + c];
    for (int c = 0; c < 3; c++) {
        const cmsToneCurve *t = cmsReadTag(src, trc[c]);
        if (t == NULL)
            return;
        for (int i = 0; i < 256; i++) {
            double lin = cmsEvalToneCurveFloat(t, (cmsFloat32Number)i / 255);
            for (int o = 0; o < 3; o++) { /* out B, G, R: sRGB rows 2, 1, 0 */
                double v = m[(2 - o) * 3 + c] * lin * (SD__ENC_STEPS << SD__TAB_SHIFT);
                /* three entries and the rounding must sum within int32: a profile
                 * whose colorants or curves go past that (real ones stay near 1)
                 * is left to lcms2 (fuzz_icc found one overflowing) */
                if (!isfinite(v) || fabs(v) > (double)(1 << 29))
                    return;
                x->tab[c][i][o] = (int32_t)lround(v);
            }
            x->tab[c][i][3] = 0;
        }
    }
    for (int i = 0; i <= SD__ENC_STEPS; i++) {
        double l = (double)i / SD__ENC_STEPS, v = l <= 0.0031308 ? l * 12.92 : 1.055 * pow(l, 1 / 2.4) - 0.055;
        x->enc[i] = (uint8_t)lround(v * 255);
    }
    x->fast = 1;
}

/* Opaque native ARGB32 pixels through the fast path, in place. The
 * scalar and SSE2 loops do the same integer sums (the SSE2 pack's int16
 * saturation never binds: the clamp to [0, 8192] is inside it), so they
 * write the same bytes; sd__color_force_scalar lets the tests check. */
static int force_scalar;

int sd__color_force_scalar(int on)
{
    int was = force_scalar;
    force_scalar = on;
    return was;
}

static inline uint32_t enc_scalar(const sd__xform *x, const int32_t *r, const int32_t *g, const int32_t *b, int o)
{
    int32_t v = (r[o] + g[o] + b[o] + (1 << (SD__TAB_SHIFT - 1))) >> SD__TAB_SHIFT;
    v = v < 0 ? 0 : (v > SD__ENC_STEPS ? SD__ENC_STEPS : v);
    return x->enc[v];
}

void sd__color_convert_fast(const sd__xform *x, uint32_t *row, uint32_t w)
{
    uint32_t i = 0;
#if defined(__SSE2__)
    if (!force_scalar) {
        const __m128i half = _mm_set1_epi32(1 << (SD__TAB_SHIFT - 1)), lo = _mm_setzero_si128(),
                      hi = _mm_set1_epi16(SD__ENC_STEPS);
#define SD__SUM(p)                                                                                            \
    _mm_srai_epi32(_mm_add_epi32(_mm_add_epi32(_mm_add_epi32(                                                     \
                                                   _mm_loadu_si128((const __m128i *)x->tab[0][((p) >> 16) & 0xFF]), \
                                                   _mm_loadu_si128((const __m128i *)x->tab[1][((p) >> 8) & 0xFF])), \
                                               _mm_loadu_si128((const __m128i *)x->tab[2][(p) & 0xFF])),            \
                                 half),                                                                           \
                   SD__TAB_SHIFT)
        uint16_t ix[16];
        const uint8_t *e = x->enc;
        for (; i + 4 <= w; i += 4) {
            uint32_t p0 = row[i], p1 = row[i + 1], p2 = row[i + 2], p3 = row[i + 3];
            __m128i v0 = _mm_min_epi16(_mm_max_epi16(_mm_packs_epi32(SD__SUM(p0), SD__SUM(p1)), lo), hi);
            __m128i v1 = _mm_min_epi16(_mm_max_epi16(_mm_packs_epi32(SD__SUM(p2), SD__SUM(p3)), lo), hi);
            _mm_storeu_si128((__m128i *)ix, v0);
            _mm_storeu_si128((__m128i *)(ix + 8), v1);
            row[i] = (p0 & 0xFF000000u) | (uint32_t)e[ix[2]] << 16 | (uint32_t)e[ix[1]] << 8 | e[ix[0]];
            row[i + 1] = (p1 & 0xFF000000u) | (uint32_t)e[ix[6]] << 16 | (uint32_t)e[ix[5]] << 8 | e[ix[4]];
            row[i + 2] = (p2 & 0xFF000000u) | (uint32_t)e[ix[10]] << 16 | (uint32_t)e[ix[9]] << 8 | e[ix[8]];
            row[i + 3] = (p3 & 0xFF000000u) | (uint32_t)e[ix[14]] << 16 | (uint32_t)e[ix[13]] << 8 | e[ix[12]];
        }
#undef SD__SUM
    }
#endif
    for (; i < w; i++) {
        uint32_t p = row[i];
        const int32_t *r = x->tab[0][(p >> 16) & 0xFF], *g = x->tab[1][(p >> 8) & 0xFF], *b = x->tab[2][p & 0xFF];
        row[i] = (p & 0xFF000000u) | enc_scalar(x, r, g, b, 2) << 16 | enc_scalar(x, r, g, b, 1) << 8 |
                 enc_scalar(x, r, g, b, 0);
    }
}
