/* sd_decoder.c — front end: options, format sniffing, size planning, results. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <math.h>

#include "decode/sd_decoder_int.h"
#include "bitmap/sd_resample.h"

void sd__decoder_msg(sd_decoder *dec, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dec->message, sizeof dec->message, fmt, ap);
    va_end(ap);
    sd__log(SD_LOG_DEBUG, "decoder (%s): %s", sd_format_name(dec->format), dec->message);
}

/* A colour source that cannot be honoured: one message, every one counted. */
static void color_warn(void *ctx, const char *why)
{
    sd_decoder *d = ctx;
    if (d->warnings++ == 0)
        sd__decoder_msg(d, "colour: %s; decoded as sRGB", why);
    sd__log(SD_LOG_DEBUG, "decoder (%s): colour: %s; decoded as sRGB", sd_format_name(d->format), why);
}

int sd_decoder_new(sd_decoder **out)
{
    SD__RETURN_IF(out == NULL, SD_EINVAL);
    sd_decoder *d = sd__calloc(1, sizeof *d);
    *out = d;
    SD__RETURN_IF(d == NULL, SD_ENOMEM);
    d->apply_orientation = 1;
    d->preserve_aspect = 1;
    d->max_pixels = SD_DEFAULT_MAX_PIXELS;
    d->max_dimension = SD_DEFAULT_MAX_DIMENSION;
    d->max_memory = SD_DEFAULT_MAX_MEMORY;
    d->preview_interval_ms = SD_DEFAULT_PREVIEW_INTERVAL_MS;
    d->max_frames = SD_DEFAULT_MAX_FRAMES;
    d->frame_cache_bytes = SD_DEFAULT_FRAME_CACHE_BYTES;
    d->filter = SD_FILTER_LANCZOS3;
    d->shrink_margin = 2;
    d->color.manage = 1;
    d->color.warn = color_warn;
    d->color.warn_ctx = d;
    d->render_deadline_ms = SD_DEFAULT_RENDER_DEADLINE_MS;
    d->orientation = 1;
    d->loop_count = 1;
    return SD_OK;
}

void sd_decoder_free(sd_decoder *dec)
{
    if (dec == NULL)
        return;
    if (dec->codec != NULL)
        dec->codec->destroy(dec);
    sd_bitmap_free(dec->still);
    sd_bitmap_free(dec->view);
    sd__free(dec->frames);
    sd__color_free(&dec->color);
    sd__decoder_uncharge_all(dec);
    sd__free(dec);
}

/* Frames renderable now: an animated codec's announced ones; a still's one
 * once finished (and until it is handed out, when it is still counted). */
static uint32_t sd__frame_count(const sd_decoder *d)
{
    if (d->framed)
        return d->nframes;
    return d->finished ? 1 : 0;
}

int sd__decoder_add_frame(sd_decoder *d, uint32_t stored_ms, int key)
{
    if ((int64_t)d->nframes >= d->max_frames) {
        sd__decoder_msg(d, "animation too long: more than %lld frames (SD_DEC_MAX_FRAMES)",
                        (long long)d->max_frames);
        return SD_ETOOLARGE;
    }
    SD__RESERVE(d->frames, d->nframes, d->frames_cap);
    d->frames[d->nframes++] = (sd__frame_meta){stored_ms, (uint8_t)(key != 0)};
    return SD_OK;
}

int sd_decoder_set(sd_decoder *dec, sd_decoder_param param, int64_t v)
{
    SD__RETURN_IF(dec == NULL || v < 0, SD_EINVAL);
    SD__RETURN_IF((int)param >= 100, SD_EINVAL);
    SD__RETURN_IF(dec->started, SD_EBADSTATE);
    switch (param) {
    case SD_DEC_APPLY_ORIENTATION: dec->apply_orientation = v != 0; break;
    case SD_DEC_TARGET_WIDTH: SD__RETURN_IF(v > UINT32_MAX, SD_EINVAL); dec->target_w = (uint32_t)v; break;
    case SD_DEC_TARGET_HEIGHT: SD__RETURN_IF(v > UINT32_MAX, SD_EINVAL); dec->target_h = (uint32_t)v; break;
    case SD_DEC_PRESERVE_ASPECT: dec->preserve_aspect = v != 0; break;
    case SD_DEC_MAX_PIXEL_SIZE:
        SD__RETURN_IF(v > UINT32_MAX, SD_EINVAL);
        dec->target_w = dec->target_h = (uint32_t)v;
        dec->preserve_aspect = 1;
        break;
    case SD_DEC_MAX_BYTES: dec->max_bytes = v; break;
    case SD_DEC_MAX_PIXELS: dec->max_pixels = v; break;
    case SD_DEC_MAX_DIMENSION: dec->max_dimension = v; break;
    case SD_DEC_MAX_MEMORY: dec->max_memory = v; break;
    case SD_DEC_PREVIEWS: dec->previews = v != 0; break;
    case SD_DEC_PREVIEW_INTERVAL_MS: dec->preview_interval_ms = v; break;
    case SD_DEC_FIRST_FRAME_ONLY: dec->first_frame_only = v != 0; break;
    case SD_DEC_MAX_FRAMES: dec->max_frames = v; break;
    case SD_DEC_FRAME_CACHE_BYTES: dec->frame_cache_bytes = v; break;
    case SD_DEC_FORMATS: dec->formats = v; break;
    case SD_DEC_RESAMPLE_FILTER: SD__RETURN_IF(v > SD_FILTER_BOX, SD_EINVAL); dec->filter = (int)v; break;
    case SD_DEC_RESAMPLE_LINEAR: dec->resample_linear = v != 0; break;
    case SD_DEC_SHRINK_ON_LOAD_MARGIN: SD__RETURN_IF(v < 1 || v > 8, SD_EINVAL); dec->shrink_margin = (uint32_t)v; break;
    case SD_DEC_COLOR_MANAGE: dec->color.manage = v != 0; break;
    case SD_DEC_RENDER_DEADLINE_MS: SD__RETURN_IF(v < 0, SD_EINVAL); dec->render_deadline_ms = v; break;
    case SD_DEC_PREVIEW_FRAME_BYTES: dec->preview_frame_bytes = v; break;
    case SD_DEC_SETTLE_LEVELS: SD__RETURN_IF(v > 255, SD_EINVAL); dec->settle_levels = v; break;
    case SD_DEC_END_WHEN_SETTLED: dec->end_when_settled = v != 0; break;
    default: return SD_EINVAL;
    }
    return SD_OK;
}

int sd_decoder_get(const sd_decoder *dec, sd_decoder_param param, int64_t *v)
{
    SD__RETURN_IF(dec == NULL || v == NULL, SD_EINVAL);
    switch (param) {
    case SD_DEC_APPLY_ORIENTATION: *v = dec->apply_orientation; return SD_OK;
    case SD_DEC_TARGET_WIDTH: *v = dec->target_w; return SD_OK;
    case SD_DEC_TARGET_HEIGHT: *v = dec->target_h; return SD_OK;
    case SD_DEC_PRESERVE_ASPECT: *v = dec->preserve_aspect; return SD_OK;
    case SD_DEC_MAX_PIXEL_SIZE: *v = SD__MAX(dec->target_w, dec->target_h); return SD_OK;
    case SD_DEC_MAX_BYTES: *v = dec->max_bytes; return SD_OK;
    case SD_DEC_MAX_PIXELS: *v = dec->max_pixels; return SD_OK;
    case SD_DEC_MAX_DIMENSION: *v = dec->max_dimension; return SD_OK;
    case SD_DEC_MAX_MEMORY: *v = dec->max_memory; return SD_OK;
    case SD_DEC_PREVIEWS: *v = dec->previews; return SD_OK;
    case SD_DEC_PREVIEW_INTERVAL_MS: *v = dec->preview_interval_ms; return SD_OK;
    case SD_DEC_FIRST_FRAME_ONLY: *v = dec->first_frame_only; return SD_OK;
    case SD_DEC_MAX_FRAMES: *v = dec->max_frames; return SD_OK;
    case SD_DEC_FRAME_CACHE_BYTES: *v = dec->frame_cache_bytes; return SD_OK;
    case SD_DEC_FORMATS: *v = dec->formats; return SD_OK;
    case SD_DEC_RESAMPLE_FILTER: *v = dec->filter; return SD_OK;
    case SD_DEC_RESAMPLE_LINEAR: *v = dec->resample_linear; return SD_OK;
    case SD_DEC_SHRINK_ON_LOAD_MARGIN: *v = dec->shrink_margin; return SD_OK;
    case SD_DEC_COLOR_MANAGE: *v = dec->color.manage; return SD_OK;
    case SD_DEC_RENDER_DEADLINE_MS: *v = dec->render_deadline_ms; return SD_OK;
    case SD_DEC_PREVIEW_FRAME_BYTES: *v = dec->preview_frame_bytes; return SD_OK;
    case SD_DEC_SETTLE_LEVELS: *v = dec->settle_levels; return SD_OK;
    case SD_DEC_END_WHEN_SETTLED: *v = dec->end_when_settled; return SD_OK;
    case SD_DEC_INFO_SETTLED: *v = dec->settled; return SD_OK;
    case SD_DEC_INFO_SETTLE_BOUND: *v = dec->settle_bound; return SD_OK;
    case SD_DEC_INFO_DECLINED:
        SD__RETURN_IF(dec->format == SD_FORMAT_UNKNOWN && !dec->declined, SD_EAGAIN);
        *v = dec->declined;
        return SD_OK;
    case SD_DEC_INFO_FRAME_COUNT: *v = sd__frame_count(dec); return SD_OK;
    case SD_DEC_INFO_FORMAT:
        SD__RETURN_IF(dec->format == SD_FORMAT_UNKNOWN, SD_EAGAIN);
        *v = dec->format;
        return SD_OK;
    case SD_DEC_INFO_PREVIEWS: *v = dec->previews_rendered; return SD_OK;
    case SD_DEC_INFO_WARNINGS: *v = dec->warnings; return SD_OK;
    case SD_DEC_INFO_FINISHED: *v = dec->end_reached; return SD_OK;
    case SD_DEC_INFO_COMPLETE:
        SD__RETURN_IF(!dec->finished, SD_EAGAIN);
        *v = dec->complete;
        return SD_OK;
    default: break;
    }
    SD__RETURN_IF((int)param < 100 || (int)param > SD_DEC_INFO_COLOR_SPACE, SD_EINVAL);
    SD__RETURN_IF(!dec->header_ready, SD_EAGAIN);
    switch (param) {
    case SD_DEC_INFO_WIDTH: *v = dec->width; break;
    case SD_DEC_INFO_HEIGHT: *v = dec->height; break;
    case SD_DEC_INFO_ORIENTATION: *v = dec->orientation; break;
    case SD_DEC_INFO_PROGRESSIVE: *v = dec->progressive; break;
    case SD_DEC_INFO_HAS_ALPHA: *v = dec->has_alpha; break;
    case SD_DEC_INFO_OUTPUT_WIDTH: *v = dec->plan.width; break;
    case SD_DEC_INFO_OUTPUT_HEIGHT: *v = dec->plan.height; break;
    case SD_DEC_INFO_SCANS: *v = dec->scans; break;
    case SD_DEC_INFO_LOAD_WIDTH: *v = dec->load_w; break;
    case SD_DEC_INFO_LOAD_HEIGHT: *v = dec->load_h; break;
    case SD_DEC_INFO_COLOR_SPACE: *v = dec->color.space; break;
    case SD_DEC_INFO_ROWS: *v = dec->rows; break;
    case SD_DEC_INFO_LOOP_COUNT: *v = dec->loop_count; break;
    case SD_DEC_INFO_ANIMATED: *v = dec->animated; break;
    default: return SD_EINVAL;
    }
    return SD_OK;
}

/* Plan the render (render/sd_render.c) for this source: the render set,
 * else the one the box, aspect and orientation options make (a fit, or a
 * force never enlarged); then the byte budget on what that makes. */
void sd__decoder_render(const sd_decoder *d, sd_render *r)
{
    if (d->render_set) {
        *r = d->render;
        return;
    }
    sd_render_init(r);
    r->auto_rotate = d->apply_orientation;
    r->width = d->target_w; /* the box is given upright; 0 unbounded */
    r->height = d->target_h;
    r->resize = d->preserve_aspect ? SD_RESIZE_FIT : SD_RESIZE_FORCE;
}

static int plan_size(sd_decoder *d)
{
    sd_render r;
    sd__decoder_render(d, &r);
    sd_render_plan *p = &d->plan;
    int rc = sd_render_plan_for(&r, d->width, d->height, d->orientation, p);
    if (rc == SD_ETOOLARGE) {
        sd__decoder_msg(d, "the result would be %ux%u pixels; the limit is %lld pixels, %lld a side", p->width,
                        p->height, (long long)r.max_result_pixels, (long long)r.max_result_side);
        return rc;
    }
    if (rc < 0) {
        sd__decoder_msg(d, "the render cannot be planned (a dpr, zoom, rotation or gravity out of range)");
        return rc;
    }
    int swap = sd_orientation_swaps_axes(p->orientation);
    uint64_t ow = swap ? p->scaled_height : p->scaled_width, oh = swap ? p->scaled_width : p->scaled_height;
    /* the byte budget shrinks a plain resize (the box's, or a render's
     * without a cut or a canvas: a thumbnail box handed over as a render) */
    if (d->max_bytes > 0 && !sd__render_composes(p) && ow * oh * 4 > (uint64_t)d->max_bytes) {
        double s = sqrt((double)d->max_bytes / 4.0 / (double)(ow * oh));
        ow = (uint64_t)((double)ow * s);
        oh = (uint64_t)((double)oh * s);
        ow = SD__MAX(ow, 1);
        oh = SD__MAX(oh, 1);
        while (ow * oh * 4 > (uint64_t)d->max_bytes && (ow > 1 || oh > 1)) {
            if (ow >= oh && ow > 1)
                ow--;
            else
                oh--;
        }
        /* no crop and no canvas here: the result is what is resampled */
        p->scaled_width = p->width = (uint32_t)(swap ? oh : ow);
        p->scaled_height = p->height = (uint32_t)(swap ? ow : oh);
        p->cut = (sd_rect){0, 0, p->width, p->height};
    }
    d->decode_w = (uint32_t)SD__MAX(ow, 1);
    d->decode_h = (uint32_t)SD__MAX(oh, 1);
    d->area = sd__render_rect_to_stored(p->orientation, d->width, d->height, p->area);
    d->area_cut = d->area.width != d->width || d->area.height != d->height;
    /* the whole source at the area's scale (rounded up: enough pixels) */
    d->need_w = (uint32_t)SD__MAX(1, ((uint64_t)d->width * d->decode_w + d->area.width - 1) / d->area.width);
    d->need_h = (uint32_t)SD__MAX(1, ((uint64_t)d->height * d->decode_h + d->area.height - 1) / d->area.height);
    return SD_OK;
}

int sd_decoder_set_render(sd_decoder *d, const sd_render *render)
{
    SD__RETURN_IF(d == NULL, SD_EINVAL);
    SD__RETURN_IF(d->started, SD_EBADSTATE);
    if (render == NULL) {
        d->render_set = 0;
        return SD_OK;
    }
    sd_render_plan probe; /* its fields checked now, not at the header */
    int rc = sd_render_plan_for(render, 1, 1, 1, &probe);
    SD__RETURN_IF(rc == SD_EINVAL, SD_EINVAL);
    d->render = *render;
    d->render_set = 1;
    return SD_OK;
}

int sd__decoder_set_header(sd_decoder *d, uint32_t w, uint32_t h, int orientation,
                           int progressive, int has_alpha)
{
    if (w == 0 || h == 0) {
        sd__decoder_msg(d, "image has zero size (%ux%u)", w, h);
        return SD_ECORRUPT;
    }
    if ((int64_t)w > d->max_dimension || (int64_t)h > d->max_dimension ||
        (int64_t)w * h > d->max_pixels) {
        sd__decoder_msg(d, "image too large: %ux%u exceeds the limit (%lld px, %lld per side)",
                        w, h, (long long)d->max_pixels, (long long)d->max_dimension);
        return SD_ETOOLARGE;
    }
    d->width = w;
    d->height = h;
    d->orientation = (orientation >= 1 && orientation <= 8) ? orientation : 1;
    d->progressive = progressive;
    d->has_alpha = has_alpha;
    SD__FORWARD_IF_ERROR(plan_size(d));
    d->load_w = w; /* a codec that shrinks on load says so (sd__decoder_shrink) */
    d->load_h = h;
    d->load_span_w = 0; /* all of it, unless the codec says less */
    d->load_span_h = 0;
    d->header_ready = 1;
    return SD_OK;
}

static int fail(sd_decoder *d, int rc)
{
    if (rc < 0 && rc != SD_EAGAIN) {
        d->error = rc;
        if (d->message[0] == '\0')
            snprintf(d->message, sizeof d->message, "%s", sd_strerror(rc));
    }
    return rc;
}

static int start_codec(sd_decoder *d, sd_format f)
{
    const sd__codec *c = sd__codec_for(f);
    d->format = f; /* known even when we cannot decode it */
    if (d->formats != 0 && (f >= 62 || !(d->formats & (int64_t)1 << f))) {
        d->declined = 1;
        sd__decoder_msg(d, "%s data is left to another decoder (SD_DEC_FORMATS)", c->name);
        return SD_EUNSUPPORTED;
    }
    if (c->init == NULL) {
        sd__decoder_msg(d, "unsupported format: %s (recognised, but this build has no %s decoder)",
                        c->name, c->name);
        return SD_EUNSUPPORTED;
    }
    d->codec = c;
    return d->codec->init(d);
}

int sd_decoder_push(sd_decoder *d, const void *data, size_t len)
{
    SD__RETURN_IF(d == NULL || (data == NULL && len > 0), SD_EINVAL);
    SD__RETURN_IF(d->error || d->finished, SD_EBADSTATE);
    d->started = 1;
    const uint8_t *p = data;
    if (d->codec == NULL) {
        /* Collect just enough bytes for one codec of the registry to claim
         * them (a JPEG after 3, a PNG after 8). */
        while (len > 0 && d->codec == NULL) {
            d->sniff[d->sniff_len++] = *p++;
            len--;
            int f = sd__sniff(d->sniff, d->sniff_len);
            if ((f == SD_FORMAT_UNKNOWN || (f < 0 && d->sniff_len == SD__SNIFF_MAX)) && d->formats != 0 &&
                !(d->formats & 1)) {
                d->declined = 1; /* SD_DEC_FORMATS without bit 0: unrecognised data is another decoder's */
                sd__decoder_msg(d, "data no codec here recognises is left to another decoder (SD_DEC_FORMATS)");
                return fail(d, SD_EUNSUPPORTED);
            }
            if (f == SD_FORMAT_UNKNOWN || (f < 0 && d->sniff_len == SD__SNIFF_MAX)) {
                char seen[3 * 8 + 1] = "";
                for (size_t i = 0; i < SD__MIN(d->sniff_len, 8); i++)
                    snprintf(seen + 3 * i, sizeof seen - 3 * i, "%s%02x", i ? " " : "", d->sniff[i]);
                char names[160];
                sd__decodable_names(names, sizeof names);
                sd__decoder_msg(d, "unsupported format: not a %s, "
                                   "nor another image format we recognise (starts with %s)", names, seen);
                return fail(d, SD_EUNSUPPORTED);
            }
            if (f > 0) {
                int rc = start_codec(d, (sd_format)f);
                if (rc < 0)
                    return fail(d, rc);
                rc = d->codec->push(d, d->sniff, d->sniff_len);
                if (rc < 0)
                    return fail(d, rc);
            }
        }
    }
    if (len > 0 && !d->end_reached) {
        int rc = d->codec->push(d, p, len);
        if (rc < 0)
            return fail(d, rc);
    }
    return SD_OK;
}

int sd_decoder_finish(sd_decoder *d)
{
    SD__RETURN_IF(d == NULL, SD_EINVAL);
    SD__RETURN_IF(d->error || d->finished, SD_EBADSTATE);
    d->started = 1;
    if (d->codec == NULL) {
        sd__decoder_msg(d, d->sniff_len ? "input ended inside the file signature"
                                        : "no image data");
        return fail(d, SD_ETRUNCATED);
    }
    int rc = d->codec->finish(d);
    if (rc < 0)
        return fail(d, rc);
    d->finished = 1;
    return SD_OK;
}

/* `t`, made from `*cur` with status `rc`, takes its place; an owned `*cur`
 * is freed either way. */
static int replace(sd_bitmap **cur, int *owned, int rc, sd_bitmap *t)
{
    if (*owned)
        sd_bitmap_free(*cur);
    if (rc < 0)
        return rc;
    *cur = t;
    *owned = 1;
    return SD_OK;
}

/* The planned area of `cur` (the codec's canvas or a frame, a reduction of
 * the stored source): a view into its pixels, and the span of it that
 * holds the area, in its pixels. */
static sd_bitmap area_view(const sd_decoder *d, const sd_bitmap *cur, double *span_w, double *span_h)
{
    /* the output lines up with the source: a canvas whose last column or
     * row holds only part of a pixel maps by the part that is picture */
    int canvas = cur->width == d->load_w && cur->height == d->load_h;
    double sw = canvas && d->load_span_w > 0 && d->load_span_w < cur->width ? d->load_span_w : cur->width;
    double sh = canvas && d->load_span_h > 0 && d->load_span_h < cur->height ? d->load_span_h : cur->height;
    sd_bitmap v = *cur;
    *span_w = sw;
    *span_h = sh;
    if (!d->area_cut)
        return v;
    double kx = sw / d->width, ky = sh / d->height;
    uint32_t x0 = (uint32_t)SD__MIN((double)cur->width - 1, floor((double)d->area.x * kx + 0.5));
    uint32_t y0 = (uint32_t)SD__MIN((double)cur->height - 1, floor((double)d->area.y * ky + 0.5));
    *span_w = SD__MAX(1e-3, SD__MIN((double)d->area.width * kx, (double)(cur->width - x0)));
    *span_h = SD__MAX(1e-3, SD__MIN((double)d->area.height * ky, (double)(cur->height - y0)));
    v.pixels = cur->pixels + (size_t)y0 * cur->stride + (size_t)x0 * 4;
    v.width = (uint32_t)SD__MIN((double)(cur->width - x0), ceil(*span_w));
    v.height = (uint32_t)SD__MIN((double)(cur->height - y0), ceil(*span_h));
    v.capacity = 0;
    return v;
}

/* The plan on one picture: its area resampled to the planned size, to
 * sRGB, turned, then cut and placed; consumes `src` when owned. */
static int present(sd_decoder *d, sd_bitmap *src, int owned, sd_bitmap **out)
{
    sd_bitmap *cur = src, *t = NULL;
    int rc = SD_OK;
    if (cur->width != d->decode_w || cur->height != d->decode_h || d->area_cut) {
        double sw, sh;
        sd_bitmap view = area_view(d, cur, &sw, &sh);
        rc = sd__resample_span(&view, d->decode_w, d->decode_h, d->filter,
                               d->resample_linear ? SD_RESAMPLE_LINEAR : 0, sw, sh, &t);
        SD__FORWARD_IF_ERROR(replace(&cur, &owned, rc, t));
    }
    /* to sRGB, on the smallest bitmap (a codec may have converted its rows
     * as they came: rows_done) */
    if (sd__color_pending(&d->color)) {
        if (!owned) {
            rc = sd__bitmap_copy(cur, &t);
            SD__FORWARD_IF_ERROR(replace(&cur, &owned, rc, t));
        }
        rc = sd__color_convert(&d->color, cur);
        if (rc < 0) {
            sd_bitmap_free(cur);
            return rc;
        }
    }
    if (d->plan.orientation != 1) {
        rc = sd_bitmap_orient(cur, d->plan.orientation, &t);
        SD__FORWARD_IF_ERROR(replace(&cur, &owned, rc, t));
    }
    if (sd__render_composes(&d->plan)) {
        sd_render_plan plan = d->plan; /* a smart cut is this picture's own */
        if (d->render_set && d->render.gravity.type == SD_GRAVITY_SMART)
            rc = sd__render_smart_cut(cur, &plan);
        if (rc == SD_OK)
            rc = sd__render_compose(cur, &plan, d->render_set ? d->render.background : 0, &t);
        SD__FORWARD_IF_ERROR(replace(&cur, &owned, rc, t));
    }
    if (!owned)
        return sd__bitmap_copy(cur, out);
    *out = cur;
    return SD_OK;
}

int sd_decoder_take_bitmap(sd_decoder *d, sd_bitmap **out)
{
    SD__RETURN_IF(d == NULL || out == NULL, SD_EINVAL);
    *out = NULL;
    SD__RETURN_IF(d->error || !d->finished, SD_EBADSTATE);
    SD__RETURN_IF(d->taken, SD_EOI);
    if (d->still != NULL) { /* sd_decoder_frame made it already */
        *out = d->still;
        d->still = NULL;
        d->taken = 1;
        return SD_OK;
    }
    sd_bitmap *c;
    int owned;
    int rc = d->codec->canvas(d, 1, &c, &owned);
    if (rc < 0)
        return fail(d, rc);
    rc = present(d, c, owned, out);
    if (rc < 0)
        return fail(d, rc);
    d->taken = 1;
    return SD_OK;
}

int sd_decoder_snapshot(sd_decoder *d, sd_bitmap **out)
{
    SD__RETURN_IF(d == NULL || out == NULL, SD_EINVAL);
    *out = NULL;
    SD__RETURN_IF(d->error || d->taken, SD_EBADSTATE);
    SD__RETURN_IF(d->codec == NULL || !d->header_ready, SD_EAGAIN);
    sd_bitmap *c;
    int owned;
    int rc = d->codec->canvas(d, 0, &c, &owned);
    if (rc < 0)
        return rc == SD_EAGAIN ? rc : fail(d, rc);
    rc = present(d, c, owned, out);
    return rc < 0 ? fail(d, rc) : SD_OK;
}

/* SD_OK if frame `i` exists now, else SD_EAGAIN (may come) or SD_EOI. */
static int frame_exists(const sd_decoder *d, uint32_t i)
{
    if (i < sd__frame_count(d))
        return SD_OK;
    if (d->error)
        return SD_EBADSTATE;
    int still = d->codec != NULL && d->codec->frame == NULL; /* JPEG: never more */
    if (d->finished || (still && i > 0) || (d->first_frame_only && i > 0))
        return SD_EOI;
    return SD_EAGAIN;
}

int sd_decoder_frame_get(const sd_decoder *d, uint32_t i, sd_frame_param p, int64_t *v)
{
    SD__RETURN_IF(d == NULL || v == NULL, SD_EINVAL);
    SD__RETURN_IF(p < SD_FRAME_DURATION_MS || p > SD_FRAME_IS_KEY, SD_EINVAL);
    SD__FORWARD_IF_ERROR(frame_exists(d, i));
    if (!d->framed) { /* a still has no timing */
        *v = p == SD_FRAME_IS_KEY;
        return SD_OK;
    }
    const sd__frame_meta *f = &d->frames[i];
    switch (p) {
    case SD_FRAME_DURATION_MS:
        *v = f->stored_ms <= SD_FRAME_FAST_MS ? SD_FRAME_MIN_SHOWN_MS : f->stored_ms;
        break;
    case SD_FRAME_STORED_DURATION_MS: *v = f->stored_ms; break;
    default: *v = f->key; break;
    }
    return SD_OK;
}

/* The codec's picture is already at the output size, orientation and colours. */
static int presentable(sd_decoder *d, const sd_bitmap *c)
{
    return c->width == d->decode_w && c->height == d->decode_h && d->plan.orientation == 1 && !d->area_cut &&
           !sd__render_composes(&d->plan) && !sd__color_pending(&d->color);
}

/* Frame i into *out: a new bitmap for the caller, or lent (`lend`): the
 * codec's own picture when it needs no resampling or orienting, else one the
 * decoder keeps in d->view until the next lend. */
static int frame_at(sd_decoder *d, uint32_t i, int lend, sd_bitmap **out)
{
    SD__FORWARD_IF_ERROR(frame_exists(d, i));
    sd_bitmap *c;
    int owned, rc;
    if (d->framed) {
        rc = d->codec->frame(d, i, &c, &owned);
        if (rc < 0) /* a later frame that fails ends the animation there */
            return rc == SD_ENOMEM || (i > 0 && i >= d->nframes) ? rc : fail(d, rc);
        if (lend && !owned && presentable(d, c)) {
            *out = c;
            return SD_OK;
        }
        rc = present(d, c, owned, out);
        if (rc == SD_OK && lend)
            d->view = *out;
        return rc == SD_OK || rc == SD_ENOMEM ? rc : fail(d, rc);
    }
    /* A still: its final picture, made once and kept until taken. */
    SD__RETURN_IF(d->taken, SD_EBADSTATE);
    if (d->still == NULL) {
        rc = d->codec->canvas(d, 1, &c, &owned);
        if (rc < 0)
            return fail(d, rc);
        rc = present(d, c, owned, &d->still);
        if (rc < 0)
            return fail(d, rc);
    }
    if (lend) {
        *out = d->still;
        return SD_OK;
    }
    return sd__bitmap_copy(d->still, out);
}

int sd_decoder_icc_profile(const sd_decoder *d, const uint8_t **data, size_t *length)
{
    SD__RETURN_IF(d == NULL || data == NULL || length == NULL, SD_EINVAL);
    *data = NULL;
    *length = 0;
    SD__RETURN_IF(!d->header_ready, SD_EAGAIN);
    *data = d->color.icc;
    *length = d->color.icc_len;
    return SD_OK;
}

int sd_decoder_frame(sd_decoder *d, uint32_t i, sd_bitmap **out)
{
    SD__RETURN_IF(d == NULL || out == NULL, SD_EINVAL);
    *out = NULL;
    SD__RETURN_IF(d->error, SD_EBADSTATE);
    return frame_at(d, i, 0, out);
}

int sd_decoder_frame_view(sd_decoder *d, uint32_t i, const sd_bitmap **out)
{
    SD__RETURN_IF(d == NULL || out == NULL, SD_EINVAL);
    *out = NULL;
    /* what was lent last is given up first, so at most one is held */
    sd_bitmap_free(d->view);
    d->view = NULL;
    SD__RETURN_IF(d->error, SD_EBADSTATE);
    sd_bitmap *b = NULL;
    int rc = frame_at(d, i, 1, &b);
    *out = b;
    return rc;
}

const char *sd_decoder_message(const sd_decoder *d)
{
    return d ? d->message : "";
}

int sd_decoder_decode(sd_decoder *d, const void *data, size_t length, sd_bitmap **out)
{
    SD__RETURN_IF(d == NULL || out == NULL, SD_EINVAL);
    *out = NULL;
    SD__FORWARD_IF_ERROR(sd_decoder_push(d, data, length));
    SD__FORWARD_IF_ERROR(sd_decoder_finish(d));
    return sd_decoder_take_bitmap(d, out);
}

int sd_decode(const void *data, size_t length, sd_bitmap **out)
{
    sd_decoder *d;
    SD__FORWARD_IF_ERROR(sd_decoder_new(&d));
    int rc = sd_decoder_decode(d, data, length, out);
    sd_decoder_free(d);
    return rc;
}

/* ---- the whole-file codecs' common state (sd_decoder_int.h) ---- */

int sd__whole_init(sd_decoder *d, size_t size)
{
    sd__whole *w = sd__calloc(1, size);
    SD__RETURN_IF(w == NULL, SD_ENOMEM);
    w->dec = d;
    d->codec_state = w;
    return SD_OK;
}

int sd__whole_canvas(sd_decoder *d, int final, sd_bitmap **out, int *owned)
{
    sd__whole *w = d->codec_state;
    *owned = 0;
    if (!final || w->canvas == NULL)
        return final ? SD_EBADSTATE : SD_EAGAIN; /* no previews: the whole file first */
    *out = w->canvas;
    *owned = 1;
    w->canvas = NULL;
    return SD_OK;
}

void sd__whole_destroy(sd_decoder *d)
{
    sd__whole *w = d->codec_state;
    if (w == NULL)
        return;
    sd__buf_free(&w->in);
    sd_bitmap_free(w->canvas);
    sd__free(w);
    d->codec_state = NULL;
}
