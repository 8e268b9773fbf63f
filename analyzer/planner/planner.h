/*
 * The static memory planner (offset assignment, a.k.a. dynamic storage allocation): give every
 * buffer an offset in one backing buffer so that no two buffers alive at the same time share an
 * address, keeping the backing buffer small. A library of its own (analyzer/planner/), pure C;
 * its only I/O is the CSV form of problems. docs/planner.md describes the algorithms.
 *
 * A buffer lives in the half-open interval [lower, upper) and occupies its size rounded up to its
 * alignment (its own; 0 means the plan's default; a default of 0 means 1), at an offset that is a
 * multiple of that alignment. A buffer of size 0, or with lower == upper (never alive), occupies
 * nothing, meets no other buffer and gets offset 0. The peak of a layout is the largest offset +
 * occupied size; the load bound (LB, the largest total occupied size alive at one moment) is a
 * lower bound on the peak of every layout.
 */
#ifndef WS_PLANNER_H
#define WS_PLANNER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ws_plan_buffer {
    uint64_t id;          /* caller's identifier, not interpreted */
    int64_t lower, upper; /* half-open lifetime [lower, upper); lower <= upper */
    uint64_t size;        /* bytes; 0 occupies nothing */
    uint64_t alignment;   /* 0 = the plan's default */
    uint64_t offset;      /* out */
};

/*
 * Without a budget (time_limit_s == 0 and work_limit == 0) ws_plan_solve runs the greedy
 * decoders only. With one it then searches: the decision search proves or disproves capacities
 * between the best lower bound and the best layout, and a neighbourhood search improves the
 * layout; both stop at whichever limit comes first, and the best layout so far is returned. A
 * search bounded by work_limit alone is repeatable: the same problem, options and seed give the
 * same layout on every machine.
 */
struct ws_plan_options {
    uint64_t alignment;  /* default alignment; 0 means 1 */
    double time_limit_s; /* wall-clock budget of the searches; 0 = none */
    uint64_t work_limit; /* budget of the searches in steps (search nodes, buffers re-placed); 0 = none */
    uint64_t seed;       /* for the searches */
};

struct ws_plan_result {
    uint64_t peak_bytes;
    uint64_t load_bound_bytes;  /* LB */
    uint64_t lower_bound_bytes; /* best proven lower bound: LB, or more when the search proved that
                                 * no layout below it exists */
    int optimal;                /* peak_bytes == lower_bound_bytes: proven optimal */
    size_t buffers;
    int valid; /* the layout was checked by ws_plan_validate */
    double seconds;
    uint64_t work;      /* search steps used */
    char algorithm[64]; /* what produced the layout; "+search" when the neighbourhood search improved it */
    char error[128];    /* why ws_plan_solve returned -1 */
};

/* Assign b[i].offset for all i. Returns 0 on success, -1 on error (lower > upper, a size that
 * does not fit in 64 bits once rounded up to its alignment, a load bound that does not fit in 64
 * bits, out of memory) with r->error set. Any problem whose load bound fits in 64 bits has a
 * layout; the sum of all sizes may exceed 2^64. */
int ws_plan_solve(struct ws_plan_buffer *b, size_t n, const struct ws_plan_options *o, struct ws_plan_result *r);

/* 1 when no two buffers overlap in both time and address and every offset is aligned (and
 * *peak is set), 0 otherwise, -1 when memory runs out. */
int ws_plan_validate(const struct ws_plan_buffer *b, size_t n, uint64_t default_alignment, uint64_t *peak);

/* Largest total occupied size of the buffers alive at one moment; UINT64_MAX if it overflows. */
uint64_t ws_plan_load_bound(const struct ws_plan_buffer *b, size_t n, uint64_t default_alignment);

/*
 * Problems in the common CSV form of memory-packing tools: a header `id,lower,upper,size` with an
 * optional fifth column `alignment`, then one buffer a line. Solutions are the same columns plus
 * `offset`. docs/planner.md gives the rules.
 */
struct ws_problem {
    struct ws_plan_buffer *buffers;
    size_t n;
    int has_alignment; /* the file had the optional alignment column */
};

/* Read FILE. On error returns -1 with one line "FILE[:LINE]: what" in err. */
int ws_problem_read(const char *path, struct ws_problem *pr, char *err, size_t errlen);

/* Write the problem with its offsets to f; 0, or -1 (errno set) when a write fails. The caller
 * owns f (see analyzer/outfile.h for writing a file whole or not at all). */
int ws_problem_write(FILE *f, const struct ws_problem *pr);

void ws_problem_free(struct ws_problem *pr);

#endif
