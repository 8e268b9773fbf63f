/*
 * The planner's validation and load bound against the independent, brute-force ones of
 * tests/planner/ref_check.c (pairwise, quadratic, written from docs/planner.md): random layouts,
 * valid and not (offsets drawn at random, so blocks overlap from below, from above, inside and
 * around each other), with their own and default alignments, empty lifetimes and zero sizes; and
 * dense layouts with more blocks alive at once than the validator's sorted sweep takes (its
 * segment-tree path), with one block moved onto a neighbour above or below it.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"
#include "ref_check.h"

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* 1 when ref_check accepts the layout (and *peak its peak), else 0. */
static int reference_valid(const struct ws_plan_buffer *b, size_t n, uint64_t dflt, uint64_t *peak)
{
    struct ref_buffer *x = calloc(n + 1, sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = (struct ref_buffer){b[i].lower, b[i].upper, b[i].size, b[i].alignment, b[i].offset};
    char why[128];
    int ok = ref_check(x, n, dflt, peak, why, sizeof why);
    free(x);
    return ok;
}

static uint64_t reference_lb(const struct ws_plan_buffer *b, size_t n, uint64_t dflt)
{
    struct ref_buffer *x = calloc(n + 1, sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = (struct ref_buffer){b[i].lower, b[i].upper, b[i].size, b[i].alignment, b[i].offset};
    uint64_t lb = ref_load_bound(x, n, dflt);
    free(x);
    return lb;
}

Test(ref_plan, random_layouts_are_judged_as_the_reference_judges_them)
{
    int valid = 0, invalid = 0;
    for (uint64_t seed = 1; seed <= 3000; seed++) {
        uint64_t s = seed;
        size_t n = 2 + lcg(&s) % 9;
        uint64_t dflt = (uint64_t[]){1, 1, 4, 16}[lcg(&s) % 4];
        struct ws_plan_buffer b[12];
        for (size_t i = 0; i < n; i++) {
            int64_t lo = (int64_t)(lcg(&s) % 12);
            uint64_t al = lcg(&s) % 4 == 0 ? (uint64_t[]){1, 2, 8, 32}[lcg(&s) % 4] : 0;
            uint64_t a = al ? al : dflt;
            b[i] = (struct ws_plan_buffer){.id = i,
                                           .lower = lo,
                                           .upper = lo + (int64_t)(lcg(&s) % 6), /* sometimes empty */
                                           .size = lcg(&s) % 7 == 0 ? 0 : 1 + lcg(&s) % 40,
                                           .alignment = al,
                                           .offset = a * (lcg(&s) % (64 / a + 2))};
        }
        uint64_t want_peak = 0, got_peak = 0;
        int want = reference_valid(b, n, dflt, &want_peak);
        int got = ws_plan_validate(b, n, dflt, &got_peak);
        cr_assert_eq(got, want, "seed %llu: ws_plan_validate says %d, the reference %d", (unsigned long long)seed, got,
                     want);
        if (want)
            cr_assert_eq(got_peak, want_peak, "seed %llu: peak", (unsigned long long)seed);
        cr_assert_eq(ws_plan_load_bound(b, n, dflt), reference_lb(b, n, dflt), "seed %llu: load bound",
                     (unsigned long long)seed);
        valid += want;
        invalid += !want;
    }
    cr_expect_gt(valid, 300, "%d valid layouts", valid);
    cr_expect_gt(invalid, 300, "%d invalid layouts", invalid);
}

/*
 * 5000 blocks of 8 bytes alive together, stacked 8 bytes apart (valid); then one block moved by
 * 4 bytes up (it overlaps the block above it) or down (the block below), or onto the block that
 * starts 8 bytes higher, each checked by the reference.
 */
Test(ref_plan, dense_layouts_with_one_overlap_above_or_below)
{
    size_t n = 5000;
    struct ws_plan_buffer *b = calloc(n, sizeof *b);
    for (size_t i = 0; i < n; i++)
        b[i] = (struct ws_plan_buffer){.id = i, .lower = (int64_t)(i % 5), .upper = 50, .size = 8, .offset = 8 * i};
    uint64_t peak = 0, ref_peak = 0;
    cr_assert_eq(ws_plan_validate(b, n, 1, &peak), 1);
    cr_assert_eq(reference_valid(b, n, 1, &ref_peak), 1);
    cr_expect_eq(peak, ref_peak);
    static const int64_t moves[] = {4, -4, 8, -8, 1, -1};
    uint64_t s = 77;
    for (size_t k = 0; k < sizeof moves / sizeof moves[0]; k++) {
        size_t i = 1 + lcg(&s) % (n - 2);
        b[i].offset = (uint64_t)((int64_t)b[i].offset + moves[k]);
        int want = reference_valid(b, n, 1, &ref_peak);
        cr_expect_eq(want, 0, "the reference finds the overlap of block %zu moved by %lld", i, (long long)moves[k]);
        cr_expect_eq(ws_plan_validate(b, n, 1, &peak), want, "block %zu moved by %lld", i, (long long)moves[k]);
        b[i].offset = 8 * i;
    }
    /* The block at the top moved below the one at the bottom's end: no overlap (a new top). */
    b[n - 1].offset = 8 * n;
    cr_expect_eq(ws_plan_validate(b, n, 1, &peak), 1);
    cr_expect_eq(peak, 8 * n + 8);
    free(b);
}

/* Layouts the planner makes are valid by the reference, with the reference's peak, and never below
 * the reference's load bound. */
Test(ref_plan, plans_are_valid_by_the_reference)
{
    for (uint64_t seed = 1; seed <= 30; seed++) {
        uint64_t s = seed * 101;
        size_t n = 20 + lcg(&s) % 200;
        struct ws_plan_buffer *b = calloc(n, sizeof *b);
        for (size_t i = 0; i < n; i++) {
            int64_t lo = (int64_t)(lcg(&s) % 100);
            b[i] = (struct ws_plan_buffer){.id = i,
                                           .lower = lo,
                                           .upper = lo + (int64_t)(lcg(&s) % 25),
                                           .size = lcg(&s) % 9 == 0 ? 0 : 1 + lcg(&s) % 3000,
                                           .alignment = lcg(&s) % 5 == 0 ? 512 : 0};
        }
        struct ws_plan_options o = {.alignment = 256, .work_limit = seed % 2 ? 5000 : 0, .seed = 1};
        struct ws_plan_result r;
        cr_assert_eq(ws_plan_solve(b, n, &o, &r), 0, "%s", r.error);
        uint64_t peak = 0;
        cr_expect(reference_valid(b, n, 256, &peak), "seed %llu: the planner's layout overlaps",
                  (unsigned long long)seed);
        cr_expect_eq(r.peak_bytes, peak, "seed %llu", (unsigned long long)seed);
        cr_expect_eq(r.load_bound_bytes, reference_lb(b, n, 256), "seed %llu", (unsigned long long)seed);
        cr_expect_geq(r.peak_bytes, r.load_bound_bytes);
        free(b);
    }
}
