/* The simulated device's driver API (libwssim.so exports it beside the runtime): entry points by
 * version through cuGetProcAddress, contexts, allocation through the driver, virtual memory,
 * modules and launches, and kernels without a host implementation. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "wssim.h"

#define MiB ((size_t)1 << 20)

static struct wssim_stats stats(void)
{
    struct wssim_stats s;
    wssim_get_stats(&s);
    return s;
}

static void *proc(const char *name, int version, cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    void *fn = (void *)0x1;
    CUresult rc = cuGetProcAddress(name, &fn, version, flags, status);
    return rc == CUDA_SUCCESS ? fn : NULL;
}

/* The forms of an entry point by version: cuda.h maps cuMemAlloc to cuMemAlloc_v2 (the 3.2
 * form), cuCtxCreate to cuCtxCreate_v4 (12.5), cuStreamGetCaptureInfo to _v3 (12.3). */
Test(sim_driver, get_proc_address_picks_the_form_of_the_version)
{
    CUdriverProcAddressQueryResult status = 99;
    cr_expect_eq(proc("cuMemAlloc", 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status), (void *)cuMemAlloc_v2);
    cr_expect_eq(status, CU_GET_PROC_ADDRESS_SUCCESS);
    cr_expect_eq(proc("cuCtxCreate", 13000, 0, NULL), (void *)cuCtxCreate_v4);
    cr_expect_eq(proc("cuStreamGetCaptureInfo", 12030, 0, NULL), (void *)cuStreamGetCaptureInfo_v3);
    cr_expect_eq(proc("cuGetProcAddress", 12000, 0, NULL), (void *)cuGetProcAddress_v2);
    /* 11.4 gets the 11.4 form of cuCtxCreate (cuCtxCreate_v3), not the newest. */
    void *v3 = proc("cuCtxCreate", 11040, 0, NULL);
    cr_expect(v3 != NULL && v3 != (void *)cuCtxCreate_v4, "cuCtxCreate at 11.4 must be an older form");
    /* Versioned names are not base names. */
    cr_expect_null(proc("cuMemAlloc_v2", 13000, 0, &status));
    cr_expect_eq(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    cr_expect_null(proc("cuNoSuchCall", 13000, 0, &status));
    cr_expect_eq(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    /* cuMemAllocAsync appeared in 11.2. */
    cr_expect_null(proc("cuMemAllocAsync", 11000, 0, &status));
    cr_expect_eq(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    void *fn = (void *)0x1;
    cr_expect_eq(cuGetProcAddress("cuMemAlloc", &fn, 13000, 4, NULL), CUDA_ERROR_INVALID_VALUE, "unknown flag");
}

Test(sim_driver, per_thread_flag_gives_the_per_thread_forms)
{
    void *legacy = proc("cuMemAllocAsync", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, NULL);
    void *per_thread = proc("cuMemAllocAsync", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL);
    cr_assert_not_null(legacy);
    cr_assert_not_null(per_thread);
    cr_expect_eq(legacy, (void *)cuMemAllocAsync);
    cr_expect_neq(per_thread, legacy, "cuMemAllocAsync_ptsz is a symbol of its own");
    /* A call without a per-thread form answers with its only form. */
    cr_expect_eq(proc("cuMemAlloc", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL), (void *)cuMemAlloc_v2);
    cr_expect_neq(proc("cuLaunchKernel", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL),
                  (void *)cuLaunchKernel);
}

/* What the runtime offers for the same lookup. */
Test(sim_driver, runtime_entry_points_come_from_the_same_table)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult status = 99;
    cr_assert_eq(cudaGetDriverEntryPointByVersion("cuMemFree", &fn, 13000, cudaEnableDefault, &status), cudaSuccess);
    cr_expect_eq(status, cudaDriverEntryPointSuccess);
    cr_expect_eq(fn, (void *)cuMemFree_v2);
    cr_assert_eq(cudaGetDriverEntryPointByVersion("cuNoSuchCall", &fn, 13000, cudaEnableDefault, &status), cudaSuccess);
    cr_expect_eq(status, cudaDriverEntryPointSymbolNotFound);
    cr_expect_null(fn);
}

Test(sim_driver, primary_context_is_counted_and_current_while_retained)
{
    CUcontext ctx = (CUcontext)0x1, current = (CUcontext)0x1;
    unsigned flags = 1;
    int active = 1;
    cr_assert_eq(cuInit(0), CUDA_SUCCESS);
    cr_expect_eq(cuInit(1), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
    cr_expect_eq(active, 0);
    cr_assert_eq(cuCtxGetCurrent(&current), CUDA_SUCCESS);
    cr_expect_null(current, "no context before one is retained");
    cr_assert_eq(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
    CUcontext again = NULL;
    cr_assert_eq(cuDevicePrimaryCtxRetain(&again, 0), CUDA_SUCCESS);
    cr_expect_eq(again, ctx, "one primary context per device");
    cr_assert_eq(cuCtxGetCurrent(&current), CUDA_SUCCESS);
    cr_expect_eq(current, ctx);
    CUdevice dev = -1;
    cr_expect_eq(cuCtxGetDevice(&dev), CUDA_SUCCESS);
    cr_expect_eq(dev, 0);
    cr_expect_eq(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
    cr_assert_eq(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
    cr_expect_eq(active, 1, "retained twice, released once");
    cr_expect_eq(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
    cr_expect_eq(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT, "released more often than retained");
    cr_expect_eq(cuDevicePrimaryCtxRetain(&ctx, 1), CUDA_ERROR_INVALID_DEVICE);
}

Test(sim_driver, created_contexts_stack_per_thread)
{
    CUcontext a = NULL, b = NULL, top = NULL;
    cr_assert_eq(cuCtxCreate(&a, NULL, 0, 0), CUDA_SUCCESS);
    cr_assert_eq(cuCtxGetCurrent(&top), CUDA_SUCCESS);
    cr_expect_eq(top, a, "a new context is current");
    cr_assert_eq(cuCtxCreate(&b, NULL, 0, 0), CUDA_SUCCESS);
    unsigned long long ida = 0, idb = 0;
    cr_expect_eq(cuCtxGetId(a, &ida), CUDA_SUCCESS);
    cr_expect_eq(cuCtxGetId(b, &idb), CUDA_SUCCESS);
    cr_expect_neq(ida, idb);
    cr_assert_eq(cuCtxPopCurrent(&top), CUDA_SUCCESS);
    cr_expect_eq(top, b);
    cr_assert_eq(cuCtxGetCurrent(&top), CUDA_SUCCESS);
    cr_expect_eq(top, a);
    cr_expect_eq(cuCtxPushCurrent(b), CUDA_SUCCESS);
    cr_expect_eq(cuCtxDestroy(b), CUDA_SUCCESS);
    cr_assert_eq(cuCtxGetCurrent(&top), CUDA_SUCCESS);
    cr_expect_eq(top, a, "a destroyed context leaves the stack");
    cr_expect_eq(cuCtxDestroy(b), CUDA_ERROR_INVALID_CONTEXT);
    cr_expect_eq(cuCtxSetCurrent(b), CUDA_ERROR_INVALID_CONTEXT);
    cr_expect_eq(cuCtxDestroy(a), CUDA_SUCCESS);
}

Test(sim_driver, driver_allocations_are_the_devices_memory)
{
    struct wssim_stats before = stats();
    enum { N = 5 };
    CUdeviceptr p[N];
    for (int i = 0; i < N; i++)
        cr_assert_eq(cuMemAlloc(&p[i], (size_t)(i + 1) * 1000), CUDA_SUCCESS);
    CUdeviceptr zero = 7;
    cr_expect_eq(cuMemAlloc(&zero, 0), CUDA_ERROR_INVALID_VALUE, "the driver refuses zero bytes");
    struct wssim_stats s = stats();
    cr_expect_eq(s.alloc_calls - before.alloc_calls, N);
    cr_expect_eq(s.live_bytes - before.live_bytes, 15000); /* 1000 + 2000 + ... + 5000 */
    /* Runtime and driver free each other's memory: one device. */
    cr_expect_eq(cudaFree((void *)(uintptr_t)p[0]), cudaSuccess);
    void *q = NULL;
    cr_assert_eq(cudaMalloc(&q, 64), cudaSuccess);
    cr_expect_eq(cuMemFree((CUdeviceptr)(uintptr_t)q), CUDA_SUCCESS);
    for (int i = 1; i < N; i++)
        cr_expect_eq(cuMemFree(p[i]), CUDA_SUCCESS);
    cr_expect_eq(cuMemFree(p[1]), CUDA_ERROR_INVALID_VALUE, "double free");
    s = stats();
    cr_expect_eq(s.live_bytes, before.live_bytes);
    cr_expect_eq(s.free_calls - before.free_calls, N + 1);
}

Test(sim_driver, driver_errors_do_not_touch_the_runtime_last_error)
{
    (void)cudaGetLastError();
    cr_expect_eq(cuMemFree(12345), CUDA_ERROR_INVALID_VALUE);
    cr_expect_eq(cudaGetLastError(), cudaSuccess);
    const char *name = NULL, *text = NULL;
    cr_expect_eq(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &name), CUDA_SUCCESS);
    cr_expect_str_eq(name, "CUDA_ERROR_OUT_OF_MEMORY");
    cr_expect_eq(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &text), CUDA_SUCCESS);
    cr_expect_str_eq(text, "invalid argument");
    cr_expect_eq(cuGetErrorName((CUresult)12345, &name), CUDA_ERROR_INVALID_VALUE);
    cr_expect_null(name);
}

Test(sim_driver, stream_ordered_and_pitched_and_host_allocations)
{
    struct wssim_stats before = stats();
    CUstream s = NULL;
    cr_assert_eq(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUdeviceptr a = 0, b = 0, c = 0;
    size_t pitch = 0;
    cr_assert_eq(cuMemAllocAsync(&a, 4096, s), CUDA_SUCCESS);
    CUmemoryPool pool = NULL;
    cr_assert_eq(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
    cr_assert_eq(cuMemAllocFromPoolAsync(&b, 8192, pool, s), CUDA_SUCCESS);
    cr_assert_eq(cuMemAllocPitch(&c, &pitch, 100, 3, 4), CUDA_SUCCESS);
    cr_expect_eq(pitch, 512, "the runtime's pitch: the width rounded up to 512");
    cr_expect_eq(cuMemAllocPitch(&c, &pitch, 100, 3, 3), CUDA_ERROR_INVALID_VALUE, "element size 3");
    void *host = NULL;
    cr_assert_eq(cuMemHostAlloc(&host, 1000, CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS);
    struct wssim_stats mid = stats();
    cr_expect_eq(mid.live_bytes - before.live_bytes, 4096 + 8192 + 3 * 512, "pinned host memory is not counted");
    unsigned flags = 1;
    cr_expect_eq(cuStreamGetFlags(s, &flags), CUDA_SUCCESS);
    cr_expect_eq(flags, CU_STREAM_NON_BLOCKING);
    cr_expect_eq(cuMemFreeAsync(a, s), CUDA_SUCCESS);
    cr_expect_eq(cuMemFreeAsync(b, s), CUDA_SUCCESS);
    cr_expect_eq(cuMemFree(c), CUDA_SUCCESS);
    cr_expect_eq(cuMemFreeHost(host), CUDA_SUCCESS);
    cr_expect_eq(cuStreamSynchronize(s), CUDA_SUCCESS);
    cr_expect_eq(cuStreamDestroy(s), CUDA_SUCCESS);
    cr_expect_eq(stats().live_bytes, before.live_bytes);
}

/* ---- virtual memory ---- */

static CUmemAllocationProp device_prop(void)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    return prop;
}

static CUmemAccessDesc read_write(void)
{
    CUmemAccessDesc d;
    memset(&d, 0, sizeof d);
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = 0;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return d;
}

/* Physical memory is what the device holds; mappings are where it is seen.  Mapped twice, one
 * physical allocation counts once and both ranges see the same bytes. */
Test(sim_driver, vmm_counts_physical_memory_once_however_often_it_is_mapped)
{
    CUmemAllocationProp prop = device_prop();
    size_t granule = 0;
    cr_assert_eq(cuMemGetAllocationGranularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS);
    cr_assert_eq(granule, 2 * MiB);
    struct wssim_stats before = stats();
    CUmemGenericAllocationHandle h = 0;
    cr_expect_eq(cuMemCreate(&h, granule + 1, &prop, 0), CUDA_ERROR_INVALID_VALUE, "not a multiple of the granule");
    cr_assert_eq(cuMemCreate(&h, 2 * granule, &prop, 0), CUDA_SUCCESS);
    cr_expect_eq(stats().live_bytes - before.live_bytes, 2 * granule);
    cr_expect_eq(stats().alloc_calls - before.alloc_calls, 1);

    CUdeviceptr va = 0;
    cr_assert_eq(cuMemAddressReserve(&va, 4 * granule, 0, 0, 0), CUDA_SUCCESS);
    cr_expect_eq(va % granule, 0);
    cr_expect_eq(stats().live_bytes - before.live_bytes, 2 * granule, "address space is not memory");
    cr_assert_eq(cuMemMap(va, 2 * granule, 0, h, 0), CUDA_SUCCESS);
    cr_assert_eq(cuMemMap(va + 2 * granule, granule, granule, h, 0), CUDA_SUCCESS, "the second half, again");
    cr_expect_eq(cuMemMap(va, granule, 0, h, 0), CUDA_ERROR_INVALID_VALUE, "already mapped");
    CUmemAccessDesc rw = read_write();
    cr_assert_eq(cuMemSetAccess(va, 3 * granule, &rw, 1), CUDA_SUCCESS);
    cr_expect_eq(stats().live_bytes - before.live_bytes, 2 * granule);

    unsigned char *base = (unsigned char *)(uintptr_t)va;
    base[granule + 5] = 42; /* the second granule, seen through the first mapping */
    cr_expect_eq(base[2 * granule + 5], 42, "both mappings see the same physical memory");
    CUdeviceptr range = 0;
    size_t size = 0;
    cr_assert_eq(cuMemGetAddressRange(&range, &size, va + 2 * granule + 5), CUDA_SUCCESS);
    cr_expect_eq(range, va + 2 * granule);
    cr_expect_eq(size, granule);

    CUmemGenericAllocationHandle again = 0;
    cr_assert_eq(cuMemRetainAllocationHandle(&again, base + 3), CUDA_SUCCESS);
    cr_expect_eq(again, h);
    cr_expect_eq(cuMemRelease(again), CUDA_SUCCESS);
    /* Released while mapped: the memory stays until its last mapping goes. */
    cr_expect_eq(cuMemRelease(h), CUDA_SUCCESS);
    cr_expect_eq(stats().live_bytes - before.live_bytes, 2 * granule);
    cr_expect_eq(cuMemUnmap(va, granule), CUDA_ERROR_INVALID_VALUE, "half a mapping");
    cr_expect_eq(cuMemUnmap(va, 2 * granule), CUDA_SUCCESS);
    cr_expect_eq(stats().live_bytes - before.live_bytes, 2 * granule, "still mapped once");
    cr_expect_eq(cuMemUnmap(va + 2 * granule, granule), CUDA_SUCCESS);
    cr_expect_eq(stats().live_bytes, before.live_bytes);
    cr_expect_eq(stats().free_calls - before.free_calls, 1);
    cr_expect_eq(cuMemAddressFree(va, 4 * granule), CUDA_SUCCESS);
    cr_expect_eq(cuMemAddressFree(va, 4 * granule), CUDA_ERROR_INVALID_VALUE);
}

Test(sim_driver, vmm_physical_memory_is_limited_by_the_capacity)
{
    cr_assert_eq(setenv("WSSIM_CAPACITY", "6M", 1), 0);
    CUmemAllocationProp prop = device_prop();
    CUmemGenericAllocationHandle a = 0, b = 0, c = 0;
    cr_assert_eq(cuMemCreate(&a, 2 * MiB, &prop, 0), CUDA_SUCCESS);
    cr_assert_eq(cuMemCreate(&b, 4 * MiB, &prop, 0), CUDA_SUCCESS);
    cr_expect_eq(cuMemCreate(&c, 2 * MiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
    cr_expect_eq(stats().failed_allocs, 1);
    cr_expect_eq(cuMemRelease(a), CUDA_SUCCESS);
    cr_expect_eq(cuMemCreate(&c, 2 * MiB, &prop, 0), CUDA_SUCCESS);
    cr_expect_eq(cuMemRelease(b), CUDA_SUCCESS);
    cr_expect_eq(cuMemRelease(c), CUDA_SUCCESS);
    cr_expect_eq(stats().live_bytes, 0);
}

/* ---- modules and launches ---- */

static void add_one(void **args)
{
    int *data = *(int **)args[0];
    int n = *(int *)args[1];
    for (int i = 0; i < n; i++)
        data[i] += 1;
}

Test(sim_driver, module_functions_run_their_host_kernels_by_name)
{
    size_t sizes[] = {sizeof(int *), sizeof(int)};
    cr_assert_eq(wssim_register_host_kernel_params("add_one", add_one, 2, sizes), 0);
    CUmodule mod = NULL;
    static const char image[] = "not a cubin: nothing is loaded";
    cr_assert_eq(cuModuleLoadData(&mod, image), CUDA_SUCCESS);
    CUfunction f = NULL, same = NULL, other = NULL;
    cr_assert_eq(cuModuleGetFunction(&f, mod, "add_one"), CUDA_SUCCESS);
    cr_assert_eq(cuModuleGetFunction(&same, mod, "add_one"), CUDA_SUCCESS);
    cr_expect_eq(same, f, "one handle per name and module");
    cr_assert_eq(cuModuleGetFunction(&other, mod, "no_host_code"), CUDA_SUCCESS);
    const char *name = NULL;
    cr_assert_eq(cuFuncGetName(&name, f), CUDA_SUCCESS);
    cr_expect_str_eq(name, "add_one");

    int data[4] = {1, 2, 3, 4}, n = 4;
    int *dev = data;
    void *params[] = {&dev, &n};
    struct wssim_stats before = stats();
    cr_expect_eq(cuLaunchKernel(f, 1, 1, 1, 4, 1, 1, 0, NULL, params, NULL), CUDA_SUCCESS);
    /* The packed-buffer form: parameters at offsets aligned to their sizes (pointer at 0, int at 8). */
    struct {
        int *p;
        int n;
    } packed = {data, 4};
    size_t packed_size = sizeof packed;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &packed_size,
                     CU_LAUNCH_PARAM_END};
    cr_expect_eq(cuLaunchKernel(f, 1, 1, 1, 4, 1, 1, 0, NULL, NULL, extra), CUDA_SUCCESS);
    CUlaunchConfig config = {
        .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 4, .blockDimY = 1, .blockDimZ = 1};
    cr_expect_eq(cuLaunchKernelEx(&config, f, params, NULL), CUDA_SUCCESS);
    cr_expect_eq(cuLaunchCooperativeKernel(f, 1, 1, 1, 4, 1, 1, 0, NULL, params), CUDA_SUCCESS);
    cr_expect_eq(data[0], 5, "four launches added four");
    cr_expect_eq(data[3], 8);
    cr_expect_eq(stats().launches - before.launches, 4);
    cr_expect_eq(cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, NULL, params, NULL), CUDA_ERROR_INVALID_VALUE);
    cr_expect_eq(cuLaunchKernel(other, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL), CUDA_ERROR_NOT_FOUND,
                 "no host implementation");
    cr_expect_eq(cuLaunchKernel((CUfunction)data, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL), CUDA_ERROR_INVALID_HANDLE);
    cr_expect_eq(stats().launches - before.launches, 4);
    cr_expect_eq(cuModuleUnload(mod), CUDA_SUCCESS);
    cr_expect_eq(cuFuncGetName(&name, f), CUDA_ERROR_INVALID_HANDLE, "unloading forgets the module's functions");
}

/* WSSIM_NOOP_KERNELS=1: a kernel without a host implementation runs as a no-op, counted apart. */
Test(sim_driver, noop_kernels_succeed_and_are_counted)
{
    cr_assert_eq(setenv("WSSIM_NOOP_KERNELS", "1", 1), 0);
    CUlibrary lib = NULL;
    CUkernel k = NULL;
    CUfunction f = NULL;
    cr_assert_eq(cuLibraryLoadData(&lib, "image", NULL, NULL, 0, NULL, NULL, 0), CUDA_SUCCESS);
    cr_assert_eq(cuLibraryGetKernel(&k, lib, "_Z8untouchedPi"), CUDA_SUCCESS);
    cr_assert_eq(cuKernelGetFunction(&f, k), CUDA_SUCCESS);
    int data[2] = {7, 7};
    int *dev = data;
    void *params[] = {&dev};
    struct wssim_stats before = stats();
    enum { LAUNCHES = 3 };
    for (int i = 0; i < LAUNCHES; i++)
        cr_expect_eq(cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, NULL, params, NULL), CUDA_SUCCESS);
    struct wssim_stats s = stats();
    cr_expect_eq(s.noop_launches - before.noop_launches, LAUNCHES);
    cr_expect_eq(s.launches, before.launches, "a no-op is not a host kernel run");
    cr_expect_eq(data[0], 7, "a no-op computes nothing");
    /* Invalid launches still fail: only the missing implementation is forgiven. */
    cr_expect_eq(cuLaunchKernel(f, 0, 1, 1, 32, 1, 1, 0, NULL, params, NULL), CUDA_ERROR_INVALID_VALUE);
    cr_expect_eq(cuLibraryUnload(lib), CUDA_SUCCESS);
}

Test(sim_driver, noop_setting_must_be_0_or_1)
{
    cr_assert_eq(setenv("WSSIM_NOOP_KERNELS", "yes", 1), 0);
    CUmodule mod = NULL;
    CUfunction f = NULL;
    cr_assert_eq(cuModuleLoadData(&mod, "image"), CUDA_SUCCESS);
    cr_assert_eq(cuModuleGetFunction(&f, mod, "k"), CUDA_SUCCESS);
    cr_expect_eq(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_NOT_FOUND,
                 "an unreadable setting leaves no-op kernels off");
}

/* ---- graphs through the driver ---- */

static void fill_seven(void **args)
{
    unsigned char *p = *(unsigned char **)args[0];
    p[0] = 7;
}

/* A graph made with the driver: an allocation node, a kernel node of a module function that
 * writes the memory, a free node; each of the launches allocates and frees once and runs the
 * kernel once (3 launches: 3 allocations, 3 frees, 3 kernels). */
Test(sim_driver, driver_graph_with_memory_nodes_runs_them_at_each_launch)
{
    size_t sizes[] = {sizeof(void *)};
    cr_assert_eq(wssim_register_host_kernel_params("fill_seven", fill_seven, 1, sizes), 0);
    CUmodule mod = NULL;
    CUfunction f = NULL;
    cr_assert_eq(cuModuleLoadData(&mod, "image"), CUDA_SUCCESS);
    cr_assert_eq(cuModuleGetFunction(&f, mod, "fill_seven"), CUDA_SUCCESS);

    CUgraph g = NULL;
    cr_assert_eq(cuGraphCreate(&g, 0), CUDA_SUCCESS);
    CUDA_MEM_ALLOC_NODE_PARAMS alloc;
    memset(&alloc, 0, sizeof alloc);
    alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    alloc.bytesize = MiB;
    CUgraphNode a = NULL, k = NULL, fr = NULL;
    cr_assert_eq(cuGraphAddMemAllocNode(&a, g, NULL, 0, &alloc), CUDA_SUCCESS);
    cr_assert_neq(alloc.dptr, 0, "the node's address is fixed when it is added");
    void *params[] = {&alloc.dptr};
    CUDA_KERNEL_NODE_PARAMS kp;
    memset(&kp, 0, sizeof kp);
    kp.func = f;
    kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
    kp.blockDimX = kp.blockDimY = kp.blockDimZ = 1;
    kp.kernelParams = params;
    cr_assert_eq(cuGraphAddKernelNode(&k, g, &a, 1, &kp), CUDA_SUCCESS);
    cr_assert_eq(cuGraphAddMemFreeNode(&fr, g, &k, 1, alloc.dptr), CUDA_SUCCESS);
    size_t nodes = 0;
    cr_assert_eq(cuGraphGetNodes(g, NULL, &nodes), CUDA_SUCCESS);
    cr_expect_eq(nodes, 3);
    CUgraphNodeType type;
    cr_assert_eq(cuGraphNodeGetType(a, &type), CUDA_SUCCESS);
    cr_expect_eq(type, CU_GRAPH_NODE_TYPE_MEM_ALLOC);

    CUgraphExec exec = NULL;
    cr_assert_eq(cuGraphInstantiateWithFlags(&exec, g, 0), CUDA_SUCCESS);
    struct wssim_stats before = stats();
    enum { LAUNCHES = 3 };
    for (int i = 0; i < LAUNCHES; i++)
        cr_expect_eq(cuGraphLaunch(exec, NULL), CUDA_SUCCESS);
    struct wssim_stats s = stats();
    cr_expect_eq(s.alloc_calls - before.alloc_calls, LAUNCHES);
    cr_expect_eq(s.free_calls - before.free_calls, LAUNCHES);
    cr_expect_eq(s.launches - before.launches, LAUNCHES);
    cr_expect_eq(s.live_bytes, before.live_bytes);
    cr_expect_geq(s.peak_bytes, before.live_bytes + MiB);
    cr_expect_eq(cuGraphExecDestroy(exec), CUDA_SUCCESS);
    cr_expect_eq(cuGraphDestroy(g), CUDA_SUCCESS);
    cr_expect_eq(cuModuleUnload(mod), CUDA_SUCCESS);
}

/* Stream capture through the driver: a stream-ordered allocation captured is not made at
 * capture time, and is made at each launch (2 launches, 2 allocations). */
Test(sim_driver, driver_capture_defers_allocations_to_the_launches)
{
    CUstream s = NULL;
    cr_assert_eq(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    struct wssim_stats before = stats();
    cr_assert_eq(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    CUstreamCaptureStatus status;
    cr_assert_eq(cuStreamIsCapturing(s, &status), CUDA_SUCCESS);
    cr_expect_eq(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CUdeviceptr p = 0;
    cr_assert_eq(cuMemAllocAsync(&p, 4 * MiB, s), CUDA_SUCCESS);
    cr_assert_eq(cuMemsetD8Async(p, 1, 4 * MiB, s), CUDA_SUCCESS);
    cr_assert_eq(cuMemFreeAsync(p, s), CUDA_SUCCESS);
    CUdeviceptr q = 0;
    cr_expect_eq(cuMemAlloc(&q, 16), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "cuMemAlloc while capturing (global)");
    CUgraph g = NULL;
    cr_assert_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                 "the forbidden call invalidated the capture");
    cr_expect_eq(stats().alloc_calls, before.alloc_calls, "nothing allocated while capturing");

    cr_assert_eq(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    cr_assert_eq(cuMemAllocAsync(&p, 4 * MiB, s), CUDA_SUCCESS);
    cr_assert_eq(cuMemFreeAsync(p, s), CUDA_SUCCESS);
    cr_assert_eq(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
    cr_expect_eq(stats().alloc_calls, before.alloc_calls, "nothing allocated while capturing");
    CUgraphExec exec = NULL;
    cr_assert_eq(cuGraphInstantiateWithFlags(&exec, g, 0), CUDA_SUCCESS);
    cr_expect_eq(cuGraphLaunch(exec, s), CUDA_SUCCESS);
    cr_expect_eq(cuGraphLaunch(exec, s), CUDA_SUCCESS);
    cr_expect_eq(stats().alloc_calls - before.alloc_calls, 2);
    cr_expect_eq(cuGraphExecDestroy(exec), CUDA_SUCCESS);
    cr_expect_eq(cuGraphDestroy(g), CUDA_SUCCESS);
    cr_expect_eq(cuStreamDestroy(s), CUDA_SUCCESS);
}

Test(sim_driver, driver_arrays_count_their_elements)
{
    struct wssim_stats before = stats();
    CUarray arr = NULL;
    CUDA_ARRAY_DESCRIPTOR d = {.Width = 64, .Height = 32, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
    cr_assert_eq(cuArrayCreate(&arr, &d), CUDA_SUCCESS);
    cr_expect_eq(stats().live_bytes - before.live_bytes, 64 * 32 * 4 * sizeof(float));
    CUDA_ARRAY_DESCRIPTOR bad = d;
    bad.NumChannels = 3;
    CUarray none = NULL;
    cr_expect_eq(cuArrayCreate(&none, &bad), CUDA_ERROR_INVALID_VALUE, "three channels");
    cr_expect_eq(cuArrayDestroy(arr), CUDA_SUCCESS);
    cr_expect_eq(stats().live_bytes, before.live_bytes);
}

/* Physical memory shared by POSIX file descriptor: a child (which inherits the descriptor, as a
 * process would receive it over a socket) imports it, maps it and sees the parent's bytes. */
Test(sim_driver, vmm_memory_exported_by_file_descriptor_is_shared)
{
    CUmemAllocationProp prop = device_prop();
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemGenericAllocationHandle h = 0;
    CUdeviceptr va = 0;
    CUmemAccessDesc rw = read_write();
    cr_assert_eq(cuMemCreate(&h, 2 * MiB, &prop, 0), CUDA_SUCCESS);
    cr_assert_eq(cuMemAddressReserve(&va, 2 * MiB, 0, 0, 0), CUDA_SUCCESS);
    cr_assert_eq(cuMemMap(va, 2 * MiB, 0, h, 0), CUDA_SUCCESS);
    cr_assert_eq(cuMemSetAccess(va, 2 * MiB, &rw, 1), CUDA_SUCCESS);
    ((unsigned char *)(uintptr_t)va)[1000] = 99;
    int fd = -1;
    cr_assert_eq(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), CUDA_SUCCESS);
    cr_assert_geq(fd, 0);
    cr_expect_eq(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_FABRIC, 0), CUDA_ERROR_NOT_SUPPORTED);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        CUmemGenericAllocationHandle imported = 0;
        CUdeviceptr there = 0;
        int ok = cuMemImportFromShareableHandle(&imported, (void *)(intptr_t)fd,
                                                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == CUDA_SUCCESS &&
                 cuMemAddressReserve(&there, 2 * MiB, 0, 0, 0) == CUDA_SUCCESS &&
                 cuMemMap(there, 2 * MiB, 0, imported, 0) == CUDA_SUCCESS &&
                 cuMemSetAccess(there, 2 * MiB, &rw, 1) == CUDA_SUCCESS;
        ok = ok && ((unsigned char *)(uintptr_t)there)[1000] == 99;
        if (ok)
            ((unsigned char *)(uintptr_t)there)[1001] = 77; /* written back through the child's mapping */
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child did not see the parent's bytes");
    cr_expect_eq(((unsigned char *)(uintptr_t)va)[1001], 77, "the parent sees the child's write");
    close(fd);
    cr_expect_eq(cuMemUnmap(va, 2 * MiB), CUDA_SUCCESS);
    cr_expect_eq(cuMemRelease(h), CUDA_SUCCESS);
    cr_expect_eq(cuMemAddressFree(va, 2 * MiB), CUDA_SUCCESS);
}
