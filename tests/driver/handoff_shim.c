/* A libcuda.so.1 found first on the library path, in front of the simulated driver: an observer of
 * the entry-point lookups of code that finds the driver through dlopen + dlsym(handle) +
 * cuGetProcAddress (cudart, cuBLAS).  Its cuGetProcAddress_v2 asks the tracer's (the one found in
 * the global scope), which asks the simulated driver's, and counts what the lookups were answered
 * with.  It exports cuGetProcAddress_v2 and the wssim_* calls the programs need, loads the
 * simulated driver by its path (SIM_DRIVER), and at exit prints "handoff.lookups=<n>" and
 * "handoff.hooked=<n>": the lookups it saw and how many of them were answered with a function of
 * libwstrace.so, which shows that the caller's driver calls went through the tracer's hooks. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#include "wssim.h"

#define EXPORT __attribute__((visibility("default")))

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static void *driver;
static get_proc_fn sim_get_proc;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static __thread int forwarding; /* inside the tracer's lookup: the next call is the real one */
static unsigned long lookups, hooked;

static void load(void)
{
    driver = dlopen(SIM_DRIVER, RTLD_NOW | RTLD_LOCAL);
    if (driver)
        sim_get_proc = (get_proc_fn)dlsym(driver, "cuGetProcAddress_v2");
    if (!sim_get_proc)
        fprintf(stderr, "handoff_shim: cannot load %s\n", SIM_DRIVER);
}

static int in_tracer(const void *fn)
{
    Dl_info info;
    return fn && dladdr(fn, &info) && info.dli_fname && strstr(info.dli_fname, "libwstrace") != NULL;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status)
{
    pthread_once(&once, load);
    if (!sim_get_proc)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (forwarding)
        return sim_get_proc(symbol, pfn, version, flags, status);
    get_proc_fn traced = (get_proc_fn)dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2");
    if (!in_tracer((const void *)traced))
        traced = sim_get_proc; /* not traced (or this very function): the driver's own answer */
    forwarding = 1;
    CUresult rc = traced(symbol, pfn, version, flags, status);
    forwarding = 0;
    __atomic_add_fetch(&lookups, 1, __ATOMIC_RELAXED);
    if (rc == CUDA_SUCCESS && pfn && in_tracer(*pfn))
        __atomic_add_fetch(&hooked, 1, __ATOMIC_RELAXED);
    return rc;
}

EXPORT int wssim_is_simulated(void) { return 1; }

EXPORT int wssim_register_host_kernel(const char *name, void (*fn)(void **))
{
    pthread_once(&once, load);
    int (*reg)(const char *, void (*)(void **)) =
        driver ? (int (*)(const char *, void (*)(void **)))dlsym(driver, "wssim_register_host_kernel") : NULL;
    return reg ? reg(name, fn) : -1;
}

__attribute__((destructor)) static void report(void)
{
    printf("handoff.lookups=%lu\nhandoff.hooked=%lu\n", lookups, hooked);
    fflush(stdout);
}
