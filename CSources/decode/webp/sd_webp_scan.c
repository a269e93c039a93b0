/*
 * sd_webp_scan.c — an animated WebP's frame list as its bytes arrive: a
 * chunk walker notices when a RIFF chunk is complete, then libwebpdemux
 * (WebPDemuxPartial over the bytes so far) validates the file and says how
 * many frames are whole; we read the new frames' ANMF chunks ourselves
 * (libwebp's iterator walks its frame list from the start for every step:
 * O(n^2) for n frames) and check the last one against libwebp's.
 */
#include <string.h>

#include "decode/webp/sd_webp_int.h"


static int reserve_frame(sd__webp *s, uint32_t count)
{
    SD__RESERVE(s->frames, count, s->cap);
    return SD_OK;
}

static uint32_t le24(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16; }

/* The padded end of the chunk at `at` when all of it lies before `end`;
 * 0 when it does not (yet). The one chunk step of every walk below. */
size_t sd__webp_chunk_end(const uint8_t *buf, size_t at, size_t end)
{
    if (at > end || end - at < 8)
        return 0;
    uint64_t size = le32(buf + at + 4), next = (uint64_t)at + 8 + size + (size & 1);
    return next <= end ? (size_t)next : 0;
}

/* The ANMF chunk at `off` (whole in the buffer up to `end`, its padded
 * end), read as libwebpdemux reads it (demux.c: ParseAnimationFrame,
 * StoreFrame, GetFramePayload): an optional ALPH, then VP8 or VP8L, whose
 * bitstream gives the frame's size. 1: a frame; 0: any other layout (no
 * image, chunks after it, ...: libwebp reads those differently, so the
 * caller lists with libwebp's iterator instead). */
static int anmf_frame(const uint8_t *buf, size_t off, size_t end, wp_frame *f)
{
    const uint8_t *h = buf + off + 8;
    if (end - off < 8 + 16)
        return 0;
    f->x = 2 * le24(h);
    f->y = 2 * le24(h + 3);
    f->duration = le24(h + 12);
    f->dispose_bg = h[15] & 1;
    f->blend = !(h[15] & 2);
    size_t at = off + 8 + 16, alpha = 0, next;
    int have_alpha = 0;
    while ((next = sd__webp_chunk_end(buf, at, end)) != 0) {
        const uint8_t *c = buf + at;
        if (!memcmp(c, "ALPH", 4) && !have_alpha) {
            have_alpha = 1;
            alpha = at;
        } else if (!memcmp(c, "VP8 ", 4) || (!memcmp(c, "VP8L", 4) && !have_alpha)) {
            WebPBitstreamFeatures ft;
            if (WebPGetFeatures(c, next - at, &ft) != VP8_STATUS_OK)
                return 0;
            f->w = (uint32_t)ft.width;
            f->h = (uint32_t)ft.height;
            f->has_alpha = (uint8_t)(have_alpha || ft.has_alpha);
            f->opaque = (uint8_t)(!have_alpha && c[3] == ' ');
            f->off = have_alpha ? alpha : at;
            f->len = next - f->off;
            return next == end; /* anything after the image: libwebp reads it as top level */
        } else {
            return 0;
        }
        at = next;
    }
    return 0;
}

static int same_frame(const wp_frame *f, const WebPIterator *it, const uint8_t *buf)
{
    return it->complete && f->off == (size_t)(it->fragment.bytes - buf) && f->len == it->fragment.size &&
           f->x == (uint32_t)it->x_offset && f->y == (uint32_t)it->y_offset && f->w == (uint32_t)it->width &&
           f->h == (uint32_t)it->height && f->duration == (uint32_t)it->duration &&
           f->dispose_bg == (it->dispose_method == WEBP_MUX_DISPOSE_BACKGROUND) &&
           f->blend == (it->blend_method == WEBP_MUX_BLEND) && f->has_alpha == (it->has_alpha != 0);
}

#define WP_OTHER_LAYOUT 1

/* New frames from our own walk over whole top-level chunks, up to libwebp's
 * count `n`, into s->frames[s->nframes...], *found of them; SD_OK, an
 * error, or WP_OTHER_LAYOUT when libwebp reads them differently (its last
 * frame is the check). */
static int walk_frames(sd__webp *s, WebPDemuxer *dmx, uint32_t n, uint32_t *found_out)
{
    const uint8_t *buf = s->a.w.in.data;
    size_t end = SD__MIN(s->a.w.in.len, s->riff_end), at = s->frame_at ? s->frame_at : 12;
    uint32_t found = 0;
    size_t next;
    while (s->nframes + found < n && (next = sd__webp_chunk_end(buf, at, end)) != 0) {
        if (!memcmp(buf + at, "ANMF", 4)) {
            uint32_t count = s->nframes + found;
            SD__RESERVE(s->frames, count, s->cap);
            const wp_frame *f = &s->frames[count];
            /* libwebp checked every frame's bounds with its own reading; ours
             * must agree before draw() trusts them */
            if (!anmf_frame(buf, at, next, &s->frames[count]) || f->w == 0 || f->h == 0 ||
                f->x > s->a.w.dec->width || f->w > s->a.w.dec->width - f->x || f->y > s->a.w.dec->height ||
                f->h > s->a.w.dec->height - f->y)
                return WP_OTHER_LAYOUT;
            found++;
        }
        at = next;
    }
    if (found) {
        WebPIterator it;
        if (!WebPDemuxGetFrame(dmx, (int)(s->nframes + found), &it))
            return WP_OTHER_LAYOUT;
        int same = same_frame(&s->frames[s->nframes + found - 1], &it, buf);
        WebPDemuxReleaseIterator(&it);
        if (!same)
            return WP_OTHER_LAYOUT;
    }
    s->frame_at = at;
    *found_out = found;
    return SD_OK;
}

/* The same frames through libwebp's iterator: O(index) per step. */
static int iterate_frames(sd__webp *s, WebPDemuxer *dmx, uint32_t *found_out)
{
    WebPIterator it;
    uint32_t found = 0;
    *found_out = 0;
    if (!WebPDemuxGetFrame(dmx, (int)s->nframes + 1, &it))
        return SD_OK;
    do {
        if (!it.complete)
            break;
        uint32_t count = s->nframes + found;
        if (count >= s->cap) {
            int rc = reserve_frame(s, count);
            if (rc < 0) {
                WebPDemuxReleaseIterator(&it);
                *found_out = found;
                return rc;
            }
        }
        s->frames[count] = (wp_frame){
            .off = (size_t)(it.fragment.bytes - s->a.w.in.data), .len = it.fragment.size,
            .x = (uint32_t)it.x_offset, .y = (uint32_t)it.y_offset,
            .w = (uint32_t)it.width, .h = (uint32_t)it.height, .duration = (uint32_t)it.duration,
            .dispose_bg = it.dispose_method == WEBP_MUX_DISPOSE_BACKGROUND,
            .blend = it.blend_method == WEBP_MUX_BLEND, .has_alpha = (uint8_t)(it.has_alpha != 0),
        };
        found++;
    } while (WebPDemuxNextFrame(&it));
    WebPDemuxReleaseIterator(&it);
    *found_out = found;
    return SD_OK;
}

/* Frames libwebpdemux finds complete in the bytes so far. */
int sd__webp_demux_scan(sd__webp *s)
{
    sd_decoder *d = s->a.w.dec;
    WebPData data = {s->a.w.in.data, s->a.w.in.len};
    WebPDemuxState state;
    WebPDemuxer *dmx = WebPDemuxPartial(&data, &state);
    if (dmx == NULL) {
        if (state == WEBP_DEMUX_PARSE_ERROR) {
            sd__decoder_msg(d, "WebP: the container is invalid");
            return SD_ECORRUPT;
        }
        return SD_OK; /* not enough for the header yet */
    }
    int rc = SD_OK;
    if (state == WEBP_DEMUX_PARSE_ERROR) {
        sd__decoder_msg(d, "WebP: the container is invalid");
        rc = SD_ECORRUPT;
    }
    d->loop_count = WebPDemuxGetI(dmx, WEBP_FF_LOOP_COUNT);
    uint32_t n = WebPDemuxGetI(dmx, WEBP_FF_FRAME_COUNT);
    uint32_t found = 0;
    if (rc == SD_OK && s->nframes < n && s->a.bad_from == UINT32_MAX) {
        rc = s->iterate ? WP_OTHER_LAYOUT : walk_frames(s, dmx, n, &found);
        if (rc == WP_OTHER_LAYOUT) {
            s->iterate = 1; /* a layout our reader does not follow: libwebp's word, from now on */
            rc = iterate_frames(s, dmx, &found);
        }
    }
    for (uint32_t i = 0; i < found && rc == SD_OK; i++) {
        const wp_frame *f = &s->frames[s->nframes];
        /* WebPAnimDecoder's key frame rule (anim_decode.c IsKeyFrame) */
        int key = s->nframes == 0 || ((!f->has_alpha || !f->blend) && covers(d, f));
        if (!key) {
            const wp_frame *p = &s->frames[s->nframes - 1];
            key = p->dispose_bg && (covers(d, p) || d->frames[s->nframes - 1].key);
        }
        rc = sd__decoder_add_frame(d, f->duration, key);
        if (rc < 0)
            break;
        s->nframes++;
    }
    s->scanned = s->a.w.in.len;
    if (state == WEBP_DEMUX_DONE && rc == SD_OK) {
        s->demux_done = 1;
        d->end_reached = 1;
    }
    WebPDemuxDelete(dmx);
    return rc;
}

/* Scan again whenever a RIFF chunk has come in whole. */
int sd__webp_anim_walk(sd__webp *s)
{
    const uint8_t *p = s->a.w.in.data;
    size_t n = s->a.w.in.len;
    if (s->at == 0) {
        if (n < 12)
            return SD_OK;
        s->riff_end = 8 + (size_t)le32(p + 4);
        s->at = 12;
    }
    int grew = 0;
    size_t end = SD__MIN(n, s->riff_end), next;
    while ((next = sd__webp_chunk_end(p, s->at, end)) != 0) {
        s->at = next;
        grew = 1;
    }
    /* a scan parses the whole file: scan again once the bytes grew by an
     * eighth (and for the first frames), so a long animation arriving
     * chunk by chunk costs O(n log n), not O(n^2) */
    if (grew && (s->nframes < 16 || s->a.w.in.len - s->scanned >= s->scanned / 8 || s->at >= s->riff_end))
        return sd__webp_demux_scan(s);
    return SD_OK;
}
