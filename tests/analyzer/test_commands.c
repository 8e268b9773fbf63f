/* summary, and what every analysis command does with bad input, flags and --help. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "trace_builder.h"

TestSuite(commands, .fini = tb_cleanup);

static char trace[256], out[256], errp[256];

/* One run of model > {A, B}: A makes 200 B that B frees, B uses 96 B of workspace at once. */
static void setup_trace(void)
{
    sqlite3 *db = tb_create(trace, sizeof trace);
    tb_string(db, 1, "model");
    tb_string(db, 2, "A");
    tb_string(db, 3, "B");
    tb_string(db, 4, "shape");
    tb_thread(db, 2);
    tb_run(db, 1, 4, 0, 1000);
    tb_range(db, 1, 1, NONE, 0, 1, 0, 1000);
    tb_range(db, 2, 2, 1, 1, 1, 10, 100);
    tb_range(db, 3, 3, 1, 1, 1, 110, 200);
    tb_alloc(db, 1, 200, 2, 1, 20, 150, 3);
    tb_alloc(db, 2, 64, 3, 1, 120, 140, 3);
    tb_alloc(db, 3, 32, 3, 1, 130, 135, 3);
    tb_alloc(db, 4, 77, 2, 1, 30, NONE, NONE);
    tb_sql(db, "UPDATE allocations SET status = 2, bytes = 0 WHERE id = 4");
    tb_decl(db, 1, 2, 0, 10);
    tb_decl(db, 2, 2, 0, 10);
    tb_decl(db, 2, 3, 0, 64);
    tb_sql(db, "INSERT INTO meta(key, value) VALUES ('lost_records', 3)");
    sqlite3_close(db);
    tb_temp_path("out", out, sizeof out);
    tb_temp_path("err", errp, sizeof errp);
}

Test(commands, summary_json)
{
    setup_trace();
    cr_assert_eq(tb_run_cmd(cmd_summary, out, errp, 3, "summary", trace, "--json"), WS_EXIT_OK);
    json_error_t jerr;
    json_t *root = json_load_file(out, 0, &jerr);
    cr_assert_not_null(root, "%s", jerr.text);
    cr_expect_eq(json_integer_value(json_object_get(root, "runs")), 1);
    cr_expect_eq(json_integer_value(json_object_get(root, "nodes")), 3);
    cr_expect_eq(json_integer_value(json_object_get(root, "shape_keys")), 1);
    cr_expect_eq(json_integer_value(json_object_get(root, "threads")), 2);
    cr_expect_eq(json_integer_value(json_object_get(root, "device_allocation_calls")), 4);
    cr_expect_eq(json_integer_value(json_object_get(root, "failed_allocation_calls")), 1);
    cr_expect_eq(json_integer_value(json_object_get(root, "peak_live_device_bytes")), 296);
    cr_expect_eq(json_integer_value(json_object_get(root, "lost_records")), 3);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(root, "level1_coverage"), "nodes")), 1);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(root, "level2_coverage"), "nodes")), 2);
    json_t *ws = json_array_get(json_object_get(root, "top_workspace_nodes"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(ws, "node")), "B");
    cr_expect_eq(json_integer_value(json_object_get(ws, "bytes")), 96);
    json_t *act = json_array_get(json_object_get(root, "top_activation_nodes"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(act, "node")), "A");
    cr_expect_eq(json_integer_value(json_object_get(act, "bytes")), 200);
    json_decref(root);
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'lifetimes'"), 0,
                 "summary writes nothing");
}

Test(commands, summary_text)
{
    setup_trace();
    cr_assert_eq(tb_run_cmd(cmd_summary, out, errp, 2, "summary", trace), WS_EXIT_OK);
    char *text = tb_read_file(out);
    cr_expect_not_null(strstr(text, "296 B"), "%s", text);
    cr_expect_not_null(strstr(text, "lost records             3"), "%s", text);
    cr_expect_not_null(strstr(text, "1 of 3 nodes (33.3 %)"), "%s", text);
    free(text);
}

typedef int (*command_fn)(int, char **);
static const struct {
    const char *name;
    command_fn fn;
} analysis_commands[] = {
    {"summary", cmd_summary}, {"lifetimes", cmd_lifetimes}, {"resolve", cmd_resolve}, {"verify", cmd_verify}};

/* Every command refuses the trace with exit 2, one error line containing message, and writes nothing. */
static void expect_refused(const char *path, const char *message)
{
    for (size_t i = 0; i < sizeof analysis_commands / sizeof analysis_commands[0]; i++) {
        cr_expect_eq(tb_run_cmd(analysis_commands[i].fn, out, errp, 2, analysis_commands[i].name, path), WS_EXIT_USAGE,
                     "%s", analysis_commands[i].name);
        char *err = tb_read_file(errp);
        cr_expect_eq(strncmp(err, "wstrace: ", 9), 0, "%s", err);
        cr_expect_not_null(strstr(err, message), "%s: expected '%s' in: %s", analysis_commands[i].name, message, err);
        cr_expect_eq(strchr(err, '\n'), err + strlen(err) - 1, "one line: %s", err);
        free(err);
    }
}

Test(commands, bad_traces)
{
    char text[256];
    setup_trace();
    tb_temp_path("notes.txt", text, sizeof text);
    tb_write_file(text, "this is not a trace\n");
    expect_refused(text, "not a wstrace trace");
    tb_temp_path("missing.db", text, sizeof text);
    expect_refused(text, "No such file");

    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(trace, &db), SQLITE_OK);
    tb_sql(db, "PRAGMA user_version = 99");
    sqlite3_close(db);
    expect_refused(trace, "newer");
}

Test(commands, missing_table)
{
    setup_trace();
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(trace, &db), SQLITE_OK);
    tb_sql(db, "DROP VIEW device_allocations; DROP VIEW live_bytes; DROP VIEW node_allocation_totals;"
               " DROP TABLE ranges");
    sqlite3_close(db);
    expect_refused(trace, "'ranges' is missing");
}

Test(commands, empty_trace)
{
    sqlite3 *db = tb_create(trace, sizeof trace);
    sqlite3_close(db);
    tb_temp_path("out", out, sizeof out);
    tb_temp_path("err", errp, sizeof errp);
    expect_refused(trace, "empty trace");
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'lifetimes'"), 0);
}

Test(commands, help_and_bad_flags)
{
    setup_trace();
    for (size_t i = 0; i < sizeof analysis_commands / sizeof analysis_commands[0]; i++) {
        const char *name = analysis_commands[i].name;
        cr_expect_eq(tb_run_cmd(analysis_commands[i].fn, out, errp, 2, name, "--help"), WS_EXIT_OK);
        char *text = tb_read_file(out);
        cr_expect_not_null(strstr(text, "usage: wstrace "), "%s", text);
        cr_expect_not_null(strstr(text, name), "%s", text);
        free(text);
        cr_expect_eq(tb_run_cmd(analysis_commands[i].fn, out, errp, 3, name, trace, "--no-such-flag"), WS_EXIT_USAGE);
        cr_expect_eq(tb_run_cmd(analysis_commands[i].fn, out, errp, 1, name), WS_EXIT_USAGE, "%s: no trace", name);
        cr_expect_eq(tb_run_cmd(analysis_commands[i].fn, out, errp, 3, name, trace, trace), WS_EXIT_USAGE);
    }
    cr_expect_eq(tb_run_cmd(cmd_resolve, out, errp, 4, "resolve", trace, "--fallback-multiplier", "x"), WS_EXIT_USAGE);
    cr_expect_eq(tb_run_cmd(cmd_resolve, out, errp, 4, "resolve", trace, "--fallback-multiplier", "-1"), WS_EXIT_USAGE);
    cr_expect_eq(tb_run_cmd(cmd_summary, out, errp, 4, "summary", trace, "--top", "many"), WS_EXIT_USAGE);
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'resolutions'"), 0,
                 "bad flags write nothing");
}
