/*
 * The problem as the planner works on it, its load bound, and the validation of layouts.
 *
 * A buffer occupies its size rounded up to its alignment (its own, or the plan's default when it
 * is 0, or 1 when both are 0) at an offset that is a multiple of that alignment, during the
 * half-open interval [lower, upper). A buffer of size 0, or with lower == upper, occupies nothing:
 * it meets no other buffer and gets offset 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int planner_init(struct planner *p, const struct ws_plan_buffer *b, const uint32_t *map, size_t n, uint64_t dflt_align,
                 char *err)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    p->err = err;
    if (n > UINT32_MAX - 1) {
        snprintf(p->err, 128, "too many buffers (%zu)", n);
        return -1;
    }
    p->lo = malloc(n * sizeof *p->lo + 1);
    p->hi = malloc(n * sizeof *p->hi + 1);
    p->sz = malloc(n * sizeof *p->sz + 1);
    p->al = malloc(n * sizeof *p->al + 1);
    p->off = calloc(n + 1, sizeof *p->off);
    p->placed = calloc(n + 1, 1);
    if (!p->lo || !p->hi || !p->sz || !p->al || !p->off || !p->placed)
        goto oom;
    for (size_t k = 0; k < n; k++) {
        const struct ws_plan_buffer *x = &b[map[k]];
        p->lo[k] = x->lower;
        p->hi[k] = x->upper;
        p->al[k] = effective_alignment(x, dflt_align);
        round_up(x->size, p->al[k], &p->sz[k]); /* checked by the caller */
    }
    if (build_index(p) || choose_structure(p))
        goto oom;
    return 0;
oom:
    snprintf(p->err, 128, "out of memory");
    return -1;
}

int planner_subset(struct planner *sp, const struct planner *p, const uint32_t *ids, size_t k)
{
    memset(sp, 0, sizeof *sp);
    sp->n = k;
    sp->err = p->err;
    sp->lo = malloc(k * sizeof *sp->lo + 1);
    sp->hi = malloc(k * sizeof *sp->hi + 1);
    sp->sz = malloc(k * sizeof *sp->sz + 1);
    sp->al = malloc(k * sizeof *sp->al + 1);
    if (!sp->lo || !sp->hi || !sp->sz || !sp->al)
        return -1;
    for (size_t x = 0; x < k; x++) {
        sp->lo[x] = p->lo[ids[x]];
        sp->hi[x] = p->hi[ids[x]];
        sp->sz[x] = p->sz[ids[x]];
        sp->al[x] = p->al[ids[x]];
    }
    return build_index(sp);
}

void planner_free(struct planner *p)
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

/* ---- load profile and load bound ---------------------------------------------------------- */

uint64_t load_bound_of(const int64_t *lo, const int64_t *hi, const uint64_t *sz, size_t n)
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
            continue;
        }
        if (__builtin_add_overflow(live, ev[k][2], &live)) {
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
        if (b[i].lower >= b[i].upper)
            sz[i] = 0; /* never alive */
    }
    lb = load_bound_of(lo, hi, sz, n);
out:
    free(lo);
    free(hi);
    free(sz);
    return lb;
}

/* ---- validation --------------------------------------------------------------------------- */

/*
 * A sweep over time (ends before starts at equal times: lifetimes are half-open). While few blocks
 * are alive at once, the live blocks are kept sorted by offset and a new block overlaps a live one
 * exactly when it overlaps a neighbour in that order; with many (dense problems, where that array
 * costs quadratic time), a segment tree over the distinct addresses counts the live blocks over
 * each elementary address segment, and a new block overlaps a live one exactly when the largest
 * count over its segments is not 0. O(n log n) either way, in linear memory.
 */
struct count_tree {
    uint32_t *add, *mx; /* mx: largest count below the node, leaving out the ancestors' adds */
    size_t leaves;
};

static void count_add(struct count_tree *t, size_t x, size_t lo, size_t hi, size_t l, size_t r, uint32_t v, int up)
{
    if (r <= lo || hi <= l)
        return;
    if (l <= lo && hi <= r) {
        t->add[x] = up ? t->add[x] + v : t->add[x] - v;
        t->mx[x] = up ? t->mx[x] + v : t->mx[x] - v;
        return;
    }
    size_t mid = (lo + hi) / 2;
    count_add(t, 2 * x, lo, mid, l, r, v, up);
    count_add(t, 2 * x + 1, mid, hi, l, r, v, up);
    t->mx[x] = t->add[x] + (t->mx[2 * x] > t->mx[2 * x + 1] ? t->mx[2 * x] : t->mx[2 * x + 1]);
}

static uint32_t count_max(const struct count_tree *t, size_t x, size_t lo, size_t hi, size_t l, size_t r)
{
    if (r <= lo || hi <= l)
        return 0;
    if (l <= lo && hi <= r)
        return t->mx[x];
    size_t mid = (lo + hi) / 2;
    uint32_t a = count_max(t, 2 * x, lo, mid, l, r), c = count_max(t, 2 * x + 1, mid, hi, l, r);
    return t->add[x] + (a > c ? a : c);
}

static size_t address_index(const uint64_t *u, size_t m, uint64_t v)
{
    size_t a = 0, b = m;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (u[mid] < v)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

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

/* Below this many blocks alive at once, the sorted array is the faster sweep. */
#define SORTED_LIVE_MAX 4096

/* 1 when no two of the blocks of the sorted events overlap; 0 otherwise; -1 on OOM. */
static int sweep_sorted(const struct ws_plan_buffer *b, const uint64_t (*ev)[3], size_t m, const uint64_t *sz,
                        size_t maxlive)
{
    struct live_entry *live = malloc(maxlive * sizeof *live + 1);
    size_t nlive = 0;
    int ok = 0;
    if (!live)
        return -1;
    for (size_t k = 0; k < m; k++) {
        const struct ws_plan_buffer *x = &b[ev[k][2]];
        struct live_entry e = {x->offset, x->offset + sz[ev[k][2]]};
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
out:
    free(live);
    return ok;
}

int ws_plan_validate(const struct ws_plan_buffer *b, size_t n, uint64_t default_alignment, uint64_t *peak)
{
    uint64_t(*ev)[3] = malloc(2 * n * sizeof *ev + 1), *addr = malloc(2 * n * sizeof *addr + 1);
    uint64_t *sz = malloc(n * sizeof *sz + 1);
    struct count_tree t = {0};
    int ok = -1;
    uint64_t top = 0;
    if (!ev || !addr || !sz)
        goto out;
    ok = 0;
    size_t m = 0, na = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t a = effective_alignment(&b[i], default_alignment), end;
        if (b[i].lower > b[i].upper || b[i].offset % a || round_up(b[i].size, a, &sz[i]) ||
            __builtin_add_overflow(b[i].offset, sz[i], &end))
            goto out;
        if (sz[i] == 0 || b[i].lower == b[i].upper)
            continue; /* occupies nothing */
        if (end > top)
            top = end;
        ev[m][0] = (uint64_t)b[i].lower ^ (1ull << 63), ev[m][1] = 1, ev[m++][2] = i;
        ev[m][0] = (uint64_t)b[i].upper ^ (1ull << 63), ev[m][1] = 0, ev[m++][2] = i;
        addr[na++] = b[i].offset;
        addr[na++] = end;
    }
    ok = -1;
    /* By kind (ends first), then stably by time: ties stay by index. */
    if (radix_sort_words(&ev[0][0], m, 3, 1) || radix_sort_words(&ev[0][0], m, 3, 0))
        goto out;
    size_t live = 0, maxlive = 0;
    for (size_t k = 0; k < m; k++) {
        live = ev[k][1] ? live + 1 : live - 1;
        maxlive = live > maxlive ? live : maxlive;
    }
    if (maxlive <= SORTED_LIVE_MAX) {
        ok = sweep_sorted(b, (const uint64_t(*)[3])ev, m, sz, maxlive);
        if (ok == 1 && peak)
            *peak = top;
        goto out;
    }
    if (radix_sort_words(addr, na, 1, 0))
        goto out;
    size_t u = 0;
    for (size_t k = 0; k < na; k++)
        if (u == 0 || addr[k] != addr[u - 1])
            addr[u++] = addr[k];
    t.leaves = 1;
    while (t.leaves < u)
        t.leaves *= 2;
    t.add = calloc(2 * t.leaves, sizeof *t.add);
    t.mx = calloc(2 * t.leaves, sizeof *t.mx);
    if (!t.add || !t.mx)
        goto out;
    ok = 0;
    for (size_t k = 0; k < m; k++) {
        const struct ws_plan_buffer *x = &b[ev[k][2]];
        size_t l = address_index(addr, u, x->offset), r = address_index(addr, u, x->offset + sz[ev[k][2]]);
        if (ev[k][1] == 1 && count_max(&t, 1, 0, t.leaves, l, r) != 0)
            goto out;
        count_add(&t, 1, 0, t.leaves, l, r, 1, ev[k][1] == 1);
    }
    ok = 1;
    if (peak)
        *peak = top;
out:
    free(ev);
    free(addr);
    free(sz);
    free(t.add);
    free(t.mx);
    return ok;
}
