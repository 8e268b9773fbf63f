/*
 * The tracer under faults and hostile conditions: a full disk, a file size limit, outputs that
 * are not regular files, several processes tracing into one output at once, children that leave
 * through _exit, fork storms, many threads reusing addresses, names that are not plain ASCII,
 * spools cut short or still in use.  The program must never be harmed (its exit status and output
 * are its own), no record may be lost without being counted and none invented.  Expected numbers
 * come from what trace_prog did (it prints them) or from the simulated device's own accounting.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "spool_format.h"
#include "trace_util.h"

TestSuite(faults, .fini = tu_cleanup);

#define ARGV(...) ((const char *const[]){TU_PROG, __VA_ARGS__, NULL})
#define ENV(...)  ((const char *const[]){__VA_ARGS__, NULL})

static void pause_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Lines of s that contain needle. */
static int lines_with(const char *s, const char *needle)
{
    int n = 0;
    for (const char *line = s; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *hit = strstr(line, needle);
        if (hit && (size_t)(hit - line) < len)
            n++;
        line = end ? end + 1 : NULL;
    }
    return n;
}

/* Names in the test folder that start with prefix and end with suffix. */
static int count_files(const char *prefix, const char *suffix)
{
    DIR *d = opendir(tu_dir());
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name), slen = strlen(suffix);
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 && len >= slen && !strcmp(e->d_name + len - slen, suffix))
            n++;
    }
    closedir(d);
    return n;
}

/* Entries of a folder (not . and ..). */
static int count_in(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* Every allocation freed, on the thread that allocated it, and nothing freed that was not. */
static void expect_exact_pairing(sqlite3 *db, long long pairs, const char *what)
{
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), pairs, "%s: allocations", what);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE free_ns IS NULL"), 0, "%s: never freed", what);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors"), 0, "%s: frees without an allocation", what);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE free_ns < alloc_ns"), 0, "%s: freed before", what);
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='lost_records'"), 0, "%s: lost", what);
}

/* Peak of live device bytes as `wstrace summary --json` reports it. */
static long long summary_peak(const char *trace)
{
    struct tu_result r;
    tu_run(&r, NULL, ((const char *const[]){TU_WSTRACE, "summary", trace, "--json", NULL}));
    cr_assert(r.exited && r.code == 0, "summary: exit %d: %s", r.code, r.err);
    json_error_t jerr;
    json_t *doc = json_loads(r.out, 0, &jerr);
    cr_assert_not_null(doc, "summary --json is not JSON: %s", jerr.text);
    long long peak = json_integer_value(json_object_get(doc, "peak_live_device_bytes"));
    json_decref(doc);
    tu_result_free(&r);
    return peak;
}

/* ---- many threads: exact pairing under address reuse ----------------------------------------- */

/* 64 threads allocate and free as fast as they can, so the device hands a freed address to another
 * thread at once.  Repeated: every run must pair exactly, and the trace can never show more live
 * bytes than the device held (a free is timed before its call, an allocation after it, so every
 * traced lifetime lies inside the real one). */
Test(faults, many_threads_pair_every_free_with_its_allocation, .timeout = 600)
{
    enum { THREADS = 64, PAIRS = 2000, RUNS = 3 };
    for (int run = 0; run < RUNS; run++) {
        char trace[512], name[32];
        snprintf(name, sizeof name, "stress%d.db", run);
        tu_path(trace, sizeof trace, name);
        struct tu_result r;
        tu_run_traced(&r, trace, NULL, ARGV("stress", "64", "2000"));
        cr_assert(r.exited && r.code == 0, "exit %d signal %d: %s", r.code, r.signal, r.err);
        cr_assert_eq(tu_kv(r.out, "free_calls"), THREADS * PAIRS);
        sqlite3 *db = tu_open(trace);
        expect_exact_pairing(db, THREADS * PAIRS, name);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE free_thread_id <> thread_id"), 0,
                     "%s: a free charged to another thread", name);
        sqlite3_close(db);
        long long device_peak = tu_kv(r.out, "peak_bytes");
        cr_expect_leq(summary_peak(trace), device_peak, "%s: the trace shows more live bytes than the device held",
                      name);
        tu_result_free(&r);
    }
}

/* Waves: every thread allocates, all wait, each frees its neighbour's blocks, all wait.  The
 * device's peak is reached while every thread waits, so the trace must show exactly that peak;
 * every block is freed on another thread than the one that allocated it. */
Test(faults, waves_of_cross_thread_frees_give_the_device_peak, .timeout = 600)
{
    enum { THREADS = 16, ROUNDS = 40, BLOCKS = 4 };
    char trace[512];
    tu_path(trace, sizeof trace, "waves.db");
    struct tu_result r;
    tu_run_traced(&r, trace, NULL, ARGV("waves", "16", "40", "4"));
    cr_assert(r.exited && r.code == 0, "exit %d signal %d: %s", r.code, r.signal, r.err);
    cr_assert_eq(tu_kv(r.out, "free_calls"), THREADS * ROUNDS * BLOCKS);
    sqlite3 *db = tu_open(trace);
    expect_exact_pairing(db, THREADS * ROUNDS * BLOCKS, "waves");
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE free_thread_id = thread_id"), 0);
    sqlite3_close(db);
    /* Hand derivation: round r holds sum over blocks j = 0..63 of (512 + 8 j + r) bytes at once,
     * largest in the last round: 64 * 512 + 8 * 63 * 64 / 2 + 64 * (ROUNDS - 1). */
    long long expected = 64 * 512 + 8 * 63 * 64 / 2 + 64 * (ROUNDS - 1);
    cr_expect_eq(tu_kv(r.out, "peak_bytes"), expected, "the device's own peak");
    cr_expect_eq(summary_peak(trace), tu_kv(r.out, "peak_bytes"), "the trace's peak is the device's");
    tu_result_free(&r);
}

/* ---- space runs out ----------------------------------------------------------------------------- */

/* What the spool kept plus what it counted as lost is what the program did. */
static void expect_counted(const char *trace, long long pairs)
{
    sqlite3 *db = tu_open(trace);
    long long allocs = tu_int(db, "SELECT COUNT(*) FROM allocations");
    long long frees = tu_int(db, "SELECT COUNT(*) FROM allocations WHERE free_ns IS NOT NULL") +
                      tu_int(db, "SELECT COUNT(*) FROM api_errors");
    long long lost = tu_int(db, "SELECT value FROM meta WHERE key='lost_records'");
    long long images = tu_int(db, "SELECT value FROM meta WHERE key='images'");
    cr_expect_gt(lost, 0, "space ran out");
    cr_expect_gt(allocs, 0, "what fitted is kept");
    /* The image records (one per program image) may be among the lost records too. */
    cr_expect(allocs + frees + lost >= 2 * pairs && allocs + frees + lost <= 2 * pairs + 2,
              "kept %lld + %lld, lost %lld, images %lld: every record is kept or counted", allocs, frees, lost, images);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE bytes <> 256"), 0, "nothing invented");
    sqlite3_close(db);
}

static char mounted[512];

static void unmount_and_clean(void)
{
    if (mounted[0])
        umount2(mounted, MNT_DETACH);
    tu_cleanup();
}

/* A full file system (a 2 MiB tmpfs): the program runs to its end with its own exit status,
 * one line says how many records were lost; the spool holds every other record. */
Test(faults, full_disk_never_harms_the_program, .fini = unmount_and_clean)
{
    char trace[600], spool[700], copy[600];
    char *mnt = mounted;
    tu_path(mnt, sizeof mounted, "small");
    cr_assert_eq(mkdir(mnt, 0755), 0);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=2m") != 0)
        cr_skip_test("cannot mount a 2 MiB tmpfs here (%s): the file size limit test covers running out of space",
                     strerror(errno));
    snprintf(trace, sizeof trace, "%s/t.db", mnt);
    snprintf(spool, sizeof spool, "%s.spool", trace);
    struct tu_result r;
    tu_run_traced(&r, trace, NULL, ARGV("stress", "1", "100000"));
    cr_expect(r.exited && r.code == 0, "exit %d signal %d: %s", r.code, r.signal, r.err);
    cr_expect_eq(tu_kv(r.out, "free_calls"), 100000, "the program ran in full");
    cr_expect_eq(lines_with(r.err, "records could not be kept"), 1, "stderr: %s", r.err);
    cr_expect_eq(lines_with(r.err, "No space left on device"), 1, "stderr: %s", r.err);
    /* The trace itself did not fit either: the spool is kept and says so. */
    cr_expect_eq(lines_with(r.err, "the spool is kept"), 1, "stderr: %s", r.err);
    cr_expect_eq(tu_lines(r.err), 2, "stderr: %s", r.err);
    tu_result_free(&r);
    tu_path(copy, sizeof copy, "copy.spool");
    size_t len;
    char *bytes = tu_read_file(spool, &len);
    umount2(mnt, MNT_DETACH);
    mounted[0] = 0;
    FILE *f = fopen(copy, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(bytes, 1, len, f), len);
    fclose(f);
    free(bytes);
    tu_run(&r, NULL, ((const char *const[]){TU_WSTRACE, "collect", copy, NULL}));
    cr_assert(r.exited && r.code == 0, "collect: exit %d: %s", r.code, r.err);
    tu_result_free(&r);
    char out[600];
    tu_path(out, sizeof out, "copy");
    expect_counted(out, 100000);
}

/* A file size limit: the spool stops growing at it instead of raising SIGXFSZ in the program. */
Test(faults, file_size_limit_never_harms_the_program)
{
    char trace[512];
    tu_path(trace, sizeof trace, "t.db");
    struct tu_result r;
    tu_run_traced(&r, trace, NULL, ARGV("fsize", "1048576", "stress", "1", "100000"));
    cr_expect(r.exited && r.code == 0, "exit %d signal %d: %s", r.code, r.signal, r.err);
    cr_expect_eq(tu_kv(r.out, "free_calls"), 100000, "the program ran in full");
    cr_expect_eq(lines_with(r.err, "records could not be kept"), 1, "stderr: %s", r.err);
    cr_expect_eq(lines_with(r.err, "file size limit"), 1, "stderr: %s", r.err);
    tu_result_free(&r);
    if (!tu_exists(trace)) { /* the trace may not fit under the limit either: its spool is kept */
        char spool[600];
        snprintf(spool, sizeof spool, "%s.spool", trace);
        tu_run(&r, NULL, ((const char *const[]){TU_WSTRACE, "collect", spool, NULL}));
        cr_assert(r.exited && r.code == 0, "collect: exit %d: %s", r.code, r.err);
        tu_result_free(&r);
    }
    expect_counted(trace, 100000);
}

/* ---- outputs that are not regular files --------------------------------------------------------- */

/* The program runs as it would untraced, one line names the output, and the output is untouched. */
static void expect_refused(const char *output, const char *kind)
{
    struct tu_result plain, traced;
    tu_run(&plain, NULL, ARGV("plain", "3"));
    tu_run_traced(&traced, output, NULL, ARGV("plain", "3"));
    cr_expect(traced.exited && traced.code == 3, "%s: exit %d signal %d", kind, traced.code, traced.signal);
    cr_expect_str_eq(traced.out, plain.out, "%s", kind);
    cr_expect_eq(tu_lines(traced.err), 1, "%s: stderr: %s", kind, traced.err);
    cr_expect_not_null(strstr(traced.err, kind), "%s: stderr: %s", kind, traced.err);
    tu_result_free(&plain);
    tu_result_free(&traced);
}

Test(faults, outputs_that_are_not_regular_files_are_left_alone)
{
    char path[512], target[512];
    struct stat st;

    tu_path(path, sizeof path, "fifo.db");
    cr_assert_eq(mkfifo(path, 0644), 0);
    expect_refused(path, "a FIFO");
    cr_expect(lstat(path, &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO is still there");

    tu_path(target, sizeof target, "target.db");
    tu_path(path, sizeof path, "link.db");
    cr_assert_eq(symlink(target, path), 0);
    expect_refused(path, "a symbolic link");
    cr_expect(lstat(path, &st) == 0 && S_ISLNK(st.st_mode), "the link is still there");
    cr_expect_not(tu_exists(target), "nothing was written through the link");

    tu_path(path, sizeof path, "folder.db");
    cr_assert_eq(mkdir(path, 0755), 0);
    expect_refused(path, "a folder");

    /* A character device like /dev/null (made here, so that a failure replaces nothing that matters). */
    tu_path(path, sizeof path, "null.db");
    if (mknod(path, S_IFCHR | 0666, makedev(1, 3)) == 0) {
        expect_refused(path, "a character device");
        cr_expect(lstat(path, &st) == 0 && S_ISCHR(st.st_mode), "the device node is still there");
    }
    cr_expect_eq(count_files("", ".spool"), 0, "no spool anywhere");
}

/* `wstrace record -o` refuses them too, before the program runs. */
Test(faults, record_refuses_outputs_that_are_not_regular_files)
{
    char path[512];
    tu_path(path, sizeof path, "fifo.db");
    cr_assert_eq(mkfifo(path, 0644), 0);
    struct tu_result r;
    const char *san = tu_sanitizer_preload();
    tu_run(&r, san ? ENV(san) : NULL,
           ((const char *const[]){TU_WSTRACE, "record", "-o", path, "--", TU_PROG, "plain", "0", NULL}));
    cr_expect(r.exited && r.code == 2, "exit %d signal %d", r.code, r.signal);
    cr_expect_eq(tu_lines(r.err), 1, "stderr: %s", r.err);
    cr_expect_str_empty(r.out, "the program did not run");
    tu_result_free(&r);
}

/* ---- several processes, one output ---------------------------------------------------------------- */

/* After processes traced into trace at once: every one of them has its own complete trace, the
 * first one at trace, each later one at trace.<pid> announced in one line; nothing merged, no
 * spool left, no other line.  pids[i] ran `stress 1 (100 + i)`. */
static void expect_one_trace_each(const char *trace, const pid_t *pids, struct tu_result *r, int n)
{
    int announced = 0, at_trace = -1;
    for (int i = 0; i < n; i++) {
        char own[600];
        snprintf(own, sizeof own, "%s.%ld", trace, (long)pids[i]);
        cr_expect(r[i].exited && r[i].code == 0, "process %d: exit %d: %s", i, r[i].code, r[i].err);
        cr_expect_eq(tu_kv(r[i].out, "free_calls"), 100 + i);
        const char *path = own;
        if (!tu_exists(own)) {
            cr_expect_eq(at_trace, -1, "two processes wrote %s", trace);
            at_trace = i;
            path = trace;
            cr_expect_str_empty(r[i].err, "process %d", i);
        } else {
            cr_expect_eq(tu_lines(r[i].err), 1, "process %d: stderr: %s", i, r[i].err);
            cr_expect_not_null(strstr(r[i].err, own), "process %d names its trace: %s", i, r[i].err);
            announced++;
        }
        sqlite3 *db = tu_open(path);
        cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='pid'"), (int64_t)pids[i], "%s", path);
        expect_exact_pairing(db, 100 + i, path);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE bytes <> 256"), 0, "%s: merged", path);
        sqlite3_close(db);
    }
    cr_expect_neq(at_trace, -1, "one process wrote %s", trace);
    cr_expect_eq(announced, n - 1);
    cr_expect_eq(count_files("", ".spool"), 0, "no spool left");
}

Test(faults, eight_processes_at_once_each_keep_their_trace, .timeout = 600)
{
    enum { N = 8, ROUNDS = 5 };
    for (int round = 0; round < ROUNDS; round++) {
        char trace[512], name[32];
        snprintf(name, sizeof name, "same%d.db", round);
        /* (the name is used again for the gate below) */
        tu_path(trace, sizeof trace, name);
        struct tu_proc p[N];
        struct tu_result r[N];
        pid_t pids[N];
        char output[600], count[N][16], gate[512], go[600];
        snprintf(output, sizeof output, "WSTRACE_OUTPUT=%s", trace);
        snprintf(name, sizeof name, "gate%d", round);
        tu_path(gate, sizeof gate, name);
        cr_assert_eq(mkdir(gate, 0755), 0);
        for (int i = 0; i < N; i++) {
            snprintf(count[i], sizeof count[i], "%d", 100 + i);
            tu_start(&p[i], ENV(tu_tracer_preload(), output), ARGV("gated", gate, "stress", "1", count[i]));
            pids[i] = p[i].pid;
        }
        /* All eight have chosen their outputs (start-up is over) before any of them goes on. */
        for (int waited = 0; count_in(gate) < N && waited < 60000; waited++)
            pause_ms(1);
        cr_assert_eq(count_in(gate), N, "not every process started");
        snprintf(go, sizeof go, "%s/go", gate);
        FILE *f = fopen(go, "w");
        cr_assert_not_null(f);
        fclose(f);
        for (int i = 0; i < N; i++)
            tu_finish(&p[i], &r[i]);
        expect_one_trace_each(trace, pids, r, N);
        for (int i = 0; i < N; i++)
            tu_result_free(&r[i]);
    }
}

/* The end of a spool's header, read from the file. */
static int spool_finished(const char *spool)
{
    FILE *f = fopen(spool, "rb");
    if (!f)
        return 0;
    struct ws_spool_header h;
    int ok = fread(&h, sizeof h, 1, f) == 1;
    fclose(f);
    return ok && h.end_ns != 0;
}

/* B starts while A converts its (large) spool at exit: A's trace is complete, B's is at
 * TRACE.<pid> with one line, A prints nothing, and B's line is no false warning. */
Test(faults, a_process_starting_while_another_converts_keeps_both_traces, .timeout = 600)
{
    char trace[512], spool[600], output[600];
    tu_path(trace, sizeof trace, "t.db");
    snprintf(spool, sizeof spool, "%s.spool", trace);
    snprintf(output, sizeof output, "WSTRACE_OUTPUT=%s", trace);
    struct tu_proc a, b;
    struct tu_result r[2];
    tu_start(&a, ENV(tu_tracer_preload(), output), ARGV("stress", "1", "300000"));
    int waited = 0;
    while (!spool_finished(spool) && waited++ < 30000)
        pause_ms(1);
    cr_assert(spool_finished(spool), "A never reached its exit");
    tu_start(&b, ENV(tu_tracer_preload(), output), ARGV("stress", "1", "1000"));
    tu_finish(&b, &r[1]);
    tu_finish(&a, &r[0]);
    cr_expect(r[0].exited && r[0].code == 0 && r[1].exited && r[1].code == 0);
    cr_expect_str_empty(r[0].err, "A: %s", r[0].err);
    cr_expect_eq(lines_with(r[1].err, "earlier process"), 0, "no false warning: %s", r[1].err);
    char own[600];
    snprintf(own, sizeof own, "%s.%ld", trace, (long)b.pid);
    cr_expect_not_null(strstr(r[1].err, own), "B names its trace: %s", r[1].err);
    sqlite3 *db = tu_open(trace);
    expect_exact_pairing(db, 300000, "A");
    sqlite3_close(db);
    db = tu_open(own);
    expect_exact_pairing(db, 1000, "B");
    sqlite3_close(db);
    cr_expect_eq(count_files("", ".spool"), 0);
    tu_result_free(&r[0]);
    tu_result_free(&r[1]);
}

/* ---- children ----------------------------------------------------------------------------------- */

/* Under plain LD_PRELOAD, forked children that leave through _exit convert their own spool. */
Test(faults, children_leaving_through_exit_convert_their_spools)
{
    enum { N = 4 };
    char trace[512];
    tu_path(trace, sizeof trace, "t.db");
    struct tu_result r;
    tu_run_traced(&r, trace, NULL, ARGV("fork-exit", "4"));
    cr_assert(r.exited && r.code == 0, "exit %d signal %d: %s", r.code, r.signal, r.err);
    cr_expect_str_empty(r.err);
    for (int i = 0; i < N; i++) {
        char key[16], child[600];
        snprintf(key, sizeof key, "child%d", i);
        snprintf(child, sizeof child, "%s.%lld", trace, tu_kv(r.out, key));
        sqlite3 *db = tu_open(child);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE bytes=%d", 300 + i), i + 1, "child %d", i);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), i + 1, "child %d", i);
        cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='clean_exit'"), 1);
        sqlite3_close(db);
    }
    cr_expect_eq(count_files("t.db", ".spool"), 0, "no spool left");
    cr_expect_eq(count_files("t.db", ""), N + 1);
    tu_result_free(&r);
}

/* A fork storm: 1 + 3 + 9 processes, each with its own complete trace. */
Test(faults, fork_storm_every_process_keeps_its_trace, .timeout = 600)
{
    char trace[512];
    tu_path(trace, sizeof trace, "t.db");
    struct tu_result r;
    tu_run_traced(&r, trace, NULL, ARGV("forkstorm", "2", "3"));
    cr_assert(r.exited && r.code == 0, "exit %d signal %d: %s", r.code, r.signal, r.err);
    cr_expect_str_empty(r.err);
    cr_expect_eq(count_files("t.db", ".spool"), 0, "no spool left");
    cr_expect_eq(count_files("t.db", ""), 13);
    DIR *d = opendir(tu_dir());
    cr_assert_not_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "t.db", 4) != 0)
            continue;
        char path[600];
        tu_path(path, sizeof path, e->d_name);
        sqlite3 *db = tu_open(path);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), 2, "%s", e->d_name);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE bytes=1000 AND free_ns IS NOT NULL"), 1, "%s",
                     e->d_name);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE bytes=2000 AND free_ns IS NULL"), 1, "%s",
                     e->d_name);
        sqlite3_close(db);
    }
    closedir(d);
    tu_result_free(&r);
}

/* ---- names ---------------------------------------------------------------------------------------- */

/* A string of valid UTF-8 (an independent check: not the code under test). */
static int valid_utf8(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        size_t k = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (k == 0 || i + k > n || (k == 2 && c < 0xC2))
            return 0;
        for (size_t j = 1; j < k; j++)
            if ((p[i + j] & 0xC0) != 0x80)
                return 0;
        i += k;
    }
    return 1;
}

Test(faults, names_are_cut_between_characters_counted_and_printed_validly)
{
    char trace[512];
    tu_path(trace, sizeof trace, "t.db");
    struct tu_result r;
    tu_run_traced(&r, trace, NULL, ARGV("names"));
    cr_assert(r.exited && r.code == 0, "exit %d signal %d: %s", r.code, r.signal, r.err);
    tu_result_free(&r);
    sqlite3 *db = tu_open(trace);
    /* 'x' + 2500 two-byte characters, cut at 4096 bytes: 1 + 2 * 2047 = 4095 bytes. */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM strings WHERE substr(value, 1, 1) = 'x' AND "
                            "length(CAST(value AS BLOB)) = 4095"),
                 1);
    /* 3000 wide characters of two bytes each, cut at 4096: 2048 characters. */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM strings WHERE hex(value) = replace(hex(zeroblob(2048)), "
                            "'00', 'C3A9')"),
                 1);
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='truncated_strings'"), 2);
    /* A lone surrogate is U+FFFD; a surrogate pair is its character. */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM strings WHERE hex(value) = '77EFBFBD21'"), 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM strings WHERE hex(value) = '70F09F9880'"), 1);
    /* Bytes that are not UTF-8 are stored as they came. */
    cr_expect_eq(
        tu_int(db, "SELECT COUNT(*) FROM strings WHERE hex(value) = hex(CAST(X'2F626164FFFE7C6E616D650D0A6E657874' "
                   "AS TEXT))"),
        1);
    sqlite3_close(db);

    /* Every JSON output stays JSON (jansson refuses invalid UTF-8 when it reads). */
    static const char *const commands[][2] = {
        {"summary", NULL}, {"lifetimes", NULL}, {"resolve", NULL}, {"verify", NULL}, {"plan", NULL}};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        tu_run(&r, NULL, ((const char *const[]){TU_WSTRACE, commands[i][0], trace, "--json", NULL}));
        cr_expect(r.exited && r.code == 0, "%s --json: exit %d: %s", commands[i][0], r.code, r.err);
        json_error_t jerr;
        json_t *doc = json_loads(r.out, 0, &jerr);
        cr_expect_not_null(doc, "%s --json: %s", commands[i][0], jerr.text);
        json_decref(doc);
        tu_result_free(&r);
    }
    tu_run(&r, NULL, ((const char *const[]){TU_WSTRACE, "summary", trace, "--json", NULL}));
    cr_expect_not_null(strstr(r.out, "/bad\xEF\xBF\xBD\xEF\xBF\xBD|name\\r\\nnext"), "%s", r.out);
    tu_result_free(&r);

    /* Markdown: one line per table row, valid UTF-8. */
    tu_run(&r, NULL, ((const char *const[]){TU_WSTRACE, "report", "-b", trace, "-c", trace, NULL}));
    cr_expect(r.exited && r.code == 0, "report: exit %d: %s", r.code, r.err);
    cr_expect_null(strchr(r.out, '\r'), "a carriage return in the Markdown");
    cr_expect_geq(lines_with(r.out, "| `/bad"), 1, "the node is in the report:\n%s", r.out);
    cr_expect_eq(lines_with(r.out, "next"), lines_with(r.out, "| `/bad"), "a name broke its line");
    cr_expect(valid_utf8((const unsigned char *)r.out, strlen(r.out)), "the Markdown is not UTF-8");
    tu_result_free(&r);
}

/* ---- spools: cut short, in use -------------------------------------------------------------------- */

/* A killed program's spool cut by one byte still gives every record: the last chunk counts too. */
Test(faults, a_spool_cut_by_one_byte_keeps_every_record)
{
    char trace[512], spool[600], progress[512];
    tu_path(trace, sizeof trace, "t.db");
    snprintf(spool, sizeof spool, "%s.spool", trace);
    tu_path(progress, sizeof progress, "progress");
    struct tu_result r;
    tu_run_traced(&r, trace, ENV("WSTRACE_COLLECT=0"), ARGV("count", "20000", progress));
    cr_assert(r.exited && r.code == 0);
    tu_result_free(&r);
    struct stat st;
    cr_assert_eq(stat(spool, &st), 0);
    cr_assert_eq(truncate(spool, st.st_size - 1), 0);
    tu_run(&r, NULL, ((const char *const[]){TU_WSTRACE, "collect", spool, NULL}));
    cr_assert(r.exited && r.code == 0, "collect: exit %d: %s", r.code, r.err);
    tu_result_free(&r);
    sqlite3 *db = tu_open(trace);
    expect_exact_pairing(db, 20000, "cut spool");
    cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key='corrupt_records'"), 0);
    sqlite3_close(db);
}

/* `wstrace collect` leaves the spool of a running process to it; once the process is killed, it
 * recovers every pair the program completed (the program counted them itself), and at most the
 * one it was in. */
Test(faults, collect_refuses_a_spool_in_use_then_recovers_it, .timeout = 600)
{
    char trace[512], spool[600], progress[512], output[600];
    tu_path(trace, sizeof trace, "t.db");
    snprintf(spool, sizeof spool, "%s.spool", trace);
    tu_path(progress, sizeof progress, "progress");
    snprintf(output, sizeof output, "WSTRACE_OUTPUT=%s", trace);
    struct tu_proc p;
    tu_start(&p, ENV(tu_tracer_preload(), output), ARGV("count", "0", progress));
    uint64_t done = 0;
    for (int i = 0; i < 30000 && done < 1000; i++) {
        pause_ms(1);
        FILE *f = fopen(progress, "rb");
        if (f) {
            if (fread(&done, sizeof done, 1, f) != 1)
                done = 0;
            fclose(f);
        }
    }
    cr_assert_geq(done, 1000, "the program never got going");
    struct tu_result r;
    tu_run(&r, NULL, ((const char *const[]){TU_WSTRACE, "collect", spool, NULL}));
    cr_expect(r.exited && r.code == 2, "collect of a spool in use: exit %d", r.code);
    cr_expect_eq(tu_lines(r.err), 1, "stderr: %s", r.err);
    cr_expect_not_null(strstr(r.err, "in use"), "stderr: %s", r.err);
    cr_expect_not(tu_exists(trace), "nothing written for a spool in use");
    tu_result_free(&r);
    kill(p.pid, SIGKILL);
    tu_finish(&p, &r);
    tu_result_free(&r);
    FILE *f = fopen(progress, "rb");
    cr_assert_not_null(f);
    cr_assert_eq(fread(&done, sizeof done, 1, f), 1);
    fclose(f);
    tu_run(&r, NULL, ((const char *const[]){TU_WSTRACE, "collect", spool, NULL}));
    cr_assert(r.exited && r.code == 0, "collect: exit %d: %s", r.code, r.err);
    tu_result_free(&r);
    sqlite3 *db = tu_open(trace);
    long long allocs = tu_int(db, "SELECT COUNT(*) FROM allocations");
    cr_expect(allocs == (long long)done || allocs == (long long)done + 1, "%lld allocations, %llu pairs done", allocs,
              (unsigned long long)done);
    cr_expect_geq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE free_ns IS NOT NULL"), (long long)done);
    /* Nothing invented: the i-th allocation asked for 64 + i % 4096 bytes. */
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM (SELECT bytes, ROW_NUMBER() OVER (ORDER BY id) - 1 AS i FROM "
                            "allocations) WHERE bytes <> 64 + i %% 4096"),
                 0);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM api_errors"), 0);
    sqlite3_close(db);
}

/* collect takes -o after the spool too, and writes nothing but what -o names. */
Test(faults, collect_options_after_the_spool)
{
    char trace[512], spool[600], out[512];
    tu_path(trace, sizeof trace, "t.db");
    snprintf(spool, sizeof spool, "%s.spool", trace);
    tu_path(out, sizeof out, "out.db");
    struct tu_result r;
    tu_run_traced(&r, trace, ENV("WSTRACE_COLLECT=0"), ARGV("plain", "0"));
    cr_assert(r.exited && r.code == 0);
    tu_result_free(&r);
    tu_run(&r, NULL, ((const char *const[]){TU_WSTRACE, "collect", spool, "-o", out, NULL}));
    cr_expect(r.exited && r.code == 0, "exit %d: %s", r.code, r.err);
    tu_result_free(&r);
    cr_expect(tu_exists(out));
    cr_expect_not(tu_exists(trace), "collect wrote a file it was not asked to");
}

/* Two `wstrace record` runs into one output at once, each program forking two children: each run
 * merges its own children into its own trace (TRACE, or TRACE.<pid> for the later program) and
 * never the other run's. */
Test(faults, concurrent_records_merge_only_their_own_children, .timeout = 600)
{
    char trace[512], gate[512], go[600];
    tu_path(trace, sizeof trace, "t.db");
    tu_path(gate, sizeof gate, "gate");
    cr_assert_eq(mkdir(gate, 0755), 0);
    const char *san = tu_sanitizer_preload();
    struct tu_proc p[2];
    struct tu_result r[2];
    for (int i = 0; i < 2; i++)
        tu_start(&p[i], san ? ENV(san) : NULL,
                 ((const char *const[]){TU_WSTRACE, "record", "-o", trace, "--", TU_PROG, "gated", gate, "fork-exit",
                                        "2", NULL}));
    for (int waited = 0; count_in(gate) < 2 && waited < 60000; waited++)
        pause_ms(1);
    cr_assert_eq(count_in(gate), 2, "not every program started");
    snprintf(go, sizeof go, "%s/go", gate);
    FILE *f = fopen(go, "w");
    cr_assert_not_null(f);
    fclose(f);
    for (int i = 0; i < 2; i++) {
        tu_finish(&p[i], &r[i]);
        cr_expect(r[i].exited && r[i].code == 0, "record %d: exit %d: %s", i, r[i].code, r[i].err);
        tu_result_free(&r[i]);
    }
    cr_expect_eq(count_files("t.db", ""), 2, "TRACE and one TRACE.<pid>, the children merged into each");
    DIR *d = opendir(tu_dir());
    cr_assert_not_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "t.db", 4) != 0)
            continue;
        char path[600];
        tu_path(path, sizeof path, e->d_name);
        sqlite3 *db = tu_open(path);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM processes"), 3, "%s: a program and its two children", e->d_name);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE bytes = 300"), 1, "%s", e->d_name);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE bytes = 301"), 2, "%s", e->d_name);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), 3, "%s: another run's merged in", e->d_name);
        sqlite3_close(db);
    }
    closedir(d);
}
