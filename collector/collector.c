/*
 * Spool -> SQLite.  One pass over the time-ordered records keeps the state the rows need
 * (open ranges per thread, open runs, live allocations by address, names of functions) and
 * writes each row once it is complete, inside one transaction.
 */
#include "collector.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "graphs.h"
#include "process_row.h"
#include "spool_files.h"
#include "spool_reader.h"
#include "tracedb.h"
#include "u64map.h"
#include "version.h"

enum {
    ST_STRING,
    ST_RANGE,
    ST_ERROR,
    ST_DECL,
    ST_RUN,
    ST_MARK,
    ST_DOMAIN,
    ST_REGSTR,
    ST_THREAD,
    ST_RANGE_ERROR,
    ST_CATEGORY,
    ST_HEAP,
    ST_REGION,
    ST_RESIZE,
    ST_ALLOC_NAME,
    ST_RANGE_ATTRS,
    ST_MARK_ATTRS,
    ST_META,
    ST_DECL_DETAIL,
    ST_DECL_REGION,
    ST_VMM_MAP,
    ST_VMM_UNMAP,
    ST_VMM_RESERVE,
    ST_VMM_RESERVE_FREE,
    ST_COUNT
};

/*
 * The two tables that get a row per event are written in batches: one multi-row INSERT per
 * BATCH_ROWS rows costs far less per row than a statement each (fewer VDBE runs and resets).
 */
#define BATCH_ROWS     64
#define BATCH_MAX_COLS 18

enum cell_kind { CELL_NULL, CELL_INT, CELL_TEXT };
struct cell {
    int kind;
    int64_t i;
    const char *t; /* static strings only: they must outlive the batch */
};

struct batch {
    const char *table, *columns;
    int ncols, rows, col;
    sqlite3_stmt *multi, *single;
    struct cell cells[BATCH_ROWS * BATCH_MAX_COLS];
};

#define ALLOC_COLUMNS                                                                                                  \
    "id, api, memory, device, address, requested_bytes, bytes, status, stream, thread_id, range_id, run_id, "          \
    "alloc_ns, free_ns, free_api, free_thread_id, free_range_id, free_stream"
#define LAUNCH_COLUMNS                                                                                                 \
    "api, kernel_name_id, function, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes, stream, "         \
    "status, thread_id, range_id, run_id, ns"

static const char *const statement_sql[ST_COUNT] = {
    [ST_STRING] = "INSERT INTO strings(id, value) VALUES (?1, ?2)",
    [ST_RANGE] = "INSERT INTO ranges(id, thread_id, end_thread_id, name_id, domain_id, kind, source, parent_id, "
                 "depth, run_id, start_ns, end_ns) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)",
    [ST_ERROR] = "INSERT INTO api_errors(api, status, address, thread_id, range_id, ns) VALUES (?1,?2,?3,?4,?5,?6)",
    [ST_DECL] = "INSERT INTO declarations(level, node_name_id, slot, bytes, alignment, thread_id, range_id, run_id, "
                "ns) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)",
    [ST_RUN] = "INSERT INTO runs(id, thread_id, shape_key_id, start_ns, end_ns) VALUES (?1,?2,?3,?4,?5)",
    [ST_MARK] = "INSERT INTO marks(id, thread_id, name_id, domain_id, range_id, ns) VALUES (?1,?2,?3,?4,?5,?6)",
    [ST_DOMAIN] = "INSERT INTO domains(id, name_id) VALUES (?1, ?2)",
    [ST_REGSTR] = "INSERT OR REPLACE INTO registered_strings(domain_id, handle, string_id) VALUES (?1,?2,?3)",
    [ST_THREAD] = "INSERT INTO threads(id, os_tid, name_id, first_ns, last_ns) VALUES (?1,?2,?3,?4,?5)",
    [ST_RANGE_ATTRS] = "INSERT INTO range_attributes(range_id, category, color, payload_type, payload) "
                       "VALUES (?1,?2,?3,?4,?5)",
    [ST_MARK_ATTRS] = "INSERT INTO mark_attributes(mark_id, category, color, payload_type, payload) "
                      "VALUES (?1,?2,?3,?4,?5)",
    [ST_RANGE_ERROR] = "INSERT INTO range_errors(kind, api, domain_id, range_ref, thread_id, range_id, ns) "
                       "VALUES (?1,?2,?3,?4,?5,?6,?7)",
    [ST_CATEGORY] = "INSERT OR REPLACE INTO categories(domain_id, category, name_id) VALUES (?1,?2,?3)",
    [ST_HEAP] = "INSERT INTO memory_heaps(id, domain_id, handle, usage, type, address, bytes, name_id, category, "
                "allocation_id, thread_id, range_id, run_id, register_ns, end_ns, end_api, regions, resets) "
                "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18)",
    [ST_REGION] = "INSERT INTO memory_regions(allocation_id, heap_id, container_id, memory, domain_id, resizes) "
                  "VALUES (?1,?2,?3,?4,?5,?6)",
    [ST_RESIZE] = "INSERT INTO memory_region_resizes(allocation_id, bytes, thread_id, range_id, ns) "
                  "VALUES (?1,?2,?3,?4,?5)",
    [ST_ALLOC_NAME] = "INSERT OR REPLACE INTO allocation_names(allocation_id, name_id, category) VALUES (?1,?2,?3)",
    [ST_META] = "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)",
    [ST_DECL_DETAIL] = "INSERT INTO declaration_details(declaration_id, device, tactic_id, tactic_kind) "
                       "VALUES (?1,?2,?3,?4)",
    [ST_DECL_REGION] = "INSERT OR REPLACE INTO declaration_regions(declaration_id, ordinal, name_id, offset, bytes) "
                       "VALUES (?1,?2,?3,?4,?5)",
    [ST_VMM_MAP] = "INSERT INTO vmm_mappings(id, allocation_id, handle, address, bytes, offset, device, status, "
                   "thread_id, range_id, map_ns) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)",
    [ST_VMM_UNMAP] = "UPDATE vmm_mappings SET unmap_ns = ?2, unmap_thread_id = ?3 WHERE id = ?1",
    [ST_VMM_RESERVE] = "INSERT INTO vmm_reservations(id, address, bytes, alignment, requested_address, status, "
                       "thread_id, range_id, reserve_ns) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)",
    [ST_VMM_RESERVE_FREE] = "UPDATE vmm_reservations SET free_ns = ?2, free_thread_id = ?3 WHERE id = ?1",
};

/* NVTX event attributes as the tracer packs them (spool_format.h): status, u4, u5. */
struct attrs {
    int32_t flags;
    uint64_t payload, category_color;
};

struct open_range {
    int64_t id, name_id, parent_id, run_id;
    uint64_t domain, start_ns; /* domain: its row in domains */
    int depth;
    const char *source;
    struct attrs attrs;
};

struct thread_state {
    int64_t id;
    uint64_t os_tid, first_ns, last_ns;
    int64_t name_id;
    uint32_t image;           /* exec count of the image that wrote this part: NVTX handles are per image */
    int64_t last_declaration; /* declarations.id of the thread's last WS_REC_DECLARE2: its regions follow */
    uint64_t regions_due;     /* regions that declaration announced and that have not arrived yet */
    struct open_range *stack;
    size_t depth, cap;
};

struct pending_alloc {
    int64_t id, thread_id, range_id, run_id;
    uint64_t address, requested, bytes, stream, ns;
    uint32_t device, memory;
    uint8_t api;
};

struct startend {
    int64_t id, thread_id, name_id, run_id;
    uint64_t domain, start_ns;
    struct attrs attrs;
};

/*
 * The NVTX memory extension.  A heap is a range of memory that a sub-allocator hands out in
 * regions; each region becomes an allocations row of its own (memory 'region'), linked to its
 * heap and to the traced allocation it lies in (the container) in memory_regions.  Open regions
 * are kept like pending allocations, by address, and on a list per heap (or on the process-wide
 * list) so that a heap's end closes them.
 */
struct heap {
    int64_t id, domain, name_id, thread_id, range_id, run_id, container, regions, resets;
    uint64_t handle, address, bytes, start_ns;
    uint32_t usage, type, category;
    int32_t container_memory, container_device; /* -1 when no traced allocation holds the heap */
    int32_t first;                              /* first open region, -1 none */
    int open;
};

struct region {
    struct pending_alloc a;
    int64_t heap; /* index into heaps, -1: the process-wide heap */
    int64_t container, domain;
    int32_t container_memory;
    uint32_t resizes;
    int32_t prev, next; /* on the heap's list; next also links free slots */
};

#define WS_MEM_REGION 3 /* allocations.memory of a region (collector only: the tracer never sends it) */

/* A cuMemRelease of physical memory that is still mapped: it is given back at the last unmap. */
struct vmm_release {
    struct ws_rec rec;
    size_t thread;
};

struct open_run {
    int64_t id, thread_id, shape_key_id;
    uint64_t start_ns;
};

struct meta_kv {
    int64_t key_id, value_id;
};

struct collector {
    sqlite3 *db;
    sqlite3_stmt *st[ST_COUNT];
    struct batch allocs, launches;
    struct ws_spool spool;
    struct thread_state *threads;
    /* strings: hash -> id, verified against the arena */
    struct ws_u64map string_ids;
    char **string_values; /* verbatim bytes: a name may hold NULs and need not be UTF-8 */
    size_t *string_lens;
    size_t nstrings, string_cap, string_lens_cap;
    /* allocations by address -> index into pending */
    struct ws_u64map live;
    struct pending_alloc *pending;
    size_t npending, pending_cap;
    size_t *free_slots;
    size_t nfree_slots;
    struct ws_u64map symbols;    /* address -> string id << 2 | priority */
    struct ws_u64map aliases;    /* kernel handle -> host stub */
    struct ws_u64map registered; /* domain << 32 | handle -> string id */
    struct ws_u64map startends;  /* range id -> index into se */
    struct startend *se;
    size_t nse, se_cap;
    struct open_run *runs;
    size_t nruns, runs_cap;
    struct meta_kv *meta;
    size_t nmeta, meta_cap;
    /* NVTX domains: one row per name.  (image << 48 | handle) -> row, name string id -> row */
    struct ws_u64map domain_rows, domain_names;
    int64_t next_domain_row, next_mark;
    uint64_t unbalanced_pops, unmatched_ends, unattached_names;
    /* the memory extension */
    struct heap *heaps;
    size_t nheaps, heaps_cap;
    struct ws_u64map open_heaps; /* handle -> index into heaps */
    struct region *regions;
    size_t nregions, regions_cap;
    int32_t free_region, process_wide; /* free slot list, open regions of the process-wide heap */
    struct ws_u64map region_at;        /* address -> index into regions */
    struct ws_u64map containers;       /* allocation id -> open heaps and process-wide regions in it */
    /* driver virtual memory: mapped address -> vmm_mappings id, mapped address -> physical handle,
     * handle -> its live mappings, reserved address -> vmm_reservations id; releases that wait for
     * the last unmap */
    struct ws_u64map vmm_maps, vmm_map_handle, vmm_mapped, vmm_reserved;
    /* handle -> references held by retains of memory this process made (beyond cuMemCreate's
     * one); handle -> references to imported memory (another owner's: no allocation here) */
    struct ws_u64map vmm_retained, vmm_foreign;
    struct vmm_release *releases;
    size_t nreleases, releases_cap;
    int64_t next_mapping, next_reservation;
    int64_t next_range, next_alloc, next_run;
    int64_t command_line_id;
    uint64_t images;
    int resolving_tie; /* take_tied() is at work: no second one inside it */
    struct ws_collect_stats *stats;
    struct ws_graphs *graphs; /* graphs, capture, arrays, pools (graphs.c) */
    char *err;
    size_t errlen;
};

#define GROW(arr, n, cap)                                                                                              \
    ((n) < (cap) ? 0 : ((cap) = (cap) ? (cap)*2 : 16, ((arr) = realloc_or_free((arr), (cap) * sizeof *(arr))) ? 0 : -1))

static void *realloc_or_free(void *p, size_t bytes)
{
    void *q = realloc(p, bytes);
    if (!q)
        free(p);
    return q;
}

static int fail(struct collector *c, const char *what)
{
    if (!c->err[0])
        snprintf(c->err, c->errlen, "%s: %s", what, c->db ? sqlite3_errmsg(c->db) : "out of memory");
    return -1;
}

static int step(struct collector *c, int which)
{
    sqlite3_stmt *s = c->st[which];
    int rc = sqlite3_step(s);
    sqlite3_reset(s); /* every statement binds all its parameters on every row */
    return rc == SQLITE_DONE ? 0 : fail(c, "cannot write the trace");
}

static void bind_opt(sqlite3_stmt *s, int i, int64_t v)
{
    if (v > 0)
        sqlite3_bind_int64(s, i, v);
    else
        sqlite3_bind_null(s, i);
}

/* ---- batches --------------------------------------------------------------------------------- */

static int batch_prepare(struct collector *c, struct batch *b, const char *table, const char *columns, int ncols)
{
    b->table = table;
    b->columns = columns;
    b->ncols = ncols;
    size_t cap = strlen(table) + strlen(columns) + 64 + (size_t)BATCH_ROWS * ((size_t)ncols * 2 + 4);
    char *sql = malloc(cap);
    if (!sql)
        return fail(c, "out of memory");
    for (int pass = 0; pass < 2; pass++) {
        int rows = pass == 0 ? 1 : BATCH_ROWS;
        size_t n = (size_t)snprintf(sql, cap, "INSERT INTO %s(%s) VALUES ", table, columns);
        for (int r = 0; r < rows; r++) {
            sql[n++] = r ? ',' : ' ';
            sql[n++] = '(';
            for (int k = 0; k < ncols; k++) {
                if (k)
                    sql[n++] = ',';
                sql[n++] = '?';
            }
            sql[n++] = ')';
        }
        sql[n] = 0;
        sqlite3_stmt **st = pass == 0 ? &b->single : &b->multi;
        if (sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK) {
            free(sql);
            return fail(c, "cannot prepare the trace tables");
        }
    }
    free(sql);
    return 0;
}

static void bind_cells(sqlite3_stmt *s, const struct cell *cells, int n)
{
    for (int i = 0; i < n; i++) {
        if (cells[i].kind == CELL_INT)
            sqlite3_bind_int64(s, i + 1, cells[i].i);
        else if (cells[i].kind == CELL_TEXT)
            sqlite3_bind_text(s, i + 1, cells[i].t, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(s, i + 1);
    }
}

static int run_statement(struct collector *c, sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? 0 : fail(c, "cannot write the trace");
}

/* Write the rows held in the batch: all at once when full, one by one at the end. */
static int batch_flush(struct collector *c, struct batch *b)
{
    if (b->rows == BATCH_ROWS) {
        bind_cells(b->multi, b->cells, BATCH_ROWS * b->ncols);
        b->rows = 0;
        return run_statement(c, b->multi);
    }
    for (int r = 0; r < b->rows; r++) {
        bind_cells(b->single, b->cells + r * b->ncols, b->ncols);
        if (run_statement(c, b->single) != 0)
            return -1;
    }
    b->rows = 0;
    return 0;
}

static inline void cell_int(struct batch *b, int64_t v)
{
    b->cells[b->rows * b->ncols + b->col++] = (struct cell){.kind = CELL_INT, .i = v};
}
static inline void cell_null(struct batch *b) { b->cells[b->rows * b->ncols + b->col++] = (struct cell){0}; }
static inline void cell_opt(struct batch *b, int64_t v)
{
    if (v > 0)
        cell_int(b, v);
    else
        cell_null(b);
}
static inline void cell_text(struct batch *b, const char *t)
{
    b->cells[b->rows * b->ncols + b->col++] = (struct cell){.kind = CELL_TEXT, .t = t};
}

static int batch_row_done(struct collector *c, struct batch *b)
{
    b->col = 0;
    b->rows++;
    return b->rows == BATCH_ROWS ? batch_flush(c, b) : 0;
}

/* ---- strings -------------------------------------------------------------------------------- */

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)p[i]) * 1099511628211ull;
    return h;
}

/* Intern a string (n bytes, stored verbatim); returns its id (>= 1) or -1. */
static int64_t intern(struct collector *c, const char *p, size_t n)
{
    uint64_t key = hash_bytes(p, n), id;
    while (ws_u64map_get(&c->string_ids, key, &id)) {
        if (c->string_lens[id - 1] == n && memcmp(c->string_values[id - 1], p, n) == 0)
            return (int64_t)id;
        key = key * 31 + 1; /* a hash collision: probe the next key */
    }
    size_t lens_n = c->nstrings;
    if (GROW(c->string_values, c->nstrings, c->string_cap) != 0 ||
        GROW(c->string_lens, lens_n, c->string_lens_cap) != 0)
        return fail(c, "out of memory");
    char *copy = malloc(n + 1);
    if (!copy)
        return fail(c, "out of memory");
    memcpy(copy, p, n);
    copy[n] = 0;
    c->string_lens[c->nstrings] = n;
    c->string_values[c->nstrings++] = copy;
    id = c->nstrings;
    if (ws_u64map_put(&c->string_ids, key, id) != 0)
        return fail(c, "out of memory");
    sqlite3_bind_int64(c->st[ST_STRING], 1, (int64_t)id);
    sqlite3_bind_text(c->st[ST_STRING], 2, copy, (int)n, SQLITE_STATIC);
    return step(c, ST_STRING) == 0 ? (int64_t)id : -1;
}

static int64_t intern_rec(struct collector *c, const struct ws_rec *r)
{
    size_t n;
    const char *p = ws_rec_text(r, &n);
    return intern(c, p, n);
}

/* ---- context of an event ---------------------------------------------------------------------- */

static int64_t current_range(const struct thread_state *t) { return t->depth ? t->stack[t->depth - 1].id : 0; }
static int64_t current_run(const struct collector *c) { return c->nruns ? c->runs[c->nruns - 1].id : 0; }

/* ---- NVTX domains and attributes ---------------------------------------------------------------- */

static uint64_t handle_key(const struct thread_state *t, uint64_t handle) { return (uint64_t)t->image << 48 ^ handle; }

static int new_domain_row(struct collector *c, int64_t name_id, int64_t *row)
{
    *row = ++c->next_domain_row;
    sqlite3_bind_int64(c->st[ST_DOMAIN], 1, *row);
    bind_opt(c->st[ST_DOMAIN], 2, name_id);
    return step(c, ST_DOMAIN);
}

/* The domains row of a handle: 0 for the default domain; a handle never created in this image
 * (created before a fork, or its record lost) gets a row without a name. */
static int64_t domain_row(struct collector *c, const struct thread_state *t, uint64_t handle)
{
    uint64_t row;
    if (handle == 0)
        return 0;
    if (ws_u64map_get(&c->domain_rows, handle_key(t, handle), &row))
        return (int64_t)row;
    int64_t id;
    if (new_domain_row(c, 0, &id) != 0 || ws_u64map_put(&c->domain_rows, handle_key(t, handle), (uint64_t)id) != 0)
        return fail(c, "out of memory");
    return id;
}

/* One row per name: a second nvtxDomainCreate of a name maps its handle to the first row. */
static int on_domain(struct collector *c, const struct thread_state *t, const struct ws_rec *r)
{
    int64_t name = intern_rec(c, r);
    if (name < 0)
        return -1;
    uint64_t row;
    if (!ws_u64map_get(&c->domain_names, (uint64_t)name, &row)) {
        int64_t id;
        if (new_domain_row(c, name, &id) != 0)
            return -1;
        row = (uint64_t)id;
        if (ws_u64map_put(&c->domain_names, (uint64_t)name, row) != 0)
            return fail(c, "out of memory");
    }
    return ws_u64map_put(&c->domain_rows, handle_key(t, r->u[0]), row) == 0 ? 0 : fail(c, "out of memory");
}

static struct attrs attrs_of(const struct ws_rec *r)
{
    return (struct attrs){.flags = r->status, .payload = r->u[4], .category_color = r->u[5]};
}

/* category, color, payload_type, payload from parameter i on. */
static void bind_attrs(sqlite3_stmt *s, int i, const struct attrs *a);

/* The attributes row of a range or mark, when it carries any. */
static int write_attrs(struct collector *c, int which, int64_t id, const struct attrs *a)
{
    if (a->flags == 0 && (uint32_t)a->category_color == 0)
        return 0;
    sqlite3_bind_int64(c->st[which], 1, id);
    bind_attrs(c->st[which], 2, a);
    return step(c, which);
}

static void bind_attrs(sqlite3_stmt *s, int i, const struct attrs *a)
{
    static const char *const kinds[] = {NULL,    "uint64", "int64",     "double", "uint32",
                                        "int32", "float",  "extension", "unknown"};
    unsigned kind = (unsigned)a->flags & WS_ATTR_PAYLOAD_MASK;
    bind_opt(s, i, (int64_t)(uint32_t)a->category_color);
    if (a->flags & WS_ATTR_COLOR)
        sqlite3_bind_int64(s, i + 1, (int64_t)(a->category_color >> 32));
    else
        sqlite3_bind_null(s, i + 1);
    if (kind == WS_PAYLOAD_NONE || kind >= sizeof kinds / sizeof kinds[0]) {
        sqlite3_bind_null(s, i + 2);
        sqlite3_bind_null(s, i + 3);
        return;
    }
    sqlite3_bind_text(s, i + 2, kinds[kind], -1, SQLITE_STATIC);
    double d;
    float f;
    uint32_t low = (uint32_t)a->payload;
    switch (kind) {
    case WS_PAYLOAD_DOUBLE:
        memcpy(&d, &a->payload, sizeof d);
        sqlite3_bind_double(s, i + 3, d);
        break;
    case WS_PAYLOAD_FLOAT:
        memcpy(&f, &low, sizeof f);
        sqlite3_bind_double(s, i + 3, f);
        break;
    case WS_PAYLOAD_U32: sqlite3_bind_int64(s, i + 3, low); break;
    case WS_PAYLOAD_I32: sqlite3_bind_int64(s, i + 3, (int32_t)low); break;
    default: sqlite3_bind_int64(s, i + 3, (int64_t)a->payload); break; /* uint64 as its signed bit pattern */
    }
}

/* ---- ranges ---------------------------------------------------------------------------------- */

static int64_t range_name(struct collector *c, const struct thread_state *t, const struct ws_rec *r, uint64_t handle)
{
    uint64_t id;
    if (handle && ws_u64map_get(&c->registered, handle_key(t, handle), &id))
        return (int64_t)id;
    return intern_rec(c, r);
}

static int write_range(struct collector *c, const struct open_range *o, int64_t thread_id, int64_t end_thread,
                       const char *kind, uint64_t end_ns, int closed)
{
    sqlite3_stmt *s = c->st[ST_RANGE];
    sqlite3_bind_int64(s, 1, o->id);
    sqlite3_bind_int64(s, 2, thread_id);
    bind_opt(s, 3, end_thread);
    bind_opt(s, 4, o->name_id);
    sqlite3_bind_int64(s, 5, (int64_t)o->domain);
    sqlite3_bind_text(s, 6, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 7, o->source, -1, SQLITE_STATIC);
    bind_opt(s, 8, o->parent_id);
    sqlite3_bind_int(s, 9, o->depth);
    bind_opt(s, 10, o->run_id);
    sqlite3_bind_int64(s, 11, (int64_t)o->start_ns);
    if (closed)
        sqlite3_bind_int64(s, 12, (int64_t)end_ns);
    else
        sqlite3_bind_null(s, 12);
    c->stats->ranges++;
    return step(c, ST_RANGE) == 0 ? write_attrs(c, ST_RANGE_ATTRS, o->id, &o->attrs) : -1;
}

static int on_push(struct collector *c, struct thread_state *t, const struct ws_rec *r)
{
    int64_t domain = domain_row(c, t, r->u[0]);
    if (domain < 0 || GROW(t->stack, t->depth, t->cap) != 0)
        return fail(c, "out of memory");
    struct open_range *o = &t->stack[t->depth];
    o->id = ++c->next_range;
    o->name_id = range_name(c, t, r, r->u[2]);
    if (o->name_id < 0)
        return -1;
    o->parent_id = current_range(t);
    o->run_id = current_run(c);
    o->domain = (uint64_t)domain;
    o->start_ns = r->ns;
    /* the parent is the innermost open range of any domain, so depth follows it even after a
     * pop in another domain took a range out of the middle of the stack */
    o->depth = t->depth ? t->stack[t->depth - 1].depth + 1 : 0;
    o->source = r->api == WS_API_wstrace ? "api" : "nvtx";
    o->attrs = r->api == WS_API_wstrace ? (struct attrs){0} : attrs_of(r);
    t->depth++;
    return 0;
}

static int write_range_error(struct collector *c, const struct thread_state *t, const struct ws_rec *r,
                             const char *kind, int64_t domain, int64_t ref)
{
    sqlite3_stmt *s = c->st[ST_RANGE_ERROR];
    sqlite3_bind_text(s, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, ws_api_name(r->api), -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, domain);
    bind_opt(s, 4, ref);
    sqlite3_bind_int64(s, 5, t->id);
    bind_opt(s, 6, current_range(t));
    sqlite3_bind_int64(s, 7, (int64_t)r->ns);
    return step(c, ST_RANGE_ERROR);
}

static int on_pop(struct collector *c, struct thread_state *t, const struct ws_rec *r)
{
    /* A pop closes the innermost open range of its own domain on its thread, nothing else. */
    int64_t domain = domain_row(c, t, r->u[0]);
    if (domain < 0)
        return -1;
    for (size_t i = t->depth; i-- > 0;) {
        if (t->stack[i].domain != (uint64_t)domain)
            continue;
        struct open_range o = t->stack[i];
        memmove(&t->stack[i], &t->stack[i + 1], (t->depth - i - 1) * sizeof o);
        t->depth--;
        return write_range(c, &o, t->id, t->id, "push", r->ns, 1);
    }
    c->unbalanced_pops++;
    return write_range_error(c, t, r, "pop", domain, 0);
}

static int on_range_start(struct collector *c, struct thread_state *t, const struct ws_rec *r)
{
    int64_t domain = domain_row(c, t, r->u[0]);
    if (domain < 0 || GROW(c->se, c->nse, c->se_cap) != 0)
        return fail(c, "out of memory");
    struct startend *e = &c->se[c->nse];
    e->id = ++c->next_range;
    e->thread_id = t->id;
    e->name_id = range_name(c, t, r, r->u[3]);
    e->run_id = current_run(c);
    e->domain = (uint64_t)domain;
    e->start_ns = r->ns;
    e->attrs = attrs_of(r);
    if (e->name_id < 0 || ws_u64map_put(&c->startends, handle_key(t, r->u[2]), c->nse) != 0)
        return fail(c, "out of memory");
    c->nse++;
    return 0;
}

static int write_startend(struct collector *c, const struct startend *e, int64_t end_thread, uint64_t end_ns,
                          int closed)
{
    struct open_range o = {.id = e->id,
                           .name_id = e->name_id,
                           .run_id = e->run_id,
                           .domain = e->domain,
                           .start_ns = e->start_ns,
                           .depth = 0,
                           .source = "nvtx",
                           .attrs = e->attrs};
    return write_range(c, &o, e->thread_id, end_thread, "startend", end_ns, closed);
}

/* Range ids are unique in the process whatever the domain, so the id alone finds the range. */
static int on_range_end(struct collector *c, struct thread_state *t, const struct ws_rec *r)
{
    uint64_t idx;
    if (!ws_u64map_get(&c->startends, handle_key(t, r->u[2]), &idx)) {
        int64_t domain = domain_row(c, t, r->u[0]);
        c->unmatched_ends++;
        return domain < 0 ? -1 : write_range_error(c, t, r, "end", domain, (int64_t)r->u[2]);
    }
    ws_u64map_del(&c->startends, handle_key(t, r->u[2]));
    return write_startend(c, &c->se[idx], t->id, r->ns, 1);
}

/* ---- runs ------------------------------------------------------------------------------------- */

static int write_run(struct collector *c, const struct open_run *o, uint64_t end_ns, int closed)
{
    sqlite3_stmt *s = c->st[ST_RUN];
    sqlite3_bind_int64(s, 1, o->id);
    sqlite3_bind_int64(s, 2, o->thread_id);
    bind_opt(s, 3, o->shape_key_id);
    sqlite3_bind_int64(s, 4, (int64_t)o->start_ns);
    if (closed)
        sqlite3_bind_int64(s, 5, (int64_t)end_ns);
    else
        sqlite3_bind_null(s, 5);
    return step(c, ST_RUN);
}

static int on_run_begin(struct collector *c, struct thread_state *t, const struct ws_rec *r)
{
    if (GROW(c->runs, c->nruns, c->runs_cap) != 0)
        return fail(c, "out of memory");
    struct open_run *o = &c->runs[c->nruns];
    o->id = ++c->next_run;
    o->thread_id = t->id;
    o->shape_key_id = intern_rec(c, r);
    o->start_ns = r->ns;
    if (o->shape_key_id < 0)
        return -1;
    c->nruns++;
    return 0;
}

static int on_run_end(struct collector *c, struct thread_state *t, const struct ws_rec *r)
{
    for (size_t i = c->nruns; i-- > 0;) {
        if (c->runs[i].thread_id != t->id)
            continue;
        struct open_run o = c->runs[i];
        memmove(&c->runs[i], &c->runs[i + 1], (c->nruns - i - 1) * sizeof o);
        c->nruns--;
        return write_run(c, &o, r->ns, 1);
    }
    return 0;
}

/* ---- allocations ------------------------------------------------------------------------------- */

static int write_alloc(struct collector *c, const struct pending_alloc *a, int32_t status, const struct ws_rec *f,
                       int64_t free_thread, int64_t free_range)
{
    static const char *const memory[] = {"device", "managed", "host", "region", "ipc"};
    struct batch *b = &c->allocs;
    cell_int(b, a->id);
    cell_text(b, ws_api_name(a->api));
    cell_text(b, memory[a->memory < 5 ? a->memory : 0]);
    cell_int(b, a->device);
    if (status == 0)
        cell_int(b, (int64_t)a->address);
    else
        cell_null(b);
    cell_int(b, (int64_t)a->requested);
    cell_int(b, (int64_t)a->bytes);
    cell_int(b, status);
    cell_opt(b, (int64_t)a->stream);
    cell_int(b, a->thread_id);
    cell_opt(b, a->range_id);
    cell_opt(b, a->run_id);
    cell_int(b, (int64_t)a->ns);
    if (f) {
        cell_int(b, (int64_t)f->ns);
        cell_text(b, ws_api_name(f->api));
        cell_int(b, free_thread);
        cell_opt(b, free_range);
        cell_opt(b, (int64_t)f->u[3]);
    } else {
        for (int i = 0; i < 5; i++)
            cell_null(b);
    }
    c->stats->allocations++;
    return batch_row_done(c, b);
}

static void fill_pending(struct pending_alloc *a, const struct ws_rec *r, int64_t id, const struct thread_state *t,
                         int64_t run)
{
    a->id = id;
    a->thread_id = t->id;
    a->range_id = current_range(t);
    a->run_id = run;
    a->address = r->u[0];
    a->requested = r->u[1];
    a->bytes = r->u[2];
    a->stream = r->u[3];
    a->device = (uint32_t)r->u[4];
    a->memory = (uint32_t)(r->u[4] >> 32);
    a->ns = r->ns;
    a->api = r->api;
}

static int dispatch(struct collector *c, struct thread_state *t, const struct ws_rec *r);

/*
 * Records of equal time on different threads come in thread order, which need not be the order
 * they happened in.  A free and the allocation that reused its address may carry the same time:
 * libtrace times a free before its call and an allocation after it (libtrace/hooks_cuda.c,
 * FORWARD_AND_RECORD_FREE_IF), so the free is never later, but it can be equal.
 * When record r contradicts what is live (an allocation of a live address, a free of an address
 * that is not) and another thread holds, at the same time, the record of type `want` that
 * resolves it, that thread's records up to it are taken first.  Returns 1 when it did, 0 when there
 * was none, -1 on failure.
 */
static int take_tied(struct collector *c, const struct thread_state *t, const struct ws_rec *r, uint8_t want)
{
    size_t other;
    if (c->resolving_tie || !ws_spool_find_tied(&c->spool, (size_t)(t - c->threads), r->ns, want, r->u[0], &other))
        return 0;
    c->resolving_tie = 1;
    const struct ws_rec *q;
    int rc = 1;
    while (rc == 1 && (q = ws_spool_next_of(&c->spool, other)) != NULL) {
        int last = q->type == want && q->status == 0 && q->u[0] == r->u[0];
        if (dispatch(c, &c->threads[other], q) != 0)
            rc = -1;
        else if (last)
            break;
    }
    c->resolving_tie = 0;
    return rc;
}

static int on_alloc(struct collector *c, struct thread_state *t, const struct ws_rec *r)
{
    struct pending_alloc a;
    uint64_t idx;
    if (r->status == 0 && r->u[0] != 0 && ws_u64map_get(&c->live, r->u[0], &idx) && take_tied(c, t, r, WS_REC_FREE) < 0)
        return -1;
    fill_pending(&a, r, ++c->next_alloc, t, current_run(c));
    /* A failed call, or a zero-byte request answered with NULL, holds no address to pair. */
    if (r->status != 0 || a.address == 0)
        return write_alloc(c, &a, r->status, NULL, 0, 0);
    if (ws_u64map_get(&c->live, a.address, &idx)) {
        /* The address came back without a free we saw: the old block was freed untraced. */
        if (write_alloc(c, &c->pending[idx], 0, NULL, 0, 0) != 0)
            return -1;
    } else if (c->nfree_slots) {
        idx = c->free_slots[--c->nfree_slots];
    } else {
        if (GROW(c->pending, c->npending, c->pending_cap) != 0)
            return fail(c, "out of memory");
        idx = c->npending++;
        size_t cap = c->pending_cap;
        size_t *slots = realloc(c->free_slots, cap * sizeof *slots);
        if (!slots)
            return fail(c, "out of memory");
        c->free_slots = slots;
    }
    c->pending[idx] = a;
    return ws_u64map_put(&c->live, a.address, idx) == 0 ? 0 : fail(c, "out of memory");
}

static int write_error(struct collector *c, struct thread_state *t, const struct ws_rec *r)
{
    sqlite3_stmt *s = c->st[ST_ERROR];
    sqlite3_bind_text(s, 1, ws_api_name(r->api), -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, r->status);
    sqlite3_bind_int64(s, 3, (int64_t)r->u[0]);
    sqlite3_bind_int64(s, 4, t->id);
    bind_opt(s, 5, current_range(t));
    sqlite3_bind_int64(s, 6, (int64_t)r->ns);
    return step(c, ST_ERROR);
}

static int container_freed(struct collector *c, const struct thread_state *t, const struct ws_rec *f,
                           int64_t allocation);

static int on_free(struct collector *c, struct thread_state *t, const struct ws_rec *r)
{
    uint64_t idx;
    if (r->status == 0 && !ws_u64map_get(&c->live, r->u[0], &idx) && take_tied(c, t, r, WS_REC_ALLOC) < 0)
        return -1;
    if (r->status != 0 || !ws_u64map_get(&c->live, r->u[0], &idx))
        return write_error(c, t, r); /* failed, or frees memory allocated before tracing began */
    ws_u64map_del(&c->live, r->u[0]);
    c->free_slots[c->nfree_slots++] = idx;
    if (write_alloc(c, &c->pending[idx], 0, r, t->id, current_range(t)) != 0)
        return -1;
    /* NVTX heaps and regions inside the freed memory end with it (see container_freed) */
    return c->containers.len ? container_freed(c, t, r, c->pending[idx].id) : 0;
}

/* ---- driver virtual memory ------------------------------------------------------------------------ */

static int64_t graph_live_allocation(void *ctx, uint64_t address);

/*
 * Physical memory (cuMemCreate) is an allocations row whose address is its handle.  The device
 * gives it back when it has been released (cuMemRelease) and is mapped nowhere: a release of
 * memory still mapped closes the row at the last cuMemUnmap of it instead (free_api 'cuMemUnmap').
 * Mappings and address reservations are rows of vmm_mappings and vmm_reservations.
 */
/*
 * A handle has as many references as cuMemCreate or cuMemImportFromShareableHandle gave it plus its
 * cuMemRetainAllocationHandle calls; each cuMemRelease gives one back.  Only the last release of
 * memory this process made frees it; imported memory is another owner's and frees nothing here.
 * Returns 1 when the release gave back a reference that is not the last (nothing more to record),
 * 0 when it is the last of this process's own memory, -1 on failure.
 */
static int vmm_release_reference(struct collector *c, const struct ws_rec *r)
{
    uint64_t n = 0;
    struct ws_u64map *m = ws_u64map_get(&c->vmm_foreign, r->u[0], &n) ? &c->vmm_foreign
                          : ws_u64map_get(&c->vmm_retained, r->u[0], &n) ? &c->vmm_retained
                                                                          : NULL;
    if (!m)
        return 0;
    if (n > 1)
        return ws_u64map_put(m, r->u[0], n - 1) == 0 ? 1 : fail(c, "out of memory");
    ws_u64map_del(m, r->u[0]);
    return 1;
}

static int vmm_add_reference(struct collector *c, const struct ws_rec *r)
{
    uint64_t handle = r->u[3], n = 0;
    if (r->status != 0 || handle == 0)
        return 0;
    /* memory this process made, even when it comes back through an import of its own export, is
     * retained; the rest (another owner's, or made before tracing began) is foreign */
    struct ws_u64map *m = graph_live_allocation(c, handle) != 0 ? &c->vmm_retained : &c->vmm_foreign;
    ws_u64map_get(m, handle, &n);
    return ws_u64map_put(m, handle, n + 1) == 0 ? 0 : fail(c, "out of memory");
}

static int vmm_defer_release(struct collector *c, struct thread_state *t, const struct ws_rec *r)
{
    uint64_t mapped = 0;
    if (!ws_u64map_get(&c->vmm_mapped, r->u[0], &mapped) || mapped == 0)
        return 0;
    if (GROW(c->releases, c->nreleases, c->releases_cap) != 0)
        return fail(c, "out of memory");
    c->releases[c->nreleases].rec = *r;
    c->releases[c->nreleases].thread = (size_t)(t - c->threads);
    c->nreleases++;
    return 1;
}

static int vmm_unmapped(struct collector *c, struct thread_state *t, uint64_t handle, uint64_t ns)
{
    uint64_t mapped = 0;
    if (!ws_u64map_get(&c->vmm_mapped, handle, &mapped))
        return 0;
    if (mapped > 1)
        return ws_u64map_put(&c->vmm_mapped, handle, mapped - 1) == 0 ? 0 : fail(c, "out of memory");
    ws_u64map_del(&c->vmm_mapped, handle);
    for (size_t i = 0; i < c->nreleases; i++) {
        if (c->releases[i].rec.u[0] != handle)
            continue;
        struct ws_rec f = c->releases[i].rec;
        c->releases[i] = c->releases[--c->nreleases];
        f.ns = ns;
        f.api = WS_API_cuMemUnmap;
        return on_free(c, t, &f);
    }
    return 0;
}

static int on_vmm(struct collector *c, struct thread_state *t, const struct ws_rec *r)
{
    uint64_t v;
    sqlite3_stmt *s;
    switch (r->api) {
    case WS_API_cuMemMap: {
        int64_t id = ++c->next_mapping;
        s = c->st[ST_VMM_MAP];
        sqlite3_bind_int64(s, 1, id);
        bind_opt(s, 2, graph_live_allocation(c, r->u[3]));
        sqlite3_bind_int64(s, 3, (int64_t)r->u[3]);
        sqlite3_bind_int64(s, 4, (int64_t)r->u[0]);
        sqlite3_bind_int64(s, 5, (int64_t)r->u[1]);
        sqlite3_bind_int64(s, 6, (int64_t)r->u[2]);
        sqlite3_bind_int64(s, 7, (int64_t)(int32_t)(uint32_t)r->u[4]);
        sqlite3_bind_int(s, 8, r->status);
        sqlite3_bind_int64(s, 9, t->id);
        bind_opt(s, 10, current_range(t));
        sqlite3_bind_int64(s, 11, (int64_t)r->ns);
        if (step(c, ST_VMM_MAP) != 0)
            return -1;
        if (r->status != 0)
            return 0;
        uint64_t mapped = 0;
        ws_u64map_get(&c->vmm_mapped, r->u[3], &mapped);
        if (ws_u64map_put(&c->vmm_maps, r->u[0], (uint64_t)id) != 0 ||
            ws_u64map_put(&c->vmm_map_handle, r->u[0], r->u[3]) != 0 ||
            ws_u64map_put(&c->vmm_mapped, r->u[3], mapped + 1) != 0)
            return fail(c, "out of memory");
        return 0;
    }
    case WS_API_cuMemUnmap: {
        /* one call may unmap several mappings: every one that starts in [address, address + bytes) */
        uint64_t end = r->u[0] + r->u[1] < r->u[0] ? UINT64_MAX : r->u[0] + r->u[1];
        int found = 0;
        for (size_t i = 0; r->status == 0 && i < c->vmm_maps.cap; i++) {
            if (c->vmm_maps.state[i] != 1 || c->vmm_maps.keys[i] < r->u[0] || c->vmm_maps.keys[i] >= end)
                continue;
            uint64_t address = c->vmm_maps.keys[i], handle = 0;
            v = c->vmm_maps.vals[i];
            ws_u64map_get(&c->vmm_map_handle, address, &handle);
            ws_u64map_del(&c->vmm_maps, address);
            ws_u64map_del(&c->vmm_map_handle, address);
            s = c->st[ST_VMM_UNMAP];
            sqlite3_bind_int64(s, 1, (int64_t)v);
            sqlite3_bind_int64(s, 2, (int64_t)r->ns);
            sqlite3_bind_int64(s, 3, t->id);
            if (step(c, ST_VMM_UNMAP) != 0 || vmm_unmapped(c, t, handle, r->ns) != 0)
                return -1;
            found = 1; /* a deletion leaves a tombstone: the scan goes on where it is */
        }
        return found ? 0 : write_error(c, t, r); /* failed, or a mapping made before tracing began */
    }
    case WS_API_cuMemAddressReserve: {
        int64_t id = ++c->next_reservation;
        s = c->st[ST_VMM_RESERVE];
        sqlite3_bind_int64(s, 1, id);
        if (r->status == 0)
            sqlite3_bind_int64(s, 2, (int64_t)r->u[0]);
        else
            sqlite3_bind_null(s, 2);
        sqlite3_bind_int64(s, 3, (int64_t)r->u[1]);
        sqlite3_bind_int64(s, 4, (int64_t)r->u[2]);
        bind_opt(s, 5, (int64_t)r->u[3]);
        sqlite3_bind_int(s, 6, r->status);
        sqlite3_bind_int64(s, 7, t->id);
        bind_opt(s, 8, current_range(t));
        sqlite3_bind_int64(s, 9, (int64_t)r->ns);
        if (step(c, ST_VMM_RESERVE) != 0)
            return -1;
        if (r->status == 0 && ws_u64map_put(&c->vmm_reserved, r->u[0], (uint64_t)id) != 0)
            return fail(c, "out of memory");
        return 0;
    }
    case WS_API_cuMemRetainAllocationHandle:
    case WS_API_cuMemImportFromShareableHandle: return vmm_add_reference(c, r);
    case WS_API_cuMemAddressFree:
        if (r->status != 0 || !ws_u64map_get(&c->vmm_reserved, r->u[0], &v))
            return write_error(c, t, r);
        ws_u64map_del(&c->vmm_reserved, r->u[0]);
        s = c->st[ST_VMM_RESERVE_FREE];
        sqlite3_bind_int64(s, 1, (int64_t)v);
        sqlite3_bind_int64(s, 2, (int64_t)r->ns);
        sqlite3_bind_int64(s, 3, t->id);
        return step(c, ST_VMM_RESERVE_FREE);
    default: return 0;
    }
}

/* ---- the NVTX memory extension ------------------------------------------------------------------ */

/*
 * The traced allocation that holds [address, address + bytes): the allocation starting there,
 * else the live one around it (a linear search, taken only for a heap or a process-wide region
 * that starts inside an allocation).  Returns its index in pending, or -1.
 */
static int64_t container_of(const struct collector *c, uint64_t address, uint64_t bytes)
{
    uint64_t idx;
    if (ws_u64map_get(&c->live, address, &idx))
        return c->pending[idx].bytes >= bytes ? (int64_t)idx : -1;
    for (size_t i = 0; i < c->live.cap; i++) {
        if (c->live.state[i] != 1)
            continue;
        const struct pending_alloc *a = &c->pending[c->live.vals[i]];
        if (a->address < address && address - a->address <= a->bytes && bytes <= a->bytes - (address - a->address))
            return (int64_t)c->live.vals[i];
    }
    return -1;
}

static int container_count(struct collector *c, int64_t container, int delta)
{
    uint64_t n = 0;
    if (container <= 0)
        return 0;
    ws_u64map_get(&c->containers, (uint64_t)container, &n);
    n += (uint64_t)(int64_t)delta;
    if (n == 0) {
        ws_u64map_del(&c->containers, (uint64_t)container);
        return 0;
    }
    return ws_u64map_put(&c->containers, (uint64_t)container, n) == 0 ? 0 : fail(c, "out of memory");
}

static int32_t *region_list(struct collector *c, int64_t heap)
{
    return heap >= 0 ? &c->heaps[heap].first : &c->process_wide;
}

static void region_link(struct collector *c, int32_t i)
{
    int32_t *head = region_list(c, c->regions[i].heap);
    c->regions[i].prev = -1;
    c->regions[i].next = *head;
    if (*head >= 0)
        c->regions[*head].prev = i;
    *head = i;
}

static void region_unlink(struct collector *c, int32_t i)
{
    struct region *g = &c->regions[i];
    if (g->prev >= 0)
        c->regions[g->prev].next = g->next;
    else
        *region_list(c, g->heap) = g->next;
    if (g->next >= 0)
        c->regions[g->next].prev = g->prev;
}

static int write_region_link(struct collector *c, const struct region *g)
{
    static const char *const memory[] = {"device", "managed", "host"};
    sqlite3_stmt *s = c->st[ST_REGION];
    sqlite3_bind_int64(s, 1, g->a.id);
    bind_opt(s, 2, g->heap >= 0 ? c->heaps[g->heap].id : 0);
    bind_opt(s, 3, g->container);
    if (g->container_memory >= 0 && g->container_memory < 3)
        sqlite3_bind_text(s, 4, memory[g->container_memory], -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, 4);
    sqlite3_bind_int64(s, 5, g->domain);
    sqlite3_bind_int64(s, 6, g->resizes);
    return step(c, ST_REGION);
}

/* Close region i: its allocations row ends at ns with api (free == NULL: still open at the end). */
static int region_close(struct collector *c, int32_t i, const struct thread_state *t, uint64_t ns, uint8_t api,
                        int closed)
{
    struct region *g = &c->regions[i];
    struct ws_rec end = {.api = api, .ns = ns}; /* no stream: u[3] stays 0 */
    if (write_alloc(c, &g->a, 0, closed ? &end : NULL, closed ? t->id : 0, closed ? current_range(t) : 0) != 0 ||
        write_region_link(c, g) != 0)
        return -1;
    if (g->heap < 0 && container_count(c, g->container, -1) != 0)
        return -1;
    ws_u64map_del(&c->region_at, g->a.address);
    region_unlink(c, i);
    g->next = c->free_region;
    c->free_region = i;
    return 0;
}

static int close_regions(struct collector *c, int64_t heap, const struct thread_state *t, uint64_t ns, uint8_t api)
{
    int32_t *head = region_list(c, heap);
    while (*head >= 0)
        if (region_close(c, *head, t, ns, api, 1) != 0)
            return -1;
    return 0;
}

static int write_heap(struct collector *c, const struct heap *h, uint64_t end_ns, const char *end_api)
{
    static const char *const usages[] = {"unknown", "sub-allocator", "layout"};
    sqlite3_stmt *s = c->st[ST_HEAP];
    sqlite3_bind_int64(s, 1, h->id);
    sqlite3_bind_int64(s, 2, h->domain);
    sqlite3_bind_int64(s, 3, (int64_t)h->handle);
    sqlite3_bind_text(s, 4, usages[h->usage < 3 ? h->usage : 0], -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, h->type == WS_MEM_TYPE_VIRTUAL_ADDRESS ? "virtual-address" : "unknown", -1, SQLITE_STATIC);
    if (h->type == WS_MEM_TYPE_VIRTUAL_ADDRESS) {
        sqlite3_bind_int64(s, 6, (int64_t)h->address);
        sqlite3_bind_int64(s, 7, (int64_t)h->bytes);
    } else {
        sqlite3_bind_null(s, 6);
        sqlite3_bind_null(s, 7);
    }
    bind_opt(s, 8, h->name_id);
    bind_opt(s, 9, h->category);
    bind_opt(s, 10, h->container);
    sqlite3_bind_int64(s, 11, h->thread_id);
    bind_opt(s, 12, h->range_id);
    bind_opt(s, 13, h->run_id);
    sqlite3_bind_int64(s, 14, (int64_t)h->start_ns);
    if (end_api) {
        sqlite3_bind_int64(s, 15, (int64_t)end_ns);
        sqlite3_bind_text(s, 16, end_api, -1, SQLITE_STATIC);
    } else {
        sqlite3_bind_null(s, 15);
        sqlite3_bind_null(s, 16);
    }
    sqlite3_bind_int64(s, 17, h->regions);
    sqlite3_bind_int64(s, 18, h->resets);
    return step(c, ST_HEAP);
}

/* End heap i: its regions end with it (api is the heap's unregistration or its memory's free). */
static int heap_close(struct collector *c, size_t i, const struct thread_state *t, uint64_t ns, uint8_t api)
{
    struct heap *h = &c->heaps[i];
    if (close_regions(c, (int64_t)i, t, ns, api) != 0 || write_heap(c, h, ns, ws_api_name(api)) != 0 ||
        container_count(c, h->container, -1) != 0)
        return -1;
    uint64_t open;
    if (ws_u64map_get(&c->open_heaps, h->handle, &open) && open == i)
        ws_u64map_del(&c->open_heaps, h->handle);
    h->open = 0;
    h->first = -1;
    return 0;
}

static int on_heap(struct collector *c, struct thread_state *t, const struct ws_rec *r)
{
    int64_t domain = domain_row(c, t, r->u[0]);
    if (domain < 0 || GROW(c->heaps, c->nheaps, c->heaps_cap) != 0)
        return fail(c, "out of memory");
    struct heap *h = &c->heaps[c->nheaps];
    *h = (struct heap){.id = (int64_t)c->nheaps + 1,
                       .domain = domain,
                       .thread_id = t->id,
                       .range_id = current_range(t),
                       .run_id = current_run(c),
                       .handle = r->u[2],
                       .address = r->u[3],
                       .bytes = r->u[4],
                       .start_ns = r->ns,
                       .usage = (uint32_t)(r->u[5] & 0xffff),
                       .type = (uint32_t)((r->u[5] >> 16) & 0xffff),
                       .category = (uint32_t)(r->u[5] >> 32),
                       .container_memory = -1,
                       .container_device = -1,
                       .first = -1,
                       .open = 1};
    int64_t in = h->type == WS_MEM_TYPE_VIRTUAL_ADDRESS ? container_of(c, h->address, h->bytes) : -1;
    if (in >= 0) {
        h->container = c->pending[in].id;
        h->container_memory = (int32_t)c->pending[in].memory;
        h->container_device = (int32_t)c->pending[in].device;
    }
    uint64_t old;
    if (ws_u64map_get(&c->open_heaps, h->handle, &old)) /* the handle again: the earlier heap ended unseen */
        ws_u64map_del(&c->open_heaps, h->handle);
    if (ws_u64map_put(&c->open_heaps, h->handle, c->nheaps) != 0)
        return fail(c, "out of memory");
    c->nheaps++;
    return container_count(c, h->container, 1);
}

static int on_heap_end(struct collector *c, struct thread_state *t, const struct ws_rec *r)
{
    uint64_t i;
    if (r->api == WS_API_nvtxMemHeapReset && r->u[2] == 0) /* the process-wide heap */
        return close_regions(c, -1, t, r->ns, r->api);
    if (!ws_u64map_get(&c->open_heaps, r->u[2], &i)) {
        struct ws_rec e = *r;
        e.u[0] = r->u[2]; /* api_errors.address: the handle */
        return write_error(c, t, &e);
    }
    if (r->api == WS_API_nvtxMemHeapReset) {
        c->heaps[i].resets++;
        return close_regions(c, (int64_t)i, t, r->ns, r->api);
    }
    return heap_close(c, (size_t)i, t, r->ns, r->api);
}

static int on_region(struct collector *c, struct thread_state *t, const struct ws_rec *r)
{
    int64_t domain = domain_row(c, t, r->u[0]);
    if (domain < 0)
        return -1;
    uint64_t address = r->u[3], bytes = r->u[4], heap_index, old;
    if (ws_u64map_get(&c->region_at, address, &old)) {
        /* registered again without an unregistration we saw: the earlier row stays open */
        if (region_close(c, (int32_t)old, t, 0, 0, 0) != 0)
            return -1;
    }
    int32_t i = c->free_region;
    if (i >= 0) {
        c->free_region = c->regions[i].next;
    } else {
        if (c->nregions >= INT32_MAX || GROW(c->regions, c->nregions, c->regions_cap) != 0)
            return fail(c, "out of memory");
        i = (int32_t)c->nregions++;
    }
    struct region *g = &c->regions[i];
    memset(g, 0, sizeof *g);
    fill_pending(&g->a, r, ++c->next_alloc, t, current_run(c));
    g->a.address = address;
    g->a.requested = g->a.bytes = bytes;
    g->a.stream = 0;
    g->a.device = 0; /* the device of the memory it lies in, when that memory was traced */
    g->a.memory = WS_MEM_REGION;
    g->domain = domain;
    g->container_memory = -1;
    /* A region of an unknown heap is taken as one of the process-wide heap. */
    g->heap = r->u[2] && ws_u64map_get(&c->open_heaps, r->u[2], &heap_index) ? (int64_t)heap_index : -1;
    if (g->heap >= 0) {
        struct heap *h = &c->heaps[g->heap];
        h->regions++;
        g->container = h->container;
        g->container_memory = h->container_memory;
        g->a.device = h->container_device >= 0 ? (uint32_t)h->container_device : 0;
    } else {
        int64_t in = container_of(c, address, bytes);
        if (in >= 0) {
            g->container = c->pending[in].id;
            g->container_memory = (int32_t)c->pending[in].memory;
            g->a.device = c->pending[in].device;
        }
        if (container_count(c, g->container, 1) != 0)
            return -1;
    }
    region_link(c, i);
    return ws_u64map_put(&c->region_at, address, (uint64_t)i) == 0 ? 0 : fail(c, "out of memory");
}

static int on_region_resize(struct collector *c, struct thread_state *t, const struct ws_rec *r)
{
    uint64_t i;
    if (!ws_u64map_get(&c->region_at, r->u[3], &i)) {
        struct ws_rec e = *r;
        e.u[0] = r->u[3];
        return write_error(c, t, &e);
    }
    struct region *g = &c->regions[i];
    g->resizes++;
    if (r->u[4] > g->a.bytes) /* the row holds the largest size; memory_region_resizes the history */
        g->a.bytes = r->u[4];
    sqlite3_stmt *s = c->st[ST_RESIZE];
    sqlite3_bind_int64(s, 1, g->a.id);
    sqlite3_bind_int64(s, 2, (int64_t)r->u[4]);
    sqlite3_bind_int64(s, 3, t->id);
    bind_opt(s, 4, current_range(t));
    sqlite3_bind_int64(s, 5, (int64_t)r->ns);
    return step(c, ST_RESIZE);
}

static int on_region_unregister(struct collector *c, struct thread_state *t, const struct ws_rec *r)
{
    uint64_t i;
    if (!ws_u64map_get(&c->region_at, r->u[3], &i)) {
        struct ws_rec e = *r;
        e.u[0] = r->u[3];
        return write_error(c, t, &e);
    }
    return region_close(c, (int32_t)i, t, r->ns, r->api, 1);
}

/* A name for a heap (given at registration), a region, or any traced allocation at that address. */
static int on_memory_name(struct collector *c, struct thread_state *t, const struct ws_rec *r)
{
    int64_t name = range_name(c, t, r, r->u[2]);
    if (name < 0)
        return -1;
    uint64_t i;
    if (r->u[4] == 1) {
        if (ws_u64map_get(&c->open_heaps, r->u[3], &i))
            c->heaps[i].name_id = name;
        return 0;
    }
    int64_t allocation = 0;
    if (ws_u64map_get(&c->region_at, r->u[3], &i))
        allocation = c->regions[i].a.id;
    else if (ws_u64map_get(&c->live, r->u[3], &i))
        allocation = c->pending[i].id;
    if (allocation == 0) {
        c->unattached_names++;
        return 0;
    }
    sqlite3_stmt *s = c->st[ST_ALLOC_NAME];
    sqlite3_bind_int64(s, 1, allocation);
    sqlite3_bind_int64(s, 2, name);
    bind_opt(s, 3, (int64_t)(uint32_t)r->u[5]);
    return step(c, ST_ALLOC_NAME);
}

/* The free of a traced allocation ends the heaps and process-wide regions inside it (called by
 * on_free when some are open: what a program frees is no longer sub-allocated). */
static int container_freed(struct collector *c, const struct thread_state *t, const struct ws_rec *f,
                           int64_t allocation)
{
    uint64_t n;
    if (!ws_u64map_get(&c->containers, (uint64_t)allocation, &n))
        return 0;
    for (size_t i = 0; i < c->nheaps; i++)
        if (c->heaps[i].open && c->heaps[i].container == allocation && heap_close(c, i, t, f->ns, f->api) != 0)
            return -1;
    for (int32_t i = c->process_wide, next; i >= 0; i = next) {
        next = c->regions[i].next;
        if (c->regions[i].container == allocation && region_close(c, i, t, f->ns, f->api, 1) != 0)
            return -1;
    }
    return 0;
}

static int flush_memory(struct collector *c)
{
    for (size_t i = 0; i < c->nheaps; i++) {
        if (!c->heaps[i].open)
            continue;
        for (int32_t *head = &c->heaps[i].first; *head >= 0;)
            if (region_close(c, *head, NULL, 0, 0, 0) != 0)
                return -1;
        if (write_heap(c, &c->heaps[i], 0, NULL) != 0)
            return -1;
    }
    while (c->process_wide >= 0)
        if (region_close(c, c->process_wide, NULL, 0, 0, 0) != 0)
            return -1;
    return 0;
}

/* ---- launches and names ---------------------------------------------------------------------- */

static int on_symbol(struct collector *c, const struct ws_rec *r)
{
    if (r->u[2]) /* a kernel handle standing for a registered host stub */
        return ws_u64map_put(&c->aliases, r->u[0], r->u[2]) == 0 ? 0 : fail(c, "out of memory");
    uint64_t old;
    if (ws_u64map_get(&c->symbols, r->u[0], &old) && (old & 3) >= r->u[3])
        return 0;
    int64_t id = intern_rec(c, r);
    if (id < 0)
        return -1;
    return ws_u64map_put(&c->symbols, r->u[0], ((uint64_t)id << 2) | (r->u[3] & 3)) == 0 ? 0 : fail(c, "out of memory");
}

static int64_t function_name(struct collector *c, uint64_t fn)
{
    uint64_t stub, v;
    if (ws_u64map_get(&c->aliases, fn, &stub) && ws_u64map_get(&c->symbols, stub, &v))
        return (int64_t)(v >> 2);
    return ws_u64map_get(&c->symbols, fn, &v) ? (int64_t)(v >> 2) : 0;
}

static int on_launch(struct collector *c, struct thread_state *t, const struct ws_rec *r, int graph)
{
    struct batch *b = &c->launches;
    cell_text(b, ws_api_name(r->api));
    cell_opt(b, graph ? 0 : function_name(c, r->u[0]));
    cell_int(b, (int64_t)r->u[0]);
    if (!graph) {
        cell_int(b, ws_dim3_x(r->u[1]));
        cell_int(b, ws_dim3_y(r->u[1]));
        cell_int(b, ws_dim3_z(r->u[1]));
        cell_int(b, ws_dim3_x(r->u[2]));
        cell_int(b, ws_dim3_y(r->u[2]));
        cell_int(b, ws_dim3_z(r->u[2]));
        cell_int(b, (int64_t)r->u[4]);
    } else {
        for (int i = 0; i < 7; i++)
            cell_null(b);
    }
    cell_opt(b, (int64_t)r->u[3]);
    cell_int(b, r->status);
    cell_int(b, t->id);
    cell_opt(b, current_range(t));
    cell_opt(b, current_run(c));
    cell_int(b, (int64_t)r->ns);
    c->stats->launches++;
    return batch_row_done(c, b);
}

/* ---- declarations, marks, domains, metadata ---------------------------------------------------- */

static int on_declaration(struct collector *c, struct thread_state *t, const struct ws_rec *r, int level)
{
    int64_t node = intern_rec(c, r);
    if (node < 0)
        return -1;
    sqlite3_stmt *s = c->st[ST_DECL];
    sqlite3_bind_int(s, 1, level);
    sqlite3_bind_int64(s, 2, node);
    sqlite3_bind_int64(s, 3, (int64_t)r->u[0]);
    sqlite3_bind_int64(s, 4, (int64_t)r->u[2]);
    sqlite3_bind_int64(s, 5, level == 2 ? (int64_t)r->u[3] : 0);
    sqlite3_bind_int64(s, 6, t->id);
    bind_opt(s, 7, current_range(t));
    bind_opt(s, 8, current_run(c));
    sqlite3_bind_int64(s, 9, (int64_t)r->ns);
    return step(c, ST_DECL);
}

/* The tactic kinds of include/wstrace.h, as the declaration_details table spells them. */
static const char *tactic_kind_name(unsigned kind)
{
    static const char *const names[] = {NULL, "cached", "cached-free", "miss"};
    return kind < sizeof names / sizeof names[0] ? names[kind] : "unknown";
}

/* WS_REC_DECLARE2: a declarations row, then its details; the node and the tactic share the string. */
static int on_declaration2(struct collector *c, struct thread_state *t, const struct ws_rec *r)
{
    size_t n;
    const char *p = ws_rec_text(r, &n);
    size_t node_len = strnlen(p, n);
    int level = (int)(r->u[4] & 0xffu);
    int32_t device = (int32_t)(uint32_t)(r->u[4] >> 32);
    int64_t node = intern(c, p, node_len), tactic = 0;
    if (node < 0)
        return -1;
    if (node_len + 1 < n && (tactic = intern(c, p + node_len + 1, n - node_len - 1)) < 0)
        return -1;
    sqlite3_stmt *s = c->st[ST_DECL];
    sqlite3_bind_int(s, 1, level);
    sqlite3_bind_int64(s, 2, node);
    sqlite3_bind_int64(s, 3, (int64_t)r->u[0]);
    sqlite3_bind_int64(s, 4, (int64_t)r->u[2]);
    sqlite3_bind_int64(s, 5, (int64_t)r->u[3]);
    sqlite3_bind_int64(s, 6, t->id);
    bind_opt(s, 7, current_range(t));
    bind_opt(s, 8, current_run(c));
    sqlite3_bind_int64(s, 9, (int64_t)r->ns);
    if (step(c, ST_DECL) != 0)
        return -1;
    t->last_declaration = sqlite3_last_insert_rowid(c->db);
    t->regions_due = r->u[5];
    s = c->st[ST_DECL_DETAIL];
    sqlite3_bind_int64(s, 1, t->last_declaration);
    if (device < 0)
        sqlite3_bind_null(s, 2);
    else
        sqlite3_bind_int(s, 2, device);
    bind_opt(s, 3, tactic);
    const char *kind = tactic_kind_name((unsigned)(r->u[4] >> 8) & 0xffu);
    if (kind)
        sqlite3_bind_text(s, 4, kind, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, 4);
    return step(c, ST_DECL_DETAIL);
}

/* WS_REC_REGION: belongs to the thread's last declaration, when that one announced it. */
static int on_declared_region(struct collector *c, struct thread_state *t, const struct ws_rec *r)
{
    if (t->last_declaration <= 0 || t->regions_due == 0)
        return 0; /* its declaration was lost: a region of nothing */
    t->regions_due--;
    int64_t name = intern_rec(c, r);
    if (name < 0)
        return -1;
    sqlite3_stmt *s = c->st[ST_DECL_REGION];
    sqlite3_bind_int64(s, 1, t->last_declaration);
    sqlite3_bind_int64(s, 2, (int64_t)r->u[3]);
    sqlite3_bind_int64(s, 3, name);
    sqlite3_bind_int64(s, 4, (int64_t)r->u[0]);
    sqlite3_bind_int64(s, 5, (int64_t)r->u[2]);
    return step(c, ST_DECL_REGION);
}

static int on_mark(struct collector *c, struct thread_state *t, const struct ws_rec *r)
{
    int64_t name = range_name(c, t, r, r->u[3]), domain = domain_row(c, t, r->u[0]);
    if (name < 0 || domain < 0)
        return -1;
    sqlite3_stmt *s = c->st[ST_MARK];
    int64_t id = ++c->next_mark;
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_int64(s, 2, t->id);
    bind_opt(s, 3, name);
    sqlite3_bind_int64(s, 4, domain);
    bind_opt(s, 5, current_range(t));
    sqlite3_bind_int64(s, 6, (int64_t)r->ns);
    struct attrs a = attrs_of(r);
    return step(c, ST_MARK) == 0 ? write_attrs(c, ST_MARK_ATTRS, id, &a) : -1;
}

/* Registered string handles are unique in a process image whatever their domain. */
static int on_register_string(struct collector *c, const struct thread_state *t, const struct ws_rec *r)
{
    int64_t id = intern_rec(c, r), domain = domain_row(c, t, r->u[0]);
    if (id < 0 || domain < 0 || ws_u64map_put(&c->registered, handle_key(t, r->u[2]), (uint64_t)id) != 0)
        return fail(c, "out of memory");
    sqlite3_stmt *s = c->st[ST_REGSTR];
    sqlite3_bind_int64(s, 1, domain);
    sqlite3_bind_int64(s, 2, (int64_t)r->u[2]);
    sqlite3_bind_int64(s, 3, id);
    return step(c, ST_REGSTR);
}

static int on_category(struct collector *c, const struct thread_state *t, const struct ws_rec *r)
{
    int64_t name = intern_rec(c, r), domain = domain_row(c, t, r->u[0]);
    if (name < 0 || domain < 0)
        return -1;
    sqlite3_stmt *s = c->st[ST_CATEGORY];
    sqlite3_bind_int64(s, 1, domain);
    sqlite3_bind_int64(s, 2, (int64_t)(uint32_t)r->u[2]);
    sqlite3_bind_int64(s, 3, name);
    return step(c, ST_CATEGORY);
}

static int on_thread_name(struct collector *c, const struct ws_rec *r)
{
    int64_t name = intern_rec(c, r);
    if (name < 0)
        return -1;
    for (size_t i = 0; i < c->spool.nthreads; i++)
        if (c->threads[i].os_tid == r->u[0])
            c->threads[i].name_id = name;
    return 0;
}

static int on_meta(struct collector *c, const struct ws_rec *r)
{
    size_t n;
    const char *p = ws_rec_text(r, &n);
    size_t klen = r->u[0] < n ? (size_t)r->u[0] : n;
    if (GROW(c->meta, c->nmeta, c->meta_cap) != 0)
        return fail(c, "out of memory");
    int64_t k = intern(c, p, klen), v = intern(c, p + klen, n - klen);
    if (k < 0 || v < 0)
        return -1;
    c->meta[c->nmeta++] = (struct meta_kv){k, v};
    return 0;
}

static int on_image(struct collector *c, const struct ws_rec *r)
{
    c->images++;
    if (c->command_line_id == 0)
        c->command_line_id = intern_rec(c, r);
    return c->command_line_id < 0 ? -1 : 0;
}

/* ---- graphs, capture, arrays, pools: what graphs.c asks of the collector ---------------------- */

static int graph_replay(void *ctx, size_t ti, const struct ws_rec *r, int64_t *row)
{
    struct collector *c = ctx;
    struct thread_state *t = &c->threads[ti];
    int rc = 0;
    *row = 0;
    switch (r->type) {
    case WS_REC_ALLOC:
        rc = on_alloc(c, t, r);
        *row = c->next_alloc;
        break;
    case WS_REC_FREE: rc = on_free(c, t, r); break;
    case WS_REC_LAUNCH:
        rc = on_launch(c, t, r, 0);
        *row = (int64_t)c->stats->launches; /* launches rows are numbered in the order they are written */
        break;
    default: break;
    }
    return rc;
}

static int64_t graph_live_allocation(void *ctx, uint64_t address)
{
    struct collector *c = ctx;
    uint64_t idx;
    return ws_u64map_get(&c->live, address, &idx) ? c->pending[idx].id : 0;
}

static void graph_where(void *ctx, size_t ti, int64_t *thread_id, int64_t *range_id, int64_t *run_id)
{
    struct collector *c = ctx;
    *thread_id = c->threads[ti].id;
    *range_id = current_range(&c->threads[ti]);
    *run_id = current_run(c);
}

static int64_t graph_kernel_name(void *ctx, uint64_t fn) { return function_name(ctx, fn); }

static int graph_failed(struct collector *c)
{
    if (!c->err[0])
        snprintf(c->err, c->errlen, "%s", ws_graphs_error(c->graphs));
    return -1;
}

static int dispatch(struct collector *c, struct thread_state *t, const struct ws_rec *r)
{
    if (!t->first_ns)
        t->first_ns = r->ns;
    t->last_ns = r->ns;
    c->stats->records++;
    size_t ti = (size_t)(t - c->threads);
    int taken = ws_graphs_take(c->graphs, ti, r);
    if (taken != 0)
        return taken > 0 ? 0 : graph_failed(c);
    switch ((enum ws_rec_type)r->type) {
    case WS_REC_ALLOC:
        if (on_alloc(c, t, r) != 0)
            return -1;
        return ws_graphs_allocated(c->graphs, ti, r, c->next_alloc) == 0 ? 0 : graph_failed(c);
    case WS_REC_FREE:
        if (r->api == WS_API_cuMemRelease && r->status == 0) {
            int kept = vmm_release_reference(c, r);
            if (kept != 0)
                return kept > 0 ? 0 : -1;
            int deferred = vmm_defer_release(c, t, r);
            if (deferred != 0)
                return deferred > 0 ? 0 : -1;
        }
        return on_free(c, t, r);
    case WS_REC_LAUNCH: return on_launch(c, t, r, 0);
    case WS_REC_VMM: return on_vmm(c, t, r);
    case WS_REC_GRAPH_LAUNCH:
        if (on_launch(c, t, r, 1) != 0)
            return -1;
        return ws_graphs_launched(c->graphs, ti, r, (int64_t)c->stats->launches) == 0 ? 0 : graph_failed(c);
    case WS_REC_CAPTURE_BEGIN:
    case WS_REC_CAPTURE_END:
    case WS_REC_CAPTURED:
    case WS_REC_GRAPH_EXEC:
    case WS_REC_GRAPH_NODE:
    case WS_REC_GRAPH_END:
    case WS_REC_GRAPH_DESTROY:
    case WS_REC_GRAPH_NODE_SET:
    case WS_REC_GRAPH_LAUNCH_BEGIN:
    case WS_REC_ARRAY:
    case WS_REC_POOL:
    case WS_REC_POOL_STATE: return ws_graphs_record(c->graphs, ti, r) == 0 ? 0 : graph_failed(c);
    case WS_REC_PUSH: return on_push(c, t, r);
    case WS_REC_POP: return on_pop(c, t, r);
    case WS_REC_RANGE_START: return on_range_start(c, t, r);
    case WS_REC_RANGE_END: return on_range_end(c, t, r);
    case WS_REC_MARK: return on_mark(c, t, r);
    case WS_REC_DOMAIN: return on_domain(c, t, r);
    case WS_REC_REGISTER_STRING: return on_register_string(c, t, r);
    case WS_REC_THREAD_NAME: return on_thread_name(c, r);
    case WS_REC_RUN_BEGIN: return on_run_begin(c, t, r);
    case WS_REC_RUN_END: return on_run_end(c, t, r);
    case WS_REC_ESTIMATE: return on_declaration(c, t, r, 1);
    case WS_REC_DECLARE: return on_declaration(c, t, r, 2);
    case WS_REC_META: return on_meta(c, r);
    case WS_REC_SYMBOL: return on_symbol(c, r);
    case WS_REC_IMAGE: return on_image(c, r);
    case WS_REC_CATEGORY: return on_category(c, t, r);
    case WS_REC_MEM_HEAP: return on_heap(c, t, r);
    case WS_REC_MEM_HEAP_END: return on_heap_end(c, t, r);
    case WS_REC_MEM_REGION: return on_region(c, t, r);
    case WS_REC_MEM_RESIZE: return on_region_resize(c, t, r);
    case WS_REC_MEM_UNREGISTER: return on_region_unregister(c, t, r);
    case WS_REC_MEM_NAME: return on_memory_name(c, t, r);
    case WS_REC_DECLARE2: return on_declaration2(c, t, r);
    case WS_REC_REGION: return on_declared_region(c, t, r);
    case WS_REC_NONE:
    case WS_REC_TYPE_COUNT: break;
    }
    return 0;
}

/* ---- end of the spool: what never closed -------------------------------------------------------- */

/* One row per thread id; a thread that went on in later images (exec) spans all its parts. */
static int write_thread(struct collector *c, size_t i)
{
    const struct thread_state *t = &c->threads[i];
    for (size_t j = 0; j < i; j++)
        if (c->threads[j].id == t->id)
            return 0; /* written with its first part */
    uint64_t first = t->first_ns, last = t->last_ns;
    int64_t name = t->name_id;
    for (size_t k = i + 1; k < c->spool.nthreads; k++) {
        const struct thread_state *u = &c->threads[k];
        if (u->id != t->id)
            continue;
        if (u->first_ns && (!first || u->first_ns < first))
            first = u->first_ns;
        if (u->last_ns > last)
            last = u->last_ns;
        if (u->name_id > 0)
            name = u->name_id;
    }
    sqlite3_stmt *s = c->st[ST_THREAD];
    sqlite3_bind_int64(s, 1, t->id);
    sqlite3_bind_int64(s, 2, (int64_t)t->os_tid);
    bind_opt(s, 3, name);
    sqlite3_bind_int64(s, 4, (int64_t)first);
    sqlite3_bind_int64(s, 5, (int64_t)last);
    return step(c, ST_THREAD);
}

static int flush_open(struct collector *c)
{
    if (flush_memory(c) != 0) /* regions are allocation rows: written before the batch is flushed */
        return -1;
    if (ws_graphs_finish(c->graphs) != 0)
        return graph_failed(c);
    for (size_t i = 0; i < c->live.cap; i++)
        if (c->live.state[i] == 1 && write_alloc(c, &c->pending[c->live.vals[i]], 0, NULL, 0, 0) != 0)
            return -1;
    for (size_t i = 0; i < c->startends.cap; i++)
        if (c->startends.state[i] == 1 && write_startend(c, &c->se[c->startends.vals[i]], 0, 0, 0) != 0)
            return -1;
    for (size_t i = 0; i < c->spool.nthreads; i++) {
        struct thread_state *t = &c->threads[i];
        for (size_t d = 0; d < t->depth; d++)
            if (write_range(c, &t->stack[d], t->id, 0, "push", 0, 0) != 0)
                return -1;
        if (write_thread(c, i) != 0)
            return -1;
    }
    for (size_t i = 0; i < c->nruns; i++)
        if (write_run(c, &c->runs[i], 0, 0) != 0)
            return -1;
    return 0;
}

/* The one process of a collected trace (schema/README.md, processes): identity from the
 * environment of the process that collects, which is the traced process itself at exit and
 * `wstrace record` (same environment) when it recovers a spool. */
static int write_process(struct collector *c, const char *spool_path, uint64_t lost, uint64_t end_ns)
{
    const struct ws_spool_header *h = c->spool.hdr;
    struct ws_process_row p;
    char host[256], boot[64];
    ws_process_row_init(&p, 1, "tracer");
    ws_process_row_identify(&p, host, sizeof host, boot, sizeof boot);
    p.pid = (int64_t)h->pid;
    p.ppid = (int64_t)h->ppid;
    p.origin = spool_path;
    p.command_line = c->command_line_id > 0 ? c->string_values[c->command_line_id - 1] : NULL;
    p.start_ns = (int64_t)h->start_ns;
    p.end_ns = end_ns ? (int64_t)end_ns : WS_UNKNOWN;
    p.start_time_unix_ns = (int64_t)h->start_realtime_ns;
    p.clean_exit = end_ns != 0;
    p.lost_records = (int64_t)lost;
    if (ws_process_row_write(c->db, &p) != 0 || ws_tracedb_meta_text(c->db, "source", "tracer") != 0)
        return -1;
    return boot[0] ? ws_tracedb_meta_text(c->db, "clock", boot) : 0;
}

/* meta(key) = n bytes of text, verbatim. */
static int meta_bytes(struct collector *c, const char *key, const char *text, size_t n)
{
    sqlite3_stmt *st = c->st[ST_META];
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, text, (int)n, SQLITE_STATIC);
    return step(c, ST_META);
}

static int meta_string_value(struct collector *c, const char *key, int64_t value_id)
{
    return meta_bytes(c, key, c->string_values[value_id - 1], c->string_lens[value_id - 1]);
}

static int meta_string(struct collector *c, int64_t key_id, int64_t value_id)
{
    sqlite3_stmt *st = c->st[ST_META];
    sqlite3_bind_text(st, 1, c->string_values[key_id - 1], (int)c->string_lens[key_id - 1], SQLITE_STATIC);
    sqlite3_bind_text(st, 2, c->string_values[value_id - 1], (int)c->string_lens[value_id - 1], SQLITE_STATIC);
    return step(c, ST_META);
}

/* A text field of the spool header: at most its size, whether or not a NUL ends it. */
static int meta_field(struct collector *c, const char *key, const char *field, size_t size)
{
    return meta_bytes(c, key, field, strnlen(field, size));
}

static int write_meta(struct collector *c, const char *spool_path)
{
    const struct ws_spool_header *h = c->spool.hdr;
    sqlite3 *db = c->db;
    for (size_t i = 0; i < c->nmeta; i++)
        if (meta_string(c, c->meta[i].key_id, c->meta[i].value_id) != 0)
            return -1;
    uint64_t lost = __atomic_load_n(&h->lost_records, __ATOMIC_ACQUIRE);
    uint64_t end_ns = __atomic_load_n(&h->end_ns, __ATOMIC_ACQUIRE);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    c->stats->lost_records = lost;
    c->stats->corrupt_records = c->spool.corrupt_records;
    c->stats->threads = 0;
    for (size_t i = 0; i < c->spool.nthreads; i++) {
        size_t j = 0;
        while (j < i && c->threads[j].id != c->threads[i].id)
            j++;
        c->stats->threads += j == i; /* parts of one thread across exec count once */
    }
    c->stats->clean_exit = end_ns != 0;
    if (c->command_line_id > 0) {
        if (meta_string_value(c, "command_line", c->command_line_id) != 0)
            return -1;
    } else if (meta_bytes(c, "command_line", "", 0) != 0) {
        return -1;
    }
    if (meta_field(c, "capture_backend", h->backend, sizeof h->backend) != 0 ||
        meta_field(c, "tracer_version", h->tool_version, sizeof h->tool_version) != 0)
        return -1;
    int rc =
        ws_tracedb_meta_int(db, "pid", (long long)h->pid) | ws_tracedb_meta_int(db, "ppid", (long long)h->ppid) |
        ws_tracedb_meta_int(db, "images", (long long)c->images) |
        ws_tracedb_meta_int(db, "start_ns", (long long)h->start_ns) |
        ws_tracedb_meta_int(db, "start_time_unix_ns", (long long)h->start_realtime_ns) |
        ws_tracedb_meta_int(db, "clean_exit", end_ns != 0) | ws_tracedb_meta_int(db, "lost_records", (long long)lost) |
        ws_tracedb_meta_int(db, "truncated_strings", (long long)h->truncated_strings) |
        ws_tracedb_meta_int(db, "corrupt_records", (long long)c->spool.corrupt_records) |
        ws_tracedb_meta_int(db, "unbalanced_pops", (long long)c->unbalanced_pops) |
        ws_tracedb_meta_int(db, "unmatched_range_ends", (long long)c->unmatched_ends) |
        ws_tracedb_meta_int(db, "unattached_memory_names", (long long)c->unattached_names) |
        ws_tracedb_meta_int(db, "records", (long long)c->stats->records) |
        ws_tracedb_meta_int(db, "chunks", (long long)c->spool.nchunks) | ws_tracedb_meta_text(db, "spool", spool_path) |
        ws_tracedb_meta_int(db, "collected_unix_ns", (long long)now.tv_sec * 1000000000ll + now.tv_nsec);
    if (end_ns)
        rc |= ws_tracedb_meta_int(db, "end_ns", (long long)end_ns);
    if (rc == 0)
        rc = write_process(c, spool_path, lost, end_ns);
    return rc ? fail(c, "cannot write meta") : 0;
}

/* ---- driver ------------------------------------------------------------------------------------ */

static int setup(struct collector *c)
{
    if (batch_prepare(c, &c->allocs, "allocations", ALLOC_COLUMNS, 18) != 0 ||
        batch_prepare(c, &c->launches, "launches", LAUNCH_COLUMNS, 16) != 0)
        return -1;
    for (int i = 0; i < ST_COUNT; i++)
        if (sqlite3_prepare_v3(c->db, statement_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &c->st[i], NULL) != SQLITE_OK)
            return fail(c, "cannot prepare the trace tables");
    if (ws_u64map_init(&c->string_ids, 1024) || ws_u64map_init(&c->live, 1024) || ws_u64map_init(&c->symbols, 64) ||
        ws_u64map_init(&c->aliases, 64) || ws_u64map_init(&c->registered, 64) || ws_u64map_init(&c->startends, 64) ||
        ws_u64map_init(&c->domain_rows, 16) || ws_u64map_init(&c->domain_names, 16) ||
        ws_u64map_init(&c->open_heaps, 16) || ws_u64map_init(&c->region_at, 64) || ws_u64map_init(&c->containers, 16) ||
        ws_u64map_init(&c->vmm_maps, 16) || ws_u64map_init(&c->vmm_map_handle, 16) ||
        ws_u64map_init(&c->vmm_mapped, 16) || ws_u64map_init(&c->vmm_reserved, 16) ||
        ws_u64map_init(&c->vmm_retained, 16) || ws_u64map_init(&c->vmm_foreign, 16))
        return fail(c, "out of memory");
    c->free_region = c->process_wide = -1;
    c->threads = calloc(c->spool.nthreads ? c->spool.nthreads : 1, sizeof *c->threads);
    if (!c->threads)
        return fail(c, "out of memory");
    struct ws_graph_host host = {c, graph_replay, graph_live_allocation, graph_where, graph_kernel_name};
    if (ws_graphs_open(c->db, &host, c->spool.nthreads, &c->graphs, c->err, c->errlen) != 0)
        return -1;
    for (size_t i = 0; i < c->spool.nthreads; i++) {
        const struct ws_spool_thread *st = &c->spool.threads[i];
        c->threads[i].id = st->serial;
        c->threads[i].os_tid = st->os_tid;
        c->threads[i].image = st->nchunks ? st->chunks[0]->image : 0;
        /* exec keeps the calling thread: its records in a later image belong to the same thread */
        for (size_t j = 0; j < i; j++)
            if (c->spool.threads[j].os_tid == st->os_tid && c->spool.threads[j].chunks[0]->image < st->chunks[0]->image)
                c->threads[i].id = c->threads[j].id;
    }
    sqlite3_bind_int64(c->st[ST_DOMAIN], 1, 0); /* the default domain */
    return step(c, ST_DOMAIN);
}

static void teardown(struct collector *c)
{
    ws_graphs_close(c->graphs);
    c->graphs = NULL;
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(c->st[i]);
    sqlite3_finalize(c->allocs.single);
    sqlite3_finalize(c->allocs.multi);
    sqlite3_finalize(c->launches.single);
    sqlite3_finalize(c->launches.multi);
    c->allocs.single = c->allocs.multi = c->launches.single = c->launches.multi = NULL;
    if (c->threads)
        for (size_t i = 0; i < c->spool.nthreads; i++)
            free(c->threads[i].stack);
    free(c->threads);
    for (size_t i = 0; i < c->nstrings; i++)
        free(c->string_values[i]);
    free(c->string_values);
    free(c->string_lens);
    free(c->pending);
    free(c->free_slots);
    free(c->se);
    free(c->runs);
    free(c->meta);
    ws_u64map_free(&c->string_ids);
    ws_u64map_free(&c->live);
    ws_u64map_free(&c->symbols);
    ws_u64map_free(&c->aliases);
    ws_u64map_free(&c->registered);
    ws_u64map_free(&c->startends);
    ws_u64map_free(&c->domain_rows);
    ws_u64map_free(&c->domain_names);
    ws_u64map_free(&c->open_heaps);
    ws_u64map_free(&c->region_at);
    ws_u64map_free(&c->containers);
    ws_u64map_free(&c->vmm_maps);
    ws_u64map_free(&c->vmm_map_handle);
    ws_u64map_free(&c->vmm_mapped);
    ws_u64map_free(&c->vmm_reserved);
    ws_u64map_free(&c->vmm_retained);
    ws_u64map_free(&c->vmm_foreign);
    free(c->releases);
    free(c->heaps);
    free(c->regions);
    if (c->db)
        sqlite3_close(c->db);
    ws_spool_close(&c->spool);
}

/* Records the spool holds, string continuations included: the total of a conversion's progress. */
static uint64_t spool_records(const struct ws_spool *s)
{
    uint64_t n = 0;
    for (size_t i = 0; i < s->nthreads; i++)
        for (size_t k = 0; k < s->threads[i].nchunks; k++) {
            n += ws_spool_chunk_records(s, s->threads[i].chunks[k]);
        }
    return n;
}

/* Only a regular file is ever replaced by a trace, and never one of the collector's inputs. */
static int check_destination(const char *spool_path, const char *db_path, char *err, size_t errlen)
{
    struct stat d, sp;
    if (lstat(db_path, &d) != 0)
        return 0;
    if (!S_ISREG(d.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file (%s): it is not replaced by a trace", db_path,
                 S_ISLNK(d.st_mode)   ? "a symbolic link"
                 : S_ISDIR(d.st_mode) ? "a folder"
                                      : "a device, FIFO or socket");
        return -1;
    }
    if (stat(spool_path, &sp) == 0 && sp.st_dev == d.st_dev && sp.st_ino == d.st_ino) {
        snprintf(err, errlen, "%s: is the spool being converted: the trace must go elsewhere", db_path);
        return -1;
    }
    return 0;
}

/* A spool another process still writes or converts is not touched.  On success *lock_fd holds the
 * spool's lock (or -1 when nobody ever locked it) until the conversion is over. */
static int lock_spool(const char *spool_path, int *lock_fd, char *err, size_t errlen)
{
    struct ws_spool_header h;
    enum ws_spool_use use = ws_spool_probe(spool_path, lock_fd, &h);
    /* A pid alone proves little (hand-made or copied spools); with its start time it does. */
    if (use == WS_SPOOL_LOCKED || (use == WS_SPOOL_ALIVE && h.start_ticks != 0 && h.end_ns == 0)) {
        if (h.pid)
            snprintf(err, errlen, "%s: in use by process %llu, which converts it when it exits", spool_path,
                     (unsigned long long)h.pid);
        else
            snprintf(err, errlen, "%s: in use by another process", spool_path);
        return -1;
    }
    return 0;
}

int ws_collect_spool(const char *spool_path, const char *db_path, struct ws_collect_stats *stats, char *err,
                     size_t errlen)
{
    return ws_collect_spool_ex(spool_path, db_path, 0, stats, NULL, NULL, err, errlen);
}

int ws_collect_spool_progress(const char *spool_path, const char *db_path, struct ws_collect_stats *stats,
                              ws_collect_progress_fn progress, void *ctx, char *err, size_t errlen)
{
    return ws_collect_spool_ex(spool_path, db_path, 0, stats, progress, ctx, err, errlen);
}

int ws_collect_spool_ex(const char *spool_path, const char *db_path, unsigned flags, struct ws_collect_stats *stats,
                        ws_collect_progress_fn progress, void *ctx, char *err, size_t errlen)
{
    struct collector c;
    memset(&c, 0, sizeof c);
    memset(stats, 0, sizeof *stats);
    c.stats = stats;
    c.err = err;
    c.errlen = errlen;
    err[0] = 0;
    char tmp[4096];
    int rc = -1, tmp_fd = -1, lock_fd = -1;
    c.spool.fd = -1;
    if (check_destination(spool_path, db_path, err, errlen) != 0)
        return -1;
    if (!(flags & WS_COLLECT_OWNER) && lock_spool(spool_path, &lock_fd, err, errlen) != 0)
        return -1;
    ws_temp_remove_stale(db_path);
    if (ws_temp_create(db_path, tmp, sizeof tmp, &tmp_fd) != 0) {
        snprintf(err, errlen, "%s: cannot write the trace: %s", db_path, strerror(errno));
        tmp[0] = 0;
        goto out;
    }
    if (ws_spool_open(spool_path, &c.spool, err, errlen) != 0)
        goto out;
    char msg[512];
    if (ws_tracedb_create_bulk(tmp, &c.db, msg, sizeof msg) != 0) {
        size_t n = strlen(tmp); /* name the trace, not its temporary file */
        snprintf(err, errlen, "%s: cannot write the trace: %s", db_path,
                 strncmp(msg, tmp, n) == 0 && msg[n] == ':' ? msg + n + 2 : msg);
        goto out;
    }
    if (ws_tracedb_exec(c.db, "BEGIN", msg, sizeof msg) != 0 || setup(&c) != 0) {
        fail(&c, "cannot start the trace");
        goto out;
    }
    size_t ti;
    const struct ws_rec *r;
    uint64_t total = progress ? spool_records(&c.spool) : 0, done = 0;
    if (progress)
        progress(ctx, 0, total);
    while ((r = ws_spool_next(&c.spool, &ti)) != NULL) {
        if (dispatch(&c, &c.threads[ti], r) != 0)
            goto out;
        done += 1u + r->ext;
        if (progress && (c.stats->records & 0xFFFF) == 0)
            progress(ctx, done, total);
    }
    if (progress)
        progress(ctx, done, total);
    if (flush_open(&c) != 0 || batch_flush(&c, &c.allocs) != 0 || batch_flush(&c, &c.launches) != 0 ||
        write_meta(&c, spool_path) != 0)
        goto out;
    if (ws_tracedb_create_indexes(c.db, msg, sizeof msg) != 0) {
        snprintf(err, errlen, "%s: cannot index the trace: %s", db_path, msg);
        goto out;
    }
    if (ws_tracedb_exec(c.db, "COMMIT; PRAGMA journal_mode=DELETE;", msg, sizeof msg) != 0) {
        snprintf(err, errlen, "%s: cannot commit the trace: %s", db_path, msg);
        goto out;
    }
    ws_graphs_close(c.graphs); /* its statements too must be finalized before the close */
    c.graphs = NULL;
    for (int i = 0; i < ST_COUNT; i++) {
        sqlite3_finalize(c.st[i]);
        c.st[i] = NULL;
    }
    sqlite3_finalize(c.allocs.single);
    sqlite3_finalize(c.allocs.multi);
    sqlite3_finalize(c.launches.single);
    sqlite3_finalize(c.launches.multi);
    c.allocs.single = c.allocs.multi = c.launches.single = c.launches.multi = NULL;
    if (sqlite3_close(c.db) != SQLITE_OK) {
        snprintf(err, errlen, "%s: cannot close the trace", db_path);
        goto out;
    }
    c.db = NULL;
    if (check_destination(spool_path, db_path, err, errlen) != 0)
        goto out;
    if (rename(tmp, db_path) != 0) {
        snprintf(err, errlen, "%s: cannot write the trace: %s", db_path, strerror(errno));
        goto out;
    }
    rc = 0;
    if (flags & WS_COLLECT_REMOVE_SPOOL) {
        /* Under the spool's lock: nobody else converts it, and the name still is that file. */
        if (lock_fd < 0)
            stats->spool_errno = EBUSY; /* never locked, and its writer still runs */
        else if (ws_spool_remove_stale(spool_path, lock_fd) == 0)
            stats->spool_removed = 1;
        else
            stats->spool_errno = errno ? errno : EIO;
    }
out:
    if (rc != 0 && err[0] == 0)
        snprintf(err, errlen, "%s: cannot write the trace", db_path);
    teardown(&c);
    if (rc != 0 && tmp_fd >= 0)
        unlink(tmp);
    if (tmp_fd >= 0)
        close(tmp_fd);
    if (lock_fd >= 0)
        close(lock_fd);
    return rc;
}
