#include "trace_util.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static char dir[256];

const char *tu_dir(void)
{
    if (!dir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/wstrace-trace-XXXXXX", base && *base ? base : "/tmp");
        cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    }
    return dir;
}

void tu_path(char *out, size_t len, const char *name)
{
    int n = snprintf(out, len, "%s/%s", tu_dir(), name);
    cr_assert(n > 0 && (size_t)n < len, "path too long");
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

void tu_cleanup(void)
{
    if (dir[0])
        nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    dir[0] = 0;
}

const char *tu_sanitizer_preload(void)
{
    static char buf[4096];
    if (!WS_SANITIZER_RUNTIME[0])
        return NULL;
    snprintf(buf, sizeof buf, "LD_PRELOAD=%s", WS_SANITIZER_RUNTIME);
    return buf;
}

static int scrubbed(const char *kv)
{
    static const char *const prefixes[] = {"LD_PRELOAD=", "NVTX_INJECTION64_PATH=", "WSTRACE_", "WSSIM_"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(kv, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return 0;
}

char *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    cr_assert_not_null(buf);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            cap *= 2;
            buf = realloc(buf, cap);
            cr_assert_not_null(buf);
        }
    }
    fclose(f);
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

void tu_start(struct tu_proc *p, const char *const *env, const char *const *argv)
{
    static int serial;
    char name[64];
    snprintf(name, sizeof name, "run%d.out", serial);
    tu_path(p->out_path, sizeof p->out_path, name);
    snprintf(name, sizeof name, "run%d.err", serial++);
    tu_path(p->err_path, sizeof p->err_path, name);

    size_t n = 0, extra = 0;
    while (environ[n])
        n++;
    while (env && env[extra])
        extra++;
    char **envp = calloc(n + extra + 1, sizeof *envp);
    cr_assert_not_null(envp);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!scrubbed(environ[i]))
            envp[k++] = environ[i];
    for (size_t i = 0; i < extra; i++)
        if (env[i])
            envp[k++] = (char *)env[i];
    envp[k] = NULL;

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, p->out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, p->err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int rc = posix_spawn(&p->pid, argv[0], &fa, NULL, (char *const *)argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    cr_assert_eq(rc, 0, "cannot run %s: %s", argv[0], strerror(rc));
}

void tu_finish(struct tu_proc *p, struct tu_result *r)
{
    int status;
    while (waitpid(p->pid, &status, 0) < 0)
        cr_assert_eq(errno, EINTR, "waitpid: %s", strerror(errno));
    memset(r, 0, sizeof *r);
    r->exited = WIFEXITED(status);
    r->code = r->exited ? WEXITSTATUS(status) : -1;
    r->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    r->out = tu_read_file(p->out_path, NULL);
    r->err = tu_read_file(p->err_path, NULL);
    unlink(p->out_path);
    unlink(p->err_path);
}

void tu_run(struct tu_result *r, const char *const *env, const char *const *argv)
{
    struct tu_proc p;
    tu_start(&p, env, argv);
    tu_finish(&p, r);
}

const char *tu_tracer_preload(void)
{
    static char buf[8192];
    const char *san = tu_sanitizer_preload();
    int n = snprintf(buf, sizeof buf, "LD_PRELOAD=%s%s%s", san ? san + strlen("LD_PRELOAD=") : "", san ? ":" : "",
                     TU_LIBWSTRACE);
    cr_assert(n > 0 && (size_t)n < sizeof buf);
    return buf;
}

void tu_run_traced(struct tu_result *r, const char *trace, const char *const *env, const char *const *argv)
{
    char output[1024];
    int n0 = snprintf(output, sizeof output, "WSTRACE_OUTPUT=%s", trace);
    cr_assert(n0 > 0 && (size_t)n0 < sizeof output);
    const char *all[32] = {tu_tracer_preload(), output};
    size_t n = 2;
    for (size_t i = 0; env && env[i]; i++) {
        cr_assert_lt(n, sizeof all / sizeof all[0] - 1);
        all[n++] = env[i];
    }
    all[n] = NULL;
    tu_run(r, all, argv);
}

void tu_result_free(struct tu_result *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

long long tu_kv(const char *out, const char *key)
{
    size_t klen = strlen(key);
    for (const char *line = out; line && *line;) {
        if (strncmp(line, key, klen) == 0 && line[klen] == '=')
            return strtoll(line + klen + 1, NULL, 10);
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    cr_assert_fail("the program did not print %s=; its output was:\n%s", key, out);
    return 0;
}

int tu_lines(const char *s)
{
    int n = 0;
    for (const char *p = s; *p; p++)
        if (*p == '\n' || p[1] == 0)
            n++;
    return n;
}

int tu_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

sqlite3 *tu_open(const char *path)
{
    sqlite3 *db = NULL;
    cr_assert(tu_exists(path), "no trace at %s", path);
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL);
    cr_assert_eq(rc, SQLITE_OK, "%s: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
    return db;
}

static sqlite3_stmt *query(sqlite3 *db, const char *fmt, va_list ap)
{
    char *sql = sqlite3_vmprintf(fmt, ap);
    cr_assert_not_null(sql);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    cr_assert_eq(rc, SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    rc = sqlite3_step(st);
    cr_assert_eq(rc, SQLITE_ROW, "no row: %s (%s)", sql, sqlite3_errmsg(db));
    sqlite3_free(sql);
    return st;
}

int64_t tu_int(sqlite3 *db, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sqlite3_stmt *st = query(db, fmt, ap);
    va_end(ap);
    int64_t v = sqlite3_column_type(st, 0) == SQLITE_NULL ? TU_NULL : sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

char *tu_text(sqlite3 *db, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sqlite3_stmt *st = query(db, fmt, ap);
    va_end(ap);
    const unsigned char *t = sqlite3_column_text(st, 0);
    char *v = t ? strdup((const char *)t) : NULL;
    sqlite3_finalize(st);
    return v;
}
