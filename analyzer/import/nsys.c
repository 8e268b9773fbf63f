/*
 * Nsight Systems SQLite export -> trace.  Tables are created lazily by `nsys export`, so the
 * importer reads what the report has, names in one line what it lacks, and refuses a table
 * whose columns it does not know (a newer schema) rather than guess.  Columns are read by
 * name; enums by their names (ENUM_* tables) with the documented values as fall-back.
 * docs/import.md lists every mapping.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "import.h"
#include "tracedb.h"

/* Serialized GlobalId (the exporter's documentation, "Serialized process and thread
 * identifiers"): bits 24-47 hold the pid, 0-23 the tid; a globalPid has tid 0. */
#define GID_PID(g)     (((uint64_t)(g) >> 24) & 0xffffff)
#define GID_TID(g)     ((uint64_t)(g)&0xffffff)
#define GID_PROCESS(g) ((int64_t)((uint64_t)(g) & ~(uint64_t)0xffffff))

enum { NVTX_MARK = 34, NVTX_PUSHPOP = 59, NVTX_STARTEND = 60, NVTX_DOMAIN_CREATE = 75 };

struct thread {
    int64_t gtid, id, process; /* process: index into processes */
    int64_t first, last;
    int64_t *ranges; /* indices of its push ranges, by start */
    size_t nranges, capranges;
    int64_t *stack; /* push ranges open while numbering */
    size_t depth, capstack;
};

struct process {
    int64_t gpid, id, first, last, rank;
};

struct range {
    int64_t id, start, end, thread, end_thread, name, domain, parent, depth;
    int push;
};

struct call { /* a runtime or driver API call, by (process, correlation id) */
    int64_t key_pid, corr, gtid, name, ret, start;
};

struct open_alloc {
    struct ws_alloc_row row;
    int64_t gpid;
    int live;
};

struct nsys {
    sqlite3 *in;
    const char *path;
    struct ws_trace_writer w;
    struct ws_import_stats *st;
    char **strings; /* StringIds by id */
    int64_t nstrings;
    struct thread *threads;
    size_t nthreads, capthreads;
    struct process *procs;
    size_t nprocs, capprocs;
    struct range *ranges;
    size_t nranges, capranges;
    struct call *calls; /* sorted by (key_pid, corr) */
    size_t ncalls, capcalls;
    struct open_alloc *allocs;
    size_t nallocs, capallocs;
    int64_t ev_mark, ev_pushpop, ev_startend, ev_domain;
    int64_t kind_device, kind_managed, kind_pinned, kind_array, kind_device_static, kind_managed_static;
    int64_t op_alloc, op_free;
    int64_t next_alloc, skipped, unmatched_frees, uncorrelated;
    char *err;
    size_t errlen;
};

static int grow(void *pp, size_t *cap, size_t n, size_t elem)
{
    void **p = pp;
    if (n < *cap)
        return 0;
    size_t next = *cap ? *cap * 2 : 64;
    void *q = realloc(*p, next * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = next;
    return 0;
}

static int nfail(struct nsys *x, const char *what)
{
    if (!x->err[0])
        snprintf(x->err, x->errlen, "%s: %s: %s", x->path, what, sqlite3_errmsg(x->in));
    return -1;
}

static int oom(struct nsys *x)
{
    if (!x->err[0])
        snprintf(x->err, x->errlen, "out of memory");
    return -1;
}

static int has_table(struct nsys *x, const char *t)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(x->in, "SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?1", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, t, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

static int has_col(struct nsys *x, const char *t, const char *c) { return ws_tracedb_has_column(x->in, t, c); }

/* A present table must have the columns the importer reads; a missing one means a schema this
 * version does not know, and guessing would put wrong figures in the trace. */
static int require(struct nsys *x, const char *table, const char *const *cols)
{
    for (; *cols; cols++)
        if (!has_col(x, table, *cols)) {
            snprintf(x->err, x->errlen,
                     "%s: %s has no column '%s': an Nsight Systems schema this wstrace does not know (docs/import.md "
                     "lists the columns it reads)",
                     x->path, table, *cols);
            return -1;
        }
    return 0;
}

static const char *string_at(struct nsys *x, int64_t id) { return id >= 0 && id < x->nstrings ? x->strings[id] : NULL; }

static int64_t col_int(sqlite3_stmt *st, int i, int64_t dflt)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? dflt : sqlite3_column_int64(st, i);
}

/* ---- enums ---- */

static int64_t enum_value(struct nsys *x, const char *table, const char *name, int64_t dflt)
{
    sqlite3_stmt *st = NULL;
    int64_t v = dflt;
    char sql[160];
    if (!has_table(x, table) || !has_col(x, table, "id") || !has_col(x, table, "name"))
        return dflt;
    snprintf(sql, sizeof sql, "SELECT id FROM \"%s\" WHERE name = ?1", table);
    if (sqlite3_prepare_v2(x->in, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return v;
}

static void read_enums(struct nsys *x)
{
    x->ev_mark = enum_value(x, "ENUM_NSYS_EVENT_TYPE", "NvtxMark", NVTX_MARK);
    x->ev_pushpop = enum_value(x, "ENUM_NSYS_EVENT_TYPE", "NvtxPushPopRange", NVTX_PUSHPOP);
    x->ev_startend = enum_value(x, "ENUM_NSYS_EVENT_TYPE", "NvtxStartEndRange", NVTX_STARTEND);
    x->ev_domain = enum_value(x, "ENUM_NSYS_EVENT_TYPE", "NvtxDomainCreate", NVTX_DOMAIN_CREATE);
    x->kind_pinned = enum_value(x, "ENUM_CUDA_MEM_KIND", "CUDA_MEMOPR_MEMORY_KIND_PINNED", 1);
    x->kind_device = enum_value(x, "ENUM_CUDA_MEM_KIND", "CUDA_MEMOPR_MEMORY_KIND_DEVICE", 2);
    x->kind_array = enum_value(x, "ENUM_CUDA_MEM_KIND", "CUDA_MEMOPR_MEMORY_KIND_ARRAY", 3);
    x->kind_managed = enum_value(x, "ENUM_CUDA_MEM_KIND", "CUDA_MEMOPR_MEMORY_KIND_MANAGED", 4);
    x->kind_device_static = enum_value(x, "ENUM_CUDA_MEM_KIND", "CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC", 5);
    x->kind_managed_static = enum_value(x, "ENUM_CUDA_MEM_KIND", "CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC", 6);
    x->op_alloc = enum_value(x, "ENUM_CUDA_DEV_MEM_EVENT_OPER", "CUDA_DEV_MEM_EVENT_OPR_ALLOCATION", 0);
    x->op_free = enum_value(x, "ENUM_CUDA_DEV_MEM_EVENT_OPER", "CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION", 1);
}

/* ---- strings ---- */

static int load_strings(struct nsys *x)
{
    sqlite3_stmt *st = NULL;
    int64_t max = 0;
    int step;
    if (sqlite3_prepare_v2(x->in, "SELECT MAX(id) FROM StringIds", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return nfail(x, "cannot read StringIds");
    }
    max = col_int(st, 0, 0);
    sqlite3_finalize(st);
    if (max < 0 || max > 100000000) {
        snprintf(x->err, x->errlen, "%s: StringIds ids out of range (%lld)", x->path, (long long)max);
        return -1;
    }
    x->nstrings = max + 1;
    x->strings = calloc((size_t)x->nstrings, sizeof *x->strings);
    if (!x->strings)
        return oom(x);
    if (sqlite3_prepare_v2(x->in, "SELECT id, value FROM StringIds WHERE id >= 0", -1, &st, NULL) != SQLITE_OK)
        return nfail(x, "cannot read StringIds");
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        const unsigned char *v = sqlite3_column_text(st, 1);
        if (id < x->nstrings && v && !x->strings[id] && !(x->strings[id] = strdup((const char *)v))) {
            sqlite3_finalize(st);
            return oom(x);
        }
    }
    sqlite3_finalize(st);
    return step == SQLITE_DONE ? 0 : nfail(x, "cannot read StringIds");
}

/* ---- processes and threads ---- */

static int64_t process_of(struct nsys *x, int64_t gpid)
{
    for (size_t i = 0; i < x->nprocs; i++)
        if (x->procs[i].gpid == gpid)
            return (int64_t)i;
    if (grow(&x->procs, &x->capprocs, x->nprocs, sizeof *x->procs) != 0)
        return oom(x);
    x->procs[x->nprocs] = (struct process){
        .gpid = gpid, .id = (int64_t)x->nprocs + 1, .first = INT64_MAX, .last = INT64_MIN, .rank = WS_UNKNOWN};
    return (int64_t)x->nprocs++;
}

static struct thread *thread_of(struct nsys *x, int64_t gtid)
{
    size_t lo = 0, hi = x->nthreads;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (x->threads[mid].gtid < gtid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < x->nthreads && x->threads[lo].gtid == gtid ? &x->threads[lo] : NULL;
}

static int thread_cmp(const void *a, const void *b)
{
    int64_t x = ((const struct thread *)a)->gtid, y = ((const struct thread *)b)->gtid;
    return x < y ? -1 : x > y;
}

/* Every thread the report mentions, and the main thread (tid = pid) of every process. */
static int collect_threads(struct nsys *x, int have_nvtx, int have_runtime, int have_driver, int have_names,
                           int have_memory, int have_kernels)
{
    char sql[1024];
    size_t n = 0;
    sql[0] = 0;
#define PART(cond, text)                                                                                               \
    if (cond)                                                                                                          \
    n += (size_t)snprintf(sql + n, sizeof sql - n, "%s%s", n ? " UNION " : "", text)
    PART(have_nvtx, "SELECT globalTid FROM NVTX_EVENTS WHERE globalTid IS NOT NULL");
    PART(have_nvtx && has_col(x, "NVTX_EVENTS", "endGlobalTid"),
         "SELECT endGlobalTid FROM NVTX_EVENTS WHERE endGlobalTid IS NOT NULL");
    PART(have_runtime, "SELECT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE globalTid IS NOT NULL");
    PART(have_driver, "SELECT globalTid FROM CUPTI_ACTIVITY_KIND_DRIVER WHERE globalTid IS NOT NULL");
    PART(have_names, "SELECT globalTid FROM ThreadNames WHERE globalTid IS NOT NULL");
    PART(have_memory, "SELECT globalPid + ((globalPid >> 24) & 16777215) FROM CUDA_GPU_MEMORY_USAGE_EVENTS");
    PART(have_kernels && has_col(x, "CUPTI_ACTIVITY_KIND_KERNEL", "globalPid"),
         "SELECT globalPid + ((globalPid >> 24) & 16777215) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE globalPid IS NOT "
         "NULL");
#undef PART
    if (n == 0)
        return 0;
    sqlite3_stmt *st = NULL;
    int step;
    if (sqlite3_prepare_v2(x->in, sql, -1, &st, NULL) != SQLITE_OK)
        return nfail(x, "cannot read the threads");
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (grow(&x->threads, &x->capthreads, x->nthreads, sizeof *x->threads) != 0) {
            sqlite3_finalize(st);
            return oom(x);
        }
        struct thread *t = &x->threads[x->nthreads++];
        memset(t, 0, sizeof *t);
        t->gtid = sqlite3_column_int64(st, 0);
        t->first = INT64_MAX;
        t->last = INT64_MIN;
    }
    sqlite3_finalize(st);
    if (step != SQLITE_DONE)
        return nfail(x, "cannot read the threads");
    qsort(x->threads, x->nthreads, sizeof *x->threads, thread_cmp);
    for (size_t i = 0; i < x->nthreads; i++) {
        int64_t p = process_of(x, GID_PROCESS(x->threads[i].gtid));
        if (p < 0)
            return -1;
        x->threads[i].process = p;
        x->threads[i].id = (int64_t)i + 1;
    }
    return 0;
}

static struct thread *main_thread(struct nsys *x, int64_t gpid) { return thread_of(x, gpid + (int64_t)GID_PID(gpid)); }

static void touch(struct nsys *x, struct thread *t, int64_t ns)
{
    if (!t)
        return;
    if (ns < t->first)
        t->first = ns;
    if (ns > t->last)
        t->last = ns;
    struct process *p = &x->procs[t->process];
    if (ns < p->first)
        p->first = ns;
    if (ns > p->last)
        p->last = ns;
}

/* ---- NVTX: domains, ranges, marks ---- */

static int64_t nvtx_text(struct nsys *x, sqlite3_stmt *st, int text_col, int id_col)
{
    const unsigned char *t = sqlite3_column_text(st, text_col);
    if (t)
        return ws_writer_string(&x->w, (const char *)t);
    const char *s = string_at(x, col_int(st, id_col, -1));
    return s ? ws_writer_string(&x->w, s) : WS_UNKNOWN;
}

struct domain_map {
    int64_t gpid, nsys_id, id;
};

static int64_t domain_of(struct domain_map *m, size_t n, int64_t gpid, int64_t nsys_id)
{
    for (size_t i = 0; i < n; i++)
        if (m[i].gpid == gpid && m[i].nsys_id == nsys_id)
            return m[i].id;
    return 0;
}

static int range_cmp(const void *a, const void *b)
{
    const struct range *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1; /* the enclosing range first */
    return x->thread < y->thread ? -1 : x->thread > y->thread;
}

static int load_nvtx(struct nsys *x, struct domain_map **dm, size_t *ndm)
{
    int text = has_col(x, "NVTX_EVENTS", "text"), textid = has_col(x, "NVTX_EVENTS", "textId");
    int dom = has_col(x, "NVTX_EVENTS", "domainId"), endg = has_col(x, "NVTX_EVENTS", "endGlobalTid");
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT start, end, eventType, globalTid, %s, %s, %s, %s FROM NVTX_EVENTS ORDER BY start",
             text ? "text" : "NULL", textid ? "textId" : "NULL", dom ? "domainId" : "0",
             endg ? "endGlobalTid" : "NULL");
    sqlite3_stmt *st = NULL;
    size_t capdm = 0;
    int step;
    /* Domains first: their names give the merged domain ids (domains are shared by name). */
    if (sqlite3_prepare_v2(x->in, sql, -1, &st, NULL) != SQLITE_OK)
        return nfail(x, "cannot read NVTX_EVENTS");
    int64_t next_domain = 0;
    struct {
        int64_t name, id;
    } *names = NULL;
    size_t nnames = 0, capnames = 0;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (sqlite3_column_int64(st, 2) != x->ev_domain)
            continue;
        int64_t name = nvtx_text(x, st, 4, 5), id = 0;
        if (name == -1)
            goto fail;
        for (size_t i = 0; i < nnames; i++)
            if (names[i].name == name)
                id = names[i].id;
        if (!id) {
            if (grow(&names, &capnames, nnames, sizeof *names) != 0)
                goto oom;
            id = ++next_domain;
            names[nnames].name = name;
            names[nnames++].id = id;
            if (ws_writer_domain(&x->w, id, name) != 0)
                goto fail;
        }
        if (grow(dm, &capdm, *ndm, sizeof **dm) != 0)
            goto oom;
        (*dm)[(*ndm)++] = (struct domain_map){GID_PROCESS(col_int(st, 3, 0)), col_int(st, 6, 0), id};
    }
    if (step != SQLITE_DONE)
        goto sqlfail;
    sqlite3_reset(st);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t type = sqlite3_column_int64(st, 2);
        if (type != x->ev_pushpop && type != x->ev_startend)
            continue;
        struct thread *t = thread_of(x, col_int(st, 3, -1));
        if (!t) {
            x->skipped++;
            continue;
        }
        if (grow(&x->ranges, &x->capranges, x->nranges, sizeof *x->ranges) != 0)
            goto oom;
        struct range *r = &x->ranges[x->nranges++];
        memset(r, 0, sizeof *r);
        r->start = sqlite3_column_int64(st, 0);
        r->end = col_int(st, 1, WS_UNKNOWN);
        r->thread = t->id;
        struct thread *e = thread_of(x, col_int(st, 7, -1));
        r->end_thread = r->end == WS_UNKNOWN ? WS_UNKNOWN : e ? e->id : t->id;
        r->name = nvtx_text(x, st, 4, 5);
        if (r->name == -1)
            goto fail;
        r->domain = domain_of(*dm, *ndm, GID_PROCESS(t->gtid), col_int(st, 6, 0));
        r->push = type == x->ev_pushpop;
        touch(x, t, r->start);
        if (r->end != WS_UNKNOWN)
            touch(x, e ? e : t, r->end);
    }
    if (step != SQLITE_DONE)
        goto sqlfail;
    sqlite3_finalize(st);
    free(names);
    return 0;
oom:
    oom(x);
    goto fail;
sqlfail:
    nfail(x, "cannot read NVTX_EVENTS");
fail:
    sqlite3_finalize(st);
    free(names);
    return -1;
}

/* Ids in order of start; parents and depths from the nesting of push ranges on each thread:
 * a stack per thread, from which ranges that ended by the next one's start are popped. */
static int number_ranges(struct nsys *x)
{
    qsort(x->ranges, x->nranges, sizeof *x->ranges, range_cmp);
    for (size_t i = 0; i < x->nranges; i++)
        x->ranges[i].id = (int64_t)i + 1;
    for (size_t i = 0; i < x->nranges; i++) {
        struct range *r = &x->ranges[i];
        if (!r->push)
            continue;
        struct thread *t = &x->threads[r->thread - 1];
        while (t->depth > 0) {
            const struct range *top = &x->ranges[t->stack[t->depth - 1]];
            if (top->end == WS_UNKNOWN || top->end > r->start)
                break;
            t->depth--;
        }
        r->parent = t->depth ? x->ranges[t->stack[t->depth - 1]].id : WS_UNKNOWN;
        r->depth = (int64_t)t->depth;
        if (grow(&t->stack, &t->capstack, t->depth, sizeof *t->stack) != 0 ||
            grow(&t->ranges, &t->capranges, t->nranges, sizeof *t->ranges) != 0)
            return oom(x);
        t->stack[t->depth++] = (int64_t)i;
        t->ranges[t->nranges++] = (int64_t)i;
    }
    return 0;
}

/* The innermost push range open on the thread at ns (0 when none). */
static int64_t range_at(struct nsys *x, const struct thread *t, int64_t ns)
{
    if (!t || t->nranges == 0)
        return 0;
    size_t lo = 0, hi = t->nranges;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (x->ranges[t->ranges[mid]].start <= ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return 0;
    const struct range *r = &x->ranges[t->ranges[lo - 1]];
    while (r) {
        if (r->end == WS_UNKNOWN || r->end > ns)
            return r->id;
        r = r->parent != WS_UNKNOWN ? &x->ranges[r->parent - 1] : NULL;
    }
    return 0;
}

static int write_ranges(struct nsys *x)
{
    for (size_t i = 0; i < x->nranges; i++) {
        const struct range *r = &x->ranges[i];
        struct ws_range_row row = {.id = r->id,
                                   .thread = r->thread,
                                   .end_thread = r->end_thread,
                                   .name = r->name,
                                   .domain = r->domain,
                                   .parent = r->push ? r->parent : WS_UNKNOWN,
                                   .depth = r->push ? r->depth : 0,
                                   .run = WS_UNKNOWN,
                                   .start_ns = r->start,
                                   .end_ns = r->end,
                                   .kind = r->push ? "push" : "startend",
                                   .source = "nvtx"};
        if (ws_writer_range(&x->w, &row) != 0)
            return -1;
    }
    x->st->ranges = (int64_t)x->nranges;
    return 0;
}

static int write_marks(struct nsys *x, const struct domain_map *dm, size_t ndm)
{
    int text = has_col(x, "NVTX_EVENTS", "text"), textid = has_col(x, "NVTX_EVENTS", "textId");
    int dom = has_col(x, "NVTX_EVENTS", "domainId");
    char sql[400];
    snprintf(sql, sizeof sql,
             "SELECT start, globalTid, %s, %s, %s FROM NVTX_EVENTS WHERE eventType = ?1 ORDER BY start",
             text ? "text" : "NULL", textid ? "textId" : "NULL", dom ? "domainId" : "0");
    sqlite3_stmt *st = NULL;
    int step, rc = -1;
    if (sqlite3_prepare_v2(x->in, sql, -1, &st, NULL) != SQLITE_OK)
        return nfail(x, "cannot read NVTX_EVENTS");
    sqlite3_bind_int64(st, 1, x->ev_mark);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        struct thread *t = thread_of(x, col_int(st, 1, -1));
        int64_t ns = sqlite3_column_int64(st, 0), name = nvtx_text(x, st, 2, 3);
        if (name == -1)
            goto out;
        if (!t) {
            x->skipped++;
            continue;
        }
        touch(x, t, ns);
        if (ws_writer_mark(&x->w, t->id, name,
                           domain_of((struct domain_map *)dm, ndm, GID_PROCESS(t->gtid), col_int(st, 4, 0)),
                           range_at(x, t, ns), ns) != 0)
            goto out;
        x->st->marks++;
    }
    rc = step == SQLITE_DONE ? 0 : nfail(x, "cannot read NVTX_EVENTS");
out:
    sqlite3_finalize(st);
    return rc;
}

/* ---- API calls ---- */

static int call_cmp(const void *a, const void *b)
{
    const struct call *x = a, *y = b;
    if (x->key_pid != y->key_pid)
        return x->key_pid < y->key_pid ? -1 : 1;
    return x->corr < y->corr ? -1 : x->corr > y->corr;
}

static int load_calls(struct nsys *x, const char *table)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT globalTid, correlationId, nameId, %s, start FROM %s WHERE correlationId IS NOT NULL",
             has_col(x, table, "returnValue") ? "returnValue" : "0", table);
    sqlite3_stmt *st = NULL;
    int step;
    if (sqlite3_prepare_v2(x->in, sql, -1, &st, NULL) != SQLITE_OK)
        return nfail(x, "cannot read the API calls");
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (grow(&x->calls, &x->capcalls, x->ncalls, sizeof *x->calls) != 0) {
            sqlite3_finalize(st);
            return oom(x);
        }
        int64_t g = col_int(st, 0, 0);
        x->calls[x->ncalls++] = (struct call){GID_PROCESS(g),    sqlite3_column_int64(st, 1), g, col_int(st, 2, -1),
                                              col_int(st, 3, 0), sqlite3_column_int64(st, 4)};
    }
    sqlite3_finalize(st);
    return step == SQLITE_DONE ? 0 : nfail(x, "cannot read the API calls");
}

static const struct call *call_of(struct nsys *x, int64_t gpid, int64_t corr)
{
    struct call key = {.key_pid = gpid, .corr = corr};
    return corr == WS_UNKNOWN ? NULL : bsearch(&key, x->calls, x->ncalls, sizeof *x->calls, call_cmp);
}

/* Failed allocation calls: Nsight records no memory event for them, and no arguments. */
static int write_failed_calls(struct nsys *x)
{
    for (size_t i = 0; i < x->ncalls; i++) {
        const struct call *c = &x->calls[i];
        const char *name = string_at(x, c->name);
        if (c->ret == 0 || !name || (strncmp(name, "cudaMalloc", 10) != 0 && strncmp(name, "cuMemAlloc", 10) != 0))
            continue;
        struct thread *t = thread_of(x, c->gtid);
        if (!t)
            continue;
        struct ws_alloc_row r;
        ws_alloc_row_init(&r);
        r.id = ++x->next_alloc;
        r.api = name;
        r.memory = strstr(name, "Host") ? "host" : strstr(name, "Managed") ? "managed" : "device";
        r.status = c->ret;
        r.thread = t->id;
        r.range = range_at(x, t, c->start);
        r.alloc_ns = c->start;
        touch(x, t, c->start);
        if (ws_writer_alloc(&x->w, &r) < 0)
            return -1;
        x->st->allocations++;
    }
    return 0;
}

/* ---- memory events ---- */

static const char *memory_of(struct nsys *x, int64_t kind, int *is_static)
{
    *is_static = kind == x->kind_device_static || kind == x->kind_managed_static;
    if (kind == x->kind_device || kind == x->kind_array || kind == x->kind_device_static)
        return "device";
    if (kind == x->kind_managed || kind == x->kind_managed_static)
        return "managed";
    if (kind == x->kind_pinned)
        return "host";
    return NULL; /* pageable or unknown: not a CUDA allocation */
}

static struct open_alloc *find_open(struct nsys *x, int64_t gpid, int64_t address)
{
    for (size_t i = x->nallocs; i-- > 0;)
        if (x->allocs[i].live && x->allocs[i].gpid == gpid && x->allocs[i].row.address == address)
            return &x->allocs[i];
    return NULL;
}

static int write_open(struct nsys *x, struct open_alloc *a)
{
    a->live = 0;
    x->st->allocations++;
    x->st->frees += a->row.free_ns != WS_UNKNOWN;
    return ws_writer_alloc(&x->w, &a->row) < 0 ? -1 : 0;
}

static int load_memory(struct nsys *x)
{
    int corr = has_col(x, "CUDA_GPU_MEMORY_USAGE_EVENTS", "correlationId");
    char sql[400];
    snprintf(sql, sizeof sql,
             "SELECT start, globalPid, deviceId, address, bytes, memKind, memoryOperationType, %s"
             " FROM CUDA_GPU_MEMORY_USAGE_EVENTS ORDER BY start, rowid",
             corr ? "correlationId" : "NULL");
    sqlite3_stmt *st = NULL;
    int step, rc = -1;
    if (sqlite3_prepare_v2(x->in, sql, -1, &st, NULL) != SQLITE_OK)
        return nfail(x, "cannot read CUDA_GPU_MEMORY_USAGE_EVENTS");
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t ns = sqlite3_column_int64(st, 0), gpid = GID_PROCESS(sqlite3_column_int64(st, 1));
        int64_t device = sqlite3_column_int64(st, 2), address = sqlite3_column_int64(st, 3);
        int64_t bytes = sqlite3_column_int64(st, 4), kind = sqlite3_column_int64(st, 5);
        int64_t op = sqlite3_column_int64(st, 6);
        int is_static;
        const char *memory = memory_of(x, kind, &is_static);
        if (!memory || (op != x->op_alloc && op != x->op_free)) {
            x->skipped++;
            continue;
        }
        const struct call *c = call_of(x, gpid, col_int(st, 7, WS_UNKNOWN));
        struct thread *t = c ? thread_of(x, c->gtid) : NULL;
        if (!t) {
            x->uncorrelated++;
            t = main_thread(x, gpid);
        }
        if (!t) {
            x->skipped++;
            continue;
        }
        touch(x, t, ns);
        const char *api = c ? string_at(x, c->name) : NULL;
        if (op == x->op_alloc) {
            struct open_alloc *old = find_open(x, gpid, address);
            if (old && write_open(x, old) != 0)
                goto out;
            if (grow(&x->allocs, &x->capallocs, x->nallocs, sizeof *x->allocs) != 0) {
                oom(x);
                goto out;
            }
            struct open_alloc *a = &x->allocs[x->nallocs++];
            a->gpid = gpid;
            a->live = 1;
            ws_alloc_row_init(&a->row);
            a->row.id = ++x->next_alloc;
            a->row.api = is_static ? "static" : api ? api : "nsys.memory-event";
            a->row.memory = memory;
            a->row.device = device;
            a->row.address = address;
            a->row.requested = a->row.bytes = bytes;
            a->row.thread = t->id;
            a->row.range = range_at(x, t, ns);
            a->row.alloc_ns = ns;
            continue;
        }
        struct open_alloc *a = find_open(x, gpid, address);
        if (!a) {
            x->unmatched_frees++;
            if (ws_writer_api_error(&x->w, api ? api : "nsys.memory-event", 0, address, t->id, range_at(x, t, ns),
                                    ns) != 0)
                goto out;
            continue;
        }
        a->row.free_ns = ns;
        a->row.free_api = api ? api : "nsys.memory-event";
        a->row.free_thread = t->id;
        a->row.free_range = range_at(x, t, ns);
        if (write_open(x, a) != 0)
            goto out;
    }
    if (step != SQLITE_DONE) {
        nfail(x, "cannot read CUDA_GPU_MEMORY_USAGE_EVENTS");
        goto out;
    }
    for (size_t i = 0; i < x->nallocs; i++)
        if (x->allocs[i].live && write_open(x, &x->allocs[i]) != 0)
            goto out;
    rc = 0;
out:
    sqlite3_finalize(st);
    return rc;
}

/* ---- launches ---- */

static int load_kernels(struct nsys *x)
{
    const char *k = "CUPTI_ACTIVITY_KIND_KERNEL";
    int gpid = has_col(x, k, "globalPid");
    const char *name = has_col(x, k, "demangledName") ? "demangledName" : "shortName";
#define OPT(c) (has_col(x, k, c) ? c : "NULL")
    char sql[600];
    snprintf(sql, sizeof sql,
             "SELECT start, %s, correlationId, %s, %s, %s, %s, %s, %s, %s, %s, %s FROM CUPTI_ACTIVITY_KIND_KERNEL",
             gpid ? "globalPid" : "NULL", name, OPT("gridX"), OPT("gridY"), OPT("gridZ"), OPT("blockX"), OPT("blockY"),
             OPT("blockZ"), OPT("dynamicSharedMemory"), OPT("streamId"));
#undef OPT
    sqlite3_stmt *st = NULL;
    int step, rc = -1;
    if (sqlite3_prepare_v2(x->in, sql, -1, &st, NULL) != SQLITE_OK)
        return nfail(x, "cannot read CUPTI_ACTIVITY_KIND_KERNEL");
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t p = gpid ? GID_PROCESS(col_int(st, 1, 0)) : (x->nprocs ? x->procs[0].gpid : 0);
        const struct call *c = call_of(x, p, col_int(st, 2, WS_UNKNOWN));
        struct thread *t = c ? thread_of(x, c->gtid) : main_thread(x, p);
        if (!t) {
            x->skipped++;
            continue;
        }
        struct ws_launch_row l;
        ws_launch_row_init(&l);
        l.ns = c ? c->start : sqlite3_column_int64(st, 0); /* the launching call, else the GPU start */
        l.api = c && string_at(x, c->name) ? string_at(x, c->name) : "kernel";
        const char *kn = string_at(x, col_int(st, 3, -1));
        l.kernel_name = kn ? ws_writer_string(&x->w, kn) : WS_UNKNOWN;
        if (l.kernel_name == -1)
            goto out;
        for (int i = 0; i < 3; i++) {
            l.grid[i] = col_int(st, 4 + i, WS_UNKNOWN);
            l.block[i] = col_int(st, 7 + i, WS_UNKNOWN);
        }
        l.shared_bytes = col_int(st, 10, WS_UNKNOWN);
        l.stream = col_int(st, 11, WS_UNKNOWN);
        l.thread = t->id;
        l.range = range_at(x, t, l.ns);
        touch(x, t, l.ns);
        if (ws_writer_launch(&x->w, &l) != 0)
            goto out;
        x->st->launches++;
    }
    rc = step == SQLITE_DONE ? 0 : nfail(x, "cannot read CUPTI_ACTIVITY_KIND_KERNEL");
out:
    sqlite3_finalize(st);
    return rc;
}

static int write_graph_launches(struct nsys *x)
{
    for (size_t i = 0; i < x->ncalls; i++) {
        const struct call *c = &x->calls[i];
        const char *name = string_at(x, c->name);
        if (!name || (strncmp(name, "cudaGraphLaunch", 15) != 0 && strncmp(name, "cuGraphLaunch", 13) != 0))
            continue;
        struct thread *t = thread_of(x, c->gtid);
        if (!t)
            continue;
        struct ws_launch_row l;
        ws_launch_row_init(&l);
        l.api = name;
        l.status = c->ret;
        l.thread = t->id;
        l.ns = c->start;
        l.range = range_at(x, t, c->start);
        touch(x, t, c->start);
        if (ws_writer_launch(&x->w, &l) != 0)
            return -1;
        x->st->launches++;
    }
    return 0;
}

/* ---- processes, threads, meta ---- */

static int64_t query_int(struct nsys *x, const char *sql, int64_t dflt)
{
    sqlite3_stmt *st = NULL;
    int64_t v = dflt;
    if (sqlite3_prepare_v2(x->in, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = col_int(st, 0, dflt);
    sqlite3_finalize(st);
    return v;
}

static char *query_text(struct nsys *x, const char *sql)
{
    sqlite3_stmt *st = NULL;
    char *v = NULL;
    if (sqlite3_prepare_v2(x->in, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_text(st, 0))
        v = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return v;
}

static int write_processes(struct nsys *x)
{
    char *host = has_table(x, "TARGET_INFO_SYSTEM_ENV") && has_col(x, "TARGET_INFO_SYSTEM_ENV", "value")
                     ? query_text(x, "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname' LIMIT 1")
                     : NULL;
    int64_t utc = has_table(x, "TARGET_INFO_SESSION_START_TIME")
                      ? query_int(x, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1", WS_UNKNOWN)
                      : WS_UNKNOWN;
    int64_t t0 = has_table(x, "ANALYSIS_DETAILS") ? query_int(x, "SELECT MIN(startTime) FROM ANALYSIS_DETAILS", 0) : 0;
    int ranks = has_table(x, "MPI_RANKS") && has_col(x, "MPI_RANKS", "rank");
    int names = has_table(x, "PROCESSES") && has_col(x, "PROCESSES", "name") && has_col(x, "PROCESSES", "globalPid");
    sqlite3_stmt *rk = NULL, *nm = NULL;
    int rc = -1;
    if ((ranks && sqlite3_prepare_v2(x->in, "SELECT rank FROM MPI_RANKS WHERE (globalTid >> 24) = (?1 >> 24) LIMIT 1",
                                     -1, &rk, NULL) != SQLITE_OK) ||
        (names && sqlite3_prepare_v2(x->in, "SELECT name FROM PROCESSES WHERE globalPid = ?1 LIMIT 1", -1, &nm, NULL) !=
                      SQLITE_OK)) {
        nfail(x, "cannot read the processes");
        goto out;
    }
    for (size_t i = 0; i < x->nprocs; i++) {
        struct process *p = &x->procs[i];
        struct ws_process_row row;
        char *cmd = NULL;
        ws_process_row_init(&row, p->id, "nsys");
        row.pid = (int64_t)GID_PID(p->gpid);
        row.host = host;
        row.origin = x->path;
        if (p->first <= p->last) {
            row.start_ns = p->first;
            row.end_ns = p->last;
            if (utc != WS_UNKNOWN)
                row.start_time_unix_ns = (int64_t)((uint64_t)utc + ((uint64_t)p->first - (uint64_t)t0));
        }
        if (rk) {
            sqlite3_bind_int64(rk, 1, p->gpid);
            if (sqlite3_step(rk) == SQLITE_ROW)
                row.rank = sqlite3_column_int64(rk, 0);
            sqlite3_reset(rk);
        }
        if (nm) {
            sqlite3_bind_int64(nm, 1, p->gpid);
            if (sqlite3_step(nm) == SQLITE_ROW && sqlite3_column_text(nm, 0))
                cmd = strdup((const char *)sqlite3_column_text(nm, 0));
            sqlite3_reset(nm);
        }
        row.command_line = cmd;
        int r = ws_writer_process(&x->w, &row);
        free(cmd);
        if (r != 0)
            goto out;
    }
    x->st->processes = (int64_t)x->nprocs;
    rc = 0;
out:
    sqlite3_finalize(rk);
    sqlite3_finalize(nm);
    free(host);
    return rc;
}

static int write_threads(struct nsys *x, int have_names)
{
    sqlite3_stmt *st = NULL;
    if (have_names && sqlite3_prepare_v2(x->in, "SELECT nameId FROM ThreadNames WHERE globalTid = ?1 LIMIT 1", -1, &st,
                                         NULL) != SQLITE_OK)
        return nfail(x, "cannot read ThreadNames");
    for (size_t i = 0; i < x->nthreads; i++) {
        struct thread *t = &x->threads[i];
        int64_t name = WS_UNKNOWN;
        if (st) {
            sqlite3_bind_int64(st, 1, t->gtid);
            if (sqlite3_step(st) == SQLITE_ROW) {
                const char *s = string_at(x, sqlite3_column_int64(st, 0));
                name = s ? ws_writer_string(&x->w, s) : WS_UNKNOWN;
            }
            sqlite3_reset(st);
        }
        if (name == -1 || ws_writer_thread(&x->w, t->id, x->procs[t->process].id, (int64_t)GID_TID(t->gtid), name,
                                           t->first <= t->last ? t->first : WS_UNKNOWN,
                                           t->first <= t->last ? t->last : WS_UNKNOWN) != 0) {
            sqlite3_finalize(st);
            return -1;
        }
    }
    sqlite3_finalize(st);
    x->st->threads = (int64_t)x->nthreads;
    return 0;
}

static int write_meta(struct nsys *x)
{
    char *version = has_table(x, "META_DATA_EXPORT")
                        ? query_text(x, "SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_PRODUCT_VERSION'")
                        : NULL;
    char *schema = has_table(x, "META_DATA_EXPORT")
                       ? query_text(x, "SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION'")
                       : NULL;
    int64_t start = INT64_MAX;
    for (size_t i = 0; i < x->nprocs; i++)
        if (x->procs[i].first < start)
            start = x->procs[i].first;
    int rc = ws_writer_meta_text(&x->w, "source", "nsys") | ws_writer_meta_text(&x->w, "capture_backend", "nsys") |
             ws_writer_meta_text(&x->w, "nsys.product_version", version ? version : "unknown") |
             ws_writer_meta_text(&x->w, "nsys.schema_version", schema ? schema : "unknown") |
             ws_writer_meta_int(&x->w, "nsys.skipped_events", x->skipped) |
             ws_writer_meta_int(&x->w, "nsys.unmatched_frees", x->unmatched_frees) |
             ws_writer_meta_int(&x->w, "nsys.uncorrelated_memory_events", x->uncorrelated) |
             ws_writer_meta_text(&x->w, "command_line", "");
    if (start != INT64_MAX)
        rc |= ws_writer_meta_int(&x->w, "start_ns", start);
    free(version);
    free(schema);
    return rc ? -1 : 0;
}

/* ---- the report ---- */

static const char *const known_tables[] = {"CUDA_GPU_MEMORY_USAGE_EVENTS",
                                           "NVTX_EVENTS",
                                           "CUPTI_ACTIVITY_KIND_KERNEL",
                                           "CUPTI_ACTIVITY_KIND_RUNTIME",
                                           "ThreadNames",
                                           "TARGET_INFO_SESSION_START_TIME",
                                           "META_DATA_EXPORT",
                                           "ANALYSIS_DETAILS",
                                           "TARGET_INFO_SYSTEM_ENV",
                                           NULL};

static int open_report(struct nsys *x)
{
    if (access(x->path, R_OK) != 0) {
        snprintf(x->err, x->errlen, "%s: cannot read it", x->path);
        return -1;
    }
    if (sqlite3_open_v2(x->path, &x->in, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        snprintf(x->err, x->errlen, "%s: cannot open: %s", x->path, x->in ? sqlite3_errmsg(x->in) : "out of memory");
        return -1;
    }
    sqlite3_stmt *st = NULL;
    int ok = sqlite3_prepare_v2(x->in, "SELECT COUNT(*) FROM sqlite_master", -1, &st, NULL) == SQLITE_OK &&
             sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    if (!ok) {
        snprintf(x->err, x->errlen, "%s: not an Nsight Systems export (not an SQLite database)", x->path);
        return -1;
    }
    if (has_table(x, "meta") && has_table(x, "allocations") && has_table(x, "ranges")) {
        snprintf(x->err, x->errlen, "%s: this is a wstrace trace, not an Nsight Systems export", x->path);
        return -1;
    }
    int known = 0;
    for (const char *const *t = known_tables; *t; t++)
        known += has_table(x, *t);
    if (!has_table(x, "StringIds") || known == 0) {
        snprintf(x->err, x->errlen,
                 "%s: not an Nsight Systems export (no StringIds table and none of its event tables)", x->path);
        return -1;
    }
    return 0;
}

static void note_missing(struct nsys *x, int memory, int nvtx, int kernels, int runtime, int names)
{
    char parts_buf[512];
    size_t n = 0;
    const struct {
        int have;
        const char *what;
    } parts[] = {
        {memory, "CUDA_GPU_MEMORY_USAGE_EVENTS (no device allocations: profile with --cuda-memory-usage=true)"},
        {nvtx, "NVTX_EVENTS (no nodes)"},
        {kernels, "CUPTI_ACTIVITY_KIND_KERNEL (no kernel launches)"},
        {runtime, "CUPTI_ACTIVITY_KIND_RUNTIME (allocations not placed on their calling thread)"},
        {names, "ThreadNames (threads unnamed)"}};
    parts_buf[0] = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (!parts[i].have && n < sizeof parts_buf)
            n += (size_t)snprintf(parts_buf + n, sizeof parts_buf - n, "%s%s", n ? ", " : "", parts[i].what);
    if (n > 0)
        snprintf(x->st->missing, sizeof x->st->missing, "%.200s lacks %.500s; imported the rest", x->path, parts_buf);
}

int ws_import_nsys(const char *report, const char *output, struct ws_import_stats *st, char *err, size_t errlen)
{
    static const char *const mem_cols[] = {"start",   "globalPid",           "deviceId", "address", "bytes",
                                           "memKind", "memoryOperationType", NULL};
    static const char *const nvtx_cols[] = {"start", "end", "eventType", "globalTid", NULL};
    static const char *const kernel_cols[] = {"start", "correlationId", NULL};
    static const char *const api_cols[] = {"start", "globalTid", "correlationId", "nameId", NULL};
    static const char *const string_cols[] = {"id", "value", NULL};
    static const char *const name_cols[] = {"nameId", "globalTid", NULL};
    struct nsys x;
    struct domain_map *dm = NULL;
    size_t ndm = 0;
    int rc = -1, open = 0;
    memset(&x, 0, sizeof x);
    memset(st, 0, sizeof *st);
    x.path = report;
    x.st = st;
    x.err = err;
    x.errlen = errlen;
    err[0] = 0;
    if (open_report(&x) != 0)
        goto out;
    int memory = has_table(&x, "CUDA_GPU_MEMORY_USAGE_EVENTS"), nvtx = has_table(&x, "NVTX_EVENTS");
    int kernels = has_table(&x, "CUPTI_ACTIVITY_KIND_KERNEL"), runtime = has_table(&x, "CUPTI_ACTIVITY_KIND_RUNTIME");
    int driver = has_table(&x, "CUPTI_ACTIVITY_KIND_DRIVER"), names = has_table(&x, "ThreadNames");
    if (require(&x, "StringIds", string_cols) != 0 ||
        (memory && require(&x, "CUDA_GPU_MEMORY_USAGE_EVENTS", mem_cols)) ||
        (nvtx && require(&x, "NVTX_EVENTS", nvtx_cols)) ||
        (kernels && require(&x, "CUPTI_ACTIVITY_KIND_KERNEL", kernel_cols)) ||
        (runtime && require(&x, "CUPTI_ACTIVITY_KIND_RUNTIME", api_cols)) ||
        (driver && require(&x, "CUPTI_ACTIVITY_KIND_DRIVER", api_cols)) ||
        (names && require(&x, "ThreadNames", name_cols)))
        goto out;
    if (kernels && !has_col(&x, "CUPTI_ACTIVITY_KIND_KERNEL", "demangledName") &&
        !has_col(&x, "CUPTI_ACTIVITY_KIND_KERNEL", "shortName")) {
        snprintf(err, errlen,
                 "%s: CUPTI_ACTIVITY_KIND_KERNEL has no column 'demangledName' nor 'shortName': an Nsight "
                 "Systems schema this wstrace does not know",
                 report);
        goto out;
    }
    if (nvtx && !has_col(&x, "NVTX_EVENTS", "text") && !has_col(&x, "NVTX_EVENTS", "textId")) {
        snprintf(err, errlen,
                 "%s: NVTX_EVENTS has no column 'text' nor 'textId': an Nsight Systems schema this wstrace "
                 "does not know",
                 report);
        goto out;
    }
    read_enums(&x);
    if (load_strings(&x) != 0 || collect_threads(&x, nvtx, runtime, driver, names, memory, kernels) != 0)
        goto out;
    if ((runtime && load_calls(&x, "CUPTI_ACTIVITY_KIND_RUNTIME") != 0) ||
        (driver && load_calls(&x, "CUPTI_ACTIVITY_KIND_DRIVER") != 0))
        goto out;
    qsort(x.calls, x.ncalls, sizeof *x.calls, call_cmp);
    if (ws_writer_open(&x.w, output, err, errlen) != 0)
        goto out;
    open = 1;
    if ((nvtx && load_nvtx(&x, &dm, &ndm) != 0) || number_ranges(&x) != 0 || write_ranges(&x) != 0 ||
        (nvtx && write_marks(&x, dm, ndm) != 0) || (memory && load_memory(&x) != 0) || write_failed_calls(&x) != 0 ||
        (kernels && load_kernels(&x) != 0) || write_graph_launches(&x) != 0 || write_threads(&x, names) != 0 ||
        write_processes(&x) != 0 || write_meta(&x) != 0)
        goto out;
    note_missing(&x, memory, nvtx, kernels, runtime || driver, names);
    st->skipped = x.skipped;
    rc = 0;
out:
    if (open && ws_writer_close(&x.w, rc == 0) != 0)
        rc = -1;
    if (x.in)
        sqlite3_close(x.in);
    for (int64_t i = 0; i < x.nstrings; i++)
        free(x.strings[i]);
    free(x.strings);
    for (size_t i = 0; i < x.nthreads; i++) {
        free(x.threads[i].ranges);
        free(x.threads[i].stack);
    }
    free(x.threads);
    free(x.procs);
    free(x.ranges);
    free(x.calls);
    free(x.allocs);
    free(dm);
    return rc;
}
