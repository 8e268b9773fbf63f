/*
 * wstrace report and wstrace export on small hand-built traces whose figures are computed by
 * hand below: live bytes, peaks, calls per run, per-node changes, verdicts, parity, thresholds,
 * and the behaviour on bad input (exit 2, one line, no output file left behind).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "tracedb.h"

/* ---- fixture: one temporary folder per test ---- */

static char dir[256];

static void make_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/wstrace-report-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp failed");
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static void remove_dir(void) { nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS); }

TestSuite(report, .init = make_dir, .fini = remove_dir);
TestSuite(export, .init = make_dir, .fini = remove_dir);

static const char *in_dir(const char *name)
{
    static char paths[64][512]; /* enough for every path one test holds at once */
    static int next;
    char *p = paths[next++ % 64];
    snprintf(p, 512, "%s/%s", dir, name);
    return p;
}

static int file_exists(const char *path) { return access(path, F_OK) == 0; }

/* Entries of the test folder (so that a leftover temporary file is seen too). */
static int dir_entries(void)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long size = ftell(f);
    cr_assert_geq(size, 0);
    rewind(f);
    char *buf = malloc((size_t)size + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
    buf[size] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)size;
    return buf;
}

/* ---- traces ---- */

static void make_trace(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    char err[512];
    cr_assert_eq(ws_tracedb_create(path, &db, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ws_tracedb_exec(db, ws_analysis_sql, err, sizeof err), 0, "%s", err);
    if (sql)
        cr_assert_eq(ws_tracedb_exec(db, sql, err, sizeof err), 0, "%s", err);
    cr_assert_eq(sqlite3_close(db), SQLITE_OK);
}

/*
 * Baseline ("dynamic"): two runs, nodes /model/a and /model/b on thread 1, a start/end range on
 * thread 2, one launch, device allocations on devices 0 and 1, a failed and a host allocation
 * (neither counts as live device bytes).
 *   device 0 live: 0, +1024 -> 1024, +2048 -> 3072, -1024 -> 2048, +512 -> 2560, -2048 -> 512
 *   device 1 live: 0, +1000 -> 1000, -1000 -> 0
 *   peak 3072 (device 0), 4 device allocation calls in 2 runs = 2.00 per run.
 * Trace starts at 1000 ns and ends at 100000 ns (thread last_ns, end of run 2).
 */
static const char baseline_sql[] =
    "INSERT INTO meta(key, value) VALUES ('command_line', 'wsk --alloc dynamic'), ('output_checksum', 'abc123');"
    "INSERT INTO strings(id, value) VALUES (1, 'main'), (2, '/model/a'), (3, '/model/b'), (4, 'kern_a'),"
    " (5, '/model/c'), (6, 'span');"
    "INSERT INTO threads(id, os_tid, name_id, first_ns, last_ns) VALUES (1, 100, 1, 1000, 100000), (2, 101, NULL, 1500, 60000);"
    "INSERT INTO runs VALUES (1, 1, NULL, 1000, 50000), (2, 1, NULL, 50000, 100000);"
    "INSERT INTO ranges VALUES (1, 1, 1, 2, 0, 'push', 'nvtx', NULL, 0, 1, 2000, 5000),"
    " (2, 1, 1, 3, 0, 'push', 'nvtx', NULL, 0, 1, 5000, 9000),"
    " (3, 1, NULL, 2, 0, 'push', 'nvtx', NULL, 0, 2, 51000, NULL),"
    " (4, 2, 1, 6, 0, 'startend', 'nvtx', NULL, 0, NULL, 3000, 3500);"
    "INSERT INTO allocations VALUES"
    " (1, 'cudaMalloc', 'device', 0, 4096, 1024, 1024, 0, NULL, 1, 1, 1, 2100, 4000, 'cudaFree', 1, 1, NULL),"
    " (2, 'cudaMalloc', 'device', 0, 8192, 2048, 2048, 0, NULL, 1, 1, 1, 2200, 8000, 'cudaFree', 1, 2, NULL),"
    " (3, 'cudaMalloc', 'device', 0, 16384, 512, 512, 0, NULL, 1, 2, 1, 5100, NULL, NULL, NULL, NULL, NULL),"
    " (4, 'cudaMalloc', 'device', 1, 32768, 1000, 1000, 0, NULL, 2, NULL, 1, 6000, 7000, 'cudaFree', 2, NULL, NULL),"
    " (5, 'cudaMalloc', 'device', 0, NULL, 1099511627776, 0, 2, NULL, 1, 2, 1, 6500, NULL, NULL, NULL, NULL, NULL),"
    " (6, 'cudaMallocHost', 'host', 0, 65536, 4096, 4096, 0, NULL, 1, 2, 1, 6600, 6700, 'cudaFreeHost', 1, 2, NULL);"
    "INSERT INTO launches VALUES (1, 'cudaLaunchKernel', 4, 1234, 4, 1, 1, 128, 1, 1, 0, 0, 0, 1, 1, 1, 2500);";

/*
 * Results of the analysis commands on the baseline.  Per node, max over runs of the per-run sums:
 *   /model/a workspace max(1024, 3000) = 3000, activation 2048; /model/b workspace 512;
 *   /model/c workspace 100.  Verdicts: ok 2, over-reservation 1.  One plan: 4096 / 4096 / 3072.
 */
static const char baseline_results_sql[] =
    "INSERT INTO lifetimes(allocation_id, run_id, class, node_name_id, bytes) VALUES"
    " (1, 1, 'workspace', 2, 1024), (2, 1, 'activation', 2, 2048), (3, 1, 'workspace', 3, 512),"
    " (4, 2, 'workspace', 2, 3000), (5, 1, 'workspace', 5, 100), (6, NULL, 'persistent', NULL, 999);"
    "INSERT INTO verifications(node_name_id, slot, verdict) VALUES (2, 0, 'ok'), (3, 0, 'ok'),"
    " (5, 0, 'over-reservation');"
    "INSERT INTO plans VALUES (1, NULL, 1, 256, 4096, 4096, 3072, 3, 'greedy', 0.01);";

/*
 * Candidate ("planned"): one backing buffer of 2048 bytes allocated outside the runs and one
 * dynamic allocation of 256 bytes inside run 1: peak 2304 (-768, -25.0 %), 1 call in 2 runs =
 * 0.50 per run (-75.0 %), 1 call outside the runs.  Per node:
 *   /model/a workspace 1000 (-2000), activation 0 (-2048): change 4048
 *   /model/b workspace 600 (+88): change 88;  /model/c gone: change 100;  /model/d activation 50 (new)
 * so the order is /model/a, /model/c, /model/b, /model/d.  Verdicts: ok 3.  No plan.
 */
static const char candidate_sql[] =
    "INSERT INTO meta(key, value) VALUES ('output_checksum', 'abc123'), ('plan_fallbacks', 0);"
    "INSERT INTO strings(id, value) VALUES (1, 'main'), (2, '/model/a'), (3, '/model/b'), (4, '/model/d');"
    "INSERT INTO threads(id, os_tid, name_id, first_ns, last_ns) VALUES (1, 100, 1, 1000, 90000);"
    "INSERT INTO runs VALUES (1, 1, NULL, 1000, 40000), (2, 1, NULL, 40000, 90000);"
    "INSERT INTO ranges VALUES (1, 1, 1, 2, 0, 'push', 'nvtx', NULL, 0, 1, 2000, 4000);"
    "INSERT INTO allocations VALUES"
    " (1, 'cudaMalloc', 'device', 0, 4096, 2048, 2048, 0, NULL, 1, NULL, NULL, 1500, 90000, 'cudaFree', 1, NULL, NULL),"
    " (2, 'cudaMalloc', 'device', 0, 8192, 256, 256, 0, NULL, 1, 1, 1, 5100, NULL, NULL, NULL, NULL, NULL);"
    "INSERT INTO lifetimes(allocation_id, run_id, class, node_name_id, bytes) VALUES"
    " (1, 1, 'workspace', 2, 1000), (2, 1, 'workspace', 3, 600), (3, 1, 'activation', 4, 50);"
    "INSERT INTO verifications(node_name_id, slot, verdict) VALUES (2, 0, 'ok'), (3, 0, 'ok'), (4, 0, 'ok');";

static const char *make_baseline(void)
{
    const char *path = in_dir("baseline.wst");
    make_trace(path, baseline_sql);
    sqlite3 *db = NULL;
    char err[512];
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(ws_tracedb_exec(db, baseline_results_sql, err, sizeof err), 0, "%s", err);
    sqlite3_close(db);
    return path;
}

static const char *make_candidate(const char *name, const char *checksum)
{
    const char *path = in_dir(name);
    make_trace(path, candidate_sql);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(ws_tracedb_meta_text(db, "output_checksum", checksum), 0);
    sqlite3_close(db);
    return path;
}

/* ---- running a command ---- */

/* Run a command with argv (NULL-terminated), capturing what it prints on stderr into err. */
static int run(int (*cmd)(int, char **), const char *const *args, char *err, size_t errlen)
{
    char *argv[32];
    int argc = 0;
    for (; args[argc]; argc++) {
        cr_assert_lt(argc, 31);
        argv[argc] = (char *)args[argc];
    }
    argv[argc] = NULL;
    char path[512];
    snprintf(path, sizeof path, "%s.stderr", dir); /* outside the folder whose entries tests count */
    fflush(stderr);
    int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(saved >= 0 && fd >= 0);
    cr_assert_geq(dup2(fd, 2), 0);
    close(fd);
    int rc = cmd(argc, argv);
    fflush(stderr);
    cr_assert_geq(dup2(saved, 2), 0);
    close(saved);
    char *text = read_all(path, NULL);
    unlink(path);
    if (err)
        snprintf(err, errlen, "%s", text);
    free(text);
    return rc;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* ---- export ---- */

static json_t *load_json(const char *path)
{
    json_error_t jerr;
    json_t *doc = json_load_file(path, 0, &jerr);
    cr_assert_not_null(doc, "%s: line %d: %s", path, jerr.line, jerr.text);
    return doc;
}

static json_t *export_events(const char *trace, const char *extra)
{
    const char *out = in_dir("out.json");
    const char *args[] = {"export", trace, "--format", "chrome", "-o", out, extra, NULL};
    char err[512];
    cr_assert_eq(run(cmd_export, args, err, sizeof err), WS_EXIT_OK, "%s", err);
    json_t *doc = load_json(out);
    json_t *events = json_object_get(doc, "traceEvents");
    cr_assert(json_is_array(events));
    json_incref(events);
    json_decref(doc);
    return events;
}

static const char *str_of(json_t *obj, const char *key) { return json_string_value(json_object_get(obj, key)); }

static double num_of(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    cr_assert(json_is_number(v), "'%s' is not a number", key);
    return json_number_value(v);
}

static size_t count_ph(json_t *events, const char *ph, const char *cat)
{
    size_t i, n = 0;
    json_t *ev;
    json_array_foreach(events, i, ev) n += !strcmp(str_of(ev, "ph"), ph) && (!cat || !strcmp(str_of(ev, "cat"), cat));
    return n;
}

Test(export, complete_events_for_node_ranges)
{
    json_t *events = export_events(make_baseline(), NULL);
    struct {
        const char *name;
        double ts, dur;
        int unclosed;
    } want[] = {{"/model/a", 1.0, 3.0, 0}, {"/model/b", 4.0, 4.0, 0}, {"/model/a", 50.0, 49.0, 1}};
    size_t i, k = 0;
    json_t *ev;
    cr_assert_eq(count_ph(events, "X", "node"), 3);
    json_array_foreach(events, i, ev)
    {
        if (strcmp(str_of(ev, "ph"), "X") != 0 || strcmp(str_of(ev, "cat"), "node") != 0)
            continue;
        cr_expect_str_eq(str_of(ev, "name"), want[k].name);
        cr_expect(fabs(num_of(ev, "ts") - want[k].ts) < 1e-9, "ts %f", num_of(ev, "ts"));
        cr_expect(fabs(num_of(ev, "dur") - want[k].dur) < 1e-9, "dur %f", num_of(ev, "dur"));
        cr_expect(json_is_real(json_object_get(ev, "ts")), "ts must be a number with a fractional part");
        cr_expect_eq(num_of(ev, "tid"), 1);
        cr_expect_eq(json_is_true(json_object_get(json_object_get(ev, "args"), "unclosed")), want[k].unclosed);
        k++;
    }
    /* the start/end range is an async pair, 2.0 .. 2.5 us */
    cr_assert_eq(count_ph(events, "b", NULL), 1);
    cr_assert_eq(count_ph(events, "e", NULL), 1);
    json_array_foreach(events, i, ev)
    {
        if (!strcmp(str_of(ev, "ph"), "b"))
            cr_expect(fabs(num_of(ev, "ts") - 2.0) < 1e-9);
        if (!strcmp(str_of(ev, "ph"), "e"))
            cr_expect(fabs(num_of(ev, "ts") - 2.5) < 1e-9);
    }
    json_decref(events);
}

Test(export, process_and_thread_names)
{
    json_t *events = export_events(make_baseline(), NULL);
    size_t i;
    json_t *ev;
    int process = 0, threads = 0;
    json_array_foreach(events, i, ev)
    {
        if (strcmp(str_of(ev, "ph"), "M") != 0)
            continue;
        const char *label = str_of(json_object_get(ev, "args"), "name");
        if (!strcmp(str_of(ev, "name"), "process_name")) {
            cr_expect_str_eq(label, "wsk --alloc dynamic");
            process++;
        } else if (!strcmp(str_of(ev, "name"), "thread_name") && num_of(ev, "tid") < 1000000) { /* threads */
            cr_expect_str_eq(label, num_of(ev, "tid") == 1 ? "main" : "thread 101");
            threads++;
        }
    }
    cr_expect_eq(process, 1);
    cr_expect_eq(threads, 2);
    json_decref(events);
}

static void expect_counter(json_t *events, const char *name, const long long *want, size_t nwant)
{
    size_t i, k = 0;
    json_t *ev;
    double last_ts = -1;
    json_array_foreach(events, i, ev)
    {
        if (strcmp(str_of(ev, "ph"), "C") != 0 || strcmp(str_of(ev, "name"), name) != 0)
            continue;
        json_t *args = json_object_get(ev, "args");
        cr_assert_eq(json_object_size(args), 1, "a counter event carries one value");
        json_t *value = json_object_iter_value(json_object_iter(args));
        cr_assert(json_is_integer(value));
        cr_assert_lt(k, nwant, "more counter events than expected for %s", name);
        cr_expect_eq(json_integer_value(value), want[k], "%s event %zu", name, k);
        cr_expect_geq(num_of(ev, "ts"), last_ts, "counter events in time order");
        last_ts = num_of(ev, "ts");
        k++;
    }
    cr_expect_eq(k, nwant, "%s: %zu counter events", name, k);
}

Test(export, live_bytes_counter_per_device)
{
    json_t *events = export_events(make_baseline(), NULL);
    static const long long dev0[] = {0, 1024, 3072, 2048, 2560, 512};
    static const long long dev1[] = {0, 1000, 0};
    expect_counter(events, "live device bytes (device 0)", dev0, 6);
    expect_counter(events, "live device bytes (device 1)", dev1, 3);
    cr_expect_eq(count_ph(events, "C", NULL), 18, "no counter for host memory or failed calls");
    json_decref(events);
}

Test(export, launches_and_memory_events)
{
    json_t *events = export_events(make_baseline(), NULL);
    size_t i;
    json_t *ev, *launch = NULL;
    json_array_foreach(events, i, ev) if (!strcmp(str_of(ev, "ph"), "i") && !strcmp(str_of(ev, "cat"), "kernel"))
        launch = ev;
    cr_assert_not_null(launch);
    cr_expect_str_eq(str_of(launch, "name"), "kern_a");
    cr_expect_eq(num_of(launch, "tid"), 1000001, "on the track of its stream, the first stream track");
    cr_expect_eq(num_of(json_object_get(launch, "args"), "thread"), 1);
    cr_expect(fabs(num_of(launch, "ts") - 1.5) < 1e-9);
    json_t *args = json_object_get(launch, "args");
    cr_expect_eq(json_integer_value(json_array_get(json_object_get(args, "grid"), 0)), 4);
    cr_expect_eq(json_integer_value(json_array_get(json_object_get(args, "block"), 0)), 128);
    cr_expect_str_eq(str_of(args, "node"), "/model/a");
    cr_expect_str_eq(str_of(args, "stream"), "0x0");
    /* 6 allocation calls (one failed) and 4 frees */
    cr_expect_eq(count_ph(events, "i", "memory"), 9);
    cr_expect_eq(count_ph(events, "i", "memory,error"), 1);
    json_decref(events);

    events = export_events(in_dir("baseline.wst"), "--no-memory-events");
    cr_expect_eq(count_ph(events, "i", "memory"), 0);
    cr_expect_eq(count_ph(events, "X", "node"), 3);
    json_decref(events);
}

Test(export, does_not_modify_the_trace)
{
    const char *trace = make_baseline();
    size_t n1, n2;
    char *before = read_all(trace, &n1);
    json_decref(export_events(trace, NULL));
    char *after = read_all(trace, &n2);
    cr_expect(n1 == n2 && memcmp(before, after, n1) == 0);
    free(before);
    free(after);
}

Test(export, empty_trace_is_valid_json)
{
    const char *trace = in_dir("empty.wst");
    make_trace(trace, NULL);
    json_t *events = export_events(trace, NULL);
    cr_expect_eq(count_ph(events, "M", NULL), 1, "only the process name");
    cr_expect_eq(json_array_size(events), 1);
    json_decref(events);
}

Test(export, bad_input_exits_2_without_output)
{
    const char *trace = make_baseline(), *out = in_dir("out.json");
    const char *missing = in_dir("missing.wst"), *foreign = in_dir("foreign.txt"), *newer = in_dir("newer.wst");
    FILE *f = fopen(foreign, "w");
    cr_assert_not_null(f);
    fputs("this is not a database\n", f);
    fclose(f);
    make_trace(newer, "PRAGMA user_version = 99;");
    const char *const cases[][8] = {
        {"export", missing, "--format", "chrome", "-o", out, NULL},
        {"export", foreign, "--format", "chrome", "-o", out, NULL},
        {"export", newer, "--format", "chrome", "-o", out, NULL},
        {"export", trace, "--format", "svg", "-o", out, NULL},
        {"export", trace, "--format", "chrome", NULL},
        {"export", trace, trace, "-o", out, NULL},
        {"export", trace, "-o", NULL},
        {"export", trace, "--bogus", "-o", out, NULL},
        {"export", trace, "-o", in_dir("no/such/dir/out.json"), NULL},
    };
    int entries = dir_entries();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[1024];
        cr_expect_eq(run(cmd_export, cases[i], err, sizeof err), WS_EXIT_USAGE, "case %zu", i);
        cr_expect_eq(count_lines(err), 1, "case %zu: one line, got '%s'", i, err);
        cr_expect(!strncmp(err, "wstrace: ", 9), "case %zu: '%s'", i, err);
        cr_expect(!file_exists(out), "case %zu left %s", i, out);
        cr_expect_eq(dir_entries(), entries, "case %zu left a file behind", i);
    }
    char err[1024];
    cr_expect_eq(run(cmd_export, cases[2], err, sizeof err), WS_EXIT_USAGE);
    cr_expect_not_null(strstr(err, newer), "the error names the file: '%s'", err);
    cr_expect_not_null(strstr(err, "newer"), "'%s'", err);
}

/* A trace that fails half-way through (after events were written) leaves neither OUT nor a
 * temporary file, and an OUT that existed before is untouched. */
Test(export, failure_mid_stream_leaves_previous_output)
{
    const char *trace = make_baseline(), *out = in_dir("out.json");
    sqlite3 *db = NULL;
    char err[1024];
    cr_assert_eq(sqlite3_open(trace, &db), SQLITE_OK);
    /* the strings table is still there (the trace opens) but has lost its values: the export
     * fails at the thread names, after the header and the process name were written */
    cr_assert_eq(
        ws_tracedb_exec(db, "DROP TABLE strings; CREATE TABLE strings (id INTEGER PRIMARY KEY);", err, sizeof err), 0,
        "%s", err);
    sqlite3_close(db);
    FILE *f = fopen(out, "w");
    cr_assert_not_null(f);
    fputs("previous", f);
    fclose(f);
    int entries = dir_entries();
    const char *args[] = {"export", trace, "--format", "chrome", "-o", out, NULL};
    cr_expect_eq(run(cmd_export, args, err, sizeof err), WS_EXIT_USAGE);
    cr_expect_eq(count_lines(err), 1, "'%s'", err);
    char *text = read_all(out, NULL);
    cr_expect_str_eq(text, "previous");
    free(text);
    cr_expect_eq(dir_entries(), entries);
}

/* A symbolic link (like a device or a pipe) is neither written through nor replaced: the command
 * refuses it in one line, and the link and the file it names stay as they were. */
Test(export, refuses_a_symbolic_link)
{
    const char *trace = make_baseline(), *real = in_dir("real.json"), *link = in_dir("link.json");
    FILE *f = fopen(real, "w");
    cr_assert_not_null(f);
    fputs("previous", f);
    fclose(f);
    cr_assert_eq(symlink(real, link), 0);
    const char *args[] = {"export", trace, "-o", link, NULL};
    char err[1024];
    cr_expect_eq(run(cmd_export, args, err, sizeof err), WS_EXIT_USAGE);
    cr_expect_eq(count_lines(err), 1, "'%s'", err);
    struct stat st;
    cr_assert_eq(lstat(link, &st), 0);
    cr_expect(S_ISLNK(st.st_mode), "the link was replaced");
    char *text = read_all(real, NULL);
    cr_expect_str_eq(text, "previous", "written through the link");
    free(text);
}

/* Names recorded from a program need not be valid UTF-8; JSON must stay valid anyway. */
Test(export, invalid_utf8_names_are_replaced)
{
    const char *trace = in_dir("utf8.wst");
    make_trace(trace, "INSERT INTO strings VALUES (1, CAST(X'2F6E6F6465FF41' AS TEXT));"
                      "INSERT INTO threads(id, os_tid, name_id, first_ns, last_ns) VALUES (1, 7, NULL, 0, 1000);"
                      "INSERT INTO ranges VALUES (1, 1, 1, 1, 0, 'push', 'nvtx', NULL, 0, NULL, 0, 500);");
    json_t *events = export_events(trace, NULL);
    size_t i;
    json_t *ev;
    int found = 0;
    json_array_foreach(events, i, ev) if (!strcmp(str_of(ev, "ph"), "X"))
    {
        cr_expect_str_eq(str_of(ev, "name"), "/node\xEF\xBF\xBD"
                                             "A");
        found++;
    }
    cr_expect_eq(found, 1);
    json_decref(events);
}

Test(export, dash_writes_standard_output)
{
    const char *trace = make_baseline(), *out = in_dir("stdout.json");
    fflush(stdout);
    int saved = dup(1), fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(saved >= 0 && fd >= 0);
    cr_assert_geq(dup2(fd, 1), 0);
    close(fd);
    const char *args[] = {"export", trace, "--format", "chrome", "-o", "-", NULL};
    int rc = run(cmd_export, args, NULL, 0);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    cr_assert_eq(rc, WS_EXIT_OK);
    json_t *doc = load_json(out);
    cr_expect_eq(count_ph(json_object_get(doc, "traceEvents"), "X", "node"), 3);
    json_decref(doc);
}

/* ---- report ---- */

static json_t *report_json(const char *baseline, const char *candidate, int *status)
{
    const char *out = in_dir("report.json");
    const char *args[] = {"report",   "--baseline", baseline, "--candidate", candidate,
                          "--format", "json",       "-o",     out,           NULL};
    char err[1024];
    int rc = run(cmd_report, args, err, sizeof err);
    if (status)
        *status = rc;
    else
        cr_assert_eq(rc, WS_EXIT_OK, "%s", err);
    return load_json(out);
}

static json_t *path_get(json_t *obj, const char *a, const char *b)
{
    json_t *v = json_object_get(obj, a);
    return b ? json_object_get(v, b) : v;
}

static long long int_at(json_t *obj, const char *a, const char *b)
{
    json_t *v = path_get(obj, a, b);
    cr_assert(json_is_integer(v), "%s.%s is not an integer", a, b ? b : "");
    return json_integer_value(v);
}

Test(report, peak_bytes_and_calls_per_run)
{
    json_t *doc = report_json(make_baseline(), make_candidate("candidate.wst", "abc123"), NULL);
    json_t *peak = json_object_get(doc, "peak_live_device_bytes");
    cr_expect_eq(int_at(peak, "baseline", NULL), 3072);
    cr_expect_eq(int_at(peak, "candidate", NULL), 2304);
    cr_expect_eq(int_at(peak, "delta", NULL), -768);
    cr_expect(fabs(num_of(peak, "percent") + 25.0) < 1e-9);
    json_t *devices = json_object_get(peak, "devices");
    cr_assert_eq(json_array_size(devices), 2);
    cr_expect_eq(int_at(json_array_get(devices, 0), "device", NULL), 0);
    cr_expect_eq(int_at(json_array_get(devices, 1), "baseline", NULL), 1000);
    cr_expect_eq(int_at(json_array_get(devices, 1), "candidate", NULL), 0);

    json_t *calls = json_object_get(doc, "allocation_calls");
    cr_expect_eq(int_at(calls, "baseline", "calls"), 4);
    cr_expect_eq(int_at(calls, "baseline", "runs"), 2);
    cr_expect(fabs(json_number_value(path_get(calls, "baseline", "per_run")) - 2.0) < 1e-9);
    cr_expect(fabs(json_number_value(path_get(calls, "candidate", "per_run")) - 0.5) < 1e-9);
    cr_expect_eq(int_at(calls, "candidate", "calls_outside_runs"), 1);
    cr_expect_eq(int_at(calls, "baseline", "calls_outside_runs"), 0);
    cr_expect(fabs(num_of(calls, "per_run_percent") + 75.0) < 1e-9);

    cr_expect(json_is_null(path_get(doc, "plan_fallbacks", "baseline")));
    cr_expect_eq(int_at(doc, "plan_fallbacks", "candidate"), 0);
    cr_expect_null(json_object_get(doc, "threshold"), "no threshold section without --max-regression");
    json_decref(doc);
}

Test(report, nodes_sorted_by_size_of_change)
{
    json_t *doc = report_json(make_baseline(), make_candidate("candidate.wst", "abc123"), NULL);
    json_t *nodes = json_object_get(doc, "nodes");
    cr_expect_eq(int_at(nodes, "compared", NULL), 4);
    cr_expect_eq(int_at(nodes, "changed", NULL), 4);
    json_t *top = json_object_get(nodes, "top");
    cr_assert_eq(json_array_size(top), 4);
    static const struct {
        const char *name;
        long long ws_b, ws_c, act_b, act_c;
    } want[] = {{"/model/a", 3000, 1000, 2048, 0},
                {"/model/c", 100, 0, 0, 0},
                {"/model/b", 512, 600, 0, 0},
                {"/model/d", 0, 0, 0, 50}};
    for (size_t i = 0; i < 4; i++) {
        json_t *row = json_array_get(top, i);
        cr_expect_str_eq(str_of(row, "node"), want[i].name, "row %zu", i);
        cr_expect_eq(int_at(row, "workspace_bytes", "baseline"), want[i].ws_b, "row %zu", i);
        cr_expect_eq(int_at(row, "workspace_bytes", "candidate"), want[i].ws_c, "row %zu", i);
        cr_expect_eq(int_at(row, "workspace_bytes", "delta"), want[i].ws_c - want[i].ws_b, "row %zu", i);
        cr_expect_eq(int_at(row, "activation_bytes", "baseline"), want[i].act_b, "row %zu", i);
        cr_expect_eq(int_at(row, "activation_bytes", "candidate"), want[i].act_c, "row %zu", i);
    }
    json_decref(doc);
}

Test(report, verdicts_plan_and_parity)
{
    json_t *doc = report_json(make_baseline(), make_candidate("candidate.wst", "abc123"), NULL);
    json_t *vb = path_get(doc, "verdicts", "baseline"), *vc = path_get(doc, "verdicts", "candidate");
    cr_expect_eq(int_at(vb, "ok", NULL), 2);
    cr_expect_eq(int_at(vb, "over-reservation", NULL), 1);
    cr_expect_eq(int_at(vc, "ok", NULL), 3);
    cr_expect_null(json_object_get(vc, "over-reservation"));

    json_t *plan = path_get(doc, "plan", "baseline");
    cr_expect_eq(int_at(plan, "planned_peak_bytes", NULL), 4096);
    cr_expect_eq(int_at(plan, "load_bound_bytes", NULL), 4096);
    cr_expect_eq(int_at(plan, "dynamic_peak_bytes", NULL), 3072);
    cr_expect(fabs(num_of(plan, "planned_to_load_bound") - 1.0) < 1e-9);
    cr_expect(json_is_null(path_get(doc, "plan", "candidate")));

    cr_expect_str_eq(str_of(json_object_get(doc, "parity"), "result"), "identical");
    json_decref(doc);

    doc = report_json(in_dir("baseline.wst"), make_candidate("other.wst", "zzz"), NULL);
    cr_expect_str_eq(str_of(json_object_get(doc, "parity"), "result"), "different");
    cr_expect_str_eq(str_of(json_object_get(doc, "parity"), "candidate_checksum"), "zzz");
    json_decref(doc);
}

static int report_status(const char *baseline, const char *candidate, const char *pct, char *err, size_t errlen)
{
    const char *out = in_dir("report.md");
    const char *args[] = {"report",           "--baseline", baseline, "--candidate", candidate,
                          "--max-regression", pct,          "-o",     out,           NULL};
    return run(cmd_report, args, err, errlen);
}

Test(report, max_regression_threshold)
{
    const char *a = make_baseline(), *b = make_candidate("candidate.wst", "abc123");
    char err[1024];
    /* the candidate improves on everything */
    cr_expect_eq(report_status(a, b, "0", err, sizeof err), WS_EXIT_OK, "%s", err);
    /* reversed: peak 2304 -> 3072 is +33.3 %, calls per run 0.5 -> 2 is +300 % */
    cr_expect_eq(report_status(b, a, "50", err, sizeof err), WS_EXIT_FINDINGS);
    cr_expect_not_null(strstr(err, "calls per run"), "'%s'", err);
    cr_expect_null(strstr(err, "peak live device bytes"), "'%s'", err);
    cr_expect_eq(report_status(b, a, "20", err, sizeof err), WS_EXIT_FINDINGS);
    cr_expect_not_null(strstr(err, "peak live device bytes"), "'%s'", err);
    cr_expect_eq(report_status(b, a, "300", err, sizeof err), WS_EXIT_OK, "exactly +300 %% is not above: '%s'", err);
    char *md = read_all(in_dir("report.md"), NULL);
    cr_expect_not_null(strstr(md, "**passed**"));
    free(md);
    /* different outputs fail whatever the threshold */
    const char *c = make_candidate("other.wst", "zzz");
    cr_expect_eq(report_status(a, c, "1000", err, sizeof err), WS_EXIT_FINDINGS);
    cr_expect_not_null(strstr(err, "parity"), "'%s'", err);
    md = read_all(in_dir("report.md"), NULL);
    cr_expect_not_null(strstr(md, "**FAILED**"));
    cr_expect_not_null(strstr(md, "**DIFFERENT**"));
    free(md);

    int status;
    json_t *doc = report_json(b, a, &status);
    cr_expect_eq(status, WS_EXIT_OK, "no threshold, no findings");
    json_decref(doc);
}

Test(report, markdown_tables)
{
    const char *a = make_baseline(), *b = make_candidate("candidate.wst", "abc123"), *out = in_dir("report.md");
    const char *args[] = {"report", "--baseline", a, "--candidate", b, "-o", out, NULL};
    char err[1024];
    cr_assert_eq(run(cmd_report, args, err, sizeof err), WS_EXIT_OK, "%s", err);
    char *md = read_all(out, NULL);
    static const char *const rows[] = {
        "| max over devices | 3.0 KiB (3072 B) | 2.2 KiB (2304 B) | -768 B | -25.0% |",
        "| device 1 | 1000 B | 0 B | -1000 B | -100.0% |",
        "| calls per run | 2.00 | 0.50 | -1.50 | -75.0% |",
        "| calls in runs | 4 | 1 | -3 | -75.0% |",
        "| fallbacks | — | 0 |",
        "| planned peak | 4.0 KiB (4096 B) | — | | |",
        "| planned / load bound | 1.0000 | — | | |",
        "| ok | 2 | 3 | +1 |",
        "| over-reservation | 1 | 0 | -1 |",
        "| `/model/a` | 2.9 KiB (3000 B) | 1000 B | -2.0 KiB (-2000 B) | 2.0 KiB (2048 B) | 0 B | -2.0 KiB (-2048 B) |",
        "| `/model/b` | 512 B | 600 B | +88 B | 0 B | 0 B | 0 B |",
        "**identical**: both traces carry output checksum `abc123`.",
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        cr_expect_not_null(strstr(md, rows[i]), "missing row: %s\n---\n%s", rows[i], md);
    /* largest change first */
    cr_expect_lt(strstr(md, "`/model/a`"), strstr(md, "`/model/c`"));
    cr_expect_lt(strstr(md, "`/model/c`"), strstr(md, "`/model/b`"));
    cr_expect_lt(strstr(md, "`/model/b`"), strstr(md, "`/model/d`"));
    free(md);
}

Test(report, sections_without_data_say_so)
{
    const char *a = in_dir("a.wst"), *b = in_dir("b.wst"), *out = in_dir("report.md");
    make_trace(a, NULL);
    make_trace(b, NULL);
    const char *args[] = {"report", "--baseline", a, "--candidate", b, "-o", out, NULL};
    char err[1024];
    cr_assert_eq(run(cmd_report, args, err, sizeof err), WS_EXIT_OK, "%s", err);
    char *md = read_all(out, NULL);
    static const char *const lines[] = {
        "No device allocations in either trace.\n",
        "No fallback count in either trace.\n",
        "No plan in either trace.\n",
        "No verification results in either trace.\n",
        "No output checksum in either trace.\n",
        "No lifetimes in either trace",
        "| calls per run | 0.00 | 0.00 | +0.00 | 0.0% |",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        cr_expect_not_null(strstr(md, lines[i]), "missing: %s\n---\n%s", lines[i], md);
    free(md);

    json_t *doc = report_json(a, b, NULL);
    cr_expect(json_is_null(json_object_get(doc, "nodes")));
    cr_expect(json_is_null(json_object_get(doc, "plan_fallbacks")));
    cr_expect(json_is_null(path_get(doc, "verdicts", "baseline")));
    cr_expect(json_is_null(path_get(doc, "parity", "result")));
    cr_expect_eq(int_at(path_get(doc, "allocation_calls", "baseline"), "runs", NULL), 1, "no runs rows: one run");
    json_decref(doc);
}

Test(report, invalid_utf8_node_names_in_json)
{
    const char *a = in_dir("a.wst"), *b = in_dir("b.wst");
    static const char sql[] = "INSERT INTO strings VALUES (1, CAST(X'2F6E6F6465FF41' AS TEXT));"
                              "INSERT INTO lifetimes(allocation_id, run_id, class, node_name_id, bytes)"
                              " VALUES (1, NULL, 'workspace', 1, 64);";
    make_trace(a, sql);
    make_trace(b, NULL);
    json_t *doc = report_json(a, b, NULL);
    json_t *row = json_array_get(path_get(doc, "nodes", "top"), 0);
    cr_assert_not_null(row);
    cr_expect_str_eq(str_of(row, "node"), "/node\xEF\xBF\xBD"
                                          "A");
    cr_expect_eq(int_at(row, "workspace_bytes", "delta"), -64);
    json_decref(doc);
}

Test(report, opens_traces_read_only)
{
    const char *a = in_dir("a.wst"), *b = make_candidate("candidate.wst", "abc123");
    make_trace(a, baseline_sql); /* no result tables: a writer would be tempted to create them */
    size_t na, nb, na2, nb2;
    char *before_a = read_all(a, &na), *before_b = read_all(b, &nb);
    json_decref(report_json(a, b, NULL));
    char *after_a = read_all(a, &na2), *after_b = read_all(b, &nb2);
    cr_expect(na == na2 && memcmp(before_a, after_a, na) == 0, "baseline changed");
    cr_expect(nb == nb2 && memcmp(before_b, after_b, nb) == 0, "candidate changed");
    free(before_a);
    free(before_b);
    free(after_a);
    free(after_b);
}

Test(report, bad_input_exits_2_without_output)
{
    const char *a = make_baseline(), *out = in_dir("report.md");
    const char *foreign = in_dir("foreign.txt"), *newer = in_dir("newer.wst"), *missing = in_dir("missing.wst");
    FILE *f = fopen(foreign, "w");
    cr_assert_not_null(f);
    fputs("SQLite format 3 or not\n", f);
    fclose(f);
    make_trace(newer, "PRAGMA user_version = 99;");
    const char *const cases[][10] = {
        {"report", "--baseline", a, "-o", out, NULL},
        {"report", "--candidate", a, "-o", out, NULL},
        {"report", "--baseline", a, "--candidate", missing, "-o", out, NULL},
        {"report", "--baseline", foreign, "--candidate", a, "-o", out, NULL},
        {"report", "--baseline", a, "--candidate", newer, "-o", out, NULL},
        {"report", "--baseline", a, "--candidate", a, "--max-regression", "abc", "-o", out, NULL},
        {"report", "--baseline", a, "--candidate", a, "--max-regression", "-1", "-o", out, NULL},
        {"report", "--baseline", a, "--candidate", a, "--max-regression", "nan", "-o", out, NULL},
        {"report", "--baseline", a, "--candidate", a, "--format", "html", "-o", out, NULL},
        {"report", "--baseline", a, "--candidate", a, "extra", "-o", out, NULL},
        {"report", "--baseline", a, "--candidate", a, "--max-regression", NULL},
    };
    int entries = dir_entries();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[1024];
        cr_expect_eq(run(cmd_report, cases[i], err, sizeof err), WS_EXIT_USAGE, "case %zu", i);
        cr_expect_eq(count_lines(err), 1, "case %zu: one line, got '%s'", i, err);
        cr_expect(!strncmp(err, "wstrace: ", 9), "case %zu: '%s'", i, err);
        cr_expect(!file_exists(out), "case %zu left %s", i, out);
        cr_expect_eq(dir_entries(), entries, "case %zu left a file behind", i);
    }
    char err[1024];
    cr_expect_eq(run(cmd_report, cases[3], err, sizeof err), WS_EXIT_USAGE);
    cr_expect_not_null(strstr(err, foreign), "the error names the file: '%s'", err);
}
