/*
 * sd_budget.c — one memory budget for every decoder of the process
 * (sd_set_decode_memory_budget). Decoders charge the working memory they
 * are about to allocate — canvases, progressive JPEG coefficients, kept
 * frames — and give it back when freed, so many decodes in flight cannot
 * add up to more than the machine has: the one that does not fit fails at
 * once, before it allocates, and the others go on.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "decode/sd_decoder_int.h"

static int64_t g_limit; /* 0: the default */
static int64_t g_used;
static int64_t g_default;
static int g_default_from_rlimit; /* the default is bounded by ulimit -v / -d */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* The cgroup v2 memory limit of this process, 0 if none is readable. */
static int64_t cgroup_limit(void)
{
    char path[512] = "/sys/fs/cgroup/memory.max", line[400];
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (f) {
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "0::", 3) == 0) {
                line[strcspn(line, "\n")] = '\0';
                snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.max", line + 3);
                break;
            }
        }
        fclose(f);
    }
    long long v = 0;
    f = fopen(path, "re");
    if (f) {
        if (fscanf(f, "%lld", &v) != 1) /* "max" reads as no limit */
            v = 0;
        fclose(f);
    }
    return v > 0 ? v : 0;
}

/* The address space this process may still map under RLIMIT_AS and
 * RLIMIT_DATA (ulimit -v, -d), the smaller; -1 when neither is set. Beyond
 * it an allocation fails, and in Swift a failed allocation is a trap, not an
 * error: so the budget keeps decodes inside it. */
static int64_t rlimit_room(void)
{
    long long vm = 0, data = 0, x;
    long page = sysconf(_SC_PAGESIZE);
    FILE *f = fopen("/proc/self/statm", "re"); /* size resident shared text lib data ... (pages) */
    if (f) {
        if (fscanf(f, "%lld %lld %lld %lld %lld %lld", &vm, &x, &x, &x, &x, &data) != 6)
            vm = data = 0;
        fclose(f);
    }
    int64_t room = -1;
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
        room = SD__MAX((int64_t)r.rlim_cur - (int64_t)vm * page, (int64_t)0);
    if (getrlimit(RLIMIT_DATA, &r) == 0 && r.rlim_cur != RLIM_INFINITY) {
        int64_t d = SD__MAX((int64_t)r.rlim_cur - (int64_t)data * page, (int64_t)0);
        room = room < 0 ? d : SD__MIN(room, d);
    }
    return room;
}

static void init_default(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    int64_t mem = pages > 0 && size > 0 ? (int64_t)pages * size : (int64_t)4 << 30;
    int64_t cg = cgroup_limit();
    if (cg > 0 && cg < mem)
        mem = cg;
    g_default = SD__MAX(mem / 2, (int64_t)SD__BUDGET_MIN);
    /* Under an address-space limit: half of what is left when the first
     * decode starts, the other half for what the caller makes of the
     * bitmaps (a copy, an encoder's buffers) and the codecs' own memory. */
    int64_t room = rlimit_room();
    if (room >= 0 && room / 2 < g_default) {
        g_default = room / 2;
        g_default_from_rlimit = 1;
    }
}

static int64_t limit_now(void)
{
    int64_t l = __atomic_load_n(&g_limit, __ATOMIC_RELAXED);
    if (l > 0)
        return l;
    pthread_once(&g_once, init_default);
    return g_default;
}

int sd__budget_take(int64_t bytes, int64_t *limit, int64_t *used)
{
    int64_t l = limit_now();
    int64_t u = __atomic_load_n(&g_used, __ATOMIC_RELAXED);
    do {
        if (bytes > l - u) {
            *limit = l;
            *used = u;
            return SD_ENOMEM;
        }
    } while (!__atomic_compare_exchange_n(&g_used, &u, u + bytes, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return SD_OK;
}

void sd__budget_give(int64_t bytes)
{
    if (bytes > 0)
        __atomic_fetch_sub(&g_used, bytes, __ATOMIC_RELAXED);
}

int sd__decoder_charge(sd_decoder *d, uint64_t bytes, const char *what)
{
    int64_t want = bytes > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)bytes, limit, used;
    if (sd__budget_take(want, &limit, &used) != SD_OK) {
        if (want > limit && __atomic_load_n(&g_limit, __ATOMIC_RELAXED) == 0 && g_default_from_rlimit) {
            sd__decoder_msg(d, "image too large for the memory limit: %s needs %lld bytes, the decode budget "
                               "is %lld bytes (half of the address space left under ulimit -v/-d)",
                            what, (long long)want, (long long)limit);
            return SD_ENOMEM;
        }
        if (want > limit) {
            sd__decoder_msg(d, "image too large for the memory limit: %s needs %lld bytes, the decode budget "
                               "is %lld bytes (sd_set_decode_memory_budget)",
                            what, (long long)want, (long long)limit);
            return SD_ENOMEM;
        }
        sd__decoder_msg(d, "decode memory budget exhausted: %s needs %lld bytes, %lld of the %lld-byte "
                           "budget are in use by decodes in flight (sd_set_decode_memory_budget)",
                        what, (long long)want, (long long)used, (long long)limit);
        return SD_ENOMEM;
    }
    d->charged += want;
    return SD_OK;
}

void sd__decoder_uncharge_all(sd_decoder *d)
{
    sd__budget_give(d->charged);
    d->charged = 0;
}

int sd_set_decode_memory_budget(int64_t bytes)
{
    SD__RETURN_IF(bytes < 0, SD_EINVAL);
    __atomic_store_n(&g_limit, bytes, __ATOMIC_RELAXED);
    return SD_OK;
}

void sd_decode_memory(int64_t *budget, int64_t *in_use)
{
    if (budget)
        *budget = limit_now();
    if (in_use)
        *in_use = __atomic_load_n(&g_used, __ATOMIC_RELAXED);
}
