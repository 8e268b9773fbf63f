/* The one simulated device: an H100-like part (compute capability 9.0, 132 SMs) whose global
 * memory is the configured capacity. Attributes read the same table as the properties, so the two
 * never disagree. */
#include <string.h>

#include "sim_internal.h"

static _Thread_local int current_device = 0;

cudaError_t cudaGetDeviceCount(int *count)
{
    if (!count)
        return sim_result(cudaErrorInvalidValue);
    *count = 1;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    if (device != 0)
        return sim_result(cudaErrorInvalidDevice);
    current_device = device;
    return cudaSuccess;
}

/* Scheduling and mapping flags: accepted and remembered (nothing on this device depends on them). */
static unsigned device_flags = cudaDeviceScheduleAuto;

cudaError_t cudaSetDeviceFlags(unsigned int flags)
{
    unsigned known = cudaDeviceScheduleMask | cudaDeviceMapHost | cudaDeviceLmemResizeToMax;
    if (flags & ~known)
        return sim_result(cudaErrorInvalidValue);
    __atomic_store_n(&device_flags, flags, __ATOMIC_RELAXED);
    return cudaSuccess;
}

/* cudaDeviceMapHost is always on: pinned memory is its own device pointer. */
cudaError_t cudaGetDeviceFlags(unsigned int *flags)
{
    if (!flags)
        return sim_result(cudaErrorInvalidValue);
    *flags = __atomic_load_n(&device_flags, __ATOMIC_RELAXED) | cudaDeviceMapHost;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
    if (!device)
        return sim_result(cudaErrorInvalidValue);
    *device = current_device;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
    if (!runtimeVersion)
        return sim_result(cudaErrorInvalidValue);
    *runtimeVersion = CUDART_VERSION;
    return cudaSuccess;
}

/* The simulated driver is exactly as new as the runtime, so version checks in programs pass. */
cudaError_t cudaDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return sim_result(cudaErrorInvalidValue);
    *driverVersion = CUDART_VERSION;
    return cudaSuccess;
}

void sim_fill_properties(struct cudaDeviceProp *p)
{
    memset(p, 0, sizeof *p);
    strncpy(p->name, "wstrace simulated device", sizeof p->name - 1);
    memcpy(p->uuid.bytes, "wssim-device-000", sizeof p->uuid.bytes);
    p->totalGlobalMem = (size_t)sim_capacity();
    p->sharedMemPerBlock = 48 * 1024;
    p->regsPerBlock = 65536;
    p->warpSize = 32;
    p->memPitch = 2147483647;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = 1024, p->maxThreadsDim[1] = 1024, p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647, p->maxGridSize[1] = 65535, p->maxGridSize[2] = 65535;
    p->totalConstMem = 64 * 1024;
    p->major = 9;
    p->minor = 0;
    p->textureAlignment = 512;
    p->texturePitchAlignment = 32;
    p->multiProcessorCount = 132;
    p->canMapHostMemory = 1;
    p->surfaceAlignment = 512;
    p->concurrentKernels = 1;
    p->asyncEngineCount = 2;
    p->unifiedAddressing = 1;
    p->memoryBusWidth = 5120;
    p->l2CacheSize = 50 * 1024 * 1024;
    p->persistingL2CacheMaxSize = 32 * 1024 * 1024;
    p->maxThreadsPerMultiProcessor = 2048;
    p->streamPrioritiesSupported = 1;
    p->globalL1CacheSupported = 1;
    p->localL1CacheSupported = 1;
    p->sharedMemPerMultiprocessor = 228 * 1024;
    p->regsPerMultiprocessor = 65536;
    p->managedMemory = 1;
    p->pageableMemoryAccess = 1;
    p->concurrentManagedAccess = 1;
    p->directManagedMemAccessFromHost = 1;
    p->computePreemptionSupported = 1;
    p->cooperativeLaunch = 1;
    p->sharedMemPerBlockOptin = 227 * 1024;
    p->maxBlocksPerMultiProcessor = 32;
    p->reservedSharedMemPerBlock = 1024;
    p->memoryPoolsSupported = 1;
    p->clusterLaunch = 1;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    if (!prop)
        return sim_result(cudaErrorInvalidValue);
    if (device != 0)
        return sim_result(cudaErrorInvalidDevice);
    sim_fill_properties(prop);
    return cudaSuccess;
}

/* Maps an attribute to its property; returns 0 when the attribute is not simulated. */
static int attribute_value(const struct cudaDeviceProp *p, enum cudaDeviceAttr attr, int *value)
{
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = p->maxThreadsPerBlock; return 1;
    case cudaDevAttrMaxBlockDimX: *value = p->maxThreadsDim[0]; return 1;
    case cudaDevAttrMaxBlockDimY: *value = p->maxThreadsDim[1]; return 1;
    case cudaDevAttrMaxBlockDimZ: *value = p->maxThreadsDim[2]; return 1;
    case cudaDevAttrMaxGridDimX: *value = p->maxGridSize[0]; return 1;
    case cudaDevAttrMaxGridDimY: *value = p->maxGridSize[1]; return 1;
    case cudaDevAttrMaxGridDimZ: *value = p->maxGridSize[2]; return 1;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = (int)p->sharedMemPerBlock; return 1;
    case cudaDevAttrTotalConstantMemory: *value = (int)p->totalConstMem; return 1;
    case cudaDevAttrWarpSize: *value = p->warpSize; return 1;
    case cudaDevAttrMaxPitch: *value = (int)p->memPitch; return 1;
    case cudaDevAttrMaxRegistersPerBlock: *value = p->regsPerBlock; return 1;
    case cudaDevAttrClockRate: *value = 1980000; return 1; /* kHz */
    case cudaDevAttrMemoryClockRate: *value = 2619000; return 1;
    case cudaDevAttrTextureAlignment: *value = (int)p->textureAlignment; return 1;
    case cudaDevAttrMultiProcessorCount: *value = p->multiProcessorCount; return 1;
    case cudaDevAttrIntegrated: *value = p->integrated; return 1;
    case cudaDevAttrCanMapHostMemory: *value = p->canMapHostMemory; return 1;
    case cudaDevAttrComputeMode: *value = cudaComputeModeDefault; return 1;
    case cudaDevAttrConcurrentKernels: *value = p->concurrentKernels; return 1;
    case cudaDevAttrEccEnabled: *value = p->ECCEnabled; return 1;
    case cudaDevAttrPciBusId: *value = p->pciBusID; return 1;
    case cudaDevAttrPciDeviceId: *value = p->pciDeviceID; return 1;
    case cudaDevAttrPciDomainId: *value = p->pciDomainID; return 1;
    case cudaDevAttrGlobalMemoryBusWidth: *value = p->memoryBusWidth; return 1;
    case cudaDevAttrL2CacheSize: *value = p->l2CacheSize; return 1;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = p->maxThreadsPerMultiProcessor; return 1;
    case cudaDevAttrAsyncEngineCount: *value = p->asyncEngineCount; return 1;
    case cudaDevAttrUnifiedAddressing: *value = p->unifiedAddressing; return 1;
    case cudaDevAttrComputeCapabilityMajor: *value = p->major; return 1;
    case cudaDevAttrComputeCapabilityMinor: *value = p->minor; return 1;
    case cudaDevAttrStreamPrioritiesSupported: *value = p->streamPrioritiesSupported; return 1;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = (int)p->sharedMemPerMultiprocessor; return 1;
    case cudaDevAttrMaxRegistersPerMultiprocessor: *value = p->regsPerMultiprocessor; return 1;
    case cudaDevAttrManagedMemory: *value = p->managedMemory; return 1;
    case cudaDevAttrPageableMemoryAccess: *value = p->pageableMemoryAccess; return 1;
    case cudaDevAttrConcurrentManagedAccess: *value = p->concurrentManagedAccess; return 1;
    case cudaDevAttrCooperativeLaunch: *value = p->cooperativeLaunch; return 1;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = (int)p->sharedMemPerBlockOptin; return 1;
    case cudaDevAttrMaxBlocksPerMultiprocessor: *value = p->maxBlocksPerMultiProcessor; return 1;
    case cudaDevAttrMaxPersistingL2CacheSize: *value = p->persistingL2CacheMaxSize; return 1;
    case cudaDevAttrReservedSharedMemoryPerBlock: *value = (int)p->reservedSharedMemPerBlock; return 1;
    case cudaDevAttrMemoryPoolsSupported: *value = p->memoryPoolsSupported; return 1;
    case cudaDevAttrClusterLaunch: *value = p->clusterLaunch; return 1;
    default: return 0;
    }
}

/* Attributes without a property field: an H100's texture and surface limits, and what this
 * device supports (host registration, pools with POSIX file descriptors, VMM) or does not (peer
 * devices, NUMA, GPUDirect RDMA, interop).  Returns 0 for attributes not simulated. */
static int constant_attribute(enum cudaDeviceAttr attr, int *value)
{
    switch (attr) {
    case cudaDevAttrMaxTexture1DWidth:
    case cudaDevAttrMaxTexture2DWidth:
    case cudaDevAttrMaxTexture1DMipmappedWidth:
    case cudaDevAttrMaxTexture2DLinearWidth:
    case cudaDevAttrMaxTexture2DMipmappedWidth:
    case cudaDevAttrMaxSurface1DWidth:
    case cudaDevAttrMaxSurface2DWidth: *value = 131072; return 1;
    case cudaDevAttrMaxTexture2DHeight:
    case cudaDevAttrMaxTexture2DLinearHeight:
    case cudaDevAttrMaxTexture2DMipmappedHeight:
    case cudaDevAttrMaxSurface2DHeight: *value = 65536; return 1;
    case cudaDevAttrMaxTexture1DLinearWidth: *value = 268435456; return 1;
    case cudaDevAttrMaxTexture2DLinearPitch: *value = 2097120; return 1;
    case cudaDevAttrMaxTexture2DGatherWidth:
    case cudaDevAttrMaxTexture2DGatherHeight: *value = 32768; return 1;
    case cudaDevAttrMaxTexture3DWidth:
    case cudaDevAttrMaxTexture3DHeight:
    case cudaDevAttrMaxTexture3DDepth:
    case cudaDevAttrMaxTexture3DWidthAlt:
    case cudaDevAttrMaxTexture3DHeightAlt:
    case cudaDevAttrMaxSurface3DWidth:
    case cudaDevAttrMaxSurface3DHeight:
    case cudaDevAttrMaxSurface3DDepth: *value = 16384; return 1;
    case cudaDevAttrMaxTexture3DDepthAlt: *value = 32768; return 1;
    case cudaDevAttrMaxTextureCubemapWidth:
    case cudaDevAttrMaxTextureCubemapLayeredWidth:
    case cudaDevAttrMaxSurfaceCubemapWidth:
    case cudaDevAttrMaxSurfaceCubemapLayeredWidth: *value = 32768; return 1;
    case cudaDevAttrMaxTexture1DLayeredWidth:
    case cudaDevAttrMaxSurface1DLayeredWidth: *value = 32768; return 1;
    case cudaDevAttrMaxTexture2DLayeredWidth:
    case cudaDevAttrMaxTexture2DLayeredHeight:
    case cudaDevAttrMaxSurface2DLayeredWidth:
    case cudaDevAttrMaxSurface2DLayeredHeight: *value = 32768; return 1;
    case cudaDevAttrMaxTexture1DLayeredLayers:
    case cudaDevAttrMaxTexture2DLayeredLayers:
    case cudaDevAttrMaxSurface1DLayeredLayers:
    case cudaDevAttrMaxSurface2DLayeredLayers: *value = 2048; return 1;
    case cudaDevAttrMaxTextureCubemapLayeredLayers:
    case cudaDevAttrMaxSurfaceCubemapLayeredLayers: *value = 2046; return 1;
    case cudaDevAttrSurfaceAlignment: *value = 512; return 1;
    case cudaDevAttrTexturePitchAlignment: *value = 32; return 1;
    case cudaDevAttrGpuOverlap:
    case cudaDevAttrComputePreemptionSupported:
    case cudaDevAttrGlobalL1CacheSupported:
    case cudaDevAttrLocalL1CacheSupported:
    case cudaDevAttrDirectManagedMemAccessFromHost:
    case cudaDevAttrCanUseHostPointerForRegisteredMem:
    case cudaDevAttrHostRegisterSupported:
    case cudaDevAttrHostRegisterReadOnlySupported:
    case cudaDevAttrIpcEventSupport:
    case cudaDevAttrDeferredMappingCudaArraySupported: *value = 1; return 1;
    case cudaDevAttrKernelExecTimeout:
    case cudaDevAttrIsMultiGpuBoard:
    case cudaDevAttrMultiGpuBoardGroupID:
    case cudaDevAttrTccDriver:
    case cudaDevAttrMpsEnabled:
    case cudaDevAttrHostNativeAtomicSupported:
    case cudaDevAttrOnlyPartialHostNativeAtomicSupported:
    case cudaDevAttrPageableMemoryAccessUsesHostPageTables:
    case cudaDevAttrCanFlushRemoteWrites:
    case cudaDevAttrGPUDirectRDMASupported:
    case cudaDevAttrGPUDirectRDMAFlushWritesOptions:
    case cudaDevAttrGPUDirectRDMAWritesOrdering:
    case cudaDevAttrSparseCudaArraySupported:
    case cudaDevAttrTimelineSemaphoreInteropSupported:
    case cudaDevAttrHostMemoryPoolsSupported:
    case cudaDevAttrHostNumaMemoryPoolsSupported:
    case cudaDevAttrHostNumaMultinodeIpcSupported:
    case cudaDevAttrNumaConfig:
    case cudaDevAttrD3D12CigSupported:
    case cudaDevAttrVulkanCigSupported:
    case cudaDevAttrGpuPciDeviceId:
    case cudaDevAttrGpuPciSubsystemId: *value = 0; return 1;
    case cudaDevAttrNumaId:
    case cudaDevAttrHostNumaId: *value = -1; return 1;
    case cudaDevAttrSingleToDoublePrecisionPerfRatio: *value = 2; return 1;
    case cudaDevAttrMaxAccessPolicyWindowSize: *value = 134213632; return 1;
    case cudaDevAttrMemSyncDomainCount: *value = 4; return 1;
    case cudaDevAttrMemoryPoolSupportedHandleTypes: *value = cudaMemHandleTypePosixFileDescriptor; return 1;
    default: return 0;
    }
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    struct cudaDeviceProp prop;
    if (!value)
        return sim_result(cudaErrorInvalidValue);
    if (device != 0)
        return sim_result(cudaErrorInvalidDevice);
    sim_fill_properties(&prop);
    return attribute_value(&prop, attr, value) || constant_attribute(attr, value) ? cudaSuccess
                                                                                  : sim_result(cudaErrorInvalidValue);
}
