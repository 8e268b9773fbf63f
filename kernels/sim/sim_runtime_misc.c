/* Runtime calls that programs make around their kernels: the profiler switches, peers, limits and
 * cache preferences, function attributes and occupancy, pointer attributes, memory advice and
 * prefetching, and the symbols of __device__ and __constant__ variables.
 *
 * A __device__ or __constant__ variable's host shadow (the address nvcc passes to
 * __cudaRegisterVar and to cudaMemcpyToSymbol) is the variable itself on this device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

#pragma GCC visibility push(default)
#include <cuda_profiler_api.h>
#pragma GCC visibility pop

/* ---- profiler: nothing to switch ---- */

cudaError_t cudaProfilerStart(void) { return cudaSuccess; }
cudaError_t cudaProfilerStop(void) { return cudaSuccess; }

/* ---- peers: there is one device ---- */

cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice)
{
    if (!canAccessPeer)
        return sim_result(cudaErrorInvalidValue);
    if (device != 0 || peerDevice != 0)
        return sim_result(cudaErrorInvalidDevice);
    *canAccessPeer = 0;
    return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags)
{
    (void)peerDevice, (void)flags;
    return sim_result(cudaErrorInvalidDevice);
}

cudaError_t cudaDeviceDisablePeerAccess(int peerDevice)
{
    (void)peerDevice;
    return sim_result(cudaErrorInvalidDevice);
}

cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count)
{
    if (dstDevice != 0 || srcDevice != 0)
        return sim_result(cudaErrorInvalidDevice);
    return cudaMemcpy(dst, src, count, cudaMemcpyDeviceToDevice);
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice, size_t count,
                                cudaStream_t stream)
{
    if (dstDevice != 0 || srcDevice != 0)
        return sim_result(cudaErrorInvalidDevice);
    return cudaMemcpyAsync(dst, src, count, cudaMemcpyDeviceToDevice, stream);
}

/* ---- device: choice, identity, reset, limits, cache preferences ---- */

cudaError_t cudaChooseDevice(int *device, const struct cudaDeviceProp *prop)
{
    if (!device || !prop)
        return sim_result(cudaErrorInvalidValue);
    *device = 0;
    return cudaSuccess;
}

cudaError_t cudaInitDevice(int device, unsigned int deviceFlags, unsigned int flags)
{
    if (device != 0)
        return sim_result(cudaErrorInvalidDevice);
    if (flags != 0)
        return sim_result(cudaErrorInvalidValue);
    return deviceFlags ? cudaSetDeviceFlags(deviceFlags) : cudaSuccess;
}

static const char bus_id[] = "0000:00:00.0";

cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
    if (!pciBusId || len <= 0)
        return sim_result(cudaErrorInvalidValue);
    if (device != 0)
        return sim_result(cudaErrorInvalidDevice);
    snprintf(pciBusId, (size_t)len, "%s", bus_id);
    return cudaSuccess;
}

cudaError_t cudaDeviceGetByPCIBusId(int *device, const char *pciBusId)
{
    if (!device || !pciBusId)
        return sim_result(cudaErrorInvalidValue);
    if (strcasecmp(pciBusId, bus_id) != 0 && strcasecmp(pciBusId, "00:00.0") != 0)
        return sim_result(cudaErrorInvalidDevice);
    *device = 0;
    return cudaSuccess;
}

/* Memory stays allocated: a reset on a GPU would free it, and the accounting would then report
 * frees the program never made. */
cudaError_t cudaDeviceReset(void)
{
    SIM_CAPTURE_UNSAFE();
    sim_pools_synchronized();
    return cudaSuccess;
}

/* Defaults of an H100's limits; any value may be set and is read back. */
static size_t limits[] = {
    [cudaLimitStackSize] = 1024,
    [cudaLimitPrintfFifoSize] = 1 << 20,
    [cudaLimitMallocHeapSize] = 8 << 20,
    [cudaLimitDevRuntimeSyncDepth] = 2,
    [cudaLimitDevRuntimePendingLaunchCount] = 2048,
    [cudaLimitMaxL2FetchGranularity] = 32,
    [cudaLimitPersistingL2CacheSize] = 0,
};

cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value)
{
    if ((unsigned)limit >= sizeof limits / sizeof limits[0])
        return sim_result(cudaErrorUnsupportedLimit);
    __atomic_store_n(&limits[limit], value, __ATOMIC_RELAXED);
    return cudaSuccess;
}

cudaError_t cudaDeviceGetLimit(size_t *pValue, enum cudaLimit limit)
{
    if (!pValue)
        return sim_result(cudaErrorInvalidValue);
    if ((unsigned)limit >= sizeof limits / sizeof limits[0])
        return sim_result(cudaErrorUnsupportedLimit);
    *pValue = __atomic_load_n(&limits[limit], __ATOMIC_RELAXED);
    return cudaSuccess;
}

/* Persisting lines of the L2 cache (access policy windows) back to normal: there is no cache to
 * reset, so it succeeds, as on a GPU without persisting lines. */
cudaError_t cudaCtxResetPersistingL2Cache(void) { return cudaSuccess; }

static int cache_config = cudaFuncCachePreferNone;

cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache cacheConfig)
{
    if ((unsigned)cacheConfig > cudaFuncCachePreferEqual)
        return sim_result(cudaErrorInvalidValue);
    __atomic_store_n(&cache_config, (int)cacheConfig, __ATOMIC_RELAXED);
    return cudaSuccess;
}

cudaError_t cudaDeviceGetCacheConfig(enum cudaFuncCache *pCacheConfig)
{
    if (!pCacheConfig)
        return sim_result(cudaErrorInvalidValue);
    *pCacheConfig = (enum cudaFuncCache)__atomic_load_n(&cache_config, __ATOMIC_RELAXED);
    return cudaSuccess;
}

/* ---- functions: attributes and occupancy of a small kernel ---- */

/* What a launch may name: nvcc stubs, kernel handles and host functions. */
static cudaError_t launchable(const void *func)
{
    void *handle;
    return sim_kernel_handle(func, &handle);
}

cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func)
{
    if (!attr)
        return sim_result(cudaErrorInvalidValue);
    cudaError_t err = launchable(func);
    if (err != cudaSuccess)
        return sim_result(err);
    memset(attr, 0, sizeof *attr);
    attr->maxThreadsPerBlock = 1024;
    attr->numRegs = 32;
    attr->ptxVersion = 90;
    attr->binaryVersion = 90;
    attr->maxDynamicSharedSizeBytes = 48 * 1024;
    attr->preferredShmemCarveout = -1;
    return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value)
{
    (void)value;
    if ((unsigned)attr >= cudaFuncAttributeMax)
        return sim_result(cudaErrorInvalidValue);
    return sim_result(launchable(func));
}

cudaError_t cudaFuncSetCacheConfig(const void *func, enum cudaFuncCache cacheConfig)
{
    if ((unsigned)cacheConfig > cudaFuncCachePreferEqual)
        return sim_result(cudaErrorInvalidValue);
    return sim_result(launchable(func));
}

/* 2048 resident threads and at most 32 blocks per multiprocessor. */
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, const void *func, int blockSize,
                                                                   size_t dynamicSMemSize, unsigned int flags)
{
    (void)flags;
    if (!numBlocks || blockSize <= 0)
        return sim_result(cudaErrorInvalidValue);
    cudaError_t err = launchable(func);
    if (err != cudaSuccess)
        return sim_result(err);
    int blocks = blockSize > 1024 || dynamicSMemSize > 227 * 1024 ? 0 : 2048 / blockSize;
    *numBlocks = blocks > 32 ? 32 : blocks;
    return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, const void *func, int blockSize,
                                                          size_t dynamicSMemSize)
{
    return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize, dynamicSMemSize, 0);
}

cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, const void *func, int numBlocks,
                                                      int blockSize)
{
    if (!dynamicSmemSize || numBlocks <= 0 || blockSize <= 0)
        return sim_result(cudaErrorInvalidValue);
    cudaError_t err = launchable(func);
    if (err != cudaSuccess)
        return sim_result(err);
    *dynamicSmemSize = (size_t)228 * 1024 / (size_t)numBlocks - 1024;
    return cudaSuccess;
}

/* ---- pointers ---- */

/* What a pointer is: the allocation that holds it (device, managed or pinned host memory),
 * a registered host range, memory mapped with the driver's VMM calls, or nothing known. */
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr)
{
    if (!attributes)
        return sim_result(cudaErrorInvalidValue);
    memset(attributes, 0, sizeof *attributes);
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = -2;
    enum sim_kind kind = 0;
    pthread_mutex_lock(&sim_lock);
    const struct sim_entry *e = sim_table_containing(ptr);
    if (e)
        kind = e->kind;
    pthread_mutex_unlock(&sim_lock);
    void *p = (void *)ptr;
    switch (kind) {
    case SIM_DEVICE_MEM:
    case SIM_GRAPH_MEM:
    case SIM_IPC_MAPPING: attributes->type = cudaMemoryTypeDevice, attributes->devicePointer = p; break;
    case SIM_MANAGED_MEM: attributes->type = cudaMemoryTypeManaged, attributes->devicePointer = p; break;
    case SIM_HOST_MEM:
    case SIM_HOST_REGISTERED: attributes->type = cudaMemoryTypeHost, attributes->devicePointer = p; break;
    default:
        if (!sim_vmm_mapped(ptr))
            return cudaSuccess; /* unregistered host memory is not an error */
        attributes->type = cudaMemoryTypeDevice, attributes->devicePointer = p;
        break;
    }
    attributes->device = 0;
    if (attributes->type != cudaMemoryTypeDevice)
        attributes->hostPointer = p;
    return cudaSuccess;
}

/* ---- managed memory hints: there is one memory ---- */

static cudaError_t location_valid(struct cudaMemLocation location)
{
    if (location.type == cudaMemLocationTypeDevice)
        return location.id == 0 ? cudaSuccess : cudaErrorInvalidDevice;
    return location.type == cudaMemLocationTypeHost || location.type == cudaMemLocationTypeHostNuma ||
                   location.type == cudaMemLocationTypeHostNumaCurrent
               ? cudaSuccess
               : cudaErrorInvalidValue;
}

cudaError_t cudaMemAdvise(const void *devPtr, size_t count, enum cudaMemoryAdvise advice,
                          struct cudaMemLocation location)
{
    if (!devPtr || count == 0 || advice < cudaMemAdviseSetReadMostly || advice > cudaMemAdviseUnsetAccessedBy)
        return sim_result(cudaErrorInvalidValue);
    return sim_result(location_valid(location));
}

cudaError_t cudaMemPrefetchAsync(const void *devPtr, size_t count, struct cudaMemLocation location, unsigned int flags,
                                 cudaStream_t stream)
{
    if (!devPtr || count == 0 || flags != 0)
        return sim_result(cudaErrorInvalidValue);
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    return sim_result(location_valid(location));
}

cudaError_t cudaStreamAttachMemAsync(cudaStream_t stream, void *devPtr, size_t length, unsigned int flags)
{
    (void)devPtr, (void)length;
    if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost && flags != cudaMemAttachSingle)
        return sim_result(cudaErrorInvalidValue);
    return sim_stream_valid(stream) ? cudaSuccess : sim_result(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
    if (flags & ~(unsigned)cudaEventRecordExternal)
        return sim_result(cudaErrorInvalidValue);
    return cudaEventRecord(event, stream);
}

SIM_ALIAS(cudaMemPrefetchAsync_ptsz, cudaMemPrefetchAsync);
SIM_ALIAS(cudaStreamAttachMemAsync_ptsz, cudaStreamAttachMemAsync);
SIM_ALIAS(cudaEventRecordWithFlags_ptsz, cudaEventRecordWithFlags);
SIM_ALIAS(cudaMemcpyPeerAsync_ptsz, cudaMemcpyPeerAsync);

/* ---- symbols of __device__ and __constant__ variables ---- */

/* The size of the variable whose host shadow is symbol; 0 when it is not one. */
static size_t variable_size(const void *symbol)
{
    pthread_mutex_lock(&sim_lock);
    const struct sim_entry *e = sim_table_get(symbol);
    size_t size = e && e->kind == SIM_VARIABLE ? e->size : 0;
    pthread_mutex_unlock(&sim_lock);
    return size;
}

cudaError_t cudaGetSymbolAddress(void **devPtr, const void *symbol)
{
    if (!devPtr)
        return sim_result(cudaErrorInvalidValue);
    if (!variable_size(symbol))
        return sim_result(cudaErrorInvalidSymbol);
    *devPtr = (void *)symbol;
    return cudaSuccess;
}

cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol)
{
    if (!size)
        return sim_result(cudaErrorInvalidValue);
    size_t bytes = variable_size(symbol);
    if (!bytes)
        return sim_result(cudaErrorInvalidSymbol);
    *size = bytes;
    return cudaSuccess;
}

/* The range [offset, offset + count) of a variable; NULL after recording the error. */
static unsigned char *symbol_range(const void *symbol, size_t count, size_t offset, cudaError_t *err)
{
    size_t size = variable_size(symbol);
    *err = !size                                    ? cudaErrorInvalidSymbol
           : offset > size || count > size - offset ? cudaErrorInvalidValue
                                                    : cudaSuccess;
    return *err == cudaSuccess ? (unsigned char *)symbol + offset : NULL;
}

cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset,
                               enum cudaMemcpyKind kind)
{
    cudaError_t err;
    unsigned char *dst = symbol_range(symbol, count, offset, &err);
    if (!dst)
        return sim_result(err);
    return cudaMemcpy(dst, src, count, kind);
}

cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind)
{
    cudaError_t err;
    unsigned char *src = symbol_range(symbol, count, offset, &err);
    if (!src)
        return sim_result(err);
    return cudaMemcpy(dst, src, count, kind);
}

cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t count, size_t offset,
                                    enum cudaMemcpyKind kind, cudaStream_t stream)
{
    cudaError_t err;
    unsigned char *dst = symbol_range(symbol, count, offset, &err);
    if (!dst)
        return sim_result(err);
    return cudaMemcpyAsync(dst, src, count, kind, stream);
}

cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t count, size_t offset,
                                      enum cudaMemcpyKind kind, cudaStream_t stream)
{
    cudaError_t err;
    unsigned char *src = symbol_range(symbol, count, offset, &err);
    if (!src)
        return sim_result(err);
    return cudaMemcpyAsync(dst, src, count, kind, stream);
}

SIM_ALIAS(cudaMemcpyToSymbol_ptds, cudaMemcpyToSymbol);
SIM_ALIAS(cudaMemcpyFromSymbol_ptds, cudaMemcpyFromSymbol);
SIM_ALIAS(cudaMemcpyToSymbolAsync_ptsz, cudaMemcpyToSymbolAsync);
SIM_ALIAS(cudaMemcpyFromSymbolAsync_ptsz, cudaMemcpyFromSymbolAsync);

/* A kernel's function handle (cudaFunction_t) is its kernel handle, a CUfunction. */
cudaError_t cudaGetFuncBySymbol(cudaFunction_t *functionPtr, const void *symbolPtr)
{
    if (!functionPtr)
        return sim_result(cudaErrorInvalidValue);
    void *handle = NULL;
    cudaError_t err = sim_kernel_handle(symbolPtr, &handle);
    if (err != cudaSuccess)
        return sim_result(err);
    *functionPtr = (cudaFunction_t)handle;
    return cudaSuccess;
}
