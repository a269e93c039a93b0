/* sd_color_table.h — a LUT-based profile's transform to sRGB, sampled once
 * from lcms2's unoptimised float evaluation into a table of our own
 * (sd_color_table.c): used for RGB LUT profiles and CMYK profiles, where
 * lcms2's precalculated 8- and 16-bit tables err by up to 23 levels. */
#ifndef SD_COLOR_TABLE_H
#define SD_COLOR_TABLE_H

#include <stdint.h>

#include <lcms2.h>

#include "common/sd_internal.h"

typedef struct sd__ctab sd__ctab;

/* The table of `src` (an RGB or CMYK device profile) to sRGB, relative
 * colorimetric, no black-point compensation; `inverted`: CMYK bytes are
 * stored inverted (Adobe's, 255 = no ink). NULL if lcms2 cannot make the
 * transform or memory runs out. */
SD__HIDDEN sd__ctab *sd__ctab_new(cmsHPROFILE src, int inverted);
SD__HIDDEN void sd__ctab_free(sd__ctab *t);
/* An RGB table: `n` native ARGB32 pixels (straight colour) to sRGB in
 * place, alpha kept. */
SD__HIDDEN void sd__ctab_rgb(const sd__ctab *t, uint32_t *row, uint32_t n);
/* A CMYK table: `n` pixels of C, M, Y, K bytes (as stored) to opaque
 * native ARGB32 sRGB `out` (which may be `cmyk` itself). */
SD__HIDDEN void sd__ctab_cmyk(const sd__ctab *t, const uint8_t *cmyk, uint32_t *out, uint32_t n);
/* Tests: a uniform 7-point grid, not aligned with the profile's (what a
 * coarser table errs by); returns the old setting. */
SD__HIDDEN int sd__ctab_coarse(int on);

#endif
