#include "spool_clock.h"

#include <stdlib.h>
#include <string.h>

static int pair_cmp(const void *a, const void *b)
{
    const struct ws_clock_pair *x = a, *y = b;
    if (x->tsc != y->tsc)
        return x->tsc < y->tsc ? -1 : 1;
    return x->ns < y->ns ? -1 : x->ns > y->ns;
}

int ws_spool_clock_init(struct ws_spool_clock *c, const struct ws_clock_pair *pairs, size_t n)
{
    memset(c, 0, sizeof *c);
    c->pairs = malloc((n ? n : 1) * sizeof *c->pairs);
    if (!c->pairs)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (pairs[i].tsc != 0)
            c->pairs[k++] = pairs[i];
    qsort(c->pairs, k, sizeof *c->pairs, pair_cmp);
    /* Never decreasing: a pair whose time is below an earlier tick's is raised to it; of pairs of
     * one tick the last (the latest time) stays. */
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        struct ws_clock_pair p = c->pairs[i];
        if (m > 0 && p.ns < c->pairs[m - 1].ns)
            p.ns = c->pairs[m - 1].ns;
        if (m > 0 && p.tsc == c->pairs[m - 1].tsc)
            c->pairs[m - 1] = p;
        else
            c->pairs[m++] = p;
    }
    c->n = m;
    if (m == 0) {
        ws_spool_clock_free(c);
        return -1;
    }
    if (m >= 2 && c->pairs[m - 1].ns > c->pairs[0].ns) {
        c->rate_ticks = c->pairs[m - 1].tsc - c->pairs[0].tsc;
        c->rate_ns = c->pairs[m - 1].ns - c->pairs[0].ns;
    } else {
        c->rate_ticks = c->rate_ns = 1; /* one pair: no rate to go by, a tick counts a nanosecond */
    }
    return 0;
}

void ws_spool_clock_free(struct ws_spool_clock *c)
{
    free(c->pairs);
    memset(c, 0, sizeof *c);
}

/* d ticks at num nanoseconds per den ticks, saturated. */
static uint64_t scale(uint64_t d, uint64_t num, uint64_t den)
{
    unsigned __int128 v = (unsigned __int128)d * num / den;
    return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

uint64_t ws_spool_clock_ns(const struct ws_spool_clock *c, uint64_t t)
{
    const struct ws_clock_pair *p = c->pairs;
    size_t n = c->n;
    if (t <= p[0].tsc) {
        uint64_t back = scale(p[0].tsc - t, c->rate_ns, c->rate_ticks);
        return back < p[0].ns ? p[0].ns - back : 0;
    }
    if (t >= p[n - 1].tsc) {
        uint64_t on = scale(t - p[n - 1].tsc, c->rate_ns, c->rate_ticks);
        return on > UINT64_MAX - p[n - 1].ns ? UINT64_MAX : p[n - 1].ns + on;
    }
    size_t lo = 0, hi = n - 1; /* p[lo].tsc < t < p[hi].tsc */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (p[mid].tsc <= t)
            lo = mid;
        else
            hi = mid;
    }
    return p[lo].ns + scale(t - p[lo].tsc, p[hi].ns - p[lo].ns, p[hi].tsc - p[lo].tsc);
}
