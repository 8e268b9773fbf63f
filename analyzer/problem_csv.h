/*
 * Standalone planning problems in the common CSV form of memory-packing tools:
 *   id,lower,upper,size[,alignment]
 * one buffer a line after that header; the buffer lives in the half-open interval [lower, upper).
 * Solutions are written as the same columns plus `offset`.
 */
#ifndef WS_PROBLEM_CSV_H
#define WS_PROBLEM_CSV_H

#include <stddef.h>

#include "planner.h"

struct ws_problem {
    struct ws_plan_buffer *buffers;
    size_t n;
    int has_alignment; /* the file had the optional alignment column */
};

/* Read FILE. On error returns -1 with one line "FILE[:LINE]: what" in err. */
int ws_problem_read(const char *path, struct ws_problem *pr, char *err, size_t errlen);

/* Write the problem with its offsets to path (via a temporary file renamed into place, so a
 * failed write leaves nothing behind). -1 with a message in err on failure. */
int ws_problem_write(const char *path, const struct ws_problem *pr, char *err, size_t errlen);

void ws_problem_free(struct ws_problem *pr);

#endif
