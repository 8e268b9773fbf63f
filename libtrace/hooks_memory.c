/*
 * The other ways CUDA memory is obtained: arrays, mipmapped arrays, cudaMalloc3D, host
 * registration, IPC mappings; and memory pools, whose reserved and used bytes are sampled.
 *
 * Arrays are allocations whose address is the array handle (the handle is what their free names);
 * their bytes are their elements' bytes (the driver may pad them to its own granularity, which it
 * does not report for ordinary arrays).  An IPC mapping is sized with the driver's
 * cuMemGetAddressRange when the driver is loaded (0 when it cannot be).
 *
 * Pools: a pool's reserved bytes change when an allocation grows it, at synchronisations (above its
 * release threshold it gives memory back), and when it is trimmed.  The hooks ask the pool after
 * each of these and write a POOL_STATE record when what it reserves changed; with no pool ever
 * used the synchronisation hooks only forward.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "graph_hooks.h"
#include "tracer.h"

static uint64_t u64(const void *p) { return (uint64_t)(uintptr_t)p; }

static void record_alloc(uint8_t api, cudaError_t rc, uint64_t address, uint64_t requested, uint64_t bytes,
                         uint32_t memory, uint64_t aux)
{
    struct ws_rec *r = ws_rec_begin(WS_REC_ALLOC, api, rc);
    if (!r)
        return;
    r->u[0] = rc == cudaSuccess ? address : 0;
    r->u[1] = requested;
    r->u[2] = rc == cudaSuccess ? bytes : 0;
    r->u[4] = (uint64_t)(uint32_t)ws_self.device | (uint64_t)memory << 32;
    r->u[5] = aux;
    ws_rec_commit(1);
}

/* A free's time is taken before the real call (the address may be handed out again at once). */
static void record_free(uint8_t api, cudaError_t rc, uint64_t address, uint32_t memory, uint64_t stamp)
{
    struct ws_rec *r = ws_rec_begin(WS_REC_FREE, api, rc);
    if (!r)
        return;
    r->ns = stamp;
    r->u[0] = address;
    r->u[4] = (uint64_t)(uint32_t)ws_self.device | (uint64_t)memory << 32;
    ws_rec_commit(1);
}

/* The body of a free hook: stamp, forward, record; a NULL handle frees nothing and is not recorded. */
#define FORWARD_FREE(name, api, handle, memory)                                                                        \
    do {                                                                                                               \
        static __typeof__(&name) real_fn_;                                                                             \
        __typeof__(&name) fn = __atomic_load_n(&real_fn_, __ATOMIC_ACQUIRE);                                           \
        if (__builtin_expect(fn != NULL, 1) && ws_forward_only())                                                      \
            return fn(handle);                                                                                         \
        if (!fn && !(fn = WS_REAL_FN_AT_(name, real_fn_)))                                                             \
            return cudaErrorSharedObjectSymbolNotFound;                                                                \
        if (!(handle) || !ws_hook_enter())                                                                             \
            return fn(handle);                                                                                         \
        uint64_t stamp = ws_now();                                                                                     \
        cudaError_t rc = fn(handle);                                                                                   \
        int saved = *ws_errno();                                                                                       \
        record_free(api, rc, u64(handle), memory, stamp);                                                              \
        ws_hook_leave(saved);                                                                                          \
        return rc;                                                                                                     \
    } while (0)

/* ---- arrays ---- */

static uint64_t saturating_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t element_bytes(const struct cudaChannelFormatDesc *d)
{
    if (!d || d->x < 0 || d->y < 0 || d->z < 0 || d->w < 0)
        return 0;
    return ((uint64_t)d->x + (uint64_t)d->y + (uint64_t)d->z + (uint64_t)d->w) / 8;
}

static uint64_t at_least_1(uint64_t v) { return v ? v : 1; }

static uint64_t array_bytes(const struct cudaChannelFormatDesc *d, uint64_t w, uint64_t h, uint64_t depth)
{
    return saturating_mul(saturating_mul(saturating_mul(w, at_least_1(h)), at_least_1(depth)), element_bytes(d));
}

/* Every level of a mipmapped array: each used dimension halves, down to 1. */
static uint64_t mipmap_bytes(const struct cudaChannelFormatDesc *d, struct cudaExtent e, unsigned levels)
{
    uint64_t total = 0;
    for (unsigned l = 0; l < levels && l < 64; l++) {
        uint64_t w = e.width >> l, h = e.height >> l, z = e.depth >> l;
        uint64_t b = array_bytes(d, at_least_1(w), e.height ? at_least_1(h) : 0, e.depth ? at_least_1(z) : 0);
        total = total > UINT64_MAX - b ? UINT64_MAX : total + b;
    }
    return total;
}

static void record_array(uint8_t api, cudaError_t rc, const void *handle, const struct cudaChannelFormatDesc *d,
                         struct cudaExtent e, unsigned levels, unsigned flags)
{
    uint64_t bytes = levels ? mipmap_bytes(d, e, levels) : array_bytes(d, e.width, e.height, e.depth);
    record_alloc(api, rc, u64(handle), bytes, bytes, WS_MEM_DEVICE, 0);
    if (rc != cudaSuccess)
        return;
    struct ws_rec *r = ws_rec_begin(WS_REC_ARRAY, api, 0);
    if (!r)
        return;
    r->u[0] = u64(handle);
    r->u[1] = e.width;
    r->u[2] = e.height;
    r->u[3] = e.depth;
    r->u[4] = (uint64_t)(levels ? levels : 1) | (uint64_t)flags << 32;
    r->u[5] = d ? ws_pack_channel(d->x, d->y, d->z, d->w, d->f) : 0;
    ws_rec_commit(1);
}

WS_HOOK(cudaError_t, cudaMallocArray,
        (cudaArray_t * array, const struct cudaChannelFormatDesc *desc, size_t width, size_t height,
         unsigned int flags),
        (array, desc, width, height, flags))
{
    WS_FORWARD(cudaMallocArray, (array, desc, width, height, flags),
               record_array(WS_API_cudaMallocArray, rc, array ? *array : NULL, desc,
                            (struct cudaExtent){width, height, 0}, 0, flags));
}

WS_HOOK(cudaError_t, cudaMalloc3DArray,
        (cudaArray_t * array, const struct cudaChannelFormatDesc *desc, struct cudaExtent extent, unsigned int flags),
        (array, desc, extent, flags))
{
    WS_FORWARD(cudaMalloc3DArray, (array, desc, extent, flags),
               record_array(WS_API_cudaMalloc3DArray, rc, array ? *array : NULL, desc, extent, 0, flags));
}

WS_HOOK(cudaError_t, cudaMallocMipmappedArray,
        (cudaMipmappedArray_t * mipmappedArray, const struct cudaChannelFormatDesc *desc, struct cudaExtent extent,
         unsigned int numLevels, unsigned int flags),
        (mipmappedArray, desc, extent, numLevels, flags))
{
    WS_FORWARD(cudaMallocMipmappedArray, (mipmappedArray, desc, extent, numLevels, flags),
               record_array(WS_API_cudaMallocMipmappedArray, rc, mipmappedArray ? *mipmappedArray : NULL, desc, extent,
                            numLevels ? numLevels : 1, flags));
}

WS_EXPORT cudaError_t cudaFreeArray(cudaArray_t array)
{
    FORWARD_FREE(cudaFreeArray, WS_API_cudaFreeArray, array, WS_MEM_DEVICE);
}

WS_EXPORT cudaError_t cudaFreeMipmappedArray(cudaMipmappedArray_t mipmappedArray)
{
    FORWARD_FREE(cudaFreeMipmappedArray, WS_API_cudaFreeMipmappedArray, mipmappedArray, WS_MEM_DEVICE);
}

/* ---- 3D, registration, IPC ---- */

static void record_3d(cudaError_t rc, const struct cudaPitchedPtr *p, struct cudaExtent e)
{
    uint64_t requested = saturating_mul(saturating_mul(e.width, e.height), e.depth);
    uint64_t bytes = rc == cudaSuccess && p ? saturating_mul(saturating_mul(p->pitch, e.height), e.depth) : 0;
    record_alloc(WS_API_cudaMalloc3D, rc, p ? u64(p->ptr) : 0, requested, bytes, WS_MEM_DEVICE,
                 rc == cudaSuccess && p ? p->pitch : 0);
}

WS_HOOK(cudaError_t, cudaMalloc3D, (struct cudaPitchedPtr * pitchedDevPtr, struct cudaExtent extent),
        (pitchedDevPtr, extent))
{
    WS_FORWARD(cudaMalloc3D, (pitchedDevPtr, extent), record_3d(rc, pitchedDevPtr, extent));
}

WS_HOOK(cudaError_t, cudaHostRegister, (void *ptr, size_t size, unsigned int flags), (ptr, size, flags))
{
    WS_FORWARD(cudaHostRegister, (ptr, size, flags),
               record_alloc(WS_API_cudaHostRegister, rc, u64(ptr), size, size, WS_MEM_HOST, flags));
}

WS_EXPORT cudaError_t cudaHostUnregister(void *ptr)
{
    FORWARD_FREE(cudaHostUnregister, WS_API_cudaHostUnregister, ptr, WS_MEM_HOST);
}

typedef int (*address_range_fn)(unsigned long long *base, size_t *size, unsigned long long dptr);

/* The size of the mapping at ptr, from the driver (loaded by the runtime before any IPC call). */
static uint64_t mapping_bytes(const void *ptr)
{
    static address_range_fn range;
    static int looked;
    if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
        address_range_fn f = (address_range_fn)dlsym(RTLD_DEFAULT, "cuMemGetAddressRange_v2");
        if (!f) {
            void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
            if (driver) {
                f = (address_range_fn)dlsym(driver, "cuMemGetAddressRange_v2");
                dlclose(driver);
            }
        }
        __atomic_store_n(&range, f, __ATOMIC_RELEASE);
        __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
    }
    address_range_fn f = __atomic_load_n(&range, __ATOMIC_ACQUIRE);
    unsigned long long base = 0;
    size_t size = 0;
    if (!f || f(&base, &size, u64(ptr)) != 0)
        return 0;
    return size - (u64(ptr) - base);
}

static void record_ipc_open(cudaError_t rc, void **ptr, unsigned flags)
{
    void *p = rc == cudaSuccess && ptr ? *ptr : NULL;
    uint64_t bytes = p ? mapping_bytes(p) : 0;
    record_alloc(WS_API_cudaIpcOpenMemHandle, rc, u64(p), bytes, bytes, WS_MEM_IPC, flags);
}

WS_HOOK(cudaError_t, cudaIpcOpenMemHandle, (void **devPtr, cudaIpcMemHandle_t handle, unsigned int flags),
        (devPtr, handle, flags))
{
    WS_FORWARD(cudaIpcOpenMemHandle, (devPtr, handle, flags), record_ipc_open(rc, devPtr, flags));
}

WS_EXPORT cudaError_t cudaIpcCloseMemHandle(void *devPtr)
{
    FORWARD_FREE(cudaIpcCloseMemHandle, WS_API_cudaIpcCloseMemHandle, devPtr, WS_MEM_IPC);
}

/* ---- pools ---- */

enum { POOL_SLOTS = 32, DEVICE_SLOTS = 64 };

/* The pools seen, direct-mapped, with the reserved bytes last written for each (+1, so that a
 * state of 0 reserved bytes is written too).  A race between threads costs at most a repeated
 * sample. */
static struct {
    uint64_t pool, reserved;
} pools[POOL_SLOTS];
static int pools_seen;
static uint64_t current_pools[DEVICE_SLOTS];

static unsigned pool_slot(uint64_t pool) { return (unsigned)((pool >> 4) ^ (pool >> 12)) & (POOL_SLOTS - 1); }

uint64_t ws_pool_current(void)
{
    int device = ws_self.device;
    if (device < 0 || device >= DEVICE_SLOTS)
        return 0;
    uint64_t pool = __atomic_load_n(&current_pools[device], __ATOMIC_RELAXED);
    if (pool)
        return pool;
    __typeof__(&cudaDeviceGetMemPool) get = WS_REAL_FN(cudaDeviceGetMemPool);
    cudaMemPool_t p = NULL;
    if (!get || get(&p, device) != cudaSuccess)
        return 0;
    __atomic_store_n(&current_pools[device], u64(p), __ATOMIC_RELAXED);
    return u64(p);
}

static int pool_attribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, uint64_t *v)
{
    __typeof__(&cudaMemPoolGetAttribute) get = WS_REAL_FN(cudaMemPoolGetAttribute);
    if (!get) /* a program of the driver API alone; the attributes have the same values */
        get = (__typeof__(&cudaMemPoolGetAttribute))ws_driver_pool_attribute_fn();
    *v = 0;
    return get && get(pool, attr, v) == cudaSuccess;
}

void ws_pool_sample(uint8_t api, uint64_t pool)
{
    uint64_t reserved;
    cudaMemPool_t p = (cudaMemPool_t)(uintptr_t)pool;
    if (!pool || !pool_attribute(p, cudaMemPoolAttrReservedMemCurrent, &reserved))
        return;
    unsigned slot = pool_slot(pool);
    if (__atomic_load_n(&pools[slot].pool, __ATOMIC_RELAXED) == pool &&
        __atomic_load_n(&pools[slot].reserved, __ATOMIC_RELAXED) == reserved + 1)
        return;
    __atomic_store_n(&pools[slot].pool, pool, __ATOMIC_RELAXED);
    __atomic_store_n(&pools[slot].reserved, reserved + 1, __ATOMIC_RELAXED);
    if (!__atomic_load_n(&pools_seen, __ATOMIC_RELAXED))
        __atomic_store_n(&pools_seen, 1, __ATOMIC_RELAXED);
    uint64_t used = 0, reserved_high = 0, used_high = 0, threshold = 0;
    pool_attribute(p, cudaMemPoolAttrUsedMemCurrent, &used);
    pool_attribute(p, cudaMemPoolAttrReservedMemHigh, &reserved_high);
    pool_attribute(p, cudaMemPoolAttrUsedMemHigh, &used_high);
    pool_attribute(p, cudaMemPoolAttrReleaseThreshold, &threshold);
    struct ws_rec *r = ws_rec_begin(WS_REC_POOL_STATE, api, 0);
    if (!r)
        return;
    r->u[0] = pool;
    r->u[1] = reserved;
    r->u[2] = used;
    r->u[3] = reserved_high;
    r->u[4] = used_high;
    r->u[5] = threshold;
    ws_rec_commit(1);
}

/* After a synchronisation every pool seen may have given memory back. */
static void sample_all_pools(uint8_t api)
{
    if (!__atomic_load_n(&pools_seen, __ATOMIC_RELAXED))
        return;
    for (unsigned i = 0; i < POOL_SLOTS; i++) {
        uint64_t pool = __atomic_load_n(&pools[i].pool, __ATOMIC_RELAXED);
        if (pool)
            ws_pool_sample(api, pool);
    }
}

static void forget_pool(uint64_t pool)
{
    unsigned slot = pool_slot(pool);
    if (__atomic_load_n(&pools[slot].pool, __ATOMIC_RELAXED) == pool)
        __atomic_store_n(&pools[slot].pool, 0, __ATOMIC_RELAXED);
    for (unsigned d = 0; d < DEVICE_SLOTS; d++)
        if (__atomic_load_n(&current_pools[d], __ATOMIC_RELAXED) == pool)
            __atomic_store_n(&current_pools[d], 0, __ATOMIC_RELAXED); /* asked again at the next use */
}

static void record_pool(uint8_t api, cudaError_t rc, uint64_t pool, uint64_t a1, uint64_t a2)
{
    struct ws_rec *r = ws_rec_begin(WS_REC_POOL, api, rc);
    if (!r)
        return;
    r->u[0] = pool;
    r->u[1] = a1;
    r->u[2] = a2;
    ws_rec_commit(1);
}

static void record_pool_create(cudaError_t rc, cudaMemPool_t *pool, const struct cudaMemPoolProps *props)
{
    ws_pool_create_record(WS_API_cudaMemPoolCreate, rc, rc == cudaSuccess && pool ? u64(*pool) : 0,
                          props ? props->location.id : 0, props ? props->maxSize : 0);
}

void ws_pool_create_record(uint8_t api, int rc, uint64_t pool, int device, uint64_t max_size)
{
    record_pool(api, rc, pool, (uint64_t)(uint32_t)device, max_size);
    if (pool)
        ws_pool_sample(api, pool);
}

WS_HOOK(cudaError_t, cudaMemPoolCreate, (cudaMemPool_t * memPool, const struct cudaMemPoolProps *poolProps),
        (memPool, poolProps))
{
    WS_FORWARD(cudaMemPoolCreate, (memPool, poolProps), record_pool_create(rc, memPool, poolProps));
}

static void record_pool_destroy(cudaError_t rc, cudaMemPool_t pool)
{
    ws_pool_destroy_record(WS_API_cudaMemPoolDestroy, rc, u64(pool));
}

void ws_pool_destroy_record(uint8_t api, int rc, uint64_t pool)
{
    record_pool(api, rc, pool, 0, 0);
    if (rc == 0)
        forget_pool(pool);
}

WS_HOOK(cudaError_t, cudaMemPoolDestroy, (cudaMemPool_t memPool), (memPool))
{
    WS_FORWARD(cudaMemPoolDestroy, (memPool), record_pool_destroy(rc, memPool));
}

static void record_pool_change(uint8_t api, cudaError_t rc, cudaMemPool_t pool, uint64_t a1, uint64_t a2)
{
    ws_pool_change_record(api, rc, u64(pool), a1, a2);
}

void ws_pool_change_record(uint8_t api, int rc, uint64_t pool, uint64_t a1, uint64_t a2)
{
    record_pool(api, rc, pool, a1, a2);
    if (rc == 0)
        ws_pool_sample(api, pool);
}

WS_HOOK(cudaError_t, cudaMemPoolTrimTo, (cudaMemPool_t memPool, size_t minBytesToKeep), (memPool, minBytesToKeep))
{
    WS_FORWARD(cudaMemPoolTrimTo, (memPool, minBytesToKeep),
               record_pool_change(WS_API_cudaMemPoolTrimTo, rc, memPool, minBytesToKeep, 0));
}

/* The value an attribute is set to: the reuse switches are ints, the others 64-bit byte counts
 * (the driver's CUmemPool_attribute has the same values). */
uint64_t ws_pool_attribute_value(int attribute, const void *value)
{
    enum cudaMemPoolAttr attr = (enum cudaMemPoolAttr)attribute;
    if (!value)
        return 0;
    if (attr == cudaMemPoolReuseFollowEventDependencies || attr == cudaMemPoolReuseAllowOpportunistic ||
        attr == cudaMemPoolReuseAllowInternalDependencies) {
        int v;
        memcpy(&v, value, sizeof v);
        return (uint64_t)(int64_t)v;
    }
    uint64_t v;
    memcpy(&v, value, sizeof v);
    return v;
}

WS_HOOK(cudaError_t, cudaMemPoolSetAttribute, (cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value),
        (memPool, attr, value))
{
    WS_FORWARD(cudaMemPoolSetAttribute, (memPool, attr, value),
               record_pool_change(WS_API_cudaMemPoolSetAttribute, rc, memPool, (uint64_t)attr,
                                  ws_pool_attribute_value(attr, value)));
}

static void record_set_pool(uint8_t api, cudaError_t rc, int device, cudaMemPool_t pool)
{
    if (rc == cudaSuccess && device >= 0 && device < DEVICE_SLOTS)
        __atomic_store_n(&current_pools[device], u64(pool), __ATOMIC_RELAXED);
    record_pool(api, rc, u64(pool), (uint64_t)(uint32_t)device, 0);
}

WS_HOOK(cudaError_t, cudaDeviceSetMemPool, (int device, cudaMemPool_t memPool), (device, memPool))
{
    WS_FORWARD(cudaDeviceSetMemPool, (device, memPool),
               record_set_pool(WS_API_cudaDeviceSetMemPool, rc, device, memPool));
}

static int location_device(const struct cudaMemLocation *location, enum cudaMemAllocationType type)
{
    return location && location->type == cudaMemLocationTypeDevice && type == cudaMemAllocationTypePinned ? location->id
                                                                                                          : -1;
}

WS_HOOK(cudaError_t, cudaMemSetMemPool,
        (struct cudaMemLocation * location, enum cudaMemAllocationType type, cudaMemPool_t memPool),
        (location, type, memPool))
{
    WS_FORWARD(cudaMemSetMemPool, (location, type, memPool),
               record_set_pool(WS_API_cudaMemSetMemPool, rc, location_device(location, type), memPool));
}

/* ---- synchronisations ---- */

WS_HOOK(cudaError_t, cudaStreamSynchronize, (cudaStream_t stream), (stream))
{
    WS_FORWARD(cudaStreamSynchronize, (stream), sample_all_pools(WS_API_cudaStreamSynchronize));
}

WS_HOOK(cudaError_t, cudaStreamSynchronize_ptsz, (cudaStream_t stream), (stream))
{
    WS_FORWARD(cudaStreamSynchronize_ptsz, (stream), sample_all_pools(WS_API_cudaStreamSynchronize_ptsz));
}

WS_HOOK(cudaError_t, cudaDeviceSynchronize, (void), ())
{
    WS_FORWARD(cudaDeviceSynchronize, (), sample_all_pools(WS_API_cudaDeviceSynchronize));
}

WS_HOOK(cudaError_t, cudaEventSynchronize, (cudaEvent_t event), (event))
{
    WS_FORWARD(cudaEventSynchronize, (event), sample_all_pools(WS_API_cudaEventSynchronize));
}
