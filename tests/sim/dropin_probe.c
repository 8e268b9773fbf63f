/* Linked against the real libcudart.so, not libwssim: run with LD_LIBRARY_PATH pointing at the
 * simulated device's folder, it must run on the simulated device — allocation succeeds where the
 * real runtime fails without a GPU, and nvcc's launch path reaches a registered host kernel.
 * Exits 0 on success; otherwise prints what failed and exits 1. */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "wssim_nvcc.h"

static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "dropin_probe: %s\n", what);
        failures++;
    }
}

static void double_kernel(void **args)
{
    int *data = *(int **)args[0];
    int n = *(int *)args[1];
    for (int i = 0; i < n; i++)
        data[i] *= 2;
}

static char stub; /* stands for the host stub of __global__ void twice(int *, int) */

/* The calls an nvcc 13 module constructor and a twice<<<1, n>>>(data, n) stub make. */
static cudaError_t launch_like_nvcc(int *data, int n)
{
    static char fat_binary[8];
    void **module = __cudaRegisterFatBinary(fat_binary);
    __cudaRegisterFunction(module, &stub, &stub, "_Z5twicePii", -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFatBinaryEnd(module);
    cudaKernel_t handle = NULL;
    cudaError_t err = __cudaGetKernel(&handle, &stub);
    if (err != cudaSuccess)
        return err;
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
    __cudaPushCallConfiguration((dim3){1, 1, 1}, (dim3){(unsigned)n, 1, 1}, 0, NULL);
    err = __cudaPopCallConfiguration(&grid, &block, &smem, &stream);
    if (err != cudaSuccess)
        return err;
    void *args[] = {&data, &n};
    err = __cudaLaunchKernel(handle, grid, block, args, smem, stream);
    __cudaUnregisterFatBinary(module);
    return err;
}

int main(void)
{
    /* Which file did the loader pick for libcudart.so.13? */
    void *cudart = dlopen("libcudart.so.13", RTLD_LAZY | RTLD_NOLOAD);
    struct link_map *map = NULL;
    check(cudart && dlinfo(cudart, RTLD_DI_LINKMAP, &map) == 0 && strstr(map->l_name, "lib/sim/libcudart.so.13"),
          "libcudart.so.13 was not loaded from lib/sim");
    /* wssim's own API is not part of cudart: find it at run time. */
    int (*is_simulated)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "wssim_is_simulated");
    int (*register_kernel)(const char *, void (*)(void **)) =
        (int (*)(const char *, void (*)(void **)))dlsym(RTLD_DEFAULT, "wssim_register_host_kernel");
    check(is_simulated && is_simulated() == 1, "wssim_is_simulated missing");
    check(register_kernel && register_kernel("_Z5twicePii", double_kernel) == 0, "wssim_register_host_kernel missing");
    if (failures)
        return 1;

    int host[4] = {1, 2, 3, 4}, *dev = NULL;
    cudaError_t err = cudaMalloc((void **)&dev, sizeof host);
    check(err == cudaSuccess, cudaGetErrorString(err));
    if (err != cudaSuccess)
        return 1;
    check(cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice) == cudaSuccess, "memcpy in");
    check(launch_like_nvcc(dev, 4) == cudaSuccess, "nvcc-style launch failed");
    check(cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost) == cudaSuccess, "memcpy out");
    check(host[0] == 2 && host[3] == 8, "the host kernel did not run");
    check(cudaFree(dev) == cudaSuccess, "cudaFree");
    check(cudaFree(dev) == cudaErrorInvalidValue, "double free not refused");
    return failures ? 1 : 0;
}
