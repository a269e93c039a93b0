/* sd_buffer_pool.c — recycled pixel buffers and response bodies.
 *
 * A decoded image lives for a moment (decode, hand over, draw or cache, free)
 * and the next one is usually about as big. glibc serves big blocks with
 * fresh mmaps or trims its heap between them, so each new canvas costs a page
 * fault per 4 KiB — measured at 5-15% of fetch+decode throughput when bitmaps
 * are freed on another thread a little later (the Swift layer). Keeping a few
 * recently freed buffers (bounded in bytes, best fit within 25%) makes the
 * next canvas come back already mapped. Fresco pools bitmaps for the same
 * reason.
 *
 * Canvases bigger than half the limit (a 12 MP photo is 48 MB, over 32 MiB
 * at the default 64 MiB) would never be kept, and a stream of big photos
 * would fault every page of every canvas: 0.95x TurboJPEG at the default
 * settings against 1.0x with every canvas recycled. So the most recent
 * canvas of each size class above half the limit is kept too, in a few
 * slots of its own: classes grow by a quarter from half the limit, a canvas
 * of the class is mapped at the class's top (so any later one of the class
 * fits it; pages past what a decode writes are never touched), and these
 * slots hold at most SD__LARGE_SLOTS blocks and twice the limit in bytes
 * (128 MiB at the default), oldest dropped first. */
#include <malloc.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "common/sd_internal.h"
#include "sdcore/sd_bitmap.h" /* the pool size knob lives with the bitmaps it serves */
#include "sdcore/sd_loop.h"   /* sd_body_free: taken bodies come back here */

#define SD__POOL_SLOTS 16
#define SD__POOL_MIN (64u << 10) /* smaller blocks: malloc's own bins do fine */
/* Canvases this big get their own mapping with transparent huge pages asked
 * for: a 12 MP image then costs a handful of page faults instead of ~12000
 * (what a memory cache full of fresh bitmaps pays for every new one). */
#define SD__HUGE_MIN (4u << 20)
#define SD__HUGE_PAGE (2u << 20)

static void *map_pixels(size_t bytes, size_t *cap)
{
    size_t len = (bytes + SD__HUGE_PAGE - 1) & ~(size_t)(SD__HUGE_PAGE - 1);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, len, MADV_HUGEPAGE); /* advice only: ignored where THP is off */
#endif
    *cap = len;
    sd__alloc_track(1);
    return p;
}

/* Release a block for good (not to the pool). */
static void release(void *p, size_t cap)
{
    if (cap >= SD__HUGE_MIN) {
        munmap(p, cap);
        sd__alloc_track(-1);
    } else
        sd__free(p);
}

#define SD__LARGE_SLOTS 4

typedef struct {
    void *p;
    size_t cap;
    uint64_t age;
} sd__slot;

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
/* slots[0..SD__POOL_SLOTS): the pool within its limit; the last
 * SD__LARGE_SLOTS: a canvas of each size class above half the limit */
static sd__slot slots[SD__POOL_SLOTS + SD__LARGE_SLOTS];
#define SD__ALL_SLOTS (SD__POOL_SLOTS + SD__LARGE_SLOTS)
static size_t pool_bytes, large_bytes, pool_limit = SD_DEFAULT_PIXEL_POOL_BYTES;
static uint64_t pool_clock;

/* A canvas the large slots take: mapped (4 MiB and more), over half the
 * limit and at most twice it. Caller holds pool_mu. */
static int is_large(size_t bytes)
{
    return bytes >= SD__HUGE_MIN && bytes > pool_limit / 2 && bytes <= pool_limit * 2;
}

/* The top of `bytes`'s size class (a quarter more each, from half the
 * limit), never past twice the limit, so the block is still one the large
 * slots take when it is freed. Caller holds pool_mu and checked is_large. */
static size_t class_top(size_t bytes)
{
    size_t top = pool_limit / 2;
    while (top < bytes)
        top += top / 4;
    return SD__MIN(top, pool_limit * 2); /* >= bytes: is_large bounds bytes by it */
}

static void *pool_alloc(size_t bytes, int zeroed, size_t *cap, int heap_only)
{
    *cap = bytes;
    if (sd__alloc_is_custom()) /* every byte through the program's allocator: no pool, no mmap */
        return zeroed ? sd__calloc(1, bytes) : sd__malloc(bytes);
    size_t map = bytes;
    if (bytes >= SD__POOL_MIN) {
        int best = -1;
        pthread_mutex_lock(&pool_mu);
        for (int i = 0; i < SD__ALL_SLOTS; i++) {
            /* a large block is mapped at its class's top, rounded to a huge page */
            size_t slack = bytes / 4 + (i >= SD__POOL_SLOTS ? SD__HUGE_PAGE : 0);
            if (slots[i].p && slots[i].cap >= bytes && slots[i].cap - bytes <= slack &&
                (!heap_only || slots[i].cap < SD__HUGE_MIN) && (best < 0 || slots[i].cap < slots[best].cap))
                best = i;
        }
        void *p = NULL;
        if (best >= 0) {
            p = slots[best].p;
            *cap = slots[best].cap;
            if (best < SD__POOL_SLOTS)
                pool_bytes -= slots[best].cap;
            else
                large_bytes -= slots[best].cap;
            slots[best].p = NULL;
        }
        if (!heap_only && is_large(bytes))
            map = class_top(bytes);
        pthread_mutex_unlock(&pool_mu);
        if (p) {
            if (zeroed)
                memset(p, 0, bytes);
            return p;
        }
    }
    if (bytes >= SD__HUGE_MIN && !heap_only)
        return map_pixels(map, cap); /* fresh anonymous pages are zero */
    /* calloc of a large block maps zero pages: zeroing is free where it matters */
    return zeroed ? sd__calloc(1, bytes) : sd__malloc(bytes);
}

void *sd__pixels_alloc(size_t bytes, int zeroed, size_t *cap)
{
    return pool_alloc(bytes, zeroed, cap, 0);
}

/* Response bodies: recycled like canvases, but always plain heap blocks, since
 * a caller who takes a body frees it with sd_free. */
void *sd__body_alloc(size_t bytes, size_t *cap)
{
    return pool_alloc(bytes, 0, cap, 1);
}

void sd_body_free(void *p, size_t cap)
{
#ifdef __GLIBC__
    /* the caller's word on the size is checked: a block pooled as bigger than
     * it is would be handed to a request it cannot hold */
    if (p != NULL && !sd__alloc_is_custom() && malloc_usable_size(p) < cap)
        cap = malloc_usable_size(p);
#endif
    sd__body_free(p, cap);
}

void sd__body_free(void *p, size_t cap)
{
    if (cap >= SD__HUGE_MIN || sd__alloc_is_custom())
        sd__free(p); /* a big heap block: never pooled (the pool would unmap it) */
    else
        sd__pixels_free(p, cap);
}

/* Keep a large canvas: it replaces a block of its class (within a quarter),
 * else takes a free slot or the oldest one's; then the oldest go while the
 * large slots hold more than twice the limit. Caller holds pool_mu; what is
 * dropped is released by the caller, outside the lock. */
static void keep_large(void *p, size_t cap, void **evict, size_t *evict_cap, int *nevict)
{
    int at = -1;
    for (int i = SD__POOL_SLOTS; i < SD__ALL_SLOTS && at < 0; i++) {
        size_t c = slots[i].cap;
        if (slots[i].p && (c >= cap ? c - cap : cap - c) <= (c < cap ? c : cap) / 4)
            at = i; /* the same class: the newer one stays */
    }
    for (int i = SD__POOL_SLOTS; i < SD__ALL_SLOTS && at < 0; i++)
        if (slots[i].p == NULL)
            at = i;
    if (at < 0) { /* all full: the oldest's */
        at = SD__POOL_SLOTS;
        for (int k = SD__POOL_SLOTS + 1; k < SD__ALL_SLOTS; k++)
            if (slots[k].age < slots[at].age)
                at = k;
    }
    if (slots[at].p) {
        evict_cap[*nevict] = slots[at].cap;
        evict[(*nevict)++] = slots[at].p;
        large_bytes -= slots[at].cap;
    }
    slots[at] = (sd__slot){p, cap, ++pool_clock};
    large_bytes += cap;
    while (large_bytes > pool_limit * 2) {
        int oldest = -1;
        for (int k = SD__POOL_SLOTS; k < SD__ALL_SLOTS; k++)
            if (slots[k].p && k != at && (oldest < 0 || slots[k].age < slots[oldest].age))
                oldest = k;
        if (oldest < 0)
            break; /* only the newcomer, which is_large bounds */
        evict_cap[*nevict] = slots[oldest].cap;
        evict[(*nevict)++] = slots[oldest].p;
        large_bytes -= slots[oldest].cap;
        slots[oldest].p = NULL;
    }
}

void sd__pixels_free(void *p, size_t cap)
{
    if (p == NULL)
        return;
    if (sd__alloc_is_custom()) {
        sd__free(p);
        return;
    }
    void *evict[SD__ALL_SLOTS];
    size_t evict_cap[SD__ALL_SLOTS];
    int nevict = 0;
    pthread_mutex_lock(&pool_mu);
    if (is_large(cap)) {
        keep_large(p, cap, evict, evict_cap, &nevict);
        pthread_mutex_unlock(&pool_mu);
        for (int i = 0; i < nevict; i++)
            release(evict[i], evict_cap[i]);
        return;
    }
    if (cap < SD__POOL_MIN || cap > pool_limit / 2) {
        pthread_mutex_unlock(&pool_mu);
        release(p, cap);
        return;
    }
    /* make room: the oldest go first, until the newcomer fits in bytes and slots */
    for (;;) {
        int oldest = -1, empty = -1;
        for (int i = 0; i < SD__POOL_SLOTS; i++) {
            if (slots[i].p == NULL)
                empty = i;
            else if (oldest < 0 || slots[i].age < slots[oldest].age)
                oldest = i;
        }
        if (empty >= 0 && pool_bytes + cap <= pool_limit) {
            slots[empty].p = p;
            slots[empty].cap = cap;
            slots[empty].age = ++pool_clock;
            pool_bytes += cap;
            break;
        }
        evict_cap[nevict] = slots[oldest].cap;
        evict[nevict++] = slots[oldest].p; /* oldest exists: the pool is not empty here */
        pool_bytes -= slots[oldest].cap;
        slots[oldest].p = NULL;
    }
    pthread_mutex_unlock(&pool_mu);
    for (int i = 0; i < nevict; i++)
        release(evict[i], evict_cap[i]);
}

size_t sd_bitmap_pool_limit(size_t bytes)
{
    void *drop[SD__ALL_SLOTS];
    size_t drop_cap[SD__ALL_SLOTS];
    int n = 0;
    pthread_mutex_lock(&pool_mu);
    size_t old = pool_limit;
    pool_limit = bytes;
    for (int i = 0; i < SD__ALL_SLOTS; i++) {
        int large = i >= SD__POOL_SLOTS;
        if (slots[i].p && (large ? !is_large(slots[i].cap) || large_bytes > pool_limit * 2
                                 : pool_bytes > pool_limit || slots[i].cap > pool_limit / 2)) {
            drop_cap[n] = slots[i].cap;
            drop[n++] = slots[i].p;
            *(large ? &large_bytes : &pool_bytes) -= slots[i].cap;
            slots[i].p = NULL;
        }
    }
    pthread_mutex_unlock(&pool_mu);
    for (int i = 0; i < n; i++)
        release(drop[i], drop_cap[i]);
    return old;
}

size_t sd_bitmap_pool_bytes(void)
{
    pthread_mutex_lock(&pool_mu);
    size_t n = pool_bytes + large_bytes;
    pthread_mutex_unlock(&pool_mu);
    return n;
}

size_t sd_bitmap_pool_trim(void)
{
    void *drop[SD__ALL_SLOTS];
    size_t drop_cap[SD__ALL_SLOTS];
    int n = 0;
    pthread_mutex_lock(&pool_mu);
    size_t bytes = pool_bytes + large_bytes;
    for (int i = 0; i < SD__ALL_SLOTS; i++) {
        if (slots[i].p) {
            drop_cap[n] = slots[i].cap;
            drop[n++] = slots[i].p;
            slots[i].p = NULL;
        }
    }
    pool_bytes = large_bytes = 0;
    pthread_mutex_unlock(&pool_mu);
    for (int i = 0; i < n; i++)
        release(drop[i], drop_cap[i]);
    return bytes;
}

void sd__pool_drain(void) { (void)sd_bitmap_pool_trim(); }
