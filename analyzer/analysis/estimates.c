/*
 * estimates.c - estimates files, JSON or CSV, from a buffer into rows.  Every error is one line
 * naming the input (and the line, or the node and slot).
 */
#include "estimates.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static int estimate_add_alias(struct ws_estimates *est, size_t *cap, const char *node, const char *alias, int kind,
                              int64_t slot, int64_t bytes)
{
    if (est->count == *cap) {
        size_t next = *cap ? *cap * 2 : 64;
        struct ws_estimate *grown = realloc(est->items, next * sizeof *grown);
        if (!grown)
            return -1;
        est->items = grown;
        *cap = next;
    }
    char *copy = strdup(node), *alias_copy = alias ? strdup(alias) : NULL;
    if (!copy || (alias && !alias_copy)) {
        free(copy);
        free(alias_copy);
        return -1;
    }
    est->items[est->count++] = (struct ws_estimate){copy, (uint8_t)kind, slot, bytes, alias_copy};
    return 0;
}

static int estimate_add(struct ws_estimates *est, size_t *cap, const char *node, int kind, int64_t slot, int64_t bytes)
{
    return estimate_add_alias(est, cap, node, NULL, kind, slot, bytes);
}

/* A non-negative decimal integer that fits in int64, with nothing after it. */
static int parse_count(const char *text, int64_t *out)
{
    char *end = NULL;
    if (!text || *text < '0' || *text > '9')
        return -1;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

/* The node facts besides slots, by their JSON key and CSV slot word. */
static const struct {
    const char *json_key, *csv_word;
    int kind;
} facts[] = {
    {"output_bytes", "output", WS_EST_OUTPUT},
    {"input_bytes", "input", WS_EST_INPUT},
    {"initializer_bytes", "initializer", WS_EST_INITIALIZER},
    {"dynamic_bytes", "dynamic", WS_EST_DYNAMIC},
    {"temp_bytes", "temp", WS_EST_TEMP},
};

static int fact_by_json_key(const char *key)
{
    for (size_t i = 0; i < sizeof facts / sizeof facts[0]; i++)
        if (strcmp(key, facts[i].json_key) == 0)
            return facts[i].kind;
    return -1;
}

static int fact_by_csv_word(const char *word)
{
    for (size_t i = 0; i < sizeof facts / sizeof facts[0]; i++)
        if (strcmp(word, facts[i].csv_word) == 0)
            return facts[i].kind;
    return -1;
}

/* ---- JSON ---- */

static int json_bytes(json_t *value, int64_t *out)
{
    if (!json_is_integer(value) || json_integer_value(value) < 0)
        return -1;
    *out = json_integer_value(value);
    return 0;
}

struct json_ctx {
    struct ws_estimates *est;
    size_t cap;
    const char *name;
    char *err;
    size_t errlen;
};

static int json_fail_oom(struct json_ctx *c)
{
    snprintf(c->err, c->errlen, "out of memory");
    return -1;
}

static int json_slots(struct json_ctx *c, const char *node, json_t *slots)
{
    const char *slot_key;
    json_t *slot_value;
    int64_t slot, bytes;
    json_object_foreach(slots, slot_key, slot_value)
    {
        if (parse_count(slot_key, &slot) != 0 || slot > UINT32_MAX) {
            snprintf(c->err, c->errlen, "%s: node '%s': slot '%s' is not a slot number", c->name, node, slot_key);
            return -1;
        }
        if (json_bytes(slot_value, &bytes) != 0) {
            snprintf(c->err, c->errlen, "%s: node '%s' slot %s: bytes must be a non-negative integer", c->name, node,
                     slot_key);
            return -1;
        }
        if (estimate_add(c->est, &c->cap, node, WS_EST_SLOT, slot, bytes) != 0)
            return json_fail_oom(c);
    }
    return 0;
}

static int json_node(struct json_ctx *c, const char *node, json_t *value)
{
    int64_t bytes;
    if (json_is_integer(value)) { /* "NAME": bytes is slot 0 */
        if (json_bytes(value, &bytes) != 0)
            goto bad_bytes;
        return estimate_add(c->est, &c->cap, node, WS_EST_SLOT, 0, bytes) == 0 ? 0 : json_fail_oom(c);
    }
    if (!json_is_object(value)) {
        snprintf(c->err, c->errlen, "%s: node '%s': expected bytes or an object with \"slots\"", c->name, node);
        return -1;
    }
    const char *key;
    json_t *item;
    json_object_foreach(value, key, item)
    {
        int kind = fact_by_json_key(key);
        if (kind >= 0) {
            if (json_bytes(item, &bytes) != 0)
                goto bad_bytes;
            if (estimate_add(c->est, &c->cap, node, kind, -1, bytes) != 0)
                return json_fail_oom(c);
        } else if (strcmp(key, "slots") == 0 && json_is_object(item)) {
            if (json_slots(c, node, item) != 0)
                return -1;
        } else {
            snprintf(c->err, c->errlen,
                     "%s: node '%s': unexpected key '%s' (expected \"slots\", \"output_bytes\", \"input_bytes\", "
                     "\"initializer_bytes\", \"dynamic_bytes\" or \"temp_bytes\")",
                     c->name, node, key);
            return -1;
        }
    }
    return 0;
bad_bytes:
    snprintf(c->err, c->errlen, "%s: node '%s': bytes must be a non-negative integer", c->name, node);
    return -1;
}

static int parse_json(const char *text, size_t len, struct json_ctx *c)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    int rc = -1;
    if (!root) {
        snprintf(c->err, c->errlen, "%s:%d:%d: %s", c->name, jerr.line, jerr.column, jerr.text);
        return -1;
    }
    json_t *nodes = json_object_get(root, "nodes");
    if (!json_is_object(root) || (nodes && !json_is_object(nodes))) {
        snprintf(c->err, c->errlen, "%s: expected an object of node names (or {\"nodes\": {...}})", c->name);
        goto out;
    }
    const char *node;
    json_t *value;
    json_object_foreach(nodes ? nodes : root, node, value)
    {
        if (json_node(c, node, value) != 0)
            goto out;
    }
    rc = 0;
out:
    json_decref(root);
    return rc;
}

/* ---- CSV ---- */

/* Split one CSV line in place into at most max fields ("..." quoting with "" for a quote). */
static int csv_fields(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max)
            return -1;
        char *out = p;
        fields[n++] = p;
        if (*p == '"') {
            p++;
            for (;;) {
                if (*p == '\0')
                    return -1; /* unterminated quote */
                if (*p == '"' && p[1] == '"') {
                    *out++ = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    *out++ = *p++;
                }
            }
            if (*p != ',' && *p != '\0')
                return -1;
        } else {
            while (*p && *p != ',')
                *out++ = *p++;
        }
        int more = *p == ',';
        *out = '\0';
        if (!more)
            return n;
        p++;
    }
}

struct csv_ctx {
    struct ws_estimates *est;
    size_t cap;
    const char *name;
    long lineno;
    char *err;
    size_t errlen;
};

static int csv_line(struct csv_ctx *c, char *line)
{
    char *f[6];
    int64_t slot = -1, bytes;
    int kind = WS_EST_SLOT;
    int nf = csv_fields(line, f, 6);
    if (nf != 3) {
        snprintf(c->err, c->errlen, "%s:%ld: expected 3 columns node,slot,bytes%s", c->name, c->lineno,
                 nf == 5 ? " (an ONNX Runtime node-stats file starts with the line " WS_ORT_STATS_HEADER ")" : "");
        return -1;
    }
    if (c->lineno == 1 && strcmp(f[0], "node") == 0)
        return 0; /* header */
    if (f[0][0] == '\0') {
        snprintf(c->err, c->errlen, "%s:%ld: empty node name", c->name, c->lineno);
        return -1;
    }
    if (fact_by_csv_word(f[1]) >= 0) {
        kind = fact_by_csv_word(f[1]);
    } else if (parse_count(f[1], &slot) != 0 || slot > UINT32_MAX) {
        snprintf(c->err, c->errlen,
                 "%s:%ld: slot '%s' is not a slot number, 'output', 'input', 'initializer', 'dynamic' or 'temp'",
                 c->name, c->lineno, f[1]);
        return -1;
    }
    if (parse_count(f[2], &bytes) != 0) {
        snprintf(c->err, c->errlen, "%s:%ld: bytes '%s' is not a non-negative integer", c->name, c->lineno, f[2]);
        return -1;
    }
    if (estimate_add(c->est, &c->cap, f[0], kind, slot, bytes) != 0) {
        snprintf(c->err, c->errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* Lines end at '\n' (a '\r' before it is dropped); empty lines and '#' comments are skipped. */
static int parse_csv(const char *text, size_t len, struct csv_ctx *c)
{
    char *line = malloc(len + 1);
    int rc = -1;
    if (!line) {
        snprintf(c->err, c->errlen, "out of memory");
        return -1;
    }
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = (nl ? (size_t)(nl - text) : len) - at;
        memcpy(line, text + at, n);
        at += n + (nl != NULL);
        c->lineno++;
        while (n > 0 && line[n - 1] == '\r')
            n--;
        line[n] = '\0';
        if (memchr(line, '\0', n)) {
            snprintf(c->err, c->errlen, "%s:%ld: NUL byte in the line", c->name, c->lineno);
            goto out;
        }
        if (n == 0 || line[0] == '#')
            continue;
        if (csv_line(c, line) != 0)
            goto out;
    }
    rc = 0;
out:
    free(line);
    return rc;
}

/* ---- ONNX Runtime's node-stats file ---- */

/* The name without ORT's unique-name suffix: NAME_DIGITS -> NAME (NULL when there is none). */
static char *ort_alias(const char *name)
{
    const char *us = strrchr(name, '_');
    if (!us || us == name || us[1] == '\0' || strlen(us + 1) > 20)
        return NULL;
    for (const char *p = us + 1; *p; p++)
        if (*p < '0' || *p > '9')
            return NULL;
    return strndup(name, (size_t)(us - name));
}

/* A field ORT reads with std::stoull: here plain decimal digits, blanks around them allowed. */
static int ort_count(char *text, int64_t *out)
{
    while (*text == ' ' || *text == '\t')
        text++;
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t'))
        text[--n] = '\0';
    return parse_count(text, out);
}

/* Split at every ',' in place, empty fields kept (ORT's SplitString with keep_empty); -1 above max. */
static int ort_fields(char *line, char **f, int max)
{
    int n = 0;
    for (char *p = line;; p++) {
        if (n == max)
            return -1;
        f[n++] = p;
        p = strchr(p, ',');
        if (!p)
            return n;
        *p = '\0';
    }
}

static int ort_line(struct csv_ctx *c, char *line)
{
    static const char *const fields[] = {"input_sizes", "initializers_sizes", "total_dynamic_sizes",
                                         "total_temp_allocations"};
    char *f[6];
    int64_t v[4];
    if (ort_fields(line, f, 6) != 5) {
        snprintf(c->err, c->errlen, "%s:%ld: expected 5 fields name,%s,%s,%s,%s (ONNX Runtime's node-stats format)",
                 c->name, c->lineno, fields[0], fields[1], fields[2], fields[3]);
        return -1;
    }
    if (f[0][0] == '\0')
        return 0; /* ORT skips a line without a name */
    for (int i = 0; i < 4; i++)
        if (ort_count(f[i + 1], &v[i]) != 0) {
            snprintf(c->err, c->errlen, "%s:%ld: %s '%s' is not a non-negative integer", c->name, c->lineno, fields[i],
                     f[i + 1]);
            return -1;
        }
    char *alias = ort_alias(f[0]);
    int64_t input = v[1] > INT64_MAX - v[0] ? INT64_MAX : v[0] + v[1]; /* ORT charges the sum (both >= 0) */
    int rc = estimate_add_alias(c->est, &c->cap, f[0], alias, WS_EST_INPUT, -1, input) ||
             estimate_add_alias(c->est, &c->cap, f[0], alias, WS_EST_DYNAMIC, -1, v[2]) ||
             estimate_add_alias(c->est, &c->cap, f[0], alias, WS_EST_TEMP, -1, v[3]);
    free(alias);
    if (rc != 0)
        snprintf(c->err, c->errlen, "out of memory");
    return rc ? -1 : 0;
}

/* Lines as ORT's LoadNodeAllocationStats reads them: empty lines and lines starting with '#' skipped. */
static int parse_ort(const char *text, size_t len, struct csv_ctx *c)
{
    char *line = malloc(len + 1);
    int rc = -1;
    if (!line) {
        snprintf(c->err, c->errlen, "out of memory");
        return -1;
    }
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = (nl ? (size_t)(nl - text) : len) - at;
        memcpy(line, text + at, n);
        at += n + (nl != NULL);
        c->lineno++;
        while (n > 0 && line[n - 1] == '\r')
            n--;
        line[n] = '\0';
        if (memchr(line, '\0', n)) {
            snprintf(c->err, c->errlen, "%s:%ld: NUL byte in the line", c->name, c->lineno);
            goto out;
        }
        if (n == 0 || line[0] == '#')
            continue;
        if (ort_line(c, line) != 0)
            goto out;
    }
    rc = 0;
out:
    free(line);
    return rc;
}

static int starts_with_ort_header(const char *text, size_t len)
{
    size_t h = strlen(WS_ORT_STATS_HEADER);
    return len >= h && memcmp(text, WS_ORT_STATS_HEADER, h) == 0 && (len == h || text[h] == '\n' || text[h] == '\r');
}

int ws_estimates_parse(const char *text, size_t len, const char *name, struct ws_estimates *est, char *err,
                       size_t errlen)
{
    size_t i = 0;
    int rc = -1;
    memset(est, 0, sizeof *est);
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
        i++;
    if (i == len) {
        snprintf(err, errlen, "%s: empty estimates file", name);
        return -1;
    }
    if (text[i] == '{') {
        struct json_ctx c = {est, 0, name, err, errlen};
        rc = parse_json(text, len, &c);
    } else if (starts_with_ort_header(text, len)) {
        struct csv_ctx c = {est, 0, name, 0, err, errlen};
        rc = parse_ort(text, len, &c);
    } else {
        struct csv_ctx c = {est, 0, name, 0, err, errlen};
        rc = parse_csv(text, len, &c);
    }
    if (rc != 0)
        ws_estimates_free(est);
    return rc;
}

int ws_estimates_load(const char *path, struct ws_estimates *est, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0, cap = 0;
    int rc = -1;
    memset(est, 0, sizeof *est);
    FILE *in = fopen(path, "rb");
    if (!in) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    for (;;) {
        if (len == cap) {
            char *grown = realloc(text, cap ? cap * 2 : 65536);
            if (!grown) {
                snprintf(err, errlen, "out of memory");
                goto out;
            }
            text = grown;
            cap = cap ? cap * 2 : 65536;
        }
        size_t got = fread(text + len, 1, cap - len, in);
        len += got;
        if (got == 0)
            break;
    }
    if (ferror(in)) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    rc = ws_estimates_parse(text, len, path, est, err, errlen);
out:
    free(text);
    fclose(in);
    return rc;
}

void ws_estimates_free(struct ws_estimates *est)
{
    for (size_t i = 0; i < est->count; i++) {
        free(est->items[i].node);
        free(est->items[i].alias);
    }
    free(est->items);
    memset(est, 0, sizeof *est);
}
