/* Concurrent allocation on the simulated device: accounting stays exact. */
#include <criterion/criterion.h>
#include <pthread.h>

#include <cuda_runtime_api.h>

#include "wssim.h"

enum { THREADS = 4, ROUNDS = 2000, KEPT = 8 };

struct worker {
    int id;
    int failures;
    void *kept[KEPT];
};

/* Sizes depend on thread and round only, so the expected totals are known in advance. */
static size_t size_of(int id, int round) { return (size_t)(1 + (id * 7919 + round * 104729) % 5000); }

static void *work(void *arg)
{
    struct worker *w = arg;
    for (int r = 0; r < ROUNDS; r++) {
        void *p = NULL, *q = NULL;
        if (cudaMalloc(&p, size_of(w->id, r)) != cudaSuccess ||
            cudaMallocAsync(&q, size_of(w->id, r + 1), cudaStreamPerThread) != cudaSuccess) {
            w->failures++;
            continue;
        }
        ((char *)p)[0] = (char)r; /* the memory is real and this thread's own */
        if (cudaFree(p) != cudaSuccess || cudaFreeAsync(q, NULL) != cudaSuccess)
            w->failures++;
    }
    for (int k = 0; k < KEPT; k++)
        if (cudaMalloc(&w->kept[k], size_of(w->id, k)) != cudaSuccess)
            w->failures++;
    return NULL;
}

Test(sim_threads, four_threads_exact_accounting)
{
    pthread_t threads[THREADS];
    struct worker workers[THREADS] = {{0}};
    uint64_t kept_bytes = 0;
    for (int t = 0; t < THREADS; t++) {
        workers[t].id = t;
        cr_assert_eq(pthread_create(&threads[t], NULL, work, &workers[t]), 0);
        for (int k = 0; k < KEPT; k++)
            kept_bytes += size_of(t, k);
    }
    for (int t = 0; t < THREADS; t++)
        cr_assert_eq(pthread_join(threads[t], NULL), 0);
    for (int t = 0; t < THREADS; t++)
        cr_expect_eq(workers[t].failures, 0, "thread %d", t);

    struct wssim_stats s;
    wssim_get_stats(&s);
    cr_expect_eq(s.live_bytes, kept_bytes);
    cr_expect_eq(s.alloc_calls, (uint64_t)THREADS * (2 * ROUNDS + KEPT));
    cr_expect_eq(s.free_calls, (uint64_t)THREADS * 2 * ROUNDS);
    cr_expect_eq(s.failed_allocs, 0);
    cr_expect_geq(s.peak_bytes, kept_bytes);
    /* At most two blocks per thread are live at once besides the kept ones. */
    cr_expect_leq(s.peak_bytes, kept_bytes + THREADS * 2 * 5000);

    for (int t = 0; t < THREADS; t++)
        for (int k = 0; k < KEPT; k++)
            cr_expect_eq(cudaFree(workers[t].kept[k]), cudaSuccess);
    wssim_get_stats(&s);
    cr_expect_eq(s.live_bytes, 0);
    cr_expect_eq(s.alloc_calls, s.free_calls);
}
