/*
 * Opening trace databases: creation with the current schema, and validated opening for readers.
 * Errors are values: functions return 0 on success, -1 on failure with one line in err.
 */
#ifndef WS_TRACEDB_H
#define WS_TRACEDB_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

enum ws_tracedb_mode {
    WS_TRACEDB_READ = 0,  /* read only */
    WS_TRACEDB_WRITE = 1, /* existing trace, read-write (analyzers write result tables) */
};

/* Open an existing trace.  Refuses: a missing file, a file that is not SQLite, a database
 * without the wstrace meta table, a newer schema version, a database missing core tables. */
int ws_tracedb_open(const char *path, enum ws_tracedb_mode mode, sqlite3 **db, char *err, size_t errlen);

/* Create (replace) a trace database at path with the current schema, tuned for one bulk
 * writer (WAL off, synchronous=OFF during the load; the caller commits). */
int ws_tracedb_create(const char *path, sqlite3 **db, char *err, size_t errlen);

/* The same for a bulk load into an empty file the caller created (exclusively): no indexes until
 * ws_tracedb_create_indexes() (faster inserts). */
int ws_tracedb_create_bulk(const char *path, sqlite3 **db, char *err, size_t errlen);
int ws_tracedb_create_indexes(sqlite3 *db, char *err, size_t errlen);

/* Set meta(key) = value (text) / integer value. */
int ws_tracedb_meta_text(sqlite3 *db, const char *key, const char *value);
int ws_tracedb_meta_int(sqlite3 *db, const char *key, long long value);

/* Run SQL text (no parameters) and report the first error in err. */
int ws_tracedb_exec(sqlite3 *db, const char *sql, char *err, size_t errlen);

/* 1 when table has a column of that name (traces of older schema versions lack newer ones). */
int ws_tracedb_has_column(sqlite3 *db, const char *table, const char *column);

/* Rows of the processes table: 1 for a trace of schema version 1, which has none. */
int64_t ws_tracedb_process_count(sqlite3 *db);

extern const char ws_schema_sql[];   /* schema/schema.sql */
extern const char ws_analysis_sql[]; /* schema/analysis.sql: result tables of the analysis commands */

#endif
