/*
 * Bringing traces together: importers of other tools' files (Nsight Systems SQLite exports,
 * PyTorch CUDA memory snapshots), the merge of several traces into one, and the per-process
 * figures that summary and report show for traces of several processes.  Every importer writes
 * the schema the collector writes (schema/README.md), so every analysis works on its output;
 * docs/import.md says what each one maps and what it cannot know.
 *
 * Errors are values: functions return 0 on success, -1 with one line in err.
 */
#ifndef WS_IMPORT_H
#define WS_IMPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#include "analysis.h"
#include "process_row.h"

/* ---- importers ---- */

struct ws_import_stats {
    int64_t processes, threads, ranges, allocations, frees, launches, marks, skipped;
    char missing[768]; /* what the input lacked, one line ("" when nothing) */
};

/* Nsight Systems `nsys export --type sqlite` report -> trace. */
int ws_import_nsys(const char *report, const char *output, struct ws_import_stats *st, char *err, size_t errlen);

/* How a PyTorch snapshot's frames name the node of an allocation. */
enum ws_node_rule {
    WS_NODE_FRAME,  /* innermost frame of the user's code: "file.py:LINE:function" */
    WS_NODE_MODULE, /* the same frame by module path: "package.module.function" */
};

/* PyTorch `torch.cuda.memory._dump_snapshot()` pickle -> trace. */
int ws_import_torch_snapshot(const char *snapshot, const char *output, enum ws_node_rule rule,
                             struct ws_import_stats *st, char *err, size_t errlen);

/* ---- merge ---- */

struct ws_merge_stats {
    int64_t processes, rows;
};

/* Merge traces into output (replaced atomically).  Tables are copied by column name, ids
 * renumbered, references remapped through declared foreign keys, times aligned per input by
 * the recorded start of its processes; docs/import.md gives every rule. */
int ws_merge_traces(const char *const *inputs, size_t n, const char *output, struct ws_merge_stats *st, char *err,
                    size_t errlen);

/* ---- processes of a trace (summary, report --ranks) ---- */

struct ws_process_facts {
    int64_t id, pid, rank, local_rank; /* WS_UNKNOWN when not known */
    char *host, *source, *label;       /* label: "rank 3", else "pid 1234", else "process 2" */
    int64_t peak_bytes;                /* largest peak of live device bytes over its devices */
    int64_t allocation_calls, failed_calls, launches, lost_records;
};

struct ws_processes {
    struct ws_process_facts *items; /* in id order */
    size_t count;
    int32_t largest, smallest; /* indices by peak_bytes (first of equals) */
};

int ws_processes_load(sqlite3 *db, const struct ws_analysis *an, struct ws_processes *out, char *err, size_t errlen);
void ws_processes_free(struct ws_processes *p);

/* Where the trace's rows came from, in words: "tracer", "nsys", "merge of 8 traces (tracer)". */
void ws_trace_source(sqlite3 *db, char *buf, size_t len);

/* ---- the trace writer the importers share (writer.c) ---- */

struct ws_strmap {
    char **keys;
    int64_t *ids;
    size_t cap, count;
};

struct ws_trace_writer {
    sqlite3 *db;
    char tmp[4200];
    const char *path;
    sqlite3_stmt *st_string, *st_thread, *st_range, *st_alloc, *st_launch, *st_mark, *st_domain, *st_error;
    sqlite3_stmt *st_stack, *st_frame, *st_alloc_stack, *st_run;
    struct ws_strmap strings;
    int64_t next_alloc, next_stack;
    char *err;
    size_t errlen;
};

struct ws_alloc_row { /* one allocations row; WS_UNKNOWN integers and NULL texts are written as NULL */
    int64_t id;       /* 0: the next id; importers that write rows at the free give the id of the call */
    const char *api, *memory, *free_api;
    int64_t device, address, requested, bytes, status, stream, thread, range, run;
    int64_t alloc_ns, free_ns, free_thread, free_range, free_stream;
};

struct ws_range_row {
    int64_t id, thread, end_thread, name, domain, parent, depth, run, start_ns, end_ns;
    const char *kind, *source;
};

struct ws_launch_row {
    const char *api;
    int64_t kernel_name, function, grid[3], block[3], shared_bytes, stream, status, thread, range, run, ns;
};

void ws_alloc_row_init(struct ws_alloc_row *a);
void ws_launch_row_init(struct ws_launch_row *l);

/* Create output's temporary file with the current schema and begin one transaction. */
int ws_writer_open(struct ws_trace_writer *w, const char *output, char *err, size_t errlen);
int64_t ws_writer_string(struct ws_trace_writer *w, const char *s); /* interned id, or -1 */
int ws_writer_process(struct ws_trace_writer *w, const struct ws_process_row *p);
int ws_writer_thread(struct ws_trace_writer *w, int64_t id, int64_t process, int64_t os_tid, int64_t name,
                     int64_t first_ns, int64_t last_ns);
int ws_writer_range(struct ws_trace_writer *w, const struct ws_range_row *r);
int64_t ws_writer_alloc(struct ws_trace_writer *w, const struct ws_alloc_row *a); /* allocation id, or -1 */
int ws_writer_launch(struct ws_trace_writer *w, const struct ws_launch_row *l);
int ws_writer_mark(struct ws_trace_writer *w, int64_t thread, int64_t name, int64_t domain, int64_t range, int64_t ns);
int ws_writer_domain(struct ws_trace_writer *w, int64_t id, int64_t name);
int ws_writer_run(struct ws_trace_writer *w, int64_t id, int64_t thread, int64_t shape_key, int64_t start_ns,
                  int64_t end_ns);
int ws_writer_api_error(struct ws_trace_writer *w, const char *api, int64_t status, int64_t address, int64_t thread,
                        int64_t range, int64_t ns);
/* A stack of n frames (innermost first): returns its id, or -1. */
int64_t ws_writer_stack(struct ws_trace_writer *w, size_t n, const int64_t *function, const int64_t *file,
                        const int64_t *line);
int ws_writer_alloc_stack(struct ws_trace_writer *w, int64_t allocation, int64_t stack);
int ws_writer_meta_text(struct ws_trace_writer *w, const char *key, const char *value);
int ws_writer_meta_int(struct ws_trace_writer *w, const char *key, long long value);
/* ok: index, commit and rename over the output; !ok: discard.  Always releases everything. */
int ws_writer_close(struct ws_trace_writer *w, int ok);
/* One line into the writer's err; returns -1. */
int ws_writer_fail(struct ws_trace_writer *w, const char *what);

/* ---- the strict pickle reader (pickle.c) ---- */

enum ws_pv_kind {
    WS_PV_NONE,
    WS_PV_BOOL,
    WS_PV_INT,
    WS_PV_FLOAT,
    WS_PV_STR,
    WS_PV_BYTES,
    WS_PV_LIST,
    WS_PV_TUPLE,
    WS_PV_DICT,
    WS_PV_BIGINT
};

struct ws_pv { /* a value of the pickle; lists, tuples and dicts hold n items (dicts: key, value pairs) */
    uint8_t kind;
    int64_t i;     /* BOOL, INT */
    double f;      /* FLOAT */
    const char *s; /* STR, BYTES (NUL-terminated copy), BIGINT (decimal text is not kept: s is NULL) */
    size_t len;    /* STR, BYTES length; items of LIST, TUPLE; pairs of DICT */
    struct ws_pv **items;
    size_t cap;
};

struct ws_pickle; /* owns every value */

/* Parse a pickle of protocol 0-5 made of None, booleans, integers, floats, strings, bytes,
 * lists, tuples and dicts, and memo references to them.  Every opcode that would name, import
 * or call something (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, PERSID,
 * BINPERSID, EXT1/2/4) is refused: the reader never executes anything.  Depth and sizes are
 * bounded.  *root is owned by *out; free with ws_pickle_free. */
int ws_pickle_parse(const unsigned char *data, size_t len, struct ws_pickle **out, const struct ws_pv **root, char *err,
                    size_t errlen);
void ws_pickle_free(struct ws_pickle *p);

/* Dict lookup by string key; NULL when absent or not a dict. */
const struct ws_pv *ws_pv_get(const struct ws_pv *dict, const char *key);

#endif
