/* Workspace resolution: every source, coverage, the fallback multiplier, estimates files. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "commands.h"
#include "trace_builder.h"

TestSuite(resolve, .fini = tb_cleanup);

/*
 * Two runs.  est_only: Level-1 slot 0 declared 100 and 120 (max 120) + slot 1 50 -> 170.
 * prof_only: 64 and 32 B of workspace live together (96); a second occurrence uses 90.
 * both: 300 B of workspace, Level-1 200 -> max 300 (profile larger).
 * fallback: produces activations of 1001 B (run 1) and 500 B (run 2) -> 1001 * 1.5 = 1502.
 * sink: frees them, produces nothing -> fallback 0.  ghost: declared but never ran.
 */
static void build_resolve(sqlite3 *db)
{
    static const char *const names[] = {"est_only", "prof_only", "both", "fallback", "sink", "ghost"};
    for (int i = 0; i < 6; i++)
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
    tb_alloc(db, 1, 64, 2, 1, 35, 50, 2);
    tb_alloc(db, 2, 32, 2, 1, 40, 45, 2);
    tb_alloc(db, 3, 300, 3, 1, 75, 80, 3);
    tb_alloc(db, 4, 1001, 4, 1, 105, 140, 5);
    tb_alloc(db, 5, 90, 6, 2, 2020, 2030, 6);
    tb_alloc(db, 6, 500, 7, 2, 2105, 2140, 8);
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

static int64_t resolved(const char *node)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT resolved_bytes FROM resolutions JOIN strings ON strings.id = node_name_id WHERE value = '%s'",
             node);
    return tb_query(trace, sql);
}

static int source_is(const char *node, const char *source)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT source = '%s' FROM resolutions JOIN strings ON strings.id = node_name_id WHERE value = '%s'",
             source, node);
    return tb_query(trace, sql) == 1;
}

Test(resolve, every_source_by_hand)
{
    setup_trace();
    cr_assert_eq(tb_run_cmd(cmd_resolve, out, errp, 2, "resolve", trace), WS_EXIT_OK);
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM resolutions"), 5, "ghost never ran: not a node");
    cr_expect_eq(resolved("est_only"), 170);
    cr_expect(source_is("est_only", "estimator"));
    cr_expect_eq(resolved("prof_only"), 96);
    cr_expect(source_is("prof_only", "profile"));
    cr_expect_eq(resolved("both"), 300);
    cr_expect(source_is("both", "max"));
    cr_expect_eq(resolved("fallback"), 1502, "ceil(1001 * 1.5)");
    cr_expect(source_is("fallback", "fallback"));
    cr_expect_eq(resolved("sink"), 0);
    cr_expect_eq(tb_query(trace, "SELECT output_bytes FROM resolutions WHERE node_name_id = 4"), 1001);
    cr_expect_eq(tb_query(trace, "SELECT estimate_bytes FROM resolutions WHERE node_name_id = 2"), NONE);
    char *text = tb_read_file(out);
    cr_expect_not_null(strstr(text, "max (profile larger)"), "%s", text);
    cr_expect_not_null(strstr(text, "fallback 2 (40.0 %)"), "%s", text);
    free(text);
}

Test(resolve, json_coverage_and_multiplier)
{
    setup_trace();
    cr_assert_eq(tb_run_cmd(cmd_resolve, out, errp, 5, "resolve", trace, "--json", "--fallback-multiplier", "2"),
                 WS_EXIT_OK);
    json_error_t jerr;
    json_t *root = json_load_file(out, 0, &jerr);
    cr_assert_not_null(root, "%s", jerr.text);
    json_t *coverage = json_object_get(root, "coverage");
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(coverage, "estimator"), "nodes")), 1);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(coverage, "profile"), "nodes")), 1);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(coverage, "max"), "nodes")), 1);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(coverage, "fallback"), "nodes")), 2);
    cr_expect_float_eq(json_real_value(json_object_get(json_object_get(coverage, "fallback"), "share")), 0.4, 1e-9);
    cr_expect_eq(resolved("fallback"), 2002);
    json_decref(root);
}

Test(resolve, json_estimates_file)
{
    char est[256];
    setup_trace();
    tb_temp_path("est.json", est, sizeof est);
    tb_write_file(est, "{\"nodes\": {\"prof_only\": {\"slots\": {\"0\": 500}},\n"
                       "           \"sink\": {\"output_bytes\": 2000},\n"
                       "           \"not_in_trace\": 7}}\n");
    cr_assert_eq(tb_run_cmd(cmd_resolve, out, errp, 4, "resolve", trace, "--estimates", est), WS_EXIT_OK);
    cr_expect_eq(resolved("prof_only"), 500);
    cr_expect(source_is("prof_only", "max"));
    cr_expect_eq(resolved("sink"), 3000, "2000 known output bytes * 1.5");
    char *text = tb_read_file(out);
    cr_expect_not_null(strstr(text, "max (estimator larger)"), "%s", text);
    free(text);
    tb_write_file(est, "{\"fallback\": 4000}");
    cr_assert_eq(tb_run_cmd(cmd_resolve, out, errp, 4, "resolve", trace, "--estimates", est), WS_EXIT_OK);
    cr_expect_eq(resolved("fallback"), 4000);
    cr_expect(source_is("fallback", "estimator"));
    cr_expect_eq(resolved("prof_only"), 96, "re-running replaces the rows");
}

Test(resolve, csv_estimates_file)
{
    char est[256];
    setup_trace();
    tb_temp_path("est.csv", est, sizeof est);
    tb_write_file(est, "node,slot,bytes\nprof_only,0,500\n# comment\nprof_only,1,20\n\"sink\",output,10\n");
    cr_assert_eq(tb_run_cmd(cmd_resolve, out, errp, 4, "resolve", "--estimates", est, trace), WS_EXIT_OK);
    cr_expect_eq(resolved("prof_only"), 520);
    cr_expect_eq(resolved("sink"), 15);
    cr_expect_eq(resolved("est_only"), 170, "file estimates add to the trace's");
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
    char missing[256];
    tb_temp_path("missing.json", missing, sizeof missing);
    cr_expect_eq(tb_run_cmd(cmd_resolve, out, errp, 4, "resolve", trace, "--estimates", missing), WS_EXIT_USAGE);
}

Test(resolve, api_matches_the_definition)
{
    char path[256], err[512];
    sqlite3 *db = tb_create(path, sizeof path);
    build_resolve(db);
    struct ws_analysis an;
    struct ws_resolution *res = NULL;
    size_t n = 0;
    cr_assert_eq(ws_analysis_load(db, path, &an, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ws_resolve(&an, NULL, 3.0, &res, &n, err, sizeof err), 0);
    cr_assert_eq(n, 5);
    for (size_t i = 0; i < n; i++) {
        const struct ws_resolution *r = &res[i];
        if (r->source == WS_SOURCE_FALLBACK)
            cr_expect_eq(r->resolved_bytes, r->output_bytes * 3);
        else if (r->source == WS_SOURCE_MAX)
            cr_expect_eq(r->resolved_bytes,
                         r->profile_bytes > r->estimate_bytes ? r->profile_bytes : r->estimate_bytes);
    }
    free(res);
    ws_analysis_free(&an);
    sqlite3_close(db);
}
