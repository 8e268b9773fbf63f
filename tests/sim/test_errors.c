/* Error reporting of the simulated device: last-error semantics and the real names and texts. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "wssim.h"

Test(sim_errors, last_error_is_returned_once)
{
    int x;
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    cr_assert_eq(cudaFree(&x), cudaErrorInvalidValue);
    void *p = NULL;
    cr_assert_eq(cudaMalloc(&p, 16), cudaSuccess);
    cr_expect_eq(cudaPeekAtLastError(), cudaErrorInvalidValue, "success does not clear it");
    cr_expect_eq(cudaPeekAtLastError(), cudaErrorInvalidValue, "peek does not clear it");
    cr_expect_eq(cudaGetLastError(), cudaErrorInvalidValue);
    cr_expect_eq(cudaGetLastError(), cudaSuccess, "get clears it");
    cr_expect_eq(cudaFree(p), cudaSuccess);
}

Test(sim_errors, out_of_memory_sets_last_error)
{
    cr_assert_eq(setenv("WSSIM_CAPACITY", "1K", 1), 0);
    void *p = NULL;
    cr_assert_eq(cudaMalloc(&p, 2048), cudaErrorMemoryAllocation);
    cr_expect_eq(cudaGetLastError(), cudaErrorMemoryAllocation);
    cr_expect_eq(cudaGetLastError(), cudaSuccess);
    cr_expect_eq(cudaMalloc(&p, 1024), cudaSuccess, "out of memory is not sticky");
    cr_expect_eq(cudaFree(p), cudaSuccess);
}

Test(sim_errors, the_latest_error_wins)
{
    int x;
    cr_assert_eq(cudaFree(&x), cudaErrorInvalidValue);
    cr_assert_eq(cudaSetDevice(3), cudaErrorInvalidDevice);
    cr_expect_eq(cudaGetLastError(), cudaErrorInvalidDevice);
}

static void *fail_in_thread(void *arg)
{
    (void)arg;
    cudaSetDevice(7);
    return NULL;
}

Test(sim_errors, last_error_is_per_thread)
{
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, fail_in_thread, NULL), 0);
    cr_assert_eq(pthread_join(t, NULL), 0);
    cr_expect_eq(cudaGetLastError(), cudaSuccess, "another thread's error leaked here");
}

Test(sim_errors, names_and_strings_match_cudart)
{
    static const struct {
        cudaError_t code;
        const char *name, *text;
    } expected[] = {
        {cudaSuccess, "cudaSuccess", "no error"},
        {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
        {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
        {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
        {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
        {cudaErrorMissingConfiguration, "cudaErrorMissingConfiguration", "__global__ function call is not configured"},
        {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
        {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
        {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
        {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
         "CUDA driver version is insufficient for CUDA runtime version"},
        {(cudaError_t)12345, "unrecognized error code", "unrecognized error code"},
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        cr_expect_str_eq(cudaGetErrorName(expected[i].code), expected[i].name);
        cr_expect_str_eq(cudaGetErrorString(expected[i].code), expected[i].text);
    }
}

Test(sim_errors, every_returned_code_has_a_name)
{
    /* The codes this library can return; each must have its own name, not the fallback. */
    cudaError_t returned[] = {cudaErrorInvalidValue,         cudaErrorMemoryAllocation,
                              cudaErrorInvalidConfiguration, cudaErrorInvalidMemcpyDirection,
                              cudaErrorMissingConfiguration, cudaErrorInvalidDeviceFunction,
                              cudaErrorInvalidDevice,        cudaErrorInvalidResourceHandle};
    for (size_t i = 0; i < sizeof returned / sizeof returned[0]; i++)
        cr_expect(strncmp(cudaGetErrorName(returned[i]), "cudaError", 9) == 0, "code %d", (int)returned[i]);
}
