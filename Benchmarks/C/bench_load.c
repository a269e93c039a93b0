/*
 * bench_load.c — `sdcore-bench load`: an HTTP/1.1 load generator for the
 * serve benchmark (scripts/bench_serve.py), in C so that at ten thousand
 * requests a second the generator does not take the core the server needs
 * (the Python one did). One thread, epoll, `--connections` requests in
 * flight; every path of `--paths` is asked once, in order, each by the next
 * free connection. Each request is timed here, from its first byte written
 * (or from connect() when it needs a new connection) to its last byte read:
 * no synthetic samples. Keep-alive unless `--close` (a connection per
 * request) or the server said `Connection: close`. Answers need a
 * Content-Length (ours and thumbor's have one). Prints one JSON object:
 * requests, ok (200s), seconds, p50/p99/max in ms, median body bytes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

typedef struct {
    int fd;
    int path;        /* index of the request in flight, -1: idle */
    size_t sent, req_len;
    char req[2048];
    char *buf;       /* the answer so far */
    size_t len, cap;
    size_t head_end; /* 0 until the header is in */
    size_t body_len;
    int status, close_after;
    double t0;
} conn;

static struct sockaddr_in addr;
static int epfd, close_each;
static char **paths;
static int npaths, next_path, done_count, ok_count, failed;
static double *lat;
static size_t *sizes;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static int open_conn(conn *c)
{
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return -1;
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(c->fd, (struct sockaddr *)&addr, sizeof addr) != 0 && errno != EINPROGRESS) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
    return epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev);
}

static void drop_conn(conn *c)
{
    if (c->fd >= 0) {
        epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    c->fd = -1;
}

/* Give `c` the next path (timed from now: a new connection's set-up counts). */
static int start_next(conn *c)
{
    if (next_path >= npaths) {
        c->path = -1;
        drop_conn(c);
        return 0;
    }
    c->path = next_path++;
    c->t0 = now_ms();
    c->sent = c->len = c->head_end = c->body_len = 0;
    c->status = c->close_after = 0;
    int n = snprintf(c->req, sizeof c->req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */*\r\n%s\r\n",
                     paths[c->path], close_each ? "Connection: close\r\n" : "");
    if (n < 0 || (size_t)n >= sizeof c->req)
        return -1;
    c->req_len = (size_t)n;
    if (c->fd < 0)
        return open_conn(c);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
    return epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

static int parse_head(conn *c)
{
    char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
    if (end == NULL)
        return 0;
    c->head_end = (size_t)(end - c->buf) + 4;
    if (c->len < 12 || memcmp(c->buf, "HTTP/1.", 7) != 0)
        return -1;
    c->status = atoi(c->buf + 9);
    int have_length = 0;
    for (char *line = memchr(c->buf, '\n', c->head_end); line && line < c->buf + c->head_end; line = memchr(line, '\n', (size_t)(c->buf + c->head_end - line))) {
        line++;
        if (strncasecmp(line, "content-length:", 15) == 0) {
            c->body_len = strtoull(line + 15, NULL, 10);
            have_length = 1;
        } else if (strncasecmp(line, "connection:", 11) == 0) {
            const char *v = line + 11;
            while (*v == ' ')
                v++;
            if (strncasecmp(v, "close", 5) == 0)
                c->close_after = 1;
        }
    }
    return have_length || c->status == 304 ? 1 : -1;
}

/* Read what is there; 1 when the answer is complete, 0 for more, -1 broken. */
static int on_readable(conn *c)
{
    for (;;) {
        if (c->cap - c->len < 65536) {
            size_t cap = c->cap ? c->cap * 2 : 131072;
            char *b = realloc(c->buf, cap);
            if (b == NULL)
                return -1;
            c->buf = b;
            c->cap = cap;
        }
        ssize_t n = read(c->fd, c->buf + c->len, c->cap - c->len);
        if (n < 0)
            return errno == EAGAIN ? 0 : -1;
        if (n == 0)
            return -1; /* closed before the answer was whole */
        c->len += (size_t)n;
        if (c->head_end == 0) {
            int h = parse_head(c);
            if (h < 0)
                return -1;
            if (h == 0)
                continue;
        }
        if (c->len >= c->head_end + c->body_len)
            return 1;
    }
}

static int on_writable(conn *c)
{
    while (c->sent < c->req_len) {
        ssize_t n = write(c->fd, c->req + c->sent, c->req_len - c->sent);
        if (n < 0)
            return errno == EAGAIN ? 0 : -1;
        c->sent += (size_t)n;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    return epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

static void usage(void)
{
    fprintf(stderr, "usage: sdcore-bench load --port N --paths FILE [--connections N] [--close]\n");
}

int bench_load_main(int argc, char **argv)
{
    int port = 0, nconn = 16;
    const char *list = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--port") && i + 1 < argc)
            port = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--paths") && i + 1 < argc)
            list = argv[++i];
        else if (!strcmp(argv[i], "--connections") && i + 1 < argc)
            nconn = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--close"))
            close_each = 1;
        else {
            usage();
            return 2;
        }
    }
    if (port <= 0 || port > 65535 || list == NULL || nconn < 1 || nconn > 4096) {
        usage();
        return 2;
    }
    FILE *f = fopen(list, "r");
    if (f == NULL) {
        fprintf(stderr, "sdcore-bench load: cannot read %s\n", list);
        return 1;
    }
    char line[1800];
    int cap = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!*line)
            continue;
        if (npaths == cap) {
            cap = cap ? cap * 2 : 1024;
            char **p = realloc(paths, (size_t)cap * sizeof *paths);
            if (p == NULL)
                return 1;
            paths = p;
        }
        paths[npaths++] = strdup(line);
    }
    fclose(f);
    if (npaths == 0)
        return 1;
    lat = calloc((size_t)npaths, sizeof *lat);
    sizes = calloc((size_t)npaths, sizeof *sizes);
    conn *cs = calloc((size_t)nconn, sizeof *cs);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (lat == NULL || sizes == NULL || cs == NULL || epfd < 0)
        return 1;
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    double start = now_ms();
    for (int i = 0; i < nconn; i++) {
        cs[i].fd = -1;
        if (start_next(&cs[i]) != 0)
            failed++;
    }
    struct epoll_event evs[256];
    while (done_count + failed < npaths) {
        int n = epoll_wait(epfd, evs, 256, 60000);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "sdcore-bench load: no answer for 60 s\n");
            return 1;
        }
        for (int k = 0; k < n; k++) {
            conn *c = evs[k].data.ptr;
            if (c->path < 0)
                continue;
            int r = 0;
            if (evs[k].events & EPOLLOUT)
                r = on_writable(c);
            if (r >= 0 && (evs[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                r = on_readable(c);
            if (r == 0)
                continue;
            if (r > 0) {
                lat[done_count] = now_ms() - c->t0;
                sizes[done_count] = c->body_len;
                done_count++;
                ok_count += c->status == 200;
                if (close_each || c->close_after)
                    drop_conn(c);
            } else {
                failed++;
                drop_conn(c);
            }
            if (start_next(c) != 0) {
                failed++;
                c->path = -1;
            }
        }
    }
    double seconds = (now_ms() - start) / 1e3;
    qsort(lat, (size_t)done_count, sizeof *lat, cmp_double);
    qsort(sizes, (size_t)done_count, sizeof *sizes, cmp_size);
    printf("{\"bench\":\"load\",\"requests\":%d,\"ok\":%d,\"failed\":%d,\"connections\":%d,\"seconds\":%.4f,"
           "\"rps\":%.1f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f,\"median_bytes\":%zu}\n",
           done_count, ok_count, failed, nconn, seconds, done_count / seconds,
           done_count ? lat[done_count / 2] : 0, done_count ? lat[(int)(done_count * 0.99)] : 0,
           done_count ? lat[done_count - 1] : 0, done_count ? sizes[done_count / 2] : 0);
    for (int i = 0; i < nconn; i++) {
        drop_conn(&cs[i]);
        free(cs[i].buf);
    }
    for (int i = 0; i < npaths; i++)
        free(paths[i]);
    free(paths);
    free(cs);
    free(lat);
    free(sizes);
    close(epfd);
    return failed ? 1 : 0;
}
