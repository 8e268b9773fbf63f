/* Device memory: host memory with the alignment cudaMalloc guarantees, so host kernels can use it,
 * handed out against a fixed capacity so that out-of-memory happens where it would on a GPU. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

struct wssim_stats sim_stats; /* guarded by sim_lock */

static pthread_once_t capacity_once = PTHREAD_ONCE_INIT;
static uint64_t capacity;

/* Parses "<digits>[K|M|G|KiB|MiB|GiB]" (binary multiples). Returns 0, or -1 on anything else. */
static int parse_bytes(const char *text, uint64_t *out)
{
    static const struct {
        const char *suffix;
        unsigned shift;
    } units[] = {{"", 0}, {"K", 10}, {"M", 20}, {"G", 30}, {"KiB", 10}, {"MiB", 20}, {"GiB", 30}};
    char *end = NULL;
    if (text[0] < '0' || text[0] > '9')
        return -1; /* strtoull would accept a sign or blanks */
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno != 0)
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].suffix) != 0)
            continue;
        if (value > (UINT64_MAX >> units[i].shift))
            return -1;
        *out = (uint64_t)value << units[i].shift;
        return 0;
    }
    return -1;
}

static void read_capacity(void)
{
    const char *text = getenv("WSSIM_CAPACITY");
    capacity = (uint64_t)1 << SIM_DEFAULT_CAPACITY_SHIFT;
    if (!text)
        return;
    if (parse_bytes(text, &capacity) != 0) {
        capacity = (uint64_t)1 << SIM_DEFAULT_CAPACITY_SHIFT;
        fprintf(stderr,
                "wssim: WSSIM_CAPACITY='%s' is not a byte count (e.g. 1073741824, 512M, "
                "2GiB); using 16 GiB\n",
                text);
    }
}

uint64_t sim_capacity(void)
{
    pthread_once(&capacity_once, read_capacity);
    return capacity;
}

/* Reserves size bytes of capacity and registers a fresh block; sim_lock held. */
static cudaError_t alloc_locked(void **out, size_t size, enum sim_kind kind)
{
    uint64_t cap = sim_capacity();
    int counted = kind != SIM_HOST_MEM;
    void *p = NULL;
    if (counted && size > cap - sim_stats.live_bytes)
        return cudaErrorMemoryAllocation;
    if (size > SIZE_MAX - SIM_DEVICE_ALIGN)
        return cudaErrorMemoryAllocation;
    /* Round up so that a host kernel reading whole vectors at the end stays in bounds. */
    size_t rounded = (size + SIM_DEVICE_ALIGN - 1) & ~(size_t)(SIM_DEVICE_ALIGN - 1);
    if (posix_memalign(&p, SIM_DEVICE_ALIGN, rounded) != 0)
        return cudaErrorMemoryAllocation;
    if (sim_table_put(p, kind, size, NULL) != 0) {
        free(p);
        return cudaErrorMemoryAllocation;
    }
    if (counted) {
        sim_stats.live_bytes += size;
        if (sim_stats.live_bytes > sim_stats.peak_bytes)
            sim_stats.peak_bytes = sim_stats.live_bytes;
        sim_stats.alloc_calls++;
    }
    *out = p;
    return cudaSuccess;
}

static cudaError_t sim_alloc(void **out, size_t size, enum sim_kind kind)
{
    if (!out)
        return sim_result(cudaErrorInvalidValue);
    if (size == 0) {
        /* The runtime answers a zero-byte request with success and a null pointer. */
        *out = NULL;
        return cudaSuccess;
    }
    pthread_mutex_lock(&sim_lock);
    cudaError_t err = alloc_locked(out, size, kind);
    if (err != cudaSuccess && kind != SIM_HOST_MEM)
        sim_stats.failed_allocs++;
    pthread_mutex_unlock(&sim_lock);
    return sim_result(err);
}

/* Frees p when the table knows it as one of the two accepted kinds. */
static cudaError_t sim_release(void *p, enum sim_kind kind, enum sim_kind other_kind)
{
    if (!p)
        return cudaSuccess;
    pthread_mutex_lock(&sim_lock);
    struct sim_entry *e = sim_table_get(p);
    if (!e || (e->kind != kind && e->kind != other_kind)) {
        pthread_mutex_unlock(&sim_lock);
        return sim_result(cudaErrorInvalidValue);
    }
    if (e->kind != SIM_HOST_MEM) {
        sim_stats.live_bytes -= e->size;
        sim_stats.free_calls++;
    }
    sim_table_del(p);
    pthread_mutex_unlock(&sim_lock);
    free(p);
    return cudaSuccess;
}

static cudaError_t device_free(void *p) { return sim_release(p, SIM_DEVICE_MEM, SIM_MANAGED_MEM); }

cudaError_t cudaMalloc(void **devPtr, size_t size) { return sim_alloc(devPtr, size, SIM_DEVICE_MEM); }

cudaError_t cudaFree(void *devPtr) { return device_free(devPtr); }

cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost)
        return sim_result(cudaErrorInvalidValue);
    return sim_alloc(devPtr, size, SIM_MANAGED_MEM);
}

cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    enum { PITCH_ALIGN = 512 };
    if (!devPtr || !pitch || width > SIZE_MAX - PITCH_ALIGN)
        return sim_result(cudaErrorInvalidValue);
    size_t row = (width + PITCH_ALIGN - 1) & ~(size_t)(PITCH_ALIGN - 1);
    if (height != 0 && row > SIZE_MAX / height)
        return sim_result(cudaErrorMemoryAllocation);
    cudaError_t err = sim_alloc(devPtr, row * height, SIM_DEVICE_MEM);
    if (err == cudaSuccess)
        *pitch = row;
    return err;
}

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t stream)
{
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    return sim_alloc(devPtr, size, SIM_DEVICE_MEM);
}

cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t stream)
{
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    return device_free(devPtr);
}

cudaError_t cudaMallocHost(void **ptr, size_t size) { return sim_alloc(ptr, size, SIM_HOST_MEM); }

cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    (void)flags; /* portable, mapped, write-combined: all the same in host memory */
    return sim_alloc(pHost, size, SIM_HOST_MEM);
}

cudaError_t cudaFreeHost(void *ptr) { return sim_release(ptr, SIM_HOST_MEM, SIM_HOST_MEM); }

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    if (!free_bytes || !total_bytes)
        return sim_result(cudaErrorInvalidValue);
    uint64_t cap = sim_capacity();
    pthread_mutex_lock(&sim_lock);
    *free_bytes = (size_t)(cap - sim_stats.live_bytes);
    pthread_mutex_unlock(&sim_lock);
    *total_bytes = (size_t)cap;
    return cudaSuccess;
}

void wssim_get_stats(struct wssim_stats *out)
{
    uint64_t cap = sim_capacity();
    pthread_mutex_lock(&sim_lock);
    *out = sim_stats;
    pthread_mutex_unlock(&sim_lock);
    out->capacity = cap;
}

void wssim_reset_peak(void)
{
    pthread_mutex_lock(&sim_lock);
    sim_stats.peak_bytes = sim_stats.live_bytes;
    pthread_mutex_unlock(&sim_lock);
}

int wssim_is_simulated(void) { return 1; }

/* ---- memory pools: every pool draws from the same capacity, and memory returns to the device
 * when it is freed rather than when the pool trims, so a pool is only a handle ---- */

struct sim_pool {
    int location_id;
};

static struct sim_pool default_pool;

static int pool_valid(cudaMemPool_t pool)
{
    if (pool == (cudaMemPool_t)&default_pool)
        return 1;
    pthread_mutex_lock(&sim_lock);
    int ok = sim_table_has(pool, SIM_POOL);
    pthread_mutex_unlock(&sim_lock);
    return ok;
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
    if (!memPool)
        return sim_result(cudaErrorInvalidValue);
    if (device != 0)
        return sim_result(cudaErrorInvalidDevice);
    *memPool = (cudaMemPool_t)&default_pool;
    return cudaSuccess;
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps)
{
    if (!memPool || !poolProps)
        return sim_result(cudaErrorInvalidValue);
    if (poolProps->location.type == cudaMemLocationTypeDevice && poolProps->location.id != 0)
        return sim_result(cudaErrorInvalidDevice);
    struct sim_pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return sim_result(cudaErrorMemoryAllocation);
    pool->location_id = poolProps->location.id;
    pthread_mutex_lock(&sim_lock);
    int rc = sim_table_put(pool, SIM_POOL, 0, pool);
    pthread_mutex_unlock(&sim_lock);
    if (rc != 0) {
        free(pool);
        return sim_result(cudaErrorMemoryAllocation);
    }
    *memPool = (cudaMemPool_t)pool;
    return cudaSuccess;
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool)
{
    pthread_mutex_lock(&sim_lock);
    int known = sim_table_has(memPool, SIM_POOL);
    if (known)
        sim_table_del(memPool);
    pthread_mutex_unlock(&sim_lock);
    if (!known) /* includes the default pool, which cannot be destroyed */
        return sim_result(cudaErrorInvalidValue);
    free(memPool);
    return cudaSuccess;
}

cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
    if (!pool_valid(memPool))
        return sim_result(cudaErrorInvalidValue);
    return cudaMallocAsync(ptr, size, stream);
}

/* ---- copies and fills: every kind of memory is host memory, so they are plain libc calls ---- */

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
        return sim_result(cudaErrorInvalidMemcpyDirection);
    if (count == 0)
        return cudaSuccess;
    if (!dst || !src)
        return sim_result(cudaErrorInvalidValue);
    memmove(dst, src, count);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    return cudaMemcpy(dst, src, count, kind);
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
    if (count == 0)
        return cudaSuccess;
    if (!devPtr)
        return sim_result(cudaErrorInvalidValue);
    memset(devPtr, value, count);
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    return cudaMemset(devPtr, value, count);
}

SIM_ALIAS(cudaMallocAsync_ptsz, cudaMallocAsync);
SIM_ALIAS(cudaFreeAsync_ptsz, cudaFreeAsync);
SIM_ALIAS(cudaMallocFromPoolAsync_ptsz, cudaMallocFromPoolAsync);
SIM_ALIAS(cudaMemcpy_ptds, cudaMemcpy);
SIM_ALIAS(cudaMemcpyAsync_ptsz, cudaMemcpyAsync);
SIM_ALIAS(cudaMemset_ptds, cudaMemset);
SIM_ALIAS(cudaMemsetAsync_ptsz, cudaMemsetAsync);
