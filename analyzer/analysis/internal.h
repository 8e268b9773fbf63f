/* Helpers shared by the files of analyzer/analysis/; not part of its interface. */
#ifndef WS_ANALYSIS_INTERNAL_H
#define WS_ANALYSIS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#include "analysis.h"

/* Grow *pp (elements of size elem) so that it holds at least n + 1 elements; -1: out of memory. */
int ws_grow(void *pp, size_t *cap, size_t n, size_t elem);

/* An integer column, or `none` when it is NULL. */
int64_t ws_column_or(sqlite3_stmt *st, int col, int64_t none);

/* "what: sqlite's message" into err; returns -1. */
int ws_sql_fail(sqlite3 *db, const char *what, char *err, size_t errlen);

/* Steps of the tree walks are bounded by the number of ranges (a damaged parent chain cannot
 * loop).  Both return -1 for no range. */
int32_t ws_owner_of(const struct ws_analysis *an, int32_t range);
int ws_range_inside(const struct ws_analysis *an, int32_t range, int32_t ancestor);

/* One row read or one event swept, for the progress line of ws_analysis_load (load.c). */
void ws_load_tick(void);

/* Occurrence-level work after loading (lifetimes.c). */
int ws_lifetimes_compute(struct ws_analysis *an, char *err, size_t errlen);
void ws_classify(const struct ws_analysis *an, struct ws_lifetime *a);

#endif
