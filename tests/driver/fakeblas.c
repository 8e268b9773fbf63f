/* A library that reaches the driver the way cuBLAS, cuBLASLt and cuDNN do: it links nothing of
 * CUDA, opens libcuda.so.1 itself, looks up cuGetProcAddress_v2 on that handle and fetches every
 * entry point it calls through it.  fakeblas_gemm() stands for a GEMM that takes a workspace:
 * each call allocates WORKSPACE bytes with cuMemAlloc, launches the kernel with cuLaunchKernel and
 * cuLaunchKernelEx, takes SCRATCH bytes stream-ordered (cuMemAllocAsync), and gives both back. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#include "fakeblas.h"

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static struct {
    CUresult (*init)(unsigned);
    CUresult (*retain)(CUcontext *, CUdevice);
    CUresult (*set_current)(CUcontext);
    CUresult (*load)(CUmodule *, const void *);
    CUresult (*get_function)(CUfunction *, CUmodule, const char *);
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*free)(CUdeviceptr);
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                       void **, void **);
    CUresult (*launch_ex)(const CUlaunchConfig *, CUfunction, void **, void **);
    CUresult (*alloc_async)(CUdeviceptr *, size_t, CUstream);
    CUresult (*free_async)(CUdeviceptr, CUstream);
    CUresult (*stream_create)(CUstream *, unsigned);
    CUresult (*stream_sync)(CUstream);
    CUresult (*stream_destroy)(CUstream);
} cu;

static void gemm_kernel(void **args)
{
    unsigned char *workspace = (unsigned char *)*(CUdeviceptr *)args[0];
    workspace[0] = 1;
}

static int fetch(get_proc_fn get, const char *name, void *slot)
{
    CUdriverProcAddressQueryResult status;
    if (get(name, (void **)slot, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS ||
        status != CU_GET_PROC_ADDRESS_SUCCESS || !*(void **)slot) {
        fprintf(stderr, "fakeblas: no %s\n", name);
        return -1;
    }
    return 0;
}

int fakeblas_gemm(int calls, struct fakeblas_counts *n)
{
    memset(n, 0, sizeof *n);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    get_proc_fn get = h ? (get_proc_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
    int (*reg)(const char *, void (*)(void **)) =
        h ? (int (*)(const char *, void (*)(void **)))dlsym(h, "wssim_register_host_kernel") : NULL;
    if (!get || !reg) {
        fprintf(stderr, "fakeblas: cannot open the driver\n");
        return -1;
    }
    if (fetch(get, "cuInit", &cu.init) || fetch(get, "cuDevicePrimaryCtxRetain", &cu.retain) ||
        fetch(get, "cuCtxSetCurrent", &cu.set_current) || fetch(get, "cuModuleLoadData", &cu.load) ||
        fetch(get, "cuModuleGetFunction", &cu.get_function) || fetch(get, "cuMemAlloc", &cu.alloc) ||
        fetch(get, "cuMemFree", &cu.free) || fetch(get, "cuLaunchKernel", &cu.launch) ||
        fetch(get, "cuLaunchKernelEx", &cu.launch_ex) || fetch(get, "cuMemAllocAsync", &cu.alloc_async) ||
        fetch(get, "cuMemFreeAsync", &cu.free_async) || fetch(get, "cuStreamCreate", &cu.stream_create) ||
        fetch(get, "cuStreamSynchronize", &cu.stream_sync) || fetch(get, "cuStreamDestroy", &cu.stream_destroy))
        return -1;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CUstream s;
    if (reg("fakeblas_gemm_kernel", gemm_kernel) != 0 || cu.init(0) || cu.retain(&ctx, 0) || cu.set_current(ctx) ||
        cu.load(&mod, "a module image") || cu.get_function(&f, mod, "fakeblas_gemm_kernel") ||
        cu.stream_create(&s, CU_STREAM_NON_BLOCKING))
        return -1;
    for (int i = 0; i < calls; i++) {
        CUdeviceptr workspace, scratch;
        if (cu.alloc(&workspace, FAKEBLAS_WORKSPACE) != CUDA_SUCCESS)
            return -1;
        n->allocs++;
        void *args[] = {&workspace};
        if (cu.launch(f, 4, 1, 1, 128, 1, 1, 0, s, args, NULL) != CUDA_SUCCESS)
            return -1;
        n->launches++;
        CUlaunchConfig config = {
            .gridDimX = 2, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 64, .blockDimY = 1, .blockDimZ = 1, .hStream = s};
        if (cu.launch_ex(&config, f, args, NULL) != CUDA_SUCCESS)
            return -1;
        n->launches_ex++;
        if (cu.alloc_async(&scratch, FAKEBLAS_SCRATCH, s) != CUDA_SUCCESS)
            return -1;
        n->async_allocs++;
        if (cu.free_async(scratch, s) != CUDA_SUCCESS || cu.stream_sync(s) != CUDA_SUCCESS ||
            cu.free(workspace) != CUDA_SUCCESS)
            return -1;
        n->frees += 2;
    }
    return cu.stream_destroy(s) == CUDA_SUCCESS ? 0 : -1;
}
