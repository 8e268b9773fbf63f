/*
 * libwsargcheck.so: stand-ins for five CUDA functions that check every argument they receive
 * against what argcheck_prog passes (argcheck.h), and errno on entry.  A mismatch is one line on
 * stderr and an error code; a match answers success, writes the call's output and leaves errno
 * at AC_ERRNO_OUT.  Under libwstrace.so the program's calls reach these through the hooks.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "argcheck.h"

#define EXPORT __attribute__((visibility("default")))

static int mismatches, calls;

EXPORT int argcheck_mismatches(void) { return mismatches; }
EXPORT int argcheck_calls(void) { return calls; }

static int check(const char *fn, const char *arg, uint64_t got, uint64_t want)
{
    if (got == want)
        return 1;
    fprintf(stderr, "argcheck: %s: %s is %#llx, expected %#llx\n", fn, arg, (unsigned long long)got,
            (unsigned long long)want);
    mismatches++;
    return 0;
}

static int check_dim3(const char *fn, const char *arg, dim3 got, unsigned x, unsigned y, unsigned z)
{
    int ok = check(fn, arg, got.x, x);
    ok &= check(fn, arg, got.y, y);
    return ok & check(fn, arg, got.z, z);
}

static int check_handle(const char *fn, const char *handle, unsigned salt)
{
    int ok = 1;
    for (unsigned i = 0; i < CU_IPC_HANDLE_SIZE; i++)
        ok &= check(fn, "a byte of the handle", (uint64_t)(unsigned char)handle[i],
                    (uint64_t)(unsigned char)ac_handle_byte(i, salt));
    return ok;
}

/* errno as the caller left it, checked first: anything done before this call runs may change it. */
static int entry(const char *fn)
{
    int e = errno;
    calls++;
    return check(fn, "errno on entry", (uint64_t)(unsigned)e, AC_ERRNO_IN);
}

#define U(x) ((uint64_t)(uintptr_t)(x))

EXPORT cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t smem,
                                    cudaStream_t stream)
{
    static const unsigned g[3] = {AC_RT_GRID}, b[3] = {AC_RT_BLOCK};
    const char *fn = "cudaLaunchKernel";
    int ok = entry(fn);
    ok &= check(fn, "func", U(func), AC_RT_FUNC);
    ok &= check_dim3(fn, "grid", grid, g[0], g[1], g[2]);
    ok &= check_dim3(fn, "block", block, b[0], b[1], b[2]);
    ok &= check(fn, "args", U(args), AC_RT_ARGS);
    ok &= check(fn, "smem", smem, AC_RT_SMEM);
    ok &= check(fn, "stream", U(stream), AC_RT_STREAM);
    errno = AC_ERRNO_OUT;
    return ok ? cudaSuccess : cudaErrorInvalidValue;
}

EXPORT cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitched, struct cudaExtent extent)
{
    static unsigned n;
    const char *fn = "cudaMalloc3D";
    int ok = entry(fn);
    ok &= check(fn, "extent.width", extent.width, AC_3D_WIDTH);
    ok &= check(fn, "extent.height", extent.height, AC_3D_HEIGHT);
    ok &= check(fn, "extent.depth", extent.depth, AC_3D_DEPTH);
    errno = AC_ERRNO_OUT;
    if (!ok || !pitched)
        return cudaErrorInvalidValue;
    pitched->ptr = (void *)(uintptr_t)(AC_3D_BASE + n++ * AC_STEP);
    pitched->pitch = AC_3D_PITCH;
    pitched->xsize = extent.width;
    pitched->ysize = extent.height;
    return cudaSuccess;
}

EXPORT cudaError_t cudaIpcOpenMemHandle(void **ptr, cudaIpcMemHandle_t handle, unsigned int flags)
{
    static unsigned n;
    const char *fn = "cudaIpcOpenMemHandle";
    int ok = entry(fn);
    ok &= check_handle(fn, handle.reserved, AC_RT_IPC_SALT);
    ok &= check(fn, "flags", flags, AC_RT_IPC_FLAGS);
    errno = AC_ERRNO_OUT;
    if (!ok || !ptr)
        return cudaErrorInvalidValue;
    *ptr = (void *)(uintptr_t)(AC_RT_IPC_BASE + n++ * AC_STEP);
    return cudaSuccess;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                               unsigned int by, unsigned int bz, unsigned int smem, CUstream stream, void **params,
                               void **extra)
{
    static const unsigned g[3] = {AC_DRV_GRID}, b[3] = {AC_DRV_BLOCK};
    const char *fn = "cuLaunchKernel";
    int ok = entry(fn);
    ok &= check(fn, "f", U(f), AC_DRV_FUNC);
    ok &= check(fn, "gridDimX", gx, g[0]);
    ok &= check(fn, "gridDimY", gy, g[1]);
    ok &= check(fn, "gridDimZ", gz, g[2]);
    ok &= check(fn, "blockDimX", bx, b[0]);
    ok &= check(fn, "blockDimY", by, b[1]);
    ok &= check(fn, "blockDimZ", bz, b[2]);
    ok &= check(fn, "sharedMemBytes", smem, AC_DRV_SMEM);
    ok &= check(fn, "hStream", U(stream), AC_DRV_STREAM);
    ok &= check(fn, "kernelParams", U(params), AC_DRV_PARAMS);
    ok &= check(fn, "extra", U(extra), AC_DRV_EXTRA);
    errno = AC_ERRNO_OUT;
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *ptr, CUipcMemHandle handle, unsigned int flags)
{
    static unsigned n;
    const char *fn = "cuIpcOpenMemHandle_v2";
    int ok = entry(fn);
    ok &= check_handle(fn, handle.reserved, AC_DRV_IPC_SALT);
    ok &= check(fn, "Flags", flags, AC_DRV_IPC_FLAGS);
    errno = AC_ERRNO_OUT;
    if (!ok || !ptr)
        return CUDA_ERROR_INVALID_VALUE;
    *ptr = AC_DRV_IPC_BASE + n++ * AC_STEP;
    return CUDA_SUCCESS;
}
