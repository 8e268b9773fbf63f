/*
 * Arithmetic on sizes and counts read from input files, which may hold any 64-bit value: sums and
 * differences saturate at the int64 range instead of overflowing (undefined behaviour in C).
 */
#ifndef WS_SIZES_H
#define WS_SIZES_H

#include <stdint.h>

static inline int64_t ws_sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (!__builtin_add_overflow(a, b, &r))
        return r;
    return b > 0 ? INT64_MAX : INT64_MIN;
}

static inline int64_t ws_sat_sub(int64_t a, int64_t b)
{
    int64_t r;
    if (!__builtin_sub_overflow(a, b, &r))
        return r;
    return b < 0 ? INT64_MAX : INT64_MIN;
}

/* |v|, INT64_MAX for INT64_MIN. */
static inline int64_t ws_sat_abs(int64_t v) { return v >= 0 ? v : v == INT64_MIN ? INT64_MAX : -v; }

#endif
