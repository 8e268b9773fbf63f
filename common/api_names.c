#include "spool_format.h"

static const char *const api_names[WS_API_COUNT] = {
    [WS_API_NONE] = "none",
    [WS_API_cudaMalloc] = "cudaMalloc",
    [WS_API_cudaFree] = "cudaFree",
    [WS_API_cudaMallocAsync] = "cudaMallocAsync",
    [WS_API_cudaFreeAsync] = "cudaFreeAsync",
    [WS_API_cudaMallocFromPoolAsync] = "cudaMallocFromPoolAsync",
    [WS_API_cudaMallocManaged] = "cudaMallocManaged",
    [WS_API_cudaMallocPitch] = "cudaMallocPitch",
    [WS_API_cudaMallocHost] = "cudaMallocHost",
    [WS_API_cudaHostAlloc] = "cudaHostAlloc",
    [WS_API_cudaFreeHost] = "cudaFreeHost",
    [WS_API_cudaLaunchKernel] = "cudaLaunchKernel",
    [WS_API_cudaLaunchKernelExC] = "cudaLaunchKernelExC",
    [WS_API_cudaLaunchCooperativeKernel] = "cudaLaunchCooperativeKernel",
    [WS_API_cudaGraphLaunch] = "cudaGraphLaunch",
    [WS_API___cudaLaunchKernel] = "__cudaLaunchKernel",
    [WS_API___cudaLaunchKernel_ptsz] = "__cudaLaunchKernel_ptsz",
    [WS_API_nvtx] = "nvtx",
    [WS_API_wstrace] = "wstrace",
};

const char *ws_api_name(unsigned api) { return api < WS_API_COUNT && api_names[api] ? api_names[api] : "unknown"; }
