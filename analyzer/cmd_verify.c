/* wstrace verify TRACE: check Level-2 declarations against the Level-1 reservation and against
 * the workspace actually used; the rows replace table `verifications`. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "commands.h"
#include "estimates.h"
#include "output.h"
#include "progress.h"
#include "verify.h"

struct verify_options {
    const char *trace, *estimates;
    int json, strict;
};

static void verify_usage(FILE *out)
{
    fprintf(out, "usage: wstrace verify TRACE [--strict] [--estimates FILE] [--json]\n\n"
                 "For every node, shape key, device and workspace slot, compare the Level-1 estimate\n"
                 "(reservation), the Level-2 declaration (with its tactic and regions) and the\n"
                 "observed workspace, and give a verdict: ok, over-reservation (Level 2 > Level 1),\n"
                 "under-declared (use > Level 2, or larger than its region), tactic-overdeclared (a\n"
                 "cached workspace-free tactic declares bytes), miss-underdeclared (a tactic-cache\n"
                 "miss declares less than Level 1), idle-reservation (declared, never used),\n"
                 "undeclared (used, never declared), exceeds-reservation (use > a Level-1-only\n"
                 "reservation) or unavailable (a figure needed for the check is missing).  The\n"
                 "rules are in docs/analysis.md.  Stores the rows in table 'verifications'\n"
                 "(re-running replaces them).\n\n"
                 "  --strict          exit with status 1 when any verdict is not ok\n"
                 "  --estimates FILE  more Level-1 estimates, JSON or CSV (see docs/analysis.md)\n"
                 "  --json            print JSON instead of text\n"
                 "  --quiet           no progress line on a terminal\n"
                 "  --help            show this help\n");
}

static int parse_verify(int argc, char **argv, struct verify_options *o)
{
    static const struct option longopts[] = {{"json", no_argument, NULL, 'j'},
                                             {"strict", no_argument, NULL, 's'},
                                             {"estimates", required_argument, NULL, 'e'},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {0}};
    int c;
    optind = 0; /* commands may run several times in one process (tests) */
    ws_progress_set_quiet(0);
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': o->json = 1; break;
        case 's': o->strict = 1; break;
        case 'e': o->estimates = optarg; break;
        case 'q': ws_progress_set_quiet(1); break;
        case 'h': verify_usage(stdout); return -1;
        default: return ws_bad_option("verify", c, argv);
        }
    }
    if (optind + 1 != argc) {
        ws_error("verify: expected one TRACE argument; see 'wstrace verify --help'");
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

static void bind_text_or_null(sqlite3_stmt *st, int col, const char *text)
{
    if (text)
        sqlite3_bind_text(st, col, text, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, col);
}

static void bind_verification(sqlite3_stmt *st, const struct ws_analysis *an, const struct ws_verification *v)
{
    sqlite3_bind_int64(st, 1, an->nodes[v->node].name_id);
    bind_bytes(st, 2, v->shape_key_id);
    bind_bytes(st, 3, v->device);
    sqlite3_bind_int64(st, 4, v->slot);
    bind_bytes(st, 5, v->level1_bytes);
    bind_bytes(st, 6, v->level2_bytes);
    bind_bytes(st, 7, v->observed_bytes);
    sqlite3_bind_int(st, 8, v->region_overflow);
    bind_text_or_null(st, 9, ws_tactic_name((enum ws_tactic)v->tactic));
    bind_text_or_null(st, 10, v->tactic_name);
    sqlite3_bind_text(st, 11, ws_verdict_name(v->verdict), -1, SQLITE_STATIC);
}

static int write_verifications(sqlite3 *db, const struct ws_analysis *an, const struct ws_verification *v, size_t n,
                               char *err, size_t errlen)
{
    static const char sql[] = "INSERT INTO verifications (node_name_id, shape_key_id, device, slot, level1_bytes,"
                              " level2_bytes, observed_bytes, region_overflow, tactic_kind, tactic, verdict)"
                              " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";
    sqlite3_stmt *st = NULL;
    int ok = 0;
    if (ws_results_begin(db, "verifications", err, errlen) != 0)
        return -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto done;
    for (size_t i = 0; i < n; i++) {
        bind_verification(st, an, &v[i]);
        if (sqlite3_step(st) != SQLITE_DONE || sqlite3_reset(st) != SQLITE_OK)
            goto done;
    }
    ok = 1;
done:
    if (!ok)
        snprintf(err, errlen, "writing verifications: %s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return ws_results_end(db, ok, err, errlen);
}

static void count_verdicts(const struct ws_verification *v, size_t n, int64_t *by_verdict)
{
    memset(by_verdict, 0, WS_VERDICT_COUNT * sizeof *by_verdict);
    for (size_t i = 0; i < n; i++)
        by_verdict[v[i].verdict]++;
}

static const char *key_text(const struct ws_analysis *an, int64_t key)
{
    const char *text = ws_analysis_key_text(an, key);
    return text ? text : "-";
}

/* The tactic as "kind (name)", either alone, or "-". */
static const char *tactic_text(const struct ws_verification *v, char *buf, size_t len)
{
    const char *kind = ws_tactic_name((enum ws_tactic)v->tactic);
    if (kind && v->tactic_name)
        snprintf(buf, len, "%s (%s)", kind, v->tactic_name);
    else
        snprintf(buf, len, "%s", kind ? kind : v->tactic_name ? v->tactic_name : "-");
    return buf;
}

/* The observed footprint, marked when an allocation overflowed its region. */
static const char *observed_text(const struct ws_verification *v, char *buf, size_t len)
{
    char bytes[32];
    ws_format_bytes(v->observed_bytes, bytes, sizeof bytes);
    snprintf(buf, len, "%s%s", bytes, v->region_overflow ? " (overflow)" : "");
    return buf;
}

static int print_text(const struct verify_options *o, const struct ws_analysis *an, const struct ws_verification *v,
                      size_t n)
{
    static const char *const headers[] = {"NODE",    "SHAPE KEY", "DEVICE",   "SLOT",   "LEVEL 1",
                                          "LEVEL 2", "TACTIC",    "OBSERVED", "VERDICT"};
    struct ws_table t;
    char slot[24], dev[16], b[2][32], obs[48], tactic[96];
    int64_t by_verdict[WS_VERDICT_COUNT];
    int rc = 0;
    ws_table_init(&t, 9, headers, "llrrrrlrl");
    for (size_t i = 0; i < n && rc == 0; i++) {
        snprintf(slot, sizeof slot, "%lld", (long long)v[i].slot);
        if (v[i].device < 0)
            snprintf(dev, sizeof dev, "-");
        else
            snprintf(dev, sizeof dev, "%d", v[i].device);
        const char *row[] = {an->nodes[v[i].node].name,
                             key_text(an, v[i].shape_key_id),
                             dev,
                             slot,
                             ws_format_bytes(v[i].level1_bytes, b[0], sizeof b[0]),
                             ws_format_bytes(v[i].level2_bytes, b[1], sizeof b[1]),
                             tactic_text(&v[i], tactic, sizeof tactic),
                             observed_text(&v[i], obs, sizeof obs),
                             ws_verdict_name(v[i].verdict)};
        rc = ws_table_add(&t, row);
    }
    if (rc == 0)
        ws_table_print(&t, stdout);
    ws_table_free(&t);
    count_verdicts(v, n, by_verdict);
    printf("\n%zu slots; rows written to table 'verifications' of %s\nverdicts:", n, o->trace);
    for (int k = 0; k < WS_VERDICT_COUNT; k++)
        printf("%s %s %lld", k ? "," : "", ws_verdict_name(k), (long long)by_verdict[k]);
    printf("\n");
    return rc;
}

static json_t *text_or_null(const char *text) { return ws_json_text(text); }

static json_t *slot_json(const struct ws_analysis *an, const struct ws_verification *v)
{
    return json_pack("{s:o, s:o, s:o, s:I, s:o, s:o, s:o, s:b, s:o, s:o, s:s}", "node",
                     ws_json_text(an->nodes[v->node].name), "shape_key",
                     text_or_null(ws_analysis_key_text(an, v->shape_key_id)), "device",
                     v->device < 0 ? json_null() : json_integer(v->device), "slot", (json_int_t)v->slot, "level1_bytes",
                     ws_json_bytes(v->level1_bytes), "level2_bytes", ws_json_bytes(v->level2_bytes), "observed_bytes",
                     ws_json_bytes(v->observed_bytes), "region_overflow", v->region_overflow, "tactic_kind",
                     text_or_null(ws_tactic_name((enum ws_tactic)v->tactic)), "tactic", text_or_null(v->tactic_name),
                     "verdict", ws_verdict_name(v->verdict));
}

static int print_json(const struct verify_options *o, const struct ws_analysis *an, const struct ws_verification *v,
                      size_t n)
{
    int64_t by_verdict[WS_VERDICT_COUNT];
    json_t *slots = json_array(), *counts = json_object();
    for (size_t i = 0; slots && i < n; i++)
        if (json_array_append_new(slots, slot_json(an, &v[i])) != 0) {
            json_decref(slots);
            slots = NULL;
        }
    count_verdicts(v, n, by_verdict);
    for (int k = 0; counts && k < WS_VERDICT_COUNT; k++)
        if (json_object_set_new(counts, ws_verdict_name(k), json_integer(by_verdict[k])) != 0) {
            json_decref(counts);
            counts = NULL;
        }
    json_t *root = json_pack("{s:o, s:b, s:I, s:o, s:o}", "trace", ws_json_text(o->trace), "strict", o->strict,
                             "slot_count", (json_int_t)n, "verdicts", counts, "slots", slots);
    return ws_json_print(root, stdout);
}

int cmd_verify(int argc, char **argv)
{
    struct verify_options o = {0};
    struct ws_estimates est = {0};
    struct ws_analysis an = {0};
    struct ws_verification *v = NULL;
    size_t n = 0;
    sqlite3 *db = NULL;
    char err[1024];
    int rc = parse_verify(argc, argv, &o);
    if (rc != WS_EXIT_OK)
        return rc < 0 ? WS_EXIT_OK : rc;
    rc = WS_EXIT_USAGE;
    if (ws_analysis_start(o.trace, o.estimates, &db, &an, &est) != 0)
        goto out;
    if (ws_verify(&an, o.estimates ? &est : NULL, &v, &n, err, sizeof err) != 0 ||
        write_verifications(db, &an, v, n, err, sizeof err) != 0) {
        ws_error("%s: %s", o.trace, err);
        goto out;
    }
    if ((o.json ? print_json(&o, &an, v, n) : print_text(&o, &an, v, n)) != 0) {
        ws_error("verify: cannot print the verifications");
        goto out;
    }
    rc = WS_EXIT_OK;
    for (size_t i = 0; o.strict && i < n; i++)
        if (v[i].verdict != WS_VERDICT_OK)
            rc = WS_EXIT_FINDINGS;
out:
    free(v);
    ws_estimates_free(&est);
    ws_analysis_free(&an);
    sqlite3_close(db);
    return rc;
}
