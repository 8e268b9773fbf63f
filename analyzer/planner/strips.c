/*
 * Strips: perfect packings taken apart along flat strips.
 *
 * A temporal component whose load is the same L in every section has a layout of peak L only if
 * every address below L is used at every moment. See the distinct times as the nodes of a line
 * and each buffer as an arc from its lower to its upper carrying its size: the component is a
 * flow of L bytes from its first time to its last. A set S of buffers whose arcs conserve the
 * flow at every inner time is *flat*: the buffers of S alive at any moment sum to the same c. If
 * S has a layout within c and the rest one within L - c, S below the rest is a layout within L.
 * A layout cut by guillotine cuts (planner_gen's hard cut rectangles, and public suites built the
 * same way) is made of such strips: a cut across the addresses splits a component into two flat
 * sets, and each, without the buffers of the other, falls apart in time where the cuts across
 * time were made. The decision search alone gets lost in such problems from about 400 buffers
 * (an early wrong choice and the whole subtree below it is dead); the pieces a few splits leave
 * are small enough for it.
 *
 * Finding a flat set: one buffer is taken into S; then every inner time at which the buffers of S
 * do not balance (as many bytes end there as start) is balanced by a subset of the undecided
 * buffers that start or end there, which decides all of them; the time with the fewest undecided
 * buffers goes first, and a time that no subset can balance ends the branch. A second buffer is
 * kept out (S = everything is no split); every flat set with the one and without the other is
 * reachable, and the first one found is split off. A flat set that
 * is not a strip of any layout within L leaves one side without a layout; then the next first
 * buffer is tried. Each side is solved the same way: its temporal components, the small ones by
 * the decision search at their level, the others by another split.
 *
 * Everything counts against the budget (a decision node is one step, BALANCE_STEPS balancing
 * steps are one), memory is linear in the component, and a failure changes nothing: the caller
 * keeps its layout.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define NONE32 UINT32_MAX

/* Components of at most this many buffers are given to the decision search first. */
#define DIRECT_MAX 96
/* A balancing step (one subset tried at one time) costs a few instructions, a decision node
 * hundreds: this many balancing steps count as one step of the budget. */
#define BALANCE_STEPS 64
/* First buffers tried per component before the decision search gets the whole component. */
#define SEEDS 32
/* Balancing steps per flat-set search: each seed this many first, then four times as many, up
 * to FLAT_STEPS. */
#define FLAT_FIRST_STEPS 500
/* The first round: this many buffers as seeds, this many steps each. */
#define QUICK_SEEDS 4096
#define QUICK_STEPS 256
/* Flat sets whose split failed, remembered per component so as not to be split again. */
#define FAILED_SETS 64
#define FLAT_STEPS  128000
/* Splits nested deeper than this are not tried (the decision search takes the part). */
#define DEPTH_MAX 64

struct strips {
    struct planner *p;
    uint64_t *off; /* the layout being built, per buffer of p */
    struct budget *bud;
    uint64_t rng;
    uint64_t balanced; /* balancing steps not yet counted in bud */
};

/* The flat-set search on one component. */
struct flat {
    size_t k, m;          /* buffers, last node (nodes 0..m are the distinct times) */
    const uint32_t *ids;  /* the component's buffers in p */
    const uint64_t *sz;   /* p->sz */
    uint32_t *a, *b;      /* per component buffer: nodes of its lower and upper */
    uint32_t *inc, *incs; /* node v's buffers: inc[incs[v] .. incs[v + 1]) */
    unsigned char *st;    /* per component buffer: 0 undecided, 1 in S, 2 out */
    __int128 *imb;        /* per node: bytes of S ending there minus bytes of S starting there */
    uint32_t *und;        /* per node: undecided buffers */
    __int128 *ustart, *uend;
    uint32_t *pend, *ppos; /* inner nodes with imb != 0, and their places (NONE32: not pending) */
    size_t npend;
    uint32_t *trail; /* decided buffers, in order */
    size_t ntrail, nin;
    /* levels of the search: the node balanced, its candidates in cand[from .. from + n) */
    struct level {
        uint32_t v, from, n, mark, i;
        int applied, fresh;
        __int128 sum, want;
    } * lev;
    size_t nlev;
    uint32_t *cand;      /* candidate buffers of the levels, stacked */
    __int128 *delta;     /* their effect on the node's imbalance when taken */
    __int128 *pos, *neg; /* suffix sums of the positive and the negative deltas (n + 1 per level) */
    unsigned char *take;
    size_t ncand;
};

static void flat_free(struct flat *f)
{
    free(f->a);
    free(f->b);
    free(f->inc);
    free(f->incs);
    free(f->st);
    free(f->imb);
    free(f->und);
    free(f->ustart);
    free(f->uend);
    free(f->pend);
    free(f->ppos);
    free(f->trail);
    free(f->lev);
    free(f->cand);
    free(f->delta);
    free(f->pos);
    free(f->neg);
    free(f->take);
    memset(f, 0, sizeof *f);
}

/* Build the search of the component ids[0..k). 0, or -1 on OOM. */
static int flat_init(struct flat *f, const struct planner *p, const uint32_t *ids, size_t k)
{
    memset(f, 0, sizeof *f);
    f->k = k;
    f->ids = ids;
    f->sz = p->sz;
    int64_t *t = malloc(2 * k * sizeof *t + 1);
    if (!t)
        return -1;
    for (size_t x = 0; x < k; x++) {
        t[2 * x] = p->lo[ids[x]];
        t[2 * x + 1] = p->hi[ids[x]];
    }
    if (sort_i64(t, 2 * k)) {
        free(t);
        return -1;
    }
    size_t nt = 0;
    for (size_t x = 0; x < 2 * k; x++)
        if (nt == 0 || t[x] != t[nt - 1])
            t[nt++] = t[x];
    f->m = nt - 1;
    size_t nodes = nt;
    f->a = malloc(k * sizeof *f->a + 1);
    f->b = malloc(k * sizeof *f->b + 1);
    f->inc = malloc(2 * k * sizeof *f->inc + 1);
    f->incs = calloc(nodes + 1, sizeof *f->incs);
    f->st = calloc(k + 1, 1);
    f->imb = calloc(nodes, sizeof *f->imb);
    f->und = calloc(nodes, sizeof *f->und);
    f->ustart = calloc(nodes, sizeof *f->ustart);
    f->uend = calloc(nodes, sizeof *f->uend);
    f->pend = malloc(nodes * sizeof *f->pend);
    f->ppos = malloc(nodes * sizeof *f->ppos);
    f->trail = malloc(k * sizeof *f->trail + 1);
    f->lev = malloc((nodes + 1) * sizeof *f->lev);
    f->cand = malloc(2 * k * sizeof *f->cand + 1);
    f->delta = malloc(2 * k * sizeof *f->delta + 1);
    f->take = malloc(2 * k + 1);
    f->pos = malloc((2 * k + nodes + 1) * sizeof *f->pos);
    f->neg = malloc((2 * k + nodes + 1) * sizeof *f->neg);
    if (!f->a || !f->b || !f->inc || !f->incs || !f->st || !f->imb || !f->und || !f->ustart || !f->uend || !f->pend ||
        !f->ppos || !f->trail || !f->lev || !f->cand || !f->delta || !f->take || !f->pos || !f->neg) {
        free(t);
        return -1;
    }
    for (size_t x = 0; x < k; x++) {
        f->a[x] = (uint32_t)first_at_or_after(t, nt, p->lo[ids[x]]);
        f->b[x] = (uint32_t)first_at_or_after(t, nt, p->hi[ids[x]]);
        f->incs[f->a[x] + 1]++;
        f->incs[f->b[x] + 1]++;
    }
    free(t);
    for (size_t v = 0; v < nodes; v++)
        f->incs[v + 1] += f->incs[v];
    uint32_t *fill = calloc(nodes, sizeof *fill);
    if (!fill)
        return -1;
    for (size_t x = 0; x < k; x++) {
        f->inc[f->incs[f->a[x]] + fill[f->a[x]]++] = (uint32_t)x;
        f->inc[f->incs[f->b[x]] + fill[f->b[x]]++] = (uint32_t)x;
    }
    free(fill);
    return 0;
}

static void pend_update(struct flat *f, uint32_t v)
{
    if (v == 0 || v == f->m)
        return; /* the ends of the component: S's flow enters and leaves there */
    int want = f->imb[v] != 0;
    if (want && f->ppos[v] == NONE32) {
        f->ppos[v] = (uint32_t)f->npend;
        f->pend[f->npend++] = v;
    } else if (!want && f->ppos[v] != NONE32) {
        uint32_t last = f->pend[--f->npend];
        f->pend[f->ppos[v]] = last;
        f->ppos[last] = f->ppos[v];
        f->ppos[v] = NONE32;
    }
}

static void decide_buffer(struct flat *f, uint32_t x, int in)
{
    uint32_t a = f->a[x], b = f->b[x];
    __int128 s = f->sz[f->ids[x]];
    f->st[x] = in ? 1 : 2;
    f->und[a]--;
    f->und[b]--;
    f->ustart[a] -= s;
    f->uend[b] -= s;
    f->trail[f->ntrail++] = x;
    if (in) {
        f->nin++;
        f->imb[a] -= s;
        f->imb[b] += s;
        pend_update(f, a);
        pend_update(f, b);
    }
}

static void undo_to(struct flat *f, size_t mark)
{
    while (f->ntrail > mark) {
        uint32_t x = f->trail[--f->ntrail];
        uint32_t a = f->a[x], b = f->b[x];
        __int128 s = f->sz[f->ids[x]];
        f->und[a]++;
        f->und[b]++;
        f->ustart[a] += s;
        f->uend[b] += s;
        if (f->st[x] == 1) {
            f->nin--;
            f->imb[a] += s;
            f->imb[b] -= s;
            pend_update(f, a);
            pend_update(f, b);
        }
        f->st[x] = 0;
    }
}

static void flat_reset(struct flat *f)
{
    size_t nodes = f->m + 1;
    memset(f->st, 0, f->k);
    memset(f->imb, 0, nodes * sizeof *f->imb);
    memset(f->ustart, 0, nodes * sizeof *f->ustart);
    memset(f->uend, 0, nodes * sizeof *f->uend);
    for (size_t v = 0; v < nodes; v++) {
        f->und[v] = f->incs[v + 1] - f->incs[v];
        f->ppos[v] = NONE32;
    }
    for (size_t x = 0; x < f->k; x++) {
        f->ustart[f->a[x]] += f->sz[f->ids[x]];
        f->uend[f->b[x]] += f->sz[f->ids[x]];
    }
    f->npend = f->ntrail = f->nin = f->nlev = f->ncand = 0;
}

#define DEAD (NONE32 - 1)

/* Pending nodes with at most this many undecided buffers are checked exactly: some subset of
 * them must balance the node. */
#define EXACT_CHECK 4

static int balances(const struct flat *f, uint32_t v, __int128 need)
{
    __int128 d[EXACT_CHECK];
    unsigned n = 0;
    for (uint32_t q = f->incs[v]; q < f->incs[v + 1] && n < EXACT_CHECK; q++) {
        uint32_t x = f->inc[q];
        if (!f->st[x])
            d[n++] = f->a[x] == v ? -(__int128)f->sz[f->ids[x]] : (__int128)f->sz[f->ids[x]];
    }
    for (unsigned mask = 1; mask < 1u << n; mask++) {
        __int128 sum = 0;
        for (unsigned i = 0; i < n; i++)
            if (mask >> i & 1)
                sum += d[i];
        if (sum == need)
            return 1;
    }
    return 0;
}

/* The pending node with the fewest undecided buffers; NONE32 when none is pending (S is flat),
 * DEAD when one cannot be balanced. */
static uint32_t pick(const struct flat *f)
{
    uint32_t best = NONE32;
    for (size_t q = 0; q < f->npend; q++) {
        uint32_t v = f->pend[q];
        __int128 need = -f->imb[v]; /* what the chosen buffers must add */
        if (f->und[v] == 0 || need > f->uend[v] || need < -f->ustart[v])
            return DEAD;
        if (f->und[v] <= EXACT_CHECK && !balances(f, v, need))
            return DEAD;
        if (best == NONE32 || f->und[v] < f->und[best] || (f->und[v] == f->und[best] && v < best))
            best = v;
    }
    return best;
}

/* Open a level balancing node v: its undecided buffers, largest first, with suffix sums. */
static void push_level(struct flat *f, uint32_t v)
{
    struct level *l = &f->lev[f->nlev++];
    uint32_t n = 0, from = (uint32_t)f->ncand;
    for (uint32_t q = f->incs[v]; q < f->incs[v + 1]; q++) {
        uint32_t x = f->inc[q];
        if (f->st[x])
            continue;
        f->cand[from + n] = x;
        __int128 s = f->sz[f->ids[x]];
        f->delta[from + n] = f->a[x] == v ? -s : s; /* starting here lowers the imbalance */
        n++;
    }
    /* Sort the candidates (and their deltas) by size, largest first: the sums prune early. */
    uint32_t *perm = &f->cand[from];
    __int128 *d = &f->delta[from];
    for (uint32_t i = 1; i < n; i++) { /* insertion sort: levels are small */
        uint32_t cx = perm[i];
        __int128 cd = d[i], ad = cd < 0 ? -cd : cd;
        uint32_t j = i;
        for (; j > 0; j--) {
            __int128 pd = d[j - 1] < 0 ? -d[j - 1] : d[j - 1];
            if (pd >= ad)
                break;
            perm[j] = perm[j - 1];
            d[j] = d[j - 1];
        }
        perm[j] = cx;
        d[j] = cd;
    }
    /* Suffix sums live at pos/neg[from + level index .. + n]: one more slot per level. */
    size_t sbase = from + f->nlev - 1;
    f->pos[sbase + n] = f->neg[sbase + n] = 0;
    for (uint32_t i = n; i-- > 0;) {
        f->pos[sbase + i] = f->pos[sbase + i + 1] + (d[i] > 0 ? d[i] : 0);
        f->neg[sbase + i] = f->neg[sbase + i + 1] + (d[i] < 0 ? d[i] : 0);
    }
    f->ncand += n;
    *l = (struct level){v, from, n, (uint32_t)f->ntrail, 0, 0, 1, 0, -f->imb[v]};
}

/* The next subset of the level's candidates whose deltas sum to want (depth first, leaving
 * out before taking: sets stay small); 1 found (in take[]), 0 none left. */
static int next_subset(struct flat *f, struct level *l, uint64_t *steps)
{
    const __int128 *d = &f->delta[l->from];
    size_t sbase = l->from + (size_t)(l - f->lev);
    const __int128 *pos = &f->pos[sbase], *neg = &f->neg[sbase];
    unsigned char *c = &f->take[l->from];
    uint32_t i = l->i;
    __int128 sum = l->sum;
    int back = !l->fresh;
    l->fresh = 0;
    for (;;) {
        (*steps)++;
        if (!back) {
            if (i == l->n) {
                if (sum == l->want) {
                    l->i = i;
                    l->sum = sum;
                    return 1;
                }
                back = 1;
            } else {
                __int128 rest = l->want - sum;
                if (rest > pos[i] || rest < neg[i]) {
                    back = 1;
                } else {
                    c[i] = 0;
                    i++;
                }
            }
            continue;
        }
        /* back: to the deepest candidate left out, and take it instead */
        for (;;) {
            if (i == 0)
                return 0;
            i--;
            if (c[i] == 0) {
                sum += d[i];
                c[i] = 1;
                i++;
                back = 0;
                break;
            }
            sum -= d[i];
        }
    }
}

/* Search a flat proper subset containing buffer `seed`: 1 found (f->st[x] == 1 marks S), 0 none
 * within the steps. */
static int find_flat(struct flat *f, uint32_t seed, uint32_t anti, uint64_t max_steps, uint64_t *steps)
{
    flat_reset(f);
    decide_buffer(f, seed, 1);
    if (anti != seed)
        decide_buffer(f, anti, 0);
    for (;;) {
        if (*steps >= max_steps)
            return 0;
        uint32_t v = pick(f);
        if (v == NONE32 && f->nin < f->k)
            return 1;
        if (v != NONE32 && v != DEAD) {
            push_level(f, v);
        } else if (f->nlev == 0) {
            return 0; /* the seed alone is stuck (or is everything) */
        }
        /* Advance the top level to its next subset, popping exhausted levels. */
        for (;;) {
            if (f->nlev == 0)
                return 0;
            struct level *l = &f->lev[f->nlev - 1];
            if (l->applied) {
                undo_to(f, l->mark);
                l->applied = 0;
            }
            if (next_subset(f, l, steps)) {
                for (uint32_t i = 0; i < l->n; i++)
                    decide_buffer(f, f->cand[l->from + i], f->take[l->from + i]);
                l->applied = 1;
                break;
            }
            f->ncand = l->from;
            f->nlev--;
        }
    }
}

/* ---- solving the parts -------------------------------------------------------------------- */

static int cmp_lower(const void *x, const void *y, void *ctx)
{
    const struct planner *p = ctx;
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    if (p->lo[a] != p->lo[b])
        return p->lo[a] < p->lo[b] ? -1 : 1;
    return (a > b) - (a < b);
}

/* The decision search on ids[0..k) within `level`, offsets from base. 1 solved, 0 not, -1 OOM. */
static int direct(struct strips *s, const uint32_t *ids, size_t k, uint64_t level, uint64_t base, uint64_t nodes)
{
    struct planner sp = {0};
    struct decider *d = NULL;
    uint64_t *off = malloc(k * sizeof *off + 1);
    int rc = -1;
    if (!off || planner_subset(&sp, s->p, ids, k) || decider_new(&d, &sp, s->rng))
        goto out;
    rc = 0;
    for (unsigned c = 0; c < decider_configs() && rc == 0 && !budget_spent(s->bud); c++) {
        enum decision r = decide(d, level, c, nodes, s->bud, off);
        if (r == DECISION_ERROR) {
            rc = -1;
        } else if (r == DECISION_FOUND) {
            for (size_t x = 0; x < k; x++)
                s->off[ids[x]] = base + off[x];
            rc = 1;
        } else if (r == DECISION_INFEASIBLE) {
            break;
        }
    }
out:
    decider_free(d);
    planner_free(&sp);
    free(off);
    return rc;
}

static int solve_set(struct strips *s, uint32_t *ids, size_t k, uint64_t level, uint64_t base, int depth);

static int aligned_from(const struct planner *p, const uint32_t *ids, size_t k, uint64_t base)
{
    for (size_t x = 0; x < k; x++)
        if (base % p->al[ids[x]])
            return 0;
    return 1;
}

/* Seeds in order of size, smallest first (thin strips are made of small buffers and a flat set
 * is found sooner there; ties at random). */
struct seed_item {
    uint64_t sz, tie;
    uint32_t x;
};

static int cmp_seed(const void *x, const void *y)
{
    const struct seed_item *a = x, *b = y;
    if (a->sz != b->sz)
        return a->sz < b->sz ? -1 : 1;
    return (a->tie > b->tie) - (a->tie < b->tie);
}

/* Split the component ids[0..k) (flat at `level`) into a flat set and the rest and solve both:
 * the smallest buffers as seeds, each given a few steps, then more. 1 solved, 0 not, -1 OOM. */
static int split(struct strips *s, uint32_t *ids, size_t k, uint64_t level, uint64_t base, int depth)
{
    struct planner *p = s->p;
    struct flat f;
    uint32_t *mine = malloc(k * sizeof *mine + 1);
    struct seed_item *seeds = malloc(k * sizeof *seeds + 1);
    unsigned char spent[SEEDS] = {0};
    uint32_t pick_seed[SEEDS], pick_anti[SEEDS];
    int rc = -1;
    if (!mine || !seeds)
        goto out;
    memcpy(mine, ids, k * sizeof *ids);
    for (size_t x = 0; x < k; x++)
        seeds[x] = (struct seed_item){p->sz[mine[x]], rng_next(&s->rng), (uint32_t)x};
    qsort(seeds, k, sizeof *seeds, cmp_seed);
    /* Seeds: buffers living through the whole component first (each is a flat set alone), then
     * the smallest and the largest in turn, each kept apart from the other end's extreme. */
    size_t nseeds = 0;
    int64_t first = p->lo[mine[0]], last = p->hi[mine[0]];
    for (size_t x = 1; x < k; x++) {
        first = p->lo[mine[x]] < first ? p->lo[mine[x]] : first;
        last = p->hi[mine[x]] > last ? p->hi[mine[x]] : last;
    }
    for (size_t x = 0; x < k && nseeds < SEEDS / 2; x++)
        if (p->lo[mine[seeds[x].x]] == first && p->hi[mine[seeds[x].x]] == last)
            pick_seed[nseeds] = seeds[x].x, pick_anti[nseeds++] = seeds[x == 0 ? k - 1 : 0].x;
    for (size_t q = 0; nseeds < SEEDS / 4 && q < k; q++) {
        size_t x = q % 2 ? k - 1 - q / 2 : q / 2;
        if (p->lo[mine[seeds[x].x]] == first && p->hi[mine[seeds[x].x]] == last)
            continue;
        pick_seed[nseeds] = seeds[x].x;
        pick_anti[nseeds++] = seeds[q % 2 ? 0 : k - 1].x;
    }
    /* Then buffers at random (a thin strip's buffers need not be the smallest), kept apart from
     * the largest. */
    for (size_t q = 0; nseeds < SEEDS && q < 4 * SEEDS; q++) {
        uint32_t x = seeds[rng_below(&s->rng, k - 1)].x;
        pick_seed[nseeds] = x;
        pick_anti[nseeds++] = seeds[k - 1].x;
    }
    rc = 0;
    /* A first round gives every buffer (in random order, up to QUICK_SEEDS) a few steps: a thin
     * strip is found in a few steps from any of its buffers. Then the chosen seeds get more. */
    uint32_t *perm = malloc(k * sizeof *perm + 1);
    uint64_t failed[FAILED_SETS];
    size_t nfailed = 0;
    int have = 0;
    if (!perm) {
        rc = -1;
        goto out;
    }
    for (size_t x = 0; x < k; x++)
        perm[x] = (uint32_t)x;
    for (size_t x = k; x > 1; x--) {
        size_t y = rng_below(&s->rng, x);
        uint32_t t = perm[x - 1];
        perm[x - 1] = perm[y];
        perm[y] = t;
    }
    for (int round = 0; rc == 0; round++) {
        uint64_t cap_r = round == 0 ? QUICK_STEPS : (uint64_t)FLAT_FIRST_STEPS << (2 * (round - 1));
        size_t n_r = round == 0 ? (k < QUICK_SEEDS ? k : QUICK_SEEDS) : nseeds;
        if (cap_r > FLAT_STEPS)
            break;
        for (size_t q = 0; q < n_r && rc == 0 && !budget_spent(s->bud); q++) {
            uint32_t seed = round == 0 ? perm[q] : pick_seed[q];
            uint32_t anti = round == 0 ? (seed == seeds[k - 1].x ? seeds[0].x : seeds[k - 1].x) : pick_anti[q];
            if (round > 0 && spent[q])
                continue;
            if (!have && flat_init(&f, p, mine, k)) {
                flat_free(&f);
                rc = -1;
                break;
            }
            have = 1;
            uint64_t steps = 0, cap = cap_r;
            if (s->bud->limited && (s->bud->limit - s->bud->used) * BALANCE_STEPS < cap)
                cap = (s->bud->limit - s->bud->used) * BALANCE_STEPS;
            int found = find_flat(&f, seed, anti, cap, &steps);
            s->balanced += steps;
            s->bud->used += s->balanced / BALANCE_STEPS;
            s->balanced %= BALANCE_STEPS;
            if (!found)
                continue;
            if (round > 0)
                spent[q] = 1; /* a seed finds the same set every time */
            /* S first in ids, then the rest; c = the bytes S carries */
            uint64_t c = 0, h = 0;
            size_t nin = 0;
            for (size_t x = 0; x < k; x++)
                if (f.st[x] == 1) {
                    ids[nin++] = mine[x];
                    c += f.a[x] == 0 ? p->sz[mine[x]] : 0;
                    h += rng_next(&(uint64_t){mine[x]});
                }
            for (size_t x = 0, r = nin; x < k; x++)
                if (f.st[x] != 1)
                    ids[r++] = mine[x];
            int seen = 0;
            for (size_t j = 0; j < nfailed && !seen; j++)
                seen = failed[j] == h;
            if (seen || c == 0 || c >= level)
                continue;
            flat_free(&f); /* before going deeper: memory stays linear */
            have = 0;
            /* S below the rest, or the rest below S, whichever keeps the alignments. */
            uint32_t *lowp = ids, *highp = ids + nin;
            size_t nlow = nin, nhigh = k - nin;
            uint64_t lowl = c;
            if (!aligned_from(p, highp, nhigh, base + c)) {
                lowp = ids + nin, nlow = k - nin, highp = ids, nhigh = nin, lowl = level - c;
                if (!aligned_from(p, highp, nhigh, base + lowl))
                    continue;
            }
            rc = solve_set(s, lowp, nlow, lowl, base, depth + 1);
            if (rc == 1)
                rc = solve_set(s, highp, nhigh, level - lowl, base + lowl, depth + 1);
            if (rc == 0 && nfailed < FAILED_SETS)
                failed[nfailed++] = h;
        }
    }
    if (have)
        flat_free(&f);
    free(perm);
    if (rc == 0)
        memcpy(ids, mine, k * sizeof *ids);
out:
    free(mine);
    free(seeds);
    return rc;
}

/* One temporal component whose every section holds `level` bytes, laid out within it from base. */
static int solve_component(struct strips *s, uint32_t *ids, size_t k, uint64_t level, uint64_t base, int depth)
{
    struct planner *p = s->p;
    if (k == 1) {
        s->off[ids[0]] = base;
        return p->sz[ids[0]] <= level;
    }
    if (k <= DIRECT_MAX) {
        int r = direct(s, ids, k, level, base, 4 * (uint64_t)k + 512);
        if (r)
            return r;
    }
    if (depth < DEPTH_MAX) {
        int r = split(s, ids, k, level, base, depth);
        if (r)
            return r;
    }
    if (budget_spent(s->bud))
        return 0;
    return direct(s, ids, k, level, base, 16 * (uint64_t)k + 4096);
}

/* The end of the temporal component that starts at ids[a] (ids sorted by lower). */
static size_t component_end(const struct planner *p, const uint32_t *ids, size_t k, size_t a)
{
    int64_t reach = p->hi[ids[a]];
    size_t e = a + 1;
    for (; e < k && p->lo[ids[e]] < reach; e++)
        reach = p->hi[ids[e]] > reach ? p->hi[ids[e]] : reach;
    return e;
}

/* The buffers ids[0..k), every section of each temporal component holding `level` bytes (the
 * parts of a flat set are flat), laid out within it from base. */
static int solve_set(struct strips *s, uint32_t *ids, size_t k, uint64_t level, uint64_t base, int depth)
{
    qsort_r(ids, k, sizeof *ids, cmp_lower, s->p);
    for (size_t a = 0, e; a < k; a = e) {
        e = component_end(s->p, ids, k, a);
        int r = solve_component(s, ids + a, e - a, level, base, depth);
        if (r != 1)
            return r;
    }
    return 1;
}

/* A lifetime's start (+size) or end (-size). */
struct event {
    int64_t t;
    __int128 d;
};

static int cmp_event(const void *x, const void *y)
{
    const struct event *a = x, *b = y;
    return (a->t > b->t) - (a->t < b->t);
}

/* The 2k events of the buffers ids[0..k) (NULL: all of p), by time; NULL on OOM. */
static struct event *events_of(const struct planner *p, const uint32_t *ids, size_t k)
{
    struct event *ev = malloc(2 * k * sizeof *ev + 1);
    if (!ev)
        return NULL;
    for (size_t x = 0; x < k; x++) {
        uint32_t i = ids ? ids[x] : (uint32_t)x;
        ev[2 * x] = (struct event){p->lo[i], (__int128)p->sz[i]};
        ev[2 * x + 1] = (struct event){p->hi[i], -(__int128)p->sz[i]};
    }
    qsort(ev, 2 * k, sizeof *ev, cmp_event);
    return ev;
}

/* The bytes alive from events ev[*x] on, after all of one time (*t) are applied to *live; the
 * next section starts at ev[*x].t (*x == n: none). */
static void next_section(const struct event *ev, size_t n, size_t *x, int64_t *t, __int128 *live)
{
    *t = ev[*x].t;
    for (; *x < n && ev[*x].t == *t; (*x)++)
        *live += ev[*x].d;
}

/* The load of the component ids[0..k) if it is the same in every section, else 0 (also on OOM). */
static uint64_t flat_level(const struct planner *p, const uint32_t *ids, size_t k)
{
    struct event *ev = events_of(p, ids, k);
    uint64_t level = 0;
    if (!ev)
        return 0;
    __int128 live = 0;
    int flat = 1;
    for (size_t x = 0; x < 2 * k && flat;) {
        int64_t t;
        next_section(ev, 2 * k, &x, &t, &live);
        if (x < 2 * k) {
            if (level == 0)
                level = (uint64_t)live;
            flat = live == (__int128)level;
        }
    }
    free(ev);
    return flat ? level : 0;
}

/* Lay out every temporal component of q at its load. 1 when all are (in off), 0 when one is not
 * solved, 2 when one is not flat (nothing tried), -1 on OOM. */
static int strips_run(struct planner *q, uint64_t *off, uint64_t seed, struct budget *bud)
{
    uint32_t *ids = malloc(q->n * sizeof *ids + 1);
    size_t *ends = malloc(q->n * sizeof *ends + 1), ncomp = 0;
    uint64_t *levels = malloc(q->n * sizeof *levels + 1);
    int rc = -1;
    if (!ids || !ends || !levels)
        goto out;
    for (size_t i = 0; i < q->n; i++)
        ids[i] = (uint32_t)i;
    qsort_r(ids, q->n, sizeof *ids, cmp_lower, q);
    /* All components flat first: a problem that is not costs nothing. */
    rc = 2;
    for (size_t a = 0; a < q->n; a = ends[ncomp++]) {
        ends[ncomp] = component_end(q, ids, q->n, a);
        levels[ncomp] = flat_level(q, ids + a, ends[ncomp] - a);
        if (levels[ncomp] == 0)
            goto out;
    }
    struct strips s = {q, off, bud, seed ^ 0x5157u, 0};
    for (size_t c = 0, a = 0; c < ncomp; a = ends[c++]) {
        rc = solve_component(&s, ids + a, ends[c] - a, levels[c], 0, 0);
        if (rc != 1)
            goto out;
    }
out:
    free(ids);
    free(ends);
    free(levels);
    return rc;
}

/* Problems whose load fills at least this share of capacity x time are padded to flat. */
#define PAD_FILL 0.85

/*
 * A problem that is a perfect packing with pieces taken out: fill every section of every
 * temporal component up to `cap` with filler buffers, built as nested pieces (a filler starts
 * where the free bytes grow and ends, the last started first, where they shrink), so that the
 * padded problem is flat and has a layout within cap when the free bytes of the original's
 * layouts can be cut the same way. The fillers are buffers n.. of *out (alignment 1);
 * *made 0 (out untouched) when the problem fills less than PAD_FILL of cap x time; -1 on OOM.
 */
static int pad_problem(const struct planner *p, uint64_t cap, struct planner *out, int *made)
{
    struct event *ev = events_of(p, NULL, p->n);
    struct ws_plan_buffer *b = NULL;
    struct {
        int64_t t;
        uint64_t sz;
    } *open = NULL;
    uint32_t *map = NULL;
    size_t nb = p->n, bcap = 2 * p->n + 16, nopen = 0;
    int rc = -1;
    *made = 0;
    if (!ev)
        return -1;
    /* How full: the load's area against cap x the components' spans. */
    __int128 live = 0, area = 0, full = 0;
    for (size_t x = 0; x < 2 * p->n;) {
        int64_t t;
        next_section(ev, 2 * p->n, &x, &t, &live);
        if (x < 2 * p->n && live > 0) {
            __int128 len = (__int128)ev[x].t - t;
            area += live * len;
            full += (__int128)cap * len;
        }
    }
    if (full == 0 || (double)area < PAD_FILL * (double)full) {
        rc = 0;
        goto out;
    }
    b = malloc(bcap * sizeof *b);
    open = malloc((2 * p->n + 1) * sizeof *open);
    if (!b || !open)
        goto out;
    for (size_t i = 0; i < p->n; i++)
        b[i] = (struct ws_plan_buffer){i, p->lo[i], p->hi[i], p->sz[i], p->al[i], 0};
    live = 0;
    uint64_t cur = 0; /* bytes of the open fillers */
    for (size_t x = 0; x < 2 * p->n;) {
        int64_t t;
        next_section(ev, 2 * p->n, &x, &t, &live);
        uint64_t want = x < 2 * p->n && live > 0 ? (uint64_t)((__int128)cap - live) : 0;
        while (cur > want) { /* close the last opened, part of it when that is enough */
            uint64_t take = open[nopen - 1].sz <= cur - want ? open[nopen - 1].sz : cur - want;
            if (nb == bcap) {
                struct ws_plan_buffer *nbuf = realloc(b, 2 * bcap * sizeof *b);
                if (!nbuf)
                    goto out;
                b = nbuf, bcap *= 2;
            }
            b[nb] = (struct ws_plan_buffer){nb, open[nopen - 1].t, t, take, 1, 0};
            nb++;
            cur -= take;
            if ((open[nopen - 1].sz -= take) == 0)
                nopen--;
        }
        if (want > cur) {
            open[nopen++].t = t;
            open[nopen - 1].sz = want - cur;
            cur = want;
        }
    }
    map = malloc(nb * sizeof *map + 1);
    if (!map)
        goto out;
    for (size_t i = 0; i < nb; i++)
        map[i] = (uint32_t)i;
    if (planner_init(out, b, map, nb, 1, p->err))
        goto out;
    *made = 1;
    rc = 0;
out:
    free(ev);
    free(b);
    free(open);
    free(map);
    return rc;
}

int strips_solve(struct planner *p, struct best_plan *best, uint64_t lower, uint64_t seed, struct budget *bud,
                 int *solved)
{
    *solved = 0;
    uint64_t *off = malloc(p->n * sizeof *off + 1);
    struct planner q;
    int padded = 0, r = -1;
    if (!off)
        return -1;
    r = strips_run(p, off, seed, bud);
    if (r == 2) {
        /* Not flat: perhaps a perfect packing with pieces taken out, padded. (A flat problem that
         * was not solved pads to itself: not tried again.) */
        r = 0;
        if (pad_problem(p, lower, &q, &padded)) {
            r = -1;
        } else if (padded) {
            uint64_t *qoff = malloc(q.n * sizeof *qoff + 1);
            r = qoff ? strips_run(&q, qoff, seed, bud) : -1;
            if (r == 1)
                memcpy(off, qoff, p->n * sizeof *off);
            free(qoff);
            planner_free(&q);
        }
    }
    if (r == 1) {
        uint64_t peak = 0;
        for (size_t i = 0; i < p->n; i++)
            peak = off[i] + p->sz[i] > peak ? off[i] + p->sz[i] : peak;
        if (peak < best->peak) {
            memcpy(best->off, off, p->n * sizeof *off);
            best->peak = peak;
            best->name = padded ? "strips-padded" : "strips";
            *solved = 1;
        }
    }
    free(off);
    return r < 0 ? -1 : 0;
}
