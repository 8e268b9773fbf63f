/*
 * wstrace export TRACE --format chrome -o OUT.json
 *
 * The trace as Chrome trace-event JSON, which Perfetto and chrome://tracing open: node ranges per
 * thread, kernel launches, allocations and frees, and one counter track of live bytes per device.
 * Events are written one at a time (one small json_t each) so that memory stays flat on traces of
 * millions of events; the file is written under a temporary name and renamed over OUT only when
 * complete, so a failed export never leaves a partial OUT behind.  docs/report.md describes the
 * output.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "outfile.h"
#include "tracedb.h"

/* Relative microseconds with nanosecond resolution need about 13 significant digits; 15 keeps
 * them exact without the noise digits that the default 17 would print. */
#define EXPORT_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

struct export_ctx {
    sqlite3 *db;
    FILE *out;
    long long pid;
    long long t0_ns, t1_ns; /* trace start (ts 0) and end (where unclosed ranges stop) */
    int with_memory;        /* allocation and free instant events */
    unsigned long long events;
    char *buf; /* serialised event, reused */
    size_t cap;
    char err[512];
};

/* ---- helpers ---- */

static double rel_us(const struct export_ctx *x, long long ns) { return (double)(ns - x->t0_ns) / 1000.0; }

static int sql_prepare(struct export_ctx *x, const char *sql, sqlite3_stmt **st)
{
    if (sqlite3_prepare_v2(x->db, sql, -1, st, NULL) != SQLITE_OK) {
        snprintf(x->err, sizeof x->err, "cannot read the trace: %s", sqlite3_errmsg(x->db));
        return -1;
    }
    return 0;
}

static int sql_done(struct export_ctx *x, int step_rc)
{
    if (step_rc != SQLITE_DONE) {
        snprintf(x->err, sizeof x->err, "cannot read the trace: %s", sqlite3_errmsg(x->db));
        return -1;
    }
    return 0;
}

/* Write one event (and drop the reference to it); events are separated by ",\n".  The event is
 * serialised into a reusable buffer and written with one fwrite: json_dumpf would issue one
 * locked fwrite per token, which dominates the time of a large export. */
static int emit(struct export_ctx *x, json_t *event)
{
    int rc = -1;
    if (!event) {
        snprintf(x->err, sizeof x->err, "out of memory while building an event");
        return -1;
    }
    size_t need = json_dumpb(event, x->buf, x->cap, EXPORT_JSON_FLAGS);
    if (need > x->cap) {
        char *bigger = realloc(x->buf, need * 2);
        if (!bigger) {
            snprintf(x->err, sizeof x->err, "out of memory while writing an event");
            goto done;
        }
        x->buf = bigger;
        x->cap = need * 2;
        need = json_dumpb(event, x->buf, x->cap, EXPORT_JSON_FLAGS);
    }
    if (need == 0) {
        snprintf(x->err, sizeof x->err, "cannot serialise an event");
        goto done;
    }
    if ((x->events > 0 && fputs(",\n", x->out) == EOF) || fwrite(x->buf, 1, need, x->out) != need) {
        snprintf(x->err, sizeof x->err, "write failed: %s", strerror(errno));
        goto done;
    }
    x->events++;
    rc = 0;
done:
    json_decref(event);
    return rc;
}

/* Jansson refuses strings that are not valid UTF-8, and names recorded from a program need not
 * be: such a name is passed on with its invalid bytes replaced, from a ring of buffers large
 * enough for all the strings of one event. */
static const char *json_safe(const char *s)
{
    static char ring[8][1024];
    static unsigned next;
    const unsigned char *p = (const unsigned char *)s;
    size_t n = 1;
    while (*p && (n = ws_utf8_sequence(p)) != 0)
        p += n;
    if (n != 0)
        return s;
    char *out = ring[next++ % 8];
    ws_utf8_sanitize(s, out, sizeof ring[0]);
    return out;
}

static const char *column_text_or(sqlite3_stmt *st, int col, const char *fallback)
{
    const char *s = (const char *)sqlite3_column_text(st, col);
    return s ? json_safe(s) : fallback;
}

/* Addresses and stream handles as hex strings: JSON readers in JavaScript lose integers
 * above 2^53, which pointers routinely are. */
static json_t *hex_or_null(sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return json_null();
    char buf[32];
    snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)sqlite3_column_int64(st, col));
    return json_string(buf);
}

static json_t *text_or_null(sqlite3_stmt *st, int col)
{
    const char *s = column_text_or(st, col, NULL);
    return s ? json_string(s) : json_null();
}

static json_t *int_or_null(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? json_null() : json_integer(sqlite3_column_int64(st, col));
}

/* ---- trace-wide facts ---- */

static int read_bounds(struct export_ctx *x)
{
    static const char sql[] =
        "SELECT MIN(lo), MAX(hi) FROM ("
        " SELECT MIN(first_ns) AS lo, MAX(last_ns) AS hi FROM threads"
        " UNION ALL SELECT MIN(start_ns), MAX(COALESCE(end_ns, start_ns)) FROM ranges"
        " UNION ALL SELECT MIN(start_ns), MAX(COALESCE(end_ns, start_ns)) FROM runs"
        " UNION ALL SELECT MIN(alloc_ns), MAX(MAX(alloc_ns, COALESCE(free_ns, alloc_ns))) FROM allocations"
        " UNION ALL SELECT MIN(ns), MAX(ns) FROM launches"
        " UNION ALL SELECT MIN(ns), MAX(ns) FROM declarations)";
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sql_prepare(x, sql, &st) != 0)
        goto done;
    int step = sqlite3_step(st);
    if (step != SQLITE_ROW) {
        sql_done(x, step);
        goto done;
    }
    x->t0_ns = sqlite3_column_int64(st, 0); /* NULL (empty trace) reads as 0 */
    x->t1_ns = sqlite3_column_int64(st, 1);
    rc = 0;
done:
    sqlite3_finalize(st);
    return rc;
}

/* meta(key) as text into buf; returns 1 when present, 0 when absent, -1 on error. */
static int read_meta(struct export_ctx *x, const char *key, char *buf, size_t len)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sql_prepare(x, "SELECT value FROM meta WHERE key = ?1 AND value IS NOT NULL", &st) != 0)
        goto done;
    if (sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC) != SQLITE_OK) {
        snprintf(x->err, sizeof x->err, "cannot read the trace: %s", sqlite3_errmsg(x->db));
        goto done;
    }
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        snprintf(buf, len, "%s", column_text_or(st, 0, ""));
        rc = 1;
    } else {
        rc = sql_done(x, step) == 0 ? 0 : -1;
    }
done:
    sqlite3_finalize(st);
    return rc;
}

static int emit_process(struct export_ctx *x)
{
    char name[1024], pid[64];
    int has_pid = read_meta(x, "pid", pid, sizeof pid);
    int has_name = has_pid < 0 ? -1 : read_meta(x, "command_line", name, sizeof name);
    if (has_name < 0)
        return -1;
    char *end = NULL;
    x->pid = has_pid ? strtoll(pid, &end, 10) : 1;
    if (has_pid && (end == pid || *end != '\0'))
        x->pid = 1; /* an unreadable pid only loses the label, not the export */
    return emit(x, json_pack("{s:s, s:s, s:I, s:i, s:{s:s}}", "name", "process_name", "ph", "M", "pid",
                             (json_int_t)x->pid, "tid", 0, "args", "name", has_name ? name : "traced process"));
}

static int emit_threads(struct export_ctx *x)
{
    sqlite3_stmt *st = NULL;
    int rc = -1, step;
    if (sql_prepare(x,
                    "SELECT t.id, t.os_tid, s.value FROM threads t LEFT JOIN strings s ON s.id = t.name_id"
                    " ORDER BY t.id",
                    &st) != 0)
        goto done;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        char fallback[64];
        snprintf(fallback, sizeof fallback, "thread %lld", (long long)sqlite3_column_int64(st, 1));
        json_t *ev = json_pack("{s:s, s:s, s:I, s:I, s:{s:s, s:I}}", "name", "thread_name", "ph", "M", "pid",
                               (json_int_t)x->pid, "tid", (json_int_t)sqlite3_column_int64(st, 0), "args", "name",
                               column_text_or(st, 2, fallback), "os_tid", (json_int_t)sqlite3_column_int64(st, 1));
        if (emit(x, ev) != 0)
            goto done;
    }
    rc = sql_done(x, step);
done:
    sqlite3_finalize(st);
    return rc;
}

/* ---- node ranges ---- */

enum { R_ID, R_THREAD, R_END_THREAD, R_NAME, R_KIND, R_SOURCE, R_DEPTH, R_RUN, R_START, R_END };

static json_t *range_args(sqlite3_stmt *st)
{
    json_t *args = json_pack("{s:o, s:I, s:s}", "run", int_or_null(st, R_RUN), "depth",
                             (json_int_t)sqlite3_column_int64(st, R_DEPTH), "source", column_text_or(st, R_SOURCE, ""));
    if (args && sqlite3_column_type(st, R_END) == SQLITE_NULL)
        json_object_set_new(args, "unclosed", json_true());
    return args;
}

/* Push ranges nest on their thread: complete events.  Start/end ranges may overlap and end on
 * another thread, which complete events cannot express: async begin/end pairs keyed by id. */
static int emit_range(struct export_ctx *x, sqlite3_stmt *st)
{
    long long start = sqlite3_column_int64(st, R_START);
    long long end = sqlite3_column_type(st, R_END) == SQLITE_NULL ? x->t1_ns : sqlite3_column_int64(st, R_END);
    if (end < start)
        end = start;
    const char *name = column_text_or(st, R_NAME, "(unnamed range)");
    json_int_t tid = sqlite3_column_int64(st, R_THREAD);
    if (strcmp(column_text_or(st, R_KIND, "push"), "startend") != 0)
        return emit(x, json_pack("{s:s, s:s, s:s, s:f, s:f, s:I, s:I, s:o}", "name", name, "cat", "node", "ph", "X",
                                 "ts", rel_us(x, start), "dur", (double)(end - start) / 1000.0, "pid",
                                 (json_int_t)x->pid, "tid", tid, "args", range_args(st)));
    json_int_t id = sqlite3_column_int64(st, R_ID);
    json_int_t end_tid =
        sqlite3_column_type(st, R_END_THREAD) == SQLITE_NULL ? tid : (json_int_t)sqlite3_column_int64(st, R_END_THREAD);
    if (emit(x, json_pack("{s:s, s:s, s:s, s:I, s:f, s:I, s:I, s:o}", "name", name, "cat", "range", "ph", "b", "id", id,
                          "ts", rel_us(x, start), "pid", (json_int_t)x->pid, "tid", tid, "args", range_args(st))) != 0)
        return -1;
    return emit(x, json_pack("{s:s, s:s, s:s, s:I, s:f, s:I, s:I}", "name", name, "cat", "range", "ph", "e", "id", id,
                             "ts", rel_us(x, end), "pid", (json_int_t)x->pid, "tid", end_tid));
}

static int emit_ranges(struct export_ctx *x)
{
    sqlite3_stmt *st = NULL;
    int rc = -1, step;
    if (sql_prepare(x,
                    "SELECT r.id, r.thread_id, r.end_thread_id, s.value, r.kind, r.source, r.depth, r.run_id,"
                    " r.start_ns, r.end_ns FROM ranges r LEFT JOIN strings s ON s.id = r.name_id ORDER BY r.id",
                    &st) != 0)
        goto done;
    while ((step = sqlite3_step(st)) == SQLITE_ROW)
        if (emit_range(x, st) != 0)
            goto done;
    rc = sql_done(x, step);
done:
    sqlite3_finalize(st);
    return rc;
}

/* ---- kernel launches ---- */

enum { L_NS, L_THREAD, L_KERNEL, L_API, L_GX, L_GY, L_GZ, L_BX, L_BY, L_BZ, L_SHARED, L_STREAM, L_STATUS, L_NODE };

static int emit_launch(struct export_ctx *x, sqlite3_stmt *st)
{
    json_t *args = json_pack(
        "{s:[I,I,I], s:[I,I,I], s:I, s:o, s:o, s:s, s:I}", "grid", (json_int_t)sqlite3_column_int64(st, L_GX),
        (json_int_t)sqlite3_column_int64(st, L_GY), (json_int_t)sqlite3_column_int64(st, L_GZ), "block",
        (json_int_t)sqlite3_column_int64(st, L_BX), (json_int_t)sqlite3_column_int64(st, L_BY),
        (json_int_t)sqlite3_column_int64(st, L_BZ), "shared_bytes", (json_int_t)sqlite3_column_int64(st, L_SHARED),
        "stream", hex_or_null(st, L_STREAM), "node", text_or_null(st, L_NODE), "api", column_text_or(st, L_API, ""),
        "status", (json_int_t)sqlite3_column_int64(st, L_STATUS));
    return emit(x, json_pack("{s:s, s:s, s:s, s:s, s:f, s:I, s:I, s:o}", "name",
                             column_text_or(st, L_KERNEL, column_text_or(st, L_API, "kernel")), "cat", "launch", "ph",
                             "i", "s", "t", "ts", rel_us(x, sqlite3_column_int64(st, L_NS)), "pid", (json_int_t)x->pid,
                             "tid", (json_int_t)sqlite3_column_int64(st, L_THREAD), "args", args));
}

static int emit_launches(struct export_ctx *x)
{
    sqlite3_stmt *st = NULL;
    int rc = -1, step;
    if (sql_prepare(x,
                    "SELECT l.ns, l.thread_id, k.value, l.api, l.grid_x, l.grid_y, l.grid_z, l.block_x,"
                    " l.block_y, l.block_z, l.shared_bytes, l.stream, l.status, n.value"
                    " FROM launches l LEFT JOIN strings k ON k.id = l.kernel_name_id"
                    " LEFT JOIN ranges r ON r.id = l.range_id LEFT JOIN strings n ON n.id = r.name_id"
                    " ORDER BY l.id",
                    &st) != 0)
        goto done;
    while ((step = sqlite3_step(st)) == SQLITE_ROW)
        if (emit_launch(x, st) != 0)
            goto done;
    rc = sql_done(x, step);
done:
    sqlite3_finalize(st);
    return rc;
}

/* ---- allocations and frees ---- */

enum {
    A_API,
    A_MEMORY,
    A_DEVICE,
    A_ADDRESS,
    A_REQUESTED,
    A_BYTES,
    A_STATUS,
    A_THREAD,
    A_NS,
    A_FREE_NS,
    A_FREE_API,
    A_FREE_THREAD,
    A_NODE,
    A_FREE_NODE
};

static int emit_allocation(struct export_ctx *x, sqlite3_stmt *st)
{
    json_int_t bytes = sqlite3_column_int64(st, A_BYTES), device = sqlite3_column_int64(st, A_DEVICE);
    const char *memory = column_text_or(st, A_MEMORY, "");
    json_t *args = json_pack("{s:I, s:I, s:s, s:I, s:o, s:o, s:I}", "bytes", bytes, "requested_bytes",
                             (json_int_t)sqlite3_column_int64(st, A_REQUESTED), "memory", memory, "device", device,
                             "address", hex_or_null(st, A_ADDRESS), "node", text_or_null(st, A_NODE), "status",
                             (json_int_t)sqlite3_column_int64(st, A_STATUS));
    if (emit(x, json_pack("{s:s, s:s, s:s, s:s, s:f, s:I, s:I, s:o}", "name", column_text_or(st, A_API, "alloc"), "cat",
                          "memory", "ph", "i", "s", "t", "ts", rel_us(x, sqlite3_column_int64(st, A_NS)), "pid",
                          (json_int_t)x->pid, "tid", (json_int_t)sqlite3_column_int64(st, A_THREAD), "args", args)) !=
        0)
        return -1;
    if (sqlite3_column_type(st, A_FREE_NS) == SQLITE_NULL)
        return 0;
    args = json_pack("{s:I, s:s, s:I, s:o, s:o}", "bytes", bytes, "memory", memory, "device", device, "address",
                     hex_or_null(st, A_ADDRESS), "node", text_or_null(st, A_FREE_NODE));
    return emit(x, json_pack("{s:s, s:s, s:s, s:s, s:f, s:I, s:I, s:o}", "name", column_text_or(st, A_FREE_API, "free"),
                             "cat", "memory", "ph", "i", "s", "t", "ts", rel_us(x, sqlite3_column_int64(st, A_FREE_NS)),
                             "pid", (json_int_t)x->pid, "tid", (json_int_t)sqlite3_column_int64(st, A_FREE_THREAD),
                             "args", args));
}

static int emit_allocations(struct export_ctx *x)
{
    sqlite3_stmt *st = NULL;
    int rc = -1, step;
    if (sql_prepare(x,
                    "SELECT a.api, a.memory, a.device, a.address, a.requested_bytes, a.bytes, a.status,"
                    " a.thread_id, a.alloc_ns, a.free_ns, a.free_api, COALESCE(a.free_thread_id, a.thread_id),"
                    " na.value, nf.value FROM allocations a"
                    " LEFT JOIN ranges ra ON ra.id = a.range_id LEFT JOIN strings na ON na.id = ra.name_id"
                    " LEFT JOIN ranges rf ON rf.id = a.free_range_id LEFT JOIN strings nf ON nf.id = rf.name_id"
                    " ORDER BY a.id",
                    &st) != 0)
        goto done;
    while ((step = sqlite3_step(st)) == SQLITE_ROW)
        if (emit_allocation(x, st) != 0)
            goto done;
    rc = sql_done(x, step);
done:
    sqlite3_finalize(st);
    return rc;
}

/* ---- live bytes counters ---- */

static int emit_counter(struct export_ctx *x, long long device, long long ns, long long live)
{
    char name[64];
    snprintf(name, sizeof name, "live device bytes (device %lld)", device);
    return emit(x, json_pack("{s:s, s:s, s:s, s:f, s:I, s:I, s:{s:I}}", "name", name, "cat", "memory", "ph", "C", "ts",
                             rel_us(x, ns), "pid", (json_int_t)x->pid, "tid", 0, "args", "bytes", (json_int_t)live));
}

/* The same running sum as the live_bytes view, with its order made explicit: each device's
 * track starts at 0 at the trace start and then follows every allocation and free.  The filter
 * of device_allocations is repeated rather than the view used: the view also joins node names,
 * which costs more than the sum itself on large traces. */
static int emit_counters(struct export_ctx *x)
{
    static const char sql[] =
        "WITH da AS (SELECT id, device, bytes, alloc_ns, free_ns FROM allocations"
        "  WHERE status = 0 AND memory IN ('device', 'managed')),"
        " ev AS (SELECT device, alloc_ns AS ns, 0 AS ord, id, bytes AS delta FROM da"
        " UNION ALL SELECT device, free_ns, 1, id, -bytes FROM da WHERE free_ns IS NOT NULL)"
        " SELECT device, ns, SUM(delta) OVER (PARTITION BY device ORDER BY ns, ord, id ROWS UNBOUNDED PRECEDING)"
        " FROM ev ORDER BY device, ns, ord, id";
    sqlite3_stmt *st = NULL;
    int rc = -1, step, have_device = 0;
    long long device = 0;
    if (sql_prepare(x, sql, &st) != 0)
        goto done;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        long long dev = sqlite3_column_int64(st, 0);
        if ((!have_device || dev != device) && emit_counter(x, dev, x->t0_ns, 0) != 0)
            goto done;
        have_device = 1;
        device = dev;
        if (emit_counter(x, dev, sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2)) != 0)
            goto done;
    }
    rc = sql_done(x, step);
done:
    sqlite3_finalize(st);
    return rc;
}

/* ---- the document ---- */

static int write_header(struct export_ctx *x, const char *trace)
{
    json_t *other = json_pack("{s:s, s:s, s:I, s:I}", "generator", "wstrace export", "trace", json_safe(trace),
                              "trace_start_ns", (json_int_t)x->t0_ns, "trace_end_ns", (json_int_t)x->t1_ns);
    int rc = -1;
    if (!other) {
        snprintf(x->err, sizeof x->err, "out of memory");
        return -1;
    }
    if (fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":", x->out) != EOF &&
        json_dumpf(other, x->out, EXPORT_JSON_FLAGS) == 0 && fputs(",\"traceEvents\":[\n", x->out) != EOF)
        rc = 0;
    else
        snprintf(x->err, sizeof x->err, "write failed: %s", strerror(errno));
    json_decref(other);
    return rc;
}

static int write_document(struct export_ctx *x, const char *trace)
{
    if (read_bounds(x) != 0 || write_header(x, trace) != 0 || emit_process(x) != 0 || emit_threads(x) != 0 ||
        emit_ranges(x) != 0 || emit_launches(x) != 0 || (x->with_memory && emit_allocations(x) != 0) ||
        emit_counters(x) != 0)
        return -1;
    if (fputs("\n]}\n", x->out) == EOF) {
        snprintf(x->err, sizeof x->err, "write failed: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- command line ---- */

static void export_usage(FILE *out)
{
    fprintf(out, "usage: wstrace export TRACE --format chrome -o OUT.json [--no-memory-events]\n\n"
                 "Write the trace as Chrome trace-event JSON (open it in https://ui.perfetto.dev):\n"
                 "node ranges per thread, kernel launches, allocations and frees, and one counter\n"
                 "track of live bytes per device.  '-o -' writes to standard output.\n\n"
                 "  -f, --format chrome       output format (only 'chrome')\n"
                 "  -o, --output FILE         where to write (required)\n"
                 "      --no-memory-events    leave out the allocation and free instant events\n"
                 "  -h, --help                this help\n");
}

struct export_opts {
    const char *trace, *output;
    int with_memory;
};

/* Returns -1 to continue, otherwise the exit status. */
static int parse_export_args(int argc, char **argv, struct export_opts *o)
{
    static const struct option longopts[] = {{"format", required_argument, NULL, 'f'},
                                             {"output", required_argument, NULL, 'o'},
                                             {"no-memory-events", no_argument, NULL, 'M'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *format = "chrome";
    int c;
    o->trace = o->output = NULL;
    o->with_memory = 1;
    optind = 0; /* glibc: full re-initialisation, the command may run more than once per process */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': format = optarg; break;
        case 'o': o->output = optarg; break;
        case 'M': o->with_memory = 0; break;
        case 'h': export_usage(stdout); return WS_EXIT_OK;
        case ':': ws_error("export: option '%s' needs a value", argv[optind - 1]); return WS_EXIT_USAGE;
        default:
            ws_error("export: unknown option '%s'; see 'wstrace export --help'", argv[optind - 1]);
            return WS_EXIT_USAGE;
        }
    }
    if (strcmp(format, "chrome") != 0) {
        ws_error("export: unknown format '%s' (supported: chrome)", format);
        return WS_EXIT_USAGE;
    }
    if (optind != argc - 1 || !o->output) {
        ws_error("export: expected one TRACE and -o OUT.json; see 'wstrace export --help'");
        return WS_EXIT_USAGE;
    }
    o->trace = argv[optind];
    return -1;
}

int cmd_export(int argc, char **argv)
{
    struct export_opts opts;
    int status = parse_export_args(argc, argv, &opts);
    if (status >= 0)
        return status;
    struct export_ctx x = {.with_memory = opts.with_memory, .pid = 1};
    struct ws_outfile out = {0};
    status = WS_EXIT_USAGE;
    if (ws_tracedb_open(opts.trace, WS_TRACEDB_READ, &x.db, x.err, sizeof x.err) != 0)
        goto done;
    if (ws_outfile_open(&out, opts.output, x.err, sizeof x.err) != 0)
        goto done;
    x.out = out.fp;
    int ok = write_document(&x, opts.trace) == 0;
    if (!ok) /* name the input: the error came from reading or writing its events */
        snprintf(x.err + strlen(x.err), sizeof x.err - strlen(x.err), " (exporting %s)", opts.trace);
    if (ws_outfile_close(&out, ok, x.err, sizeof x.err) == 0)
        status = WS_EXIT_OK;
done:
    if (status != WS_EXIT_OK)
        ws_error("export: %s", x.err);
    sqlite3_close(x.db);
    free(x.buf);
    return status;
}
