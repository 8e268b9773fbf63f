/*
 * Static memory planner: give every buffer an offset in one backing buffer so that no two
 * buffers that are alive at the same time share an address, keeping the backing buffer small.
 * (Offset assignment, a.k.a. dynamic storage allocation.) Pure C, no I/O.
 *
 * A buffer lives in the half-open interval [lower, upper) and occupies its size rounded up to
 * its alignment, at an offset that is a multiple of that alignment. The peak of a plan is the
 * largest offset + occupied size; the load bound (largest total occupied size alive at one
 * moment) is a lower bound on the peak of every plan.
 */
#ifndef WS_PLANNER_H
#define WS_PLANNER_H

#include <stddef.h>
#include <stdint.h>

struct ws_plan_buffer {
    uint64_t id;          /* caller's identifier, not interpreted */
    int64_t lower, upper; /* half-open lifetime [lower, upper); lower < upper */
    uint64_t size;        /* bytes; 0 occupies nothing */
    uint64_t alignment;   /* 0 = the plan's default */
    uint64_t offset;      /* out */
};

struct ws_plan_options {
    uint64_t alignment;  /* default alignment; 0 means 1 */
    double time_limit_s; /* 0 = the default heuristics only; > 0 adds an improving search */
    uint64_t seed;       /* for the search; the same seed gives the same plan for the same work */
};

struct ws_plan_result {
    uint64_t peak_bytes;
    uint64_t load_bound_bytes;
    size_t buffers;
    int valid; /* the plan was checked by ws_plan_validate */
    double seconds;
    char algorithm[64]; /* the heuristic that produced the plan, "+search" if the search improved it */
    char error[128];    /* why ws_plan_solve returned -1 */
};

/* Assign b[i].offset for all i. Returns 0 on success, -1 on error (overflowing sizes or offsets,
 * lower >= upper, an alignment that does not fit, out of memory) with r->error set. */
int ws_plan_solve(struct ws_plan_buffer *b, size_t n, const struct ws_plan_options *o, struct ws_plan_result *r);

/* 1 when no two buffers overlap in both time and address and every offset is aligned (and
 * *peak is set), 0 otherwise, -1 when memory runs out. */
int ws_plan_validate(const struct ws_plan_buffer *b, size_t n, uint64_t default_alignment, uint64_t *peak);

/* Largest total occupied size of the buffers alive at one moment; UINT64_MAX if it overflows. */
uint64_t ws_plan_load_bound(const struct ws_plan_buffer *b, size_t n, uint64_t default_alignment);

#endif
