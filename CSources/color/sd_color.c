/*
 * sd_color.c — colour management with lcms2: every decoded image comes out
 * in sRGB.
 *
 * A codec reports what it found (an ICC profile, PNG's sRGB or cHRM/gAMA,
 * coded CICP primaries and transfer); nothing happens until the decoder
 * presents a bitmap — after shrink-on-load and resampling, so a thumbnail
 * converts its own pixels, not the source's. The source is resolved once
 * into a transform kept in a small process-wide cache keyed by the source's
 * bytes (a thumbnail server sees the same P3 profile thousands of times):
 * an sRGB profile, recognised by its content (colorants and curves, not its
 * name), and untagged images cost nothing. Relative colorimetric intent,
 * no black-point compensation, as browsers. Transforms are built with
 * cmsFLAGS_NOCACHE so threads can share them; a LUT-based profile's
 * opaque pixels go through a table of our own sampled from lcms2's float
 * evaluation (sd_color_table.c).
 *
 * A CMYK JPEG's CMYK profile is applied by the JPEG codec as it writes
 * its rows (sd__color_cmyk_rows: CMYK cannot wait for resampling, which
 * works on RGB), through such a table; without one the codec's
 * inverted-CMYK conversion stays, as browsers do. HDR
 * transfers (PQ, HLG) are reported (SD_COLOR_HDR), not tone-mapped.
 */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include <lcms2.h>

#include "color/sd_color.h"
#include "color/sd_color_table.h"
#include "decode/sd_decoder_int.h"
#include "bitmap/sd_pixel.h"

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SD__CMS_NATIVE TYPE_BGRA_8 /* ARGB32 in memory: B, G, R, A */
#else
#define SD__CMS_NATIVE TYPE_ARGB_8
#endif

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define SD__ENC_STEPS 8192 /* linear light in Q13 */
#define SD__TAB_SHIFT 8    /* the tables hold Q21: 8 bits more */

struct sd__xform {
    uint8_t *key; /* what it was made from: kind byte + data */
    size_t key_len;
    cmsHTRANSFORM t; /* native straight ARGB32 -> sRGB, alpha copied; NULL: gray LUT */
    /* translucent pixels: the straight colour recovered from premultiplied
     * bytes as floats (8 bits would round it again; lcms2's optimised
     * 16-bit path errs by up to 6 levels at the gamut edge), B,G,R,A float
     * -> sRGB; a gray source: gray float -> RGB float */
    cmsHTRANSFORM t16;
    uint8_t gray[256][3]; /* a gray source: value -> sRGB R, G, B */
    int identity;         /* the source is sRGB by content: nothing to do */
    /* matrix/TRC sources, opaque pixels: our own path (lcms2's 8-bit
     * transform takes ~30 ns a pixel here). Each source channel value's
     * share of linear sRGB B, G, R — its curve and matrix column folded
     * into one table of Q21 integers — so a pixel is three table rows
     * added (one SSE2 add each), rounded to Q13 and encoded by an
     * 8192-step table (within 1 of lcms2's float transform). */
    int fast;
    int cmyk;             /* ctab: C, M, Y, K bytes (inverted or not, as the key says) -> sRGB */
    /* a LUT-based source (CLUT, or a CMYK one): our own table sampled from
     * lcms2's float evaluation (sd_color_table.c) for opaque pixels */
    sd__ctab *ctab;
    int32_t tab[3][256][4]; /* [R,G,B in][value] -> B, G, R, 0 out */
    uint8_t enc[SD__ENC_STEPS + 1];
    int refs;             /* users now, plus 1 while cached */
};

/* ---- what codecs report ---- */

static void warn(sd_decoder *d, const char *why)
{
    if (d->warnings++ == 0)
        sd__decoder_msg(d, "colour: %s; decoded as sRGB", why);
    sd__log(SD_LOG_DEBUG, "decoder (%s): colour: %s; decoded as sRGB", sd_format_name(d->format), why);
}

void sd__color_set_icc(sd_decoder *d, const uint8_t *icc, size_t len)
{
    sd__color *c = &d->color;
    if (c->space != SD_COLOR_SRGB || c->icc != NULL || c->decided)
        return; /* a higher-precedence source was set */
    if (len > SD__ICC_MAX) {
        warn(d, "ICC profile larger than 4 MiB ignored");
        return;
    }
    if (len < 132) { /* the header and the tag count */
        warn(d, "truncated ICC profile ignored");
        return;
    }
    c->icc = sd__malloc(len);
    if (c->icc == NULL)
        return; /* the pixels still come; only unmanaged */
    memcpy(c->icc, icc, len);
    c->icc_len = len;
    c->space = SD_COLOR_ICC;
}

void sd__color_set_srgb(sd_decoder *d)
{
    if (d->color.space == SD_COLOR_SRGB)
        d->color.decided = 1; /* sRGB is what untagged means; weaker sources now lose */
}

void sd__color_set_chrm_gama(sd_decoder *d, const double chrm[8], double gamma)
{
    sd__color *c = &d->color;
    if (c->space != SD_COLOR_SRGB || c->decided)
        return;
    if (chrm != NULL)
        memcpy(c->chrm, chrm, sizeof c->chrm);
    c->gamma = gamma;
    c->space = SD_COLOR_CHRM_GAMA;
}

void sd__color_set_cicp(sd_decoder *d, int primaries, int transfer)
{
    sd__color *c = &d->color;
    if (c->space != SD_COLOR_SRGB || c->decided)
        return;
    if (transfer == 16 || transfer == 18) { /* PQ, HLG: reported, not tone-mapped */
        c->space = SD_COLOR_HDR;
        c->cicp_primaries = primaries;
        c->cicp_transfer = transfer;
        return;
    }
    if ((primaries == 1 || primaries == 2) && (transfer == 13 || transfer == 2)) {
        c->decided = 1; /* sRGB, or unspecified: nothing to do, and nothing weaker counts */
        return;
    }
    c->space = SD_COLOR_CICP;
    c->cicp_primaries = primaries;
    c->cicp_transfer = transfer;
}

void sd__color_free(sd__color *c)
{
    sd__free(c->icc);
    c->icc = NULL;
    sd__xform_release(c->xf);
    c->xf = NULL;
}

/* ---- profiles ---- */

static cmsToneCurve *srgb_curve(void)
{
    const cmsFloat64Number p[5] = {2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045};
    return cmsBuildParametricToneCurve(NULL, 4, p);
}

/* A matrix/TRC RGB profile from white point, primaries and one curve. */
static cmsHPROFILE rgb_profile(const double xy[8], cmsToneCurve *curve)
{
    cmsCIExyY white = {xy[0], xy[1], 1};
    cmsCIExyYTRIPLE prim = {{xy[2], xy[3], 1}, {xy[4], xy[5], 1}, {xy[6], xy[7], 1}};
    cmsToneCurve *curves[3] = {curve, curve, curve};
    cmsHPROFILE p = curve ? cmsCreateRGBProfile(&white, &prim, curves) : NULL;
    cmsFreeToneCurve(curve);
    return p;
}

static const double bt709_xy[8] = {0.3127, 0.3290, 0.64, 0.33, 0.30, 0.60, 0.15, 0.06};

/* The source profile for a CICP pair, or NULL (unsupported: a warning). */
static cmsHPROFILE cicp_profile(int primaries, int transfer)
{
    static const double bt2020[8] = {0.3127, 0.3290, 0.708, 0.292, 0.170, 0.797, 0.131, 0.046};
    static const double p3[8] = {0.3127, 0.3290, 0.680, 0.320, 0.265, 0.690, 0.150, 0.060};
    const double *xy;
    switch (primaries) {
    case 1: case 2: xy = bt709_xy; break;
    case 9: xy = bt2020; break;
    case 12: xy = p3; break;
    default: return NULL;
    }
    cmsToneCurve *curve;
    switch (transfer) {
    case 2: case 13: curve = srgb_curve(); break;
    case 1: case 6: case 14: case 15: { /* BT.709's: the inverse of its OETF */
        const cmsFloat64Number p[5] = {1 / 0.45, 1 / 1.099, 0.099 / 1.099, 1 / 4.5, 0.081};
        curve = cmsBuildParametricToneCurve(NULL, 4, p);
        break;
    }
    case 4: curve = cmsBuildGamma(NULL, 2.2); break;
    case 5: curve = cmsBuildGamma(NULL, 2.8); break;
    case 8: curve = cmsBuildGamma(NULL, 1.0); break;
    default: return NULL;
    }
    return rgb_profile(xy, curve);
}

static int near(double a, double b, double tol) { return fabs(a - b) <= tol; }

/* An RGB matrix/TRC profile whose colorants and curves are sRGB's. */
static int is_srgb(cmsHPROFILE p, cmsHPROFILE srgb)
{
    if (cmsGetColorSpace(p) != cmsSigRgbData || !cmsIsMatrixShaper(p))
        return 0;
    static const cmsTagSignature col[3] = {cmsSigRedColorantTag, cmsSigGreenColorantTag, cmsSigBlueColorantTag};
    static const cmsTagSignature trc[3] = {cmsSigRedTRCTag, cmsSigGreenTRCTag, cmsSigBlueTRCTag};
    for (int i = 0; i < 3; i++) {
        const cmsCIEXYZ *a = cmsReadTag(p, col[i]), *b = cmsReadTag(srgb, col[i]);
        if (a == NULL || b == NULL || !near(a->X, b->X, 0.002) || !near(a->Y, b->Y, 0.002) || !near(a->Z, b->Z, 0.002))
            return 0;
        const cmsToneCurve *ca = cmsReadTag(p, trc[i]), *cb = cmsReadTag(srgb, trc[i]);
        if (ca == NULL || cb == NULL)
            return 0;
        for (int k = 1; k <= 32; k++) {
            cmsFloat32Number x = (cmsFloat32Number)k / 32;
            if (!near(cmsEvalToneCurveFloat(ca, x), cmsEvalToneCurveFloat(cb, x), 0.002))
                return 0;
        }
    }
    return 1;
}

/* ---- the transform cache ---- */

#define SD__XFORM_CACHE 8
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static sd__xform *cache[SD__XFORM_CACHE]; /* most recent first */

static void xform_free(sd__xform *x)
{
    if (x->t)
        cmsDeleteTransform(x->t);
    if (x->t16)
        cmsDeleteTransform(x->t16);
    sd__ctab_free(x->ctab);
    sd__free(x->key);
    sd__free(x);
}

void sd__xform_release(sd__xform *x)
{
    if (x == NULL)
        return;
    pthread_mutex_lock(&cache_lock);
    int last = --x->refs == 0;
    pthread_mutex_unlock(&cache_lock);
    if (last)
        xform_free(x);
}

static sd__xform *cache_find(const uint8_t *key, size_t len)
{
    for (int i = 0; i < SD__XFORM_CACHE; i++) {
        sd__xform *x = cache[i];
        if (x && x->key_len == len && memcmp(x->key, key, len) == 0) {
            memmove(cache + 1, cache, sizeof *cache * (size_t)i); /* to the front */
            cache[0] = x;
            return x;
        }
    }
    return NULL;
}

void sd__color_cache_drain(void)
{
    pthread_mutex_lock(&cache_lock);
    sd__xform *gone[SD__XFORM_CACHE];
    int n = 0;
    for (int i = 0; i < SD__XFORM_CACHE; i++) {
        if (cache[i] && --cache[i]->refs == 0)
            gone[n++] = cache[i];
        cache[i] = NULL;
    }
    pthread_mutex_unlock(&cache_lock);
    for (int i = 0; i < n; i++)
        xform_free(gone[i]);
}

static void cache_put(sd__xform *x)
{
    sd__xform *out = cache[SD__XFORM_CACHE - 1];
    memmove(cache + 1, cache, sizeof *cache * (SD__XFORM_CACHE - 1));
    cache[0] = x;
    x->refs++; /* the cache's */
    if (out && --out->refs == 0)
        xform_free(out);
}

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
static void make_fast(sd__xform *x, cmsHPROFILE src, cmsHPROFILE srgb)
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

static void convert_fast(const sd__xform *x, uint32_t *row, uint32_t w)
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

/* A device, input, output or colour-space profile: one that transforms an
 * image's colours (not a link, abstract or named-colour one). */
static int usable_class(cmsHPROFILE p)
{
    cmsProfileClassSignature c = cmsGetDeviceClass(p);
    return c != cmsSigLinkClass && c != cmsSigAbstractClass && c != cmsSigNamedColorClass;
}

/* A CMYK JPEG's transform: our table (lcms2's own precalculated CLUT,
 * 16-bit and 29 points, erred by up to 23 levels on a saturated ink). */
static sd__xform *make_cmyk(cmsHPROFILE src, int inverted, const char **why)
{
    sd__xform *x = sd__calloc(1, sizeof *x);
    if (x == NULL)
        return NULL;
    x->cmyk = 1;
    x->ctab = sd__ctab_new(src, inverted);
    if (x->ctab == NULL) {
        *why = "CMYK profile lcms2 cannot transform ignored";
        sd__free(x);
        x = NULL;
    }
    return x;
}

/* An RGB or gray source's transform. */
static sd__xform *make_rgb(cmsHPROFILE src, cmsHPROFILE srgb, const char **why)
{
    sd__xform *x = sd__calloc(1, sizeof *x);
    if (x != NULL && cmsGetColorSpace(src) == cmsSigGrayData) {
        /* gray: a table of the 256 values */
        cmsHTRANSFORM g = cmsCreateTransform(src, TYPE_GRAY_8, srgb, TYPE_RGB_8, INTENT_RELATIVE_COLORIMETRIC,
                                             cmsFLAGS_NOCACHE | cmsFLAGS_NOOPTIMIZE);
        if (g == NULL) {
            *why = "gray ICC profile lcms2 cannot use ignored";
            sd__free(x);
            x = NULL;
        } else {
            uint8_t in[256];
            for (int i = 0; i < 256; i++)
                in[i] = (uint8_t)i;
            cmsDoTransform(g, in, x->gray, 256);
            cmsDeleteTransform(g);
            x->t16 = cmsCreateTransform(src, TYPE_GRAY_FLT, srgb, TYPE_RGB_FLT, INTENT_RELATIVE_COLORIMETRIC,
                                        cmsFLAGS_NOCACHE);
        }
    } else if (x != NULL) {
        /* lcms2 prefers a profile's AToB tables to its matrix and curves,
         * so do we: a LUT-based source gets our table (lcms2's 8-bit
         * precalculated one erred by 11 levels on a Display-P3 LUT) */
        if (cmsIsTag(src, cmsSigDToB1Tag) || cmsIsTag(src, cmsSigAToB1Tag) || cmsIsTag(src, cmsSigAToB0Tag))
            x->ctab = sd__ctab_new(src, 0);
        else
            make_fast(x, src, srgb);
        x->t = cmsCreateTransform(src, SD__CMS_NATIVE, srgb, SD__CMS_NATIVE, INTENT_RELATIVE_COLORIMETRIC,
                                  cmsFLAGS_NOCACHE | cmsFLAGS_COPY_ALPHA);
        x->t16 = cmsCreateTransform(src, TYPE_BGRA_FLT, srgb, TYPE_BGRA_FLT, INTENT_RELATIVE_COLORIMETRIC,
                                    cmsFLAGS_NOCACHE | cmsFLAGS_COPY_ALPHA);
        if (x->t == NULL || x->t16 == NULL) {
            if (x->t)
                cmsDeleteTransform(x->t);
            if (x->t16)
                cmsDeleteTransform(x->t16);
            *why = "ICC profile lcms2 cannot transform ignored";
            sd__free(x);
            x = NULL;
        }
    }
    return x;
}

/* Make the transform for a source, or report it needs none (*identity) or
 * cannot be honoured (NULL, *why set). */
static sd__xform *make(const sd__color *c, int *identity, const char **why)
{
    cmsHPROFILE src = NULL, srgb = cmsCreate_sRGBProfile();
    *identity = 0;
    *why = NULL;
    if (srgb == NULL) {
        *why = "lcms2 could not make sRGB";
        return NULL;
    }
    if (c->space == SD_COLOR_CMYK) {
        src = cmsOpenProfileFromMem(c->icc, (cmsUInt32Number)c->icc_len);
        if (src == NULL)
            *why = "malformed ICC profile ignored";
        else if (cmsGetColorSpace(src) != cmsSigCmykData)
            *why = "a CMYK JPEG's profile that is not a CMYK profile ignored";
        else if (!usable_class(src))
            *why = "ICC profile of an unsupported class ignored";
    } else if (c->space == SD_COLOR_ICC) {
        src = cmsOpenProfileFromMem(c->icc, (cmsUInt32Number)c->icc_len);
        if (src == NULL)
            *why = "malformed ICC profile ignored";
        else if (cmsGetColorSpace(src) == cmsSigCmykData)
            *why = "a CMYK profile on an RGB image ignored";
        else if (cmsGetColorSpace(src) != cmsSigRgbData && cmsGetColorSpace(src) != cmsSigGrayData)
            *why = "ICC profile of an unsupported colour space ignored";
        else if (!usable_class(src))
            *why = "ICC profile of an unsupported class ignored";
        else if (is_srgb(src, srgb))
            *identity = 1;
    } else if (c->space == SD_COLOR_CHRM_GAMA) {
        const double *xy = c->chrm[0] > 0 ? c->chrm : bt709_xy;
        cmsToneCurve *curve = c->gamma > 0 ? cmsBuildGamma(NULL, 1.0 / c->gamma) : srgb_curve();
        src = rgb_profile(xy, curve);
        if (src == NULL)
            *why = "cHRM/gAMA values lcms2 cannot use ignored";
        else if (is_srgb(src, srgb))
            *identity = 1;
    } else if (c->space == SD_COLOR_CICP) {
        src = cicp_profile(c->cicp_primaries, c->cicp_transfer);
        if (src == NULL)
            *why = "coded primaries/transfer not supported";
    }
    sd__xform *x = NULL;
    if (src != NULL && *why == NULL && !*identity)
        x = c->space == SD_COLOR_CMYK ? make_cmyk(src, c->cmyk_inverted, why) : make_rgb(src, srgb, why);
    if (src)
        cmsCloseProfile(src);
    cmsCloseProfile(srgb);
    return x;
}

/* The key: kind, then the source's bytes or values. */
static uint8_t *make_key(const sd__color *c, size_t *len)
{
    int icc = c->space == SD_COLOR_ICC || c->space == SD_COLOR_CMYK;
    size_t n = 1 + (icc ? c->icc_len : sizeof c->chrm + sizeof c->gamma + 2 * sizeof(int));
    uint8_t *k = sd__malloc(n);
    if (k == NULL)
        return NULL;
    k[0] = (uint8_t)(c->space | (c->space == SD_COLOR_CMYK && c->cmyk_inverted ? 0x80 : 0));
    if (icc) {
        memcpy(k + 1, c->icc, c->icc_len);
    } else {
        uint8_t *p = k + 1;
        memcpy(p, c->chrm, sizeof c->chrm), p += sizeof c->chrm;
        memcpy(p, &c->gamma, sizeof c->gamma), p += sizeof c->gamma;
        memcpy(p, &c->cicp_primaries, sizeof(int)), p += sizeof(int);
        memcpy(p, &c->cicp_transfer, sizeof(int));
    }
    *len = n;
    return k;
}

/* Look the decoder's source up once: d->color.xf, or NULL for nothing to do. */
static void resolve(sd_decoder *d)
{
    sd__color *c = &d->color;
    if (c->resolved)
        return;
    c->resolved = 1;
    if (!d->color_manage || c->space == SD_COLOR_SRGB || c->space == SD_COLOR_HDR ||
        (c->space == SD_COLOR_CMYK && c->icc == NULL))
        return;
    size_t len;
    uint8_t *key = make_key(c, &len);
    if (key == NULL)
        return;
    pthread_mutex_lock(&cache_lock);
    sd__xform *x = cache_find(key, len);
    if (x != NULL) {
        if (!x->identity)
            x->refs++;
        pthread_mutex_unlock(&cache_lock);
        sd__free(key);
        c->xf = x->identity ? NULL : x;
        return;
    }
    pthread_mutex_unlock(&cache_lock);
    int identity;
    const char *why;
    x = make(c, &identity, &why); /* outside the lock: lcms2's work */
    if (why != NULL || (x == NULL && !identity)) {
        if (why != NULL)
            warn(d, why);
        sd__free(key);
        return;
    }
    if (identity) /* remembered too: an sRGB profile is recognised once */
        x = sd__calloc(1, sizeof *x);
    if (x == NULL) {
        sd__free(key);
        return;
    }
    x->identity = identity;
    x->key = key;
    x->key_len = len;
    x->refs = identity ? 0 : 1; /* ours, unless there is nothing to hold */
    pthread_mutex_lock(&cache_lock);
    cache_put(x);
    pthread_mutex_unlock(&cache_lock);
    c->xf = identity ? NULL : x;
}

int sd__color_needed(sd_decoder *d)
{
    resolve(d);
    return d->color.xf != NULL && !d->color.xf->cmyk; /* CMYK: the codec's rows */
}

int sd__color_rows16_begin(sd_decoder *d)
{
    if (!sd__color_needed(d))
        return 0;
    d->color.rows_done = 1;
    return 1;
}

void sd__color_row16(sd_decoder *d, const uint16_t *rgba, uint8_t *out, uint32_t n, float *buf)
{
    const sd__xform *x = d->color.xf;
    float *in = buf, *res = buf + (size_t)n * 4;
    for (uint32_t i = 0; i < n; i++) { /* straight R, G, B, A -> B, G, R, A floats */
        const uint16_t *p = rgba + (size_t)i * 4;
        float *q = in + (size_t)i * 4;
        q[0] = p[2] / 65535.0f, q[1] = p[1] / 65535.0f, q[2] = p[0] / 65535.0f, q[3] = p[3] / 65535.0f;
    }
    if (x->t != NULL) {
        cmsDoTransform(x->t16, in, res, n);
    } else { /* gray: R = G = B; the gray channel alone, R, G, B out */
        for (uint32_t i = 0; i < n; i++)
            in[i] = in[(size_t)i * 4]; /* in place: i <= 4i, read before written */
        float *rgb = res + (size_t)n;
        cmsDoTransform(x->t16, in, rgb, n);
        for (uint32_t i = 0; i < n; i++) {
            float r = rgb[(size_t)i * 3], g = rgb[(size_t)i * 3 + 1], b = rgb[(size_t)i * 3 + 2];
            res[(size_t)i * 4] = b, res[(size_t)i * 4 + 1] = g, res[(size_t)i * 4 + 2] = r;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        for (int c = 0; c < 3; c++) { /* B, G, R floats -> R, G, B bytes */
            float v = res[(size_t)i * 4 + c];
            v = v < 0 ? 0 : (v > 1 ? 1 : v);
            out[(size_t)i * 4 + 2 - c] = (uint8_t)lrintf(v * 255);
        }
        out[(size_t)i * 4 + 3] = (uint8_t)((rgba[(size_t)i * 4 + 3] * 255u + 32767) / 65535);
    }
}

int sd__color_cmyk_begin(sd_decoder *d, int inverted)
{
    d->color.cmyk_inverted = inverted;
    resolve(d);
    return d->color.xf != NULL && d->color.xf->cmyk;
}

int sd__color_cmyk_rows(sd_decoder *d, uint8_t *const *rows, uint32_t n, uint32_t width)
{
    for (uint32_t y = 0; y < n; y++) /* C, M, Y, K as libjpeg wrote them -> ARGB32 in place */
        sd__ctab_cmyk(d->color.xf->ctab, rows[y], (uint32_t *)(void *)rows[y], width);
    return SD_OK;
}

/* A row with translucent pixels: each straight colour recovered from the
 * premultiplied bytes as floats, converted, premultiplied again. `buf`
 * holds 8 floats a pixel. */
static void convert_translucent(const sd__xform *x, uint32_t *row, uint32_t w, float *buf)
{
    float *in = buf, *out = buf + (size_t)w * 4;
    for (uint32_t i = 0; i < w; i++) {
        uint32_t p = row[i], a = p >> 24;
        float *q = in + (size_t)i * 4;
        for (int c = 0; c < 3; c++) /* B, G, R */
            q[c] = a ? (float)((p >> (8 * c)) & 0xFF) / (float)a : 0;
        q[3] = (float)a / 255;
    }
    if (x->t != NULL) {
        cmsDoTransform(x->t16, in, out, w);
    } else { /* gray: B = G = R; the gray channel alone, R, G, B out */
        for (uint32_t i = 0; i < w; i++)
            in[i] = in[(size_t)i * 4]; /* in place: i <= 4i, read before written */
        float *rgb = out + (size_t)w;   /* 3w floats inside out's 4w */
        cmsDoTransform(x->t16, in, rgb, w);
        for (uint32_t i = 0; i < w; i++) { /* out[4i..4i+2] never reach rgb[3(i+1)] */
            float r = rgb[(size_t)i * 3], g = rgb[(size_t)i * 3 + 1], b = rgb[(size_t)i * 3 + 2];
            out[(size_t)i * 4] = b, out[(size_t)i * 4 + 1] = g, out[(size_t)i * 4 + 2] = r;
        }
    }
    for (uint32_t i = 0; i < w; i++) {
        uint32_t a = row[i] >> 24, px = a << 24;
        for (int c = 0; c < 3; c++) {
            float v = out[(size_t)i * 4 + c];
            v = v < 0 ? 0 : (v > 1 ? 1 : v);
            px |= (uint32_t)lrintf(v * (float)a) << (8 * c); /* <= a */
        }
        row[i] = px;
    }
}

/* Rows of ARGB32 in place; *tmp and *buf16 are made when first needed
 * (the caller frees them). */
static int convert_rows(const sd__xform *x, uint8_t *const *rows, uint32_t n, uint32_t w, int opaque,
                        uint32_t **tmp, float **buf16)
{
    for (uint32_t y = 0; y < n; y++) {
        uint32_t *row = (uint32_t *)(void *)rows[y];
        uint32_t all = 0xFF000000u;
        for (uint32_t i = 0; i < w && !opaque; i++)
            all &= row[i];
        if ((all >> 24) != 0xFF) {
            if (*buf16 == NULL && (*buf16 = sd__malloc(sizeof **buf16 * 8 * w)) == NULL)
                return SD_ENOMEM;
            convert_translucent(x, row, w, *buf16);
            continue;
        }
        if (x->fast) {
            convert_fast(x, row, w);
            continue;
        }
        if (x->ctab) {
            sd__ctab_rgb(x->ctab, row, w);
            continue;
        }
        if (*tmp == NULL && (*tmp = sd__malloc((size_t)w * 4)) == NULL)
            return SD_ENOMEM;
        if (x->t != NULL) {
            cmsDoTransform(x->t, row, *tmp, w);
        } else {
            for (uint32_t i = 0; i < w; i++) {
                const uint8_t *g = x->gray[row[i] & 0xFF]; /* R = G = B in a gray image */
                (*tmp)[i] = 0xFF000000u | (uint32_t)g[0] << 16 | (uint32_t)g[1] << 8 | g[2];
            }
        }
        memcpy(row, *tmp, (size_t)w * 4);
    }
    return SD_OK;
}

int sd__color_convert(sd_decoder *d, sd_bitmap *b)
{
    resolve(d);
    const sd__xform *x = d->color.xf;
    if (x == NULL)
        return SD_OK;
    uint32_t *tmp = NULL;
    float *buf16 = NULL;
    int rc = SD_OK;
    for (uint32_t y = 0; y < b->height && rc == SD_OK; y++) {
        uint8_t *row = b->pixels + (size_t)y * b->stride;
        rc = convert_rows(x, &row, 1, b->width, 0, &tmp, &buf16);
    }
    sd__free(tmp);
    sd__free(buf16);
    return rc;
}

int sd__color_pending(sd_decoder *d)
{
    return sd__color_needed(d) && !d->color.rows_done;
}

int sd__color_rows_begin(sd_decoder *d)
{
    if (d->load_w != d->decode_w || d->load_h != d->decode_h || !sd__color_needed(d))
        return 0;
    d->color.rows_done = 1;
    return 1;
}

int sd__color_rows(sd_decoder *d, uint8_t *const *rows, uint32_t n, uint32_t width, int opaque)
{
    const sd__xform *x = d->color.xf;
    uint32_t *tmp = NULL;
    float *buf16 = NULL;
    int rc = x == NULL ? SD_OK : convert_rows(x, rows, n, width, opaque, &tmp, &buf16);
    sd__free(tmp);
    sd__free(buf16);
    return rc;
}

static int premultiplied_rows; /* tests: sd__color_mutate */

void sd__color_mutate(int which)
{
    sd__ctab_coarse(which & SD__COLOR_MUTATE_COARSE);
    premultiplied_rows = which & SD__COLOR_MUTATE_PREMULTIPLIED;
    sd__color_cache_drain();
}

int sd__color_straight_begin(sd_decoder *d)
{
    return !premultiplied_rows && sd__color_rows_begin(d);
}

int sd__color_straight_row(sd_decoder *d, const uint8_t *rgba, uint8_t *out, uint32_t n, uint32_t *words)
{
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *p = rgba + (size_t)i * 4;
        words[i] = (uint32_t)p[3] << 24 | (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
    }
    uint8_t *row = (uint8_t *)words;
    int rc = sd__color_rows(d, &row, 1, n, 1); /* straight colours: every pixel as an opaque one */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t w = words[i];
        uint8_t *q = out + (size_t)i * 4;
        q[0] = (uint8_t)(w >> 16), q[1] = (uint8_t)(w >> 8), q[2] = (uint8_t)w, q[3] = (uint8_t)(w >> 24);
    }
    return rc;
}
