/*
 * cut.c - the layer-atomic cut, ONNX Runtime's node-level rule on the same trace, and the ready
 * session options for the answer (partition.h; docs/partition.md, "The cut").
 */
#include "partition.h"

#include <stdlib.h>
#include <string.h>

#include "sizes.h"

size_t ws_part_layers_fitting(const int64_t *cost, size_t n, int64_t fixed, int64_t budget)
{
    if (fixed > budget)
        return 0;
    int64_t used = fixed;
    size_t k = 0;
    while (k < n && cost[k] <= budget - used)
        used += cost[k++];
    return k;
}

/* The CUDA execution provider's check: a node is refused, and every later one with it, as soon as
 * consumed + cost would exceed the threshold. */
size_t ws_part_ort_accepts(const int64_t *charge, size_t n, int64_t threshold, int64_t *consumed)
{
    int64_t used = 0;
    size_t k = 0;
    while (k < n && used <= threshold && charge[k] <= threshold - used)
        used += charge[k++];
    *consumed = used;
    return k;
}

/* ---- the layer-atomic cut ---- */

static void layer_costs(const struct ws_part_model *m, const struct ws_part_costs *c, struct ws_part_result *r)
{
    int64_t share_each = 0, rest = 0, n = (int64_t)m->nlayers;
    if (r->outside == WS_PART_SPREAD) { /* equal shares, the remainder one byte each to the first layers */
        share_each = c->outside_total / n;
        rest = c->outside_total % n;
    }
    r->fixed = r->outside == WS_PART_DEVICE ? c->outside_total : 0;
    int64_t cumulative = r->fixed;
    for (size_t i = 0; i < m->nlayers; i++) {
        struct ws_part_layer_fit *f = &r->layers[i];
        const struct ws_part_group *g = &c->layers[i];
        f->share = share_each + ((int64_t)i < rest ? 1 : 0);
        f->cost = ws_sat_add(ws_sat_add(ws_sat_add(g->persistent, g->activation), g->workspace), f->share);
        cumulative = ws_sat_add(cumulative, f->cost);
        f->cumulative = cumulative;
    }
    r->total = cumulative;
}

static int layer_cut(const struct ws_part_model *m, const struct ws_part_costs *c, struct ws_part_result *r)
{
    int64_t *cost = malloc((m->nlayers + 1) * sizeof *cost);
    if (!cost)
        return -1;
    layer_costs(m, c, r);
    for (size_t i = 0; i < m->nlayers; i++)
        cost[i] = r->layers[i].cost;
    r->layers_fit = ws_part_layers_fitting(cost, m->nlayers, r->fixed, r->budget);
    free(cost);
    r->used = r->fixed <= r->budget ? r->fixed : 0;
    for (size_t i = 0; i < m->nlayers; i++) {
        r->layers[i].fits = i < r->layers_fit;
        if (r->layers[i].fits)
            r->used += r->layers[i].cost;
    }
    r->left = r->budget - r->used;
    return 0;
}

/* ---- ORT's rule: the nodes in the order they ran, each charged by ORT's ledger ---- */

static int considered(const struct ws_part_model *m, const struct ws_part_costs *c, size_t p)
{
    return p < m->ntrace && m->nodes[p].executed && c->on_device[p];
}

static int ort_cut(const struct ws_part_model *m, const struct ws_part_costs *c, struct ws_part_result *r)
{
    int64_t *charge = malloc((m->ntrace + 1) * sizeof *charge);
    int32_t *part = malloc((m->ntrace + 1) * sizeof *part);
    size_t n = 0;
    if (!charge || !part) {
        free(charge), free(part);
        return -1;
    }
    for (size_t p = 0; p < m->ntrace; p++)
        if (considered(m, c, p)) {
            part[n] = (int32_t)p;
            charge[n++] = c->ort[p].cost_bytes;
        }
    r->ort_threshold = r->budget / 1024 * 1024; /* the setting is in KiB */
    r->ort_nodes = n;
    r->ort_accepted = ws_part_ort_accepts(charge, n, r->ort_threshold, &r->ort_consumed);
    r->ort_first_rejected = r->ort_accepted < n ? part[r->ort_accepted] : -1;
    int seen_layer = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t layer = m->nodes[part[i]].layer;
        seen_layer |= layer >= 0;
        if (!seen_layer)
            r->ort_before_layers = ws_sat_add(r->ort_before_layers, charge[i]);
        if (layer < 0)
            continue;
        r->layers[layer].ort_cost = ws_sat_add(r->layers[layer].ort_cost, charge[i]);
        r->layers[layer].ort_nodes++;
        r->layers[layer].ort_accepted += i < r->ort_accepted;
    }
    for (size_t l = 0; l < m->nlayers; l++)
        r->ort_layers_whole += r->layers[l].ort_nodes > 0 && r->layers[l].ort_accepted == r->layers[l].ort_nodes;
    free(charge), free(part);
    return 0;
}

/* ---- ready values ---- */

struct text {
    char *s;
    size_t len, cap;
};

static int put(struct text *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *grown = realloc(t->s, cap);
        if (!grown)
            return -1;
        t->s = grown;
        t->cap = cap;
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
    return 0;
}

/* A pattern ORT's grammar can carry unchanged: no separator, no parenthesis, no blank at either
 * end (trimmed), no leading '=' (refused in name-based rules). */
static int writable(const char *p)
{
    size_t n = strlen(p);
    return n > 0 && !strpbrk(p, ",;()") && p[0] != '=' && p[0] != ' ' && p[0] != '\t' && p[n - 1] != ' ' &&
           p[n - 1] != '\t' && !strpbrk(p, "\n\r\v\f");
}

/* Whether a layer is written as its name and the character after its number. */
static int layer_pattern(const struct ws_part_layer *l)
{
    char t = l->terminator;
    return t && !strchr(",;() \t\n\r\v\f", t) && writable(l->name);
}

/* The patterns of one side: layers [from, to) and, when outside, the nodes outside every layer.  A
 * layer whose node names all continue with one character after the number is written as its name
 * and that character ("/model/layers.3/"), which no other layer's names hold; otherwise as the
 * names of its nodes. */
static int side(const struct ws_part_model *m, size_t from, size_t to, int outside, struct text *t, int *exact)
{
    for (size_t l = from; l < to; l++) {
        const struct ws_part_layer *layer = &m->layers[l];
        if (layer_pattern(layer)) {
            char term[2] = {layer->terminator, 0};
            if (put(t, t->len ? "," : "", t->len ? 1 : 0) || put(t, layer->name, strlen(layer->name)) ||
                put(t, term, 1))
                return -1;
            continue;
        }
        for (size_t p = 0; p < m->nnodes; p++)
            if (m->nodes[p].layer == (int32_t)l &&
                (put(t, t->len ? "," : "", t->len ? 1 : 0) || put(t, m->nodes[p].name, strlen(m->nodes[p].name))))
                return -1;
    }
    for (size_t p = 0; outside && p < m->nnodes; p++)
        if (m->nodes[p].layer < 0) {
            *exact &= writable(m->nodes[p].name);
            if (put(t, t->len ? "," : "", t->len ? 1 : 0) || put(t, m->nodes[p].name, strlen(m->nodes[p].name)))
                return -1;
        }
    return 0;
}

static int group(struct text *rule, const char *device, struct text *patterns)
{
    if (patterns->len == 0)
        return 0;
    return put(rule, rule->len ? ";" : "", rule->len ? 1 : 0) || put(rule, device, strlen(device)) ||
           put(rule, "(", 1) || put(rule, patterns->s, patterns->len) || put(rule, ")", 1);
}

/* Whether ORT, matching the value, places every node where the answer wants it. */
static int check_rule(const struct ws_part_model *m, const struct ws_part_result *r, const char *gpu)
{
    struct ws_part_rules rules;
    char err[256];
    if (ws_part_rules_parse(r->name_rule, &rules, err, sizeof err) != 0)
        return 0;
    int ok = 1;
    for (size_t p = 0; p < m->nnodes && ok; p++) {
        int32_t layer = m->nodes[p].layer, k = ws_part_rules_match(&rules, m->nodes[p].name);
        const char *want = layer >= 0                     ? ((size_t)layer < r->layers_fit ? gpu : "cpu")
                           : r->outside == WS_PART_DEVICE ? gpu
                           : r->outside == WS_PART_HOST   ? "cpu"
                                                          : NULL;
        ok = want ? k >= 0 && strcmp(rules.v[k].device, want) == 0 : k < 0;
    }
    ws_part_rules_free(&rules);
    return ok;
}

static int ready_rule(const struct ws_part_model *m, struct ws_part_result *r, const char *gpu)
{
    struct text rule = {0}, on = {0}, off = {0};
    int exact = 1, rc = -1;
    for (size_t l = 0; l < m->nlayers; l++)
        if (!layer_pattern(&m->layers[l]))
            for (size_t p = 0; p < m->nnodes; p++)
                if (m->nodes[p].layer == (int32_t)l)
                    exact &= writable(m->nodes[p].name);
    if (side(m, 0, r->layers_fit, r->outside == WS_PART_DEVICE, &on, &exact) ||
        side(m, r->layers_fit, m->nlayers, r->outside == WS_PART_HOST, &off, &exact) || group(&rule, gpu, &on) ||
        group(&rule, "cpu", &off) || put(&rule, "", 0))
        goto out;
    r->name_rule = rule.s;
    rule.s = NULL;
    r->name_rule_exact = exact && check_rule(m, r, gpu);
    rc = 0;
out:
    free(rule.s), free(on.s), free(off.s);
    return rc;
}

/* ORT's charges of the nodes the ready rule leaves to the device: the layers that fit, and the
 * nodes outside every layer unless they go to the host. */
static void gpu_side(const struct ws_part_model *m, const struct ws_part_costs *c, struct ws_part_result *r)
{
    for (size_t p = 0; p < m->ntrace; p++) {
        int32_t layer = m->nodes[p].layer;
        int on = layer >= 0 ? (size_t)layer < r->layers_fit : r->outside != WS_PART_HOST;
        if (on && considered(m, c, p))
            r->ort_gpu_side = ws_sat_add(r->ort_gpu_side, c->ort[p].cost_bytes);
    }
}

int ws_part_cut(const struct ws_part_model *m, const struct ws_part_costs *c, int64_t budget,
                enum ws_part_outside outside, const char *gpu, struct ws_part_result *r, char *err, size_t errlen)
{
    char setting[64];
    memset(r, 0, sizeof *r);
    r->budget = budget;
    r->outside = outside;
    r->layers = calloc(m->nlayers + 1, sizeof *r->layers);
    snprintf(setting, sizeof setting, "%lld,node_stats.csv", (long long)(budget / 1024));
    if (!r->layers || layer_cut(m, c, r) != 0 || ort_cut(m, c, r) != 0 || ready_rule(m, r, gpu) != 0 ||
        !(r->resource_settings = strdup(setting))) {
        ws_part_result_free(r);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    gpu_side(m, c, r);
    return 0;
}

void ws_part_result_free(struct ws_part_result *r)
{
    free(r->layers);
    free(r->name_rule);
    free(r->resource_settings);
    memset(r, 0, sizeof *r);
}
