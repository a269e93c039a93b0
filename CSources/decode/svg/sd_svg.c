/*
 * sd_svg.c — SVG on librsvg (Debian 12: 2.54, drawing through cairo): an
 * optional codec row. librsvg brings cairo and GLib, so a build chooses:
 * CMake compiles this file into libsdcore when SDCORE_WITH_SVG is on (the
 * registry names sd__svg_codec, SD_WITH_SVG); SwiftPM compiles it into its
 * own target (CSDCoreSVG, SD_SVG_PLUG), which plugs the row into the
 * registry when the program links it — a program without it still names
 * SVG when it refuses one.
 *
 * An SVG is rendered when input ends (librsvg needs the whole document):
 * at the requested size — vector stays sharp, so a box larger than the
 * document scales it up — else at the document's own size (width/height,
 * else its viewBox, at 96 dpi), scaled down to fit SD_DEC_MAX_PIXELS and
 * SD_DEC_MAX_DIMENSION. cairo's CAIRO_FORMAT_ARGB32 is our pixel layout
 * (premultiplied, native byte order), so it draws straight into the
 * canvas.
 *
 * An SVG is untrusted, code-like input:
 * - No external reference is followed: librsvg, given no base URL, refuses
 *   every reference but data: URLs; a data: URL anywhere but an <image>'s
 *   href (an inline image) is refused here before librsvg sees it.
 * - Entities and elements are bounded: librsvg's own limits (libxml2's
 *   entity amplification limit, 1,000,000 elements loaded, 500,000
 *   references followed) stay on, and a document with more than
 *   SD__SVG_MAX_ELEMENTS elements or SD__SVG_MAX_BYTES bytes is refused
 *   first.
 * - A render deadline (SD_DEC_RENDER_DEADLINE_MS): the picture is drawn in
 *   bands of four megapixels and the clock read between bands; past the
 *   deadline the decode fails with SD_ETOOLARGE. One band is not
 *   interrupted (librsvg 2.54 cannot be), so the deadline is kept to
 *   within one band's time.
 */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#ifdef SD_RSVG_OWN_ABI /* SwiftPM: no include paths for librsvg */
#include "decode/svg/sd_rsvg_abi.h"
#else
#include <librsvg/rsvg.h>
#define SD_RSVG_REAL_HEADERS /* and the declarations SwiftPM uses, checked against them */
#include "decode/svg/sd_rsvg_abi.h"
#endif

#include "common/sd_dl.h"
#include "decode/sd_decoder_int.h"

/* The functions of librsvg (and of cairo and GLib, which it brings) this
 * file calls, loaded on first use (common/sd_dl.h): found through
 * librsvg's handle, which loads its dependencies. */
#define SD__RSVG_FNS(X) \
    X(cairo_create) \
    X(cairo_destroy) \
    X(cairo_image_surface_create_for_data) \
    X(cairo_scale) \
    X(cairo_status) \
    X(cairo_status_to_string) \
    X(cairo_surface_destroy) \
    X(cairo_surface_flush) \
    X(cairo_translate) \
    X(g_error_free) \
    X(g_memory_input_stream_new_from_data) \
    X(g_object_unref) \
    X(rsvg_handle_get_geometry_for_element) \
    X(rsvg_handle_get_intrinsic_dimensions) \
    X(rsvg_handle_get_intrinsic_size_in_pixels) \
    X(rsvg_handle_new_from_stream_sync) \
    X(rsvg_handle_render_document) \
    X(rsvg_handle_set_dpi)
#ifndef SD_RSVG_SONAME /* as SD_HEIF_SONAME (sd_heic.c) */
#define SD_RSVG_SONAME "librsvg-2.so.2"
#endif
SD__DL_TABLE(rsvg, SD__RSVG_FNS, "SDCORE_RSVG_LIBRARY", SD_RSVG_SONAME, "librsvg-2.so");
#define cairo_create SD__DL_FN(rsvg, cairo_create)
#define cairo_destroy SD__DL_FN(rsvg, cairo_destroy)
#define cairo_image_surface_create_for_data SD__DL_FN(rsvg, cairo_image_surface_create_for_data)
#define cairo_scale SD__DL_FN(rsvg, cairo_scale)
#define cairo_status SD__DL_FN(rsvg, cairo_status)
#define cairo_status_to_string SD__DL_FN(rsvg, cairo_status_to_string)
#define cairo_surface_destroy SD__DL_FN(rsvg, cairo_surface_destroy)
#define cairo_surface_flush SD__DL_FN(rsvg, cairo_surface_flush)
#define cairo_translate SD__DL_FN(rsvg, cairo_translate)
#define g_error_free SD__DL_FN(rsvg, g_error_free)
#define g_memory_input_stream_new_from_data SD__DL_FN(rsvg, g_memory_input_stream_new_from_data)
#define g_object_unref SD__DL_FN(rsvg, g_object_unref)
#define rsvg_handle_get_geometry_for_element SD__DL_FN(rsvg, rsvg_handle_get_geometry_for_element)
#define rsvg_handle_get_intrinsic_dimensions SD__DL_FN(rsvg, rsvg_handle_get_intrinsic_dimensions)
#define rsvg_handle_get_intrinsic_size_in_pixels SD__DL_FN(rsvg, rsvg_handle_get_intrinsic_size_in_pixels)
#define rsvg_handle_new_from_stream_sync SD__DL_FN(rsvg, rsvg_handle_new_from_stream_sync)
#define rsvg_handle_render_document SD__DL_FN(rsvg, rsvg_handle_render_document)
#define rsvg_handle_set_dpi SD__DL_FN(rsvg, rsvg_handle_set_dpi)

#define SD__SVG_MAX_BYTES ((size_t)16 << 20)
#define SD__SVG_MAX_ELEMENTS 200000
#define SD__SVG_BAND_PIXELS ((uint64_t)4 << 20)

typedef struct {
    sd__whole w; /* the decoder, the bytes, the canvas */
} sd__svg;

/* The clock the deadline reads (a test may set another). */
static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
static int64_t (*svg_clock)(void) = mono_ms;

SD__HIDDEN void sd__svg_set_clock(int64_t (*clock_ms)(void));
void sd__svg_set_clock(int64_t (*clock_ms)(void)) { svg_clock = clock_ms ? clock_ms : mono_ms; }

/* ---- the scan before librsvg: elements counted, data: URLs placed ---- */

static int ieq(const uint8_t *p, const uint8_t *end, const char *s)
{
    size_t n = strlen(s);
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (tolower(p[i]) != s[i])
            return 0;
    return 1;
}

#define SD__SVG_ENTITY 0x01 /* where a document's own entity stood (its text is unknown here) */

/* XML's references in p..end decoded into out (never longer): character
 * references (&#100; &#x64;; those past ASCII as '?'), the predefined
 * entities, and any other entity as SD__SVG_ENTITY. Returns the length. */
static size_t xml_decoded(const uint8_t *p, const uint8_t *end, uint8_t *out)
{
    uint8_t *o = out;
    while (p < end) {
        const uint8_t *semi = *p == '&' ? memchr(p, ';', (size_t)SD__MIN(end - p, 12)) : NULL;
        if (semi == NULL) {
            *o++ = *p++;
            continue;
        }
        size_t n = (size_t)(semi - p - 1);
        int c = SD__SVG_ENTITY;
        if (n >= 2 && p[1] == '#') {
            int hex = (p[2] | 0x20) == 'x';
            long v = 0;
            for (const uint8_t *d = p + 2 + hex; d < semi && v <= 0x10FFFF; d++)
                v = isxdigit(*d) && (hex || isdigit(*d)) ? v * (hex ? 16 : 10) + (isdigit(*d) ? *d - '0' : (*d | 0x20) - 'a' + 10)
                                                         : 0x110000;
            c = v > 0 && v < 0x80 ? (int)v : '?';
        } else if (n == 3 && memcmp(p + 1, "amp", 3) == 0) {
            c = '&';
        } else if (n == 2 && (memcmp(p + 1, "lt", 2) == 0 || memcmp(p + 1, "gt", 2) == 0)) {
            c = p[1] == 'l' ? '<' : '>';
        } else if (n == 4 && (memcmp(p + 1, "quot", 4) == 0 || memcmp(p + 1, "apos", 4) == 0)) {
            c = p[1] == 'q' ? '"' : '\'';
        }
        *o++ = (uint8_t)c;
        p = semi + 1;
    }
    return (size_t)(o - out);
}

/* One character as the CSS parser reads it (\64 , \d decoded); *p moves
 * past it. */
static int css_char(const uint8_t **p, const uint8_t *end)
{
    const uint8_t *q = *p;
    if (*q == '\\' && q + 1 < end) { /* up to six hex digits and one space, or the next character */
        const uint8_t *d = q + 1;
        long v = 0;
        int n = 0;
        while (d < end && n < 6 && isxdigit(*d)) {
            v = v * 16 + (isdigit(*d) ? *d - '0' : (*d | 0x20) - 'a' + 10);
            d++, n++;
        }
        if (n == 0) {
            *p = q + 2;
            return q[1];
        }
        if (d < end && isspace(*d))
            d++;
        *p = d;
        return (int)SD__MIN(v, 0x10FFFF);
    }
    *p = q + 1;
    return *q;
}

/* Does a reference's value start with "data:" as the parsers will read it
 * (escapes decoded; leading spaces and quotes skipped)? A document's own
 * entity there counts as one: what it says is not known here. */
static int starts_data(const uint8_t *v, const uint8_t *end)
{
    static const char want[] = "data:";
    size_t got = 0;
    while (v < end && got < 5) {
        int c = css_char(&v, end);
        if (c == SD__SVG_ENTITY)
            return 1;
        if (got == 0 && (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '"' || c == '\''))
            continue;
        if (c >= 'A' && c <= 'Z')
            c |= 0x20;
        if (c != want[got])
            return 0;
        got++;
    }
    return got == 5;
}

/* Is there a data: URL where it could be a reference — after "href=" (an
 * attribute; not in CSS), "url(" or "@import" — between p and end? */
static int data_reference(const uint8_t *p, const uint8_t *end, int css)
{
    for (const uint8_t *q = p; q < end; q++) {
        const uint8_t *v = NULL;
        if ((*q | 0x20) != 'h' && (*q | 0x20) != 'u' && *q != '@')
            continue; /* the first letter of none of the three */
        if (!css && ieq(q, end, "href")) {
            v = q + 4;
            while (v < end && isspace(*v))
                v++;
            if (v >= end || *v != '=')
                continue;
            v++;
        } else if (ieq(q, end, "url(")) {
            v = q + 4;
        } else if (ieq(q, end, "@import")) {
            v = q + 7;
        } else {
            continue;
        }
        while (v < end && (isspace(*v) || *v == '"' || *v == '\'' || (*v == 'u' && ieq(v, end, "url("))))
            v += *v == 'u' ? 4 : 1;
        if (starts_data(v, end))
            return 1;
    }
    return 0;
}

/* data_reference on the text as XML will read it (references decoded);
 * SD_ENOMEM. */
static int data_reference_xml(const uint8_t *p, const uint8_t *end, int css)
{
    if (memchr(p, '&', (size_t)(end - p)) == NULL)
        return data_reference(p, end, css);
    uint8_t *buf = sd__malloc((size_t)(end - p));
    if (buf == NULL)
        return SD_ENOMEM;
    size_t n = xml_decoded(p, end, buf);
    int r = data_reference(buf, buf + n, css);
    sd__free(buf);
    return r;
}

/* Count the elements (a '<' and a name) and find data: references outside
 * an <image> tag's own attributes — in other tags' attributes (href, CSS
 * in style="") and in <style> sheets: SD_ETOOLARGE / SD_EUNSUPPORTED. */
static int scan(sd_decoder *d, const uint8_t *p, size_t n)
{
    const uint8_t *end = p + n, *q = p;
    uint64_t elements = 0;
    int in_style = 0;
    while (q < end) {
        const uint8_t *lt = memchr(q, '<', (size_t)(end - q));
        const uint8_t *stop = lt ? lt : end;
        int r = in_style ? data_reference_xml(q, stop, 1) : 0;
        if (r < 0)
            return r;
        if (r) { /* a <style> sheet's text */
            sd__decoder_msg(d, "SVG: a data: URL outside an <image> (only inline images may be data: URLs)");
            return SD_EUNSUPPORTED;
        }
        if (lt == NULL)
            break;
        q = lt + 1;
        if (q < end && (isalpha(*q) || *q == '_' || *q == ':')) {
            if (++elements > SD__SVG_MAX_ELEMENTS) {
                sd__decoder_msg(d, "SVG: more than %d elements", SD__SVG_MAX_ELEMENTS);
                return SD_ETOOLARGE;
            }
            const uint8_t *name = q;
            while (q < end && !isspace(*q) && *q != '>' && *q != '/')
                q++;
            size_t len = (size_t)(q - name);
            const uint8_t *colon = memchr(name, ':', len); /* svg:image */
            const uint8_t *local = colon ? colon + 1 : name;
            int image = (size_t)(q - local) == 5 && memcmp(local, "image", 5) == 0;
            in_style = (size_t)(q - local) == 5 && memcmp(local, "style", 5) == 0;
            /* the tag's end, quotes respected */
            const uint8_t *t = q;
            uint8_t quote = 0;
            while (t < end && (quote || *t != '>')) {
                if (quote ? *t == quote : (*t == '"' || *t == '\''))
                    quote = quote ? 0 : *t;
                t++;
            }
            r = image ? 0 : data_reference_xml(q, t, 0);
            if (r < 0)
                return r;
            if (r) {
                sd__decoder_msg(d, "SVG: a data: URL outside an <image> (only inline images may be data: URLs)");
                return SD_EUNSUPPORTED;
            }
            q = t;
        } else if (q < end && *q == '/') {
            in_style = 0; /* an end tag: out of any <style> (it has no child elements) */
        } else if (q + 3 <= end && memcmp(q, "!--", 3) == 0) { /* a comment: skipped whole */
            const uint8_t *c = q + 3;
            while (c + 3 <= end && memcmp(c, "-->", 3) != 0)
                c++;
            q = c;
        }
    }
    return SD_OK;
}

/* ---- the codec ---- */

static int svg_init(sd_decoder *d)
{
    if (sd__dl_load(&rsvg_dl) != SD_OK) {
        sd__decoder_msg(d, "SVG: %s", rsvg_dl.message);
        return SD_EUNSUPPORTED;
    }
    return sd__whole_init(d, sizeof(sd__svg));
}

static int svg_push(sd_decoder *d, const uint8_t *p, size_t n)
{
    sd__svg *s = d->codec_state;
    if (n > SD__SVG_MAX_BYTES - s->w.in.len) {
        sd__decoder_msg(d, "SVG: larger than %zu MiB", SD__SVG_MAX_BYTES >> 20);
        return SD_ETOOLARGE;
    }
    return sd__buf_put(&s->w.in, p, n);
}

static int gerror(sd_decoder *d, GError *e, const char *what, int rc)
{
    const char *m = e && e->message ? e->message : "failed";
    int len = (int)strlen(m);
    while (len > 0 && (m[len - 1] == '\n' || m[len - 1] == ' '))
        len--; /* libxml2's messages end with a newline */
    sd__decoder_msg(d, "SVG: %s: %.*s", what, len, m);
    if (e)
        g_error_free(e);
    return rc;
}

/* The document's size in pixels at 96 dpi: width/height, else the viewBox,
 * else (no size at all) its drawing's bounds, from *ox, *oy (rsvg-convert's
 * three rules). */
static int natural_size(sd_decoder *d, RsvgHandle *h, double *w, double *hh, double *ox, double *oy)
{
    *ox = *oy = 0;
    if (rsvg_handle_get_intrinsic_size_in_pixels(h, w, hh) && *w > 0 && *hh > 0)
        return SD_OK;
    gboolean has_w, has_h, has_vb;
    RsvgLength lw, lh;
    RsvgRectangle vb;
    rsvg_handle_get_intrinsic_dimensions(h, &has_w, &lw, &has_h, &lh, &has_vb, &vb);
    if (has_vb && vb.width > 0 && vb.height > 0) {
        /* percentages (or no size) of a viewBox: the viewBox's own units */
        *w = vb.width;
        *hh = vb.height;
        return SD_OK;
    }
    RsvgRectangle ink, logical;
    GError *e = NULL;
    if (rsvg_handle_get_geometry_for_element(h, NULL, &ink, &logical, &e) && logical.width > 0 &&
        logical.height > 0) {
        *ox = logical.x, *oy = logical.y;
        *w = logical.width, *hh = logical.height;
        return SD_OK;
    }
    if (e)
        g_error_free(e);
    sd__decoder_msg(d, "SVG: the document has no size (no width/height, no viewBox, nothing drawn)");
    return SD_ECORRUPT;
}

/* The size to draw the document at: the decoder's own plan (the render,
 * or the box's) made for its natural size with enlarging allowed — a
 * vector is drawn at any size, so a box larger than it is met, as
 * imgproxy does for vectors — at the scale that plan gives the area;
 * bounded by the limits (a vector shrinks to fit them). The decoder then
 * plans on that size and finds nothing left to scale. */
static void plan(sd_decoder *d, double nw, double nh, uint32_t *ow, uint32_t *oh)
{
    double w = nw, h = nh;
    sd_render r;
    sd__decoder_render(d, &r);
    r.enlarge = 1;
    sd_render_plan p;
    uint32_t cw = (uint32_t)fmin(ceil(nw - 1e-6), 4294967295.0), ch = (uint32_t)fmin(ceil(nh - 1e-6), 4294967295.0);
    if (sd_render_plan_for(&r, SD__MAX(cw, 1), SD__MAX(ch, 1), 1, &p) == SD_OK && p.area.width > 0 && p.area.height > 0) {
        int whole = p.area.width == cw && p.area.height == ch;
        double sx = (double)p.scaled_width / (double)p.area.width, sy = (double)p.scaled_height / (double)p.area.height;
        /* the whole document scaled: its size exactly (a box is met exactly) */
        w = whole ? (double)p.scaled_width : nw * sx;
        h = whole ? (double)p.scaled_height : nh * sy;
    }
    double maxd = (double)d->max_dimension, maxp = (double)d->max_pixels;
    double s = fmin(1.0, fmin(maxd / fmax(w, 1), maxd / fmax(h, 1)));
    w *= s, h *= s;
    if (fmax(w, 1) * fmax(h, 1) > maxp) {
        double k = sqrt(maxp / (fmax(w, 1) * fmax(h, 1)));
        w *= k, h *= k;
    }
    /* rsvg-convert rounds the natural size up; a box is met exactly */
    *ow = (uint32_t)fmax(1, fmin(fmin(ceil(w - 1e-6), maxd), maxp));
    *oh = (uint32_t)fmax(1, fmin(fmin(ceil(h - 1e-6), maxd), maxp));
    while ((uint64_t)*ow * *oh > (uint64_t)maxp)
        *ow > *oh ? (*ow)-- : (*oh)--;
}

static int render(sd_decoder *d, sd__svg *s)
{
    SD__FORWARD_IF_ERROR(scan(d, s->w.in.data, s->w.in.len));
    GInputStream *in = g_memory_input_stream_new_from_data(s->w.in.data, (gssize)s->w.in.len, NULL);
    SD__RETURN_IF(in == NULL, SD_ENOMEM);
    GError *e = NULL;
    /* no base file: librsvg follows no reference but data: URLs */
    RsvgHandle *h = rsvg_handle_new_from_stream_sync(in, NULL, RSVG_HANDLE_FLAGS_NONE, NULL, &e);
    g_object_unref(in);
    if (h == NULL) {
        int truncated = e && (strstr(e->message, "end of") || strstr(e->message, "Premature") ||
                              strstr(e->message, "EOF") || strstr(e->message, "not closed"));
        return gerror(d, e, "load", truncated ? SD_ETRUNCATED : SD_ECORRUPT);
    }
    rsvg_handle_set_dpi(h, 96.0);
    double nw, nh, ox, oy;
    int rc = natural_size(d, h, &nw, &nh, &ox, &oy);
    uint32_t w = 0, hh = 0;
    int natural = 0; /* drawn at scale 1 on a canvas rounded up, as rsvg-convert */
    if (rc == SD_OK) {
        plan(d, nw, nh, &w, &hh);
        natural = w == (uint32_t)ceil(nw - 1e-6) && hh == (uint32_t)ceil(nh - 1e-6);
        /* the size it renders at is the image's size: no resampling after */
        rc = sd__decoder_set_header(d, w, hh, 1, 0, 1);
    }
    if (rc == SD_OK) {
        natural = natural && w == d->need_w && hh == d->need_h;
        w = d->need_w, hh = d->need_h; /* a byte budget or a render's scale may differ */
        d->load_w = w, d->load_h = hh;
        rc = sd__decoder_charge(d, (uint64_t)w * hh * 4, "the SVG canvas");
    }
    if (rc == SD_OK)
        rc = sd__bitmap_alloc(w, hh, 1, &s->w.canvas);
    if (rc == SD_OK && s->w.canvas->stride % 4 != 0) {
        sd__decoder_msg(d, "SVG: canvas stride %zu is not cairo's", s->w.canvas->stride);
        rc = SD_ECORRUPT;
    }
    /* draw in bands of about a megapixel, reading the clock between them */
    int64_t start = svg_clock(), deadline = d->render_deadline_ms;
    uint32_t band = rc == SD_OK ? (uint32_t)SD__MAX(1, SD__MIN((uint64_t)hh, SD__SVG_BAND_PIXELS / w)) : 1;
    RsvgRectangle viewport = {0, 0, ox + nw, oy + nh};
    for (uint32_t y = 0; rc == SD_OK && y < hh; y += band) {
        uint32_t rows = SD__MIN(band, hh - y);
        cairo_surface_t *surf = cairo_image_surface_create_for_data(
            s->w.canvas->pixels + (size_t)y * s->w.canvas->stride, CAIRO_FORMAT_ARGB32, (int)w, (int)rows,
            (int)s->w.canvas->stride);
        cairo_t *cr = cairo_create(surf);
        cairo_translate(cr, 0, -(double)y);
        if (!natural)
            cairo_scale(cr, w / nw, hh / nh);
        cairo_translate(cr, -ox, -oy);
        if (!rsvg_handle_render_document(h, cr, &viewport, &e))
            rc = gerror(d, e, "render", SD_ECORRUPT), e = NULL;
        else if (cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
            sd__decoder_msg(d, "SVG: cairo: %s", cairo_status_to_string(cairo_status(cr)));
            rc = cairo_status(cr) == CAIRO_STATUS_NO_MEMORY ? SD_ENOMEM : SD_ECORRUPT;
        }
        cairo_destroy(cr);
        cairo_surface_flush(surf);
        cairo_surface_destroy(surf);
        d->rows = y + rows;
        if (rc == SD_OK && deadline > 0 && y + rows < hh && svg_clock() - start > deadline) {
            sd__decoder_msg(d, "SVG: rendering took longer than %lld ms (%u of %u rows drawn)",
                            (long long)deadline, y + rows, hh);
            rc = SD_ETOOLARGE;
        }
    }
    g_object_unref(h);
    if (rc == SD_OK)
        d->load_w = w, d->load_h = hh;
    return rc;
}

static int svg_finish(sd_decoder *d)
{
    sd__svg *s = d->codec_state;
    SD__FORWARD_IF_ERROR(render(d, s));
    d->scans = 1;
    d->complete = 1;
    d->end_reached = 1;
    return SD_OK;
}

SD__HIDDEN extern const sd__codec sd__svg_codec;
const sd__codec sd__svg_codec = {
    SD_FORMAT_SVG, "SVG", "image/svg+xml", sd__sniff_svg, SD_CAP_DECODE,
    svg_init, svg_push, svg_finish, sd__whole_canvas, sd__whole_destroy, NULL, /* a still */
    NULL, /* no encoder */
};

#ifdef SD_SVG_PLUG
/* SwiftPM: linking this target is what adds SVG to the registry. */
__attribute__((constructor)) static void svg_plug(void) { sd__codec_plug(&sd__svg_codec); }
#endif
