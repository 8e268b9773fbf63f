/*
 * costs.c - what each layer costs on one device, and what ONNX Runtime charges each node
 * (partition.h; docs/partition.md, "Costs").
 */
#include "partition.h"

#include <stdlib.h>
#include <string.h>

#include "sizes.h"

static const char *const outside_names[] = {"spread", "device", "host"};

const char *ws_part_outside_name(enum ws_part_outside o) { return o <= WS_PART_HOST ? outside_names[o] : "?"; }

int ws_part_outside_parse(const char *text, enum ws_part_outside *o)
{
    for (int i = 0; i <= WS_PART_HOST; i++)
        if (strcmp(text, outside_names[i]) == 0) {
            *o = (enum ws_part_outside)i;
            return 0;
        }
    return -1;
}

int ws_part_views(const struct ws_analysis *an, struct ws_part_view **views, size_t *n, char *err, size_t errlen)
{
    *views = malloc((an->ndevices + 1) * sizeof **views);
    if (!*views) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < an->ndevices; i++)
        (*views)[i] = (struct ws_part_view){an->devices[i].process, an->devices[i].device};
    *n = an->ndevices;
    if (*n == 0)
        (*views)[(*n)++] = (struct ws_part_view){1, 0};
    return 0;
}

static int on_view(const struct ws_lifetime *a, struct ws_part_view v)
{
    return a->device == v.device && a->process == v.process;
}

/* ---- which nodes are on the device, and their initializers ---- */

static void node_presence(const struct ws_part_model *m, struct ws_part_costs *c, uint8_t *elsewhere)
{
    for (size_t i = 0; i < m->an->nallocs; i++) {
        const struct ws_lifetime *a = &m->an->allocs[i];
        int32_t node = m->alloc_node[i], part = node >= 0 ? m->part_of_node[node] : -1;
        if (part < 0)
            continue;
        if (!on_view(a, c->view)) {
            elsewhere[part] = 1;
            continue;
        }
        c->on_device[part] = 2; /* allocates here */
        /* Initializers are what the node holds from before the runs (ORT allocates them at session
         * start): its persistent allocations made outside every run. */
        if ((a->cls == WS_CLASS_PERSISTENT || a->cls == WS_CLASS_UNATTRIBUTED) && a->run < 0)
            c->node_initializers[part] = ws_sat_add(c->node_initializers[part], a->bytes);
    }
    for (size_t p = 0; p < m->nnodes; p++)
        c->on_device[p] = c->on_device[p] == 2 || !elsewhere[p];
}

/* ---- peaks of live bytes per layer ---- */

struct event {
    int64_t t, bytes, id;
    int32_t slot; /* group * 2 + kind (0 persistent, 1 activation) */
    uint8_t is_free;
};

static int event_cmp(const void *a, const void *b)
{
    const struct event *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->is_free != y->is_free)
        return x->is_free - y->is_free; /* at equal times an allocation comes first (the live_bytes view) */
    return (x->id > y->id) - (x->id < y->id);
}

/* The slot an allocation counts in, -1 when it counts in none (workspace comes from the ledger). */
static int32_t slot_of(const struct ws_part_model *m, size_t i)
{
    const struct ws_lifetime *a = &m->an->allocs[i];
    int32_t group = m->alloc_layer[i] >= 0 ? m->alloc_layer[i] : (int32_t)m->nlayers;
    if (a->cls == WS_CLASS_ACTIVATION)
        return group * 2 + 1;
    if (a->cls == WS_CLASS_PERSISTENT || a->cls == WS_CLASS_UNATTRIBUTED)
        return group * 2;
    return -1;
}

static int sweep(const struct ws_part_model *m, struct ws_part_costs *c)
{
    size_t ne = 0, nslots = (m->nlayers + 1) * 2;
    struct event *ev = malloc((2 * m->an->nallocs + 1) * sizeof *ev);
    int64_t *live = calloc(nslots, sizeof *live), *peak = calloc(nslots, sizeof *peak);
    if (!ev || !live || !peak) {
        free(ev), free(live), free(peak);
        return -1;
    }
    for (size_t i = 0; i < m->an->nallocs; i++) {
        const struct ws_lifetime *a = &m->an->allocs[i];
        int32_t slot = on_view(a, c->view) ? slot_of(m, i) : -1;
        if (slot < 0)
            continue;
        ev[ne++] = (struct event){a->alloc_ns, a->bytes, a->allocation_id, slot, 0};
        if (a->free_ns != WS_NS_NEVER)
            ev[ne++] = (struct event){a->free_ns, a->bytes, a->allocation_id, slot, 1};
    }
    qsort(ev, ne, sizeof *ev, event_cmp);
    for (size_t e = 0; e < ne; e++) {
        int32_t s = ev[e].slot;
        live[s] = ev[e].is_free ? ws_sat_sub(live[s], ev[e].bytes) : ws_sat_add(live[s], ev[e].bytes);
        if (live[s] > peak[s])
            peak[s] = live[s];
    }
    for (size_t g = 0; g <= m->nlayers; g++) {
        struct ws_part_group *grp = g < m->nlayers ? &c->layers[g] : &c->outside;
        grp->persistent = peak[2 * g];
        grp->activation = peak[2 * g + 1];
    }
    free(ev), free(live), free(peak);
    return 0;
}

/* ---- workspace, initializers of the estimates file, ORT's charges ---- */

static void workspace(const struct ws_part_model *m, struct ws_part_costs *c)
{
    for (size_t p = 0; p < m->ntrace; p++) {
        if (!c->on_device[p])
            continue;
        const struct ws_part_node *n = &m->nodes[p];
        struct ws_part_group *g = n->layer >= 0 ? &c->layers[n->layer] : &c->outside;
        int64_t w = m->res[n->node].ort.workspace_bytes;
        if (w > g->workspace)
            g->workspace = w;
    }
}

/* Initializer bytes the file gives beyond what the trace shows for a node: the trace holds them
 * outside every layer (allocated at session start, in no node) as far as that part has them. */
static void file_initializers(const struct ws_part_model *m, struct ws_part_costs *c)
{
    int64_t total = 0;
    for (size_t p = 0; p < m->nnodes; p++) {
        const struct ws_part_node *n = &m->nodes[p];
        if (n->layer < 0 || !c->on_device[p] || m->initializer_bytes[p] <= c->node_initializers[p])
            continue;
        int64_t extra = m->initializer_bytes[p] - c->node_initializers[p];
        c->layers[n->layer].persistent = ws_sat_add(c->layers[n->layer].persistent, extra);
        total = ws_sat_add(total, extra);
    }
    c->file_initializers = total;
    c->outside.persistent -= total < c->outside.persistent ? total : c->outside.persistent;
}

static void ort_charges(const struct ws_part_model *m, struct ws_part_costs *c)
{
    for (size_t p = 0; p < m->nnodes; p++) {
        const struct ws_part_node *n = &m->nodes[p];
        struct ws_ort_facts f = {0, -1, -1, -1, -1, -1, -1};
        if (n->node >= 0)
            f = m->res[n->node].ort.facts;
        int64_t init =
            c->node_initializers[p] > m->initializer_bytes[p] ? c->node_initializers[p] : m->initializer_bytes[p];
        if (init > f.input_bytes) /* ORT's input_sizes holds the constant initializers the node reads */
            f.input_bytes = init;
        ws_ort_charge(WS_ORT_STATS, 1.5, &f, &c->ort[p]);
        c->ort[p].node = n->node;
    }
}

int ws_part_costs_compute(const struct ws_part_model *m, struct ws_part_view view, struct ws_part_costs *c, char *err,
                          size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->view = view;
    c->layers = calloc(m->nlayers + 1, sizeof *c->layers);
    c->on_device = calloc(m->nnodes + 1, 1);
    c->node_initializers = calloc(m->nnodes + 1, sizeof *c->node_initializers);
    c->ort = calloc(m->nnodes + 1, sizeof *c->ort);
    uint8_t *elsewhere = calloc(m->nnodes + 1, 1);
    if (!c->layers || !c->on_device || !c->node_initializers || !c->ort || !elsewhere || sweep(m, c) != 0) {
        free(elsewhere);
        ws_part_costs_free(c);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    node_presence(m, c, elsewhere);
    free(elsewhere);
    workspace(m, c);
    file_initializers(m, c);
    ort_charges(m, c);
    c->outside_total = ws_sat_add(ws_sat_add(c->outside.persistent, c->outside.activation), c->outside.workspace);
    return 0;
}

void ws_part_costs_free(struct ws_part_costs *c)
{
    free(c->layers);
    free(c->on_device);
    free(c->node_initializers);
    free(c->ort);
    memset(c, 0, sizeof *c);
}
