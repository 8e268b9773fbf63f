/*
 * ONNX Runtime's node-stats file both ways: wstrace export --format ort-node-stats writes what
 * NodeStatsRecorder writes, the estimates reader takes it back, and ORT's unique node names are
 * computed as IResourceAccountant::MakeUniqueNodeName computes them.  Reference hashes come from
 * an independent implementation of MurmurHash3 (Python's mmh3 5.x, mmh3.hash_bytes(key, seed,
 * x64arch=False), read as four little-endian words).
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "commands.h"
#include "estimates.h"
#include "partition.h"
#include "resolve.h"
#include "trace_builder.h"

TestSuite(nodestats, .fini = tb_cleanup);

Test(nodestats, murmur3_x86_128_reference_vectors)
{
    static const struct {
        const char *key;
        uint32_t seed, h[4];
    } v[] = {
        {"", 0, {0, 0, 0, 0}},
        {"a", 7, {0x4572ec74u, 0x984fd670u, 0x984fd670u, 0x984fd670u}},
        {"hello", 14, {0x9cd2b4d9u, 0xb364a894u, 0x8c97ab90u, 0x8c97ab90u}},
        {"The quick brown fox jumps over the lazy dog", 21, {0x5413a62cu, 0xabc2496bu, 0x9211d3c3u, 0xdf0da29du}},
        {"0123456789abcdef0", 28, {0x7c6952d8u, 0x56c43cfau, 0x5b626e68u, 0x1d21b23fu}},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        uint32_t h[4];
        ws_murmur3_x86_128(v[i].key, strlen(v[i].key), v[i].seed, h);
        for (int k = 0; k < 4; k++)
            cr_expect_eq(h[k], v[i].h[k], "'%s' word %d: %08x", v[i].key, k, h[k]);
    }
}

/* MakeUniqueNodeName: each input then output name hashed with the previous hash's first word as
 * seed; the name (or op type) '_' and h1 | h2 << 32 in decimal.  The expected names were computed
 * with mmh3 by the same chain. */
Test(nodestats, ort_unique_node_names)
{
    char *in1[] = {"/model/embed/out", "model.layers.0.attn.weight_Q4"}, *out1[] = {"/model/layers.0/attn/out"};
    struct ws_part_graph_node n = {"/model/layers.0/attn/MatMul", "MatMulNBits", in1, out1, 2, 1};
    char *u = ws_ort_unique_name(&n);
    cr_expect_str_eq(u, "/model/layers.0/attn/MatMul_13150923440150542951");
    free(u);
    /* no name: the op type; an omitted optional input is an empty name, and still hashed */
    char *in2[] = {"a", ""}, *out2[] = {"b"};
    struct ws_part_graph_node add = {"", "Add", in2, out2, 2, 1};
    u = ws_ort_unique_name(&add);
    cr_expect_str_eq(u, "Add_4019595703708348027");
    free(u);
}

/* The trace of test_partition.c, smaller: two layer nodes and the embedding.
 *   embed  weights 1000 (named), output 100 B to L0 attn       -> 1000,0,100,0
 *   L0 attn weights 4000, output 200 B to L1 mlp, workspace 64 then 32 B (requested 96)
 *                                                               -> 4000,0,200,96
 *   L1 mlp  weights 6000, no output, no workspace               -> 6000,0,0,0
 * A second run repeats L0 attn with 300 B of output: the field is the maximum over runs, 300. */
static char trace[512];
static const char *const NAMES[] = {"/model/embed/Gather", "/model/layers.0/attn/MatMul", "/model/layers.1/mlp/MatMul"};

static void make_trace(void)
{
    sqlite3 *db = tb_create(trace, sizeof trace);
    static const int64_t weights[] = {1000, 4000, 6000};
    for (int i = 0; i < 3; i++)
        tb_string(db, i + 1, NAMES[i]);
    tb_string(db, 10, "/session/init");
    tb_run(db, 1, NONE, 100, 1000);
    tb_run(db, 2, NONE, 2000, 3000);
    tb_range(db, 1, 10, NONE, 0, NONE, 0, 50);
    for (int i = 0; i < 3; i++)
        tb_range(db, i + 2, i + 1, NONE, 0, 1, 100 * (i + 1), 100 * (i + 1) + 50);
    tb_range(db, 5, 2, NONE, 0, 2, 2200, 2250);
    tb_range(db, 6, 3, NONE, 0, 2, 2300, 2350);
    for (int i = 0; i < 3; i++) {
        char sql[128];
        tb_alloc(db, i + 1, weights[i], 1, NONE, 10, NONE, NONE);
        snprintf(sql, sizeof sql, "INSERT INTO allocation_names(allocation_id, name_id, category) VALUES (%d, %d, 0)",
                 i + 1, i + 1);
        tb_sql(db, sql);
    }
    tb_alloc(db, 4, 100, 2, 1, 120, 220, 3);
    tb_alloc(db, 5, 200, 3, 1, 220, 320, 4);
    tb_alloc(db, 6, 64, 3, 1, 205, 230, 3);
    tb_alloc(db, 7, 32, 3, 1, 231, 235, 3);
    tb_alloc(db, 8, 300, 5, 2, 2210, 2320, 6);
    sqlite3_close(db);
}

static const char EXPECTED[] = "#name,input_sizes,initializers_sizes,total_dynamic_sizes,total_temp_allocations\n"
                               "/model/embed/Gather,1000,0,100,0\n"
                               "/model/layers.0/attn/MatMul,4000,0,300,96\n"
                               "/model/layers.1/mlp/MatMul,6000,0,0,0\n";

static char out_path[600], err_path[600];

static int run(int (*fn)(int, char **), int argc, ...)
{
    char *argv[12] = {0};
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc && i < 11; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    tb_temp_path("out.txt", out_path, sizeof out_path);
    tb_temp_path("err.txt", err_path, sizeof err_path);
    return tb_run_cmd(fn, out_path, err_path, argc, argv[0], argv[1], argv[2], argv[3], argv[4], argv[5], argv[6],
                      argv[7], argv[8], argv[9], argv[10]);
}

Test(nodestats, export_writes_ort_format)
{
    char csv[600];
    make_trace();
    tb_temp_path("node_stats.csv", csv, sizeof csv);
    cr_assert_eq(run(cmd_export, 6, "export", trace, "--format", "ort-node-stats", "-o", csv), 0);
    char *text = tb_read_file(csv), *err = tb_read_file(err_path);
    cr_expect_str_eq(text, EXPECTED);
    /* without a mapping ORT would find none of these names: said in one line */
    cr_expect(strstr(err, "unique names (NAME_HASH)") != NULL, "%s", err);
    free(text), free(err);
}

/* Read back: every line is a recorded profile of its node.  resolve --estimates on the same trace
 * charges each node its line: 1000 + 100, 4000 + 300 + 96, 6000. */
Test(nodestats, round_trip_through_the_estimates_reader)
{
    char csv[600];
    make_trace();
    tb_temp_path("node_stats.csv", csv, sizeof csv);
    cr_assert_eq(run(cmd_export, 6, "export", trace, "--format", "ort-node-stats", "-o", csv), 0);
    struct ws_estimates est;
    char err[256];
    cr_assert_eq(ws_estimates_load(csv, &est, err, sizeof err), 0, "%s", err);
    cr_expect_eq(est.count, 9); /* input, dynamic, temp per line */
    cr_assert_eq(run(cmd_resolve, 4, "resolve", trace, "--estimates", csv), 0);
    const int64_t cost[] = {1100, 4396, 6000}, input[] = {1000, 4000, 6000};
    for (int i = 0; i < 3; i++) {
        char sql[256];
        snprintf(
            sql, sizeof sql,
            "SELECT ort_cost_bytes FROM resolutions r JOIN strings s ON s.id = r.node_name_id WHERE s.value = '%s'",
            NAMES[i]);
        cr_expect_eq(tb_query(trace, sql), cost[i], "%s", NAMES[i]);
        snprintf(
            sql, sizeof sql,
            "SELECT ort_input_bytes FROM resolutions r JOIN strings s ON s.id = r.node_name_id WHERE s.value = '%s'",
            NAMES[i]);
        cr_expect_eq(tb_query(trace, sql), input[i], "%s", NAMES[i]);
    }
    /* exporting again with the file as estimates changes nothing: the same figures */
    char again[600];
    tb_temp_path("again.csv", again, sizeof again);
    cr_assert_eq(run(cmd_export, 8, "export", trace, "--format", "ort-node-stats", "--estimates", csv, "-o", again), 0);
    char *text = tb_read_file(again);
    cr_expect_str_eq(text, EXPECTED);
    free(text);
    ws_estimates_free(&est);
}

/* ORT's file keyed by unique names: NAME_HASH is found as the trace's NAME.  A node that ran in
 * ORT's profiling but not in this trace is a recorded profile of a node the trace does not know. */
Test(nodestats, ort_unique_names_match_trace_nodes)
{
    const char *file = "#name,input_sizes,initializers_sizes,total_dynamic_sizes,total_temp_allocations\n"
                       "/model/layers.1/mlp/MatMul_6214874688972982532,7000,5,10,2000\n"
                       "\n"
                       ",1,2,3,4\n"
                       "# a comment\n";
    struct ws_estimates est;
    char err[256];
    cr_assert_eq(ws_estimates_parse(file, strlen(file), "ns.csv", &est, err, sizeof err), 0, "%s", err);
    cr_assert_eq(est.count, 3); /* the nameless line is skipped, as ORT skips it */
    cr_expect_str_eq(est.items[0].alias, "/model/layers.1/mlp/MatMul");
    cr_expect_eq(est.items[0].kind, WS_EST_INPUT);
    cr_expect_eq(est.items[0].bytes, 7005); /* input_sizes + initializers_sizes: ORT charges the sum */
    cr_expect_eq(est.items[1].kind, WS_EST_DYNAMIC);
    cr_expect_eq(est.items[2].kind, WS_EST_TEMP);
    cr_expect_eq(est.items[2].bytes, 2000);
    make_trace();
    struct ws_analysis an;
    sqlite3 *db;
    cr_assert_eq(ws_analysis_open(trace, 0, &db, &an, err, sizeof err), 0, "%s", err);
    int32_t node = ws_estimate_node(&an, &est.items[0]);
    cr_assert_geq(node, 0);
    cr_expect_str_eq(an.nodes[node].name, "/model/layers.1/mlp/MatMul");
    /* the file's temporaries are a profile in the planner's ledger, its fields raise ORT's */
    struct ws_resolution *res;
    size_t n;
    cr_assert_eq(ws_resolve(&an, &est, WS_ORT_STATS, 1.5, &res, &n, err, sizeof err), 0);
    for (size_t i = 0; i < n; i++)
        if (res[i].node == node) {
            cr_expect_eq(res[i].planner.profile_bytes, 2000);
            cr_expect_eq(res[i].ort.cost_bytes, 7005 + 10 + 2000);
        }
    free(res);
    ws_analysis_free(&an);
    sqlite3_close(db);
    ws_estimates_free(&est);
    const char *const bad[] = {
        "#name,input_sizes,initializers_sizes,total_dynamic_sizes,total_temp_allocations\nx,1,2,3\n",
        "#name,input_sizes,initializers_sizes,total_dynamic_sizes,total_temp_allocations\nx,1,2,3,4,5\n",
        "#name,input_sizes,initializers_sizes,total_dynamic_sizes,total_temp_allocations\nx,1,-2,3,4\n",
        "#name,input_sizes,initializers_sizes,total_dynamic_sizes,total_temp_allocations\nx,1,2,3,4k\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect_neq(ws_estimates_parse(bad[i], strlen(bad[i]), "bad.csv", &est, err, sizeof err), 0, "%zu", i);
        cr_expect(strncmp(err, "bad.csv:2: ", 11) == 0, "%zu: %s", i, err);
    }
}

/* Mapping trace names to ORT's: from a file of ORT's names (its own stats file), or computed from
 * the graph.  The graph gives L1 mlp the inputs x and output y: MatMul_6214874688972982532. */
Test(nodestats, export_maps_names)
{
    char names[600], graph[600], csv[600];
    make_trace();
    tb_temp_path("ort.csv", names, sizeof names);
    tb_temp_path("graph.json", graph, sizeof graph);
    tb_temp_path("mapped.csv", csv, sizeof csv);
    tb_write_file(names, "#name,input_sizes,initializers_sizes,total_dynamic_sizes,total_temp_allocations\n"
                         "/model/layers.0/attn/MatMul_42,0,0,0,0\n/model/embed/Gather_7,0,0,0,0\n");
    cr_assert_eq(run(cmd_export, 8, "export", trace, "--format", "ort-node-stats", "--ort-names", names, "-o", csv), 0);
    char *text = tb_read_file(csv), *err = tb_read_file(err_path);
    cr_expect(strstr(text, "\n/model/embed/Gather_7,1000,0,100,0\n") != NULL, "%s", text);
    cr_expect(strstr(text, "\n/model/layers.0/attn/MatMul_42,4000,0,300,96\n") != NULL, "%s", text);
    cr_expect(strstr(text, "\n/model/layers.1/mlp/MatMul,6000,0,0,0\n") != NULL, "%s", text);
    cr_expect(strstr(err, "1 of 3 nodes have no ONNX Runtime unique name") != NULL, "%s", err);
    free(text), free(err);
    tb_write_file(graph,
                  "[{\"name\": \"/model/layers.1/mlp/MatMul\", \"op_type\": \"MatMulNBits\", \"inputs\": [\"x\"],"
                  " \"outputs\": [\"y\"]}]");
    cr_assert_eq(run(cmd_export, 8, "export", trace, "--format", "ort-node-stats", "--ort-graph", graph, "-o", csv), 0);
    text = tb_read_file(csv);
    cr_expect(strstr(text, "\n/model/layers.1/mlp/MatMul_6214874688972982532,6000,0,0,0\n") != NULL, "%s", text);
    free(text);
    /* bad input: one line, exit 2 */
    cr_expect_eq(run(cmd_export, 6, "export", trace, "--format", "ort-nodestats", "-o", csv), WS_EXIT_USAGE);
    cr_expect_eq(run(cmd_export, 8, "export", trace, "--format", "chrome", "--ort-names", names, "-o", csv),
                 WS_EXIT_USAGE);
    tb_write_file(names, "no unique names here\n");
    cr_expect_eq(run(cmd_export, 8, "export", trace, "--format", "ort-node-stats", "--ort-names", names, "-o", csv),
                 WS_EXIT_USAGE);
    err = tb_read_file(err_path);
    cr_expect(strstr(err, "no ONNX Runtime unique node name") != NULL, "%s", err);
    free(err);
}

/* A name ORT's reader cannot take back is left out, and said so. */
Test(nodestats, names_ort_cannot_read_are_left_out)
{
    char csv[600];
    sqlite3 *db = tb_create(trace, sizeof trace);
    tb_string(db, 1, "a,b");
    tb_string(db, 2, "#c");
    tb_string(db, 3, "ok");
    tb_run(db, 1, NONE, 0, 100);
    for (int i = 0; i < 3; i++)
        tb_range(db, i + 1, i + 1, NONE, 0, 1, 10 * (i + 1), 10 * (i + 1) + 5);
    sqlite3_close(db);
    tb_temp_path("ns.csv", csv, sizeof csv);
    cr_assert_eq(run(cmd_export, 6, "export", trace, "--format", "ort-node-stats", "-o", csv), 0);
    char *text = tb_read_file(csv), *err = tb_read_file(err_path);
    cr_expect_str_eq(text,
                     "#name,input_sizes,initializers_sizes,total_dynamic_sizes,total_temp_allocations\nok,0,0,0,0\n");
    cr_expect(strstr(err, "2 nodes left out") != NULL, "%s", err);
    free(text), free(err);
}
