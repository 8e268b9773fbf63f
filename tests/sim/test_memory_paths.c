/* The other allocation paths of the simulated device: arrays, mipmapped arrays, 3D allocations
 * and copies, memory pools with their attributes, host registration and IPC handles.  Expected
 * byte counts are derived in the comments from each call's arguments. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "wssim.h"

#define MiB ((uint64_t)1 << 20)

/* cuda_runtime.h's make_cuda* helpers are C++-only in spirit (driver_functions.h); ours: */
static struct cudaExtent extent(size_t w, size_t h, size_t d) { return (struct cudaExtent){w, h, d}; }
static struct cudaPos pos(size_t x, size_t y, size_t z) { return (struct cudaPos){x, y, z}; }

static struct wssim_stats stats(void)
{
    struct wssim_stats s;
    wssim_get_stats(&s);
    return s;
}

/* ---- arrays ---- */

Test(sim_arrays, arrays_count_their_elements)
{
    struct cudaChannelFormatDesc f4 = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
    struct cudaChannelFormatDesc rgba8 = cudaCreateChannelDesc(8, 8, 8, 8, cudaChannelFormatKindUnsigned);
    cudaArray_t a, b, c;
    cr_assert_eq(cudaMallocArray(&a, &f4, 100, 30, 0), cudaSuccess);
    cr_expect_eq(stats().live_bytes, 100 * 30 * 4);
    cr_assert_eq(cudaMallocArray(&b, &rgba8, 50, 0, 0), cudaSuccess, "a 1D array");
    cr_expect_eq(stats().live_bytes, 12000 + 50 * 4);
    cr_assert_eq(cudaMalloc3DArray(&c, &f4, extent(8, 4, 2), 0), cudaSuccess);
    cr_expect_eq(stats().live_bytes, 12000 + 200 + 8 * 4 * 2 * 4);
    struct cudaExtent e;
    struct cudaChannelFormatDesc d;
    (void)pos;
    unsigned flags = 9;
    cr_expect_eq(cudaArrayGetInfo(&d, &e, &flags, c), cudaSuccess);
    cr_expect_eq(e.width, 8);
    cr_expect_eq(e.depth, 2);
    cr_expect_eq(d.x, 32);
    cr_expect_eq(flags, 0);
    struct cudaChannelFormatDesc bad = cudaCreateChannelDesc(12, 0, 0, 0, cudaChannelFormatKindFloat);
    cudaArray_t z;
    cr_expect_eq(cudaMallocArray(&z, &bad, 4, 4, 0), cudaErrorInvalidChannelDescriptor, "12 bits is no element");
    cr_expect_eq(cudaMallocArray(&z, &f4, 0, 4, 0), cudaErrorInvalidValue);
    cr_expect_eq(cudaFreeArray(a), cudaSuccess);
    cr_expect_eq(cudaFreeArray(a), cudaErrorInvalidValue);
    cr_expect_eq(cudaFreeArray(b), cudaSuccess);
    cr_expect_eq(cudaFreeArray(c), cudaSuccess);
    struct wssim_stats s = stats();
    cr_expect_eq(s.live_bytes, 0);
    cr_expect_eq(s.alloc_calls, 3);
    cr_expect_eq(s.free_calls, 3);
}

Test(sim_arrays, copies_into_and_out_of_arrays)
{
    struct cudaChannelFormatDesc f = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
    cudaArray_t a;
    float in[3][4], out[3][4];
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 4; x++)
            in[y][x] = (float)(10 * y + x);
    cr_assert_eq(cudaMallocArray(&a, &f, 4, 3, 0), cudaSuccess);
    cr_assert_eq(cudaMemcpy2DToArray(a, 0, 0, in, sizeof in[0], sizeof in[0], 3, cudaMemcpyHostToDevice), cudaSuccess);
    memset(out, 0, sizeof out);
    cr_assert_eq(cudaMemcpy2DFromArray(out, sizeof out[0], a, 0, 0, sizeof out[0], 3, cudaMemcpyDeviceToHost),
                 cudaSuccess);
    cr_expect_eq(memcmp(in, out, sizeof in), 0);
    /* one element at (x 2, y 1) through the 3D form: extents count elements when a side is an array */
    float one = 0;
    struct cudaMemcpy3DParms p;
    memset(&p, 0, sizeof p);
    p.srcArray = a;
    p.srcPos = pos(2, 1, 0);
    p.dstPtr = (struct cudaPitchedPtr){&one, sizeof one, 1, 1};
    p.extent = extent(1, 1, 1);
    p.kind = cudaMemcpyDeviceToHost;
    cr_assert_eq(cudaMemcpy3D(&p), cudaSuccess);
    cr_expect_float_eq(one, 12.0f, 0);
    p.srcPos = pos(4, 0, 0);
    cr_expect_eq(cudaMemcpy3D(&p), cudaErrorInvalidValue, "past the array's width");
    cr_expect_eq(cudaMemcpy2DToArray(a, 0, 0, in, 4, 16, 2, cudaMemcpyHostToDevice), cudaErrorInvalidPitchValue);
    cr_expect_eq(cudaFreeArray(a), cudaSuccess);
}

Test(sim_arrays, mipmapped_arrays_hold_every_level)
{
    struct cudaChannelFormatDesc f = cudaCreateChannelDesc(8, 0, 0, 0, cudaChannelFormatKindUnsigned);
    cudaMipmappedArray_t m;
    /* 16x8, 8x4, 4x2, 2x1: 128 + 32 + 8 + 2 bytes */
    cr_assert_eq(cudaMallocMipmappedArray(&m, &f, extent(16, 8, 0), 4, 0), cudaSuccess);
    cr_expect_eq(stats().live_bytes, 170);
    cudaArray_t level;
    struct cudaExtent e;
    cr_assert_eq(cudaGetMipmappedArrayLevel(&level, m, 2), cudaSuccess);
    cr_assert_eq(cudaArrayGetInfo(NULL, &e, NULL, level), cudaSuccess);
    cr_expect_eq(e.width, 4);
    cr_expect_eq(e.height, 2);
    cr_expect_eq(cudaGetMipmappedArrayLevel(&level, m, 4), cudaErrorInvalidValue);
    cr_expect_eq(cudaFreeArray(level), cudaErrorInvalidValue, "a level goes with its mipmapped array");
    cr_expect_eq(cudaFreeMipmappedArray(m), cudaSuccess);
    cr_expect_eq(stats().live_bytes, 0);
    cr_expect_eq(cudaFreeMipmappedArray(m), cudaErrorInvalidValue);
}

Test(sim_arrays, malloc3d_pitches_its_rows)
{
    struct cudaPitchedPtr p;
    /* width 100 bytes -> pitch 512; 512 x 3 rows x 2 slices */
    cr_assert_eq(cudaMalloc3D(&p, extent(100, 3, 2)), cudaSuccess);
    cr_expect_eq(p.pitch, 512);
    cr_expect_eq(p.xsize, 100);
    cr_expect_eq(p.ysize, 3);
    cr_expect_eq(stats().live_bytes, 512 * 3 * 2);
    cr_assert_eq(cudaMemset3D(p, 7, extent(100, 3, 2)), cudaSuccess);
    cr_expect_eq(((unsigned char *)p.ptr)[512 * 3 + 99], 7, "the last byte of the second slice's first row");
    cr_expect_eq(cudaFree(p.ptr), cudaSuccess);
    cr_expect_eq(stats().live_bytes, 0);
}

Test(sim_arrays, texture_objects_are_handles)
{
    struct cudaChannelFormatDesc f = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
    cudaArray_t a;
    cr_assert_eq(cudaMallocArray(&a, &f, 4, 4, 0), cudaSuccess);
    struct cudaResourceDesc res;
    memset(&res, 0, sizeof res);
    res.resType = cudaResourceTypeArray;
    res.res.array.array = a;
    struct cudaTextureDesc tex;
    memset(&tex, 0, sizeof tex);
    cudaTextureObject_t t = 0;
    cr_assert_eq(cudaCreateTextureObject(&t, &res, &tex, NULL), cudaSuccess);
    struct cudaResourceDesc back;
    cr_expect_eq(cudaGetTextureObjectResourceDesc(&back, t), cudaSuccess);
    cr_expect_eq(back.res.array.array, a);
    cr_expect_eq(cudaDestroyTextureObject(t), cudaSuccess);
    cr_expect_eq(cudaDestroyTextureObject(t), cudaErrorInvalidValue);
    cr_expect_eq(cudaFreeArray(a), cudaSuccess);
}

/* ---- pools ---- */

static uint64_t attr(cudaMemPool_t pool, enum cudaMemPoolAttr a)
{
    uint64_t v = 0;
    cr_assert_eq(cudaMemPoolGetAttribute(pool, a, &v), cudaSuccess);
    return v;
}

Test(sim_pools, a_pool_reserves_in_granules_and_releases_at_synchronisation)
{
    cudaMemPool_t pool;
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    cr_assert_eq(cudaMemPoolCreate(&pool, &props), cudaSuccess);
    cudaStream_t s;
    cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
    void *a, *b;
    /* 1 MiB in use holds one 2 MiB granule; 1 MiB + 3 MiB = 4 MiB in use, 4 MiB reserved */
    cr_assert_eq(cudaMallocFromPoolAsync(&a, MiB, pool, s), cudaSuccess);
    cr_expect_eq(attr(pool, cudaMemPoolAttrUsedMemCurrent), MiB);
    cr_expect_eq(attr(pool, cudaMemPoolAttrReservedMemCurrent), 2 * MiB);
    cr_assert_eq(cudaMallocFromPoolAsync(&b, 3 * MiB, pool, s), cudaSuccess);
    cr_expect_eq(attr(pool, cudaMemPoolAttrReservedMemCurrent), 4 * MiB);
    cr_assert_eq(cudaFreeAsync(b, s), cudaSuccess);
    cr_expect_eq(attr(pool, cudaMemPoolAttrUsedMemCurrent), MiB);
    cr_expect_eq(attr(pool, cudaMemPoolAttrReservedMemCurrent), 4 * MiB, "freed memory stays in the pool");
    cr_expect_eq(stats().live_bytes, MiB, "but is free on the device");
    cr_assert_eq(cudaStreamSynchronize(s), cudaSuccess);
    cr_expect_eq(attr(pool, cudaMemPoolAttrReservedMemCurrent), 2 * MiB, "a synchronisation releases it");
    cr_expect_eq(attr(pool, cudaMemPoolAttrUsedMemHigh), 4 * MiB);
    cr_expect_eq(attr(pool, cudaMemPoolAttrReservedMemHigh), 4 * MiB);

    /* with a release threshold the pool keeps up to it */
    uint64_t threshold = 8 * MiB, zero = 0, one = 1;
    cr_assert_eq(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold), cudaSuccess);
    cr_expect_eq(attr(pool, cudaMemPoolAttrReleaseThreshold), threshold);
    cr_assert_eq(cudaMallocFromPoolAsync(&b, 6 * MiB, pool, s), cudaSuccess); /* 7 MiB used, 8 reserved */
    cr_assert_eq(cudaFreeAsync(b, s), cudaSuccess);
    cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
    cr_expect_eq(attr(pool, cudaMemPoolAttrReservedMemCurrent), 8 * MiB);
    cr_assert_eq(cudaMemPoolTrimTo(pool, 3 * MiB), cudaSuccess);
    cr_expect_eq(attr(pool, cudaMemPoolAttrReservedMemCurrent), 3 * MiB, "trimmed to what it was told to keep");
    cr_assert_eq(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
    cr_expect_eq(attr(pool, cudaMemPoolAttrReservedMemCurrent), 2 * MiB, "never below what is in use");
    cr_expect_eq(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero), cudaSuccess);
    cr_expect_eq(attr(pool, cudaMemPoolAttrUsedMemHigh), MiB);
    cr_expect_eq(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &one), cudaErrorInvalidValue);
    cr_expect_eq(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &zero), cudaErrorInvalidValue);

    /* destroyed with memory out: the handle is gone, the memory stays valid until freed */
    cr_expect_eq(cudaMemPoolDestroy(pool), cudaSuccess);
    uint64_t v;
    cr_expect_eq(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &v), cudaErrorInvalidValue);
    cr_expect_eq(cudaFreeAsync(a, s), cudaSuccess);
    cr_expect_eq(stats().live_bytes, 0);
    cr_expect_eq(cudaStreamDestroy(s), cudaSuccess);
}

Test(sim_pools, malloc_async_draws_from_the_current_pool)
{
    cudaMemPool_t def, pool, cur;
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    cr_assert_eq(cudaDeviceGetDefaultMemPool(&def, 0), cudaSuccess);
    cr_assert_eq(cudaMemPoolCreate(&pool, &props), cudaSuccess);
    void *a, *b;
    cr_assert_eq(cudaMallocAsync(&a, 1000, NULL), cudaSuccess);
    cr_expect_eq(attr(def, cudaMemPoolAttrUsedMemCurrent), 1000);
    cr_assert_eq(cudaDeviceSetMemPool(0, pool), cudaSuccess);
    cr_assert_eq(cudaDeviceGetMemPool(&cur, 0), cudaSuccess);
    cr_expect_eq(cur, pool);
    cr_assert_eq(cudaMallocAsync(&b, 3000, NULL), cudaSuccess);
    cr_expect_eq(attr(pool, cudaMemPoolAttrUsedMemCurrent), 3000);
    cr_expect_eq(attr(def, cudaMemPoolAttrUsedMemCurrent), 1000);
    cr_expect_eq(cudaFree(a), cudaSuccess, "cudaFree frees pool memory too");
    cr_expect_eq(attr(def, cudaMemPoolAttrUsedMemCurrent), 0);
    cr_expect_eq(cudaFreeAsync(b, NULL), cudaSuccess);
    cr_expect_eq(cudaMemPoolDestroy(pool), cudaSuccess);
    cr_assert_eq(cudaDeviceGetMemPool(&cur, 0), cudaSuccess);
    cr_expect_eq(cur, def, "destroying the current pool makes the default current again");
}

/* ---- host registration ---- */

Test(sim_host, registration_ranges)
{
    static char buf[8192];
    void *dev = NULL;
    unsigned flags = 0;
    cr_assert_eq(cudaHostRegister(buf, 4096, cudaHostRegisterMapped), cudaSuccess);
    cr_expect_eq(cudaHostRegister(buf + 100, 10, 0), cudaErrorHostMemoryAlreadyRegistered);
    cr_expect_eq(cudaHostRegister(buf + 4096, 4096, 0), cudaSuccess, "the next range is free");
    cr_expect_eq(cudaHostGetDevicePointer(&dev, buf + 10, 0), cudaSuccess);
    cr_expect_eq(dev, buf + 10);
    cr_expect_eq(cudaHostGetFlags(&flags, buf + 10), cudaSuccess);
    cr_expect_eq(flags, cudaHostRegisterMapped);
    cr_expect_eq(stats().live_bytes, 0, "registered memory is not device memory");
    cr_expect_eq(cudaHostUnregister(buf + 10), cudaErrorHostMemoryNotRegistered, "only its start unregisters it");
    cr_expect_eq(cudaHostUnregister(buf), cudaSuccess);
    cr_expect_eq(cudaHostUnregister(buf), cudaErrorHostMemoryNotRegistered);
    cr_expect_eq(cudaHostUnregister(buf + 4096), cudaSuccess);
    cr_expect_eq(cudaHostRegister(NULL, 10, 0), cudaErrorInvalidValue);
    cr_expect_eq(cudaHostRegister(buf, 0, 0), cudaErrorInvalidValue);
}

/* ---- IPC ---- */

Test(sim_ipc, a_handle_opens_in_another_process)
{
    void *dev = NULL;
    cudaIpcMemHandle_t h;
    cr_assert_eq(cudaMalloc(&dev, 5000), cudaSuccess);
    cr_assert_eq(cudaIpcGetMemHandle(&h, dev), cudaSuccess);
    void *p = NULL;
    cr_expect_eq(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), cudaErrorDeviceUninitialized,
                 "not in the process that exported it");
    cr_expect_eq(cudaIpcGetMemHandle(&h, (char *)dev + 8), cudaErrorInvalidValue, "only the base of a cudaMalloc");
    cr_assert_eq(cudaIpcGetMemHandle(&h, dev), cudaSuccess);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        void *a = NULL, *b = NULL;
        int ok = cudaIpcOpenMemHandle(&a, h, cudaIpcMemLazyEnablePeerAccess) == cudaSuccess &&
                 cudaIpcOpenMemHandle(&b, h, cudaIpcMemLazyEnablePeerAccess) == cudaSuccess && a == b &&
                 stats().live_bytes == 5000 && /* the parent's allocation, inherited; the mapping adds nothing */
                 cudaIpcCloseMemHandle(a) == cudaSuccess && cudaIpcCloseMemHandle(b) == cudaSuccess &&
                 cudaIpcCloseMemHandle(a) == cudaErrorInvalidValue;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child opened, reopened and closed the handle");
    cr_expect_eq(cudaFree(dev), cudaSuccess);
}
