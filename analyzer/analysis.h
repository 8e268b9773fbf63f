/*
 * The analysis shared by summary, lifetimes, resolve, verify, plan and report: one pass over a
 * trace that classifies every device allocation (workspace, activation, persistent,
 * unattributed), places it in node steps and events of its run, and measures per node the
 * observed workspace (profile) and the activation bytes it produced.  Resolution and
 * verification are computed from that in memory.  docs/analysis.md defines every rule.
 *
 * Errors are values: functions return 0 on success, -1 with one line in err.
 */
#ifndef WS_ANALYSIS_H
#define WS_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#define WS_NS_NEVER INT64_MAX /* free_ns / end_ns of something that never happened */

enum ws_class { WS_CLASS_WORKSPACE, WS_CLASS_ACTIVATION, WS_CLASS_PERSISTENT, WS_CLASS_UNATTRIBUTED, WS_CLASS_COUNT };

const char *ws_class_name(enum ws_class cls);

struct ws_run {
    int64_t id;           /* runs.id, or the id of the outermost range when synthesized */
    int64_t shape_key_id; /* strings.id; -1 when none */
    int64_t start_ns, end_ns;
    int32_t allocations, events; /* counts of the run's allocations and of its events */
};

struct ws_range { /* one push range = one node occurrence */
    int64_t id, start_ns;
    int32_t node; /* index into nodes, -1 for an unnamed range */
    int32_t run;  /* index into runs, -1 outside every run */
    int32_t step; /* 0-based index among the occurrences of its run, -1 outside runs */
};

struct ws_node {
    int64_t name_id;
    char *name;
    int has_range;           /* 1 when the name has at least one push range */
    int64_t occurrences;     /* push ranges with this name */
    int64_t profile_bytes;   /* peak live workspace in one occurrence; -1 when it never allocated workspace */
    int64_t output_bytes;    /* activation bytes allocated by the node in one run, max over runs */
    int64_t workspace_bytes; /* total bytes of its workspace allocations (summary) */
};

struct ws_lifetime {                                 /* one successful device or managed allocation */
    int64_t allocation_id, bytes, alloc_ns, free_ns; /* free_ns = WS_NS_NEVER when never freed */
    int32_t range, free_range;                       /* indices into ranges, -1 when none */
    int32_t run, node, device;                       /* run/node indices, -1 when none */
    int32_t process;                           /* processes.id of the allocating thread (1 in one-process traces) */
    int32_t alloc_step, free_step, slot;       /* -1 = NULL in the lifetimes table */
    int32_t alloc_seq, start_event, end_event; /* -1 = NULL */
    uint8_t cls;                               /* enum ws_class */
};

struct ws_decl { /* one row of the declarations table */
    int32_t node;
    uint8_t level;
    int64_t slot, bytes;
};

struct ws_device_peak { /* live bytes are per process and device: processes never share them */
    int32_t process, device;
    int64_t live, peak;
};

struct ws_analysis {
    int runs_synthesized; /* 1 when the trace has no runs rows: every outermost range is a run */
    struct ws_run *runs;
    size_t nruns;
    struct ws_range *ranges; /* push ranges in id order */
    size_t nranges;
    struct ws_node *nodes; /* in name_id order */
    size_t nnodes;
    int32_t *nodes_by_name;     /* node indices in strcmp order of their names */
    struct ws_lifetime *allocs; /* in allocation id order */
    size_t nallocs;
    struct ws_decl *decls;
    size_t ndecls;
    struct ws_device_peak *devices;
    size_t ndevices;
    int64_t peak_live_bytes; /* maximum over processes and devices of the peak of live bytes */
    int64_t processes;       /* rows of the processes table (1 when the trace has none) */
    int64_t class_count[WS_CLASS_COUNT], class_bytes[WS_CLASS_COUNT];
};

/* Read the trace and compute lifetimes, profiles and output bytes.  Fails with "empty trace"
 * when it has neither device allocations nor push ranges. */
int ws_analysis_load(sqlite3 *db, const char *path, struct ws_analysis *an, char *err, size_t errlen);
void ws_analysis_free(struct ws_analysis *an);

/* The common start of an analysis command: open the trace (read-only or for writing results)
 * and analyse it.  On failure nothing is left open. */
int ws_analysis_open(const char *path, int for_writing, sqlite3 **db, struct ws_analysis *an, char *err, size_t errlen);

/* Node index by name_id or by name; -1 when absent. */
int32_t ws_analysis_node_by_id(const struct ws_analysis *an, int64_t name_id);
int32_t ws_analysis_node_by_name(const struct ws_analysis *an, const char *name);

/* Result tables are replaced in one transaction: ws_results_begin creates the result tables
 * when missing and empties `table`; ws_results_end commits (ok) or rolls back (!ok). */
int ws_results_begin(sqlite3 *db, const char *table, char *err, size_t errlen);
int ws_results_end(sqlite3 *db, int ok, char *err, size_t errlen);

/* Replace the rows of the lifetimes table. */
int ws_lifetimes_write(sqlite3 *db, const struct ws_analysis *an, char *err, size_t errlen);

/* ---- Level-1 estimates from a file (JSON or CSV; docs/analysis.md) ---- */

struct ws_estimate {
    char *node;
    int64_t slot; /* -1: output bytes of the node, not a workspace slot */
    int64_t bytes;
};

struct ws_estimates {
    struct ws_estimate *items;
    size_t count;
};

int ws_estimates_load(const char *path, struct ws_estimates *est, char *err, size_t errlen);
void ws_estimates_free(struct ws_estimates *est);

/* The start of resolve and verify: the estimates file (when given) is read first, so bad input
 * writes nothing; then the trace is opened for writing results and analysed.  Prints one line
 * and returns -1 on failure. */
int ws_analysis_start(const char *trace, const char *estimates_path, sqlite3 **db, struct ws_analysis *an,
                      struct ws_estimates *est);

/* ---- Resolution ---- */

enum ws_source { WS_SOURCE_ESTIMATOR, WS_SOURCE_PROFILE, WS_SOURCE_MAX, WS_SOURCE_FALLBACK, WS_SOURCE_COUNT };

const char *ws_source_name(enum ws_source source);

struct ws_resolution {
    int32_t node;
    int64_t profile_bytes;  /* -1 when none */
    int64_t estimate_bytes; /* -1 when none */
    int64_t output_bytes;
    int64_t resolved_bytes;
    uint8_t source; /* enum ws_source */
};

/* One resolution per node that has a push range, in node order.  est may be NULL. */
int ws_resolve(const struct ws_analysis *an, const struct ws_estimates *est, double multiplier,
               struct ws_resolution **out, size_t *count, char *err, size_t errlen);

/* ---- Verification ---- */

enum ws_verdict {
    WS_VERDICT_OK,
    WS_VERDICT_OVER_RESERVATION,
    WS_VERDICT_UNDER_DECLARED,
    WS_VERDICT_IDLE_RESERVATION,
    WS_VERDICT_UNDECLARED,
    WS_VERDICT_UNAVAILABLE,
    WS_VERDICT_COUNT
};

const char *ws_verdict_name(enum ws_verdict verdict);

struct ws_verification {
    int32_t node;
    int64_t slot;
    int64_t level1_bytes, level2_bytes, observed_bytes; /* -1 when none */
    uint8_t verdict;                                    /* enum ws_verdict */
};

enum ws_verdict ws_verdict_of(int64_t level1, int64_t level2, int64_t observed);

/* One verification per (node, slot) that is declared at either level or observed, ordered by
 * node then slot.  est (Level-1 estimates from a file) may be NULL. */
int ws_verify(const struct ws_analysis *an, const struct ws_estimates *est, struct ws_verification **out, size_t *count,
              char *err, size_t errlen);

#endif
