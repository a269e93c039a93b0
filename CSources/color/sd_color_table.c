/*
 * sd_color_table.c — a LUT-based profile's transform to sRGB as a table of
 * our own, sampled once from lcms2's unoptimised float evaluation.
 *
 * lcms2's precalculated transforms clip each node to the output's range and
 * sample on a grid of their own: across a gamut edge (a saturated ink, a P3
 * green) the clipped nodes bend where the colour does not, and an 8-bit
 * Display-P3 LUT profile errs by 11 levels, a CMYK one by up to 23. Here:
 *
 *   - nodes hold the profile's connection-space values (Lab or XYZ), as
 *     lcms2's float pipeline gives them; each pixel's interpolated value
 *     goes on to linear sRGB (Lab -> XYZ, a matrix) unclipped, and is only
 *     then clipped and encoded: interpolation runs through the gamut edge
 *     as the profile does;
 *   - the grid is the profile's own CLUT grid, refined m times, in the
 *     domain after its input curves: a profile's CLUT is linear inside each
 *     of its tetrahedra and a refined grid's tetrahedra lie inside them, so
 *     a profile whose CLUT gives the connection space directly (mft2, or
 *     mAB without output curves: the common case) is reproduced to float
 *     rounding;
 *   - a pixel goes through the input curves first (a table of the 256 byte
 *     values), then the same interpolation lcms2 uses: tetrahedral on three
 *     inputs, and for four, linear on the first between two tetrahedral
 *     ones.
 *
 * A table is built in ~20 ms of CPU (ghostscript's CMYK profiles: 83,521
 * nodes) and kept in the transform cache with the rest.
 */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include <lcms2_plugin.h>

#include "color/sd_color_table.h"

#define SD__CTAB_NODES_RGB 40000u   /* 480 KB of nodes at most */
#define SD__CTAB_NODES_CMYK 100000u /* 1.2 MB */
#define SD__LIN_STEPS 65536         /* linear light to 8 bits: 1/65536 a step */

struct sd__ctab {
    int nin;
    uint32_t n[4];          /* nodes along each input */
    size_t stride[4];       /* floats from a node to the next along input i */
    float *v;               /* a node's L, a, b or X, Y, Z */
    int lab;                /* the connection space is Lab */
    float m[9];             /* XYZ (D50) -> linear-light sRGB, row-major */
    uint32_t cell[4][256];  /* stored byte -> its cell's first node along input i */
    float frac[4][256];     /* and where in the cell, 0..1 */
};

static int coarse; /* tests: sd__ctab_coarse */

int sd__ctab_coarse(int on)
{
    int was = coarse;
    coarse = on;
    return was;
}

static uint8_t enc[SD__LIN_STEPS + 1];
static pthread_once_t enc_once = PTHREAD_ONCE_INIT;

static void enc_init(void)
{
    for (int i = 0; i <= SD__LIN_STEPS; i++) {
        double l = (double)i / SD__LIN_STEPS, v = l <= 0.0031308 ? l * 12.92 : 1.055 * pow(l, 1 / 2.4) - 0.055;
        enc[i] = (uint8_t)lround(v * 255);
    }
}

static inline uint32_t encode(float l)
{
    l = l > 0 ? (l < 1 ? l : 1) : 0; /* also NaN -> 0 */
    return enc[(int)(l * SD__LIN_STEPS + 0.5f)];
}

/* A node value interpolated (Lab or XYZ) -> R << 16 | G << 8 | B. */
static inline uint32_t to_srgb(const sd__ctab *t, const float v[3])
{
    float x = v[0], y = v[1], z = v[2];
    if (t->lab) { /* D50 white; the inverse of Lab's f, cube above 6/29 */
        float fy = (v[0] + 16) / 116, fx = fy + v[1] / 500, fz = fy - v[2] / 200;
        const float e = 6.0f / 29, k = 3 * e * e;
        x = 0.9642f * (fx > e ? fx * fx * fx : k * (fx - 4.0f / 29));
        y = fy > e ? fy * fy * fy : k * (fy - 4.0f / 29);
        z = 0.8249f * (fz > e ? fz * fz * fz : k * (fz - 4.0f / 29));
    }
    const float *m = t->m;
    return encode(m[0] * x + m[1] * y + m[2] * z) << 16 | encode(m[3] * x + m[4] * y + m[5] * z) << 8 |
           encode(m[6] * x + m[7] * y + m[8] * z);
}

/* The AToB pipeline lcms2 evaluates for relative colorimetric: AToB1,
 * else AToB0; NULL for a float DToB tag (lcms2 prefers it) or none. */
static const cmsPipeline *input_lut(cmsHPROFILE p)
{
    if (cmsIsTag(p, cmsSigDToB1Tag))
        return NULL;
    cmsTagSignature tag = cmsIsTag(p, cmsSigAToB1Tag) ? cmsSigAToB1Tag : cmsSigAToB0Tag;
    return cmsIsTag(p, tag) ? cmsReadTag(p, tag) : NULL;
}

/* A curve that rises from 0 to 1: its inverse is found by bisection. */
static int rising(const cmsToneCurve *c)
{
    float prev = cmsEvalToneCurveFloat(c, 0);
    if (!(fabsf(prev) <= 1e-4f) || !(fabsf(cmsEvalToneCurveFloat(c, 1) - 1) <= 1e-4f))
        return 0; /* NaN too */
    for (int i = 1; i <= 1024; i++) {
        float v = cmsEvalToneCurveFloat(c, (float)i / 1024);
        if (!(v >= prev))
            return 0;
        prev = v;
    }
    return 1;
}

static double inverse(const cmsToneCurve *c, double u)
{
    double lo = 0, hi = 1;
    for (int i = 0; i < 40; i++) {
        double mid = (lo + hi) / 2;
        if (cmsEvalToneCurveFloat(c, (float)mid) < u)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

/* The grid: the profile's CLUT grid refined as far as the node budget
 * goes, or a uniform one when there is no CLUT to follow. curves[i] is the
 * input curve of input i the grid lies behind, or NULL. */
static void plan(cmsHPROFILE src, int nin, uint32_t n[4], const cmsToneCurve *curves[4])
{
    uint32_t budget = nin == 3 ? SD__CTAB_NODES_RGB : SD__CTAB_NODES_CMYK;
    uint32_t grid[4] = {0};
    const cmsPipeline *lut = input_lut(src);
    const cmsStage *s = lut ? cmsPipelineGetPtrToFirstStage(lut) : NULL;
    for (int i = 0; i < nin; i++)
        curves[i] = NULL;
    if (s != NULL && cmsStageType(s) == cmsSigCurveSetElemType && cmsStageOutputChannels(s) == (cmsUInt32Number)nin) {
        const _cmsStageToneCurvesData *c = cmsStageData(s);
        for (int i = 0; i < nin; i++)
            curves[i] = rising(c->TheCurves[i]) ? c->TheCurves[i] : NULL;
        s = cmsStageNext(s);
    }
    if (s != NULL && cmsStageType(s) == cmsSigCLutElemType && cmsStageInputChannels(s) == (cmsUInt32Number)nin) {
        const _cmsStageCLutData *c = cmsStageData(s);
        for (int i = 0; i < nin; i++)
            grid[i] = c->Params->nSamples[i];
    }
    int aligned = !coarse;
    for (int i = 0; i < nin; i++)
        aligned &= grid[i] >= 2 && grid[i] <= 256;
    if (aligned) {
        uint32_t m = 1;
        for (;; m++) { /* the largest refinement within the budget */
            double total = 1;
            for (int i = 0; i < nin; i++)
                total *= (double)(grid[i] - 1) * (m + 1) + 1;
            if (total > budget)
                break;
        }
        double total = 1;
        for (int i = 0; i < nin; i++)
            total *= (double)(grid[i] - 1) * m + 1;
        if (total <= 4.0 * budget) {
            for (int i = 0; i < nin; i++)
                n[i] = (grid[i] - 1) * m + 1;
            return;
        }
    }
    uint32_t u = coarse ? 7 : (uint32_t)floor(pow(budget, 1.0 / nin));
    for (int i = 0; i < nin; i++) {
        n[i] = u;
        curves[i] = NULL;
    }
}

/* sRGB's primaries and white with a linear curve: lcms2's float output
 * through it is linear light, unbounded. */
static cmsHPROFILE linear_srgb(void)
{
    cmsCIExyY d65 = {0.3127, 0.3290, 1};
    cmsCIExyYTRIPLE rec709 = {{0.64, 0.33, 1}, {0.30, 0.60, 1}, {0.15, 0.06, 1}};
    cmsToneCurve *lin = cmsBuildGamma(NULL, 1.0);
    cmsToneCurve *lins[3] = {lin, lin, lin};
    cmsHPROFILE p = lin ? cmsCreateRGBProfile(&d65, &rec709, lins) : NULL;
    cmsFreeToneCurve(lin);
    return p;
}

sd__ctab *sd__ctab_new(cmsHPROFILE src, int inverted)
{
    pthread_once(&enc_once, enc_init);
    int nin = cmsGetColorSpace(src) == cmsSigCmykData ? 4 : 3;
    sd__ctab *t = sd__calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    t->nin = nin;
    const cmsToneCurve *curves[4];
    plan(src, nin, t->n, curves);
    size_t nodes = 1;
    for (int i = nin - 1; i >= 0; i--) {
        t->stride[i] = nodes * 3;
        nodes *= t->n[i];
    }
    /* where each stored byte falls: through the input curve when the grid
     * lies behind it */
    for (int i = 0; i < nin; i++)
        for (int b = 0; b < 256; b++) {
            int ink = inverted ? 255 - b : b;
            double pos = (curves[i] ? cmsEvalToneCurveFloat(curves[i], (float)ink / 255) : ink / 255.0) * (t->n[i] - 1);
            pos = pos > 0 ? (pos < t->n[i] - 1 ? pos : t->n[i] - 1) : 0; /* NaN too */
            uint32_t c = (uint32_t)pos < t->n[i] - 1 ? (uint32_t)pos : t->n[i] - 2;
            t->cell[i][b] = c;
            t->frac[i][b] = (float)(pos - c);
        }
    /* the nodes: lcms2's unoptimised float transform into the connection
     * space; the matrix on from XYZ: linear-light sRGB of each unit XYZ */
    t->lab = cmsGetPCS(src) == cmsSigLabData;
    cmsHPROFILE pcs = t->lab ? cmsCreateLab4Profile(NULL) : cmsCreateXYZProfile(), lin = linear_srgb();
    cmsHTRANSFORM x = pcs ? cmsCreateTransform(src, nin == 4 ? TYPE_CMYK_DBL : TYPE_RGB_DBL, pcs,
                                               t->lab ? TYPE_Lab_FLT : TYPE_XYZ_FLT, INTENT_RELATIVE_COLORIMETRIC,
                                               cmsFLAGS_NOOPTIMIZE | cmsFLAGS_NOCACHE)
                          : NULL;
    cmsHPROFILE xyz = cmsCreateXYZProfile();
    cmsHTRANSFORM mx = xyz && lin ? cmsCreateTransform(xyz, TYPE_XYZ_DBL, lin, TYPE_RGB_DBL,
                                                       INTENT_RELATIVE_COLORIMETRIC,
                                                       cmsFLAGS_NOOPTIMIZE | cmsFLAGS_NOCACHE)
                                  : NULL;
    if (mx != NULL) {
        static const double unit[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
        for (int c = 0; c < 3; c++) {
            double rgb[3];
            cmsDoTransform(mx, unit[c], rgb, 1);
            for (int r = 0; r < 3; r++)
                t->m[r * 3 + c] = (float)rgb[r];
        }
        cmsDeleteTransform(mx);
    }
    for (cmsHPROFILE *p = (cmsHPROFILE[]){pcs, lin, xyz}, *e = p + 3; p < e; p++)
        if (*p)
            cmsCloseProfile(*p);
    uint32_t last = t->n[nin - 1];
    double *row = sd__malloc(sizeof *row * 4 * last), *axis[4] = {NULL, NULL, NULL, NULL};
    t->v = sd__malloc(sizeof *t->v * 3 * nodes);
    int ok = x != NULL && mx != NULL && row != NULL && t->v != NULL;
    for (int i = 0; i < nin && ok; i++) { /* each input's node values, in the transform's units */
        axis[i] = sd__malloc(sizeof *axis[i] * t->n[i]);
        ok = axis[i] != NULL;
        for (uint32_t k = 0; ok && k < t->n[i]; k++) {
            double u = (double)k / (t->n[i] - 1);
            axis[i][k] = (curves[i] ? inverse(curves[i], u) : u) * (nin == 4 ? 100 : 1);
        }
    }
    for (size_t r = 0; ok && r < nodes / last; r++) { /* one row along the last input at a time */
        size_t rest = r;
        uint32_t k[4];
        for (int i = nin - 2; i >= 0; i--) {
            k[i] = (uint32_t)(rest % t->n[i]);
            rest /= t->n[i];
        }
        for (uint32_t j = 0; j < last; j++) {
            for (int i = 0; i < nin - 1; i++)
                row[(size_t)j * nin + i] = axis[i][k[i]];
            row[(size_t)j * nin + nin - 1] = axis[nin - 1][j];
        }
        cmsDoTransform(x, row, t->v + r * last * 3, last);
    }
    for (int i = 0; i < 4; i++)
        sd__free(axis[i]);
    sd__free(row);
    if (x)
        cmsDeleteTransform(x);
    if (!ok) {
        sd__ctab_free(t);
        return NULL;
    }
    return t;
}

void sd__ctab_free(sd__ctab *t)
{
    if (t == NULL)
        return;
    sd__free(t->v);
    sd__free(t);
}

/* Tetrahedral interpolation over three inputs (a, b, c are their
 * fractions, sa, sb, sc their strides), as lcms2 does: the tetrahedron is
 * the one the fractions' order picks. */
static inline void tetra(const float *p, size_t sa, size_t sb, size_t sc, float a, float b, float c, float o[3])
{
    size_t s[3] = {sa, sb, sc}, ts;
    float f[3] = {a, b, c}, tf;
#define SD__ORDER(i, j) /* the larger fraction first */                                 \
    if (f[i] < f[j])                                                                    \
        tf = f[i], f[i] = f[j], f[j] = tf, ts = s[i], s[i] = s[j], s[j] = ts;
    SD__ORDER(0, 1)
    SD__ORDER(1, 2)
    SD__ORDER(0, 1)
#undef SD__ORDER
    size_t s1 = s[0], s2 = s[1], s3 = s[2];
    float f1 = f[0], f2 = f[1], f3 = f[2];
    const float *c1 = p + s1, *c2 = c1 + s2, *c3 = c2 + s3;
    for (int k = 0; k < 3; k++)
        o[k] = p[k] + (c1[k] - p[k]) * f1 + (c2[k] - c1[k]) * f2 + (c3[k] - c2[k]) * f3;
}

void sd__ctab_rgb(const sd__ctab *t, uint32_t *row, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t px = row[i], r = (px >> 16) & 0xFF, g = (px >> 8) & 0xFF, b = px & 0xFF;
        const float *p = t->v + t->cell[0][r] * t->stride[0] + t->cell[1][g] * t->stride[1] +
                         t->cell[2][b] * t->stride[2];
        float o[3];
        tetra(p, t->stride[0], t->stride[1], t->stride[2], t->frac[0][r], t->frac[1][g], t->frac[2][b], o);
        row[i] = (px & 0xFF000000u) | to_srgb(t, o);
    }
}

void sd__ctab_cmyk(const sd__ctab *t, const uint8_t *cmyk, uint32_t *out, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++, cmyk += 4) {
        uint32_t c = cmyk[0], m = cmyk[1], y = cmyk[2], k = cmyk[3];
        const float *p = t->v + t->cell[0][c] * t->stride[0] + t->cell[1][m] * t->stride[1] +
                         t->cell[2][y] * t->stride[2] + t->cell[3][k] * t->stride[3];
        float lo[3], hi[3], f = t->frac[0][c];
        tetra(p, t->stride[1], t->stride[2], t->stride[3], t->frac[1][m], t->frac[2][y], t->frac[3][k], lo);
        tetra(p + t->stride[0], t->stride[1], t->stride[2], t->stride[3], t->frac[1][m], t->frac[2][y],
              t->frac[3][k], hi);
        for (int j = 0; j < 3; j++)
            lo[j] += (hi[j] - lo[j]) * f;
        out[i] = 0xFF000000u | to_srgb(t, lo);
    }
}
