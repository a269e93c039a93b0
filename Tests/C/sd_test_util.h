/* sd_test_util.h — file reading, the corpus location, chunked decoding. */
#ifndef SD_TEST_UTIL_H
#define SD_TEST_UTIL_H

#include <sdcore.h>

#include "sd_test_encode.h"

/* Read a whole file; NULL on failure. Free with free(). */
unsigned char *sd_read_file(const char *path, size_t *len);

/* ../shared/corpus (env SD_CORPUS_DIR overrides); NULL when absent. */
const char *sd_corpus_dir(void);

/* sha256 hex of width*4 bytes per row, rows top-first. */
void sd_bitmap_sha256(const sd_bitmap *b, char out[65]);

/* chunk: 0 = whole, 1 = one byte at a time, -1 = random sizes from seed.
 * snapshot_every: take a snapshot after every Nth push (0 = never).
 * Returns the status of the first failing call. */
int sd_decode_chunked(sd_decoder *d, const unsigned char *data, size_t len, int chunk,
                      unsigned seed, int snapshot_every, sd_bitmap **out);

/* An animated WebP of `frames` frames, each the VP8L bitstream of `one` (a
 * whole 1x1 lossless WebP file), 20 ms, offset 0, no blending, on a 1x1
 * canvas; `odd`: the second ANMF carries an unknown chunk after its image
 * (a layout libwebp reads as a top-level chunk). NULL on failure; free(). */
unsigned char *sd_make_webp_anim(const unsigned char *one, size_t one_len, size_t frames, int odd, size_t *len);

/* xorshift PRNG for reproducible chunking. */
unsigned sd_rand(unsigned *state);

/* `n` bytes to a new file at `path`: 0, or -1. */
int sd_write_file(const char *path, const void *p, size_t n);
/* Non-zero when the test runs under valgrind (make test-valgrind sets
 * SD_TEST_UNDER_VALGRIND). There a test still makes every library call it
 * makes elsewhere, and may skip the work of its own references: the release
 * and ASan runs check the values; valgrind checks the library's memory, at
 * a twentieth of the speed. */
int sd_under_valgrind(void);
/* sd_request_new with the suite's patient timeouts (no whole-transfer
 * timeout, a 120 s connect timeout): a test never depends on the clock
 * running at a normal speed, and the 15 s default ended loopback transfers
 * on starved machines. A test of a timeout sets its own after this; the
 * rule is checked by scripts/check-test-patience.py. */
int sd_test_request_new(const char *url, sd_request **out);
/* A reference tool's command line, its output discarded: system()'s status. */
int sd_run_quiet(const char *cmd);
/* The largest channel difference of two bitmaps (999 if their sizes
 * differ), and the mean over every channel byte. */
int sd_bitmap_max_diff(const sd_bitmap *a, const sd_bitmap *b);
double sd_bitmap_mean_diff(const sd_bitmap *a, const sd_bitmap *b);

/* The codec of `format` without its library: this test binary runs again
 * as a child with `env` (SDCORE_HEIF_LIBRARY, SDCORE_JXL_LIBRARY) naming a
 * file that is not there, and checks that decoding `file_path` and encoding
 * fail with SD_EUNSUPPORTED, the message naming the file, while a PNG still
 * round-trips. Call it first thing in main with main's arguments: in the
 * child it does the checks and returns their status (non-negative). In the
 * parent it returns the child's exit status (0: all held), -1 if it could
 * not run one. The library is looked for once per process, hence the child. */
int sd_missing_library(sd_format format, const char *env, const char *file_path, int argc, char **argv);

#endif
