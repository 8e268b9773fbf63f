/*
 * Importers, merge and processes, end to end through the wstrace CLI.  The expected figures
 * come from the construction of the fixtures (tests/import/make_fixtures.py, whose comments
 * derive them) and of the forking program (tests/import/fork_prog.c).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sqltest.h"
#include "testdir.h"

#define FIX  WS_SOURCE_DIR "/tests/import/fixtures"
#define BIN  WS_BUILD_DIR "/bin/wstrace"
#define FORK WS_BUILD_DIR "/tests/ws_fork_prog"
#define LIB  WS_BUILD_DIR "/lib/libwstrace.so"
#define NVTX WS_BUILD_DIR "/tests/nvtx_prog"

static char dir[128];

static void setup(void) { testdir_make(dir, sizeof dir, "wsimport"); }
static void teardown(void) { testdir_remove(dir); }

/* Run a shell command; its exit status. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    cr_assert(WIFEXITED(st), "%s: did not exit", cmd);
    return WEXITSTATUS(st);
}

static int lines_of(const char *path)
{
    FILE *f = fopen(path, "r");
    int n = 0, c;
    cr_assert_not_null(f, "%s", path);
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static int file_has(const char *path, const char *text)
{
    FILE *f = fopen(path, "r");
    char buf[65536];
    cr_assert_not_null(f, "%s", path);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strstr(buf, text) != NULL;
}

static sqlite3 *open_db(const char *path)
{
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK, "%s", path);
    return db;
}

static int64_t q(const char *path, const char *sql)
{
    sqlite3 *db = open_db(path);
    int64_t v = sqltest_int(db, sql);
    sqlite3_close(db);
    return v;
}

static int64_t q(const char *path, const char *sql);

/* Every analysis command runs on the trace; the ones that write results do. */
static void analyses_run(const char *trace)
{
    cr_expect_eq(run("%s summary %s >/dev/null", BIN, trace), 0);
    cr_expect_eq(run("%s summary --json %s >/dev/null", BIN, trace), 0);
    cr_expect_eq(run("%s lifetimes %s >/dev/null", BIN, trace), 0);
    cr_expect_eq(run("%s resolve %s >/dev/null", BIN, trace), 0);
    cr_expect_eq(run("%s verify %s >/dev/null", BIN, trace), 0);
    /* plan works without run markers too (every outermost range is a run): it plans when some
     * allocation lies inside a run and says so otherwise (exit 2).  Imports carry no shape keys
     * unless they have runs rows, so there is one plan, of the first run, holding a block for each
     * workspace and activation of that run. */
    int64_t in_runs = q(trace, "SELECT COUNT(*) FROM lifetimes WHERE run_id IS NOT NULL");
    cr_expect_eq(run("%s plan %s >/dev/null 2>&1", BIN, trace), in_runs ? 0 : 2);
    if (in_runs && !q(trace, "SELECT COUNT(*) FROM runs")) {
        cr_expect_eq(q(trace, "SELECT COUNT(*) FROM plans"), 1);
        cr_expect_eq(q(trace, "SELECT COUNT(*) FROM plan_blocks"),
                     q(trace, "SELECT COUNT(*) FROM lifetimes WHERE class IN ('workspace', 'activation') "
                              "AND run_id = (SELECT MIN(run_id) FROM lifetimes)"));
    }
    cr_expect_eq(run("%s report --baseline %s --candidate %s >/dev/null", BIN, trace, trace), 0);
    cr_expect_eq(run("%s report --ranks %s >/dev/null", BIN, trace), 0);
    cr_expect_eq(run("%s export %s --format chrome -o %s.json", BIN, trace, trace), 0);
    cr_expect_eq(run("%s view --quiet %s -o %s.html", BIN, trace, trace), 0);
}

/* ---- Nsight Systems ---- */

TestSuite(nsys, .init = setup, .fini = teardown);

static void import_nsys(const char *name, char *trace, size_t len)
{
    snprintf(trace, len, "%s/%s.db", dir, name);
    cr_assert_eq(run("%s import nsys %s/%s.sqlite -o %s >%s/out 2>%s/err", BIN, FIX, name, trace, dir, dir), 0);
}

Test(nsys, version_2021_maps_every_table_it_has)
{
    char t[512], err[300];
    import_nsys("nsys_2021", t, sizeof t);
    snprintf(err, sizeof err, "%s/err", dir);
    /* one line names what the 2021.5 layout lacks */
    cr_expect_eq(lines_of(err), 1);
    cr_expect(file_has(err, "ThreadNames"));
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM processes"), 1);
    cr_expect_eq(q(t, "SELECT pid FROM processes"), 100);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM processes WHERE source = 'nsys' AND host = 'node-a'"), 1);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM threads"), 2);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM ranges WHERE kind = 'push'"), 5);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM ranges WHERE kind = 'startend' AND end_thread_id <> thread_id"), 1);
    cr_expect_eq(q(t, "SELECT depth FROM ranges r JOIN strings s ON s.id = r.name_id WHERE s.value = "
                      "'model/layer0/matmul'"),
                 2);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM allocations"), 6);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM allocations WHERE status <> 0"), 1);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM allocations WHERE memory = 'host'"), 1);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM allocations WHERE api = 'static' AND range_id IS NULL"), 1);
    cr_expect_eq(q(t, "SELECT free_ns FROM allocations WHERE address = 4096"), 2850);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM allocations a JOIN ranges r ON r.id = a.range_id JOIN strings s ON "
                      "s.id = r.name_id WHERE a.address = 4096 AND s.value = 'model/layer0/matmul'"),
                 1);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM launches"), 3);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM launches l JOIN strings s ON s.id = l.kernel_name_id WHERE s.value = "
                      "'gemm_kernel<float>' AND l.grid_x = 4 AND l.block_x = 128 AND l.ns = 2500"),
                 1);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM launches WHERE api = 'cudaGraphLaunch'"), 1);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM marks m JOIN ranges r ON r.id = m.range_id JOIN strings s ON s.id = "
                      "r.name_id WHERE s.value = 'model/layer1'"),
                 1);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM domains d JOIN strings s ON s.id = d.name_id WHERE s.value = 'MyDomain'"),
                 1);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM ranges r JOIN domains d ON d.id = r.domain_id WHERE r.domain_id <> 0"), 1);
    analyses_run(t);
    /* the classes the fixture's comments derive: workspace, activation, persistent, unattributed */
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM lifetimes WHERE class = 'workspace'"), 1);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM lifetimes WHERE class = 'activation' AND bytes = 4096"), 1);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM lifetimes WHERE class = 'persistent' AND bytes = 2048"), 1);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM lifetimes WHERE class = 'unattributed' AND bytes = 256"), 1);
    cr_expect_eq(q(t, "SELECT MAX(live_bytes) FROM live_bytes"), 5376);
}

Test(nsys, version_2024_keeps_processes_and_ranks_apart)
{
    char t[512];
    import_nsys("nsys_2024", t, sizeof t);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM processes"), 2);
    cr_expect_eq(q(t, "SELECT rank FROM processes WHERE pid = 200"), 1);
    cr_expect_eq(q(t, "SELECT rank FROM processes WHERE pid = 100"), 0);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM processes WHERE command_line = 'python train.py'"), 2);
    /* the same address in two processes: each free closes its own process's allocation */
    cr_expect_eq(q(t, "SELECT a.free_ns FROM allocations a JOIN threads t ON t.id = a.thread_id JOIN processes p ON "
                      "p.id = t.process_id WHERE a.address = 4096 AND p.pid = 200"),
                 3050);
    cr_expect_eq(q(t, "SELECT a.free_ns FROM allocations a JOIN threads t ON t.id = a.thread_id JOIN processes p ON "
                      "p.id = t.process_id WHERE a.address = 4096 AND p.pid = 100"),
                 2850);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM threads t JOIN strings s ON s.id = t.name_id WHERE s.value = 'loader'"), 1);
    cr_expect_eq(q(t, "SELECT start_time_unix_ns - start_ns FROM processes WHERE pid = 100"), 1700000000000000000ll);
    /* live bytes per process: 5376 (rank 0) and 8192 (rank 1), never their sum */
    cr_expect_eq(q(t, "SELECT MAX(live_bytes) FROM live_bytes WHERE process_id = 1"), 5376);
    cr_expect_eq(q(t, "SELECT MAX(live_bytes) FROM live_bytes WHERE process_id = 2"), 8192);
    cr_expect_eq(run("%s summary %s > %s/sum", BIN, t, dir), 0);
    char sum[300];
    snprintf(sum, sizeof sum, "%s/sum", dir);
    cr_expect(file_has(sum, "largest                  rank 1: 8.0 KiB (8192)"));
    cr_expect(file_has(sum, "spread                   2.8 KiB (2816) from rank 0 to rank 1"));
    cr_expect(file_has(sum, "source                   nsys"));
    analyses_run(t);
    /* report --ranks: 8192 against 5376 is 52.4 % above the smallest */
    cr_expect_eq(run("%s report --ranks %s --format json -o %s/ranks.json", BIN, t, dir), 0);
    snprintf(sum, sizeof sum, "%s/ranks.json", dir);
    cr_expect(file_has(sum, "\"largest\": \"rank 1\""));
    cr_expect(file_has(sum, "\"spread_bytes\": 2816"));
    cr_expect_eq(run("%s report --ranks %s --max-regression 50 >/dev/null 2>&1", BIN, t), 1);
    cr_expect_eq(run("%s report --ranks %s --max-regression 53 >/dev/null 2>&1", BIN, t), 0);
    cr_expect_eq(run("%s report --ranks %s --baseline %s >/dev/null 2>&1", BIN, t, t), 2);
}

Test(nsys, refuses_what_it_cannot_read)
{
    char err[300], txt[300];
    snprintf(err, sizeof err, "%s/err", dir);
    snprintf(txt, sizeof txt, "%s/text.sqlite", dir);
    FILE *f = fopen(txt, "w");
    fputs("not a database at all, but long enough to be looked at by SQLite........................\n", f);
    fclose(f);
    const char *inputs[] = {FIX "/nsys_renamed.sqlite", FIX "/foreign.sqlite", txt, "/nonexistent/report.sqlite"};
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        cr_expect_eq(run("%s import nsys %s -o %s/x.db >/dev/null 2>%s", BIN, inputs[i], dir, err), 2, "%s", inputs[i]);
        cr_expect_eq(lines_of(err), 1, "%s", inputs[i]);
        cr_expect_neq(access(dir, F_OK), -1);
        char out[300];
        snprintf(out, sizeof out, "%s/x.db", dir);
        cr_expect_neq(access(out, F_OK), 0, "%s left an output", inputs[i]);
    }
    run("%s import nsys %s -o %s/x.db 2>%s", BIN, FIX "/nsys_renamed.sqlite", dir, err);
    cr_expect(file_has(err, "memKind"));
    /* a wstrace trace is not an Nsight export either */
    char t[512];
    import_nsys("nsys_2021", t, sizeof t);
    cr_expect_eq(run("%s import nsys %s -o %s/y.db 2>%s", BIN, t, dir, err), 2);
}

/* ---- PyTorch snapshots ---- */

TestSuite(torch, .init = setup, .fini = teardown);

static void check_snapshot(const char *name)
{
    char t[512];
    snprintf(t, sizeof t, "%s/%s.db", dir, name);
    cr_assert_eq(run("%s import torch-snapshot %s/%s.pickle -o %s >/dev/null 2>/dev/null", BIN, FIX, name, t), 0);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM allocations WHERE memory = 'device'"), 7);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM allocations WHERE memory = 'device' AND status = 2 AND requested_bytes = "
                      "1099511627776"),
                 1);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM allocations WHERE memory = 'reserved'"), 3);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM allocations WHERE memory = 'reserved' AND free_ns IS NOT NULL"), 1);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM api_errors"), 1);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM marks"), 1);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM ranges"), 4);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM ranges r JOIN strings s ON s.id = r.name_id WHERE s.value = "
                      "'model.py:10:attn'"),
                 2);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM ranges r JOIN strings s ON s.id = r.name_id WHERE s.value = "
                      "'layers.py:20:mlp'"),
                 1);
    cr_expect_eq(q(t, "SELECT requested_bytes FROM allocations WHERE bytes = 4096 AND memory = 'device'"), 4000);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM stacks"), 3);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM allocation_stacks"), 5);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM stack_frames f JOIN stacks k ON k.id = f.stack_id JOIN strings s ON s.id "
                      "= f.function_id WHERE s.value = 'attn' AND f.depth = 2"),
                 1);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM processes WHERE source = 'torch-snapshot'"), 1);
    analyses_run(t);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM lifetimes WHERE class = 'workspace' AND bytes = 1024"), 1);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM lifetimes WHERE class = 'activation'"), 2);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM lifetimes WHERE class = 'persistent' AND bytes = 256"), 1);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM lifetimes WHERE class = 'unattributed'"), 2);
    cr_expect_eq(q(t, "SELECT MAX(live_bytes) FROM live_bytes"), 4096 + 1048576 + 3072);
}

Test(torch, version_2_1) { check_snapshot("torch_2_1"); }
Test(torch, version_2_0_without_times) { check_snapshot("torch_2_0"); }

Test(torch, module_rule_names_nodes_by_module_path)
{
    char t[512];
    snprintf(t, sizeof t, "%s/m.db", dir);
    cr_assert_eq(run("%s import torch-snapshot --node module %s/torch_2_1.pickle -o %s >/dev/null", BIN, FIX, t), 0);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM ranges r JOIN strings s ON s.id = r.name_id WHERE s.value = 'model.attn'"),
                 2);
    cr_expect_eq(
        q(t, "SELECT COUNT(*) FROM ranges r JOIN strings s ON s.id = r.name_id WHERE s.value = 'mylib.layers.mlp'"), 1);
}

Test(torch, hostile_pickles_are_refused_without_running_anything)
{
    char err[300], pwned[300];
    snprintf(err, sizeof err, "%s/err", dir);
    snprintf(pwned, sizeof pwned, "%s/PWNED", FIX);
    const char *inputs[] = {"torch_truncated", "torch_global", "torch_stack_global"};
    for (size_t i = 0; i < 3; i++) {
        cr_expect_eq(
            run("%s import torch-snapshot %s/%s.pickle -o %s/x.db >/dev/null 2>%s", BIN, FIX, inputs[i], dir, err), 2,
            "%s", inputs[i]);
        cr_expect_eq(lines_of(err), 1, "%s", inputs[i]);
    }
    cr_expect_neq(access(pwned, F_OK), 0, "a pickle ran code");
    run("%s import torch-snapshot %s/torch_global.pickle -o %s/x.db 2>%s", BIN, FIX, dir, err);
    cr_expect(file_has(err, "posix.system"));
    /* an Nsight export is not a pickle */
    cr_expect_eq(run("%s import torch-snapshot %s/nsys_2021.sqlite -o %s/x.db 2>/dev/null", BIN, FIX, dir), 2);
}

/* ---- merge ---- */

TestSuite(merge, .init = setup, .fini = teardown);

static const char *preload(void)
{
    static char p[1024];
    snprintf(p, sizeof p, "%s%s%s", WS_SANITIZER_RUNTIME, WS_SANITIZER_RUNTIME[0] ? ":" : "", LIB);
    return p;
}

/* The traces t.db and t.db.<pid> the forking program left, into list (count returned). */
static int parts(char list[][512], int max)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL && n < max;)
        if (strncmp(e->d_name, "t.db", 4) == 0 && !strstr(e->d_name, "spool") &&
            (e->d_name[4] == 0 || e->d_name[4] == '.'))
            snprintf(list[n++], 512, "%s/%s", dir, e->d_name);
    if (d)
        closedir(d);
    return n;
}

Test(merge, eight_forked_processes_are_the_sum_of_their_parts)
{
    char list[16][512], cmd[8192], m[512];
    cr_assert_eq(run("cd %s && LD_PRELOAD=%s WSTRACE_OUTPUT=%s/t.db %s 8", dir, preload(), dir, FORK), 0);
    int n = parts(list, 16);
    cr_assert_eq(n, 8);
    int64_t sum[4] = {0};
    static const char *const counts[] = {"SELECT COUNT(*) FROM allocations", "SELECT COUNT(free_ns) FROM allocations",
                                         "SELECT COUNT(*) FROM ranges", "SELECT COUNT(*) FROM threads"};
    size_t at = (size_t)snprintf(cmd, sizeof cmd, "%s merge -o %s/m.db", BIN, dir);
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 4; k++)
            sum[k] += q(list[i], counts[k]);
        at += (size_t)snprintf(cmd + at, sizeof cmd - at, " %s", list[i]);
    }
    /* fork_prog.c: process k makes k + 1 allocations and k frees in one range */
    cr_expect_eq(sum[0], 36);
    cr_expect_eq(sum[1], 28);
    cr_expect_eq(sum[2], 8);
    cr_assert_eq(run("%s >/dev/null", cmd), 0);
    snprintf(m, sizeof m, "%s/m.db", dir);
    for (int k = 0; k < 4; k++)
        cr_expect_eq(q(m, counts[k]), sum[k], "%s", counts[k]);
    cr_expect_eq(q(m, "SELECT COUNT(*) FROM processes"), 8);
    cr_expect_eq(q(m, "SELECT COUNT(DISTINCT pid) FROM processes"), 8);
    cr_expect_eq(q(m, "SELECT COUNT(*) FROM processes WHERE clock_offset_ns = 0"), 8); /* one boot: one clock */
    /* every process's peak: (k + 1) MiB * 2 for k >= 1, 1 MiB for the parent */
    cr_expect_eq(q(m, "SELECT SUM(p) FROM (SELECT MAX(live_bytes) AS p FROM live_bytes GROUP BY process_id)"),
                 (1 + 4 + 6 + 8 + 10 + 12 + 14 + 16) << 20);
    cr_expect_eq(q(m, "SELECT MAX(live_bytes) FROM live_bytes"), 16 << 20);
    cr_expect_eq(q(m, "SELECT COUNT(*) FROM process_meta WHERE key = 'pid'"), 8);
    analyses_run(m);
    cr_expect_eq(q(m, "SELECT COUNT(*) FROM lifetimes WHERE class = 'workspace'"), 28);
    cr_expect_eq(q(m, "SELECT COUNT(*) FROM lifetimes WHERE class = 'persistent'"), 8);
}

Test(merge, record_merges_the_processes_a_program_forks)
{
    char t[512];
    snprintf(t, sizeof t, "%s/t.db", dir);
    /* in sanitizer builds the runtime comes first in LD_PRELOAD; record appends the tracer */
    cr_assert_eq(run("cd %s && LD_PRELOAD=%s WSTRACE_LIB=%s %s record -o %s -- %s 8 2>/dev/null", dir,
                     WS_SANITIZER_RUNTIME, LIB, BIN, t, FORK),
                 0);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM processes"), 8);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM allocations"), 36);
    char list[16][512];
    cr_expect_eq(parts(list, 16), 1, "the per-process traces stay behind");
}

Test(merge, rank_patterns_name_each_rank_trace)
{
    char t[512];
    cr_assert_eq(run("cd %s && RANK=3 LOCAL_RANK=1 LD_PRELOAD=%s WSTRACE_OUTPUT=%s/r.%%r.%%l.db %s 1", dir, preload(),
                     dir, FORK),
                 0);
    snprintf(t, sizeof t, "%s/r.3.1.db", dir);
    cr_assert_eq(access(t, R_OK), 0, "%s", t);
    cr_expect_eq(q(t, "SELECT rank FROM processes"), 3);
    cr_expect_eq(q(t, "SELECT local_rank FROM processes"), 1);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM meta WHERE key = 'source' AND value = 'tracer'"), 1);
    cr_assert_eq(run("cd %s && env -u RANK -u OMPI_COMM_WORLD_RANK -u PMI_RANK -u PMIX_RANK -u SLURM_PROCID "
                     "LD_PRELOAD=%s WSTRACE_OUTPUT=%s/u.%%r.db %s 1",
                     dir, preload(), dir, FORK),
                 0);
    cr_expect_eq(run("ls %s/u.pid*.db >/dev/null", dir), 0);
    cr_expect_eq(run("cd %s && LD_PRELOAD=%s WSTRACE_OUTPUT=%s/v.%%q.db %s 1 2>%s/err", dir, preload(), dir, FORK, dir),
                 0, "a bad pattern leaves the program running, untraced");
    cr_expect_eq(run("ls %s/v.* >/dev/null 2>&1", dir), 2);
}

Test(merge, clocks_of_other_machines_align_by_their_start)
{
    char a[512], b[512], m[512];
    snprintf(a, sizeof a, "%s/a.db", dir);
    snprintf(b, sizeof b, "%s/b.db", dir);
    snprintf(m, sizeof m, "%s/m.db", dir);
    cr_assert_eq(run("%s import nsys %s/nsys_2024.sqlite -o %s >/dev/null", BIN, FIX, a), 0);
    cr_assert_eq(run("%s import torch-snapshot %s/torch_2_1.pickle -o %s >/dev/null", BIN, FIX, b), 0);
    cr_assert_eq(run("%s merge -o %s %s %s >/dev/null", BIN, m, a, b), 0);
    cr_expect_eq(q(m, "SELECT COUNT(*) FROM processes"), 3);
    /* on the merged timeline, the distance between two starts is their wall-clock distance */
    cr_expect_eq(q(m, "SELECT COUNT(*) FROM processes p, processes r WHERE (p.start_ns - r.start_ns) <> "
                      "(p.start_time_unix_ns - r.start_time_unix_ns)"),
                 0);
    cr_expect_eq(q(m, "SELECT COUNT(*) FROM processes WHERE merged_from IS NULL"), 0);
    cr_expect_eq(q(m, "SELECT COUNT(*) FROM allocations"), 7 + 10);
    cr_expect_eq(q(m, "SELECT COUNT(*) FROM stacks"), 3);
    cr_expect_eq(q(m, "SELECT COUNT(*) FROM allocation_stacks s JOIN allocations a ON a.id = s.allocation_id"), 5);
    /* the rows of each input keep their own process */
    cr_expect_eq(q(m, "SELECT COUNT(*) FROM allocations a JOIN threads t ON t.id = a.thread_id JOIN processes p ON "
                      "p.id = t.process_id WHERE p.source = 'torch-snapshot'"),
                 10);
    analyses_run(m);
}

Test(merge, bad_input_is_refused_in_one_line)
{
    char err[300], t[512];
    snprintf(err, sizeof err, "%s/err", dir);
    snprintf(t, sizeof t, "%s/a.db", dir);
    cr_assert_eq(run("%s import nsys %s/nsys_2021.sqlite -o %s >/dev/null 2>&1", BIN, FIX, t), 0);
    cr_expect_eq(run("%s merge -o %s %s 2>%s", BIN, t, t, err), 2);
    cr_expect_eq(lines_of(err), 1);
    cr_expect_eq(run("%s merge -o %s/m.db %s %s/foreign.sqlite 2>%s", BIN, dir, t, FIX, err), 2);
    cr_expect_eq(lines_of(err), 1);
    cr_expect_eq(run("%s merge %s 2>/dev/null", BIN, t), 2);
    cr_expect_eq(q(t, "SELECT COUNT(*) FROM allocations"), 6, "the input is untouched");
}

/* Every table of the schema, the ones other parts of wstrace add included (NVTX attributes,
 * heaps, regions), holds the sum of its parts after a merge; value-keyed dictionaries (strings,
 * domains by name, categories by domain and number) hold each value once. */
Test(merge, every_table_is_the_sum_of_its_parts)
{
    static const char *const modes[] = {"domains", "attributes", "memory"};
    char in[3][512], m[512], cmd[4096];
    for (int i = 0; i < 3; i++) {
        snprintf(in[i], sizeof in[i], "%s/n%d.db", dir, i);
        cr_assert_eq(run("cd %s && LD_PRELOAD=%s WSTRACE_OUTPUT=%s %s %s >/dev/null 2>&1", dir, preload(), in[i], NVTX,
                         modes[i]),
                     0);
    }
    snprintf(m, sizeof m, "%s/m.db", dir);
    snprintf(cmd, sizeof cmd, "%s merge -o %s %s %s %s %s >/dev/null", BIN, m, in[0], in[1], in[2], in[1]);
    cr_assert_eq(run("%s", cmd), 0);
    sqlite3 *db = open_db(m);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('meta', "
                                    "'strings', 'domains', 'categories', 'processes', 'process_meta')",
                                    -1, &st, NULL),
                 SQLITE_OK);
    int tables = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        char sql[256];
        const char *t = (const char *)sqlite3_column_text(st, 0);
        snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM \"%s\"", t);
        int64_t parts = q(in[0], sql) + 2 * q(in[1], sql) + q(in[2], sql);
        cr_expect_eq(sqltest_int(db, sql), parts, "%s", t);
        tables++;
    }
    sqlite3_finalize(st);
    cr_expect_geq(tables, 19); /* the trace tables of schema.sql in version 2 */
    cr_expect_eq(sqltest_int(db, "SELECT COUNT(*) FROM processes"), 4);
    /* the attributes trace merged twice: its categories are there once, the second counted */
    cr_expect_eq(sqltest_int(db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'merge.duplicate_rows'"),
                 q(in[1], "SELECT COUNT(*) FROM categories"));
    /* ranges point at the ranges of their own process */
    cr_expect_eq(sqltest_int(db, "SELECT COUNT(*) FROM ranges r JOIN ranges p ON p.id = r.parent_id JOIN threads a ON "
                                 "a.id = r.thread_id JOIN threads b ON b.id = p.thread_id WHERE a.process_id <> "
                                 "b.process_id"),
                 0);
    cr_expect_eq(sqltest_int(db, "SELECT COUNT(*) FROM range_attributes a LEFT JOIN ranges r ON r.id = a.range_id "
                                 "WHERE r.id IS NULL"),
                 0);
    sqlite3_close(db);
    analyses_run(m);
}
