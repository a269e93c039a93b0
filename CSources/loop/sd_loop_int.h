/* sd_loop_int.h — request/response/result internals shared inside loop/. */
#ifndef SD_LOOP_INT_H
#define SD_LOOP_INT_H

#include "common/sd_internal.h"
#include "pool/sd_pool.h"

#define SD__REQ_NPARAMS 17
#define SD__REQ_NSTRINGS 9

struct sd_request {
    char *url;
    int64_t params[SD__REQ_NPARAMS];
    char *strings[SD__REQ_NSTRINGS];
    char **headers;
    int nheaders;
    sd__job_options dec;
    uint8_t *resume;      /* sd_request_set_resume: bytes we have, */
    size_t resume_len;
    char *resume_validator; /* and the If-Range value */
};

typedef struct {
    char *name;
    char *value;
} sd__header;

struct sd_response {
    long status;
    sd__header *headers;
    int nheaders, cap;
    uint64_t expected;
    char *content_type;
    char *effective_url;
};

struct sd_result {
    int status;
    char message[512];
    sd_response *response;
    uint8_t *body;
    size_t body_len;
    size_t body_cap; /* for sd__body_free */
    sd_bitmap *bitmap;
    int64_t info[SD__JOB_INFO_COUNT];
    uint8_t info_known[SD__JOB_INFO_COUNT];
    double metrics[16];
};

/* 1 when `s` holds a control character other than tab (CR, LF, DEL, …). */
SD__HIDDEN int sd__has_control(const char *s);
SD__HIDDEN int sd__request_copy(const sd_request *src, sd_request **out);
SD__HIDDEN sd_response *sd__response_new(void);
SD__HIDDEN void sd__response_free(sd_response *r);
SD__HIDDEN void sd__response_reset(sd_response *r);
SD__HIDDEN int sd__response_add_header(sd_response *r, const char *line, size_t len);

#endif
