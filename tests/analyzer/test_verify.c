/* Verification of Level-2 declarations: every verdict, --strict, estimates from a file. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "commands.h"
#include "trace_builder.h"

TestSuite(verify, .fini = tb_cleanup);

static char trace[256], out[256], errp[256];

/*
 * One run.  Slot 0 of every node:
 *   ok       L1 max(90, 100) = 100, L2 80, observed max(60, 80) = 80 over two occurrences -> ok
 *   over     L1 100, L2 150, observed 100                                                 -> over-reservation
 *   under    L1 200, L2 100, observed 150                                                 -> under-declared
 *   idle     L1 100, L2 100, never used                                                   -> idle-reservation
 *   undecl   nothing declared, observed 64                                                -> undeclared
 *   unavail  L2 50 without Level 1, observed 40                                           -> unavailable
 *   empty    L1 0, L2 0, never used                                                       -> ok
 */
static void build_verify(sqlite3 *db, int all_verdicts)
{
    static const char *const names[] = {"ok", "over", "under", "idle", "undecl", "unavail", "empty"};
    for (int i = 0; i < 7; i++)
        tb_string(db, i + 1, names[i]);
    tb_run(db, 1, NONE, 0, 10000);
    tb_range(db, 1, 1, NONE, 0, 1, 10, 20);
    tb_range(db, 2, 1, NONE, 0, 1, 21, 30);
    tb_range(db, 3, 7, NONE, 0, 1, 81, 90);
    tb_alloc(db, 1, 60, 1, 1, 11, 12, 1);
    tb_alloc(db, 2, 80, 2, 1, 22, 23, 2);
    tb_decl(db, 1, 1, 0, 90);
    tb_decl(db, 1, 1, 0, 100);
    tb_decl(db, 2, 1, 0, 80);
    tb_decl(db, 1, 7, 0, 0);
    tb_decl(db, 2, 7, 0, 0);
    if (!all_verdicts)
        return;
    for (int i = 2; i <= 6; i++)
        tb_range(db, 2 + i, i, NONE, 0, 1, 10 * i + 11, 10 * i + 20);
    tb_alloc(db, 3, 100, 4, 1, 32, 33, 4);
    tb_alloc(db, 4, 150, 5, 1, 42, 43, 5);
    tb_alloc(db, 5, 64, 7, 1, 62, 63, 7);
    tb_alloc(db, 6, 40, 8, 1, 72, 73, 8);
    tb_decl(db, 1, 2, 0, 100);
    tb_decl(db, 2, 2, 0, 150);
    tb_decl(db, 1, 3, 0, 200);
    tb_decl(db, 2, 3, 0, 100);
    tb_decl(db, 1, 4, 0, 100);
    tb_decl(db, 2, 4, 0, 100);
    tb_decl(db, 2, 6, 0, 50);
}

static void setup_trace(int all_verdicts)
{
    sqlite3 *db = tb_create(trace, sizeof trace);
    build_verify(db, all_verdicts);
    sqlite3_close(db);
    tb_temp_path("out", out, sizeof out);
    tb_temp_path("err", errp, sizeof errp);
}

static int verdict_is(const char *node, const char *verdict)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT verdict = '%s' FROM verifications JOIN strings ON strings.id = node_name_id"
             " WHERE value = '%s' AND slot = 0",
             verdict, node);
    return tb_query(trace, sql) == 1;
}

Test(verify, every_verdict)
{
    setup_trace(1);
    cr_assert_eq(tb_run_cmd(cmd_verify, out, errp, 2, "verify", trace), WS_EXIT_OK, "findings only fail --strict");
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM verifications"), 7);
    cr_expect(verdict_is("ok", "ok"));
    cr_expect(verdict_is("over", "over-reservation"));
    cr_expect(verdict_is("under", "under-declared"));
    cr_expect(verdict_is("idle", "idle-reservation"));
    cr_expect(verdict_is("undecl", "undeclared"));
    cr_expect(verdict_is("unavail", "unavailable"));
    cr_expect(verdict_is("empty", "ok"));
    cr_expect_eq(tb_query(trace, "SELECT level1_bytes FROM verifications WHERE node_name_id = 1"), 100);
    cr_expect_eq(tb_query(trace, "SELECT observed_bytes FROM verifications WHERE node_name_id = 1"), 80);
    cr_expect_eq(tb_query(trace, "SELECT observed_bytes FROM verifications WHERE node_name_id = 4"), NONE);
    cr_expect_eq(tb_query(trace, "SELECT level2_bytes FROM verifications WHERE node_name_id = 5"), NONE);
    char *text = tb_read_file(out);
    cr_expect_not_null(strstr(text, "over-reservation 1"), "%s", text);
    cr_expect_not_null(strstr(text, "ok 2"), "%s", text);
    free(text);
}

Test(verify, strict_exits_1_on_findings_only)
{
    setup_trace(1);
    cr_expect_eq(tb_run_cmd(cmd_verify, out, errp, 3, "verify", "--strict", trace), WS_EXIT_FINDINGS);
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM verifications"), 7, "findings are still written");
    setup_trace(0);
    cr_expect_eq(tb_run_cmd(cmd_verify, out, errp, 3, "verify", "--strict", trace), WS_EXIT_OK);
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM verifications WHERE verdict = 'ok'"), 2);
}

Test(verify, json_output_and_estimates_file)
{
    char est[256];
    setup_trace(1);
    tb_temp_path("est.csv", est, sizeof est);
    tb_write_file(est, "unavail,0,50\n");
    cr_assert_eq(tb_run_cmd(cmd_verify, out, errp, 5, "verify", trace, "--json", "--estimates", est), WS_EXIT_OK);
    cr_expect(verdict_is("unavail", "ok"), "the file supplies the missing Level 1");
    json_error_t jerr;
    json_t *root = json_load_file(out, 0, &jerr);
    cr_assert_not_null(root, "%s", jerr.text);
    cr_expect_eq(json_integer_value(json_object_get(root, "slot_count")), 7);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(root, "verdicts"), "ok")), 3);
    json_t *first = json_array_get(json_object_get(root, "slots"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(first, "node")), "ok");
    cr_expect_eq(json_integer_value(json_object_get(first, "level2_bytes")), 80);
    json_decref(root);
}

Test(verify, verdict_rules)
{
    cr_expect_eq(ws_verdict_of(100, 80, 80), WS_VERDICT_OK);
    cr_expect_eq(ws_verdict_of(100, 150, 200), WS_VERDICT_OVER_RESERVATION, "over the reservation comes first");
    cr_expect_eq(ws_verdict_of(-1, 100, 150), WS_VERDICT_UNDER_DECLARED);
    cr_expect_eq(ws_verdict_of(-1, 100, -1), WS_VERDICT_IDLE_RESERVATION);
    cr_expect_eq(ws_verdict_of(-1, -1, 0), WS_VERDICT_UNDECLARED);
    cr_expect_eq(ws_verdict_of(-1, 0, -1), WS_VERDICT_OK, "empty outputs declare nothing");
    cr_expect_eq(ws_verdict_of(-1, 0, 0), WS_VERDICT_UNAVAILABLE);
    cr_expect_eq(ws_verdict_of(100, -1, 50), WS_VERDICT_UNAVAILABLE);
    cr_expect_eq(ws_verdict_of(100, -1, -1), WS_VERDICT_UNAVAILABLE);
    cr_expect_eq(ws_verdict_of(0, -1, -1), WS_VERDICT_OK);
    cr_expect_eq(ws_verdict_of(0, -1, 10), WS_VERDICT_UNAVAILABLE);
}
