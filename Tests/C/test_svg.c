/*
 * test_svg.c — SVG against librsvg's own tool (librsvg2-bin: rsvg-convert):
 * documents written here, rendered by us and by rsvg-convert (the
 * reference, fed on stdin as we are: no base file) within 1 a channel —
 * at the natural size, scaled up and down into a box, stretched, with a
 * viewBox only, fed whole, byte by byte and in random chunks. Then the
 * security contract: no external reference followed (file:, http: to a
 * listening loopback socket, <use>, xi:include, entities, CSS @import),
 * data: URLs only as inline images, elements and references bounded, the
 * render deadline (an injected clock), limits, truncated and broken
 * documents. Skipped when rsvg-convert is missing.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sd_test.h"
#include "sd_test_util.h"
#include "sd_test_encode.h"

/* The codec's clock, for the deadline test (static link: hidden is fine). */
void sd__svg_set_clock(int64_t (*clock_ms)(void));

static char dir[64];

static int decode_opts(const char *svg, size_t n, int chunk, int box_w, int box_h, int aspect, sd_bitmap **out,
                       sd_decoder **keep)
{
    sd_decoder *d;
    ASSERT_OK(sd_decoder_new(&d));
    if (box_w || box_h) {
        ASSERT_OK(sd_decoder_set(d, SD_DEC_TARGET_WIDTH, box_w));
        ASSERT_OK(sd_decoder_set(d, SD_DEC_TARGET_HEIGHT, box_h));
        ASSERT_OK(sd_decoder_set(d, SD_DEC_PRESERVE_ASPECT, aspect));
    }
    int rc = sd_decode_chunked(d, (const unsigned char *)svg, n, chunk, 7, 0, out);
    if (keep)
        *keep = d;
    else
        sd_decoder_free(d);
    return rc;
}

static int decode(const char *svg, int box, sd_bitmap **out)
{
    return decode_opts(svg, strlen(svg), 0, box, box, 1, out, NULL);
}

/* rsvg-convert's PNG of `svg` with `args`, decoded (premultiplied). */
static int reference(const char *svg, const char *args, sd_bitmap **out)
{
    char in[128], png[128], cmd[512];
    snprintf(in, sizeof in, "%s/in.svg", dir);
    snprintf(png, sizeof png, "%s/ref.png", dir);
    ASSERT_EQ(sd_write_file(in, svg, strlen(svg)), 0);
    snprintf(cmd, sizeof cmd, "rsvg-convert %s -o %s < %s", args, png, in);
    ASSERT_EQ(sd_run_quiet(cmd), 0);
    size_t n;
    uint8_t *p = sd_read_file(png, &n);
    ASSERT(p != NULL);
    sd_decoder *d;
    ASSERT_OK(sd_decoder_new(&d));
    int rc = sd_decode_chunked(d, p, n, 0, 1, 0, out);
    sd_decoder_free(d);
    free(p);
    return rc;
}

static const char *shapes =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<!-- a comment before the root -->\n"
    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"120\" height=\"80\" viewBox=\"0 0 60 40\">\n"
    " <defs><linearGradient id=\"g\" x1=\"0\" x2=\"1\"><stop offset=\"0\" stop-color=\"#ff8000\"/>"
    "<stop offset=\"1\" stop-color=\"#0040ff\" stop-opacity=\"0.3\"/></linearGradient></defs>\n"
    " <rect x=\"2\" y=\"2\" width=\"56\" height=\"36\" rx=\"6\" fill=\"url(#g)\"/>\n"
    " <circle cx=\"30\" cy=\"20\" r=\"11.3\" fill=\"#20c040\" fill-opacity=\"0.55\" stroke=\"#102030\" stroke-width=\"1.5\"/>\n"
    " <path d=\"M5 35 L20 8 L33 30 Z\" fill=\"none\" stroke=\"#c02060\" stroke-opacity=\"0.8\"/>\n"
    "</svg>\n";

static const char *viewbox_only =
    "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 90 45\">"
    "<ellipse cx=\"45\" cy=\"22\" rx=\"40\" ry=\"18\" fill=\"#3060a0\" opacity=\"0.7\"/></svg>";

/* width 100.5: rsvg-convert rounds the natural size up */
static const char *odd_size =
    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100.5\" height=\"33.2\">"
    "<rect x=\"0.5\" y=\"0.5\" width=\"99\" height=\"32\" fill=\"none\" stroke=\"black\"/></svg>";

/* no width, height or viewBox: sized by what it draws (13x11 from 3,5) */
static const char *no_size =
    "<svg xmlns=\"http://www.w3.org/2000/svg\"><rect x=\"3\" y=\"5\" width=\"10\" height=\"6\" fill=\"#f80\"/>"
    "<circle cx=\"12\" cy=\"12\" r=\"4\" fill=\"#08f\" opacity=\"0.5\"/></svg>";

static int compare(const char *svg, const char *args, int box_w, int box_h, int aspect, int chunks)
{
    sd_bitmap *ref;
    ASSERT_OK(reference(svg, args, &ref));
    for (int chunk = 0; chunk >= -1; chunk = chunk == 0 ? (chunks ? 1 : -2) : (chunk == 1 ? -1 : -2)) {
        sd_bitmap *got = NULL;
        ASSERT_OK(decode_opts(svg, strlen(svg), chunk, box_w, box_h, aspect, &got, NULL));
        int worst = sd_bitmap_max_diff(got, ref);
        printf("  rsvg-convert %-10s %ux%u, chunk %2d: ours %ux%u, within %d\n", args, sd_bitmap_width(ref),
               sd_bitmap_height(ref), chunk, sd_bitmap_width(got), sd_bitmap_height(got), worst);
        ASSERT(worst <= 1);
        sd_bitmap_free(got);
    }
    sd_bitmap_free(ref);
    return 0;
}

static int test_matches_rsvg_convert(void)
{
    ASSERT_EQ(sd_sniff_format(shapes, strlen(shapes)), SD_FORMAT_SVG);
    ASSERT(sd_format_capabilities(SD_FORMAT_SVG) & SD_CAP_DECODE);
    ASSERT_EQ(compare(shapes, "", 0, 0, 1, 1), 0);              /* natural size */
    ASSERT_EQ(compare(shapes, "-w 360 -a", 400, 240, 1, 0), 0); /* up: vector stays sharp */
    ASSERT_EQ(compare(shapes, "-w 48 -a", 48, 48, 1, 0), 0);    /* a thumbnail */
    ASSERT_EQ(compare(shapes, "-w 50 -h 90", 50, 90, 0, 0), 0); /* fill, stretched */
    ASSERT_EQ(compare(viewbox_only, "", 0, 0, 1, 1), 0);
    ASSERT_EQ(compare(viewbox_only, "-w 200 -a", 200, 0, 1, 0), 0); /* a width only */
    ASSERT_EQ(compare(odd_size, "", 0, 0, 1, 0), 0);
    ASSERT_EQ(compare(no_size, "", 0, 0, 1, 0), 0);
    ASSERT_EQ(compare(no_size, "-w 52 -a", 52, 52, 1, 0), 0);
    /* premultiplied: a translucent pixel never exceeds its alpha */
    sd_bitmap *b;
    ASSERT_OK(decode(shapes, 0, &b));
    ASSERT(sd_bitmap_has_alpha(b));
    const uint32_t *px = (const uint32_t *)(const void *)sd_bitmap_pixels(b);
    int translucent = 0;
    for (size_t i = 0; i < (size_t)sd_bitmap_width(b) * sd_bitmap_height(b); i++) {
        uint32_t a = px[i] >> 24;
        ASSERT(((px[i] >> 16) & 255) <= a && ((px[i] >> 8) & 255) <= a && (px[i] & 255) <= a);
        translucent += a > 0 && a < 255;
    }
    ASSERT(translucent > 100);
    sd_bitmap_free(b);
    return 0;
}

/* A prolog longer than 256 bytes before <svg: still sniffed, still decoded. */
static int test_long_prolog(void)
{
    char svg[6000];
    int n = snprintf(svg, sizeof svg, "<?xml version=\"1.0\"?>\n<!-- ");
    for (int i = 0; i < 300; i++)
        n += snprintf(svg + n, sizeof svg - (size_t)n, "prolog ");
    n += snprintf(svg + n, sizeof svg - (size_t)n, "-->\n%s", viewbox_only);
    ASSERT(n > 2100 && n < 4000);
    ASSERT_EQ(sd_sniff_format(svg, (size_t)n), SD_FORMAT_SVG);
    sd_bitmap *b = NULL;
    ASSERT_OK(decode_opts(svg, (size_t)n, 1, 0, 0, 1, &b, NULL));
    ASSERT(sd_bitmap_width(b) == 90 && sd_bitmap_height(b) == 45);
    sd_bitmap_free(b);
    return 0;
}

/* Any red pixel: a reference that should not have been followed was. */
static int has_red(const sd_bitmap *b)
{
    const uint32_t *px = (const uint32_t *)(const void *)sd_bitmap_pixels(b);
    for (size_t i = 0; i < (size_t)sd_bitmap_width(b) * sd_bitmap_height(b); i++)
        if ((px[i] >> 24) > 200 && ((px[i] >> 16) & 255) > 200 && ((px[i] >> 8) & 255) < 60 && (px[i] & 255) < 60)
            return 1;
    return 0;
}

static int test_no_external_references(void)
{
    /* things to be loaded, each red: a PNG, an SVG, a CSS file, an entity's text */
    char red_png[128], red_svg[128], red_css[128], red_ent[128];
    snprintf(red_png, sizeof red_png, "%s/red.png", dir);
    snprintf(red_svg, sizeof red_svg, "%s/red.svg", dir);
    snprintf(red_css, sizeof red_css, "%s/red.css", dir);
    snprintf(red_ent, sizeof red_ent, "%s/red.txt", dir);
    sd_bitmap *red;
    ASSERT_OK(sd_bitmap_new(8, 8, &red));
    for (int i = 0; i < 64; i++)
        ((uint32_t *)(void *)sd_bitmap_pixels(red))[i] = 0xFFFF0000u;
    uint8_t *png;
    size_t pn;
    ASSERT_OK(enc_png(red, 1, &png, &pn));
    ASSERT_EQ(sd_write_file(red_png, png, pn), 0);
    const char *rs = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"40\" height=\"40\">"
                     "<rect id=\"r\" width=\"40\" height=\"40\" fill=\"red\"/></svg>";
    ASSERT_EQ(sd_write_file(red_svg, rs, strlen(rs)), 0);
    ASSERT_EQ(sd_write_file(red_css, "rect { fill: red }", 18), 0);
    const char *ent = "<rect width=\"40\" height=\"40\" fill=\"red\"/>";
    ASSERT_EQ(sd_write_file(red_ent, ent, strlen(ent)), 0);

    /* a listening loopback socket: an http: reference would connect */
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ASSERT(ls >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    ASSERT_EQ(bind(ls, (struct sockaddr *)&a, sizeof a), 0);
    ASSERT_EQ(listen(ls, 8), 0);
    ASSERT_EQ(getsockname(ls, (struct sockaddr *)&a, &al), 0);
    int port = ntohs(a.sin_port);

    char png_b64[512] = "";
    { /* the red PNG as base64, for the inline image that must render */
        static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        size_t o = 0;
        for (size_t i = 0; i < pn; i += 3) {
            uint32_t v = (uint32_t)png[i] << 16 | (i + 1 < pn ? (uint32_t)png[i + 1] << 8 : 0) |
                         (i + 2 < pn ? png[i + 2] : 0);
            png_b64[o++] = t[v >> 18 & 63];
            png_b64[o++] = t[v >> 12 & 63];
            png_b64[o++] = i + 1 < pn ? t[v >> 6 & 63] : '=';
            png_b64[o++] = i + 2 < pn ? t[v & 63] : '=';
        }
        png_b64[o] = '\0';
        ASSERT(o < sizeof png_b64);
    }
    sd_free(png);
    sd_bitmap_free(red);

    const char *head = "<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" "
                       "xmlns:xi=\"http://www.w3.org/2001/XInclude\" width=\"40\" height=\"40\">"
                       "<rect width=\"40\" height=\"40\" fill=\"#2040ff\"/>";
    char doc[2048];
    struct { const char *what, *fmt, *arg; } cases[] = {
        {"<image> file:", "%s<image href=\"file://%s\" width=\"40\" height=\"40\"/></svg>", red_png},
        {"<image> xlink file:", "%s<image xlink:href=\"file://%s\" width=\"40\" height=\"40\"/></svg>", red_png},
        {"<image> relative", "%s<image href=\"%s\" width=\"40\" height=\"40\"/></svg>", "red.png"},
        {"<use> file:", "%s<use href=\"file://%s#r\"/></svg>", red_svg},
        {"xi:include file:", "%s<xi:include href=\"file://%s\" parse=\"xml\"/></svg>", red_svg},
        {"CSS @import file:", "%s<style>@import url(\"file://%s\");</style><rect width=\"40\" height=\"40\"/></svg>",
         red_css},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        snprintf(doc, sizeof doc, cases[k].fmt, head, cases[k].arg);
        sd_bitmap *b = NULL;
        int rc = decode_opts(doc, strlen(doc), 0, 0, 0, 1, &b, NULL);
        printf("  %-20s -> %s%s\n", cases[k].what, sd_strerror(rc), rc == SD_OK && has_red(b) ? ", LOADED" : "");
        ASSERT(rc == SD_OK || rc == SD_ECORRUPT);
        if (b) {
            ASSERT(!has_red(b));
            sd_bitmap_free(b);
        }
    }
    /* an external entity (XXE): refused or left out, never read */
    snprintf(doc, sizeof doc,
             "<?xml version=\"1.0\"?><!DOCTYPE svg [<!ENTITY x SYSTEM \"file://%s\">]>"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"40\" height=\"40\">&x;</svg>", red_ent);
    sd_bitmap *b = NULL;
    int rc = decode_opts(doc, strlen(doc), 0, 0, 0, 1, &b, NULL);
    printf("  %-20s -> %s\n", "external entity", sd_strerror(rc));
    ASSERT(b == NULL || !has_red(b));
    sd_bitmap_free(b);
    /* http: to a socket that listens: no connection is made */
    snprintf(doc, sizeof doc, "%s<image href=\"http://127.0.0.1:%d/red.png\" width=\"40\" height=\"40\"/>"
             "<use href=\"http://127.0.0.1:%d/red.svg#r\"/></svg>", head, port, port);
    b = NULL;
    rc = decode_opts(doc, strlen(doc), 0, 0, 0, 1, &b, NULL);
    struct pollfd pfd = {ls, POLLIN, 0};
    int pending = poll(&pfd, 1, 0);
    printf("  %-20s -> %s, connections: %d\n", "http: loopback", sd_strerror(rc), pending);
    ASSERT_EQ(pending, 0);
    ASSERT(b == NULL || !has_red(b));
    sd_bitmap_free(b);
    close(ls);

    /* data: as an inline image renders (red shows: the checks above can see it) */
    snprintf(doc, sizeof doc, "%s<image href=\"data:image/png;base64,%s\" width=\"40\" height=\"40\"/></svg>", head,
             png_b64);
    b = NULL;
    ASSERT_OK(decode_opts(doc, strlen(doc), 0, 0, 0, 1, &b, NULL));
    ASSERT(has_red(b));
    sd_bitmap_free(b);
    /* data: anywhere else is refused before librsvg sees it */
    const char *data_elsewhere[] = {
        "%s<use href=\"data:image/svg+xml;base64,%s\"/></svg>",
        "%s<xi:include href=\"data:text/plain,%s\" parse=\"text\"/></svg>",
        "%s<style>@import url(data:text/css;base64,%s);</style></svg>",
        "%s<style>@import 'data:text/css,%s';</style></svg>",
        "%s<rect width=\"4\" height=\"4\" style=\"fill: url('data:image/png;base64,%s')\"/></svg>",
        /* as the parsers read them: references and escapes decoded */
        "%s<use href=\"&#100;ata:image/svg+xml;base64,%s\"/></svg>",
        "%s<use href=\"&#x64;ATA:image/svg+xml;base64,%s\"/></svg>",
        "%s<use href=\" &#32;d&#97;ta:image/svg+xml;base64,%s\"/></svg>",
        "%s<rect width=\"4\" height=\"4\" style=\"fill: url(&quot;data:image/png;base64,%s&quot;)\"/></svg>",
        "%s<rect width=\"4\" height=\"4\" style=\"fill: url(\\64 ata:image/png;base64,%s)\"/></svg>",
        "%s<style>@import url(\\64\\61ta:text/css;base64,%s);</style></svg>",
    };
    for (size_t k = 0; k < sizeof data_elsewhere / sizeof data_elsewhere[0]; k++) {
        snprintf(doc, sizeof doc, data_elsewhere[k], head, "AAAA");
        b = NULL;
        rc = decode_opts(doc, strlen(doc), 0, 0, 0, 1, &b, NULL);
        ASSERT_EQ(rc, SD_EUNSUPPORTED);
        ASSERT(b == NULL);
    }
    /* a document's own entity where a reference starts: what it says is not
     * known before the parser, so it is refused */
    snprintf(doc, sizeof doc,
             "<?xml version=\"1.0\"?><!DOCTYPE svg [<!ENTITY d \"data:\">]>"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"40\" height=\"40\"><use href=\"&d;image/svg+xml;base64,AAAA\"/></svg>");
    b = NULL;
    ASSERT_EQ(decode_opts(doc, strlen(doc), 0, 0, 0, 1, &b, NULL), SD_EUNSUPPORTED);
    /* references elsewhere in a tag change nothing: &amp; in a title, a colour by reference */
    snprintf(doc, sizeof doc, "%s<rect width=\"40\" height=\"40\" fill=\"&#35;f00\"><title>a &amp; b &#100;ata:</title></rect></svg>",
             head);
    ASSERT_OK(decode_opts(doc, strlen(doc), 0, 0, 0, 1, &b, NULL));
    ASSERT(has_red(b));
    sd_bitmap_free(b);
    /* text that merely says "data:" is not a reference */
    snprintf(doc, sizeof doc, "%s<text x=\"2\" y=\"20\">href=data: url(data:x) @import data:</text><!-- href=\"data:\" --></svg>", head);
    ASSERT_OK(decode_opts(doc, strlen(doc), 0, 0, 0, 1, &b, NULL));
    sd_bitmap_free(b);
    return 0;
}

/* Elements, references and entities bounded; size limits met by shrinking. */
static int test_bounds(void)
{
    /* more elements than the bound: refused before librsvg parses them */
    size_t n = 200001, len = 0;
    char *big = malloc(n * 4 + 200);
    len += (size_t)sprintf(big, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\">");
    for (size_t i = 0; i < n; i++)
        memcpy(big + len, "<g/>", 4), len += 4;
    len += (size_t)sprintf(big + len, "</svg>");
    sd_decoder *d;
    sd_bitmap *b = NULL;
    ASSERT_EQ(decode_opts(big, len, 0, 0, 0, 1, &b, &d), SD_ETOOLARGE);
    printf("  %zu elements: %s\n", n, sd_decoder_message(d));
    sd_decoder_free(d);
    free(big);
    /* a <use> bomb (10^7 instances): librsvg's reference limit stops it */
    char doc[4096];
    int at = snprintf(doc, sizeof doc, "<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "xmlns:xlink=\"http://www.w3.org/1999/xlink\" width=\"10\" height=\"10\">"
                      "<defs><rect id=\"a0\" width=\"1\" height=\"1\"/>");
    for (int lvl = 1; lvl <= 7; lvl++) {
        at += snprintf(doc + at, sizeof doc - (size_t)at, "<g id=\"a%d\">", lvl);
        for (int k = 0; k < 10; k++)
            at += snprintf(doc + at, sizeof doc - (size_t)at, "<use xlink:href=\"#a%d\"/>", lvl - 1);
        at += snprintf(doc + at, sizeof doc - (size_t)at, "</g>");
    }
    at += snprintf(doc + at, sizeof doc - (size_t)at, "</defs><use xlink:href=\"#a7\"/></svg>");
    b = NULL;
    int rc = decode_opts(doc, (size_t)at, 0, 0, 0, 1, &b, &d);
    printf("  <use> bomb: %s (%s)\n", sd_strerror(rc), rc ? sd_decoder_message(d) : "");
    ASSERT(rc == SD_ECORRUPT || rc == SD_ETOOLARGE);
    sd_decoder_free(d);
    /* billion laughs: libxml2's amplification limit */
    at = snprintf(doc, sizeof doc, "<?xml version=\"1.0\"?><!DOCTYPE svg [<!ENTITY a0 \"lollollollol\">");
    for (int lvl = 1; lvl <= 9; lvl++)
        at += snprintf(doc + at, sizeof doc - (size_t)at,
                       "<!ENTITY a%d \"&a%d;&a%d;&a%d;&a%d;&a%d;&a%d;&a%d;&a%d;&a%d;&a%d;\">", lvl, lvl - 1, lvl - 1,
                       lvl - 1, lvl - 1, lvl - 1, lvl - 1, lvl - 1, lvl - 1, lvl - 1, lvl - 1);
    at += snprintf(doc + at, sizeof doc - (size_t)at,
                   "]><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"><text>&a9;</text></svg>");
    b = NULL;
    rc = decode_opts(doc, (size_t)at, 0, 0, 0, 1, &b, &d);
    printf("  billion laughs: %s (%s)\n", sd_strerror(rc), rc ? sd_decoder_message(d) : "");
    ASSERT(rc == SD_ECORRUPT || rc == SD_ETRUNCATED);
    sd_decoder_free(d);
    /* a huge natural size: scaled down to the pixel and side limits, not refused */
    const char *huge = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100000\" height=\"50000\" viewBox=\"0 0 2 1\">"
                       "<rect width=\"1\" height=\"1\" fill=\"#00ff00\"/></svg>";
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_MAX_PIXELS, 2000000));
    b = NULL;
    ASSERT_OK(sd_decode_chunked(d, (const unsigned char *)huge, strlen(huge), 0, 1, 0, &b));
    int64_t iw, ih;
    ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_WIDTH, &iw));
    ASSERT_OK(sd_decoder_get(d, SD_DEC_INFO_HEIGHT, &ih));
    printf("  100000x50000 under a 2 MP limit: %ux%u\n", sd_bitmap_width(b), sd_bitmap_height(b));
    ASSERT((uint64_t)sd_bitmap_width(b) * sd_bitmap_height(b) <= 2000000);
    ASSERT(sd_bitmap_width(b) >= 1990 && sd_bitmap_width(b) <= 2000 && sd_bitmap_height(b) * 2 - sd_bitmap_width(b) <= 2);
    ASSERT(iw == sd_bitmap_width(b) && ih == sd_bitmap_height(b));
    /* the left half green, the right half empty: drawn, not just allocated */
    const uint32_t *px = (const uint32_t *)(const void *)sd_bitmap_pixels(b);
    ASSERT_EQ(px[10], 0xFF00FF00u);
    ASSERT_EQ(px[sd_bitmap_width(b) - 10], 0u);
    sd_bitmap_free(b);
    sd_decoder_free(d);
    /* a byte budget makes it smaller still */
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_MAX_BYTES, 400 * 200 * 4));
    b = NULL;
    ASSERT_OK(sd_decode_chunked(d, (const unsigned char *)huge, strlen(huge), 0, 1, 0, &b));
    ASSERT((uint64_t)sd_bitmap_width(b) * sd_bitmap_height(b) * 4 <= 400 * 200 * 4 && sd_bitmap_width(b) >= 390);
    sd_bitmap_free(b);
    sd_decoder_free(d);
    return 0;
}

/* A vector is drawn at the size the decoder's plan asks for, a box larger
 * than the document included (imgproxy enlarges vectors without `el`): a
 * render's fit and fill of a 100 x 50 document, and the same fit as a
 * SD_DEC_TARGET box, each drawn there (sharp edges at the output's scale),
 * not drawn at 100 x 50 and scaled. */
static int render_svg(const char *doc, const sd_render *r, sd_bitmap **out)
{
    sd_decoder *d;
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_set_render(d, r));
    ASSERT_OK(sd_decoder_decode(d, doc, strlen(doc), out));
    sd_decoder_free(d);
    return 0;
}

static int test_render_enlarges(void)
{
    /* left half red, right half blue */
    const char *doc = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100\" height=\"50\">"
                      "<rect width=\"50\" height=\"50\" fill=\"#ff0000\"/>"
                      "<rect x=\"50\" width=\"50\" height=\"50\" fill=\"#0000ff\"/></svg>";
    sd_render r;
    sd_render_init(&r);
    r.width = 400;
    r.height = 400;
    r.resize = SD_RESIZE_FIT;
    sd_bitmap *b;
    ASSERT_EQ(render_svg(doc, &r, &b), 0);
    ASSERT_EQ(sd_bitmap_width(b), 400);
    ASSERT_EQ(sd_bitmap_height(b), 200);
    const uint32_t *px = (const uint32_t *)(const void *)sd_bitmap_pixels(b);
    /* the edge between the halves as sharp as drawing at 400 px makes it */
    ASSERT_EQ(px[100 * 400 + 198], 0xFFFF0000u);
    ASSERT_EQ(px[100 * 400 + 201], 0xFF0000FFu);
    sd_bitmap_free(b);
    /* fill 300 x 300 by the west: 600 x 300 drawn, its left 300 kept: red */
    r.width = 300;
    r.height = 300;
    r.resize = SD_RESIZE_FILL;
    r.gravity.type = SD_GRAVITY_WEST;
    ASSERT_EQ(render_svg(doc, &r, &b), 0);
    ASSERT_EQ(sd_bitmap_width(b), 300);
    ASSERT_EQ(sd_bitmap_height(b), 300);
    px = (const uint32_t *)(const void *)sd_bitmap_pixels(b);
    ASSERT_EQ(px[150 * 300 + 298], 0xFFFF0000u);
    sd_bitmap_free(b);
    /* the box: as the render */
    sd_decoder *d;
    ASSERT_OK(sd_decoder_new(&d));
    ASSERT_OK(sd_decoder_set(d, SD_DEC_MAX_PIXEL_SIZE, 400));
    ASSERT_OK(sd_decoder_decode(d, doc, strlen(doc), &b));
    ASSERT_EQ(sd_bitmap_width(b), 400);
    ASSERT_EQ(sd_bitmap_height(b), 200);
    sd_bitmap_free(b);
    sd_decoder_free(d);
    return 0;
}

/* The deadline, read between bands, on an injected clock: each reading a
 * second later than the last. */
static int64_t fake_now;
static int64_t fake_clock(void) { return fake_now += 1000; }

static int test_deadline(void)
{
    const char *tall = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1024\" height=\"16384\">"
                       "<rect width=\"1024\" height=\"16384\" fill=\"#808080\"/></svg>"; /* four bands of 4 MP */
    sd_decoder *d;
    ASSERT_OK(sd_decoder_new(&d));
    int64_t v;
    ASSERT_OK(sd_decoder_get(d, SD_DEC_RENDER_DEADLINE_MS, &v));
    ASSERT_EQ(v, SD_DEFAULT_RENDER_DEADLINE_MS);
    ASSERT_EQ(sd_decoder_set(d, SD_DEC_RENDER_DEADLINE_MS, -1), SD_EINVAL);
    sd_decoder_free(d);
    sd__svg_set_clock(fake_clock);
    struct { int64_t deadline; int expect; } cases[] = {{2500, SD_ETOOLARGE}, {3500, SD_OK}, {0, SD_OK}};
    for (size_t k = 0; k < 3; k++) {
        ASSERT_OK(sd_decoder_new(&d));
        ASSERT_OK(sd_decoder_set(d, SD_DEC_RENDER_DEADLINE_MS, cases[k].deadline));
        sd_bitmap *b = NULL;
        int rc = sd_decode_chunked(d, (const unsigned char *)tall, strlen(tall), 0, 1, 0, &b);
        printf("  deadline %lld ms, 1 s a band: %s %s\n", (long long)cases[k].deadline, sd_strerror(rc),
               rc ? sd_decoder_message(d) : "");
        ASSERT_EQ(rc, cases[k].expect);
        sd_bitmap_free(b);
        sd_decoder_free(d);
    }
    sd__svg_set_clock(NULL);
    return 0;
}

static int test_bad_documents(void)
{
    size_t n = strlen(shapes);
    for (size_t cut = 20; cut < n; cut += 37) { /* truncated anywhere: an error, never a crash */
        sd_bitmap *b = NULL;
        int rc = decode_opts(shapes, cut, 0, 0, 0, 1, &b, NULL);
        ASSERT(rc == SD_ETRUNCATED || rc == SD_ECORRUPT || rc == SD_EUNSUPPORTED);
        ASSERT(b == NULL);
    }
    const char *bad[] = {
        "<svg xmlns=\"http://www.w3.org/2000/svg\"><g/></svg>", /* no size, nothing drawn */
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"0\" height=\"10\"></svg>",
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"><rect></svg>", /* not well-formed */
        "<svg width=\"10\" height=\"10\"></svg>",                                          /* no namespace */
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        sd_decoder *d;
        sd_bitmap *b = NULL;
        int rc = decode_opts(bad[k], strlen(bad[k]), 0, 0, 0, 1, &b, &d);
        printf("  bad %zu: %s: %s\n", k, sd_strerror(rc), rc ? sd_decoder_message(d) : "(rendered)");
        ASSERT(rc == SD_ECORRUPT || rc == SD_ETRUNCATED || (rc == SD_OK && k == 3));
        ASSERT(rc != SD_OK || sd_decoder_message(d) != NULL);
        sd_bitmap_free(b);
        sd_decoder_free(d);
    }
    return 0;
}

/* librsvg is loaded when the first SVG arrives: without it (a child with
 * SDCORE_RSVG_LIBRARY naming a file that is not there) an SVG fails with
 * SD_EUNSUPPORTED and a message naming the file, and the rest of the core
 * works. */
static int test_missing_library(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/plain.svg", dir);
    static const char svg[] = "<svg xmlns='http://www.w3.org/2000/svg' width='8' height='8'>"
                              "<rect width='8' height='8' fill='red'/></svg>";
    ASSERT_EQ(sd_write_file(path, svg, strlen(svg)), 0);
    ASSERT_EQ(sd_missing_library(SD_FORMAT_SVG, "SDCORE_RSVG_LIBRARY", path, 0, NULL), 0);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--missing-library-child") == 0)
        return sd_missing_library(SD_FORMAT_SVG, NULL, NULL, argc, argv);
    if (access("/usr/bin/rsvg-convert", X_OK) != 0) {
        printf("rsvg-convert missing (librsvg2-bin): skipped\n");
        return 77;
    }
    if (!(sd_format_capabilities(SD_FORMAT_SVG) & SD_CAP_DECODE)) {
        printf("built without SVG (SDCORE_WITH_SVG=OFF): skipped\n");
        return 77;
    }
    snprintf(dir, sizeof dir, "/tmp/sdsvgXXXXXX");
    if (mkdtemp(dir) == NULL)
        return 1;
    static const sd_test_case tests[] = {
        {"matches_rsvg_convert", test_matches_rsvg_convert},
        {"long_prolog", test_long_prolog},
        {"no_external_references", test_no_external_references},
        {"bounds", test_bounds},
        {"render_enlarges", test_render_enlarges},
        {"deadline", test_deadline},
        {"bad_documents", test_bad_documents},
        {"missing_library", test_missing_library},
        {NULL, NULL},
    };
    int rc = sd_test_run(tests, argc, argv);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    sd_run_quiet(cmd);
    return rc;
}
