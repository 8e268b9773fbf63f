/*
 * Hook-cost and collector-throughput workload: N iterations of cudaMalloc, cudaLaunchKernel and
 * cudaFree on the simulated device.  scripts/bench.sh runs it with and without the tracer under
 * callgrind (only bench_loop is measured) and traced with WSTRACE_COLLECT=0 to time `wstrace collect`.
 * `ws_hookbench N driver`: the same through the driver API (cuMemAlloc_v2, cuLaunchKernel,
 * cuMemFree_v2), measured in bench_loop_driver.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wssim.h"

void bench_kernel(void **args);
void bench_kernel(void **args) { (void)args; }

__attribute__((noinline)) int bench_loop(long n);
__attribute__((noinline)) int bench_loop(long n)
{
    int failures = 0;
    void *args[1] = {NULL};
    for (long i = 0; i < n; i++) {
        void *p = NULL;
        failures += cudaMalloc(&p, 256 + (size_t)(i & 1023)) != cudaSuccess;
        failures +=
            cudaLaunchKernel((const void *)bench_kernel, (dim3){1, 1, 1}, (dim3){32, 1, 1}, args, 0, 0) != cudaSuccess;
        failures += cudaFree(p) != cudaSuccess;
    }
    return failures;
}

__attribute__((noinline)) int bench_loop_driver(long n, CUfunction f);
__attribute__((noinline)) int bench_loop_driver(long n, CUfunction f)
{
    int failures = 0;
    void *args[1] = {NULL};
    for (long i = 0; i < n; i++) {
        CUdeviceptr p = 0;
        failures += cuMemAlloc(&p, 256 + (size_t)(i & 1023)) != CUDA_SUCCESS;
        failures += cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL) != CUDA_SUCCESS;
        failures += cuMemFree(p) != CUDA_SUCCESS;
    }
    return failures;
}

static int driver(long n)
{
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    if (wssim_register_host_kernel("bench_kernel", bench_kernel) != 0 || cuInit(0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
        cuModuleLoadData(&mod, "a module image") != CUDA_SUCCESS ||
        cuModuleGetFunction(&f, mod, "bench_kernel") != CUDA_SUCCESS) {
        fprintf(stderr, "ws_hookbench: the driver API is not available\n");
        return -1;
    }
    return bench_loop_driver(n, f);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
    int use_driver = argc > 2 && strcmp(argv[2], "driver") == 0;
    if (n <= 0 || argc > 3 || (argc > 2 && !use_driver)) {
        fprintf(stderr, "usage: ws_hookbench [ITERATIONS [driver]]\n");
        return 2;
    }
    int failures = use_driver ? driver(n) : bench_loop(n);
    printf("%ld iterations, %ld intercepted calls, %d failures\n", n, 3 * n, failures);
    return failures != 0;
}
