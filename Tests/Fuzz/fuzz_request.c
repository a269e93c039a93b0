/* Request strings, response header lines, validators and the URL policy:
 * nothing accepted may carry a control character onto the wire, nothing
 * kept from a response may hold one (it could travel back in a conditional
 * request), the policy checks never read out of bounds, and a redacted
 * URL (sd_redact_url) agrees with itself cut short and keeps no query
 * value. */
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <string.h>

#include "fuzz_common.h"
#include "loop/sd_loop_int.h"

static int has_ctl(const char *s)
{
    for (; *s; s++)
        if (((unsigned char)*s < 0x20 && *s != '\t') || *s == 0x7f)
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the input is NUL-separated parts: url, value, header, response line, pattern list */
    char *buf = malloc(size + 1);
    memcpy(buf, data, size);
    buf[size] = 0;
    const char *part[5] = {"", "", "", "", ""};
    size_t k = 0, at = 0;
    for (size_t i = 0; i <= size && k < 5; i++)
        if (buf[i] == 0) {
            part[k++] = buf + at;
            at = i + 1;
        }
    sd_request *r = NULL;
    if (sd_request_new(part[0], &r) == SD_OK) {
        if (has_ctl(part[0]))
            __builtin_trap();
        for (int p = SD_REQ_USERNAME; p <= SD_REQ_PROXY; p++)
            if (sd_request_set_string(r, (sd_request_string)p, part[1]) == SD_OK && has_ctl(part[1]))
                __builtin_trap();
        if (sd_request_add_header(r, part[2]) == SD_OK && has_ctl(part[2]))
            __builtin_trap();
        if (sd_request_set_resume(r, (const uint8_t *)"ab", 2, part[1]) == SD_OK && has_ctl(part[1]))
            __builtin_trap();
        char msg[256];
        sd__policy_check_url(r, part[3], part[0], msg, sizeof msg);
        sd_request_set(r, SD_REQ_NO_DOWNGRADE, 1);
        sd_request_set_string(r, SD_REQ_ALLOWED_SCHEMES, "http,https");
        sd_request_set_string(r, SD_REQ_BLOCKED_HOSTS, part[4]);
        sd__policy_check_url(r, part[3], part[0], msg, sizeof msg);
        sd_request_free(r);
    }
    sd__host_matches(part[4], part[1]);
    char whole[4096], cut[7];
    int n = sd_redact_url(part[0], whole, sizeof whole);
    if (n < 0 || sd_redact_url(part[0], NULL, 0) != n || sd_redact_url(part[0], cut, sizeof cut) != n)
        __builtin_trap();
    if ((size_t)n < sizeof whole) {
        if (strlen(whole) != (size_t)n || strncmp(cut, whole, sizeof cut - 1) != 0)
            __builtin_trap();
        /* every '=' after the '?' (and before any '#') is followed by the mask */
        const char *q = strchr(whole, '?'), *end = strchr(whole, '#');
        for (const char *e = q ? strchr(q, '=') : NULL; e && (!end || e < end); e = strchr(e + 1, '='))
            if (strncmp(e, "=***", 4) != 0)
                __builtin_trap();
    }
    if (size >= 16) {
        sd__address_class(AF_INET, data);
        sd__address_class(AF_INET6, data);
    }
    sd_response *resp = sd__response_new();
    if (resp) {
        sd__response_add_header(resp, part[3], strlen(part[3]));
        sd__response_add_header(resp, (const char *)data, size); /* raw, with NULs and CRs */
        for (int i = 0; i < sd_response_header_count(resp); i++) {
            const char *name, *value;
            if (sd_response_header_at(resp, i, &name, &value) == SD_OK && (has_ctl(name) || has_ctl(value)))
                __builtin_trap();
        }
        sd__response_free(resp);
    }
    free(buf);
    return 0;
}
