/*
 * Exact repair: the decision search applied to a part of a complete layout. With a target
 * capacity C below the layout's peak, a repair frees a band: every buffer lying wholly at or above
 * an offset a (and every buffer ending above C), across all time; every other buffer stays where
 * it is, and all of those start below a. It asks
 * the decision search for a placement of the freed buffers within C that respects the kept ones:
 * each freed buffer stays above the kept buffers below it (its base, from the current layout,
 * which therefore satisfies it; no kept buffer lies above a freed one). The freed
 * buffers fall apart into temporal components (no buffer of one meets a buffer of another in
 * time); each component is an independent subproblem with a decision search of its own, and only
 * the components that reach above C are solved. A success leaves every buffer of the part within
 * C and changes nothing else, so the layout stays valid and its buffers above C only get fewer;
 * when none is left the peak is at most C. Failing parts are retried with other parts, then with
 * larger parts and node limits, then with a less ambitious C.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define NONE32 UINT32_MAX

/* The decision search's configuration that the windows try first (decision.c: broadest first). */
#define WINDOW_CONFIG 1

/* 1: print what each repair tries on stderr (for tuning). */
#ifndef REPAIR_TRACE
#define REPAIR_TRACE 0
#endif

struct repair {
    struct planner *p;
    uint64_t *off;        /* the working layout (valid; its peak never rises) */
    unsigned char *mark;  /* per buffer: 1 freed, 2 seen while growing a cluster */
    uint32_t *freed;
    uint64_t *tops;       /* scratch: the tops of the candidates */
    size_t nfreed;
    uint64_t rng;
    /* one part */
    struct planner sp;
    uint32_t *map; /* part index -> buffer */
    uint64_t *base, *ceil, *suboff;
    uint64_t c; /* target of the current part */
    /* the load profile: distinct times t[0..m], section k = [t[k], t[k + 1]); a max tree of
     * (load, section) over the sections */
    int64_t *t;
    size_t m, leaves;
    uint64_t (*mx)[2];
};

/* Index of the first distinct time at or after v. */
static size_t time_at(const struct repair *r, int64_t v)
{
    size_t a = 0, b = r->m + 1;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (r->t[mid] < v)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

static int build_profile(struct repair *r)
{
    struct planner *p = r->p;
    size_t n = p->n, u = 0;
    r->t = malloc(2 * n * sizeof *r->t + 1);
    if (!r->t)
        return -1;
    for (size_t i = 0; i < n; i++) {
        r->t[u++] = p->lo[i];
        r->t[u++] = p->hi[i];
    }
    if (sort_i64(r->t, u))
        return -1;
    size_t k = 0;
    for (size_t x = 0; x < u; x++)
        if (k == 0 || r->t[x] != r->t[k - 1])
            r->t[k++] = r->t[x];
    r->m = k - 1; /* n >= 1, so at least two distinct times */
    r->leaves = 1;
    while (r->leaves < r->m)
        r->leaves *= 2;
    r->mx = calloc(2 * r->leaves, sizeof *r->mx);
    if (!r->mx)
        return -1;
    for (size_t i = 0; i < n; i++) { /* differences, summed below (wrap-around cancels) */
        r->mx[r->leaves + time_at(r, p->lo[i])][0] += p->sz[i];
        size_t e = time_at(r, p->hi[i]);
        if (e < r->m)
            r->mx[r->leaves + e][0] -= p->sz[i];
    }
    uint64_t live = 0;
    for (size_t x = 0; x < r->leaves; x++) {
        live += r->mx[r->leaves + x][0];
        r->mx[r->leaves + x][0] = x < r->m ? live : 0;
        r->mx[r->leaves + x][1] = x;
    }
    for (size_t x = r->leaves; x-- > 1;)
        memcpy(r->mx[x], r->mx[2 * x][0] >= r->mx[2 * x + 1][0] ? r->mx[2 * x] : r->mx[2 * x + 1], sizeof *r->mx);
    return 0;
}

/* The section of largest load among [a, b) (a < b). */
static size_t busiest(const struct repair *r, size_t a, size_t b)
{
    uint64_t best = 0, at = a;
    for (a += r->leaves, b += r->leaves; a < b; a /= 2, b /= 2) {
        if ((a & 1) && r->mx[a][0] >= best)
            best = r->mx[a][0], at = r->mx[a][1];
        a += a & 1;
        if ((b & 1) && r->mx[b - 1][0] >= best)
            best = r->mx[b - 1][0], at = r->mx[b - 1][1];
    }
    return at;
}

static inline uint64_t top_at(const struct repair *r, uint32_t i) { return r->off[i] + r->p->sz[i]; }

struct overlap_ctx {
    struct repair *r;
    size_t n;
    uint32_t *out;
    uint64_t above; /* only buffers ending above this */
    unsigned char want, set;
};

/* Collect the buffers meeting one lifetime that end above ctx->above and whose mark is `want`. */
static int collect_above(void *ctx, uint32_t j)
{
    struct overlap_ctx *c = ctx;
    if (c->r->mark[j] != c->want || top_at(c->r, j) <= c->above)
        return 0;
    c->r->mark[j] = c->set;
    c->out[c->n++] = j;
    return 0;
}

static int cmp_u64_desc(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a > b ? -1 : a < b;
}

struct bound_ctx {
    struct repair *r;
    uint32_t i;
    uint64_t base, ceil;
};

static int bound_of(void *ctx, uint32_t j)
{
    struct bound_ctx *b = ctx;
    struct repair *r = b->r;
    if (r->mark[j] == 1)
        return 0; /* freed */
    uint64_t t = top_at(r, j);
    if (t <= r->off[b->i])
        b->base = t > b->base ? t : b->base;
    else
        b->ceil = r->off[j] < b->ceil ? r->off[j] : b->ceil; /* above it: the layout is valid */
    return 0;
}

static int cmp_by_lower(const void *x, const void *y, void *ctx)
{
    const struct planner *p = ctx;
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    if (p->lo[a] != p->lo[b])
        return p->lo[a] < p->lo[b] ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* Solve the k buffers comp[0..k) within r->c with the decision search, into r->suboff; with
 * `bounded` each stays between the kept buffers below and above it (r->off). The decision, or
 * DECISION_ERROR on OOM. */
static enum decision solve_sub(struct repair *r, const uint32_t *comp, size_t k, int bounded, unsigned cfg,
                               uint64_t nodes, struct budget *bud)
{
    struct planner *p = r->p, *sp = &r->sp;
    enum decision res = DECISION_ERROR;
    struct decider *d = NULL;
    if (planner_subset(sp, p, comp, k))
        goto out;
    for (size_t x = 0; x < k; x++) {
        uint32_t i = comp[x];
        if (!bounded)
            continue;
        struct bound_ctx b = {r, i, 0, UINT64_MAX};
        for_each_overlap(p, p->lo[i], p->hi[i], i, bound_of, &b);
        if (round_up(b.base, p->al[i], &r->base[x]))
            r->base[x] = UINT64_MAX;
        r->ceil[x] = b.ceil;
    }
    if (decider_new(&d, sp, r->rng))
        goto out;
    if (bounded)
        decider_bound(d, r->base, r->ceil);
    res = decide(d, r->c, cfg, nodes, bud, r->suboff);
out:
    decider_free(d);
    planner_free(sp);
    return res;
}

/* Re-solve one component comp[0..k) within r->c, with (k + 256) << round nodes. 1 solved (written
 * into r->off), 0 not, -1 on OOM. */
static int solve_part(struct repair *r, const uint32_t *comp, size_t k, unsigned round, struct budget *bud)
{
    /* One configuration, chosen at random: many cheap tries on varied parts find more than a
     * long search on one. */
    unsigned cfg = (unsigned)rng_below(&r->rng, decider_configs());
    uint64_t u0 = bud->used;
    enum decision res = solve_sub(r, comp, k, 1, cfg, ((uint64_t)k + 256) << round, bud);
    if (REPAIR_TRACE)
        fprintf(stderr, "    cfg %u -> %d nodes %llu\n", cfg, res, (unsigned long long)(bud->used - u0));
    if (res == DECISION_ERROR)
        return -1;
    if (res != DECISION_FOUND)
        return 0;
    for (size_t x = 0; x < k; x++)
        r->off[comp[x]] = r->suboff[x];
    return 1;
}

/* Solve the temporal components of r->freed that reach above C; clears the marks. */
static int components_solve(struct repair *r, unsigned round, struct budget *bud)
{
    struct planner *p = r->p;
    /* Temporal components of the freed buffers, by a sweep in order of lower. */
    qsort_r(r->freed, r->nfreed, sizeof *r->freed, cmp_by_lower, p);
    int rc = 1;
    for (size_t a = 0; a < r->nfreed && rc == 1;) {
        int64_t reach = p->hi[r->freed[a]];
        int over = top_at(r, r->freed[a]) > r->c;
        size_t e = a + 1;
        for (; e < r->nfreed && p->lo[r->freed[e]] < reach; e++) {
            uint32_t j = r->freed[e];
            reach = p->hi[j] > reach ? p->hi[j] : reach;
            over |= top_at(r, j) > r->c;
        }
        if (over) {
            rc = solve_part(r, &r->freed[a], e - a, round, bud);
            if (REPAIR_TRACE)
                fprintf(stderr, "  part %zu -> %d\n", e - a, rc);
        }
        a = e;
    }
    for (size_t k = 0; k < r->nfreed; k++)
        r->mark[r->freed[k]] = 0;
    return rc;
}

/* How many buffers meet the sections [at - w, at + w]. */
static size_t window_count(struct repair *r, size_t at, size_t w)
{
    size_t a = at > w ? at - w : 0, b = at + 1 + w < r->m ? at + 1 + w : r->m;
    struct overlap_ctx ctx = {r, 0, r->freed, 0, 0, 1};
    for_each_overlap(r->p, r->t[a], r->t[b], SIZE_MAX, collect_above, &ctx);
    for (size_t x = 0; x < ctx.n; x++)
        r->mark[r->freed[x]] = 0;
    return ctx.n;
}

/*
 * Lay out afresh around section `at`: the buffers meeting the sections [at - w, at + w] are
 * solved within r->c by the decision search, unbounded (configuration cfg, 4k + 1024 nodes for k
 * buffers), then
 * kept where it put them while every other buffer is placed around them by best fit in `order`.
 * 1 with the layout in p->off and its peak in *peak, 0 when the window was not solved within
 * the nodes or the layout reaches `stop` (it is abandoned there), -1 on OOM. Every buffer placed
 * by best fit counts as a step.
 */
static int window_layout(struct repair *r, size_t at, size_t w, unsigned cfg, const uint32_t *order, uint64_t stop,
                         struct budget *bud, uint64_t *peak)
{
    struct planner *p = r->p;
    size_t a = at > w ? at - w : 0, b = at + 1 + w < r->m ? at + 1 + w : r->m;
    struct overlap_ctx ctx = {r, 0, r->freed, 0, 0, 1};
    for_each_overlap(p, r->t[a], r->t[b], SIZE_MAX, collect_above, &ctx);
    size_t k = ctx.n;
    for (size_t x = 0; x < k; x++)
        r->mark[r->freed[x]] = 0;
    qsort_r(r->freed, k, sizeof *r->freed, cmp_by_lower, p);
    uint64_t u0 = bud->used;
    enum decision res = solve_sub(r, r->freed, k, 0, cfg, 4 * (uint64_t)k + 1024, bud);
    if (REPAIR_TRACE)
        fprintf(stderr, "window w=%zu k=%zu cfg=%u -> %d nodes %llu\n", w, k, cfg, res,
                (unsigned long long)(bud->used - u0));
    if (res == DECISION_ERROR)
        return -1;
    if (res != DECISION_FOUND)
        return 0;
    memset(p->placed, 0, p->n);
    p->use_tree = p->tree != NULL;
    if (p->use_tree)
        union_tree_clear(p->tree);
    p->overflow = 0;
    uint64_t top = 0;
    for (size_t x = 0; x < k; x++) {
        uint32_t i = r->freed[x];
        p->off[i] = r->suboff[x];
        p->placed[i] = 1;
        if (p->use_tree && union_tree_insert(p->tree, i, (struct span){p->off[i], p->off[i] + p->sz[i]}))
            return -1;
    }
    for (size_t x = 0; x < p->n; x++) {
        uint32_t i = order[x];
        if (p->placed[i])
            continue;
        if (place(p, i, FIT_BEST) ||
            (p->use_tree && union_tree_insert(p->tree, i, (struct span){p->off[i], p->off[i] + p->sz[i]})))
            return -1;
        bud->used++;
        top = p->off[i] + p->sz[i] > top ? p->off[i] + p->sz[i] : top;
        if (p->overflow || top >= stop)
            return 0; /* no better than the layout to beat */
    }
    *peak = top;
    return 1;
}

/*
 * One band repair: free every buffer lying wholly at or above offset a, across all time, and
 * re-solve the temporal components that reach above C. The kept buffers all start below a, so
 * each freed buffer's base (the highest kept top below it in its lifetime) is the whole of the
 * constraint; nothing kept lies above it. a is the k-th highest offset, k drawn from [size/2,
 * size]. 1 when every component reaching above C was re-solved, 0 when one was not, -1 on OOM.
 */
static int repair_band(struct repair *r, size_t size, unsigned round, struct budget *bud)
{
    struct planner *p = r->p;
    size_t n = p->n;
    for (size_t i = 0; i < n; i++)
        r->tops[i] = r->off[i];
    uint64_t a = 0;
    size = size / 2 + (size_t)rng_below(&r->rng, size / 2 + 1); /* varied bands find more */
    if (size < n) {
        qsort(r->tops, n, sizeof *r->tops, cmp_u64_desc);
        a = r->tops[size];
    }
    r->nfreed = 0;
    for (size_t i = 0; i < n; i++)
        if (r->off[i] >= a || top_at(r, (uint32_t)i) > r->c) {
            r->mark[i] = 1;
            r->freed[r->nfreed++] = (uint32_t)i;
        }
    return components_solve(r, round, bud);
}

/* A buffer ending above C, chosen at random; NONE32 when there is none. */
static uint32_t pick_above(struct repair *r, uint64_t c)
{
    struct planner *p = r->p;
    size_t count = 0;
    uint32_t pick = NONE32;
    for (size_t i = 0; i < p->n; i++)
        if (top_at(r, (uint32_t)i) > c && rng_below(&r->rng, ++count) == 0)
            pick = (uint32_t)i;
    return pick;
}

static uint64_t peak_of_layout(const struct repair *r)
{
    uint64_t peak = 0;
    for (size_t i = 0; i < r->p->n; i++)
        peak = top_at(r, (uint32_t)i) > peak ? top_at(r, (uint32_t)i) : peak;
    return peak;
}

static void repair_free(struct repair *r)
{
    free(r->off);
    free(r->mark);
    free(r->freed);
    free(r->tops);
    free(r->base);
    free(r->ceil);
    free(r->suboff);
    free(r->t);
    free(r->mx);
}

/* The working layout starts as best's. 0, or -1 on OOM (r is freed by repair_free either way). */
static int repair_init(struct repair *r, struct planner *p, const struct best_plan *best, uint64_t seed)
{
    size_t n = p->n;
    memset(r, 0, sizeof *r);
    r->p = p;
    r->rng = seed ^ 0x9e6c63d0676a9a99ull;
    r->off = malloc(n * sizeof *r->off + 1);
    r->mark = calloc(n + 1, 1);
    r->freed = malloc(n * sizeof *r->freed + 1);
    r->tops = malloc(n * sizeof *r->tops + 1);
    r->base = malloc(n * sizeof *r->base + 1);
    r->ceil = malloc(n * sizeof *r->ceil + 1);
    r->suboff = malloc(n * sizeof *r->suboff + 1);
    if (!r->off || !r->mark || !r->freed || !r->tops || !r->base || !r->ceil || !r->suboff || build_profile(r))
        return -1;
    memcpy(r->off, best->off, n * sizeof *r->off);
    return 0;
}

/*
 * Windows: the repairs keep most of a layout and cannot reorganise the buffers below a hole at
 * the busiest section, where a layout at the lower bound must pack every live buffer without one.
 * This lays the problem out afresh instead, from the inside out: the buffers meeting a window of
 * sections around the busiest one are solved within the lower bound by the decision search, and
 * the rest is placed around them by best fit in decreasing size (window_layout). Windows grow
 * (1, 3, 7, ... sections; one that holds fewer than 1/64 more buffers than the last one tried is
 * skipped: its layout would hardly differ) with the broadest-first configuration, which packs
 * best, then again with the others; the best layout below best's peak is kept.
 */
int window_search(struct planner *p, struct best_plan *best, uint64_t lower, uint64_t seed, struct budget *bud,
                  int *improved)
{
    size_t n = p->n;
    struct repair r;
    uint32_t *order = malloc(n * sizeof *order + 1);
    int rc = -1;
    *improved = 0;
    if (repair_init(&r, p, best, seed) || !order || make_order(p, ORDER_SIZE, NULL, 0, NULL, order))
        goto out;
    size_t at = busiest(&r, 0, r.m);
    unsigned ncfg = decider_configs();
    r.c = lower;
    for (unsigned k = 0; k < ncfg && best->peak > lower && !budget_spent(bud); k++) {
        unsigned cfg = (WINDOW_CONFIG + k) % ncfg;
        size_t last = 0; /* buffers in the last window tried */
        for (size_t w = 0; best->peak > lower && !budget_spent(bud); w = 2 * w + 1) {
            size_t held = window_count(&r, at, w);
            if (last && held < last + last / 64 && w < r.m)
                continue; /* hardly more than the last window: a wider one first */
            last = held;
            uint64_t peak;
            int res = window_layout(&r, at, w, cfg, order, best->peak, bud, &peak);
            if (res < 0)
                goto out;
            if (res && peak < best->peak) {
                memcpy(best->off, p->off, n * sizeof *best->off);
                best->peak = peak;
                best->name = "window-search";
                *improved = 1;
            }
            if (w >= r.m)
                break; /* the window held the whole problem */
        }
    }
    rc = 0;
out:
    repair_free(&r);
    free(order);
    return rc;
}

int repair_search(struct planner *p, struct best_plan *best, uint64_t lower, uint64_t seed, struct budget *bud,
                  int *improved)
{
    size_t n = p->n;
    struct repair r;
    int rc = -1;
    *improved = 0;
    if (repair_init(&r, p, best, seed))
        goto out;
    /* Targets from the most ambitious (the lower bound) to halfway to the peak; each with parts
     * that grow until they reach the whole problem. */
    unsigned step = 0; /* target: peak - 1 - (peak - lower - 1) / 2^step, step 0 = lower */
    unsigned level = 0, fails = 0, rounds = 0;
    while (best->peak > lower && !budget_spent(bud)) {
        uint64_t gap = best->peak - lower;
        r.c = step == 0 ? lower : best->peak - 1 - ((gap - 1) >> step);
        uint32_t o = pick_above(&r, r.c);
        if (o == NONE32) { /* the working layout is within C: a new best */
            uint64_t peak = peak_of_layout(&r);
            if (peak < best->peak) {
                memcpy(best->off, r.off, n * sizeof *r.off);
                best->peak = peak;
                *improved = 1;
            }
            step = level = fails = 0; /* the same effort, aiming at the lower bound again */
            continue;
        }
        size_t size = (size_t)24 << level;
        int res = repair_band(&r, size, rounds, bud);
        if (REPAIR_TRACE)
            fprintf(stderr, "repair t=%.2f c=%llu (+%llu) o=%u size=%zu freed=%zu res=%d used=%llu\n", now_s(),
                    (unsigned long long)r.c, (unsigned long long)(r.c - lower), o, size, r.nfreed, res,
                    (unsigned long long)bud->used);
        if (res < 0)
            goto out;
        if (res == 1) {
            fails = 0;
            continue;
        }
        /* A few tries at each size, then larger parts; past the whole problem, a less ambitious
         * target; past the last target, more nodes and the first target again. */
        if (++fails >= 3) {
            fails = 0;
            if (size < n && level < 20) {
                level++;
            } else {
                level = 0;
                if (++step > 6) {
                    step = 0;
                    rounds += rounds < 16;
                }
            }
        }
    }
    rc = 0;
out:
    repair_free(&r);
    return rc;
}
