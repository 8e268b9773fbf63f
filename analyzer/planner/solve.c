/*
 * ws_plan_solve: the greedy portfolio, then within the budget the capacity search (the decision
 * search probes the best lower bound, then halves the gap to the best layout) and the
 * neighbourhood search. The best layout is kept until a better one is found, so every call
 * returns a valid layout whatever the budget.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define DECISION_NAME "decision-search"

/* From this many buffers on (up to LARGE_PROBLEM: above it there are no windows), the windows
 * come before any capacity search and take most of a time limit: there the decision search's
 * first probes over the whole problem cost a tenth of a second and rarely settle it, while the
 * windows solve the busiest sections (somas_bert_nezha). */
#define WINDOWS_FIRST 4096
/* There, with a time limit, the decoders after the first two only start within this share of it
 * (on a loaded machine the portfolio alone may take half a second on 12,000 buffers). */
#define PORTFOLIO_SHARE 0.1

/* Up to this many buffers, problems whose temporal components are flat get the strips. */
#define STRIPS_MAX 100000
#define STRIPS_SHARE 0.4

/* From this many buffers on, a time limit starts with the sweep's layout (greedy.c). */
#define SWEEP_PROBLEM 20000

static uint64_t peak_of(const struct planner *p, const uint64_t *off)
{
    uint64_t peak = 0;
    for (size_t i = 0; i < p->n; i++)
        if (off[i] + p->sz[i] > peak)
            peak = off[i] + p->sz[i];
    return peak;
}

static void accept_layout(const struct planner *p, const uint64_t *off, struct best_plan *best)
{
    uint64_t peak = peak_of(p, off);
    if (peak < best->peak) {
        memcpy(best->off, off, p->n * sizeof *off);
        best->peak = peak;
        best->name = DECISION_NAME;
    }
}

/*
 * Restarts with growing node limits: each round probes the lower bound with every configuration
 * of the decision search, then searches down from the best layout (each probe with every
 * configuration until one settles it); INFEASIBLE raises the lower bound, FOUND lowers the best
 * peak, ABORTED (node limit reached) counts as "not at this limit". Then the limit doubles.
 * Failed states are shared by all rounds.
 */
static int capacity_search(struct planner *p, struct best_plan *best, uint64_t *lower, uint64_t seed,
                           struct budget *bud)
{
    struct decider *d = NULL;
    uint64_t *off = malloc(p->n * sizeof *off + 1);
    int rc = 0;
    /* The search only improves a valid layout: when its memory runs out it stops, and the best
     * layout so far stands. */
    if (!off || decider_new(&d, p, seed))
        goto out;
    unsigned nconfig = decider_configs();
    uint64_t limit = 2 * (uint64_t)p->n + 256;
    for (unsigned round = 0; *lower < best->peak && !budget_spent(bud); round++, limit *= 2) {
        int settled = 0;
        for (unsigned k = 0; k < nconfig && !settled && !budget_spent(bud); k++) {
            enum decision r = decide(d, *lower, k, limit, bud, off);
            if (r == DECISION_ERROR)
                goto out;
            if (r == DECISION_FOUND)
                accept_layout(p, off, best);
            if (r == DECISION_INFEASIBLE)
                (*lower)++;
            settled = r != DECISION_ABORTED;
        }
        if (settled) {
            limit /= 2; /* progress at this limit: try it again */
            continue;
        }
        /* Then down from the best layout: each probe an eighth of the gap below it, tried with
         * every configuration (from the round's own) until one settles it: FOUND lowers the
         * best peak, INFEASIBLE raises the lower bound. On hard problems a probe that one
         * configuration's dive misses another's often finds (planner_gen hard 500: 14.2 % above
         * the load bound after 300,000 steps with the round's configuration alone, 13.0 % with
         * all). A probe aborted by all is retried closer to the best layout, and one right below
         * it ends the round: the limit must grow. */
        uint64_t share = 8;
        for (uint64_t a = *lower + 1, b = best->peak - 1; a <= b && b != UINT64_MAX && !budget_spent(bud);) {
            uint64_t c = b - (b - a) / share;
            enum decision r = DECISION_ABORTED;
            for (unsigned k = 0; k < nconfig && r == DECISION_ABORTED && !budget_spent(bud); k++)
                r = decide(d, c, (round + k) % nconfig, limit, bud, off);
            if (r == DECISION_ERROR)
                goto out;
            if (r == DECISION_FOUND) {
                accept_layout(p, off, best);
                b = best->peak - 1;
            } else if (r == DECISION_INFEASIBLE) {
                *lower = c + 1;
                a = c + 1;
            } else if (c < b && share < ((uint64_t)1 << 40)) {
                share *= 4;
            } else {
                break;
            }
        }
    }
out:
    decider_free(d);
    free(off);
    return rc;
}

/* The part `frac` of the budget (time and work) from its start, with `used` steps already spent. */
static struct budget share(const struct ws_plan_options *o, double t0, double frac, uint64_t used)
{
    uint64_t limit = (uint64_t)((double)o->work_limit * frac);
    return (struct budget){used, limit > used ? limit : used, o->work_limit > 0,
                           o->time_limit_s > 0 ? t0 + o->time_limit_s * frac : 0};
}

/* The portfolio, then within the budget the capacity search (up to 70 % of it) and the
 * neighbourhood search (the rest). */
static int plan_all(struct planner *p, const struct ws_plan_options *o, double t0, struct best_plan *best,
                    uint64_t *lower, uint64_t *work, char *algorithm, size_t alen)
{
    uint32_t *order = malloc(p->n * sizeof *order + 1);
    uint64_t *breadth = malloc(p->n * sizeof *breadth + 1);
    uint64_t rng = o->seed ^ 0x2545f4914f6cdd1dull;
    int searching = o->time_limit_s > 0 || o->work_limit > 0, rc = -1;
    /* The breadth orders are used by the portfolio up to LARGE_PROBLEM buffers, and by the
     * search, computed for it only when it runs (large problems often spend the time limit on the
     * portfolio). */
    int need_breadth = p->n <= LARGE_PROBLEM;
    /* The time limit covers the whole call: the decoders beyond the first two and the searches
     * only run while it lasts. */
    double deadline = o->time_limit_s > 0 ? t0 + o->time_limit_s : 0;
    /* With a time limit, large problems first get the sweep's layout (fast: first fit by start),
     * so that the decoders may give up at the limit and the call still returns a layout in time. */
    int swept = 0, windows_first = p->n >= WINDOWS_FIRST && p->n <= LARGE_PROBLEM;
    if (deadline > 0 && p->n >= SWEEP_PROBLEM) {
        int r = sweep_decode(p, best);
        if (r < 0)
            goto out;
        swept = r == 0;
    }
    if (!order || !breadth || (need_breadth && breadth_of(p, breadth)) ||
        run_portfolio(p, breadth, windows_first && deadline > 0 ? t0 + o->time_limit_s * PORTFOLIO_SHARE : deadline,
                      deadline, swept, best))
        goto out;
    if (deadline > 0 && now_s() >= deadline)
        searching = 0;
    if (!need_breadth && searching && best->peak > *lower && breadth_of(p, breadth))
        goto out;
    if (p->n <= LARGE_PROBLEM && best->peak > p->lb && (searching || !deadline) && canonical_decode(p, breadth, best))
        goto out;
    /* The budget in shares of the steps: a first capacity search up to 2 % (the decision search
     * alone often proves the lower bound quickly; not from WINDOWS_FIRST buffers on), the windows
     * up to 45 %, the capacity search again up to 50 %, the repairs up to 80 %, the neighbourhood
     * search the rest. In time the first two stages get shares of what the decoders left (on a
     * loaded machine they may take most of it; from WINDOWS_FIRST buffers on the windows end at
     * 85 % of the limit), the others end at fixed shares of the limit. */
    int repaired = 0, windowed = 0;
    if (searching && best->peak > *lower && p->n <= STRIPS_MAX && (!o->work_limit || *work < o->work_limit)) {
        struct budget bud = share(o, t0, STRIPS_SHARE, *work);
        int stripped = 0;
        if (strips_solve(p, best, *lower, o->seed, &bud, &stripped))
            goto out;
        *work = bud.used;
    }
    if (searching && best->peak > *lower && !windows_first) {
        struct budget bud = share(o, t0, 0.02, 0);
        if (bud.deadline > 0)
            bud.deadline = now_s() + (t0 + o->time_limit_s - now_s()) * 0.15;
        if (capacity_search(p, best, lower, o->seed, &bud))
            goto out;
        *work = bud.used;
    }
    if (searching && best->peak > *lower && p->n <= LARGE_PROBLEM && (!o->work_limit || *work < o->work_limit)) {
        struct budget bud = share(o, t0, 0.45, *work);
        if (bud.deadline > 0)
            bud.deadline = windows_first ? t0 + o->time_limit_s * 0.85 : (now_s() + t0 + o->time_limit_s) / 2;
        if (window_search(p, best, *lower, o->seed, &bud, &windowed))
            goto out;
        *work = bud.used;
    }
    if (searching && best->peak > *lower && (!o->work_limit || *work < o->work_limit)) {
        struct budget bud = share(o, t0, 0.50, *work);
        if (capacity_search(p, best, lower, o->seed + 1, &bud))
            goto out;
        *work = bud.used;
    }
    if (searching && best->peak > *lower && (!o->work_limit || *work < o->work_limit)) {
        struct budget bud = share(o, t0, 0.80, *work);
        if (repair_search(p, best, *lower, o->seed, &bud, &repaired))
            goto out;
        *work = bud.used;
    }
    int neighbourhood = 0; /* the neighbourhood search improved the layout */
    if (searching && best->peak > *lower && (!o->work_limit || *work < o->work_limit)) {
        double end = o->time_limit_s > 0 ? t0 + o->time_limit_s : 0;
        double half = end > 0 ? (now_s() + end) / 2 : 0;
        uint64_t before = best->peak;
        struct budget first = {*work, *work + (o->work_limit - *work) / 2, o->work_limit > 0, half};
        if (perturbed_orders(p, breadth, order, best, &rng, &first, half))
            goto out;
        struct budget rest = {first.used, o->work_limit, o->work_limit > 0, end};
        int improved = 0;
        memcpy(p->off, best->off, p->n * sizeof *best->off);
        if (best->peak > *lower && search_improve(p, rng, &rest, end, &improved))
            goto out;
        if (improved) {
            memcpy(best->off, p->off, p->n * sizeof *best->off);
            best->peak = peak_of(p, best->off);
        }
        *work = rest.used;
        neighbourhood = best->peak < before;
    }
    snprintf(algorithm, alen, "%s%s%s", best->name, repaired ? "+repair" : "", neighbourhood ? "+search" : "");
    rc = 0;
out:
    free(order);
    free(breadth);
    return rc;
}

/*
 * Temporal components whose buffers all meet at one moment (a clique of intervals: the latest
 * lower is below the earliest upper) have an obvious optimum: stacked by decreasing alignment,
 * their occupied sizes leave no padding when alignments are powers of two, so the peak is their
 * sum, which is their load bound. Such components are laid out here and left out of map (*m
 * shrinks); *peak is the largest stack. Dense inputs (thousands of buffers alive at once) are
 * often exactly this, and cost the decoders quadratic time. 0, or -1 on OOM.
 */
struct stack_item {
    uint64_t al, sz;
    uint32_t i;
};

static int cmp_stack_item(const void *x, const void *y)
{
    const struct stack_item *a = x, *b = y;
    if (a->al != b->al)
        return a->al > b->al ? -1 : 1;
    if (a->sz != b->sz)
        return a->sz > b->sz ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

static int stack_cliques(struct ws_plan_buffer *b, uint32_t *map, size_t *m, uint64_t dflt, uint64_t *peak)
{
    size_t n = *m, kept = 0;
    uint64_t(*by_lower)[2] = malloc(n * sizeof *by_lower + 1);
    struct stack_item *it = malloc(n * sizeof *it + 1);
    unsigned char *stacked = calloc(n + 1, 1);
    int rc = -1;
    if (!by_lower || !it || !stacked)
        goto out;
    for (size_t k = 0; k < n; k++) {
        by_lower[k][0] = (uint64_t)b[map[k]].lower ^ (1ull << 63);
        by_lower[k][1] = k;
    }
    if (radix_sort_words(&by_lower[0][0], n, 2, 0))
        goto out;
    for (size_t a = 0; a < n;) {
        /* The component starting at a: extend while the next buffer starts before the latest end. */
        const struct ws_plan_buffer *first = &b[map[by_lower[a][1]]];
        int64_t reach = first->upper, low_upper = first->upper, high_lower = first->lower;
        size_t e = a + 1;
        for (; e < n && b[map[by_lower[e][1]]].lower < reach; e++) {
            const struct ws_plan_buffer *x = &b[map[by_lower[e][1]]];
            reach = x->upper > reach ? x->upper : reach;
            low_upper = x->upper < low_upper ? x->upper : low_upper;
            high_lower = x->lower; /* sorted */
        }
        if (e - a >= 2 && high_lower < low_upper) {
            for (size_t k = a; k < e; k++) {
                const struct ws_plan_buffer *x = &b[map[by_lower[k][1]]];
                uint64_t al = effective_alignment(x, dflt), sz;
                round_up(x->size, al, &sz); /* checked by the caller */
                it[k - a] = (struct stack_item){al, sz, (uint32_t)by_lower[k][1]};
            }
            qsort(it, e - a, sizeof *it, cmp_stack_item);
            uint64_t top = 0, sum = 0;
            int exact = 1;
            for (size_t k = 0; k < e - a && exact; k++) {
                uint64_t o;
                exact = !round_up(top, it[k].al, &o) && o == top && !__builtin_add_overflow(top, it[k].sz, &top) &&
                        !__builtin_add_overflow(sum, it[k].sz, &sum);
            }
            if (exact) { /* no padding: the stack is optimal */
                top = 0;
                for (size_t k = 0; k < e - a; k++) {
                    b[map[it[k].i]].offset = top;
                    top += it[k].sz;
                    stacked[it[k].i] = 1;
                }
                *peak = top > *peak ? top : *peak;
            }
        }
        a = e;
    }
    for (size_t k = 0; k < n; k++)
        if (!stacked[k])
            map[kept++] = map[k];
    *m = kept;
    rc = 0;
out:
    free(by_lower);
    free(it);
    free(stacked);
    return rc;
}

int ws_plan_solve(struct ws_plan_buffer *b, size_t n, const struct ws_plan_options *o, struct ws_plan_result *r)
{
    double t0 = now_s();
    struct planner p;
    struct best_plan best = {NULL, UINT64_MAX, "empty"};
    uint32_t *map = malloc(n * sizeof *map + 1);
    uint64_t dflt = o->alignment ? o->alignment : 1;
    size_t m = 0;
    int rc = -1, have_planner = 0;
    memset(r, 0, sizeof *r);
    r->buffers = n;
    if (!map) {
        snprintf(r->error, sizeof r->error, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t sz;
        if (b[i].lower > b[i].upper) {
            snprintf(r->error, sizeof r->error, "buffer %llu: lower (%lld) is above upper (%lld)",
                     (unsigned long long)b[i].id, (long long)b[i].lower, (long long)b[i].upper);
            goto out;
        }
        if (round_up(b[i].size, effective_alignment(&b[i], dflt), &sz)) {
            snprintf(r->error, sizeof r->error, "buffer %llu: its size rounded up to its alignment overflows 64 bits",
                     (unsigned long long)b[i].id);
            goto out;
        }
        b[i].offset = 0;
        if (sz && b[i].lower < b[i].upper)
            map[m++] = (uint32_t)i;
        if (m == UINT32_MAX) {
            snprintf(r->error, sizeof r->error, "too many buffers (%zu)", n);
            goto out;
        }
    }
    uint64_t stacked_peak = 0; /* of the components laid out as stacks, optimal */
    if (stack_cliques(b, map, &m, dflt, &stacked_peak)) {
        snprintf(r->error, sizeof r->error, "out of memory");
        goto out;
    }
    if (planner_init(&p, b, map, m, dflt, r->error))
        goto out;
    have_planner = 1;
    p.lb = load_bound_of(p.lo, p.hi, p.sz, m);
    best.off = calloc(m + 1, sizeof *best.off);
    if (!best.off || p.lb == UINT64_MAX) {
        snprintf(r->error, sizeof r->error,
                 best.off ? "the load bound does not fit in 64 bits: no layout does" : "out of memory");
        goto out;
    }
    /* The stacks are optimal, so the rest needs no layout below their peak. */
    uint64_t lower = p.lb > stacked_peak ? p.lb : stacked_peak;
    if (m == 0) {
        best.peak = 0;
        snprintf(r->algorithm, sizeof r->algorithm, stacked_peak ? "stacked" : "empty");
    } else if (plan_all(&p, o, t0, &best, &lower, &r->work, r->algorithm, sizeof r->algorithm)) {
        snprintf(r->error, sizeof r->error, "out of memory");
        goto out;
    }
    if (best.peak >= PEAK_OVERFLOW) {
        snprintf(r->error, sizeof r->error, "no layout was found whose ends fit in 64 bits");
        goto out;
    }
    for (size_t k = 0; k < m; k++)
        b[map[k]].offset = best.off[k];
    r->load_bound_bytes = p.lb > stacked_peak ? p.lb : stacked_peak;
    r->lower_bound_bytes = lower;
    r->valid = ws_plan_validate(b, n, dflt, &r->peak_bytes) == 1;
    if (!r->valid) {
        snprintf(r->error, sizeof r->error, "internal error: the layout does not validate");
        goto out;
    }
    if (r->lower_bound_bytes > r->peak_bytes) { /* cannot happen: lower bounds are proven */
        snprintf(r->error, sizeof r->error, "internal error: the lower bound is above the layout");
        goto out;
    }
    r->optimal = r->peak_bytes == r->lower_bound_bytes;
    rc = 0;
out:
    if (have_planner)
        planner_free(&p);
    free(best.off);
    free(map);
    r->seconds = now_s() - t0;
    return rc;
}
