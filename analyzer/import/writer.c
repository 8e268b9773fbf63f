/*
 * The trace writer the importers share: the schema the collector writes, one transaction,
 * statements prepared once, strings interned in memory, a temporary file renamed over the
 * output only when everything was written.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "import.h"
#include "spool_files.h"
#include "tracedb.h"

static uint64_t hash_text(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

int ws_writer_fail(struct ws_trace_writer *w, const char *what)
{
    if (!w->err[0])
        snprintf(w->err, w->errlen, "%s: %s: %s", w->path, what, w->db ? sqlite3_errmsg(w->db) : "out of memory");
    return -1;
}

static int strmap_grow(struct ws_strmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    char **keys = calloc(cap, sizeof *keys);
    int64_t *ids = calloc(cap, sizeof *ids);
    if (!keys || !ids) {
        free(keys);
        free(ids);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = hash_text(m->keys[i]) & (cap - 1);
        while (keys[j])
            j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        ids[j] = m->ids[i];
    }
    free(m->keys);
    free(m->ids);
    m->keys = keys;
    m->ids = ids;
    m->cap = cap;
    return 0;
}

static int step_reset(struct ws_trace_writer *w, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE ? 0 : ws_writer_fail(w, what);
}

int64_t ws_writer_string(struct ws_trace_writer *w, const char *s)
{
    struct ws_strmap *m = &w->strings;
    if (!s)
        return -1;
    if ((m->count + 1) * 2 > m->cap && strmap_grow(m) != 0)
        return ws_writer_fail(w, "out of memory");
    size_t j = hash_text(s) & (m->cap - 1);
    while (m->keys[j]) {
        if (strcmp(m->keys[j], s) == 0)
            return m->ids[j];
        j = (j + 1) & (m->cap - 1);
    }
    char *copy = strdup(s);
    if (!copy)
        return ws_writer_fail(w, "out of memory");
    m->keys[j] = copy;
    m->ids[j] = (int64_t)++m->count;
    sqlite3_bind_int64(w->st_string, 1, m->ids[j]);
    sqlite3_bind_text(w->st_string, 2, copy, -1, SQLITE_STATIC);
    return step_reset(w, w->st_string, "cannot write strings") == 0 ? m->ids[j] : -1;
}

static void bind_int(sqlite3_stmt *st, int i, int64_t v)
{
    if (v == WS_UNKNOWN)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_int64(st, i, v);
}

static void bind_ref(sqlite3_stmt *st, int i, int64_t v) /* ids: 0 and below mean none */
{
    if (v == WS_UNKNOWN || v <= 0)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_int64(st, i, v);
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

void ws_alloc_row_init(struct ws_alloc_row *a)
{
    memset(a, 0, sizeof *a);
    a->address = a->stream = a->free_ns = a->free_stream = WS_UNKNOWN;
    a->range = a->run = a->free_thread = a->free_range = WS_UNKNOWN;
}

void ws_launch_row_init(struct ws_launch_row *l)
{
    memset(l, 0, sizeof *l);
    l->kernel_name = l->function = l->shared_bytes = l->stream = l->range = l->run = WS_UNKNOWN;
    for (int i = 0; i < 3; i++)
        l->grid[i] = l->block[i] = WS_UNKNOWN;
}

int ws_writer_process(struct ws_trace_writer *w, const struct ws_process_row *p)
{
    return ws_process_row_write(w->db, p) == 0 ? 0 : ws_writer_fail(w, "cannot write processes");
}

int ws_writer_thread(struct ws_trace_writer *w, int64_t id, int64_t process, int64_t os_tid, int64_t name,
                     int64_t first_ns, int64_t last_ns)
{
    sqlite3_stmt *st = w->st_thread;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, os_tid);
    bind_ref(st, 3, name);
    bind_int(st, 4, first_ns);
    bind_int(st, 5, last_ns);
    sqlite3_bind_int64(st, 6, process);
    return step_reset(w, st, "cannot write threads");
}

int ws_writer_range(struct ws_trace_writer *w, const struct ws_range_row *r)
{
    sqlite3_stmt *st = w->st_range;
    sqlite3_bind_int64(st, 1, r->id);
    sqlite3_bind_int64(st, 2, r->thread);
    bind_ref(st, 3, r->end_thread);
    bind_ref(st, 4, r->name);
    sqlite3_bind_int64(st, 5, r->domain);
    bind_text(st, 6, r->kind);
    bind_text(st, 7, r->source);
    bind_ref(st, 8, r->parent);
    sqlite3_bind_int64(st, 9, r->depth);
    bind_ref(st, 10, r->run);
    sqlite3_bind_int64(st, 11, r->start_ns);
    bind_int(st, 12, r->end_ns);
    return step_reset(w, st, "cannot write ranges");
}

int64_t ws_writer_alloc(struct ws_trace_writer *w, const struct ws_alloc_row *a)
{
    sqlite3_stmt *st = w->st_alloc;
    int64_t id = a->id > 0 ? a->id : ++w->next_alloc;
    if (id > w->next_alloc)
        w->next_alloc = id;
    sqlite3_bind_int64(st, 1, id);
    bind_text(st, 2, a->api);
    bind_text(st, 3, a->memory);
    sqlite3_bind_int64(st, 4, a->device);
    bind_int(st, 5, a->address);
    sqlite3_bind_int64(st, 6, a->requested);
    sqlite3_bind_int64(st, 7, a->bytes);
    sqlite3_bind_int64(st, 8, a->status);
    bind_int(st, 9, a->stream);
    sqlite3_bind_int64(st, 10, a->thread);
    bind_ref(st, 11, a->range);
    bind_ref(st, 12, a->run);
    sqlite3_bind_int64(st, 13, a->alloc_ns);
    bind_int(st, 14, a->free_ns);
    bind_text(st, 15, a->free_ns == WS_UNKNOWN ? NULL : a->free_api);
    bind_ref(st, 16, a->free_thread);
    bind_ref(st, 17, a->free_range);
    bind_int(st, 18, a->free_stream);
    return step_reset(w, st, "cannot write allocations") == 0 ? id : -1;
}

int ws_writer_launch(struct ws_trace_writer *w, const struct ws_launch_row *l)
{
    sqlite3_stmt *st = w->st_launch;
    bind_text(st, 1, l->api);
    bind_ref(st, 2, l->kernel_name);
    bind_int(st, 3, l->function);
    for (int i = 0; i < 3; i++) {
        bind_int(st, 4 + i, l->grid[i]);
        bind_int(st, 7 + i, l->block[i]);
    }
    bind_int(st, 10, l->shared_bytes);
    bind_int(st, 11, l->stream);
    sqlite3_bind_int64(st, 12, l->status);
    sqlite3_bind_int64(st, 13, l->thread);
    bind_ref(st, 14, l->range);
    bind_ref(st, 15, l->run);
    sqlite3_bind_int64(st, 16, l->ns);
    return step_reset(w, st, "cannot write launches");
}

int ws_writer_mark(struct ws_trace_writer *w, int64_t thread, int64_t name, int64_t domain, int64_t range, int64_t ns)
{
    sqlite3_stmt *st = w->st_mark;
    sqlite3_bind_int64(st, 1, thread);
    bind_ref(st, 2, name);
    sqlite3_bind_int64(st, 3, domain);
    bind_ref(st, 4, range);
    sqlite3_bind_int64(st, 5, ns);
    return step_reset(w, st, "cannot write marks");
}

int ws_writer_domain(struct ws_trace_writer *w, int64_t id, int64_t name)
{
    sqlite3_bind_int64(w->st_domain, 1, id);
    bind_ref(w->st_domain, 2, name);
    return step_reset(w, w->st_domain, "cannot write domains");
}

int ws_writer_run(struct ws_trace_writer *w, int64_t id, int64_t thread, int64_t shape_key, int64_t start_ns,
                  int64_t end_ns)
{
    sqlite3_bind_int64(w->st_run, 1, id);
    sqlite3_bind_int64(w->st_run, 2, thread);
    bind_ref(w->st_run, 3, shape_key);
    sqlite3_bind_int64(w->st_run, 4, start_ns);
    bind_int(w->st_run, 5, end_ns);
    return step_reset(w, w->st_run, "cannot write runs");
}

int ws_writer_api_error(struct ws_trace_writer *w, const char *api, int64_t status, int64_t address, int64_t thread,
                        int64_t range, int64_t ns)
{
    sqlite3_stmt *st = w->st_error;
    bind_text(st, 1, api);
    sqlite3_bind_int64(st, 2, status);
    bind_int(st, 3, address);
    sqlite3_bind_int64(st, 4, thread);
    bind_ref(st, 5, range);
    sqlite3_bind_int64(st, 6, ns);
    return step_reset(w, st, "cannot write api_errors");
}

int64_t ws_writer_stack(struct ws_trace_writer *w, size_t n, const int64_t *function, const int64_t *file,
                        const int64_t *line)
{
    int64_t id = ++w->next_stack;
    sqlite3_bind_int64(w->st_stack, 1, id);
    sqlite3_bind_int64(w->st_stack, 2, (int64_t)n);
    if (step_reset(w, w->st_stack, "cannot write stacks") != 0)
        return -1;
    for (size_t d = 0; d < n; d++) {
        sqlite3_bind_int64(w->st_frame, 1, id);
        sqlite3_bind_int64(w->st_frame, 2, (int64_t)d);
        bind_ref(w->st_frame, 3, function[d]);
        bind_ref(w->st_frame, 4, file[d]);
        bind_int(w->st_frame, 5, line[d]);
        if (step_reset(w, w->st_frame, "cannot write stack_frames") != 0)
            return -1;
    }
    return id;
}

int ws_writer_alloc_stack(struct ws_trace_writer *w, int64_t allocation, int64_t stack)
{
    sqlite3_bind_int64(w->st_alloc_stack, 1, allocation);
    sqlite3_bind_int64(w->st_alloc_stack, 2, stack);
    return step_reset(w, w->st_alloc_stack, "cannot write allocation_stacks");
}

int ws_writer_meta_text(struct ws_trace_writer *w, const char *key, const char *value)
{
    return ws_tracedb_meta_text(w->db, key, value) == 0 ? 0 : ws_writer_fail(w, "cannot write meta");
}

int ws_writer_meta_int(struct ws_trace_writer *w, const char *key, long long value)
{
    return ws_tracedb_meta_int(w->db, key, value) == 0 ? 0 : ws_writer_fail(w, "cannot write meta");
}

static const struct {
    size_t offset;
    const char *sql;
} statements[] = {
    {offsetof(struct ws_trace_writer, st_string), "INSERT INTO strings(id, value) VALUES (?1, ?2)"},
    {offsetof(struct ws_trace_writer, st_thread),
     "INSERT INTO threads(id, os_tid, name_id, first_ns, last_ns, process_id) VALUES (?1,?2,?3,?4,?5,?6)"},
    {offsetof(struct ws_trace_writer, st_range),
     "INSERT INTO ranges(id, thread_id, end_thread_id, name_id, domain_id, kind, source, parent_id, depth, run_id, "
     "start_ns, end_ns) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)"},
    {offsetof(struct ws_trace_writer, st_alloc),
     "INSERT INTO allocations(id, api, memory, device, address, requested_bytes, bytes, status, stream, thread_id, "
     "range_id, run_id, alloc_ns, free_ns, free_api, free_thread_id, free_range_id, free_stream) "
     "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18)"},
    {offsetof(struct ws_trace_writer, st_launch),
     "INSERT INTO launches(api, kernel_name_id, function, grid_x, grid_y, grid_z, block_x, block_y, block_z, "
     "shared_bytes, stream, status, thread_id, range_id, run_id, ns) "
     "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16)"},
    {offsetof(struct ws_trace_writer, st_mark),
     "INSERT INTO marks(thread_id, name_id, domain_id, range_id, ns) VALUES (?1,?2,?3,?4,?5)"},
    {offsetof(struct ws_trace_writer, st_domain), "INSERT OR REPLACE INTO domains(id, name_id) VALUES (?1, ?2)"},
    {offsetof(struct ws_trace_writer, st_error),
     "INSERT INTO api_errors(api, status, address, thread_id, range_id, ns) VALUES (?1,?2,?3,?4,?5,?6)"},
    {offsetof(struct ws_trace_writer, st_stack), "INSERT INTO stacks(id, frames) VALUES (?1, ?2)"},
    {offsetof(struct ws_trace_writer, st_frame),
     "INSERT INTO stack_frames(stack_id, depth, function_id, file_id, line) VALUES (?1,?2,?3,?4,?5)"},
    {offsetof(struct ws_trace_writer, st_run),
     "INSERT INTO runs(id, thread_id, shape_key_id, start_ns, end_ns) VALUES (?1,?2,?3,?4,?5)"},
    {offsetof(struct ws_trace_writer, st_alloc_stack),
     "INSERT INTO allocation_stacks(allocation_id, stack_id) VALUES (?1, ?2)"},
};

#define N_STATEMENTS (sizeof statements / sizeof statements[0])

static sqlite3_stmt **statement_slot(struct ws_trace_writer *w, size_t i)
{
    return (sqlite3_stmt **)((char *)w + statements[i].offset);
}

int ws_writer_open(struct ws_trace_writer *w, const char *output, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    w->path = output;
    w->err = err;
    w->errlen = errlen;
    err[0] = 0;
    ws_temp_remove_stale(output);
    int fd; /* a temporary name of our own, created exclusively (collector/spool_files.h) */
    if (ws_temp_create(output, w->tmp, sizeof w->tmp, &fd) != 0) {
        snprintf(err, errlen, "%s: cannot write the trace: %s", output, strerror(errno));
        return -1;
    }
    close(fd);
    if (ws_tracedb_create_bulk(w->tmp, &w->db, err, errlen) != 0) {
        snprintf(err, errlen, "%s: cannot write the trace: %s", output, strerror(errno ? errno : EIO));
        unlink(w->tmp);
        return -1;
    }
    char msg[512];
    if (ws_tracedb_exec(w->db, "BEGIN", msg, sizeof msg) != 0)
        goto fail;
    for (size_t i = 0; i < N_STATEMENTS; i++)
        if (sqlite3_prepare_v3(w->db, statements[i].sql, -1, SQLITE_PREPARE_PERSISTENT, statement_slot(w, i), NULL) !=
            SQLITE_OK)
            goto fail;
    if (ws_writer_domain(w, 0, WS_UNKNOWN) != 0) /* the default domain, as the collector writes it */
        goto fail;
    return 0;
fail:
    ws_writer_fail(w, "cannot start the trace");
    ws_writer_close(w, 0);
    return -1;
}

int ws_writer_close(struct ws_trace_writer *w, int ok)
{
    char msg[512];
    for (size_t i = 0; i < N_STATEMENTS; i++) {
        sqlite3_finalize(*statement_slot(w, i));
        *statement_slot(w, i) = NULL;
    }
    if (ok && ws_tracedb_create_indexes(w->db, msg, sizeof msg) != 0) {
        snprintf(w->err, w->errlen, "%s: cannot index the trace: %s", w->path, msg);
        ok = 0;
    }
    if (ok && ws_tracedb_exec(w->db, "COMMIT; PRAGMA journal_mode=DELETE;", msg, sizeof msg) != 0) {
        snprintf(w->err, w->errlen, "%s: cannot commit the trace: %s", w->path, msg);
        ok = 0;
    }
    if (w->db && sqlite3_close(w->db) != SQLITE_OK && ok) {
        snprintf(w->err, w->errlen, "%s: cannot close the trace", w->path);
        ok = 0;
    }
    w->db = NULL;
    if (ok && rename(w->tmp, w->path) != 0) {
        snprintf(w->err, w->errlen, "%s: cannot write the trace: %s", w->path, strerror(errno));
        ok = 0;
    }
    if (!ok)
        unlink(w->tmp);
    for (size_t i = 0; i < w->strings.cap; i++)
        free(w->strings.keys[i]);
    free(w->strings.keys);
    free(w->strings.ids);
    memset(&w->strings, 0, sizeof w->strings);
    return ok ? 0 : -1;
}
