/*
 * End-to-end tests of the loader-lookup interposer, the _ptsz hooks, the blind-spot diagnostics
 * and the spools of children: programs under libwstrace.so (LD_PRELOAD), traces checked with SQL.
 * Every expected number is what the program was asked to do or says it did.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace_util.h"

TestSuite(lookup, .fini = tu_cleanup);

#define LOOKUP_PROG WS_BUILD_DIR "/tests/lookup_prog"
#define PTSZ_PROG   WS_BUILD_DIR "/tests/ptsz_prog"
#define SIM_CUDART  WS_BUILD_DIR "/lib/sim/libcudart.so.13"
#define SIM_DRIVER  WS_BUILD_DIR "/lib/sim/libcuda.so.1"
#define SIM_PATH    "LD_LIBRARY_PATH=" WS_BUILD_DIR "/lib/sim"

#define ARGV(...) ((const char *const[]){__VA_ARGS__, NULL})
#define ENV(...)  ((const char *const[]){__VA_ARGS__, NULL})

static void run_ok(struct tu_result *r, const char *trace, const char *const *env, const char *const *argv)
{
    tu_run_traced(r, trace, env, argv);
    cr_assert(r->exited && r->code == 0, "traced %s %s: exit %d signal %d\nstdout:\n%s\nstderr:\n%s", argv[0],
              argv[1] ? argv[1] : "", r->code, r->signal, r->out, r->err);
}

/* The value of "key=" in a program's output, as text (asserts that it is there); caller frees. */
static char *kv_text(const char *out, const char *key)
{
    size_t klen = strlen(key);
    for (const char *line = out; line && *line;) {
        if (strncmp(line, key, klen) == 0 && line[klen] == '=') {
            const char *v = line + klen + 1, *end = strchr(v, '\n');
            return strndup(v, end ? (size_t)(end - v) : strlen(v));
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    cr_assert_fail("the program did not print %s=; its output was:\n%s", key, out);
    return NULL;
}

static void expect_kv(const char *out, const char *key, const char *want)
{
    char *got = kv_text(out, key);
    cr_expect_str_eq(got, want, "%s", key);
    free(got);
}

/* N cudaMalloc calls of sizes 1000 + i, each freed with cudaFree: exactly what the trace holds. */
static void expect_pairs(const char *trace, int n)
{
    sqlite3 *db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), n);
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM allocations WHERE api = 'cudaMalloc' AND free_api = 'cudaFree' AND "
                        "status = 0 AND bytes BETWEEN 1000 AND %d",
                        1000 + n - 1),
                 n);
    cr_expect_eq(tu_int(db, "SELECT COUNT(DISTINCT bytes) FROM allocations"), n);
    sqlite3_close(db);
}

/* ---- lookups through a handle ------------------------------------------------------------------ */

/* ctypes-style: cudart opened with RTLD_LOCAL, entry points from dlsym(handle). */
Test(lookup, dlsym_on_a_local_handle_reaches_the_hooks)
{
    enum { N = 7 };
    char trace[512];
    tu_path(trace, sizeof trace, "t.db");
    struct tu_result r;
    run_ok(&r, trace, NULL, ARGV(LOOKUP_PROG, "handle", SIM_CUDART, "7"));
    cr_expect_str_empty(r.err);
    expect_kv(r.out, "malloc_from", TU_LIBWSTRACE);
    expect_kv(r.out, "free_from", TU_LIBWSTRACE);
    cr_assert_eq(tu_kv(r.out, "calls"), N);
    expect_pairs(trace, N);
    tu_result_free(&r);
}

Test(lookup, dlvsym_on_a_local_handle_reaches_the_hooks)
{
    enum { N = 5 };
    char trace[512];
    tu_path(trace, sizeof trace, "t.db");
    struct tu_result r;
    run_ok(&r, trace, NULL, ARGV(LOOKUP_PROG, "vsym", SIM_CUDART, "5"));
    cr_expect_str_empty(r.err);
    expect_kv(r.out, "malloc_from", TU_LIBWSTRACE);
    cr_assert_eq(tu_kv(r.out, "calls"), N);
    expect_pairs(trace, N);
    tu_result_free(&r);
}

/* Untraced, the same lookups answer the runtime's own definitions. */
Test(lookup, untraced_lookups_answer_the_library)
{
    struct tu_result r;
    tu_run(&r, NULL, ARGV(LOOKUP_PROG, "handle", SIM_CUDART, "2"));
    cr_assert(r.exited && r.code == 0, "%s", r.err);
    expect_kv(r.out, "malloc_from", SIM_CUDART);
    tu_result_free(&r);
}

/* A name that is not a hook gets the library's definition, versioned or not; a name nothing
 * defines gets NULL and the loader's error. */
Test(lookup, names_that_are_not_hooks_keep_their_definition)
{
    char trace[512];
    tu_path(trace, sizeof trace, "t.db");
    struct tu_result r;
    run_ok(&r, trace, NULL, ARGV(LOOKUP_PROG, "unhooked", SIM_CUDART));
    cr_expect_str_empty(r.err);
    expect_kv(r.out, "count_from", SIM_CUDART);
    expect_kv(r.out, "version_from", SIM_CUDART);
    cr_expect_eq(tu_kv(r.out, "count_rc"), 0);
    cr_expect_eq(tu_kv(r.out, "devices"), 1, "the simulated device has one GPU");
    cr_expect_eq(tu_kv(r.out, "missing_is_null"), 1);
    cr_expect_eq(tu_kv(r.out, "missing_error"), 1, "dlerror names the missing symbol");
    tu_result_free(&r);
}

/* RTLD_NEXT and RTLD_DEFAULT are relative to the caller, traced as untraced.  lookup_prog links
 * probe_a then probe_b, and all three define lookup_probe: from the executable the next one is
 * probe_a's, from probe_a it is probe_b's, and the default one is the executable's.  _exit: the
 * next definition after the executable is the first one in the global scope. */
Test(lookup, rtld_next_and_default_stay_relative_to_the_caller)
{
    char trace[512];
    tu_path(trace, sizeof trace, "t.db");
    for (int traced = 0; traced < 2; traced++) {
        struct tu_result r;
        if (traced)
            run_ok(&r, trace, NULL, ARGV(LOOKUP_PROG, "pseudo"));
        else
            tu_run(&r, NULL, ARGV(LOOKUP_PROG, "pseudo"));
        cr_assert(r.exited && r.code == 0, "%s", r.err);
        expect_kv(r.out, "next_from_exe", "a");
        expect_kv(r.out, "next_from_a", "b");
        expect_kv(r.out, "default_from_a", "exe");
        cr_expect_eq(tu_kv(r.out, "exit_next_is_default"), 1, "traced=%d: %s", traced, r.out);
        if (traced && !tu_sanitizer_preload())
            expect_kv(r.out, "exit_next_from", TU_LIBWSTRACE); /* the tracer's _exit is next after the program */
        tu_result_free(&r);
    }
}

/* Python's ctypes opens a library with RTLD_LOCAL and looks its functions up through the handle. */
Test(lookup, python_ctypes_client)
{
    static const char *const candidates[] = {"/usr/bin/python3", "/usr/local/bin/python3"};
    char python[1024] = "";
    /* the interpreter itself, not a wrapper script that starts it */
    const char *path = getenv("PATH");
    for (const char *p = path; p && *p && !python[0];) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char cand[1024];
        snprintf(cand, sizeof cand, "%.*s/python3", (int)len, p);
        if (access(cand, X_OK) == 0) {
            struct tu_result q;
            tu_run(&q, NULL, ARGV(cand, "-c", "import sys; print(sys.executable)"));
            if (q.exited && q.code == 0 && q.out[0] == '/')
                snprintf(python, sizeof python, "%.*s", (int)strcspn(q.out, "\n"), q.out);
            tu_result_free(&q);
        }
        p = end ? end + 1 : NULL;
    }
    for (size_t i = 0; !python[0] && i < sizeof candidates / sizeof candidates[0]; i++)
        if (access(candidates[i], X_OK) == 0)
            snprintf(python, sizeof python, "%s", candidates[i]);
    if (!python[0])
        cr_skip_test("python3 was not found: no ctypes client to run");

    enum { N = 6 };
    static const char script[] = "import ctypes, sys\n"
                                 "rt = ctypes.CDLL(sys.argv[1])\n"
                                 "p = ctypes.c_void_p()\n"
                                 "for i in range(6):\n"
                                 "    assert rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 20)) == 0\n"
                                 "    assert rt.cudaFree(p) == 0\n"
                                 "print('calls=6')\n";
    char trace[512];
    tu_path(trace, sizeof trace, "py.db");
    struct tu_result r;
    /* the interpreter is not instrumented: what LeakSanitizer finds in it is not ours */
    run_ok(&r, trace, ENV("ASAN_OPTIONS=detect_leaks=0"), ARGV(python, "-c", script, SIM_CUDART));
    cr_assert_eq(tu_kv(r.out, "calls"), N);
    sqlite3 *db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE api = 'cudaMalloc' AND bytes = 1048576 AND "
                            "free_api = 'cudaFree'"),
                 N);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), N);
    sqlite3_close(db);
    tu_result_free(&r);
}

/* ---- _ptsz ------------------------------------------------------------------------------------- */

Test(lookup, ptsz_forms_are_traced)
{
    enum { N = 9 };
    char trace[512];
    tu_path(trace, sizeof trace, "t.db");
    struct tu_result r;
    run_ok(&r, trace, NULL, ARGV(PTSZ_PROG, "ptsz", "9"));
    cr_expect_str_empty(r.err);
    long long stream = tu_kv(r.out, "stream"), exec = tu_kv(r.out, "graph_exec");
    cr_expect_eq(tu_kv(r.out, "counter"), 2 + 1 + 1, "the kernels ran under the tracer");
    sqlite3 *db = tu_open(trace);
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM allocations WHERE api = 'cudaMallocAsync_ptsz' AND free_api = "
                        "'cudaFreeAsync_ptsz' AND status = 0 AND bytes BETWEEN 100 AND %d AND stream = %lld",
                        100 + N - 1, stream),
                 N);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE api = 'cudaMallocAsync_ptsz' AND bytes = 5000 AND "
                            "free_api = 'cudaFreeAsync_ptsz' AND stream IS NULL"),
                 1, "the per-thread default stream");
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE api = 'cudaMallocFromPoolAsync_ptsz' AND "
                            "bytes = 3000 AND free_api = 'cudaFreeAsync_ptsz'"),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE api LIKE '%%_ptsz'"), N + 2);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM pool_allocations pa JOIN allocations a ON a.id = pa.allocation_id "
                            "WHERE a.api LIKE 'cudaMalloc%%Async_ptsz'"),
                 N + 2, "every stream-ordered allocation is linked to its pool");
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM launches l JOIN strings s ON s.id = l.kernel_name_id WHERE "
                        "l.api = 'cudaLaunchKernel_ptsz' AND s.value = 'ptsz_kernel_add' AND grid_x = 3 AND "
                        "block_x = 32 AND stream = %lld",
                        stream),
                 2);
    cr_expect_eq(tu_int(db,
                        "SELECT COUNT(*) FROM launches WHERE api = 'cudaLaunchKernelExC_ptsz' AND grid_x = 5 AND "
                        "block_x = 64 AND stream = %lld",
                        stream),
                 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM launches WHERE api = 'cudaLaunchCooperativeKernel_ptsz' AND "
                            "grid_x = 7 AND block_x = 16"),
                 1);
    cr_expect_eq(
        tu_int(db, "SELECT COUNT(*) FROM launches WHERE api = 'cudaGraphLaunch_ptsz' AND function = %lld", exec), 1);
    sqlite3_close(db);
    tu_result_free(&r);
}

#ifdef WS_LOOKUP_PTDS_PROG
/* nvcc --default-stream per-thread turns cudaMallocAsync and <<<>>> into their _ptsz forms. */
Test(lookup, nvcc_per_thread_default_stream_program)
{
    char trace[512];
    tu_path(trace, sizeof trace, "ptds.db");
    struct tu_result r;
    run_ok(&r, trace, ENV(SIM_PATH), ARGV(WS_LOOKUP_PTDS_PROG, "11", "3"));
    cr_assert_eq(tu_kv(r.out, "counter"), 3, "%s", r.out);
    sqlite3 *db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE api = 'cudaMallocAsync_ptsz' AND "
                            "free_api = 'cudaFreeAsync_ptsz' AND bytes BETWEEN 256 AND 266"),
                 11);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM launches l JOIN strings s ON s.id = l.kernel_name_id WHERE "
                            "l.api = '__cudaLaunchKernel_ptsz' AND s.value = '_Z4bumpPi' AND grid_x = 1 AND "
                            "block_x = 1 AND status = 0"),
                 3);
    sqlite3_close(db);
    tu_result_free(&r);
}
#else
Test(lookup, nvcc_per_thread_default_stream_program)
{
    cr_skip_test("nvcc was not found when this build was configured: no nvcc-built program to run");
}
#endif

/* ---- blind spots ------------------------------------------------------------------------------- */

static char *meta_value(const char *trace, const char *key)
{
    sqlite3 *db = tu_open(trace);
    char *v = tu_text(db, "SELECT (SELECT value FROM meta WHERE key = '%s')", key);
    sqlite3_close(db);
    return v;
}

/* A traced program that makes its calls through the tracer's hooks has no blind spot. */
Test(lookup, a_traced_program_has_no_blind_spot)
{
    char trace[512];
    tu_path(trace, sizeof trace, "t.db");
    struct tu_result r;
    run_ok(&r, trace, NULL, ARGV(PTSZ_PROG, "ptsz", "1"));
    cr_expect_str_empty(r.err);
    sqlite3 *db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM meta WHERE key LIKE 'blind_spot.%%'"), 0);
    sqlite3_close(db);
    tu_result_free(&r);
}

/* The driver opened and used with no runtime and no hook reached: two blind spots, one line. */
Test(lookup, driver_used_without_a_traced_call_is_reported)
{
    char trace[512];
    tu_path(trace, sizeof trace, "t.db");
    struct tu_result r;
    run_ok(&r, trace, NULL, ARGV(LOOKUP_PROG, "driver", SIM_DRIVER));
    cr_expect_eq(tu_lines(r.err), 1, "one line: %s", r.err);
    cr_expect(strstr(r.err, "wstrace: this process used CUDA in ways the trace cannot see") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "the CUDA driver reached without a traced call") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "an active context on device 0") != NULL, "%s", r.err);
    char *v = meta_value(trace, "blind_spot.driver_unwrapped");
    cr_expect_not_null(v);
    free(v);
    v = meta_value(trace, "blind_spot.context_untraced");
    cr_expect(v && strncmp(v, "device 0:", 9) == 0, "%s", v ? v : "(none)");
    free(v);
    v = meta_value(trace, "blind_spot.static_cudart");
    cr_expect_null(v, "no static runtime here: %s", v);
    free(v);
    tu_result_free(&r);
}

/* A merged trace keeps each process's blind spots; summary names the process of each. */
Test(lookup, merged_trace_names_the_blind_spots_of_each_process)
{
    char driver[512], traced[512], merged[512];
    tu_path(driver, sizeof driver, "driver.db");
    tu_path(traced, sizeof traced, "traced.db");
    tu_path(merged, sizeof merged, "merged.db");
    struct tu_result r;
    run_ok(&r, driver, NULL, ARGV(LOOKUP_PROG, "driver", SIM_DRIVER));
    tu_result_free(&r);
    run_ok(&r, traced, NULL, ARGV(PTSZ_PROG, "ptsz", "2"));
    tu_result_free(&r);
    sqlite3 *db = tu_open(driver);
    long long pid = tu_int(db, "SELECT value FROM meta WHERE key = 'pid'");
    sqlite3_close(db);
    tu_run(&r, NULL, ARGV(TU_WSTRACE, "merge", "-o", merged, driver, traced));
    cr_assert_eq(r.code, 0, "%s", r.err);
    tu_result_free(&r);
    tu_run(&r, NULL, ARGV(TU_WSTRACE, "summary", merged));
    cr_assert_eq(r.code, 0, "%s", r.err);
    char line[128];
    snprintf(line, sizeof line, "blind spot               context_untraced: process %lld: device 0:", pid);
    cr_expect(strstr(r.out, line) != NULL, "%s", r.out);
    snprintf(line, sizeof line, "blind spot               driver_unwrapped: process %lld: ", pid);
    cr_expect(strstr(r.out, line) != NULL, "%s", r.out);
    cr_expect_eq(tu_lines(strstr(r.out, "blind spot") ? strstr(r.out, "blind spot") : "") -
                     tu_lines(strstr(r.out, "Level-1") ? strstr(r.out, "Level-1") : ""),
                 2, "two blind spots, both of the driver's process: %s", r.out);
    tu_result_free(&r);
}

#ifdef WS_LOOKUP_STATIC_PROG
/* nvcc's default, -cudart static: its calls never reach a hook.  Run against the simulated driver
 * (it answers the static runtime with an error, as a machine without a GPU does). */
Test(lookup, static_cudart_program_is_reported)
{
    char trace[512];
    tu_path(trace, sizeof trace, "t.db");
    for (int with_driver = 0; with_driver < 2; with_driver++) {
        struct tu_result r;
        run_ok(&r, trace, with_driver ? ENV(SIM_PATH) : NULL, ARGV(WS_LOOKUP_STATIC_PROG, "4"));
        cr_assert_eq(tu_kv(r.out, "calls"), 4);
        cr_expect_eq(tu_lines(r.err), 1, "one line: %s", r.err);
        cr_expect(strstr(r.err, "wstrace: this process used CUDA in ways the trace cannot see: a statically linked "
                                "CUDA runtime in " WS_LOOKUP_STATIC_PROG) != NULL,
                  "%s", r.err);
        char *v = meta_value(trace, "blind_spot.static_cudart");
        cr_expect(v && strcmp(v, WS_LOOKUP_STATIC_PROG) == 0, "%s", v ? v : "(none)");
        free(v);
        sqlite3 *db = tu_open(trace);
        cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), 0, "nothing of it was seen");
        sqlite3_close(db);
        /* summary refuses the empty trace and says why */
        struct tu_result s;
        tu_run(&s, NULL, ARGV(TU_WSTRACE, "summary", trace));
        cr_expect_neq(s.code, 0);
        cr_expect(strstr(s.err, "blind spots: static_cudart (" WS_LOOKUP_STATIC_PROG ")") != NULL, "%s", s.err);
        tu_result_free(&s);
        tu_result_free(&r);
    }
}

/* A plugin with a runtime of its own in a traced program: the trace has the program's calls and
 * names the plugin; `wstrace summary` shows it. */
Test(lookup, static_cudart_plugin_is_reported)
{
    enum { N = 3 };
    char trace[512];
    tu_path(trace, sizeof trace, "t.db");
    struct tu_result r;
    run_ok(&r, trace, ENV(SIM_PATH), ARGV(LOOKUP_PROG, "plugin", SIM_CUDART, WS_LOOKUP_STATIC_PLUGIN, "3"));
    cr_expect(strstr(r.err, "a statically linked CUDA runtime in " WS_LOOKUP_STATIC_PLUGIN) != NULL, "%s", r.err);
    cr_expect_eq(tu_lines(r.err), 1, "one line: %s", r.err);
    sqlite3 *db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE api = 'cudaMalloc' AND bytes = 4096"), N);
    char *v = tu_text(db, "SELECT value FROM meta WHERE key = 'blind_spot.static_cudart'");
    cr_expect_str_eq(v, WS_LOOKUP_STATIC_PLUGIN);
    free(v);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM meta WHERE key LIKE 'blind_spot.%%'"), 1,
                 "the program's own calls were traced: no other blind spot");
    sqlite3_close(db);
    struct tu_result s;
    tu_run(&s, NULL, ARGV(TU_WSTRACE, "summary", trace));
    cr_assert_eq(s.code, 0, "%s", s.err);
    cr_expect(strstr(s.out, "blind spot               static_cudart: " WS_LOOKUP_STATIC_PLUGIN "\n") != NULL, "%s",
              s.out);
    tu_result_free(&s);
    tu_run(&s, NULL, ARGV(TU_WSTRACE, "summary", "--json", trace));
    cr_assert_eq(s.code, 0, "%s", s.err);
    json_error_t jerr;
    json_t *root = json_loads(s.out, 0, &jerr);
    cr_assert_not_null(root, "%s: %s", jerr.text, s.out);
    json_t *spots = json_object_get(root, "blind_spots");
    cr_assert(json_is_array(spots) && json_array_size(spots) == 1, "%s", s.out);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(spots, 0), "kind")), "static_cudart");
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(spots, 0), "detail")), WS_LOOKUP_STATIC_PLUGIN);
    json_decref(root);
    tu_result_free(&s);
    tu_result_free(&r);
}
#else
Test(lookup, static_cudart_program_is_reported)
{
    cr_skip_test("nvcc was not found when this build was configured: no static-cudart program to run");
}

Test(lookup, static_cudart_plugin_is_reported)
{
    cr_skip_test("nvcc was not found when this build was configured: no static-cudart plugin to load");
}
#endif

/* ---- children ----------------------------------------------------------------------------------- */

static int count_files(const char *prefix, const char *suffix)
{
    DIR *d = opendir(tu_dir());
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name), slen = strlen(suffix);
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 && len >= slen &&
            strcmp(e->d_name + len - slen, suffix) == 0)
            n++;
    }
    closedir(d);
    return n;
}

/* Under plain LD_PRELOAD: children that return from main convert their own spools; the spools of
 * children killed before they could are converted by the parent at its exit. */
Test(lookup, forked_children_each_leave_a_converted_trace)
{
    enum { N = 3, K = 2 };
    char trace[512];
    tu_path(trace, sizeof trace, "t.db");
    struct tu_result r;
    run_ok(&r, trace, NULL, ARGV(LOOKUP_PROG, "fork", SIM_CUDART, "3", "2"));
    for (int i = 0; i < N + K; i++) {
        char key[16], child[600];
        snprintf(key, sizeof key, i < N ? "child%d" : "killed%d", i < N ? i : i - N);
        long long pid = tu_kv(r.out, key);
        snprintf(child, sizeof child, "%s.%lld", trace, pid);
        sqlite3 *db = tu_open(child);
        cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key = 'pid'"), pid);
        if (i < N) {
            cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), i + 1, "child %d", i);
            cr_expect_eq(tu_int(db,
                                "SELECT COUNT(DISTINCT bytes) FROM allocations WHERE bytes BETWEEN %d AND %d AND "
                                "free_api = 'cudaFree'",
                                500 + i, 500 + 2 * i),
                         i + 1, "child %d", i);
            cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key = 'clean_exit'"), 1);
        } else {
            cr_expect_eq(tu_int(db, "SELECT COUNT(DISTINCT bytes) FROM allocations WHERE bytes BETWEEN 700 AND 702"), 3,
                         "killed child %d", i - N);
            cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), 3, "killed child %d", i - N);
            cr_expect_eq(tu_int(db, "SELECT value FROM meta WHERE key = 'clean_exit'"), 0);
            char line[700];
            snprintf(line, sizeof line,
                     "wstrace: process %lld ended without converting its trace; it is converted "
                     "into %s\n",
                     pid, child);
            cr_expect(strstr(r.err, line) != NULL, "%s", r.err);
        }
        sqlite3_close(db);
    }
    sqlite3 *db = tu_open(trace);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations WHERE bytes = 100"), 1);
    cr_expect_eq(tu_int(db, "SELECT COUNT(*) FROM allocations"), 1);
    sqlite3_close(db);
    cr_expect_eq(tu_lines(r.err), K, "one line per killed child: %s", r.err);
    cr_expect_eq(count_files("t.db", ".spool"), 0, "no spool left");
    cr_expect_eq(count_files("t.db", ""), 1 + N + K);
    tu_result_free(&r);
}
