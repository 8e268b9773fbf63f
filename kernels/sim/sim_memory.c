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

/* Counts size bytes of device memory as allocated when the capacity allows it; sim_lock held.
 * Graph memory nodes count their memory at launch through this too. */
cudaError_t sim_account_alloc_locked(size_t size)
{
    if (size > sim_capacity() - sim_stats.live_bytes)
        return cudaErrorMemoryAllocation;
    sim_stats.live_bytes += size;
    if (sim_stats.live_bytes > sim_stats.peak_bytes)
        sim_stats.peak_bytes = sim_stats.live_bytes;
    sim_stats.alloc_calls++;
    return cudaSuccess;
}

void sim_account_free_locked(size_t size)
{
    sim_stats.live_bytes -= size;
    sim_stats.free_calls++;
}

/* Reserves size bytes of capacity and registers a fresh block; sim_lock held. */
static cudaError_t alloc_locked(void **out, size_t size, enum sim_kind kind, void *data)
{
    int counted = kind != SIM_HOST_MEM;
    void *p = NULL;
    if (counted && size > sim_capacity() - sim_stats.live_bytes)
        return cudaErrorMemoryAllocation;
    if (size > SIZE_MAX - SIM_DEVICE_ALIGN)
        return cudaErrorMemoryAllocation;
    /* Round up so that a host kernel reading whole vectors at the end stays in bounds. */
    size_t rounded = (size + SIM_DEVICE_ALIGN - 1) & ~(size_t)(SIM_DEVICE_ALIGN - 1);
    if (posix_memalign(&p, SIM_DEVICE_ALIGN, rounded) != 0)
        return cudaErrorMemoryAllocation;
    if (sim_table_put(p, kind, size, data) != 0) {
        free(p);
        return cudaErrorMemoryAllocation;
    }
    if (counted)
        sim_account_alloc_locked(size);
    *out = p;
    return cudaSuccess;
}

cudaError_t sim_alloc_with(void **out, size_t size, enum sim_kind kind, struct sim_pool *pool)
{
    if (!out)
        return sim_result(cudaErrorInvalidValue);
    if (size == 0) {
        /* The runtime answers a zero-byte request with success and a null pointer. */
        *out = NULL;
        return cudaSuccess;
    }
    pthread_mutex_lock(&sim_lock);
    cudaError_t err = alloc_locked(out, size, kind, pool);
    if (err == cudaSuccess && pool)
        sim_pool_allocated_locked(pool, size);
    if (err != cudaSuccess && kind != SIM_HOST_MEM)
        sim_stats.failed_allocs++;
    pthread_mutex_unlock(&sim_lock);
    return sim_result(err);
}

static cudaError_t sim_alloc(void **out, size_t size, enum sim_kind kind)
{
    return sim_alloc_with(out, size, kind, NULL);
}

/* Frees p when the table knows it as one of the two accepted kinds; a live allocation of a graph
 * memory node is freed as device memory too (it may be freed outside its graph). */
static cudaError_t sim_release(void *p, enum sim_kind kind, enum sim_kind other_kind)
{
    if (!p)
        return cudaSuccess;
    pthread_mutex_lock(&sim_lock);
    struct sim_entry *e = sim_table_get(p);
    if (e && e->kind == SIM_GRAPH_MEM && kind == SIM_DEVICE_MEM) {
        cudaError_t err = sim_graph_mem_free_locked(p);
        pthread_mutex_unlock(&sim_lock);
        return sim_result(err);
    }
    if (!e || (e->kind != kind && e->kind != other_kind)) {
        pthread_mutex_unlock(&sim_lock);
        return sim_result(cudaErrorInvalidValue);
    }
    if (e->kind != SIM_HOST_MEM)
        sim_account_free_locked(e->size);
    if (e->data && e->kind == SIM_DEVICE_MEM)
        sim_pool_freed_locked(e->data, e->size);
    sim_table_del(p);
    pthread_mutex_unlock(&sim_lock);
    free(p);
    return cudaSuccess;
}

cudaError_t sim_device_free(void *p) { return sim_release(p, SIM_DEVICE_MEM, SIM_MANAGED_MEM); }

/* Allocation and free calls that are not stream-ordered synchronise implicitly: during a stream
 * capture they may be prohibited (sim_capture_unsafe). */
cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    SIM_CAPTURE_UNSAFE();
    return sim_alloc(devPtr, size, SIM_DEVICE_MEM);
}

cudaError_t cudaFree(void *devPtr)
{
    if (devPtr)
        SIM_CAPTURE_UNSAFE();
    return sim_device_free(devPtr);
}

cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    SIM_CAPTURE_UNSAFE();
    if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost)
        return sim_result(cudaErrorInvalidValue);
    return sim_alloc(devPtr, size, SIM_MANAGED_MEM);
}

cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    enum { PITCH_ALIGN = 512 };
    SIM_CAPTURE_UNSAFE();
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

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    SIM_CAPTURE_UNSAFE();
    return sim_alloc(ptr, size, SIM_HOST_MEM);
}

cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    (void)flags; /* portable, mapped, write-combined: all the same in host memory */
    SIM_CAPTURE_UNSAFE();
    return sim_alloc(pHost, size, SIM_HOST_MEM);
}

cudaError_t cudaFreeHost(void *ptr)
{
    if (ptr)
        SIM_CAPTURE_UNSAFE();
    return sim_release(ptr, SIM_HOST_MEM, SIM_HOST_MEM);
}

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

/* ---- copies and fills: every kind of memory is host memory, so they are plain libc calls ---- */

cudaError_t sim_copy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
        return cudaErrorInvalidMemcpyDirection;
    if (count == 0)
        return cudaSuccess;
    if (!dst || !src)
        return cudaErrorInvalidValue;
    memmove(dst, src, count);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    SIM_CAPTURE_UNSAFE();
    return sim_result(sim_copy(dst, src, count, kind));
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    SIM_CAPTURE_OP(stream, .kind = SIM_OP_MEMCPY, .dst = dst, .src = src, .bytes = count, .copy_kind = kind);
    return sim_result(sim_copy(dst, src, count, kind));
}

cudaError_t sim_fill(void *dst, size_t pitch, unsigned value, unsigned element_size, size_t width, size_t height)
{
    if (element_size != 1 && element_size != 2 && element_size != 4)
        return cudaErrorInvalidValue;
    if (width == 0 || height == 0)
        return cudaSuccess;
    if (!dst || (height > 1 && pitch < width * element_size))
        return cudaErrorInvalidValue;
    for (size_t row = 0; row < height; row++) {
        unsigned char *p = (unsigned char *)dst + row * pitch;
        if (element_size == 1) {
            memset(p, (int)value, width);
            continue;
        }
        for (size_t i = 0; i < width; i++)
            memcpy(p + i * element_size, &value, element_size); /* little-endian: the low bytes */
    }
    return cudaSuccess;
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
    SIM_CAPTURE_UNSAFE();
    return sim_result(sim_fill(devPtr, count, (unsigned char)value, 1, count, 1));
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    SIM_CAPTURE_OP(stream, .kind = SIM_OP_MEMSET, .dst = devPtr, .value = (unsigned char)value, .element_size = 1,
                   .width = count, .height = 1, .pitch = count);
    return sim_result(sim_fill(devPtr, count, (unsigned char)value, 1, count, 1));
}

SIM_ALIAS(cudaMemcpy_ptds, cudaMemcpy);
SIM_ALIAS(cudaMemcpyAsync_ptsz, cudaMemcpyAsync);
SIM_ALIAS(cudaMemset_ptds, cudaMemset);
SIM_ALIAS(cudaMemsetAsync_ptsz, cudaMemsetAsync);
