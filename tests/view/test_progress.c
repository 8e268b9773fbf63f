/*
 * Progress on stderr: drawn on a terminal (a pseudo-terminal here), as one line rewritten with
 * '\r' and a percentage, erased at the end; silent with --quiet and when stderr is not a
 * terminal.  WSTRACE_PROGRESS_DELAY=0 shows it from the start, so the test needs no slow work.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *tool(const char *name)
{
    static char paths[4][512];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, 512, "%s/bin/%s", WS_BUILD_DIR, name);
    return p;
}

/* Run argv with stdout to /dev/null and stderr on a pseudo-terminal (tty != 0) or a pipe;
 * what it wrote on stderr goes into out. */
static int run_on(int tty, char *const argv[], const char *const env[], char *out, size_t outlen)
{
    int master = -1, fds[2] = {-1, -1};
    pid_t pid;
    if (tty) {
        pid = forkpty(&master, NULL, NULL, NULL);
    } else {
        cr_assert_eq(pipe(fds), 0);
        pid = fork();
    }
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        for (size_t i = 0; env && env[i]; i += 2)
            setenv(env[i], env[i + 1], 1);
        const char *rt = getenv("WS_SANITIZER_RUNTIME");
        if (rt && *rt && argv[1] && !strcmp(argv[1], "record"))
            setenv("LD_PRELOAD", rt, 1);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        if (!tty)
            dup2(fds[1], 2);
        execv(argv[0], argv);
        _exit(127);
    }
    int from = tty ? master : fds[0];
    if (!tty)
        close(fds[1]);
    size_t n = 0;
    for (;;) {
        ssize_t r = read(from, out + n, outlen - 1 - n);
        if (r <= 0)
            break; /* EIO on a pty once the child is gone */
        n += (size_t)r;
        if (n + 1 >= outlen)
            break;
    }
    out[n] = '\0';
    close(from);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static const char *trace_of_workload(const char *path)
{
    char *rec[] = {(char *)tool("wstrace"),
                   "record",
                   "-o",
                   (char *)path,
                   "--",
                   (char *)tool("wsk"),
                   "--device",
                   "sim",
                   "--layers",
                   "2",
                   "--hidden",
                   "256",
                   "--heads",
                   "4",
                   "--head-dim",
                   "64",
                   "--intermediate",
                   "512",
                   "--vocab",
                   "1024",
                   "--kv-len",
                   "96",
                   "--max-kv-len",
                   "128",
                   "--runs",
                   "2",
                   NULL};
    char out[4096];
    cr_assert_eq(run_on(0, rec, NULL, out, sizeof out), 0, "%s", out);
    return path;
}

static const char *const now[] = {"WSTRACE_PROGRESS_DELAY", "0", NULL};

Test(progress, drawn_on_a_terminal_erased_at_the_end, .timeout = 120)
{
    char path[] = "/tmp/wstrace-progress-XXXXXX.db";
    int fd = mkstemps(path, 3);
    cr_assert_geq(fd, 0);
    close(fd);
    trace_of_workload(path);
    static const char *const commands[] = {"summary", "lifetimes", "view", "export"};
    for (size_t i = 0; i < 4; i++) {
        char out[65536], html[600];
        snprintf(html, sizeof html, "%s.out", path);
        char *argv[] = {(char *)tool("wstrace"), (char *)commands[i], path, "-o", html, NULL};
        if (i < 2)
            argv[3] = NULL;
        cr_assert_eq(run_on(1, argv, now, out, sizeof out), 0, "%s: %s", commands[i], out);
        cr_expect(strchr(out, '\r') != NULL, "%s: no line rewritten on the terminal: '%s'", commands[i], out);
        cr_expect(strchr(out, '%') != NULL, "%s: no percentage: '%s'", commands[i], out);
        size_t len = strlen(out);
        cr_expect(len >= 4 && !strcmp(out + len - 4, "\r\033[K"), "%s: the line is not erased at the end", commands[i]);
        /* --quiet, and stderr that is not a terminal: nothing */
        char *quiet[] = {(char *)tool("wstrace"), (char *)commands[i], "--quiet", path, "-o", html, NULL};
        if (i < 2)
            quiet[4] = NULL;
        cr_assert_eq(run_on(1, quiet, now, out, sizeof out), 0, "%s --quiet: %s", commands[i], out);
        cr_expect_str_eq(out, "", "%s --quiet wrote '%s'", commands[i], out);
        cr_assert_eq(run_on(0, argv, now, out, sizeof out), 0);
        cr_expect_str_eq(out, "", "%s to a pipe wrote '%s'", commands[i], out);
        unlink(html);
    }
    unlink(path);
}

Test(progress, collect_and_a_time_limited_plan, .timeout = 120)
{
    char path[] = "/tmp/wstrace-progress-XXXXXX.db";
    int fd = mkstemps(path, 3);
    cr_assert_geq(fd, 0);
    close(fd);
    trace_of_workload(path);
    char out[65536];
    /* Progress is drawn only during a search bounded by seconds, so this one has a time limit; with
     * WSTRACE_PROGRESS_DELAY=0 (now) the first line is drawn before the search starts, so what is
     * asserted does not depend on how fast the machine is: 0.2 s only bounds how long it runs. */
    char *plan[] = {(char *)tool("wstrace"), "plan", path, "--time-limit", "0.2", NULL};
    cr_assert_eq(run_on(1, plan, now, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "planning run") != NULL && strchr(out, '%') != NULL, "plan: '%s'", out);
    char *quiet[] = {(char *)tool("wstrace"), "plan", "-q", path, "--time-limit", "0.2", NULL};
    cr_assert_eq(run_on(1, quiet, now, out, sizeof out), 0);
    cr_expect_str_eq(out, "");

    /* a spool left behind (WSTRACE_COLLECT=0), then converted */
    char spool[700], db[600];
    snprintf(db, sizeof db, "%s.left", path);
    snprintf(spool, sizeof spool, "%s.spool", db);
    char *wsk[] = {(char *)tool("wsk"),
                   "--device",
                   "sim",
                   "--layers",
                   "2",
                   "--hidden",
                   "256",
                   "--heads",
                   "4",
                   "--head-dim",
                   "64",
                   "--intermediate",
                   "512",
                   "--vocab",
                   "1024",
                   "--kv-len",
                   "96",
                   "--max-kv-len",
                   "128",
                   "--runs",
                   "2",
                   NULL};
    char preload[1200];
    const char *rt = getenv("WS_SANITIZER_RUNTIME");
    snprintf(preload, sizeof preload, "%s%s%s/lib/libwstrace.so", rt && *rt ? rt : "", rt && *rt ? ":" : "",
             WS_BUILD_DIR);
    const char *const leave[] = {"WSTRACE_COLLECT", "0", "WSTRACE_OUTPUT", db, "LD_PRELOAD", preload, NULL};
    run_on(0, wsk, leave, out, sizeof out);
    cr_assert_eq(access(spool, F_OK), 0, "no spool left: %s", out);
    char *collect[] = {(char *)tool("wstrace"), "collect", spool, NULL};
    cr_assert_eq(run_on(1, collect, now, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "collecting") != NULL && strchr(out, '%') != NULL, "collect: '%s'", out);
    unlink(db);
    unlink(spool);
    unlink(path);
}
