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
        if (b[i].lower > b[i].upper || b[i].offset % a || round_up(b[i].size, a, &sz) ||
            __builtin_add_overflow(b[i].offset, sz, &end))
            goto out;
        if (sz == 0 || b[i].lower == b[i].upper)
            continue; /* occupies nothing */
        if (end > top)
            top = end;
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
