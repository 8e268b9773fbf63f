/*
 * alloc.c - the one place where wsk allocates device memory for activations and workspace.
 * Keeping it here is what lets a later mode hand out blocks of a static plan instead: the
 * allocation sequence (seq) is the same on every device and in every mode.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "wsk.h"

static const char *const class_names[] = {"activation", "workspace"};

/* The arena's regions: plain cudaMalloc/cudaFree, counted like every call that reaches the
 * runtime. */
static int arena_obtain(void *ctx, uint64_t bytes, void **base)
{
    struct ws_allocator *a = ctx;
    a->runtime_allocs++;
    return (int)cudaMalloc(base, bytes);
}

static void arena_release(void *ctx, void *base, uint64_t bytes)
{
    (void)ctx, (void)bytes;
    cudaFree(base);
}

void ws_init(struct ws_allocator *a, enum wsk_alloc_mode mode, uint64_t arena_initial_chunk, cudaStream_t stream,
             struct wsk_error *err)
{
    *a = (struct ws_allocator){.mode = mode, .stream = stream, .err = err};
    wsk_arena_init(&a->arena, arena_initial_chunk, arena_obtain, a);
}

void ws_run_begin(struct ws_allocator *a, const struct wsk_plan *plan)
{
    a->seq = 0;
    a->plan = plan;
}

static int remember(struct ws_allocator *a, void *ptr, uint64_t bytes, bool planned, int32_t event)
{
    if (a->nlive == a->cap) {
        uint32_t cap = a->cap ? 2 * a->cap : 64;
        struct ws_live *grown = realloc(a->live, cap * sizeof *grown);
        if (!grown)
            return -1;
        a->live = grown;
        a->cap = cap;
    }
    a->live[a->nlive++] = (struct ws_live){ptr, bytes, planned, event};
    return 0;
}

static cudaError_t device_free(struct ws_allocator *a, void *ptr)
{
    if (a->mode == WSK_ALLOC_ARENA) /* back to the arena; the region stays */
        return wsk_arena_free(&a->arena, ptr) == 0 ? cudaSuccess : cudaErrorInvalidValue;
    return a->mode == WSK_ALLOC_ASYNC ? cudaFreeAsync(ptr, a->stream) : cudaFree(ptr);
}

/* A cudaError_t, or WSK_ARENA_ENOHOST when the arena's bookkeeping ran out of host memory. */
static int device_alloc(struct ws_allocator *a, uint64_t bytes, void **out)
{
    if (a->mode == WSK_ALLOC_ARENA) {
        int rc = wsk_arena_alloc(&a->arena, bytes, out);
        /* 0, the status of the region's cudaMalloc, or a size no region could have */
        return rc == WSK_ARENA_ETOOBIG ? cudaErrorMemoryAllocation : rc;
    }
    a->runtime_allocs++;
    return a->mode == WSK_ALLOC_ASYNC ? cudaMallocAsync(out, bytes, a->stream) : cudaMalloc(out, bytes);
}

/* The block planned for this allocation, if it is the same allocation the plan was made from:
 * same ordinal, node, class (and slot for workspace), and no larger than the block. */
static const struct wsk_plan_block *planned_block(const struct ws_allocator *a, uint64_t seq, const char *node,
                                                  enum ws_class cls, uint32_t slot, uint64_t bytes)
{
    const struct wsk_plan_block *b = a->plan ? wsk_plan_block(a->plan, seq) : NULL;
    if (!b || b->cls != cls || (cls == WS_WORKSPACE && b->slot != slot) || bytes > b->bytes ||
        strcmp(b->node, node) != 0)
        return NULL;
    return b;
}

int ws_alloc(struct ws_allocator *a, const char *node, enum ws_class cls, uint32_t slot, uint64_t bytes, void **out)
{
    *out = NULL;
    if (bytes == 0) /* nothing to hold; never reaches the runtime, on any device */
        return 0;
    uint64_t seq = a->seq++; /* counts what a trace sees: allocations of at least one byte */
    if (a->plan) {
        const struct wsk_plan_block *b = planned_block(a, seq, node, cls, slot, bytes);
        if (b) {
            *out = (char *)a->plan->backing + b->offset;
            a->planned++;
            return remember(a, *out, bytes, true, -1) == 0 ? 0
                                                           : wsk_fail(a->err, WSK_EXIT_FAIL, "wsk: out of host memory");
        }
        a->fallbacks++; /* and allocate on the fly */
    }
    int rc = device_alloc(a, bytes, out);
    if (rc == WSK_ARENA_ENOHOST)
        return wsk_fail(a->err, WSK_EXIT_FAIL, "wsk: out of host memory");
    if (rc == cudaErrorMemoryAllocation)
        return wsk_fail(a->err, WSK_EXIT_FAIL,
                        "wsk: out of device memory in node %s (%s slot %" PRIu32 ", %" PRIu64 " bytes)", node,
                        class_names[cls], slot, bytes);
    if (rc != cudaSuccess)
        return wsk_fail(a->err, WSK_EXIT_FAIL, "wsk: allocation failed in node %s: %s", node,
                        cudaGetErrorString((cudaError_t)rc));
    /* --alloc pattern: the run that generates its key's pattern records the request. */
    int32_t event = a->rec ? wsk_pattern_alloc(a->rec, seq, node, cls, slot, bytes) : -1;
    if (remember(a, *out, bytes, false, event) != 0) {
        device_free(a, *out);
        *out = NULL;
        return wsk_fail(a->err, WSK_EXIT_FAIL, "wsk: out of host memory");
    }
    return 0;
}

void ws_declared(struct ws_allocator *a, const char *node, uint32_t slot, uint64_t bytes)
{
    if (a->rec)
        wsk_pattern_declared(a->rec, node, slot, bytes);
}

int ws_free(struct ws_allocator *a, void *ptr)
{
    if (!ptr)
        return 0;
    for (uint32_t i = 0; i < a->nlive; i++) {
        if (a->live[i].ptr != ptr)
            continue;
        bool planned = a->live[i].planned;
        if (a->rec)
            wsk_pattern_free(a->rec, a->live[i].event);
        a->live[i] = a->live[--a->nlive];
        cudaError_t rc = planned ? cudaSuccess : device_free(a, ptr);
        return rc == cudaSuccess ? 0 : wsk_fail(a->err, WSK_EXIT_FAIL, "wsk: free failed: %s", cudaGetErrorString(rc));
    }
    return wsk_fail(a->err, WSK_EXIT_FAIL, "wsk: internal error: freeing an unknown buffer");
}

void ws_release_all(struct ws_allocator *a)
{
    while (a->nlive) {
        struct ws_live *l = &a->live[--a->nlive];
        if (!l->planned)
            device_free(a, l->ptr);
    }
    if (a->mode == WSK_ALLOC_ASYNC)
        cudaStreamSynchronize(a->stream);
    /* Regions go back to the device only now, after the last run, as a caching arena's do. */
    wsk_arena_destroy(&a->arena, arena_release, a);
    free(a->live);
    a->live = NULL;
    a->cap = 0;
}

int ws_alloc_persistent(struct ws_allocator *a, const char *node, const char *what, uint64_t bytes, void **out)
{
    *out = NULL;
    cudaError_t rc = cudaMalloc(out, bytes ? bytes : 1);
    if (rc == cudaErrorMemoryAllocation)
        return wsk_fail(a->err, WSK_EXIT_FAIL,
                        "wsk: out of device memory in node %s (persistent %s, %" PRIu64 " bytes)", node, what, bytes);
    if (rc != cudaSuccess)
        return wsk_fail(a->err, WSK_EXIT_FAIL, "wsk: cudaMalloc for %s of %s failed: %s", what, node,
                        cudaGetErrorString(rc));
    return 0;
}
