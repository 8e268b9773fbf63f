/*
 * wsk's workspace declarations as a trace records them: MatMulNBits parity (Level 1 = Level 2 =
 * the bytes allocated), tactic-aware declarations (a cache miss declares the conservative size, a
 * cached GEMV declares nothing, a cached split-K its partial sums), an empty batch (no Level-2
 * slot, nothing allocated), grouped-query attention's root with its regions, and the
 * non-monotonic split rule caught by `verify --strict` when Level 1 is taken at the maximum shape
 * only.  Figures are derived by hand in the comments.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sqltest.h"

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/wsk-declare-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(wsk_declare, .init = make_dir, .fini = remove_dir);

/* Runs a shell command quietly; returns its exit status. */
static int shell(const char *cmd)
{
    char full[2048];
    snprintf(full, sizeof full, "%s >%s/log 2>&1", cmd, dir);
    int st = system(full);
    cr_assert(WIFEXITED(st), "%s", cmd);
    return WEXITSTATUS(st);
}

/* "wstrace record -o DIR/NAME -- wsk --device sim ARGS" (the sanitizer runtime first in
 * LD_PRELOAD in sanitizer builds); returns the trace's path. */
static const char *record(const char *name, const char *args)
{
    static char path[128];
    char cmd[1024], env[512] = "";
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (WS_SANITIZER_RUNTIME[0])
        snprintf(env, sizeof env, "env LD_PRELOAD=%s ", WS_SANITIZER_RUNTIME);
    snprintf(cmd, sizeof cmd, "%s%s/bin/wstrace record -o %s -- %s/bin/wsk --device sim %s", env, WS_BUILD_DIR, path,
             WS_BUILD_DIR, args);
    cr_assert_eq(shell(cmd), 0, "%s", cmd);
    return path;
}

static int verify_strict(const char *trace)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s/bin/wstrace verify --strict %s", WS_BUILD_DIR, trace);
    return shell(cmd);
}

static int64_t query(const char *trace, const char *sql)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(trace, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    int64_t v = sqltest_int(db, sql);
    sqlite3_close(db);
    return v;
}

/* Declarations of a node at a level (2: in the run with that shape key), as one value. */
static int64_t declared(const char *trace, const char *node, int level, const char *key, const char *what)
{
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT %s FROM declarations d JOIN strings s ON s.id = d.node_name_id"
             " LEFT JOIN runs r ON r.id = d.run_id LEFT JOIN strings k ON k.id = r.shape_key_id"
             " LEFT JOIN declaration_details x ON x.declaration_id = d.id LEFT JOIN strings t ON t.id = x.tactic_id"
             " WHERE s.value = '%s' AND d.level = %d AND (%d = 1 OR k.value = '%s')",
             what, node, level, level, key ? key : "");
    return query(trace, sql);
}

#define Q_PROJ "/model/layers.0/self_attn/q_proj/MatMulNBits"
#define K_PROJ "/model/layers.0/self_attn/k_proj/MatMulNBits"
#define ATTN   "/model/layers.0/self_attn/GroupQueryAttention"

/*
 * Ordinary shape: batch 4, hidden 256, 4 heads of 64 (q_proj K = N = 256), 132 SMs.  Tiles
 * ceil(256/128) * 4 = 8, split-K min(ceil(132/8) = 17, 16, 256/32 = 8) = 8: 8*4*256*4 = 32,768 B.
 * Level 1 at the maximum shape (batch 4) is that; the first key's q_proj misses the tactic cache
 * and declares it (the conservative size), k_proj of the same GEMM shape then hits (cached
 * split-K, 32,768 B), and every run allocates 32,768 B for each.
 */
Test(wsk_declare, matmul_parity_and_tactics)
{
    const char *t = record("parity.db", "--layers 1 --batch 4 --kv-len 96,112 --runs 2 --sm-count 132 --l1 max-shape");
    cr_expect_eq(declared(t, Q_PROJ, 1, NULL, "MAX(d.bytes)"), 32768, "Level 1");
    cr_expect_eq(declared(t, Q_PROJ, 2, "batch=4,kv=96", "d.bytes"), 32768, "Level 2 on a miss");
    cr_expect_eq(declared(t, Q_PROJ, 2, "batch=4,kv=96", "x.tactic_kind = 'miss'"), 1);
    cr_expect_eq(declared(t, K_PROJ, 2, "batch=4,kv=96", "x.tactic_kind = 'cached' AND t.value = 'splitk'"), 1);
    cr_expect_eq(declared(t, K_PROJ, 2, "batch=4,kv=96", "d.bytes"), 32768);
    cr_expect_eq(declared(t, Q_PROJ, 2, "batch=4,kv=112", "x.tactic_kind = 'cached' AND d.bytes = 32768"), 1);
    cr_expect_eq(query(t, "SELECT COUNT(*) FROM allocations a JOIN ranges g ON g.id = a.range_id JOIN strings s"
                          " ON s.id = g.name_id WHERE s.value = '" Q_PROJ "' AND a.bytes = 32768"),
                 2, "the runtime allocates the declared bytes in both runs");
    cr_expect_eq(verify_strict(t), 0);
}

/* Batch 1: every matmul is a GEMV.  Level 1 at batch 1 is 0; the first q_proj misses and declares
 * the conservative size, 0; k_proj and every later key hit the cached GEMV and declare nothing
 * (0 bytes, cached-free).  No matmul allocates workspace. */
Test(wsk_declare, a_cached_gemv_declares_nothing)
{
    const char *t = record("gemv.db", "--layers 1 --batch 1 --kv-len 96,112 --runs 2 --l1 max-shape");
    cr_expect_eq(declared(t, Q_PROJ, 2, "batch=1,kv=96", "x.tactic_kind = 'miss' AND d.bytes = 0"), 1);
    cr_expect_eq(declared(t, K_PROJ, 2, "batch=1,kv=96", "x.tactic_kind = 'cached-free' AND t.value = 'gemv'"), 1);
    cr_expect_eq(declared(t, Q_PROJ, 2, "batch=1,kv=112", "x.tactic_kind = 'cached-free' AND d.bytes = 0"), 1);
    cr_expect_eq(query(t, "SELECT COUNT(*) FROM allocations a JOIN ranges g ON g.id = a.range_id JOIN strings s"
                          " ON s.id = g.name_id WHERE s.value LIKE '%MatMulNBits' AND a.free_range_id = a.range_id"),
                 0);
    cr_expect_eq(verify_strict(t), 0);
}

/* An empty batch: Level 1 at batch 0 is a known 0 (slot 0, 0 bytes), the matmul kernels declare no
 * Level-2 slot, and no run allocates anything. */
Test(wsk_declare, an_empty_output_declares_no_slot)
{
    const char *t = record("empty.db", "--layers 1 --batch 0 --runs 1");
    cr_expect_eq(query(t, "SELECT COUNT(*) FROM declarations d JOIN strings s ON s.id = d.node_name_id"
                          " WHERE s.value = '" Q_PROJ "' AND d.level = 1 AND d.bytes = 0"),
                 1);
    cr_expect_eq(query(t, "SELECT COUNT(*) FROM declarations d JOIN strings s ON s.id = d.node_name_id"
                          " WHERE s.value LIKE '%MatMulNBits' AND d.level = 2"),
                 0, "no Level-2 slot");
    cr_expect_eq(query(t, "SELECT COUNT(*) FROM allocations WHERE run_id IS NOT NULL"), 0, "runtime 0");
    cr_expect_eq(verify_strict(t), 0);
}

/*
 * Grouped-query attention, 8 query heads over 2 KV heads of 64, KV 4096, 108 SMs: 16 splits (chosen
 * with the 2 KV heads), accumulators for the 8 query heads: softmax_lse 1*8*4 = 32 B at 0,
 * softmax_lse_accum 16*8*4 = 512 B at 256, out_accum 16*8*64*4 = 32,768 B at 768; root 33,536 B,
 * declared with its three regions and allocated once.
 */
Test(wsk_declare, gqa_root_with_regions)
{
    const char *t = record("gqa.db", "--layers 1 --hidden 512 --heads 8 --kv-heads 2 --head-dim 64 --sm-count 108"
                                     " --kv-len 4096 --max-kv-len 4096 --runs 1");
    cr_expect_eq(declared(t, ATTN, 2, "batch=1,kv=4096", "d.bytes"), 33536);
    cr_expect_eq(declared(t, ATTN, 2, "batch=1,kv=4096", "t.value = 'splits=16'"), 1);
    cr_expect_eq(query(t, "SELECT group_concat(s.value || '@' || r.offset || '+' || r.bytes, ' ') ="
                          " 'softmax_lse@0+32 softmax_lse_accum@256+512 out_accum@768+32768'"
                          " FROM (SELECT * FROM declaration_regions ORDER BY ordinal) r"
                          " JOIN strings s ON s.id = r.name_id"),
                 1);
    cr_expect_eq(query(t, "SELECT COUNT(*) FROM allocations a JOIN ranges g ON g.id = a.range_id JOIN strings s"
                          " ON s.id = g.name_id WHERE s.value = '" ATTN "' AND a.bytes = 33536"),
                 1);
    cr_expect_eq(verify_strict(t), 0);
}

/*
 * The drop: 2 heads of 64, 108 SMs, KV 13,824 (54 splits, root 28,416 B) and 13,825 (28 splits,
 * 14,848 B).  Level 1 at the maximum shape (13,825) reserves 14,848 B, less than the kernel
 * declares at 13,824: verify --strict finds it (exit 1), on that key's attention row.  The envelope
 * covers both keys: exit 0.
 */
Test(wsk_declare, max_shape_level1_is_caught_envelope_is_clean)
{
    const char *shapes = "--layers 1 --heads 2 --head-dim 64 --sm-count 108 --kv-len 13824,13825"
                         " --max-kv-len 13825 --runs 2";
    char args[256];
    snprintf(args, sizeof args, "%s --l1 max-shape", shapes);
    const char *t = record("max-shape.db", args);
    cr_expect_eq(declared(t, ATTN, 2, "batch=1,kv=13824", "d.bytes"), 28416);
    cr_expect_eq(declared(t, ATTN, 2, "batch=1,kv=13825", "d.bytes"), 14848);
    cr_expect_eq(declared(t, ATTN, 1, NULL, "MAX(d.bytes)"), 14848);
    cr_expect_eq(verify_strict(t), 1);
    cr_expect_eq(query(t, "SELECT COUNT(*) FROM verifications v JOIN strings k ON k.id = v.shape_key_id"
                          " JOIN strings s ON s.id = v.node_name_id WHERE v.verdict = 'over-reservation'"
                          " AND k.value = 'batch=1,kv=13824' AND s.value = '" ATTN "'"),
                 1);
    cr_expect_eq(query(t, "SELECT COUNT(*) FROM verifications WHERE verdict <> 'ok'"), 1, "nothing else");
    snprintf(args, sizeof args, "%s --l1 envelope", shapes);
    t = record("envelope.db", args);
    cr_expect_geq(declared(t, ATTN, 1, NULL, "MAX(d.bytes)"), 28416);
    cr_expect_eq(verify_strict(t), 0);
}
