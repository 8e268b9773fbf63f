/*
 * Output shared by the analysis commands: byte sizes for people ("12.5 MiB"), aligned text
 * tables for a terminal, and JSON through Jansson.
 */
#ifndef WS_OUTPUT_H
#define WS_OUTPUT_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

/* "512 B", "12.5 KiB", "1.0 GiB"; "-" for a negative (absent) value.  Returns buf. */
char *ws_format_bytes(int64_t bytes, char *buf, size_t len);

/* "66.7 %" of part in whole ("-" when whole is 0).  Returns buf. */
char *ws_format_share(int64_t part, int64_t whole, char *buf, size_t len);

#define WS_TABLE_MAX_COLS 16

/* A text table (at most WS_TABLE_MAX_COLS columns): cells are copied; columns are sized to their widest cell when
 * printed. */
struct ws_table {
    int ncols;
    const char *const *headers;
    const char *align; /* one 'l' or 'r' per column */
    char **cells;      /* rows * ncols */
    size_t rows, cap;
};

void ws_table_init(struct ws_table *t, int ncols, const char *const *headers, const char *align);
/* Add one row of ncols strings; returns -1 when out of memory. */
int ws_table_add(struct ws_table *t, const char *const *row);
void ws_table_print(const struct ws_table *t, FILE *out);
void ws_table_free(struct ws_table *t);

/* Bytes as JSON: an integer, or null for a negative (absent) value. */
json_t *ws_json_bytes(int64_t bytes);

/* Print root as indented JSON followed by a newline and release it; -1 on failure. */
int ws_json_print(json_t *root, FILE *out);

#endif
