/* gtk_gallery — a scrolling grid of images from URLs, in C on GTK 4 and
 * libsdcore. The transfer loop runs in dispatch mode: its descriptor is a
 * GLib source, so every callback runs on GTK's main thread and the program
 * has no thread of its own. Bitmaps go to the screen as they are:
 * premultiplied ARGB32 in native byte order is GDK's B8G8R8A8_PREMULTIPLIED
 * on little-endian machines, wrapped without a copy.
 *
 *   gtk_gallery --list URLS.txt [--cell 128] [--width 700] [--height 540]
 *               [--timeout SECONDS] [--layout FILE]
 *
 * --timeout bounds each image's whole transfer (the library's default, 15 s,
 * when not given; 0: none). `make gallery-check` holds one image back for as
 * long as its checks take, and gives a long one.
 *
 * Cells are recycled while scrolling (GtkGridView): a cell asks for its
 * image when bound and cancels the request when unbound, and a result is
 * shown only in the cell bound to its index at that moment, so a reused
 * cell never shows the previous image. A spinner turns over a cell while
 * its image is on the way. --layout writes, after every frame painted,
 * where each visible cell is, whether its image is on screen and the size
 * decoded for it (`make gallery-check` reads it). */
#include <glib-unix.h>
#include <gtk/gtk.h>
#include <sdcore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    GtkWidget *box, *picture, *spinner;
    guint index;
    gboolean bound, loaded;
    sd_transfer_id id; /* the request in flight, 0 when none */
} Cell;

static sd_loop *loop;
static GtkStringList *urls;
static GHashTable *bound_cells; /* index -> Cell*: the cell showing that index now */
static GHashTable *textures;    /* index -> GdkTexture*: images already decoded */
static int cell_size = 128;
static long timeout_s = -1; /* -1: the library's default */
static const char *layout_path;
static GtkWidget *window, *scroller;
static int failures;

static GdkTexture *texture_from(sd_bitmap *bmp)
{
#if G_BYTE_ORDER == G_LITTLE_ENDIAN
    GdkMemoryFormat format = GDK_MEMORY_B8G8R8A8_PREMULTIPLIED;
#else
    GdkMemoryFormat format = GDK_MEMORY_A8R8G8B8_PREMULTIPLIED;
#endif
    size_t stride = sd_bitmap_stride(bmp);
    /* the bytes stay the bitmap's: freed with it when GDK drops the texture */
    GBytes *bytes = g_bytes_new_with_free_func(sd_bitmap_pixels(bmp), stride * sd_bitmap_height(bmp),
                                               (GDestroyNotify)sd_bitmap_free, bmp);
    GdkTexture *t = gdk_memory_texture_new((int)sd_bitmap_width(bmp), (int)sd_bitmap_height(bmp), format, bytes,
                                           stride);
    g_bytes_unref(bytes);
    return t;
}

/* Whether the cell's spinner turns (its image is on the way). */
static void set_waiting(Cell *c, gboolean waiting)
{
    gtk_spinner_set_spinning(GTK_SPINNER(c->spinner), waiting);
    gtk_widget_set_visible(c->spinner, waiting);
}

static void show(Cell *c, GdkTexture *t)
{
    gtk_picture_set_paintable(GTK_PICTURE(c->picture), GDK_PAINTABLE(t));
    if (t)
        set_waiting(c, FALSE);
    /* HiDPI: the texture holds scale x the cell's logical pixels; shown at
     * its logical size, GTK draws every one of them */
    int scale = gtk_widget_get_scale_factor(c->picture);
    if (t)
        gtk_widget_set_size_request(c->picture, gdk_texture_get_width(t) / scale, gdk_texture_get_height(t) / scale);
    c->loaded = t != NULL;
}

/* On GTK's main thread (dispatched): the image of `index` is in. */
static void on_complete(sd_transfer_id id, sd_result *r, void *user)
{
    guint index = GPOINTER_TO_UINT(user);
    Cell *c = g_hash_table_lookup(bound_cells, GUINT_TO_POINTER(index));
    if (c && c->id == id)
        c->id = 0;
    sd_bitmap *bmp = sd_result_take_bitmap(r);
    if (bmp) {
        GdkTexture *t = texture_from(bmp);
        g_hash_table_replace(textures, GUINT_TO_POINTER(index), t);
        if (c) /* only the cell bound to this index now */
            show(c, t);
    } else if (sd_result_status(r) != SD_ECANCELLED) {
        if (c)
            set_waiting(c, FALSE);
        fprintf(stderr, "gallery: image %u: %s: %s\n", index, sd_strerror(sd_result_status(r)), sd_result_message(r));
        failures++;
    }
    sd_result_free(r);
}

static gboolean on_loop_fd(gint fd, GIOCondition cond, gpointer data)
{
    (void)fd;
    (void)cond;
    (void)data;
    sd_loop_dispatch(loop, 0);
    return G_SOURCE_CONTINUE;
}

static void setup_cell(GtkSignalListItemFactory *f, GtkListItem *item, gpointer data)
{
    (void)f;
    (void)data;
    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0);
    gtk_widget_set_size_request(box, cell_size, cell_size);
    Cell *c = g_new0(Cell, 1);
    c->picture = gtk_picture_new();
    gtk_picture_set_can_shrink(GTK_PICTURE(c->picture), TRUE); /* to its logical size on HiDPI */
    gtk_widget_set_halign(c->picture, GTK_ALIGN_CENTER);
    gtk_widget_set_valign(c->picture, GTK_ALIGN_CENTER);
    gtk_widget_set_vexpand(c->picture, TRUE);
    /* the spinner over the picture, centred in the cell */
    GtkWidget *overlay = gtk_overlay_new();
    gtk_widget_set_vexpand(overlay, TRUE);
    gtk_overlay_set_child(GTK_OVERLAY(overlay), c->picture);
    c->spinner = gtk_spinner_new();
    gtk_widget_set_size_request(c->spinner, 32, 32);
    gtk_widget_set_halign(c->spinner, GTK_ALIGN_CENTER);
    gtk_widget_set_valign(c->spinner, GTK_ALIGN_CENTER);
    gtk_widget_set_visible(c->spinner, FALSE);
    gtk_overlay_add_overlay(GTK_OVERLAY(overlay), c->spinner);
    gtk_box_append(GTK_BOX(box), overlay);
    c->box = box;
    gtk_list_item_set_child(item, box);
    g_object_set_data_full(G_OBJECT(item), "cell", c, g_free);
}

static void bind_cell(GtkSignalListItemFactory *f, GtkListItem *item, gpointer data)
{
    (void)f;
    (void)data;
    Cell *c = g_object_get_data(G_OBJECT(item), "cell");
    c->index = gtk_list_item_get_position(item);
    c->bound = TRUE;
    g_hash_table_replace(bound_cells, GUINT_TO_POINTER(c->index), c);
    GdkTexture *t = g_hash_table_lookup(textures, GUINT_TO_POINTER(c->index));
    show(c, t); /* NULL: the empty cell until the image comes */
    if (t)
        return;
    sd_request *req;
    const char *url = gtk_string_list_get_string(urls, c->index);
    if (sd_request_new(url, &req) != SD_OK)
        return;
    /* a thumbnail, decoded small: the cell's size in device pixels (HiDPI: times the scale factor) */
    sd_request_set_decoder_param(req, SD_DEC_MAX_PIXEL_SIZE, cell_size * gtk_widget_get_scale_factor(c->picture));
    sd_request_set(req, SD_REQ_PRIORITY, SD_PRIORITY_HIGH);
    if (timeout_s >= 0)
        sd_request_set(req, SD_REQ_TIMEOUT_MS, (int64_t)timeout_s * 1000);
    sd_transfer_events ev = SD_TRANSFER_EVENTS_INIT;
    ev.complete = on_complete;
    if (sd_loop_submit(loop, req, &ev, GUINT_TO_POINTER(c->index), &c->id) != SD_OK)
        c->id = 0;
    set_waiting(c, c->id != 0);
    sd_request_free(req);
}

static void unbind_cell(GtkSignalListItemFactory *f, GtkListItem *item, gpointer data)
{
    (void)f;
    (void)data;
    Cell *c = g_object_get_data(G_OBJECT(item), "cell");
    if (c->id) /* scrolled away before it came: no need for it now */
        sd_loop_cancel(loop, c->id);
    c->id = 0;
    if (g_hash_table_lookup(bound_cells, GUINT_TO_POINTER(c->index)) == c)
        g_hash_table_remove(bound_cells, GUINT_TO_POINTER(c->index));
    c->bound = FALSE;
    show(c, NULL);
    set_waiting(c, FALSE);
}

/* After each painted frame, every cell in view: where its picture is (window
 * coordinates), whether its image is on screen, the size of the bitmap
 * decoded for it (0 0 until then), device pixels per window unit and the
 * cell's own rectangle:
 * `cell INDEX X Y W H LOADED DECODED_W DECODED_H SCALE BOX_X BOX_Y BOX_W BOX_H URL`. */
static void write_layout(GdkFrameClock *clock, gpointer data)
{
    (void)clock;
    (void)data;
    if (!layout_path)
        return;
    graphene_rect_t view;
    if (!gtk_widget_compute_bounds(scroller, window, &view))
        return;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", layout_path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    fprintf(f, "viewport %d %d %d %d failures %d\n", (int)view.origin.x, (int)view.origin.y, (int)view.size.width,
            (int)view.size.height, failures);
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, bound_cells);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        Cell *c = v;
        graphene_rect_t r, b;
        if (!gtk_widget_compute_bounds(c->picture, window, &r) || !gtk_widget_compute_bounds(c->box, window, &b)
            || !graphene_rect_intersection(&b, &view, NULL))
            continue;
        GdkPaintable *p = gtk_picture_get_paintable(GTK_PICTURE(c->picture));
        int dw = c->loaded && GDK_IS_TEXTURE(p) ? gdk_texture_get_width(GDK_TEXTURE(p)) : 0;
        int dh = c->loaded && GDK_IS_TEXTURE(p) ? gdk_texture_get_height(GDK_TEXTURE(p)) : 0;
        fprintf(f, "cell %u %d %d %d %d %d %d %d %d %d %d %d %d %s\n", c->index, (int)r.origin.x, (int)r.origin.y,
                (int)r.size.width, (int)r.size.height, c->loaded, dw, dh, gtk_widget_get_scale_factor(c->picture),
                (int)b.origin.x, (int)b.origin.y, (int)b.size.width, (int)b.size.height,
                gtk_string_list_get_string(urls, c->index));
    }
    fclose(f);
    rename(tmp, layout_path);
}

static void on_realize(GtkWidget *w, gpointer data)
{
    (void)data;
    g_signal_connect(gtk_widget_get_frame_clock(w), "after-paint", G_CALLBACK(write_layout), NULL);
}

static gboolean quit_requested;
static gboolean on_close(GtkWindow *w, gpointer data)
{
    (void)w;
    (void)data;
    quit_requested = TRUE;
    return FALSE;
}

int main(int argc, char **argv)
{
    const char *list = NULL;
    int width = 700, height = 540;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--list")) list = argv[i + 1];
        else if (!strcmp(argv[i], "--cell")) cell_size = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--width")) width = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--height")) height = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--layout")) layout_path = argv[i + 1];
        else if (!strcmp(argv[i], "--timeout")) timeout_s = atol(argv[i + 1]);
    }
    if (!list || cell_size < 16 || timeout_s < -1 || timeout_s > 86400) {
        fprintf(stderr, "usage: gtk_gallery --list URLS.txt [--cell 128] [--width W] [--height H] [--timeout SECONDS] "
                        "[--layout FILE]\n");
        return 2;
    }
    char *text;
    if (!g_file_get_contents(list, &text, NULL, NULL)) {
        fprintf(stderr, "gallery: cannot read %s\n", list);
        return 1;
    }
    urls = gtk_string_list_new(NULL);
    char **lines = g_strsplit(text, "\n", -1);
    for (char **p = lines; *p; p++)
        if (**p)
            gtk_string_list_append(urls, *p);
    g_strfreev(lines);
    g_free(text);

    if (sd_loop_new(&loop) != SD_OK || sd_loop_use_decoder(loop, 0) != SD_OK
        || sd_loop_set(loop, SD_LOOP_DISPATCH, 1) != SD_OK || sd_loop_set(loop, SD_LOOP_ORDER, SD_ORDER_LIFO) != SD_OK
        || sd_loop_start(loop) != SD_OK) {
        fprintf(stderr, "gallery: cannot start the transfer loop\n");
        return 1;
    }
    gtk_init();
    int fd;
    sd_loop_dispatch_fd(loop, &fd);
    g_unix_fd_add(fd, G_IO_IN, on_loop_fd, NULL); /* callbacks on this thread, when ready */
    bound_cells = g_hash_table_new(NULL, NULL);
    textures = g_hash_table_new_full(NULL, NULL, NULL, g_object_unref);

    GtkCssProvider *css = gtk_css_provider_new();
    /* one flat background (the check composites over it); no hover, focus
     * or scroll-edge shading over the images */
    gtk_css_provider_load_from_data(css,
                                    "* { background: #203040; box-shadow: none; outline: none; }"
                                    " spinner { color: #e0e0e0; background: none; }"
                                    " undershoot, overshoot { background: none; }",
                                    -1);
    gtk_style_context_add_provider_for_display(gdk_display_get_default(), GTK_STYLE_PROVIDER(css),
                                               GTK_STYLE_PROVIDER_PRIORITY_APPLICATION);
    GtkListItemFactory *factory = gtk_signal_list_item_factory_new();
    g_signal_connect(factory, "setup", G_CALLBACK(setup_cell), NULL);
    g_signal_connect(factory, "bind", G_CALLBACK(bind_cell), NULL);
    g_signal_connect(factory, "unbind", G_CALLBACK(unbind_cell), NULL);
    GtkWidget *grid = gtk_grid_view_new(GTK_SELECTION_MODEL(gtk_no_selection_new(G_LIST_MODEL(urls))), factory);
    gtk_grid_view_set_max_columns(GTK_GRID_VIEW(grid), 32);
    window = gtk_window_new();
    gtk_window_set_title(GTK_WINDOW(window), "sd gallery");
    gtk_window_set_decorated(GTK_WINDOW(window), FALSE);
    gtk_window_set_default_size(GTK_WINDOW(window), width, height);
    scroller = gtk_scrolled_window_new();
    gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(scroller), grid);
    gtk_window_set_child(GTK_WINDOW(window), scroller);
    g_signal_connect(window, "realize", G_CALLBACK(on_realize), NULL);
    g_signal_connect(window, "close-request", G_CALLBACK(on_close), NULL);
    gtk_window_present(GTK_WINDOW(window));
    while (!quit_requested && g_list_model_get_n_items(gtk_window_get_toplevels()) > 0)
        g_main_context_iteration(NULL, TRUE);
    sd_loop_free(loop); /* runs the last (cancelled) completes here */
    g_hash_table_destroy(textures);
    g_hash_table_destroy(bound_cells);
    return failures ? 1 : 0;
}
