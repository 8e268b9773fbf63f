/*
 * model.c - the nodes and layers of a partition (partition.h).
 *
 * Nodes are the trace's (names with a push range or a declaration), in the order they first ran
 * inside a run (then those that ran only outside runs, then those only declared), followed by the
 * nodes the node list and the estimates file name that the trace does not know.  An allocation
 * belongs to the node its owner is, unless its name (NVTX memory naming, table allocation_names)
 * is the name of a node, which then owns it, or names a layer, which then holds it.
 */
#include "partition.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- execution order ---- */

struct order {
    int32_t node;
    int group; /* 0: ran inside a run, 1: ran outside runs only, 2: only declared */
    int64_t first_ns, name_id;
};

static int order_cmp(const void *a, const void *b)
{
    const struct order *x = a, *y = b;
    if (x->group != y->group)
        return x->group - y->group;
    if (x->first_ns != y->first_ns)
        return x->first_ns < y->first_ns ? -1 : 1;
    return (x->name_id > y->name_id) - (x->name_id < y->name_id);
}

/* The trace's nodes in the order they first ran. */
static int trace_order(const struct ws_analysis *an, struct order **out, size_t *n)
{
    struct order *v = calloc(an->nnodes + 1, sizeof *v);
    if (!v)
        return -1;
    for (size_t k = 0; k < an->nnodes; k++)
        v[k] = (struct order){(int32_t)k, 2, INT64_MAX, an->nodes[k].name_id};
    for (size_t r = 0; r < an->nranges; r++) {
        const struct ws_range *g = &an->ranges[r];
        if (g->node < 0)
            continue;
        struct order *o = &v[g->node];
        int group = g->run >= 0 ? 0 : 1;
        if (group < o->group || (group == o->group && g->start_ns < o->first_ns)) {
            o->group = group;
            o->first_ns = g->start_ns;
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < an->nnodes; i++)
        if (an->nodes[i].has_range || an->nodes[i].declares)
            v[k++] = v[i];
    qsort(v, k, sizeof *v, order_cmp);
    *out = v;
    *n = k;
    return 0;
}

/* ---- names the trace does not know ---- */

static int str_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every name of the node list and the estimates file, sorted, each once. */
static int other_names(const struct ws_estimates *est, const struct ws_part_nodelist *list, char ***out, size_t *n)
{
    size_t cap = (est ? est->count : 0) + (list ? list->count : 0) + 1, k = 0;
    char **v = malloc(cap * sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; list && i < list->count; i++)
        v[k++] = list->nodes[i].name;
    for (size_t i = 0; est && i < est->count; i++)
        v[k++] = est->items[i].alias ? est->items[i].alias : est->items[i].node;
    qsort(v, k, sizeof *v, str_cmp);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || strcmp(v[u - 1], v[i]) != 0)
            v[u++] = v[i];
    *out = v;
    *n = u;
    return 0;
}

/* The node list's names, sorted, for lookups. */
static char **sorted_list(const struct ws_part_nodelist *list)
{
    size_t n = list ? list->count : 0;
    char **v = malloc((n + 1) * sizeof *v);
    for (size_t i = 0; v && i < n; i++)
        v[i] = list->nodes[i].name;
    if (v)
        qsort(v, n, sizeof *v, str_cmp);
    return v;
}

static int add_node(struct ws_part_model *m, const char *name, int32_t node, uint8_t known, int executed)
{
    struct ws_part_node *p = &m->nodes[m->nnodes];
    if (!(p->name = strdup(name)))
        return -1;
    p->node = node;
    p->layer = -1;
    p->known = known;
    p->executed = executed;
    if (node >= 0)
        m->part_of_node[node] = (int32_t)m->nnodes;
    m->nnodes++;
    return 0;
}

/* Names of the node list and the file: known to the trace (marked), or nodes of their own. */
static int listed_nodes(struct ws_part_model *m, const struct ws_part_nodelist *list)
{
    char **names = NULL, **listed = sorted_list(list);
    size_t n = 0, nlisted = list ? list->count : 0;
    if (!listed || other_names(m->est, list, &names, &n) != 0) {
        free(listed);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        int is_listed = bsearch(&names[i], listed, nlisted, sizeof *listed, str_cmp) != NULL;
        uint8_t known = is_listed ? WS_PART_LISTED : WS_PART_FILE;
        int32_t node = ws_analysis_node_by_name(m->an, names[i]);
        if (node >= 0 && m->part_of_node[node] >= 0)
            m->nodes[m->part_of_node[node]].known |= known;
        else
            rc = add_node(m, names[i], -1, known, 0);
    }
    /* a name that is in both the list and the file */
    for (size_t i = 0; m->est && i < m->est->count; i++) {
        int32_t node = ws_estimate_node(m->an, &m->est->items[i]);
        if (node >= 0 && m->part_of_node[node] >= 0)
            m->nodes[m->part_of_node[node]].known |= WS_PART_FILE;
    }
    free(names);
    free(listed);
    return rc;
}

/* ---- layers ---- */

struct layer_key {
    char *key;
    int32_t part; /* partition node */
    uint32_t index;
    char terminator;
};

static int key_cmp(const void *a, const void *b)
{
    const struct layer_key *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->part > y->part) - (x->part < y->part);
}

static const struct ws_part_model *sort_model;
static int layer_first_cmp(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    /* the position of a layer's first node is kept in .nodes while sorting (see find_layers) */
    size_t fx = sort_model->layers[x].nodes, fy = sort_model->layers[y].nodes;
    return (fx > fy) - (fx < fy);
}

/* Group the keys into layers (sorted by key), then order the layers by their first node. */
static int make_layers(struct ws_part_model *m, struct layer_key *keys, size_t nk)
{
    int32_t *group = malloc((nk + 1) * sizeof *group), *order = malloc((nk + 1) * sizeof *order);
    int32_t *rank = malloc((nk + 1) * sizeof *rank);
    m->layers = calloc(nk + 1, sizeof *m->layers);
    if (!group || !order || !rank || !m->layers) {
        free(group), free(order), free(rank);
        return -1;
    }
    for (size_t i = 0; i < nk; i++) {
        int same = m->nlayers > 0 && strcmp(m->layers[m->nlayers - 1].name, keys[i].key) == 0;
        if (!same) {
            struct ws_part_layer *l = &m->layers[m->nlayers++];
            l->name = keys[i].key;
            keys[i].key = NULL;
            l->index = keys[i].index;
            l->terminator = keys[i].terminator;
            l->nodes = (size_t)keys[i].part; /* first node, while ordering */
        } else if (keys[i].terminator != m->layers[m->nlayers - 1].terminator) {
            m->layers[m->nlayers - 1].terminator = '\0';
        }
        group[i] = (int32_t)m->nlayers - 1;
    }
    for (size_t i = 0; i < m->nlayers; i++)
        order[i] = (int32_t)i;
    sort_model = m;
    qsort(order, m->nlayers, sizeof *order, layer_first_cmp);
    struct ws_part_layer *sorted = calloc(m->nlayers + 1, sizeof *sorted);
    if (!sorted) {
        free(group), free(order), free(rank);
        return -1;
    }
    for (size_t i = 0; i < m->nlayers; i++) {
        sorted[i] = m->layers[order[i]];
        sorted[i].nodes = 0;
        rank[order[i]] = (int32_t)i;
    }
    free(m->layers);
    m->layers = sorted;
    for (size_t i = 0; i < nk; i++) {
        struct ws_part_node *p = &m->nodes[keys[i].part];
        p->layer = rank[group[i]];
        if (p->known & WS_PART_TRACE)
            m->layers[p->layer].nodes++;
        else
            m->layers[p->layer].listed++;
    }
    free(group), free(order), free(rank);
    return 0;
}

static int find_layers(struct ws_part_model *m)
{
    struct layer_key *keys = calloc(m->nnodes + 1, sizeof *keys);
    size_t nk = 0;
    int rc = -1;
    if (!keys)
        return -1;
    for (size_t i = 0; i < m->nnodes; i++) {
        size_t len;
        uint32_t index;
        char term;
        if (!ws_part_layer_of(m->nodes[i].name, m->pattern, &len, &index, &term))
            continue;
        if (!(keys[nk].key = strndup(m->nodes[i].name, len)))
            goto out;
        keys[nk].part = (int32_t)i;
        keys[nk].index = index;
        keys[nk++].terminator = term;
    }
    qsort(keys, nk, sizeof *keys, key_cmp);
    rc = make_layers(m, keys, nk);
out:
    for (size_t i = 0; i < nk; i++)
        free(keys[i].key);
    free(keys);
    return rc;
}

static int32_t layer_by_name(const struct ws_part_model *m, const char *name, size_t len)
{
    for (size_t i = 0; i < m->nlayers; i++)
        if (strlen(m->layers[i].name) == len && memcmp(m->layers[i].name, name, len) == 0)
            return (int32_t)i;
    return -1;
}

/* ---- allocations ---- */

static int32_t alloc_index(const struct ws_analysis *an, int64_t id)
{
    size_t lo = 0, hi = an->nallocs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (an->allocs[mid].allocation_id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < an->nallocs && an->allocs[lo].allocation_id == id ? (int32_t)lo : -1;
}

/* An allocation named after a node belongs to it; one whose name has a layer number, to that layer. */
static void apply_name(struct ws_part_model *m, int32_t a, const char *name)
{
    int32_t node = ws_analysis_node_by_name(m->an, name);
    size_t len;
    uint32_t index;
    char term;
    if (node >= 0 && m->part_of_node[node] >= 0) {
        m->alloc_node[a] = node;
        m->alloc_layer[a] = m->nodes[m->part_of_node[node]].layer;
        m->named_allocations++;
    } else if (ws_part_layer_of(name, m->pattern, &len, &index, &term) && layer_by_name(m, name, len) >= 0) {
        m->alloc_node[a] = -1;
        m->alloc_layer[a] = layer_by_name(m, name, len);
        m->named_allocations++;
    }
}

static int read_names(sqlite3 *db, struct ws_part_model *m, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int step;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'allocation_names'", -1,
                           &st, NULL) != SQLITE_OK)
        return ws_sql_fail(db, "reading allocation names", err, errlen);
    step = sqlite3_step(st);
    sqlite3_finalize(st);
    if (step != SQLITE_ROW)
        return 0; /* a trace of schema version 1 */
    if (sqlite3_prepare_v2(db,
                           "SELECT n.allocation_id, s.value FROM allocation_names n JOIN strings s ON s.id = n.name_id"
                           " ORDER BY n.allocation_id",
                           -1, &st, NULL) != SQLITE_OK)
        return ws_sql_fail(db, "reading allocation names", err, errlen);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int32_t a = alloc_index(m->an, sqlite3_column_int64(st, 0));
        const char *name = (const char *)sqlite3_column_text(st, 1);
        if (a >= 0 && name)
            apply_name(m, a, name);
    }
    sqlite3_finalize(st);
    return step == SQLITE_DONE ? 0 : ws_sql_fail(db, "reading allocation names", err, errlen);
}

static int alloc_owners(sqlite3 *db, struct ws_part_model *m, char *err, size_t errlen)
{
    const struct ws_analysis *an = m->an;
    m->alloc_node = malloc((an->nallocs + 1) * sizeof *m->alloc_node);
    m->alloc_layer = malloc((an->nallocs + 1) * sizeof *m->alloc_layer);
    if (!m->alloc_node || !m->alloc_layer) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < an->nallocs; i++) {
        int32_t node = an->allocs[i].node, part = node >= 0 ? m->part_of_node[node] : -1;
        m->alloc_node[i] = node;
        m->alloc_layer[i] = part >= 0 ? m->nodes[part].layer : -1;
    }
    return read_names(db, m, err, errlen);
}

/* ---- facts of the estimates file ---- */

static int32_t part_by_name(const struct ws_part_model *m, const char *name)
{
    int32_t node = ws_analysis_node_by_name(m->an, name);
    if (node >= 0)
        return m->part_of_node[node];
    for (size_t i = m->ntrace; i < m->nnodes; i++)
        if (strcmp(m->nodes[i].name, name) == 0)
            return (int32_t)i;
    return -1;
}

static int file_facts(struct ws_part_model *m)
{
    m->initializer_bytes = malloc((m->nnodes + 1) * sizeof *m->initializer_bytes);
    m->input_bytes = malloc((m->nnodes + 1) * sizeof *m->input_bytes);
    if (!m->initializer_bytes || !m->input_bytes)
        return -1;
    for (size_t i = 0; i < m->nnodes; i++)
        m->initializer_bytes[i] = m->input_bytes[i] = -1;
    for (size_t i = 0; m->est && i < m->est->count; i++) {
        const struct ws_estimate *e = &m->est->items[i];
        if (e->kind != WS_EST_INITIALIZER && e->kind != WS_EST_INPUT)
            continue;
        int32_t node = ws_estimate_node(m->an, e);
        int32_t part = node >= 0 ? m->part_of_node[node] : part_by_name(m, e->alias ? e->alias : e->node);
        int64_t *field = e->kind == WS_EST_INPUT ? m->input_bytes : m->initializer_bytes;
        if (part >= 0 && e->bytes > field[part])
            field[part] = e->bytes;
    }
    return 0;
}

/* ---- the model ---- */

static int resolve_nodes(struct ws_part_model *m, char *err, size_t errlen)
{
    struct ws_resolution *rows = NULL;
    size_t n = 0;
    if (ws_resolve(m->an, m->est, WS_ORT_STATS, 1.5, &rows, &n, err, errlen) != 0)
        return -1;
    m->res = calloc(m->an->nnodes + 1, sizeof *m->res);
    if (!m->res) {
        free(rows);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        m->res[rows[i].node] = rows[i];
    free(rows);
    return 0;
}

static int trace_nodes(struct ws_part_model *m)
{
    struct order *order = NULL;
    size_t n = 0;
    if (trace_order(m->an, &order, &n) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = add_node(m, m->an->nodes[order[i].node].name, order[i].node, WS_PART_TRACE,
                      m->res[order[i].node].ort.facts.executed);
    m->ntrace = m->nnodes;
    free(order);
    return rc;
}

int ws_part_model_build(sqlite3 *db, const struct ws_analysis *an, const struct ws_estimates *est,
                        const struct ws_part_nodelist *list, const char *pattern, struct ws_part_model *m, char *err,
                        size_t errlen)
{
    memset(m, 0, sizeof *m);
    m->an = an;
    m->est = est;
    size_t cap = an->nnodes + (est ? est->count : 0) + (list ? list->count : 0) + 1;
    m->pattern = strdup(pattern ? pattern : "");
    m->nodes = calloc(cap, sizeof *m->nodes);
    m->part_of_node = malloc((an->nnodes + 1) * sizeof *m->part_of_node);
    if (!m->pattern || !m->nodes || !m->part_of_node)
        goto oom;
    for (size_t k = 0; k < an->nnodes; k++)
        m->part_of_node[k] = -1;
    if (resolve_nodes(m, err, errlen) != 0)
        goto fail;
    if (trace_nodes(m) != 0 || listed_nodes(m, list) != 0 || (pattern && find_layers(m) != 0) || file_facts(m) != 0)
        goto oom;
    if (pattern && m->nlayers == 0) {
        snprintf(err, errlen,
                 "no node name has a layer number after '%s' (as in /model/%s3/attn/MatMul); name the text before "
                 "the number with --layers",
                 pattern, pattern);
        goto fail;
    }
    if (alloc_owners(db, m, err, errlen) != 0)
        goto fail;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    ws_part_model_free(m);
    return -1;
}

void ws_part_model_free(struct ws_part_model *m)
{
    for (size_t i = 0; i < m->nlayers; i++)
        free(m->layers[i].name);
    for (size_t i = 0; i < m->nnodes; i++)
        free(m->nodes[i].name);
    free(m->layers);
    free(m->nodes);
    free(m->pattern);
    free(m->part_of_node);
    free(m->res);
    free(m->alloc_node);
    free(m->alloc_layer);
    free(m->initializer_bytes);
    free(m->input_bytes);
    memset(m, 0, sizeof *m);
}
