/*
 * CUDA graphs, stream capture, arrays and memory pools: spool records -> trace tables.
 *
 * Capture.  A CAPTURED record says that the thread's next call was captured into a graph, not
 * run: that call becomes a row of captured_calls (with the capture it belongs to) instead of an
 * allocation, free or launch.
 *
 * Graphs.  An instance's structure arrives once, when it is instantiated (GRAPH_EXEC, then one
 * GRAPH_NODE per node in launch order, then GRAPH_END).  Each GRAPH_LAUNCH of the instance then
 * replays its nodes as records of the launching thread: kernel nodes as launches, memory
 * allocation nodes as allocations at the node's (fixed) address, free nodes as frees, all with api
 * cudaGraphLaunch and times spread between the records stamped before and after the call.
 * Collector.c pairs and attributes them like any other record: to the node (range) open at the
 * launch, once per launch; a later cudaFree of graph memory pairs with the allocation the launch
 * made.  graph_launches and graph_launch_work say which rows each launch made.
 */
#include "graphs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "u64map.h"

enum {
    G_CAPTURE,
    G_CAPTURED,
    G_EXEC,
    G_NODE,
    G_LAUNCH,
    G_WORK,
    G_ARRAY,
    G_POOL,
    G_SAMPLE,
    G_POOL_OP,
    G_POOL_ALLOC,
    G_COUNT
};

static const char *const statement_sql[G_COUNT] = {
    [G_CAPTURE] = "INSERT INTO captures(id, capture_id, begin_api, mode, stream, graph, end_status, thread_id, "
                  "range_id, run_id, begin_ns, end_ns, calls, allocations, frees, kernels, graph_launches) "
                  "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17)",
    [G_CAPTURED] = "INSERT INTO captured_calls(id, capture_id, api, kind, address, bytes, function, kernel_name_id, "
                   "stream, status, thread_id, range_id, ns) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)",
    [G_EXEC] = "INSERT INTO graph_execs(id, handle, graph, api, flags, capture_id, previous_id, nodes, kernels, "
               "allocations, frees, complete, thread_id, range_id, run_id, ns, end_ns, end_api, launches) "
               "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19)",
    [G_NODE] = "INSERT INTO graph_nodes(graph_exec_id, position, depth, type, handle, kernel_name_id, function, "
               "grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes, address, bytes) "
               "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16)",
    [G_LAUNCH] = "INSERT INTO graph_launches(id, graph_exec_id, launch_id, stream, status, thread_id, range_id, "
                 "run_id, ns, kernels, allocations, frees) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)",
    [G_WORK] = "INSERT INTO graph_launch_work(graph_launch_id, position, launch_id, allocation_id) "
               "VALUES (?1,?2,?3,?4)",
    [G_ARRAY] = "INSERT OR REPLACE INTO array_allocations(allocation_id, kind, width, height, depth, levels, flags, "
                "bits_x, bits_y, bits_z, bits_w, format) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)",
    [G_POOL] = "INSERT INTO memory_pools(id, handle, kind, device, max_bytes, thread_id, range_id, ns, destroy_ns, "
               "allocations) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)",
    [G_SAMPLE] = "INSERT INTO pool_samples(pool_id, api, reserved_bytes, used_bytes, reserved_high_bytes, "
                 "used_high_bytes, release_threshold, thread_id, ns) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)",
    [G_POOL_OP] = "INSERT INTO pool_operations(pool_id, api, status, attribute, value, thread_id, range_id, ns) "
                  "VALUES (?1,?2,?3,?4,?5,?6,?7,?8)",
    [G_POOL_ALLOC] = "INSERT INTO pool_allocations(allocation_id, pool_id) VALUES (?1,?2)",
};

struct thread_part {
    int marked; /* a CAPTURED record waits for the call it describes */
    uint64_t mark_capture;
    uint8_t mark_api;
    int64_t building; /* the instance whose structure is being recorded, -1 */
    int begun;        /* a GRAPH_LAUNCH_BEGIN waits for its GRAPH_LAUNCH */
    uint64_t begin_ns, begin_exec;
};

struct capture {
    int64_t id, thread_id, range_id, run_id;
    int64_t calls, allocations, frees, kernels, graph_launches;
    uint64_t capture_id, stream, graph, mode, begin_ns, end_ns;
    int32_t end_status;
    uint8_t api;
    int ended, open;
};

struct gnode {
    uint32_t type, depth;
    uint64_t handle, alias; /* alias: the handle of the node at this position before an update */
    uint64_t function, grid, block, smem, address, bytes;
    int enabled;
    int64_t allocation; /* memory allocation node: the allocation its latest launch made */
};

struct exec {
    int64_t id, previous, capture, thread_id, range_id, run_id, launches;
    uint64_t handle, graph, flags, ns, end_ns, recorded;
    struct gnode *nodes;
    size_t n, cap;
    struct gnode *carry; /* an update: the nodes of the structure it replaces, until it is complete */
    size_t ncarry;
    int32_t walk_status;
    uint8_t api, end_api;
    int complete, ended, written;
};

struct pool {
    int64_t id, thread_id, range_id, allocations;
    uint64_t handle, max_bytes, ns, destroy_ns;
    int32_t device;
    const char *kind;
    int destroyed;
};

struct ws_graphs {
    sqlite3 *db;
    struct ws_graph_host host;
    sqlite3_stmt *st[G_COUNT];
    struct thread_part *threads;
    size_t nthreads, marked;
    struct capture *caps;
    size_t ncaps, caps_cap;
    struct ws_u64map open_captures; /* runtime capture id -> index */
    struct ws_u64map graph_capture; /* graph handle -> index of the capture that returned it */
    struct exec *execs;
    size_t nexecs, execs_cap;
    struct ws_u64map open_execs; /* instance handle -> index */
    struct pool *pools;
    size_t npools, pools_cap;
    struct ws_u64map pool_index; /* pool handle (graph allocators: device | 1 << 63) -> index */
    struct ws_u64map ipc_opens;  /* address of an open IPC mapping -> opens beyond the first */
    int64_t next_captured, next_graph_launch;
    char err[256];
};

#define GROW(arr, n, cap)                                                                                              \
    ((n) < (cap) ? 0 : ((cap) = (cap) ? (cap)*2 : 16, ((arr) = grow_or_free((arr), (cap) * sizeof *(arr))) ? 0 : -1))

static void *grow_or_free(void *p, size_t bytes)
{
    void *q = realloc(p, bytes);
    if (!q)
        free(p);
    return q;
}

static int fail(struct ws_graphs *g, const char *what)
{
    if (!g->err[0])
        snprintf(g->err, sizeof g->err, "%s: %s", what, g->db ? sqlite3_errmsg(g->db) : "out of memory");
    return -1;
}

static int oom(struct ws_graphs *g)
{
    if (!g->err[0])
        snprintf(g->err, sizeof g->err, "out of memory");
    return -1;
}

const char *ws_graphs_error(const struct ws_graphs *g) { return g->err; }

static int step(struct ws_graphs *g, int which)
{
    sqlite3_stmt *s = g->st[which];
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc == SQLITE_DONE ? 0 : fail(g, "cannot write the trace");
}

static void bind_opt(sqlite3_stmt *s, int i, int64_t v)
{
    if (v > 0)
        sqlite3_bind_int64(s, i, v);
    else
        sqlite3_bind_null(s, i);
}

static void bind_u64(sqlite3_stmt *s, int i, uint64_t v) { sqlite3_bind_int64(s, i, (int64_t)v); }

static void where(struct ws_graphs *g, size_t ti, int64_t *thread_id, int64_t *range_id, int64_t *run_id)
{
    int64_t run;
    g->host.where(g->host.ctx, ti, thread_id, range_id, run_id ? run_id : &run);
}

int ws_graphs_open(sqlite3 *db, const struct ws_graph_host *host, size_t nthreads, struct ws_graphs **out, char *err,
                   size_t errlen)
{
    struct ws_graphs *g = calloc(1, sizeof *g);
    *out = NULL;
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    g->db = db;
    g->host = *host;
    g->nthreads = nthreads;
    g->threads = calloc(nthreads ? nthreads : 1, sizeof *g->threads);
    if (!g->threads || ws_u64map_init(&g->open_captures, 16) || ws_u64map_init(&g->graph_capture, 16) ||
        ws_u64map_init(&g->open_execs, 16) || ws_u64map_init(&g->pool_index, 16) || ws_u64map_init(&g->ipc_opens, 16)) {
        snprintf(err, errlen, "out of memory");
        ws_graphs_close(g);
        return -1;
    }
    for (size_t i = 0; i < nthreads; i++)
        g->threads[i].building = -1;
    for (int i = 0; i < G_COUNT; i++)
        if (sqlite3_prepare_v3(db, statement_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &g->st[i], NULL) != SQLITE_OK) {
            snprintf(err, errlen, "cannot prepare the graph tables: %s", sqlite3_errmsg(db));
            ws_graphs_close(g);
            return -1;
        }
    *out = g;
    return 0;
}

void ws_graphs_close(struct ws_graphs *g)
{
    if (!g)
        return;
    for (int i = 0; i < G_COUNT; i++)
        sqlite3_finalize(g->st[i]);
    for (size_t i = 0; i < g->nexecs; i++) {
        free(g->execs[i].nodes);
        free(g->execs[i].carry);
    }
    free(g->execs);
    free(g->caps);
    free(g->pools);
    free(g->threads);
    ws_u64map_free(&g->open_captures);
    ws_u64map_free(&g->graph_capture);
    ws_u64map_free(&g->open_execs);
    ws_u64map_free(&g->pool_index);
    ws_u64map_free(&g->ipc_opens);
    free(g);
}

static const char *mode_name(uint64_t mode)
{
    switch (mode) {
    case 0: return "global"; /* cudaStreamCaptureModeGlobal */
    case 1: return "thread-local";
    case 2: return "relaxed";
    default: return "unknown";
    }
}

static const char *node_type_name(uint32_t type)
{
    static const char *const names[] = {
        "kernel",       "memcpy",           "memset",         "host",      "graph",    "empty",        "event-wait",
        "event-record", "semaphore-signal", "semaphore-wait", "mem-alloc", "mem-free", "batch-mem-op", "conditional"};
    return type < sizeof names / sizeof names[0] ? names[type] : "unknown";
}

enum node_type { NODE_KERNEL = 0, NODE_MEMCPY = 1, NODE_MEMSET = 2, NODE_MEM_ALLOC = 10, NODE_MEM_FREE = 11 };

/* ---- captures ---- */

static int write_capture(struct ws_graphs *g, const struct capture *c)
{
    sqlite3_stmt *s = g->st[G_CAPTURE];
    sqlite3_bind_int64(s, 1, c->id);
    bind_opt(s, 2, (int64_t)c->capture_id);
    sqlite3_bind_text(s, 3, ws_api_name(c->api), -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, mode_name(c->mode), -1, SQLITE_STATIC);
    bind_u64(s, 5, c->stream);
    bind_opt(s, 6, (int64_t)c->graph);
    if (c->ended) {
        sqlite3_bind_int(s, 7, c->end_status);
        bind_u64(s, 12, c->end_ns);
    }
    sqlite3_bind_int64(s, 8, c->thread_id);
    bind_opt(s, 9, c->range_id);
    bind_opt(s, 10, c->run_id);
    bind_u64(s, 11, c->begin_ns);
    sqlite3_bind_int64(s, 13, c->calls);
    sqlite3_bind_int64(s, 14, c->allocations);
    sqlite3_bind_int64(s, 15, c->frees);
    sqlite3_bind_int64(s, 16, c->kernels);
    sqlite3_bind_int64(s, 17, c->graph_launches);
    return step(g, G_CAPTURE);
}

static int on_capture_begin(struct ws_graphs *g, size_t ti, const struct ws_rec *r)
{
    if (r->status != 0)
        return 0; /* a capture that did not begin: the runtime returned the error to the program */
    if (GROW(g->caps, g->ncaps, g->caps_cap) != 0)
        return oom(g);
    struct capture *c = &g->caps[g->ncaps];
    memset(c, 0, sizeof *c);
    c->id = (int64_t)g->ncaps + 1;
    c->capture_id = r->u[1];
    c->stream = r->u[0];
    c->mode = r->u[2];
    c->graph = r->u[3];
    c->api = r->api;
    c->begin_ns = r->ns;
    c->open = 1;
    where(g, ti, &c->thread_id, &c->range_id, &c->run_id);
    uint64_t old;
    if (c->capture_id && ws_u64map_get(&g->open_captures, c->capture_id, &old))
        g->caps[old].open = 0; /* the id again: the earlier capture ended unseen */
    if (c->capture_id && ws_u64map_put(&g->open_captures, c->capture_id, g->ncaps) != 0)
        return oom(g);
    g->ncaps++;
    return 0;
}

static int on_capture_end(struct ws_graphs *g, const struct ws_rec *r)
{
    uint64_t i;
    if (!r->u[1] || !ws_u64map_get(&g->open_captures, r->u[1], &i))
        return 0; /* not capturing (the program got the error), or begun before tracing */
    struct capture *c = &g->caps[i];
    c->ended = 1;
    c->open = 0;
    c->end_status = r->status;
    c->end_ns = r->ns;
    if (r->status == 0 && r->u[2]) {
        c->graph = r->u[2];
        if (ws_u64map_put(&g->graph_capture, r->u[2], i) != 0)
            return oom(g);
    }
    ws_u64map_del(&g->open_captures, r->u[1]);
    return 0;
}

static int on_captured_mark(struct ws_graphs *g, size_t ti, const struct ws_rec *r)
{
    struct thread_part *t = &g->threads[ti];
    if (!t->marked)
        g->marked++;
    t->marked = 1;
    t->mark_capture = r->u[0];
    t->mark_api = (uint8_t)r->u[2];
    return 0;
}

/* The call a CAPTURED record described: a row of captured_calls. */
static int write_captured(struct ws_graphs *g, size_t ti, const struct ws_rec *r, uint64_t capture_id)
{
    uint64_t i;
    struct capture *c = ws_u64map_get(&g->open_captures, capture_id, &i) ? &g->caps[i] : NULL;
    const char *kind = "kernel";
    sqlite3_stmt *s = g->st[G_CAPTURED];
    sqlite3_bind_int64(s, 1, ++g->next_captured);
    bind_opt(s, 2, c ? c->id : 0);
    sqlite3_bind_text(s, 3, ws_api_name(r->api), -1, SQLITE_STATIC);
    switch (r->type) {
    case WS_REC_ALLOC:
        kind = "allocation";
        bind_u64(s, 5, r->u[0]);
        bind_u64(s, 6, r->u[1]);
        break;
    case WS_REC_FREE:
        kind = "free";
        bind_u64(s, 5, r->u[0]);
        break;
    case WS_REC_GRAPH_LAUNCH:
        kind = "graph launch";
        bind_u64(s, 7, r->u[0]);
        break;
    default:
        bind_u64(s, 7, r->u[0]);
        bind_opt(s, 8, g->host.kernel_name(g->host.ctx, r->u[0]));
        break;
    }
    sqlite3_bind_text(s, 4, kind, -1, SQLITE_STATIC);
    bind_opt(s, 9, (int64_t)r->u[3]);
    sqlite3_bind_int(s, 10, r->status);
    int64_t thread_id, range_id;
    where(g, ti, &thread_id, &range_id, NULL);
    sqlite3_bind_int64(s, 11, thread_id);
    bind_opt(s, 12, range_id);
    bind_u64(s, 13, r->ns);
    if (c) {
        c->calls++;
        c->allocations += r->type == WS_REC_ALLOC;
        c->frees += r->type == WS_REC_FREE;
        c->kernels += r->type == WS_REC_LAUNCH;
        c->graph_launches += r->type == WS_REC_GRAPH_LAUNCH;
    }
    return step(g, G_CAPTURED);
}

/* ---- IPC mappings: a handle opened again maps the same address once, until the last close ---- */

static int ipc_take(struct ws_graphs *g, const struct ws_rec *r)
{
    uint64_t extra = 0;
    if (r->status != 0 || !r->u[0])
        return 0;
    int open = ws_u64map_get(&g->ipc_opens, r->u[0], &extra);
    if (r->type == WS_REC_ALLOC) {
        if (!open) /* the first open: collector.c makes the row */
            return ws_u64map_put(&g->ipc_opens, r->u[0], 0) == 0 ? 0 : oom(g);
        if (g->host.live_allocation(g->host.ctx, r->u[0]) == 0) /* its row ended unseen */
            return ws_u64map_put(&g->ipc_opens, r->u[0], 0) == 0 ? 0 : oom(g);
        return ws_u64map_put(&g->ipc_opens, r->u[0], extra + 1) == 0 ? 1 : oom(g);
    }
    if (!open)
        return 0; /* collector.c records a close of nothing traced */
    if (extra == 0) {
        ws_u64map_del(&g->ipc_opens, r->u[0]); /* the last close ends the row */
        return 0;
    }
    return ws_u64map_put(&g->ipc_opens, r->u[0], extra - 1) == 0 ? 1 : oom(g);
}

int ws_graphs_take(struct ws_graphs *g, size_t ti, const struct ws_rec *r)
{
    if (g->marked && ti < g->nthreads && g->threads[ti].marked) {
        struct thread_part *t = &g->threads[ti];
        int calls = r->type == WS_REC_ALLOC || r->type == WS_REC_FREE || r->type == WS_REC_LAUNCH ||
                    r->type == WS_REC_GRAPH_LAUNCH;
        if (r->type == WS_REC_SYMBOL)
            return 0; /* a kernel's name may come between the mark and its launch */
        t->marked = 0;
        g->marked--;
        if (calls && r->api == t->mark_api) {
            if (r->type == WS_REC_GRAPH_LAUNCH)
                t->begun = 0;
            return write_captured(g, ti, r, t->mark_capture) == 0 ? 1 : -1;
        }
        /* the call it described was lost: this record is not it */
    }
    if (r->api == WS_API_cudaIpcOpenMemHandle || r->api == WS_API_cudaIpcCloseMemHandle ||
        r->api == WS_API_cuIpcOpenMemHandle || r->api == WS_API_cuIpcOpenMemHandle_v2 ||
        r->api == WS_API_cuIpcCloseMemHandle)
        return ipc_take(g, r);
    return 0;
}

/* ---- instances ---- */

static int write_exec(struct ws_graphs *g, struct exec *x)
{
    if (x->written)
        return 0;
    x->written = 1;
    int64_t kernels = 0, allocs = 0, frees = 0;
    for (size_t i = 0; i < x->n; i++) {
        kernels += x->nodes[i].type == NODE_KERNEL;
        allocs += x->nodes[i].type == NODE_MEM_ALLOC;
        frees += x->nodes[i].type == NODE_MEM_FREE;
    }
    sqlite3_stmt *s = g->st[G_EXEC];
    sqlite3_bind_int64(s, 1, x->id);
    bind_u64(s, 2, x->handle);
    bind_opt(s, 3, (int64_t)x->graph);
    sqlite3_bind_text(s, 4, ws_api_name(x->api), -1, SQLITE_STATIC);
    bind_u64(s, 5, x->flags);
    bind_opt(s, 6, x->capture);
    bind_opt(s, 7, x->previous);
    sqlite3_bind_int64(s, 8, (int64_t)x->n);
    sqlite3_bind_int64(s, 9, kernels);
    sqlite3_bind_int64(s, 10, allocs);
    sqlite3_bind_int64(s, 11, frees);
    sqlite3_bind_int(s, 12, x->complete);
    sqlite3_bind_int64(s, 13, x->thread_id);
    bind_opt(s, 14, x->range_id);
    bind_opt(s, 15, x->run_id);
    bind_u64(s, 16, x->ns);
    if (x->ended) {
        bind_u64(s, 17, x->end_ns);
        sqlite3_bind_text(s, 18, ws_api_name(x->end_api), -1, SQLITE_STATIC);
    }
    sqlite3_bind_int64(s, 19, x->launches);
    return step(g, G_EXEC);
}

static int write_nodes(struct ws_graphs *g, const struct exec *x)
{
    sqlite3_stmt *s = g->st[G_NODE];
    for (size_t i = 0; i < x->n; i++) {
        const struct gnode *n = &x->nodes[i];
        sqlite3_bind_int64(s, 1, x->id);
        sqlite3_bind_int64(s, 2, (int64_t)i);
        sqlite3_bind_int(s, 3, (int)n->depth);
        sqlite3_bind_text(s, 4, node_type_name(n->type), -1, SQLITE_STATIC);
        bind_u64(s, 5, n->handle);
        if (n->type == NODE_KERNEL) {
            bind_opt(s, 6, g->host.kernel_name(g->host.ctx, n->function));
            bind_u64(s, 7, n->function);
            sqlite3_bind_int64(s, 8, ws_dim3_x(n->grid));
            sqlite3_bind_int64(s, 9, ws_dim3_y(n->grid));
            sqlite3_bind_int64(s, 10, ws_dim3_z(n->grid));
            sqlite3_bind_int64(s, 11, ws_dim3_x(n->block));
            sqlite3_bind_int64(s, 12, ws_dim3_y(n->block));
            sqlite3_bind_int64(s, 13, ws_dim3_z(n->block));
            bind_u64(s, 14, n->smem);
        } else if (n->type == NODE_MEM_ALLOC || n->type == NODE_MEM_FREE || n->type == NODE_MEMCPY ||
                   n->type == NODE_MEMSET) {
            bind_u64(s, 15, n->address);
            if (n->type != NODE_MEM_FREE)
                bind_u64(s, 16, n->bytes);
        }
        if (step(g, G_NODE) != 0)
            return -1;
    }
    return 0;
}

/* The instance at handle ends (destroyed, replaced by an update, or its handle seen again). */
static int exec_end(struct ws_graphs *g, uint64_t handle, uint64_t ns, uint8_t api, int seen)
{
    uint64_t i;
    if (!ws_u64map_get(&g->open_execs, handle, &i))
        return 0;
    struct exec *x = &g->execs[i];
    x->ended = seen;
    x->end_ns = ns;
    x->end_api = api;
    ws_u64map_del(&g->open_execs, handle);
    if (write_exec(g, x) != 0)
        return -1;
    free(x->nodes); /* an ended instance is launched no more */
    x->nodes = NULL;
    x->cap = 0;
    return 0;
}

static int on_exec(struct ws_graphs *g, size_t ti, const struct ws_rec *r)
{
    struct thread_part *t = &g->threads[ti];
    t->building = -1;
    if (r->status != 0)
        return 0; /* not instantiated, or not updated: the instance keeps its structure */
    uint64_t prev_index = 0;
    int update = (r->api == WS_API_cudaGraphExecUpdate || r->api == WS_API_cuGraphExecUpdate ||
                  r->api == WS_API_cuGraphExecUpdate_v2) &&
                 ws_u64map_get(&g->open_execs, r->u[0], &prev_index);
    if (GROW(g->execs, g->nexecs, g->execs_cap) != 0)
        return oom(g);
    struct exec *x = &g->execs[g->nexecs];
    memset(x, 0, sizeof *x);
    x->id = (int64_t)g->nexecs + 1;
    x->handle = r->u[0];
    x->graph = r->u[1];
    x->flags = r->u[2];
    x->api = r->api;
    x->ns = r->ns;
    x->walk_status = -1; /* until GRAPH_END */
    where(g, ti, &x->thread_id, &x->range_id, &x->run_id);
    uint64_t c;
    if (x->graph && ws_u64map_get(&g->graph_capture, x->graph, &c))
        x->capture = g->caps[c].id;
    if (update) {
        const struct exec *old = &g->execs[prev_index];
        x->previous = old->id;
        x->flags = old->flags; /* an update keeps the instance's flags */
        if (!x->capture)
            x->capture = old->capture;
        if (old->n && !(x->carry = malloc(old->n * sizeof *x->carry)))
            return oom(g);
        if (old->n)
            memcpy(x->carry, old->nodes, old->n * sizeof *x->carry);
        x->ncarry = old->n;
    }
    g->nexecs++;
    if (update && exec_end(g, r->u[0], r->ns, r->api, 1) != 0)
        return -1;
    else if (!update && exec_end(g, r->u[0], 0, 0, 0) != 0) /* the handle again: the old one ended unseen */
        return -1;
    t->building = (int64_t)g->nexecs - 1;
    return ws_u64map_put(&g->open_execs, x->handle, (uint64_t)t->building) == 0 ? 0 : oom(g);
}

static int on_node(struct ws_graphs *g, size_t ti, const struct ws_rec *r)
{
    struct thread_part *t = &g->threads[ti];
    if (t->building < 0)
        return 0; /* its GRAPH_EXEC was lost */
    struct exec *x = &g->execs[t->building];
    if (GROW(x->nodes, x->n, x->cap) != 0)
        return oom(g);
    struct gnode *n = &x->nodes[x->n++];
    memset(n, 0, sizeof *n);
    n->type = (uint32_t)r->status & 0xffffu;
    n->depth = ((uint32_t)r->status >> 16) & 0x7fffu;
    n->handle = r->u[0];
    n->enabled = 1;
    switch (n->type) {
    case NODE_KERNEL:
        n->function = r->u[1];
        n->grid = r->u[2];
        n->block = r->u[3];
        n->smem = r->u[4];
        break;
    case NODE_MEMCPY:
    case NODE_MEMSET:
    case NODE_MEM_ALLOC:
        n->address = r->u[1];
        n->bytes = r->u[2];
        break;
    case NODE_MEM_FREE: n->address = r->u[1]; break;
    default: break;
    }
    return 0;
}

static void carry_over(struct exec *x, const struct gnode *old, size_t nold);

static int on_exec_end(struct ws_graphs *g, size_t ti, const struct ws_rec *r)
{
    struct thread_part *t = &g->threads[ti];
    if (t->building < 0)
        return 0;
    struct exec *x = &g->execs[t->building];
    t->building = -1;
    x->walk_status = r->status;
    x->recorded = r->u[1];
    x->complete = r->status == 0 && r->u[1] == x->n;
    if (x->carry) {
        carry_over(x, x->carry, x->ncarry);
        free(x->carry);
        x->carry = NULL;
    }
    return write_nodes(g, x);
}

/* The update's nodes answer to the handles the instance had before (the program keeps using the
 * nodes of the graph it instantiated), and its allocation nodes keep the allocations they made. */
static void carry_over(struct exec *x, const struct gnode *old, size_t nold)
{
    for (size_t i = 0; i < x->n && i < nold; i++) {
        if (x->nodes[i].type != old[i].type)
            continue;
        x->nodes[i].alias = old[i].alias ? old[i].alias : old[i].handle;
        x->nodes[i].allocation = old[i].allocation;
        x->nodes[i].enabled = old[i].enabled;
    }
}

static struct gnode *node_of(struct exec *x, uint64_t handle)
{
    for (size_t i = 0; i < x->n; i++)
        if (x->nodes[i].handle == handle || x->nodes[i].alias == handle)
            return &x->nodes[i];
    return NULL;
}

static int on_node_set(struct ws_graphs *g, const struct ws_rec *r)
{
    uint64_t i;
    if (r->status != 0 || !ws_u64map_get(&g->open_execs, r->u[0], &i))
        return 0;
    struct gnode *n = node_of(&g->execs[i], r->u[1]);
    if (!n)
        return 0;
    if (r->api == WS_API_cudaGraphNodeSetEnabled || r->api == WS_API_cuGraphNodeSetEnabled) {
        n->enabled = r->u[2] != 0;
    } else if (n->type == NODE_KERNEL) {
        n->function = r->u[2];
        n->grid = r->u[3];
        n->block = r->u[4];
        n->smem = r->u[5];
    }
    return 0;
}

/* ---- launches ---- */

static int write_work(struct ws_graphs *g, int64_t launch, size_t position, int64_t kernel, int64_t allocation)
{
    sqlite3_stmt *s = g->st[G_WORK];
    sqlite3_bind_int64(s, 1, launch);
    sqlite3_bind_int64(s, 2, (int64_t)position);
    bind_opt(s, 3, kernel);
    bind_opt(s, 4, allocation);
    return step(g, G_WORK);
}

static int64_t pool_of(struct ws_graphs *g, size_t ti, uint64_t handle, int32_t device, const char *kind, uint64_t ns);

struct replay {
    struct ws_graphs *g;
    size_t ti;
    const struct ws_rec *launch;
    uint64_t ns, step;
    int64_t kernels, allocations, frees;
};

static int replay(struct replay *p, uint8_t type, uint64_t u0, uint64_t u1, uint64_t u2, uint64_t u4, uint64_t u5,
                  int64_t *row)
{
    struct ws_rec r;
    memset(&r, 0, sizeof r);
    r.type = type;
    r.api = p->launch->api; /* cudaGraphLaunch, cuGraphLaunch, or their _ptsz forms */
    p->ns += p->step;
    r.ns = p->ns;
    r.u[0] = u0;
    r.u[1] = u1;
    r.u[2] = u2;
    r.u[3] = p->launch->u[3]; /* the launch's stream */
    r.u[4] = u4;
    r.u[5] = u5;
    *row = 0;
    return p->g->host.replay(p->g->host.ctx, p->ti, &r, row);
}

/* Run the instance's nodes as the launching thread's records, between the records stamped before
 * and after the call: n events at before + k * (after - before) / (n + 1), at least 1 ns apart. */
static int expand(struct ws_graphs *g, size_t ti, const struct ws_rec *r, struct exec *x, int64_t launch_id,
                  uint64_t before)
{
    uint64_t device = r->u[5] & 0xffffffffu, events = 0;
    for (size_t i = 0; i < x->n; i++)
        events += x->nodes[i].enabled && (x->nodes[i].type == NODE_KERNEL || x->nodes[i].type == NODE_MEM_ALLOC ||
                                          x->nodes[i].type == NODE_MEM_FREE);
    int autofree = (x->flags & 1) != 0; /* cudaGraphInstantiateFlagAutoFreeOnLaunch */
    if (autofree)
        for (size_t i = 0; i < x->n; i++)
            events += x->nodes[i].type == NODE_MEM_ALLOC && x->nodes[i].allocation;
    struct replay p = {g, ti, r, before, 1, 0, 0, 0};
    if (r->ns > before && (r->ns - before) / (events + 1) > 1)
        p.step = (r->ns - before) / (events + 1);
    int64_t row, graph_allocator = 0;
    /* what the previous launch allocated and nobody freed goes first (it is still live only then) */
    for (size_t i = 0; autofree && i < x->n; i++) {
        struct gnode *n = &x->nodes[i];
        if (n->type != NODE_MEM_ALLOC || !n->allocation)
            continue;
        if (g->host.live_allocation(g->host.ctx, n->address) == n->allocation &&
            replay(&p, WS_REC_FREE, n->address, 0, 0, device, 0, &row) != 0)
            return -1;
        n->allocation = 0;
    }
    for (size_t i = 0; i < x->n; i++) {
        struct gnode *n = &x->nodes[i];
        if (!n->enabled)
            continue;
        switch (n->type) {
        case NODE_KERNEL:
            if (replay(&p, WS_REC_LAUNCH, n->function, n->grid, n->block, n->smem, device, &row) != 0 ||
                write_work(g, launch_id, i, row, 0) != 0)
                return -1;
            p.kernels++;
            break;
        case NODE_MEM_ALLOC:
            if (replay(&p, WS_REC_ALLOC, n->address, n->bytes, n->bytes, device | (uint64_t)WS_MEM_DEVICE << 32, 0,
                       &row) != 0 ||
                write_work(g, launch_id, i, 0, row) != 0)
                return -1;
            n->allocation = row;
            p.allocations++;
            if (!graph_allocator && (graph_allocator = pool_of(g, ti, 0, (int32_t)device, "graph", r->ns)) < 0)
                return -1;
            sqlite3_bind_int64(g->st[G_POOL_ALLOC], 1, row);
            sqlite3_bind_int64(g->st[G_POOL_ALLOC], 2, graph_allocator);
            if (step(g, G_POOL_ALLOC) != 0)
                return -1;
            g->pools[graph_allocator - 1].allocations++;
            break;
        case NODE_MEM_FREE: {
            int64_t freed = g->host.live_allocation(g->host.ctx, n->address);
            if (replay(&p, WS_REC_FREE, n->address, 0, 0, device, 0, &row) != 0 ||
                write_work(g, launch_id, i, 0, freed) != 0)
                return -1;
            p.frees++;
            break;
        }
        default: break;
        }
    }
    sqlite3_stmt *s = g->st[G_LAUNCH];
    sqlite3_bind_int64(s, 10, p.kernels);
    sqlite3_bind_int64(s, 11, p.allocations);
    sqlite3_bind_int64(s, 12, p.frees);
    return 0;
}

int ws_graphs_launched(struct ws_graphs *g, size_t ti, const struct ws_rec *r, int64_t launch)
{
    struct thread_part *t = &g->threads[ti];
    uint64_t before = r->ns, i;
    if (t->begun && t->begin_exec == r->u[0] && t->begin_ns <= r->ns)
        before = t->begin_ns;
    t->begun = 0;
    struct exec *x = ws_u64map_get(&g->open_execs, r->u[0], &i) ? &g->execs[i] : NULL;
    int64_t id = ++g->next_graph_launch;
    sqlite3_stmt *s = g->st[G_LAUNCH];
    sqlite3_bind_int64(s, 10, 0);
    sqlite3_bind_int64(s, 11, 0);
    sqlite3_bind_int64(s, 12, 0);
    if (r->status == 0 && x) {
        x->launches++;
        if (expand(g, ti, r, x, id, before) != 0)
            return -1;
    }
    int64_t thread_id, range_id, run_id;
    where(g, ti, &thread_id, &range_id, &run_id);
    sqlite3_bind_int64(s, 1, id);
    bind_opt(s, 2, x ? x->id : 0);
    bind_opt(s, 3, launch);
    bind_opt(s, 4, (int64_t)r->u[3]);
    sqlite3_bind_int(s, 5, r->status);
    sqlite3_bind_int64(s, 6, thread_id);
    bind_opt(s, 7, range_id);
    bind_opt(s, 8, run_id);
    bind_u64(s, 9, r->ns);
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc == SQLITE_DONE ? 0 : fail(g, "cannot write the trace");
}

/* ---- pools ---- */

static int64_t pool_of(struct ws_graphs *g, size_t ti, uint64_t handle, int32_t device, const char *kind, uint64_t ns)
{
    uint64_t key = handle ? handle : (uint64_t)(uint32_t)device | (uint64_t)1 << 63, i;
    if (ws_u64map_get(&g->pool_index, key, &i))
        return g->pools[i].id;
    if (GROW(g->pools, g->npools, g->pools_cap) != 0)
        return oom(g);
    struct pool *p = &g->pools[g->npools];
    memset(p, 0, sizeof *p);
    p->id = (int64_t)g->npools + 1;
    p->handle = handle;
    p->device = device;
    p->kind = kind;
    p->ns = ns;
    where(g, ti, &p->thread_id, &p->range_id, NULL);
    if (ws_u64map_put(&g->pool_index, key, g->npools) != 0)
        return oom(g);
    g->npools++;
    return p->id;
}

static int write_pool(struct ws_graphs *g, const struct pool *p)
{
    sqlite3_stmt *s = g->st[G_POOL];
    sqlite3_bind_int64(s, 1, p->id);
    bind_u64(s, 2, p->handle);
    sqlite3_bind_text(s, 3, p->kind, -1, SQLITE_STATIC);
    if (p->device >= 0)
        sqlite3_bind_int(s, 4, p->device);
    if (p->max_bytes)
        bind_u64(s, 5, p->max_bytes);
    sqlite3_bind_int64(s, 6, p->thread_id);
    bind_opt(s, 7, p->range_id);
    bind_u64(s, 8, p->ns);
    if (p->destroyed)
        bind_u64(s, 9, p->destroy_ns);
    sqlite3_bind_int64(s, 10, p->allocations);
    return step(g, G_POOL);
}

static int on_pool(struct ws_graphs *g, size_t ti, const struct ws_rec *r)
{
    if (r->api == WS_API_cudaMemPoolCreate || r->api == WS_API_cuMemPoolCreate) {
        if (r->status != 0 || !r->u[0])
            return 0;
        uint64_t old;
        if (ws_u64map_get(&g->pool_index, r->u[0], &old)) /* the handle again: a new pool */
            ws_u64map_del(&g->pool_index, r->u[0]);
        int64_t id = pool_of(g, ti, r->u[0], (int32_t)r->u[1], "created", r->ns);
        if (id < 0)
            return -1;
        g->pools[id - 1].max_bytes = r->u[2];
        return 0;
    }
    int64_t id = r->u[0] ? pool_of(g, ti, r->u[0], -1, "other", r->ns) : 0;
    if (id < 0)
        return -1;
    if ((r->api == WS_API_cudaMemPoolDestroy || r->api == WS_API_cuMemPoolDestroy) && r->status == 0 && id) {
        g->pools[id - 1].destroyed = 1;
        g->pools[id - 1].destroy_ns = r->ns;
        ws_u64map_del(&g->pool_index, r->u[0]); /* a later pool may get the handle */
    }
    int64_t thread_id, range_id;
    where(g, ti, &thread_id, &range_id, NULL);
    sqlite3_stmt *s = g->st[G_POOL_OP];
    bind_opt(s, 1, id);
    sqlite3_bind_text(s, 2, ws_api_name(r->api), -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 3, r->status);
    switch (r->api) {
    case WS_API_cudaMemPoolTrimTo:
    case WS_API_cuMemPoolTrimTo: bind_u64(s, 5, r->u[1]); break;
    case WS_API_cudaMemPoolSetAttribute:
    case WS_API_cuMemPoolSetAttribute:
        sqlite3_bind_int64(s, 4, (int64_t)r->u[1]);
        bind_u64(s, 5, r->u[2]);
        break;
    case WS_API_cudaDeviceSetMemPool:
    case WS_API_cudaMemSetMemPool:
    case WS_API_cuDeviceSetMemPool: bind_u64(s, 5, r->u[1]); break; /* the device */
    default: break;
    }
    sqlite3_bind_int64(s, 6, thread_id);
    bind_opt(s, 7, range_id);
    bind_u64(s, 8, r->ns);
    return step(g, G_POOL_OP);
}

static int on_pool_state(struct ws_graphs *g, size_t ti, const struct ws_rec *r)
{
    int64_t id =
        r->u[0] ? pool_of(g, ti, r->u[0], -1, "other", r->ns) : pool_of(g, ti, 0, (int32_t)r->u[5], "graph", r->ns);
    if (id < 0)
        return -1;
    int64_t thread_id, range_id;
    where(g, ti, &thread_id, &range_id, NULL);
    sqlite3_stmt *s = g->st[G_SAMPLE];
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_text(s, 2, ws_api_name(r->api), -1, SQLITE_STATIC);
    for (int k = 1; k <= 4; k++)
        bind_u64(s, 2 + k, r->u[k]);
    if (r->u[0])
        bind_u64(s, 7, r->u[5]);
    sqlite3_bind_int64(s, 8, thread_id);
    bind_u64(s, 9, r->ns);
    return step(g, G_SAMPLE);
}

int ws_graphs_allocated(struct ws_graphs *g, size_t ti, const struct ws_rec *r, int64_t allocation)
{
    int device_pool = r->api == WS_API_cudaMallocAsync || r->api == WS_API_cudaMallocAsync_ptsz ||
                      r->api == WS_API_cuMemAllocAsync || r->api == WS_API_cuMemAllocAsync_ptsz;
    int other_pool = r->api == WS_API_cudaMallocFromPoolAsync || r->api == WS_API_cudaMallocFromPoolAsync_ptsz ||
                     r->api == WS_API_cuMemAllocFromPoolAsync || r->api == WS_API_cuMemAllocFromPoolAsync_ptsz;
    if (r->status != 0 || !r->u[0] || !r->u[5] || (!device_pool && !other_pool))
        return 0;
    /* a pool the trace did not see created: a device's default pool, or one made before tracing */
    int64_t id = pool_of(g, ti, r->u[5], (int32_t)(uint32_t)r->u[4], device_pool ? "device" : "other", r->ns);
    if (id < 0)
        return -1;
    g->pools[id - 1].allocations++;
    if (g->pools[id - 1].device < 0)
        g->pools[id - 1].device = (int32_t)(uint32_t)r->u[4];
    sqlite3_bind_int64(g->st[G_POOL_ALLOC], 1, allocation);
    sqlite3_bind_int64(g->st[G_POOL_ALLOC], 2, id);
    return step(g, G_POOL_ALLOC);
}

/* ---- arrays ---- */

static int on_array(struct ws_graphs *g, const struct ws_rec *r)
{
    static const char *const formats[] = {"signed", "unsigned", "float", "none"};
    int64_t allocation = g->host.live_allocation(g->host.ctx, r->u[0]);
    if (!allocation)
        return 0;
    sqlite3_stmt *s = g->st[G_ARRAY];
    int mipmapped = r->api == WS_API_cudaMallocMipmappedArray || r->api == WS_API_cuMipmappedArrayCreate;
    int three_d = r->api == WS_API_cudaMalloc3DArray || r->api == WS_API_cuArray3DCreate_v2;
    const char *kind = mipmapped ? "mipmapped-array" : three_d ? "3d-array" : "array";
    uint32_t format = (uint32_t)(r->u[5] >> 32);
    sqlite3_bind_int64(s, 1, allocation);
    sqlite3_bind_text(s, 2, kind, -1, SQLITE_STATIC);
    bind_u64(s, 3, r->u[1]);
    bind_u64(s, 4, r->u[2]);
    bind_u64(s, 5, r->u[3]);
    sqlite3_bind_int64(s, 6, (int64_t)(uint32_t)r->u[4]);
    sqlite3_bind_int64(s, 7, (int64_t)(r->u[4] >> 32));
    for (int k = 0; k < 4; k++)
        sqlite3_bind_int(s, 8 + k, (int)((r->u[5] >> (8 * k)) & 0xff));
    if (format < 4)
        sqlite3_bind_text(s, 12, formats[format], -1, SQLITE_STATIC);
    else
        sqlite3_bind_int64(s, 12, format); /* a cudaChannelFormatKind this version does not name */
    return step(g, G_ARRAY);
}

/* ---- dispatch ---- */

int ws_graphs_record(struct ws_graphs *g, size_t ti, const struct ws_rec *r)
{
    if (ti >= g->nthreads)
        return 0;
    switch (r->type) {
    case WS_REC_CAPTURE_BEGIN: return on_capture_begin(g, ti, r);
    case WS_REC_CAPTURE_END: return on_capture_end(g, r);
    case WS_REC_CAPTURED: return on_captured_mark(g, ti, r);
    case WS_REC_GRAPH_EXEC: return on_exec(g, ti, r);
    case WS_REC_GRAPH_NODE: return on_node(g, ti, r);
    case WS_REC_GRAPH_END: return on_exec_end(g, ti, r);
    case WS_REC_GRAPH_DESTROY: return r->status == 0 ? exec_end(g, r->u[0], r->ns, r->api, 1) : 0;
    case WS_REC_GRAPH_NODE_SET: return on_node_set(g, r);
    case WS_REC_GRAPH_LAUNCH_BEGIN:
        g->threads[ti].begun = 1;
        g->threads[ti].begin_ns = r->ns;
        g->threads[ti].begin_exec = r->u[0];
        return 0;
    case WS_REC_ARRAY: return on_array(g, r);
    case WS_REC_POOL: return on_pool(g, ti, r);
    case WS_REC_POOL_STATE: return on_pool_state(g, ti, r);
    default: return 0;
    }
}

int ws_graphs_finish(struct ws_graphs *g)
{
    for (size_t i = 0; i < g->ncaps; i++)
        if (write_capture(g, &g->caps[i]) != 0)
            return -1;
    for (size_t i = 0; i < g->nexecs; i++)
        if (write_exec(g, &g->execs[i]) != 0)
            return -1;
    for (size_t i = 0; i < g->npools; i++)
        if (write_pool(g, &g->pools[i]) != 0)
            return -1;
    return 0;
}
