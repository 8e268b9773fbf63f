/* The independent layout check of ref_check.h. */
#include "ref_check.h"

#include <stdio.h>

static uint64_t alignment_of(const struct ref_buffer *b, uint64_t dflt)
{
    uint64_t a = b->alignment ? b->alignment : dflt;
    return a ? a : 1;
}

/* Occupied bytes: the size rounded up to the alignment; 0 for a block that is never alive. */
static uint64_t occupied(const struct ref_buffer *b, uint64_t dflt)
{
    if (b->lower >= b->upper || b->size == 0)
        return 0;
    uint64_t a = alignment_of(b, dflt);
    return (b->size + a - 1) / a * a; /* the tests keep sizes far below 2^64 */
}

int ref_check(const struct ref_buffer *b, size_t n, uint64_t dflt, uint64_t *peak, char *why, size_t len)
{
    uint64_t top = 0;
    for (size_t i = 0; i < n; i++) {
        if (b[i].offset % alignment_of(&b[i], dflt)) {
            snprintf(why, len, "block %zu: offset %llu not aligned", i, (unsigned long long)b[i].offset);
            return 0;
        }
        uint64_t oi = occupied(&b[i], dflt);
        if (oi && b[i].offset + oi > top)
            top = b[i].offset + oi;
        for (size_t j = 0; j < i; j++) {
            uint64_t oj = occupied(&b[j], dflt);
            int in_time = b[i].lower < b[j].upper && b[j].lower < b[i].upper;
            int in_space = b[i].offset < b[j].offset + oj && b[j].offset < b[i].offset + oi;
            if (oi && oj && in_time && in_space) {
                snprintf(why, len, "blocks %zu and %zu overlap", j, i);
                return 0;
            }
        }
    }
    *peak = top;
    return 1;
}

uint64_t ref_load_bound(const struct ref_buffer *b, size_t n, uint64_t dflt)
{
    uint64_t best = 0;
    for (size_t t = 0; t < n; t++) {
        uint64_t load = 0;
        for (size_t i = 0; i < n; i++)
            if (b[i].lower <= b[t].lower && b[t].lower < b[i].upper)
                load += occupied(&b[i], dflt);
        best = load > best ? load : best;
    }
    return best;
}
