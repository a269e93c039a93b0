/* fetch_image URL — fetch and decode one image with the transfer loop.
 * Prints WIDTHxHEIGHT (a thumbnail of at most 512 px), or the error.
 *
 * The loop runs in dispatch mode: it does the network on its own thread and
 * its callbacks run here, on the main thread, when sd_loop_dispatch is
 * called — no locks, no polling. A program with a main loop (GLib, SDL,
 * libuv) watches sd_loop_dispatch_fd instead of calling sd_loop_wait. */
#include <sdcore.h>
#include <stdio.h>

static int done, failed; /* main thread only: the callbacks run there */

static void on_complete(sd_transfer_id id, sd_result *r, void *user)
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
    if (sd_loop_new(&loop) != SD_OK || sd_loop_use_decoder(loop, 0) != SD_OK
        || sd_loop_set(loop, SD_LOOP_DISPATCH, 1) != SD_OK || sd_loop_start(loop) != SD_OK
        || sd_request_new(argv[1], &req) != SD_OK)
        return 1;
    sd_request_set_decoder_param(req, SD_DEC_MAX_PIXEL_SIZE, 512); /* thumbnail, aspect kept */
    sd_transfer_events ev = SD_TRANSFER_EVENTS_INIT;
    ev.complete = on_complete;
    int rc = sd_loop_submit(loop, req, &ev, NULL, NULL); /* a refused submit calls nothing */
    sd_request_free(req);
    while (rc == SD_OK && !done) {
        sd_loop_wait(loop, -1);      /* sleeps until a callback is ready */
        if (sd_loop_dispatch(loop, 0) < 0)
            break;
    }
    sd_loop_free(loop);
    return rc == SD_OK && !failed ? 0 : 1;
}
