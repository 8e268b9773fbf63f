#include "output.h"

#include <stdlib.h>
#include <string.h>

#include "outfile.h"

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
        for (char *p = dst[c]; *p; p++) /* a line break in a name would break the table */
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                *p = ' ';
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

/* ---- names as text of each output format ------------------------------------------------------ */

static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */

json_t *ws_json_text(const char *s)
{
    if (!s)
        return json_null();
    json_t *v = json_string(s);
    if (v)
        return v;
    size_t len = strlen(s) * 3 + 1; /* each byte becomes at most three */
    char *copy = malloc(len);
    if (!copy)
        return NULL;
    ws_utf8_sanitize(s, copy, len);
    v = json_string(copy);
    free(copy);
    return v;
}

/* Write s with each byte outside a valid UTF-8 sequence as U+FFFD; each ASCII character c goes
 * through put(out, c). */
static void put_utf8(FILE *out, const char *s, void (*put)(FILE *, unsigned char))
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = ws_utf8_sequence(p);
        if (n == 0) {
            fputs(replacement, out);
            p++;
        } else if (n == 1) {
            put(out, *p++);
        } else {
            fwrite(p, 1, n, out);
            p += n;
        }
    }
}

static void md_char(FILE *out, unsigned char c)
{
    if (c == '|')
        fputs("\\|", out);
    else if (c < 0x20 || c == 0x7f)
        fputc(' ', out);
    else
        fputc(c, out);
}

static void md_code_char(FILE *out, unsigned char c) { md_char(out, c == '`' ? '\'' : c); }

void ws_md_code(FILE *out, const char *s)
{
    fputc('`', out);
    put_utf8(out, s ? s : "", md_code_char);
    fputc('`', out);
}

void ws_md_text(FILE *out, const char *s) { put_utf8(out, s ? s : "", md_char); }

static void xml_char(FILE *out, unsigned char c)
{
    switch (c) {
    case '&': fputs("&amp;", out); break;
    case '<': fputs("&lt;", out); break;
    case '>': fputs("&gt;", out); break;
    case '"': fputs("&quot;", out); break;
    case '\'': fputs("&apos;", out); break;
    default:
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
            fputs(replacement, out);
        else
            fputc(c, out);
    }
}

void ws_xml_text(FILE *out, const char *s) { put_utf8(out, s ? s : "", xml_char); }
