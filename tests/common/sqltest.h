/* SQL helpers shared by the Criterion suites: run statements and read one integer, asserting
 * that SQLite accepted them (a test's own SQL failing is a broken test, not a finding). */
#ifndef WS_SQLTEST_H
#define WS_SQLTEST_H

#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdint.h>

static inline void sqltest_exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, &msg), SQLITE_OK, "%s: %s", sql, msg ? msg : "");
}

static inline int64_t sqltest_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s: no row", sql);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

#endif
