/*
 * A strict reader of the pickle subset that PyTorch memory snapshots use: plain data only.
 * It builds values; it has no notion of a class, a callable or a module, so opcodes that
 * would name one (GLOBAL, STACK_GLOBAL, INST, OBJ) or call one (REDUCE, BUILD, NEWOBJ,
 * NEWOBJ_EX), and persistent ids and extension codes, end the read with an error.
 * Every length is checked against the bytes that remain; memo indices and the stack are bounded.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"

#define MEMO_MAX  (1u << 24)
#define STACK_MAX (1u << 24)

struct ws_pickle {
    struct ws_pv **values; /* every value made, for freeing */
    size_t nvalues, capvalues;
    struct ws_pv **stack;
    size_t depth, capstack;
    size_t *marks;
    size_t nmarks, capmarks;
    struct ws_pv **memo;
    size_t capmemo;
    const unsigned char *p, *end, *start;
    char *err;
    size_t errlen;
};

static int perr(struct ws_pickle *k, const char *fmt, const char *what) __attribute__((format(printf, 2, 0)));
static int perr(struct ws_pickle *k, const char *fmt, const char *what)
{
    char line[640];
    snprintf(line, sizeof line, fmt, what ? what : "");
    snprintf(k->err, k->errlen, "offset %ld: %s", (long)(k->p - k->start), line);
    return -1;
}

static int grow_array(void *pp, size_t *cap, size_t need, size_t elem)
{
    void **p = pp;
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -1;
    memset((char *)q + *cap * elem, 0, (n - *cap) * elem);
    *p = q;
    *cap = n;
    return 0;
}

static struct ws_pv *new_value(struct ws_pickle *k, uint8_t kind)
{
    if (grow_array(&k->values, &k->capvalues, k->nvalues + 1, sizeof *k->values) != 0)
        return NULL;
    struct ws_pv *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->kind = kind;
    k->values[k->nvalues++] = v;
    return v;
}

static int push(struct ws_pickle *k, struct ws_pv *v)
{
    if (!v)
        return perr(k, "out of memory%s", NULL);
    if (k->depth >= STACK_MAX)
        return perr(k, "the pickle nests too deeply%s", NULL);
    if (grow_array(&k->stack, &k->capstack, k->depth + 1, sizeof *k->stack) != 0)
        return perr(k, "out of memory%s", NULL);
    k->stack[k->depth++] = v;
    return 0;
}

static struct ws_pv *pop(struct ws_pickle *k)
{
    size_t floor = k->nmarks ? k->marks[k->nmarks - 1] : 0;
    if (k->depth <= floor) {
        perr(k, "the pickle pops from an empty stack%s", NULL);
        return NULL;
    }
    return k->stack[--k->depth];
}

static struct ws_pv *top(struct ws_pickle *k)
{
    size_t floor = k->nmarks ? k->marks[k->nmarks - 1] : 0;
    if (k->depth <= floor) {
        perr(k, "the pickle reads an empty stack%s", NULL);
        return NULL;
    }
    return k->stack[k->depth - 1];
}

static int need(struct ws_pickle *k, uint64_t n)
{
    if ((uint64_t)(k->end - k->p) < n)
        return perr(k, "the pickle is truncated%s", NULL);
    return 0;
}

static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static int add_item(struct ws_pickle *k, struct ws_pv *c, struct ws_pv *item)
{
    if (grow_array(&c->items, &c->cap, c->len + 1, sizeof *c->items) != 0)
        return perr(k, "out of memory%s", NULL);
    c->items[c->len++] = item;
    return 0;
}

static int push_text(struct ws_pickle *k, uint8_t kind, const unsigned char *s, size_t n)
{
    struct ws_pv *v = new_value(k, kind);
    char *copy = v ? malloc(n + 1) : NULL;
    if (!copy)
        return perr(k, "out of memory%s", NULL);
    memcpy(copy, s, n);
    copy[n] = 0;
    v->s = copy;
    v->len = n;
    return push(k, v);
}

static int push_int(struct ws_pickle *k, int64_t i, uint8_t kind)
{
    struct ws_pv *v = new_value(k, kind);
    if (v)
        v->i = i;
    return push(k, v);
}

/* Little-endian two's complement of n bytes (LONG1, LONG4). */
static int push_long(struct ws_pickle *k, uint64_t n)
{
    if (need(k, n) != 0)
        return -1;
    const unsigned char *b = k->p;
    k->p += n;
    if (n == 0)
        return push_int(k, 0, WS_PV_INT);
    if (n > 8 && !(n == 9 && b[8] == 0)) { /* beyond 64 bits: kept as a big integer without its value */
        struct ws_pv *v = new_value(k, WS_PV_BIGINT);
        return push(k, v);
    }
    uint64_t v = le(b, n > 8 ? 8 : (int)n);
    if (n < 8 && (b[n - 1] & 0x80))
        v |= ~0ull << (8 * n); /* sign extension */
    return push_int(k, (int64_t)v, WS_PV_INT);
}

/* The rest of a text line (protocol 0), without its newline. */
static int line(struct ws_pickle *k, const unsigned char **s, size_t *n)
{
    const unsigned char *nl = memchr(k->p, '\n', (size_t)(k->end - k->p));
    if (!nl)
        return perr(k, "the pickle is truncated%s", NULL);
    *s = k->p;
    *n = (size_t)(nl - k->p);
    k->p = nl + 1;
    return 0;
}

static int text_number(struct ws_pickle *k, const unsigned char *s, size_t n, int64_t *out)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return perr(k, "the pickle holds a malformed number%s", NULL);
    memcpy(buf, s, n);
    buf[n] = 0;
    if (buf[n - 1] == 'L')
        buf[n - 1] = 0;
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || end == buf || *end)
        return perr(k, "the pickle holds a malformed number%s", NULL);
    *out = v;
    return 0;
}

static int put_utf8(unsigned char *out, size_t *o, uint32_t c)
{
    if (c < 0x80)
        out[(*o)++] = (unsigned char)c;
    else if (c < 0x800) {
        out[(*o)++] = (unsigned char)(0xc0 | (c >> 6));
        out[(*o)++] = (unsigned char)(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
        out[(*o)++] = (unsigned char)(0xe0 | (c >> 12));
        out[(*o)++] = (unsigned char)(0x80 | ((c >> 6) & 0x3f));
        out[(*o)++] = (unsigned char)(0x80 | (c & 0x3f));
    } else if (c < 0x110000) {
        out[(*o)++] = (unsigned char)(0xf0 | (c >> 18));
        out[(*o)++] = (unsigned char)(0x80 | ((c >> 12) & 0x3f));
        out[(*o)++] = (unsigned char)(0x80 | ((c >> 6) & 0x3f));
        out[(*o)++] = (unsigned char)(0x80 | (c & 0x3f));
    } else
        return -1;
    return 0;
}

static int hexval(int c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* STRING ('...' with backslash escapes) and UNICODE (raw-unicode-escape: \uXXXX, \UXXXXXXXX). */
static int text_string(struct ws_pickle *k, const unsigned char *s, size_t n, int quoted)
{
    if (quoted) {
        if (n < 2 || s[0] != s[n - 1] || (s[0] != '\'' && s[0] != '"'))
            return perr(k, "the pickle holds a malformed string%s", NULL);
        s++;
        n -= 2;
    }
    unsigned char *out = malloc(n * 4 + 1);
    size_t o = 0;
    if (!out)
        return perr(k, "out of memory%s", NULL);
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\' || i + 1 >= n) {
            out[o++] = s[i];
            continue;
        }
        unsigned char e = s[++i];
        int digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
        if (!quoted && e != 'u' && e != 'U') {
            out[o++] = '\\';
            out[o++] = e;
            continue;
        }
        if (digits) {
            uint32_t c = 0;
            if (i + (size_t)digits >= n) {
                free(out);
                return perr(k, "the pickle holds a malformed escape%s", NULL);
            }
            for (int d = 1; d <= digits; d++) {
                int h = hexval(s[i + (size_t)d]);
                if (h < 0) {
                    free(out);
                    return perr(k, "the pickle holds a malformed escape%s", NULL);
                }
                c = c * 16 + (uint32_t)h;
            }
            i += (size_t)digits;
            if (put_utf8(out, &o, c) != 0) {
                free(out);
                return perr(k, "the pickle holds a malformed escape%s", NULL);
            }
            continue;
        }
        out[o++] = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == '0' ? '\0' : e;
    }
    int rc = push_text(k, WS_PV_STR, out, o);
    free(out);
    return rc;
}

static int memo_put(struct ws_pickle *k, uint64_t index)
{
    struct ws_pv *v = top(k);
    if (!v)
        return -1;
    if (index >= MEMO_MAX || index > (uint64_t)(k->end - k->start))
        return perr(k, "the pickle uses a memo index out of range%s", NULL);
    if (grow_array(&k->memo, &k->capmemo, (size_t)index + 1, sizeof *k->memo) != 0)
        return perr(k, "out of memory%s", NULL);
    k->memo[index] = v;
    return 0;
}

static int memo_get(struct ws_pickle *k, uint64_t index)
{
    if (index >= k->capmemo || !k->memo[index])
        return perr(k, "the pickle refers to a memo entry it never stored%s", NULL);
    return push(k, k->memo[index]);
}

static size_t memo_next(const struct ws_pickle *k)
{
    size_t n = k->capmemo;
    while (n > 0 && !k->memo[n - 1])
        n--;
    return n;
}

static int mark(struct ws_pickle *k)
{
    if (grow_array(&k->marks, &k->capmarks, k->nmarks + 1, sizeof *k->marks) != 0)
        return perr(k, "out of memory%s", NULL);
    k->marks[k->nmarks++] = k->depth;
    return 0;
}

/* Pop everything above the last MARK into a new container of that kind. */
static int collect(struct ws_pickle *k, uint8_t kind)
{
    if (k->nmarks == 0)
        return perr(k, "the pickle closes a MARK it never opened%s", NULL);
    size_t from = k->marks[--k->nmarks];
    struct ws_pv *c = new_value(k, kind);
    if (!c)
        return perr(k, "out of memory%s", NULL);
    size_t n = k->depth - from;
    if (kind == WS_PV_DICT && n % 2)
        return perr(k, "the pickle builds a dict of an odd number of items%s", NULL);
    for (size_t i = from; i < k->depth; i++)
        if (add_item(k, c, k->stack[i]) != 0)
            return -1;
    if (kind == WS_PV_DICT)
        c->len /= 2; /* pairs; items keeps 2 * len entries */
    k->depth = from;
    return push(k, c);
}

static int dict_set(struct ws_pickle *k, struct ws_pv *d, struct ws_pv *key, struct ws_pv *val)
{
    if (d->kind != WS_PV_DICT)
        return perr(k, "the pickle sets an item of something that is not a dict%s", NULL);
    if (grow_array(&d->items, &d->cap, 2 * d->len + 2, sizeof *d->items) != 0)
        return perr(k, "out of memory%s", NULL);
    d->items[2 * d->len] = key;
    d->items[2 * d->len + 1] = val;
    d->len++;
    return 0;
}

static int set_items(struct ws_pickle *k)
{
    if (k->nmarks == 0)
        return perr(k, "the pickle closes a MARK it never opened%s", NULL);
    size_t from = k->marks[--k->nmarks];
    if (from == 0)
        return perr(k, "the pickle sets items with no dict below them%s", NULL);
    struct ws_pv *d = k->stack[from - 1];
    if ((k->depth - from) % 2)
        return perr(k, "the pickle sets an odd number of dict items%s", NULL);
    for (size_t i = from; i < k->depth; i += 2)
        if (dict_set(k, d, k->stack[i], k->stack[i + 1]) != 0)
            return -1;
    k->depth = from;
    return 0;
}

static int append_items(struct ws_pickle *k)
{
    if (k->nmarks == 0)
        return perr(k, "the pickle closes a MARK it never opened%s", NULL);
    size_t from = k->marks[--k->nmarks];
    if (from == 0 || k->stack[from - 1]->kind != WS_PV_LIST)
        return perr(k, "the pickle appends to something that is not a list%s", NULL);
    for (size_t i = from; i < k->depth; i++)
        if (add_item(k, k->stack[from - 1], k->stack[i]) != 0)
            return -1;
    k->depth = from;
    return 0;
}

static int tuple_of(struct ws_pickle *k, size_t n)
{
    size_t floor = k->nmarks ? k->marks[k->nmarks - 1] : 0;
    if (k->depth < floor + n)
        return perr(k, "the pickle builds a tuple from an empty stack%s", NULL);
    struct ws_pv *t = new_value(k, WS_PV_TUPLE);
    if (!t)
        return perr(k, "out of memory%s", NULL);
    for (size_t i = k->depth - n; i < k->depth; i++)
        if (add_item(k, t, k->stack[i]) != 0)
            return -1;
    k->depth -= n;
    return push(k, t);
}

/* A refused opcode: name it, and for GLOBAL what it would have imported. */
static int refuse(struct ws_pickle *k, unsigned char op)
{
    static const struct {
        unsigned char op;
        const char *name;
    } names[] = {
        {'c', "GLOBAL"},     {0x93, "STACK_GLOBAL"}, {'R', "REDUCE"},          {'b', "BUILD"},      {'i', "INST"},
        {'o', "OBJ"},        {0x81, "NEWOBJ"},       {0x92, "NEWOBJ_EX"},      {'P', "PERSID"},     {'Q', "BINPERSID"},
        {0x82, "EXT1"},      {0x83, "EXT2"},         {0x84, "EXT4"},           {0x8f, "EMPTY_SET"}, {0x90, "ADDITEMS"},
        {0x91, "FROZENSET"}, {0x97, "NEXT_BUFFER"},  {0x98, "READONLY_BUFFER"}};
    char what[256];
    const char *name = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].op == op)
            name = names[i].name;
    if (!name) {
        snprintf(what, sizeof what, "unknown opcode 0x%02x", op);
        return perr(k, "the pickle holds an %s: not a PyTorch memory snapshot", what);
    }
    if (op == 'c' || op == 'i') { /* module and name follow as two lines: show them, never resolve them */
        const unsigned char *a = k->p + 1, *nl1 = memchr(a, '\n', (size_t)(k->end - a));
        const unsigned char *nl2 = nl1 ? memchr(nl1 + 1, '\n', (size_t)(k->end - nl1 - 1)) : NULL;
        if (nl2) {
            int la = (int)(nl1 - a), lb = (int)(nl2 - nl1 - 1);
            snprintf(what, sizeof what, "%s '%.*s.%.*s'", name, la > 80 ? 80 : la, (const char *)a, lb > 80 ? 80 : lb,
                     (const char *)nl1 + 1);
            for (char *c = what; *c; c++)
                if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
                    *c = '?';
            return perr(k, "the pickle would import %s; a memory snapshot holds only plain data, so it is refused",
                        what);
        }
    }
    return perr(k,
                "the pickle uses %s, which would import or call code; a memory snapshot holds only plain data, so "
                "it is refused",
                name);
}

static int step_op(struct ws_pickle *k, int *stop)
{
    unsigned char op = *k->p++;
    const unsigned char *s;
    size_t n;
    int64_t num;
    struct ws_pv *a, *b, *c;
    switch (op) {
    case 0x80: return need(k, 1) ? -1 : (k->p[0] > 5 ? perr(k, "unsupported pickle protocol%s", NULL) : (k->p++, 0));
    case 0x95: return need(k, 8) ? -1 : (k->p += 8, 0); /* FRAME: a length hint */
    case '.': *stop = 1; return 0;
    case '(': return mark(k);
    case '}': return push(k, new_value(k, WS_PV_DICT));
    case ']': return push(k, new_value(k, WS_PV_LIST));
    case ')': return push(k, new_value(k, WS_PV_TUPLE));
    case 'd': return collect(k, WS_PV_DICT);
    case 'l': return collect(k, WS_PV_LIST);
    case 't': return collect(k, WS_PV_TUPLE);
    case 0x85: return tuple_of(k, 1);
    case 0x86: return tuple_of(k, 2);
    case 0x87: return tuple_of(k, 3);
    case 's':
        if (!(c = pop(k)) || !(b = pop(k)) || !(a = top(k)))
            return -1;
        return dict_set(k, a, b, c);
    case 'u': return set_items(k);
    case 'a':
        if (!(b = pop(k)) || !(a = top(k)))
            return -1;
        if (a->kind != WS_PV_LIST)
            return perr(k, "the pickle appends to something that is not a list%s", NULL);
        return add_item(k, a, b);
    case 'e': return append_items(k);
    case 'N': return push(k, new_value(k, WS_PV_NONE));
    case 0x88: return push_int(k, 1, WS_PV_BOOL);
    case 0x89: return push_int(k, 0, WS_PV_BOOL);
    case 'J': return need(k, 4) ? -1 : (k->p += 4, push_int(k, (int32_t)(uint32_t)le(k->p - 4, 4), WS_PV_INT));
    case 'K': return need(k, 1) ? -1 : (k->p += 1, push_int(k, k->p[-1], WS_PV_INT));
    case 'M': return need(k, 2) ? -1 : (k->p += 2, push_int(k, (int64_t)le(k->p - 2, 2), WS_PV_INT));
    case 0x8a: return need(k, 1) ? -1 : (k->p += 1, push_long(k, k->p[-1]));
    case 0x8b:
        if (need(k, 4) != 0)
            return -1;
        k->p += 4;
        return push_long(k, le(k->p - 4, 4));
    case 'I':
        if (line(k, &s, &n) != 0)
            return -1;
        if (n == 2 && s[0] == '0' && (s[1] == '0' || s[1] == '1'))
            return push_int(k, s[1] == '1', WS_PV_BOOL);
        return text_number(k, s, n, &num) != 0 ? -1 : push_int(k, num, WS_PV_INT);
    case 'L': return line(k, &s, &n) != 0 || text_number(k, s, n, &num) != 0 ? -1 : push_int(k, num, WS_PV_INT);
    case 'F': {
        char buf[64];
        if (line(k, &s, &n) != 0)
            return -1;
        if (n == 0 || n >= sizeof buf)
            return perr(k, "the pickle holds a malformed float%s", NULL);
        memcpy(buf, s, n);
        buf[n] = 0;
        struct ws_pv *v = new_value(k, WS_PV_FLOAT);
        if (v)
            v->f = strtod(buf, NULL);
        return push(k, v);
    }
    case 'G': {
        if (need(k, 8) != 0)
            return -1;
        uint64_t bits = 0;
        for (int i = 0; i < 8; i++)
            bits = (bits << 8) | k->p[i];
        k->p += 8;
        double d;
        memcpy(&d, &bits, sizeof d);
        struct ws_pv *v = new_value(k, WS_PV_FLOAT);
        if (v)
            v->f = d;
        return push(k, v);
    }
    case 'S': return line(k, &s, &n) != 0 ? -1 : text_string(k, s, n, 1);
    case 'V': return line(k, &s, &n) != 0 ? -1 : text_string(k, s, n, 0);
    case 'X':
    case 'T':
    case 'B':
        if (need(k, 4) != 0)
            return -1;
        n = (size_t)le(k->p, 4);
        k->p += 4;
        goto counted;
    case 0x8c:
    case 'U':
    case 'C':
        if (need(k, 1) != 0)
            return -1;
        n = *k->p++;
        goto counted;
    case 0x8d:
    case 0x8e:
    case 0x96: {
        if (need(k, 8) != 0)
            return -1;
        uint64_t len = le(k->p, 8);
        k->p += 8;
        if (need(k, len) != 0)
            return -1;
        n = (size_t)len;
        goto counted;
    }
    case 'p':
        return line(k, &s, &n) != 0 || text_number(k, s, n, &num) != 0 || num < 0 ? -1 : memo_put(k, (uint64_t)num);
    case 'q': return need(k, 1) ? -1 : (k->p += 1, memo_put(k, k->p[-1]));
    case 'r': return need(k, 4) ? -1 : (k->p += 4, memo_put(k, le(k->p - 4, 4)));
    case 0x94: return memo_put(k, memo_next(k));
    case 'g':
        return line(k, &s, &n) != 0 || text_number(k, s, n, &num) != 0 || num < 0 ? -1 : memo_get(k, (uint64_t)num);
    case 'h': return need(k, 1) ? -1 : (k->p += 1, memo_get(k, k->p[-1]));
    case 'j': return need(k, 4) ? -1 : (k->p += 4, memo_get(k, le(k->p - 4, 4)));
    case '0': return pop(k) ? 0 : -1;
    case '1':
        if (k->nmarks == 0)
            return perr(k, "the pickle closes a MARK it never opened%s", NULL);
        k->depth = k->marks[--k->nmarks];
        return 0;
    case '2': return (a = top(k)) ? push(k, a) : -1;
    default: k->p--; return refuse(k, op);
    }
counted:
    if (need(k, n) != 0)
        return -1;
    k->p += n;
    return push_text(k, op == 'B' || op == 'C' || op == 0x8e || op == 0x96 ? WS_PV_BYTES : WS_PV_STR, k->p - n, n);
}

int ws_pickle_parse(const unsigned char *data, size_t len, struct ws_pickle **out, const struct ws_pv **root, char *err,
                    size_t errlen)
{
    struct ws_pickle *k = calloc(1, sizeof *k);
    *out = NULL;
    *root = NULL;
    if (!k) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    k->p = k->start = data;
    k->end = data + len;
    k->err = err;
    k->errlen = errlen;
    int stop = 0;
    while (!stop) {
        if (k->p >= k->end) {
            perr(k, "the pickle is truncated (no STOP)%s", NULL);
            goto fail;
        }
        if (step_op(k, &stop) != 0)
            goto fail;
    }
    if (k->depth != 1 || k->nmarks != 0) {
        perr(k, "the pickle ends with %s values on its stack", k->depth == 0 ? "no" : "several");
        goto fail;
    }
    *root = k->stack[0];
    *out = k;
    return 0;
fail:
    ws_pickle_free(k);
    return -1;
}

void ws_pickle_free(struct ws_pickle *k)
{
    if (!k)
        return;
    for (size_t i = 0; i < k->nvalues; i++) {
        free(k->values[i]->items);
        free((char *)k->values[i]->s);
        free(k->values[i]);
    }
    free(k->values);
    free(k->stack);
    free(k->marks);
    free(k->memo);
    free(k);
}

const struct ws_pv *ws_pv_get(const struct ws_pv *d, const char *key)
{
    if (!d || d->kind != WS_PV_DICT)
        return NULL;
    for (size_t i = 0; i < d->len; i++) {
        const struct ws_pv *k = d->items[2 * i];
        if (k->kind == WS_PV_STR && strcmp(k->s, key) == 0)
            return d->items[2 * i + 1];
    }
    return NULL;
}
