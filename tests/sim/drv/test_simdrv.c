/* Programs built against NVIDIA's own libraries on the simulated drop-ins: a driver-API program
 * on lib/sim/libcuda.so.1; a runtime program on lib/sim/libcudart.so.13, whose calls must reach
 * the simulated driver through cuGetProcAddress exactly as often as the program's own count says
 * (a counting libcuda.so.1 in front of the simulated one sees them the way a driver-level tool does); kernels without a
 * host implementation under WSSIM_NOOP_KERNELS. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "trace_util.h"

#define SIM_PATH     "LD_LIBRARY_PATH=" WS_BUILD_DIR "/lib/sim"
#define RUNTIME_PROG WS_BUILD_DIR "/tests/simdrv_runtime_prog"
#define DRIVER_PROG  WS_BUILD_DIR "/tests/simdrv_driver_prog"

/* The counting driver in front of the simulated one. */
#define SHIM_PATH "LD_LIBRARY_PATH=" WS_BUILD_DIR "/lib/simdrv-shim:" WS_BUILD_DIR "/lib/sim"

/* Runs a runtime_prog scenario in front of the counting driver; asserts that it passed. */
static void run_counted(struct tu_result *r, const char *scenario, const char *extra_env)
{
    const char *env[] = {SHIM_PATH, extra_env, NULL};
    const char *argv[] = {RUNTIME_PROG, scenario, NULL};
    tu_run(r, env, argv);
    cr_assert(r->exited && r->code == 0, "runtime_prog %s failed (%d):\n%s%s", scenario, r->code, r->out, r->err);
}

/* Each driver call the scenario expects, as the counting driver saw it. */
static void expect_driver_calls(const struct tu_result *r, const char *const *calls)
{
    char key[128];
    for (size_t i = 0; calls[i]; i++) {
        snprintf(key, sizeof key, "expect.%s", calls[i]);
        long long want = tu_kv(r->out, key);
        snprintf(key, sizeof key, "driver.%s", calls[i]);
        cr_expect_eq(tu_kv(r->out, key), want, "%s: %lld expected", calls[i], want);
    }
}

TestSuite(simdrv, .fini = tu_cleanup);

Test(simdrv, driver_program_runs_on_the_simulated_driver)
{
    struct tu_result r;
    const char *env[] = {SIM_PATH, NULL};
    const char *argv[] = {DRIVER_PROG, NULL};
    tu_run(&r, env, argv);
    cr_assert(r.exited && r.code == 0, "driver_prog failed (%d):\n%s%s", r.code, r.out, r.err);
    cr_expect_eq(tu_kv(r.out, "allocs"), 6); /* three vectors, three physical chunks */
    cr_expect_eq(tu_kv(r.out, "launches"), 3);
    tu_result_free(&r);
}

Test(simdrv, runtime_allocations_reach_the_driver_once_each)
{
    struct tu_result r;
    run_counted(&r, "alloc", NULL);
    static const char *const calls[] = {"cuMemAlloc",      "cuMemFree",           "cuMemAllocHost",
                                        "cuMemHostAlloc",  "cuMemFreeHost",       "cuMemAllocManaged",
                                        "cuMemAllocPitch", "cuMemAllocAsync",     "cuMemAllocAsync_ptsz",
                                        "cuMemFreeAsync",  "cuMemFreeAsync_ptsz", NULL};
    expect_driver_calls(&r, calls);
    /* The runtime found the driver the way the real one does, once. */
    cr_expect_eq(tu_kv(r.out, "driver.cuInit"), 1);
    cr_expect_eq(tu_kv(r.out, "driver.cuDevicePrimaryCtxRetain"), 1);
    cr_expect_gt(tu_kv(r.out, "driver.cuGetProcAddress_v2"), 0);
    tu_result_free(&r);
}

Test(simdrv, runtime_launches_reach_the_driver_once_each)
{
    struct tu_result r;
    run_counted(&r, "launch", NULL);
    static const char *const calls[] = {"cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", NULL};
    expect_driver_calls(&r, calls);
    tu_result_free(&r);
}

Test(simdrv, driver_entry_points_through_the_runtime_are_the_wrapped_ones)
{
    struct tu_result r;
    run_counted(&r, "entry", NULL);
    static const char *const calls[] = {"cuMemAlloc", "cuMemFree", NULL};
    expect_driver_calls(&r, calls);
    tu_result_free(&r);
}

/* As on a GPU, querying the device initialises the driver and takes no context. */
Test(simdrv, device_queries_take_no_context)
{
    struct tu_result r;
    run_counted(&r, "query", NULL);
    static const char *const calls[] = {"cuDevicePrimaryCtxRetain", "cuInit", NULL};
    expect_driver_calls(&r, calls);
    tu_result_free(&r);
}

Test(simdrv, kernels_without_host_code_fail_unless_noop_is_on)
{
    struct tu_result r;
    const char *argv[] = {RUNTIME_PROG, "noop", NULL};
    const char *off[] = {SIM_PATH, NULL};
    tu_run(&r, off, argv);
    cr_assert(r.exited && r.code == 0, "runtime_prog noop failed:\n%s%s", r.out, r.err);
    cr_expect_eq(tu_kv(r.out, "launched"), 0);
    cr_expect_eq(tu_kv(r.out, "refused"), 4);
    cr_expect_eq(tu_kv(r.out, "noop_launches"), 0);
    tu_result_free(&r);
    const char *on[] = {SIM_PATH, "WSSIM_NOOP_KERNELS=1", NULL};
    tu_run(&r, on, argv);
    cr_assert(r.exited && r.code == 0, "runtime_prog noop failed:\n%s%s", r.out, r.err);
    cr_expect_eq(tu_kv(r.out, "launched"), 4);
    cr_expect_eq(tu_kv(r.out, "refused"), 0);
    cr_expect_eq(tu_kv(r.out, "noop_launches"), 4, "every launch counted as a no-op");
    tu_result_free(&r);
}
