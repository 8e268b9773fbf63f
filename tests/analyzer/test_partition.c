/*
 * wstrace partition on a constructed trace: exact per-layer costs, budgets on both sides of a layer
 * boundary, ONNX Runtime's node-level rule on the same trace, every coverage diagnostic, and bad
 * input.  Every expected figure is derived by hand in the comments from the rows the test inserts.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis.h"
#include "commands.h"
#include "partition.h"
#include "trace_builder.h"

TestSuite(partition, .fini = tb_cleanup);

/*
 * One run [100, 1000].  Nodes, in the order they run:
 *   r2 /model/embed/Gather [100,150], r3 L0 attn [200,250], r4 L0 mlp [300,350],
 *   r5 L1 attn [400,450], r6 L1 mlp [500,550], r7 /model/head/MatMul [600,650];
 *   r1 /session/init [0,50] outside the run (it allocates the weights, as a session start does).
 * Persistent (allocated in r1 at 10, never freed), named after the node that reads them
 * (allocation_names): embed 1000, L0 attn 4000, L0 mlp 6000, L1 attn 4000, L1 mlp 6000, head 2000;
 * a7: 500 B unnamed: it stays with /session/init, outside every layer.
 * Activations: a8 100 B embed -> L0 attn; a9 200 B L0 attn -> L0 mlp [220,330); a10 300 B L0 mlp ->
 * L1 attn [320,430); a11 200 B L1 attn -> L1 mlp [420,530); a12 300 B L1 mlp -> head [520,630).
 * Workspace: L0 mlp 64 B [310,340) then 32 B [341,345) (requested 96, peak 64); L1 attn 128 B;
 * head 50 B.
 *
 * Costs (spread):
 *   layer 0: persistent 4000 + 6000 = 10000; activations a9, a10 live together in [320,330):
 *            peak 500; workspace: ORT's ledger charges L0 mlp its requested 96 -> 96.  Own 10596.
 *   layer 1: 10000 + peak 500 (a11, a12 in [520,530)) + 128 = 10628.
 *   outside: persistent 1000 + 2000 + 500 = 3500, activation 100, workspace 50: 3650, shares
 *            1825 and 1825.
 *   cost 0 = 12421, cost 1 = 12453; cumulative 12421, 24874.
 * ORT's charges (inputs = initializers allocated outside runs, dynamic = outputs made in the run,
 * temp = workspace requested): embed 1000+100 = 1100, L0 attn 4000+200 = 4200, L0 mlp
 * 6000+300+96 = 6396, L1 attn 4000+200+128 = 4328, L1 mlp 6000+300 = 6300, head 2000+0+50 = 2050;
 * running totals 1100, 5300, 11696, 16024, 22324, 24374.
 */
static const char *const NAMES[] = {"/model/embed/Gather",        "/model/layers.0/attn/MatMul",
                                    "/model/layers.0/mlp/MatMul", "/model/layers.1/attn/MatMul",
                                    "/model/layers.1/mlp/MatMul", "/model/head/MatMul"};

static void build_model(sqlite3 *db)
{
    static const int64_t weights[] = {1000, 4000, 6000, 4000, 6000, 2000};
    for (int i = 0; i < 6; i++)
        tb_string(db, i + 1, NAMES[i]);
    tb_string(db, 10, "/session/init");
    tb_run(db, 1, NONE, 100, 1000);
    tb_range(db, 1, 10, NONE, 0, NONE, 0, 50);
    for (int i = 0; i < 6; i++)
        tb_range(db, i + 2, i + 1, NONE, 0, 1, 100 * (i + 1), 100 * (i + 1) + 50);
    for (int i = 0; i < 6; i++) {
        char sql[128];
        tb_alloc(db, i + 1, weights[i], 1, NONE, 10, NONE, NONE);
        snprintf(sql, sizeof sql, "INSERT INTO allocation_names(allocation_id, name_id, category) VALUES (%d, %d, 0)",
                 i + 1, i + 1);
        tb_sql(db, sql);
    }
    tb_alloc(db, 7, 500, 1, NONE, 11, NONE, NONE);
    tb_alloc(db, 8, 100, 2, 1, 120, 240, 3);
    tb_alloc(db, 9, 200, 3, 1, 220, 330, 4);
    tb_alloc(db, 10, 300, 4, 1, 320, 430, 5);
    tb_alloc(db, 11, 200, 5, 1, 420, 530, 6);
    tb_alloc(db, 12, 300, 6, 1, 520, 630, 7);
    tb_alloc(db, 13, 50, 7, 1, 620, 640, 7);
    tb_alloc(db, 14, 64, 4, 1, 310, 340, 4);
    tb_alloc(db, 15, 32, 4, 1, 341, 345, 4);
    tb_alloc(db, 16, 128, 5, 1, 410, 440, 5);
}

static char trace[512];

static void make_trace(void)
{
    sqlite3 *db = tb_create(trace, sizeof trace);
    build_model(db);
    sqlite3_close(db);
}

struct fixture {
    sqlite3 *db;
    struct ws_analysis an;
    struct ws_part_model m;
    struct ws_part_costs c;
};

static void open_model(struct fixture *f, const struct ws_estimates *est, const struct ws_part_nodelist *list)
{
    char err[512];
    cr_assert_eq(ws_analysis_open(trace, 0, &f->db, &f->an, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ws_part_model_build(f->db, &f->an, est, list, "layers.", &f->m, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ws_part_costs_compute(&f->m, (struct ws_part_view){1, 0}, &f->c, err, sizeof err), 0, "%s", err);
}

static void close_model(struct fixture *f)
{
    ws_part_costs_free(&f->c);
    ws_part_model_free(&f->m);
    ws_analysis_free(&f->an);
    sqlite3_close(f->db);
}

static void cut(struct fixture *f, int64_t budget, enum ws_part_outside o, struct ws_part_result *r)
{
    char err[256];
    cr_assert_eq(ws_part_cut(&f->m, &f->c, budget, o, "gpu", r, err, sizeof err), 0, "%s", err);
}

Test(partition, exact_layer_costs)
{
    struct fixture f;
    struct ws_part_result r;
    make_trace();
    open_model(&f, NULL, NULL);
    cr_assert_eq(f.m.nlayers, 2);
    cr_expect_str_eq(f.m.layers[0].name, "/model/layers.0");
    cr_expect_str_eq(f.m.layers[1].name, "/model/layers.1");
    cr_expect_eq(f.m.layers[0].terminator, '/');
    cr_expect_eq(f.m.layers[0].nodes, 2);
    cr_expect_eq(f.m.named_allocations, 6);
    const int64_t want[2][3] = {{10000, 500, 96}, {10000, 500, 128}};
    for (int l = 0; l < 2; l++) {
        cr_expect_eq(f.c.layers[l].persistent, want[l][0], "layer %d persistent %lld", l,
                     (long long)f.c.layers[l].persistent);
        cr_expect_eq(f.c.layers[l].activation, want[l][1], "layer %d activation", l);
        cr_expect_eq(f.c.layers[l].workspace, want[l][2], "layer %d workspace", l);
    }
    cr_expect_eq(f.c.outside.persistent, 3500);
    cr_expect_eq(f.c.outside.activation, 100);
    cr_expect_eq(f.c.outside.workspace, 50);
    cr_expect_eq(f.c.outside_total, 3650);
    cut(&f, 1 << 30, WS_PART_SPREAD, &r);
    cr_expect_eq(r.layers[0].share, 1825);
    cr_expect_eq(r.layers[1].share, 1825);
    cr_expect_eq(r.layers[0].cost, 12421);
    cr_expect_eq(r.layers[1].cost, 12453);
    cr_expect_eq(r.layers[1].cumulative, 24874);
    cr_expect_eq(r.total, 24874);
    /* ORT's charges by layer: 4200 + 6396 and 4328 + 6300 */
    cr_expect_eq(r.layers[0].ort_cost, 10596);
    cr_expect_eq(r.layers[1].ort_cost, 10628);
    ws_part_result_free(&r);
    close_model(&f);
}

/* 12421 is the boundary after layer 0, 24874 after layer 1: one byte less fits one layer fewer. */
Test(partition, budgets_on_both_sides_of_a_layer_boundary)
{
    struct fixture f;
    make_trace();
    open_model(&f, NULL, NULL);
    const struct {
        int64_t budget;
        size_t fit;
        int64_t used;
    } cases[] = {{12420, 0, 0}, {12421, 1, 12421}, {24873, 1, 12421}, {24874, 2, 24874}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct ws_part_result r;
        cut(&f, cases[i].budget, WS_PART_SPREAD, &r);
        cr_expect_eq(r.layers_fit, cases[i].fit, "budget %lld: %zu layers", (long long)cases[i].budget, r.layers_fit);
        cr_expect_eq(r.used, cases[i].used, "budget %lld", (long long)cases[i].budget);
        cr_expect_eq(r.left, cases[i].budget - cases[i].used);
        ws_part_result_free(&r);
    }
    /* the parts outside every layer on the device: charged 3650 first; layer 0 then costs 10596
     * (no share): boundary 14246.  On the host: not charged, boundary 10596. */
    struct ws_part_result r;
    cut(&f, 14245, WS_PART_DEVICE, &r);
    cr_expect_eq(r.layers_fit, 0);
    cr_expect_eq(r.fixed, 3650);
    ws_part_result_free(&r);
    cut(&f, 14246, WS_PART_DEVICE, &r);
    cr_expect_eq(r.layers_fit, 1);
    ws_part_result_free(&r);
    cut(&f, 3649, WS_PART_DEVICE, &r); /* the fixed part alone does not fit */
    cr_expect_eq(r.layers_fit, 0);
    cr_expect_eq(r.used, 0);
    ws_part_result_free(&r);
    cut(&f, 10596, WS_PART_HOST, &r);
    cr_expect_eq(r.layers_fit, 1);
    cr_expect_eq(r.left, 0);
    ws_part_result_free(&r);
    close_model(&f);
}

/* ORT's threshold is the budget in whole KiB.  16384 B: running totals 1100, 5300, 11696, 16024 fit,
 * 22324 does not: 4 of 6 nodes, stop at L1 mlp, layer 0 whole, layer 1 split (1 of 2).  16383 B is
 * 15 KiB = 15360: 16024 no longer fits, 3 nodes.  The layer-atomic answer is 1 layer in both. */
Test(partition, ort_node_level_rule_on_the_same_trace)
{
    struct fixture f;
    struct ws_part_result r;
    make_trace();
    open_model(&f, NULL, NULL);
    cut(&f, 16384, WS_PART_SPREAD, &r);
    cr_expect_eq(r.ort_threshold, 16384);
    cr_expect_eq(r.ort_nodes, 6);
    cr_expect_eq(r.ort_accepted, 4);
    cr_expect_eq(r.ort_consumed, 16024);
    cr_assert_geq(r.ort_first_rejected, 0);
    cr_expect_str_eq(f.m.nodes[r.ort_first_rejected].name, "/model/layers.1/mlp/MatMul");
    cr_expect_eq(r.ort_layers_whole, 1);
    cr_expect_eq(r.layers[1].ort_accepted, 1);
    cr_expect_eq(r.layers[1].ort_nodes, 2);
    cr_expect_eq(r.layers_fit, 1);
    cr_expect_eq(r.ort_before_layers, 1100); /* the embedding runs first: charged before any layer */
    ws_part_result_free(&r);
    cut(&f, 16383, WS_PART_SPREAD, &r);
    cr_expect_eq(r.ort_threshold, 15360);
    cr_expect_eq(r.ort_accepted, 3);
    cr_expect_str_eq(f.m.nodes[r.ort_first_rejected].name, "/model/layers.1/attn/MatMul");
    ws_part_result_free(&r);
    /* everything: 24374 <= 24 KiB = 24576 */
    cut(&f, 24576, WS_PART_SPREAD, &r);
    cr_expect_eq(r.ort_accepted, 6);
    cr_expect_eq(r.ort_first_rejected, -1);
    cr_expect_eq(r.ort_layers_whole, 2);
    ws_part_result_free(&r);
    close_model(&f);
    /* the rule itself: a refused node stops everything after it, however small */
    const int64_t charges[] = {10, 50, 1, 1};
    int64_t used;
    cr_expect_eq(ws_part_ort_accepts(charges, 4, 59, &used), 1);
    cr_expect_eq(used, 10);
    cr_expect_eq(ws_part_ort_accepts(charges, 4, 60, &used), 2);
    cr_expect_eq(ws_part_ort_accepts(charges, 4, 62, &used), 4);
}

Test(partition, ready_values)
{
    struct fixture f;
    struct ws_part_result r;
    make_trace();
    open_model(&f, NULL, NULL);
    cut(&f, 12421, WS_PART_SPREAD, &r);
    cr_expect_str_eq(r.name_rule, "gpu(/model/layers.0/);cpu(/model/layers.1/)");
    cr_expect_eq(r.name_rule_exact, 1);
    cr_expect_str_eq(r.resource_settings, "12,node_stats.csv"); /* 12421 B = 12 whole KiB */
    ws_part_result_free(&r);
    cut(&f, 14246, WS_PART_DEVICE, &r);
    cr_expect_str_eq(
        r.name_rule,
        "gpu(/model/layers.0/,/model/embed/Gather,/model/head/MatMul,/session/init);cpu(/model/layers.1/)");
    cr_expect_eq(r.name_rule_exact, 1);
    ws_part_result_free(&r);
    cut(&f, 100000, WS_PART_HOST, &r);
    cr_expect_str_eq(
        r.name_rule,
        "gpu(/model/layers.0/,/model/layers.1/);cpu(/model/embed/Gather,/model/head/MatMul,/session/init)");
    ws_part_result_free(&r);
    close_model(&f);
}

/* ---- the layer number ---- */

Test(partition, layer_numbers_in_names)
{
    size_t len;
    uint32_t index;
    char term;
    cr_expect(ws_part_layer_of("/model/layers.12/attn/MatMul", "layers.", &len, &index, &term));
    cr_expect_eq(len, strlen("/model/layers.12"));
    cr_expect_eq(index, 12);
    cr_expect_eq(term, '/');
    cr_expect(ws_part_layer_of("model.layers.3.mlp", "layers.", &len, &index, &term));
    cr_expect_eq(term, '.');
    cr_expect(ws_part_layer_of("blk.7", "blk.", &len, &index, &term));
    cr_expect_eq(term, '\0');
    cr_expect_not(ws_part_layer_of("/model/sublayers.3/x", "layers.", &len, &index, &term));
    cr_expect_not(ws_part_layer_of("/model/layers.3a/x", "layers.", &len, &index, &term));
    cr_expect_not(ws_part_layer_of("/model/layers.x/MatMul_1", "layers.", &len, &index, &term));
    /* the first qualifying place wins: "sublayers.1" is skipped, "layers.2" counts */
    cr_expect(ws_part_layer_of("sublayers.1/layers.2/x", "layers.", &len, &index, &term));
    cr_expect_eq(index, 2);
}

/* ---- placement rules ---- */

Test(partition, rules_parse_as_ort_parses_them)
{
    struct ws_part_rules r;
    char err[256];
    cr_assert_eq(ws_part_rules_parse(" cpu( embed_tokens ) ;; gpu(layers., ,lm_head);", &r, err, sizeof err), 0, "%s",
                 err);
    cr_assert_eq(r.n, 3);
    cr_expect_str_eq(r.v[0].device, "cpu");
    cr_expect_str_eq(r.v[0].pattern, "embed_tokens");
    cr_expect_str_eq(r.v[1].pattern, "layers.");
    cr_expect_str_eq(r.v[2].pattern, "lm_head");
    cr_expect_eq(r.v[2].entry, 1);
    /* the longest pattern a name holds, the first of equal length */
    cr_expect_eq(ws_part_rules_match(&r, "/model/layers.0/lm_head"), 1);      /* 7 and 7 chars: the first given */
    cr_expect_eq(ws_part_rules_match(&r, "/model/layers.0/embed_tokens"), 0); /* 12 chars beat 7 */
    cr_expect_eq(ws_part_rules_match(&r, "/model/layers.0/x"), 1);
    cr_expect_eq(ws_part_rules_match(&r, "/model/norm"), -1);
    cr_expect_null(r.ignored);
    ws_part_rules_free(&r);
    cr_assert_eq(ws_part_rules_parse("gpu(ab,cd)x", &r, err, sizeof err), 0);
    cr_expect_str_eq(r.v[0].pattern, "ab");
    cr_expect_eq(ws_part_rules_match(&r, "abcd"), 0);
    cr_expect_str_eq(r.ignored, "x");
    ws_part_rules_free(&r);
    const char *const bad[] = {"gpu(layers.", "gpu layers.)", "gpu)a(", "(a)", "gpu(=a)", "gpu(a);cpu(a)", "", "gpu()"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect_neq(ws_part_rules_parse(bad[i], &r, err, sizeof err), 0, "'%s' was accepted", bad[i]);
        cr_expect_null(strchr(err, '\n'), "'%s': more than one line", bad[i]);
    }
}

/*
 * Rules over the 7 nodes (six that ran and /session/init):
 *   gpu "layers."              holds in the 4 layer nodes; assigns 3 (L1 mlp takes the longer one)
 *   gpu "head"                 1, 1
 *   cpu "embed"                1, 1
 *   cpu "model.layers."        0: the exporter's other scheme, a stale rule
 *   cpu "/model/layers.1/mlp"  1, 1: it claims L1 mlp, which "layers." (gpu) holds too: a conflict
 * /session/init: matched by none.
 */
static const char RULES[] = "gpu(layers.,head);cpu(embed,model.layers.,/model/layers.1/mlp)";

Test(partition, rule_coverage)
{
    struct fixture f;
    struct ws_part_rules r;
    struct ws_part_coverage c;
    char err[256];
    make_trace();
    open_model(&f, NULL, NULL);
    cr_assert_eq(ws_part_rules_parse(RULES, &r, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ws_part_coverage_compute(&f.m, &r, &c, err, sizeof err), 0, "%s", err);
    const size_t matched[] = {4, 1, 1, 0, 1}, assigned[] = {3, 1, 1, 0, 1}, layers[] = {2, 0, 0, 0, 1};
    for (size_t i = 0; i < 5; i++) {
        cr_expect_eq(c.rules[i].matched, matched[i], "rule %zu matched %zu", i, c.rules[i].matched);
        cr_expect_eq(c.rules[i].assigned, assigned[i], "rule %zu assigned", i);
        cr_expect_eq(c.rules[i].layers, layers[i], "rule %zu layers", i);
    }
    cr_expect_eq(c.rules[3].verdict, WS_RULE_NO_MATCH);
    cr_expect_eq(c.no_match, 1);
    cr_assert_eq(c.nunmatched, 1);
    cr_expect_str_eq(f.m.nodes[c.unmatched[0]].name, "/session/init");
    cr_assert_eq(c.nconflicts, 1);
    cr_expect_str_eq(f.m.nodes[c.conflicts[0].node].name, "/model/layers.1/mlp/MatMul");
    cr_expect_eq(c.conflicts[0].rule, 4); /* the longer pattern, as ORT applies it */
    cr_expect_eq(c.conflicts[0].other, 0);
    ws_part_coverage_free(&c);
    ws_part_rules_free(&r);
    /* a pattern every node it holds gives to a longer one: shadowed */
    cr_assert_eq(ws_part_rules_parse("gpu(layers.);cpu(layers)", &r, err, sizeof err), 0);
    cr_assert_eq(ws_part_coverage_compute(&f.m, &r, &c, err, sizeof err), 0);
    cr_expect_eq(c.rules[1].matched, 4);
    cr_expect_eq(c.rules[1].assigned, 0);
    cr_expect_eq(c.rules[1].verdict, WS_RULE_SHADOWED);
    cr_expect_eq(c.nconflicts, 4);
    ws_part_coverage_free(&c);
    ws_part_rules_free(&r);
    close_model(&f);
}

/* ---- the command ---- */

static char out_path[600], err_path[600];

static int run_partition(int argc, ...)
{
    char *argv[16] = {"partition"};
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc && i < 14; i++)
        argv[i + 1] = va_arg(ap, char *);
    va_end(ap);
    tb_temp_path("out.txt", out_path, sizeof out_path);
    tb_temp_path("err.txt", err_path, sizeof err_path);
    return tb_run_cmd(cmd_partition, out_path, err_path, argc + 1, argv[0], argv[1], argv[2], argv[3], argv[4], argv[5],
                      argv[6], argv[7], argv[8], argv[9], argv[10], argv[11], argv[12], argv[13], argv[14]);
}

static int lines_in(const char *text)
{
    int n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    return n;
}

Test(partition, stale_rule_warns_and_fails_under_strict)
{
    make_trace();
    cr_expect_eq(run_partition(5, trace, "--budget", "12421", "--rules", RULES), 0);
    char *err = tb_read_file(err_path), *out = tb_read_file(out_path);
    cr_expect(strstr(err, "rule pattern 'model.layers.' (cpu) matches no node") != NULL, "%s", err);
    cr_expect(strstr(err, "1 nodes are matched by patterns of two devices") != NULL, "%s", err);
    cr_expect(strstr(out, "model.layers.") && strstr(out, "no-match"), "%s", out);
    cr_expect(strstr(out, "conflict: /model/layers.1/mlp/MatMul") != NULL, "%s", out);
    free(err), free(out);
    cr_expect_eq(tb_query(trace, "SELECT nodes_matched FROM partition_rules WHERE pattern = 'layers.'"), 4);
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM partition_rules WHERE verdict = 'no-match'"), 1);
    cr_expect_eq(run_partition(6, trace, "--budget", "12421", "--rules", RULES, "--strict"), WS_EXIT_FINDINGS);
    cr_expect_eq(run_partition(6, trace, "--budget", "12421", "--rules", "gpu(layers.,embed,head,init)", "--strict"),
                 0);
}

/* Occurrences of needle in text. */
static int occurrences(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* The rules' warnings (one stale pattern, one conflict, text after ')') reach each reader once:
 * with the report in a file, once in it and once on stderr; with standard output and error on
 * one file (a terminal, `2>&1`), once in all. */
Test(partition, each_warning_once_per_stream)
{
    make_trace();
    static const char *const warned[] = {"pattern 'model.layers.' (cpu) matches no node",
                                         "1 nodes are matched by patterns of two devices",
                                         "text after ')' is ignored by ONNX Runtime: ' tail'"};
    char rules[256];
    snprintf(rules, sizeof rules, "%s tail", RULES);
    cr_assert_eq(run_partition(5, trace, "--budget", "12421", "--rules", rules), 0);
    char *err = tb_read_file(err_path), *out = tb_read_file(out_path);
    for (size_t i = 0; i < 3; i++) {
        cr_expect_eq(occurrences(err, warned[i]), 1, "stderr, %s:\n%s", warned[i], err);
        cr_expect_eq(occurrences(out, warned[i]), 1, "report, %s:\n%s", warned[i], out);
    }
    free(err), free(out);

    char both[600];
    tb_temp_path("both.txt", both, sizeof both);
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2), fd = open(both, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(fd >= 0 && saved_out >= 0 && saved_err >= 0);
    dup2(fd, 1);
    dup2(fd, 2);
    char *argv[] = {"partition", trace, "--budget", "12421", "--rules", rules, NULL};
    int rc = cmd_partition(6, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(fd), close(saved_out), close(saved_err);
    cr_expect_eq(rc, 0);
    char *text = tb_read_file(both);
    for (size_t i = 0; i < 3; i++)
        cr_expect_eq(occurrences(text, warned[i]), 1, "one stream, %s:\n%s", warned[i], text);
    free(text);
    /* JSON has no warning lines: they stay on stderr */
    cr_assert_eq(run_partition(6, trace, "--budget", "12421", "--rules", rules, "--json"), 0);
    err = tb_read_file(err_path);
    for (size_t i = 0; i < 3; i++)
        cr_expect_eq(occurrences(err, warned[i]), 1, "stderr beside JSON, %s:\n%s", warned[i], err);
    free(err);
}

Test(partition, result_tables)
{
    make_trace();
    cr_assert_eq(run_partition(3, trace, "--budget", "12420,24874"), 0);
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM partitions"), 2);
    cr_expect_eq(tb_query(trace, "SELECT layers_fit FROM partitions WHERE budget_bytes = 12420"), 0);
    cr_expect_eq(tb_query(trace, "SELECT layers_fit FROM partitions WHERE budget_bytes = 24874"), 2);
    cr_expect_eq(tb_query(trace, "SELECT cost_bytes FROM partition_layers WHERE partition_id = 1 AND ordinal = 1"),
                 12453);
    cr_expect_eq(tb_query(trace, "SELECT SUM(fits) FROM partition_layers WHERE partition_id = 2"), 2);
    cr_expect_eq(tb_query(trace, "SELECT ort_nodes_accepted FROM partitions WHERE budget_bytes = 12420"), 3);
    /* re-running replaces every partition table */
    cr_assert_eq(run_partition(3, trace, "--budget", "1G"), 0);
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM partitions"), 1);
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM partition_layers"), 2);
    cr_expect_eq(tb_query(trace, "SELECT budget_bytes FROM partitions"), 1073741824);
}

/* Nodes the model has that never ran: from --nodes and from an ORT stats file.  The list names
 * five of the six nodes that ran (not the head) and an untaken branch of layer 1; the stats file
 * names a node of layer 0 the trace never saw. */
Test(partition, profiling_coverage)
{
    char list[600], stats[600];
    make_trace();
    tb_temp_path("nodes.txt", list, sizeof list);
    tb_temp_path("stats.csv", stats, sizeof stats);
    tb_write_file(list, "# the model\n/model/embed/Gather\n/model/layers.0/attn/MatMul\n/model/layers.0/mlp/MatMul\n"
                        "/model/layers.1/attn/MatMul\n/model/layers.1/mlp/MatMul\n/model/layers.1/if_then/Add\n");
    tb_write_file(stats, "#name,input_sizes,initializers_sizes,total_dynamic_sizes,total_temp_allocations\n"
                         "/model/layers.0/else/Mul_123456,10,0,20,30\n");
    cr_assert_eq(run_partition(7, trace, "--budget", "1G", "--nodes", list, "--estimates", stats), 0);
    char *out = tb_read_file(out_path);
    cr_expect(strstr(out, "2 nodes of the model never ran") != NULL, "%s", out);
    cr_expect(strstr(out, "/model/layers.1/if_then/Add") && strstr(out, "/model/layers.0/else/Mul"), "%s", out);
    cr_expect(strstr(out, "1 nodes ran that the node list does not name") != NULL, "%s", out);
    free(out);
    struct fixture f;
    struct ws_part_nodelist nl;
    char err[256];
    cr_assert_eq(ws_part_nodelist_load(list, &nl, err, sizeof err), 0, "%s", err);
    open_model(&f, NULL, &nl);
    int32_t *never;
    size_t n;
    cr_assert_eq(ws_part_never_ran(&f.m, &never, &n), 0);
    cr_assert_eq(n, 1);
    cr_expect_eq(f.m.nodes[never[0]].layer, 1);
    cr_expect_eq(f.m.layers[1].listed, 1);
    cr_expect_eq(ws_part_unlisted(&f.m), 1);
    free(never);
    close_model(&f);
    ws_part_nodelist_free(&nl);
}

/* Workspace known only from the profile: L0 mlp (64), L1 attn (128), head (50).  A Level-1
 * estimate for L1 attn and a Level-2 declaration for the head take them off the list. */
Test(partition, first_run_risk)
{
    sqlite3 *db = tb_create(trace, sizeof trace);
    build_model(db);
    tb_decl(db, 1, 4, 0, 200);
    tb_declare(db, 2, 6, 0, 50, 1);
    sqlite3_close(db);
    struct fixture f;
    open_model(&f, NULL, NULL);
    int32_t *risk;
    size_t n;
    cr_assert_eq(ws_part_first_run_risk(&f.m, &risk, &n), 0);
    cr_assert_eq(n, 1);
    cr_expect_str_eq(f.m.nodes[risk[0]].name, "/model/layers.0/mlp/MatMul");
    free(risk);
    /* the estimate raises L1 attn's workspace in ORT's ledger: max(128, 200) */
    cr_expect_eq(f.c.layers[1].workspace, 200);
    close_model(&f);
}

/* Initializer bytes the estimates file gives beyond the trace's: L0 attn 4000 -> 5000 adds 1000 to
 * layer 0, taken from the 3500 persistent bytes outside every layer. */
Test(partition, initializer_bytes_of_the_estimates_file)
{
    struct ws_estimates est;
    char err[256];
    const char *csv = "node,slot,bytes\n/model/layers.0/attn/MatMul,initializer,5000\n";
    make_trace();
    cr_assert_eq(ws_estimates_parse(csv, strlen(csv), "est.csv", &est, err, sizeof err), 0, "%s", err);
    struct fixture f;
    open_model(&f, &est, NULL);
    cr_expect_eq(f.c.layers[0].persistent, 11000);
    cr_expect_eq(f.c.outside.persistent, 2500);
    cr_expect_eq(f.c.file_initializers, 1000);
    close_model(&f);
    ws_estimates_free(&est);
}

/* ---- bad input: one line, exit 2, nothing written ---- */

static void refused(const char *what, int rc)
{
    char *err = tb_read_file(err_path);
    cr_expect_eq(rc, WS_EXIT_USAGE, "%s: exit %d", what, rc);
    cr_expect_eq(lines_in(err), 1, "%s: stderr '%s'", what, err);
    cr_expect(strncmp(err, "wstrace: ", 9) == 0, "%s: '%s'", what, err);
    free(err);
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'partitions'"), 0, "%s: written",
                 what);
}

Test(partition, bad_input)
{
    char bad[600];
    make_trace();
    refused("budget 0", run_partition(3, trace, "--budget", "0"));
    refused("budget abc", run_partition(3, trace, "--budget", "abc"));
    refused("budget 8Q", run_partition(3, trace, "--budget", "8Q"));
    refused("budget too large", run_partition(3, trace, "--budget", "99999999999T"));
    refused("no budget", run_partition(1, trace));
    refused("malformed rules", run_partition(5, trace, "--budget", "1G", "--rules", "gpu(layers."));
    refused("exact-match rule", run_partition(5, trace, "--budget", "1G", "--rules", "gpu(=layers.)"));
    refused("outside mode", run_partition(5, trace, "--budget", "1G", "--outside", "moon"));
    refused("device", run_partition(5, trace, "--budget", "1G", "--device", "3"));
    tb_temp_path("bad.csv", bad, sizeof bad);
    tb_write_file(bad, "#name,input_sizes,initializers_sizes,total_dynamic_sizes,total_temp_allocations\n"
                       "/model/layers.0/attn/MatMul_1,1,2,3\n");
    refused("not ORT's format", run_partition(5, trace, "--budget", "1G", "--estimates", bad));
    char *err = tb_read_file(err_path);
    cr_expect(strstr(err, "bad.csv:2: expected 5 fields") != NULL, "%s", err);
    free(err);
    tb_write_file(bad, "/model/layers.0/attn/MatMul_1,1,0,3,4\n"); /* no header: not an ORT file either */
    refused("five columns without the header", run_partition(5, trace, "--budget", "1G", "--estimates", bad));
    refused("no layer names", run_partition(5, trace, "--budget", "1G", "--layers", "blk."));
    err = tb_read_file(err_path);
    cr_expect(strstr(err, "no node name has a layer number after 'blk.'") != NULL, "%s", err);
    free(err);
}

Test(partition, sizes)
{
    make_trace();
    cr_assert_eq(run_partition(3, trace, "--budget", "1.5K,8g,12421"), 0);
    cr_expect_eq(tb_query(trace, "SELECT budget_bytes FROM partitions WHERE id = 1"), 1536);
    cr_expect_eq(tb_query(trace, "SELECT budget_bytes FROM partitions WHERE id = 2"), 8LL << 30);
    cr_expect_eq(tb_query(trace, "SELECT budget_bytes FROM partitions WHERE id = 3"), 12421);
}

Test(partition, svg_and_json)
{
    char svg[600];
    make_trace();
    tb_temp_path("p.svg", svg, sizeof svg);
    cr_assert_eq(run_partition(5, trace, "--budget", "12421", "--svg", svg), 0);
    char *text = tb_read_file(svg);
    cr_expect(strstr(text, "data-layers-fit=\"1\"") != NULL);
    int fits = 0, off = 0;
    for (const char *p = text; (p = strstr(p, "class=\"seg ")); p++)
        fits += strncmp(p, "class=\"seg fits", 15) == 0, off += strncmp(p, "class=\"seg off", 14) == 0;
    cr_expect_eq(fits, 1);
    cr_expect_eq(off, 1);
    free(text);
    cr_assert_eq(run_partition(4, trace, "--budget", "16384", "--json"), 0);
    text = tb_read_file(out_path);
    cr_expect(strstr(text, "\"nodes_accepted\": 4") != NULL, "%s", text);
    cr_expect(strstr(text, "\"first_rejected\": \"/model/layers.1/mlp/MatMul\"") != NULL);
    free(text);
}

/* Two devices: a 3000 B weight of L1 attn (named after it) on device 1.  Device 1 holds only that:
 * layer 1's persistent 3000, layer 0 nothing; device 0 is unchanged.  --device 1 keeps one view. */
Test(partition, one_view_per_device)
{
    sqlite3 *db = tb_create(trace, sizeof trace);
    build_model(db);
    tb_alloc_on(db, 20, 3000, 1, NONE, 12, NONE, NONE, 1);
    tb_sql(db, "INSERT INTO allocation_names(allocation_id, name_id, category) VALUES (20, 4, 0)");
    sqlite3_close(db);
    struct fixture f;
    char err[256];
    open_model(&f, NULL, NULL);
    struct ws_part_view *views;
    size_t n;
    cr_assert_eq(ws_part_views(&f.an, &views, &n, err, sizeof err), 0);
    cr_assert_eq(n, 2);
    cr_expect_eq(views[1].device, 1);
    struct ws_part_costs c1;
    cr_assert_eq(ws_part_costs_compute(&f.m, views[1], &c1, err, sizeof err), 0);
    cr_expect_eq(c1.layers[1].persistent, 3000);
    cr_expect_eq(c1.layers[0].persistent, 0);
    cr_expect_eq(f.c.layers[1].persistent, 10000);
    ws_part_costs_free(&c1);
    free(views);
    close_model(&f);
    cr_assert_eq(run_partition(5, trace, "--budget", "1G", "--device", "1"), 0);
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM partitions"), 1);
    cr_expect_eq(tb_query(trace, "SELECT device FROM partitions"), 1);
    cr_assert_eq(run_partition(3, trace, "--budget", "1G"), 0);
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM partitions"), 2);
    /* on a trace of several devices the rule names the device */
    cr_expect_eq(tb_query(trace, "SELECT COUNT(*) FROM partitions WHERE device = 1 AND"
                                 " name_based_layer_assignment LIKE 'gpu:1(%'"),
                 1);
}
