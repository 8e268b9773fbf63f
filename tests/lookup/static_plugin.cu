// A plugin library with a runtime of its own (nvcc -cudart static): loading it is enough for the
// tracer to report the blind spot it brings.
#include <cuda_runtime.h>

extern "C" int static_plugin_devices(void)
{
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : -1;
}
