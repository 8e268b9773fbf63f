/*
 * The analysis engine, part 1: the trace as the analysis sees it, and lifetimes.
 *
 * One pass over a trace classifies every device allocation (workspace, activation, persistent,
 * unattributed), gives it to the node occurrence that owns it, places it in node steps and events
 * of its run, and measures per node the observed workspace (profile) and the activation bytes it
 * produced.  The other parts work from this in memory, each with its own header:
 *   estimates.h  Level-1 estimates (and node facts) from a JSON or CSV file;
 *   resolve.h    the per-node budget in the planner's ledger and in ONNX Runtime's;
 *   verify.h     Level-2 declarations against reservation and use.
 * docs/analysis.md defines every rule.  Errors are values: functions return 0 on success, -1
 * with one line in err.
 */
#ifndef WS_ANALYSIS_H
#define WS_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#define WS_NS_NEVER INT64_MAX /* free_ns / end_ns of something that never happened */

enum ws_class { WS_CLASS_WORKSPACE, WS_CLASS_ACTIVATION, WS_CLASS_PERSISTENT, WS_CLASS_UNATTRIBUTED, WS_CLASS_COUNT };

const char *ws_class_name(enum ws_class cls);

/* Where a declaration's tactic came from (include/wstrace.h, enum wstrace_tactic_kind). */
enum ws_tactic { WS_TACTIC_NONE, WS_TACTIC_CACHED, WS_TACTIC_CACHED_FREE, WS_TACTIC_MISS, WS_TACTIC_COUNT };

/* NULL for WS_TACTIC_NONE, else "cached", "cached-free", "miss" (as declaration_details spells them). */
const char *ws_tactic_name(enum ws_tactic tactic);

struct ws_run {
    int64_t id;           /* runs.id, or the id of the outermost range when synthesized */
    int64_t shape_key_id; /* strings.id; -1 when none */
    int64_t start_ns, end_ns;
    int32_t allocations, events; /* counts of the run's allocations and of its events */
};

struct ws_range {                 /* one push range = one node occurrence */
    int64_t id, start_ns, end_ns; /* end_ns = WS_NS_NEVER when it never ended */
    int32_t node;                 /* index into nodes, -1 for an unnamed range */
    int32_t run;                  /* index into runs, -1 outside every run */
    int32_t step;                 /* 0-based index among the occurrences of its run, -1 outside runs */
    int32_t parent;               /* index of the enclosing push range, -1 for an outermost one */
};

struct ws_node {
    int64_t name_id;
    char *name;
    int has_range;           /* 1 when the name has at least one push range */
    int in_run;              /* 1 when one of those ranges lies inside a run (ORT records such a node) */
    int declares;            /* 1 when the trace holds a Level-1 or Level-2 declaration for it */
    int64_t occurrences;     /* push ranges with this name */
    int64_t profile_bytes;   /* peak live workspace in one occurrence (0 when it used none); -1: never ran */
    int64_t output_bytes;    /* activation bytes allocated by the node in one run, max over runs */
    int64_t workspace_bytes; /* total bytes of its workspace allocations (summary) */
};

struct ws_lifetime {                                 /* one successful device or managed allocation */
    int64_t allocation_id, bytes, alloc_ns, free_ns; /* free_ns = WS_NS_NEVER when never freed */
    int32_t range, free_range;                       /* innermost open ranges at allocation and free, -1: none */
    int32_t owner;                                   /* the occurrence that owns it (below), -1 when unattributed */
    int32_t run, node, device;                       /* run/node indices (node of the owner), -1 when none */
    int32_t process;                                 /* processes.id of the allocating thread (1: one process) */
    int32_t alloc_step, free_step, slot;             /* -1 = NULL in the lifetimes table */
    int32_t alloc_seq, start_event, end_event;       /* -1 = NULL */
    uint8_t cls;                                     /* enum ws_class */
};

struct ws_region { /* a named buffer inside a declared root */
    int64_t name_id, offset, bytes;
};

struct ws_decl { /* one row of the declarations table, with its details (schema version 2) */
    int64_t id;
    int32_t node;
    int32_t run; /* index of the run it was made in, -1 outside every run */
    uint8_t level, tactic;
    int32_t device; /* -1: any device */
    int64_t slot, bytes, alignment;
    char *tactic_name;               /* NULL when none */
    uint32_t region_first, nregions; /* into ws_analysis.regions, in ordinal order */
};

struct ws_device_peak { /* live bytes are per process and device: processes never share them */
    int32_t process, device;
    int64_t live, peak;
};

struct ws_key { /* a shape key's text */
    int64_t id;
    char *text;
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
    struct ws_decl *decls; /* in id order */
    size_t ndecls;
    struct ws_region *regions;
    size_t nregions;
    struct ws_key *keys; /* shape keys of the runs, in id order */
    size_t nkeys;
    struct ws_device_peak *devices;
    size_t ndevices;
    int64_t peak_live_bytes; /* maximum over processes and devices of the peak of live bytes */
    int64_t processes;       /* rows of the processes table (1 when the trace has none) */
    int64_t class_count[WS_CLASS_COUNT], class_bytes[WS_CLASS_COUNT];
};

/*
 * Read the trace and compute lifetimes, profiles and output bytes.  Fails with "empty trace"
 * when it has neither device allocations nor push ranges.
 *
 * Ownership: an allocation belongs to the nearest enclosing occurrence (its innermost range, or a
 * range around it) whose node has a declaration in the trace, and to its innermost range when
 * none has; a kernel that declares its workspace on its node owns what it allocates in ranges
 * nested inside it.  Workspace is what is freed inside the owner's occurrence: in the owner's own
 * range, or, when the owner declares, in a range nested inside it.
 */
int ws_analysis_load(sqlite3 *db, const char *path, struct ws_analysis *an, char *err, size_t errlen);
void ws_analysis_free(struct ws_analysis *an);

/* The common start of an analysis command: open the trace (read-only or for writing results)
 * and analyse it.  On failure nothing is left open. */
int ws_analysis_open(const char *path, int for_writing, sqlite3 **db, struct ws_analysis *an, char *err, size_t errlen);

/* Node index by name_id or by name; -1 when absent. */
int32_t ws_analysis_node_by_id(const struct ws_analysis *an, int64_t name_id);
int32_t ws_analysis_node_by_name(const struct ws_analysis *an, const char *name);
/* The text of a run's shape key; NULL for -1 or an unknown id. */
const char *ws_analysis_key_text(const struct ws_analysis *an, int64_t shape_key_id);
/* The shape key of an occurrence: its run's, -1 outside runs or without a key. */
int64_t ws_analysis_range_key(const struct ws_analysis *an, int32_t range);

/* Result tables are replaced in one transaction: ws_results_begin (re)creates `table` with the
 * columns of this version and the other result tables when missing; ws_results_end commits (ok)
 * or rolls back (!ok). */
int ws_results_begin(sqlite3 *db, const char *table, char *err, size_t errlen);
int ws_results_end(sqlite3 *db, int ok, char *err, size_t errlen);

/* Replace the rows of the lifetimes table. */
int ws_lifetimes_write(sqlite3 *db, const struct ws_analysis *an, char *err, size_t errlen);

struct ws_estimates;
/* The start of resolve and verify: the estimates file (when given) is read first, so bad input
 * writes nothing; then the trace is opened for writing results and analysed.  Prints one line
 * and returns -1 on failure. */
int ws_analysis_start(const char *trace, const char *estimates_path, sqlite3 **db, struct ws_analysis *an,
                      struct ws_estimates *est);

#endif
