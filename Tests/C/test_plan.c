/*
 * test_plan.c — the render plan (sd_render.h): its geometry for every resize
 * type, gravity, crop, extend, padding, zoom, minimum size, dpr and the
 * result limits, worked out by hand here; its one orientation against the
 * same turns and flips applied one by one with sd_bitmap_orient; and the
 * decoder executing it on colour-coded sources as a client sees them —
 * which stripe each crop keeps, the canvas colours, shrinking on load for
 * fill and crops, and a result over the limit refused before its pixels.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sd_test.h"
#include "sd_test_util.h"
#include "sd_test_encode.h"

static sd_render box(uint32_t w, uint32_t h, int resize)
{
    sd_render r;
    sd_render_init(&r);
    r.width = w;
    r.height = h;
    r.resize = resize;
    return r;
}

#define PLAN(r, w, h, o, p) ASSERT_OK(sd_render_plan_for(&(r), (w), (h), (o), &(p)))
#define SIZE(p_, w_, h_)                                                                                     \
    do {                                                                                                     \
        ASSERT_EQ((p_).width, (w_));                                                                         \
        ASSERT_EQ((p_).height, (h_));                                                                        \
    } while (0)
#define CUT(p_, x_, y_, w_, h_)                                                                              \
    do {                                                                                                     \
        ASSERT_EQ((p_).cut.x, (x_));                                                                         \
        ASSERT_EQ((p_).cut.y, (y_));                                                                         \
        ASSERT_EQ((p_).cut.width, (w_));                                                                     \
        ASSERT_EQ((p_).cut.height, (h_));                                                                    \
    } while (0)

static int test_resize_types(void)
{
    sd_render r;
    sd_render_plan p;
    r = box(200, 200, SD_RESIZE_FIT);
    PLAN(r, 1000, 500, 1, p);
    SIZE(p, 200, 100);
    ASSERT_EQ(p.scaled_width, 200);
    r = box(0, 0, SD_RESIZE_FIT); /* no box: the source */
    PLAN(r, 1000, 500, 1, p);
    SIZE(p, 1000, 500);
    r = box(200, 200, SD_RESIZE_FILL); /* 0.4: 400 x 200, the middle 200 */
    PLAN(r, 1000, 500, 1, p);
    ASSERT_EQ(p.scaled_width, 400);
    ASSERT_EQ(p.scaled_height, 200);
    CUT(p, 100, 0, 200, 200);
    SIZE(p, 200, 200);
    r = box(200, 0, SD_RESIZE_FILL); /* one side: a fit */
    PLAN(r, 1000, 500, 1, p);
    SIZE(p, 200, 100);
    r = box(200, 200, SD_RESIZE_FILL_DOWN); /* smaller source: the box's aspect */
    PLAN(r, 100, 50, 1, p);
    CUT(p, 25, 0, 50, 50);
    r = box(200, 200, SD_RESIZE_FILL); /* smaller source, fill: what there is */
    PLAN(r, 100, 50, 1, p);
    CUT(p, 0, 0, 100, 50);
    r = box(300, 300, SD_RESIZE_FORCE);
    PLAN(r, 1000, 500, 1, p);
    SIZE(p, 300, 300);
    PLAN(r, 100, 50, 1, p); /* never enlarged */
    SIZE(p, 100, 50);
    r.enlarge = 1;
    PLAN(r, 100, 50, 1, p);
    SIZE(p, 300, 300);
    r = box(300, 100, SD_RESIZE_AUTO); /* both landscape: fill */
    PLAN(r, 1000, 500, 1, p);
    SIZE(p, 300, 100);
    r = box(100, 300, SD_RESIZE_AUTO); /* across: fit */
    PLAN(r, 1000, 500, 1, p);
    SIZE(p, 100, 50);
    r = box(400, 400, SD_RESIZE_FIT);
    r.enlarge = 1;
    PLAN(r, 100, 50, 1, p);
    SIZE(p, 400, 200);
    r = box(100, 100, SD_RESIZE_FIT); /* dpr: the box in device pixels */
    r.dpr = 2;
    PLAN(r, 1000, 500, 1, p);
    SIZE(p, 200, 100);
    r = box(0, 0, SD_RESIZE_FIT); /* zoom multiplies the scale */
    r.zoom_x = r.zoom_y = 0.5;
    PLAN(r, 1000, 500, 1, p);
    SIZE(p, 500, 250);
    r = box(100, 100, SD_RESIZE_FORCE);
    r.zoom_x = 0.5;
    PLAN(r, 1000, 500, 1, p);
    SIZE(p, 50, 100);
    r = box(100, 100, SD_RESIZE_FIT); /* a minimum width enlarges what the box made */
    r.min_width = 200;
    PLAN(r, 1000, 500, 1, p);
    SIZE(p, 200, 100);
    r.min_width = 0;
    r.min_height = 100;
    PLAN(r, 1000, 500, 1, p);
    SIZE(p, 200, 100);
    return 0;
}

static int test_gravity(void)
{
    sd_render r = box(200, 200, SD_RESIZE_FILL);
    sd_render_plan p;
    static const struct { int g; int64_t x; } edges[] = {
        {SD_GRAVITY_CENTER, 100}, {SD_GRAVITY_WEST, 0}, {SD_GRAVITY_EAST, 200},
        {SD_GRAVITY_NORTH_WEST, 0}, {SD_GRAVITY_SOUTH_EAST, 200}, {SD_GRAVITY_NORTH, 100},
    };
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
        r.gravity.type = edges[i].g;
        PLAN(r, 1000, 500, 1, p);
        CUT(p, edges[i].x, 0, 200, 200);
    }
    /* offsets: CSS pixels times dpr, inwards from the gravity's edge */
    r = box(100, 100, SD_RESIZE_FILL);
    r.dpr = 2;
    r.gravity = (sd_gravity){SD_GRAVITY_WEST, 10, 0};
    PLAN(r, 1000, 500, 1, p);
    CUT(p, 20, 0, 200, 200);
    r.gravity = (sd_gravity){SD_GRAVITY_EAST, 10, 0};
    PLAN(r, 1000, 500, 1, p);
    CUT(p, 180, 0, 200, 200);
    r.gravity = (sd_gravity){SD_GRAVITY_CENTER, 30, 0};
    PLAN(r, 1000, 500, 1, p);
    CUT(p, 160, 0, 200, 200);
    /* below 1: a fraction of the scaled side (0.1 of 400), dpr aside */
    r.gravity = (sd_gravity){SD_GRAVITY_WEST, 0.1, 0};
    PLAN(r, 1000, 500, 1, p);
    CUT(p, 40, 0, 200, 200);
    /* clamped inside */
    r.gravity = (sd_gravity){SD_GRAVITY_WEST, 500, 0};
    PLAN(r, 1000, 500, 1, p);
    CUT(p, 200, 0, 200, 200);
    /* a focus point is kept in the middle where it can be */
    r = box(200, 200, SD_RESIZE_FILL);
    r.gravity = (sd_gravity){SD_GRAVITY_FOCUS_POINT, 0.75, 0.5};
    PLAN(r, 1000, 500, 1, p);
    CUT(p, 200, 0, 200, 200); /* 300 - 100, clamped at 200 */
    r.gravity = (sd_gravity){SD_GRAVITY_FOCUS_POINT, 0.4, 0.5};
    PLAN(r, 1000, 500, 1, p);
    CUT(p, 60, 0, 200, 200);
    r.gravity = (sd_gravity){SD_GRAVITY_FOCUS_POINT, 0.5, 0.1}; /* portrait source, vertical */
    PLAN(r, 500, 1000, 1, p);
    CUT(p, 0, 0, 200, 200);
    r.gravity = (sd_gravity){SD_GRAVITY_FOCUS_POINT, 0.5, 0.6};
    PLAN(r, 500, 1000, 1, p);
    CUT(p, 0, 140, 200, 200);
    return 0;
}

static int test_crop_extend_pad(void)
{
    sd_render r = box(100, 100, SD_RESIZE_FIT);
    sd_render_plan p;
    r.crop_width = 0.5; /* half of each side, in the middle */
    r.crop_height = 0.5;
    PLAN(r, 1000, 500, 1, p);
    ASSERT_EQ(p.area.x, 250);
    ASSERT_EQ(p.area.y, 125);
    ASSERT_EQ(p.area.width, 500);
    ASSERT_EQ(p.area.height, 250);
    SIZE(p, 100, 50);
    r.crop_gravity_set = 1; /* its own gravity, offsets in source pixels (dpr aside) */
    r.dpr = 3;
    r.crop_gravity = (sd_gravity){SD_GRAVITY_SOUTH_EAST, 10, 20};
    r.width = r.height = 0;
    PLAN(r, 1000, 500, 1, p);
    ASSERT_EQ(p.area.x, 490);
    ASSERT_EQ(p.area.y, 230);
    r = box(100, 100, SD_RESIZE_FIT);
    r.crop_width = 300; /* source pixels; 0 keeps a side */
    PLAN(r, 1000, 500, 1, p);
    ASSERT_EQ(p.area.width, 300);
    ASSERT_EQ(p.area.height, 500);
    SIZE(p, 60, 100);

    r = box(200, 200, SD_RESIZE_FIT); /* extended to the box */
    r.extend = 1;
    PLAN(r, 1000, 500, 1, p);
    SIZE(p, 200, 200);
    ASSERT_EQ(p.place_x, 0);
    ASSERT_EQ(p.place_y, 50);
    r.extend_gravity = (sd_gravity){SD_GRAVITY_SOUTH, 0, 0};
    PLAN(r, 1000, 500, 1, p);
    ASSERT_EQ(p.place_y, 100);
    r.extend_gravity = (sd_gravity){SD_GRAVITY_NORTH, 0, 10};
    PLAN(r, 1000, 500, 1, p);
    ASSERT_EQ(p.place_y, 10);
    r = box(100, 100, SD_RESIZE_FIT); /* to the box's aspect, no larger */
    r.extend_aspect = 1;
    PLAN(r, 2000, 500, 1, p);
    SIZE(p, 100, 100);
    ASSERT_EQ(p.place_y, 37);
    r = box(1000, 1000, SD_RESIZE_FIT); /* a box larger than the source: its aspect */
    r.extend_aspect = 1;
    PLAN(r, 400, 100, 1, p);
    SIZE(p, 400, 400);

    r = box(100, 100, SD_RESIZE_FIT); /* padding, last, times dpr */
    r.pad_top = 10, r.pad_right = 20, r.pad_bottom = 30, r.pad_left = 40;
    PLAN(r, 1000, 500, 1, p);
    SIZE(p, 160, 90);
    ASSERT_EQ(p.place_x, 40);
    ASSERT_EQ(p.place_y, 10);
    r.dpr = 2;
    PLAN(r, 1000, 500, 1, p);
    SIZE(p, 320, 180);
    return 0;
}

static int test_limits_and_arguments(void)
{
    sd_render r = box(4000, 4000, SD_RESIZE_FORCE);
    sd_render_plan p;
    r.enlarge = 1;
    r.max_result_pixels = 1000000;
    ASSERT_EQ(sd_render_plan_for(&r, 10, 10, 1, &p), SD_ETOOLARGE);
    ASSERT_EQ(p.width, 4000); /* told all the same */
    r.max_result_pixels = 0;
    r.max_result_side = 3999;
    ASSERT_EQ(sd_render_plan_for(&r, 10, 10, 1, &p), SD_ETOOLARGE);
    r.max_result_side = 4000;
    PLAN(r, 10, 10, 1, p);
    r = box(1u << 31, 1, SD_RESIZE_FORCE); /* absurd sides */
    r.enlarge = 1;
    ASSERT_EQ(sd_render_plan_for(&r, 10, 10, 1, &p), SD_ETOOLARGE);
    r = box(10, 10, SD_RESIZE_FIT);
    r.dpr = 0;
    ASSERT_EQ(sd_render_plan_for(&r, 10, 10, 1, &p), SD_EINVAL);
    r.dpr = NAN;
    ASSERT_EQ(sd_render_plan_for(&r, 10, 10, 1, &p), SD_EINVAL);
    r = box(10, 10, SD_RESIZE_FIT);
    r.rotate = 45;
    ASSERT_EQ(sd_render_plan_for(&r, 10, 10, 1, &p), SD_EINVAL);
    r.rotate = -90; /* the same as 270 */
    PLAN(r, 10, 10, 1, p);
    ASSERT_EQ(p.orientation, 8);
    r = box(10, 10, 9);
    ASSERT_EQ(sd_render_plan_for(&r, 10, 10, 1, &p), SD_EINVAL);
    r = box(10, 10, SD_RESIZE_FILL);
    r.gravity.type = 11;
    ASSERT_EQ(sd_render_plan_for(&r, 10, 10, 1, &p), SD_EINVAL);
    r.gravity.type = SD_GRAVITY_SMART; /* the box's cut may be smart, */
    PLAN(r, 10, 10, 1, p);
    r.crop_gravity_set = 1; /* not the source crop (placed before the pixels exist) */
    r.crop_gravity.type = SD_GRAVITY_SMART;
    ASSERT_EQ(sd_render_plan_for(&r, 10, 10, 1, &p), SD_EINVAL);
    r.crop_gravity_set = 0;
    r.extend = 1;
    r.extend_gravity.type = SD_GRAVITY_SMART;
    ASSERT_EQ(sd_render_plan_for(&r, 10, 10, 1, &p), SD_EINVAL);
    r.gravity.type = SD_GRAVITY_CENTER;
    r.gravity.x = INFINITY;
    ASSERT_EQ(sd_render_plan_for(&r, 10, 10, 1, &p), SD_EINVAL);
    ASSERT_EQ(sd_render_plan_for(NULL, 10, 10, 1, &p), SD_EINVAL);
    r = box(10, 10, SD_RESIZE_FIT);
    ASSERT_EQ(sd_render_plan_for(&r, 0, 10, 1, &p), SD_EINVAL);
    return 0;
}

static sd_bitmap *numbered(uint32_t w, uint32_t h);
static int decode_render(const uint8_t *data, size_t len, const sd_render *r, sd_bitmap **out, int64_t *load_w);

static double pick(unsigned *seed, const double *v, int n)
{
    return v[sd_rand(seed) % (unsigned)n];
}

/* Random plans (every field, sizes from 1 to absurd): refused cleanly or
 * consistent — the area inside the upright source, the cut inside the
 * scaled image, the cut placed inside the result; and the decoder makes
 * exactly the planned size from a small source, without a fault. */
static int test_properties(void)
{
    unsigned seed = 1234;
    static const double sides[] = {0, 1, 2, 3, 7, 64, 99, 100, 255, 1000, 4096, 65536, 1u << 20};
    static const double fracs[] = {0, 0.001, 0.1, 0.5, 0.99, 1, 1.5, 3, 100, 1e6};
    static const double offs[] = {0, -5, 0.25, -0.25, 3, 1e4, -1e4, 0.999};
    sd_bitmap *src = numbered(37, 23);
    ASSERT_NOT_NULL(src);
    uint8_t *png = NULL;
    size_t n;
    ASSERT_OK(enc_png(src, 1, &png, &n));
    int planned = 0, decoded = 0;
    /* under valgrind a tenth: the library's memory on every path, the
     * values checked by the release and ASan runs */
    int rounds = sd_under_valgrind() ? 2000 : 20000;
    for (int i = 0; i < rounds; i++) {
        sd_render r;
        sd_render_init(&r);
        r.width = (uint32_t)pick(&seed, sides, 13);
        r.height = (uint32_t)pick(&seed, sides, 13);
        r.resize = (int)(sd_rand(&seed) % 5);
        r.enlarge = sd_rand(&seed) & 1;
        r.dpr = pick(&seed, fracs, 10) + 0.01;
        r.zoom_x = pick(&seed, fracs, 10) + 0.01;
        r.zoom_y = sd_rand(&seed) & 1 ? r.zoom_x : pick(&seed, fracs, 10) + 0.01;
        r.min_width = (uint32_t)pick(&seed, sides, 9);
        r.min_height = (uint32_t)pick(&seed, sides, 9);
        r.crop_width = pick(&seed, fracs, 10);
        r.crop_height = pick(&seed, fracs, 10);
        r.crop_gravity_set = sd_rand(&seed) & 1;
        r.crop_gravity = (sd_gravity){(int)(sd_rand(&seed) % 10), pick(&seed, offs, 8), pick(&seed, offs, 8)};
        r.gravity = (sd_gravity){(int)(sd_rand(&seed) % 11), pick(&seed, offs, 8), pick(&seed, offs, 8)};
        r.extend = sd_rand(&seed) % 3 == 0;
        r.extend_gravity = (sd_gravity){(int)(sd_rand(&seed) % 10), pick(&seed, offs, 8), pick(&seed, offs, 8)};
        r.extend_aspect = sd_rand(&seed) % 3 == 0;
        r.pad_top = (uint32_t)pick(&seed, sides, 8);
        r.pad_left = (uint32_t)pick(&seed, sides, 6);
        r.auto_rotate = sd_rand(&seed) & 1;
        r.rotate = (int)(sd_rand(&seed) % 8) * 90 - 360;
        r.flip_x = sd_rand(&seed) & 1;
        r.flip_y = sd_rand(&seed) & 1;
        r.max_result_pixels = sd_rand(&seed) & 1 ? 50000000 : 0;
        r.max_result_side = sd_rand(&seed) & 1 ? 16384 : 0;
        uint32_t w = (uint32_t)pick(&seed, sides, 12) + 1, h = (uint32_t)pick(&seed, sides, 12) + 1;
        int o = (int)(sd_rand(&seed) % 10);
        sd_render_plan p;
        int rc = sd_render_plan_for(&r, w, h, o, &p);
        if (rc != SD_OK) {
            ASSERT(rc == SD_ETOOLARGE || rc == SD_EINVAL);
            continue;
        }
        planned++;
        ASSERT(p.orientation >= 1 && p.orientation <= 8);
        ASSERT(p.area.x >= 0 && p.area.y >= 0 && p.area.width >= 1 && p.area.height >= 1);
        ASSERT(p.area.x + p.area.width <= p.upright_width && p.area.y + p.area.height <= p.upright_height);
        ASSERT(p.scaled_width >= 1 && p.scaled_height >= 1);
        ASSERT(p.cut.x >= 0 && p.cut.y >= 0 && p.cut.width >= 1 && p.cut.height >= 1);
        ASSERT(p.cut.x + p.cut.width <= p.scaled_width && p.cut.y + p.cut.height <= p.scaled_height);
        ASSERT(p.place_x >= 0 && p.place_y >= 0);
        ASSERT(p.place_x + p.cut.width <= p.width && p.place_y + p.cut.height <= p.height);
        ASSERT(r.max_result_side == 0 || (p.width <= r.max_result_side && p.height <= r.max_result_side));
        /* decode a few whose result is small enough to make quickly */
        sd_render_plan q;
        if (i % 20 == 0 && sd_render_plan_for(&r, 37, 23, 1, &q) == SD_OK && (uint64_t)q.width * q.height < 4000000 &&
            (uint64_t)q.scaled_width * q.scaled_height < 4000000) {
            sd_bitmap *out;
            ASSERT_OK(decode_render(png, n, &r, &out, NULL));
            ASSERT_EQ(sd_bitmap_width(out), q.width);
            ASSERT_EQ(sd_bitmap_height(out), q.height);
            sd_bitmap_free(out);
            decoded++;
        }
    }
    ASSERT(planned > rounds / 4 && decoded > rounds / 200);
    sd_free(png);
    sd_bitmap_free(src);
    return 0;
}

/* A w x h bitmap whose every pixel says where it is. */
static sd_bitmap *numbered(uint32_t w, uint32_t h)
{
    sd_bitmap *b;
    if (sd_bitmap_new(w, h, &b) != SD_OK)
        return NULL;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint32_t *px = (uint32_t *)(void *)(sd_bitmap_pixels(b) + y * sd_bitmap_stride(b)) + x;
            *px = 0xff000000u | (x << 8) | y;
        }
    return b;
}

static int same_pixels(const sd_bitmap *a, const sd_bitmap *b)
{
    if (sd_bitmap_width(a) != sd_bitmap_width(b) || sd_bitmap_height(a) != sd_bitmap_height(b))
        return 0;
    for (uint32_t y = 0; y < sd_bitmap_height(a); y++)
        if (memcmp(sd_bitmap_pixels(a) + y * sd_bitmap_stride(a), sd_bitmap_pixels(b) + y * sd_bitmap_stride(b),
                   (size_t)sd_bitmap_width(a) * 4) != 0)
            return 0;
    return 1;
}

/* The one orientation equals the EXIF turn, the quarter turns and the flips
 * done one by one; and the upright size is its size. */
static int test_orientation(void)
{
    sd_bitmap *src = numbered(5, 3);
    ASSERT_NOT_NULL(src);
    for (int exif = 1; exif <= 8; exif++)
        for (int ar = 0; ar <= 1; ar++)
            for (int rot = 0; rot < 360; rot += 90)
                for (int f = 0; f < 4; f++) {
                    sd_bitmap *cur = NULL, *t = NULL;
                    ASSERT_OK(sd_bitmap_orient(src, ar ? exif : 1, &cur));
                    for (int k = 0; k < rot / 90; k++) {
                        ASSERT_OK(sd_bitmap_orient(cur, SD_ORIENTATION_RIGHT, &t));
                        sd_bitmap_free(cur);
                        cur = t;
                    }
                    if (f & 1) {
                        ASSERT_OK(sd_bitmap_orient(cur, SD_ORIENTATION_UP_MIRRORED, &t));
                        sd_bitmap_free(cur);
                        cur = t;
                    }
                    if (f & 2) {
                        ASSERT_OK(sd_bitmap_orient(cur, SD_ORIENTATION_DOWN_MIRRORED, &t));
                        sd_bitmap_free(cur);
                        cur = t;
                    }
                    sd_render r;
                    sd_render_init(&r);
                    r.auto_rotate = ar;
                    r.rotate = rot;
                    r.flip_x = f & 1;
                    r.flip_y = (f & 2) != 0;
                    sd_render_plan p;
                    ASSERT_OK(sd_render_plan_for(&r, 5, 3, exif, &p));
                    sd_bitmap *once;
                    ASSERT_OK(sd_bitmap_orient(src, p.orientation, &once));
                    if (!same_pixels(cur, once))
                        SD_TEST_FAIL_("exif %d ar %d rot %d flips %d: orientation %d is not the turns", exif, ar,
                                      rot, f, p.orientation);
                    ASSERT_EQ(p.upright_width, sd_bitmap_width(cur));
                    ASSERT_EQ(p.upright_height, sd_bitmap_height(cur));
                    sd_bitmap_free(once);
                    sd_bitmap_free(cur);
                }
    sd_bitmap_free(src);
    return 0;
}

/* ---- the decoder executing plans ---- */

static const uint32_t stripe_rgb[4] = {0xff0000, 0x00ff00, 0x0000ff, 0xffff00};

/* w x h, four vertical stripes: red, green, blue, yellow, left to right. */
static sd_bitmap *stripes(uint32_t w, uint32_t h)
{
    sd_bitmap *b;
    if (sd_bitmap_new(w, h, &b) != SD_OK)
        return NULL;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint32_t *px = (uint32_t *)(void *)(sd_bitmap_pixels(b) + y * sd_bitmap_stride(b)) + x;
            *px = 0xff000000u | stripe_rgb[x * 4 / w];
        }
    return b;
}

static uint32_t pixel(const sd_bitmap *b, uint32_t x, uint32_t y)
{
    return ((const uint32_t *)(const void *)(sd_bitmap_pixels(b) + y * sd_bitmap_stride(b)))[x];
}

/* The pixel is `rgb` (0xRRGGBB, opaque) within `tol` a channel. */
static int near_rgb(uint32_t px, uint32_t argb, int tol)
{
    for (int s = 0; s < 32; s += 8)
        if (abs((int)((px >> s) & 0xff) - (int)((argb >> s) & 0xff)) > tol)
            return 0;
    return 1;
}

static int decode_render(const uint8_t *data, size_t len, const sd_render *r, sd_bitmap **out, int64_t *load_w)
{
    sd_decoder *d;
    int rc = sd_decoder_new(&d);
    if (rc == SD_OK)
        rc = sd_decoder_set_render(d, r);
    if (rc == SD_OK)
        rc = sd_decoder_decode(d, data, len, out);
    if (rc == SD_OK && load_w)
        sd_decoder_get(d, SD_DEC_INFO_LOAD_WIDTH, load_w);
    int64_t ow = 0, oh = 0;
    if (rc == SD_OK) { /* what the header told is what came out */
        sd_decoder_get(d, SD_DEC_INFO_OUTPUT_WIDTH, &ow);
        sd_decoder_get(d, SD_DEC_INFO_OUTPUT_HEIGHT, &oh);
        if (ow != sd_bitmap_width(*out) || oh != sd_bitmap_height(*out))
            rc = SD_EBADSTATE;
    }
    sd_decoder_free(d);
    return rc;
}

#define EXPECT_RGB(b, x, y, rgb)                                                                             \
    do {                                                                                                     \
        uint32_t px_ = pixel((b), (x), (y));                                                                 \
        if (!near_rgb(px_, 0xff000000u | (rgb), 12))                                                         \
            SD_TEST_FAIL_("(%u, %u) is %08x, not %06x", (unsigned)(x), (unsigned)(y), px_, (unsigned)(rgb)); \
    } while (0)

/* Fill crops by the gravity, as sampled by a client, from a PNG and a JPEG
 * that shrink on load: 1600 x 800 into 100 x 100 is 200 x 100 scaled, an
 * eighth of the source, so the codecs read a quarter (margin 2). */
static int test_decoder_fill(void)
{
    sd_bitmap *src = stripes(1600, 800);
    ASSERT_NOT_NULL(src);
    uint8_t *png = NULL, *jpg = NULL;
    size_t png_n, jpg_n;
    ASSERT_OK(enc_png(src, 1, &png, &png_n));
    ASSERT_OK(enc_jpeg(src, 95, 0, &jpg, &jpg_n));
    for (int k = 0; k < 2; k++) {
        const uint8_t *data = k ? jpg : png;
        size_t n = k ? jpg_n : png_n;
        sd_render r = box(100, 100, SD_RESIZE_FILL);
        sd_bitmap *o;
        int64_t load_w = 0;
        r.gravity.type = SD_GRAVITY_WEST; /* the red and green stripes */
        ASSERT_OK(decode_render(data, n, &r, &o, &load_w));
        ASSERT_EQ(sd_bitmap_width(o), 100);
        ASSERT_EQ(sd_bitmap_height(o), 100);
        ASSERT_EQ(load_w, 400); /* shrunk on load */
        EXPECT_RGB(o, 20, 50, stripe_rgb[0]);
        EXPECT_RGB(o, 80, 50, stripe_rgb[1]);
        sd_bitmap_free(o);
        r.gravity.type = SD_GRAVITY_EAST; /* blue and yellow */
        ASSERT_OK(decode_render(data, n, &r, &o, NULL));
        EXPECT_RGB(o, 20, 50, stripe_rgb[2]);
        EXPECT_RGB(o, 80, 50, stripe_rgb[3]);
        sd_bitmap_free(o);
        r.gravity.type = SD_GRAVITY_CENTER; /* green and blue */
        ASSERT_OK(decode_render(data, n, &r, &o, NULL));
        EXPECT_RGB(o, 20, 50, stripe_rgb[1]);
        EXPECT_RGB(o, 80, 50, stripe_rgb[2]);
        sd_bitmap_free(o);
    }
    sd_free(png);
    sd_free(jpg);
    sd_bitmap_free(src);
    return 0;
}

/* The byte budget (SD_DEC_MAX_BYTES) binds a render that is a plain
 * resize as it binds the box (SDWebImage hands its thumbnail box over as a
 * render): the same size from both; a render that cuts keeps its plan. */
static int decode_budget(const uint8_t *data, size_t n, const sd_render *r, int64_t budget, uint32_t *w, uint32_t *h)
{
    sd_decoder *d;
    ASSERT_OK(sd_decoder_new(&d));
    if (r != NULL) {
        ASSERT_OK(sd_decoder_set_render(d, r));
    } else {
        ASSERT_OK(sd_decoder_set(d, SD_DEC_TARGET_WIDTH, 800));
        ASSERT_OK(sd_decoder_set(d, SD_DEC_TARGET_HEIGHT, 800));
    }
    ASSERT_OK(sd_decoder_set(d, SD_DEC_MAX_BYTES, budget));
    sd_bitmap *o;
    ASSERT_OK(sd_decoder_decode(d, data, n, &o));
    *w = sd_bitmap_width(o);
    *h = sd_bitmap_height(o);
    sd_bitmap_free(o);
    sd_decoder_free(d);
    return 0;
}

static int test_decoder_byte_budget(void)
{
    sd_bitmap *src = stripes(1600, 800);
    ASSERT_NOT_NULL(src);
    uint8_t *png = NULL;
    size_t n;
    ASSERT_OK(enc_png(src, 1, &png, &n));
    uint32_t bw, bh, rw, rh;
    sd_render fit = box(800, 800, SD_RESIZE_FIT);
    ASSERT_EQ(decode_budget(png, n, NULL, 200 * 100 * 4, &bw, &bh), 0);
    ASSERT_EQ(decode_budget(png, n, &fit, 200 * 100 * 4, &rw, &rh), 0);
    ASSERT_EQ(bw, 200);
    ASSERT_EQ(bh, 100);
    ASSERT_EQ(rw, bw); /* the box's size */
    ASSERT_EQ(rh, bh);
    /* a fill cuts: its plan stands (100 x 100 is within the budget anyway,
     * 400 x 400 past it keeps its size) */
    sd_render fill = box(400, 400, SD_RESIZE_FILL);
    ASSERT_EQ(decode_budget(png, n, &fill, 200 * 100 * 4, &rw, &rh), 0);
    ASSERT_EQ(rw, 400);
    ASSERT_EQ(rh, 400);
    sd_free(png);
    sd_bitmap_free(src);
    return 0;
}

/* A source crop of a turned image: rotated a quarter clockwise, the left
 * stripe is the top; a crop of the top quarter is red, of the bottom one
 * yellow; shrinking on load still happens for the crop's scale. */
static int test_decoder_crop_turned(void)
{
    sd_bitmap *src = stripes(1600, 800);
    ASSERT_NOT_NULL(src);
    uint8_t *png = NULL;
    size_t n;
    ASSERT_OK(enc_png(src, 1, &png, &n));
    static const struct { int g; uint32_t rgb; } cases[] = {
        {SD_GRAVITY_NORTH, 0xff0000}, {SD_GRAVITY_SOUTH, 0xffff00},
    };
    for (size_t i = 0; i < 2; i++) {
        sd_render r = box(100, 0, SD_RESIZE_FIT);
        r.rotate = 90; /* upright: 800 x 1600, stripes across, red on top */
        r.crop_width = 0;
        r.crop_height = 400; /* a quarter: one stripe */
        r.gravity.type = cases[i].g;
        sd_bitmap *o;
        int64_t load_w = 0;
        ASSERT_OK(decode_render(png, n, &r, &o, &load_w));
        ASSERT_EQ(sd_bitmap_width(o), 100);
        ASSERT_EQ(sd_bitmap_height(o), 50);
        ASSERT(load_w < 1600);
        /* the stripe's inside, away from the resampler's reach across its edge */
        for (uint32_t y = 5; y < 45; y += 4)
            for (uint32_t x = 0; x < 100; x += 9)
                EXPECT_RGB(o, x, y, cases[i].rgb);
        sd_bitmap_free(o);
    }
    sd_free(png);
    sd_bitmap_free(src);
    return 0;
}

/* A source crop, unscaled, of the image turned and flipped every way:
 * exactly those pixels of the turned image (the crop mapped back to the
 * stored pixels right). */
static int test_decoder_crop_every_turn(void)
{
    sd_bitmap *src = numbered(60, 40);
    ASSERT_NOT_NULL(src);
    uint8_t *png = NULL;
    size_t n;
    ASSERT_OK(enc_png(src, 1, &png, &n));
    for (int rot = 0; rot < 360; rot += 90)
        for (int f = 0; f < 4; f++) {
            sd_render r;
            sd_render_init(&r);
            r.rotate = rot;
            r.flip_x = f & 1;
            r.flip_y = (f & 2) != 0;
            r.crop_width = 20;
            r.crop_height = 10;
            r.crop_gravity_set = 1;
            r.crop_gravity = (sd_gravity){SD_GRAVITY_SOUTH_EAST, 3, 2};
            sd_render_plan p;
            ASSERT_OK(sd_render_plan_for(&r, 60, 40, 1, &p));
            sd_bitmap *o, *turned;
            ASSERT_OK(decode_render(png, n, &r, &o, NULL));
            ASSERT_OK(sd_bitmap_orient(src, p.orientation, &turned));
            ASSERT_EQ(sd_bitmap_width(o), 20);
            ASSERT_EQ(sd_bitmap_height(o), 10);
            for (uint32_t y = 0; y < 10; y++)
                for (uint32_t x = 0; x < 20; x++)
                    if (pixel(o, x, y) != pixel(turned, (uint32_t)p.area.x + x, (uint32_t)p.area.y + y))
                        SD_TEST_FAIL_("rot %d flips %d: (%u, %u) is %08x, not %08x", rot, f, x, y, pixel(o, x, y),
                                      pixel(turned, (uint32_t)p.area.x + x, (uint32_t)p.area.y + y));
            sd_bitmap_free(turned);
            sd_bitmap_free(o);
        }
    sd_free(png);
    sd_bitmap_free(src);
    return 0;
}

/* The mean absolute difference of neighbours across a bitmap: how busy. */
static double busyness(const sd_bitmap *b)
{
    double sum = 0;
    for (uint32_t y = 0; y < sd_bitmap_height(b); y++)
        for (uint32_t x = 0; x + 1 < sd_bitmap_width(b); x++)
            sum += abs((int)(pixel(b, x, y) & 0xff) - (int)(pixel(b, x + 1, y) & 0xff));
    return sum / ((double)sd_bitmap_height(b) * (sd_bitmap_width(b) - 1));
}

/* A smart cut keeps what draws the eye: a flat grey field with a patch of
 * fine detail (or of strong colour) off the middle; the centre cut misses
 * it, the smart one holds it, wherever it is. */
static int test_decoder_smart_cut(void)
{
    for (int k = 0; k < 3; k++) {
        uint32_t x0 = k == 0 ? 560 : k == 1 ? 40 : 330; /* right, left, in the middle */
        sd_bitmap *src;
        ASSERT_OK(sd_bitmap_new(800, 200, &src));
        for (uint32_t y = 0; y < 200; y++)
            for (uint32_t x = 0; x < 800; x++) {
                uint32_t *px = (uint32_t *)(void *)(sd_bitmap_pixels(src) + y * sd_bitmap_stride(src)) + x;
                int in = x >= x0 && x < x0 + 140 && y >= 30 && y < 170;
                *px = in ? (((x / 4 + y / 4) & 1) ? 0xff202020u : 0xffe0e0e0u) : 0xff808080u;
            }
        uint8_t *png = NULL;
        size_t n;
        ASSERT_OK(enc_png(src, 1, &png, &n));
        sd_render r = box(100, 100, SD_RESIZE_FILL); /* 400 x 100 scaled, a quarter kept */
        sd_bitmap *centre, *smart;
        ASSERT_OK(decode_render(png, n, &r, &centre, NULL));
        r.gravity.type = SD_GRAVITY_SMART;
        ASSERT_OK(decode_render(png, n, &r, &smart, NULL));
        ASSERT_EQ(sd_bitmap_width(smart), 100);
        ASSERT_EQ(sd_bitmap_height(smart), 100);
        double bs = busyness(smart), bc = busyness(centre);
        /* the patch is 70 of the 100 columns at this scale: most of the cut */
        if (bs < 20)
            SD_TEST_FAIL_("patch at %u: the smart cut is flat (%.1f; centre %.1f)", x0, bs, bc);
        if (k == 0 && bc > 2)
            SD_TEST_FAIL_("the centre cut should miss the patch (%.1f)", bc);
        sd_bitmap_free(centre);
        sd_bitmap_free(smart);
        sd_free(png);
        sd_bitmap_free(src);
    }
    return 0;
}

/* Extended and padded areas hold the background; the image sits where the
 * extend gravity puts it. */
static int test_decoder_canvas(void)
{
    sd_bitmap *src = stripes(400, 200);
    ASSERT_NOT_NULL(src);
    uint8_t *png = NULL;
    size_t n;
    ASSERT_OK(enc_png(src, 1, &png, &n));
    sd_render r = box(100, 100, SD_RESIZE_FIT); /* 100 x 50 */
    r.extend = 1;
    r.extend_gravity.type = SD_GRAVITY_NORTH;
    r.pad_left = 10;
    r.background = 0xff336699;
    sd_bitmap *o;
    ASSERT_OK(decode_render(png, n, &r, &o, NULL));
    ASSERT_EQ(sd_bitmap_width(o), 110);
    ASSERT_EQ(sd_bitmap_height(o), 100);
    EXPECT_RGB(o, 5, 20, 0x336699);  /* padding */
    EXPECT_RGB(o, 15, 20, 0xff0000); /* the image, at the top */
    EXPECT_RGB(o, 105, 20, 0xffff00);
    EXPECT_RGB(o, 50, 75, 0x336699); /* extended below it */
    sd_bitmap_free(o);
    r.background = 0; /* transparent */
    ASSERT_OK(decode_render(png, n, &r, &o, NULL));
    ASSERT_EQ(pixel(o, 50, 75), 0);
    sd_bitmap_free(o);
    sd_free(png);
    sd_bitmap_free(src);
    return 0;
}

/* A result over the limit fails at the header, before any pixel; a bad
 * render is refused when set; the request carries a render for its sink. */
static int test_decoder_limits_and_request(void)
{
    sd_bitmap *src = stripes(40, 20);
    ASSERT_NOT_NULL(src);
    uint8_t *png = NULL;
    size_t n;
    ASSERT_OK(enc_png(src, 1, &png, &n));
    sd_render r = box(16384, 16384, SD_RESIZE_FORCE);
    r.enlarge = 1;
    r.max_result_pixels = 4096 * 4096;
    sd_decoder *d;
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_set_render(d, &r));
    ASSERT_EQ(sd_decoder_push(d, png, n), SD_ETOOLARGE);
    ASSERT(strstr(sd_decoder_message(d), "16384x16384") != NULL);
    sd_decoder_free(d);
    r.dpr = -1;
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_EQ(sd_decoder_set_render(d, &r), SD_EINVAL);
    sd_decoder_free(d);

    sd_request *req;
    ASSERT_OK(sd_test_request_new("http://127.0.0.1/x", &req));
    ASSERT_EQ(sd_request_set_render(req, &r), SD_EINVAL);
    const void *data;
    size_t len;
    ASSERT_OK(sd_request_sink_data(req, &data, &len));
    ASSERT(data == NULL && len == 0);
    r.dpr = 2;
    ASSERT_OK(sd_request_set_render(req, &r));
    ASSERT_OK(sd_request_sink_data(req, &data, &len));
    ASSERT_EQ(len, sizeof r);
    ASSERT(memcmp(data, &r, sizeof r) == 0);
    ASSERT_OK(sd_request_set_render(req, NULL));
    ASSERT_OK(sd_request_sink_data(req, &data, &len));
    ASSERT(data == NULL && len == 0);
    sd_request_free(req);
    sd_free(png);
    sd_bitmap_free(src);
    return 0;
}

int main(int argc, char **argv)
{
    static const sd_test_case tests[] = {
        {"resize_types", test_resize_types},
        {"gravity", test_gravity},
        {"crop_extend_pad", test_crop_extend_pad},
        {"limits_and_arguments", test_limits_and_arguments},
        {"orientation", test_orientation},
        {"properties", test_properties},
        {"decoder_fill", test_decoder_fill},
        {"decoder_crop_turned", test_decoder_crop_turned},
        {"decoder_crop_every_turn", test_decoder_crop_every_turn},
        {"decoder_smart_cut", test_decoder_smart_cut},
        {"decoder_canvas", test_decoder_canvas},
        {"decoder_limits_and_request", test_decoder_limits_and_request},
        {"decoder_byte_budget", test_decoder_byte_budget},
        {NULL, NULL},
    };
    return sd_test_run(tests, argc, argv);
}
