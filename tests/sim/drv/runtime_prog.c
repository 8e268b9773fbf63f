/* Linked against the real libcudart.so (never wssim) and run on the simulated device with
 * LD_LIBRARY_PATH=<build>/lib/sim, usually behind the counting driver (driver_shim.c).  Each scenario makes
 * runtime calls and prints, as "expect.<driver call>=<n>" lines, how many calls of the driver
 * they must cause, counted by the program as it makes them; the counting driver prints what reached
 * the driver.  Exits 0 when every runtime call returned what it should, else prints what failed
 * and exits 1.
 *   alloc    allocation and free of every kind, including calls the runtime answers itself
 *   launch   launches through each runtime entry point, nvcc's included
 *   entry    driver entry points fetched through the runtime and called
 *   query    device queries only: the runtime initialises the driver but takes no context
 *   noop     launches of a registered kernel without a host implementation: with
 *            WSSIM_NOOP_KERNELS=1 they succeed and compute nothing, without it they fail */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "wssim.h"
#include "wssim_nvcc.h"

cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t stream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t stream);
cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                                  cudaStream_t stream);

static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "runtime_prog: %s\n", what);
        failures++;
    }
}

#define CHECK(call) check((call) == cudaSuccess, #call)

static void expect(const char *call, unsigned n) { printf("expect.%s=%u\n", call, n); }

static int alloc(void)
{
    unsigned mem_alloc = 0, mem_free = 0, host = 0, host_alloc = 0, free_host = 0;
    unsigned async = 0, async_ptsz = 0, free_async = 0, free_async_ptsz = 0;
    void *p[6] = {0}, *zero = (void *)1, *h = NULL, *h2 = NULL, *m = NULL, *pitched = NULL;
    size_t pitch = 0;
    for (int i = 0; i < 6; i++, mem_alloc++)
        CHECK(cudaMalloc(&p[i], (size_t)(i + 1) << 12));
    CHECK(cudaMalloc(&zero, 0)); /* answered by the runtime: no driver call */
    check(zero == NULL, "cudaMalloc(0) gives NULL");
    for (int i = 0; i < 6; i++, mem_free++)
        CHECK(cudaFree(p[i]));
    CHECK(cudaFree(NULL)); /* no driver call either */
    check(cudaFree(p[0]) == cudaErrorInvalidValue, "double free refused");
    mem_free++; /* it reached the driver, which refused it */
    CHECK(cudaMallocHost(&h, 4096)), host++;
    CHECK(cudaHostAlloc(&h2, 4096, cudaHostAllocMapped)), host_alloc++;
    CHECK(cudaFreeHost(h)), free_host++;
    CHECK(cudaFreeHost(h2)), free_host++;
    CHECK(cudaMallocManaged(&m, 1000, cudaMemAttachGlobal));
    CHECK(cudaMallocPitch(&pitched, &pitch, 100, 10));
    CHECK(cudaFree(m)), mem_free++;
    CHECK(cudaFree(pitched)), mem_free++;
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    for (int i = 0; i < 3; i++, async++)
        CHECK(cudaMallocAsync(&p[i], 1 << 20, s));
    for (int i = 3; i < 5; i++, async_ptsz++)
        CHECK(cudaMallocAsync_ptsz(&p[i], 1 << 20, s));
    for (int i = 0; i < 3; i++, free_async++)
        CHECK(cudaFreeAsync(p[i], s));
    for (int i = 3; i < 5; i++, free_async_ptsz++)
        CHECK(cudaFreeAsync_ptsz(p[i], s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaStreamDestroy(s));
    expect("cuMemAlloc", mem_alloc);
    expect("cuMemFree", mem_free);
    expect("cuMemAllocHost", host);
    expect("cuMemHostAlloc", host_alloc);
    expect("cuMemFreeHost", free_host);
    expect("cuMemAllocManaged", 1);
    expect("cuMemAllocPitch", 1);
    expect("cuMemAllocAsync", async);
    expect("cuMemAllocAsync_ptsz", async_ptsz);
    expect("cuMemFreeAsync", free_async);
    expect("cuMemFreeAsync_ptsz", free_async_ptsz);
    return 0;
}

static void add_one(void **args)
{
    int *data = *(int **)args[0];
    data[0] += 1;
}

static char stub; /* stands for the host stub of __global__ void bump(int *) */

static int launch(void)
{
    unsigned legacy = 0, per_thread = 0, ex = 0;
    int *data = NULL;
    CHECK(cudaMalloc((void **)&data, sizeof *data));
    CHECK(cudaMemset(data, 0, sizeof *data));
    void *args[] = {&data};
    dim3 one = {1, 1, 1};
    for (int i = 0; i < 4; i++, legacy++)
        CHECK(cudaLaunchKernel((const void *)add_one, one, one, args, 0, NULL));
    for (int i = 0; i < 2; i++, per_thread++)
        CHECK(cudaLaunchKernel_ptsz((const void *)add_one, one, one, args, 0, NULL));
    cudaLaunchConfig_t config = {.gridDim = one, .blockDim = one};
    CHECK(cudaLaunchKernelExC(&config, (const void *)add_one, args)), ex++;
    /* nvcc's path: the module registers the stub, the stub gets a handle and launches it. */
    static char fat_binary[8];
    void **module = __cudaRegisterFatBinary(fat_binary);
    __cudaRegisterFunction(module, &stub, &stub, "_Z4bumpPi", -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFatBinaryEnd(module);
    int (*reg)(const char *, void (*)(void **)) =
        (int (*)(const char *, void (*)(void **)))dlsym(RTLD_DEFAULT, "wssim_register_host_kernel");
    check(reg && reg("_Z4bumpPi", add_one) == 0, "wssim_register_host_kernel");
    cudaKernel_t handle = NULL;
    CHECK(__cudaGetKernel(&handle, &stub));
    for (int i = 0; i < 3; i++, legacy++)
        CHECK(__cudaLaunchKernel(handle, one, one, args, 0, NULL));
    CHECK(__cudaLaunchKernel_ptsz(handle, one, one, args, 0, NULL)), per_thread++;
    check(cudaLaunchKernel((const void *)add_one, (dim3){1, 1, 1}, (dim3){2048, 1, 1}, args, 0, NULL) ==
              cudaErrorInvalidConfiguration,
          "a block of 2048 threads is a configuration error");
    legacy++; /* the driver refused it */
    int host = 0;
    CHECK(cudaMemcpy(&host, data, sizeof host, cudaMemcpyDeviceToHost));
    check(host == 11, "every successful launch ran its kernel once");
    __cudaUnregisterFatBinary(module);
    CHECK(cudaFree(data));
    expect("cuLaunchKernel", legacy);
    expect("cuLaunchKernel_ptsz", per_thread);
    expect("cuLaunchKernelEx", ex);
    return 0;
}

static int entry(void)
{
    CUresult (*mem_alloc)(CUdeviceptr *, size_t) = NULL;
    CUresult (*mem_free)(CUdeviceptr) = NULL;
    enum cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
    CHECK(cudaGetDriverEntryPointByVersion("cuMemAlloc", (void **)&mem_alloc, 12000, cudaEnableDefault, &status));
    check(status == cudaDriverEntryPointSuccess && mem_alloc, "cuMemAlloc through the runtime");
    CHECK(cudaGetDriverEntryPointByVersion("cuMemFree", (void **)&mem_free, 12000, cudaEnableDefault, &status));
    if (!mem_alloc || !mem_free)
        return 1;
    CUdeviceptr p[3];
    for (int i = 0; i < 3; i++)
        check(mem_alloc(&p[i], 256) == CUDA_SUCCESS, "cuMemAlloc");
    for (int i = 0; i < 3; i++)
        check(mem_free(p[i]) == CUDA_SUCCESS, "cuMemFree");
    void *fn = NULL;
    CHECK(cudaGetDriverEntryPointByVersion("cuNoSuchCall", &fn, 12000, cudaEnableDefault, &status));
    check(status == cudaDriverEntryPointSymbolNotFound && fn == NULL, "unknown entry point");
    expect("cuMemAlloc", 3);
    expect("cuMemFree", 3);
    return 0;
}

static int query(void)
{
    int count = 0, version = 0;
    struct cudaDeviceProp prop;
    CHECK(cudaGetDeviceCount(&count));
    CHECK(cudaGetDeviceProperties(&prop, 0));
    CHECK(cudaDriverGetVersion(&version));
    check(count == 1 && version >= 13000, "one device, a CUDA 13 driver");
    expect("cuDevicePrimaryCtxRetain", 0);
    expect("cuInit", 1);
    return 0;
}

static int noop(void)
{
    static char fat_binary[8];
    void **module = __cudaRegisterFatBinary(fat_binary);
    __cudaRegisterFunction(module, &stub, &stub, "_Z12no_host_codePi", -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFatBinaryEnd(module);
    int *data = NULL, host = 5;
    CHECK(cudaMalloc((void **)&data, sizeof *data));
    CHECK(cudaMemcpy(data, &host, sizeof host, cudaMemcpyHostToDevice));
    cudaKernel_t handle = NULL;
    CHECK(__cudaGetKernel(&handle, &stub));
    void *args[] = {&data};
    unsigned ok = 0, refused = 0;
    for (int i = 0; i < 4; i++) {
        cudaError_t err = __cudaLaunchKernel(handle, (dim3){8, 1, 1}, (dim3){128, 1, 1}, args, 0, NULL);
        ok += err == cudaSuccess;
        refused += err == cudaErrorInvalidDeviceFunction;
    }
    CHECK(cudaMemcpy(&host, data, sizeof host, cudaMemcpyDeviceToHost));
    check(host == 5, "no kernel computed anything");
    struct wssim_stats stats;
    void (*get_stats)(struct wssim_stats *) = (void (*)(struct wssim_stats *))dlsym(RTLD_DEFAULT, "wssim_get_stats");
    check(get_stats != NULL, "wssim_get_stats");
    if (get_stats) {
        get_stats(&stats);
        printf("noop_launches=%llu\n", (unsigned long long)stats.noop_launches);
    }
    printf("launched=%u\nrefused=%u\n", ok, refused);
    CHECK(cudaFree(data));
    __cudaUnregisterFatBinary(module);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(void);
    } scenarios[] = {{"alloc", alloc}, {"launch", launch}, {"entry", entry}, {"query", query}, {"noop", noop}};
    for (size_t i = 0; argc == 2 && i < sizeof scenarios / sizeof scenarios[0]; i++)
        if (strcmp(argv[1], scenarios[i].name) == 0) {
            int rc = scenarios[i].run();
            fflush(stdout);
            return rc || failures ? 1 : 0;
        }
    fprintf(stderr, "usage: runtime_prog alloc|launch|entry|query|noop\n");
    return 2;
}
