/* A driver-API program, linked against the toolkit's libcuda.so stub (so it needs libcuda.so.1
 * and nothing else) and run on the simulated device with LD_LIBRARY_PATH=<build>/lib/sim: the
 * calls vectorAddDrv and memory pools built on virtual memory make.  The device's own counters
 * (wssim_get_stats, found with dlsym) must match the calls the program made; it prints
 * "allocs=", "frees=", "launches=", "peak=" and exits 0, or prints what failed and exits 1. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#include "wssim.h"

static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "driver_prog: %s\n", what);
        failures++;
    }
}

#define CHECK(call) check((call) == CUDA_SUCCESS, #call)

static void vector_add(void **args)
{
    const float *a = *(const float **)args[0], *b = *(const float **)args[1];
    float *c = *(float **)args[2];
    int n = *(int *)args[3];
    for (int i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}

int main(void)
{
    void (*get_stats)(struct wssim_stats *) = (void (*)(struct wssim_stats *))dlsym(RTLD_DEFAULT, "wssim_get_stats");
    int (*reg)(const char *, void (*)(void **)) =
        (int (*)(const char *, void (*)(void **)))dlsym(RTLD_DEFAULT, "wssim_register_host_kernel");
    if (!get_stats || !reg) {
        fprintf(stderr, "driver_prog: not on the simulated device (wssim_get_stats missing)\n");
        return 1;
    }
    check(reg("VecAdd_kernel", vector_add) == 0, "register VecAdd_kernel");
    unsigned allocs = 0, frees = 0, launches = 0;

    CUdevice dev;
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    char name[128];
    CHECK(cuDeviceGetName(name, sizeof name, dev));
    int major = 0;
    CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    check(major >= 7, "compute capability");
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));

    CUmodule mod;
    CUfunction f;
    CHECK(cuModuleLoadData(&mod, "a module image"));
    CHECK(cuModuleGetFunction(&f, mod, "VecAdd_kernel"));
    enum { N = 1000 };
    static float ha[N], hb[N], hc[N];
    for (int i = 0; i < N; i++)
        ha[i] = (float)i, hb[i] = 2.0f * (float)i;
    CUdeviceptr da, db, dc;
    CHECK(cuMemAlloc(&da, sizeof ha)), allocs++;
    CHECK(cuMemAlloc(&db, sizeof hb)), allocs++;
    CHECK(cuMemAlloc(&dc, sizeof hc)), allocs++;
    CHECK(cuMemcpyHtoD(da, ha, sizeof ha));
    CHECK(cuMemcpyHtoD(db, hb, sizeof hb));
    int n = N;
    void *args[] = {&da, &db, &dc, &n};
    for (int i = 0; i < 3; i++, launches++)
        CHECK(cuLaunchKernel(f, (N + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
    CHECK(cuCtxSynchronize());
    CHECK(cuMemcpyDtoH(hc, dc, sizeof hc));
    check(hc[10] == 30.0f && hc[N - 1] == 3.0f * (N - 1), "the kernel computed a + b");

    /* A growable pool on virtual memory: reserve once, map physical chunks as it grows. */
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    size_t granule = 0;
    CHECK(cuMemGetAllocationGranularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    enum { CHUNKS = 3 };
    CUdeviceptr va;
    CUmemGenericAllocationHandle chunk[CHUNKS];
    CHECK(cuMemAddressReserve(&va, CHUNKS * granule, 0, 0, 0));
    CUmemAccessDesc access;
    memset(&access, 0, sizeof access);
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    for (int i = 0; i < CHUNKS; i++, allocs++) {
        CHECK(cuMemCreate(&chunk[i], granule, &prop, 0));
        CHECK(cuMemMap(va + i * granule, granule, 0, chunk[i], 0));
        CHECK(cuMemSetAccess(va + i * granule, granule, &access, 1));
    }
    CHECK(cuMemsetD32(va, 0x01010101u, CHUNKS * granule / 4));
    unsigned last = 0;
    CHECK(cuMemcpyDtoH(&last, va + CHUNKS * granule - 4, 4));
    check(last == 0x01010101u, "the pool's last chunk is mapped and written");
    struct wssim_stats s;
    get_stats(&s);
    unsigned long long peak = s.peak_bytes;
    CHECK(cuMemUnmap(va, CHUNKS * granule));
    for (int i = 0; i < CHUNKS; i++, frees++)
        CHECK(cuMemRelease(chunk[i]));
    CHECK(cuMemAddressFree(va, CHUNKS * granule));

    CHECK(cuMemFree(da)), frees++;
    CHECK(cuMemFree(db)), frees++;
    CHECK(cuMemFree(dc)), frees++;
    CHECK(cuModuleUnload(mod));
    CHECK(cuDevicePrimaryCtxRelease(dev));

    get_stats(&s);
    check(s.alloc_calls == allocs, "the device counted the program's allocations");
    check(s.free_calls == frees, "the device counted the program's frees");
    check(s.launches == launches, "the device counted the program's launches");
    check(peak == 3 * sizeof ha + CHUNKS * granule, "peak: the three vectors and the pool's chunks");
    check(s.live_bytes == 0, "everything was freed");
    printf("allocs=%u\nfrees=%u\nlaunches=%u\npeak=%llu\n", allocs, frees, launches, peak);
    return failures ? 1 : 0;
}
