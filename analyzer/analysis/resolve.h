/*
 * The analysis engine, part 3: resolution, the per-node budget in two ledgers that are never added
 * together (docs/analysis.md, "Resolution").
 *
 *  - The planner's ledger: the workspace a node needs reserved, max(profile, estimate).  The
 *    profile is the peak of concurrently live workspace in one occurrence; every node that ran has
 *    one (0 when it used none).
 *  - ONNX Runtime's ledger: what its IResourceAccountant charges for the node.  With a stats file
 *    (the trace plays ORT's NodeStatsRecorder file): input_sizes + initializers_sizes +
 *    total_dynamic_sizes + max(total_temp_allocations, Level-1 estimate), temporary allocations
 *    summed; a node that ran in no run is missing from the file and costs 0.  An ORT node-stats
 *    file given as estimates is a recorded profile: each field the larger of the file's and the
 *    trace's, a node with a line counts as recorded, and its temporary allocations are a profile
 *    in the planner's ledger too.  Without one (ad hoc):
 *    the known initializer and output bytes, plus the Level-1 estimate when there is one, else
 *    those bytes times the multiplier minus one, truncated (1.5 x in all, ORT's safety margin).
 */
#ifndef WS_RESOLVE_H
#define WS_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "estimates.h"

/* The node a row of an estimates file is about: its name, or for a line of an ONNX Runtime
 * node-stats file the name without ORT's "_HASH" suffix; -1 when the trace has no such node. */
int32_t ws_estimate_node(const struct ws_analysis *an, const struct ws_estimate *e);

/* Sum over slots of the largest Level-1 figure of each slot (trace and file); -1 without any. */
int64_t ws_node_estimate(const struct ws_analysis *an, const struct ws_estimates *est, int32_t node);

/* ---- the planner's ledger ---- */

enum ws_source { WS_SOURCE_ESTIMATOR, WS_SOURCE_PROFILE, WS_SOURCE_MAX, WS_SOURCE_UNKNOWN, WS_SOURCE_COUNT };

const char *ws_source_name(enum ws_source source);

struct ws_planner_cost {
    int32_t node;
    int64_t profile_bytes;  /* -1: never ran */
    int64_t estimate_bytes; /* -1: none */
    int64_t bytes;          /* resolved workspace; -1 when unknown */
    uint8_t source;         /* enum ws_source */
};

/* Resolve one node from its figures (-1: absent). */
void ws_planner_resolve(int64_t profile_bytes, int64_t estimate_bytes, struct ws_planner_cost *out);

/* ---- ONNX Runtime's ledger ---- */

enum ws_ort_mode { WS_ORT_STATS, WS_ORT_AD_HOC };
enum ws_ort_source {
    WS_ORT_SOURCE_PROFILE,               /* stats: the recorded figures */
    WS_ORT_SOURCE_PROFILE_AND_ESTIMATOR, /* stats, with a Level-1 estimate: max(temp, estimate) */
    WS_ORT_SOURCE_NOT_PROFILED,          /* stats: missing from the file, costs 0 */
    WS_ORT_SOURCE_ESTIMATOR,             /* ad hoc, with a Level-1 estimate */
    WS_ORT_SOURCE_FALLBACK,              /* ad hoc, the safety multiplier */
    WS_ORT_SOURCE_COUNT
};

const char *ws_ort_mode_name(enum ws_ort_mode mode);
const char *ws_ort_source_name(enum ws_ort_source source);

/* A node's figures in the accountant's terms; -1 where not known. */
struct ws_ort_facts {
    int executed;              /* has an occurrence inside a run: it has a stats line */
    int64_t input_bytes;       /* estimates file: input_sizes */
    int64_t initializer_bytes; /* estimates file */
    int64_t dynamic_bytes;     /* allocations of one occurrence that outlive it, max over occurrences */
    int64_t temp_bytes;        /* workspace requested in one occurrence (summed), max over occurrences */
    int64_t output_bytes;      /* estimates file: statically known output bytes */
    int64_t estimate_bytes;    /* Level 1, as ws_node_estimate */
};

struct ws_ort_cost {
    int32_t node;
    struct ws_ort_facts facts;
    int64_t workspace_bytes; /* the workspace part of the cost */
    int64_t cost_bytes;      /* what the accountant charges */
    uint8_t source;          /* enum ws_ort_source */
};

/* The cost of one node; multiplier >= 1 (1.5 in ORT). */
void ws_ort_charge(enum ws_ort_mode mode, double multiplier, const struct ws_ort_facts *f, struct ws_ort_cost *out);

/* ---- both ledgers for every node ---- */

struct ws_resolution {
    int32_t node;
    struct ws_planner_cost planner;
    struct ws_ort_cost ort;
};

/* One row per node of the trace: a push range or a declaration in the trace.  est may be NULL. */
int ws_resolve(const struct ws_analysis *an, const struct ws_estimates *est, enum ws_ort_mode mode, double multiplier,
               struct ws_resolution **out, size_t *count, char *err, size_t errlen);

/* Totals of each ledger, never of both: the planner's over the nodes whose workspace is known
 * (the others are counted), ORT's over every node. */
struct ws_resolve_totals {
    int64_t planner_bytes, planner_unknown, ort_bytes;
    int64_t inputs_unknown; /* executed nodes whose input bytes no file gave (stats mode counts 0) */
    int64_t planner_by_source[WS_SOURCE_COUNT], ort_by_source[WS_ORT_SOURCE_COUNT];
};

void ws_resolve_totals(const struct ws_resolution *res, size_t n, struct ws_resolve_totals *t);

#endif
