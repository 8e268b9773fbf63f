/* The driver layer end to end: programs on the simulated driver under libwstrace.so, their traces
 * checked with SQL against the counts the programs made themselves (their "key=value" output). */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record_sizes.h"
#include "trace_util.h"

#define SIM_PATH     "LD_LIBRARY_PATH=" WS_BUILD_DIR "/lib/sim"
#define HANDOFF_PATH "LD_LIBRARY_PATH=" WS_BUILD_DIR "/lib/driver-handoff:" WS_BUILD_DIR "/lib/sim"
#define PROG(name)   WS_BUILD_DIR "/tests/" name

/* Runs a program under the tracer; asserts that it passed; opens its trace. */
static sqlite3 *traced(struct tu_result *r, const char *path_env, const char *prog, const char *scenario)
{
    char trace[512];
    tu_path(trace, sizeof trace, scenario ? scenario : "trace");
    strncat(trace, ".db", sizeof trace - strlen(trace) - 1);
    const char *env[] = {path_env, NULL};
    const char *argv[] = {prog, scenario, NULL};
    tu_run_traced(r, trace, env, argv);
    cr_assert(r->exited && r->code == 0, "%s %s failed (%d):\n%s%s", prog, scenario ? scenario : "", r->code, r->out,
              r->err);
    return tu_open(trace);
}

/* Successful allocations rows of an api, and of its frees. */
static int64_t allocs_of(sqlite3 *db, const char *api)
{
    return tu_int(db, "SELECT COUNT(*) FROM allocations WHERE api = '%s' AND status = 0", api);
}
static int64_t frees_of(sqlite3 *db, const char *api)
{
    return tu_int(db, "SELECT COUNT(*) FROM allocations WHERE free_api = '%s'", api);
}
static int64_t launches_of(sqlite3 *db, const char *api)
{
    return tu_int(db, "SELECT COUNT(*) FROM launches WHERE api = '%s' AND status = 0", api);
}

/* Rows of allocations and launches that came through a layer other than `layer`. */
static int64_t rows_not_of(sqlite3 *db, const char *layer)
{
    return tu_int(db,
                  "SELECT (SELECT COUNT(*) FROM allocations a JOIN api_layers l USING (api) WHERE l.layer <> '%s') + "
                  "(SELECT COUNT(*) FROM launches x JOIN api_layers l USING (api) WHERE l.layer <> '%s')",
                  layer, layer);
}

TestSuite(driver, .fini = tu_cleanup);

Test(driver, direct_driver_calls_are_traced_under_their_versioned_names)
{
    struct tu_result r;
    sqlite3 *db = traced(&r, SIM_PATH, PROG("driver_prog"), "direct");
    static const char *const allocs[] = {"cuMemAlloc_v2",          "cuMemAllocPitch_v2", "cuMemAllocManaged",
                                         "cuMemAllocHost_v2",      "cuMemHostAlloc",     "cuMemAllocAsync",
                                         "cuMemAllocFromPoolAsync"};
    for (size_t i = 0; i < sizeof allocs / sizeof allocs[0]; i++)
        cr_expect_eq(allocs_of(db, allocs[i]), tu_kv(r.out, allocs[i]), "%s", allocs[i]);
    static const char *const frees[] = {"cuMemFree_v2", "cuMemFreeHost", "cuMemFreeAsync"};
    for (size_t i = 0; i < sizeof frees / sizeof frees[0]; i++)
        cr_expect_eq(frees_of(db, frees[i]), tu_kv(r.out, frees[i]), "%s", frees[i]);
    static const char *const launches[] = {"cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel"};
    for (size_t i = 0; i < sizeof launches / sizeof launches[0]; i++)
        cr_expect_eq(launches_of(db, launches[i]), tu_kv(r.out, launches[i]), "%s", launches[i]);
    /* every allocation was freed, and every row is of the driver layer */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE free_ns IS NULL"), 0);
    cr_expect_eq(rows_not_of(db, "driver"), 0);
    /* sizes and memory kinds as the program asked: 1000 + 2000 + 3000 bytes; pitch * 10 rows */
    cr_expect_eq(tu_int(db, "SELECT SUM(bytes) FROM allocations WHERE api = 'cuMemAlloc_v2'"), 6000);
    cr_expect_eq(tu_int(db, "SELECT bytes FROM allocations WHERE api = 'cuMemAllocPitch_v2'"),
                 tu_kv(r.out, "pitch") * 10);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE memory = 'managed'"), 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE memory = 'host'"), 2);
    /* launches carry their geometry and the name the driver gives the function */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM launches WHERE api = 'cuLaunchKernel' AND grid_x = 2 AND grid_y = 3 "
                            "AND block_x = 32 AND block_y = 2"),
                 tu_kv(r.out, "cuLaunchKernel"));
    cr_expect_eq(tu_int(db, "SELECT grid_x FROM launches WHERE api = 'cuLaunchKernelEx'"), 7);
    /* the pool: created, its allocation linked to it, trimmed, destroyed; the device's own pool
     * served the cuMemAllocAsync calls */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM memory_pools WHERE kind = 'created' AND destroy_ns IS NOT NULL"),
                 tu_kv(r.out, "pools"));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM pool_allocations pa JOIN memory_pools p ON p.id = pa.pool_id "
                            "JOIN allocations a ON a.id = pa.allocation_id "
                            "WHERE p.kind = 'created' AND a.api = 'cuMemAllocFromPoolAsync'"),
                 tu_kv(r.out, "cuMemAllocFromPoolAsync"));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM pool_allocations pa JOIN memory_pools p ON p.id = pa.pool_id "
                            "JOIN allocations a ON a.id = pa.allocation_id "
                            "WHERE p.kind = 'device' AND a.api = 'cuMemAllocAsync'"),
                 tu_kv(r.out, "cuMemAllocAsync"));
    cr_expect_eq(
        tu_int(db, "SELECT COUNT(*) FROM pool_operations WHERE api IN ('cuMemPoolTrimTo', 'cuMemPoolDestroy')"), 2);
    cr_expect_eq(tu_int(db, "SELECT value FROM pool_operations WHERE api = 'cuMemPoolSetAttribute' AND attribute = %d",
                        4 /* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */),
                 1 << 20);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM launches l JOIN strings s ON s.id = l.kernel_name_id "
                            "WHERE s.value = 'touch_kernel'"),
                 tu_kv(r.out, "cuLaunchKernel") + tu_kv(r.out, "cuLaunchKernelEx") +
                     tu_kv(r.out, "cuLaunchCooperativeKernel"));
    sqlite3_close(db);
    tu_result_free(&r);
}

Test(driver, virtual_memory_is_physical_allocations_and_their_mappings)
{
    struct tu_result r;
    sqlite3 *db = traced(&r, SIM_PATH, PROG("driver_prog"), "vmm");
    long long granule = tu_kv(r.out, "granule"), creates = tu_kv(r.out, "creates");
    cr_assert_gt(granule, 0);
    cr_expect_eq(allocs_of(db, "cuMemCreate"), creates);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE api = 'cuMemCreate' AND bytes = %lld", granule),
                 creates);
    /* chunks 0 and 1 were released while mapped: given back at the unmap; chunk 2 at its release */
    cr_expect_eq(frees_of(db, "cuMemUnmap"), 2);
    cr_expect_eq(frees_of(db, "cuMemRelease"), 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM vmm_mappings"), tu_kv(r.out, "maps"));
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM vmm_mappings m JOIN allocations a ON a.id = m.allocation_id "
                        "WHERE m.unmap_ns IS NOT NULL AND m.bytes = %lld AND a.address = m.handle",
                        granule),
                 tu_kv(r.out, "maps"));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM vmm_mappings m JOIN allocations a ON a.id = m.allocation_id "
                            "WHERE a.free_api = 'cuMemUnmap' AND a.free_ns = m.unmap_ns"),
                 2);
    cr_expect_eq(tu_int(db, "SELECT COUNT(DISTINCT address) FROM vmm_mappings"), tu_kv(r.out, "maps"));
    cr_expect_eq(
        tu_int(db, "SELECT COUNT(*) FROM vmm_reservations WHERE bytes = %lld AND free_ns IS NOT NULL", 3 * granule),
        tu_kv(r.out, "reserves"));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors"), 0);
    /* the analysis counts physical memory like any device allocation: all three chunks live at once */
    cr_expect_eq(tu_int(db, "SELECT MAX(live_bytes) FROM live_bytes"), 3 * granule);
    sqlite3_close(db);
    char trace[512];
    tu_path(trace, sizeof trace, "vmm.db");
    struct tu_result l;
    const char *argv[] = {TU_WSTRACE, "lifetimes", trace, NULL};
    tu_run(&l, NULL, argv);
    cr_assert(l.exited && l.code == 0, "wstrace lifetimes failed:\n%s%s", l.out, l.err);
    db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM lifetimes"), creates);
    cr_expect_eq(tu_int(db, "SELECT SUM(bytes) FROM lifetimes"), creates * granule);
    sqlite3_close(db);
    tu_result_free(&l);
    tu_result_free(&r);
}

Test(driver, physical_memory_is_given_back_at_its_last_reference_and_imports_free_nothing)
{
    struct tu_result r;
    sqlite3 *db = traced(&r, SIM_PATH, PROG("driver_prog"), "vmm_refs");
    long long granule = tu_kv(r.out, "granule");
    /* the program made two chunks; the imported one is another owner's (no row of its own) */
    cr_expect_eq(allocs_of(db, "cuMemCreate"), tu_kv(r.out, "creates"));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE api = 'cuMemCreate' AND bytes = %lld", granule),
                 2);
    /* the retained chunk lives past the marker allocation: freed by its second release */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations a, allocations m WHERE a.api = 'cuMemCreate' "
                            "AND m.api = 'cuMemAlloc_v2' AND a.free_api = 'cuMemRelease' AND a.alloc_ns < m.alloc_ns "
                            "AND a.free_ns > m.alloc_ns"),
                 1);
    cr_expect_eq(frees_of(db, "cuMemRelease"), 2);
    cr_expect_eq(frees_of(db, "cuMemUnmap"), 0);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM vmm_mappings WHERE unmap_ns IS NOT NULL"), tu_kv(r.out, "maps"));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM vmm_mappings WHERE allocation_id IS NULL"), 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors"), 0);
    sqlite3_close(db);
    tu_result_free(&r);
}

Test(driver, driver_graphs_allocate_at_each_launch_never_at_capture)
{
    struct tu_result r;
    sqlite3 *db = traced(&r, SIM_PATH, PROG("driver_prog"), "graph");
    long long n = tu_kv(r.out, "graph_launches"), m = tu_kv(r.out, "captured_launches");
    cr_assert(n > 0 && m > 0);
    /* N launches of the memory node's graph, M of the captured allocation's: N + M allocations */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE status = 0"), n + m);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE api = 'cuGraphLaunch' AND bytes = %lld",
                        tu_kv(r.out, "node_bytes")),
                 n);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE api = 'cuGraphLaunch' AND bytes = %lld",
                        tu_kv(r.out, "captured_bytes")),
                 m);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE free_ns IS NULL"), 0);
    /* the captured calls were recorded as captured, not run */
    cr_expect_eq(
        tu_int(db, "SELECT COUNT(*) FROM captured_calls WHERE api = 'cuMemAllocAsync' AND kind = 'allocation'"), 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM captured_calls WHERE api = 'cuLaunchKernel' AND kind = 'kernel'"), 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM captures WHERE begin_api = 'cuStreamBeginCapture_v2'"), 1);
    /* each launch ran the graph's kernel once */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM graph_launches WHERE status = 0"), n + m);
    cr_expect_eq(tu_int(db, "SELECT SUM(kernels) FROM graph_launches"), n + m);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM launches l JOIN strings s ON s.id = l.kernel_name_id "
                            "WHERE l.api = 'cuGraphLaunch' AND s.value = 'touch_kernel'"),
                 n + m);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM graph_execs WHERE api IN ('cuGraphInstantiateWithFlags')"), 2);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors"), 0);
    sqlite3_close(db);
    tu_result_free(&r);
}

Test(driver, per_thread_default_stream_builds_use_the_ptsz_forms)
{
    struct tu_result r;
    sqlite3 *db = traced(&r, SIM_PATH, PROG("driver_ptsz_prog"), NULL);
    cr_expect_eq(allocs_of(db, "cuMemAllocAsync_ptsz"), tu_kv(r.out, "allocs"));
    cr_expect_eq(frees_of(db, "cuMemFreeAsync_ptsz"), tu_kv(r.out, "frees"));
    cr_expect_eq(launches_of(db, "cuLaunchKernel_ptsz"), tu_kv(r.out, "launches"));
    cr_expect_eq(launches_of(db, "cuLaunchKernelEx_ptsz"), tu_kv(r.out, "launches_ex"));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE api NOT LIKE '%%\\_ptsz' ESCAPE '\\'"), 0);
    sqlite3_close(db);
    tu_result_free(&r);
}

Test(driver, a_library_that_loads_the_driver_itself_is_traced_through_cuGetProcAddress)
{
    struct tu_result r;
    /* the library's dlsym(handle, "cuGetProcAddress_v2") is answered with the tracer's lookup */
    sqlite3 *db = traced(&r, SIM_PATH, PROG("driver_blas_prog"), NULL);
    /* the workspace (1 MiB) and the stream-ordered scratch (64 KiB) of every call */
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM allocations WHERE api = 'cuMemAlloc_v2' AND bytes = %d "
                        "AND free_api = 'cuMemFree_v2'",
                        1 << 20),
                 tu_kv(r.out, "allocs"));
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM allocations WHERE api = 'cuMemAllocAsync' AND bytes = %d "
                        "AND free_api = 'cuMemFreeAsync'",
                        64 << 10),
                 tu_kv(r.out, "async_allocs"));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM launches l JOIN strings s ON s.id = l.kernel_name_id "
                            "WHERE l.api = 'cuLaunchKernel' AND s.value = 'fakeblas_gemm_kernel'"),
                 tu_kv(r.out, "launches"));
    cr_expect_eq(launches_of(db, "cuLaunchKernelEx"), tu_kv(r.out, "launches_ex"));
    cr_expect_eq(rows_not_of(db, "driver"), 0);
    sqlite3_close(db);
    tu_result_free(&r);
}

Test(driver, a_runtime_call_that_reaches_the_driver_is_recorded_once_at_the_runtime)
{
    struct tu_result r;
    sqlite3 *db = traced(&r, HANDOFF_PATH, PROG("driver_layers_prog"), "runtime");
    /* the simulated cudart found the driver through the lookup and was given the tracer's hooks
     * (cuMemAlloc_v2, cuMemFree_v2, cuLaunchKernel and more), which its calls then went through */
    cr_expect_geq(tu_kv(r.out, "handoff.hooked"), 3);
    static const char *const allocs[] = {"cudaMalloc", "cudaMallocHost"};
    for (size_t i = 0; i < 2; i++)
        cr_expect_eq(allocs_of(db, allocs[i]), tu_kv(r.out, allocs[i]), "%s", allocs[i]);
    cr_expect_eq(frees_of(db, "cudaFree"), tu_kv(r.out, "cudaFree"));
    cr_expect_eq(frees_of(db, "cudaFreeHost"), tu_kv(r.out, "cudaFreeHost"));
    cr_expect_eq(launches_of(db, "cudaLaunchKernel"), tu_kv(r.out, "cudaLaunchKernel"));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"),
                 tu_kv(r.out, "cudaMalloc") + tu_kv(r.out, "cudaMallocHost"));
    cr_expect_eq(rows_not_of(db, "runtime"), 0, "no call was recorded a second time at the driver");
    sqlite3_close(db);
    tu_result_free(&r);
    /* the same without the observer in front of the driver: the runtime's own lookup through its
     * libcuda handle is answered by the tracer, and nothing is recorded twice */
    db = traced(&r, SIM_PATH, PROG("driver_layers_prog"), "runtime");
    cr_expect_eq(allocs_of(db, "cudaMalloc"), tu_kv(r.out, "cudaMalloc"));
    cr_expect_eq(launches_of(db, "cudaLaunchKernel"), tu_kv(r.out, "cudaLaunchKernel"));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"),
                 tu_kv(r.out, "cudaMalloc") + tu_kv(r.out, "cudaMallocHost"));
    cr_expect_eq(rows_not_of(db, "runtime"), 0);
    sqlite3_close(db);
    tu_result_free(&r);
}

Test(driver, driver_entry_points_from_the_runtime_are_the_traced_ones)
{
    struct tu_result r;
    sqlite3 *db = traced(&r, SIM_PATH, PROG("driver_layers_prog"), "entry");
    cr_expect_eq(allocs_of(db, "cuMemAlloc_v2"), tu_kv(r.out, "cuMemAlloc_v2"));
    cr_expect_eq(frees_of(db, "cuMemFree_v2"), tu_kv(r.out, "cuMemFree_v2"));
    /* asked for with cudaEnablePerThreadDefaultStream: the per-thread forms */
    cr_expect_eq(allocs_of(db, "cuMemAllocAsync_ptsz"), tu_kv(r.out, "cuMemAllocAsync_ptsz"));
    cr_expect_eq(frees_of(db, "cuMemFreeAsync_ptsz"), tu_kv(r.out, "cuMemFreeAsync_ptsz"));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"),
                 tu_kv(r.out, "cuMemAlloc_v2") + tu_kv(r.out, "cuMemAllocAsync_ptsz"));
    sqlite3_close(db);
    tu_result_free(&r);
}

Test(driver, driver_arrays_and_host_registration_are_allocations)
{
    struct tu_result r;
    sqlite3 *db = traced(&r, SIM_PATH, PROG("driver_prog"), "arrays");
    static const struct {
        const char *api, *kind, *key, *free_api;
    } arrays[] = {{"cuArrayCreate_v2", "array", "array_bytes", "cuArrayDestroy"},
                  {"cuArray3DCreate_v2", "3d-array", "array3d_bytes", "cuArrayDestroy"},
                  {"cuMipmappedArrayCreate", "mipmapped-array", "mipmapped_bytes", "cuMipmappedArrayDestroy"}};
    for (size_t i = 0; i < 3; i++)
        cr_expect_eq(tu_int(db,
                            "SELECT COUNT(*) FROM allocations a JOIN array_allocations x ON x.allocation_id = a.id "
                            "WHERE a.api = '%s' AND x.kind = '%s' AND a.bytes = %lld AND a.free_api = '%s'",
                            arrays[i].api, arrays[i].kind, tu_kv(r.out, arrays[i].key), arrays[i].free_api),
                     1, "%s", arrays[i].api);
    cr_expect_eq(tu_int(db, "SELECT levels FROM array_allocations WHERE kind = 'mipmapped-array'"), 3);
    cr_expect_eq(tu_int(db, "SELECT bits_x + bits_y + bits_z + bits_w FROM array_allocations WHERE kind = 'array'"),
                 4 * 32);
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM allocations WHERE api = 'cuMemHostRegister_v2' AND memory = 'host' "
                        "AND bytes = %lld AND free_api = 'cuMemHostUnregister'",
                        tu_kv(r.out, "registered_bytes")),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors"), 0);
    sqlite3_close(db);
    tu_result_free(&r);
}

Test(driver, a_driver_ipc_mapping_opened_twice_is_one_allocation)
{
    struct tu_result r;
    sqlite3 *db = traced(&r, SIM_PATH, PROG("driver_prog"), "ipc");
    sqlite3_close(db);
    cr_expect_eq(tu_kv(r.out, "same"), 1);
    char trace[512], child[600];
    tu_path(trace, sizeof trace, "ipc.db");
    snprintf(child, sizeof child, "%s.%lld", trace, tu_kv(r.out, "child_pid"));
    cr_assert(tu_exists(child), "the child's trace %s", child);
    db = tu_open(child);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), 1);
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM allocations WHERE api = 'cuIpcOpenMemHandle_v2' AND memory = 'ipc' AND "
                        "address = %lld AND bytes = %lld AND free_api = 'cuIpcCloseMemHandle'",
                        tu_kv(r.out, "mapped"), tu_kv(r.out, "bytes")),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors"), 0);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM device_allocations"), 0, "another process's memory");
    /* The child's one launch (driver_prog ipc), of a kernel the parent had named before the fork:
     * the child's trace must name it too. */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM launches l JOIN strings s ON s.id = l.kernel_name_id "
                            "WHERE s.value = 'touch_kernel'"),
                 1, "a kernel launched in a forked child is named in the child's trace");
    sqlite3_close(db);
    tu_result_free(&r);
}

Test(driver, the_api_layers_view_names_every_layer)
{
    struct tu_result r;
    sqlite3 *db = traced(&r, SIM_PATH, PROG("driver_prog"), "direct");
    char *layer = tu_text(db, "SELECT layer FROM api_layers WHERE api = 'cuMemAlloc_v2'");
    cr_expect_str_eq(layer, "driver");
    free(layer);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_layers WHERE layer <> 'driver'"), 0);
    sqlite3_close(db);
    tu_result_free(&r);
}

/* wstrace merge keeps every table of every driver trace (virtual memory mappings and
 * reservations, arrays, pools, graphs), each row with its own process: the merged trace holds
 * the sum of its inputs' rows, and each input's mappings are the ones its program made. */
Test(driver, a_merge_keeps_every_table_of_every_process)
{
    static const char *const scenarios[] = {"vmm", "vmm_refs", "arrays", "graph", "direct"};
    enum { N = sizeof scenarios / sizeof scenarios[0] };
    char in[N][512], merged[512];
    long long maps[N] = {0};
    for (int i = 0; i < N; i++) {
        struct tu_result r;
        sqlite3_close(traced(&r, SIM_PATH, PROG("driver_prog"), scenarios[i]));
        if (strstr(r.out, "maps="))
            maps[i] = tu_kv(r.out, "maps");
        tu_result_free(&r);
        tu_path(in[i], sizeof in[i], scenarios[i]);
        strncat(in[i], ".db", sizeof in[i] - strlen(in[i]) - 1);
    }
    cr_assert_eq(maps[0], 3, "driver_prog vmm maps three chunks");
    cr_assert_eq(maps[1], 2, "driver_prog vmm_refs maps two");
    tu_path(merged, sizeof merged, "merged.db");
    struct tu_result mr;
    const char *argv[] = {TU_WSTRACE, "merge", "-o", merged, in[0], in[1], in[2], in[3], in[4], NULL};
    tu_run(&mr, NULL, argv);
    cr_assert(mr.exited && mr.code == 0, "wstrace merge failed:\n%s%s", mr.out, mr.err);
    tu_result_free(&mr);
    sqlite3 *db = tu_open(merged), *part[N];
    for (int i = 0; i < N; i++)
        part[i] = tu_open(in[i]);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('meta',"
                                    " 'strings', 'domains', 'categories', 'processes', 'process_meta')",
                                    -1, &st, NULL),
                 SQLITE_OK);
    int tables = 0, vmm_tables = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        int64_t sum = 0;
        for (int i = 0; i < N; i++)
            sum += tu_int(part[i], "SELECT COUNT(*) FROM \"%s\"", t);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM \"%s\"", t), sum, "table %s", t);
        tables++;
        vmm_tables += !strcmp(t, "vmm_mappings") || !strcmp(t, "vmm_reservations");
    }
    sqlite3_finalize(st);
    cr_expect_eq(vmm_tables, 2);
    cr_expect_geq(tables, 30);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM processes"), N);
    /* processes come in the order of the inputs: each one's mappings are its own program's */
    for (int i = 0; i < N; i++)
        cr_expect_eq(tu_int(db,
                            "SELECT COUNT(*) FROM vmm_mappings m JOIN threads t ON t.id = m.thread_id"
                            " WHERE t.process_id = %d",
                            i + 1),
                     maps[i], "%s", scenarios[i]);
    /* every mapping's physical memory (NULL for the imported one), unmapping thread and range
     * are of its own process */
    int64_t with_memory = 0;
    for (int i = 0; i < N; i++)
        with_memory += tu_int(part[i], "SELECT COUNT(*) FROM vmm_mappings WHERE allocation_id IS NOT NULL");
    cr_expect_eq(with_memory, maps[0] + maps[1] - 1, "the imported mapping has no physical memory of its own");
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM vmm_mappings m JOIN threads t ON t.id = m.thread_id"
                            " JOIN allocations a ON a.id = m.allocation_id JOIN threads u ON u.id = a.thread_id"
                            " WHERE t.process_id = u.process_id AND a.address = m.handle"),
                 with_memory);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM vmm_mappings m JOIN threads t ON t.id = m.thread_id"
                            " LEFT JOIN threads v ON v.id = m.unmap_thread_id LEFT JOIN ranges r ON r.id = m.range_id"
                            " LEFT JOIN threads w ON w.id = r.thread_id"
                            " WHERE v.process_id <> t.process_id OR w.process_id <> t.process_id"),
                 0);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM vmm_reservations r JOIN threads t ON t.id = r.thread_id"
                            " WHERE t.process_id IN (1, 2) AND r.free_ns IS NOT NULL"),
                 2);
    /* arrays and pools keep their allocations */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM array_allocations x JOIN allocations a ON a.id = x.allocation_id"
                            " JOIN threads t ON t.id = a.thread_id WHERE t.process_id = 3"),
                 tu_int(part[2], "SELECT COUNT(*) FROM array_allocations"));
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM pool_allocations p JOIN memory_pools q ON q.id = p.pool_id"
                            " JOIN allocations a ON a.id = p.allocation_id JOIN threads t ON t.id = a.thread_id"
                            " JOIN threads u ON u.id = q.thread_id WHERE t.process_id <> u.process_id"),
                 0);
    for (int i = 0; i < N; i++)
        sqlite3_close(part[i]);
    sqlite3_close(db);
}

/* Streams made and destroyed one after another by worker threads (as programs that overlap work
 * per thread do) stay apart in the trace: each worker's launches carry its own stream, the
 * handle it printed, and no other worker's; cudaSetDevice leaves a context current; the stream
 * attributes and the L2 reset they call succeed; the program's exit status and output are
 * unchanged under the tracer.  The Chrome export then draws one kernel track per stream. */
Test(driver, streams_destroyed_and_made_again_stay_apart)
{
    struct tu_result plain, r;
    const char *env[] = {SIM_PATH, NULL};
    const char *argv[] = {PROG("driver_streams_prog"), NULL};
    tu_run(&plain, env, argv);
    cr_assert(plain.exited && plain.code == 0, "untraced: %d\n%s%s", plain.code, plain.out, plain.err);
    sqlite3 *db = traced(&r, SIM_PATH, PROG("driver_streams_prog"), NULL);
    long long workers = tu_kv(r.out, "workers"), per = tu_kv(r.out, "launches_per_worker");
    cr_assert_eq(workers, 6);
    cr_expect_eq(tu_kv(r.out, "context_after_set_device"), 1);
    cr_expect_eq(tu_lines(r.out), tu_lines(plain.out), "the output is unchanged");
    for (long long i = 0; i < workers; i++) {
        char key[32];
        snprintf(key, sizeof key, "stream%lld", i);
        long long stream = tu_kv(r.out, key);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM launches WHERE stream = %lld AND status = 0", stream), per,
                     "worker %lld's stream", i);
        cr_expect_eq(tu_int(db, "SELECT COUNT(DISTINCT thread_id) FROM launches WHERE stream = %lld", stream), 1,
                     "worker %lld's stream is launched on by one thread only", i);
    }
    cr_expect_eq(tu_int(db, "SELECT COUNT(DISTINCT stream) FROM launches WHERE stream IS NOT NULL"), workers + 2);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM launches WHERE status = 0"),
                 workers * per + tu_kv(r.out, "priority_launches"));
    cr_expect_eq(allocs_of(db, "cudaMalloc"), tu_kv(r.out, "mallocs"));
    cr_expect_eq(frees_of(db, "cudaFree"), tu_kv(r.out, "mallocs"));
    sqlite3_close(db);
    char trace[512], json[512];
    tu_path(trace, sizeof trace, "trace.db");
    tu_path(json, sizeof json, "trace.json");
    struct tu_result e;
    const char *exp[] = {TU_WSTRACE, "export", trace, "--format", "chrome", "-o", json, NULL};
    tu_run(&e, NULL, exp);
    cr_assert(e.exited && e.code == 0, "export: %s", e.err);
    size_t len = 0;
    char *text = tu_read_file(json, &len);
    int tracks = 0;
    for (const char *p = text; (p = strstr(p, "\"name\":\"stream 0x")) != NULL; p++)
        tracks++;
    cr_expect_eq(tracks, workers + 2, "one kernel track per stream");
    free(text);
    tu_result_free(&e);
    tu_result_free(&r);
    tu_result_free(&plain);
}

/*
 * The driver's allocation, free and launch hooks record in two ways: timed by the counter, their
 * leaf fills the record before the real call and publishes it after; with WSTRACE_CLOCK=monotonic
 * they record after the call by their general path.  Both give the same rows (times aside).  On a
 * machine whose clock source is not the counter both runs take the general path.
 */
#define STREAM_MADE "(SELECT MIN(stream) FROM launches)"
Test(driver, hot_hooks_record_the_same_rows_under_either_clock)
{
    /* addresses and stream handles differ from run to run: each is rendered as whether it is there
     * and, for streams, whether it is the stream the program made (its frees matched by address) */
    static const char *const rows[] = {
        "SELECT group_concat(api || ',' || memory || ',' || device || ',' || (address IS NOT NULL) || ',' || "
        "requested_bytes || ',' || bytes || ',' || status || ',' || IFNULL(stream = " STREAM_MADE ", 'null') || "
        "',' || IFNULL(free_api, 'null') || ',' || IFNULL(free_stream = " STREAM_MADE ", 'null'), ';') FROM "
        "(SELECT * FROM allocations ORDER BY id)",
        "SELECT group_concat(api || ',' || IFNULL(s.value, 'null') || ',' || (function IS NOT NULL) || ',' || grid_x "
        "|| ',' || grid_y || ',' || grid_z || ',' || block_x || ',' || block_y || ',' || block_z || ',' || "
        "shared_bytes || ',' || IFNULL(stream = " STREAM_MADE ", 'null') || ',' || status, ';') FROM (SELECT * FROM "
        "launches ORDER BY id) l LEFT JOIN strings s ON s.id = l.kernel_name_id",
        "SELECT COUNT(*) || ',' || IFNULL(SUM(free_ns < alloc_ns), 0) FROM allocations",
    };
    char *got[2][3];
    for (int monotonic = 0; monotonic <= 1; monotonic++) {
        char trace[512];
        tu_path(trace, sizeof trace, monotonic ? "clock_monotonic.db" : "clock_auto.db");
        const char *env[] = {SIM_PATH, monotonic ? "WSTRACE_CLOCK=monotonic" : "WSTRACE_CLOCK=auto", NULL};
        const char *argv[] = {PROG("driver_prog"), "direct", NULL};
        struct tu_result r;
        tu_run_traced(&r, trace, env, argv);
        cr_assert(r.exited && r.code == 0, "driver_prog direct failed (%d):\n%s%s", r.code, r.out, r.err);
        tu_result_free(&r);
        sqlite3 *db = tu_open(trace);
        for (int i = 0; i < 3; i++)
            got[monotonic][i] = tu_text(db, "%s", rows[i]);
        sqlite3_close(db);
    }
    cr_expect_gt(strlen(got[0][1]), 0, "launches recorded");
    cr_expect(strstr(got[0][0], "cuMemAlloc_v2,") && strstr(got[0][0], "cuMemFree_v2"), "%s", got[0][0]);
    cr_expect(strstr(got[0][1], "cuLaunchKernel,touch_kernel,"), "%s", got[0][1]);
    for (int i = 0; i < 3; i++) {
        cr_expect_str_eq(got[0][i], got[1][i], "query %d differs between the clocks", i);
        free(got[0][i]);
        free(got[1][i]);
    }
}

/* ---- the record path ---------------------------------------------------------------------------- */

#define HANDOFF_N         20000
#define HANDOFF_SEED      20260
#define SQLITE_ROW_OK(st) (sqlite3_step(st) == SQLITE_ROW)

/*
 * Thread A allocates, thread B frees what A hands it through a queue, under either clock: the
 * trace has exactly the program's N cudaMalloc rows, the k-th of the sizes the seeded sequence
 * gives (computed here, record_sizes.h), each freed by the other thread no earlier than it was
 * allocated.  The simulated runtime itself allocates nothing: every other allocation row is
 * counted and must be none.
 */
Test(driver, pointers_freed_by_another_thread_keep_their_order_under_either_clock, .timeout = 600)
{
    uint64_t state = HANDOFF_SEED;
    size_t *sizes = malloc(HANDOFF_N * sizeof *sizes);
    cr_assert_not_null(sizes);
    unsigned long long sum = 0;
    for (int k = 0; k < HANDOFF_N; k++)
        sum += sizes[k] = record_next_size(&state);
    char n_arg[32], seed_arg[32];
    snprintf(n_arg, sizeof n_arg, "%d", HANDOFF_N);
    snprintf(seed_arg, sizeof seed_arg, "%d", HANDOFF_SEED);
    for (int monotonic = 0; monotonic <= 1; monotonic++) {
        char trace[512];
        tu_path(trace, sizeof trace, monotonic ? "handoff_monotonic.db" : "handoff_auto.db");
        const char *env[] = {SIM_PATH, monotonic ? "WSTRACE_CLOCK=monotonic" : "WSTRACE_CLOCK=auto", NULL};
        const char *argv[] = {PROG("driver_record_prog"), "handoff", n_arg, seed_arg, NULL};
        struct tu_result r;
        tu_run_traced(&r, trace, env, argv);
        cr_assert(r.exited && r.code == 0, "record_prog handoff failed (%d):\n%s%s", r.code, r.out, r.err);
        cr_assert_eq(tu_kv(r.out, "mallocs"), HANDOFF_N);
        cr_assert_eq(tu_kv(r.out, "frees"), HANDOFF_N);
        cr_expect_eq((unsigned long long)tu_kv(r.out, "sum"), sum, "the program's sizes are the sequence's");
        tu_result_free(&r);
        sqlite3 *db = tu_open(trace);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE api = 'cudaMalloc'"), HANDOFF_N, "monotonic %d",
                     monotonic);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE api <> 'cudaMalloc'"), 0,
                     "monotonic %d: allocations the runtime made itself", monotonic);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors"), 0, "monotonic %d", monotonic);
        cr_expect_eq((unsigned long long)tu_int(db, "SELECT SUM(requested_bytes) FROM allocations "
                                                    "WHERE api = 'cudaMalloc'"),
                     sum, "monotonic %d", monotonic);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE api = 'cudaMalloc' AND (free_ns IS NULL "
                                "OR free_ns < alloc_ns OR free_api <> 'cudaFree' OR free_thread_id = thread_id "
                                "OR status <> 0)"),
                     0, "monotonic %d: every allocation freed, by the other thread, after it was made", monotonic);
        /* the k-th row (in the order of the calls) has the k-th size */
        sqlite3_stmt *st;
        cr_assert_eq(sqlite3_prepare_v2(db,
                                        "SELECT requested_bytes, bytes FROM allocations WHERE api = 'cudaMalloc' "
                                        "ORDER BY id",
                                        -1, &st, NULL),
                     SQLITE_OK);
        int k = 0, wrong = 0;
        for (; SQLITE_ROW_OK(st); k++)
            if (k >= HANDOFF_N || (size_t)sqlite3_column_int64(st, 0) != sizes[k] ||
                (size_t)sqlite3_column_int64(st, 1) != sizes[k]) {
                if (wrong++ == 0)
                    cr_expect_fail("monotonic %d: allocation %d has %lld bytes, not %zu", monotonic, k,
                                   (long long)sqlite3_column_int64(st, 0), k < HANDOFF_N ? sizes[k] : 0);
            }
        sqlite3_finalize(st);
        cr_expect_eq(k, HANDOFF_N);
        cr_expect_eq(wrong, 0, "monotonic %d: %d allocations out of place", monotonic, wrong);
        sqlite3_close(db);
    }
    free(sizes);
}

/* A pseudo-random number (a fixed seed: the same moments on every run). */
static uint64_t next_random(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/*
 * A program killed with SIGKILL at several moments while it allocates: `wstrace collect` on the
 * spool it left gives a prefix of what it did, whatever the moment and under either clock (the
 * trials alternate): at least the 100 pairs it had made before it said so, the j-th allocation of
 * record_loop_size(j) bytes, every allocation but perhaps the last freed, nothing torn, no error.
 */
Test(driver, a_killed_program_leaves_a_prefix_of_its_allocations, .timeout = 600)
{
    uint64_t state = 0x9e3779b97f4a7c15ULL;
    for (int trial = 0; trial < 6; trial++) {
        char trace[512], spool[600], output[600], fd_arg[16];
        char name[32];
        snprintf(name, sizeof name, "killed%d.db", trial);
        tu_path(trace, sizeof trace, name);
        snprintf(spool, sizeof spool, "%s.spool", trace);
        snprintf(output, sizeof output, "WSTRACE_OUTPUT=%s", trace);
        int fds[2];
        cr_assert_eq(pipe(fds), 0);
        snprintf(fd_arg, sizeof fd_arg, "%d", fds[1]);
        struct tu_proc p;
        const char *env[] = {SIM_PATH, tu_tracer_preload(), output,
                             trial % 2 ? "WSTRACE_CLOCK=monotonic" : "WSTRACE_CLOCK=auto", NULL};
        const char *argv[] = {PROG("driver_record_prog"), "loop", fd_arg, NULL};
        tu_start(&p, env, argv);
        close(fds[1]);
        char c = 0;
        ssize_t got = read(fds[0], &c, 1); /* after its first 100 pairs (0: it died before) */
        close(fds[0]);
        /* then 0 to ~20 ms more, by a spin of a pseudo-random length: a moment in the loop */
        uint64_t spins = next_random(&state) % 20000;
        for (volatile uint64_t i = 0; i < spins * 1000; i++)
            ;
        kill(p.pid, SIGKILL);
        struct tu_result r;
        tu_finish(&p, &r);
        cr_assert_eq(got, 1, "trial %d: the program never got going:\n%s%s", trial, r.out, r.err);
        cr_assert(!r.exited && r.signal == SIGKILL, "trial %d: exit %d signal %d:\n%s", trial, r.code, r.signal, r.err);
        tu_result_free(&r);
        const char *cargv[] = {TU_WSTRACE, "collect", spool, NULL};
        tu_run(&r, NULL, cargv);
        cr_assert(r.exited && r.code == 0, "trial %d: collect: exit %d: %s", trial, r.code, r.err);
        tu_result_free(&r);
        sqlite3 *db = tu_open(trace);
        long long allocs = tu_int(db, "SELECT COUNT(*) FROM allocations");
        cr_expect_geq(allocs, 100, "trial %d: %lld allocations", trial, allocs);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE api <> 'cudaMalloc' OR status <> 0"), 0,
                     "trial %d", trial);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors"), 0, "trial %d", trial);
        cr_expect_leq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE free_ns IS NULL"), 1,
                      "trial %d: only the last allocation may be unfreed", trial);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE free_ns IS NULL AND id <> "
                                "(SELECT MAX(id) FROM allocations)"),
                     0, "trial %d", trial);
        cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='corrupt_records'"), 0, "trial %d", trial);
        sqlite3_stmt *st;
        cr_assert_eq(
            sqlite3_prepare_v2(db, "SELECT requested_bytes, bytes FROM allocations ORDER BY id", -1, &st, NULL),
            SQLITE_OK);
        long long j = 0, wrong = 0;
        for (; SQLITE_ROW_OK(st); j++)
            if ((size_t)sqlite3_column_int64(st, 0) != record_loop_size((uint64_t)j) ||
                (size_t)sqlite3_column_int64(st, 1) != record_loop_size((uint64_t)j)) {
                if (wrong++ == 0)
                    cr_expect_fail("trial %d: allocation %lld has %lld bytes, not %zu", trial, j,
                                   (long long)sqlite3_column_int64(st, 0), record_loop_size((uint64_t)j));
            }
        sqlite3_finalize(st);
        cr_expect_eq(j, allocs);
        cr_expect_eq(wrong, 0, "trial %d: %lld allocations are not the program's", trial, wrong);
        sqlite3_close(db);
    }
}

/*
 * errno is the program's: set to a sentinel before each hooked call kind (runtime and driver
 * allocation, free, launch; a failed allocation), it is unchanged after, untraced and traced under
 * either clock (the counter's fill-before path and the general path).  The traced runs recorded
 * every call, so the checks saw the hooks at work.
 */
Test(driver, hooked_calls_leave_errno_alone)
{
    const char *argv[] = {PROG("driver_record_prog"), "errno", NULL};
    struct tu_result r;
    const char *plain_env[] = {SIM_PATH, NULL};
    tu_run(&r, plain_env, argv);
    cr_expect(r.exited && r.code == 0, "untraced: exit %d:\n%s%s", r.code, r.out, r.err);
    tu_result_free(&r);
    const char *disabled_env[] = {SIM_PATH, "WSTRACE_DISABLE=1", tu_tracer_preload(), NULL};
    tu_run(&r, disabled_env, argv);
    cr_expect(r.exited && r.code == 0, "WSTRACE_DISABLE=1: exit %d:\n%s%s", r.code, r.out, r.err);
    tu_result_free(&r);
    for (int monotonic = 0; monotonic <= 1; monotonic++) {
        char trace[512];
        tu_path(trace, sizeof trace, monotonic ? "errno_monotonic.db" : "errno_auto.db");
        const char *env[] = {SIM_PATH, monotonic ? "WSTRACE_CLOCK=monotonic" : "WSTRACE_CLOCK=auto", NULL};
        tu_run_traced(&r, trace, env, argv);
        cr_assert(r.exited && r.code == 0, "monotonic %d: exit %d (3: errno changed):\n%s%s", monotonic, r.code, r.out,
                  r.err);
        sqlite3 *db = tu_open(trace);
        cr_expect_gt(tu_kv(r.out, "cudaMalloc"), 0);
        cr_expect_eq(allocs_of(db, "cudaMalloc"), tu_kv(r.out, "cudaMalloc"), "monotonic %d", monotonic);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE api = 'cudaMalloc' AND status <> 0"),
                     tu_kv(r.out, "failed"), "monotonic %d", monotonic);
        cr_expect_eq(frees_of(db, "cudaFree"), tu_kv(r.out, "cudaFree"), "monotonic %d", monotonic);
        cr_expect_eq(launches_of(db, "cudaLaunchKernel"), tu_kv(r.out, "cudaLaunchKernel"), "monotonic %d", monotonic);
        cr_expect_eq(allocs_of(db, "cuMemAlloc_v2"), tu_kv(r.out, "cuMemAlloc_v2"), "monotonic %d", monotonic);
        cr_expect_eq(frees_of(db, "cuMemFree_v2"), tu_kv(r.out, "cuMemFree_v2"), "monotonic %d", monotonic);
        cr_expect_eq(launches_of(db, "cuLaunchKernel"), tu_kv(r.out, "cuLaunchKernel"), "monotonic %d", monotonic);
        sqlite3_close(db);
        tu_result_free(&r);
    }
}
