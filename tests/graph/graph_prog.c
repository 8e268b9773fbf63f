/*
 * graph_prog: the program test_graph_trace runs under libwstrace.so, one scenario per argv[1].
 * An ordinary CUDA program on the simulated device (kernels are host functions, exported so the
 * tracer names them); it prints "key=value" lines with what it did, which the tests compare with
 * the trace.
 *
 *   memnodes N M   a graph with an explicit memory node (alloc, kernel, free) launched N times in
 *                  node "explicit", and a captured stream-ordered allocation (cudaMallocAsync,
 *                  kernel, cudaFreeAsync) launched M times in node "captured"
 *   kernels K L    a graph of K kernel nodes, one of them in a child graph, launched L times
 *   unfreed        graph memory freed outside its graph (cudaFree, cudaFreeAsync, a free node in
 *                  another graph), and an AutoFreeOnLaunch instance relaunched
 *   update         an instance whose kernel node is changed, disabled and updated between launches
 *   arrays         cudaMallocArray, cudaMalloc3DArray, cudaMallocMipmappedArray, cudaMalloc3D
 *   register       cudaHostRegister / cudaHostUnregister
 *   pool           a pool's reserved and used bytes: allocations, a synchronisation, a trim
 *   ipc            a forked child opens the parent's IPC handle twice and closes it twice
 *   modes          a capture that a prohibited call invalidates, and one in relaxed mode
 *   threads T K    T threads, each capturing its own stream (thread-local mode) and launching the
 *                  graph K times inside its own node "thread-<i>"
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "wssim.h"
#include "wstrace.h"

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        cudaError_t err_ = (call);                                                                                     \
        if (err_ != cudaSuccess) {                                                                                     \
            fprintf(stderr, "graph_prog: %s failed: %d at line %d\n", #call, (int)err_, __LINE__);                     \
            exit(70);                                                                                                  \
        }                                                                                                              \
    } while (0)

static const dim3 one = {1, 1, 1};

/* ---- kernels (exported: the tracer names them from the dynamic symbol table) ---- */

void graph_kernel_touch(void **args)
{
    unsigned char *p = *(unsigned char **)args[0];
    p[0]++;
}

void graph_kernel_count(void **args) { ++**(int **)args[0]; }

static const size_t pointer_param[] = {sizeof(void *)};

static void register_kernels(void)
{
    if (wssim_register_function_params(graph_kernel_touch, 1, pointer_param) != 0 ||
        wssim_register_function_params(graph_kernel_count, 1, pointer_param) != 0) {
        fprintf(stderr, "graph_prog: cannot register the kernels\n");
        exit(70);
    }
}

static struct cudaMemAllocNodeParams alloc_params(size_t bytes)
{
    struct cudaMemAllocNodeParams p;
    memset(&p, 0, sizeof p);
    p.poolProps.allocType = cudaMemAllocationTypePinned;
    p.poolProps.location.type = cudaMemLocationTypeDevice;
    p.bytesize = bytes;
    return p;
}

static cudaGraphNode_t kernel_node(cudaGraph_t g, const cudaGraphNode_t *deps, size_t ndeps, void (*fn)(void **),
                                   void *arg)
{
    void *args[] = {arg};
    struct cudaKernelNodeParams k = {(void *)fn, one, one, 0, args, NULL};
    cudaGraphNode_t n;
    CHECK(cudaGraphAddKernelNode(&n, g, deps, ndeps, &k));
    return n;
}

/* ---- memnodes ---- */

static int memnodes(int n, int m)
{
    enum { EXPLICIT_BYTES = 1 << 20, CAPTURED_BYTES = 3 << 20 };
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    /* explicit: alloc -> kernel -> free */
    cudaGraph_t g;
    cudaGraphNode_t a, k, f;
    CHECK(cudaGraphCreate(&g, 0));
    struct cudaMemAllocNodeParams p = alloc_params(EXPLICIT_BYTES);
    CHECK(cudaGraphAddMemAllocNode(&a, g, NULL, 0, &p));
    void *explicit_ptr = p.dptr;
    k = kernel_node(g, &a, 1, graph_kernel_touch, &explicit_ptr);
    CHECK(cudaGraphAddMemFreeNode(&f, g, &k, 1, explicit_ptr));
    cudaGraphExec_t xe;
    CHECK(cudaGraphInstantiate(&xe, g, 0));
    CHECK(cudaGraphDestroy(g));

    /* captured: cudaMallocAsync -> kernel -> cudaFreeAsync, in node "capture" */
    void *captured_ptr = NULL;
    wstrace_node_push("capture");
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaMallocAsync(&captured_ptr, CAPTURED_BYTES, s));
    void *args[] = {&captured_ptr};
    CHECK(cudaLaunchKernel((const void *)graph_kernel_touch, one, one, args, 0, s));
    CHECK(cudaFreeAsync(captured_ptr, s));
    cudaGraph_t cg;
    CHECK(cudaStreamEndCapture(s, &cg));
    wstrace_node_pop();
    cudaGraphExec_t xc;
    CHECK(cudaGraphInstantiate(&xc, cg, 0));
    CHECK(cudaGraphDestroy(cg));

    wstrace_run_begin("graphs");
    wstrace_node_push("explicit");
    for (int i = 0; i < n; i++)
        CHECK(cudaGraphLaunch(xe, s));
    wstrace_node_pop();
    wstrace_node_push("captured");
    for (int i = 0; i < m; i++)
        CHECK(cudaGraphLaunch(xc, s));
    wstrace_node_pop();
    CHECK(cudaStreamSynchronize(s));
    wstrace_run_end();

    struct wssim_stats st;
    wssim_get_stats(&st);
    printf("explicit_launches=%d\ncaptured_launches=%d\n", n, m);
    printf("explicit_bytes=%d\ncaptured_bytes=%d\n", EXPLICIT_BYTES, CAPTURED_BYTES);
    printf("explicit_address=%llu\ncaptured_address=%llu\n", (unsigned long long)(uintptr_t)explicit_ptr,
           (unsigned long long)(uintptr_t)captured_ptr);
    printf("device_allocations=%llu\ndevice_kernels=%llu\n", (unsigned long long)st.alloc_calls,
           (unsigned long long)st.launches);
    CHECK(cudaGraphExecDestroy(xe));
    CHECK(cudaGraphExecDestroy(xc));
    CHECK(cudaStreamDestroy(s));
    return 0;
}

/* ---- kernels ---- */

static int kernels(int k, int l)
{
    int counter = 0, *c = &counter;
    cudaGraph_t g, child;
    CHECK(cudaGraphCreate(&g, 0));
    CHECK(cudaGraphCreate(&child, 0));
    kernel_node(child, NULL, 0, graph_kernel_count, &c);
    cudaGraphNode_t prev = NULL, sub;
    for (int i = 0; i < k - 1; i++)
        prev = kernel_node(g, prev ? &prev : NULL, prev ? 1 : 0, graph_kernel_count, &c);
    CHECK(cudaGraphAddChildGraphNode(&sub, g, prev ? &prev : NULL, prev ? 1 : 0, child));
    cudaGraphExec_t x;
    CHECK(cudaGraphInstantiate(&x, g, 0));
    wstrace_node_push("graph-kernels");
    for (int i = 0; i < l; i++)
        CHECK(cudaGraphLaunch(x, NULL));
    wstrace_node_pop();
    printf("kernel_nodes=%d\nlaunches=%d\nkernels_run=%d\n", k, l, counter);
    CHECK(cudaGraphExecDestroy(x));
    CHECK(cudaGraphDestroy(child));
    CHECK(cudaGraphDestroy(g));
    return 0;
}

/* ---- unfreed ---- */

static int unfreed(void)
{
    enum { BYTES = 4096 };
    cudaGraph_t g, h;
    cudaGraphNode_t a, f;
    CHECK(cudaGraphCreate(&g, 0));
    struct cudaMemAllocNodeParams p = alloc_params(BYTES);
    CHECK(cudaGraphAddMemAllocNode(&a, g, NULL, 0, &p));
    cudaGraphExec_t x, y;
    CHECK(cudaGraphInstantiate(&x, g, 0));
    /* 1: freed by cudaFree; 2: by cudaFreeAsync; 3: by a free node of another graph */
    CHECK(cudaGraphLaunch(x, NULL));
    CHECK(cudaFree(p.dptr));
    CHECK(cudaGraphLaunch(x, NULL));
    CHECK(cudaFreeAsync(p.dptr, NULL));
    CHECK(cudaGraphCreate(&h, 0));
    CHECK(cudaGraphAddMemFreeNode(&f, h, NULL, 0, p.dptr));
    CHECK(cudaGraphInstantiate(&y, h, 0));
    CHECK(cudaGraphLaunch(x, NULL));
    CHECK(cudaGraphLaunch(y, NULL));
    CHECK(cudaGraphExecDestroy(x));
    /* AutoFreeOnLaunch: 3 launches, the first two freed by the next launch, the last never */
    cudaGraphExec_t z;
    CHECK(cudaGraphInstantiateWithFlags(&z, g, cudaGraphInstantiateFlagAutoFreeOnLaunch));
    for (int i = 0; i < 3; i++)
        CHECK(cudaGraphLaunch(z, NULL));
    printf("address=%llu\nbytes=%d\n", (unsigned long long)(uintptr_t)p.dptr, BYTES);
    CHECK(cudaGraphExecDestroy(y));
    CHECK(cudaGraphExecDestroy(z));
    CHECK(cudaGraphDestroy(h));
    CHECK(cudaGraphDestroy(g));
    return 0;
}

/* ---- update ---- */

static int update(void)
{
    int counter = 0, *c = &counter;
    cudaGraph_t g, h;
    CHECK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t k = kernel_node(g, NULL, 0, graph_kernel_count, &c);
    cudaGraphExec_t x;
    CHECK(cudaGraphInstantiate(&x, g, 0));
    CHECK(cudaGraphLaunch(x, NULL)); /* count */
    void *args[] = {&c};
    struct cudaKernelNodeParams p = {(void *)graph_kernel_touch, one, one, 0, args, NULL};
    CHECK(cudaGraphExecKernelNodeSetParams(x, k, &p));
    CHECK(cudaGraphLaunch(x, NULL)); /* touch */
    CHECK(cudaGraphNodeSetEnabled(x, k, 0));
    CHECK(cudaGraphLaunch(x, NULL)); /* nothing */
    CHECK(cudaGraphNodeSetEnabled(x, k, 1));
    CHECK(cudaGraphCreate(&h, 0));
    kernel_node(h, NULL, 0, graph_kernel_count, &c);
    cudaGraphExecUpdateResultInfo info;
    CHECK(cudaGraphExecUpdate(x, h, &info));
    CHECK(cudaGraphLaunch(x, NULL));         /* count */
    CHECK(cudaGraphNodeSetEnabled(x, k, 0)); /* the node of the graph instantiated still names it */
    CHECK(cudaGraphLaunch(x, NULL));         /* nothing */
    printf("launches=5\ncount_kernels=2\ntouch_kernels=1\n");
    CHECK(cudaGraphExecDestroy(x));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaGraphDestroy(h));
    return 0;
}

/* ---- the other allocation paths ---- */

static int arrays(void)
{
    struct cudaChannelFormatDesc f4 = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
    struct cudaChannelFormatDesc rgba = cudaCreateChannelDesc(8, 8, 8, 8, cudaChannelFormatKindUnsigned);
    cudaArray_t a, b;
    cudaMipmappedArray_t m;
    struct cudaPitchedPtr p;
    wstrace_node_push("arrays");
    CHECK(cudaMallocArray(&a, &f4, 640, 480, 0));
    CHECK(cudaMalloc3DArray(&b, &rgba, (struct cudaExtent){64, 32, 16}, 0));
    CHECK(cudaMallocMipmappedArray(&m, &f4, (struct cudaExtent){256, 256, 0}, 3, 0));
    CHECK(cudaMalloc3D(&p, (struct cudaExtent){1000, 20, 10}));
    wstrace_node_pop();
    struct wssim_stats st;
    wssim_get_stats(&st);
    printf("live_bytes=%llu\npitch=%zu\n", (unsigned long long)st.live_bytes, p.pitch);
    printf("array=%llu\nmipmap=%llu\n", (unsigned long long)(uintptr_t)a, (unsigned long long)(uintptr_t)m);
    CHECK(cudaFreeArray(a));
    CHECK(cudaFreeArray(b));
    CHECK(cudaFreeMipmappedArray(m));
    CHECK(cudaFree(p.ptr));
    return 0;
}

static int register_host(void)
{
    enum { BYTES = 64 << 20 };
    void *buf = malloc(BYTES);
    if (!buf)
        return 1;
    CHECK(cudaHostRegister(buf, BYTES, cudaHostRegisterMapped));
    cudaError_t again = cudaHostRegister(buf, 16, 0);
    CHECK(cudaHostUnregister(buf));
    printf("bytes=%d\naddress=%llu\nagain=%d\n", BYTES, (unsigned long long)(uintptr_t)buf, (int)again);
    free(buf);
    return 0;
}

static unsigned long long pool_attr(cudaMemPool_t pool, enum cudaMemPoolAttr attr)
{
    unsigned long long v = 0;
    CHECK(cudaMemPoolGetAttribute(pool, attr, &v));
    return v;
}

static int pool(void)
{
    enum { MB = 1 << 20 };
    cudaMemPool_t pool;
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    CHECK(cudaMemPoolCreate(&pool, &props));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    void *a, *b, *c;
    wstrace_node_push("pool");
    CHECK(cudaMallocFromPoolAsync(&a, 1 * MB, pool, s));
    printf("reserved_1=%llu\n", pool_attr(pool, cudaMemPoolAttrReservedMemCurrent));
    CHECK(cudaMallocFromPoolAsync(&b, 5 * MB, pool, s));
    printf("reserved_2=%llu\n", pool_attr(pool, cudaMemPoolAttrReservedMemCurrent));
    CHECK(cudaFreeAsync(b, s));
    CHECK(cudaStreamSynchronize(s));
    printf("reserved_3=%llu\n", pool_attr(pool, cudaMemPoolAttrReservedMemCurrent));
    unsigned long long threshold = 16 * MB;
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    CHECK(cudaMallocFromPoolAsync(&c, 9 * MB, pool, s));
    printf("reserved_4=%llu\n", pool_attr(pool, cudaMemPoolAttrReservedMemCurrent));
    CHECK(cudaFreeAsync(c, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemPoolTrimTo(pool, 0));
    printf("reserved_5=%llu\n", pool_attr(pool, cudaMemPoolAttrReservedMemCurrent));
    CHECK(cudaFreeAsync(a, s));
    void *d;
    CHECK(cudaMallocAsync(&d, 3 * MB, s)); /* from the device's current pool */
    CHECK(cudaFreeAsync(d, s));
    wstrace_node_pop();
    printf("pool=%llu\nthreshold=%llu\n", (unsigned long long)(uintptr_t)pool, threshold);
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaMemPoolDestroy(pool));
    return 0;
}

static int ipc(void)
{
    enum { BYTES = 5000 };
    void *dev;
    cudaIpcMemHandle_t h;
    CHECK(cudaMalloc(&dev, BYTES));
    CHECK(cudaIpcGetMemHandle(&h, dev));
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        void *a, *b;
        CHECK(cudaIpcOpenMemHandle(&a, h, cudaIpcMemLazyEnablePeerAccess));
        CHECK(cudaIpcOpenMemHandle(&b, h, cudaIpcMemLazyEnablePeerAccess));
        CHECK(cudaIpcCloseMemHandle(a));
        CHECK(cudaIpcCloseMemHandle(b));
        printf("child_pid=%d\nmapped=%llu\nsame=%d\n", (int)getpid(), (unsigned long long)(uintptr_t)a, a == b);
        exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 1;
    printf("bytes=%d\n", BYTES);
    CHECK(cudaFree(dev));
    return 0;
}

static int modes(void)
{
    cudaStream_t s;
    cudaGraph_t g;
    void *p = NULL, *q = NULL;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaMallocAsync(&q, 256, s));
    cudaError_t prohibited = cudaMalloc(&p, 100); /* implicitly synchronising: refused */
    cudaError_t ended = cudaStreamEndCapture(s, &g);
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    CHECK(cudaMalloc(&p, 100)); /* allowed, and run: it is not stream-ordered */
    CHECK(cudaMallocAsync(&q, 512, s));
    CHECK(cudaFreeAsync(q, s));
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(cudaFree(p));
    printf("prohibited=%d\nended=%d\n", (int)prohibited, (int)ended);
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaStreamDestroy(s));
    return 0;
}

struct worker {
    int index, launches;
    char node[32];
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t x;
    void *p = NULL;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CHECK(cudaMallocAsync(&p, 4096 * (size_t)(w->index + 1), s));
    void *args[] = {&p};
    CHECK(cudaLaunchKernel((const void *)graph_kernel_touch, one, one, args, 0, s));
    CHECK(cudaFreeAsync(p, s));
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(cudaGraphInstantiate(&x, g, 0));
    wstrace_node_push(w->node);
    for (int i = 0; i < w->launches; i++)
        CHECK(cudaGraphLaunch(x, s));
    wstrace_node_pop();
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaGraphExecDestroy(x));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaStreamDestroy(s));
    return NULL;
}

static int threads(int t, int k)
{
    pthread_t ids[16];
    struct worker w[16];
    if (t < 1 || t > 16)
        return 2;
    for (int i = 0; i < t; i++) {
        w[i].index = i;
        w[i].launches = k;
        snprintf(w[i].node, sizeof w[i].node, "thread-%d", i);
        if (pthread_create(&ids[i], NULL, worker_main, &w[i]) != 0)
            return 1;
    }
    for (int i = 0; i < t; i++)
        pthread_join(ids[i], NULL);
    printf("threads=%d\nlaunches=%d\n", t, k);
    return 0;
}

int main(int argc, char **argv)
{
    register_kernels();
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "memnodes") && argc == 4)
        return memnodes(atoi(argv[2]), atoi(argv[3]));
    if (!strcmp(mode, "kernels") && argc == 4)
        return kernels(atoi(argv[2]), atoi(argv[3]));
    if (!strcmp(mode, "unfreed"))
        return unfreed();
    if (!strcmp(mode, "update"))
        return update();
    if (!strcmp(mode, "arrays"))
        return arrays();
    if (!strcmp(mode, "register"))
        return register_host();
    if (!strcmp(mode, "pool"))
        return pool();
    if (!strcmp(mode, "ipc"))
        return ipc();
    if (!strcmp(mode, "modes"))
        return modes();
    if (!strcmp(mode, "threads") && argc == 4)
        return threads(atoi(argv[2]), atoi(argv[3]));
    fprintf(stderr, "usage: graph_prog memnodes N M | kernels K L | unfreed | update | arrays | register | pool | "
                    "ipc | modes | threads T K\n");
    return 2;
}
