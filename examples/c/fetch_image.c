/* fetch_image URL — fetch and decode one image with the transfer loop.
 * Prints WIDTHxHEIGHT (a thumbnail of at most 512 px), or the error. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <sdcore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

static atomic_int done, failed;

static void on_complete(sd_transfer_id id, sd_result *r, void *user) /* on the loop thread */
{
    (void)id;
    (void)user;
    sd_bitmap *bmp = sd_result_take_bitmap(r); /* NULL on failure */
    if (bmp)
        printf("%ux%u\n", sd_bitmap_width(bmp), sd_bitmap_height(bmp));
    else
        fprintf(stderr, "%s: %s\n", sd_strerror(sd_result_status(r)), sd_result_message(r)), failed = 1;
    sd_bitmap_free(bmp);
    sd_result_free(r);
    done = 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fetch_image URL\n");
        return 2;
    }
    sd_loop *loop;
    sd_request *req;
    if (sd_loop_new(&loop) != SD_OK || sd_loop_use_decoder(loop, 0) != SD_OK || sd_loop_start(loop) != SD_OK
        || sd_request_new(argv[1], &req) != SD_OK)
        return 1;
    sd_request_set_decoder_param(req, SD_DEC_MAX_PIXEL_SIZE, 512); /* thumbnail, aspect kept */
    sd_transfer_events ev = SD_TRANSFER_EVENTS_INIT;
    ev.complete = on_complete;
    int rc = sd_loop_submit(loop, req, &ev, NULL, NULL); /* a refused submit calls nothing */
    sd_request_free(req);
    while (rc == SD_OK && !done)
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    sd_loop_free(loop);
    return rc == SD_OK && !failed ? 0 : 1;
}
