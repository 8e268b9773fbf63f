/* cuGetProcAddress: the driver's entry points by base name and CUDA version, as cudart, cuBLAS,
 * cuDNN and other libraries that carry their own runtime find them.  The answer is the newest
 * form introduced at or before the requested version; with
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, its per-thread variant where one exists. */
#include <string.h>

#include "sim_driver.h"
#include "sim_procs.h"

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                          CUdriverProcAddressQueryResult *symbolStatus)
{
    if (symbolStatus)
        *symbolStatus = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    if (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;
    int per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    const struct sim_proc *plain = NULL, *threaded = NULL;
    int known = 0;
    for (size_t i = 0; i < sim_proc_count; i++) {
        const struct sim_proc *p = &sim_procs[i];
        if (strcmp(p->name, symbol) != 0)
            continue;
        known = 1;
        if (p->version > cudaVersion)
            continue;
        if (p->per_thread)
            threaded = p;
        else
            plain = p;
    }
    /* A per-thread variant serves only the form it was made for: not one older than the plain
     * form that is chosen. */
    const struct sim_proc *chosen =
        per_thread && threaded && (!plain || threaded->version >= plain->version) ? threaded : plain;
    if (!chosen) {
        if (known && symbolStatus)
            *symbolStatus = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        return CUDA_ERROR_NOT_FOUND;
    }
    *pfn = chosen->fn;
    if (symbolStatus)
        *symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

/* The 11.3 form, without the status. */
#undef cuGetProcAddress
SIM_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}

/* The runtime's way to the same table (libwssim.so; the simulated cudart has its own, through
 * the driver's public entry point). */
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                             unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *driverStatus)
{
    if (!symbol || !funcPtr ||
        (flags & ~(unsigned long long)(cudaEnableLegacyStream | cudaEnablePerThreadDefaultStream)))
        return sim_result(cudaErrorInvalidValue);
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult rc = cuGetProcAddress_v2(symbol, funcPtr, (int)cudaVersion, flags, &status);
    if (driverStatus)
        *driverStatus = (enum cudaDriverEntryPointQueryResult)status;
    return rc == CUDA_SUCCESS || rc == CUDA_ERROR_NOT_FOUND ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return cudaGetDriverEntryPointByVersion(symbol, funcPtr, CUDART_VERSION, flags, driverStatus);
}

SIM_EXPORT cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                                    enum cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return cudaGetDriverEntryPointByVersion(symbol, funcPtr, CUDART_VERSION, flags, driverStatus);
}
SIM_ALIAS(cudaGetDriverEntryPointByVersion_ptsz, cudaGetDriverEntryPointByVersion);
