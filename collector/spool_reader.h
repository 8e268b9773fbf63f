/*
 * Reading a spool: validation, per-thread chunk order, and a time-ordered merge of all threads'
 * records.  The reader half of the handoff with ws_rec_commit() and ws_rec_put() (libtrace/tracer.h):
 * the first `committed` records of a chunk are trusted, read with acquire order, then (version 3)
 * the records after them that published themselves (WS_REC_PUBLISHED, spool_format.h).
 */
#ifndef WS_SPOOL_READER_H
#define WS_SPOOL_READER_H

#include <stddef.h>
#include <stdint.h>

#include "spool_clock.h"
#include "spool_format.h"

struct ws_spool_thread {
    uint32_t serial;
    uint64_t os_tid;
    size_t nchunks;
    const struct ws_chunk_header **chunks; /* in seq order */
    /* merge cursor */
    size_t chunk_at;
    uint32_t rec_at;
    uint32_t committed;
    /* WS_CLOCK_TSC: the copy of the record last handed out, its time in nanoseconds */
    struct ws_rec *view;
    size_t view_cap; /* records */
};

struct ws_spool {
    int fd;
    const uint8_t *map;
    size_t size;
    const struct ws_spool_header *hdr;
    struct ws_spool_thread *threads;
    size_t nthreads;
    size_t nchunks;           /* valid chunks */
    uint64_t corrupt_records; /* records skipped: malformed, or cut off by the end of the file */
    size_t *heap;             /* merge heap of thread indices */
    size_t heap_len;
    int tsc;                     /* records carry counter ticks: handed out as copies timed by clock */
    struct ws_spool_clock clock; /* (spool_clock.h) */
};

/* Open and index a spool.  0 or -1 with one line in err. */
int ws_spool_open(const char *path, struct ws_spool *s, char *err, size_t errlen);
void ws_spool_close(struct ws_spool *s);

/* Next record in global time order (ties: thread serial, then record order).  Returns the head
 * record, with its string continuation records following it, or NULL at the end.
 * *thread is the index into s->threads.  Its time is CLOCK_MONOTONIC nanoseconds whatever the
 * spool's clock: a spool timed by the counter hands out copies, each valid until the next record
 * of the same thread is taken. */
const struct ws_rec *ws_spool_next(struct ws_spool *s, size_t *thread);

/* Records of equal time on different threads: the first thread other than `except` whose records
 * of time ns (those it holds next) include one of `type` with status 0 and u[0] == address.
 * 1 and *thread set, or 0.  The collector uses it to order a free before the allocation that
 * reused its address when both carry the same time (collector.c, take_tied). */
int ws_spool_find_tied(struct ws_spool *s, size_t except, uint64_t ns, uint8_t type, uint64_t address, size_t *thread);

/* The next record of one thread, taken out of the merge order (its records of the same time as the
 * merge's last one); NULL when the thread has none left. */
const struct ws_rec *ws_spool_next_of(struct ws_spool *s, size_t thread);

/* The records a reader may trust in chunk c of s (string continuations included). */
uint32_t ws_spool_chunk_records(const struct ws_spool *s, const struct ws_chunk_header *c);

/* The string payload of a record: pointer and length (length clamped to what was written). */
static inline const char *ws_rec_text(const struct ws_rec *r, size_t *len)
{
    uint64_t n = r->u[1];
    uint64_t cap = (uint64_t)r->ext * WS_REC_BYTES;
    *len = (size_t)(n < cap ? n : cap);
    return (const char *)(r + 1);
}

#endif
