#include "output.h"

#include <stdlib.h>
#include <string.h>

char *ws_format_bytes(int64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 0) {
        snprintf(buf, len, "-");
        return buf;
    }
    if (bytes < 1024) {
        snprintf(buf, len, "%lld B", (long long)bytes);
        return buf;
    }
    double v = (double)bytes / 1024.0;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, len, "%.1f %s", v, units[u]);
    return buf;
}

char *ws_format_share(int64_t part, int64_t whole, char *buf, size_t len)
{
    if (whole <= 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.1f %%", 100.0 * (double)part / (double)whole);
    return buf;
}

void ws_table_init(struct ws_table *t, int ncols, const char *const *headers, const char *align)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols < WS_TABLE_MAX_COLS ? ncols : WS_TABLE_MAX_COLS;
    t->headers = headers;
    t->align = align;
}

int ws_table_add(struct ws_table *t, const char *const *row)
{
    if (t->rows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        char **cells = realloc(t->cells, cap * (size_t)t->ncols * sizeof *cells);
        if (!cells)
            return -1;
        t->cells = cells;
        t->cap = cap;
    }
    char **dst = &t->cells[t->rows * (size_t)t->ncols];
    for (int c = 0; c < t->ncols; c++) {
        dst[c] = strdup(row[c] ? row[c] : "");
        if (!dst[c]) {
            while (c-- > 0)
                free(dst[c]);
            return -1;
        }
    }
    t->rows++;
    return 0;
}

static void print_row(const struct ws_table *t, const char *const *row, const int *width, FILE *out)
{
    for (int c = 0; c < t->ncols; c++) {
        int last = c + 1 == t->ncols;
        if (t->align[c] == 'r')
            fprintf(out, "%*s", width[c], row[c]);
        else if (last) /* no trailing blanks after the last column */
            fputs(row[c], out);
        else
            fprintf(out, "%-*s", width[c], row[c]);
        fputs(last ? "\n" : "  ", out);
    }
}

void ws_table_print(const struct ws_table *t, FILE *out)
{
    int width[WS_TABLE_MAX_COLS] = {0};
    for (int c = 0; c < t->ncols; c++)
        width[c] = (int)strlen(t->headers[c]);
    for (size_t r = 0; r < t->rows; r++)
        for (int c = 0; c < t->ncols; c++) {
            int w = (int)strlen(t->cells[r * (size_t)t->ncols + c]);
            if (w > width[c])
                width[c] = w;
        }
    print_row(t, t->headers, width, out);
    for (size_t r = 0; r < t->rows; r++)
        print_row(t, (const char *const *)&t->cells[r * (size_t)t->ncols], width, out);
}

void ws_table_free(struct ws_table *t)
{
    for (size_t i = 0; i < t->rows * (size_t)t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
}

json_t *ws_json_bytes(int64_t bytes) { return bytes < 0 ? json_null() : json_integer(bytes); }

int ws_json_print(json_t *root, FILE *out)
{
    int rc = root ? json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : -1;
    if (rc == 0)
        fputc('\n', out);
    json_decref(root);
    return rc == 0 ? 0 : -1;
}
