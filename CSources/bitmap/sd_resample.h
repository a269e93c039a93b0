/* sd_resample.h — the one resampler (sd_resample.c): every path that changes
 * a bitmap's size (the decoder's output, sd_bitmap_scale/_resample, so every
 * Swift resize) goes through sd__resample. */
#ifndef SD_RESAMPLE_H
#define SD_RESAMPLE_H

#include "bitmap/sd_bitmap_int.h"

/* Resample premultiplied `src` into `dst` (allocated by the caller at the
 * output size) with `filter` (sd_filter) and `flags` (SD_RESAMPLE_*). */
SD__HIDDEN int sd__resample(const sd_bitmap *src, sd_bitmap *dst, int filter, unsigned flags);

/* A new `width` x `height` bitmap of `src` resampled as sd__resample does,
 * mapping the output onto the top-left `span_w` x `span_h` of `src` (0 <
 * span <= size, in src pixels): the part that holds the picture when a
 * shrunk-on-load canvas's last column or row holds less than a pixel (a
 * JPEG of 1411 columns decoded at 1/2 is 706 columns covering 705.5).
 * Equal sizes and whole spans: a copy. */
SD__HIDDEN int sd__resample_span(const sd_bitmap *src, uint32_t width, uint32_t height, int filter,
                                 unsigned flags, double span_w, double span_h, sd_bitmap **out);

/* Tests: 1 forces the portable scalar path (the vector path must give the
 * same bytes); returns the previous setting. Not thread-safe: tests only. */
SD__HIDDEN int sd__resample_force_scalar(int on);

#endif
