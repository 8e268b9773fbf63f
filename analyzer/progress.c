/* One rewritten line of progress on stderr, only on a terminal and only for long work. */
#include "progress.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_DELAY_S 1.0
#define REDRAW_S        0.1 /* at most ten redraws a second */
#define POLL_S          0.01
#define FIRST_STRIDE    1024

static int quiet;

void ws_progress_set_quiet(int q) { quiet = q; }

int ws_progress_enabled(void) { return !quiet && isatty(STDERR_FILENO); }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double delay_s(void)
{
    const char *text = getenv("WSTRACE_PROGRESS_DELAY");
    if (!text || !*text)
        return DEFAULT_DELAY_S;
    char *end;
    double d = strtod(text, &end);
    return *end == '\0' && d >= 0 && d < 1e6 ? d : DEFAULT_DELAY_S;
}

/* "12.3 M", "4,096": counts for people. */
static void count_text(double v, char *buf, size_t len)
{
    if (v >= 1e9)
        snprintf(buf, len, "%.2f G", v / 1e9);
    else if (v >= 1e6)
        snprintf(buf, len, "%.1f M", v / 1e6);
    else if (v >= 1e4)
        snprintf(buf, len, "%.0f k", v / 1e3);
    else
        snprintf(buf, len, "%.0f", v);
}

static int terminal_columns(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10)
        return ws.ws_col;
    return 80;
}

/* The line is cut to the terminal's width: a wrapped line could not be rewritten with '\r'. */
static void draw(struct ws_progress *p, const char *detail)
{
    char line[512];
    int n = snprintf(line, sizeof line, "%s: %s", p->what, detail);
    int width = terminal_columns() - 1;
    if (n > width)
        n = width;
    if (n < 0)
        return;
    int saved = errno;
    fprintf(stderr, "\r%.*s\033[K", n, line);
    fflush(stderr);
    errno = saved;
    p->shown = 1;
}

void ws_progress_begin(struct ws_progress *p, const char *what, const char *unit, uint64_t total)
{
    memset(p, 0, sizeof *p);
    snprintf(p->what, sizeof p->what, "%s", what);
    p->unit = unit;
    p->total = total;
    p->stride = FIRST_STRIDE;
    p->next_poll = ws_progress_enabled() ? 0 : UINT64_MAX;
    p->start_s = now_s();
}

void ws_progress_poll(struct ws_progress *p)
{
    if (p->next_poll == UINT64_MAX)
        return;
    double t = now_s(), elapsed = t - p->start_s;
    double rate = elapsed > 0 ? (double)p->done / elapsed : 0;
    /* Read the clock about every POLL_S at the current rate. */
    double stride = rate * POLL_S;
    p->stride = stride < 1 ? 1 : stride > 1e7 ? 10000000 : (uint64_t)stride;
    p->next_poll = p->done + p->stride;
    if (elapsed < delay_s() || (p->shown && t - p->last_s < REDRAW_S))
        return;
    p->last_s = t;
    char done[32], total[32], per_s[32], detail[160];
    count_text((double)p->done, done, sizeof done);
    count_text(rate, per_s, sizeof per_s);
    if (p->total > 0) {
        uint64_t d = p->done < p->total ? p->done : p->total;
        count_text((double)p->total, total, sizeof total);
        snprintf(detail, sizeof detail, "%3.0f%% (%s of %s %s, %s %s/s)", floor(100.0 * (double)d / (double)p->total),
                 done, total, p->unit, per_s, p->unit);
    } else {
        snprintf(detail, sizeof detail, "%s %s (%s %s/s)", done, p->unit, per_s, p->unit);
    }
    draw(p, detail);
}

void ws_progress_end(struct ws_progress *p)
{
    if (p->shown) {
        int saved = errno;
        fputs("\r\033[K", stderr);
        fflush(stderr);
        errno = saved;
    }
    p->shown = 0;
    p->next_poll = UINT64_MAX;
}

/* ---- progress against a time budget ---- */

static void *timer_main(void *arg)
{
    struct ws_progress_timer *t = arg;
    double start = now_s(), delay = delay_s();
    pthread_mutex_lock(&t->lock);
    while (!t->stop) {
        double elapsed = now_s() - start;
        if (elapsed >= delay) {
            char detail[96];
            double shown = elapsed < t->seconds ? elapsed : t->seconds;
            snprintf(detail, sizeof detail, "%3.0f%% (%.1f s of %.1f s)", floor(100.0 * shown / t->seconds), shown,
                     t->seconds);
            draw(&t->p, detail);
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += (long)(REDRAW_S * 2 * 1e9);
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&t->wake, &t->lock, &until);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

void ws_progress_timer_start(struct ws_progress_timer *t, const char *what, double seconds)
{
    memset(t, 0, sizeof *t);
    snprintf(t->p.what, sizeof t->p.what, "%s", what);
    t->seconds = seconds;
    if (!(seconds > 0) || !ws_progress_enabled())
        return;
    if (pthread_mutex_init(&t->lock, NULL) != 0)
        return;
    if (pthread_cond_init(&t->wake, NULL) != 0) {
        pthread_mutex_destroy(&t->lock);
        return;
    }
    if (delay_s() <= 0) { /* shown from the start: drawn before the work can end */
        char detail[96];
        snprintf(detail, sizeof detail, "  0%% (0.0 s of %.1f s)", seconds);
        draw(&t->p, detail);
    }
    if (pthread_create(&t->thread, NULL, timer_main, t) != 0) {
        pthread_cond_destroy(&t->wake);
        pthread_mutex_destroy(&t->lock);
        return;
    }
    t->running = 1;
}

void ws_progress_timer_stop(struct ws_progress_timer *t)
{
    if (!t->running)
        return;
    pthread_mutex_lock(&t->lock);
    t->stop = 1;
    pthread_cond_signal(&t->wake);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->thread, NULL);
    pthread_cond_destroy(&t->wake);
    pthread_mutex_destroy(&t->lock);
    t->running = 0;
    ws_progress_end(&t->p);
}
