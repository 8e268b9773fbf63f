/*
 * plan.c - reads the static plans that `wstrace plan` wrote into a trace (tables plans and
 * plan_blocks, schema/analysis.sql).  A plan belongs to a shape key; its blocks are numbered by
 * the ordinal of the allocation in the run (alloc_seq), which is what ws_alloc counts.
 */
#include <inttypes.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"
#include "wsk.h"

#define SCHEMA_VERSION 2 /* newest trace schema read; plans are the same since version 1 */

static int db_fail(struct wsk_error *err, const char *path, sqlite3 *db, const char *what)
{
    return wsk_fail(err, WSK_EXIT_USAGE, "wsk: --plan %s: %s%s%s", path, what, db ? ": " : "",
                    db ? sqlite3_errmsg(db) : "");
}

static int check_version(sqlite3 *db, const char *path, struct wsk_error *err)
{
    sqlite3_stmt *st = NULL;
    int version = -1;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (version < 0)
        return db_fail(err, path, db, "not a readable trace");
    if (version > SCHEMA_VERSION)
        return wsk_fail(err, WSK_EXIT_USAGE, "wsk: --plan %s: trace schema version %d is newer than this wsk (%d)",
                        path, version, SCHEMA_VERSION);
    if (version < 1)
        return wsk_fail(err, WSK_EXIT_USAGE, "wsk: --plan %s: not a wstrace trace", path);
    return 0;
}

static int load_blocks(sqlite3 *db, sqlite3_stmt *st, struct wsk_plan *p, const char *path, struct wsk_error *err)
{
    uint32_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (p->nblocks == cap) {
            cap = cap ? 2 * cap : 256;
            struct wsk_plan_block *grown = realloc(p->blocks, cap * sizeof *grown);
            if (!grown)
                return wsk_fail(err, WSK_EXIT_FAIL, "wsk: out of host memory");
            p->blocks = grown;
        }
        struct wsk_plan_block *b = &p->blocks[p->nblocks++];
        const char *cls = (const char *)sqlite3_column_text(st, 1);
        const char *node = (const char *)sqlite3_column_text(st, 5);
        int64_t ordinal = sqlite3_column_int64(st, 0), bytes = sqlite3_column_int64(st, 3),
                offset = sqlite3_column_int64(st, 4);
        b->ordinal = (uint64_t)ordinal;
        b->cls = cls && strcmp(cls, "workspace") == 0 ? WS_WORKSPACE : WS_ACTIVATION;
        b->slot = (uint32_t)sqlite3_column_int64(st, 2);
        b->bytes = (uint64_t)bytes;
        b->offset = (uint64_t)offset;
        snprintf(b->node, sizeof b->node, "%s", node ? node : "");
        /* A block outside the backing buffer would corrupt memory: refuse the whole plan. */
        if (ordinal < 0 || bytes < 0 || offset < 0 || (uint64_t)bytes > p->peak ||
            (uint64_t)offset > p->peak - (uint64_t)bytes)
            return wsk_fail(err, WSK_EXIT_USAGE,
                            "wsk: --plan %s: block %" PRId64 " of the plan for %s lies outside "
                            "its %" PRIu64 "-byte buffer",
                            path, ordinal, p->shape_key, p->peak);
    }
    return rc == SQLITE_DONE ? 0 : db_fail(err, path, db, "reading plan_blocks");
}

static const char plans_sql[] = "SELECT p.id, s.value, p.planned_peak_bytes FROM plans p "
                                "JOIN strings s ON s.id = p.shape_key_id ORDER BY p.id";
static const char blocks_sql[] =
    "SELECT b.ordinal, b.class, b.slot, b.bytes, b.offset, n.value, b.start_event, b.end_event FROM plan_blocks b "
    "LEFT JOIN strings n ON n.id = b.node_name_id WHERE b.plan_id = ? ORDER BY b.ordinal";

/* Blocks that share an address while alive together would corrupt each other's data: the plan
 * is checked with the planner's own validation before any run uses it. */
static int check_overlaps(sqlite3 *db, sqlite3_stmt *st, const struct wsk_plan *p, const char *path,
                          struct wsk_error *err)
{
    struct ws_plan_buffer *b = malloc(p->nblocks * sizeof *b + 1);
    int rc = 0, step;
    uint32_t k = 0;
    if (!b)
        return wsk_fail(err, WSK_EXIT_FAIL, "wsk: out of host memory");
    sqlite3_reset(st);
    while ((step = sqlite3_step(st)) == SQLITE_ROW && k < p->nblocks) {
        int64_t lower = sqlite3_column_int64(st, 6), upper = sqlite3_column_int64(st, 7);
        b[k] = (struct ws_plan_buffer){.id = p->blocks[k].ordinal,
                                       .lower = lower,
                                       .upper = upper > lower ? upper : lower,
                                       .size = p->blocks[k].bytes,
                                       .alignment = 1,
                                       .offset = p->blocks[k].offset};
        k++;
    }
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        rc = db_fail(err, path, db, "reading plan_blocks");
    else if (ws_plan_validate(b, k, 1, NULL) != 1)
        rc = wsk_fail(err, WSK_EXIT_USAGE,
                      "wsk: --plan %s: the plan for %s has blocks that share an address while alive together", path,
                      p->shape_key);
    free(b);
    return rc;
}

static int load_plan(sqlite3 *db, sqlite3_stmt *plans, sqlite3_stmt *blocks, struct wsk_plans *out, const char *path,
                     struct wsk_error *err)
{
    struct wsk_plan *grown = realloc(out->plans, (out->n + 1) * sizeof *grown);
    if (!grown)
        return wsk_fail(err, WSK_EXIT_FAIL, "wsk: out of host memory");
    out->plans = grown;
    struct wsk_plan *p = &out->plans[out->n++];
    memset(p, 0, sizeof *p);
    snprintf(p->shape_key, sizeof p->shape_key, "%s", (const char *)sqlite3_column_text(plans, 1));
    int64_t peak = sqlite3_column_int64(plans, 2);
    p->peak = peak > 0 ? (uint64_t)peak : 0;
    sqlite3_reset(blocks);
    sqlite3_bind_int64(blocks, 1, sqlite3_column_int64(plans, 0));
    int rc = load_blocks(db, blocks, p, path, err);
    return rc ? rc : check_overlaps(db, blocks, p, path, err);
}

int wsk_plans_load(const char *path, struct wsk_plans *out, struct wsk_error *err)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *plans = NULL, *blocks = NULL;
    int rc = 0;
    memset(out, 0, sizeof *out);
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        rc = db_fail(err, path, db, "cannot open");
    if (rc == 0)
        rc = check_version(db, path, err);
    if (rc == 0 && (sqlite3_prepare_v2(db, plans_sql, -1, &plans, NULL) != SQLITE_OK ||
                    sqlite3_prepare_v2(db, blocks_sql, -1, &blocks, NULL) != SQLITE_OK))
        rc = wsk_fail(err, WSK_EXIT_USAGE, "wsk: --plan %s: no plan tables (run `wstrace plan %s` first)", path, path);
    int step = SQLITE_DONE;
    while (rc == 0 && (step = sqlite3_step(plans)) == SQLITE_ROW)
        rc = load_plan(db, plans, blocks, out, path, err);
    if (rc == 0 && step != SQLITE_DONE)
        rc = db_fail(err, path, db, "reading plans");
    if (rc == 0 && out->n == 0)
        rc = wsk_fail(err, WSK_EXIT_USAGE, "wsk: --plan %s: the trace holds no plan", path);
    sqlite3_finalize(plans);
    sqlite3_finalize(blocks);
    sqlite3_close(db);
    return rc;
}

void wsk_plans_free(struct wsk_plans *plans)
{
    if (plans->backing)
        cudaFree(plans->backing);
    for (uint32_t i = 0; i < plans->n; i++)
        free(plans->plans[i].blocks);
    free(plans->plans);
    memset(plans, 0, sizeof *plans);
}

struct wsk_plan *wsk_plans_find(struct wsk_plans *plans, const char *shape_key)
{
    for (uint32_t i = 0; i < plans->n; i++)
        if (strcmp(plans->plans[i].shape_key, shape_key) == 0)
            return &plans->plans[i];
    return NULL;
}

const struct wsk_plan_block *wsk_plan_block(const struct wsk_plan *p, uint64_t ordinal)
{
    uint32_t lo = 0, hi = p->nblocks; /* blocks are sorted by ordinal */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (p->blocks[mid].ordinal < ordinal)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->nblocks && p->blocks[lo].ordinal == ordinal ? &p->blocks[lo] : NULL;
}
