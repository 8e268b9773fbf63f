// Built with nvcc --default-stream per-thread -cudart shared: every stream-ordered call becomes its
// _ptsz form.  N cudaMallocAsync/cudaFreeAsync pairs (sizes 256 + i) on the per-thread default
// stream and K <<<>>> launches.  Runs on the simulated device with LD_LIBRARY_PATH=<build>/lib/sim.
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>

__global__ void bump(int *counter) { atomicAdd(counter, 1); }

static void bump_on_host(void **args)
{
    int *counter = *(int **)args[0];
    __atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
}

int main(int argc, char **argv)
{
    int n = argc > 2 ? std::atoi(argv[1]) : 1, k = argc > 2 ? std::atoi(argv[2]) : 1;
    typedef int (*register_fn)(const char *, void (*)(void **));
    register_fn reg = (register_fn)dlsym(RTLD_DEFAULT, "wssim_register_host_kernel");
    if (reg && reg("_Z4bumpPi", bump_on_host) != 0)
        return 1;
    for (int i = 0; i < n; i++) {
        void *p = nullptr;
        if (cudaMallocAsync(&p, 256 + i, 0) != cudaSuccess || cudaFreeAsync(p, 0) != cudaSuccess)
            return 1;
    }
    int *counter = nullptr;
    if (cudaMallocManaged(&counter, sizeof *counter) != cudaSuccess)
        return 1;
    *counter = 0;
    for (int i = 0; i < k; i++)
        bump<<<1, 1>>>(counter);
    if (cudaStreamSynchronize(0) != cudaSuccess)
        return 1;
    std::printf("mallocs=%d\nlaunches=%d\ncounter=%d\n", n, k, *counter);
    cudaFree(counter);
    return 0;
}
