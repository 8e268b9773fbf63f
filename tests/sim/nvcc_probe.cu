// An ordinary nvcc-built program (shared cudart, triple-chevron launch). On a GPU it runs the
// device kernel; with LD_LIBRARY_PATH=<build>/lib/sim it runs on the simulated device, where the
// launch reaches the host implementation registered for the kernel's device name.
// Exits 0 when the data came back scaled, 1 otherwise.
#include <cstdio>
#include <dlfcn.h>

__global__ void scale(int *data, int n, int factor)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        data[i] *= factor;
}

static void scale_on_host(void **args)
{
    int *data = *(int **)args[0];
    int n = *(int *)args[1], factor = *(int *)args[2];
    for (int i = 0; i < n; i++)
        data[i] *= factor;
}

int main()
{
    // Only the simulated device has this entry point; on a GPU the lookup fails and that is fine.
    typedef int (*register_fn)(const char *, void (*)(void **));
    register_fn reg = (register_fn)dlsym(RTLD_DEFAULT, "wssim_register_host_kernel");
    if (reg && reg("_Z5scalePiii", scale_on_host) != 0)
        return 1;
    int host[8] = {1, 2, 3, 4, 5, 6, 7, 8}, *dev = nullptr;
    cudaError_t err = cudaMalloc(&dev, sizeof host);
    if (err != cudaSuccess) {
        std::fprintf(stderr, "nvcc_probe: cudaMalloc: %s\n", cudaGetErrorString(err));
        return 1;
    }
    cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice);
    scale<<<1, 8>>>(dev, 8, 3);
    err = cudaGetLastError();
    if (err == cudaSuccess)
        err = cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost);
    cudaFree(dev);
    if (err != cudaSuccess || host[0] != 3 || host[7] != 24) {
        std::fprintf(stderr, "nvcc_probe: launch: %s, host[7]=%d\n", cudaGetErrorString(err), host[7]);
        return 1;
    }
    std::printf("nvcc_probe: ok on %s\n", reg ? "the simulated device" : "a GPU");
    return 0;
}
