/* What the tracer tests share: a temporary folder per test, running programs with a clean
 * environment (optionally under libwstrace.so), and SQL on the traces they leave. */
#ifndef WS_TRACE_UTIL_H
#define WS_TRACE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>
#include <sys/types.h>

#define TU_NULL INT64_MIN /* what tu_int returns for SQL NULL */

#define TU_PROG       WS_BUILD_DIR "/tests/trace_prog"
#define TU_WSTRACE    WS_BUILD_DIR "/bin/wstrace"
#define TU_LIBWSTRACE WS_BUILD_DIR "/lib/libwstrace.so"

/* The temporary folder of this test process (created on first use), and a path inside it. */
const char *tu_dir(void);
void tu_path(char *out, size_t len, const char *name);
/* Remove the temporary folder and everything in it: the fini of every test. */
void tu_cleanup(void);

struct tu_result {
    int exited; /* 1: exited normally with code */
    int code;
    int signal; /* signal that ended it, when !exited */
    char *out;  /* whole stdout */
    char *err;  /* whole stderr */
};

/* A program started and not yet waited for. */
struct tu_proc {
    pid_t pid;
    char out_path[512], err_path[512];
};
/* Start argv[0] as tu_run does, without waiting; tu_finish waits and collects what it printed. */
void tu_start(struct tu_proc *p, const char *const *env, const char *const *argv);
void tu_finish(struct tu_proc *p, struct tu_result *r);

/* Run argv[0] with the test's environment minus LD_PRELOAD, NVTX_INJECTION64_PATH, WSTRACE_* and
 * WSSIM_*, plus env (NULL-terminated "K=V" list, may be NULL).  Asserts that it could be run. */
void tu_run(struct tu_result *r, const char *const *env, const char *const *argv);
/* The same under the tracer: LD_PRELOAD=[sanitizer runtime:]libwstrace.so, WSTRACE_OUTPUT=trace. */
void tu_run_traced(struct tu_result *r, const char *trace, const char *const *env, const char *const *argv);
/* "LD_PRELOAD=[<sanitizer runtime>:]libwstrace.so" */
const char *tu_tracer_preload(void);
/* "LD_PRELOAD=<sanitizer runtime>" in sanitizer builds, else NULL. */
const char *tu_sanitizer_preload(void);
void tu_result_free(struct tu_result *r);

/* Value of a "key=value" line of a program's output as an integer (asserts that it is there). */
long long tu_kv(const char *out, const char *key);
/* Number of lines of s (a last line without '\n' counts). */
int tu_lines(const char *s);
int tu_exists(const char *path);
char *tu_read_file(const char *path, size_t *len);

/* SQL on a trace.  tu_int/tu_text take a printf-style query (sqlite3_mprintf; text arguments
 * are the tests' own literals) and assert that it returns a row.  tu_text's result (NULL for
 * SQL NULL) is freed by the caller. */
sqlite3 *tu_open(const char *path);
int64_t tu_int(sqlite3 *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *tu_text(sqlite3 *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
