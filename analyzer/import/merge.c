/*
 * wstrace merge: several traces into one.  Each input is attached and every table the output
 * also has is copied by column name with one INSERT ... SELECT: integer primary keys are
 * renumbered after the rows already there, columns declared REFERENCES t(id) follow the
 * renumbering of t, strings are shared by value and NVTX domains by name, and every time
 * column (named ns or *_ns) moves by the input's clock offset.  Tables and columns added to
 * the schema later flow through unchanged as long as they follow these conventions
 * (schema/README.md, "Conventions").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "import.h"
#include "spool_files.h"
#include "tracedb.h"

struct input_clock {
    char clock[80];        /* boot id of the input's timeline; "" when unknown */
    int64_t unix_ns, mono; /* the earliest process start: wall clock and its own timeline */
    int known;             /* unix_ns and mono are known */
    int64_t offset;        /* added to every time of the input */
};

struct merger {
    sqlite3 *db;
    const char *output;
    char *err;
    size_t errlen;
    struct ws_merge_stats *st;
    int64_t duplicates; /* rows of value-keyed tables whose key another process had already */
};

static int mfail(struct merger *m, const char *what)
{
    if (!m->err[0])
        snprintf(m->err, m->errlen, "%s: %s: %s", m->output, what, sqlite3_errmsg(m->db));
    return -1;
}

static int exec(struct merger *m, const char *sql)
{
    char msg[512];
    if (ws_tracedb_exec(m->db, sql, msg, sizeof msg) != 0) {
        if (!m->err[0])
            snprintf(m->err, m->errlen, "%s: cannot merge: %s", m->output, msg);
        return -1;
    }
    return 0;
}

static int64_t query_int(struct merger *m, const char *sql, int64_t dflt)
{
    sqlite3_stmt *st = NULL;
    int64_t v = dflt;
    if (sqlite3_prepare_v2(m->db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static int src_has_table(struct merger *m, const char *table)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(m->db, "SELECT 1 FROM src.sqlite_master WHERE type = 'table' AND name = ?1", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

static int src_has_column(struct merger *m, const char *table, const char *column)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(m->db, "SELECT 1 FROM pragma_table_info(?1, 'src') WHERE name = ?2", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

/* ---- the clock of each input ---- */

static void read_clock(sqlite3 *db, struct input_clock *c)
{
    sqlite3_stmt *st = NULL;
    memset(c, 0, sizeof c[0]);
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'clock'", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(c->clock, sizeof c->clock, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    st = NULL;
    /* The anchor: the process that started first by the wall clock, with its start on the
     * input's timeline.  Traces of schema version 1 say it in meta. */
    static const char *const anchors[] = {
        "SELECT start_time_unix_ns, start_ns FROM processes WHERE start_time_unix_ns IS NOT NULL AND start_ns IS NOT "
        "NULL ORDER BY start_time_unix_ns LIMIT 1",
        "SELECT (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'start_time_unix_ns'),"
        " (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'start_ns')"};
    for (int k = 0; k < 2 && !c->known; k++) {
        if (sqlite3_prepare_v2(db, anchors[k], -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
            sqlite3_column_type(st, 0) != SQLITE_NULL && sqlite3_column_type(st, 1) != SQLITE_NULL) {
            c->unix_ns = sqlite3_column_int64(st, 0);
            c->mono = sqlite3_column_int64(st, 1);
            c->known = 1;
        }
        sqlite3_finalize(st);
        st = NULL;
    }
}

/* Inputs on the reference's clock (same boot id) keep their times; the others move so that
 * their anchor lands where the wall clock puts it relative to the reference's anchor.  Inputs
 * that share a clock other than the reference's share one offset. */
static size_t align_clocks(struct input_clock *c, size_t n)
{
    size_t ref = n;
    for (size_t i = 0; i < n; i++)
        if (c[i].known && (ref == n || c[i].unix_ns < c[ref].unix_ns))
            ref = i;
    for (size_t i = 0; i < n; i++) {
        c[i].offset = 0;
        if (ref == n || i == ref)
            continue;
        if (c[i].clock[0] && strcmp(c[i].clock, c[ref].clock) == 0)
            continue;
        size_t same = i;
        for (size_t j = 0; j < i; j++)
            if (c[i].clock[0] && strcmp(c[j].clock, c[i].clock) == 0) {
                same = j;
                break;
            }
        if (same != i)
            c[i].offset = c[same].offset;
        else if (c[i].known)
            c[i].offset = c[ref].mono + (c[i].unix_ns - c[ref].unix_ns) - c[i].mono;
    }
    return ref;
}

/* ---- renumbering ---- */

/* The renumbered tables (an INTEGER PRIMARY KEY) of the output and the largest id of each
 * before the input: as many as the schema has, none left out. */
struct offsets {
    char **table; /* sqlite3_mprintf */
    int64_t *value;
    size_t n, cap;
};

static void offsets_free(struct offsets *o)
{
    for (size_t i = 0; i < o->n; i++)
        sqlite3_free(o->table[i]);
    free(o->table);
    free(o->value);
    memset(o, 0, sizeof *o);
}

static int64_t *offset_of(struct offsets *o, const char *table)
{
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->table[i], table) == 0)
            return &o->value[i];
    return NULL;
}

static int compute_offsets(struct merger *m, struct offsets *o)
{
    sqlite3_stmt *st = NULL;
    int step;
    if (sqlite3_prepare_v2(m->db,
                           "SELECT m.name, p.name FROM main.sqlite_master m, pragma_table_info(m.name, 'main') p"
                           " WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite%' AND p.pk = 1"
                           " AND upper(p.type) = 'INTEGER' AND m.sql NOT LIKE '%WITHOUT ROWID%'"
                           " AND (SELECT COUNT(*) FROM pragma_table_info(m.name, 'main') q WHERE q.pk > 0) = 1",
                           -1, &st, NULL) != SQLITE_OK)
        return mfail(m, "cannot read the schema");
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (o->n == o->cap) {
            size_t cap = o->cap ? 2 * o->cap : 64;
            char **t = realloc(o->table, cap * sizeof *t);
            if (t)
                o->table = t;
            int64_t *v = t ? realloc(o->value, cap * sizeof *v) : NULL;
            if (!v) {
                sqlite3_finalize(st);
                snprintf(m->err, m->errlen, "out of memory");
                return -1;
            }
            o->value = v;
            o->cap = cap;
        }
        char *sql = sqlite3_mprintf("SELECT MAX(\"%w\") FROM main.\"%w\"", (const char *)sqlite3_column_text(st, 1),
                                    (const char *)sqlite3_column_text(st, 0));
        o->table[o->n] = sqlite3_mprintf("%s", (const char *)sqlite3_column_text(st, 0));
        if (!sql || !o->table[o->n]) {
            sqlite3_free(sql);
            sqlite3_free(o->table[o->n]);
            sqlite3_finalize(st);
            snprintf(m->err, m->errlen, "out of memory");
            return -1;
        }
        o->value[o->n++] = query_int(m, sql, 0);
        sqlite3_free(sql);
    }
    sqlite3_finalize(st);
    return step == SQLITE_DONE ? 0 : mfail(m, "cannot read the schema");
}

static int map_strings(struct merger *m)
{
    return exec(m, "DELETE FROM temp.map_strings;"
                   "INSERT OR IGNORE INTO main.strings(value) SELECT value FROM src.strings ORDER BY id;"
                   "INSERT INTO temp.map_strings(old, new) SELECT s.id, t.id FROM src.strings s"
                   " JOIN main.strings t ON t.value = s.value;");
}

/* Domains are names: the same name in two processes is one domain of the merged trace. */
static int map_domains(struct merger *m)
{
    sqlite3_stmt *st = NULL, *find = NULL, *add = NULL, *map = NULL;
    int rc = -1, step;
    if (exec(m, "DELETE FROM temp.map_domains; INSERT INTO temp.map_domains VALUES (0, 0);") != 0)
        return -1;
    if (sqlite3_prepare_v2(m->db,
                           "SELECT d.id, (SELECT new FROM temp.map_strings WHERE old = d.name_id) FROM src.domains d"
                           " WHERE d.id <> 0 ORDER BY d.id",
                           -1, &st, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m->db, "SELECT id FROM main.domains WHERE name_id IS ?1 AND id <> 0", -1, &find, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(m->db,
                           "INSERT INTO main.domains(id, name_id) VALUES ((SELECT COALESCE(MAX(id), 0) + 1 FROM "
                           "main.domains), ?1) RETURNING id",
                           -1, &add, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m->db, "INSERT INTO temp.map_domains(old, new) VALUES (?1, ?2)", -1, &map, NULL) !=
            SQLITE_OK)
        goto out;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = -1;
        sqlite3_bind_value(find, 1, sqlite3_column_value(st, 1));
        if (sqlite3_step(find) == SQLITE_ROW)
            id = sqlite3_column_int64(find, 0);
        sqlite3_reset(find);
        if (id < 0) {
            sqlite3_bind_value(add, 1, sqlite3_column_value(st, 1));
            if (sqlite3_step(add) != SQLITE_ROW)
                goto out;
            id = sqlite3_column_int64(add, 0);
            sqlite3_reset(add);
        }
        sqlite3_bind_int64(map, 1, sqlite3_column_int64(st, 0));
        sqlite3_bind_int64(map, 2, id);
        if (sqlite3_step(map) != SQLITE_DONE)
            goto out;
        sqlite3_reset(map);
    }
    rc = step == SQLITE_DONE ? 0 : -1;
out:
    sqlite3_finalize(st);
    sqlite3_finalize(find);
    sqlite3_finalize(add);
    sqlite3_finalize(map);
    return rc == 0 ? 0 : mfail(m, "cannot merge the domains");
}

/* ---- processes ---- */

static int copy_processes(struct merger *m, const char *path, int64_t off, int64_t clock_off, int64_t *first,
                          int64_t *count)
{
    char sql[2048];
    *first = off + 1;
    if (src_has_table(m, "processes") && query_int(m, "SELECT COUNT(*) FROM src.processes", 0) > 0) {
        sqlite3_stmt *st = NULL;
        snprintf(
            sql, sizeof sql,
            "INSERT INTO main.processes(id, pid, ppid, host, boot_id, rank, local_rank, world_size, source, origin,"
            " merged_from, command_line, start_ns, end_ns, start_time_unix_ns, clock_offset_ns, clean_exit,"
            " lost_records) SELECT id + %" PRId64 ", pid, ppid, host, boot_id, rank, local_rank, world_size,"
            " source, origin, COALESCE(merged_from, ?1), command_line, start_ns + %" PRId64 ", end_ns + %" PRId64
            ", start_time_unix_ns, clock_offset_ns + %" PRId64 ", clean_exit, lost_records FROM src.processes"
            " ORDER BY id",
            off, clock_off, clock_off, clock_off);
        int rc = sqlite3_prepare_v2(m->db, sql, -1, &st, NULL) == SQLITE_OK &&
                         sqlite3_bind_text(st, 1, path, -1, SQLITE_TRANSIENT) == SQLITE_OK &&
                         sqlite3_step(st) == SQLITE_DONE
                     ? 0
                     : -1;
        sqlite3_finalize(st);
        *first = query_int(m, "SELECT MIN(id) FROM src.processes", 1) + off;
        *count = query_int(m, "SELECT COUNT(*) FROM src.processes", 1);
        return rc == 0 ? 0 : mfail(m, "cannot merge the processes");
    }
    /* Schema version 1: one process, described by meta. */
    sqlite3_stmt *st = NULL;
    static const char v1[] =
        "INSERT INTO main.processes(id, pid, ppid, source, origin, merged_from, command_line, start_ns, end_ns,"
        " start_time_unix_ns, clock_offset_ns, clean_exit, lost_records) SELECT ?1,"
        " (SELECT CAST(value AS INTEGER) FROM src.meta WHERE key = 'pid'),"
        " (SELECT CAST(value AS INTEGER) FROM src.meta WHERE key = 'ppid'), 'tracer',"
        " (SELECT value FROM src.meta WHERE key = 'spool'), ?2,"
        " (SELECT value FROM src.meta WHERE key = 'command_line'),"
        " (SELECT CAST(value AS INTEGER) FROM src.meta WHERE key = 'start_ns') + ?3,"
        " (SELECT CAST(value AS INTEGER) FROM src.meta WHERE key = 'end_ns') + ?3,"
        " (SELECT CAST(value AS INTEGER) FROM src.meta WHERE key = 'start_time_unix_ns'), ?3,"
        " (SELECT CAST(value AS INTEGER) FROM src.meta WHERE key = 'clean_exit'),"
        " (SELECT CAST(value AS INTEGER) FROM src.meta WHERE key = 'lost_records')";
    int rc = sqlite3_prepare_v2(m->db, v1, -1, &st, NULL) == SQLITE_OK ? 0 : -1;
    if (rc == 0) {
        sqlite3_bind_int64(st, 1, off + 1);
        sqlite3_bind_text(st, 2, path, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 3, clock_off);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    }
    sqlite3_finalize(st);
    *count = 1;
    return rc == 0 ? 0 : mfail(m, "cannot merge the processes");
}

/* The meta of a merged input is kept per process; a merge of merges keeps its process_meta. */
static int copy_process_meta(struct merger *m, int64_t off, int64_t first, int64_t count)
{
    char sql[512];
    if (src_has_table(m, "process_meta") && query_int(m, "SELECT COUNT(*) FROM src.process_meta", 0) > 0) {
        snprintf(sql, sizeof sql,
                 "INSERT OR REPLACE INTO main.process_meta(process_id, key, value) SELECT process_id + %" PRId64
                 ", key, value FROM src.process_meta",
                 off);
        return exec(m, sql);
    }
    snprintf(sql, sizeof sql,
             "INSERT OR REPLACE INTO main.process_meta(process_id, key, value) SELECT p.id, m.key, m.value"
             " FROM src.meta m, main.processes p WHERE p.id BETWEEN %" PRId64 " AND %" PRId64,
             first, first + count - 1);
    return exec(m, sql);
}

/* ---- the generic table copy ---- */

static int is_time_column(const char *name)
{
    size_t n = strlen(name);
    return strcmp(name, "ns") == 0 || (n > 3 && strcmp(name + n - 3, "_ns") == 0);
}

static int append(char *buf, size_t len, size_t *at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int append(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *at, len - *at, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= len - *at)
        return -1;
    *at += (size_t)n;
    return 0;
}

/* The referenced table of a column declared REFERENCES t(...), into ref ("" when none). */
static void foreign_table(struct merger *m, const char *table, const char *column, char *ref, size_t len)
{
    sqlite3_stmt *st = NULL;
    ref[0] = 0;
    if (sqlite3_prepare_v2(m->db, "SELECT \"table\" FROM pragma_foreign_key_list(?1, 'main') WHERE \"from\" = ?2", -1,
                           &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            snprintf(ref, len, "%s", (const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
}

static int copy_table(struct merger *m, const char *table, struct offsets *o, int64_t clock_off, int64_t process)
{
    sqlite3_stmt *cols = NULL;
    static char cl[65536], sel[65536];
    size_t a = 0, b = 0;
    int rc = -1, step, n = 0;
    int64_t *own = offset_of(o, table);
    if (sqlite3_prepare_v2(m->db, "SELECT name, pk FROM pragma_table_info(?1, 'main') ORDER BY cid", -1, &cols, NULL) !=
        SQLITE_OK)
        return mfail(m, "cannot read the schema");
    sqlite3_bind_text(cols, 1, table, -1, SQLITE_STATIC);
    while ((step = sqlite3_step(cols)) == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(cols, 0);
        int pk = sqlite3_column_int(cols, 1);
        char ref[256];
        int have = src_has_column(m, table, c);
        if (!have && strcmp(c, "process_id") != 0)
            continue; /* the output's default applies */
        if (append(cl, sizeof cl, &a, "%s\"%s\"", n ? ", " : "", c) != 0 || (n && append(sel, sizeof sel, &b, ", ")))
            goto toolong;
        n++;
        foreign_table(m, table, c, ref, sizeof ref);
        int64_t *target = ref[0] ? offset_of(o, ref) : NULL;
        int r;
        if (!have) /* an input of schema version 1: its one process */
            r = append(sel, sizeof sel, &b, "%" PRId64, process);
        else if (strcmp(ref, "strings") == 0)
            r = append(sel, sizeof sel, &b, "(SELECT new FROM temp.map_strings WHERE old = s.\"%s\")", c);
        else if (strcmp(ref, "domains") == 0 || (!ref[0] && strcmp(c, "domain_id") == 0))
            r = append(sel, sizeof sel, &b,
                       "COALESCE((SELECT new FROM temp.map_domains WHERE old = s.\"%s\"), s.\"%s\")", c, c);
        else if (target) /* a renumbered table, this one included (ranges.parent_id) */
            r = append(sel, sizeof sel, &b, "s.\"%s\" + %" PRId64, c, *target);
        else if (pk && own && !ref[0])
            r = append(sel, sizeof sel, &b, "s.\"%s\" + %" PRId64, c, *own);
        else if (is_time_column(c) && clock_off != 0)
            r = append(sel, sizeof sel, &b, "s.\"%s\" + %" PRId64, c, clock_off);
        else
            r = append(sel, sizeof sel, &b, "s.\"%s\"", c);
        if (r != 0)
            goto toolong;
    }
    if (step != SQLITE_DONE) {
        mfail(m, "cannot read the schema");
        goto out;
    }
    if (n == 0) {
        rc = 0;
        goto out;
    }
    /* A table keyed by values rather than a renumbered id (categories: domain and number) may
     * hold the same key in two processes: the first row is kept, the others are counted. */
    char *sql = sqlite3_mprintf("INSERT %s INTO main.\"%w\"(%s) SELECT %s FROM src.\"%w\" s", own ? "" : "OR IGNORE",
                                table, cl, sel, table);
    if (!sql) {
        snprintf(m->err, m->errlen, "out of memory");
        goto out;
    }
    rc = exec(m, sql);
    sqlite3_free(sql);
    if (rc == 0) {
        int64_t changed = sqlite3_changes(m->db);
        m->st->rows += changed;
        if (!own) {
            char *count = sqlite3_mprintf("SELECT COUNT(*) FROM src.\"%w\"", table);
            m->duplicates += count ? query_int(m, count, changed) - changed : 0;
            sqlite3_free(count);
        }
    }
    goto out;
toolong:
    snprintf(m->err, m->errlen, "%s: table %s has too many columns to merge", m->output, table);
out:
    sqlite3_finalize(cols);
    return rc;
}

static int is_special(const char *table)
{
    static const char *const special[] = {"meta", "strings", "domains", "processes", "process_meta", NULL};
    for (const char *const *s = special; *s; s++)
        if (strcmp(*s, table) == 0)
            return 1;
    return 0;
}

/* Every table that the output and the input both have (none left out, whatever the schema
 * holds), in an order that keeps referenced tables before the ones that point at them. */
static int copy_tables(struct merger *m, struct offsets *o, int64_t clock_off, int64_t process)
{
    sqlite3_stmt *st = NULL;
    char **names = NULL;
    size_t n = 0, cap = 0;
    int step, rc = -1;
    if (sqlite3_prepare_v2(m->db,
                           "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'"
                           " AND name IN (SELECT name FROM src.sqlite_master WHERE type = 'table') ORDER BY rowid",
                           -1, &st, NULL) != SQLITE_OK)
        return mfail(m, "cannot read the schema");
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **grown = realloc(names, cap * sizeof *names);
            if (!grown)
                goto oom;
            names = grown;
        }
        if (!(names[n] = sqlite3_mprintf("%s", (const char *)sqlite3_column_text(st, 0))))
            goto oom;
        n++;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (step != SQLITE_DONE) {
        mfail(m, "cannot read the schema");
        goto out;
    }
    rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        if (!is_special(names[i]))
            rc = copy_table(m, names[i], o, clock_off, process);
    goto out;
oom:
    snprintf(m->err, m->errlen, "out of memory");
out:
    sqlite3_finalize(st);
    for (size_t i = 0; i < n; i++)
        sqlite3_free(names[i]);
    free(names);
    return rc;
}

static int merge_one(struct merger *m, const char *path, const struct input_clock *clock)
{
    struct offsets o = {0};
    sqlite3_stmt *st = NULL;
    int attached = 0, rc = -1;
    if (sqlite3_prepare_v2(m->db, "ATTACH DATABASE ?1 AS src", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_bind_text(st, 1, path, -1, SQLITE_TRANSIENT) != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE) {
        snprintf(m->err, m->errlen, "%s: cannot open: %s", path, sqlite3_errmsg(m->db));
        sqlite3_finalize(st);
        return -1;
    }
    sqlite3_finalize(st);
    attached = 1;
    int64_t first = 0, count = 0;
    if (exec(m, "BEGIN") != 0 || compute_offsets(m, &o) != 0 || map_strings(m) != 0 || map_domains(m) != 0)
        goto out;
    int64_t *poff = offset_of(&o, "processes");
    if (!poff || copy_processes(m, path, *poff, clock->offset, &first, &count) != 0 ||
        copy_process_meta(m, *poff, first, count) != 0 || copy_tables(m, &o, clock->offset, first) != 0)
        goto out;
    m->st->processes += count;
    rc = exec(m, "COMMIT");
out:
    offsets_free(&o);
    if (rc != 0)
        exec(m, "ROLLBACK");
    if (attached)
        sqlite3_exec(m->db, "DETACH DATABASE src", NULL, NULL, NULL);
    return rc;
}

static int write_meta(struct merger *m, const char *const *inputs, size_t n, const struct input_clock *clocks,
                      size_t ref)
{
    (void)inputs;
    if (ws_tracedb_meta_text(m->db, "source", "merge") != 0 ||
        ws_tracedb_meta_int(m->db, "merge.duplicate_rows", (long long)m->duplicates) != 0 ||
        ws_tracedb_meta_int(m->db, "merged_traces", (long long)n) != 0 ||
        (ref < n && clocks[ref].clock[0] && ws_tracedb_meta_text(m->db, "clock", clocks[ref].clock) != 0) ||
        exec(m, "INSERT OR REPLACE INTO meta(key, value) SELECT 'lost_records', COALESCE(SUM(lost_records), 0)"
                " FROM processes;"
                "INSERT OR REPLACE INTO meta(key, value) SELECT 'clean_exit', COALESCE(MIN(clean_exit), 1)"
                " FROM processes;"
                "INSERT OR REPLACE INTO meta(key, value) SELECT 'start_ns', MIN(start_ns) FROM processes"
                " WHERE start_ns IS NOT NULL;"
                "INSERT OR REPLACE INTO meta(key, value) SELECT 'start_time_unix_ns', MIN(start_time_unix_ns)"
                " FROM processes WHERE start_time_unix_ns IS NOT NULL;"
                "INSERT OR REPLACE INTO meta(key, value) SELECT key, SUM(CAST(value AS INTEGER)) FROM process_meta"
                " WHERE key IN ('truncated_strings', 'corrupt_records', 'records') GROUP BY key;") != 0)
        return mfail(m, "cannot write meta");
    return 0;
}

int ws_merge_traces(const char *const *inputs, size_t n, const char *output, struct ws_merge_stats *st, char *err,
                    size_t errlen)
{
    struct merger m = {.output = output, .err = err, .errlen = errlen, .st = st};
    struct input_clock *clocks = calloc(n + 1, sizeof *clocks);
    char tmp[4200] = "", msg[512];
    int rc = -1;
    err[0] = 0;
    memset(st, 0, sizeof *st);
    if (!clocks) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        sqlite3 *db = NULL;
        if (strcmp(inputs[i], output) == 0) {
            snprintf(err, errlen, "%s: the output is also an input", output);
            goto out;
        }
        if (ws_tracedb_open(inputs[i], WS_TRACEDB_READ, &db, err, errlen) != 0)
            goto out;
        read_clock(db, &clocks[i]);
        sqlite3_close(db);
    }
    size_t ref = align_clocks(clocks, n);
    ws_temp_remove_stale(output);
    int fd; /* a temporary name of our own, created exclusively (collector/spool_files.h) */
    if (ws_temp_create(output, tmp, sizeof tmp, &fd) != 0) {
        snprintf(err, errlen, "%s: cannot write the trace: %s", output, strerror(errno));
        tmp[0] = 0;
        goto out;
    }
    close(fd);
    if (ws_tracedb_create_bulk(tmp, &m.db, err, errlen) != 0)
        goto out;
    if (exec(&m, "CREATE TEMP TABLE map_strings(old INTEGER PRIMARY KEY, new INTEGER);"
                 "CREATE TEMP TABLE map_domains(old INTEGER PRIMARY KEY, new INTEGER);"
                 "INSERT INTO domains(id, name_id) VALUES (0, NULL);") != 0)
        goto out;
    for (size_t i = 0; i < n; i++)
        if (merge_one(&m, inputs[i], &clocks[i]) != 0)
            goto out;
    if (write_meta(&m, inputs, n, clocks, ref) != 0)
        goto out;
    if (ws_tracedb_create_indexes(m.db, msg, sizeof msg) != 0 ||
        ws_tracedb_exec(m.db, "PRAGMA journal_mode=DELETE", msg, sizeof msg) != 0) {
        snprintf(err, errlen, "%s: cannot index the trace: %s", output, msg);
        goto out;
    }
    if (sqlite3_close(m.db) != SQLITE_OK) {
        snprintf(err, errlen, "%s: cannot close the trace", output);
        goto out;
    }
    m.db = NULL;
    if (rename(tmp, output) != 0) {
        snprintf(err, errlen, "%s: cannot write the trace: %s", output, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    if (m.db)
        sqlite3_close(m.db);
    if (rc != 0 && tmp[0])
        unlink(tmp);
    free(clocks);
    return rc;
}
