/*
 * wstrace plan: a static memory layout for one run of each shape key of a trace (tables plans
 * and plan_blocks), or for a standalone problem in CSV form (--problem).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "commands.h"
#include "progress.h"
#include "outfile.h"
#include "output.h"
#include "planner.h"
#include "svg_plan.h"
#include "tracedb.h"

struct plan_args {
    const char *trace, *problem, *output, *svg;
    uint64_t align;
    int align_given;
    double time_limit;
    uint64_t work_limit, seed;
    int json;
};

static void plan_usage(FILE *out)
{
    fprintf(out,
            "usage: wstrace plan TRACE [--svg FILE.svg] [--align N] [--time-limit S] [--work-limit N] [--seed N]\n"
            "                    [--json]\n"
            "       wstrace plan --problem FILE.csv [-o OUT.csv] [--svg FILE.svg] [--align N] [--time-limit S]\n"
            "                    [--work-limit N] [--seed N] [--json]\n\n"
            "Compute a static memory layout: an offset in one backing buffer for every block, no two blocks\n"
            "alive at the same time sharing an address.\n\n"
            "With TRACE, plans the first run of each shape key from the lifetimes table (computed and written\n"
            "when the trace has none yet): every activation and workspace allocation freed within the run, workspace\n"
            "grown to its Level-2 declaration. Writes the tables plans and plan_blocks (replacing earlier rows).\n\n"
            "With --problem, plans a CSV file id,lower,upper,size[,alignment] (half-open lifetimes\n"
            "[lower, upper)) and writes OUT as the input plus an offset column.\n\n"
            "Greedy decoders give a first layout; then, within the limits, a problem that fills (nearly)\n"
            "every moment up to the bound is split into strips that hold the same bytes at every moment,\n"
            "solved apart; a decision search proves or disproves capacities between the best lower bound\n"
            "and the best layout, windows lay the busiest sections out afresh with it (the rest fitted\n"
            "around them), repairs re-solve the parts of the layout above a target with it, and a\n"
            "neighbourhood search improves the layout.\n"
            "It stops early when the layout is proven optimal. From 20,000 blocks on, a time limit bounds\n"
            "the greedy decoders too: a fast first-fit sweep gives the layout they improve on in time.\n\n"
            "options:\n"
            "  --problem FILE     plan a standalone CSV problem instead of a trace\n"
            "  -o, --output OUT   with --problem: write the solution as CSV (written whole or not at all)\n"
            "  --svg FILE         draw the layout: blocks over time and offset, the bounds, live bytes\n"
            "                     (one panel per plan of a trace); a bad path fails before planning\n"
            "  --align N          block alignment in bytes (default 256 for traces, 1 for problems)\n"
            "  --time-limit S     search for up to S seconds per plan (default 1; 0: greedy decoders only,\n"
            "                     unless --work-limit is given)\n"
            "  --work-limit N     search for up to N steps per plan (search nodes and buffers re-placed);\n"
            "                     alone (with --time-limit 0) the result is the same on every machine\n"
            "  --seed N           seed of the search (default 1)\n"
            "  --json             print JSON instead of a table\n"
            "  -q, --quiet        no progress line on a terminal (drawn during a --time-limit search)\n"
            "  -h, --help         show this help\n\n"
            "Reported: the load bound (largest total of blocks alive at one moment: no layout is smaller),\n"
            "the best lower bound proven (the load bound, or more when the search proved smaller sizes\n"
            "impossible), the planned peak (size of the backing buffer), the gap between the two, whether\n"
            "the layout is proven optimal and, for traces, the dynamic peak observed.\n");
}

static int parse_number(const char *opt, const char *text, uint64_t *out)
{
    char *end;
    if (*text < '0' || *text > '9')
        goto bad;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (*end || errno == ERANGE)
        goto bad;
    *out = v;
    return 0;
bad:
    ws_error("%s: expected a non-negative integer, got '%s'", opt, text);
    return -1;
}

static int parse_plan_args(int argc, char **argv, struct plan_args *a)
{
    static const struct option opts[] = {{"problem", required_argument, NULL, 'p'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"align", required_argument, NULL, 'a'},
                                         {"time-limit", required_argument, NULL, 't'},
                                         {"work-limit", required_argument, NULL, 'w'},
                                         {"seed", required_argument, NULL, 's'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"svg", required_argument, NULL, 'g'},
                                         {"quiet", no_argument, NULL, 'q'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    memset(a, 0, sizeof *a);
    a->seed = 1;
    a->time_limit = 1;
    optind = 1;
    ws_progress_set_quiet(0);
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, ":o:qh", opts, NULL)) != -1;) {
        char *end;
        switch (c) {
        case 'p': a->problem = optarg; break;
        case 'o':
            if (!strcmp(optarg, "-")) { /* it would be mixed with the table or JSON on stdout */
                ws_error("-o: expected a file name, not '-'");
                return -1;
            }
            a->output = optarg;
            break;
        case 'g':
            if (!strcmp(optarg, "-")) { /* it would be mixed with the table or JSON on stdout */
                ws_error("--svg: expected a file name, not '-'");
                return -1;
            }
            a->svg = optarg;
            break;
        case 'a':
            if (parse_number("--align", optarg, &a->align))
                return -1;
            if (a->align == 0) {
                ws_error("--align: must be at least 1");
                return -1;
            }
            a->align_given = 1;
            break;
        case 't':
            a->time_limit = strtod(optarg, &end);
            if (*optarg == '\0' || *end || !(a->time_limit >= 0) || a->time_limit > 1e6) {
                ws_error("--time-limit: expected seconds (0 to 1000000), got '%s'", optarg);
                return -1;
            }
            break;
        case 'w':
            if (parse_number("--work-limit", optarg, &a->work_limit))
                return -1;
            break;
        case 's':
            if (parse_number("--seed", optarg, &a->seed))
                return -1;
            break;
        case 'j': a->json = 1; break;
        case 'q': ws_progress_set_quiet(1); break;
        case 'h': plan_usage(stdout); return 1;
        default: ws_bad_option("plan", c, argv); return -1;
        }
    }
    if (optind < argc)
        a->trace = argv[optind++];
    if (optind < argc || (!a->trace) == (!a->problem)) {
        ws_error("plan: give either one TRACE or --problem FILE.csv; see 'wstrace plan --help'");
        return -1;
    }
    if (a->output && !a->problem) {
        ws_error("plan: -o/--output goes with --problem");
        return -1;
    }
    if (!a->align_given)
        a->align = a->problem ? 1 : 256;
    return 0;
}

/* ---- --problem ---------------------------------------------------------------------------- */

static double ratio(uint64_t peak, uint64_t lb) { return lb ? (double)peak / (double)lb : 1.0; }

static int print_problem_json(const char *path, const struct ws_plan_result *r)
{
    json_t *o =
        json_pack("{s:o, s:I, s:I, s:I, s:I, s:I, s:f, s:b, s:b, s:f, s:I, s:s}", "problem", ws_json_text(path),
                  "buffers", (json_int_t)r->buffers, "peak_bytes", (json_int_t)r->peak_bytes, "load_bound_bytes",
                  (json_int_t)r->load_bound_bytes, "lower_bound_bytes", (json_int_t)r->lower_bound_bytes, "gap_bytes",
                  (json_int_t)(r->peak_bytes - r->lower_bound_bytes), "peak_over_load_bound",
                  ratio(r->peak_bytes, r->load_bound_bytes), "optimal", r->optimal, "valid", r->valid, "seconds",
                  r->seconds, "work", (json_int_t)r->work, "algorithm", r->algorithm);
    if (!o || json_dumpf(o, stdout, JSON_INDENT(2)) != 0) {
        json_decref(o);
        ws_error("cannot print JSON");
        return -1;
    }
    putchar('\n');
    json_decref(o);
    return 0;
}

static void print_problem_table(const char *path, const struct ws_plan_result *r)
{
    printf("problem      %s\n", path);
    printf("buffers      %zu\n", r->buffers);
    printf("load bound   %" PRIu64 " bytes\n", r->load_bound_bytes);
    printf("lower bound  %" PRIu64 " bytes%s\n", r->lower_bound_bytes,
           r->lower_bound_bytes > r->load_bound_bytes ? " (proven by the search)" : " (the load bound)");
    printf("peak         %" PRIu64 " bytes\n", r->peak_bytes);
    printf("gap          %" PRIu64 " bytes above the lower bound (%.4f %%)\n", r->peak_bytes - r->lower_bound_bytes,
           r->lower_bound_bytes ? 100.0 * (double)(r->peak_bytes - r->lower_bound_bytes) / (double)r->lower_bound_bytes
                                : 0.0);
    printf("optimal      %s\n", r->optimal ? "yes (proven)" : "not proven");
    printf("valid        %s\n", r->valid ? "yes" : "NO");
    printf("time         %.3f s\n", r->seconds);
    printf("algorithm    %s\n", r->algorithm);
}

/* The picture's file is opened (as a temporary file) before anything is planned or written, so
 * that a path that cannot be written fails at once and leaves every output as it was. */
static int open_output(const char *path, struct ws_outfile *out)
{
    char err[512];
    memset(out, 0, sizeof *out);
    if (path && ws_outfile_open(out, path, err, sizeof err)) {
        ws_error("%s", err);
        return -1;
    }
    return 0;
}

/* Rename a finished output into place (ok) or remove it; -1 (message printed) on failure. */
static int close_output(struct ws_outfile *out, int ok)
{
    char err[512];
    if (ws_outfile_close(out, ok, err, sizeof err) && ok) {
        ws_error("%s", err);
        return -1;
    }
    return 0;
}

static int draw_svg(const struct plan_args *a, struct ws_outfile *svg, const struct ws_svg_panel *panels,
                    size_t npanels)
{
    char err[256];
    if (ws_svg_plan_write(svg->fp, panels, npanels, err, sizeof err)) {
        ws_error("%s: %s", a->svg, err);
        return -1;
    }
    return 0;
}

static int problem_svg(const struct plan_args *a, struct ws_outfile *svg, const struct ws_problem *pr,
                       const struct ws_plan_result *r)
{
    struct ws_svg_block *blocks = malloc(pr->n * sizeof *blocks + 1);
    char *title = malloc(strlen(a->problem) + 16);
    int rc = -1;
    if (!blocks || !title) {
        ws_error("%s: out of memory", a->svg);
        goto out;
    }
    for (size_t i = 0; i < pr->n; i++) {
        const struct ws_plan_buffer *b = &pr->buffers[i];
        blocks[i] = (struct ws_svg_block){.lower = b->lower,
                                          .upper = b->upper,
                                          .offset = b->offset,
                                          .size = b->size,
                                          .live_bytes = b->size,
                                          .cls = WS_SVG_PLAIN,
                                          .id = b->id};
    }
    const char *base = strrchr(a->problem, '/');
    sprintf(title, "problem %s", base ? base + 1 : a->problem);
    struct ws_svg_panel panel = {title, "time", blocks, pr->n, r->peak_bytes, r->load_bound_bytes, a->align};
    rc = draw_svg(a, svg, &panel, 1);
out:
    free(blocks);
    free(title);
    return rc;
}

/* The planner under a time limit searches for that long unless it reaches the load bound: the
 * share of the limit used is its progress. */
static int solve_with_progress(const char *what, struct ws_plan_buffer *b, size_t n, const struct ws_plan_options *o,
                               struct ws_plan_result *r)
{
    struct ws_progress_timer timer;
    ws_progress_timer_start(&timer, what, o->time_limit_s);
    int rc = ws_plan_solve(b, n, o, r);
    ws_progress_timer_stop(&timer);
    return rc;
}

static int plan_problem(const struct plan_args *a)
{
    struct ws_problem pr = {0};
    struct ws_plan_result r;
    struct ws_outfile svg, csv;
    char err[512];
    int rc = WS_EXIT_USAGE;
    if (open_output(a->svg, &svg))
        return WS_EXIT_USAGE;
    if (open_output(a->output, &csv)) {
        close_output(&svg, 0);
        return WS_EXIT_USAGE;
    }
    if (ws_problem_read(a->problem, &pr, err, sizeof err)) {
        ws_error("%s", err);
        goto out;
    }
    struct ws_plan_options o = {
        .alignment = a->align, .time_limit_s = a->time_limit, .work_limit = a->work_limit, .seed = a->seed};
    char what[160];
    snprintf(what, sizeof what, "planning %s", a->problem);
    if (solve_with_progress(what, pr.buffers, pr.n, &o, &r)) {
        ws_error("%s: %s", a->problem, r.error);
        goto out;
    }
    if (r.peak_bytes > INT64_MAX) { /* JSON and most consumers stop at 2^63 */
        ws_error("%s: the planned peak exceeds 2^63 bytes", a->problem);
        goto out;
    }
    if (a->svg && problem_svg(a, &svg, &pr, &r))
        goto out;
    if (a->output && ws_problem_write(csv.fp, &pr)) {
        ws_error("%s: cannot write: %s", a->output, strerror(errno));
        goto out;
    }
    if (close_output(&csv, 1) || close_output(&svg, 1))
        goto out;
    if (a->json ? print_problem_json(a->problem, &r) : (print_problem_table(a->problem, &r), 0))
        goto out;
    rc = WS_EXIT_OK;
out:
    close_output(&csv, 0); /* no-op once committed */
    close_output(&svg, 0);
    ws_problem_free(&pr);
    return rc;
}

/* ---- TRACE -------------------------------------------------------------------------------- */

struct block_row { /* one row of plan_blocks before it is written */
    int64_t ordinal, allocation_id, node_name_id, slot;
    int has_node, has_slot;
    int workspace;
    uint64_t requested;
};

struct trace_plan {
    int64_t shape_key_id, run_id;
    int has_shape_key;
    char *shape_key;
    struct ws_plan_buffer *buf;
    struct block_row *rows;
    size_t n, cap;
    uint64_t dynamic_peak;
    struct ws_plan_result result;
};

struct trace_ctx {
    const char *path;
    sqlite3 *db;
    struct trace_plan *plans;
    size_t nplans;
};

static int sql_fail(const struct trace_ctx *t, const char *what)
{
    ws_error("%s: %s: %s", t->path, what, sqlite3_errmsg(t->db));
    return -1;
}

/* 1 when the lifetimes table exists and has rows, 0 when not, -1 on error. */
static int have_lifetimes(struct trace_ctx *t)
{
    sqlite3_stmt *st = NULL;
    int found = -1;
    if (sqlite3_prepare_v2(t->db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?1", -1, &st, NULL) !=
            SQLITE_OK ||
        sqlite3_bind_text(st, 1, "lifetimes", -1, SQLITE_STATIC) != SQLITE_OK) {
        sql_fail(t, "cannot read the schema");
        goto out;
    }
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        found = rc == SQLITE_DONE ? 0 : sql_fail(t, "cannot read the schema");
        goto out;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(t->db, "SELECT EXISTS (SELECT 1 FROM lifetimes)", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        sql_fail(t, "cannot read lifetimes");
        goto out;
    }
    found = sqlite3_column_int(st, 0);
out:
    sqlite3_finalize(st);
    return found;
}

/* One plan per shape key (runs without a key form one key): the first run with lifetimes.  The runs
 * come from the lifetimes table, not from `runs`: in a trace without run markers (an import, a
 * program without wstrace_run_begin) every outermost range is a run, named in lifetimes by that
 * range's id, and has no `runs` row and no shape key. */
static int list_plans(struct trace_ctx *t)
{
    static const char sql[] =
        "SELECT r.shape_key_id, MIN(l.run_id), s.value "
        "FROM (SELECT DISTINCT run_id FROM lifetimes WHERE run_id IS NOT NULL) l "
        "LEFT JOIN runs r ON r.id = l.run_id LEFT JOIN strings s ON s.id = r.shape_key_id "
        "GROUP BY r.shape_key_id ORDER BY MIN(l.run_id)";
    sqlite3_stmt *st = NULL;
    int rc = -1, step;
    if (sqlite3_prepare_v2(t->db, sql, -1, &st, NULL) != SQLITE_OK) {
        sql_fail(t, "cannot list runs");
        goto out;
    }
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        struct trace_plan *p = realloc(t->plans, (t->nplans + 1) * sizeof *p);
        if (!p) {
            ws_error("%s: out of memory", t->path);
            goto out;
        }
        t->plans = p;
        p = &t->plans[t->nplans++];
        memset(p, 0, sizeof *p);
        p->has_shape_key = sqlite3_column_type(st, 0) != SQLITE_NULL;
        p->shape_key_id = sqlite3_column_int64(st, 0);
        p->run_id = sqlite3_column_int64(st, 1);
        const unsigned char *key = sqlite3_column_text(st, 2);
        if (key && !(p->shape_key = strdup((const char *)key))) {
            ws_error("%s: out of memory", t->path);
            goto out;
        }
    }
    if (step != SQLITE_DONE) {
        sql_fail(t, "cannot list runs");
        goto out;
    }
    if (t->nplans == 0) {
        ws_error("%s: no run has lifetimes; run 'wstrace lifetimes %s' first", t->path, t->path);
        goto out;
    }
    rc = 0;
out:
    sqlite3_finalize(st);
    return rc;
}

static int add_block(struct trace_plan *p)
{
    if (p->n < p->cap)
        return 0;
    size_t cap = p->cap ? 2 * p->cap : 256;
    struct ws_plan_buffer *b = realloc(p->buf, cap * sizeof *b);
    if (!b)
        return -1;
    p->buf = b;
    struct block_row *r = realloc(p->rows, cap * sizeof *r);
    if (!r)
        return -1;
    p->rows = r;
    p->cap = cap;
    return 0;
}

/* Turn one lifetimes row into a block; -1 (message printed) on data that cannot be planned. */
static int read_block(struct trace_ctx *t, sqlite3_stmt *st, struct trace_plan *p, uint64_t align)
{
    int64_t alloc_id = sqlite3_column_int64(st, 0);
    if (sqlite3_column_type(st, 1) == SQLITE_NULL || sqlite3_column_type(st, 5) == SQLITE_NULL) {
        ws_error("%s: lifetimes: allocation %" PRId64 " has no alloc_seq or start_event", t->path, alloc_id);
        return -1;
    }
    int64_t start = sqlite3_column_int64(st, 5), end = sqlite3_column_int64(st, 6);
    int64_t bytes = sqlite3_column_int64(st, 7), declared = sqlite3_column_int64(st, 8);
    if (start >= end || bytes < 0 || declared < 0) {
        ws_error("%s: lifetimes: allocation %" PRId64 " has %s", t->path, alloc_id,
                 start >= end ? "start_event >= end_event" : "negative bytes");
        return -1;
    }
    if (add_block(p)) {
        ws_error("%s: out of memory", t->path);
        return -1;
    }
    struct block_row *r = &p->rows[p->n];
    struct ws_plan_buffer *b = &p->buf[p->n];
    r->allocation_id = alloc_id;
    r->ordinal = sqlite3_column_int64(st, 1);
    r->has_node = sqlite3_column_type(st, 2) != SQLITE_NULL;
    r->node_name_id = sqlite3_column_int64(st, 2);
    r->workspace = strcmp((const char *)sqlite3_column_text(st, 3), "workspace") == 0;
    r->has_slot = sqlite3_column_type(st, 4) != SQLITE_NULL;
    r->slot = sqlite3_column_int64(st, 4);
    r->requested = (uint64_t)bytes;
    /* A workspace block is as large as the kernel declared, so the planned slot never overflows
     * when a later run needs what it declared rather than what the first run used. */
    uint64_t size = (uint64_t)(declared > bytes ? declared : bytes);
    uint64_t rem = size % align;
    if (rem && __builtin_add_overflow(size, align - rem, &size)) {
        ws_error("%s: lifetimes: allocation %" PRId64 " is too large to align", t->path, alloc_id);
        return -1;
    }
    *b = (struct ws_plan_buffer){.id = (uint64_t)p->n, .lower = start, .upper = end, .size = size};
    p->n++;
    return 0;
}

static int read_blocks(struct trace_ctx *t, struct trace_plan *p, uint64_t align)
{
    static const char sql[] =
        "SELECT l.allocation_id, l.alloc_seq, l.node_name_id, l.class, l.slot, l.start_event, l.end_event, "
        "       l.bytes, CASE WHEN l.class = 'workspace' THEN "
        "         (SELECT MAX(d.bytes) FROM declarations d LEFT JOIN runs dr ON dr.id = d.run_id "
        "          WHERE d.level = 2 AND d.node_name_id = l.node_name_id AND d.slot = l.slot "
        /* a kernel declares for the shapes it was created for: only this shape key's runs count */
        "          AND (d.run_id IS NULL OR dr.shape_key_id IS (SELECT shape_key_id FROM runs WHERE id = ?1))) END "
        "FROM lifetimes l WHERE l.run_id = ?1 AND l.class IN ('workspace', 'activation') "
        "AND l.end_event IS NOT NULL ORDER BY l.alloc_seq, l.allocation_id";
    sqlite3_stmt *st = NULL;
    int rc = -1, step;
    if (sqlite3_prepare_v2(t->db, sql, -1, &st, NULL) != SQLITE_OK || sqlite3_bind_int64(st, 1, p->run_id)) {
        sql_fail(t, "cannot read lifetimes");
        goto out;
    }
    while ((step = sqlite3_step(st)) == SQLITE_ROW)
        if (read_block(t, st, p, align))
            goto out;
    if (step != SQLITE_DONE) {
        sql_fail(t, "cannot read lifetimes");
        goto out;
    }
    rc = 0;
out:
    sqlite3_finalize(st);
    return rc;
}

/* Peak of the requested bytes live at once, in event order: what allocating on the fly needed. */
static int dynamic_peak(struct trace_ctx *t, struct trace_plan *p)
{
    struct ws_plan_buffer *req = malloc(p->n * sizeof *req + 1);
    if (!req) {
        ws_error("%s: out of memory", t->path);
        return -1;
    }
    for (size_t i = 0; i < p->n; i++)
        req[i] =
            (struct ws_plan_buffer){.lower = p->buf[i].lower, .upper = p->buf[i].upper, .size = p->rows[i].requested};
    p->dynamic_peak = ws_plan_load_bound(req, p->n, 1);
    free(req);
    return 0;
}

static int solve_trace_plan(struct trace_ctx *t, struct trace_plan *p, const struct plan_args *a)
{
    struct ws_plan_options o = {
        .alignment = a->align, .time_limit_s = a->time_limit, .work_limit = a->work_limit, .seed = a->seed};
    if (read_blocks(t, p, a->align) || dynamic_peak(t, p))
        return -1;
    char what[160];
    snprintf(what, sizeof what, "planning run %" PRId64 " of %s", p->run_id, t->path);
    if (solve_with_progress(what, p->buf, p->n, &o, &p->result) || !p->result.valid) {
        ws_error("%s: run %" PRId64 ": %s", t->path, p->run_id, p->result.error);
        return -1;
    }
    if (p->result.peak_bytes > INT64_MAX || p->dynamic_peak > INT64_MAX) {
        ws_error("%s: run %" PRId64 ": the plan exceeds 2^63 bytes", t->path, p->run_id);
        return -1;
    }
    return 0;
}

static int insert_plan(struct trace_ctx *t, sqlite3_stmt *st, const struct trace_plan *p, uint64_t align,
                       int64_t *plan_id)
{
    const struct ws_plan_result *r = &p->result;
    if ((p->has_shape_key ? sqlite3_bind_int64(st, 1, p->shape_key_id) : sqlite3_bind_null(st, 1)) ||
        sqlite3_bind_int64(st, 2, p->run_id) || sqlite3_bind_int64(st, 3, (int64_t)align) ||
        sqlite3_bind_int64(st, 4, (int64_t)r->peak_bytes) || sqlite3_bind_int64(st, 5, (int64_t)r->load_bound_bytes) ||
        sqlite3_bind_int64(st, 6, (int64_t)p->dynamic_peak) || sqlite3_bind_int64(st, 7, (int64_t)p->n) ||
        sqlite3_bind_text(st, 8, r->algorithm, -1, SQLITE_TRANSIENT) || sqlite3_bind_double(st, 9, r->seconds) ||
        sqlite3_step(st) != SQLITE_DONE || sqlite3_reset(st))
        return sql_fail(t, "cannot write plans");
    *plan_id = sqlite3_last_insert_rowid(t->db);
    return 0;
}

static int insert_blocks(struct trace_ctx *t, sqlite3_stmt *st, const struct trace_plan *p, int64_t plan_id)
{
    for (size_t i = 0; i < p->n; i++) {
        const struct block_row *r = &p->rows[i];
        const struct ws_plan_buffer *b = &p->buf[i];
        if (sqlite3_bind_int64(st, 1, plan_id) || sqlite3_bind_int64(st, 2, r->ordinal) ||
            sqlite3_bind_int64(st, 3, r->allocation_id) ||
            (r->has_node ? sqlite3_bind_int64(st, 4, r->node_name_id) : sqlite3_bind_null(st, 4)) ||
            sqlite3_bind_text(st, 5, r->workspace ? "workspace" : "activation", -1, SQLITE_STATIC) ||
            (r->has_slot ? sqlite3_bind_int64(st, 6, r->slot) : sqlite3_bind_null(st, 6)) ||
            sqlite3_bind_int64(st, 7, b->lower) || sqlite3_bind_int64(st, 8, b->upper) ||
            sqlite3_bind_int64(st, 9, (int64_t)r->requested) || sqlite3_bind_int64(st, 10, (int64_t)b->size) ||
            sqlite3_bind_int64(st, 11, (int64_t)b->offset) || sqlite3_step(st) != SQLITE_DONE || sqlite3_reset(st))
            return sql_fail(t, "cannot write plan_blocks");
    }
    return 0;
}

/* Replace every earlier plan in one transaction, so readers see all old rows or all new ones. */
static int write_plans(struct trace_ctx *t, uint64_t align)
{
    sqlite3_stmt *plan_st = NULL, *block_st = NULL;
    char err[512];
    int rc = -1;
    if (ws_tracedb_exec(t->db, "BEGIN IMMEDIATE", err, sizeof err)) {
        ws_error("%s: %s", t->path, err);
        return -1;
    }
    if (ws_tracedb_exec(t->db, ws_analysis_sql, err, sizeof err) ||
        ws_tracedb_exec(t->db, "DELETE FROM plan_blocks; DELETE FROM plans;", err, sizeof err)) {
        ws_error("%s: %s", t->path, err);
        goto out;
    }
    if (sqlite3_prepare_v2(t->db,
                           "INSERT INTO plans (shape_key_id, run_id, alignment, planned_peak_bytes, load_bound_bytes, "
                           "dynamic_peak_bytes, blocks, algorithm, seconds) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)",
                           -1, &plan_st, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(t->db,
                           "INSERT INTO plan_blocks (plan_id, ordinal, allocation_id, node_name_id, class, slot, "
                           "start_event, end_event, requested_bytes, bytes, offset) "
                           "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)",
                           -1, &block_st, NULL) != SQLITE_OK) {
        sql_fail(t, "cannot prepare the plan tables");
        goto out;
    }
    for (size_t k = 0; k < t->nplans; k++) {
        int64_t plan_id;
        if (insert_plan(t, plan_st, &t->plans[k], align, &plan_id) || insert_blocks(t, block_st, &t->plans[k], plan_id))
            goto out;
    }
    if (ws_tracedb_exec(t->db, "COMMIT", err, sizeof err)) {
        ws_error("%s: %s", t->path, err);
        goto out;
    }
    rc = 0;
out:
    sqlite3_finalize(plan_st);
    sqlite3_finalize(block_st);
    if (rc)
        ws_tracedb_exec(t->db, "ROLLBACK", err, sizeof err);
    return rc;
}

static int print_trace_json(const struct trace_ctx *t, uint64_t align)
{
    json_t *plans = json_array(), *root = json_pack("{s:o, s:I, s:o}", "trace", ws_json_text(t->path), "alignment",
                                                    (json_int_t)align, "plans", plans);
    int rc = -1;
    if (!root)
        goto out;
    for (size_t k = 0; k < t->nplans; k++) {
        const struct trace_plan *p = &t->plans[k];
        const struct ws_plan_result *r = &p->result;
        json_t *o = json_pack("{s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:b, s:s, s:f}", "shape_key",
                              ws_json_text(p->shape_key), "run_id", (json_int_t)p->run_id, "planned_peak_bytes",
                              (json_int_t)r->peak_bytes, "load_bound_bytes", (json_int_t)r->load_bound_bytes,
                              "lower_bound_bytes", (json_int_t)r->lower_bound_bytes, "dynamic_peak_bytes",
                              (json_int_t)p->dynamic_peak, "blocks", (json_int_t)p->n, "optimal", r->optimal, "valid",
                              r->valid, "algorithm", r->algorithm, "seconds", r->seconds);
        if (!o || json_array_append_new(plans, o))
            goto out;
    }
    if (json_dumpf(root, stdout, JSON_INDENT(2)) == 0) {
        putchar('\n');
        rc = 0;
    }
out:
    if (rc)
        ws_error("cannot print JSON");
    json_decref(root);
    return rc;
}

static void print_trace_table(const struct trace_ctx *t, uint64_t align)
{
    printf("%s: %zu plan%s, %" PRIu64 "-byte aligned blocks\n\n", t->path, t->nplans, t->nplans == 1 ? "" : "s", align);
    printf("| shape key | run | blocks | dynamic peak | load bound | lower bound | planned peak | above lower bound | "
           "optimal | saved vs dynamic |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t k = 0; k < t->nplans; k++) {
        const struct trace_plan *p = &t->plans[k];
        const struct ws_plan_result *r = &p->result;
        double saved =
            p->dynamic_peak ? 100.0 * ((double)p->dynamic_peak - (double)r->peak_bytes) / (double)p->dynamic_peak : 0;
        printf("| %s | %" PRId64 " | %zu | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRIu64
               " bytes | %s | %.1f %% |\n",
               p->shape_key ? p->shape_key : "(none)", p->run_id, p->n, p->dynamic_peak, r->load_bound_bytes,
               r->lower_bound_bytes, r->peak_bytes, r->peak_bytes - r->lower_bound_bytes,
               r->optimal ? "proven" : "not proven", saved);
    }
}

/* Node names of the blocks, sorted by string id, for the picture's tooltips. */
struct node_names {
    int64_t *id;
    char **name;
    size_t n;
};

static void free_node_names(struct node_names *nn)
{
    for (size_t i = 0; i < nn->n; i++)
        free(nn->name[i]);
    free(nn->id);
    free(nn->name);
}

static int load_node_names(struct trace_ctx *t, struct node_names *nn)
{
    static const char sql[] = "SELECT id, value FROM strings WHERE id IN (SELECT node_name_id FROM lifetimes) "
                              "ORDER BY id";
    sqlite3_stmt *st = NULL;
    int rc = -1, step;
    size_t cap = 0;
    memset(nn, 0, sizeof *nn);
    if (sqlite3_prepare_v2(t->db, sql, -1, &st, NULL) != SQLITE_OK) {
        sql_fail(t, "cannot read node names");
        goto out;
    }
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (nn->n == cap) {
            cap = cap ? 2 * cap : 64;
            int64_t *id = realloc(nn->id, cap * sizeof *id);
            if (id)
                nn->id = id;
            char **name = id ? realloc(nn->name, cap * sizeof *name) : NULL;
            if (!name) {
                ws_error("%s: out of memory", t->path);
                goto out;
            }
            nn->name = name;
        }
        const unsigned char *v = sqlite3_column_text(st, 1);
        if (!(nn->name[nn->n] = strdup(v ? (const char *)v : ""))) {
            ws_error("%s: out of memory", t->path);
            goto out;
        }
        nn->id[nn->n++] = sqlite3_column_int64(st, 0);
    }
    if (step != SQLITE_DONE) {
        sql_fail(t, "cannot read node names");
        goto out;
    }
    rc = 0;
out:
    sqlite3_finalize(st);
    return rc;
}

static const char *node_name(const struct node_names *nn, int64_t id)
{
    size_t lo = 0, hi = nn->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (nn->id[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < nn->n && nn->id[lo] == id ? nn->name[lo] : NULL;
}

/* One panel per plan, in the order of the table. */
static int trace_svg(struct trace_ctx *t, const struct plan_args *a, struct ws_outfile *svg)
{
    struct node_names nn;
    struct ws_svg_panel *panels = calloc(t->nplans, sizeof *panels);
    int rc = -1;
    if (load_node_names(t, &nn))
        goto out;
    if (!panels)
        goto oom;
    for (size_t k = 0; k < t->nplans; k++) {
        const struct trace_plan *p = &t->plans[k];
        struct ws_svg_block *blocks = malloc(p->n * sizeof *blocks + 1);
        char *title = malloc((p->shape_key ? strlen(p->shape_key) : 0) + 64);
        panels[k] = (struct ws_svg_panel){
            title, "event index", blocks, p->n, p->result.peak_bytes, p->result.load_bound_bytes, a->align};
        if (!blocks || !title)
            goto oom;
        if (p->shape_key)
            sprintf(title, "shape key %s, run %" PRId64, p->shape_key, p->run_id);
        else
            sprintf(title, "no shape key, run %" PRId64, p->run_id);
        for (size_t i = 0; i < p->n; i++) {
            const struct block_row *r = &p->rows[i];
            const struct ws_plan_buffer *b = &p->buf[i];
            blocks[i] = (struct ws_svg_block){.lower = b->lower,
                                              .upper = b->upper,
                                              .offset = b->offset,
                                              .size = b->size,
                                              .live_bytes = r->requested,
                                              .cls = r->workspace ? WS_SVG_WORKSPACE : WS_SVG_ACTIVATION,
                                              .id = (uint64_t)r->allocation_id,
                                              .name = r->has_node ? node_name(&nn, r->node_name_id) : NULL,
                                              .slot = r->slot,
                                              .has_slot = r->has_slot};
        }
    }
    rc = draw_svg(a, svg, panels, t->nplans);
    goto out;
oom:
    ws_error("%s: out of memory", a->svg);
out:
    for (size_t k = 0; panels && k < t->nplans; k++) {
        free((void *)panels[k].title);
        free((void *)panels[k].blocks);
    }
    free(panels);
    free_node_names(&nn);
    return rc;
}

/* The lifetimes table is what the planner reads: computed here, as 'wstrace lifetimes' would,
 * when the trace does not have it yet. */
static int compute_lifetimes(struct trace_ctx *t)
{
    struct ws_analysis an = {0};
    char err[1024];
    int rc = 0;
    if (ws_analysis_load(t->db, t->path, &an, err, sizeof err) || ws_lifetimes_write(t->db, &an, err, sizeof err)) {
        ws_error("%s: %s", t->path, err);
        rc = -1;
    }
    ws_analysis_free(&an);
    return rc;
}

static int plan_trace(const struct plan_args *a)
{
    struct trace_ctx t = {.path = a->trace};
    struct ws_outfile svg;
    char err[512];
    int rc = WS_EXIT_USAGE;
    if (open_output(a->svg, &svg))
        return WS_EXIT_USAGE;
    if (ws_tracedb_open(a->trace, WS_TRACEDB_WRITE, &t.db, err, sizeof err)) {
        ws_error("%s", err);
        close_output(&svg, 0);
        return WS_EXIT_USAGE;
    }
    int have = have_lifetimes(&t);
    if (have < 0 || (have == 0 && compute_lifetimes(&t)))
        goto out;
    if (list_plans(&t))
        goto out;
    for (size_t k = 0; k < t.nplans; k++)
        if (solve_trace_plan(&t, &t.plans[k], a))
            goto out;
    /* The picture is drawn before the tables are written and renamed into place after them. */
    if (a->svg && trace_svg(&t, a, &svg))
        goto out;
    if (write_plans(&t, a->align) || close_output(&svg, 1))
        goto out;
    if (a->json ? print_trace_json(&t, a->align) : (print_trace_table(&t, a->align), 0))
        goto out;
    rc = WS_EXIT_OK;
out:
    close_output(&svg, 0); /* no-op once committed */
    for (size_t k = 0; k < t.nplans; k++) {
        free(t.plans[k].buf);
        free(t.plans[k].rows);
        free(t.plans[k].shape_key);
    }
    free(t.plans);
    sqlite3_close(t.db);
    return rc;
}

int cmd_plan(int argc, char **argv)
{
    struct plan_args a;
    int parsed = parse_plan_args(argc, argv, &a);
    if (parsed != 0)
        return parsed > 0 ? WS_EXIT_OK : WS_EXIT_USAGE;
    const char *inputs[] = {a.trace, a.problem, a.output};
    if (ws_check_not_input("plan", a.svg, inputs, 3) != 0 || ws_check_not_input("plan", a.output, inputs, 2) != 0)
        return WS_EXIT_USAGE;
    return a.problem ? plan_problem(&a) : plan_trace(&a);
}
