/*
 * Lifetimes, profiles and output bytes of a trace, computed in one streaming read.
 *
 * Every table is read once with ORDER BY on its primary key and processed in C: the analysis of
 * a trace of ten million events is a few sorts of flat arrays, never a query per row.
 */
#include "analysis.h"
#include "commands.h"
#include "sizes.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "progress.h"
#include "tracedb.h"

static const char *const class_names[WS_CLASS_COUNT] = {"workspace", "activation", "persistent", "unattributed"};

const char *ws_class_name(enum ws_class cls) { return cls < WS_CLASS_COUNT ? class_names[cls] : "?"; }

/* Grow *p (elements of size elem) so that it holds at least n + 1 elements. */
static int grow(void *pp, size_t *cap, size_t n, size_t elem)
{
    void **p = pp;
    if (n < *cap)
        return 0;
    size_t next = *cap ? *cap * 2 : 256;
    void *q = realloc(*p, next * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = next;
    return 0;
}

static int64_t column_or(sqlite3_stmt *st, int col, int64_t none)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? none : sqlite3_column_int64(st, col);
}

static int sql_fail(sqlite3 *db, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: %s", what, sqlite3_errmsg(db));
    return -1;
}

/* ---- lookups by id in arrays sorted by id ---- */

/* Position of id in an array of n elements of `stride` bytes, sorted by an int64_t id that is
 * each element's first member (struct ws_run, ws_range, ws_node); -1 when absent. */
static int32_t index_by_id(const void *base, size_t n, size_t stride, int64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (*(const int64_t *)((const char *)base + mid * stride) < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && *(const int64_t *)((const char *)base + lo * stride) == id ? (int32_t)lo : -1;
}

_Static_assert(offsetof(struct ws_run, id) == 0 && offsetof(struct ws_range, id) == 0 &&
                   offsetof(struct ws_node, name_id) == 0,
               "index_by_id reads the id as the first member");

static int32_t run_index(const struct ws_analysis *an, int64_t id)
{
    return index_by_id(an->runs, an->nruns, sizeof *an->runs, id);
}

static int32_t range_index(const struct ws_analysis *an, int64_t id)
{
    if (an->nranges == 0)
        return -1;
    /* Collectors number ranges densely; try the direct position before searching. */
    int64_t guess = id - an->ranges[0].id;
    if (guess >= 0 && (uint64_t)guess < an->nranges && an->ranges[guess].id == id)
        return (int32_t)guess;
    return index_by_id(an->ranges, an->nranges, sizeof *an->ranges, id);
}

int32_t ws_analysis_node_by_id(const struct ws_analysis *an, int64_t name_id)
{
    return index_by_id(an->nodes, an->nnodes, sizeof *an->nodes, name_id);
}

int32_t ws_analysis_node_by_name(const struct ws_analysis *an, const char *name)
{
    size_t lo = 0, hi = an->nnodes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(an->nodes[an->nodes_by_name[mid]].name, name);
        if (c == 0)
            return an->nodes_by_name[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* ---- loading ---- */

/* Progress of one load on a terminal: rows of ranges and allocations read, then sweep events. */
static struct ws_progress load_progress;
static uint64_t load_done;

static void load_tick(void) { ws_progress_update(&load_progress, ++load_done); }

/* Rows to read and events to sweep, from the largest rowids (no table scan). */
static uint64_t load_work(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    uint64_t n = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT COALESCE((SELECT MAX(rowid) FROM ranges), 0),"
                           " COALESCE((SELECT MAX(rowid) FROM allocations), 0)",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = (uint64_t)sqlite3_column_int64(st, 0) + 3 * (uint64_t)sqlite3_column_int64(st, 1);
    sqlite3_finalize(st);
    return n;
}

static int load_runs(sqlite3 *db, struct ws_analysis *an, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc = -1, step;
    if (sqlite3_prepare_v2(db, "SELECT id, shape_key_id, start_ns, end_ns FROM runs ORDER BY id", -1, &st, NULL) !=
        SQLITE_OK)
        goto done;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (grow(&an->runs, &cap, an->nruns, sizeof *an->runs) != 0) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        struct ws_run *r = &an->runs[an->nruns++];
        memset(r, 0, sizeof *r);
        r->id = sqlite3_column_int64(st, 0);
        r->shape_key_id = column_or(st, 1, -1);
        r->start_ns = sqlite3_column_int64(st, 2);
        r->end_ns = column_or(st, 3, WS_NS_NEVER);
    }
    if (step == SQLITE_DONE)
        rc = 0;
done:
    if (rc != 0)
        sql_fail(db, "reading runs", err, errlen);
out:
    sqlite3_finalize(st);
    return rc;
}

/* qsort has no context argument in C11; the analysis runs on one thread. */
static const struct ws_node *sort_nodes_ctx;
static int name_cmp_global(const void *a, const void *b)
{
    return strcmp(sort_nodes_ctx[*(const int32_t *)a].name, sort_nodes_ctx[*(const int32_t *)b].name);
}

/* Node names: every name of a push range, and every name that carries a declaration. */
static int load_nodes(sqlite3 *db, struct ws_analysis *an, char *err, size_t errlen)
{
    static const char sql[] = "SELECT id, value FROM strings WHERE id IN ("
                              " SELECT name_id FROM ranges WHERE kind = 'push' AND name_id IS NOT NULL"
                              " UNION SELECT node_name_id FROM declarations) ORDER BY id";
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc = -1, step;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto done;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (grow(&an->nodes, &cap, an->nnodes, sizeof *an->nodes) != 0)
            goto oom;
        struct ws_node *n = &an->nodes[an->nnodes];
        memset(n, 0, sizeof *n);
        n->name_id = sqlite3_column_int64(st, 0);
        n->profile_bytes = -1;
        const unsigned char *text = sqlite3_column_text(st, 1);
        n->name = strdup(text ? (const char *)text : "");
        if (!n->name)
            goto oom;
        an->nnodes++;
    }
    if (step != SQLITE_DONE)
        goto done;
    an->nodes_by_name = malloc((an->nnodes + 1) * sizeof *an->nodes_by_name);
    if (!an->nodes_by_name)
        goto oom;
    for (size_t i = 0; i < an->nnodes; i++)
        an->nodes_by_name[i] = (int32_t)i;
    sort_nodes_ctx = an->nodes;
    qsort(an->nodes_by_name, an->nnodes, sizeof *an->nodes_by_name, name_cmp_global);
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "out of memory");
    goto out;
done:
    sql_fail(db, "reading node names", err, errlen);
out:
    sqlite3_finalize(st);
    return rc;
}

/* Push ranges; parents[i] receives the id of the parent range (-1) for run synthesis. */
static int load_ranges(sqlite3 *db, struct ws_analysis *an, int64_t **parents, char *err, size_t errlen)
{
    static const char sql[] = "SELECT id, name_id, parent_id, run_id, start_ns, end_ns FROM ranges"
                              " WHERE kind = 'push' ORDER BY id";
    sqlite3_stmt *st = NULL;
    size_t cap = 0, pcap = 0;
    int rc = -1, step;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto done;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        size_t n = an->nranges;
        if (grow(&an->ranges, &cap, n, sizeof *an->ranges) != 0 ||
            grow(parents, &pcap, 2 * n + 1, sizeof **parents) != 0) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        struct ws_range *r = &an->ranges[n];
        load_tick();
        r->id = sqlite3_column_int64(st, 0);
        int64_t name_id = column_or(st, 1, -1);
        r->node = name_id < 0 ? -1 : ws_analysis_node_by_id(an, name_id);
        (*parents)[2 * n] = column_or(st, 2, -1);
        int64_t run_id = column_or(st, 3, -1);
        r->run = run_id < 0 ? -1 : run_index(an, run_id);
        r->start_ns = sqlite3_column_int64(st, 4);
        (*parents)[2 * n + 1] = column_or(st, 5, WS_NS_NEVER); /* end_ns, for synthesized runs */
        r->step = -1;
        if (r->node >= 0) {
            an->nodes[r->node].has_range = 1;
            an->nodes[r->node].occurrences++;
        }
        an->nranges++;
    }
    if (step == SQLITE_DONE)
        rc = 0;
done:
    if (rc != 0)
        sql_fail(db, "reading ranges", err, errlen);
out:
    sqlite3_finalize(st);
    return rc;
}

/* Without run markers every outermost range is one run: find each range's root by walking
 * parent links (with path compression, so deep nesting stays linear). */
static int synthesize_runs(struct ws_analysis *an, const int64_t *parent_end, char *err, size_t errlen)
{
    int32_t *root = malloc((an->nranges + 1) * sizeof *root);
    int rc = -1;
    if (!root)
        goto oom;
    for (size_t i = 0; i < an->nranges; i++)
        root[i] = -2; /* unknown */
    for (size_t i = 0; i < an->nranges; i++) {
        int32_t r = (int32_t)i;
        size_t guard = 0;
        while (root[r] == -2 && guard++ <= an->nranges) {
            int32_t p = parent_end[2 * r] < 0 ? -1 : range_index(an, parent_end[2 * r]);
            if (p < 0) {
                root[r] = r;
                break;
            }
            r = p;
        }
        int32_t top = root[r] >= 0 ? root[r] : r;
        for (int32_t c = (int32_t)i; root[c] == -2;) {
            root[c] = top;
            int32_t p = range_index(an, parent_end[2 * c]);
            if (p < 0)
                break;
            c = p;
        }
    }
    size_t cap = 0;
    for (size_t i = 0; i < an->nranges; i++) {
        if (root[i] != (int32_t)i)
            continue;
        if (grow(&an->runs, &cap, an->nruns, sizeof *an->runs) != 0)
            goto oom;
        struct ws_run *run = &an->runs[an->nruns];
        memset(run, 0, sizeof *run);
        run->id = an->ranges[i].id;
        run->shape_key_id = -1;
        run->start_ns = an->ranges[i].start_ns;
        run->end_ns = parent_end[2 * i + 1];
        an->ranges[i].run = (int32_t)an->nruns++;
    }
    for (size_t i = 0; i < an->nranges; i++)
        an->ranges[i].run = an->ranges[root[i]].run;
    an->runs_synthesized = 1;
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "out of memory");
out:
    free(root);
    return rc;
}

static const struct ws_range *step_ranges;
static int step_cmp(const void *a, const void *b)
{
    const struct ws_range *x = &step_ranges[*(const int32_t *)a], *y = &step_ranges[*(const int32_t *)b];
    if (x->run != y->run)
        return x->run < y->run ? -1 : 1;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Step = index of a node occurrence among the push ranges of its run, by start time. */
static int number_steps(struct ws_analysis *an, char *err, size_t errlen)
{
    int32_t *order = malloc((an->nranges + 1) * sizeof *order);
    if (!order) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < an->nranges; i++)
        if (an->ranges[i].run >= 0)
            order[n++] = (int32_t)i;
    step_ranges = an->ranges;
    qsort(order, n, sizeof *order, step_cmp);
    int32_t step = 0;
    for (size_t k = 0; k < n; k++) {
        if (k > 0 && an->ranges[order[k]].run != an->ranges[order[k - 1]].run)
            step = 0;
        an->ranges[order[k]].step = step++;
    }
    free(order);
    return 0;
}

static void classify(const struct ws_analysis *an, struct ws_lifetime *a)
{
    int freed = a->free_ns != WS_NS_NEVER;
    int freed_in_run = a->run >= 0 && freed && a->free_ns <= an->runs[a->run].end_ns;
    if (a->range < 0)
        a->cls = WS_CLASS_UNATTRIBUTED;
    else if (freed && a->free_range == a->range)
        a->cls = WS_CLASS_WORKSPACE;
    else if (freed_in_run)
        a->cls = WS_CLASS_ACTIVATION;
    else
        a->cls = WS_CLASS_PERSISTENT;
    if (a->run >= 0 && a->range >= 0 && an->ranges[a->range].run == a->run)
        a->alloc_step = an->ranges[a->range].step;
    if (freed_in_run && a->free_range >= 0 && an->ranges[a->free_range].run == a->run)
        a->free_step = an->ranges[a->free_range].step;
}

/*
 * The device memory the analysis classifies.  A pooling allocator that annotates itself with the
 * NVTX memory extension (schema version 2) describes its tensors as regions (memory 'region')
 * of heaps that lie in allocations it obtained from CUDA: the regions are analysed like
 * allocations, and the allocations holding heaps or regions (their containers) are not, so no
 * byte is counted twice.  Regions of host memory are left out like host allocations.
 */
/* The last column is the process: 1 in a trace of one process, else the thread's (a rowid
 * lookup), so that live bytes of two processes never mix. */
#define ALLOCATION_COLUMNS "SELECT id, bytes, alloc_ns, free_ns, range_id, free_range_id, run_id, device, "
#define ONE_PROCESS        "1"
#define THREAD_PROCESS     "COALESCE((SELECT t.process_id FROM threads t WHERE t.id = allocations.thread_id), 1)"
#define DEVICE_MEMORY      " FROM allocations WHERE status = 0 AND memory IN ('device', 'managed') ORDER BY id"
#define DEVICE_AND_REGIONS                                                                                             \
    " FROM allocations"                                                                                                \
    " WHERE status = 0 AND (memory IN ('device', 'managed') OR (memory = 'region' AND id NOT IN"                       \
    "   (SELECT allocation_id FROM memory_regions WHERE memory = 'host')))"                                            \
    " AND id NOT IN (SELECT allocation_id FROM memory_heaps WHERE allocation_id IS NOT NULL"                           \
    "   UNION SELECT container_id FROM memory_regions WHERE container_id IS NOT NULL)"                                 \
    " ORDER BY id"
static const char allocations_sql[] = ALLOCATION_COLUMNS ONE_PROCESS DEVICE_MEMORY;
static const char allocations_and_regions_sql[] = ALLOCATION_COLUMNS ONE_PROCESS DEVICE_AND_REGIONS;
static const char allocations_processes_sql[] = ALLOCATION_COLUMNS THREAD_PROCESS DEVICE_MEMORY;
static const char allocations_and_regions_processes_sql[] = ALLOCATION_COLUMNS THREAD_PROCESS DEVICE_AND_REGIONS;

static int load_allocations(sqlite3 *db, struct ws_analysis *an, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc = -1, step, regions = 0;
    int64_t total = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT COUNT(*) = 2 FROM sqlite_master WHERE type = 'table' AND name IN"
                           " ('memory_heaps', 'memory_regions')",
                           -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW)
        goto done;
    regions = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    st = NULL;
    an->processes = ws_tracedb_process_count(db);
    const char *sql = an->processes > 1 ? (regions ? allocations_and_regions_processes_sql : allocations_processes_sql)
                                        : (regions ? allocations_and_regions_sql : allocations_sql);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto done;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (grow(&an->allocs, &cap, an->nallocs, sizeof *an->allocs) != 0 || an->nallocs >= INT32_MAX / 2) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        struct ws_lifetime *a = &an->allocs[an->nallocs++];
        load_tick();
        memset(a, 0xff, sizeof *a); /* every index and step -1 */
        a->allocation_id = sqlite3_column_int64(st, 0);
        a->bytes = sqlite3_column_int64(st, 1);
        a->alloc_ns = sqlite3_column_int64(st, 2);
        a->free_ns = column_or(st, 3, WS_NS_NEVER);
        int64_t range = column_or(st, 4, -1), free_range = column_or(st, 5, -1);
        a->range = range < 0 ? -1 : range_index(an, range);
        a->free_range = free_range < 0 ? -1 : range_index(an, free_range);
        a->node = a->range < 0 ? -1 : an->ranges[a->range].node;
        if (an->runs_synthesized)
            a->run = a->range < 0 ? -1 : an->ranges[a->range].run;
        else
            a->run = sqlite3_column_type(st, 6) == SQLITE_NULL ? -1 : run_index(an, sqlite3_column_int64(st, 6));
        a->device = sqlite3_column_int(st, 7);
        a->process = sqlite3_column_int(st, 8);
        /* Every sum of allocation sizes in the analysis (live bytes, profiles, output bytes,
         * classes) is bounded by this total, so checking it once keeps all of them exact. */
        if (a->bytes < 0 || __builtin_add_overflow(total, a->bytes, &total)) {
            snprintf(err, errlen, "allocation %lld: %lld bytes: %s", (long long)a->allocation_id, (long long)a->bytes,
                     a->bytes < 0 ? "a size cannot be negative" : "sizes add up beyond 2^63 bytes");
            goto out;
        }
        classify(an, a);
        an->class_count[a->cls]++;
        an->class_bytes[a->cls] += a->bytes;
    }
    if (step == SQLITE_DONE)
        rc = 0;
done:
    if (rc != 0)
        sql_fail(db, "reading allocations", err, errlen);
out:
    sqlite3_finalize(st);
    return rc;
}

static int load_declarations(sqlite3 *db, struct ws_analysis *an, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc = -1, step;
    if (sqlite3_prepare_v2(db, "SELECT level, node_name_id, slot, bytes FROM declarations ORDER BY id", -1, &st,
                           NULL) != SQLITE_OK)
        goto done;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int level = sqlite3_column_int(st, 0);
        int32_t node = ws_analysis_node_by_id(an, sqlite3_column_int64(st, 1));
        if ((level != 1 && level != 2) || node < 0)
            continue; /* a level this version does not know, or a name missing from strings */
        if (grow(&an->decls, &cap, an->ndecls, sizeof *an->decls) != 0) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        struct ws_decl *d = &an->decls[an->ndecls++];
        d->node = node;
        d->level = (uint8_t)level;
        d->slot = sqlite3_column_int64(st, 2);
        d->bytes = sqlite3_column_int64(st, 3);
        if (d->bytes < 0) {
            snprintf(err, errlen, "a declaration of %lld bytes: a size cannot be negative", (long long)d->bytes);
            goto out;
        }
    }
    if (step == SQLITE_DONE)
        rc = 0;
done:
    if (rc != 0)
        sql_fail(db, "reading declarations", err, errlen);
out:
    sqlite3_finalize(st);
    return rc;
}

/* ---- the event sweep ---- */

struct event {
    int64_t ns;
    uint32_t alloc;   /* index into allocs */
    uint32_t is_free; /* allocation before free at equal times, as the live_bytes view orders them */
};

static int event_cmp(const void *a, const void *b)
{
    const struct event *x = a, *y = b;
    if (x->ns != y->ns)
        return x->ns < y->ns ? -1 : 1;
    if (x->is_free != y->is_free)
        return x->is_free < y->is_free ? -1 : 1;
    return x->alloc < y->alloc ? -1 : x->alloc > y->alloc;
}

static struct ws_device_peak *device_slot(struct ws_analysis *an, int32_t process, int32_t device, size_t *cap)
{
    for (size_t i = 0; i < an->ndevices; i++)
        if (an->devices[i].device == device && an->devices[i].process == process)
            return &an->devices[i];
    if (grow(&an->devices, cap, an->ndevices, sizeof *an->devices) != 0)
        return NULL;
    struct ws_device_peak *d = &an->devices[an->ndevices++];
    d->process = process;
    d->device = device;
    d->live = d->peak = 0;
    return d;
}

struct sweep_state {
    int64_t *ws_live, *ws_peak; /* per range: live and peak workspace bytes of the occurrence */
    int32_t *ws_slots;          /* per range: workspace allocations so far */
    size_t device_cap;
};

static int sweep_event(struct ws_analysis *an, struct sweep_state *s, const struct event *e)
{
    struct ws_lifetime *a = &an->allocs[e->alloc];
    struct ws_device_peak *dev = device_slot(an, a->process, a->device, &s->device_cap);
    if (!dev)
        return -1;
    int workspace = a->cls == WS_CLASS_WORKSPACE;
    if (!e->is_free) {
        dev->live += a->bytes;
        if (dev->live > dev->peak)
            dev->peak = dev->live;
        if (a->run >= 0) {
            a->start_event = an->runs[a->run].events++;
            a->alloc_seq = an->runs[a->run].allocations++;
        }
        if (workspace) {
            a->slot = s->ws_slots[a->range]++;
            s->ws_live[a->range] += a->bytes;
            if (s->ws_live[a->range] > s->ws_peak[a->range])
                s->ws_peak[a->range] = s->ws_live[a->range];
        }
        return 0;
    }
    dev->live -= a->bytes;
    if (a->run >= 0 && a->free_ns <= an->runs[a->run].end_ns)
        a->end_event = an->runs[a->run].events++;
    if (workspace)
        s->ws_live[a->range] -= a->bytes;
    return 0;
}

/* Sort every allocation and free by time once; each run numbers its own events in that order,
 * so one global order serves per-run event indices, workspace slots and device peaks alike. */
static int sweep(struct ws_analysis *an, char *err, size_t errlen)
{
    struct sweep_state s = {0};
    struct event *ev = malloc((2 * an->nallocs + 1) * sizeof *ev);
    s.ws_live = calloc(an->nranges + 1, sizeof *s.ws_live);
    s.ws_peak = calloc(an->nranges + 1, sizeof *s.ws_peak);
    s.ws_slots = calloc(an->nranges + 1, sizeof *s.ws_slots);
    int rc = -1;
    if (!ev || !s.ws_live || !s.ws_peak || !s.ws_slots)
        goto out;
    size_t n = 0;
    for (size_t i = 0; i < an->nallocs; i++) {
        ev[n++] = (struct event){an->allocs[i].alloc_ns, (uint32_t)i, 0};
        if (an->allocs[i].free_ns != WS_NS_NEVER)
            ev[n++] = (struct event){an->allocs[i].free_ns, (uint32_t)i, 1};
    }
    qsort(ev, n, sizeof *ev, event_cmp);
    for (size_t k = 0; k < n; k++) {
        load_tick();
        if (sweep_event(an, &s, &ev[k]) != 0)
            goto out;
    }
    for (size_t d = 0; d < an->ndevices; d++)
        if (an->devices[d].peak > an->peak_live_bytes)
            an->peak_live_bytes = an->devices[d].peak;
    for (size_t r = 0; r < an->nranges; r++) {
        int32_t node = an->ranges[r].node;
        if (node >= 0 && s.ws_slots[r] > 0 && s.ws_peak[r] > an->nodes[node].profile_bytes)
            an->nodes[node].profile_bytes = s.ws_peak[r];
    }
    rc = 0;
out:
    if (rc != 0)
        snprintf(err, errlen, "out of memory");
    free(ev);
    free(s.ws_live);
    free(s.ws_peak);
    free(s.ws_slots);
    return rc;
}

struct run_node_bytes {
    uint64_t key; /* run * nnodes + node */
    int64_t bytes;
};

static int key_cmp(const void *a, const void *b)
{
    uint64_t x = ((const struct run_node_bytes *)a)->key, y = ((const struct run_node_bytes *)b)->key;
    return x < y ? -1 : x > y;
}

/* Output bytes of a node = activation bytes its occurrences allocated in one run, max over runs. */
static int output_bytes(struct ws_analysis *an, char *err, size_t errlen)
{
    size_t n = 0;
    struct run_node_bytes *v = malloc((an->class_count[WS_CLASS_ACTIVATION] + 1) * sizeof *v);
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < an->nallocs; i++) {
        const struct ws_lifetime *a = &an->allocs[i];
        if (a->cls == WS_CLASS_ACTIVATION && a->node >= 0)
            v[n++] = (struct run_node_bytes){(uint64_t)a->run * an->nnodes + (uint64_t)a->node, a->bytes};
        if (a->cls == WS_CLASS_WORKSPACE && a->node >= 0)
            an->nodes[a->node].workspace_bytes += a->bytes;
    }
    qsort(v, n, sizeof *v, key_cmp);
    for (size_t k = 0; k < n;) {
        int64_t sum = 0;
        size_t j = k;
        for (; j < n && v[j].key == v[k].key; j++)
            sum += v[j].bytes;
        struct ws_node *node = &an->nodes[v[k].key % an->nnodes];
        if (sum > node->output_bytes)
            node->output_bytes = sum;
        k = j;
    }
    free(v);
    return 0;
}

static int trace_has_rows(sqlite3 *db, int64_t *count)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(db, "SELECT EXISTS (SELECT 1 FROM ranges) OR EXISTS (SELECT 1 FROM allocations)", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        *count = sqlite3_column_int64(st, 0);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

int ws_analysis_load(sqlite3 *db, const char *path, struct ws_analysis *an, char *err, size_t errlen)
{
    int64_t *parents = NULL, anything = 0;
    int rc = -1;
    memset(an, 0, sizeof *an);
    if (trace_has_rows(db, &anything) != 0) {
        sql_fail(db, "reading the trace", err, errlen);
        goto out;
    }
    if (!anything) {
        snprintf(err, errlen, "%s: empty trace: no allocations and no ranges were recorded", path);
        goto out;
    }
    char what[96];
    snprintf(what, sizeof what, "analysing %s", path);
    ws_progress_begin(&load_progress, what, "rows", load_work(db));
    load_done = 0;
    if (load_runs(db, an, err, errlen) != 0 || load_nodes(db, an, err, errlen) != 0 ||
        load_ranges(db, an, &parents, err, errlen) != 0)
        goto out;
    if (an->nruns == 0 && synthesize_runs(an, parents, err, errlen) != 0)
        goto out;
    if (number_steps(an, err, errlen) != 0 || load_allocations(db, an, err, errlen) != 0 ||
        load_declarations(db, an, err, errlen) != 0 || sweep(an, err, errlen) != 0 ||
        output_bytes(an, err, errlen) != 0)
        goto out;
    rc = 0;
out:
    ws_progress_end(&load_progress);
    free(parents);
    if (rc != 0) {
        ws_analysis_free(an);
        if (strncmp(err, path, strlen(path)) != 0) { /* every message names the file */
            char msg[512];
            snprintf(msg, sizeof msg, "%s", err);
            snprintf(err, errlen, "%s: %s", path, msg);
        }
    }
    return rc;
}

int ws_analysis_open(const char *path, int for_writing, sqlite3 **db, struct ws_analysis *an, char *err, size_t errlen)
{
    memset(an, 0, sizeof *an);
    if (ws_tracedb_open(path, for_writing ? WS_TRACEDB_WRITE : WS_TRACEDB_READ, db, err, errlen) != 0)
        return -1;
    if (ws_analysis_load(*db, path, an, err, errlen) != 0) {
        sqlite3_close(*db);
        *db = NULL;
        return -1;
    }
    return 0;
}

void ws_analysis_free(struct ws_analysis *an)
{
    for (size_t i = 0; i < an->nnodes; i++)
        free(an->nodes[i].name);
    free(an->nodes);
    free(an->nodes_by_name);
    free(an->runs);
    free(an->ranges);
    free(an->allocs);
    free(an->decls);
    free(an->devices);
    memset(an, 0, sizeof *an);
}

/* ---- writing results ---- */

int ws_results_begin(sqlite3 *db, const char *table, char *err, size_t errlen)
{
    static const char *const tables[] = {"lifetimes", "resolutions", "verifications"};
    char msg[512], sql[64];
    int known = 0;
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        known |= strcmp(tables[i], table) == 0;
    if (!known) { /* only our own table names ever reach the SQL text */
        snprintf(err, errlen, "unknown result table '%s'", table);
        return -1;
    }
    if (ws_tracedb_exec(db, "PRAGMA cache_size=-65536; BEGIN IMMEDIATE", msg, sizeof msg) != 0) {
        snprintf(err, errlen, "cannot write results: %s", msg);
        return -1;
    }
    snprintf(sql, sizeof sql, "DELETE FROM %s", table);
    if (ws_tracedb_exec(db, ws_analysis_sql, msg, sizeof msg) != 0 || ws_tracedb_exec(db, sql, msg, sizeof msg) != 0) {
        snprintf(err, errlen, "cannot write results: %s", msg);
        ws_tracedb_exec(db, "ROLLBACK", msg, sizeof msg);
        return -1;
    }
    return 0;
}

int ws_results_end(sqlite3 *db, int ok, char *err, size_t errlen)
{
    char msg[512];
    if (!ok) {
        ws_tracedb_exec(db, "ROLLBACK", msg, sizeof msg);
        return -1;
    }
    if (ws_tracedb_exec(db, "COMMIT", msg, sizeof msg) != 0) {
        snprintf(err, errlen, "cannot write results: %s", msg);
        ws_tracedb_exec(db, "ROLLBACK", msg, sizeof msg);
        return -1;
    }
    return 0;
}

static void bind_or_null(sqlite3_stmt *st, int col, int64_t value)
{
    if (value < 0)
        sqlite3_bind_null(st, col);
    else
        sqlite3_bind_int64(st, col, value);
}

int ws_lifetimes_write(sqlite3 *db, const struct ws_analysis *an, char *err, size_t errlen)
{
    static const char sql[] = "INSERT INTO lifetimes (allocation_id, run_id, class, node_name_id, alloc_step,"
                              " free_step, alloc_seq, start_event, end_event, slot, bytes)"
                              " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";
    sqlite3_stmt *st = NULL;
    int ok = 0;
    if (ws_results_begin(db, "lifetimes", err, errlen) != 0)
        return -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto done;
    for (size_t i = 0; i < an->nallocs; i++) {
        const struct ws_lifetime *a = &an->allocs[i];
        sqlite3_bind_int64(st, 1, a->allocation_id);
        bind_or_null(st, 2, a->run < 0 ? -1 : an->runs[a->run].id);
        sqlite3_bind_text(st, 3, ws_class_name(a->cls), -1, SQLITE_STATIC);
        bind_or_null(st, 4, a->node < 0 ? -1 : an->nodes[a->node].name_id);
        bind_or_null(st, 5, a->alloc_step);
        bind_or_null(st, 6, a->free_step);
        bind_or_null(st, 7, a->alloc_seq);
        bind_or_null(st, 8, a->start_event);
        bind_or_null(st, 9, a->end_event);
        bind_or_null(st, 10, a->slot);
        sqlite3_bind_int64(st, 11, a->bytes);
        if (sqlite3_step(st) != SQLITE_DONE || sqlite3_reset(st) != SQLITE_OK)
            goto done;
    }
    ok = 1;
done:
    if (!ok)
        sql_fail(db, "writing lifetimes", err, errlen);
    sqlite3_finalize(st);
    return ws_results_end(db, ok, err, errlen);
}

/* ---- Level-1 estimates from a file ---- */

static int estimate_add(struct ws_estimates *est, size_t *cap, const char *node, int64_t slot, int64_t bytes)
{
    if (grow(&est->items, cap, est->count, sizeof *est->items) != 0)
        return -1;
    char *copy = strdup(node);
    if (!copy)
        return -1;
    est->items[est->count++] = (struct ws_estimate){copy, slot, bytes};
    return 0;
}

/* A non-negative decimal integer that fits in int64, with nothing after it. */
static int parse_count(const char *text, int64_t *out)
{
    char *end = NULL;
    if (!text || *text < '0' || *text > '9')
        return -1;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

static int json_bytes(json_t *value, int64_t *out)
{
    if (!json_is_integer(value) || json_integer_value(value) < 0)
        return -1;
    *out = json_integer_value(value);
    return 0;
}

static int json_node(struct ws_estimates *est, size_t *cap, const char *path, const char *name, json_t *value,
                     char *err, size_t errlen)
{
    int64_t bytes, slot;
    if (json_is_integer(value)) { /* "NAME": bytes is slot 0 */
        if (json_bytes(value, &bytes) != 0)
            goto bad_bytes;
        return estimate_add(est, cap, name, 0, bytes) == 0 ? 0 : (snprintf(err, errlen, "out of memory"), -1);
    }
    if (!json_is_object(value)) {
        snprintf(err, errlen, "%s: node '%s': expected bytes or an object with \"slots\"", path, name);
        return -1;
    }
    const char *key;
    json_t *item;
    json_object_foreach(value, key, item)
    {
        if (strcmp(key, "output_bytes") == 0) {
            if (json_bytes(item, &bytes) != 0)
                goto bad_bytes;
            if (estimate_add(est, cap, name, -1, bytes) != 0)
                goto oom;
        } else if (strcmp(key, "slots") == 0 && json_is_object(item)) {
            const char *slot_key;
            json_t *slot_value;
            json_object_foreach(item, slot_key, slot_value)
            {
                if (parse_count(slot_key, &slot) != 0 || slot > UINT32_MAX) {
                    snprintf(err, errlen, "%s: node '%s': slot '%s' is not a slot number", path, name, slot_key);
                    return -1;
                }
                if (json_bytes(slot_value, &bytes) != 0) {
                    snprintf(err, errlen, "%s: node '%s' slot %s: bytes must be a non-negative integer", path, name,
                             slot_key);
                    return -1;
                }
                if (estimate_add(est, cap, name, slot, bytes) != 0)
                    goto oom;
            }
        } else {
            snprintf(err, errlen, "%s: node '%s': unexpected key '%s' (expected \"slots\" or \"output_bytes\")", path,
                     name, key);
            return -1;
        }
    }
    return 0;
bad_bytes:
    snprintf(err, errlen, "%s: node '%s': bytes must be a non-negative integer", path, name);
    return -1;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}

static int load_json_estimates(const char *path, struct ws_estimates *est, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    size_t cap = 0;
    int rc = -1;
    if (!root) {
        snprintf(err, errlen, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
        return -1;
    }
    json_t *nodes = json_object_get(root, "nodes");
    if (!json_is_object(root) || (nodes && !json_is_object(nodes))) {
        snprintf(err, errlen, "%s: expected an object of node names (or {\"nodes\": {...}})", path);
        goto out;
    }
    const char *name;
    json_t *value;
    json_object_foreach(nodes ? nodes : root, name, value)
    {
        if (json_node(est, &cap, path, name, value, err, errlen) != 0)
            goto out;
    }
    rc = 0;
out:
    json_decref(root);
    return rc;
}

/* Split one CSV line in place into at most max fields ("..." quoting with "" for a quote). */
static int csv_fields(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max)
            return -1;
        char *out = p;
        fields[n++] = p;
        if (*p == '"') {
            p++;
            for (;;) {
                if (*p == '\0')
                    return -1; /* unterminated quote */
                if (*p == '"' && p[1] == '"') {
                    *out++ = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    *out++ = *p++;
                }
            }
            if (*p != ',' && *p != '\0')
                return -1;
        } else {
            while (*p && *p != ',')
                *out++ = *p++;
        }
        int more = *p == ',';
        *out = '\0';
        if (!more)
            return n;
        p++;
    }
}

static int csv_line(struct ws_estimates *est, size_t *cap, const char *path, long lineno, char *line, char *err,
                    size_t errlen)
{
    char *f[4];
    int64_t slot, bytes;
    int n = csv_fields(line, f, 4);
    if (n != 3) {
        snprintf(err, errlen, "%s:%ld: expected 3 columns node,slot,bytes", path, lineno);
        return -1;
    }
    if (lineno == 1 && strcmp(f[0], "node") == 0)
        return 0; /* header */
    if (f[0][0] == '\0') {
        snprintf(err, errlen, "%s:%ld: empty node name", path, lineno);
        return -1;
    }
    if (strcmp(f[1], "output") == 0)
        slot = -1;
    else if (parse_count(f[1], &slot) != 0 || slot > UINT32_MAX) {
        snprintf(err, errlen, "%s:%ld: slot '%s' is not a slot number or 'output'", path, lineno, f[1]);
        return -1;
    }
    if (parse_count(f[2], &bytes) != 0) {
        snprintf(err, errlen, "%s:%ld: bytes '%s' is not a non-negative integer", path, lineno, f[2]);
        return -1;
    }
    if (estimate_add(est, cap, f[0], slot, bytes) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

static int load_csv_estimates(const char *path, FILE *in, struct ws_estimates *est, char *err, size_t errlen)
{
    char *line = NULL;
    size_t len = 0, cap = 0;
    ssize_t got;
    long lineno = 0;
    int rc = -1;
    while ((got = getline(&line, &len, in)) >= 0) {
        lineno++;
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r'))
            line[--got] = '\0';
        if (got == 0 || line[0] == '#')
            continue;
        if (csv_line(est, &cap, path, lineno, line, err, errlen) != 0)
            goto out;
    }
    if (ferror(in)) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    free(line);
    return rc;
}

int ws_estimates_load(const char *path, struct ws_estimates *est, char *err, size_t errlen)
{
    int rc = -1, c;
    memset(est, 0, sizeof *est);
    FILE *in = fopen(path, "r");
    if (!in) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    /* JSON starts with '{' (after white space); anything else is read as CSV. */
    while ((c = fgetc(in)) == ' ' || c == '\t' || c == '\n' || c == '\r')
        ;
    if (c == '{') {
        rc = load_json_estimates(path, est, err, errlen);
    } else if (c == EOF && !ferror(in)) {
        snprintf(err, errlen, "%s: empty estimates file", path);
    } else {
        rewind(in);
        rc = load_csv_estimates(path, in, est, err, errlen);
    }
    fclose(in);
    if (rc != 0)
        ws_estimates_free(est);
    return rc;
}

void ws_estimates_free(struct ws_estimates *est)
{
    for (size_t i = 0; i < est->count; i++)
        free(est->items[i].node);
    free(est->items);
    memset(est, 0, sizeof *est);
}

/* ---- per (node, slot) figures shared by resolve and verify ---- */

enum { FIG_L1, FIG_L2, FIG_OBSERVED, FIG_OUTPUT };

struct figure {
    int32_t node;
    uint8_t kind; /* FIG_* */
    int64_t slot, bytes;
};

static int figure_cmp(const void *a, const void *b)
{
    const struct figure *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    if (x->slot != y->slot)
        return x->slot < y->slot ? -1 : 1;
    return (x->kind > y->kind) - (x->kind < y->kind);
}

struct figures {
    struct figure *v;
    size_t n, cap;
};

static int figure_add(struct figures *f, int32_t node, int kind, int64_t slot, int64_t bytes)
{
    if (grow(&f->v, &f->cap, f->n, sizeof *f->v) != 0)
        return -1;
    f->v[f->n++] = (struct figure){node, (uint8_t)kind, slot, bytes};
    return 0;
}

/* The largest observed bytes per (node, slot).  Slots number the workspace allocations of one
 * occurrence from 0, so a flat table with one row per node holds every observed slot; reducing
 * there keeps the figures list small on traces with millions of workspace allocations. */
static int observed_figures(const struct ws_analysis *an, struct figures *f)
{
    size_t *base = calloc(an->nnodes + 1, sizeof *base);
    int64_t *max = NULL;
    int rc = -1;
    if (!base)
        goto out;
    for (size_t i = 0; i < an->nallocs; i++) {
        const struct ws_lifetime *a = &an->allocs[i];
        if (a->cls == WS_CLASS_WORKSPACE && a->node >= 0 && (size_t)a->slot + 1 > base[a->node + 1])
            base[a->node + 1] = (size_t)a->slot + 1;
    }
    for (size_t k = 0; k < an->nnodes; k++)
        base[k + 1] += base[k];
    size_t nslots = base[an->nnodes];
    max = malloc((nslots + 1) * sizeof *max);
    if (!max)
        goto out;
    for (size_t s = 0; s < nslots; s++)
        max[s] = -1;
    for (size_t i = 0; i < an->nallocs; i++) {
        const struct ws_lifetime *a = &an->allocs[i];
        if (a->cls == WS_CLASS_WORKSPACE && a->node >= 0 && a->bytes > max[base[a->node] + (size_t)a->slot])
            max[base[a->node] + (size_t)a->slot] = a->bytes;
    }
    for (size_t k = 0; k < an->nnodes; k++)
        for (size_t s = base[k]; s < base[k + 1]; s++)
            if (max[s] >= 0 && figure_add(f, (int32_t)k, FIG_OBSERVED, (int64_t)(s - base[k]), max[s]) != 0)
                goto out;
    rc = 0;
out:
    free(base);
    free(max);
    return rc;
}

/* Declarations of the trace, file estimates (Level 1 and output bytes) and, when asked, the
 * observed workspace; sorted by node, slot, kind. */
static int collect_figures(const struct ws_analysis *an, const struct ws_estimates *est, int observed,
                           struct figures *f)
{
    for (size_t i = 0; i < an->ndecls; i++)
        if (figure_add(f, an->decls[i].node, an->decls[i].level == 1 ? FIG_L1 : FIG_L2, an->decls[i].slot,
                       an->decls[i].bytes) != 0)
            return -1;
    for (size_t i = 0; est && i < est->count; i++) {
        int32_t node = ws_analysis_node_by_name(an, est->items[i].node);
        int64_t slot = est->items[i].slot;
        if (node >= 0 && figure_add(f, node, slot < 0 ? FIG_OUTPUT : FIG_L1, slot, est->items[i].bytes) != 0)
            return -1;
    }
    if (observed && observed_figures(an, f) != 0)
        return -1;
    if (f->n > 0) /* a trace without declarations has no figures: f->v is NULL */
        qsort(f->v, f->n, sizeof *f->v, figure_cmp);
    return 0;
}

/* ---- resolution ---- */

static const char *const source_names[WS_SOURCE_COUNT] = {"estimator", "profile", "max", "fallback"};

const char *ws_source_name(enum ws_source source) { return source < WS_SOURCE_COUNT ? source_names[source] : "?"; }

static int64_t fallback_bytes(int64_t output, double multiplier)
{
    long double v = ceill((long double)output * multiplier);
    return v >= (long double)INT64_MAX ? INT64_MAX : (int64_t)v;
}

static void resolve_one(struct ws_resolution *r, double multiplier)
{
    if (r->estimate_bytes >= 0 && r->profile_bytes >= 0) {
        r->source = WS_SOURCE_MAX;
        r->resolved_bytes = r->estimate_bytes > r->profile_bytes ? r->estimate_bytes : r->profile_bytes;
    } else if (r->estimate_bytes >= 0) {
        r->source = WS_SOURCE_ESTIMATOR;
        r->resolved_bytes = r->estimate_bytes;
    } else if (r->profile_bytes >= 0) {
        r->source = WS_SOURCE_PROFILE;
        r->resolved_bytes = r->profile_bytes;
    } else {
        r->source = WS_SOURCE_FALLBACK;
        r->resolved_bytes = fallback_bytes(r->output_bytes, multiplier);
    }
}

/* Fold the sorted figures of one node into its estimate (sum over slots of the largest Level-1
 * figure of each slot) and its output bytes (largest of trace and file). */
static size_t fold_estimates(const struct figures *f, size_t k, struct ws_resolution *r)
{
    int32_t node = f->v[k].node;
    while (k < f->n && f->v[k].node == node) {
        int64_t slot = f->v[k].slot, best = -1;
        for (; k < f->n && f->v[k].node == node && f->v[k].slot == slot; k++) {
            if (f->v[k].kind == FIG_L1 && f->v[k].bytes > best)
                best = f->v[k].bytes;
            if (f->v[k].kind == FIG_OUTPUT && f->v[k].bytes > r->output_bytes)
                r->output_bytes = f->v[k].bytes;
        }
        if (best >= 0)
            r->estimate_bytes = ws_sat_add(r->estimate_bytes < 0 ? 0 : r->estimate_bytes, best);
    }
    return k;
}

int ws_resolve(const struct ws_analysis *an, const struct ws_estimates *est, double multiplier,
               struct ws_resolution **out, size_t *count, char *err, size_t errlen)
{
    struct figures f = {0};
    struct ws_resolution *res = calloc(an->nnodes + 1, sizeof *res);
    *out = NULL;
    *count = 0;
    if (!res || collect_figures(an, est, 0, &f) != 0) {
        free(res);
        free(f.v);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < an->nnodes; i++)
        res[i] = (struct ws_resolution){(int32_t)i, an->nodes[i].profile_bytes, -1, an->nodes[i].output_bytes, 0, 0};
    for (size_t k = 0; k < f.n;)
        k = fold_estimates(&f, k, &res[f.v[k].node]);
    size_t n = 0;
    for (size_t i = 0; i < an->nnodes; i++) {
        if (!an->nodes[i].has_range)
            continue; /* a declaration for a node that never ran is not a node of this trace */
        resolve_one(&res[i], multiplier);
        res[n++] = res[i];
    }
    free(f.v);
    *out = res;
    *count = n;
    return 0;
}

/* ---- verification ---- */

static const char *const verdict_names[WS_VERDICT_COUNT] = {
    "ok", "over-reservation", "under-declared", "idle-reservation", "undeclared", "unavailable"};

const char *ws_verdict_name(enum ws_verdict verdict)
{
    return verdict < WS_VERDICT_COUNT ? verdict_names[verdict] : "?";
}

/* The rules of docs/analysis.md, first match wins; -1 means absent. */
enum ws_verdict ws_verdict_of(int64_t level1, int64_t level2, int64_t observed)
{
    if (level2 >= 0 && level1 >= 0 && level2 > level1)
        return WS_VERDICT_OVER_RESERVATION;
    if (level2 >= 0 && observed > level2)
        return WS_VERDICT_UNDER_DECLARED;
    if (level2 > 0 && observed < 0)
        return WS_VERDICT_IDLE_RESERVATION;
    if (level2 < 0 && level1 < 0 && observed >= 0)
        return WS_VERDICT_UNDECLARED;
    if (level2 == 0 && observed < 0)
        return WS_VERDICT_OK; /* empty outputs declare nothing */
    if (level2 >= 0 && level1 < 0)
        return WS_VERDICT_UNAVAILABLE; /* a declaration with no reservation to check it against */
    if (level2 < 0 && (level1 > 0 || observed >= 0))
        return WS_VERDICT_UNAVAILABLE; /* a reservation, or a use, whose declaration is missing */
    return WS_VERDICT_OK;
}

int ws_verify(const struct ws_analysis *an, const struct ws_estimates *est, struct ws_verification **out, size_t *count,
              char *err, size_t errlen)
{
    struct figures f = {0};
    struct ws_verification *v = NULL;
    size_t n = 0, cap = 0;
    int rc = -1;
    *out = NULL;
    *count = 0;
    if (collect_figures(an, est, 1, &f) != 0)
        goto out;
    for (size_t k = 0; k < f.n;) {
        struct ws_verification row = {f.v[k].node, f.v[k].slot, -1, -1, -1, 0};
        size_t j = k;
        for (; j < f.n && f.v[j].node == row.node && f.v[j].slot == row.slot; j++) {
            int64_t b = f.v[j].bytes;
            if (f.v[j].kind == FIG_L1 && b > row.level1_bytes)
                row.level1_bytes = b;
            else if (f.v[j].kind == FIG_L2 && b > row.level2_bytes)
                row.level2_bytes = b;
            else if (f.v[j].kind == FIG_OBSERVED && b > row.observed_bytes)
                row.observed_bytes = b;
        }
        k = j;
        if (row.slot < 0)
            continue; /* output bytes from a file: not a workspace slot */
        row.verdict = (uint8_t)ws_verdict_of(row.level1_bytes, row.level2_bytes, row.observed_bytes);
        if (grow(&v, &cap, n, sizeof *v) != 0)
            goto out;
        v[n++] = row;
    }
    rc = 0;
out:
    free(f.v);
    if (rc != 0) {
        free(v);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *out = v;
    *count = n;
    return 0;
}

int ws_analysis_start(const char *trace, const char *estimates_path, sqlite3 **db, struct ws_analysis *an,
                      struct ws_estimates *est)
{
    char err[1024];
    if (estimates_path && ws_estimates_load(estimates_path, est, err, sizeof err) != 0) {
        ws_error("%s", err);
        return -1;
    }
    if (ws_analysis_open(trace, 1, db, an, err, sizeof err) != 0) {
        ws_error("%s", err);
        return -1;
    }
    return 0;
}
