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
#include "color/sd_color_int.h"
#include "color/sd_color_table.h"
#include "sdcore/sd_decoder.h" /* sd_color_space */
#include "bitmap/sd_pixel.h"

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SD__CMS_NATIVE TYPE_BGRA_8 /* ARGB32 in memory: B, G, R, A */
#else
#define SD__CMS_NATIVE TYPE_ARGB_8
#endif


/* ---- what codecs report ---- */

static void warn(sd__color *c, const char *why)
{
    if (c->warn != NULL)
        c->warn(c->warn_ctx, why);
}

void sd__color_set_icc(sd__color *c, const uint8_t *icc, size_t len)
{
    if (c->space != SD_COLOR_SRGB || c->icc != NULL || c->decided)
        return; /* a higher-precedence source was set */
    if (len > SD__ICC_MAX) {
        warn(c, "ICC profile larger than 4 MiB ignored");
        return;
    }
    if (len < 132) { /* the header and the tag count */
        warn(c, "truncated ICC profile ignored");
        return;
    }
    c->icc = sd__malloc(len);
    if (c->icc == NULL)
        return; /* the pixels still come; only unmanaged */
    memcpy(c->icc, icc, len);
    c->icc_len = len;
    c->space = SD_COLOR_ICC;
}

void sd__color_set_srgb(sd__color *c)
{
    if (c->space == SD_COLOR_SRGB)
        c->decided = 1; /* sRGB is what untagged means; weaker sources now lose */
}

void sd__color_set_chrm_gama(sd__color *c, const double chrm[8], double gamma)
{
    if (c->space != SD_COLOR_SRGB || c->decided)
        return;
    if (chrm != NULL)
        memcpy(c->chrm, chrm, sizeof c->chrm);
    c->gamma = gamma;
    c->space = SD_COLOR_CHRM_GAMA;
}

void sd__color_set_cicp(sd__color *c, int primaries, int transfer)
{
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

static pthread_once_t drain_once = PTHREAD_ONCE_INIT;
static void register_drain(void) { sd__register_drain(sd__color_cache_drain); }

static void cache_put(sd__xform *x)
{
    pthread_once(&drain_once, register_drain);
    sd__xform *out = cache[SD__XFORM_CACHE - 1];
    memmove(cache + 1, cache, sizeof *cache * (SD__XFORM_CACHE - 1));
    cache[0] = x;
    x->refs++; /* the cache's */
    if (out && --out->refs == 0)
        xform_free(out);
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
            sd__color_make_fast(x, src, srgb);
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

/* Look the source up once: c->xf, or NULL for nothing to do. */
static void resolve(sd__color *c)
{
    if (c->resolved)
        return;
    c->resolved = 1;
    if (!c->manage || c->space == SD_COLOR_SRGB || c->space == SD_COLOR_HDR ||
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
            warn(c, why);
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

int sd__color_needed(sd__color *c)
{
    resolve(c);
    return c->xf != NULL && !c->xf->cmyk; /* CMYK: the codec's rows */
}

int sd__color_rows16_begin(sd__color *c)
{
    if (!sd__color_needed(c))
        return 0;
    c->rows_done = 1;
    return 1;
}

void sd__color_row16(sd__color *c, const uint16_t *rgba, uint8_t *out, uint32_t n, float *buf)
{
    const sd__xform *x = c->xf;
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

int sd__color_cmyk_begin(sd__color *c, int inverted)
{
    c->cmyk_inverted = inverted;
    resolve(c);
    return c->xf != NULL && c->xf->cmyk;
}

int sd__color_cmyk_rows(sd__color *c, uint8_t *const *rows, uint32_t n, uint32_t width)
{
    for (uint32_t y = 0; y < n; y++) /* C, M, Y, K as libjpeg wrote them -> ARGB32 in place */
        sd__ctab_cmyk(c->xf->ctab, rows[y], (uint32_t *)(void *)rows[y], width);
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
            sd__color_convert_fast(x, row, w);
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

int sd__color_convert(sd__color *c, sd_bitmap *b)
{
    resolve(c);
    const sd__xform *x = c->xf;
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

int sd__color_pending(sd__color *c)
{
    return sd__color_needed(c) && !c->rows_done;
}

int sd__color_rows_begin(sd__color *c, int full_size)
{
    if (!full_size || !sd__color_needed(c))
        return 0;
    c->rows_done = 1;
    return 1;
}

int sd__color_rows(sd__color *c, uint8_t *const *rows, uint32_t n, uint32_t width, int opaque)
{
    const sd__xform *x = c->xf;
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

int sd__color_straight_begin(sd__color *c, int full_size)
{
    return !premultiplied_rows && sd__color_rows_begin(c, full_size);
}

int sd__color_straight_row(sd__color *c, const uint8_t *rgba, uint8_t *out, uint32_t n, uint32_t *words)
{
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *p = rgba + (size_t)i * 4;
        words[i] = (uint32_t)p[3] << 24 | (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
    }
    uint8_t *row = (uint8_t *)words;
    int rc = sd__color_rows(c, &row, 1, n, 1); /* straight colours: every pixel as an opaque one */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t w = words[i];
        uint8_t *q = out + (size_t)i * 4;
        q[0] = (uint8_t)(w >> 16), q[1] = (uint8_t)(w >> 8), q[2] = (uint8_t)w, q[3] = (uint8_t)(w >> 24);
    }
    return rc;
}
