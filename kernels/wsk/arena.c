/*
 * arena.c - the caching arena of --alloc arena: what a framework does without a plan.  Modelled
 * on ONNX Runtime's BFCArena with its defaults: requests rounded up to 256 bytes, best-fitting
 * free chunk, split only when the rest is worth it, free neighbours merged, regions grown by
 * "next power of two" and never returned while the arena lives.  It holds device memory that a
 * plan would not: rounding, unsplit rests and regions larger than what is live.
 *
 * Chunks are entries of one array linked by index to their neighbours in the region; a merged
 * chunk's entry goes on an unused list for the next split.  A workload has at most a few hundred
 * chunks, so searches are linear.
 *
 * Annotated (wsk_arena_annotate, wsk --nvtx-mem), the arena tells a tool what it does through
 * NVTX's memory extension, as a pooling allocator that annotates itself would: every region is
 * a sub-allocator heap, every chunk handed out a region of the size asked for (not the rounded
 * size: the tensor's own lifetime and bytes), unregistered when it comes back.  Without a tool
 * attached these calls do nothing.
 */
#include <nvtx3/nvToolsExtMem.h>
#include <stdlib.h>
#include <string.h>

#include "wsk.h"

/* ---- NVTX memory annotations ---------------------------------------------------------------- */

void wsk_arena_annotate(struct wsk_arena *ar, const char *domain) { ar->nvtx_domain = nvtxDomainCreateA(domain); }

static void *annotate_heap(const struct wsk_arena *ar, uintptr_t base, uint64_t bytes)
{
    if (!ar->nvtx_domain)
        return NULL;
    nvtxMemVirtualRangeDesc_t range = {.size = bytes, .ptr = (const void *)base};
    nvtxMemHeapDesc_t desc = {.extCompatID = NVTX_EXT_COMPATID_MEM,
                              .structSize = sizeof desc,
                              .usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR,
                              .type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS,
                              .typeSpecificDescSize = sizeof range,
                              .typeSpecificDesc = &range,
                              .messageType = NVTX_MESSAGE_TYPE_ASCII,
                              .message.ascii = "wsk arena region"};
    return nvtxMemHeapRegister(ar->nvtx_domain, &desc);
}

/* The heap of the region that holds addr (regions are few: a linear search). */
static void *heap_of(const struct wsk_arena *ar, uintptr_t addr)
{
    for (uint32_t r = 0; r < ar->nregions; r++)
        if (addr >= ar->regions[r].base && addr - ar->regions[r].base < ar->regions[r].bytes)
            return ar->regions[r].heap;
    return NULL;
}

static void annotate_chunk(const struct wsk_arena *ar, uintptr_t addr, uint64_t bytes)
{
    if (!ar->nvtx_domain)
        return;
    nvtxMemVirtualRangeDesc_t range = {.size = bytes, .ptr = (const void *)addr};
    nvtxMemRegionsRegisterBatch_t batch = {.extCompatID = NVTX_EXT_COMPATID_MEM,
                                           .structSize = sizeof batch,
                                           .regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS,
                                           .heap = heap_of(ar, addr),
                                           .regionCount = 1,
                                           .regionDescElementSize = sizeof range,
                                           .regionDescElements = &range};
    nvtxMemRegionsRegister(ar->nvtx_domain, &batch);
}

static void annotate_chunk_free(const struct wsk_arena *ar, uintptr_t addr)
{
    if (!ar->nvtx_domain)
        return;
    nvtxMemRegionRef_t ref = {.pointer = (const void *)addr};
    nvtxMemRegionsUnregisterBatch_t batch = {.extCompatID = NVTX_EXT_COMPATID_MEM,
                                             .structSize = sizeof batch,
                                             .refType = NVTX_MEM_REGION_REF_TYPE_POINTER,
                                             .refCount = 1,
                                             .refElementSize = sizeof ref,
                                             .refElements = &ref};
    nvtxMemRegionsUnregister(ar->nvtx_domain, &batch);
}

/* ---- chunks ------------------------------------------------------------------------------------ */

void wsk_arena_init(struct wsk_arena *ar, uint64_t initial_chunk, wsk_region_obtain_fn obtain, void *ctx)
{
    *ar = (struct wsk_arena){.initial_chunk = initial_chunk, .obtain = obtain, .ctx = ctx, .unused = -1};
}

/* A chunk entry (reused or new) with the given fields; -1 when host memory runs out. */
static int32_t new_chunk(struct wsk_arena *ar, uintptr_t addr, uint64_t size, int32_t prev, int32_t next)
{
    int32_t i = ar->unused;
    if (i >= 0) {
        ar->unused = ar->chunks[i].next;
    } else {
        if (ar->nchunks == ar->cap_chunks) {
            uint32_t cap = ar->cap_chunks ? 2 * ar->cap_chunks : 64;
            struct wsk_arena_chunk *grown = cap <= INT32_MAX ? realloc(ar->chunks, cap * sizeof *grown) : NULL;
            if (!grown)
                return -1;
            ar->chunks = grown;
            ar->cap_chunks = cap;
        }
        i = (int32_t)ar->nchunks++;
    }
    ar->chunks[i] = (struct wsk_arena_chunk){.addr = addr, .size = size, .prev = prev, .next = next, .valid = true};
    return i;
}

static void drop_chunk(struct wsk_arena *ar, int32_t i)
{
    ar->chunks[i] = (struct wsk_arena_chunk){.prev = -1, .next = ar->unused};
    ar->unused = i;
}

/* The smallest free chunk of at least rounded bytes, the lowest address among equals; -1: none. */
static int32_t best_fit(const struct wsk_arena *ar, uint64_t rounded)
{
    int32_t best = -1;
    for (uint32_t i = 0; i < ar->nchunks; i++) {
        const struct wsk_arena_chunk *c = &ar->chunks[i];
        if (!c->valid || c->in_use || c->size < rounded)
            continue;
        const struct wsk_arena_chunk *b = best >= 0 ? &ar->chunks[best] : NULL;
        if (!b || c->size < b->size || (c->size == b->size && c->addr < b->addr))
            best = (int32_t)i;
    }
    return best;
}

/* Next power of two: the first region is max(initial chunk, request), each later one
 * max(twice the previous region, request).  Returns the region's single free chunk. */
static int extend(struct wsk_arena *ar, uint64_t rounded, int32_t *chunk)
{
    uint64_t bytes = ar->initial_chunk;
    if (ar->nregions > 0) {
        uint64_t prev = ar->regions[ar->nregions - 1].bytes;
        if (prev > UINT64_MAX / 2)
            return WSK_ARENA_ETOOBIG;
        bytes = 2 * prev;
    }
    bytes = bytes > rounded ? bytes : rounded;
    if (bytes > UINT64_MAX - (WSK_ARENA_ALIGN - 1))
        return WSK_ARENA_ETOOBIG;
    /* An initial chunk that is not a multiple of 256 would misalign every later chunk. */
    bytes = (bytes + WSK_ARENA_ALIGN - 1) / WSK_ARENA_ALIGN * WSK_ARENA_ALIGN;
    if (ar->nregions == ar->cap_regions) {
        uint32_t cap = ar->cap_regions ? 2 * ar->cap_regions : 8;
        struct wsk_arena_region *grown = realloc(ar->regions, cap * sizeof *grown);
        if (!grown)
            return WSK_ARENA_ENOHOST;
        ar->regions = grown;
        ar->cap_regions = cap;
    }
    /* Reserve the chunk entry first: a region once obtained must not be lost. */
    int32_t c = new_chunk(ar, 0, bytes, -1, -1);
    if (c < 0)
        return WSK_ARENA_ENOHOST;
    void *base = NULL;
    int rc = ar->obtain(ar->ctx, bytes, &base);
    if (rc != 0) {
        drop_chunk(ar, c);
        return rc;
    }
    ar->chunks[c].addr = (uintptr_t)base;
    ar->regions[ar->nregions++] =
        (struct wsk_arena_region){(uintptr_t)base, bytes, annotate_heap(ar, (uintptr_t)base, bytes)};
    ar->stats.regions++;
    ar->stats.reserved_bytes += bytes;
    *chunk = c;
    return 0;
}

int wsk_arena_alloc(struct wsk_arena *ar, uint64_t bytes, void **out)
{
    *out = NULL;
    if (bytes > UINT64_MAX - (WSK_ARENA_ALIGN - 1))
        return WSK_ARENA_ETOOBIG;
    uint64_t rounded = (bytes + WSK_ARENA_ALIGN - 1) / WSK_ARENA_ALIGN * WSK_ARENA_ALIGN;
    int32_t i = best_fit(ar, rounded);
    if (i < 0) {
        int rc = extend(ar, rounded, &i);
        if (rc != 0)
            return rc;
    }
    /* Split only when the chunk is at least twice the request or the rest reaches BFC's
     * max dead bytes per chunk; otherwise the whole chunk is handed out. */
    uint64_t rest = ar->chunks[i].size - rounded;
    if (rest > 0 && (ar->chunks[i].size / 2 >= rounded || rest >= WSK_ARENA_MAX_DEAD_BYTES)) {
        int32_t r = new_chunk(ar, ar->chunks[i].addr + rounded, rest, i, ar->chunks[i].next);
        if (r < 0)
            return WSK_ARENA_ENOHOST;               /* nothing changed yet: the chunk stays free */
        struct wsk_arena_chunk *c = &ar->chunks[i]; /* new_chunk may have moved the array */
        if (c->next >= 0)
            ar->chunks[c->next].prev = r;
        c->next = r;
        c->size = rounded;
    }
    struct wsk_arena_chunk *c = &ar->chunks[i];
    c->in_use = true;
    ar->stats.in_use_bytes += c->size;
    if (ar->stats.in_use_bytes > ar->stats.peak_in_use_bytes)
        ar->stats.peak_in_use_bytes = ar->stats.in_use_bytes;
    *out = (void *)c->addr;
    annotate_chunk(ar, c->addr, bytes);
    return 0;
}

static int32_t find_in_use(const struct wsk_arena *ar, void *ptr)
{
    for (uint32_t i = 0; i < ar->nchunks; i++)
        if (ar->chunks[i].valid && ar->chunks[i].in_use && ar->chunks[i].addr == (uintptr_t)ptr)
            return (int32_t)i;
    return -1;
}

/* Folds chunk b into its lower neighbour a (both free). */
static void merge_into(struct wsk_arena *ar, int32_t a, int32_t b)
{
    ar->chunks[a].size += ar->chunks[b].size;
    ar->chunks[a].next = ar->chunks[b].next;
    if (ar->chunks[b].next >= 0)
        ar->chunks[ar->chunks[b].next].prev = a;
    drop_chunk(ar, b);
}

int wsk_arena_free(struct wsk_arena *ar, void *ptr)
{
    int32_t i = find_in_use(ar, ptr);
    if (i < 0)
        return -1;
    ar->chunks[i].in_use = false;
    ar->stats.in_use_bytes -= ar->chunks[i].size;
    annotate_chunk_free(ar, ar->chunks[i].addr);
    int32_t next = ar->chunks[i].next, prev = ar->chunks[i].prev;
    if (next >= 0 && !ar->chunks[next].in_use)
        merge_into(ar, i, next);
    if (prev >= 0 && !ar->chunks[prev].in_use)
        merge_into(ar, prev, i);
    return 0;
}

uint64_t wsk_arena_chunk_size(const struct wsk_arena *ar, void *ptr)
{
    int32_t i = find_in_use(ar, ptr);
    return i < 0 ? 0 : ar->chunks[i].size;
}

void wsk_arena_destroy(struct wsk_arena *ar, wsk_region_release_fn release, void *ctx)
{
    for (uint32_t r = 0; r < ar->nregions; r++) {
        if (ar->regions[r].heap) /* before the memory goes: its regions end with the heap */
            nvtxMemHeapUnregister(ar->nvtx_domain, ar->regions[r].heap);
        if (release)
            release(ctx, (void *)ar->regions[r].base, ar->regions[r].bytes);
    }
    free(ar->regions);
    free(ar->chunks);
    struct wsk_arena_stats stats = ar->stats;
    void *domain = ar->nvtx_domain;
    wsk_arena_init(ar, ar->initial_chunk, ar->obtain, ar->ctx);
    ar->stats = stats;
    ar->nvtx_domain = domain;
    ar->stats.in_use_bytes = 0;
}
