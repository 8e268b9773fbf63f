/* A runtime program linked against the toolkit's libcudart.so, run on the simulated cudart, whose
 * calls reach the driver through cuGetProcAddress as on a GPU.  One scenario per argv[1]; each
 * prints the calls it made as "key=value" lines.
 *   runtime  cudaMalloc, cudaFree, cudaMallocHost, cudaFreeHost and cudaLaunchKernel
 *   entry    driver entry points fetched with cudaGetDriverEntryPoint[ByVersion] and called */
#include <stdio.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "layers_prog: %s\n", what);
        failures++;
    }
}

#define CHECK(call) check((call) == 0, #call)

static void add_one(void **args)
{
    int *data = *(int **)args[0];
    data[0] += 1;
}

static void runtime(void)
{
    unsigned mallocs = 0, frees = 0, host = 0, free_host = 0, launches = 0;
    void *p[4];
    for (int i = 0; i < 4; i++, mallocs++)
        CHECK(cudaMalloc(&p[i], (size_t)(i + 1) << 10));
    void *h;
    CHECK(cudaMallocHost(&h, 4096)), host++;
    void *args[] = {&p[0]};
    dim3 one = {1, 1, 1};
    for (int i = 0; i < 3; i++, launches++)
        CHECK(cudaLaunchKernel((const void *)add_one, one, one, args, 0, NULL));
    CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < 4; i++, frees++)
        CHECK(cudaFree(p[i]));
    CHECK(cudaFreeHost(h)), free_host++;
    printf("cudaMalloc=%u\ncudaFree=%u\ncudaMallocHost=%u\ncudaFreeHost=%u\ncudaLaunchKernel=%u\n", mallocs, frees,
           host, free_host, launches);
}

/* The forms code built with --default-stream per-thread calls (cuda_runtime_api.h renames the
 * lookups there); declared here, as this program is built for the legacy stream. */
cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                                  unsigned long long flags,
                                                  enum cudaDriverEntryPointQueryResult *driverStatus);

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static void entry(void)
{
    CUresult (*alloc)(CUdeviceptr *, size_t) = NULL;
    CUresult (*release)(CUdeviceptr) = NULL;
    CUresult (*alloc_async)(CUdeviceptr *, size_t, CUstream) = NULL;
    CUresult (*free_async)(CUdeviceptr, CUstream) = NULL;
    enum cudaDriverEntryPointQueryResult st;
    CHECK(cudaFree(NULL)); /* the context */
    CHECK(cudaGetDriverEntryPoint("cuMemAlloc", (void **)&alloc, cudaEnableDefault, &st));
    CHECK(cudaGetDriverEntryPoint("cuMemFree", (void **)&release, cudaEnableDefault, &st));
    CHECK(cudaGetDriverEntryPointByVersion("cuMemAllocAsync", (void **)&alloc_async, 12000,
                                           cudaEnablePerThreadDefaultStream, &st));
    CHECK(cudaGetDriverEntryPointByVersion("cuMemFreeAsync", (void **)&free_async, 12000,
                                           cudaEnablePerThreadDefaultStream, &st));
    /* Through the per-thread lookups with the default flags: the per-thread forms where there
     * are any (cuMemFree has none). */
    CUresult (*alloc_ptsz)(CUdeviceptr *, size_t, CUstream) = NULL;
    CUresult (*release_ptsz)(CUdeviceptr) = NULL;
    CHECK(
        cudaGetDriverEntryPointByVersion_ptsz("cuMemAllocAsync", (void **)&alloc_ptsz, 12000, cudaEnableDefault, &st));
    CHECK(cudaGetDriverEntryPoint_ptsz("cuMemFree", (void **)&release_ptsz, cudaEnableDefault, &st));
    if (!alloc || !release || !alloc_async || !free_async || !alloc_ptsz || !release_ptsz) {
        fprintf(stderr, "layers_prog: an entry point is missing\n");
        failures++;
        return;
    }
    unsigned allocs = 0, frees = 0, async = 0, free_asyncs = 0;
    CUdeviceptr d[2], a;
    for (int i = 0; i < 2; i++, allocs++)
        CHECK(alloc(&d[i], 10000));
    CHECK(alloc_async(&a, 20000, NULL)), async++;
    CHECK(free_async(a, NULL)), free_asyncs++;
    for (int i = 0; i < 2; i++, frees++)
        CHECK(release(d[i]));
    CUdeviceptr b;
    CHECK(alloc_ptsz(&b, 30000, NULL)), async++;
    CHECK(release_ptsz(b)), frees++;
    CHECK(cudaDeviceSynchronize());
    printf("cuMemAlloc_v2=%u\ncuMemFree_v2=%u\ncuMemAllocAsync_ptsz=%u\ncuMemFreeAsync_ptsz=%u\n", allocs, frees, async,
           free_asyncs);
}
#pragma GCC diagnostic pop

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "runtime") == 0)
        runtime();
    else if (argc == 2 && strcmp(argv[1], "entry") == 0)
        entry();
    else {
        fprintf(stderr, "usage: layers_prog runtime|entry\n");
        return 2;
    }
    return failures ? 1 : 0;
}
