/*
 * load.c - the trace as the analysis sees it: runs, node names, push ranges, declarations with
 * their details and regions, and device allocations, each table read once in primary-key order
 * into flat arrays.  A trace of ten million events is a few sorts of flat arrays, never a query
 * per row.  Lifetimes and profiles are computed from these arrays in lifetimes.c.
 */
#include "analysis.h"
#include "commands.h"
#include "estimates.h"
#include "internal.h"
#include "sizes.h"

#include <errno.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "progress.h"
#include "tracedb.h"

static const char *const class_names[WS_CLASS_COUNT] = {"workspace", "activation", "persistent", "unattributed"};

const char *ws_class_name(enum ws_class cls) { return cls < WS_CLASS_COUNT ? class_names[cls] : "?"; }

static const char *const tactic_names[WS_TACTIC_COUNT] = {NULL, "cached", "cached-free", "miss"};

const char *ws_tactic_name(enum ws_tactic tactic) { return tactic < WS_TACTIC_COUNT ? tactic_names[tactic] : NULL; }

static enum ws_tactic tactic_of(const unsigned char *text)
{
    for (int t = WS_TACTIC_CACHED; text && t < WS_TACTIC_COUNT; t++)
        if (strcmp((const char *)text, tactic_names[t]) == 0)
            return (enum ws_tactic)t;
    return WS_TACTIC_NONE; /* none given, or a kind this version does not know */
}

int ws_grow(void *pp, size_t *cap, size_t n, size_t elem)
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

int64_t ws_column_or(sqlite3_stmt *st, int col, int64_t none)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? none : sqlite3_column_int64(st, col);
}

int ws_sql_fail(sqlite3 *db, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: %s", what, sqlite3_errmsg(db));
    return -1;
}

static int oom(char *err, size_t errlen)
{
    snprintf(err, errlen, "out of memory");
    return -1;
}

static int table_exists(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

/* ---- lookups by id in arrays sorted by id ---- */

/* Position of id in an array of n elements of `stride` bytes, sorted by an int64_t id that is
 * each element's first member (struct ws_run, ws_range, ws_node, ws_decl, ws_key); -1 when absent. */
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
                   offsetof(struct ws_node, name_id) == 0 && offsetof(struct ws_decl, id) == 0 &&
                   offsetof(struct ws_key, id) == 0,
               "index_by_id reads the id as the first member");

static int32_t run_index(const struct ws_analysis *an, int64_t id)
{
    return index_by_id(an->runs, an->nruns, sizeof *an->runs, id);
}

static int32_t range_index(const struct ws_analysis *an, int64_t id)
{
    if (an->nranges == 0 || id < 0)
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

const char *ws_analysis_key_text(const struct ws_analysis *an, int64_t shape_key_id)
{
    int32_t k = shape_key_id < 0 ? -1 : index_by_id(an->keys, an->nkeys, sizeof *an->keys, shape_key_id);
    return k < 0 ? NULL : an->keys[k].text;
}

int64_t ws_analysis_range_key(const struct ws_analysis *an, int32_t range)
{
    int32_t run = range < 0 ? -1 : an->ranges[range].run;
    return run < 0 ? -1 : an->runs[run].shape_key_id;
}

/* ---- the range tree ---- */

int32_t ws_owner_of(const struct ws_analysis *an, int32_t range)
{
    size_t guard = 0;
    for (int32_t r = range; r >= 0 && guard++ <= an->nranges; r = an->ranges[r].parent) {
        int32_t node = an->ranges[r].node;
        if (node >= 0 && an->nodes[node].declares)
            return r;
    }
    return range;
}

int ws_range_inside(const struct ws_analysis *an, int32_t range, int32_t ancestor)
{
    size_t guard = 0;
    for (int32_t r = range; r >= 0 && guard++ <= an->nranges; r = an->ranges[r].parent)
        if (r == ancestor)
            return 1;
    return 0;
}

/* ---- reading the tables ---- */

/* Progress of one load on a terminal: rows of ranges and allocations read, then sweep events. */
static struct ws_progress load_progress;
static uint64_t load_done;

void ws_load_tick(void) { ws_progress_update(&load_progress, ++load_done); }

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
        if (ws_grow(&an->runs, &cap, an->nruns, sizeof *an->runs) != 0) {
            oom(err, errlen);
            goto out;
        }
        struct ws_run *r = &an->runs[an->nruns++];
        memset(r, 0, sizeof *r);
        r->id = sqlite3_column_int64(st, 0);
        r->shape_key_id = ws_column_or(st, 1, -1);
        r->start_ns = sqlite3_column_int64(st, 2);
        r->end_ns = ws_column_or(st, 3, WS_NS_NEVER);
    }
    if (step == SQLITE_DONE)
        rc = 0;
done:
    if (rc != 0)
        ws_sql_fail(db, "reading runs", err, errlen);
out:
    sqlite3_finalize(st);
    return rc;
}

/* The texts of the runs' shape keys, for reports. */
static int load_keys(sqlite3 *db, struct ws_analysis *an, char *err, size_t errlen)
{
    static const char sql[] = "SELECT id, value FROM strings WHERE id IN (SELECT shape_key_id FROM runs) ORDER BY id";
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc = -1, step;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto done;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *text = sqlite3_column_text(st, 1);
        if (ws_grow(&an->keys, &cap, an->nkeys, sizeof *an->keys) != 0 ||
            !(an->keys[an->nkeys].text = strdup(text ? (const char *)text : ""))) {
            oom(err, errlen);
            goto out;
        }
        an->keys[an->nkeys++].id = sqlite3_column_int64(st, 0);
    }
    if (step == SQLITE_DONE)
        rc = 0;
done:
    if (rc != 0)
        ws_sql_fail(db, "reading shape keys", err, errlen);
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
        if (ws_grow(&an->nodes, &cap, an->nnodes, sizeof *an->nodes) != 0)
            goto nomem;
        struct ws_node *n = &an->nodes[an->nnodes];
        memset(n, 0, sizeof *n);
        n->name_id = sqlite3_column_int64(st, 0);
        n->profile_bytes = -1;
        const unsigned char *text = sqlite3_column_text(st, 1);
        n->name = strdup(text ? (const char *)text : "");
        if (!n->name)
            goto nomem;
        an->nnodes++;
    }
    if (step != SQLITE_DONE)
        goto done;
    an->nodes_by_name = malloc((an->nnodes + 1) * sizeof *an->nodes_by_name);
    if (!an->nodes_by_name)
        goto nomem;
    for (size_t i = 0; i < an->nnodes; i++)
        an->nodes_by_name[i] = (int32_t)i;
    sort_nodes_ctx = an->nodes;
    qsort(an->nodes_by_name, an->nnodes, sizeof *an->nodes_by_name, name_cmp_global);
    rc = 0;
    goto out;
nomem:
    oom(err, errlen);
    goto out;
done:
    ws_sql_fail(db, "reading node names", err, errlen);
out:
    sqlite3_finalize(st);
    return rc;
}

/* Push ranges; parent_ids[i] receives the id of range i's parent (-1) until parents are linked. */
static int load_ranges(sqlite3 *db, struct ws_analysis *an, int64_t **parent_ids, char *err, size_t errlen)
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
        if (ws_grow(&an->ranges, &cap, n, sizeof *an->ranges) != 0 ||
            ws_grow(parent_ids, &pcap, n, sizeof **parent_ids) != 0) {
            oom(err, errlen);
            goto out;
        }
        struct ws_range *r = &an->ranges[n];
        ws_load_tick();
        r->id = sqlite3_column_int64(st, 0);
        int64_t name_id = ws_column_or(st, 1, -1);
        r->node = name_id < 0 ? -1 : ws_analysis_node_by_id(an, name_id);
        (*parent_ids)[n] = ws_column_or(st, 2, -1);
        int64_t run_id = ws_column_or(st, 3, -1);
        r->run = run_id < 0 ? -1 : run_index(an, run_id);
        r->start_ns = sqlite3_column_int64(st, 4);
        r->end_ns = ws_column_or(st, 5, WS_NS_NEVER);
        r->step = -1;
        r->parent = -1;
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
        ws_sql_fail(db, "reading ranges", err, errlen);
out:
    sqlite3_finalize(st);
    return rc;
}

/* A parent must come first (ranges open in order); anything else is a damaged link, ignored. */
static void link_parents(struct ws_analysis *an, const int64_t *parent_ids)
{
    for (size_t i = 0; i < an->nranges; i++) {
        int32_t p = range_index(an, parent_ids[i]);
        an->ranges[i].parent = p >= 0 && (size_t)p < i ? p : -1;
    }
}

/* Without run markers every outermost range is one run: a parent comes before its children, so
 * one pass in id order hands each range the run of its parent. */
static int synthesize_runs(struct ws_analysis *an, char *err, size_t errlen)
{
    size_t cap = 0;
    for (size_t i = 0; i < an->nranges; i++) {
        struct ws_range *r = &an->ranges[i];
        if (r->parent >= 0) {
            r->run = an->ranges[r->parent].run;
            continue;
        }
        if (ws_grow(&an->runs, &cap, an->nruns, sizeof *an->runs) != 0)
            return oom(err, errlen);
        struct ws_run *run = &an->runs[an->nruns];
        memset(run, 0, sizeof *run);
        run->id = r->id;
        run->shape_key_id = -1;
        run->start_ns = r->start_ns;
        run->end_ns = r->end_ns;
        r->run = (int32_t)an->nruns++;
    }
    an->runs_synthesized = 1;
    return 0;
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
    if (!order)
        return oom(err, errlen);
    size_t n = 0;
    for (size_t i = 0; i < an->nranges; i++) {
        if (an->ranges[i].run < 0)
            continue;
        order[n++] = (int32_t)i;
        if (an->ranges[i].node >= 0)
            an->nodes[an->ranges[i].node].in_run = 1;
    }
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

/* Declarations with their details: version-2 traces have declaration_details, older ones not. */
static int load_declarations(sqlite3 *db, struct ws_analysis *an, char *err, size_t errlen)
{
    static const char with_details[] =
        "SELECT d.id, d.level, d.node_name_id, d.slot, d.bytes, d.alignment, d.run_id, x.device, t.value, x.tactic_kind"
        " FROM declarations d LEFT JOIN declaration_details x ON x.declaration_id = d.id"
        " LEFT JOIN strings t ON t.id = x.tactic_id ORDER BY d.id";
    static const char plain[] = "SELECT id, level, node_name_id, slot, bytes, alignment, run_id, NULL, NULL, NULL"
                                " FROM declarations ORDER BY id";
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc = -1, step;
    if (sqlite3_prepare_v2(db, table_exists(db, "declaration_details") ? with_details : plain, -1, &st, NULL) !=
        SQLITE_OK)
        goto done;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int level = sqlite3_column_int(st, 1);
        int32_t node = ws_analysis_node_by_id(an, sqlite3_column_int64(st, 2));
        if ((level != 1 && level != 2) || node < 0)
            continue; /* a level this version does not know, or a name missing from strings */
        if (ws_grow(&an->decls, &cap, an->ndecls, sizeof *an->decls) != 0) {
            oom(err, errlen);
            goto out;
        }
        struct ws_decl *d = &an->decls[an->ndecls];
        memset(d, 0, sizeof *d);
        d->id = sqlite3_column_int64(st, 0);
        d->level = (uint8_t)level;
        d->node = node;
        d->slot = sqlite3_column_int64(st, 3);
        d->bytes = sqlite3_column_int64(st, 4);
        if (d->bytes < 0) {
            snprintf(err, errlen, "a declaration of %lld bytes: a size cannot be negative", (long long)d->bytes);
            goto out;
        }
        d->alignment = sqlite3_column_int64(st, 5);
        int64_t run_id = ws_column_or(st, 6, -1);
        d->run = run_id < 0 || an->runs_synthesized ? -1 : run_index(an, run_id);
        d->device = (int32_t)ws_column_or(st, 7, -1);
        d->tactic = (uint8_t)tactic_of(sqlite3_column_text(st, 9));
        const unsigned char *tactic = sqlite3_column_text(st, 8);
        if (tactic && !(d->tactic_name = strdup((const char *)tactic))) {
            oom(err, errlen);
            goto out;
        }
        an->nodes[node].declares = 1;
        an->ndecls++;
    }
    if (step == SQLITE_DONE)
        rc = 0;
done:
    if (rc != 0)
        ws_sql_fail(db, "reading declarations", err, errlen);
out:
    sqlite3_finalize(st);
    return rc;
}

/* Regions, in declaration and ordinal order, so each declaration's are contiguous. */
static int load_regions(sqlite3 *db, struct ws_analysis *an, char *err, size_t errlen)
{
    static const char sql[] = "SELECT declaration_id, name_id, offset, bytes FROM declaration_regions"
                              " ORDER BY declaration_id, ordinal";
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc = -1, step;
    if (!table_exists(db, "declaration_regions"))
        return 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto done;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int32_t d = index_by_id(an->decls, an->ndecls, sizeof *an->decls, sqlite3_column_int64(st, 0));
        int64_t offset = sqlite3_column_int64(st, 2), bytes = sqlite3_column_int64(st, 3);
        if (d < 0 || offset < 0 || bytes < 0)
            continue; /* a region of a declaration this version skipped, or nonsense */
        if (ws_grow(&an->regions, &cap, an->nregions, sizeof *an->regions) != 0) {
            oom(err, errlen);
            goto out;
        }
        if (an->decls[d].nregions == 0)
            an->decls[d].region_first = (uint32_t)an->nregions;
        an->decls[d].nregions++;
        an->regions[an->nregions++] = (struct ws_region){ws_column_or(st, 1, -1), offset, bytes};
    }
    if (step == SQLITE_DONE)
        rc = 0;
done:
    if (rc != 0)
        ws_sql_fail(db, "reading declaration regions", err, errlen);
out:
    sqlite3_finalize(st);
    return rc;
}

/*
 * The device memory the analysis classifies: the queries that decide what counts as memory;
 * read_allocation turns a row of either into a lifetime.  A pooling allocator that annotates
 * itself with the NVTX memory extension (schema version 2) describes its tensors as regions
 * (memory 'region') of heaps that lie in allocations it obtained from CUDA: the regions are
 * analysed like allocations, and the allocations holding heaps or regions (their containers) are
 * not, so no byte is counted twice.  Regions of host memory are left out like host allocations.
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

/* The query for this trace: with the memory extension's regions, and with processes. */
static const char *allocations_query(sqlite3 *db, struct ws_analysis *an)
{
    int regions = table_exists(db, "memory_heaps") && table_exists(db, "memory_regions");
    an->processes = ws_tracedb_process_count(db);
    if (an->processes > 1)
        return regions ? allocations_and_regions_processes_sql : allocations_processes_sql;
    return regions ? allocations_and_regions_sql : allocations_sql;
}

static void read_allocation(const struct ws_analysis *an, sqlite3_stmt *st, struct ws_lifetime *a)
{
    memset(a, 0xff, sizeof *a); /* every index and step -1 */
    a->allocation_id = sqlite3_column_int64(st, 0);
    a->bytes = sqlite3_column_int64(st, 1);
    a->alloc_ns = sqlite3_column_int64(st, 2);
    a->free_ns = ws_column_or(st, 3, WS_NS_NEVER);
    a->range = range_index(an, ws_column_or(st, 4, -1));
    a->free_range = range_index(an, ws_column_or(st, 5, -1));
    a->owner = ws_owner_of(an, a->range);
    a->node = a->owner < 0 ? -1 : an->ranges[a->owner].node;
    if (an->runs_synthesized)
        a->run = a->range < 0 ? -1 : an->ranges[a->range].run;
    else
        a->run = sqlite3_column_type(st, 6) == SQLITE_NULL ? -1 : run_index(an, sqlite3_column_int64(st, 6));
    a->device = sqlite3_column_int(st, 7);
    a->process = sqlite3_column_int(st, 8);
}

static int load_allocations(sqlite3 *db, struct ws_analysis *an, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc = -1, step;
    int64_t total = 0;
    if (sqlite3_prepare_v2(db, allocations_query(db, an), -1, &st, NULL) != SQLITE_OK)
        goto done;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (ws_grow(&an->allocs, &cap, an->nallocs, sizeof *an->allocs) != 0 || an->nallocs >= INT32_MAX / 2) {
            oom(err, errlen);
            goto out;
        }
        struct ws_lifetime *a = &an->allocs[an->nallocs++];
        ws_load_tick();
        read_allocation(an, st, a);
        /* Every sum of allocation sizes in the analysis (live bytes, profiles, output bytes,
         * classes) is bounded by this total, so checking it once keeps all of them exact. */
        if (a->bytes < 0 || __builtin_add_overflow(total, a->bytes, &total)) {
            snprintf(err, errlen, "allocation %lld: %lld bytes: %s", (long long)a->allocation_id, (long long)a->bytes,
                     a->bytes < 0 ? "a size cannot be negative" : "sizes add up beyond 2^63 bytes");
            goto out;
        }
        ws_classify(an, a);
        an->class_count[a->cls]++;
        an->class_bytes[a->cls] += a->bytes;
    }
    if (step == SQLITE_DONE)
        rc = 0;
done:
    if (rc != 0)
        ws_sql_fail(db, "reading allocations", err, errlen);
out:
    sqlite3_finalize(st);
    return rc;
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

/* Tables first, then the range tree, then allocations (their owners need the declarations). */
static int load_all(sqlite3 *db, struct ws_analysis *an, char *err, size_t errlen)
{
    int64_t *parent_ids = NULL;
    int rc = -1;
    if (load_runs(db, an, err, errlen) != 0 || load_keys(db, an, err, errlen) != 0 ||
        load_nodes(db, an, err, errlen) != 0 || load_ranges(db, an, &parent_ids, err, errlen) != 0)
        goto out;
    link_parents(an, parent_ids);
    if (an->nruns == 0 && synthesize_runs(an, err, errlen) != 0)
        goto out;
    if (number_steps(an, err, errlen) != 0 || load_declarations(db, an, err, errlen) != 0 ||
        load_regions(db, an, err, errlen) != 0 || load_allocations(db, an, err, errlen) != 0 ||
        ws_lifetimes_compute(an, err, errlen) != 0)
        goto out;
    rc = 0;
out:
    free(parent_ids);
    return rc;
}

/* An empty trace says why when the tracer saw CUDA use it could not trace (meta blind_spot.*). */
static void empty_trace(sqlite3 *db, const char *path, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    const char *kinds = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT group_concat(substr(key, 12) || ' (' || value || ')', '; ') FROM meta"
                           " WHERE key LIKE 'blind^_spot.%' ESCAPE '^'",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        kinds = (const char *)sqlite3_column_text(st, 0);
    if (kinds)
        snprintf(err, errlen, "%s: empty trace: no allocations and no ranges were recorded; blind spots: %s", path,
                 kinds);
    else
        snprintf(err, errlen, "%s: empty trace: no allocations and no ranges were recorded", path);
    sqlite3_finalize(st);
}

int ws_analysis_load(sqlite3 *db, const char *path, struct ws_analysis *an, char *err, size_t errlen)
{
    int64_t anything = 0;
    int rc = -1;
    memset(an, 0, sizeof *an);
    if (trace_has_rows(db, &anything) != 0)
        ws_sql_fail(db, "reading the trace", err, errlen);
    else if (!anything)
        empty_trace(db, path, err, errlen);
    else {
        char what[96];
        snprintf(what, sizeof what, "analysing %s", path);
        ws_progress_begin(&load_progress, what, "rows", load_work(db));
        load_done = 0;
        rc = load_all(db, an, err, errlen);
        ws_progress_end(&load_progress);
    }
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
    for (size_t i = 0; i < an->ndecls; i++)
        free(an->decls[i].tactic_name);
    for (size_t i = 0; i < an->nkeys; i++)
        free(an->keys[i].text);
    free(an->nodes);
    free(an->nodes_by_name);
    free(an->runs);
    free(an->ranges);
    free(an->allocs);
    free(an->decls);
    free(an->regions);
    free(an->keys);
    free(an->devices);
    memset(an, 0, sizeof *an);
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
