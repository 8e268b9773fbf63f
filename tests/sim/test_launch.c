/* Kernel launches on the simulated device: direct host kernels, nvcc's registration and launch
 * entry points, and graphs. */
#include <criterion/criterion.h>

#include <cuda_runtime_api.h>

#include "wssim.h"
#include "wssim_nvcc.h"

static const dim3 one = {1, 1, 1};

/* A host kernel: out[i] = a[i] + b[i] for i < n. */
static void add_kernel(void **args)
{
    float *out = *(float **)args[0];
    const float *a = *(const float **)args[1];
    const float *b = *(const float **)args[2];
    int n = *(int *)args[3];
    for (int i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

static int calls;
static void count_kernel(void **args) { calls += *(int *)args[0]; }

Test(sim_launch, launch_passes_arguments)
{
    float *out, *a, *b;
    int n = 5;
    cr_assert_eq(cudaMallocManaged((void **)&out, 5 * sizeof(float), cudaMemAttachGlobal), 0);
    cr_assert_eq(cudaMallocManaged((void **)&a, 5 * sizeof(float), cudaMemAttachGlobal), 0);
    cr_assert_eq(cudaMallocManaged((void **)&b, 5 * sizeof(float), cudaMemAttachGlobal), 0);
    for (int i = 0; i < n; i++)
        a[i] = (float)i, b[i] = 10.0f * (float)i;
    void *args[] = {&out, &a, &b, &n};
    cr_assert_eq(cudaLaunchKernel((const void *)add_kernel, one, (dim3){5, 1, 1}, args, 0, NULL), cudaSuccess);
    for (int i = 0; i < n; i++)
        cr_expect_float_eq(out[i], 11.0f * (float)i, 1e-6f);
    cr_expect_eq(cudaFree(out), cudaSuccess);
    cr_expect_eq(cudaFree(a), cudaSuccess);
    cr_expect_eq(cudaFree(b), cudaSuccess);
}

Test(sim_launch, launch_variants_and_count)
{
    int step = 3;
    void *args[] = {&step};
    cudaLaunchConfig_t config = {.gridDim = {2, 1, 1}, .blockDim = {32, 1, 1}};
    cr_expect_eq(cudaLaunchKernel((const void *)count_kernel, one, one, args, 0, NULL), 0);
    cr_expect_eq(cudaLaunchKernelExC(&config, (const void *)count_kernel, args), 0);
    cr_expect_eq(cudaLaunchCooperativeKernel((const void *)count_kernel, one, one, args, 0, cudaStreamPerThread), 0);
    cr_expect_eq(calls, 9);
    struct wssim_stats s;
    wssim_get_stats(&s);
    cr_expect_eq(s.launches, 3);
    cr_expect_eq(cudaLaunchKernelExC(NULL, (const void *)count_kernel, args), cudaErrorInvalidValue);
}

Test(sim_launch, bad_launches_are_refused_without_running)
{
    int step = 1;
    void *args[] = {&step};
    const void *k = (const void *)count_kernel;
    cr_expect_eq(cudaLaunchKernel(NULL, one, one, args, 0, NULL), cudaErrorInvalidDeviceFunction);
    cr_expect_eq(cudaLaunchKernel(k, (dim3){0, 1, 1}, one, args, 0, NULL), cudaErrorInvalidConfiguration);
    cr_expect_eq(cudaLaunchKernel(k, one, (dim3){1025, 1, 1}, args, 0, NULL), cudaErrorInvalidConfiguration);
    cr_expect_eq(cudaLaunchKernel(k, one, (dim3){32, 32, 2}, args, 0, NULL), cudaErrorInvalidConfiguration);
    cr_expect_eq(cudaLaunchKernel(k, one, one, args, 0, (cudaStream_t)&step), cudaErrorInvalidResourceHandle);
    void *dev = NULL;
    cr_assert_eq(cudaMalloc(&dev, 64), cudaSuccess);
    cr_expect_eq(cudaLaunchKernel(dev, one, one, args, 0, NULL), cudaErrorInvalidDeviceFunction,
                 "device memory is not code");
    cr_expect_eq(calls, 0);
    struct wssim_stats s;
    wssim_get_stats(&s);
    cr_expect_eq(s.launches, 0);
    cr_expect_eq(cudaGetLastError(), cudaErrorInvalidDeviceFunction);
}

/* ---- nvcc's path: what a module constructor and a <<<>>> host stub do ---- */

static char fat_binary[16];
static char stub_add, stub_orphan; /* stand-ins for two host stubs' addresses */

static void **register_module(void)
{
    void **module = __cudaRegisterFatBinary(fat_binary);
    cr_assert_not_null(module);
    __cudaRegisterFunction(module, &stub_add, &stub_add, "_Z3addPfPKfS1_i", -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFunction(module, &stub_orphan, &stub_orphan, "orphan", -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFatBinaryEnd(module);
    cr_assert_eq(__cudaInitModule(module), 1);
    return module;
}

/* The body of an nvcc 13 host stub for add<<<grid, block>>>(out, a, b, n). */
static cudaError_t stub_launch(const void *stub, void **args)
{
    cudaKernel_t handle = NULL;
    cudaError_t err = __cudaGetKernel(&handle, stub);
    if (err != cudaSuccess)
        return err;
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
    if (__cudaPopCallConfiguration(&grid, &block, &smem, &stream) != cudaSuccess)
        return cudaErrorMissingConfiguration;
    return __cudaLaunchKernel(handle, grid, block, args, smem, stream);
}

Test(sim_launch, nvcc_entry_points_run_the_registered_host_kernel)
{
    void **module = register_module();
    cr_assert_eq(wssim_register_host_kernel("_Z3addPfPKfS1_i", add_kernel), 0);
    float out[3] = {0}, a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
    float *po = out, *pa = a, *pb = b;
    int n = 3;
    void *args[] = {&po, &pa, &pb, &n};
    cr_assert_eq(__cudaPushCallConfiguration((dim3){1, 1, 1}, (dim3){3, 1, 1}, 0, NULL), 0);
    cr_expect_eq(stub_launch(&stub_add, args), cudaSuccess);
    cr_expect_float_eq(out[2], 33.0f, 1e-6f);
    cr_expect_float_eq(out[0], 11.0f, 1e-6f);

    /* The legacy path hands the stub itself to cudaLaunchKernel. */
    out[1] = 0;
    cr_expect_eq(cudaLaunchKernel(&stub_add, one, one, args, 0, NULL), cudaSuccess);
    cr_expect_float_eq(out[1], 22.0f, 1e-6f);

    /* A registered kernel without a host implementation fails instead of calling the stub. */
    cr_assert_eq(__cudaPushCallConfiguration(one, one, 0, NULL), 0);
    cr_expect_eq(stub_launch(&stub_orphan, args), cudaErrorInvalidDeviceFunction);
    cr_expect_eq(cudaLaunchKernel(&stub_orphan, one, one, args, 0, NULL), cudaErrorInvalidDeviceFunction);

    struct wssim_stats s;
    wssim_get_stats(&s);
    cr_expect_eq(s.launches, 2);
    __cudaUnregisterFatBinary(module);
}

Test(sim_launch, unknown_stubs_and_handles_fail)
{
    cudaKernel_t handle = (cudaKernel_t)0x1;
    int junk = 0;
    cr_expect_eq(__cudaGetKernel(&handle, &junk), cudaErrorInvalidDeviceFunction);
    cr_expect_eq(__cudaGetKernel(NULL, &junk), cudaErrorInvalidValue);
    cr_expect_eq(__cudaLaunchKernel(NULL, one, one, NULL, 0, NULL), cudaErrorInvalidDeviceFunction);
    cr_expect_eq(__cudaLaunchKernel((cudaKernel_t)&junk, one, one, NULL, 0, NULL), cudaErrorInvalidDeviceFunction,
                 "a garbage handle is never called");
    cr_expect_eq(__cudaLaunchKernel_ptsz((cudaKernel_t)&junk, one, one, NULL, 0, NULL), cudaErrorInvalidDeviceFunction);
}

Test(sim_launch, unregistered_module_forgets_its_kernels)
{
    void **module = register_module();
    cudaKernel_t handle = NULL;
    cr_assert_eq(__cudaGetKernel(&handle, &stub_add), cudaSuccess);
    cr_assert_not_null(handle);
    __cudaUnregisterFatBinary(module);
    cr_expect_eq(__cudaGetKernel(&handle, &stub_add), cudaErrorInvalidDeviceFunction);
    cr_expect_eq(__cudaLaunchKernel(handle, one, one, NULL, 0, NULL), cudaErrorInvalidDeviceFunction);
}

Test(sim_launch, a_stub_registered_again_keeps_its_newest_name)
{
    static char first_image[4], second_image[4];
    void **first = __cudaRegisterFatBinary(first_image);
    void **second = __cudaRegisterFatBinary(second_image);
    cr_assert(first && second);
    __cudaRegisterFunction(first, &stub_add, &stub_add, "old_name", -1, 0, 0, 0, 0, 0);
    __cudaRegisterFunction(second, &stub_add, &stub_add, "new_name", -1, 0, 0, 0, 0, 0);
    cr_assert_eq(wssim_register_host_kernel("new_name", count_kernel), 0);
    __cudaUnregisterFatBinary(first); /* must not take the newer registration with it */
    int step = 5;
    void *args[] = {&step};
    cr_expect_eq(cudaLaunchKernel(&stub_add, one, one, args, 0, NULL), cudaSuccess);
    cr_expect_eq(calls, 5);
    __cudaUnregisterFatBinary(second);
    cudaKernel_t handle = NULL;
    cr_expect_eq(__cudaGetKernel(&handle, &stub_add), cudaErrorInvalidDeviceFunction);
}

Test(sim_launch, call_configuration_is_a_per_thread_stack)
{
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
    cr_assert_eq(
        __cudaPushCallConfiguration((dim3){7, 1, 1}, (dim3){64, 1, 1}, 128, (struct CUstream_st *)cudaStreamPerThread),
        0);
    cr_assert_eq(__cudaPushCallConfiguration((dim3){2, 2, 1}, one, 0, NULL), 0);
    cr_assert_eq(__cudaPopCallConfiguration(&grid, &block, &smem, &stream), cudaSuccess);
    cr_expect_eq(grid.y, 2);
    cr_assert_eq(__cudaPopCallConfiguration(&grid, &block, &smem, &stream), cudaSuccess);
    cr_expect_eq(grid.x, 7);
    cr_expect_eq(block.x, 64);
    cr_expect_eq(smem, 128);
    cr_expect_eq(stream, cudaStreamPerThread);
    cr_expect_eq(__cudaPopCallConfiguration(&grid, &block, &smem, &stream), cudaErrorMissingConfiguration);
}

Test(sim_launch, register_host_kernel_rejects_null)
{
    cr_expect_eq(wssim_register_host_kernel(NULL, add_kernel), -1);
    cr_expect_eq(wssim_register_host_kernel("k", NULL), -1);
    cr_expect_eq(wssim_is_simulated(), 1);
}

Test(sim_launch, graphs)
{
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cr_assert_eq(cudaGraphCreate(&graph, 0), cudaSuccess);
    cr_assert_eq(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    cr_expect_eq(cudaGraphLaunch(exec, NULL), cudaSuccess);
    cr_expect_eq(cudaGraphLaunch(exec, cudaStreamPerThread), cudaSuccess);
    cr_expect_eq(cudaGraphLaunch((cudaGraphExec_t)graph, NULL), cudaErrorInvalidValue,
                 "a graph is not an executable graph");
    cr_expect_eq(cudaGraphLaunch(NULL, NULL), cudaErrorInvalidValue);
    cr_expect_eq(cudaGraphInstantiate(&exec, (cudaGraph_t)&exec, 0), cudaErrorInvalidValue);
    cr_expect_eq(cudaGraphDestroy(graph), cudaSuccess);
    cr_expect_eq(cudaGraphLaunch(exec, NULL), cudaSuccess, "an instance outlives its graph");
    cr_expect_eq(cudaGraphExecDestroy(exec), cudaSuccess);
    cr_expect_eq(cudaGraphLaunch(exec, NULL), cudaErrorInvalidValue, "destroyed instance");
    cr_expect_eq(cudaGraphExecDestroy(exec), cudaErrorInvalidValue);
    cr_expect_eq(cudaGraphDestroy(graph), cudaErrorInvalidValue);
}
