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

/*
 * Names recorded from a program (node names, shape keys, kernel names) and paths are bytes: they
 * need not be UTF-8.  Every output stays valid whatever they hold:
 *  - JSON: each byte that is not part of a valid UTF-8 sequence becomes U+FFFD;
 *  - Markdown: the same, and control characters (line breaks included) become a blank, so a
 *    name stays inside its table cell;
 *  - XML (SVG): the same as JSON, markup characters escaped, and the control characters XML 1.0
 *    forbids become U+FFFD.
 */

/* A JSON string of s (json_null() for NULL); NULL only when out of memory. */
json_t *ws_json_text(const char *s);

/* s as a Markdown code span inside a table cell: '|' escaped, '`' shown as '\''. */
void ws_md_code(FILE *out, const char *s);

/* s as Markdown text inside a table cell: '|' escaped. */
void ws_md_text(FILE *out, const char *s);

/* s as XML character data or attribute value. */
void ws_xml_text(FILE *out, const char *s);

#endif
