/* wssim.h — the simulated device's own API.
 *
 * libwssim.so implements a subset of the CUDA runtime API on the host (see kernels/sim/README.md).
 * The functions below exist only on the simulated device. A program that may also run with the
 * real cudart should look them up with dlsym() instead of linking to them.
 */
#ifndef WSSIM_H
#define WSSIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Returns 1: the CUDA runtime in this process is the simulated device. */
int wssim_is_simulated(void);

/* Device-memory accounting since the process started. Device memory is what cudaMalloc,
 * cudaMallocAsync, cudaMallocFromPoolAsync, cudaMallocManaged and cudaMallocPitch return; pinned
 * host memory (cudaMallocHost, cudaHostAlloc) is not counted. Bytes are the requested bytes
 * (pitch * height for cudaMallocPitch), not the rounded-up host allocation. */
struct wssim_stats {
    uint64_t capacity;      /* device capacity in bytes (WSSIM_CAPACITY, default 16 GiB) */
    uint64_t live_bytes;    /* device bytes allocated and not yet freed */
    uint64_t peak_bytes;    /* maximum of live_bytes since start or the last wssim_reset_peak() */
    uint64_t alloc_calls;   /* successful allocations that returned a pointer (not zero-byte ones) */
    uint64_t free_calls;    /* frees that released a live allocation; live allocations =
                               alloc_calls - free_calls */
    uint64_t failed_allocs; /* allocations refused with cudaErrorMemoryAllocation */
    uint64_t launches;      /* kernel launches that ran a host kernel */
    uint64_t noop_launches; /* launches of kernels without a host implementation that did nothing
                               (only with WSSIM_NOOP_KERNELS=1) */
};

/* Copies a consistent snapshot of the counters into *out (which must not be NULL). */
void wssim_get_stats(struct wssim_stats *out);

/* Sets peak_bytes to the current live_bytes, so that the peak of a later phase can be measured. */
void wssim_reset_peak(void);

/* Registers the host implementation of a kernel. A launch through nvcc's entry points
 * (__cudaLaunchKernel) or through cudaLaunchKernel with an nvcc host stub runs fn(args) for the
 * kernel whose device name, exactly as nvcc passes it to __cudaRegisterFunction (mangled for C++
 * kernels, plain for extern "C" ones), equals device_name. args is the launch's argument array:
 * args[i] points to the i-th kernel argument. Registering a name again replaces its function.
 * Returns 0, or -1 when device_name or fn is NULL or memory runs out. */
int wssim_register_host_kernel(const char *device_name, void (*fn)(void **args));

/* The same with the sizes in bytes of the kernel's nparams parameters, in order.  A kernel
 * launched into a graph (a kernel node, added explicitly or by stream capture) keeps a copy of
 * its arguments, as a GPU does, and can make it only knowing their sizes: adding a kernel node
 * for a kernel registered without them fails with cudaErrorNotSupported.  Returns 0, or -1 on
 * NULL arguments (param_sizes may be NULL when nparams is 0), more than 1024 parameters, or
 * when memory runs out. */
int wssim_register_host_kernel_params(const char *device_name, void (*fn)(void **args), unsigned nparams,
                                      const size_t *param_sizes);

/* The parameter sizes of a host function launched by its address (cudaLaunchKernel(fn, ...)),
 * for the same purpose.  Same return values. */
int wssim_register_function_params(void (*fn)(void **args), unsigned nparams, const size_t *param_sizes);

#ifdef __cplusplus
}
#endif

#endif
