/* Streams, events and device queries of the simulated device. */
#include <criterion/criterion.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "wssim.h"

Test(sim_device, one_device_with_plausible_properties)
{
    int count = 0, device = -1, sms = 0, warp = 0, major = 0;
    struct cudaDeviceProp prop;
    cr_assert_eq(cudaGetDeviceCount(&count), cudaSuccess);
    cr_expect_eq(count, 1);
    cr_expect_eq(cudaSetDevice(0), cudaSuccess);
    cr_expect_eq(cudaSetDevice(1), cudaErrorInvalidDevice);
    cr_expect_eq(cudaGetDevice(&device), cudaSuccess);
    cr_expect_eq(device, 0);
    cr_assert_eq(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
    cr_expect_str_eq(prop.name, "wstrace simulated device");
    cr_expect_eq(prop.multiProcessorCount, 132);
    cr_expect_eq(prop.warpSize, 32);
    cr_expect_eq(prop.maxThreadsPerBlock, 1024);
    cr_expect_eq(cudaGetDeviceProperties(&prop, 1), cudaErrorInvalidDevice);
    cr_expect_eq(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
    cr_expect_eq(sms, 132);
    cr_expect_eq(cudaDeviceGetAttribute(&warp, cudaDevAttrWarpSize, 0), cudaSuccess);
    cr_expect_eq(warp, 32);
    cr_expect_eq(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), 0);
    cr_expect_eq(major, prop.major);
    cr_expect_eq(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 2), cudaErrorInvalidDevice);
    cr_expect_eq(cudaDeviceGetAttribute(&sms, (enum cudaDeviceAttr)100000, 0), cudaErrorInvalidValue);
}

Test(sim_device, versions)
{
    int runtime = 0, driver = 0;
    cr_expect_eq(cudaRuntimeGetVersion(&runtime), cudaSuccess);
    cr_expect_eq(cudaDriverGetVersion(&driver), cudaSuccess);
    cr_expect_eq(runtime, CUDART_VERSION);
    cr_expect_geq(driver, runtime, "programs refuse a driver older than their runtime");
}

Test(sim_device, streams)
{
    cudaStream_t a, b;
    cr_assert_eq(cudaStreamCreate(&a), cudaSuccess);
    cr_assert_eq(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
    cr_expect_neq(a, b);
    cr_expect_eq(cudaStreamSynchronize(a), cudaSuccess);
    cr_expect_eq(cudaStreamSynchronize(NULL), cudaSuccess);
    cr_expect_eq(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
    cr_expect_eq(cudaDeviceSynchronize(), cudaSuccess);
    cr_expect_eq(cudaStreamDestroy(b), cudaSuccess);
    cr_expect_eq(cudaStreamSynchronize(b), cudaErrorInvalidResourceHandle, "destroyed stream");
    cr_expect_eq(cudaStreamDestroy(b), cudaErrorInvalidResourceHandle);
    cr_expect_eq(cudaStreamCreateWithFlags(&b, 0x80), cudaErrorInvalidValue);
    cr_expect_eq(cudaStreamCreate(NULL), cudaErrorInvalidValue);
    cr_expect_eq(cudaStreamDestroy(a), cudaSuccess);
}

Test(sim_device, events)
{
    cudaEvent_t start, stop, untimed, fresh;
    cudaStream_t s;
    float ms = -1.0f;
    cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
    cr_assert_eq(cudaEventCreate(&start), cudaSuccess);
    cr_assert_eq(cudaEventCreate(&stop), cudaSuccess);
    cr_assert_eq(cudaEventCreate(&fresh), cudaSuccess);
    cr_assert_eq(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming), cudaSuccess);
    cr_expect_eq(cudaEventRecord(start, s), cudaSuccess);
    cr_expect_eq(cudaStreamWaitEvent(NULL, start, 0), cudaSuccess);
    cr_expect_eq(cudaEventRecord(stop, NULL), cudaSuccess);
    cr_expect_eq(cudaEventSynchronize(stop), cudaSuccess);
    cr_expect_eq(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
    cr_expect_geq(ms, 0.0f);
    cr_expect_eq(cudaEventElapsedTime(&ms, start, fresh), cudaErrorInvalidResourceHandle,
                 "an event never recorded has no time");
    cr_expect_eq(cudaEventRecord(untimed, s), cudaSuccess);
    cr_expect_eq(cudaEventElapsedTime(&ms, start, untimed), cudaErrorInvalidResourceHandle);
    cr_expect_eq(cudaEventElapsedTime(NULL, start, stop), cudaErrorInvalidValue);
    cr_expect_eq(cudaEventRecord((cudaEvent_t)s, NULL), cudaErrorInvalidResourceHandle, "a stream is not an event");
    cr_expect_eq(cudaStreamWaitEvent((cudaStream_t)start, stop, 0), cudaErrorInvalidResourceHandle,
                 "an event is not a stream");
    cr_expect_eq(cudaEventDestroy(start), cudaSuccess);
    cr_expect_eq(cudaEventDestroy(start), cudaErrorInvalidResourceHandle);
    cr_expect_eq(cudaEventDestroy(stop), cudaSuccess);
    cr_expect_eq(cudaEventDestroy(untimed), cudaSuccess);
    cr_expect_eq(cudaEventDestroy(fresh), cudaSuccess);
    cr_expect_eq(cudaStreamDestroy(s), cudaSuccess);
}
