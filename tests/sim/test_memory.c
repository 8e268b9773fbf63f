/* Device memory of the simulated device: capacity, accounting, invalid frees, copies. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "wssim.h"

#define MiB ((size_t)1 << 20)

static struct wssim_stats stats(void)
{
    struct wssim_stats s;
    wssim_get_stats(&s);
    return s;
}

/* WSSIM_CAPACITY is read once, at the first call; each Criterion test is its own process, so a
 * test that sets it before touching the device gets a fresh device of that size. */
static void use_capacity(const char *value, uint64_t expected)
{
    cr_assert_eq(setenv("WSSIM_CAPACITY", value, 1), 0);
    cr_assert_eq(stats().capacity, expected, "capacity was read before the test set it");
}

Test(sim_memory, oom_exactly_at_capacity)
{
    use_capacity("1M", MiB);
    void *a = NULL, *b = NULL, *c = (void *)0x1;
    cr_assert_eq(cudaMalloc(&a, MiB - 256), cudaSuccess);
    cr_assert_eq(cudaMalloc(&b, 256), cudaSuccess, "the last byte of capacity must be usable");
    cr_expect_eq(cudaMalloc(&c, 1), cudaErrorMemoryAllocation);
    cr_expect_eq(c, (void *)0x1, "a failed allocation leaves the out-parameter alone");
    struct wssim_stats s = stats();
    cr_expect_eq(s.live_bytes, MiB);
    cr_expect_eq(s.failed_allocs, 1);
    cr_expect_eq(s.alloc_calls, 2);
    size_t free_bytes = 1, total = 0;
    cr_assert_eq(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
    cr_expect_eq(free_bytes, 0);
    cr_expect_eq(total, MiB);
    cr_assert_eq(cudaFree(b), cudaSuccess);
    cr_expect_eq(cudaMalloc(&c, 256), cudaSuccess, "freed capacity is available again");
    cr_expect_eq(cudaFree(a), cudaSuccess);
    cr_expect_eq(cudaFree(c), cudaSuccess);
}

Test(sim_memory, single_request_over_capacity_fails)
{
    use_capacity("64KiB", 64 * 1024);
    void *p = NULL;
    cr_expect_eq(cudaMalloc(&p, 64 * 1024 + 1), cudaErrorMemoryAllocation);
    cr_expect_eq(cudaMallocAsync(&p, SIZE_MAX, NULL), cudaErrorMemoryAllocation);
    cr_expect_eq(cudaMallocManaged(&p, 64 * 1024 + 1, cudaMemAttachGlobal), cudaErrorMemoryAllocation);
    cr_expect_eq(stats().failed_allocs, 3);
    cr_expect_eq(stats().live_bytes, 0);
}

Test(sim_memory, capacity_suffixes) { use_capacity("3G", (uint64_t)3 << 30); }

Test(sim_memory, capacity_plain_bytes) { use_capacity("123456", 123456); }

Test(sim_memory, default_capacity_is_16_gib)
{
    cr_assert_eq(unsetenv("WSSIM_CAPACITY"), 0);
    cr_expect_eq(stats().capacity, (uint64_t)16 << 30);
    struct cudaDeviceProp prop;
    cr_assert_eq(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
    cr_expect_eq(prop.totalGlobalMem, (size_t)16 << 30);
}

Test(sim_memory, bad_capacity_warns_once_and_uses_default, .init = cr_redirect_stderr)
{
    cr_assert_eq(setenv("WSSIM_CAPACITY", "12X", 1), 0);
    cr_expect_eq(stats().capacity, (uint64_t)16 << 30);
    size_t free_bytes, total;
    cr_assert_eq(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
    cr_expect_eq(total, (size_t)16 << 30);
    fflush(stderr);
    cr_expect_stderr_eq_str("wssim: WSSIM_CAPACITY='12X' is not a byte count (e.g. 1073741824, "
                            "512M, 2GiB); using 16 GiB\n");
}

Test(sim_memory, capacity_rejects_signs_blanks_and_overflow)
{
    const char *bad[] = {"-1", " 5", "5 ", "5MB", "", "99999999999999999999", "17179869184G"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        /* Only the first read counts, so each value needs its own process: check the parse
         * through a child. */
        pid_t pid = fork();
        cr_assert_neq(pid, -1);
        if (pid == 0) {
            setenv("WSSIM_CAPACITY", bad[i], 1);
            if (!freopen("/dev/null", "w", stderr))
                _exit(2);
            _exit(stats().capacity == (uint64_t)16 << 30 ? 0 : 1);
        }
        int status = 0;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "'%s' was accepted", bad[i]);
    }
}

Test(sim_memory, exact_live_peak_and_counts)
{
    void *p[4];
    size_t sizes[4] = {1000, 3, 4096, 77};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(cudaMalloc(&p[i], sizes[i]), cudaSuccess);
    struct wssim_stats s = stats();
    cr_expect_eq(s.live_bytes, 1000 + 3 + 4096 + 77);
    cr_expect_eq(s.peak_bytes, 1000 + 3 + 4096 + 77);
    cr_expect_eq(s.alloc_calls, 4);
    cr_assert_eq(cudaFree(p[2]), cudaSuccess);
    cr_assert_eq(cudaFree(p[0]), cudaSuccess);
    s = stats();
    cr_expect_eq(s.live_bytes, 3 + 77);
    cr_expect_eq(s.peak_bytes, 1000 + 3 + 4096 + 77);
    cr_expect_eq(s.free_calls, 2);
    wssim_reset_peak();
    cr_expect_eq(stats().peak_bytes, 3 + 77);
    cr_assert_eq(cudaMalloc(&p[0], 10), cudaSuccess);
    cr_expect_eq(stats().peak_bytes, 3 + 77 + 10);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(cudaFree(p[i == 0 ? 0 : 1]), cudaSuccess);
    cr_assert_eq(cudaFree(p[3]), cudaSuccess);
    s = stats();
    cr_expect_eq(s.live_bytes, 0);
    cr_expect_eq(s.alloc_calls, 5);
    cr_expect_eq(s.free_calls, 5);
    cr_expect_eq(s.failed_allocs, 0);
}

Test(sim_memory, pointers_are_256_byte_aligned_and_writable)
{
    void *p[3];
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(cudaMalloc(&p[i], 1 + (size_t)i * 300), cudaSuccess);
        cr_expect_eq((uintptr_t)p[i] % 256, 0);
        memset(p[i], 0xab, 1 + (size_t)i * 300);
    }
    for (int i = 0; i < 3; i++)
        cr_expect_eq(cudaFree(p[i]), cudaSuccess);
}

Test(sim_memory, zero_bytes_succeeds_with_null)
{
    void *p = (void *)0x1;
    cr_expect_eq(cudaMalloc(&p, 0), cudaSuccess);
    cr_expect_null(p);
    cr_expect_eq(cudaFree(p), cudaSuccess);
    cr_expect_eq(stats().alloc_calls, 0, "nothing was allocated");
    cr_expect_eq(cudaMalloc(NULL, 16), cudaErrorInvalidValue);
}

Test(sim_memory, invalid_and_double_frees)
{
    int on_stack = 0;
    void *p = NULL, *h = NULL;
    cr_expect_eq(cudaFree(NULL), cudaSuccess);
    cr_expect_eq(cudaFree(&on_stack), cudaErrorInvalidValue);
    cr_assert_eq(cudaMalloc(&p, 512), cudaSuccess);
    cr_expect_eq(cudaFree((char *)p + 1), cudaErrorInvalidValue, "interior pointer");
    cr_expect_eq(cudaFreeHost(p), cudaErrorInvalidValue, "device pointer to cudaFreeHost");
    cr_expect_eq(cudaFree(p), cudaSuccess);
    cr_expect_eq(cudaFree(p), cudaErrorInvalidValue, "double free");
    cr_expect_eq(cudaFreeAsync(p, NULL), cudaErrorInvalidValue, "double free, async");
    cr_assert_eq(cudaMallocHost(&h, 100), cudaSuccess);
    cr_expect_eq(cudaFree(h), cudaErrorInvalidValue, "host pointer to cudaFree");
    cr_expect_eq(cudaFreeHost(h), cudaSuccess);
    cr_expect_eq(cudaFreeHost(h), cudaErrorInvalidValue, "double cudaFreeHost");
    cr_expect_eq(cudaFreeHost(&on_stack), cudaErrorInvalidValue);
    cr_expect_eq(cudaFreeHost(NULL), cudaSuccess);
    struct wssim_stats s = stats();
    cr_expect_eq(s.alloc_calls, 1);
    cr_expect_eq(s.free_calls, 1);
    cr_expect_eq(s.live_bytes, 0);
}

Test(sim_memory, host_memory_is_not_device_memory)
{
    use_capacity("4K", 4096);
    void *h1 = NULL, *h2 = NULL;
    cr_assert_eq(cudaMallocHost(&h1, 1 << 20), cudaSuccess, "host memory ignores capacity");
    cr_assert_eq(cudaHostAlloc(&h2, 8192, cudaHostAllocMapped), cudaSuccess);
    memset(h1, 1, 1 << 20);
    struct wssim_stats s = stats();
    cr_expect_eq(s.live_bytes, 0);
    cr_expect_eq(s.alloc_calls, 0);
    cr_expect_eq(cudaFreeHost(h1), cudaSuccess);
    cr_expect_eq(cudaFreeHost(h2), cudaSuccess);
    cr_expect_eq(stats().free_calls, 0);
}

Test(sim_memory, managed_memory_counts_and_frees_with_cudaFree)
{
    void *m = NULL;
    cr_assert_eq(cudaMallocManaged(&m, 1234, cudaMemAttachGlobal), cudaSuccess);
    cr_expect_eq(stats().live_bytes, 1234);
    cr_expect_eq(cudaMallocManaged(&m, 1, 77), cudaErrorInvalidValue, "unknown flags");
    cr_expect_eq(cudaFree(m), cudaSuccess);
    cr_expect_eq(stats().live_bytes, 0);
}

Test(sim_memory, pitch_rounds_rows_to_512)
{
    void *p = NULL;
    size_t pitch = 0;
    cr_assert_eq(cudaMallocPitch(&p, &pitch, 100, 3), cudaSuccess);
    cr_expect_eq(pitch, 512);
    cr_expect_eq(stats().live_bytes, 512 * 3);
    void *q = NULL;
    cr_assert_eq(cudaMallocPitch(&q, &pitch, 513, 2), cudaSuccess);
    cr_expect_eq(pitch, 1024);
    cr_expect_eq(stats().live_bytes, 512 * 3 + 1024 * 2);
    void *r = NULL;
    cr_assert_eq(cudaMallocPitch(&r, &pitch, 512, 1), cudaSuccess);
    cr_expect_eq(pitch, 512);
    cr_expect_eq(cudaMallocPitch(&r, NULL, 512, 1), cudaErrorInvalidValue);
    cr_expect_eq(cudaFree(p), cudaSuccess);
    cr_expect_eq(cudaFree(q), cudaSuccess);
    cr_expect_eq(cudaFree(r), cudaSuccess);
    cr_expect_eq(stats().live_bytes, 0);
}

Test(sim_memory, async_and_pool_allocations)
{
    cudaStream_t s;
    cudaMemPool_t def, pool;
    struct cudaMemPoolProps props = {0};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    void *a = NULL, *b = NULL, *c = NULL;
    cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
    cr_assert_eq(cudaDeviceGetDefaultMemPool(&def, 0), cudaSuccess);
    cr_assert_eq(cudaMemPoolCreate(&pool, &props), cudaSuccess);
    cr_expect_eq(cudaMallocAsync(&a, 100, s), cudaSuccess);
    cr_expect_eq(cudaMallocFromPoolAsync(&b, 200, def, s), cudaSuccess);
    cr_expect_eq(cudaMallocFromPoolAsync(&c, 300, pool, NULL), cudaSuccess);
    cr_expect_eq(stats().live_bytes, 600);
    cr_expect_eq(cudaMallocFromPoolAsync(&c, 300, (cudaMemPool_t)&props, NULL), cudaErrorInvalidValue, "garbage pool");
    cr_expect_eq(cudaMallocAsync(&c, 1, (cudaStream_t)&props), cudaErrorInvalidResourceHandle);
    cr_expect_eq(cudaFreeAsync(a, s), cudaSuccess);
    cr_expect_eq(cudaFreeAsync(b, cudaStreamPerThread), cudaSuccess);
    cr_expect_eq(cudaFree(c), cudaSuccess);
    cr_expect_eq(stats().live_bytes, 0);
    cr_expect_eq(cudaMemPoolDestroy(def), cudaErrorInvalidValue, "the default pool stays");
    cr_expect_eq(cudaMemPoolDestroy(pool), cudaSuccess);
    cr_expect_eq(cudaMemPoolDestroy(pool), cudaErrorInvalidValue);
    cr_expect_eq(cudaStreamDestroy(s), cudaSuccess);
}

Test(sim_memory, memcpy_and_memset_round_trip)
{
    char host[1000], back[1000];
    char *dev = NULL, *dev2 = NULL;
    for (int i = 0; i < 1000; i++)
        host[i] = (char)(i * 7);
    cr_assert_eq(cudaMalloc((void **)&dev, sizeof host), cudaSuccess);
    cr_assert_eq(cudaMalloc((void **)&dev2, sizeof host), cudaSuccess);
    cr_expect_eq(cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice), cudaSuccess);
    cr_expect_eq(cudaMemcpyAsync(dev2, dev, sizeof host, cudaMemcpyDeviceToDevice, NULL), cudaSuccess);
    cr_expect_eq(cudaMemcpy(back, dev2, sizeof back, cudaMemcpyDefault), cudaSuccess);
    cr_expect_arr_eq(back, host, sizeof host);
    cr_expect_eq(cudaMemset(dev, 0x5a, 10), cudaSuccess);
    cr_expect_eq(cudaMemsetAsync(dev + 10, 0x11, 5, cudaStreamLegacy), cudaSuccess);
    cr_expect_eq(cudaMemcpy(back, dev, 16, cudaMemcpyDeviceToHost), cudaSuccess);
    cr_expect_eq(back[9], 0x5a);
    cr_expect_eq(back[14], 0x11);
    cr_expect_eq(back[15], host[15]);
    cr_expect_eq(cudaMemcpy(back, dev, 1, (enum cudaMemcpyKind)9), cudaErrorInvalidMemcpyDirection);
    cr_expect_eq(cudaMemcpy(NULL, dev, 1, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
    cr_expect_eq(cudaMemset(NULL, 0, 1), cudaErrorInvalidValue);
    cr_expect_eq(cudaFree(dev), cudaSuccess);
    cr_expect_eq(cudaFree(dev2), cudaSuccess);
}
