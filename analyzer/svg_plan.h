/*
 * A picture of a static memory layout (wstrace plan --svg): one SVG, one panel per plan stacked
 * vertically, time to the right and the offset in the backing buffer upwards.
 *
 * Scale of a panel (panel coordinates; panel k is translated down by k * WS_SVG_PANEL_HEIGHT):
 *   t0 = smallest lower, t1 = largest upper (t1 = t0 + 1 when there is no block)
 *   top = 1.1 * max(planned peak, load bound, largest live total); 1 when that is 0
 *   x(t) = WS_SVG_PLOT_LEFT + WS_SVG_PLOT_WIDTH * (t - t0) / (t1 - t0)
 *   y(b) = WS_SVG_PLOT_TOP + WS_SVG_PLOT_HEIGHT * (1 - b / top)
 * and a block is <rect class="block ..." x="x(lower)" y="y(offset + size)"
 * width="x(upper) - x(lower)" height="WS_SVG_PLOT_HEIGHT * size / top">, printed with two decimals.
 */
#ifndef WS_SVG_PLAN_H
#define WS_SVG_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define WS_SVG_WIDTH        1000
#define WS_SVG_PANEL_HEIGHT 560
#define WS_SVG_PLOT_LEFT    100
#define WS_SVG_PLOT_TOP     70
#define WS_SVG_PLOT_WIDTH   720
#define WS_SVG_PLOT_HEIGHT  380
/* Above this many blocks a panel draws only the largest ones (the live curve counts all). */
#define WS_SVG_MAX_RECTS 20000

enum ws_svg_class { WS_SVG_PLAIN, WS_SVG_ACTIVATION, WS_SVG_WORKSPACE };

struct ws_svg_block {
    int64_t lower, upper; /* half-open lifetime */
    uint64_t offset, size;
    uint64_t live_bytes; /* what allocating on the fly holds while the block lives (curve of live bytes) */
    enum ws_svg_class cls;
    uint64_t id;      /* problem id, or allocation id for traces */
    const char *name; /* node name, or NULL */
    int64_t slot;
    int has_slot;
};

struct ws_svg_panel {
    const char *title;      /* e.g. "shape key s1, run 1"; escaped when written */
    const char *time_label; /* x axis: "event index" or "time" */
    const struct ws_svg_block *blocks;
    size_t n;
    uint64_t peak_bytes, load_bound_bytes;
    uint64_t alignment;
};

/* Write the whole SVG to out. 0, or -1 with one line in err (out of memory, write error). */
int ws_svg_plan_write(FILE *out, const struct ws_svg_panel *panels, size_t npanels, char *err, size_t errlen);

#endif
