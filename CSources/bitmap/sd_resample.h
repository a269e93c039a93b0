/* sd_resample.h — the one resampler (sd_resample.c): every path that changes
 * a bitmap's size (the decoder's output, sd_bitmap_scale/_resample, so every
 * Swift resize) goes through sd__resample. */
#ifndef SD_RESAMPLE_H
#define SD_RESAMPLE_H

#include "bitmap/sd_bitmap_int.h"

/* Resample premultiplied `src` into `dst` (allocated by the caller at the
 * output size) with `filter` (sd_filter) and `flags` (SD_RESAMPLE_*). */
SD__HIDDEN int sd__resample(const sd_bitmap *src, sd_bitmap *dst, int filter, unsigned flags);

/* Tests: 1 forces the portable scalar path (the vector path must give the
 * same bytes); returns the previous setting. Not thread-safe: tests only. */
SD__HIDDEN int sd__resample_force_scalar(int on);

#endif
