/* Concurrency check of the simulated device for ThreadSanitizer builds, where Criterion cannot
 * start (its sandbox maps an arena at addresses TSan reserves; Criterion issue #274). Threads
 * allocate, free, create streams and events, register and launch kernels at the same time; the
 * final accounting must be exact and TSan must stay quiet. Exits 0 on success, 1 on a mismatch. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include <cuda_runtime_api.h>

#include "wssim.h"
#include "wssim_nvcc.h"

enum { THREADS = 4, ROUNDS = 1000 };

static atomic_int kernel_runs;
static atomic_int failures;
static char stubs[THREADS]; /* stand-ins for one nvcc host stub per thread */
static const dim3 one = {1, 1, 1};

static void count_kernel(void **args)
{
    (void)args;
    atomic_fetch_add(&kernel_runs, 1);
}

static void expect(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "tsan_stress: %s\n", what);
        atomic_fetch_add(&failures, 1);
    }
}

static size_t size_of(int id, int round) { return (size_t)(1 + (id * 7919 + round * 104729) % 5000); }

static void one_round(int id, int round)
{
    void *p = NULL, *h = NULL;
    cudaStream_t s;
    cudaEvent_t e;
    cudaKernel_t k = NULL;
    expect(cudaMalloc(&p, size_of(id, round)) == cudaSuccess, "cudaMalloc");
    expect(cudaMallocHost(&h, 64) == cudaSuccess, "cudaMallocHost");
    expect(cudaStreamCreate(&s) == cudaSuccess, "cudaStreamCreate");
    expect(cudaEventCreate(&e) == cudaSuccess, "cudaEventCreate");
    expect(cudaMemsetAsync(p, id, size_of(id, round), s) == cudaSuccess, "cudaMemsetAsync");
    expect(cudaEventRecord(e, s) == cudaSuccess, "cudaEventRecord");
    expect(cudaLaunchKernel((const void *)count_kernel, one, one, NULL, 0, s) == cudaSuccess, "cudaLaunchKernel");
    expect(__cudaGetKernel(&k, &stubs[id]) == cudaSuccess, "__cudaGetKernel");
    expect(__cudaLaunchKernel(k, one, one, NULL, 0, s) == cudaSuccess, "__cudaLaunchKernel");
    expect(cudaEventDestroy(e) == cudaSuccess, "cudaEventDestroy");
    expect(cudaStreamDestroy(s) == cudaSuccess, "cudaStreamDestroy");
    expect(cudaFreeHost(h) == cudaSuccess, "cudaFreeHost");
    expect(cudaFree(p) == cudaSuccess, "cudaFree");
    expect(cudaGetLastError() == cudaSuccess, "a stray error");
}

static void *work(void *arg)
{
    int id = (int)(long)arg;
    char name[32];
    snprintf(name, sizeof name, "kernel_%d", id);
    void **module = __cudaRegisterFatBinary(&stubs[id]);
    __cudaRegisterFunction(module, &stubs[id], &stubs[id], name, -1, NULL, NULL, NULL, NULL, NULL);
    expect(wssim_register_host_kernel(name, count_kernel) == 0, "register host kernel");
    for (int r = 0; r < ROUNDS; r++)
        one_round(id, r);
    __cudaUnregisterFatBinary(module);
    return NULL;
}

int main(void)
{
    pthread_t threads[THREADS];
    for (long t = 0; t < THREADS; t++)
        if (pthread_create(&threads[t], NULL, work, (void *)t) != 0)
            return 1;
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    struct wssim_stats s;
    wssim_get_stats(&s);
    expect(s.live_bytes == 0, "live bytes left");
    expect(s.alloc_calls == THREADS * ROUNDS, "alloc_calls");
    expect(s.free_calls == THREADS * ROUNDS, "free_calls");
    expect(s.launches == 2 * THREADS * ROUNDS, "launches");
    expect(atomic_load(&kernel_runs) == 2 * THREADS * ROUNDS, "kernel runs");
    expect(s.peak_bytes >= 1 && s.peak_bytes <= THREADS * 5000, "peak out of range");
    return atomic_load(&failures) ? 1 : 0;
}
