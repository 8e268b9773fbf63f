/*
 * svg.c - the picture of `wstrace partition --svg`: per device and budget, the layers stacked
 * left to right as one bar against the budget line with the cut marked, and below it what ONNX
 * Runtime's node-level rule charges for the same layers, with where it stops.
 *
 * Scale of a panel: x(b) = LEFT + WIDTH * b / top, top = 1.05 * max(budget, total, ORT's total);
 * a segment is <rect class="seg ..." x="x(start)" width="x(end) - x(start)">, two decimals.
 */
#include "partition.h"

#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "sizes.h"

#define PANEL_H 230
#define WIDTH   1000
#define LEFT    150
#define PLOT_W  700
#define BAR_H   44

static double sx(double top, int64_t b) { return LEFT + PLOT_W * (double)b / top; }

static void segment(FILE *out, double top, int64_t from, int64_t bytes, int y, const char *cls, const char *what,
                    const char *name)
{
    char size[32];
    fprintf(out, "<rect class=\"seg %s\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\"><title>", cls, sx(top, from),
            y, sx(top, ws_sat_add(from, bytes)) - sx(top, from), BAR_H);
    ws_xml_text(out, name);
    fprintf(out, ": %s %s (%lld B)</title></rect>\n", what, ws_format_bytes(bytes, size, sizeof size),
            (long long)bytes);
}

static void marker(FILE *out, double top, int64_t at, int y, const char *cls, const char *label)
{
    double x = sx(top, at);
    fprintf(out, "<line class=\"%s\" x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\"/>\n", cls, x, y - 6, x, y + BAR_H + 6);
    fprintf(out, "<text class=\"mark\" x=\"%.2f\" y=\"%d\"%s>", x, y + BAR_H + 20,
            x > LEFT + PLOT_W / 2 ? " text-anchor=\"end\"" : "");
    ws_xml_text(out, label);
    fputs("</text>\n", out);
}

/* ORT's charges in the order ORT considers the nodes, one segment per stretch of nodes of one
 * layer (or outside every layer), so that where ORT stops falls where the bar says. */
static int64_t ort_segments(FILE *out, const struct ws_part_model *m, const struct ws_part_run *run, double top, int y)
{
    const struct ws_part_result *r = run->result;
    int64_t at = 0, start = 0;
    int32_t group = -2;
    char cls[64];
    for (size_t p = 0; p <= m->ntrace; p++) {
        int last = p == m->ntrace, take = !last && m->nodes[p].executed && run->costs->on_device[p];
        if (!last && !take)
            continue;
        int32_t g = last ? -3 : m->nodes[p].layer;
        if (g != group && group != -2 && at > start && out) {
            const struct ws_part_layer_fit *f = group >= 0 ? &r->layers[group] : NULL;
            snprintf(cls, sizeof cls, "%s",
                     !f                                ? "outside"
                     : f->ort_accepted == f->ort_nodes ? (group % 2 ? "ort fits odd" : "ort fits")
                     : f->ort_accepted                 ? "ort partial"
                                                       : (group % 2 ? "ort off odd" : "ort off"));
            segment(out, top, start, at - start, y, cls, "ORT's charges", f ? m->layers[group].name : "outside");
        }
        if (g != group)
            start = at;
        group = g;
        if (take)
            at = ws_sat_add(at, run->costs->ort[p].cost_bytes);
    }
    return at;
}

static void layers_bar(FILE *out, const struct ws_part_model *m, const struct ws_part_run *run, double top, int y)
{
    const struct ws_part_result *r = run->result;
    char label[128];
    if (r->fixed > 0)
        segment(out, top, 0, r->fixed, y, "outside", "outside every layer", "outside");
    for (size_t l = 0; l < m->nlayers; l++) {
        const struct ws_part_layer_fit *f = &r->layers[l];
        snprintf(label, sizeof label, "%s%s", f->fits ? "fits" : "off", l % 2 ? " odd" : "");
        segment(out, top, f->cumulative - f->cost, f->cost, y, label, "cost", m->layers[l].name);
    }
    snprintf(label, sizeof label, "cut: %zu of %zu layers", r->layers_fit, m->nlayers);
    marker(out, top, r->used, y, "cut", label);
}

static void ort_bar(FILE *out, const struct ws_part_model *m, const struct ws_part_run *run, double top, int y)
{
    const struct ws_part_result *r = run->result;
    char label[160];
    ort_segments(out, m, run, top, y);
    snprintf(label, sizeof label, "ORT stops after %zu of %zu nodes (whole layers: %zu)", r->ort_accepted, r->ort_nodes,
             r->ort_layers_whole);
    marker(out, top, r->ort_consumed, y, "ort-cut", label);
}

static void panel(FILE *out, const struct ws_part_model *m, const struct ws_part_run *run, size_t k)
{
    const struct ws_part_result *r = run->result;
    int64_t ort_total = ort_segments(NULL, m, run, 1, 0);
    int64_t most = r->budget > r->total ? r->budget : r->total;
    double top = 1.05 * (double)(ort_total > most ? ort_total : most);
    char b[32];
    if (top <= 0)
        top = 1;
    fprintf(out,
            "<g class=\"panel\" transform=\"translate(0,%zu)\" data-layers-fit=\"%zu\" data-ort-accepted=\"%zu\">\n",
            k * PANEL_H, r->layers_fit, r->ort_accepted);
    fprintf(out,
            "<text class=\"title\" x=\"20\" y=\"30\">device %d: budget %s (%lld B), %zu of %zu layers fit</text>\n",
            run->costs->view.device, ws_format_bytes(r->budget, b, sizeof b), (long long)r->budget, r->layers_fit,
            m->nlayers);
    fputs("<text class=\"axis\" x=\"20\" y=\"82\">layers</text>\n", out);
    fputs("<text class=\"axis\" x=\"20\" y=\"162\">ORT node rule</text>\n", out);
    layers_bar(out, m, run, top, 55);
    ort_bar(out, m, run, top, 135);
    double x = sx(top, r->budget);
    fprintf(out, "<line class=\"budget\" x1=\"%.2f\" y1=\"45\" x2=\"%.2f\" y2=\"%d\"/>\n", x, x, 135 + BAR_H + 4);
    fprintf(out, "<text class=\"budget-label\" x=\"%.2f\" y=\"42\">budget %s</text>\n</g>\n", x,
            ws_format_bytes(r->budget, b, sizeof b));
}

int ws_part_svg_write(FILE *out, const struct ws_part_model *m, const struct ws_part_run *runs, size_t nruns, char *err,
                      size_t errlen)
{
    fprintf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%zu\" viewBox=\"0 0 %d %zu\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n",
            WIDTH, nruns * PANEL_H + 10, WIDTH, nruns * PANEL_H + 10);
    fputs("<style>.seg{stroke:#fff;stroke-width:0.5}.fits{fill:#3b78b0}.fits.odd{fill:#5b98d0}"
          ".off{fill:#c9ced3}.off.odd{fill:#b3b9bf}.outside{fill:#8a8f96}.ort.fits{fill:#c07a2a}"
          ".ort.fits.odd{fill:#e09a4a}.ort.partial{fill:#e8c27a}.ort.off{fill:#d9d0c4}.ort.off.odd{fill:#cbc1b3}"
          ".budget{stroke:#c0392b;stroke-width:2;stroke-dasharray:6 3}.budget-label{fill:#c0392b}"
          ".cut,.ort-cut{stroke:#111;stroke-width:3}.title{font-size:14px;font-weight:bold}"
          ".mark{fill:#111}.axis{fill:#444}</style>\n",
          out);
    for (size_t k = 0; k < nruns; k++)
        panel(out, m, &runs[k], k);
    fputs("</svg>\n", out);
    if (ferror(out)) {
        snprintf(err, errlen, "write error");
        return -1;
    }
    return 0;
}
