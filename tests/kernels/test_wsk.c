/* wsk as a program: determinism of its outputs across invocations and allocation modes, seeds,
 * bad options (exit 2, one line), running out of simulated device memory (exit 1), and the
 * caching arena's device allocations as a trace records them. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sqltest.h"

#define WSK WS_BUILD_DIR "/bin/wsk"

struct result {
    int status;
    char out[8192], err[4096];
};

static void slurp(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* Runs "env wsk args" with stdout and stderr captured in files. */
static void run(const char *env, const char *args, struct result *r)
{
    char outp[] = "/tmp/wsk-out-XXXXXX", errp[] = "/tmp/wsk-err-XXXXXX", cmd[2048];
    int fo = mkstemp(outp), fe = mkstemp(errp);
    cr_assert(fo >= 0 && fe >= 0);
    close(fo), close(fe);
    snprintf(cmd, sizeof cmd, "%s %s %s >%s 2>%s", env ? env : "", WSK, args, outp, errp);
    int st = system(cmd);
    cr_assert(WIFEXITED(st), "%s did not exit", cmd);
    r->status = WEXITSTATUS(st);
    slurp(outp, r->out, sizeof r->out);
    slurp(errp, r->err, sizeof r->err);
    unlink(outp), unlink(errp);
}

static uint64_t checksum_of(const char *args)
{
    struct result r;
    run(NULL, args, &r);
    cr_assert_eq(r.status, 0, "wsk %s: %s", args, r.err);
    const char *line = strstr(r.out, "\nchecksum ");
    cr_assert_not_null(line, "no checksum in: %s", r.out);
    return strtoull(line + 10, NULL, 16);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

Test(wsk, checksum_repeats_across_invocations) { cr_expect_eq(checksum_of(""), checksum_of("")); }

Test(wsk, dynamic_and_async_give_the_same_outputs)
{
    const char *shapes = "--batch 1,3 --kv-len 40,96 --runs 4";
    char a[256], b[256];
    snprintf(a, sizeof a, "%s --alloc dynamic", shapes);
    snprintf(b, sizeof b, "%s --alloc async", shapes);
    cr_expect_eq(checksum_of(a), checksum_of(b));
}

Test(wsk, seed_changes_the_outputs) { cr_expect_neq(checksum_of("--seed 1"), checksum_of("--seed 2")); }

/* Dumps of "--batch 2 --runs 2" under two allocation modes (mode_a and mode_b: wsk options)
 * are byte for byte the same. */
static void expect_identical_dumps(const char *mode_a, const char *mode_b)
{
    char d1[] = "/tmp/wsk-dump-XXXXXX", d2[] = "/tmp/wsk-dump-XXXXXX", args[256];
    close(mkstemp(d1)), close(mkstemp(d2));
    snprintf(args, sizeof args, "--batch 2 --runs 2 %s --dump %s", mode_a, d1);
    checksum_of(args);
    snprintf(args, sizeof args, "--batch 2 --runs 2 %s --dump %s", mode_b, d2);
    checksum_of(args);
    FILE *f1 = fopen(d1, "r"), *f2 = fopen(d2, "r");
    cr_assert(f1 && f2);
    int c1, c2;
    long bytes = 0, tokens = 0;
    char line[128];
    do {
        c1 = fgetc(f1), c2 = fgetc(f2), bytes++;
        cr_assert_eq(c1, c2, "dumps differ at byte %ld", bytes);
    } while (c1 != EOF);
    rewind(f1);
    while (fgets(line, sizeof line, f1))
        tokens += strncmp(line, "token ", 6) == 0;
    cr_expect_eq(tokens, 4, "2 runs x 2 sequences");
    cr_expect_gt(bytes, 1000);
    fclose(f1), fclose(f2);
    unlink(d1), unlink(d2);
}

Test(wsk, dumps_are_identical_across_alloc_modes) { expect_identical_dumps("--alloc dynamic", "--alloc async"); }

Test(wsk, arena_dumps_are_identical_to_dynamic)
{
    expect_identical_dumps("--alloc dynamic", "--alloc arena");
    /* small regions: chunks reused across nodes and runs, several regions */
    expect_identical_dumps("--alloc dynamic", "--alloc arena --arena-initial-chunk 256");
}

Test(wsk, arena_gives_the_same_outputs_as_dynamic)
{
    const char *shapes = "--batch 1,3 --kv-len 40,96 --runs 4";
    char a[256], b[256], c[256];
    snprintf(a, sizeof a, "%s --alloc dynamic", shapes);
    snprintf(b, sizeof b, "%s --alloc arena", shapes);
    snprintf(c, sizeof c, "%s --alloc arena --arena-initial-chunk 4096", shapes);
    uint64_t dynamic = checksum_of(a);
    cr_expect_eq(checksum_of(b), dynamic);
    cr_expect_eq(checksum_of(c), dynamic);
}

static void expect_usage_error(const char *args, const char *needle)
{
    struct result r;
    run(NULL, args, &r);
    cr_expect_eq(r.status, 2, "wsk %s: exit %d, %s", args, r.status, r.err);
    cr_expect_eq(count_lines(r.err), 1, "wsk %s: stderr '%s'", args, r.err);
    cr_expect(strncmp(r.err, "wsk: ", 5) == 0, "wsk %s: stderr '%s'", args, r.err);
    cr_expect_not_null(strstr(r.err, needle), "wsk %s: '%s' lacks '%s'", args, r.err, needle);
}

Test(wsk, bad_options_exit_2_with_one_line)
{
    expect_usage_error("--layers 0", "--layers");
    expect_usage_error("--bogus", "--bogus");
    expect_usage_error("--hidden", "--hidden");
    expect_usage_error("--hidden 12x", "--hidden");
    expect_usage_error("--hidden 99999999999", "--hidden");
    expect_usage_error("--runs -1", "--runs");
    expect_usage_error("--kv-len 200 --max-kv-len 128", "--max-kv-len");
    expect_usage_error("--kv-len 64,,96", "--kv-len");
    expect_usage_error("--kv-heads 3", "--kv-heads");
    expect_usage_error("--kv-heads 0", "--kv-heads");
    expect_usage_error("--alloc sometimes", "--alloc");
    expect_usage_error("--l1 median", "--l1");
    expect_usage_error("--head-dim 512", "--head-dim");
    expect_usage_error("--heads 4000000000 --head-dim 256", "too large");
    expect_usage_error("--batch 65535 --heads 65535 --head-dim 1", "--heads");
    expect_usage_error("extra", "extra");
    expect_usage_error("--alloc arena --arena-initial-chunk 0", "--arena-initial-chunk");
    expect_usage_error("--alloc arena --arena-initial-chunk 1000", "--arena-initial-chunk");
    expect_usage_error("--alloc arena --arena-initial-chunk 4k", "--arena-initial-chunk");
    expect_usage_error("--alloc arena --arena-initial-chunk -256", "--arena-initial-chunk");
    expect_usage_error("--alloc arena --arena-initial-chunk 99999999999999999999", "--arena-initial-chunk");
    expect_usage_error("--alloc arena --arena-initial-chunk 562949953421312", /* 2^49 */
                       "--arena-initial-chunk");
    expect_usage_error("--alloc arena --arena-initial-chunk", "--arena-initial-chunk");
    expect_usage_error("--arena-initial-chunk 4096", "--alloc arena");
}

Test(wsk, help_exits_0)
{
    struct result r;
    run(NULL, "--help", &r);
    cr_expect_eq(r.status, 0);
    cr_expect_not_null(strstr(r.out, "--max-kv-len"));
    cr_expect_not_null(strstr(r.out, "arena"));
    cr_expect_not_null(strstr(r.out, "--arena-initial-chunk"));
}

static uint64_t persistent_bytes(void)
{
    struct result r;
    run(NULL, "--runs 1", &r);
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *p = strstr(r.out, "persistent bytes ");
    cr_assert_not_null(p);
    return strtoull(p + 17, NULL, 10);
}

Test(wsk, out_of_device_memory_names_the_node)
{
    char env[64];
    struct result r;
    /* Room for the weights and a few activations, not for a whole layer. */
    snprintf(env, sizeof env, "WSSIM_CAPACITY=%" PRIu64, persistent_bytes() + 4096);
    run(env, "--runs 1", &r);
    cr_expect_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    cr_expect_eq(count_lines(r.err), 1, "stderr '%s'", r.err);
    cr_expect_not_null(strstr(r.err, "wsk: out of device memory in node /model/layers.0/"), "%s", r.err);
    /* Not even room for the weights. */
    run("WSSIM_CAPACITY=65536", "--runs 1", &r);
    cr_expect_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    cr_expect_not_null(strstr(r.err, "wsk: out of device memory in node /model/"), "%s", r.err);
    /* The arena's first region (1 MiB) does not fit next to the weights. */
    run(env, "--runs 1 --alloc arena", &r);
    cr_expect_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    cr_expect_eq(count_lines(r.err), 1, "stderr '%s'", r.err);
    cr_expect_not_null(strstr(r.err, "wsk: out of device memory in node /model/"), "%s", r.err);
}

/* ---- --alloc plan with plans written into a trace (schema/analysis.sql) ---- */

#include <sqlite3.h>

static void exec_file(sqlite3 *db, const char *path)
{
    char *sql = calloc(1, 1 << 20), *msg = NULL;
    slurp(path, sql, 1 << 20);
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, &msg), SQLITE_OK, "%s: %s", path, msg);
    free(sql);
}

/* A trace with the schema and one plan for shape_key; blocks_sql inserts its plan_blocks. */
static void make_trace(char *path, const char *shape_key, const char *blocks_sql)
{
    sqlite3 *db;
    char sql[1024], *msg = NULL;
    close(mkstemp(path));
    unlink(path);
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    exec_file(db, WS_SOURCE_DIR "/schema/schema.sql");
    exec_file(db, WS_SOURCE_DIR "/schema/analysis.sql");
    snprintf(sql, sizeof sql,
             "INSERT INTO strings(id, value) VALUES (1, '%s'), (2, '/model/embed_tokens/Gather');"
             "INSERT INTO plans VALUES (1, 1, NULL, 256, 4096, 4096, 4096, 1, 'test', 0);%s",
             shape_key, blocks_sql ? blocks_sql : "");
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, &msg), SQLITE_OK, "%s", msg);
    sqlite3_close(db);
}

static const char embed_block[] = /* the run's first allocation: the embedding output */
    "INSERT INTO plan_blocks VALUES (1, 0, NULL, 2, 'activation', NULL, 0, 1, 1024, 1024, 256);";

Test(wsk_plan, matching_blocks_are_used_the_rest_falls_back)
{
    char trace[] = "/tmp/wsk-plan-XXXXXX", args[256];
    struct result r;
    /* ordinal 0 matches; ordinal 1 names another node and so is not used.  A run makes 32
     * allocations (embedding 1; per layer 14: 12 node outputs, the attention output and its
     * workspace root; final norm, lm_head and the argmax workspace 3), so 3 runs make 96: the first
     * of each run is planned, 93 fall back. */
    make_trace(trace, "batch=1,kv=96",
               "INSERT INTO plan_blocks VALUES (1, 0, NULL, 2, 'activation', NULL, 0, 1, 1024, "
               "1024, 256), (1, 1, NULL, 2, 'activation', NULL, 1, 2, 1024, 1024, 2048);");
    snprintf(args, sizeof args, "--alloc plan --plan %s", trace);
    run(NULL, args, &r);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_not_null(strstr(r.out, "plan: 3 planned allocations, 93 fallbacks"), "%s", r.out);
    const char *line = strstr(r.out, "\nchecksum ");
    cr_assert_not_null(line);
    cr_expect_eq(strtoull(line + 10, NULL, 16), checksum_of(""), "outputs as with dynamic");
    unlink(trace);
}

static void expect_plan_refused(const char *trace, const char *needle)
{
    char args[256];
    snprintf(args, sizeof args, "--alloc plan --plan %s", trace);
    expect_usage_error(args, needle);
}

Test(wsk_plan, mismatching_or_corrupt_plans_are_refused)
{
    char other[] = "/tmp/wsk-plan-XXXXXX", outside[] = "/tmp/wsk-plan-XXXXXX";
    char empty[] = "/tmp/wsk-plan-XXXXXX";
    make_trace(other, "batch=7,kv=3", embed_block);
    expect_plan_refused(other, "no plan for this workload");
    make_trace(outside, "batch=1,kv=96",
               "INSERT INTO plan_blocks VALUES (1, 0, NULL, 2, 'activation', NULL, 0, 1, 1024, "
               "1024, 3584);"); /* 3584 + 1024 > 4096 */
    expect_plan_refused(outside, "outside");
    char overlap[] = "/tmp/wsk-plan-XXXXXX";
    make_trace(overlap, "batch=1,kv=96",
               "INSERT INTO plan_blocks VALUES (1, 0, NULL, 2, 'activation', NULL, 0, 2, 1024, 1024, 0), "
               "(1, 1, NULL, 2, 'activation', NULL, 1, 3, 1024, 1024, 512);"); /* alive together at 1 */
    expect_plan_refused(overlap, "share an address");
    unlink(overlap);
    sqlite3 *db;
    close(mkstemp(empty));
    cr_assert_eq(sqlite3_open(empty, &db), SQLITE_OK);
    exec_file(db, WS_SOURCE_DIR "/schema/schema.sql"); /* a trace never planned */
    sqlite3_close(db);
    expect_plan_refused(empty, "wstrace plan");
    cr_assert_eq(sqlite3_open(empty, &db), SQLITE_OK);
    sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL);
    sqlite3_close(db);
    expect_plan_refused(empty, "newer");
    expect_plan_refused("/nonexistent/trace.db", "cannot open");
    expect_usage_error("--alloc plan", "--plan");
    unlink(other), unlink(outside), unlink(empty);
}

/* ---- --alloc arena seen through the tracer ---- */

static int64_t query_int(sqlite3 *db, const char *sql) { return sqltest_int(db, sql); }

/* "wstrace record -o DB -- wsk ARGS"; returns wsk's stdout.  In sanitizer builds the runtime
 * must come first in LD_PRELOAD, before the tracer. */
static void record(const char *db, const char *args, struct result *r)
{
    char env[1024] = "";
    if (WS_SANITIZER_RUNTIME[0])
        snprintf(env, sizeof env, "env LD_PRELOAD=%s", WS_SANITIZER_RUNTIME);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s/bin/wstrace record -o %s --", env, WS_BUILD_DIR, db);
    unlink(db);
    run(cmd, args, r);
    cr_assert_eq(r->status, 0, "%s %s: %s", cmd, args, r->err);
}

static uint64_t printed(const char *out, const char *label)
{
    const char *p = strstr(out, label);
    cr_assert_not_null(p, "no '%s' in: %s", label, out);
    return strtoull(p + strlen(label), NULL, 10);
}

/* Device allocation calls = regions + persistent buffers, where the persistent buffers are
 * counted in a trace of --alloc dynamic (allocations outside every run) and the regions are
 * what wsk prints; the regions are allocated in the runs and freed only after the last one. */
Test(wsk_arena, device_allocations_are_regions_plus_persistent_buffers)
{
    const char *shapes = "--batch 1,3 --kv-len 40,96 --runs 4";
    char dyn[] = "/tmp/wsk-dyn-XXXXXX", arena[] = "/tmp/wsk-arena-XXXXXX", args[256];
    close(mkstemp(dyn)), close(mkstemp(arena));
    struct result r;
    sqlite3 *db;

    snprintf(args, sizeof args, "%s --alloc dynamic", shapes);
    record(dyn, args, &r);
    cr_assert_eq(sqlite3_open_v2(dyn, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    int64_t persistent = query_int(db, "SELECT COUNT(*) FROM allocations WHERE status = 0 AND "
                                       "memory = 'device' AND run_id IS NULL");
    int64_t dynamic_in_runs = query_int(db, "SELECT COUNT(*) FROM allocations WHERE status = 0 "
                                            "AND memory = 'device' AND run_id IS NOT NULL");
    sqlite3_close(db);
    cr_assert_gt(persistent, 10, "weights, caches, ids and tokens");

    snprintf(args, sizeof args, "%s --alloc arena --arena-initial-chunk 4096", shapes);
    record(arena, args, &r);
    uint64_t regions = printed(r.out, "arena: ");
    uint64_t reserved = printed(r.out, " regions, ");
    uint64_t persistent_bytes = printed(r.out, "persistent bytes ");
    cr_expect_gt(regions, 1, "4096-byte first region: it has to grow");
    cr_assert_eq(sqlite3_open_v2(arena, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_expect_eq(query_int(db, "SELECT COUNT(*) FROM allocations WHERE status = 0 AND "
                               "memory = 'device'"),
                 (int64_t)regions + persistent);
    cr_expect_eq(query_int(db, "SELECT COUNT(*) FROM allocations WHERE status = 0 AND "
                               "memory = 'device' AND run_id IS NOT NULL"),
                 (int64_t)regions);
    cr_expect_lt((int64_t)regions, dynamic_in_runs);
    cr_expect_eq(query_int(db, "SELECT SUM(bytes) FROM allocations WHERE status = 0 AND "
                               "memory = 'device' AND run_id IS NOT NULL"),
                 (int64_t)reserved);
    cr_expect_eq(query_int(db, "SELECT COUNT(*) FROM allocations WHERE run_id IS NOT NULL AND "
                               "(free_ns IS NULL OR free_ns < (SELECT MAX(end_ns) FROM runs))"),
                 0, "a region freed inside the runs");
    /* all regions are live together with every persistent buffer before the end */
    cr_expect_eq(query_int(db, "SELECT MAX(live_bytes) FROM live_bytes"), (int64_t)(persistent_bytes + reserved));
    cr_expect_eq(query_int(db, "SELECT value FROM meta WHERE key = 'arena_regions'"), (int64_t)regions);
    cr_expect_eq(query_int(db, "SELECT value FROM meta WHERE key = 'arena_reserved_bytes'"), (int64_t)reserved);
    sqlite3_close(db);
    unlink(dyn), unlink(arena);
}
