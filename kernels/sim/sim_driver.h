/* The simulated driver API (libcuda.so.1): what the driver's entry points share.
 *
 * The driver is the same device as the runtime: its entry points reuse the runtime's
 * implementations (same handles: a CUstream is a cudaStream_t, a CUdeviceptr the address a
 * cudaMalloc would return) inside a DRV() bracket, so that a driver call never sets the runtime's
 * last error, and turn the runtime's error codes into the driver's. */
#ifndef WSSIM_DRIVER_H
#define WSSIM_DRIVER_H

#include "sim_internal.h"

#pragma GCC visibility push(default)
#include <cuda.h>
#pragma GCC visibility pop

/* The driver's code for a runtime error: the same number where both APIs have the condition
 * (most codes from 100 up are shared), CUDA_ERROR_INVALID_VALUE for runtime-only argument errors,
 * CUDA_ERROR_NOT_FOUND for a kernel that cannot run. */
CUresult sim_driver_code(cudaError_t err);

/* Runs a runtime implementation as part of a driver call and returns the driver's code. */
#define DRV(call)                                                                                                      \
    __extension__({                                                                                                    \
        sim_driver_depth++;                                                                                            \
        cudaError_t drv_err_ = (call);                                                                                 \
        sim_driver_depth--;                                                                                            \
        sim_driver_code(drv_err_);                                                                                     \
    })

/* A driver entry point's second name: the _ptsz/_ptds variant, or an older form with the same
 * signature.  Exported like the entry point itself, and a function of its own (a jump to the
 * entry point), as in the real driver: a tool that tells entry points apart by address, as
 * cuGetProcAddress hands them out, sees two. */
#define DRV_ALIAS(name, target)                                                                                        \
    __asm__(".globl " #name "\n\t.type " #name ", @function\n\t.p2align 4\n" #name ":\n\tjmp " #target                 \
            "@PLT\n\t.size " #name ", .-" #name)

static inline void *drv_ptr(CUdeviceptr p) { return (void *)(uintptr_t)p; }
static inline CUdeviceptr drv_devptr(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

/* The contexts (sim_drv_context.c).  A context is a handle; every context is the one device. */
int sim_context_valid(CUcontext ctx);

/* The private interface between the simulated cudart and the simulated driver: what
 * cuGetExportTable returns for WSSIM_EXPORT_TABLE_ID.  The runtime's entry points live in the
 * driver library (one device, one state); the cudart library forwards to them by name. */
#define WSSIM_EXPORT_TABLE_ID "wssim-rt-table-1"

struct wssim_runtime_entry {
    const char *name;
    void *fn;
};

struct wssim_export_table {
    size_t size; /* sizeof(struct wssim_export_table) of the driver that filled it */
    size_t count;
    const struct wssim_runtime_entry *entries; /* sorted by name (strcmp) */
    /* Records err as the calling thread's last runtime error (cudart's own wrappers). */
    cudaError_t (*set_error)(cudaError_t err);
    /* The kernel handle (a CUfunction) of what a runtime launch names (sim_kernel_handle). */
    cudaError_t (*kernel_handle)(const void *func, void **handle);
    /* Is handle a kernel handle (__cudaGetKernel's, a CUfunction)? */
    int (*is_kernel)(const void *handle);
};

/* Generated at build time from the runtime objects (gen_cudart.sh). */
extern const struct wssim_runtime_entry sim_runtime_entries[];
extern const size_t sim_runtime_entry_count;

#endif
