/* Classification, node steps, events and slots on hand-built traces. */
#include <criterion/criterion.h>

#include "analysis.h"
#include "commands.h"
#include "trace_builder.h"

TestSuite(lifetimes, .fini = tb_cleanup);

/*
 * No run markers: the outermost range "model" [0, 1000] is the run.  Steps: model 0, A 1, B 2, C 3.
 *   1: 100 B in A, freed in A           -> workspace, slot 0
 *   2: 200 B in A, freed in C           -> activation, steps 1 -> 3
 *   3: 64 B in B, freed in B            -> workspace, slot 0
 *   4: 32 B in B, freed in B (inside 3) -> workspace, slot 1
 *   5: 1000 B in model, never freed     -> persistent, step 0
 *   6: 50 B outside every range         -> unattributed, no run
 *   7 (host memory) and 8 (failed) are not device allocations.
 * Events of the run: 5a 1a 1f 2a 3a 4a 4f 3f 2f.
 */
static void build_classes(sqlite3 *db)
{
    tb_string(db, 1, "model");
    tb_string(db, 2, "A");
    tb_string(db, 3, "B");
    tb_string(db, 4, "C");
    tb_range(db, 1, 1, NONE, 0, NONE, 0, 1000);
    tb_range(db, 2, 2, 1, 1, NONE, 10, 100);
    tb_range(db, 3, 3, 1, 1, NONE, 110, 200);
    tb_range(db, 4, 4, 1, 1, NONE, 210, 300);
    tb_alloc(db, 1, 100, 2, NONE, 20, 30, 2);
    tb_alloc(db, 2, 200, 2, NONE, 40, 250, 4);
    tb_alloc(db, 3, 64, 3, NONE, 120, 150, 3);
    tb_alloc(db, 4, 32, 3, NONE, 130, 140, 3);
    tb_alloc(db, 5, 1000, 1, NONE, 5, NONE, NONE);
    tb_alloc(db, 6, 50, NONE, NONE, 2000, NONE, NONE);
    tb_alloc(db, 7, 4096, 2, NONE, 50, 60, 2);
    tb_sql(db, "UPDATE allocations SET memory = 'host' WHERE id = 7");
    tb_alloc(db, 8, 0, 2, NONE, 55, NONE, NONE);
    tb_sql(db, "UPDATE allocations SET status = 2 WHERE id = 8");
}

static void expect_lifetime(const struct ws_lifetime *a, int cls, int alloc_step, int free_step, int seq, int start,
                            int end, int slot)
{
    cr_expect_eq(a->cls, cls, "allocation %lld: class %d, expected %d", (long long)a->allocation_id, a->cls, cls);
    cr_expect_eq(a->alloc_step, alloc_step, "allocation %lld: alloc_step", (long long)a->allocation_id);
    cr_expect_eq(a->free_step, free_step, "allocation %lld: free_step", (long long)a->allocation_id);
    cr_expect_eq(a->alloc_seq, seq, "allocation %lld: alloc_seq", (long long)a->allocation_id);
    cr_expect_eq(a->start_event, start, "allocation %lld: start_event", (long long)a->allocation_id);
    cr_expect_eq(a->end_event, end, "allocation %lld: end_event", (long long)a->allocation_id);
    cr_expect_eq(a->slot, slot, "allocation %lld: slot", (long long)a->allocation_id);
}

Test(lifetimes, every_class_with_steps_and_events)
{
    char path[256], err[512];
    sqlite3 *db = tb_create(path, sizeof path);
    build_classes(db);
    struct ws_analysis an;
    cr_assert_eq(ws_analysis_load(db, path, &an, err, sizeof err), 0, "%s", err);
    cr_assert_eq(an.nallocs, 6, "host and failed allocations are not device allocations");
    cr_expect_eq(an.nruns, 1);
    cr_expect(an.runs_synthesized);
    cr_expect_eq(an.runs[0].id, 1, "the synthesized run is named by its outermost range");
    cr_expect_eq(an.runs[0].events, 9);
    expect_lifetime(&an.allocs[0], WS_CLASS_WORKSPACE, 1, 1, 1, 1, 2, 0);
    expect_lifetime(&an.allocs[1], WS_CLASS_ACTIVATION, 1, 3, 2, 3, 8, -1);
    expect_lifetime(&an.allocs[2], WS_CLASS_WORKSPACE, 2, 2, 3, 4, 7, 0);
    expect_lifetime(&an.allocs[3], WS_CLASS_WORKSPACE, 2, 2, 4, 5, 6, 1);
    expect_lifetime(&an.allocs[4], WS_CLASS_PERSISTENT, 0, -1, 0, 0, -1, -1);
    expect_lifetime(&an.allocs[5], WS_CLASS_UNATTRIBUTED, -1, -1, -1, -1, -1, -1);
    cr_expect_eq(an.allocs[5].run, -1);
    /* live bytes: 1000 +100 -100 +200 +64 +32 = 1296 at 130 ns */
    cr_expect_eq(an.peak_live_bytes, 1296);
    int32_t a = ws_analysis_node_by_name(&an, "A"), b = ws_analysis_node_by_name(&an, "B");
    cr_assert(a >= 0 && b >= 0);
    cr_expect_eq(an.nodes[b].profile_bytes, 96, "64 and 32 bytes live together in B");
    cr_expect_eq(an.nodes[a].profile_bytes, 100);
    cr_expect_eq(an.nodes[a].output_bytes, 200);
    cr_expect_eq(an.class_count[WS_CLASS_WORKSPACE], 3);
    cr_expect_eq(an.class_bytes[WS_CLASS_WORKSPACE], 196);
    ws_analysis_free(&an);
    sqlite3_close(db);
}

/*
 * Explicit runs.  Run 1 [0, 1000]: A [10, 50], B [60, 100], C [110, 150].  X (256 B) is made in A
 * and dies in B; W (128 B) is workspace of C, allocated after X died, so its events start after
 * X's end: a plan may put W in X's gap.  U is unattributed inside run 1.  Run 2 [2000, 3000]
 * numbers its own steps and events from 0.
 * Events of run 1: Xa 0, Xf 1, Ua 2, Wa 3, Wf 4, Uf 5.
 */
static void build_gap(sqlite3 *db)
{
    tb_string(db, 1, "A");
    tb_string(db, 2, "B");
    tb_string(db, 3, "C");
    tb_string(db, 9, "shape-1");
    tb_run(db, 1, 9, 0, 1000);
    tb_run(db, 2, 9, 2000, 3000);
    tb_range(db, 1, 1, NONE, 0, 1, 10, 50);
    tb_range(db, 2, 2, NONE, 0, 1, 60, 100);
    tb_range(db, 3, 3, NONE, 0, 1, 110, 150);
    tb_range(db, 4, 1, NONE, 0, 2, 2010, 2050);
    tb_alloc(db, 1, 256, 1, 1, 20, 70, 2);        /* X */
    tb_alloc(db, 2, 64, NONE, 1, 105, 200, NONE); /* U */
    tb_alloc(db, 3, 128, 3, 1, 120, 130, 3);      /* W */
    tb_alloc(db, 4, 16, 4, 2, 2020, 2030, 4);     /* workspace of A in run 2 */
    tb_alloc(db, 5, 8, 4, 2, 2040, 5000, NONE);   /* freed after run 2 ended: persistent */
}

Test(lifetimes, workspace_in_the_gap_of_a_dead_activation)
{
    char path[256], err[512];
    sqlite3 *db = tb_create(path, sizeof path);
    build_gap(db);
    struct ws_analysis an;
    cr_assert_eq(ws_analysis_load(db, path, &an, err, sizeof err), 0, "%s", err);
    cr_assert_eq(an.nruns, 2);
    cr_expect_not(an.runs_synthesized);
    const struct ws_lifetime *x = &an.allocs[0], *u = &an.allocs[1], *w = &an.allocs[2];
    expect_lifetime(x, WS_CLASS_ACTIVATION, 0, 1, 0, 0, 1, -1);
    expect_lifetime(u, WS_CLASS_UNATTRIBUTED, -1, -1, 1, 2, 5, -1);
    expect_lifetime(w, WS_CLASS_WORKSPACE, 2, 2, 2, 3, 4, 0);
    cr_expect(x->end_event <= w->start_event, "W starts after X died: [%d, %d) and [%d, %d)", x->start_event,
              x->end_event, w->start_event, w->end_event);
    expect_lifetime(&an.allocs[3], WS_CLASS_WORKSPACE, 0, 0, 0, 0, 1, 0);
    expect_lifetime(&an.allocs[4], WS_CLASS_PERSISTENT, 0, -1, 1, 2, -1, -1);
    cr_expect_eq(an.runs[0].events, 6);
    cr_expect_eq(an.runs[1].events, 3);
    cr_expect_eq(an.runs[1].allocations, 2);
    ws_analysis_free(&an);
    sqlite3_close(db);
}

Test(lifetimes, command_writes_the_table_and_rerun_replaces_rows)
{
    char path[256], out[256], errp[256];
    sqlite3 *db = tb_create(path, sizeof path);
    build_gap(db);
    sqlite3_close(db);
    tb_temp_path("out", out, sizeof out);
    tb_temp_path("err", errp, sizeof errp);
    cr_assert_eq(tb_run_cmd(cmd_lifetimes, out, errp, 2, "lifetimes", path), WS_EXIT_OK);
    cr_expect_eq(tb_query(path, "SELECT COUNT(*) FROM lifetimes"), 5);
    cr_expect_eq(tb_query(path, "SELECT end_event FROM lifetimes WHERE allocation_id = 1"), 1);
    cr_expect_eq(tb_query(path, "SELECT start_event FROM lifetimes WHERE allocation_id = 3"), 3);
    cr_expect_eq(tb_query(path, "SELECT COUNT(*) FROM lifetimes WHERE class = 'workspace' AND slot = 0"), 2);
    cr_expect_eq(tb_query(path, "SELECT node_name_id FROM lifetimes WHERE allocation_id = 3"), 3);
    cr_expect_eq(tb_query(path, "SELECT run_id FROM lifetimes WHERE allocation_id = 4"), 2);
    cr_expect_eq(tb_query(path, "SELECT free_step FROM lifetimes WHERE allocation_id = 5"), NONE);
    /* A stale row from an earlier version of the trace disappears on the next run. */
    db = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    tb_sql(db, "INSERT INTO lifetimes(allocation_id, class, bytes) VALUES (999, 'workspace', 1)");
    tb_sql(db, "UPDATE allocations SET bytes = 300 WHERE id = 1");
    sqlite3_close(db);
    cr_assert_eq(tb_run_cmd(cmd_lifetimes, out, errp, 3, "lifetimes", path, "--json"), WS_EXIT_OK);
    cr_expect_eq(tb_query(path, "SELECT COUNT(*) FROM lifetimes"), 5);
    cr_expect_eq(tb_query(path, "SELECT bytes FROM lifetimes WHERE allocation_id = 1"), 300);
    char *text = tb_read_file(out);
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    cr_assert_not_null(root, "JSON output: %s", jerr.text);
    cr_expect_eq(json_integer_value(json_object_get(root, "runs")), 2);
    cr_expect_eq(json_integer_value(
                     json_object_get(json_object_get(json_object_get(root, "classes"), "workspace"), "allocations")),
                 2);
    json_decref(root);
    free(text);
}

Test(lifetimes, list_prints_every_allocation_as_json)
{
    char path[256], out[256], errp[256];
    sqlite3 *db = tb_create(path, sizeof path);
    build_classes(db);
    sqlite3_close(db);
    tb_temp_path("out", out, sizeof out);
    tb_temp_path("err", errp, sizeof errp);
    cr_assert_eq(tb_run_cmd(cmd_lifetimes, out, errp, 4, "lifetimes", "--list", "--json", path), WS_EXIT_OK);
    json_error_t jerr;
    json_t *root = json_load_file(out, 0, &jerr);
    cr_assert_not_null(root, "line %d: %s", jerr.line, jerr.text);
    json_t *rows = json_object_get(root, "rows");
    cr_assert_eq(json_array_size(rows), 6);
    json_t *second = json_array_get(rows, 1);
    cr_expect_str_eq(json_string_value(json_object_get(second, "class")), "activation");
    cr_expect_str_eq(json_string_value(json_object_get(second, "node")), "A");
    cr_expect_eq(json_integer_value(json_object_get(second, "end_event")), 8);
    cr_expect(json_is_null(json_object_get(json_array_get(rows, 5), "run_id")));
    json_decref(root);
    cr_assert_eq(tb_run_cmd(cmd_lifetimes, out, errp, 3, "lifetimes", "--list", path), WS_EXIT_OK);
    char *text = tb_read_file(out);
    cr_expect_not_null(strstr(text, "unattributed"));
    cr_expect_not_null(strstr(text, "activation"));
    free(text);
}

/* At equal times an allocation comes before a free (as the live_bytes view orders them): a buffer
 * freed at the instant another is allocated still overlaps it. */
Test(lifetimes, allocation_before_free_at_equal_times)
{
    char path[256], err[512];
    sqlite3 *db = tb_create(path, sizeof path);
    tb_string(db, 1, "R");
    tb_range(db, 1, 1, NONE, 0, NONE, 0, 100);
    tb_alloc(db, 1, 10, 1, NONE, 10, 20, 1);
    tb_alloc(db, 2, 20, 1, NONE, 20, 30, 1);
    struct ws_analysis an;
    cr_assert_eq(ws_analysis_load(db, path, &an, err, sizeof err), 0, "%s", err);
    expect_lifetime(&an.allocs[0], WS_CLASS_WORKSPACE, 0, 0, 0, 0, 2, 0);
    expect_lifetime(&an.allocs[1], WS_CLASS_WORKSPACE, 0, 0, 1, 1, 3, 1);
    cr_expect_eq(an.peak_live_bytes, 30);
    cr_expect_eq(an.nodes[0].profile_bytes, 30);
    ws_analysis_free(&an);
    sqlite3_close(db);
}
