/*
 * ws_gen_trace OUT.db EVENTS [SEED]: write a synthetic trace of about EVENTS records for the
 * analysis-speed benchmark.  It looks like a traced transformer: weights allocated once (in a
 * load range, outside every run), then runs (4 shape keys, one run marker each) of
 * model > layers.N > 6 nodes; every node launches kernels, uses workspace freed before it returns, and produces an
 * activation that one of the next nodes frees.  Level-1 and Level-2 declarations come with the first run of each shape
 * key. Records counted: a range push and its pop, an allocation and its free, a launch.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracedb.h"

enum { LAYERS = 24, OPS = 6, SHAPES = 4, PENDING = 8 };

static const char *const op_names[OPS] = {"attn/MatMul_qkv", "attn/Attention", "attn/MatMul_o",
                                          "mlp/MatMul_up",   "mlp/Gelu",       "mlp/MatMul_down"};

struct gen {
    sqlite3 *db;
    sqlite3_stmt *range, *alloc, *launch, *decl, *run, *string;
    int64_t ns, next_range, next_alloc, next_launch, next_run, events, address;
    uint64_t rng;
    struct open_range {
        int64_t id, name, parent, run, start;
        int depth;
    } stack[4];
    int depth;
    int64_t node_name[LAYERS][OPS], model_name, load_name, layer_name[LAYERS], kernel_name[OPS], shape_name[SHAPES];
};

struct pending { /* an activation waiting for the node that frees it */
    int64_t id, bytes, range_id, alloc_ns;
    int free_at; /* node ordinal in the run */
};

static uint32_t next_rand(struct gen *g)
{
    g->rng ^= g->rng << 13;
    g->rng ^= g->rng >> 7;
    g->rng ^= g->rng << 17;
    return (uint32_t)g->rng;
}

static void die(struct gen *g, const char *what)
{
    fprintf(stderr, "ws_gen_trace: %s: %s\n", what, sqlite3_errmsg(g->db));
    exit(1);
}

static void step(struct gen *g, sqlite3_stmt *st, const char *what)
{
    if (sqlite3_step(st) != SQLITE_DONE || sqlite3_reset(st) != SQLITE_OK)
        die(g, what);
    sqlite3_clear_bindings(st);
}

static int64_t add_string(struct gen *g, const char *value)
{
    static int64_t next = 1;
    sqlite3_bind_int64(g->string, 1, next);
    sqlite3_bind_text(g->string, 2, value, -1, SQLITE_TRANSIENT);
    step(g, g->string, "string");
    return next++;
}

static int64_t push_range(struct gen *g, int64_t name, int64_t parent, int depth, int64_t run)
{
    int64_t id = g->next_range++;
    g->stack[g->depth++] = (struct open_range){id, name, parent, run, g->ns, depth};
    g->ns += 50;
    g->events++;
    return id;
}

/* Ranges are written at pop, when their end is known. */
static void pop_range(struct gen *g)
{
    const struct open_range *r = &g->stack[--g->depth];
    sqlite3_bind_int64(g->range, 1, r->id);
    sqlite3_bind_int64(g->range, 2, r->name);
    if (r->parent > 0)
        sqlite3_bind_int64(g->range, 3, r->parent);
    sqlite3_bind_int(g->range, 4, r->depth);
    if (r->run > 0)
        sqlite3_bind_int64(g->range, 5, r->run);
    sqlite3_bind_int64(g->range, 6, r->start);
    sqlite3_bind_int64(g->range, 7, g->ns);
    g->ns += 50;
    g->events++;
    step(g, g->range, "range");
}

static void write_alloc(struct gen *g, int64_t id, int64_t bytes, int64_t range, int64_t run, int64_t alloc_ns,
                        int64_t free_ns, int64_t free_range)
{
    sqlite3_stmt *st = g->alloc;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, 0x700000000000 + id * 4096);
    sqlite3_bind_int64(st, 3, bytes);
    if (range > 0)
        sqlite3_bind_int64(st, 4, range);
    if (run > 0)
        sqlite3_bind_int64(st, 5, run);
    sqlite3_bind_int64(st, 6, alloc_ns);
    if (free_ns >= 0) {
        sqlite3_bind_int64(st, 7, free_ns);
        sqlite3_bind_int64(st, 8, free_range);
    }
    step(g, st, "allocation");
}

static void launch(struct gen *g, int op, int64_t range, int64_t run)
{
    sqlite3_stmt *st = g->launch;
    sqlite3_bind_int64(st, 1, g->next_launch++);
    sqlite3_bind_int64(st, 2, g->kernel_name[op]);
    sqlite3_bind_int64(st, 3, range);
    sqlite3_bind_int64(st, 4, run);
    sqlite3_bind_int64(st, 5, g->ns);
    g->ns += 200;
    g->events++;
    step(g, st, "launch");
}

static void declare(struct gen *g, int level, int64_t name, int slot, int64_t bytes)
{
    sqlite3_bind_int(g->decl, 1, level);
    sqlite3_bind_int64(g->decl, 2, name);
    sqlite3_bind_int(g->decl, 3, slot);
    sqlite3_bind_int64(g->decl, 4, bytes);
    sqlite3_bind_int64(g->decl, 5, g->ns);
    step(g, g->decl, "declaration");
}

/* One node occurrence: free the activations due here, launch, use workspace, produce output. */
static void node(struct gen *g, int layer, int op, int ordinal, int64_t parent, int64_t run, int shape, int first,
                 struct pending *pend, int *npend)
{
    int64_t r = push_range(g, g->node_name[layer][op], parent, 2, run);
    for (int i = 0; i < *npend;)
        if (pend[i].free_at <= ordinal) {
            write_alloc(g, pend[i].id, pend[i].bytes, pend[i].range_id, run, pend[i].alloc_ns, g->ns, r);
            g->ns += 20;
            g->events++;
            pend[i] = pend[--*npend];
        } else {
            i++;
        }
    int64_t scale = (int64_t)(shape + 1) * 256;
    int workspaces = op == 4 ? 0 : 1 + (op == 1);
    for (int s = 0; s < workspaces; s++) {
        int64_t bytes = scale * (1024 + 512 * op + 256 * s) + (next_rand(g) % 4) * 256;
        if (first) {
            declare(g, 1, g->node_name[layer][op], s, scale * (1024 + 512 * op + 256 * s) + 768);
            declare(g, 2, g->node_name[layer][op], s, bytes);
        }
        int64_t id = g->next_alloc++, at = g->ns;
        g->ns += 30;
        launch(g, op, r, run);
        write_alloc(g, id, bytes, r, run, at, g->ns, r);
        g->ns += 20;
        g->events += 2;
    }
    launch(g, op, r, run);
    if (*npend < PENDING) {
        pend[*npend] = (struct pending){g->next_alloc++, scale * 4096, r, g->ns, ordinal + 1 + (int)(next_rand(g) % 3)};
        ++*npend;
        g->ns += 30;
        g->events++;
    }
    pop_range(g);
}

static void one_run(struct gen *g, int shape, int first)
{
    struct pending pend[PENDING];
    int npend = 0, ordinal = 0;
    int64_t run = g->next_run++, start = g->ns;
    int64_t model = push_range(g, g->model_name, 0, 0, run);
    for (int layer = 0; layer < LAYERS; layer++) {
        int64_t lr = push_range(g, g->layer_name[layer], model, 1, run);
        for (int op = 0; op < OPS; op++)
            node(g, layer, op, ordinal++, lr, run, shape, first, pend, &npend);
        pop_range(g);
    }
    for (int i = 0; i < npend; i++) { /* the graph's outputs die with the run */
        write_alloc(g, pend[i].id, pend[i].bytes, pend[i].range_id, run, pend[i].alloc_ns, g->ns, model);
        g->events++;
    }
    pop_range(g);
    sqlite3_bind_int64(g->run, 1, run);
    sqlite3_bind_int64(g->run, 2, g->shape_name[shape]);
    sqlite3_bind_int64(g->run, 3, start);
    sqlite3_bind_int64(g->run, 4, g->ns);
    step(g, g->run, "run");
    g->ns += 1000;
}

static void prepare(struct gen *g)
{
    static const struct {
        sqlite3_stmt **st;
        const char *sql;
    } stmts[] = {
        {NULL, "INSERT INTO ranges(id, thread_id, name_id, kind, source, parent_id, depth, run_id, start_ns, end_ns)"
               " VALUES (?1, 1, ?2, 'push', 'nvtx', ?3, ?4, ?5, ?6, ?7)"},
        {NULL, "INSERT INTO allocations(id, api, memory, device, address, requested_bytes, bytes, status, thread_id,"
               " range_id, run_id, alloc_ns, free_ns, free_api, free_thread_id, free_range_id)"
               " VALUES (?1, 'cudaMalloc', 'device', 0, ?2, ?3, ?3, 0, 1, ?4, ?5, ?6, ?7,"
               " CASE WHEN ?7 IS NULL THEN NULL ELSE 'cudaFree' END, CASE WHEN ?7 IS NULL THEN NULL ELSE 1 END, ?8)"},
        {NULL, "INSERT INTO launches(id, api, kernel_name_id, grid_x, grid_y, grid_z, block_x, block_y, block_z,"
               " shared_bytes, stream, status, thread_id, range_id, run_id, ns)"
               " VALUES (?1, '__cudaLaunchKernel', ?2, 128, 1, 1, 256, 1, 1, 0, 0, 0, 1, ?3, ?4, ?5)"},
        {NULL, "INSERT INTO declarations(level, node_name_id, slot, bytes, alignment, thread_id, ns)"
               " VALUES (?1, ?2, ?3, ?4, 0, 1, ?5)"},
        {NULL, "INSERT INTO runs(id, thread_id, shape_key_id, start_ns, end_ns) VALUES (?1, 1, ?2, ?3, ?4)"},
        {NULL, "INSERT INTO strings(id, value) VALUES (?1, ?2)"},
    };
    sqlite3_stmt **targets[] = {&g->range, &g->alloc, &g->launch, &g->decl, &g->run, &g->string};
    for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++)
        if (sqlite3_prepare_v3(g->db, stmts[i].sql, -1, SQLITE_PREPARE_PERSISTENT, targets[i], NULL) != SQLITE_OK)
            die(g, "prepare");
}

static void names(struct gen *g)
{
    char name[128];
    g->model_name = add_string(g, "/model");
    g->load_name = add_string(g, "/load");
    for (int l = 0; l < LAYERS; l++) {
        snprintf(name, sizeof name, "/model/layers.%d", l);
        g->layer_name[l] = add_string(g, name);
        for (int op = 0; op < OPS; op++) {
            snprintf(name, sizeof name, "/model/layers.%d/%s", l, op_names[op]);
            g->node_name[l][op] = add_string(g, name);
        }
    }
    for (int op = 0; op < OPS; op++) {
        snprintf(name, sizeof name, "kernel_%d", op);
        g->kernel_name[op] = add_string(g, name);
    }
    for (int s = 0; s < SHAPES; s++) {
        snprintf(name, sizeof name, "seq=%d", 128 << s);
        g->shape_name[s] = add_string(g, name);
    }
}

int main(int argc, char **argv)
{
    struct gen g = {
        .ns = 1000000, .next_range = 1, .next_alloc = 1, .next_launch = 1, .next_run = 1, .rng = 88172645463325252ull};
    char err[512];
    if (argc < 3) {
        fprintf(stderr, "usage: ws_gen_trace OUT.db EVENTS [SEED]\n");
        return 2;
    }
    int64_t target = strtoll(argv[2], NULL, 10);
    if (argc > 3)
        g.rng ^= strtoull(argv[3], NULL, 10) * 0x9E3779B97F4A7C15ull;
    if (ws_tracedb_create(argv[1], &g.db, err, sizeof err) != 0) {
        fprintf(stderr, "ws_gen_trace: %s\n", err);
        return 1;
    }
    if (ws_tracedb_exec(g.db, "BEGIN; INSERT INTO threads(id, os_tid, first_ns) VALUES (1, 4242, 0)", err, sizeof err))
        die(&g, err);
    prepare(&g);
    names(&g);
    /* Weights: allocated in a load range before the first run, never freed (persistent). */
    int64_t load = push_range(&g, g.load_name, 0, 0, 0);
    for (int l = 0; l < LAYERS; l++)
        for (int op = 0; op < OPS; op++) {
            write_alloc(&g, g.next_alloc++, 1 << 20, load, 0, g.ns, -1, 0);
            g.ns += 100;
            g.events++;
        }
    pop_range(&g);
    for (int run = 0; g.events < target; run++)
        one_run(&g, run % SHAPES, run < SHAPES);
    if (ws_tracedb_meta_int(g.db, "lost_records", 0) != 0 || ws_tracedb_exec(g.db, "COMMIT", err, sizeof err) != 0)
        die(&g, "commit");
    sqlite3_stmt *all[] = {g.range, g.alloc, g.launch, g.decl, g.run, g.string};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sqlite3_finalize(all[i]);
    sqlite3_close(g.db);
    printf("%s: %" PRId64 " events, %" PRId64 " runs, %" PRId64 " ranges, %" PRId64 " allocations, %" PRId64
           " launches\n",
           argv[1], g.events, g.next_run - 1, g.next_range - 1, g.next_alloc - 1, g.next_launch - 1);
    return 0;
}
