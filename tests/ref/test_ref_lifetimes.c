/*
 * A tiny reference classifier of lifetimes, written from docs/analysis.md ("What the analysis
 * sees", "Lifetimes") and nothing of analyzer/analysis/: random traces of two runs, nested ranges
 * whose node names repeat (so "the same node" and "the same occurrence" differ), nodes that
 * declare and nodes that do not, frees inside the owner, in a child range, in a later occurrence,
 * exactly at the run's end, after it and never, zero-byte requests, and times on a coarse grid so
 * that allocations and frees often share a time.  Every lifetime figure and every node's profile
 * must be the reference's.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "trace_builder.h"

TestSuite(ref_lifetimes, .fini = tb_cleanup);

enum { NAMES = 4, RUNS = 2, TOPS = 4, MAXR = RUNS * TOPS * 2, MAXA = 64 };
enum { C_UNATTRIBUTED, C_WORKSPACE, C_ACTIVATION, C_PERSISTENT };

struct rrange {
    int64_t id, name, parent, run; /* parent: index or -1 */
    int64_t start, end;
};

struct ralloc {
    int64_t id, bytes, run, alloc_ns, free_ns; /* free_ns -1: never */
    int range, free_range;                     /* indices, -1: none */
    /* the reference's answers */
    int owner, cls, alloc_step, free_step, alloc_seq, start_event, end_event, slot;
};

struct rtrace {
    int declares[NAMES + 1];
    int64_t run_start[RUNS], run_end[RUNS];
    struct rrange r[MAXR];
    int nr;
    struct ralloc a[MAXA];
    int na;
};

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* The innermost range open at t (ranges are closed intervals; generated times never fall on a
 * range's start or end). */
static int innermost(const struct rtrace *t, int64_t ns)
{
    int best = -1;
    for (int i = 0; i < t->nr; i++)
        if (t->r[i].start < ns && ns < t->r[i].end && (best < 0 || t->r[i].start > t->r[best].start))
            best = i;
    return best;
}

/* A time strictly inside occurrence i where it is the innermost range, on a grid of 10 ns. */
static int64_t time_in(const struct rtrace *t, int i, uint64_t *s)
{
    for (;;) {
        int64_t span = (t->r[i].end - t->r[i].start) / 10;
        int64_t ns = t->r[i].start + 10 * (1 + (int64_t)(lcg(s) % (uint64_t)(span - 1)));
        if (innermost(t, ns) == i)
            return ns;
    }
}

static void generate(struct rtrace *t, uint64_t seed)
{
    uint64_t s = seed;
    memset(t, 0, sizeof *t);
    for (int k = 1; k <= NAMES; k++)
        t->declares[k] = (int)(lcg(&s) % 2);
    for (int run = 0; run < RUNS; run++) {
        t->run_start[run] = 10000 * run;
        t->run_end[run] = 10000 * run + 5000;
        for (int k = 0; k < TOPS; k++) {
            int64_t start = t->run_start[run] + 100 + 1000 * k;
            int top = t->nr++;
            t->r[top] = (struct rrange){top + 1, 1 + (int64_t)(lcg(&s) % NAMES), -1, run, start, start + 800};
            if (lcg(&s) % 2) {
                int child = t->nr++;
                t->r[child] = (struct rrange){child + 1, 1 + (int64_t)(lcg(&s) % NAMES), top, run, start + 200,
                                              start + 500};
            }
        }
    }
    static const int64_t sizes[] = {0, 16, 64, 100, 256, 1000};
    for (int run = 0; run < RUNS; run++) {
        int first = -1, last = -1; /* this run's ranges */
        for (int i = 0; i < t->nr; i++)
            if (t->r[i].run == run) {
                first = first < 0 ? i : first;
                last = i;
            }
        for (int k = 0; k < MAXA / RUNS; k++) {
            struct ralloc *a = &t->a[t->na];
            a->id = t->na + 1;
            a->run = run;
            a->bytes = sizes[lcg(&s) % 6];
            int where = first + (int)(lcg(&s) % (uint64_t)(last - first + 1));
            if (lcg(&s) % 10 == 0)
                a->alloc_ns = t->run_start[run] + 50; /* outside every range: unattributed */
            else
                a->alloc_ns = time_in(t, where, &s);
            a->range = innermost(t, a->alloc_ns);
            switch (lcg(&s) % 7) {
            case 0: a->free_ns = -1; break;                      /* never */
            case 1: a->free_ns = t->run_end[run]; break;          /* exactly at the run's end */
            case 2: a->free_ns = t->run_end[run] + 1000; break;   /* after the run */
            default: {                                           /* in a range at or after the allocation */
                int later = where + (int)(lcg(&s) % 3);
                if (later > last || lcg(&s) % 3 == 0)
                    later = where;
                int64_t ns = time_in(t, later, &s);
                a->free_ns = ns < a->alloc_ns ? a->alloc_ns : ns; /* at the allocation's time: a tie */
            }
            }
            a->free_range = a->free_ns < 0 ? -1 : innermost(t, a->free_ns);
            t->na++;
        }
    }
}

/* ---- the reference, from the docs -------------------------------------------------------- */

static int contains(const struct rtrace *t, int outer, int r) /* r is outer or nested inside it */
{
    for (; r >= 0; r = (int)t->r[r].parent)
        if (r == outer)
            return 1;
    return 0;
}

/* Steps: a run's push ranges ordered by start (then id), numbered from 0. */
static int step_of(const struct rtrace *t, int i)
{
    int step = 0;
    for (int j = 0; j < t->nr; j++)
        if (t->r[j].run == t->r[i].run &&
            (t->r[j].start < t->r[i].start || (t->r[j].start == t->r[i].start && t->r[j].id < t->r[i].id)))
            step++;
    return step;
}

struct rev {
    int64_t ns;
    int is_free, alloc;
};

static int rev_cmp(const void *x, const void *y)
{
    const struct rev *a = x, *b = y;
    if (a->ns != b->ns)
        return a->ns < b->ns ? -1 : 1;
    if (a->is_free != b->is_free)
        return a->is_free - b->is_free; /* an allocation before a free at equal times */
    return a->alloc - b->alloc;         /* then by allocation id */
}

static void reference(struct rtrace *t)
{
    for (int i = 0; i < t->na; i++) {
        struct ralloc *a = &t->a[i];
        a->alloc_step = a->free_step = a->alloc_seq = a->start_event = a->end_event = a->slot = -1;
        /* owner: the nearest enclosing occurrence whose node declares, else the innermost range */
        a->owner = a->range;
        for (int r = a->range; r >= 0; r = (int)t->r[r].parent)
            if (t->declares[t->r[r].name]) {
                a->owner = r;
                break;
            }
        int freed = a->free_ns >= 0;
        int freed_in_run = freed && a->free_ns <= t->run_end[a->run];
        if (a->range < 0)
            a->cls = C_UNATTRIBUTED;
        else if (freed && a->free_range >= 0 &&
                 (a->free_range == a->owner ||
                  (t->declares[t->r[a->owner].name] && contains(t, a->owner, a->free_range))))
            a->cls = C_WORKSPACE;
        else if (freed_in_run)
            a->cls = C_ACTIVATION;
        else
            a->cls = C_PERSISTENT;
        if (a->owner >= 0 && t->r[a->owner].run == a->run)
            a->alloc_step = step_of(t, a->owner);
        if (freed_in_run && a->free_range >= 0 && t->r[a->free_range].run == a->run)
            a->free_step = step_of(t, a->free_range);
    }
    for (int run = 0; run < RUNS; run++) {
        struct rev ev[2 * MAXA];
        int n = 0;
        for (int i = 0; i < t->na; i++)
            if (t->a[i].run == run) {
                ev[n++] = (struct rev){t->a[i].alloc_ns, 0, i};
                if (t->a[i].free_ns >= 0 && t->a[i].free_ns <= t->run_end[run])
                    ev[n++] = (struct rev){t->a[i].free_ns, 1, i};
            }
        qsort(ev, (size_t)n, sizeof *ev, rev_cmp);
        int seq = 0;
        for (int k = 0; k < n; k++) {
            struct ralloc *a = &t->a[ev[k].alloc];
            if (ev[k].is_free) {
                a->end_event = k;
            } else {
                a->start_event = k;
                a->alloc_seq = seq++;
            }
        }
    }
    /* slots: workspace of at least one byte, per owning occurrence (one device), in time order */
    for (int i = 0; i < t->na; i++) {
        struct ralloc *a = &t->a[i];
        if (a->cls != C_WORKSPACE || a->bytes == 0)
            continue;
        a->slot = 0;
        for (int j = 0; j < t->na; j++) {
            const struct ralloc *b = &t->a[j];
            if (j != i && b->cls == C_WORKSPACE && b->bytes > 0 && b->owner == a->owner &&
                (b->alloc_ns < a->alloc_ns || (b->alloc_ns == a->alloc_ns && b->id < a->id)))
                a->slot++;
        }
    }
}

/* Profile of a name: the largest peak of live workspace bytes of one of its occurrences (events in
 * time order, an allocation before a free at equal times); 0 when it used none. */
static int64_t reference_profile(const struct rtrace *t, int64_t name)
{
    int64_t best = -1;
    for (int r = 0; r < t->nr; r++) {
        if (t->r[r].name != name)
            continue;
        struct rev ev[2 * MAXA];
        int n = 0;
        for (int i = 0; i < t->na; i++)
            if (t->a[i].cls == C_WORKSPACE && t->a[i].owner == r) {
                ev[n++] = (struct rev){t->a[i].alloc_ns, 0, i};
                ev[n++] = (struct rev){t->a[i].free_ns, 1, i};
            }
        qsort(ev, (size_t)n, sizeof *ev, rev_cmp);
        int64_t live = 0, peak = 0;
        for (int k = 0; k < n; k++) {
            live += ev[k].is_free ? -t->a[ev[k].alloc].bytes : t->a[ev[k].alloc].bytes;
            peak = live > peak ? live : peak;
        }
        best = peak > best ? peak : best;
    }
    return best;
}

/* ---- the trace, and the comparison ---------------------------------------------------------- */

static void write_trace(sqlite3 *db, const struct rtrace *t)
{
    static const char *const names[] = {"", "/n/a", "/n/b", "/n/c", "/n/d"};
    for (int k = 1; k <= NAMES; k++) {
        tb_string(db, k, names[k]);
        if (t->declares[k])
            tb_decl(db, 1, k, 0, 64);
    }
    for (int run = 0; run < RUNS; run++)
        tb_run(db, run + 1, NONE, t->run_start[run], t->run_end[run]);
    for (int i = 0; i < t->nr; i++) {
        const struct rrange *r = &t->r[i];
        tb_range(db, r->id, r->name, r->parent < 0 ? NONE : t->r[r->parent].id, r->parent < 0 ? 0 : 1, r->run + 1,
                 r->start, r->end);
    }
    for (int i = 0; i < t->na; i++) {
        const struct ralloc *a = &t->a[i];
        tb_alloc(db, a->id, a->bytes, a->range < 0 ? NONE : t->r[a->range].id, a->run + 1, a->alloc_ns,
                 a->free_ns < 0 ? NONE : a->free_ns, a->free_range < 0 ? NONE : t->r[a->free_range].id);
    }
}

static const int class_of_code[] = {[WS_CLASS_UNATTRIBUTED] = C_UNATTRIBUTED,
                                    [WS_CLASS_WORKSPACE] = C_WORKSPACE,
                                    [WS_CLASS_ACTIVATION] = C_ACTIVATION,
                                    [WS_CLASS_PERSISTENT] = C_PERSISTENT};

Test(ref_lifetimes, random_traces_classify_as_the_reference_does)
{
    static const char *const names[] = {"", "/n/a", "/n/b", "/n/c", "/n/d"};
    int seen[4] = {0}, ties = 0, at_end = 0, nested_ws = 0, zero_ws = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        struct rtrace t;
        generate(&t, seed);
        reference(&t);
        char path[256], err[512];
        sqlite3 *db = tb_create(path, sizeof path);
        write_trace(db, &t);
        struct ws_analysis an;
        cr_assert_eq(ws_analysis_load(db, path, &an, err, sizeof err), 0, "seed %llu: %s", (unsigned long long)seed,
                     err);
        cr_assert_eq(an.nallocs, (size_t)t.na);
        for (int i = 0; i < t.na; i++) {
            const struct ralloc *w = &t.a[i];
            const struct ws_lifetime *g = &an.allocs[i];
            cr_assert_eq(g->allocation_id, w->id, "allocations in id order");
            const char *why = NULL;
            if (class_of_code[g->cls] != w->cls)
                why = "class";
            else if (g->alloc_step != w->alloc_step)
                why = "alloc_step";
            else if (g->free_step != w->free_step)
                why = "free_step";
            else if (g->alloc_seq != w->alloc_seq)
                why = "alloc_seq";
            else if (g->start_event != w->start_event)
                why = "start_event";
            else if (g->end_event != w->end_event)
                why = "end_event";
            else if (g->slot != w->slot)
                why = "slot";
            cr_expect_null(why,
                           "seed %llu allocation %lld (%lld B, at %lld, freed %lld, range %d, free range %d): %s "
                           "differs: class %d/%d steps %d,%d/%d,%d seq %d/%d events %d,%d/%d,%d slot %d/%d",
                           (unsigned long long)seed, (long long)w->id, (long long)w->bytes, (long long)w->alloc_ns,
                           (long long)w->free_ns, w->range, w->free_range, why ? why : "", class_of_code[g->cls],
                           w->cls, g->alloc_step, g->free_step, w->alloc_step, w->free_step, g->alloc_seq, w->alloc_seq,
                           g->start_event, g->end_event, w->start_event, w->end_event, g->slot, w->slot);
            seen[w->cls]++;
            at_end += w->free_ns == t.run_end[w->run] && w->cls == C_ACTIVATION;
            nested_ws += w->cls == C_WORKSPACE && w->free_range != w->owner;
            zero_ws += w->cls == C_WORKSPACE && w->bytes == 0;
            for (int j = 0; j < t.na; j++)
                ties += j != i && w->free_ns == t.a[j].alloc_ns;
        }
        for (int k = 1; k <= NAMES; k++) {
            int32_t node = ws_analysis_node_by_name(&an, names[k]);
            int64_t want = reference_profile(&t, k);
            if (want < 0 && !t.declares[k])
                continue; /* never ran, never declared: not a node */
            cr_assert_geq(node, 0, "seed %llu: node %s", (unsigned long long)seed, names[k]);
            cr_expect_eq(an.nodes[node].profile_bytes, want, "seed %llu: profile of %s: %lld, the reference says %lld",
                         (unsigned long long)seed, names[k], (long long)an.nodes[node].profile_bytes, (long long)want);
        }
        ws_analysis_free(&an);
        sqlite3_close(db);
    }
    /* The generator reaches every case the rules distinguish. */
    for (int c = 0; c < 4; c++)
        cr_expect_gt(seen[c], 10, "class %d seen %d times", c, seen[c]);
    cr_expect_gt(at_end, 0, "no activation freed exactly at its run's end");
    cr_expect_gt(nested_ws, 0, "no workspace freed in a range nested inside its declaring owner");
    cr_expect_gt(zero_ws, 0, "no zero-byte workspace request");
    cr_expect_gt(ties, 0, "no free at the time of an allocation");
}
