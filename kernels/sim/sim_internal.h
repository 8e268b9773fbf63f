/* Shared state of the simulated device. Everything here is internal to libwssim.so. */
#ifndef WSSIM_INTERNAL_H
#define WSSIM_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* The library is built with -fvisibility=hidden; what the public headers declare is the API and
 * must be exported, everything declared below them stays hidden. */
#pragma GCC visibility push(default)
#include <cuda_runtime_api.h>
#include "wssim.h"
#include "wssim_nvcc.h"
#pragma GCC visibility pop

/* Exports a function the public headers do not declare (a per-thread variant, an older form). */
#define SIM_EXPORT __attribute__((visibility("default")))

/* Exports a second name for an API function: the per-thread-default-stream variants (_ptsz,
 * _ptds) behave the same on a device where every call completes before it returns. */
#define SIM_ALIAS(name, target) extern __typeof__(target) name __attribute__((alias(#target), visibility("default")))

enum { SIM_DEVICE_ALIGN = 256, SIM_DEFAULT_CAPACITY_SHIFT = 34 /* 16 GiB */ };

/* What a key of the handle table stands for. */
enum sim_kind {
    SIM_DEVICE_MEM = 1, /* cudaMalloc & co., counted against capacity */
    SIM_MANAGED_MEM,    /* cudaMallocManaged, counted too */
    SIM_HOST_MEM,       /* cudaMallocHost / cudaHostAlloc, not counted */
    SIM_STREAM,
    SIM_EVENT,
    SIM_POOL,
    SIM_GRAPH,
    SIM_GRAPH_EXEC,
    SIM_MODULE, /* handle returned by __cudaRegisterFatBinary */
    SIM_STUB,   /* nvcc host stub -> struct sim_function */
    SIM_KERNEL, /* cudaKernel_t handle (a struct sim_function) */
    /* Graphs, arrays, host registration and IPC (sim_graph.c, sim_array.c, sim_hostmem.c) */
    SIM_GRAPH_MEM,       /* the address of a graph memory node, live or not: data is its struct sim_block */
    SIM_GRAPH_NODE,      /* a node of a graph (struct sim_gnode) */
    SIM_ARRAY,           /* cudaArray_t (struct sim_array) */
    SIM_MIPMAP,          /* cudaMipmappedArray_t (struct sim_mipmap) */
    SIM_HOST_REGISTERED, /* start of a range given to cudaHostRegister; size its length */
    SIM_IPC_MAPPING,     /* memory mapped by cudaIpcOpenMemHandle; data counts the opens */
    SIM_TEXTURE,         /* a texture object */
    /* The driver (sim_drv_*.c) */
    SIM_CONTEXT,    /* a context made with cuCtxCreate (struct sim_context) */
    SIM_DRV_MODULE, /* a module loaded with cuModuleLoad* or a library with cuLibraryLoad* */
    SIM_PHYSICAL,   /* physical memory of cuMemCreate (struct sim_physical); size its bytes */
    SIM_VARIABLE,   /* the host shadow of a __device__ or __constant__ variable; size its bytes */
};

struct sim_entry {
    uintptr_t key; /* 0 marks an empty slot */
    enum sim_kind kind;
    size_t size;
    void *data;
};

/* One lock guards the handle table, the counters and the registries: none of this is on the
 * tracer's hot path, and one lock keeps every invariant (live bytes vs. table) trivially true. */
extern pthread_mutex_t sim_lock;
extern struct wssim_stats sim_stats;

/* Handle table (sim_table.c), all with sim_lock held. sim_table_get's result is valid until the
 * next sim_table_put or sim_table_del. */
int sim_table_put(const void *key, enum sim_kind kind, size_t size, void *data);
struct sim_entry *sim_table_get(const void *key);
int sim_table_has(const void *key, enum sim_kind kind);
void sim_table_del(const void *key);
/* The memory allocation (device, managed, pinned host, graph memory, an IPC mapping or a
 * registered host range) that holds p, at its base or inside it; NULL when none does.  Walks the
 * whole table: for queries, not for the paths of allocation and launch. */
const struct sim_entry *sim_table_containing(const void *p);

/* Configuration and errors (sim_errors.c, sim_memory.c). */
uint64_t sim_capacity(void);
/* Records err as the calling thread's last runtime error (unless a driver call is running, see
 * sim_driver_depth) and returns it. */
cudaError_t sim_result(cudaError_t err);
/* Nonzero while the calling thread is inside a driver entry point (sim_driver.h): the driver
 * reuses the runtime's implementations, and a driver call never changes cudaGetLastError. */
extern _Thread_local int sim_driver_depth;
/* WSSIM_NOOP_KERNELS: a launch of a kernel without a host implementation does nothing and
 * succeeds instead of failing (sim_launch.c). */
int sim_noop_kernels(void);

/* Validation shared by several files, all taking sim_lock themselves. */
int sim_stream_valid(cudaStream_t stream);
/* The flags an event was created with; 0 when event is not one. */
int sim_event_flags(cudaEvent_t event, unsigned *flags);
void sim_fill_properties(struct cudaDeviceProp *prop);

/* ---- memory (sim_memory.c) ---- */

struct sim_pool;
/* Allocate device, managed or pinned host memory; pool: the memory pool it comes from, or NULL. */
cudaError_t sim_alloc_with(void **out, size_t size, enum sim_kind kind, struct sim_pool *pool);
cudaError_t sim_device_free(void *p);
/* Count size bytes of device memory as allocated (cudaErrorMemoryAllocation beyond the
 * capacity) and as freed; sim_lock held. */
cudaError_t sim_account_alloc_locked(size_t size);
void sim_account_free_locked(size_t size);
/* The copy and the fill every copy and memset path ends in (no error recorded). */
cudaError_t sim_copy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t sim_fill(void *dst, size_t pitch, unsigned value, unsigned element_size, size_t width, size_t height);
/* A 3D copy between pitched memory and arrays (sim_array.c). */
cudaError_t sim_copy3d(const struct cudaMemcpy3DParms *p);

/* ---- memory pools (sim_pool.c): what a pool holds from the device against what is in use ---- */

void sim_pool_allocated_locked(struct sim_pool *pool, size_t size);
void sim_pool_freed_locked(struct sim_pool *pool, size_t size);
/* At a synchronisation: pools give back what they hold above their release threshold. */
void sim_pools_synchronized(void);

/* Is p inside memory mapped with the driver's virtual memory calls (sim_drv_memory.c)? */
int sim_vmm_mapped(const void *p);

/* ---- kernels (sim_launch.c) ---- */

/* The parameter layout of what func names (a host kernel, an nvcc stub or a kernel handle), for
 * the copies graph kernel nodes keep of their arguments: cudaErrorInvalidDeviceFunction when func
 * is not launchable, cudaErrorNotSupported when no layout was registered.  sim_lock held; sizes
 * stays valid while it is. */
cudaError_t sim_kernel_layout_locked(const void *func, unsigned *nparams, const size_t **sizes);
/* Run a kernel now (graph launches): the launch checks of cudaLaunchKernel, no stream. */
cudaError_t sim_run_kernel(const void *func, dim3 grid, dim3 block, void **args);
/* The kernel handle (cudaKernel_t / CUfunction, a registered struct sim_function) for what a
 * runtime launch names: an nvcc stub, a kernel handle, or a host function launched by address
 * (which gets a handle of its own the first time).  cudaErrorInvalidDeviceFunction for memory,
 * streams and other handles. */
cudaError_t sim_kernel_handle(const void *func, void **handle);
/* A kernel handle of a driver module by device name (the module is any registered key). */
cudaError_t sim_module_kernel(const void *module, const char *name, void **handle);
/* Forgets the kernels of a module (__cudaUnregisterFatBinary, cuModuleUnload). */
void sim_forget_module_kernels(const void *module);
/* Is handle a kernel handle?  Its device name (NULL for a host function launched by address). */
int sim_is_kernel_handle(const void *handle);
const char *sim_kernel_name(const void *handle);
/* The launch of the runtime (validation, capture, run) for the driver's launches. */
cudaError_t sim_launch(const void *func, dim3 grid, dim3 block, size_t smem, void **args, cudaStream_t stream);

/* ---- graphs (sim_graph.c) ---- */

struct sim_graph;
struct sim_gnode;

/* What a stream-ordered call does, as a stream capture turns it into a graph node. */
enum sim_op_kind {
    SIM_OP_KERNEL,
    SIM_OP_MEMCPY,
    SIM_OP_MEMSET,
    SIM_OP_MALLOC,
    SIM_OP_FREE,
    SIM_OP_HOST,
    SIM_OP_GRAPH, /* a graph launch becomes a child graph node */
};

struct sim_op {
    enum sim_op_kind kind;
    const void *func; /* kernel */
    dim3 grid, block;
    size_t smem;
    void **args;
    void *dst; /* memcpy, memset, free */
    const void *src;
    size_t bytes;
    enum cudaMemcpyKind copy_kind;
    const struct cudaMemcpy3DParms *copy3d; /* memcpy: a 3D copy (else dst, src, bytes) */
    unsigned value, element_size;           /* memset */
    size_t width, height, pitch;
    void **out_ptr; /* malloc */
    struct sim_pool *pool;
    cudaHostFn_t fn; /* host */
    void *user;
    cudaGraphExec_t exec; /* graph */
};

/* With sim_lock held: a new empty graph (registered as a handle), a node for op depending on
 * deps, and the end of a graph. */
struct sim_graph *sim_graph_create_locked(cudaError_t *err);
cudaError_t sim_graph_add_op_locked(struct sim_graph *g, const struct sim_op *op, struct sim_gnode *const *deps,
                                    size_t ndeps, struct sim_gnode **out);
void sim_graph_destroy_locked(struct sim_graph *g);
/* Is every node of `to` among `from` or their ancestors?  1 yes, 0 no, -1 out of memory. */
int sim_graph_reaches_locked(const struct sim_graph *g, struct sim_gnode *const *from, size_t nfrom,
                             struct sim_gnode *const *to, size_t nto);
/* A graph node handle's graph, or NULL when the handle is not a node. */
struct sim_graph *sim_node_graph_locked(const void *node);
/* cudaFree or cudaFreeAsync of a graph memory node's address (sim_lock held). */
cudaError_t sim_graph_mem_free_locked(void *ptr);

/* ---- stream capture (sim_capture.c) ---- */

/* Captures begun and not ended in the process: while 0 nothing is captured and nothing is
 * prohibited, and the checks below cost one load. */
extern int sim_captures_active;
/* op on stream: when the stream captures, it becomes a node (*captured = 1) instead of running. */
cudaError_t sim_capture_op(cudaStream_t stream, const struct sim_op *op, int *captured);
/* A call that may synchronise implicitly (cudaMalloc, cudaMemcpy, ...): cudaSuccess when the
 * calling thread may make it now, else cudaErrorStreamCaptureUnsupported (the captures that
 * forbid it are invalidated). */
cudaError_t sim_capture_unsafe(void);
/* Synchronising with, or querying, a stream that captures is an error that ends its capture. */
cudaError_t sim_capture_sync(cudaStream_t stream);
/* An operation the capture cannot take: cudaErrorNotSupported (and the capture is invalidated)
 * when the stream captures, else cudaSuccess. */
cudaError_t sim_capture_refuse(cudaStream_t stream);
/* A stream or an event goes away: it leaves what it captured or recorded. */
void sim_capture_forget_stream(cudaStream_t stream);
void sim_capture_event_recorded(cudaEvent_t event, cudaStream_t stream, int *captured, cudaError_t *err);
void sim_capture_event_waited(cudaStream_t stream, cudaEvent_t event, int *captured, cudaError_t *err);
void sim_capture_forget_event(cudaEvent_t event);

#define SIM_CAPTURE_OP(stream, ...)                                                                                    \
    do {                                                                                                               \
        if (__atomic_load_n(&sim_captures_active, __ATOMIC_ACQUIRE)) {                                                 \
            int captured_ = 0;                                                                                         \
            cudaError_t err_ = sim_capture_op((stream), &(struct sim_op){__VA_ARGS__}, &captured_);                    \
            if (captured_)                                                                                             \
                return sim_result(err_);                                                                               \
        }                                                                                                              \
    } while (0)

#define SIM_CAPTURE_CHECK(call)                                                                                        \
    do {                                                                                                               \
        if (__atomic_load_n(&sim_captures_active, __ATOMIC_ACQUIRE)) {                                                 \
            cudaError_t err_ = (call);                                                                                 \
            if (err_ != cudaSuccess)                                                                                   \
                return sim_result(err_);                                                                               \
        }                                                                                                              \
    } while (0)
#define SIM_CAPTURE_UNSAFE()   SIM_CAPTURE_CHECK(sim_capture_unsafe())
#define SIM_CAPTURE_SYNC(strm) SIM_CAPTURE_CHECK(sim_capture_sync(strm))

#endif
