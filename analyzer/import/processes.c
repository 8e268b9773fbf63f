/*
 * The processes of a trace with their own figures: peak live device bytes (from the analysis,
 * which keeps live bytes per process and device), allocation calls and launches.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "tracedb.h"

static int64_t col_or_unknown(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? WS_UNKNOWN : sqlite3_column_int64(st, i);
}

static char *col_strdup(sqlite3_stmt *st, int i, const char *fallback)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return strdup(t ? (const char *)t : fallback);
}

static struct ws_process_facts *find(struct ws_processes *p, int64_t id)
{
    for (size_t i = 0; i < p->count; i++)
        if (p->items[i].id == id)
            return &p->items[i];
    return NULL;
}

static int add_process(struct ws_processes *p, size_t *cap, int64_t id)
{
    if (p->count == *cap) {
        size_t n = *cap ? *cap * 2 : 16;
        struct ws_process_facts *q = realloc(p->items, n * sizeof *q);
        if (!q)
            return -1;
        p->items = q;
        *cap = n;
    }
    struct ws_process_facts *f = &p->items[p->count++];
    memset(f, 0, sizeof *f);
    f->id = id;
    f->pid = f->rank = f->local_rank = f->lost_records = WS_UNKNOWN;
    return 0;
}

/* counts[k] per process: allocation calls, failed ones, launches. */
static int count_rows(sqlite3 *db, struct ws_processes *p, int has_processes)
{
    static const char *const sql[2][2] = {
        {"SELECT 1, COUNT(*), COALESCE(SUM(status <> 0), 0) FROM allocations WHERE memory IN ('device', 'managed')",
         "SELECT 1, COUNT(*), 0 FROM launches"},
        {"SELECT COALESCE(t.process_id, 1), COUNT(*), COALESCE(SUM(a.status <> 0), 0) FROM allocations a"
         " LEFT JOIN threads t ON t.id = a.thread_id WHERE a.memory IN ('device', 'managed') GROUP BY 1",
         "SELECT COALESCE(t.process_id, 1), COUNT(*), 0 FROM launches l LEFT JOIN threads t ON t.id = l.thread_id"
         " GROUP BY 1"}};
    for (int k = 0; k < 2; k++) {
        sqlite3_stmt *st = NULL;
        int step;
        if (sqlite3_prepare_v2(db, sql[has_processes][k], -1, &st, NULL) != SQLITE_OK)
            return -1;
        while ((step = sqlite3_step(st)) == SQLITE_ROW) {
            struct ws_process_facts *f = find(p, sqlite3_column_int64(st, 0));
            if (!f)
                continue; /* a thread naming a process the table lacks: counted nowhere */
            if (k == 0) {
                f->allocation_calls = sqlite3_column_int64(st, 1);
                f->failed_calls = sqlite3_column_int64(st, 2);
            } else {
                f->launches = sqlite3_column_int64(st, 1);
            }
        }
        sqlite3_finalize(st);
        if (step != SQLITE_DONE)
            return -1;
    }
    return 0;
}

static int label(struct ws_process_facts *f)
{
    char buf[64];
    if (f->rank != WS_UNKNOWN)
        snprintf(buf, sizeof buf, "rank %lld", (long long)f->rank);
    else if (f->pid != WS_UNKNOWN)
        snprintf(buf, sizeof buf, "pid %lld", (long long)f->pid);
    else
        snprintf(buf, sizeof buf, "process %lld", (long long)f->id);
    f->label = strdup(buf);
    return f->label ? 0 : -1;
}

int ws_processes_load(sqlite3 *db, const struct ws_analysis *an, struct ws_processes *out, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc = -1, step;
    int has = ws_tracedb_process_count(db) > 1 ||
              (sqlite3_prepare_v2(db, "SELECT 1 FROM processes", -1, &st, NULL) == SQLITE_OK &&
               sqlite3_step(st) == SQLITE_ROW);
    sqlite3_finalize(st);
    st = NULL;
    memset(out, 0, sizeof *out);
    if (has) {
        if (sqlite3_prepare_v2(db,
                               "SELECT id, pid, rank, local_rank, host, source, lost_records FROM processes"
                               " ORDER BY id",
                               -1, &st, NULL) != SQLITE_OK)
            goto sql;
        while ((step = sqlite3_step(st)) == SQLITE_ROW) {
            if (add_process(out, &cap, sqlite3_column_int64(st, 0)) != 0)
                goto oom;
            struct ws_process_facts *f = &out->items[out->count - 1];
            f->pid = col_or_unknown(st, 1);
            f->rank = col_or_unknown(st, 2);
            f->local_rank = col_or_unknown(st, 3);
            f->lost_records = col_or_unknown(st, 6);
            if (!(f->host = col_strdup(st, 4, "")) || !(f->source = col_strdup(st, 5, "")))
                goto oom;
        }
        if (step != SQLITE_DONE)
            goto sql;
        sqlite3_finalize(st);
        st = NULL;
    }
    if (out->count == 0) { /* schema version 1, or a trace built without the table: one process */
        if (add_process(out, &cap, 1) != 0 || !(out->items[0].host = strdup("")) ||
            !(out->items[0].source = strdup("tracer")))
            goto oom;
    }
    for (size_t i = 0; i < an->ndevices; i++) {
        struct ws_process_facts *f = find(out, an->devices[i].process);
        if (f && an->devices[i].peak > f->peak_bytes)
            f->peak_bytes = an->devices[i].peak;
    }
    if (count_rows(db, out, has && out->count > 1) != 0)
        goto sql;
    for (size_t i = 0; i < out->count; i++) {
        if (label(&out->items[i]) != 0)
            goto oom;
        if (out->items[i].peak_bytes > out->items[out->largest].peak_bytes)
            out->largest = (int32_t)i;
        if (out->items[i].peak_bytes < out->items[out->smallest].peak_bytes)
            out->smallest = (int32_t)i;
    }
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "out of memory");
    goto out;
sql:
    snprintf(err, errlen, "cannot read the processes: %s", sqlite3_errmsg(db));
out:
    sqlite3_finalize(st);
    if (rc != 0)
        ws_processes_free(out);
    return rc;
}

void ws_processes_free(struct ws_processes *p)
{
    for (size_t i = 0; i < p->count; i++) {
        free(p->items[i].host);
        free(p->items[i].source);
        free(p->items[i].label);
    }
    free(p->items);
    memset(p, 0, sizeof *p);
}

void ws_trace_source(sqlite3 *db, char *buf, size_t len)
{
    sqlite3_stmt *st = NULL;
    char sources[256] = "";
    long long n = 0;
    snprintf(buf, len, "tracer");
    if (sqlite3_prepare_v2(db,
                           "SELECT COUNT(*), group_concat(source, ', ') FROM (SELECT DISTINCT source FROM processes"
                           " ORDER BY source)",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0) {
        const unsigned char *t = sqlite3_column_text(st, 1);
        snprintf(sources, sizeof sources, "%s", t ? (const char *)t : "");
        snprintf(buf, len, "%s", sources);
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'merged_traces'", -1, &st, NULL) ==
            SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (n > 0)
        snprintf(buf, len, "merge of %lld traces (%s)", n, sources[0] ? sources : "tracer");
}
