/*
 * coverage.c - what ONNX Runtime does not tell: placement patterns that match no node, nodes no
 * rule places, nodes two devices' patterns claim; nodes of the model that never ran (no stats
 * line: ORT charges them 0); workspace known only from a profile (partition.h).
 */
#include "partition.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const verdict_names[] = {"ok", "no-match", "shadowed"};

const char *ws_part_rule_verdict_name(enum ws_part_rule_verdict v)
{
    return v <= WS_RULE_SHADOWED ? verdict_names[v] : "?";
}

void ws_part_coverage_free(struct ws_part_coverage *c)
{
    free(c->rules);
    free(c->unmatched);
    free(c->conflicts);
    memset(c, 0, sizeof *c);
}

/* A rule of another device than `rule` that also matches the name; -1 when none does. */
static int32_t other_device(const struct ws_part_rules *r, int32_t rule, const char *name)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcasecmp(r->v[i].device, r->v[rule].device) != 0 && strstr(name, r->v[i].pattern))
            return (int32_t)i;
    return -1;
}

static void node_cover(const struct ws_part_model *m, const struct ws_part_rules *r, struct ws_part_coverage *c,
                       uint8_t *layer_seen)
{
    for (size_t p = 0; p < m->nnodes; p++) {
        const char *name = m->nodes[p].name;
        int32_t rule = ws_part_rules_match(r, name);
        if (rule < 0) {
            c->unmatched[c->nunmatched++] = (int32_t)p;
            continue;
        }
        c->rules[rule].assigned++;
        for (size_t i = 0; i < r->n; i++)
            if (strstr(name, r->v[i].pattern)) {
                c->rules[i].matched++;
                if (m->nodes[p].layer >= 0 && !layer_seen[i * m->nlayers + (size_t)m->nodes[p].layer]++)
                    c->rules[i].layers++;
            }
        int32_t other = other_device(r, rule, name);
        if (other >= 0)
            c->conflicts[c->nconflicts++] = (struct ws_part_conflict){(int32_t)p, rule, other};
    }
}

int ws_part_coverage_compute(const struct ws_part_model *m, const struct ws_part_rules *r, struct ws_part_coverage *c,
                             char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->rules = calloc(r->n + 1, sizeof *c->rules);
    c->unmatched = malloc((m->nnodes + 1) * sizeof *c->unmatched);
    c->conflicts = malloc((m->nnodes + 1) * sizeof *c->conflicts);
    uint8_t *layer_seen = calloc(r->n * m->nlayers + 1, 1);
    if (!c->rules || !c->unmatched || !c->conflicts || !layer_seen) {
        free(layer_seen);
        ws_part_coverage_free(c);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    node_cover(m, r, c, layer_seen);
    free(layer_seen);
    for (size_t i = 0; i < r->n; i++) {
        struct ws_part_rule_cover *rc = &c->rules[i];
        rc->verdict = rc->matched == 0 ? WS_RULE_NO_MATCH : rc->assigned == 0 ? WS_RULE_SHADOWED : WS_RULE_OK;
        c->no_match += rc->verdict == WS_RULE_NO_MATCH;
    }
    return 0;
}

int ws_part_never_ran(const struct ws_part_model *m, int32_t **nodes, size_t *n)
{
    *n = 0;
    *nodes = malloc((m->nnodes + 1) * sizeof **nodes);
    if (!*nodes)
        return -1;
    for (size_t p = 0; p < m->nnodes; p++)
        if ((m->nodes[p].known & (WS_PART_LISTED | WS_PART_FILE)) && !m->nodes[p].executed)
            (*nodes)[(*n)++] = (int32_t)p;
    return 0;
}

size_t ws_part_unlisted(const struct ws_part_model *m)
{
    size_t listed = 0, n = 0;
    for (size_t p = 0; p < m->nnodes; p++)
        listed += (m->nodes[p].known & WS_PART_LISTED) != 0;
    for (size_t p = 0; listed && p < m->ntrace; p++)
        n += m->nodes[p].executed && !(m->nodes[p].known & WS_PART_LISTED);
    return n;
}

int ws_part_first_run_risk(const struct ws_part_model *m, int32_t **nodes, size_t *n)
{
    *n = 0;
    *nodes = malloc((m->nnodes + 1) * sizeof **nodes);
    uint8_t *l2 = calloc(m->an->nnodes + 1, 1);
    if (!*nodes || !l2) {
        free(l2);
        return -1;
    }
    for (size_t i = 0; i < m->an->ndecls; i++)
        if (m->an->decls[i].level == 2 && m->an->decls[i].node >= 0)
            l2[m->an->decls[i].node] = 1;
    for (size_t p = 0; p < m->ntrace; p++) {
        const struct ws_planner_cost *pc = &m->res[m->nodes[p].node].planner;
        if (pc->source == WS_SOURCE_PROFILE && pc->profile_bytes > 0 && !l2[m->nodes[p].node])
            (*nodes)[(*n)++] = (int32_t)p;
    }
    free(l2);
    return 0;
}
