/*
 * sd_jpeg.c — JPEG codec on libjpeg(-turbo)'s classic API.
 *
 * Input: a suspending source manager. libjpeg reads straight from the
 * caller's chunk when nothing is pending (no copy); only the bytes it could
 * not use yet are kept in `buf` until the next push.
 * Output: rows are written by libjpeg directly into the canvas as native
 * ARGB32 (JCS_EXT_BGRA on little-endian), so there is no conversion pass;
 * CMYK/YCCK is converted in place. Multi-scan files use buffered-image mode
 * so previews can be rendered at scan boundaries without re-decoding.
 * DCT scaling (1/2, 1/4, 1/8) shrinks at the IDCT when a thumbnail is asked,
 * down to SD_DEC_SHRINK_ON_LOAD_MARGIN times its size (the resampler in
 * sd_decoder.c finishes).
 */
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

#include "decode/sd_decoder_int.h"
#include "bitmap/sd_pixel.h"

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SD__JCS_NATIVE JCS_EXT_BGRA
#else
#define SD__JCS_NATIVE JCS_EXT_ARGB
#endif

/* A real progressive JPEG has about 10 scans; thousands are an attack. */
#define SD__JPEG_MAX_SCANS 1000

enum { PH_HEADER, PH_START, PH_ROWS, PH_CONSUME, PH_FINAL, PH_FINISH, PH_DONE };

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jb;
    sd_decoder *dec;
    int code; /* sd_status for the failure being thrown */
    int damaged; /* a warning that says the entropy data is corrupt */
} sd__jerr;

typedef struct {
    struct jpeg_decompress_struct cinfo; /* first: callbacks cast back to us */
    sd__jerr err;
    struct jpeg_source_mgr src;
    int created;
    int phase;
    uint8_t *buf; /* unconsumed input carried between pushes */
    size_t cap;
    size_t skip;  /* bytes to skip that have not arrived yet */
    int eof;      /* finish(): the next refill gets a fake EOI */
    int fake_eoi; /* it did: the file was truncated */
    int eoi_in_header; /* ...before the header was complete */
    int recovering;
    int cmyk;
    int convert_rows; /* colour-convert rows as they are written (sd__color_rows_begin) */
    int managed;      /* CMYK, or a profile converts the colours (settle_bound) */
    int cmyk_profile; /* a CMYK JPEG whose profile converts its rows (sd__color_cmyk_begin) */
    sd_bitmap *canvas;
    int rest_cleared; /* rows below the decoded ones were zeroed for a preview */
    JSAMPROW *rows;
    int64_t last_preview_ms;
    /* A progressive file read for a reduced size stops at the first scan
     * boundary where every coefficient the reduced IDCT reads is final
     * (early_stop): done_bits is libjpeg's coef_bits as of the scans
     * completed so far (libjpeg updates its own when a scan starts). */
    int early_stop;
    int done_bits[4][DCTSIZE2];
} sd__jpeg;

static int map_code(int msg_code)
{
    switch (msg_code) {
    case JERR_OUT_OF_MEMORY: return SD_ENOMEM;
    case JERR_NO_BACKING_STORE: /* max_memory_to_use exceeded */
    case JERR_IMAGE_TOO_BIG:
    case JERR_WIDTH_OVERFLOW: return SD_ETOOLARGE;
    case JERR_BAD_PRECISION:
    case JERR_CONVERSION_NOTIMPL:
    case JERR_NOT_COMPILED:
    case JERR_NO_ARITH_TABLE:
    case JERR_ARITH_NOTIMPL: return SD_EUNSUPPORTED;
    default: return SD_ECORRUPT;
    }
}

static void j_error_exit(j_common_ptr c)
{
    sd__jerr *e = (sd__jerr *)c->err;
    char text[JMSG_LENGTH_MAX];
    c->err->format_message(c, text);
    sd__decoder_msg(e->dec, "JPEG: %s", text);
    e->code = map_code(c->err->msg_code);
    longjmp(e->jb, 1);
}

static void j_emit_message(j_common_ptr c, int level)
{
    if (level >= 0)
        return; /* trace messages */
    sd__jerr *e = (sd__jerr *)c->err;
    c->err->num_warnings++;
    /* Corrupt scan data: libjpeg fills what it cannot decode with grey (a
     * file cut and given an EOI, bit errors) and calls it a warning. Such an
     * image is not complete: it is flagged so, and a cache does not keep it
     * as good. Warnings about markers or versions leave the pixels right. */
    int code = c->err->msg_code;
    int corrupt = code == JWRN_HIT_MARKER || code == JWRN_MUST_RESYNC || code == JWRN_NOT_SEQUENTIAL
                  || code == JWRN_HUFF_BAD_CODE || code == JWRN_ARITH_BAD_CODE;
    if (corrupt && !e->damaged) {
        e->damaged = 1;
        char text[JMSG_LENGTH_MAX];
        c->err->format_message(c, text);
        sd__decoder_msg(e->dec, "JPEG damaged: %s", text);
    }
    if (e->dec->warnings++ == 0 && !corrupt) {
        char text[JMSG_LENGTH_MAX];
        c->err->format_message(c, text);
        sd__decoder_msg(e->dec, "JPEG warning: %s", text);
    }
}

static void j_output_message(j_common_ptr c) { (void)c; }

static void src_init(j_decompress_ptr c) { (void)c; }
static void src_term(j_decompress_ptr c) { (void)c; }

static boolean src_fill(j_decompress_ptr c)
{
    sd__jpeg *j = (sd__jpeg *)c;
    static const JOCTET eoi[2] = {0xFF, JPEG_EOI};
    if (!j->eof)
        return FALSE; /* suspend until the next push */
    /* End of input: insert an EOI like libjpeg's own stdio source does, so
     * a truncated file decodes what it has. */
    WARNMS(c, JWRN_JPEG_EOF);
    j->src.next_input_byte = eoi;
    j->src.bytes_in_buffer = 2;
    j->fake_eoi = 1;
    j->eoi_in_header |= j->phase == PH_HEADER;
    return TRUE;
}

static void src_skip(j_decompress_ptr c, long n)
{
    sd__jpeg *j = (sd__jpeg *)c;
    if (n <= 0)
        return;
    if ((size_t)n <= j->src.bytes_in_buffer) {
        j->src.next_input_byte += n;
        j->src.bytes_in_buffer -= (size_t)n;
    } else {
        if (!j->eof)
            j->skip += (size_t)n - j->src.bytes_in_buffer;
        j->src.next_input_byte += j->src.bytes_in_buffer;
        j->src.bytes_in_buffer = 0;
    }
}

static int sdj_init(sd_decoder *d)
{
    sd__jpeg *j = sd__calloc(1, sizeof *j);
    SD__RETURN_IF(j == NULL, SD_ENOMEM);
    d->codec_state = j;
    j->cinfo.err = jpeg_std_error(&j->err.pub);
    j->err.pub.error_exit = j_error_exit;
    j->err.pub.emit_message = j_emit_message;
    j->err.pub.output_message = j_output_message;
    j->err.dec = d;
    if (setjmp(j->err.jb))
        return j->err.code;
    jpeg_create_decompress(&j->cinfo);
    j->created = 1;
    j->src.init_source = src_init;
    j->src.fill_input_buffer = src_fill;
    j->src.skip_input_data = src_skip;
    j->src.resync_to_restart = jpeg_resync_to_restart;
    j->src.term_source = src_term;
    j->cinfo.src = &j->src;
    jpeg_save_markers(&j->cinfo, JPEG_APP0 + 1, 0xFFFF);
    jpeg_save_markers(&j->cinfo, JPEG_APP0 + 2, 0xFFFF); /* ICC_PROFILE segments */
    j->cinfo.mem->max_memory_to_use = (long)d->max_memory;
    return SD_OK;
}

static void sdj_destroy(sd_decoder *d)
{
    sd__jpeg *j = d->codec_state;
    if (j == NULL)
        return;
    if (j->created)
        jpeg_destroy_decompress(&j->cinfo);
    sd__free(j->buf);
    sd__free(j->rows);
    sd_bitmap_free(j->canvas);
    sd__free(j);
    d->codec_state = NULL;
}

/* Header parsed: record facts, choose the DCT scale, allocate the canvas. */
static int on_header(sd_decoder *d, sd__jpeg *j)
{
    struct jpeg_decompress_struct *c = &j->cinfo;
    int orientation = 1;
    for (jpeg_saved_marker_ptr m = c->marker_list; m != NULL; m = m->next) {
        if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 &&
            memcmp(m->data, "Exif\0\0", 6) == 0) {
            orientation = sd_exif_orientation(m->data, m->data_length);
            break; /* the first Exif APP1 wins */
        }
    }
    int multi = jpeg_has_multiple_scans(c);
    SD__FORWARD_IF_ERROR(sd__decoder_set_header(d, c->image_width, c->image_height,
                                                orientation, multi, 0));
    j->cmyk = c->jpeg_color_space == JCS_CMYK || c->jpeg_color_space == JCS_YCCK;
    /* The ICC profile, its APP2 segments joined in sequence order
     * (libjpeg-turbo checks the numbering: a bad one is a warning, no profile). */
    JOCTET *icc = NULL;
    unsigned int icc_len = 0;
    if (jpeg_read_icc_profile(c, &icc, &icc_len) && icc != NULL)
        sd__color_set_icc(&d->color, icc, icc_len);
    free(icc); /* libjpeg's malloc */
    if (j->cmyk) /* its CMYK profile, if any, is applied to the rows (cmyk_rows) */
        d->color.space = SD_COLOR_CMYK;
    c->out_color_space = j->cmyk ? JCS_CMYK : SD__JCS_NATIVE;
    c->dct_method = JDCT_ISLOW;   /* the reference IDCT; IFAST does not match */
    c->do_fancy_upsampling = TRUE;
    c->buffered_image = multi ? TRUE : FALSE;
    /* Shrink on load: the largest power-of-two DCT reduction that leaves
     * the margin times the planned size (the filter does the rest). */
    c->scale_num = 1;
    c->scale_denom = 1;
    for (unsigned den = 8; den >= 2; den /= 2) {
        if (sd__decoder_load_fits(d, (c->image_width + den - 1) / den, (c->image_height + den - 1) / den)) {
            c->scale_denom = den;
            break;
        }
    }
    jpeg_calc_output_dimensions(c);
    d->load_w = c->output_width;
    d->load_h = c->output_height;
    /* 1411 columns at 1/2 are 706, the last one half picture (libjpeg
     * rounds up; the encoder padded the block with the edge) */
    d->load_span_w = (double)c->image_width * c->scale_num / c->scale_denom;
    d->load_span_h = (double)c->image_height * c->scale_num / c->scale_denom;
    /* the canvas, and for a progressive file its whole coefficient buffer
     * (64 coefficients of 2 bytes per block of every component, at full
     * size whatever the scale: a thumbnail of a 16384^2 progressive JPEG
     * needs ~800 MB of them) */
    uint64_t need = (uint64_t)c->output_width * c->output_height * 4;
    if (multi)
        for (int ci = 0; ci < c->num_components; ci++)
            need += (uint64_t)c->comp_info[ci].width_in_blocks * c->comp_info[ci].height_in_blocks *
                    sizeof(JBLOCK);
    SD__FORWARD_IF_ERROR(sd__decoder_charge(d, need, multi ? "the JPEG canvas and coefficients"
                                                             : "the JPEG canvas"));
    /* Not zeroed: every row is written before the image is done (a truncated
     * file's rest included); only a preview shows rows not decoded yet, and
     * those are cleared then (sdj_canvas). Zeroing each canvas up front cost
     * ~3% of a fetch-and-decode run (memset in perf). */
    SD__FORWARD_IF_ERROR(sd__bitmap_alloc(c->output_width, c->output_height, 0, &j->canvas));
    j->rows = sd__malloc(sizeof *j->rows * c->output_height);
    SD__RETURN_IF(j->rows == NULL, SD_ENOMEM);
    for (JDIMENSION y = 0; y < c->output_height; y++)
        j->rows[y] = j->canvas->pixels + (size_t)y * j->canvas->stride;
    j->convert_rows = !j->cmyk && sd__color_rows_begin(&d->color, sd__decoder_full_size(d));
    j->managed = j->cmyk || sd__color_needed(&d->color);
    /* jpgicc's reading: Adobe's APP14 means the values are stored inverted */
    j->cmyk_profile = j->cmyk && sd__color_cmyk_begin(&d->color, c->saw_Adobe_marker);
    return SD_OK;
}

/* Inverted (Adobe) CMYK to opaque ARGB: R = C'K'/255 etc., rounded. */
static void cmyk_rows(sd__jpeg *j, JDIMENSION y0, JDIMENSION n)
{
    for (JDIMENSION y = y0; y < y0 + n; y++) {
        uint8_t *p = j->rows[y];
        uint32_t *out = (uint32_t *)(void *)p;
        for (JDIMENSION x = 0; x < j->cinfo.output_width; x++, p += 4) {
            uint32_t k = p[3];
            out[x] = sd__pack_opaque(sd__mul_div255(p[0], k), sd__mul_div255(p[1], k),
                                     sd__mul_div255(p[2], k));
        }
    }
}

/* Read scanlines of the current output pass; returns 0 when it suspends. */
static int read_rows(sd_decoder *d, sd__jpeg *j)
{
    struct jpeg_decompress_struct *c = &j->cinfo;
    while (c->output_scanline < c->output_height) {
        JDIMENSION y = c->output_scanline;
        JDIMENSION n = jpeg_read_scanlines(c, j->rows + y, c->output_height - y);
        if (n == 0)
            return 0;
        if (j->cmyk_profile) {
            int rc = sd__color_cmyk_rows(&d->color, j->rows + y, n, c->output_width);
            if (rc < 0) {
                j->err.code = rc;
                longjmp(j->err.jb, 1);
            }
        } else if (j->cmyk) {
            cmyk_rows(j, y, n);
        }
        if (j->convert_rows) { /* while the rows are in the cache */
            int rc = sd__color_rows(&d->color, j->rows + y, n, c->output_width, 1);
            if (rc < 0) { /* out of memory: thrown as libjpeg's errors are */
                j->err.code = rc;
                longjmp(j->err.jb, 1);
            }
        }
        d->rows = c->output_scanline;
    }
    return 1;
}

/* One output pass over the coefficients as of `scan` (buffered mode). */
static void render_scan(sd_decoder *d, sd__jpeg *j, int scan)
{
    struct jpeg_decompress_struct *c = &j->cinfo;
    if (!jpeg_start_output(c, scan))
        return; /* cannot happen for a scan already consumed; be safe */
    read_rows(d, j);
    jpeg_finish_output(c);
}

static void maybe_preview(sd_decoder *d, sd__jpeg *j)
{
    int done_scans = j->cinfo.input_scan_number - 1;
    if (!d->previews || done_scans < 1)
        return;
    int64_t now = sd__now_ms();
    if (d->previews_rendered > 0 && now - j->last_preview_ms < d->preview_interval_ms)
        return;
    /* At SOS no byte of the new scan has been consumed: the coefficients
     * hold exactly the completed scans. */
    render_scan(d, j, done_scans);
    d->previews_rendered++;
    j->last_preview_ms = now;
}

/*
 * Input ended inside a marker segment between scans (say a DHT): libjpeg
 * fails on the fake EOI, yet every scan before it is complete in the
 * coefficient buffer, and the last one has been consumed to its last iMCU
 * row, so an output pass over it reads no input. Render that and finish,
 * flagged incomplete, as a truncation anywhere else would be.
 */
static int recover_truncated(sd_decoder *d, sd__jpeg *j)
{
    j->recovering = 1;
    if (setjmp(j->err.jb))
        return j->err.code;
    /* Block smoothing keeps input two iMCU rows ahead during a DC scan and
     * would re-enter the failed marker reader; plain IDCT reads none. */
    j->cinfo.do_block_smoothing = FALSE;
    /* No jpeg_finish_output: it would look for the next marker again. */
    if (jpeg_start_output(&j->cinfo, j->cinfo.input_scan_number))
        read_rows(d, j);
    j->phase = PH_DONE;
    return SD_OK;
}

/*
 * Which coefficients (natural order, row * 8 + column) libjpeg-turbo's
 * reduced IDCTs read: 1x1 the DC alone; 2x2 rows and columns 0, 1, 3, 5, 7;
 * 4x4 all but row and column 4 (jidctred.c: "don't bother to process
 * column 4 / columns 2, 4, 6"). The full 8x8 reads every one.
 */
static int idct_reads(int scaled_size, int natural)
{
    int row = natural / DCTSIZE, col = natural % DCTSIZE;
    switch (scaled_size) {
    case 1: return natural == 0;
    case 2: return (row < 2 || row % 2 == 1) && (col < 2 || col % 2 == 1);
    case 4: return row != 4 && col != 4;
    default: return 1;
    }
}

/* Zigzag index -> natural index (coef_bits is in zigzag order). */
static const uint8_t zigzag_natural[DCTSIZE2] = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33, 40, 48,
    41, 34, 27, 20, 13, 6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23,
    30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63};

/*
 * How far the scans still to come can move an output sample, in whole
 * levels. For every coefficient a component's (reduced) IDCT reads: the
 * successive-approximation bits it still misses (2^Al - 1 quantized units;
 * a coefficient with no bits yet is unbounded) times its quantizer times
 * the largest value of its basis function at that scale, a(u) a(v) / 8
 * with a(0) = 1 and a(k > 0) = sqrt 2 (the 8x8 IDCT's; libjpeg's reduced
 * ones weigh an AC term at most 1.28 per side, jidctred.c). A component's
 * samples are rounded, so they move by that sum rounded up; YCbCr then goes
 * through the RGB tables (B moves by Y's change + 1.772 Cb's, rounded up),
 * upsampling only averages. Colour managed and CMYK files settle only when
 * nothing can change (a profile may stretch any change). 0 when every
 * coefficient read is final: the rest of the file cannot change the output
 * at this scale at all.
 */
static double settle_bound(const sd__jpeg *j)
{
    const struct jpeg_decompress_struct *c = &j->cinfo;
    double comp[4] = {0, 0, 0, 0};
    for (int ci = 0; ci < c->num_components; ci++) {
        int size = c->comp_info[ci].DCT_scaled_size;
        const JQUANT_TBL *q = c->comp_info[ci].quant_table;
        double sum = 0;
        for (int k = 0; k < DCTSIZE2; k++) {
            int nat = zigzag_natural[k], bits = j->done_bits[ci][k];
            if (bits == 0 || !idct_reads(size, nat))
                continue;
            if (bits < 0 || q == NULL || bits > 13)
                return HUGE_VAL;
            double a = (nat / DCTSIZE ? 1.4142135623730951 : 1.0) * (nat % DCTSIZE ? 1.4142135623730951 : 1.0);
            sum += (double)((1 << bits) - 1) * q->quantval[nat] * a / 8.0;
        }
        comp[ci] = ceil(sum - 1e-9); /* the IDCT rounds each sample */
    }
    double worst = 0;
    for (int ci = 0; ci < c->num_components; ci++)
        worst = fmax(worst, comp[ci]);
    if (worst > 0 && j->managed)
        return HUGE_VAL;
    if (c->num_components == 3 && c->jpeg_color_space == JCS_YCbCr) {
        double r = comp[0] + ceil(1.402 * comp[2] - 1e-9);
        double g = comp[0] + ceil(0.344136 * comp[1] + 0.714136 * comp[2] - 1e-9);
        double b = comp[0] + ceil(1.772 * comp[1] - 1e-9);
        return fmax(r, fmax(g, b));
    }
    return worst;
}

static void snapshot_bits(sd__jpeg *j)
{
    memcpy(j->done_bits, j->cinfo.coef_bits, sizeof(int) * DCTSIZE2 * (size_t)j->cinfo.num_components);
}

/* Drive libjpeg as far as the buffered input allows. */
static int run(sd_decoder *d)
{
    sd__jpeg *j = d->codec_state;
    struct jpeg_decompress_struct *c = &j->cinfo;
    if (setjmp(j->err.jb)) {
        if (j->eoi_in_header || (j->phase == PH_HEADER && j->eof)) {
            sd__decoder_msg(d, "JPEG: input ended inside the header");
            return SD_ETRUNCATED;
        }
        if (j->fake_eoi && j->phase == PH_CONSUME && !j->recovering)
            return recover_truncated(d, j);
        return j->err.code;
    }
    for (;;) {
        switch (j->phase) {
        case PH_HEADER:
            if (jpeg_read_header(c, TRUE) == JPEG_SUSPENDED)
                return SD_OK;
            if (j->eoi_in_header) { /* the header "ended" on our fake EOI */
                sd__decoder_msg(d, "JPEG: input ended inside the header");
                return SD_ETRUNCATED;
            }
            SD__FORWARD_IF_ERROR(on_header(d, j));
            j->phase = PH_START;
            break;
        case PH_START:
            /* libjpeg's arithmetic decoder cannot suspend (JERR_CANT_SUSPEND):
             * such files are buffered whole and decoded at finish(). */
            if (c->arith_code && !j->eof)
                return SD_OK;
            if (!jpeg_start_decompress(c))
                return SD_OK;
            j->phase = c->buffered_image ? PH_CONSUME : PH_ROWS;
            /* scaled, progressive (not arithmetic: that one is read whole
             * at finish) and at most 4 components */
            j->early_stop = c->buffered_image && c->progressive_mode && !c->arith_code && c->coef_bits != NULL &&
                            c->num_components <= 4 && (c->scale_denom > 1 || d->settle_levels > 0);
            if (j->early_stop) /* scan 1 has started: its bits are what the next SOS finds complete */
                snapshot_bits(j);
            break;
        case PH_ROWS:
            if (!read_rows(d, j))
                return SD_OK;
            d->scans = 1;
            j->phase = PH_FINISH;
            break;
        case PH_CONSUME: {
            int r = jpeg_consume_input(c);
            if (r == JPEG_SUSPENDED)
                return SD_OK;
            if (r == JPEG_REACHED_SOS) {
                if (c->input_scan_number > SD__JPEG_MAX_SCANS) {
                    sd__decoder_msg(d, "JPEG: more than %d scans", SD__JPEG_MAX_SCANS);
                    return SD_ECORRUPT;
                }
                d->scans = c->input_scan_number - 1;
                double bound = j->early_stop ? settle_bound(j) : HUGE_VAL;
                if (bound <= (double)d->settle_levels) {
                    /* The completed scans hold what the reduced IDCT reads
                     * to within the tolerance (at 0, every bit: the output
                     * is the whole file's, byte for byte): render them,
                     * read no further (no smoothing, which would look at
                     * the scan just announced). */
                    c->do_block_smoothing = FALSE;
                    d->settled = 1;
                    d->settle_bound = (int64_t)ceil(bound * 100);
                    render_scan(d, j, c->input_scan_number - 1);
                    d->end_reached = 1;
                    j->phase = PH_DONE;
                    return SD_OK;
                }
                if (j->early_stop)
                    snapshot_bits(j);
                maybe_preview(d, j);
            } else if (r == JPEG_REACHED_EOI) {
                d->scans = c->input_scan_number;
                j->phase = PH_FINAL;
            }
            break;
        }
        case PH_FINAL:
            render_scan(d, j, c->input_scan_number);
            j->phase = PH_FINISH;
            break;
        case PH_FINISH:
            if (!jpeg_finish_decompress(c))
                return SD_OK;
            d->end_reached = 1;
            j->phase = PH_DONE;
            return SD_OK;
        default:
            return SD_OK;
        }
    }
}

static int ensure_cap(sd__jpeg *j, size_t need)
{
    if (need <= j->cap)
        return SD_OK;
    size_t cap = SD__MAX(need, j->cap * 2);
    cap = SD__MAX(cap, 4096);
    uint8_t *nb = sd__malloc(cap);
    SD__RETURN_IF(nb == NULL, SD_ENOMEM);
    /* pending bytes may live in the old buffer */
    if (j->src.bytes_in_buffer)
        memcpy(nb, j->src.next_input_byte, j->src.bytes_in_buffer);
    sd__free(j->buf);
    j->buf = nb;
    j->cap = cap;
    j->src.next_input_byte = nb;
    return SD_OK;
}

static int sdj_push(sd_decoder *d, const uint8_t *p, size_t n)
{
    sd__jpeg *j = d->codec_state;
    if (j->skip) {
        size_t k = SD__MIN(j->skip, n);
        p += k;
        n -= k;
        j->skip -= k;
    }
    if (n == 0 || j->phase == PH_DONE)
        return SD_OK;
    size_t keep = j->src.bytes_in_buffer;
    if (keep == 0) {
        /* Nothing pending: let libjpeg read the caller's bytes in place. */
        j->src.next_input_byte = p;
        j->src.bytes_in_buffer = n;
    } else {
        SD__FORWARD_IF_ERROR(ensure_cap(j, keep + n));
        if (j->src.next_input_byte != j->buf)
            memmove(j->buf, j->src.next_input_byte, keep);
        memcpy(j->buf + keep, p, n);
        j->src.next_input_byte = j->buf;
        j->src.bytes_in_buffer = keep + n;
    }
    int rc = run(d);
    /* Carry what libjpeg left unread (it resumes from there). */
    size_t left = j->src.bytes_in_buffer;
    if (rc >= 0 && left > 0 && j->src.next_input_byte >= p &&
        j->src.next_input_byte < p + n) {
        const uint8_t *from = j->src.next_input_byte;
        j->src.bytes_in_buffer = 0;
        SD__FORWARD_IF_ERROR(ensure_cap(j, left));
        memcpy(j->buf, from, left);
        j->src.next_input_byte = j->buf;
        j->src.bytes_in_buffer = left;
    }
    return rc;
}

static int sdj_finish(sd_decoder *d)
{
    sd__jpeg *j = d->codec_state;
    j->eof = 1;
    j->skip = 0;
    if (j->phase != PH_DONE) {
        SD__FORWARD_IF_ERROR(run(d));
        if (j->phase != PH_DONE) {
            sd__decoder_msg(d, "JPEG: decoder stopped before the end of the image");
            return SD_ECORRUPT;
        }
    }
    d->complete = !j->fake_eoi && !j->err.damaged;
    return SD_OK;
}

static int sdj_canvas(sd_decoder *d, int final, sd_bitmap **out, int *owned)
{
    sd__jpeg *j = d->codec_state;
    *owned = 0;
    if (final) {
        SD__RETURN_IF(j->canvas == NULL, SD_EBADSTATE);
        *out = j->canvas;
        *owned = 1;
        j->canvas = NULL;
        return SD_OK;
    }
    switch (j->phase) {
    case PH_HEADER:
    case PH_START:
        return SD_EAGAIN;
    case PH_ROWS:
        SD__RETURN_IF(d->rows == 0, SD_EAGAIN);
        if (!j->rest_cleared) { /* rows decoded later overwrite the zeros */
            size_t from = (size_t)d->rows * j->canvas->stride;
            memset(j->canvas->pixels + from, 0, (size_t)j->canvas->height * j->canvas->stride - from);
            j->rest_cleared = 1;
        }
        break;
    case PH_CONSUME:
        if (!d->previews && j->cinfo.input_scan_number >= 2) {
            if (setjmp(j->err.jb))
                return j->err.code;
            render_scan(d, j, j->cinfo.input_scan_number - 1);
        } else if (d->previews_rendered == 0) {
            return SD_EAGAIN;
        }
        break;
    default:
        break;
    }
    *out = j->canvas;
    return SD_OK;
}

static int sniff_jpeg(const uint8_t *p, size_t n)
{
    static const uint8_t magic[3] = {0xFF, 0xD8, 0xFF};
    return memcmp(p, magic, SD__MIN(n, 3)) != 0 ? 0 : n >= 3 ? 1 : -1;
}

const sd__codec sd__jpeg_codec = {
    SD_FORMAT_JPEG, "JPEG", "image/jpeg", sniff_jpeg,
    SD_CAP_DECODE | SD_CAP_INCREMENTAL | SD_CAP_SCAN_PREVIEWS | SD_CAP_DOWNSCALE | SD_CAP_ENCODE | SD_CAP_ENCODE_QUALITY,
    sdj_init, sdj_push, sdj_finish, sdj_canvas, sdj_destroy, NULL, /* a still: no frame() */
    sd__jpeg_encode,
};
