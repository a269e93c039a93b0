/*
 * test_corpus.c — every row of the corpus MANIFEST must decode to the exact
 * expected bitmap (or fail cleanly where the row says `error`), fed whole, in
 * 1-byte chunks, and in random chunk sizes with snapshots in between.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sd_test.h"
#include "sd_test_util.h"

typedef struct {
    char file[256];
    unsigned width, height;
    int orientation;
    char expected[80];
} row_t;

static row_t *rows;
static int nrows;

static int load_manifest(void)
{
    const char *dir = sd_corpus_dir();
    if (dir == NULL) {
        fprintf(stderr, "  corpus not found (../shared/corpus or SD_CORPUS_DIR): skipping\n");
        return 77;
    }
    if (rows)
        return 0;
    char path[4096], line[4096];
    snprintf(path, sizeof path, "%s/MANIFEST.tsv", dir);
    FILE *f = fopen(path, "r");
    ASSERT_NOT_NULL(f);
    rows = calloc(1024, sizeof *rows);
    while (fgets(line, sizeof line, f) && nrows < 1024) {
        char *cols[8] = {0};
        int n = 0;
        for (char *p = line, *tok; n < 8 && (tok = strsep(&p, "\t\n")) != NULL;)
            cols[n++] = tok;
        if (n < 7 || strcmp(cols[0], "file") == 0)
            continue;
        row_t *r = &rows[nrows++];
        snprintf(r->file, sizeof r->file, "%s", cols[0]);
        r->width = (unsigned)atoi(cols[3]);
        r->height = (unsigned)atoi(cols[4]);
        r->orientation = atoi(cols[5]);
        snprintf(r->expected, sizeof r->expected, "%s", cols[6]);
    }
    fclose(f);
    ASSERT(nrows >= 200);
    return 0;
}

/* mode: 0 whole, 1 one byte, -1 random; returns the number of mismatches */
static int check_all(int mode)
{
    int rc = load_manifest();
    if (rc)
        return rc;
    int bad = 0;
    for (int i = 0; i < nrows; i++) {
        row_t *r = &rows[i];
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", sd_corpus_dir(), r->file);
        size_t len;
        unsigned char *data = sd_read_file(path, &len);
        ASSERT_NOT_NULL(data);
        sd_decoder *d;
        ASSERT_OK(sd_decoder_new(&d));
        sd_bitmap *b = NULL;
        int st = sd_decode_chunked(d, data, len, mode, 1234u + (unsigned)i, mode < 0 ? 3 : 0, &b);
        int expect_error = strcmp(r->expected, "error") == 0;
        if (expect_error) {
            if (st == SD_OK) {
                fprintf(stderr, "  %s: decoded, expected an error\n", r->file);
                bad++;
            }
        } else if (st != SD_OK) {
            fprintf(stderr, "  %s: %s (%s)\n", r->file, sd_strerror(st), sd_decoder_message(d));
            bad++;
        } else {
            char hex[65];
            sd_bitmap_sha256(b, hex);
            int64_t o = 0;
            sd_decoder_get(d, SD_DEC_INFO_ORIENTATION, &o);
            if (sd_bitmap_width(b) != r->width || sd_bitmap_height(b) != r->height ||
                strcmp(hex, r->expected) != 0 || o != r->orientation) {
                fprintf(stderr, "  %s: got %ux%u o=%lld %.12s, want %ux%u o=%d %.12s\n", r->file,
                        sd_bitmap_width(b), sd_bitmap_height(b), (long long)o, hex, r->width,
                        r->height, r->orientation, r->expected);
                bad++;
            }
        }
        sd_bitmap_free(b);
        sd_decoder_free(d);
        free(data);
    }
    if (bad)
        fprintf(stderr, "  %d of %d rows wrong\n", bad, nrows);
    return bad ? 1 : 0;
}

static int test_corpus_whole(void) { return check_all(0); }
static int test_corpus_one_byte_chunks(void) { return check_all(1); }
static int test_corpus_random_chunks(void) { return check_all(-1); }

int main(int argc, char **argv)
{
    static const sd_test_case tests[] = {
        {"corpus_whole", test_corpus_whole},
        {"corpus_random_chunks_with_snapshots", test_corpus_random_chunks},
        {"corpus_one_byte_chunks", test_corpus_one_byte_chunks},
        {NULL, NULL},
    };
    int rc = sd_test_run(tests, argc, argv);
    free(rows);
    return rc;
}
