/* The driver's initialisation, device queries, contexts, error texts and export tables.
 *
 * One device, ordinal 0.  Contexts are handles on it: the primary context (retained and released
 * by count, as cudart and libraries such as cuBLAS do) and contexts made with cuCtxCreate.  Each
 * host thread has a stack of current contexts; a thread that never set one sees the primary
 * context as current while it is retained, as it would after its first runtime call on a GPU.
 * Memory and launches do not depend on which context is current. */
#include <stdlib.h>
#include <string.h>

#include "sim_driver.h"

struct sim_context {
    unsigned flags;
    unsigned long long id;
};

static struct sim_context primary = {.id = 1};
static int primary_refs;       /* guarded by sim_lock */
static unsigned primary_flags; /* guarded by sim_lock */
static unsigned long long next_id = 2;

enum { CONTEXT_STACK_DEPTH = 16 };
static _Thread_local CUcontext context_stack[CONTEXT_STACK_DEPTH];
static _Thread_local int context_depth;
static _Thread_local int context_chosen; /* the thread set or pushed a context itself */

CUresult sim_driver_code(cudaError_t err)
{
    switch (err) {
    case cudaSuccess: return CUDA_SUCCESS;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidConfiguration:
    case cudaErrorInvalidPitchValue:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidMemcpyDirection:
    case cudaErrorMissingConfiguration:
    case cudaErrorInvalidChannelDescriptor: return CUDA_ERROR_INVALID_VALUE;
    case cudaErrorMemoryAllocation: return CUDA_ERROR_OUT_OF_MEMORY;
    case cudaErrorInitializationError: return CUDA_ERROR_NOT_INITIALIZED;
    case cudaErrorInvalidDeviceFunction: return CUDA_ERROR_NOT_FOUND;
    case cudaErrorInsufficientDriver: return CUDA_ERROR_SYSTEM_DRIVER_MISMATCH;
    default: return (CUresult)err; /* the shared codes: device, handle, capture, support, ... */
    }
}

int sim_context_valid(CUcontext ctx)
{
    if (ctx == (CUcontext)&primary)
        return 1;
    pthread_mutex_lock(&sim_lock);
    int ok = ctx && sim_table_has(ctx, SIM_CONTEXT);
    pthread_mutex_unlock(&sim_lock);
    return ok;
}

static CUcontext current_context(void)
{
    if (context_chosen)
        return context_depth ? context_stack[context_depth - 1] : NULL;
    pthread_mutex_lock(&sim_lock);
    int retained = primary_refs > 0;
    pthread_mutex_unlock(&sim_lock);
    return retained ? (CUcontext)&primary : NULL;
}

/* ---- initialisation, versions, devices ---- */

CUresult cuInit(unsigned int Flags) { return Flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }

CUresult cuDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = CUDA_VERSION;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = 0;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) { return DRV(cudaGetDeviceCount(count)); }

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    struct cudaDeviceProp p;
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    sim_fill_properties(&p);
    strncpy(name, p.name, (size_t)len - 1);
    name[len - 1] = '\0';
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    struct cudaDeviceProp p;
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    sim_fill_properties(&p);
    memcpy(uuid->bytes, p.uuid.bytes, sizeof uuid->bytes);
    return CUDA_SUCCESS;
}
#undef cuDeviceGetUuid
DRV_ALIAS(cuDeviceGetUuid, cuDeviceGetUuid_v2);

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = (size_t)sim_capacity();
    return CUDA_SUCCESS;
}

/* CUdevice_attribute and cudaDeviceAttr number the attributes alike; the driver has a few the
 * runtime does not (virtual memory, its handle types, stream memory operations). */
CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    int value = -1;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR: value = 1; break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS:
    case CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK:
    case CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH:
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED: value = 0; break;
    default: return DRV(cudaDeviceGetAttribute(pi, (enum cudaDeviceAttr)attrib, dev));
    }
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *pi = value;
    return CUDA_SUCCESS;
}

CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
    if (!major || !minor)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    struct cudaDeviceProp p;
    sim_fill_properties(&p);
    *major = p.major;
    *minor = p.minor;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    static const char bus_id[] = "0000:00:00.0";
    if (!pciBusId || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    strncpy(pciBusId, bus_id, (size_t)len - 1);
    pciBusId[len - 1] = '\0';
    return CUDA_SUCCESS;
}

CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    if (!canAccessPeer)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0 || peerDev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *canAccessPeer = 0; /* there is no other device */
    return CUDA_SUCCESS;
}

/* There is no other device to reach. */
CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    (void)peerContext, (void)Flags;
    return CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuCtxDisablePeerAccess(CUcontext peerContext)
{
    (void)peerContext;
    return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
}

/* ---- the primary context ---- */

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&sim_lock);
    primary_refs++;
    pthread_mutex_unlock(&sim_lock);
    *pctx = (CUcontext)&primary;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&sim_lock);
    int ok = primary_refs > 0;
    if (ok)
        primary_refs--;
    pthread_mutex_unlock(&sim_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
#undef cuDevicePrimaryCtxRelease
DRV_ALIAS(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2);

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&sim_lock);
    *flags = primary_flags;
    *active = primary_refs > 0;
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    if (flags & ~(unsigned)(CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX | CU_CTX_SYNC_MEMOPS))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    primary_flags = flags;
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}
#undef cuDevicePrimaryCtxSetFlags
DRV_ALIAS(cuDevicePrimaryCtxSetFlags, cuDevicePrimaryCtxSetFlags_v2);

/* Resetting would destroy the context's allocations on a GPU; here memory outlives it. */
CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; }
#undef cuDevicePrimaryCtxReset
DRV_ALIAS(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset_v2);

/* ---- contexts and the current context ---- */

static CUresult create_context(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    if (context_depth == CONTEXT_STACK_DEPTH)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct sim_context *c = calloc(1, sizeof *c);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&sim_lock);
    c->flags = flags;
    c->id = next_id++;
    int rc = sim_table_put(c, SIM_CONTEXT, 0, c);
    pthread_mutex_unlock(&sim_lock);
    if (rc != 0) {
        free(c);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    context_chosen = 1;
    context_stack[context_depth++] = (CUcontext)c; /* a new context is current on its thread */
    *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

CUresult cuCtxCreate(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags, CUdevice dev)
{
    (void)ctxCreateParams; /* affinity and CIG parameters: nothing to partition */
    return create_context(pctx, flags, dev);
}

/* The forms older headers call (3.2 and 11.4); parameters they add are ignored as above. */
SIM_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) { return create_context(pctx, flags, dev); }
SIM_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int numParams, unsigned int flags,
                                   CUdevice dev);
CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int numParams, unsigned int flags, CUdevice dev)
{
    (void)params, (void)numParams;
    return create_context(pctx, flags, dev);
}

CUresult cuCtxDestroy(CUcontext ctx)
{
    if (ctx == (CUcontext)&primary)
        return CUDA_ERROR_INVALID_CONTEXT; /* the primary context is released, not destroyed */
    pthread_mutex_lock(&sim_lock);
    int known = ctx && sim_table_has(ctx, SIM_CONTEXT);
    if (known)
        sim_table_del(ctx);
    pthread_mutex_unlock(&sim_lock);
    if (!known)
        return CUDA_ERROR_INVALID_CONTEXT;
    /* Off this thread's stack (other threads' stacks may still name it, as on a GPU). */
    int kept = 0;
    for (int i = 0; i < context_depth; i++)
        if (context_stack[i] != ctx)
            context_stack[kept++] = context_stack[i];
    context_depth = kept;
    free(ctx);
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = current_context();
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    if (ctx && !sim_context_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    context_chosen = 1;
    if (!ctx) {
        if (context_depth)
            context_depth--;
        return CUDA_SUCCESS;
    }
    if (context_depth == 0)
        context_depth = 1;
    context_stack[context_depth - 1] = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext ctx)
{
    if (!sim_context_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (context_depth == CONTEXT_STACK_DEPTH)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!context_chosen) { /* the implicit primary context stays below what is pushed */
        CUcontext implicit = current_context();
        context_chosen = 1;
        if (implicit)
            context_stack[context_depth++] = implicit;
        if (context_depth == CONTEXT_STACK_DEPTH)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    context_stack[context_depth++] = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    CUcontext top = current_context();
    if (!top)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (context_chosen)
        context_depth--;
    context_chosen = 1; /* popping the implicit primary context leaves none */
    if (pctx)
        *pctx = top;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (!current_context())
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = 0;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    if (!ctxId)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ctx)
        ctx = current_context();
    if (!ctx || !sim_context_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    *ctxId = ((struct sim_context *)ctx)->id;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ctx)
        ctx = current_context();
    if (!ctx || !sim_context_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    *version = 3020; /* the API version of every context since CUDA 3.2 */
    return CUDA_SUCCESS;
}

CUresult cuCtxGetFlags(unsigned int *flags)
{
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    CUcontext ctx = current_context();
    if (!ctx)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&sim_lock);
    *flags = ctx == (CUcontext)&primary ? primary_flags : ((struct sim_context *)ctx)->flags;
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

CUresult cuCtxSetFlags(unsigned int flags)
{
    CUcontext ctx = current_context();
    if (!ctx)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&sim_lock);
    if (ctx == (CUcontext)&primary)
        primary_flags = flags;
    else
        ((struct sim_context *)ctx)->flags = flags;
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) { return DRV(cudaDeviceSynchronize()); }

CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    if (leastPriority)
        *leastPriority = 0;
    if (greatestPriority)
        *greatestPriority = -5;
    return CUDA_SUCCESS;
}

/* Limits are remembered per process (one device, and no kernel uses them here). */
static size_t limits[CU_LIMIT_MAX];

CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    if ((unsigned)limit >= CU_LIMIT_MAX)
        return CUDA_ERROR_UNSUPPORTED_LIMIT;
    __atomic_store_n(&limits[limit], value, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
    if (!pvalue)
        return CUDA_ERROR_INVALID_VALUE;
    if ((unsigned)limit >= CU_LIMIT_MAX)
        return CUDA_ERROR_UNSUPPORTED_LIMIT;
    *pvalue = __atomic_load_n(&limits[limit], __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCacheConfig(CUfunc_cache *pconfig)
{
    if (!pconfig)
        return CUDA_ERROR_INVALID_VALUE;
    *pconfig = CU_FUNC_CACHE_PREFER_NONE;
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCacheConfig(CUfunc_cache config)
{
    (void)config;
    return CUDA_SUCCESS;
}

/* ---- profiler ---- */

CUresult cuProfilerStart(void) { return CUDA_SUCCESS; }
CUresult cuProfilerStop(void) { return CUDA_SUCCESS; }

/* ---- error texts ---- */

struct driver_error {
    CUresult code;
    const char *name, *text;
};

/* The driver's own names; texts the driver shares with the runtime come from its table. */
static const struct driver_error driver_errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_MAP_FAILED, "CUDA_ERROR_MAP_FAILED", "mapping of buffer object failed"},
    {CUDA_ERROR_UNSUPPORTED_LIMIT, "CUDA_ERROR_UNSUPPORTED_LIMIT", "limit is not supported on this architecture"},
    {CUDA_ERROR_FILE_NOT_FOUND, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "system has unsupported display driver / cuda driver combination"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_STREAM_CAPTURE_MERGE, "CUDA_ERROR_STREAM_CAPTURE_MERGE",
     "operation would result in a merge of separate capture sequences"},
    {CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
     "capture was not ended in the same stream as it began"},
    {CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED", "capturing stream has unjoined work"},
    {CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
     "dependency created on uncaptured work in another stream"},
    {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
     "operation would make the legacy stream depend on a capturing blocking stream"},
    {CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
     "attempt to terminate a thread-local capture sequence from another thread"},
    {CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE",
     "the graph update was not performed because it included changes which violated constraints specific to "
     "instantiated graph update"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static const struct driver_error *find_driver_error(CUresult code)
{
    for (size_t i = 0; i < sizeof driver_errors / sizeof driver_errors[0]; i++)
        if (driver_errors[i].code == code)
            return &driver_errors[i];
    return NULL;
}

/* An unknown code: CUDA_ERROR_INVALID_VALUE and a NULL string, as the driver answers. */
CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    const struct driver_error *e = find_driver_error(error);
    *pStr = e ? e->name : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    const struct driver_error *e = find_driver_error(error);
    *pStr = e ? e->text : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- export tables ---- */

static cudaError_t set_runtime_error(cudaError_t err) { return sim_result(err); }

static struct wssim_export_table export_table;
static pthread_once_t export_once = PTHREAD_ONCE_INIT;

static void fill_export_table(void)
{
    export_table = (struct wssim_export_table){
        .size = sizeof export_table,
        .count = sim_runtime_entry_count,
        .entries = sim_runtime_entries,
        .set_error = set_runtime_error,
        .kernel_handle = sim_kernel_handle,
        .is_kernel = sim_is_kernel_handle,
    };
}

/* Only the simulated device's own table: the tables a real cudart asks for do not exist here, so
 * a real cudart finds out at once that this is not its driver. */
CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    if (!ppExportTable || !pExportTableId)
        return CUDA_ERROR_INVALID_VALUE;
    if (memcmp(pExportTableId->bytes, WSSIM_EXPORT_TABLE_ID, sizeof pExportTableId->bytes) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_once(&export_once, fill_export_table);
    *ppExportTable = &export_table;
    return CUDA_SUCCESS;
}
