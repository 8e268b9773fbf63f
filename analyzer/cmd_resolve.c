/* wstrace resolve TRACE: the budget of every node in the planner's ledger (workspace,
 * max(profile, estimator)) and in ONNX Runtime's (IResourceAccountant's cost); the rows replace
 * table `resolutions`. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "commands.h"
#include "estimates.h"
#include "output.h"
#include "progress.h"
#include "resolve.h"

struct resolve_options {
    const char *trace, *estimates;
    double multiplier;
    enum ws_ort_mode mode;
    int json;
};

static void resolve_usage(FILE *out)
{
    fprintf(out, "usage: wstrace resolve TRACE [--estimates FILE] [--ort-mode stats|ad-hoc]\n"
                 "                             [--fallback-multiplier X] [--json]\n\n"
                 "Resolve the budget of every node in two ledgers that are never added together:\n"
                 "  planner's  the workspace to reserve: max(profile, Level-1 estimate), the profile\n"
                 "             being the peak of concurrently live workspace in one occurrence (0 for a\n"
                 "             node that ran without any); 'unknown' for a node with neither;\n"
                 "  ORT's      what ONNX Runtime's resource accountant charges for the node: with its\n"
                 "             stats file (the trace) inputs + dynamic outputs + max(temporary\n"
                 "             allocations summed, estimate), 0 for a node missing from it; ad hoc\n"
                 "             (no stats file) initializer and output bytes plus the estimate, or times\n"
                 "             the fallback multiplier, truncated.\n"
                 "Stores the rows in table 'resolutions' (re-running replaces them).\n\n"
                 "  --estimates FILE         Level-1 estimates and node facts, JSON or CSV\n"
                 "                           (see docs/analysis.md)\n"
                 "  --ort-mode MODE          stats (default) or ad-hoc\n"
                 "  --fallback-multiplier X  ORT's ad-hoc safety multiplier, at least 1 (1.5)\n"
                 "  --json                   print JSON instead of text\n"
                 "  --quiet                  no progress line on a terminal\n"
                 "  --help                   show this help\n");
}

static int parse_mode(const char *text, enum ws_ort_mode *mode)
{
    if (strcmp(text, "stats") == 0)
        *mode = WS_ORT_STATS;
    else if (strcmp(text, "ad-hoc") == 0)
        *mode = WS_ORT_AD_HOC;
    else
        return -1;
    return 0;
}

static int parse_resolve(int argc, char **argv, struct resolve_options *o)
{
    static const struct option longopts[] = {{"json", no_argument, NULL, 'j'},
                                             {"estimates", required_argument, NULL, 'e'},
                                             {"fallback-multiplier", required_argument, NULL, 'm'},
                                             {"ort-mode", required_argument, NULL, 'o'},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {0}};
    int c;
    char *end;
    o->multiplier = 1.5;
    o->mode = WS_ORT_STATS;
    optind = 0; /* commands may run several times in one process (tests) */
    ws_progress_set_quiet(0);
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': o->json = 1; break;
        case 'e': o->estimates = optarg; break;
        case 'm':
            o->multiplier = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !isfinite(o->multiplier) || o->multiplier < 1) {
                ws_error("resolve: --fallback-multiplier needs a number of at least 1, not '%s'", optarg);
                return WS_EXIT_USAGE;
            }
            break;
        case 'o':
            if (parse_mode(optarg, &o->mode) != 0) {
                ws_error("resolve: --ort-mode is 'stats' or 'ad-hoc', not '%s'", optarg);
                return WS_EXIT_USAGE;
            }
            break;
        case 'q': ws_progress_set_quiet(1); break;
        case 'h': resolve_usage(stdout); return -1;
        default: return ws_bad_option("resolve", c, argv);
        }
    }
    if (optind + 1 != argc) {
        ws_error("resolve: expected one TRACE argument; see 'wstrace resolve --help'");
        return WS_EXIT_USAGE;
    }
    o->trace = argv[optind];
    return WS_EXIT_OK;
}

static void bind_bytes(sqlite3_stmt *st, int col, int64_t bytes)
{
    if (bytes < 0)
        sqlite3_bind_null(st, col);
    else
        sqlite3_bind_int64(st, col, bytes);
}

static void bind_resolution(sqlite3_stmt *st, const struct ws_analysis *an, const struct ws_resolution *r)
{
    const struct ws_ort_facts *f = &r->ort.facts;
    sqlite3_bind_int64(st, 1, an->nodes[r->node].name_id);
    sqlite3_bind_int(st, 2, f->executed);
    bind_bytes(st, 3, r->planner.estimate_bytes);
    bind_bytes(st, 4, r->planner.profile_bytes);
    bind_bytes(st, 5, r->planner.bytes);
    sqlite3_bind_text(st, 6, ws_source_name(r->planner.source), -1, SQLITE_STATIC);
    bind_bytes(st, 8, f->input_bytes);
    bind_bytes(st, 9, f->initializer_bytes);
    bind_bytes(st, 10, f->output_bytes);
    bind_bytes(st, 11, f->dynamic_bytes);
    bind_bytes(st, 12, f->temp_bytes);
    sqlite3_bind_int64(st, 13, r->ort.workspace_bytes);
    sqlite3_bind_int64(st, 14, r->ort.cost_bytes);
    sqlite3_bind_text(st, 15, ws_ort_source_name(r->ort.source), -1, SQLITE_STATIC);
}

static int write_resolutions(sqlite3 *db, const struct resolve_options *o, const struct ws_analysis *an,
                             const struct ws_resolution *res, size_t n, char *err, size_t errlen)
{
    static const char sql[] = "INSERT INTO resolutions (node_name_id, executed, estimate_bytes, planner_profile_bytes,"
                              " planner_bytes, planner_source, ort_mode, ort_input_bytes, ort_initializer_bytes,"
                              " ort_output_bytes, ort_dynamic_bytes, ort_temp_bytes, ort_workspace_bytes,"
                              " ort_cost_bytes, ort_source)"
                              " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)";
    sqlite3_stmt *st = NULL;
    int ok = 0;
    if (ws_results_begin(db, "resolutions", err, errlen) != 0)
        return -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto done;
    sqlite3_bind_text(st, 7, ws_ort_mode_name(o->mode), -1, SQLITE_STATIC);
    for (size_t i = 0; i < n; i++) {
        bind_resolution(st, an, &res[i]);
        if (sqlite3_step(st) != SQLITE_DONE || sqlite3_reset(st) != SQLITE_OK)
            goto done;
    }
    ok = 1;
done:
    if (!ok)
        snprintf(err, errlen, "writing resolutions: %s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return ws_results_end(db, ok, err, errlen);
}

/* "max" also says which side won, so a reader sees where the budget came from. */
static const char *planner_text(const struct ws_planner_cost *p)
{
    if (p->source != WS_SOURCE_MAX)
        return ws_source_name(p->source);
    if (p->profile_bytes > p->estimate_bytes)
        return "max (profile larger)";
    if (p->estimate_bytes > p->profile_bytes)
        return "max (estimator larger)";
    return "max (equal)";
}

static void print_coverage(const int64_t *by_source, int count, const char *(*name)(int), size_t n)
{
    char share[32];
    printf("  coverage:");
    for (int s = 0; s < count; s++)
        printf("%s %s %lld (%s)", s ? "," : "", name(s), (long long)by_source[s],
               ws_format_share(by_source[s], (int64_t)n, share, sizeof share));
    printf("\n");
}

static const char *planner_name(int s) { return ws_source_name((enum ws_source)s); }
static const char *ort_name(int s) { return ws_ort_source_name((enum ws_ort_source)s); }

static void print_totals(const struct resolve_options *o, const struct ws_resolution *res, size_t n)
{
    struct ws_resolve_totals t;
    char b[2][32];
    ws_resolve_totals(res, n, &t);
    printf("\n%zu nodes; rows written to table 'resolutions' of %s\n", n, o->trace);
    printf("planner's ledger (workspace to reserve): %s over %lld nodes, %lld unknown\n",
           ws_format_bytes(t.planner_bytes, b[0], sizeof b[0]), (long long)(n - (size_t)t.planner_unknown),
           (long long)t.planner_unknown);
    print_coverage(t.planner_by_source, WS_SOURCE_COUNT, planner_name, n);
    printf("ORT's ledger (IResourceAccountant cost, %s): %s\n",
           o->mode == WS_ORT_STATS ? "stats from this trace" : "ad hoc, no stats file",
           ws_format_bytes(t.ort_bytes, b[1], sizeof b[1]));
    print_coverage(t.ort_by_source, WS_ORT_SOURCE_COUNT, ort_name, n);
    if (o->mode == WS_ORT_STATS && t.inputs_unknown > 0)
        printf("  input bytes not given for %lld executed nodes (input_bytes in --estimates): counted as 0\n",
               (long long)t.inputs_unknown);
    if (o->mode == WS_ORT_AD_HOC && o->multiplier != 1.5)
        printf("  fallback multiplier %g\n", o->multiplier);
}

static int print_text(const struct resolve_options *o, const struct ws_analysis *an, const struct ws_resolution *res,
                      size_t n)
{
    static const char *const headers[] = {"NODE",           "PROFILE",  "ESTIMATE", "PLANNER WS",
                                          "PLANNER SOURCE", "ORT TEMP", "ORT COST", "ORT SOURCE"};
    struct ws_table t;
    char b[5][32];
    int rc = 0;
    ws_table_init(&t, 8, headers, "lrrrlrrl");
    for (size_t i = 0; i < n && rc == 0; i++) {
        const struct ws_resolution *r = &res[i];
        const char *row[] = {an->nodes[r->node].name,
                             ws_format_bytes(r->planner.profile_bytes, b[0], sizeof b[0]),
                             ws_format_bytes(r->planner.estimate_bytes, b[1], sizeof b[1]),
                             ws_format_bytes(r->planner.bytes, b[2], sizeof b[2]),
                             planner_text(&r->planner),
                             ws_format_bytes(r->ort.facts.temp_bytes, b[3], sizeof b[3]),
                             ws_format_bytes(r->ort.cost_bytes, b[4], sizeof b[4]),
                             ws_ort_source_name(r->ort.source)};
        rc = ws_table_add(&t, row);
    }
    if (rc == 0)
        ws_table_print(&t, stdout);
    ws_table_free(&t);
    print_totals(o, res, n);
    return rc;
}

static json_t *coverage_json(const int64_t *by_source, int count, const char *(*name)(int), size_t n)
{
    json_t *coverage = json_object();
    for (int s = 0; coverage && s < count; s++)
        if (json_object_set_new(coverage, name(s),
                                json_pack("{s:I, s:f}", "nodes", (json_int_t)by_source[s], "share",
                                          n ? (double)by_source[s] / (double)n : 0.0)) != 0) {
            json_decref(coverage);
            coverage = NULL;
        }
    return coverage;
}

static json_t *node_json(const struct ws_analysis *an, const struct ws_resolution *r)
{
    const struct ws_ort_facts *f = &r->ort.facts;
    return json_pack("{s:o, s:b, s:o, s:{s:o, s:o, s:s}, s:{s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:s}}", "node",
                     ws_json_text(an->nodes[r->node].name), "executed", f->executed, "estimate_bytes",
                     ws_json_bytes(r->planner.estimate_bytes), "planner", "profile_bytes",
                     ws_json_bytes(r->planner.profile_bytes), "bytes", ws_json_bytes(r->planner.bytes), "source",
                     ws_source_name(r->planner.source), "ort", "input_bytes", ws_json_bytes(f->input_bytes),
                     "initializer_bytes", ws_json_bytes(f->initializer_bytes), "output_bytes",
                     ws_json_bytes(f->output_bytes), "dynamic_bytes", ws_json_bytes(f->dynamic_bytes), "temp_bytes",
                     ws_json_bytes(f->temp_bytes), "workspace_bytes", (json_int_t)r->ort.workspace_bytes, "cost_bytes",
                     (json_int_t)r->ort.cost_bytes, "source", ws_ort_source_name(r->ort.source));
}

static int print_json(const struct resolve_options *o, const struct ws_analysis *an, const struct ws_resolution *res,
                      size_t n)
{
    struct ws_resolve_totals t;
    json_t *nodes = json_array();
    ws_resolve_totals(res, n, &t);
    for (size_t i = 0; nodes && i < n; i++)
        if (json_array_append_new(nodes, node_json(an, &res[i])) != 0) {
            json_decref(nodes);
            nodes = NULL;
        }
    json_t *root = json_pack("{s:o, s:I, s:{s:I, s:I, s:o}, s:{s:s, s:f, s:I, s:o}, s:o}", "trace",
                             ws_json_text(o->trace), "node_count", (json_int_t)n, "planner", "total_bytes",
                             (json_int_t)t.planner_bytes, "unknown_nodes", (json_int_t)t.planner_unknown, "coverage",
                             coverage_json(t.planner_by_source, WS_SOURCE_COUNT, planner_name, n), "ort", "mode",
                             ws_ort_mode_name(o->mode), "fallback_multiplier", o->multiplier, "total_cost_bytes",
                             (json_int_t)t.ort_bytes, "coverage",
                             coverage_json(t.ort_by_source, WS_ORT_SOURCE_COUNT, ort_name, n), "nodes", nodes);
    return ws_json_print(root, stdout);
}

int cmd_resolve(int argc, char **argv)
{
    struct resolve_options o = {0};
    struct ws_estimates est = {0};
    struct ws_analysis an = {0};
    struct ws_resolution *res = NULL;
    size_t n = 0;
    sqlite3 *db = NULL;
    char err[1024];
    int rc = parse_resolve(argc, argv, &o);
    if (rc != WS_EXIT_OK)
        return rc < 0 ? WS_EXIT_OK : rc;
    rc = WS_EXIT_USAGE;
    if (ws_analysis_start(o.trace, o.estimates, &db, &an, &est) != 0)
        goto out;
    if (ws_resolve(&an, o.estimates ? &est : NULL, o.mode, o.multiplier, &res, &n, err, sizeof err) != 0 ||
        write_resolutions(db, &o, &an, res, n, err, sizeof err) != 0) {
        ws_error("%s: %s", o.trace, err);
        goto out;
    }
    if ((o.json ? print_json(&o, &an, res, n) : print_text(&o, &an, res, n)) != 0) {
        ws_error("resolve: cannot print the resolutions");
        goto out;
    }
    rc = WS_EXIT_OK;
out:
    free(res);
    ws_estimates_free(&est);
    ws_analysis_free(&an);
    sqlite3_close(db);
    return rc;
}
