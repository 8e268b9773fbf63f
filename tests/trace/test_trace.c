/*
 * End-to-end tests of the tracer: trace_prog (tests/trace/trace_prog.c) runs on the simulated
 * device under libwstrace.so, through LD_PRELOAD or `wstrace record`, and the traces it leaves are
 * checked with SQL.  Every expected number comes from what trace_prog does (or prints).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "argcheck.h"
#include "spool_format.h"
#include "trace_util.h"

TestSuite(trace, .fini = tu_cleanup);

#define ARGV(...) ((const char *const[]){TU_PROG, __VA_ARGS__, NULL})
#define ENV(...)  ((const char *const[]){__VA_ARGS__, NULL})

static void trace_path(char *out, size_t len) { tu_path(out, len, "t.db"); }

/* Run trace_prog under the tracer and assert that it exited with 0 and printed nothing on stderr. */
static void run_ok(struct tu_result *r, const char *trace, const char *const *env, const char *const *argv)
{
    tu_run_traced(r, trace, env, argv);
    cr_assert(r->exited && r->code == 0, "traced %s %s: exit %d signal %d\nstdout:\n%s\nstderr:\n%s", argv[0], argv[1],
              r->code, r->signal, r->out, r->err);
    cr_expect_str_empty(r->err, "stderr of the traced program: %s", r->err);
}

/* ---- every allocation and launch API ---------------------------------------------------------- */

Test(trace, every_allocation_and_launch_api)
{
    char trace[512];
    trace_path(trace, sizeof trace);
    struct tu_result r;
    run_ok(&r, trace, NULL, ARGV("apis"));
    long long stream = tu_kv(r.out, "stream"), pitch = tu_kv(r.out, "pitch");
    long long leak = tu_kv(r.out, "leak"), exec = tu_kv(r.out, "graph_exec");
    cr_assert_neq(stream, 0);
    cr_expect_eq(tu_kv(r.out, "counter"), 3 * 1 + 10 + 100, "the kernels ran under the tracer");
    sqlite3 *db = tu_open(trace);

    /* One row per allocation call, in call order. */
    static const struct {
        const char *api, *memory;
        long long requested, bytes; /* bytes -1: pitch * height */
        int on_stream;              /* allocated (and freed) on the created stream */
        const char *free_api;       /* NULL: never freed */
    } allocs[] = {
        {"cudaMalloc", "device", 1000, 1000, 0, "cudaFree"},
        {"cudaMallocAsync", "device", 2000, 2000, 1, "cudaFreeAsync"},
        {"cudaMallocFromPoolAsync", "device", 3000, 3000, 1, "cudaFreeAsync"},
        {"cudaMallocManaged", "managed", 4000, 4000, 0, "cudaFree"},
        {"cudaMallocPitch", "device", 100 * 7, -1, 0, "cudaFree"},
        {"cudaMallocHost", "host", 5000, 5000, 0, "cudaFreeHost"},
        {"cudaHostAlloc", "host", 6000, 6000, 0, "cudaFreeHost"},
        {"cudaMalloc", "device", 7000, 7000, 0, NULL},
        {"cudaMallocManaged", "managed", sizeof(int), sizeof(int), 0, "cudaFree"},
    };
    const int nallocs = (int)(sizeof allocs / sizeof allocs[0]);
    cr_assert_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), nallocs);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE free_ns IS NOT NULL"), nallocs - 1);
    for (int i = 0; i < nallocs; i++) {
        int64_t id = tu_int(db, "SELECT id FROM allocations ORDER BY id LIMIT 1 OFFSET %d", i);
        char *api = tu_text(db, "SELECT api FROM allocations WHERE id=%lld", (long long)id);
        char *memory = tu_text(db, "SELECT memory FROM allocations WHERE id=%lld", (long long)id);
        char *free_api = tu_text(db, "SELECT free_api FROM allocations WHERE id=%lld", (long long)id);
        long long bytes = allocs[i].bytes < 0 ? pitch * 7 : allocs[i].bytes;
        cr_expect_str_eq(api, allocs[i].api, "allocation %d", i);
        cr_expect_str_eq(memory, allocs[i].memory, "allocation %d (%s)", i, allocs[i].api);
        cr_expect_eq(tu_int(db, "SELECT requested_bytes FROM allocations WHERE id=%lld", (long long)id),
                     allocs[i].requested, "allocation %d (%s)", i, allocs[i].api);
        cr_expect_eq(tu_int(db, "SELECT bytes FROM allocations WHERE id=%lld", (long long)id), bytes,
                     "allocation %d (%s)", i, allocs[i].api);
        cr_expect_eq(tu_int(db, "SELECT status FROM allocations WHERE id=%lld", (long long)id), 0);
        cr_expect_eq(tu_int(db, "SELECT address IS NOT NULL FROM allocations WHERE id=%lld", (long long)id), 1);
        cr_expect_eq(tu_int(db, "SELECT stream FROM allocations WHERE id=%lld", (long long)id),
                     allocs[i].on_stream ? stream : TU_NULL, "stream of allocation %d (%s)", i, allocs[i].api);
        if (allocs[i].free_api) {
            cr_expect_str_eq(free_api ? free_api : "(null)", allocs[i].free_api, "allocation %d", i);
            cr_expect_eq(tu_int(db, "SELECT free_ns >= alloc_ns FROM allocations WHERE id=%lld", (long long)id), 1);
            cr_expect_eq(tu_int(db, "SELECT free_stream FROM allocations WHERE id=%lld", (long long)id),
                         allocs[i].on_stream ? stream : TU_NULL, "free stream of allocation %d", i);
        } else {
            cr_expect_null(free_api, "allocation %d was never freed", i);
            cr_expect_eq(tu_int(db, "SELECT address FROM allocations WHERE id=%lld", (long long)id), leak);
        }
        free(api);
        free(memory);
        free(free_api);
    }
    /* cudaFree(NULL) is no call to record; the free of an unknown address failed and is recorded. */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors"), 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors WHERE api='cudaFree' AND status=%lld AND address=16",
                        tu_kv(r.out, "bad_free")),
                 1);
    cr_expect_neq(tu_kv(r.out, "bad_free"), 0);

    /* Launches, in call order. */
    static const struct {
        const char *api, *kernel;
        long long grid[3], block[3], smem;
        int on_stream;
    } launches[] = {
        {"cudaLaunchKernel", "trace_kernel_scale", {2, 3, 4}, {32, 2, 1}, 128, 1},
        {"cudaLaunchKernel", "trace_kernel_scale", {2, 3, 4}, {32, 2, 1}, 128, 1},
        {"cudaLaunchKernel", "trace_kernel_scale", {2, 3, 4}, {32, 2, 1}, 128, 1},
        {"cudaLaunchKernelExC", "trace_kernel_shift", {5, 1, 1}, {64, 1, 1}, 256, 1},
        {"cudaLaunchCooperativeKernel", "trace_kernel_coop", {7, 1, 1}, {16, 16, 1}, 0, 0},
    };
    const int nlaunches = (int)(sizeof launches / sizeof launches[0]);
    cr_assert_eq(tu_int(db, "SELECT COUNT(*) FROM launches"), nlaunches + 1);
    for (int i = 0; i < nlaunches; i++) {
        int64_t id = tu_int(db, "SELECT id FROM launches ORDER BY id LIMIT 1 OFFSET %d", i);
        char *api = tu_text(db, "SELECT api FROM launches WHERE id=%lld", (long long)id);
        char *kernel = tu_text(db,
                               "SELECT s.value FROM launches l LEFT JOIN strings s ON s.id=l.kernel_name_id "
                               "WHERE l.id=%lld",
                               (long long)id);
        cr_expect_str_eq(api, launches[i].api, "launch %d", i);
        cr_expect_str_eq(kernel ? kernel : "(null)", launches[i].kernel, "launch %d", i);
        static const char *const cols[] = {"grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"};
        for (int c = 0; c < 6; c++)
            cr_expect_eq(tu_int(db, "SELECT %s FROM launches WHERE id=%lld", cols[c], (long long)id),
                         c < 3 ? launches[i].grid[c] : launches[i].block[c - 3], "launch %d %s", i, cols[c]);
        cr_expect_eq(tu_int(db, "SELECT shared_bytes FROM launches WHERE id=%lld", (long long)id), launches[i].smem,
                     "launch %d", i);
        cr_expect_eq(tu_int(db, "SELECT stream FROM launches WHERE id=%lld", (long long)id),
                     launches[i].on_stream ? stream : TU_NULL, "stream of launch %d", i);
        cr_expect_eq(tu_int(db, "SELECT status FROM launches WHERE id=%lld", (long long)id), 0);
        free(api);
        free(kernel);
    }
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM launches WHERE api='cudaGraphLaunch' AND function=%lld "
                        "AND stream=%lld AND status=0 AND id=(SELECT MAX(id) FROM launches)",
                        exec, stream),
                 1);
    sqlite3_close(db);
    tu_result_free(&r);
}

/* ---- NVTX ---------------------------------------------------------------------------------- */

/* Id of the one range with this name (asserts there is exactly one). */
static int64_t range_id(sqlite3 *db, const char *name)
{
    cr_assert_eq(tu_int(db, "SELECT COUNT(*) FROM ranges r JOIN strings s ON s.id=r.name_id WHERE s.value='%s'", name),
                 1, "ranges named %s", name);
    return tu_int(db, "SELECT r.id FROM ranges r JOIN strings s ON s.id=r.name_id WHERE s.value='%s'", name);
}

static int64_t alloc_range(sqlite3 *db, long long bytes)
{
    cr_assert_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE requested_bytes=%lld", bytes), 1,
                 "allocations of %lld bytes", bytes);
    return tu_int(db, "SELECT range_id FROM allocations WHERE requested_bytes=%lld", bytes);
}

static void check_nvtx_trace(const char *trace, const char *out)
{
    long long main_tid = tu_kv(out, "main_tid"), worker_tid = tu_kv(out, "worker_tid");
    sqlite3 *db = tu_open(trace);
    int64_t outer = range_id(db, "outer"), middle = range_id(db, "middle"), inner = range_id(db, "inner");
    int64_t regnode = range_id(db, "registered-node"), ex = range_id(db, "ex-range");
    int64_t wide = range_id(db, "wide-\xc3\xbc"), worker = range_id(db, "worker-range");
    int64_t cross = range_id(db, "cross-thread");
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM ranges"), 8);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM ranges WHERE end_ns IS NULL OR end_ns < start_ns"), 0);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM ranges WHERE source <> 'nvtx'"), 0);

    /* Nesting: parent and depth. */
    int64_t t_main = tu_int(db, "SELECT id FROM threads WHERE os_tid=%lld", main_tid);
    int64_t t_worker = tu_int(db, "SELECT id FROM threads WHERE os_tid=%lld", worker_tid);
    cr_expect_neq(t_main, t_worker);
    struct {
        int64_t id, parent;
        int depth;
        int64_t thread;
    } nest[] = {{outer, TU_NULL, 0, t_main},   {middle, outer, 1, t_main}, {inner, middle, 2, t_main},
                {regnode, TU_NULL, 0, t_main}, {ex, TU_NULL, 0, t_main},   {wide, ex, 1, t_main},
                {worker, TU_NULL, 0, t_worker}};
    for (size_t i = 0; i < sizeof nest / sizeof nest[0]; i++) {
        cr_expect_eq(tu_int(db, "SELECT parent_id FROM ranges WHERE id=%lld", (long long)nest[i].id), nest[i].parent,
                     "parent of range %zu", i);
        cr_expect_eq(tu_int(db, "SELECT depth FROM ranges WHERE id=%lld", (long long)nest[i].id), nest[i].depth,
                     "depth of range %zu", i);
        cr_expect_eq(tu_int(db, "SELECT thread_id FROM ranges WHERE id=%lld", (long long)nest[i].id), nest[i].thread,
                     "thread of range %zu", i);
        cr_expect_eq(tu_int(db, "SELECT kind='push' FROM ranges WHERE id=%lld", (long long)nest[i].id), 1,
                     "kind of range %zu", i);
    }
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM ranges WHERE kind='push'"), 7);

    /* Start/end range started on main, ended on the worker. */
    char *kind = tu_text(db, "SELECT kind FROM ranges WHERE id=%lld", (long long)cross);
    cr_expect_str_eq(kind, "startend");
    free(kind);
    cr_expect_eq(tu_int(db, "SELECT thread_id FROM ranges WHERE id=%lld", (long long)cross), t_main);
    cr_expect_eq(tu_int(db, "SELECT end_thread_id FROM ranges WHERE id=%lld", (long long)cross), t_worker);

    /* Attribution of allocations and frees. */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), 7);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE free_ns IS NULL"), 0);
    cr_expect_eq(alloc_range(db, sizeof(int)), TU_NULL, "allocation outside every range");
    cr_expect_eq(alloc_range(db, 100), outer);
    cr_expect_eq(alloc_range(db, 200), middle);
    cr_expect_eq(alloc_range(db, 300), inner);
    cr_expect_eq(alloc_range(db, 400), regnode);
    cr_expect_eq(alloc_range(db, 500), worker);
    cr_expect_eq(alloc_range(db, 600), wide);
    cr_expect_eq(tu_int(db, "SELECT free_range_id FROM allocations WHERE requested_bytes=300"), inner);
    cr_expect_eq(tu_int(db, "SELECT free_range_id FROM allocations WHERE requested_bytes=200"), outer);
    cr_expect_eq(tu_int(db, "SELECT free_range_id FROM allocations WHERE requested_bytes=100"), TU_NULL);
    cr_expect_eq(tu_int(db, "SELECT thread_id FROM allocations WHERE requested_bytes=500"), t_worker);
    cr_expect_eq(tu_int(db, "SELECT free_thread_id FROM allocations WHERE requested_bytes=500"), t_main);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM launches"), 1);
    cr_expect_eq(tu_int(db, "SELECT range_id FROM launches"), inner);

    /* Domains, registered strings, marks, thread names. */
    int64_t domain =
        tu_int(db, "SELECT d.id FROM domains d JOIN strings s ON s.id=d.name_id WHERE s.value='my-domain'");
    cr_expect_neq(domain, 0, "the default domain is 0; a created domain is another");
    cr_expect_eq(tu_int(db, "SELECT domain_id FROM ranges WHERE id=%lld", (long long)regnode), domain);
    cr_expect_eq(tu_int(db, "SELECT domain_id FROM ranges WHERE id=%lld", (long long)outer), 0);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM registered_strings"), 1);
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM registered_strings g JOIN strings s ON s.id=g.string_id "
                        "WHERE g.domain_id=%lld AND s.value='registered-node'",
                        (long long)domain),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM marks"), 2);
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM marks m JOIN strings s ON s.id=m.name_id WHERE "
                        "s.value='mark-inner' AND m.domain_id=0 AND m.range_id=%lld AND m.thread_id=%lld",
                        (long long)inner, (long long)t_main),
                 1);
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM marks m JOIN strings s ON s.id=m.name_id WHERE "
                        "s.value='registered-node' AND m.domain_id=%lld AND m.range_id=%lld",
                        (long long)domain, (long long)regnode),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM threads"), 2);
    char *main_name = tu_text(db, "SELECT s.value FROM threads t JOIN strings s ON s.id=t.name_id WHERE t.id=%lld",
                              (long long)t_main);
    char *worker_name = tu_text(db, "SELECT s.value FROM threads t JOIN strings s ON s.id=t.name_id WHERE t.id=%lld",
                                (long long)t_worker);
    cr_expect_str_eq(main_name ? main_name : "(null)", "main-thread");
    cr_expect_str_eq(worker_name ? worker_name : "(null)", "worker-thread");
    free(main_name);
    free(worker_name);
    sqlite3_close(db);
}

Test(trace, nvtx_ranges_domains_marks_and_threads)
{
    char trace[512];
    trace_path(trace, sizeof trace);
    struct tu_result r;
    run_ok(&r, trace, NULL, ARGV("nvtx"));
    check_nvtx_trace(trace, r.out);
    tu_result_free(&r);
}

/* ---- wstrace record ------------------------------------------------------------------------ */

/* Run `wstrace record -o trace -- trace_prog ARGS`; the sanitizer runtime, when there is one,
 * is preloaded and wstrace appends libwstrace.so after it. */
static void record(struct tu_result *r, const char *trace, const char *const *prog_argv)
{
    const char *argv[32] = {TU_WSTRACE, "record", "-o", trace, "--"};
    size_t n = 5;
    for (size_t i = 0; prog_argv[i]; i++)
        argv[n++] = prog_argv[i];
    argv[n] = NULL;
    const char *san = tu_sanitizer_preload();
    tu_run(r, san ? ENV(san) : NULL, argv);
}

Test(trace, record_sees_nvtx_ranges)
{
    char trace[512];
    trace_path(trace, sizeof trace);
    struct tu_result r;
    record(&r, trace, ARGV("nvtx"));
    cr_assert(r.exited && r.code == 0, "exit %d signal %d: %s", r.code, r.signal, r.err);
    check_nvtx_trace(trace, r.out);
    char spool[600];
    snprintf(spool, sizeof spool, "%s.spool", trace);
    cr_expect_not(tu_exists(spool), "the spool is removed after a clean exit");
    tu_result_free(&r);
}

Test(trace, record_keeps_exit_status)
{
    char trace[512];
    trace_path(trace, sizeof trace);
    struct tu_result r;
    record(&r, trace, ARGV("plain", "3"));
    cr_expect(r.exited && r.code == 3, "exit %d signal %d: %s", r.code, r.signal, r.err);
    sqlite3 *db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations a JOIN ranges r ON r.id=a.range_id JOIN strings s "
                            "ON s.id=r.name_id WHERE s.value='plain-node' AND a.bytes=4096 AND a.free_ns IS NOT NULL"),
                 1);
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='clean_exit'"), 1);
    sqlite3_close(db);
    tu_result_free(&r);
}

/* ---- explicit API: nodes on several threads, runs, declarations, metadata ------------------- */

static void check_explicit_trace(const char *trace)
{
    sqlite3 *db = tu_open(trace);
    char *model = tu_text(db, "SELECT value FROM meta WHERE key='model'");
    char *batch = tu_text(db, "SELECT value FROM meta WHERE key='batch'");
    cr_expect_str_eq(model ? model : "(null)", "tiny-llm-v2", "the last value wins");
    cr_expect_str_eq(batch ? batch : "(null)", "4");
    free(model);
    free(batch);

    /* Runs: three, two shape keys, in order. */
    cr_assert_eq(tu_int(db, "SELECT COUNT(*) FROM runs"), 3);
    cr_expect_eq(tu_int(db, "SELECT COUNT(DISTINCT shape_key_id) FROM runs"), 2);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM runs WHERE end_ns IS NULL OR end_ns < start_ns"), 0);
    static const char *const keys[] = {"batch=4,seq=128", "batch=4,seq=128", "batch=4,seq=256"};
    int64_t main_thread = tu_int(db, "SELECT thread_id FROM runs ORDER BY start_ns LIMIT 1");
    for (int k = 0; k < 3; k++) {
        int64_t run = tu_int(db, "SELECT id FROM runs ORDER BY start_ns LIMIT 1 OFFSET %d", k);
        char *key = tu_text(db, "SELECT s.value FROM runs r JOIN strings s ON s.id=r.shape_key_id WHERE r.id=%lld",
                            (long long)run);
        cr_expect_str_eq(key ? key : "(null)", keys[k], "shape key of run %d", k);
        free(key);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE run_id=%lld", (long long)run), 2, "run %d", k);
        /* The activation in /model/layer0 and the workspace in /model/matmul nested in it, both in this run. */
        cr_expect_eq(tu_int(db,
                            "SELECT COUNT(*) FROM allocations a JOIN ranges r ON r.id=a.range_id JOIN strings s ON "
                            "s.id=r.name_id WHERE a.run_id=%lld AND a.bytes=%d AND s.value='/model/layer0' AND "
                            "r.depth=0 AND r.run_id=%lld AND a.free_range_id IS NULL",
                            (long long)run, 1024 * (k + 1), (long long)run),
                     1, "activation of run %d", k);
        cr_expect_eq(tu_int(db,
                            "SELECT COUNT(*) FROM allocations a JOIN ranges r ON r.id=a.range_id JOIN strings s ON "
                            "s.id=r.name_id JOIN ranges p ON p.id=r.parent_id JOIN strings ps ON ps.id=p.name_id "
                            "WHERE a.run_id=%lld AND a.bytes=64 AND s.value='/model/matmul' AND r.depth=1 AND "
                            "ps.value='/model/layer0' AND p.run_id=%lld AND r.source='api'",
                            (long long)run, (long long)run),
                     1, "workspace of run %d", k);
    }

    /* Level 1 and Level 2 rows. */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM declarations"), 3);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM declarations d JOIN strings s ON s.id=d.node_name_id WHERE "
                            "d.level=1 AND s.value='/model/matmul' AND d.slot=0 AND d.bytes=1048576 AND "
                            "d.alignment=0 AND d.run_id IS NULL AND d.range_id IS NULL"),
                 1);
    int64_t first_run = tu_int(db, "SELECT id FROM runs ORDER BY start_ns LIMIT 1");
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM declarations d JOIN strings s ON s.id=d.node_name_id JOIN ranges r "
                        "ON r.id=d.range_id JOIN strings rs ON rs.id=r.name_id WHERE d.level=2 AND "
                        "s.value='/model/matmul' AND d.slot=0 AND d.bytes=786432 AND d.alignment=256 AND "
                        "d.run_id=%lld AND rs.value='/model/matmul'",
                        (long long)first_run),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM declarations d JOIN strings s ON s.id=d.node_name_id WHERE "
                            "d.level=2 AND s.value='/model/matmul' AND d.slot=1 AND d.bytes=4096 AND d.alignment=0"),
                 1);

    /* Nodes on four threads at once: each allocation in its own thread's node. */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), 3 * 2 + 4 * 4);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE bytes BETWEEN 1000 AND 1003 AND run_id IS NULL"),
                 12);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations a JOIN ranges r ON r.id=a.range_id JOIN strings s ON "
                            "s.id=r.name_id WHERE a.bytes BETWEEN 1000 AND 1003 AND s.value='/worker/'||(a.bytes-1000) "
                            "AND r.thread_id=a.thread_id AND r.depth=0 AND r.parent_id IS NULL AND r.source='api'"),
                 12);
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(DISTINCT thread_id) FROM allocations WHERE bytes BETWEEN 1000 AND 1003 AND "
                        "thread_id <> %lld",
                        (long long)main_thread),
                 4);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations a JOIN ranges r ON r.id=a.range_id JOIN strings s ON "
                            "s.id=r.name_id JOIN ranges p ON p.id=r.parent_id JOIN strings ps ON ps.id=p.name_id "
                            "WHERE a.bytes BETWEEN 10 AND 13 AND s.value='/worker/'||(a.bytes-10)||'/inner' AND "
                            "ps.value='/worker/'||(a.bytes-10) AND r.depth=1 AND r.thread_id=a.thread_id AND "
                            "p.thread_id=a.thread_id AND a.free_ns IS NOT NULL AND a.free_range_id IS NULL"),
                 4);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM ranges WHERE source='api'"), 3 * 2 + 4 * 2 + 1);
    /* The 5000-character node name: kept up to the documented limit, and counted. */
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM ranges r JOIN strings s ON s.id=r.name_id WHERE "
                        "s.value=printf('%%.%us', replace(hex(zeroblob(%u)), '00', 'nn'))",
                        WS_MAX_STRING, WS_MAX_STRING),
                 1);
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='truncated_strings'"), 1);
    sqlite3_close(db);
}

Test(trace, explicit_api_nodes_runs_declarations_metadata)
{
    char trace[512];
    trace_path(trace, sizeof trace);
    struct tu_result r;
    run_ok(&r, trace, NULL, ARGV("explicit"));
    cr_expect_eq(tu_kv(r.out, "active"), 1);
    check_explicit_trace(trace);
    tu_result_free(&r);
}

Test(trace, explicit_api_through_record)
{
    char trace[512];
    trace_path(trace, sizeof trace);
    struct tu_result r;
    record(&r, trace, ARGV("explicit"));
    cr_assert(r.exited && r.code == 0, "exit %d signal %d: %s", r.code, r.signal, r.err);
    check_explicit_trace(trace);
    tu_result_free(&r);
}

Test(trace, explicit_api_without_the_tracer)
{
    struct tu_result r;
    tu_run(&r, NULL, ARGV("explicit"));
    cr_expect(r.exited && r.code == 0, "exit %d signal %d: %s", r.code, r.signal, r.err);
    cr_expect_eq(tu_kv(r.out, "active"), 0);
    cr_expect_str_empty(r.err);
    tu_result_free(&r);
}

/* ---- failures: recorded, and the program sees exactly what it would see untraced ------------- */

static long long rc_of(const char *out, const char *label)
{
    const char *p = strstr(out, label);
    cr_assert_not_null(p, "no %s in:\n%s", label, out);
    p = strstr(p, "rc=");
    cr_assert_not_null(p);
    return strtoll(p + 3, NULL, 10);
}

Test(trace, failed_allocation_recorded_results_unchanged)
{
    char trace[512];
    trace_path(trace, sizeof trace);
    const char *const *env = ENV("WSSIM_CAPACITY=1M");
    struct tu_result plain, traced;
    tu_run(&plain, env, ARGV("errors"));
    cr_assert(plain.exited && plain.code == 0, "untraced: exit %d: %s", plain.code, plain.err);
    run_ok(&traced, trace, env, ARGV("errors"));
    /* Return codes, errno values and out-parameters as printed by the program. */
    cr_expect_str_eq(traced.out, plain.out);
    cr_expect_eq(rc_of(plain.out, "malloc_too_big"), 2, "cudaErrorMemoryAllocation from the simulated device");

    sqlite3 *db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), 4);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE status <> 0"), 3);
    static const struct {
        const char *label, *api;
        long long requested;
    } failed[] = {{"malloc_too_big", "cudaMalloc", 2 * 1024 * 1024},
                  {"malloc_async_too_big", "cudaMallocAsync", 3 * 1024 * 1024},
                  {"managed_bad_flags", "cudaMallocManaged", 100}};
    for (size_t i = 0; i < sizeof failed / sizeof failed[0]; i++) {
        long long rc = rc_of(plain.out, failed[i].label);
        cr_expect_neq(rc, 0);
        cr_expect_eq(tu_int(db,
                            "SELECT COUNT(*) FROM allocations WHERE api='%s' AND status=%lld AND "
                            "requested_bytes=%lld AND bytes=0 AND address IS NULL AND free_ns IS NULL",
                            failed[i].api, rc, failed[i].requested),
                     1, "%s", failed[i].label);
    }
    int64_t ok_address = tu_int(db, "SELECT address FROM allocations WHERE status=0");
    cr_expect_eq(tu_int(db, "SELECT requested_bytes FROM allocations WHERE status=0"), 512 * 1024);
    cr_expect_eq(tu_int(db, "SELECT free_ns IS NOT NULL FROM allocations WHERE status=0"), 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors"), 2);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors WHERE api='cudaFree' AND status=%lld AND address=32",
                        rc_of(plain.out, "free_unknown")),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors WHERE api='cudaFree' AND status=%lld AND address=%lld",
                        rc_of(plain.out, "free_twice"), (long long)ok_address),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM launches"), 1);
    cr_expect_eq(tu_int(db, "SELECT status FROM launches"), rc_of(plain.out, "launch_bad_grid"));
    cr_expect_neq(rc_of(plain.out, "launch_bad_grid"), 0);
    sqlite3_close(db);
    tu_result_free(&plain);
    tu_result_free(&traced);
}

/* ---- many threads, nothing lost ----------------------------------------------------------- */

Test(trace, eight_threads_100k_events_each_nothing_lost)
{
    enum { THREADS = 8, PAIRS = 50000 };
    char trace[512];
    trace_path(trace, sizeof trace);
    struct tu_result r;
    run_ok(&r, trace, NULL, ARGV("stress", "8", "50000"));
    cr_assert_eq(tu_kv(r.out, "alloc_calls"), THREADS * PAIRS);
    sqlite3 *db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='lost_records'"), 0);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), THREADS * PAIRS);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE free_ns IS NOT NULL AND free_thread_id=thread_id "
                            "AND status=0 AND free_api='cudaFree'"),
                 THREADS * PAIRS);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors"), 0);
    /* Each worker: its own thread, its own size, exactly PAIRS allocations. */
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM (SELECT thread_id, bytes FROM allocations GROUP BY thread_id, bytes "
                        "HAVING COUNT(*)=%d)",
                        PAIRS),
                 THREADS);
    cr_expect_eq(tu_int(db, "SELECT COUNT(DISTINCT thread_id) FROM allocations"), THREADS);
    cr_expect_eq(tu_int(db, "SELECT MIN(bytes) FROM allocations"), 256);
    cr_expect_eq(tu_int(db, "SELECT MAX(bytes) FROM allocations"), 256 + THREADS - 1);
    sqlite3_close(db);
    tu_result_free(&r);
}

/* A spool limited to two chunks: what is not kept is counted, record for record. */
Test(trace, spool_limit_counts_every_lost_record)
{
    enum { PAIRS = 20000 };
    char trace[512];
    trace_path(trace, sizeof trace);
    struct tu_result r;
    tu_run_traced(&r, trace, ENV("WSTRACE_SPOOL_MAX=512K"), ARGV("stress", "1", "20000"));
    cr_assert(r.exited && r.code == 0, "exit %d signal %d: %s", r.code, r.signal, r.err);
    cr_assert_eq(tu_kv(r.out, "alloc_calls"), PAIRS, "the program ran in full");
    sqlite3 *db = tu_open(trace);
    int64_t lost = tu_int(db, "SELECT value FROM meta WHERE key='lost_records'");
    /* One line at exit says how many and why. */
    cr_expect_eq(tu_lines(r.err), 1, "stderr: %s", r.err);
    cr_expect_eq(strtoll(r.err + strlen("wstrace: "), NULL, 10), lost, "stderr: %s", r.err);
    cr_expect_not_null(strstr(r.err, "WSTRACE_SPOOL_MAX"), "stderr: %s", r.err);
    int64_t allocs = tu_int(db, "SELECT COUNT(*) FROM allocations");
    int64_t frees = tu_int(db, "SELECT COUNT(*) FROM allocations WHERE free_ns IS NOT NULL") +
                    tu_int(db, "SELECT COUNT(*) FROM api_errors");
    cr_expect_gt(lost, 0);
    cr_expect_gt(allocs, 0, "the first chunk of the worker is kept");
    cr_expect_eq(allocs + frees + lost, 2 * PAIRS, "kept %lld + %lld, lost %lld", (long long)allocs, (long long)frees,
                 (long long)lost);
    sqlite3_close(db);
    tu_result_free(&r);
}

/* ---- processes: fork, exec, SIGKILL --------------------------------------------------------- */

/* Number of names in the test folder that start with prefix. */
static int count_files(const char *prefix)
{
    DIR *d = opendir(tu_dir());
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
            n++;
    closedir(d);
    return n;
}

Test(trace, forked_child_writes_its_own_trace)
{
    char trace[512], child_trace[600];
    trace_path(trace, sizeof trace);
    struct tu_result r;
    run_ok(&r, trace, NULL, ARGV("fork"));
    long long parent = tu_kv(r.out, "parent"), child = tu_kv(r.out, "child");
    snprintf(child_trace, sizeof child_trace, "%s.%lld", trace, child);
    cr_expect_eq(count_files("t.db"), 2, "exactly t.db and t.db.<child>, no spools left");

    sqlite3 *db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='pid'"), parent);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), 3);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE bytes=111"), 2);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE bytes=333 AND free_ns IS NOT NULL"), 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE bytes=111 AND free_ns IS NULL"), 1,
                 "the block freed by the child is not freed in the parent");
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE bytes=222"), 0);
    sqlite3_close(db);

    db = tu_open(child_trace);
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='pid'"), child);
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='ppid'"), parent);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), 3);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE bytes=222"), 3);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE free_ns IS NOT NULL"), 1);
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='clean_exit'"), 1);
    char *kernel = tu_text(db, "SELECT s.value FROM launches l JOIN strings s ON s.id = l.kernel_name_id");
    cr_expect_str_eq(kernel ? kernel : "(unnamed)", "trace_kernel_scale",
                     "a kernel named in the parent before the fork is named in the child's trace too");
    free(kernel);
    sqlite3_close(db);
    tu_result_free(&r);
}

Test(trace, exec_keeps_tracing_into_the_same_trace)
{
    char trace[512];
    trace_path(trace, sizeof trace);
    struct tu_result r;
    run_ok(&r, trace, NULL, ARGV("exec"));
    cr_assert_eq(tu_kv(r.out, "pid"), tu_kv(r.out, "second_pid"), "exec keeps the process");
    cr_expect_eq(count_files("t.db"), 1, "one trace, no other file");
    sqlite3 *db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='images'"), 2);
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='pid'"), tu_kv(r.out, "pid"));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), 3);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations a JOIN ranges r ON r.id=a.range_id JOIN strings s ON "
                            "s.id=r.name_id WHERE a.bytes=1111 AND s.value='first-image' AND a.free_ns IS NULL"),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations a JOIN ranges r ON r.id=a.range_id JOIN strings s ON "
                            "s.id=r.name_id WHERE a.bytes=2222 AND s.value='second-image' AND a.free_ns IS NULL"),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE bytes=3333 AND free_ns IS NOT NULL"), 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM ranges"), 2);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM threads"), 1, "exec keeps the thread: one thread in both images");
    cr_expect_eq(tu_int(db, "SELECT COUNT(DISTINCT thread_id) FROM ranges"), 1);
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='clean_exit'"), 1);
    sqlite3_close(db);
    tu_result_free(&r);
}

Test(trace, forked_and_execd_child_traces_into_its_own_file)
{
    char trace[512], child_trace[600];
    trace_path(trace, sizeof trace);
    struct tu_result r;
    run_ok(&r, trace, NULL, ARGV("spawn"));
    snprintf(child_trace, sizeof child_trace, "%s.%lld", trace, tu_kv(r.out, "child"));
    cr_expect_eq(count_files("t.db"), 2, "exactly t.db and t.db.<child>, no spools left");
    sqlite3 *db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE bytes=1111 AND free_ns IS NOT NULL"), 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM ranges"), 0);
    sqlite3_close(db);
    db = tu_open(child_trace);
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='pid'"), tu_kv(r.out, "child"));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), 2);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations a JOIN ranges r ON r.id=a.range_id JOIN strings s ON "
                            "s.id=r.name_id WHERE a.bytes=2222 AND s.value='second-image'"),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE bytes=3333 AND free_ns IS NOT NULL"), 1);
    sqlite3_close(db);
    tu_result_free(&r);
}

enum { KILL_AFTER = 37 };

static void check_killed_trace(const char *trace)
{
    sqlite3 *db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), KILL_AFTER);
    /* Sizes 100, 101, ... 100 + KILL_AFTER - 1. */
    cr_expect_eq(tu_int(db, "SELECT SUM(bytes) FROM allocations"),
                 100 * KILL_AFTER + KILL_AFTER * (KILL_AFTER - 1) / 2);
    cr_expect_eq(tu_int(db, "SELECT COUNT(DISTINCT bytes) FROM allocations"), KILL_AFTER);
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='clean_exit'"), 0);
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='lost_records'"), 0);
    sqlite3_close(db);
}

/* Run `kill 37` under the preload: the spool is all that is left. */
static void run_killed(const char *trace)
{
    struct tu_result r;
    tu_run_traced(&r, trace, NULL, ARGV("kill", "37"));
    cr_assert(!r.exited && r.signal == SIGKILL, "exit %d signal %d: %s", r.code, r.signal, r.err);
    cr_assert_eq(tu_kv(r.out, "allocated"), KILL_AFTER);
    cr_assert_not(tu_exists(trace), "a killed process converts nothing");
    tu_result_free(&r);
}

/* Under plain LD_PRELOAD a killed program leaves its spool; collect turns it into the trace of
 * every allocation the program said it made, then removes the spool as a normal exit does. */
Test(trace, sigkill_recovered_by_collect)
{
    char trace[512], spool[600];
    trace_path(trace, sizeof trace);
    snprintf(spool, sizeof spool, "%s.spool", trace);
    run_killed(trace);
    cr_assert(tu_exists(spool));
    struct tu_result r;
    tu_run(&r, NULL, ((const char *const[]){TU_WSTRACE, "collect", spool, NULL}));
    cr_assert(r.exited && r.code == 0, "collect: exit %d: %s", r.code, r.err);
    cr_expect_str_empty(r.err);
    check_killed_trace(trace);
    cr_expect_not(tu_exists(spool), "a spool converted in full is removed");
    tu_result_free(&r);
}

/* collect --help says what becomes of a spool: removed once converted, kept otherwise. */
Test(trace, collect_help_says_what_becomes_of_the_spool)
{
    struct tu_result r;
    tu_run(&r, NULL, ((const char *const[]){TU_WSTRACE, "collect", "--help", NULL}));
    cr_assert(r.exited && r.code == 0, "exit %d: %s", r.code, r.err);
    cr_expect_not_null(strstr(r.out, "--keep-spool"), "%s", r.out);
    cr_expect_not_null(strstr(r.out, "is then removed"), "%s", r.out);
    cr_expect_not_null(strstr(r.out, "cannot be converted is kept"), "%s", r.out);
    tu_result_free(&r);
}

/* A spool that cannot be converted (its trace cannot be written) is kept, with one error line and
 * exit status 2, and still recovers in full later; --keep-spool keeps it after a conversion. */
Test(trace, sigkill_spool_kept_when_collect_fails)
{
    char trace[512], spool[600], bad[600];
    trace_path(trace, sizeof trace);
    snprintf(spool, sizeof spool, "%s.spool", trace);
    tu_path(bad, sizeof bad, "missing-folder/t.db");
    run_killed(trace);
    cr_assert(tu_exists(spool));
    struct stat before, after;
    cr_assert_eq(stat(spool, &before), 0);
    struct tu_result r;
    tu_run(&r, NULL, ((const char *const[]){TU_WSTRACE, "collect", "-o", bad, spool, NULL}));
    cr_expect(r.exited && r.code == 2, "collect to an unwritable path: exit %d signal %d", r.code, r.signal);
    cr_expect_eq(tu_lines(r.err), 1, "stderr: %s", r.err);
    cr_expect_not_null(strstr(r.err, "the spool is kept"), "stderr: %s", r.err);
    cr_expect_not(tu_exists(bad));
    tu_result_free(&r);
    cr_assert(tu_exists(spool), "a spool that could not be converted is kept");
    cr_assert_eq(stat(spool, &after), 0);
    cr_expect_eq(after.st_size, before.st_size, "the kept spool is untouched");

    tu_run(&r, NULL, ((const char *const[]){TU_WSTRACE, "collect", "--keep-spool", spool, NULL}));
    cr_assert(r.exited && r.code == 0, "collect --keep-spool: exit %d: %s", r.code, r.err);
    tu_result_free(&r);
    check_killed_trace(trace);
    cr_expect(tu_exists(spool), "--keep-spool keeps the spool");

    cr_assert_eq(unlink(trace), 0);
    tu_run(&r, NULL, ((const char *const[]){TU_WSTRACE, "collect", spool, NULL}));
    cr_assert(r.exited && r.code == 0, "collect: exit %d: %s", r.code, r.err);
    tu_result_free(&r);
    check_killed_trace(trace);
    cr_expect_not(tu_exists(spool));
}

Test(trace, sigkill_recovered_by_record)
{
    char trace[512], spool[600];
    trace_path(trace, sizeof trace);
    snprintf(spool, sizeof spool, "%s.spool", trace);
    struct tu_result r;
    record(&r, trace, ARGV("kill", "37"));
    cr_expect(r.exited && r.code == 128 + SIGKILL, "exit %d signal %d: %s", r.code, r.signal, r.err);
    cr_assert_eq(tu_kv(r.out, "allocated"), KILL_AFTER);
    check_killed_trace(trace);
    cr_expect_not(tu_exists(spool));
    tu_result_free(&r);
}

/* A second process tracing into the same output must not overwrite the spool of a killed one:
 * it is moved aside to TRACE.<pid>.spool (one line says so) and still recovers completely. */
Test(trace, unconverted_spool_of_a_dead_process_is_kept_aside)
{
    char trace[512], spool[600], aside[700];
    trace_path(trace, sizeof trace);
    snprintf(spool, sizeof spool, "%s.spool", trace);
    run_killed(trace);
    struct tu_result r;
    tu_run_traced(&r, trace, NULL, ARGV("plain", "0"));
    cr_assert(r.exited && r.code == 0, "exit %d: %s", r.code, r.err);
    cr_expect_eq(tu_lines(r.err), 1, "one line about the kept spool: '%s'", r.err);
    /* The line names the file; the killed program's pid is in it. */
    const char *at = strstr(r.err, trace);
    cr_assert_not_null(at, "'%s'", r.err);
    long pid = strtol(at + strlen(trace) + 1, NULL, 10);
    cr_assert_gt(pid, 0);
    snprintf(aside, sizeof aside, "%s.%ld.spool", trace, pid);
    cr_assert(tu_exists(aside), "%s", aside);
    cr_expect(tu_exists(trace), "the new process wrote its own trace");
    tu_result_free(&r);
    char recovered[600];
    snprintf(recovered, sizeof recovered, "%s.%ld", trace, pid);
    tu_run(&r, NULL, ((const char *const[]){TU_WSTRACE, "collect", aside, NULL}));
    cr_assert(r.exited && r.code == 0, "collect: exit %d: %s", r.code, r.err);
    check_killed_trace(recovered);
    tu_result_free(&r);
}

/* record keeps an earlier trace until the new one replaces it, and says so when none comes. */
Test(trace, record_never_deletes_an_earlier_trace)
{
    char trace[512];
    trace_path(trace, sizeof trace);
    struct tu_result r;
    record(&r, trace, ARGV("plain", "0"));
    cr_assert(r.exited && r.code == 0, "exit %d: %s", r.code, r.err);
    tu_result_free(&r);
    sqlite3 *db = tu_open(trace);
    int64_t first_pid = tu_int(db, "SELECT value FROM meta WHERE key='pid'");
    sqlite3_close(db);
    /* A run that cannot trace (bad configuration) leaves the earlier trace in place. */
    const char *san = tu_sanitizer_preload();
    const char *env[] = {"WSTRACE_SPOOL_MAX=banana", san, NULL};
    const char *argv[] = {TU_WSTRACE, "record", "-o", trace, "--", TU_PROG, "plain", "0", NULL};
    tu_run(&r, env, argv);
    cr_expect(r.exited && r.code == 0, "exit %d: %s", r.code, r.err);
    cr_expect_not_null(strstr(r.err, "still holds an earlier trace"), "'%s'", r.err);
    db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='pid'"), first_pid);
    sqlite3_close(db);
    tu_result_free(&r);
}

/* ---- configuration and unwritable output ---------------------------------------------------- */

/* The traced run must look exactly like the untraced one, plus n_err_lines on stderr. */
static void expect_untouched(const char *const *env, int n_err_lines)
{
    struct tu_result plain, traced;
    tu_run(&plain, NULL, ARGV("plain", "3"));
    cr_assert(plain.exited && plain.code == 3, "untraced: exit %d: %s", plain.code, plain.err);
    cr_assert_str_empty(plain.err);
    const char *all[8] = {0};
    size_t n = 0;
    all[n++] = tu_tracer_preload();
    for (size_t i = 0; env[i]; i++)
        all[n++] = env[i];
    tu_run(&traced, all, ARGV("plain", "3"));
    cr_expect(traced.exited && traced.code == 3, "traced: exit %d signal %d", traced.code, traced.signal);
    cr_expect_str_eq(traced.out, plain.out);
    cr_expect_eq(tu_lines(traced.err), n_err_lines, "stderr:\n%s", traced.err);
    if (n_err_lines)
        cr_expect_eq(strncmp(traced.err, "wstrace: ", 9), 0, "stderr:\n%s", traced.err);
    tu_result_free(&plain);
    tu_result_free(&traced);
}

Test(trace, unwritable_output_leaves_the_program_untouched)
{
    expect_untouched(ENV("WSTRACE_OUTPUT=/nonexistent/dir/t.db"), 1);
}

Test(trace, bad_configuration_one_line_and_untraced)
{
    char trace[512], env[600];
    trace_path(trace, sizeof trace);
    snprintf(env, sizeof env, "WSTRACE_OUTPUT=%s", trace);
    expect_untouched(ENV(env, "WSTRACE_SPOOL_MAX=banana"), 1);
    expect_untouched(ENV(env, "WSTRACE_COLLECT=maybe"), 1);
    expect_untouched(ENV(env, "WSTRACE_CLOCK=sundial"), 1);
    cr_expect_eq(count_files("t.db"), 0, "nothing written");
    expect_untouched(ENV(env, "WSTRACE_DISABLE=1"), 0);
    cr_expect_eq(count_files("t.db"), 0, "nothing written");
}

/* The kernel's clock source names the time-stamp counter. */
static int clocksource_is_tsc(void)
{
    char line[64] = "";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (!f)
        return 0;
    int got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    return got && strcmp(line, "tsc\n") == 0;
}

/*
 * Both clocks give the same trace, in CLOCK_MONOTONIC nanoseconds: every allocation and free lies
 * between the process's start and end (meta, read with clock_gettime) and no free precedes its
 * allocation.  WSTRACE_CLOCK=monotonic writes a spool of clock 0; the default takes the counter
 * only where the kernel's clock source is tsc.
 */
Test(trace, both_clocks_give_monotonic_nanoseconds)
{
    long long allocations[2] = {0, 0};
    for (int monotonic = 0; monotonic <= 1; monotonic++) {
        char trace[512], spool[600];
        trace_path(trace, sizeof trace);
        snprintf(spool, sizeof spool, "%s.spool", trace);
        struct tu_result r;
        tu_run_traced(&r, trace,
                      ENV(monotonic ? "WSTRACE_CLOCK=monotonic" : "WSTRACE_CLOCK=auto", "WSTRACE_KEEP_SPOOL=1"),
                      ARGV("plain", "0"));
        cr_assert(r.exited && r.code == 0, "exit %d: %s", r.code, r.err);
        tu_result_free(&r);
        size_t size = 0;
        struct ws_spool_header *h = (void *)tu_read_file(spool, &size);
        cr_assert(h && size >= sizeof *h);
        cr_expect_eq(h->version, WS_SPOOL_VERSION);
        if (monotonic || !clocksource_is_tsc())
            cr_expect_eq(h->clock, WS_CLOCK_MONOTONIC, "monotonic %d: clock %u", monotonic, h->clock);
        free(h);
        sqlite3 *db = tu_open(trace);
        long long start = tu_int(db, "SELECT value FROM meta WHERE key='start_ns'");
        long long end = tu_int(db, "SELECT value FROM meta WHERE key='end_ns'");
        allocations[monotonic] = tu_int(db, "SELECT COUNT(*) FROM allocations");
        cr_expect_gt(allocations[monotonic], 0);
        char sql[256];
        snprintf(sql, sizeof sql,
                 "SELECT COUNT(*) FROM allocations WHERE alloc_ns < %lld OR alloc_ns > %lld OR free_ns < alloc_ns "
                 "OR free_ns > %lld",
                 start, end, end);
        cr_expect_eq(tu_int(db, sql), 0, "monotonic %d: allocations outside [%lld, %lld]", monotonic, start, end);
        sqlite3_close(db);
    }
    cr_expect_eq(allocations[0], allocations[1], "the same allocations with either clock");
}

Test(trace, record_refuses_an_unwritable_output)
{
    struct tu_result r;
    record(&r, "/nonexistent/dir/t.db", ARGV("plain", "0"));
    cr_expect(r.exited && r.code == 2, "exit %d signal %d", r.code, r.signal);
    cr_expect_eq(tu_lines(r.err), 1, "stderr:\n%s", r.err);
    cr_expect_str_empty(r.out, "the program did not run");
    tu_result_free(&r);
}

Test(trace, collect_zero_leaves_the_spool_keep_spool_keeps_it)
{
    char trace[512], spool[600];
    trace_path(trace, sizeof trace);
    snprintf(spool, sizeof spool, "%s.spool", trace);
    struct tu_result r;
    tu_run_traced(&r, trace, ENV("WSTRACE_COLLECT=0"), ARGV("plain", "0"));
    cr_assert(r.exited && r.code == 0);
    cr_expect_not(tu_exists(trace));
    cr_assert(tu_exists(spool));
    tu_result_free(&r);
    tu_run(&r, NULL, ((const char *const[]){TU_WSTRACE, "collect", spool, NULL}));
    cr_assert(r.exited && r.code == 0, "collect: exit %d: %s", r.code, r.err);
    sqlite3 *db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE bytes=4096 AND free_ns IS NOT NULL"), 1);
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='clean_exit'"), 1);
    sqlite3_close(db);
    cr_expect_not(tu_exists(spool), "collect removes the spool it converted");
    tu_result_free(&r);

    unlink(trace);
    tu_run_traced(&r, trace, ENV("WSTRACE_KEEP_SPOOL=1"), ARGV("plain", "0"));
    cr_assert(r.exited && r.code == 0);
    cr_expect(tu_exists(trace));
    cr_expect(tu_exists(spool));
    tu_result_free(&r);
}

/* A relative WSTRACE_OUTPUT names a file in the folder the program started in, even when the
 * program changes folder before it exits: the tracer makes the path absolute when it starts, so
 * the collection at exit finds the spool and writes the trace there, leaving no spool behind. */
Test(trace, relative_output_survives_chdir)
{
    cr_assert_eq(chdir(tu_dir()), 0); /* each test runs in its own process */
    struct tu_result r;
    tu_run(&r, ENV(tu_tracer_preload(), "WSTRACE_OUTPUT=t.db"), ARGV("chdir"));
    cr_expect(r.exited && r.code == 0, "exit %d signal %d", r.code, r.signal);
    cr_expect_str_empty(r.err);
    char trace[512];
    trace_path(trace, sizeof trace);
    sqlite3 *db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE bytes=4321 AND free_ns IS NOT NULL"), 1);
    sqlite3_close(db);
    cr_expect_eq(count_files("t.db"), 1, "no spool left behind");
    tu_result_free(&r);
}

/* ---- nvcc's launch path ------------------------------------------------------------------------ */

Test(trace, nvcc_launch_path_named_by_registration)
{
    char trace[512];
    trace_path(trace, sizeof trace);
    struct tu_result r;
    run_ok(&r, trace, NULL, ARGV("nvcc"));
    /* Three launches, each multiplying by 3: 1..4 * 27. */
    cr_expect(strstr(r.out, "data=27,54,81,108\n") != NULL, "output:\n%s", r.out);
    sqlite3 *db = tu_open(trace);
    cr_assert_eq(tu_int(db, "SELECT COUNT(*) FROM launches"), 3);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM launches l JOIN strings s ON s.id=l.kernel_name_id WHERE "
                            "l.api='__cudaLaunchKernel' AND s.value='_Z12nvcc_scalerPfif' AND grid_x=3 AND grid_y=1 "
                            "AND grid_z=1 AND block_x=128 AND block_y=1 AND block_z=1 AND shared_bytes=64 AND "
                            "stream IS NULL AND status=0"),
                 2);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM launches l JOIN strings s ON s.id=l.kernel_name_id WHERE "
                            "l.api='cudaLaunchKernel' AND s.value='_Z12nvcc_scalerPfif' AND block_x=4 AND status=0"),
                 1, "the registered device name wins over the stub's symbol");
    sqlite3_close(db);
    tu_result_free(&r);
}

/* ---- schema/README.md example queries ------------------------------------------------------- */

/*
 * Every query of the "Example queries" section runs on traces of programs that make what it asks
 * about, and its result is checked against what those programs did (derived from their source in
 * the comments below, or printed by them as key=value lines).  A query without an expected result
 * here, or an expected result whose query is gone, fails the test.
 */
enum { SQ_EXPLICIT, SQ_APIS, SQ_DOMAINS, SQ_ATTRIBUTES, SQ_MEMORY, SQ_GRAPHS, SQ_TRACES };

struct sq_result {
    char **rows; /* each row's columns joined with '|', NULL as the empty string */
    size_t n;
};

static void sq_run(sqlite3 *db, const char *sql, struct sq_result *res)
{
    memset(res, 0, sizeof *res);
    while (sql && *sql) {
        sqlite3_stmt *st = NULL;
        const char *tail = NULL;
        cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, &tail), SQLITE_OK, "%s\n%s", sqlite3_errmsg(db), sql);
        if (!st)
            break;
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            char row[2048] = "";
            size_t len = 0;
            for (int c = 0; c < sqlite3_column_count(st); c++) {
                const char *v = (const char *)sqlite3_column_text(st, c);
                len += (size_t)snprintf(row + len, sizeof row - len, "%s%s", c ? "|" : "", v ? v : "");
                if (len >= sizeof row)
                    len = sizeof row - 1;
            }
            res->rows = realloc(res->rows, (res->n + 1) * sizeof *res->rows);
            res->rows[res->n++] = strdup(row);
        }
        cr_assert_eq(rc, SQLITE_DONE, "%s\n%s", sqlite3_errmsg(db), sql);
        sqlite3_finalize(st);
        sql = tail;
    }
}

static void sq_free(struct sq_result *res)
{
    for (size_t i = 0; i < res->n; i++)
        free(res->rows[i]);
    free(res->rows);
}

static int sq_has(const struct sq_result *res, const char *row)
{
    for (size_t i = 0; i < res->n; i++)
        if (strcmp(res->rows[i], row) == 0)
            return 1;
    return 0;
}

/* The integer column `col` (0-based) of a row. */
static long long sq_col(const char *row, int col)
{
    const char *p = row;
    for (int c = 0; c < col && p; c++) {
        p = strchr(p, '|');
        p = p ? p + 1 : NULL;
    }
    cr_assert_not_null(p, "row '%s' has no column %d", row, col);
    return strtoll(p, NULL, 10);
}

static void sq_expect_rows(const struct sq_result *res, size_t n, const char *what)
{
    cr_expect_eq(res->n, n, "%s: %zu rows, expected %zu%s%s", what, res->n, n, res->n ? "; first: " : "",
                 res->n ? res->rows[0] : "");
}

/* Checks the result of the query captioned `caption`; returns 0 when there is no such caption. */
static int sq_check(const char *caption, sqlite3 *const db[SQ_TRACES], const char *const out[SQ_TRACES],
                    const char *sql)
{
    struct sq_result r;
    char want[512];
    if (strstr(caption, "What each graph launch ran")) {
        /* graph_prog memnodes 2 3: the graph with a memory node launched 2 times, the captured one
         * 3 times; each launch runs one kernel, one allocation and one free. */
        sq_run(db[SQ_GRAPHS], sql, &r);
        sq_expect_rows(&r, 2, caption);
        for (int k = 0; k < 2; k++) {
            long long n = tu_kv(out[SQ_GRAPHS], k ? "captured_launches" : "explicit_launches");
            int found = 0;
            for (size_t i = 0; i < r.n; i++)
                found += sq_col(r.rows[i], 2) == k && sq_col(r.rows[i], 3) == n && sq_col(r.rows[i], 4) == n &&
                         sq_col(r.rows[i], 5) == n && sq_col(r.rows[i], 6) == n;
            cr_expect_eq(found, 1, "%s: the %s graph", caption, k ? "captured" : "explicit");
        }
        sq_free(&r);
        /* trace_prog apis: one empty graph, instantiated once and launched once. */
        sq_run(db[SQ_APIS], sql, &r);
        sq_expect_rows(&r, 1, caption);
        cr_expect(r.n == 1 && strcmp(r.rows[0], "1|cudaGraphInstantiate|0|1|0|0|0") == 0, "%s: %s", caption,
                  r.n ? r.rows[0] : "");
    } else if (strstr(caption, "Calls that stream capture recorded")) {
        /* graph_prog memnodes: one global-mode capture of cudaMallocAsync (captured_bytes), a
         * kernel and cudaFreeAsync, ended normally. */
        sq_run(db[SQ_GRAPHS], sql, &r);
        sq_expect_rows(&r, 3, caption);
        snprintf(want, sizeof want, "1|global|0|allocation|1|%lld", tu_kv(out[SQ_GRAPHS], "captured_bytes"));
        cr_expect(sq_has(&r, want), "%s: no row %s", caption, want);
        cr_expect(sq_has(&r, "1|global|0|free|1|0") && sq_has(&r, "1|global|0|kernel|1|0"), "%s", caption);
    } else if (strstr(caption, "What each memory pool reserved")) {
        /* trace_prog apis: cudaMallocAsync (2000 bytes) and cudaMallocFromPoolAsync (3000) on the
         * device's default pool: one pool, two allocations; it reserved at least what was used,
         * and the first allocation (2000 bytes, which made it reserve memory) was sampled. */
        sq_run(db[SQ_APIS], sql, &r);
        sq_expect_rows(&r, 1, caption);
        if (r.n == 1) {
            cr_expect_eq(sq_col(r.rows[0], 5), 2, "%s: %s", caption, r.rows[0]);
            cr_expect_geq(sq_col(r.rows[0], 3), sq_col(r.rows[0], 4), "%s: %s", caption, r.rows[0]);
            cr_expect_geq(sq_col(r.rows[0], 4), 2000, "%s: %s", caption, r.rows[0]);
            cr_expect_not_null(strstr(r.rows[0], "|device|"), "%s: %s", caption, r.rows[0]);
        }
    } else if (strstr(caption, "Peak live device bytes per device")) {
        /* trace_prog explicit: the 4 workers hold 3 x (1000 + i) + (10 + i) bytes each at their
         * barrier, 12,064 in all; the runs before them hold at most 3,072 + 64. */
        sq_run(db[SQ_EXPLICIT], sql, &r);
        sq_expect_rows(&r, 1, caption);
        cr_expect(sq_has(&r, "0|12064"), "%s: %s", caption, r.n ? r.rows[0] : "");
    } else if (strstr(caption, "Peak live device bytes of each process")) {
        sq_run(db[SQ_EXPLICIT], sql, &r); /* the same, one process, traced by the tracer */
        sq_expect_rows(&r, 1, caption);
        if (r.n == 1) {
            cr_expect_eq(sq_col(r.rows[0], 0), 1);
            cr_expect_eq(sq_col(r.rows[0], 4), 12064, "%s: %s", caption, r.rows[0]);
        }
    } else if (strstr(caption, "Nodes that allocate the most device memory")) {
        /* trace_prog explicit: /model/layer0 allocates 1024 + 2048 + 3072 in its 3 runs,
         * /model/matmul 3 x 64, /worker/i 3 x (1000 + i), /worker/i/inner 10 + i: 10 nodes, the
         * largest first, no launches. */
        sq_run(db[SQ_EXPLICIT], sql, &r);
        sq_expect_rows(&r, 10, caption);
        cr_expect(r.n > 1 && strcmp(r.rows[0], "/model/layer0|3|6144|0") == 0 &&
                      strcmp(r.rows[1], "/worker/3|3|3009|0") == 0,
                  "%s: %s, %s", caption, r.n ? r.rows[0] : "", r.n > 1 ? r.rows[1] : "");
        cr_expect(sq_has(&r, "/model/matmul|3|192|0") && sq_has(&r, "/worker/0/inner|1|10|0"), "%s", caption);
    } else if (strstr(caption, "Allocations that were never freed")) {
        sq_run(db[SQ_APIS], sql, &r); /* trace_prog apis: 7,000 bytes never freed, outside every node */
        sq_expect_rows(&r, 1, caption);
        cr_expect(r.n == 1 && strstr(r.rows[0], "|cudaMalloc|7000|") != NULL, "%s: %s", caption, r.n ? r.rows[0] : "");
        sq_free(&r);
        sq_run(db[SQ_EXPLICIT], sql, &r); /* explicit frees everything it allocates */
        sq_expect_rows(&r, 0, caption);
    } else if (strstr(caption, "Failed calls with their error codes")) {
        /* trace_prog apis: cudaFree of an address never allocated, with the status it printed */
        sq_run(db[SQ_APIS], sql, &r);
        sq_expect_rows(&r, 1, caption);
        snprintf(want, sizeof want, "cudaFree|%lld|", tu_kv(out[SQ_APIS], "bad_free"));
        cr_expect(sq_has(&r, want), "%s: %s, expected %s", caption, r.n ? r.rows[0] : "", want);
    } else if (strstr(caption, "Kernel launches per node and kernel")) {
        /* trace_prog apis: trace_kernel_scale 3 times, trace_kernel_shift and trace_kernel_coop
         * once each, one graph launch (no kernel name), all outside nodes: 6 launches. */
        sq_run(db[SQ_APIS], sql, &r);
        sq_expect_rows(&r, 4, caption);
        long long total = 0;
        for (size_t i = 0; i < r.n; i++)
            total += sq_col(r.rows[i], 2);
        cr_expect_eq(total, 6, "%s", caption);
        cr_expect(sq_has(&r, "|trace_kernel_scale|3") && sq_has(&r, "|trace_kernel_shift|1") &&
                      sq_has(&r, "|trace_kernel_coop|1"),
                  "%s", caption);
    } else if (strstr(caption, "Level-1 estimate next to Level-2 declaration")) {
        /* trace_prog explicit: Level 1 of /model/matmul slot 0 is 1,048,576; run 0 declares slot 0
         * 786,432 and slot 1 4,096 (slot 1 has no Level 1). */
        sq_run(db[SQ_EXPLICIT], sql, &r);
        sq_expect_rows(&r, 2, caption);
        cr_expect(sq_has(&r, "/model/matmul|0|1048576|786432") && sq_has(&r, "/model/matmul|1||4096"), "%s",
                  caption);
    } else if (strstr(caption, "NVTX ranges with their category names")) {
        sq_run(db[SQ_ATTRIBUTES], sql, &r); /* nvtx_prog attributes: the ranges it gave attributes */
        sq_expect_rows(&r, (size_t)tu_kv(out[SQ_ATTRIBUTES], "attribute_ranges"), caption);
    } else if (strstr(caption, "Memory held from CUDA next to memory in use")) {
        /* nvtx_prog memory: "my-heap" (1 MiB) holds regions A (1,000, resized to 3,000), B, C, D;
         * an unnamed heap of 4,096 bytes inside a second allocation holds E (256). */
        sq_run(db[SQ_MEMORY], sql, &r);
        sq_expect_rows(&r, 2, caption);
        cr_expect(sq_has(&r, "1|my-heap|1048576|4|3000") && sq_has(&r, "2||4096|1|256"), "%s: %s", caption,
                  r.n ? r.rows[0] : "");
    } else if (strstr(caption, "Pops that closed nothing")) {
        /* nvtx_prog domains: the pops that closed nothing, counted by the program */
        sq_run(db[SQ_DOMAINS], sql, &r);
        long long total = 0;
        for (size_t i = 0; i < r.n; i++)
            total += sq_col(r.rows[i], 2);
        cr_expect_gt(r.n, 1, "%s: pops in several domains", caption);
        cr_expect_eq(total, tu_kv(out[SQ_DOMAINS], "negative_pops"), "%s", caption);
    } else if (strstr(caption, "Declared roots and their regions")) {
        /* trace_prog explicit: two Level-2 declarations of /model/matmul, no tactic, no regions */
        sq_run(db[SQ_EXPLICIT], sql, &r);
        sq_expect_rows(&r, 2, caption);
        cr_expect(sq_has(&r, "/model/matmul|0|786432|||||") && sq_has(&r, "/model/matmul|1|4096|||||"), "%s",
                  caption);
    } else if (strstr(caption, "Time spent in each run")) {
        /* trace_prog explicit: three runs, keys batch=4,seq=128 twice then batch=4,seq=256 */
        sq_run(db[SQ_EXPLICIT], sql, &r);
        sq_expect_rows(&r, 3, caption);
        static const char *const keys[] = {"batch=4,seq=128", "batch=4,seq=128", "batch=4,seq=256"};
        for (size_t i = 0; i < r.n && i < 3; i++) {
            snprintf(want, sizeof want, "%zu|%s|", i + 1, keys[i]);
            cr_expect(strncmp(r.rows[i], want, strlen(want)) == 0, "%s: %s", caption, r.rows[i]);
        }
    } else {
        return 0;
    }
    sq_free(&r);
    return 1;
}

Test(trace, schema_readme_example_queries_return_what_the_programs_did)
{
    static const char *const names[SQ_TRACES] = {"explicit", "apis", "domains", "attributes", "memory", "graphs"};
    static const char *const argv[SQ_TRACES][4] = {
        {TU_PROG, "explicit", NULL},
        {TU_PROG, "apis", NULL},
        {WS_BUILD_DIR "/tests/nvtx_prog", "domains", NULL},
        {WS_BUILD_DIR "/tests/nvtx_prog", "attributes", NULL},
        {WS_BUILD_DIR "/tests/nvtx_prog", "memory", NULL},
        {WS_BUILD_DIR "/tests/graph_prog", "memnodes", "2", "3"},
    };
    sqlite3 *db[SQ_TRACES];
    const char *out[SQ_TRACES];
    struct tu_result r[SQ_TRACES];
    char *analysis = tu_read_file(WS_SOURCE_DIR "/schema/analysis.sql", NULL);
    for (int t = 0; t < SQ_TRACES; t++) {
        char trace[512], name[64];
        snprintf(name, sizeof name, "%s.db", names[t]);
        tu_path(trace, sizeof trace, name);
        const char *args[5] = {argv[t][0], argv[t][1], argv[t][2], argv[t][3], NULL};
        tu_run_traced(&r[t], trace, NULL, args);
        cr_assert(r[t].exited && r[t].code == 0, "%s %s: exit %d\n%s", args[0], args[1], r[t].code, r[t].err);
        out[t] = r[t].out;
        cr_assert_eq(sqlite3_open_v2(trace, &db[t], SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        /* Queries may also read the result tables of the analysis commands: create them (empty). */
        char *msg = NULL;
        cr_assert_eq(sqlite3_exec(db[t], analysis, NULL, NULL, &msg), SQLITE_OK, "schema/analysis.sql: %s", msg);
    }
    free(analysis);

    size_t len;
    char *doc = tu_read_file(WS_SOURCE_DIR "/schema/README.md", &len);
    char *section = strstr(doc, "\n## Example queries");
    cr_assert_not_null(section, "schema/README.md has no section '## Example queries'");
    char *next = strstr(section + 1, "\n## ");
    if (next)
        *next = 0;
    int blocks = 0;
    for (char *p = section; (p = strstr(p, "\n```sql")) != NULL;) {
        /* the caption: the line before the block */
        char *line_end = p, *line = p - 1;
        while (line > section && *line != '\n')
            line--;
        char caption[256];
        snprintf(caption, sizeof caption, "%.*s", (int)(line_end - line - 1), line + 1);
        p = strchr(p + 1, '\n');
        cr_assert_not_null(p);
        char *end = strstr(++p, "```");
        cr_assert_not_null(end, "unterminated sql block");
        *end = 0;
        blocks++;
        cr_expect(sq_check(caption, db, out, p), "no expected result for the query '%s'", caption);
        p = end + 3;
    }
    cr_expect_eq(blocks, 15, "the section has %d queries; each needs its expected result here", blocks);
    for (int t = 0; t < SQ_TRACES; t++) {
        sqlite3_close(db[t]);
        tu_result_free(&r[t]);
    }
    free(doc);
}

/* ---- wstrace collect: bad input -------------------------------------------------------------- */

static void expect_collect_refuses(const char *spool)
{
    struct tu_result r;
    tu_run(&r, NULL, ((const char *const[]){TU_WSTRACE, "collect", spool, NULL}));
    cr_expect(r.exited && r.code == 2, "%s: exit %d signal %d", spool, r.code, r.signal);
    cr_expect_eq(tu_lines(r.err), 1, "%s: stderr:\n%s", spool, r.err);
    tu_result_free(&r);
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

Test(trace, collect_refuses_bad_input)
{
    char path[512];
    tu_path(path, sizeof path, "missing.spool");
    expect_collect_refuses(path);

    static char text[8192];
    memset(text, 'x', sizeof text);
    tu_path(path, sizeof path, "text.spool");
    write_file(path, "hello\n", 6);
    expect_collect_refuses(path);
    write_file(path, text, sizeof text);
    expect_collect_refuses(path);

    /* A real spool cut inside its header. */
    char trace[512], spool[600];
    trace_path(trace, sizeof trace);
    snprintf(spool, sizeof spool, "%s.spool", trace);
    run_killed(trace);
    cr_assert_eq(truncate(spool, WS_SPOOL_HEADER_BYTES / 2), 0);
    expect_collect_refuses(spool);
    cr_expect_not(tu_exists(trace), "no trace from a refused spool");
    cr_expect(tu_exists(spool), "a refused spool is kept");
}

/* Records a reader trusts in chunk c: the `committed` ones, then those that published themselves
 * (WS_REC_PUBLISHED in ext, spool format 3). */
static uint32_t published_records(const struct ws_chunk_header *c)
{
    const struct ws_rec *recs = (const void *)(c + 1);
    uint32_t n = c->committed;
    while (n < WS_CHUNK_RECS && recs[n].ext == WS_REC_PUBLISHED)
        n++;
    return n;
}

/* The chunk of the killed program's thread that holds its last record. */
static size_t last_chunk(const uint8_t *map, size_t size)
{
    size_t best = 0;
    uint64_t best_seq = 0;
    int found = 0;
    for (size_t off = WS_SPOOL_HEADER_BYTES; off + WS_CHUNK_BYTES <= size; off += WS_CHUNK_BYTES) {
        const struct ws_chunk_header *c = (const void *)(map + off);
        if (c->magic == WS_CHUNK_MAGIC && published_records(c) > 0 && (!found || c->seq >= best_seq)) {
            best = off;
            best_seq = c->seq;
            found = 1;
        }
    }
    cr_assert(found, "no chunk with records in the spool");
    return best;
}

static uint8_t *load_spool(const char *path, size_t *size) { return (uint8_t *)tu_read_file(path, size); }

Test(trace, collect_keeps_complete_records_before_a_torn_one)
{
    char trace[512], spool[600], torn[600];
    trace_path(trace, sizeof trace);
    snprintf(spool, sizeof spool, "%s.spool", trace);
    run_killed(trace);
    size_t size;
    uint8_t *map = load_spool(spool, &size);
    size_t off = last_chunk(map, size);
    struct ws_chunk_header *c = (void *)(map + off);
    struct ws_rec *recs = (void *)(c + 1);
    uint32_t committed = published_records(c);
    int counted = committed <= c->committed; /* the last record published by the count, not by itself */
    cr_assert_eq(recs[committed - 1].type, WS_REC_ALLOC, "the last record is the last allocation");

    /* 1. The process died while writing a record it had not published: garbage after the last. */
    memset(&recs[committed], 0xa5, 3 * sizeof *recs);
    tu_path(torn, sizeof torn, "torn1.spool");
    write_file(torn, map, size);
    struct tu_result r;
    tu_run(&r, NULL, ((const char *const[]){TU_WSTRACE, "collect", torn, NULL}));
    cr_assert(r.exited && r.code == 0, "collect: exit %d: %s", r.code, r.err);
    char out[600];
    tu_path(out, sizeof out, "torn1");
    check_killed_trace(out);
    sqlite3 *db = tu_open(out);
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='corrupt_records'"), 0);
    sqlite3_close(db);
    tu_result_free(&r);

    /* 2. The page holding the last published record never reached the disk (zeroed tail):
     *    every complete record before it is still there.  A record published by the count is then
     *    missing from it (corrupt); one that published itself reads as never written. */
    memset(&recs[committed - 1], 0, (WS_CHUNK_RECS - (committed - 1)) * sizeof *recs);
    tu_path(torn, sizeof torn, "torn2.spool");
    write_file(torn, map, size);
    tu_run(&r, NULL, ((const char *const[]){TU_WSTRACE, "collect", "-o", out, torn, NULL}));
    cr_assert(r.exited && r.code == 0, "collect: exit %d: %s", r.code, r.err);
    db = tu_open(out);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), KILL_AFTER - 1);
    cr_expect_eq(tu_int(db, "SELECT MAX(bytes) FROM allocations"), 100 + KILL_AFTER - 2);
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='corrupt_records'"), counted ? 1 : 0);
    sqlite3_close(db);
    tu_result_free(&r);
    free(map);
}

/* ---- the hooks' exported entries pass every argument on unchanged ------------------------------ */

#define ARGCHECK_PROG  WS_BUILD_DIR "/tests/argcheck_prog"
#define ARGCHECK_N     4 /* calls of each function */
#define ARGCHECK_N_ARG "4"

/* argcheck_prog ARGCHECK_N with env: it exits 0 only when every argument reached the stand-ins
 * (libwsargcheck.so) as it passed it and every result and errno came back as they left it. */
static void argcheck(struct tu_result *r, const char *how, const char *trace, const char *const *env)
{
    const char *argv[] = {ARGCHECK_PROG, ARGCHECK_N_ARG, NULL};
    if (trace)
        tu_run_traced(r, trace, env, argv);
    else
        tu_run(r, env, argv);
    cr_assert(r->exited && r->code == 0, "%s: exit %d signal %d\nstdout:\n%s\nstderr:\n%s", how, r->code, r->signal,
              r->out, r->err);
    cr_expect_eq(tu_kv(r->out, "calls"), 5 * ARGCHECK_N, "%s", how);
    cr_expect_eq(tu_kv(r->out, "answered"), 5 * ARGCHECK_N, "%s: every call reached its stand-in", how);
    cr_expect_eq(tu_kv(r->out, "mismatches"), 0, "%s", how);
    cr_expect_str_empty(r->err, "%s: %s", how, r->err);
}

Test(trace, hook_entries_pass_struct_and_stack_arguments_unchanged)
{
    struct tu_result r;
    /* without the tracer: the program and the stand-ins agree on the values */
    const char *san = tu_sanitizer_preload();
    argcheck(&r, "untraced", NULL, san ? ENV(san) : NULL);
    tu_result_free(&r);
    /* preloaded, tracing off: the forwarding entries (each function's first call resolves it) */
    argcheck(&r, "forwarding", NULL, ENV(tu_tracer_preload(), "WSTRACE_DISABLE=1"));
    tu_result_free(&r);
    /* traced: the traced halves receive the same arguments, and record them */
    char trace[512];
    trace_path(trace, sizeof trace);
    argcheck(&r, "traced", trace, NULL);
    tu_result_free(&r);
    sqlite3 *db = tu_open(trace);
    static const unsigned rg[3] = {AC_RT_GRID}, rb[3] = {AC_RT_BLOCK}, dg[3] = {AC_DRV_GRID}, db_[3] = {AC_DRV_BLOCK};
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM launches WHERE api = 'cudaLaunchKernel' AND status = 0 AND function = %u "
                        "AND grid_x = %u AND grid_y = %u AND grid_z = %u AND block_x = %u AND block_y = %u AND "
                        "block_z = %u AND shared_bytes = %u AND stream = %u",
                        AC_RT_FUNC, rg[0], rg[1], rg[2], rb[0], rb[1], rb[2], AC_RT_SMEM, AC_RT_STREAM),
                 ARGCHECK_N);
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM launches WHERE api = 'cuLaunchKernel' AND status = 0 AND function = %u "
                        "AND grid_x = %u AND grid_y = %u AND grid_z = %u AND block_x = %u AND block_y = %u AND "
                        "block_z = %u AND shared_bytes = %u AND stream = %u",
                        AC_DRV_FUNC, dg[0], dg[1], dg[2], db_[0], db_[1], db_[2], AC_DRV_SMEM, AC_DRV_STREAM),
                 ARGCHECK_N);
    /* cudaMalloc3D: the extent (passed in memory) as requested bytes, the pitch the stand-in answered */
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM allocations WHERE api = 'cudaMalloc3D' AND status = 0 AND "
                        "requested_bytes = %u AND bytes = %u AND address - %u BETWEEN 0 AND %u AND "
                        "(address - %u) %% %u = 0",
                        AC_3D_WIDTH * AC_3D_HEIGHT * AC_3D_DEPTH, AC_3D_PITCH * AC_3D_HEIGHT * AC_3D_DEPTH, AC_3D_BASE,
                        (ARGCHECK_N - 1) * AC_STEP, AC_3D_BASE, AC_STEP),
                 ARGCHECK_N);
    cr_expect_eq(tu_int(db, "SELECT COUNT(DISTINCT address) FROM allocations WHERE api = 'cudaMalloc3D'"), ARGCHECK_N);
    /* the IPC openings: the addresses the stand-ins answered */
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(DISTINCT address) FROM allocations WHERE api = 'cudaIpcOpenMemHandle' AND "
                        "status = 0 AND address - %u BETWEEN 0 AND %u",
                        AC_RT_IPC_BASE, (ARGCHECK_N - 1) * AC_STEP),
                 ARGCHECK_N);
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(DISTINCT address) FROM allocations WHERE api = 'cuIpcOpenMemHandle_v2' AND "
                        "status = 0 AND address - %u BETWEEN 0 AND %u",
                        AC_DRV_IPC_BASE, (ARGCHECK_N - 1) * AC_STEP),
                 ARGCHECK_N);
    sqlite3_close(db);
}
