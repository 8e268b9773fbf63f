/*
 * Chrome trace-event JSON from a trace.  Each table is read by one cursor ordered by time; a
 * merge takes the earliest event of all cursors next, so the document is sorted by time (and
 * every track within it).  Events are written one at a time (one small json_t each), so memory
 * stays flat on traces of millions of events.
 */
#include "chrome_export.h"

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "outfile.h"
#include "progress.h"

/* Relative microseconds with nanosecond resolution need about 13 significant digits; 15 keeps
 * them exact without the noise digits that the default 17 would print. */
#define EXPORT_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

struct device_live { /* live bytes run per process and device (the live_bytes view) */
    long long process, device, live, by_class[WS_CLASS_COUNT];
};

struct stream_track {
    long long process, stream;
    int known; /* 0: the launch recorded no stream */
};

struct process { /* processes.id (1 in a trace without the table) and its trace-event pid */
    long long id, pid;
    char *name; /* the command line (and rank), whole: sqlite3_mprintf */
    int has_runs;
};

struct thread_of { /* threads.id -> index into processes */
    long long thread;
    size_t process;
};

struct export_ctx {
    sqlite3 *db;
    FILE *out;
    const struct ws_chrome_options *o;
    struct process *procs;
    size_t nprocs;
    struct thread_of *threads; /* by thread id */
    size_t nthreads;
    int has_processes;      /* threads.process_id exists (schema version 2) */
    long long t0_ns, t1_ns; /* trace start (ts 0) and end (where unclosed ranges stop) */
    unsigned long long events;
    char *buf; /* serialised event, reused */
    size_t cap;
    struct ws_analysis an; /* classes of allocations, for the per-class counters */
    int have_classes;
    struct device_live *devices;
    size_t ndevices;
    struct stream_track *streams;
    size_t nstreams;
    struct ws_progress progress;
    char *err;
    size_t errlen;
};

/* ---- helpers ---- */

static double rel_us(const struct export_ctx *x, long long ns) { return (double)(ns - x->t0_ns) / 1000.0; }

static int sql_fail(struct export_ctx *x)
{
    snprintf(x->err, x->errlen, "cannot read the trace: %s", sqlite3_errmsg(x->db));
    return -1;
}

static int sql_prepare(struct export_ctx *x, const char *sql, sqlite3_stmt **st)
{
    return sqlite3_prepare_v2(x->db, sql, -1, st, NULL) == SQLITE_OK ? 0 : sql_fail(x);
}

/* Write one event (and drop the reference to it); events are separated by ",\n".  The event is
 * serialised into a reusable buffer and written with one fwrite: json_dumpf would issue one
 * locked fwrite per token, which dominates the time of a large export. */
static int emit(struct export_ctx *x, json_t *event)
{
    int rc = -1;
    if (!event) {
        snprintf(x->err, x->errlen, "out of memory while building an event");
        return -1;
    }
    size_t need = json_dumpb(event, x->buf, x->cap, EXPORT_JSON_FLAGS);
    if (need > x->cap) {
        char *bigger = realloc(x->buf, need * 2);
        if (!bigger) {
            snprintf(x->err, x->errlen, "out of memory while writing an event");
            goto done;
        }
        x->buf = bigger;
        x->cap = need * 2;
        need = json_dumpb(event, x->buf, x->cap, EXPORT_JSON_FLAGS);
    }
    if (need == 0) {
        snprintf(x->err, x->errlen, "cannot serialise an event");
        goto done;
    }
    if ((x->events > 0 && fputs(",\n", x->out) == EOF) || fwrite(x->buf, 1, need, x->out) != need) {
        snprintf(x->err, x->errlen, "write failed: %s", strerror(errno));
        goto done;
    }
    x->events++;
    ws_progress_update(&x->progress, x->events);
    rc = 0;
done:
    json_decref(event);
    return rc;
}

/* Jansson refuses strings that are not valid UTF-8, and names recorded from a program need not
 * be: such a name is passed on with its invalid bytes replaced, whole (each invalid byte becomes
 * the three bytes of U+FFFD), from a ring of buffers grown to fit, enough for all the strings of
 * one event.  json_safe_release gives the ring back at the end of an export. */
static struct {
    char *buf;
    size_t cap;
} safe_ring[8];
static unsigned safe_next;

static const char *json_safe(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = 1;
    while (*p && (n = ws_utf8_sequence(p)) != 0)
        p += n;
    if (n != 0)
        return s;
    size_t need = 3 * strlen(s) + 1, k = safe_next++ % 8;
    if (safe_ring[k].cap < need) {
        char *grown = realloc(safe_ring[k].buf, need);
        if (!grown)
            return "(name not shown: out of memory)";
        safe_ring[k].buf = grown;
        safe_ring[k].cap = need;
    }
    ws_utf8_sanitize(s, safe_ring[k].buf, safe_ring[k].cap);
    return safe_ring[k].buf;
}

static void json_safe_release(void)
{
    for (size_t k = 0; k < 8; k++) {
        free(safe_ring[k].buf);
        safe_ring[k].buf = NULL;
        safe_ring[k].cap = 0;
    }
}

static const char *text_or(sqlite3_stmt *st, int col, const char *fallback)
{
    const char *s = (const char *)sqlite3_column_text(st, col);
    return s ? json_safe(s) : fallback;
}

static long long int_of(sqlite3_stmt *st, int col) { return sqlite3_column_int64(st, col); }
static int is_null(sqlite3_stmt *st, int col) { return sqlite3_column_type(st, col) == SQLITE_NULL; }

/* Addresses and stream handles as hex strings: JSON readers in JavaScript lose integers
 * above 2^53, which pointers routinely are. */
static json_t *hex_or_null(sqlite3_stmt *st, int col)
{
    if (is_null(st, col))
        return json_null();
    char buf[32];
    snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)int_of(st, col));
    return json_string(buf);
}

static json_t *text_or_null(sqlite3_stmt *st, int col)
{
    const char *s = text_or(st, col, NULL);
    return s ? json_string(s) : json_null();
}

static json_t *int_or_null(sqlite3_stmt *st, int col)
{
    return is_null(st, col) ? json_null() : json_integer(int_of(st, col));
}

/* The process of a thread (the first process for a thread the trace does not list). */
static size_t process_of_thread(const struct export_ctx *x, long long thread)
{
    size_t lo = 0, hi = x->nthreads;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->threads[mid].thread < thread)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < x->nthreads && x->threads[lo].thread == thread ? x->threads[lo].process : 0;
}

static long long pid_of_thread(const struct export_ctx *x, long long thread)
{
    return x->procs[process_of_thread(x, thread)].pid;
}

static size_t process_index(const struct export_ctx *x, long long id)
{
    for (size_t i = 0; i < x->nprocs; i++)
        if (x->procs[i].id == id)
            return i;
    return 0;
}

/* An instant event on a track of process pid. */
static json_t *instant_on(struct export_ctx *x, const char *name, const char *cat, long long ns, long long pid,
                          long long tid, json_t *args)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:f, s:I, s:I, s:o}", "name", name, "cat", cat, "ph", "i", "s", "t", "ts",
                     rel_us(x, ns), "pid", (json_int_t)pid, "tid", (json_int_t)tid, "args",
                     args ? args : json_object());
}

/* An instant event on a thread's track. */
static json_t *instant(struct export_ctx *x, const char *name, const char *cat, long long ns, long long tid,
                       json_t *args)
{
    return instant_on(x, name, cat, ns, pid_of_thread(x, tid), tid, args);
}

static json_t *metadata(long long pid, const char *what, long long tid, const char *key, json_t *value)
{
    return json_pack("{s:s, s:s, s:I, s:I, s:{s:o}}", "name", what, "ph", "M", "pid", (json_int_t)pid, "tid",
                     (json_int_t)tid, "args", key, value);
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
        " UNION ALL SELECT MIN(ns), MAX(ns) FROM declarations"
        " UNION ALL SELECT MIN(ns), MAX(ns) FROM marks"
        " UNION ALL SELECT MIN(ns), MAX(ns) FROM api_errors)";
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sql_prepare(x, sql, &st) != 0)
        goto done;
    if (sqlite3_step(st) != SQLITE_ROW) {
        sql_fail(x);
        goto done;
    }
    x->t0_ns = int_of(st, 0); /* NULL (empty trace) reads as 0 */
    x->t1_ns = int_of(st, 1);
    rc = 0;
done:
    sqlite3_finalize(st);
    return rc;
}

/* meta(key) as text, whole, into *value (sqlite3_mprintf; NULL when absent); returns 1 when
 * present, 0 when absent, -1 on error. */
static int read_meta(struct export_ctx *x, const char *key, char **value)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;
    *value = NULL;
    if (sql_prepare(x, "SELECT value FROM meta WHERE key = ?1 AND value IS NOT NULL", &st) != 0)
        goto done;
    if (sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC) != SQLITE_OK) {
        sql_fail(x);
        goto done;
    }
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        if (!(*value = sqlite3_mprintf("%s", text_or(st, 0, "")))) {
            snprintf(x->err, x->errlen, "out of memory");
            goto done;
        }
        rc = 1;
    } else {
        rc = step == SQLITE_DONE ? 0 : sql_fail(x);
    }
done:
    sqlite3_finalize(st);
    return rc;
}

/* Rows of all tables, from their largest rowids (no scan): the total of the progress line. */
static unsigned long long expected_events(struct export_ctx *x)
{
    static const char sql[] = "SELECT COALESCE((SELECT MAX(rowid) FROM ranges), 0)"
                              " + COALESCE((SELECT MAX(rowid) FROM launches), 0)"
                              " + 4 * COALESCE((SELECT MAX(rowid) FROM allocations), 0)";
    sqlite3_stmt *st = NULL;
    unsigned long long n = 0;
    if (sqlite3_prepare_v2(x->db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        n = (unsigned long long)int_of(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* The classes come from the analysis; a trace it cannot classify (nothing allocated, no
 * ranges) has no per-class counters. */
static void load_classes(struct export_ctx *x, const char *trace)
{
    char err[512];
    x->have_classes = ws_analysis_load(x->db, trace, &x->an, err, sizeof err) == 0;
}

static int class_of(const struct export_ctx *x, long long allocation_id)
{
    size_t lo = 0, hi = x->an.nallocs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->an.allocs[mid].allocation_id < allocation_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < x->an.nallocs && x->an.allocs[lo].allocation_id == allocation_id ? x->an.allocs[lo].cls
                                                                                 : WS_CLASS_UNATTRIBUTED;
}

static int read_devices(struct export_ctx *x)
{
    sqlite3_stmt *st = NULL;
    int rc = -1, step;
    if (sql_prepare(
            x,
            x->has_processes
                ? "SELECT DISTINCT COALESCE(t.process_id, 1), a.device FROM allocations a"
                  " LEFT JOIN threads t ON t.id = a.thread_id"
                  " WHERE a.status = 0 AND a.memory IN ('device', 'managed') ORDER BY 1, 2"
                : "SELECT DISTINCT 1, device FROM allocations WHERE status = 0 AND memory IN ('device', 'managed')"
                  " ORDER BY 1, 2",
            &st) != 0)
        goto done;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        struct device_live *d = realloc(x->devices, (x->ndevices + 1) * sizeof *d);
        if (!d) {
            snprintf(x->err, x->errlen, "out of memory");
            goto done;
        }
        x->devices = d;
        memset(&d[x->ndevices], 0, sizeof *d);
        d[x->ndevices].process = int_of(st, 0);
        d[x->ndevices++].device = int_of(st, 1);
    }
    rc = step == SQLITE_DONE ? 0 : sql_fail(x);
done:
    sqlite3_finalize(st);
    return rc;
}

/* Kernel tracks: one per stream that launched, in order of the stream handle (unknown first). */
static int read_streams(struct export_ctx *x)
{
    sqlite3_stmt *st = NULL;
    int rc = -1, step;
    if (sql_prepare(x,
                    x->has_processes ? "SELECT DISTINCT COALESCE(t.process_id, 1), l.stream IS NOT NULL, l.stream"
                                       " FROM launches l LEFT JOIN threads t ON t.id = l.thread_id ORDER BY 1, 2, 3"
                                     : "SELECT DISTINCT 1, stream IS NOT NULL, stream FROM launches ORDER BY 1, 2, 3",
                    &st) != 0)
        goto done;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        struct stream_track *s = realloc(x->streams, (x->nstreams + 1) * sizeof *s);
        if (!s) {
            snprintf(x->err, x->errlen, "out of memory");
            goto done;
        }
        x->streams = s;
        s[x->nstreams++] = (struct stream_track){int_of(st, 0), int_of(st, 2), sqlite3_column_int(st, 1)};
    }
    rc = step == SQLITE_DONE ? 0 : sql_fail(x);
done:
    sqlite3_finalize(st);
    return rc;
}

/* Stream tracks are numbered within their process. */
static long long stream_tid(const struct export_ctx *x, long long process, sqlite3_stmt *st, int col)
{
    int known = !is_null(st, col);
    long long stream = int_of(st, col), k = 0;
    for (size_t i = 0; i < x->nstreams; i++) {
        if (x->streams[i].process != process)
            continue;
        if (x->streams[i].known == known && (!known || x->streams[i].stream == stream))
            return WS_CHROME_STREAM_TID + k;
        k++;
    }
    return WS_CHROME_STREAM_TID; /* not reached: every launch stream was read */
}

/* 1 when every table (or table.column) named in names (space-separated) is in the trace. */
static int tables_exist(struct export_ctx *x, const char *names)
{
    char name[64];
    for (const char *p = names; *p;) {
        size_t n = strcspn(p, " ");
        snprintf(name, sizeof name, "%.*s", (int)n, p);
        char *dot = strchr(name, '.');
        if (dot)
            *dot = '\0';
        sqlite3_stmt *st = NULL;
        int found = sqlite3_prepare_v2(x->db,
                                       dot ? "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2"
                                           : "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
                                       -1, &st, NULL) == SQLITE_OK &&
                    sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT) == SQLITE_OK &&
                    (!dot || sqlite3_bind_text(st, 2, dot + 1, -1, SQLITE_TRANSIENT) == SQLITE_OK) &&
                    sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
        if (!found)
            return 0;
        p += n;
        p += *p == ' ';
    }
    return 1;
}

/* Processes: the processes table (schema version 2) or the one traced process of meta. */
static int read_processes(struct export_ctx *x)
{
    sqlite3_stmt *st = NULL;
    int rc = -1, step, unique = 1;
    if (x->has_processes &&
        tables_exist(x, "processes processes.pid processes.command_line processes.rank processes.host")) {
        if (sql_prepare(x,
                        "SELECT p.id, p.pid, p.command_line, p.rank, p.host,"
                        " (SELECT COUNT(*) FROM processes q WHERE q.pid = p.pid) FROM processes p ORDER BY p.id",
                        &st) != 0)
            return -1;
        while ((step = sqlite3_step(st)) == SQLITE_ROW) {
            struct process *p = realloc(x->procs, (x->nprocs + 1) * sizeof *p);
            if (!p) {
                snprintf(x->err, x->errlen, "out of memory");
                goto done;
            }
            x->procs = p;
            p = &p[x->nprocs++];
            memset(p, 0, sizeof *p);
            p->id = int_of(st, 0);
            p->pid = is_null(st, 1) ? -1 : int_of(st, 1);
            unique &= !is_null(st, 1) && int_of(st, 5) == 1;
            if (is_null(st, 3))
                p->name = sqlite3_mprintf("%s", text_or(st, 2, "traced process"));
            else
                p->name = sqlite3_mprintf("%s (rank %lld%s%s)", text_or(st, 2, "traced process"), int_of(st, 3),
                                          is_null(st, 4) ? "" : " on ", text_or(st, 4, ""));
            if (!p->name) {
                snprintf(x->err, x->errlen, "out of memory");
                goto done;
            }
        }
        if (step != SQLITE_DONE) {
            sql_fail(x);
            goto done;
        }
        /* pids of processes from several machines or clocks may repeat: then the process ids */
        for (size_t i = 0; i < x->nprocs; i++)
            if (!unique)
                x->procs[i].pid = x->procs[i].id;
    }
    if (x->nprocs == 0) {
        char *pid = NULL, *name = NULL;
        int has_pid = read_meta(x, "pid", &pid);
        int has_name = has_pid < 0 ? -1 : read_meta(x, "command_line", &name);
        x->procs = has_name < 0 ? NULL : calloc(1, sizeof *x->procs);
        if (x->procs) {
            x->nprocs = 1;
            x->procs[0].id = 1;
            char *end = NULL;
            x->procs[0].pid = has_pid ? strtoll(pid, &end, 10) : 1;
            if (has_pid && (end == pid || *end != '\0'))
                x->procs[0].pid = 1; /* an unreadable pid only loses the label, not the export */
            x->procs[0].name = sqlite3_mprintf("%s", has_name && *name ? name : "traced process");
        }
        sqlite3_free(pid);
        sqlite3_free(name);
        if (has_name < 0)
            goto done;
        if (!x->procs || !x->procs[0].name) {
            snprintf(x->err, x->errlen, "out of memory");
            goto done;
        }
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sql_prepare(x,
                    x->has_processes ? "SELECT id, COALESCE(process_id, 1) FROM threads ORDER BY id"
                                     : "SELECT id, 1 FROM threads ORDER BY id",
                    &st) != 0)
        goto done;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        struct thread_of *t = realloc(x->threads, (x->nthreads + 1) * sizeof *t);
        if (!t) {
            snprintf(x->err, x->errlen, "out of memory");
            goto done;
        }
        x->threads = t;
        t[x->nthreads++] = (struct thread_of){int_of(st, 0), process_index(x, int_of(st, 1))};
    }
    if (step != SQLITE_DONE) {
        sql_fail(x);
        goto done;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sql_prepare(x, "SELECT DISTINCT thread_id FROM runs", &st) != 0)
        goto done;
    while ((step = sqlite3_step(st)) == SQLITE_ROW)
        x->procs[process_of_thread(x, int_of(st, 0))].has_runs = 1;
    rc = step == SQLITE_DONE ? 0 : sql_fail(x);
done:
    sqlite3_finalize(st);
    return rc;
}

/* ---- metadata: names and order of the process and its tracks ---- */

static int emit_names(struct export_ctx *x)
{
    for (size_t i = 0; i < x->nprocs; i++)
        if (emit(x, metadata(x->procs[i].pid, "process_name", 0, "name", json_string(json_safe(x->procs[i].name)))) !=
                0 ||
            (x->nprocs > 1 &&
             emit(x, metadata(x->procs[i].pid, "process_sort_index", 0, "sort_index", json_integer(x->procs[i].id)))))
            return -1;
    sqlite3_stmt *st = NULL;
    int rc = -1, step;
    if (sql_prepare(x,
                    "SELECT t.id, t.os_tid, s.value FROM threads t LEFT JOIN strings s ON s.id = t.name_id"
                    " ORDER BY t.id",
                    &st) != 0)
        goto done;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        char fallback[64];
        long long pid = pid_of_thread(x, int_of(st, 0));
        snprintf(fallback, sizeof fallback, "thread %lld", int_of(st, 1));
        json_t *ev = json_pack("{s:s, s:s, s:I, s:I, s:{s:s, s:I}}", "name", "thread_name", "ph", "M", "pid",
                               (json_int_t)pid, "tid", (json_int_t)int_of(st, 0), "args", "name",
                               text_or(st, 2, fallback), "os_tid", (json_int_t)int_of(st, 1));
        if (emit(x, ev) != 0 ||
            emit(x, metadata(pid, "thread_sort_index", int_of(st, 0), "sort_index", json_integer(int_of(st, 0)))) != 0)
            goto done;
    }
    if (step != SQLITE_DONE) {
        sql_fail(x);
        goto done;
    }
    /* Runs first, above the threads; kernel streams below them. */
    for (size_t i = 0; i < x->nprocs; i++)
        if (x->procs[i].has_runs &&
            (emit(x, metadata(x->procs[i].pid, "thread_name", WS_CHROME_RUNS_TID, "name", json_string("runs"))) != 0 ||
             emit(x, metadata(x->procs[i].pid, "thread_sort_index", WS_CHROME_RUNS_TID, "sort_index",
                              json_integer(-1))) != 0))
            goto done;
    long long k = 0;
    for (size_t i = 0; i < x->nstreams; i++) {
        char label[64];
        if (i > 0 && x->streams[i].process != x->streams[i - 1].process)
            k = 0;
        if (x->streams[i].known)
            snprintf(label, sizeof label, "stream 0x%llx%s", (unsigned long long)x->streams[i].stream,
                     x->streams[i].stream == 0 ? " (default)" : "");
        else
            snprintf(label, sizeof label, "stream (default, or not recorded)"); /* the trace keeps 0 as NULL */
        long long tid = WS_CHROME_STREAM_TID + k++, pid = x->procs[process_index(x, x->streams[i].process)].pid;
        if (emit(x, metadata(pid, "thread_name", tid, "name", json_string(label))) != 0 ||
            emit(x, metadata(pid, "thread_sort_index", tid, "sort_index", json_integer(tid))) != 0)
            goto done;
    }
    rc = 0;
done:
    sqlite3_finalize(st);
    return rc;
}

/* ---- the cursors: one per kind of event, each ordered by time ---- */

struct cursor;
typedef int (*emit_fn)(struct export_ctx *x, sqlite3_stmt *st);

struct cursor {
    const char *sql;
    int time_col; /* column holding the event's time (ns) */
    emit_fn emit;
    int enabled;
    sqlite3_stmt *st;
    int has_row;
    const char *needs;    /* tables (space-separated) sql reads beyond schema version 1 */
    const char *fallback; /* the query without them (NULL: no such events without them) */
};

/* runs: slices on their own track */
static int emit_run(struct export_ctx *x, sqlite3_stmt *st)
{
    long long start = int_of(st, 3), end = is_null(st, 4) ? x->t1_ns : int_of(st, 4);
    char *name = is_null(st, 1) ? sqlite3_mprintf("run %lld", int_of(st, 0))
                                : sqlite3_mprintf("run %lld: %s", int_of(st, 0), text_or(st, 1, ""));
    if (!name) {
        snprintf(x->err, x->errlen, "out of memory");
        return -1;
    }
    json_t *args = json_pack("{s:I, s:o, s:I}", "run", (json_int_t)int_of(st, 0), "shape_key", text_or_null(st, 1),
                             "thread", (json_int_t)int_of(st, 2));
    if (args && is_null(st, 4))
        json_object_set_new(args, "unclosed", json_true());
    json_t *event =
        json_pack("{s:s, s:s, s:s, s:f, s:f, s:I, s:I, s:o}", "name", name, "cat", "run", "ph", "X", "ts",
                  rel_us(x, start), "dur", (double)(end > start ? end - start : 0) / 1000.0, "pid",
                  (json_int_t)pid_of_thread(x, int_of(st, 2)), "tid", (json_int_t)WS_CHROME_RUNS_TID, "args", args);
    sqlite3_free(name);
    return emit(x, event);
}

enum {
    R_ID,
    R_THREAD,
    R_END_THREAD,
    R_NAME,
    R_KIND,
    R_SOURCE,
    R_DEPTH,
    R_RUN,
    R_START,
    R_END,
    R_DOMAIN,
    R_ATTRIBUTES /* category, category name, colour, payload type, payload (NVTX event attributes) */
};

/* NVTX event attributes, when the range or mark had any: category (its name when it has one),
 * colour as #rrggbb, payload. */
static void add_attributes(json_t *args, sqlite3_stmt *st, int col)
{
    if (!args)
        return;
    if (!is_null(st, col + 1))
        json_object_set_new(args, "category", json_string(text_or(st, col + 1, "")));
    else if (!is_null(st, col))
        json_object_set_new(args, "category", json_integer(int_of(st, col)));
    if (!is_null(st, col + 2)) {
        char colour[16];
        snprintf(colour, sizeof colour, "#%06llx", (unsigned long long)int_of(st, col + 2) & 0xFFFFFFull);
        json_object_set_new(args, "color", json_string(colour));
    }
    if (!is_null(st, col + 3) && !is_null(st, col + 4)) {
        json_object_set_new(args, "payload_type", json_string(text_or(st, col + 3, "")));
        json_object_set_new(args, "payload",
                            sqlite3_column_type(st, col + 4) == SQLITE_FLOAT
                                ? json_real(sqlite3_column_double(st, col + 4))
                                : json_integer(int_of(st, col + 4)));
    }
}

static json_t *range_args(sqlite3_stmt *st)
{
    json_t *args =
        json_pack("{s:o, s:I, s:s, s:o}", "run", int_or_null(st, R_RUN), "depth", (json_int_t)int_of(st, R_DEPTH),
                  "source", text_or(st, R_SOURCE, ""), "domain", text_or_null(st, R_DOMAIN));
    if (args && is_null(st, R_END))
        json_object_set_new(args, "unclosed", json_true());
    add_attributes(args, st, R_ATTRIBUTES);
    return args;
}

/* Push ranges nest on their thread: complete events.  Start/end ranges may overlap and end on
 * another thread, which complete events cannot express: async begin/end pairs keyed by id. */
static int emit_range(struct export_ctx *x, sqlite3_stmt *st)
{
    long long start = int_of(st, R_START);
    long long end = is_null(st, R_END) ? x->t1_ns : int_of(st, R_END);
    if (end < start)
        end = start;
    const char *name = text_or(st, R_NAME, "(unnamed range)");
    json_int_t tid = int_of(st, R_THREAD), pid = pid_of_thread(x, tid);
    if (strcmp(text_or(st, R_KIND, "push"), "startend") != 0)
        return emit(x, json_pack("{s:s, s:s, s:s, s:f, s:f, s:I, s:I, s:o}", "name", name, "cat", "node", "ph", "X",
                                 "ts", rel_us(x, start), "dur", (double)(end - start) / 1000.0, "pid", pid, "tid", tid,
                                 "args", range_args(st)));
    return emit(x, json_pack("{s:s, s:s, s:s, s:I, s:f, s:I, s:I, s:o}", "name", name, "cat", "range", "ph", "b", "id",
                             (json_int_t)int_of(st, R_ID), "ts", rel_us(x, start), "pid", pid, "tid", tid, "args",
                             range_args(st)));
}

static int emit_range_end(struct export_ctx *x, sqlite3_stmt *st)
{
    json_int_t tid = is_null(st, 2) ? (json_int_t)int_of(st, 1) : (json_int_t)int_of(st, 2);
    return emit(x, json_pack("{s:s, s:s, s:s, s:I, s:f, s:I, s:I}", "name", text_or(st, 3, "(unnamed range)"), "cat",
                             "range", "ph", "e", "id", (json_int_t)int_of(st, 0), "ts", rel_us(x, int_of(st, 4)), "pid",
                             (json_int_t)pid_of_thread(x, int_of(st, 1)), "tid", tid));
}

enum { L_NS, L_THREAD, L_KERNEL, L_API, L_GX, L_GY, L_GZ, L_BX, L_BY, L_BZ, L_SHARED, L_STREAM, L_STATUS, L_NODE };

/* Kernels on the track of their stream; the launching thread is in args. */
static int emit_launch(struct export_ctx *x, sqlite3_stmt *st)
{
    json_t *args = json_pack(
        "{s:o, s:o, s:o, s:o, s:o, s:s, s:I, s:I}", "grid",
        json_pack("[o,o,o]", int_or_null(st, L_GX), int_or_null(st, L_GY), int_or_null(st, L_GZ)), "block",
        json_pack("[o,o,o]", int_or_null(st, L_BX), int_or_null(st, L_BY), int_or_null(st, L_BZ)), "shared_bytes",
        int_or_null(st, L_SHARED), "stream", hex_or_null(st, L_STREAM), "node", text_or_null(st, L_NODE), "api",
        text_or(st, L_API, ""), "status", (json_int_t)int_of(st, L_STATUS), "thread", (json_int_t)int_of(st, L_THREAD));
    const char *name = text_or(st, L_KERNEL, text_or(st, L_API, "kernel"));
    const struct process *p = &x->procs[process_of_thread(x, int_of(st, L_THREAD))];
    return emit(x, instant_on(x, name, int_of(st, L_STATUS) ? "kernel,error" : "kernel", int_of(st, L_NS), p->pid,
                              stream_tid(x, p->id, st, L_STREAM), args));
}

enum { A_ID, A_API, A_MEMORY, A_DEVICE, A_ADDRESS, A_REQUESTED, A_BYTES, A_STATUS, A_THREAD, A_NS, A_NODE, A_STREAM };

static int emit_allocation(struct export_ctx *x, sqlite3_stmt *st)
{
    long long status = int_of(st, A_STATUS);
    json_t *args = json_pack(
        "{s:I, s:I, s:I, s:s, s:I, s:o, s:o, s:I, s:o}", "allocation", (json_int_t)int_of(st, A_ID), "bytes",
        (json_int_t)int_of(st, A_BYTES), "requested_bytes", (json_int_t)int_of(st, A_REQUESTED), "memory",
        text_or(st, A_MEMORY, ""), "device", (json_int_t)int_of(st, A_DEVICE), "address", hex_or_null(st, A_ADDRESS),
        "node", text_or_null(st, A_NODE), "status", (json_int_t)status, "stream", hex_or_null(st, A_STREAM));
    if (args && x->have_classes && status == 0)
        json_object_set_new(args, "class", json_string(ws_class_name(class_of(x, int_of(st, A_ID)))));
    return emit(x, instant(x, text_or(st, A_API, "alloc"), status ? "memory,error" : "memory", int_of(st, A_NS),
                           int_of(st, A_THREAD), args));
}

enum { F_ID, F_API, F_MEMORY, F_DEVICE, F_ADDRESS, F_BYTES, F_THREAD, F_NS, F_NODE, F_STREAM };

static int emit_free(struct export_ctx *x, sqlite3_stmt *st)
{
    json_t *args = json_pack("{s:I, s:I, s:s, s:I, s:o, s:o, s:o}", "allocation", (json_int_t)int_of(st, F_ID), "bytes",
                             (json_int_t)int_of(st, F_BYTES), "memory", text_or(st, F_MEMORY, ""), "device",
                             (json_int_t)int_of(st, F_DEVICE), "address", hex_or_null(st, F_ADDRESS), "node",
                             text_or_null(st, F_NODE), "stream", hex_or_null(st, F_STREAM));
    return emit(x, instant(x, text_or(st, F_API, "free"), "memory", int_of(st, F_NS), int_of(st, F_THREAD), args));
}

static int emit_counter_pair(struct export_ctx *x, const struct device_live *d, long long ns)
{
    char name[96];
    json_int_t pid = x->procs[process_index(x, d->process)].pid;
    snprintf(name, sizeof name, "live device bytes (device %lld)", d->device);
    if (emit(x, json_pack("{s:s, s:s, s:s, s:f, s:I, s:I, s:{s:I}}", "name", name, "cat", "memory", "ph", "C", "ts",
                          rel_us(x, ns), "pid", pid, "tid", 0, "args", "bytes", (json_int_t)d->live)))
        return -1;
    if (!x->have_classes)
        return 0;
    json_t *args = json_object();
    for (int c = 0; args && c < WS_CLASS_COUNT; c++)
        json_object_set_new(args, ws_class_name(c), json_integer(d->by_class[c]));
    snprintf(name, sizeof name, "live bytes by class (device %lld)", d->device);
    return emit(x, json_pack("{s:s, s:s, s:s, s:f, s:I, s:I, s:o}", "name", name, "cat", "memory", "ph", "C", "ts",
                             rel_us(x, ns), "pid", pid, "tid", 0, "args", args));
}

/* One counter value after every allocation and free of device and managed memory: the running
 * sum of the live_bytes view, per device and per class. */
static int emit_counter(struct export_ctx *x, sqlite3_stmt *st)
{
    long long device = int_of(st, 1), delta = int_of(st, 3), process = int_of(st, 5);
    struct device_live *d = NULL;
    for (size_t i = 0; i < x->ndevices && !d; i++)
        if (x->devices[i].device == device && x->devices[i].process == process)
            d = &x->devices[i];
    if (!d) {
        snprintf(x->err, x->errlen, "the trace changed while it was exported");
        return -1;
    }
    d->live += delta;
    if (x->have_classes)
        d->by_class[class_of(x, int_of(st, 0))] += delta;
    return emit_counter_pair(x, d, int_of(st, 2));
}

static int emit_mark(struct export_ctx *x, sqlite3_stmt *st)
{
    json_t *args = json_pack("{s:o, s:o}", "domain", text_or_null(st, 2), "node", text_or_null(st, 3));
    add_attributes(args, st, 5);
    return emit(x, instant(x, text_or(st, 1, "(unnamed mark)"), "mark", int_of(st, 4), int_of(st, 0), args));
}

/* NVTX pops and ends that closed nothing */
static int emit_range_error(struct export_ctx *x, sqlite3_stmt *st)
{
    char name[160];
    int is_end = !strcmp(text_or(st, 0, ""), "end");
    if (is_end)
        snprintf(name, sizeof name, "%s of no open range", text_or(st, 1, "end"));
    else
        snprintf(name, sizeof name, "%s without an open range", text_or(st, 1, "pop"));
    json_t *args = json_pack("{s:s, s:s, s:o, s:o, s:o}", "kind", text_or(st, 0, ""), "api", text_or(st, 1, ""),
                             "domain", text_or_null(st, 2), "range", int_or_null(st, 3), "node", text_or_null(st, 6));
    return emit(x, instant(x, name, "error", int_of(st, 5), int_of(st, 4), args));
}

static int emit_declaration(struct export_ctx *x, sqlite3_stmt *st)
{
    long long level = int_of(st, 0);
    const char *node = text_or(st, 1, "?");
    char *name = sqlite3_mprintf("%s workspace %s[%lld]", level == 1 ? "Level-1 estimate" : "Level-2 declaration", node,
                                 int_of(st, 2));
    if (!name) {
        snprintf(x->err, x->errlen, "out of memory");
        return -1;
    }
    json_t *args = json_pack("{s:I, s:s, s:I, s:I, s:I, s:o}", "level", (json_int_t)level, "node", node, "slot",
                             (json_int_t)int_of(st, 2), "bytes", (json_int_t)int_of(st, 3), "alignment",
                             (json_int_t)int_of(st, 4), "run", int_or_null(st, 5));
    json_t *event = instant(x, name, "declaration", int_of(st, 7), int_of(st, 6), args);
    sqlite3_free(name);
    return emit(x, event);
}

static int emit_api_error(struct export_ctx *x, sqlite3_stmt *st)
{
    long long status = int_of(st, 1);
    char name[160];
    if (status)
        snprintf(name, sizeof name, "%s failed (%lld)", text_or(st, 0, "call"), status);
    else
        snprintf(name, sizeof name, "%s of an untracked address", text_or(st, 0, "call"));
    json_t *args = json_pack("{s:s, s:I, s:o, s:o}", "api", text_or(st, 0, ""), "status", (json_int_t)status, "address",
                             hex_or_null(st, 2), "node", text_or_null(st, 5));
    return emit(x, instant(x, name, "error", int_of(st, 4), int_of(st, 3), args));
}

/* Ties at one time: the order of this table (runs before the ranges they hold, a range before
 * the events inside it, counters after the allocation that moved them). */
static struct cursor cursor_table[] = {
    {"SELECT r.id, s.value, r.thread_id, r.start_ns, r.end_ns FROM runs r"
     " LEFT JOIN strings s ON s.id = r.shape_key_id ORDER BY r.start_ns, r.id",
     3, emit_run, 1, NULL, 0, NULL, NULL},
    {"SELECT r.id, r.thread_id, r.end_thread_id, s.value, r.kind, r.source, r.depth, r.run_id, r.start_ns, r.end_ns,"
     " ds.value, ra.category, cs.value, ra.color, ra.payload_type, ra.payload FROM ranges r"
     " LEFT JOIN strings s ON s.id = r.name_id"
     " LEFT JOIN domains d ON d.id = r.domain_id LEFT JOIN strings ds ON ds.id = d.name_id"
     " LEFT JOIN range_attributes ra ON ra.range_id = r.id"
     " LEFT JOIN categories k ON k.domain_id = r.domain_id AND k.category = ra.category"
     " LEFT JOIN strings cs ON cs.id = k.name_id ORDER BY r.start_ns, r.depth, r.id",
     8, emit_range, 1, NULL, 0, "range_attributes categories",
     "SELECT r.id, r.thread_id, r.end_thread_id, s.value, r.kind, r.source, r.depth, r.run_id, r.start_ns, r.end_ns,"
     " ds.value, NULL, NULL, NULL, NULL, NULL FROM ranges r LEFT JOIN strings s ON s.id = r.name_id"
     " LEFT JOIN domains d ON d.id = r.domain_id LEFT JOIN strings ds ON ds.id = d.name_id"
     " ORDER BY r.start_ns, r.depth, r.id"},
    {"SELECT a.id, a.api, a.memory, a.device, a.address, a.requested_bytes, a.bytes, a.status, a.thread_id,"
     " a.alloc_ns, n.value, a.stream FROM allocations a LEFT JOIN ranges r ON r.id = a.range_id"
     " LEFT JOIN strings n ON n.id = r.name_id ORDER BY a.alloc_ns, a.id",
     9, emit_allocation, 1, NULL, 0, NULL, NULL},
    {"SELECT l.ns, l.thread_id, k.value, l.api, l.grid_x, l.grid_y, l.grid_z, l.block_x, l.block_y, l.block_z,"
     " l.shared_bytes, l.stream, l.status, n.value FROM launches l LEFT JOIN strings k ON k.id = l.kernel_name_id"
     " LEFT JOIN ranges r ON r.id = l.range_id LEFT JOIN strings n ON n.id = r.name_id ORDER BY l.ns, l.id",
     0, emit_launch, 1, NULL, 0, NULL, NULL},
    {"SELECT m.thread_id, s.value, ds.value, n.value, m.ns, ma.category, cs.value, ma.color, ma.payload_type,"
     " ma.payload FROM marks m LEFT JOIN strings s ON s.id = m.name_id"
     " LEFT JOIN domains d ON d.id = m.domain_id LEFT JOIN strings ds ON ds.id = d.name_id"
     " LEFT JOIN ranges r ON r.id = m.range_id LEFT JOIN strings n ON n.id = r.name_id"
     " LEFT JOIN mark_attributes ma ON ma.mark_id = m.id"
     " LEFT JOIN categories k ON k.domain_id = m.domain_id AND k.category = ma.category"
     " LEFT JOIN strings cs ON cs.id = k.name_id ORDER BY m.ns, m.id",
     4, emit_mark, 1, NULL, 0, "mark_attributes categories",
     "SELECT m.thread_id, s.value, ds.value, n.value, m.ns, NULL, NULL, NULL, NULL, NULL FROM marks m"
     " LEFT JOIN strings s ON s.id = m.name_id"
     " LEFT JOIN domains d ON d.id = m.domain_id LEFT JOIN strings ds ON ds.id = d.name_id"
     " LEFT JOIN ranges r ON r.id = m.range_id LEFT JOIN strings n ON n.id = r.name_id ORDER BY m.ns, m.id"},
    {"SELECT e.kind, e.api, ds.value, e.range_ref, e.thread_id, e.ns, n.value FROM range_errors e"
     " LEFT JOIN domains d ON d.id = e.domain_id LEFT JOIN strings ds ON ds.id = d.name_id"
     " LEFT JOIN ranges r ON r.id = e.range_id LEFT JOIN strings n ON n.id = r.name_id ORDER BY e.ns, e.id",
     5, emit_range_error, 1, NULL, 0, "range_errors", NULL},
    {"SELECT d.level, s.value, d.slot, d.bytes, d.alignment, d.run_id, d.thread_id, d.ns FROM declarations d"
     " LEFT JOIN strings s ON s.id = d.node_name_id ORDER BY d.ns, d.id",
     7, emit_declaration, 1, NULL, 0, NULL, NULL},
    {"SELECT e.api, e.status, e.address, e.thread_id, e.ns, n.value FROM api_errors e"
     " LEFT JOIN ranges r ON r.id = e.range_id LEFT JOIN strings n ON n.id = r.name_id ORDER BY e.ns, e.id",
     4, emit_api_error, 1, NULL, 0, NULL, NULL},
    {"SELECT a.id, a.free_api, a.memory, a.device, a.address, a.bytes, COALESCE(a.free_thread_id, a.thread_id),"
     " a.free_ns, n.value, a.free_stream FROM allocations a LEFT JOIN ranges r ON r.id = a.free_range_id"
     " LEFT JOIN strings n ON n.id = r.name_id WHERE a.status = 0 AND a.free_ns IS NOT NULL ORDER BY a.free_ns, a.id",
     7, emit_free, 1, NULL, 0, NULL, NULL},
    {"WITH da AS (SELECT a.id, a.device, a.bytes, a.alloc_ns, a.free_ns, COALESCE(t.process_id, 1) AS process"
     "  FROM allocations a LEFT JOIN threads t ON t.id = a.thread_id"
     "  WHERE a.status = 0 AND a.memory IN ('device', 'managed'))"
     " SELECT id, device, alloc_ns AS ns, bytes, 0 AS ord, process FROM da"
     " UNION ALL SELECT id, device, free_ns, -bytes, 1, process FROM da WHERE free_ns IS NOT NULL ORDER BY ns, ord, id",
     2, emit_counter, 1, NULL, 0, "threads.process_id",
     "WITH da AS (SELECT id, device, bytes, alloc_ns, free_ns FROM allocations"
     "  WHERE status = 0 AND memory IN ('device', 'managed'))"
     " SELECT id, device, alloc_ns AS ns, bytes, 0 AS ord, 1 FROM da"
     " UNION ALL SELECT id, device, free_ns, -bytes, 1, 1 FROM da WHERE free_ns IS NOT NULL ORDER BY ns, ord, id"},
    /* start/end ranges close where they end: after every event at that time */
    {"SELECT r.id, r.thread_id, r.end_thread_id, s.value, COALESCE(r.end_ns, ?1) AS t FROM ranges r"
     " LEFT JOIN strings s ON s.id = r.name_id WHERE r.kind = 'startend' ORDER BY t, r.id",
     4, emit_range_end, 1, NULL, 0, NULL, NULL},
};

#define NCURSORS (sizeof cursor_table / sizeof cursor_table[0])

static int cursor_step(struct export_ctx *x, struct cursor *c)
{
    int step = sqlite3_step(c->st);
    c->has_row = step == SQLITE_ROW;
    return step == SQLITE_ROW || step == SQLITE_DONE ? 0 : sql_fail(x);
}

static int merge_events(struct export_ctx *x)
{
    struct cursor cur[NCURSORS];
    int rc = -1;
    memcpy(cur, cursor_table, sizeof cur);
    for (size_t i = 0; i < NCURSORS; i++) {
        cur[i].st = NULL;
        cur[i].enabled = cur[i].emit != emit_allocation && cur[i].emit != emit_free ? 1 : x->o->with_memory;
    }
    for (size_t i = 0; i < NCURSORS; i++) {
        if (!cur[i].enabled)
            continue;
        if (cur[i].needs && !tables_exist(x, cur[i].needs)) { /* a trace of an older schema */
            cur[i].sql = cur[i].fallback;
            cur[i].enabled = cur[i].sql != NULL;
            if (!cur[i].enabled)
                continue;
        }
        if (sql_prepare(x, cur[i].sql, &cur[i].st) != 0)
            goto done;
        if (sqlite3_bind_parameter_count(cur[i].st) > 0)
            sqlite3_bind_int64(cur[i].st, 1, x->t1_ns);
        if (cursor_step(x, &cur[i]) != 0)
            goto done;
    }
    for (;;) {
        struct cursor *next = NULL;
        long long best = 0;
        for (size_t i = 0; i < NCURSORS; i++) {
            if (!cur[i].enabled || !cur[i].has_row)
                continue;
            long long t = int_of(cur[i].st, cur[i].time_col);
            if (!next || t < best) {
                next = &cur[i];
                best = t;
            }
        }
        if (!next)
            break;
        if (next->emit(x, next->st) != 0 || cursor_step(x, next) != 0)
            goto done;
    }
    rc = 0;
done:
    for (size_t i = 0; i < NCURSORS; i++)
        sqlite3_finalize(cur[i].st);
    return rc;
}

/* ---- the document ---- */

static int write_header(struct export_ctx *x, const char *trace)
{
    json_t *other = json_pack("{s:s, s:s, s:I, s:I}", "generator", "wstrace export", "trace", json_safe(trace),
                              "trace_start_ns", (json_int_t)x->t0_ns, "trace_end_ns", (json_int_t)x->t1_ns);
    int rc = -1;
    if (!other) {
        snprintf(x->err, x->errlen, "out of memory");
        return -1;
    }
    if (fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":", x->out) != EOF &&
        json_dumpf(other, x->out, EXPORT_JSON_FLAGS) == 0 && fputs(",\"traceEvents\":[\n", x->out) != EOF)
        rc = 0;
    else
        snprintf(x->err, x->errlen, "write failed: %s", strerror(errno));
    json_decref(other);
    return rc;
}

static int write_document(struct export_ctx *x, const char *trace)
{
    x->has_processes = tables_exist(x, "threads.process_id");
    if (read_bounds(x) != 0 || read_processes(x) != 0 || read_devices(x) != 0 || read_streams(x) != 0 ||
        write_header(x, trace) != 0 || emit_names(x) != 0)
        return -1;
    for (size_t i = 0; i < x->ndevices; i++) /* every counter starts at 0 at the trace start */
        if (emit_counter_pair(x, &x->devices[i], x->t0_ns) != 0)
            return -1;
    if (merge_events(x) != 0)
        return -1;
    if (fputs("\n]}\n", x->out) == EOF) {
        snprintf(x->err, x->errlen, "write failed: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int ws_chrome_export(sqlite3 *db, const char *trace, FILE *out, const struct ws_chrome_options *o, char *err,
                     size_t errlen)
{
    struct export_ctx x = {.db = db, .out = out, .o = o, .err = err, .errlen = errlen};
    load_classes(&x, trace);
    char what[96];
    snprintf(what, sizeof what, "exporting %s", trace);
    ws_progress_begin(&x.progress, what, "events", expected_events(&x));
    int rc = write_document(&x, trace);
    ws_progress_end(&x.progress);
    if (x.have_classes)
        ws_analysis_free(&x.an);
    free(x.devices);
    free(x.streams);
    for (size_t i = 0; i < x.nprocs; i++)
        sqlite3_free(x.procs[i].name);
    free(x.procs);
    free(x.threads);
    free(x.buf);
    json_safe_release();
    return rc;
}
