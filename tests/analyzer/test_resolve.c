/* Resolution in both ledgers: the planner's (workspace to reserve) and ONNX Runtime's (the
 * accountant's cost), coverage, modes, the fallback multiplier and estimates files.  Expected
 * figures are derived by hand in the comments. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "commands.h"
#include "estimates.h"
#include "resolve.h"
#include "trace_builder.h"

TestSuite(resolve, .fini = tb_cleanup);

/*
 * Two runs, [0, 1000] and [2000, 3000].
 *   est_only  ran once (range 1), no allocation; Level 1 slot 0 100 and 120 (largest 120) + slot 1
 *             50 = 170.  Planner: profile 0, estimate 170 -> max 170.  ORT stats: temp 0,
 *             max(0, 170) = 170, profile+estimator.
 *   prof_only 64 and 32 B of workspace live together (peak 96, requested 96); a second occurrence
 *             uses 90.  Planner: profile 96.  ORT: temp max(96, 90) = 96, profile.
 *   both      300 B of workspace, Level 1 200.  Planner: max(300, 200) = 300.  ORT: max(300, 200).
 *   ran_bare  produces activations of 1001 B (run 1) and 500 B (run 2), freed by sink.  Planner:
 *             profile 0.  ORT: dynamic outputs max(1001, 500) = 1001, cost 1001, profile.
 *   sink      frees them, allocates nothing: 0 in both.
 *   ghost     Level 1 4096, never ran.  Planner: estimator 4096.  ORT: missing from the stats,
 *             costs 0, not-profiled.
 *   summed    workspace 100 B, freed, then 200 B: planner profile 200 (peak); ORT temp 300 (sum).
 * Planner total: 170 + 96 + 300 + 0 + 0 + 4096 + 200 = 4862.  ORT total: 170 + 96 + 300 + 1001 +
 * 0 + 0 + 300 = 1867.
 */
static void build_resolve(sqlite3 *db)
{
    static const char *const names[] = {"est_only", "prof_only", "both", "ran_bare", "sink", "ghost", "summed"};
    for (int i = 0; i < 7; i++)
        tb_string(db, i + 1, names[i]);
    tb_run(db, 1, NONE, 0, 1000);
    tb_run(db, 2, NONE, 2000, 3000);
    tb_range(db, 1, 1, NONE, 0, 1, 10, 20);
    tb_range(db, 2, 2, NONE, 0, 1, 30, 60);
    tb_range(db, 3, 3, NONE, 0, 1, 70, 90);
    tb_range(db, 4, 4, NONE, 0, 1, 100, 120);
    tb_range(db, 5, 5, NONE, 0, 1, 130, 150);
    tb_range(db, 6, 2, NONE, 0, 2, 2010, 2050);
    tb_range(db, 7, 4, NONE, 0, 2, 2100, 2120);
    tb_range(db, 8, 5, NONE, 0, 2, 2130, 2150);
    tb_range(db, 9, 7, NONE, 0, 1, 160, 190);
    tb_alloc(db, 1, 64, 2, 1, 35, 50, 2);
    tb_alloc(db, 2, 32, 2, 1, 40, 45, 2);
    tb_alloc(db, 3, 300, 3, 1, 75, 80, 3);
    tb_alloc(db, 4, 1001, 4, 1, 105, 140, 5);
    tb_alloc(db, 5, 90, 6, 2, 2020, 2030, 6);
    tb_alloc(db, 6, 500, 7, 2, 2105, 2140, 8);
    tb_alloc(db, 7, 100, 9, 1, 161, 165, 9);
    tb_alloc(db, 8, 200, 9, 1, 170, 180, 9);
    tb_decl(db, 1, 1, 0, 100);
    tb_decl(db, 1, 1, 0, 120);
    tb_decl(db, 1, 1, 1, 50);
    tb_decl(db, 2, 1, 0, 120);
    tb_decl(db, 1, 3, 0, 200);
    tb_decl(db, 1, 6, 0, 4096);
}

static char trace[256], out[256], errp[256];

static void setup_trace(void)
{
    sqlite3 *db = tb_create(trace, sizeof trace);
    build_resolve(db);
    sqlite3_close(db);
    tb_temp_path("out", out, sizeof out);
    tb_temp_path("err", errp, sizeof errp);
}

static int64_t column(const char *node, const char *col)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT %s FROM resolutions JOIN strings ON strings.id = node_name_id WHERE value = '%s'",
             col, node);
    return tb_query(trace, sql);
}

static int text_is(const char *node, const char *col, const char *want)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT %s = '%s' FROM resolutions JOIN strings ON strings.id = node_name_id WHERE value = '%s'", col,
             want, node);
    return tb_query(trace, sql) == 1;
}

static void expect_node(const char *node, int64_t planner, const char *planner_source, int64_t ort,
                        const char *ort_source)
{
    cr_expect_eq(column(node, "planner_bytes"), planner, "%s: planner_bytes", node);
    cr_expect(text_is(node, "planner_source", planner_source), "%s: planner_source %s", node, planner_source);
    cr_expect_eq(column(node, "ort_cost_bytes"), ort, "%s: ort_cost_bytes", node);
    cr_expect(text_is(node, "ort_source", ort_source), "%s: ort_source %s", node, ort_source);
}

Test(resolve, both_ledgers_by_hand)
{
    setup_trace();
    cr_assert_eq(tb_run_cmd(cmd_resolve, out, errp, 2, "resolve", trace), WS_EXIT_OK);
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM resolutions"), 7, "ghost is a node: it was declared");
    expect_node("est_only", 170, "max", 170, "profile+estimator");
    expect_node("prof_only", 96, "profile", 96, "profile");
    expect_node("both", 300, "max", 300, "profile+estimator");
    expect_node("ran_bare", 0, "profile", 1001, "profile");
    expect_node("sink", 0, "profile", 0, "profile");
    expect_node("ghost", 4096, "estimator", 0, "not-profiled");
    expect_node("summed", 200, "profile", 300, "profile");
    cr_expect_eq(column("summed", "ort_temp_bytes"), 300, "temporary allocations are summed");
    cr_expect_eq(column("summed", "planner_profile_bytes"), 200, "the profile is a peak");
    cr_expect_eq(column("ran_bare", "ort_dynamic_bytes"), 1001);
    cr_expect_eq(column("ghost", "executed"), 0);
    cr_expect_eq(column("sink", "executed"), 1);
    cr_expect_eq(column("prof_only", "estimate_bytes"), NONE);
    cr_expect(text_is("sink", "ort_mode", "stats"));
    char *text = tb_read_file(out);
    cr_expect_not_null(strstr(text, "max (estimator larger)"), "%s", text);
    cr_expect_not_null(strstr(text, "max (profile larger)"), "%s", text);
    cr_expect_not_null(strstr(text, "planner's ledger (workspace to reserve): 4.7 KiB over 7 nodes, 0 unknown"), "%s",
                       text);
    cr_expect_not_null(strstr(text, "ORT's ledger (IResourceAccountant cost, stats from this trace): 1.8 KiB"), "%s",
                       text);
    free(text);
}

/*
 * Ad hoc (no stats file), multiplier 1.5: known bytes are initializers (none given) and outputs
 * (none given: the observed ones).  est_only 0 + 170 (estimator); both 0 + 200 (estimator, the
 * profile plays no part); ran_bare 1001 * 1.5 = 1501.5, truncated to 1501 (fallback); ghost 0 +
 * 4096 (estimator); prof_only 0 (fallback).  With multiplier 2: ran_bare 2002.
 */
Test(resolve, ad_hoc_mode_truncates_like_ort)
{
    setup_trace();
    cr_assert_eq(tb_run_cmd(cmd_resolve, out, errp, 4, "resolve", trace, "--ort-mode", "ad-hoc"), WS_EXIT_OK);
    cr_expect_eq(column("est_only", "ort_cost_bytes"), 170);
    cr_expect(text_is("est_only", "ort_source", "estimator"));
    cr_expect_eq(column("both", "ort_cost_bytes"), 200);
    cr_expect_eq(column("ran_bare", "ort_cost_bytes"), 1501);
    cr_expect(text_is("ran_bare", "ort_source", "fallback"));
    cr_expect_eq(column("ran_bare", "ort_workspace_bytes"), 500);
    cr_expect_eq(column("ghost", "ort_cost_bytes"), 4096);
    cr_expect_eq(column("prof_only", "ort_cost_bytes"), 0);
    cr_expect(text_is("prof_only", "ort_mode", "ad-hoc"));
    cr_expect_eq(column("both", "planner_bytes"), 300, "the planner's ledger does not change with the mode");
    cr_assert_eq(
        tb_run_cmd(cmd_resolve, out, errp, 6, "resolve", trace, "--ort-mode", "ad-hoc", "--fallback-multiplier", "2"),
        WS_EXIT_OK);
    cr_expect_eq(column("ran_bare", "ort_cost_bytes"), 2002);
}

Test(resolve, json_has_one_total_per_ledger)
{
    setup_trace();
    cr_assert_eq(tb_run_cmd(cmd_resolve, out, errp, 3, "resolve", trace, "--json"), WS_EXIT_OK);
    json_error_t jerr;
    json_t *root = json_load_file(out, 0, &jerr);
    cr_assert_not_null(root, "%s", jerr.text);
    json_t *planner = json_object_get(root, "planner"), *ort = json_object_get(root, "ort");
    cr_expect_eq(json_integer_value(json_object_get(planner, "total_bytes")), 4862);
    cr_expect_eq(json_integer_value(json_object_get(ort, "total_cost_bytes")), 1867);
    cr_expect_str_eq(json_string_value(json_object_get(ort, "mode")), "stats");
    json_t *coverage = json_object_get(planner, "coverage");
    /* max: est_only, both; profile: prof_only, ran_bare, sink, summed; estimator: ghost */
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(coverage, "max"), "nodes")), 2);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(coverage, "profile"), "nodes")), 4);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(coverage, "estimator"), "nodes")), 1);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(coverage, "unknown"), "nodes")), 0);
    coverage = json_object_get(ort, "coverage");
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(coverage, "not-profiled"), "nodes")), 1);
    cr_expect_float_eq(json_real_value(json_object_get(json_object_get(coverage, "not-profiled"), "share")), 1.0 / 7,
                       1e-9);
    json_t *first = json_array_get(json_object_get(root, "nodes"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(first, "node")), "est_only");
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(first, "ort"), "cost_bytes")), 170);
    json_decref(root);
}

/*
 * Facts from a file: prof_only slot 0 500 (max(96, 500) = 500, ORT max(96, 500) = 500);
 * ran_bare input 64 (stats: 64 + 1001 = 1065) and, in ad-hoc mode, initializer 999 and output
 * 2000 bytes: (999 + 2000) * 1.5 = 4498.5 -> 4498.
 */
Test(resolve, json_estimates_file)
{
    char est[256];
    setup_trace();
    tb_temp_path("est.json", est, sizeof est);
    tb_write_file(est, "{\"nodes\": {\"prof_only\": {\"slots\": {\"0\": 500}},\n"
                       "           \"ran_bare\": {\"input_bytes\": 64, \"initializer_bytes\": 999,"
                       " \"output_bytes\": 2000},\n"
                       "           \"not_in_trace\": 7}}\n");
    cr_assert_eq(tb_run_cmd(cmd_resolve, out, errp, 4, "resolve", trace, "--estimates", est), WS_EXIT_OK);
    expect_node("prof_only", 500, "max", 500, "profile+estimator");
    cr_expect_eq(column("ran_bare", "ort_cost_bytes"), 1065);
    cr_expect_eq(column("ran_bare", "ort_input_bytes"), 64);
    char *text = tb_read_file(out);
    cr_expect_not_null(strstr(text, "max (estimator larger)"), "%s", text);
    free(text);
    cr_assert_eq(tb_run_cmd(cmd_resolve, out, errp, 6, "resolve", trace, "--estimates", est, "--ort-mode", "ad-hoc"),
                 WS_EXIT_OK);
    cr_expect_eq(column("ran_bare", "ort_cost_bytes"), 4498);
    tb_write_file(est, "{\"sink\": 4000}");
    cr_assert_eq(tb_run_cmd(cmd_resolve, out, errp, 4, "resolve", trace, "--estimates", est), WS_EXIT_OK);
    expect_node("sink", 4000, "max", 4000, "profile+estimator");
    cr_expect_eq(column("prof_only", "planner_bytes"), 96, "re-running replaces the rows");
}

Test(resolve, csv_estimates_file)
{
    char est[256];
    setup_trace();
    tb_temp_path("est.csv", est, sizeof est);
    tb_write_file(est, "node,slot,bytes\nprof_only,0,500\n# comment\nprof_only,1,20\n\"sink\",output,10\n"
                       "sink,input,7\nsink,initializer,3\n");
    cr_assert_eq(tb_run_cmd(cmd_resolve, out, errp, 4, "resolve", "--estimates", est, trace), WS_EXIT_OK);
    cr_expect_eq(column("prof_only", "planner_bytes"), 520);
    cr_expect_eq(column("est_only", "planner_bytes"), 170, "file estimates add to the trace's");
    cr_expect_eq(column("sink", "ort_output_bytes"), 10);
    cr_expect_eq(column("sink", "ort_cost_bytes"), 7, "stats: inputs 7 + outputs 0 + temp 0");
    cr_assert_eq(tb_run_cmd(cmd_resolve, out, errp, 6, "resolve", "--estimates", est, trace, "--ort-mode", "ad-hoc"),
                 WS_EXIT_OK);
    cr_expect_eq(column("sink", "ort_cost_bytes"), 19, "(3 + 10) * 1.5 = 19.5 -> 19");
}

static void expect_bad_estimates(const char *name, const char *text, const char *message)
{
    char est[256];
    tb_temp_path(name, est, sizeof est);
    tb_write_file(est, text);
    cr_expect_eq(tb_run_cmd(cmd_resolve, out, errp, 4, "resolve", trace, "--estimates", est), WS_EXIT_USAGE, "%s",
                 name);
    char *err = tb_read_file(errp);
    cr_expect_not_null(strstr(err, est), "the error names the file: %s", err);
    cr_expect_not_null(strstr(err, message), "expected '%s' in: %s", message, err);
    cr_expect_eq(strchr(err, '\n'), strrchr(err, '\n'), "one line: %s", err);
    free(err);
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'resolutions'"), 0,
                 "nothing written");
}

Test(resolve, bad_estimates_files)
{
    setup_trace();
    expect_bad_estimates("syntax.json", "{\n  \"a\": ,\n}\n", ":2:");
    expect_bad_estimates("negative.json", "{\"a\": -1}", "node 'a'");
    expect_bad_estimates("key.json", "{\"a\": {\"slot\": {\"0\": 1}}}", "unexpected key 'slot'");
    expect_bad_estimates("slot.json", "{\"a\": {\"slots\": {\"x\": 1}}}", "slot 'x'");
    expect_bad_estimates("bytes.csv", "node,slot,bytes\na,0,1\nb,0,x\n", ":3: bytes 'x'");
    expect_bad_estimates("negative.csv", "a,0,-5\n", ":1: bytes '-5'");
    expect_bad_estimates("columns.csv", "a,0\n", ":1: expected 3 columns");
    expect_bad_estimates("slot.csv", "a,first,1\n", ":1: slot 'first'");
    expect_bad_estimates("quote.csv", "\"a,0,1\n", ":1:");
    expect_bad_estimates("empty.csv", "", "empty estimates file");
    expect_bad_estimates("input.json", "{\"a\": {\"input_bytes\": -3}}", "node 'a'");
    expect_bad_estimates("fact.csv", "a,inputs,3\n", ":1: slot 'inputs'");
    char missing[256];
    tb_temp_path("missing.json", missing, sizeof missing);
    cr_expect_eq(tb_run_cmd(cmd_resolve, out, errp, 4, "resolve", trace, "--estimates", missing), WS_EXIT_USAGE);
}

/* The parser takes a buffer: rows out, or one error line naming the input and the line. */
Test(resolve, estimates_parse_takes_a_buffer)
{
    static const char good[] = "a,0,5\r\nb,output,7\n\n# c\n";
    static const char nul[] = "a,0,5\nb,0\0,7\n";
    struct ws_estimates est;
    char err[256];
    cr_assert_eq(ws_estimates_parse(good, sizeof good - 1, "buf", &est, err, sizeof err), 0, "%s", err);
    cr_assert_eq(est.count, 2);
    cr_expect_str_eq(est.items[0].node, "a");
    cr_expect_eq(est.items[0].kind, WS_EST_SLOT);
    cr_expect_eq(est.items[0].bytes, 5);
    cr_expect_eq(est.items[1].kind, WS_EST_OUTPUT);
    ws_estimates_free(&est);
    cr_assert_eq(ws_estimates_parse(nul, sizeof nul - 1, "buf", &est, err, sizeof err), -1);
    cr_expect_not_null(strstr(err, "buf:2: NUL byte"), "%s", err);
    cr_expect_eq(est.count, 0);
    cr_assert_eq(ws_estimates_parse("  \n", 3, "buf", &est, err, sizeof err), -1);
    cr_expect_not_null(strstr(err, "empty estimates file"), "%s", err);
}

/* The API gives the same figures as the table, each checked against the hand derivation above
 * (not against the result's own fields). */
Test(resolve, api_matches_the_definition)
{
    static const struct {
        const char *node;
        int64_t planner;
        enum ws_source planner_source;
        int64_t ort;
        enum ws_ort_source ort_source;
    } want[] = {
        {"est_only", 170, WS_SOURCE_MAX, 170, WS_ORT_SOURCE_PROFILE_AND_ESTIMATOR},
        {"prof_only", 96, WS_SOURCE_PROFILE, 96, WS_ORT_SOURCE_PROFILE},
        {"both", 300, WS_SOURCE_MAX, 300, WS_ORT_SOURCE_PROFILE_AND_ESTIMATOR},
        {"ran_bare", 0, WS_SOURCE_PROFILE, 1001, WS_ORT_SOURCE_PROFILE},
        {"sink", 0, WS_SOURCE_PROFILE, 0, WS_ORT_SOURCE_PROFILE},
        {"ghost", 4096, WS_SOURCE_ESTIMATOR, 0, WS_ORT_SOURCE_NOT_PROFILED},
        {"summed", 200, WS_SOURCE_PROFILE, 300, WS_ORT_SOURCE_PROFILE},
    };
    char path[256], err[512];
    sqlite3 *db = tb_create(path, sizeof path);
    build_resolve(db);
    struct ws_analysis an;
    struct ws_resolution *res = NULL;
    size_t n = 0;
    cr_assert_eq(ws_analysis_load(db, path, &an, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ws_resolve(&an, NULL, WS_ORT_STATS, 1.5, &res, &n, err, sizeof err), 0);
    cr_assert_eq(n, 7);
    for (size_t i = 0; i < n; i++) {
        const struct ws_resolution *r = &res[i];
        cr_assert_str_eq(an.nodes[r->node].name, want[i].node, "rows in node order");
        cr_expect_eq(r->planner.bytes, want[i].planner, "%s", want[i].node);
        cr_expect_eq(r->planner.source, want[i].planner_source, "%s", want[i].node);
        cr_expect_eq(r->ort.cost_bytes, want[i].ort, "%s", want[i].node);
        cr_expect_eq(r->ort.source, want[i].ort_source, "%s", want[i].node);
    }
    struct ws_resolve_totals t;
    ws_resolve_totals(res, n, &t);
    cr_expect_eq(t.planner_bytes, 4862);
    cr_expect_eq(t.ort_bytes, 1867);
    cr_expect_eq(ws_node_estimate(&an, NULL, ws_analysis_node_by_name(&an, "est_only")), 170);
    cr_expect_eq(ws_node_estimate(&an, NULL, ws_analysis_node_by_name(&an, "sink")), -1);
    free(res);
    ws_analysis_free(&an);
    sqlite3_close(db);
}

/* An estimate of 0 takes part in the max rule: profile 100 and estimate 0 is max 100 (not
 * "profile"); profile 0 and estimate 0 is max 0; neither is unknown.  ORT: max(temp 100,
 * estimate 0) = 100, profile+estimator. */
Test(resolve, an_estimate_of_zero_takes_part)
{
    struct ws_planner_cost p;
    ws_planner_resolve(100, 0, &p);
    cr_expect_eq(p.source, WS_SOURCE_MAX);
    cr_expect_eq(p.bytes, 100);
    ws_planner_resolve(0, 0, &p);
    cr_expect_eq(p.source, WS_SOURCE_MAX);
    cr_expect_eq(p.bytes, 0);
    ws_planner_resolve(-1, -1, &p);
    cr_expect_eq(p.source, WS_SOURCE_UNKNOWN);
    cr_expect_eq(p.bytes, -1);
    struct ws_ort_facts f = {1, -1, -1, 0, 100, -1, 0};
    struct ws_ort_cost c;
    ws_ort_charge(WS_ORT_STATS, 1.5, &f, &c);
    cr_expect_eq(c.source, WS_ORT_SOURCE_PROFILE_AND_ESTIMATOR);
    cr_expect_eq(c.cost_bytes, 100);
}

/* A free exactly at the run's end is within the run: the allocation is an activation (and a
 * dynamic output in ORT's ledger); one nanosecond later it is persistent. */
Test(resolve, a_free_at_the_end_of_the_run_is_within_it)
{
    for (int late = 0; late <= 1; late++) {
        char path[256], err[512];
        sqlite3 *db = tb_create(path, sizeof path);
        tb_string(db, 1, "producer");
        tb_string(db, 2, "consumer");
        tb_run(db, 1, NONE, 0, 100);
        tb_range(db, 1, 1, NONE, 0, 1, 10, 20);
        tb_range(db, 2, 2, NONE, 0, 1, 90, 100);
        tb_alloc(db, 1, 512, 1, 1, 11, 100 + late, 2);
        struct ws_analysis an;
        cr_assert_eq(ws_analysis_load(db, path, &an, err, sizeof err), 0, "%s", err);
        cr_expect_eq(an.allocs[0].cls, late ? WS_CLASS_PERSISTENT : WS_CLASS_ACTIVATION, "free at %d", 100 + late);
        cr_expect_eq(an.allocs[0].end_event, late ? -1 : 1);
        ws_analysis_free(&an);
        sqlite3_close(db);
    }
}

/* A node with neither a profile nor an estimate (declared at Level 2 only, never ran): unknown in
 * the planner's ledger, counted and not summed. */
Test(resolve, a_node_with_neither_is_unknown)
{
    sqlite3 *db = tb_create(trace, sizeof trace);
    tb_string(db, 1, "ran");
    tb_string(db, 2, "l2_only");
    tb_run(db, 1, NONE, 0, 100);
    tb_range(db, 1, 1, NONE, 0, 1, 10, 20);
    tb_alloc(db, 1, 64, 1, 1, 11, 12, 1);
    tb_decl(db, 2, 2, 0, 128);
    sqlite3_close(db);
    tb_temp_path("out", out, sizeof out);
    tb_temp_path("err", errp, sizeof errp);
    cr_assert_eq(tb_run_cmd(cmd_resolve, out, errp, 2, "resolve", trace), WS_EXIT_OK);
    cr_expect_eq(column("l2_only", "planner_bytes"), NONE);
    cr_expect(text_is("l2_only", "planner_source", "unknown"));
    char *text = tb_read_file(out);
    cr_expect_not_null(strstr(text, "64 B over 1 nodes, 1 unknown"), "%s", text);
    free(text);
}

Test(resolve, bad_flags_exit_2)
{
    setup_trace();
    cr_expect_eq(tb_run_cmd(cmd_resolve, out, errp, 4, "resolve", trace, "--ort-mode", "sometimes"), WS_EXIT_USAGE);
    cr_expect_eq(tb_run_cmd(cmd_resolve, out, errp, 4, "resolve", trace, "--fallback-multiplier", "0.5"),
                 WS_EXIT_USAGE);
    char *err = tb_read_file(errp);
    cr_expect_not_null(strstr(err, "at least 1"), "%s", err);
    cr_expect_eq(strchr(err, '\n'), strrchr(err, '\n'), "one line: %s", err);
    free(err);
}
