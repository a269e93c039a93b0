/*
 * sd_render.c — the one render planner (sd_render.h): every size, crop and
 * place of a render, from the source's size and orientation, in the order
 * imgproxy and libvips' thumbnail use. The decoder executes the plan
 * (decode/sd_decoder.c); sd__render_compose draws its last step.
 */
#include "render/sd_render_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SD__SIDE_MAX ((int64_t)1 << 30)

void sd_render_init(sd_render *r)
{
    if (r == NULL)
        return;
    memset(r, 0, sizeof *r);
    r->dpr = 1;
    r->zoom_x = 1;
    r->zoom_y = 1;
    r->auto_rotate = 1;
}

/* An orientation as a mirror (first) and clockwise quarter turns (then). */
static const struct { int turns, mirror; } d4[9] = {
    {0, 0}, {0, 0}, {0, 1}, {2, 0}, {2, 1}, {3, 1}, {1, 0}, {1, 1}, {3, 0},
};

static int orientation_of(int turns, int mirror)
{
    for (int o = 1; o <= 8; o++)
        if (d4[o].turns == turns && d4[o].mirror == mirror)
            return o;
    return 1;
}

int sd__render_orientation(int exif, int auto_rotate, int rotate, int flip_x, int flip_y)
{
    int o = auto_rotate && exif >= 1 && exif <= 8 ? exif : 1;
    int k = d4[o].turns, m = d4[o].mirror;
    k = (k + rotate / 90) & 3;
    if (flip_x) { /* a turn, then a mirror: the mirror first, the turn reversed */
        k = (4 - k) & 3;
        m = !m;
    }
    if (flip_y) { /* a vertical mirror is a horizontal one and a half turn */
        k = (6 - k) & 3;
        m = !m;
    }
    return orientation_of(k, m);
}

sd_rect sd__render_rect_to_stored(int orientation, uint32_t width, uint32_t height, sd_rect r)
{
    if (orientation < 1 || orientation > 8)
        orientation = 1;
    int k = d4[orientation].turns;
    /* undo the turns (each a quarter counter-clockwise), then the mirror;
     * w x h is the image the rectangle is in at each step */
    int64_t w = (k & 1) ? height : width, h = (k & 1) ? width : height;
    for (int i = 0; i < k; i++) {
        sd_rect t = {r.y, w - r.x - r.width, r.height, r.width};
        int64_t s = w;
        w = h;
        h = s;
        r = t;
    }
    if (d4[orientation].mirror)
        r.x = w - r.x - r.width;
    return r;
}

/* imgproxy's calc_position: where an inner w x h starts in an outer one,
 * by gravity and offsets (`dpr` times those of 1 or more), clamped inside. */
static void position(int64_t outer_w, int64_t outer_h, int64_t inner_w, int64_t inner_h, const sd_gravity *g,
                     double dpr, int64_t *px, int64_t *py)
{
    double fx = (double)(outer_w - inner_w), fy = (double)(outer_h - inner_h), x, y;
    if (g->type == SD_GRAVITY_FOCUS_POINT) {
        x = nearbyint(g->x * (double)outer_w) - (double)(inner_w / 2);
        y = nearbyint(g->y * (double)outer_h) - (double)(inner_h / 2);
    } else {
        double ox = nearbyint(fabs(g->x) >= 1 ? g->x * dpr : g->x * (double)outer_w);
        double oy = nearbyint(fabs(g->y) >= 1 ? g->y * dpr : g->y * (double)outer_h);
        x = fx / 2 + ox;
        y = fy / 2 + oy;
        switch (g->type) {
        case SD_GRAVITY_NORTH: y = oy; break;
        case SD_GRAVITY_SOUTH: y = fy - oy; break;
        case SD_GRAVITY_EAST: x = fx - ox; break;
        case SD_GRAVITY_WEST: x = ox; break;
        case SD_GRAVITY_NORTH_EAST: x = fx - ox; y = oy; break;
        case SD_GRAVITY_NORTH_WEST: x = ox; y = oy; break;
        case SD_GRAVITY_SOUTH_EAST: x = fx - ox; y = fy - oy; break;
        case SD_GRAVITY_SOUTH_WEST: x = ox; y = fy - oy; break;
        default: break;
        }
    }
    *px = (int64_t)floor(fmax(0, fmin(fx, x)));
    *py = (int64_t)floor(fmax(0, fmin(fy, y)));
}

static int64_t crop_side(double v, int64_t full)
{
    if (v <= 0)
        return full;
    double s = nearbyint(v < 1 ? v * (double)full : v);
    return (int64_t)fmax(1, fmin((double)full, s));
}

static int gravity_ok(const sd_gravity *g, int smart)
{
    return g->type >= SD_GRAVITY_CENTER && g->type <= (smart ? SD_GRAVITY_SMART : SD_GRAVITY_FOCUS_POINT) &&
           isfinite(g->x) && isfinite(g->y);
}

static int64_t px(double v)
{
    return (int64_t)fmax(1, nearbyint(v));
}

int sd_render_plan_for(const sd_render *r, uint32_t width, uint32_t height, int orientation, sd_render_plan *out)
{
    SD__RETURN_IF(r == NULL || out == NULL || width == 0 || height == 0, SD_EINVAL);
    SD__RETURN_IF(!(r->dpr > 0 && r->dpr <= 64) || !(r->zoom_x > 0 && r->zoom_x <= 1024) ||
                      !(r->zoom_y > 0 && r->zoom_y <= 1024),
                  SD_EINVAL);
    SD__RETURN_IF(r->rotate % 90 != 0 || r->resize < SD_RESIZE_FIT || r->resize > SD_RESIZE_AUTO, SD_EINVAL);
    /* a smart cut needs the pixels: only the box's, made after decoding;
     * the source crop is placed before (and without its own gravity, by
     * the centre then) */
    SD__RETURN_IF(!gravity_ok(&r->gravity, 1) || !gravity_ok(&r->crop_gravity, 0) ||
                      !gravity_ok(&r->extend_gravity, 0) || !gravity_ok(&r->extend_aspect_gravity, 0) ||
                      !isfinite(r->crop_width) ||
                      !isfinite(r->crop_height),
                  SD_EINVAL);
    memset(out, 0, sizeof *out);
    int rot = ((r->rotate % 360) + 360) % 360;
    int o = sd__render_orientation(orientation, r->auto_rotate, rot, r->flip_x, r->flip_y);
    out->orientation = o;
    int64_t uw = (o >= 5) ? height : width, uh = (o >= 5) ? width : height;
    out->upright_width = (uint32_t)uw;
    out->upright_height = (uint32_t)uh;

    /* 1. the source crop, in source pixels (offsets too: dpr 1) */
    int64_t aw = crop_side(r->crop_width, uw), ah = crop_side(r->crop_height, uh), ax = 0, ay = 0;
    const sd_gravity centre = {SD_GRAVITY_CENTER, 0, 0};
    const sd_gravity *ag = r->crop_gravity_set ? &r->crop_gravity : &r->gravity;
    position(uw, uh, aw, ah, ag->type == SD_GRAVITY_SMART ? &centre : ag, 1, &ax, &ay);
    out->area = (sd_rect){ax, ay, aw, ah};

    /* 2. the scale, by the resize type, into the box in device pixels */
    double dpr = r->dpr;
    int64_t tw = (int64_t)nearbyint(r->width * dpr), th = (int64_t)nearbyint(r->height * dpr);
    double sw = (double)aw, sh = (double)ah;
    int type = r->resize;
    if (type == SD_RESIZE_AUTO)
        type = tw > 0 && th > 0 && (aw >= ah) == (tw >= th) ? SD_RESIZE_FILL : SD_RESIZE_FIT;
    if ((type == SD_RESIZE_FILL || type == SD_RESIZE_FILL_DOWN) && (tw == 0 || th == 0))
        type = SD_RESIZE_FIT;
    int64_t scaled_w, scaled_h, cut_w, cut_h;
    if (type == SD_RESIZE_FORCE) {
        double w = (tw > 0 ? (double)tw : sw) * r->zoom_x, h = (th > 0 ? (double)th : sh) * r->zoom_y;
        if (!r->enlarge) {
            w = fmin(w, sw);
            h = fmin(h, sh);
        }
        scaled_w = px(w);
        scaled_h = px(h);
        cut_w = scaled_w;
        cut_h = scaled_h;
    } else if (type == SD_RESIZE_FIT) {
        double s = fmin(tw > 0 ? (double)tw / sw : INFINITY, th > 0 ? (double)th / sh : INFINITY);
        if (!isfinite(s))
            s = 1;
        double sx = s * r->zoom_x, sy = s * r->zoom_y;
        if (!r->enlarge && fmin(sx, sy) > 1) {
            double k = fmin(sx, sy);
            sx /= k;
            sy /= k;
        }
        if (r->zoom_x == 1 && r->zoom_y == 1 && sx == s && sy == s && s < 1 && tw > 0 &&
            (th == 0 || tw * ah <= th * aw)) {
            /* the width binds: exact integers, as SDWebImage's thumbnails */
            scaled_w = tw;
            scaled_h = SD__MAX(1, (ah * tw + aw / 2) / aw);
        } else if (r->zoom_x == 1 && r->zoom_y == 1 && sx == s && sy == s && s < 1) {
            scaled_h = th;
            scaled_w = SD__MAX(1, (aw * th + ah / 2) / ah);
        } else {
            scaled_w = px(sw * sx);
            scaled_h = px(sh * sy);
        }
        cut_w = scaled_w;
        cut_h = scaled_h;
    } else { /* fill, fill-down */
        double s = fmax((double)tw / sw, (double)th / sh);
        double cw = (double)tw, ch = (double)th;
        double sx = s * r->zoom_x, sy = s * r->zoom_y;
        if (fmin(sx, sy) > 1 && !r->enlarge) {
            double k = fmin(sx, sy);
            sx /= k;
            sy /= k;
            if (type == SD_RESIZE_FILL_DOWN) { /* the box's aspect, as large as the source allows */
                double f = fmin(sw / (double)tw, sh / (double)th);
                cw = (double)tw * f;
                ch = (double)th * f;
            } else {
                cw = fmin(cw, sw);
                ch = fmin(ch, sh);
            }
        }
        scaled_w = px(sw * sx);
        scaled_h = px(sh * sy);
        cut_w = SD__MIN(scaled_w, px(cw));
        cut_h = SD__MIN(scaled_h, px(ch));
    }
    /* at least the minimum sizes (enlarging if need be), the box's crop kept */
    double mw = r->min_width * dpr, mh = r->min_height * dpr;
    if ((mw > 0 && (double)scaled_w < mw) || (mh > 0 && (double)scaled_h < mh)) {
        double k = fmax(mw > 0 ? mw / (double)scaled_w : 1, mh > 0 ? mh / (double)scaled_h : 1);
        int whole = cut_w == scaled_w && cut_h == scaled_h;
        scaled_w = px((double)scaled_w * k);
        scaled_h = px((double)scaled_h * k);
        if (whole) {
            cut_w = scaled_w;
            cut_h = scaled_h;
        }
    }
    SD__RETURN_IF(scaled_w > SD__SIDE_MAX || scaled_h > SD__SIDE_MAX, SD_ETOOLARGE);
    out->scaled_width = (uint32_t)scaled_w;
    out->scaled_height = (uint32_t)scaled_h;

    /* 3. the box's crop, by the gravity (offsets in CSS pixels) */
    int64_t cx = 0, cy = 0;
    position(scaled_w, scaled_h, cut_w, cut_h, &r->gravity, dpr, &cx, &cy);
    out->cut = (sd_rect){cx, cy, cut_w, cut_h};

    /* 4. extended to the box, or to its aspect ratio */
    int64_t ow = cut_w, oh = cut_h, placex = 0, placey = 0;
    if (r->extend && ((tw > 0 && tw > cut_w) || (th > 0 && th > cut_h))) {
        ow = SD__MAX(cut_w, tw);
        oh = SD__MAX(cut_h, th);
        position(ow, oh, cut_w, cut_h, &r->extend_gravity, dpr, &placex, &placey);
    } else if (r->extend_aspect && tw > 0 && th > 0) {
        /* the smallest canvas of the box's aspect that holds the image */
        if (cut_w * th > cut_h * tw)
            oh = SD__MAX(cut_h, (cut_w * th + tw / 2) / tw);
        else
            ow = SD__MAX(cut_w, (cut_h * tw + th / 2) / th);
        position(ow, oh, cut_w, cut_h, &r->extend_aspect_gravity, dpr, &placex, &placey);
    }
    /* 5. padded */
    int64_t pt = (int64_t)nearbyint(r->pad_top * dpr), pr = (int64_t)nearbyint(r->pad_right * dpr);
    int64_t pb = (int64_t)nearbyint(r->pad_bottom * dpr), pl = (int64_t)nearbyint(r->pad_left * dpr);
    ow += pl + pr;
    oh += pt + pb;
    placex += pl;
    placey += pt;
    SD__RETURN_IF(ow > SD__SIDE_MAX || oh > SD__SIDE_MAX, SD_ETOOLARGE);
    out->width = (uint32_t)ow; /* told even when over the limits */
    out->height = (uint32_t)oh;
    SD__RETURN_IF(r->max_result_side > 0 && (ow > r->max_result_side || oh > r->max_result_side), SD_ETOOLARGE);
    SD__RETURN_IF(r->max_result_pixels > 0 && ow * oh > r->max_result_pixels, SD_ETOOLARGE);
    out->place_x = placex;
    out->place_y = placey;
    return SD_OK;
}

/* One side's busiest window: `score` summed over the other axis, as n
 * values; the start of the `len` window with the largest sum (the one
 * nearest the middle among equals). */
static int64_t busiest(const uint64_t *score, int64_t n, int64_t len)
{
    uint64_t sum = 0, best = 0;
    int64_t at = 0, mid = (n - len) / 2;
    for (int64_t i = 0; i < len; i++)
        sum += score[i];
    best = sum;
    for (int64_t s = 1; s + len <= n; s++) {
        sum += score[s + len - 1] - score[s - 1];
        if (sum > best || (sum == best && llabs(s - mid) < llabs(at - mid))) {
            best = sum;
            at = s;
        }
    }
    return at;
}

int sd__render_smart_cut(const sd_bitmap *b, sd_render_plan *p)
{
    int64_t w = b->width, h = b->height;
    SD__RETURN_IF(w != p->scaled_width || h != p->scaled_height, SD_EINVAL);
    if (p->cut.width >= w && p->cut.height >= h)
        return SD_OK;
    uint64_t *cols = sd__calloc((size_t)(w + h), sizeof *cols);
    SD__RETURN_IF(cols == NULL, SD_ENOMEM);
    uint64_t *rows = cols + w;
    /* what draws the eye, per pixel: luma edges to the right and below
     * (detail, faces' features, text) and saturation (colourful things
     * against dull ground); premultiplied, so transparency scores nothing */
    for (int64_t y = 0; y < h; y++) {
        const uint8_t *row = b->pixels + (size_t)y * b->stride;
        const uint8_t *below = y + 1 < h ? row + b->stride : row;
        for (int64_t x = 0; x < w; x++) {
            uint32_t px = ((const uint32_t *)(const void *)row)[x];
            uint32_t right = ((const uint32_t *)(const void *)row)[x + 1 < w ? x + 1 : x];
            uint32_t down = ((const uint32_t *)(const void *)below)[x];
            int r = (px >> 16) & 0xff, g = (px >> 8) & 0xff, bl = px & 0xff;
            int l = (r * 77 + g * 150 + bl * 29) >> 8;
            int lr = ((((right >> 16) & 0xff) * 77 + ((right >> 8) & 0xff) * 150 + (right & 0xff) * 29) >> 8);
            int ld = ((((down >> 16) & 0xff) * 77 + ((down >> 8) & 0xff) * 150 + (down & 0xff) * 29) >> 8);
            int mx = r > g ? (r > bl ? r : bl) : (g > bl ? g : bl), mn = r < g ? (r < bl ? r : bl) : (g < bl ? g : bl);
            uint64_t v = (uint64_t)(abs(l - lr) + abs(l - ld)) * 2 + (uint64_t)(mx - mn);
            cols[x] += v;
            rows[y] += v;
        }
    }
    if (p->cut.width < w)
        p->cut.x = busiest(cols, w, p->cut.width);
    if (p->cut.height < h)
        p->cut.y = busiest(rows, h, p->cut.height);
    sd__free(cols);
    return SD_OK;
}

int sd__render_composes(const sd_render_plan *p)
{
    return p->cut.x != 0 || p->cut.y != 0 || p->cut.width != p->scaled_width || p->cut.height != p->scaled_height ||
           p->width != p->cut.width || p->height != p->cut.height;
}

int sd__render_compose(const sd_bitmap *scaled, const sd_render_plan *p, uint32_t background, sd_bitmap **out)
{
    *out = NULL;
    SD__RETURN_IF(scaled->width != p->scaled_width || scaled->height != p->scaled_height, SD_EINVAL);
    sd_bitmap *b;
    SD__FORWARD_IF_ERROR(sd__bitmap_alloc(p->width, p->height, background == 0, &b));
    if (background != 0) { /* premultiplied, native order: what every pixel here is */
        uint32_t a = background >> 24, pr = ((background >> 16) & 0xff) * a, pg = ((background >> 8) & 0xff) * a,
                 pb = (background & 0xff) * a;
        uint32_t px = a << 24 | ((pr + 127) / 255) << 16 | ((pg + 127) / 255) << 8 | ((pb + 127) / 255);
        for (uint32_t y = 0; y < b->height; y++) {
            uint32_t *row = (uint32_t *)(void *)(b->pixels + (size_t)y * b->stride);
            for (uint32_t x = 0; x < b->width; x++)
                row[x] = px;
        }
    }
    for (int64_t y = 0; y < p->cut.height; y++) {
        const uint8_t *s = scaled->pixels + (size_t)(p->cut.y + y) * scaled->stride + (size_t)p->cut.x * 4;
        uint8_t *d = b->pixels + (size_t)(p->place_y + y) * b->stride + (size_t)p->place_x * 4;
        memcpy(d, s, (size_t)p->cut.width * 4);
    }
    *out = b;
    return SD_OK;
}
