/*
 * CUDA graphs and stream capture.
 *
 * Capture: the begin and end hooks keep ws_captures_active, and stream-ordered hooks ask the
 * runtime whether their stream captures only while it is not zero (graph_hooks.h).
 *
 * Graphs: a graph's structure is recorded once, when it is instantiated (or an instance is
 * updated): the hook walks the graph with the runtime's own queries and writes one record per
 * node, in an order the graph can run in (dependencies first, then the order the runtime lists
 * the nodes in), child graphs inlined.  The collector then turns each launch of the instance
 * into the kernels and memory events of those nodes (collector/graphs.c).  Node parameters that
 * change later on the instance (cudaGraphExecKernelNodeSetParams, cudaGraphNodeSetEnabled) are
 * recorded as they change.  Walking allocates, which is fine here: instantiation is not on the
 * hot path.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdlib.h>

#include "graph_hooks.h"
#include "tracer.h"

int ws_captures_active;

struct ws_rec *ws_rec_begin(uint8_t type, uint8_t api, int32_t status)
{
    struct ws_rec *r = ws_rec_reserve(1);
    if (!r)
        return NULL;
    memset(r, 0, sizeof *r);
    r->type = type;
    r->api = api;
    r->status = status;
    r->ns = ws_now();
    return r;
}

static uint64_t u64(const void *p) { return (uint64_t)(uintptr_t)p; }

/* ---- stream capture ---- */

/* The stream a call names: 0 in a per-thread-default-stream variant is the per-thread stream. */
static int per_thread_api(uint8_t api)
{
    switch (api) {
    case WS_API___cudaLaunchKernel_ptsz:
    case WS_API_cudaStreamBeginCapture_ptsz:
    case WS_API_cudaStreamBeginCaptureToGraph_ptsz:
    case WS_API_cudaStreamEndCapture_ptsz:
    case WS_API_cudaMallocAsync_ptsz:
    case WS_API_cudaFreeAsync_ptsz:
    case WS_API_cudaMallocFromPoolAsync_ptsz:
    case WS_API_cudaLaunchKernel_ptsz:
    case WS_API_cudaLaunchKernelExC_ptsz:
    case WS_API_cudaLaunchCooperativeKernel_ptsz:
    case WS_API_cudaGraphLaunch_ptsz: return 1;
    default: return ws_driver_per_thread_api(api);
    }
}

static cudaStream_t effective_stream(uint8_t api, const void *stream)
{
    if (!stream && per_thread_api(api))
        return cudaStreamPerThread;
    return (cudaStream_t)stream;
}

/* The capture the stream takes part in: 1 with its id, 0 when it does not capture.  The legacy
 * stream never captures (and asking about it while blocking streams capture is an error that
 * would stay as the thread's last error). */
static int capture_of(cudaStream_t stream, unsigned long long *id)
{
    if (stream == NULL || stream == cudaStreamLegacy)
        return 0;
    __typeof__(&cudaStreamGetCaptureInfo) info = WS_REAL_FN(cudaStreamGetCaptureInfo);
    enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    *id = 0;
    if (!info) /* a program of the driver API alone: no runtime is loaded */
        return ws_driver_capture_of(stream, id);
    if (info(stream, &status, id, NULL, NULL, NULL, NULL) != cudaSuccess)
        return 0;
    return status != cudaStreamCaptureStatusNone;
}

int ws_capture_of(uint8_t api, const void *stream, unsigned long long *id)
{
    return capture_of(effective_stream(api, stream), id);
}

int ws_capture_note_slow(uint8_t api, const void *stream)
{
    unsigned long long id;
    cudaStream_t s = effective_stream(api, stream);
    if (!capture_of(s, &id))
        return 0;
    struct ws_rec *r = ws_rec_begin(WS_REC_CAPTURED, api, 0);
    if (!r)
        return 1;
    r->u[0] = id;
    r->u[1] = u64(s);
    r->u[2] = api;
    ws_rec_commit(1);
    return 1;
}

void ws_capture_begin_record(uint8_t api, int rc, const void *stream, int mode, const void *into)
{
    unsigned long long id = 0;
    cudaStream_t s = effective_stream(api, stream);
    if (rc == cudaSuccess) {
        __atomic_add_fetch(&ws_captures_active, 1, __ATOMIC_RELAXED);
        capture_of(s, &id);
    }
    struct ws_rec *r = ws_rec_begin(WS_REC_CAPTURE_BEGIN, api, rc);
    if (!r)
        return;
    r->u[0] = u64(s);
    r->u[1] = id;
    r->u[2] = (uint64_t)mode;
    r->u[3] = u64(into);
    r->u[5] = (uint64_t)(uint32_t)(ws_is_driver_api(api) ? ws_driver_device() : ws_self.device);
    ws_rec_commit(1);
}

WS_HOOK(cudaError_t, cudaStreamBeginCapture, (cudaStream_t stream, enum cudaStreamCaptureMode mode), (stream, mode))
{
    WS_FORWARD(cudaStreamBeginCapture, (stream, mode),
               ws_capture_begin_record(WS_API_cudaStreamBeginCapture, rc, stream, mode, NULL));
}

WS_HOOK(cudaError_t, cudaStreamBeginCapture_ptsz, (cudaStream_t stream, enum cudaStreamCaptureMode mode),
        (stream, mode))
{
    WS_FORWARD(cudaStreamBeginCapture_ptsz, (stream, mode),
               ws_capture_begin_record(WS_API_cudaStreamBeginCapture_ptsz, rc, stream, mode, NULL));
}

WS_HOOK(cudaError_t, cudaStreamBeginCaptureToGraph,
        (cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *dependencies,
         const cudaGraphEdgeData *dependencyData, size_t numDependencies, enum cudaStreamCaptureMode mode),
        (stream, graph, dependencies, dependencyData, numDependencies, mode))
{
    WS_FORWARD(cudaStreamBeginCaptureToGraph, (stream, graph, dependencies, dependencyData, numDependencies, mode),
               ws_capture_begin_record(WS_API_cudaStreamBeginCaptureToGraph, rc, stream, mode, graph));
}

WS_HOOK(cudaError_t, cudaStreamBeginCaptureToGraph_ptsz,
        (cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *dependencies,
         const cudaGraphEdgeData *dependencyData, size_t numDependencies, enum cudaStreamCaptureMode mode),
        (stream, graph, dependencies, dependencyData, numDependencies, mode))
{
    WS_FORWARD(cudaStreamBeginCaptureToGraph_ptsz, (stream, graph, dependencies, dependencyData, numDependencies, mode),
               ws_capture_begin_record(WS_API_cudaStreamBeginCaptureToGraph_ptsz, rc, stream, mode, graph));
}

/* The capture's id is asked for before it ends; whether it ended, after (an end can fail and
 * leave the capture going, or fail and end it). */
static cudaError_t end_capture(uint8_t api, __typeof__(&cudaStreamEndCapture) fn, cudaStream_t stream,
                               cudaGraph_t *graph)
{
    if (!fn)
        return cudaErrorSharedObjectSymbolNotFound;
    if (!ws_hook_enter())
        return fn(stream, graph);
    int saved = errno;
    unsigned long long id = 0;
    cudaStream_t s = effective_stream(api, stream);
    int was = capture_of(s, &id);
    errno = saved;
    cudaError_t rc = fn(stream, graph);
    saved = errno;
    ws_capture_end_record(api, rc, stream, was, id, rc == cudaSuccess && graph ? *graph : NULL);
    ws_hook_leave(saved);
    return rc;
}

void ws_capture_end_record(uint8_t api, int rc, const void *stream, int was, unsigned long long id, const void *graph)
{
    unsigned long long after;
    cudaStream_t s = effective_stream(api, stream);
    if (was && !capture_of(s, &after) &&
        __atomic_load_n(&ws_captures_active, __ATOMIC_RELAXED) > 0) /* never below 0, whatever it saw */
        __atomic_sub_fetch(&ws_captures_active, 1, __ATOMIC_RELAXED);
    struct ws_rec *r = ws_rec_begin(WS_REC_CAPTURE_END, api, rc);
    if (r) {
        r->u[0] = u64(s);
        r->u[1] = was ? id : 0;
        r->u[2] = u64(graph);
        ws_rec_commit(1);
    }
}

WS_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
    return end_capture(WS_API_cudaStreamEndCapture, WS_REAL_FN(cudaStreamEndCapture), stream, pGraph);
}

WS_EXPORT cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph)
{
    return end_capture(WS_API_cudaStreamEndCapture_ptsz, WS_REAL_FN(cudaStreamEndCapture_ptsz), stream, pGraph);
}

/* ---- the structure of an instantiated graph ---- */

struct walk {
    uint64_t records, allocations;
    cudaError_t status; /* the first query that failed */
};

static int index_cmp(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Position of handle h among the sorted (handle, index) pairs; -1 when absent. */
static long find_node(const uint64_t *pairs, size_t n, uint64_t h)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pairs[2 * mid] < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && pairs[2 * lo] == h ? (long)pairs[2 * lo + 1] : -1;
}

/* A min-heap of node positions: among the nodes ready to run, the first the runtime listed. */
static void heap_push(size_t *h, size_t *n, size_t v)
{
    size_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > v) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static size_t heap_pop(size_t *h, size_t *n)
{
    size_t top = h[0], last = h[--(*n)], i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= last)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = last;
    return top;
}

static void walk_graph(cudaGraph_t graph, unsigned depth, struct walk *w);

void ws_graph_node_record(uint64_t node, uint32_t type, unsigned depth, const uint64_t f[5])
{
    struct ws_rec *r = ws_rec_begin(WS_REC_GRAPH_NODE, 0, (int32_t)(type | (depth & 0x7fffu) << 16));
    if (!r)
        return;
    r->u[0] = node;
    memcpy(&r->u[1], f, 5 * sizeof f[0]);
    ws_rec_commit(1);
}

/* One node's record (and, for a child graph, its nodes). */
static void record_node(cudaGraphNode_t node, unsigned depth, struct walk *w)
{
    enum cudaGraphNodeType type;
    cudaError_t rc = WS_REAL_FN(cudaGraphNodeGetType)(node, &type);
    if (rc != cudaSuccess) {
        w->status = rc;
        return;
    }
    if (type == cudaGraphNodeTypeGraph) {
        cudaGraph_t child = NULL;
        rc = WS_REAL_FN(cudaGraphChildGraphNodeGetGraph)(node, &child);
        if (rc == cudaSuccess)
            walk_graph(child, depth + 1, w);
        else
            w->status = rc;
        return;
    }
    uint64_t f[5] = {0};
    switch (type) {
    case cudaGraphNodeTypeKernel: {
        struct cudaKernelNodeParams k;
        memset(&k, 0, sizeof k);
        rc = WS_REAL_FN(cudaGraphKernelNodeGetParams)(node, &k);
        if (rc == cudaSuccess) {
            ws_note_function(k.func);
            f[0] = u64(k.func);
            f[1] = ws_pack_dim3(k.gridDim.x, k.gridDim.y, k.gridDim.z);
            f[2] = ws_pack_dim3(k.blockDim.x, k.blockDim.y, k.blockDim.z);
            f[3] = k.sharedMemBytes;
        }
        break;
    }
    case cudaGraphNodeTypeMemcpy: {
        struct cudaMemcpy3DParms p;
        memset(&p, 0, sizeof p);
        rc = WS_REAL_FN(cudaGraphMemcpyNodeGetParams)(node, &p);
        if (rc == cudaSuccess) {
            uint64_t h = p.extent.height ? p.extent.height : 1, d = p.extent.depth ? p.extent.depth : 1;
            f[0] = p.dstArray ? u64(p.dstArray) : u64(p.dstPtr.ptr);
            f[1] = (uint64_t)p.extent.width * h * d; /* elements when an array is involved */
            f[2] = p.srcArray ? u64(p.srcArray) : u64(p.srcPtr.ptr);
        }
        break;
    }
    case cudaGraphNodeTypeMemset: {
        struct cudaMemsetParams p;
        memset(&p, 0, sizeof p);
        rc = WS_REAL_FN(cudaGraphMemsetNodeGetParams)(node, &p);
        if (rc == cudaSuccess) {
            f[0] = u64(p.dst);
            f[1] = (uint64_t)p.elementSize * p.width * (p.height ? p.height : 1);
        }
        break;
    }
    case cudaGraphNodeTypeMemAlloc: {
        struct cudaMemAllocNodeParams p;
        memset(&p, 0, sizeof p);
        rc = WS_REAL_FN(cudaGraphMemAllocNodeGetParams)(node, &p);
        if (rc == cudaSuccess) {
            f[0] = u64(p.dptr);
            f[1] = p.bytesize;
            f[2] = (uint64_t)(uint32_t)p.poolProps.location.id;
            w->allocations++;
        }
        break;
    }
    case cudaGraphNodeTypeMemFree: {
        void *dptr = NULL;
        rc = WS_REAL_FN(cudaGraphMemFreeNodeGetParams)(node, &dptr);
        f[0] = u64(dptr);
        break;
    }
    case cudaGraphNodeTypeEventRecord:
    case cudaGraphNodeTypeWaitEvent: {
        cudaEvent_t e = NULL;
        rc = type == cudaGraphNodeTypeEventRecord ? WS_REAL_FN(cudaGraphEventRecordNodeGetEvent)(node, &e)
                                                  : WS_REAL_FN(cudaGraphEventWaitNodeGetEvent)(node, &e);
        f[0] = u64(e);
        break;
    }
    case cudaGraphNodeTypeHost: {
        struct cudaHostNodeParams p;
        memset(&p, 0, sizeof p);
        rc = WS_REAL_FN(cudaGraphHostNodeGetParams)(node, &p);
        f[0] = u64((const void *)p.fn);
        break;
    }
    default: break; /* empty, semaphore and conditional nodes: their type is all that is kept */
    }
    if (rc != cudaSuccess && w->status == cudaSuccess)
        w->status = rc;
    ws_graph_node_record(u64(node), (uint32_t)type, depth, f);
    w->records++;
}

/* Records the nodes of graph in launch order: Kahn's algorithm over the graph's edges. */
static void walk_graph(cudaGraph_t graph, unsigned depth, struct walk *w)
{
    size_t n = 0, m = 0, nready = 0;
    cudaGraphNode_t *nodes = NULL, *from = NULL, *to = NULL;
    cudaGraphEdgeData *edges = NULL;
    uint64_t *pairs = NULL;
    size_t *indeg = NULL, *first = NULL, *outs = NULL, *heap = NULL, *fill = NULL;
    cudaError_t rc = WS_REAL_FN(cudaGraphGetNodes)(graph, NULL, &n);
    if (rc != cudaSuccess || n == 0)
        goto out;
    nodes = malloc(n * sizeof *nodes);
    if (!nodes || (rc = WS_REAL_FN(cudaGraphGetNodes)(graph, nodes, &n)) != cudaSuccess)
        goto out;
    rc = WS_REAL_FN(cudaGraphGetEdges)(graph, NULL, NULL, NULL, &m);
    if (rc != cudaSuccess)
        goto out;
    from = malloc((m + 1) * sizeof *from);
    to = malloc((m + 1) * sizeof *to);
    edges = malloc((m + 1) * sizeof *edges); /* some edges carry data: asking without it is lossy */
    pairs = malloc(2 * n * sizeof *pairs);
    indeg = calloc(n, sizeof *indeg);
    first = calloc(n + 1, sizeof *first);
    fill = calloc(n + 1, sizeof *fill);
    outs = malloc((m + 1) * sizeof *outs);
    heap = malloc(n * sizeof *heap);
    if (!from || !to || !edges || !pairs || !indeg || !first || !fill || !outs || !heap) {
        rc = cudaErrorMemoryAllocation;
        goto out;
    }
    if (m && (rc = WS_REAL_FN(cudaGraphGetEdges)(graph, from, to, edges, &m)) != cudaSuccess)
        goto out;
    for (size_t i = 0; i < n; i++) {
        pairs[2 * i] = u64(nodes[i]);
        pairs[2 * i + 1] = i;
    }
    qsort(pairs, n, 2 * sizeof *pairs, index_cmp);
    for (size_t e = 0; e < m; e++) {
        long a = find_node(pairs, n, u64(from[e])), b = find_node(pairs, n, u64(to[e]));
        if (a < 0 || b < 0) {
            rc = cudaErrorInvalidValue;
            goto out;
        }
        first[a + 1]++;
        indeg[b]++;
    }
    for (size_t i = 0; i < n; i++)
        first[i + 1] += first[i];
    for (size_t e = 0; e < m; e++) {
        size_t a = (size_t)find_node(pairs, n, u64(from[e]));
        outs[first[a] + fill[a]++] = (size_t)find_node(pairs, n, u64(to[e]));
    }
    for (size_t i = 0; i < n; i++)
        if (indeg[i] == 0)
            heap_push(heap, &nready, i);
    size_t done = 0;
    while (nready && w->status == cudaSuccess) {
        size_t i = heap_pop(heap, &nready);
        done++;
        record_node(nodes[i], depth, w);
        for (size_t k = first[i]; k < first[i + 1]; k++)
            if (--indeg[outs[k]] == 0)
                heap_push(heap, &nready, outs[k]);
    }
    if (done < n && w->status == cudaSuccess)
        rc = cudaErrorInvalidValue; /* a cycle: the runtime refuses to instantiate it anyway */
out:
    if (rc != cudaSuccess && w->status == cudaSuccess)
        w->status = rc;
    free(nodes);
    free(from);
    free(to);
    free(edges);
    free(pairs);
    free(indeg);
    free(first);
    free(fill);
    free(outs);
    free(heap);
}

static int graph_memory_seen; /* some instance has memory nodes: graph launches sample the allocator */

/* The runtime's walk, in the shape the driver's walk has too (hooks_driver_graph.c). */
static void runtime_walk(const void *graph, uint64_t *records, uint64_t *allocations, int *status)
{
    struct walk w = {0, 0, cudaSuccess};
    walk_graph((cudaGraph_t)graph, 0, &w);
    *records = w.records;
    *allocations = w.allocations;
    *status = w.status;
}

static void record_structure(uint8_t api, cudaError_t rc, cudaGraphExec_t exec, cudaGraph_t graph,
                             unsigned long long flags)
{
    ws_graph_structure_record(api, rc, exec, graph, flags, runtime_walk);
}

void ws_graph_structure_record(uint8_t api, int rc, const void *exec, const void *graph, unsigned long long flags,
                               ws_graph_walker walk)
{
    struct ws_rec *r = ws_rec_begin(WS_REC_GRAPH_EXEC, api, rc);
    if (r) {
        r->u[0] = u64(exec);
        r->u[1] = u64(graph);
        r->u[2] = flags;
        ws_rec_commit(1);
    }
    if (rc != cudaSuccess)
        return;
    uint64_t records = 0, allocations = 0;
    int status = 0;
    walk(graph, &records, &allocations, &status);
    r = ws_rec_begin(WS_REC_GRAPH_END, api, status);
    if (r) {
        r->u[0] = u64(exec);
        r->u[1] = records;
        ws_rec_commit(1);
    }
    if (allocations && !__atomic_load_n(&graph_memory_seen, __ATOMIC_RELAXED))
        __atomic_store_n(&graph_memory_seen, 1, __ATOMIC_RELAXED);
}

WS_HOOK(cudaError_t, cudaGraphInstantiate, (cudaGraphExec_t * pGraphExec, cudaGraph_t graph, unsigned long long flags),
        (pGraphExec, graph, flags))
{
    WS_FORWARD(cudaGraphInstantiate, (pGraphExec, graph, flags),
               record_structure(WS_API_cudaGraphInstantiate, rc, pGraphExec ? *pGraphExec : NULL, graph, flags));
}

WS_HOOK(cudaError_t, cudaGraphInstantiateWithFlags,
        (cudaGraphExec_t * pGraphExec, cudaGraph_t graph, unsigned long long flags), (pGraphExec, graph, flags))
{
    WS_FORWARD(
        cudaGraphInstantiateWithFlags, (pGraphExec, graph, flags),
        record_structure(WS_API_cudaGraphInstantiateWithFlags, rc, pGraphExec ? *pGraphExec : NULL, graph, flags));
}

WS_HOOK(cudaError_t, cudaGraphInstantiateWithParams,
        (cudaGraphExec_t * pGraphExec, cudaGraph_t graph, cudaGraphInstantiateParams *instantiateParams),
        (pGraphExec, graph, instantiateParams))
{
    WS_FORWARD(cudaGraphInstantiateWithParams, (pGraphExec, graph, instantiateParams),
               record_structure(WS_API_cudaGraphInstantiateWithParams, rc, pGraphExec ? *pGraphExec : NULL, graph,
                                instantiateParams ? instantiateParams->flags : 0));
}

WS_HOOK(cudaError_t, cudaGraphInstantiateWithParams_ptsz,
        (cudaGraphExec_t * pGraphExec, cudaGraph_t graph, cudaGraphInstantiateParams *instantiateParams),
        (pGraphExec, graph, instantiateParams))
{
    WS_FORWARD(cudaGraphInstantiateWithParams_ptsz, (pGraphExec, graph, instantiateParams),
               record_structure(WS_API_cudaGraphInstantiateWithParams_ptsz, rc, pGraphExec ? *pGraphExec : NULL, graph,
                                instantiateParams ? instantiateParams->flags : 0));
}

/* An update gives the instance the parameters of another graph of the same shape: the instance's
 * structure is recorded again from that graph. */
WS_HOOK(cudaError_t, cudaGraphExecUpdate,
        (cudaGraphExec_t hGraphExec, cudaGraph_t hGraph, cudaGraphExecUpdateResultInfo *resultInfo),
        (hGraphExec, hGraph, resultInfo))
{
    WS_FORWARD(cudaGraphExecUpdate, (hGraphExec, hGraph, resultInfo),
               record_structure(WS_API_cudaGraphExecUpdate, rc, hGraphExec, hGraph, 0));
}

static void record_exec_destroy(cudaError_t rc, cudaGraphExec_t exec)
{
    ws_graph_destroy_record(WS_API_cudaGraphExecDestroy, rc, exec);
}

void ws_graph_destroy_record(uint8_t api, int rc, const void *exec)
{
    struct ws_rec *r = ws_rec_begin(WS_REC_GRAPH_DESTROY, api, rc);
    if (!r)
        return;
    r->u[0] = u64(exec);
    ws_rec_commit(1);
}

WS_HOOK(cudaError_t, cudaGraphExecDestroy, (cudaGraphExec_t graphExec), (graphExec))
{
    WS_FORWARD(cudaGraphExecDestroy, (graphExec), record_exec_destroy(rc, graphExec));
}

static void record_node_set(uint8_t api, cudaError_t rc, cudaGraphExec_t exec, cudaGraphNode_t node,
                            const struct cudaKernelNodeParams *k, int64_t enabled)
{
    if (k && rc == cudaSuccess)
        ws_note_function(k->func);
    if (k)
        ws_graph_node_set_record(api, rc, exec, node, 1, u64(k->func),
                                 ws_pack_dim3(k->gridDim.x, k->gridDim.y, k->gridDim.z),
                                 ws_pack_dim3(k->blockDim.x, k->blockDim.y, k->blockDim.z), k->sharedMemBytes);
    else
        ws_graph_node_set_record(api, rc, exec, node, 0, (uint64_t)enabled, 0, 0, 0);
}

void ws_graph_node_set_record(uint8_t api, int rc, const void *exec, const void *node, int kernel, uint64_t a,
                              uint64_t grid, uint64_t block, uint64_t smem)
{
    struct ws_rec *r = ws_rec_begin(WS_REC_GRAPH_NODE_SET, api, rc);
    if (!r)
        return;
    r->u[0] = u64(exec);
    r->u[1] = u64(node);
    r->u[2] = a; /* the function, or whether the node is enabled */
    if (kernel) {
        r->u[3] = grid;
        r->u[4] = block;
        r->u[5] = smem;
    }
    ws_rec_commit(1);
}

WS_HOOK(cudaError_t, cudaGraphExecKernelNodeSetParams,
        (cudaGraphExec_t hGraphExec, cudaGraphNode_t node, const struct cudaKernelNodeParams *pNodeParams),
        (hGraphExec, node, pNodeParams))
{
    WS_FORWARD(cudaGraphExecKernelNodeSetParams, (hGraphExec, node, pNodeParams),
               record_node_set(WS_API_cudaGraphExecKernelNodeSetParams, rc, hGraphExec, node, pNodeParams, 0));
}

/* The generic form changes kernel nodes too; other kinds of node change nothing the trace uses. */
static void record_generic_set(cudaError_t rc, cudaGraphExec_t exec, cudaGraphNode_t node,
                               const struct cudaGraphNodeParams *p)
{
    if (!p || p->type != cudaGraphNodeTypeKernel)
        return;
    struct cudaKernelNodeParams k = {p->kernel.func,           p->kernel.gridDim,      p->kernel.blockDim,
                                     p->kernel.sharedMemBytes, p->kernel.kernelParams, p->kernel.extra};
    record_node_set(WS_API_cudaGraphExecNodeSetParams, rc, exec, node, &k, 0);
}

WS_HOOK(cudaError_t, cudaGraphExecNodeSetParams,
        (cudaGraphExec_t graphExec, cudaGraphNode_t node, struct cudaGraphNodeParams *nodeParams),
        (graphExec, node, nodeParams))
{
    WS_FORWARD(cudaGraphExecNodeSetParams, (graphExec, node, nodeParams),
               record_generic_set(rc, graphExec, node, nodeParams));
}

WS_HOOK(cudaError_t, cudaGraphNodeSetEnabled,
        (cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode, unsigned int isEnabled), (hGraphExec, hNode, isEnabled))
{
    WS_FORWARD(cudaGraphNodeSetEnabled, (hGraphExec, hNode, isEnabled),
               record_node_set(WS_API_cudaGraphNodeSetEnabled, rc, hGraphExec, hNode, NULL, isEnabled != 0));
}

/* ---- launches and the graph allocator ---- */

void ws_graph_launch_begin(const void *exec) { ws_graph_launch_begin_api(WS_API_cudaGraphLaunch, exec); }

void ws_graph_launch_begin_api(uint8_t api, const void *exec)
{
    struct ws_rec *r = ws_rec_begin(WS_REC_GRAPH_LAUNCH_BEGIN, api, 0);
    if (!r)
        return;
    r->u[0] = u64(exec);
    ws_rec_commit(1);
}

/* The last state written of each device's graph allocator (slots for the first 16 devices). */
static uint64_t graph_memory_last[16][4];

void ws_graph_memory_sample(uint8_t api) { ws_graph_memory_sample_device(api, ws_self.device); }

void ws_graph_memory_sample_device(uint8_t api, int device)
{
    if (!__atomic_load_n(&graph_memory_seen, __ATOMIC_RELAXED))
        return;
    __typeof__(&cudaDeviceGetGraphMemAttribute) get = WS_REAL_FN(cudaDeviceGetGraphMemAttribute);
    if (!get) /* a program of the driver API alone; the attributes have the same values */
        get = (__typeof__(&cudaDeviceGetGraphMemAttribute))ws_driver_graph_mem_attribute_fn();
    static const enum cudaGraphMemAttributeType attrs[4] = {
        cudaGraphMemAttrReservedMemCurrent, cudaGraphMemAttrUsedMemCurrent, cudaGraphMemAttrReservedMemHigh,
        cudaGraphMemAttrUsedMemHigh};
    uint64_t v[4];
    if (!get || device < 0 || device >= 16)
        return;
    for (int i = 0; i < 4; i++)
        if (get(device, attrs[i], &v[i]) != cudaSuccess)
            return;
    uint64_t *last = graph_memory_last[device];
    if (__atomic_load_n(&last[0], __ATOMIC_RELAXED) == v[0] + 1 &&
        __atomic_load_n(&last[1], __ATOMIC_RELAXED) == v[1] && __atomic_load_n(&last[2], __ATOMIC_RELAXED) == v[2] &&
        __atomic_load_n(&last[3], __ATOMIC_RELAXED) == v[3])
        return; /* unchanged (slot 0 keeps reserved + 1, so that a zero state is written once) */
    __atomic_store_n(&last[0], v[0] + 1, __ATOMIC_RELAXED);
    for (int i = 1; i < 4; i++)
        __atomic_store_n(&last[i], v[i], __ATOMIC_RELAXED);
    struct ws_rec *r = ws_rec_begin(WS_REC_POOL_STATE, api, 0);
    if (!r)
        return;
    r->u[1] = v[0];
    r->u[2] = v[1];
    r->u[3] = v[2];
    r->u[4] = v[3];
    r->u[5] = (uint64_t)(uint32_t)device;
    ws_rec_commit(1);
}

WS_HOOK(cudaError_t, cudaDeviceGraphMemTrim, (int device), (device))
{
    WS_FORWARD(cudaDeviceGraphMemTrim, (device),
               if (rc == cudaSuccess && device == ws_self.device)
                   ws_graph_memory_sample(WS_API_cudaDeviceGraphMemTrim));
}
