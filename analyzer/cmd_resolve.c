/* wstrace resolve TRACE: the workspace budget of every node, max(profile, estimator) or a
 * fallback; the rows replace table `resolutions`. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "commands.h"
#include "progress.h"
#include "output.h"
#include "sizes.h"

struct resolve_options {
    const char *trace, *estimates;
    double multiplier;
    int json;
};

static void resolve_usage(FILE *out)
{
    fprintf(out, "usage: wstrace resolve TRACE [--estimates FILE] [--fallback-multiplier X] [--json]\n\n"
                 "Resolve the workspace of every node: the Level-1 estimate when only it is known, the\n"
                 "profile (peak workspace observed in one occurrence) when only it is known, the larger of\n"
                 "both when both are, and otherwise the node's output bytes times the fallback multiplier.\n"
                 "Stores the rows in table 'resolutions' (re-running replaces them).\n\n"
                 "  --estimates FILE         Level-1 estimates as JSON or CSV (see docs/analysis.md)\n"
                 "  --fallback-multiplier X  multiplier of output bytes for nodes without either (1.5)\n"
                 "  --json                   print JSON instead of text\n"
                 "  --quiet                  no progress line on a terminal\n"
                 "  --help                   show this help\n");
}

static int parse_resolve(int argc, char **argv, struct resolve_options *o)
{
    static const struct option longopts[] = {{"json", no_argument, NULL, 'j'},
                                             {"estimates", required_argument, NULL, 'e'},
                                             {"fallback-multiplier", required_argument, NULL, 'm'},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {0}};
    int c;
    char *end;
    o->multiplier = 1.5;
    optind = 0; /* commands may run several times in one process (tests) */
    ws_progress_set_quiet(0);
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': o->json = 1; break;
        case 'e': o->estimates = optarg; break;
        case 'm':
            o->multiplier = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !isfinite(o->multiplier) || o->multiplier <= 0) {
                ws_error("resolve: --fallback-multiplier needs a positive number, not '%s'", optarg);
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

static int write_resolutions(sqlite3 *db, const struct ws_analysis *an, const struct ws_resolution *res, size_t n,
                             char *err, size_t errlen)
{
    static const char sql[] = "INSERT INTO resolutions (node_name_id, profile_bytes, estimate_bytes, output_bytes,"
                              " resolved_bytes, source) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
    sqlite3_stmt *st = NULL;
    int ok = 0;
    if (ws_results_begin(db, "resolutions", err, errlen) != 0)
        return -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto done;
    for (size_t i = 0; i < n; i++) {
        sqlite3_bind_int64(st, 1, an->nodes[res[i].node].name_id);
        if (res[i].profile_bytes < 0)
            sqlite3_bind_null(st, 2);
        else
            sqlite3_bind_int64(st, 2, res[i].profile_bytes);
        if (res[i].estimate_bytes < 0)
            sqlite3_bind_null(st, 3);
        else
            sqlite3_bind_int64(st, 3, res[i].estimate_bytes);
        sqlite3_bind_int64(st, 4, res[i].output_bytes);
        sqlite3_bind_int64(st, 5, res[i].resolved_bytes);
        sqlite3_bind_text(st, 6, ws_source_name(res[i].source), -1, SQLITE_STATIC);
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
static const char *source_text(const struct ws_resolution *r)
{
    if (r->source != WS_SOURCE_MAX)
        return ws_source_name(r->source);
    if (r->profile_bytes > r->estimate_bytes)
        return "max (profile larger)";
    if (r->estimate_bytes > r->profile_bytes)
        return "max (estimator larger)";
    return "max (equal)";
}

static void count_sources(const struct ws_resolution *res, size_t n, int64_t *by_source)
{
    memset(by_source, 0, WS_SOURCE_COUNT * sizeof *by_source);
    for (size_t i = 0; i < n; i++)
        by_source[res[i].source]++;
}

static int print_text(const struct resolve_options *o, const struct ws_analysis *an, const struct ws_resolution *res,
                      size_t n)
{
    static const char *const headers[] = {"NODE", "PROFILE", "ESTIMATE", "OUTPUT", "RESOLVED", "SOURCE"};
    struct ws_table t;
    char b[4][32], share[32];
    int64_t by_source[WS_SOURCE_COUNT], total = 0;
    int rc = 0;
    ws_table_init(&t, 6, headers, "lrrrrl");
    for (size_t i = 0; i < n && rc == 0; i++) {
        const struct ws_resolution *r = &res[i];
        const char *row[] = {an->nodes[r->node].name,
                             ws_format_bytes(r->profile_bytes, b[0], sizeof b[0]),
                             ws_format_bytes(r->estimate_bytes, b[1], sizeof b[1]),
                             ws_format_bytes(r->output_bytes, b[2], sizeof b[2]),
                             ws_format_bytes(r->resolved_bytes, b[3], sizeof b[3]),
                             source_text(r)};
        rc = ws_table_add(&t, row);
        total = ws_sat_add(total, r->resolved_bytes);
    }
    if (rc == 0)
        ws_table_print(&t, stdout);
    ws_table_free(&t);
    count_sources(res, n, by_source);
    printf("\n%zu nodes, %s resolved in total; rows written to table 'resolutions' of %s\ncoverage:", n,
           ws_format_bytes(total, b[0], sizeof b[0]), o->trace);
    for (int s = 0; s < WS_SOURCE_COUNT; s++)
        printf("%s %s %lld (%s)", s ? "," : "", ws_source_name(s), (long long)by_source[s],
               ws_format_share(by_source[s], (int64_t)n, share, sizeof share));
    printf("\n");
    if (o->multiplier != 1.5 && by_source[WS_SOURCE_FALLBACK] > 0)
        printf("fallback multiplier %g\n", o->multiplier);
    return rc;
}

static int print_json(const struct resolve_options *o, const struct ws_analysis *an, const struct ws_resolution *res,
                      size_t n)
{
    int64_t by_source[WS_SOURCE_COUNT];
    json_t *nodes = json_array(), *coverage = json_object();
    for (size_t i = 0; nodes && i < n; i++) {
        const struct ws_resolution *r = &res[i];
        if (json_array_append_new(
                nodes,
                json_pack("{s:o, s:o, s:o, s:I, s:I, s:s}", "node", ws_json_text(an->nodes[r->node].name),
                          "profile_bytes", ws_json_bytes(r->profile_bytes), "estimate_bytes",
                          ws_json_bytes(r->estimate_bytes), "output_bytes", (json_int_t)r->output_bytes,
                          "resolved_bytes", (json_int_t)r->resolved_bytes, "source", ws_source_name(r->source))) != 0) {
            json_decref(nodes);
            nodes = NULL;
        }
    }
    count_sources(res, n, by_source);
    for (int s = 0; coverage && s < WS_SOURCE_COUNT; s++)
        if (json_object_set_new(coverage, ws_source_name(s),
                                json_pack("{s:I, s:f}", "nodes", (json_int_t)by_source[s], "share",
                                          n ? (double)by_source[s] / (double)n : 0.0)) != 0) {
            json_decref(coverage);
            coverage = NULL;
        }
    json_t *root = json_pack("{s:o, s:f, s:I, s:o, s:o}", "trace", ws_json_text(o->trace), "fallback_multiplier",
                             o->multiplier, "node_count", (json_int_t)n, "coverage", coverage, "nodes", nodes);
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
    if (ws_resolve(&an, o.estimates ? &est : NULL, o.multiplier, &res, &n, err, sizeof err) != 0 ||
        write_resolutions(db, &an, res, n, err, sizeof err) != 0) {
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
