/*
 * Who owns a spool or a half-written trace, and whether its writer still runs.  Shared by
 * libwstrace.so (choosing its output at start-up), `wstrace record` and `wstrace collect`, so that
 * any number of processes can trace into one output at once (README, "Processes, threads,
 * crashes").
 *
 * The protocol:
 *  - a spool is created with O_EXCL, never through a symbolic link, and its writer holds an
 *    exclusive flock() on it from creation until it has converted it (an image started by exec
 *    takes the lock again at start-up: ws_spool_probe() below tells that short gap from a dead
 *    writer by the writer's pid and start time);
 *  - a spool is stale when nobody holds its lock and its writer is gone;
 *  - only a process holding the lock of a stale spool moves it aside, removes or converts it.
 * Temporary trace files (TRACE.tmp.<pid>[.<k>]) follow the same rule: created exclusively, locked
 * while written, removed by a later collector once their writer is gone.
 */
#ifndef WS_SPOOL_FILES_H
#define WS_SPOOL_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "spool_format.h"

/* Start time of process pid (/proc/PID/stat field 22); 0 when it cannot be read.  *state (may be
 * NULL) receives its state letter ('Z' for a zombie). */
uint64_t ws_proc_start_ticks(long pid, char *state);

/* 1 when the process that wrote a spool header is still running: same pid and, when start_ticks
 * is known, the same start time (a later process may reuse the pid). */
int ws_process_alive(uint64_t pid, uint64_t start_ticks);

enum ws_spool_use {
    WS_SPOOL_ABSENT, /* no such file */
    WS_SPOOL_LOCKED, /* its writer (or a converter) holds it */
    WS_SPOOL_ALIVE,  /* not locked, but its writer still runs (an exec in progress) */
    WS_SPOOL_STALE,  /* left by a process that is gone: *fd holds its lock */
    WS_SPOOL_OTHER,  /* not a wstrace spool, not a regular file, or unreadable: leave it alone */
};

/* Find out who holds the spool at path.  *h receives the header when it is a spool; on
 * WS_SPOOL_STALE *fd is an open descriptor holding the spool's exclusive lock (close it to
 * release), otherwise -1. */
enum ws_spool_use ws_spool_probe(const char *path, int *fd, struct ws_spool_header *h);

/* Move a stale spool (fd from ws_spool_probe, still locked) to "<output>.<pid>.spool", or
 * "<output>.<pid>.<k>.spool" when that name is taken; never replaces a file.  The new name goes to
 * moved.  0, or -1 with errno set. */
int ws_spool_move_aside(const char *path, int fd, const char *output, uint64_t pid, char *moved, size_t len);

/* Remove a stale spool (fd from ws_spool_probe, still locked): 0 or -1. */
int ws_spool_remove_stale(const char *path, int fd);

/* Create "<trace>.tmp.<pid>" (or ".<k>" after it when taken) exclusively, never through a link,
 * and lock it; the name goes to tmp and the descriptor to *fd (close it after the rename).
 * 0, or -1 with errno set. */
int ws_temp_create(const char *trace, char *tmp, size_t len, int *fd);

/* Remove the temporary files of trace that processes now gone left behind (a killed collector);
 * a file still locked or whose writer runs is left alone.  Returns how many were removed. */
int ws_temp_remove_stale(const char *trace);

/* Called by ws_scan_pid_files for each file "<trace>.<pid><suffix>": pid and the file's path. */
typedef void (*ws_pid_file_fn)(void *ctx, long pid, const char *path);

/* The files "<trace>.<pid><suffix>" beside trace (pid > 0; suffix "" for the traces of other
 * processes, ".spool" for their spools): fn is called once for each, in directory order.  A
 * trace without a folder part (no '/') is not scanned. */
void ws_scan_pid_files(const char *trace, const char *suffix, ws_pid_file_fn fn, void *ctx);

/* Called by ws_spool_scan_dead for the spool of each process that is gone: pid, its trace
 * "<trace>.<pid>" and its spool "<trace>.<pid>.spool".  The callback decides whether and how to
 * convert it (it must probe the spool itself: the scan does not take its lock). */
typedef void (*ws_dead_spool_fn)(void *ctx, long pid, const char *child_trace, const char *spool);

/* The spools "<trace>.<pid>.spool" beside trace whose process pid is gone (not the caller, and
 * kill(pid, 0) fails with ESRCH): fn is called once for each, in directory order.  A trace
 * without a folder part (no '/') is not scanned.  Used by libwstrace.so at exit and by
 * `wstrace record` to convert the spools of children killed before converting theirs. */
void ws_spool_scan_dead(const char *trace, ws_dead_spool_fn fn, void *ctx);

#endif
