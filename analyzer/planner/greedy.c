/*
 * Greedy decoders: an order of the buffers plus a rule that chooses each buffer's offset among
 * the gaps left by the placed buffers that meet it in time (best fit or first fit); the
 * portfolio of such decoders that the default runs; and the bottom-up canonical decoder, which
 * always places the unplaced buffer that can sit lowest.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Choose buffer i's offset among the free gaps next to the placed buffers that overlap it in
 * time: the smallest gap that fits (best fit) or the lowest (first fit); above all of them
 * when no gap fits. 0 on success, -1 on OOM. */
struct gap_scan {
    uint64_t size, al, cur, best_gap, best;
    int first_fit, done;
};

/* Feed the next span (by increasing start) to the gap search. */
static inline void gap_step(struct gap_scan *g, const struct span *s)
{
    if (s->a > g->cur && s->a - g->cur >= g->size) {
        uint64_t o;
        round_up(g->cur, g->al, &o); /* cannot overflow: below s->a */
        if (o <= s->a && s->a - o >= g->size && s->a - g->cur < g->best_gap) {
            g->best_gap = s->a - g->cur;
            g->best = o;
            if (g->first_fit || g->best_gap == g->size)
                g->done = 1; /* first fit, or an exact fit: no later gap is chosen */
        }
    }
    if (s->b > g->cur)
        g->cur = s->b;
}

/* Choose buffer i's offset among the free gaps next to the placed buffers that overlap it in
 * time: the smallest gap that fits (best fit) or the lowest (first fit); above all of them
 * when no gap fits. 0 on success, -1 on OOM. */
int place(struct planner *p, size_t i, enum fit fit)
{
    long k = collect_spans(p, i);
    if (k < 0)
        return -1;
    struct gap_scan g = {p->sz[i], p->al[i], 0, UINT64_MAX, UINT64_MAX, fit == FIT_FIRST, 0};
    if (p->use_tree && p->nlists) { /* few runs: merge them on the fly */
        const struct span *head[2 * STREAM_RUNS + 1], *end[2 * STREAM_RUNS + 1];
        size_t r = 0;
        for (size_t x = 0; x < p->nruns; x++, r++) {
            head[r] = &p->seg[p->runs[x]];
            end[r] = &p->seg[x + 1 < p->nruns ? p->runs[x + 1] : (size_t)k];
        }
        for (size_t x = 0; x < p->nlists; x++, r++) {
            head[r] = p->lists[x]->v;
            end[r] = p->lists[x]->v + p->lists[x]->n;
        }
        while (r == 2 && !g.done) { /* the common case: one list and one filtered block */
            size_t m = head[1]->a < head[0]->a;
            gap_step(&g, head[m]);
            if (++head[m] == end[m]) {
                head[m] = head[1];
                end[m] = end[--r];
            }
        }
        if (r == 1)
            for (const struct span *x = head[0]; x < end[0] && !g.done; x++)
                gap_step(&g, x);
        else
            while (r && !g.done) {
                size_t m = 0;
                for (size_t x = 1; x < r; x++)
                    if (head[x]->a < head[m]->a)
                        m = x;
                gap_step(&g, head[m]);
                if (++head[m] == end[m]) {
                    head[m] = head[r - 1];
                    end[m] = end[--r];
                }
            }
    } else {
        sort_spans(p, (size_t)k);
        for (long x = 0; x < k && !g.done; x++)
            gap_step(&g, &p->seg[x]);
    }
    uint64_t end;
    if (g.best == UINT64_MAX && round_up(g.cur, g.al, &g.best))
        g.best = UINT64_MAX;
    if (g.best == UINT64_MAX || __builtin_add_overflow(g.best, p->sz[i], &end)) {
        /* Only the sum of the sizes meeting i bounds its offset, not the peak: a layout whose
         * ends do not fit in 64 bits is marked and never kept. */
        p->overflow = 1;
        g.best = 0;
    }
    p->off[i] = g.best;
    p->placed[i] = 1;
    return 0;
}

/* Place every buffer in the given order; returns the peak, UINT64_MAX on OOM. */
uint64_t decode(struct planner *p, const uint32_t *order, enum fit fit)
{
    memset(p->placed, 0, p->n);
    p->use_tree = p->tree != NULL;
    if (p->use_tree)
        union_tree_clear(p->tree);
    uint64_t peak = 0;
    p->overflow = 0;
    for (size_t k = 0; k < p->n; k++) {
        uint32_t i = order[k];
        if (p->overflow)
            return PEAK_OVERFLOW;
        if ((k & 1023) == 0 && ((p->stop && atomic_load(p->stop) < p->index) || (p->abandon > 0 && now_s() >= p->abandon)))
            return UINT64_MAX - 1; /* an earlier decoder reached the load bound, or time is up */
        if (place(p, i, fit))
            return UINT64_MAX;
        if (p->use_tree && p->sz[i] && union_tree_insert(p->tree, i, (struct span){p->off[i], p->off[i] + p->sz[i]}))
            return UINT64_MAX;
        if (p->off[i] + p->sz[i] > peak)
            peak = p->off[i] + p->sz[i];
    }
    return p->overflow ? PEAK_OVERFLOW : peak;
}

/* For every buffer, the largest load over its lifetime ("breadth"), for the breadth-first
 * order: a buffer that lives through the busiest moment constrains the peak most. */
int breadth_of(const struct planner *p, uint64_t *breadth)
{
    size_t n = p->n, m = 0;
    int64_t *times = malloc(2 * n * sizeof *times + 1);
    uint64_t *delta = NULL, *tree = NULL;
    int rc = -1;
    if (!times)
        goto out;
    for (size_t i = 0; i < n; i++) {
        times[m++] = p->lo[i];
        times[m++] = p->hi[i];
    }
    uint64_t(*tmp)[2] = malloc(m * sizeof *tmp + 1);
    if (!tmp)
        goto out;
    for (size_t k = 0; k < m; k++)
        tmp[k][0] = (uint64_t)times[k] ^ (1ull << 63), tmp[k][1] = 0;
    if (radix_sort_words(&tmp[0][0], m, 2, 0)) {
        free(tmp);
        goto out;
    }
    size_t u = 0;
    for (size_t k = 0; k < m; k++)
        if (u == 0 || tmp[k][0] != tmp[u - 1][0])
            tmp[u++][0] = tmp[k][0];
    for (size_t k = 0; k < u; k++)
        times[k] = (int64_t)(tmp[k][0] ^ (1ull << 63));
    free(tmp);
    size_t leaves = 1;
    while (leaves < u)
        leaves *= 2;
    delta = calloc(u + 1, sizeof *delta);
    tree = calloc(2 * leaves, sizeof *tree);
    if (!delta || !tree)
        goto out;
    for (size_t i = 0; i < n; i++) { /* differences; unsigned wrap-around cancels exactly */
        delta[first_at_or_after(times, u, p->lo[i])] += p->sz[i];
        delta[first_at_or_after(times, u, p->hi[i])] -= p->sz[i];
    }
    uint64_t live = 0;
    for (size_t k = 0; k < u; k++)
        tree[leaves + k] = live += delta[k];
    for (size_t k = leaves - 1; k >= 1; k--)
        tree[k] = tree[2 * k] > tree[2 * k + 1] ? tree[2 * k] : tree[2 * k + 1];
    for (size_t i = 0; i < n; i++) {
        size_t a = first_at_or_after(times, u, p->lo[i]) + leaves;
        size_t b = first_at_or_after(times, u, p->hi[i]) + leaves; /* query [a, b) */
        uint64_t best = 0;
        for (; a < b; a /= 2, b /= 2) {
            if (a & 1)
                best = tree[a] > best ? tree[a] : best, a++;
            if (b & 1)
                b--, best = tree[b] > best ? tree[b] : best;
        }
        breadth[i] = best;
    }
    rc = 0;
out:
    free(times);
    free(delta);
    free(tree);
    return rc;
}

/* ---- orders ------------------------------------------------------------------------------- */

static uint64_t saturating_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* Key word w (0 primary, 1, 2) of buffer i in an order, as an unsigned value sorted ascending:
 * the first two keys are wanted descending (complemented), the third ascending. */
static uint64_t order_word(const struct planner *p, enum order_kind kind, const uint64_t *breadth, int64_t latest,
                           int w, size_t i)
{
    uint64_t len = lifetime_length(p->lo[i], p->hi[i]), start = (uint64_t)p->lo[i] ^ (1ull << 63), k[3];
    switch (kind) {
    case ORDER_SIZE: k[0] = p->sz[i], k[1] = len, k[2] = start; break;
    case ORDER_BREADTH: k[0] = breadth[i], k[1] = p->sz[i], k[2] = start; break;
    case ORDER_START: /* by increasing start (the distance to the latest start, so that the
                       * search's noise moves a buffer among those starting near it), then
                       * longer, then larger */
        k[0] = (uint64_t)latest - (uint64_t)p->lo[i], k[1] = len, k[2] = p->sz[i];
        break;
    case ORDER_LENGTH: k[0] = len, k[1] = p->sz[i], k[2] = start; break;
    default: k[0] = saturating_mul(len, p->sz[i]), k[1] = p->sz[i], k[2] = start; break;
    }
    return w < 2 ? ~k[w] : k[w];
}

/* noise > 0 scales each primary key by a random factor in (1 - noise, 1]: nearby orders that
 * the search samples. The order is k1 and k2 descending, k3 ascending, then index: stable radix
 * passes on (key, index) pairs from the last key to the first, starting from index order (16
 * bytes a buffer and as much scratch, whatever the order). */
int make_order(const struct planner *p, enum order_kind kind, const uint64_t *breadth, double noise, uint64_t *rng,
               uint32_t *order)
{
    size_t n = p->n;
    uint64_t(*a)[2] = malloc(n * sizeof *a + 1), *noisy = NULL;
    int rc = -1;
    if (!a)
        return -1;
    int64_t latest = INT64_MIN;
    for (size_t i = 0; i < n; i++)
        latest = p->lo[i] > latest ? p->lo[i] : latest;
    if (noise > 0) { /* drawn in index order, so that a seed gives the same orders */
        if (!(noisy = malloc(n * sizeof *noisy + 1)))
            goto out;
        for (size_t i = 0; i < n; i++) {
            uint64_t k1 = ~order_word(p, kind, breadth, latest, 0, i);
            noisy[i] = ~(uint64_t)((double)k1 * (1.0 - noise * (double)(rng_next(rng) >> 11) * 0x1p-53));
        }
    }
    for (int w = 2; w >= 0; w--) {
        for (size_t x = 0; x < n; x++) {
            size_t i = w == 2 ? x : (size_t)a[x][1];
            a[x][0] = w == 0 && noisy ? noisy[i] : order_word(p, kind, breadth, latest, w, i);
            a[x][1] = i;
        }
        if (radix_sort_words(&a[0][0], n, 2, 0))
            goto out;
    }
    for (size_t x = 0; x < n; x++)
        order[x] = (uint32_t)a[x][1];
    rc = 0;
out:
    free(a);
    free(noisy);
    return rc;
}

/* ---- the portfolio ------------------------------------------------------------------------ */

/* The portfolio includes the reference, best-fit by decreasing size, and keeps the smallest
 * peak, so the default is never worse than the reference; it stops early only at the load
 * bound, which nothing beats. Breadth-first comes first because it most often reaches it. */
const struct heuristic ws_portfolio[] = {
    {ORDER_BREADTH, FIT_BEST, "best-fit-breadth"},
    {ORDER_SIZE, FIT_BEST, "best-fit-decreasing-size"},
    {ORDER_SIZE, FIT_FIRST, "first-fit-decreasing-size"},
    {ORDER_AREA, FIT_BEST, "best-fit-decreasing-area"},
    {ORDER_LENGTH, FIT_BEST, "best-fit-decreasing-lifetime"},
    {ORDER_START, FIT_FIRST, "first-fit-by-start"},
    {ORDER_START, FIT_BEST, "best-fit-by-start"},
};
const size_t ws_portfolio_count = sizeof ws_portfolio / sizeof ws_portfolio[0];
#define PORTFOLIO_MAX 16

int try_order(struct planner *p, const uint32_t *order, enum fit fit, const char *name, struct best_plan *best)
{
    uint64_t peak = decode(p, order, fit);
    if (peak == UINT64_MAX)
        return -1;
    if (peak < best->peak) {
        best->peak = peak;
        best->name = name;
        memcpy(best->off, p->off, p->n * sizeof *best->off);
    }
    return 0;
}

/* A worker's own copy of the planner's mutable state (offsets, scratch, the tree's lists); the
 * buffers, the time classes, the tree's segment ranges and part lists are shared read-only. */
static int worker_init(struct planner *w, const struct planner *p)
{
    *w = *p;
    w->off = calloc(p->n + 1, sizeof *w->off);
    w->placed = calloc(p->n + 1, 1);
    w->seg = w->tmp = NULL;
    w->segcap = 0;
    w->runs = NULL;
    w->nruns = w->runcap = 0;
    w->lists = NULL;
    w->nlists = w->listcap = 0;
    w->tree = NULL;
    if (p->tree && union_tree_clone(&w->tree, p->tree))
        return -1;
    return w->off && w->placed ? 0 : -1;
}

static void worker_free(struct planner *w)
{
    free(w->off);
    free(w->placed);
    free(w->seg);
    free(w->tmp);
    free(w->runs);
    free(w->lists);
    union_tree_free_clone(w->tree);
}

/* The portfolio runs on up to two threads, each taking every other decoder with its own working
 * state; the layouts are then compared in portfolio order, so the result is the same as a
 * sequential run. A worker skips the decoders after one that reached the load bound. */
struct portfolio_run {
    struct planner *p;
    const uint64_t *breadth;
    const size_t *which; /* decoder indices into ws_portfolio[] */
    size_t count;
    uint64_t *peak;     /* per entry of which */
    uint64_t **off;     /* per entry of which */
    atomic_size_t done; /* smallest entry that reached the load bound */
    atomic_int failed;
    double deadline; /* after it, only the first two decoders (which include the reference) start */
    double abandon;  /* with a layout in hand already: every decoder gives up at this time */
};

struct portfolio_worker {
    struct portfolio_run *run;
    size_t first, step;
};

static void *portfolio_worker(void *arg)
{
    struct portfolio_worker *pw = arg;
    struct portfolio_run *run = pw->run;
    struct planner w;
    uint32_t *order = malloc(run->p->n * sizeof *order + 1);
    if (!order || worker_init(&w, run->p)) {
        atomic_store(&run->failed, 1);
        if (order)
            worker_free(&w);
        free(order);
        return NULL;
    }
    for (size_t e = pw->first; e < run->count && !atomic_load(&run->failed); e += pw->step) {
        if (e > atomic_load(&run->done) || (e >= 2 && run->deadline > 0 && now_s() >= run->deadline) ||
            (run->abandon > 0 && now_s() >= run->abandon))
            break;
        const struct heuristic *h = &ws_portfolio[run->which[e]];
        uint64_t peak;
        w.stop = &run->done;
        w.index = e;
        w.abandon = run->abandon;
        if (make_order(&w, h->order, run->breadth, 0, NULL, order) ||
            (peak = decode(&w, order, h->fit)) == UINT64_MAX) {
            atomic_store(&run->failed, 1);
            break;
        }
        if (peak == UINT64_MAX - 1)
            break; /* abandoned: not needed */
        run->peak[e] = peak;
        memcpy(run->off[e], w.off, w.n * sizeof *w.off);
        if (peak <= w.lb) {
            size_t d = atomic_load(&run->done);
            while (e < d && !atomic_compare_exchange_weak(&run->done, &d, e))
                ;
        }
    }
    worker_free(&w);
    free(order);
    return NULL;
}

int run_portfolio(struct planner *p, const uint64_t *breadth, double start_by, double deadline, int abandon,
                  struct best_plan *best)
{
    size_t which[PORTFOLIO_MAX], count = 0;
    for (size_t h = 0; h < ws_portfolio_count; h++)
        if (p->n <= LARGE_PROBLEM || ws_portfolio[h].order == ORDER_SIZE)
            which[count++] = h;
    uint64_t peak[PORTFOLIO_MAX];
    uint64_t *off[PORTFOLIO_MAX] = {0};
    struct portfolio_run run = {p, breadth, which, count, peak, off, SIZE_MAX, 0, start_by, abandon ? deadline : 0};
    int rc = -1;
    for (size_t e = 0; e < count; e++) {
        peak[e] = UINT64_MAX;
        if (!(off[e] = malloc(p->n * sizeof *off[e] + 1)))
            goto out;
    }
    size_t threads = count > 1 && p->n >= 2000 ? 2 : 1;
    struct portfolio_worker pw[2] = {{&run, 0, threads}, {&run, 1, threads}};
    pthread_t tid;
    int started = threads == 2 && pthread_create(&tid, NULL, portfolio_worker, &pw[1]) == 0;
    if (threads == 2 && !started)
        pw[0].step = 1; /* no second thread: do everything here */
    portfolio_worker(&pw[0]);
    if (started)
        pthread_join(tid, NULL);
    if (atomic_load(&run.failed))
        goto out;
    size_t done = atomic_load(&run.done);
    for (size_t e = 0; e < count && e <= done; e++)
        if (peak[e] < best->peak) {
            best->peak = peak[e];
            best->name = ws_portfolio[which[e]].name;
            memcpy(best->off, off[e], p->n * sizeof *best->off);
        }
    rc = 0;
out:
    for (size_t e = 0; e < count; e++)
        free(off[e]);
    return rc;
}

/* ---- the sweep ---------------------------------------------------------------------------- */

/* The live buffers in address order: a doubly linked list of slots (at most SWEEP_LIVE_MAX),
 * slot 0 the head and tail sentinel. */
struct live_slot {
    uint64_t a, b;
    uint32_t next, prev;
};

/* Min-heap of live buffers by end. */
static void end_heap_down(const struct planner *p, uint32_t *h, size_t n, size_t i)
{
    uint32_t v = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && p->hi[h[c + 1]] < p->hi[h[c]])
            c++;
        if (p->hi[h[c]] >= p->hi[v])
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
}

int sweep_decode(struct planner *p, struct best_plan *best)
{
    size_t n = p->n, nheap = 0;
    uint64_t(*by_lo)[2] = malloc(n * sizeof *by_lo + 1);
    struct live_slot *slot = malloc((SWEEP_LIVE_MAX + 1) * sizeof *slot);
    uint32_t *heap = malloc(SWEEP_LIVE_MAX * sizeof *heap), *slot_of = malloc(n * sizeof *slot_of + 1);
    uint32_t *free_slots = malloc(SWEEP_LIVE_MAX * sizeof *free_slots), nfree = SWEEP_LIVE_MAX;
    int rc = -1;
    if (!by_lo || !slot || !heap || !slot_of || !free_slots)
        goto out;
    for (uint32_t x = 0; x < SWEEP_LIVE_MAX; x++)
        free_slots[x] = SWEEP_LIVE_MAX - x;
    slot[0] = (struct live_slot){0, 0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        by_lo[i][0] = (uint64_t)p->lo[i] ^ (1ull << 63);
        by_lo[i][1] = i;
    }
    if (radix_sort_words(&by_lo[0][0], n, 2, 0))
        goto out;
    uint64_t peak = 0;
    rc = 1;
    for (size_t k = 0; k < n; k++) {
        uint32_t i = (uint32_t)by_lo[k][1];
        while (nheap && p->hi[heap[0]] <= p->lo[i]) { /* the buffers that ended */
            uint32_t s = slot_of[heap[0]];
            heap[0] = heap[--nheap];
            end_heap_down(p, heap, nheap, 0);
            slot[slot[s].prev].next = slot[s].next;
            slot[slot[s].next].prev = slot[s].prev;
            free_slots[nfree++] = s;
        }
        if (nfree == 0)
            goto out; /* too dense for the list */
        uint64_t cur = 0, o = 0, end;
        uint32_t x = slot[0].next;
        for (; x != 0; x = slot[x].next) { /* the lowest gap that fits, by address */
            if (round_up(cur, p->al[i], &o))
                goto out; /* ends beyond 64 bits: leave it to the decoders */
            if (o <= slot[x].a && slot[x].a - o >= p->sz[i])
                break;
            cur = slot[x].b > cur ? slot[x].b : cur;
        }
        if ((x == 0 && round_up(cur, p->al[i], &o)) || __builtin_add_overflow(o, p->sz[i], &end))
            goto out;
        uint32_t s = free_slots[--nfree]; /* before x (0: at the end) */
        slot[s] = (struct live_slot){o, end, x, slot[x].prev};
        slot[slot[x].prev].next = s;
        slot[x].prev = s;
        slot_of[i] = s;
        p->off[i] = o;
        peak = end > peak ? end : peak;
        size_t h = nheap++;
        for (; h > 0 && p->hi[heap[(h - 1) / 2]] > p->hi[i]; h = (h - 1) / 2)
            heap[h] = heap[(h - 1) / 2];
        heap[h] = i;
    }
    if (peak < best->peak) {
        best->peak = peak;
        best->name = "first-fit-sweep";
        memcpy(best->off, p->off, n * sizeof *best->off);
    }
    rc = 0;
out:
    free(by_lo);
    free(slot);
    free(heap);
    free(slot_of);
    free(free_slots);
    return rc;
}

/* ---- the bottom-up canonical decoder ------------------------------------------------------ */

/*
 * Always place the unplaced buffer that can sit lowest: its floor is the top of the highest
 * placed buffer meeting it (rounded up to its alignment), ties going to the earlier start and then
 * the broader buffer. The layout is built bottom-up the way the decision search builds canonical
 * layouts, without its capacity and backtracking. A min-heap on (floor, lower, rank); placing a
 * buffer raises the floors of the unplaced buffers meeting it.
 */
struct canon {
    struct planner *p;
    uint64_t *floor, *rank;
    uint32_t *heap, *pos;
    size_t n;
    uint64_t top;
};

static int canon_before(const struct canon *c, uint32_t a, uint32_t b)
{
    const struct planner *p = c->p;
    if (c->floor[a] != c->floor[b])
        return c->floor[a] < c->floor[b];
    if (p->lo[a] != p->lo[b])
        return p->lo[a] < p->lo[b];
    return c->rank[a] < c->rank[b];
}

static void canon_down(struct canon *c, size_t i)
{
    uint32_t v = c->heap[i];
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= c->n)
            break;
        if (k + 1 < c->n && canon_before(c, c->heap[k + 1], c->heap[k]))
            k++;
        if (!canon_before(c, c->heap[k], v))
            break;
        c->heap[i] = c->heap[k];
        c->pos[c->heap[i]] = (uint32_t)i;
        i = k;
    }
    c->heap[i] = v;
    c->pos[v] = (uint32_t)i;
}

static int canon_raise(void *ctx, uint32_t j)
{
    struct canon *c = ctx;
    struct planner *p = c->p;
    if (p->placed[j])
        return 0;
    uint64_t f;
    if (round_up(c->top, p->al[j], &f)) {
        p->overflow = 1;
        return 1;
    }
    if (f > c->floor[j]) {
        c->floor[j] = f; /* only grows: sift down */
        canon_down(c, c->pos[j]);
    }
    return 0;
}

int canonical_decode(struct planner *p, const uint64_t *breadth, struct best_plan *best)
{
    if (p->tree)
        return 0; /* dense: every placement would touch thousands of floors */
    struct canon c = {p,
                      calloc(p->n + 1, sizeof *c.floor),
                      malloc(p->n * sizeof *c.rank + 1),
                      malloc(p->n * sizeof *c.heap + 1),
                      malloc(p->n * sizeof *c.pos + 1),
                      0,
                      0};
    uint32_t *order = malloc(p->n * sizeof *order + 1);
    int rc = -1;
    if (!c.floor || !c.rank || !c.heap || !c.pos || !order || make_order(p, ORDER_BREADTH, breadth, 0, NULL, order))
        goto out;
    for (size_t k = 0; k < p->n; k++)
        c.rank[order[k]] = k;
    memset(p->placed, 0, p->n);
    p->overflow = 0;
    for (size_t k = 0; k < p->n; k++) {
        c.heap[k] = order[k]; /* all floors 0: rank order is a heap already (ties on lower aside) */
        c.pos[order[k]] = (uint32_t)k;
    }
    c.n = p->n;
    for (size_t k = p->n / 2; k-- > 0;)
        canon_down(&c, k);
    uint64_t peak = 0;
    while (c.n && !p->overflow) {
        uint32_t y = c.heap[0];
        c.heap[0] = c.heap[--c.n];
        c.pos[c.heap[0]] = 0;
        if (c.n)
            canon_down(&c, 0);
        p->placed[y] = 1;
        p->off[y] = c.floor[y];
        if (__builtin_add_overflow(c.floor[y], p->sz[y], &c.top)) {
            p->overflow = 1;
            break;
        }
        peak = c.top > peak ? c.top : peak;
        for_each_overlap(p, p->lo[y], p->hi[y], y, canon_raise, &c);
    }
    if (!p->overflow && peak < best->peak) {
        best->peak = peak;
        best->name = "canonical-bottom-up";
        memcpy(best->off, p->off, p->n * sizeof *best->off);
    }
    p->overflow = 0;
    rc = 0;
out:
    free(c.floor);
    free(c.rank);
    free(c.heap);
    free(c.pos);
    free(order);
    return rc;
}
