/*
 * resolve.c - the planner's ledger and ONNX Runtime's ledger, per node (resolve.h).
 */
#include "resolve.h"
#include "internal.h"
#include "sizes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const source_names[WS_SOURCE_COUNT] = {"estimator", "profile", "max", "unknown"};
static const char *const ort_source_names[WS_ORT_SOURCE_COUNT] = {"profile", "profile+estimator", "not-profiled",
                                                                  "estimator", "fallback"};

const char *ws_source_name(enum ws_source source) { return source < WS_SOURCE_COUNT ? source_names[source] : "?"; }

const char *ws_ort_source_name(enum ws_ort_source source)
{
    return source < WS_ORT_SOURCE_COUNT ? ort_source_names[source] : "?";
}

const char *ws_ort_mode_name(enum ws_ort_mode mode) { return mode == WS_ORT_AD_HOC ? "ad-hoc" : "stats"; }

static int64_t known(int64_t v) { return v < 0 ? 0 : v; }

/* ---- the planner's ledger ---- */

void ws_planner_resolve(int64_t profile_bytes, int64_t estimate_bytes, struct ws_planner_cost *out)
{
    out->profile_bytes = profile_bytes;
    out->estimate_bytes = estimate_bytes;
    if (profile_bytes >= 0 && estimate_bytes >= 0) {
        out->source = WS_SOURCE_MAX; /* an estimate of 0 still takes part */
        out->bytes = profile_bytes > estimate_bytes ? profile_bytes : estimate_bytes;
    } else if (estimate_bytes >= 0) {
        out->source = WS_SOURCE_ESTIMATOR;
        out->bytes = estimate_bytes;
    } else if (profile_bytes >= 0) {
        out->source = WS_SOURCE_PROFILE;
        out->bytes = profile_bytes;
    } else {
        out->source = WS_SOURCE_UNKNOWN; /* never ran, never estimated: no number rather than a guess */
        out->bytes = -1;
    }
}

/* ---- ONNX Runtime's ledger ---- */

/* With a stats file: the recorded line, its temporary allocations raised to the Level-1 estimate.
 * ORT records initializers_sizes as 0 (constant inputs are part of input_sizes). */
static void charge_stats(const struct ws_ort_facts *f, struct ws_ort_cost *out)
{
    if (!f->executed) {
        out->source = WS_ORT_SOURCE_NOT_PROFILED;
        out->workspace_bytes = 0;
        out->cost_bytes = 0;
        return;
    }
    int64_t temp = known(f->temp_bytes);
    out->source = f->estimate_bytes >= 0 ? WS_ORT_SOURCE_PROFILE_AND_ESTIMATOR : WS_ORT_SOURCE_PROFILE;
    out->workspace_bytes = f->estimate_bytes > temp ? f->estimate_bytes : temp;
    out->cost_bytes = ws_sat_add(ws_sat_add(known(f->input_bytes), known(f->dynamic_bytes)), out->workspace_bytes);
}

/* Without one: known bytes (initializers and statically known outputs, the node's observed outputs
 * when the file does not give them) and the estimate, or the ad-hoc margin on the known bytes,
 * truncated as ORT's integer arithmetic does. */
static void charge_ad_hoc(const struct ws_ort_facts *f, double multiplier, struct ws_ort_cost *out)
{
    int64_t outputs = f->output_bytes >= 0 ? f->output_bytes : known(f->dynamic_bytes);
    int64_t base = ws_sat_add(known(f->initializer_bytes), outputs);
    if (f->estimate_bytes >= 0) {
        out->source = WS_ORT_SOURCE_ESTIMATOR;
        out->workspace_bytes = f->estimate_bytes;
        out->cost_bytes = ws_sat_add(base, f->estimate_bytes);
        return;
    }
    long double total = floorl((long double)base * (long double)multiplier);
    out->source = WS_ORT_SOURCE_FALLBACK;
    out->cost_bytes = total >= (long double)INT64_MAX ? INT64_MAX : (int64_t)total;
    out->workspace_bytes = out->cost_bytes - base;
}

void ws_ort_charge(enum ws_ort_mode mode, double multiplier, const struct ws_ort_facts *f, struct ws_ort_cost *out)
{
    out->facts = *f;
    if (mode == WS_ORT_AD_HOC)
        charge_ad_hoc(f, multiplier, out);
    else
        charge_stats(f, out);
}

/* ---- per-node figures ---- */

struct slot_figure {
    int32_t node;
    int64_t slot, bytes;
};

static int figure_cmp(const void *a, const void *b)
{
    const struct slot_figure *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return (x->slot > y->slot) - (x->slot < y->slot);
}

int32_t ws_estimate_node(const struct ws_analysis *an, const struct ws_estimate *e)
{
    int32_t node = ws_analysis_node_by_name(an, e->node);
    return node >= 0 || !e->alias ? node : ws_analysis_node_by_name(an, e->alias);
}

/* Level-1 figures of the trace and the file as (node, slot, bytes), sorted; node -1 for one
 * node only (ws_node_estimate), else every node. */
static int level1_figures(const struct ws_analysis *an, const struct ws_estimates *est, int32_t only,
                          struct slot_figure **out, size_t *count)
{
    size_t n = 0, cap = an->ndecls + (est ? est->count : 0) + 1;
    struct slot_figure *v = malloc(cap * sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < an->ndecls; i++)
        if (an->decls[i].level == 1 && (only < 0 || an->decls[i].node == only))
            v[n++] = (struct slot_figure){an->decls[i].node, an->decls[i].slot, an->decls[i].bytes};
    for (size_t i = 0; est && i < est->count; i++) {
        if (est->items[i].kind != WS_EST_SLOT)
            continue;
        int32_t node = ws_estimate_node(an, &est->items[i]);
        if (node >= 0 && (only < 0 || node == only))
            v[n++] = (struct slot_figure){node, est->items[i].slot, est->items[i].bytes};
    }
    qsort(v, n, sizeof *v, figure_cmp);
    *out = v;
    *count = n;
    return 0;
}

/* The estimate of the node whose figures start at v[*k]: the largest figure of each slot, summed;
 * *k moves past that node's figures. */
static int64_t fold_node(const struct slot_figure *v, size_t n, size_t *k)
{
    int32_t node = v[*k].node;
    int64_t estimate = 0;
    while (*k < n && v[*k].node == node) {
        int64_t best = v[*k].bytes, slot = v[*k].slot;
        for (; *k < n && v[*k].node == node && v[*k].slot == slot; (*k)++)
            if (v[*k].bytes > best)
                best = v[*k].bytes;
        estimate = ws_sat_add(estimate, best);
    }
    return estimate;
}

int64_t ws_node_estimate(const struct ws_analysis *an, const struct ws_estimates *est, int32_t node)
{
    struct slot_figure *v = NULL;
    size_t n = 0, k = 0;
    if (node < 0 || (size_t)node >= an->nnodes || level1_figures(an, est, node, &v, &n) != 0)
        return -1;
    int64_t estimate = n ? fold_node(v, n, &k) : -1;
    free(v);
    return estimate;
}

static int64_t *fact_field(struct ws_ort_facts *f, int kind)
{
    switch (kind) {
    case WS_EST_INPUT: return &f->input_bytes;
    case WS_EST_INITIALIZER: return &f->initializer_bytes;
    case WS_EST_DYNAMIC: return &f->dynamic_bytes;
    case WS_EST_TEMP: return &f->temp_bytes;
    default: return &f->output_bytes;
    }
}

/* The file's node facts: the largest of each.  Recorded figures (an ORT node-stats line) make the
 * node one the stats file knows, and its temporaries a profile. */
static void file_facts(const struct ws_analysis *an, const struct ws_estimates *est, struct ws_ort_facts *f,
                       int64_t *recorded)
{
    for (size_t i = 0; est && i < est->count; i++) {
        const struct ws_estimate *e = &est->items[i];
        int32_t node = e->kind == WS_EST_SLOT ? -1 : ws_estimate_node(an, e);
        if (node < 0)
            continue;
        int64_t *field = fact_field(&f[node], e->kind);
        if (e->bytes > *field)
            *field = e->bytes;
        if (e->kind == WS_EST_DYNAMIC || e->kind == WS_EST_TEMP)
            f[node].executed = 1;
        if (e->kind == WS_EST_TEMP && e->bytes > recorded[node])
            recorded[node] = e->bytes;
    }
}

/* What NodeStatsRecorder sees of each occurrence inside a run, max over a node's occurrences:
 * the workspace it requested (summed, not a peak) and what it allocated that outlives it. */
static int occurrence_facts(const struct ws_analysis *an, struct ws_ort_facts *f)
{
    int64_t *temp = calloc(an->nranges + 1, sizeof *temp), *dyn = calloc(an->nranges + 1, sizeof *dyn);
    if (!temp || !dyn) {
        free(temp);
        free(dyn);
        return -1;
    }
    for (size_t i = 0; i < an->nallocs; i++) {
        const struct ws_lifetime *a = &an->allocs[i];
        if (a->owner < 0 || an->ranges[a->owner].run < 0)
            continue;
        if (a->cls == WS_CLASS_WORKSPACE)
            temp[a->owner] = ws_sat_add(temp[a->owner], a->bytes);
        else if (a->run >= 0)
            dyn[a->owner] = ws_sat_add(dyn[a->owner], a->bytes);
    }
    for (size_t r = 0; r < an->nranges; r++) {
        int32_t node = an->ranges[r].node;
        if (node < 0 || an->ranges[r].run < 0)
            continue;
        if (temp[r] > f[node].temp_bytes)
            f[node].temp_bytes = temp[r];
        if (dyn[r] > f[node].dynamic_bytes)
            f[node].dynamic_bytes = dyn[r];
    }
    free(temp);
    free(dyn);
    return 0;
}

/* recorded: per node the temporaries of an ORT node-stats file, -1 without. */
static int node_facts(const struct ws_analysis *an, const struct ws_estimates *est, struct ws_ort_facts *f,
                      int64_t *recorded)
{
    struct slot_figure *v = NULL;
    size_t n = 0;
    if (level1_figures(an, est, -1, &v, &n) != 0)
        return -1;
    for (size_t k = 0; k < an->nnodes; k++) {
        int ran = an->nodes[k].in_run;
        f[k] = (struct ws_ort_facts){ran, -1, -1, ran ? 0 : -1, ran ? 0 : -1, -1, -1};
        recorded[k] = -1;
    }
    for (size_t k = 0; k < n;) {
        int32_t node = v[k].node;
        f[node].estimate_bytes = fold_node(v, n, &k);
    }
    free(v);
    file_facts(an, est, f, recorded);
    return occurrence_facts(an, f);
}

int ws_resolve(const struct ws_analysis *an, const struct ws_estimates *est, enum ws_ort_mode mode, double multiplier,
               struct ws_resolution **out, size_t *count, char *err, size_t errlen)
{
    struct ws_ort_facts *f = malloc((an->nnodes + 1) * sizeof *f);
    struct ws_resolution *res = calloc(an->nnodes + 1, sizeof *res);
    int64_t *recorded = malloc((an->nnodes + 1) * sizeof *recorded);
    size_t n = 0;
    *out = NULL;
    *count = 0;
    if (!f || !res || !recorded || node_facts(an, est, f, recorded) != 0) {
        free(f);
        free(res);
        free(recorded);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t k = 0; k < an->nnodes; k++) {
        const struct ws_node *node = &an->nodes[k];
        if (!node->has_range && !node->declares)
            continue;
        struct ws_resolution *r = &res[n++];
        r->node = (int32_t)k;
        r->planner.node = r->ort.node = (int32_t)k;
        /* an ORT file's temporaries are a profile too (a sum of requests: at least the peak) */
        int64_t profile = node->profile_bytes > recorded[k] ? node->profile_bytes : recorded[k];
        ws_planner_resolve(profile, f[k].estimate_bytes, &r->planner);
        ws_ort_charge(mode, multiplier, &f[k], &r->ort);
    }
    free(f);
    free(recorded);
    *out = res;
    *count = n;
    return 0;
}

void ws_resolve_totals(const struct ws_resolution *res, size_t n, struct ws_resolve_totals *t)
{
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < n; i++) {
        const struct ws_resolution *r = &res[i];
        t->planner_by_source[r->planner.source]++;
        t->ort_by_source[r->ort.source]++;
        if (r->planner.bytes >= 0)
            t->planner_bytes = ws_sat_add(t->planner_bytes, r->planner.bytes);
        else
            t->planner_unknown++;
        t->ort_bytes = ws_sat_add(t->ort_bytes, r->ort.cost_bytes);
        t->inputs_unknown += r->ort.facts.executed && r->ort.facts.input_bytes < 0;
    }
}
