/* test_public_api.c — compiles against the installed-style public header only
 * (-pedantic, no private includes) and exercises the basic contract. */
#include <stdio.h>
#include <string.h>

#include <sdcore.h>
#define SD_COMPAT_QUIET /* the 0.9 wrappers are checked against the handle below */
#include <sdcore/sd_compat.h>

#define CHECK(c) do { if (!(c)) { printf("FAILED %s:%d %s\n", __FILE__, __LINE__, #c); return 1; } } while (0)

int main(void)
{
    int passed = 0;
    CHECK(sd_version_number() == SD_VERSION_NUMBER);
    CHECK(strcmp(sd_strerror(SD_ETOOLARGE), "image too large") == 0);
    CHECK(strcmp(sd_strerror(12345), "unknown error") == 0);
    /* every status has words of its own */
    for (int st = SD_EAGAIN; st >= SD_ELIMIT; st--)
        CHECK((st <= -11 && st > SD_ECANCELLED) || strcmp(sd_strerror(st), "unknown error") != 0);
    passed++;

    /* NULL-safe frees */
    sd_bitmap_free(NULL);
    sd_decoder_free(NULL);
    sd_free(NULL);
    passed++;

    /* encode a tiny bitmap and decode it back through the one-shot helper */
    sd_bitmap *b = NULL, *back = NULL;
    CHECK(sd_bitmap_new(3, 2, &b) == SD_OK);
    uint32_t *px = (uint32_t *)(void *)sd_bitmap_pixels(b);
    for (int i = 0; i < 6; i++)
        px[i] = 0xFF000000u | (uint32_t)(i * 40) << 16 | (uint32_t)(255 - i * 40);
    uint8_t *png = NULL;
    size_t png_len = 0;
    sd_encoder *enc = NULL;
    CHECK(sd_encoder_new(SD_FORMAT_PNG, &enc) == SD_OK);
    int level = 0;
    CHECK(sd_encoder_get(enc, SD_ENC_COMPRESSION_LEVEL, &level) == SD_OK && level == -1);
    CHECK(sd_encoder_set(enc, SD_ENC_COMPRESSION_LEVEL, 10) == SD_EINVAL);
    CHECK(sd_encoder_add_frame(enc, b, 0) == SD_OK);
    CHECK(sd_encoder_finish(enc, &png, &png_len) == SD_OK);
    sd_encoder_free(enc);
    CHECK(sd_sniff_format(png, png_len) == SD_FORMAT_PNG);
    /* the 0.9 positional wrapper writes the same file */
    uint8_t *old = NULL;
    size_t old_len = 0;
    CHECK(sd_encode_png(b, -1, &old, &old_len) == SD_OK);
    CHECK(old_len == png_len && memcmp(old, png, png_len) == 0);
    sd_free(old);
    CHECK(sd_decode(png, png_len, &back) == SD_OK);
    CHECK(sd_bitmap_width(back) == 3 && sd_bitmap_height(back) == 2);
    CHECK(memcmp(sd_bitmap_pixels(back), sd_bitmap_pixels(b), sd_bitmap_size(b)) == 0);
    sd_free(png);
    sd_bitmap_free(b);
    sd_bitmap_free(back);
    passed++;

    /* an HTML error page served as .jpg */
    static const char html[] = "<!DOCTYPE html><html><body>404</body></html>";
    CHECK(sd_decode(html, sizeof html - 1, &back) == SD_EUNSUPPORTED);
    CHECK(back == NULL);
    passed++;

    printf("%d passed, 0 failed\n", passed);
    return 0;
}
