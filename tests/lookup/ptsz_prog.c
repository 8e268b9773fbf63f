/*
 * The per-thread default stream forms of the runtime calls, called by name as a program built with
 * nvcc --default-stream per-thread calls them.  Linked against the simulated device; -rdynamic so
 * that its host "kernels" have names.  Prints key=value lines the tests compare with the trace.
 *
 *   ptsz N   N cudaMallocAsync_ptsz/cudaFreeAsync_ptsz pairs on a stream (sizes 100 + i), one more
 *            pair on the per-thread stream (stream 0, 5000 bytes), one cudaMallocFromPoolAsync_ptsz
 *            (3000 bytes, freed), 2 cudaLaunchKernel_ptsz, 1 cudaLaunchKernelExC_ptsz,
 *            1 cudaLaunchCooperativeKernel_ptsz, 1 cudaGraphLaunch_ptsz of an empty graph
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

cudaError_t cudaMallocAsync_ptsz(void **ptr, size_t size, cudaStream_t stream);
cudaError_t cudaFreeAsync_ptsz(void *ptr, cudaStream_t stream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream);
cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 grid, dim3 block, void **args, size_t smem,
                                  cudaStream_t stream);
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func, void **args);
cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 grid, dim3 block, void **args, size_t smem,
                                             cudaStream_t stream);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        cudaError_t err_ = (call);                                                                                     \
        if (err_ != cudaSuccess) {                                                                                     \
            fprintf(stderr, "ptsz_prog: %s failed: %d at line %d\n", #call, (int)err_, __LINE__);                      \
            exit(70);                                                                                                  \
        }                                                                                                              \
    } while (0)

void ptsz_kernel_add(void **args)
{
    int *counter = *(int **)args[0];
    __atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
}

static int mode_ptsz(int n)
{
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    printf("stream=%llu\n", (unsigned long long)(uintptr_t)s);
    for (int i = 0; i < n; i++) {
        void *p = NULL;
        CHECK(cudaMallocAsync_ptsz(&p, 100 + (size_t)i, s));
        CHECK(cudaFreeAsync_ptsz(p, s));
    }
    void *q = NULL, *r = NULL;
    CHECK(cudaMallocAsync_ptsz(&q, 5000, 0));
    CHECK(cudaFreeAsync_ptsz(q, 0));
    cudaMemPool_t pool;
    CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    CHECK(cudaMallocFromPoolAsync_ptsz(&r, 3000, pool, s));
    CHECK(cudaFreeAsync_ptsz(r, s));

    int *counter;
    CHECK(cudaMallocManaged((void **)&counter, sizeof *counter, cudaMemAttachGlobal));
    *counter = 0;
    void *args[] = {&counter};
    for (int i = 0; i < 2; i++)
        CHECK(cudaLaunchKernel_ptsz((const void *)ptsz_kernel_add, (dim3){3, 1, 1}, (dim3){32, 1, 1}, args, 0, s));
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDim = (dim3){5, 1, 1};
    cfg.blockDim = (dim3){64, 1, 1};
    cfg.stream = s;
    CHECK(cudaLaunchKernelExC_ptsz(&cfg, (const void *)ptsz_kernel_add, args));
    CHECK(
        cudaLaunchCooperativeKernel_ptsz((const void *)ptsz_kernel_add, (dim3){7, 1, 1}, (dim3){16, 1, 1}, args, 0, 0));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaGraphCreate(&graph, 0));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphLaunch_ptsz(exec, s));
    printf("graph_exec=%llu\n", (unsigned long long)(uintptr_t)exec);
    CHECK(cudaStreamSynchronize_ptsz(s));
    CHECK(cudaStreamSynchronize_ptsz(0));
    printf("counter=%d\n", *counter);
    CHECK(cudaFree(counter));
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaStreamDestroy(s));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "ptsz"))
        return mode_ptsz(atoi(argv[2]));
    fprintf(stderr, "usage: ptsz_prog ptsz N\n");
    return 64;
}
