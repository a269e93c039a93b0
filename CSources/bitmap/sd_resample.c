/*
 * sd_resample.c — separable resampling of premultiplied ARGB32.
 *
 * Each axis gets a table of weights (one contiguous run of source pixels
 * per output pixel), computed in double, normalised to sum 1 and rounded
 * to Q14 with their running sum (so every run sums to exactly 16384: a
 * flat colour stays exact, an opaque region stays opaque). The kernel is
 * stretched by the reduction factor when shrinking (a low-pass at the
 * output's scale); pixels past an edge are the edge pixel (their weight is
 * folded onto it).
 *
 * The vertical pass runs first, straight from the source rows: output row
 * y mixes source rows first..first+taps-1 into one row of Q6 int16 (value
 * * 64, room for the overshoot of negative lobes); the horizontal pass then
 * mixes that row into the output, rounds, clamps to 0..255 and to the
 * pixel's alpha. Memory beyond source and output: one int16 row and the
 * weights. Both passes are exact integer arithmetic, so the SSE2 path
 * (pmaddwd on interleaved pairs) and the scalar path give the same bytes.
 *
 * SD_RESAMPLE_LINEAR runs a float path: sRGB decoded to linear light (the
 * straight colour, then premultiplied again), filtered, encoded.
 */
#include <math.h>
#include <string.h>
#include <pthread.h>

#include "bitmap/sd_resample.h"
#include "bitmap/sd_pixel.h"
#include "sdcore/sd_bitmap.h"

#if defined(__SSE2__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#include <emmintrin.h>
#define SD__RS_SSE2 1
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SD__ALPHA_BYTE 3
#else
#define SD__ALPHA_BYTE 0
#endif

#define SD__WBITS 14 /* weights: Q14 */
#define SD__TBITS 6  /* the intermediate row: Q6 */

static int force_scalar;

int sd__resample_force_scalar(int on)
{
    int was = force_scalar;
    force_scalar = on;
    return was;
}

/* ---- kernels ---- */

static double sinc(double x)
{
    if (x == 0)
        return 1;
    x *= M_PI;
    return sin(x) / x;
}

/* Mitchell-Netravali cubic with parameters b, c. */
static double cubic(double x, double b, double c)
{
    x = fabs(x);
    if (x < 1)
        return ((12 - 9 * b - 6 * c) * x * x * x + (-18 + 12 * b + 6 * c) * x * x + (6 - 2 * b)) / 6;
    if (x < 2)
        return ((-b - 6 * c) * x * x * x + (6 * b + 30 * c) * x * x + (-12 * b - 48 * c) * x + (8 * b + 24 * c)) / 6;
    return 0;
}

static double support(int filter)
{
    switch (filter) {
    case SD_FILTER_LANCZOS3: return 3;
    case SD_FILTER_MITCHELL:
    case SD_FILTER_CATMULL_ROM: return 2;
    case SD_FILTER_BILINEAR: return 1;
    default: return 0.5;
    }
}

static double kernel(int filter, double x)
{
    switch (filter) {
    case SD_FILTER_LANCZOS3: return fabs(x) < 3 ? sinc(x) * sinc(x / 3) : 0;
    case SD_FILTER_MITCHELL: return cubic(x, 1.0 / 3, 1.0 / 3);
    case SD_FILTER_CATMULL_ROM: return cubic(x, 0, 0.5);
    case SD_FILTER_BILINEAR: return fabs(x) < 1 ? 1 - fabs(x) : 0;
    default: return 0;
    }
}

/* ---- weights ---- */

typedef struct {
    uint32_t n, m;   /* source and output size along the axis */
    uint32_t taps;   /* weights per output: the longest run, rounded up to even */
    uint32_t *first; /* m: the first source pixel of each run */
    int16_t *w;      /* m * taps, Q14, each run sums to 16384 (padded with 0) */
    int32_t *wp;     /* the same as pairs (w[2k] | w[2k+1] << 16), for pmaddwd */
    int32_t *wv;     /* each pair four times: one 16-byte vector per pair */
    float *wf;       /* the same weights unrounded (the linear path), or NULL */
} sd__axis;

static void axis_free(sd__axis *a)
{
    sd__free(a->first);
    sd__free(a->w);
    sd__free(a->wp);
    sd__free(a->wv);
    sd__free(a->wf);
}

/*
 * Output i covers source [i*e/m, (i+1)*e/m) and is centred at c = (i+.5)e/m,
 * e the span of the source that holds the picture (n, or less when a
 * shrunk-on-load canvas's last pixel holds only part of one: a JPEG of 1411
 * columns at 1/2 is 706 columns covering 705.5); source pixel j is centred
 * at j + .5. Kernel filters weigh j by
 * k((j + .5 - c) / s), s = max(e/m, 1); box weighs it by the overlap of
 * [j, j+1) with the output's footprint [c - e/2m, c + e/2m). An axis that
 * keeps its size and its whole span is the identity.
 */
typedef struct {
    uint32_t n, m;
    int filter;
    double scale, s, reach;
    double sd1, cd1, sd3, cd3; /* Lanczos: sin/cos of the step pi/s and pi/3s */
} sd__axis_plan;

/* Output i's weights, folded inside the image and normalised, into `tmp`
 * (indexed from *f); trimmed to the run *f..*l of non-zero weights. */
static void run_weights(const sd__axis_plan *p, uint32_t i, double *tmp, uint32_t cap, int64_t *f_out, int64_t *l_out)
{
    const int64_t n = p->n;
    if (p->n == p->m && p->scale == 1) {
        tmp[0] = 1;
        *f_out = *l_out = i;
        return;
    }
    double c = (i + 0.5) * p->scale;
    int64_t lo = (int64_t)floor(c - p->reach - 0.5), hi = (int64_t)ceil(c + p->reach - 0.5);
    int64_t f = lo < 0 ? 0 : (lo > n - 1 ? n - 1 : lo), l = hi > n - 1 ? n - 1 : (hi < 0 ? 0 : hi);
    if (l - f + 1 > (int64_t)cap) /* cannot happen (cap covers the reach); be safe */
        l = f + cap - 1;
    memset(tmp, 0, sizeof *tmp * (size_t)(l - f + 1));
    double sum = 0, s1 = 0, c1 = 1, s3 = 0, c3 = 1;
    for (int64_t j = lo; j <= hi; j++) {
        double wj;
        if (p->filter == SD_FILTER_BOX) {
            double o = fmin(c + p->scale / 2, (double)j + 1) - fmax(c - p->scale / 2, (double)j);
            wj = o > 0 ? o : 0;
        } else if (p->filter == SD_FILTER_LANCZOS3) {
            /* sin(pi x) and sin(pi x / 3) stepped by rotation along the run:
             * two sines per run instead of two per tap (a thumbnail's
             * weights cost more than its pixels otherwise) */
            double x = ((double)j + 0.5 - c) / p->s;
            if (j == lo) {
                s1 = sin(M_PI * x), c1 = cos(M_PI * x);
                s3 = sin(M_PI * x / 3), c3 = cos(M_PI * x / 3);
            } else {
                double t1 = s1 * p->cd1 + c1 * p->sd1, t3 = s3 * p->cd3 + c3 * p->sd3;
                c1 = c1 * p->cd1 - s1 * p->sd1, s1 = t1;
                c3 = c3 * p->cd3 - s3 * p->sd3, s3 = t3;
            }
            wj = fabs(x) >= 3 ? 0 : (fabs(x) < 1e-9 ? 1 : 3 * s1 * s3 / (M_PI * M_PI * x * x));
        } else {
            wj = kernel(p->filter, ((double)j + 0.5 - c) / p->s);
        }
        int64_t k = j < f ? f : (j > l ? l : j); /* past an edge: the edge pixel */
        tmp[k - f] += wj;
        sum += wj;
    }
    if (sum == 0) { /* cannot happen: the centre's own pixel weighs > 0 */
        tmp[0] = 1;
        sum = 1;
    }
    for (int64_t k = 0; k <= l - f; k++)
        tmp[k] /= sum;
    /* a weight below 2^-20 moves no Q14 sum: leave it out of the run */
    int64_t a = 0, b = l - f;
    while (a < b && fabs(tmp[a]) < 1e-6)
        a++;
    while (b > a && fabs(tmp[b]) < 1e-6)
        b--;
    if (a > 0)
        memmove(tmp, tmp + a, sizeof *tmp * (size_t)(b - a + 1));
    *f_out = f + a;
    *l_out = f + b;
}

static int axis_init(sd__axis *a, uint32_t n, uint32_t m, double span, int filter, int want_float)
{
    memset(a, 0, sizeof *a);
    a->n = n;
    a->m = m;
    sd__axis_plan p = {n, m, filter, span / m, 0, 0, 0, 1, 0, 1};
    p.s = p.scale > 1 ? p.scale : 1;
    p.sd1 = sin(M_PI / p.s), p.cd1 = cos(M_PI / p.s);
    p.sd3 = sin(M_PI / p.s / 3), p.cd3 = cos(M_PI / p.s / 3);
    p.reach = filter == SD_FILTER_BOX ? p.scale / 2 : support(filter) * p.s;
    uint32_t cap = (uint32_t)ceil(2 * p.reach) + 3; /* source pixels one run can touch */
    /* every run's weights, once (m * cap is about 6n at most: cap shrinks as m grows) */
    double *all = sd__malloc(sizeof *all * cap * m);
    int64_t *fl = sd__malloc(sizeof *fl * 2 * m);
    a->first = sd__malloc(sizeof *a->first * m);
    if (all == NULL || fl == NULL || a->first == NULL)
        goto oom;
    uint32_t taps = 1; /* the longest run sets the taps of all */
    for (uint32_t i = 0; i < m; i++) {
        run_weights(&p, i, all + (size_t)i * cap, cap, &fl[2 * i], &fl[2 * i + 1]);
        taps = SD__MAX(taps, (uint32_t)(fl[2 * i + 1] - fl[2 * i] + 1));
    }
    uint32_t used = taps;
    taps += taps & 1; /* even: pairs of taps; the extra one weighs 0 */
    a->taps = taps;
    a->w = sd__calloc((size_t)m * taps, sizeof *a->w);
    a->wp = sd__malloc(sizeof *a->wp * m * (taps / 2));
    a->wv = sd__malloc(sizeof *a->wv * m * (taps / 2) * 4);
    if (want_float)
        a->wf = sd__calloc((size_t)m * taps, sizeof *a->wf);
    if (a->w == NULL || a->wp == NULL || a->wv == NULL || (want_float && a->wf == NULL))
        goto oom;
    for (uint32_t i = 0; i < m; i++) {
        const double *tmp = all + (size_t)i * cap;
        int64_t f = fl[2 * i], l = fl[2 * i + 1];
        /* every run has `used` pixels inside the image: one near the end
         * starts earlier (the padding tap may be the pixel after the last) */
        int64_t first = f + (int64_t)used > (int64_t)n ? (int64_t)n - used : f;
        a->first[i] = (uint32_t)first;
        int16_t *w = a->w + (size_t)i * taps;
        float *wf = a->wf ? a->wf + (size_t)i * taps : NULL;
        /* Q14 by the running sum: each run sums to exactly 1 << 14 */
        double run = 0;
        int32_t prev = 0;
        for (int64_t k = 0; k <= l - f; k++) {
            run += tmp[k];
            int32_t q = k == l - f ? 1 << SD__WBITS : (int32_t)lround(run * (1 << SD__WBITS));
            w[f - first + k] = (int16_t)(q - prev);
            prev = q;
            if (wf)
                wf[f - first + k] = (float)tmp[k];
        }
        for (uint32_t k = 0; k < taps; k += 2) {
            size_t at = (size_t)i * (taps / 2) + k / 2;
            a->wp[at] = (int32_t)((uint32_t)(uint16_t)w[k] | (uint32_t)(uint16_t)w[k + 1] << 16);
            for (int c = 0; c < 4; c++)
                a->wv[at * 4 + c] = a->wp[at];
        }
    }
    sd__free(all);
    sd__free(fl);
    return SD_OK;
oom:
    sd__free(all);
    sd__free(fl);
    axis_free(a);
    return SD_ENOMEM;
}

/* ---- the fixed-point passes ---- */

static inline int16_t sat16(int32_t v)
{
    return (int16_t)(v < -32768 ? -32768 : (v > 32767 ? 32767 : v));
}

#define SD__VROUND (1 << (SD__WBITS - SD__TBITS - 1))
#define SD__HROUND (1 << (SD__WBITS + SD__TBITS - 1))

/* Vertical: `taps` source rows (bytes) into one Q6 row of `len` int16,
 * elements from..len-1. */
static void vpass_scalar(const uint8_t *const *rows, const int16_t *w, uint32_t taps, int16_t *out, size_t from,
                         size_t len)
{
    for (size_t i = from; i < len; i++) {
        int32_t acc = 0;
        for (uint32_t k = 0; k < taps; k++)
            acc += rows[k][i] * w[k];
        out[i] = sat16((acc + SD__VROUND) >> (SD__WBITS - SD__TBITS));
    }
}

/* Horizontal: the Q6 row into output pixels from..m-1, rounded, clamped to
 * 0..255 and to each pixel's alpha. */
static void hpass_scalar(const int16_t *row, const sd__axis *ax, uint8_t *out, uint32_t from)
{
    const uint32_t taps = ax->taps;
    for (uint32_t x = from; x < ax->m; x++) {
        const int16_t *w = ax->w + (size_t)x * taps;
        const int16_t *p = row + (size_t)ax->first[x] * 4;
        int32_t acc[4] = {0, 0, 0, 0};
        for (uint32_t k = 0; k < taps; k++, p += 4)
            for (int c = 0; c < 4; c++)
                acc[c] += p[c] * w[k];
        uint8_t v[4];
        for (int c = 0; c < 4; c++) {
            int32_t r = sat16((acc[c] + SD__HROUND) >> (SD__WBITS + SD__TBITS));
            v[c] = (uint8_t)(r < 0 ? 0 : (r > 255 ? 255 : r));
        }
        for (int c = 0; c < 4; c++)
            if (c != SD__ALPHA_BYTE && v[c] > v[SD__ALPHA_BYTE])
                v[c] = v[SD__ALPHA_BYTE];
        memcpy(out + (size_t)x * 4, v, 4);
    }
}

#ifdef SD__RS_SSE2
/* The same sums with pmaddwd: rows k and k+1 interleaved, times the pair
 * (w_k, w_k+1). `taps` is even. */
static void vpass_sse2(const uint8_t *const *rows, const int32_t *wp, uint32_t taps, int16_t *out, size_t from,
                       size_t len)
{
    const __m128i zero = _mm_setzero_si128(), rnd = _mm_set1_epi32(SD__VROUND);
    size_t i = from;
    for (; i + 16 <= len; i += 16) {
        __m128i a0 = _mm_setzero_si128(), a1 = a0, a2 = a0, a3 = a0;
        for (uint32_t k = 0; k < taps; k += 2) {
            __m128i wk = _mm_set1_epi32(wp[k / 2]);
            __m128i r0 = _mm_loadu_si128((const __m128i *)(const void *)(rows[k] + i));
            __m128i r1 = _mm_loadu_si128((const __m128i *)(const void *)(rows[k + 1] + i));
            __m128i lo = _mm_unpacklo_epi8(r0, r1), hi = _mm_unpackhi_epi8(r0, r1); /* r0 r1 r0 r1 … bytes */
            a0 = _mm_add_epi32(a0, _mm_madd_epi16(_mm_unpacklo_epi8(lo, zero), wk));
            a1 = _mm_add_epi32(a1, _mm_madd_epi16(_mm_unpackhi_epi8(lo, zero), wk));
            a2 = _mm_add_epi32(a2, _mm_madd_epi16(_mm_unpacklo_epi8(hi, zero), wk));
            a3 = _mm_add_epi32(a3, _mm_madd_epi16(_mm_unpackhi_epi8(hi, zero), wk));
        }
        const int sh = SD__WBITS - SD__TBITS;
        a0 = _mm_srai_epi32(_mm_add_epi32(a0, rnd), sh);
        a1 = _mm_srai_epi32(_mm_add_epi32(a1, rnd), sh);
        a2 = _mm_srai_epi32(_mm_add_epi32(a2, rnd), sh);
        a3 = _mm_srai_epi32(_mm_add_epi32(a3, rnd), sh);
        _mm_storeu_si128((__m128i *)(void *)(out + i), _mm_packs_epi32(a0, a1));
        _mm_storeu_si128((__m128i *)(void *)(out + i + 8), _mm_packs_epi32(a2, a3));
    }
    for (; i < len; i++) { /* the tail, from the pairs */
        int32_t acc = 0;
        for (uint32_t k = 0; k < taps; k += 2)
            acc += rows[k][i] * (int16_t)(uint16_t)((uint32_t)wp[k / 2] & 0xFFFF) +
                   rows[k + 1][i] * (int16_t)(uint16_t)((uint32_t)wp[k / 2] >> 16);
        out[i] = sat16((acc + SD__VROUND) >> (SD__WBITS - SD__TBITS));
    }
}

/* The Q6 row as pairs of neighbours, channel by channel: pair j is
 * (p_j c0, p_j+1 c0, p_j c1, p_j+1 c1, …), what pmaddwd takes with the
 * weights (w_k, w_k+1), so the horizontal pass needs no shuffle. The last
 * pixel pairs with the zero padding pixel after the row. */
static void pair_row_sse2(const int16_t *row, __m128i *pairs, uint32_t n)
{
    for (uint32_t j = 0; j < n; j++) {
        __m128i a = _mm_loadl_epi64((const __m128i *)(const void *)(row + (size_t)j * 4));
        __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(row + (size_t)j * 4 + 4));
        _mm_storeu_si128(pairs + j, _mm_unpacklo_epi16(a, b));
    }
}

/* One output pixel: pairs first, first+2, … times the weight vectors. */
static inline __m128i hpixel_sse2(const __m128i *p, const __m128i *wv, uint32_t npairs)
{
    __m128i acc = _mm_set1_epi32(SD__HROUND), acc2 = _mm_setzero_si128();
    uint32_t k = 0;
    for (; k + 2 <= npairs; k += 2, p += 4, wv += 2) { /* two chains: fewer µops per tap */
        acc = _mm_add_epi32(acc, _mm_madd_epi16(_mm_loadu_si128(p), _mm_loadu_si128(wv)));
        acc2 = _mm_add_epi32(acc2, _mm_madd_epi16(_mm_loadu_si128(p + 2), _mm_loadu_si128(wv + 1)));
    }
    if (k < npairs)
        acc = _mm_add_epi32(acc, _mm_madd_epi16(_mm_loadu_si128(p), _mm_loadu_si128(wv)));
    return _mm_srai_epi32(_mm_add_epi32(acc, acc2), SD__WBITS + SD__TBITS);
}

static void hpass_sse2(const int16_t *row, const __m128i *pairs, const sd__axis *ax, uint8_t *out)
{
    const uint32_t np = ax->taps / 2;
    const __m128i *wv = (const __m128i *)(const void *)ax->wv;
    uint32_t x = 0;
    for (; x + 4 <= ax->m; x += 4) {
        __m128i p0 = hpixel_sse2(pairs + ax->first[x], wv + (size_t)x * np, np);
        __m128i p1 = hpixel_sse2(pairs + ax->first[x + 1], wv + (size_t)(x + 1) * np, np);
        __m128i p2 = hpixel_sse2(pairs + ax->first[x + 2], wv + (size_t)(x + 2) * np, np);
        __m128i p3 = hpixel_sse2(pairs + ax->first[x + 3], wv + (size_t)(x + 3) * np, np);
        /* int32 -> int16 (saturating, as sat16) -> 0..255 */
        __m128i px = _mm_packus_epi16(_mm_packs_epi32(p0, p1), _mm_packs_epi32(p2, p3));
        __m128i a = _mm_srli_epi32(px, 24); /* each pixel's alpha in every byte */
        a = _mm_or_si128(a, _mm_slli_epi32(a, 8));
        a = _mm_or_si128(a, _mm_slli_epi32(a, 16));
        _mm_storeu_si128((__m128i *)(void *)(out + (size_t)x * 4), _mm_min_epu8(px, a));
    }
    hpass_scalar(row, ax, out, x);
}

/* AVX2: the vertical pass 32 bytes at a time (the horizontal one stays
 * SSE2: one pixel per lane pair gains little). Chosen at run time. */
#if defined(__GNUC__) && !defined(SD_NO_AVX2)
#include <immintrin.h>
#define SD__RS_AVX2 1
__attribute__((target("avx2"))) static void vpass_avx2(const uint8_t *const *rows, const int32_t *wp, uint32_t taps,
                                                      int16_t *out, size_t len)
{
    const __m256i zero = _mm256_setzero_si256(), rnd = _mm256_set1_epi32(SD__VROUND);
    size_t i = 0;
    for (; i + 32 <= len; i += 32) {
        __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
        for (uint32_t k = 0; k < taps; k += 2) {
            __m256i wk = _mm256_set1_epi32(wp[k / 2]);
            __m256i r0 = _mm256_loadu_si256((const __m256i *)(const void *)(rows[k] + i));
            __m256i r1 = _mm256_loadu_si256((const __m256i *)(const void *)(rows[k + 1] + i));
            __m256i lo = _mm256_unpacklo_epi8(r0, r1), hi = _mm256_unpackhi_epi8(r0, r1); /* per 128-bit lane */
            a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_unpacklo_epi8(lo, zero), wk));
            a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_unpackhi_epi8(lo, zero), wk));
            a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(_mm256_unpacklo_epi8(hi, zero), wk));
            a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(_mm256_unpackhi_epi8(hi, zero), wk));
        }
        const int sh = SD__WBITS - SD__TBITS;
        a0 = _mm256_srai_epi32(_mm256_add_epi32(a0, rnd), sh); /* elements 0-3 | 16-19 */
        a1 = _mm256_srai_epi32(_mm256_add_epi32(a1, rnd), sh); /* 4-7 | 20-23 */
        a2 = _mm256_srai_epi32(_mm256_add_epi32(a2, rnd), sh); /* 8-11 | 24-27 */
        a3 = _mm256_srai_epi32(_mm256_add_epi32(a3, rnd), sh); /* 12-15 | 28-31 */
        __m256i x = _mm256_packs_epi32(a0, a1), y = _mm256_packs_epi32(a2, a3); /* 0-7 | 16-23, 8-15 | 24-31 */
        _mm256_storeu_si256((__m256i *)(void *)(out + i), _mm256_permute2x128_si256(x, y, 0x20));
        _mm256_storeu_si256((__m256i *)(void *)(out + i + 16), _mm256_permute2x128_si256(x, y, 0x31));
    }
    vpass_sse2(rows, wp, taps, out, i, len);
}
#endif
#endif

static int use_avx2(void)
{
#ifdef SD__RS_AVX2
    /* asked from every decoding thread: an atomic, written once with one value */
    static int known = -1;
    int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (k < 0) {
        k = __builtin_cpu_supports("avx2") ? 1 : 0;
        __atomic_store_n(&known, k, __ATOMIC_RELAXED);
    }
    return k;
#else
    return 0;
#endif
}

static int resample_fixed(const sd_bitmap *src, sd_bitmap *dst, int filter, double span_w, double span_h)
{
    sd__axis h, v;
    SD__FORWARD_IF_ERROR(axis_init(&h, src->width, dst->width, span_w, filter, 0));
    int rc = axis_init(&v, src->height, dst->height, span_h, filter, 0);
    if (rc < 0) {
        axis_free(&h);
        return rc;
    }
    const size_t len = (size_t)src->width * 4;
    /* the Q6 row, and one pixel of zeros after it (a padding tap's) */
    int16_t *row = sd__calloc(len + 4, sizeof *row);
    const uint8_t **rows = sd__malloc(sizeof *rows * v.taps);
#ifdef SD__RS_SSE2
    /* the row as neighbour pairs (pair_row_sse2), one more for a padding tap */
    __m128i *pairs = sd__calloc((size_t)src->width + 1, sizeof *pairs);
    if (pairs == NULL)
        rc = SD_ENOMEM;
#endif
    if (row == NULL || rows == NULL || rc < 0) {
        rc = SD_ENOMEM;
        goto done;
    }
    const int avx2 = use_avx2();
    for (uint32_t y = 0; y < dst->height; y++) {
        for (uint32_t k = 0; k < v.taps; k++) /* a padding tap past the last row reads the last (weight 0) */
            rows[k] = src->pixels + (size_t)SD__MIN(v.first[y] + k, src->height - 1) * src->stride;
        uint8_t *out = dst->pixels + (size_t)y * dst->stride;
#ifdef SD__RS_SSE2
        if (!force_scalar) {
            const int32_t *wp = v.wp + (size_t)y * (v.taps / 2);
#ifdef SD__RS_AVX2
            if (avx2)
                vpass_avx2(rows, wp, v.taps, row, len);
            else
#endif
                vpass_sse2(rows, wp, v.taps, row, 0, len);
            pair_row_sse2(row, pairs, src->width);
            hpass_sse2(row, pairs, &h, out);
            continue;
        }
#endif
        (void)avx2;
        vpass_scalar(rows, v.w + (size_t)y * v.taps, v.taps, row, 0, len);
        hpass_scalar(row, &h, out, 0);
    }
done:
#ifdef SD__RS_SSE2
    sd__free(pairs);
#endif
    sd__free(row);
    sd__free(rows);
    axis_free(&h);
    axis_free(&v);
    return rc;
}

/* ---- linear light (float) ---- */

static float to_linear[256];
static uint8_t to_srgb[4097]; /* linear 0..1 in 4096 steps -> sRGB byte */
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void make_tables(void)
{
    for (int i = 0; i < 256; i++) {
        double c = i / 255.0;
        to_linear[i] = (float)(c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4));
    }
    for (int i = 0; i <= 4096; i++) {
        double l = i / 4096.0;
        double c = l <= 0.0031308 ? l * 12.92 : 1.055 * pow(l, 1 / 2.4) - 0.055;
        to_srgb[i] = (uint8_t)lround(c * 255);
    }
}

/* One source row to premultiplied linear floats (alpha stays as it is). */
static void row_to_linear(const uint8_t *s, float *out, uint32_t w)
{
    for (uint32_t x = 0; x < w; x++, s += 4, out += 4) {
        uint32_t p;
        memcpy(&p, s, 4);
        uint32_t a = p >> 24;
        float af = (float)a / 255.0f;
        for (int c = 0; c < 3; c++) {
            uint32_t v = (p >> (8 * c)) & 0xFF; /* B, G, R of 0xAARRGGBB */
            uint32_t straight = a ? (v * 255 + a / 2) / a : 0;
            out[c] = to_linear[straight > 255 ? 255 : straight] * af;
        }
        out[3] = af;
    }
}

static int resample_linear(const sd_bitmap *src, sd_bitmap *dst, int filter, double span_w, double span_h)
{
    pthread_once(&tables_once, make_tables);
    sd__axis h, v;
    SD__FORWARD_IF_ERROR(axis_init(&h, src->width, dst->width, span_w, filter, 1));
    int rc = axis_init(&v, src->height, dst->height, span_h, filter, 1);
    if (rc < 0) {
        axis_free(&h);
        return rc;
    }
    const size_t len = (size_t)src->width * 4;
    /* a ring of converted source rows: slot r % taps holds row r */
    float *ring = sd__malloc(sizeof *ring * len * v.taps);
    int64_t *held = sd__malloc(sizeof *held * v.taps);
    float *row = sd__calloc(len + 4, sizeof *row); /* + a zero pixel for a padding tap */
    if (ring == NULL || held == NULL || row == NULL) {
        rc = SD_ENOMEM;
        goto done;
    }
    for (uint32_t k = 0; k < v.taps; k++)
        held[k] = -1;
    for (uint32_t y = 0; y < dst->height; y++) {
        const float *wy = v.wf + (size_t)y * v.taps;
        memset(row, 0, sizeof *row * len);
        for (uint32_t k = 0; k < v.taps; k++) {
            if (wy[k] == 0) /* a padding tap may lie past the last row */
                continue;
            uint32_t r = v.first[y] + k, slot = r % v.taps;
            float *sr = ring + (size_t)slot * len;
            if (held[slot] != r) {
                row_to_linear(src->pixels + (size_t)r * src->stride, sr, src->width);
                held[slot] = r;
            }
            for (size_t i = 0; i < len; i++)
                row[i] += sr[i] * wy[k];
        }
        uint8_t *out = dst->pixels + (size_t)y * dst->stride;
        for (uint32_t x = 0; x < dst->width; x++) {
            const float *wx = h.wf + (size_t)x * h.taps;
            const float *p = row + (size_t)h.first[x] * 4;
            float acc[4] = {0, 0, 0, 0};
            for (uint32_t k = 0; k < h.taps; k++, p += 4)
                for (int c = 0; c < 4; c++)
                    acc[c] += p[c] * wx[k];
            float af = acc[3] < 0 ? 0 : (acc[3] > 1 ? 1 : acc[3]);
            uint32_t a = (uint32_t)lrintf(af * 255), ch[3] = {0, 0, 0};
            if (a > 0)
                for (int c = 0; c < 3; c++) {
                    float l = acc[c] / af;
                    l = l < 0 ? 0 : (l > 1 ? 1 : l);
                    ch[c] = to_srgb[(int)lrintf(l * 4096)];
                }
            uint32_t px = sd__pack_premul(ch[2], ch[1], ch[0], a);
            memcpy(out + (size_t)x * 4, &px, 4);
        }
    }
done:
    sd__free(ring);
    sd__free(held);
    sd__free(row);
    axis_free(&h);
    axis_free(&v);
    return rc;
}

static int resample_span(const sd_bitmap *src, sd_bitmap *dst, int filter, unsigned flags, double span_w,
                         double span_h)
{
    SD__RETURN_IF(filter < SD_FILTER_LANCZOS3 || filter > SD_FILTER_BOX, SD_EINVAL);
    SD__RETURN_IF(flags & ~SD_RESAMPLE_LINEAR, SD_EINVAL);
    SD__RETURN_IF(!(span_w > 0 && span_w <= src->width && span_h > 0 && span_h <= src->height), SD_EINVAL);
    if (flags & SD_RESAMPLE_LINEAR)
        return resample_linear(src, dst, filter, span_w, span_h);
    return resample_fixed(src, dst, filter, span_w, span_h);
}

int sd__resample(const sd_bitmap *src, sd_bitmap *dst, int filter, unsigned flags)
{
    return resample_span(src, dst, filter, flags, src->width, src->height);
}

int sd__resample_span(const sd_bitmap *src, uint32_t width, uint32_t height, int filter, unsigned flags,
                      double span_w, double span_h, sd_bitmap **out)
{
    SD__RETURN_IF(out == NULL, SD_EINVAL);
    *out = NULL;
    SD__RETURN_IF(src == NULL || width == 0 || height == 0, SD_EINVAL);
    if (width == src->width && height == src->height && span_w == src->width && span_h == src->height)
        return sd__bitmap_copy(src, out);
    sd_bitmap *dst;
    SD__FORWARD_IF_ERROR(sd__bitmap_alloc(width, height, 0, &dst));
    int rc = resample_span(src, dst, filter, flags, span_w, span_h);
    if (rc < 0) {
        sd_bitmap_free(dst);
        return rc;
    }
    *out = dst;
    return SD_OK;
}

int sd_bitmap_resample(const sd_bitmap *src, uint32_t width, uint32_t height, sd_filter filter,
                       unsigned flags, sd_bitmap **out)
{
    SD__RETURN_IF(out == NULL, SD_EINVAL);
    *out = NULL;
    SD__RETURN_IF(src == NULL || width == 0 || height == 0, SD_EINVAL);
    SD__RETURN_IF((int)filter < SD_FILTER_LANCZOS3 || filter > SD_FILTER_BOX, SD_EINVAL);
    SD__RETURN_IF(flags & ~SD_RESAMPLE_LINEAR, SD_EINVAL);
    return sd__resample_span(src, width, height, (int)filter, flags, src->width, src->height, out);
}

int sd_bitmap_scale(const sd_bitmap *src, uint32_t width, uint32_t height, sd_bitmap **out)
{
    return sd_bitmap_resample(src, width, height, SD_FILTER_LANCZOS3, 0, out);
}
