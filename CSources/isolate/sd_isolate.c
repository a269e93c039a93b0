/*
 * sd_isolate.c — the pool of decoder workers (sd_isolate.h): starts them
 * (posix_spawn, the socket on descriptor 3, an empty environment but for
 * malloc's arena cap), hands each decode to a free one, watches its CPU
 * and wall time from outside (SIGKILL past either), and maps the sealed
 * memfd it answers with as the caller's bitmap. A worker that dies is
 * reaped, its death told as the decode's error, and started anew next time.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "isolate/sd_isolate_int.h"
#include "bitmap/sd_bitmap_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct sd__worker {
    pid_t pid; /* 0: not running */
    int fd;
    int busy;
} sd__worker;

struct sd_isolate_pool {
    char *path;
    sd_isolate_limits limits;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int count;
    sd__worker *w;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sd_isolate_pool_new(const char *path, int workers, const sd_isolate_limits *limits, sd_isolate_pool **out)
{
    SD__RETURN_IF(out == NULL, SD_EINVAL);
    *out = NULL;
    SD__RETURN_IF(path == NULL || access(path, X_OK) != 0 || workers < 0 || workers > 256, SD_EINVAL);
    sd_isolate_pool *p = sd__calloc(1, sizeof *p);
    SD__RETURN_IF(p == NULL, SD_ENOMEM);
    p->count = workers ? workers : sd__cpu_count();
    p->path = sd__strdup(path);
    p->w = sd__calloc((size_t)p->count, sizeof *p->w);
    if (p->path == NULL || p->w == NULL) {
        sd__free(p->path);
        sd__free(p->w);
        sd__free(p);
        return SD_ENOMEM;
    }
    p->limits = (sd_isolate_limits){2000, 10000, (int64_t)2 << 30};
    if (limits != NULL) {
        if (limits->cpu_ms > 0)
            p->limits.cpu_ms = limits->cpu_ms;
        if (limits->wall_ms > 0)
            p->limits.wall_ms = limits->wall_ms;
        if (limits->memory_bytes > 0)
            p->limits.memory_bytes = limits->memory_bytes;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    *out = p;
    return SD_OK;
}

/* End a worker (killed, reaped); returns how it ended, for the message. */
static int end_worker(sd__worker *w, int kill_it)
{
    int status = 0;
    if (w->fd >= 0)
        close(w->fd);
    if (w->pid > 0) {
        if (kill_it)
            kill(w->pid, SIGKILL);
        while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    w->pid = 0;
    w->fd = -1;
    return status;
}

void sd_isolate_pool_free(sd_isolate_pool *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        int busy = 0;
        for (int i = 0; i < p->count; i++)
            busy |= p->w[i].busy;
        if (!busy)
            break;
        pthread_cond_wait(&p->cv, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->count; i++)
        if (p->w[i].pid > 0)
            end_worker(&p->w[i], 1);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    sd__free(p->w);
    sd__free(p->path);
    sd__free(p);
}

int sd_isolate_pool_pids(sd_isolate_pool *p, int *pids, int max)
{
    if (p == NULL || pids == NULL)
        return 0;
    int n = 0;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->count && n < max; i++)
        if (p->w[i].pid > 0)
            pids[n++] = p->w[i].pid;
    pthread_mutex_unlock(&p->mu);
    return n;
}

static int spawn(sd_isolate_pool *p, sd__worker *w)
{
    int sv[2];
    SD__RETURN_IF(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0, SD_EIO);
    char memory[32];
    snprintf(memory, sizeof memory, "%lld", (long long)p->limits.memory_bytes);
    char *argv[] = {p->path, (char *)SD__ISO_ARG, memory, NULL};
    char *envp[] = {(char *)"MALLOC_ARENA_MAX=2", NULL}; /* arenas reserve address space */
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_adddup2(&fa, sv[1], SD__ISO_FD);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0); /* libjxl and others print */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    /* nothing else of ours: a listening socket held open by a worker would
     * keep accepting connections after the server closed it */
    posix_spawn_file_actions_addclosefrom_np(&fa, SD__ISO_FD + 1);
#endif
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int rc = posix_spawn(&pid, p->path, &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(sv[1]);
    if (rc != 0) {
        close(sv[0]);
        return SD_EIO;
    }
    w->pid = pid;
    w->fd = sv[0];
    return SD_OK;
}

/* CPU time of process `pid` so far, ms (-1: unknown). */
static int64_t cpu_ms(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *s = strrchr(buf, ')'); /* the name may hold spaces */
    unsigned long long ut = 0, st = 0;
    if (s == NULL || sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    long tick = sysconf(_SC_CLK_TCK);
    return tick > 0 ? (int64_t)((ut + st) * 1000ULL / (unsigned long long)tick) : -1;
}

static void say(char *message, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *message, size_t size, const char *fmt, ...)
{
    if (message == NULL || size == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, size, fmt, ap);
    va_end(ap);
}

/* The worker died: reap it and say how. */
static int died(sd__worker *w, char *message, size_t size)
{
    int st = end_worker(w, 1);
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS)
        say(message, size, "the decoder's sandbox stopped it: a forbidden system call (the worker was killed)");
    else if (WIFSIGNALED(st))
        say(message, size, "the decoder's worker was killed by signal %d (its memory limit, a crash or a kill)",
            WTERMSIG(st));
    else
        say(message, size, "the decoder's worker exited with status %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return SD_ELIMIT;
}

/* Send all of `p`, within the deadline. */
static int send_all(sd__worker *w, const void *data, size_t n, int64_t deadline)
{
    const uint8_t *b = data;
    while (n > 0) {
        struct pollfd pf = {w->fd, POLLOUT, 0};
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return SD_ETIMEDOUT;
        int r = poll(&pf, 1, (int)SD__MIN(left, 1000));
        if (r < 0 && errno != EINTR)
            return SD_EIO;
        if (r <= 0)
            continue;
        ssize_t s = send(w->fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (s < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (s <= 0)
            return SD_ECANCELLED;
        b += s;
        n -= (size_t)s;
    }
    return SD_OK;
}

/* The reply and its descriptor, watching the worker's CPU and wall time. */
static int receive(sd_isolate_pool *p, sd__worker *w, int64_t deadline, int64_t cpu0, const int *cancel,
                   sd__iso_reply *r, int *fd, char *message, size_t size)
{
    *fd = -1;
    for (;;) {
        struct pollfd pf = {w->fd, POLLIN, 0};
        int rc = poll(&pf, 1, 50);
        if (rc < 0 && errno != EINTR)
            return SD_EIO;
        if (rc > 0)
            break;
        if (cancel != NULL && sd_isolate_cancel_get(cancel)) {
            end_worker(w, 1);
            say(message, size, "the decode was cancelled by its caller (its worker was killed)");
            return SD_ECANCELLED;
        }
        int64_t cpu = cpu_ms(w->pid);
        if (cpu0 >= 0 && cpu >= 0 && cpu - cpu0 > p->limits.cpu_ms) {
            end_worker(w, 1);
            say(message, size, "the decode used more than %lld ms of CPU (its worker was killed)",
                (long long)p->limits.cpu_ms);
            return SD_ELIMIT;
        }
        if (now_ms() > deadline) {
            end_worker(w, 1);
            say(message, size, "the decode took more than %lld ms (its worker was killed)",
                (long long)p->limits.wall_ms);
            return SD_ELIMIT;
        }
    }
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } c;
    struct iovec iov = {r, sizeof *r};
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = c.buf;
    m.msg_controllen = sizeof c.buf;
    ssize_t n;
    do
        n = recvmsg(w->fd, &m, MSG_WAITALL | MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h != NULL; h = CMSG_NXTHDR(&m, h))
        if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS && h->cmsg_len == CMSG_LEN(sizeof(int)))
            memcpy(fd, CMSG_DATA(h), sizeof *fd);
    if (n != (ssize_t)sizeof *r || r->magic != SD__ISO_MAGIC) {
        if (*fd >= 0)
            close(*fd);
        *fd = -1;
        return died(w, message, size);
    }
    return SD_OK;
}

static void unmap(uint8_t *pixels, size_t bytes)
{
    munmap(pixels, bytes);
}

/* The worker's memfd as a bitmap: sealed against shrinking and writing
 * (else the worker could pull the pages from under us), large enough. */
static int map_bitmap(const sd__iso_reply *r, int fd, sd_bitmap **out)
{
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS);
    uint64_t need = (uint64_t)r->stride * r->height;
    if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_WRITE)) != (F_SEAL_SHRINK | F_SEAL_WRITE) ||
        fstat(fd, &st) != 0 || r->width == 0 || r->height == 0 || r->stride < (uint64_t)r->width * 4 ||
        need > (uint64_t)st.st_size || need > ((uint64_t)SIZE_MAX >> 1))
        return SD_ECORRUPT;
    void *px = mmap(NULL, (size_t)need, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    SD__RETURN_IF(px == MAP_FAILED, SD_ENOMEM);
    int rc = sd__bitmap_wrap(r->width, r->height, (size_t)r->stride, px, (size_t)need, unmap, out);
    if (rc != SD_OK)
        munmap(px, (size_t)need);
    return rc;
}

static sd__worker *acquire(sd_isolate_pool *p)
{
    pthread_mutex_lock(&p->mu);
    sd__worker *w = NULL;
    while (w == NULL) {
        for (int i = 0; i < p->count && w == NULL; i++) /* a running one first */
            if (!p->w[i].busy && p->w[i].pid > 0)
                w = &p->w[i];
        for (int i = 0; i < p->count && w == NULL; i++)
            if (!p->w[i].busy)
                w = &p->w[i];
        if (w == NULL)
            pthread_cond_wait(&p->cv, &p->mu);
    }
    w->busy = 1;
    pthread_mutex_unlock(&p->mu);
    return w;
}

static void release(sd_isolate_pool *p, sd__worker *w)
{
    pthread_mutex_lock(&p->mu);
    w->busy = 0;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static int run(sd_isolate_pool *p, const sd__iso_request *q, const void *data, const int *cancel, sd_bitmap **out,
               sd_isolate_info *info, char *message, size_t size)
{
    sd__worker *w = acquire(p);
    int rc = SD_OK, fd = -1;
    if (w->pid == 0) {
        w->fd = -1;
        rc = spawn(p, w);
        if (rc != SD_OK)
            say(message, size, "could not start a decoder worker (%s)", p->path);
    }
    int64_t deadline = now_ms() + p->limits.wall_ms, cpu0 = rc == SD_OK ? cpu_ms(w->pid) : -1;
    if (rc == SD_OK)
        rc = send_all(w, q, sizeof *q, deadline);
    if (rc == SD_OK && q->length > 0)
        rc = send_all(w, data, (size_t)q->length, deadline);
    if (rc == SD_ECANCELLED)
        rc = died(w, message, size);
    else if (rc == SD_ETIMEDOUT) {
        end_worker(w, 1);
        say(message, size, "the decode took more than %lld ms (its worker was killed)", (long long)p->limits.wall_ms);
        rc = SD_ELIMIT;
    }
    sd__iso_reply r;
    memset(&r, 0, sizeof r);
    if (rc == SD_OK)
        rc = receive(p, w, deadline, cpu0, cancel, &r, &fd, message, size);
    if (rc == SD_OK) {
        if (info != NULL)
            *info = r.info;
        rc = r.status;
        if (rc < 0)
            say(message, size, "%s", r.message);
        else if (out != NULL && fd >= 0)
            rc = map_bitmap(&r, fd, out);
        else if (out != NULL) {
            rc = SD_EBADSTATE;
            say(message, size, "%s", r.message[0] ? r.message : "the worker answered without pixels");
        }
        if (rc == SD_ECORRUPT && r.status == SD_OK) {
            end_worker(w, 1); /* it broke the protocol: never trusted again */
            say(message, size, "the decoder's worker answered with a bitmap it could still change");
        }
    }
    if (fd >= 0)
        close(fd);
    release(p, w);
    return rc;
}

int sd_isolate_decode(sd_isolate_pool *p, const void *data, size_t length, const int *keys, const int64_t *values,
                      int count, const sd_render *render, const int *cancel, sd_bitmap **out, sd_isolate_info *info,
                      char *message, size_t size)
{
    SD__RETURN_IF(out == NULL, SD_EINVAL);
    *out = NULL;
    say(message, size, "%s", "");
    SD__RETURN_IF(p == NULL || (data == NULL && length > 0) || count < 0 || count > SD__ISO_PARAMS ||
                      (count > 0 && (keys == NULL || values == NULL)),
                  SD_EINVAL);
    sd__iso_request q;
    memset(&q, 0, sizeof q);
    q.magic = SD__ISO_MAGIC;
    q.version = SD__ISO_VERSION;
    q.command = SD__ISO_DECODE;
    q.length = length;
    q.count = count;
    for (int i = 0; i < count; i++) {
        q.keys[i] = keys[i];
        q.values[i] = values[i];
    }
    if (render != NULL) {
        q.has_render = 1;
        q.render = *render;
    }
    return run(p, &q, data, cancel, out, info, message, size);
}

int sd__isolate_probe(sd_isolate_pool *p, int what, sd_bitmap **out, char *message, size_t size)
{
    SD__RETURN_IF(p == NULL, SD_EINVAL);
    sd__iso_request q;
    memset(&q, 0, sizeof q);
    q.magic = SD__ISO_MAGIC;
    q.version = SD__ISO_VERSION;
    q.command = SD__ISO_PROBE;
    q.probe = (uint32_t)what;
    return run(p, &q, NULL, NULL, out, NULL, message, size);
}
