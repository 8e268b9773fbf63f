/* The planner core: hand-computed layouts, validation, errors, random problems against an
 * independent best-fit-decreasing reference, and a constructed instance with a known optimum. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"

#define B(i, l, u, s)                                                                                                  \
    {                                                                                                                  \
        .id = (i), .lower = (l), .upper = (u), .size = (s)                                                             \
    }

static struct ws_plan_result solve(struct ws_plan_buffer *b, size_t n, uint64_t align, double limit)
{
    struct ws_plan_options o = {align, limit, 1};
    struct ws_plan_result r;
    cr_assert_eq(ws_plan_solve(b, n, &o, &r), 0, "solve failed: %s", r.error);
    cr_assert(r.valid);
    return r;
}

Test(planner, chain_reaches_its_optimum)
{
    /* A, B, C, D live one after another with overlaps of two: the busiest moments hold 10 bytes,
     * and A and C (and B and D) can share addresses, so 10 is optimal. */
    struct ws_plan_buffer b[] = {B(0, 0, 2, 4), B(1, 1, 3, 6), B(2, 2, 4, 4), B(3, 3, 5, 6)};
    struct ws_plan_result r = solve(b, 4, 1, 0);
    cr_expect_eq(r.load_bound_bytes, 10);
    cr_expect_eq(r.peak_bytes, 10);
    cr_expect_eq(r.buffers, 4);
    cr_expect_str_neq(r.algorithm, "");
}

Test(planner, workspace_fits_in_the_gap_of_a_dead_activation)
{
    /* act0 dies at 2; the workspace (80 bytes at 3) reuses its 100 bytes next to act1. */
    struct ws_plan_buffer b[] = {B(0, 0, 2, 100), B(1, 0, 5, 50), B(2, 3, 4, 80)};
    struct ws_plan_result r = solve(b, 3, 1, 0);
    cr_expect_eq(r.load_bound_bytes, 150);
    cr_expect_eq(r.peak_bytes, 150);
    cr_expect(b[2].offset + 80 <= b[1].offset || b[2].offset >= b[1].offset + 50);
}

Test(planner, alignment_rounds_blocks_and_offsets)
{
    struct ws_plan_buffer b[] = {B(0, 0, 4, 10), B(1, 1, 3, 10), B(2, 2, 5, 1)};
    b[2].alignment = 512; /* its own alignment wins over the plan's */
    struct ws_plan_result r = solve(b, 3, 64, 0);
    cr_expect_eq(r.load_bound_bytes, 64 + 64 + 512);
    cr_expect_eq(b[0].offset % 64, 0);
    cr_expect_eq(b[1].offset % 64, 0);
    cr_expect_eq(b[2].offset % 512, 0);
    cr_expect_geq(r.peak_bytes, r.load_bound_bytes);
}

Test(planner, empty_problem)
{
    struct ws_plan_result r = solve(NULL, 0, 1, 0);
    cr_expect_eq(r.peak_bytes, 0);
    cr_expect_eq(r.load_bound_bytes, 0);
}

Test(planner, zero_sized_buffers_occupy_nothing)
{
    struct ws_plan_buffer b[] = {B(0, 0, 4, 0), B(1, 0, 4, 8)};
    struct ws_plan_result r = solve(b, 2, 1, 0);
    cr_expect_eq(r.peak_bytes, 8);
}

Test(planner, overflowing_sizes_are_an_error)
{
    struct ws_plan_buffer b[] = {B(0, 0, 2, UINT64_MAX / 2 + 1), B(1, 1, 3, UINT64_MAX / 2 + 1)};
    struct ws_plan_options o = {1, 0, 1};
    struct ws_plan_result r;
    cr_expect_eq(ws_plan_solve(b, 2, &o, &r), -1);
    cr_expect(strstr(r.error, "overflow") != NULL, "%s", r.error);
    struct ws_plan_buffer c[] = {B(0, 0, 2, UINT64_MAX - 3)};
    cr_expect_eq(ws_plan_solve(c, 1, &(struct ws_plan_options){256, 0, 1}, &r), -1, "rounding up overflows");
}

Test(planner, empty_lifetime_is_an_error)
{
    struct ws_plan_buffer b[] = {B(7, 3, 3, 1)};
    struct ws_plan_result r;
    cr_expect_eq(ws_plan_solve(b, 1, &(struct ws_plan_options){1, 0, 1}, &r), -1);
    cr_expect(strstr(r.error, "buffer 7") != NULL, "%s", r.error);
}

Test(planner, validate_rejects_overlaps_and_misalignment)
{
    struct ws_plan_buffer b[] = {B(0, 0, 4, 10), B(1, 3, 6, 10)};
    uint64_t peak = 0;
    b[1].offset = 10;
    cr_expect_eq(ws_plan_validate(b, 2, 1, &peak), 1);
    cr_expect_eq(peak, 20);
    b[1].offset = 9; /* overlaps at time 3 */
    cr_expect_eq(ws_plan_validate(b, 2, 1, &peak), 0);
    b[1].lower = 4; /* half-open: [0,4) and [4,6) never meet */
    cr_expect_eq(ws_plan_validate(b, 2, 1, &peak), 1);
    b[1].offset = 16;
    cr_expect_eq(ws_plan_validate(b, 2, 32, &peak), 0, "offset 16 is not 32-aligned");
    cr_expect_eq(ws_plan_load_bound(b, 2, 32), 32);
}

/* ---- an independent reference: best-fit by decreasing size, quadratic and plain ---------- */

struct ref_item {
    uint64_t size, len;
    int64_t lo;
    size_t idx;
};

static int cmp_ref(const void *x, const void *y)
{
    const struct ref_item *a = x, *b = y;
    if (a->size != b->size)
        return a->size > b->size ? -1 : 1;
    if (a->len != b->len)
        return a->len > b->len ? -1 : 1;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    return a->idx < b->idx ? -1 : 1;
}

static int cmp_u64x2(const void *x, const void *y)
{
    const uint64_t *a = x, *b = y;
    return a[0] < b[0] ? -1 : a[0] > b[0];
}

/* Sizes are pre-aligned (alignment 1). Places each buffer in the smallest gap that fits among
 * the placed buffers alive at the same time, else on top of them; returns the peak. */
static uint64_t reference_best_fit(const struct ws_plan_buffer *b, size_t n)
{
    struct ref_item *it = calloc(n, sizeof *it);
    uint64_t *off = calloc(n, sizeof *off), (*spans)[2] = calloc(n, sizeof *spans), peak = 0;
    char *placed = calloc(n, 1);
    for (size_t i = 0; i < n; i++)
        it[i] = (struct ref_item){b[i].size, (uint64_t)(b[i].upper - b[i].lower), b[i].lower, i};
    qsort(it, n, sizeof *it, cmp_ref);
    for (size_t k = 0; k < n; k++) {
        size_t i = it[k].idx, m = 0;
        for (size_t j = 0; j < n; j++)
            if (placed[j] && b[j].lower < b[i].upper && b[i].lower < b[j].upper && b[j].size)
                spans[m][0] = off[j], spans[m++][1] = off[j] + b[j].size;
        qsort(spans, m, sizeof *spans, cmp_u64x2);
        uint64_t cur = 0, best = UINT64_MAX, best_gap = UINT64_MAX;
        for (size_t s = 0; s < m; s++) {
            if (spans[s][0] > cur && spans[s][0] - cur >= b[i].size && spans[s][0] - cur < best_gap)
                best_gap = spans[s][0] - cur, best = cur;
            if (spans[s][1] > cur)
                cur = spans[s][1];
        }
        off[i] = best == UINT64_MAX ? cur : best;
        placed[i] = 1;
        if (off[i] + b[i].size > peak)
            peak = off[i] + b[i].size;
    }
    free(it);
    free(off);
    free(spans);
    free(placed);
    return peak;
}

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

Test(planner, random_problems_are_valid_and_no_worse_than_best_fit)
{
    for (uint64_t seed = 1; seed <= 40; seed++) {
        uint64_t s = seed;
        size_t n = 20 + lcg(&s) % 300;
        struct ws_plan_buffer *b = calloc(n, sizeof *b);
        for (size_t i = 0; i < n; i++) {
            int64_t lo = (int64_t)(lcg(&s) % 200);
            b[i] = (struct ws_plan_buffer){.id = i,
                                           .lower = lo,
                                           .upper = lo + 1 + (int64_t)(lcg(&s) % (seed % 3 ? 20 : 150)),
                                           .size = 1 + lcg(&s) % (seed % 2 ? 1000 : 17)};
        }
        uint64_t reference = reference_best_fit(b, n);
        struct ws_plan_result r = solve(b, n, 1, 0);
        uint64_t check;
        cr_expect_eq(ws_plan_validate(b, n, 1, &check), 1, "seed %llu", (unsigned long long)seed);
        cr_expect_eq(check, r.peak_bytes);
        cr_expect_eq(r.load_bound_bytes, ws_plan_load_bound(b, n, 1));
        cr_expect_geq(r.peak_bytes, r.load_bound_bytes, "seed %llu", (unsigned long long)seed);
        cr_expect_leq(r.peak_bytes, reference, "seed %llu: %llu > best fit %llu", (unsigned long long)seed,
                      (unsigned long long)r.peak_bytes, (unsigned long long)reference);
        free(b);
    }
}

Test(planner, larger_problems_use_both_structures_deterministically)
{
    /* Thousands of buffers: the portfolio runs on two threads, with the union tree on the dense
     * problem (long lifetimes) and the time classes on the sparse one. Two runs give the same
     * layout, no worse than best fit. */
    for (uint64_t seed = 1; seed <= 2; seed++) {
        uint64_t s = seed * 31;
        size_t n = 2500;
        struct ws_plan_buffer *b = calloc(n, sizeof *b), *c = calloc(n, sizeof *c);
        for (size_t i = 0; i < n; i++) {
            int64_t lo = (int64_t)(lcg(&s) % 2000);
            b[i] = (struct ws_plan_buffer){.id = i,
                                           .lower = lo,
                                           .upper = lo + 1 + (int64_t)(lcg(&s) % (seed == 1 ? 1000 : 12)),
                                           .size = 1 + lcg(&s) % 5000};
        }
        memcpy(c, b, n * sizeof *b);
        uint64_t reference = reference_best_fit(b, n);
        struct ws_plan_result r = solve(b, n, 1, 0), r2 = solve(c, n, 1, 0);
        cr_expect_eq(r.peak_bytes, r2.peak_bytes);
        for (size_t i = 0; i < n; i++)
            cr_expect_eq(b[i].offset, c[i].offset, "seed %llu buffer %zu", (unsigned long long)seed, i);
        cr_expect_leq(r.peak_bytes, reference, "seed %llu", (unsigned long long)seed);
        cr_expect_geq(r.peak_bytes, r.load_bound_bytes);
        free(b);
        free(c);
    }
}

Test(planner, search_never_makes_the_plan_worse)
{
    for (uint64_t seed = 1; seed <= 5; seed++) {
        uint64_t s = seed * 977;
        size_t n = 200;
        struct ws_plan_buffer *b = calloc(n, sizeof *b);
        for (size_t i = 0; i < n; i++) {
            int64_t lo = (int64_t)(lcg(&s) % 100);
            b[i] = (struct ws_plan_buffer){
                .id = i, .lower = lo, .upper = lo + 1 + (int64_t)(lcg(&s) % 30), .size = 1 + lcg(&s) % 5000};
        }
        struct ws_plan_result plain = solve(b, n, 1, 0), searched = solve(b, n, 1, 0.2);
        cr_expect_leq(searched.peak_bytes, plain.peak_bytes, "seed %llu", (unsigned long long)seed);
        cr_expect_geq(searched.peak_bytes, searched.load_bound_bytes);
        free(b);
    }
}

/* Cut a HEIGHT x WIDTH rectangle (addresses x time) into pieces by guillotine cuts: every moment
 * is covered by pieces summing to HEIGHT, so the load bound is HEIGHT and the cut itself is a
 * layout of exactly that peak. */
static size_t cut_rectangle_w(struct ws_plan_buffer *b, size_t n, uint64_t height, int64_t width, uint64_t seed)
{
    int64_t(*r)[4] = calloc(n, sizeof *r); /* t0, t1, a0, a1 */
    size_t count = 1;
    uint64_t s = seed;
    r[0][0] = 0, r[0][1] = width, r[0][2] = 0, r[0][3] = (int64_t)height;
    for (int tries = 0; count < n && tries < 10000; tries++) {
        size_t x = lcg(&s) % count;
        int axis = (int)(lcg(&s) % 2) * 2; /* 0: time, 2: address */
        int64_t len = r[x][axis + 1] - r[x][axis];
        if (len < 2)
            continue;
        int64_t cut = r[x][axis] + 1 + (int64_t)(lcg(&s) % (uint64_t)(len - 1));
        memcpy(r[count], r[x], sizeof r[x]);
        r[x][axis + 1] = r[count][axis] = cut;
        count++;
    }
    for (size_t i = 0; i < count; i++)
        b[i] =
            (struct ws_plan_buffer){.id = i, .lower = r[i][0], .upper = r[i][1], .size = (uint64_t)(r[i][3] - r[i][2])};
    free(r);
    return count;
}

static size_t cut_rectangle(struct ws_plan_buffer *b, size_t n, uint64_t height, uint64_t seed)
{
    return cut_rectangle_w(b, n, height, 100, seed);
}

Test(planner, exact_search_reaches_the_load_bound_of_300_pieces)
{
    /* 300 pieces of a 2^20 x 1000 rectangle: the heuristics stay above the load bound, the
     * skyline search finds the cut (well within the limit on this seed). */
    struct ws_plan_buffer *b = calloc(300, sizeof *b);
    size_t n = cut_rectangle_w(b, 300, 1u << 20, 1000, 10);
    cr_assert_eq(n, 300);
    struct ws_plan_result plain = solve(b, n, 1, 0);
    cr_expect_gt(plain.peak_bytes, plain.load_bound_bytes, "the heuristics alone reach it: a weaker test");
    struct ws_plan_result r = solve(b, n, 1, 30);
    cr_expect_eq(r.load_bound_bytes, 1u << 20);
    cr_expect_eq(r.peak_bytes, r.load_bound_bytes, "peak %llu (%s)", (unsigned long long)r.peak_bytes, r.algorithm);
    cr_expect_str_eq(r.algorithm, "exact-skyline");
    free(b);
}

Test(planner, search_is_never_worse_than_the_heuristics)
{
    /* Cut rectangles (where the exact search runs, and often stops at its time limit) and
     * random problems with slack (where it does not): the searched plan is never worse. */
    for (uint64_t seed = 1; seed <= 6; seed++) {
        struct ws_plan_buffer *b = calloc(400, sizeof *b);
        size_t n = cut_rectangle_w(b, 400, 1u << 20, 1000, seed);
        struct ws_plan_result plain = solve(b, n, 1, 0), searched = solve(b, n, 1, 0.2);
        cr_expect_leq(searched.peak_bytes, plain.peak_bytes, "cut seed %llu", (unsigned long long)seed);
        uint64_t s = seed * 977;
        n = 50 + lcg(&s) % 350;
        for (size_t i = 0; i < n; i++) {
            int64_t lo = (int64_t)(lcg(&s) % 300);
            b[i] = (struct ws_plan_buffer){
                .id = i, .lower = lo, .upper = lo + 1 + (int64_t)(lcg(&s) % 40), .size = 1 + lcg(&s) % 5000};
        }
        plain = solve(b, n, 1, 0);
        searched = solve(b, n, 1, 0.2);
        cr_expect_leq(searched.peak_bytes, plain.peak_bytes, "random seed %llu", (unsigned long long)seed);
        cr_expect_geq(searched.peak_bytes, searched.load_bound_bytes);
        free(b);
    }
}

Test(planner, search_reaches_the_load_bound_of_a_cut_rectangle)
{
    struct ws_plan_buffer b[24];
    size_t n = cut_rectangle(b, 24, 1000, 3);
    cr_assert_eq(n, 24);
    struct ws_plan_result r = solve(b, n, 1, 20);
    cr_expect_eq(r.load_bound_bytes, 1000);
    cr_expect_eq(r.peak_bytes, 1000, "peak %llu", (unsigned long long)r.peak_bytes);
}

Test(planner, start_order_decoders_reach_the_load_bound_of_cut_rectangles)
{
    /* Pieces of a cut rectangle taken by increasing start fit back together where the
     * size-based orders do not (these three instances reach the load bound only that way). */
    static const uint64_t seeds[] = {2, 5, 12};
    for (size_t k = 0; k < sizeof seeds / sizeof seeds[0]; k++) {
        struct ws_plan_buffer b[60];
        size_t n = cut_rectangle(b, 60, 1000, seeds[k]);
        struct ws_plan_result r = solve(b, n, 1, 0);
        cr_expect_eq(r.peak_bytes, 1000, "seed %llu: peak %llu (%s)", (unsigned long long)seeds[k],
                     (unsigned long long)r.peak_bytes, r.algorithm);
        cr_expect(strstr(r.algorithm, "by-start") != NULL, "seed %llu: %s", (unsigned long long)seeds[k], r.algorithm);
    }
}

Test(planner, dense_mixed_lifetimes_match_the_reference_structure)
{
    /* Twelve buffers a step, mostly short-lived with a long tail: dense enough for the block tree,
     * with buffers inside one block, across block boundaries and over many blocks (the queries
     * that read the tree's node lists). Valid, deterministic, no worse than best fit. */
    uint64_t s = 4242;
    size_t n = 6000;
    struct ws_plan_buffer *b = calloc(n, sizeof *b), *c = calloc(n, sizeof *c);
    for (size_t i = 0; i < n; i++) {
        int64_t lo = (int64_t)(i / 12);
        uint64_t p = lcg(&s) % 100, len = p < 85 ? 1 + lcg(&s) % 8 : p < 98 ? 1 + lcg(&s) % 100 : 1 + lcg(&s) % 3000;
        b[i] = (struct ws_plan_buffer){
            .id = i, .lower = lo, .upper = lo + (int64_t)len, .size = (1 + lcg(&s) % 64) << (lcg(&s) % 8)};
    }
    memcpy(c, b, n * sizeof *b);
    uint64_t reference = reference_best_fit(b, n);
    struct ws_plan_result r = solve(b, n, 1, 0), r2 = solve(c, n, 1, 0);
    uint64_t check;
    cr_expect_eq(ws_plan_validate(b, n, 1, &check), 1);
    cr_expect_eq(check, r.peak_bytes);
    cr_expect_eq(r.peak_bytes, r2.peak_bytes);
    cr_expect_eq(memcmp(b, c, n * sizeof *b), 0, "two runs differ");
    cr_expect_leq(r.peak_bytes, reference, "%llu > best fit %llu", (unsigned long long)r.peak_bytes,
                  (unsigned long long)reference);
    cr_expect_geq(r.peak_bytes, r.load_bound_bytes);
    free(b);
    free(c);
}
