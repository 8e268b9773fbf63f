/*
 * Verification of Level-2 declarations: every verdict, per shape key and per device, ownership of
 * workspace allocated in nested ranges, roots with regions, tactics, --strict, estimates files,
 * the precedence of every pair of rules that can both match, and the boundary rules.  Expected
 * verdicts are derived by hand in the comments, or read from the verdict table of
 * docs/analysis.md.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "commands.h"
#include "trace_builder.h"
#include "verify.h"

TestSuite(verify, .fini = tb_cleanup);

static char trace[256], out[256], errp[256];

static void paths(void)
{
    tb_temp_path("out", out, sizeof out);
    tb_temp_path("err", errp, sizeof errp);
}

/* The verdict of (node, shape key text or NULL, device or -1, slot); NULL when there is no row. */
static char *verdict(const char *node, const char *key, int device, int slot)
{
    static char got[64];
    char sql[600], key_sql[96], dev_sql[16];
    if (key)
        snprintf(key_sql, sizeof key_sql, "'%s'", key);
    else
        snprintf(key_sql, sizeof key_sql, "NULL");
    if (device < 0)
        snprintf(dev_sql, sizeof dev_sql, "NULL");
    else
        snprintf(dev_sql, sizeof dev_sql, "%d", device);
    snprintf(sql, sizeof sql,
             "SELECT v.verdict FROM verifications v JOIN strings s ON s.id = v.node_name_id"
             " LEFT JOIN strings k ON k.id = v.shape_key_id WHERE s.value = '%s' AND k.value IS %s"
             " AND v.device IS %s AND v.slot = %d",
             node, key_sql, dev_sql, slot);
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_open_v2(trace, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    char *result = NULL;
    if (sqlite3_step(st) == SQLITE_ROW) {
        snprintf(got, sizeof got, "%s", (const char *)sqlite3_column_text(st, 0));
        result = got;
        cr_expect_eq(sqlite3_step(st), SQLITE_DONE, "one row for %s slot %d", node, slot);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return result;
}

static void expect_verdict(const char *node, const char *key, int device, int slot, const char *want)
{
    const char *got = verdict(node, key, device, slot);
    cr_expect(got && strcmp(got, want) == 0, "%s key %s device %d slot %d: got %s, want %s", node, key ? key : "-",
              device, slot, got ? got : "(no row)", want);
}

static int64_t rows_of(const char *node)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT COUNT(*) FROM verifications v JOIN strings s ON s.id = v.node_name_id WHERE s.value = '%s'", node);
    return tb_query(trace, sql);
}

static int64_t observed_of(const char *node, int slot)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT v.observed_bytes FROM verifications v JOIN strings s ON s.id = v.node_name_id"
             " WHERE s.value = '%s' AND v.slot = %d",
             node, slot);
    return tb_query(trace, sql);
}

static int verify(int strict)
{
    paths();
    return strict ? tb_run_cmd(cmd_verify, out, errp, 3, "verify", "--strict", trace)
                  : tb_run_cmd(cmd_verify, out, errp, 2, "verify", trace);
}

/* ---- the basic verdicts, one run, no shape key, device 0 ---- */

/*
 * Slot 0 of every node:
 *   ok       L1 max(90, 100) = 100, L2 80, observed max(60, 80) = 80 over two occurrences -> ok (11)
 *   over     L1 100, L2 150, observed 100                                                 -> over-reservation (1)
 *   under    L1 200, L2 100, observed 150                                                 -> under-declared (2)
 *   idle     L1 100, L2 100, never used                                                   -> idle-reservation (5)
 *   undecl   nothing declared, observed 64                                                -> undeclared (6)
 *   unavail  L2 50 without Level 1, observed 40                                           -> unavailable (9)
 *   empty    L1 0, L2 0, never used                                                       -> ok (8)
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
}

Test(verify, every_basic_verdict)
{
    setup_trace(1);
    cr_assert_eq(verify(0), WS_EXIT_OK, "findings only fail --strict");
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM verifications"), 7);
    expect_verdict("ok", NULL, 0, 0, "ok");
    expect_verdict("over", NULL, 0, 0, "over-reservation");
    expect_verdict("under", NULL, 0, 0, "under-declared");
    expect_verdict("idle", NULL, -1, 0, "idle-reservation"); /* allocated nothing: device unknown */
    expect_verdict("undecl", NULL, 0, 0, "undeclared");
    expect_verdict("unavail", NULL, 0, 0, "unavailable");
    expect_verdict("empty", NULL, -1, 0, "ok");
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
    cr_expect_eq(verify(1), WS_EXIT_FINDINGS);
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM verifications"), 7, "findings are still written");
    setup_trace(0);
    cr_expect_eq(verify(1), WS_EXIT_OK);
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM verifications WHERE verdict = 'ok'"), 2);
}

Test(verify, json_output_and_estimates_file)
{
    char est[256];
    setup_trace(1);
    paths();
    tb_temp_path("est.csv", est, sizeof est);
    tb_write_file(est, "unavail,0,50\n");
    cr_assert_eq(tb_run_cmd(cmd_verify, out, errp, 5, "verify", trace, "--json", "--estimates", est), WS_EXIT_OK);
    expect_verdict("unavail", NULL, 0, 0, "ok"); /* the file supplies the missing Level 1: 50 >= 40 */
    json_error_t jerr;
    json_t *root = json_load_file(out, 0, &jerr);
    cr_assert_not_null(root, "%s", jerr.text);
    cr_expect_eq(json_integer_value(json_object_get(root, "slot_count")), 7);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(root, "verdicts"), "ok")), 3);
    json_t *first = json_array_get(json_object_get(root, "slots"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(first, "node")), "ok");
    cr_expect_eq(json_integer_value(json_object_get(first, "level2_bytes")), 80);
    cr_expect_eq(json_integer_value(json_object_get(first, "device")), 0);
    cr_expect(json_is_null(json_object_get(first, "shape_key")));
    json_decref(root);
}

/* ---- a finding on one shape key is not hidden by another ---- */

/*
 * Two runs of "attn" with shape keys k1 and k2; Level 1 1000 for both.  In k1 the kernel declares
 * 500 and uses 800 (under-declared, rule 2); in k2 it declares 900 and uses 900 (ok, rule 11).
 * The maximum over keys (L2 900, use 900) would have said ok for both.  Without Level 1 the k1 row
 * is still under-declared (rule 2 comes before rule 9).
 */
Test(verify, a_finding_on_one_shape_key_is_not_hidden_by_another)
{
    for (int with_level1 = 0; with_level1 <= 1; with_level1++) {
        sqlite3 *db = tb_create(trace, sizeof trace);
        tb_string(db, 1, "attn");
        tb_string(db, 2, "k1");
        tb_string(db, 3, "k2");
        tb_run(db, 1, 2, 0, 100);
        tb_run(db, 2, 3, 200, 300);
        tb_range(db, 1, 1, NONE, 0, 1, 10, 20);
        tb_range(db, 2, 1, NONE, 0, 2, 210, 220);
        tb_alloc(db, 1, 800, 1, 1, 11, 12, 1);
        tb_alloc(db, 2, 900, 2, 2, 211, 212, 2);
        if (with_level1)
            tb_declare(db, 1, 1, 0, 1000, NONE);
        tb_declare(db, 2, 1, 0, 500, 1);
        tb_declare(db, 2, 1, 0, 900, 2);
        sqlite3_close(db);
        cr_assert_eq(verify(1), WS_EXIT_FINDINGS);
        expect_verdict("attn", "k1", 0, 0, "under-declared");
        expect_verdict("attn", "k2", 0, 0, with_level1 ? "ok" : "unavailable");
    }
}

/* ---- per device ---- */

/*
 * One occurrence of "mm" allocates 400 B on device 0 and 400 B on device 1.  Both devices' slot 0
 * (slots are numbered per device): with one declaration for any device of 400 (Level 1 400) both
 * rows are ok; merged, the device-1 allocation would have been slot 1, undeclared.  With
 * declarations naming the devices, 400 for device 0 and 300 for device 1, device 1 is
 * under-declared (400 > 300) and device 0 is ok.
 */
Test(verify, devices_are_verified_separately)
{
    for (int per_device = 0; per_device <= 1; per_device++) {
        sqlite3 *db = tb_create(trace, sizeof trace);
        tb_string(db, 1, "mm");
        tb_run(db, 1, NONE, 0, 100);
        tb_range(db, 1, 1, NONE, 0, 1, 10, 20);
        tb_alloc_on(db, 1, 400, 1, 1, 11, 15, 1, 0);
        tb_alloc_on(db, 2, 400, 1, 1, 12, 16, 1, 1);
        tb_declare(db, 1, 1, 0, 400, NONE);
        if (per_device) {
            tb_decl_details(db, tb_declare(db, 2, 1, 0, 400, 1), 0, NULL, NULL);
            tb_decl_details(db, tb_declare(db, 2, 1, 0, 300, 1), 1, NULL, NULL);
        } else {
            tb_declare(db, 2, 1, 0, 400, 1);
        }
        sqlite3_close(db);
        verify(0);
        cr_expect_eq(rows_of("mm"), 2);
        expect_verdict("mm", NULL, 0, 0, "ok");
        expect_verdict("mm", NULL, 1, 0, per_device ? "under-declared" : "ok");
    }
}

/* Two occurrences of "sometimes" with the same key: the first allocates 100 B on device 0, the
 * second nothing.  One context (device 0): one row, L1 = L2 = 100, used 100, ok; the
 * allocation-less occurrence adds no row of an unknown device. */
Test(verify, an_occurrence_without_allocations_adds_no_context)
{
    sqlite3 *db = tb_create(trace, sizeof trace);
    tb_string(db, 1, "sometimes");
    tb_run(db, 1, NONE, 0, 100);
    tb_range(db, 1, 1, NONE, 0, 1, 10, 20);
    tb_range(db, 2, 1, NONE, 0, 1, 30, 40);
    tb_range(db, 3, 1, NONE, 0, 1, 50, 60);
    tb_alloc(db, 1, 100, 2, 1, 31, 32, 2);
    tb_declare(db, 1, 1, 0, 100, NONE);
    tb_declare(db, 2, 1, 0, 100, 1);
    sqlite3_close(db);
    cr_expect_eq(verify(1), WS_EXIT_OK);
    cr_expect_eq(rows_of("sometimes"), 1);
    expect_verdict("sometimes", NULL, 0, 0, "ok");
}

/* ---- workspace allocated in a range nested inside the declaring node ---- */

/*
 * "attn" declares slot 0 (Level 1 and 2: 256 B); its kernel allocates 200 B inside a child range
 * "kernel" and frees it there (first variant) or in "attn" after the child ended (second).  The
 * allocation belongs to attn: one row, attn slot 0, 200 <= 256, ok; no row for "kernel".  Given to
 * the innermost range it would have been attn idle-reservation and kernel undeclared.
 */
Test(verify, workspace_of_a_nested_range_belongs_to_the_declaring_node)
{
    for (int freed_in_parent = 0; freed_in_parent <= 1; freed_in_parent++) {
        sqlite3 *db = tb_create(trace, sizeof trace);
        tb_string(db, 1, "attn");
        tb_string(db, 2, "kernel");
        tb_run(db, 1, NONE, 0, 100);
        tb_range(db, 1, 1, NONE, 0, 1, 10, 50);
        tb_range(db, 2, 2, 1, 1, 1, 20, 30);
        tb_alloc(db, 1, 200, 2, 1, 21, freed_in_parent ? 40 : 25, freed_in_parent ? 1 : 2);
        tb_declare(db, 1, 1, 0, 256, NONE);
        tb_declare(db, 2, 1, 0, 256, 1);
        sqlite3_close(db);
        cr_expect_eq(verify(1), WS_EXIT_OK);
        expect_verdict("attn", NULL, 0, 0, "ok");
        cr_expect_eq(rows_of("kernel"), 0);
        cr_assert_eq(tb_run_cmd(cmd_lifetimes, out, errp, 2, "lifetimes", trace), WS_EXIT_OK);
        cr_expect_eq(tb_query(trace, "SELECT class = 'workspace' AND node_name_id = 1 FROM lifetimes"), 1,
                     "the lifetimes table says so too");
    }
}

/* ---- one aligned root with named regions ---- */

/*
 * PackedAttention: one 256-byte-aligned root of 1536 B in slot 0, a projection region [0, 600)
 * and an attention region [768, 1536) (768 = 600 rounded up to 256); the kernel allocates the two
 * buffers, 600 then 768.  Best fit: 600 -> projection, 768 -> attention; footprint
 * max(0 + 600, 768 + 768) = 1536 <= 1536: one row, ok, no slot 1.  (Matched by allocation order,
 * the attention buffer would have been slot 1, undeclared.)
 */
static void build_packed_attention(int64_t attention_bytes, int whole_root)
{
    sqlite3 *db = tb_create(trace, sizeof trace);
    tb_string(db, 1, "pa");
    tb_run(db, 1, NONE, 0, 100);
    tb_range(db, 1, 1, NONE, 0, 1, 10, 50);
    if (whole_root) {
        tb_alloc(db, 1, 1536, 1, 1, 11, 40, 1);
    } else {
        tb_alloc(db, 1, 600, 1, 1, 11, 40, 1);
        tb_alloc(db, 2, attention_bytes, 1, 1, 12, 41, 1);
    }
    tb_declare(db, 1, 1, 0, 1536, NONE);
    int64_t d = tb_declare(db, 2, 1, 0, 1536, 1);
    tb_region(db, d, 0, "projection", 0, 600);
    tb_region(db, d, 1, "attention", 768, 768);
    sqlite3_close(db);
}

Test(verify, packed_attention_root_with_two_allocations)
{
    build_packed_attention(768, 0);
    cr_expect_eq(verify(1), WS_EXIT_OK);
    cr_expect_eq(rows_of("pa"), 1);
    expect_verdict("pa", NULL, 0, 0, "ok");
    cr_expect_eq(observed_of("pa", 0), 1536);
    cr_expect_eq(tb_query(trace, "SELECT region_overflow FROM verifications"), 0);
}

/* The attention buffer grows to 800 B: it fits no open region (projection taken, 800 > 768), so it
 * takes the first open one, attention, and overflows it: footprint 768 + 800 = 1568 > 1536,
 * under-declared (rule 2), region_overflow 1. */
Test(verify, an_allocation_larger_than_its_region_is_under_declared)
{
    build_packed_attention(800, 0);
    cr_expect_eq(verify(1), WS_EXIT_FINDINGS);
    expect_verdict("pa", NULL, 0, 0, "under-declared");
    cr_expect_eq(observed_of("pa", 0), 1568);
    cr_expect_eq(tb_query(trace, "SELECT region_overflow FROM verifications"), 1);
}

/* A kernel that allocates the whole root once (as wsk's attention does) matches the root: ok. */
Test(verify, one_allocation_of_the_whole_root_matches_the_root)
{
    build_packed_attention(0, 1);
    cr_expect_eq(verify(1), WS_EXIT_OK);
    expect_verdict("pa", NULL, 0, 0, "ok");
    cr_expect_eq(observed_of("pa", 0), 1536);
}

/* The matching rule itself, on targets without a trace.  Targets: slot 0 regions A [0, 600) and
 * B [768, 1536) then its root (1536); slot 1 root (100).  Allocations in time order 768, 600, 90,
 * 50: 768 -> smallest fitting open target B (768 <= 768); 600 -> A; 90 -> slot 1 (100); 50 -> no
 * open target left (slot 0's root closed by its regions), extra. */
Test(verify, matching_is_best_fit_in_time_order)
{
    struct ws_target t[] = {{0, 0, 600, 0}, {0, 768, 768, 0}, {0, 0, 1536, 1}, {1, 0, 100, 1}};
    int64_t bytes[] = {768, 600, 90, 50};
    int taken[4];
    struct ws_match m[4];
    ws_match(t, 4, bytes, 4, taken, m);
    cr_expect_eq(m[0].target, 1);
    cr_expect_eq(m[1].target, 0);
    cr_expect_eq(m[2].target, 3);
    cr_expect_eq(m[3].target, -1);
    for (int i = 0; i < 4; i++)
        cr_expect_eq(m[i].overflow, 0, "allocation %d", i);
    /* The smallest, not the first, target that fits: 90 -> slot 1 (100 < 600, 768, 1536), then
     * 600 -> A (600 < 768).  First fit would have given 90 -> A and 600 -> B. */
    int64_t small_first[] = {90, 600};
    ws_match(t, 4, small_first, 2, taken, m);
    cr_expect_eq(m[0].target, 3);
    cr_expect_eq(m[1].target, 0);
    /* 2000 fits nothing: it takes the first open target (A) and overflows it */
    int64_t big[] = {2000};
    ws_match(t, 4, big, 1, taken, m);
    cr_expect_eq(m[0].target, 0);
    cr_expect_eq(m[0].overflow, 1);
}

/* ---- use above a Level-1-only reservation ---- */

/* "l1only": Level 1 500, no Level 2, uses 800 -> exceeds-reservation (rule 7), a finding; with
 * use 400 (within the reservation) the declaration is merely missing -> unavailable (rule 10). */
Test(verify, use_above_a_level1_only_reservation_is_a_finding)
{
    for (int above = 0; above <= 1; above++) {
        sqlite3 *db = tb_create(trace, sizeof trace);
        tb_string(db, 1, "l1only");
        tb_run(db, 1, NONE, 0, 100);
        tb_range(db, 1, 1, NONE, 0, 1, 10, 20);
        tb_alloc(db, 1, above ? 800 : 400, 1, 1, 11, 12, 1);
        tb_declare(db, 1, 1, 0, 500, NONE);
        sqlite3_close(db);
        cr_expect_eq(verify(1), WS_EXIT_FINDINGS);
        expect_verdict("l1only", NULL, 0, 0, above ? "exceeds-reservation" : "unavailable");
    }
}

/* ---- tactic-aware declarations ---- */

/*
 *   gemv_ok    cached-free, L2 0, L1 0, never used                -> ok (rule 8)
 *   gemv_bad   cached-free, L2 4096, L1 4096, never used          -> tactic-overdeclared (rule 3 before 5)
 *   miss_ok    miss, L2 = L1 = 8192, never used                   -> ok (rule 5 exempts misses; rule 11)
 *   miss_bad   miss, L1 8192, L2 4096, uses 4000                  -> miss-underdeclared (rule 4)
 *   cached     cached, L1 8192, L2 4096, uses 4096                -> ok (rule 11)
 */
Test(verify, tactics_cached_free_declares_nothing_and_a_miss_stays_conservative)
{
    static const struct {
        const char *name, *kind;
        int64_t l1, l2, used;
    } cases[] = {
        {"gemv_ok", "cached-free", 0, 0, -1},   {"gemv_bad", "cached-free", 4096, 4096, -1},
        {"miss_ok", "miss", 8192, 8192, -1},    {"miss_bad", "miss", 8192, 4096, 4000},
        {"cached", "cached", 8192, 4096, 4096},
    };
    sqlite3 *db = tb_create(trace, sizeof trace);
    tb_run(db, 1, NONE, 0, 1000);
    for (int i = 0; i < 5; i++)
        tb_string(db, i + 1, cases[i].name);
    for (int i = 0; i < 5; i++) {
        tb_range(db, i + 1, i + 1, NONE, 0, 1, 100 * i + 10, 100 * i + 50);
        if (cases[i].used >= 0)
            tb_alloc(db, i + 1, cases[i].used, i + 1, 1, 100 * i + 11, 100 * i + 20, i + 1);
        tb_declare(db, 1, i + 1, 0, cases[i].l1, NONE);
        tb_decl_details(db, tb_declare(db, 2, i + 1, 0, cases[i].l2, 1), 0, "gemv", cases[i].kind);
    }
    sqlite3_close(db);
    verify(0);
    expect_verdict("gemv_ok", NULL, -1, 0, "ok");
    expect_verdict("gemv_bad", NULL, -1, 0, "tactic-overdeclared");
    expect_verdict("miss_ok", NULL, -1, 0, "ok");
    expect_verdict("miss_bad", NULL, 0, 0, "miss-underdeclared");
    expect_verdict("cached", NULL, 0, 0, "ok");
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM verifications WHERE tactic = 'gemv'"), 5);
}

/* ---- boundaries ---- */

/*
 * Zero-size requests hold nothing: "zero" declares nothing (L1 0, L2 0) and requests 0 bytes ->
 * one row, never used, ok (rule 8); "bare" declares nothing at all and requests 0 bytes -> no row
 * (an undeclared 0-byte use would be nonsense).
 */
Test(verify, zero_size_requests_take_no_slot)
{
    sqlite3 *db = tb_create(trace, sizeof trace);
    tb_string(db, 1, "zero");
    tb_string(db, 2, "bare");
    tb_run(db, 1, NONE, 0, 100);
    tb_range(db, 1, 1, NONE, 0, 1, 10, 20);
    tb_range(db, 2, 2, NONE, 0, 1, 30, 40);
    tb_alloc(db, 1, 0, 1, 1, 11, 12, 1);
    tb_alloc(db, 2, 0, 2, 1, 31, 32, 2);
    tb_declare(db, 1, 1, 0, 0, NONE);
    tb_declare(db, 2, 1, 0, 0, 1);
    sqlite3_close(db);
    cr_expect_eq(verify(1), WS_EXIT_OK);
    expect_verdict("zero", NULL, 0, 0, "ok");
    cr_expect_eq(observed_of("zero", 0), NONE);
    cr_expect_eq(rows_of("bare"), 0);
    cr_assert_eq(tb_run_cmd(cmd_lifetimes, out, errp, 2, "lifetimes", trace), WS_EXIT_OK);
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM lifetimes WHERE slot IS NULL AND class = 'workspace'"), 2);
}

/* A node that never ran but was declared is verified in a context of its own: Level 2 100 without
 * Level 1, never used -> idle-reservation (rule 5 before rule 9). */
Test(verify, a_declared_node_that_never_ran_is_verified)
{
    sqlite3 *db = tb_create(trace, sizeof trace);
    tb_string(db, 1, "ghost");
    tb_string(db, 2, "other");
    tb_run(db, 1, NONE, 0, 100);
    tb_range(db, 1, 2, NONE, 0, 1, 10, 20);
    tb_declare(db, 2, 1, 0, 100, NONE);
    sqlite3_close(db);
    verify(0);
    expect_verdict("ghost", NULL, -1, 0, "idle-reservation");
}

/* ---- the rule table: precedence, from docs/analysis.md ---- */

/* The verdict of rule n in the table of docs/analysis.md ("| n | condition | `verdict` |"). */
static void docs_verdicts(char verdicts[16][32], size_t *count)
{
    char path[512];
    snprintf(path, sizeof path, "%s/docs/analysis.md", WS_SOURCE_DIR);
    char *text = tb_read_file(path);
    char *table = strstr(text, "| # | condition | verdict |");
    cr_assert_not_null(table, "the verdict table of docs/analysis.md");
    *count = 0;
    for (char *line = strchr(table, '\n'); line && line[1] == '|'; line = strchr(line + 1, '\n')) {
        int n = 0;
        char name[32];
        if (sscanf(line + 1, "| %d |", &n) != 1)
            continue;
        char *tick = strchr(line + 1, '`');
        char *eol = strchr(line + 1, '\n');
        /* the verdict is the last `...` of the row */
        char *last = NULL;
        for (char *p = tick; p && (!eol || p < eol); p = strchr(p + 1, '`'))
            last = p;
        cr_assert(last && last != tick, "row %d", n);
        char *open = last - 1;
        while (open > line && *open != '`')
            open--;
        size_t len = (size_t)(last - open - 1);
        cr_assert_lt(len, sizeof name);
        memcpy(name, open + 1, len);
        name[len] = '\0';
        cr_assert_eq(n, (int)*count + 1, "rules are numbered 1, 2, ...");
        snprintf(verdicts[(*count)++], 32, "%s", name);
    }
    free(text);
}

Test(verify, the_code_has_the_rules_of_the_docs)
{
    char verdicts[16][32];
    size_t n;
    docs_verdicts(verdicts, &n);
    cr_assert_eq(n, ws_verdict_rule_count());
    for (size_t r = 1; r <= n; r++)
        cr_expect_str_eq(ws_verdict_name(ws_verdict_rule_verdict(r)), verdicts[r - 1], "rule %zu", r);
}

#define T_NONE 0 /* WS_TACTIC_NONE */

/*
 * Every pair of rules that can both match, with a case that matches both (checked), and the
 * verdict of the earlier rule as the docs' table gives it.  Inputs: L1, L2, observed, overflow,
 * tactic.  Pairs not listed cannot both match (they need L2 known and absent, used and unused,
 * L2 = 0 and > 0, different tactics, or L1 known and absent).
 */
Test(verify, every_pair_of_rules_that_can_both_match)
{
    static const struct {
        size_t a, b;
        struct ws_verdict_input in;
    } pairs[] = {
        {1, 2, {100, 150, 200, 0, T_NONE}},
        {1, 3, {100, 150, -1, 0, WS_TACTIC_CACHED_FREE}},
        {1, 5, {100, 150, -1, 0, T_NONE}},
        {1, 11, {100, 150, 120, 0, T_NONE}},
        {2, 3, {100, 50, 80, 0, WS_TACTIC_CACHED_FREE}},
        {2, 4, {100, 50, 80, 0, WS_TACTIC_MISS}},
        {2, 9, {-1, 50, 80, 0, T_NONE}},
        {2, 11, {100, 100, 80, 1, T_NONE}},
        {3, 5, {100, 50, -1, 0, WS_TACTIC_CACHED_FREE}},
        {3, 9, {-1, 50, -1, 0, WS_TACTIC_CACHED_FREE}},
        {3, 11, {100, 50, 40, 0, WS_TACTIC_CACHED_FREE}},
        {4, 8, {100, 0, -1, 0, WS_TACTIC_MISS}},
        {4, 11, {100, 50, 40, 0, WS_TACTIC_MISS}},
        {5, 9, {-1, 50, -1, 0, T_NONE}},
        {5, 11, {100, 50, -1, 0, T_NONE}},
        {6, 10, {-1, -1, 40, 0, T_NONE}},
        {6, 11, {-1, -1, 40, 0, T_NONE}},
        {7, 10, {100, -1, 150, 0, T_NONE}},
        {7, 11, {100, -1, 150, 0, T_NONE}},
        {8, 9, {-1, 0, -1, 0, T_NONE}},
        {8, 11, {100, 0, -1, 0, T_NONE}},
        {9, 11, {-1, 50, 40, 0, T_NONE}},
        {10, 11, {100, -1, 50, 0, T_NONE}},
    };
    char verdicts[16][32];
    size_t n;
    docs_verdicts(verdicts, &n);
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        const struct ws_verdict_input *in = &pairs[i].in;
        cr_assert(ws_verdict_rule_matches(pairs[i].a, in), "pair %zu: rule %zu matches", i, pairs[i].a);
        cr_assert(ws_verdict_rule_matches(pairs[i].b, in), "pair %zu: rule %zu matches", i, pairs[i].b);
        for (size_t r = 1; r < pairs[i].a; r++)
            cr_assert(!ws_verdict_rule_matches(r, in), "pair %zu: no earlier rule %zu", i, r);
        cr_expect_str_eq(ws_verdict_name(ws_verdict_of(in)), verdicts[pairs[i].a - 1], "rules %zu and %zu", pairs[i].a,
                         pairs[i].b);
    }
}

/* A few single rules with figures derived by hand (rule number in the comment). */
Test(verify, verdict_rules_by_hand)
{
    struct ws_verdict_input ok = {100, 80, 80, 0, T_NONE};         /* 11 */
    struct ws_verdict_input empty = {-1, 0, -1, 0, T_NONE};        /* 8: empty outputs declare nothing */
    struct ws_verdict_input l1_zero = {0, -1, -1, 0, T_NONE};      /* 11: nothing reserved, nothing used */
    struct ws_verdict_input l1_zero_used = {0, -1, 10, 0, T_NONE}; /* 7: 10 > 0 */
    struct ws_verdict_input missing = {100, -1, -1, 0, T_NONE};    /* 10 */
    struct ws_verdict_input exact = {100, 100, 100, 0, T_NONE};    /* 11: use = declaration */
    struct ws_verdict_input one_more = {100, 100, 101, 0, T_NONE}; /* 2 */
    cr_expect_eq(ws_verdict_of(&ok), WS_VERDICT_OK);
    cr_expect_eq(ws_verdict_of(&empty), WS_VERDICT_OK);
    cr_expect_eq(ws_verdict_of(&l1_zero), WS_VERDICT_OK);
    cr_expect_eq(ws_verdict_of(&l1_zero_used), WS_VERDICT_EXCEEDS_RESERVATION);
    cr_expect_eq(ws_verdict_of(&missing), WS_VERDICT_UNAVAILABLE);
    cr_expect_eq(ws_verdict_of(&exact), WS_VERDICT_OK);
    cr_expect_eq(ws_verdict_of(&one_more), WS_VERDICT_UNDER_DECLARED);
}
