/*
 * The data embedded in the page: one JSON document (in a script element of type
 * application/json) and the allocations in compressed chunks of time (script elements of type
 * application/octet-stream, base64 of zlib data that the page inflates with the browser's
 * DecompressionStream).  Names may hold any bytes, "</script>" included: JSON strings are
 * written with '<', '>' and '&' escaped, so the document can never close its element, and bytes
 * that are not UTF-8 are shown as \xNN.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "outfile.h"
#include "progress.h"
#include "version.h"
#include "view.h"

#define DEFAULT_CHUNK 65536

/* ---- JSON for an HTML script element ---- */

static void put_string(FILE *out, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', out);
    while (*p) {
        size_t n = ws_utf8_sequence(p);
        if (n == 0) { /* not UTF-8: the byte, visibly */
            fprintf(out, "\\\\x%c%c", hex[*p >> 4], hex[*p & 15]);
            p++;
            continue;
        }
        unsigned c = *p;
        if (n == 3 && p[0] == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9)) {
            fprintf(out, "\\u%04x", p[2] == 0xA8 ? 0x2028u : 0x2029u); /* line separators of old JS */
        } else if (n > 1) {
            fwrite(p, 1, n, out);
        } else if (c == '"' || c == '\\') {
            fputc('\\', out);
            fputc((int)c, out);
        } else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7F) {
            fprintf(out, "\\u%04x", c);
        } else {
            fputc((int)c, out);
        }
        p += n;
    }
    fputc('"', out);
}

static void put_key(FILE *out, const char *key, int *first)
{
    if (!*first)
        fputc(',', out);
    *first = 0;
    put_string(out, key);
    fputc(':', out);
}

static void put_int(FILE *out, int64_t v) { fprintf(out, "%lld", (long long)v); }

static void put_hex(FILE *out, uint64_t v) { fprintf(out, "\"0x%llx\"", (unsigned long long)v); }

static void put_value(FILE *out, sqlite3_value *v)
{
    switch (sqlite3_value_type(v)) {
    case SQLITE_INTEGER: put_int(out, sqlite3_value_int64(v)); break;
    case SQLITE_FLOAT: fprintf(out, "%.17g", sqlite3_value_double(v)); break;
    case SQLITE_NULL: fputs("null", out); break;
    default: put_string(out, (const char *)sqlite3_value_text(v)); break;
    }
}

/* ---- base64 of zlib data ---- */

static void put_base64(FILE *out, const unsigned char *p, size_t n)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char line[4 * 1024 + 4];
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        line[o++] = b64[v >> 18 & 63];
        line[o++] = b64[v >> 12 & 63];
        line[o++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
        line[o++] = i + 2 < n ? b64[v & 63] : '=';
        if (o >= sizeof line - 4) {
            fwrite(line, 1, o, out);
            o = 0;
        }
    }
    fwrite(line, 1, o, out);
}

/* zlib-compress p (n bytes) and write it as base64; -1 when memory runs out. */
static int put_deflated(FILE *out, const unsigned char *p, size_t n)
{
    uLongf len = compressBound((uLong)n);
    unsigned char *z = malloc(len + 1);
    if (!z)
        return -1;
    if (compress2(z, &len, p, (uLong)n, 6) != Z_OK) {
        free(z);
        return -1;
    }
    put_base64(out, z, len);
    free(z);
    return 0;
}

struct bytes {
    unsigned char *p;
    size_t n, cap;
    int failed;
};

static void put_varint(struct bytes *b, uint64_t v)
{
    if (b->n + 10 > b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 1 << 16;
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    while (v >= 0x80) {
        b->p[b->n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    b->p[b->n++] = (unsigned char)v;
}

static uint64_t zigzag(int64_t v) { return v < 0 ? ((uint64_t)(-(v + 1)) << 1) | 1 : (uint64_t)v << 1; }

/* ---- the live-bytes sweep: peaks, the nodes and layers worth a band of their own, bands ---- */

struct event {
    int64_t ns;
    uint32_t alloc, is_free;
};

static int event_cmp(const void *a, const void *b)
{
    const struct event *x = a, *y = b;
    if (x->ns != y->ns)
        return x->ns < y->ns ? -1 : 1;
    if (x->is_free != y->is_free) /* allocations first at equal times, as the live_bytes view */
        return x->is_free < y->is_free ? -1 : 1;
    return (x->alloc > y->alloc) - (x->alloc < y->alloc);
}

struct sweep {
    struct event *ev;
    size_t nev;
    int32_t *top_nodes, *top_layers; /* node/layer -> band, -1: "others" */
    size_t ntop_nodes, ntop_layers;
    int32_t *node_band, *layer_band;
    size_t nnode_bands, nlayer_bands; /* top + others + none */
    size_t width;                     /* values per bin: total, classes, node bands, layer bands */
    int64_t **bins;                   /* per device, VIEW_BINS * width */
};

static int build_events(const struct view_model *m, struct sweep *s)
{
    s->ev = malloc((2 * m->nallocs + 1) * sizeof *s->ev);
    if (!s->ev)
        return -1;
    for (size_t i = 0; i < m->nallocs; i++) {
        if (m->allocs[i].region) /* inside an allocation that is counted already */
            continue;
        s->ev[s->nev++] = (struct event){m->allocs[i].alloc_ns, (uint32_t)i, 0};
        if (m->allocs[i].free_ns != WS_NS_NEVER)
            s->ev[s->nev++] = (struct event){m->allocs[i].free_ns, (uint32_t)i, 1};
    }
    qsort(s->ev, s->nev, sizeof *s->ev, event_cmp);
    return 0;
}

static const int64_t *rank_peak;
static int rank_cmp(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (rank_peak[x] != rank_peak[y])
        return rank_peak[x] > rank_peak[y] ? -1 : 1;
    return (x > y) - (x < y);
}

/* The k names with the largest peak of live bytes; band[name] = their rank, -1 for the rest. */
static int choose_top(const int64_t *peak, size_t n, size_t k, int32_t **top, size_t *ntop, int32_t **band)
{
    int32_t *order = malloc((n + 1) * sizeof *order);
    *band = malloc((n + 1) * sizeof **band);
    *top = malloc((k + 1) * sizeof **top);
    if (!order || !*band || !*top) {
        free(order);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        order[i] = (int32_t)i;
        (*band)[i] = -1;
    }
    rank_peak = peak;
    qsort(order, n, sizeof *order, rank_cmp);
    *ntop = 0;
    for (size_t i = 0; i < n && *ntop < k && peak[order[i]] > 0; i++) {
        (*band)[order[i]] = (int32_t)*ntop;
        (*top)[(*ntop)++] = order[i];
    }
    free(order);
    return 0;
}

/* First pass: each device's peak (and when it is first reached), each node's and layer's peak. */
static int first_pass(struct view_model *m, struct sweep *s)
{
    size_t nn = m->have_analysis ? m->an.nnodes : 0, nl = m->nlayers;
    int64_t *live_node = calloc(nn + 1, sizeof *live_node), *peak_node = calloc(nn + 1, sizeof *peak_node);
    int64_t *live_layer = calloc(nl + 1, sizeof *live_layer), *peak_layer = calloc(nl + 1, sizeof *peak_layer);
    int64_t *live_dev = calloc(m->ndevices + 1, sizeof *live_dev);
    int rc = -1;
    if (!live_node || !peak_node || !live_layer || !peak_layer || !live_dev)
        goto out;
    for (size_t d = 0; d < m->ndevices; d++)
        m->devices[d].peak = 0, m->devices[d].peak_ns = m->t0;
    for (size_t k = 0; k < s->nev; k++) {
        const struct view_alloc *a = &m->allocs[s->ev[k].alloc];
        int64_t delta = s->ev[k].is_free ? -a->bytes : a->bytes;
        struct view_device *dev = &m->devices[a->device];
        live_dev[a->device] += delta;
        if (live_dev[a->device] > dev->peak) {
            dev->peak = live_dev[a->device];
            dev->peak_ns = s->ev[k].ns;
        }
        if (a->node >= 0 && (live_node[a->node] += delta) > peak_node[a->node])
            peak_node[a->node] = live_node[a->node];
        if (a->layer >= 0 && (live_layer[a->layer] += delta) > peak_layer[a->layer])
            peak_layer[a->layer] = live_layer[a->layer];
    }
    if (choose_top(peak_node, nn, VIEW_TOP_NODES, &s->top_nodes, &s->ntop_nodes, &s->node_band) != 0 ||
        choose_top(peak_layer, nl, VIEW_TOP_LAYERS, &s->top_layers, &s->ntop_layers, &s->layer_band) != 0)
        goto out;
    s->nnode_bands = s->ntop_nodes + 2; /* ..., other nodes, no node */
    s->nlayer_bands = s->ntop_layers + 2;
    s->width = 1 + VIEW_CLASSES + s->nnode_bands + s->nlayer_bands;
    rc = 0;
out:
    free(live_node);
    free(peak_node);
    free(live_layer);
    free(peak_layer);
    free(live_dev);
    return rc;
}

static size_t bin_of(const struct view_model *m, int64_t ns)
{
    double f = (double)(ns - m->t0) / (double)(m->t1 - m->t0 + 1);
    size_t b = (size_t)(f * VIEW_BINS);
    return b >= VIEW_BINS ? VIEW_BINS - 1 : b;
}

/* Second pass: per device and time bin, the live bytes at the bin's highest moment, split by
 * class, node band and layer band: the stacks of a bin add up to its true maximum. */
static int band_pass(const struct view_model *m, struct sweep *s)
{
    size_t w = s->width;
    int64_t *state = calloc(m->ndevices * w + 1, sizeof *state);
    long *filled = malloc((m->ndevices + 1) * sizeof *filled);
    s->bins = calloc(m->ndevices + 1, sizeof *s->bins);
    if (!state || !filled || !s->bins)
        goto fail;
    for (size_t d = 0; d < m->ndevices; d++) {
        filled[d] = -1;
        if (!(s->bins[d] = calloc((size_t)VIEW_BINS * w, sizeof **s->bins)))
            goto fail;
    }
    for (size_t k = 0; k < s->nev; k++) {
        const struct view_alloc *a = &m->allocs[s->ev[k].alloc];
        int64_t delta = s->ev[k].is_free ? -a->bytes : a->bytes, *st = &state[(size_t)a->device * w];
        int64_t *bins = s->bins[a->device];
        long b = (long)bin_of(m, s->ev[k].ns);
        for (; filled[a->device] < b; filled[a->device]++) /* bins without a change hold the state */
            memcpy(&bins[(size_t)(filled[a->device] + 1) * w], st, w * sizeof *st);
        st[0] += delta;
        st[1 + a->cls] += delta;
        int32_t nb = a->node < 0 ? (int32_t)s->nnode_bands - 1
                                 : (s->node_band[a->node] < 0 ? (int32_t)s->ntop_nodes : s->node_band[a->node]);
        st[1 + VIEW_CLASSES + nb] += delta;
        int32_t lb = a->layer < 0 ? (int32_t)s->nlayer_bands - 1
                                  : (s->layer_band[a->layer] < 0 ? (int32_t)s->ntop_layers : s->layer_band[a->layer]);
        st[1 + VIEW_CLASSES + s->nnode_bands + lb] += delta;
        if (st[0] > bins[(size_t)b * w])
            memcpy(&bins[(size_t)b * w], st, w * sizeof *st);
    }
    for (size_t d = 0; d < m->ndevices; d++)
        for (; filled[d] < VIEW_BINS - 1; filled[d]++)
            memcpy(&s->bins[d][(size_t)(filled[d] + 1) * w], &state[d * w], w * sizeof *state);
    free(state);
    free(filled);
    return 0;
fail:
    free(state);
    free(filled);
    return -1;
}

static void sweep_free(const struct view_model *m, struct sweep *s)
{
    free(s->ev);
    free(s->top_nodes);
    free(s->top_layers);
    free(s->node_band);
    free(s->layer_band);
    if (s->bins)
        for (size_t d = 0; d < m->ndevices; d++)
            free(s->bins[d]);
    free(s->bins);
}

/* ---- the blocks' overview: occupancy per time x address cell ---- */

/* Per cell the dominant class (top three bits) and the share of the cell's time x bytes in use
 * (0..31, at least 1 when anything is there).  Regions lie in allocations drawn already. */
static int heat_map(const struct view_model *m, size_t device, unsigned char *cells)
{
    float *area = calloc((size_t)VIEW_HEAT_T * VIEW_HEAT_Y * VIEW_CLASSES, sizeof *area);
    if (!area)
        return -1;
    const struct view_device *dev = &m->devices[device];
    double tspan = (double)(m->t1 - m->t0 + 1), yspan = (double)dev->yspan;
    for (size_t i = 0; i < m->nallocs; i++) {
        const struct view_alloc *a = &m->allocs[i];
        if (a->device != (int32_t)device || a->region)
            continue;
        int64_t end = a->free_ns == WS_NS_NEVER ? m->t1 : a->free_ns;
        double x0 = (double)(a->alloc_ns - m->t0) / tspan * VIEW_HEAT_T;
        double x1 = (double)(end - m->t0) / tspan * VIEW_HEAT_T;
        double y0 = (double)a->y / yspan * VIEW_HEAT_Y, y1 = (double)(a->y + (uint64_t)a->bytes) / yspan * VIEW_HEAT_Y;
        if (x1 <= x0)
            x1 = x0 + 1e-9;
        if (y1 <= y0)
            y1 = y0 + 1e-9;
        for (int cx = (int)x0; cx < VIEW_HEAT_T && cx <= (int)x1; cx++) {
            double ox = (x1 < cx + 1 ? x1 : cx + 1) - (x0 > cx ? x0 : cx);
            if (ox <= 0)
                continue;
            for (int cy = (int)y0; cy < VIEW_HEAT_Y && cy <= (int)y1; cy++) {
                double oy = (y1 < cy + 1 ? y1 : cy + 1) - (y0 > cy ? y0 : cy);
                if (oy > 0)
                    area[((size_t)cx * VIEW_HEAT_Y + (size_t)cy) * VIEW_CLASSES + a->cls] += (float)(ox * oy);
            }
        }
    }
    for (size_t c = 0; c < (size_t)VIEW_HEAT_T * VIEW_HEAT_Y; c++) {
        const float *v = &area[c * VIEW_CLASSES];
        float sum = 0, best = -1;
        unsigned cls = 0;
        for (unsigned k = 0; k < VIEW_CLASSES; k++) {
            sum += v[k];
            if (v[k] > best)
                best = v[k], cls = k;
        }
        unsigned occ = sum <= 0 ? 0 : sum >= 1 ? 31 : (unsigned)(sum * 31);
        if (sum > 0 && occ == 0)
            occ = 1;
        cells[c] = (unsigned char)(cls << 5 | occ);
    }
    free(area);
    return 0;
}

/* ---- detail chunks ---- */

struct chunking {
    size_t n;          /* chunks */
    int64_t *lo, *hi;  /* [lo, hi) in ns */
    size_t *count;     /* allocations in each chunk */
    int32_t *chunk_of; /* per allocation: its chunk, or -1 (spanning: lives past its chunk) */
    size_t spanning;
};

static int plan_chunks(const struct view_model *m, size_t per_chunk, struct chunking *c)
{
    memset(c, 0, sizeof *c);
    size_t max = m->nallocs / per_chunk + 2;
    c->lo = malloc(max * sizeof *c->lo);
    c->hi = malloc(max * sizeof *c->hi);
    c->count = calloc(max, sizeof *c->count);
    c->chunk_of = malloc((m->nallocs + 1) * sizeof *c->chunk_of);
    if (!c->lo || !c->hi || !c->count || !c->chunk_of)
        return -1;
    c->lo[0] = m->t0;
    c->n = 1;
    for (size_t k = per_chunk; k < m->nallocs; k += per_chunk)
        if (m->allocs[k].alloc_ns > c->lo[c->n - 1]) {
            c->hi[c->n - 1] = m->allocs[k].alloc_ns;
            c->lo[c->n++] = m->allocs[k].alloc_ns;
        }
    c->hi[c->n - 1] = m->t1 + 1;
    size_t k = 0;
    for (size_t i = 0; i < m->nallocs; i++) {
        const struct view_alloc *a = &m->allocs[i];
        while (k + 1 < c->n && a->alloc_ns >= c->hi[k])
            k++;
        int inside = c->n == 1 || (a->free_ns != WS_NS_NEVER && a->free_ns < c->hi[k]);
        c->chunk_of[i] = inside ? (int32_t)k : -1;
        if (inside)
            c->count[k]++;
        else
            c->spanning++;
    }
    return 0;
}

static void chunking_free(struct chunking *c)
{
    free(c->lo);
    free(c->hi);
    free(c->count);
    free(c->chunk_of);
}

/* The allocations of one chunk (-1: the spanning ones), each as varints relative to the one
 * before it; view.js (decodeRecords) reads them in the same order. */
static int encode_chunk(const struct view_model *m, const struct chunking *c, int32_t chunk, struct bytes *b)
{
    int64_t prev_ns = m->t0, prev_id = 0;
    uint64_t prev_y = 0;
    b->n = 0;
    for (size_t i = 0; i < m->nallocs; i++) {
        if (c->chunk_of[i] != chunk)
            continue;
        const struct view_alloc *a = &m->allocs[i];
        put_varint(b, (uint64_t)(a->alloc_ns - prev_ns));
        put_varint(b, a->free_ns == WS_NS_NEVER ? 0 : (uint64_t)(a->free_ns - a->alloc_ns) + 1);
        put_varint(b, zigzag((int64_t)(a->y - prev_y)));
        put_varint(b, (uint64_t)a->bytes);
        put_varint(b, (uint64_t)(a->node + 1));
        put_varint(b, a->cls);
        put_varint(b, (uint64_t)(a->run + 1));
        put_varint(b, (uint64_t)(a->thread + 1));
        put_varint(b, (uint64_t)a->api);
        put_varint(b, (uint64_t)a->device);
        put_varint(b, zigzag(a->id - prev_id));
        put_varint(b, (uint64_t)(a->seq + 1));
        put_varint(b, (uint64_t)(a->layer + 1));
        put_varint(b, a->region);
        prev_ns = a->alloc_ns;
        prev_id = a->id;
        prev_y = a->y;
    }
    return b->failed ? -1 : 0;
}

/* ---- the document ---- */

static void put_names(FILE *out, char *const *names, size_t n)
{
    fputc('[', out);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc(',', out);
        put_string(out, names[i]);
    }
    fputc(']', out);
}

static int32_t shape_index(const struct view_model *m, int64_t id)
{
    for (size_t i = 0; i < m->nshapes; i++)
        if (m->shape_ids[i] == id)
            return (int32_t)i;
    return -1;
}

static void put_header(const struct view_model *m, FILE *out)
{
    int first = 1;
    fputc('{', out);
    put_key(out, "format", &first);
    put_int(out, 1);
    put_key(out, "generator", &first);
    put_string(out, "wstrace view " WSTRACE_VERSION);
    put_key(out, "trace", &first);
    put_string(out, m->trace);
    put_key(out, "t0", &first);
    put_int(out, m->t0);
    put_key(out, "span", &first);
    put_int(out, m->t1 - m->t0);
    put_key(out, "meta", &first);
    fputc('{', out);
    int mfirst = 1;
    for (size_t i = 0; i < m->nmeta; i++) {
        put_key(out, m->meta_keys[i], &mfirst);
        put_string(out, m->meta_values[i]);
    }
    fputc('}', out);
    put_key(out, "classes", &first);
    fputs(m->have_pool ? "[\"workspace\",\"activation\",\"persistent\",\"unattributed\",\"pool\"]"
                       : "[\"workspace\",\"activation\",\"persistent\",\"unattributed\"]",
          out);
    put_key(out, "nodes", &first);
    fputc('[', out);
    for (size_t i = 0; m->have_analysis && i < m->an.nnodes; i++) {
        if (i)
            fputc(',', out);
        put_string(out, m->an.nodes[i].name);
    }
    fputc(']', out);
    put_key(out, "allocation_names", &first);
    fputc('[', out);
    for (size_t i = 0; i < m->nnames; i++) {
        fprintf(out, "%s[%lld,", i ? "," : "", (long long)m->names[i].allocation_id);
        put_string(out, m->names[i].name);
        fputc(']', out);
    }
    fputc(']', out);
    put_key(out, "layers", &first);
    put_names(out, m->layers, m->nlayers);
    put_key(out, "apis", &first);
    put_names(out, m->apis, m->napis);
    put_key(out, "shapes", &first);
    put_names(out, m->shapes, m->nshapes);
    put_key(out, "threads", &first);
    fputc('[', out);
    for (size_t i = 0; i < m->nthreads; i++) {
        fprintf(out, "%s[%lld,%lld,", i ? "," : "", (long long)m->threads[i].id, (long long)m->threads[i].os_tid);
        if (m->threads[i].name)
            put_string(out, m->threads[i].name);
        else
            fputs("null", out);
        fputc(']', out);
    }
    fputc(']', out);
    put_key(out, "runs_from_ranges", &first);
    fputs(m->have_analysis && m->an.runs_synthesized ? "true" : "false", out);
    put_key(out, "runs", &first);
    fputc('[', out);
    for (size_t r = 0; m->have_analysis && r < m->an.nruns; r++) {
        const struct ws_run *run = &m->an.runs[r];
        fprintf(out, "%s[%lld,%d,%lld,%lld,%d]", r ? "," : "", (long long)run->id, shape_index(m, run->shape_key_id),
                (long long)(run->start_ns - m->t0), (long long)(run->end_ns == WS_NS_NEVER ? -1 : run->end_ns - m->t0),
                (int)run->allocations);
    }
    fputc(']', out);
}

static void put_devices(const struct view_model *m, FILE *out)
{
    fputc('[', out);
    for (size_t d = 0; d < m->ndevices; d++) {
        const struct view_device *dev = &m->devices[d];
        fprintf(out,
                "%s{\"device\":%lld,\"process\":%lld,\"peak\":%lld,\"peak_ns\":%lld,\"allocs\":%zu,\"yspan\":%llu,"
                "\"process_name\":",
                d ? "," : "", (long long)dev->device, (long long)dev->process, (long long)dev->peak,
                (long long)(dev->peak_ns - m->t0), dev->allocs, (unsigned long long)dev->yspan);
        const char *pname =
            dev->process >= 1 && (size_t)dev->process <= m->nprocesses ? m->process_names[dev->process - 1] : NULL;
        if (pname && m->nprocesses > 1)
            put_string(out, pname);
        else
            fputs("null", out);
        fputs(",\"segments\":[", out);
        for (size_t s = 0; s < dev->nsegments; s++) {
            fputs(s ? ",[" : "[", out);
            put_hex(out, dev->segments[s].lo);
            fprintf(out, ",%llu,%llu]", (unsigned long long)dev->segments[s].len,
                    (unsigned long long)dev->segments[s].ybase);
        }
        fputs("]}", out);
    }
    fputc(']', out);
}

static int class_index(const char *name)
{
    for (int c = 0; c < WS_CLASS_COUNT; c++)
        if (!strcmp(ws_class_name(c), name))
            return c;
    return -1;
}

static void put_plans(const struct view_model *m, FILE *out)
{
    fputc('[', out);
    for (size_t p = 0; p < m->nplans; p++) {
        const struct view_plan *pl = &m->plans[p];
        fprintf(out,
                "%s{\"id\":%lld,\"shape\":%d,\"run\":%lld,\"alignment\":%lld,\"planned_peak\":%lld,"
                "\"load_bound\":%lld,\"dynamic_peak\":%lld,\"algorithm\":",
                p ? "," : "", (long long)pl->id, shape_index(m, pl->shape_key_id), (long long)pl->run_id,
                (long long)pl->alignment, (long long)pl->planned_peak, (long long)pl->load_bound,
                (long long)pl->dynamic_peak);
        put_string(out, pl->algorithm);
        fputs(",\"blocks\":[", out);
        for (size_t b = 0; b < pl->nblocks; b++) {
            const struct view_plan_block *bl = &pl->blocks[b];
            const struct view_alloc *a = bl->alloc >= 0 ? &m->allocs[bl->alloc] : NULL;
            fprintf(out, "%s[%lld,%lld,%lld,%lld,%lld,%lld,%d,%d,%lld,%lld,%d]", b ? "," : "", (long long)bl->ordinal,
                    (long long)bl->start_event, (long long)bl->end_event, (long long)bl->bytes,
                    (long long)bl->requested, (long long)bl->offset, bl->node, class_index(bl->cls),
                    (long long)bl->allocation_id, a ? (long long)a->y : -1LL, a ? a->device : -1);
        }
        fputs("]}", out);
    }
    fputc(']', out);
}

static void put_tables(const struct view_model *m, FILE *out)
{
    fputc('{', out);
    int first = 1;
    for (size_t t = 0; t < m->ntables; t++) {
        const struct view_table *tb = &m->tables[t];
        put_key(out, tb->name, &first);
        fputs("{\"columns\":", out);
        put_names(out, tb->columns, tb->ncols);
        fputs(",\"rows\":[", out);
        for (size_t r = 0; r < tb->nrows; r++) {
            fputs(r ? ",[" : "[", out);
            for (size_t c = 0; c < tb->ncols; c++) {
                if (c)
                    fputc(',', out);
                put_value(out, tb->cells[r * tb->ncols + c]);
            }
            fputc(']', out);
        }
        fputs("]}", out);
    }
    fputc('}', out);
}

static void put_series(FILE *out, const int64_t *bins, size_t width, size_t col)
{
    fputc('[', out);
    for (size_t b = 0; b < VIEW_BINS; b++)
        fprintf(out, "%s%lld", b ? "," : "", (long long)bins[b * width + col]);
    fputc(']', out);
}

static int put_lod(const struct view_model *m, const struct sweep *s, FILE *out)
{
    fprintf(out, "{\"bins\":%d,\"heat_t\":%d,\"heat_y\":%d,\"top_nodes\":[", VIEW_BINS, VIEW_HEAT_T, VIEW_HEAT_Y);
    for (size_t i = 0; i < s->ntop_nodes; i++)
        fprintf(out, "%s%d", i ? "," : "", s->top_nodes[i]);
    fputs("],\"top_layers\":[", out);
    for (size_t i = 0; i < s->ntop_layers; i++)
        fprintf(out, "%s%d", i ? "," : "", s->top_layers[i]);
    fputs("],\"devices\":[", out);
    unsigned char *cells = malloc((size_t)VIEW_HEAT_T * VIEW_HEAT_Y);
    if (!cells)
        return -1;
    for (size_t d = 0; d < m->ndevices; d++) {
        const int64_t *bins = s->bins[d];
        fputs(d ? ",{\"total\":" : "{\"total\":", out);
        put_series(out, bins, s->width, 0);
        fputs(",\"class\":[", out);
        for (size_t c = 0; c < (size_t)(m->have_pool ? VIEW_CLASSES : WS_CLASS_COUNT); c++) {
            if (c)
                fputc(',', out);
            put_series(out, bins, s->width, 1 + c);
        }
        fputs("],\"node\":[", out);
        for (size_t c = 0; c < s->nnode_bands; c++) {
            if (c)
                fputc(',', out);
            put_series(out, bins, s->width, 1 + VIEW_CLASSES + c);
        }
        fputs("],\"layer\":[", out);
        for (size_t c = 0; c < s->nlayer_bands; c++) {
            if (c)
                fputc(',', out);
            put_series(out, bins, s->width, 1 + VIEW_CLASSES + s->nnode_bands + c);
        }
        fputs("],\"heat\":\"", out);
        if (heat_map(m, d, cells) != 0 || put_deflated(out, cells, (size_t)VIEW_HEAT_T * VIEW_HEAT_Y) != 0) {
            free(cells);
            return -1;
        }
        fputs("\"}", out);
    }
    free(cells);
    fputs("]}", out);
    return 0;
}

int view_write_data(const struct view_model *m, FILE *out, const struct ws_view_options *o,
                    struct ws_progress *progress, char *err, size_t errlen)
{
    size_t per_chunk = o->chunk_allocations ? o->chunk_allocations : DEFAULT_CHUNK;
    struct sweep s;
    struct chunking c;
    struct bytes b = {0};
    int rc = -1;
    memset(&s, 0, sizeof s);
    memset(&c, 0, sizeof c);
    if (build_events(m, &s) != 0 || first_pass((struct view_model *)m, &s) != 0 || plan_chunks(m, per_chunk, &c) != 0)
        goto oom;
    ws_progress_update(progress, m->nallocs);
    int lod = m->nallocs > per_chunk; /* small traces are drawn from their allocations alone */
    if (lod && band_pass(m, &s) != 0)
        goto oom;
    ws_progress_update(progress, 2 * m->nallocs);

    fputs("<script type=\"application/json\" id=\"ws-data\">", out);
    put_header(m, out);
    fputs(",\"devices\":", out);
    put_devices(m, out);
    fputs(",\"plans\":", out);
    put_plans(m, out);
    fputs(",\"tables\":", out);
    put_tables(m, out);
    size_t regions = 0;
    for (size_t i = 0; i < m->nallocs; i++)
        regions += m->allocs[i].region;
    fprintf(out, ",\"allocations\":%zu,\"regions\":%zu,\"detail\":{\"chunks\":[", m->nallocs - regions, regions);
    for (size_t k = 0; k < c.n; k++)
        fprintf(out, "%s{\"el\":\"wsc-%zu\",\"lo\":%lld,\"hi\":%lld,\"n\":%zu}", k ? "," : "", k,
                (long long)(c.lo[k] - m->t0), (long long)(c.hi[k] - m->t0), c.count[k]);
    fprintf(out, "],\"spanning\":{\"el\":\"wsc-span\",\"n\":%zu}},\"lod\":", c.spanning);
    if (!lod)
        fputs("null", out);
    else if (put_lod(m, &s, out) != 0)
        goto oom;
    fputs("}</script>\n", out);

    size_t encoded = 0;
    for (int32_t k = -1; k < (int32_t)c.n; k++) {
        if (encode_chunk(m, &c, k, &b) != 0)
            goto oom;
        if (k < 0)
            fputs("<script type=\"application/octet-stream\" id=\"wsc-span\">", out);
        else
            fprintf(out, "<script type=\"application/octet-stream\" id=\"wsc-%d\">", k);
        if (put_deflated(out, b.p, b.n) != 0)
            goto oom;
        fputs("</script>\n", out);
        encoded += k < 0 ? c.spanning : c.count[k];
        ws_progress_update(progress, 2 * m->nallocs + encoded);
    }
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "%s: out of memory while writing the page", m->trace);
out:
    free(b.p);
    chunking_free(&c);
    sweep_free(m, &s);
    return rc;
}
