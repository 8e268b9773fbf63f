/* A libcuda.so.1 found first on the library path, in front of the simulated driver: counts the
 * driver calls that reach the driver through cuGetProcAddress, the way a driver-level tool sees
 * them.  It exports only cuGetProcAddress_v2 — what the runtime, and libraries such as cuBLAS,
 * look up on the libcuda handle they dlopen — and wssim_is_simulated; the first forwards to the simulated driver
 * (SIM_DRIVER, loaded by its path) and wraps what it hands out for the calls below.  At exit it
 * prints "driver.<name>=<count>" lines ("_ptsz": fetched with the per-thread flag). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

enum {
    MEM_ALLOC,
    MEM_FREE,
    MEM_ALLOC_HOST,
    MEM_HOST_ALLOC,
    MEM_FREE_HOST,
    MEM_ALLOC_MANAGED,
    MEM_ALLOC_PITCH,
    MEM_ALLOC_ASYNC,
    MEM_ALLOC_ASYNC_PTSZ,
    MEM_FREE_ASYNC,
    MEM_FREE_ASYNC_PTSZ,
    LAUNCH_KERNEL,
    LAUNCH_KERNEL_PTSZ,
    LAUNCH_KERNEL_EX,
    INIT,
    PRIMARY_RETAIN,
    GET_PROC,
    CALLS
};

static const char *const names[CALLS] = {"cuMemAlloc",
                                         "cuMemFree",
                                         "cuMemAllocHost",
                                         "cuMemHostAlloc",
                                         "cuMemFreeHost",
                                         "cuMemAllocManaged",
                                         "cuMemAllocPitch",
                                         "cuMemAllocAsync",
                                         "cuMemAllocAsync_ptsz",
                                         "cuMemFreeAsync",
                                         "cuMemFreeAsync_ptsz",
                                         "cuLaunchKernel",
                                         "cuLaunchKernel_ptsz",
                                         "cuLaunchKernelEx",
                                         "cuInit",
                                         "cuDevicePrimaryCtxRetain",
                                         "cuGetProcAddress_v2"};

static unsigned long counts[CALLS];
static void *real[CALLS];

#define COUNT(i) __atomic_add_fetch(&counts[i], 1, __ATOMIC_RELAXED)

static CUresult w_mem_alloc(CUdeviceptr *p, size_t n)
{
    COUNT(MEM_ALLOC);
    return ((CUresult(*)(CUdeviceptr *, size_t))real[MEM_ALLOC])(p, n);
}
static CUresult w_mem_free(CUdeviceptr p)
{
    COUNT(MEM_FREE);
    return ((CUresult(*)(CUdeviceptr))real[MEM_FREE])(p);
}
static CUresult w_mem_alloc_host(void **p, size_t n)
{
    COUNT(MEM_ALLOC_HOST);
    return ((CUresult(*)(void **, size_t))real[MEM_ALLOC_HOST])(p, n);
}
static CUresult w_mem_host_alloc(void **p, size_t n, unsigned f)
{
    COUNT(MEM_HOST_ALLOC);
    return ((CUresult(*)(void **, size_t, unsigned))real[MEM_HOST_ALLOC])(p, n, f);
}
static CUresult w_mem_free_host(void *p)
{
    COUNT(MEM_FREE_HOST);
    return ((CUresult(*)(void *))real[MEM_FREE_HOST])(p);
}
static CUresult w_mem_alloc_managed(CUdeviceptr *p, size_t n, unsigned f)
{
    COUNT(MEM_ALLOC_MANAGED);
    return ((CUresult(*)(CUdeviceptr *, size_t, unsigned))real[MEM_ALLOC_MANAGED])(p, n, f);
}
static CUresult w_mem_alloc_pitch(CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned e)
{
    COUNT(MEM_ALLOC_PITCH);
    return ((CUresult(*)(CUdeviceptr *, size_t *, size_t, size_t, unsigned))real[MEM_ALLOC_PITCH])(p, pitch, w, h, e);
}
#define ASYNC_ALLOC(fn, i)                                                                                             \
    static CUresult fn(CUdeviceptr *p, size_t n, CUstream s)                                                           \
    {                                                                                                                  \
        COUNT(i);                                                                                                      \
        return ((CUresult(*)(CUdeviceptr *, size_t, CUstream))real[i])(p, n, s);                                       \
    }
ASYNC_ALLOC(w_mem_alloc_async, MEM_ALLOC_ASYNC)
ASYNC_ALLOC(w_mem_alloc_async_ptsz, MEM_ALLOC_ASYNC_PTSZ)
#define ASYNC_FREE(fn, i)                                                                                              \
    static CUresult fn(CUdeviceptr p, CUstream s)                                                                      \
    {                                                                                                                  \
        COUNT(i);                                                                                                      \
        return ((CUresult(*)(CUdeviceptr, CUstream))real[i])(p, s);                                                    \
    }
ASYNC_FREE(w_mem_free_async, MEM_FREE_ASYNC)
ASYNC_FREE(w_mem_free_async_ptsz, MEM_FREE_ASYNC_PTSZ)
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);
#define LAUNCH(fn, i)                                                                                                  \
    static CUresult fn(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,     \
                       unsigned smem, CUstream s, void **params, void **extra)                                         \
    {                                                                                                                  \
        COUNT(i);                                                                                                      \
        return ((launch_fn)real[i])(f, gx, gy, gz, bx, by, bz, smem, s, params, extra);                                \
    }
LAUNCH(w_launch_kernel, LAUNCH_KERNEL)
LAUNCH(w_launch_kernel_ptsz, LAUNCH_KERNEL_PTSZ)
static CUresult w_launch_kernel_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
    COUNT(LAUNCH_KERNEL_EX);
    return ((CUresult(*)(const CUlaunchConfig *, CUfunction, void **, void **))real[LAUNCH_KERNEL_EX])(c, f, params,
                                                                                                       extra);
}
static CUresult w_init(unsigned flags)
{
    COUNT(INIT);
    return ((CUresult(*)(unsigned))real[INIT])(flags);
}
static CUresult w_primary_retain(CUcontext *ctx, CUdevice dev)
{
    COUNT(PRIMARY_RETAIN);
    return ((CUresult(*)(CUcontext *, CUdevice))real[PRIMARY_RETAIN])(ctx, dev);
}

static void *const wrappers[CALLS] = {w_mem_alloc,
                                      w_mem_free,
                                      w_mem_alloc_host,
                                      w_mem_host_alloc,
                                      w_mem_free_host,
                                      w_mem_alloc_managed,
                                      w_mem_alloc_pitch,
                                      w_mem_alloc_async,
                                      w_mem_alloc_async_ptsz,
                                      w_mem_free_async,
                                      w_mem_free_async_ptsz,
                                      w_launch_kernel,
                                      w_launch_kernel_ptsz,
                                      w_launch_kernel_ex,
                                      w_init,
                                      w_primary_retain,
                                      NULL};

static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load_driver(void)
{
    void *driver = dlopen(SIM_DRIVER, RTLD_NOW | RTLD_LOCAL);
    real[GET_PROC] = driver ? dlsym(driver, "cuGetProcAddress_v2") : NULL;
    if (!real[GET_PROC]) {
        fprintf(stderr, "driver_shim: cannot load %s: %s\n", SIM_DRIVER, dlerror());
        exit(3);
    }
}

/* The simulated cudart recognises the simulated driver by this name: the shim stands in for it. */
__attribute__((visibility("default"))) int wssim_is_simulated(void) { return 1; }

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                                                    cuuint64_t flags,
                                                                    CUdriverProcAddressQueryResult *status)
{
    pthread_once(&load_once, load_driver);
    COUNT(GET_PROC);
    CUresult rc = ((get_proc_fn)real[GET_PROC])(symbol, pfn, version, flags, status);
    if (rc != CUDA_SUCCESS || !symbol)
        return rc;
    /* The per-thread form where the list has one, else the call itself (a call without a
     * per-thread form, or cuLaunchKernelEx, counted together). */
    char name[64];
    snprintf(name, sizeof name, "%s_ptsz", symbol);
    int found = -1;
    for (int i = 0; i < GET_PROC && found < 0; i++)
        if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && strcmp(names[i], name) == 0)
            found = i;
    for (int i = 0; i < GET_PROC && found < 0; i++)
        if (strcmp(names[i], symbol) == 0)
            found = i;
    if (found >= 0) {
        __atomic_store_n(&real[found], *pfn, __ATOMIC_RELEASE);
        *pfn = wrappers[found];
    }
    return rc;
}

__attribute__((destructor)) static void report(void)
{
    char line[128];
    for (int i = 0; i < CALLS; i++) {
        int n = snprintf(line, sizeof line, "driver.%s=%lu\n", names[i], counts[i]);
        if (write(STDOUT_FILENO, line, (size_t)n) < 0)
            break;
    }
}
