/*
 * verify.c - Level 2 against Level 1 and against use, per node, shape key, device and slot
 * (verify.h).  Four steps: the declarations as facts; the contexts (node, key, device) the node
 * was seen in; the matching of every occurrence's workspace to the facts that apply to it; the
 * rows of every context, each with the verdict of the rule table.
 */
#include "verify.h"
#include "internal.h"
#include "sizes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_ANY INT64_MIN /* a fact for every shape key */

/* ---- the rule table ---- */

static const char *const verdict_names[WS_VERDICT_COUNT] = {
    "ok",          "over-reservation",    "under-declared",      "idle-reservation",  "undeclared",
    "unavailable", "exceeds-reservation", "tactic-overdeclared", "miss-underdeclared"};

const char *ws_verdict_name(enum ws_verdict verdict)
{
    return verdict < WS_VERDICT_COUNT ? verdict_names[verdict] : "?";
}

typedef int (*rule_fn)(const struct ws_verdict_input *in);

static int over_reservation(const struct ws_verdict_input *in)
{
    return in->level1 >= 0 && in->level2 >= 0 && in->level2 > in->level1;
}
static int under_declared(const struct ws_verdict_input *in)
{
    return in->level2 >= 0 && (in->observed > in->level2 || in->overflow);
}
static int tactic_overdeclared(const struct ws_verdict_input *in)
{
    return in->tactic == WS_TACTIC_CACHED_FREE && in->level2 > 0;
}
static int miss_underdeclared(const struct ws_verdict_input *in)
{
    return in->tactic == WS_TACTIC_MISS && in->level1 >= 0 && in->level2 >= 0 && in->level2 < in->level1;
}
static int idle_reservation(const struct ws_verdict_input *in)
{
    return in->level2 > 0 && in->observed < 0 && in->tactic != WS_TACTIC_MISS;
}
static int undeclared(const struct ws_verdict_input *in)
{
    return in->level1 < 0 && in->level2 < 0 && in->observed >= 0;
}
static int exceeds_reservation(const struct ws_verdict_input *in)
{
    return in->level2 < 0 && in->level1 >= 0 && (in->observed > in->level1 || in->overflow);
}
static int empty_declared_nothing(const struct ws_verdict_input *in) { return in->level2 == 0 && in->observed < 0; }
static int declared_without_reservation(const struct ws_verdict_input *in) { return in->level2 >= 0 && in->level1 < 0; }
static int declaration_missing(const struct ws_verdict_input *in)
{
    return in->level2 < 0 && (in->level1 > 0 || in->observed >= 0);
}
static int otherwise(const struct ws_verdict_input *in)
{
    (void)in;
    return 1;
}

/* The order is the precedence: docs/analysis.md lists the same rules with the same numbers. */
static const struct {
    rule_fn matches;
    enum ws_verdict verdict;
} rules[] = {
    {over_reservation, WS_VERDICT_OVER_RESERVATION},
    {under_declared, WS_VERDICT_UNDER_DECLARED},
    {tactic_overdeclared, WS_VERDICT_TACTIC_OVERDECLARED},
    {miss_underdeclared, WS_VERDICT_MISS_UNDERDECLARED},
    {idle_reservation, WS_VERDICT_IDLE_RESERVATION},
    {undeclared, WS_VERDICT_UNDECLARED},
    {exceeds_reservation, WS_VERDICT_EXCEEDS_RESERVATION},
    {empty_declared_nothing, WS_VERDICT_OK},
    {declared_without_reservation, WS_VERDICT_UNAVAILABLE},
    {declaration_missing, WS_VERDICT_UNAVAILABLE},
    {otherwise, WS_VERDICT_OK},
};

size_t ws_verdict_rule_count(void) { return sizeof rules / sizeof rules[0]; }

int ws_verdict_rule_matches(size_t rule, const struct ws_verdict_input *in)
{
    return rule >= 1 && rule <= ws_verdict_rule_count() && rules[rule - 1].matches(in);
}

enum ws_verdict ws_verdict_rule_verdict(size_t rule)
{
    return rule >= 1 && rule <= ws_verdict_rule_count() ? rules[rule - 1].verdict : WS_VERDICT_COUNT;
}

enum ws_verdict ws_verdict_of(const struct ws_verdict_input *in)
{
    for (size_t i = 0; i < ws_verdict_rule_count(); i++)
        if (rules[i].matches(in))
            return rules[i].verdict;
    return WS_VERDICT_OK;
}

/* ---- matching one occurrence ---- */

/* Taking a target closes the others of its slot that overlap it: a region closes the root, the
 * root closes every region. */
static void take(const struct ws_target *t, size_t nt, int *taken, size_t chosen)
{
    taken[chosen] = 1;
    for (size_t i = 0; i < nt; i++)
        if (t[i].slot == t[chosen].slot && (t[i].root || t[chosen].root))
            taken[i] = 1;
}

/* The smallest open target that holds `bytes` (the first of equal ones), else -1. */
static int32_t best_fit(const struct ws_target *t, size_t nt, const int *taken, int64_t bytes)
{
    int32_t best = -1;
    for (size_t i = 0; i < nt; i++)
        if (!taken[i] && bytes <= t[i].bytes && (best < 0 || t[i].bytes < t[best].bytes))
            best = (int32_t)i;
    return best;
}

static int32_t first_open(size_t nt, const int *taken)
{
    for (size_t i = 0; i < nt; i++)
        if (!taken[i])
            return (int32_t)i;
    return -1;
}

void ws_match(const struct ws_target *t, size_t nt, const int64_t *bytes, size_t na, int *taken, struct ws_match *out)
{
    memset(taken, 0, nt * sizeof *taken);
    for (size_t a = 0; a < na; a++) {
        int32_t chosen = best_fit(t, nt, taken, bytes[a]);
        out[a].overflow = chosen < 0;
        if (chosen < 0)
            chosen = first_open(nt, taken);
        if (chosen < 0)
            out[a].overflow = 0; /* extra: nothing declared to overflow */
        else
            take(t, nt, taken, (size_t)chosen);
        out[a].target = chosen;
    }
}

/* ---- facts: what is declared, for which keys and devices ---- */

struct fact {
    int32_t node;
    uint8_t level, tactic;
    int32_t device; /* -1: any */
    int64_t key;    /* KEY_ANY, or a shape key id (-1: runs without a key) */
    int64_t slot, bytes;
    const char *tactic_name;
    uint32_t region_first, nregions;
};

static int fact_cmp(const void *a, const void *b)
{
    const struct fact *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    if (x->level != y->level)
        return x->level < y->level ? -1 : 1;
    return (x->slot > y->slot) - (x->slot < y->slot);
}

static int applies(const struct fact *f, int64_t key, int32_t device)
{
    return (f->key == KEY_ANY || f->key == key) && (f->device < 0 || device < 0 || f->device == device);
}

/* Level 1 is made before any shape is known: it applies to every key.  Level 2 belongs to the
 * shape key of the run it was made in. */
static struct fact *collect_facts(const struct ws_analysis *an, const struct ws_estimates *est, size_t *count)
{
    size_t n = 0;
    struct fact *f = malloc((an->ndecls + (est ? est->count : 0) + 1) * sizeof *f);
    if (!f)
        return NULL;
    for (size_t i = 0; i < an->ndecls; i++) {
        const struct ws_decl *d = &an->decls[i];
        int64_t key = d->level == 2 && d->run >= 0 ? an->runs[d->run].shape_key_id : KEY_ANY;
        f[n++] = (struct fact){d->node, d->level, d->tactic,      d->device,       key,
                               d->slot, d->bytes, d->tactic_name, d->region_first, d->nregions};
    }
    for (size_t i = 0; est && i < est->count; i++) {
        int32_t node = est->items[i].kind == WS_EST_SLOT ? ws_analysis_node_by_name(an, est->items[i].node) : -1;
        if (node >= 0)
            f[n++] = (struct fact){node, 1, WS_TACTIC_NONE, -1, KEY_ANY, est->items[i].slot, est->items[i].bytes, NULL,
                                   0,    0};
    }
    qsort(f, n, sizeof *f, fact_cmp);
    *count = n;
    return f;
}

struct facts {
    const struct fact *v;
    size_t n;
    size_t *first; /* per node: index of its first fact; first[nnodes] = n */
};

static int index_facts(struct facts *fs, size_t nnodes)
{
    fs->first = malloc((nnodes + 1) * sizeof *fs->first);
    if (!fs->first)
        return -1;
    size_t k = 0;
    for (size_t node = 0; node <= nnodes; node++) {
        while (k < fs->n && (size_t)fs->v[k].node < node)
            k++;
        fs->first[node] = k;
    }
    return 0;
}

/* Per slot, the largest fact of `level` that applies to (key, device), in slot order. */
static size_t applicable(const struct facts *fs, int32_t node, uint8_t level, int64_t key, int32_t device,
                         const struct fact **out)
{
    size_t n = 0;
    for (size_t i = fs->first[node]; i < fs->first[node + 1]; i++) {
        const struct fact *f = &fs->v[i];
        if (f->level != level || !applies(f, key, device))
            continue;
        if (n > 0 && out[n - 1]->slot == f->slot) {
            if (f->bytes > out[n - 1]->bytes)
                out[n - 1] = f;
        } else {
            out[n++] = f;
        }
    }
    return n;
}

/* ---- contexts: where a node was seen ---- */

struct context {
    int32_t node, device;
    int64_t key;
};

static int context_cmp(const void *a, const void *b)
{
    const struct context *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->device > y->device) - (x->device < y->device);
}

struct contexts {
    struct context *v;
    size_t n, cap;
};

static int context_add(struct contexts *c, int32_t node, int64_t key, int32_t device)
{
    if (ws_grow(&c->v, &c->cap, c->n, sizeof *c->v) != 0)
        return -1;
    c->v[c->n++] = (struct context){node, device, key};
    return 0;
}

/* Sorted, without duplicates, and without a (node, key, unknown device) entry when that key has
 * a known device: an occurrence that allocated nothing does not add a context of its own.  An
 * unknown device sorts first among its key's entries, so after removing duplicates the entry that
 * follows it tells. */
static void contexts_normalize(struct contexts *c)
{
    if (c->n == 0) /* c->v is NULL then */
        return;
    qsort(c->v, c->n, sizeof *c->v, context_cmp);
    size_t n = 0;
    for (size_t i = 0; i < c->n; i++)
        if (n == 0 || context_cmp(&c->v[n - 1], &c->v[i]) != 0)
            c->v[n++] = c->v[i];
    c->n = n;
    n = 0;
    for (size_t i = 0; i < c->n; i++) {
        const struct context *x = &c->v[i], *next = i + 1 < c->n ? &c->v[i + 1] : NULL;
        if (x->device < 0 && next && next->node == x->node && next->key == x->key)
            continue; /* next has the same key and, sorting after -1, a known device */
        c->v[n++] = *x;
    }
    c->n = n;
}

/* The devices each occurrence allocated on (any class); an occurrence without allocations is
 * seen on an unknown device. */
static int observed_contexts(const struct ws_analysis *an, struct contexts *c)
{
    for (size_t i = 0; i < an->nallocs; i++) {
        const struct ws_lifetime *a = &an->allocs[i];
        if (a->node >= 0 && context_add(c, a->node, ws_analysis_range_key(an, a->owner), a->device) != 0)
            return -1;
    }
    for (size_t r = 0; r < an->nranges; r++)
        if (an->ranges[r].node >= 0 &&
            context_add(c, an->ranges[r].node, ws_analysis_range_key(an, (int32_t)r), -1) != 0)
            return -1;
    contexts_normalize(c);
    return 0;
}

/* Whether a fact applies to one of the contexts c[0..n) (sorted) of its node. */
static int covered(const struct context *c, size_t n, const struct fact *f)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* the first context of the fact's node */
        size_t mid = lo + (hi - lo) / 2;
        if (c[mid].node < f->node)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < n && c[i].node == f->node; i++)
        if (applies(f, c[i].key, c[i].device))
            return 1;
    return 0;
}

/* A declaration that applies to no context seen (a node that never ran, a key or device it never
 * ran with) gets a context of its own, so that it is verified too. */
static int declared_contexts(const struct facts *fs, struct contexts *c)
{
    size_t seen = c->n;
    for (size_t i = 0; i < fs->n; i++) {
        const struct fact *f = &fs->v[i];
        if (!covered(c->v, seen, f) && context_add(c, f->node, f->key == KEY_ANY ? -1 : f->key, f->device) != 0)
            return -1;
    }
    contexts_normalize(c);
    return 0;
}

/* ---- observations: every occurrence matched ---- */

struct observation {
    struct context ctx;
    int64_t slot, footprint;
    int overflow;
};

static int observation_cmp(const void *a, const void *b)
{
    const struct observation *x = a, *y = b;
    int c = context_cmp(&x->ctx, &y->ctx);
    return c ? c : (x->slot > y->slot) - (x->slot < y->slot);
}

struct observations {
    struct observation *v;
    size_t n, cap;
};

static int observe(struct observations *o, const struct context *ctx, int64_t slot, int64_t footprint, int overflow)
{
    if (ws_grow(&o->v, &o->cap, o->n, sizeof *o->v) != 0)
        return -1;
    o->v[o->n++] = (struct observation){*ctx, slot, footprint, overflow};
    return 0;
}

/* The targets of a context: its Level-2 slots, or its Level-1 slots when nothing is declared at
 * Level 2 (use is then checked against the reservation). */
struct targets {
    struct ws_target *v;
    size_t n, cap;
};

static int targets_of(const struct ws_analysis *an, const struct facts *fs, const struct context *ctx,
                      const struct fact **scratch, struct targets *t)
{
    size_t nf = applicable(fs, ctx->node, 2, ctx->key, ctx->device, scratch);
    if (nf == 0)
        nf = applicable(fs, ctx->node, 1, ctx->key, ctx->device, scratch);
    t->n = 0;
    for (size_t i = 0; i < nf; i++) {
        const struct fact *f = scratch[i];
        for (uint32_t r = 0; r <= f->nregions; r++) {
            if (ws_grow(&t->v, &t->cap, t->n, sizeof *t->v) != 0)
                return -1;
            if (r < f->nregions) {
                const struct ws_region *g = &an->regions[f->region_first + r];
                t->v[t->n++] = (struct ws_target){f->slot, g->offset, g->bytes, 0};
            } else {
                t->v[t->n++] = (struct ws_target){f->slot, 0, f->bytes, 1};
            }
        }
    }
    return 0;
}

/* Workspace allocations of one occurrence on one device, in slot (time) order. */
static const struct ws_analysis *group_an;
static int group_cmp(const void *a, const void *b)
{
    const struct ws_lifetime *x = &group_an->allocs[*(const uint32_t *)a], *y = &group_an->allocs[*(const uint32_t *)b];
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    int64_t kx = ws_analysis_range_key(group_an, x->owner), ky = ws_analysis_range_key(group_an, y->owner);
    if (kx != ky)
        return kx < ky ? -1 : 1;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    if (x->owner != y->owner)
        return x->owner < y->owner ? -1 : 1;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

struct scratch {
    int64_t *bytes;
    struct ws_match *match;
    int *taken;
    size_t cap;
};

static int scratch_fit(struct scratch *s, size_t n)
{
    if (n <= s->cap)
        return 0;
    int64_t *b = realloc(s->bytes, n * sizeof *b);
    if (b)
        s->bytes = b;
    struct ws_match *m = realloc(s->match, n * sizeof *m);
    if (m)
        s->match = m;
    int *t = realloc(s->taken, n * sizeof *t);
    if (t)
        s->taken = t;
    if (!b || !m || !t)
        return -1;
    s->cap = n;
    return 0;
}

/* One occurrence's allocations order[0..na): matched, then one observation per slot taken (its
 * footprint: the end of the use in the root) and per extra allocation (slots after the declared). */
static int observe_group(const struct ws_analysis *an, const uint32_t *order, size_t na, const struct context *ctx,
                         const struct targets *t, struct scratch *s, struct observations *o)
{
    if (scratch_fit(s, na > t->n ? na : t->n + 1) != 0)
        return -1;
    for (size_t a = 0; a < na; a++)
        s->bytes[a] = an->allocs[order[a]].bytes;
    ws_match(t->v, t->n, s->bytes, na, s->taken, s->match);
    int64_t extra_slot = t->n ? t->v[t->n - 1].slot + 1 : 0;
    for (size_t a = 0; a < na; a++) {
        const struct ws_match *m = &s->match[a];
        int64_t slot = m->target >= 0 ? t->v[m->target].slot : extra_slot++;
        int64_t footprint = ws_sat_add(s->bytes[a], m->target >= 0 ? t->v[m->target].offset : 0);
        if (observe(o, ctx, slot, footprint, m->overflow) != 0)
            return -1;
    }
    return 0;
}

static int observe_all(const struct ws_analysis *an, const struct facts *fs, struct observations *o)
{
    uint32_t *order = malloc((an->class_count[WS_CLASS_WORKSPACE] + 1) * sizeof *order);
    const struct fact **scratch_facts = malloc((fs->n + 1) * sizeof *scratch_facts);
    struct targets t = {0};
    struct scratch s = {0};
    struct context current = {-2, -2, KEY_ANY};
    size_t n = 0;
    int rc = -1;
    if (!order || !scratch_facts)
        goto out;
    for (size_t i = 0; i < an->nallocs; i++)
        if (an->allocs[i].cls == WS_CLASS_WORKSPACE && an->allocs[i].slot >= 0 && an->allocs[i].node >= 0)
            order[n++] = (uint32_t)i;
    group_an = an;
    qsort(order, n, sizeof *order, group_cmp);
    for (size_t k = 0; k < n;) {
        const struct ws_lifetime *first = &an->allocs[order[k]];
        struct context ctx = {first->node, first->device, ws_analysis_range_key(an, first->owner)};
        size_t j = k + 1;
        while (j < n && an->allocs[order[j]].owner == first->owner && an->allocs[order[j]].device == first->device)
            j++;
        if (context_cmp(&ctx, &current) != 0 && targets_of(an, fs, &ctx, scratch_facts, &t) != 0)
            goto out;
        current = ctx;
        if (observe_group(an, order + k, j - k, &ctx, &t, &s, o) != 0)
            goto out;
        k = j;
    }
    if (o->n > 0) /* o->v is NULL when nothing was observed */
        qsort(o->v, o->n, sizeof *o->v, observation_cmp);
    rc = 0;
out:
    free(order);
    free(scratch_facts);
    free(t.v);
    free(s.bytes);
    free(s.match);
    free(s.taken);
    return rc;
}

/* ---- rows ---- */

struct rows {
    struct ws_verification *v;
    size_t n, cap;
};

/* The row of one slot of a context: the largest figure at each level, the largest footprint. */
static struct ws_verification row_of(const struct context *ctx, int64_t slot, const struct fact *l1,
                                     const struct fact *l2, const struct observation *obs, size_t nobs)
{
    struct ws_verification r = {ctx->node, ctx->key, ctx->device, slot, -1, -1, -1, 0, WS_TACTIC_NONE, NULL, 0};
    if (l1)
        r.level1_bytes = l1->bytes;
    if (l2) {
        r.level2_bytes = l2->bytes;
        r.tactic = l2->tactic;
        r.tactic_name = l2->tactic_name;
    }
    for (size_t i = 0; i < nobs; i++) {
        if (obs[i].footprint > r.observed_bytes)
            r.observed_bytes = obs[i].footprint;
        r.region_overflow |= obs[i].overflow;
    }
    struct ws_verdict_input in = {r.level1_bytes, r.level2_bytes, r.observed_bytes, r.region_overflow, r.tactic};
    r.verdict = (uint8_t)ws_verdict_of(&in);
    return r;
}

static int64_t next_slot(const struct fact **l1, size_t n1, size_t i1, const struct fact **l2, size_t n2, size_t i2,
                         const struct observation *obs, size_t nobs, size_t io)
{
    int64_t slot = INT64_MAX;
    if (i1 < n1 && l1[i1]->slot < slot)
        slot = l1[i1]->slot;
    if (i2 < n2 && l2[i2]->slot < slot)
        slot = l2[i2]->slot;
    if (io < nobs && obs[io].slot < slot)
        slot = obs[io].slot;
    return slot;
}

/* Every slot of one context that has a Level-1 or Level-2 figure or an observation. */
static int context_rows(const struct facts *fs, const struct context *ctx, const struct observation *obs, size_t nobs,
                        const struct fact **l1, const struct fact **l2, struct rows *out)
{
    size_t n1 = applicable(fs, ctx->node, 1, ctx->key, ctx->device, l1);
    size_t n2 = applicable(fs, ctx->node, 2, ctx->key, ctx->device, l2);
    size_t i1 = 0, i2 = 0, io = 0;
    while (i1 < n1 || i2 < n2 || io < nobs) {
        int64_t slot = next_slot(l1, n1, i1, l2, n2, i2, obs, nobs, io);
        const struct fact *f1 = i1 < n1 && l1[i1]->slot == slot ? l1[i1++] : NULL;
        const struct fact *f2 = i2 < n2 && l2[i2]->slot == slot ? l2[i2++] : NULL;
        size_t o0 = io;
        while (io < nobs && obs[io].slot == slot)
            io++;
        if (ws_grow(&out->v, &out->cap, out->n, sizeof *out->v) != 0)
            return -1;
        out->v[out->n++] = row_of(ctx, slot, f1, f2, obs + o0, io - o0);
    }
    return 0;
}

static int all_rows(const struct facts *fs, const struct contexts *c, const struct observations *o, struct rows *out)
{
    const struct fact **l1 = malloc((fs->n + 1) * sizeof *l1), **l2 = malloc((fs->n + 1) * sizeof *l2);
    int rc = -1;
    size_t k = 0;
    if (!l1 || !l2)
        goto out;
    for (size_t i = 0; i < c->n; i++) {
        while (k < o->n && context_cmp(&o->v[k].ctx, &c->v[i]) < 0)
            k++; /* observations of a context are also contexts: nothing is skipped in practice */
        size_t j = k;
        while (j < o->n && context_cmp(&o->v[j].ctx, &c->v[i]) == 0)
            j++;
        if (context_rows(fs, &c->v[i], o->v + k, j - k, l1, l2, out) != 0)
            goto out;
        k = j;
    }
    rc = 0;
out:
    free(l1);
    free(l2);
    return rc;
}

int ws_verify(const struct ws_analysis *an, const struct ws_estimates *est, struct ws_verification **out, size_t *count,
              char *err, size_t errlen)
{
    struct facts fs = {0};
    struct contexts c = {0};
    struct observations o = {0};
    struct rows rows = {0};
    struct fact *facts = collect_facts(an, est, &fs.n);
    int rc = -1;
    *out = NULL;
    *count = 0;
    fs.v = facts;
    if (!facts || index_facts(&fs, an->nnodes) != 0 || observed_contexts(an, &c) != 0 ||
        declared_contexts(&fs, &c) != 0 || observe_all(an, &fs, &o) != 0 || all_rows(&fs, &c, &o, &rows) != 0)
        goto out;
    *out = rows.v;
    *count = rows.n;
    rows.v = NULL;
    rc = 0;
out:
    if (rc != 0)
        snprintf(err, errlen, "out of memory");
    free(facts);
    free(fs.first);
    free(c.v);
    free(o.v);
    free(rows.v);
    return rc;
}
