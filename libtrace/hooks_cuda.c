/*
 * CUDA runtime API interposition.  Every hook forwards to the real function first, then
 * appends one fixed-size record to the calling thread's buffer; return values, out-parameters
 * and errno reach the caller unchanged.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "graph_hooks.h"
#include "tracer.h"

/* Launch entry points that nvcc-generated code calls (crt/host_runtime.h, crt/device_functions.h). */
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *host_fun);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t smem,
                               cudaStream_t stream);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t smem,
                                    cudaStream_t stream);
/* The per-thread default stream forms (--default-stream per-thread renames the calls to these;
 * cuda_runtime_api.h declares them only under that option). */
cudaError_t cudaMallocAsync_ptsz(void **ptr, size_t size, cudaStream_t stream);
cudaError_t cudaFreeAsync_ptsz(void *ptr, cudaStream_t stream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream);
cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 grid, dim3 block, void **args, size_t smem,
                                  cudaStream_t stream);
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func, void **args);
cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 grid, dim3 block, void **args, size_t smem,
                                             cudaStream_t stream);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream);
void __cudaRegisterFunction(void **fat_cubin, const char *host_fun, char *device_fun, const char *device_name,
                            int thread_limit, uint3 *tid, uint3 *bid, dim3 *bdim, dim3 *gdim, int *wsize);

/* The one table of real symbols: X(name). */
#define WS_REAL_SYMBOLS(X)                                                                                             \
    X(cudaMalloc)                                                                                                      \
    X(cudaFree)                                                                                                        \
    X(cudaMallocAsync)                                                                                                 \
    X(cudaFreeAsync)                                                                                                   \
    X(cudaMallocFromPoolAsync)                                                                                         \
    X(cudaMallocManaged)                                                                                               \
    X(cudaMallocPitch)                                                                                                 \
    X(cudaMallocHost) X(cudaHostAlloc) X(cudaFreeHost) X(cudaLaunchKernel) X(cudaLaunchKernelExC)                      \
        X(cudaLaunchCooperativeKernel) X(cudaGraphLaunch) X(cudaSetDevice) X(__cudaGetKernel) X(__cudaLaunchKernel)    \
            X(__cudaLaunchKernel_ptsz) X(__cudaRegisterFunction) X(cudaMallocAsync_ptsz) X(cudaFreeAsync_ptsz)         \
                X(cudaMallocFromPoolAsync_ptsz) X(cudaLaunchKernel_ptsz) X(cudaLaunchKernelExC_ptsz)                   \
                    X(cudaLaunchCooperativeKernel_ptsz) X(cudaGraphLaunch_ptsz)

#define WS_REAL_FIELD(name) __typeof__(&name) name;
static struct {
    WS_REAL_SYMBOLS(WS_REAL_FIELD)
} real;

#define WS_REAL_ENTRY(name) {(void **)&real.name, #name},
static const struct {
    void **slot;
    const char *name;
} real_table[] = {WS_REAL_SYMBOLS(WS_REAL_ENTRY)};

/* Resolve every real symbol at once; racing callers store the same values.  (Out of line: the
 * traced halves that call it on their first call keep no registers for it.) */
static __attribute__((noinline, cold)) void resolve_real(void)
{
    for (size_t i = 0; i < sizeof real_table / sizeof real_table[0]; i++) {
        void *p = ws_real_symbol(real_table[i].name);
        if (p)
            __atomic_store_n(real_table[i].slot, p, __ATOMIC_RELEASE);
    }
}

#define REAL(name)                                                                                                     \
    ({                                                                                                                 \
        __typeof__(real.name) fn_ = __atomic_load_n(&real.name, __ATOMIC_ACQUIRE);                                     \
        if (__builtin_expect(!fn_, 0)) {                                                                               \
            resolve_real();                                                                                            \
            fn_ = __atomic_load_n(&real.name, __ATOMIC_ACQUIRE);                                                       \
        }                                                                                                              \
        fn_;                                                                                                           \
    })

/* A missing real symbol answers with the runtime's own code for an unresolvable symbol. */
#define MISSING cudaErrorSharedObjectSymbolNotFound

/* A runtime hook (WS_HOOK_AT, graph_hooks.h): the real function is kept in `real`. */
#define CUDA_HOOK(name, params, args) WS_HOOK_AT(cudaError_t, name, params, args, real.name)

/*
 * The traced half of a hot hook (allocation, free, launch): forward, then return FINISH, a call
 * to a leaf that records (ws_rec_put, tracer.h), clears the re-entry guard and answers rc; errno
 * is kept by the leaf's general path, the only one that can change it.  BEFORE runs just before
 * the real call: a free takes its time there, an allocation after the call (address reuse across
 * threads is ordered only by causality; README, "Reliability"): the allocator may hand a freed
 * address to another thread before the freeing thread's hook runs again, and only these two
 * points make free-time <= reuse-time on every interleaving.
 */
#define FORWARD_AND_FINISH_IF(name, args, WANTED, BEFORE, FINISH)                                                      \
    do {                                                                                                               \
        __typeof__(real.name) fn = __atomic_load_n(&real.name, __ATOMIC_ACQUIRE);                                      \
        int first_ = fn == NULL;                                                                                       \
        if (__builtin_expect(first_, 0) && !(fn = REAL(name)))                                                         \
            return MISSING;                                                                                            \
        if (!(WANTED) || !ws_hook_enter_traced(first_))                                                                \
            return fn args;                                                                                            \
        BEFORE;                                                                                                        \
        cudaError_t rc = fn args;                                                                                      \
        return FINISH;                                                                                                 \
    } while (0)

/* The traced half of every other hook: the same, with RECORD (which sees the result as rc) run
 * with errno saved and restored. */
#define FORWARD_AND_RECORD(name, args, RECORD)                                                                         \
    FORWARD_AND_FINISH_IF(name, args, 1, (void)0, ({                                                                   \
                              int saved_ = *ws_errno();                                                                \
                              RECORD;                                                                                  \
                              ws_hook_leave(saved_);                                                                   \
                              rc;                                                                                      \
                          }))

static inline void record_alloc(uint8_t api, cudaError_t rc, void *ptr, uint64_t requested, uint64_t bytes,
                                cudaStream_t stream, uint32_t memory, uint64_t aux)
{
    struct ws_rec *r = ws_rec_reserve(1);
    if (!r)
        return;
    r->type = WS_REC_ALLOC;
    r->api = api;
    r->ext = 0;
    r->status = (int32_t)rc;
    r->ns = ws_now();
    r->u[0] = rc == cudaSuccess ? (uint64_t)(uintptr_t)ptr : 0;
    r->u[1] = requested;
    r->u[2] = rc == cudaSuccess ? bytes : 0;
    r->u[3] = (uint64_t)(uintptr_t)stream;
    r->u[4] = (uint64_t)(uint32_t)ws_self.device | ((uint64_t)memory << 32);
    r->u[5] = aux;
    ws_rec_commit(1);
}

/* `ns`: the time taken before the real call (FORWARD_AND_FINISH_IF says why). */
static inline void record_free(uint8_t api, cudaError_t rc, void *ptr, cudaStream_t stream, uint32_t memory,
                               uint64_t ns)
{
    if (rc == cudaSuccess && stream)
        ws_capture_note(api, stream);
    struct ws_rec *r = ws_rec_reserve(1);
    if (!r)
        return;
    r->type = WS_REC_FREE;
    r->api = api;
    r->ext = 0;
    r->status = (int32_t)rc;
    r->ns = ns;
    r->u[0] = (uint64_t)(uintptr_t)ptr;
    r->u[1] = 0;
    r->u[2] = 0;
    r->u[3] = (uint64_t)(uintptr_t)stream;
    r->u[4] = (uint64_t)(uint32_t)ws_self.device | ((uint64_t)memory << 32);
    r->u[5] = 0;
    ws_rec_commit(1);
}

/* ws_pack_dim3(d.x, d.y, d.z) from the dim3's first 8 bytes as they lie (x low, y high on a
 * little-endian machine): a mask and a shift instead of three loads and three shifts. */
static inline uint64_t pack_dim3(dim3 d)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t xy;
    memcpy(&xy, &d, sizeof xy);
    return (xy & 0xffffffffffffu) | (uint64_t)(d.z & 0xffffu) << 48;
#else
    return ws_pack_dim3(d.x, d.y, d.z);
#endif
}

/* A launch hook's grid and block, packed before the real call (two values live across it, not six;
 * the empty asm keeps the compiler from moving the packing after the call). */
#define PACK_LAUNCH_DIMS()                                                                                             \
    uint64_t packed_grid = pack_dim3(grid), packed_block = pack_dim3(block);                                           \
    __asm__("" : "+r"(packed_grid), "+r"(packed_block))

/* The direct-mapped cache of the functions a thread named (ws_note_function, below). */
#define NAMED_SLOT_BITS 6
#define NAMED_SLOTS     (1u << NAMED_SLOT_BITS)
static WS_TLS const void *named_cache[NAMED_SLOTS];

static inline unsigned named_slot(const void *fn)
{
    uintptr_t a = (uintptr_t)fn;
    return (uint32_t)(a >> 4) * 0x9e3779b1u >> (32 - NAMED_SLOT_BITS); /* Fibonacci hashing: one multiply */
}

/* grid, block: packed with ws_pack_dim3. */
static inline void record_launch(uint8_t api, cudaError_t rc, const void *fn, uint64_t grid, uint64_t block,
                                 size_t smem, cudaStream_t stream)
{
    ws_note_function(fn);
    if (rc == cudaSuccess)
        ws_capture_note(api, stream);
    struct ws_rec *r = ws_rec_reserve(1);
    if (!r)
        return;
    r->type = WS_REC_LAUNCH;
    r->api = api;
    r->ext = 0;
    r->status = (int32_t)rc;
    r->ns = ws_now();
    r->u[0] = (uint64_t)(uintptr_t)fn;
    r->u[1] = grid;
    r->u[2] = block;
    r->u[3] = (uint64_t)(uintptr_t)stream;
    r->u[4] = smem;
    r->u[5] = (uint64_t)(uint32_t)ws_self.device;
    ws_rec_commit(1);
}

/* ---- the hot hooks' finishes (FORWARD_AND_FINISH_IF) ----------------------------------------- */


static __attribute__((noinline, cold)) cudaError_t alloc_finish_slow(uint64_t head, void **ptr, size_t size,
                                                                     uint32_t memory)
{
    cudaError_t rc = (cudaError_t)ws_rec_head_status(head);
    WS_FINISH_SLOW(rc, record_alloc((uint8_t)(head >> 8), rc, ptr ? *ptr : NULL, size, size, 0, memory, 0));
}

/* An allocation without stream or pool (cudaMalloc, cudaMallocHost); head: WS_REC_HEAD(ALLOC, api, rc). */
static inline __attribute__((always_inline)) cudaError_t alloc_finish(uint64_t head, void **ptr, size_t size,
                                                                      uint32_t memory)
{
    int ok = ws_rec_head_status(head) == cudaSuccess;
    uint64_t address = ok && ptr ? (uint64_t)(uintptr_t)*ptr : 0;
    if (__builtin_expect(ws_rec_put_now(head, address, size, ok ? size : 0, 0,
                                        (uint64_t)(uint32_t)ws_self.device | (uint64_t)memory << 32, 0),
                         1))
        WS_FINISH_FAST(cudaError_t, head);
    return alloc_finish_slow(head, ptr, size, memory);
}

static __attribute__((noinline, cold)) cudaError_t free_finish_slow(uint64_t head, void *ptr, cudaStream_t stream,
                                                                    uint32_t memory, uint64_t before)
{
    cudaError_t rc = (cudaError_t)ws_rec_head_status(head);
    WS_FINISH_SLOW(rc, record_free((uint8_t)(head >> 8), rc, ptr, stream, memory, before));
}

/* A free (its time `before` taken before the real call); a stream's while a capture is under way
 * takes the general path, which asks whether it was captured. */
static inline __attribute__((always_inline)) cudaError_t free_finish(uint64_t head, void *ptr, cudaStream_t stream,
                                                                     uint32_t memory, uint64_t before)
{
    if (__builtin_expect(!stream || !__atomic_load_n(&ws_captures_active, __ATOMIC_RELAXED), 1) &&
        __builtin_expect(ws_rec_put(head, before, (uint64_t)(uintptr_t)ptr, 0, 0, (uint64_t)(uintptr_t)stream,
                                    (uint64_t)(uint32_t)ws_self.device | (uint64_t)memory << 32, 0),
                         1))
        WS_FINISH_FAST(cudaError_t, head);
    return free_finish_slow(head, ptr, stream, memory, before);
}

static __attribute__((noinline, cold)) cudaError_t launch_finish_slow(uint64_t head, const void *fn, uint64_t grid,
                                                                      uint64_t block, size_t smem, cudaStream_t stream)
{
    cudaError_t rc = (cudaError_t)ws_rec_head_status(head);
    WS_FINISH_SLOW(rc, record_launch((uint8_t)(head >> 8), rc, fn, grid, block, smem, stream));
}

/* A launch of a function this thread named already, with no capture under way (else the general
 * path names it, or asks whether the launch was captured). */
static inline __attribute__((always_inline)) cudaError_t launch_finish(uint64_t head, const void *fn, uint64_t grid,
                                                                       uint64_t block, size_t smem, cudaStream_t stream)
{
    if (__builtin_expect(named_cache[named_slot(fn)] == fn, 1) &&
        __builtin_expect(!__atomic_load_n(&ws_captures_active, __ATOMIC_RELAXED), 1) &&
        __builtin_expect(ws_rec_put_now(head, (uint64_t)(uintptr_t)fn, grid, block, (uint64_t)(uintptr_t)stream, smem,
                                        (uint64_t)(uint32_t)ws_self.device),
                         1))
        WS_FINISH_FAST(cudaError_t, head);
    return launch_finish_slow(head, fn, grid, block, smem, stream);
}

/* ---- allocation ------------------------------------------------------------------------ */

CUDA_HOOK(cudaMalloc, (void **ptr, size_t size), (ptr, size))
{
    FORWARD_AND_FINISH_IF(cudaMalloc, (ptr, size), 1, (void)0,
                          alloc_finish(WS_REC_HEAD(WS_REC_ALLOC, WS_API_cudaMalloc, rc), ptr, size, WS_MEM_DEVICE));
}

/* A stream-ordered allocation names its pool (aux); one made inside a capture allocates nothing
 * now, so the pool is sampled only for the others. */
static void record_async_alloc(uint8_t api, cudaError_t rc, void **ptr, size_t size, cudaStream_t stream, uint64_t pool)
{
    int captured = rc == cudaSuccess && stream && ws_capture_note(api, stream);
    record_alloc(api, rc, ptr ? *ptr : NULL, size, size, stream, WS_MEM_DEVICE, pool);
    if (rc == cudaSuccess && !captured)
        ws_pool_sample(api, pool);
}

CUDA_HOOK(cudaMallocAsync, (void **ptr, size_t size, cudaStream_t stream), (ptr, size, stream))
{
    FORWARD_AND_RECORD(cudaMallocAsync, (ptr, size, stream),
                       record_async_alloc(WS_API_cudaMallocAsync, rc, ptr, size, stream, ws_pool_current()));
}

CUDA_HOOK(cudaMallocAsync_ptsz, (void **ptr, size_t size, cudaStream_t stream), (ptr, size, stream))
{
    FORWARD_AND_RECORD(cudaMallocAsync_ptsz, (ptr, size, stream),
                       record_async_alloc(WS_API_cudaMallocAsync_ptsz, rc, ptr, size, stream, ws_pool_current()));
}

CUDA_HOOK(cudaMallocFromPoolAsync, (void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream),
          (ptr, size, pool, stream))
{
    FORWARD_AND_RECORD(
        cudaMallocFromPoolAsync, (ptr, size, pool, stream),
        record_async_alloc(WS_API_cudaMallocFromPoolAsync, rc, ptr, size, stream, (uint64_t)(uintptr_t)pool));
}

CUDA_HOOK(cudaMallocFromPoolAsync_ptsz, (void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream),
          (ptr, size, pool, stream))
{
    FORWARD_AND_RECORD(
        cudaMallocFromPoolAsync_ptsz, (ptr, size, pool, stream),
        record_async_alloc(WS_API_cudaMallocFromPoolAsync_ptsz, rc, ptr, size, stream, (uint64_t)(uintptr_t)pool));
}

CUDA_HOOK(cudaMallocManaged, (void **ptr, size_t size, unsigned int flags), (ptr, size, flags))
{
    FORWARD_AND_RECORD(
        cudaMallocManaged, (ptr, size, flags),
        record_alloc(WS_API_cudaMallocManaged, rc, ptr ? *ptr : NULL, size, size, 0, WS_MEM_MANAGED, flags));
}

static void record_pitch(cudaError_t rc, void **ptr, const size_t *pitch, size_t width, size_t height)
{
    uint64_t requested, bytes = 0;
    if (__builtin_mul_overflow((uint64_t)width, (uint64_t)height, &requested))
        requested = UINT64_MAX;
    if (rc == cudaSuccess && pitch && __builtin_mul_overflow((uint64_t)*pitch, (uint64_t)height, &bytes))
        bytes = UINT64_MAX;
    record_alloc(WS_API_cudaMallocPitch, rc, ptr ? *ptr : NULL, requested, bytes, 0, WS_MEM_DEVICE,
                 rc == cudaSuccess && pitch ? *pitch : 0);
}

CUDA_HOOK(cudaMallocPitch, (void **ptr, size_t *pitch, size_t width, size_t height), (ptr, pitch, width, height))
{
    FORWARD_AND_RECORD(cudaMallocPitch, (ptr, pitch, width, height), record_pitch(rc, ptr, pitch, width, height));
}

CUDA_HOOK(cudaMallocHost, (void **ptr, size_t size), (ptr, size))
{
    FORWARD_AND_FINISH_IF(cudaMallocHost, (ptr, size), 1, (void)0,
                          alloc_finish(WS_REC_HEAD(WS_REC_ALLOC, WS_API_cudaMallocHost, rc), ptr, size, WS_MEM_HOST));
}

CUDA_HOOK(cudaHostAlloc, (void **ptr, size_t size, unsigned int flags), (ptr, size, flags))
{
    FORWARD_AND_RECORD(cudaHostAlloc, (ptr, size, flags),
                       record_alloc(WS_API_cudaHostAlloc, rc, ptr ? *ptr : NULL, size, size, 0, WS_MEM_HOST, flags));
}

/* ---- free -------------------------------------------------------------------------------- */

/* A free of NULL frees nothing (programs call cudaFree(NULL) to create the context): not recorded. */
CUDA_HOOK(cudaFree, (void *ptr), (ptr))
{
    FORWARD_AND_FINISH_IF(cudaFree, (ptr), ptr != NULL, uint64_t before = ws_now(),
                          free_finish(WS_REC_HEAD(WS_REC_FREE, WS_API_cudaFree, rc), ptr, 0, WS_MEM_DEVICE, before));
}

CUDA_HOOK(cudaFreeAsync, (void *ptr, cudaStream_t stream), (ptr, stream))
{
    FORWARD_AND_FINISH_IF(
        cudaFreeAsync, (ptr, stream), ptr != NULL, uint64_t before = ws_now(),
        free_finish(WS_REC_HEAD(WS_REC_FREE, WS_API_cudaFreeAsync, rc), ptr, stream, WS_MEM_DEVICE, before));
}

CUDA_HOOK(cudaFreeAsync_ptsz, (void *ptr, cudaStream_t stream), (ptr, stream))
{
    FORWARD_AND_FINISH_IF(
        cudaFreeAsync_ptsz, (ptr, stream), ptr != NULL, uint64_t before = ws_now(),
        free_finish(WS_REC_HEAD(WS_REC_FREE, WS_API_cudaFreeAsync_ptsz, rc), ptr, stream, WS_MEM_DEVICE, before));
}

CUDA_HOOK(cudaFreeHost, (void *ptr), (ptr))
{
    FORWARD_AND_FINISH_IF(cudaFreeHost, (ptr), ptr != NULL, uint64_t before = ws_now(),
                          free_finish(WS_REC_HEAD(WS_REC_FREE, WS_API_cudaFreeHost, rc), ptr, 0, WS_MEM_HOST, before));
}

/* ---- device ------------------------------------------------------------------------------ */

/* The device of an allocation is the calling thread's current device, tracked here so that
 * the hot path never asks the runtime. */
WS_EXPORT cudaError_t cudaSetDevice(int device)
{
    __typeof__(real.cudaSetDevice) fn = REAL(cudaSetDevice);
    if (!fn)
        return MISSING;
    cudaError_t rc = fn(device);
    if (rc == cudaSuccess) {
        ws_self.device = device;
        ws_self.driver_device = 0; /* the driver's current context may have changed with it */
    }
    return rc;
}

/* ---- launches ---------------------------------------------------------------------------- */

/*
 * A launch hook: name takes (FT f, dim3 grid, dim3 block, void **args, size_t smem, cudaStream_t
 * stream).  Where the exported entry is a stub (WS_HOOK_ENTRY_ASM_, graph_hooks.h), which hands the
 * traced half the caller's registers as they are, the traced half takes each dim3 as the two words
 * the calling convention passes it in (x86-64 and aarch64: x and y in one register, z in the
 * next), and calls the real function the same way: the same call, but the compiler need not keep
 * a copy of each dim3 in memory, as it does for a dim3 parameter.  Elsewhere it is a CUDA_HOOK.
 */
#if defined(WS_HOOK_ENTRY_ASM_) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
typedef cudaError_t (*launch_words_fn)(const void *, uint64_t, uint32_t, uint64_t, uint32_t, void **, size_t,
                                       cudaStream_t);
_Static_assert(sizeof(dim3) == 12, "a dim3 is passed as two words");

/* ws_pack_dim3 of a dim3 passed as words: x | y << 32 (y within 16 bits), then z. */
static inline uint64_t pack_dim3_words(uint64_t xy, uint32_t z)
{
    return (xy & 0xffffffffffffu) | (uint64_t)(z & 0xffffu) << 48;
}

#define LAUNCH_HOOK(name, FT, f)                                                                                       \
    WS_EXPORT cudaError_t name(FT, dim3, dim3, void **, size_t, cudaStream_t);                                         \
    static __attribute__((noinline, used))                                                                             \
    cudaError_t name##_traced_(const void *f, uint64_t gxy, uint32_t gz, uint64_t bxy, uint32_t bz, void **args,       \
                               size_t smem, cudaStream_t stream);                                                      \
    static __attribute__((used)) void name##_entry_(void)                                                              \
    {                                                                                                                  \
        __asm__(WS_HOOK_ENTRY_ASM_(WS_HOOK_STR_(name))::[flag] WS_HOOK_SYM_(&ws_enabled),                              \
                [slot_] WS_HOOK_SYM_(&real.name), [traced] WS_HOOK_SYM_(name##_traced_));                              \
    }                                                                                                                  \
    static cudaError_t name##_traced_(const void *f, uint64_t gxy, uint32_t gz, uint64_t bxy, uint32_t bz,             \
                                      void **args, size_t smem, cudaStream_t stream)                                   \
    {                                                                                                                  \
        launch_words_fn fn = (launch_words_fn)(void *)__atomic_load_n(&real.name, __ATOMIC_ACQUIRE);                   \
        int first_ = fn == NULL;                                                                                       \
        if (__builtin_expect(first_, 0) && !(fn = (launch_words_fn)(void *)REAL(name)))                                \
            return MISSING;                                                                                            \
        if (!ws_hook_enter_traced(first_))                                                                             \
            return fn(f, gxy, gz, bxy, bz, args, smem, stream);                                                        \
        uint64_t grid = pack_dim3_words(gxy, gz), block = pack_dim3_words(bxy, bz);                                    \
        __asm__("" : "+r"(grid), "+r"(block)); /* packed before the call: two values live across it */                 \
        cudaError_t rc = fn(f, gxy, gz, bxy, bz, args, smem, stream);                                                  \
        return launch_finish(WS_REC_HEAD(WS_REC_LAUNCH, WS_API_##name, rc), f, grid, block, smem, stream);             \
    }
#else
#define LAUNCH_HOOK(name, FT, f)                                                                                       \
    CUDA_HOOK(name, (FT f, dim3 grid, dim3 block, void **args, size_t smem, cudaStream_t stream),                      \
              (f, grid, block, args, smem, stream))                                                                    \
    {                                                                                                                  \
        PACK_LAUNCH_DIMS();                                                                                            \
        FORWARD_AND_FINISH_IF(                                                                                         \
            name, (f, grid, block, args, smem, stream), 1, (void)0,                                                    \
            launch_finish(WS_REC_HEAD(WS_REC_LAUNCH, WS_API_##name, rc), f, packed_grid, packed_block, smem, stream)); \
    }
#endif

LAUNCH_HOOK(cudaLaunchKernel, const void *, func)

LAUNCH_HOOK(cudaLaunchKernel_ptsz, const void *, func)

LAUNCH_HOOK(cudaLaunchCooperativeKernel, const void *, func)

LAUNCH_HOOK(cudaLaunchCooperativeKernel_ptsz, const void *, func)

static void record_launch_config(uint8_t api, cudaError_t rc, const cudaLaunchConfig_t *config, const void *func)
{
    if (config)
        record_launch(api, rc, func, pack_dim3(config->gridDim), pack_dim3(config->blockDim), config->dynamicSmemBytes,
                      config->stream);
    else
        record_launch(api, rc, func, 0, 0, 0, 0);
}

CUDA_HOOK(cudaLaunchKernelExC, (const cudaLaunchConfig_t *config, const void *func, void **args), (config, func, args))
{
    FORWARD_AND_RECORD(cudaLaunchKernelExC, (config, func, args),
                       record_launch_config(WS_API_cudaLaunchKernelExC, rc, config, func));
}

CUDA_HOOK(cudaLaunchKernelExC_ptsz, (const cudaLaunchConfig_t *config, const void *func, void **args),
          (config, func, args))
{
    FORWARD_AND_RECORD(cudaLaunchKernelExC_ptsz, (config, func, args),
                       record_launch_config(WS_API_cudaLaunchKernelExC_ptsz, rc, config, func));
}

LAUNCH_HOOK(__cudaLaunchKernel, cudaKernel_t, kernel)

LAUNCH_HOOK(__cudaLaunchKernel_ptsz, cudaKernel_t, kernel)

static void record_graph_launch(uint8_t api, cudaError_t rc, cudaGraphExec_t exec, cudaStream_t stream)
{
    int captured = rc == cudaSuccess && ws_capture_note(api, stream);
    struct ws_rec *r = ws_rec_reserve(1);
    if (!r)
        return;
    memset(r, 0, sizeof *r);
    r->type = WS_REC_GRAPH_LAUNCH;
    r->api = api;
    r->status = (int32_t)rc;
    r->ns = ws_now();
    r->u[0] = (uint64_t)(uintptr_t)exec;
    r->u[3] = (uint64_t)(uintptr_t)stream;
    r->u[5] = (uint64_t)(uint32_t)ws_self.device;
    ws_rec_commit(1);
    if (rc == cudaSuccess && !captured)
        ws_graph_memory_sample(api);
}

/* The work a graph launch runs is placed between the record stamped before the call and the one
 * after it (collector/graphs.c), so it never overlaps what the thread did before or after. */
#define FORWARD_GRAPH_LAUNCH(name, api)                                                                                \
    do {                                                                                                               \
        __typeof__(real.name) fn = REAL(name);                                                                         \
        if (!fn)                                                                                                       \
            return MISSING;                                                                                            \
        if (!ws_hook_enter())                                                                                          \
            return fn(exec, stream);                                                                                   \
        int saved = errno;                                                                                             \
        ws_graph_launch_begin(exec);                                                                                   \
        errno = saved;                                                                                                 \
        cudaError_t rc = fn(exec, stream);                                                                             \
        saved = errno;                                                                                                 \
        record_graph_launch(api, rc, exec, stream);                                                                    \
        ws_hook_leave(saved);                                                                                          \
        return rc;                                                                                                     \
    } while (0)

WS_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream)
{
    FORWARD_GRAPH_LAUNCH(cudaGraphLaunch, WS_API_cudaGraphLaunch);
}

WS_EXPORT cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream)
{
    FORWARD_GRAPH_LAUNCH(cudaGraphLaunch_ptsz, WS_API_cudaGraphLaunch_ptsz);
}

/* ---- kernel names -------------------------------------------------------------------------- */

static void record_symbol(const void *addr, const char *name, uint64_t alias_of, uint64_t priority)
{
    uint32_t n;
    struct ws_rec *r = ws_rec_with_string(WS_REC_SYMBOL, name, &n);
    if (!r)
        return;
    r->u[0] = (uint64_t)(uintptr_t)addr;
    r->u[2] = alias_of;
    r->u[3] = priority;
    ws_rec_commit(n);
}

/* Every nvcc-built module names its kernels here from a constructor: host stub -> device name. */
WS_EXPORT void __cudaRegisterFunction(void **fat_cubin, const char *host_fun, char *device_fun, const char *device_name,
                                      int thread_limit, uint3 *tid, uint3 *bid, dim3 *bdim, dim3 *gdim, int *wsize)
{
    __typeof__(real.__cudaRegisterFunction) fn = REAL(__cudaRegisterFunction);
    if (fn)
        fn(fat_cubin, host_fun, device_fun, device_name, thread_limit, tid, bid, bdim, gdim, wsize);
    if (!ws_hook_enter())
        return;
    int saved = errno;
    record_symbol(host_fun, device_name ? device_name : device_fun, 0, 1);
    ws_hook_leave(saved);
}

/* nvcc 13 launches through a cudaKernel_t handle: remember which host stub it stands for. */
WS_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *host_fun)
{
    __typeof__(real.__cudaGetKernel) fn = REAL(__cudaGetKernel);
    if (!fn)
        return MISSING;
    cudaError_t rc = fn(kernel, host_fun);
    if (rc != cudaSuccess || !kernel || !ws_hook_enter())
        return rc;
    int saved = errno;
    record_symbol(*kernel, "", (uint64_t)(uintptr_t)host_fun, 2);
    ws_hook_leave(saved);
    return rc;
}

/* A launched function is named once per thread and spool (a direct-mapped cache of what was
 * named: a kernel seen again costs one compare); host functions on the simulated device are named
 * from the dynamic symbol table.  Registered device names (__cudaRegisterFunction) win over these
 * in the collector. */
void ws_note_function(const void *fn)
{
    unsigned slot = named_slot(fn);
    if (named_cache[slot] == fn)
        return;
    named_cache[slot] = fn;
    Dl_info info;
    if (fn && dladdr(fn, &info) && info.dli_sname && info.dli_saddr == fn)
        record_symbol(fn, info.dli_sname, 0, 0);
}

void ws_forget_named_functions(void)
{
    memset(named_cache, 0, sizeof named_cache);
    ws_driver_forget_named_functions();
}
