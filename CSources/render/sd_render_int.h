/* sd_render_int.h — what the decoder needs of the render planner
 * (sd_render.c): the turn a plan applies, rectangles mapped back to the
 * stored pixels, and the last step (the crop to the box, extending and
 * padding) drawn on the scaled, upright image. */
#ifndef SD_RENDER_INT_H
#define SD_RENDER_INT_H

#include "bitmap/sd_bitmap_int.h"
#include "sdcore/sd_render.h"

/* The one orientation (1..8) that is the EXIF one (when auto_rotate), then
 * `rotate` degrees clockwise, then the flips. */
SD__HIDDEN int sd__render_orientation(int exif, int auto_rotate, int rotate, int flip_x, int flip_y);

/* `r`, a rectangle of the image that `orientation` makes of a `width` x
 * `height` stored one, in the stored pixels. */
SD__HIDDEN sd_rect sd__render_rect_to_stored(int orientation, uint32_t width, uint32_t height, sd_rect r);

/* SD_GRAVITY_SMART: the box's cut moved to where `scaled` (the plan's
 * scaled image, upright) is busiest, on each side it is shorter. */
SD__HIDDEN int sd__render_smart_cut(const sd_bitmap *scaled, sd_render_plan *plan);

/* 1 when the plan has a last step: a crop of the scaled image, or a canvas
 * larger than it. */
SD__HIDDEN int sd__render_composes(const sd_render_plan *plan);

/* The result: `scaled` (plan->scaled_width x _height, upright) cut and
 * placed on a canvas of `background` (0xAARRGGBB, straight). */
SD__HIDDEN int sd__render_compose(const sd_bitmap *scaled, const sd_render_plan *plan, uint32_t background,
                                  sd_bitmap **out);

#endif
