/*
 * Internal interface of libwstrace.so: start-up, configuration, and the per-thread record
 * buffer that every hook writes into.
 */
#ifndef WS_TRACER_H
#define WS_TRACER_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "spool_format.h"

#define WS_EXPORT __attribute__((visibility("default")))
#define WS_TLS    __thread __attribute__((tls_model("initial-exec")))

/* Per-thread state.  `recs` points into the thread's current mmap'd chunk; `room` is how many
 * records still fit in it (0 without a chunk: TLS starts zeroed, so a new thread takes the slow
 * path of ws_rec_reserve() on its first record). */
struct ws_thread {
    struct ws_chunk_header *chunk; /* NULL until the first record, or after fork */
    struct ws_rec *recs;
    uint32_t used;
    uint32_t room; /* WS_CHUNK_RECS - used with a chunk, else 0 */
    uint32_t serial;
    uint32_t in_hook; /* re-entry guard: work inside a hook is never traced twice */
    uint64_t seq;
    uint64_t generation;    /* spool generation the chunk belongs to (changes on fork) */
    int *errno_at;          /* this thread's errno, found once */
    int device;             /* the device current on the thread, as cudaSetDevice set it (hooks_cuda.c) */
    uint32_t driver_device; /* the device of the thread's current context + 1; 0: not known (hooks_driver.c) */
};

extern WS_TLS struct ws_thread ws_self;
extern int ws_enabled; /* 0 when tracing is off: hooks only forward */

/* Slow path: map a fresh chunk for the calling thread.  Returns 0 or -1 (record lost). */
int ws_spool_next_chunk(struct ws_thread *t);
void ws_count_lost(uint64_t n);
void ws_count_truncated(void);

static inline uint64_t ws_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Reserve n contiguous records in the calling thread's chunk; publish them with
 * ws_rec_commit().  The pair is the writer half of the handoff that ws_spool_read()
 * (collector/spool_reader.c) reads: records become visible only through the release store.
 */
static inline struct ws_rec *ws_rec_reserve(uint32_t n)
{
    struct ws_thread *t = &ws_self;
    if (__builtin_expect(n > t->room, 0)) {
        if (n > WS_CHUNK_RECS || ws_spool_next_chunk(t) != 0) {
            ws_count_lost(1);
            return NULL;
        }
    }
    return &t->recs[t->used];
}

static inline void ws_rec_commit(uint32_t n)
{
    struct ws_thread *t = &ws_self;
    t->used += n;
    t->room -= n;
    __atomic_store_n(&t->chunk->committed, t->used, __ATOMIC_RELEASE);
}

/*
 * Every hook brackets its recording with these: ws_hook_enter() returns 1 when the call must be
 * recorded (tracing on, and not already inside a hook on this thread: work done by the tracer
 * itself is never traced twice); ws_hook_leave() restores the errno the program must see.
 */
static inline int ws_hook_enter(void)
{
    if (__builtin_expect(!ws_enabled, 0) || __builtin_expect(ws_self.in_hook != 0, 0))
        return 0;
    ws_self.in_hook = 1;
    return 1;
}

/* ws_hook_enter() in the traced half of a two-half hook (WS_HOOK, graph_hooks.h), which is reached
 * with tracing on, except on the calls made before the real function was known (`first`): only
 * those test ws_enabled here. */
static inline int ws_hook_enter_traced(int first)
{
    if (__builtin_expect(first, 0) && !ws_enabled)
        return 0;
    if (__builtin_expect(ws_self.in_hook != 0, 0))
        return 0;
    ws_self.in_hook = 1;
    return 1;
}

/* The calling thread's errno, found once per thread (cheaper than __errno_location each call). */
static inline int *ws_errno(void)
{
    int *e = ws_self.errno_at;
    if (__builtin_expect(!e, 0))
        ws_self.errno_at = e = &errno;
    return e;
}

static inline void ws_hook_leave(int saved_errno)
{
    ws_self.in_hook = 0;
    *ws_errno() = saved_errno;
}

/* 1 when a hook only forwards: tracing is off in this process (one load; hooks test it before
 * anything else, so that an untraced call costs that load and a jump to the real function). */
static inline int ws_forward_only(void) { return __builtin_expect(!ws_enabled, 1); }

/* A record with a string payload of len bytes (truncated at WS_MAX_STRING). */
struct ws_rec *ws_rec_string(uint8_t type, const char *s, size_t len, uint32_t *nrecs);

/* Record a string-carrying event in one call; returns the head record or NULL. */
static inline struct ws_rec *ws_rec_with_string(uint8_t type, const char *s, uint32_t *nrecs)
{
    return ws_rec_string(type, s ? s : "", s ? strlen(s) : 0, nrecs);
}

void ws_tracer_start(void);
void ws_tracer_stop(void);

/* Called by the hooks when a function pointer is launched: records its symbol once per thread. */
void ws_note_function(const void *fn);
/* A forked child writes a new spool: the names its thread recorded went to the parent's. */
void ws_forget_named_functions(void);

#endif
