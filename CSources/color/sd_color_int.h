/* sd_color_int.h — inside color/: a cached transform, and our own path for
 * matrix/TRC sources (sd_color_fast.c). */
#ifndef SD_COLOR_INT_H
#define SD_COLOR_INT_H

#include <lcms2.h>

#include "color/sd_color.h"
#include "color/sd_color_table.h"

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
    uint8_t enc[SD__ENC_STEPS + 4]; /* + 3 zeros: the AVX2 path reads 32 bits at each step */
    int refs;             /* users now, plus 1 while cached */
};

/* Our own path for an RGB matrix/TRC source: fills x->tab and x->enc and
 * sets x->fast, or leaves x alone (lcms2's then). */
SD__HIDDEN void sd__color_make_fast(sd__xform *x, cmsHPROFILE src, cmsHPROFILE srgb);
/* Opaque native ARGB32 pixels through it, in place. */
SD__HIDDEN void sd__color_convert_fast(const sd__xform *x, uint32_t *row, uint32_t w);

#endif
