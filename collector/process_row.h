/*
 * One row of the processes table (schema/README.md): who wrote the rows of a trace, where they
 * came from and how its clock relates to the trace's timeline.
 */
#ifndef WS_PROCESS_ROW_H
#define WS_PROCESS_ROW_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#define WS_UNKNOWN INT64_MIN /* an integer field that is not known: written as NULL */

struct ws_process_row {
    int64_t id;
    int64_t pid, ppid, rank, local_rank, world_size;
    const char *host, *boot_id; /* NULL or "" when unknown */
    const char *source;         /* 'tracer', 'nsys', 'torch-snapshot' */
    const char *origin, *merged_from, *command_line;
    int64_t start_ns, end_ns, start_time_unix_ns, clock_offset_ns;
    int64_t clean_exit, lost_records;
};

/* Every field unknown, source as given, clock offset 0. */
void ws_process_row_init(struct ws_process_row *p, int64_t id, const char *source);

/* Host, boot id and ranks of the calling process (host and boot must outlive the row). */
void ws_process_row_identify(struct ws_process_row *p, char *host, size_t hostlen, char *boot, size_t bootlen);

/* INSERT the row.  0, or -1 (sqlite3_errmsg tells why). */
int ws_process_row_write(sqlite3 *db, const struct ws_process_row *p);

#endif
