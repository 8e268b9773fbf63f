/*
 * wstrace export --format chrome against the Trace Event Format: a checker written from the
 * format's description (required fields per phase, timestamps in order on every track, complete
 * events nested on their thread, async pairs matched) runs over the export of a hand-built trace
 * whose rows are stored out of time order, and over the export of a real recorded program.  The
 * content (marks, declarations, API errors, runs, kernel streams, per-class counters) is checked
 * against figures derived by hand in the comments, or counted by SQL in the test.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "sqltest.h"
#include "tracedb.h"

static char dir[256];

static void make_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/wstrace-chrome-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp failed");
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static void remove_dir(void) { nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS); }

TestSuite(chrome, .init = make_dir, .fini = remove_dir);

static const char *in_dir(const char *name)
{
    static char paths[8][512];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 512, "%s/%s", dir, name);
    return p;
}

/* ---- the checker: the Trace Event Format, independently of the exporter ---- */

struct track {
    char key[160];
    double last_ts;
    double open_end[64]; /* X events: ends of the enclosing slices */
    int depth;
    int open_async;
};

struct checker {
    struct track *tracks;
    size_t ntracks;
    size_t events, out_of_order, bad_nesting;
};

static struct track *track_of(struct checker *c, const char *key)
{
    for (size_t i = 0; i < c->ntracks; i++)
        if (!strcmp(c->tracks[i].key, key))
            return &c->tracks[i];
    c->tracks = realloc(c->tracks, (c->ntracks + 1) * sizeof *c->tracks);
    cr_assert_not_null(c->tracks);
    struct track *t = &c->tracks[c->ntracks++];
    memset(t, 0, sizeof *t);
    snprintf(t->key, sizeof t->key, "%s", key);
    t->last_ts = -1;
    return t;
}

static double number(json_t *ev, const char *key, size_t i)
{
    json_t *v = json_object_get(ev, key);
    cr_assert(json_is_number(v), "event %zu: '%s' must be a number", i, key);
    return json_number_value(v);
}

static const char *string(json_t *ev, const char *key, size_t i)
{
    json_t *v = json_object_get(ev, key);
    cr_assert(json_is_string(v), "event %zu: '%s' must be a string", i, key);
    return json_string_value(v);
}

static void check_in_order(struct checker *c, struct track *t, double ts, size_t i)
{
    if (ts < t->last_ts) {
        c->out_of_order++;
        cr_expect_geq(ts, t->last_ts, "event %zu: ts %f before %f on track %s", i, ts, t->last_ts, t->key);
    }
    t->last_ts = ts;
}

/* Complete events on one thread either nest or follow each other. */
static void check_nesting(struct checker *c, struct track *t, double ts, double dur, size_t i)
{
    const double eps = 1e-6;
    while (t->depth > 0 && t->open_end[t->depth - 1] <= ts + eps)
        t->depth--;
    if (t->depth > 0 && ts + dur > t->open_end[t->depth - 1] + eps) {
        c->bad_nesting++;
        cr_expect(0, "event %zu: slice [%f, %f] crosses the end of its parent (%f) on %s", i, ts, ts + dur,
                  t->open_end[t->depth - 1], t->key);
    }
    cr_assert_lt(t->depth, 64);
    t->open_end[t->depth++] = ts + dur;
}

static void check_event(struct checker *c, json_t *ev, size_t i)
{
    char key[160];
    cr_assert(json_is_object(ev), "event %zu is not an object", i);
    const char *ph = string(ev, "ph", i);
    const char *name = string(ev, "name", i);
    cr_assert(json_is_integer(json_object_get(ev, "pid")), "event %zu: pid must be an integer", i);
    long long pid = json_integer_value(json_object_get(ev, "pid"));
    json_t *args = json_object_get(ev, "args");
    cr_assert(!args || json_is_object(args), "event %zu: args must be an object", i);
    if (!strcmp(ph, "M")) {
        cr_assert_not_null(args, "event %zu: metadata needs args", i);
        if (!strcmp(name, "process_name") || !strcmp(name, "thread_name"))
            cr_assert(json_is_string(json_object_get(args, "name")), "event %zu: %s needs args.name", i, name);
        else if (!strcmp(name, "process_sort_index") || !strcmp(name, "thread_sort_index"))
            cr_assert(json_is_integer(json_object_get(args, "sort_index")), "event %zu: needs args.sort_index", i);
        else
            cr_assert(0, "event %zu: unknown metadata '%s'", i, name);
        if (!strncmp(name, "thread_", 7))
            cr_assert(json_is_integer(json_object_get(ev, "tid")), "event %zu: thread metadata needs a tid", i);
        return;
    }
    double ts = number(ev, "ts", i);
    cr_assert_geq(ts, 0, "event %zu: ts before the trace start", i);
    c->events++;
    if (!strcmp(ph, "C")) {
        cr_assert(args && json_object_size(args) > 0, "event %zu: a counter needs values", i);
        const char *k;
        json_t *v;
        json_object_foreach(args, k, v) cr_assert(json_is_number(v), "event %zu: counter value %s not a number", i, k);
        snprintf(key, sizeof key, "counter %lld %s", pid, name);
        check_in_order(c, track_of(c, key), ts, i);
        return;
    }
    cr_assert(json_is_integer(json_object_get(ev, "tid")), "event %zu (%s): tid must be an integer", i, ph);
    long long tid = json_integer_value(json_object_get(ev, "tid"));
    snprintf(key, sizeof key, "thread %lld %lld", pid, tid);
    struct track *thread = track_of(c, key);
    if (!strcmp(ph, "X")) {
        double dur = number(ev, "dur", i);
        cr_assert_geq(dur, 0, "event %zu: negative duration", i);
        check_in_order(c, thread, ts, i);
        check_nesting(c, thread, ts, dur, i);
    } else if (!strcmp(ph, "i") || !strcmp(ph, "I")) {
        json_t *scope = json_object_get(ev, "s");
        cr_assert(!scope || (json_is_string(scope) && strchr("gpt", json_string_value(scope)[0]) &&
                             strlen(json_string_value(scope)) == 1),
                  "event %zu: scope must be g, p or t", i);
        check_in_order(c, thread, ts, i);
    } else if (!strcmp(ph, "b") || !strcmp(ph, "e")) {
        const char *cat = string(ev, "cat", i);
        json_t *id = json_object_get(ev, "id");
        cr_assert(json_is_integer(id) || json_is_string(id), "event %zu: async events need an id", i);
        snprintf(key, sizeof key, "async %lld %s %lld", pid, cat, (long long)json_integer_value(id));
        struct track *t = track_of(c, key);
        check_in_order(c, t, ts, i);
        if (ph[0] == 'b') {
            t->open_async++;
        } else {
            cr_expect_gt(t->open_async, 0, "event %zu: end without begin", i);
            t->open_async--;
        }
    } else {
        cr_assert(0, "event %zu: unexpected phase '%s'", i, ph);
    }
}

/* Check a whole document; returns its events (a new reference). */
static json_t *check_document(const char *path, struct checker *c)
{
    json_error_t jerr;
    json_t *doc = json_load_file(path, 0, &jerr);
    cr_assert_not_null(doc, "%s: line %d: %s", path, jerr.line, jerr.text);
    json_t *unit = json_object_get(doc, "displayTimeUnit");
    cr_assert(!unit || (json_is_string(unit) &&
                        (!strcmp(json_string_value(unit), "ns") || !strcmp(json_string_value(unit), "ms"))));
    json_t *events = json_object_get(doc, "traceEvents");
    cr_assert(json_is_array(events));
    memset(c, 0, sizeof *c);
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev) check_event(c, ev, i);
    for (size_t t = 0; t < c->ntracks; t++)
        cr_expect_eq(c->tracks[t].open_async, 0, "%s: async range never ended", c->tracks[t].key);
    json_incref(events);
    json_decref(doc);
    free(c->tracks);
    c->tracks = NULL;
    return events;
}

/* ---- running the command ---- */

static void export_to(const char *trace, const char *out)
{
    char *argv[] = {"export", (char *)trace, "--format", "chrome", "-o", (char *)out, NULL};
    cr_assert_eq(cmd_export(6, argv), WS_EXIT_OK);
}

static const char *str_of(json_t *obj, const char *key) { return json_string_value(json_object_get(obj, key)); }

static size_t count(json_t *events, const char *ph, const char *cat)
{
    size_t i, n = 0;
    json_t *ev;
    json_array_foreach(events, i, ev) n += !strcmp(str_of(ev, "ph"), ph) && (!cat || !strcmp(str_of(ev, "cat"), cat));
    return n;
}

static json_t *find(json_t *events, const char *ph, const char *name)
{
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev) if (!strcmp(str_of(ev, "ph"), ph) && !strcmp(str_of(ev, "name"), name)) return ev;
    return NULL;
}

/*
 * Two threads; rows stored in id order that is not time order (allocation 1 is the latest on
 * device 0, launch 1 comes after launch 2), so a writer that followed the tables would write
 * tracks out of order.
 *   runs: 1 (shape batch=1) 1000..50000, 2 (no shape) 50000..100000
 *   push ranges: 1 /model/a t1 2000..5000; 2 /model/b t1 5000..9000, its child 5 /model/b/inner
 *   6000..7000; 3 /model/w t2 3000..20000; start/end range 4 'span' t2 -> t1 3000..3500
 *   allocations (device 0 unless said):
 *     1 t2 in range 3 at 8000, 256 B, freed in range 3 at 19000        -> workspace
 *     2 t1 in range 1 at 2100, 1024 B, freed in range 1 at 4000        -> workspace
 *     3 t1 in range 1 at 2200, 2048 B, freed in range 2 at 8000        -> activation
 *     4 t1 in range 5 at 6100, 512 B, never freed                      -> persistent
 *     5 failed at 6200; 6 device 1, no range, run 2, 60000..70000, 1000 B -> unattributed
 *   launches: 1 at 3100 on stream 0x1000 (t2), 2 at 2500 on stream 0 (t1), 3 at 6500, no stream
 *   one mark, a Level-1 estimate and a Level-2 declaration, two API errors.
 */
static const char trace_sql[] =
    "INSERT INTO meta(key, value) VALUES ('pid', '4242'), ('command_line', 'app --flag');"
    "INSERT INTO strings(id, value) VALUES (1, 'main'), (2, '/model/a'), (3, '/model/b'), (4, '/model/w'),"
    " (5, 'span'), (6, 'kern_a'), (7, 'batch=1'), (8, 'checkpoint'), (9, '/model/b/inner'), (10, 'kern_b');"
    "INSERT INTO threads(id, os_tid, name_id, first_ns, last_ns) VALUES (1, 100, 1, 1000, 100000),"
    " (2, 101, NULL, 1500, 60000);"
    "INSERT INTO runs VALUES (1, 1, 7, 1000, 50000), (2, 1, NULL, 50000, 100000);"
    "INSERT INTO ranges VALUES (1, 1, 1, 2, 0, 'push', 'nvtx', NULL, 0, 1, 2000, 5000),"
    " (2, 1, 1, 3, 0, 'push', 'nvtx', NULL, 0, 1, 5000, 9000),"
    " (3, 2, 2, 4, 0, 'push', 'nvtx', NULL, 0, 1, 3000, 20000),"
    " (4, 2, 1, 5, 0, 'startend', 'nvtx', NULL, 0, NULL, 3000, 3500),"
    " (5, 1, 1, 9, 0, 'push', 'nvtx', 2, 1, 1, 6000, 7000);"
    "INSERT INTO allocations VALUES"
    " (1, 'cudaMalloc', 'device', 0, 12288, 256, 256, 0, NULL, 2, 3, 1, 8000, 19000, 'cudaFree', 2, 3, NULL),"
    " (2, 'cudaMalloc', 'device', 0, 4096, 1024, 1024, 0, NULL, 1, 1, 1, 2100, 4000, 'cudaFree', 1, 1, NULL),"
    " (3, 'cudaMalloc', 'device', 0, 8192, 2048, 2048, 0, NULL, 1, 1, 1, 2200, 8000, 'cudaFree', 1, 2, NULL),"
    " (4, 'cudaMalloc', 'device', 0, 16384, 512, 512, 0, NULL, 1, 5, 1, 6100, NULL, NULL, NULL, NULL, NULL),"
    " (5, 'cudaMalloc', 'device', 0, NULL, 1099511627776, 0, 2, NULL, 1, 5, 1, 6200, NULL, NULL, NULL, NULL, NULL),"
    " (6, 'cudaMalloc', 'device', 1, 32768, 1000, 1000, 0, NULL, 1, NULL, 2, 60000, 70000, 'cudaFree', 1, NULL,"
    " NULL);"
    "INSERT INTO launches VALUES (1, 'cudaLaunchKernel', 10, 1, 1, 1, 1, 32, 1, 1, 0, 4096, 0, 2, 3, 1, 3100),"
    " (2, 'cudaLaunchKernel', 6, 2, 4, 1, 1, 128, 1, 1, 0, 0, 0, 1, 1, 1, 2500),"
    " (3, '__cudaLaunchKernel', 6, 2, 4, 1, 1, 128, 1, 1, 0, NULL, 0, 1, 5, 1, 6500);"
    "INSERT INTO marks VALUES (1, 1, 8, 0, 1, 4500);"
    "INSERT INTO declarations VALUES (1, 1, 2, 0, 1024, 0, 1, 1, 1, 2050), (2, 2, 2, 0, 1024, 256, 1, 1, 1, 2060);"
    "INSERT INTO api_errors VALUES (1, 'cudaFree', 1, 57005, 1, 2, 5500), (2, 'cudaFree', 0, 48879, 2, NULL, 9000);";

static const char *make_trace(void)
{
    const char *path = in_dir("trace.wst");
    sqlite3 *db = NULL;
    char err[512];
    cr_assert_eq(ws_tracedb_create(path, &db, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ws_tracedb_exec(db, trace_sql, err, sizeof err), 0, "%s", err);
    cr_assert_eq(sqlite3_close(db), SQLITE_OK);
    return path;
}

Test(chrome, hand_built_trace_follows_the_format_in_time_order)
{
    struct checker c;
    const char *out = in_dir("out.json");
    export_to(make_trace(), out);
    json_t *events = check_document(out, &c);
    cr_expect_eq(c.out_of_order, 0);
    cr_expect_eq(c.bad_nesting, 0);
    /* 4 push ranges, 2 runs; one async pair; 3 kernels; 6 allocation calls + 4 frees; 1 mark;
     * 2 declarations; 2 API errors */
    cr_expect_eq(count(events, "X", "node"), 4);
    cr_expect_eq(count(events, "X", "run"), 2);
    cr_expect_eq(count(events, "b", "range"), 1);
    cr_expect_eq(count(events, "e", "range"), 1);
    cr_expect_eq(count(events, "i", "kernel"), 3);
    cr_expect_eq(count(events, "i", "memory") + count(events, "i", "memory,error"), 10);
    cr_expect_eq(count(events, "i", "memory,error"), 1, "the failed call");
    cr_expect_eq(count(events, "i", "mark"), 1);
    cr_expect_eq(count(events, "i", "declaration"), 2);
    cr_expect_eq(count(events, "i", "error"), 2);
    json_decref(events);
}

Test(chrome, runs_marks_declarations_and_errors)
{
    struct checker c;
    const char *out = in_dir("out.json");
    export_to(make_trace(), out);
    json_t *events = check_document(out, &c);
    json_t *run1 = find(events, "X", "run 1: batch=1"), *run2 = find(events, "X", "run 2");
    cr_assert(run1 && run2);
    /* times are microseconds after the trace start, 1000 ns */
    cr_expect(fabs(json_number_value(json_object_get(run1, "ts")) - 0.0) < 1e-9);
    cr_expect(fabs(json_number_value(json_object_get(run1, "dur")) - 49.0) < 1e-9);
    cr_expect_eq(json_integer_value(json_object_get(run1, "tid")), 1000000);
    json_t *runs_name = NULL, *ev;
    size_t i;
    json_array_foreach(events, i, ev) if (!strcmp(str_of(ev, "ph"), "M") &&
                                          json_integer_value(json_object_get(ev, "tid")) == 1000000 &&
                                          !strcmp(str_of(ev, "name"), "thread_name")) runs_name = ev;
    cr_assert_not_null(runs_name);
    cr_expect_str_eq(str_of(json_object_get(runs_name, "args"), "name"), "runs");

    json_t *mark = find(events, "i", "checkpoint");
    cr_assert_not_null(mark);
    cr_expect_str_eq(str_of(mark, "cat"), "mark");
    cr_expect(fabs(json_number_value(json_object_get(mark, "ts")) - 3.5) < 1e-9);
    cr_expect_str_eq(str_of(json_object_get(mark, "args"), "node"), "/model/a");

    json_t *l2 = find(events, "i", "Level-2 declaration workspace /model/a[0]");
    cr_assert_not_null(l2);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(l2, "args"), "bytes")), 1024);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(l2, "args"), "alignment")), 256);
    cr_assert_not_null(find(events, "i", "Level-1 estimate workspace /model/a[0]"));

    json_t *failed = find(events, "i", "cudaFree failed (1)");
    cr_assert_not_null(failed);
    cr_expect_str_eq(str_of(json_object_get(failed, "args"), "address"), "0xdead");
    cr_expect_str_eq(str_of(json_object_get(failed, "args"), "node"), "/model/b");
    json_t *untracked = find(events, "i", "cudaFree of an untracked address");
    cr_assert_not_null(untracked);
    cr_expect_eq(json_integer_value(json_object_get(untracked, "tid")), 2);
    json_decref(events);
}

Test(chrome, kernels_on_one_track_per_stream)
{
    struct checker c;
    const char *out = in_dir("out.json");
    export_to(make_trace(), out);
    json_t *events = check_document(out, &c);
    /* streams in order: NULL (the tracer's default stream, schema/README.md), 0 (an imported
     * trace's), 0x1000 -> tracks 1000001, 1000002, 1000003 */
    static const struct {
        long long tid;
        const char *name;
        int kernels;
    } want[] = {
        {1000001, "stream (default, or not recorded)", 1}, {1000002, "stream 0x0 (default)", 1}, {1000003, "stream 0x1000", 1}};
    for (size_t k = 0; k < 3; k++) {
        int named = 0, kernels = 0;
        size_t i;
        json_t *ev;
        json_array_foreach(events, i, ev)
        {
            if (json_integer_value(json_object_get(ev, "tid")) != want[k].tid)
                continue;
            if (!strcmp(str_of(ev, "ph"), "M") && !strcmp(str_of(ev, "name"), "thread_name"))
                named += !strcmp(str_of(json_object_get(ev, "args"), "name"), want[k].name);
            kernels += !strcmp(str_of(ev, "ph"), "i") && !strcmp(str_of(ev, "cat"), "kernel");
        }
        cr_expect_eq(named, 1, "track %lld is named '%s'", want[k].tid, want[k].name);
        cr_expect_eq(kernels, want[k].kernels, "kernels on track %lld", want[k].tid);
    }
    json_t *kb = find(events, "i", "kern_b");
    cr_assert_not_null(kb);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(kb, "args"), "thread")), 2);
    json_decref(events);
}

Test(chrome, live_bytes_per_class)
{
    struct checker c;
    const char *out = in_dir("out.json");
    export_to(make_trace(), out);
    json_t *events = check_document(out, &c);
    /* device 0 after every change (workspace, activation, persistent, unattributed), from the
     * classes derived above; at 8000 the allocation comes before the free */
    static const long long dev0[][4] = {{0, 0, 0, 0},      {1024, 0, 0, 0},     {1024, 2048, 0, 0}, {0, 2048, 0, 0},
                                        {0, 2048, 512, 0}, {256, 2048, 512, 0}, {256, 0, 512, 0},   {0, 0, 512, 0}};
    static const long long dev1[][4] = {{0, 0, 0, 0}, {0, 0, 0, 1000}, {0, 0, 0, 0}};
    static const char *const classes[] = {"workspace", "activation", "persistent", "unattributed"};
    const struct {
        const char *name;
        const long long (*want)[4];
        size_t n;
    } tracks[] = {{"live bytes by class (device 0)", dev0, 8}, {"live bytes by class (device 1)", dev1, 3}};
    for (size_t t = 0; t < 2; t++) {
        size_t i, k = 0;
        json_t *ev;
        json_array_foreach(events, i, ev)
        {
            if (strcmp(str_of(ev, "ph"), "C") || strcmp(str_of(ev, "name"), tracks[t].name))
                continue;
            cr_assert_lt(k, tracks[t].n, "%s: too many values", tracks[t].name);
            for (int cls = 0; cls < 4; cls++)
                cr_expect_eq(json_integer_value(json_object_get(json_object_get(ev, "args"), classes[cls])),
                             tracks[t].want[k][cls], "%s value %zu %s", tracks[t].name, k, classes[cls]);
            k++;
        }
        cr_expect_eq(k, tracks[t].n, "%s: %zu values", tracks[t].name, k);
    }
    json_decref(events);
}

/* ---- a real program ---- */

static int run_program(char *const argv[])
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        const char *rt = getenv("WS_SANITIZER_RUNTIME"); /* must be first in LD_PRELOAD */
        if (rt && *rt)
            setenv("LD_PRELOAD", rt, 1);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        execv(argv[0], argv);
        _exit(127);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

Test(chrome, recorded_program_follows_the_format, .timeout = 300)
{
    char wstrace[512], wsk[512];
    snprintf(wstrace, sizeof wstrace, "%s/bin/wstrace", WS_BUILD_DIR);
    snprintf(wsk, sizeof wsk, "%s/bin/wsk", WS_BUILD_DIR);
    cr_assert_eq(access(wsk, X_OK), 0, "%s is not built", wsk);
    const char *trace = in_dir("wsk.db"), *out = in_dir("wsk.json");
    char *argv[] = {wstrace,          "record", "-o",       (char *)trace, "--",       wsk,      "--device",     "sim",
                    "--layers",       "2",      "--hidden", "256",         "--heads",  "4",      "--head-dim",   "64",
                    "--intermediate", "512",    "--vocab",  "1024",        "--kv-len", "96,128", "--max-kv-len", "128",
                    "--runs",         "4",      NULL};
    cr_assert_eq(run_program(argv), 0, "recording wsk failed");
    export_to(trace, out);
    struct checker c;
    json_t *events = check_document(out, &c);
    cr_expect_eq(c.out_of_order, 0);
    cr_expect_eq(c.bad_nesting, 0);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(trace, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_gt(sqltest_int(db, "SELECT COUNT(*) FROM launches"), 0);
    cr_expect_eq((int64_t)count(events, "X", "node"),
                 sqltest_int(db, "SELECT COUNT(*) FROM ranges WHERE kind = 'push'"));
    cr_expect_eq((int64_t)count(events, "X", "run"), sqltest_int(db, "SELECT COUNT(*) FROM runs"));
    cr_expect_eq((int64_t)count(events, "i", "kernel"),
                 sqltest_int(db, "SELECT COUNT(*) FROM launches WHERE status = 0"));
    cr_expect_eq((int64_t)count(events, "i", "declaration"), sqltest_int(db, "SELECT COUNT(*) FROM declarations"));
    cr_expect_eq((int64_t)count(events, "i", "memory"),
                 sqltest_int(db, "SELECT COUNT(*) + COUNT(free_ns) FROM allocations WHERE status = 0"));
    /* the last value of the device counter is what is still allocated at the end */
    size_t i;
    json_t *ev, *last = NULL;
    json_array_foreach(events, i, ev) if (!strcmp(str_of(ev, "ph"), "C") &&
                                          !strcmp(str_of(ev, "name"), "live device bytes (device 0)")) last = ev;
    cr_assert_not_null(last);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(last, "args"), "bytes")),
                 sqltest_int(db, "SELECT COALESCE(SUM(bytes), 0) FROM allocations WHERE status = 0 AND device = 0"
                                 " AND memory IN ('device', 'managed') AND free_ns IS NULL"));
    sqlite3_close(db);
    json_decref(events);
}

/* NVTX attributes (schema version 2): a category with a name, an ARGB colour and a payload on a
 * range, a category without a name on the mark; a pop and an end that closed nothing. */
Test(chrome, nvtx_attributes_and_unbalanced_ranges)
{
    const char *path = make_trace();
    sqlite3 *db = NULL;
    char err[512];
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(ws_tracedb_exec(db,
                                 "INSERT INTO strings(id, value) VALUES (20, 'attention');"
                                 "INSERT INTO categories VALUES (0, 7, 20);"
                                 "INSERT INTO range_attributes VALUES (1, 7, 4279312947, 'uint64', 42);"
                                 "INSERT INTO mark_attributes VALUES (1, 9, NULL, 'double', 2.5);"
                                 "INSERT INTO range_errors VALUES (1, 'pop', 'nvtxRangePop', 0, NULL, 1, 2, 8500),"
                                 " (2, 'end', 'nvtxRangeEnd', 0, 77, 2, NULL, 9500);",
                                 err, sizeof err),
                 0, "%s", err);
    sqlite3_close(db);
    const char *out = in_dir("out.json");
    export_to(path, out);
    struct checker c;
    json_t *events = check_document(out, &c);
    cr_expect_eq(c.out_of_order, 0);
    json_t *a = find(events, "X", "/model/a");
    cr_assert_not_null(a);
    json_t *args = json_object_get(a, "args");
    cr_expect_str_eq(str_of(args, "category"), "attention");
    cr_expect_str_eq(str_of(args, "color"), "#112233", "0xFF112233 without its alpha");
    cr_expect_eq(json_integer_value(json_object_get(args, "payload")), 42);
    json_t *mark = find(events, "i", "checkpoint");
    cr_assert_not_null(mark);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(mark, "args"), "category")), 9);
    cr_expect(fabs(json_real_value(json_object_get(json_object_get(mark, "args"), "payload")) - 2.5) < 1e-12);
    json_t *pop = find(events, "i", "nvtxRangePop without an open range");
    json_t *end = find(events, "i", "nvtxRangeEnd of no open range");
    cr_assert(pop && end);
    cr_expect_str_eq(str_of(pop, "cat"), "error");
    cr_expect_str_eq(str_of(json_object_get(pop, "args"), "node"), "/model/b");
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(end, "args"), "range")), 77);
    cr_expect_eq(json_integer_value(json_object_get(end, "tid")), 2);
    json_decref(events);
}

/* Two processes (schema version 2, as wstrace merge writes them): thread 2 is rank 1's.  Each
 * process is its own pid, with its own threads, streams and live-bytes counters:
 *   process 1, device 0: allocations 2, 3, 4: 0, 1024, 3072, 2048, 2560, 512
 *   process 2, device 0: allocation 1:       0, 256, 0 */
Test(chrome, one_pid_per_process)
{
    const char *path = make_trace();
    sqlite3 *db = NULL;
    char err[512];
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(ws_tracedb_exec(db,
                                 "DELETE FROM processes;"
                                 "INSERT INTO processes(id, pid, host, rank, source, command_line) VALUES"
                                 " (1, 4242, 'node-a', 0, 'tracer', 'train.py'), (2, 5151, 'node-b', 1, 'tracer',"
                                 " 'train.py');"
                                 "UPDATE threads SET process_id = 2 WHERE id = 2;",
                                 err, sizeof err),
                 0, "%s", err);
    sqlite3_close(db);
    const char *out = in_dir("out.json");
    export_to(path, out);
    struct checker c;
    json_t *events = check_document(out, &c);
    cr_expect_eq(c.out_of_order, 0);
    size_t i;
    json_t *ev;
    int names = 0;
    json_array_foreach(events, i, ev) if (!strcmp(str_of(ev, "ph"), "M") && !strcmp(str_of(ev, "name"), "process_name"))
    {
        long long pid = json_integer_value(json_object_get(ev, "pid"));
        const char *label = str_of(json_object_get(ev, "args"), "name");
        cr_expect_str_eq(label, pid == 4242 ? "train.py (rank 0 on node-a)" : "train.py (rank 1 on node-b)");
        names++;
    }
    cr_expect_eq(names, 2);
    json_t *w = find(events, "X", "/model/w"); /* thread 2's range */
    cr_assert_not_null(w);
    cr_expect_eq(json_integer_value(json_object_get(w, "pid")), 5151);
    json_t *kb = find(events, "i", "kern_b"); /* launched by thread 2 */
    cr_assert_not_null(kb);
    cr_expect_eq(json_integer_value(json_object_get(kb, "pid")), 5151);
    static const long long p1[] = {0, 1024, 3072, 2048, 2560, 512}, p2[] = {0, 256, 0};
    const struct {
        long long pid;
        const long long *want;
        size_t n;
    } tracks[] = {{4242, p1, 6}, {5151, p2, 3}};
    for (size_t t = 0; t < 2; t++) {
        size_t k = 0;
        json_array_foreach(events, i, ev)
        {
            if (strcmp(str_of(ev, "ph"), "C") || strcmp(str_of(ev, "name"), "live device bytes (device 0)") ||
                json_integer_value(json_object_get(ev, "pid")) != tracks[t].pid)
                continue;
            cr_assert_lt(k, tracks[t].n);
            cr_expect_eq(json_integer_value(json_object_get(json_object_get(ev, "args"), "bytes")), tracks[t].want[k],
                         "pid %lld value %zu", tracks[t].pid, k);
            k++;
        }
        cr_expect_eq(k, tracks[t].n, "pid %lld: %zu values", tracks[t].pid, k);
    }
    json_decref(events);
}

/* A 5,000-byte name: "void k<" then PIECE repeated, then "x" to the length.  The valid one holds
 * what JSON must escape (quotes, backslashes, a tab, a control character) and a two-byte
 * character; the invalid one a byte that is no UTF-8 (0xFF), which comes out as U+FFFD. */
#define LONG_NAME_BYTES 5000
static char *long_name(const char *piece)
{
    char *s = malloc(LONG_NAME_BYTES + 1);
    cr_assert_not_null(s);
    size_t n = (size_t)snprintf(s, LONG_NAME_BYTES + 1, "void k<");
    while (n + strlen(piece) < LONG_NAME_BYTES - 1) {
        memcpy(s + n, piece, strlen(piece));
        n += strlen(piece);
    }
    s[n++] = '>';
    while (n < LONG_NAME_BYTES)
        s[n++] = 'x';
    s[n] = '\0';
    return s;
}

/* The name as a JSON reader gets it back: every 0xFF byte replaced by U+FFFD. */
static char *replaced(const char *s)
{
    char *out = malloc(3 * strlen(s) + 1), *o = out;
    cr_assert_not_null(out);
    for (; *s; s++) {
        if ((unsigned char)*s == 0xFF)
            memcpy(o, "\xEF\xBF\xBD", 3), o += 3;
        else
            *o++ = *s;
    }
    *o = '\0';
    return out;
}

Test(chrome, long_names_come_out_whole)
{
    const char *path = make_trace();
    /* names are unique in strings: one per row it replaces */
    char *name[4] = {long_name("std::pair<\"a\\b\"\t\x01\xC3\xA9>,"), long_name("T\xFF\"\\,"),
                     long_name("node<\"\xC3\xA9\\>/"), long_name("shape\xFF=")};
    for (int k = 0; k < 4; k++)
        cr_assert_eq(strlen(name[k]), LONG_NAME_BYTES);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    /* kern_b, kern_a, the node /model/a (its range and declarations), the shape key, the command line */
    static const struct {
        const char *sql;
        int name;
    } updates[] = {{"UPDATE strings SET value = ?1 WHERE id = 10", 0},
                   {"UPDATE strings SET value = ?1 WHERE id = 6", 1},
                   {"UPDATE strings SET value = ?1 WHERE id = 2", 2},
                   {"UPDATE strings SET value = ?1 WHERE id = 7", 3},
                   {"UPDATE meta SET value = ?1 WHERE key = 'command_line'", 1}};
    for (size_t i = 0; i < sizeof updates / sizeof updates[0]; i++) {
        cr_assert_eq(sqlite3_prepare_v2(db, updates[i].sql, -1, &st, NULL), SQLITE_OK);
        sqlite3_bind_text(st, 1, name[updates[i].name], -1, SQLITE_STATIC);
        cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "%s", sqlite3_errmsg(db));
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    const char *out = in_dir("long.json");
    export_to(path, out);
    struct checker c;
    json_t *events = check_document(out, &c); /* the whole document parses as JSON */
    char *kern_a = replaced(name[1]), *shape = replaced(name[3]);
    char run[LONG_NAME_BYTES * 3 + 16], l1[LONG_NAME_BYTES + 64];
    json_t *kb = find(events, "i", name[0]), *ka = find(events, "i", kern_a);
    cr_expect_not_null(kb, "the valid 5,000-byte kernel name is not in the export whole");
    cr_expect_not_null(ka, "the 5,000-byte kernel name with invalid bytes is not in the export whole");
    if (kb)
        cr_expect_str_eq(str_of(kb, "cat"), "kernel");
    snprintf(run, sizeof run, "run 1: %s", shape);
    cr_expect_not_null(find(events, "X", run), "the run's shape key is cut");
    snprintf(l1, sizeof l1, "Level-1 estimate workspace %s[0]", name[2]);
    cr_expect_not_null(find(events, "i", l1), "the declaration's node name is cut");
    cr_expect_not_null(find(events, "X", name[2]), "the range's name is cut");
    size_t i;
    json_t *ev;
    int process_named = 0;
    json_array_foreach(events, i, ev) if (!strcmp(str_of(ev, "ph"), "M") && !strcmp(str_of(ev, "name"), "process_name"))
        process_named += !strcmp(str_of(json_object_get(ev, "args"), "name"), kern_a);
    cr_expect_eq(process_named, 1, "the command line is cut");
    json_decref(events);
    for (int k = 0; k < 4; k++)
        free(name[k]);
    free(kern_a), free(shape);
}
