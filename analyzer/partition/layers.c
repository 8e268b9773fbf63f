/*
 * layers.c - the layer number in a node name (partition.h): exporters name repeated blocks
 * "/model/layers.3/self_attn/...", "model.layers.3.mlp...", llama.cpp "blk.3.attn_q".
 */
#include "partition.h"

#include <string.h>

static int is_alnum(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* The layer number right after pattern at name[at], when the place qualifies. */
static int number_at(const char *name, size_t at, size_t plen, size_t *prefix_len, uint32_t *index, char *terminator)
{
    if (at > 0 && is_alnum(name[at - 1]))
        return 0; /* "sublayers.3" is not "layers.3" */
    const char *d = name + at + plen;
    size_t n = 0;
    uint32_t v = 0;
    while (d[n] >= '0' && d[n] <= '9') {
        if (++n > 9)
            return 0;
        v = v * 10 + (uint32_t)(d[n - 1] - '0');
    }
    if (n == 0 || is_alnum(d[n]))
        return 0; /* "layers.3a" has no layer number */
    *prefix_len = at + plen + n;
    *index = v;
    *terminator = d[n];
    return 1;
}

int ws_part_layer_of(const char *name, const char *pattern, size_t *prefix_len, uint32_t *index, char *terminator)
{
    size_t plen = strlen(pattern);
    if (plen == 0)
        return 0;
    for (const char *p = strstr(name, pattern); p; p = strstr(p + 1, pattern))
        if (number_at(name, (size_t)(p - name), plen, prefix_len, index, terminator))
            return 1;
    return 0;
}
