/*
 * sd_rsvg_abi.h — the part of librsvg's, cairo's and GLib's C interface
 * the SVG codec calls, declared here: SwiftPM gives a C target a library's
 * include paths only together with its link, and the codec loads librsvg
 * on first use (common/sd_dl.h), so SwiftPM's SVG target compiles against
 * this (SD_RSVG_OWN_ABI) instead of <librsvg/rsvg.h>.
 *
 * Checked on every CMake build: sd_svg.c includes the real headers first
 * and then this file with SD_RSVG_REAL_HEADERS, so each prototype below
 * must be compatible with the real declaration (a conflicting one does not
 * compile) and the layouts and values asserted at the end must hold for
 * the real types. Everything here has been stable since librsvg 2.52,
 * cairo 1.0 and GLib 2.0.
 */
#ifndef SD_RSVG_ABI_H
#define SD_RSVG_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifndef SD_RSVG_REAL_HEADERS
typedef int gboolean;
typedef double gdouble;
typedef long gssize;
typedef void *gpointer;
typedef void (*GDestroyNotify)(gpointer data);
typedef struct _GError {
    uint32_t domain; /* GQuark */
    int code;
    char *message;
} GError;
typedef struct _GInputStream GInputStream;
typedef struct _GFile GFile;
typedef struct _GCancellable GCancellable;
typedef struct _RsvgHandle RsvgHandle;
typedef enum { RSVG_HANDLE_FLAGS_NONE = 0 } RsvgHandleFlags;
typedef enum { RSVG_UNIT_PERCENT = 0 } RsvgUnit; /* more units follow; only stored here */
typedef struct {
    double length;
    RsvgUnit unit;
} RsvgLength;
typedef struct {
    double x, y, width, height;
} RsvgRectangle;
typedef struct _cairo cairo_t;
typedef struct _cairo_surface cairo_surface_t;
typedef enum { CAIRO_STATUS_SUCCESS = 0, CAIRO_STATUS_NO_MEMORY = 1 } cairo_status_t;
typedef enum { CAIRO_FORMAT_ARGB32 = 0 } cairo_format_t;
#endif

void g_error_free(GError *error);
GInputStream *g_memory_input_stream_new_from_data(const void *data, gssize len, GDestroyNotify destroy);
void g_object_unref(gpointer object);

RsvgHandle *rsvg_handle_new_from_stream_sync(GInputStream *input_stream, GFile *base_file, RsvgHandleFlags flags,
                                             GCancellable *cancellable, GError **error);
void rsvg_handle_set_dpi(RsvgHandle *handle, double dpi);
gboolean rsvg_handle_get_intrinsic_size_in_pixels(RsvgHandle *handle, gdouble *out_width, gdouble *out_height);
void rsvg_handle_get_intrinsic_dimensions(RsvgHandle *handle, gboolean *out_has_width, RsvgLength *out_width,
                                          gboolean *out_has_height, RsvgLength *out_height,
                                          gboolean *out_has_viewbox, RsvgRectangle *out_viewbox);
gboolean rsvg_handle_get_geometry_for_element(RsvgHandle *handle, const char *id, RsvgRectangle *out_ink_rect,
                                              RsvgRectangle *out_logical_rect, GError **error);
gboolean rsvg_handle_render_document(RsvgHandle *handle, cairo_t *cr, const RsvgRectangle *viewport,
                                     GError **error);

cairo_surface_t *cairo_image_surface_create_for_data(unsigned char *data, cairo_format_t format, int width,
                                                     int height, int stride);
void cairo_surface_flush(cairo_surface_t *surface);
void cairo_surface_destroy(cairo_surface_t *surface);
cairo_t *cairo_create(cairo_surface_t *target);
void cairo_destroy(cairo_t *cr);
void cairo_scale(cairo_t *cr, double sx, double sy);
void cairo_translate(cairo_t *cr, double tx, double ty);
cairo_status_t cairo_status(cairo_t *cr);
const char *cairo_status_to_string(cairo_status_t status);

/* The layouts and values the codec relies on (the real ones, in CMake). */
_Static_assert(sizeof(gboolean) == sizeof(int) && sizeof(gssize) == sizeof(long), "GLib's scalar types");
_Static_assert(offsetof(GError, code) == 4 && offsetof(GError, message) == sizeof(void *), "GError's layout");
_Static_assert(sizeof(RsvgRectangle) == 4 * sizeof(double) && offsetof(RsvgRectangle, width) == 2 * sizeof(double),
               "RsvgRectangle's layout");
_Static_assert(offsetof(RsvgLength, unit) == sizeof(double) && sizeof(RsvgLength) == 2 * sizeof(double),
               "RsvgLength's layout");
_Static_assert(sizeof(RsvgUnit) == sizeof(int) && sizeof(RsvgHandleFlags) == sizeof(int) &&
                   sizeof(cairo_status_t) == sizeof(int) && sizeof(cairo_format_t) == sizeof(int),
               "enums passed by value are ints");
_Static_assert(RSVG_HANDLE_FLAGS_NONE == 0 && CAIRO_STATUS_SUCCESS == 0 && CAIRO_STATUS_NO_MEMORY == 1 &&
                   CAIRO_FORMAT_ARGB32 == 0,
               "the values the codec passes and compares");

#endif /* SD_RSVG_ABI_H */
