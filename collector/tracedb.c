#include "tracedb.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "version.h"

static const char *const core_tables[] = {"meta",        "strings",  "threads",      "ranges",
                                          "allocations", "launches", "declarations", "runs"};

int ws_tracedb_exec(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, errlen, "%s", msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

static int table_exists(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?1", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

int ws_tracedb_open(const char *path, enum ws_tracedb_mode mode, sqlite3 **out, char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    *out = NULL;
    if (access(path, mode == WS_TRACEDB_WRITE ? R_OK | W_OK : R_OK) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    int flags = (mode == WS_TRACEDB_WRITE ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY) | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path, &db, flags, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: cannot open: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
        goto fail;
    }
    sqlite3_busy_timeout(db, 5000);
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW) {
        snprintf(err, errlen, "%s: not a wstrace trace (not an SQLite database)", path);
        goto fail;
    }
    int version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    st = NULL;
    if (!table_exists(db, "meta") || version == 0) {
        snprintf(err, errlen, "%s: not a wstrace trace (no wstrace schema)", path);
        goto fail;
    }
    if (version > WSTRACE_SCHEMA_VERSION) {
        snprintf(err, errlen, "%s: trace schema version %d is newer than this wstrace supports (%d); upgrade wstrace",
                 path, version, WSTRACE_SCHEMA_VERSION);
        goto fail;
    }
    for (size_t i = 0; i < sizeof(core_tables) / sizeof(core_tables[0]); i++)
        if (!table_exists(db, core_tables[i])) {
            snprintf(err, errlen, "%s: damaged trace: table '%s' is missing", path, core_tables[i]);
            goto fail;
        }
    *out = db;
    return 0;
fail:
    sqlite3_finalize(st);
    sqlite3_close(db);
    return -1;
}

#define INDEX_MARKER "-- @indexes"

/* Execute the schema, up to the index section when tables_only. */
static int exec_schema(sqlite3 *db, int tables_only, char *msg, size_t len)
{
    const char *cut = strstr(ws_schema_sql, INDEX_MARKER);
    if (!cut)
        return ws_tracedb_exec(db, ws_schema_sql, msg, len);
    if (!tables_only)
        return ws_tracedb_exec(db, ws_schema_sql, msg, len);
    size_t n = (size_t)(cut - ws_schema_sql);
    char *head = malloc(n + 1);
    if (!head) {
        snprintf(msg, len, "out of memory");
        return -1;
    }
    memcpy(head, ws_schema_sql, n);
    head[n] = 0;
    int rc = ws_tracedb_exec(db, head, msg, len);
    free(head);
    return rc;
}

int ws_tracedb_create_indexes(sqlite3 *db, char *err, size_t errlen)
{
    const char *cut = strstr(ws_schema_sql, INDEX_MARKER);
    return cut ? ws_tracedb_exec(db, cut, err, errlen) : 0;
}

static int create(const char *path, sqlite3 **out, int tables_only, char *err, size_t errlen);

int ws_tracedb_create(const char *path, sqlite3 **out, char *err, size_t errlen)
{
    return create(path, out, 0, err, errlen);
}

int ws_tracedb_create_bulk(const char *path, sqlite3 **out, char *err, size_t errlen)
{
    return create(path, out, 1, err, errlen);
}

static int create(const char *path, sqlite3 **out, int tables_only, char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    *out = NULL;
    /* A bulk load goes into an empty file its caller created exclusively (the collector's
     * temporary file): nothing to remove, and nothing is opened through a link. */
    if (!tables_only) {
        if (unlink(path) != 0 && errno != ENOENT) {
            snprintf(err, errlen, "%s: cannot replace: %s", path, strerror(errno));
            return -1;
        }
        char side[4096];
        snprintf(side, sizeof side, "%s-journal", path);
        unlink(side);
        snprintf(side, sizeof side, "%s-wal", path);
        unlink(side);
    }
    /* NOMUTEX: the connection is used by one thread; SQLite then skips a mutex per call. */
    if (sqlite3_open_v2(path, &db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
                        NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: cannot create: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return -1;
    }
    char msg[512];
    /* One writer fills a fresh file: no journal, no syncs; a failed load is simply deleted. */
    const char *pragmas = tables_only ? "PRAGMA page_size=65536; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                                        "PRAGMA cache_size=-262144;"
                                        "PRAGMA locking_mode=EXCLUSIVE; PRAGMA temp_store=MEMORY;"
                                      : "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-65536;";
    if (ws_tracedb_exec(db, pragmas, msg, sizeof msg) != 0 || exec_schema(db, tables_only, msg, sizeof msg) != 0) {
        snprintf(err, errlen, "%s: cannot write the schema: %s", path, msg);
        sqlite3_close(db);
        return -1;
    }
    *out = db;
    if (ws_tracedb_meta_int(db, "schema_version", WSTRACE_SCHEMA_VERSION) != 0 ||
        ws_tracedb_meta_text(db, "tool_version", WSTRACE_VERSION) != 0) {
        snprintf(err, errlen, "%s: cannot write meta: %s", path, sqlite3_errmsg(db));
        sqlite3_close(db);
        *out = NULL;
        return -1;
    }
    return 0;
}

static int meta_set(sqlite3 *db, const char *key, const char *text, long long number, int is_text)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        if (is_text)
            sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
        else
            sqlite3_bind_int64(st, 2, number);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_OK ? 0 : -1;
}

int ws_tracedb_meta_text(sqlite3 *db, const char *key, const char *value) { return meta_set(db, key, value, 0, 1); }
int ws_tracedb_meta_int(sqlite3 *db, const char *key, long long value) { return meta_set(db, key, NULL, value, 0); }

int ws_tracedb_has_column(sqlite3 *db, const char *table, const char *column)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

int64_t ws_tracedb_process_count(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int64_t n = 1;
    if (table_exists(db, "processes") &&
        sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM processes", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n < 1 ? 1 : n;
}
