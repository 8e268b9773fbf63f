/*
 * lifetimes.c - class, node steps, events and slots of every device allocation, and per node the
 * observed workspace (profile) and the activation bytes it produced; the lifetimes table.
 *
 * Every allocation and free is sorted by time once; each run numbers its own events in that
 * order, so one global order serves per-run event indices, workspace peaks and device peaks.
 */
#include "analysis.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracedb.h"

/* Freed inside the owner's occurrence: in its own range, or in a range nested inside it when the
 * owner declares its workspace (a kernel that allocates in its own child ranges). */
static int freed_inside_owner(const struct ws_analysis *an, const struct ws_lifetime *a)
{
    if (a->free_range == a->owner)
        return 1;
    int32_t node = an->ranges[a->owner].node;
    return node >= 0 && an->nodes[node].declares && ws_range_inside(an, a->free_range, a->owner);
}

void ws_classify(const struct ws_analysis *an, struct ws_lifetime *a)
{
    int freed = a->free_ns != WS_NS_NEVER;
    int freed_in_run = a->run >= 0 && freed && a->free_ns <= an->runs[a->run].end_ns;
    if (a->owner < 0)
        a->cls = WS_CLASS_UNATTRIBUTED;
    else if (freed && freed_inside_owner(an, a))
        a->cls = WS_CLASS_WORKSPACE;
    else if (freed_in_run)
        a->cls = WS_CLASS_ACTIVATION;
    else
        a->cls = WS_CLASS_PERSISTENT;
    if (a->run >= 0 && a->owner >= 0 && an->ranges[a->owner].run == a->run)
        a->alloc_step = an->ranges[a->owner].step;
    if (freed_in_run && a->free_range >= 0 && an->ranges[a->free_range].run == a->run)
        a->free_step = an->ranges[a->free_range].step;
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
    if (ws_grow(&an->devices, cap, an->ndevices, sizeof *an->devices) != 0)
        return NULL;
    struct ws_device_peak *d = &an->devices[an->ndevices++];
    d->process = process;
    d->device = device;
    d->live = d->peak = 0;
    return d;
}

struct sweep_state {
    int64_t *ws_live, *ws_peak; /* per owner occurrence: live and peak workspace bytes */
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
            s->ws_live[a->owner] += a->bytes;
            if (s->ws_live[a->owner] > s->ws_peak[a->owner])
                s->ws_peak[a->owner] = s->ws_live[a->owner];
        }
        return 0;
    }
    dev->live -= a->bytes;
    if (a->run >= 0 && a->free_ns <= an->runs[a->run].end_ns)
        a->end_event = an->runs[a->run].events++;
    if (workspace)
        s->ws_live[a->owner] -= a->bytes;
    return 0;
}

/* Profile: every node that ran has one (0 when it used no workspace); the peak of one occurrence,
 * maximum over occurrences. */
static void profiles(struct ws_analysis *an, const int64_t *ws_peak)
{
    for (size_t k = 0; k < an->nnodes; k++)
        if (an->nodes[k].has_range)
            an->nodes[k].profile_bytes = 0;
    for (size_t r = 0; r < an->nranges; r++) {
        int32_t node = an->ranges[r].node;
        if (node >= 0 && ws_peak[r] > an->nodes[node].profile_bytes)
            an->nodes[node].profile_bytes = ws_peak[r];
    }
}

static int sweep(struct ws_analysis *an, char *err, size_t errlen)
{
    struct sweep_state s = {0};
    struct event *ev = malloc((2 * an->nallocs + 1) * sizeof *ev);
    s.ws_live = calloc(an->nranges + 1, sizeof *s.ws_live);
    s.ws_peak = calloc(an->nranges + 1, sizeof *s.ws_peak);
    int rc = -1;
    if (!ev || !s.ws_live || !s.ws_peak)
        goto out;
    size_t n = 0;
    for (size_t i = 0; i < an->nallocs; i++) {
        ev[n++] = (struct event){an->allocs[i].alloc_ns, (uint32_t)i, 0};
        if (an->allocs[i].free_ns != WS_NS_NEVER)
            ev[n++] = (struct event){an->allocs[i].free_ns, (uint32_t)i, 1};
    }
    qsort(ev, n, sizeof *ev, event_cmp);
    for (size_t k = 0; k < n; k++) {
        ws_load_tick();
        if (sweep_event(an, &s, &ev[k]) != 0)
            goto out;
    }
    for (size_t d = 0; d < an->ndevices; d++)
        if (an->devices[d].peak > an->peak_live_bytes)
            an->peak_live_bytes = an->devices[d].peak;
    profiles(an, s.ws_peak);
    rc = 0;
out:
    if (rc != 0)
        snprintf(err, errlen, "out of memory");
    free(ev);
    free(s.ws_live);
    free(s.ws_peak);
    return rc;
}

/* ---- workspace slots ---- */

static const struct ws_lifetime *slot_allocs;
static int slot_cmp(const void *a, const void *b)
{
    const struct ws_lifetime *x = &slot_allocs[*(const uint32_t *)a], *y = &slot_allocs[*(const uint32_t *)b];
    if (x->owner != y->owner)
        return x->owner < y->owner ? -1 : 1;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    if (x->alloc_ns != y->alloc_ns)
        return x->alloc_ns < y->alloc_ns ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* The k-th workspace allocation of an occurrence on one device is its slot k.  A zero-byte
 * request holds nothing and takes no slot. */
static int number_slots(struct ws_analysis *an, char *err, size_t errlen)
{
    uint32_t *order = malloc((an->class_count[WS_CLASS_WORKSPACE] + 1) * sizeof *order);
    if (!order) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < an->nallocs; i++)
        if (an->allocs[i].cls == WS_CLASS_WORKSPACE && an->allocs[i].bytes > 0)
            order[n++] = (uint32_t)i;
    slot_allocs = an->allocs;
    qsort(order, n, sizeof *order, slot_cmp);
    int32_t slot = 0;
    for (size_t k = 0; k < n; k++) {
        const struct ws_lifetime *prev = k ? &an->allocs[order[k - 1]] : NULL, *a = &an->allocs[order[k]];
        if (!prev || prev->owner != a->owner || prev->device != a->device)
            slot = 0;
        an->allocs[order[k]].slot = slot++;
    }
    free(order);
    return 0;
}

/* ---- output bytes ---- */

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

int ws_lifetimes_compute(struct ws_analysis *an, char *err, size_t errlen)
{
    if (sweep(an, err, errlen) != 0 || number_slots(an, err, errlen) != 0 || output_bytes(an, err, errlen) != 0)
        return -1;
    return 0;
}

/* ---- writing results ---- */

int ws_results_begin(sqlite3 *db, const char *table, char *err, size_t errlen)
{
    static const char *const tables[] = {"lifetimes",  "resolutions",      "verifications",
                                         "partitions", "partition_layers", "partition_rules"};
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
    /* Dropped and created again: a trace analysed by an older version has the older columns. */
    snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", table);
    if (ws_tracedb_exec(db, sql, msg, sizeof msg) != 0 || ws_tracedb_exec(db, ws_analysis_sql, msg, sizeof msg) != 0) {
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
    static const char sql[] = "INSERT INTO lifetimes (allocation_id, run_id, class, node_name_id, range_id, alloc_step,"
                              " free_step, alloc_seq, start_event, end_event, slot, bytes)"
                              " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";
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
        bind_or_null(st, 5, a->owner < 0 ? -1 : an->ranges[a->owner].id);
        bind_or_null(st, 6, a->alloc_step);
        bind_or_null(st, 7, a->free_step);
        bind_or_null(st, 8, a->alloc_seq);
        bind_or_null(st, 9, a->start_event);
        bind_or_null(st, 10, a->end_event);
        bind_or_null(st, 11, a->slot);
        sqlite3_bind_int64(st, 12, a->bytes);
        if (sqlite3_step(st) != SQLITE_DONE || sqlite3_reset(st) != SQLITE_OK)
            goto done;
    }
    ok = 1;
done:
    if (!ok)
        ws_sql_fail(db, "writing lifetimes", err, errlen);
    sqlite3_finalize(st);
    return ws_results_end(db, ok, err, errlen);
}
