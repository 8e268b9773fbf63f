/*
 * A small client of the Chrome DevTools Protocol over --remote-debugging-pipe (commands on the
 * browser's fd 3, replies and events on its fd 4, each message JSON ended by a NUL byte): enough
 * to open a page in headless Chromium, wait for it, read its DOM, move and click the mouse, and
 * take a screenshot, the way a person would look at the page.
 */
#ifndef WS_CDP_H
#define WS_CDP_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

struct cdp {
    pid_t pid;
    int to, from; /* our ends of the two pipes */
    char *buf;    /* bytes read, not yet a whole message */
    size_t len, cap;
    int next_id;
    char session[128]; /* the page's session (flattened) */
    char errors[4096]; /* exceptions and console errors the page reported */
    int nerrors;
};

/* The browser: chromium-headless-shell or chromium on PATH; NULL when neither is there. */
const char *cdp_browser(void);

/* Start the browser with one page of width x height CSS pixels.  0, or -1 with err set. */
int cdp_start(struct cdp *c, int width, int height, char *err, size_t errlen);
void cdp_stop(struct cdp *c);

/* Call method on the page (params is stolen, may be NULL); returns the result (a new reference)
 * or NULL with err set. */
json_t *cdp_call(struct cdp *c, const char *method, json_t *params, char *err, size_t errlen);

/* Open url and wait until expression is true (polled at most polls times, 50 ms apart). */
int cdp_open(struct cdp *c, const char *url, const char *expression, int polls, char *err, size_t errlen);

/* The value of a JavaScript expression (JSON-serialisable), a new reference, or NULL. */
json_t *cdp_eval(struct cdp *c, const char *expression, char *err, size_t errlen);

/* Mouse: move to (x, y) CSS pixels of the viewport, click there, or turn the wheel. */
int cdp_mouse(struct cdp *c, const char *type, double x, double y, double delta_y, char *err, size_t errlen);

/* A PNG of the viewport (malloc'd, *len bytes), or NULL. */
unsigned char *cdp_screenshot(struct cdp *c, size_t *len, char *err, size_t errlen);

#endif
