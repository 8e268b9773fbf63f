/*
 * The analysis engine, part 4: verification of Level-2 declarations against the Level-1
 * reservation and against use (docs/analysis.md, "Verification").
 *
 * Rows are per node, shape key, device and slot, so a finding on one key or device is never
 * hidden by another.  Level 1 applies to every key; a Level-2 declaration made inside a run
 * applies to that run's shape key (made outside every run: to all); a declaration naming a device
 * applies to that device (none named: to all).  The workspace allocations of one occurrence on
 * one device are matched to the declared slots and regions that apply to it (ws_match); the
 * verdict of a row is the first rule of the table that matches (ws_verdict_of).
 */
#ifndef WS_VERIFY_H
#define WS_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "estimates.h"

enum ws_verdict {
    WS_VERDICT_OK,
    WS_VERDICT_OVER_RESERVATION,
    WS_VERDICT_UNDER_DECLARED,
    WS_VERDICT_IDLE_RESERVATION,
    WS_VERDICT_UNDECLARED,
    WS_VERDICT_UNAVAILABLE,
    WS_VERDICT_EXCEEDS_RESERVATION,
    WS_VERDICT_TACTIC_OVERDECLARED,
    WS_VERDICT_MISS_UNDERDECLARED,
    WS_VERDICT_COUNT
};

const char *ws_verdict_name(enum ws_verdict verdict);

/* The figures of one row; -1 means absent. */
struct ws_verdict_input {
    int64_t level1, level2, observed;
    int overflow;   /* an allocation was larger than the region or slot it was matched to */
    uint8_t tactic; /* enum ws_tactic of the Level-2 declaration */
};

/* The rules of docs/analysis.md in their order, numbered from 1. */
size_t ws_verdict_rule_count(void);
int ws_verdict_rule_matches(size_t rule, const struct ws_verdict_input *in);
enum ws_verdict ws_verdict_rule_verdict(size_t rule);
/* The verdict of the first rule that matches. */
enum ws_verdict ws_verdict_of(const struct ws_verdict_input *in);

/*
 * Matching one occurrence's workspace allocations to what is declared for it.  Targets are, per
 * declared slot in slot order, its regions in offset order and then the slot's whole root; a slot
 * without regions is only its root.  Taking a region closes the root; taking the root closes its
 * regions.  In time order each allocation takes the smallest open target it fits (the first of
 * equal ones); one that fits none takes the first open target and overflows it; when none is open
 * it is extra.
 */
struct ws_target {
    int64_t slot, offset, bytes;
    int root; /* 1: the slot's whole root */
};

struct ws_match {
    int32_t target; /* index into the targets, -1: extra */
    int overflow;
};

/* taken: scratch of nt ints. */
void ws_match(const struct ws_target *t, size_t nt, const int64_t *bytes, size_t na, int *taken, struct ws_match *out);

struct ws_verification {
    int32_t node;
    int64_t shape_key_id; /* -1: none (outside runs, or a run without a key) */
    int32_t device;       /* -1: not known (the occurrence allocated nothing) */
    int64_t slot;
    int64_t level1_bytes, level2_bytes, observed_bytes; /* -1 when none; observed: footprint in the root */
    int region_overflow;
    uint8_t tactic;          /* enum ws_tactic of the Level-2 declaration */
    const char *tactic_name; /* its tactic's name (owned by the analysis), NULL */
    uint8_t verdict;         /* enum ws_verdict */
};

/* Ordered by node, shape key, device, slot.  est (Level-1 estimates from a file) may be NULL. */
int ws_verify(const struct ws_analysis *an, const struct ws_estimates *est, struct ws_verification **out, size_t *count,
              char *err, size_t errlen);

#endif
