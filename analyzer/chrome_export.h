/*
 * A trace as Chrome trace-event JSON (Perfetto, chrome://tracing): every event of every table,
 * merged from per-table cursors into one stream sorted by time, so that each track reads in
 * time order.  docs/report.md describes the output field by field.
 */
#ifndef WS_CHROME_EXPORT_H
#define WS_CHROME_EXPORT_H

#include <stddef.h>
#include <stdio.h>
#include <sqlite3.h>

/* Track ids (trace-event "tid") of the tracks that are not threads: above every thread id. */
#define WS_CHROME_RUNS_TID   1000000
#define WS_CHROME_STREAM_TID 1000001 /* + the stream's index among the launch streams */

struct ws_chrome_options {
    int with_memory; /* allocation and free instant events */
};

/* Write the document for the trace open in db (read only) to out.  trace names the file in
 * messages and in otherData.  0, or -1 with one line in err. */
int ws_chrome_export(sqlite3 *db, const char *trace, FILE *out, const struct ws_chrome_options *o, char *err,
                     size_t errlen);

#endif
