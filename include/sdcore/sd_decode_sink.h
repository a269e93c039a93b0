/*
 * sd_decode_sink.h — decoding while streaming: the body sink (sd_loop.h)
 * that feeds each transfer's bytes into its own sd_decoder on a pool of
 * worker threads, in order per transfer, previews at scan boundaries, and
 * completes the transfer with the bitmap.
 *
 *     sd_loop_new(&loop);
 *     sd_loop_use_decoder(loop, 0);       // before sd_loop_start
 *     sd_request_set_decoder_param(req, SD_DEC_MAX_PIXEL_SIZE, 256);
 *     ... complete: sd_bitmap *b = sd_result_take_bitmap(result);
 *
 * A body the decoder refuses (not an image) stops the transfer at once:
 * the result is SD_EDECODE with the decoder's message (which names the
 * format when the core knows it but cannot decode it). Previews go to the
 * transfer's `partial` callback as sd_bitmap * (the callee owns them) when
 * SD_DEC_PREVIEWS is set — or, when SD_DEC_PREVIEW_FRAME_BYTES is set too,
 * as sd_preview *, which also carry an animation's frames as they complete.
 * SD_METRIC_SINK_MS is the time spent decoding.
 */
#ifndef SDCORE_SD_DECODE_SINK_H
#define SDCORE_SD_DECODE_SINK_H

#include "sd_decoder.h"
#include "sd_loop.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Name: sd_preview
 * Desc: A partial of a transfer whose request set both SD_DEC_PREVIEWS and
 *       SD_DEC_PREVIEW_FRAME_BYTES: every partial of that transfer is an
 *       sd_preview * (the callee's: sd_preview_free). Until an animation's
 *       second frame is complete, previews are the image so far (`frame`
 *       -1: a progressive scan, the rows so far). From then on the sink
 *       sends every whole frame as it completes, in order from frame 0,
 *       and no more images so far — until the frames sent total
 *       SD_DEC_PREVIEW_FRAME_BYTES (later frames come only with the
 *       result). Partials may be dropped (sd_sink_port_partial): a frame
 *       index that skips one means the animation so far stops there.
 *       Since 0.10.
 */
typedef struct sd_preview {
    /* The pixels (output size, upright); the callee may take them
     * (set the field to NULL) before sd_preview_free. */
    sd_bitmap *bitmap;
    /* -1: the image so far; >= 0: this whole frame of an animation. */
    int64_t frame;
    /* frame >= 0: its SD_FRAME_DURATION_MS and the animation's
     * SD_DEC_INFO_LOOP_COUNT; 0 otherwise. */
    int64_t duration_ms;
    int64_t loop_count;
    /* The image's sd_format (SD_DEC_INFO_FORMAT). */
    int64_t format;
} sd_preview;
/* Free a preview and the bitmap it still holds (NULL accepted). */
SD_API void sd_preview_free(sd_preview *preview);

/*
 * Name: sd_loop_use_decoder
 * Desc: Make the decode sink the loop's body sink, with `threads` decode
 *       workers (0: one per core; at most 256), started now and stopped by
 *       sd_loop_free. Unless SD_LOOP_MAX_SINK_BACKLOG was set, sets it to
 *       4 x threads. Before sd_loop_start.
 * Returns: SD_OK, SD_EINVAL, SD_EBADSTATE (started, or a sink was set),
 *          SD_ENOMEM.
 */
SD_API int sd_loop_use_decoder(sd_loop *loop, int threads);
/* The decode sink as a vtable (static, never freed) and a context, for
 * sd_request_set_body_sink or a sink of your own that wraps it; the context
 * is the caller's: free it with sd_decode_sink_free once no transfer uses
 * it (NULL accepted). Returns: SD_OK; SD_EINVAL; SD_ENOMEM (no threads). */
SD_API int sd_decode_sink_new(int threads, const sd_body_sink **sink, void **ctx);
SD_API void sd_decode_sink_free(void *ctx);
/* Decoder option for this transfer's decoder (sd_decoder_set semantics; a
 * sink parameter of the request). Returns: SD_OK, SD_EINVAL. */
SD_API int sd_request_set_decoder_param(sd_request *request, sd_decoder_param param, int64_t value);
/* The transfer's decoder renders `render` (sd_decoder_set_render), copied;
 * NULL clears. Returns SD_OK; SD_EINVAL for no request or a render
 * sd_render_plan_for refuses; SD_ENOMEM. Since 0.10. */
SD_API int sd_request_set_render(sd_request *request, const sd_render *render);
/*
 * Name: sd_request_use_server_preset
 * Desc: Settings for a service fed untrusted URLs, in one call:
 *       sd_request_use_server_transport (http and https only, no connection
 *       to a non-public address, no https -> http redirect, at most 3
 *       redirects, 30 s for the whole transfer, 5 s to connect, 10 s
 *       without a byte or under 1 KiB/s for 10 s aborts, 20 MiB bodies) and,
 *       for the decoder, 40 megapixels, 8192 pixels a side, 256 MiB of codec
 *       memory (the SD_SERVER_* values). Set anything after it to differ.
 * Returns: SD_OK, SD_EINVAL, SD_ENOMEM.
 */
SD_API int sd_request_use_server_preset(sd_request *request);
/* Take the decoded bitmap. Returns it, the caller's (sd_bitmap_free); NULL
 * without decoding, on failure, or when taken already. */
SD_API sd_bitmap *sd_result_take_bitmap(sd_result *result);
/* Decoder facts: SD_DEC_INFO_* values of the transfer's decoder.
 * Returns: SD_OK and *value; SD_EAGAIN when not known; SD_EINVAL when the
 * transfer had no decode sink. */
SD_API int sd_result_decoder_info(const sd_result *result, sd_decoder_param param, int64_t *value);
/*
 * Name: sd_result_icc_profile
 * Desc: The ICC profile the transfer's pixels are in, as the file stored
 *       it (sd_decoder_icc_profile), when its decoder kept the source colours
 *       (SD_DEC_COLOR_MANAGE 0); lent until the result is freed. NULL and 0
 *       when the image had none or was converted to sRGB. Since 0.10.
 * Returns: SD_OK; SD_EINVAL when the transfer had no decode sink.
 */
SD_API int sd_result_icc_profile(const sd_result *result, const uint8_t **data, size_t *length);

#ifdef __cplusplus
}
#endif
#endif /* SDCORE_SD_DECODE_SINK_H */
