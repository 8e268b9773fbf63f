/*
 * CUDA graphs, stream capture, arrays, host registration, IPC and pools, end to end: graph_prog
 * (tests/graph/graph_prog.c) runs on the simulated device under libwstrace.so and the traces are
 * checked with SQL.  Expected numbers are what the program printed (its own arguments, the
 * simulated device's counters, the attributes it read) or are derived by hand in the comments
 * from the calls it makes; never taken from the tracer.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_util.h"

TestSuite(graph_trace, .fini = tu_cleanup);

#define GRAPH_PROG WS_BUILD_DIR "/tests/graph_prog"
#define ARGV(...)  ((const char *const[]){__VA_ARGS__, NULL})

/* s without blanks and newlines (JSON as the tests write it). */
static char *squeeze(const char *s)
{
    char *out = malloc(strlen(s) + 1), *o = out;
    cr_assert_not_null(out);
    for (; *s; s++)
        if (*s != ' ' && *s != '\n')
            *o++ = *s;
    *o = 0;
    return out;
}

static void run_ok(struct tu_result *r, const char *trace, const char *const *argv)
{
    tu_run_traced(r, trace, NULL, argv);
    cr_assert(r->exited && r->code == 0, "traced %s %s: exit %d signal %d\nstdout:\n%s\nstderr:\n%s", argv[0], argv[1],
              r->code, r->signal, r->out, r->err);
    cr_expect_str_empty(r->err, "stderr of the traced program: %s", r->err);
}

static void wstrace_ok(const char *const *argv)
{
    struct tu_result r;
    const char *san = tu_sanitizer_preload();
    tu_run(&r, san ? (const char *const[]){san, NULL} : NULL, argv);
    cr_assert(r.exited && r.code == 0, "%s %s: exit %d\n%s", argv[0], argv[1], r.code, r.err);
    tu_result_free(&r);
}

/* Allocations in the node of that name. */
static int64_t allocations_in(sqlite3 *db, const char *node, const char *extra)
{
    return tu_int(db,
                  "SELECT COUNT(*) FROM allocations a JOIN ranges r ON r.id = a.range_id JOIN strings s ON "
                  "s.id = r.name_id WHERE s.value = '%s' AND a.status = 0 %s",
                  node, extra);
}

static int64_t kernels_named(sqlite3 *db, const char *kernel)
{
    return tu_int(db, "SELECT COUNT(*) FROM launches l JOIN strings k ON k.id = l.kernel_name_id WHERE k.value = '%s'",
                  kernel);
}

Test(graph_trace, memory_nodes_allocate_once_per_launch_and_never_at_capture)
{
    char trace[512];
    tu_path(trace, sizeof trace, "memnodes.db");
    struct tu_result r;
    run_ok(&r, trace, ARGV(GRAPH_PROG, "memnodes", "4", "3"));
    long long n = tu_kv(r.out, "explicit_launches"), m = tu_kv(r.out, "captured_launches");
    long long explicit_addr = tu_kv(r.out, "explicit_address"), captured_addr = tu_kv(r.out, "captured_address");
    long long explicit_bytes = tu_kv(r.out, "explicit_bytes"), captured_bytes = tu_kv(r.out, "captured_bytes");
    cr_assert_eq(n, 4);
    cr_assert_eq(m, 3);
    sqlite3 *db = tu_open(trace);

    /* N + M allocations, as many as the device made; none at capture time */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE status = 0"), n + m);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE status = 0"), tu_kv(r.out, "device_allocations"));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE api = 'cudaMallocAsync'"), 0,
                 "the captured cudaMallocAsync allocated nothing");
    cr_expect_eq(allocations_in(db, "capture", ""), 0);
    /* each in the node open at its launch, at the node's address, freed by the launch */
    cr_expect_eq(allocations_in(db, "explicit", ""), n);
    cr_expect_eq(allocations_in(db, "captured", ""), m);
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM allocations WHERE api = 'cudaGraphLaunch' AND address = %lld AND "
                        "bytes = %lld AND free_api = 'cudaGraphLaunch' AND alloc_ns < free_ns",
                        explicit_addr, explicit_bytes),
                 n);
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM allocations WHERE api = 'cudaGraphLaunch' AND address = %lld AND "
                        "bytes = %lld AND free_api = 'cudaGraphLaunch' AND alloc_ns < free_ns",
                        captured_addr, captured_bytes),
                 m);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors"), 0);

    /* the kernels the graphs ran: one per launch, as many as the device ran */
    cr_expect_eq(kernels_named(db, "graph_kernel_touch"), n + m);
    cr_expect_eq(kernels_named(db, "graph_kernel_touch"), tu_kv(r.out, "device_kernels"));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM graph_launches WHERE status = 0 AND kernels = 1 AND allocations = 1 "
                            "AND frees = 1"),
                 n + m);
    /* what a launch ran lies between the records around the call */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM graph_launch_work w JOIN graph_launches g ON g.id = "
                            "w.graph_launch_id JOIN allocations a ON a.id = w.allocation_id WHERE a.alloc_ns >= g.ns"),
                 0);

    /* the capture: what it recorded, where, and the instance made from its graph */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM captures c JOIN ranges r ON r.id = c.range_id JOIN strings s ON "
                            "s.id = r.name_id WHERE s.value = 'capture' AND c.mode = 'global' AND c.end_status = 0 "
                            "AND c.calls = 3 AND c.allocations = 1 AND c.kernels = 1 AND c.frees = 1"),
                 1);
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM captured_calls WHERE kind = 'allocation' AND api = 'cudaMallocAsync' "
                        "AND address = %lld AND bytes = %lld",
                        captured_addr, captured_bytes),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM captured_calls c JOIN strings k ON k.id = c.kernel_name_id "
                            "WHERE c.kind = 'kernel' AND k.value = 'graph_kernel_touch'"),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM graph_execs WHERE capture_id IS NOT NULL AND launches = %lld", m), 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM graph_execs WHERE capture_id IS NULL AND launches = %lld", n), 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM graph_nodes WHERE type IN ('mem-alloc', 'kernel', 'mem-free')"), 6);
    cr_expect_eq(tu_int(db, "SELECT MAX(live_bytes) FROM live_bytes"), captured_bytes);

    /* the analysis counts each launch's memory once: N + M workspaces of their nodes */
    wstrace_ok(ARGV(TU_WSTRACE, "lifetimes", trace));
    wstrace_ok(ARGV(TU_WSTRACE, "resolve", trace));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM lifetimes WHERE class = 'workspace'"), n + m);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM lifetimes"), n + m);
    cr_expect_eq(tu_int(db, "SELECT r.planner_profile_bytes FROM resolutions r JOIN strings s ON s.id = r.node_name_id "
                            "WHERE s.value = 'explicit'"),
                 explicit_bytes, "launches run one after the other: one allocation live at a time");
    cr_expect_eq(tu_int(db, "SELECT r.planner_profile_bytes FROM resolutions r JOIN strings s ON s.id = r.node_name_id "
                            "WHERE s.value = 'captured'"),
                 captured_bytes);
    /* and plans a block for each: the run holds N + M allocations, one live at a time */
    wstrace_ok(ARGV(TU_WSTRACE, "plan", trace));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM plan_blocks"), n + m);
    cr_expect_eq(tu_int(db, "SELECT planned_peak_bytes FROM plans"), captured_bytes);
    sqlite3_close(db);

    struct tu_result sum;
    tu_run(&sum, NULL, ARGV(TU_WSTRACE, "summary", "--json", trace));
    cr_assert(sum.exited && sum.code == 0, "%s", sum.err);
    char expect[256], *json = squeeze(sum.out);
    snprintf(expect, sizeof expect,
             "\"graphs\":{\"graph_launches\":%lld,\"instances\":2,\"kernels\":%lld,"
             "\"allocations\":%lld}",
             n + m, n + m, n + m);
    cr_expect(strstr(json, expect) != NULL, "summary --json: %s", json);
    cr_expect(strstr(json, "\"capture\":{\"captures\":1,\"calls\":3,\"allocations\":1,\"kernels\":1,"
                           "\"frees\":1,\"graph_launches\":0}") != NULL,
              "summary --json: %s", json);
    snprintf(expect, sizeof expect, "\"kernel_launches\":%lld,", n + m);
    cr_expect(strstr(json, expect) != NULL, "kernel launches count kernels, not graph launches: %s", json);
    free(json);
    tu_result_free(&sum);
    tu_run(&sum, NULL, ARGV(TU_WSTRACE, "summary", trace));
    cr_expect(strstr(sum.out, "graph launches           7 of 2 instances: 7 kernels, 7 allocations\n") != NULL, "%s",
              sum.out);
    cr_expect(strstr(sum.out, "captured, not run        3 calls in 1 captures") != NULL, "%s", sum.out);
    tu_result_free(&sum);
    tu_result_free(&r);
}

Test(graph_trace, a_graph_launch_records_the_kernels_it_runs)
{
    char trace[512];
    tu_path(trace, sizeof trace, "kernels.db");
    struct tu_result r;
    run_ok(&r, trace, ARGV(GRAPH_PROG, "kernels", "3", "5"));
    long long k = tu_kv(r.out, "kernel_nodes"), l = tu_kv(r.out, "launches");
    sqlite3 *db = tu_open(trace);
    cr_expect_eq(kernels_named(db, "graph_kernel_count"), k * l);
    cr_expect_eq(kernels_named(db, "graph_kernel_count"), tu_kv(r.out, "kernels_run"), "as many as ran");
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM launches l JOIN ranges r ON r.id = l.range_id JOIN strings s ON "
                            "s.id = r.name_id WHERE s.value = 'graph-kernels' AND l.kernel_name_id IS NOT NULL"),
                 k * l, "attributed to the node open at the launch");
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM graph_launches"), l);
    /* two kernels in the graph, the third in its child graph */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM graph_nodes WHERE type = 'kernel' AND depth = 0"), k - 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM graph_nodes WHERE type = 'kernel' AND depth = 1"), 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM graph_launch_work WHERE launch_id IS NOT NULL"), k * l);
    sqlite3_close(db);
    tu_result_free(&r);
}

Test(graph_trace, frees_of_graph_memory_are_recognised)
{
    char trace[512];
    tu_path(trace, sizeof trace, "unfreed.db");
    struct tu_result r;
    run_ok(&r, trace, ARGV(GRAPH_PROG, "unfreed"));
    long long addr = tu_kv(r.out, "address");
    sqlite3 *db = tu_open(trace);
    /* three launches of the plain instance and three of the auto-freeing one, in order */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE address = %lld AND bytes = %lld", addr,
                        tu_kv(r.out, "bytes")),
                 6);
    static const char *const freed_by[] = {"cudaFree",        "cudaFreeAsync",   "cudaGraphLaunch",
                                           "cudaGraphLaunch", "cudaGraphLaunch", NULL};
    for (int i = 0; i < 6; i++) {
        char *api =
            tu_text(db, "SELECT free_api FROM allocations WHERE address = %lld ORDER BY id LIMIT 1 OFFSET %d", addr, i);
        if (freed_by[i])
            cr_expect(api && strcmp(api, freed_by[i]) == 0, "allocation %d freed by %s, not %s", i, freed_by[i],
                      api ? api : "(never)");
        else
            cr_expect_null(api, "the last auto-freed launch's allocation is never freed");
        free(api);
    }
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors"), 0, "no free of graph memory is an error");
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM graph_launch_work w JOIN graph_launches g ON g.id = w.graph_launch_id "
                        "JOIN graph_nodes n ON n.graph_exec_id = g.graph_exec_id AND n.position = w.position "
                        "WHERE n.type = 'mem-free' AND w.allocation_id = (SELECT id FROM allocations WHERE "
                        "address = %lld ORDER BY id LIMIT 1 OFFSET 2)",
                        addr),
                 1, "the free node of the other graph freed the third allocation");
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM graph_execs WHERE flags = 1"), 1, "AutoFreeOnLaunch");
    sqlite3_close(db);
    tu_result_free(&r);
}

Test(graph_trace, instance_changes_change_what_launches_run)
{
    char trace[512];
    tu_path(trace, sizeof trace, "update.db");
    struct tu_result r;
    run_ok(&r, trace, ARGV(GRAPH_PROG, "update"));
    sqlite3 *db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM graph_launches"), tu_kv(r.out, "launches"));
    cr_expect_eq(kernels_named(db, "graph_kernel_count"), tu_kv(r.out, "count_kernels"));
    cr_expect_eq(kernels_named(db, "graph_kernel_touch"), tu_kv(r.out, "touch_kernels"));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM graph_execs WHERE api = 'cudaGraphExecUpdate' AND previous_id = "
                            "(SELECT id FROM graph_execs WHERE api = 'cudaGraphInstantiate')"),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM graph_execs WHERE end_api = 'cudaGraphExecUpdate' AND launches = 3"),
                 1, "three launches before the update");
    sqlite3_close(db);
    tu_result_free(&r);
}

Test(graph_trace, arrays_and_3d_allocations)
{
    char trace[512];
    tu_path(trace, sizeof trace, "arrays.db");
    struct tu_result r;
    run_ok(&r, trace, ARGV(GRAPH_PROG, "arrays"));
    sqlite3 *db = tu_open(trace);
    /* 640 x 480 floats; 64 x 32 x 16 x 4 bytes; 256^2, 128^2, 64^2 floats; pitch x 20 x 10 */
    long long pitch = tu_kv(r.out, "pitch");
    cr_expect_eq(tu_int(db, "SELECT bytes FROM allocations WHERE api = 'cudaMallocArray'"), 640 * 480 * 4);
    cr_expect_eq(tu_int(db, "SELECT bytes FROM allocations WHERE api = 'cudaMalloc3DArray'"), 64 * 32 * 16 * 4);
    cr_expect_eq(tu_int(db, "SELECT bytes FROM allocations WHERE api = 'cudaMallocMipmappedArray'"),
                 (256 * 256 + 128 * 128 + 64 * 64) * 4);
    cr_expect_eq(tu_int(db, "SELECT bytes FROM allocations WHERE api = 'cudaMalloc3D'"), pitch * 20 * 10);
    cr_expect_eq(tu_int(db, "SELECT requested_bytes FROM allocations WHERE api = 'cudaMalloc3D'"), 1000 * 20 * 10);
    cr_expect_eq(tu_int(db, "SELECT SUM(bytes) FROM allocations WHERE memory = 'device'"), tu_kv(r.out, "live_bytes"),
                 "what the device counted");
    cr_expect_eq(tu_int(db, "SELECT address FROM allocations WHERE api = 'cudaMallocArray'"), tu_kv(r.out, "array"));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE free_api IN ('cudaFreeArray', "
                            "'cudaFreeMipmappedArray', 'cudaFree') AND alloc_ns < free_ns"),
                 4);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM array_allocations a JOIN allocations l ON l.id = a.allocation_id "
                            "WHERE a.kind = 'mipmapped-array' AND a.width = 256 AND a.height = 256 AND a.levels = 3 "
                            "AND a.bits_x = 32 AND a.format = 'float' AND l.api = 'cudaMallocMipmappedArray'"),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM array_allocations WHERE kind = '3d-array' AND depth = 16 AND "
                            "bits_w = 8 AND format = 'unsigned'"),
                 1);
    cr_expect_eq(allocations_in(db, "arrays", ""), 4);
    sqlite3_close(db);
    tu_result_free(&r);
}

Test(graph_trace, host_registration)
{
    char trace[512];
    tu_path(trace, sizeof trace, "register.db");
    struct tu_result r;
    run_ok(&r, trace, ARGV(GRAPH_PROG, "register"));
    sqlite3 *db = tu_open(trace);
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM allocations WHERE api = 'cudaHostRegister' AND memory = 'host' AND "
                        "status = 0 AND address = %lld AND bytes = %lld AND free_api = 'cudaHostUnregister'",
                        tu_kv(r.out, "address"), tu_kv(r.out, "bytes")),
                 1);
    cr_expect_eq(tu_int(db, "SELECT status FROM allocations WHERE api = 'cudaHostRegister' AND status <> 0"),
                 tu_kv(r.out, "again"), "registering it again failed, with the program's error");
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM device_allocations"), 0, "registered memory is host memory");
    sqlite3_close(db);
    tu_result_free(&r);
}

Test(graph_trace, a_pool_reserves_against_what_is_in_use_over_time)
{
    char trace[512];
    tu_path(trace, sizeof trace, "pool.db");
    struct tu_result r;
    run_ok(&r, trace, ARGV(GRAPH_PROG, "pool"));
    sqlite3 *db = tu_open(trace);
    long long handle = tu_kv(r.out, "pool");
    int64_t pool = tu_int(db, "SELECT id FROM memory_pools WHERE handle = %lld AND kind = 'created'", handle);
    /* created empty; then each change the program saw: two allocations grow it, the
     * synchronisation gives the freed part back, the third allocation grows it, the second
     * synchronisation keeps it (under the release threshold), the trim gives it back */
    long long expected[] = {0,
                            tu_kv(r.out, "reserved_1"),
                            tu_kv(r.out, "reserved_2"),
                            tu_kv(r.out, "reserved_3"),
                            tu_kv(r.out, "reserved_4"),
                            tu_kv(r.out, "reserved_5")};
    int count = (int)tu_int(db, "SELECT COUNT(*) FROM pool_samples WHERE pool_id = %lld", (long long)pool);
    cr_expect_eq(count, 6);
    for (int i = 0; i < count && i < 6; i++)
        cr_expect_eq(tu_int(db,
                            "SELECT reserved_bytes FROM pool_samples WHERE pool_id = %lld ORDER BY ns LIMIT 1 "
                            "OFFSET %d",
                            (long long)pool, i),
                     expected[i], "sample %d", i);
    cr_expect_eq(tu_int(db, "SELECT MAX(used_high_bytes) FROM pool_samples WHERE pool_id = %lld", (long long)pool),
                 10 << 20, "1 MiB held while 9 MiB were allocated");
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM pool_allocations WHERE pool_id = %lld", (long long)pool), 3);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM pool_allocations p JOIN memory_pools m ON m.id = p.pool_id WHERE "
                            "m.kind = 'device'"),
                 1, "cudaMallocAsync draws from the device's pool");
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM pool_operations WHERE pool_id = %lld AND api = "
                        "'cudaMemPoolSetAttribute' AND attribute = 4 AND value = %lld",
                        (long long)pool, tu_kv(r.out, "threshold")),
                 1, "cudaMemPoolAttrReleaseThreshold");
    cr_expect_eq(
        tu_int(db, "SELECT COUNT(*) FROM memory_pools WHERE id = %lld AND destroy_ns IS NOT NULL", (long long)pool), 1);
    sqlite3_close(db);
    tu_result_free(&r);
}

Test(graph_trace, an_ipc_mapping_opened_twice_is_one_allocation)
{
    char trace[512], child[600];
    tu_path(trace, sizeof trace, "ipc.db");
    struct tu_result r;
    run_ok(&r, trace, ARGV(GRAPH_PROG, "ipc"));
    cr_expect_eq(tu_kv(r.out, "same"), 1);
    snprintf(child, sizeof child, "%s.%lld", trace, tu_kv(r.out, "child_pid"));
    cr_assert(tu_exists(child), "the child's trace %s", child);
    sqlite3 *db = tu_open(child);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), 1);
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM allocations WHERE api = 'cudaIpcOpenMemHandle' AND memory = 'ipc' AND "
                        "address = %lld AND bytes = %lld AND free_api = 'cudaIpcCloseMemHandle'",
                        tu_kv(r.out, "mapped"), tu_kv(r.out, "bytes")),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors"), 0);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM device_allocations"), 0, "another process's memory");
    sqlite3_close(db);
    tu_result_free(&r);
}

Test(graph_trace, capture_modes_and_invalidated_captures)
{
    char trace[512];
    tu_path(trace, sizeof trace, "modes.db");
    struct tu_result r;
    run_ok(&r, trace, ARGV(GRAPH_PROG, "modes"));
    sqlite3 *db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM captures"), 2);
    cr_expect_eq(tu_int(db, "SELECT end_status FROM captures WHERE mode = 'global'"), tu_kv(r.out, "ended"));
    cr_expect_eq(tu_int(db, "SELECT end_status FROM captures WHERE mode = 'relaxed'"), 0);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM captured_calls c JOIN captures p ON p.id = c.capture_id WHERE "
                            "p.mode = 'global' AND c.kind = 'allocation' AND c.bytes = 256"),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM captured_calls c JOIN captures p ON p.id = c.capture_id WHERE "
                            "p.mode = 'relaxed'"),
                 2, "an allocation and a free");
    cr_expect_eq(tu_int(db, "SELECT status FROM allocations WHERE api = 'cudaMalloc' AND status <> 0"),
                 tu_kv(r.out, "prohibited"));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE status = 0"), 1,
                 "only the cudaMalloc that ran: it is not stream-ordered");
    sqlite3_close(db);
    tu_result_free(&r);
}

Test(graph_trace, captures_and_launches_on_several_threads)
{
    char trace[512];
    tu_path(trace, sizeof trace, "threads.db");
    struct tu_result r;
    run_ok(&r, trace, ARGV(GRAPH_PROG, "threads", "4", "25"));
    long long t = tu_kv(r.out, "threads"), k = tu_kv(r.out, "launches");
    sqlite3 *db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM captures WHERE mode = 'thread-local' AND end_status = 0 AND "
                            "calls = 3"),
                 t);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE api = 'cudaMallocAsync'"), 0);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE api = 'cudaGraphLaunch' AND free_api = "
                            "'cudaGraphLaunch'"),
                 t * k);
    for (int i = 0; i < t; i++) {
        char node[32], extra[64];
        snprintf(node, sizeof node, "thread-%d", i);
        snprintf(extra, sizeof extra, "AND a.bytes = %d AND a.free_thread_id = a.thread_id", 4096 * (i + 1));
        cr_expect_eq(allocations_in(db, node, extra), k, "thread %d: its own graph's memory, in its node", i);
    }
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors"), 0);
    sqlite3_close(db);
    tu_result_free(&r);
}

Test(graph_trace, a_recovered_spool_gives_the_same_graph_tables)
{
    char trace[512], spool[600], env_collect[] = "WSTRACE_COLLECT=0";
    tu_path(trace, sizeof trace, "spool.db");
    struct tu_result r;
    tu_run_traced(&r, trace, (const char *const[]){env_collect, NULL}, ARGV(GRAPH_PROG, "memnodes", "2", "5"));
    cr_assert(r.exited && r.code == 0, "%s", r.err);
    snprintf(spool, sizeof spool, "%s.spool", trace);
    wstrace_ok(ARGV(TU_WSTRACE, "collect", spool));
    sqlite3 *db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE api = 'cudaGraphLaunch'"), 7);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM captured_calls"), 3);
    sqlite3_close(db);
    tu_result_free(&r);
}

/* ---- schema/README.md: the graph, capture and pool example queries on traces that hold them ---- */

/* The SQL of the example whose title line starts with `title` (freed by the caller). */
static char *example_query(const char *title)
{
    char *doc = tu_read_file(WS_SOURCE_DIR "/schema/README.md", NULL);
    char *at = strstr(doc, title), *sql, *end;
    cr_assert_not_null(at, "schema/README.md has no example \"%s\"", title);
    sql = strstr(at, "```sql\n");
    cr_assert_not_null(sql);
    sql += 7;
    end = strstr(sql, "```");
    cr_assert_not_null(end);
    *end = 0;
    char *copy = strdup(sql);
    free(doc);
    return copy;
}

/* Runs sql; each row's columns joined by '|', rows by '\n'. */
static char *rows_of(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s\n%s", sqlite3_errmsg(db), sql);
    size_t cap = 4096, n = 0;
    char *out = calloc(1, cap);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            const char *v = (const char *)sqlite3_column_text(st, i);
            n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? "|" : "", v ? v : "NULL");
        }
        n += (size_t)snprintf(out + n, cap - n, "\n");
        cr_assert_lt(n, cap - 256, "too many rows");
    }
    cr_assert_eq(rc, SQLITE_DONE, "%s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return out;
}

Test(graph_trace, schema_readme_graph_examples)
{
    char trace[512], pools[512], expect[512];
    struct tu_result r, p;
    tu_path(trace, sizeof trace, "examples.db");
    tu_path(pools, sizeof pools, "examples-pool.db");
    run_ok(&r, trace, ARGV(GRAPH_PROG, "memnodes", "2", "6"));
    run_ok(&p, pools, ARGV(GRAPH_PROG, "pool"));
    sqlite3 *db = tu_open(trace);

    /* instance 1: the explicit graph (not captured), 2 launches; instance 2: the captured one, 6 */
    char *sql = example_query("What each graph launch ran, per instance:"), *rows = rows_of(db, sql);
    cr_expect_str_eq(rows, "1|cudaGraphInstantiate|0|2|2|2|2\n2|cudaGraphInstantiate|1|6|6|6|6\n");
    free(sql);
    free(rows);

    sql = example_query("Calls that stream capture recorded instead of running, per capture:");
    rows = rows_of(db, sql);
    snprintf(expect, sizeof expect, "1|global|0|allocation|1|%lld\n1|global|0|free|1|0\n1|global|0|kernel|1|0\n",
             tu_kv(r.out, "captured_bytes"));
    cr_expect_str_eq(rows, expect);
    free(sql);
    free(rows);
    sqlite3_close(db);

    /* the created pool reserved at most what the program read after its third allocation (the
     * largest it printed); the device's pool served one 3 MiB allocation */
    db = tu_open(pools);
    sql = example_query("What each memory pool reserved against what was in use, at its peak:");
    rows = rows_of(db, sql);
    snprintf(expect, sizeof expect, "1|created|%lld|%lld|%d|3\n", tu_kv(p.out, "pool"), tu_kv(p.out, "reserved_4"),
             10 << 20);
    cr_expect(strncmp(rows, expect, strlen(expect)) == 0, "%s\nexpected first row %s", rows, expect);
    cr_expect(strstr(rows, "|device|") != NULL, "%s", rows);
    free(sql);
    free(rows);
    sqlite3_close(db);
    tu_result_free(&r);
    tu_result_free(&p);
}

/* ---- an nvcc-built program: graphs with memory nodes through the real launch path ---- */

#ifdef WS_GRAPH_GPU_PROG
/* sum of 3i + seed for i < n, by hand: 3 n (n - 1) / 2 + seed n */
static unsigned long long fill_sum(unsigned long long n, unsigned long long seed)
{
    return 3 * n * (n - 1) / 2 + seed * n;
}

Test(graph_trace, nvcc_built_graphs_on_the_simulated_device)
{
    char trace[512], sim_path[600];
    tu_path(trace, sizeof trace, "nvcc.db");
    snprintf(sim_path, sizeof sim_path, "LD_LIBRARY_PATH=%s/lib/sim", WS_BUILD_DIR);
    struct tu_result r;
    tu_run_traced(&r, trace, (const char *const[]){sim_path, NULL}, ARGV(WS_GRAPH_GPU_PROG, "3", "2"));
    cr_assert(r.exited && r.code == 0, "graph_gpu: exit %d\n%s\n%s", r.code, r.out, r.err);
    cr_assert(strstr(r.out, "device=sim\n") != NULL, "%s", r.out);
    for (int i = 0; i < 5; i++) {
        char key[16];
        snprintf(key, sizeof key, "sum_%d", i);
        cr_expect_eq((unsigned long long)tu_kv(r.out, key), fill_sum(1u << 18, i < 3 ? 7 : 11), "%s", key);
    }
    sqlite3 *db = tu_open(trace);
    long long launches = tu_kv(r.out, "explicit_launches") + tu_kv(r.out, "captured_launches");
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM allocations WHERE api = 'cudaGraphLaunch' AND bytes = %lld AND "
                        "free_api = 'cudaGraphLaunch'",
                        tu_kv(r.out, "graph_bytes")),
                 launches);
    cr_expect_eq(kernels_named(db, "graph_gpu_fill") + kernels_named(db, "graph_gpu_sum"), tu_kv(r.out, "kernels"));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM captured_calls c JOIN strings k ON k.id = c.kernel_name_id WHERE "
                            "c.api = '__cudaLaunchKernel' AND k.value IN ('graph_gpu_fill', 'graph_gpu_sum')"),
                 2, "the <<<>>> launches were captured, with their names");
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM captured_calls WHERE kind IN ('allocation', 'free')"), 2);
    cr_expect_eq(tu_int(db, "SELECT MAX(used_high_bytes) FROM pool_samples s JOIN memory_pools p ON p.id = s.pool_id "
                            "WHERE p.kind = 'graph'"),
                 tu_kv(r.out, "footprint_high"));
    sqlite3_close(db);
    tu_result_free(&r);
}
#else
/* Built only with nvcc (WSTRACE_HAVE_NVCC); without it the test is reported as skipped. */
Test(graph_trace, nvcc_built_graphs_on_the_simulated_device)
{
    cr_skip_test("nvcc was not found when this build was configured: no nvcc-built program to run");
}
#endif
