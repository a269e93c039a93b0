/* sd_color.h — colour management (sd_color.c, lcms2): what a codec found
 * about its colours, and the conversion to sRGB the decoder's front end
 * runs on the smallest bitmap (after shrink-on-load and resampling). A
 * context of its own (sd__color, one per decoder): colour knows no
 * decoder; the decoder hands it what it needs (whether to manage, where
 * warnings go, whether a canvas is full size). */
#ifndef SD_COLOR_H
#define SD_COLOR_H

#include "bitmap/sd_bitmap_int.h"

typedef struct sd__xform sd__xform;

/* A decoder's colour facts; zeroed = untagged (sRGB). */
typedef struct sd__color {
    int space;           /* sd_color_space */
    uint8_t *icc;        /* the embedded profile (owned), or NULL */
    size_t icc_len;
    double chrm[8];      /* PNG cHRM: white x,y, red x,y, green x,y, blue x,y (0: none) */
    double gamma;        /* PNG gAMA as stored (1/2.2 = 0.45455), 0: none */
    int cicp_primaries, cicp_transfer;
    int decided;         /* a source said sRGB: later (weaker) ones are ignored */
    int resolved;        /* `xf` looked up (NULL then: nothing to do) */
    sd__xform *xf;
    int rows_done;       /* the codec converts its canvas's rows as it writes them:
                          * its canvas (and what is resampled from it) is sRGB */
    int cmyk_inverted;   /* SD_COLOR_CMYK: stored inverted (an Adobe APP14 JPEG) */
    int manage;          /* convert at all (SD_DEC_COLOR_MANAGE) */
    /* a source that cannot be honoured: why (static text), to the owner */
    void (*warn)(void *ctx, const char *why);
    void *warn_ctx;
} sd__color;

/* Profiles larger than this are ignored with a warning. */
#define SD__ICC_MAX ((size_t)4 << 20)

/* What a codec reports; each is ignored once a higher-precedence source
 * was set (cICP > iCCP > sRGB > cHRM/gAMA for PNG; a codec calls them in
 * that order of trust). A bad or oversized profile: a warning, sRGB. */
SD__HIDDEN void sd__color_set_icc(sd__color *c, const uint8_t *icc, size_t len);
SD__HIDDEN void sd__color_set_srgb(sd__color *c);
SD__HIDDEN void sd__color_set_chrm_gama(sd__color *c, const double chrm[8], double gamma);
SD__HIDDEN void sd__color_set_cicp(sd__color *c, int primaries, int transfer);

/* Convert `b` (premultiplied, owned by the caller) to sRGB in place when
 * the decoder's source needs it and SD_DEC_COLOR_MANAGE is on. SD_OK when
 * nothing was to be done too; SD_ENOMEM. */
SD__HIDDEN int sd__color_convert(sd__color *c, sd_bitmap *b);
/* 1 when sd__color_convert would change pixels. */
SD__HIDDEN int sd__color_needed(sd__color *c);
/* 1 when the front end still has to convert the codec's picture (needed,
 * and the codec does not convert its rows itself). */
SD__HIDDEN int sd__color_pending(sd__color *c);
/* A codec that writes a full-size canvas (load size = output size: no
 * resampling to wait for: `full_size`) may convert each row while it is
 * still in the cache, instead of the front end converting the whole bitmap
 * after it: sd__color_rows_begin() says whether to (and sets rows_done), then
 * sd__color_rows() converts rows of ARGB32 in place (`opaque`: the codec
 * knows every pixel is, so no row is looked at first). */
SD__HIDDEN int sd__color_rows_begin(sd__color *c, int full_size);
SD__HIDDEN int sd__color_rows(sd__color *c, uint8_t *const *rows, uint32_t n, uint32_t width, int opaque);
/* A codec that has straight RGBA rows (PNG with alpha) converts them
 * before premultiplying, at full size: sd__color_straight_begin() says
 * whether (as sd__color_rows_begin), then sd__color_straight_row() turns
 * `n` pixels of `rgba` into `out` (may be `rgba`), `words` a scratch row
 * of `n`. */
SD__HIDDEN int sd__color_straight_begin(sd__color *c, int full_size);
SD__HIDDEN int sd__color_straight_row(sd__color *c, const uint8_t *rgba, uint8_t *out, uint32_t n,
                                      uint32_t *words);
SD__HIDDEN void sd__color_free(sd__color *c);
/* Drop the cached transforms no decoder uses (registered with common/'s
 * sd__register_drain once a transform is cached). */
SD__HIDDEN void sd__color_cache_drain(void);
/* Give back a transform (the cache frees it once unused and evicted). */
SD__HIDDEN void sd__xform_release(sd__xform *x);
/* A 16-bit source whose colours need converting: sd__color_rows16_begin()
 * says whether (and sets rows_done: the codec's canvas is sRGB, whatever
 * resampling follows); sd__color_row16() turns `n` straight RGBA16
 * pixels into straight 8-bit sRGB RGBA (`buf`: 8 floats a pixel), so
 * the reduction to 8 bits comes after the conversion. */
SD__HIDDEN int sd__color_rows16_begin(sd__color *c);
SD__HIDDEN void sd__color_row16(sd__color *c, const uint16_t *rgba, uint8_t *out, uint32_t n, float *buf);
/* A CMYK JPEG with a CMYK profile: sd__color_cmyk_begin() says whether
 * the profile can be applied (colour management on, a usable CMYK
 * profile; else a warning, and the codec's own inverted-CMYK conversion
 * stays); sd__color_cmyk_rows() then turns rows of C, M, Y, K bytes (as
 * libjpeg writes them) into opaque ARGB32 in place. */
SD__HIDDEN int sd__color_cmyk_begin(sd__color *c, int inverted);
SD__HIDDEN int sd__color_cmyk_rows(sd__color *c, uint8_t *const *rows, uint32_t n, uint32_t width);
/* Tests: the portable loop only (returns the old setting). */
SD__HIDDEN int sd__color_force_scalar(int on);
/* Tests: what the colour tests must catch, on (1) or off (0) — coarse
 * tables (SD__COLOR_MUTATE_COARSE) or translucent PNG rows converted from
 * premultiplied bytes (SD__COLOR_MUTATE_PREMULTIPLIED); cached transforms
 * are dropped. */
#define SD__COLOR_MUTATE_COARSE 1
#define SD__COLOR_MUTATE_PREMULTIPLIED 2
SD__HIDDEN void sd__color_mutate(int which);

#endif
