/* sd_loop_int.h — request/response/result internals shared inside loop/. */
#ifndef SD_LOOP_INT_H
#define SD_LOOP_INT_H

#include "common/sd_internal.h"
#include "pool/sd_pool.h"

#define SD__REQ_NPARAMS 20
#define SD__REQ_NSTRINGS 13

_Static_assert(SD__REQ_NPARAMS == SD_REQ_IDLE_TIMEOUT_MS + 1, "one slot per sd_request_param");
_Static_assert(SD__REQ_NSTRINGS == SD_REQ_TRUSTED_HOSTS + 1, "one slot per sd_request_string");

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
/* Policy (sd_policy.c). */
/* SD_OK, or SD_EPOLICY / SD_ESCHEME / SD_EURL with a message, for `url`
 * (the first URL or a redirect's target; `from` is the URL redirected
 * from, or NULL). */
SD__HIDDEN int sd__policy_check_url(const sd_request *r, const char *url, const char *from, char *msg, size_t cap);
/* The sd_address class bits of a numeric address, 0 for a public one. */
SD__HIDDEN int sd__address_class(int family, const void *addr);
/* 1 when `host` matches one pattern of the comma list. */
SD__HIDDEN int sd__host_matches(const char *list, const char *host);
SD__HIDDEN int sd__request_copy(const sd_request *src, sd_request **out);
SD__HIDDEN sd_response *sd__response_new(void);
SD__HIDDEN void sd__response_free(sd_response *r);
SD__HIDDEN void sd__response_reset(sd_response *r);
SD__HIDDEN int sd__response_add_header(sd_response *r, const char *line, size_t len);

#endif
