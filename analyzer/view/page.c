/* The page: the HTML template with its style sheet and script inline, then the data. */
#include <string.h>

#include "progress.h"
#include "view.h"

extern const char ws_view_html[]; /* view/page.html, embedded at build time */
extern const char ws_view_css[];  /* view/view.css */
extern const char ws_view_js[];   /* view/view.js */

/* Write template up to marker (or all of it when marker is NULL); returns what follows it. */
static const char *put_until(FILE *out, const char *template, const char *marker)
{
    const char *at = marker ? strstr(template, marker) : NULL;
    size_t n = at ? (size_t)(at - template) : strlen(template);
    fwrite(template, 1, n, out);
    return at ? at + strlen(marker) : template + n;
}

int ws_view_write(sqlite3 *db, const char *trace, FILE *out, const struct ws_view_options *o, char *err, size_t errlen)
{
    struct view_model m;
    struct ws_progress progress;
    char what[96];
    if (view_model_load(&m, db, trace, err, errlen) != 0) {
        view_model_free(&m);
        return -1;
    }
    /* Writing: the data's sweep, bands and chunks, then the file. */
    snprintf(what, sizeof what, "writing the view of %s", trace);
    ws_progress_begin(&progress, what, "steps", 3 * (uint64_t)m.nallocs);
    ws_progress_update(&progress, 0);
    const char *rest = put_until(out, ws_view_html, "/*@CSS@*/");
    fputs(ws_view_css, out);
    rest = put_until(out, rest, "<!--@DATA@-->");
    int rc = view_write_data(&m, out, o, &progress, err, errlen);
    if (rc == 0) {
        rest = put_until(out, rest, "/*@JS@*/");
        fputs(ws_view_js, out);
        put_until(out, rest, NULL);
    }
    ws_progress_end(&progress);
    view_model_free(&m);
    return rc;
}
