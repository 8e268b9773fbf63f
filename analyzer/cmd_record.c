/* wstrace record: run a program under libwstrace.so and leave its trace. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cli.h"
#include "collector.h"
#include "commands.h"
#include "identity.h"
#include "import.h"
#include "spool_files.h"

#ifndef WSTRACE_LIBDIR
#define WSTRACE_LIBDIR "/usr/local/lib"
#endif

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: wstrace record [-o TRACE] [--keep-spool] [--no-merge] [--keep-parts] [--] COMMAND [ARGS...]\n\n"
        "Run COMMAND with libwstrace.so preloaded and write its SQLite trace: every device\n"
        "allocation, free and kernel launch, attributed to the NVTX range (graph node) open on the\n"
        "calling thread.  Processes it forks (or forks and execs) write TRACE.<pid>; when COMMAND\n"
        "ends, those that have finished are merged into TRACE, one process per row of its\n"
        "processes table; a program traced while another process traces into TRACE writes\n"
        "TRACE.<pid> instead (one line says so).  TRACE may name a pattern: %%r the rank (RANK, OMPI_COMM_WORLD_RANK,\n"
        "PMI_RANK, SLURM_PROCID), %%l the local rank, %%h the host, %%p the pid, %%%% a '%%'.\n"
        "The exit status is COMMAND's.\n\n"
        "  -o, --output TRACE  trace to write (default: wstrace.db)\n"
        "      --keep-spool    keep TRACE.spool after it has been converted\n"
        "      --no-merge      leave the traces of forked processes in TRACE.<pid>\n"
        "      --keep-parts    merge, and keep the TRACE.<pid> files too\n"
        "  -h, --help          show this help\n\n"
        "Environment: WSTRACE_LIB overrides the path of libwstrace.so; see the README for the\n"
        "WSTRACE_* variables the library reads.\n");
}

/* libwstrace.so beside this program (build tree and install tree: bin/../lib), else the
 * configured library folder. */
static int find_library(char *out, size_t len)
{
    const char *env = getenv("WSTRACE_LIB");
    if (env && *env) {
        if (access(env, R_OK) != 0)
            return -1;
        snprintf(out, len, "%s", env);
        return 0;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            if (snprintf(out, len, "%s/../lib/libwstrace.so", exe) < (int)len && access(out, R_OK) == 0)
                return 0;
        }
    }
    if (snprintf(out, len, "%s/libwstrace.so", WSTRACE_LIBDIR) < (int)len && access(out, R_OK) == 0)
        return 0;
    return -1;
}

static int absolute(const char *path, char *out, size_t len)
{
    if (path[0] == '/')
        return snprintf(out, len, "%s", path) < (int)len ? 0 : -1;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return -1;
    return snprintf(out, len, "%s/%s", cwd, path) < (int)len ? 0 : -1;
}

static int setup_environment(const char *lib, const char *trace)
{
    const char *old = getenv("LD_PRELOAD");
    size_t n = (old ? strlen(old) : 0) + strlen(lib) + 2;
    char *preload = malloc(n);
    if (!preload)
        return -1;
    /* Appended: a sanitizer runtime already preloaded must stay first. */
    if (old && *old)
        snprintf(preload, n, "%s:%s", old, lib);
    else
        snprintf(preload, n, "%s", lib);
    /* A new trace: not a process started by a traced one (libtrace/tracer.c, WSTRACE_OWNER). */
    int rc = setenv("LD_PRELOAD", preload, 1) | setenv("WSTRACE_OUTPUT", trace, 1) | unsetenv("WSTRACE_OWNER");
    free(preload);
    return rc ? -1 : 0;
}

/* A process died before converting its spool: recover it here.  A spool that another process
 * still writes is left to it.  Returns 0, or -1 after one line saying what failed. */
static int recover_spool(const char *trace, int keep)
{
    char spool[PATH_MAX + 16], err[1024];
    snprintf(spool, sizeof spool, "%s.spool", trace);
    int fd;
    struct ws_spool_header h;
    enum ws_spool_use use = ws_spool_probe(spool, &fd, &h);
    if (fd >= 0)
        close(fd);
    if (use != WS_SPOOL_STALE)
        return 0;
    struct ws_collect_stats st;
    /* Removed under its lock: a process that starts tracing into TRACE meanwhile keeps its spool. */
    if (ws_collect_spool_ex(spool, trace, keep ? 0 : WS_COLLECT_REMOVE_SPOOL, &st, NULL, NULL, err, sizeof err) != 0) {
        ws_error("record: %s; the spool is kept: run 'wstrace collect %s'", err, spool);
        return -1;
    }
    fprintf(stderr, "wstrace: recovered %s from its spool (%llu records)\n", trace, (unsigned long long)st.records);
    return 0;
}

struct recover_ctx {
    int keep, failed;
};

/* The spool of a forked child (TRACE.<pid>.spool) whose process is gone. */
static void recover_child(void *ctx, long pid, const char *child, const char *spool)
{
    struct recover_ctx *rc = ctx;
    (void)pid;
    struct stat t, sp;
    if (stat(child, &t) == 0 && stat(spool, &sp) == 0 && t.st_mtime >= sp.st_mtime)
        return; /* converted already (a spool kept by --keep-spool) */
    if (recover_spool(child, rc->keep) != 0)
        rc->failed = 1;
}

/* The spools of forked children whose process is gone. */
static void recover_children(const char *trace, int keep, int *failed)
{
    struct recover_ctx rc = {keep, *failed};
    ws_spool_scan_dead(trace, recover_child, &rc);
    *failed = rc.failed;
}

struct trace_list {
    char **list;
    size_t n, cap;
    time_t since;
};

static void add_trace(void *ctx, long pid, const char *path)
{
    struct trace_list *tl = ctx;
    struct stat sb;
    (void)pid;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_mtime < tl->since)
        return;
    if (tl->n == tl->cap) {
        size_t next = tl->cap ? tl->cap * 2 : 16;
        char **q = realloc(tl->list, next * sizeof *q);
        if (!q)
            return;
        tl->list = q;
        tl->cap = next;
    }
    if ((tl->list[tl->n] = strdup(path)) != NULL)
        tl->n++;
}

/* The traces TRACE.<pid> that processes of this run wrote (modified since it started), in pid
 * order; *n receives their count.  NULL when there are none (or no memory). */
static char **child_traces(const char *trace, time_t since, size_t *n)
{
    struct trace_list tl = {NULL, 0, 0, since};
    ws_scan_pid_files(trace, "", add_trace, &tl);
    *n = tl.n;
    return tl.list;
}

/* meta pid and ppid of a trace; 0 when it cannot be read. */
static int trace_pids(const char *path, long *pid, long *ppid)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    *pid = *ppid = 0;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT key, CAST(value AS INTEGER) FROM meta WHERE key IN ('pid', 'ppid')", -1, &st,
                           NULL) == SQLITE_OK)
        while (sqlite3_step(st) == SQLITE_ROW)
            *(strcmp((const char *)sqlite3_column_text(st, 0), "pid") == 0 ? pid : ppid) =
                (long)sqlite3_column_int64(st, 1);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return *pid > 0;
}

/* Of parts (n of them), keep in place those written by descendants of process root: their ppid
 * chain reaches it.  Traces that other processes wrote meanwhile into TRACE.<pid> (programs
 * traced into the same output at the same time) are no part of this run and are left alone.
 * Returns how many were kept. */
static size_t keep_descendants(char **parts, size_t n, long root)
{
    long *pid = calloc(n + 1, sizeof *pid), *ppid = calloc(n + 1, sizeof *ppid);
    char *in = calloc(n + 1, 1);
    size_t kept = 0;
    if (pid && ppid && in) {
        for (size_t i = 0; i < n; i++)
            trace_pids(parts[i], &pid[i], &ppid[i]);
        for (int changed = 1; changed;) { /* a child joins once its parent has */
            changed = 0;
            for (size_t i = 0; i < n; i++) {
                if (in[i] || pid[i] <= 0)
                    continue;
                int parent_in = ppid[i] == root;
                for (size_t j = 0; j < n && !parent_in; j++)
                    parent_in = in[j] && pid[j] == ppid[i];
                if (parent_in)
                    in[i] = changed = 1;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (in && in[i])
            parts[kept++] = parts[i];
        else
            free(parts[i]);
    }
    free(pid);
    free(ppid);
    free(in);
    return kept;
}

/* The program's trace (target: TRACE, or TRACE.<pid> when another process held TRACE) and the
 * traces of the processes it started become one trace, target. */
static void merge_children(const char *target, const char *trace, long root, time_t since, int keep_parts)
{
    size_t n = 0;
    char **parts = child_traces(trace, since, &n);
    for (size_t i = 0; i < n;) { /* the target itself is no part */
        if (strcmp(parts[i], target) == 0) {
            free(parts[i]);
            parts[i] = parts[--n];
        } else {
            i++;
        }
    }
    n = keep_descendants(parts, n, root);
    struct stat sb;
    if (n == 0 || stat(target, &sb) != 0) {
        for (size_t i = 0; i < n; i++)
            free(parts[i]);
        free(parts);
        return;
    }
    const char **inputs = malloc((n + 1) * sizeof *inputs);
    char out[PATH_MAX + 96], err[1024];
    snprintf(out, sizeof out, "%s.merge.%ld", target, (long)getpid());
    struct ws_merge_stats st;
    if (inputs) {
        inputs[0] = target;
        for (size_t i = 0; i < n; i++)
            inputs[i + 1] = parts[i];
        if (ws_merge_traces(inputs, n + 1, out, &st, err, sizeof err) != 0)
            ws_error("record: the traces of forked processes stay apart: %s", err);
        else if (rename(out, target) != 0)
            ws_error("record: cannot replace %s: %s", target, strerror(errno));
        else {
            fprintf(stderr, "wstrace: %s holds %lld processes (merged)\n", target, (long long)st.processes);
            for (size_t i = 0; !keep_parts && i < n; i++)
                unlink(parts[i]);
        }
    }
    unlink(out);
    free(inputs);
    for (size_t i = 0; i < n; i++)
        free(parts[i]);
    free(parts);
}

int cmd_record(int argc, char **argv)
{
    static const struct option options[] = {
        {"output", required_argument, NULL, 'o'}, {"keep-spool", no_argument, NULL, 'k'},
        {"no-merge", no_argument, NULL, 'M'},     {"keep-parts", no_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    const char *output = "wstrace.db";
    int keep = 0, merge = 1, keep_parts = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:o:h", options, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case 'k': keep = 1; break;
        case 'M': merge = 0; break;
        case 'P': keep_parts = 1; break;
        case 'h': usage(stdout); return WS_EXIT_OK;
        default: return ws_bad_option("record", c, argv);
        }
    }
    if (optind >= argc) {
        ws_error("record: no command given; see 'wstrace record --help'");
        return WS_EXIT_USAGE;
    }
    char lib[PATH_MAX], trace[PATH_MAX], named[PATH_MAX], bad;
    if (find_library(lib, sizeof lib) != 0) {
        ws_error("record: libwstrace.so not found (set WSTRACE_LIB)");
        return WS_EXIT_USAGE;
    }
    if (absolute(output, trace, sizeof trace) != 0) {
        ws_error("record: %s: path too long", output);
        return WS_EXIT_USAGE;
    }
    /* The name the traced program will choose (its pid is ours until it is forked). */
    if (ws_expand_output_name(trace, (long)getpid(), named, sizeof named, &bad) != 0) {
        ws_error("record: %s: not a usable name (%s)", output,
                 bad ? "use %r, %l, %h, %p or %%" : "too long or a trailing %");
        return WS_EXIT_USAGE;
    }
    struct stat existing;
    if (lstat(named, &existing) == 0 && !S_ISREG(existing.st_mode)) {
        ws_error("record: %s is not a regular file: it is not replaced by a trace", named);
        return WS_EXIT_USAGE;
    }
    /* Fail early, and in one line, when the trace cannot be written at all.  The probe has a
     * name of its own: an existing trace or spool is never touched here. */
    char probe[PATH_MAX + 32];
    snprintf(probe, sizeof probe, "%s.probe.%ld", named, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        ws_error("record: cannot write beside %s: %s", trace, strerror(errno));
        return WS_EXIT_USAGE;
    }
    close(fd);
    unlink(probe);
    time_t started = time(NULL) - 1; /* file times have one-second resolution here */
    /* An earlier trace stays until the new one replaces it (the collector renames it into place). */
    struct stat before;
    int had_trace = stat(named, &before) == 0;
    if (setup_environment(lib, trace) != 0 || (keep && setenv("WSTRACE_KEEP_SPOOL", "1", 1) != 0)) {
        ws_error("record: cannot set up the environment");
        return WS_EXIT_USAGE;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        ws_error("record: fork: %s", strerror(errno));
        return WS_EXIT_USAGE;
    }
    if (pid == 0) {
        execvp(argv[optind], argv + optind);
        ws_error("record: cannot run %s: %s", argv[optind], strerror(errno));
        _exit(127);
    }
    /* From here on, the trace is the one the program names with its own pid. */
    char own[PATH_MAX];
    if (ws_expand_output_name(trace, (long)pid, own, sizeof own, &bad) == 0) {
        had_trace = had_trace && strcmp(own, named) == 0;
        snprintf(trace, sizeof trace, "%s", own);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            ws_error("record: waitpid: %s", strerror(errno));
            return WS_EXIT_USAGE;
        }
    int failed = recover_spool(trace, keep) != 0;
    recover_children(trace, keep, &failed);
    /* The program traced into TRACE.<pid> when another process held TRACE (it said so): that is
     * its trace, and the one the processes it started are merged into. */
    char alone[PATH_MAX + 32];
    snprintf(alone, sizeof alone, "%s.%ld", trace, (long)pid);
    struct stat after;
    int apart = stat(alone, &after) == 0;
    if (merge)
        merge_children(apart ? alone : trace, trace, (long)pid, started, keep_parts);
    int said = failed || apart;
    if (!said && stat(trace, &after) != 0)
        ws_error("record: %s was not written (the program did not load the tracer, or could not write)", trace);
    else if (!said && had_trace && after.st_ino == before.st_ino && after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
             after.st_mtim.tv_nsec == before.st_mtim.tv_nsec)
        ws_error("record: %s was not rewritten: it still holds an earlier trace", trace);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
