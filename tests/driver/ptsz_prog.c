/* The direct driver program of a per-thread default stream build: compiled with
 * CUDA_API_PER_THREAD_DEFAULT_STREAM, so cuda.h maps its stream-ordered calls to their _ptsz
 * forms.  Prints the calls it made ("allocs=", "frees=", "launches=", "launches_ex=",
 * "graph_launches="). */
#include <dlfcn.h>
#include <stdio.h>

#include <cuda.h>

static int failures;
#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        if ((call) != CUDA_SUCCESS) {                                                                                  \
            fprintf(stderr, "ptsz_prog: %s\n", #call);                                                                 \
            failures++;                                                                                                \
        }                                                                                                              \
    } while (0)

static void touch(void **args) { (void)args; }

int main(void)
{
    int (*reg)(const char *, void (*)(void **)) =
        (int (*)(const char *, void (*)(void **)))dlsym(RTLD_DEFAULT, "wssim_register_host_kernel");
    if (!reg || reg("touch_kernel", touch) != 0) {
        fprintf(stderr, "ptsz_prog: not on the simulated driver\n");
        return 1;
    }
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CHECK(cuInit(0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&mod, "a module image"));
    CHECK(cuModuleGetFunction(&f, mod, "touch_kernel"));
    unsigned allocs = 0, frees = 0, launches = 0, launches_ex = 0;
    CUdeviceptr p[4];
    for (int i = 0; i < 4; i++, allocs++)
        CHECK(cuMemAllocAsync(&p[i], 4096, 0)); /* the per-thread stream */
    for (int i = 0; i < 3; i++, launches++)
        CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, 0, NULL, NULL));
    CUlaunchConfig config = {
        .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1};
    CHECK(cuLaunchKernelEx(&config, f, NULL, NULL));
    launches_ex++;
    for (int i = 0; i < 4; i++, frees++)
        CHECK(cuMemFreeAsync(p[i], 0));
    CHECK(cuStreamSynchronize(0));
    printf("allocs=%u\nfrees=%u\nlaunches=%u\nlaunches_ex=%u\n", allocs, frees, launches, launches_ex);
    return failures ? 1 : 0;
}
