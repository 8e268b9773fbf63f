/*
 * wstrace view: one self-contained HTML page of a trace (no network, data embedded): live bytes
 * per device stacked by class, node or layer with the plans' bounds, every allocation as a block
 * in time x address, runs and shape keys to select, each plan beside its dynamic run, and the
 * verification and resolution tables.
 *
 * Large traces stay light through level of detail: the page carries aggregated bands (live
 * bytes per time bin, occupancy per time x address cell) that it draws when the window holds
 * too many allocations, and the allocations themselves in compressed chunks of time that it
 * decodes only when the window is narrow enough to draw them one by one.
 *
 * Internal to analyzer/view/: struct view_model and the functions that fill and write it.
 * Errors are values: 0, or -1 with one line in err.
 */
#ifndef WS_VIEW_H
#define WS_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sqlite3.h>

#include "analysis.h"

struct ws_view_options {
    size_t chunk_allocations; /* allocations per detail chunk (0: the default, 65536) */
};

/* Write the page of the trace open in db (read only). */
int ws_view_write(sqlite3 *db, const char *trace, FILE *out, const struct ws_view_options *o, char *err, size_t errlen);

/* ---- internal ---- */

#define VIEW_BINS       2048 /* time bins of the live-bytes bands */
#define VIEW_HEAT_T     1024 /* time x address occupancy cells of the blocks' overview */
#define VIEW_HEAT_Y     256
#define VIEW_TOP_NODES  12 /* nodes stacked by name; the others are summed */
#define VIEW_TOP_LAYERS 24

/* The view's classes: the analysis' four, and memory that holds an NVTX heap (whose regions the
 * analysis classifies instead). */
#define VIEW_CLASS_POOL WS_CLASS_COUNT
#define VIEW_CLASSES    (WS_CLASS_COUNT + 1)

/* One successful device or managed allocation, or a region of an NVTX heap. */
struct view_alloc {
    int64_t id, alloc_ns, free_ns, bytes;               /* free_ns = WS_NS_NEVER when never freed */
    uint64_t address, y;                                /* y: position in the device's compacted address axis */
    int32_t node, layer, run, thread, api, device, seq; /* indices, -1 when none; device indexes devices */
    uint8_t cls;                                        /* enum ws_class, or VIEW_CLASS_POOL */
    uint8_t region; /* a region inside another allocation: drawn, not counted in live bytes */
};

struct view_name { /* a name given to an allocation (table allocation_names) */
    int64_t allocation_id;
    char *name;
};

struct view_segment { /* a stretch of addresses in use, drawn without the gaps around it */
    uint64_t lo, len, ybase;
};

struct view_device { /* live bytes run per process and device, as in the live_bytes view */
    int64_t process, device;
    int64_t peak, peak_ns;
    size_t allocs;
    struct view_segment *segments;
    size_t nsegments;
    uint64_t yspan;
};

struct view_thread {
    int64_t id, os_tid, process; /* process: processes.id (1 without the column) */
    char *name;
};

struct view_table { /* a result table, column by column as SQLite typed it */
    char name[32];
    size_t ncols, nrows;
    char **columns;
    sqlite3_value **cells; /* nrows * ncols, sqlite3_value_dup copies */
};

struct view_plan_block {
    int64_t ordinal, start_event, end_event, bytes, requested, offset, allocation_id;
    int32_t node, alloc; /* alloc: index into allocs, -1 when the allocation is not in the trace */
    char cls[16];
};

struct view_plan {
    int64_t id, shape_key_id, run_id, alignment, planned_peak, load_bound, dynamic_peak;
    char algorithm[64];
    struct view_plan_block *blocks;
    size_t nblocks;
};

struct view_model {
    const char *trace;
    sqlite3 *db;
    struct ws_analysis an;
    int have_analysis; /* 0 for a trace with nothing allocated and no ranges */
    int have_pool;     /* some allocation holds an NVTX heap */
    int64_t t0, t1;
    struct view_alloc *allocs; /* by allocation time */
    size_t nallocs;
    struct view_device *devices;
    size_t ndevices;
    char **apis;
    size_t napis;
    struct view_thread *threads;
    size_t nthreads;
    char **layers;
    size_t nlayers;
    char **shapes; /* strings referenced as shape keys: shape_ids[i] -> shapes[i] */
    int64_t *shape_ids;
    size_t nshapes;
    struct view_plan *plans;
    size_t nplans;
    struct view_table *tables;
    size_t ntables;
    char **meta_keys, **meta_values;
    size_t nmeta;
    char **process_names; /* by processes.id - 1 when the trace has processes, else NULL */
    size_t nprocesses;
    struct view_name *names; /* the names of the allocations drawn, in allocation id order */
    size_t nnames;
};

int view_model_load(struct view_model *m, sqlite3 *db, const char *trace, char *err, size_t errlen);
void view_model_free(struct view_model *m);
/* 1 when table has column (both names compared exactly), 0 otherwise. */
int view_column_exists(sqlite3 *db, const char *table, const char *column);
int view_table_exists(sqlite3 *db, const char *table);

/* Writing the embedded data (data.c): the JSON document and the compressed detail chunks. */
struct ws_progress;
/* progress counts 3 units per allocation: the two sweeps, then the encoding. */
int view_write_data(const struct view_model *m, FILE *out, const struct ws_view_options *o,
                    struct ws_progress *progress, char *err, size_t errlen);

#endif
