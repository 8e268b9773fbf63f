#include "process_row.h"

#include <string.h>

#include "identity.h"

void ws_process_row_init(struct ws_process_row *p, int64_t id, const char *source)
{
    memset(p, 0, sizeof *p);
    p->id = id;
    p->source = source;
    p->pid = p->ppid = p->rank = p->local_rank = p->world_size = WS_UNKNOWN;
    p->start_ns = p->end_ns = p->start_time_unix_ns = WS_UNKNOWN;
    p->clean_exit = p->lost_records = WS_UNKNOWN;
}

void ws_process_row_identify(struct ws_process_row *p, char *host, size_t hostlen, char *boot, size_t bootlen)
{
    ws_host_name(host, hostlen);
    ws_boot_id(boot, bootlen);
    p->host = host;
    p->boot_id = boot;
    long r = ws_env_rank(), l = ws_env_local_rank(), w = ws_env_world_size();
    p->rank = r >= 0 ? r : WS_UNKNOWN;
    p->local_rank = l >= 0 ? l : WS_UNKNOWN;
    p->world_size = w >= 0 ? w : WS_UNKNOWN;
}

static void bind_int(sqlite3_stmt *st, int i, int64_t v)
{
    if (v == WS_UNKNOWN)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_int64(st, i, v);
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
    if (s && *s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

int ws_process_row_write(sqlite3 *db, const struct ws_process_row *p)
{
    static const char sql[] =
        "INSERT INTO processes(id, pid, ppid, host, boot_id, rank, local_rank, world_size, source, origin, "
        "merged_from, command_line, start_ns, end_ns, start_time_unix_ns, clock_offset_ns, clean_exit, lost_records) "
        "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18)";
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_int64(st, 1, p->id);
    bind_int(st, 2, p->pid);
    bind_int(st, 3, p->ppid);
    bind_text(st, 4, p->host);
    bind_text(st, 5, p->boot_id);
    bind_int(st, 6, p->rank);
    bind_int(st, 7, p->local_rank);
    bind_int(st, 8, p->world_size);
    sqlite3_bind_text(st, 9, p->source, -1, SQLITE_TRANSIENT);
    bind_text(st, 10, p->origin);
    bind_text(st, 11, p->merged_from);
    bind_text(st, 12, p->command_line);
    bind_int(st, 13, p->start_ns);
    bind_int(st, 14, p->end_ns);
    bind_int(st, 15, p->start_time_unix_ns);
    sqlite3_bind_int64(st, 16, p->clock_offset_ns);
    bind_int(st, 17, p->clean_exit);
    bind_int(st, 18, p->lost_records);
    rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
out:
    sqlite3_finalize(st);
    return rc;
}
