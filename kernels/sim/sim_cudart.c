/* The simulated cudart (lib/sim/libcudart.so.13): a runtime on top of the simulated driver, as
 * the real cudart is a runtime on top of libcuda.so.1.
 *
 * At its first call it loads the driver the way the real runtime does (dlopen("libcuda.so.1"),
 * then dlsym(handle, "cuGetProcAddress_v2") and the driver's entry points through it, cuInit),
 * and asks the driver for its private export table.  Like the real runtime it takes the device's
 * primary context only when a call needs one: the first allocation, free or launch (a program
 * that only queries the device leaves no context behind).  The calls
 * both APIs share — allocation and free of every kind, kernel launches, driver entry points —
 * are made here, through the driver's public entry points, so that a tool wrapping the driver
 * sees the runtime reach it exactly as it would on a GPU.  Every other runtime entry point is a
 * trampoline (generated, cudart_trampolines.S) into the runtime implementation the driver
 * library holds: the device and its state exist once, in libcuda.so.1. */
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_driver.h"

/* Filled by the generated trampolines' slow path (cudart_names.c holds the names, in order). */
extern void *wssim_cudart_slots[];
extern const char *const wssim_cudart_names[];
extern const size_t wssim_cudart_name_count;
void *wssim_cudart_resolve(unsigned index);

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

/* The driver's entry points this runtime calls; [1] is the per-thread form where one exists. */
static struct driver {
    const struct wssim_export_table *table;
    get_proc_fn get_proc;
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*mem_alloc_host)(void **, size_t);
    CUresult (*mem_host_alloc)(void **, size_t, unsigned);
    CUresult (*mem_free_host)(void *);
    CUresult (*mem_alloc_managed)(CUdeviceptr *, size_t, unsigned);
    CUresult (*mem_alloc_pitch)(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
    CUresult (*mem_alloc_async[2])(CUdeviceptr *, size_t, CUstream);
    CUresult (*mem_alloc_from_pool_async[2])(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
    CUresult (*mem_free_async[2])(CUdeviceptr, CUstream);
    CUresult (*launch_kernel[2])(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 CUstream, void **, void **);
    CUresult (*launch_kernel_ex[2])(const CUlaunchConfig *, CUfunction, void **, void **);
    CUresult (*launch_cooperative[2])(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                      CUstream, void **);
    CUresult (*driver_get_version)(int *);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
} drv;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;

/* Is handle the simulated driver?  Asked with a name of its own, not a CUDA one, so that a tool
 * wrapping the driver's lookups never sees a lookup on another driver (a GPU's, or a stand-in)
 * that happens to come first on the library path. */
static int simulated(void *handle) { return handle && dlsym(handle, "wssim_is_simulated") != NULL; }

/* The simulated driver's export table behind handle, through cuGetProcAddress_v2, or NULL. */
static const struct wssim_export_table *simulated_table(void *handle, get_proc_fn *get_proc)
{
    CUuuid id;
    const void *table = NULL;
    CUresult (*export_table)(const void **, const CUuuid *) = NULL;
    *get_proc = (get_proc_fn)dlsym(handle, "cuGetProcAddress_v2");
    if (!*get_proc || (*get_proc)("cuGetExportTable", (void **)&export_table, CUDA_VERSION, 0, NULL) != CUDA_SUCCESS)
        return NULL;
    memcpy(id.bytes, WSSIM_EXPORT_TABLE_ID, sizeof id.bytes);
    if (export_table(&table, &id) != CUDA_SUCCESS || !table ||
        ((const struct wssim_export_table *)table)->size < sizeof(struct wssim_export_table))
        return NULL;
    return table;
}

/* The driver beside this library, for a process whose library path finds another one first. */
static void *sibling_driver(void)
{
    Dl_info info;
    char path[PATH_MAX];
    if (!dladdr((void *)sibling_driver, &info) || !info.dli_fname ||
        snprintf(path, sizeof path, "%s", info.dli_fname) >= (int)sizeof path)
        return NULL;
    char file[PATH_MAX];
    if (snprintf(file, sizeof file, "%s/libcuda.so.1", dirname(path)) >= (int)sizeof file)
        return NULL;
    return dlopen(file, RTLD_NOW | RTLD_LOCAL);
}

static void *proc(const char *name, int per_thread)
{
    void *fn = NULL;
    cuuint64_t flags = per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_LEGACY_STREAM;
    return drv.get_proc(name, &fn, CUDA_VERSION, flags, NULL) == CUDA_SUCCESS ? fn : NULL;
}

static int entry_compare(const void *key, const void *member)
{
    return strcmp(key, ((const struct wssim_runtime_entry *)member)->name);
}

static void load_driver(void)
{
    get_proc_fn get_proc = NULL;
    void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!simulated(handle)) { /* none, or another driver (a GPU's) first on the library path */
        if (handle)
            dlclose(handle);
        handle = sibling_driver();
    }
    const struct wssim_export_table *table = simulated(handle) ? simulated_table(handle, &get_proc) : NULL;
    if (!table) {
        fprintf(stderr, "wssim: the simulated device's libcuda.so.1 was not found (it is built beside this "
                        "libcudart.so.13); every CUDA call fails with cudaErrorInsufficientDriver\n");
        return;
    }
    drv.get_proc = get_proc;
    /* What cudart does before its first call returns: initialise the driver. */
    CUresult (*init)(unsigned) = proc("cuInit", 0);
    drv.primary_retain = proc("cuDevicePrimaryCtxRetain", 0);
    if (!init || init(0) != CUDA_SUCCESS || !drv.primary_retain)
        return;
    drv.mem_alloc = proc("cuMemAlloc", 0);
    drv.mem_free = proc("cuMemFree", 0);
    drv.mem_alloc_host = proc("cuMemAllocHost", 0);
    drv.mem_host_alloc = proc("cuMemHostAlloc", 0);
    drv.mem_free_host = proc("cuMemFreeHost", 0);
    drv.mem_alloc_managed = proc("cuMemAllocManaged", 0);
    drv.mem_alloc_pitch = proc("cuMemAllocPitch", 0);
    drv.driver_get_version = proc("cuDriverGetVersion", 0);
    for (int pt = 0; pt < 2; pt++) {
        drv.mem_alloc_async[pt] = proc("cuMemAllocAsync", pt);
        drv.mem_alloc_from_pool_async[pt] = proc("cuMemAllocFromPoolAsync", pt);
        drv.mem_free_async[pt] = proc("cuMemFreeAsync", pt);
        drv.launch_kernel[pt] = proc("cuLaunchKernel", pt);
        drv.launch_kernel_ex[pt] = proc("cuLaunchKernelEx", pt);
        drv.launch_cooperative[pt] = proc("cuLaunchCooperativeKernel", pt);
    }
    for (size_t i = 0; i < wssim_cudart_name_count; i++) {
        const struct wssim_runtime_entry *e =
            bsearch(wssim_cudart_names[i], table->entries, table->count, sizeof *e, entry_compare);
        __atomic_store_n(&wssim_cudart_slots[i], e ? e->fn : NULL, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&drv.table, table, __ATOMIC_RELEASE);
}

static const struct wssim_export_table *driver(void)
{
    pthread_once(&load_once, load_driver);
    return drv.table;
}

/* The primary context, retained once for the process at the first call that needs a context;
 * released by the driver at exit, as the real runtime leaves it. */
static pthread_once_t context_once = PTHREAD_ONCE_INIT;

static void retain_primary(void)
{
    CUcontext primary;
    if (drv.primary_retain)
        drv.primary_retain(&primary, 0);
}

static void need_context(void) { pthread_once(&context_once, retain_primary); }

/* ---- without the simulated driver ---- */

static _Thread_local cudaError_t unloaded_error;

static cudaError_t unavailable(void) { return cudaErrorInsufficientDriver; }
static const char *unavailable_name(cudaError_t err)
{
    return err == cudaErrorInsufficientDriver ? "cudaErrorInsufficientDriver" : "unrecognized error code";
}
static const char *unavailable_string(cudaError_t err)
{
    return err == cudaErrorInsufficientDriver ? "CUDA driver version is insufficient for CUDA runtime version"
                                              : "unrecognized error code";
}
static cudaError_t unavailable_last_error(void)
{
    cudaError_t err = unloaded_error;
    unloaded_error = cudaSuccess;
    return err;
}

/* The slow path of a trampoline whose slot is empty: load the driver, then jump where the slot
 * says, or to a stand-in that reports the missing driver as the real runtime would. */
void *wssim_cudart_resolve(unsigned index)
{
    driver();
    void *fn = __atomic_load_n(&wssim_cudart_slots[index], __ATOMIC_ACQUIRE);
    if (fn)
        return fn;
    const char *name = wssim_cudart_names[index];
    unloaded_error = cudaErrorInsufficientDriver;
    if (strcmp(name, "cudaGetErrorName") == 0)
        return (void *)unavailable_name;
    if (strcmp(name, "cudaGetErrorString") == 0)
        return (void *)unavailable_string;
    if (strcmp(name, "cudaGetLastError") == 0 || strcmp(name, "cudaPeekAtLastError") == 0)
        return (void *)unavailable_last_error;
    return (void *)unavailable;
}

/* ---- results ---- */

/* The runtime's code for a driver result (the shared codes have the same numbers). */
static cudaError_t runtime_code(CUresult rc) { return (cudaError_t)rc; }

static cudaError_t fail(cudaError_t err)
{
    const struct wssim_export_table *t = driver();
    if (t)
        return t->set_error(err);
    unloaded_error = err;
    return err;
}

static cudaError_t result(CUresult rc) { return rc == CUDA_SUCCESS ? cudaSuccess : fail(runtime_code(rc)); }

/* A launch's result: the driver's argument error is a configuration error to the runtime, and a
 * function that cannot run is an invalid device function. */
static cudaError_t launch_result(CUresult rc)
{
    if (rc == CUDA_ERROR_INVALID_VALUE)
        return fail(cudaErrorInvalidConfiguration);
    if (rc == CUDA_ERROR_NOT_FOUND)
        return fail(cudaErrorInvalidDeviceFunction);
    return result(rc);
}

/* The driver, the entry point fn of it, and the primary context, or the call fails. */
#define NEED(fn)                                                                                                       \
    do {                                                                                                               \
        if (!driver() || !(fn))                                                                                        \
            return fail(cudaErrorInsufficientDriver);                                                                  \
        need_context();                                                                                                \
    } while (0)

/* ---- devices ---- */

/* Since CUDA 12.0 cudaSetDevice initialises the runtime on the device's primary context at once,
 * so that the context is current afterwards (programs that mix the APIs call cuCtxGetDevice
 * right after it): the runtime's own cudaSetDevice, then the primary context. */
cudaError_t cudaSetDevice(int device)
{
    const struct wssim_export_table *t = driver();
    if (!t)
        return fail(cudaErrorInsufficientDriver);
    const struct wssim_runtime_entry *e = bsearch("cudaSetDevice", t->entries, t->count, sizeof *e, entry_compare);
    if (!e)
        return fail(cudaErrorInsufficientDriver);
    cudaError_t err = ((cudaError_t(*)(int))e->fn)(device);
    if (err == cudaSuccess)
        need_context();
    return err;
}

/* ---- allocation: the runtime answers zero-byte requests itself, the driver refuses them ---- */

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    NEED(drv.mem_alloc);
    if (!devPtr)
        return fail(cudaErrorInvalidValue);
    if (size == 0) {
        *devPtr = NULL;
        return cudaSuccess;
    }
    return result(drv.mem_alloc((CUdeviceptr *)devPtr, size));
}

cudaError_t cudaFree(void *devPtr)
{
    NEED(drv.mem_free);
    return devPtr ? result(drv.mem_free(drv_devptr(devPtr))) : cudaSuccess;
}

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    NEED(drv.mem_alloc_host);
    if (!ptr)
        return fail(cudaErrorInvalidValue);
    if (size == 0) {
        *ptr = NULL;
        return cudaSuccess;
    }
    return result(drv.mem_alloc_host(ptr, size));
}

cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    NEED(drv.mem_host_alloc);
    if (!pHost)
        return fail(cudaErrorInvalidValue);
    if (size == 0) {
        *pHost = NULL;
        return cudaSuccess;
    }
    return result(drv.mem_host_alloc(pHost, size, flags));
}

cudaError_t cudaFreeHost(void *ptr)
{
    NEED(drv.mem_free_host);
    return ptr ? result(drv.mem_free_host(ptr)) : cudaSuccess;
}

cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    NEED(drv.mem_alloc_managed);
    if (!devPtr || (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost))
        return fail(cudaErrorInvalidValue);
    if (size == 0) {
        *devPtr = NULL;
        return cudaSuccess;
    }
    return result(drv.mem_alloc_managed((CUdeviceptr *)devPtr, size, flags));
}

cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    enum { PITCH_ALIGN = 512 };
    NEED(drv.mem_alloc_pitch);
    if (!devPtr || !pitch || width > SIZE_MAX - PITCH_ALIGN)
        return fail(cudaErrorInvalidValue);
    if (width == 0 || height == 0) {
        *devPtr = NULL;
        *pitch = (width + PITCH_ALIGN - 1) & ~(size_t)(PITCH_ALIGN - 1);
        return cudaSuccess;
    }
    return result(drv.mem_alloc_pitch((CUdeviceptr *)devPtr, pitch, width, height, 4));
}

static cudaError_t malloc_async(void **devPtr, size_t size, cudaStream_t stream, int pt)
{
    NEED(drv.mem_alloc_async[pt]);
    return result(drv.mem_alloc_async[pt]((CUdeviceptr *)devPtr, size, stream));
}

static cudaError_t malloc_from_pool_async(void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream, int pt)
{
    NEED(drv.mem_alloc_from_pool_async[pt]);
    return result(drv.mem_alloc_from_pool_async[pt]((CUdeviceptr *)ptr, size, (CUmemoryPool)pool, stream));
}

static cudaError_t free_async(void *devPtr, cudaStream_t stream, int pt)
{
    NEED(drv.mem_free_async[pt]);
    return result(drv.mem_free_async[pt](drv_devptr(devPtr), stream));
}

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t stream)
{
    return malloc_async(devPtr, size, stream, 0);
}
SIM_EXPORT cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t stream);
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t stream)
{
    return malloc_async(devPtr, size, stream, 1);
}
cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
    return malloc_from_pool_async(ptr, size, memPool, stream, 0);
}
SIM_EXPORT cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
                                                    cudaStream_t stream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
    return malloc_from_pool_async(ptr, size, memPool, stream, 1);
}
cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t stream) { return free_async(devPtr, stream, 0); }
SIM_EXPORT cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t stream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t stream) { return free_async(devPtr, stream, 1); }

/* ---- launches: what the runtime names (stub, kernel handle, host function) -> a CUfunction ---- */

static cudaError_t launch(const void *func, dim3 grid, dim3 block, void **args, size_t smem, cudaStream_t stream,
                          int pt)
{
    void *f = NULL;
    NEED(drv.launch_kernel[pt]);
    cudaError_t err = drv.table->kernel_handle(func, &f);
    if (err != cudaSuccess)
        return fail(err);
    return launch_result(drv.launch_kernel[pt](f, grid.x, grid.y, grid.z, block.x, block.y, block.z, (unsigned)smem,
                                               stream, args, NULL));
}

static cudaError_t launch_cooperative(const void *func, dim3 grid, dim3 block, void **args, size_t smem,
                                      cudaStream_t stream, int pt)
{
    void *f = NULL;
    NEED(drv.launch_cooperative[pt]);
    cudaError_t err = drv.table->kernel_handle(func, &f);
    if (err != cudaSuccess)
        return fail(err);
    return launch_result(
        drv.launch_cooperative[pt](f, grid.x, grid.y, grid.z, block.x, block.y, block.z, (unsigned)smem, stream, args));
}

/* cudaLaunchAttribute and CUlaunchAttribute share their layout (id, padding, value). */
_Static_assert(sizeof(cudaLaunchAttribute) == sizeof(CUlaunchAttribute), "launch attributes");

static cudaError_t launch_ex(const cudaLaunchConfig_t *config, const void *func, void **args, int pt)
{
    void *f = NULL;
    NEED(drv.launch_kernel_ex[pt]);
    if (!config)
        return fail(cudaErrorInvalidValue);
    cudaError_t err = drv.table->kernel_handle(func, &f);
    if (err != cudaSuccess)
        return fail(err);
    CUlaunchConfig c = {
        .gridDimX = config->gridDim.x,
        .gridDimY = config->gridDim.y,
        .gridDimZ = config->gridDim.z,
        .blockDimX = config->blockDim.x,
        .blockDimY = config->blockDim.y,
        .blockDimZ = config->blockDim.z,
        .sharedMemBytes = (unsigned)config->dynamicSmemBytes,
        .hStream = config->stream,
        .attrs = (CUlaunchAttribute *)config->attrs,
        .numAttrs = config->numAttrs,
    };
    return launch_result(drv.launch_kernel_ex[pt](&c, f, args, NULL));
}

cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                             cudaStream_t stream)
{
    return launch(func, gridDim, blockDim, args, sharedMem, stream, 0);
}
SIM_EXPORT cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                             size_t sharedMem, cudaStream_t stream);
cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                                  cudaStream_t stream)
{
    return launch(func, gridDim, blockDim, args, sharedMem, stream, 1);
}

cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                                        cudaStream_t stream)
{
    return launch_cooperative(func, gridDim, blockDim, args, sharedMem, stream, 0);
}
SIM_EXPORT cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                                        size_t sharedMem, cudaStream_t stream);
cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                             size_t sharedMem, cudaStream_t stream)
{
    return launch_cooperative(func, gridDim, blockDim, args, sharedMem, stream, 1);
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args)
{
    return launch_ex(config, func, args, 0);
}
SIM_EXPORT cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func, void **args);
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func, void **args)
{
    return launch_ex(config, func, args, 1);
}

/* nvcc's launch: only handles __cudaGetKernel gave out. */
static cudaError_t launch_handle(cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t smem,
                                 cudaStream_t stream, int pt)
{
    NEED(drv.launch_kernel[pt]);
    if (!drv.table->is_kernel(kernel))
        return fail(cudaErrorInvalidDeviceFunction);
    return launch_result(drv.launch_kernel[pt]((CUfunction)(void *)kernel, grid.x, grid.y, grid.z, block.x, block.y,
                                               block.z, (unsigned)smem, stream, args, NULL));
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                               cudaStream_t stream)
{
    return launch_handle(kernel, gridDim, blockDim, args, sharedMem, stream, 0);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                                    cudaStream_t stream)
{
    return launch_handle(kernel, gridDim, blockDim, args, sharedMem, stream, 1);
}

/* ---- the driver through the runtime ---- */

cudaError_t cudaDriverGetVersion(int *driverVersion)
{
    if (!driver() || !drv.driver_get_version)
        return fail(cudaErrorInsufficientDriver);
    if (!driverVersion)
        return fail(cudaErrorInvalidValue);
    return result(drv.driver_get_version(driverVersion));
}

/* A symbol the driver does not have is not an error of the call: driverStatus says so. The four
 * lookups share this one directly, not through their exported names: a library's internal calls do
 * not reach an interposer, and the real runtime's do not. */
static cudaError_t entry_point(const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
                               enum cudaDriverEntryPointQueryResult *driverStatus)
{
    if (!driver() || !drv.get_proc)
        return fail(cudaErrorInsufficientDriver);
    if (!symbol || !funcPtr ||
        (flags & ~(unsigned long long)(cudaEnableLegacyStream | cudaEnablePerThreadDefaultStream)))
        return fail(cudaErrorInvalidValue);
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult rc = drv.get_proc(symbol, funcPtr, (int)cudaVersion, flags, &status);
    if (driverStatus)
        *driverStatus = (enum cudaDriverEntryPointQueryResult)status;
    return rc == CUDA_SUCCESS || rc == CUDA_ERROR_NOT_FOUND ? cudaSuccess : result(rc);
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                             unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus);
}

cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(symbol, funcPtr, CUDART_VERSION, flags, driverStatus);
}

/* With per-thread default streams (cuda_runtime_api.h maps the names so): there the default
 * flags mean the per-thread forms, as the runtime's default stream is. */
static unsigned long long ptsz_flags(unsigned long long flags)
{
    return flags == cudaEnableDefault ? cudaEnablePerThreadDefaultStream : flags;
}

SIM_EXPORT cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                                    enum cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(symbol, funcPtr, CUDART_VERSION, ptsz_flags(flags), driverStatus);
}
SIM_EXPORT cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr,
                                                             unsigned int cudaVersion, unsigned long long flags,
                                                             enum cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                                  unsigned long long flags,
                                                  enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(symbol, funcPtr, cudaVersion, ptsz_flags(flags), driverStatus);
}
