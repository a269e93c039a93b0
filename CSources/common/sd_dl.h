/*
 * sd_dl.h — a codec's library loaded on first use (dlopen), not at program
 * start: a program that never meets HEIC, JPEG XL or SVG does not pay for
 * loading libheif (libde265, x265), libjxl (libhwy, brotli) or librsvg
 * (cairo, GLib, pango) — their relocations and constructors cost every
 * process tens of ms of CPU and ~10 MB (libvips made the same codecs
 * loadable modules for this).
 *
 * A codec lists the functions it calls once, as an X-macro, and calls them
 * by their own names through one #define each (the types are the library
 * header's):
 *
 *     #define HEIF_FNS(X) X(heif_init) X(heif_context_alloc) ...
 *     SD__DL_TABLE(heif, HEIF_FNS, "SDCORE_HEIF_LIBRARY", "libheif.so.1", "libheif.so");
 *     #define heif_init SD__DL_FN(heif, heif_init)
 *     ...
 *     if (sd__dl_load(&heif_dl) != SD_OK) -> heif_dl.message
 */
#ifndef SD_DL_H
#define SD_DL_H

#include <stddef.h>

#include "common/sd_internal.h"

typedef struct {
    const char *env;          /* a variable naming the file to load instead */
    const char *const *files; /* the sonames to try, in order, NULL-ended */
    const char *const *names; /* the functions, in table order */
    void **table;             /* filled by sd__dl_load */
    size_t count;
    int state;                /* 0 not tried, 1 loaded, -1 failed (atomic) */
    char message[256];        /* why it failed */
} sd__dl;

/* Load the library and every function, once per process (thread-safe; a
 * failure is remembered): the file the environment variable names when it
 * is set (read with secure_getenv: not for a setuid program), else the
 * first of `files` that loads. Returns SD_OK, or SD_EUNSUPPORTED with
 * `message` naming the library and what dlopen or dlsym said. */
SD__HIDDEN int sd__dl_load(sd__dl *lib);

#define SD__DL_INDEX(f) SD__DL_##f,
#define SD__DL_NAME(f) #f,
/* The table of library `lib` with the functions of X-macro `fns`, the
 * environment variable that overrides, and the sonames to try (a string
 * list). Defines `lib##_dl`. */
#define SD__DL_TABLE(lib, fns, env, ...)                                          \
    enum { fns(SD__DL_INDEX) SD__DL_##lib##_COUNT };                              \
    static void *lib##_fns[SD__DL_##lib##_COUNT];                                 \
    static const char *const lib##_names[] = {fns(SD__DL_NAME)};                  \
    static const char *const lib##_files[] = {__VA_ARGS__, NULL};                 \
    static sd__dl lib##_dl = {env, lib##_files, lib##_names, lib##_fns, SD__DL_##lib##_COUNT, 0, ""}
/* Function `f` of library `lib`, with the type its header declares. (Its
 * slot is the enumerator SD__DL_<f>: a function is in one table per file.) */
#define SD__DL_FN(lib, f) ((__typeof__(&f))lib##_fns[SD__DL_##f])

#endif /* SD_DL_H */
