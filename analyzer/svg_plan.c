/* The picture of a layout: blocks as rectangles in time x address, the bounds, and live bytes. */
#include "svg_plan.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "outfile.h"

#define PLOT_RIGHT  (WS_SVG_PLOT_LEFT + WS_SVG_PLOT_WIDTH)
#define PLOT_BOTTOM (WS_SVG_PLOT_TOP + WS_SVG_PLOT_HEIGHT)
/* Above this many changes the live curve keeps the largest value per half pixel. */
#define LIVE_EXACT_POINTS 4000
#define LIVE_BINS         (2 * WS_SVG_PLOT_WIDTH)
#define SIZE_CLASSES      5

/* Tableau-like colours for the two classes, a dark-to-light viridis ramp for size classes
 * (largest darkest): distinct for colour-blind readers and under white block borders. */
static const char style[] =
    "<style>\n"
    "text{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;fill:#222}\n"
    ".title{font-size:16px;font-weight:bold}.sub{font-size:12px;fill:#555}.tick{font-size:11px;fill:#555}\n"
    ".axis{font-size:12px;fill:#333}.legend{font-size:12px}.caption{font-size:11px;fill:#a33}\n"
    ".grid{stroke:#ececec;stroke-width:1}.frame{fill:none;stroke:#888;stroke-width:1}\n"
    ".block{stroke:#fff;stroke-width:0.5}.thin{stroke:none}.block:hover{stroke:#000;stroke-width:1.5}\n"
    ".act{fill:#4e79a7}.ws{fill:#f28e2b}\n"
    ".c0{fill:#3b528b}.c1{fill:#21918c}.c2{fill:#5ec962}.c3{fill:#b5de2b}.c4{fill:#fde725}\n"
    ".live{fill:none;stroke:#222;stroke-width:1.2;stroke-linejoin:round}\n"
    ".lb{stroke:#d62728;stroke-width:1.5;stroke-dasharray:7 4}.peak{stroke:#111;stroke-width:1.5}\n"
    ".lbl{font-size:12px}.lbl.lbt{fill:#d62728}\n"
    "</style>\n";

struct scale {
    double t0, span, top;
};

static double sx(const struct scale *s, double t)
{
    return WS_SVG_PLOT_LEFT + WS_SVG_PLOT_WIDTH * (t - s->t0) / s->span;
}

static double sy(const struct scale *s, double bytes)
{
    return WS_SVG_PLOT_TOP + WS_SVG_PLOT_HEIGHT * (1.0 - bytes / s->top);
}

/* Text as XML character data: markup escaped, bytes outside UTF-8 and control characters
 * (not allowed in XML 1.0) replaced by '?'. */
static void put_text(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = ws_utf8_sequence(p);
        if (n == 0 || (*p < 0x20 && *p != '\n' && *p != '\t')) {
            fputc('?', out);
            p += n ? n : 1;
            continue;
        }
        switch (*p) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        default: fwrite(p, 1, n, out);
        }
        p += n;
    }
}

/* "18.5 KiB", "1.42 GiB", "512 KiB": three significant digits, so that a peak and a bound a few
 * per mille apart read differently; trailing zeros dropped. */
static const char *human(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 6)
        v /= 1024, u++;
    snprintf(buf, len, "%.*f", u == 0 || v >= 100 ? 0 : v >= 10 ? 1 : 2, v);
    char *dot = strchr(buf, '.');
    if (dot) {
        char *end = buf + strlen(buf);
        while (end > dot + 1 && end[-1] == '0')
            *--end = '\0';
        if (end == dot + 1)
            *dot = '\0';
    }
    size_t used = strlen(buf);
    snprintf(buf + used, len - used, " %s", units[u]);
    return buf;
}

/* "1.5 KiB (1536 B)", or "512 B" when that is already exact. */
static const char *exact(uint64_t bytes, char *buf, size_t len)
{
    char h[32];
    human(bytes, h, sizeof h);
    if (bytes < 1024)
        snprintf(buf, len, "%s", h);
    else
        snprintf(buf, len, "%s (%" PRIu64 " B)", h, bytes);
    return buf;
}

/* "62,185" */
static const char *grouped(size_t v, char *buf, size_t len)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%zu", v);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < len; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

/* 1, 2 or 5 times a power of ten, at least raw. */
static double nice_step(double raw)
{
    if (!(raw > 0))
        return 1;
    double p = pow(10, floor(log10(raw)));
    double f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

/* ---- live bytes --------------------------------------------------------------------------- */

struct change {
    int64_t t;
    uint64_t add, sub;
};

static int by_time(const void *a, const void *b)
{
    const struct change *x = a, *y = b;
    return (x->t > y->t) - (x->t < y->t);
}

struct live_curve {
    int64_t *t;  /* distinct change times */
    uint64_t *v; /* live bytes from t[i] to t[i + 1] */
    size_t m;
    uint64_t max;
};

static int live_curve(const struct ws_svg_block *b, size_t n, struct live_curve *c)
{
    memset(c, 0, sizeof *c);
    struct change *ch = malloc(2 * n * sizeof *ch + 1);
    c->t = malloc(2 * n * sizeof *c->t + 1);
    c->v = malloc(2 * n * sizeof *c->v + 1);
    if (!ch || !c->t || !c->v) {
        free(ch);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        ch[2 * i] = (struct change){b[i].lower, b[i].live_bytes, 0};
        ch[2 * i + 1] = (struct change){b[i].upper, 0, b[i].live_bytes};
    }
    qsort(ch, 2 * n, sizeof *ch, by_time);
    /* Half-open lifetimes: every change at one time is applied before the value is read, so a
     * block ending where another starts is never counted twice. Unsigned wrap-around inside one
     * time cancels out. */
    uint64_t live = 0;
    for (size_t i = 0; i < 2 * n;) {
        int64_t t = ch[i].t;
        for (; i < 2 * n && ch[i].t == t; i++)
            live += ch[i].add - ch[i].sub;
        c->t[c->m] = t;
        c->v[c->m++] = live;
        if (live > c->max)
            c->max = live;
    }
    free(ch);
    return 0;
}

static void live_curve_free(struct live_curve *c)
{
    free(c->t);
    free(c->v);
}

static void draw_live(FILE *out, const struct scale *s, const struct live_curve *c)
{
    if (c->m == 0)
        return;
    fprintf(out, "<path class=\"live\" d=\"M%.1f %.1f", sx(s, s->t0), sy(s, 0));
    if (c->m <= LIVE_EXACT_POINTS) {
        for (size_t i = 0; i < c->m; i++)
            fprintf(out, "H%.1fV%.1f", sx(s, (double)c->t[i]), sy(s, (double)c->v[i]));
    } else {
        /* The largest value held in each bin: peaks stay visible, the path stays short. */
        uint64_t bin[LIVE_BINS] = {0};
        for (size_t i = 0; i + 1 < c->m; i++) {
            size_t from = (size_t)((double)LIVE_BINS * ((double)c->t[i] - s->t0) / s->span);
            size_t to = (size_t)((double)LIVE_BINS * ((double)c->t[i + 1] - s->t0) / s->span);
            for (size_t j = from; j <= to && j < LIVE_BINS; j++)
                if (c->v[i] > bin[j])
                    bin[j] = c->v[i];
        }
        for (size_t j = 0; j < LIVE_BINS; j++)
            fprintf(out, "H%.1fV%.1f", WS_SVG_PLOT_LEFT + (double)WS_SVG_PLOT_WIDTH * (double)j / LIVE_BINS,
                    sy(s, (double)bin[j]));
        fprintf(out, "H%.1fV%.1f", sx(s, s->t0 + s->span), sy(s, 0));
    }
    fputs("\"/>\n", out);
}

/* ---- blocks ------------------------------------------------------------------------------- */

/* Size classes for plain blocks: a factor of 4 each, from the power of two below the largest. */
static int size_class(uint64_t size, int top_exp)
{
    if (size == 0)
        return SIZE_CLASSES - 1;
    int e = 63 - __builtin_clzll(size);
    int k = (top_exp - e + 1) / 2;
    return k < 0 ? 0 : k >= SIZE_CLASSES ? SIZE_CLASSES - 1 : k;
}

static uint64_t class_floor(int top_exp, int k)
{
    int e = top_exp - 2 * k;
    return e < 0 ? 1 : (uint64_t)1 << e;
}

/* "≥ 32 MiB", or "< 512 KiB" for the smallest class. */
static const char *size_label(int k, int top_exp, char *buf, size_t len)
{
    char h[32];
    snprintf(buf, len, k == SIZE_CLASSES - 1 ? "< %s" : "\xe2\x89\xa5 %s",
             human(class_floor(top_exp, k == SIZE_CLASSES - 1 ? k - 1 : k), h, sizeof h));
    return buf;
}

static const char *class_css(const struct ws_svg_block *b, int top_exp, char *buf, size_t len)
{
    if (b->cls == WS_SVG_ACTIVATION)
        return "act";
    if (b->cls == WS_SVG_WORKSPACE)
        return "ws";
    snprintf(buf, len, "c%d", size_class(b->size, top_exp));
    return buf;
}

static void draw_tooltip(FILE *out, const struct ws_svg_block *b, const char *time_label, int top_exp)
{
    char h[64], h2[64];
    fputs("<title>", out);
    if (b->cls == WS_SVG_PLAIN) {
        fprintf(out, "block %" PRIu64 "\nsize class ", b->id);
        put_text(out, size_label(size_class(b->size, top_exp), top_exp, h, sizeof h));
    } else {
        put_text(out, b->name ? b->name : "(no node)");
        fprintf(out, "\n%s, ", b->cls == WS_SVG_WORKSPACE ? "workspace" : "activation");
        if (b->has_slot)
            fprintf(out, "slot %" PRId64, b->slot);
        else
            fputs("no slot", out);
        fprintf(out, ", allocation %" PRIu64, b->id);
    }
    fprintf(out, "\n%s", exact(b->size, h, sizeof h));
    if (b->cls != WS_SVG_PLAIN && b->live_bytes != b->size)
        fprintf(out, ", requested %s", exact(b->live_bytes, h2, sizeof h2));
    fprintf(out, "\noffset %" PRIu64 " to %" PRIu64 "\n", b->offset, b->offset + b->size);
    put_text(out, time_label);
    fprintf(out, " [%" PRId64 ", %" PRId64 ")</title>", b->lower, b->upper);
}

struct ranked {
    uint64_t size;
    size_t index;
};

static int larger_first(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->size != y->size)
        return x->size < y->size ? 1 : -1;
    return (x->index > y->index) - (x->index < y->index);
}

/* Which blocks to draw: all of them, or the WS_SVG_MAX_RECTS largest. NULL mask = all. */
static int pick_blocks(const struct ws_svg_panel *p, unsigned char **mask)
{
    *mask = NULL;
    if (p->n <= WS_SVG_MAX_RECTS)
        return 0;
    struct ranked *idx = malloc(p->n * sizeof *idx);
    *mask = calloc(p->n, 1);
    if (!idx || !*mask) {
        free(idx);
        free(*mask);
        *mask = NULL;
        return -1;
    }
    for (size_t i = 0; i < p->n; i++)
        idx[i] = (struct ranked){p->blocks[i].size, i};
    qsort(idx, p->n, sizeof *idx, larger_first);
    for (size_t i = 0; i < WS_SVG_MAX_RECTS; i++)
        (*mask)[idx[i].index] = 1;
    free(idx);
    return 0;
}

static void draw_blocks(FILE *out, const struct ws_svg_panel *p, const struct scale *s, const unsigned char *mask,
                        int top_exp)
{
    fputs("<g>\n", out);
    for (size_t i = 0; i < p->n; i++) {
        const struct ws_svg_block *b = &p->blocks[i];
        if (mask && !mask[i])
            continue;
        char css[8];
        double x0 = sx(s, (double)b->lower), x1 = sx(s, (double)b->upper);
        double h = WS_SVG_PLOT_HEIGHT * (double)b->size / s->top;
        /* A white border would hide a block thinner than two pixels altogether. */
        fprintf(out, "<rect class=\"block %s%s\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\">",
                class_css(b, top_exp, css, sizeof css), h < 2 || x1 - x0 < 2 ? " thin" : "", x0,
                sy(s, (double)b->offset + (double)b->size), x1 - x0, h);
        draw_tooltip(out, b, p->time_label, top_exp);
        fputs("</rect>\n", out);
    }
    fputs("</g>\n", out);
}

/* ---- axes, bounds, legend ----------------------------------------------------------------- */

static void draw_axes(FILE *out, const struct ws_svg_panel *p, const struct scale *s, uint64_t ymax)
{
    /* Byte ticks in the largest binary unit below the top, 1-2-5 steps of that unit. */
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double unit = 1;
    int u = 0;
    while (u < 6 && (double)ymax >= unit * 1024)
        unit *= 1024, u++;
    double step = nice_step((double)ymax / unit / 5) * unit;
    if (step < 1)
        step = 1;
    for (double v = 0; v <= s->top; v += step) {
        double y = sy(s, v);
        fprintf(out, "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>", WS_SVG_PLOT_LEFT, PLOT_RIGHT,
                y, y);
        fprintf(out, "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g %s</text>\n",
                WS_SVG_PLOT_LEFT - 6, y + 4, v / unit, units[u]);
    }
    double tstep = nice_step(s->span / 8);
    if (tstep < 1)
        tstep = 1;
    for (double t = ceil(s->t0 / tstep) * tstep; t <= s->t0 + s->span; t += tstep) {
        double x = sx(s, t);
        fprintf(out, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/>", x, x, WS_SVG_PLOT_TOP,
                PLOT_BOTTOM);
        fprintf(out, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.0f</text>\n", x,
                PLOT_BOTTOM + 16, t);
    }
    fprintf(out, "<text class=\"axis\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">",
            WS_SVG_PLOT_LEFT + WS_SVG_PLOT_WIDTH / 2, PLOT_BOTTOM + 36);
    put_text(out, p->time_label);
    fputs("</text>\n", out);
    fprintf(out,
            "<text class=\"axis\" transform=\"translate(%d %d) rotate(-90)\" text-anchor=\"middle\">offset in the "
            "backing buffer</text>\n",
            24, WS_SVG_PLOT_TOP + WS_SVG_PLOT_HEIGHT / 2);
}

static void draw_bounds(FILE *out, const struct ws_svg_panel *p, const struct scale *s)
{
    char h[32];
    double yp = sy(s, (double)p->peak_bytes), yl = sy(s, (double)p->load_bound_bytes);
    fprintf(out, "<line class=\"lb\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>\n", WS_SVG_PLOT_LEFT, PLOT_RIGHT + 4,
            yl, yl);
    fprintf(out, "<line class=\"peak\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>\n", WS_SVG_PLOT_LEFT,
            PLOT_RIGHT + 4, yp, yp);
    int x = PLOT_RIGHT + 8;
    if (p->peak_bytes == p->load_bound_bytes) {
        fprintf(out, "<text class=\"lbl\" x=\"%d\" y=\"%.1f\">peak = load bound</text>", x, yp - 3);
        fprintf(out, "<text class=\"lbl\" x=\"%d\" y=\"%.1f\">%s</text>\n", x, yp + 12,
                human(p->peak_bytes, h, sizeof h));
        return;
    }
    /* The peak is above the load bound: its label goes up, the bound's down when they are close. */
    double gap = yl - yp, shift = gap < 14 ? (14 - gap) / 2 : 0;
    fprintf(out, "<text class=\"lbl\" x=\"%d\" y=\"%.1f\">planned peak %s</text>", x, yp + 4 - shift,
            human(p->peak_bytes, h, sizeof h));
    fprintf(out, "<text class=\"lbl lbt\" x=\"%d\" y=\"%.1f\">load bound %s</text>\n", x, yl + 4 + shift,
            human(p->load_bound_bytes, h, sizeof h));
}

/* Width of a 12 px label, about 6.4 px per character (UTF-8 continuation bytes do not count). */
static int label_width(const char *s)
{
    int chars = 0;
    for (; *s; s++)
        chars += ((unsigned char)*s & 0xC0) != 0x80;
    return chars * 32 / 5;
}

/* The next legend entry's place; entries wrap to a second row at the right edge. */
struct legend {
    FILE *out;
    int x, y;
};

/* A swatch (css a fill class) or a line sample (is_line) followed by its label. */
static void legend_entry(struct legend *l, const char *css, int is_line, const char *label)
{
    int sample = is_line ? 22 : 12, width = sample + 5 + label_width(label);
    if (l->x > WS_SVG_PLOT_LEFT && l->x + width > WS_SVG_WIDTH - 10)
        l->x = WS_SVG_PLOT_LEFT, l->y += 20;
    if (is_line)
        fprintf(l->out, "<line class=\"%s\" x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/>", css, l->x, l->x + sample,
                l->y - 4, l->y - 4);
    else
        fprintf(l->out, "<rect class=\"%s\" x=\"%d\" y=\"%d\" width=\"12\" height=\"12\"/>", css, l->x, l->y - 10);
    fprintf(l->out, "<text class=\"legend\" x=\"%d\" y=\"%d\">", l->x + sample + 5, l->y);
    put_text(l->out, label);
    fputs("</text>\n", l->out);
    l->x += width + 18;
}

/* Returns the y of the legend's last row. */
static int draw_legend(FILE *out, const struct ws_svg_panel *p, uint64_t live_max, int top_exp)
{
    struct legend l = {out, WS_SVG_PLOT_LEFT, PLOT_BOTTOM + 62};
    char h[32], label[64];
    int plain = 0, used[SIZE_CLASSES] = {0};
    for (size_t i = 0; i < p->n; i++)
        if (p->blocks[i].cls == WS_SVG_PLAIN) {
            plain = 1;
            used[size_class(p->blocks[i].size, top_exp)] = 1;
        }
    if (p->n > 0 && !plain) {
        legend_entry(&l, "act", 0, "activation");
        legend_entry(&l, "ws", 0, "workspace");
    }
    for (int k = 0; plain && k < SIZE_CLASSES; k++) {
        if (!used[k])
            continue;
        char css[8];
        snprintf(css, sizeof css, "c%d", k);
        legend_entry(&l, css, 0, size_label(k, top_exp, label, sizeof label));
    }
    snprintf(label, sizeof label, "live bytes, on the fly (peak %s)", human(live_max, h, sizeof h));
    legend_entry(&l, "live", 1, label);
    legend_entry(&l, "lb", 1, "load bound");
    legend_entry(&l, "peak", 1, "planned peak");
    return l.y;
}

/* ---- panels ------------------------------------------------------------------------------- */

static int draw_panel(FILE *out, const struct ws_svg_panel *p, size_t k)
{
    struct live_curve c;
    unsigned char *mask = NULL;
    if (live_curve(p->blocks, p->n, &c) || pick_blocks(p, &mask)) {
        live_curve_free(&c);
        return -1;
    }
    struct scale s = {0, 1, 1};
    uint64_t largest = 0;
    for (size_t i = 0; i < p->n; i++) {
        const struct ws_svg_block *b = &p->blocks[i];
        if (i == 0 || (double)b->lower < s.t0)
            s.t0 = (double)b->lower;
        if (b->size > largest)
            largest = b->size;
    }
    double t1 = s.t0 + 1;
    for (size_t i = 0; i < p->n; i++)
        if ((double)p->blocks[i].upper > t1)
            t1 = (double)p->blocks[i].upper;
    s.span = t1 - s.t0;
    uint64_t ymax = p->peak_bytes;
    if (p->load_bound_bytes > ymax)
        ymax = p->load_bound_bytes;
    if (c.max > ymax)
        ymax = c.max;
    s.top = ymax ? 1.1 * (double)ymax : 1;
    int top_exp = largest ? 63 - __builtin_clzll(largest) : 0;

    char h1[32], h2[32];
    fprintf(out, "<g class=\"panel\" transform=\"translate(0 %zu)\">\n", k * (size_t)WS_SVG_PANEL_HEIGHT);
    fprintf(out, "<text class=\"title\" x=\"%d\" y=\"28\">", WS_SVG_PLOT_LEFT);
    put_text(out, p->title);
    fputs("</text>\n", out);
    fprintf(out,
            "<text class=\"sub\" x=\"%d\" y=\"48\">%zu blocks, %" PRIu64 "-byte aligned \xc2\xb7 planned peak %s "
            "(%" PRIu64 " B) / load bound %s (%" PRIu64 " B) = %.4f</text>\n",
            WS_SVG_PLOT_LEFT, p->n, p->alignment ? p->alignment : 1, human(p->peak_bytes, h1, sizeof h1), p->peak_bytes,
            human(p->load_bound_bytes, h2, sizeof h2), p->load_bound_bytes,
            p->load_bound_bytes ? (double)p->peak_bytes / (double)p->load_bound_bytes : 1.0);
    draw_axes(out, p, &s, ymax);
    draw_blocks(out, p, &s, mask, top_exp);
    draw_live(out, &s, &c);
    draw_bounds(out, p, &s);
    fprintf(out, "<rect class=\"frame\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n", WS_SVG_PLOT_LEFT,
            WS_SVG_PLOT_TOP, WS_SVG_PLOT_WIDTH, WS_SVG_PLOT_HEIGHT);
    if (p->n == 0)
        fprintf(out, "<text class=\"axis\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">no blocks</text>\n",
                WS_SVG_PLOT_LEFT + WS_SVG_PLOT_WIDTH / 2, WS_SVG_PLOT_TOP + WS_SVG_PLOT_HEIGHT / 2);
    int y = draw_legend(out, p, c.max, top_exp);
    if (mask || c.m > LIVE_EXACT_POINTS) {
        char shown[32], all[32];
        fprintf(out, "<text class=\"caption\" x=\"%d\" y=\"%d\">", WS_SVG_PLOT_LEFT, y + 22);
        if (mask)
            fprintf(out, "Drawn: the %s largest of %s blocks (the live bytes and the bounds count all). ",
                    grouped(WS_SVG_MAX_RECTS, shown, sizeof shown), grouped(p->n, all, sizeof all));
        if (c.m > LIVE_EXACT_POINTS)
            fputs("Live bytes: the largest value in each half pixel.", out);
        fputs("</text>\n", out);
    }
    fputs("</g>\n", out);
    free(mask);
    live_curve_free(&c);
    return 0;
}

int ws_svg_plan_write(FILE *out, const struct ws_svg_panel *panels, size_t npanels, char *err, size_t errlen)
{
    size_t height = (npanels ? npanels : 1) * (size_t)WS_SVG_PANEL_HEIGHT;
    fprintf(out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%zu\" viewBox=\"0 0 %d %zu\">\n",
            WS_SVG_WIDTH, height, WS_SVG_WIDTH, height);
    fputs(style, out);
    fprintf(out, "<rect class=\"background\" width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n");
    for (size_t k = 0; k < npanels; k++)
        if (draw_panel(out, &panels[k], k)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    fputs("</svg>\n", out);
    if (ferror(out)) {
        snprintf(err, errlen, "write failed");
        return -1;
    }
    return 0;
}
