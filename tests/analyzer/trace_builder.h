/* Small synthetic traces for the analyzer tests: rows inserted with SQL into a fresh database. */
#ifndef WS_TRACE_BUILDER_H
#define WS_TRACE_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <sqlite3.h>

#define NONE INT64_MIN /* a NULL column */

/* A fresh trace in a new temporary folder; path receives its file name. */
sqlite3 *tb_create(char *path, size_t len);
/* A file name in the same temporary folder as the last trace. */
void tb_temp_path(const char *name, char *path, size_t len);

void tb_string(sqlite3 *db, int64_t id, const char *value);
void tb_thread(sqlite3 *db, int64_t id);
void tb_run(sqlite3 *db, int64_t id, int64_t shape_key_id, int64_t start_ns, int64_t end_ns);
void tb_range(sqlite3 *db, int64_t id, int64_t name_id, int64_t parent_id, int depth, int64_t run_id, int64_t start_ns,
              int64_t end_ns);
/* A successful device allocation on thread 1. */
void tb_alloc(sqlite3 *db, int64_t id, int64_t bytes, int64_t range_id, int64_t run_id, int64_t alloc_ns,
              int64_t free_ns, int64_t free_range_id);
void tb_decl(sqlite3 *db, int level, int64_t name_id, int64_t slot, int64_t bytes);
/* A declaration made inside run_id (NONE: outside every run); returns its id. */
int64_t tb_declare(sqlite3 *db, int level, int64_t name_id, int64_t slot, int64_t bytes, int64_t run_id);
/* Its details (schema version 2): device (NONE: any), tactic name (NULL) and kind (NULL). */
void tb_decl_details(sqlite3 *db, int64_t decl_id, int64_t device, const char *tactic, const char *kind);
void tb_region(sqlite3 *db, int64_t decl_id, int64_t ordinal, const char *name, int64_t offset, int64_t bytes);
/* A successful device allocation on a given device. */
void tb_alloc_on(sqlite3 *db, int64_t id, int64_t bytes, int64_t range_id, int64_t run_id, int64_t alloc_ns,
                 int64_t free_ns, int64_t free_range_id, int64_t device);
void tb_sql(sqlite3 *db, const char *sql);
void tb_write_file(const char *path, const char *text);

/* Run a command with stdout and stderr captured into files; returns its exit status. */
int tb_run_cmd(int (*fn)(int, char **), const char *out_path, const char *err_path, int argc, ...);
/* Whole file as a string (caller frees). */
char *tb_read_file(const char *path);
/* First column of the first row of a query on the trace at path, as an integer (NONE for NULL). */
int64_t tb_query(const char *trace, const char *sql);

/* Remove the temporary folder (a fini of every test). */
void tb_cleanup(void);

#endif
