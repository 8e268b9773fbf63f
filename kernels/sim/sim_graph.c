/* CUDA graphs on the simulated device.
 *
 * A graph is a list of nodes in creation order, each with the nodes it depends on.  Instantiating
 * takes a deep copy (the snapshot: the graph may change or go away afterwards, as on a GPU) and
 * flattens it, child graphs inlined, into one launch order: a topological order that prefers
 * the earliest created node among those ready, so a graph built in program order runs in it.  A
 * launch runs that order on the calling thread: kernels run their host implementations with the
 * argument copies their nodes keep, copies and fills run at once, host nodes call their function.
 *
 * Graph memory.  An allocation node reserves its address when it is added (a host block that is
 * not yet counted against the capacity), keeps it for the life of the graph, and allocates it at
 * each launch that runs it: the block becomes live device memory, counted like cudaMalloc's, until
 * a free node, cudaFree or cudaFreeAsync frees it, or the next launch of an instance made with
 * cudaGraphInstantiateFlagAutoFreeOnLaunch.  A block is reused by a later allocation node of the
 * same graph that is ordered after the free of its latest user (the virtual address reuse that
 * CUDA performs).  The graph allocator's footprint (the memory associated with graphs) is the
 * highest use since the last cudaDeviceGraphMemTrim: memory freed by a graph stays mapped for its
 * next launch.  Launches run one after the other here, so graphs that a GPU would run at the same
 * time on different streams share it too.
 *
 * Everything here is guarded by sim_lock; kernels and host functions run outside it.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

struct sim_block {
    void *ptr;
    size_t size;                   /* bytes reserved: the request of the node that created it */
    unsigned refs;                 /* allocation nodes naming it (graphs, snapshots), +1 while live */
    struct sim_graph *graph;       /* graph whose node created it (reuse stays inside one graph) */
    const struct sim_gnode *owner; /* the latest allocation node of that graph using it */
    int live;
    size_t live_bytes;
    const struct sim_exec *live_exec; /* instance whose launch allocated it */
};

struct sim_gnode {
    struct sim_graph *graph;
    enum cudaGraphNodeType type;
    size_t index; /* position in graph->nodes */
    struct sim_gnode **deps;
    size_t ndeps, depcap;
    const struct sim_gnode *origin; /* what it was copied from (instances, clones) */
    int enabled;
    union {
        struct {
            void *func;
            dim3 grid, block;
            unsigned smem, nparams;
            void **args;        /* args[i] points into buf */
            unsigned char *buf; /* the argument values */
            size_t bufsize;
        } kernel;
        struct cudaMemcpy3DParms copy;
        struct cudaMemsetParams set;
        struct cudaHostNodeParams host;
        struct sim_graph *child; /* owned by the node */
        cudaEvent_t event;
        struct {
            struct sim_block *block;
            size_t bytes;
            struct cudaMemPoolProps props;
            const struct sim_gnode *freed_by; /* free node of the same graph, or NULL */
        } alloc;
        struct {
            void *dptr;
            const struct sim_gnode *frees; /* allocation node of the same graph it frees, or NULL */
        } free;
    } p;
};

struct sim_graph {
    struct sim_gnode **nodes;
    size_t n, cap;
    int mem_nodes;  /* allocation and free nodes, here or in child graphs */
    int instances;  /* live instances (counted for graphs with memory nodes) */
    int registered; /* a handle the program may use (not a snapshot) */
    int owned;      /* a child graph: owned by its node, never destroyed by the program */
};

struct sim_exec {
    struct sim_exec *next;
    struct sim_graph *snap;   /* the graph as it was instantiated */
    struct sim_gnode **order; /* snap's nodes, child graphs flattened, in launch order */
    size_t norder;
    struct sim_graph *source; /* the graph instantiated; NULL once it is destroyed */
    unsigned long long flags;
};

static struct sim_exec *execs;
/* graph_live: bytes of live graph allocations.  graph_held: memory associated with graphs, which
 * is what the allocator's attributes report (cudaGraphMemAttrUsedMemCurrent: "memory currently
 * associated with graphs"): a free inside a graph leaves it mapped for the next launch, so it
 * falls back to what is live only at cudaDeviceGraphMemTrim.  This allocator reserves exactly
 * what it holds, so the Reserved attributes report the same. */
static uint64_t graph_live, graph_held, graph_held_high;

static const unsigned long long known_instantiate_flags =
    cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUpload | cudaGraphInstantiateFlagDeviceLaunch |
    cudaGraphInstantiateFlagUseNodePriority;

/* ---- handles ---- */

static struct sim_graph *graph_of(const void *handle)
{
    struct sim_entry *e = sim_table_get(handle);
    return e && e->kind == SIM_GRAPH ? e->data : NULL;
}

static struct sim_gnode *node_of(const void *handle)
{
    struct sim_entry *e = sim_table_get(handle);
    return e && e->kind == SIM_GRAPH_NODE ? e->data : NULL;
}

static struct sim_exec *exec_of(const void *handle)
{
    struct sim_entry *e = sim_table_get(handle);
    return e && e->kind == SIM_GRAPH_EXEC ? e->data : NULL;
}

struct sim_graph *sim_node_graph_locked(const void *node)
{
    struct sim_gnode *n = node_of(node);
    return n ? n->graph : NULL;
}

/* ---- graph memory ---- */

static void block_unref(struct sim_block *b)
{
    if (--b->refs != 0)
        return;
    sim_table_del(b->ptr);
    free(b->ptr);
    free(b);
}

static struct sim_block *block_new(struct sim_graph *g, size_t bytes)
{
    if (bytes > SIZE_MAX - SIM_DEVICE_ALIGN)
        return NULL;
    struct sim_block *b = calloc(1, sizeof *b);
    size_t rounded = (bytes + SIM_DEVICE_ALIGN - 1) & ~(size_t)(SIM_DEVICE_ALIGN - 1);
    if (!b || posix_memalign(&b->ptr, SIM_DEVICE_ALIGN, rounded) != 0) {
        free(b);
        return NULL;
    }
    if (sim_table_put(b->ptr, SIM_GRAPH_MEM, bytes, b) != 0) {
        free(b->ptr);
        free(b);
        return NULL;
    }
    b->size = bytes;
    b->graph = g;
    return b;
}

static struct sim_block *block_at(const void *ptr)
{
    struct sim_entry *e = sim_table_get(ptr);
    return e && e->kind == SIM_GRAPH_MEM ? e->data : NULL;
}

static void block_release(struct sim_block *b)
{
    graph_live -= b->live_bytes;
    sim_account_free_locked(b->live_bytes);
    b->live = 0;
    b->live_bytes = 0;
    b->live_exec = NULL;
    block_unref(b);
}

static cudaError_t block_allocate(struct sim_block *b, size_t bytes, const struct sim_exec *x)
{
    if (b->live)
        return cudaErrorInvalidValue; /* allocated by an earlier launch and never freed */
    cudaError_t err = sim_account_alloc_locked(bytes);
    if (err != cudaSuccess) {
        sim_stats.failed_allocs++;
        return err;
    }
    b->live = 1;
    b->live_bytes = bytes;
    b->live_exec = x;
    b->refs++;
    graph_live += bytes;
    if (graph_live > graph_held)
        graph_held = graph_live;
    if (graph_held > graph_held_high)
        graph_held_high = graph_held;
    return cudaSuccess;
}

cudaError_t sim_graph_mem_free_locked(void *ptr)
{
    struct sim_block *b = block_at(ptr);
    if (!b || !b->live)
        return cudaErrorInvalidValue;
    block_release(b);
    return cudaSuccess;
}

/* ---- nodes ---- */

static void node_free(struct sim_gnode *n);

static struct sim_graph *graph_new(int registered, cudaError_t *err)
{
    struct sim_graph *g = calloc(1, sizeof *g);
    if (!g || (registered && sim_table_put(g, SIM_GRAPH, 0, g) != 0)) {
        free(g);
        *err = cudaErrorMemoryAllocation;
        return NULL;
    }
    g->registered = registered;
    return g;
}

struct sim_graph *sim_graph_create_locked(cudaError_t *err) { return graph_new(1, err); }

static void graph_free(struct sim_graph *g)
{
    for (size_t i = 0; i < g->n; i++)
        node_free(g->nodes[i]);
    free(g->nodes);
    if (g->registered)
        sim_table_del(g);
    for (struct sim_exec *x = execs; x; x = x->next)
        if (x->source == g)
            x->source = NULL;
    free(g);
}

void sim_graph_destroy_locked(struct sim_graph *g) { graph_free(g); }

static void node_free(struct sim_gnode *n)
{
    if (n->graph->registered)
        sim_table_del(n);
    switch (n->type) {
    case cudaGraphNodeTypeKernel:
        free(n->p.kernel.args);
        free(n->p.kernel.buf);
        break;
    case cudaGraphNodeTypeGraph:
        if (n->p.child)
            graph_free(n->p.child);
        break;
    case cudaGraphNodeTypeMemAlloc:
        if (!n->p.alloc.block)
            break;
        if (n->p.alloc.block->graph == n->graph)
            n->p.alloc.block->graph = NULL; /* no later graph at this address may reuse it */
        block_unref(n->p.alloc.block);
        break;
    default: break;
    }
    free(n->deps);
    free(n);
}

/* A node with its dependencies, not yet in the graph: every dependency must be a node of g,
 * given once. */
static struct sim_gnode *node_new(struct sim_graph *g, enum cudaGraphNodeType type, struct sim_gnode *const *deps,
                                  size_t ndeps, cudaError_t *err)
{
    if (ndeps && !deps) {
        *err = cudaErrorInvalidValue;
        return NULL;
    }
    for (size_t i = 0; i < ndeps; i++) {
        int dup = 0;
        for (size_t j = 0; j < i; j++)
            dup |= deps[j] == deps[i];
        if (!deps[i] || deps[i]->graph != g || dup) {
            *err = cudaErrorInvalidValue;
            return NULL;
        }
    }
    struct sim_gnode *n = calloc(1, sizeof *n);
    if (!n || (ndeps && !(n->deps = malloc(ndeps * sizeof *n->deps)))) {
        free(n);
        *err = cudaErrorMemoryAllocation;
        return NULL;
    }
    if (ndeps)
        memcpy(n->deps, deps, ndeps * sizeof *deps);
    n->ndeps = n->depcap = ndeps;
    n->graph = g;
    n->type = type;
    n->enabled = 1;
    return n;
}

/* Append a node made by node_new (on failure the caller frees it). */
static cudaError_t node_attach(struct sim_graph *g, struct sim_gnode *n)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        struct sim_gnode **nodes = realloc(g->nodes, cap * sizeof *nodes);
        if (!nodes)
            return cudaErrorMemoryAllocation;
        g->nodes = nodes;
        g->cap = cap;
    }
    if (g->registered && sim_table_put(n, SIM_GRAPH_NODE, 0, n) != 0)
        return cudaErrorMemoryAllocation;
    n->index = g->n;
    g->nodes[g->n++] = n;
    if (n->type == cudaGraphNodeTypeMemAlloc || n->type == cudaGraphNodeTypeMemFree ||
        (n->type == cudaGraphNodeTypeGraph && n->p.child->mem_nodes))
        g->mem_nodes++;
    return cudaSuccess;
}

/* Copy the argument values of a kernel launch, whose sizes the kernel's registered layout gives. */
static cudaError_t copy_args(struct sim_gnode *n, const void *func, void **args, void **extra)
{
    unsigned count;
    const size_t *sizes;
    if (extra) /* the packed-buffer form needs the parameter offsets, which the device does not know */
        return cudaErrorNotSupported;
    cudaError_t err = sim_kernel_layout_locked(func, &count, &sizes);
    if (err != cudaSuccess)
        return err;
    if (count && !args)
        return cudaErrorInvalidValue;
    size_t total = 0;
    for (unsigned i = 0; i < count; i++) {
        if (sizes[i] > SIZE_MAX / 2 - total)
            return cudaErrorInvalidValue;
        total += (sizes[i] + 15) & ~(size_t)15; /* each value aligned as any type needs */
    }
    void **a = malloc((count ? count : 1) * sizeof *a);
    unsigned char *buf = malloc(total ? total : 1);
    if (!a || !buf) {
        free(a);
        free(buf);
        return cudaErrorMemoryAllocation;
    }
    size_t at = 0;
    for (unsigned i = 0; i < count; i++) {
        a[i] = buf + at;
        memcpy(buf + at, args[i], sizes[i]);
        at += (sizes[i] + 15) & ~(size_t)15;
    }
    free(n->p.kernel.args);
    free(n->p.kernel.buf);
    n->p.kernel.args = a;
    n->p.kernel.buf = buf;
    n->p.kernel.bufsize = total;
    n->p.kernel.nparams = count;
    return cudaSuccess;
}

/* dst takes src's kernel, grid and a copy of its argument values. */
static cudaError_t copy_kernel_node(struct sim_gnode *dst, const struct sim_gnode *src)
{
    unsigned count = src->p.kernel.nparams;
    void **a = malloc((count ? count : 1) * sizeof *a);
    unsigned char *buf = malloc(src->p.kernel.bufsize ? src->p.kernel.bufsize : 1);
    if (!a || !buf) {
        free(a);
        free(buf);
        return cudaErrorMemoryAllocation;
    }
    memcpy(buf, src->p.kernel.buf, src->p.kernel.bufsize);
    for (unsigned i = 0; i < count; i++)
        a[i] = buf + ((unsigned char *)src->p.kernel.args[i] - src->p.kernel.buf);
    if (dst != src) {
        free(dst->p.kernel.args);
        free(dst->p.kernel.buf);
    }
    dst->p.kernel = src->p.kernel;
    dst->p.kernel.args = a;
    dst->p.kernel.buf = buf;
    return cudaSuccess;
}

static cudaError_t set_kernel(struct sim_gnode *n, const void *func, dim3 grid, dim3 block, unsigned smem, void **args,
                              void **extra)
{
    cudaError_t err = copy_args(n, func, args, extra);
    if (err != cudaSuccess)
        return err;
    n->p.kernel.func = (void *)func;
    n->p.kernel.grid = grid;
    n->p.kernel.block = block;
    n->p.kernel.smem = smem;
    return cudaSuccess;
}

static cudaError_t check_memset(const struct cudaMemsetParams *p)
{
    if (!p || !p->dst || (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4))
        return cudaErrorInvalidValue;
    if (p->height > 1 && p->pitch < p->width * p->elementSize)
        return cudaErrorInvalidValue;
    return cudaSuccess;
}

/* An allocation node of g whose block a new allocation of `bytes` ordered after deps may take:
 * its latest user is freed by a node among the ancestors.  A depth-first search over the
 * ancestors, each visited once; *err is set when memory runs out. */
static const struct sim_gnode *find_reusable(const struct sim_graph *g, struct sim_gnode *const *deps, size_t ndeps,
                                             size_t bytes, cudaError_t *err)
{
    unsigned char *seen = calloc(g->n + 1, 1);
    const struct sim_gnode **stack = malloc((g->n + 1) * sizeof *stack);
    const struct sim_gnode *found = NULL;
    size_t top = 0;
    if (!seen || !stack) {
        *err = cudaErrorMemoryAllocation;
        goto out;
    }
    for (size_t i = 0; i < ndeps; i++)
        if (!seen[deps[i]->index]) {
            seen[deps[i]->index] = 1;
            stack[top++] = deps[i];
        }
    while (top && !found) {
        const struct sim_gnode *d = stack[--top];
        if (d->type == cudaGraphNodeTypeMemFree && d->p.free.frees) {
            const struct sim_gnode *a = d->p.free.frees;
            if (a->p.alloc.block->owner == a && a->p.alloc.block->size >= bytes)
                found = a;
        }
        for (size_t k = 0; k < d->ndeps; k++)
            if (!seen[d->deps[k]->index]) {
                seen[d->deps[k]->index] = 1;
                stack[top++] = d->deps[k];
            }
    }
out:
    free(seen);
    free(stack);
    return found;
}

static cudaError_t set_alloc(struct sim_graph *g, struct sim_gnode *n, const struct cudaMemPoolProps *props,
                             size_t bytes)
{
    if (bytes == 0 || props->allocType != cudaMemAllocationTypePinned || props->handleTypes != cudaMemHandleTypeNone)
        return cudaErrorInvalidValue;
    if (props->location.type != cudaMemLocationTypeDevice)
        return cudaErrorInvalidValue;
    if (props->location.id != 0)
        return cudaErrorInvalidDevice;
    struct sim_block *b = NULL;
    cudaError_t err = cudaSuccess;
    const struct sim_gnode *reuse = find_reusable(g, n->deps, n->ndeps, bytes, &err);
    if (err != cudaSuccess)
        return err;
    if (reuse) {
        b = reuse->p.alloc.block;
    } else if (!(b = block_new(g, bytes))) {
        return cudaErrorMemoryAllocation;
    }
    b->refs++;
    b->owner = n;
    n->p.alloc.block = b;
    n->p.alloc.bytes = bytes;
    n->p.alloc.props = *props;
    return cudaSuccess;
}

static cudaError_t set_free(struct sim_graph *g, struct sim_gnode *n, void *dptr)
{
    struct sim_block *b = block_at(dptr);
    if (!b)
        return cudaErrorInvalidValue; /* not an address an allocation node returned */
    const struct sim_gnode *a = b->graph == g ? b->owner : NULL;
    if (a && a->p.alloc.freed_by)
        return cudaErrorInvalidValue; /* freed twice in its own graph */
    n->p.free.dptr = dptr;
    n->p.free.frees = a;
    if (a)
        ((struct sim_gnode *)a)->p.alloc.freed_by = n;
    return cudaSuccess;
}

static struct sim_graph *clone_graph(const struct sim_graph *src, int registered, cudaError_t *err);

/* Add a node of each kind to g.  The parameters are validated and copied. */
static cudaError_t add_node(struct sim_graph *g, enum cudaGraphNodeType type, struct sim_gnode *const *deps,
                            size_t ndeps, const void *params, struct sim_gnode **out)
{
    cudaError_t err = cudaSuccess;
    struct sim_gnode *n = node_new(g, type, deps, ndeps, &err);
    if (!n)
        return err;
    switch (type) {
    case cudaGraphNodeTypeKernel: {
        const struct cudaKernelNodeParams *k = params;
        err = !k ? cudaErrorInvalidValue
                 : set_kernel(n, k->func, k->gridDim, k->blockDim, k->sharedMemBytes, k->kernelParams, k->extra);
        break;
    }
    case cudaGraphNodeTypeMemcpy:
        if (!params)
            err = cudaErrorInvalidValue;
        else
            n->p.copy = *(const struct cudaMemcpy3DParms *)params;
        break;
    case cudaGraphNodeTypeMemset:
        err = check_memset(params);
        if (err == cudaSuccess)
            n->p.set = *(const struct cudaMemsetParams *)params;
        break;
    case cudaGraphNodeTypeHost:
        if (!params || !((const struct cudaHostNodeParams *)params)->fn)
            err = cudaErrorInvalidValue;
        else
            n->p.host = *(const struct cudaHostNodeParams *)params;
        break;
    case cudaGraphNodeTypeGraph: {
        const struct cudaChildGraphNodeParams *c = params;
        struct sim_graph *child = c ? graph_of(c->graph) : NULL;
        if (!child || child == g || child->owned) {
            err = cudaErrorInvalidValue;
        } else if (c->ownership == cudaGraphChildGraphOwnershipMove) {
            if (child->instances) {
                err = cudaErrorInvalidValue;
            } else {
                child->owned = 1;
                n->p.child = child;
            }
        } else if (child->mem_nodes) {
            err = cudaErrorNotSupported; /* graphs with memory nodes are moved, never cloned */
        } else {
            n->p.child = clone_graph(child, 1, &err);
            if (n->p.child)
                n->p.child->owned = 1;
        }
        break;
    }
    case cudaGraphNodeTypeEmpty: break;
    case cudaGraphNodeTypeWaitEvent:
    case cudaGraphNodeTypeEventRecord:
        if (!sim_table_has(params, SIM_EVENT))
            err = cudaErrorInvalidResourceHandle;
        else
            n->p.event = (cudaEvent_t)params;
        break;
    case cudaGraphNodeTypeMemAlloc: {
        struct cudaMemAllocNodeParams *a = (struct cudaMemAllocNodeParams *)params;
        err = !a ? cudaErrorInvalidValue : set_alloc(g, n, &a->poolProps, a->bytesize);
        if (err == cudaSuccess)
            a->dptr = n->p.alloc.block->ptr;
        break;
    }
    case cudaGraphNodeTypeMemFree: err = set_free(g, n, (void *)params); break;
    default: err = cudaErrorNotSupported; break;
    }
    if (err == cudaSuccess)
        err = node_attach(g, n);
    if (err != cudaSuccess) {
        if (type == cudaGraphNodeTypeGraph && n->p.child &&
            ((const struct cudaChildGraphNodeParams *)params)->ownership == cudaGraphChildGraphOwnershipMove) {
            n->p.child->owned = 0; /* a moved graph stays the program's when the node is not made */
            n->p.child = NULL;
        }
        if (type == cudaGraphNodeTypeMemFree && n->p.free.frees)
            ((struct sim_gnode *)n->p.free.frees)->p.alloc.freed_by = NULL;
        node_free(n);
        return err;
    }
    if (out)
        *out = n;
    if (g->mem_nodes && type == cudaGraphNodeTypeGraph)
        for (size_t i = 0; i < n->p.child->n; i++) /* a moved child's blocks now belong to g */
            if (n->p.child->nodes[i]->type == cudaGraphNodeTypeMemAlloc &&
                n->p.child->nodes[i]->p.alloc.block->graph == n->p.child)
                n->p.child->nodes[i]->p.alloc.block->graph = NULL;
    return cudaSuccess;
}

/* ---- copies of graphs ---- */

static struct sim_graph *clone_graph(const struct sim_graph *src, int registered, cudaError_t *err)
{
    struct sim_graph *g = graph_new(registered, err);
    if (!g)
        return NULL;
    for (size_t i = 0; i < src->n; i++) {
        const struct sim_gnode *s = src->nodes[i];
        struct sim_gnode *n = node_new(g, s->type, NULL, 0, err);
        if (n && s->ndeps && !(n->deps = malloc(s->ndeps * sizeof *n->deps))) {
            node_free(n);
            n = NULL;
            *err = cudaErrorMemoryAllocation;
        }
        if (!n) {
            graph_free(g);
            return NULL;
        }
        n->depcap = s->ndeps; /* filled in below: a dependency may be created after its dependent */
        n->origin = s;
        n->enabled = s->enabled;
        n->p = s->p;
        cudaError_t e = cudaSuccess;
        switch (s->type) {
        case cudaGraphNodeTypeKernel:
            n->p.kernel.args = NULL;
            n->p.kernel.buf = NULL;
            e = copy_kernel_node(n, s);
            break;
        case cudaGraphNodeTypeGraph:
            n->p.child = clone_graph(s->p.child, registered, &e);
            if (n->p.child)
                n->p.child->owned = 1;
            break;
        case cudaGraphNodeTypeMemAlloc: n->p.alloc.block->refs++; break; /* freed_by is remapped below */
        default: break;
        }
        if (e == cudaSuccess)
            e = node_attach(g, n);
        if (e != cudaSuccess) {
            if (s->type == cudaGraphNodeTypeMemAlloc)
                n->p.alloc.freed_by = NULL;
            node_free(n);
            *err = e;
            graph_free(g);
            return NULL;
        }
    }
    /* dependencies and the links between allocation and free nodes point into the copy */
    for (size_t i = 0; i < g->n; i++) {
        struct sim_gnode *n = g->nodes[i];
        for (size_t d = 0; d < src->nodes[i]->ndeps; d++)
            n->deps[d] = g->nodes[src->nodes[i]->deps[d]->index];
        n->ndeps = src->nodes[i]->ndeps;
        if (n->type == cudaGraphNodeTypeMemAlloc && n->p.alloc.freed_by)
            n->p.alloc.freed_by = g->nodes[n->p.alloc.freed_by->index];
        if (n->type == cudaGraphNodeTypeMemFree && n->p.free.frees)
            n->p.free.frees = g->nodes[n->p.free.frees->index];
    }
    return g;
}

/* ---- launch order ---- */

struct order {
    struct sim_gnode **v;
    size_t n, cap;
};

static int order_push(struct order *o, struct sim_gnode *n)
{
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 32;
        struct sim_gnode **v = realloc(o->v, cap * sizeof *v);
        if (!v)
            return -1;
        o->v = v;
        o->cap = cap;
    }
    o->v[o->n++] = n;
    return 0;
}

/* A min-heap of node indices: among the nodes ready to run, the earliest created goes first. */
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

/* Append g's nodes to o in a topological order, child graphs inlined.  -1: a cycle, -2: memory. */
static int flatten(const struct sim_graph *g, struct order *o)
{
    size_t n = g->n, nready = 0, done = 0, nedges = 0;
    for (size_t i = 0; i < n; i++)
        nedges += g->nodes[i]->ndeps;
    size_t *indeg = calloc(n + 1, sizeof *indeg), *heap = malloc((n + 1) * sizeof *heap);
    size_t *first = calloc(n + 1, sizeof *first), *outs = malloc((nedges + 1) * sizeof *outs);
    int rc = -2;
    if (!indeg || !heap || !first || !outs)
        goto out;
    /* dependents of each node, as a compressed list: outs[first[i] .. first[i + 1]) */
    for (size_t i = 0; i < n; i++)
        for (size_t d = 0; d < g->nodes[i]->ndeps; d++)
            first[g->nodes[i]->deps[d]->index + 1]++;
    for (size_t i = 0; i < n; i++)
        first[i + 1] += first[i];
    size_t *fill = calloc(n + 1, sizeof *fill);
    if (!fill)
        goto out;
    for (size_t i = 0; i < n; i++) {
        indeg[i] = g->nodes[i]->ndeps;
        for (size_t d = 0; d < g->nodes[i]->ndeps; d++) {
            size_t from = g->nodes[i]->deps[d]->index;
            outs[first[from] + fill[from]++] = i;
        }
        if (indeg[i] == 0)
            heap_push(heap, &nready, i);
    }
    free(fill);
    while (nready) {
        size_t i = heap_pop(heap, &nready);
        struct sim_gnode *node = g->nodes[i];
        done++;
        if (node->type == cudaGraphNodeTypeGraph) {
            int c = flatten(node->p.child, o);
            if (c != 0) {
                rc = c;
                goto out;
            }
        } else if (order_push(o, node) != 0) {
            goto out;
        }
        for (size_t k = first[i]; k < first[i + 1]; k++)
            if (--indeg[outs[k]] == 0)
                heap_push(heap, &nready, outs[k]);
    }
    rc = done == n ? 0 : -1;
out:
    free(indeg);
    free(heap);
    free(first);
    free(outs);
    return rc;
}

/* ---- graphs ---- */

cudaError_t cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags)
{
    if (!pGraph || flags != 0)
        return sim_result(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&sim_lock);
    struct sim_graph *g = graph_new(1, &err);
    pthread_mutex_unlock(&sim_lock);
    if (!g)
        return sim_result(err);
    *pGraph = (cudaGraph_t)g;
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    pthread_mutex_lock(&sim_lock);
    struct sim_graph *g = graph_of(graph);
    int ok = g && !g->owned; /* a child graph belongs to its node */
    if (ok)
        graph_free(g);
    pthread_mutex_unlock(&sim_lock);
    return ok ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

cudaError_t cudaGraphClone(cudaGraph_t *pGraphClone, cudaGraph_t originalGraph)
{
    if (!pGraphClone)
        return sim_result(cudaErrorInvalidValue);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&sim_lock);
    struct sim_graph *g = graph_of(originalGraph), *c = NULL;
    if (!g)
        err = cudaErrorInvalidValue;
    else if (g->mem_nodes)
        err = cudaErrorNotSupported; /* graphs with memory nodes cannot be cloned */
    else
        c = clone_graph(g, 1, &err);
    pthread_mutex_unlock(&sim_lock);
    if (!c)
        return sim_result(err);
    *pGraphClone = (cudaGraph_t)c;
    return cudaSuccess;
}

static struct sim_gnode *find_origin(const struct sim_graph *g, const struct sim_gnode *origin)
{
    for (size_t i = 0; i < g->n; i++) {
        if (g->nodes[i]->origin == origin)
            return g->nodes[i];
        if (g->nodes[i]->type == cudaGraphNodeTypeGraph) {
            struct sim_gnode *n = find_origin(g->nodes[i]->p.child, origin);
            if (n)
                return n;
        }
    }
    return NULL;
}

cudaError_t cudaGraphNodeFindInClone(cudaGraphNode_t *pNode, cudaGraphNode_t originalNode, cudaGraph_t clonedGraph)
{
    if (!pNode)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_graph *g = graph_of(clonedGraph);
    struct sim_gnode *n = g && node_of(originalNode) ? find_origin(g, node_of(originalNode)) : NULL;
    pthread_mutex_unlock(&sim_lock);
    if (!n)
        return sim_result(cudaErrorInvalidValue);
    *pNode = (cudaGraphNode_t)n;
    return cudaSuccess;
}

/* The common body of the cudaGraphAdd*Node calls. */
static cudaError_t add_public(cudaGraphNode_t *pNode, cudaGraph_t graph, const cudaGraphNode_t *deps, size_t ndeps,
                              enum cudaGraphNodeType type, const void *params)
{
    if (!pNode)
        return sim_result(cudaErrorInvalidValue);
    struct sim_gnode *n = NULL;
    pthread_mutex_lock(&sim_lock);
    struct sim_graph *g = graph_of(graph);
    cudaError_t err = g ? cudaSuccess : cudaErrorInvalidValue;
    for (size_t i = 0; err == cudaSuccess && i < ndeps; i++)
        if (!deps || node_of(deps[i]) == NULL)
            err = cudaErrorInvalidValue;
    if (err == cudaSuccess)
        err = add_node(g, type, (struct sim_gnode *const *)deps, ndeps, params, &n);
    pthread_mutex_unlock(&sim_lock);
    if (err != cudaSuccess)
        return sim_result(err);
    *pNode = (cudaGraphNode_t)n;
    return cudaSuccess;
}

cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                                   size_t numDependencies, const struct cudaKernelNodeParams *pNodeParams)
{
    return add_public(pGraphNode, graph, pDependencies, numDependencies, cudaGraphNodeTypeKernel, pNodeParams);
}

cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                                   size_t numDependencies, const struct cudaMemcpy3DParms *pCopyParams)
{
    return add_public(pGraphNode, graph, pDependencies, numDependencies, cudaGraphNodeTypeMemcpy, pCopyParams);
}

/* A linear copy as the 3D copy it is: one row of count bytes. */
static struct cudaMemcpy3DParms linear_copy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    struct cudaMemcpy3DParms p;
    memset(&p, 0, sizeof p);
    p.srcPtr = (struct cudaPitchedPtr){(void *)src, count, count, 1};
    p.dstPtr = (struct cudaPitchedPtr){dst, count, count, 1};
    p.extent = (struct cudaExtent){count, 1, 1};
    p.kind = kind;
    return p;
}

cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                     const cudaGraphNode_t *pDependencies, size_t numDependencies, void *dst,
                                     const void *src, size_t count, enum cudaMemcpyKind kind)
{
    struct cudaMemcpy3DParms p = linear_copy(dst, src, count, kind);
    if (!dst || !src || kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
        return sim_result(cudaErrorInvalidValue);
    return add_public(pGraphNode, graph, pDependencies, numDependencies, cudaGraphNodeTypeMemcpy, &p);
}

cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                                   size_t numDependencies, const struct cudaMemsetParams *pMemsetParams)
{
    return add_public(pGraphNode, graph, pDependencies, numDependencies, cudaGraphNodeTypeMemset, pMemsetParams);
}

cudaError_t cudaGraphAddHostNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                                 size_t numDependencies, const struct cudaHostNodeParams *pNodeParams)
{
    return add_public(pGraphNode, graph, pDependencies, numDependencies, cudaGraphNodeTypeHost, pNodeParams);
}

cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                       const cudaGraphNode_t *pDependencies, size_t numDependencies,
                                       cudaGraph_t childGraph)
{
    struct cudaChildGraphNodeParams c = {.graph = childGraph, .ownership = cudaGraphChildGraphOwnershipClone};
    return add_public(pGraphNode, graph, pDependencies, numDependencies, cudaGraphNodeTypeGraph, &c);
}

cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                                  size_t numDependencies)
{
    return add_public(pGraphNode, graph, pDependencies, numDependencies, cudaGraphNodeTypeEmpty, NULL);
}

cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                        const cudaGraphNode_t *pDependencies, size_t numDependencies, cudaEvent_t event)
{
    return add_public(pGraphNode, graph, pDependencies, numDependencies, cudaGraphNodeTypeEventRecord, event);
}

cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                      const cudaGraphNode_t *pDependencies, size_t numDependencies, cudaEvent_t event)
{
    return add_public(pGraphNode, graph, pDependencies, numDependencies, cudaGraphNodeTypeWaitEvent, event);
}

cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                     const cudaGraphNode_t *pDependencies, size_t numDependencies,
                                     struct cudaMemAllocNodeParams *nodeParams)
{
    return add_public(pGraphNode, graph, pDependencies, numDependencies, cudaGraphNodeTypeMemAlloc, nodeParams);
}

cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                    const cudaGraphNode_t *pDependencies, size_t numDependencies, void *dptr)
{
    return add_public(pGraphNode, graph, pDependencies, numDependencies, cudaGraphNodeTypeMemFree, dptr);
}

/* The generic form (CUDA 12.2): the same nodes from one parameter union.  Edge data must be the
 * default (full completion, no ports), the only kind this device has. */
cudaError_t cudaGraphAddNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                             const cudaGraphEdgeData *dependencyData, size_t numDependencies,
                             struct cudaGraphNodeParams *nodeParams)
{
    if (!nodeParams)
        return sim_result(cudaErrorInvalidValue);
    for (size_t i = 0; dependencyData && i < numDependencies; i++)
        if (dependencyData[i].from_port || dependencyData[i].to_port || dependencyData[i].type)
            return sim_result(cudaErrorNotSupported);
    struct cudaGraphNodeParams *p = nodeParams;
    switch (p->type) {
    case cudaGraphNodeTypeKernel: {
        struct cudaKernelNodeParams k = {p->kernel.func,           p->kernel.gridDim,      p->kernel.blockDim,
                                         p->kernel.sharedMemBytes, p->kernel.kernelParams, p->kernel.extra};
        return add_public(pGraphNode, graph, pDependencies, numDependencies, p->type, &k);
    }
    case cudaGraphNodeTypeMemcpy:
        return add_public(pGraphNode, graph, pDependencies, numDependencies, p->type, &p->memcpy.copyParams);
    case cudaGraphNodeTypeMemset: {
        struct cudaMemsetParams m = {p->memset.dst,         p->memset.pitch, p->memset.value,
                                     p->memset.elementSize, p->memset.width, p->memset.height};
        return add_public(pGraphNode, graph, pDependencies, numDependencies, p->type, &m);
    }
    case cudaGraphNodeTypeHost: {
        struct cudaHostNodeParams h = {p->host.fn, p->host.userData};
        return add_public(pGraphNode, graph, pDependencies, numDependencies, p->type, &h);
    }
    case cudaGraphNodeTypeGraph:
        return add_public(pGraphNode, graph, pDependencies, numDependencies, p->type, &p->graph);
    case cudaGraphNodeTypeEmpty: return add_public(pGraphNode, graph, pDependencies, numDependencies, p->type, NULL);
    case cudaGraphNodeTypeWaitEvent:
        return add_public(pGraphNode, graph, pDependencies, numDependencies, p->type, p->eventWait.event);
    case cudaGraphNodeTypeEventRecord:
        return add_public(pGraphNode, graph, pDependencies, numDependencies, p->type, p->eventRecord.event);
    case cudaGraphNodeTypeMemAlloc: {
        struct cudaMemAllocNodeParams a = {p->alloc.poolProps, p->alloc.accessDescs, p->alloc.accessDescCount,
                                           p->alloc.bytesize, NULL};
        cudaError_t err = add_public(pGraphNode, graph, pDependencies, numDependencies, p->type, &a);
        if (err == cudaSuccess)
            p->alloc.dptr = a.dptr;
        return err;
    }
    case cudaGraphNodeTypeMemFree:
        return add_public(pGraphNode, graph, pDependencies, numDependencies, p->type, p->free.dptr);
    default: return sim_result(cudaErrorNotSupported);
    }
}

/* Stream capture adds its nodes here (sim_capture.c). */
cudaError_t sim_graph_add_op_locked(struct sim_graph *g, const struct sim_op *op, struct sim_gnode *const *deps,
                                    size_t ndeps, struct sim_gnode **out)
{
    switch (op->kind) {
    case SIM_OP_KERNEL: {
        struct cudaKernelNodeParams k = {(void *)op->func, op->grid, op->block, (unsigned)op->smem, op->args, NULL};
        return add_node(g, cudaGraphNodeTypeKernel, deps, ndeps, &k, out);
    }
    case SIM_OP_MEMCPY: {
        if (op->copy3d)
            return add_node(g, cudaGraphNodeTypeMemcpy, deps, ndeps, op->copy3d, out);
        if (op->bytes && (!op->dst || !op->src))
            return cudaErrorInvalidValue;
        if (op->copy_kind < cudaMemcpyHostToHost || op->copy_kind > cudaMemcpyDefault)
            return cudaErrorInvalidMemcpyDirection;
        struct cudaMemcpy3DParms p = linear_copy(op->dst, op->src, op->bytes, op->copy_kind);
        return add_node(g, cudaGraphNodeTypeMemcpy, deps, ndeps, &p, out);
    }
    case SIM_OP_MEMSET: {
        struct cudaMemsetParams m = {op->dst, op->pitch, op->value, op->element_size, op->width, op->height};
        return add_node(g, cudaGraphNodeTypeMemset, deps, ndeps, &m, out);
    }
    case SIM_OP_MALLOC: {
        if (!op->out_ptr)
            return cudaErrorInvalidValue;
        struct cudaMemAllocNodeParams a;
        memset(&a, 0, sizeof a);
        a.poolProps.allocType = cudaMemAllocationTypePinned;
        a.poolProps.location.type = cudaMemLocationTypeDevice;
        a.bytesize = op->bytes;
        cudaError_t err = add_node(g, cudaGraphNodeTypeMemAlloc, deps, ndeps, &a, out);
        if (err == cudaSuccess)
            *op->out_ptr = a.dptr;
        return err;
    }
    case SIM_OP_FREE: return add_node(g, cudaGraphNodeTypeMemFree, deps, ndeps, op->dst, out);
    case SIM_OP_HOST: {
        struct cudaHostNodeParams h = {op->fn, op->user};
        return add_node(g, cudaGraphNodeTypeHost, deps, ndeps, &h, out);
    }
    case SIM_OP_GRAPH: {
        struct sim_exec *x = exec_of(op->exec);
        if (!x)
            return cudaErrorInvalidValue;
        if (x->snap->mem_nodes)
            return cudaErrorNotSupported;
        cudaError_t err = cudaSuccess;
        struct sim_graph *child = clone_graph(x->snap, 1, &err);
        if (!child)
            return err;
        struct cudaChildGraphNodeParams c = {.graph = (cudaGraph_t)child,
                                             .ownership = cudaGraphChildGraphOwnershipMove};
        err = add_node(g, cudaGraphNodeTypeGraph, deps, ndeps, &c, out);
        if (err != cudaSuccess)
            graph_free(child);
        return err;
    }
    }
    return cudaErrorInvalidValue;
}

/* ---- queries ---- */

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType *pType)
{
    if (!pType)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_gnode *n = node_of(node);
    if (n)
        *pType = n->type;
    pthread_mutex_unlock(&sim_lock);
    return n ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

/* Fill up to *count handles (NULL: only count); what does not exist is set to NULL. */
static void give_nodes(cudaGraphNode_t *out, size_t *count, struct sim_gnode *const *v, size_t n)
{
    if (!out) {
        *count = n;
        return;
    }
    for (size_t i = 0; i < *count; i++)
        out[i] = i < n ? (cudaGraphNode_t)v[i] : NULL;
    if (*count > n)
        *count = n;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes)
{
    if (!numNodes)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_graph *g = graph_of(graph);
    if (g)
        give_nodes(nodes, numNodes, g->nodes, g->n);
    pthread_mutex_unlock(&sim_lock);
    return g ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t *pRootNodes, size_t *pNumRootNodes)
{
    if (!pNumRootNodes)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_graph *g = graph_of(graph);
    size_t k = 0;
    for (size_t i = 0; g && i < g->n; i++) {
        if (g->nodes[i]->ndeps)
            continue;
        if (pRootNodes && k < *pNumRootNodes)
            pRootNodes[k] = (cudaGraphNode_t)g->nodes[i];
        k++;
    }
    if (g && pRootNodes) {
        for (size_t i = k; i < *pNumRootNodes; i++)
            pRootNodes[i] = NULL;
        if (k < *pNumRootNodes)
            *pNumRootNodes = k;
    } else if (g) {
        *pNumRootNodes = k;
    }
    pthread_mutex_unlock(&sim_lock);
    return g ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

static void zero_edges(cudaGraphEdgeData *edges, size_t n)
{
    if (edges)
        memset(edges, 0, n * sizeof *edges);
}

cudaError_t cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t *from, cudaGraphNode_t *to,
                              cudaGraphEdgeData *edgeData, size_t *numEdges)
{
    if (!numEdges || (!from) != (!to))
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_graph *g = graph_of(graph);
    size_t k = 0;
    for (size_t i = 0; g && i < g->n; i++)
        for (size_t d = 0; d < g->nodes[i]->ndeps; d++, k++)
            if (from && k < *numEdges) {
                from[k] = (cudaGraphNode_t)g->nodes[i]->deps[d];
                to[k] = (cudaGraphNode_t)g->nodes[i];
            }
    if (g && from) {
        for (size_t i = k; i < *numEdges; i++)
            from[i] = to[i] = NULL;
        zero_edges(edgeData, *numEdges);
        if (k < *numEdges)
            *numEdges = k;
    } else if (g) {
        *numEdges = k;
    }
    pthread_mutex_unlock(&sim_lock);
    return g ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t *pDependencies,
                                         cudaGraphEdgeData *edgeData, size_t *pNumDependencies)
{
    if (!pNumDependencies)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_gnode *n = node_of(node);
    if (n) {
        give_nodes(pDependencies, pNumDependencies, n->deps, n->ndeps);
        if (pDependencies)
            zero_edges(edgeData, *pNumDependencies);
    }
    pthread_mutex_unlock(&sim_lock);
    return n ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node, cudaGraphNode_t *pDependentNodes,
                                           cudaGraphEdgeData *edgeData, size_t *pNumDependentNodes)
{
    if (!pNumDependentNodes)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_gnode *n = node_of(node);
    size_t k = 0;
    for (size_t i = 0; n && i < n->graph->n; i++) {
        const struct sim_gnode *m = n->graph->nodes[i];
        for (size_t d = 0; d < m->ndeps; d++)
            if (m->deps[d] == n) {
                if (pDependentNodes && k < *pNumDependentNodes)
                    pDependentNodes[k] = (cudaGraphNode_t)m;
                k++;
            }
    }
    if (n && pDependentNodes) {
        for (size_t i = k; i < *pNumDependentNodes; i++)
            pDependentNodes[i] = NULL;
        zero_edges(edgeData, *pNumDependentNodes);
        if (k < *pNumDependentNodes)
            *pNumDependentNodes = k;
    } else if (n) {
        *pNumDependentNodes = k;
    }
    pthread_mutex_unlock(&sim_lock);
    return n ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t *from, const cudaGraphNode_t *to,
                                     const cudaGraphEdgeData *edgeData, size_t numDependencies)
{
    if (numDependencies && (!from || !to))
        return sim_result(cudaErrorInvalidValue);
    for (size_t i = 0; edgeData && i < numDependencies; i++)
        if (edgeData[i].from_port || edgeData[i].to_port || edgeData[i].type)
            return sim_result(cudaErrorNotSupported);
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&sim_lock);
    struct sim_graph *g = graph_of(graph);
    if (!g)
        err = cudaErrorInvalidValue;
    for (size_t i = 0; err == cudaSuccess && i < numDependencies; i++) {
        struct sim_gnode *a = node_of(from[i]), *b = node_of(to[i]);
        if (!a || !b || a->graph != g || b->graph != g || a == b) {
            err = cudaErrorInvalidValue;
            break;
        }
        for (size_t d = 0; d < b->ndeps; d++)
            if (b->deps[d] == a)
                err = cudaErrorInvalidValue; /* the edge exists already */
        if (err != cudaSuccess)
            break;
        if (b->ndeps == b->depcap) {
            size_t cap = b->depcap ? b->depcap * 2 : 4;
            struct sim_gnode **v = realloc(b->deps, cap * sizeof *v);
            if (!v) {
                err = cudaErrorMemoryAllocation;
                break;
            }
            b->deps = v;
            b->depcap = cap;
        }
        b->deps[b->ndeps++] = a;
    }
    pthread_mutex_unlock(&sim_lock);
    return err == cudaSuccess ? cudaSuccess : sim_result(err);
}

cudaError_t cudaGraphDestroyNode(cudaGraphNode_t node)
{
    cudaError_t err = cudaSuccess;
    pthread_mutex_lock(&sim_lock);
    struct sim_gnode *n = node_of(node);
    if (!n) {
        err = cudaErrorInvalidValue;
    } else if (n->graph->mem_nodes) {
        err = cudaErrorNotSupported; /* nodes of graphs with memory nodes cannot be removed */
    } else {
        struct sim_graph *g = n->graph;
        for (size_t i = 0; i < g->n; i++) {
            struct sim_gnode *m = g->nodes[i];
            size_t k = 0;
            for (size_t d = 0; d < m->ndeps; d++)
                if (m->deps[d] != n)
                    m->deps[k++] = m->deps[d];
            m->ndeps = k;
        }
        memmove(&g->nodes[n->index], &g->nodes[n->index + 1], (g->n - n->index - 1) * sizeof *g->nodes);
        g->n--;
        for (size_t i = n->index; i < g->n; i++)
            g->nodes[i]->index = i;
        node_free(n);
    }
    pthread_mutex_unlock(&sim_lock);
    return err == cudaSuccess ? cudaSuccess : sim_result(err);
}

/* The node of a handle when it has the wanted type (sim_lock held). */
static struct sim_gnode *typed_node(cudaGraphNode_t node, enum cudaGraphNodeType type)
{
    struct sim_gnode *n = node_of(node);
    return n && n->type == type ? n : NULL;
}

cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, struct cudaKernelNodeParams *pNodeParams)
{
    if (!pNodeParams)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_gnode *n = typed_node(node, cudaGraphNodeTypeKernel);
    if (n)
        *pNodeParams = (struct cudaKernelNodeParams){n->p.kernel.func, n->p.kernel.grid, n->p.kernel.block,
                                                     n->p.kernel.smem, n->p.kernel.args, NULL};
    pthread_mutex_unlock(&sim_lock);
    return n ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t node, const struct cudaKernelNodeParams *pNodeParams)
{
    if (!pNodeParams)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_gnode *n = typed_node(node, cudaGraphNodeTypeKernel);
    cudaError_t err = n ? set_kernel(n, pNodeParams->func, pNodeParams->gridDim, pNodeParams->blockDim,
                                     pNodeParams->sharedMemBytes, pNodeParams->kernelParams, pNodeParams->extra)
                        : cudaErrorInvalidValue;
    pthread_mutex_unlock(&sim_lock);
    return err == cudaSuccess ? cudaSuccess : sim_result(err);
}

cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t node, struct cudaMemcpy3DParms *pNodeParams)
{
    if (!pNodeParams)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_gnode *n = typed_node(node, cudaGraphNodeTypeMemcpy);
    if (n)
        *pNodeParams = n->p.copy;
    pthread_mutex_unlock(&sim_lock);
    return n ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

cudaError_t cudaGraphMemsetNodeGetParams(cudaGraphNode_t node, struct cudaMemsetParams *pNodeParams)
{
    if (!pNodeParams)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_gnode *n = typed_node(node, cudaGraphNodeTypeMemset);
    if (n)
        *pNodeParams = n->p.set;
    pthread_mutex_unlock(&sim_lock);
    return n ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

cudaError_t cudaGraphHostNodeGetParams(cudaGraphNode_t node, struct cudaHostNodeParams *pNodeParams)
{
    if (!pNodeParams)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_gnode *n = typed_node(node, cudaGraphNodeTypeHost);
    if (n)
        *pNodeParams = n->p.host;
    pthread_mutex_unlock(&sim_lock);
    return n ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

cudaError_t cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t node, cudaGraph_t *pGraph)
{
    if (!pGraph)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_gnode *n = typed_node(node, cudaGraphNodeTypeGraph);
    if (n)
        *pGraph = (cudaGraph_t)n->p.child;
    pthread_mutex_unlock(&sim_lock);
    return n ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

static cudaError_t node_event(cudaGraphNode_t node, enum cudaGraphNodeType type, cudaEvent_t *out)
{
    if (!out)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_gnode *n = typed_node(node, type);
    if (n)
        *out = n->p.event;
    pthread_mutex_unlock(&sim_lock);
    return n ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

cudaError_t cudaGraphEventRecordNodeGetEvent(cudaGraphNode_t node, cudaEvent_t *event_out)
{
    return node_event(node, cudaGraphNodeTypeEventRecord, event_out);
}

cudaError_t cudaGraphEventWaitNodeGetEvent(cudaGraphNode_t node, cudaEvent_t *event_out)
{
    return node_event(node, cudaGraphNodeTypeWaitEvent, event_out);
}

cudaError_t cudaGraphMemAllocNodeGetParams(cudaGraphNode_t node, struct cudaMemAllocNodeParams *params_out)
{
    if (!params_out)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_gnode *n = typed_node(node, cudaGraphNodeTypeMemAlloc);
    if (n) {
        memset(params_out, 0, sizeof *params_out);
        params_out->poolProps = n->p.alloc.props;
        params_out->bytesize = n->p.alloc.bytes;
        params_out->dptr = n->p.alloc.block->ptr;
    }
    pthread_mutex_unlock(&sim_lock);
    return n ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

cudaError_t cudaGraphMemFreeNodeGetParams(cudaGraphNode_t node, void *dptr_out)
{
    if (!dptr_out)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_gnode *n = typed_node(node, cudaGraphNodeTypeMemFree);
    if (n)
        *(void **)dptr_out = n->p.free.dptr;
    pthread_mutex_unlock(&sim_lock);
    return n ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

/* ---- instances ---- */

static void exec_free(struct sim_exec *x)
{
    if (x->source && x->snap->mem_nodes)
        x->source->instances--;
    graph_free(x->snap);
    free(x->order);
    free(x);
}

static cudaError_t instantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags)
{
    if (!pGraphExec || (flags & ~known_instantiate_flags) ||
        ((flags & cudaGraphInstantiateFlagAutoFreeOnLaunch) && (flags & cudaGraphInstantiateFlagDeviceLaunch)))
        return cudaErrorInvalidValue;
    cudaError_t err = cudaSuccess;
    struct sim_exec *x = NULL;
    pthread_mutex_lock(&sim_lock);
    struct sim_graph *g = graph_of(graph);
    if (!g || (g->mem_nodes && g->instances)) { /* one instance at a time of a graph with memory nodes */
        err = cudaErrorInvalidValue;
        goto out;
    }
    x = calloc(1, sizeof *x);
    if (!x) {
        err = cudaErrorMemoryAllocation;
        goto out;
    }
    x->snap = clone_graph(g, 0, &err);
    if (!x->snap)
        goto fail;
    struct order o = {0};
    int rc = flatten(x->snap, &o);
    x->order = o.v;
    x->norder = o.n;
    if (rc != 0) {
        err = rc == -1 ? cudaErrorInvalidValue : cudaErrorMemoryAllocation; /* -1: a cycle */
        goto fail;
    }
    if (sim_table_put(x, SIM_GRAPH_EXEC, 0, x) != 0) {
        err = cudaErrorMemoryAllocation;
        goto fail;
    }
    x->source = g;
    x->flags = flags;
    if (g->mem_nodes)
        g->instances++;
    x->next = execs;
    execs = x;
    *pGraphExec = (cudaGraphExec_t)x;
    goto out;
fail:
    if (x->snap)
        graph_free(x->snap);
    free(x->order);
    free(x);
out:
    pthread_mutex_unlock(&sim_lock);
    return err;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags)
{
    return sim_result(instantiate(pGraphExec, graph, flags));
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags)
{
    if (flags & cudaGraphInstantiateFlagUpload) /* only through cudaGraphInstantiateWithParams */
        return sim_result(cudaErrorInvalidValue);
    return sim_result(instantiate(pGraphExec, graph, flags));
}

cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                           cudaGraphInstantiateParams *instantiateParams)
{
    if (!instantiateParams)
        return sim_result(cudaErrorInvalidValue);
    if ((instantiateParams->flags & cudaGraphInstantiateFlagUpload) &&
        !sim_stream_valid(instantiateParams->uploadStream))
        return sim_result(cudaErrorInvalidResourceHandle);
    cudaError_t err = instantiate(pGraphExec, graph, instantiateParams->flags);
    instantiateParams->errNode_out = NULL;
    instantiateParams->result_out = err == cudaSuccess ? cudaGraphInstantiateSuccess : cudaGraphInstantiateError;
    return sim_result(err);
}

cudaError_t cudaGraphExecGetFlags(cudaGraphExec_t graphExec, unsigned long long *flags)
{
    if (!flags)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_exec *x = exec_of(graphExec);
    if (x)
        *flags = x->flags;
    pthread_mutex_unlock(&sim_lock);
    return x ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
    pthread_mutex_lock(&sim_lock);
    struct sim_exec *x = exec_of(graphExec);
    if (x) {
        sim_table_del(x);
        for (struct sim_exec **link = &execs; *link; link = &(*link)->next)
            if (*link == x) {
                *link = x->next;
                break;
            }
        exec_free(x); /* its unfreed allocations stay live until they are freed */
    }
    pthread_mutex_unlock(&sim_lock);
    return x ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

/* Before a launch: what the instance's earlier launch allocated and nobody freed.  With
 * AutoFreeOnLaunch it is freed now; without, the launch fails (cudaGraphLaunch's contract). */
static cudaError_t settle_earlier_allocations(struct sim_exec *x)
{
    for (size_t i = 0; i < x->norder; i++) {
        const struct sim_gnode *n = x->order[i];
        if (n->type != cudaGraphNodeTypeMemAlloc || !n->p.alloc.block->live || n->p.alloc.block->live_exec != x)
            continue;
        if (!(x->flags & cudaGraphInstantiateFlagAutoFreeOnLaunch))
            return cudaErrorInvalidValue;
        block_release(n->p.alloc.block);
    }
    return cudaSuccess;
}

static cudaError_t run_node(struct sim_exec *x, struct sim_gnode *n)
{
    cudaError_t err = cudaSuccess;
    switch (n->type) {
    case cudaGraphNodeTypeKernel:
        return sim_run_kernel(n->p.kernel.func, n->p.kernel.grid, n->p.kernel.block, n->p.kernel.args);
    case cudaGraphNodeTypeMemcpy: return sim_copy3d(&n->p.copy);
    case cudaGraphNodeTypeMemset:
        return sim_fill(n->p.set.dst, n->p.set.pitch, n->p.set.value, n->p.set.elementSize, n->p.set.width,
                        n->p.set.height);
    case cudaGraphNodeTypeHost: n->p.host.fn(n->p.host.userData); return cudaSuccess;
    case cudaGraphNodeTypeEventRecord: return cudaEventRecord(n->p.event, NULL);
    case cudaGraphNodeTypeMemAlloc:
        pthread_mutex_lock(&sim_lock);
        err = block_allocate(n->p.alloc.block, n->p.alloc.bytes, x);
        pthread_mutex_unlock(&sim_lock);
        return err;
    case cudaGraphNodeTypeMemFree:
        pthread_mutex_lock(&sim_lock);
        err = sim_graph_mem_free_locked(n->p.free.dptr);
        pthread_mutex_unlock(&sim_lock);
        return err;
    default: return cudaSuccess; /* empty nodes, event waits: the device is synchronous */
    }
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    SIM_CAPTURE_OP(stream, .kind = SIM_OP_GRAPH, .exec = graphExec);
    pthread_mutex_lock(&sim_lock);
    struct sim_exec *x = exec_of(graphExec);
    cudaError_t err = x ? settle_earlier_allocations(x) : cudaErrorInvalidValue;
    pthread_mutex_unlock(&sim_lock);
    if (err != cudaSuccess)
        return sim_result(err);
    /* An instance is not thread-safe (nor is it on a GPU): its nodes are read without the lock. */
    for (size_t i = 0; i < x->norder; i++) {
        struct sim_gnode *n = x->order[i];
        if (!n->enabled)
            continue;
        err = run_node(x, n);
        if (err != cudaSuccess)
            return sim_result(err);
    }
    return cudaSuccess;
}

cudaError_t cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&sim_lock);
    struct sim_exec *x = exec_of(graphExec);
    pthread_mutex_unlock(&sim_lock);
    return x ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

/* The instance's node that was made from `node` (a node of the instantiated graph). */
static struct sim_gnode *instance_node(struct sim_exec *x, cudaGraphNode_t node)
{
    struct sim_gnode *origin = node_of(node);
    if (!origin)
        return NULL;
    for (size_t i = 0; i < x->norder; i++)
        if (x->order[i]->origin == origin)
            return x->order[i];
    return NULL;
}

cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                             const struct cudaKernelNodeParams *pNodeParams)
{
    if (!pNodeParams)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_exec *x = exec_of(hGraphExec);
    struct sim_gnode *n = x ? instance_node(x, node) : NULL;
    cudaError_t err = !n || n->type != cudaGraphNodeTypeKernel
                          ? cudaErrorInvalidValue
                          : set_kernel(n, pNodeParams->func, pNodeParams->gridDim, pNodeParams->blockDim,
                                       pNodeParams->sharedMemBytes, pNodeParams->kernelParams, pNodeParams->extra);
    pthread_mutex_unlock(&sim_lock);
    return err == cudaSuccess ? cudaSuccess : sim_result(err);
}

cudaError_t cudaGraphNodeSetEnabled(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode, unsigned int isEnabled)
{
    pthread_mutex_lock(&sim_lock);
    struct sim_exec *x = exec_of(hGraphExec);
    struct sim_gnode *n = x ? instance_node(x, hNode) : NULL;
    /* kernel, memset and memcpy nodes can be disabled */
    int ok = n && (n->type == cudaGraphNodeTypeKernel || n->type == cudaGraphNodeTypeMemset ||
                   n->type == cudaGraphNodeTypeMemcpy);
    if (ok)
        n->enabled = isEnabled != 0;
    pthread_mutex_unlock(&sim_lock);
    return ok ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

cudaError_t cudaGraphNodeGetEnabled(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode, unsigned int *isEnabled)
{
    if (!isEnabled)
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    struct sim_exec *x = exec_of(hGraphExec);
    struct sim_gnode *n = x ? instance_node(x, hNode) : NULL;
    if (n)
        *isEnabled = (unsigned)n->enabled;
    pthread_mutex_unlock(&sim_lock);
    return n ? cudaSuccess : sim_result(cudaErrorInvalidValue);
}

/* Is the instance's order the same work as `o`, node for node?  Memory nodes must be the very
 * same (their addresses are fixed); other nodes only of the same type with as many dependencies. */
static enum cudaGraphExecUpdateResult compare_orders(const struct sim_exec *x, const struct order *o, size_t *at)
{
    if (o->n != x->norder) {
        *at = o->n < x->norder ? o->n : x->norder;
        return cudaGraphExecUpdateErrorTopologyChanged;
    }
    for (size_t i = 0; i < o->n; i++) {
        const struct sim_gnode *a = x->order[i], *b = o->v[i];
        *at = i;
        if (a->type != b->type)
            return cudaGraphExecUpdateErrorNodeTypeChanged;
        if (a->ndeps != b->ndeps)
            return cudaGraphExecUpdateErrorTopologyChanged;
        if (a->type == cudaGraphNodeTypeMemAlloc &&
            (a->p.alloc.block != b->p.alloc.block || a->p.alloc.bytes != b->p.alloc.bytes))
            return cudaGraphExecUpdateErrorNotSupported;
        if (a->type == cudaGraphNodeTypeMemFree && a->p.free.dptr != b->p.free.dptr)
            return cudaGraphExecUpdateErrorNotSupported;
    }
    return cudaGraphExecUpdateSuccess;
}

cudaError_t cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph,
                                cudaGraphExecUpdateResultInfo *resultInfo)
{
    cudaError_t err = cudaSuccess;
    enum cudaGraphExecUpdateResult result = cudaGraphExecUpdateError;
    size_t at = 0;
    struct order o = {0};
    struct sim_graph *copy = NULL;
    struct sim_gnode *error_node = NULL;
    pthread_mutex_lock(&sim_lock);
    struct sim_exec *x = exec_of(hGraphExec);
    struct sim_graph *g = graph_of(hGraph);
    if (!x || !g) {
        err = cudaErrorInvalidValue;
        goto out;
    }
    copy = clone_graph(g, 0, &err);
    if (!copy)
        goto out;
    int rc = flatten(copy, &o);
    if (rc != 0) {
        err = rc == -1 ? cudaErrorGraphExecUpdateFailure : cudaErrorMemoryAllocation;
        result = cudaGraphExecUpdateErrorTopologyChanged;
        goto out;
    }
    result = compare_orders(x, &o, &at);
    if (result != cudaGraphExecUpdateSuccess) {
        err = cudaErrorGraphExecUpdateFailure;
        error_node = at < o.n ? (struct sim_gnode *)o.v[at]->origin : NULL;
        goto out;
    }
    for (size_t i = 0; i < o.n && err == cudaSuccess; i++) {
        struct sim_gnode *a = x->order[i], *b = o.v[i];
        switch (a->type) {
        case cudaGraphNodeTypeKernel: err = copy_kernel_node(a, b); break;
        case cudaGraphNodeTypeMemcpy: a->p.copy = b->p.copy; break;
        case cudaGraphNodeTypeMemset: a->p.set = b->p.set; break;
        case cudaGraphNodeTypeHost: a->p.host = b->p.host; break;
        case cudaGraphNodeTypeEventRecord:
        case cudaGraphNodeTypeWaitEvent: a->p.event = b->p.event; break;
        default: break;
        }
    }
out:
    if (copy)
        graph_free(copy);
    free(o.v);
    pthread_mutex_unlock(&sim_lock);
    if (resultInfo) {
        resultInfo->result = err == cudaSuccess ? cudaGraphExecUpdateSuccess : result;
        resultInfo->errorNode = (cudaGraphNode_t)error_node;
        resultInfo->errorFromNode = NULL;
    }
    return err == cudaSuccess ? cudaSuccess : sim_result(err);
}

/* ---- the graph allocator's footprint ---- */

cudaError_t cudaDeviceGraphMemTrim(int device)
{
    if (device != 0)
        return sim_result(cudaErrorInvalidDevice);
    pthread_mutex_lock(&sim_lock);
    graph_held = graph_live;
    pthread_mutex_unlock(&sim_lock);
    return cudaSuccess;
}

cudaError_t cudaDeviceGetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr, void *value)
{
    if (device != 0)
        return sim_result(cudaErrorInvalidDevice);
    if (!value)
        return sim_result(cudaErrorInvalidValue);
    uint64_t v;
    pthread_mutex_lock(&sim_lock);
    switch (attr) {
    case cudaGraphMemAttrUsedMemCurrent:
    case cudaGraphMemAttrReservedMemCurrent: v = graph_held; break;
    case cudaGraphMemAttrUsedMemHigh:
    case cudaGraphMemAttrReservedMemHigh: v = graph_held_high; break;
    default: pthread_mutex_unlock(&sim_lock); return sim_result(cudaErrorInvalidValue);
    }
    pthread_mutex_unlock(&sim_lock);
    memcpy(value, &v, sizeof v);
    return cudaSuccess;
}

/* Only the high watermarks can be set, and only to zero: that resets them to the current value. */
cudaError_t cudaDeviceSetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr, void *value)
{
    if (device != 0)
        return sim_result(cudaErrorInvalidDevice);
    uint64_t v;
    if (!value)
        return sim_result(cudaErrorInvalidValue);
    memcpy(&v, value, sizeof v);
    if (v != 0 || (attr != cudaGraphMemAttrUsedMemHigh && attr != cudaGraphMemAttrReservedMemHigh))
        return sim_result(cudaErrorInvalidValue);
    pthread_mutex_lock(&sim_lock);
    graph_held_high = graph_held;
    pthread_mutex_unlock(&sim_lock);
    return cudaSuccess;
}

/* ---- host functions in streams ---- */

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    if (!fn)
        return sim_result(cudaErrorInvalidValue);
    if (!sim_stream_valid(stream))
        return sim_result(cudaErrorInvalidResourceHandle);
    SIM_CAPTURE_OP(stream, .kind = SIM_OP_HOST, .fn = fn, .user = userData);
    fn(userData);
    return cudaSuccess;
}

SIM_ALIAS(cudaGraphLaunch_ptsz, cudaGraphLaunch);
SIM_ALIAS(cudaGraphUpload_ptsz, cudaGraphUpload);
SIM_ALIAS(cudaGraphInstantiateWithParams_ptsz, cudaGraphInstantiateWithParams);
SIM_ALIAS(cudaLaunchHostFunc_ptsz, cudaLaunchHostFunc);

/* Is every node of `to` among `from` or their ancestors (sim_capture.c: have the streams that
 * joined a capture joined back)?  -1 when memory runs out. */
int sim_graph_reaches_locked(const struct sim_graph *g, struct sim_gnode *const *from, size_t nfrom,
                             struct sim_gnode *const *to, size_t nto)
{
    unsigned char *seen = calloc(g->n + 1, 1);
    struct sim_gnode **stack = malloc((g->n + 1) * sizeof *stack);
    int rc = -1;
    size_t top = 0;
    if (!seen || !stack)
        goto out;
    for (size_t i = 0; i < nfrom; i++)
        if (from[i]->graph == g && !seen[from[i]->index]) {
            seen[from[i]->index] = 1;
            stack[top++] = from[i];
        }
    while (top) {
        struct sim_gnode *d = stack[--top];
        for (size_t k = 0; k < d->ndeps; k++)
            if (!seen[d->deps[k]->index]) {
                seen[d->deps[k]->index] = 1;
                stack[top++] = d->deps[k];
            }
    }
    rc = 1;
    for (size_t i = 0; i < nto; i++)
        if (to[i]->graph != g || !seen[to[i]->index])
            rc = 0;
out:
    free(seen);
    free(stack);
    return rc;
}
