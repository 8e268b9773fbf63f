/*
 * CUDA driver API interposition: allocation and free, pools, IPC, virtual memory, kernel launches,
 * and the lookups through which libraries reach the driver (cuGetProcAddress,
 * cudaGetDriverEntryPoint).  Graphs and capture are in hooks_driver_graph.c.
 *
 * Names.  cuda.h maps each driver call to a versioned symbol (cuMemAlloc is cuMemAlloc_v2,
 * cuStreamBeginCapture is cuStreamBeginCapture_v2, and under per-thread default stream builds
 * cuLaunchKernel is cuLaunchKernel_ptsz); the hooks carry the symbols' own names, so that a
 * program linked against libcuda and a library fetching entry points by version both reach them.
 *
 * Lookups.  cuBLAS, cuDNN, cudart itself and most libraries that carry their own runtime do not
 * link libcuda: they dlopen it and fetch every entry point through cuGetProcAddress.  The lookup
 * hooks call the real lookup, and when the answer is a function hooked here they register it as
 * the real definition of that versioned name (real_symbols.c) and hand out the hook instead.
 *
 * Layers.  A runtime hook's own call into the driver comes back through these hooks while the
 * runtime hook is under way (ws_self.in_hook): it is forwarded and not recorded, so a call is
 * recorded once, at the layer the program called.
 *
 * Virtual memory.  What a device holds is physical memory: cuMemCreate is an allocation (its
 * address is the allocation handle), given back at its cuMemRelease or, when it is released while
 * still mapped, at its last cuMemUnmap (the collector pairs them).  Where that memory is seen is a
 * mapping: cuMemMap, cuMemUnmap, cuMemAddressReserve and cuMemAddressFree write WS_REC_VMM
 * records (the collector's vmm_mappings and vmm_reservations).
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "driver_hooks.h"
#include "graph_hooks.h"
#include "tracer.h"

/* cuda.h renames these to their newest forms; the hooks define each form under its own name. */
#undef cuGetProcAddress
#undef cuIpcOpenMemHandle
#undef cuMemHostRegister

/* The per-thread-default-stream forms, declared by cuda.h only for per-thread builds. */
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                             unsigned smem, CUstream hStream, void **params, void **extra);
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **params, void **extra);
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                        unsigned bz, unsigned smem, CUstream hStream, void **params);
/* The older forms of context creation. */
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int n, unsigned int flags, CUdevice dev);
/* The 4.0 host registration (the same parameters as _v2). */
CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags);
/* The 11.3 lookup, without the status. */
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
/* The 4.1 IPC mapping (flags as unsigned int, as in _v2). */
CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags);
cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                                  unsigned long long flags,
                                                  enum cudaDriverEntryPointQueryResult *driverStatus);

/* A free: its time is taken before the call (hooks_cuda.c, FORWARD_AND_FINISH_IF says why;
 * clock_gettime leaves errno alone);  a free of 0 frees nothing and is not recorded.  RECORD sees
 * the time as `before`. */
#define DRV_FORWARD_FREE(name, args, handle, RECORD)                                                                   \
    do {                                                                                                               \
        __typeof__(&name) fn = __atomic_load_n(&name##_real_, __ATOMIC_ACQUIRE);                                       \
        int first_ = fn == NULL;                                                                                       \
        if (__builtin_expect(first_, 0) && !(fn = WS_REAL_FN_AT_(name, name##_real_)))                                 \
            return DRV_MISSING;                                                                                        \
        if (!(handle) || !ws_hook_enter_traced(first_))                                                                \
            return fn args;                                                                                            \
        uint64_t before = ws_now();                                                                                    \
        CUresult rc = fn args;                                                                                         \
        int saved = *ws_errno();                                                                                       \
        RECORD;                                                                                                        \
        ws_hook_leave(saved);                                                                                          \
        return rc;                                                                                                     \
    } while (0)

static uint64_t u64(const void *p) { return (uint64_t)(uintptr_t)p; }

/* The traced half of a hot driver hook (allocation, free, launch): as FORWARD_AND_FINISH_IF of
 * hooks_cuda.c, FINISH a leaf that records (ws_rec_put, tracer.h), clears the guard and answers rc,
 * keeping errno on its general path; BEFORE runs just before the real call. */
#define DRV_FORWARD_FINISH(name, args, WANTED, BEFORE, FINISH)                                                         \
    do {                                                                                                               \
        __typeof__(&name) fn = __atomic_load_n(&name##_real_, __ATOMIC_ACQUIRE);                                       \
        int first_ = fn == NULL;                                                                                       \
        if (__builtin_expect(first_, 0) && !(fn = real_fn_first(#name, (void **)&name##_real_)))                       \
            return DRV_MISSING;                                                                                        \
        if (!(WANTED) || !ws_hook_enter_traced(first_))                                                                \
            return fn args;                                                                                            \
        BEFORE;                                                                                                        \
        CUresult rc = fn args;                                                                                         \
        return FINISH;                                                                                                 \
    } while (0)

/* WS_REAL_FN_AT_ out of line, for the first call of a DRV_FORWARD_FINISH hook. */
static __attribute__((noinline, cold)) void *real_fn_first(const char *name, void **slot)
{
    void *fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!fn) {
        fn = ws_real_symbol(name);
        __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
    }
    return fn;
}

/*
 * The first half of a hot hook that fills its record before the real call (ws_rec_open, tracer.h):
 * fn, the thread t with its guard set, the device of its context (+ 1) and the slot r; GENERAL (a
 * jump to the hook's general half, which records after the call) when the call is not to be
 * recorded so: the first call, a call inside another hook, !WANTED (not recorded, or not by the
 * leaf), no slot for the leaf (records not timed by the counter, or the chunk full), the device
 * not known.
 */
#define DRV_OPEN(name, WANTED, GENERAL)                                                                                \
    __typeof__(&name) fn = __atomic_load_n(&name##_real_, __ATOMIC_ACQUIRE);                                           \
    struct ws_thread *t = &ws_self;                                                                                    \
    if (__builtin_expect(!fn, 0) || __builtin_expect(t->in_hook != 0, 0))                                              \
        GENERAL;                                                                                                       \
    t->in_hook = 1;                                                                                                    \
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* set before the slot is read or filled */                               \
    uint32_t device = t->driver_device;                                                                                \
    struct ws_rec *r = ws_rec_open();                                                                                  \
    if (!ws_rec_openable(r) || __builtin_expect(!device, 0) || __builtin_expect(!(WANTED), 0)) {                       \
        t->in_hook = 0;                                                                                                \
        GENERAL;                                                                                                       \
    }

/* The end of such a hook's fast path: publish r (by CLOSE) and clear the guard, then answer rc. */
#define DRV_CLOSE(CLOSE, head)                                                                                         \
    do {                                                                                                               \
        CLOSE;                                                                                                         \
        __atomic_signal_fence(__ATOMIC_SEQ_CST); /* cleared after the record is claimed */                             \
        WS_FINISH_FAST(CUresult, head);                                                                                \
    } while (0)

int ws_driver_per_thread_api(uint8_t api)
{
    switch (api) {
    case WS_API_cuMemAllocAsync_ptsz:
    case WS_API_cuMemAllocFromPoolAsync_ptsz:
    case WS_API_cuMemFreeAsync_ptsz:
    case WS_API_cuLaunchKernel_ptsz:
    case WS_API_cuLaunchKernelEx_ptsz:
    case WS_API_cuLaunchCooperativeKernel_ptsz:
    case WS_API_cuGraphLaunch_ptsz:
    case WS_API_cuGraphInstantiateWithParams_ptsz:
    case WS_API_cuStreamBeginCapture_ptsz:
    case WS_API_cuStreamBeginCapture_v2_ptsz:
    case WS_API_cuStreamBeginCaptureToGraph_ptsz:
    case WS_API_cuStreamEndCapture_ptsz: return 1;
    default: return 0;
    }
}

/*
 * The device of the calling thread's current context, asked of the driver once and kept in
 * ws_self.driver_device (the device + 1; 0: not known) until the thread's context may have
 * changed: a context call below (the hooks that only forward and forget it), or a cudaSetDevice
 * seen by the runtime hooks (hooks_cuda.c forgets it too).
 */
static void forget_device(void) { ws_self.driver_device = 0; }

int ws_driver_device_slow(void)
{
    __typeof__(&cuCtxGetDevice) get = WS_REAL_FN(cuCtxGetDevice);
    CUdevice d;
    if (!get || get(&d) != CUDA_SUCCESS || d < 0)
        return ws_self.device; /* no context yet: asked again next time */
    ws_self.driver_device = (uint32_t)d + 1;
    return d;
}

/* A hook that forwards, then forgets the thread's device. */
#define DRV_CONTEXT(name, args)                                                                                        \
    do {                                                                                                               \
        __typeof__(&name) fn = WS_REAL_FN(name);                                                                       \
        if (!fn)                                                                                                       \
            return DRV_MISSING;                                                                                        \
        CUresult rc = fn args;                                                                                         \
        forget_device();                                                                                               \
        return rc;                                                                                                     \
    } while (0)

WS_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) { DRV_CONTEXT(cuCtxSetCurrent, (ctx)); }
WS_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) { DRV_CONTEXT(cuCtxPushCurrent_v2, (ctx)); }
WS_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx) { DRV_CONTEXT(cuCtxPopCurrent_v2, (pctx)); }
WS_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) { DRV_CONTEXT(cuCtxDestroy_v2, (ctx)); }
WS_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    DRV_CONTEXT(cuCtxCreate_v2, (pctx, flags, dev));
}
WS_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int n, unsigned int flags, CUdevice dev)
{
    DRV_CONTEXT(cuCtxCreate_v3, (pctx, params, n, flags, dev));
}
WS_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev)
{
    DRV_CONTEXT(cuCtxCreate_v4, (pctx, params, flags, dev));
}

int ws_driver_capture_of(const void *stream, unsigned long long *id)
{
    __typeof__(&cuStreamGetCaptureInfo_v3) info = WS_REAL_FN(cuStreamGetCaptureInfo_v3);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t capture = 0;
    *id = 0;
    if (!info || info((CUstream)stream, &status, &capture, NULL, NULL, NULL, NULL) != CUDA_SUCCESS)
        return 0;
    *id = capture;
    return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

void *ws_driver_graph_mem_attribute_fn(void) { return (void *)WS_REAL_FN(cuDeviceGetGraphMemAttribute); }
void *ws_driver_pool_attribute_fn(void) { return (void *)WS_REAL_FN(cuMemPoolGetAttribute); }

/* ---- records ---- */

/* The calling thread's next record with every field written (the hot paths: no clearing first). */
static inline __attribute__((always_inline)) struct ws_rec *rec_fill(uint8_t type, uint8_t api, CUresult rc,
                                                                     uint64_t ns, uint64_t u0, uint64_t u1, uint64_t u2,
                                                                     uint64_t u3, uint64_t u4, uint64_t u5)
{
    struct ws_rec *r = ws_rec_reserve(1);
    if (!r)
        return NULL;
    r->type = type;
    r->api = api;
    r->ext = 0;
    r->status = (int32_t)rc;
    r->ns = ns;
    r->u[0] = u0;
    r->u[1] = u1;
    r->u[2] = u2;
    r->u[3] = u3;
    r->u[4] = u4;
    r->u[5] = u5;
    ws_rec_commit(1);
    return r;
}

static inline void record_alloc(uint8_t api, CUresult rc, uint64_t address, uint64_t requested, uint64_t bytes,
                                const void *stream, int device, uint32_t memory, uint64_t aux)
{
    rec_fill(WS_REC_ALLOC, api, rc, ws_now(), rc == CUDA_SUCCESS ? address : 0, requested,
             rc == CUDA_SUCCESS ? bytes : 0, u64(stream), (uint64_t)(uint32_t)device | (uint64_t)memory << 32, aux);
}

static inline void record_free(uint8_t api, CUresult rc, uint64_t address, const void *stream, uint32_t memory,
                               uint64_t stamp)
{
    rec_fill(WS_REC_FREE, api, rc, stamp, address, 0, 0, u64(stream),
             (uint64_t)(uint32_t)ws_driver_device() | (uint64_t)memory << 32, 0);
}

static inline void record_simple_alloc(uint8_t api, CUresult rc, const CUdeviceptr *dptr, size_t size, uint32_t memory,
                                       uint64_t aux)
{
    record_alloc(api, rc, dptr ? *dptr : 0, size, size, NULL, ws_driver_device(), memory, aux);
}

static void record_host_alloc(uint8_t api, CUresult rc, void *const *pp, size_t size, uint64_t flags)
{
    record_alloc(api, rc, pp ? u64(*pp) : 0, size, size, NULL, ws_driver_device(), WS_MEM_HOST, flags);
}

static __attribute__((noinline, cold)) CUresult alloc_finish_slow(uint64_t head, const CUdeviceptr *dptr, size_t size)
{
    CUresult rc = (CUresult)ws_rec_head_status(head);
    WS_FINISH_SLOW(rc, record_simple_alloc((uint8_t)(head >> 8), rc, dptr, size, WS_MEM_DEVICE, 0));
}

/* cuMemAlloc_v2's record by the leaf while the thread's device is known. */
static inline __attribute__((always_inline)) CUresult alloc_finish(uint64_t head, const CUdeviceptr *dptr, size_t size)
{
    int ok = ws_rec_head_status(head) == CUDA_SUCCESS;
    uint32_t device = ws_self.driver_device;
    if (__builtin_expect(device != 0, 1) &&
        __builtin_expect(ws_rec_put_now(head, ok && dptr ? *dptr : 0, size, ok ? size : 0, 0, device - 1, 0), 1))
        WS_FINISH_FAST(CUresult, head);
    return alloc_finish_slow(head, dptr, size);
}

static __attribute__((noinline, cold)) CUresult free_finish_slow(uint64_t head, CUdeviceptr dptr, uint64_t before)
{
    CUresult rc = (CUresult)ws_rec_head_status(head);
    WS_FINISH_SLOW(rc, record_free((uint8_t)(head >> 8), rc, dptr, NULL, WS_MEM_DEVICE, before));
}

static inline __attribute__((always_inline)) CUresult free_finish(uint64_t head, CUdeviceptr dptr, uint64_t before)
{
    uint32_t device = ws_self.driver_device;
    if (__builtin_expect(device != 0, 1) && __builtin_expect(ws_rec_put(head, before, dptr, 0, 0, 0, device - 1, 0), 1))
        WS_FINISH_FAST(CUresult, head);
    return free_finish_slow(head, dptr, before);
}

/* ---- allocation and free ---- */

/* After the real call of an allocation filled before it, when the leaf cannot publish it. */
static __attribute__((noinline, cold)) CUresult alloc_close_slow(const struct ws_rec *r, uint64_t head)
{
    CUresult rc = (CUresult)ws_rec_head_status(head);
    const struct ws_rec *at = ws_rec_opened(r);
    if (__builtin_expect(!at, 0)) {
        ws_count_lost(1);
        WS_FINISH_SLOW(rc, (void)0);
    }
    const CUdeviceptr *dptr = (const CUdeviceptr *)(uintptr_t)at->u[0];
    size_t size = (size_t)at->u[1];
    WS_FINISH_SLOW(rc, record_simple_alloc((uint8_t)(head >> 8), rc, dptr, size, WS_MEM_DEVICE, 0));
}

static CUresult cuMemAlloc_v2_general_(CUdeviceptr *dptr, size_t bytesize);

/* The record is filled before the call (DRV_OPEN) with the pointer to the result in u0 until the
 * call answers. */
WS_HOOK(CUresult, cuMemAlloc_v2, (CUdeviceptr * dptr, size_t bytesize), (dptr, bytesize))
{
    DRV_OPEN(cuMemAlloc_v2, 1, return cuMemAlloc_v2_general_(dptr, bytesize));
    r->u[0] = u64(dptr);
    r->u[1] = bytesize;
    r->u[3] = 0;
    r->u[4] = device - 1;
    r->u[5] = 0;
    CUresult rc = fn(dptr, bytesize);
    uint64_t head = WS_REC_HEAD(WS_REC_ALLOC, WS_API_cuMemAlloc_v2, rc);
    if (__builtin_expect(ws_rec_still_open(r), 1)) {
        const CUdeviceptr *p = (const CUdeviceptr *)(uintptr_t)r->u[0];
        if (__builtin_expect(rc == CUDA_SUCCESS, 1) && __builtin_expect(p != NULL, 1)) {
            r->u[0] = *p;
            r->u[2] = r->u[1];
        } else {
            r->u[0] = 0;
            r->u[2] = rc == CUDA_SUCCESS ? r->u[1] : 0;
        }
        DRV_CLOSE(ws_rec_close_now(r, head), head);
    }
    return alloc_close_slow(r, head);
}

static __attribute__((noinline, cold)) CUresult cuMemAlloc_v2_general_(CUdeviceptr *dptr, size_t bytesize)
{
    DRV_FORWARD_FINISH(cuMemAlloc_v2, (dptr, bytesize), 1, (void)0,
                       alloc_finish(WS_REC_HEAD(WS_REC_ALLOC, WS_API_cuMemAlloc_v2, rc), dptr, bytesize));
}

static void record_pitch(CUresult rc, const CUdeviceptr *dptr, const size_t *pitch, size_t width, size_t height)
{
    uint64_t requested, bytes = 0;
    if (__builtin_mul_overflow((uint64_t)width, (uint64_t)height, &requested))
        requested = UINT64_MAX;
    if (rc == CUDA_SUCCESS && pitch && __builtin_mul_overflow((uint64_t)*pitch, (uint64_t)height, &bytes))
        bytes = UINT64_MAX;
    record_alloc(WS_API_cuMemAllocPitch_v2, rc, dptr ? *dptr : 0, requested, bytes, NULL, ws_driver_device(),
                 WS_MEM_DEVICE, rc == CUDA_SUCCESS && pitch ? *pitch : 0);
}

WS_HOOK(CUresult, cuMemAllocPitch_v2,
        (CUdeviceptr * dptr, size_t *pPitch, size_t WidthInBytes, size_t Height, unsigned int ElementSizeBytes),
        (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes))
{
    DRV_FORWARD(cuMemAllocPitch_v2, (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes),
                record_pitch(rc, dptr, pPitch, WidthInBytes, Height));
}

WS_HOOK(CUresult, cuMemAllocManaged, (CUdeviceptr * dptr, size_t bytesize, unsigned int flags), (dptr, bytesize, flags))
{
    DRV_FORWARD(cuMemAllocManaged, (dptr, bytesize, flags),
                record_simple_alloc(WS_API_cuMemAllocManaged, rc, dptr, bytesize, WS_MEM_MANAGED, flags));
}

WS_HOOK(CUresult, cuMemAllocHost_v2, (void **pp, size_t bytesize), (pp, bytesize))
{
    DRV_FORWARD(cuMemAllocHost_v2, (pp, bytesize), record_host_alloc(WS_API_cuMemAllocHost_v2, rc, pp, bytesize, 0));
}

WS_HOOK(CUresult, cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int Flags), (pp, bytesize, Flags))
{
    DRV_FORWARD(cuMemHostAlloc, (pp, bytesize, Flags),
                record_host_alloc(WS_API_cuMemHostAlloc, rc, pp, bytesize, Flags));
}

/* After the real call of a free filled before it, when the leaf cannot publish it. */
static __attribute__((noinline, cold)) CUresult free_close_slow(const struct ws_rec *r, uint64_t head)
{
    CUresult rc = (CUresult)ws_rec_head_status(head);
    const struct ws_rec *at = ws_rec_opened(r);
    if (__builtin_expect(!at, 0)) {
        ws_count_lost(1);
        WS_FINISH_SLOW(rc, (void)0);
    }
    CUdeviceptr dptr = (CUdeviceptr)at->u[0];
    uint64_t before = at->ns;
    WS_FINISH_SLOW(rc, record_free((uint8_t)(head >> 8), rc, dptr, NULL, WS_MEM_DEVICE, before));
}

static CUresult cuMemFree_v2_general_(CUdeviceptr dptr);

/* The record is filled (and timed: a free's time is taken before the call) before the call. */
WS_HOOK(CUresult, cuMemFree_v2, (CUdeviceptr dptr), (dptr))
{
    DRV_OPEN(cuMemFree_v2, dptr, return cuMemFree_v2_general_(dptr));
    ws_rec_stamp(r);
    r->u[0] = dptr;
    r->u[1] = 0;
    r->u[2] = 0;
    r->u[3] = 0;
    r->u[4] = device - 1;
    r->u[5] = 0;
    CUresult rc = fn(dptr);
    uint64_t head = WS_REC_HEAD(WS_REC_FREE, WS_API_cuMemFree_v2, rc);
    if (__builtin_expect(ws_rec_still_open(r), 1))
        DRV_CLOSE(ws_rec_close(r, head), head);
    return free_close_slow(r, head);
}

static __attribute__((noinline, cold)) CUresult cuMemFree_v2_general_(CUdeviceptr dptr)
{
    DRV_FORWARD_FINISH(cuMemFree_v2, (dptr), dptr, uint64_t before = ws_now(),
                       free_finish(WS_REC_HEAD(WS_REC_FREE, WS_API_cuMemFree_v2, rc), dptr, before));
}

WS_HOOK(CUresult, cuMemFreeHost, (void *p), (p))
{
    DRV_FORWARD_FREE(cuMemFreeHost, (p), p, record_free(WS_API_cuMemFreeHost, rc, u64(p), NULL, WS_MEM_HOST, before));
}

/* The pool a stream-ordered allocation draws from: the current pool of the context's device. */
static uint64_t current_pool(int device)
{
    __typeof__(&cuDeviceGetMemPool) get = WS_REAL_FN(cuDeviceGetMemPool);
    CUmemoryPool pool = NULL;
    if (!get || get(&pool, device) != CUDA_SUCCESS)
        return 0;
    return u64(pool);
}

/* A stream-ordered allocation made inside a capture allocates nothing now (graph_hooks.h); the
 * others name their pool (aux) and sample it. */
static void record_async_alloc(uint8_t api, CUresult rc, const CUdeviceptr *dptr, size_t size, CUstream stream,
                               const void *pool)
{
    int device = ws_driver_device();
    int captured = rc == CUDA_SUCCESS && ws_capture_note(api, stream);
    uint64_t p = pool ? u64(pool) : captured || rc != CUDA_SUCCESS ? 0 : current_pool(device);
    record_alloc(api, rc, dptr ? *dptr : 0, size, size, stream, device, WS_MEM_DEVICE, p);
    if (rc == CUDA_SUCCESS && !captured)
        ws_pool_sample(api, p);
}

WS_HOOK(CUresult, cuMemAllocAsync, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream), (dptr, bytesize, hStream))
{
    DRV_FORWARD(cuMemAllocAsync, (dptr, bytesize, hStream),
                record_async_alloc(WS_API_cuMemAllocAsync, rc, dptr, bytesize, hStream, NULL));
}

WS_HOOK(CUresult, cuMemAllocAsync_ptsz, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream),
        (dptr, bytesize, hStream))
{
    DRV_FORWARD(cuMemAllocAsync_ptsz, (dptr, bytesize, hStream),
                record_async_alloc(WS_API_cuMemAllocAsync_ptsz, rc, dptr, bytesize, hStream, NULL));
}

WS_HOOK(CUresult, cuMemAllocFromPoolAsync, (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),
        (dptr, bytesize, pool, hStream))
{
    DRV_FORWARD(cuMemAllocFromPoolAsync, (dptr, bytesize, pool, hStream),
                record_async_alloc(WS_API_cuMemAllocFromPoolAsync, rc, dptr, bytesize, hStream, pool));
}

WS_HOOK(CUresult, cuMemAllocFromPoolAsync_ptsz,
        (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream), (dptr, bytesize, pool, hStream))
{
    DRV_FORWARD(cuMemAllocFromPoolAsync_ptsz, (dptr, bytesize, pool, hStream),
                record_async_alloc(WS_API_cuMemAllocFromPoolAsync_ptsz, rc, dptr, bytesize, hStream, pool));
}

static void record_async_free(uint8_t api, CUresult rc, CUdeviceptr dptr, CUstream stream, uint64_t before)
{
    if (rc == CUDA_SUCCESS)
        ws_capture_note(api, stream);
    record_free(api, rc, dptr, stream, WS_MEM_DEVICE, before);
}

WS_HOOK(CUresult, cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream))
{
    DRV_FORWARD_FREE(cuMemFreeAsync, (dptr, hStream), dptr,
                     record_async_free(WS_API_cuMemFreeAsync, rc, dptr, hStream, before));
}

WS_HOOK(CUresult, cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream))
{
    DRV_FORWARD_FREE(cuMemFreeAsync_ptsz, (dptr, hStream), dptr,
                     record_async_free(WS_API_cuMemFreeAsync_ptsz, rc, dptr, hStream, before));
}

/* ---- pools ---- */

static uint64_t pool_of(const CUmemoryPool *pool) { return pool ? u64(*pool) : 0; }

WS_HOOK(CUresult, cuMemPoolCreate, (CUmemoryPool * pool, const CUmemPoolProps *poolProps), (pool, poolProps))
{
    DRV_FORWARD(cuMemPoolCreate, (pool, poolProps),
                ws_pool_create_record(WS_API_cuMemPoolCreate, rc, rc == CUDA_SUCCESS ? pool_of(pool) : 0,
                                      poolProps ? poolProps->location.id : 0, poolProps ? poolProps->maxSize : 0));
}

WS_HOOK(CUresult, cuMemPoolDestroy, (CUmemoryPool pool), (pool))
{
    DRV_FORWARD(cuMemPoolDestroy, (pool), ws_pool_destroy_record(WS_API_cuMemPoolDestroy, rc, u64(pool)));
}

WS_HOOK(CUresult, cuMemPoolTrimTo, (CUmemoryPool pool, size_t minBytesToKeep), (pool, minBytesToKeep))
{
    DRV_FORWARD(cuMemPoolTrimTo, (pool, minBytesToKeep),
                ws_pool_change_record(WS_API_cuMemPoolTrimTo, rc, u64(pool), minBytesToKeep, 0));
}

WS_HOOK(CUresult, cuMemPoolSetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value),
        (pool, attr, value))
{
    DRV_FORWARD(cuMemPoolSetAttribute, (pool, attr, value),
                ws_pool_change_record(WS_API_cuMemPoolSetAttribute, rc, u64(pool), (uint64_t)attr,
                                      ws_pool_attribute_value((int)attr, value)));
}

/* A device's current pool: what its later cuMemAllocAsync calls draw from (asked of the driver at
 * each, so nothing is kept here). */
WS_HOOK(CUresult, cuDeviceSetMemPool, (CUdevice dev, CUmemoryPool pool), (dev, pool))
{
    DRV_FORWARD(cuDeviceSetMemPool, (dev, pool),
                ws_pool_change_record(WS_API_cuDeviceSetMemPool, rc, u64(pool), (uint64_t)(uint32_t)dev, 0));
}

/* ---- host registration ---- */

WS_HOOK(CUresult, cuMemHostRegister, (void *p, size_t bytesize, unsigned int Flags), (p, bytesize, Flags))
{
    DRV_FORWARD(cuMemHostRegister, (p, bytesize, Flags),
                record_alloc(WS_API_cuMemHostRegister, rc, u64(p), bytesize, bytesize, NULL, ws_driver_device(),
                             WS_MEM_HOST, Flags));
}

WS_HOOK(CUresult, cuMemHostRegister_v2, (void *p, size_t bytesize, unsigned int Flags), (p, bytesize, Flags))
{
    DRV_FORWARD(cuMemHostRegister_v2, (p, bytesize, Flags),
                record_alloc(WS_API_cuMemHostRegister_v2, rc, u64(p), bytesize, bytesize, NULL, ws_driver_device(),
                             WS_MEM_HOST, Flags));
}

WS_HOOK(CUresult, cuMemHostUnregister, (void *p), (p))
{
    DRV_FORWARD_FREE(cuMemHostUnregister, (p), p,
                     record_free(WS_API_cuMemHostUnregister, rc, u64(p), NULL, WS_MEM_HOST, before));
}

/* ---- arrays ---- */

/* Bytes of one channel of a CUarray_format, and its cudaChannelFormatKind (0 signed, 1 unsigned,
 * 2 float); 0 bytes for the packed, block-compressed and video formats. */
static unsigned format_bytes(CUarray_format f, int *kind)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8: *kind = 1; return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16: *kind = 1; return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32: *kind = 1; return 4;
    case CU_AD_FORMAT_SIGNED_INT8: *kind = 0; return 1;
    case CU_AD_FORMAT_SIGNED_INT16: *kind = 0; return 2;
    case CU_AD_FORMAT_SIGNED_INT32: *kind = 0; return 4;
    case CU_AD_FORMAT_HALF: *kind = 2; return 2;
    case CU_AD_FORMAT_FLOAT: *kind = 2; return 4;
    default: *kind = 3; return 0;
    }
}

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t one_if_0(uint64_t v) { return v ? v : 1; }

/* An array's elements' bytes (every level of a mipmapped one: each used dimension halves, down
 * to 1), its allocation record, then its ARRAY record. */
static void record_array(uint8_t api, CUresult rc, const void *handle, uint64_t w, uint64_t h, uint64_t d,
                         unsigned channels, CUarray_format format, unsigned flags, unsigned levels)
{
    int kind;
    uint64_t element = mul_sat(format_bytes(format, &kind), channels), bytes = 0;
    for (unsigned l = 0; l < (levels ? levels : 1) && l < 64; l++) {
        uint64_t b =
            mul_sat(mul_sat(mul_sat(one_if_0(w >> l), h ? one_if_0(h >> l) : 1), d ? one_if_0(d >> l) : 1), element);
        bytes = bytes > UINT64_MAX - b ? UINT64_MAX : bytes + b;
    }
    record_alloc(api, rc, u64(handle), bytes, bytes, NULL, ws_driver_device(), WS_MEM_DEVICE, 0);
    if (rc != CUDA_SUCCESS)
        return;
    unsigned bits = format_bytes(format, &kind) * 8;
    rec_fill(WS_REC_ARRAY, api, 0, ws_now(), u64(handle), w, h, d,
             (uint64_t)(levels ? levels : 1) | (uint64_t)flags << 32,
             ws_pack_channel((int)bits, channels > 1 ? (int)bits : 0, channels > 2 ? (int)bits : 0,
                             channels > 3 ? (int)bits : 0, kind));
}

WS_HOOK(CUresult, cuArrayCreate_v2, (CUarray * pHandle, const CUDA_ARRAY_DESCRIPTOR *d), (pHandle, d))
{
    DRV_FORWARD(cuArrayCreate_v2, (pHandle, d),
                record_array(WS_API_cuArrayCreate_v2, rc, pHandle && rc == CUDA_SUCCESS ? *pHandle : NULL,
                             d ? d->Width : 0, d ? d->Height : 0, 0, d ? d->NumChannels : 0,
                             d ? d->Format : (CUarray_format)0, 0, 0));
}

WS_HOOK(CUresult, cuArray3DCreate_v2, (CUarray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d), (pHandle, d))
{
    DRV_FORWARD(cuArray3DCreate_v2, (pHandle, d),
                record_array(WS_API_cuArray3DCreate_v2, rc, pHandle && rc == CUDA_SUCCESS ? *pHandle : NULL,
                             d ? d->Width : 0, d ? d->Height : 0, d ? d->Depth : 0, d ? d->NumChannels : 0,
                             d ? d->Format : (CUarray_format)0, d ? d->Flags : 0, 0));
}

WS_HOOK(CUresult, cuMipmappedArrayCreate,
        (CUmipmappedArray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned int numMipmapLevels),
        (pHandle, d, numMipmapLevels))
{
    DRV_FORWARD(cuMipmappedArrayCreate, (pHandle, d, numMipmapLevels),
                record_array(WS_API_cuMipmappedArrayCreate, rc, pHandle && rc == CUDA_SUCCESS ? *pHandle : NULL,
                             d ? d->Width : 0, d ? d->Height : 0, d ? d->Depth : 0, d ? d->NumChannels : 0,
                             d ? d->Format : (CUarray_format)0, d ? d->Flags : 0,
                             numMipmapLevels ? numMipmapLevels : 1));
}

WS_HOOK(CUresult, cuArrayDestroy, (CUarray hArray), (hArray))
{
    DRV_FORWARD_FREE(cuArrayDestroy, (hArray), hArray,
                     record_free(WS_API_cuArrayDestroy, rc, u64(hArray), NULL, WS_MEM_DEVICE, before));
}

WS_HOOK(CUresult, cuMipmappedArrayDestroy, (CUmipmappedArray hMipmappedArray), (hMipmappedArray))
{
    DRV_FORWARD_FREE(
        cuMipmappedArrayDestroy, (hMipmappedArray), hMipmappedArray,
        record_free(WS_API_cuMipmappedArrayDestroy, rc, u64(hMipmappedArray), NULL, WS_MEM_DEVICE, before));
}

/* ---- IPC ---- */

/* The size of the mapping at dptr, asked of the driver (0 when it cannot say). */
static uint64_t mapping_bytes(CUdeviceptr dptr)
{
    __typeof__(&cuMemGetAddressRange_v2) range = WS_REAL_FN(cuMemGetAddressRange_v2);
    CUdeviceptr base = 0;
    size_t size = 0;
    if (!range || range(&base, &size, dptr) != CUDA_SUCCESS || dptr < base || dptr - base > size)
        return 0;
    return size - (dptr - base);
}

static void record_ipc_open(uint8_t api, CUresult rc, const CUdeviceptr *dptr, unsigned flags)
{
    CUdeviceptr p = rc == CUDA_SUCCESS && dptr ? *dptr : 0;
    uint64_t bytes = p ? mapping_bytes(p) : 0;
    record_alloc(api, rc, p, bytes, bytes, NULL, ws_driver_device(), WS_MEM_IPC, flags);
}

WS_HOOK(CUresult, cuIpcOpenMemHandle, (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int Flags),
        (pdptr, handle, Flags))
{
    DRV_FORWARD(cuIpcOpenMemHandle, (pdptr, handle, Flags),
                record_ipc_open(WS_API_cuIpcOpenMemHandle, rc, pdptr, Flags));
}

WS_HOOK(CUresult, cuIpcOpenMemHandle_v2, (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int Flags),
        (pdptr, handle, Flags))
{
    DRV_FORWARD(cuIpcOpenMemHandle_v2, (pdptr, handle, Flags),
                record_ipc_open(WS_API_cuIpcOpenMemHandle_v2, rc, pdptr, Flags));
}

WS_HOOK(CUresult, cuIpcCloseMemHandle, (CUdeviceptr dptr), (dptr))
{
    DRV_FORWARD_FREE(cuIpcCloseMemHandle, (dptr), dptr,
                     record_free(WS_API_cuIpcCloseMemHandle, rc, dptr, NULL, WS_MEM_IPC, before));
}

/* ---- virtual memory ---- */

static void record_create(CUresult rc, const CUmemGenericAllocationHandle *handle, size_t size,
                          const CUmemAllocationProp *prop)
{
    int on_device = !prop || prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE;
    int device = prop && on_device ? prop->location.id : ws_driver_device();
    record_alloc(WS_API_cuMemCreate, rc, handle ? *handle : 0, size, size, NULL, device,
                 on_device ? WS_MEM_DEVICE : WS_MEM_HOST, prop ? (uint64_t)prop->requestedHandleTypes : 0);
}

WS_HOOK(CUresult, cuMemCreate,
        (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp *prop, unsigned long long flags),
        (handle, size, prop, flags))
{
    DRV_FORWARD(cuMemCreate, (handle, size, prop, flags), record_create(rc, handle, size, prop));
}

WS_HOOK(CUresult, cuMemRelease, (CUmemGenericAllocationHandle handle), (handle))
{
    DRV_FORWARD_FREE(cuMemRelease, (handle), handle,
                     record_free(WS_API_cuMemRelease, rc, handle, NULL, WS_MEM_DEVICE, before));
}

static void record_vmm(uint8_t api, CUresult rc, uint64_t address, uint64_t bytes, uint64_t a2, uint64_t a3,
                       uint64_t stamp)
{
    struct ws_rec *r = ws_rec_begin(WS_REC_VMM, api, rc);
    if (!r)
        return;
    if (stamp)
        r->ns = stamp;
    r->u[0] = address;
    r->u[1] = bytes;
    r->u[2] = a2;
    r->u[3] = a3;
    r->u[4] = (uint64_t)(uint32_t)ws_driver_device();
    ws_rec_commit(1);
}

WS_HOOK(CUresult, cuMemMap,
        (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, unsigned long long flags),
        (ptr, size, offset, handle, flags))
{
    DRV_FORWARD(cuMemMap, (ptr, size, offset, handle, flags),
                record_vmm(WS_API_cuMemMap, rc, ptr, size, offset, handle, 0));
}

WS_HOOK(CUresult, cuMemUnmap, (CUdeviceptr ptr, size_t size), (ptr, size))
{
    DRV_FORWARD_FREE(cuMemUnmap, (ptr, size), ptr, record_vmm(WS_API_cuMemUnmap, rc, ptr, size, 0, 0, before));
}

WS_HOOK(CUresult, cuMemAddressReserve,
        (CUdeviceptr * ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags),
        (ptr, size, alignment, addr, flags))
{
    DRV_FORWARD(
        cuMemAddressReserve, (ptr, size, alignment, addr, flags),
        record_vmm(WS_API_cuMemAddressReserve, rc, rc == CUDA_SUCCESS && ptr ? *ptr : 0, size, alignment, addr, 0));
}

WS_HOOK(CUresult, cuMemAddressFree, (CUdeviceptr ptr, size_t size), (ptr, size))
{
    DRV_FORWARD_FREE(cuMemAddressFree, (ptr, size), ptr,
                     record_vmm(WS_API_cuMemAddressFree, rc, ptr, size, 0, 0, before));
}

/* One more reference to physical memory mapped at addr: it is given back at the last release. */
WS_HOOK(CUresult, cuMemRetainAllocationHandle, (CUmemGenericAllocationHandle * handle, void *addr), (handle, addr))
{
    DRV_FORWARD(cuMemRetainAllocationHandle, (handle, addr),
                record_vmm(WS_API_cuMemRetainAllocationHandle, rc, (uint64_t)(uintptr_t)addr, 0, 0,
                           rc == CUDA_SUCCESS && handle ? *handle : 0, 0));
}

/* Physical memory another process (or another handle) owns: mapped here, counted where it was made. */
WS_HOOK(CUresult, cuMemImportFromShareableHandle,
        (CUmemGenericAllocationHandle * handle, void *os_handle, CUmemAllocationHandleType type),
        (handle, os_handle, type))
{
    DRV_FORWARD(cuMemImportFromShareableHandle, (handle, os_handle, type),
                record_vmm(WS_API_cuMemImportFromShareableHandle, rc, 0, 0, (uint64_t)type,
                           rc == CUDA_SUCCESS && handle ? *handle : 0, 0));
}

/* ---- launches ---- */

/* A launched function (a CUfunction, or a CUkernel) is named once per thread and spool, from the
 * driver (cuFuncGetName, 12.3 and later; nothing is named with an older driver); a direct-mapped
 * cache of what was named keeps a kernel seen again to one compare.  A forked child names its
 * kernels again: ws_forget_named_functions() (hooks_cuda.c) clears the cache in the child. */
#define NAMED_SLOT_BITS 6
#define NAMED_SLOTS     (1u << NAMED_SLOT_BITS)
static WS_TLS CUfunction named_cache[NAMED_SLOTS];

static inline unsigned named_slot(CUfunction f)
{
    uintptr_t a = (uintptr_t)f;
    return (uint32_t)(a >> 4) * 0x9e3779b1u >> (32 - NAMED_SLOT_BITS); /* Fibonacci hashing: one multiply */
}

static __attribute__((noinline)) void name_function(CUfunction f)
{
    named_cache[named_slot(f)] = f;
    __typeof__(&cuFuncGetName) get = WS_REAL_FN(cuFuncGetName);
    const char *name = NULL;
    if (!get || get(&name, f) != CUDA_SUCCESS || !name)
        return;
    uint32_t n;
    struct ws_rec *r = ws_rec_with_string(WS_REC_SYMBOL, name, &n);
    if (!r)
        return;
    r->u[0] = u64(f);
    r->u[3] = 1; /* a device name, as __cudaRegisterFunction gives */
    ws_rec_commit(n);
}

static inline void note_function(CUfunction f)
{
    if (__builtin_expect(named_cache[named_slot(f)] != f, 0) && f)
        name_function(f);
}

void ws_driver_note_function(const void *fn) { note_function((CUfunction)fn); }

void ws_driver_forget_named_functions(void) { memset(named_cache, 0, sizeof named_cache); }

/* grid and block: packed with ws_pack_dim3 (LAUNCH_DIMS: before the real call, so that two values
 * live across it rather than six). */
static inline void record_launch(uint8_t api, CUresult rc, CUfunction f, uint64_t grid, uint64_t block, unsigned smem,
                                 CUstream stream)
{
    note_function(f);
    if (rc == CUDA_SUCCESS)
        ws_capture_note(api, stream);
    rec_fill(WS_REC_LAUNCH, api, rc, ws_now(), u64(f), grid, block, u64(stream), smem,
             (uint64_t)(uint32_t)ws_driver_device());
}

static __attribute__((noinline, cold)) CUresult launch_finish_slow(uint64_t head, CUfunction f, uint64_t grid,
                                                                   uint64_t block, unsigned smem, CUstream stream)
{
    CUresult rc = (CUresult)ws_rec_head_status(head);
    WS_FINISH_SLOW(rc, record_launch((uint8_t)(head >> 8), rc, f, grid, block, smem, stream));
}

/* A launch's record by the leaf: the function named already, no capture under way, the device known. */
static inline __attribute__((always_inline)) CUresult launch_finish(uint64_t head, CUfunction f, uint64_t grid,
                                                                    uint64_t block, unsigned smem, CUstream stream)
{
    uint32_t device = ws_self.driver_device;
    if (__builtin_expect(named_cache[named_slot(f)] == f, 1) && __builtin_expect(device != 0, 1) &&
        __builtin_expect(!__atomic_load_n(&ws_captures_active, __ATOMIC_RELAXED), 1) &&
        __builtin_expect(ws_rec_put_now(head, u64(f), grid, block, u64(stream), smem, device - 1), 1))
        WS_FINISH_FAST(CUresult, head);
    return launch_finish_slow(head, f, grid, block, smem, stream);
}

#define LAUNCH_DIMS(gx, gy, gz, bx, by, bz)                                                                            \
    uint64_t grid = ws_pack_dim3(gx, gy, gz), block = ws_pack_dim3(bx, by, bz);                                        \
    __asm__("" : "+r"(grid), "+r"(block)) /* packed here, not after the call */

/* A launch's grid or block as ws_pack_dim3 lays it out, stored in three parts (no packing). */
static inline __attribute__((always_inline)) void put_dim3(uint64_t *at, uint32_t x, uint32_t y, uint32_t z)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint16_t y16 = (uint16_t)y, z16 = (uint16_t)z;
    memcpy((char *)at, &x, sizeof x);
    memcpy((char *)at + 4, &y16, sizeof y16);
    memcpy((char *)at + 6, &z16, sizeof z16);
#else
    *at = ws_pack_dim3(x, y, z);
#endif
}

/* After the real call of a launch filled before it (DRV_LAUNCH), when the leaf cannot publish it:
 * the record by the general path, from the fields as filled. */
static __attribute__((noinline, cold)) CUresult launch_close_slow(const struct ws_rec *r, uint64_t head)
{
    CUresult rc = (CUresult)ws_rec_head_status(head);
    const struct ws_rec *at = ws_rec_opened(r);
    if (__builtin_expect(!at, 0)) {
        ws_count_lost(1);
        WS_FINISH_SLOW(rc, (void)0);
    }
    CUfunction f = (CUfunction)(uintptr_t)at->u[0];
    uint64_t grid = at->u[1], block = at->u[2];
    CUstream stream = (CUstream)(uintptr_t)at->u[3];
    unsigned smem = (unsigned)at->u[4];
    WS_FINISH_SLOW(rc, record_launch((uint8_t)(head >> 8), rc, f, grid, block, smem, stream));
}

/*
 * The traced half of cuLaunchKernel and its _ptsz form: with the function named already and the
 * device known, the record is filled before the real call (ws_rec_open, tracer.h), so that only the
 * slot lives across it, and published by the leaf after it (timed then: a launch's time is the end
 * of its call) unless a capture is under way.  Otherwise the general half `name##_general_` (the
 * same parameters: a jump) records as the other launch hooks do.
 */
#define DRV_LAUNCH(name, f, gx, gy, gz, bx, by, bz, smem, stream, params, extra)                                       \
    do {                                                                                                               \
        DRV_OPEN(name, named_cache[named_slot(f)] == f, goto general);                                                 \
        r->u[0] = u64(f);                                                                                              \
        put_dim3(&r->u[1], gx, gy, gz);                                                                                \
        put_dim3(&r->u[2], bx, by, bz);                                                                                \
        r->u[3] = u64(stream);                                                                                         \
        r->u[4] = smem;                                                                                                \
        r->u[5] = device - 1;                                                                                          \
        CUresult rc = fn(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra);                                      \
        uint64_t head = WS_REC_HEAD(WS_REC_LAUNCH, WS_API_##name, rc);                                                 \
        if (__builtin_expect(ws_rec_still_open(r), 1) &&                                                               \
            __builtin_expect(!__atomic_load_n(&ws_captures_active, __ATOMIC_RELAXED), 1))                              \
            DRV_CLOSE(ws_rec_close_now(r, head), head);                                                                \
        return launch_close_slow(r, head);                                                                             \
    general:;                                                                                                          \
        /* a plain call, not a jump: a jump would have the arguments on the stack copied first */                      \
        CUresult g = name##_general_(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra);                          \
        __asm__("" : "+r"(g));                                                                                         \
        return g;                                                                                                      \
    } while (0)

/* The general halves of the two (defined after their hooks, which keep the real functions). */
static CUresult cuLaunchKernel_general_(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                        unsigned bz, unsigned smem, CUstream hStream, void **params, void **extra);
static CUresult cuLaunchKernel_ptsz_general_(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                             unsigned by, unsigned bz, unsigned smem, CUstream hStream, void **params,
                                             void **extra);

WS_HOOK(CUresult, cuLaunchKernel,
        (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
         unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
         void **kernelParams, void **extra),
        (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams,
         extra))
{
    DRV_LAUNCH(cuLaunchKernel, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
               hStream, kernelParams, extra);
}

WS_HOOK(CUresult, cuLaunchKernel_ptsz,
        (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned smem,
         CUstream hStream, void **params, void **extra),
        (f, gx, gy, gz, bx, by, bz, smem, hStream, params, extra))
{
    DRV_LAUNCH(cuLaunchKernel_ptsz, f, gx, gy, gz, bx, by, bz, smem, hStream, params, extra);
}

static __attribute__((noinline, cold)) CUresult cuLaunchKernel_general_(CUfunction f, unsigned gx, unsigned gy,
                                                                        unsigned gz, unsigned bx, unsigned by,
                                                                        unsigned bz, unsigned smem, CUstream hStream,
                                                                        void **params, void **extra)
{
    LAUNCH_DIMS(gx, gy, gz, bx, by, bz);
    DRV_FORWARD_FINISH(
        cuLaunchKernel, (f, gx, gy, gz, bx, by, bz, smem, hStream, params, extra), 1, (void)0,
        launch_finish(WS_REC_HEAD(WS_REC_LAUNCH, WS_API_cuLaunchKernel, rc), f, grid, block, smem, hStream));
}

static __attribute__((noinline, cold)) CUresult
cuLaunchKernel_ptsz_general_(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                             unsigned smem, CUstream hStream, void **params, void **extra)
{
    LAUNCH_DIMS(gx, gy, gz, bx, by, bz);
    DRV_FORWARD_FINISH(
        cuLaunchKernel_ptsz, (f, gx, gy, gz, bx, by, bz, smem, hStream, params, extra), 1, (void)0,
        launch_finish(WS_REC_HEAD(WS_REC_LAUNCH, WS_API_cuLaunchKernel_ptsz, rc), f, grid, block, smem, hStream));
}

WS_HOOK(CUresult, cuLaunchCooperativeKernel,
        (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
         unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
         void **kernelParams),
        (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams))
{
    LAUNCH_DIMS(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ);
    DRV_FORWARD(
        cuLaunchCooperativeKernel,
        (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams),
        record_launch(WS_API_cuLaunchCooperativeKernel, rc, f, grid, block, sharedMemBytes, hStream));
}

WS_HOOK(CUresult, cuLaunchCooperativeKernel_ptsz,
        (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned smem,
         CUstream hStream, void **params),
        (f, gx, gy, gz, bx, by, bz, smem, hStream, params))
{
    LAUNCH_DIMS(gx, gy, gz, bx, by, bz);
    DRV_FORWARD(cuLaunchCooperativeKernel_ptsz, (f, gx, gy, gz, bx, by, bz, smem, hStream, params),
                record_launch(WS_API_cuLaunchCooperativeKernel_ptsz, rc, f, grid, block, smem, hStream));
}

static void record_launch_config(uint8_t api, CUresult rc, const CUlaunchConfig *c, CUfunction f)
{
    if (c)
        record_launch(api, rc, f, ws_pack_dim3(c->gridDimX, c->gridDimY, c->gridDimZ),
                      ws_pack_dim3(c->blockDimX, c->blockDimY, c->blockDimZ), c->sharedMemBytes, c->hStream);
    else
        record_launch(api, rc, f, 0, 0, 0, NULL);
}

WS_HOOK(CUresult, cuLaunchKernelEx, (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra),
        (config, f, kernelParams, extra))
{
    DRV_FORWARD(cuLaunchKernelEx, (config, f, kernelParams, extra),
                record_launch_config(WS_API_cuLaunchKernelEx, rc, config, f));
}

WS_HOOK(CUresult, cuLaunchKernelEx_ptsz, (const CUlaunchConfig *config, CUfunction f, void **params, void **extra),
        (config, f, params, extra))
{
    DRV_FORWARD(cuLaunchKernelEx_ptsz, (config, f, params, extra),
                record_launch_config(WS_API_cuLaunchKernelEx_ptsz, rc, config, f));
}

/* ---- entry-point lookups ---- */

/*
 * Every form cuGetProcAddress can answer for a base name this library hooks, by the CUDA version
 * that introduced it (cudaTypedefs.h: PFN_<base>_v<version>[_ptsz]), and the hook of that form;
 * forms without a hook are listed so that a lookup asking for them is never answered with a newer
 * one.  The driver answers a lookup with the newest form introduced at or before the version asked
 * for; with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, with its per-thread form where one
 * exists that is not older than that.
 */
struct proc {
    const char *base;
    int version;
    int per_thread;
    const char *symbol;
    void *hook;
};

/* The graph hooks by name (hooks_driver_graph.c). */
void *ws_driver_graph_hook(const char *symbol);

#define P(base, version, pt, symbol, hook)                                                                             \
    {                                                                                                                  \
        base, version, pt, symbol, (void *)(hook)                                                                      \
    }
#define G(base, version, pt, symbol)                                                                                   \
    {                                                                                                                  \
        base, version, pt, symbol, NULL                                                                                \
    }
static const struct proc procs[] = {
    P("cuMemAlloc", 2000, 0, "cuMemAlloc", NULL),
    P("cuMemAlloc", 3020, 0, "cuMemAlloc_v2", cuMemAlloc_v2),
    P("cuMemAllocPitch", 2000, 0, "cuMemAllocPitch", NULL),
    P("cuMemAllocPitch", 3020, 0, "cuMemAllocPitch_v2", cuMemAllocPitch_v2),
    P("cuMemAllocManaged", 6000, 0, "cuMemAllocManaged", cuMemAllocManaged),
    P("cuMemAllocHost", 2000, 0, "cuMemAllocHost", NULL),
    P("cuMemAllocHost", 3020, 0, "cuMemAllocHost_v2", cuMemAllocHost_v2),
    P("cuMemHostAlloc", 2020, 0, "cuMemHostAlloc", cuMemHostAlloc),
    P("cuMemFree", 2000, 0, "cuMemFree", NULL),
    P("cuMemFree", 3020, 0, "cuMemFree_v2", cuMemFree_v2),
    P("cuMemFreeHost", 2000, 0, "cuMemFreeHost", cuMemFreeHost),
    P("cuMemAllocAsync", 11020, 0, "cuMemAllocAsync", cuMemAllocAsync),
    P("cuMemAllocAsync", 11020, 1, "cuMemAllocAsync_ptsz", cuMemAllocAsync_ptsz),
    P("cuMemAllocFromPoolAsync", 11020, 0, "cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync),
    P("cuMemAllocFromPoolAsync", 11020, 1, "cuMemAllocFromPoolAsync_ptsz", cuMemAllocFromPoolAsync_ptsz),
    P("cuMemFreeAsync", 11020, 0, "cuMemFreeAsync", cuMemFreeAsync),
    P("cuMemFreeAsync", 11020, 1, "cuMemFreeAsync_ptsz", cuMemFreeAsync_ptsz),
    P("cuMemPoolCreate", 11020, 0, "cuMemPoolCreate", cuMemPoolCreate),
    P("cuMemPoolDestroy", 11020, 0, "cuMemPoolDestroy", cuMemPoolDestroy),
    P("cuMemPoolTrimTo", 11020, 0, "cuMemPoolTrimTo", cuMemPoolTrimTo),
    P("cuMemPoolSetAttribute", 11020, 0, "cuMemPoolSetAttribute", cuMemPoolSetAttribute),
    P("cuDeviceSetMemPool", 11020, 0, "cuDeviceSetMemPool", cuDeviceSetMemPool),
    P("cuMemHostRegister", 4000, 0, "cuMemHostRegister", cuMemHostRegister),
    P("cuMemHostRegister", 6050, 0, "cuMemHostRegister_v2", cuMemHostRegister_v2),
    P("cuMemHostUnregister", 4000, 0, "cuMemHostUnregister", cuMemHostUnregister),
    P("cuArrayCreate", 2000, 0, "cuArrayCreate", NULL),
    P("cuArrayCreate", 3020, 0, "cuArrayCreate_v2", cuArrayCreate_v2),
    P("cuArray3DCreate", 2000, 0, "cuArray3DCreate", NULL),
    P("cuArray3DCreate", 3020, 0, "cuArray3DCreate_v2", cuArray3DCreate_v2),
    P("cuMipmappedArrayCreate", 5000, 0, "cuMipmappedArrayCreate", cuMipmappedArrayCreate),
    P("cuArrayDestroy", 2000, 0, "cuArrayDestroy", cuArrayDestroy),
    P("cuMipmappedArrayDestroy", 5000, 0, "cuMipmappedArrayDestroy", cuMipmappedArrayDestroy),
    P("cuIpcOpenMemHandle", 4010, 0, "cuIpcOpenMemHandle", cuIpcOpenMemHandle),
    P("cuIpcOpenMemHandle", 11000, 0, "cuIpcOpenMemHandle_v2", cuIpcOpenMemHandle_v2),
    P("cuIpcCloseMemHandle", 4010, 0, "cuIpcCloseMemHandle", cuIpcCloseMemHandle),
    P("cuMemCreate", 10020, 0, "cuMemCreate", cuMemCreate),
    P("cuMemRelease", 10020, 0, "cuMemRelease", cuMemRelease),
    P("cuMemMap", 10020, 0, "cuMemMap", cuMemMap),
    P("cuMemUnmap", 10020, 0, "cuMemUnmap", cuMemUnmap),
    P("cuMemAddressReserve", 10020, 0, "cuMemAddressReserve", cuMemAddressReserve),
    P("cuMemAddressFree", 10020, 0, "cuMemAddressFree", cuMemAddressFree),
    P("cuMemRetainAllocationHandle", 11000, 0, "cuMemRetainAllocationHandle", cuMemRetainAllocationHandle),
    P("cuMemImportFromShareableHandle", 10020, 0, "cuMemImportFromShareableHandle", cuMemImportFromShareableHandle),
    /* context changes: forwarded, and the thread's device asked again */
    P("cuCtxSetCurrent", 4000, 0, "cuCtxSetCurrent", cuCtxSetCurrent),
    P("cuCtxPushCurrent", 2000, 0, "cuCtxPushCurrent", NULL),
    P("cuCtxPopCurrent", 2000, 0, "cuCtxPopCurrent", NULL),
    P("cuCtxDestroy", 2000, 0, "cuCtxDestroy", NULL),
    P("cuCtxPushCurrent", 4000, 0, "cuCtxPushCurrent_v2", cuCtxPushCurrent_v2),
    P("cuCtxPopCurrent", 4000, 0, "cuCtxPopCurrent_v2", cuCtxPopCurrent_v2),
    P("cuCtxDestroy", 4000, 0, "cuCtxDestroy_v2", cuCtxDestroy_v2),
    P("cuCtxCreate", 2000, 0, "cuCtxCreate", NULL),
    P("cuCtxCreate", 3020, 0, "cuCtxCreate_v2", cuCtxCreate_v2),
    P("cuCtxCreate", 11040, 0, "cuCtxCreate_v3", cuCtxCreate_v3),
    P("cuCtxCreate", 12050, 0, "cuCtxCreate_v4", cuCtxCreate_v4),
    P("cuLaunchKernel", 4000, 0, "cuLaunchKernel", cuLaunchKernel),
    P("cuLaunchKernel", 7000, 1, "cuLaunchKernel_ptsz", cuLaunchKernel_ptsz),
    P("cuLaunchKernelEx", 11060, 0, "cuLaunchKernelEx", cuLaunchKernelEx),
    P("cuLaunchKernelEx", 11060, 1, "cuLaunchKernelEx_ptsz", cuLaunchKernelEx_ptsz),
    P("cuLaunchCooperativeKernel", 9000, 0, "cuLaunchCooperativeKernel", cuLaunchCooperativeKernel),
    P("cuLaunchCooperativeKernel", 9000, 1, "cuLaunchCooperativeKernel_ptsz", cuLaunchCooperativeKernel_ptsz),
    /* graphs and capture: their hooks are in hooks_driver_graph.c (ws_driver_graph_hook) */
    G("cuGraphLaunch", 10000, 0, "cuGraphLaunch"),
    G("cuGraphLaunch", 10000, 1, "cuGraphLaunch_ptsz"),
    G("cuGraphInstantiate", 10000, 0, "cuGraphInstantiate"),
    G("cuGraphInstantiate", 11000, 0, "cuGraphInstantiate_v2"),
    G("cuGraphInstantiateWithFlags", 11040, 0, "cuGraphInstantiateWithFlags"),
    G("cuGraphInstantiateWithParams", 12000, 0, "cuGraphInstantiateWithParams"),
    G("cuGraphInstantiateWithParams", 12000, 1, "cuGraphInstantiateWithParams_ptsz"),
    G("cuGraphExecUpdate", 10020, 0, "cuGraphExecUpdate"),
    G("cuGraphExecUpdate", 12000, 0, "cuGraphExecUpdate_v2"),
    G("cuGraphExecDestroy", 10000, 0, "cuGraphExecDestroy"),
    G("cuGraphExecKernelNodeSetParams", 10010, 0, "cuGraphExecKernelNodeSetParams"),
    G("cuGraphExecKernelNodeSetParams", 12000, 0, "cuGraphExecKernelNodeSetParams_v2"),
    G("cuGraphExecNodeSetParams", 12020, 0, "cuGraphExecNodeSetParams"),
    G("cuGraphNodeSetEnabled", 11060, 0, "cuGraphNodeSetEnabled"),
    G("cuStreamBeginCapture", 10000, 0, "cuStreamBeginCapture"),
    G("cuStreamBeginCapture", 10000, 1, "cuStreamBeginCapture_ptsz"),
    G("cuStreamBeginCapture", 10010, 0, "cuStreamBeginCapture_v2"),
    G("cuStreamBeginCapture", 10010, 1, "cuStreamBeginCapture_v2_ptsz"),
    G("cuStreamBeginCaptureToGraph", 12030, 0, "cuStreamBeginCaptureToGraph"),
    G("cuStreamBeginCaptureToGraph", 12030, 1, "cuStreamBeginCaptureToGraph_ptsz"),
    G("cuStreamEndCapture", 10000, 0, "cuStreamEndCapture"),
    G("cuStreamEndCapture", 10000, 1, "cuStreamEndCapture_ptsz"),
    /* the lookups themselves: a library may fetch cuGetProcAddress through cuGetProcAddress */
    G("cuGetProcAddress", 11030, 0, "cuGetProcAddress"),
    G("cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2"),
};
#undef P
#undef G

/* The form a lookup of base at version (per_thread: with the per-thread flag) is answered with. */
static const struct proc *proc_form(const char *base, int version, int per_thread)
{
    const struct proc *plain = NULL, *threaded = NULL;
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
        const struct proc *p = &procs[i];
        if (p->version > version || strcmp(p->base, base) != 0)
            continue;
        if (p->per_thread)
            threaded = p;
        else
            plain = p;
    }
    return per_thread && threaded && (!plain || threaded->version >= plain->version) ? threaded : plain;
}

static void *proc_hook(const struct proc *p)
{
    if (p->hook)
        return p->hook;
    if (strcmp(p->symbol, "cuGetProcAddress") == 0)
        return (void *)cuGetProcAddress;
    if (strcmp(p->symbol, "cuGetProcAddress_v2") == 0)
        return (void *)cuGetProcAddress_v2;
    return ws_driver_graph_hook(p->symbol);
}

/* After a successful lookup of symbol: *pfn is the real form; hand out its hook instead. */
static void hand_out_hook(const char *symbol, int version, int per_thread, void **pfn)
{
    if (!symbol || !pfn || !*pfn)
        return;
    const struct proc *p = proc_form(symbol, version, per_thread);
    void *hook = p ? proc_hook(p) : NULL;
    if (!hook || hook == *pfn)
        return;
    ws_real_register(p->symbol, *pfn);
    /* Hand out the hook only when what it forwards to is what the lookup found: a name registered
     * earlier with another definition keeps that one. */
    if (ws_real_registered(p->symbol) == *pfn)
        *pfn = hook;
}

/*
 * The driver functions the hooks ask things of (a kernel's name, the current device, a stream's
 * capture, a graph's nodes) are found like any real function (ws_real_symbol); a library that
 * opened the driver privately holds the only way to them, so the first lookup through it fetches
 * them too and registers what it finds.
 */
static const char *const helpers[][2] = {
    {"cuFuncGetName", "cuFuncGetName"},
    {"cuCtxGetDevice", "cuCtxGetDevice"},
    {"cuStreamGetCaptureInfo", "cuStreamGetCaptureInfo_v3"},
    {"cuDeviceGetMemPool", "cuDeviceGetMemPool"},
    {"cuMemPoolGetAttribute", "cuMemPoolGetAttribute"},
    {"cuDeviceGetGraphMemAttribute", "cuDeviceGetGraphMemAttribute"},
    {"cuMemGetAddressRange", "cuMemGetAddressRange_v2"},
    {"cuGraphGetNodes", "cuGraphGetNodes"},
    {"cuGraphGetEdges", "cuGraphGetEdges_v2"},
    {"cuGraphNodeGetType", "cuGraphNodeGetType"},
    {"cuGraphKernelNodeGetParams", "cuGraphKernelNodeGetParams_v2"},
    {"cuGraphMemcpyNodeGetParams", "cuGraphMemcpyNodeGetParams"},
    {"cuGraphMemsetNodeGetParams", "cuGraphMemsetNodeGetParams"},
    {"cuGraphHostNodeGetParams", "cuGraphHostNodeGetParams"},
    {"cuGraphChildGraphNodeGetGraph", "cuGraphChildGraphNodeGetGraph"},
    {"cuGraphEventRecordNodeGetEvent", "cuGraphEventRecordNodeGetEvent"},
    {"cuGraphEventWaitNodeGetEvent", "cuGraphEventWaitNodeGetEvent"},
    {"cuGraphMemAllocNodeGetParams", "cuGraphMemAllocNodeGetParams"},
    {"cuGraphMemFreeNodeGetParams", "cuGraphMemFreeNodeGetParams"},
};

static void register_helpers(__typeof__(&cuGetProcAddress_v2) lookup)
{
    static int done;
    if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
        return;
    for (size_t i = 0; i < sizeof helpers / sizeof helpers[0]; i++) {
        void *p = NULL;
        if (lookup(helpers[i][0], &p, CUDA_VERSION, 0, NULL) == CUDA_SUCCESS && p)
            ws_real_register(helpers[i][1], p);
    }
}

WS_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *symbolStatus)
{
    __typeof__(&cuGetProcAddress_v2) fn = WS_REAL_FN(cuGetProcAddress_v2);
    if (!fn)
        return DRV_MISSING;
    CUresult rc = fn(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (rc == CUDA_SUCCESS) {
        int saved = errno;
        register_helpers(fn);
        hand_out_hook(symbol, cudaVersion, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0, pfn);
        errno = saved;
    }
    return rc;
}

WS_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    __typeof__(&cuGetProcAddress) fn = WS_REAL_FN(cuGetProcAddress);
    if (!fn)
        return DRV_MISSING;
    CUresult rc = fn(symbol, pfn, cudaVersion, flags);
    if (rc == CUDA_SUCCESS) {
        int saved = errno;
        hand_out_hook(symbol, cudaVersion, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0, pfn);
        errno = saved;
    }
    return rc;
}

/* The runtime's lookups answer at the runtime's own version (CUDART_VERSION of the headers built
 * against); cudaEnableDefault is the per-thread stream in the _ptsz form, the legacy one otherwise. */
static void hand_out_runtime(cudaError_t rc, const char *symbol, void **funcPtr, unsigned version,
                             unsigned long long flags, int ptsz, const enum cudaDriverEntryPointQueryResult *status)
{
    if (rc != cudaSuccess || (status && *status != cudaDriverEntryPointSuccess))
        return;
    int per_thread = (flags & cudaEnablePerThreadDefaultStream) != 0 || (ptsz && flags == cudaEnableDefault);
    int saved = errno;
    hand_out_hook(symbol, (int)version, per_thread, funcPtr);
    errno = saved;
}

/* Deprecated in CUDA 12.5, still exported and called. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
WS_EXPORT cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                              enum cudaDriverEntryPointQueryResult *driverStatus)
{
    __typeof__(&cudaGetDriverEntryPoint) fn = WS_REAL_FN(cudaGetDriverEntryPoint);
    if (!fn)
        return cudaErrorSharedObjectSymbolNotFound;
    cudaError_t rc = fn(symbol, funcPtr, flags, driverStatus);
    hand_out_runtime(rc, symbol, funcPtr, CUDART_VERSION, flags, 0, driverStatus);
    return rc;
}
#pragma GCC diagnostic pop

WS_EXPORT cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                                   enum cudaDriverEntryPointQueryResult *driverStatus)
{
    __typeof__(&cudaGetDriverEntryPoint_ptsz) fn = WS_REAL_FN(cudaGetDriverEntryPoint_ptsz);
    if (!fn)
        return cudaErrorSharedObjectSymbolNotFound;
    cudaError_t rc = fn(symbol, funcPtr, flags, driverStatus);
    hand_out_runtime(rc, symbol, funcPtr, CUDART_VERSION, flags, 1, driverStatus);
    return rc;
}

WS_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                                       unsigned long long flags,
                                                       enum cudaDriverEntryPointQueryResult *driverStatus)
{
    __typeof__(&cudaGetDriverEntryPointByVersion) fn = WS_REAL_FN(cudaGetDriverEntryPointByVersion);
    if (!fn)
        return cudaErrorSharedObjectSymbolNotFound;
    cudaError_t rc = fn(symbol, funcPtr, cudaVersion, flags, driverStatus);
    hand_out_runtime(rc, symbol, funcPtr, cudaVersion, flags, 0, driverStatus);
    return rc;
}

/* What cudaGetDriverEntryPointByVersion becomes in code built for the per-thread default stream. */
WS_EXPORT cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr,
                                                            unsigned int cudaVersion, unsigned long long flags,
                                                            enum cudaDriverEntryPointQueryResult *driverStatus)
{
    __typeof__(&cudaGetDriverEntryPointByVersion_ptsz) fn = WS_REAL_FN(cudaGetDriverEntryPointByVersion_ptsz);
    if (!fn)
        return cudaErrorSharedObjectSymbolNotFound;
    cudaError_t rc = fn(symbol, funcPtr, cudaVersion, flags, driverStatus);
    hand_out_runtime(rc, symbol, funcPtr, cudaVersion, flags, 1, driverStatus);
    return rc;
}
