/* sd_request.c — request values, response headers, results. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "loop/sd_loop_int.h"

static char *dup_str(const char *s)
{
    if (s == NULL)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = sd__malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* Every request string ends up on the wire or in a header: a control
 * character (CR/LF above all) would let a caller's value become a header or
 * a request of its own. Tab is allowed (legal in header values). */
#define SD__MAX_URL_LENGTH 8000000

int sd__has_control(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
            return 1;
    return 0;
}

/* "scheme:" per RFC 3986: a letter, then letters, digits, '+', '-', '.' */
static int has_scheme(const char *u)
{
    if (!((*u | 0x20) >= 'a' && (*u | 0x20) <= 'z'))
        return 0;
    for (u++; *u && *u != ':'; u++)
        if (!(((*u | 0x20) >= 'a' && (*u | 0x20) <= 'z') || (*u >= '0' && *u <= '9') || *u == '+' || *u == '-' || *u == '.'))
            return 0;
    return *u == ':';
}

/* Every sd_request_param and its default; -1 for a number that is none.
 * The tripwire of a new one: without its case here the build fails
 * (-Wswitch, an error with SD_WERROR). A transport option is this file,
 * sd_request.h, its curl_easy_setopt in sd_easy.c and DownloadRequest.swift. */
static int64_t param_default(sd_request_param p)
{
    switch (p) {
    case SD_REQ_PRIORITY: return SD_PRIORITY_NORMAL;
    case SD_REQ_TIMEOUT_MS: return SD_DEFAULT_TIMEOUT_MS;
    case SD_REQ_CONNECT_TIMEOUT_MS: return SD_DEFAULT_CONNECT_TIMEOUT_MS;
    case SD_REQ_MAX_BYTES: return SD_DEFAULT_MAX_RESPONSE_BYTES;
    case SD_REQ_MAX_REDIRECTS: return SD_DEFAULT_MAX_REDIRECTS;
    case SD_REQ_USE_SINK: return 1;
    case SD_REQ_STATUS_MIN: return 200;
    case SD_REQ_STATUS_MAX: return 299;
    case SD_REQ_HTTP2: return 1;
    case SD_REQ_LOW_SPEED_BYTES:
    case SD_REQ_LOW_SPEED_TIME_MS:
    case SD_REQ_ALLOW_INVALID_CERTS:
    case SD_REQ_COOKIES:
    case SD_REQ_PROGRESS_INTERVAL_MS:
    case SD_REQ_BLOCK_ADDRESSES:
    case SD_REQ_NO_DOWNGRADE:
    case SD_REQ_IDLE_TIMEOUT_MS: return 0;
    }
    return -1; /* 11, 12: reserved (were the preview settings) */
}

/* Every sd_request_string (the same tripwire); sd__request_copy copies
 * them all as strings. */
static int is_string(sd_request_string s)
{
    switch (s) {
    case SD_REQ_USERNAME:
    case SD_REQ_PASSWORD:
    case SD_REQ_USER_AGENT:
    case SD_REQ_ACCEPT:
    case SD_REQ_IF_NONE_MATCH:
    case SD_REQ_IF_MODIFIED_SINCE:
    case SD_REQ_ACCEPT_CONTENT_TYPES:
    case SD_REQ_CA_FILE:
    case SD_REQ_ALLOWED_SCHEMES:
    case SD_REQ_ALLOWED_HOSTS:
    case SD_REQ_BLOCKED_HOSTS:
    case SD_REQ_TRUSTED_HOSTS:
    case SD_REQ_PROXY: return 1;
    }
    return 0;
}

int sd_request_new(const char *url, sd_request **out)
{
    SD__RETURN_IF(out == NULL, SD_EINVAL);
    *out = NULL;
    SD__RETURN_IF(url == NULL || *url == '\0', SD_EINVAL);
    SD__RETURN_IF(sd__has_control(url), SD_EURL);
    SD__RETURN_IF(strlen(url) > SD__MAX_URL_LENGTH, SD_EURL); /* curl's own input limit */
    SD__RETURN_IF(!has_scheme(url), SD_EURL); /* relative: curl would guess http:// */
    sd_request *r = sd__calloc(1, sizeof *r);
    SD__RETURN_IF(r == NULL, SD_ENOMEM);
    r->url = dup_str(url);
    if (r->url == NULL) {
        sd__free(r);
        return SD_ENOMEM;
    }
    for (int p = 1; p < SD__REQ_PARAM_SLOTS; p++)
        r->params[p] = SD__MAX(param_default((sd_request_param)p), 0);
    *out = r;
    return SD_OK;
}

void sd_request_free(sd_request *r)
{
    if (r == NULL)
        return;
    sd__free(r->url);
    for (int i = 0; i < SD__REQ_STRING_SLOTS; i++)
        sd__free(r->strings[i]);
    for (int i = 0; i < r->nheaders; i++)
        sd__free(r->headers[i]);
    sd__free(r->headers);
    sd__free(r->resume);
    sd__free(r->resume_validator);
    sd__free(r->sink_data);
    sd__free(r);
}

int sd_request_set_resume(sd_request *r, const uint8_t *data, size_t len, const char *validator)
{
    SD__RETURN_IF(r == NULL || (len > 0 && (data == NULL || validator == NULL || *validator == '\0')), SD_EINVAL);
    SD__RETURN_IF(len > 0 && sd__has_control(validator), SD_EINVAL);
    uint8_t *d = NULL;
    char *v = NULL;
    if (len > 0) {
        d = sd__malloc(len);
        v = dup_str(validator);
        if (d == NULL || v == NULL) {
            sd__free(d);
            sd__free(v);
            return SD_ENOMEM;
        }
        memcpy(d, data, len);
    }
    sd__free(r->resume);
    sd__free(r->resume_validator);
    r->resume = d;
    r->resume_len = len;
    r->resume_validator = v;
    return SD_OK;
}

int sd_request_set(sd_request *r, sd_request_param p, int64_t v)
{
    SD__RETURN_IF(r == NULL || (int)p < 1 || (int)p >= SD__REQ_PARAM_SLOTS || param_default(p) < 0, SD_EINVAL);
    if (p == SD_REQ_PRIORITY)
        SD__RETURN_IF(v < SD_PRIORITY_LOW || v > SD_PRIORITY_HIGH, SD_EINVAL);
    else
        SD__RETURN_IF(v < 0, SD_EINVAL);
    r->params[p] = v;
    return SD_OK;
}

int sd_request_set_string(sd_request *r, sd_request_string p, const char *v)
{
    SD__RETURN_IF(r == NULL || (int)p < 1 || (int)p >= SD__REQ_STRING_SLOTS || !is_string(p), SD_EINVAL);
    SD__RETURN_IF(v != NULL && sd__has_control(v), SD_EINVAL); /* no header injection */
    char *d = dup_str(v);
    SD__RETURN_IF(v != NULL && d == NULL, SD_ENOMEM);
    sd__free(r->strings[p]);
    r->strings[p] = d;
    return SD_OK;
}

int sd_request_add_header(sd_request *r, const char *line)
{
    SD__RETURN_IF(r == NULL || line == NULL || strchr(line, ':') == NULL, SD_EINVAL);
    SD__RETURN_IF(sd__has_control(line), SD_EINVAL); /* no header injection */
    char **h = sd__realloc(r->headers, sizeof *h * (size_t)(r->nheaders + 1));
    SD__RETURN_IF(h == NULL, SD_ENOMEM);
    r->headers = h;
    h[r->nheaders] = dup_str(line);
    SD__RETURN_IF(h[r->nheaders] == NULL, SD_ENOMEM);
    r->nheaders++;
    return SD_OK;
}

int sd_request_set_sink_param(sd_request *r, int key, int64_t v)
{
    SD__RETURN_IF(r == NULL, SD_EINVAL);
    for (int i = 0; i < r->nsink; i++) {
        if (r->sink_keys[i] == key) {
            r->sink_values[i] = v;
            return SD_OK;
        }
    }
    SD__RETURN_IF(r->nsink >= SD__REQ_NSINK_PARAMS, SD_EINVAL);
    r->sink_keys[r->nsink] = key;
    r->sink_values[r->nsink++] = v;
    return SD_OK;
}

int sd_request_set_sink_data(sd_request *r, const void *data, size_t len)
{
    SD__RETURN_IF(r == NULL || (len > 0 && data == NULL) || len > 4096, SD_EINVAL);
    void *copy = NULL;
    if (data != NULL && len > 0) {
        copy = sd__malloc(len);
        SD__RETURN_IF(copy == NULL, SD_ENOMEM);
        memcpy(copy, data, len);
    }
    sd__free(r->sink_data);
    r->sink_data = copy;
    r->sink_data_len = copy ? len : 0;
    return SD_OK;
}

int sd_request_sink_data(const sd_request *r, const void **data, size_t *len)
{
    SD__RETURN_IF(r == NULL || data == NULL || len == NULL, SD_EINVAL);
    *data = r->sink_data;
    *len = r->sink_data_len;
    return SD_OK;
}

int sd_request_sink_param_at(const sd_request *r, int i, int *key, int64_t *v)
{
    SD__RETURN_IF(r == NULL || key == NULL || v == NULL || i < 0 || i >= r->nsink, SD_EINVAL);
    *key = r->sink_keys[i];
    *v = r->sink_values[i];
    return SD_OK;
}

int sd__body_sink_copy(sd_body_sink *dst, const sd_body_sink *src)
{
    SD__FORWARD_IF_ERROR(sd__copy_sized(dst, sizeof *dst, src, SD__SIZE_THROUGH(sd_body_sink, release)));
    SD__RETURN_IF(dst->open == NULL || dst->push == NULL || dst->finish == NULL || dst->abort == NULL, SD_EINVAL);
    return SD_OK;
}

int sd_request_set_body_sink(sd_request *r, const sd_body_sink *sink, void *ctx)
{
    SD__RETURN_IF(r == NULL, SD_EINVAL);
    if (sink == NULL) {
        memset(&r->sink, 0, sizeof r->sink);
        r->has_sink = 0;
        r->sink_ctx = NULL;
        return SD_OK;
    }
    sd_body_sink copy;
    SD__FORWARD_IF_ERROR(sd__body_sink_copy(&copy, sink));
    r->sink = copy;
    r->has_sink = 1;
    r->sink_ctx = ctx;
    return SD_OK;
}

int sd__request_copy(const sd_request *src, sd_request **out)
{
    sd_request *r;
    SD__FORWARD_IF_ERROR(sd_request_new(src->url, &r));
    memcpy(r->params, src->params, sizeof r->params);
    r->nsink = src->nsink;
    memcpy(r->sink_keys, src->sink_keys, sizeof r->sink_keys);
    memcpy(r->sink_values, src->sink_values, sizeof r->sink_values);
    r->sink = src->sink;
    r->has_sink = src->has_sink;
    r->sink_ctx = src->sink_ctx;
    int rc = SD_OK;
    for (int i = 1; i < SD__REQ_STRING_SLOTS && rc == SD_OK; i++)
        if (src->strings[i])
            rc = sd_request_set_string(r, (sd_request_string)i, src->strings[i]);
    for (int i = 0; i < src->nheaders && rc == SD_OK; i++)
        rc = sd_request_add_header(r, src->headers[i]);
    if (rc == SD_OK && src->resume_len > 0)
        rc = sd_request_set_resume(r, src->resume, src->resume_len, src->resume_validator);
    if (rc == SD_OK && src->sink_data_len > 0)
        rc = sd_request_set_sink_data(r, src->sink_data, src->sink_data_len);
    if (rc != SD_OK) {
        sd_request_free(r);
        return rc;
    }
    *out = r;
    return SD_OK;
}

/* ---- responses ---- */

sd_response *sd__response_new(void) { return sd__calloc(1, sizeof(sd_response)); }

void sd__response_reset(sd_response *r)
{
    for (int i = 0; i < r->nheaders; i++) {
        sd__free(r->headers[i].name);
        sd__free(r->headers[i].value);
    }
    r->nheaders = 0;
    r->status = 0;
}

void sd__response_free(sd_response *r)
{
    if (r == NULL)
        return;
    sd__response_reset(r);
    sd__free(r->headers);
    sd__free(r->content_type);
    sd__free(r->effective_url);
    sd__free(r);
}

sd_response *sd__response_copy(const sd_response *r)
{
    sd_response *c = sd__response_new();
    if (c == NULL)
        return NULL;
    c->status = r->status;
    c->expected = r->expected;
    int ok = (c->content_type = r->content_type ? sd__strdup(r->content_type) : NULL) || !r->content_type;
    ok = ok && ((c->effective_url = r->effective_url ? sd__strdup(r->effective_url) : NULL) || !r->effective_url);
    if (ok && r->nheaders > 0) {
        c->headers = sd__calloc((size_t)r->nheaders, sizeof *c->headers);
        ok = c->headers != NULL;
        if (ok)
            c->cap = r->nheaders;
        for (int i = 0; ok && i < r->nheaders; i++) {
            c->headers[i].name = sd__strdup(r->headers[i].name);
            c->headers[i].value = sd__strdup(r->headers[i].value);
            c->nheaders = i + 1; /* freed by sd__response_free from here on */
            ok = c->headers[i].name && c->headers[i].value;
        }
    }
    if (!ok) {
        sd__response_free(c);
        return NULL;
    }
    return c;
}

int sd__response_add_header(sd_response *r, const char *line, size_t len)
{
    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == '\n'))
        len--;
    if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
        sd__response_reset(r); /* a new response (redirect, 100-continue) */
        return SD_OK;
    }
    const char *colon = memchr(line, ':', len);
    if (colon == NULL)
        return SD_OK;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)line[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return SD_OK; /* a bare CR or NUL inside: malformed, not kept (it
                           * could travel back in a conditional request) */
    }
    if (r->nheaders == 256)
        return SD_OK; /* a hostile server's thousandth header is not kept */
    if (r->nheaders == r->cap) {
        int cap = r->cap ? r->cap * 2 : 16;
        sd__header *h = sd__realloc(r->headers, sizeof *h * (size_t)cap);
        SD__RETURN_IF(h == NULL, SD_ENOMEM);
        r->headers = h;
        r->cap = cap;
    }
    size_t nlen = (size_t)(colon - line);
    const char *v = colon + 1;
    size_t vlen = len - nlen - 1;
    while (vlen > 0 && (*v == ' ' || *v == '\t'))
        v++, vlen--;
    while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
        vlen--;
    char *name = sd__malloc(nlen + 1), *value = sd__malloc(vlen + 1);
    if (name == NULL || value == NULL) {
        sd__free(name);
        sd__free(value);
        return SD_ENOMEM;
    }
    memcpy(name, line, nlen);
    name[nlen] = '\0';
    memcpy(value, v, vlen);
    value[vlen] = '\0';
    r->headers[r->nheaders].name = name;
    r->headers[r->nheaders].value = value;
    r->nheaders++;
    return SD_OK;
}

long sd_response_status(const sd_response *r) { return r ? r->status : 0; }
int sd_response_header_count(const sd_response *r) { return r ? r->nheaders : 0; }

int sd_response_header_at(const sd_response *r, int i, const char **name, const char **value)
{
    SD__RETURN_IF(r == NULL || i < 0 || i >= r->nheaders || name == NULL || value == NULL, SD_EINVAL);
    *name = r->headers[i].name;
    *value = r->headers[i].value;
    return SD_OK;
}
uint64_t sd_response_expected_length(const sd_response *r) { return r ? r->expected : 0; }
const char *sd_response_content_type(const sd_response *r) { return r ? r->content_type : NULL; }
const char *sd_response_effective_url(const sd_response *r) { return r ? r->effective_url : NULL; }

const char *sd_response_header(const sd_response *r, const char *name)
{
    if (r == NULL || name == NULL)
        return NULL;
    for (int i = r->nheaders - 1; i >= 0; i--)
        if (strcasecmp(r->headers[i].name, name) == 0)
            return r->headers[i].value;
    return NULL;
}

/* ---- results ---- */

int sd_result_status(const sd_result *r) { return r ? r->status : SD_EINVAL; }
const char *sd_result_message(const sd_result *r) { return r ? r->message : ""; }
const sd_response *sd_result_response(const sd_result *r) { return r ? r->response : NULL; }

const uint8_t *sd_result_body(const sd_result *r, size_t *len)
{
    if (len)
        *len = r ? r->body_len : 0;
    return r ? r->body : NULL;
}

int sd_result_take_body(sd_result *r, uint8_t **data, size_t *len)
{
    size_t cap;
    return sd_result_take_body_block(r, data, len, &cap);
}

int sd_result_take_body_block(sd_result *r, uint8_t **data, size_t *len, size_t *cap)
{
    SD__RETURN_IF(r == NULL || data == NULL || len == NULL || cap == NULL, SD_EINVAL);
    *data = r->body;
    *cap = r->body ? r->body_cap : 0;
    *len = r->body_len;
    r->body = NULL;
    r->body_len = 0;
    r->body_cap = 0;
    return SD_OK;
}

void *sd_result_output(const sd_result *r, void (**output_free)(void *))
{
    if (output_free)
        *output_free = r ? r->output_free : NULL;
    return r ? r->output : NULL;
}

void *sd_result_take_output(sd_result *r, void (**output_free)(void *))
{
    void *o = sd_result_output(r, output_free);
    if (r) {
        r->output = NULL;
        r->output_free = NULL;
    }
    return o;
}

double sd_result_metric(const sd_result *r, sd_metric m)
{
    if (r == NULL || (int)m < 1 || (int)m >= SD__NMETRICS)
        return 0;
    return r->metrics[m];
}

void sd_result_free(sd_result *r)
{
    if (r == NULL)
        return;
    sd__response_free(r->response);
    sd__body_free(r->body, r->body_cap);
    if (r->output_free)
        r->output_free(r->output);
    sd__free(r);
}
