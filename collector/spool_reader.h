/*
 * Reading a spool: validation, per-thread chunk order, and a time-ordered merge of all threads'
 * records.  The reader half of the handoff with ws_rec_commit() (libtrace/tracer.h): only the
 * first `committed` records of a chunk are trusted, read with acquire order.
 */
#ifndef WS_SPOOL_READER_H
#define WS_SPOOL_READER_H

#include <stddef.h>
#include <stdint.h>

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
};

struct ws_spool {
    int fd;
    const uint8_t *map;
    size_t size;
    const struct ws_spool_header *hdr;
    struct ws_spool_thread *threads;
    size_t nthreads;
    size_t nchunks;           /* valid chunks */
    uint64_t corrupt_records; /* records skipped because they were malformed */
    size_t *heap;             /* merge heap of thread indices */
    size_t heap_len;
};

/* Open and index a spool.  0 or -1 with one line in err. */
int ws_spool_open(const char *path, struct ws_spool *s, char *err, size_t errlen);
void ws_spool_close(struct ws_spool *s);

/* Next record in global time order (ties: thread serial, then record order).  Returns the head
 * record, with its string continuation records following it, or NULL at the end.
 * *thread is the index into s->threads. */
const struct ws_rec *ws_spool_next(struct ws_spool *s, size_t *thread);

/* The string payload of a record: pointer and length (length clamped to what was written). */
static inline const char *ws_rec_text(const struct ws_rec *r, size_t *len)
{
    uint64_t n = r->u[1];
    uint64_t cap = (uint64_t)r->ext * WS_REC_BYTES;
    *len = (size_t)(n < cap ? n : cap);
    return (const char *)(r + 1);
}

#endif
