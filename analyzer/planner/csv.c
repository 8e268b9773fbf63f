/*
 * Planning problems as CSV (rules in docs/planner.md): a header naming id,lower,upper,size and
 * optionally alignment, one buffer a line. A UTF-8 byte order mark, double quotes around a field,
 * \r\n line ends, blank lines and spaces around values are accepted; anything else is refused
 * with one line naming the file and line.
 */

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "planner.h"

enum { COL_ID, COL_LOWER, COL_UPPER, COL_SIZE, COL_ALIGNMENT, COL_MAX };
static const char *const column_names[COL_MAX] = {"id", "lower", "upper", "size", "alignment"};

struct reader {
    const char *path;
    size_t line;
    char *err;
    size_t errlen;
};

static int fail(const struct reader *rd, const char *what, const char *column)
{
    if (column)
        snprintf(rd->err, rd->errlen, "%s:%zu: %s: %s", rd->path, rd->line, column, what);
    else
        snprintf(rd->err, rd->errlen, "%s:%zu: %s", rd->path, rd->line, what);
    return -1;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/* A field may be written "like this" (as spreadsheets write headers). */
static char *unquote(char *s)
{
    size_t n = strlen(s);
    if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
        s[n - 1] = '\0';
        return trim(s + 1);
    }
    return s;
}

/* Split line in place at commas; returns the number of fields (at most max + 1 so that an
 * extra column is noticed). */
static int split(char *line, char **fields, int max)
{
    int n = 0;
    for (char *p = line;; p++) {
        fields[n++] = p;
        p = strchr(p, ',');
        if (!p || n > max)
            break;
        *p = '\0';
    }
    for (int i = 0; i < n; i++)
        fields[i] = unquote(trim(fields[i]));
    return n;
}

/* A non-negative decimal integer up to max; no sign, no spaces inside, no hex. */
static int parse_uint(const struct reader *rd, const char *text, uint64_t max, const char *column, uint64_t *out)
{
    if (*text == '\0')
        return fail(rd, "empty value", column);
    if (*text == '-')
        return fail(rd, "negative value", column);
    uint64_t v = 0;
    for (const char *p = text; *p; p++) {
        if (!isdigit((unsigned char)*p)) {
            char msg[96];
            snprintf(msg, sizeof msg, "not a non-negative integer: '%.40s'", text);
            return fail(rd, msg, column);
        }
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v) || v > max)
            return fail(rd, "value too large", column);
    }
    *out = v;
    return 0;
}

static int parse_header(struct reader *rd, char *line, int *ncols)
{
    char *f[COL_MAX + 1];
    int n = split(line, f, COL_MAX);
    if (n < 4 || n > COL_MAX)
        return fail(rd, "expected the header id,lower,upper,size[,alignment]", NULL);
    for (int i = 0; i < n; i++)
        if (strcasecmp(f[i], column_names[i]) != 0)
            return fail(rd, "expected the header id,lower,upper,size[,alignment]", NULL);
    *ncols = n;
    return 0;
}

static int parse_row(struct reader *rd, char *line, int ncols, struct ws_plan_buffer *b)
{
    char *f[COL_MAX + 1];
    int n = split(line, f, COL_MAX);
    if (n != ncols) {
        char msg[96];
        snprintf(msg, sizeof msg, "expected %d columns, found %d", ncols, n);
        return fail(rd, msg, NULL);
    }
    uint64_t lower, upper;
    memset(b, 0, sizeof *b);
    if (parse_uint(rd, f[COL_ID], UINT64_MAX, "id", &b->id) ||
        parse_uint(rd, f[COL_LOWER], INT64_MAX, "lower", &lower) ||
        parse_uint(rd, f[COL_UPPER], INT64_MAX, "upper", &upper) ||
        parse_uint(rd, f[COL_SIZE], UINT64_MAX, "size", &b->size) ||
        (ncols > COL_ALIGNMENT && parse_uint(rd, f[COL_ALIGNMENT], UINT64_MAX, "alignment", &b->alignment)))
        return -1;
    if (lower > upper)
        return fail(rd, "lower must not be above upper (lifetimes are half-open [lower, upper))", NULL);
    b->lower = (int64_t)lower;
    b->upper = (int64_t)upper;
    return 0;
}

static int cmp_id_line(const void *x, const void *y)
{
    const uint64_t *a = x, *b = y;
    if (a[0] != b[0])
        return a[0] < b[0] ? -1 : 1;
    return a[1] < b[1] ? -1 : a[1] > b[1];
}

/* Duplicate ids would make the output ambiguous; report the second occurrence. */
static int check_unique_ids(struct reader *rd, const struct ws_plan_buffer *b, const size_t *lines, size_t n)
{
    uint64_t(*ids)[2] = malloc(n * sizeof *ids + 1);
    if (!ids) {
        snprintf(rd->err, rd->errlen, "%s: out of memory", rd->path);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        ids[i][0] = b[i].id, ids[i][1] = lines[i];
    qsort(ids, n, sizeof *ids, cmp_id_line);
    int rc = 0;
    for (size_t i = 1; i < n && rc == 0; i++)
        if (ids[i][0] == ids[i - 1][0]) {
            rd->line = (size_t)ids[i][1];
            char msg[96];
            snprintf(msg, sizeof msg, "duplicate id %" PRIu64 " (first on line %" PRIu64 ")", ids[i][0], ids[i - 1][1]);
            rc = fail(rd, msg, NULL);
        }
    free(ids);
    return rc;
}

static int grow(struct ws_problem *pr, size_t **lines, size_t *cap)
{
    size_t c = *cap ? *cap * 2 : 1024;
    struct ws_plan_buffer *b = realloc(pr->buffers, c * sizeof *b);
    if (!b)
        return -1;
    pr->buffers = b;
    size_t *l = realloc(*lines, c * sizeof *l);
    if (!l)
        return -1;
    *lines = l;
    *cap = c;
    return 0;
}

int ws_problem_read(const char *path, struct ws_problem *pr, char *err, size_t errlen)
{
    struct reader rd = {path, 0, err, errlen};
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t linecap = 0, cap = 0, *lines = NULL;
    int ncols = 0, rc = -1;
    memset(pr, 0, sizeof *pr);
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    while (getline(&line, &linecap, f) >= 0) {
        rd.line++;
        char *text = line;
        if (rd.line == 1 && (unsigned char)text[0] == 0xef && (unsigned char)text[1] == 0xbb &&
            (unsigned char)text[2] == 0xbf)
            text += 3; /* UTF-8 byte order mark */
        text = trim(text);
        if (*text == '\0')
            continue; /* blank lines, e.g. at the end */
        if (ncols == 0) {
            if (parse_header(&rd, text, &ncols))
                goto out;
            continue;
        }
        if (pr->n == cap && grow(pr, &lines, &cap)) {
            snprintf(err, errlen, "%s: out of memory", path);
            goto out;
        }
        if (parse_row(&rd, text, ncols, &pr->buffers[pr->n]))
            goto out;
        lines[pr->n++] = rd.line;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
        goto out;
    }
    if (ncols == 0) {
        snprintf(err, errlen, "%s: empty file (expected the header id,lower,upper,size[,alignment])", path);
        goto out;
    }
    if (pr->n == 0) {
        snprintf(err, errlen, "%s: no buffers after the header", path);
        goto out;
    }
    if (check_unique_ids(&rd, pr->buffers, lines, pr->n))
        goto out;
    pr->has_alignment = ncols > COL_ALIGNMENT;
    rc = 0;
out:
    if (rc)
        ws_problem_free(pr);
    free(line);
    free(lines);
    fclose(f);
    return rc;
}

int ws_problem_write(FILE *f, const struct ws_problem *pr)
{
    if (fputs(pr->has_alignment ? "id,lower,upper,size,alignment,offset\n" : "id,lower,upper,size,offset\n", f) < 0)
        return -1;
    for (size_t i = 0; i < pr->n; i++) {
        const struct ws_plan_buffer *b = &pr->buffers[i];
        int w = pr->has_alignment
                    ? fprintf(f, "%" PRIu64 ",%" PRId64 ",%" PRId64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", b->id,
                              b->lower, b->upper, b->size, b->alignment, b->offset)
                    : fprintf(f, "%" PRIu64 ",%" PRId64 ",%" PRId64 ",%" PRIu64 ",%" PRIu64 "\n", b->id, b->lower,
                              b->upper, b->size, b->offset);
        if (w < 0)
            return -1;
    }
    return ferror(f) ? -1 : 0;
}

void ws_problem_free(struct ws_problem *pr)
{
    free(pr->buffers);
    pr->buffers = NULL;
    pr->n = 0;
}
