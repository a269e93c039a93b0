/*
 * sd_render.h — one render plan: what a thumbnail or a served image is made
 * of, typed, planned once from the source's size and orientation, and
 * executed by the decoder (shrinking on load for every resize type).
 *
 *     sd_render r;
 *     sd_render_init(&r);
 *     r.width = 256; r.height = 256; r.resize = SD_RESIZE_FILL;
 *     sd_decoder_set_render(d, &r);    // before the first push
 *     ... push, finish, take: a 256 x 256 bitmap, cropped by the gravity
 *
 * The order is imgproxy's (and libvips' thumbnail's): the source is turned
 * upright (its EXIF orientation unless auto_rotate is 0, then `rotate`
 * quarter turns clockwise, then flipped), cropped to `crop_*` (in source
 * pixels), scaled by the resize type into the box (width x height times
 * dpr, times zoom), cropped to the box (fill, fill-down, auto), extended to
 * the box or its aspect ratio, then padded. Extended and padded areas hold
 * `background`. The decoder reads only the reduction of the source that
 * the scale needs (a JPEG's DCT scaling, a WebP's or PNG's shrink) and
 * resamples just the part of it the result shows.
 */
#ifndef SDCORE_SD_RENDER_H
#define SDCORE_SD_RENDER_H

#include "sd_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the image meets the box (imgproxy's resizing types). */
typedef enum sd_resize {
    SD_RESIZE_FIT = 0,       /* inside the box, aspect kept */
    SD_RESIZE_FILL = 1,      /* covers the box, the overflow cropped by the gravity */
    SD_RESIZE_FILL_DOWN = 2, /* fill, never enlarged: a smaller source keeps the box's aspect */
    SD_RESIZE_FORCE = 3,     /* stretched to the box */
    SD_RESIZE_AUTO = 4       /* fill when source and box have the same orientation, else fit */
} sd_resize;

/* Where a crop keeps the image, or an extended image sits. */
typedef enum sd_gravity_type {
    SD_GRAVITY_CENTER = 0,
    SD_GRAVITY_NORTH = 1,
    SD_GRAVITY_SOUTH = 2,
    SD_GRAVITY_EAST = 3,
    SD_GRAVITY_WEST = 4,
    SD_GRAVITY_NORTH_EAST = 5,
    SD_GRAVITY_NORTH_WEST = 6,
    SD_GRAVITY_SOUTH_EAST = 7,
    SD_GRAVITY_SOUTH_WEST = 8,
    SD_GRAVITY_FOCUS_POINT = 9, /* x, y: the point to keep in the middle, fractions 0..1 */
    SD_GRAVITY_SMART = 10       /* the box's cut only: where the scaled image is busiest
                                 * (edges and saturated colour), like libvips' attention */
} sd_gravity_type;

/* A gravity and its offsets from the gravity's edge (inwards; the centre's
 * move right and down): 1 or more are CSS pixels (times dpr, except for the
 * source crop's, which are source pixels), below 1 a fraction of the side. */
typedef struct sd_gravity {
    int type; /* sd_gravity_type */
    double x, y;
} sd_gravity;

typedef struct sd_render {
    uint32_t width, height; /* the box in CSS pixels; 0: unbounded on that side */
    int resize;             /* sd_resize */
    int enlarge;            /* 0: never larger than the source (or its crop) */
    double dpr;             /* device pixels per CSS pixel, > 0 (1) */
    double zoom_x, zoom_y;  /* the scale's multipliers, > 0 (1) */
    uint32_t min_width, min_height; /* the scaled image at least this (CSS pixels); 0: none */
    double crop_width, crop_height; /* the area of the source kept first: 1 or more
                                     * source pixels, below 1 a fraction, 0 all */
    int crop_gravity_set;           /* 0: the crop goes by `gravity` */
    sd_gravity crop_gravity;
    sd_gravity gravity;             /* the fill crop's */
    int extend;                     /* the result filled out to the box ... */
    sd_gravity extend_gravity;
    int extend_aspect;              /* ... or to the box's aspect ratio */
    sd_gravity extend_aspect_gravity;
    uint32_t pad_top, pad_right, pad_bottom, pad_left; /* CSS pixels, after everything */
    int auto_rotate;                /* apply the EXIF orientation (1) */
    int rotate;                     /* degrees clockwise: 0, 90, 180, 270 */
    int flip_x, flip_y;             /* mirrored left-right, top-bottom, after the rotation */
    uint32_t background;            /* 0xAARRGGBB, straight alpha: extended and padded areas */
    int64_t max_result_pixels;      /* width * height of the result; beyond: SD_ETOOLARGE; 0: none */
    int64_t max_result_side;        /* either side of the result; 0: none */
} sd_render;

/* A rectangle in pixels. */
typedef struct sd_rect {
    int64_t x, y, width, height;
} sd_rect;

/* The plan for one source: every size and place, in pixels. */
typedef struct sd_render_plan {
    int orientation;            /* the one turn applied to the stored pixels (1..8) */
    uint32_t upright_width, upright_height; /* the source after it */
    sd_rect area;               /* the part of the upright source that is scaled */
    uint32_t scaled_width, scaled_height;   /* `area` scaled */
    sd_rect cut;                /* the part of the scaled area the result shows */
    uint32_t width, height;     /* the result, after extending and padding */
    int64_t place_x, place_y;   /* where `cut` sits in the result */
} sd_render_plan;

/*
 * Name: sd_render_init
 * Desc: Every field to its default: no box (full size), fit, dpr and zoom 1,
 *       the EXIF orientation applied, transparent background, no limits.
 */
SD_API void sd_render_init(sd_render *render);

/*
 * Name: sd_render_plan_for
 * Desc: Plan `render` for a source of `width` x `height` pixels as stored,
 *       with EXIF `orientation` (1..8; anything else is 1). Pure.
 * Returns: SD_OK; SD_EINVAL for a bad argument or field (dpr or zoom not
 *          above 0, a rotation not a multiple of 90, a resize type or
 *          gravity out of range); SD_ETOOLARGE when the result passes
 *          max_result_pixels or max_result_side, or a side passes 2^30.
 * Since: 0.10
 */
SD_API int sd_render_plan_for(const sd_render *render, uint32_t width, uint32_t height, int orientation,
                              sd_render_plan *out);

#ifdef __cplusplus
}
#endif

#endif
