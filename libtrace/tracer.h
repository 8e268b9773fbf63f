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

/* Per-thread state.  `next` is where the next record goes in the thread's current mmap'd chunk,
 * `end` the end of that chunk (both NULL without a chunk: TLS starts zeroed, so a new thread takes
 * the slow path of ws_rec_reserve() on its first record). */
struct ws_thread {
    struct ws_chunk_header *chunk; /* NULL until the first record, or after fork */
    struct ws_rec *next;
    struct ws_rec *end;
    struct ws_rec *fast_end; /* end while records are timed by the TSC, else NULL: ws_rec_put() writes below it */
    uint32_t serial;
    uint32_t in_hook; /* re-entry guard: work inside a hook is never traced twice */
    uint64_t seq;
    uint64_t generation;    /* spool generation the chunk belongs to (changes on fork) */
    int *errno_at;          /* this thread's errno, found once */
    int device;             /* the device current on the thread, as cudaSetDevice set it (hooks_cuda.c) */
    uint32_t driver_device; /* the device of the thread's current context + 1; 0: not known (hooks_driver.c) */
};

extern WS_TLS struct ws_thread ws_self;
extern int ws_enabled __attribute__((visibility("hidden"))); /* 0 when tracing is off: hooks only forward */

/* Slow path: map a fresh chunk for the calling thread.  Returns 0 or -1 (record lost). */
int ws_spool_next_chunk(struct ws_thread *t);
void ws_count_lost(uint64_t n);
void ws_count_truncated(void);

/* CLOCK_MONOTONIC in nanoseconds: the spool header's times (start_ns, end_ns, calibration pairs). */
static inline uint64_t ws_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* 1 when records carry raw time-stamp counter ticks (the spool header says so: clock
 * WS_CLOCK_TSC), set once at start-up by ws_clock_choose() (tracer.c). */
extern int ws_clock_tsc __attribute__((visibility("hidden")));

static inline uint64_t ws_tsc(void)
{
#if defined(__x86_64__)
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
#else
    return 0;
#endif
}

/* A record's time: time-stamp counter ticks where the counter is invariant and the kernel keeps
 * CLOCK_MONOTONIC with it (the collector maps them to CLOCK_MONOTONIC nanoseconds through the
 * spool's calibration pairs, collector/spool_clock.c), else CLOCK_MONOTONIC nanoseconds. */
static inline uint64_t ws_now(void)
{
    if (__builtin_expect(ws_clock_tsc, 1))
        return ws_tsc();
    return ws_monotonic_ns();
}

/*
 * Reserve n contiguous records in the calling thread's chunk; publish them with
 * ws_rec_commit().  The pair is the writer half of the handoff that ws_spool_read()
 * (collector/spool_reader.c) reads: records become visible only through the release store.
 */
static inline struct ws_rec *ws_rec_reserve(uint32_t n)
{
    struct ws_thread *t = &ws_self;
    if (__builtin_expect(n > ((uintptr_t)t->end - (uintptr_t)t->next) / WS_REC_BYTES, 0)) {
        if (n > WS_CHUNK_RECS || ws_spool_next_chunk(t) != 0) {
            ws_count_lost(1);
            return NULL;
        }
    }
    return t->next;
}

static inline void ws_rec_commit(uint32_t n)
{
    struct ws_thread *t = &ws_self;
    t->next += n;
    /* every record before next: those ws_rec_put() published itself too */
    __atomic_store_n(&t->chunk->committed, (uint32_t)(t->next - (struct ws_rec *)(t->chunk + 1)), __ATOMIC_RELEASE);
}

/*
 * The hot hooks' records (allocations, frees and launches of hooks_cuda.c and hooks_driver.c) are
 * written by a leaf function that the traced half tail-calls after the real call (its "finish"):
 * no registers to save, no call, and errno left alone, since nothing on that path can change it.
 * ws_rec_put() writes a whole record there (head: WS_REC_HEAD) and returns 1; when the leaf cannot
 * (no room in the chunk, or records are not timed by the TSC: fast_end) it writes nothing and returns 0, and
 * the finish takes its general path, which saves errno and may map a chunk or read the clock.
 * Every field is written; the record publishes itself (WS_REC_PUBLISHED, common/spool_format.h).
 */
#define WS_REC_HEAD(type, api, status)                                                                                 \
    ((uint64_t)(uint8_t)(type) | (uint64_t)(uint8_t)(api) << 8 | (uint64_t)(uint32_t)(int32_t)(status) << 32)

/* The status a record head carries (what the finish returns). */
static inline int32_t ws_rec_head_status(uint64_t head) { return (int32_t)(head >> 32); }

static inline __attribute__((always_inline)) int ws_rec_put_(uint64_t head, int now, uint64_t ns, uint64_t u0,
                                                             uint64_t u1, uint64_t u2, uint64_t u3, uint64_t u4,
                                                             uint64_t u5)
{
    struct ws_thread *t = &ws_self;
    struct ws_rec *r = t->next;
    if (__builtin_expect((uintptr_t)r >= (uintptr_t)t->fast_end, 0))
        return 0;
#if defined(__x86_64__)
    if (now) { /* the counter's halves stored as they come (the time field is little-endian) */
        uint32_t lo, hi;
        __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
        memcpy((char *)&r->ns, &lo, sizeof lo);
        memcpy((char *)&r->ns + sizeof lo, &hi, sizeof hi);
    } else
#endif
        r->ns = now ? ws_tsc() : ns;
    r->u[0] = u0;
    r->u[1] = u1;
    r->u[2] = u2;
    r->u[3] = u3;
    r->u[4] = u4;
    r->u[5] = u5;
    /* Published by its tag (WS_REC_PUBLISHED, spool_format.h), the partner of chunk_readable() in
     * collector/spool_reader.c: no count to keep. */
    r->status = ws_rec_head_status(head);
    __atomic_store_n(&r->tag, (uint32_t)head | WS_REC_PUBLISHED << 16, __ATOMIC_RELEASE);
    t->next = r + 1;
    return 1;
}

/*
 * A record filled before the real call, published after it: the hot launch hooks write their
 * fields into the slot ws_rec_put() would take (ws_rec_open), so that only the slot lives across
 * the call, then store the status and the time and publish the tag (ws_rec_close).  The slot is
 * claimed (next advanced) only when it is published: while the call runs it is not published, so
 * a reader stops before it.  Nothing else writes the thread's chunk meanwhile: the hook's guard is
 * set before the slot is filled (the compiler may not move the stores before it either), so calls
 * made inside the real one, a signal handler's included, are only forwarded.  The one way the slot
 * can go is a fork inside the call: the child maps no chunk of the parent's and keeps a copy of
 * the slot (ws_rec_opened()).
 */
static inline __attribute__((always_inline)) struct ws_rec *ws_rec_open(void) { return ws_self.next; }

/* 1 when the slot ws_rec_open() answered may be filled: records are timed by the counter and the
 * chunk has room (fast_end, as for ws_rec_put(); NULL without a chunk). */
static inline int ws_rec_openable(const struct ws_rec *r)
{
    return __builtin_expect((uintptr_t)r < (uintptr_t)ws_self.fast_end, 1);
}

/* 1 when r, filled since ws_rec_open(), is still the calling thread's next slot. */
static inline int ws_rec_still_open(const struct ws_rec *r) { return ws_self.next == r; }

/* r's time: now, by the counter (records opened are timed by it). */
static inline __attribute__((always_inline)) void ws_rec_stamp(struct ws_rec *r)
{
#if defined(__x86_64__)
    uint32_t lo, hi; /* the counter's halves stored as they come (the time field is little-endian) */
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    memcpy((char *)&r->ns, &lo, sizeof lo);
    memcpy((char *)&r->ns + sizeof lo, &hi, sizeof hi);
#else
    r->ns = ws_tsc();
#endif
}

/* Publish r (ws_rec_still_open) with the type, api and status of head, and claim it. */
static inline __attribute__((always_inline)) void ws_rec_close(struct ws_rec *r, uint64_t head)
{
    r->status = ws_rec_head_status(head);
    __atomic_store_n(&r->tag, (uint32_t)head | WS_REC_PUBLISHED << 16, __ATOMIC_RELEASE);
    ws_self.next = r + 1;
}

/* ws_rec_close() timed now. */
static inline __attribute__((always_inline)) void ws_rec_close_now(struct ws_rec *r, uint64_t head)
{
    ws_rec_stamp(r);
    ws_rec_close(r, head);
}

/* The fields of a slot filled since ws_rec_open() (r), where they can be read after the call: r
 * while it is the thread's next slot, the copy a forked child kept of it, else NULL. */
const struct ws_rec *ws_rec_opened(const struct ws_rec *r);

/* ws_rec_put() at a time taken before (a free's), and at the present time. */
static inline __attribute__((always_inline)) int ws_rec_put(uint64_t head, uint64_t ns, uint64_t u0, uint64_t u1,
                                                            uint64_t u2, uint64_t u3, uint64_t u4, uint64_t u5)
{
    return ws_rec_put_(head, 0, ns, u0, u1, u2, u3, u4, u5);
}
static inline __attribute__((always_inline)) int ws_rec_put_now(uint64_t head, uint64_t u0, uint64_t u1, uint64_t u2,
                                                                uint64_t u3, uint64_t u4, uint64_t u5)
{
    return ws_rec_put_(head, 1, 0, u0, u1, u2, u3, u4, u5);
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
