/*
 * The decision search: is there a layout whose peak is at most a capacity C? A complete
 * depth-first search over canonical layouts, with a node limit, that answers FOUND (with a
 * layout), INFEASIBLE (proven: no layout within C exists) or ABORTED.
 *
 * Canonical layouts. Push every buffer of a layout down as far as it goes (its offset becomes the
 * lowest aligned address above every buffer below it that meets it in time): the peak does not
 * grow, and afterwards each buffer sits at its *floor*, the top of the highest placed buffer that
 * meets it, rounded up to its alignment. Sorted by (offset, key2) such a layout is built by placing
 * buffers at non-decreasing offsets, each at its floor at the time. The search enumerates exactly
 * these sequences: the next buffer's (floor, key2) must exceed the last one's, where key2 is the
 * buffer's start section and then a static rank (configurations "by start": a level is filled
 * left to right), or the rank alone (configurations "by rank"). Every layout of peak <= C has a
 * canonical form, so exhausting the tree proves that none exists.
 *
 * State, kept incrementally and undone on backtracking (no copies, memory linear in the buffers
 * and sections):
 *  - the skyline T[s] of every section (elementary interval between consecutive distinct
 *    lower/upper values): the top of the last buffer placed in it, in a max segment tree with
 *    lazy raises and an undo trail; a buffer's floor is the maximum of T over its sections;
 *  - rem[s], the bytes of the unplaced buffers alive in section s, in a max segment tree with
 *    range additions (undone by adding back);
 *  - three indexed binary heaps over the unplaced buffers: the candidates (key above the last
 *    placed one's, by smallest key), the stuck ones (key at or below it: they can only be placed
 *    after something raises their floor; by largest key), and all of them by floor + size.
 *
 * Pruning (all sound, so INFEASIBLE is a proof):
 *  - dominance: a buffer placed at f while an unplaced buffer could end at or below f (floor +
 *    size <= f) is not canonical: that one could be pushed down below it;
 *  - per-section inference: after placing a buffer with top t, t + rem[s] <= C in its sections;
 *    before opening a level f, f + rem[s] <= C in every section;
 *  - tight points: a section with rem[s] = C - f at level f must be covered at exactly f, so the
 *    search cannot leave level f before, and (by start) cannot move right past it;
 *  - twins (buffers of one lifetime and alignment): a buffer directly on a twin of higher rank is
 *    not searched (the two swapped are);
 *  - valleys (every section holds exactly C): sections of one height between higher neighbours
 *    are filled up to the lower neighbour only by buffers living within them;
 *  - failed states: a table keyed by a hash of the placed buffers with their offsets (without
 *    slack, the offsets only of buffers with twins: the placed set fixes the rest) and the last
 *    key remembers the largest capacity at which the subtree was exhausted (a failure at C is a
 *    failure at every smaller capacity), across calls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define NONE UINT32_MAX

/* Problems whose sections hold at most this many (buffer, section) pairs in all get the section
 * floors checked at every node. */
#define SECTION_LIST_MAX 65536

/* At most this many floor changes are remembered along one path (16 bytes each); a longer path
 * ends the call as if out of memory, and the caller keeps its layout. */
#define FLOOR_TRAIL_MAX (1u << 23)

enum heap_kind { HEAP_CAND, HEAP_STUCK, HEAP_HEIGHT, HEAPS };

struct heap {
    uint32_t *v;   /* buffer ids */
    uint32_t *pos; /* per buffer: index in v, NONE when not in this heap */
    size_t n;
};

struct floor_change {
    uint32_t c;
    uint64_t floor;
};

struct frame {
    uint64_t thr_f, thr_k; /* candidates must have (floor, key2) above this */
    uint64_t level;        /* offset of the buffer the parent placed (the current level) */
    uint32_t from;         /* tight points are looked for from this section on */
    uint32_t y;            /* the child being tried */
    uint64_t hash;         /* state at entry */
    size_t fmark;          /* floor trail before y was placed */
};

struct config {
    int by_start; /* key2 = (start section, rank), else rank */
    int order;    /* static rank: 0 longest first, 1 largest first, 2 broadest first */
};

static const struct config configs[] = {
    {1, 0},
    {0, 2},
    {1, 1},
    {0, 1},
};
#define NCONFIGS (sizeof configs / sizeof configs[0])

struct decider {
    const struct planner *p;
    size_t n, m, leaves;
    uint32_t *s0, *s1; /* per buffer: section range */
    uint64_t *breadth; /* per buffer: largest load over its sections */
    uint64_t *key2;    /* per buffer, for the current configuration */
    uint64_t *rank[NCONFIGS];
    uint64_t *floor, *off, *zob;
    /* Lazy heap keys: the floor (candidates) and the floor + size (all) each buffer had when it
     * was last put in order in those heaps; at most its present value (floors only rise on the
     * way down). A raise leaves the heaps alone; an entry is put right when it reaches the top or
     * when backtracking lowers its floor below its key. */
    uint64_t *cand_key, *height_key;
    /* Per lazy heap (HEAP_CAND, HEAP_HEIGHT): floors raised in it since it was last rebuilt, at
     * least the entries whose keys are behind. One placement in a dense window raises the floors
     * of every unplaced buffer, and sinking each stale entry as it reaches the top costs
     * O(k log n); past n / 4 of them a rebuild with exact keys (O(n)) is cheaper. Keys are total
     * orders, so the top, and the search, are the same either way. */
    size_t stale[HEAPS];
    unsigned char *placed;
    size_t left;
    struct heap heap[HEAPS];
    /* remaining bytes tree (range add) */
    __int128 *r_add, *r_mx;
    uint64_t *load; /* per section: initial load */
    struct frame *frames;
    uint64_t hash, capacity;
    uint64_t set_hash; /* of the placed buffers, with the offsets only of those that have twins */
    unsigned cfg;
    /* failed states */
    uint64_t *fail_key, *fail_cap;
    size_t fail_mask;
    /* small problems: the buffers alive in each section, for the section floors */
    uint32_t *sec_start, *sec_list;
    uint64_t *rem_flat;           /* rem[s] per section, kept beside the tree when the lists exist */
    uint32_t aff_lo, aff_hi;      /* sections whose floors or bytes the last placement changed */
    uint32_t *st_start, *st_list; /* small problems: the buffers starting in each section */
    unsigned char *reach;         /* scratch of runs_tile, per section + 1 */
    uint64_t min_load;            /* smallest initial load of a section */
    const uint64_t *base, *ceil;  /* repairs: per buffer, the lowest offset and the highest end the
                                   * buffers kept in place leave it (NULL: 0 and the capacity) */
    uint32_t *twin;               /* per buffer: the next buffer of the same lifetime (a cycle;
                                   * itself when it has none) */
    struct floor_change *ftrail;  /* floors raised by the placements on the current path */
    size_t nftrail, ftrailcap;
};

unsigned decider_configs(void) { return NCONFIGS; }

/* Small problems (the section lists exist) in which every section holds exactly C bytes, without
 * bounds: no layout within C leaves a free byte below C anywhere (a rectangle cut into pieces).
 * The runs, the valleys and the failed-state keys by placed set hold only there. */
static int exact_fill(const struct decider *d) { return d->st_start && d->min_load == d->capacity && !d->base; }

void decider_bound(struct decider *d, const uint64_t *base, const uint64_t *ceil)
{
    d->base = base;
    d->ceil = ceil;
}

/* ---- keys and heaps ----------------------------------------------------------------------- */

static inline int key_less(const struct decider *d, uint32_t a, uint32_t b)
{
    if (d->floor[a] != d->floor[b])
        return d->floor[a] < d->floor[b];
    return d->key2[a] < d->key2[b];
}

static inline uint64_t height_of(const struct decider *d, uint32_t a)
{
    uint64_t h;
    return __builtin_add_overflow(d->floor[a], d->p->sz[a], &h) ? UINT64_MAX : h;
}

/* a goes before b in heap k */
static inline int heap_before(const struct decider *d, int k, uint32_t a, uint32_t b)
{
    switch (k) {
    case HEAP_CAND:
        if (d->cand_key[a] != d->cand_key[b])
            return d->cand_key[a] < d->cand_key[b];
        return d->key2[a] < d->key2[b];
    case HEAP_STUCK: return key_less(d, b, a);
    default: {
        uint64_t ha = d->height_key[a], hb = d->height_key[b];
        return ha != hb ? ha < hb : a < b;
    }
    }
}

static void heap_set(struct heap *h, size_t i, uint32_t v)
{
    h->v[i] = v;
    h->pos[v] = (uint32_t)i;
}

static void heap_up(struct decider *d, int k, size_t i)
{
    struct heap *h = &d->heap[k];
    uint32_t v = h->v[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!heap_before(d, k, v, h->v[parent]))
            break;
        heap_set(h, i, h->v[parent]);
        i = parent;
    }
    heap_set(h, i, v);
}

static void heap_down(struct decider *d, int k, size_t i)
{
    struct heap *h = &d->heap[k];
    uint32_t v = h->v[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && heap_before(d, k, h->v[c + 1], h->v[c]))
            c++;
        if (!heap_before(d, k, h->v[c], v))
            break;
        heap_set(h, i, h->v[c]);
        i = c;
    }
    heap_set(h, i, v);
}

static void heap_push(struct decider *d, int k, uint32_t v)
{
    struct heap *h = &d->heap[k];
    if (k == HEAP_CAND)
        d->cand_key[v] = d->floor[v];
    else if (k == HEAP_HEIGHT)
        d->height_key[v] = height_of(d, v);
    heap_set(h, h->n++, v);
    heap_up(d, k, h->n - 1);
}

static void heap_remove(struct decider *d, int k, uint32_t v)
{
    struct heap *h = &d->heap[k];
    size_t i = h->pos[v];
    h->pos[v] = NONE;
    uint32_t last = h->v[--h->n];
    if (i == h->n)
        return;
    heap_set(h, i, last);
    heap_up(d, k, i);
    heap_down(d, k, h->pos[last]);
}

/* Buffer v's floor rose: the stuck heap is kept exact (its order decides which buffers become
 * candidates); the others keep their lazy keys. */
static void floor_raised(struct decider *d, uint32_t v)
{
    if (d->heap[HEAP_STUCK].pos[v] != NONE)
        heap_up(d, HEAP_STUCK, d->heap[HEAP_STUCK].pos[v]);
}

/* Buffer v's floor was lowered (backtracking): a lazy key above it is lowered too. */
static void floor_lowered(struct decider *d, uint32_t v)
{
    if (d->heap[HEAP_STUCK].pos[v] != NONE) {
        heap_down(d, HEAP_STUCK, d->heap[HEAP_STUCK].pos[v]);
    } else if (d->heap[HEAP_CAND].pos[v] != NONE && d->cand_key[v] > d->floor[v]) {
        d->cand_key[v] = d->floor[v];
        heap_up(d, HEAP_CAND, d->heap[HEAP_CAND].pos[v]);
    }
    uint64_t h = height_of(d, v);
    if (d->heap[HEAP_HEIGHT].pos[v] != NONE && d->height_key[v] > h) {
        d->height_key[v] = h;
        heap_up(d, HEAP_HEIGHT, d->heap[HEAP_HEIGHT].pos[v]);
    }
}

/* The top of a lazy heap, its key made exact: an entry whose key is behind sinks and the next
 * one is looked at. NONE when empty. */
static uint32_t lazy_top(struct decider *d, int k)
{
    struct heap *h = &d->heap[k];
    if (d->stale[k] > 16 && d->stale[k] > h->n / 4) {
        uint64_t *key = k == HEAP_CAND ? d->cand_key : d->height_key;
        for (size_t i = 0; i < h->n; i++) {
            uint32_t v = h->v[i];
            key[v] = k == HEAP_CAND ? d->floor[v] : height_of(d, v);
        }
        for (size_t i = h->n / 2; i-- > 0;)
            heap_down(d, k, i);
        d->stale[k] = 0;
    }
    while (h->n) {
        uint32_t v = h->v[0];
        uint64_t *key = k == HEAP_CAND ? d->cand_key : d->height_key;
        uint64_t now = k == HEAP_CAND ? d->floor[v] : height_of(d, v);
        if (key[v] == now)
            return v;
        key[v] = now;
        heap_down(d, k, 0);
    }
    return NONE;
}

static inline int key_at_most(const struct decider *d, uint32_t v, uint64_t f, uint64_t k)
{
    return d->floor[v] < f || (d->floor[v] == f && d->key2[v] <= k);
}

/* Candidates are the unplaced buffers with a key above (f, k); the others are stuck. */
static void rebalance(struct decider *d, uint64_t f, uint64_t k)
{
    struct heap *s = &d->heap[HEAP_STUCK];
    uint32_t v;
    while ((v = lazy_top(d, HEAP_CAND)) != NONE && key_at_most(d, v, f, k)) {
        heap_remove(d, HEAP_CAND, v);
        heap_push(d, HEAP_STUCK, v);
    }
    while (s->n && !key_at_most(d, s->v[0], f, k)) {
        v = s->v[0];
        heap_remove(d, HEAP_STUCK, v);
        heap_push(d, HEAP_CAND, v);
    }
}

/* ---- remaining bytes: max segment tree with range additions ------------------------------- */

/* r_mx[x] is the largest value below x, leaving out the additions of x's ancestors. */
static void rem_add(struct decider *d, size_t x, size_t lo, size_t hi, size_t l, size_t r, __int128 v)
{
    if (r <= lo || hi <= l)
        return;
    if (l <= lo && hi <= r) {
        d->r_add[x] += v;
        d->r_mx[x] += v;
        return;
    }
    size_t mid = (lo + hi) / 2;
    rem_add(d, 2 * x, lo, mid, l, r, v);
    rem_add(d, 2 * x + 1, mid, hi, l, r, v);
    d->r_mx[x] = d->r_add[x] + (d->r_mx[2 * x] > d->r_mx[2 * x + 1] ? d->r_mx[2 * x] : d->r_mx[2 * x + 1]);
}

static __int128 rem_max(const struct decider *d, size_t x, size_t lo, size_t hi, size_t l, size_t r)
{
    if (r <= lo || hi <= l)
        return -1;
    if (l <= lo && hi <= r)
        return d->r_mx[x];
    size_t mid = (lo + hi) / 2;
    __int128 a = rem_max(d, 2 * x, lo, mid, l, r), b = rem_max(d, 2 * x + 1, mid, hi, l, r);
    return d->r_add[x] + (a > b ? a : b);
}

/* First section s >= from with rem[s] >= want, or NONE. */
static uint32_t rem_first(const struct decider *d, size_t x, size_t lo, size_t hi, size_t from, __int128 want)
{
    if (hi <= from || d->r_mx[x] < want)
        return NONE;
    if (hi - lo == 1)
        return lo < d->m ? (uint32_t)lo : NONE;
    size_t mid = (lo + hi) / 2;
    uint32_t r = rem_first(d, 2 * x, lo, mid, from, want - d->r_add[x]);
    return r != NONE ? r : rem_first(d, 2 * x + 1, mid, hi, from, want - d->r_add[x]);
}

static __int128 rem_global(const struct decider *d) { return d->r_mx[1]; }

/* ---- failed states ------------------------------------------------------------------------ */

static uint64_t mix(uint64_t v)
{
    uint64_t s = v;
    return rng_next(&s);
}

/* The configuration is part of the key: the same placed buffers and threshold leave different
 * canonical completions under another key2, so a failure under one proves nothing for another. */
static uint64_t state_key(const struct decider *d, const struct frame *f)
{
    uint64_t h = exact_fill(d) ? d->set_hash ^ 0x2f8e1c3b5a7d9e61ull : d->hash;
    return (h ^ mix(f->thr_f ^ 0x51ed27) ^ mix(f->thr_k + 0x1d8e4e27c47d124full) ^ mix(d->cfg + 0x7f4a7c15u)) | 1;
}

static int failed_before(const struct decider *d, uint64_t key)
{
    size_t i = key & d->fail_mask;
    return d->fail_key[i] == key && d->fail_cap[i] >= d->capacity;
}

static void remember_failure(struct decider *d, uint64_t key)
{
    size_t i = key & d->fail_mask;
    if (d->fail_key[i] == key && d->fail_cap[i] >= d->capacity)
        return;
    d->fail_key[i] = key;
    d->fail_cap[i] = d->capacity;
}

/* ---- placing and removing one buffer ------------------------------------------------------ */

struct raise_ctx {
    struct decider *d;
    uint64_t top;
};

static int raise_floor(void *ctx, uint32_t c)
{
    struct raise_ctx *rc = ctx;
    struct decider *d = rc->d;
    if (d->placed[c])
        return 0;
    uint64_t nf;
    if (round_up(rc->top, d->p->al[c], &nf))
        nf = UINT64_MAX;
    if (nf > d->floor[c]) {
        if (d->nftrail == d->ftrailcap) {
            if (d->ftrailcap >= FLOOR_TRAIL_MAX)
                return -1; /* the path is too long for the memory it may use */
            size_t cap = d->ftrailcap ? 2 * d->ftrailcap : 4096;
            struct floor_change *t = realloc(d->ftrail, cap * sizeof *t);
            if (!t)
                return -1;
            d->ftrail = t;
            d->ftrailcap = cap;
        }
        d->ftrail[d->nftrail++] = (struct floor_change){c, d->floor[c]};
        d->floor[c] = nf;
        floor_raised(d, c);
        d->stale[HEAP_CAND] += d->heap[HEAP_CAND].pos[c] != NONE;
        d->stale[HEAP_HEIGHT] += d->heap[HEAP_HEIGHT].pos[c] != NONE;
        d->aff_lo = d->s0[c] < d->aff_lo ? d->s0[c] : d->aff_lo;
        d->aff_hi = d->s1[c] > d->aff_hi ? d->s1[c] : d->aff_hi;
    }
    return 0;
}

static uint64_t placed_hash(const struct decider *d, uint32_t y) { return mix(d->zob[y] + d->off[y]); }

/* Without slack, the placed buffers alone fix every section's height (the placed bytes there) and
 * so the floors, the bytes left and every rule but the twins': two orders of the same buffers that
 * leave the same last buffer are the same state. The twins' rule reads where a buffer with twins
 * lies, so those keep their offsets in the key. */
static uint64_t set_hash_of(const struct decider *d, uint32_t y)
{
    return d->twin[y] == y ? mix(d->zob[y] ^ 0x6b43a9b5u) : placed_hash(d, y);
}

/* Place y at its floor; -1 on OOM. */
static int put(struct decider *d, uint32_t y)
{
    const struct planner *p = d->p;
    uint64_t o = d->floor[y], top = o + p->sz[y]; /* the caller checked that top <= capacity */
    d->off[y] = o;
    d->placed[y] = 1;
    d->left--;
    heap_remove(d, HEAP_CAND, y);
    heap_remove(d, HEAP_HEIGHT, y);
    rem_add(d, 1, 0, d->leaves, d->s0[y], d->s1[y], -(__int128)p->sz[y]);
    if (d->rem_flat)
        for (uint32_t x = d->s0[y]; x < d->s1[y]; x++)
            d->rem_flat[x] -= p->sz[y];
    d->hash ^= placed_hash(d, y);
    d->set_hash ^= set_hash_of(d, y);
    struct raise_ctx rc = {d, top};
    d->aff_lo = d->s0[y];
    d->aff_hi = d->s1[y];
    return for_each_overlap(p, p->lo[y], p->hi[y], y, raise_floor, &rc);
}

static void take_back(struct decider *d, uint32_t y, size_t fmark)
{
    const struct planner *p = d->p;
    rem_add(d, 1, 0, d->leaves, d->s0[y], d->s1[y], (__int128)p->sz[y]);
    if (d->rem_flat)
        for (uint32_t x = d->s0[y]; x < d->s1[y]; x++)
            d->rem_flat[x] += p->sz[y];
    d->hash ^= placed_hash(d, y);
    d->set_hash ^= set_hash_of(d, y);
    d->placed[y] = 0;
    d->left++;
    while (d->nftrail > fmark) {
        struct floor_change *e = &d->ftrail[--d->nftrail];
        d->floor[e->c] = e->floor;
        floor_lowered(d, e->c);
    }
    heap_push(d, HEAP_CAND, y);
    heap_push(d, HEAP_HEIGHT, y);
}

/* ---- choosing the next buffer ------------------------------------------------------------- */

/*
 * Twins: buffers of the same lifetime and alignment. Would y at fl sit directly on a placed twin
 * of higher rank? In a stack of twins touching one another, any order of them occupies the same
 * addresses at every moment (their sizes are multiples of their alignment), so the layout stays
 * valid and no buffer of it can move lower than before; only the order by increasing rank
 * upwards is searched. Not with bounds (a repair's twins may have different ceilings). At most
 * TWIN_SCAN twins are looked at (one not looked at only prunes less).
 */
#define TWIN_SCAN 64

static int swapped_twin(const struct decider *d, uint32_t y, uint64_t fl)
{
    if (d->base)
        return 0;
    const uint64_t *rank = d->rank[d->cfg];
    unsigned k = 0;
    for (uint32_t x = d->twin[y]; x != y && k < TWIN_SCAN; x = d->twin[x], k++)
        if (d->placed[x] && d->off[x] + d->p->sz[x] == fl && d->p->al[x] == d->p->al[y] && rank[x] > rank[y])
            return 1;
    return 0;
}

/* The next candidate of frame f, or NONE when no placement can lead to a layout within C. */
static uint32_t next_candidate(struct decider *d, struct frame *f)
{
    const struct planner *p = d->p;
    __int128 C = d->capacity;
    for (;;) {
        rebalance(d, f->thr_f, f->thr_k);
        uint32_t y = lazy_top(d, HEAP_CAND);
        if (y == NONE)
            return NONE;
        uint64_t fl = d->floor[y];
        if (height_of(d, lazy_top(d, HEAP_HEIGHT)) <= fl)
            return NONE; /* something could end at or below fl: not canonical */
        if ((__int128)fl + rem_global(d) > C)
            return NONE;
        if (fl > f->level && rem_first(d, 1, 0, d->leaves, f->from, C - f->level) != NONE)
            return NONE; /* a tight point at the current level would be left uncovered */
        if (configs[d->cfg].by_start) {
            uint32_t s = rem_first(d, 1, 0, d->leaves, fl == f->level ? f->from : 0, C - fl);
            if (s != NONE && d->s0[y] > s)
                return NONE; /* moving right past a tight point at fl */
        }
        if ((__int128)fl + p->sz[y] > C || (d->ceil && fl + p->sz[y] > d->ceil[y]) || swapped_twin(d, y, fl)) {
            f->thr_f = fl; /* does not fit here; the next key */
            f->thr_k = d->key2[y];
            continue;
        }
        return y;
    }
}

/*
 * Section floors (small problems, where every section's buffers can be read at every node): the
 * lowest offset any unplaced buffer of section s can still take is at least the smallest
 * effective floor among them (its floor; above the current level when it is stuck), and all of
 * rem[s] must fit above it. 1 when every section passes.
 */
static int sections_fit(const struct decider *d, const struct frame *f, size_t from, size_t to)
{
    if (!d->sec_start)
        return 1;
    for (size_t s = from; s < to; s++) {
        uint64_t rem = d->rem_flat[s];
        if (rem == 0)
            continue;
        uint64_t need = d->capacity - rem; /* rem <= capacity: checked when it was last lowered */
        int ok = 0;
        for (uint32_t k = d->sec_start[s]; k < d->sec_start[s + 1] && !ok; k++) {
            uint32_t c = d->sec_list[k];
            if (d->placed[c])
                continue;
            uint64_t e = d->floor[c];
            if (key_at_most(d, c, f->thr_f, f->thr_k))
                e = (e > f->level ? e : f->level) + 1; /* stuck: must be raised first */
            ok = e <= need;
        }
        if (!ok)
            return 0;
    }
    return 1;
}

/*
 * Runs (small problems without slack: every section holds exactly C bytes, as a rectangle cut
 * into pieces does). No gap is possible anywhere, so the height of section s is C - rem[s]. Take a
 * maximal run of sections of one height h below C whose left neighbour is higher (or which starts
 * at the first section): address h of each of its sections must be covered by a buffer at offset
 * h, and none can come from the left, so unplaced buffers with floor h, side by side, must cover
 * the run from its left end to its right end (and may go past it only where the right neighbour
 * is lower, since that one rises before level h is reached). A run that no such chain covers is a
 * dead end, whatever happens elsewhere. 1 when every run can be covered.
 */
static int runs_tile(struct decider *d, const struct frame *f)
{
    if (!exact_fill(d))
        return 1; /* with buffers kept in place around them, sections may have gaps */
    const struct planner *p = d->p;
    for (size_t a = 0; a < d->m;) {
        uint64_t rem = d->rem_flat[a];
        size_t b = a + 1;
        while (b < d->m && d->rem_flat[b] == rem)
            b++;
        /* A higher section on the left (or the start of time) is a wall: the buffers at h start in
         * the run. A higher one on the right is a wall too; a lower one will rise, and a buffer
         * may then reach past the run. */
        int left_wall = a == 0 || d->rem_flat[a - 1] < rem, right_wall = b == d->m || d->rem_flat[b] < rem;
        if (rem && left_wall) {
            uint64_t h = d->capacity - rem;
            memset(&d->reach[a], 0, b - a + 1);
            d->reach[a] = 1;
            for (size_t x = a; x < b; x++) {
                if (!d->reach[x])
                    continue;
                for (uint32_t k = d->st_start[x]; k < d->st_start[x + 1]; k++) {
                    uint32_t c = d->st_list[k];
                    if (!d->placed[c] && (d->s1[c] <= b || !right_wall) && p->sz[c] <= rem && d->floor[c] == h &&
                        !key_at_most(d, c, f->thr_f, f->thr_k))
                        d->reach[d->s1[c] < b ? d->s1[c] : b] = 1;
                }
            }
            if (!d->reach[b]) {
                return 0;
            }
        }
        a = b;
    }
    return 1;
}

/*
 * Valleys (small problems without slack, as for the runs): the sections [a, b) of one height h
 * whose neighbours on both sides are higher (or are the ends of time; their height counts as C).
 * Up to the lower neighbour's height, the addresses above h in these sections can only be taken
 * by buffers whose lifetimes lie within [a, b): any other buffer there meets a neighbour, and its
 * floor is at least that neighbour's height. Without slack nothing may stay free, so in every
 * section of the valley the unplaced buffers within [a, b) must hold at least that many bytes. 0
 * when the valley around section s fails this.
 */
static int valley_fits(const struct decider *d, size_t s)
{
    const uint64_t *rem = d->rem_flat;
    uint64_t C = d->capacity, h = C - rem[s];
    size_t a = s, b = s + 1;
    if (rem[s] == 0)
        return 1;
    while (a > 0 && rem[a - 1] == rem[s])
        a--;
    while (b < d->m && rem[b] == rem[s])
        b++;
    uint64_t hl = a > 0 ? C - rem[a - 1] : C, hr = b < d->m ? C - rem[b] : C;
    if (hl < h || hr < h)
        return 1; /* a neighbour is lower: buffers may come from there */
    uint64_t need = (hl < hr ? hl : hr) - h;
    for (size_t x = a; x < b; x++) {
        uint64_t inner = 0;
        for (uint32_t k = d->sec_start[x]; k < d->sec_start[x + 1] && inner < need; k++) {
            uint32_t c = d->sec_list[k];
            if (!d->placed[c] && d->s0[c] >= a && d->s1[c] <= b)
                inner += d->p->sz[c];
        }
        if (inner < need)
            return 0;
    }
    return 1;
}

/* The valleys a placement of y may have made (its own sections and their neighbours). */
static int valleys_fit(const struct decider *d, uint32_t y)
{
    if (!exact_fill(d))
        return 1;
    return valley_fits(d, d->s0[y]) && (d->s0[y] == 0 || valley_fits(d, d->s0[y] - 1)) &&
           (d->s1[y] >= d->m || valley_fits(d, d->s1[y]));
}

/* ---- the search --------------------------------------------------------------------------- */

struct rank_item {
    uint64_t k1, k2, k3;
    uint32_t i;
};

static int cmp_rank_item(const void *x, const void *y)
{
    const struct rank_item *a = x, *b = y;
    if (a->k1 != b->k1)
        return a->k1 > b->k1 ? -1 : 1;
    if (a->k2 != b->k2)
        return a->k2 > b->k2 ? -1 : 1;
    if (a->k3 != b->k3)
        return a->k3 > b->k3 ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

static int make_rank(struct decider *d, unsigned cfg)
{
    size_t n = d->n;
    struct rank_item *it = malloc(n * sizeof *it + 1);
    uint64_t *rank = malloc(n * sizeof *rank + 1);
    if (!it || !rank) {
        free(it);
        free(rank);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t len = d->s1[i] - d->s0[i], sz = d->p->sz[i], br = d->breadth[i];
        switch (configs[cfg].order) {
        case 0: it[i] = (struct rank_item){len, sz, br, (uint32_t)i}; break;
        case 1: it[i] = (struct rank_item){sz, len, br, (uint32_t)i}; break;
        default: it[i] = (struct rank_item){br, len, sz, (uint32_t)i}; break;
        }
    }
    qsort(it, n, sizeof *it, cmp_rank_item);
    for (size_t k = 0; k < n; k++)
        rank[it[k].i] = k + 1; /* 0 is below every key */
    free(it);
    d->rank[cfg] = rank;
    return 0;
}

static int reset(struct decider *d, unsigned cfg)
{
    if (!d->rank[cfg] && make_rank(d, cfg))
        return -1;
    d->cfg = cfg;
    for (size_t i = 0; i < d->n; i++) {
        d->key2[i] = configs[cfg].by_start ? ((uint64_t)d->s0[i] << 32) | d->rank[cfg][i] : d->rank[cfg][i];
        d->floor[i] = d->base ? d->base[i] : 0;
        d->cand_key[i] = d->floor[i];
        d->height_key[i] = height_of(d, (uint32_t)i);
        d->placed[i] = 0;
        for (int k = 0; k < HEAPS; k++)
            d->heap[k].pos[i] = NONE;
    }
    d->left = d->n;
    for (int k = 0; k < HEAPS; k++) {
        d->heap[k].n = 0;
        d->stale[k] = 0;
    }
    /* Nothing is placed: every buffer is a candidate (its key2 is above 0), heapified. */
    for (int k = 0; k < HEAPS; k += 2) {
        struct heap *h = &d->heap[k];
        for (size_t i = 0; i < d->n; i++)
            heap_set(h, i, (uint32_t)i);
        h->n = d->n;
        for (size_t i = d->n / 2; i-- > 0;)
            heap_down(d, k, i);
    }
    d->nftrail = 0;
    memset(d->r_add, 0, 2 * d->leaves * sizeof *d->r_add);
    for (size_t s = 0; s < d->leaves; s++)
        d->r_add[d->leaves + s] = s < d->m ? (__int128)d->load[s] : 0;
    for (size_t x = 0; x < 2 * d->leaves; x++)
        d->r_mx[x] = d->r_add[x];
    for (size_t x = d->leaves; x-- > 1;)
        d->r_mx[x] = d->r_mx[2 * x] > d->r_mx[2 * x + 1] ? d->r_mx[2 * x] : d->r_mx[2 * x + 1];
    d->hash = d->set_hash = 0;
    if (d->rem_flat)
        memcpy(d->rem_flat, d->load, d->m * sizeof *d->rem_flat);
    return 0;
}

enum decision decide(struct decider *d, uint64_t capacity, unsigned config, uint64_t node_limit, struct budget *bud,
                     uint64_t *off)
{
    if (reset(d, config % NCONFIGS))
        return DECISION_ERROR;
    d->capacity = capacity;
    if (rem_global(d) > (__int128)capacity)
        return DECISION_INFEASIBLE; /* below the load bound */
    if (d->n == 0)
        return DECISION_FOUND;
    uint64_t nodes = 0;
    size_t depth = 0;
    d->frames[0] = (struct frame){0, 0, 0, 0, NONE, 0, 0};
    enum { ENTER, NEXT, FAIL } state = ENTER;
    for (;;) {
        struct frame *f = &d->frames[depth];
        if (state == ENTER) {
            if (d->left == 0) {
                memcpy(off, d->off, d->n * sizeof *off);
                return DECISION_FOUND;
            }
            if (nodes >= node_limit || ((nodes & 255) == 0 && budget_spent(bud)))
                return DECISION_ABORTED; /* the next call resets the state */
            nodes++;
            bud->used++;
            f->hash = state_key(d, f);
            /* At the root every section; below, those the last placement changed. */
            state = failed_before(d, f->hash) || !sections_fit(d, f, depth ? d->aff_lo : 0, depth ? d->aff_hi : d->m) ||
                            !runs_tile(d, f)
                        ? FAIL
                        : NEXT;
            continue;
        }
        if (state == NEXT) {
            uint32_t y = next_candidate(d, f);
            if (y == NONE) {
                state = FAIL;
                continue;
            }
            f->fmark = d->nftrail;
            if (put(d, y))
                return DECISION_ERROR;
            uint64_t top = d->off[y] + d->p->sz[y];
            if ((__int128)top + rem_max(d, 1, 0, d->leaves, d->s0[y], d->s1[y]) > (__int128)capacity ||
                !valleys_fit(d, y)) {
                take_back(d, y, f->fmark); /* its sections cannot take what is left */
                f->thr_f = d->off[y];
                f->thr_k = d->key2[y];
                continue;
            }
            f->y = y;
            struct frame *c = &d->frames[++depth];
            *c = (struct frame){d->off[y], d->key2[y], d->off[y], configs[d->cfg].by_start ? d->s1[y] : 0, NONE, 0, 0};
            state = ENTER;
            continue;
        }
        /* FAIL: every candidate of this node failed */
        remember_failure(d, f->hash);
        if (depth == 0)
            return DECISION_INFEASIBLE;
        f = &d->frames[--depth];
        take_back(d, f->y, f->fmark);
        f->thr_f = d->off[f->y];
        f->thr_k = d->key2[f->y];
        f->y = NONE;
        state = NEXT;
    }
}

/* ---- setup -------------------------------------------------------------------------------- */

void decider_free(struct decider *d)
{
    if (!d)
        return;
    free(d->s0);
    free(d->s1);
    free(d->breadth);
    free(d->key2);
    for (size_t k = 0; k < NCONFIGS; k++)
        free(d->rank[k]);
    free(d->floor);
    free(d->off);
    free(d->zob);
    free(d->cand_key);
    free(d->height_key);
    free(d->placed);
    for (int k = 0; k < HEAPS; k++) {
        free(d->heap[k].v);
        free(d->heap[k].pos);
    }
    free(d->ftrail);
    free(d->twin);
    free(d->r_add);
    free(d->r_mx);
    free(d->load);
    free(d->frames);
    free(d->fail_key);
    free(d->fail_cap);
    free(d->sec_start);
    free(d->sec_list);
    free(d->rem_flat);
    free(d->st_start);
    free(d->st_list);
    free(d->reach);
    free(d);
}

/* Index of t among the sorted distinct times u[0..m). */
static uint32_t time_index(const int64_t *u, size_t m, int64_t t)
{
    size_t a = 0, b = m;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (u[mid] < t)
            a = mid + 1;
        else
            b = mid;
    }
    return (uint32_t)a;
}

int decider_new(struct decider **out, const struct planner *p, uint64_t seed)
{
    struct decider *d = calloc(1, sizeof *d);
    size_t n = p->n, nt = 0;
    int64_t *times = malloc(2 * n * sizeof *times + 1);
    *out = d;
    if (!d || !times)
        goto oom;
    d->p = p;
    d->n = n;
    for (size_t i = 0; i < n; i++) {
        times[nt++] = p->lo[i];
        times[nt++] = p->hi[i];
    }
    if (sort_i64(times, nt))
        goto oom;
    size_t u = 0;
    for (size_t k = 0; k < nt; k++)
        if (u == 0 || times[k] != times[u - 1])
            times[u++] = times[k];
    d->m = u > 1 ? u - 1 : 1;
    d->leaves = 1;
    while (d->leaves < d->m)
        d->leaves *= 2;
    d->s0 = malloc(n * sizeof *d->s0 + 1);
    d->s1 = malloc(n * sizeof *d->s1 + 1);
    d->breadth = malloc(n * sizeof *d->breadth + 1);
    d->key2 = malloc(n * sizeof *d->key2 + 1);
    d->floor = malloc(n * sizeof *d->floor + 1);
    d->off = calloc(n + 1, sizeof *d->off);
    d->zob = malloc(n * sizeof *d->zob + 1);
    d->cand_key = malloc(n * sizeof *d->cand_key + 1);
    d->height_key = malloc(n * sizeof *d->height_key + 1);
    d->placed = calloc(n + 1, 1);
    d->load = calloc(d->m + 1, sizeof *d->load);
    d->r_add = calloc(2 * d->leaves, sizeof *d->r_add);
    d->r_mx = calloc(2 * d->leaves, sizeof *d->r_mx);
    d->frames = malloc((n + 1) * sizeof *d->frames);
    /* The failed-state table: 2^20 entries, fewer for small problems (a repair builds one per
     * part it re-solves). */
    d->fail_mask = 4095;
    while (d->fail_mask < (1u << 20) - 1 && d->fail_mask < 1024 * n)
        d->fail_mask = 2 * d->fail_mask + 1;
    d->fail_key = calloc(d->fail_mask + 1, sizeof *d->fail_key);
    d->fail_cap = calloc(d->fail_mask + 1, sizeof *d->fail_cap);
    if (!d->s0 || !d->s1 || !d->breadth || !d->key2 || !d->floor || !d->off || !d->zob || !d->cand_key ||
        !d->height_key || !d->placed || !d->load || !d->r_add || !d->r_mx || !d->frames || !d->fail_key || !d->fail_cap)
        goto oom;
    for (int k = 0; k < HEAPS; k++) {
        d->heap[k].v = malloc(n * sizeof *d->heap[k].v + 1);
        d->heap[k].pos = malloc(n * sizeof *d->heap[k].pos + 1);
        if (!d->heap[k].v || !d->heap[k].pos)
            goto oom;
    }
    uint64_t rng = seed ^ 0x6a09e667f3bcc908ull;
    /* Section loads by differences (each at most the load bound, which fits in 64 bits). */
    for (size_t i = 0; i < n; i++) {
        d->s0[i] = time_index(times, u, p->lo[i]);
        d->s1[i] = time_index(times, u, p->hi[i]);
        d->zob[i] = rng_next(&rng);
        d->load[d->s0[i]] += p->sz[i];
        d->load[d->s1[i]] -= p->sz[i];
    }
    for (size_t s = 1; s < d->m; s++)
        d->load[s] += d->load[s - 1];
    free(times);
    times = NULL;
    /* Breadth: the largest initial load over each buffer's sections (the remaining-bytes tree
     * holds the loads right after a reset). */
    for (size_t s = 0; s < d->leaves; s++)
        d->r_mx[d->leaves + s] = s < d->m ? (__int128)d->load[s] : 0;
    for (size_t x = d->leaves; x-- > 1;)
        d->r_mx[x] = d->r_mx[2 * x] > d->r_mx[2 * x + 1] ? d->r_mx[2 * x] : d->r_mx[2 * x + 1];
    for (size_t i = 0; i < n; i++)
        d->breadth[i] = (uint64_t)rem_max(d, 1, 0, d->leaves, d->s0[i], d->s1[i]);
    /* Section lists when they are small enough to read at every node. */
    uint64_t entries = 0;
    for (size_t i = 0; i < n; i++)
        entries += d->s1[i] - d->s0[i];
    if (entries <= SECTION_LIST_MAX) {
        d->sec_start = calloc(d->m + 2, sizeof *d->sec_start);
        d->sec_list = malloc(entries * sizeof *d->sec_list + 1);
        d->rem_flat = malloc(d->m * sizeof *d->rem_flat + 1);
        if (!d->sec_start || !d->sec_list || !d->rem_flat)
            goto oom;
        for (size_t i = 0; i < n; i++)
            for (uint32_t x = d->s0[i]; x < d->s1[i]; x++)
                d->sec_start[x + 2]++;
        for (size_t x = 0; x < d->m; x++)
            d->sec_start[x + 2] += d->sec_start[x + 1];
        for (size_t i = 0; i < n; i++)
            for (uint32_t x = d->s0[i]; x < d->s1[i]; x++)
                d->sec_list[d->sec_start[x + 1]++] = (uint32_t)i;
        d->st_start = calloc(d->m + 2, sizeof *d->st_start);
        d->st_list = malloc(n * sizeof *d->st_list + 1);
        d->reach = malloc(d->m + 1);
        if (!d->st_start || !d->st_list || !d->reach)
            goto oom;
        for (size_t i = 0; i < n; i++)
            d->st_start[d->s0[i] + 2]++;
        for (size_t x = 0; x < d->m; x++)
            d->st_start[x + 2] += d->st_start[x + 1];
        for (size_t i = 0; i < n; i++)
            d->st_list[d->st_start[d->s0[i] + 1]++] = (uint32_t)i;
    }
    /* Buffers of the same lifetime, linked in cycles (sorted by section range; the twins' rule
     * also compares alignments). */
    d->twin = malloc(n * sizeof *d->twin + 1);
    uint64_t(*lt)[2] = malloc(n * sizeof *lt + 1);
    if (!d->twin || !lt) {
        free(lt);
        goto oom;
    }
    for (size_t i = 0; i < n; i++) {
        lt[i][0] = ((uint64_t)d->s0[i] << 32) | d->s1[i];
        lt[i][1] = i;
    }
    if (radix_sort_words(&lt[0][0], n, 2, 0)) {
        free(lt);
        goto oom;
    }
    for (size_t a = 0; a < n;) {
        size_t b = a + 1;
        while (b < n && lt[b][0] == lt[a][0])
            b++;
        for (size_t k = a; k < b; k++)
            d->twin[lt[k][1]] = (uint32_t)lt[k + 1 < b ? k + 1 : a][1];
        a = b;
    }
    free(lt);
    d->min_load = UINT64_MAX;
    for (size_t x = 0; x < d->m; x++)
        d->min_load = d->load[x] < d->min_load ? d->load[x] : d->min_load;
    return 0;
oom:
    free(times);
    decider_free(d);
    *out = NULL;
    return -1;
}
