/*
 * pattern.c - --alloc pattern: the memory pattern of ONNX Runtime's execution frame, in process.
 * While the first run of a shape key allocates on the fly, the allocator records every request
 * and its lifetime in events (allocations and frees in call order, the order a trace's lifetimes
 * use); the run's pattern is then laid out by the planner library with the rules of `wstrace plan`
 * for a trace (blocks of max(requested, Level-2 declaration) bytes for workspace, aligned to 256)
 * and cached as the key's plan.  Nothing here touches the device.
 */
#include <stdlib.h>
#include <string.h>

#include "planner.h"
#include "wsk.h"

void wsk_pattern_begin(struct wsk_pattern_rec *r)
{
    r->n = 0;
    r->events = 0;
    r->decl_node[0] = '\0';
    memset(r->decl_set, 0, sizeof r->decl_set);
    r->out_of_memory = false;
}

void wsk_pattern_declared(struct wsk_pattern_rec *r, const char *node, uint32_t slot, uint64_t bytes)
{
    if (slot >= WSK_MAX_WS_SLOTS)
        return;
    if (strcmp(r->decl_node, node) != 0) {
        snprintf(r->decl_node, sizeof r->decl_node, "%s", node);
        memset(r->decl_set, 0, sizeof r->decl_set);
    }
    r->decl_bytes[slot] = r->decl_set[slot] && r->decl_bytes[slot] > bytes ? r->decl_bytes[slot] : bytes;
    r->decl_set[slot] = true;
}

/* A workspace block is as large as its kernel declared, so that a later run needing what was
 * declared rather than what this run used still fits; every block is aligned. */
static uint64_t block_bytes(const struct wsk_pattern_rec *r, const char *node, enum ws_class cls, uint32_t slot,
                            uint64_t bytes)
{
    uint64_t size = bytes;
    if (cls == WS_WORKSPACE && slot < WSK_MAX_WS_SLOTS && r->decl_set[slot] && strcmp(r->decl_node, node) == 0 &&
        r->decl_bytes[slot] > size)
        size = r->decl_bytes[slot];
    uint64_t rem = size % WSK_PATTERN_ALIGN;
    return rem && size <= UINT64_MAX - WSK_PATTERN_ALIGN ? size + (WSK_PATTERN_ALIGN - rem) : size;
}

int32_t wsk_pattern_alloc(struct wsk_pattern_rec *r, uint64_t ordinal, const char *node, enum ws_class cls,
                          uint32_t slot, uint64_t bytes)
{
    if (r->out_of_memory)
        return -1;
    if (r->n == r->cap) {
        uint32_t cap = r->cap ? 2 * r->cap : 256;
        struct wsk_pattern_event *grown = r->cap < INT32_MAX / 2 ? realloc(r->ev, cap * sizeof *grown) : NULL;
        if (!grown) {
            r->out_of_memory = true;
            return -1;
        }
        r->ev = grown;
        r->cap = cap;
    }
    struct wsk_pattern_event *e = &r->ev[r->n];
    *e = (struct wsk_pattern_event){.ordinal = ordinal,
                                    .cls = cls,
                                    .slot = slot,
                                    .bytes = bytes,
                                    .block = block_bytes(r, node, cls, slot, bytes),
                                    .start = r->events++,
                                    .end = -1};
    snprintf(e->node, sizeof e->node, "%s", node);
    return (int32_t)r->n++;
}

void wsk_pattern_free(struct wsk_pattern_rec *r, int32_t index)
{
    if (index >= 0 && (uint32_t)index < r->n)
        r->ev[index].end = r->events++;
    else
        r->events++; /* still an event of the run */
}

/* The planner's problem: the requests freed within the run (the others hold their memory past it
 * and are no part of a pattern). */
static uint32_t problem(const struct wsk_pattern_rec *r, struct ws_plan_buffer *b)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->n; i++)
        if (r->ev[i].end >= 0)
            b[n++] = (struct ws_plan_buffer){
                .id = i, .lower = r->ev[i].start, .upper = r->ev[i].end, .size = r->ev[i].block};
    return n;
}

static int add_plan(struct wsk_plans *plans, const struct wsk_pattern_rec *r, const struct ws_plan_buffer *b,
                    uint32_t n, const char *shape_key, uint64_t peak)
{
    struct wsk_plan *grown = realloc(plans->plans, (plans->n + 1) * sizeof *grown);
    if (!grown)
        return -1;
    plans->plans = grown;
    struct wsk_plan *p = &plans->plans[plans->n];
    *p = (struct wsk_plan){.peak = peak, .blocks = malloc(n * sizeof *p->blocks + 1), .nblocks = n};
    if (!p->blocks)
        return -1;
    snprintf(p->shape_key, sizeof p->shape_key, "%s", shape_key);
    for (uint32_t k = 0; k < n; k++) { /* in ordinal order, as the events were recorded */
        const struct wsk_pattern_event *e = &r->ev[b[k].id];
        p->blocks[k] = (struct wsk_plan_block){
            .ordinal = e->ordinal, .cls = e->cls, .slot = e->slot, .bytes = e->block, .offset = b[k].offset};
        snprintf(p->blocks[k].node, sizeof p->blocks[k].node, "%s", e->node);
    }
    plans->n++;
    return 0;
}

int wsk_pattern_build(struct wsk_pattern_rec *r, const char *shape_key, struct wsk_plans *plans,
                      struct wsk_pattern_result *out, struct wsk_error *err)
{
    struct ws_plan_options o = {.alignment = WSK_PATTERN_ALIGN, .work_limit = WSK_PATTERN_WORK, .seed = 1};
    struct ws_plan_result res;
    struct ws_plan_buffer *b = r->out_of_memory ? NULL : malloc(r->n * sizeof *b + 1);
    if (!b)
        return wsk_fail(err, WSK_EXIT_FAIL, "wsk: out of host memory");
    uint32_t n = problem(r, b);
    int rc = 0;
    if (ws_plan_solve(b, n, &o, &res) != 0 || !res.valid)
        rc = wsk_fail(err, WSK_EXIT_FAIL, "wsk: planning the pattern of %s failed: %s", shape_key, res.error);
    else if (add_plan(plans, r, b, n, shape_key, res.peak_bytes) != 0)
        rc = wsk_fail(err, WSK_EXIT_FAIL, "wsk: out of host memory");
    else
        *out = (struct wsk_pattern_result){n, res.peak_bytes, res.load_bound_bytes, res.optimal != 0};
    free(b);
    return rc;
}

void wsk_pattern_free_all(struct wsk_pattern_rec *r)
{
    free(r->ev);
    *r = (struct wsk_pattern_rec){0};
}
