/*
 * sd_jxl.c — JPEG XL on libjxl (Debian 12: 0.7): the whole codec row,
 * decoder and encoder, in this one folder.
 *
 * Streaming: the bytes are kept as they arrive and libjxl is given what it
 * has not consumed (JxlDecoderReleaseInput says how much), so the header
 * facts come with the first bytes and nothing is decoded twice. With
 * SD_DEC_PREVIEWS a progressive file renders a preview at each pass it
 * completes (JXL_DEC_FRAME_PROGRESSION at kPasses, then
 * JxlDecoderFlushImage into the output buffer) — at most one per pass and
 * one per SD_DEC_PREVIEW_INTERVAL_MS, as the progressive JPEG path does at
 * scan boundaries. libjxl writes straight 8-bit RGBA (it unpremultiplies a
 * premultiplied file); it is premultiplied here. The codestream's
 * orientation is kept and reported, so it is applied (or not) like a
 * JPEG's. The colour encoding goes to colour management: sRGB as it is,
 * anything else as libjxl's ICC profile of the data (PQ/HLG reported as
 * HDR). A JPEG recompressed losslessly (a `jbrd` box) decodes as any JXL.
 *
 * An animation (coalesced by libjxl: every frame is a whole canvas) is
 * listed once input ends, by a pass over the frame headers that decodes no
 * pixels, and each frame is decoded on request by a second decoder that
 * steps on from the frame it made last or restarts and skips
 * (JxlDecoderSkipFrames decodes only what later frames refer to).
 */
/* First, before any include. Headers only: libjxl is loaded on first use, not linked, so no
 * system-library target (SwiftPM links what pkg-config names) can say
 * which package is missing; this does (scripts/check-package.sh). */
#if !__has_include(<jxl/decode.h>)
#error "libjxl's headers are missing: apt-get install libjxl-dev (make deps installs every build dependency)"
#endif
#include <math.h>
#include <string.h>

#include <jxl/decode.h>
#include <jxl/encode.h>

#include "common/sd_dl.h"

#include "decode/anim/sd_anim_int.h"

/* The functions of libjxl this file calls, loaded on first use (sd_dl.h). */
#define SD__JXL_FNS(X) \
    X(JxlColorEncodingSetToSRGB) \
    X(JxlDecoderCloseInput) \
    X(JxlDecoderCreate) \
    X(JxlDecoderDestroy) \
    X(JxlDecoderFlushImage) \
    X(JxlDecoderGetBasicInfo) \
    X(JxlDecoderGetColorAsEncodedProfile) \
    X(JxlDecoderGetColorAsICCProfile) \
    X(JxlDecoderGetFrameHeader) \
    X(JxlDecoderGetICCProfileSize) \
    X(JxlDecoderImageOutBufferSize) \
    X(JxlDecoderProcessInput) \
    X(JxlDecoderReleaseInput) \
    X(JxlDecoderSetImageOutBuffer) \
    X(JxlDecoderSetInput) \
    X(JxlDecoderSetKeepOrientation) \
    X(JxlDecoderSetProgressiveDetail) \
    X(JxlDecoderSetUnpremultiplyAlpha) \
    X(JxlDecoderSkipFrames) \
    X(JxlDecoderSubscribeEvents) \
    X(JxlEncoderAddImageFrame) \
    X(JxlEncoderCloseInput) \
    X(JxlEncoderCreate) \
    X(JxlEncoderDestroy) \
    X(JxlEncoderFrameSettingsCreate) \
    X(JxlEncoderFrameSettingsSetOption) \
    X(JxlEncoderInitBasicInfo) \
    X(JxlEncoderInitFrameHeader) \
    X(JxlEncoderProcessOutput) \
    X(JxlEncoderSetBasicInfo) \
    X(JxlEncoderSetColorEncoding) \
    X(JxlEncoderSetFrameDistance) \
    X(JxlEncoderSetFrameHeader) \
    X(JxlEncoderSetFrameLossless) \
    X(JxlEncoderSetICCProfile)
#ifndef SD_JXL_SONAME /* as SD_HEIF_SONAME (sd_heic.c) */
#define SD_JXL_SONAME "libjxl.so.0.7"
#endif
SD__DL_TABLE(jxl, SD__JXL_FNS, "SDCORE_JXL_LIBRARY", SD_JXL_SONAME, "libjxl.so");
#define JxlColorEncodingSetToSRGB SD__DL_FN(jxl, JxlColorEncodingSetToSRGB)
#define JxlDecoderCloseInput SD__DL_FN(jxl, JxlDecoderCloseInput)
#define JxlDecoderCreate SD__DL_FN(jxl, JxlDecoderCreate)
#define JxlDecoderDestroy SD__DL_FN(jxl, JxlDecoderDestroy)
#define JxlDecoderFlushImage SD__DL_FN(jxl, JxlDecoderFlushImage)
#define JxlDecoderGetBasicInfo SD__DL_FN(jxl, JxlDecoderGetBasicInfo)
#define JxlDecoderGetColorAsEncodedProfile SD__DL_FN(jxl, JxlDecoderGetColorAsEncodedProfile)
#define JxlDecoderGetColorAsICCProfile SD__DL_FN(jxl, JxlDecoderGetColorAsICCProfile)
#define JxlDecoderGetFrameHeader SD__DL_FN(jxl, JxlDecoderGetFrameHeader)
#define JxlDecoderGetICCProfileSize SD__DL_FN(jxl, JxlDecoderGetICCProfileSize)
#define JxlDecoderImageOutBufferSize SD__DL_FN(jxl, JxlDecoderImageOutBufferSize)
#define JxlDecoderProcessInput SD__DL_FN(jxl, JxlDecoderProcessInput)
#define JxlDecoderReleaseInput SD__DL_FN(jxl, JxlDecoderReleaseInput)
#define JxlDecoderSetImageOutBuffer SD__DL_FN(jxl, JxlDecoderSetImageOutBuffer)
#define JxlDecoderSetInput SD__DL_FN(jxl, JxlDecoderSetInput)
#define JxlDecoderSetKeepOrientation SD__DL_FN(jxl, JxlDecoderSetKeepOrientation)
#define JxlDecoderSetProgressiveDetail SD__DL_FN(jxl, JxlDecoderSetProgressiveDetail)
#define JxlDecoderSetUnpremultiplyAlpha SD__DL_FN(jxl, JxlDecoderSetUnpremultiplyAlpha)
#define JxlDecoderSkipFrames SD__DL_FN(jxl, JxlDecoderSkipFrames)
#define JxlDecoderSubscribeEvents SD__DL_FN(jxl, JxlDecoderSubscribeEvents)
#define JxlEncoderAddImageFrame SD__DL_FN(jxl, JxlEncoderAddImageFrame)
#define JxlEncoderCloseInput SD__DL_FN(jxl, JxlEncoderCloseInput)
#define JxlEncoderCreate SD__DL_FN(jxl, JxlEncoderCreate)
#define JxlEncoderDestroy SD__DL_FN(jxl, JxlEncoderDestroy)
#define JxlEncoderFrameSettingsCreate SD__DL_FN(jxl, JxlEncoderFrameSettingsCreate)
#define JxlEncoderFrameSettingsSetOption SD__DL_FN(jxl, JxlEncoderFrameSettingsSetOption)
#define JxlEncoderInitBasicInfo SD__DL_FN(jxl, JxlEncoderInitBasicInfo)
#define JxlEncoderInitFrameHeader SD__DL_FN(jxl, JxlEncoderInitFrameHeader)
#define JxlEncoderProcessOutput SD__DL_FN(jxl, JxlEncoderProcessOutput)
#define JxlEncoderSetBasicInfo SD__DL_FN(jxl, JxlEncoderSetBasicInfo)
#define JxlEncoderSetColorEncoding SD__DL_FN(jxl, JxlEncoderSetColorEncoding)
#define JxlEncoderSetFrameDistance SD__DL_FN(jxl, JxlEncoderSetFrameDistance)
#define JxlEncoderSetFrameHeader SD__DL_FN(jxl, JxlEncoderSetFrameHeader)
#define JxlEncoderSetFrameLossless SD__DL_FN(jxl, JxlEncoderSetFrameLossless)
#define JxlEncoderSetICCProfile SD__DL_FN(jxl, JxlEncoderSetICCProfile)

typedef struct {
    sd__anim_state a; /* first: the decoder, the bytes, the canvas (the final still), the frames kept */
    size_t pos;       /* bytes libjxl has consumed */
    int ended;
    JxlDecoder *jxl;  /* the streaming decoder: the still, or the first frame */
    JxlBasicInfo info;
    int have_info, full, stopped;
    uint8_t *rgba;    /* libjxl's output: straight RGBA, stored orientation */
    int out_set;
    int64_t last_preview_ms;
    /* an animation, once input ended */
    int anim;
    JxlDecoder *player;
    uint32_t player_next; /* the frame the player makes next */
    uint8_t *frame_rgba;
} sd__jxl;

static const JxlPixelFormat rgba8 = {4, JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0};

static int jx_fail(sd_decoder *d, const char *what)
{
    sd__decoder_msg(d, "JPEG XL: %s", what);
    return SD_ECORRUPT;
}

static JxlDecoder *new_decoder(int events)
{
    JxlDecoder *j = JxlDecoderCreate(NULL);
    if (j == NULL)
        return NULL;
    if (JxlDecoderSubscribeEvents(j, events) != JXL_DEC_SUCCESS ||
        JxlDecoderSetKeepOrientation(j, JXL_TRUE) != JXL_DEC_SUCCESS ||
        JxlDecoderSetUnpremultiplyAlpha(j, JXL_TRUE) != JXL_DEC_SUCCESS) {
        JxlDecoderDestroy(j);
        return NULL;
    }
    return j;
}

static int sdx_init(sd_decoder *d)
{
    if (sd__dl_load(&jxl_dl) != SD_OK) {
        sd__decoder_msg(d, "JPEG XL: %s", jxl_dl.message);
        return SD_EUNSUPPORTED;
    }
    SD__FORWARD_IF_ERROR(sd__anim_state_init(d, sizeof(sd__jxl)));
    sd__jxl *s = d->codec_state;
    int events = JXL_DEC_BASIC_INFO | JXL_DEC_COLOR_ENCODING | JXL_DEC_FULL_IMAGE;
    if (d->previews)
        events |= JXL_DEC_FRAME_PROGRESSION;
    s->jxl = new_decoder(events);
    SD__RETURN_IF(s->jxl == NULL, SD_ENOMEM);
    if (d->previews && JxlDecoderSetProgressiveDetail(s->jxl, kPasses) != JXL_DEC_SUCCESS)
        return jx_fail(d, "progressive detail refused");
    return SD_OK;
}

static void sdx_destroy(sd_decoder *d)
{
    sd__jxl *s = d->codec_state;
    if (s == NULL)
        return;
    if (s->jxl)
        JxlDecoderDestroy(s->jxl);
    if (s->player)
        JxlDecoderDestroy(s->player);
    sd__free(s->rgba);
    sd__free(s->frame_rgba);
    sd__anim_state_destroy(d);
}

/* The colour encoding of the pixels libjxl writes. */
static void colour(sd__jxl *s)
{
    sd_decoder *d = s->a.w.dec;
    JxlColorEncoding ce;
    if (JxlDecoderGetColorAsEncodedProfile(s->jxl, NULL, JXL_COLOR_PROFILE_TARGET_DATA, &ce) == JXL_DEC_SUCCESS) {
        if (ce.transfer_function == JXL_TRANSFER_FUNCTION_PQ || ce.transfer_function == JXL_TRANSFER_FUNCTION_HLG) {
            int prim = ce.primaries == JXL_PRIMARIES_2100 ? 9 : ce.primaries == JXL_PRIMARIES_P3 ? 12 : 1;
            sd__color_set_cicp(&d->color, prim, (int)ce.transfer_function); /* reported, not tone-mapped */
            return;
        }
        if (ce.white_point == JXL_WHITE_POINT_D65 && ce.transfer_function == JXL_TRANSFER_FUNCTION_SRGB &&
            (ce.color_space == JXL_COLOR_SPACE_GRAY ||
             (ce.color_space == JXL_COLOR_SPACE_RGB && ce.primaries == JXL_PRIMARIES_SRGB)) &&
            ce.rendering_intent != JXL_RENDERING_INTENT_ABSOLUTE)
            return; /* sRGB: nothing to do */
    }
    size_t n = 0;
    if (JxlDecoderGetICCProfileSize(s->jxl, NULL, JXL_COLOR_PROFILE_TARGET_DATA, &n) != JXL_DEC_SUCCESS || n == 0)
        return;
    if (n > SD__ICC_MAX) {
        sd__color_set_icc(&d->color, NULL, n); /* the warning */
        return;
    }
    uint8_t *icc = sd__malloc(n);
    if (icc != NULL && JxlDecoderGetColorAsICCProfile(s->jxl, NULL, JXL_COLOR_PROFILE_TARGET_DATA, icc, n) ==
                           JXL_DEC_SUCCESS)
        sd__color_set_icc(&d->color, icc, n);
    sd__free(icc);
}

static int on_info(sd__jxl *s)
{
    sd_decoder *d = s->a.w.dec;
    if (JxlDecoderGetBasicInfo(s->jxl, &s->info) != JXL_DEC_SUCCESS)
        return jx_fail(d, "basic info");
    s->have_info = 1;
    /* kept orientation: xsize/ysize are as stored */
    SD__FORWARD_IF_ERROR(sd__decoder_set_header(d, s->info.xsize, s->info.ysize, (int)s->info.orientation, 0,
                                                s->info.alpha_bits > 0));
    d->animated = s->info.have_animation != 0;
    if (d->animated)
        d->loop_count = s->info.animation.num_loops;
    s->anim = d->animated && !d->first_frame_only;
    /* libjxl's float planes, its RGBA output and our canvas */
    return sd__decoder_charge(d, (uint64_t)s->info.xsize * s->info.ysize * (16 + 4 + 4),
                              "the JPEG XL planes and canvas");
}

static int set_out(sd__jxl *s, JxlDecoder *j, uint8_t **buf)
{
    size_t need = 0;
    if (JxlDecoderImageOutBufferSize(j, &rgba8, &need) != JXL_DEC_SUCCESS ||
        need != (size_t)s->info.xsize * s->info.ysize * 4)
        return jx_fail(s->a.w.dec, "output buffer size");
    if (*buf == NULL && (*buf = sd__malloc(need)) == NULL)
        return SD_ENOMEM;
    if (JxlDecoderSetImageOutBuffer(j, &rgba8, *buf, need) != JXL_DEC_SUCCESS)
        return jx_fail(s->a.w.dec, "output buffer refused");
    return SD_OK;
}

/* Feed the streaming decoder what it has not consumed; stop at the first
 * full image (the still, or an animation's first frame). */
static int run(sd__jxl *s)
{
    sd_decoder *d = s->a.w.dec;
    if (s->stopped)
        return SD_OK;
    if (JxlDecoderSetInput(s->jxl, s->a.w.in.data + s->pos, s->a.w.in.len - s->pos) != JXL_DEC_SUCCESS)
        return jx_fail(d, "input refused");
    if (s->ended)
        JxlDecoderCloseInput(s->jxl);
    int rc = SD_OK;
    for (;;) {
        JxlDecoderStatus st = JxlDecoderProcessInput(s->jxl);
        if (st == JXL_DEC_BASIC_INFO) {
            rc = on_info(s);
        } else if (st == JXL_DEC_COLOR_ENCODING) {
            colour(s);
        } else if (st == JXL_DEC_NEED_IMAGE_OUT_BUFFER) {
            rc = set_out(s, s->jxl, &s->rgba);
            s->out_set = rc == SD_OK;
        } else if (st == JXL_DEC_FRAME_PROGRESSION) {
            int64_t now = sd__now_ms();
            if (!s->anim && (d->previews_rendered == 0 || now - s->last_preview_ms >= d->preview_interval_ms) &&
                JxlDecoderFlushImage(s->jxl) == JXL_DEC_SUCCESS) {
                d->previews_rendered++;
                d->scans++;
                s->last_preview_ms = now;
            }
        } else if (st == JXL_DEC_FULL_IMAGE) {
            s->full = 1;
            s->stopped = 1; /* the rest (more frames) is the player's */
            break;
        } else if (st == JXL_DEC_SUCCESS) {
            s->stopped = 1;
            break;
        } else if (st == JXL_DEC_NEED_MORE_INPUT) {
            break;
        } else if (st == JXL_DEC_ERROR) {
            /* an error only once input was closed: the file ends early */
            rc = s->ended ? SD_ETRUNCATED : SD_ECORRUPT;
            sd__decoder_msg(d, "JPEG XL: %s", s->ended ? "the file ends early" : "damaged codestream");
        }
        if (rc < 0)
            break;
    }
    size_t left = JxlDecoderReleaseInput(s->jxl);
    s->pos = s->a.w.in.len - left;
    return rc;
}

static int sdx_push(sd_decoder *d, const uint8_t *p, size_t n)
{
    sd__jxl *s = d->codec_state;
    SD__FORWARD_IF_ERROR(sd__buf_put(&s->a.w.in, p, n));
    return run(s);
}

/* Straight RGBA (libjxl's) as a new premultiplied bitmap. */
static int to_bitmap(const sd__jxl *s, const uint8_t *rgba, sd_bitmap **out)
{
    sd_bitmap *b;
    SD__FORWARD_IF_ERROR(sd__bitmap_alloc(s->info.xsize, s->info.ysize, 0, &b));
    for (uint32_t y = 0; y < s->info.ysize; y++)
        sd_premultiply_rgba(rgba + (size_t)y * s->info.xsize * 4, b->pixels + (size_t)y * b->stride, s->info.xsize);
    *out = b;
    return SD_OK;
}

/* An animation's frames, from a pass over the frame headers (no pixels). */
static int list_frames(sd__jxl *s)
{
    sd_decoder *d = s->a.w.dec;
    JxlDecoder *h = new_decoder(JXL_DEC_FRAME);
    SD__RETURN_IF(h == NULL, SD_ENOMEM);
    int rc = SD_OK;
    if (JxlDecoderSetInput(h, s->a.w.in.data, s->a.w.in.len) != JXL_DEC_SUCCESS)
        rc = jx_fail(d, "input refused");
    JxlDecoderCloseInput(h);
    const double tick_ms = s->info.animation.tps_numerator
                               ? 1000.0 * s->info.animation.tps_denominator / s->info.animation.tps_numerator
                               : 0;
    while (rc == SD_OK) {
        JxlDecoderStatus st = JxlDecoderProcessInput(h);
        if (st == JXL_DEC_FRAME) {
            JxlFrameHeader fh;
            if (JxlDecoderGetFrameHeader(h, &fh) != JXL_DEC_SUCCESS) {
                rc = jx_fail(d, "frame header");
                break;
            }
            double ms = fh.duration * tick_ms + 0.5;
            rc = sd__decoder_add_frame(d, ms < (double)UINT32_MAX ? (uint32_t)ms : UINT32_MAX, 1);
        } else if (st == JXL_DEC_SUCCESS) {
            break;
        } else if (d->nframes > 0) { /* cut or damaged after some frames: those play */
            d->complete = 0;
            break;
        } else {
            rc = jx_fail(d, "no frame in the animation");
        }
    }
    JxlDecoderDestroy(h);
    return rc;
}

static int sdx_finish(sd_decoder *d)
{
    sd__jxl *s = d->codec_state;
    s->ended = 1;
    int rc = run(s);
    if (!s->have_info) {
        sd__decoder_msg(d, "JPEG XL: the file ends before its header");
        return rc < 0 ? rc : SD_ETRUNCATED;
    }
    if (rc < 0 && !s->out_set)
        return rc;
    d->end_reached = 1;
    if (s->anim) {
        d->complete = 1;
        SD__FORWARD_IF_ERROR(list_frames(s));
        d->framed = 1;
        return SD_OK;
    }
    d->complete = s->full;
    if (!s->full) { /* cut short: what decoded so far, flagged incomplete */
        if (!s->out_set || JxlDecoderFlushImage(s->jxl) != JXL_DEC_SUCCESS) {
            sd__decoder_msg(d, "JPEG XL: the file ends before any of the image could be shown");
            return SD_ETRUNCATED;
        }
    }
    SD__FORWARD_IF_ERROR(to_bitmap(s, s->rgba, &s->a.w.canvas));
    d->rows = s->a.w.canvas->height;
    if (d->scans == 0)
        d->scans = 1;
    return SD_OK;
}

/* Frame `index` by the player: on from the frame it made last, else anew. */
static int render(void *state, uint32_t index, sd_bitmap **out, int *owned)
{
    sd__jxl *s = state;
    if (s->player == NULL || index < s->player_next) {
        if (s->player)
            JxlDecoderDestroy(s->player);
        s->player = new_decoder(JXL_DEC_FULL_IMAGE);
        SD__RETURN_IF(s->player == NULL, SD_ENOMEM);
        if (JxlDecoderSetInput(s->player, s->a.w.in.data, s->a.w.in.len) != JXL_DEC_SUCCESS)
            return jx_fail(s->a.w.dec, "input refused");
        JxlDecoderCloseInput(s->player);
        s->player_next = 0;
    }
    if (index > s->player_next) {
        JxlDecoderSkipFrames(s->player, index - s->player_next);
        s->player_next = index;
    }
    for (;;) {
        JxlDecoderStatus st = JxlDecoderProcessInput(s->player);
        if (st == JXL_DEC_NEED_IMAGE_OUT_BUFFER) {
            SD__FORWARD_IF_ERROR(set_out(s, s->player, &s->frame_rgba));
        } else if (st == JXL_DEC_FULL_IMAGE) {
            s->player_next++;
            SD__FORWARD_IF_ERROR(to_bitmap(s, s->frame_rgba, out));
            *owned = 1;
            sd__frame_cache_put(&s->a.cache, index, *out);
            return SD_OK;
        } else {
            JxlDecoderDestroy(s->player); /* an error or the end: start again next time */
            s->player = NULL;
            return jx_fail(s->a.w.dec, "frame does not decode");
        }
    }
}

static int sdx_frame(sd_decoder *d, uint32_t index, sd_bitmap **out, int *owned)
{
    sd__jxl *s = d->codec_state;
    return sd__anim_frame(d, &s->a.cache, &s->a.bad_from, index, render, s, out, owned);
}

static int sdx_canvas(sd_decoder *d, int final, sd_bitmap **out, int *owned)
{
    sd__jxl *s = d->codec_state;
    *owned = 0;
    if (s->anim && d->framed)
        return final ? sdx_frame(d, 0, out, owned) : SD_EAGAIN;
    if (final) {
        SD__RETURN_IF(s->a.w.canvas == NULL, SD_EBADSTATE);
        *out = s->a.w.canvas;
        *owned = 1;
        s->a.w.canvas = NULL;
        return SD_OK;
    }
    if (d->previews_rendered == 0 || s->rgba == NULL)
        return SD_EAGAIN;
    SD__FORWARD_IF_ERROR(to_bitmap(s, s->rgba, out)); /* the last pass flushed */
    *owned = 1;
    return SD_OK;
}

/* ---- the encoder ---- */

/* cjxl's quality -> Butteraugli distance (libjxl 0.7 has no helper). */
static float distance_for(int q)
{
    if (q >= 100)
        return 0.0f;
    if (q >= 30)
        return 0.1f + (float)(100 - q) * 0.09f;
    return 6.4f + (float)pow(2.5, (30 - q) / 5.0) / 6.25f;
}

static int sd__jxl_encode(const sd__encode_job *j, uint8_t **out, size_t *out_length)
{
    SD__RETURN_IF(sd__dl_load(&jxl_dl) != SD_OK, SD_EUNSUPPORTED); /* no libjxl on this machine */
    const sd_bitmap *f0 = j->frames[0];
    int alpha = 0;
    for (size_t i = 0; i < j->count && !alpha; i++)
        alpha = sd_bitmap_has_alpha(j->frames[i]);
    JxlEncoder *enc = JxlEncoderCreate(NULL);
    SD__RETURN_IF(enc == NULL, SD_ENOMEM);
    JxlBasicInfo bi;
    JxlEncoderInitBasicInfo(&bi);
    bi.xsize = f0->width, bi.ysize = f0->height;
    bi.bits_per_sample = 8;
    bi.num_color_channels = 3;
    bi.num_extra_channels = alpha ? 1 : 0;
    bi.alpha_bits = alpha ? 8 : 0;
    bi.uses_original_profile = j->lossless ? JXL_TRUE : JXL_FALSE;
    if (j->count > 1) {
        bi.have_animation = JXL_TRUE;
        bi.animation.tps_numerator = 1000, bi.animation.tps_denominator = 1; /* ticks of 1 ms */
        bi.animation.num_loops = (uint32_t)j->loop_count;
    }
    int rc = JxlEncoderSetBasicInfo(enc, &bi) == JXL_ENC_SUCCESS ? SD_OK : SD_EINVAL;
    if (rc == SD_OK) {
        if (j->icc_len > 0) {
            rc = JxlEncoderSetICCProfile(enc, j->icc, j->icc_len) == JXL_ENC_SUCCESS ? SD_OK : SD_EINVAL;
        } else {
            JxlColorEncoding srgb;
            JxlColorEncodingSetToSRGB(&srgb, JXL_FALSE);
            rc = JxlEncoderSetColorEncoding(enc, &srgb) == JXL_ENC_SUCCESS ? SD_OK : SD_ECORRUPT;
        }
    }
    JxlEncoderFrameSettings *fs = rc == SD_OK ? JxlEncoderFrameSettingsCreate(enc, NULL) : NULL;
    if (rc == SD_OK && fs == NULL)
        rc = SD_ENOMEM;
    if (rc == SD_OK) {
        if (j->lossless || j->quality >= 100)
            JxlEncoderSetFrameLossless(fs, JXL_TRUE);
        else
            JxlEncoderSetFrameDistance(fs, distance_for(j->quality));
        if (j->progressive) { /* passes a streaming decoder can show: DC first, then AC by frequency */
            JxlEncoderFrameSettingsSetOption(fs, JXL_ENC_FRAME_SETTING_PROGRESSIVE_DC, 1);
            JxlEncoderFrameSettingsSetOption(fs, JXL_ENC_FRAME_SETTING_PROGRESSIVE_AC, 1);
            JxlEncoderFrameSettingsSetOption(fs, JXL_ENC_FRAME_SETTING_RESPONSIVE, 1);
        }
    }
    uint8_t *rgba = rc == SD_OK ? sd__malloc((size_t)f0->width * f0->height * 4) : NULL;
    if (rc == SD_OK && rgba == NULL)
        rc = SD_ENOMEM;
    const uint32_t nch = alpha ? 4 : 3; /* no alpha channel: RGB rows */
    const JxlPixelFormat fmt = {nch, JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0};
    for (size_t i = 0; rc == SD_OK && i < j->count; i++) {
        const sd_bitmap *b = j->frames[i];
        for (uint32_t y = 0; y < b->height; y++) {
            uint8_t *row = rgba + (size_t)y * b->width * nch;
            sd_unpremultiply_argb(b->pixels + (size_t)y * b->stride, row, b->width); /* room: nch <= 4 rows back */
            for (uint32_t x = 0; nch == 3 && x < b->width; x++)
                memmove(row + x * 3, row + x * 4, 3);
        }
        if (j->count > 1) {
            JxlFrameHeader fh;
            JxlEncoderInitFrameHeader(&fh);
            fh.duration = (uint32_t)j->delays_ms[i];
            JxlEncoderSetFrameHeader(fs, &fh);
        }
        if (JxlEncoderAddImageFrame(fs, &fmt, rgba, (size_t)b->width * b->height * nch) != JXL_ENC_SUCCESS)
            rc = SD_ECORRUPT;
    }
    sd__free(rgba);
    uint8_t *buf = NULL;
    size_t cap = 0, len = 0;
    if (rc == SD_OK) {
        JxlEncoderCloseInput(enc);
        JxlEncoderStatus st = JXL_ENC_NEED_MORE_OUTPUT;
        while (st == JXL_ENC_NEED_MORE_OUTPUT) {
            size_t ncap = cap ? cap * 2 : 64 << 10;
            uint8_t *nb = sd__realloc(buf, ncap);
            if (nb == NULL) {
                rc = SD_ENOMEM;
                break;
            }
            buf = nb, cap = ncap;
            uint8_t *next = buf + len;
            size_t avail = cap - len;
            st = JxlEncoderProcessOutput(enc, &next, &avail);
            len = (size_t)(next - buf);
        }
        if (rc == SD_OK && st != JXL_ENC_SUCCESS)
            rc = SD_ECORRUPT;
    }
    JxlEncoderDestroy(enc);
    if (rc != SD_OK) {
        sd__free(buf);
        return rc;
    }
    *out = buf;
    *out_length = len;
    return SD_OK;
}

/* A bare codestream (FF 0A) or the container's signature box. */
static int sniff_jxl(const uint8_t *p, size_t n)
{
    static const uint8_t box[12] = {0, 0, 0, 0x0C, 'J', 'X', 'L', ' ', 0x0D, 0x0A, 0x87, 0x0A};
    if (n < 2)
        return n == 0 || p[0] == 0xFF || p[0] == 0 ? -1 : 0;
    if (p[0] == 0xFF && p[1] == 0x0A)
        return 1;
    size_t k = n < 12 ? n : 12;
    if (memcmp(p, box, k) != 0)
        return 0;
    return n < 12 ? -1 : 1;
}

const sd__codec sd__jxl_codec = {
    SD_FORMAT_JXL, "JPEG XL", "image/jxl", sniff_jxl,
    SD_CAP_DECODE | SD_CAP_INCREMENTAL | SD_CAP_SCAN_PREVIEWS | SD_CAP_ANIMATION
        | SD_CAP_ENCODE | SD_CAP_ENCODE_ANIMATION | SD_CAP_ENCODE_ALPHA | SD_CAP_ENCODE_QUALITY,
    sdx_init, sdx_push, sdx_finish, sdx_canvas, sdx_destroy, sdx_frame, sd__jxl_encode,
};
