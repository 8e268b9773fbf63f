#include "trace_builder.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracedb.h"

static char temp_dir[64];

sqlite3 *tb_create(char *path, size_t len)
{
    char err[512];
    sqlite3 *db = NULL;
    tb_cleanup(); /* a test that builds a second trace no longer needs the first */
    snprintf(temp_dir, sizeof temp_dir, "/tmp/wstrace-analyzer-XXXXXX");
    cr_assert_not_null(mkdtemp(temp_dir));
    snprintf(path, len, "%s/trace.db", temp_dir);
    cr_assert_eq(ws_tracedb_create(path, &db, err, sizeof err), 0, "%s", err);
    tb_thread(db, 1);
    return db;
}

void tb_temp_path(const char *name, char *path, size_t len) { snprintf(path, len, "%s/%s", temp_dir, name); }

static void bind_value(sqlite3_stmt *st, int col, int64_t v)
{
    if (v == NONE)
        sqlite3_bind_null(st, col);
    else
        sqlite3_bind_int64(st, col, v);
}

/* Run one INSERT with up to 8 integer parameters (NONE = NULL). */
static void exec_ints(sqlite3 *db, const char *sql, int n, const int64_t *v)
{
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    for (int i = 0; i < n; i++)
        bind_value(st, i + 1, v[i]);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "%s: %s", sql, sqlite3_errmsg(db));
    sqlite3_finalize(st);
}

void tb_string(sqlite3 *db, int64_t id, const char *value)
{
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, "INSERT INTO strings(id, value) VALUES (?1, ?2)", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "%s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
}

void tb_thread(sqlite3 *db, int64_t id)
{
    int64_t v[] = {id, 1000 + id};
    exec_ints(db, "INSERT INTO threads(id, os_tid) VALUES (?1, ?2)", 2, v);
}

void tb_run(sqlite3 *db, int64_t id, int64_t shape_key_id, int64_t start_ns, int64_t end_ns)
{
    int64_t v[] = {id, shape_key_id, start_ns, end_ns};
    exec_ints(db, "INSERT INTO runs(id, thread_id, shape_key_id, start_ns, end_ns) VALUES (?1, 1, ?2, ?3, ?4)", 4, v);
}

void tb_range(sqlite3 *db, int64_t id, int64_t name_id, int64_t parent_id, int depth, int64_t run_id, int64_t start_ns,
              int64_t end_ns)
{
    int64_t v[] = {id, name_id, parent_id, depth, run_id, start_ns, end_ns};
    exec_ints(db,
              "INSERT INTO ranges(id, thread_id, name_id, kind, source, parent_id, depth, run_id, start_ns, end_ns)"
              " VALUES (?1, 1, ?2, 'push', 'api', ?3, ?4, ?5, ?6, ?7)",
              7, v);
}

void tb_alloc(sqlite3 *db, int64_t id, int64_t bytes, int64_t range_id, int64_t run_id, int64_t alloc_ns,
              int64_t free_ns, int64_t free_range_id)
{
    int64_t v[] = {id, bytes, range_id, run_id, alloc_ns, free_ns, free_range_id};
    exec_ints(db,
              "INSERT INTO allocations(id, api, memory, device, address, requested_bytes, bytes, status, thread_id,"
              " range_id, run_id, alloc_ns, free_ns, free_api, free_thread_id, free_range_id)"
              " VALUES (?1, 'cudaMalloc', 'device', 0, 4096 * ?1, ?2, ?2, 0, 1, ?3, ?4, ?5, ?6,"
              " CASE WHEN ?6 IS NULL THEN NULL ELSE 'cudaFree' END, CASE WHEN ?6 IS NULL THEN NULL ELSE 1 END, ?7)",
              7, v);
}

void tb_decl(sqlite3 *db, int level, int64_t name_id, int64_t slot, int64_t bytes)
{
    int64_t v[] = {level, name_id, slot, bytes};
    exec_ints(db,
              "INSERT INTO declarations(level, node_name_id, slot, bytes, alignment, thread_id, ns)"
              " VALUES (?1, ?2, ?3, ?4, 0, 1, 0)",
              4, v);
}

int64_t tb_declare(sqlite3 *db, int level, int64_t name_id, int64_t slot, int64_t bytes, int64_t run_id)
{
    int64_t v[] = {level, name_id, slot, bytes, run_id};
    exec_ints(db,
              "INSERT INTO declarations(level, node_name_id, slot, bytes, alignment, thread_id, run_id, ns)"
              " VALUES (?1, ?2, ?3, ?4, 256, 1, ?5, 0)",
              5, v);
    return sqlite3_last_insert_rowid(db);
}

/* A string's id, interned like the collector does. */
static int64_t tb_intern(sqlite3 *db, const char *value)
{
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO strings(value) VALUES (?1)", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, value, -1, SQLITE_STATIC);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "%s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT id FROM strings WHERE value = ?1", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, value, -1, SQLITE_STATIC);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    int64_t id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return id;
}

void tb_decl_details(sqlite3 *db, int64_t decl_id, int64_t device, const char *tactic, const char *kind)
{
    sqlite3_stmt *st = NULL;
    int64_t tactic_id = tactic ? tb_intern(db, tactic) : NONE;
    cr_assert_eq(sqlite3_prepare_v2(db,
                                    "INSERT INTO declaration_details(declaration_id, device, tactic_id, tactic_kind)"
                                    " VALUES (?1, ?2, ?3, ?4)",
                                    -1, &st, NULL),
                 SQLITE_OK);
    bind_value(st, 1, decl_id);
    bind_value(st, 2, device);
    bind_value(st, 3, tactic_id);
    if (kind)
        sqlite3_bind_text(st, 4, kind, -1, SQLITE_STATIC);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "%s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
}

void tb_region(sqlite3 *db, int64_t decl_id, int64_t ordinal, const char *name, int64_t offset, int64_t bytes)
{
    int64_t v[] = {decl_id, ordinal, tb_intern(db, name), offset, bytes};
    exec_ints(db,
              "INSERT INTO declaration_regions(declaration_id, ordinal, name_id, offset, bytes)"
              " VALUES (?1, ?2, ?3, ?4, ?5)",
              5, v);
}

void tb_alloc_on(sqlite3 *db, int64_t id, int64_t bytes, int64_t range_id, int64_t run_id, int64_t alloc_ns,
                 int64_t free_ns, int64_t free_range_id, int64_t device)
{
    int64_t v[] = {id, bytes, range_id, run_id, alloc_ns, free_ns, free_range_id, device};
    exec_ints(db,
              "INSERT INTO allocations(id, api, memory, device, address, requested_bytes, bytes, status, thread_id,"
              " range_id, run_id, alloc_ns, free_ns, free_api, free_thread_id, free_range_id)"
              " VALUES (?1, 'cudaMalloc', 'device', ?8, 4096 * ?1, ?2, ?2, 0, 1, ?3, ?4, ?5, ?6,"
              " CASE WHEN ?6 IS NULL THEN NULL ELSE 'cudaFree' END, CASE WHEN ?6 IS NULL THEN NULL ELSE 1 END, ?7)",
              8, v);
}

void tb_sql(sqlite3 *db, const char *sql)
{
    char err[512];
    cr_assert_eq(ws_tracedb_exec(db, sql, err, sizeof err), 0, "%s: %s", sql, err);
}

void tb_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

int tb_run_cmd(int (*fn)(int, char **), const char *out_path, const char *err_path, int argc, ...)
{
    char *argv[16] = {0};
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc && i < 15; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600),
        err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(out >= 0 && err >= 0 && saved_out >= 0 && saved_err >= 0);
    dup2(out, 1);
    dup2(err, 2);
    int rc = fn(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(out);
    close(err);
    close(saved_out);
    close(saved_err);
    return rc;
}

char *tb_read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    char *text = calloc(1, 1 << 20);
    cr_assert_not_null(text);
    size_t n = fread(text, 1, (1 << 20) - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

int64_t tb_query(const char *trace, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t v = NONE;
    cr_assert_eq(sqlite3_open_v2(trace, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void tb_cleanup(void)
{
    if (temp_dir[0] && strncmp(temp_dir, "/tmp/wstrace-analyzer-", 22) == 0)
        nftw(temp_dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}
