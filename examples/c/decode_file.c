/* decode_file.c — smallest libsdcore consumer: decode a file, print its size.
 * Built against an installed libsdcore with pkg-config or find_package. */
#include <stdio.h>
#include <stdlib.h>

#include <sdcore.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s IMAGE\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (f == NULL)
        return 1;
    unsigned char buf[65536];
    size_t n;
    sd_decoder *d;
    sd_decoder_new(&d);
    sd_decoder_set(d, SD_DEC_MAX_PIXEL_SIZE, 256);
    int rc = SD_OK;
    while (rc == SD_OK && (n = fread(buf, 1, sizeof buf, f)) > 0)
        rc = sd_decoder_push(d, buf, n);
    fclose(f);
    sd_bitmap *bmp = NULL;
    if (rc == SD_OK && (rc = sd_decoder_finish(d)) == SD_OK)
        rc = sd_decoder_take_bitmap(d, &bmp);
    if (rc != SD_OK) {
        fprintf(stderr, "%s: %s\n", sd_strerror(rc), sd_decoder_message(d));
        sd_decoder_free(d);
        return 1;
    }
    printf("%ux%u (libsdcore %s)\n", sd_bitmap_width(bmp), sd_bitmap_height(bmp), sd_version_string());
    sd_bitmap_free(bmp);
    sd_decoder_free(d);
    return 0;
}
