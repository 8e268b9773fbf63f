/*
 * Progress of long work on stderr: one line rewritten in place with a percentage and a rate.
 *
 * Drawn only when stderr is a terminal, the command was not given --quiet, and the work has
 * already taken longer than a delay (1 s; WSTRACE_PROGRESS_DELAY=SECONDS sets another), so that
 * quick commands and everything written to a pipe or a file stay exactly as they were.  The
 * line is erased when the work ends: what the command prints afterwards is not mixed with it.
 *
 * Updating is cheap enough for a loop over millions of rows: ws_progress_update is one
 * comparison until the next time the clock is due to be read.
 */
#ifndef WS_PROGRESS_H
#define WS_PROGRESS_H

#include <pthread.h>
#include <stdint.h>

struct ws_progress {
    char what[96];      /* "reading trace.db" */
    const char *unit;   /* "rows", "records", "events" */
    uint64_t total;     /* 0 when unknown: a count and a rate, no percentage */
    uint64_t done;      /* set by ws_progress_update */
    uint64_t next_poll; /* done at which the clock is read next; UINT64_MAX when progress is off */
    uint64_t stride;    /* updates between two clock reads, adapted to the rate */
    double start_s, last_s;
    int shown; /* a line is on the terminal */
};

/* Silence every progress line of this process (--quiet). */
void ws_progress_set_quiet(int quiet);
/* 1 when progress would be drawn: stderr is a terminal and not quiet. */
int ws_progress_enabled(void);

/* Start a unit of work: what (copied, shortened to fit), its unit, and the expected total. */
void ws_progress_begin(struct ws_progress *p, const char *what, const char *unit, uint64_t total);
void ws_progress_poll(struct ws_progress *p);
static inline void ws_progress_update(struct ws_progress *p, uint64_t done)
{
    p->done = done;
    if (done >= p->next_poll)
        ws_progress_poll(p);
}
/* The work is over: erase the line when one was drawn. */
void ws_progress_end(struct ws_progress *p);

/*
 * Progress of work bounded by time rather than by a count (a search under a time limit): a
 * thread redraws the share of the time budget used until ws_progress_timer_stop.  When the
 * thread cannot be started the work goes on without progress.
 */
struct ws_progress_timer {
    struct ws_progress p;
    double seconds;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int running, stop;
};

void ws_progress_timer_start(struct ws_progress_timer *t, const char *what, double seconds);
void ws_progress_timer_stop(struct ws_progress_timer *t);

#endif
