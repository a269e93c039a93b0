/*
 * sd_codecs.c — the codec registry: every format the core recognises, in
 * one table. A decodable format's codec lives in decode/<format>/ (its
 * encoder in encode/) and is listed here by its sd__codec; a format we
 * only recognise has its sniffer here and no entry points, so its bytes
 * fail with SD_EUNSUPPORTED and the format's name instead of "corrupt".
 * Adding a still format: a new decode/<format>/sd_<format>.c with its
 * sd__codec (sniffer moved there; its encoder, if any, named in the row),
 * its line below, and the build lines for its library.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "codec/sd_codec.h"

static int has(const uint8_t *p, size_t n, size_t at, const char *s, size_t len)
{
    if (n < at + len)
        return memcmp(p + at, s, n > at ? n - at : 0) == 0 ? -1 : 0; /* a prefix so far */
    return memcmp(p + at, s, len) == 0;
}

/* Either of two signatures: a match wins, then "undecided". */
static int either(int a, int b) { return a == 1 || b == 1 ? 1 : a == -1 || b == -1 ? -1 : 0; }

/* ISO BMFF "ftyp" brands: 1 AVIF, 2 HEIC, 0 neither, -1 undecided. */
static int bmff_brand(const uint8_t *p, size_t n)
{
    int r = has(p, n, 4, "ftyp", 4);
    if (r != 1)
        return r;
    if (n < 12)
        return -1;
    uint32_t size = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    static const char *const heic[] = {"heic", "heix", "hevc", "hevx", "heim", "heis"};
    if (memcmp(p + 8, "avif", 4) == 0 || memcmp(p + 8, "avis", 4) == 0)
        return 1;
    for (size_t i = 0; i < sizeof heic / sizeof heic[0]; i++)
        if (memcmp(p + 8, heic[i], 4) == 0)
            return 2;
    if (memcmp(p + 8, "mif1", 4) != 0 && memcmp(p + 8, "msf1", 4) != 0)
        return 0;
    /* a generic HEIF brand: the compatible brands say which */
    size_t end = SD__MIN((size_t)size, (size_t)SD__SNIFF_MAX);
    if (size < 16)
        return 0;
    if (n < end)
        return -1;
    for (size_t at = 16; at + 4 <= end; at += 4) {
        if (memcmp(p + at, "avif", 4) == 0 || memcmp(p + at, "avis", 4) == 0)
            return 1;
        for (size_t i = 0; i < sizeof heic / sizeof heic[0]; i++)
            if (memcmp(p + at, heic[i], 4) == 0)
                return 2;
    }
    return 0;
}

int sd__sniff_avif(const uint8_t *p, size_t n)
{
    int b = bmff_brand(p, n);
    return b < 0 ? -1 : b == 1;
}

int sd__sniff_heic(const uint8_t *p, size_t n)
{
    int b = bmff_brand(p, n);
    return b < 0 ? -1 : b == 2;
}

static int sniff_tiff(const uint8_t *p, size_t n)
{
    return either(has(p, n, 0, "II*\0", 4), has(p, n, 0, "MM\0*", 4));
}

static int sniff_ico(const uint8_t *p, size_t n)
{
    int r = has(p, n, 0, "\0\0\1\0", 4);
    if (r != 1)
        return r;
    if (n < 6)
        return -1;
    return p[4] != 0 || p[5] != 0; /* at least one image */
}

/* Text: optional BOM and white space, then "<svg", or an XML prolog,
 * comment or doctype followed by "<svg" within the sniffing window. */
int sd__sniff_svg(const uint8_t *p, size_t n)
{
    size_t i = n >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
        i++;
    if (i == n)
        return n < SD__SNIFF_MAX ? -1 : 0;
    int svg = has(p, n, i, "<svg", 4);
    if (svg != 0)
        return svg;
    int xml = has(p, n, i, "<?xml", 5), comment = has(p, n, i, "<!--", 4), doctype = has(p, n, i, "<!DOCTYPE svg", 13);
    if (xml == -1 || comment == -1 || doctype == -1)
        return -1;
    if (xml == 0 && comment == 0 && doctype == 0)
        return 0;
    for (size_t k = i; k + 4 <= n; k++)
        if (memcmp(p + k, "<svg", 4) == 0)
            return 1;
    return n < SD__SNIFF_MAX ? -1 : 0;
}

#define KNOWN(fmt, nm, mt, sn) {fmt, nm, mt, sn, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL}
static const sd__codec tiff = KNOWN(SD_FORMAT_TIFF, "TIFF", "image/tiff", sniff_tiff);
#ifndef SD_WITH_SVG
static const sd__codec svg = KNOWN(SD_FORMAT_SVG, "SVG", "image/svg+xml", sd__sniff_svg);
#endif
static const sd__codec ico = KNOWN(SD_FORMAT_ICO, "ICO", "image/vnd.microsoft.icon", sniff_ico);

/* The decodable codecs, each in decode/<format>/. */
SD__HIDDEN extern const sd__codec sd__jpeg_codec;
SD__HIDDEN extern const sd__codec sd__png_codec;
SD__HIDDEN extern const sd__codec sd__gif_codec;
SD__HIDDEN extern const sd__codec sd__webp_codec;
SD__HIDDEN extern const sd__codec sd__avif_codec;
SD__HIDDEN extern const sd__codec sd__bmp_codec;
SD__HIDDEN extern const sd__codec sd__heic_codec;
SD__HIDDEN extern const sd__codec sd__jxl_codec;
#ifdef SD_WITH_SVG /* CMake, SDCORE_WITH_SVG: librsvg linked into libsdcore */
SD__HIDDEN extern const sd__codec sd__svg_codec;
#endif

/* Indexed by sd_format; sniffed in this order. */
static const sd__codec *const registry[] = {
    NULL, /* SD_FORMAT_UNKNOWN */
    &sd__jpeg_codec,
    &sd__png_codec,
    &sd__gif_codec,
    &sd__webp_codec,
    &sd__avif_codec,
    &sd__heic_codec,
    &sd__jxl_codec,
    &sd__bmp_codec,
    &tiff,
#ifdef SD_WITH_SVG
    &sd__svg_codec,
#else
    &svg,
#endif
    &ico,
};
#define SD__NFORMATS (sizeof registry / sizeof registry[0])
_Static_assert(SD__NFORMATS == SD_FORMAT_ICO + 1, "one registry line per sd_format, in enum order");

/* Rows plugged in by an optional codec's own build target (SwiftPM's
 * CSDCoreSVG): each replaces a row that only recognises its format. */
static _Atomic(const sd__codec *) plugged[SD__NFORMATS];

int sd__codec_plug(const sd__codec *c)
{
    if (c == NULL || c->format <= SD_FORMAT_UNKNOWN || (size_t)c->format >= SD__NFORMATS ||
        registry[c->format]->caps != 0)
        return SD_EINVAL;
    atomic_store_explicit(&plugged[c->format], c, memory_order_release);
    return SD_OK;
}

const sd__codec *sd__codec_for(sd_format f)
{
    if ((unsigned)f >= SD__NFORMATS)
        return NULL;
    const sd__codec *c = atomic_load_explicit(&plugged[f], memory_order_acquire);
    return c ? c : registry[f];
}

int sd__sniff(const uint8_t *p, size_t n)
{
    int undecided = 0;
    for (size_t f = 1; f < SD__NFORMATS; f++) {
        int r = sd__codec_for((sd_format)f)->sniff(p, n);
        if (r == 1)
            return (int)f;
        undecided |= r < 0;
    }
    return undecided ? -1 : SD_FORMAT_UNKNOWN;
}

sd_format sd_sniff_format(const void *data, size_t length)
{
    if (data == NULL)
        return SD_FORMAT_UNKNOWN;
    int f = sd__sniff(data, SD__MIN(length, (size_t)SD__SNIFF_MAX));
    return f > 0 ? (sd_format)f : SD_FORMAT_UNKNOWN;
}

const char *sd_format_name(sd_format f)
{
    const sd__codec *c = sd__codec_for(f);
    return c ? c->name : "unknown";
}

const char *sd_format_mime(sd_format f)
{
    const sd__codec *c = sd__codec_for(f);
    return c ? c->mime : NULL;
}

unsigned sd_format_capabilities(sd_format f)
{
    const sd__codec *c = sd__codec_for(f);
    return c ? c->caps : 0;
}

void sd__decodable_names(char *out, size_t size)
{
    size_t n = 0, count = 0, at = 0;
    for (size_t f = 1; f < SD__NFORMATS; f++)
        count += (sd__codec_for((sd_format)f)->caps & SD_CAP_DECODE) != 0;
    out[0] = '\0';
    for (size_t f = 1; f < SD__NFORMATS && at < size; f++) {
        const sd__codec *c = sd__codec_for((sd_format)f);
        if (!(c->caps & SD_CAP_DECODE))
            continue;
        const char *sep = n == 0 ? "" : n + 1 == count ? " or " : ", ";
        int w = snprintf(out + at, size - at, "%s%s", sep, c->name);
        at += w > 0 ? (size_t)w : 0;
        n++;
    }
}
