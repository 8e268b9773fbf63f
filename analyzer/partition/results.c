/*
 * results.c - the partition's rows in the trace: partitions, partition_layers, partition_rules
 * (schema/analysis.sql, documented in schema/README.md), replaced in one transaction.
 */
#include "partition.h"

#include <string.h>

#include "tracedb.h"

/* The name's strings.id, added when the trace has no such string. */
static int64_t string_id(sqlite3 *db, const char *value)
{
    sqlite3_stmt *st = NULL;
    int64_t id = -1;
    if (sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO strings(value) VALUES (?1)", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, value, -1, SQLITE_STATIC);
        sqlite3_step(st);
    }
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(db, "SELECT id FROM strings WHERE value = ?1", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, value, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            id = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return id;
}

static int step_reset(sqlite3_stmt *st)
{
    return sqlite3_step(st) == SQLITE_DONE && sqlite3_reset(st) == SQLITE_OK ? 0 : -1;
}

static void bind_partition(sqlite3 *db, sqlite3_stmt *st, const struct ws_part_model *m, const struct ws_part_run *run,
                           int64_t id)
{
    const struct ws_part_result *r = run->result;
    const int64_t v[] = {id,
                         run->costs->view.process,
                         run->costs->view.device,
                         r->budget,
                         (int64_t)m->nlayers,
                         (int64_t)r->layers_fit,
                         r->fixed,
                         r->used,
                         r->left,
                         r->total,
                         run->costs->outside_total,
                         r->ort_threshold,
                         (int64_t)r->ort_nodes,
                         (int64_t)r->ort_accepted,
                         (int64_t)r->ort_layers_whole,
                         r->ort_consumed,
                         r->name_rule_exact};
    for (int i = 0; i < 17; i++)
        sqlite3_bind_int64(st, i + 1, v[i]);
    sqlite3_bind_text(st, 18, m->pattern, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 19, ws_part_outside_name(r->outside), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 20, r->name_rule, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 21, r->resource_settings, -1, SQLITE_STATIC);
    if (r->ort_first_rejected >= 0)
        sqlite3_bind_int64(st, 22, string_id(db, m->nodes[r->ort_first_rejected].name));
    else
        sqlite3_bind_null(st, 22);
}

static int write_partitions(sqlite3 *db, const struct ws_part_model *m, const struct ws_part_run *runs, size_t nruns)
{
    static const char part_sql[] =
        "INSERT INTO partitions (id, process_id, device, budget_bytes, layers, layers_fit, fixed_bytes, used_bytes,"
        " left_bytes, total_bytes, outside_bytes, ort_threshold_bytes, ort_nodes, ort_nodes_accepted,"
        " ort_layers_whole, ort_consumed_bytes, name_rule_exact, layer_pattern, outside, name_based_layer_assignment,"
        " resource_cuda_partitioning_settings, ort_first_rejected_id)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)";
    static const char layer_sql[] =
        "INSERT INTO partition_layers (partition_id, ordinal, layer, nodes, persistent_bytes, activation_bytes,"
        " workspace_bytes, share_bytes, cost_bytes, cumulative_bytes, fits, ort_cost_bytes, ort_nodes_accepted)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";
    sqlite3_stmt *ps = NULL, *ls = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(db, part_sql, -1, &ps, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, layer_sql, -1, &ls, NULL) != SQLITE_OK)
        goto done;
    for (size_t k = 0; k < nruns; k++) {
        bind_partition(db, ps, m, &runs[k], (int64_t)k + 1);
        if (step_reset(ps) != 0)
            goto done;
        for (size_t l = 0; l < m->nlayers; l++) {
            const struct ws_part_group *g = &runs[k].costs->layers[l];
            const struct ws_part_layer_fit *f = &runs[k].result->layers[l];
            const int64_t v[] = {(int64_t)k + 1, (int64_t)l,    (int64_t)m->layers[l].nodes,
                                 g->persistent,  g->activation, g->workspace,
                                 f->share,       f->cost,       f->cumulative,
                                 f->fits,        f->ort_cost,   (int64_t)f->ort_accepted};
            for (int i = 0; i < 12; i++)
                sqlite3_bind_int64(ls, i < 2 ? i + 1 : i + 2, v[i]);
            sqlite3_bind_text(ls, 3, m->layers[l].name, -1, SQLITE_STATIC);
            if (step_reset(ls) != 0)
                goto done;
        }
    }
    rc = 0;
done:
    sqlite3_finalize(ps);
    sqlite3_finalize(ls);
    return rc;
}

static int write_rules(sqlite3 *db, const struct ws_part_rules *rules, const struct ws_part_coverage *cov)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO partition_rules (ordinal, device, pattern, nodes_matched, nodes_assigned,"
                           " layers_matched, verdict) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    for (size_t i = 0; i < rules->n; i++) {
        const struct ws_part_rule_cover *c = &cov->rules[i];
        sqlite3_bind_int64(st, 1, (int64_t)i);
        sqlite3_bind_text(st, 2, rules->v[i].device, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, rules->v[i].pattern, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, (int64_t)c->matched);
        sqlite3_bind_int64(st, 5, (int64_t)c->assigned);
        sqlite3_bind_int64(st, 6, (int64_t)c->layers);
        sqlite3_bind_text(st, 7, ws_part_rule_verdict_name(c->verdict), -1, SQLITE_STATIC);
        if (step_reset(st) != 0)
            goto done;
    }
    rc = 0;
done:
    sqlite3_finalize(st);
    return rc;
}

int ws_part_results_write(sqlite3 *db, const struct ws_part_model *m, const struct ws_part_run *runs, size_t nruns,
                          const struct ws_part_rules *rules, const struct ws_part_coverage *cov, char *err,
                          size_t errlen)
{
    char msg[512];
    if (ws_results_begin(db, "partitions", err, errlen) != 0)
        return -1;
    /* the three tables are one result: all are replaced */
    int ok = ws_tracedb_exec(db, "DROP TABLE IF EXISTS partition_layers; DROP TABLE IF EXISTS partition_rules", msg,
                             sizeof msg) == 0 &&
             ws_tracedb_exec(db, ws_analysis_sql, msg, sizeof msg) == 0;
    if (!ok)
        snprintf(err, errlen, "cannot write results: %s", msg);
    else if (write_partitions(db, m, runs, nruns) != 0 || (rules && cov && write_rules(db, rules, cov) != 0)) {
        snprintf(err, errlen, "writing partitions: %s", sqlite3_errmsg(db));
        ok = 0;
    }
    return ws_results_end(db, ok, err, errlen);
}
