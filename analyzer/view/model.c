/*
 * What the page shows, read from a trace: the analysis (classes, runs, nodes), what it leaves
 * out (addresses, APIs, threads, layers), the plans and the result tables.  Tables and columns
 * that a trace may not have (older or newer schemas, commands not run) are looked up first and
 * left out when absent.
 */
#include <stdlib.h>
#include <string.h>

#include "view.h"

static int fail(struct view_model *m, char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "%s: %s: %s", m->trace, what, sqlite3_errmsg(m->db));
    return -1;
}

static int oom(struct view_model *m, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: out of memory", m->trace);
    return -1;
}

int view_table_exists(sqlite3 *db, const char *table)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?1", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC) == SQLITE_OK)
        found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

int view_column_exists(sqlite3 *db, const char *table, const char *column)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC) == SQLITE_OK &&
        sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC) == SQLITE_OK)
        found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

/* Index of s in a list of strings, appended when new; -1 when memory runs out. */
static int32_t intern(char ***list, size_t *n, const char *s)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp((*list)[i], s))
            return (int32_t)i;
    char **grown = realloc(*list, (*n + 1) * sizeof *grown);
    if (!grown)
        return -1;
    *list = grown;
    if (!(grown[*n] = strdup(s)))
        return -1;
    return (int32_t)(*n)++;
}

static const char *text(sqlite3_stmt *st, int col, const char *fallback)
{
    const char *s = (const char *)sqlite3_column_text(st, col);
    return s ? s : fallback;
}

/* ---- trace-wide facts ---- */

static int read_meta(struct view_model *m, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int rc = -1, step;
    if (sqlite3_prepare_v2(m->db, "SELECT key, value FROM meta ORDER BY key LIMIT 500", -1, &st, NULL) != SQLITE_OK)
        return fail(m, err, errlen, "reading meta");
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        char **k = realloc(m->meta_keys, (m->nmeta + 1) * sizeof *k);
        if (k)
            m->meta_keys = k;
        char **v = realloc(m->meta_values, (m->nmeta + 1) * sizeof *v);
        if (v)
            m->meta_values = v;
        if (!k || !v)
            goto oom;
        m->meta_keys[m->nmeta] = strdup(text(st, 0, ""));
        m->meta_values[m->nmeta] = strdup(text(st, 1, ""));
        m->nmeta++;
        if (!m->meta_keys[m->nmeta - 1] || !m->meta_values[m->nmeta - 1])
            goto oom;
    }
    rc = step == SQLITE_DONE ? 0 : fail(m, err, errlen, "reading meta");
    goto done;
oom:
    oom(m, err, errlen);
done:
    sqlite3_finalize(st);
    return rc;
}

static int read_bounds(struct view_model *m, char *err, size_t errlen)
{
    static const char sql[] =
        "SELECT MIN(lo), MAX(hi) FROM ("
        " SELECT MIN(first_ns) AS lo, MAX(last_ns) AS hi FROM threads"
        " UNION ALL SELECT MIN(start_ns), MAX(COALESCE(end_ns, start_ns)) FROM ranges"
        " UNION ALL SELECT MIN(start_ns), MAX(COALESCE(end_ns, start_ns)) FROM runs"
        " UNION ALL SELECT MIN(alloc_ns), MAX(MAX(alloc_ns, COALESCE(free_ns, alloc_ns))) FROM allocations"
        " UNION ALL SELECT MIN(ns), MAX(ns) FROM launches)";
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(m->db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        m->t0 = sqlite3_column_int64(st, 0);
        m->t1 = sqlite3_column_int64(st, 1);
        if (m->t1 <= m->t0)
            m->t1 = m->t0 + 1;
        rc = 0;
    } else {
        fail(m, err, errlen, "reading the trace's bounds");
    }
    sqlite3_finalize(st);
    return rc;
}

static int read_threads(struct view_model *m, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int rc = -1, step;
    int processes = view_column_exists(m->db, "threads", "process_id");
    if (sqlite3_prepare_v2(m->db,
                           processes ? "SELECT t.id, t.os_tid, s.value, COALESCE(t.process_id, 1) FROM threads t"
                                       " LEFT JOIN strings s ON s.id = t.name_id ORDER BY t.id"
                                     : "SELECT t.id, t.os_tid, s.value, 1 FROM threads t"
                                       " LEFT JOIN strings s ON s.id = t.name_id ORDER BY t.id",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(m, err, errlen, "reading threads");
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        struct view_thread *t = realloc(m->threads, (m->nthreads + 1) * sizeof *t);
        if (!t) {
            oom(m, err, errlen);
            goto done;
        }
        m->threads = t;
        t = &t[m->nthreads++];
        t->id = sqlite3_column_int64(st, 0);
        t->os_tid = sqlite3_column_int64(st, 1);
        t->process = sqlite3_column_int64(st, 3);
        t->name = sqlite3_column_type(st, 2) == SQLITE_NULL ? NULL : strdup(text(st, 2, ""));
    }
    rc = step == SQLITE_DONE ? 0 : fail(m, err, errlen, "reading threads");
done:
    sqlite3_finalize(st);
    return rc;
}

static int32_t thread_index(const struct view_model *m, int64_t id)
{
    for (size_t i = 0; i < m->nthreads; i++) /* threads are few */
        if (m->threads[i].id == id)
            return (int32_t)i;
    return -1;
}

/* Names of the processes of a merged trace: "rank R on HOST (pid P)". */
static int read_processes(struct view_model *m, char *err, size_t errlen)
{
    if (!view_table_exists(m->db, "processes") || !view_column_exists(m->db, "processes", "rank") ||
        !view_column_exists(m->db, "processes", "host") || !view_column_exists(m->db, "processes", "pid"))
        return 0;
    sqlite3_stmt *st = NULL;
    int rc = 0, step;
    if (sqlite3_prepare_v2(m->db, "SELECT id, rank, host, pid FROM processes WHERE id > 0 AND id < 1000000 ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(m, err, errlen, "reading processes");
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        size_t id = (size_t)sqlite3_column_int64(st, 0);
        if (id > m->nprocesses) {
            char **names = realloc(m->process_names, id * sizeof *names);
            if (!names) {
                rc = oom(m, err, errlen);
                break;
            }
            for (size_t i = m->nprocesses; i < id; i++)
                names[i] = NULL;
            m->process_names = names;
            m->nprocesses = id;
        }
        char label[256];
        int n = snprintf(label, sizeof label, "process %zu", id);
        if (sqlite3_column_type(st, 1) != SQLITE_NULL)
            n = snprintf(label, sizeof label, "rank %lld", (long long)sqlite3_column_int64(st, 1));
        if (sqlite3_column_type(st, 2) != SQLITE_NULL && n > 0 && (size_t)n < sizeof label)
            n += snprintf(label + n, sizeof label - (size_t)n, " on %s", text(st, 2, ""));
        if (sqlite3_column_type(st, 3) != SQLITE_NULL && n > 0 && (size_t)n < sizeof label)
            snprintf(label + n, sizeof label - (size_t)n, " (pid %lld)", (long long)sqlite3_column_int64(st, 3));
        free(m->process_names[id - 1]);
        if (!(m->process_names[id - 1] = strdup(label))) {
            rc = oom(m, err, errlen);
            break;
        }
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = fail(m, err, errlen, "reading processes");
    sqlite3_finalize(st);
    return rc;
}

/* ---- layers ---- */

/*
 * The layer of a node name: its prefix up to the first numbered path segment, the way
 * exporters name repeated blocks ("/model/layers.3/attn/MatMul" -> "/model/layers.3",
 * "model.layers.3.mlp" -> "model.layers.3", "blk.3.attn_q" -> "blk.3").  The digits must follow
 * '.' or '/' and end the segment, so that operator ordinals ("MatMul_1") are not layers.
 * Returns the prefix length, or 0 when the name has no numbered segment.
 */
static size_t layer_prefix(const char *name)
{
    for (size_t i = 1; name[i]; i++) {
        if (!(name[i] >= '0' && name[i] <= '9') || !(name[i - 1] == '.' || name[i - 1] == '/'))
            continue;
        size_t j = i;
        while (name[j] >= '0' && name[j] <= '9')
            j++;
        if (name[j] == '\0' || name[j] == '.' || name[j] == '/')
            return j;
        i = j;
    }
    return 0;
}

/* Per push range (in the analysis' order), the layer: the ranges table's own layer column when
 * the trace has one, else the outermost enclosing range (itself included) with a numbered name. */
static int read_layers(struct view_model *m, int32_t **range_layer, char *err, size_t errlen)
{
    const char *layer_expr = "NULL";
    if (view_column_exists(m->db, "ranges", "layer_id"))
        layer_expr = "(SELECT value FROM strings WHERE id = r.layer_id)";
    else if (view_column_exists(m->db, "ranges", "layer"))
        layer_expr = "r.layer";
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT r.id, r.parent_id, s.value, %s FROM ranges r LEFT JOIN strings s ON s.id = r.name_id"
             " WHERE r.kind = 'push' ORDER BY r.id",
             layer_expr);
    sqlite3_stmt *st = NULL;
    int rc = -1, step;
    size_t k = 0;
    *range_layer = malloc((m->an.nranges + 1) * sizeof **range_layer);
    if (!*range_layer)
        return oom(m, err, errlen);
    if (sqlite3_prepare_v2(m->db, sql, -1, &st, NULL) != SQLITE_OK)
        return fail(m, err, errlen, "reading ranges");
    while ((step = sqlite3_step(st)) == SQLITE_ROW && k < m->an.nranges) {
        int32_t layer = -1;
        if (sqlite3_column_type(st, 3) != SQLITE_NULL) {
            layer = intern(&m->layers, &m->nlayers, text(st, 3, ""));
        } else {
            int32_t parent = -1;
            if (sqlite3_column_type(st, 1) != SQLITE_NULL) {
                int64_t pid = sqlite3_column_int64(st, 1);
                size_t lo = 0, hi = k; /* parents come before their children */
                while (lo < hi) {
                    size_t mid = (lo + hi) / 2;
                    if (m->an.ranges[mid].id < pid)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                if (lo < k && m->an.ranges[lo].id == pid)
                    parent = (int32_t)lo;
            }
            if (parent >= 0 && (*range_layer)[parent] >= 0) {
                layer = (*range_layer)[parent];
            } else {
                const char *name = text(st, 2, "");
                size_t n = layer_prefix(name);
                if (n > 0) {
                    char *prefix = strndup(name, n);
                    layer = prefix ? intern(&m->layers, &m->nlayers, prefix) : -1;
                    free(prefix);
                    if (!prefix)
                        step = SQLITE_NOMEM;
                }
            }
        }
        if (step == SQLITE_NOMEM)
            break;
        (*range_layer)[k++] = layer;
    }
    while (k < m->an.nranges)
        (*range_layer)[k++] = -1;
    rc = step == SQLITE_DONE || step == SQLITE_ROW ? 0 : fail(m, err, errlen, "reading ranges");
    sqlite3_finalize(st);
    return rc;
}

/* ---- allocations ---- */

static int32_t device_index(struct view_model *m, int64_t process, int64_t device)
{
    for (size_t i = 0; i < m->ndevices; i++)
        if (m->devices[i].device == device && m->devices[i].process == process)
            return (int32_t)i;
    struct view_device *d = realloc(m->devices, (m->ndevices + 1) * sizeof *d);
    if (!d)
        return -1;
    m->devices = d;
    memset(&d[m->ndevices], 0, sizeof *d);
    d[m->ndevices].process = process;
    d[m->ndevices].device = device;
    return (int32_t)m->ndevices++;
}

static int by_time(const void *a, const void *b)
{
    const struct view_alloc *x = a, *y = b;
    if (x->alloc_ns != y->alloc_ns)
        return x->alloc_ns < y->alloc_ns ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Index of the analysis entry (sorted by allocation id) of id, or -1. */
static int32_t lifetime_of(const struct ws_analysis *an, int64_t id)
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

static int32_t by_id_in(const void *base, size_t n, size_t stride, int64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int64_t v = *(const int64_t *)((const char *)base + mid * stride);
        if (v < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && *(const int64_t *)((const char *)base + lo * stride) == id ? (int32_t)lo : -1;
}

/*
 * Every successful device and managed allocation (what the program holds from CUDA, as the
 * live_bytes view counts it) and every region of an NVTX heap in device memory (drawn inside the
 * allocation that holds it, never counted twice).  Class, node, run and ordinal come from the
 * analysis, which classifies regions and leaves out the allocations that hold heaps: those are
 * of the view's own class "pool".
 */
static int read_allocations(struct view_model *m, const int32_t *range_layer, char *err, size_t errlen)
{
    static const char plain_sql[] = "SELECT id, address, api, thread_id, 0, range_id, run_id, device, bytes, alloc_ns,"
                                    " free_ns FROM allocations WHERE status = 0 AND memory IN ('device', 'managed')"
                                    " ORDER BY id";
    static const char regions_sql[] =
        "SELECT id, address, api, thread_id, memory = 'region', range_id, run_id, device, bytes, alloc_ns, free_ns"
        " FROM allocations WHERE status = 0 AND (memory IN ('device', 'managed') OR (memory = 'region' AND id NOT IN"
        " (SELECT allocation_id FROM memory_regions WHERE memory = 'host'))) ORDER BY id";
    int regions = view_table_exists(m->db, "memory_regions") && view_column_exists(m->db, "memory_regions", "memory");
    sqlite3_stmt *st = NULL;
    int rc = -1, step;
    size_t k = 0, cap = 0;
    if (sqlite3_prepare_v2(m->db, regions ? regions_sql : plain_sql, -1, &st, NULL) != SQLITE_OK)
        return fail(m, err, errlen, "reading allocations");
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (k == cap) {
            cap = cap ? 2 * cap : 1024;
            struct view_alloc *grown = realloc(m->allocs, cap * sizeof *grown);
            if (!grown) {
                oom(m, err, errlen);
                goto done;
            }
            m->allocs = grown;
        }
        struct view_alloc *a = &m->allocs[k++];
        memset(a, 0, sizeof *a);
        a->id = sqlite3_column_int64(st, 0);
        a->address = (uint64_t)sqlite3_column_int64(st, 1);
        a->region = (uint8_t)sqlite3_column_int(st, 4);
        a->thread = thread_index(m, sqlite3_column_int64(st, 3));
        a->api = intern(&m->apis, &m->napis, text(st, 2, "?"));
        int32_t l = lifetime_of(&m->an, a->id);
        int64_t device = sqlite3_column_int64(st, 7);
        if (l >= 0) {
            const struct ws_lifetime *t = &m->an.allocs[l];
            a->alloc_ns = t->alloc_ns;
            a->free_ns = t->free_ns;
            a->bytes = t->bytes;
            a->node = t->node;
            a->layer = t->range >= 0 ? range_layer[t->range] : -1;
            a->run = t->run;
            a->seq = t->alloc_seq;
            a->cls = t->cls;
            device = t->device;
        } else if (a->region) {
            k--; /* a region the analysis leaves out: nothing to draw it with */
            continue;
        } else {
            int32_t range =
                sqlite3_column_type(st, 5) == SQLITE_NULL
                    ? -1
                    : by_id_in(m->an.ranges, m->an.nranges, sizeof *m->an.ranges, sqlite3_column_int64(st, 5));
            a->alloc_ns = sqlite3_column_int64(st, 9);
            a->free_ns = sqlite3_column_type(st, 10) == SQLITE_NULL ? WS_NS_NEVER : sqlite3_column_int64(st, 10);
            a->bytes = sqlite3_column_int64(st, 8);
            a->node = range >= 0 ? m->an.ranges[range].node : -1;
            a->layer = range >= 0 ? range_layer[range] : -1;
            a->run = -1;
            if (m->an.runs_synthesized)
                a->run = range >= 0 ? m->an.ranges[range].run : -1;
            else if (sqlite3_column_type(st, 6) != SQLITE_NULL)
                a->run = by_id_in(m->an.runs, m->an.nruns, sizeof *m->an.runs, sqlite3_column_int64(st, 6));
            a->seq = -1;
            a->cls = VIEW_CLASS_POOL;
            m->have_pool = 1;
        }
        a->device = device_index(m, a->thread >= 0 ? m->threads[a->thread].process : 1, device);
        if (a->api < 0 || a->device < 0) {
            oom(m, err, errlen);
            goto done;
        }
        if (!a->region)
            m->devices[a->device].allocs++;
    }
    if (step != SQLITE_DONE) {
        fail(m, err, errlen, "reading allocations");
        goto done;
    }
    m->nallocs = k;
    rc = 0;
done:
    sqlite3_finalize(st);
    return rc;
}

/*
 * Names given to allocations (NVTX memory naming, table allocation_names), read as `wstrace
 * partition` reads them (docs/partition.md): a name that is a node's puts the allocation under
 * that node, with that node's layer (weights allocated at session start, outside every node,
 * named after the node that reads them); a name holding a layer's name puts it in that layer,
 * outside every node.  Every named allocation keeps its name for the page.  allocs are still in
 * id order here.
 */
static int read_names(struct view_model *m, const int32_t *range_layer, char *err, size_t errlen)
{
    if (!view_table_exists(m->db, "allocation_names"))
        return 0; /* a trace of schema version 1 */
    int32_t *node_layer = malloc((m->an.nnodes + 1) * sizeof *node_layer);
    if (!node_layer)
        return oom(m, err, errlen);
    for (size_t i = 0; i < m->an.nnodes; i++)
        node_layer[i] = -1;
    for (size_t k = 0; k < m->an.nranges; k++) /* a node's layer: that of its first range */
        if (m->an.ranges[k].node >= 0 && node_layer[m->an.ranges[k].node] < 0)
            node_layer[m->an.ranges[k].node] = range_layer[k];
    sqlite3_stmt *st = NULL;
    int rc = -1, step;
    size_t cap = 0;
    if (sqlite3_prepare_v2(m->db,
                           "SELECT n.allocation_id, s.value FROM allocation_names n JOIN strings s ON s.id = n.name_id"
                           " ORDER BY n.allocation_id, n.rowid",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = fail(m, err, errlen, "reading allocation names");
        goto done;
    }
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int32_t a = by_id_in(m->allocs, m->nallocs, sizeof *m->allocs, sqlite3_column_int64(st, 0));
        const char *name = text(st, 1, NULL);
        if (a < 0 || !name)
            continue; /* an allocation the page does not draw */
        if (m->nnames > 0 && m->names[m->nnames - 1].allocation_id == m->allocs[a].id) {
            char *later = strdup(name); /* named again: the last name holds */
            if (!later) {
                oom(m, err, errlen);
                goto done;
            }
            free(m->names[m->nnames - 1].name);
            m->names[m->nnames - 1].name = later;
        } else {
            if (m->nnames == cap) {
                cap = cap ? 2 * cap : 256;
                struct view_name *grown = realloc(m->names, cap * sizeof *grown);
                if (!grown) {
                    oom(m, err, errlen);
                    goto done;
                }
                m->names = grown;
            }
            if (!(m->names[m->nnames].name = strdup(name))) {
                oom(m, err, errlen);
                goto done;
            }
            m->names[m->nnames++].allocation_id = m->allocs[a].id;
        }
        struct view_alloc *va = &m->allocs[a];
        int32_t node = ws_analysis_node_by_name(&m->an, name);
        size_t n = node >= 0 ? 0 : layer_prefix(name);
        if (node >= 0) {
            va->node = node;
            va->layer = node_layer[node];
        } else if (n > 0) {
            for (size_t l = 0; l < m->nlayers; l++)
                if (strlen(m->layers[l]) == n && strncmp(m->layers[l], name, n) == 0) {
                    va->node = -1;
                    va->layer = (int32_t)l;
                    break;
                }
        }
    }
    rc = step == SQLITE_DONE ? 0 : fail(m, err, errlen, "reading allocation names");
done:
    sqlite3_finalize(st);
    free(node_layer);
    return rc;
}

struct span {
    uint64_t lo, hi;
};

static int by_lo(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

/*
 * The address axis of a device without its empty stretches: device pointers come from regions
 * gigabytes apart (a pool here, an mmap there), and a linear axis would squeeze every block
 * into a line.  Stretches in use closer than 1/64 of the device's bytes in use (or 1 MiB) are
 * one segment; segments are stacked with a small gap between them.
 */
static int compact_addresses(struct view_model *m, char *err, size_t errlen)
{
    struct span *s = malloc((m->nallocs + 1) * sizeof *s);
    if (!s)
        return oom(m, err, errlen);
    for (size_t d = 0; d < m->ndevices; d++) {
        struct view_device *dev = &m->devices[d];
        size_t n = 0;
        for (size_t i = 0; i < m->nallocs; i++)
            if (m->allocs[i].device == (int32_t)d)
                s[n++] = (struct span){m->allocs[i].address, m->allocs[i].address + (uint64_t)m->allocs[i].bytes};
        qsort(s, n, sizeof *s, by_lo);
        uint64_t used = 0;
        size_t k = 0; /* merge overlapping and touching spans in place */
        for (size_t i = 0; i < n; i++) {
            if (k > 0 && s[i].lo <= s[k - 1].hi) {
                if (s[i].hi > s[k - 1].hi)
                    s[k - 1].hi = s[i].hi;
            } else {
                s[k++] = s[i];
            }
        }
        for (size_t i = 0; i < k; i++)
            used += s[i].hi - s[i].lo;
        uint64_t join = used / 64 > (1u << 20) ? used / 64 : (1u << 20);
        dev->segments = malloc((k + 1) * sizeof *dev->segments);
        if (!dev->segments) {
            free(s);
            return oom(m, err, errlen);
        }
        uint64_t gap = used / 50 + 1, y = 0;
        for (size_t i = 0; i < k; i++) {
            if (dev->nsegments > 0 && s[i].lo - s[i - 1].hi <= join) {
                struct view_segment *g = &dev->segments[dev->nsegments - 1];
                y += s[i].hi - (g->lo + g->len);
                g->len = s[i].hi - g->lo;
                continue;
            }
            if (dev->nsegments > 0)
                y += gap;
            dev->segments[dev->nsegments++] = (struct view_segment){s[i].lo, s[i].hi - s[i].lo, y};
            y += s[i].hi - s[i].lo;
        }
        dev->yspan = y > 0 ? y : 1;
    }
    free(s);
    for (size_t i = 0; i < m->nallocs; i++) {
        struct view_alloc *a = &m->allocs[i];
        const struct view_device *dev = &m->devices[a->device];
        size_t lo = 0, hi = dev->nsegments;
        while (hi - lo > 1) { /* the last segment starting at or below the address */
            size_t mid = (lo + hi) / 2;
            if (dev->segments[mid].lo <= a->address)
                lo = mid;
            else
                hi = mid;
        }
        a->y = dev->segments[lo].ybase + (a->address - dev->segments[lo].lo);
    }
    return 0;
}

/* ---- shape keys, plans, result tables ---- */

static int read_shapes(struct view_model *m, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(m->db, "SELECT value FROM strings WHERE id = ?1", -1, &st, NULL) != SQLITE_OK)
        return fail(m, err, errlen, "reading shape keys");
    int rc = 0;
    for (size_t r = 0; r < m->an.nruns && rc == 0; r++) {
        int64_t id = m->an.runs[r].shape_key_id;
        int known = id < 0;
        for (size_t i = 0; i < m->nshapes && !known; i++)
            known = m->shape_ids[i] == id;
        if (known)
            continue;
        int64_t *ids = realloc(m->shape_ids, (m->nshapes + 1) * sizeof *ids);
        char **names = realloc(m->shapes, (m->nshapes + 1) * sizeof *names);
        if (ids)
            m->shape_ids = ids;
        if (names)
            m->shapes = names;
        if (!ids || !names) {
            rc = oom(m, err, errlen);
            break;
        }
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, id);
        names[m->nshapes] = strdup(sqlite3_step(st) == SQLITE_ROW ? text(st, 0, "") : "?");
        ids[m->nshapes++] = id;
        if (!names[m->nshapes - 1])
            rc = oom(m, err, errlen);
    }
    sqlite3_finalize(st);
    return rc;
}

static int32_t alloc_by_id(const struct view_model *m, const int32_t *by_id, int64_t id)
{
    size_t lo = 0, hi = m->nallocs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->allocs[by_id[mid]].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->nallocs && m->allocs[by_id[lo]].id == id ? by_id[lo] : -1;
}

static int read_plans(struct view_model *m, const int32_t *by_id, char *err, size_t errlen)
{
    static const char *const plan_cols[] = {"id",
                                            "shape_key_id",
                                            "run_id",
                                            "alignment",
                                            "planned_peak_bytes",
                                            "load_bound_bytes",
                                            "dynamic_peak_bytes",
                                            "algorithm"};
    static const char *const block_cols[] = {"plan_id",     "ordinal",   "allocation_id",   "node_name_id", "class",
                                             "start_event", "end_event", "requested_bytes", "bytes",        "offset"};
    if (!view_table_exists(m->db, "plans") || !view_table_exists(m->db, "plan_blocks"))
        return 0;
    for (size_t i = 0; i < sizeof plan_cols / sizeof *plan_cols; i++)
        if (!view_column_exists(m->db, "plans", plan_cols[i]))
            return 0; /* a plans table of another shape: no plan panel */
    for (size_t i = 0; i < sizeof block_cols / sizeof *block_cols; i++)
        if (!view_column_exists(m->db, "plan_blocks", block_cols[i]))
            return 0;
    sqlite3_stmt *st = NULL, *bt = NULL;
    int rc = -1, step;
    if (sqlite3_prepare_v2(m->db,
                           "SELECT id, shape_key_id, run_id, alignment, planned_peak_bytes, load_bound_bytes,"
                           " dynamic_peak_bytes, algorithm FROM plans ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m->db,
                           "SELECT ordinal, allocation_id, node_name_id, class, start_event, end_event,"
                           " requested_bytes, bytes, offset FROM plan_blocks WHERE plan_id = ?1 ORDER BY ordinal",
                           -1, &bt, NULL) != SQLITE_OK) {
        fail(m, err, errlen, "reading plans");
        goto done;
    }
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        struct view_plan *p = realloc(m->plans, (m->nplans + 1) * sizeof *p);
        if (!p)
            goto oom;
        m->plans = p;
        p = &p[m->nplans++];
        memset(p, 0, sizeof *p);
        p->id = sqlite3_column_int64(st, 0);
        p->shape_key_id = sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 1);
        p->run_id = sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 2);
        p->alignment = sqlite3_column_int64(st, 3);
        p->planned_peak = sqlite3_column_int64(st, 4);
        p->load_bound = sqlite3_column_int64(st, 5);
        p->dynamic_peak = sqlite3_column_int64(st, 6);
        snprintf(p->algorithm, sizeof p->algorithm, "%s", text(st, 7, ""));
        sqlite3_reset(bt);
        sqlite3_bind_int64(bt, 1, p->id);
        size_t cap = 0;
        while ((step = sqlite3_step(bt)) == SQLITE_ROW) {
            if (p->nblocks == cap) {
                cap = cap ? 2 * cap : 64;
                struct view_plan_block *b = realloc(p->blocks, cap * sizeof *b);
                if (!b)
                    goto oom;
                p->blocks = b;
            }
            struct view_plan_block *b = &p->blocks[p->nblocks++];
            b->ordinal = sqlite3_column_int64(bt, 0);
            b->allocation_id = sqlite3_column_type(bt, 1) == SQLITE_NULL ? -1 : sqlite3_column_int64(bt, 1);
            b->alloc = b->allocation_id < 0 ? -1 : alloc_by_id(m, by_id, b->allocation_id);
            b->node = sqlite3_column_type(bt, 2) == SQLITE_NULL
                          ? -1
                          : (m->have_analysis ? ws_analysis_node_by_id(&m->an, sqlite3_column_int64(bt, 2)) : -1);
            snprintf(b->cls, sizeof b->cls, "%s", text(bt, 3, ""));
            b->start_event = sqlite3_column_int64(bt, 4);
            b->end_event = sqlite3_column_int64(bt, 5);
            b->requested = sqlite3_column_int64(bt, 6);
            b->bytes = sqlite3_column_int64(bt, 7);
            b->offset = sqlite3_column_int64(bt, 8);
        }
        if (step != SQLITE_DONE) {
            fail(m, err, errlen, "reading plan blocks");
            goto done;
        }
    }
    rc = step == SQLITE_DONE ? 0 : fail(m, err, errlen, "reading plans");
    goto done;
oom:
    oom(m, err, errlen);
done:
    sqlite3_finalize(st);
    sqlite3_finalize(bt);
    return rc;
}

/* A result table as it is, every column: its schema may grow, and the page shows what is there.
 * Columns that reference strings (NAME_id) are shown as their text under NAME. */
static int read_table(struct view_model *m, const char *name, char *err, size_t errlen)
{
    if (!view_table_exists(m->db, name))
        return 0;
    sqlite3_stmt *info = NULL, *st = NULL;
    char sql[4096];
    size_t used = (size_t)snprintf(sql, sizeof sql, "SELECT ");
    int rc = -1, step, ncols = 0;
    struct view_table t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "%s", name);
    if (sqlite3_prepare_v2(m->db, "SELECT name FROM pragma_table_info(?1) ORDER BY cid", -1, &info, NULL) !=
            SQLITE_OK ||
        sqlite3_bind_text(info, 1, name, -1, SQLITE_STATIC) != SQLITE_OK)
        return fail(m, err, errlen, "reading a result table");
    while ((step = sqlite3_step(info)) == SQLITE_ROW && used < sizeof sql - 200) {
        const char *col = text(info, 0, "");
        size_t len = strlen(col);
        if (strchr(col, '"') || len > 60)
            continue; /* not a column of ours */
        char shown[64];
        int is_ref = len > 3 && !strcmp(col + len - 3, "_id") && strcmp(col, "run_id") && strcmp(col, "plan_id") &&
                     strcmp(col, "allocation_id") && strcmp(col, "partition_id") && strcmp(col, "process_id");
        snprintf(shown, sizeof shown, "%.*s", is_ref ? (int)(len - 3) : (int)len, col);
        if (is_ref)
            used += (size_t)snprintf(sql + used, sizeof sql - used, "%s(SELECT value FROM strings WHERE id = \"%s\")",
                                     ncols ? ", " : "", col);
        else
            used += (size_t)snprintf(sql + used, sizeof sql - used, "%s\"%s\"", ncols ? ", " : "", col);
        char **cols = realloc(t.columns, (t.ncols + 1) * sizeof *cols);
        if (!cols)
            goto oom;
        t.columns = cols;
        if (!(cols[t.ncols] = strdup(!strcmp(shown, "node_name") ? "node" : shown)))
            goto oom;
        t.ncols++;
        ncols++;
    }
    if (ncols == 0) {
        rc = 0;
        goto done;
    }
    snprintf(sql + used, sizeof sql - used, " FROM \"%s\" LIMIT 200000", name);
    if (sqlite3_prepare_v2(m->db, sql, -1, &st, NULL) != SQLITE_OK) {
        fail(m, err, errlen, "reading a result table");
        goto done;
    }
    size_t cap = 0;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (t.nrows == cap) {
            cap = cap ? 2 * cap : 256;
            sqlite3_value **cells = realloc(t.cells, cap * t.ncols * sizeof *cells);
            if (!cells)
                goto oom;
            t.cells = cells;
        }
        for (size_t c = 0; c < t.ncols; c++)
            if (!(t.cells[t.nrows * t.ncols + c] = sqlite3_value_dup(sqlite3_column_value(st, (int)c)))) {
                for (size_t k = 0; k < c; k++)
                    sqlite3_value_free(t.cells[t.nrows * t.ncols + k]);
                goto oom;
            }
        t.nrows++;
    }
    if (step != SQLITE_DONE) {
        fail(m, err, errlen, "reading a result table");
        goto done;
    }
    struct view_table *tables = realloc(m->tables, (m->ntables + 1) * sizeof *tables);
    if (!tables)
        goto oom;
    m->tables = tables;
    tables[m->ntables++] = t;
    memset(&t, 0, sizeof t);
    rc = 0;
    goto done;
oom:
    oom(m, err, errlen);
done:
    for (size_t i = 0; i < t.nrows * t.ncols; i++)
        sqlite3_value_free(t.cells[i]);
    free(t.cells);
    for (size_t i = 0; i < t.ncols; i++)
        free(t.columns[i]);
    free(t.columns);
    sqlite3_finalize(info);
    sqlite3_finalize(st);
    return rc;
}

static const struct view_alloc *sort_allocs;
static int by_alloc_id(const void *a, const void *b)
{
    int64_t x = sort_allocs[*(const int32_t *)a].id, y = sort_allocs[*(const int32_t *)b].id;
    return (x > y) - (x < y);
}

/* Result tables shown as panels when present; a table added by a later command (a partition
 * against a budget) gets its panel from the page once it is named here and there. */
static const char *const result_tables[] = {"verifications", "resolutions",     "partitions",
                                            "partition",     "partition_layers", "partition_rules"};

int view_model_load(struct view_model *m, sqlite3 *db, const char *trace, char *err, size_t errlen)
{
    int32_t *range_layer = NULL, *by_id = NULL;
    int rc = -1;
    memset(m, 0, sizeof *m);
    m->db = db;
    m->trace = trace;
    sqlite3_stmt *st = NULL;
    int anything = 0;
    if (sqlite3_prepare_v2(db, "SELECT EXISTS (SELECT 1 FROM ranges) OR EXISTS (SELECT 1 FROM allocations)", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        anything = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (read_meta(m, err, errlen) != 0 || read_bounds(m, err, errlen) != 0 || read_threads(m, err, errlen) != 0 ||
        read_processes(m, err, errlen) != 0)
        goto out;
    if (anything) {
        if (ws_analysis_load(db, trace, &m->an, err, errlen) != 0)
            goto out;
        m->have_analysis = 1;
        if (read_layers(m, &range_layer, err, errlen) != 0 || read_allocations(m, range_layer, err, errlen) != 0 ||
            read_names(m, range_layer, err, errlen) != 0 || compact_addresses(m, err, errlen) != 0 ||
            read_shapes(m, err, errlen) != 0)
            goto out;
    }
    /* From here on by time; by_id finds an allocation by its id (for the plans' blocks). */
    if (m->nallocs > 0)
        qsort(m->allocs, m->nallocs, sizeof *m->allocs, by_time);
    by_id = malloc((m->nallocs + 1) * sizeof *by_id);
    if (!by_id) {
        oom(m, err, errlen);
        goto out;
    }
    for (size_t i = 0; i < m->nallocs; i++)
        by_id[i] = (int32_t)i;
    sort_allocs = m->allocs;
    if (m->nallocs > 0)
        qsort(by_id, m->nallocs, sizeof *by_id, by_alloc_id);
    if (read_plans(m, by_id, err, errlen) != 0)
        goto out;
    for (size_t i = 0; i < sizeof result_tables / sizeof *result_tables; i++)
        if (read_table(m, result_tables[i], err, errlen) != 0)
            goto out;
    rc = 0;
out:
    free(range_layer);
    free(by_id);
    return rc;
}

void view_model_free(struct view_model *m)
{
    if (m->have_analysis)
        ws_analysis_free(&m->an);
    free(m->allocs);
    for (size_t d = 0; d < m->ndevices; d++)
        free(m->devices[d].segments);
    free(m->devices);
    for (size_t i = 0; i < m->napis; i++)
        free(m->apis[i]);
    free(m->apis);
    for (size_t i = 0; i < m->nthreads; i++)
        free(m->threads[i].name);
    free(m->threads);
    for (size_t i = 0; i < m->nlayers; i++)
        free(m->layers[i]);
    free(m->layers);
    for (size_t i = 0; i < m->nshapes; i++)
        free(m->shapes[i]);
    free(m->shapes);
    free(m->shape_ids);
    for (size_t p = 0; p < m->nplans; p++)
        free(m->plans[p].blocks);
    free(m->plans);
    for (size_t t = 0; t < m->ntables; t++) {
        for (size_t i = 0; i < m->tables[t].nrows * m->tables[t].ncols; i++)
            sqlite3_value_free(m->tables[t].cells[i]);
        free(m->tables[t].cells);
        for (size_t c = 0; c < m->tables[t].ncols; c++)
            free(m->tables[t].columns[c]);
        free(m->tables[t].columns);
    }
    free(m->tables);
    for (size_t i = 0; i < m->nmeta; i++) {
        free(m->meta_keys[i]);
        free(m->meta_values[i]);
    }
    free(m->meta_keys);
    free(m->meta_values);
    for (size_t i = 0; i < m->nprocesses; i++)
        free(m->process_names[i]);
    free(m->process_names);
    for (size_t i = 0; i < m->nnames; i++)
        free(m->names[i].name);
    free(m->names);
    memset(m, 0, sizeof *m);
}
