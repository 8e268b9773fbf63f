/*
 * Interval indexes: which placed buffers meet a buffer's lifetime, and where their addresses are.
 *
 * Sparse problems use time classes (buffers grouped by floor(log2(lifetime length)), each group
 * sorted by lower: one binary search per group finds every buffer meeting an interval, O(n)
 * memory). Dense problems (256 or more buffers meeting each buffer on average) use the block tree
 * below, which keeps merged address ranges instead of single buffers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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
struct part_span { /* a placed buffer meeting a block in part: its addresses and segment range */
    uint64_t a, b;
    uint32_t f, e;
};

struct part_list { /* sorted by address */
    struct part_span *v;
    uint32_t n, cap;
};

struct union_tree {
    size_t leaves; /* a power of two >= blocks */
    size_t min_node; /* nodes below this index span more blocks than any buffer covers: no query
                      * reads them, so they keep no list */
    size_t blocks;
    uint32_t width;         /* segments per block */
    uint32_t *first, *last; /* per buffer: segment range [first, last) (shared by workers) */
    struct span_list *sub, *cov; /* per node / per block (per worker) */
    struct part_list *part;      /* per block: the placed buffers meeting it in part (per worker) */
};

static void union_tree_free_lists(struct union_tree *t)
{
    for (size_t x = 0; t->sub && x < 2 * t->leaves; x++)
        free(t->sub[x].v);
    for (size_t x = 0; t->cov && x < t->blocks; x++)
        free(t->cov[x].v);
    for (size_t x = 0; t->part && x < t->blocks; x++)
        free(t->part[x].v);
    free(t->sub);
    free(t->cov);
    free(t->part);
}

void union_tree_free(struct union_tree *t)
{
    if (!t)
        return;
    union_tree_free_lists(t);
    free(t->first);
    free(t->last);
    free(t);
}

void union_tree_clear(struct union_tree *t)
{
    for (size_t x = 0; x < 2 * t->leaves; x++)
        t->sub[x].n = 0;
    for (size_t x = 0; x < t->blocks; x++)
        t->cov[x].n = t->part[x].n = 0;
}

/* Insert a placed buffer's span into the part list of a block it meets in part. */
static int part_list_add(struct part_list *l, struct part_span s)
{
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? 2 * l->cap : 16;
        struct part_span *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    uint32_t a = 0, b = l->n;
    while (a < b) {
        uint32_t m = a + (b - a) / 2;
        if (l->v[m].a < s.a)
            a = m + 1;
        else
            b = m;
    }
    memmove(&l->v[a + 1], &l->v[a], (l->n - a) * sizeof *l->v);
    l->v[a] = s;
    l->n++;
    return 0;
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

/* Add s to sub of leaf block `leaf` and its ancestors (up to the highest node a query can read).
 * The nodes whose sub receives a buffer are closed upwards (canonical nodes of its covered blocks
 * and the root paths of its first and last blocks), so sub of a node contains sub of its children
 * and once a list already covers s every list above it does too. */
static int union_tree_add_path(struct union_tree *t, size_t leaf, struct span s)
{
    for (size_t x = leaf + t->leaves; x >= t->min_node; x /= 2) {
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

int union_tree_insert(struct union_tree *t, size_t i, struct span s)
{
    size_t m1, m2, c1, c2;
    tree_blocks(t, i, &m1, &m2, &c1, &c2);
    struct part_span ps = {s.a, s.b, t->first[i], t->last[i]};
    if ((!(c1 <= m1 && m1 < c2) && part_list_add(&t->part[m1], ps)) ||
        (m2 != m1 && !(c1 <= m2 && m2 < c2) && part_list_add(&t->part[m2], ps)))
        return -1;
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

/* A worker's own copy: the segment ranges are shared, the address lists are not. */
int union_tree_clone(struct union_tree **out, const struct union_tree *t)
{
    struct union_tree *w = calloc(1, sizeof *w);
    *out = w;
    if (!w)
        return -1;
    *w = *t;
    w->sub = calloc(2 * w->leaves, sizeof *w->sub);
    w->cov = calloc(w->blocks, sizeof *w->cov);
    w->part = calloc(w->blocks, sizeof *w->part);
    return w->sub && w->cov && w->part ? 0 : -1;
}

void union_tree_free_clone(struct union_tree *t)
{
    if (!t)
        return;
    union_tree_free_lists(t); /* the rest is shared */
    free(t);
}

int build_index(struct planner *p)
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

size_t first_at_or_after(const int64_t *lo, size_t n, __int128 key)
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

/* Merge sort of v[0..n) on the start address (scratch tmp of n): insertion-sorted runs of 16,
 * then merge passes. Below a few thousand spans it beats the radix sort, whose 256-entry
 * histograms cost more than the spans themselves. */
static void merge_sort_range(struct span *v, struct span *tmp, size_t n)
{
    for (size_t a = 0; a < n; a += 16)
        insertion_sort_spans(&v[a], n - a < 16 ? n - a : 16);
    struct span *src = v, *dst = tmp;
    for (size_t w = 16; w < n; w *= 2) {
        for (size_t a = 0; a < n; a += 2 * w) {
            size_t m = a + w < n ? a + w : n, e = a + 2 * w < n ? a + 2 * w : n, x = a, y = m, o = a;
            while (x < m && y < e)
                dst[o++] = src[y].a < src[x].a ? src[y++] : src[x++];
            while (x < m)
                dst[o++] = src[x++];
            while (y < e)
                dst[o++] = src[y++];
        }
        struct span *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, n * sizeof *v);
}

/* Block B, met by buffer i without being covered: the covering buffers' list as one run, and
 * the placed buffers meeting B in part that overlap i as another (already by address). */
static int collect_partial_block(struct planner *p, size_t i, size_t B, size_t *k)
{
    const struct union_tree *t = p->tree;
    if (defer_list(p, &t->cov[B]))
        return -1;
    const struct part_list *l = &t->part[B];
    uint32_t f = t->first[i], e = t->last[i];
    if (*k + l->n > p->segcap && reserve_spans(p, *k + l->n))
        return -1;
    size_t from = *k, o = from;
    struct span *seg = p->seg;
    for (uint32_t x = 0; x < l->n; x++) {
        const struct part_span *ps = &l->v[x];
        seg[o] = (struct span){ps->a, ps->b};
        o += ps->f < e && ps->e > f; /* kept when it overlaps i in time */
    }
    *k = o;
    if (o == from)
        return 0;
    if (p->nruns + 2 > p->runcap && reserve_runs(p))
        return -1;
    p->runs[p->nruns++] = from;
    return 0;
}

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
long collect_spans(struct planner *p, size_t i)
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
    if (n < 2048) {
        merge_sort_range(p->seg, p->tmp, n);
        return;
    }
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

void sort_spans(struct planner *p, size_t n)
{
    if (p->use_tree && n >= 48)
        merge_runs(p, n);
    else if (n < 48)
        insertion_sort_spans(p->seg, n);
    else
        radix_sort_spans(p, n);
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
    /* The canonical nodes of a buffer's covered blocks span at most as many blocks as it covers. */
    size_t most = 1;
    for (size_t i = 0; i < n; i++) {
        size_t m1, m2, c1, c2;
        tree_blocks(t, i, &m1, &m2, &c1, &c2);
        most = c2 > c1 && c2 - c1 > most ? c2 - c1 : most;
    }
    t->min_node = t->leaves;
    while (t->min_node > 1 && t->leaves / (t->min_node / 2) <= most)
        t->min_node /= 2;
    t->sub = calloc(2 * t->leaves, sizeof *t->sub);
    t->cov = calloc(t->blocks, sizeof *t->cov);
    t->part = calloc(t->blocks, sizeof *t->part);
    if (!t->sub || !t->cov || !t->part)
        return -1;
    return 0;
}

/* Below this many overlapping buffers on average, collecting them one by one is cheaper than
 * keeping the union tree up to date. */
#define DENSE_OVERLAP 256.0

int choose_structure(struct planner *p)
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
