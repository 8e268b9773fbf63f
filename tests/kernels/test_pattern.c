/* --alloc pattern's flow through wsk's allocator (kernels/wsk/alloc.c, pattern.c) on the simulated
 * device, without the graph: a recorded run becomes a plan whose blocks, offsets and peak are
 * derived by hand below; a run of the same requests is served from it; a request larger than its
 * block, of another node or class, or beyond the blocks falls back and is counted. */
#include <criterion/criterion.h>
#include <string.h>

#include "planner.h"
#include "wsk.h"

struct request {
    const char *node;
    enum ws_class cls;
    uint64_t bytes;
};

/*
 * One run, in call order (a = allocate, f = free; events numbered from 0):
 *   0 a embed out   1000 B  (activation)     -> block 1024
 *   1 a proj  out    300 B  (activation)     -> block  512
 *   2 a proj  ws     100 B, declared 4000 B  -> block 4096 (the declaration, aligned)
 *   3 f proj  ws
 *   4 f embed out
 *   5 a norm  out   2000 B  (activation)     -> block 2048
 *   6 f proj  out
 *   7 a head  out     64 B, never freed      -> no block
 *   8 f norm  out
 * Lifetimes: embed [0,4), proj out [1,6), proj ws [2,3), norm [5,8).  At event 2 the live blocks
 * are 1024 + 512 + 4096 = 5632 B, the most at any moment (at 5: 512 + 2048): the load bound.  The
 * blocks alive together take 5632 B in one layout (embed, proj out and proj ws stacked; norm over
 * the room the first two left), so the peak is 5632.
 */
static void record_run(struct ws_allocator *a, void **ptr)
{
    const struct request r[] = {{"embed", WS_ACTIVATION, 1000},
                                {"proj", WS_ACTIVATION, 300},
                                {"proj", WS_WORKSPACE, 100},
                                {"norm", WS_ACTIVATION, 2000},
                                {"head", WS_ACTIVATION, 64}};
    cr_assert_eq(ws_alloc(a, r[0].node, r[0].cls, 0, r[0].bytes, &ptr[0]), 0);
    cr_assert_eq(ws_alloc(a, r[1].node, r[1].cls, 0, r[1].bytes, &ptr[1]), 0);
    ws_declared(a, "proj", 0, 4000);
    cr_assert_eq(ws_alloc(a, r[2].node, r[2].cls, 0, r[2].bytes, &ptr[2]), 0);
    cr_assert_eq(ws_free(a, ptr[2]), 0);
    cr_assert_eq(ws_free(a, ptr[0]), 0);
    cr_assert_eq(ws_alloc(a, r[3].node, r[3].cls, 0, r[3].bytes, &ptr[3]), 0);
    cr_assert_eq(ws_free(a, ptr[1]), 0);
    cr_assert_eq(ws_alloc(a, r[4].node, r[4].cls, 0, r[4].bytes, &ptr[4]), 0);
    cr_assert_eq(ws_free(a, ptr[3]), 0);
}

struct session {
    struct ws_allocator a;
    struct wsk_error err;
    struct wsk_pattern_rec rec;
    struct wsk_plans plans;
};

static void generate(struct session *s)
{
    void *p[5];
    memset(s, 0, sizeof *s);
    ws_init(&s->a, WSK_ALLOC_PATTERN, WSK_ARENA_INITIAL_CHUNK, NULL, &s->err);
    ws_run_begin(&s->a, NULL);
    wsk_pattern_begin(&s->rec);
    s->a.rec = &s->rec;
    record_run(&s->a, p);
    s->a.rec = NULL;
    cr_assert_eq(ws_free(&s->a, p[4]), 0);
    struct wsk_pattern_result res;
    cr_assert_eq(wsk_pattern_build(&s->rec, "key", &s->plans, &res, &s->err), 0, "%s", s->err.msg);
    cr_expect_eq(res.blocks, 4, "the request never freed in the run has no block");
    cr_expect_eq(res.load_bound, 5632);
    cr_expect_eq(res.peak, 5632);
    cr_expect(res.optimal);
}

Test(pattern, a_recorded_run_becomes_a_plan)
{
    struct session s;
    generate(&s);
    cr_assert_eq(s.plans.n, 1);
    const struct wsk_plan *p = &s.plans.plans[0];
    cr_expect_str_eq(p->shape_key, "key");
    cr_expect_eq(p->peak, 5632);
    const uint64_t ordinals[] = {0, 1, 2, 3}, bytes[] = {1024, 512, 4096, 2048};
    struct ws_plan_buffer b[4];
    const int64_t lower[] = {0, 1, 2, 5}, upper[] = {4, 6, 3, 8};
    for (uint32_t k = 0; k < 4; k++) {
        cr_expect_eq(p->blocks[k].ordinal, ordinals[k]);
        cr_expect_eq(p->blocks[k].bytes, bytes[k], "block %u", k);
        cr_expect_eq(p->blocks[k].offset % 256, 0);
        b[k] = (struct ws_plan_buffer){
            .lower = lower[k], .upper = upper[k], .size = bytes[k], .offset = p->blocks[k].offset};
    }
    cr_expect_eq(p->blocks[2].cls, WS_WORKSPACE);
    cr_expect_str_eq(p->blocks[2].node, "proj");
    uint64_t peak;
    cr_expect_eq(ws_plan_validate(b, 4, 256, &peak), 1, "no two blocks alive together share an address");
    cr_expect_eq(peak, 5632);
    ws_release_all(&s.a);
    wsk_plans_free(&s.plans);
    wsk_pattern_free_all(&s.rec);
}

/* The same requests again take the plan's blocks (a request up to its block's size); the one never
 * freed had no block and falls back. */
Test(pattern, a_later_run_takes_the_blocks)
{
    struct session s;
    void *p[5];
    generate(&s);
    struct wsk_plan *plan = &s.plans.plans[0];
    char backing[5632 + 256];
    plan->backing = (void *)(((uintptr_t)backing + 255) & ~(uintptr_t)255);
    ws_run_begin(&s.a, plan);
    record_run(&s.a, p);
    cr_expect_eq(s.a.planned, 4);
    cr_expect_eq(s.a.fallbacks, 1);
    cr_expect_eq(p[2], (char *)plan->backing + plan->blocks[2].offset, "the workspace in its block");
    cr_assert_eq(ws_free(&s.a, p[4]), 0);
    ws_release_all(&s.a);
    wsk_plans_free(&s.plans);
    wsk_pattern_free_all(&s.rec);
}

/* Requests that do not match their block fall back, one count each: larger than the block, of
 * another node, of another class, and beyond the last block. */
Test(pattern, mismatches_fall_back)
{
    struct session s;
    void *p[5];
    generate(&s);
    struct wsk_plan *plan = &s.plans.plans[0];
    char backing[5632 + 256];
    plan->backing = (void *)(((uintptr_t)backing + 255) & ~(uintptr_t)255);
    ws_run_begin(&s.a, plan);
    cr_assert_eq(ws_alloc(&s.a, "embed", WS_ACTIVATION, 0, 1025, &p[0]), 0); /* block 0 is 1024 */
    cr_assert_eq(ws_alloc(&s.a, "other", WS_ACTIVATION, 0, 300, &p[1]), 0);  /* block 1 is proj's */
    cr_assert_eq(ws_alloc(&s.a, "proj", WS_ACTIVATION, 0, 100, &p[2]), 0);   /* block 2 is workspace */
    cr_assert_eq(ws_alloc(&s.a, "norm", WS_ACTIVATION, 0, 2048, &p[3]), 0);  /* fits block 3 exactly */
    cr_assert_eq(ws_alloc(&s.a, "head", WS_ACTIVATION, 0, 64, &p[4]), 0);    /* no block 4 */
    cr_expect_eq(s.a.fallbacks, 4);
    cr_expect_eq(s.a.planned, 1);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(ws_free(&s.a, p[i]), 0);
    ws_release_all(&s.a);
    wsk_plans_free(&s.plans);
    wsk_pattern_free_all(&s.rec);
}
