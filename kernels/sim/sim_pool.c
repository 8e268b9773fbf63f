/* Memory pools and stream-ordered allocation.
 *
 * Memory is handed out and counted against the capacity exactly as cudaMalloc's (freed memory is
 * available again at once), and each pool also keeps the books a GPU's pool keeps: what is in use
 * (used), and what the pool holds from the device (reserved), in granules of 2 MiB.  Freed memory
 * stays reserved, for later allocations from the same pool, until a synchronisation (stream,
 * event or device) finds the pool holding more than its release threshold (0 by default, as on a
 * GPU) or cudaMemPoolTrimTo trims it; then reserved falls back to what is in use, rounded up to
 * the granule, but not below the threshold.  The cached part is not counted against the capacity.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

enum { POOL_GRANULE = 2 * 1024 * 1024 };

struct sim_pool {
    struct sim_pool *next;
    int is_default, destroyed;
    struct cudaMemPoolProps props;
    uint64_t used, used_high, reserved, reserved_high, release_threshold;
    int reuse_follow_events, reuse_opportunistic, reuse_internal;
};

static struct sim_pool default_pool = {
    .is_default = 1, .reuse_follow_events = 1, .reuse_opportunistic = 1, .reuse_internal = 1};
static struct sim_pool *pools = &default_pool;
static struct sim_pool *current_pool = &default_pool; /* cudaDeviceSetMemPool */

static uint64_t round_granule(uint64_t bytes)
{
    uint64_t g = POOL_GRANULE;
    return bytes > UINT64_MAX - (g - 1) ? UINT64_MAX : (bytes + g - 1) / g * g;
}

/* The pool of a handle, with sim_lock held; NULL for anything else or a destroyed pool. */
static struct sim_pool *pool_of(cudaMemPool_t handle)
{
    if (handle == (cudaMemPool_t)&default_pool)
        return &default_pool;
    struct sim_entry *e = sim_table_get(handle);
    return e && e->kind == SIM_POOL ? e->data : NULL;
}

void sim_pool_allocated_locked(struct sim_pool *pool, size_t size)
{
    pool->used += size;
    if (pool->used > pool->used_high)
        pool->used_high = pool->used;
    if (pool->used > pool->reserved)
        pool->reserved = round_granule(pool->used);
    if (pool->reserved > pool->reserved_high)
        pool->reserved_high = pool->reserved;
}

static void pool_unlink(struct sim_pool *pool)
{
    for (struct sim_pool **link = &pools; *link; link = &(*link)->next)
        if (*link == pool) {
            *link = pool->next;
            break;
        }
}

void sim_pool_freed_locked(struct sim_pool *pool, size_t size)
{
    pool->used -= size;
    if (pool->destroyed && pool->used == 0) { /* destroyed while memory was out: it goes now */
        pool_unlink(pool);
        free(pool);
    }
}

/* Give back what the pool holds beyond max(what is in use, keep). */
static void trim_to(struct sim_pool *pool, uint64_t keep)
{
    uint64_t target = round_granule(pool->used);
    if (target < keep)
        target = keep;
    if (pool->reserved > target)
        pool->reserved = target;
}

void sim_pools_synchronized(void)
{
    pthread_mutex_lock(&sim_lock);
    for (struct sim_pool *p = pools; p; p = p->next)
        if (p->reserved > p->release_threshold)
            trim_to(p, p->release_threshold);
    pthread_mutex_unlock(&sim_lock);
}

/* ---- which pool ---- */

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
    if (!memPool)
        return sim_result(cudaErrorInvalidValue);
    if (device != 0)
        return sim_result(cudaErrorInvalidDevice);
    *memPool = (cudaMemPool_t)&default_pool;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *memPool, int device)
{
    if (!memPool)
        return sim_result(cudaErrorInvalidValue);
    if (device != 0)
        return sim_result(cudaErrorInvalidDevice);
    pthread_mutex_lock(&sim_lock);
    *memPool = (cudaMemPool_t)current_pool;
    pthread_mutex_unlock(&sim_lock);
    return cudaSuccess;
}

cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool)
{
    if (device != 0)
        return sim_result(cudaErrorInvalidDevice);
    pthread_mutex_lock(&sim_lock);
    struct sim_pool *p = pool_of(memPool);
    if (p)
        current_pool = p;
    pthread_mutex_unlock(&sim_lock);
    return p ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

static int device_location(const struct cudaMemLocation *location)
{
    return location && location->type == cudaMemLocationTypeDevice && location->id == 0;
}

cudaError_t cudaMemGetDefaultMemPool(cudaMemPool_t *memPool, struct cudaMemLocation *location,
                                     enum cudaMemAllocationType type)
{
    if (!memPool || !device_location(location) || type != cudaMemAllocationTypePinned)
        return sim_result(cudaErrorInvalidValue);
    *memPool = (cudaMemPool_t)&default_pool;
    return cudaSuccess;
}

cudaError_t cudaMemGetMemPool(cudaMemPool_t *memPool, struct cudaMemLocation *location, enum cudaMemAllocationType type)
{
    if (!memPool || !device_location(location) || type != cudaMemAllocationTypePinned)
        return sim_result(cudaErrorInvalidValue);
    return cudaDeviceGetMemPool(memPool, 0);
}

cudaError_t cudaMemSetMemPool(struct cudaMemLocation *location, enum cudaMemAllocationType type, cudaMemPool_t memPool)
{
    if (!device_location(location) || type != cudaMemAllocationTypePinned)
        return sim_result(cudaErrorInvalidValue);
    return cudaDeviceSetMemPool(0, memPool);
}

/* ---- pools ---- */

cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps)
{
    if (!memPool || !poolProps || poolProps->allocType != cudaMemAllocationTypePinned)
        return sim_result(cudaErrorInvalidValue);
    if (poolProps->location.type != cudaMemLocationTypeDevice)
        return sim_result(cudaErrorInvalidValue);
    if (poolProps->location.id != 0)
        return sim_result(cudaErrorInvalidDevice);
    struct sim_pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return sim_result(cudaErrorMemoryAllocation);
    pool->props = *poolProps;
    pool->reuse_follow_events = pool->reuse_opportunistic = pool->reuse_internal = 1;
    pthread_mutex_lock(&sim_lock);
    int rc = sim_table_put(pool, SIM_POOL, 0, pool);
    if (rc == 0) {
        pool->next = pools;
        pools = pool;
    }
    pthread_mutex_unlock(&sim_lock);
    if (rc != 0) {
        free(pool);
        return sim_result(cudaErrorMemoryAllocation);
    }
    *memPool = (cudaMemPool_t)pool;
    return cudaSuccess;
}

/* A pool with memory still out is destroyed when the last of it is freed, as on a GPU. */
cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool)
{
    pthread_mutex_lock(&sim_lock);
    struct sim_pool *p = memPool == (cudaMemPool_t)&default_pool ? NULL : pool_of(memPool);
    if (p) {
        sim_table_del(p);
        if (current_pool == p)
            current_pool = &default_pool;
        p->destroyed = 1;
        p->reserved = round_granule(p->used);
        if (p->used == 0) {
            pool_unlink(p);
            free(p);
        }
    }
    pthread_mutex_unlock(&sim_lock);
    return p ? cudaSuccess : sim_result(cudaErrorInvalidValue); /* the default pool cannot be destroyed */
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
    pthread_mutex_lock(&sim_lock);
    struct sim_pool *p = pool_of(memPool);
    if (p && p->reserved > minBytesToKeep)
        trim_to(p, minBytesToKeep);
    pthread_mutex_unlock(&sim_lock);
    return p ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
    if (!value)
        return sim_result(cudaErrorInvalidValue);
    uint64_t v64;
    int v32;
    memcpy(&v64, value, sizeof v64);
    memcpy(&v32, value, sizeof v32);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&sim_lock);
    struct sim_pool *p = pool_of(memPool);
    if (!p) {
        err = cudaErrorInvalidValue;
        goto out;
    }
    switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies: p->reuse_follow_events = v32 != 0; break;
    case cudaMemPoolReuseAllowOpportunistic: p->reuse_opportunistic = v32 != 0; break;
    case cudaMemPoolReuseAllowInternalDependencies: p->reuse_internal = v32 != 0; break;
    case cudaMemPoolAttrReleaseThreshold: p->release_threshold = v64; break;
    case cudaMemPoolAttrReservedMemHigh: /* only a reset to zero: the watermark restarts from now */
        if (v64 != 0)
            err = cudaErrorInvalidValue;
        else
            p->reserved_high = p->reserved;
        break;
    case cudaMemPoolAttrUsedMemHigh:
        if (v64 != 0)
            err = cudaErrorInvalidValue;
        else
            p->used_high = p->used;
        break;
    default: err = cudaErrorInvalidValue; break; /* the current values are read-only */
    }
out:
    pthread_mutex_unlock(&sim_lock);
    return err == cudaSuccess ? cudaSuccess : sim_result(err);
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
    if (!value)
        return sim_result(cudaErrorInvalidValue);
    uint64_t v64 = 0;
    int v32 = 0, is32 = 0;
    pthread_mutex_lock(&sim_lock);
    struct sim_pool *p = pool_of(memPool);
    cudaError_t err = p ? cudaSuccess : cudaErrorInvalidValue;
    if (p) {
        switch (attr) {
        case cudaMemPoolReuseFollowEventDependencies: v32 = p->reuse_follow_events, is32 = 1; break;
        case cudaMemPoolReuseAllowOpportunistic: v32 = p->reuse_opportunistic, is32 = 1; break;
        case cudaMemPoolReuseAllowInternalDependencies: v32 = p->reuse_internal, is32 = 1; break;
        case cudaMemPoolAttrReleaseThreshold: v64 = p->release_threshold; break;
        case cudaMemPoolAttrReservedMemCurrent: v64 = p->reserved; break;
        case cudaMemPoolAttrReservedMemHigh: v64 = p->reserved_high; break;
        case cudaMemPoolAttrUsedMemCurrent: v64 = p->used; break;
        case cudaMemPoolAttrUsedMemHigh: v64 = p->used_high; break;
        default: err = cudaErrorInvalidValue; break;
        }
    }
    pthread_mutex_unlock(&sim_lock);
    if (err != cudaSuccess)
        return sim_result(err);
    if (is32)
        memcpy(value, &v32, sizeof v32);
    else
        memcpy(value, &v64, sizeof v64);
    return cudaSuccess;
}

/* One device: every device may access every pool. */
cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool, const struct cudaMemAccessDesc *descList, size_t count)
{
    if (count && !descList)
        return sim_result(cudaErrorInvalidValue);
    for (size_t i = 0; i < count; i++)
        if (descList[i].location.type != cudaMemLocationTypeDevice || descList[i].location.id != 0)
            return sim_result(cudaErrorInvalidDevice);
    pthread_mutex_lock(&sim_lock);
    int ok = pool_of(memPool) != NULL;
    pthread_mutex_unlock(&sim_lock);
    return ok ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

cudaError_t cudaMemPoolGetAccess(enum cudaMemAccessFlags *flags, cudaMemPool_t memPool,
                                 struct cudaMemLocation *location)
{
    if (!flags || !location)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    int ok = pool_of(memPool) != NULL;
    pthread_mutex_unlock(&sim_lock);
    if (!ok)
        return sim_result(cudaErrorInvalidValue);
    *flags = device_location(location) ? cudaMemAccessFlagsProtReadWrite : cudaMemAccessFlagsProtNone;
    return cudaSuccess;
}

/* ---- stream-ordered allocation: immediate on this device ---- */

static cudaError_t malloc_from(void **ptr, size_t size, struct sim_pool *pool, cudaStream_t stream)
{
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    SIM_CAPTURE_OP(stream, .kind = SIM_OP_MALLOC, .out_ptr = ptr, .bytes = size, .pool = pool);
    return sim_alloc_with(ptr, size, SIM_DEVICE_MEM, pool);
}

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t stream)
{
    pthread_mutex_lock(&sim_lock);
    struct sim_pool *pool = current_pool;
    pthread_mutex_unlock(&sim_lock);
    return malloc_from(devPtr, size, pool, stream);
}

cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
    pthread_mutex_lock(&sim_lock);
    struct sim_pool *pool = pool_of(memPool);
    pthread_mutex_unlock(&sim_lock);
    if (!pool)
        return sim_result(cudaErrorInvalidValue);
    return malloc_from(ptr, size, pool, stream);
}

cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t stream)
{
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    SIM_CAPTURE_OP(stream, .kind = SIM_OP_FREE, .dst = devPtr);
    return sim_device_free(devPtr);
}

SIM_ALIAS(cudaMallocAsync_ptsz, cudaMallocAsync);
SIM_ALIAS(cudaFreeAsync_ptsz, cudaFreeAsync);
SIM_ALIAS(cudaMallocFromPoolAsync_ptsz, cudaMallocFromPoolAsync);
