/* Runtime calls that programs make before and around their kernels: pointer attributes, symbols
 * of __device__ variables, limits, profiler switches, function attributes and occupancy, device
 * attributes and callbacks. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include "wssim.h"
#include "wssim_nvcc.h"

static void expect_pointer(const void *p, enum cudaMemoryType type, int device, const void *dev, const void *host)
{
    struct cudaPointerAttributes a;
    memset(&a, 0x5a, sizeof a);
    cr_assert_eq(cudaPointerGetAttributes(&a, p), cudaSuccess);
    cr_expect_eq(a.type, type, "type of %p", p);
    cr_expect_eq(a.device, device);
    cr_expect_eq(a.devicePointer, dev);
    cr_expect_eq(a.hostPointer, host);
}

Test(sim_runtime_misc, pointer_attributes_know_every_kind_of_memory_inside_and_at_its_base)
{
    char *d = NULL, *m = NULL, *h = NULL;
    static char registered[4096], unregistered[64];
    cr_assert_eq(cudaMalloc((void **)&d, 1000), cudaSuccess);
    cr_assert_eq(cudaMallocManaged((void **)&m, 1000, cudaMemAttachGlobal), cudaSuccess);
    cr_assert_eq(cudaMallocHost((void **)&h, 1000), cudaSuccess);
    cr_assert_eq(cudaHostRegister(registered, sizeof registered, cudaHostRegisterDefault), cudaSuccess);
    expect_pointer(d, cudaMemoryTypeDevice, 0, d, NULL);
    expect_pointer(d + 999, cudaMemoryTypeDevice, 0, d + 999, NULL);
    expect_pointer(m + 10, cudaMemoryTypeManaged, 0, m + 10, m + 10);
    expect_pointer(h + 500, cudaMemoryTypeHost, 0, h + 500, h + 500);
    expect_pointer(registered + 100, cudaMemoryTypeHost, 0, registered + 100, registered + 100);
    /* Not an error: memory the runtime does not know is unregistered, on no device. */
    expect_pointer(unregistered, cudaMemoryTypeUnregistered, -2, NULL, NULL);
    cr_assert_eq(cudaFree(d), cudaSuccess);
    expect_pointer(d, cudaMemoryTypeUnregistered, -2, NULL, NULL);
    cr_expect_eq(cudaPointerGetAttributes(NULL, m), cudaErrorInvalidValue);
    cr_expect_eq(cudaFree(m), cudaSuccess);
    cr_expect_eq(cudaFreeHost(h), cudaSuccess);
    cr_expect_eq(cudaHostUnregister(registered), cudaSuccess);
}

/* What an nvcc module constructor does for `__device__ float table[16];`. */
static float table[16];

Test(sim_runtime_misc, symbols_of_device_variables_are_their_host_shadows)
{
    static char fat_binary[8];
    void **module = __cudaRegisterFatBinary(fat_binary);
    __cudaRegisterVar(module, (char *)table, (char *)"table", "table", 0, sizeof table, 0, 0);
    __cudaRegisterFatBinaryEnd(module);
    float in[4] = {1, 2, 3, 4}, out[4] = {0};
    cr_assert_eq(cudaMemcpyToSymbol(table, in, sizeof in, 4 * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    cr_expect(table[4] == 1.0f && table[7] == 4.0f, "offset 4 floats");
    cr_assert_eq(cudaMemcpyFromSymbol(out, table, sizeof out, 4 * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    cr_expect(memcmp(in, out, sizeof in) == 0);
    size_t size = 0;
    void *address = NULL;
    cr_expect_eq(cudaGetSymbolSize(&size, table), cudaSuccess);
    cr_expect_eq(size, sizeof table);
    cr_expect_eq(cudaGetSymbolAddress(&address, table), cudaSuccess);
    cr_expect_eq(address, (void *)table);
    cr_expect_eq(cudaMemcpyToSymbol(table, in, sizeof in, 13 * sizeof(float), cudaMemcpyHostToDevice),
                 cudaErrorInvalidValue, "past the end of the variable");
    cr_expect_eq(cudaMemcpyToSymbol(in, out, sizeof in, 0, cudaMemcpyHostToDevice), cudaErrorInvalidSymbol);
    cr_expect_eq(cudaGetLastError(), cudaErrorInvalidSymbol);
    __cudaUnregisterFatBinary(module);
}

Test(sim_runtime_misc, limits_are_read_back_and_unknown_ones_refused)
{
    size_t v = 0;
    cr_assert_eq(cudaDeviceGetLimit(&v, cudaLimitMallocHeapSize), cudaSuccess);
    cr_expect_eq(v, 8u << 20, "8 MiB of device heap by default");
    cr_assert_eq(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 64u << 20), cudaSuccess);
    cr_assert_eq(cudaDeviceGetLimit(&v, cudaLimitMallocHeapSize), cudaSuccess);
    cr_expect_eq(v, 64u << 20);
    cr_expect_eq(cudaDeviceSetLimit((enum cudaLimit)0x77, 1), cudaErrorUnsupportedLimit);
    cr_expect_eq(cudaProfilerStart(), cudaSuccess);
    cr_expect_eq(cudaProfilerStop(), cudaSuccess);
    int peer = 1;
    cr_expect_eq(cudaDeviceCanAccessPeer(&peer, 0, 0), cudaSuccess);
    cr_expect_eq(peer, 0);
    unsigned flags = 0;
    cr_expect_eq(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync), cudaSuccess);
    cr_expect_eq(cudaGetDeviceFlags(&flags), cudaSuccess);
    cr_expect_eq(flags & cudaDeviceScheduleMask, cudaDeviceScheduleBlockingSync);
}

static void kernel(void **args) { (void)args; }

/* 2048 threads per multiprocessor, at most 32 blocks: 256 threads -> 8 blocks, 32 -> 32. */
Test(sim_runtime_misc, occupancy_and_function_attributes)
{
    int blocks = 0;
    cr_assert_eq(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, (const void *)kernel, 256, 0), cudaSuccess);
    cr_expect_eq(blocks, 8);
    cr_assert_eq(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, (const void *)kernel, 32, 0), cudaSuccess);
    cr_expect_eq(blocks, 32);
    struct cudaFuncAttributes fa;
    cr_assert_eq(cudaFuncGetAttributes(&fa, (const void *)kernel), cudaSuccess);
    cr_expect_eq(fa.maxThreadsPerBlock, 1024);
    void *d = NULL;
    cr_assert_eq(cudaMalloc(&d, 16), cudaSuccess);
    cr_expect_eq(cudaFuncGetAttributes(&fa, d), cudaErrorInvalidDeviceFunction, "memory is not code");
    cr_expect_eq(cudaFree(d), cudaSuccess);
}

/* Every attribute the runtime declares, reserved slots aside, has an answer. */
Test(sim_runtime_misc, every_declared_device_attribute_answers)
{
    static const enum cudaDeviceAttr attrs[] = {
        cudaDevAttrMaxTexture1DWidth,
        cudaDevAttrMaxSurface2DHeight,
        cudaDevAttrHostRegisterSupported,
        cudaDevAttrMemoryPoolSupportedHandleTypes,
        cudaDevAttrGpuOverlap,
        cudaDevAttrKernelExecTimeout,
        cudaDevAttrClockRate,
        cudaDevAttrMemoryClockRate,
        cudaDevAttrComputeMode,
        cudaDevAttrSingleToDoublePrecisionPerfRatio,
        cudaDevAttrNumaId,
        cudaDevAttrMaxAccessPolicyWindowSize,
        cudaDevAttrMultiProcessorCount,
        cudaDevAttrComputeCapabilityMajor,
        cudaDevAttrUnifiedAddressing,
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        int v = INT32_MIN;
        cr_expect_eq(cudaDeviceGetAttribute(&v, attrs[i], 0), cudaSuccess, "attribute %d", (int)attrs[i]);
        cr_expect_neq(v, INT32_MIN);
    }
    int v;
    cr_expect_eq(cudaDeviceGetAttribute(&v, cudaDevAttrHostRegisterSupported, 0), cudaSuccess);
    cr_expect_eq(v, 1);
    cr_expect_eq(cudaDeviceGetAttribute(&v, (enum cudaDeviceAttr)100000, 0), cudaErrorInvalidValue);
}

static int calls;
static void CUDART_CB callback(cudaStream_t stream, cudaError_t status, void *data)
{
    (void)stream;
    cr_expect_eq(status, cudaSuccess);
    calls += *(int *)data;
}

Test(sim_runtime_misc, stream_callbacks_run_with_the_streams_status)
{
    cudaStream_t s;
    int one = 1;
    cr_assert_eq(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, -3), cudaSuccess);
    int priority = 0;
    cr_expect_eq(cudaStreamGetPriority(s, &priority), cudaSuccess);
    cr_expect_eq(priority, -3);
    cr_assert_eq(cudaStreamAddCallback(s, callback, &one, 0), cudaSuccess);
    cr_assert_eq(cudaStreamAddCallback(NULL, callback, &one, 0), cudaSuccess);
    cr_expect_eq(calls, 2);
    cr_expect_eq(cudaStreamAddCallback(s, callback, &one, 1), cudaErrorInvalidValue, "flags must be 0");
    cr_expect_eq(cudaStreamDestroy(s), cudaSuccess);
}

/* An interprocess event opens in another process (a child here), not in the one that made it. */
Test(sim_runtime_misc, ipc_event_handles_open_in_another_process)
{
    cudaEvent_t timed, ev;
    cudaIpcEventHandle_t h;
    cr_assert_eq(cudaEventCreate(&timed), cudaSuccess);
    cr_expect_eq(cudaIpcGetEventHandle(&h, timed), cudaErrorInvalidValue, "a timing event cannot be shared");
    cr_assert_eq(cudaEventCreateWithFlags(&ev, cudaEventInterprocess | cudaEventDisableTiming), cudaSuccess);
    cr_assert_eq(cudaIpcGetEventHandle(&h, ev), cudaSuccess);
    cudaEvent_t opened = NULL;
    cr_expect_eq(cudaIpcOpenEventHandle(&opened, h), cudaErrorDeviceUninitialized);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        cudaEvent_t mine = NULL;
        int ok = cudaIpcOpenEventHandle(&mine, h) == cudaSuccess && mine &&
                 cudaEventRecord(mine, NULL) == cudaSuccess && cudaEventSynchronize(mine) == cudaSuccess;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child could not open and use the event");
    cr_expect_eq(cudaEventDestroy(ev), cudaSuccess);
    cr_expect_eq(cudaEventDestroy(timed), cudaSuccess);
}

/* cudaStreamSetAttribute/GetAttribute (cuBLAS-like code sets an access policy window and reads
 * the priority back): what is set is read back, per stream, the priority is the stream's own
 * (clamped to the range the device reports), and attributes not valid for streams are refused. */
Test(sim_runtime_misc, stream_attributes_are_kept_per_stream)
{
    cudaStream_t a, b;
    int least, greatest;
    cr_assert_eq(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
    cr_assert_eq(cudaStreamCreate(&a), cudaSuccess);
    cr_assert_eq(cudaStreamCreateWithPriority(&b, cudaStreamNonBlocking, greatest), cudaSuccess);
    static char window[1 << 12];
    cudaStreamAttrValue v, got;
    memset(&v, 0, sizeof v);
    v.accessPolicyWindow.base_ptr = window;
    v.accessPolicyWindow.num_bytes = sizeof window;
    v.accessPolicyWindow.hitRatio = 0.75f;
    v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cr_assert_eq(cudaStreamSetAttribute(a, cudaStreamAttributeAccessPolicyWindow, &v), cudaSuccess);
    memset(&got, 0x5a, sizeof got);
    cr_assert_eq(cudaStreamGetAttribute(a, cudaStreamAttributeAccessPolicyWindow, &got), cudaSuccess);
    cr_expect_eq(got.accessPolicyWindow.base_ptr, (void *)window);
    cr_expect_eq(got.accessPolicyWindow.num_bytes, sizeof window);
    cr_expect(got.accessPolicyWindow.hitRatio == 0.75f);
    cr_expect_eq(got.accessPolicyWindow.hitProp, cudaAccessPropertyPersisting);
    cr_expect_eq(got.accessPolicyWindow.missProp, cudaAccessPropertyStreaming);
    /* the other stream still has the default (no window) */
    cr_assert_eq(cudaStreamGetAttribute(b, cudaStreamAttributeAccessPolicyWindow, &got), cudaSuccess);
    cr_expect_eq(got.accessPolicyWindow.num_bytes, 0);
    /* priority: the stream's, set through the attribute and clamped */
    cr_assert_eq(cudaStreamGetAttribute(b, cudaStreamAttributePriority, &got), cudaSuccess);
    cr_expect_eq(got.priority, greatest);
    v.priority = greatest - 10;
    cr_assert_eq(cudaStreamSetAttribute(a, cudaStreamAttributePriority, &v), cudaSuccess);
    int priority = 1;
    cr_assert_eq(cudaStreamGetPriority(a, &priority), cudaSuccess);
    cr_expect_eq(priority, greatest);
    v.syncPolicy = cudaSyncPolicyYield;
    cr_assert_eq(cudaStreamSetAttribute(b, cudaStreamAttributeSynchronizationPolicy, &v), cudaSuccess);
    cr_assert_eq(cudaStreamGetAttribute(b, cudaStreamAttributeSynchronizationPolicy, &got), cudaSuccess);
    cr_expect_eq(got.syncPolicy, cudaSyncPolicyYield);
    /* copied from one stream onto another */
    cr_assert_eq(cudaStreamCopyAttributes(b, a), cudaSuccess);
    cr_assert_eq(cudaStreamGetAttribute(b, cudaStreamAttributeAccessPolicyWindow, &got), cudaSuccess);
    cr_expect_eq(got.accessPolicyWindow.base_ptr, (void *)window);
    /* the default stream takes them too */
    v.memSyncDomain = cudaLaunchMemSyncDomainRemote;
    cr_expect_eq(cudaStreamSetAttribute(NULL, cudaStreamAttributeMemSyncDomain, &v), cudaSuccess);
    cr_assert_eq(cudaStreamGetAttribute(cudaStreamPerThread, cudaStreamAttributeMemSyncDomain, &got), cudaSuccess);
    cr_expect_eq(got.memSyncDomain, cudaLaunchMemSyncDomainRemote);
    /* a launch-only attribute, a missing value, a destroyed stream */
    cr_expect_eq(cudaStreamSetAttribute(a, cudaLaunchAttributeCooperative, &v), cudaErrorInvalidValue);
    cr_expect_eq(cudaStreamGetAttribute(a, cudaStreamAttributePriority, NULL), cudaErrorInvalidValue);
    cr_assert_eq(cudaStreamDestroy(a), cudaSuccess);
    cr_expect_eq(cudaStreamGetAttribute(a, cudaStreamAttributePriority, &got), cudaErrorInvalidResourceHandle);
    cudaGetLastError();
    cr_assert_eq(cudaStreamDestroy(b), cudaSuccess);
}

/* A stream or event created after another was destroyed never gets the destroyed one's handle
 * (a trace tells streams apart by handle), and a destroyed handle stays invalid. */
Test(sim_runtime_misc, destroyed_handles_are_not_given_out_again)
{
    enum { N = 64 };
    cudaStream_t s[N];
    cudaEvent_t e[N];
    for (int i = 0; i < N; i++) {
        cr_assert_eq(cudaStreamCreate(&s[i]), cudaSuccess);
        cr_assert_eq(cudaEventCreate(&e[i]), cudaSuccess);
        for (int j = 0; j < i; j++) {
            cr_assert_neq(s[i], s[j], "stream %d has the handle of destroyed stream %d", i, j);
            cr_assert_neq((void *)e[i], (void *)e[j], "event %d has the handle of destroyed event %d", i, j);
        }
        cr_assert_eq(cudaStreamDestroy(s[i]), cudaSuccess);
        cr_assert_eq(cudaEventDestroy(e[i]), cudaSuccess);
        cr_expect_eq(cudaStreamQuery(s[i]), cudaErrorInvalidResourceHandle);
        cr_expect_eq(cudaEventQuery(e[i]), cudaErrorInvalidResourceHandle);
    }
    cudaGetLastError();
}
