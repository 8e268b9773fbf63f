/*
 * Hook-cost and collector-throughput workload: N iterations of cudaMalloc, cudaLaunchKernel and
 * cudaFree on the simulated device.  scripts/bench.sh runs it with and without the tracer under
 * callgrind (only bench_loop is measured) and traced with WSTRACE_COLLECT=0 to time `wstrace collect`.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

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

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
    if (n <= 0) {
        fprintf(stderr, "usage: ws_hookbench [ITERATIONS]\n");
        return 2;
    }
    int failures = bench_loop(n);
    printf("%ld iterations, %ld intercepted calls, %d failures\n", n, 3 * n, failures);
    return failures != 0;
}
