/*
 * Searches that improve a complete layout: the portfolio's decoders on randomly perturbed orders,
 * and a large-neighbourhood search that removes the buffers reaching the peak together with
 * their neighbours near the top and re-inserts them. They find better layouts; they prove
 * nothing (the decision search does, decision.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* First half of the search: the portfolio's decoders on randomly perturbed orders. */
int perturbed_orders(struct planner *p, const uint64_t *breadth, uint32_t *order, struct best_plan *best, uint64_t *rng,
                     struct budget *bud, double deadline)
{
    static const double noise[] = {0.001, 0.01, 0.05, 0.2};
    const char *start_name = best->name;
    while (best->peak > p->lb && !budget_spent(bud) && (deadline <= 0 || now_s() < deadline)) {
        const struct heuristic *h = &ws_portfolio[rng_below(rng, ws_portfolio_count)];
        bud->used += p->n;
        if (make_order(p, h->order, breadth, noise[rng_below(rng, 4)], rng, order) ||
            try_order(p, order, rng_below(rng, 2) ? FIT_BEST : FIT_FIRST, start_name, best))
            return -1;
    }
    return 0;
}

/* ---- the improving search ----------------------------------------------------------------- */

/*
 * Large-neighbourhood search on the placement itself. The state is a complete plan with peak P;
 * the target is T = P - 1 and the objective, lexicographically, (P, number of buffers ending
 * above T). A move picks one buffer ending above T, removes it and the buffers overlapping it in
 * time that end above a random height, and re-inserts them (largest first or in random order,
 * best or first fit) around the buffers that stayed. A move that ends a buffer above P, or that
 * leaves more buffers above T, is undone. When no buffer ends above T the peak has dropped.
 */
struct search {
    struct planner *p;
    uint64_t peak, target;
    size_t over;         /* buffers ending above target */
    uint32_t *over_list; /* candidates (lazily cleaned) */
    size_t nover_list;
    unsigned char *in_list;
    uint32_t *moved;     /* the neighbourhood of the current move */
    uint64_t *saved_off; /* per buffer: its offset before the current move */
    size_t nmoved, cap;
    uint64_t rng;
};

static uint64_t top_of(const struct planner *p, size_t i) { return p->off[i] + p->sz[i]; }

static int search_reset(struct search *s)
{
    struct planner *p = s->p;
    s->peak = 0;
    for (size_t i = 0; i < p->n; i++)
        if (top_of(p, i) > s->peak)
            s->peak = top_of(p, i);
    s->target = s->peak ? s->peak - 1 : 0;
    s->over = 0;
    s->nover_list = 0;
    memset(s->in_list, 0, p->n);
    for (size_t i = 0; i < p->n; i++)
        if (top_of(p, i) > s->target) {
            s->over++;
            s->over_list[s->nover_list++] = (uint32_t)i;
            s->in_list[i] = 1;
        }
    return 0;
}

static long pick_over(struct search *s)
{
    while (s->nover_list) {
        size_t k = rng_below(&s->rng, s->nover_list);
        uint32_t i = s->over_list[k];
        if (top_of(s->p, i) > s->target)
            return i;
        s->in_list[i] = 0;
        s->over_list[k] = s->over_list[--s->nover_list];
    }
    return -1;
}

static int add_moved(struct search *s, uint32_t i)
{
    if (s->nmoved == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        uint32_t *m = realloc(s->moved, cap * sizeof *m);
        if (!m)
            return -1;
        s->moved = m;
        s->cap = cap;
    }
    s->moved[s->nmoved++] = i;
    s->saved_off[i] = s->p->off[i];
    return 0;
}

/* The neighbourhood of buffer v: v and the buffers overlapping it in time that end above a
 * random height between v's offset minus a random share of the peak and v's top. */
static int choose_neighbourhood(struct search *s, uint32_t v)
{
    struct planner *p = s->p;
    s->nmoved = 0;
    if (add_moved(s, v))
        return -1;
    uint64_t depth = (s->peak / 64 + 1) * (1 + rng_below(&s->rng, 16));
    uint64_t floor = p->off[v] > depth ? p->off[v] - depth : 0;
    size_t limit = 8 + rng_below(&s->rng, 56);
    int64_t l = p->lo[v], u = p->hi[v];
    for (int c = 0; c < p->ncls; c++) {
        const struct time_class *tc = &p->cls[c];
        __int128 from = (__int128)l - ((__int128)1 << (tc->log2len + 1)) + 1;
        for (size_t x = first_at_or_after(tc->lo, tc->n, from); x < tc->n && tc->lo[x] < u; x++) {
            uint32_t j = tc->ids[x];
            if (j == v || p->hi[j] <= l || top_of(p, j) <= floor || p->sz[j] == 0)
                continue;
            /* Reservoir-style thinning keeps large neighbourhoods bounded and random. */
            if (s->nmoved > limit && rng_below(&s->rng, s->nmoved) >= limit)
                continue;
            if (add_moved(s, j))
                return -1;
        }
    }
    return 0;
}

static int cmp_moved_size(const void *x, const void *y, void *ctx)
{
    const struct planner *p = ctx;
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    if (p->sz[a] != p->sz[b])
        return p->sz[a] > p->sz[b] ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* One move; returns 1 accepted, 0 undone, -1 on OOM. */
static int search_move(struct search *s, uint32_t v)
{
    struct planner *p = s->p;
    if (choose_neighbourhood(s, v))
        return -1;
    size_t over_before = s->over;
    for (size_t k = 0; k < s->nmoved; k++) {
        uint32_t i = s->moved[k];
        if (top_of(p, i) > s->target)
            s->over--;
        p->placed[i] = 0;
    }
    uint64_t r = rng_next(&s->rng);
    if (r & 1) {
        qsort_r(s->moved, s->nmoved, sizeof *s->moved, cmp_moved_size, p);
    } else {
        for (size_t k = s->nmoved; k > 1; k--) { /* shuffle */
            size_t j = rng_below(&s->rng, k);
            uint32_t t = s->moved[k - 1];
            s->moved[k - 1] = s->moved[j];
            s->moved[j] = t;
        }
    }
    enum fit fit = (r & 6) == 0 ? FIT_FIRST : FIT_BEST;
    int worse = 0;
    for (size_t k = 0; k < s->nmoved; k++) {
        uint32_t i = s->moved[k];
        if (place(p, i, fit))
            return -1;
        if (p->overflow || top_of(p, i) > s->peak) {
            p->overflow = 0;
            worse = 1;
            break;
        }
        if (top_of(p, i) > s->target)
            s->over++;
    }
    if (!worse && s->over <= over_before) {
        for (size_t k = 0; k < s->nmoved; k++) {
            uint32_t i = s->moved[k];
            p->placed[i] = 1;
            if (top_of(p, i) > s->target && !s->in_list[i]) {
                s->in_list[i] = 1;
                s->over_list[s->nover_list++] = i;
            }
        }
        return 1;
    }
    for (size_t k = 0; k < s->nmoved; k++) {
        p->off[s->moved[k]] = s->saved_off[s->moved[k]];
        p->placed[s->moved[k]] = 1;
    }
    s->over = over_before;
    return 0;
}

/* Improve p->off (a complete plan) until the deadline or the load bound. */
int search_improve(struct planner *p, uint64_t seed, struct budget *bud, double deadline, int *improved)
{
    struct search s = {.p = p, .rng = seed ^ 0x5851f42d4c957f2dull};
    int rc = -1;
    uint64_t start_peak = 0;
    s.over_list = malloc(p->n * sizeof *s.over_list + 1);
    s.in_list = malloc(p->n + 1);
    s.saved_off = malloc(p->n * sizeof *s.saved_off + 1);
    if (!s.over_list || !s.in_list || !s.saved_off)
        goto out;
    memset(p->placed, 1, p->n);
    p->use_tree = 0; /* the search removes buffers; the union tree cannot */
    search_reset(&s);
    start_peak = s.peak;
    for (unsigned iter = 0; s.peak > p->lb; iter++) {
        if ((iter & 15) == 0 && (budget_spent(bud) || (deadline > 0 && now_s() >= deadline)))
            break;
        long v = pick_over(&s);
        if (v < 0 || s.over == 0) {
            search_reset(&s); /* the peak dropped */
            continue;
        }
        if (search_move(&s, (uint32_t)v) < 0)
            goto out;
        bud->used += s.nmoved;
        if (s.over == 0)
            search_reset(&s);
    }
    *improved = s.peak < start_peak;
    rc = 0;
out:
    free(s.over_list);
    free(s.in_list);
    free(s.moved);
    free(s.saved_off);
    return rc;
}
