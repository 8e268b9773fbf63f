/*
 * rules.c - session.name_based_layer_assignment as ONNX Runtime reads and applies it
 * (partition.h): LayeringRules::FromConfigString, the name-based checks of LayeringIndex::Create,
 * and SubstringMatcher (longest pattern first, the first of equal length).
 */
#include "partition.h"

#include <stdlib.h>
#include <string.h>

static int blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* A trimmed copy of [s, s + n). */
static char *trimmed(const char *s, size_t n)
{
    while (n > 0 && blank(*s))
        s++, n--;
    while (n > 0 && blank(s[n - 1]))
        n--;
    return strndup(s, n);
}

void ws_part_rules_free(struct ws_part_rules *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].device);
        free(r->v[i].pattern);
    }
    free(r->v);
    free(r->ignored);
    memset(r, 0, sizeof *r);
}

static int duplicate(const struct ws_part_rules *r, const char *pattern)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->v[i].pattern, pattern) == 0)
            return 1;
    return 0;
}

/* The patterns between the parentheses of one group. */
static int patterns(struct ws_part_rules *r, const char *device, const char *list, size_t len, size_t entry, char *err,
                    size_t errlen)
{
    for (size_t at = 0; at <= len;) {
        const char *comma = memchr(list + at, ',', len - at);
        size_t n = (comma ? (size_t)(comma - list) : len) - at;
        char *p = trimmed(list + at, n);
        at += n + 1;
        if (!p)
            goto oom;
        if (p[0] == '=') { /* ORT strips it, and refuses it in name-based rules unless nothing follows */
            char *rest = trimmed(p + 1, strlen(p + 1));
            int empty = rest && rest[0] == '\0';
            free(rest);
            if (!empty) {
                snprintf(err, errlen,
                         "rules: '%s': name-based assignment takes substrings, not the '=' of exact matches", p);
                free(p);
                return -1;
            }
            p[0] = '\0';
        }
        if (p[0] == '\0') {
            free(p);
            continue;
        }
        if (duplicate(r, p)) {
            snprintf(err, errlen, "rules: pattern '%s' is given twice (ONNX Runtime refuses the setting)", p);
            free(p);
            return -1;
        }
        struct ws_part_rule *grown = realloc(r->v, (r->n + 1) * sizeof *grown);
        char *d = strdup(device);
        if (!grown || !d) {
            free(p), free(d);
            if (grown)
                r->v = grown;
            goto oom;
        }
        r->v = grown;
        r->v[r->n++] = (struct ws_part_rule){d, p, entry};
    }
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}

static int entry(struct ws_part_rules *r, const char *e, size_t entry_no, char *err, size_t errlen)
{
    const char *open = strchr(e, '('), *close = strchr(e, ')');
    if (!open || !close || close < open) {
        snprintf(err, errlen, "rules: '%s': %s", e,
                 !open    ? "no '(' after the device"
                 : !close ? "no ')' after the patterns"
                          : "')' comes before '('");
        return -1;
    }
    char *device = trimmed(e, (size_t)(open - e));
    if (!device) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (device[0] == '\0') {
        snprintf(err, errlen, "rules: '%s': no device before '('", e);
        free(device);
        return -1;
    }
    if (close[1] && !r->ignored && !(r->ignored = strdup(close + 1))) {
        free(device);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = patterns(r, device, open + 1, (size_t)(close - open - 1), entry_no, err, errlen);
    free(device);
    return rc;
}

int ws_part_rules_parse(const char *text, struct ws_part_rules *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    size_t len = strlen(text), entries = 0;
    for (size_t at = 0; at <= len;) {
        const char *semi = memchr(text + at, ';', len - at);
        size_t n = (semi ? (size_t)(semi - text) : len) - at;
        char *e = trimmed(text + at, n);
        at += n + 1;
        if (!e) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        int rc = e[0] ? entry(r, e, entries++, err, errlen) : 0;
        free(e);
        if (rc != 0)
            goto fail;
    }
    if (r->n == 0) {
        snprintf(err, errlen, "rules: no pattern in '%s' (expected DEVICE(PATTERN, ...); ...)", text);
        goto fail;
    }
    return 0;
fail:
    ws_part_rules_free(r);
    return -1;
}

int32_t ws_part_rules_match(const struct ws_part_rules *r, const char *name)
{
    int32_t best = -1;
    size_t best_len = 0;
    for (size_t i = 0; i < r->n; i++) {
        size_t len = strlen(r->v[i].pattern);
        if ((best < 0 || len > best_len) && strstr(name, r->v[i].pattern)) {
            best = (int32_t)i;
            best_len = len;
        }
    }
    return best;
}
