/* Graphs on the simulated device: nodes, launch order, kernel argument copies, graph memory
 * (addresses fixed per graph, allocated at each launch, reused after a free), instances, updates,
 * and the graph allocator's footprint.  Expected values are derived in the comments from the
 * calls each test makes. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "wssim.h"

static const dim3 one = {1, 1, 1};

static struct wssim_stats stats(void)
{
    struct wssim_stats s;
    wssim_get_stats(&s);
    return s;
}

static uint64_t graph_mem(enum cudaGraphMemAttributeType attr)
{
    uint64_t v = 0;
    cr_assert_eq(cudaDeviceGetGraphMemAttribute(0, attr, &v), cudaSuccess);
    return v;
}

/* A host kernel that adds its second argument to the int its first points to. */
static void add_to(void **args) { **(int **)args[0] += *(int *)args[1]; }
static const size_t add_to_sizes[] = {sizeof(int *), sizeof(int)};

/* A host kernel that writes the address it was given into *record (to see the address a graph
 * allocation has at launch) and fills its first 4 bytes. */
static void note_address(void **args)
{
    void *p = *(void **)args[0];
    **(void ***)args[1] = p;
    memset(p, 0x5a, 4);
}
static const size_t note_sizes[] = {sizeof(void *), sizeof(void **)};

static void register_kernels(void)
{
    cr_assert_eq(wssim_register_function_params(add_to, 2, add_to_sizes), 0);
    cr_assert_eq(wssim_register_function_params(note_address, 2, note_sizes), 0);
}

static struct cudaMemAllocNodeParams alloc_params(size_t bytes)
{
    struct cudaMemAllocNodeParams p;
    memset(&p, 0, sizeof p);
    p.poolProps.allocType = cudaMemAllocationTypePinned;
    p.poolProps.location.type = cudaMemLocationTypeDevice;
    p.poolProps.location.id = 0;
    p.bytesize = bytes;
    return p;
}

static cudaGraphNode_t add_kernel(cudaGraph_t g, const cudaGraphNode_t *deps, size_t ndeps, void (*fn)(void **),
                                  void **args)
{
    struct cudaKernelNodeParams k = {(void *)fn, one, one, 0, args, NULL};
    cudaGraphNode_t n = NULL;
    cr_assert_eq(cudaGraphAddKernelNode(&n, g, deps, ndeps, &k), cudaSuccess);
    return n;
}

Test(sim_graph, kernel_nodes_keep_copies_of_their_arguments, .init = register_kernels)
{
    int total = 0, *target = &total, step = 5;
    cudaGraph_t g;
    cudaGraphExec_t x;
    cr_assert_eq(cudaGraphCreate(&g, 0), cudaSuccess);
    void *args[] = {&target, &step};
    add_kernel(g, NULL, 0, add_to, args);
    step = 1000; /* the node copied 5 when it was added */
    cr_assert_eq(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(cudaGraphLaunch(x, NULL), cudaSuccess);
    cr_expect_eq(total, 15, "3 launches x 5");
    cr_expect_eq(stats().launches, 3, "each launch runs the kernel node once");
    cr_expect_eq(cudaGraphExecDestroy(x), cudaSuccess);
    cr_expect_eq(cudaGraphDestroy(g), cudaSuccess);
}

static void no_layout(void **args) { (void)args; }

Test(sim_graph, a_kernel_without_a_parameter_layout_cannot_be_a_node)
{
    cudaGraph_t g;
    cudaGraphNode_t n;
    cr_assert_eq(cudaGraphCreate(&g, 0), cudaSuccess);
    struct cudaKernelNodeParams k = {(void *)no_layout, one, one, 0, NULL, NULL};
    cr_expect_eq(cudaGraphAddKernelNode(&n, g, NULL, 0, &k), cudaErrorNotSupported);
    size_t count = 99;
    cr_expect_eq(cudaGraphGetNodes(g, NULL, &count), cudaSuccess);
    cr_expect_eq(count, 0);
    cr_expect_eq(cudaGraphDestroy(g), cudaSuccess);
}

/* Host nodes append their id: the launch order follows dependencies, then creation order. */
static char order[16];
static size_t norder;
static void mark(void *id) { order[norder++] = *(const char *)id; }

Test(sim_graph, launch_order_follows_dependencies)
{
    static const char ids[] = "ABCD";
    cudaGraph_t g;
    cudaGraphNode_t a, b, c, d;
    cr_assert_eq(cudaGraphCreate(&g, 0), cudaSuccess);
    struct cudaHostNodeParams h = {mark, (void *)&ids[0]};
    cr_assert_eq(cudaGraphAddHostNode(&a, g, NULL, 0, &h), cudaSuccess);
    h.userData = (void *)&ids[1];
    cr_assert_eq(cudaGraphAddHostNode(&b, g, NULL, 0, &h), cudaSuccess);
    h.userData = (void *)&ids[2];
    cr_assert_eq(cudaGraphAddHostNode(&c, g, NULL, 0, &h), cudaSuccess);
    h.userData = (void *)&ids[3];
    cr_assert_eq(cudaGraphAddHostNode(&d, g, NULL, 0, &h), cudaSuccess);
    /* A after C, C after D: D C A, with B (no dependency) first by creation order */
    cr_assert_eq(cudaGraphAddDependencies(g, &c, &a, NULL, 1), cudaSuccess);
    cr_assert_eq(cudaGraphAddDependencies(g, &d, &c, NULL, 1), cudaSuccess);
    cudaGraphExec_t x;
    cr_assert_eq(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    cr_assert_eq(cudaGraphLaunch(x, NULL), cudaSuccess);
    order[norder] = 0;
    cr_expect_str_eq(order, "BDCA");
    size_t edges = 0, roots = 0;
    cr_expect_eq(cudaGraphGetEdges(g, NULL, NULL, NULL, &edges), cudaSuccess);
    cr_expect_eq(edges, 2);
    cr_expect_eq(cudaGraphGetRootNodes(g, NULL, &roots), cudaSuccess);
    cr_expect_eq(roots, 2, "B and D");
    /* a cycle cannot be instantiated */
    cr_assert_eq(cudaGraphAddDependencies(g, &a, &d, NULL, 1), cudaSuccess);
    cudaGraphExec_t y;
    cr_expect_eq(cudaGraphInstantiate(&y, g, 0), cudaErrorInvalidValue);
    cr_expect_eq(cudaGraphExecDestroy(x), cudaSuccess);
    cr_expect_eq(cudaGraphDestroy(g), cudaSuccess);
}

Test(sim_graph, memory_nodes_allocate_at_each_launch_at_a_fixed_address, .init = register_kernels)
{
    enum { BYTES = 4096, LAUNCHES = 4 };
    cudaGraph_t g;
    cudaGraphNode_t alloc, kernel, freed;
    cr_assert_eq(cudaGraphCreate(&g, 0), cudaSuccess);
    struct cudaMemAllocNodeParams a = alloc_params(BYTES);
    cr_assert_eq(cudaGraphAddMemAllocNode(&alloc, g, NULL, 0, &a), cudaSuccess);
    cr_assert_not_null(a.dptr);
    void *seen = NULL, **where = &seen;
    void *args[] = {&a.dptr, &where};
    kernel = add_kernel(g, &alloc, 1, note_address, args);
    cr_assert_eq(cudaGraphAddMemFreeNode(&freed, g, &kernel, 1, a.dptr), cudaSuccess);
    cr_expect_eq(stats().alloc_calls, 0, "adding a memory node allocates nothing");
    cr_expect_eq(cudaFree(a.dptr), cudaErrorInvalidValue, "not allocated before a launch");

    struct cudaMemAllocNodeParams back;
    cr_assert_eq(cudaGraphMemAllocNodeGetParams(alloc, &back), cudaSuccess);
    cr_expect_eq(back.dptr, a.dptr);
    cr_expect_eq(back.bytesize, BYTES);
    void *freed_ptr = NULL;
    cr_assert_eq(cudaGraphMemFreeNodeGetParams(freed, &freed_ptr), cudaSuccess);
    cr_expect_eq(freed_ptr, a.dptr);

    cudaGraphExec_t x;
    cr_assert_eq(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    cr_expect_eq(stats().alloc_calls, 0, "nor does instantiating");
    for (int i = 0; i < LAUNCHES; i++) {
        seen = NULL;
        cr_assert_eq(cudaGraphLaunch(x, NULL), cudaSuccess);
        cr_expect_eq(seen, a.dptr, "launch %d allocates at the node's address", i);
    }
    struct wssim_stats s = stats();
    cr_expect_eq(s.alloc_calls, LAUNCHES, "one allocation per launch");
    cr_expect_eq(s.free_calls, LAUNCHES);
    cr_expect_eq(s.live_bytes, 0);
    cr_expect_eq(s.peak_bytes, BYTES);
    /* freed inside the graph, the memory stays associated with graphs (mapped for the next launch) */
    cr_expect_eq(graph_mem(cudaGraphMemAttrUsedMemCurrent), BYTES);
    cr_expect_eq(graph_mem(cudaGraphMemAttrUsedMemHigh), BYTES, "launches one after the other share it");
    cr_expect_eq(graph_mem(cudaGraphMemAttrReservedMemCurrent), BYTES);
    cr_expect_eq(cudaDeviceGraphMemTrim(0), cudaSuccess);
    cr_expect_eq(graph_mem(cudaGraphMemAttrUsedMemCurrent), 0, "until it is trimmed");
    cr_expect_eq(graph_mem(cudaGraphMemAttrReservedMemCurrent), 0);
    cr_expect_eq(graph_mem(cudaGraphMemAttrReservedMemHigh), BYTES);
    uint64_t zero = 0, two = 2;
    cr_expect_eq(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &zero), cudaSuccess);
    cr_expect_eq(graph_mem(cudaGraphMemAttrUsedMemHigh), 0, "reset to the current value");
    cr_expect_eq(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &two), cudaErrorInvalidValue);
    cr_expect_eq(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &zero), cudaErrorInvalidValue);

    /* one instance at a time of a graph with memory nodes; none can be cloned */
    cudaGraphExec_t y;
    cudaGraph_t c;
    cr_expect_eq(cudaGraphInstantiate(&y, g, 0), cudaErrorInvalidValue);
    cr_expect_eq(cudaGraphClone(&c, g), cudaErrorNotSupported);
    cr_expect_eq(cudaGraphExecDestroy(x), cudaSuccess);
    cr_expect_eq(cudaGraphInstantiate(&y, g, 0), cudaSuccess);
    cr_expect_eq(cudaGraphExecDestroy(y), cudaSuccess);
    cr_expect_eq(cudaGraphDestroy(g), cudaSuccess);
}

Test(sim_graph, an_allocation_after_a_free_reuses_its_address)
{
    cudaGraph_t g;
    cudaGraphNode_t a1, f1, a2, a3, f2;
    cr_assert_eq(cudaGraphCreate(&g, 0), cudaSuccess);
    struct cudaMemAllocNodeParams p = alloc_params(1 << 20);
    cr_assert_eq(cudaGraphAddMemAllocNode(&a1, g, NULL, 0, &p), cudaSuccess);
    void *first = p.dptr;
    cr_assert_eq(cudaGraphAddMemFreeNode(&f1, g, &a1, 1, first), cudaSuccess);
    cr_expect_eq(cudaGraphAddMemFreeNode(&f2, g, &a1, 1, first), cudaErrorInvalidValue, "freed twice in its graph");
    cr_assert_eq(cudaGraphAddMemAllocNode(&a2, g, &f1, 1, &p), cudaSuccess);
    cr_expect_eq(p.dptr, first, "ordered after the free: the same address");
    void *second = p.dptr;
    cr_assert_eq(cudaGraphAddMemAllocNode(&a3, g, &f1, 1, &p), cudaSuccess);
    cr_expect_neq(p.dptr, second, "the address is in use by a2, which no free before a3 releases");
    cr_expect_eq(cudaGraphAddMemFreeNode(&f2, g, NULL, 0, (char *)first + 8), cudaErrorInvalidValue,
                 "not an address an allocation node returned");

    /* one launch: a1, free, a2 (the same block), a3: three allocations, at most two live */
    cudaGraphExec_t x;
    cr_assert_eq(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    cr_assert_eq(cudaGraphLaunch(x, NULL), cudaSuccess);
    struct wssim_stats s = stats();
    cr_expect_eq(s.alloc_calls, 3);
    cr_expect_eq(s.free_calls, 1);
    cr_expect_eq(s.live_bytes, 2u << 20, "a2 and a3 are not freed in the graph");
    cr_expect_eq(s.peak_bytes, 2u << 20);

    /* relaunching while they are live fails; freeing them outside the graph allows it */
    cr_expect_eq(cudaGraphLaunch(x, NULL), cudaErrorInvalidValue);
    cr_expect_eq(cudaFree(second), cudaSuccess);
    cr_expect_eq(cudaFreeAsync(p.dptr, NULL), cudaSuccess);
    cr_expect_eq(cudaFree(second), cudaErrorInvalidValue, "freed already");
    cr_expect_eq(cudaGraphLaunch(x, NULL), cudaSuccess);
    cr_expect_eq(stats().alloc_calls, 6);
    cr_expect_eq(cudaGraphExecDestroy(x), cudaSuccess);
    cr_expect_eq(stats().live_bytes, 2u << 20, "unfreed graph memory outlives its instance");
    cr_expect_eq(cudaGraphDestroy(g), cudaSuccess);
    cr_expect_eq(cudaFree(second), cudaSuccess, "and its graph");
    cr_expect_eq(cudaFree(p.dptr), cudaSuccess);
    cr_expect_eq(stats().live_bytes, 0);
}

Test(sim_graph, auto_free_on_launch_frees_what_the_last_launch_left)
{
    enum { BYTES = 1000, LAUNCHES = 3 };
    cudaGraph_t g;
    cudaGraphNode_t a;
    cr_assert_eq(cudaGraphCreate(&g, 0), cudaSuccess);
    struct cudaMemAllocNodeParams p = alloc_params(BYTES);
    cr_assert_eq(cudaGraphAddMemAllocNode(&a, g, NULL, 0, &p), cudaSuccess);
    cudaGraphExec_t x;
    cr_expect_eq(cudaGraphInstantiateWithFlags(
                     &x, g, cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagDeviceLaunch),
                 cudaErrorInvalidValue, "the two flags exclude each other");
    cr_assert_eq(cudaGraphInstantiateWithFlags(&x, g, cudaGraphInstantiateFlagAutoFreeOnLaunch), cudaSuccess);
    unsigned long long flags = 0;
    cr_expect_eq(cudaGraphExecGetFlags(x, &flags), cudaSuccess);
    cr_expect_eq(flags, cudaGraphInstantiateFlagAutoFreeOnLaunch);
    for (int i = 0; i < LAUNCHES; i++)
        cr_assert_eq(cudaGraphLaunch(x, NULL), cudaSuccess);
    struct wssim_stats s = stats();
    cr_expect_eq(s.alloc_calls, LAUNCHES);
    cr_expect_eq(s.free_calls, LAUNCHES - 1, "each relaunch freed the one before");
    cr_expect_eq(s.live_bytes, BYTES);

    /* a free node in another graph frees it */
    cudaGraph_t h;
    cudaGraphNode_t f;
    cudaGraphExec_t y;
    cr_assert_eq(cudaGraphCreate(&h, 0), cudaSuccess);
    cr_assert_eq(cudaGraphAddMemFreeNode(&f, h, NULL, 0, p.dptr), cudaSuccess);
    cr_assert_eq(cudaGraphInstantiate(&y, h, 0), cudaSuccess);
    cr_expect_eq(cudaGraphLaunch(y, NULL), cudaSuccess);
    cr_expect_eq(stats().live_bytes, 0);
    cr_expect_eq(cudaGraphLaunch(y, NULL), cudaErrorInvalidValue, "nothing left to free");
    cr_expect_eq(cudaGraphExecDestroy(y), cudaSuccess);
    cr_expect_eq(cudaGraphExecDestroy(x), cudaSuccess);
    cr_expect_eq(cudaGraphDestroy(h), cudaSuccess);
    cr_expect_eq(cudaGraphDestroy(g), cudaSuccess);
}

Test(sim_graph, copies_fills_and_child_graphs_run, .init = register_kernels)
{
    int *dev = NULL, host[4] = {1, 2, 3, 4}, back[4] = {0};
    cr_assert_eq(cudaMalloc((void **)&dev, sizeof host), cudaSuccess);
    cudaGraph_t child, g;
    cudaGraphNode_t set, copy_in, copy_out, sub, k;
    cr_assert_eq(cudaGraphCreate(&child, 0), cudaSuccess);
    int step = 10, *second = &dev[1];
    void *args[] = {&second, &step};
    k = add_kernel(child, NULL, 0, add_to, args);
    cr_assert_eq(cudaGraphCreate(&g, 0), cudaSuccess);
    struct cudaMemsetParams m = {dev, 0, 0xff, 1, sizeof host, 1};
    cr_assert_eq(cudaGraphAddMemsetNode(&set, g, NULL, 0, &m), cudaSuccess);
    cr_assert_eq(cudaGraphAddMemcpyNode1D(&copy_in, g, &set, 1, dev, host, sizeof host, cudaMemcpyHostToDevice),
                 cudaSuccess);
    cr_assert_eq(cudaGraphAddChildGraphNode(&sub, g, &copy_in, 1, child), cudaSuccess);
    cr_assert_eq(cudaGraphAddMemcpyNode1D(&copy_out, g, &sub, 1, back, dev, sizeof back, cudaMemcpyDeviceToHost),
                 cudaSuccess);
    cr_expect_eq(cudaGraphDestroy(child), cudaSuccess, "the node holds its own copy");
    cudaGraph_t inner = NULL;
    enum cudaGraphNodeType type;
    cr_expect_eq(cudaGraphChildGraphNodeGetGraph(sub, &inner), cudaSuccess);
    size_t n = 0;
    cr_expect_eq(cudaGraphGetNodes(inner, NULL, &n), cudaSuccess);
    cr_expect_eq(n, 1);
    cr_expect_eq(cudaGraphNodeGetType(sub, &type), cudaSuccess);
    cr_expect_eq(type, cudaGraphNodeTypeGraph);
    cr_expect_eq(cudaGraphNodeGetType(k, &type), cudaErrorInvalidValue, "a node of a destroyed graph");
    cudaGraphExec_t x;
    cr_assert_eq(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    cr_assert_eq(cudaGraphLaunch(x, NULL), cudaSuccess);
    cr_expect_eq(back[0], 1);
    cr_expect_eq(back[1], 12, "2 copied in, then 10 added by the child graph's kernel");
    cr_expect_eq(back[3], 4);
    cr_expect_eq(cudaGraphExecDestroy(x), cudaSuccess);
    cr_expect_eq(cudaGraphDestroy(g), cudaSuccess);
    cr_expect_eq(cudaFree(dev), cudaSuccess);
}

Test(sim_graph, instances_are_updated_and_nodes_disabled, .init = register_kernels)
{
    int total = 0, *target = &total, step = 1;
    void *args[] = {&target, &step};
    cudaGraph_t g, h, other;
    cr_assert_eq(cudaGraphCreate(&g, 0), cudaSuccess);
    cudaGraphNode_t k = add_kernel(g, NULL, 0, add_to, args);
    cudaGraphExec_t x;
    cr_assert_eq(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    cr_assert_eq(cudaGraphLaunch(x, NULL), cudaSuccess); /* +1 */
    step = 100;
    struct cudaKernelNodeParams p = {(void *)add_to, one, one, 0, args, NULL};
    cr_assert_eq(cudaGraphExecKernelNodeSetParams(x, k, &p), cudaSuccess);
    cr_assert_eq(cudaGraphLaunch(x, NULL), cudaSuccess); /* +100 */
    cr_assert_eq(cudaGraphNodeSetEnabled(x, k, 0), cudaSuccess);
    unsigned enabled = 1;
    cr_expect_eq(cudaGraphNodeGetEnabled(x, k, &enabled), cudaSuccess);
    cr_expect_eq(enabled, 0);
    cr_assert_eq(cudaGraphLaunch(x, NULL), cudaSuccess); /* disabled: +0 */
    cr_assert_eq(cudaGraphNodeSetEnabled(x, k, 1), cudaSuccess);
    /* an update from a graph of the same shape takes its parameters */
    cr_assert_eq(cudaGraphCreate(&h, 0), cudaSuccess);
    step = 1000;
    add_kernel(h, NULL, 0, add_to, args);
    cudaGraphExecUpdateResultInfo info;
    cr_expect_eq(cudaGraphExecUpdate(x, h, &info), cudaSuccess);
    cr_expect_eq(info.result, cudaGraphExecUpdateSuccess);
    cr_assert_eq(cudaGraphLaunch(x, NULL), cudaSuccess); /* +1000 */
    cr_expect_eq(total, 1101);
    /* one of another shape is refused and changes nothing */
    cr_assert_eq(cudaGraphCreate(&other, 0), cudaSuccess);
    cudaGraphNode_t e1, e2;
    cr_assert_eq(cudaGraphAddEmptyNode(&e1, other, NULL, 0), cudaSuccess);
    cr_assert_eq(cudaGraphAddEmptyNode(&e2, other, &e1, 1), cudaSuccess);
    cr_expect_eq(cudaGraphExecUpdate(x, other, &info), cudaErrorGraphExecUpdateFailure);
    cr_expect_eq(info.result, cudaGraphExecUpdateErrorTopologyChanged);
    cr_assert_eq(cudaGraphLaunch(x, NULL), cudaSuccess); /* still +1000 */
    cr_expect_eq(total, 2101);
    cr_expect_eq(cudaGraphExecDestroy(x), cudaSuccess);
    cr_expect_eq(cudaGraphDestroy(g), cudaSuccess);
    cr_expect_eq(cudaGraphDestroy(h), cudaSuccess);
    cr_expect_eq(cudaGraphDestroy(other), cudaSuccess);
}

Test(sim_graph, clones_find_their_nodes, .init = register_kernels)
{
    int total = 0, *target = &total, step = 2;
    void *args[] = {&target, &step};
    cudaGraph_t g, c;
    cr_assert_eq(cudaGraphCreate(&g, 0), cudaSuccess);
    cudaGraphNode_t k = add_kernel(g, NULL, 0, add_to, args), kc = NULL;
    cr_assert_eq(cudaGraphClone(&c, g), cudaSuccess);
    cr_expect_eq(cudaGraphNodeFindInClone(&kc, k, c), cudaSuccess);
    cr_expect_neq(kc, k);
    struct cudaKernelNodeParams p;
    cr_assert_eq(cudaGraphKernelNodeGetParams(kc, &p), cudaSuccess);
    cr_expect_eq(p.func, (void *)add_to);
    cr_expect_eq(*(int *)p.kernelParams[1], 2, "the clone has its own copy of the arguments");
    cr_expect_eq(cudaGraphDestroy(g), cudaSuccess);
    cudaGraphExec_t x;
    cr_assert_eq(cudaGraphInstantiate(&x, c, 0), cudaSuccess);
    cr_assert_eq(cudaGraphLaunch(x, NULL), cudaSuccess);
    cr_expect_eq(total, 2);
    cr_expect_eq(cudaGraphExecDestroy(x), cudaSuccess);
    cr_expect_eq(cudaGraphDestroy(c), cudaSuccess);
}

Test(sim_graph, bad_handles_are_refused)
{
    cudaGraph_t g;
    cudaGraphNode_t n;
    int junk;
    cr_expect_eq(cudaGraphAddEmptyNode(&n, (cudaGraph_t)&junk, NULL, 0), cudaErrorInvalidValue);
    cr_assert_eq(cudaGraphCreate(&g, 0), cudaSuccess);
    cudaGraphNode_t bogus = (cudaGraphNode_t)&junk;
    cr_expect_eq(cudaGraphAddEmptyNode(&n, g, &bogus, 1), cudaErrorInvalidValue);
    struct cudaMemAllocNodeParams p = alloc_params(0);
    cr_expect_eq(cudaGraphAddMemAllocNode(&n, g, NULL, 0, &p), cudaErrorInvalidValue, "zero bytes");
    p = alloc_params(16);
    p.poolProps.location.id = 3;
    cr_expect_eq(cudaGraphAddMemAllocNode(&n, g, NULL, 0, &p), cudaErrorInvalidDevice);
    cr_expect_eq(cudaGraphAddEventRecordNode(&n, g, NULL, 0, (cudaEvent_t)&junk), cudaErrorInvalidResourceHandle);
    cr_expect_eq(cudaGraphLaunch((cudaGraphExec_t)g, NULL), cudaErrorInvalidValue, "a graph is not an instance");
    cr_expect_eq(cudaGraphDestroy(g), cudaSuccess);
    cr_expect_eq(cudaGraphDestroy(g), cudaErrorInvalidValue);
    uint64_t v;
    cr_expect_eq(cudaDeviceGetGraphMemAttribute(1, cudaGraphMemAttrUsedMemCurrent, &v), cudaErrorInvalidDevice);
}

/* ---- stream capture ---- */

Test(sim_capture, captured_work_runs_only_at_launch, .init = register_kernels)
{
    enum { BYTES = 3000, LAUNCHES = 5 };
    cudaStream_t s;
    cr_assert_eq(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    enum cudaStreamCaptureStatus status;
    unsigned long long id = 0;
    cr_expect_eq(cudaStreamGetCaptureInfo(s, &status, &id, NULL, NULL, NULL, NULL), cudaSuccess);
    cr_expect_eq(status, cudaStreamCaptureStatusActive);
    cr_expect_gt(id, 0);
    void *p = NULL, *seen = NULL, **where = &seen;
    cr_assert_eq(cudaMallocAsync(&p, BYTES, s), cudaSuccess);
    cr_assert_not_null(p, "a captured allocation has its address at once");
    void *args[] = {&p, &where};
    cr_assert_eq(cudaLaunchKernel((const void *)note_address, one, one, args, 0, s), cudaSuccess);
    cr_assert_eq(cudaFreeAsync(p, s), cudaSuccess);
    struct wssim_stats during = stats();
    cr_expect_eq(during.alloc_calls, 0, "nothing is allocated while capturing");
    cr_expect_eq(during.launches, 0, "nothing runs");
    cr_expect_null(seen);
    cudaGraph_t g;
    cr_assert_eq(cudaStreamEndCapture(s, &g), cudaSuccess);
    cr_expect_eq(cudaStreamIsCapturing(s, &status), cudaSuccess);
    cr_expect_eq(status, cudaStreamCaptureStatusNone);
    cudaGraphNode_t nodes[3];
    size_t n = 3;
    cr_assert_eq(cudaGraphGetNodes(g, nodes, &n), cudaSuccess);
    cr_assert_eq(n, 3);
    enum cudaGraphNodeType types[3];
    for (int i = 0; i < 3; i++)
        cr_assert_eq(cudaGraphNodeGetType(nodes[i], &types[i]), cudaSuccess);
    cr_expect_eq(types[0], cudaGraphNodeTypeMemAlloc);
    cr_expect_eq(types[1], cudaGraphNodeTypeKernel);
    cr_expect_eq(types[2], cudaGraphNodeTypeMemFree);
    size_t deps = 9;
    cr_expect_eq(cudaGraphNodeGetDependencies(nodes[2], NULL, NULL, &deps), cudaSuccess);
    cr_expect_eq(deps, 1, "each captured node depends on the one before it");
    cudaGraphExec_t x;
    cr_assert_eq(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    for (int i = 0; i < LAUNCHES; i++)
        cr_assert_eq(cudaGraphLaunch(x, s), cudaSuccess);
    struct wssim_stats after = stats();
    cr_expect_eq(after.alloc_calls, LAUNCHES);
    cr_expect_eq(after.launches, LAUNCHES);
    cr_expect_eq(after.live_bytes, 0);
    cr_expect_eq(seen, p);
    cr_expect_eq(cudaGraphExecDestroy(x), cudaSuccess);
    cr_expect_eq(cudaGraphDestroy(g), cudaSuccess);
    cr_expect_eq(cudaStreamDestroy(s), cudaSuccess);
}

Test(sim_capture, streams_join_through_events, .init = register_kernels)
{
    cudaStream_t a, b;
    cudaEvent_t fork, join;
    int x1 = 0, x2 = 0, *p1 = &x1, *p2 = &x2, one_step = 1;
    void *args1[] = {&p1, &one_step}, *args2[] = {&p2, &one_step};
    cr_assert_eq(cudaStreamCreate(&a), cudaSuccess);
    cr_assert_eq(cudaStreamCreate(&b), cudaSuccess);
    cr_assert_eq(cudaEventCreate(&fork), cudaSuccess);
    cr_assert_eq(cudaEventCreate(&join), cudaSuccess);
    cr_assert_eq(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaSuccess);
    cr_assert_eq(cudaEventRecord(fork, a), cudaSuccess);
    cr_assert_eq(cudaStreamWaitEvent(b, fork, 0), cudaSuccess);
    enum cudaStreamCaptureStatus status;
    unsigned long long ida = 0, idb = 0;
    cr_assert_eq(cudaStreamGetCaptureInfo(a, &status, &ida, NULL, NULL, NULL, NULL), cudaSuccess);
    cr_assert_eq(cudaStreamGetCaptureInfo(b, &status, &idb, NULL, NULL, NULL, NULL), cudaSuccess);
    cr_expect_eq(status, cudaStreamCaptureStatusActive, "b joined the capture");
    cr_expect_eq(idb, ida);
    cr_assert_eq(cudaLaunchKernel((const void *)add_to, one, one, args1, 0, a), cudaSuccess);
    cr_assert_eq(cudaLaunchKernel((const void *)add_to, one, one, args2, 0, b), cudaSuccess);
    cudaGraph_t g;
    cr_expect_eq(cudaStreamEndCapture(b, &g), cudaErrorStreamCaptureUnmatched, "only the origin ends it");
    /* that invalidated the capture: end it and start again */
    cr_expect_eq(cudaStreamEndCapture(a, &g), cudaErrorStreamCaptureInvalidated);
    cr_expect_null(g);

    cr_assert_eq(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaSuccess);
    cr_assert_eq(cudaEventRecord(fork, a), cudaSuccess);
    cr_assert_eq(cudaStreamWaitEvent(b, fork, 0), cudaSuccess);
    cr_assert_eq(cudaLaunchKernel((const void *)add_to, one, one, args1, 0, a), cudaSuccess);
    cr_assert_eq(cudaLaunchKernel((const void *)add_to, one, one, args2, 0, b), cudaSuccess);
    cr_expect_eq(cudaStreamEndCapture(a, &g), cudaErrorStreamCaptureUnjoined, "b's kernel is not joined back");

    cr_assert_eq(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaSuccess);
    cr_assert_eq(cudaEventRecord(fork, a), cudaSuccess);
    cr_assert_eq(cudaStreamWaitEvent(b, fork, 0), cudaSuccess);
    cr_assert_eq(cudaLaunchKernel((const void *)add_to, one, one, args1, 0, a), cudaSuccess);
    cr_assert_eq(cudaLaunchKernel((const void *)add_to, one, one, args2, 0, b), cudaSuccess);
    cr_assert_eq(cudaEventRecord(join, b), cudaSuccess);
    cr_assert_eq(cudaStreamWaitEvent(a, join, 0), cudaSuccess);
    cr_assert_eq(cudaStreamEndCapture(a, &g), cudaSuccess);
    cr_expect_eq(x1 + x2, 0, "nothing ran while capturing");
    size_t edges = 0;
    cr_expect_eq(cudaGraphGetEdges(g, NULL, NULL, NULL, &edges), cudaSuccess);
    cr_expect_eq(edges, 0, "two independent kernels");
    cudaGraphExec_t x;
    cr_assert_eq(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    cr_assert_eq(cudaGraphLaunch(x, a), cudaSuccess);
    cr_expect_eq(x1, 1);
    cr_expect_eq(x2, 1);
    cr_expect_eq(cudaStreamIsCapturing(b, &status), cudaSuccess);
    cr_expect_eq(status, cudaStreamCaptureStatusNone, "b left the capture when it ended");
    cr_expect_eq(cudaGraphExecDestroy(x), cudaSuccess);
    cr_expect_eq(cudaGraphDestroy(g), cudaSuccess);
}

Test(sim_capture, prohibited_calls_invalidate_the_capture)
{
    cudaStream_t s;
    cudaEvent_t outside;
    void *p = NULL;
    cudaGraph_t g;
    cr_assert_eq(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(cudaEventCreate(&outside), cudaSuccess);
    cr_expect_eq(cudaStreamBeginCapture(NULL, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported,
                 "the legacy stream cannot capture");

    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    cr_expect_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaErrorIllegalState);
    cr_expect_eq(cudaMalloc(&p, 16), cudaErrorStreamCaptureUnsupported, "cudaMalloc synchronises");
    cr_expect_eq(stats().alloc_calls, 0);
    cr_expect_eq(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);

    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), cudaSuccess);
    cr_expect_eq(cudaMalloc(&p, 16), cudaSuccess, "relaxed captures allow it");
    cr_expect_eq(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
    cr_expect_eq(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    cr_expect_eq(cudaFree(p), cudaSuccess);

    cr_assert_eq(cudaEventRecord(outside, s), cudaSuccess);
    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    cr_expect_eq(cudaStreamWaitEvent(s, outside, 0), cudaErrorStreamCaptureIsolation);
    cr_expect_eq(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    cr_expect_eq(cudaStreamEndCapture(s, &g), cudaErrorIllegalState, "not capturing any more");

    /* the thread's own interaction mode: relaxed allows unsafe calls during its global capture */
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    cr_assert_eq(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
    cr_expect_eq(mode, cudaStreamCaptureModeGlobal, "the default");
    cr_expect_eq(cudaMalloc(&p, 16), cudaSuccess);
    cr_expect_eq(cudaFree(p), cudaSuccess);
    cr_assert_eq(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
    cr_expect_eq(cudaStreamEndCapture(s, &g), cudaSuccess);
    cr_expect_eq(cudaGraphDestroy(g), cudaSuccess);
    cr_expect_eq(cudaStreamDestroy(s), cudaSuccess);
}

static void *malloc_from_other_thread(void *arg)
{
    void *p = NULL;
    cudaError_t *rc = arg;
    *rc = cudaMalloc(&p, 64);
    if (*rc == cudaSuccess)
        cudaFree(p);
    return NULL;
}

Test(sim_capture, global_captures_forbid_unsafe_calls_on_every_thread)
{
    cudaStream_t s;
    cudaGraph_t g;
    pthread_t t;
    cudaError_t rc = cudaSuccess;
    cr_assert_eq(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    cr_assert_eq(pthread_create(&t, NULL, malloc_from_other_thread, &rc), 0);
    cr_assert_eq(pthread_join(t, NULL), 0);
    cr_expect_eq(rc, cudaSuccess, "a thread-local capture does not bind other threads");
    cr_assert_eq(cudaStreamEndCapture(s, &g), cudaSuccess);
    cr_expect_eq(cudaGraphDestroy(g), cudaSuccess);

    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    cr_assert_eq(pthread_create(&t, NULL, malloc_from_other_thread, &rc), 0);
    cr_assert_eq(pthread_join(t, NULL), 0);
    cr_expect_eq(rc, cudaErrorStreamCaptureUnsupported, "a global one does");
    cr_expect_eq(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    cr_expect_eq(cudaStreamDestroy(s), cudaSuccess);
}

Test(sim_capture, a_captured_graph_launch_becomes_a_child_graph, .init = register_kernels)
{
    int total = 0, *target = &total, step = 7;
    void *args[] = {&target, &step};
    cudaGraph_t inner, outer;
    cr_assert_eq(cudaGraphCreate(&inner, 0), cudaSuccess);
    add_kernel(inner, NULL, 0, add_to, args);
    cudaGraphExec_t xi, xo;
    cr_assert_eq(cudaGraphInstantiate(&xi, inner, 0), cudaSuccess);
    cudaStream_t s;
    cr_assert_eq(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    cr_assert_eq(cudaGraphLaunch(xi, s), cudaSuccess);
    cr_assert_eq(cudaGraphLaunch(xi, s), cudaSuccess);
    cr_assert_eq(cudaStreamEndCapture(s, &outer), cudaSuccess);
    cr_expect_eq(total, 0);
    cudaGraphNode_t nodes[2];
    size_t n = 2;
    enum cudaGraphNodeType type;
    cr_assert_eq(cudaGraphGetNodes(outer, nodes, &n), cudaSuccess);
    cr_assert_eq(n, 2);
    cr_expect_eq(cudaGraphNodeGetType(nodes[1], &type), cudaSuccess);
    cr_expect_eq(type, cudaGraphNodeTypeGraph);
    cr_assert_eq(cudaGraphInstantiate(&xo, outer, 0), cudaSuccess);
    cr_assert_eq(cudaGraphLaunch(xo, s), cudaSuccess);
    cr_expect_eq(total, 14);
    cr_expect_eq(cudaGraphExecDestroy(xo), cudaSuccess);
    cr_expect_eq(cudaGraphExecDestroy(xi), cudaSuccess);
    cr_expect_eq(cudaGraphDestroy(outer), cudaSuccess);
    cr_expect_eq(cudaGraphDestroy(inner), cudaSuccess);
    cr_expect_eq(cudaStreamDestroy(s), cudaSuccess);
}

Test(sim_capture, capture_into_an_existing_graph_and_update_dependencies)
{
    cudaGraph_t g;
    cudaGraphNode_t root;
    cudaStream_t s;
    cr_assert_eq(cudaGraphCreate(&g, 0), cudaSuccess);
    cr_assert_eq(cudaGraphAddEmptyNode(&root, g, NULL, 0), cudaSuccess);
    cr_assert_eq(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(cudaStreamBeginCaptureToGraph(s, g, &root, NULL, 1, cudaStreamCaptureModeRelaxed), cudaSuccess);
    int v = 0;
    cr_assert_eq(cudaMemsetAsync(&v, 1, sizeof v, s), cudaSuccess);
    const cudaGraphNode_t *deps = NULL;
    size_t ndeps = 0;
    enum cudaStreamCaptureStatus status;
    cr_assert_eq(cudaStreamGetCaptureInfo(s, &status, NULL, NULL, &deps, NULL, &ndeps), cudaSuccess);
    cr_assert_eq(ndeps, 1);
    cudaGraphNode_t memset_node = deps[0];
    cr_assert_eq(cudaStreamUpdateCaptureDependencies(s, &root, NULL, 1, cudaStreamSetCaptureDependencies), cudaSuccess);
    cr_assert_eq(cudaMemsetAsync(&v, 2, 1, s), cudaSuccess);
    cudaGraph_t same;
    cr_assert_eq(cudaStreamEndCapture(s, &same), cudaSuccess);
    cr_expect_eq(same, g);
    size_t n = 0, memset_deps = 0;
    cr_expect_eq(cudaGraphGetNodes(g, NULL, &n), cudaSuccess);
    cr_expect_eq(n, 3, "the empty root and two memsets");
    cr_expect_eq(cudaGraphNodeGetDependentNodes(root, NULL, NULL, &memset_deps), cudaSuccess);
    cr_expect_eq(memset_deps, 2, "both memsets depend on the root");
    struct cudaMemsetParams m;
    cr_expect_eq(cudaGraphMemsetNodeGetParams(memset_node, &m), cudaSuccess);
    cr_expect_eq(m.value, 1);
    cr_expect_eq(v, 0);
    cr_expect_eq(cudaGraphDestroy(g), cudaSuccess);
    cr_expect_eq(cudaStreamDestroy(s), cudaSuccess);
}
