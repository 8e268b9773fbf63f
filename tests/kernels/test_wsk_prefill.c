/*
 * wsk prefilling, as a program and as a trace records it: outputs bitwise identical in every
 * allocation mode; --alloc pattern's in-process plans equal what `wstrace plan` makes of a trace of
 * the same workload, its later runs fall back never and take as many blocks as the test counts in
 * the dynamic trace, and its runs are marked in the trace; prefill declarations (the GEMM's
 * workspace, attention's root with its sequence-length vectors) verify clean under the envelope
 * while Level 1 at the maximum shape misses a prompt that continues a cache; presets and options.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sqltest.h"

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/wsk-prefill-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(wsk_prefill, .init = make_dir, .fini = remove_dir);

struct result {
    int status;
    char out[16384], err[2048];
};

static void slurp(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* "[wstrace record -o DIR/TRACE --] wsk --device sim ARGS", outputs captured; the sanitizer
 * runtime first in LD_PRELOAD in sanitizer builds. */
static void run(const char *trace, const char *args, struct result *r)
{
    char cmd[4096], env[512] = "", rec[512] = "";
    if (trace) {
        if (WS_SANITIZER_RUNTIME[0])
            snprintf(env, sizeof env, "env LD_PRELOAD=%s ", WS_SANITIZER_RUNTIME);
        snprintf(rec, sizeof rec, "%s/bin/wstrace record -o %s/%s -- ", WS_BUILD_DIR, dir, trace);
    }
    snprintf(cmd, sizeof cmd, "%s%s%s/bin/wsk --device sim %s >%s/out 2>%s/err", env, rec, WS_BUILD_DIR, args, dir,
             dir);
    int st = system(cmd);
    cr_assert(WIFEXITED(st), "%s", cmd);
    r->status = WEXITSTATUS(st);
    char path[128];
    snprintf(path, sizeof path, "%s/out", dir);
    slurp(path, r->out, sizeof r->out);
    snprintf(path, sizeof path, "%s/err", dir);
    slurp(path, r->err, sizeof r->err);
}

static void run_ok(const char *trace, const char *args, struct result *r)
{
    run(trace, args, r);
    cr_assert_eq(r->status, 0, "wsk %s: %s", args, r->err);
}

static int shell(const char *cmd)
{
    char full[2048];
    snprintf(full, sizeof full, "%s >%s/log 2>&1", cmd, dir);
    int st = system(full);
    cr_assert(WIFEXITED(st), "%s", cmd);
    return WEXITSTATUS(st);
}

static int64_t query(const char *trace, const char *sql)
{
    char path[128];
    sqlite3 *db = NULL;
    snprintf(path, sizeof path, "%s/%s", dir, trace);
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    int64_t v = sqltest_int(db, sql);
    sqlite3_close(db);
    return v;
}

static uint64_t printed(const char *out, const char *label)
{
    const char *p = strstr(out, label);
    cr_assert_not_null(p, "no '%s' in: %s", label, out);
    return strtoull(p + strlen(label), NULL, 10);
}

/* Two files equal byte for byte. */
static void expect_same_file(const char *a, const char *b)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "cmp %s/%s %s/%s", dir, a, dir, b);
    cr_expect_eq(shell(cmd), 0, "%s and %s differ", a, b);
}

/* Decoding and prompts of 24 (a first prompt) and 7 tokens (after 89 cached positions), grouped
 * heads, batches 1 and 3: 6 shape keys over 12 runs, each key twice. */
#define MIXED "--layers 2 --kv-heads 2 --batch 1,3 --seq-len 1,24,7 --kv-len 40,24,96 --runs 12"

Test(wsk_prefill, outputs_are_identical_in_every_mode)
{
    const char *modes[] = {"dynamic", "async", "arena", "pattern"};
    char args[512], first[32] = "";
    struct result r;
    for (int i = 0; i < 4; i++) {
        snprintf(args, sizeof args, MIXED " --alloc %s --dump %s/%s.txt", modes[i], dir, modes[i]);
        run_ok(NULL, args, &r);
        if (i == 0)
            snprintf(first, sizeof first, "%s.txt", modes[i]);
        else {
            char other[32];
            snprintf(other, sizeof other, "%s.txt", modes[i]);
            expect_same_file(first, other);
        }
    }
    cr_expect_not_null(strstr(r.out, "run 2 batch=1,seq=7,kv=96 tokens"), "a prompt's shape key: %s", r.out);
    cr_expect_not_null(strstr(r.out, "run 1 batch=3,seq=24,kv=24 tokens"), "%s", r.out);
    cr_expect_not_null(strstr(r.out, "run 0 batch=1,kv=40 tokens"), "decoding keys keep their form: %s", r.out);
}

/*
 * The in-process flow against the trace-planned one.  From the dynamic trace the test counts each
 * key's allocations in its first run (A_k) and its runs (R_k); the pattern run must then report K
 * generating runs, sum over keys of (R_k - 1) * A_k planned allocations and no fallback, each
 * key's pattern peak must be the planned peak `wstrace plan` writes for that key, its outputs the
 * plan run's, and once every pattern exists its device peak the plan run's.
 */
Test(wsk_prefill, pattern_equals_the_trace_planned_flow)
{
    struct result r, pat;
    char cmd[512];
    run_ok("dynamic.db", MIXED " --alloc dynamic", &r);
    snprintf(cmd, sizeof cmd, "%s/bin/wstrace plan %s/dynamic.db", WS_BUILD_DIR, dir);
    cr_assert_eq(shell(cmd), 0);
    int64_t keys = query("dynamic.db", "SELECT COUNT(DISTINCT shape_key_id) FROM runs");
    int64_t planned = query("dynamic.db", "WITH first AS (SELECT shape_key_id, MIN(id) AS run, COUNT(*) AS runs FROM"
                                          " runs GROUP BY shape_key_id) SELECT SUM((f.runs - 1) * (SELECT COUNT(*)"
                                          " FROM allocations a WHERE a.run_id = f.run AND a.status = 0)) FROM first f");
    cr_assert_eq(keys, 6);
    char args[512];
    snprintf(args, sizeof args, MIXED " --alloc plan --plan %s/dynamic.db --dump %s/plan.txt", dir, dir);
    run_ok("plan.db", args, &r);
    snprintf(args, sizeof args, MIXED " --alloc pattern --dump %s/pattern.txt", dir);
    run_ok("pattern.db", args, &pat);
    expect_same_file("plan.txt", "pattern.txt");
    cr_expect_eq(printed(pat.out, "pattern: "), (uint64_t)keys, "generating runs: %s", pat.out);
    cr_expect_eq(printed(pat.out, " generating runs, "), (uint64_t)planned);
    cr_expect_eq(printed(pat.out, " planned allocations, "), 0, "fallbacks");
    cr_expect_eq(query("pattern.db", "SELECT value FROM meta WHERE key = 'plan_fallbacks'"), 0);
    cr_expect_eq(query("pattern.db", "SELECT value FROM meta WHERE key = 'planned_allocations'"), planned);
    cr_expect_eq(query("pattern.db", "SELECT value FROM meta WHERE key = 'pattern_runs'"), keys);
    /* each key's pattern: "pattern KEY: N blocks in P bytes" against the plans table */
    sqlite3 *db;
    sqlite3_stmt *st;
    char path[128];
    snprintf(path, sizeof path, "%s/dynamic.db", dir);
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "SELECT s.value, p.planned_peak_bytes, p.blocks FROM plans p JOIN strings s ON"
                                    " s.id = p.shape_key_id",
                                    -1, &st, NULL),
                 SQLITE_OK);
    int rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        char line[160];
        snprintf(line, sizeof line, "pattern %s: %" PRId64 " blocks in %" PRId64 " bytes",
                 (const char *)sqlite3_column_text(st, 0), (int64_t)sqlite3_column_int64(st, 2),
                 (int64_t)sqlite3_column_int64(st, 1));
        cr_expect_not_null(strstr(pat.out, line), "'%s' not in %s", line, pat.out);
        rows++;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    cr_expect_eq(rows, keys);
    /* the runs are marked: one generating run per key (its first), the others planned */
    const char *marks = "SELECT COUNT(*) FROM runs r JOIN marks m ON m.ns BETWEEN r.start_ns AND r.end_ns"
                        " JOIN strings s ON s.id = m.name_id WHERE s.value = '%s' AND r.id %s (SELECT MIN(id)"
                        " FROM runs GROUP BY shape_key_id)";
    char sql[512];
    snprintf(sql, sizeof sql, marks, "wsk.pattern=generate", "IN");
    cr_expect_eq(query("pattern.db", sql), keys);
    snprintf(sql, sizeof sql, marks, "wsk.pattern=planned", "NOT IN");
    cr_expect_eq(query("pattern.db", sql), 12 - keys);
    snprintf(sql, sizeof sql, marks, "wsk.pattern=generate", "NOT IN");
    cr_expect_eq(query("pattern.db", sql), 0);
    /* the device peak once every key has its pattern, against the plan run's */
    const char *after = "SELECT MAX(live_bytes) FROM live_bytes WHERE ns >= (SELECT MAX(r.end_ns) FROM runs r JOIN"
                        " marks m ON m.ns BETWEEN r.start_ns AND r.end_ns JOIN strings s ON s.id = m.name_id"
                        " WHERE s.value = 'wsk.pattern=generate')";
    cr_expect_eq(query("pattern.db", after), query("plan.db", "SELECT MAX(live_bytes) FROM live_bytes"));
    cr_expect_eq(query("pattern.db", "SELECT COUNT(*) FROM allocations WHERE run_id IN (SELECT r.id FROM runs r"
                                     " JOIN marks m ON m.ns BETWEEN r.start_ns AND r.end_ns JOIN strings s ON"
                                     " s.id = m.name_id WHERE s.value = 'wsk.pattern=planned')"),
                 0, "planned runs make no allocation call");
}

#define ATTN "/model/layers.0/self_attn/GroupQueryAttention"
#define UP   "/model/layers.0/mlp/up_proj/MatMulNBits"

/*
 * Declarations of a first prompt of 64 tokens (batch 1, 4 heads of 64, 132 SMs), then a decoding
 * step.  Attention: work 4 < 105.6 but one KV block, one split; softmax_lse 1 * 4 * 64 * 4 =
 * 1,024 B at 0 and seq_lens 12 B at 1,024: a root of 1,036 B, declared with its two regions and
 * allocated once.  gate/up (K 256, N 512) over 64 rows: split-K tiles 4 * 64 = 256 >= 132, so the
 * GEMM; gate misses the tactic cache, up hits it: a cached GEMM declaring ceil(64/16) *
 * ceil(512/64) * 7 * 4 = 896 B, which it allocates.  Envelope Level 1 covers both keys.
 */
Test(wsk_prefill, prompt_declarations_verify_clean)
{
    struct result r;
    run_ok("decl.db", "--layers 1 --seq-len 64,1 --kv-len 64,96 --runs 2 --sm-count 132 --l1 envelope", &r);
    const char *decl = "SELECT %s FROM declarations d JOIN strings s ON s.id = d.node_name_id JOIN runs u ON"
                       " u.id = d.run_id JOIN strings k ON k.id = u.shape_key_id LEFT JOIN declaration_details x"
                       " ON x.declaration_id = d.id LEFT JOIN strings t ON t.id = x.tactic_id WHERE d.level = 2"
                       " AND s.value = '%s' AND k.value = '%s'";
    char sql[1024];
    snprintf(sql, sizeof sql, decl, "d.bytes", ATTN, "batch=1,seq=64,kv=64");
    cr_expect_eq(query("decl.db", sql), 1036);
    snprintf(sql, sizeof sql, decl, "t.value = 'prefill,splits=1'", ATTN, "batch=1,seq=64,kv=64");
    cr_expect_eq(query("decl.db", sql), 1);
    cr_expect_eq(query("decl.db", "SELECT group_concat(s.value || '@' || r.offset || '+' || r.bytes, ' ') ="
                                  " 'softmax_lse@0+1024 seq_lens@1024+12' FROM (SELECT r.* FROM declaration_regions r"
                                  " JOIN declarations d ON d.id = r.declaration_id JOIN strings n ON n.id ="
                                  " d.node_name_id JOIN runs u ON u.id = d.run_id WHERE n.value = '" ATTN "' AND"
                                  " u.id = 1 ORDER BY r.ordinal) r JOIN strings s ON s.id = r.name_id"),
                 1);
    cr_expect_eq(query("decl.db", "SELECT COUNT(*) FROM allocations a JOIN ranges g ON g.id = a.range_id JOIN"
                                  " strings s ON s.id = g.name_id WHERE s.value = '" ATTN "' AND a.bytes = 1036"),
                 1);
    snprintf(sql, sizeof sql, decl, "x.tactic_kind = 'cached' AND t.value = 'gemm' AND d.bytes = 896", UP,
             "batch=1,seq=64,kv=64");
    cr_expect_eq(query("decl.db", sql), 1);
    cr_expect_eq(query("decl.db", "SELECT COUNT(*) FROM allocations a JOIN ranges g ON g.id = a.range_id JOIN"
                                  " strings s ON s.id = g.name_id WHERE s.value = '" UP "' AND a.bytes = 896"),
                 1, "the GEMM allocates its workspace");
    char cmd[256];
    snprintf(cmd, sizeof cmd, "%s/bin/wstrace verify --strict %s/decl.db", WS_BUILD_DIR, dir);
    cr_expect_eq(shell(cmd), 0);
}

/*
 * 8 query heads over 1 KV head of 64, 20 SMs: a first prompt of 300 tokens and a prompt of 50
 * continuing a cache of 250.  The first prompt counts the 8 query heads: 8 * ceil(300/64) = 40 >=
 * 0.8 * 20, one split; root softmax_lse 8 * 300 * 4 = 9,600 B, seq_lens 12 B at 9,728: 9,740 B.  The
 * continuation counts the 1 KV head: work 1, 2 KV blocks, efficiencies 0.05 (1 split) and 0.1 (2):
 * 2 splits; root softmax_lse 8 * 50 * 4 = 1,600 B, softmax_lse_accum 3,200 B at 1,792, out_accum
 * 204,800 B at 5,120, seq_lens 12 B at 209,920: 209,932 B.  Level 1 at the maximum shape (the
 * first prompt) reserves 9,740 B, so verify --strict finds the continuation's attention over it
 * (exit 1) and nothing else; the envelope is clean (exit 0).
 */
Test(wsk_prefill, max_shape_misses_a_continuation_envelope_does_not)
{
    const char *shapes = "--layers 1 --heads 8 --kv-heads 1 --head-dim 64 --sm-count 20 --seq-len 300,50"
                         " --kv-len 300 --runs 2";
    char args[256], cmd[256];
    struct result r;
    snprintf(args, sizeof args, "%s --l1 max-shape", shapes);
    run_ok("max-shape.db", args, &r);
    snprintf(cmd, sizeof cmd, "%s/bin/wstrace verify --strict %s/max-shape.db", WS_BUILD_DIR, dir);
    cr_expect_eq(shell(cmd), 1);
    cr_expect_eq(query("max-shape.db", "SELECT COUNT(*) FROM verifications v JOIN strings k ON k.id ="
                                       " v.shape_key_id JOIN strings s ON s.id = v.node_name_id WHERE v.verdict ="
                                       " 'over-reservation' AND k.value = 'batch=1,seq=50,kv=300' AND s.value = '" ATTN
                                       "' AND v.level1_bytes = 9740 AND v.level2_bytes = 209932"),
                 1);
    cr_expect_eq(query("max-shape.db", "SELECT COUNT(*) FROM verifications WHERE verdict <> 'ok'"), 1);
    snprintf(args, sizeof args, "%s --l1 envelope", shapes);
    run_ok("envelope.db", args, &r);
    snprintf(cmd, sizeof cmd, "%s/bin/wstrace verify --strict %s/envelope.db", WS_BUILD_DIR, dir);
    cr_expect_eq(shell(cmd), 0);
}

/* A preset sets the family's shapes, options given override them, and it runs a prompt with the
 * same outputs dynamic and under its pattern. */
Test(wsk_prefill, presets)
{
    struct result r;
    char args[256];
    snprintf(args, sizeof args, "--model smollm2-135m --layers 1 --vocab 2048 --seq-len 16 --runs 2 --dump %s/a.txt",
             dir);
    run_ok(NULL, args, &r);
    cr_expect_not_null(strstr(r.out, "model=smollm2-135m layers=1 hidden=576 heads=9 kv_heads=3 head_dim=64"
                                     " intermediate=1536 vocab=2048"),
                       "%s", r.out);
    snprintf(args, sizeof args,
             "--model smollm2-135m --layers 1 --vocab 2048 --seq-len 16 --runs 2 --alloc pattern --dump %s/b.txt", dir);
    run_ok(NULL, args, &r);
    expect_same_file("a.txt", "b.txt");
    run_ok(NULL, "--model mistral-7b --layers 1 --vocab 512 --hidden 1024 --intermediate 256 --runs 1", &r);
    cr_expect_not_null(strstr(r.out, "hidden=1024 heads=32 kv_heads=8 head_dim=128 intermediate=256 vocab=512"), "%s",
                       r.out);
}

static void expect_usage_error(const char *args, const char *needle)
{
    struct result r;
    run(NULL, args, &r);
    cr_expect_eq(r.status, 2, "wsk %s: exit %d, %s", args, r.status, r.err);
    cr_expect_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1, "one line: '%s'", r.err);
    cr_expect_not_null(strstr(r.err, needle), "wsk %s: '%s' lacks '%s'", args, r.err, needle);
}

Test(wsk_prefill, options)
{
    expect_usage_error("--seq-len 0", "--seq-len");
    expect_usage_error("--seq-len 8,,9", "--seq-len");
    expect_usage_error("--seq-len 65 --kv-len 64", "--seq-len 65 is larger than its --kv-len 64");
    expect_usage_error("--seq-len 1,70 --kv-len 96,64 --runs 2", "run 1");
    expect_usage_error("--model gpt5", "llama2-7b");
    expect_usage_error("--alloc pattern --plan x.db", "--plan");
    expect_usage_error("--seq-len 2000 --batch 2000 --heads 1024 --head-dim 1", "below 2^31");
    struct result r;
    run_ok(NULL, "--seq-len 200 --runs 1", &r); /* a first prompt: KV 200, the cache made to hold it */
    cr_expect_not_null(strstr(r.out, "max_kv_len=200"), "%s", r.out);
    cr_expect_not_null(strstr(r.out, "run 0 batch=1,seq=200,kv=200 tokens"), "%s", r.out);
    run_ok(NULL, "--seq-len 1,70 --kv-len 96,64 --runs 1", &r);
    cr_expect_not_null(strstr(r.out, "run 0 batch=1,kv=96"), "the pairing of run 1 is never run: %s", r.out);
    run(NULL, "--help", &r);
    cr_expect_not_null(strstr(r.out, "--seq-len"));
    cr_expect_not_null(strstr(r.out, "--model"));
    cr_expect_not_null(strstr(r.out, "pattern"));
}
