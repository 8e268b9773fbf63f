/*
 * ws_view_open PAGE.html: open a page of wstrace view in headless Chromium and print how long it
 * took to be drawn (scripts/bench-view.sh): the page's own time from navigation to its first
 * complete drawing (performance.now() at <body data-ready>), and the time this program waited.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cdp.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: ws_view_open PAGE.html\n");
        return 2;
    }
    char err[1024], url[4200], *abs = realpath(argv[1], NULL);
    if (!abs) {
        fprintf(stderr, "ws_view_open: %s: not found\n", argv[1]);
        return 2;
    }
    snprintf(url, sizeof url, "file://%s", abs);
    struct cdp c;
    if (cdp_start(&c, 1400, 1000, err, sizeof err) != 0) {
        fprintf(stderr, "ws_view_open: %s\n", err);
        return 2;
    }
    double t0 = now_ms();
    /* 20 minutes at most */
    int rc = cdp_open(&c, url, "document.body && document.body.dataset.ready === '1'", 24000, err, sizeof err);
    double waited = now_ms() - t0;
    json_t *ms = rc == 0 ? cdp_eval(&c, "Number(document.body.dataset.readyMs)", err, sizeof err) : NULL;
    json_t *errors = rc == 0 ? cdp_eval(&c, "Number(document.body.dataset.errors)", err, sizeof err) : NULL;
    if (rc != 0 || !ms) {
        fprintf(stderr, "ws_view_open: %s\n", err);
        cdp_stop(&c);
        return 1;
    }
    printf("page_ms %.0f\nwaited_ms %.0f\nscript_errors %.0f\n", json_number_value(ms), waited,
           json_number_value(errors));
    json_decref(ms);
    json_decref(errors);
    cdp_stop(&c);
    free(abs);
    return 0;
}
