/*
 * sd_result.h — what a transfer gives back: the response (status,
 * headers) and the result (status, message, body, the sink's output,
 * metrics). Part of the transfer loop's API (sd_loop.h includes it).
 */
#ifndef SDCORE_SD_RESULT_H
#define SDCORE_SD_RESULT_H

#include "sd_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sd_response sd_response;
typedef struct sd_result sd_result;

typedef enum sd_metric {
    SD_METRIC_DNS_MS = 1,          /* doubles: milliseconds from the start */
    SD_METRIC_CONNECT_MS = 2,
    SD_METRIC_TLS_MS = 3,
    SD_METRIC_FIRST_BYTE_MS = 4,
    SD_METRIC_TOTAL_MS = 5,
    SD_METRIC_QUEUED_MS = 6,       /* time spent waiting in our queue */
    SD_METRIC_BYTES = 7,           /* body bytes received (resumed ones not counted) */
    SD_METRIC_HTTP_VERSION = 8,    /* 10, 11, 20 */
    SD_METRIC_REDIRECTS = 9,
    SD_METRIC_SINK_MS = 10,        /* time the body sink worked (decoding) */
    SD_METRIC_CONNECTIONS = 11,    /* new connections opened (0 = reused) */
    SD_METRIC_RESUMED_BYTES = 12,  /* bytes reused from sd_request_set_resume */
    /* The whole file's length when the server told it (Content-Length, or
     * a resumed range's end), else 0. Since 0.11. */
    SD_METRIC_FULL_LENGTH = 13,
    /* 1 when the body sink ended the transfer on purpose once its output
     * was complete (SD_DEC_END_WHEN_SETTLED): the status is SD_OK and the
     * body is a prefix of the file, SD_METRIC_BYTES of FULL_LENGTH. Such a
     * body is not the file: keep it only as what it is. Since 0.11. */
    SD_METRIC_ENDED_EARLY = 14
} sd_metric;

/* ---- responses and results ----
 * A response is its owner's: the one passed to the `response` callback is
 * valid during that call; the one of a result (sd_result_response) until
 * sd_result_free. Every string returned is the response's (copy to keep). */

/* Returns the HTTP status (200, 206, 304, ...); 0 for NULL. */
SD_API long sd_response_status(const sd_response *response);
/* Returns the last value of a header (case-insensitive name), NULL if
 * absent. */
SD_API const char *sd_response_header(const sd_response *response, const char *name);
/* Headers in arrival order. Returns: the count (0 for NULL); the i-th
 * name and value: SD_OK, or SD_EINVAL past the end. */
SD_API int sd_response_header_count(const sd_response *response);
SD_API int sd_response_header_at(const sd_response *response, int index,
                                 const char **name, const char **value);
/* Returns the Content-Length of the body, 0 when unknown. */
SD_API uint64_t sd_response_expected_length(const sd_response *response);
/* Returns the Content-Type, and the URL after redirects; NULL when none. */
SD_API const char *sd_response_content_type(const sd_response *response);
SD_API const char *sd_response_effective_url(const sd_response *response);

/* A result is the `complete` callback's to keep or free (sd_result_free);
 * what these return is the result's unless taken. */

/* Returns the sd_status of the transfer: SD_OK, or why it failed. */
SD_API int sd_result_status(const sd_result *result);
/* Returns the detail text (curl's, the decoder's, or the status line);
 * never NULL. */
SD_API const char *sd_result_message(const sd_result *result);
/* Returns the final response, or NULL when none was received. */
SD_API const sd_response *sd_result_response(const sd_result *result);
/* Returns the raw body (kept for disk caches) and *length; NULL when there
 * is none or it was taken. Valid until sd_result_free. */
SD_API const uint8_t *sd_result_body(const sd_result *result, size_t *length);
/* Take the body: the caller owns *data (sd_free). A failed transfer keeps
 * what arrived before the failure (a start for sd_request_set_resume).
 * Returns: SD_OK (*data NULL when there was no body); SD_EINVAL. */
SD_API int sd_result_take_body(sd_result *result, uint8_t **data, size_t *length);
/* Take the body with the size of its block (*capacity >= *length). Give it
 * back with sd_body_free(data, capacity): a block of 64 KiB or more then goes
 * to the pixel pool (sd_bitmap_pool_limit), already mapped for the next
 * transfer or canvas. sd_free works too, without the reuse. Since 0.6.
 * Returns: SD_OK (*data NULL, *capacity 0 when there was no body); SD_EINVAL. */
SD_API int sd_result_take_body_block(sd_result *result, uint8_t **data, size_t *length, size_t *capacity);
/* Name: sd_body_free — Desc: release a body taken with
 * sd_result_take_body_block, `capacity` as it gave (on glibc a bigger one
 * is caught and not believed); NULL accepted. */
SD_API void sd_body_free(void *data, size_t capacity);
/* Returns the sink's output (sd_sink_port_done) and, if `output_free` is
 * not NULL, its destructor, which tells whose it is. NULL when there is
 * none. The result keeps it (sd_result_free frees it). */
SD_API void *sd_result_output(const sd_result *result, void (**output_free)(void *));
/* Take the sink's output. Returns it (NULL when none); the caller frees it
 * with *output_free. */
SD_API void *sd_result_take_output(sd_result *result, void (**output_free)(void *));
/* Returns an sd_metric of the transfer; 0 when unknown or not measured. */
SD_API double sd_result_metric(const sd_result *result, sd_metric metric);
/* Free a result and whatever it still holds (body, output); NULL accepted. */
SD_API void sd_result_free(sd_result *result);

#ifdef __cplusplus
}
#endif
#endif /* SDCORE_SD_RESULT_H */
