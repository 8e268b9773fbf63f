/* A driver-API program, linked against the toolkit's libcuda.so stub and run on the simulated
 * driver (LD_LIBRARY_PATH=<build>/lib/sim), one scenario per argv[1].  Each prints, as
 * "key=value" lines, the calls it made as it counted them; the tests compare the trace with them.
 *   direct  every allocation kind, its free, and launches of each form
 *   vmm     physical memory mapped into a reservation: released while mapped, and after unmapping
 *   vmm_refs  a retained handle given back at its last release; memory imported from a descriptor
 *   graph   a graph with a memory node launched GRAPH_N times; a captured cuMemAllocAsync launched
 *           CAPTURE_M times
 *   arrays  a 2D, a 3D and a mipmapped array, and a registered host buffer, each given back
 *   ipc     a forked child opens the parent's allocation twice (one mapping) and closes it twice;
 *           parent and child each launch the kernel once (the child's trace names it again) */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

static void touch(void **args)
{
    unsigned char *p = (unsigned char *)*(CUdeviceptr *)args[0];
    p[0]++;
}

static CUfunction setup(void)
{
    int (*reg)(const char *, void (*)(void **), unsigned, const size_t *) =
        (int (*)(const char *, void (*)(void **), unsigned, const size_t *))dlsym(RTLD_DEFAULT,
                                                                                  "wssim_register_host_kernel_params");
    static const size_t sizes[] = {sizeof(CUdeviceptr)};
    check(reg && reg("touch_kernel", touch, 1, sizes) == 0, "register touch_kernel");
    CUcontext ctx;
    CUmodule mod;
    CUfunction f = NULL;
    CHECK(cuInit(0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&mod, "a module image"));
    CHECK(cuModuleGetFunction(&f, mod, "touch_kernel"));
    return f;
}

static void direct(CUfunction f)
{
    unsigned alloc = 0, pitch_allocs = 0, managed = 0, host = 0, host_alloc = 0, async = 0, frees = 0;
    unsigned free_host = 0, free_async = 0, launches = 0, launches_ex = 0, cooperative = 0;
    CUdeviceptr d[3], m, pitched, a[2];
    size_t pitch = 0;
    for (int i = 0; i < 3; i++, alloc++)
        CHECK(cuMemAlloc(&d[i], (size_t)(i + 1) * 1000));
    CHECK(cuMemAllocPitch(&pitched, &pitch, 100, 10, 4)), pitch_allocs++;
    CHECK(cuMemAllocManaged(&m, 5000, CU_MEM_ATTACH_GLOBAL)), managed++;
    void *h1, *h2;
    CHECK(cuMemAllocHost(&h1, 4096)), host++;
    CHECK(cuMemHostAlloc(&h2, 8192, CU_MEMHOSTALLOC_PORTABLE)), host_alloc++;
    CUstream s;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < 2; i++, async++)
        CHECK(cuMemAllocAsync(&a[i], 1 << 16, s));
    void *args[] = {&d[0]};
    for (int i = 0; i < 4; i++, launches++)
        CHECK(cuLaunchKernel(f, 2, 3, 1, 32, 2, 1, 0, s, args, NULL));
    CUlaunchConfig config = {
        .gridDimX = 7, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 64, .blockDimY = 1, .blockDimZ = 1, .hStream = s};
    CHECK(cuLaunchKernelEx(&config, f, args, NULL)), launches_ex++;
    CHECK(cuLaunchCooperativeKernel(f, 1, 1, 1, 16, 1, 1, 0, s, args)), cooperative++;
    for (int i = 0; i < 2; i++, free_async++)
        CHECK(cuMemFreeAsync(a[i], s));
    /* a pool of its own: one allocation from it, a trim, its destruction */
    CUmemPoolProps pp;
    memset(&pp, 0, sizeof pp);
    pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemoryPool pool;
    CUdeviceptr fp;
    unsigned from_pool = 0, pools = 0;
    CHECK(cuMemPoolCreate(&pool, &pp)), pools++;
    CHECK(cuMemAllocFromPoolAsync(&fp, 1 << 18, pool, s)), from_pool++;
    CHECK(cuMemFreeAsync(fp, s)), free_async++;
    CHECK(cuStreamSynchronize(s));
    cuuint64_t threshold = 1 << 20;
    CHECK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
    CHECK(cuMemPoolTrimTo(pool, 0));
    CHECK(cuMemPoolDestroy(pool));
    for (int i = 0; i < 3; i++, frees++)
        CHECK(cuMemFree(d[i]));
    CHECK(cuMemFree(pitched)), frees++;
    CHECK(cuMemFree(m)), frees++;
    CHECK(cuMemFreeHost(h1)), free_host++;
    CHECK(cuMemFreeHost(h2)), free_host++;
    CHECK(cuStreamDestroy(s));
    printf("cuMemAlloc_v2=%u\ncuMemAllocPitch_v2=%u\ncuMemAllocManaged=%u\ncuMemAllocHost_v2=%u\n"
           "cuMemHostAlloc=%u\ncuMemAllocAsync=%u\ncuMemFree_v2=%u\ncuMemFreeHost=%u\ncuMemFreeAsync=%u\n"
           "cuLaunchKernel=%u\ncuLaunchKernelEx=%u\ncuLaunchCooperativeKernel=%u\npitch=%zu\n"
           "cuMemAllocFromPoolAsync=%u\npools=%u\n",
           alloc, pitch_allocs, managed, host, host_alloc, async, frees, free_host, free_async, launches, launches_ex,
           cooperative, pitch, from_pool, pools);
}

static void vmm(void)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    size_t granule = 0;
    CHECK(cuMemGetAllocationGranularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    enum { CHUNKS = 3 };
    CUdeviceptr va;
    CUmemGenericAllocationHandle chunk[CHUNKS];
    unsigned creates = 0, maps = 0, unmaps = 0, releases = 0, reserves = 0;
    CHECK(cuMemAddressReserve(&va, CHUNKS * granule, 0, 0, 0)), reserves++;
    CUmemAccessDesc access;
    memset(&access, 0, sizeof access);
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    for (int i = 0; i < CHUNKS; i++, creates++, maps++) {
        CHECK(cuMemCreate(&chunk[i], granule, &prop, 0));
        CHECK(cuMemMap(va + i * granule, granule, 0, chunk[i], 0));
        CHECK(cuMemSetAccess(va + i * granule, granule, &access, 1));
    }
    /* chunks 0 and 1: released while mapped, so given back when one unmap takes both out */
    CHECK(cuMemRelease(chunk[0])), releases++;
    CHECK(cuMemRelease(chunk[1])), releases++;
    CHECK(cuMemUnmap(va, 2 * granule)), unmaps++;
    /* chunk 2: unmapped first, given back by its release */
    CHECK(cuMemUnmap(va + 2 * granule, granule)), unmaps++;
    CHECK(cuMemRelease(chunk[2])), releases++;
    CHECK(cuMemAddressFree(va, CHUNKS * granule));
    printf("granule=%zu\ncreates=%u\nmaps=%u\nunmap_calls=%u\nreleases=%u\nreserves=%u\n", granule, creates, maps,
           unmaps, releases, reserves);
}

/* References: memory retained through its mapping is given back at its last release, after a
 * marker allocation; memory imported from a file descriptor is another owner's (the simulated
 * driver, like a GPU's, counts it where it was made) and its mapping and release free nothing. */
static void vmm_refs(void)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    size_t granule = 0;
    CHECK(cuMemGetAllocationGranularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUdeviceptr va, marker;
    CUmemGenericAllocationHandle made, retained, exported, imported;
    CHECK(cuMemAddressReserve(&va, 2 * granule, 0, 0, 0));
    CHECK(cuMemCreate(&made, granule, &prop, 0));
    CHECK(cuMemMap(va, granule, 0, made, 0));
    CHECK(cuMemRetainAllocationHandle(&retained, (void *)va));
    CHECK(cuMemRelease(made)); /* one reference left */
    CHECK(cuMemUnmap(va, granule));
    CHECK(cuMemAlloc(&marker, 1)); /* the retained memory is still held here */
    CHECK(cuMemRelease(retained)); /* the last reference: given back now */
    CHECK(cuMemFree(marker));
    CHECK(cuMemCreate(&exported, granule, &prop, 0));
    int fd = -1;
    CHECK(cuMemExportToShareableHandle(&fd, exported, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    CHECK(cuMemImportFromShareableHandle(&imported, (void *)(intptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    CHECK(cuMemMap(va + granule, granule, 0, imported, 0));
    CHECK(cuMemRelease(imported));
    CHECK(cuMemUnmap(va + granule, granule));
    CHECK(cuMemRelease(exported));
    CHECK(cuMemAddressFree(va, 2 * granule));
    close(fd);
    printf("granule=%zu\ncreates=2\nmaps=2\n", granule);
}

enum { GRAPH_N = 3, CAPTURE_M = 2, NODE_BYTES = 3 << 20, CAPTURED_BYTES = 5 << 20 };

static void graph(CUfunction f)
{
    CUgraph g;
    CUgraphNode alloc_node, kernel_node, free_node;
    CHECK(cuGraphCreate(&g, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS ap;
    memset(&ap, 0, sizeof ap);
    ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    ap.bytesize = NODE_BYTES;
    CHECK(cuGraphAddMemAllocNode(&alloc_node, g, NULL, 0, &ap));
    CUdeviceptr p = ap.dptr;
    void *args[] = {&p};
    CUDA_KERNEL_NODE_PARAMS kp;
    memset(&kp, 0, sizeof kp);
    kp.func = f;
    kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
    kp.blockDimX = 8, kp.blockDimY = kp.blockDimZ = 1;
    kp.kernelParams = args;
    CHECK(cuGraphAddKernelNode(&kernel_node, g, &alloc_node, 1, &kp));
    CHECK(cuGraphAddMemFreeNode(&free_node, g, &kernel_node, 1, p));
    CUgraphExec exec;
    CHECK(cuGraphInstantiate(&exec, g, 0));
    CUstream s;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    unsigned launches = 0;
    for (int i = 0; i < GRAPH_N; i++, launches++)
        CHECK(cuGraphLaunch(exec, s));
    CHECK(cuStreamSynchronize(s));

    /* capture: an allocation, a kernel on it and its free become nodes of the captured graph */
    CUgraph captured;
    CUdeviceptr q = 0;
    void *qargs[] = {&q};
    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(cuMemAllocAsync(&q, CAPTURED_BYTES, s));
    CHECK(cuLaunchKernel(f, 1, 1, 1, 4, 1, 1, 0, s, qargs, NULL));
    CHECK(cuMemFreeAsync(q, s));
    CHECK(cuStreamEndCapture(s, &captured));
    CUgraphExec cexec;
    CHECK(cuGraphInstantiateWithFlags(&cexec, captured, 0));
    unsigned captured_launches = 0;
    for (int i = 0; i < CAPTURE_M; i++, captured_launches++)
        CHECK(cuGraphLaunch(cexec, s));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphExecDestroy(cexec));
    CHECK(cuGraphDestroy(g));
    CHECK(cuGraphDestroy(captured));
    CHECK(cuStreamDestroy(s));
    printf("graph_launches=%u\ncaptured_launches=%u\nnode_bytes=%u\ncaptured_bytes=%u\n", launches, captured_launches,
           (unsigned)NODE_BYTES, (unsigned)CAPTURED_BYTES);
}

static void arrays(void)
{
    CUarray a2, a3;
    CUmipmappedArray mm;
    /* 64 x 32 float4: 64 * 32 * 16 = 32768 bytes */
    CUDA_ARRAY_DESCRIPTOR d2 = {.Width = 64, .Height = 32, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
    /* 16 x 8 x 4 uchar1: 512 bytes */
    CUDA_ARRAY3D_DESCRIPTOR d3 = {
        .Width = 16, .Height = 8, .Depth = 4, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1};
    /* 32 x 32 float, 3 levels: (32 * 32 + 16 * 16 + 8 * 8) * 4 = 5376 bytes */
    CUDA_ARRAY3D_DESCRIPTOR dm = {.Width = 32, .Height = 32, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CHECK(cuArrayCreate(&a2, &d2));
    CHECK(cuArray3DCreate(&a3, &d3));
    CHECK(cuMipmappedArrayCreate(&mm, &dm, 3));
    enum { REGISTERED = 1 << 20 };
    void *host = malloc(REGISTERED);
    check(host != NULL, "malloc");
    CHECK(cuMemHostRegister(host, REGISTERED, CU_MEMHOSTREGISTER_PORTABLE));
    CHECK(cuMemHostUnregister(host));
    free(host);
    CHECK(cuArrayDestroy(a2));
    CHECK(cuArrayDestroy(a3));
    CHECK(cuMipmappedArrayDestroy(mm));
    printf("array_bytes=%d\narray3d_bytes=%d\nmipmapped_bytes=%d\nregistered_bytes=%d\n", 64 * 32 * 16, 16 * 8 * 4,
           (32 * 32 + 16 * 16 + 8 * 8) * 4, (int)REGISTERED);
}

static void ipc(CUfunction f)
{
    enum { BYTES = 7000 };
    CUdeviceptr dev;
    CUipcMemHandle h;
    CHECK(cuMemAlloc(&dev, BYTES));
    CHECK(cuIpcGetMemHandle(&h, dev));
    void *params[] = {&dev};
    CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL)); /* named in the parent's trace */
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        check(0, "fork");
        return;
    }
    if (pid == 0) {
        CUdeviceptr a = 0, b = 0;
        CHECK(cuIpcOpenMemHandle(&a, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
        CHECK(cuIpcOpenMemHandle(&b, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
        CHECK(cuIpcCloseMemHandle(a));
        CHECK(cuIpcCloseMemHandle(b));
        CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL)); /* to be named in the child's */
        printf("child_pid=%d\nmapped=%llu\nsame=%d\n", (int)getpid(), (unsigned long long)a, a == b);
        exit(failures ? 1 : 0);
    }
    int status;
    check(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child");
    printf("bytes=%d\n", BYTES);
    CHECK(cuMemFree(dev));
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: driver_prog direct|vmm|vmm_refs|graph|arrays|ipc\n");
        return 2;
    }
    CUfunction f = setup();
    if (strcmp(argv[1], "direct") == 0)
        direct(f);
    else if (strcmp(argv[1], "vmm") == 0)
        vmm();
    else if (strcmp(argv[1], "vmm_refs") == 0)
        vmm_refs();
    else if (strcmp(argv[1], "graph") == 0)
        graph(f);
    else if (strcmp(argv[1], "arrays") == 0)
        arrays();
    else if (strcmp(argv[1], "ipc") == 0)
        ipc(f);
    else {
        fprintf(stderr, "driver_prog: unknown scenario %s\n", argv[1]);
        return 2;
    }
    return failures ? 1 : 0;
}
