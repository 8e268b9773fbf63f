/*
 * The map from a spool's time-stamp counter ticks to CLOCK_MONOTONIC nanoseconds (spools whose
 * header says clock WS_CLOCK_TSC, common/spool_format.h).  The writer leaves calibration pairs
 * (counter, CLOCK_MONOTONIC at the same moment): one when the spool is created, one per chunk,
 * one at a clean exit; a reader on the writer's boot adds one of its own.  Between two pairs a
 * tick maps linearly; before the first and after the last, at the mean rate over all pairs.  The
 * map never decreases, so records keep the order of their ticks on every thread.
 */
#ifndef WS_SPOOL_CLOCK_H
#define WS_SPOOL_CLOCK_H

#include <stddef.h>
#include <stdint.h>

struct ws_clock_pair {
    uint64_t tsc, ns;
};

struct ws_spool_clock {
    struct ws_clock_pair *pairs; /* by tick, ns never decreasing, ticks distinct */
    size_t n;
    uint64_t rate_ticks, rate_ns; /* the mean rate: rate_ns nanoseconds per rate_ticks ticks */
};

/* Build the map from n pairs (in any order; pairs of tick 0 are ignored).  0, or -1 when memory
 * runs out or no pair is left. */
int ws_spool_clock_init(struct ws_spool_clock *c, const struct ws_clock_pair *pairs, size_t n);
void ws_spool_clock_free(struct ws_spool_clock *c);

/* CLOCK_MONOTONIC nanoseconds of tick t (0 for a tick that maps before the epoch). */
uint64_t ws_spool_clock_ns(const struct ws_spool_clock *c, uint64_t t);

#endif
