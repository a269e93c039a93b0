/*
 * sd_test.h — a tiny libuv-style test harness: ASSERT_* macros, a test list,
 * and a closing "N passed, N failed" line (read by CI).
 */
#ifndef SD_TEST_H
#define SD_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sdcore.h>

typedef struct {
    const char *name;
    int (*fn)(void);
} sd_test_case;


#define SD_TEST_FAIL_(fmt, ...)                                                   \
    do {                                                                          \
        fprintf(stderr, "  %s:%d: " fmt "\n", __FILE__, __LINE__, __VA_ARGS__);   \
        return 1;                                                                 \
    } while (0)

#define ASSERT(c) do { if (!(c)) SD_TEST_FAIL_("assertion failed: %s", #c); } while (0)
#define ASSERT_EQ(a, b)                                                           \
    do {                                                                          \
        long long a_ = (long long)(a), b_ = (long long)(b);                       \
        if (a_ != b_) SD_TEST_FAIL_("%s == %s: %lld != %lld", #a, #b, a_, b_);    \
    } while (0)
#define ASSERT_OK(e)                                                              \
    do {                                                                          \
        int rc_ = (e);                                                            \
        if (rc_ != SD_OK) SD_TEST_FAIL_("%s: %d (%s)", #e, rc_, sd_strerror(rc_)); \
    } while (0)
#define ASSERT_NOT_NULL(p) ASSERT((p) != NULL)

/* Run the list; `filter` (argv[1]) selects tests by substring. */
static inline int sd_test_run(const sd_test_case *tests, int argc, char **argv)
{
    int passed = 0, failed = 0, skipped = 0;
    for (const sd_test_case *t = tests; t->name != NULL; t++) {
        if (argc > 1 && strstr(t->name, argv[1]) == NULL)
            continue;
        int rc = t->fn();
        if (rc == 0) {
            passed++;
            printf("ok     %s\n", t->name);
        } else if (rc == 77) {
            skipped++;
            printf("skip   %s\n", t->name);
        } else {
            failed++;
            printf("FAILED %s\n", t->name);
        }
        fflush(stdout);
    }
    /* Every block libsdcore made came back (sd_set_allocator refuses while
     * one is held): a leak check in every build, and proof the tests free
     * what the library gives them with sd_free, never free(). Loops freed
     * from their own callbacks end on their own threads, so wait a moment. */
    if (failed == 0 && passed > 0) {
        int rc, waited = 0;
        while ((rc = sd_set_allocator(NULL)) == SD_EBADSTATE && waited++ < 500)
            usleep(10000);
        if (rc != SD_OK) {
            failed++;
            printf("FAILED blocks_returned (libsdcore still holds blocks after the last test)\n");
        }
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}

#endif
