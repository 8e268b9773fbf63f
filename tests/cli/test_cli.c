/*
 * The wstrace CLI as a user meets it, run as a program (build/bin/wstrace): every command refuses
 * a bad option in one line that names it and points at --help; a failed write to standard output
 * is exit status 2; no command writes through a link, replaces a device, or replaces one of its
 * own inputs; sizes that cannot be added up refuse the trace in one line.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trace_util.h"

TestSuite(cli, .fini = tu_cleanup);

#define WSTRACE(...) ((const char *const[]){TU_WSTRACE, __VA_ARGS__, NULL})

/* A small trace of the explicit-API program: runs, nodes, declarations. */
static void make_trace(const char *trace)
{
    struct tu_result r;
    tu_run_traced(&r, trace, NULL, ((const char *const[]){TU_PROG, "explicit", NULL}));
    cr_assert(r.exited && r.code == 0, "trace_prog: exit %d: %s", r.code, r.err);
    tu_result_free(&r);
}

static void run(struct tu_result *r, const char *const *argv) { tu_run(r, NULL, argv); }

/* Exit status of argv with standard output on /dev/full (a write there fails with ENOSPC). */
static int run_to_full(const char *const *argv, char *err, size_t len)
{
    char err_path[512];
    tu_path(err_path, sizeof err_path, "full.err");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/full", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    extern char **environ;
    cr_assert_eq(posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    char *text = tu_read_file(err_path, NULL);
    snprintf(err, len, "%s", text);
    free(text);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static char *file_bytes(const char *path, size_t *len) { return tu_read_file(path, len); }

/* path holds exactly what it held before (compared byte for byte). */
static void expect_unchanged(const char *path, const char *before, size_t len)
{
    size_t now_len;
    char *now = file_bytes(path, &now_len);
    cr_expect(now_len == len && memcmp(now, before, len) == 0, "%s was changed", path);
    free(now);
}

Test(cli, every_command_refuses_a_bad_option_in_one_line)
{
    static const char *const commands[] = {"record", "collect", "summary", "lifetimes", "resolve", "verify",   "plan",
                                           "report", "export",  "view",    "import",    "merge",   "partition"};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        struct tu_result r;
        run(&r, WSTRACE(commands[i], "--no-such-option", "x"));
        cr_expect(r.exited && r.code == 2, "%s: exit %d", commands[i], r.code);
        cr_expect_eq(tu_lines(r.err), 1, "%s: stderr:\n%s", commands[i], r.err);
        cr_expect_not_null(strstr(r.err, "--no-such-option"), "%s names the option: %s", commands[i], r.err);
        cr_expect_not_null(strstr(r.err, "--help"), "%s points at --help: %s", commands[i], r.err);
        cr_expect_str_empty(r.out, "%s", commands[i]);
        tu_result_free(&r);
    }
    struct tu_result r;
    run(&r, WSTRACE("summary", "t.db", "--top"));
    cr_expect(r.exited && r.code == 2);
    cr_expect_eq(tu_lines(r.err), 1, "%s", r.err);
    cr_expect_not_null(strstr(r.err, "needs a value"), "%s", r.err);
    tu_result_free(&r);
    run(&r, ((const char *const[]){TU_WSTRACE, NULL}));
    cr_expect(r.exited && r.code == 2);
    cr_expect_eq(tu_lines(r.err), 1, "%s", r.err);
    tu_result_free(&r);
}

Test(cli, a_failed_write_to_standard_output_is_exit_status_2)
{
    char trace[512], csv[512], err[4096];
    tu_path(trace, sizeof trace, "t.db");
    make_trace(trace);
    tu_path(csv, sizeof csv, "p.csv");
    FILE *f = fopen(csv, "w");
    cr_assert_not_null(f);
    fputs("id,lower,upper,size\n0,0,2,100\n1,1,3,50\n", f);
    fclose(f);
    const char *const *runs[] = {
        WSTRACE("summary", trace),
        WSTRACE("lifetimes", trace),
        WSTRACE("resolve", trace),
        WSTRACE("verify", trace),
        WSTRACE("plan", trace),
        WSTRACE("plan", "--problem", csv),
        WSTRACE("summary", trace, "--json"),
        WSTRACE("--help"),
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        int code = run_to_full(runs[i], err, sizeof err);
        cr_expect_eq(code, 2, "%s %s: exit %d", runs[i][1], runs[i][2] ? runs[i][2] : "", code);
        cr_expect_eq(tu_lines(err), 1, "%s: stderr:\n%s", runs[i][1], err);
    }
}

Test(cli, an_output_that_is_an_input_is_refused)
{
    char trace[512], other[512], alias[512], csv[512];
    tu_path(trace, sizeof trace, "t.db");
    tu_path(other, sizeof other, "u.db");
    tu_path(alias, sizeof alias, "alias.db");
    tu_path(csv, sizeof csv, "p.csv");
    make_trace(trace);
    make_trace(other);
    cr_assert_eq(link(trace, alias), 0);
    FILE *f = fopen(csv, "w");
    cr_assert_not_null(f);
    fputs("id,lower,upper,size\n0,0,2,100\n", f);
    fclose(f);
    size_t len, csv_len;
    char *before = file_bytes(trace, &len), *csv_before = file_bytes(csv, &csv_len);
    const char *const *runs[] = {
        WSTRACE("export", trace, "-o", trace),
        WSTRACE("export", trace, "-o", alias), /* the same file under another name */
        WSTRACE("report", "-b", trace, "-c", other, "-o", trace),
        WSTRACE("report", "-b", other, "-c", trace, "-o", alias),
        WSTRACE("plan", trace, "--svg", trace),
        WSTRACE("view", trace, "-o", alias),
        WSTRACE("merge", "-o", alias, trace, other),
        WSTRACE("import", "nsys", trace, "-o", alias),
        WSTRACE("partition", trace, "--budget", "1G", "--svg", alias),
        WSTRACE("export", trace, "--format", "ort-node-stats", "-o", alias),
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        struct tu_result r;
        run(&r, runs[i]);
        cr_expect(r.exited && r.code == 2, "run %zu (%s): exit %d", i, runs[i][1], r.code);
        cr_expect_eq(tu_lines(r.err), 1, "run %zu: %s", i, r.err);
        tu_result_free(&r);
        expect_unchanged(trace, before, len);
    }
    struct tu_result r;
    run(&r, WSTRACE("plan", "--problem", csv, "-o", csv));
    cr_expect(r.exited && r.code == 2, "plan --problem -o itself: exit %d", r.code);
    tu_result_free(&r);
    expect_unchanged(csv, csv_before, csv_len);
    free(before);
    free(csv_before);
}

Test(cli, links_and_devices_are_never_written)
{
    char trace[512], victim[512], link[512], dev[512];
    tu_path(trace, sizeof trace, "t.db");
    tu_path(victim, sizeof victim, "victim");
    tu_path(link, sizeof link, "out.json");
    make_trace(trace);
    FILE *f = fopen(victim, "w");
    cr_assert_not_null(f);
    fputs("precious", f);
    fclose(f);
    cr_assert_eq(symlink(victim, link), 0);
    struct tu_result r;
    run(&r, WSTRACE("export", trace, "-o", link));
    cr_expect(r.exited && r.code == 2, "export -o LINK: exit %d", r.code);
    cr_expect_eq(tu_lines(r.err), 1, "%s", r.err);
    tu_result_free(&r);
    run(&r, WSTRACE("report", "-b", trace, "-c", trace, "-o", link));
    cr_expect(r.exited && r.code == 2, "report -o LINK: exit %d", r.code);
    tu_result_free(&r);
    run(&r, WSTRACE("plan", trace, "--svg", link));
    cr_expect(r.exited && r.code == 2, "plan --svg LINK: exit %d", r.code);
    tu_result_free(&r);
    char *text = tu_read_file(victim, NULL);
    cr_expect_str_eq(text, "precious", "written through a link");
    free(text);
    struct stat st;
    cr_expect(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "the link was replaced");

    /* A device node like /dev/null, made here so that a failure replaces nothing that matters. */
    tu_path(dev, sizeof dev, "null");
    if (mknod(dev, S_IFCHR | 0666, makedev(1, 3)) == 0) {
        run(&r, WSTRACE("export", trace, "-o", dev));
        cr_expect(r.exited && r.code == 2, "export -o DEVICE: exit %d", r.code);
        tu_result_free(&r);
        cr_expect(lstat(dev, &st) == 0 && S_ISCHR(st.st_mode), "the device node was replaced");
    }

    /* A link planted at the temporary name an older version used for plan --problem -o. */
    char csv[512], out[512], planted[600];
    tu_path(csv, sizeof csv, "p.csv");
    tu_path(out, sizeof out, "solution.csv");
    snprintf(planted, sizeof planted, "%s.tmp", out);
    f = fopen(csv, "w");
    cr_assert_not_null(f);
    fputs("id,lower,upper,size\n0,0,2,100\n", f);
    fclose(f);
    cr_assert_eq(symlink(victim, planted), 0);
    run(&r, WSTRACE("plan", "--problem", csv, "-o", out));
    cr_expect(r.exited && r.code == 0, "plan --problem -o: exit %d: %s", r.code, r.err);
    tu_result_free(&r);
    text = tu_read_file(victim, NULL);
    cr_expect_str_eq(text, "precious", "written through the planted link");
    free(text);
    text = tu_read_file(out, NULL);
    cr_expect_not_null(strstr(text, "offset"), "the solution is written: %s", text);
    free(text);
}

/* Sizes that cannot be added up in 64 bits (a damaged or hostile trace): one line, exit 2, for
 * every analysis; negative sizes too. */
Test(cli, sizes_that_overflow_refuse_the_trace)
{
    char trace[512];
    tu_path(trace, sizeof trace, "t.db");
    make_trace(trace);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(trace, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db,
                              "UPDATE allocations SET bytes = 9223372036854775807 WHERE id = (SELECT MIN(id) FROM "
                              "allocations WHERE status = 0)",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(db);
    static const char *const commands[] = {"summary", "lifetimes", "resolve", "verify", "plan"};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        struct tu_result r;
        run(&r, WSTRACE(commands[i], trace));
        cr_expect(r.exited && r.code == 2, "%s: exit %d signal %d\n%s", commands[i], r.code, r.signal, r.out);
        cr_expect_eq(tu_lines(r.err), 1, "%s: %s", commands[i], r.err);
        cr_expect_not_null(strstr(r.err, "2^63"), "%s: %s", commands[i], r.err);
        tu_result_free(&r);
    }
    cr_assert_eq(sqlite3_open(trace, &db), SQLITE_OK);
    cr_assert_eq(
        sqlite3_exec(db, "UPDATE allocations SET bytes = -5 WHERE bytes = 9223372036854775807", NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    struct tu_result r;
    run(&r, WSTRACE("summary", trace));
    cr_expect(r.exited && r.code == 2, "negative size: exit %d", r.code);
    cr_expect_not_null(strstr(r.err, "negative"), "%s", r.err);
    tu_result_free(&r);
}

/* A temporary file that a killed command left beside its output is removed by the next command
 * that writes there; one that a running process writes is left alone. */
Test(cli, temporary_files_of_killed_commands_are_removed)
{
    char trace[512], out[512], stale[600], live[600];
    tu_path(trace, sizeof trace, "t.db");
    tu_path(out, sizeof out, "out.json");
    make_trace(trace);
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    cr_assert_eq(waitpid(child, NULL, 0), child);
    snprintf(stale, sizeof stale, "%s.tmp.%ld.0", out, (long)child);  /* its writer is gone */
    snprintf(live, sizeof live, "%s.tmp.%ld.0", out, (long)getpid()); /* its writer runs */
    FILE *f = fopen(stale, "w");
    cr_assert_not_null(f);
    fclose(f);
    f = fopen(live, "w");
    cr_assert_not_null(f);
    fclose(f);
    struct tu_result r;
    run(&r, WSTRACE("export", trace, "-o", out));
    cr_expect(r.exited && r.code == 0, "export: exit %d: %s", r.code, r.err);
    tu_result_free(&r);
    cr_expect_not(tu_exists(stale), "the stale temporary file is still there");
    cr_expect(tu_exists(live), "a running process's temporary file was removed");
    cr_expect(tu_exists(out));
}
