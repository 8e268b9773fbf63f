/*
 * CUDA graphs, stream capture, arrays and memory pools in the collector (collector/graphs.c).
 *
 * collector.c hands this module the records it does not handle itself, and a few of its own
 * (allocations, launches) after it handled them.  What a graph launch runs becomes ordinary
 * allocation, free and launch records of the launching thread, replayed through collector.c (the
 * host below), so pairing, attribution and the analysis treat them like any other; this module
 * writes the tables that say where they came from.
 */
#ifndef WS_COLLECTOR_GRAPHS_H
#define WS_COLLECTOR_GRAPHS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "spool_format.h"

/* What collector.c does for this module. */
struct ws_graph_host {
    void *ctx;
    /* Handle record r (ALLOC, FREE or LAUNCH) as one of thread ti's; *row is the id of the row it
     * made (the allocation, or the launch).  0, or -1 on a failure collector.c reported. */
    int (*replay)(void *ctx, size_t ti, const struct ws_rec *r, int64_t *row);
    /* The id of the traced allocation live at address, or 0. */
    int64_t (*live_allocation)(void *ctx, uint64_t address);
    /* Thread ti's row id, its innermost open range and the open run (0 when none). */
    void (*where)(void *ctx, size_t ti, int64_t *thread_id, int64_t *range_id, int64_t *run_id);
    /* The strings row naming a launched function, or 0. */
    int64_t (*kernel_name)(void *ctx, uint64_t function);
};

struct ws_graphs;

int ws_graphs_open(sqlite3 *db, const struct ws_graph_host *host, size_t nthreads, struct ws_graphs **out, char *err,
                   size_t errlen);
void ws_graphs_close(struct ws_graphs *g);

/* Before collector.c handles record r of thread ti: 1 when this module took it (a captured call,
 * or an IPC mapping opened or closed again), 0 when collector.c handles it, -1 on failure. */
int ws_graphs_take(struct ws_graphs *g, size_t ti, const struct ws_rec *r);
/* One of the record types of this module (CAPTURE_*, GRAPH_*, ARRAY, POOL*). */
int ws_graphs_record(struct ws_graphs *g, size_t ti, const struct ws_rec *r);
/* After collector.c handled an ALLOC (allocation: its row id) or a GRAPH_LAUNCH (launch: the id
 * of the cudaGraphLaunch row it wrote). */
int ws_graphs_allocated(struct ws_graphs *g, size_t ti, const struct ws_rec *r, int64_t allocation);
int ws_graphs_launched(struct ws_graphs *g, size_t ti, const struct ws_rec *r, int64_t launch);
/* At the end of the spool: what is still open is written. */
int ws_graphs_finish(struct ws_graphs *g);

/* The message of the last failure. */
const char *ws_graphs_error(const struct ws_graphs *g);

#endif
