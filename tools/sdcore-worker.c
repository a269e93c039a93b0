/*
 * sdcore-worker — the decoder worker the C library's pools start
 * (sd_isolate.h): started with --sdcore-worker by a pool it sandboxes
 * itself and decodes; started any other way it says what it is.
 */
#include <stdio.h>

#include <sdcore.h>

int main(int argc, char **argv)
{
    sd_worker_main(argc, argv); /* never returns when started by a pool */
    fprintf(stderr, "sdcore-worker: the decoder worker of libsdcore %s; sd_isolate_pool_new starts it\n",
            sd_version_string());
    return 2;
}
