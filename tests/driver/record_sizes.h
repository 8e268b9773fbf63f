/* The allocation sizes of record_prog, which the tests compute too: the k-th size of the seeded
 * sequence (handoff) and of the fixed one (loop). */
#ifndef WS_RECORD_SIZES_H
#define WS_RECORD_SIZES_H

#include <stddef.h>
#include <stdint.h>

/* The next size of a seeded sequence: 1 to 65,536 bytes (a 64-bit LCG, its high bits). */
static inline size_t record_next_size(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (size_t)(1 + (*state >> 33) % 65536);
}

/* The k-th size (k from 0) of the loop that is killed: never two equal sizes in a row. */
static inline size_t record_loop_size(uint64_t k) { return (size_t)(256 + (k * 7919) % 100003); }

#endif
