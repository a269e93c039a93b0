/*
 * sd_policy.c — what a request may reach: schemes, host patterns, address
 * classes, no https -> http downgrade. The URL checks run for the first URL
 * (when the transfer starts) and for every redirect (on the Location header,
 * before curl follows it); the address check runs on the resolved address of
 * every connection in sd_loop.c, so a name that resolves (or rebinds) to an
 * internal address is caught however it was reached.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "loop/sd_loop_int.h"

/* One comma-separated item of `list` equals `word` (case-insensitive). */
static int in_list(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; *p;) {
        while (*p == ',' || *p == ' ')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *t = e;
        while (t > p && t[-1] == ' ')
            t--;
        if ((size_t)(t - p) == n && n > 0 && strncasecmp(p, word, n) == 0)
            return 1;
        p = e;
    }
    return 0;
}

/* The next entry of a comma- or space-separated list at *at (its start,
 * *n its length; *at moves past it); NULL at the end. */
static const char *list_entry(const char **at, size_t *n)
{
    const char *s = *at;
    while (*s == ',' || *s == ' ')
        s++;
    const char *e = s;
    while (*e && *e != ',' && *e != ' ')
        e++;
    *at = e;
    *n = (size_t)(e - s);
    return *s ? s : NULL;
}

int sd__host_matches(const char *list, const char *host)
{
    if (list == NULL || host == NULL)
        return 0;
    /* an IPv6 literal as curl gives it, "[::1]", matches "::1" too */
    size_t hn = strlen(host);
    if (hn > 2 && host[0] == '[' && host[hn - 1] == ']') {
        char bare[INET6_ADDRSTRLEN + 8];
        if (hn - 2 < sizeof bare) {
            memcpy(bare, host + 1, hn - 2);
            bare[hn - 2] = '\0';
            if (sd__host_matches(list, bare))
                return 1;
        }
    }
    if (hn > 0 && host[hn - 1] == '.')
        hn--; /* "example.com." is example.com */
    size_t n;
    for (const char *at = list, *p; (p = list_entry(&at, &n)) != NULL;) {
        if (n >= 2 && p[0] == '*' && p[1] == '.') {
            /* subdomains only: "*.example.com" matches a.example.com */
            size_t sn = n - 1; /* ".example.com" */
            if (hn > sn && strncasecmp(host + hn - sn, p + 1, sn) == 0)
                return 1;
        } else if (n == hn && strncasecmp(host, p, n) == 0) {
            return 1;
        }
    }
    return 0;
}

int sd__address_class(int family, const void *addr)
{
    const uint8_t *a = addr;
    uint8_t v4[4];
    if (family == AF_INET6) {
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        static const uint8_t zero[16] = {0};
        if (memcmp(a, mapped, 12) == 0) {
            memcpy(v4, a + 12, 4); /* ::ffff:127.0.0.1 is 127.0.0.1 */
            a = v4;
            family = AF_INET;
        } else {
            if (memcmp(a, zero, 16) == 0)
                return SD_ADDRESS_UNSPECIFIED;
            if (memcmp(a, zero, 15) == 0 && a[15] == 1)
                return SD_ADDRESS_LOOPBACK;
            if ((a[0] & 0xfe) == 0xfc)
                return SD_ADDRESS_PRIVATE; /* fc00::/7 */
            if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
                return SD_ADDRESS_LINK_LOCAL;
            if (a[0] == 0xff)
                return SD_ADDRESS_MULTICAST;
            /* Addresses that carry an IPv4 one are judged by it, or a NAT64
             * gateway, a 6to4 relay or a Teredo server would take the
             * request to 169.254.169.254 for us. */
            static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
            if (memcmp(a, zero, 12) == 0 || memcmp(a, nat64, 12) == 0) {
                memcpy(v4, a + 12, 4); /* ::a.b.c.d (deprecated), 64:ff9b::a.b.c.d (RFC 6052) */
            } else if (a[0] == 0x20 && a[1] == 0x02) {
                memcpy(v4, a + 2, 4); /* 6to4, 2002:AABB:CCDD::/48 (RFC 3056) */
            } else if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0) {
                for (int i = 0; i < 4; i++)
                    v4[i] = (uint8_t)~a[12 + i]; /* Teredo client, inverted (RFC 4380) */
            } else if (a[0] == 0 && a[1] == 0x64 && a[2] == 0xff && a[3] == 0x9b && a[4] == 0 && a[5] == 1) {
                return SD_ADDRESS_PRIVATE; /* local-use NAT64, 64:ff9b:1::/48 (RFC 8215) */
            } else if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0d && a[3] == 0xb8) {
                return SD_ADDRESS_MULTICAST; /* documentation, 2001:db8::/32: reserved */
            } else if (memcmp(a, (const uint8_t[8]){1, 0, 0, 0, 0, 0, 0, 0}, 8) == 0) {
                return SD_ADDRESS_UNSPECIFIED; /* discard-only, 100::/64 (RFC 6666) */
            } else {
                return 0;
            }
            a = v4;
            family = AF_INET;
        }
    }
    if (family != AF_INET)
        return SD_ADDRESS_UNSPECIFIED; /* unknown family: never public */
    if (a[0] == 127)
        return SD_ADDRESS_LOOPBACK;
    if (a[0] == 0)
        return SD_ADDRESS_UNSPECIFIED;
    if (a[0] == 10 || (a[0] == 172 && (a[1] & 0xf0) == 16) || (a[0] == 192 && a[1] == 168)
        || (a[0] == 100 && (a[1] & 0xc0) == 64)    /* carrier-grade NAT */
        || (a[0] == 198 && (a[1] & 0xfe) == 18)    /* 198.18/15, benchmarking: lab networks */
        || (a[0] == 192 && a[1] == 0 && a[2] == 0)) /* 192.0.0/24: DS-Lite, NAT64 discovery */
        return SD_ADDRESS_PRIVATE;
    if ((a[0] == 192 && a[1] == 0 && a[2] == 2) || (a[0] == 198 && a[1] == 51 && a[2] == 100)
        || (a[0] == 203 && a[1] == 0 && a[2] == 113) || (a[0] == 192 && a[1] == 88 && a[2] == 99))
        return SD_ADDRESS_MULTICAST; /* documentation TEST-NETs, the old 6to4 relay anycast: reserved */
    if (a[0] == 169 && a[1] == 254)
        return SD_ADDRESS_LINK_LOCAL;
    if (a[0] >= 224)
        return SD_ADDRESS_MULTICAST; /* multicast, reserved 240/4, broadcast */
    return 0;
}

int sd__policy_check_url(const sd_request *r, const char *url, const char *from, char *msg, size_t cap)
{
    const char *schemes = r->strings[SD_REQ_ALLOWED_SCHEMES];
    const char *allowed = r->strings[SD_REQ_ALLOWED_HOSTS], *blocked = r->strings[SD_REQ_BLOCKED_HOSTS];
    int no_downgrade = r->params[SD_REQ_NO_DOWNGRADE] != 0;
    if (!schemes && !(allowed && *allowed) && !(blocked && *blocked) && !(no_downgrade && from))
        return SD_OK; /* no policy: curl's own rules (protocols) apply */
    CURLU *u = curl_url();
    SD__RETURN_IF(u == NULL, SD_ENOMEM);
    char *scheme = NULL, *host = NULL;
    int rc = SD_OK;
    if (from)
        curl_url_set(u, CURLUPART_URL, from, 0);
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK
        || curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) {
        snprintf(msg, cap, "malformed URL");
        rc = SD_EURL;
        goto out;
    }
    curl_url_get(u, CURLUPART_HOST, &host, 0); /* none for file: */
    if (schemes && !in_list(schemes, scheme)) {
        snprintf(msg, cap, "scheme \"%s\" not allowed (allowed: %s)", scheme, schemes);
        rc = SD_ESCHEME;
        goto out;
    }
    if (no_downgrade && from && strncasecmp(from, "https:", 6) == 0 && strcasecmp(scheme, "http") == 0) {
        snprintf(msg, cap, "redirect from https to http refused");
        rc = SD_EPOLICY;
        goto out;
    }
    const char *h = host ? host : "";
    if (blocked && *blocked && sd__host_matches(blocked, h)) {
        snprintf(msg, cap, "host %s is blocked", h);
        rc = SD_EPOLICY;
    } else if (allowed && *allowed && !sd__host_matches(allowed, h)) {
        snprintf(msg, cap, "host %s is not in the allowed hosts", *h ? h : "(none)");
        rc = SD_EPOLICY;
    }
out:
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
    return rc;
}

int sd_request_use_server_transport(sd_request *r)
{
    SD__RETURN_IF(r == NULL, SD_EINVAL);
    static const struct { int p; int64_t v; } params[] = {
        {SD_REQ_BLOCK_ADDRESSES, SD_ADDRESS_NON_PUBLIC},
        {SD_REQ_NO_DOWNGRADE, 1},
        {SD_REQ_MAX_REDIRECTS, SD_SERVER_MAX_REDIRECTS},
        {SD_REQ_TIMEOUT_MS, SD_SERVER_TIMEOUT_MS},
        {SD_REQ_CONNECT_TIMEOUT_MS, SD_SERVER_CONNECT_TIMEOUT_MS},
        {SD_REQ_IDLE_TIMEOUT_MS, SD_SERVER_IDLE_TIMEOUT_MS},
        {SD_REQ_LOW_SPEED_BYTES, SD_SERVER_LOW_SPEED_BYTES},
        {SD_REQ_LOW_SPEED_TIME_MS, SD_SERVER_LOW_SPEED_TIME_MS},
        {SD_REQ_MAX_BYTES, SD_SERVER_MAX_BYTES},
    };
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++)
        SD__FORWARD_IF_ERROR(sd_request_set(r, (sd_request_param)params[i].p, params[i].v));
    return sd_request_set_string(r, SD_REQ_ALLOWED_SCHEMES, SD_SERVER_SCHEMES);
}

/* ---- addresses, judged on every connection (loop thread) ---- */

/* The host and port (the scheme's default when none is written) of `url`;
 * 0 when it has none. The caller curl_free()s *host. */
static int url_host_port(const char *url, char **host, long *port)
{
    char *p = NULL;
    *host = NULL;
    *port = 0;
    CURLU *u = curl_url();
    if (u && url && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, host, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_PORT, &p, CURLU_DEFAULT_PORT) == CURLUE_OK)
        *port = strtol(p, NULL, 10);
    curl_free(p);
    curl_url_cleanup(u);
    return *host != NULL;
}

/* The host of the URL this transfer is on now (the redirect's once curl
 * follows one); NULL if none. The caller curl_free()s it. */
static char *effective_host(sd__xfer *x)
{
    char *url = NULL, *host = NULL;
    long port;
    curl_easy_getinfo(x->easy, CURLINFO_EFFECTIVE_URL, &url);
    url_host_port(url, &host, &port);
    return host;
}

/* An entry of SD_REQ_TRUSTED_HOSTS matches `host` on `port`: "name" or
 * "*.name" or an IP literal, any port; "name:port" or "[v6]:port", that
 * port only. */
static int trusted_matches(const char *list, const char *host, long port)
{
    size_t n;
    for (const char *at = list, *p; (p = list_entry(&at, &n)) != NULL;) {
        char entry[300];
        if (n < sizeof entry) {
            memcpy(entry, p, n);
            entry[n] = '\0';
            /* a port: after "]" for [v6]:port, else after the only colon */
            char *colon = entry[0] == '[' ? strstr(entry, "]:") : strchr(entry, ':');
            if (colon != NULL && entry[0] == '[')
                colon++;
            if (colon != NULL && entry[0] != '[' && strchr(colon + 1, ':') != NULL)
                colon = NULL; /* a bare IPv6 literal: no port */
            long want = -1;
            if (colon != NULL) {
                char *end;
                want = strtol(colon + 1, &end, 10);
                if (*end != '\0' || want <= 0 || want > 65535)
                    want = -2; /* malformed: matches nothing */
                *colon = '\0';
            }
            if (want != -2 && (want < 0 || want == port) && sd__host_matches(entry, host))
                return 1;
        }
    }
    return 0;
}

/* `addr` (family AF_INET or AF_INET6) lies in an "address/bits" entry of
 * `list` (a CIDR range: 10.0.0.0/8, fd00::/8). A malformed range matches
 * nothing. */
static int in_trusted_range(const char *list, int family, const void *addr)
{
    size_t n;
    for (const char *at = list, *p; (p = list_entry(&at, &n)) != NULL;) {
        char entry[64];
        const char *slash = memchr(p, '/', n);
        if (slash == NULL || n >= sizeof entry)
            continue;
        memcpy(entry, p, n);
        entry[n] = '\0';
        entry[slash - p] = '\0';
        char *end;
        long bits = strtol(entry + (slash - p) + 1, &end, 10);
        uint8_t net[16];
        int fam = strchr(entry, ':') ? AF_INET6 : AF_INET, size = fam == AF_INET6 ? 16 : 4;
        if (*end != '\0' || end == entry + (slash - p) + 1 || bits < 0 || bits > size * 8 || fam != family ||
            inet_pton(fam, entry, net) != 1)
            continue;
        const uint8_t *a = addr;
        int ok = 1;
        for (long b = 0; b < bits && ok; b += 8) {
            uint8_t mask = (uint8_t)(bits - b >= 8 ? 0xff : 0xff << (8 - (bits - b)));
            ok = (a[b / 8] & mask) == (net[b / 8] & mask);
        }
        if (ok)
            return 1;
    }
    return 0;
}

/* The request's own URL names an IP literal inside a trusted range. */
static int first_in_trusted_range(const sd__xfer *x, const char *list)
{
    char *host = NULL;
    long port = 0;
    int ok = 0;
    if (url_host_port(x->req->url, &host, &port) && host != NULL) {
        uint8_t a[16];
        const char *h = host;
        char v6[64];
        size_t len = strlen(h);
        if (h[0] == '[' && len < sizeof v6 + 1 && h[len - 1] == ']') { /* [v6] */
            memcpy(v6, h + 1, len - 2);
            v6[len - 2] = '\0';
            h = v6;
        }
        if (inet_pton(AF_INET, h, a) == 1)
            ok = in_trusted_range(list, AF_INET, a);
        else if (inet_pton(AF_INET6, h, a) == 1)
            ok = in_trusted_range(list, AF_INET6, a);
    }
    curl_free(host);
    return ok;
}

/* The transfer is on a host of SD_REQ_TRUSTED_HOSTS, and came there from
 * one: a redirect from any other host to a trusted one is judged as any
 * other connection (a public origin cannot send us into the network the
 * operator trusts). */
static int on_trusted_host(sd__xfer *x)
{
    const char *trusted = x->req->strings[SD_REQ_TRUSTED_HOSTS];
    if (trusted == NULL || *trusted == '\0')
        return 0;
    char *url = NULL, *host = NULL, *first = NULL;
    long port = 0, first_port = 0;
    curl_easy_getinfo(x->easy, CURLINFO_EFFECTIVE_URL, &url);
    int ok = url_host_port(url, &host, &port) && trusted_matches(trusted, host, port) &&
             url_host_port(x->req->url, &first, &first_port) && trusted_matches(trusted, first, first_port);
    curl_free(host);
    curl_free(first);
    return ok;
}

static const char *class_name(int c)
{
    return c & SD_ADDRESS_LOOPBACK ? "loopback" : c & SD_ADDRESS_PRIVATE ? "private"
         : c & SD_ADDRESS_LINK_LOCAL ? "link-local" : c & SD_ADDRESS_MULTICAST ? "multicast or reserved"
         : "unspecified";
}

/* 1 when the policy refuses this numeric address (and records why). */
static int address_refused(sd__xfer *x, int family, const void *addr)
{
    int cls = sd__address_class(family, addr) & (int)x->req->params[SD_REQ_BLOCK_ADDRESSES];
    if (cls == 0 || on_trusted_host(x))
        return 0;
    /* an address inside a trusted range, reached from a request that named
     * an address inside one (never through a redirect from elsewhere) */
    const char *trusted = x->req->strings[SD_REQ_TRUSTED_HOSTS];
    if (trusted != NULL && in_trusted_range(trusted, family, addr) && first_in_trusted_range(x, trusted))
        return 0;
    char text[INET6_ADDRSTRLEN] = "?";
    inet_ntop(family, addr, text, sizeof text);
    x->policy_refused = 1;
    snprintf(x->policy_msg, sizeof x->policy_msg, "connection to %s refused by policy (%s address)", text,
             class_name(cls));
    return 1;
}

/* Through a proxy (SD_REQ_PROXY) every connection is to the proxy, the
 * operator's: the rule judges the URL's host instead, when it is an IP
 * literal (a name is resolved by the proxy). 1 when refused. */
static int via_proxy(const sd__xfer *x)
{
    const char *proxy = x->req->strings[SD_REQ_PROXY];
    return proxy != NULL && *proxy != '\0';
}

static int url_host_refused(sd__xfer *x)
{
    char *host = effective_host(x);
    int refused = 0;
    if (host != NULL) {
        char lit[64];
        size_t n = strlen(host);
        if (n >= 2 && host[0] == '[' && n - 2 < sizeof lit) { /* [v6] */
            memcpy(lit, host + 1, n - 2);
            lit[n - 2] = '\0';
            char *zone = strchr(lit, '%');
            if (zone)
                *zone = '\0';
        } else {
            snprintf(lit, sizeof lit, "%s", host);
        }
        uint8_t addr[16];
        if (inet_pton(AF_INET, lit, addr) == 1)
            refused = address_refused(x, AF_INET, addr);
        else if (inet_pton(AF_INET6, lit, addr) == 1)
            refused = address_refused(x, AF_INET6, addr);
    }
    curl_free(host);
    return refused;
}

/* Every new connection: the resolved address is judged before connect(). */
static curl_socket_t on_open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
    sd__xfer *x = ud;
    (void)purpose;
    if (via_proxy(x))
        return url_host_refused(x) ? CURL_SOCKET_BAD : socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
    const void *ip = a->family == AF_INET ? (const void *)&((struct sockaddr_in *)(void *)&a->addr)->sin_addr
                   : a->family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)(void *)&a->addr)->sin6_addr
                   : NULL;
    uint8_t none[16] = {0};
    if (address_refused(x, ip ? a->family : AF_UNSPEC, ip ? ip : none))
        return CURL_SOCKET_BAD;
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

#if LIBCURL_VERSION_NUM >= 0x075000
/* Every request, on a new or a reused connection (a reused one was opened
 * for another transfer, maybe under no policy). */
static int on_prereq(void *ud, char *primary_ip, char *local_ip, int primary_port, int local_port)
{
    sd__xfer *x = ud;
    (void)local_ip, (void)primary_port, (void)local_port;
    if (via_proxy(x))
        return url_host_refused(x) ? CURL_PREREQFUNC_ABORT : CURL_PREREQFUNC_OK;
    uint8_t addr[16];
    int family = AF_UNSPEC;
    if (inet_pton(AF_INET, primary_ip, addr) == 1)
        family = AF_INET;
    else if (inet_pton(AF_INET6, primary_ip, addr) == 1)
        family = AF_INET6;
    if (family == AF_UNSPEC)
        return CURL_PREREQFUNC_OK; /* file:, or a Unix socket: no address */
    return address_refused(x, family, addr) ? CURL_PREREQFUNC_ABORT : CURL_PREREQFUNC_OK;
}
#endif

void sd__policy_watch_addresses(sd__xfer *x, CURL *e)
{
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, x);
#if LIBCURL_VERSION_NUM >= 0x075000
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, x);
#endif
}
