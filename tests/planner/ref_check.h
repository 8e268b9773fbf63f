/*
 * An independent check of layouts for the planner's tests, written from the definitions of
 * docs/planner.md ("Terms") and nothing of the planner: pairwise and quadratic, as plain as
 * possible. A block of size 0 or with lower == upper occupies nothing.
 */
#ifndef WS_REF_CHECK_H
#define WS_REF_CHECK_H

#include <stddef.h>
#include <stdint.h>

struct ref_buffer {
    int64_t lower, upper;
    uint64_t size, alignment, offset;
};

/* 1 when every offset is a multiple of its alignment (its own, else dflt, 0 meaning 1) and no two
 * blocks alive at one moment share an address, with *peak the largest offset + occupied size;
 * 0 otherwise, with the first fault in why. */
int ref_check(const struct ref_buffer *b, size_t n, uint64_t dflt, uint64_t *peak, char *why, size_t len);

/* The largest total occupied size alive at one moment, by its definition: the load at each lower
 * end. */
uint64_t ref_load_bound(const struct ref_buffer *b, size_t n, uint64_t dflt);

#endif
