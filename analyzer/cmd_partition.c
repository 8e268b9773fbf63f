/*
 * wstrace partition TRACE --budget SIZE: how many whole layers fit a memory budget, what ONNX
 * Runtime's node-level rule would accept on the same trace, the ready session options for the
 * answer, and the coverage of name-based placement rules (docs/partition.md).  The engine is
 * analyzer/partition/; this file parses options and prints.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis.h"
#include "cli.h"
#include "commands.h"
#include "estimates.h"
#include "outfile.h"
#include "output.h"
#include "partition.h"
#include "progress.h"
#include "sizes.h"

#define MAX_BUDGETS 16
#define SHOWN       8 /* names listed in the text output; --json lists all */

struct partition_options {
    const char *trace, *pattern, *rules, *nodes, *estimates, *svg;
    int64_t budgets[MAX_BUDGETS];
    size_t nbudgets;
    int device; /* -1: every device */
    enum ws_part_outside outside;
    int strict, json;
};

static void partition_usage(FILE *out)
{
    fprintf(out, "usage: wstrace partition TRACE --budget SIZE[,SIZE...] [--device N] [--layers PATTERN]\n"
                 "                         [--rules \"cpu(...);gpu(...)\"] [--nodes FILE] [--estimates FILE]\n"
                 "                         [--outside spread|device|host] [--strict] [--json] [--svg FILE]\n\n"
                 "How many whole layers of the traced model fit a memory budget on one device.  Each layer costs\n"
                 "its persistent bytes (weights, caches), the peak of its live activations, the largest workspace\n"
                 "ONNX Runtime's ledger charges one of its nodes, and its share of what is outside every layer;\n"
                 "layers are taken in the order they ran.  Beside it: what ONNX Runtime's node-level rule\n"
                 "(stop at the first node that overflows) accepts on the same trace, and ready values of\n"
                 "session.name_based_layer_assignment and session.resource_cuda_partitioning_settings.\n"
                 "With --rules: the nodes each pattern matches, patterns that match none, nodes no rule places,\n"
                 "nodes two devices' patterns claim.  Rows go to tables partitions, partition_layers and\n"
                 "partition_rules (re-running replaces them).  See docs/partition.md.\n\n"
                 "  --budget SIZE      bytes, or with K, M, G, T (binary: 8G = 8 GiB); a list or the option\n"
                 "                     repeated for several budgets\n"
                 "  --device N         only device N (default: each device the trace allocated on)\n"
                 "  --layers PATTERN   the text before the layer number in node names (default layers.)\n"
                 "  --rules VALUE      a session.name_based_layer_assignment value to check\n"
                 "  --nodes FILE       the model's nodes: one name per line, or a JSON graph (docs/partition.md)\n"
                 "  --estimates FILE   Level-1 estimates and node facts, or ORT's node-stats file\n"
                 "  --outside MODE     the parts outside every layer: spread over the layers (default), kept on\n"
                 "                     the device (charged in full), or on the host (not charged)\n"
                 "  --strict           exit 1 when a rule pattern matches no node or two devices claim a node\n"
                 "  --json             print JSON instead of text\n"
                 "  --svg FILE         draw the layers against the budget ('-': standard output)\n"
                 "  --quiet            no progress line on a terminal\n"
                 "  --help             show this help\n");
}

/* ---- options ---- */

static int64_t unit_of(const char *s)
{
    static const struct {
        const char *suffix;
        int shift;
    } units[] = {{"", 0},     {"B", 0},  {"K", 10},  {"KB", 10},  {"KIB", 10}, {"M", 20},  {"MB", 20},
                 {"MIB", 20}, {"G", 30}, {"GB", 30}, {"GIB", 30}, {"T", 40},   {"TB", 40}, {"TIB", 40}};
    char up[8];
    size_t n = strlen(s);
    if (n >= sizeof up)
        return -1;
    for (size_t i = 0; i <= n; i++)
        up[i] = (char)(s[i] >= 'a' && s[i] <= 'z' ? s[i] - 32 : s[i]);
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(up, units[i].suffix) == 0)
            return (int64_t)1 << units[i].shift;
    return -1;
}

/* "8G", "1.5GiB", "100663296": binary units, fractions truncated to whole bytes; -1 when not a size. */
static int64_t parse_size(const char *text)
{
    const char *p = text;
    int64_t whole = 0, frac = 0, scale = 1;
    if (*p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++)
        if (__builtin_mul_overflow(whole, 10, &whole) || __builtin_add_overflow(whole, *p - '0', &whole))
            return -1;
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++)
            if (scale < 1000000000000LL) {
                frac = frac * 10 + (*p - '0');
                scale *= 10;
            }
    }
    int64_t unit = unit_of(p), bytes;
    if (unit < 0 || __builtin_mul_overflow(whole, unit, &bytes))
        return -1;
    __int128 part = (__int128)frac * unit / scale;
    if (__builtin_add_overflow(bytes, (int64_t)part, &bytes))
        return -1;
    return bytes;
}

static int add_budgets(struct partition_options *o, const char *arg)
{
    char *copy = strdup(arg), *save = NULL;
    int rc = 0;
    if (!copy)
        return WS_EXIT_USAGE;
    for (char *t = strtok_r(copy, ",", &save); t && rc == 0; t = strtok_r(NULL, ",", &save)) {
        int64_t b = parse_size(t);
        if (b <= 0) {
            ws_error("partition: --budget needs a size above 0 (bytes, or with K, M, G, T: 8G), not '%s'", t);
            rc = WS_EXIT_USAGE;
        } else if (o->nbudgets == MAX_BUDGETS) {
            ws_error("partition: at most %d budgets", MAX_BUDGETS);
            rc = WS_EXIT_USAGE;
        } else {
            o->budgets[o->nbudgets++] = b;
        }
    }
    if (rc == 0 && o->nbudgets == 0) {
        ws_error("partition: --budget needs a size above 0 (bytes, or with K, M, G, T: 8G), not '%s'", arg);
        rc = WS_EXIT_USAGE;
    }
    free(copy);
    return rc;
}

static int parse_device(const char *arg, int *device)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (*arg < '0' || *arg > '9' || *end || v > 1 << 20) {
        ws_error("partition: --device needs a device number, not '%s'", arg);
        return WS_EXIT_USAGE;
    }
    *device = (int)v;
    return 0;
}

/* Returns -1 to go on, otherwise the exit status. */
static int parse_partition(int argc, char **argv, struct partition_options *o)
{
    static const struct option longopts[] = {{"budget", required_argument, NULL, 'b'},
                                             {"device", required_argument, NULL, 'd'},
                                             {"layers", required_argument, NULL, 'l'},
                                             {"rules", required_argument, NULL, 'r'},
                                             {"nodes", required_argument, NULL, 'n'},
                                             {"estimates", required_argument, NULL, 'e'},
                                             {"outside", required_argument, NULL, 'o'},
                                             {"strict", no_argument, NULL, 's'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"svg", required_argument, NULL, 'g'},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {0}};
    int c, rc = 0;
    o->pattern = WS_PART_DEFAULT_PATTERN;
    o->device = -1;
    optind = 0; /* commands may run several times in one process (tests) */
    opterr = 0;
    ws_progress_set_quiet(0);
    while (rc == 0 && (c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'b': rc = add_budgets(o, optarg); break;
        case 'd': rc = parse_device(optarg, &o->device); break;
        case 'l': o->pattern = optarg; break;
        case 'r': o->rules = optarg; break;
        case 'n': o->nodes = optarg; break;
        case 'e': o->estimates = optarg; break;
        case 'o':
            if (ws_part_outside_parse(optarg, &o->outside) != 0) {
                ws_error("partition: --outside is 'spread', 'device' or 'host', not '%s'", optarg);
                rc = WS_EXIT_USAGE;
            }
            break;
        case 's': o->strict = 1; break;
        case 'j': o->json = 1; break;
        case 'g': o->svg = optarg; break;
        case 'q': ws_progress_set_quiet(1); break;
        case 'h': partition_usage(stdout); return WS_EXIT_OK;
        default: return ws_bad_option("partition", c, argv);
        }
    }
    if (rc != 0)
        return rc;
    if (optind + 1 != argc || o->nbudgets == 0) {
        ws_error("partition: expected one TRACE and --budget SIZE; see 'wstrace partition --help'");
        return WS_EXIT_USAGE;
    }
    if (!o->pattern[0]) {
        ws_error("partition: --layers needs the text before the layer number, e.g. 'layers.'");
        return WS_EXIT_USAGE;
    }
    o->trace = argv[optind];
    return -1;
}

/* ---- the work ---- */

struct partition_work {
    struct ws_estimates est;
    struct ws_part_nodelist list;
    struct ws_part_rules rules;
    struct ws_part_coverage cov;
    struct ws_analysis an;
    struct ws_part_model model;
    struct ws_part_view *views;
    size_t nviews;
    struct ws_part_costs *costs;    /* per view */
    struct ws_part_result *results; /* per view and budget */
    struct ws_part_run *runs;
    size_t nruns;
    int32_t *never_ran, *risk;
    size_t nnever_ran, nrisk, unlisted;
    sqlite3 *db;
    int have_rules, have_list;
};

static void work_free(struct partition_work *w)
{
    for (size_t i = 0; i < w->nruns; i++)
        ws_part_result_free(&w->results[i]);
    for (size_t i = 0; w->costs && i < w->nviews; i++)
        ws_part_costs_free(&w->costs[i]);
    free(w->results);
    free(w->runs);
    free(w->costs);
    free(w->views);
    free(w->never_ran);
    free(w->risk);
    ws_part_model_free(&w->model);
    ws_part_coverage_free(&w->cov);
    ws_part_rules_free(&w->rules);
    ws_part_nodelist_free(&w->list);
    ws_estimates_free(&w->est);
    ws_analysis_free(&w->an);
    sqlite3_close(w->db);
}

/* Inputs that are files or text: read before the trace is opened, so bad input writes nothing. */
static int read_inputs(const struct partition_options *o, struct partition_work *w, char *err, size_t errlen)
{
    if (o->estimates && ws_estimates_load(o->estimates, &w->est, err, errlen) != 0)
        return -1;
    if (o->nodes && ws_part_nodelist_load(o->nodes, &w->list, err, errlen) != 0)
        return -1;
    w->have_list = o->nodes != NULL;
    if (o->rules && ws_part_rules_parse(o->rules, &w->rules, err, errlen) != 0)
        return -1;
    w->have_rules = o->rules != NULL;
    return 0;
}

static int select_views(const struct partition_options *o, struct partition_work *w, char *err, size_t errlen)
{
    if (ws_part_views(&w->an, &w->views, &w->nviews, err, errlen) != 0)
        return -1;
    if (o->device < 0)
        return 0;
    size_t k = 0;
    for (size_t i = 0; i < w->nviews; i++)
        if (w->views[i].device == o->device)
            w->views[k++] = w->views[i];
    if (k == 0) {
        snprintf(err, errlen, "%s: no allocation on device %d", o->trace, o->device);
        return -1;
    }
    w->nviews = k;
    return 0;
}

static int compute(const struct partition_options *o, struct partition_work *w, char *err, size_t errlen)
{
    char gpu[32];
    w->costs = calloc(w->nviews, sizeof *w->costs);
    w->results = calloc(w->nviews * o->nbudgets, sizeof *w->results);
    w->runs = calloc(w->nviews * o->nbudgets, sizeof *w->runs);
    if (!w->costs || !w->results || !w->runs) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t v = 0; v < w->nviews; v++) {
        if (ws_part_costs_compute(&w->model, w->views[v], &w->costs[v], err, errlen) != 0)
            return -1;
        if (w->nviews > 1)
            snprintf(gpu, sizeof gpu, "gpu:%d", w->views[v].device);
        else
            snprintf(gpu, sizeof gpu, "gpu");
        for (size_t b = 0; b < o->nbudgets; b++) {
            if (ws_part_cut(&w->model, &w->costs[v], o->budgets[b], o->outside, gpu, &w->results[w->nruns], err,
                            errlen) != 0)
                return -1;
            w->runs[w->nruns] = (struct ws_part_run){&w->costs[v], &w->results[w->nruns]};
            w->nruns++;
        }
    }
    if (w->have_rules && ws_part_coverage_compute(&w->model, &w->rules, &w->cov, err, errlen) != 0)
        return -1;
    if (ws_part_never_ran(&w->model, &w->never_ran, &w->nnever_ran) != 0 ||
        ws_part_first_run_risk(&w->model, &w->risk, &w->nrisk) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    w->unlisted = w->have_list ? ws_part_unlisted(&w->model) : 0;
    return 0;
}

/* ---- warnings ---- */

/*
 * The warnings, one line per rule pattern that matches no node, one for the nodes in conflict,
 * one for text after ')'; returns their count.  They go on stderr (WARN_STDERR, after the
 * report, for whoever runs the command) and into the text report (WARN_REPORT, for whoever reads
 * it later), but never twice on one stream: when standard output and error are the same file
 * (a terminal, `2>&1`), the report's lines are the only ones (warnings_on_stderr).
 */
enum { WARN_STDERR = 1, WARN_REPORT = 2 };

static void warn(int where, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(int where, const char *fmt, ...)
{
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap); /* the line whole, however long the names */
    va_end(ap);
    char *line = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (line)
        vsnprintf(line, (size_t)n + 1, fmt, again);
    va_end(again);
    if (where & WARN_STDERR)
        ws_error("warning: %s", line ? line : "(out of memory)");
    if (where & WARN_REPORT)
        printf("warning: %s\n", line ? line : "(out of memory)");
    free(line);
}

static size_t warnings(const struct partition_work *w, int where)
{
    size_t n = 0;
    if (!w->have_rules)
        return 0;
    for (size_t i = 0; i < w->rules.n; i++)
        if (w->cov.rules[i].verdict == WS_RULE_NO_MATCH && ++n)
            warn(where, "rule pattern '%s' (%s) matches no node: ONNX Runtime ignores it without a word",
                 w->rules.v[i].pattern, w->rules.v[i].device);
    if (w->cov.nconflicts && ++n)
        warn(where, "%zu nodes are matched by patterns of two devices (first: %s)", w->cov.nconflicts,
             w->model.nodes[w->cov.conflicts[0].node].name);
    if (w->rules.ignored && ++n)
        warn(where, "text after ')' is ignored by ONNX Runtime: '%s'", w->rules.ignored);
    return n;
}

/* 0 when the text report on standard output already showed the warnings to the same file that
 * standard error writes to. */
static int warnings_on_stderr(const struct partition_options *o)
{
    struct stat out, err;
    if (o->json || fstat(STDOUT_FILENO, &out) != 0 || fstat(STDERR_FILENO, &err) != 0)
        return 1;
    return !(out.st_dev == err.st_dev && out.st_ino == err.st_ino);
}

/* ---- text ---- */

static const char *b2(int64_t v, char *buf) { return ws_format_bytes(v, buf, 32); }

static void print_names(const struct ws_part_model *m, const int32_t *nodes, size_t n)
{
    for (size_t i = 0; i < n && i < SHOWN; i++)
        printf("%s%s", i ? ", " : " ", m->nodes[nodes[i]].name);
    if (n > SHOWN)
        printf(", ... (%zu more; all in --json)", n - SHOWN);
    printf("\n");
}

static int print_layers(const struct partition_work *w, const struct ws_part_costs *c, const struct ws_part_run *run)
{
    static const char *const headers[] = {"LAYER", "NODES", "PERSISTENT", "ACTIVATION", "WORKSPACE",
                                          "SHARE", "COST",  "CUMULATIVE", "ORT CHARGES"};
    struct ws_table t;
    char b[8][32], nodes[32];
    int rc = 0;
    ws_table_init(&t, 9, headers, "lrrrrrrrr");
    for (size_t l = 0; l < w->model.nlayers && rc == 0; l++) {
        const struct ws_part_group *g = &c->layers[l];
        const struct ws_part_layer_fit *f = &run->result->layers[l];
        snprintf(nodes, sizeof nodes, "%zu", w->model.layers[l].nodes);
        const char *row[] = {w->model.layers[l].name, nodes,
                             b2(g->persistent, b[0]), b2(g->activation, b[1]),
                             b2(g->workspace, b[2]),  b2(f->share, b[3]),
                             b2(f->cost, b[4]),       b2(f->cumulative, b[5]),
                             b2(f->ort_cost, b[6])};
        rc = ws_table_add(&t, row);
    }
    if (rc == 0)
        ws_table_print(&t, stdout);
    ws_table_free(&t);
    return rc;
}

static void print_outside(const struct partition_work *w, const struct ws_part_costs *c, enum ws_part_outside o)
{
    char b[4][32];
    size_t n = 0;
    for (size_t p = 0; p < w->model.ntrace; p++)
        n += w->model.nodes[p].layer < 0;
    static const char *const where[] = {"spread over the layers in equal shares", "kept on the device: charged first",
                                        "placed on the host: not charged"};
    printf("outside every layer: %zu nodes and unattributed memory: persistent %s, activations %s, workspace %s; "
           "%s in all, %s\n",
           n, b2(c->outside.persistent, b[0]), b2(c->outside.activation, b[1]), b2(c->outside.workspace, b[2]),
           b2(c->outside_total, b[3]), where[o]);
    if (w->model.named_allocations)
        printf("%zu allocations belong to the node or layer their name names (NVTX memory naming)\n",
               w->model.named_allocations);
    if (c->file_initializers)
        printf("initializer bytes of the estimates file beyond the trace's: %s, added to their layers\n",
               b2(c->file_initializers, b[0]));
}

static void print_difference(const struct ws_part_model *m, const struct ws_part_result *r)
{
    char b[3][32];
    int64_t ort = 0, ours = 0;
    for (size_t l = 0; l < r->layers_fit; l++) {
        ort = ws_sat_add(ort, r->layers[l].ort_cost);
        ours = ws_sat_add(ours, r->layers[l].cost);
    }
    if (r->ort_first_rejected >= 0) {
        int32_t layer = m->nodes[r->ort_first_rejected].layer;
        if (layer >= 0 && r->layers[layer].ort_accepted > 0)
            printf("    ORT's cut falls inside %s (%zu of its %zu nodes accepted): that layer is split between the "
                   "device and the host\n",
                   m->layers[layer].name, r->layers[layer].ort_accepted, r->layers[layer].ort_nodes);
    }
    if (r->layers_fit > 0)
        printf("    for the %zu layers that fit, ORT charges %s and wstrace counts %s: ORT adds up every node's "
               "inputs, dynamic outputs and temporaries, wstrace takes the layer's peak of live activations and "
               "its largest workspace%s\n",
               r->layers_fit, b2(ort, b[0]), b2(ours, b[1]),
               r->outside == WS_PART_SPREAD ? ", and a share of what is outside every layer" : "");
    if (r->ort_before_layers > 0)
        printf("    before the first layer ORT has charged %s for the nodes that run before it, in full\n",
               b2(r->ort_before_layers, b[2]));
    if (r->ort_gpu_side > r->ort_threshold)
        printf("    with both values ORT's accountant would still stop early: it charges the nodes the rule leaves on "
               "the device %s, above its threshold%s\n",
               b2(r->ort_gpu_side, b[2]),
               r->outside == WS_PART_SPREAD ? " (the nodes outside every layer are left to ORT: see --outside)" : "");
}

static void print_budget(const struct partition_options *o, const struct ws_part_model *m,
                         const struct ws_part_run *run)
{
    const struct ws_part_result *r = run->result;
    char b[4][32];
    printf("\nbudget %s (%lld B) on device %d:\n", b2(r->budget, b[0]), (long long)r->budget, run->costs->view.device);
    if (r->fixed > r->budget)
        printf("  the parts outside every layer alone need %s: no layer fits (try --outside host)\n",
               b2(r->fixed, b[1]));
    printf("  layer-atomic: %zu of %zu layers fit", r->layers_fit, m->nlayers);
    if (r->layers_fit > 0)
        printf(" (%s .. %s)", m->layers[0].name, m->layers[r->layers_fit - 1].name);
    printf(", %s used, %s left\n", b2(r->used, b[1]), b2(r->left, b[2]));
    if (r->layers_fit < m->nlayers)
        printf("  the next layer, %s, costs %s: %s more than is left\n", m->layers[r->layers_fit].name,
               b2(r->layers[r->layers_fit].cost, b[1]), b2(r->layers[r->layers_fit].cost - r->left, b[2]));
    printf("  ONNX Runtime's node-level rule (threshold %lld KiB, nodes in the order they ran): accepts %zu of %zu "
           "nodes",
           (long long)(r->ort_threshold / 1024), r->ort_accepted, r->ort_nodes);
    if (r->ort_first_rejected >= 0)
        printf(", stops at %s", m->nodes[r->ort_first_rejected].name);
    printf(": whole layers %zu, %s charged\n", r->ort_layers_whole, b2(r->ort_consumed, b[1]));
    print_difference(m, r);
    printf("  session.name_based_layer_assignment = %s%s\n", r->name_rule,
           r->name_rule_exact ? ""
                              : "\n    (not exact: a node name ORT's grammar cannot carry, or a pattern that "
                                "also matches nodes meant for the other side)");
    printf("  session.resource_cuda_partitioning_settings = %s\n    (the stats file: wstrace export %s --format "
           "ort-node-stats -o node_stats.csv, beside the model)\n",
           r->resource_settings, o->trace);
}

static void print_rules(const struct partition_work *w)
{
    static const char *const headers[] = {"DEVICE", "PATTERN", "MATCHES", "ASSIGNS", "LAYERS", "VERDICT"};
    struct ws_table t;
    char n[3][24];
    ws_table_init(&t, 6, headers, "llrrrl");
    printf("\nrule coverage over %zu nodes (ONNX Runtime applies the longest pattern a name holds, the first of "
           "equal length):\n",
           w->model.nnodes);
    for (size_t i = 0; i < w->rules.n; i++) {
        const struct ws_part_rule_cover *c = &w->cov.rules[i];
        snprintf(n[0], sizeof n[0], "%zu", c->matched);
        snprintf(n[1], sizeof n[1], "%zu", c->assigned);
        snprintf(n[2], sizeof n[2], "%zu", c->layers);
        const char *row[] = {
            w->rules.v[i].device, w->rules.v[i].pattern, n[0], n[1], n[2], ws_part_rule_verdict_name(c->verdict)};
        if (ws_table_add(&t, row) != 0)
            break;
    }
    ws_table_print(&t, stdout);
    ws_table_free(&t);
    warnings(w, WARN_REPORT);
    if (w->cov.nunmatched) {
        printf("%zu nodes are matched by no rule (ONNX Runtime places them as without rules):", w->cov.nunmatched);
        print_names(&w->model, w->cov.unmatched, w->cov.nunmatched);
    }
    for (size_t i = 0; i < w->cov.nconflicts && i < SHOWN; i++) {
        const struct ws_part_conflict *c = &w->cov.conflicts[i];
        printf("conflict: %s matches '%s' (%s) and '%s' (%s); ONNX Runtime applies '%s'\n",
               w->model.nodes[c->node].name, w->rules.v[c->rule].pattern, w->rules.v[c->rule].device,
               w->rules.v[c->other].pattern, w->rules.v[c->other].device, w->rules.v[c->rule].pattern);
    }
    if (w->cov.nconflicts > SHOWN)
        printf("... %zu conflicts in all (all in --json)\n", w->cov.nconflicts);
}

static void print_coverage(const struct partition_work *w)
{
    if (w->nnever_ran) {
        printf("\nprofiling coverage: %zu nodes of the model never ran in the trace (an untaken If/Loop branch?): "
               "ORT's stats file has no line for them and its accountant charges them 0:",
               w->nnever_ran);
        print_names(&w->model, w->never_ran, w->nnever_ran);
    }
    if (w->unlisted)
        printf("%zu nodes ran that the node list does not name (a list of the model before ONNX Runtime's graph "
               "optimizations?)\n",
               w->unlisted);
    if (w->nrisk) {
        printf("\nfirst-run risk: %zu nodes have workspace known only from the profile (no Level-1 estimate, no "
               "Level-2 declaration): a planned layout does not protect the first run:",
               w->nrisk);
        print_names(&w->model, w->risk, w->nrisk);
    }
}

static int print_text(const struct partition_options *o, const struct partition_work *w)
{
    printf("%zu layers in %s (names with '%s' and a number), %zu nodes\n", w->model.nlayers, o->trace, w->model.pattern,
           w->model.ntrace);
    for (size_t v = 0; v < w->nviews; v++) {
        const struct ws_part_run *first = &w->runs[v * o->nbudgets];
        printf("\ndevice %d%s:\n", w->views[v].device, w->an.processes > 1 ? " (one process of several)" : "");
        if (print_layers(w, first->costs, first) != 0)
            return -1;
        print_outside(w, first->costs, o->outside);
        for (size_t b = 0; b < o->nbudgets; b++)
            print_budget(o, &w->model, &w->runs[v * o->nbudgets + b]);
    }
    if (w->have_rules)
        print_rules(w);
    print_coverage(w);
    printf("\nrows written to tables partitions, partition_layers%s of %s\n", w->have_rules ? ", partition_rules" : "",
           o->trace);
    return 0;
}

/* ---- JSON ---- */

static json_t *names_json(const struct ws_part_model *m, const int32_t *nodes, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, ws_json_text(m->nodes[nodes[i]].name));
    return a;
}

static json_t *group_json(const struct ws_part_group *g)
{
    return json_pack("{s:I, s:I, s:I}", "persistent_bytes", (json_int_t)g->persistent, "activation_bytes",
                     (json_int_t)g->activation, "workspace_bytes", (json_int_t)g->workspace);
}

static json_t *layers_json(const struct ws_part_model *m, const struct ws_part_run *run)
{
    json_t *a = json_array();
    for (size_t l = 0; a && l < m->nlayers; l++) {
        const struct ws_part_group *g = &run->costs->layers[l];
        const struct ws_part_layer_fit *f = &run->result->layers[l];
        json_array_append_new(
            a, json_pack("{s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:I, s:I, s:I}", "layer",
                         ws_json_text(m->layers[l].name), "nodes", (json_int_t)m->layers[l].nodes, "persistent_bytes",
                         (json_int_t)g->persistent, "activation_bytes", (json_int_t)g->activation, "workspace_bytes",
                         (json_int_t)g->workspace, "share_bytes", (json_int_t)f->share, "cost_bytes",
                         (json_int_t)f->cost, "cumulative_bytes", (json_int_t)f->cumulative, "fits", f->fits,
                         "ort_cost_bytes", (json_int_t)f->ort_cost, "ort_nodes", (json_int_t)f->ort_nodes,
                         "ort_nodes_accepted", (json_int_t)f->ort_accepted));
    }
    return a;
}

static json_t *run_json(const struct ws_part_model *m, const struct ws_part_run *run)
{
    const struct ws_part_result *r = run->result;
    json_t *rejected = r->ort_first_rejected >= 0 ? ws_json_text(m->nodes[r->ort_first_rejected].name) : json_null();
    return json_pack(
        "{s:i, s:i, s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:o, s:I, s:I},"
        " s:s, s:b, s:s}",
        "device", run->costs->view.device, "process", run->costs->view.process, "budget_bytes", (json_int_t)r->budget,
        "outside", ws_part_outside_name(r->outside), "layers_fit", (json_int_t)r->layers_fit, "fixed_bytes",
        (json_int_t)r->fixed, "used_bytes", (json_int_t)r->used, "left_bytes", (json_int_t)r->left, "total_bytes",
        (json_int_t)r->total, "outside_costs", group_json(&run->costs->outside), "layers", layers_json(m, run), "ort",
        "threshold_bytes", (json_int_t)r->ort_threshold, "nodes", (json_int_t)r->ort_nodes, "nodes_accepted",
        (json_int_t)r->ort_accepted, "layers_whole", (json_int_t)r->ort_layers_whole, "consumed_bytes",
        (json_int_t)r->ort_consumed, "first_rejected", rejected, "gpu_side_bytes", (json_int_t)r->ort_gpu_side,
        "before_layers_bytes", (json_int_t)r->ort_before_layers, "name_based_layer_assignment", r->name_rule,
        "name_rule_exact", r->name_rule_exact, "resource_cuda_partitioning_settings", r->resource_settings);
}

static json_t *rules_json(const struct partition_work *w)
{
    json_t *rules = json_array(), *conflicts = json_array();
    for (size_t i = 0; rules && i < w->rules.n; i++) {
        const struct ws_part_rule_cover *c = &w->cov.rules[i];
        json_array_append_new(
            rules, json_pack("{s:o, s:o, s:I, s:I, s:I, s:s}", "device", ws_json_text(w->rules.v[i].device), "pattern",
                             ws_json_text(w->rules.v[i].pattern), "nodes_matched", (json_int_t)c->matched,
                             "nodes_assigned", (json_int_t)c->assigned, "layers_matched", (json_int_t)c->layers,
                             "verdict", ws_part_rule_verdict_name(c->verdict)));
    }
    for (size_t i = 0; conflicts && i < w->cov.nconflicts; i++) {
        const struct ws_part_conflict *c = &w->cov.conflicts[i];
        json_array_append_new(conflicts,
                              json_pack("{s:o, s:I, s:I}", "node", ws_json_text(w->model.nodes[c->node].name),
                                        "applied", (json_int_t)c->rule, "other", (json_int_t)c->other));
    }
    return json_pack("{s:o, s:o, s:o, s:o*}", "patterns", rules, "unmatched_nodes",
                     names_json(&w->model, w->cov.unmatched, w->cov.nunmatched), "conflicts", conflicts, "ignored_text",
                     w->rules.ignored ? ws_json_text(w->rules.ignored) : NULL);
}

static int print_json(const struct partition_options *o, const struct partition_work *w)
{
    json_t *runs = json_array();
    for (size_t i = 0; runs && i < w->nruns; i++)
        json_array_append_new(runs, run_json(&w->model, &w->runs[i]));
    json_t *root = json_pack(
        "{s:o, s:o, s:I, s:I, s:o, s:o*, s:o, s:I, s:o, s:I}", "trace", ws_json_text(o->trace), "layer_pattern",
        ws_json_text(w->model.pattern), "layers", (json_int_t)w->model.nlayers, "nodes", (json_int_t)w->model.ntrace,
        "partitions", runs, "rules", w->have_rules ? rules_json(w) : NULL, "never_ran",
        names_json(&w->model, w->never_ran, w->nnever_ran), "unlisted_nodes", (json_int_t)w->unlisted, "first_run_risk",
        names_json(&w->model, w->risk, w->nrisk), "warnings", (json_int_t)warnings(w, 0));
    return ws_json_print(root, stdout);
}

/* ---- the command ---- */

int cmd_partition(int argc, char **argv)
{
    struct partition_options o = {0};
    struct partition_work w = {0};
    struct ws_outfile svg = {0};
    char err[1024] = "";
    const char *trace_named = NULL;
    int rc = parse_partition(argc, argv, &o);
    if (rc >= 0)
        return rc;
    const char *inputs[] = {o.trace, o.estimates, o.nodes};
    rc = WS_EXIT_USAGE;
    if (o.svg && ws_check_not_input("partition", o.svg, inputs, 3) != 0)
        return WS_EXIT_USAGE;
    if (read_inputs(&o, &w, err, sizeof err) != 0 || ws_analysis_open(o.trace, 1, &w.db, &w.an, err, sizeof err) != 0)
        goto fail;
    if (ws_part_model_build(w.db, &w.an, o.estimates ? &w.est : NULL, o.nodes ? &w.list : NULL, o.pattern, &w.model,
                            err, sizeof err) != 0 ||
        select_views(&o, &w, err, sizeof err) != 0 || compute(&o, &w, err, sizeof err) != 0) {
        if (strncmp(err, o.trace, strlen(o.trace)) != 0) /* name the trace */
            trace_named = o.trace;
        goto fail;
    }
    if ((o.svg && ws_outfile_open(&svg, o.svg, err, sizeof err) != 0) ||
        ws_part_results_write(w.db, &w.model, w.runs, w.nruns, w.have_rules ? &w.rules : NULL,
                              w.have_rules ? &w.cov : NULL, err, sizeof err) != 0)
        goto fail;
    if (o.svg) {
        int ok = ws_part_svg_write(svg.fp, &w.model, w.runs, w.nruns, err, sizeof err) == 0;
        if (ws_outfile_close(&svg, ok, err, sizeof err) != 0 || !ok)
            goto fail;
    }
    if ((o.json ? print_json(&o, &w) : print_text(&o, &w)) != 0) {
        snprintf(err, sizeof err, "cannot print the partition");
        goto fail;
    }
    /* the report is out; the warnings follow on stderr, one line each, unless the report showed
     * them on that very stream */
    fflush(stdout);
    rc = warnings(&w, warnings_on_stderr(&o) ? WARN_STDERR : 0) > 0 && o.strict ? WS_EXIT_FINDINGS : WS_EXIT_OK;
    work_free(&w);
    return rc;
fail:
    if (svg.fp) {
        char ignored[256];
        ws_outfile_close(&svg, 0, ignored, sizeof ignored);
    }
    if (trace_named)
        ws_error("partition: %s: %s", trace_named, err);
    else
        ws_error("partition: %s", err);
    work_free(&w);
    return WS_EXIT_USAGE;
}
