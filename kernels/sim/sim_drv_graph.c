/* The driver's graphs and arrays: the runtime's implementations under the driver's names and
 * parameter structures.  Graph handles are shared (a CUgraph is a cudaGraph_t), so a graph made
 * with either API may be filled, instantiated and launched with the other.  Kernel nodes name
 * CUfunctions (module functions or the runtime's kernel handles). */
#include <string.h>

#include "sim_driver.h"

CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags) { return DRV(cudaGraphCreate(phGraph, flags)); }
CUresult cuGraphDestroy(CUgraph hGraph) { return DRV(cudaGraphDestroy(hGraph)); }
CUresult cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
{
    return DRV(cudaGraphClone(phGraphClone, originalGraph));
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
    return DRV(cudaGraphInstantiateWithFlags(phGraphExec, hGraph, flags));
}

/* CUDA_GRAPH_INSTANTIATE_PARAMS and cudaGraphInstantiateParams share their layout. */
_Static_assert(sizeof(CUDA_GRAPH_INSTANTIATE_PARAMS) == sizeof(cudaGraphInstantiateParams), "instantiate params");
CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    return DRV(
        cudaGraphInstantiateWithParams(phGraphExec, hGraph, (cudaGraphInstantiateParams *)(void *)instantiateParams));
}
DRV_ALIAS(cuGraphInstantiateWithParams_ptsz, cuGraphInstantiateWithParams);

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) { return DRV(cudaGraphExecDestroy(hGraphExec)); }
CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) { return DRV(cudaGraphLaunch(hGraphExec, hStream)); }
CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) { return DRV(cudaGraphUpload(hGraphExec, hStream)); }
DRV_ALIAS(cuGraphLaunch_ptsz, cuGraphLaunch);
DRV_ALIAS(cuGraphUpload_ptsz, cuGraphUpload);

CUresult cuGraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t *flags)
{
    return DRV(cudaGraphExecGetFlags(hGraphExec, (unsigned long long *)flags));
}

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    return DRV(cudaGraphGetNodes(hGraph, nodes, numNodes));
}
CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode *rootNodes, size_t *numRootNodes)
{
    return DRV(cudaGraphGetRootNodes(hGraph, rootNodes, numRootNodes));
}
CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    return DRV(cudaGraphNodeGetType(hNode, (enum cudaGraphNodeType *)type)); /* the same numbering */
}
CUresult cuGraphDestroyNode(CUgraphNode hNode) { return DRV(cudaGraphDestroyNode(hNode)); }

_Static_assert(sizeof(CUgraphEdgeData) == sizeof(cudaGraphEdgeData), "edge data");
CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                                const CUgraphEdgeData *edgeData, size_t numDependencies)
{
    return DRV(cudaGraphAddDependencies(hGraph, from, to, (const cudaGraphEdgeData *)edgeData, numDependencies));
}
CUresult cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *edgeData,
                         size_t *numEdges)
{
    return DRV(cudaGraphGetEdges(hGraph, from, to, (cudaGraphEdgeData *)edgeData, numEdges));
}
CUresult cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode *dependencies, CUgraphEdgeData *edgeData,
                                    size_t *numDependencies)
{
    return DRV(cudaGraphNodeGetDependencies(hNode, dependencies, (cudaGraphEdgeData *)edgeData, numDependencies));
}
CUresult cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode *dependentNodes, CUgraphEdgeData *edgeData,
                                      size_t *numDependentNodes)
{
    return DRV(cudaGraphNodeGetDependentNodes(hNode, dependentNodes, (cudaGraphEdgeData *)edgeData, numDependentNodes));
}

CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                             size_t numDependencies)
{
    return DRV(cudaGraphAddEmptyNode(phGraphNode, hGraph, dependencies, numDependencies));
}

CUresult cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                  size_t numDependencies, CUgraph childGraph)
{
    return DRV(cudaGraphAddChildGraphNode(phGraphNode, hGraph, dependencies, numDependencies, childGraph));
}

_Static_assert(sizeof(CUDA_HOST_NODE_PARAMS) == sizeof(struct cudaHostNodeParams), "host node params");
CUresult cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                            size_t numDependencies, const CUDA_HOST_NODE_PARAMS *nodeParams)
{
    return DRV(cudaGraphAddHostNode(phGraphNode, hGraph, dependencies, numDependencies,
                                    (const struct cudaHostNodeParams *)(const void *)nodeParams));
}

CUresult cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                   size_t numDependencies, CUevent event)
{
    return DRV(cudaGraphAddEventRecordNode(phGraphNode, hGraph, dependencies, numDependencies, event));
}
CUresult cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                 size_t numDependencies, CUevent event)
{
    return DRV(cudaGraphAddEventWaitNode(phGraphNode, hGraph, dependencies, numDependencies, event));
}

/* CUDA_MEMSET_NODE_PARAMS: dst, pitch, value, elementSize, width, height, as cudaMemsetParams. */
_Static_assert(sizeof(CUDA_MEMSET_NODE_PARAMS) == sizeof(struct cudaMemsetParams), "memset node params");
CUresult cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                              size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx)
{
    (void)ctx;
    return DRV(cudaGraphAddMemsetNode(phGraphNode, hGraph, dependencies, numDependencies,
                                      (const struct cudaMemsetParams *)(const void *)memsetParams));
}

/* A linear 1D copy (the form libraries use); 2D/3D and array copies through the runtime's nodes. */
CUresult cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                              size_t numDependencies, const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
    (void)ctx;
    if (!copyParams)
        return CUDA_ERROR_INVALID_VALUE;
    const CUDA_MEMCPY3D *p = copyParams;
    if (p->srcMemoryType == CU_MEMORYTYPE_ARRAY || p->dstMemoryType == CU_MEMORYTYPE_ARRAY ||
        (p->Height > 1 || p->Depth > 1) || p->srcXInBytes || p->dstXInBytes || p->srcY || p->dstY || p->srcZ || p->dstZ)
        return CUDA_ERROR_NOT_SUPPORTED;
    void *dst = p->dstMemoryType == CU_MEMORYTYPE_HOST ? p->dstHost : drv_ptr(p->dstDevice);
    const void *src = p->srcMemoryType == CU_MEMORYTYPE_HOST ? p->srcHost : drv_ptr(p->srcDevice);
    return DRV(cudaGraphAddMemcpyNode1D(phGraphNode, hGraph, dependencies, numDependencies, dst, src, p->WidthInBytes,
                                        cudaMemcpyDefault));
}

/* CUDA_MEM_ALLOC_NODE_PARAMS: pool properties, access descriptors, size, address, as the runtime's. */
_Static_assert(sizeof(CUDA_MEM_ALLOC_NODE_PARAMS) == sizeof(struct cudaMemAllocNodeParams), "alloc node params");
CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
    return DRV(cudaGraphAddMemAllocNode(phGraphNode, hGraph, dependencies, numDependencies,
                                        (struct cudaMemAllocNodeParams *)(void *)nodeParams));
}
CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
    return DRV(cudaGraphMemAllocNodeGetParams(hNode, (struct cudaMemAllocNodeParams *)(void *)params_out));
}
CUresult cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                               size_t numDependencies, CUdeviceptr dptr)
{
    return DRV(cudaGraphAddMemFreeNode(phGraphNode, hGraph, dependencies, numDependencies, drv_ptr(dptr)));
}
CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out)
{
    return DRV(cudaGraphMemFreeNodeGetParams(hNode, dptr_out));
}

CUresult cuDeviceGraphMemTrim(CUdevice device) { return DRV(cudaDeviceGraphMemTrim(device)); }
CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value)
{
    return DRV(cudaDeviceGetGraphMemAttribute(device, (enum cudaGraphMemAttributeType)attr, value));
}
CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value)
{
    return DRV(cudaDeviceSetGraphMemAttribute(device, (enum cudaGraphMemAttributeType)attr, value));
}

/* Kernel nodes: the driver's parameters name a CUfunction (or a CUkernel, the same handle here)
 * and the grid by its components. */
static struct cudaKernelNodeParams runtime_kernel_params(const CUDA_KERNEL_NODE_PARAMS *p)
{
    struct cudaKernelNodeParams r;
    memset(&r, 0, sizeof r);
    r.func = p->func ? (void *)p->func : (void *)p->kern;
    r.gridDim = (dim3){p->gridDimX, p->gridDimY, p->gridDimZ};
    r.blockDim = (dim3){p->blockDimX, p->blockDimY, p->blockDimZ};
    r.sharedMemBytes = p->sharedMemBytes;
    r.kernelParams = p->kernelParams;
    r.extra = p->extra;
    return r;
}

CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                              size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    struct cudaKernelNodeParams r = runtime_kernel_params(nodeParams);
    if (!sim_is_kernel_handle(r.func))
        return CUDA_ERROR_INVALID_HANDLE;
    return DRV(cudaGraphAddKernelNode(phGraphNode, hGraph, dependencies, numDependencies, &r));
}

/* The queries a tool walking a graph through the driver asks (a node's parameters, its event). */
CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    struct cudaKernelNodeParams r;
    memset(&r, 0, sizeof r);
    CUresult rc = DRV(cudaGraphKernelNodeGetParams(hNode, &r));
    if (rc != CUDA_SUCCESS)
        return rc;
    memset(nodeParams, 0, sizeof *nodeParams);
    nodeParams->func = (CUfunction)r.func;
    nodeParams->gridDimX = r.gridDim.x, nodeParams->gridDimY = r.gridDim.y, nodeParams->gridDimZ = r.gridDim.z;
    nodeParams->blockDimX = r.blockDim.x, nodeParams->blockDimY = r.blockDim.y, nodeParams->blockDimZ = r.blockDim.z;
    nodeParams->sharedMemBytes = r.sharedMemBytes;
    nodeParams->kernelParams = r.kernelParams;
    nodeParams->extra = r.extra;
    return CUDA_SUCCESS;
}

/* Addresses of the simulated device are host addresses: a copy's pointers are unified memory. */
CUresult cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D *nodeParams)
{
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    struct cudaMemcpy3DParms r;
    memset(&r, 0, sizeof r);
    CUresult rc = DRV(cudaGraphMemcpyNodeGetParams(hNode, &r));
    if (rc != CUDA_SUCCESS)
        return rc;
    memset(nodeParams, 0, sizeof *nodeParams);
    nodeParams->srcMemoryType = r.srcArray ? CU_MEMORYTYPE_ARRAY : CU_MEMORYTYPE_UNIFIED;
    nodeParams->srcArray = (CUarray)r.srcArray;
    nodeParams->srcDevice = (CUdeviceptr)(uintptr_t)r.srcPtr.ptr;
    nodeParams->srcPitch = r.srcPtr.pitch;
    nodeParams->dstMemoryType = r.dstArray ? CU_MEMORYTYPE_ARRAY : CU_MEMORYTYPE_UNIFIED;
    nodeParams->dstArray = (CUarray)r.dstArray;
    nodeParams->dstDevice = (CUdeviceptr)(uintptr_t)r.dstPtr.ptr;
    nodeParams->dstPitch = r.dstPtr.pitch;
    nodeParams->WidthInBytes = r.extent.width;
    nodeParams->Height = r.extent.height;
    nodeParams->Depth = r.extent.depth;
    return CUDA_SUCCESS;
}

CUresult cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS *nodeParams)
{
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    struct cudaMemsetParams r;
    memset(&r, 0, sizeof r);
    CUresult rc = DRV(cudaGraphMemsetNodeGetParams(hNode, &r));
    if (rc != CUDA_SUCCESS)
        return rc;
    memset(nodeParams, 0, sizeof *nodeParams);
    nodeParams->dst = (CUdeviceptr)(uintptr_t)r.dst;
    nodeParams->pitch = r.pitch;
    nodeParams->value = r.value;
    nodeParams->elementSize = r.elementSize;
    nodeParams->width = r.width;
    nodeParams->height = r.height;
    return CUDA_SUCCESS;
}

CUresult cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS *nodeParams)
{
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    struct cudaHostNodeParams r;
    memset(&r, 0, sizeof r);
    CUresult rc = DRV(cudaGraphHostNodeGetParams(hNode, &r));
    if (rc == CUDA_SUCCESS) {
        nodeParams->fn = (CUhostFn)r.fn;
        nodeParams->userData = r.userData;
    }
    return rc;
}

CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent *event_out)
{
    return DRV(cudaGraphEventRecordNodeGetEvent(hNode, (cudaEvent_t *)event_out));
}

CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent *event_out)
{
    return DRV(cudaGraphEventWaitNodeGetEvent(hNode, (cudaEvent_t *)event_out));
}

CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    struct cudaKernelNodeParams r = runtime_kernel_params(nodeParams);
    return DRV(cudaGraphKernelNodeSetParams(hNode, &r));
}

CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                        const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    struct cudaKernelNodeParams r = runtime_kernel_params(nodeParams);
    return DRV(cudaGraphExecKernelNodeSetParams(hGraphExec, hNode, &r));
}

CUresult cuGraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int isEnabled)
{
    return DRV(cudaGraphNodeSetEnabled(hGraphExec, hNode, isEnabled));
}
CUresult cuGraphNodeGetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int *isEnabled)
{
    return DRV(cudaGraphNodeGetEnabled(hGraphExec, hNode, isEnabled));
}

_Static_assert(sizeof(CUgraphExecUpdateResultInfo) == sizeof(cudaGraphExecUpdateResultInfo), "update result");
CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo)
{
    return DRV(cudaGraphExecUpdate(hGraphExec, hGraph, (cudaGraphExecUpdateResultInfo *)(void *)resultInfo));
}

/* ---- arrays ---- */

/* The channel layout of a driver array format: element bits per channel and kind. */
static int channel_of(CUarray_format format, unsigned channels, struct cudaChannelFormatDesc *desc)
{
    int bits;
    enum cudaChannelFormatKind kind;
    switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8: bits = 8, kind = cudaChannelFormatKindUnsigned; break;
    case CU_AD_FORMAT_UNSIGNED_INT16: bits = 16, kind = cudaChannelFormatKindUnsigned; break;
    case CU_AD_FORMAT_UNSIGNED_INT32: bits = 32, kind = cudaChannelFormatKindUnsigned; break;
    case CU_AD_FORMAT_SIGNED_INT8: bits = 8, kind = cudaChannelFormatKindSigned; break;
    case CU_AD_FORMAT_SIGNED_INT16: bits = 16, kind = cudaChannelFormatKindSigned; break;
    case CU_AD_FORMAT_SIGNED_INT32: bits = 32, kind = cudaChannelFormatKindSigned; break;
    case CU_AD_FORMAT_HALF: bits = 16, kind = cudaChannelFormatKindFloat; break;
    case CU_AD_FORMAT_FLOAT: bits = 32, kind = cudaChannelFormatKindFloat; break;
    default: return -1;
    }
    if (channels != 1 && channels != 2 && channels != 4)
        return -1;
    *desc = (struct cudaChannelFormatDesc){bits, channels > 1 ? bits : 0, channels > 2 ? bits : 0,
                                           channels > 2 ? bits : 0, kind};
    return 0;
}

CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    struct cudaChannelFormatDesc desc;
    if (!pAllocateArray || channel_of(pAllocateArray->Format, pAllocateArray->NumChannels, &desc) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return DRV(cudaMallocArray((cudaArray_t *)pHandle, &desc, pAllocateArray->Width, pAllocateArray->Height, 0));
}

CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    struct cudaChannelFormatDesc desc;
    if (!pAllocateArray || channel_of(pAllocateArray->Format, pAllocateArray->NumChannels, &desc) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct cudaExtent extent = {pAllocateArray->Width, pAllocateArray->Height, pAllocateArray->Depth};
    return DRV(cudaMalloc3DArray((cudaArray_t *)pHandle, &desc, extent, pAllocateArray->Flags));
}

CUresult cuArrayDestroy(CUarray hArray) { return DRV(cudaFreeArray((cudaArray_t)hArray)); }

CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                unsigned int numMipmapLevels)
{
    struct cudaChannelFormatDesc desc;
    if (!pMipmappedArrayDesc || channel_of(pMipmappedArrayDesc->Format, pMipmappedArrayDesc->NumChannels, &desc) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct cudaExtent extent = {pMipmappedArrayDesc->Width, pMipmappedArrayDesc->Height, pMipmappedArrayDesc->Depth};
    return DRV(cudaMallocMipmappedArray((cudaMipmappedArray_t *)pHandle, &desc, extent, numMipmapLevels,
                                        pMipmappedArrayDesc->Flags));
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    return DRV(cudaFreeMipmappedArray((cudaMipmappedArray_t)hMipmappedArray));
}
