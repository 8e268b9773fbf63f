/*
 * Static memory planner. See planner.h for the problem and docs/planner.md for the algorithm.
 *
 * Default: a portfolio of greedy decoders (an order of the buffers plus a gap-choice rule),
 * always including best-fit by decreasing size, keeping the smallest peak. With a time limit,
 * a large-neighbourhood search then removes the buffers that reach the peak together with
 * their neighbours near the top and re-inserts them, until the peak equals the load bound or
 * time runs out.
 */
#include "planner.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- small helpers ------------------------------------------------------------------------ */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng_next(uint64_t *s) /* splitmix64: tiny, good enough for search moves */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rng_below(uint64_t *s, uint64_t n) { return n ? rng_next(s) % n : 0; }

/* Round v up to a multiple of a (a >= 1); 0 on success, -1 on overflow. */
static int round_up(uint64_t v, uint64_t a, uint64_t *out)
{
    uint64_t r = (a & (a - 1)) == 0 ? v & (a - 1) : v % a; /* no division for powers of two */
    if (r == 0) {
        *out = v;
        return 0;
    }
    return __builtin_add_overflow(v, a - r, out) ? -1 : 0;
}

static uint64_t effective_alignment(const struct ws_plan_buffer *b, uint64_t dflt)
{
    uint64_t a = b->alignment ? b->alignment : dflt;
    return a ? a : 1;
}

static uint64_t lifetime_length(int64_t lo, int64_t hi)
{
    return (uint64_t)hi - (uint64_t)lo; /* exact modulo 2^64 because hi > lo */
}

static int floor_log2(uint64_t v) { return 63 - __builtin_clzll(v); }

/* Stable LSD radix sort of n records of `words` 64-bit words by their word `kw` (unsigned), 8
 * bits a pass, skipping the bytes where every key agrees. 0, or -1 when memory runs out. */
static int radix_sort_words(uint64_t *a, size_t n, size_t words, size_t kw)
{
    uint64_t all_or = 0, all_and = ~0ull;
    for (size_t i = 0; i < n; i++) {
        all_or |= a[i * words + kw];
        all_and &= a[i * words + kw];
    }
    uint64_t differ = n > 1 ? all_or ^ all_and : 0;
    if (!differ)
        return 0;
    uint64_t *tmp = malloc(n * words * sizeof *tmp), *src = a, *dst = tmp;
    if (!tmp)
        return -1;
    for (int shift = 0; shift < 64; shift += 8) {
        if (!((differ >> shift) & 0xff))
            continue;
        size_t cnt[257] = {0};
        for (size_t i = 0; i < n; i++)
            cnt[((src[i * words + kw] >> shift) & 0xff) + 1]++;
        for (int d = 0; d < 256; d++)
            cnt[d + 1] += cnt[d];
        for (size_t i = 0; i < n; i++) {
            size_t o = cnt[(src[i * words + kw] >> shift) & 0xff]++;
            for (size_t w = 0; w < words; w++)
                dst[o * words + w] = src[i * words + w];
        }
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * words * sizeof *a);
    free(tmp);
    return 0;
}

/* Sort signed values ascending (radix on the sign-flipped bits). */
static int sort_i64(int64_t *v, size_t n)
{
    uint64_t *u = (uint64_t *)v;
    for (size_t i = 0; i < n; i++)
        u[i] ^= 1ull << 63;
    int rc = radix_sort_words(u, n, 1, 0);
    for (size_t i = 0; i < n; i++)
        u[i] ^= 1ull << 63;
    return rc;
}

/* ---- the planner's working state ---------------------------------------------------------- */

struct span { /* occupied addresses [a, b) of one placed buffer */
    uint64_t a, b;
};

/* Buffers grouped by floor(log2(lifetime length)), each group sorted by lower. A buffer of
 * group c overlapping [l, u) starts in (l - 2^(c+1), u), so one binary search per group finds
 * every candidate with little slack, in O(n) memory whatever the lifetimes. */
struct time_class {
    uint32_t *ids;
    int64_t *lo;
    size_t n;
    int log2len;
};

/*
 * Block tree: for dense problems (thousands of buffers alive at once) the spans around one
 * buffer are too many to collect and sort one by one. Time (the elementary segments between
 * consecutive distinct lower/upper values) is cut into blocks of `width` segments. Every list
 * below is a sorted list of disjoint address ranges, merged when they touch:
 *  - `cov[B]`: the spans of the placed buffers whose lifetime covers all of block B;
 *  - `part[B]` (static, built once): the buffers that meet block B without covering it, with
 *    their segment ranges, filtered exactly at query time;
 *  - a segment tree over the blocks whose node lists `sub` hold the union of the spans of every
 *    placed buffer meeting the node's blocks.
 * A query for buffer i reads, for the (at most two) blocks it meets only in part, `cov` and the
 * filtered `part`; for the blocks it covers, `sub` of their canonical nodes and `cov` of the first
 * and last of them (a buffer covering an ancestor of a canonical node covers one of these two
 * blocks). Together they are exactly the spans of the buffers alive at some time in i's lifetime.
 * A short buffer, the common case, reads one or two `cov` lists and a few dozen `part` entries.
 * Insertion only: the search removes buffers and uses the time classes instead.
 */
struct span_list {
    struct span *v;
    uint32_t n, cap;
};

struct part_entry { /* a buffer meeting a block in part: its segment range [f, e) */
    uint32_t f, e, id;
    uint32_t reach; /* for the entries starting and ending in the block: the largest e so far */
};

struct union_tree {
    size_t leaves; /* a power of two >= blocks */
    size_t blocks;
    uint32_t width;         /* segments per block */
    uint32_t *first, *last; /* per buffer: segment range [first, last) (shared by workers) */
    /* part entries of block B: part[pstart[B] .. pstart[B + 1]) (shared): first those starting
     * before B, by decreasing end; from cstart[B] those ending after B, by start; from sstart[B]
     * those starting and ending in B, by start. */
    size_t *pstart, *cstart, *sstart;
    struct part_entry *part;
    struct span_list *sub, *cov; /* per node / per block (per worker) */
};

static void union_tree_free_lists(struct union_tree *t)
{
    for (size_t x = 0; t->sub && x < 2 * t->leaves; x++)
        free(t->sub[x].v);
    for (size_t x = 0; t->cov && x < t->blocks; x++)
        free(t->cov[x].v);
    free(t->sub);
    free(t->cov);
}

static void union_tree_free(struct union_tree *t)
{
    if (!t)
        return;
    union_tree_free_lists(t);
    free(t->first);
    free(t->last);
    free(t->pstart);
    free(t->cstart);
    free(t->sstart);
    free(t->part);
    free(t);
}

static void union_tree_clear(struct union_tree *t)
{
    for (size_t x = 0; x < 2 * t->leaves; x++)
        t->sub[x].n = 0;
    for (size_t x = 0; x < t->blocks; x++)
        t->cov[x].n = 0;
}

/* Add [s.a, s.b) to a sorted list of disjoint ranges, merging the ranges it meets or touches. */
static int span_list_add(struct span_list *l, struct span s)
{
    uint32_t a = 0, b = l->n;
    while (a < b) { /* first range ending at or after s.a */
        uint32_t m = a + (b - a) / 2;
        if (l->v[m].b < s.a)
            a = m + 1;
        else
            b = m;
    }
    uint32_t j = a;
    for (; j < l->n && l->v[j].a <= s.b; j++) {
        s.a = l->v[j].a < s.a ? l->v[j].a : s.a;
        s.b = l->v[j].b > s.b ? l->v[j].b : s.b;
    }
    if (j > a) { /* replace ranges a..j-1 by the merged one */
        l->v[a] = s;
        memmove(&l->v[a + 1], &l->v[j], (l->n - j) * sizeof *l->v);
        l->n -= j - a - 1;
        return 0;
    }
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? 2 * l->cap : 4;
        struct span *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    memmove(&l->v[a + 1], &l->v[a], (l->n - a) * sizeof *l->v);
    l->v[a] = s;
    l->n++;
    return 0;
}

/* 1 when one range of the list contains [s.a, s.b). */
static int span_list_covers(const struct span_list *l, struct span s)
{
    uint32_t a = 0, b = l->n;
    while (a < b) { /* first range ending after s.a */
        uint32_t m = a + (b - a) / 2;
        if (l->v[m].b <= s.a)
            a = m + 1;
        else
            b = m;
    }
    return a < l->n && l->v[a].a <= s.a && l->v[a].b >= s.b;
}

/* Add s to sub of leaf block `leaf` and its ancestors. The nodes whose sub receives a buffer are
 * closed upwards (canonical nodes of its covered blocks and the root paths of its first and last
 * blocks), so sub of a node contains sub of its children and once a list already covers s every
 * list above it does too. */
static int union_tree_add_path(struct union_tree *t, size_t leaf, struct span s)
{
    for (size_t x = leaf + t->leaves; x >= 1; x /= 2) {
        if (span_list_covers(&t->sub[x], s))
            return 0;
        if (span_list_add(&t->sub[x], s))
            return -1;
    }
    return 0;
}

/* Blocks met by buffer i: [*m1, *m2]; blocks covered: [*c1, *c2) (empty when *c1 >= *c2). */
static void tree_blocks(const struct union_tree *t, size_t i, size_t *m1, size_t *m2, size_t *c1, size_t *c2)
{
    size_t f = t->first[i], e = t->last[i], w = t->width;
    *m1 = f / w;
    *m2 = (e - 1) / w;
    *c1 = (f + w - 1) / w;
    *c2 = e / w;
}

static int union_tree_insert(struct union_tree *t, size_t i, struct span s)
{
    size_t m1, m2, c1, c2;
    tree_blocks(t, i, &m1, &m2, &c1, &c2);
    if (union_tree_add_path(t, m1, s) || (m2 != m1 && union_tree_add_path(t, m2, s)))
        return -1;
    if (c1 >= c2)
        return 0;
    if ((c1 != m1 && union_tree_add_path(t, c1, s)) || (c2 - 1 != m2 && union_tree_add_path(t, c2 - 1, s)))
        return -1;
    for (size_t B = c1; B < c2; B++)
        if (span_list_add(&t->cov[B], s))
            return -1;
    for (size_t a = c1 + t->leaves, b = c2 + t->leaves; a < b; a /= 2, b /= 2) {
        if ((a & 1) && span_list_add(&t->sub[a++], s))
            return -1;
        if ((b & 1) && span_list_add(&t->sub[--b], s))
            return -1;
    }
    return 0;
}

struct planner {
    size_t n;
    int64_t *lo, *hi;
    uint64_t *sz, *al; /* occupied size (rounded up to the alignment) and alignment */
    uint64_t *off;
    unsigned char *placed;
    struct time_class cls[64];
    int ncls;
    struct span *seg, *tmp; /* scratch for the spans around one buffer */
    size_t segcap;
    size_t *runs; /* with the union tree: where each sorted list copied into seg starts */
    size_t nruns, runcap;
    const struct span_list **lists; /* with the union tree: lists read in place, not yet copied */
    size_t nlists, listcap;
    struct union_tree *tree; /* built for dense problems; NULL otherwise */
    int use_tree;            /* the tree mirrors the placed buffers */
    uint64_t lb;
    char *err;
    atomic_size_t *stop; /* in a portfolio worker: decoders after *stop are not needed */
    size_t index;        /* the decoder being run, compared with *stop */
};

enum fit { FIT_BEST, FIT_FIRST };

static void planner_free(struct planner *p)
{
    free(p->lo);
    free(p->hi);
    free(p->sz);
    free(p->al);
    free(p->off);
    free(p->placed);
    for (int c = 0; c < p->ncls; c++) {
        free(p->cls[c].ids);
        free(p->cls[c].lo);
    }
    free(p->seg);
    free(p->tmp);
    free(p->runs);
    free(p->lists);
    union_tree_free(p->tree);
}

static int build_index(struct planner *p)
{
    size_t count[64] = {0};
    for (size_t i = 0; i < p->n; i++)
        count[floor_log2(lifetime_length(p->lo[i], p->hi[i]))]++;
    int slot[64];
    p->ncls = 0;
    for (int c = 0; c < 64; c++) {
        slot[c] = -1;
        if (!count[c])
            continue;
        struct time_class *tc = &p->cls[p->ncls];
        tc->log2len = c;
        tc->ids = malloc(count[c] * sizeof *tc->ids);
        tc->lo = malloc(count[c] * sizeof *tc->lo);
        slot[c] = p->ncls++;
        if (!tc->ids || !tc->lo)
            return -1;
    }
    /* Sort all buffers by lower once, then deal them into their classes in that order. */
    uint64_t(*pairs)[2] = malloc(p->n * sizeof *pairs);
    if (!pairs && p->n)
        return -1;
    for (size_t i = 0; i < p->n; i++) {
        pairs[i][0] = (uint64_t)p->lo[i] ^ (1ull << 63); /* order-preserving for signed values */
        pairs[i][1] = i;
    }
    if (radix_sort_words(&pairs[0][0], p->n, 2, 0)) { /* stable: ties stay by index */
        free(pairs);
        return -1;
    }
    for (size_t k = 0; k < p->n; k++) {
        size_t i = pairs[k][1];
        struct time_class *tc = &p->cls[slot[floor_log2(lifetime_length(p->lo[i], p->hi[i]))]];
        tc->ids[tc->n] = (uint32_t)i;
        tc->lo[tc->n++] = p->lo[i];
    }
    free(pairs);
    return 0;
}

static int choose_structure(struct planner *p);

static int planner_init(struct planner *p, const struct ws_plan_buffer *b, size_t n, uint64_t dflt_align, char *err)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    p->err = err;
    if (n > UINT32_MAX - 1) {
        snprintf(p->err, 128, "too many buffers (%zu)", n);
        return -1;
    }
    p->lo = malloc(n * sizeof *p->lo);
    p->hi = malloc(n * sizeof *p->hi);
    p->sz = malloc(n * sizeof *p->sz);
    p->al = malloc(n * sizeof *p->al);
    p->off = calloc(n ? n : 1, sizeof *p->off);
    p->placed = calloc(n ? n : 1, 1);
    if (n && (!p->lo || !p->hi || !p->sz || !p->al || !p->off || !p->placed))
        goto oom;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (b[i].lower >= b[i].upper) {
            snprintf(p->err, 128, "buffer %llu: lower (%lld) must be below upper (%lld)", (unsigned long long)b[i].id,
                     (long long)b[i].lower, (long long)b[i].upper);
            return -1;
        }
        p->lo[i] = b[i].lower;
        p->hi[i] = b[i].upper;
        p->al[i] = effective_alignment(&b[i], dflt_align);
        /* Offsets never exceed the sum of all occupied sizes plus alignment padding, so
         * checking that sum here keeps every later offset computation in range. */
        if (round_up(b[i].size, p->al[i], &p->sz[i]) || __builtin_add_overflow(total, p->sz[i], &total) ||
            __builtin_add_overflow(total, p->al[i], &total)) {
            snprintf(p->err, 128, "buffer sizes overflow 64 bits");
            return -1;
        }
    }
    if (build_index(p) || choose_structure(p))
        goto oom;
    return 0;
oom:
    snprintf(p->err, 128, "out of memory");
    return -1;
}

/* ---- finding the spans of placed buffers around one buffer --------------------------------- */

static int reserve_spans(struct planner *p, size_t need)
{
    if (need <= p->segcap)
        return 0;
    size_t cap = p->segcap ? p->segcap : 256;
    while (cap < need)
        cap *= 2;
    struct span *s = realloc(p->seg, cap * sizeof *s), *t;
    if (!s)
        return -1;
    p->seg = s;
    if (!(t = realloc(p->tmp, cap * sizeof *t)))
        return -1;
    p->tmp = t;
    p->segcap = cap;
    return 0;
}

static size_t first_at_or_after(const int64_t *lo, size_t n, __int128 key)
{
    size_t a = 0, b = n;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if ((__int128)lo[m] < key)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

static void insertion_sort_spans(struct span *s, size_t n);

static int reserve_runs(struct planner *p)
{
    size_t cap = p->runcap ? 2 * p->runcap : 64;
    size_t *r = realloc(p->runs, cap * sizeof *r);
    if (!r)
        return -1;
    p->runs = r;
    p->runcap = cap;
    return 0;
}

/* Note a sorted list to be read in place (copied only when many lists meet). */
static int defer_list(struct planner *p, const struct span_list *l)
{
    if (!l->n)
        return 0;
    if (p->nlists == p->listcap) {
        size_t cap = p->listcap ? 2 * p->listcap : 64;
        const struct span_list **v = realloc(p->lists, cap * sizeof *v);
        if (!v)
            return -1;
        p->lists = v;
        p->listcap = cap;
    }
    p->lists[p->nlists++] = l;
    return 0;
}

static int append_list(struct planner *p, size_t *k, const struct span_list *l)
{
    if (!l->n)
        return 0;
    if (*k + l->n > p->segcap && reserve_spans(p, *k + l->n))
        return -1;
    if (p->nruns + 2 > p->runcap && reserve_runs(p))
        return -1;
    p->runs[p->nruns++] = *k;
    memcpy(&p->seg[*k], l->v, l->n * sizeof *l->v);
    *k += l->n;
    return 0;
}

/* LSD radix sort of v[0..n) on the start address (scratch tmp of n), skipping equal bytes. */
static void radix_sort_range(struct span *v, struct span *tmp, size_t n)
{
    uint64_t all_or = 0, all_and = ~0ull;
    for (size_t x = 0; x < n; x++) {
        all_or |= v[x].a;
        all_and &= v[x].a;
    }
    uint64_t differ = all_or ^ all_and;
    struct span *src = v, *dst = tmp;
    for (int shift = 0; shift < 64; shift += 8) {
        if (!((differ >> shift) & 0xff))
            continue;
        size_t cnt[257] = {0};
        for (size_t x = 0; x < n; x++)
            cnt[((src[x].a >> shift) & 0xff) + 1]++;
        for (int d = 0; d < 256; d++)
            cnt[d + 1] += cnt[d];
        for (size_t x = 0; x < n; x++)
            dst[cnt[(src[x].a >> shift) & 0xff]++] = src[x];
        struct span *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, n * sizeof *v);
}

/* Add the span of buffer j, which overlaps buffer i in time, when it is placed. */
static inline int take_part(struct planner *p, size_t i, uint32_t j, size_t *k)
{
    if (!p->placed[j] || j == i || p->sz[j] == 0)
        return 0;
    if (*k == p->segcap && reserve_spans(p, *k + 1))
        return -1;
    p->seg[*k].a = p->off[j];
    p->seg[(*k)++].b = p->off[j] + p->sz[j];
    return 0;
}

/* Block B, met by buffer i without being covered: the covering buffers' list as one run, and
 * the placed buffers of part[B] that overlap i, sorted, as another. */
static int collect_partial_block(struct planner *p, size_t i, size_t B, size_t *k)
{
    const struct union_tree *t = p->tree;
    if (defer_list(p, &t->cov[B]))
        return -1;
    uint32_t f = t->first[i], e = t->last[i];
    size_t from = *k;
    /* Skip the entries that end at or before f: in the first group (by decreasing end) they
     * come last; in the third, they come before the first entry whose reach passes f. */
    size_t a = t->sstart[B], b = t->pstart[B + 1];
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (t->part[m].reach <= f)
            a = m + 1;
        else
            b = m;
    }
    const struct part_entry *pe = t->part;
    for (size_t x = t->pstart[B]; x < t->cstart[B] && pe[x].e > f; x++) /* start before B */
        if (take_part(p, i, pe[x].id, k))
            return -1;
    for (size_t x = t->cstart[B]; x < t->sstart[B] && pe[x].f < e; x++) /* end after B */
        if (take_part(p, i, pe[x].id, k))
            return -1;
    for (size_t x = a; x < t->pstart[B + 1] && pe[x].f < e; x++) /* inside B */
        if (pe[x].e > f && take_part(p, i, pe[x].id, k))
            return -1;
    size_t cnt = *k - from;
    if (!cnt)
        return 0;
    if (cnt < 32)
        insertion_sort_spans(&p->seg[from], cnt);
    else
        radix_sort_range(&p->seg[from], &p->tmp[from], cnt);
    if (p->nruns + 2 > p->runcap && reserve_runs(p))
        return -1;
    p->runs[p->nruns++] = from;
    return 0;
}

/* Up to this many sorted runs are merged on the fly while looking for a gap. */
#define STREAM_RUNS 4

static long collect_spans_tree(struct planner *p, size_t i)
{
    const struct union_tree *t = p->tree;
    size_t m1, m2, c1, c2, k = 0;
    tree_blocks(t, i, &m1, &m2, &c1, &c2);
    p->nruns = p->nlists = 0;
    if (!(c1 <= m1 && m1 < c2) && collect_partial_block(p, i, m1, &k))
        return -1;
    if (m2 != m1 && !(c1 <= m2 && m2 < c2) && collect_partial_block(p, i, m2, &k))
        return -1;
    if (c1 < c2) {
        if (defer_list(p, &t->cov[c1]) || (c2 - 1 != c1 && defer_list(p, &t->cov[c2 - 1])))
            return -1;
        for (size_t a = c1 + t->leaves, b = c2 + t->leaves; a < b; a /= 2, b /= 2) {
            if ((a & 1) && defer_list(p, &t->sub[a++]))
                return -1;
            if ((b & 1) && defer_list(p, &t->sub[--b]))
                return -1;
        }
    }
    if (p->nruns + p->nlists > STREAM_RUNS) { /* many runs: copy them and merge pairwise */
        for (size_t x = 0; x < p->nlists; x++)
            if (append_list(p, &k, p->lists[x]))
                return -1;
        p->nlists = 0;
    }
    return (long)k;
}

/* Spans of the placed buffers (other than i) whose lifetimes overlap buffer i's; -1 on OOM. */
static long collect_spans(struct planner *p, size_t i)
{
    if (p->use_tree)
        return collect_spans_tree(p, i);
    int64_t l = p->lo[i], u = p->hi[i];
    size_t k = 0;
    for (int c = 0; c < p->ncls; c++) {
        const struct time_class *tc = &p->cls[c];
        __int128 from = (__int128)l - ((__int128)1 << (tc->log2len + 1)) + 1;
        for (size_t x = first_at_or_after(tc->lo, tc->n, from); x < tc->n && tc->lo[x] < u; x++) {
            uint32_t j = tc->ids[x];
            if (!p->placed[j] || p->hi[j] <= l || j == i || p->sz[j] == 0)
                continue;
            if (k == p->segcap && reserve_spans(p, k + 1))
                return -1;
            p->seg[k].a = p->off[j];
            p->seg[k++].b = p->off[j] + p->sz[j];
        }
    }
    return (long)k;
}

static void insertion_sort_spans(struct span *s, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        struct span v = s[i];
        size_t j = i;
        for (; j > 0 && s[j - 1].a > v.a; j--)
            s[j] = s[j - 1];
        s[j] = v;
    }
}

/* LSD radix sort on the start address, 8 bits a pass, skipping the passes where every key
 * agrees. */
static void radix_sort_spans(struct planner *p, size_t n)
{
    uint64_t all_or = 0, all_and = ~0ull;
    for (size_t i = 0; i < n; i++) {
        all_or |= p->seg[i].a;
        all_and &= p->seg[i].a;
    }
    uint64_t differ = all_or ^ all_and;
    struct span *src = p->seg, *dst = p->tmp;
    for (int shift = 0; shift < 64; shift += 8) {
        if (!((differ >> shift) & 0xff))
            continue;
        size_t cnt[257] = {0};
        for (size_t i = 0; i < n; i++)
            cnt[((src[i].a >> shift) & 0xff) + 1]++;
        for (int d = 0; d < 256; d++)
            cnt[d + 1] += cnt[d];
        for (size_t i = 0; i < n; i++)
            dst[cnt[(src[i].a >> shift) & 0xff]++] = src[i];
        struct span *t = src;
        src = dst;
        dst = t;
    }
    if (src != p->seg) {
        p->tmp = p->seg;
        p->seg = src;
    }
}

/* The spans collected from the union tree form sorted runs: merge adjacent runs pairwise,
 * k log(runs) with sequential access, instead of sorting from scratch. */
static void merge_runs(struct planner *p, size_t n)
{
    size_t *r = p->runs, m = p->nruns;
    r[m] = n;
    struct span *src = p->seg, *dst = p->tmp;
    while (m > 1) {
        size_t w = 0;
        for (size_t x = 0; x < m; x += 2) {
            size_t a = r[x], e = r[x + 1], o = a;
            r[w++] = a;
            if (x + 1 == m) { /* odd run out: copy */
                memcpy(&dst[a], &src[a], (e - a) * sizeof *src);
                break;
            }
            size_t b = e, f = r[x + 2];
            while (a < e && b < f)
                dst[o++] = src[b].a < src[a].a ? src[b++] : src[a++];
            if (a < e)
                memcpy(&dst[o], &src[a], (e - a) * sizeof *src);
            else if (b < f)
                memcpy(&dst[o], &src[b], (f - b) * sizeof *src);
        }
        r[w] = n;
        m = w;
        struct span *t = src;
        src = dst;
        dst = t;
    }
    if (src != p->seg) {
        p->tmp = p->seg;
        p->seg = src;
    }
}

static void sort_spans(struct planner *p, size_t n)
{
    if (p->use_tree && n >= 48)
        merge_runs(p, n);
    else if (n < 48)
        insertion_sort_spans(p->seg, n);
    else
        radix_sort_spans(p, n);
}

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
static int place(struct planner *p, size_t i, enum fit fit)
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
    if (g.best == UINT64_MAX)
        round_up(g.cur, g.al, &g.best); /* bounded by the checked total in planner_init */
    p->off[i] = g.best;
    p->placed[i] = 1;
    return 0;
}

/* Place every buffer in the given order; returns the peak, UINT64_MAX on OOM. */
static uint64_t decode(struct planner *p, const uint32_t *order, enum fit fit)
{
    memset(p->placed, 0, p->n);
    p->use_tree = p->tree != NULL;
    if (p->use_tree)
        union_tree_clear(p->tree);
    uint64_t peak = 0;
    for (size_t k = 0; k < p->n; k++) {
        uint32_t i = order[k];
        if ((k & 1023) == 0 && p->stop && atomic_load(p->stop) < p->index)
            return UINT64_MAX - 1; /* an earlier decoder reached the load bound */
        if (place(p, i, fit))
            return UINT64_MAX;
        if (p->use_tree && p->sz[i] && union_tree_insert(p->tree, i, (struct span){p->off[i], p->off[i] + p->sz[i]}))
            return UINT64_MAX;
        if (p->off[i] + p->sz[i] > peak)
            peak = p->off[i] + p->sz[i];
    }
    return peak;
}

/* ---- load profile and load bound ---------------------------------------------------------- */

static uint64_t load_bound_of(const int64_t *lo, const int64_t *hi, const uint64_t *sz, size_t n)
{
    uint64_t(*ev)[3] = malloc(2 * n * sizeof *ev + 1); /* {time ^ sign, kind (0 = end), size} */
    if (!ev)
        return UINT64_MAX;
    for (size_t i = 0; i < n; i++) { /* ends first, so that the stable sort puts them first */
        ev[i][0] = (uint64_t)hi[i] ^ (1ull << 63), ev[i][1] = 0, ev[i][2] = sz[i];
        ev[n + i][0] = (uint64_t)lo[i] ^ (1ull << 63), ev[n + i][1] = 1, ev[n + i][2] = sz[i];
    }
    uint64_t live = 0, best = UINT64_MAX;
    if (radix_sort_words(&ev[0][0], 2 * n, 3, 0))
        goto out;
    best = 0;
    for (size_t k = 0; k < 2 * n; k++) {
        if (ev[k][1] == 0) {
            live -= ev[k][2];
        } else if (__builtin_add_overflow(live, ev[k][2], &live)) {
            best = UINT64_MAX;
            break;
        }
        if (live > best)
            best = live;
    }
out:
    free(ev);
    return best;
}

uint64_t ws_plan_load_bound(const struct ws_plan_buffer *b, size_t n, uint64_t default_alignment)
{
    int64_t *lo = malloc(n * sizeof *lo + 1), *hi = malloc(n * sizeof *hi + 1);
    uint64_t *sz = malloc(n * sizeof *sz + 1), lb = UINT64_MAX;
    if (!lo || !hi || !sz)
        goto out;
    for (size_t i = 0; i < n; i++) {
        lo[i] = b[i].lower;
        hi[i] = b[i].upper;
        if (round_up(b[i].size, effective_alignment(&b[i], default_alignment), &sz[i]))
            goto out;
    }
    lb = load_bound_of(lo, hi, sz, n);
out:
    free(lo);
    free(hi);
    free(sz);
    return lb;
}

/* For every buffer, the largest load over its lifetime ("breadth"), for the breadth-first
 * order: a buffer that lives through the busiest moment constrains the peak most. */
static int breadth_of(const struct planner *p, uint64_t *breadth)
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

enum order_kind { ORDER_SIZE, ORDER_BREADTH, ORDER_LENGTH, ORDER_AREA, ORDER_START, ORDER_COUNT };

struct order_key {
    uint64_t k1, k2, k3;
    uint32_t idx;
};

static uint64_t saturating_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* noise > 0 scales each primary key by a random factor in (1 - noise, 1]: nearby orders that
 * the search samples. */
static int make_order(const struct planner *p, enum order_kind kind, const uint64_t *breadth, double noise,
                      uint64_t *rng, uint32_t *order)
{
    struct order_key *keys = malloc(p->n * sizeof *keys + 1);
    if (!keys)
        return -1;
    int64_t latest = INT64_MIN;
    for (size_t i = 0; i < p->n; i++)
        latest = p->lo[i] > latest ? p->lo[i] : latest;
    for (size_t i = 0; i < p->n; i++) {
        uint64_t len = lifetime_length(p->lo[i], p->hi[i]);
        uint64_t start = (uint64_t)p->lo[i] ^ (1ull << 63);
        struct order_key *k = &keys[i];
        k->idx = (uint32_t)i;
        switch (kind) {
        case ORDER_SIZE: *k = (struct order_key){p->sz[i], len, start, (uint32_t)i}; break;
        case ORDER_BREADTH: *k = (struct order_key){breadth[i], p->sz[i], start, (uint32_t)i}; break;
        case ORDER_START: /* by increasing start (the distance to the latest start, so that the
                           * search's noise moves a buffer among those starting near it), then
                           * longer, then larger */
            *k = (struct order_key){(uint64_t)latest - (uint64_t)p->lo[i], len, p->sz[i], (uint32_t)i};
            break;
        case ORDER_LENGTH: *k = (struct order_key){len, p->sz[i], start, (uint32_t)i}; break;
        default: *k = (struct order_key){saturating_mul(len, p->sz[i]), p->sz[i], start, (uint32_t)i}; break;
        }
        if (noise > 0)
            k->k1 = (uint64_t)((double)k->k1 * (1.0 - noise * (double)(rng_next(rng) >> 11) * 0x1p-53));
    }
    /* k1 and k2 descending, k3 ascending, then index: stable radix passes from the last key to
     * the first, starting from index order (the same order as cmp_order_key). */
    uint64_t(*w)[4] = malloc(p->n * sizeof *w + 1);
    int rc = -1;
    if (!w)
        goto out;
    for (size_t i = 0; i < p->n; i++) {
        w[i][0] = ~keys[i].k1;
        w[i][1] = ~keys[i].k2;
        w[i][2] = keys[i].k3;
        w[i][3] = keys[i].idx;
    }
    if (radix_sort_words(&w[0][0], p->n, 4, 2) || radix_sort_words(&w[0][0], p->n, 4, 1) ||
        radix_sort_words(&w[0][0], p->n, 4, 0))
        goto out;
    for (size_t i = 0; i < p->n; i++)
        order[i] = (uint32_t)w[i][3];
    rc = 0;
out:
    free(w);
    free(keys);
    return rc;
}

/* ---- choosing the structure for overlap queries ------------------------------------------- */

/* Average number of buffers whose lifetime meets a buffer's: n minus those that start at or
 * after its end minus those that end at or before its start. */
static double average_overlap(const struct planner *p, int64_t *los, int64_t *his)
{
    size_t n = p->n;
    memcpy(los, p->lo, n * sizeof *los);
    memcpy(his, p->hi, n * sizeof *his);
    if (sort_i64(los, n) || sort_i64(his, n))
        return -1;
    /* Over all i: the buffers starting at or after hi[i] and those ending at or before lo[i],
     * counted by walking the two sorted lists together. */
    double total = (double)n * (double)n;
    for (size_t x = 0, j = 0; x < n; x++) { /* his[x]: los from j on start at or after it */
        while (j < n && los[j] < his[x])
            j++;
        total -= (double)(n - j);
    }
    for (size_t x = 0, j = 0; x < n; x++) { /* los[x]: his before j end at or before it */
        while (j < n && his[j] <= los[x])
            j++;
        total -= (double)j;
    }
    return n ? total / (double)n : 0;
}

/* About this many lifetime ends per block: enough that long buffers touch few blocks, few
 * enough that filtering a block's part list stays cheap. */
#define BLOCK_ENDS 768

/* While building: reach holds the group (0: starts before the block, 1: ends after it, 2: both
 * in it); group 0 by decreasing end, the others by start. */
static int cmp_part_entry(const void *x, const void *y)
{
    const struct part_entry *a = x, *b = y;
    if (a->reach != b->reach)
        return a->reach < b->reach ? -1 : 1;
    if (a->reach == 0 && a->e != b->e)
        return a->e > b->e ? -1 : 1;
    if (a->f != b->f)
        return a->f < b->f ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static int build_union_tree(struct planner *p)
{
    size_t n = p->n, m = 0;
    struct union_tree *t = calloc(1, sizeof *t);
    if (!t)
        return -1;
    p->tree = t;
    t->first = malloc(n * sizeof *t->first);
    t->last = malloc(n * sizeof *t->last);
    uint64_t(*ends)[2] = malloc(2 * n * sizeof *ends + 1); /* {time ^ sign, 2 i + (0: lo, 1: hi)} */
    if (!t->first || !t->last || !ends) {
        free(ends);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        ends[2 * i][0] = (uint64_t)p->lo[i] ^ (1ull << 63), ends[2 * i][1] = 2 * i;
        ends[2 * i + 1][0] = (uint64_t)p->hi[i] ^ (1ull << 63), ends[2 * i + 1][1] = 2 * i + 1;
    }
    if (radix_sort_words(&ends[0][0], 2 * n, 2, 0)) {
        free(ends);
        return -1;
    }
    /* Number the distinct times in order: segment k is [time k, time k + 1). */
    for (size_t x = 0; x < 2 * n; x++) {
        if (x > 0 && ends[x][0] != ends[x - 1][0])
            m++;
        size_t i = ends[x][1] / 2;
        if (ends[x][1] & 1)
            t->last[i] = (uint32_t)m;
        else
            t->first[i] = (uint32_t)m;
    }
    m++; /* distinct times */
    free(ends);
    size_t segments = m - 1, w = 1;
    while (w < (size_t)1 << 20 && (double)w * 2 * (double)n < (double)BLOCK_ENDS * (double)segments)
        w *= 2;
    t->width = (uint32_t)w;
    t->blocks = (segments + w - 1) / w;
    t->leaves = 1;
    while (t->leaves < t->blocks)
        t->leaves *= 2;
    t->sub = calloc(2 * t->leaves, sizeof *t->sub);
    t->cov = calloc(t->blocks, sizeof *t->cov);
    t->pstart = calloc(t->blocks + 2, sizeof *t->pstart);
    t->cstart = malloc(t->blocks * sizeof *t->cstart + 1);
    t->sstart = malloc(t->blocks * sizeof *t->sstart + 1);
    if (!t->sub || !t->cov || !t->first || !t->last || !t->pstart || !t->cstart || !t->sstart)
        return -1;
    size_t total = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n; i++) {
            size_t m1, m2, c1, c2;
            tree_blocks(t, i, &m1, &m2, &c1, &c2);
            for (size_t B = m1; B <= m2; B += (m2 > m1 ? m2 - m1 : 1)) {
                if (B >= c1 && B < c2)
                    continue;
                if (pass == 0)
                    t->pstart[B + 2]++, total++;
                else
                    t->part[t->pstart[B + 1]++] = (struct part_entry){t->first[i], t->last[i], (uint32_t)i,
                                                                      t->first[i] < B * w        ? 0
                                                                      : t->last[i] > (B + 1) * w ? 1
                                                                                                 : 2};
            }
        }
        if (pass == 0) {
            for (size_t B = 0; B < t->blocks; B++)
                t->pstart[B + 2] += t->pstart[B + 1];
            if (!(t->part = malloc(total * sizeof *t->part + 1)))
                return -1;
        }
    }
    for (size_t B = 0; B < t->blocks; B++) {
        size_t x = t->pstart[B], end = t->pstart[B + 1];
        qsort(&t->part[x], end - x, sizeof *t->part, cmp_part_entry);
        for (; x < end && t->part[x].reach == 0; x++)
            ;
        t->cstart[B] = x;
        for (; x < end && t->part[x].reach == 1; x++)
            ;
        t->sstart[B] = x;
        uint32_t reach = 0;
        for (x = t->pstart[B]; x < end; x++) {
            reach = x >= t->sstart[B] && t->part[x].e > reach ? t->part[x].e : reach;
            t->part[x].reach = reach;
        }
    }
    return 0;
}

/* Below this many overlapping buffers on average, collecting them one by one is cheaper than
 * keeping the union tree up to date. */
#define DENSE_OVERLAP 256.0

static int choose_structure(struct planner *p)
{
    int64_t *a = malloc(2 * p->n * sizeof *a + 1), *b = malloc(p->n * sizeof *b + 1);
    int rc = -1;
    if (!a || !b)
        goto out;
    rc = p->n >= 2 && p->n < UINT32_MAX / 2 && average_overlap(p, a, b) >= DENSE_OVERLAP ? build_union_tree(p) : 0;
out:
    free(a);
    free(b);
    return rc;
}

/* ---- the portfolio ------------------------------------------------------------------------ */

struct heuristic {
    enum order_kind order;
    enum fit fit;
    const char *name;
};

/* The portfolio includes the reference, best-fit by decreasing size, and keeps the smallest
 * peak, so the default is never worse than the reference; it stops early only at the load
 * bound, which nothing beats. Breadth-first comes first because it most often reaches it. */
static const struct heuristic portfolio[] = {
    {ORDER_BREADTH, FIT_BEST, "best-fit-breadth"},
    {ORDER_SIZE, FIT_BEST, "best-fit-decreasing-size"},
    {ORDER_SIZE, FIT_FIRST, "first-fit-decreasing-size"},
    {ORDER_AREA, FIT_BEST, "best-fit-decreasing-area"},
    {ORDER_LENGTH, FIT_BEST, "best-fit-decreasing-lifetime"},
    {ORDER_START, FIT_FIRST, "first-fit-by-start"},
    {ORDER_START, FIT_BEST, "best-fit-by-start"},
};

struct best_plan {
    uint64_t *off;
    uint64_t peak;
    const char *name;
};

static int try_order(struct planner *p, const uint32_t *order, enum fit fit, const char *name, struct best_plan *best)
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
    if (p->tree) {
        w->tree = calloc(1, sizeof *w->tree);
        if (w->tree) {
            *w->tree = *p->tree; /* shares first, last, pstart, part */
            w->tree->sub = calloc(2 * w->tree->leaves, sizeof *w->tree->sub);
            w->tree->cov = calloc(w->tree->blocks, sizeof *w->tree->cov);
        }
        if (!w->tree || !w->tree->sub || !w->tree->cov)
            return -1;
    }
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
    if (w->tree) {
        union_tree_free_lists(w->tree); /* the rest is shared */
        free(w->tree);
    }
}

/* The portfolio runs on up to two threads, each taking every other decoder with its own working
 * state; the layouts are then compared in portfolio order, so the result is the same as a
 * sequential run. A worker skips the decoders after one that reached the load bound. */
struct portfolio_run {
    struct planner *p;
    const uint64_t *breadth;
    const size_t *which; /* decoder indices into portfolio[] */
    size_t count;
    uint64_t *peak;     /* per entry of which */
    uint64_t **off;     /* per entry of which */
    atomic_size_t done; /* smallest entry that reached the load bound */
    atomic_int failed;
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
        if (e > atomic_load(&run->done))
            break;
        const struct heuristic *h = &portfolio[run->which[e]];
        uint64_t peak;
        w.stop = &run->done;
        w.index = e;
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

/* Above this many buffers the default runs only the two decreasing-size decoders (one order,
 * best and first fit): each decoder costs seconds there. */
#define LARGE_PROBLEM 250000

static int run_portfolio(struct planner *p, const uint64_t *breadth, uint32_t *order, struct best_plan *best)
{
    (void)order;
    size_t which[sizeof portfolio / sizeof portfolio[0]], count = 0;
    for (size_t h = 0; h < sizeof portfolio / sizeof portfolio[0]; h++)
        if (p->n <= LARGE_PROBLEM || portfolio[h].order == ORDER_SIZE)
            which[count++] = h;
    uint64_t peak[sizeof which / sizeof which[0]];
    uint64_t *off[sizeof which / sizeof which[0]] = {0};
    struct portfolio_run run = {p, breadth, which, count, peak, off, SIZE_MAX, 0};
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
            best->name = portfolio[which[e]].name;
            memcpy(best->off, off[e], p->n * sizeof *best->off);
        }
    rc = 0;
out:
    for (size_t e = 0; e < count; e++)
        free(off[e]);
    return rc;
}

/* First half of the search: the portfolio's decoders on randomly perturbed orders. */
static int perturbed_orders(struct planner *p, const uint64_t *breadth, uint32_t *order, struct best_plan *best,
                            uint64_t *rng, double deadline)
{
    static const double noise[] = {0.001, 0.01, 0.05, 0.2};
    const char *start_name = best->name;
    while (best->peak > p->lb && now_s() < deadline) {
        const struct heuristic *h = &portfolio[rng_below(rng, sizeof portfolio / sizeof portfolio[0])];
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
        if (top_of(p, i) > s->peak) {
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
static int search_improve(struct planner *p, uint64_t seed, double deadline, int *improved)
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
        if ((iter & 15) == 0 && now_s() >= deadline)
            break;
        long v = pick_over(&s);
        if (v < 0 || s.over == 0) {
            search_reset(&s); /* the peak dropped */
            continue;
        }
        if (search_move(&s, (uint32_t)v) < 0)
            goto out;
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

/* ---- exact search: bottom-up skyline over time ------------------------------------------- */

/*
 * For small problems with a time limit: a depth-first search for a layout whose peak is the load
 * bound P. Time is cut into columns (the intervals between consecutive distinct lower/upper
 * values); the state is the skyline sky[c] (every address below it in column c is taken or given
 * up) and rem[c], the bytes of the unplaced buffers alive in column c. A column is open while
 * rem[c] > 0, and sky[c] + rem[c] <= P always holds.
 *
 * Each step takes the lowest open point of the skyline, leftmost among equals: the run of open
 * columns [c0, c1) at the lowest height h. Since the columns left of c0 are higher (or closed) and
 * the run is the lowest, a buffer put at (c0, h) without leaving a hole below it must start at c0
 * exactly, end by c1 and sit at offset h: the candidates are the unplaced buffers starting in
 * column c0 with upper <= c1, size <= P - h and h aligned to them. When some column of the run has
 * slack (sky + rem < P), the search may also give up the addresses [h, h') of the columns from c0
 * to the next start of an unplaced buffer (waste). On a problem where every column holds exactly
 * P bytes (a rectangle cut into pieces) no waste is possible and the rule is complete: every
 * layout of peak P is reachable.
 *
 * Pruning: a run [e, c1) left at height h to the right of a placed buffer needs a buffer starting
 * at e that ends by c1 (or slack there); identical buffers (same lifetime, size, alignment) are
 * tried once per step; and a table remembers the states (a hash of the placed set and the
 * skyline) whose whole subtree failed. The search restarts with a growing node limit and with the
 * candidates' order shuffled by the seed; the failed states stay valid across restarts.
 */
struct exact {
    const struct planner *p;
    size_t m;               /* columns */
    uint32_t *clo, *chi;    /* per buffer: column range [clo, chi) */
    uint64_t *sky, *rem;    /* per column */
    uint64_t *zcol;         /* per column + 1: prefix sums of random column keys */
    uint64_t *zbuf;         /* per buffer: random key */
    uint32_t *start, *cand; /* candidates of column c: cand[start[c] .. start[c + 1]) */
    unsigned char *placed;
    uint64_t *off;
    uint64_t target, hash;
    size_t left;     /* unplaced buffers of nonzero size */
    uint64_t *table; /* failed states, direct-mapped by hash */
    size_t table_mask;
    size_t *goal, ngoal, unwind; /* see exact_dfs */
    size_t *stack;               /* per column: scratch of exact_dfs */
    uint64_t nodes, node_limit;
    double deadline;
    int out_of_time;
};

#define EXACT_MAX_BUFFERS 2000
#define EXACT_NAME        "exact-skyline"

static int exact_open(const struct exact *x, size_t c) { return x->rem[c] > 0; }

static void exact_raise(struct exact *x, size_t a, size_t b, uint64_t d, int up)
{
    for (size_t c = a; c < b; c++)
        x->sky[c] = up ? x->sky[c] + d : x->sky[c] - d;
    uint64_t zh = (x->zcol[b] - x->zcol[a]) * d;
    x->hash = up ? x->hash + zh : x->hash - zh;
}

static void exact_put(struct exact *x, uint32_t i, uint64_t h, int up)
{
    const struct planner *p = x->p;
    for (size_t c = x->clo[i]; c < x->chi[i]; c++)
        x->rem[c] = up ? x->rem[c] - p->sz[i] : x->rem[c] + p->sz[i];
    exact_raise(x, x->clo[i], x->chi[i], p->sz[i], up);
    x->hash ^= x->zbuf[i];
    x->placed[i] = (unsigned char)up;
    x->off[i] = h;
    if (up)
        x->left--;
    else
        x->left++;
}

/* 1 when the addresses from h up in column c can be filled or given up: an unplaced buffer starts
 * in c, ends by column e and fits under the target at h, or c has slack. */
static int exact_fillable(const struct exact *x, size_t c, size_t e, uint64_t h)
{
    const struct planner *p = x->p;
    if (x->sky[c] + x->rem[c] < x->target)
        return 1;
    for (uint32_t k = x->start[c]; k < x->start[c + 1]; k++) {
        uint32_t j = x->cand[k];
        if (!x->placed[j] && x->chi[j] <= e && p->sz[j] <= x->target - h && h % p->al[j] == 0)
            return 1;
    }
    return 0;
}

static int exact_failed(const struct exact *x)
{
    uint64_t k = x->hash | 1;
    return x->table[k & x->table_mask] == k;
}

static void exact_remember(struct exact *x)
{
    uint64_t k = x->hash | 1;
    x->table[k & x->table_mask] = k;
}

static int same_buffer(const struct planner *p, uint32_t a, uint32_t b)
{
    return p->lo[a] == p->lo[b] && p->hi[a] == p->hi[b] && p->sz[a] == p->sz[b] && p->al[a] == p->al[b];
}

static int exact_dfs(struct exact *x);

/* One step inside the component of open columns [L, R): fill its lowest point. */
static int exact_step(struct exact *x, size_t L, size_t R)
{
    const struct planner *p = x->p;
    size_t c0 = R;
    for (size_t c = L; c < R; c++)
        if (exact_open(x, c) && (c0 == R || x->sky[c] < x->sky[c0]))
            c0 = c;
    if (c0 == R)
        return 0; /* cannot happen: L is open */
    uint64_t h = x->sky[c0];
    size_t c1 = c0 + 1;
    while (c1 < x->m && exact_open(x, c1) && x->sky[c1] == h)
        c1++;
    uint32_t last = UINT32_MAX;
    for (uint32_t k = x->start[c0]; k < x->start[c0 + 1]; k++) {
        uint32_t i = x->cand[k];
        if (x->placed[i] || x->chi[i] > c1 || p->sz[i] > x->target - h || h % p->al[i])
            continue;
        if (last != UINT32_MAX && same_buffer(p, i, last))
            continue;
        last = i;
        exact_put(x, i, h, 1);
        int r = 1;
        /* The run left behind at h must still be fillable from its left end. */
        if (x->chi[i] < c1 && exact_open(x, x->chi[i]) && !exact_fillable(x, x->chi[i], c1, h))
            r = 0;
        else
            r = exact_dfs(x);
        if (r == 1)
            return 1;
        exact_put(x, i, h, 0);
        if (r != 0)
            return r;
    }
    /* Give up [h, h') in the columns from c0 to the next start of an unplaced buffer. */
    size_t e = c0 + 1;
    while (e < c1) {
        int starts = 0;
        for (uint32_t k = x->start[e]; k < x->start[e + 1] && !starts; k++)
            starts = !x->placed[x->cand[k]];
        if (starts)
            break;
        e++;
    }
    uint64_t top = x->target;
    if (c0 > 0 && exact_open(x, c0 - 1) && x->sky[c0 - 1] < top)
        top = x->sky[c0 - 1];
    if (e == c1 && c1 < x->m && exact_open(x, c1) && x->sky[c1] < top)
        top = x->sky[c1];
    for (size_t c = c0; c < e; c++)
        if (x->target - x->rem[c] < top)
            top = x->target - x->rem[c];
    if (top > h) {
        exact_raise(x, c0, e, top - h, 1);
        int r = exact_dfs(x);
        if (r == 1)
            return 1;
        exact_raise(x, c0, e, top - h, 0);
        if (r != 0)
            return r;
    }
    return 0;
}

/*
 * 1 found (x->off holds the layout), 0 the subtree has none, -1 stopped by a limit, 2 the
 * search below a component root failed after that component was complete (x->unwind names the
 * root's goal): the rest does not depend on how the component was laid out, so the root fails.
 *
 * Components: the unplaced buffers split into groups with disjoint column ranges that can be
 * laid out independently. The search fills the leftmost group completely before the others
 * (goal[]: the number of unplaced buffers left when the group is done).
 */
static int exact_dfs(struct exact *x)
{
    if (x->left == 0)
        return 1;
    size_t t = x->ngoal - 1;
    if (x->left == x->goal[t]) { /* the group of goal t is complete: go on with the rest */
        x->ngoal--;
        int r = exact_dfs(x);
        x->ngoal++;
        if (r == 0) {
            x->unwind = t;
            return 2;
        }
        return r;
    }
    if (++x->nodes > x->node_limit)
        return -1;
    if ((x->nodes & 255) == 0 && now_s() >= x->deadline) {
        x->out_of_time = 1;
        return -1;
    }
    if (exact_failed(x))
        return 0;
    size_t L = 0, R, k = 0;
    while (L < x->m && !exact_open(x, L))
        L++;
    if (L == x->m)
        return 0; /* cannot happen: unplaced buffers keep their columns open */
    R = L + 1;
    for (size_t c = L; c < R; c++)
        for (uint32_t q = x->start[c]; q < x->start[c + 1]; q++) {
            uint32_t j = x->cand[q];
            if (!x->placed[j]) {
                k++;
                if (x->chi[j] > R)
                    R = x->chi[j];
            }
        }
    /* Every left end of a step of the skyline needs a buffer that starts there and ends before
     * the skyline rises above it (or slack). nxt[c]: the first column after c that is closed or
     * higher, by a stack pass from the right. */
    size_t sp = 0;
    for (size_t c = R; c-- > L;) {
        while (sp && exact_open(x, x->stack[sp - 1]) && x->sky[x->stack[sp - 1]] <= x->sky[c])
            sp--;
        size_t e = sp ? x->stack[sp - 1] : R;
        if (exact_open(x, c) && (c == L || !exact_open(x, c - 1) || x->sky[c - 1] > x->sky[c]) &&
            !exact_fillable(x, c, e, x->sky[c])) {
            exact_remember(x);
            return 0;
        }
        x->stack[sp++] = c;
    }
    int r;
    if (x->left - k > x->goal[t]) { /* the group has split: its leftmost part is a new root */
        x->goal[x->ngoal++] = x->left - k;
        r = exact_step(x, L, R);
        x->ngoal--;
        if (r == 2 && x->unwind == x->ngoal)
            r = 0;
    } else {
        r = exact_step(x, L, R);
    }
    if (r == 0)
        exact_remember(x);
    return r;
}

static void exact_free(struct exact *x)
{
    free(x->clo);
    free(x->chi);
    free(x->sky);
    free(x->rem);
    free(x->zcol);
    free(x->zbuf);
    free(x->start);
    free(x->cand);
    free(x->placed);
    free(x->off);
    free(x->table);
    free(x->goal);
    free(x->stack);
}

struct exact_key {
    uint64_t len, size;
    uint32_t i;
};

static int cmp_exact_key(const void *a, const void *b)
{
    const struct exact_key *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Order the candidates of every column: longest lifetime first, then largest; from the second
 * round on, a random quarter of them get a random rank instead of their lifetime. */
static void exact_order(struct exact *x, struct exact_key *keys, uint64_t *rng, unsigned round)
{
    const struct planner *p = x->p;
    for (size_t c = 0; c < x->m; c++) {
        uint32_t a = x->start[c], b = x->start[c + 1];
        for (uint32_t k = a; k < b; k++) {
            uint32_t i = x->cand[k];
            uint64_t len = x->chi[i] - x->clo[i];
            if (round > 0 && rng_below(rng, 4) == 0)
                len = rng_below(rng, x->m + 1);
            keys[k - a] = (struct exact_key){len, p->sz[i], i};
        }
        qsort(keys, b - a, sizeof *keys, cmp_exact_key);
        for (uint32_t k = a; k < b; k++)
            x->cand[k] = keys[k - a].i;
    }
}

/* Look for a layout of peak P = p->lb; on success copy it into off and return 1. 0 when none was
 * found before the deadline, -1 when memory runs out. */
static int exact_search(const struct planner *p, uint64_t seed, double deadline, uint64_t *off)
{
    struct exact x = {.p = p, .target = p->lb, .deadline = deadline};
    size_t n = p->n, nt = 0;
    int rc = -1;
    int64_t *times = malloc(2 * n * sizeof *times + 1);
    struct exact_key *keys = malloc(n * sizeof *keys + 1);
    uint64_t rng = seed ^ 0x9fb21c651e98df25ull;
    if (!times || !keys)
        goto out;
    for (size_t i = 0; i < n; i++)
        if (p->sz[i]) {
            times[nt++] = p->lo[i];
            times[nt++] = p->hi[i];
        }
    if (sort_i64(times, nt))
        goto out;
    size_t u = 0;
    for (size_t k = 0; k < nt; k++)
        if (u == 0 || times[k] != times[u - 1])
            times[u++] = times[k];
    x.m = u ? u - 1 : 0;
    x.clo = malloc(n * sizeof *x.clo + 1);
    x.chi = malloc(n * sizeof *x.chi + 1);
    x.sky = calloc(x.m + 1, sizeof *x.sky);
    x.rem = calloc(x.m + 1, sizeof *x.rem);
    x.zcol = calloc(x.m + 2, sizeof *x.zcol);
    x.zbuf = malloc(n * sizeof *x.zbuf + 1);
    x.start = calloc(x.m + 2, sizeof *x.start);
    x.cand = malloc(n * sizeof *x.cand + 1);
    x.placed = calloc(n + 1, 1);
    x.off = calloc(n + 1, sizeof *x.off);
    x.table_mask = (1u << 18) - 1;
    x.table = calloc(x.table_mask + 1, sizeof *x.table);
    x.goal = calloc(n + 2, sizeof *x.goal);
    x.ngoal = 1;
    x.stack = calloc(x.m + 1, sizeof *x.stack);
    if (!x.goal || !x.stack || !x.clo || !x.chi || !x.sky || !x.rem || !x.zcol || !x.zbuf || !x.start || !x.cand ||
        !x.placed || !x.off || !x.table)
        goto out;
    for (size_t c = 0; c < x.m; c++)
        x.zcol[c + 1] = x.zcol[c] + rng_next(&rng);
    for (size_t i = 0; i < n; i++) {
        x.zbuf[i] = rng_next(&rng);
        if (!p->sz[i]) {
            x.placed[i] = 1; /* occupies nothing: offset 0 */
            continue;
        }
        size_t a = 0, b = u;
        while (a < b) { /* lower's index among the distinct times */
            size_t mid = a + (b - a) / 2;
            if (times[mid] < p->lo[i])
                a = mid + 1;
            else
                b = mid;
        }
        x.clo[i] = (uint32_t)a;
        for (b = u; a < b;) {
            size_t mid = a + (b - a) / 2;
            if (times[mid] < p->hi[i])
                a = mid + 1;
            else
                b = mid;
        }
        x.chi[i] = (uint32_t)a;
        for (size_t c = x.clo[i]; c < x.chi[i]; c++)
            x.rem[c] += p->sz[i]; /* at most the load bound */
        x.start[x.clo[i] + 1]++;
        x.left++;
    }
    rc = 0;
    for (size_t c = 0; c < x.m; c++) {
        /* With slack somewhere the rule is no longer complete and the time is better left to
         * the other searches: only problems whose every moment holds P bytes are tried. */
        if (x.rem[c] != x.target)
            goto out;
        x.start[c + 1] += x.start[c];
    }
    rc = -1;
    {
        uint32_t *fill = calloc(x.m + 1, sizeof *fill);
        if (!fill)
            goto out;
        for (size_t i = 0; i < n; i++)
            if (p->sz[i])
                x.cand[x.start[x.clo[i]] + fill[x.clo[i]]++] = (uint32_t)i;
        free(fill);
    }
    rc = 0;
    for (unsigned round = 0; !x.out_of_time && now_s() < deadline; round++) {
        exact_order(&x, keys, &rng, round);
        x.nodes = 0;
        x.node_limit = (uint64_t)(n + 1) * (64ull << (round < 20 ? round : 20));
        int r = exact_dfs(&x);
        if (r == 1) {
            memcpy(off, x.off, n * sizeof *off);
            rc = 1;
            break;
        }
        /* A stopped search has undone its moves: the state is the empty skyline again. */
        if (r == 0)
            break; /* the whole tree failed: no layout of peak P with this rule */
    }
out:
    free(times);
    free(keys);
    exact_free(&x);
    return rc;
}

/* ---- validation --------------------------------------------------------------------------- */

struct live_entry {
    uint64_t off, end;
};

static size_t live_lower_bound(const struct live_entry *live, size_t n, uint64_t off)
{
    size_t a = 0, b = n;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (live[m].off < off)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

/* Sweep over time keeping the live blocks sorted by offset: a new block overlaps some live
 * block exactly when it overlaps one of its two neighbours in that order. */
int ws_plan_validate(const struct ws_plan_buffer *b, size_t n, uint64_t default_alignment, uint64_t *peak)
{
    uint64_t(*ev)[3] = malloc(2 * n * sizeof *ev + 1);
    struct live_entry *live = malloc(n * sizeof *live + 1);
    size_t nlive = 0;
    int ok = -1;
    uint64_t top = 0;
    if (!ev || !live)
        goto out;
    ok = 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t a = effective_alignment(&b[i], default_alignment), sz, end;
        if (b[i].lower >= b[i].upper || b[i].offset % a || round_up(b[i].size, a, &sz) ||
            __builtin_add_overflow(b[i].offset, sz, &end))
            goto out;
        if (end > top)
            top = end;
        if (sz == 0)
            continue;
        ev[m][0] = (uint64_t)b[i].lower ^ (1ull << 63), ev[m][1] = 1, ev[m++][2] = i;
        ev[m][0] = (uint64_t)b[i].upper ^ (1ull << 63), ev[m][1] = 0, ev[m++][2] = i;
    }
    /* By kind (ends first), then stably by time: ties stay by index. */
    if (radix_sort_words(&ev[0][0], m, 3, 1) || radix_sort_words(&ev[0][0], m, 3, 0)) {
        ok = -1;
        goto out;
    }
    for (size_t k = 0; k < m; k++) {
        const struct ws_plan_buffer *x = &b[ev[k][2]];
        uint64_t a = effective_alignment(x, default_alignment), sz;
        round_up(x->size, a, &sz);
        struct live_entry e = {x->offset, x->offset + sz};
        size_t pos = live_lower_bound(live, nlive, e.off);
        if (ev[k][1] == 0) { /* end: remove the entry with this offset (offsets are unique) */
            memmove(&live[pos], &live[pos + 1], (nlive - pos - 1) * sizeof *live);
            nlive--;
            continue;
        }
        if ((pos < nlive && live[pos].off < e.end) || (pos > 0 && live[pos - 1].end > e.off))
            goto out;
        memmove(&live[pos + 1], &live[pos], (nlive - pos) * sizeof *live);
        live[pos] = e;
        nlive++;
    }
    ok = 1;
    if (peak)
        *peak = top;
out:
    free(ev);
    free(live);
    return ok;
}

/* ---- entry point -------------------------------------------------------------------------- */

/* The portfolio, then with a time limit: perturbed orders for the first half of the time and
 * the neighbourhood search from the best plan for the rest. */
static int plan_all(struct planner *p, const struct ws_plan_options *o, double t0, struct best_plan *best,
                    char *algorithm, size_t alen)
{
    uint32_t *order = malloc(p->n * sizeof *order + 1);
    uint64_t *breadth = malloc(p->n * sizeof *breadth + 1);
    uint64_t rng = o->seed ^ 0x2545f4914f6cdd1dull;
    int rc = -1;
    /* The breadth orders are used by the portfolio up to LARGE_PROBLEM buffers and by the search. */
    int need_breadth = p->n <= LARGE_PROBLEM || o->time_limit_s > 0;
    if (!order || !breadth || (need_breadth && breadth_of(p, breadth)) || run_portfolio(p, breadth, order, best))
        goto out;
    uint64_t portfolio_peak = best->peak;
    if (o->time_limit_s > 0 && best->peak > p->lb && p->n <= EXACT_MAX_BUFFERS) {
        uint64_t *off = malloc(p->n * sizeof *off + 1);
        int found = off ? exact_search(p, o->seed, t0 + o->time_limit_s / 2, off) : -1;
        if (found > 0) {
            memcpy(best->off, off, p->n * sizeof *best->off);
            best->peak = p->lb;
            best->name = EXACT_NAME;
        }
        free(off);
        if (found < 0)
            goto out;
    }
    if (o->time_limit_s > 0 && best->peak > p->lb) {
        double end = t0 + o->time_limit_s, half = t0 + (now_s() - t0 + o->time_limit_s) / 2;
        if (perturbed_orders(p, breadth, order, best, &rng, half))
            goto out;
        int improved = 0;
        memcpy(p->off, best->off, p->n * sizeof *best->off);
        if (best->peak > p->lb && search_improve(p, rng, end, &improved))
            goto out;
        if (improved)
            memcpy(best->off, p->off, p->n * sizeof *best->off);
    }
    snprintf(algorithm, alen, "%s%s", best->name,
             best->peak < portfolio_peak && strcmp(best->name, EXACT_NAME) ? "+search" : "");
    rc = 0;
out:
    free(order);
    free(breadth);
    return rc;
}

int ws_plan_solve(struct ws_plan_buffer *b, size_t n, const struct ws_plan_options *o, struct ws_plan_result *r)
{
    double t0 = now_s();
    struct planner p;
    struct best_plan best = {NULL, UINT64_MAX, "empty"};
    int rc = -1;
    memset(r, 0, sizeof *r);
    r->buffers = n;
    if (planner_init(&p, b, n, o->alignment, r->error))
        goto out;
    p.lb = load_bound_of(p.lo, p.hi, p.sz, n);
    best.off = calloc(n + 1, sizeof *best.off);
    if (!best.off || p.lb == UINT64_MAX) {
        snprintf(r->error, sizeof r->error, best.off ? "buffer sizes overflow 64 bits" : "out of memory");
        goto out;
    }
    if (n == 0)
        snprintf(r->algorithm, sizeof r->algorithm, "empty");
    else if (plan_all(&p, o, t0, &best, r->algorithm, sizeof r->algorithm)) {
        snprintf(r->error, sizeof r->error, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        b[i].offset = best.off[i];
    r->load_bound_bytes = p.lb;
    r->valid = ws_plan_validate(b, n, o->alignment, &r->peak_bytes) == 1;
    if (!r->valid) {
        snprintf(r->error, sizeof r->error, "internal error: the plan does not validate");
        goto out;
    }
    rc = 0;
out:
    planner_free(&p);
    free(best.off);
    r->seconds = now_s() - t0;
    return rc;
}
