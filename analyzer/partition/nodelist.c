/*
 * nodelist.c - the model's node list (partition.h): one node name per line, or the graph as JSON,
 * an array whose elements are names or {"name", "op_type", "inputs", "outputs"} objects (what
 * ORT's unique node names need: docs/partition.md shows how to write it from a model).
 */
#include "partition.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static void graph_node_free(struct ws_part_graph_node *n)
{
    free(n->name);
    free(n->op_type);
    for (size_t i = 0; i < n->ninputs; i++)
        free(n->inputs[i]);
    for (size_t i = 0; i < n->noutputs; i++)
        free(n->outputs[i]);
    free(n->inputs);
    free(n->outputs);
}

void ws_part_nodelist_free(struct ws_part_nodelist *list)
{
    for (size_t i = 0; i < list->count; i++)
        graph_node_free(&list->nodes[i]);
    free(list->nodes);
    memset(list, 0, sizeof *list);
}

static struct ws_part_graph_node *list_add(struct ws_part_nodelist *list, size_t *cap)
{
    if (list->count == *cap) {
        size_t next = *cap ? 2 * *cap : 64;
        struct ws_part_graph_node *grown = realloc(list->nodes, next * sizeof *grown);
        if (!grown)
            return NULL;
        list->nodes = grown;
        *cap = next;
    }
    struct ws_part_graph_node *n = &list->nodes[list->count++];
    memset(n, 0, sizeof *n);
    return n;
}

/* ---- text: one name per line ---- */

static int parse_lines(const char *text, size_t len, const char *name, struct ws_part_nodelist *list, char *err,
                       size_t errlen)
{
    size_t cap = 0;
    long lineno = 0;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = (nl ? (size_t)(nl - text) : len) - at;
        const char *line = text + at;
        at += n + (nl != NULL);
        lineno++;
        while (n > 0 && line[n - 1] == '\r')
            n--;
        if (n == 0 || line[0] == '#')
            continue;
        if (memchr(line, '\0', n)) {
            snprintf(err, errlen, "%s:%ld: NUL byte in the line", name, lineno);
            return -1;
        }
        struct ws_part_graph_node *node = list_add(list, &cap);
        if (!node || !(node->name = strndup(line, n))) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    return 0;
}

/* ---- JSON: the graph ---- */

static int json_names(json_t *array, char ***out, size_t *n)
{
    if (!array)
        return 0;
    if (!json_is_array(array))
        return -1;
    *out = calloc(json_array_size(array) + 1, sizeof **out);
    if (!*out)
        return -1;
    size_t i;
    json_t *v;
    json_array_foreach(array, i, v)
    {
        if (!json_is_string(v) || !((*out)[i] = strdup(json_string_value(v))))
            return -1;
        *n = i + 1;
    }
    return 0;
}

static int json_node(json_t *v, struct ws_part_graph_node *n)
{
    if (json_is_string(v))
        return (n->name = strdup(json_string_value(v))) ? 0 : -1;
    json_t *name = json_object_get(v, "name"), *op = json_object_get(v, "op_type");
    if (!json_is_object(v) || !json_is_string(name) || (op && !json_is_string(op)))
        return -1;
    if (!(n->name = strdup(json_string_value(name))) || (op && !(n->op_type = strdup(json_string_value(op)))))
        return -1;
    if (json_names(json_object_get(v, "inputs"), &n->inputs, &n->ninputs) != 0 ||
        json_names(json_object_get(v, "outputs"), &n->outputs, &n->noutputs) != 0)
        return -1;
    return 0;
}

static int parse_graph(const char *text, size_t len, const char *name, struct ws_part_nodelist *list, char *err,
                       size_t errlen)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr), *v;
    size_t cap = 0, i;
    int rc = -1;
    if (!root) {
        snprintf(err, errlen, "%s:%d:%d: %s", name, jerr.line, jerr.column, jerr.text);
        return -1;
    }
    if (!json_is_array(root)) {
        snprintf(err, errlen, "%s: expected an array of nodes", name);
        goto out;
    }
    list->is_graph = 1;
    json_array_foreach(root, i, v)
    {
        struct ws_part_graph_node *n = list_add(list, &cap);
        if (!n) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        if (json_node(v, n) != 0) {
            snprintf(err, errlen,
                     "%s: node %zu: expected a name or {\"name\": text, \"op_type\": text, \"inputs\": [text, ...], "
                     "\"outputs\": [text, ...]}",
                     name, i);
            goto out;
        }
        list->is_graph &= n->op_type != NULL;
    }
    rc = 0;
out:
    json_decref(root);
    return rc;
}

int ws_part_nodelist_parse(const char *text, size_t len, const char *name, struct ws_part_nodelist *list, char *err,
                           size_t errlen)
{
    size_t i = 0;
    memset(list, 0, sizeof *list);
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
        i++;
    int rc = i < len && text[i] == '[' ? parse_graph(text, len, name, list, err, errlen)
                                       : parse_lines(text, len, name, list, err, errlen);
    if (rc == 0 && list->count == 0) {
        snprintf(err, errlen, "%s: no node names in the file", name);
        rc = -1;
    }
    if (rc != 0)
        ws_part_nodelist_free(list);
    return rc;
}

int ws_part_nodelist_load(const char *path, struct ws_part_nodelist *list, char *err, size_t errlen)
{
    memset(list, 0, sizeof *list);
    FILE *in = fopen(path, "rb");
    if (!in) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *text = NULL;
    size_t len = 0, cap = 0, got;
    int rc = -1;
    do {
        if (len == cap) {
            char *grown = realloc(text, cap ? 2 * cap : 65536);
            if (!grown) {
                snprintf(err, errlen, "out of memory");
                goto out;
            }
            text = grown;
            cap = cap ? 2 * cap : 65536;
        }
        got = fread(text + len, 1, cap - len, in);
        len += got;
    } while (got > 0);
    if (ferror(in))
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
    else
        rc = ws_part_nodelist_parse(text, len, path, list, err, errlen);
out:
    free(text);
    fclose(in);
    return rc;
}
