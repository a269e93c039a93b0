/* sd_encode_gif.c — frames to a GIF (giflib): each frame is a full canvas
 * with its own palette — its colours exactly when it has at most 255 (so a
 * GIF decoded and encoded again keeps its pixels), else 255 from giflib's
 * median cut; alpha below 128 becomes the transparent index 255;
 * restore-to-background disposal, so a transparent pixel shows nothing of
 * the frame before. */
#include <stdlib.h>
#include <string.h>

#include <gif_lib.h>

#include "bitmap/sd_bitmap_int.h"
#include "encode/sd_encode_int.h"
#include "sdcore.h"

static int gif_write(GifFileType *gif, const GifByteType *p, int n)
{
    return n >= 0 && sd__buf_put(gif->UserData, p, (size_t)n) == SD_OK ? n : 0;
}

/* The frame's opaque colours as the palette, if there are at most 255:
 * an open-addressed table of 512 slots, the last colour remembered (runs). */
static int exact_palette(const uint8_t *rgba, size_t n, GifByteType *index, GifColorType *map)
{
    uint32_t keys[512];
    int16_t slot[512];
    memset(slot, 0xFF, sizeof slot); /* -1: empty */
    int colours = 0;
    uint32_t last = UINT32_MAX;
    GifByteType last_index = 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = rgba + i * 4;
        if (p[3] < 128)
            continue; /* transparent: set by the caller */
        const uint32_t c = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
        if (c != last) {
            uint32_t h = (c * 2654435761u) >> 23;
            while (slot[h] >= 0 && keys[h] != c)
                h = (h + 1) & 511;
            if (slot[h] < 0) {
                if (colours == 255)
                    return 0;
                keys[h] = c;
                slot[h] = (int16_t)colours;
                map[colours] = (GifColorType){p[0], p[1], p[2]};
                colours++;
            }
            last = c;
            last_index = (GifByteType)slot[h];
        }
        index[i] = last_index;
    }
    return 1;
}

/* One frame: exact palette or straight RGB planes quantised; transparent pixels -> 255. */
static int put_frame(GifFileType *gif, const sd_bitmap *b, int delay_ms, uint8_t *rgba, uint8_t *planes,
                     GifByteType *index)
{
    const size_t n = (size_t)b->width * b->height;
    int transparent = 0;
    for (uint32_t y = 0; y < b->height; y++)
        sd_unpremultiply_argb(b->pixels + (size_t)y * b->stride, rgba + (size_t)y * b->width * 4, b->width);
    GifColorType map[256];
    memset(map, 0, sizeof map);
    if (!exact_palette(rgba, n, index, map)) {
        for (size_t i = 0; i < n; i++) {
            planes[i] = rgba[i * 4];
            planes[n + i] = rgba[i * 4 + 1];
            planes[2 * n + i] = rgba[i * 4 + 2];
        }
        int colours = 255;
        memset(map, 0, sizeof map);
        if (GifQuantizeBuffer(b->width, b->height, &colours, planes, planes + n, planes + 2 * n, index, map) == GIF_ERROR)
            return SD_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        if (rgba[i * 4 + 3] < 128) {
            index[i] = 255;
            transparent = 1;
        }
    }
    GraphicsControlBlock gcb = {
        .DisposalMode = DISPOSE_BACKGROUND,
        .UserInputFlag = false,
        .DelayTime = (delay_ms + 5) / 10,
        .TransparentColor = transparent ? 255 : NO_TRANSPARENT_COLOR,
    };
    GifByteType ext[4];
    size_t ext_len = EGifGCBToExtension(&gcb, ext);
    ColorMapObject *cmap = GifMakeMapObject(256, map);
    if (cmap == NULL)
        return SD_ENOMEM;
    int ok = EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, (int)ext_len, ext) == GIF_OK &&
             EGifPutImageDesc(gif, 0, 0, (int)b->width, (int)b->height, false, cmap) == GIF_OK;
    for (uint32_t y = 0; ok && y < b->height; y++)
        ok = EGifPutLine(gif, index + (size_t)y * b->width, (int)b->width) == GIF_OK;
    GifFreeMapObject(cmap);
    return ok ? SD_OK : SD_ECORRUPT;
}

int sd_encode_gif(const sd_bitmap *const *frames, const int *delays_ms, size_t count, int loop_count,
                  uint8_t **out, size_t *out_len)
{
    SD__RETURN_IF(frames == NULL || count == 0 || out == NULL || out_len == NULL || loop_count < 0 ||
                      loop_count > 65535, SD_EINVAL);
    *out = NULL;
    *out_len = 0;
    const uint32_t w = frames[0]->width, h = frames[0]->height;
    SD__RETURN_IF(w > 65535 || h > 65535, SD_ETOOLARGE);
    for (size_t i = 0; i < count; i++)
        SD__RETURN_IF(frames[i] == NULL || frames[i]->width != w || frames[i]->height != h ||
                          (delays_ms && delays_ms[i] < 0), SD_EINVAL);
    const size_t n = (size_t)w * h;
    uint8_t *rgba = sd__malloc(n * 4), *planes = sd__malloc(n * 3);
    GifByteType *index = sd__malloc(n);
    sd__buf m = {0};
    int err = 0, rc = SD_OK;
    GifFileType *gif = rgba && planes && index ? EGifOpen(&m, gif_write, &err) : NULL;
    if (gif == NULL)
        rc = SD_ENOMEM;
    if (rc == SD_OK) {
        EGifSetGifVersion(gif, true);
        if (EGifPutScreenDesc(gif, (int)w, (int)h, 8, 0, NULL) != GIF_OK)
            rc = SD_ECORRUPT;
    }
    if (rc == SD_OK && count > 1) { /* NETSCAPE2.0: loop count (0 = forever) */
        GifByteType app[] = "NETSCAPE2.0";
        GifByteType sub[3] = {1, (GifByteType)(loop_count & 0xFF), (GifByteType)(loop_count >> 8)};
        if (EGifPutExtensionLeader(gif, APPLICATION_EXT_FUNC_CODE) != GIF_OK ||
            EGifPutExtensionBlock(gif, 11, app) != GIF_OK || EGifPutExtensionBlock(gif, 3, sub) != GIF_OK ||
            EGifPutExtensionTrailer(gif) != GIF_OK)
            rc = SD_ECORRUPT;
    }
    for (size_t i = 0; rc == SD_OK && i < count; i++)
        rc = put_frame(gif, frames[i], delays_ms ? delays_ms[i] : 0, rgba, planes, index);
    if (gif && EGifCloseFile(gif, &err) != GIF_OK && rc == SD_OK)
        rc = SD_ECORRUPT;
    if (rc == SD_OK && m.oom)
        rc = SD_ENOMEM;
    sd__free(rgba);
    sd__free(planes);
    sd__free(index);
    if (rc != SD_OK) {
        sd__free(m.data);
        return rc;
    }
    *out = m.data;
    *out_len = m.len;
    return SD_OK;
}
