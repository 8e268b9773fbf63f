/*
 * The collector: turns one spool into one SQLite trace with a single writer and large
 * transactions.  Used in-process by libwstrace.so at exit and by `wstrace collect`.
 */
#ifndef WS_COLLECTOR_H
#define WS_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>

struct ws_collect_stats {
    uint64_t records;     /* head records read (strings not counted separately) */
    uint64_t allocations; /* rows written to allocations */
    uint64_t launches;
    uint64_t ranges;
    uint64_t threads;
    uint64_t lost_records;    /* counted by the tracer: could not be kept */
    uint64_t corrupt_records; /* malformed records, or records cut off a truncated spool, skipped by the reader */
    int clean_exit;           /* the traced process ended normally */
    int spool_removed;        /* WS_COLLECT_REMOVE_SPOOL: the spool was removed */
    int spool_errno;          /* WS_COLLECT_REMOVE_SPOOL: why it was kept after all (EBUSY: its writer still runs) */
};

/* Write the trace for spool_path into db_path (replaced atomically: a temporary file, created
 * exclusively, is renamed over it only on success; db_path must be a regular file or absent, and
 * temporary files that killed collectors left behind are removed first).  Refuses a spool that
 * another process writes or converts (collector/spool_files.h).  0 or -1 with one line in err. */
int ws_collect_spool(const char *spool_path, const char *db_path, struct ws_collect_stats *stats, char *err,
                     size_t errlen);

/* Progress of a conversion: records converted so far and the records in the spool (string
 * continuations included in both).  Called every few tens of thousands of records. */
typedef void (*ws_collect_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/* ws_collect_spool with a progress callback (progress may be NULL). */
int ws_collect_spool_progress(const char *spool_path, const char *db_path, struct ws_collect_stats *stats,
                              ws_collect_progress_fn progress, void *ctx, char *err, size_t errlen);

/* Flags of ws_collect_spool_ex. */
enum {
    WS_COLLECT_OWNER = 1u, /* the caller is the spool's writer and holds its lock (libwstrace.so at exit) */
    /* Remove the spool once its trace is written in full (renamed into place), while its lock is
     * still held, so that no later spool of the same name is touched.  A spool that fails to
     * convert is always kept; so is one that was never locked and whose writer still runs, and one
     * that cannot be removed (stats->spool_errno says why).  Not with WS_COLLECT_OWNER: the writer
     * removes its own spool. */
    WS_COLLECT_REMOVE_SPOOL = 2u,
};
/* Both of the above, with flags (progress may be NULL). */
int ws_collect_spool_ex(const char *spool_path, const char *db_path, unsigned flags, struct ws_collect_stats *stats,
                        ws_collect_progress_fn progress, void *ctx, char *err, size_t errlen);

#endif
