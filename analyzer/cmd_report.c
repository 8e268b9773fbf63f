/*
 * wstrace report --baseline A --candidate B [--format md|json] [--max-regression PCT] [-o FILE]
 *
 * Compares two traces for a CI summary: peak live device bytes, device allocation calls per run,
 * planned-execution fallbacks, plan figures, verification verdicts, workspace and activation bytes
 * per node, and output parity.  The traces are opened read-only; the figures come from the trace
 * tables and from the result tables that the analysis commands wrote (a section without data in
 * either trace says so).  docs/report.md describes every field.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis.h"
#include "cli.h"
#include "commands.h"
#include "import.h"
#include "progress.h"
#include "outfile.h"
#include "output.h"
#include "sizes.h"
#include "tracedb.h"

#define REPORT_TOP_NODES 15

enum { BASE, CAND }; /* index of the two traces everywhere */

struct device_peak {
    long long device, bytes;
};

struct node_bytes { /* from the lifetimes table: max over runs of the per-run sums */
    char *name;
    long long workspace, activation;
};

struct verdict_count {
    char *verdict;
    long long count;
};

struct trace_facts {
    const char *path;
    struct device_peak *devices; /* in device order */
    size_t ndevices;
    long long peak;          /* max over devices */
    long long calls;         /* successful device and managed allocations inside runs (all when no runs) */
    long long calls_outside; /* the same outside every run: set-up such as weights or a plan's buffer */
    long long runs;          /* rows of runs, at least 1 */
    int has_fallbacks;
    long long fallbacks;
    int has_lifetimes;
    struct node_bytes *nodes; /* in name order */
    size_t nnodes;
    int has_verifications;
    struct verdict_count *verdicts;
    size_t nverdicts;
    int has_plans;
    long long plans, planned_peak, load_bound, dynamic_peak; /* maxima over plans */
    char *checksum;                                          /* meta output_checksum, NULL when absent */
};

struct node_change {
    const char *name;
    long long workspace[2], activation[2];
    long long size; /* |delta workspace| + |delta activation|: the sort key */
};

enum parity { PARITY_UNKNOWN, PARITY_IDENTICAL, PARITY_DIFFERENT };

struct regression {
    const char *metric; /* JSON name */
    const char *label;  /* words */
    double baseline, candidate;
};

struct report {
    struct trace_facts t[2];
    struct node_change *changes; /* sorted, largest change first */
    size_t nchanges, nchanged;
    enum parity parity;
    int has_threshold;
    double threshold_pct;
    struct regression regressions[3];
    int nregressions;
};

/* ---- small utilities ---- */

static int grow(void **items, size_t *cap, size_t count, size_t size)
{
    if (count < *cap)
        return 0;
    size_t n = *cap ? *cap * 2 : 16;
    void *p = realloc(*items, n * size);
    if (!p)
        return -1;
    *items = p;
    *cap = n;
    return 0;
}

static double percent_change(double base, double cand) { return (cand - base) / base * 100.0; }

static long long magnitude(long long v) { return ws_sat_abs(v); }

/* ---- reading one trace ---- */

struct reader {
    sqlite3 *db;
    const char *path;
    char *err;
    size_t errlen;
};

static int read_fail(struct reader *r)
{
    snprintf(r->err, r->errlen, "%s: cannot read the trace: %s", r->path, sqlite3_errmsg(r->db));
    return -1;
}

static int read_oom(struct reader *r)
{
    snprintf(r->err, r->errlen, "%s: out of memory", r->path);
    return -1;
}

/* One integer from a query without parameters. */
static int query_int(struct reader *r, const char *sql, long long *value)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW) {
        read_fail(r);
        goto done;
    }
    *value = sqlite3_column_int64(st, 0);
    rc = 0;
done:
    sqlite3_finalize(st);
    return rc;
}

static int table_exists(struct reader *r, const char *name, int *exists)
{
    sqlite3_stmt *st = NULL;
    int rc = -1, step;
    if (sqlite3_prepare_v2(r->db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", -1, &st, NULL) !=
            SQLITE_OK ||
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC) != SQLITE_OK) {
        read_fail(r);
        goto done;
    }
    step = sqlite3_step(st);
    if (step != SQLITE_ROW && step != SQLITE_DONE) {
        read_fail(r);
        goto done;
    }
    *exists = step == SQLITE_ROW;
    rc = 0;
done:
    sqlite3_finalize(st);
    return rc;
}

/* A result table "has data" when it exists (its command ran) and holds at least one row. */
static int table_has_rows(struct reader *r, const char *name, const char *exists_sql, int *has)
{
    long long rows = 0;
    *has = 0;
    if (table_exists(r, name, has) != 0)
        return -1;
    if (*has && query_int(r, exists_sql, &rows) != 0)
        return -1;
    *has = *has && rows > 0;
    return 0;
}

/* meta(key): text copy in *text (NULL when absent). */
static int read_meta(struct reader *r, const char *key, char **text)
{
    sqlite3_stmt *st = NULL;
    int rc = -1, step;
    *text = NULL;
    if (sqlite3_prepare_v2(r->db, "SELECT value FROM meta WHERE key = ?1 AND value IS NOT NULL", -1, &st, NULL) !=
            SQLITE_OK ||
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC) != SQLITE_OK) {
        read_fail(r);
        goto done;
    }
    step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        const char *value = (const char *)sqlite3_column_text(st, 0);
        if (!value || !(*text = strdup(value))) {
            read_oom(r);
            goto done;
        }
    } else if (step != SQLITE_DONE) {
        read_fail(r);
        goto done;
    }
    rc = 0;
done:
    sqlite3_finalize(st);
    return rc;
}

/* MAX(live_bytes) of the live_bytes view per device, with the view's definition inlined: the view
 * also joins node names, which costs more than the running sum itself on large traces. */
static const char peaks_sql[] =
    "WITH da AS (SELECT id, device, bytes, alloc_ns, free_ns FROM allocations"
    "  WHERE status = 0 AND memory IN ('device', 'managed')),"
    " ev AS (SELECT device, alloc_ns AS ns, 0 AS ord, id, bytes AS delta FROM da"
    "  UNION ALL SELECT device, free_ns, 1, id, -bytes FROM da WHERE free_ns IS NOT NULL)"
    " SELECT device, MAX(live) FROM (SELECT device, SUM(delta) OVER (PARTITION BY device ORDER BY ns, ord, id"
    "  ROWS UNBOUNDED PRECEDING) AS live FROM ev) GROUP BY device ORDER BY device";

/* The same for a trace of several processes: live bytes run per process and device (a device's
 * figure is then the largest process's peak on it, never a sum across processes). */
static const char process_peaks_sql[] =
    "WITH da AS (SELECT a.id, COALESCE(t.process_id, 1) AS process, a.device, a.bytes, a.alloc_ns, a.free_ns"
    "  FROM allocations a LEFT JOIN threads t ON t.id = a.thread_id"
    "  WHERE a.status = 0 AND a.memory IN ('device', 'managed')),"
    " ev AS (SELECT process, device, alloc_ns AS ns, 0 AS ord, id, bytes AS delta FROM da"
    "  UNION ALL SELECT process, device, free_ns, 1, id, -bytes FROM da WHERE free_ns IS NOT NULL)"
    " SELECT device, MAX(live) FROM (SELECT device, SUM(delta) OVER (PARTITION BY process, device"
    "  ORDER BY ns, ord, id ROWS UNBOUNDED PRECEDING) AS live FROM ev) GROUP BY device ORDER BY device";

static int read_peaks(struct reader *r, struct trace_facts *f)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc = -1, step;
    const char *sql = ws_tracedb_process_count(r->db) > 1 ? process_peaks_sql : peaks_sql;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK) {
        read_fail(r);
        goto done;
    }
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (grow((void **)&f->devices, &cap, f->ndevices, sizeof *f->devices) != 0) {
            read_oom(r);
            goto done;
        }
        struct device_peak *d = &f->devices[f->ndevices++];
        d->device = sqlite3_column_int64(st, 0);
        d->bytes = sqlite3_column_int64(st, 1);
        if (d->bytes > f->peak)
            f->peak = d->bytes;
    }
    if (step != SQLITE_DONE) {
        read_fail(r);
        goto done;
    }
    rc = 0;
done:
    sqlite3_finalize(st);
    return rc;
}

static int read_fallbacks(struct reader *r, struct trace_facts *f)
{
    char *text = NULL, *end = NULL;
    if (read_meta(r, "plan_fallbacks", &text) != 0)
        return -1;
    if (text) {
        errno = 0;
        f->fallbacks = strtoll(text, &end, 10);
        /* A value that is not a count is as good as none: the section then says so. */
        f->has_fallbacks = end != text && *end == '\0' && errno == 0;
    }
    free(text);
    return 0;
}

static int read_nodes(struct reader *r, struct trace_facts *f)
{
    static const char sql[] = "SELECT s.value, MAX(t.ws), MAX(t.act) FROM ("
                              " SELECT node_name_id,"
                              "  SUM(CASE WHEN class = 'workspace' THEN bytes ELSE 0 END) AS ws,"
                              "  SUM(CASE WHEN class = 'activation' THEN bytes ELSE 0 END) AS act"
                              " FROM lifetimes WHERE node_name_id IS NOT NULL AND class IN ('workspace', 'activation')"
                              " GROUP BY node_name_id, run_id) t"
                              " JOIN strings s ON s.id = t.node_name_id GROUP BY s.value ORDER BY s.value";
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc = -1, step;
    if (table_has_rows(r, "lifetimes", "SELECT EXISTS (SELECT 1 FROM lifetimes)", &f->has_lifetimes) != 0)
        return -1;
    if (!f->has_lifetimes)
        return 0;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK) {
        read_fail(r);
        goto done;
    }
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (grow((void **)&f->nodes, &cap, f->nnodes, sizeof *f->nodes) != 0) {
            read_oom(r);
            goto done;
        }
        struct node_bytes *n = &f->nodes[f->nnodes];
        const char *name = (const char *)sqlite3_column_text(st, 0);
        if (!(n->name = strdup(name ? name : ""))) {
            read_oom(r);
            goto done;
        }
        n->workspace = sqlite3_column_int64(st, 1);
        n->activation = sqlite3_column_int64(st, 2);
        f->nnodes++;
    }
    if (step != SQLITE_DONE) {
        read_fail(r);
        goto done;
    }
    rc = 0;
done:
    sqlite3_finalize(st);
    return rc;
}

static int read_verdicts(struct reader *r, struct trace_facts *f)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc = -1, step;
    if (table_has_rows(r, "verifications", "SELECT EXISTS (SELECT 1 FROM verifications)", &f->has_verifications) != 0)
        return -1;
    if (!f->has_verifications)
        return 0;
    if (sqlite3_prepare_v2(r->db, "SELECT verdict, COUNT(*) FROM verifications GROUP BY verdict ORDER BY verdict", -1,
                           &st, NULL) != SQLITE_OK) {
        read_fail(r);
        goto done;
    }
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (grow((void **)&f->verdicts, &cap, f->nverdicts, sizeof *f->verdicts) != 0) {
            read_oom(r);
            goto done;
        }
        struct verdict_count *v = &f->verdicts[f->nverdicts];
        const char *verdict = (const char *)sqlite3_column_text(st, 0);
        if (!(v->verdict = strdup(verdict ? verdict : ""))) {
            read_oom(r);
            goto done;
        }
        v->count = sqlite3_column_int64(st, 1);
        f->nverdicts++;
    }
    if (step != SQLITE_DONE) {
        read_fail(r);
        goto done;
    }
    rc = 0;
done:
    sqlite3_finalize(st);
    return rc;
}

static int read_plans(struct reader *r, struct trace_facts *f)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (table_has_rows(r, "plans", "SELECT EXISTS (SELECT 1 FROM plans)", &f->has_plans) != 0)
        return -1;
    if (!f->has_plans)
        return 0;
    if (sqlite3_prepare_v2(r->db,
                           "SELECT COUNT(*), MAX(planned_peak_bytes), MAX(load_bound_bytes), MAX(dynamic_peak_bytes)"
                           " FROM plans",
                           -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        read_fail(r);
        goto done;
    }
    f->plans = sqlite3_column_int64(st, 0);
    f->planned_peak = sqlite3_column_int64(st, 1);
    f->load_bound = sqlite3_column_int64(st, 2);
    f->dynamic_peak = sqlite3_column_int64(st, 3);
    rc = 0;
done:
    sqlite3_finalize(st);
    return rc;
}

/* Rows of the device_allocations view, counted without its name join: inside runs (every row when
 * the trace has no runs) and outside them.  Per-run figures compare what each run asks of the
 * allocator; set-up outside the runs is shown apart. */
static const char calls_sql[] = "SELECT COUNT(*) FROM allocations WHERE status = 0 AND memory IN ('device', 'managed') "
                                "AND (run_id IS NOT NULL OR NOT EXISTS (SELECT 1 FROM runs))";
static const char calls_outside_sql[] =
    "SELECT COUNT(*) FROM allocations WHERE status = 0 AND memory IN ('device', 'managed') "
    "AND run_id IS NULL AND EXISTS (SELECT 1 FROM runs)";

static int read_trace(const char *path, struct trace_facts *f, char *err, size_t errlen)
{
    struct reader r = {.path = path, .err = err, .errlen = errlen};
    int rc = -1;
    f->path = path;
    if (ws_tracedb_open(path, WS_TRACEDB_READ, &r.db, err, errlen) != 0)
        return -1;
    if (read_peaks(&r, f) != 0 || query_int(&r, calls_sql, &f->calls) != 0 ||
        query_int(&r, calls_outside_sql, &f->calls_outside) != 0 ||
        query_int(&r, "SELECT COUNT(*) FROM runs", &f->runs) != 0 || read_fallbacks(&r, f) != 0 ||
        read_nodes(&r, f) != 0 || read_verdicts(&r, f) != 0 || read_plans(&r, f) != 0 ||
        read_meta(&r, "output_checksum", &f->checksum) != 0)
        goto done;
    if (f->runs < 1)
        f->runs = 1; /* a trace without run markers is one run */
    rc = 0;
done:
    sqlite3_close(r.db);
    return rc;
}

static void free_trace(struct trace_facts *f)
{
    for (size_t i = 0; i < f->nnodes; i++)
        free(f->nodes[i].name);
    for (size_t i = 0; i < f->nverdicts; i++)
        free(f->verdicts[i].verdict);
    free(f->nodes);
    free(f->verdicts);
    free(f->devices);
    free(f->checksum);
}

/* ---- comparison ---- */

static double calls_per_run(const struct trace_facts *f) { return (double)f->calls / (double)f->runs; }

static int compare_changes(const void *a, const void *b)
{
    const struct node_change *x = a, *y = b;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Merge the two name-ordered node lists; a node missing from one trace counts as 0 bytes there. */
static int compare_nodes(struct report *rep)
{
    const struct trace_facts *b = &rep->t[BASE], *c = &rep->t[CAND];
    size_t i = 0, j = 0;
    rep->changes = calloc(b->nnodes + c->nnodes + 1, sizeof *rep->changes);
    if (!rep->changes)
        return -1;
    while (i < b->nnodes || j < c->nnodes) {
        int order = i == b->nnodes ? 1 : j == c->nnodes ? -1 : strcmp(b->nodes[i].name, c->nodes[j].name);
        struct node_change *ch = &rep->changes[rep->nchanges++];
        if (order <= 0) {
            ch->name = b->nodes[i].name;
            ch->workspace[BASE] = b->nodes[i].workspace;
            ch->activation[BASE] = b->nodes[i++].activation;
        }
        if (order >= 0) {
            ch->name = c->nodes[j].name;
            ch->workspace[CAND] = c->nodes[j].workspace;
            ch->activation[CAND] = c->nodes[j++].activation;
        }
        ch->size = ws_sat_add(magnitude(ws_sat_sub(ch->workspace[CAND], ch->workspace[BASE])),
                              magnitude(ws_sat_sub(ch->activation[CAND], ch->activation[BASE])));
        rep->nchanged += ch->size != 0;
    }
    qsort(rep->changes, rep->nchanges, sizeof *rep->changes, compare_changes);
    return 0;
}

/* More than pct percent above the baseline; anything above a zero baseline is. */
static int exceeds(double base, double cand, double pct)
{
    if (cand <= base)
        return 0;
    return base <= 0 || percent_change(base, cand) > pct;
}

static void add_regression(struct report *rep, const char *metric, const char *label, double b, double c)
{
    rep->regressions[rep->nregressions++] = (struct regression){metric, label, b, c};
}

static void compare(struct report *rep)
{
    const struct trace_facts *b = &rep->t[BASE], *c = &rep->t[CAND];
    if (b->checksum && c->checksum)
        rep->parity = strcmp(b->checksum, c->checksum) == 0 ? PARITY_IDENTICAL : PARITY_DIFFERENT;
    if (!rep->has_threshold)
        return;
    if (exceeds((double)b->peak, (double)c->peak, rep->threshold_pct))
        add_regression(rep, "peak_live_device_bytes", "peak live device bytes", (double)b->peak, (double)c->peak);
    if (exceeds(calls_per_run(b), calls_per_run(c), rep->threshold_pct))
        add_regression(rep, "allocation_calls_per_run", "device allocation calls per run", calls_per_run(b),
                       calls_per_run(c));
    if (rep->parity == PARITY_DIFFERENT)
        add_regression(rep, "output_parity", "output parity", 0, 0);
}

/* ---- Markdown ---- */

/* "1.5 KiB (1536 B)"; deltas carry a sign on both figures: "+1.5 KiB (+1536 B)", "-512 B". */
static void fmt_bytes(char *buf, size_t len, long long v, int signed_delta)
{
    char human[32];
    const char *sign = v < 0 ? "-" : signed_delta && v > 0 ? "+" : "";
    unsigned long long mag = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    if (mag < 1024)
        snprintf(buf, len, "%s%llu B", sign, mag);
    else
        snprintf(buf, len, "%s%s (%s%llu B)", sign,
                 ws_format_bytes(mag > INT64_MAX ? INT64_MAX : (int64_t)mag, human, sizeof human), sign, mag);
}

static void fmt_percent(char *buf, size_t len, double base, double cand)
{
    if (base == 0)
        snprintf(buf, len, cand == 0 ? "0.0%%" : "n/a");
    else
        snprintf(buf, len, "%+.1f%%", percent_change(base, cand));
}

static void md_bytes_row(FILE *out, const char *label, long long b, long long c)
{
    char sb[64], sc[64], sd[64], sp[32];
    fmt_bytes(sb, sizeof sb, b, 0);
    fmt_bytes(sc, sizeof sc, c, 0);
    fmt_bytes(sd, sizeof sd, ws_sat_sub(c, b), 1);
    fmt_percent(sp, sizeof sp, (double)b, (double)c);
    fprintf(out, "| %s | %s | %s | %s | %s |\n", label, sb, sc, sd, sp);
}

static void md_count_row(FILE *out, const char *label, long long b, long long c)
{
    char sp[32];
    fmt_percent(sp, sizeof sp, (double)b, (double)c);
    fprintf(out, "| %s | %lld | %lld | %+lld | %s |\n", label, b, c, (long long)ws_sat_sub(c, b), sp);
}

static const char md_header[] = "| | Baseline | Candidate | Change | Change % |\n|---|---:|---:|---:|---:|\n";

/* Node names and paths go into code spans (output.h says how odd bytes are shown). */
static void md_code(FILE *out, const char *s) { ws_md_code(out, s); }

static long long device_bytes(const struct trace_facts *f, long long device)
{
    for (size_t i = 0; i < f->ndevices; i++)
        if (f->devices[i].device == device)
            return f->devices[i].bytes;
    return 0;
}

/* Visit the union of the devices of both traces in ascending order. */
static int next_device(const struct report *rep, int have_prev, long long prev, long long *device)
{
    int found = 0;
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < rep->t[k].ndevices; i++) {
            long long d = rep->t[k].devices[i].device;
            if ((!have_prev || d > prev) && (!found || d < *device)) {
                *device = d;
                found = 1;
            }
        }
    return found;
}

static void md_peaks(FILE *out, const struct report *rep)
{
    long long device = 0;
    fprintf(out, "## Peak live device bytes\n\n");
    if (!rep->t[BASE].ndevices && !rep->t[CAND].ndevices) {
        fprintf(out, "No device allocations in either trace.\n\n");
        return;
    }
    fputs(md_header, out);
    md_bytes_row(out, "max over devices", rep->t[BASE].peak, rep->t[CAND].peak);
    for (int have = 0; next_device(rep, have, device, &device); have = 1) {
        char label[48];
        snprintf(label, sizeof label, "device %lld", device);
        md_bytes_row(out, label, device_bytes(&rep->t[BASE], device), device_bytes(&rep->t[CAND], device));
    }
    fputc('\n', out);
}

static void md_calls(FILE *out, const struct report *rep)
{
    const struct trace_facts *b = &rep->t[BASE], *c = &rep->t[CAND];
    char sp[32];
    fmt_percent(sp, sizeof sp, calls_per_run(b), calls_per_run(c));
    fprintf(out, "## Device allocation calls\n\n");
    fputs(md_header, out);
    fprintf(out, "| calls per run | %.2f | %.2f | %+.2f | %s |\n", calls_per_run(b), calls_per_run(c),
            calls_per_run(c) - calls_per_run(b), sp);
    md_count_row(out, "calls in runs", b->calls, c->calls);
    md_count_row(out, "calls outside runs", b->calls_outside, c->calls_outside);
    md_count_row(out, "runs", b->runs, c->runs);
    fputc('\n', out);
}

static void md_fallbacks(FILE *out, const struct report *rep)
{
    const struct trace_facts *b = &rep->t[BASE], *c = &rep->t[CAND];
    fprintf(out, "## Planned-execution fallbacks\n\n");
    if (!b->has_fallbacks && !c->has_fallbacks) {
        fprintf(out, "No fallback count in either trace.\n\n");
        return;
    }
    if (b->has_fallbacks && c->has_fallbacks) {
        fputs(md_header, out);
        md_count_row(out, "fallbacks", b->fallbacks, c->fallbacks);
    } else {
        fprintf(out, "| | Baseline | Candidate |\n|---|---:|---:|\n");
        if (b->has_fallbacks)
            fprintf(out, "| fallbacks | %lld | — |\n", b->fallbacks);
        else
            fprintf(out, "| fallbacks | — | %lld |\n", c->fallbacks);
    }
    fputc('\n', out);
}

static void md_plan_cell(FILE *out, const struct trace_facts *f, long long v)
{
    char s[64];
    fmt_bytes(s, sizeof s, v, 0);
    fprintf(out, " %s |", f->has_plans ? s : "—");
}

static void md_plan_row(FILE *out, const struct report *rep, const char *label, long long b, long long c)
{
    if (rep->t[BASE].has_plans && rep->t[CAND].has_plans) {
        md_bytes_row(out, label, b, c);
        return;
    }
    fprintf(out, "| %s |", label);
    md_plan_cell(out, &rep->t[BASE], b);
    md_plan_cell(out, &rep->t[CAND], c);
    fprintf(out, " | |\n");
}

static void md_ratio_cell(FILE *out, const struct trace_facts *f)
{
    if (f->has_plans && f->load_bound > 0)
        fprintf(out, " %.4f |", (double)f->planned_peak / (double)f->load_bound);
    else
        fprintf(out, " — |");
}

static void md_plan(FILE *out, const struct report *rep)
{
    const struct trace_facts *b = &rep->t[BASE], *c = &rep->t[CAND];
    fprintf(out, "## Plan\n\n");
    if (!b->has_plans && !c->has_plans) {
        fprintf(out, "No plan in either trace.\n\n");
        return;
    }
    fputs(md_header, out);
    md_plan_row(out, rep, "planned peak", b->planned_peak, c->planned_peak);
    md_plan_row(out, rep, "load bound", b->load_bound, c->load_bound);
    md_plan_row(out, rep, "dynamic peak", b->dynamic_peak, c->dynamic_peak);
    fprintf(out, "| planned / load bound |");
    md_ratio_cell(out, b);
    md_ratio_cell(out, c);
    fprintf(out, " | |\n");
    fprintf(out, "| plans |");
    for (int k = 0; k < 2; k++)
        if (rep->t[k].has_plans)
            fprintf(out, " %lld |", rep->t[k].plans);
        else
            fprintf(out, " — |");
    fprintf(out, " | |\n\n");
}

static long long verdict_count(const struct trace_facts *f, const char *verdict)
{
    for (size_t i = 0; i < f->nverdicts; i++)
        if (!strcmp(f->verdicts[i].verdict, verdict))
            return f->verdicts[i].count;
    return 0;
}

static const char *const known_verdicts[] = {"ok",         "over-reservation", "under-declared", "idle-reservation",
                                             "undeclared", "unavailable"};

static int is_known_verdict(const char *v)
{
    for (size_t i = 0; i < sizeof known_verdicts / sizeof known_verdicts[0]; i++)
        if (!strcmp(known_verdicts[i], v))
            return 1;
    return 0;
}

static void md_verdict_row(FILE *out, const struct report *rep, const char *verdict)
{
    const struct trace_facts *b = &rep->t[BASE], *c = &rep->t[CAND];
    long long nb = verdict_count(b, verdict), nc = verdict_count(c, verdict);
    fputs("| ", out);
    ws_md_text(out, verdict);
    fputs(" |", out);
    for (int k = 0; k < 2; k++) {
        if (rep->t[k].has_verifications)
            fprintf(out, " %lld |", k == BASE ? nb : nc);
        else
            fprintf(out, " — |");
    }
    if (b->has_verifications && c->has_verifications)
        fprintf(out, " %+lld |\n", (long long)ws_sat_sub(nc, nb));
    else
        fprintf(out, " |\n");
}

/* Known verdicts in their documented order (those seen in either trace), then any others. */
static void md_verdicts(FILE *out, const struct report *rep)
{
    fprintf(out, "## Verification verdicts\n\n");
    if (!rep->t[BASE].has_verifications && !rep->t[CAND].has_verifications) {
        fprintf(out, "No verification results in either trace.\n\n");
        return;
    }
    fprintf(out, "| Verdict | Baseline | Candidate | Change |\n|---|---:|---:|---:|\n");
    for (size_t i = 0; i < sizeof known_verdicts / sizeof known_verdicts[0]; i++)
        if (verdict_count(&rep->t[BASE], known_verdicts[i]) || verdict_count(&rep->t[CAND], known_verdicts[i]))
            md_verdict_row(out, rep, known_verdicts[i]);
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < rep->t[k].nverdicts; i++) {
            const char *v = rep->t[k].verdicts[i].verdict;
            if (!is_known_verdict(v) && (k == BASE || !verdict_count(&rep->t[BASE], v)))
                md_verdict_row(out, rep, v);
        }
    fputc('\n', out);
}

static void md_node_row(FILE *out, const struct node_change *ch)
{
    char s[6][64];
    fmt_bytes(s[0], sizeof s[0], ch->workspace[BASE], 0);
    fmt_bytes(s[1], sizeof s[1], ch->workspace[CAND], 0);
    fmt_bytes(s[2], sizeof s[2], ch->workspace[CAND] - ch->workspace[BASE], 1);
    fmt_bytes(s[3], sizeof s[3], ch->activation[BASE], 0);
    fmt_bytes(s[4], sizeof s[4], ch->activation[CAND], 0);
    fmt_bytes(s[5], sizeof s[5], ch->activation[CAND] - ch->activation[BASE], 1);
    fprintf(out, "| ");
    md_code(out, ch->name);
    fprintf(out, " | %s | %s | %s | %s | %s | %s |\n", s[0], s[1], s[2], s[3], s[4], s[5]);
}

static void md_nodes(FILE *out, const struct report *rep)
{
    fprintf(out, "## Workspace and activation bytes per node\n\n");
    if (!rep->t[BASE].has_lifetimes && !rep->t[CAND].has_lifetimes) {
        fprintf(out, "No lifetimes in either trace (run 'wstrace lifetimes' on them).\n\n");
        return;
    }
    if (!rep->nchanges) {
        fprintf(out, "No workspace or activation allocations in either trace.\n\n");
        return;
    }
    size_t shown = rep->nchanges < REPORT_TOP_NODES ? rep->nchanges : REPORT_TOP_NODES;
    for (int side = BASE; side <= CAND; side++)
        if (rep->t[side].has_fallbacks) /* a planned execution: blocks are not device allocations */
            fprintf(out,
                    "The %s ran under a static plan: its nodes take blocks of one backing buffer, which are not "
                    "device allocations, so only fallbacks appear as node bytes.\n\n",
                    side == BASE ? "baseline" : "candidate");
    fprintf(out,
            "Largest changes first: %zu of %zu nodes shown, %zu changed. Bytes are per run (maximum over runs).\n\n",
            shown, rep->nchanges, rep->nchanged);
    fprintf(out, "| Node | Workspace baseline | Workspace candidate | Workspace change | Activation baseline | "
                 "Activation candidate | Activation change |\n|---|---:|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < shown; i++)
        md_node_row(out, &rep->changes[i]);
    fputc('\n', out);
}

static void md_parity(FILE *out, const struct report *rep)
{
    const struct trace_facts *b = &rep->t[BASE], *c = &rep->t[CAND];
    fprintf(out, "## Output parity\n\n");
    if (rep->parity == PARITY_IDENTICAL) {
        fprintf(out, "**identical**: both traces carry output checksum ");
        md_code(out, b->checksum);
        fprintf(out, ".\n\n");
    } else if (rep->parity == PARITY_DIFFERENT) {
        fprintf(out, "**DIFFERENT**: baseline output checksum ");
        md_code(out, b->checksum);
        fprintf(out, ", candidate ");
        md_code(out, c->checksum);
        fprintf(out, ".\n\n");
    } else {
        fprintf(out, "%s\n\n",
                !b->checksum && !c->checksum ? "No output checksum in either trace."
                : b->checksum                ? "Unknown: only the baseline carries an output checksum."
                                             : "Unknown: only the candidate carries an output checksum.");
    }
}

static void md_threshold(FILE *out, const struct report *rep)
{
    if (!rep->has_threshold)
        return;
    fprintf(out, "## Threshold\n\n");
    if (!rep->nregressions) {
        fprintf(out, "**passed**: no regression above %g%%.\n", rep->threshold_pct);
        return;
    }
    fprintf(out, "**FAILED** (maximum regression %g%%):\n\n", rep->threshold_pct);
    for (int i = 0; i < rep->nregressions; i++) {
        const struct regression *g = &rep->regressions[i];
        char sp[32];
        fmt_percent(sp, sizeof sp, g->baseline, g->candidate);
        if (!strcmp(g->metric, "output_parity"))
            fprintf(out, "- output parity: DIFFERENT\n");
        else
            fprintf(out, "- %s: %s (%.6g → %.6g)\n", g->label, sp, g->baseline, g->candidate);
    }
}

static void write_markdown(FILE *out, const struct report *rep)
{
    fprintf(out, "# wstrace report\n\n| | Trace |\n|---|---|\n| Baseline | ");
    md_code(out, rep->t[BASE].path);
    fprintf(out, " |\n| Candidate | ");
    md_code(out, rep->t[CAND].path);
    fprintf(out, " |\n\n");
    md_peaks(out, rep);
    md_calls(out, rep);
    md_fallbacks(out, rep);
    md_plan(out, rep);
    md_verdicts(out, rep);
    md_nodes(out, rep);
    md_parity(out, rep);
    md_threshold(out, rep);
}

/* ---- JSON ---- */

/* A JSON string of s: names recorded from a program and file names need not be UTF-8. */
static json_t *json_text(const char *s) { return ws_json_text(s); }

static json_t *json_percent(double base, double cand)
{
    return base == 0 ? (cand == 0 ? json_real(0) : json_null()) : json_real(percent_change(base, cand));
}

static json_t *json_metric(long long b, long long c)
{
    return json_pack("{s:I, s:I, s:I, s:o}", "baseline", (json_int_t)b, "candidate", (json_int_t)c, "delta",
                     (json_int_t)ws_sat_sub(c, b), "percent", json_percent((double)b, (double)c));
}

static json_t *json_peaks(const struct report *rep)
{
    json_t *devices = json_array(), *obj;
    long long device = 0;
    for (int have = 0; devices && next_device(rep, have, device, &device); have = 1) {
        obj = json_metric(device_bytes(&rep->t[BASE], device), device_bytes(&rep->t[CAND], device));
        if (!obj || json_object_set_new(obj, "device", json_integer(device)) != 0 ||
            json_array_append_new(devices, obj) != 0) {
            json_decref(devices);
            return NULL;
        }
    }
    obj = json_metric(rep->t[BASE].peak, rep->t[CAND].peak);
    if (obj && json_object_set_new(obj, "devices", devices) == 0)
        return obj;
    json_decref(obj);
    return NULL;
}

static json_t *json_calls(const struct report *rep)
{
    const struct trace_facts *b = &rep->t[BASE], *c = &rep->t[CAND];
    return json_pack("{s:{s:I, s:I, s:I, s:f}, s:{s:I, s:I, s:I, s:f}, s:f, s:o}", "baseline", "calls",
                     (json_int_t)b->calls, "calls_outside_runs", (json_int_t)b->calls_outside, "runs",
                     (json_int_t)b->runs, "per_run", calls_per_run(b), "candidate", "calls", (json_int_t)c->calls,
                     "calls_outside_runs", (json_int_t)c->calls_outside, "runs", (json_int_t)c->runs, "per_run",
                     calls_per_run(c), "per_run_delta", calls_per_run(c) - calls_per_run(b), "per_run_percent",
                     json_percent(calls_per_run(b), calls_per_run(c)));
}

static json_t *json_fallbacks(const struct report *rep)
{
    const struct trace_facts *b = &rep->t[BASE], *c = &rep->t[CAND];
    if (!b->has_fallbacks && !c->has_fallbacks)
        return json_null();
    if (b->has_fallbacks && c->has_fallbacks)
        return json_metric(b->fallbacks, c->fallbacks);
    return json_pack("{s:o, s:o}", "baseline", b->has_fallbacks ? json_integer(b->fallbacks) : json_null(), "candidate",
                     c->has_fallbacks ? json_integer(c->fallbacks) : json_null());
}

static json_t *json_plan_of(const struct trace_facts *f)
{
    if (!f->has_plans)
        return json_null();
    return json_pack("{s:I, s:I, s:I, s:I, s:o}", "plans", (json_int_t)f->plans, "planned_peak_bytes",
                     (json_int_t)f->planned_peak, "load_bound_bytes", (json_int_t)f->load_bound, "dynamic_peak_bytes",
                     (json_int_t)f->dynamic_peak, "planned_to_load_bound",
                     f->load_bound > 0 ? json_real((double)f->planned_peak / (double)f->load_bound) : json_null());
}

static json_t *json_verdicts_of(const struct trace_facts *f)
{
    if (!f->has_verifications)
        return json_null();
    json_t *obj = json_object();
    for (size_t i = 0; obj && i < f->nverdicts; i++) {
        char key[128]; /* keys must be valid UTF-8 too; verify writes short ASCII words */
        ws_utf8_sanitize(f->verdicts[i].verdict, key, sizeof key);
        if (json_object_set_new(obj, key, json_integer(f->verdicts[i].count)) != 0) {
            json_decref(obj);
            return NULL;
        }
    }
    return obj;
}

static json_t *json_nodes(const struct report *rep)
{
    if (!rep->t[BASE].has_lifetimes && !rep->t[CAND].has_lifetimes)
        return json_null();
    json_t *top = json_array();
    for (size_t i = 0; top && i < rep->nchanges && i < REPORT_TOP_NODES; i++) {
        const struct node_change *ch = &rep->changes[i];
        json_t *row = json_pack("{s:o, s:o, s:o}", "node", json_text(ch->name), "workspace_bytes",
                                json_metric(ch->workspace[BASE], ch->workspace[CAND]), "activation_bytes",
                                json_metric(ch->activation[BASE], ch->activation[CAND]));
        if (json_array_append_new(top, row) != 0) {
            json_decref(top);
            return NULL;
        }
    }
    return json_pack("{s:I, s:I, s:o}", "compared", (json_int_t)rep->nchanges, "changed", (json_int_t)rep->nchanged,
                     "top", top);
}

static json_t *json_parity(const struct report *rep)
{
    const char *result = rep->parity == PARITY_IDENTICAL   ? "identical"
                         : rep->parity == PARITY_DIFFERENT ? "different"
                                                           : NULL;
    return json_pack("{s:s?, s:o, s:o}", "result", result, "baseline_checksum", json_text(rep->t[BASE].checksum),
                     "candidate_checksum", json_text(rep->t[CAND].checksum));
}

static json_t *json_threshold(const struct report *rep)
{
    json_t *list = json_array();
    for (int i = 0; list && i < rep->nregressions; i++) {
        const struct regression *g = &rep->regressions[i];
        json_t *row = !strcmp(g->metric, "output_parity")
                          ? json_pack("{s:s}", "metric", g->metric)
                          : json_pack("{s:s, s:f, s:f, s:o}", "metric", g->metric, "baseline", g->baseline, "candidate",
                                      g->candidate, "percent", json_percent(g->baseline, g->candidate));
        if (json_array_append_new(list, row) != 0) {
            json_decref(list);
            return NULL;
        }
    }
    return json_pack("{s:f, s:b, s:o}", "max_regression_percent", rep->threshold_pct, "passed", rep->nregressions == 0,
                     "regressions", list);
}

static json_t *build_json(const struct report *rep)
{
    json_t *doc =
        json_pack("{s:{s:o}, s:{s:o}, s:o, s:o, s:o, s:{s:o, s:o}, s:{s:o, s:o}, s:o, s:o}", "baseline", "path",
                  json_text(rep->t[BASE].path), "candidate", "path", json_text(rep->t[CAND].path),
                  "peak_live_device_bytes", json_peaks(rep), "allocation_calls", json_calls(rep), "plan_fallbacks",
                  json_fallbacks(rep), "plan", "baseline", json_plan_of(&rep->t[BASE]), "candidate",
                  json_plan_of(&rep->t[CAND]), "verdicts", "baseline", json_verdicts_of(&rep->t[BASE]), "candidate",
                  json_verdicts_of(&rep->t[CAND]), "nodes", json_nodes(rep), "parity", json_parity(rep));
    if (doc && rep->has_threshold && json_object_set_new(doc, "threshold", json_threshold(rep)) != 0) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* ---- output file: temporary name, renamed over the destination when complete ---- */

/* ---- command line ---- */

struct report_opts {
    const char *baseline, *candidate, *output, *ranks;
    int json;
    int has_threshold;
    double threshold_pct;
};

static void report_usage(FILE *out)
{
    fprintf(out, "usage: wstrace report --baseline A --candidate B [--format md|json] [--max-regression PCT]\n"
                 "                      [-o FILE]\n"
                 "       wstrace report --ranks TRACE [--format md|json] [--max-regression PCT] [-o FILE]\n\n"
                 "--ranks compares the processes (ranks) of one trace of several (wstrace merge, record of a\n"
                 "forking program, an imported Nsight report): each one's peak live device bytes against the\n"
                 "largest, allocation calls and launches, and the spread; with --max-regression it exits 1\n"
                 "when the largest peak exceeds the smallest by more than PCT percent.\n\n"
                 "Compare two traces (for example dynamic allocation against planned execution): peak live\n"
                 "device bytes, device allocation calls per run, fallbacks, plan figures, verification verdicts,\n"
                 "workspace and activation bytes per node, and output parity.  The traces are only read.\n\n"
                 "  -b, --baseline TRACE        the reference trace\n"
                 "  -c, --candidate TRACE       the trace compared with it\n"
                 "  -f, --format md|json        Markdown (default) or JSON\n"
                 "  -r, --max-regression PCT    exit 1 when the candidate's peak live device bytes or allocation\n"
                 "                              calls per run exceed the baseline's by more than PCT percent,\n"
                 "                              or when the output parity is DIFFERENT\n"
                 "  -o, --output FILE           write there instead of standard output ('-')\n"
                 "  -q, --quiet                 no progress line on a terminal\n"
                 "  -h, --help                  this help\n");
}

static int parse_pct(const char *text, double *pct)
{
    char *end = NULL;
    errno = 0;
    *pct = strtod(text, &end);
    return end != text && *end == '\0' && errno == 0 && isfinite(*pct) && *pct >= 0 ? 0 : -1;
}

/* Returns -1 to continue, otherwise the exit status. */
static int parse_report_args(int argc, char **argv, struct report_opts *o)
{
    static const struct option longopts[] = {{"baseline", required_argument, NULL, 'b'},
                                             {"candidate", required_argument, NULL, 'c'},
                                             {"format", required_argument, NULL, 'f'},
                                             {"max-regression", required_argument, NULL, 'r'},
                                             {"output", required_argument, NULL, 'o'},
                                             {"ranks", required_argument, NULL, 'R'},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int c;
    memset(o, 0, sizeof *o);
    o->output = "-";
    optind = 0; /* glibc: full re-initialisation, the command may run more than once per process */
    ws_progress_set_quiet(0);
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":b:c:f:r:o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'b': o->baseline = optarg; break;
        case 'c': o->candidate = optarg; break;
        case 'o': o->output = optarg; break;
        case 'R': o->ranks = optarg; break;
        case 'f':
            if (strcmp(optarg, "md") != 0 && strcmp(optarg, "json") != 0) {
                ws_error("report: unknown format '%s' (supported: md, json)", optarg);
                return WS_EXIT_USAGE;
            }
            o->json = !strcmp(optarg, "json");
            break;
        case 'r':
            if (parse_pct(optarg, &o->threshold_pct) != 0) {
                ws_error("report: --max-regression: '%s' is not a percentage (a number >= 0)", optarg);
                return WS_EXIT_USAGE;
            }
            o->has_threshold = 1;
            break;
        case 'q': ws_progress_set_quiet(1); break;
        case 'h': report_usage(stdout); return WS_EXIT_OK;
        case ':': ws_error("report: option '%s' needs a value", argv[optind - 1]); return WS_EXIT_USAGE;
        default:
            ws_error("report: unknown option '%s'; see 'wstrace report --help'", argv[optind - 1]);
            return WS_EXIT_USAGE;
        }
    }
    if (o->ranks && !o->baseline && !o->candidate && optind == argc)
        return -1;
    if (o->ranks) {
        ws_error("report: --ranks takes one trace and no --baseline/--candidate; see 'wstrace report --help'");
        return WS_EXIT_USAGE;
    }
    if (!o->baseline || !o->candidate || optind != argc) {
        ws_error("report: expected --baseline A --candidate B and no other arguments; see 'wstrace report --help'");
        return WS_EXIT_USAGE;
    }
    return -1;
}

static int write_report(const struct report *rep, const struct report_opts *opts, char *err, size_t errlen)
{
    struct ws_outfile out;
    json_t *doc = NULL;
    int ok = 0;
    if (opts->json && !(doc = build_json(rep))) {
        snprintf(err, errlen, "out of memory while building the report");
        return -1;
    }
    if (ws_outfile_open(&out, opts->output, err, errlen) != 0)
        goto done;
    if (doc) {
        ok = json_dumpf(doc, out.fp, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) == 0 && fputc('\n', out.fp) != EOF;
    } else {
        write_markdown(out.fp, rep); /* stream errors surface in out_close through ferror */
        ok = 1;
    }
    if (!ok)
        snprintf(err, errlen, "%s: write failed: %s", opts->output, strerror(errno));
    ok = ws_outfile_close(&out, ok, err, errlen) == 0;
done:
    json_decref(doc);
    return ok ? 0 : -1;
}

/* ---- --ranks: the processes of one trace side by side ---- */

static double spread_pct(const struct ws_processes *p)
{
    int64_t big = p->items[p->largest].peak_bytes, small = p->items[p->smallest].peak_bytes;
    return small > 0 ? (double)(big - small) * 100.0 / (double)small : (big > 0 ? INFINITY : 0.0);
}

static void ranks_markdown(FILE *out, const char *trace, const struct ws_processes *p)
{
    const struct ws_process_facts *big = &p->items[p->largest], *small = &p->items[p->smallest];
    char b[64], d[64], sp[32];
    fprintf(out, "# wstrace report: processes of ");
    md_code(out, trace);
    fprintf(out, "\n\n| process | host | pid | source | peak live device bytes | below the largest | device "
                 "allocation calls | failed | kernel launches |\n|---|---|---:|---|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < p->count; i++) {
        const struct ws_process_facts *f = &p->items[i];
        fmt_bytes(b, sizeof b, f->peak_bytes, 0);
        fmt_bytes(d, sizeof d, ws_sat_sub(f->peak_bytes, big->peak_bytes), 1);
        fputs("| ", out);
        ws_md_text(out, f->label);
        fputs(" | ", out);
        md_code(out, f->host[0] ? f->host : "-");
        if (f->pid == WS_UNKNOWN)
            fputs(" | - | ", out);
        else
            fprintf(out, " | %lld | ", (long long)f->pid);
        ws_md_text(out, f->source);
        fprintf(out, " | %s | %s | %lld | %lld | %lld |\n", b, d, (long long)f->allocation_calls,
                (long long)f->failed_calls, (long long)f->launches);
    }
    fmt_bytes(b, sizeof b, big->peak_bytes, 0);
    fmt_bytes(d, sizeof d, ws_sat_sub(big->peak_bytes, small->peak_bytes), 0);
    fmt_percent(sp, sizeof sp, (double)small->peak_bytes, (double)big->peak_bytes);
    fprintf(out, "\n**Largest**: %s, %s.  **Spread**: %s between %s and %s (%s).\n", big->label, b, d, small->label,
            big->label, sp);
}

static json_t *ranks_json(const char *trace, const struct ws_processes *p)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < p->count; i++) {
        const struct ws_process_facts *f = &p->items[i];
        json_t *row =
            json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:I}", "id", (json_int_t)f->id, "label",
                      json_text(f->label), "rank", f->rank == WS_UNKNOWN ? json_null() : json_integer(f->rank), "pid",
                      f->pid == WS_UNKNOWN ? json_null() : json_integer(f->pid), "host", json_text(f->host), "source",
                      json_text(f->source), "peak_live_device_bytes", (json_int_t)f->peak_bytes,
                      "device_allocation_calls", (json_int_t)f->allocation_calls, "failed_allocation_calls",
                      (json_int_t)f->failed_calls, "kernel_launches", (json_int_t)f->launches);
        if (json_array_append_new(list, row) != 0) {
            json_decref(list);
            return NULL;
        }
    }
    const struct ws_process_facts *big = &p->items[p->largest], *small = &p->items[p->smallest];
    return json_pack("{s:o, s:o, s:o, s:o, s:I, s:o}", "trace", json_text(trace), "processes", list, "largest",
                     json_text(big->label), "smallest", json_text(small->label), "spread_bytes",
                     (json_int_t)(big->peak_bytes - small->peak_bytes), "spread_percent",
                     small->peak_bytes > 0 ? json_real(spread_pct(p)) : json_null());
}

static int report_ranks(const struct report_opts *o)
{
    struct ws_analysis an;
    struct ws_processes p = {0};
    struct ws_outfile out;
    sqlite3 *db = NULL;
    json_t *doc = NULL;
    char err[1024] = "";
    int status = WS_EXIT_USAGE, ok = 0;
    if (ws_analysis_open(o->ranks, 0, &db, &an, err, sizeof err) != 0) {
        ws_error("report: %s", err);
        return WS_EXIT_USAGE;
    }
    if (ws_processes_load(db, &an, &p, err, sizeof err) != 0 || (o->json && !(doc = ranks_json(o->ranks, &p)))) {
        ws_error("report: %s: %s", o->ranks, err[0] ? err : "out of memory");
        goto done;
    }
    if (ws_outfile_open(&out, o->output, err, sizeof err) != 0) {
        ws_error("report: %s", err);
        goto done;
    }
    if (doc)
        ok = json_dumpf(doc, out.fp, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) == 0 && fputc('\n', out.fp) != EOF;
    else {
        ranks_markdown(out.fp, o->ranks, &p);
        ok = 1;
    }
    if (ws_outfile_close(&out, ok, err, sizeof err) != 0) {
        ws_error("report: %s", err);
        goto done;
    }
    status = WS_EXIT_OK;
    if (o->has_threshold && spread_pct(&p) > o->threshold_pct) {
        ws_error("report: the largest process's peak (%s) exceeds the smallest's (%s) by more than %g%%",
                 p.items[p.largest].label, p.items[p.smallest].label, o->threshold_pct);
        status = WS_EXIT_FINDINGS;
    }
done:
    json_decref(doc);
    ws_processes_free(&p);
    ws_analysis_free(&an);
    sqlite3_close(db);
    return status;
}

int cmd_report(int argc, char **argv)
{
    struct report_opts opts;
    struct report rep;
    char err[1024] = "";
    int status = parse_report_args(argc, argv, &opts);
    if (status >= 0)
        return status;
    const char *inputs[] = {opts.baseline, opts.candidate, opts.ranks};
    if (ws_check_not_input("report", opts.output, inputs, 3) != 0)
        return WS_EXIT_USAGE;
    if (opts.ranks)
        return report_ranks(&opts);
    memset(&rep, 0, sizeof rep);
    rep.has_threshold = opts.has_threshold;
    rep.threshold_pct = opts.threshold_pct;
    status = WS_EXIT_USAGE;
    if (read_trace(opts.baseline, &rep.t[BASE], err, sizeof err) != 0 ||
        read_trace(opts.candidate, &rep.t[CAND], err, sizeof err) != 0)
        goto done;
    if (compare_nodes(&rep) != 0) {
        snprintf(err, sizeof err, "out of memory");
        goto done;
    }
    compare(&rep);
    if (write_report(&rep, &opts, err, sizeof err) != 0)
        goto done;
    status = rep.nregressions ? WS_EXIT_FINDINGS : WS_EXIT_OK;
    for (int i = 0; i < rep.nregressions; i++) {
        const struct regression *g = &rep.regressions[i];
        if (!strcmp(g->metric, "output_parity"))
            ws_error("report: regression: output parity is DIFFERENT");
        else
            ws_error("report: regression: %s %.6g -> %.6g (more than %g%% above the baseline)", g->label, g->baseline,
                     g->candidate, rep.threshold_pct);
    }
done:
    if (status == WS_EXIT_USAGE)
        ws_error("report: %s", err);
    free(rep.changes);
    free_trace(&rep.t[BASE]);
    free_trace(&rep.t[CAND]);
    return status;
}
