/* test_resolve.c — SD_ERESOLVE for a name that cannot be resolved.
 *
 * Run by ctest inside `unshare -rn` (a user + network namespace with no
 * interfaces up), so the resolver fails on the spot and no query ever leaves
 * the machine. Outside such a namespace it refuses to run: we never send DNS
 * traffic to whatever resolver the host is configured with. */
#include <pthread.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include "sd_test.h"

/* True when no network is reachable: a UDP "connect" to a public address fails. */
static int isolated(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        return 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(53), .sin_addr.s_addr = htonl(0x01010101)};
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    close(fd);
    return rc != 0;
}

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, status;
    char message[256];
} waiter;

static void on_complete(sd_transfer_id id, sd_result *r, void *user)
{
    (void)id;
    waiter *w = user;
    pthread_mutex_lock(&w->mu);
    w->status = sd_result_status(r);
    snprintf(w->message, sizeof w->message, "%s", sd_result_message(r));
    w->done = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    sd_result_free(r);
}

static int test_unresolvable_host(void)
{
    sd_loop *l;
    ASSERT_OK(sd_loop_new(&l));
    ASSERT_OK(sd_loop_start(l));
    sd_request *req;
    ASSERT_OK(sd_request_new("http://sdcore-resolve-test.invalid/a.jpg", &req)); /* patience: a bound of its own below */
    ASSERT_OK(sd_request_set(req, SD_REQ_TIMEOUT_MS, 600000)); /* the resolver fails at once; this only ends a broken run */
    waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, ""};
    sd_transfer_events ev = SD_TRANSFER_EVENTS_INIT;
    ev.complete = on_complete;
    ASSERT_OK(sd_loop_submit(l, req, &ev, &w, NULL));
    sd_request_free(req);
    pthread_mutex_lock(&w.mu);
    while (!w.done)
        pthread_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);
    sd_loop_free(l);
    ASSERT_EQ(w.status, SD_ERESOLVE);
    ASSERT(strstr(w.message, "resolve") != NULL || strstr(w.message, "host") != NULL);
    return 0;
}

int main(int argc, char **argv)
{
    if (!isolated()) {
        fprintf(stderr, "refusing to run: the network is reachable (run inside `unshare -rn`)\n");
        printf("0 passed, 1 failed\n");
        return 1;
    }
    static const sd_test_case tests[] = {
        {"unresolvable_host", test_unresolvable_host},
        {NULL, NULL},
    };
    return sd_test_run(tests, argc, argv);
}
