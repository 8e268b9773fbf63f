/*
 * argcheck_prog [N]: calls each function of libwsargcheck.so N times (default 3) with the
 * arguments of argcheck.h and errno set to AC_ERRNO_IN, and checks what comes back: success, the
 * output the stand-in writes for that call, errno at AC_ERRNO_OUT.  Prints "calls=", "answered="
 * (the calls the stand-ins received) and "mismatches=" (arguments they found wrong); exits 0 when
 * every call came back right and no argument was wrong.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "argcheck.h"

static int wrong;

static void expect(const char *fn, unsigned call, const char *what, uint64_t got, uint64_t want)
{
    if (got == want)
        return;
    fprintf(stderr, "argcheck_prog: %s call %u: %s is %#llx, expected %#llx\n", fn, call, what, (unsigned long long)got,
            (unsigned long long)want);
    wrong++;
}

#define P(x) ((void *)(uintptr_t)(x))
#define U(x) ((uint64_t)(uintptr_t)(x))

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 3;
    if (n <= 0 || n > 1000 || argc > 2) {
        fprintf(stderr, "usage: argcheck_prog [CALLS 1..1000]\n");
        return 2;
    }
    cudaIpcMemHandle_t rt_handle;
    CUipcMemHandle drv_handle;
    for (unsigned i = 0; i < sizeof rt_handle.reserved; i++)
        rt_handle.reserved[i] = ac_handle_byte(i, AC_RT_IPC_SALT);
    for (unsigned i = 0; i < sizeof drv_handle.reserved; i++)
        drv_handle.reserved[i] = ac_handle_byte(i, AC_DRV_IPC_SALT);
    int calls = 0;
    for (unsigned i = 0; i < (unsigned)n; i++) {
        errno = AC_ERRNO_IN;
        cudaError_t rc = cudaLaunchKernel(P(AC_RT_FUNC), (dim3){AC_RT_GRID}, (dim3){AC_RT_BLOCK},
                                          (void **)P(AC_RT_ARGS), AC_RT_SMEM, (cudaStream_t)P(AC_RT_STREAM));
        expect("cudaLaunchKernel", i, "errno", (unsigned)errno, AC_ERRNO_OUT);
        expect("cudaLaunchKernel", i, "result", (uint64_t)rc, cudaSuccess);

        struct cudaPitchedPtr pitched = {0};
        errno = AC_ERRNO_IN;
        rc = cudaMalloc3D(&pitched, (struct cudaExtent){AC_3D_WIDTH, AC_3D_HEIGHT, AC_3D_DEPTH});
        expect("cudaMalloc3D", i, "errno", (unsigned)errno, AC_ERRNO_OUT);
        expect("cudaMalloc3D", i, "result", (uint64_t)rc, cudaSuccess);
        expect("cudaMalloc3D", i, "address", U(pitched.ptr), AC_3D_BASE + i * AC_STEP);
        expect("cudaMalloc3D", i, "pitch", pitched.pitch, AC_3D_PITCH);

        void *opened = NULL;
        errno = AC_ERRNO_IN;
        rc = cudaIpcOpenMemHandle(&opened, rt_handle, AC_RT_IPC_FLAGS);
        expect("cudaIpcOpenMemHandle", i, "errno", (unsigned)errno, AC_ERRNO_OUT);
        expect("cudaIpcOpenMemHandle", i, "result", (uint64_t)rc, cudaSuccess);
        expect("cudaIpcOpenMemHandle", i, "address", U(opened), AC_RT_IPC_BASE + i * AC_STEP);

        errno = AC_ERRNO_IN;
        CUresult drc = cuLaunchKernel((CUfunction)P(AC_DRV_FUNC), AC_DRV_GRID, AC_DRV_BLOCK, AC_DRV_SMEM,
                                      (CUstream)P(AC_DRV_STREAM), (void **)P(AC_DRV_PARAMS), (void **)P(AC_DRV_EXTRA));
        expect("cuLaunchKernel", i, "errno", (unsigned)errno, AC_ERRNO_OUT);
        expect("cuLaunchKernel", i, "result", (uint64_t)drc, CUDA_SUCCESS);

        CUdeviceptr dptr = 0;
        errno = AC_ERRNO_IN;
        drc = cuIpcOpenMemHandle_v2(&dptr, drv_handle, AC_DRV_IPC_FLAGS);
        expect("cuIpcOpenMemHandle_v2", i, "errno", (unsigned)errno, AC_ERRNO_OUT);
        expect("cuIpcOpenMemHandle_v2", i, "result", (uint64_t)drc, CUDA_SUCCESS);
        expect("cuIpcOpenMemHandle_v2", i, "address", dptr, AC_DRV_IPC_BASE + i * AC_STEP);
        calls += 5;
    }
    printf("calls=%d\nanswered=%d\nmismatches=%d\n", calls, argcheck_calls(), argcheck_mismatches());
    return wrong || argcheck_mismatches() || argcheck_calls() != calls;
}
