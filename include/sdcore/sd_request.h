/*
 * sd_request.h — what one transfer asks for: an sd_request (a plain value
 * the caller owns; sd_loop_submit copies it), its numeric and string
 * parameters, the security policy for untrusted URLs (SECURITY.md), and
 * the defaults. Part of the transfer loop's API (sd_loop.h, which includes
 * it); split out as curl splits easy.h from multi.h.
 */
#ifndef SDCORE_SD_REQUEST_H
#define SDCORE_SD_REQUEST_H

#include "sd_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sd_request sd_request;

typedef enum sd_priority {
    SD_PRIORITY_LOW = -1,
    SD_PRIORITY_NORMAL = 0,
    SD_PRIORITY_HIGH = 1
} sd_priority;

#define SD_DEFAULT_TIMEOUT_MS 15000
#define SD_DEFAULT_CONNECT_TIMEOUT_MS 10000
#define SD_DEFAULT_MAX_REDIRECTS 10
#define SD_DEFAULT_MAX_RESPONSE_BYTES 209715200LL /* 200 MiB */
#define SD_DEFAULT_ACCEPT "image/*,*/*;q=0.8"
/* sd_request_use_server_transport's numbers, in the one place both the C
 * preset and Swift's SDWebImageDownloaderConfig.server() read them from. */
#define SD_SERVER_SCHEMES "http,https"
#define SD_SERVER_MAX_REDIRECTS 3
#define SD_SERVER_TIMEOUT_MS 30000
#define SD_SERVER_CONNECT_TIMEOUT_MS 5000
#define SD_SERVER_IDLE_TIMEOUT_MS 10000
#define SD_SERVER_LOW_SPEED_BYTES 1024
#define SD_SERVER_LOW_SPEED_TIME_MS 10000
#define SD_SERVER_MAX_BYTES 20971520LL /* 20 MiB */


typedef enum sd_request_param {
    SD_REQ_PRIORITY = 1,           /* sd_priority, default NORMAL */
    SD_REQ_TIMEOUT_MS = 2,         /* whole transfer, default 15000; 0 = none */
    SD_REQ_CONNECT_TIMEOUT_MS = 3, /* default 10000 */
    SD_REQ_LOW_SPEED_BYTES = 4,    /* abort when below this many bytes/s ... */
    SD_REQ_LOW_SPEED_TIME_MS = 5,  /* ... for this long (0 = off, the default) */
    SD_REQ_MAX_BYTES = 6,          /* response body limit, default 200 MiB; 0 = none */
    SD_REQ_MAX_REDIRECTS = 7,      /* default 10; 0 = do not follow */
    SD_REQ_ALLOW_INVALID_CERTS = 8, /* 1: skip TLS peer/host verification */
    SD_REQ_COOKIES = 9,            /* 1: use the loop's cookie engine */
    /* 1 (default): the body also goes to the sink (the request's, else the
     * loop's, if any); 0: bytes only, into the result. */
    SD_REQ_USE_SINK = 10,
    /* 11, 12: reserved (previews are sink parameters: SD_DEC_PREVIEWS) */
    SD_REQ_PROGRESS_INTERVAL_MS = 13, /* minimum between progress calls, default 0 */
    SD_REQ_STATUS_MIN = 14,        /* acceptable statuses [MIN, MAX], default 200..299 */
    SD_REQ_STATUS_MAX = 15,
    SD_REQ_HTTP2 = 16,             /* 1 (default): HTTP/2 over TLS when offered */
    /* Policy for untrusted URLs (SECURITY.md). Address classes (sd_address
     * bits) that no connection may go to: checked on the resolved address
     * of every connection, redirects and reused connections included, before
     * a byte is sent, so DNS rebinding does not get past it. Default 0. */
    SD_REQ_BLOCK_ADDRESSES = 17,
    /* 1: a redirect from https to http fails (SD_EPOLICY). Default 0. */
    SD_REQ_NO_DOWNGRADE = 18,
    /* Fail with SD_ETIMEDOUT when no byte (header or body) arrived for this
     * long: URLSession's timeoutInterval, which SDWebImage's downloadTimeout
     * is. Checked about once a second. Default 0 = off (then only
     * SD_REQ_TIMEOUT_MS bounds the transfer). */
    SD_REQ_IDLE_TIMEOUT_MS = 19
} sd_request_param;

/* Address classes for SD_REQ_BLOCK_ADDRESSES (IPv4, IPv6 and IPv4-mapped). */
typedef enum sd_address {
    SD_ADDRESS_LOOPBACK = 1,    /* 127/8, ::1 */
    SD_ADDRESS_PRIVATE = 2,     /* 10/8, 172.16/12, 192.168/16, 100.64/10, 198.18/15,
                                   192.0.0/24, fc00::/7, 64:ff9b:1::/48 */
    SD_ADDRESS_LINK_LOCAL = 4,  /* 169.254/16 (cloud metadata), fe80::/10 */
    SD_ADDRESS_MULTICAST = 8,   /* and reserved: 224/4, 240/4, 255.255.255.255, the
                                   TEST-NETs, 192.88.99/24, ff00::/8, 2001:db8::/32 */
    SD_ADDRESS_UNSPECIFIED = 16, /* 0/8, ::, 100::/64 */
    /* An IPv6 address that carries an IPv4 one (::ffff:a.b.c.d, ::a.b.c.d,
     * NAT64 64:ff9b::a.b.c.d, 6to4 2002:AABB:CCDD::, Teredo's client) is in
     * the class of that IPv4 address. */
    SD_ADDRESS_NON_PUBLIC = 31  /* all of the above */
} sd_address;

typedef enum sd_request_string {
    SD_REQ_USERNAME = 1,           /* HTTP Basic auth */
    SD_REQ_PASSWORD = 2,
    SD_REQ_USER_AGENT = 3,         /* default "SDWebImage-Linux/<version>" */
    SD_REQ_ACCEPT = 4,             /* default SD_DEFAULT_ACCEPT */
    SD_REQ_IF_NONE_MATCH = 5,      /* conditional request (revalidation) */
    SD_REQ_IF_MODIFIED_SINCE = 6,
    SD_REQ_ACCEPT_CONTENT_TYPES = 7, /* comma list of prefixes, e.g. "image/";
                                      * NULL/empty = any */
    SD_REQ_CA_FILE = 8,            /* extra trust anchors (PEM) */
    /* Policy for untrusted URLs; comma lists, checked for the first URL and
     * every redirect. Schemes allowed (default "http,https,file"); a
     * redirect never goes to file. */
    SD_REQ_ALLOWED_SCHEMES = 9,
    /* Host patterns: "example.com" (that host), "*.example.com" (its
     * subdomains), an IP literal as written. Allowed: if set, only these;
     * blocked: never these; trusted: exempt from SD_REQ_BLOCK_ADDRESSES
     * (an internal CDN; loopback test servers), a trusted entry may name a
     * port ("cdn.internal:8080", "[::1]:8080": that port alone),
     * and a redirect reaches a trusted host exempt only from a
     * trusted host. Case-insensitive. */
    SD_REQ_ALLOWED_HOSTS = 10,
    SD_REQ_BLOCKED_HOSTS = 11,
    SD_REQ_TRUSTED_HOSTS = 12,
    /* Proxy URL ("http://10.0.0.5:3128", "socks5h://..."; since 0.3).
     * Unset: curl's environment variables (http_proxy, https_proxy,
     * all_proxy, no_proxy) — except under SD_REQ_BLOCK_ADDRESSES, which
     * must judge the destination and so ignores them. "": no proxy. With a
     * proxy and SD_REQ_BLOCK_ADDRESSES, every connection goes to the proxy
     * (no_proxy ignored), which is trusted as the operator's; the URL's
     * host is judged when it is an IP literal, a name is the proxy's to
     * resolve and police. */
    SD_REQ_PROXY = 13
} sd_request_string;

/*
 * Name: sd_request_use_server_transport
 * Desc: The transport half of sd_request_use_server_preset (sd_decode_sink.h,
 *       which adds the decoder's limits): http and https only (no file), no
 *       connection to a non-public address (SD_ADDRESS_NON_PUBLIC), no
 *       https -> http redirect, at most 3 redirects, 30 s for the whole
 *       transfer, 5 s to connect, 10 s without a byte or under 1 KiB/s for
 *       10 s aborts, 20 MiB bodies (the SD_SERVER_* values). Set anything
 *       after it to differ.
 * Returns: SD_OK, SD_EINVAL, SD_ENOMEM.
 */
SD_API int sd_request_use_server_transport(sd_request *request);

/* ---- requests (caller-owned values) ---- */

/* A request for an absolute URL (`url` is copied): *out is the caller's
 * (sd_request_free), reusable for any number of submits.
 * Returns: SD_OK; SD_EINVAL (NULL or empty); SD_EURL (relative, control
 * characters, longer than curl takes); SD_ENOMEM. */
SD_API int sd_request_new(const char *url, sd_request **out);
/* Free a request (NULL accepted); transfers submitted with it keep their
 * own copies. */
SD_API void sd_request_free(sd_request *request);
/* Set an sd_request_param. Returns: SD_OK, or SD_EINVAL (unknown parameter,
 * or a value out of its range). */
SD_API int sd_request_set(sd_request *request, sd_request_param param, int64_t value);
/* Set an sd_request_string (copied; NULL restores the default). Returns:
 * SD_OK; SD_EINVAL (unknown string, or a control character in it: no
 * header injection); SD_ENOMEM. */
SD_API int sd_request_set_string(sd_request *request, sd_request_string param, const char *value);
/*
 * Name: sd_request_set_resume
 * Desc: Continue an earlier transfer of the same URL that stopped after
 *       `length` bytes (`data`, copied): the request asks for the rest
 *       ("Range: bytes=<length>-") on condition that the resource is the
 *       same ("If-Range: <validator>", the ETag or Last-Modified of the
 *       response those bytes came from; a weak ETag never matches). A 206
 *       whose Content-Range starts at `length` continues them: the body and
 *       the decoder get `data` first, then the rest; the response keeps its
 *       206 status and the expected length is the whole resource's;
 *       SD_METRIC_RESUMED_BYTES says how much was reused, and the first
 *       progress call reports `length` received. Any other answer (a 200
 *       because the resource changed or the server ignores ranges) is taken
 *       as it comes and `data` is dropped; a 206 for another range fails
 *       with SD_EHTTPSTATUS. `length` 0 clears.
 * Returns: SD_OK, SD_EINVAL (no validator), SD_ENOMEM.
 */
SD_API int sd_request_set_resume(sd_request *request, const uint8_t *data, size_t length,
                                 const char *validator);
/* Extra header line "Name: value" (copied; replaces a default of the same
 * name). Returns: SD_OK; SD_EINVAL (no colon, control characters);
 * SD_ENOMEM. */
SD_API int sd_request_add_header(sd_request *request, const char *line);

#ifdef __cplusplus
}
#endif
#endif /* SDCORE_SD_REQUEST_H */
