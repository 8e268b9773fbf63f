/* The driver's modules, kernels, launches, streams and events.
 *
 * A module or library is a handle: there is no device code to load, so any image is accepted
 * and every name is a function of it.  A launch runs the host implementation registered for the
 * function's name (wssim_register_host_kernel), exactly as a runtime launch of an nvcc kernel
 * with that device name does; without one it fails with CUDA_ERROR_NOT_FOUND, or does nothing
 * under WSSIM_NOOP_KERNELS=1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_driver.h"

/* ---- modules and libraries ---- */

struct sim_module {
    int is_library;
};

static CUresult new_module(void **out, int is_library)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_module *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->is_library = is_library;
    pthread_mutex_lock(&sim_lock);
    int rc = sim_table_put(m, SIM_DRV_MODULE, 0, m);
    pthread_mutex_unlock(&sim_lock);
    if (rc != 0) {
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = m;
    return CUDA_SUCCESS;
}

static int module_valid(const void *m, int is_library)
{
    pthread_mutex_lock(&sim_lock);
    struct sim_entry *e = m ? sim_table_get(m) : NULL;
    int ok = e && e->kind == SIM_DRV_MODULE && ((struct sim_module *)e->data)->is_library == is_library;
    pthread_mutex_unlock(&sim_lock);
    return ok;
}

static CUresult unload(void *m, int is_library)
{
    if (!module_valid(m, is_library))
        return CUDA_ERROR_INVALID_HANDLE;
    sim_forget_module_kernels(m);
    pthread_mutex_lock(&sim_lock);
    sim_table_del(m);
    pthread_mutex_unlock(&sim_lock);
    free(m);
    return CUDA_SUCCESS;
}

CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    FILE *f = fname ? fopen(fname, "rb") : NULL;
    if (!f)
        return fname ? CUDA_ERROR_FILE_NOT_FOUND : CUDA_ERROR_INVALID_VALUE;
    fclose(f);
    return new_module((void **)module, 0);
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    return image ? new_module((void **)module, 0) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions, CUjit_option *options,
                            void **optionValues)
{
    (void)numOptions, (void)options, (void)optionValues; /* nothing is compiled */
    return cuModuleLoadData(module, image);
}

CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin) { return cuModuleLoadData(module, fatCubin); }

CUresult cuModuleUnload(CUmodule hmod) { return unload(hmod, 0); }

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!module_valid(hmod, 0))
        return CUDA_ERROR_INVALID_HANDLE;
    return DRV(sim_module_kernel(hmod, name, (void **)hfunc));
}

CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions, void **jitOptionsValues,
                           unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues,
                           unsigned int numLibraryOptions)
{
    (void)jitOptions, (void)jitOptionsValues, (void)numJitOptions;
    (void)libraryOptions, (void)libraryOptionValues, (void)numLibraryOptions;
    return code ? new_module((void **)library, 1) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                               void **jitOptionsValues, unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                               void **libraryOptionValues, unsigned int numLibraryOptions)
{
    (void)jitOptions, (void)jitOptionsValues, (void)numJitOptions;
    (void)libraryOptions, (void)libraryOptionValues, (void)numLibraryOptions;
    FILE *f = fileName ? fopen(fileName, "rb") : NULL;
    if (!f)
        return fileName ? CUDA_ERROR_FILE_NOT_FOUND : CUDA_ERROR_INVALID_VALUE;
    fclose(f);
    return new_module((void **)library, 1);
}

CUresult cuLibraryUnload(CUlibrary library) { return unload(library, 1); }

/* A CUkernel is the same handle as the CUfunction it gives. */
CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    if (!pKernel || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!module_valid(library, 1))
        return CUDA_ERROR_INVALID_HANDLE;
    return DRV(sim_module_kernel(library, name, (void **)pKernel));
}

CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    if (!pFunc)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_is_kernel_handle(kernel))
        return CUDA_ERROR_INVALID_HANDLE;
    *pFunc = (CUfunction)kernel;
    return CUDA_SUCCESS;
}

/* A function's device name; a host function launched by address through the runtime has none. */
CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_is_kernel_handle(hfunc))
        return CUDA_ERROR_INVALID_HANDLE;
    const char *n = sim_kernel_name(hfunc);
    if (!n)
        return CUDA_ERROR_NOT_FOUND;
    *name = n;
    return CUDA_SUCCESS;
}

CUresult cuKernelGetName(const char **name, CUkernel hfunc) { return cuFuncGetName(name, (CUfunction)hfunc); }

/* Answers of a small kernel: no static shared or local memory, 32 registers. */
CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_is_kernel_handle(hfunc))
        return CUDA_ERROR_INVALID_HANDLE;
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 32; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = 48 * 1024; break;
    default: *pi = 0; break;
    }
    return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    (void)attrib, (void)value;
    return sim_is_kernel_handle(hfunc) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
    (void)config;
    return sim_is_kernel_handle(hfunc) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
                                                     size_t dynamicSMemSize)
{
    (void)dynamicSMemSize;
    if (!numBlocks || blockSize <= 0 || blockSize > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_is_kernel_handle(func))
        return CUDA_ERROR_INVALID_HANDLE;
    int blocks = 2048 / blockSize;
    *numBlocks = blocks > 32 ? 32 : blocks;
    return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
                                          CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
                                          int blockSizeLimit)
{
    (void)blockSizeToDynamicSMemSize, (void)dynamicSMemSize;
    if (!minGridSize || !blockSize)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_is_kernel_handle(func))
        return CUDA_ERROR_INVALID_HANDLE;
    *blockSize = blockSizeLimit > 0 && blockSizeLimit < 1024 ? blockSizeLimit : 1024;
    *minGridSize = 132 * (2048 / *blockSize);
    return CUDA_SUCCESS;
}

/* ---- launches ---- */

/* The argument array of a launch: kernelParams, or the pointers into a packed buffer passed
 * through extra (CU_LAUNCH_PARAM_BUFFER_POINTER), laid out by the sizes the kernel was registered
 * with, each parameter at an offset aligned to its size (at most 8).  *args NULL: no arguments. */
static CUresult launch_args(CUfunction f, void **kernelParams, void **extra, void ***args, void **storage)
{
    *storage = NULL;
    *args = kernelParams;
    if (kernelParams || !extra)
        return kernelParams && extra ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    unsigned char *buffer = NULL;
    size_t buffer_size = 0;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            buffer = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
            buffer_size = *(size_t *)extra[i + 1];
        else
            return CUDA_ERROR_INVALID_VALUE;
    }
    if (!buffer)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned n = 0;
    const size_t *sizes = NULL;
    pthread_mutex_lock(&sim_lock);
    cudaError_t err = sim_kernel_layout_locked(f, &n, &sizes);
    size_t *copy = err == cudaSuccess && n ? malloc(n * sizeof *copy) : NULL;
    if (copy)
        memcpy(copy, sizes, n * sizeof *copy);
    pthread_mutex_unlock(&sim_lock);
    if (err != cudaSuccess)
        return sim_driver_code(err);
    if (n == 0)
        return CUDA_SUCCESS;
    void **ptrs = copy ? malloc(n * sizeof *ptrs) : NULL;
    if (!ptrs) {
        free(copy);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    size_t offset = 0;
    for (unsigned i = 0; i < n; i++) {
        size_t align = copy[i] >= 8 ? 8 : copy[i] >= 4 ? 4 : copy[i] >= 2 ? 2 : 1;
        offset = (offset + align - 1) / align * align;
        ptrs[i] = buffer + offset;
        offset += copy[i];
    }
    free(copy);
    if (offset > buffer_size) {
        free(ptrs);
        return CUDA_ERROR_INVALID_VALUE;
    }
    *args = ptrs;
    *storage = ptrs;
    return CUDA_SUCCESS;
}

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       unsigned smem, CUstream stream, void **kernelParams, void **extra)
{
    if (!sim_is_kernel_handle(f))
        return CUDA_ERROR_INVALID_HANDLE;
    void **args, *storage;
    CUresult rc = launch_args(f, kernelParams, extra, &args, &storage);
    if (rc == CUDA_SUCCESS)
        rc = DRV(sim_launch(f, (dim3){gx, gy, gz}, (dim3){bx, by, bz}, smem, args, stream));
    free(storage);
    return rc;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                        unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                        unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                  kernelParams, extra);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
    if (!config || (config->numAttrs && !config->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    return launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX, config->blockDimY,
                  config->blockDimZ, config->sharedMemBytes, config->hStream, kernelParams, extra);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                   unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                   unsigned int sharedMemBytes, CUstream hStream, void **kernelParams)
{
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                  kernelParams, NULL);
}

DRV_ALIAS(cuLaunchKernel_ptsz, cuLaunchKernel);
DRV_ALIAS(cuLaunchKernelEx_ptsz, cuLaunchKernelEx);
DRV_ALIAS(cuLaunchCooperativeKernel_ptsz, cuLaunchCooperativeKernel);

CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    return DRV(cudaLaunchHostFunc(hStream, fn, userData));
}
DRV_ALIAS(cuLaunchHostFunc_ptsz, cuLaunchHostFunc);

CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags)
{
    /* CUstreamCallback and cudaStreamCallback_t take (stream, status, data) alike. */
    return DRV(cudaStreamAddCallback(hStream, (cudaStreamCallback_t)(void (*)(void))callback, userData, flags));
}
DRV_ALIAS(cuStreamAddCallback_ptsz, cuStreamAddCallback);

/* ---- streams and events ---- */

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    return DRV(cudaStreamCreateWithFlags(phStream, Flags));
}

CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    return DRV(cudaStreamCreateWithPriority(phStream, flags, priority));
}

CUresult cuStreamDestroy(CUstream hStream) { return DRV(cudaStreamDestroy(hStream)); }
#undef cuStreamDestroy
DRV_ALIAS(cuStreamDestroy, cuStreamDestroy_v2);

CUresult cuStreamSynchronize(CUstream hStream) { return DRV(cudaStreamSynchronize(hStream)); }
CUresult cuStreamQuery(CUstream hStream) { return DRV(cudaStreamQuery(hStream)); }
CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    return DRV(cudaStreamWaitEvent(hStream, hEvent, Flags));
}
CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags) { return DRV(cudaStreamGetFlags(hStream, flags)); }
CUresult cuStreamGetPriority(CUstream hStream, int *priority) { return DRV(cudaStreamGetPriority(hStream, priority)); }
CUresult cuCtxResetPersistingL2Cache(void) { return DRV(cudaCtxResetPersistingL2Cache()); }
/* CUstreamAttrValue is cudaStreamAttrValue under another name (the launch attribute value unions
 * share their layout and attribute numbers). */
CUresult cuStreamSetAttribute(CUstream hStream, CUstreamAttrID attr, const CUstreamAttrValue *value)
{
    return DRV(cudaStreamSetAttribute(hStream, (cudaStreamAttrID)attr, (const cudaStreamAttrValue *)value));
}
CUresult cuStreamGetAttribute(CUstream hStream, CUstreamAttrID attr, CUstreamAttrValue *value)
{
    return DRV(cudaStreamGetAttribute(hStream, (cudaStreamAttrID)attr, (cudaStreamAttrValue *)value));
}
CUresult cuStreamCopyAttributes(CUstream dst, CUstream src) { return DRV(cudaStreamCopyAttributes(dst, src)); }

DRV_ALIAS(cuStreamSynchronize_ptsz, cuStreamSynchronize);
DRV_ALIAS(cuStreamQuery_ptsz, cuStreamQuery);
DRV_ALIAS(cuStreamWaitEvent_ptsz, cuStreamWaitEvent);
DRV_ALIAS(cuStreamGetFlags_ptsz, cuStreamGetFlags);
DRV_ALIAS(cuStreamGetPriority_ptsz, cuStreamGetPriority);
DRV_ALIAS(cuStreamSetAttribute_ptsz, cuStreamSetAttribute);
DRV_ALIAS(cuStreamGetAttribute_ptsz, cuStreamGetAttribute);
DRV_ALIAS(cuStreamCopyAttributes_ptsz, cuStreamCopyAttributes);

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags) { return DRV(cudaEventCreateWithFlags(phEvent, Flags)); }
CUresult cuEventDestroy(CUevent hEvent) { return DRV(cudaEventDestroy(hEvent)); }
#undef cuEventDestroy
DRV_ALIAS(cuEventDestroy, cuEventDestroy_v2);
CUresult cuEventRecord(CUevent hEvent, CUstream hStream) { return DRV(cudaEventRecord(hEvent, hStream)); }
CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    (void)flags; /* CU_EVENT_RECORD_EXTERNAL matters only inside graphs */
    return DRV(cudaEventRecord(hEvent, hStream));
}
CUresult cuEventSynchronize(CUevent hEvent) { return DRV(cudaEventSynchronize(hEvent)); }
CUresult cuEventQuery(CUevent hEvent) { return DRV(cudaEventQuery(hEvent)); }
CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    return DRV(cudaEventElapsedTime(pMilliseconds, hStart, hEnd));
}
#undef cuEventElapsedTime
DRV_ALIAS(cuEventElapsedTime, cuEventElapsedTime_v2);

DRV_ALIAS(cuEventRecord_ptsz, cuEventRecord);
DRV_ALIAS(cuEventRecordWithFlags_ptsz, cuEventRecordWithFlags);

/* ---- stream capture ---- */

CUresult cuStreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode)
{
    return DRV(cudaStreamBeginCapture(hStream, (enum cudaStreamCaptureMode)mode));
}
DRV_ALIAS(cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture_v2);

CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
                                     const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                     CUstreamCaptureMode mode)
{
    return DRV(cudaStreamBeginCaptureToGraph(hStream, hGraph, dependencies, (const cudaGraphEdgeData *)dependencyData,
                                             numDependencies, (enum cudaStreamCaptureMode)mode));
}
DRV_ALIAS(cuStreamBeginCaptureToGraph_ptsz, cuStreamBeginCaptureToGraph);

CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph) { return DRV(cudaStreamEndCapture(hStream, phGraph)); }
DRV_ALIAS(cuStreamEndCapture_ptsz, cuStreamEndCapture);

CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    return DRV(cudaStreamIsCapturing(hStream, (enum cudaStreamCaptureStatus *)captureStatus));
}
DRV_ALIAS(cuStreamIsCapturing_ptsz, cuStreamIsCapturing);

CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
                                CUgraph *graph_out, const CUgraphNode **dependencies_out,
                                const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
    return DRV(cudaStreamGetCaptureInfo(hStream, (enum cudaStreamCaptureStatus *)captureStatus_out,
                                        (unsigned long long *)id_out, graph_out, dependencies_out,
                                        (const cudaGraphEdgeData **)edgeData_out, numDependencies_out));
}
DRV_ALIAS(cuStreamGetCaptureInfo_v3_ptsz, cuStreamGetCaptureInfo_v3);

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    return DRV(cudaThreadExchangeStreamCaptureMode((enum cudaStreamCaptureMode *)mode));
}
