/*
 * sd_worker.c — a decoder worker (sd_isolate.h): started by a pool with its
 * socket on descriptor 3, it loads every codec library it may need, warms
 * the ones that read files lazily, then closes the doors — RLIMIT_AS, no
 * new privileges, a seccomp-bpf filter that kills the process on any
 * system call outside a short list (no open, no socket, no exec) — and
 * serves one decode at a time until the socket closes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "isolate/sd_isolate_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define SD__AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SD__AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef SD__AUDIT_ARCH
/* The filter, built at run time (a list of whichever calls this
 * architecture has). Allowed: I/O on descriptors already open, memory,
 * threads (clone with CLONE_THREAD only; clone3, whose flags a filter
 * cannot read, answers ENOSYS and the C library falls back to clone),
 * clocks, signals to itself, memfd for the answer, exit. Everything else
 * kills the process (SIGSYS): the pool reports it. */
typedef struct {
    struct sock_filter f[160];
    unsigned n;
} sd__bpf;

static void op(sd__bpf *b, uint16_t code, uint32_t k, uint8_t jt, uint8_t jf)
{
    if (b->n < sizeof b->f / sizeof b->f[0])
        b->f[b->n++] = (struct sock_filter){code, jt, jf, k};
}

static void allow(sd__bpf *b, long nr)
{
    op(b, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 1);
    op(b, BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
}

static const long allowed[] = {
    SYS_read, SYS_write, SYS_readv, SYS_writev, SYS_pread64, SYS_close, SYS_fstat, SYS_lseek, SYS_mmap,
    SYS_munmap, SYS_mremap, SYS_mprotect, SYS_brk, SYS_madvise, SYS_futex, SYS_clock_gettime,
    SYS_clock_getres, SYS_clock_nanosleep, SYS_nanosleep, SYS_gettimeofday, SYS_getrandom, SYS_gettid,
    SYS_getpid, SYS_rt_sigprocmask, SYS_rt_sigaction, SYS_rt_sigreturn, SYS_sigaltstack, SYS_sched_yield,
    SYS_sched_getaffinity, SYS_set_robust_list, SYS_set_tid_address, SYS_exit, SYS_exit_group,
    SYS_memfd_create, SYS_ftruncate, SYS_fcntl, SYS_recvmsg, SYS_sendmsg, SYS_recvfrom, SYS_sendto,
    SYS_prctl, SYS_getrusage, SYS_restart_syscall, SYS_ppoll, SYS_eventfd2, SYS_newfstatat,
    SYS_faccessat, SYS_getdents64, /* fontconfig looks before it reads (Landlock decides what it may) */
#ifdef SYS_access
    SYS_access,
#endif
#ifdef SYS_faccessat2
    SYS_faccessat2,
#endif
#ifdef SYS_rseq
    SYS_rseq,
#endif
#ifdef SYS_statx
    SYS_statx,
#endif
#ifdef SYS_poll
    SYS_poll,
#endif
#ifdef SYS_membarrier
    SYS_membarrier,
#endif
#ifdef SYS_futex_waitv
    SYS_futex_waitv,
#endif
};

/* What may be opened, read-only: the fonts an SVG's text needs (its
 * renderer opens font files as it draws) and fontconfig's configuration
 * and cache; nothing else, and nothing written (Landlock, where the kernel
 * has it). Returns 0 when the rules hold. */
static int landlock(void)
{
#ifdef SYS_landlock_create_ruleset
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (abi < 1)
        return -1;
    struct landlock_ruleset_attr attr = {0};
    attr.handled_access_fs = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                             LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |
                             LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
                             LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                             LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
                             LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
#ifdef LANDLOCK_ACCESS_FS_REFER
    if (abi >= 2)
        attr.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
#endif
#ifdef LANDLOCK_ACCESS_FS_TRUNCATE
    if (abi >= 3)
        attr.handled_access_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
#endif
    int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
    if (rs < 0)
        return -1;
    static const char *const readable[] = {"/usr/share/fonts", "/usr/local/share/fonts", "/etc/fonts",
                                           "/var/cache/fontconfig", "/usr/share/fontconfig"};
    for (size_t i = 0; i < sizeof readable / sizeof readable[0]; i++) {
        int dir = open(readable[i], O_PATH | O_CLOEXEC);
        if (dir < 0)
            continue;
        struct landlock_path_beneath_attr pb = {LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR, dir};
        (void)syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
        close(dir);
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(SYS_landlock_restrict_self, rs, 0) != 0) {
        close(rs);
        return -1;
    }
    close(rs);
    return 0;
#else
    return -1;
#endif
}

/* open/openat: read-only, when Landlock holds what may be read (flags are
 * argument `flags_arg`); otherwise, or to write, the process is killed. */
static void open_rule(sd__bpf *b, long nr, int flags_arg, int readable)
{
    const uint32_t kill = SECCOMP_RET_KILL_PROCESS;
    op(b, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, readable ? 4 : 1);
    if (!readable) {
        op(b, BPF_RET | BPF_K, kill, 0, 0);
        return;
    }
    op(b, BPF_LD | BPF_W | BPF_ABS, (uint32_t)offsetof(struct seccomp_data, args[flags_arg]), 0, 0);
    op(b, BPF_JMP | BPF_JSET | BPF_K, O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND | O_TMPFILE, 1, 0);
    op(b, BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
    op(b, BPF_RET | BPF_K, kill, 0, 0);
}

static int sandbox(void)
{
    int readable = landlock() == 0;
    sd__bpf b = {.n = 0};
    const uint32_t kill = SECCOMP_RET_KILL_PROCESS;
    op(&b, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch), 0, 0);
    op(&b, BPF_JMP | BPF_JEQ | BPF_K, SD__AUDIT_ARCH, 1, 0);
    op(&b, BPF_RET | BPF_K, kill, 0, 0);
    op(&b, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr), 0, 0);
#ifdef __x86_64__
    op(&b, BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1); /* the x32 ABI: not ours */
    op(&b, BPF_RET | BPF_K, kill, 0, 0);
#endif
#ifdef SYS_clone3
    op(&b, BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1);
    op(&b, BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA), 0, 0);
#endif
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        allow(&b, allowed[i]);
    open_rule(&b, SYS_openat, 2, readable);
#ifdef SYS_open
    op(&b, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr), 0, 0);
    open_rule(&b, SYS_open, 1, readable);
#endif
    op(&b, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr), 0, 0);
    /* clone: a thread of this process only (flags are the first argument) */
    op(&b, BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4);
    op(&b, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]), 0, 0);
    op(&b, BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1);
    op(&b, BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
    op(&b, BPF_RET | BPF_K, kill, 0, 0);
    /* tgkill: to itself only (abort, a thread's signal) */
    op(&b, BPF_JMP | BPF_JEQ | BPF_K, SYS_tgkill, 0, 4);
    op(&b, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]), 0, 0);
    op(&b, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)getpid(), 0, 1);
    op(&b, BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
    op(&b, BPF_RET | BPF_K, kill, 0, 0);
    op(&b, BPF_RET | BPF_K, kill, 0, 0);
    if (b.n >= sizeof b.f / sizeof b.f[0])
        return -1;
    struct sock_fprog prog = {(unsigned short)b.n, b.f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}
#else
static int sandbox(void)
{
    return -1; /* no filter for this architecture: refuse to run unconfined */
}
#endif

static int read_all(int fd, void *p, size_t n)
{
    uint8_t *b = p;
    while (n > 0) {
        ssize_t r = read(fd, b, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

/* The reply, with `fd` (>= 0) passed along. */
static int reply(const sd__iso_reply *r, int fd)
{
    struct iovec iov = {(void *)r, sizeof *r};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } c;
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    if (fd >= 0) {
        memset(&c, 0, sizeof c);
        m.msg_control = c.buf;
        m.msg_controllen = sizeof c.buf;
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(h), &fd, sizeof fd);
    }
    ssize_t w;
    do
        w = sendmsg(SD__ISO_FD, &m, MSG_NOSIGNAL);
    while (w < 0 && errno == EINTR);
    return w == (ssize_t)sizeof *r ? 0 : -1;
}

/* The bitmap in a sealed memfd: no one writes, shrinks or grows it after. */
static int to_memfd(const sd_bitmap *b)
{
    size_t stride = sd_bitmap_stride(b), size = stride * sd_bitmap_height(b);
    int fd = (int)syscall(SYS_memfd_create, "sdcore-bitmap", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -1;
    void *p = MAP_FAILED;
    if (ftruncate(fd, (off_t)size) == 0)
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        close(fd);
        return -1;
    }
    memcpy(p, sd_bitmap_pixels(b), size);
    munmap(p, size);
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void decode(const sd__iso_request *q, const uint8_t *data)
{
    sd__iso_reply r;
    memset(&r, 0, sizeof r);
    r.magic = SD__ISO_MAGIC;
    sd_decoder *d = NULL;
    sd_bitmap *b = NULL;
    int rc = sd_decoder_new(&d);
    for (int i = 0; rc == SD_OK && i < q->count && i < SD__ISO_PARAMS; i++)
        rc = sd_decoder_set(d, (sd_decoder_param)q->keys[i], q->values[i]);
    if (rc == SD_OK && q->has_render)
        rc = sd_decoder_set_render(d, &q->render);
    if (rc == SD_OK)
        rc = sd_decoder_decode(d, data, (size_t)q->length, &b);
    if (d != NULL) {
        static const sd_decoder_param facts[] = {SD_DEC_INFO_FORMAT, SD_DEC_INFO_WIDTH, SD_DEC_INFO_HEIGHT,
                                                 SD_DEC_INFO_ORIENTATION, SD_DEC_INFO_COMPLETE,
                                                 SD_DEC_INFO_WARNINGS, SD_DEC_INFO_ANIMATED,
                                                 SD_DEC_INFO_FRAME_COUNT, SD_DEC_INFO_COLOR_SPACE};
        int64_t *out[] = {&r.info.format, &r.info.source_width, &r.info.source_height, &r.info.orientation,
                          &r.info.complete, &r.info.warnings, &r.info.animated, &r.info.frame_count,
                          &r.info.color_space};
        for (size_t i = 0; i < sizeof facts / sizeof facts[0]; i++)
            sd_decoder_get(d, facts[i], out[i]);
        if (rc < 0)
            snprintf(r.message, sizeof r.message, "%s", sd_decoder_message(d));
    }
    int fd = -1;
    if (rc == SD_OK) {
        fd = to_memfd(b);
        if (fd < 0) {
            rc = SD_ENOMEM;
            snprintf(r.message, sizeof r.message, "the worker could not hand over %ux%u pixels", sd_bitmap_width(b),
                     sd_bitmap_height(b));
        } else {
            r.width = sd_bitmap_width(b);
            r.height = sd_bitmap_height(b);
            r.stride = sd_bitmap_stride(b);
        }
    }
    r.status = rc;
    sd_bitmap_free(b);
    sd_decoder_free(d);
    if (reply(&r, fd) != 0)
        _exit(0); /* the pool went away */
    if (fd >= 0)
        close(fd);
}

static void probe(int what)
{
    long got = 0;
    switch (what) {
    case SD__PROBE_OPEN: got = syscall(SYS_openat, AT_FDCWD, "/etc/hostname", O_RDONLY); break;
    case SD__PROBE_OPEN_WRITE: got = syscall(SYS_openat, AT_FDCWD, "/tmp/sdcore-worker-probe", O_WRONLY | O_CREAT, 0600); break;
    case SD__PROBE_SOCKET: (void)syscall(SYS_socket, AF_INET, SOCK_STREAM, 0); break;
    case SD__PROBE_EXEC: {
        char *argv[] = {(char *)"/bin/true", NULL};
        (void)syscall(SYS_execve, "/bin/true", argv, NULL);
        break;
    }
    case SD__PROBE_SPIN:
        for (volatile uint64_t i = 0;; i++) {
        }
    case SD__PROBE_UNSEALED: { /* a bitmap the worker could still shrink under the pool */
        sd__iso_reply r;
        memset(&r, 0, sizeof r);
        r.magic = SD__ISO_MAGIC;
        r.width = r.height = 4;
        r.stride = 16;
        int fd = (int)syscall(SYS_memfd_create, "sdcore-probe", MFD_CLOEXEC);
        if (fd >= 0 && ftruncate(fd, 64) == 0)
            reply(&r, fd);
        if (fd >= 0)
            close(fd);
        return;
    }
    default: break;
    }
    /* still here: the sandbox let it through */
    sd__iso_reply r;
    memset(&r, 0, sizeof r);
    r.magic = SD__ISO_MAGIC;
    r.status = SD_OK;
    r.status = got < 0 ? SD_EIO : SD_OK;
    snprintf(r.message, sizeof r.message, "probe %d: %s", what, got < 0 ? strerror(errno) : "it was allowed");
    reply(&r, -1);
}

/* Load and warm what reads files on first use, while files can be read:
 * the lazily loaded codec libraries (a first decode loads each), and the
 * SVG renderer's fonts (a text in the default face). */
static void warm(void)
{
    /* the generic families, upright, bold and italic: their faces open now */
    static const char svg[] =
        "<svg xmlns='http://www.w3.org/2000/svg' width='64' height='64' font-size='9'>"
        "<text y='9'>a</text><text y='18' font-family='sans-serif'>a<tspan font-weight='bold'>b</tspan>"
        "<tspan font-style='italic'>c</tspan></text><text y='27' font-family='serif'>a<tspan font-weight='bold'>b"
        "</tspan><tspan font-style='italic'>c</tspan></text><text y='36' font-family='monospace'>a<tspan "
        "font-weight='bold'>b</tspan><tspan font-style='italic'>c</tspan></text></svg>";
    static const uint8_t jxl[] = {0xff, 0x0a, 0xfa, 0x1f, 0x42, 0x08, 0x00, 0x00};
    static const uint8_t heic[] = {0, 0, 0, 24, 'f', 't', 'y', 'p', 'h', 'e', 'i', 'c', 0, 0, 0, 0,
                                   'm', 'i', 'f', '1', 'h', 'e', 'i', 'c'};
    const struct {
        const void *p;
        size_t n;
    } seeds[] = {{svg, sizeof svg - 1}, {jxl, sizeof jxl}, {heic, sizeof heic}};
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        sd_bitmap *b = NULL;
        (void)sd_decode(seeds[i].p, seeds[i].n, &b);
        sd_bitmap_free(b);
    }
}

/* The pool's end of the socket hung up (the pool freed, or its process
 * killed): end this worker at once, even mid-decode — an orphan would go
 * on spending its budget on a result nobody reads. */
static void *watchdog(void *arg)
{
    (void)arg;
    for (;;) {
        struct pollfd pf = {SD__ISO_FD, POLLRDHUP, 0};
        if (poll(&pf, 1, -1) > 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR)))
            _exit(0);
    }
    return NULL;
}

int sd_worker_main(int argc, char **argv)
{
    if (argc < 2 || argv == NULL || argv[1] == NULL || strcmp(argv[1], SD__ISO_ARG) != 0)
        return 0;
    struct stat st;
    if (fstat(SD__ISO_FD, &st) != 0 || !S_ISSOCK(st.st_mode))
        _exit(64); /* not started by a pool */
    /* only the socket and the standard descriptors (a pool closes the rest;
     * a program that starts workers another way may not) */
#ifdef SYS_close_range
    (void)syscall(SYS_close_range, SD__ISO_FD + 1, ~0U, 0);
#endif
    signal(SIGPIPE, SIG_IGN);
    pthread_t dog;
    if (pthread_create(&dog, NULL, watchdog, NULL) != 0)
        _exit(70);
    pthread_detach(dog);
    if (chdir("/") != 0)
        _exit(65);
    warm();
    long long memory = argc > 2 ? atoll(argv[2]) : 0;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    memory = 0; /* the sanitizers reserve terabytes of address space: no RLIMIT_AS under them */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    memory = 0;
#endif
#endif
    if (memory > 0) {
        struct rlimit rl = {(rlim_t)memory, (rlim_t)memory};
        if (setrlimit(RLIMIT_AS, &rl) != 0)
            _exit(66);
    }
    struct rlimit core = {0, 0}; /* a crash leaves no image of what it decoded */
    setrlimit(RLIMIT_CORE, &core);
    if (sandbox() != 0)
        _exit(67); /* never decode unconfined */
    for (;;) {
        sd__iso_request q;
        if (read_all(SD__ISO_FD, &q, sizeof q) != 0)
            _exit(0);
        if (q.magic != SD__ISO_MAGIC || q.version != SD__ISO_VERSION || q.length > ((uint64_t)1 << 40))
            _exit(68);
        if (q.command == SD__ISO_PROBE) {
            probe((int)q.probe);
            continue;
        }
        uint8_t *data = malloc(q.length ? (size_t)q.length : 1);
        if (data == NULL || read_all(SD__ISO_FD, data, (size_t)q.length) != 0)
            _exit(data == NULL ? 69 : 0);
        decode(&q, data);
        free(data);
    }
}
