/*
 * sd_dl.c — codec libraries loaded on first use (sd_dl.h).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/sd_dl.h"

static pthread_mutex_t dl_mu = PTHREAD_MUTEX_INITIALIZER;

int sd__dl_load(sd__dl *lib)
{
    int state = __atomic_load_n(&lib->state, __ATOMIC_ACQUIRE);
    if (state != 0)
        return state > 0 ? SD_OK : SD_EUNSUPPORTED;
    pthread_mutex_lock(&dl_mu);
    if (lib->state == 0) {
        void *h = NULL;
        const char *why = "", *chosen = lib->env ? secure_getenv(lib->env) : NULL;
        const char *only[] = {chosen, NULL};
        const char *const *files = chosen && *chosen ? only : lib->files;
        for (const char *const *f = files; *f && h == NULL; f++) {
            h = dlopen(*f, RTLD_NOW | RTLD_LOCAL); /* kept for the process's life */
            if (h == NULL)
                why = dlerror();
        }
        size_t i = 0;
        for (; h != NULL && i < lib->count; i++) {
            if ((lib->table[i] = dlsym(h, lib->names[i])) == NULL) {
                why = dlerror();
                break;
            }
        }
        if (h != NULL && i == lib->count) {
            __atomic_store_n(&lib->state, 1, __ATOMIC_RELEASE);
        } else {
            snprintf(lib->message, sizeof lib->message, "%s could not be loaded: %s", files[0],
                     why && *why ? why : "unknown error");
            __atomic_store_n(&lib->state, -1, __ATOMIC_RELEASE);
        }
    }
    state = lib->state;
    pthread_mutex_unlock(&dl_mu);
    return state > 0 ? SD_OK : SD_EUNSUPPORTED;
}
