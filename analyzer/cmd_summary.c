/* wstrace summary TRACE: the shape of a trace at a glance.  Read-only: lifetimes are computed
 * in memory, nothing is written back. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "commands.h"
#include "import.h"
#include "progress.h"
#include "output.h"
#include "tracedb.h"

struct trace_counts {
    int64_t threads, launches, alloc_calls, failed_calls, shape_keys;
    int64_t lost_records; /* -1 when the trace does not say */
    int64_t l1_nodes, l2_nodes, nodes;
    /* NVTX (schema version 2; 0 in older traces) */
    int64_t domains, unbalanced_pops, unmatched_ends;
    int64_t heaps, heap_peak_bytes, regions, region_peak_bytes;
    /* CUDA graphs, stream capture, pools (0 in traces without them) */
    int64_t graph_launches, graph_execs, graph_kernels, graph_allocations;
    int64_t captures, captured_calls, captured_allocations, captured_kernels, captured_frees, captured_graph_launches;
    int64_t pools, pool_peak_reserved, pool_peak_used;
};

struct summary_options {
    const char *trace;
    int json, top;
};

/* What summary says of where the rows came from and of each process (rank) of the trace. */
/* The meta rows blind_spot.<kind> of the trace (of each process of a merged one). */
#define MAX_BLIND_SPOTS 32
struct blind_spots {
    size_t n;
    char *kind[MAX_BLIND_SPOTS], *value[MAX_BLIND_SPOTS];
};

struct summary_processes {
    char source[320];
    struct ws_processes p;
    struct blind_spots blind;
};

static void summary_usage(FILE *out)
{
    fprintf(out, "usage: wstrace summary TRACE [--json] [--top N]\n\n"
                 "Runs, nodes, threads, device allocation calls, peak live device bytes, the nodes with the\n"
                 "most workspace and activation bytes, lost records, and how many nodes carry Level-1\n"
                 "estimates and Level-2 declarations; with NVTX, its domains, pops and range ends that\n"
                 "closed nothing, and the heaps and regions of its memory extension with their peak\n"
                 "bytes; with CUDA graphs, the graph launches and the kernels and allocations they ran,\n"
                 "the calls stream capture recorded into graphs instead of running them, and what memory\n"
                 "pools reserved at their peak against what was in use.  Says where the rows came from\n"
                 "(tracer, nsys, torch-snapshot, merge); a trace of several processes also gets one line\n"
                 "per process (rank), the largest one and the spread of their peaks.  Names the blind\n"
                 "spots the tracer reported (meta blind_spot.*: CUDA use the trace could not see).  Reads\n"
                 "the trace only.\n\n"
                 "  --json     print JSON instead of text\n"
                 "  --top N    list N nodes in each ranking (default 10)\n"
                 "  --quiet    no progress line on a terminal\n"
                 "  --help     show this help\n");
}

static int parse_summary(int argc, char **argv, struct summary_options *o)
{
    static const struct option longopts[] = {{"json", no_argument, NULL, 'j'},
                                             {"top", required_argument, NULL, 't'},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {0}};
    int c;
    char *end;
    o->top = 10;
    optind = 0; /* commands may run several times in one process (tests) */
    ws_progress_set_quiet(0);
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': o->json = 1; break;
        case 't':
            o->top = (int)strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || o->top < 0) {
                ws_error("summary: --top needs a non-negative number, not '%s'", optarg);
                return WS_EXIT_USAGE;
            }
            break;
        case 'q': ws_progress_set_quiet(1); break;
        case 'h': summary_usage(stdout); return -1;
        default: return ws_bad_option("summary", c, argv);
        }
    }
    if (optind + 1 != argc) {
        ws_error("summary: expected one TRACE argument; see 'wstrace summary --help'");
        return WS_EXIT_USAGE;
    }
    o->trace = argv[optind];
    return WS_EXIT_OK;
}

static int query_counts(sqlite3 *db, int64_t *a, int64_t *b, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        *a = sqlite3_column_type(st, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 0);
        if (b)
            *b = sqlite3_column_int64(st, 1);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

static int has_table(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

/* Peak over time of the bytes of intervals [start, end) (an interval ending with another's start
 * still counts with it, as in the live_bytes view). */
#define PEAK_SQL(start, end, bytes, from)                                                                              \
    "WITH ev AS (SELECT " start " AS ns, 0 AS ord, " bytes " AS d FROM " from " UNION ALL SELECT " end ", 1, -" bytes  \
    " FROM " from " AND " end " IS NOT NULL) SELECT COUNT(*) FILTER (WHERE ord = 0), COALESCE(MAX(s), 0) FROM "        \
    "(SELECT ord, SUM(d) OVER (ORDER BY ns, ord ROWS UNBOUNDED PRECEDING) AS s FROM ev)"

static int count_nvtx(sqlite3 *db, struct trace_counts *tc)
{
    if (query_counts(db, &tc->domains, NULL, "SELECT COUNT(*) FROM domains WHERE id <> 0") != 0)
        return -1;
    if (!has_table(db, "range_errors") || !has_table(db, "memory_heaps"))
        return 0; /* schema version 1 */
    return query_counts(db, &tc->unbalanced_pops, &tc->unmatched_ends,
                        "SELECT COUNT(*) FILTER (WHERE kind = 'pop'), COUNT(*) FILTER (WHERE kind = 'end')"
                        " FROM range_errors") != 0 ||
                   query_counts(db, &tc->heaps, &tc->heap_peak_bytes,
                                PEAK_SQL("register_ns", "end_ns", "COALESCE(bytes, 0)", "memory_heaps WHERE 1")) != 0 ||
                   query_counts(db, &tc->regions, &tc->region_peak_bytes,
                                PEAK_SQL("alloc_ns", "free_ns", "bytes",
                                         "allocations WHERE memory = 'region' AND status = 0")) != 0
               ? -1
               : 0;
}

/* Graph launches are rows of launches themselves: "kernel launches" counts the kernels only, those
 * launched directly and those graphs ran. */
static int count_graphs(sqlite3 *db, struct trace_counts *tc)
{
    int64_t unused;
    if (!has_table(db, "graph_launches") || !has_table(db, "captures") || !has_table(db, "pool_samples"))
        return query_counts(db, &tc->launches, NULL, "SELECT COUNT(*) FROM launches");
    return query_counts(db, &tc->launches, NULL,
                        "SELECT COUNT(*) FROM launches WHERE id NOT IN"
                        " (SELECT launch_id FROM graph_launches WHERE launch_id IS NOT NULL)") != 0 ||
                   query_counts(db, &tc->graph_launches, &tc->graph_execs,
                                "SELECT (SELECT COUNT(*) FROM graph_launches WHERE status = 0),"
                                " COUNT(DISTINCT graph_exec_id) FROM graph_launches WHERE status = 0") != 0 ||
                   query_counts(db, &tc->graph_kernels, &tc->graph_allocations,
                                "SELECT COALESCE(SUM(kernels), 0), COALESCE(SUM(allocations), 0)"
                                " FROM graph_launches") != 0 ||
                   query_counts(db, &tc->captures, &tc->captured_calls,
                                "SELECT (SELECT COUNT(*) FROM captures), COUNT(*) FROM captured_calls") != 0 ||
                   query_counts(db, &tc->captured_allocations, &tc->captured_kernels,
                                "SELECT COUNT(*) FILTER (WHERE kind = 'allocation'),"
                                " COUNT(*) FILTER (WHERE kind = 'kernel') FROM captured_calls") != 0 ||
                   query_counts(db, &tc->captured_frees, &tc->captured_graph_launches,
                                "SELECT COUNT(*) FILTER (WHERE kind = 'free'),"
                                " COUNT(*) FILTER (WHERE kind = 'graph launch') FROM captured_calls") != 0 ||
                   query_counts(db, &tc->pools, &unused, "SELECT COUNT(*), 0 FROM memory_pools") != 0 ||
                   query_counts(db, &tc->pool_peak_reserved, &tc->pool_peak_used,
                                "SELECT COALESCE(SUM(r), 0), COALESCE(SUM(u), 0) FROM (SELECT"
                                " MAX(reserved_high_bytes) AS r, MAX(used_high_bytes) AS u FROM pool_samples"
                                " GROUP BY pool_id)") != 0
               ? -1
               : 0;
}

static void free_blind_spots(struct blind_spots *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free(b->kind[i]);
        free(b->value[i]);
    }
    b->n = 0;
}

/* 0, or -1 with the database's error. */
static int load_blind_spots(sqlite3 *db, struct blind_spots *b)
{
    const char *sql = has_table(db, "process_meta")
                          ? "SELECT key, value FROM meta WHERE key LIKE 'blind^_spot.%' ESCAPE '^' UNION ALL "
                            "SELECT m.key, 'process ' || COALESCE(p.pid, '?') || ': ' || m.value FROM process_meta m"
                            " LEFT JOIN processes p ON p.id = m.process_id"
                            " WHERE m.key LIKE 'blind^_spot.%' ESCAPE '^' ORDER BY 1, 2"
                          : "SELECT key, value FROM meta WHERE key LIKE 'blind^_spot.%' ESCAPE '^'";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && b->n < MAX_BLIND_SPOTS) {
        const char *k = (const char *)sqlite3_column_text(st, 0), *v = (const char *)sqlite3_column_text(st, 1);
        b->kind[b->n] = strdup(k ? k + strlen("blind_spot.") : "");
        b->value[b->n] = strdup(v ? v : "");
        if (!b->kind[b->n] || !b->value[b->n]) {
            free(b->kind[b->n]);
            free(b->value[b->n]);
            break;
        }
        b->n++;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

static json_t *blind_spots_json(const struct blind_spots *b)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < b->n; i++)
        if (json_array_append_new(a, json_pack("{s:o, s:o}", "kind", ws_json_text(b->kind[i]), "detail",
                                               ws_json_text(b->value[i]))) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static int count_trace(sqlite3 *db, const struct ws_analysis *an, struct trace_counts *tc)
{
    memset(tc, 0, sizeof *tc);
    if (query_counts(db, &tc->threads, NULL, "SELECT COUNT(*) FROM threads") != 0 || count_graphs(db, tc) != 0 ||
        query_counts(db, &tc->alloc_calls, &tc->failed_calls,
                     "SELECT COUNT(*), COALESCE(SUM(status <> 0), 0) FROM allocations"
                     " WHERE memory IN ('device', 'managed')") != 0 ||
        query_counts(db, &tc->shape_keys, NULL, "SELECT COUNT(DISTINCT shape_key_id) FROM runs") != 0 ||
        count_nvtx(db, tc) != 0)
        return -1;
    tc->lost_records = -1;
    if (query_counts(db, &tc->lost_records, NULL,
                     "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'lost_records'") != 0)
        tc->lost_records = -1; /* no row: the trace does not say */
    /* Coverage counts nodes that ran (have a range) and carry at least one declaration. */
    char *has = calloc(an->nnodes + 1, 1);
    if (!has)
        return -1;
    for (size_t i = 0; i < an->ndecls; i++)
        has[an->decls[i].node] |= (char)an->decls[i].level; /* bit 1: Level 1, bit 2: Level 2 */
    for (size_t i = 0; i < an->nnodes; i++) {
        if (!an->nodes[i].has_range)
            continue;
        tc->nodes++;
        tc->l1_nodes += (has[i] & 1) != 0;
        tc->l2_nodes += (has[i] & 2) != 0;
    }
    free(has);
    return 0;
}

/* Node indices ranked by a figure, largest first, ties by name; only figures > 0. */
static const struct ws_analysis *rank_an;
static int rank_by_output;
static int64_t rank_value(int32_t i)
{
    return rank_by_output ? rank_an->nodes[i].output_bytes : rank_an->nodes[i].profile_bytes;
}
static int rank_cmp(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    int64_t vx = rank_value(x), vy = rank_value(y);
    if (vx != vy)
        return vx > vy ? -1 : 1;
    return strcmp(rank_an->nodes[x].name, rank_an->nodes[y].name);
}

static size_t rank_nodes(const struct ws_analysis *an, int by_output, int32_t *order)
{
    size_t n = 0;
    rank_an = an;
    rank_by_output = by_output;
    for (size_t i = 0; i < an->nnodes; i++)
        if (rank_value((int32_t)i) > 0)
            order[n++] = (int32_t)i;
    qsort(order, n, sizeof *order, rank_cmp);
    return n;
}

static json_t *ranking_json(const struct ws_analysis *an, int by_output, int top, int32_t *order)
{
    json_t *list = json_array();
    size_t n = rank_nodes(an, by_output, order);
    for (size_t k = 0; list && k < n && k < (size_t)top; k++) {
        const struct ws_node *node = &an->nodes[order[k]];
        if (json_array_append_new(list, json_pack("{s:o, s:I, s:I}", "node", ws_json_text(node->name), "bytes",
                                                  (json_int_t)rank_value(order[k]), "occurrences",
                                                  (json_int_t)node->occurrences)) != 0) {
            json_decref(list);
            return NULL;
        }
    }
    return list;
}

static json_t *processes_json(const struct ws_processes *p)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < p->count; i++) {
        const struct ws_process_facts *f = &p->items[i];
        json_t *row = json_pack("{s:I, s:s, s:o, s:o, s:s, s:s, s:I, s:I, s:I, s:I}", "id", (json_int_t)f->id, "label",
                                f->label, "rank", f->rank == WS_UNKNOWN ? json_null() : json_integer(f->rank), "pid",
                                f->pid == WS_UNKNOWN ? json_null() : json_integer(f->pid), "host", f->host, "source",
                                f->source, "peak_live_device_bytes", (json_int_t)f->peak_bytes,
                                "device_allocation_calls", (json_int_t)f->allocation_calls, "failed_allocation_calls",
                                (json_int_t)f->failed_calls, "kernel_launches", (json_int_t)f->launches);
        if (json_array_append_new(list, row) != 0) {
            json_decref(list);
            return NULL;
        }
    }
    return list;
}

static int add_processes_json(json_t *root, const struct summary_processes *sp)
{
    const struct ws_processes *p = &sp->p;
    const struct ws_process_facts *big = &p->items[p->largest], *small = &p->items[p->smallest];
    if (!root || json_object_set_new(root, "source", json_string(sp->source)) != 0 ||
        json_object_set_new(root, "process_count", json_integer((json_int_t)p->count)) != 0)
        return -1;
    if (p->count < 2)
        return 0;
    return json_object_set_new(root, "processes", processes_json(p)) |
           json_object_set_new(
               root, "largest_process",
               json_pack("{s:s, s:I}", "label", big->label, "peak_live_device_bytes", (json_int_t)big->peak_bytes)) |
           json_object_set_new(
               root, "peak_spread",
               json_pack("{s:I, s:s, s:s, s:o}", "bytes", (json_int_t)(big->peak_bytes - small->peak_bytes), "smallest",
                         small->label, "largest", big->label, "ratio",
                         small->peak_bytes > 0 ? json_real((double)big->peak_bytes / (double)small->peak_bytes)
                                               : json_null()));
}

static int print_json(const struct summary_options *o, const struct ws_analysis *an, const struct trace_counts *tc,
                      int32_t *order, const struct summary_processes *sp)
{
    json_t *classes = json_object();
    for (int c = 0; classes && c < WS_CLASS_COUNT; c++)
        if (json_object_set_new(classes, ws_class_name(c),
                                json_pack("{s:I, s:I}", "allocations", (json_int_t)an->class_count[c], "bytes",
                                          (json_int_t)an->class_bytes[c])) != 0) {
            json_decref(classes);
            classes = NULL;
        }
    json_t *root = json_pack(
        "{s:o, s:I, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:{s:I, s:I}, s:{s:I, s:I}}", "trace",
        ws_json_text(o->trace), "runs", (json_int_t)an->nruns, "runs_from_outermost_ranges", an->runs_synthesized,
        "nodes", (json_int_t)tc->nodes, "shape_keys", (json_int_t)tc->shape_keys, "threads", (json_int_t)tc->threads,
        "kernel_launches", (json_int_t)tc->launches, "device_allocation_calls", (json_int_t)tc->alloc_calls,
        "failed_allocation_calls", (json_int_t)tc->failed_calls, "peak_live_device_bytes",
        (json_int_t)an->peak_live_bytes, "lost_records", ws_json_bytes(tc->lost_records), "classes", classes,
        "top_workspace_nodes", ranking_json(an, 0, o->top, order), "top_activation_nodes",
        ranking_json(an, 1, o->top, order), "level1_coverage", "nodes", (json_int_t)tc->l1_nodes, "of",
        (json_int_t)tc->nodes, "level2_coverage", "nodes", (json_int_t)tc->l2_nodes, "of", (json_int_t)tc->nodes);
    json_t *nvtx = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "domains", (json_int_t)tc->domains,
                             "unbalanced_pops", (json_int_t)tc->unbalanced_pops, "unmatched_range_ends",
                             (json_int_t)tc->unmatched_ends, "memory_heaps", (json_int_t)tc->heaps,
                             "memory_heaps_peak_bytes", (json_int_t)tc->heap_peak_bytes, "memory_regions",
                             (json_int_t)tc->regions, "memory_regions_peak_bytes", (json_int_t)tc->region_peak_bytes);
    if (root && json_object_set_new(root, "nvtx", nvtx) != 0) {
        json_decref(root);
        root = NULL;
    }
    json_t *graphs = json_pack("{s:I, s:I, s:I, s:I}", "graph_launches", (json_int_t)tc->graph_launches, "instances",
                               (json_int_t)tc->graph_execs, "kernels", (json_int_t)tc->graph_kernels, "allocations",
                               (json_int_t)tc->graph_allocations);
    json_t *capture = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "captures", (json_int_t)tc->captures, "calls",
                                (json_int_t)tc->captured_calls, "allocations", (json_int_t)tc->captured_allocations,
                                "kernels", (json_int_t)tc->captured_kernels, "frees", (json_int_t)tc->captured_frees,
                                "graph_launches", (json_int_t)tc->captured_graph_launches);
    json_t *pools = json_pack("{s:I, s:I, s:I}", "pools", (json_int_t)tc->pools, "peak_reserved_bytes",
                              (json_int_t)tc->pool_peak_reserved, "peak_used_bytes", (json_int_t)tc->pool_peak_used);
    if (root &&
        (json_object_set_new(root, "graphs", graphs) != 0 || json_object_set_new(root, "capture", capture) != 0 ||
         json_object_set_new(root, "memory_pools", pools) != 0)) {
        json_decref(root);
        root = NULL;
    }
    if (root && json_object_set_new(root, "blind_spots", blind_spots_json(&sp->blind)) != 0) {
        json_decref(root);
        root = NULL;
    }
    if (root && add_processes_json(root, sp) != 0) {
        json_decref(root);
        return -1;
    }
    return ws_json_print(root, stdout);
}

static int print_ranking(const struct ws_analysis *an, int by_output, int top, int32_t *order)
{
    static const char *const headers[] = {"NODE", "BYTES", "OCCURRENCES"};
    struct ws_table t;
    char bytes[32], occ[32];
    int rc = 0;
    size_t n = rank_nodes(an, by_output, order);
    printf("\ntop nodes by %s:\n", by_output ? "activation bytes (per run)" : "workspace (peak in one occurrence)");
    if (n == 0) {
        printf("  (none)\n");
        return 0;
    }
    ws_table_init(&t, 3, headers, "lrr");
    for (size_t k = 0; k < n && k < (size_t)top && rc == 0; k++) {
        snprintf(occ, sizeof occ, "%lld", (long long)an->nodes[order[k]].occurrences);
        const char *row[] = {an->nodes[order[k]].name, ws_format_bytes(rank_value(order[k]), bytes, sizeof bytes), occ};
        rc = ws_table_add(&t, row);
    }
    if (rc == 0)
        ws_table_print(&t, stdout);
    ws_table_free(&t);
    return rc;
}

static int print_processes(const struct ws_processes *p)
{
    static const char *const headers[] = {"PROCESS", "HOST", "PID", "SOURCE", "PEAK", "ALLOC CALLS", "LAUNCHES"};
    struct ws_table t;
    char pid[32], peak[48], b[32], calls[32], launches[32];
    int rc = 0;
    printf("\nper process (peak live device bytes over its devices):\n");
    ws_table_init(&t, 7, headers, "llrlrrr");
    for (size_t i = 0; i < p->count && rc == 0; i++) {
        const struct ws_process_facts *f = &p->items[i];
        snprintf(pid, sizeof pid, f->pid == WS_UNKNOWN ? "-" : "%lld", (long long)f->pid);
        snprintf(peak, sizeof peak, "%s", ws_format_bytes(f->peak_bytes, b, sizeof b));
        snprintf(calls, sizeof calls, "%lld", (long long)f->allocation_calls);
        snprintf(launches, sizeof launches, "%lld", (long long)f->launches);
        const char *row[] = {f->label, f->host[0] ? f->host : "-", pid, f->source, peak, calls, launches};
        rc = ws_table_add(&t, row);
    }
    if (rc == 0)
        ws_table_print(&t, stdout);
    ws_table_free(&t);
    const struct ws_process_facts *big = &p->items[p->largest], *small = &p->items[p->smallest];
    char s1[32], s2[32];
    printf("largest                  %s: %s (%lld)\n", big->label, ws_format_bytes(big->peak_bytes, s1, sizeof s1),
           (long long)big->peak_bytes);
    printf("spread                   %s (%lld) from %s to %s",
           ws_format_bytes(big->peak_bytes - small->peak_bytes, s2, sizeof s2),
           (long long)(big->peak_bytes - small->peak_bytes), small->label, big->label);
    if (small->peak_bytes > 0)
        printf(", largest/smallest %.3f", (double)big->peak_bytes / (double)small->peak_bytes);
    printf("\n");
    return rc;
}

static int print_text(const struct summary_options *o, const struct ws_analysis *an, const struct trace_counts *tc,
                      int32_t *order, const struct summary_processes *sp)
{
    char b[32], share[32];
    printf("trace                    %s\n", o->trace);
    printf("source                   %s\n", sp->source);
    if (sp->p.count > 1)
        printf("processes                %zu\n", sp->p.count);
    printf("runs                     %zu%s\n", an->nruns,
           an->runs_synthesized ? " (no run markers: outermost ranges)" : "");
    printf("shape keys               %lld\n", (long long)tc->shape_keys);
    printf("nodes                    %lld\n", (long long)tc->nodes);
    printf("threads                  %lld\n", (long long)tc->threads);
    if (tc->graph_kernels)
        printf("kernel launches          %lld (%lld run by graphs)\n", (long long)tc->launches,
               (long long)tc->graph_kernels);
    else
        printf("kernel launches          %lld\n", (long long)tc->launches);
    printf("device allocation calls  %lld (%lld failed)\n", (long long)tc->alloc_calls, (long long)tc->failed_calls);
    printf("peak live device bytes   %s (%lld)\n", ws_format_bytes(an->peak_live_bytes, b, sizeof b),
           (long long)an->peak_live_bytes);
    if (tc->lost_records < 0)
        printf("lost records             unknown\n");
    else
        printf("lost records             %lld\n", (long long)tc->lost_records);
    for (size_t i = 0; i < sp->blind.n; i++)
        printf("blind spot               %s: %s\n", sp->blind.kind[i], sp->blind.value[i]);
    printf("Level-1 estimates        %lld of %lld nodes (%s)\n", (long long)tc->l1_nodes, (long long)tc->nodes,
           ws_format_share(tc->l1_nodes, tc->nodes, share, sizeof share));
    printf("Level-2 declarations     %lld of %lld nodes (%s)\n", (long long)tc->l2_nodes, (long long)tc->nodes,
           ws_format_share(tc->l2_nodes, tc->nodes, share, sizeof share));
    /* NVTX, where the trace has something to say about it */
    if (tc->domains)
        printf("NVTX domains             %lld\n", (long long)tc->domains + 1); /* with the default domain */
    if (tc->unbalanced_pops)
        printf("unbalanced NVTX pops     %lld\n", (long long)tc->unbalanced_pops);
    if (tc->unmatched_ends)
        printf("unmatched range ends     %lld\n", (long long)tc->unmatched_ends);
    if (tc->heaps || tc->regions) {
        printf("NVTX heaps               %lld, peak %s (%lld)\n", (long long)tc->heaps,
               ws_format_bytes(tc->heap_peak_bytes, b, sizeof b), (long long)tc->heap_peak_bytes);
        printf("NVTX regions             %lld, peak %s (%lld)\n", (long long)tc->regions,
               ws_format_bytes(tc->region_peak_bytes, b, sizeof b), (long long)tc->region_peak_bytes);
    }
    /* CUDA graphs, capture and pools, where the trace has any */
    if (tc->graph_launches)
        printf("graph launches           %lld of %lld instances: %lld kernels, %lld allocations\n",
               (long long)tc->graph_launches, (long long)tc->graph_execs, (long long)tc->graph_kernels,
               (long long)tc->graph_allocations);
    if (tc->captures || tc->captured_calls)
        printf("captured, not run        %lld calls in %lld captures: %lld allocations, %lld frees, %lld kernels, "
               "%lld graph launches\n",
               (long long)tc->captured_calls, (long long)tc->captures, (long long)tc->captured_allocations,
               (long long)tc->captured_frees, (long long)tc->captured_kernels, (long long)tc->captured_graph_launches);
    if (tc->pools) {
        char u[32];
        printf("memory pools             %lld: peak reserved %s, peak used %s\n", (long long)tc->pools,
               ws_format_bytes(tc->pool_peak_reserved, b, sizeof b), ws_format_bytes(tc->pool_peak_used, u, sizeof u));
    }
    printf("\nallocations by class:\n");
    for (int c = 0; c < WS_CLASS_COUNT; c++)
        printf("  %-13s %10lld  %s\n", ws_class_name(c), (long long)an->class_count[c],
               ws_format_bytes(an->class_bytes[c], b, sizeof b));
    if (print_ranking(an, 0, o->top, order) != 0 || print_ranking(an, 1, o->top, order) != 0)
        return -1;
    return sp->p.count > 1 ? print_processes(&sp->p) : 0;
}

int cmd_summary(int argc, char **argv)
{
    struct summary_options o = {0};
    struct ws_analysis an;
    struct trace_counts tc;
    struct summary_processes sp;
    sqlite3 *db = NULL;
    int32_t *order = NULL;
    char err[1024];
    int rc = parse_summary(argc, argv, &o);
    if (rc != WS_EXIT_OK)
        return rc < 0 ? WS_EXIT_OK : rc;
    if (ws_analysis_open(o.trace, 0, &db, &an, err, sizeof err) != 0) {
        ws_error("%s", err);
        return WS_EXIT_USAGE;
    }
    rc = WS_EXIT_USAGE;
    memset(&sp, 0, sizeof sp);
    order = malloc((an.nnodes + 1) * sizeof *order);
    if (!order || count_trace(db, &an, &tc) != 0) {
        ws_error("%s: cannot read the trace: %s", o.trace, order ? sqlite3_errmsg(db) : "out of memory");
        goto out;
    }
    ws_trace_source(db, sp.source, sizeof sp.source);
    if (load_blind_spots(db, &sp.blind) != 0) {
        ws_error("%s: cannot read the trace: %s", o.trace, sqlite3_errmsg(db));
        goto out;
    }
    if (ws_processes_load(db, &an, &sp.p, err, sizeof err) != 0) {
        ws_error("%s: %s", o.trace, err);
        goto out;
    }
    if ((o.json ? print_json(&o, &an, &tc, order, &sp) : print_text(&o, &an, &tc, order, &sp)) != 0) {
        ws_error("summary: cannot print the summary");
        goto out;
    }
    rc = WS_EXIT_OK;
out:
    free(order);
    ws_processes_free(&sp.p);
    free_blind_spots(&sp.blind);
    ws_analysis_free(&an);
    sqlite3_close(db);
    return rc;
}
