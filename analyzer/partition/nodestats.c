/*
 * nodestats.c - ONNX Runtime's node-stats file, written from a trace, and the names ORT keys it
 * by (partition.h; docs/partition.md, "ORT's node-stats file").
 *
 * ORT's NodeStatsRecorder writes one line per node it ran: its unique node name, input_sizes,
 * initializers_sizes (always 0), total_dynamic_sizes and total_temp_allocations, each the
 * maximum over runs; its reader splits each line at every ',' and needs exactly five fields,
 * skips empty lines and lines starting with '#', and keeps the last line of a name.
 */
#include "partition.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sizes.h"

/* ---- names ---- */

struct pair {
    char *from, *to;
};

static int pair_cmp(const void *a, const void *b)
{
    const struct pair *x = a, *y = b;
    int c = strcmp(x->from, y->from);
    return c ? c : strcmp(x->to, y->to);
}

void ws_ort_names_free(struct ws_ort_names *names)
{
    for (size_t i = 0; i < names->n; i++) {
        free(names->from[i]);
        free(names->to[i]);
    }
    free(names->from);
    free(names->to);
    memset(names, 0, sizeof *names);
}

/* Sorted pairs into names; a `from` with several different `to` is left out and counted. */
static int names_from_pairs(struct pair *v, size_t n, struct ws_ort_names *names, size_t *ambiguous)
{
    qsort(v, n, sizeof *v, pair_cmp);
    names->from = malloc((n + 1) * sizeof *names->from);
    names->to = malloc((n + 1) * sizeof *names->to);
    if (!names->from || !names->to)
        return -1;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1, distinct = 1;
        for (; j < n && strcmp(v[j].from, v[i].from) == 0; j++)
            distinct += strcmp(v[j].to, v[j - 1].to) != 0;
        if (distinct == 1) {
            names->from[names->n] = v[i].from;
            names->to[names->n++] = v[i].to;
            v[i].from = v[i].to = NULL;
        } else {
            ++*ambiguous;
        }
        i = j;
    }
    return 0;
}

static void pairs_free(struct pair *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].from);
        free(v[i].to);
    }
    free(v);
}

int ws_ort_names_from_graph(const struct ws_part_nodelist *graph, struct ws_ort_names *names, char *err, size_t errlen)
{
    struct pair *v = calloc(graph->count + 1, sizeof *v);
    size_t n = 0, ambiguous = 0;
    memset(names, 0, sizeof *names);
    if (!v)
        goto oom;
    for (size_t i = 0; i < graph->count; i++) {
        const struct ws_part_graph_node *g = &graph->nodes[i];
        if (!g->name[0])
            continue; /* ORT names it by its op type: no trace name to map */
        v[n].from = strdup(g->name);
        v[n].to = ws_ort_unique_name(g);
        if (!v[n].from || !v[n++].to)
            goto oom;
    }
    if (names_from_pairs(v, n, names, &ambiguous) != 0)
        goto oom;
    pairs_free(v, n);
    return 0;
oom:
    pairs_free(v, n);
    ws_ort_names_free(names);
    snprintf(err, errlen, "out of memory");
    return -1;
}

/* NAME from NAME_DIGITS; NULL when the text has no such suffix. */
static char *unique_base(const char *s, size_t len)
{
    const char *us = NULL;
    for (size_t i = len; i-- > 0;)
        if (s[i] == '_') {
            us = s + i;
            break;
        }
    size_t digits = us ? len - (size_t)(us - s) - 1 : 0;
    if (!us || us == s || digits == 0 || digits > 20)
        return NULL;
    for (size_t i = 1; i <= digits; i++)
        if (us[i] < '0' || us[i] > '9')
            return NULL;
    return strndup(s, (size_t)(us - s));
}

static int read_all(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
    FILE *in = fopen(path, "rb");
    size_t cap = 0, got;
    *text = NULL;
    *len = 0;
    if (!in) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    do {
        if (*len == cap) {
            char *grown = realloc(*text, cap ? 2 * cap : 65536);
            if (!grown) {
                fclose(in);
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            *text = grown;
            cap = cap ? 2 * cap : 65536;
        }
        got = fread(*text + *len, 1, cap - *len, in);
        *len += got;
    } while (got > 0);
    int bad = ferror(in);
    fclose(in);
    if (bad) {
        snprintf(err, errlen, "%s: read error", path);
        return -1;
    }
    return 0;
}

int ws_ort_names_load(const char *path, struct ws_ort_names *names, size_t *ambiguous, char *err, size_t errlen)
{
    char *text;
    size_t len, n = 0, cap = 0;
    struct pair *v = NULL;
    memset(names, 0, sizeof *names);
    *ambiguous = 0;
    if (read_all(path, &text, &len, err, errlen) != 0)
        return -1;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at), *line = text + at;
        size_t ln = (nl ? (size_t)(nl - text) : len) - at;
        at += ln + (nl != NULL);
        const char *comma = memchr(line, ',', ln);
        size_t name_len = comma ? (size_t)(comma - line) : ln;
        while (name_len > 0 && line[name_len - 1] == '\r')
            name_len--;
        char *base = ln && line[0] != '#' ? unique_base(line, name_len) : NULL;
        if (!base)
            continue;
        if (n == cap) {
            struct pair *grown = realloc(v, (cap = cap ? 2 * cap : 256) * sizeof *grown);
            if (!grown) {
                free(base);
                goto oom;
            }
            v = grown;
        }
        v[n].from = base;
        if (!(v[n++].to = strndup(line, name_len)))
            goto oom;
    }
    free(text);
    if (n == 0) {
        free(v);
        snprintf(err, errlen, "%s: no ONNX Runtime unique node name (NAME_HASH) in the file", path);
        return -1;
    }
    if (names_from_pairs(v, n, names, ambiguous) != 0) {
        text = NULL;
        goto oom;
    }
    pairs_free(v, n);
    return 0;
oom:
    free(text);
    pairs_free(v, n);
    ws_ort_names_free(names);
    snprintf(err, errlen, "out of memory");
    return -1;
}

const char *ws_ort_names_get(const struct ws_ort_names *names, const char *from)
{
    size_t lo = 0, hi = names->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(names->from[mid], from);
        if (c == 0)
            return names->to[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* ---- the file ---- */

/* What ORT's reader cannot take back: a ',' (six fields), a line break, a leading '#' (a comment)
 * or an empty name (skipped). */
static int ort_writable(const char *name) { return name[0] && name[0] != '#' && !strpbrk(name, ",\n\r"); }

/* Per partition node, over every device: persistent bytes allocated outside every run for it. */
static int64_t *trace_initializers(const struct ws_part_model *m)
{
    int64_t *v = calloc(m->nnodes + 1, sizeof *v);
    for (size_t i = 0; v && i < m->an->nallocs; i++) {
        const struct ws_lifetime *a = &m->an->allocs[i];
        int32_t node = m->alloc_node[i], part = node >= 0 ? m->part_of_node[node] : -1;
        if (part >= 0 && a->run < 0 && (a->cls == WS_CLASS_PERSISTENT || a->cls == WS_CLASS_UNATTRIBUTED))
            v[part] = ws_sat_add(v[part], a->bytes);
    }
    return v;
}

static int64_t at_least_0(int64_t v) { return v < 0 ? 0 : v; }

static void stats_line(const struct ws_part_model *m, size_t p, int64_t init, struct ws_ort_stats_line *l)
{
    const struct ws_ort_facts *f = &m->res[m->nodes[p].node].ort.facts;
    int64_t input = at_least_0(f->input_bytes);
    if (init > input)
        input = init;
    if (m->initializer_bytes[p] > input)
        input = m->initializer_bytes[p];
    *l =
        (struct ws_ort_stats_line){m->nodes[p].name, input, 0, at_least_0(f->dynamic_bytes), at_least_0(f->temp_bytes)};
}

int ws_ort_stats_build(const struct ws_part_model *m, const struct ws_ort_names *names, struct ws_ort_stats *s,
                       char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    int64_t *init = trace_initializers(m);
    s->lines = calloc(m->ntrace + 1, sizeof *s->lines);
    if (!init || !s->lines) {
        free(init);
        ws_ort_stats_free(s);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t p = 0; p < m->ntrace; p++) {
        if (!m->nodes[p].executed)
            continue; /* NodeStatsRecorder records the nodes that ran */
        struct ws_ort_stats_line *l = &s->lines[s->n];
        stats_line(m, p, init[p], l);
        const char *mapped = names ? ws_ort_names_get(names, l->name) : NULL;
        if (names && !mapped)
            s->unmapped++;
        if (mapped)
            l->name = mapped;
        if (!ort_writable(l->name)) {
            if (!s->unwritable++)
                s->first_unwritable = m->nodes[p].name;
            continue;
        }
        s->n++;
    }
    free(init);
    return 0;
}

int ws_ort_stats_write(FILE *out, const struct ws_ort_stats *s)
{
    fprintf(out, "%s\n", WS_ORT_STATS_HEADER);
    for (size_t i = 0; i < s->n; i++) {
        const struct ws_ort_stats_line *l = &s->lines[i];
        fprintf(out, "%s,%lld,%lld,%lld,%lld\n", l->name, (long long)l->input, (long long)l->initializers,
                (long long)l->dynamic, (long long)l->temp);
    }
    return ferror(out) ? -1 : 0;
}

void ws_ort_stats_free(struct ws_ort_stats *s)
{
    free(s->lines);
    memset(s, 0, sizeof *s);
}
