/*
 * sd_orientation.h — EXIF orientation: parse it, apply it to a bitmap.
 *
 * Values follow the EXIF/TIFF tag 0x0112: 1 = upright, 2 = mirrored
 * horizontally, 3 = rotated 180, 4 = mirrored vertically, 5 = transposed
 * (mirror + 90 CCW), 6 = rotate 90 CW to display, 7 = transverse
 * (mirror + 90 CW), 8 = rotate 90 CCW to display. Anything else means 1.
 * All functions here are pure and thread-safe.
 */
#ifndef SDCORE_SD_ORIENTATION_H
#define SDCORE_SD_ORIENTATION_H

#include "sd_bitmap.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sd_orientation {
    SD_ORIENTATION_UP = 1,
    SD_ORIENTATION_UP_MIRRORED = 2,
    SD_ORIENTATION_DOWN = 3,
    SD_ORIENTATION_DOWN_MIRRORED = 4,
    SD_ORIENTATION_LEFT_MIRRORED = 5,
    SD_ORIENTATION_RIGHT = 6,
    SD_ORIENTATION_RIGHT_MIRRORED = 7,
    SD_ORIENTATION_LEFT = 8
} sd_orientation;

/*
 * Name: sd_exif_orientation
 * Desc: Read tag 0x0112 from IFD0 of an EXIF payload. `data` may start with
 *       the JPEG APP1 "Exif\0\0" header or directly with the TIFF header
 *       ("II*\0" / "MM\0*", as in a PNG eXIf chunk). Every offset is bounds-
 *       checked; hostile input (loops, offsets past the end, huge counts,
 *       wrong types, values outside 1..8) yields 1.
 * Returns: the orientation, 1..8. Never fails.
 */
SD_API int sd_exif_orientation(const uint8_t *data, size_t length);

/*
 * Name: sd_orientation_swaps_axes
 * Desc: Whether applying `orientation` exchanges width and height.
 * Returns: 1 for 5..8, else 0.
 */
SD_API int sd_orientation_swaps_axes(int orientation);

/*
 * Name: sd_bitmap_orient
 * Desc: Apply an EXIF orientation: the result is the upright image. For 1
 *       (or an invalid value) the result is a copy.
 * Returns: SD_OK, SD_EINVAL, SD_ENOMEM. `*out` is new and owned by the caller.
 */
SD_API int sd_bitmap_orient(const sd_bitmap *src, int orientation,
                            sd_bitmap **out);

#ifdef __cplusplus
}
#endif
#endif /* SDCORE_SD_ORIENTATION_H */
