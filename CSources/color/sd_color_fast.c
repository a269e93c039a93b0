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
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SD__HAVE_AVX2_PATH 1
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
    for (int i = SD__ENC_STEPS + 1; i < SD__ENC_STEPS + 4; i++)
        x->enc[i] = 0;
    x->fast = 1;
}

/* Opaque native ARGB32 pixels through the fast path, in place. The
 * scalar, SSE2 and AVX2 loops do the same integer sums (the SSE2 pack's
 * int16 saturation never binds: the clamp to [0, 8192] is inside it), so
 * they write the same bytes; sd__color_force_scalar lets the tests check
 * (1: scalar, 2: SSE2, not AVX2). */
static int force_scalar;

#ifdef SD__HAVE_AVX2_PATH
/* Eight pixels a step: each pixel's three table rows summed in one half of
 * a 256-bit register (two pixels a register), the sums transposed into
 * B, G and R of eight pixels, clamped, and encoded by three gathers from
 * the encoding table (32 bits at each index, the low byte kept). The
 * pixels come out of the transpose as 0 2 4 6 | 1 3 5 7 and are put back
 * in order with one permute. Returns the pixels done (a multiple of 8). */
__attribute__((target("avx2"))) static uint32_t convert_avx2(const sd__xform *x, uint32_t *row, uint32_t w)
{
    const __m256i half = _mm256_set1_epi32(1 << (SD__TAB_SHIFT - 1)), zero = _mm256_setzero_si256(),
                  top = _mm256_set1_epi32(SD__ENC_STEPS), low = _mm256_set1_epi32(0xFF),
                  alpha = _mm256_set1_epi32((int)0xFF000000u), order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const int *enc = (const int *)(const void *)x->enc;
    uint32_t i = 0;
#define SD__ROW2(c, sh, a, b)                                                                                  \
    _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)x->tab[c][((a) >> (sh)) & 0xFF])), \
                            _mm_loadu_si128((const __m128i *)x->tab[c][((b) >> (sh)) & 0xFF]), 1)
#define SD__SUM2(a, b)                                                                                         \
    _mm256_srai_epi32(_mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(SD__ROW2(0, 16, a, b), SD__ROW2(1, 8, a, b)), \
                                                        SD__ROW2(2, 0, a, b)),                                  \
                                       half),                                                                   \
                      SD__TAB_SHIFT)
    for (; i + 8 <= w; i += 8) {
        const uint32_t *p = row + i;
        __m256i s01 = SD__SUM2(p[0], p[1]), s23 = SD__SUM2(p[2], p[3]);
        __m256i s45 = SD__SUM2(p[4], p[5]), s67 = SD__SUM2(p[6], p[7]);
        __m256i t0 = _mm256_unpacklo_epi32(s01, s23), t1 = _mm256_unpackhi_epi32(s01, s23);
        __m256i t2 = _mm256_unpacklo_epi32(s45, s67), t3 = _mm256_unpackhi_epi32(s45, s67);
        __m256i b = _mm256_min_epi32(_mm256_max_epi32(_mm256_unpacklo_epi64(t0, t2), zero), top);
        __m256i g = _mm256_min_epi32(_mm256_max_epi32(_mm256_unpackhi_epi64(t0, t2), zero), top);
        __m256i r = _mm256_min_epi32(_mm256_max_epi32(_mm256_unpacklo_epi64(t1, t3), zero), top);
        b = _mm256_and_si256(_mm256_i32gather_epi32(enc, b, 1), low);
        g = _mm256_and_si256(_mm256_i32gather_epi32(enc, g, 1), low);
        r = _mm256_and_si256(_mm256_i32gather_epi32(enc, r, 1), low);
        __m256i out = _mm256_or_si256(_mm256_or_si256(_mm256_slli_epi32(r, 16), _mm256_slli_epi32(g, 8)), b);
        out = _mm256_permutevar8x32_epi32(out, order);
        __m256i in = _mm256_loadu_si256((const __m256i *)(const void *)p);
        _mm256_storeu_si256((__m256i *)(void *)(row + i), _mm256_or_si256(out, _mm256_and_si256(in, alpha)));
    }
#undef SD__SUM2
#undef SD__ROW2
    return i;
}

static int avx2_ok(void)
{
    static int known = -1; /* one answer for the process: a benign race */
    if (known < 0)
        known = __builtin_cpu_supports("avx2") ? 1 : 0;
    return known;
}
#endif

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
#ifdef SD__HAVE_AVX2_PATH
    if (!force_scalar && avx2_ok())
        i = convert_avx2(x, row, w);
#endif
#if defined(__SSE2__)
    if (force_scalar != 1) {
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
