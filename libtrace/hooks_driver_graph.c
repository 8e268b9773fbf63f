/*
 * The driver's forms of CUDA graphs and stream capture: the same records as the runtime's
 * (hooks_graph.c), tagged with the driver api, so that the collector expands a cuGraphLaunch into
 * the work of its instance exactly as it does a cudaGraphLaunch (collector/graphs.c).
 *
 * An instance's structure is walked with the driver's own queries (a program of the driver API
 * alone has no runtime to ask): one GRAPH_NODE record per node, in the order the instance runs
 * them (dependencies first, then the order the driver lists the nodes in), child graphs inlined.
 * The driver's node types have the runtime's values.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdlib.h>

#include "driver_hooks.h"
#include "graph_hooks.h"
#include "tracer.h"

/* cuda.h renames these to their newest forms; each form is hooked under its own name. */
#undef cuGraphInstantiate
#undef cuStreamBeginCapture
#undef cuGraphExecUpdate
#undef cuGraphExecKernelNodeSetParams

/* The older forms (cuda.h declares them only for the driver's own build). */
CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer,
                            size_t bufferSize);
CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer,
                               size_t bufferSize);
CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode *hErrorNode_out,
                           CUgraphExecUpdateResult *updateResult_out);
CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                        const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams);
CUresult cuStreamBeginCapture(CUstream hStream);
CUresult cuStreamBeginCapture_ptsz(CUstream hStream);
/* The per-thread-default-stream forms. */
CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode);
CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
                                          const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                          CUstreamCaptureMode mode);
CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph);
CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);
CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams);

static uint64_t u64(const void *p) { return (uint64_t)(uintptr_t)p; }

/* ---- stream capture ---- */

WS_HOOK(CUresult, cuStreamBeginCapture, (CUstream hStream), (hStream))
{
    DRV_FORWARD(cuStreamBeginCapture, (hStream),
                ws_capture_begin_record(WS_API_cuStreamBeginCapture, rc, hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, NULL));
}

WS_HOOK(CUresult, cuStreamBeginCapture_ptsz, (CUstream hStream), (hStream))
{
    DRV_FORWARD(
        cuStreamBeginCapture_ptsz, (hStream),
        ws_capture_begin_record(WS_API_cuStreamBeginCapture_ptsz, rc, hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, NULL));
}

WS_HOOK(CUresult, cuStreamBeginCapture_v2, (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode))
{
    DRV_FORWARD(cuStreamBeginCapture_v2, (hStream, mode),
                ws_capture_begin_record(WS_API_cuStreamBeginCapture_v2, rc, hStream, mode, NULL));
}

WS_HOOK(CUresult, cuStreamBeginCapture_v2_ptsz, (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode))
{
    DRV_FORWARD(cuStreamBeginCapture_v2_ptsz, (hStream, mode),
                ws_capture_begin_record(WS_API_cuStreamBeginCapture_v2_ptsz, rc, hStream, mode, NULL));
}

WS_HOOK(CUresult, cuStreamBeginCaptureToGraph,
        (CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData,
         size_t numDependencies, CUstreamCaptureMode mode),
        (hStream, hGraph, dependencies, dependencyData, numDependencies, mode))
{
    DRV_FORWARD(cuStreamBeginCaptureToGraph, (hStream, hGraph, dependencies, dependencyData, numDependencies, mode),
                ws_capture_begin_record(WS_API_cuStreamBeginCaptureToGraph, rc, hStream, mode, hGraph));
}

WS_HOOK(CUresult, cuStreamBeginCaptureToGraph_ptsz,
        (CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData,
         size_t numDependencies, CUstreamCaptureMode mode),
        (hStream, hGraph, dependencies, dependencyData, numDependencies, mode))
{
    DRV_FORWARD(cuStreamBeginCaptureToGraph_ptsz,
                (hStream, hGraph, dependencies, dependencyData, numDependencies, mode),
                ws_capture_begin_record(WS_API_cuStreamBeginCaptureToGraph_ptsz, rc, hStream, mode, hGraph));
}

/* The capture's id is asked for before it ends (hooks_graph.c, end_capture). */
#define END_CAPTURE(name, api)                                                                                         \
    do {                                                                                                               \
        __typeof__(&name) fn = WS_REAL_FN(name);                                                                       \
        if (!fn)                                                                                                       \
            return DRV_MISSING;                                                                                        \
        if (!ws_hook_enter())                                                                                          \
            return fn(hStream, phGraph);                                                                               \
        int saved = errno;                                                                                             \
        unsigned long long id = 0;                                                                                     \
        int was = ws_capture_of(api, hStream, &id);                                                                    \
        errno = saved;                                                                                                 \
        CUresult rc = fn(hStream, phGraph);                                                                            \
        saved = errno;                                                                                                 \
        ws_capture_end_record(api, rc, hStream, was, id, rc == CUDA_SUCCESS && phGraph ? *phGraph : NULL);             \
        ws_hook_leave(saved);                                                                                          \
        return rc;                                                                                                     \
    } while (0)

WS_EXPORT CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    END_CAPTURE(cuStreamEndCapture, WS_API_cuStreamEndCapture);
}

WS_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
    END_CAPTURE(cuStreamEndCapture_ptsz, WS_API_cuStreamEndCapture_ptsz);
}

/* ---- the structure of an instantiated graph ---- */

struct walk {
    uint64_t records, allocations;
    CUresult status; /* the first query that failed */
};

static int pair_cmp(const void *a, const void *b)
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

/* A min-heap of node positions: among the nodes ready to run, the first the driver listed. */
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

static void walk_graph(CUgraph graph, unsigned depth, struct walk *w);

static void keep_status(struct walk *w, CUresult rc)
{
    if (rc != CUDA_SUCCESS && w->status == CUDA_SUCCESS)
        w->status = rc;
}

/* A query of the driver's (NULL when it has none: the walk fails). */
#define QUERY(name) WS_REAL_FN(name)

static void record_node(CUgraphNode node, unsigned depth, struct walk *w)
{
    CUgraphNodeType type;
    __typeof__(&cuGraphNodeGetType) get_type = QUERY(cuGraphNodeGetType);
    CUresult rc = get_type ? get_type(node, &type) : DRV_MISSING;
    if (rc != CUDA_SUCCESS) {
        keep_status(w, rc);
        return;
    }
    if (type == CU_GRAPH_NODE_TYPE_GRAPH) {
        CUgraph child = NULL;
        __typeof__(&cuGraphChildGraphNodeGetGraph) get = QUERY(cuGraphChildGraphNodeGetGraph);
        rc = get ? get(node, &child) : DRV_MISSING;
        if (rc == CUDA_SUCCESS)
            walk_graph(child, depth + 1, w);
        else
            keep_status(w, rc);
        return;
    }
    uint64_t f[5] = {0};
    rc = CUDA_SUCCESS;
    switch (type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
        CUDA_KERNEL_NODE_PARAMS k;
        memset(&k, 0, sizeof k);
        __typeof__(&cuGraphKernelNodeGetParams_v2) get = QUERY(cuGraphKernelNodeGetParams_v2);
        rc = get ? get(node, &k) : DRV_MISSING;
        if (rc == CUDA_SUCCESS) {
            ws_driver_note_function(k.func ? (const void *)k.func : (const void *)k.kern);
            f[0] = k.func ? u64(k.func) : u64(k.kern);
            f[1] = ws_pack_dim3(k.gridDimX, k.gridDimY, k.gridDimZ);
            f[2] = ws_pack_dim3(k.blockDimX, k.blockDimY, k.blockDimZ);
            f[3] = k.sharedMemBytes;
        }
        break;
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY: {
        CUDA_MEMCPY3D p;
        memset(&p, 0, sizeof p);
        __typeof__(&cuGraphMemcpyNodeGetParams) get = QUERY(cuGraphMemcpyNodeGetParams);
        rc = get ? get(node, &p) : DRV_MISSING;
        if (rc == CUDA_SUCCESS) {
            uint64_t h = p.Height ? p.Height : 1, d = p.Depth ? p.Depth : 1;
            f[0] = p.dstMemoryType == CU_MEMORYTYPE_ARRAY  ? u64(p.dstArray)
                   : p.dstMemoryType == CU_MEMORYTYPE_HOST ? u64(p.dstHost)
                                                           : p.dstDevice;
            f[1] = (uint64_t)p.WidthInBytes * h * d;
            f[2] = p.srcMemoryType == CU_MEMORYTYPE_ARRAY  ? u64(p.srcArray)
                   : p.srcMemoryType == CU_MEMORYTYPE_HOST ? u64(p.srcHost)
                                                           : p.srcDevice;
        }
        break;
    }
    case CU_GRAPH_NODE_TYPE_MEMSET: {
        CUDA_MEMSET_NODE_PARAMS p;
        memset(&p, 0, sizeof p);
        __typeof__(&cuGraphMemsetNodeGetParams) get = QUERY(cuGraphMemsetNodeGetParams);
        rc = get ? get(node, &p) : DRV_MISSING;
        if (rc == CUDA_SUCCESS) {
            f[0] = p.dst;
            f[1] = (uint64_t)p.elementSize * p.width * (p.height ? p.height : 1);
        }
        break;
    }
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: {
        CUDA_MEM_ALLOC_NODE_PARAMS p;
        memset(&p, 0, sizeof p);
        __typeof__(&cuGraphMemAllocNodeGetParams) get = QUERY(cuGraphMemAllocNodeGetParams);
        rc = get ? get(node, &p) : DRV_MISSING;
        if (rc == CUDA_SUCCESS) {
            f[0] = p.dptr;
            f[1] = p.bytesize;
            f[2] = (uint64_t)(uint32_t)p.poolProps.location.id;
            w->allocations++;
        }
        break;
    }
    case CU_GRAPH_NODE_TYPE_MEM_FREE: {
        CUdeviceptr dptr = 0;
        __typeof__(&cuGraphMemFreeNodeGetParams) get = QUERY(cuGraphMemFreeNodeGetParams);
        rc = get ? get(node, &dptr) : DRV_MISSING;
        f[0] = dptr;
        break;
    }
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: {
        CUevent e = NULL;
        __typeof__(&cuGraphEventRecordNodeGetEvent) get = type == CU_GRAPH_NODE_TYPE_EVENT_RECORD
                                                              ? QUERY(cuGraphEventRecordNodeGetEvent)
                                                              : QUERY(cuGraphEventWaitNodeGetEvent);
        rc = get ? get(node, &e) : DRV_MISSING;
        f[0] = u64(e);
        break;
    }
    case CU_GRAPH_NODE_TYPE_HOST: {
        CUDA_HOST_NODE_PARAMS p;
        memset(&p, 0, sizeof p);
        __typeof__(&cuGraphHostNodeGetParams) get = QUERY(cuGraphHostNodeGetParams);
        rc = get ? get(node, &p) : DRV_MISSING;
        f[0] = u64((const void *)p.fn);
        break;
    }
    default: break; /* empty, semaphore, batch memop and conditional nodes: their type is all that is kept */
    }
    keep_status(w, rc);
    ws_graph_node_record(u64(node), (uint32_t)type, depth, f);
    w->records++;
}

/* Records the nodes of graph in launch order: Kahn's algorithm over the graph's edges. */
static void walk_graph(CUgraph graph, unsigned depth, struct walk *w)
{
    size_t n = 0, m = 0, nready = 0;
    CUgraphNode *nodes = NULL, *from = NULL, *to = NULL;
    CUgraphEdgeData *edges = NULL;
    uint64_t *pairs = NULL;
    size_t *indeg = NULL, *first = NULL, *outs = NULL, *heap = NULL, *fill = NULL;
    __typeof__(&cuGraphGetNodes) get_nodes = QUERY(cuGraphGetNodes);
    __typeof__(&cuGraphGetEdges_v2) get_edges = QUERY(cuGraphGetEdges_v2);
    CUresult rc = get_nodes && get_edges ? get_nodes(graph, NULL, &n) : DRV_MISSING;
    if (rc != CUDA_SUCCESS || n == 0)
        goto out;
    nodes = malloc(n * sizeof *nodes);
    if (!nodes || (rc = get_nodes(graph, nodes, &n)) != CUDA_SUCCESS)
        goto out;
    rc = get_edges(graph, NULL, NULL, NULL, &m);
    if (rc != CUDA_SUCCESS)
        goto out;
    from = malloc((m + 1) * sizeof *from);
    to = malloc((m + 1) * sizeof *to);
    edges = malloc((m + 1) * sizeof *edges);
    pairs = malloc(2 * n * sizeof *pairs);
    indeg = calloc(n, sizeof *indeg);
    first = calloc(n + 1, sizeof *first);
    fill = calloc(n + 1, sizeof *fill);
    outs = malloc((m + 1) * sizeof *outs);
    heap = malloc(n * sizeof *heap);
    if (!from || !to || !edges || !pairs || !indeg || !first || !fill || !outs || !heap) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    if (m && (rc = get_edges(graph, from, to, edges, &m)) != CUDA_SUCCESS)
        goto out;
    for (size_t i = 0; i < n; i++) {
        pairs[2 * i] = u64(nodes[i]);
        pairs[2 * i + 1] = i;
    }
    qsort(pairs, n, 2 * sizeof *pairs, pair_cmp);
    for (size_t e = 0; e < m; e++) {
        long a = find_node(pairs, n, u64(from[e])), b = find_node(pairs, n, u64(to[e]));
        if (a < 0 || b < 0) {
            rc = CUDA_ERROR_INVALID_VALUE;
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
    while (nready && w->status == CUDA_SUCCESS) {
        size_t i = heap_pop(heap, &nready);
        done++;
        record_node(nodes[i], depth, w);
        for (size_t k = first[i]; k < first[i + 1]; k++)
            if (--indeg[outs[k]] == 0)
                heap_push(heap, &nready, outs[k]);
    }
    if (done < n && w->status == CUDA_SUCCESS)
        rc = CUDA_ERROR_INVALID_VALUE; /* a cycle: the driver refuses to instantiate it anyway */
out:
    keep_status(w, rc);
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

static void driver_walk(const void *graph, uint64_t *records, uint64_t *allocations, int *status)
{
    struct walk w = {0, 0, CUDA_SUCCESS};
    walk_graph((CUgraph)graph, 0, &w);
    *records = w.records;
    *allocations = w.allocations;
    *status = (int)w.status;
}

static void record_structure(uint8_t api, CUresult rc, CUgraphExec *exec, CUgraph graph, unsigned long long flags)
{
    ws_graph_structure_record(api, rc, exec && rc == CUDA_SUCCESS ? *exec : NULL, graph, flags, driver_walk);
}

WS_HOOK(CUresult, cuGraphInstantiate,
        (CUgraphExec * phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize),
        (phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize))
{
    DRV_FORWARD(cuGraphInstantiate, (phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize),
                record_structure(WS_API_cuGraphInstantiate, rc, phGraphExec, hGraph, 0));
}

WS_HOOK(CUresult, cuGraphInstantiate_v2,
        (CUgraphExec * phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize),
        (phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize))
{
    DRV_FORWARD(cuGraphInstantiate_v2, (phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize),
                record_structure(WS_API_cuGraphInstantiate_v2, rc, phGraphExec, hGraph, 0));
}

WS_HOOK(CUresult, cuGraphInstantiateWithFlags, (CUgraphExec * phGraphExec, CUgraph hGraph, unsigned long long flags),
        (phGraphExec, hGraph, flags))
{
    DRV_FORWARD(cuGraphInstantiateWithFlags, (phGraphExec, hGraph, flags),
                record_structure(WS_API_cuGraphInstantiateWithFlags, rc, phGraphExec, hGraph, flags));
}

WS_HOOK(CUresult, cuGraphInstantiateWithParams,
        (CUgraphExec * phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams),
        (phGraphExec, hGraph, instantiateParams))
{
    DRV_FORWARD(cuGraphInstantiateWithParams, (phGraphExec, hGraph, instantiateParams),
                record_structure(WS_API_cuGraphInstantiateWithParams, rc, phGraphExec, hGraph,
                                 instantiateParams ? instantiateParams->flags : 0));
}

WS_HOOK(CUresult, cuGraphInstantiateWithParams_ptsz,
        (CUgraphExec * phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams),
        (phGraphExec, hGraph, instantiateParams))
{
    DRV_FORWARD(cuGraphInstantiateWithParams_ptsz, (phGraphExec, hGraph, instantiateParams),
                record_structure(WS_API_cuGraphInstantiateWithParams_ptsz, rc, phGraphExec, hGraph,
                                 instantiateParams ? instantiateParams->flags : 0));
}

/* An update gives the instance the parameters of another graph of the same shape. */
static void record_update(uint8_t api, CUresult rc, CUgraphExec exec, CUgraph graph)
{
    ws_graph_structure_record(api, rc, exec, graph, 0, driver_walk);
}

WS_HOOK(CUresult, cuGraphExecUpdate,
        (CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode *hErrorNode_out,
         CUgraphExecUpdateResult *updateResult_out),
        (hGraphExec, hGraph, hErrorNode_out, updateResult_out))
{
    DRV_FORWARD(cuGraphExecUpdate, (hGraphExec, hGraph, hErrorNode_out, updateResult_out),
                record_update(WS_API_cuGraphExecUpdate, rc, hGraphExec, hGraph));
}

WS_HOOK(CUresult, cuGraphExecUpdate_v2,
        (CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo),
        (hGraphExec, hGraph, resultInfo))
{
    DRV_FORWARD(cuGraphExecUpdate_v2, (hGraphExec, hGraph, resultInfo),
                record_update(WS_API_cuGraphExecUpdate_v2, rc, hGraphExec, hGraph));
}

WS_HOOK(CUresult, cuGraphExecDestroy, (CUgraphExec hGraphExec), (hGraphExec))
{
    DRV_FORWARD(cuGraphExecDestroy, (hGraphExec), ws_graph_destroy_record(WS_API_cuGraphExecDestroy, rc, hGraphExec));
}

static void record_kernel_set(uint8_t api, CUresult rc, CUgraphExec exec, CUgraphNode node, const void *func,
                              unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                              unsigned smem)
{
    if (rc == CUDA_SUCCESS)
        ws_driver_note_function(func);
    ws_graph_node_set_record(api, rc, exec, node, 1, u64(func), ws_pack_dim3(gx, gy, gz), ws_pack_dim3(bx, by, bz),
                             smem);
}

WS_HOOK(CUresult, cuGraphExecKernelNodeSetParams,
        (CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1 *p), (hGraphExec, hNode, p))
{
    DRV_FORWARD(cuGraphExecKernelNodeSetParams, (hGraphExec, hNode, p),
                if (p) record_kernel_set(WS_API_cuGraphExecKernelNodeSetParams, rc, hGraphExec, hNode, p->func,
                                         p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY,
                                         p->blockDimZ, p->sharedMemBytes));
}

WS_HOOK(CUresult, cuGraphExecKernelNodeSetParams_v2,
        (CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *p), (hGraphExec, hNode, p))
{
    DRV_FORWARD(cuGraphExecKernelNodeSetParams_v2, (hGraphExec, hNode, p),
                if (p)
                    record_kernel_set(WS_API_cuGraphExecKernelNodeSetParams_v2, rc, hGraphExec, hNode,
                                      p->func ? (const void *)p->func : (const void *)p->kern, p->gridDimX, p->gridDimY,
                                      p->gridDimZ, p->blockDimX, p->blockDimY, p->blockDimZ, p->sharedMemBytes));
}

/* The generic form changes kernel nodes too; other kinds of node change nothing the trace uses. */
WS_HOOK(CUresult, cuGraphExecNodeSetParams, (CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeParams *p),
        (hGraphExec, hNode, p))
{
    DRV_FORWARD(cuGraphExecNodeSetParams, (hGraphExec, hNode, p),
                if (p && p->type == CU_GRAPH_NODE_TYPE_KERNEL)
                    record_kernel_set(WS_API_cuGraphExecNodeSetParams, rc, hGraphExec, hNode,
                                      p->kernel.func ? (const void *)p->kernel.func : (const void *)p->kernel.kern,
                                      p->kernel.gridDimX, p->kernel.gridDimY, p->kernel.gridDimZ, p->kernel.blockDimX,
                                      p->kernel.blockDimY, p->kernel.blockDimZ, p->kernel.sharedMemBytes));
}

WS_HOOK(CUresult, cuGraphNodeSetEnabled, (CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int isEnabled),
        (hGraphExec, hNode, isEnabled))
{
    DRV_FORWARD(
        cuGraphNodeSetEnabled, (hGraphExec, hNode, isEnabled),
        ws_graph_node_set_record(WS_API_cuGraphNodeSetEnabled, rc, hGraphExec, hNode, 0, isEnabled != 0, 0, 0, 0));
}

/* ---- launches ---- */

static void record_graph_launch(uint8_t api, CUresult rc, CUgraphExec exec, CUstream stream)
{
    int captured = rc == CUDA_SUCCESS && ws_capture_note(api, stream);
    int device = ws_driver_device();
    struct ws_rec *r = ws_rec_begin(WS_REC_GRAPH_LAUNCH, api, rc);
    if (r) {
        r->u[0] = u64(exec);
        r->u[3] = u64(stream);
        r->u[5] = (uint64_t)(uint32_t)device;
        ws_rec_commit(1);
    }
    if (rc == CUDA_SUCCESS && !captured)
        ws_graph_memory_sample_device(api, device);
}

/* The work a graph launch runs is placed between the record stamped before the call and the one
 * after it (collector/graphs.c). */
#define GRAPH_LAUNCH(name, api)                                                                                        \
    do {                                                                                                               \
        __typeof__(&name) fn = WS_REAL_FN(name);                                                                       \
        if (!fn)                                                                                                       \
            return DRV_MISSING;                                                                                        \
        if (!ws_hook_enter())                                                                                          \
            return fn(hGraphExec, hStream);                                                                            \
        int saved = errno;                                                                                             \
        ws_graph_launch_begin_api(api, hGraphExec);                                                                    \
        errno = saved;                                                                                                 \
        CUresult rc = fn(hGraphExec, hStream);                                                                         \
        saved = errno;                                                                                                 \
        record_graph_launch(api, rc, hGraphExec, hStream);                                                             \
        ws_hook_leave(saved);                                                                                          \
        return rc;                                                                                                     \
    } while (0)

WS_EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    GRAPH_LAUNCH(cuGraphLaunch, WS_API_cuGraphLaunch);
}

WS_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    GRAPH_LAUNCH(cuGraphLaunch_ptsz, WS_API_cuGraphLaunch_ptsz);
}

/* ---- the hooks by name, for the entry-point lookups (hooks_driver.c) ---- */

void *ws_driver_graph_hook(const char *symbol);
void *ws_driver_graph_hook(const char *symbol)
{
#define H(name)                                                                                                        \
    {                                                                                                                  \
#name, (void *)name                                                                                            \
    }
    static const struct {
        const char *name;
        void *hook;
    } hooks[] = {
        H(cuGraphLaunch),
        H(cuGraphLaunch_ptsz),
        H(cuGraphInstantiate),
        H(cuGraphInstantiate_v2),
        H(cuGraphInstantiateWithFlags),
        H(cuGraphInstantiateWithParams),
        H(cuGraphInstantiateWithParams_ptsz),
        H(cuGraphExecUpdate),
        H(cuGraphExecUpdate_v2),
        H(cuGraphExecDestroy),
        H(cuGraphExecKernelNodeSetParams),
        H(cuGraphExecKernelNodeSetParams_v2),
        H(cuGraphExecNodeSetParams),
        H(cuGraphNodeSetEnabled),
        H(cuStreamBeginCapture),
        H(cuStreamBeginCapture_ptsz),
        H(cuStreamBeginCapture_v2),
        H(cuStreamBeginCapture_v2_ptsz),
        H(cuStreamBeginCaptureToGraph),
        H(cuStreamBeginCaptureToGraph_ptsz),
        H(cuStreamEndCapture),
        H(cuStreamEndCapture_ptsz),
    };
#undef H
    for (size_t i = 0; i < sizeof hooks / sizeof hooks[0]; i++)
        if (strcmp(hooks[i].name, symbol) == 0)
            return hooks[i].hook;
    return NULL;
}
