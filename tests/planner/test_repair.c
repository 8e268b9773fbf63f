/* The repairs (analyzer/planner/repair.c) on constructed layouts whose optimum is known by
 * construction: a band of the layout must be freed whole for the peak to drop. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define B(i, l, u, s)                                                                                                  \
    {                                                                                                                  \
        .id = (i), .lower = (l), .upper = (u), .size = (s)                                                             \
    }

/*
 * Two stacks side by side in time, each of `h` buffers of 10 bytes alive over its whole span:
 * stacked without holes they reach 10 h, the load bound. The layout given leaves a hole of 5
 * bytes under the bottom buffer of the first stack, so that stack reaches 10 h + 5. The buffer
 * at the top cannot drop into the hole alone (the hole is under the others): only a repair that
 * frees the buffers standing on the hole as well reaches 10 h.
 */
Test(repair, a_band_standing_on_a_hole_is_freed_and_closes_it)
{
    enum { H = 6, N = 2 * H };
    struct ws_plan_buffer b[N];
    uint32_t map[N];
    for (size_t i = 0; i < N; i++) {
        b[i] = (struct ws_plan_buffer)B(i, i < H ? 0 : 10, i < H ? 10 : 20, 10);
        map[i] = (uint32_t)i;
    }
    struct planner p;
    char err[128];
    cr_assert_eq(planner_init(&p, b, map, N, 1, err), 0, "%s", err);
    p.lb = load_bound_of(p.lo, p.hi, p.sz, N);
    cr_assert_eq(p.lb, 10 * H);
    uint64_t off[N];
    for (size_t i = 0; i < N; i++)
        off[i] = i < H ? 5 + 10 * i : 10 * (i - H);
    struct best_plan best = {off, 10 * H + 5, "constructed"};
    struct budget bud = {0, 100000, 1, 0};
    int improved = 0;
    cr_assert_eq(repair_search(&p, &best, p.lb, 1, &bud, &improved), 0);
    cr_expect(improved);
    cr_expect_eq(best.peak, 10 * H, "peak %llu", (unsigned long long)best.peak);
    /* The layout is valid and its peak is what the repair says. */
    uint64_t peak = 0;
    for (size_t i = 0; i < N; i++) {
        b[i].offset = best.off[i];
        peak = best.off[i] + 10 > peak ? best.off[i] + 10 : peak;
    }
    uint64_t vpeak = 0;
    cr_expect_eq(ws_plan_validate(b, N, 1, &vpeak), 1);
    cr_expect_eq(vpeak, peak);
    cr_expect_eq(peak, best.peak);
    planner_free(&p);
}
