/* wstrace lifetimes TRACE: classify every device allocation and place it in node steps and
 * events of its run; the rows replace table `lifetimes`. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "commands.h"
#include "progress.h"
#include "output.h"

struct lifetimes_options {
    const char *trace;
    int json, list;
};

static void lifetimes_usage(FILE *out)
{
    fprintf(out, "usage: wstrace lifetimes TRACE [--list] [--json]\n\n"
                 "Classify every successful device allocation as workspace, activation, persistent or\n"
                 "unattributed, with its lifetime in node steps and events of its run, and store the\n"
                 "rows in table 'lifetimes' (re-running replaces them).  Prints the totals per class.\n\n"
                 "  --list     also print one line per allocation\n"
                 "  --json     print JSON instead of text\n"
                 "  --quiet    no progress line on a terminal\n"
                 "  --help     show this help\n");
}

static int parse_lifetimes(int argc, char **argv, struct lifetimes_options *o)
{
    static const struct option longopts[] = {{"json", no_argument, NULL, 'j'},
                                             {"list", no_argument, NULL, 'l'},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {0}};
    int c;
    optind = 0; /* commands may run several times in one process (tests) */
    ws_progress_set_quiet(0);
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': o->json = 1; break;
        case 'l': o->list = 1; break;
        case 'q': ws_progress_set_quiet(1); break;
        case 'h': lifetimes_usage(stdout); return -1;
        default: return ws_bad_option("lifetimes", c, argv);
        }
    }
    if (optind + 1 != argc) {
        ws_error("lifetimes: expected one TRACE argument; see 'wstrace lifetimes --help'");
        return WS_EXIT_USAGE;
    }
    o->trace = argv[optind];
    return WS_EXIT_OK;
}

static json_t *lifetime_json(const struct ws_analysis *an, const struct ws_lifetime *a)
{
    return json_pack("{s:I, s:o, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I}", "allocation_id",
                     (json_int_t)a->allocation_id, "run_id",
                     a->run < 0 ? json_null() : json_integer(an->runs[a->run].id), "class", ws_class_name(a->cls),
                     "node", a->node < 0 ? json_null() : ws_json_text(an->nodes[a->node].name), "range_id",
                     a->owner < 0 ? json_null() : json_integer(an->ranges[a->owner].id), "alloc_step",
                     ws_json_bytes(a->alloc_step), "free_step", ws_json_bytes(a->free_step), "alloc_seq",
                     ws_json_bytes(a->alloc_seq), "start_event", ws_json_bytes(a->start_event), "end_event",
                     ws_json_bytes(a->end_event), "slot", ws_json_bytes(a->slot), "bytes", (json_int_t)a->bytes);
}

/* The per-allocation list can hold millions of rows: stream it one object at a time after the
 * totals instead of building one document in memory. */
static int print_json(const struct lifetimes_options *o, const struct ws_analysis *an)
{
    json_t *classes = json_object();
    for (int c = 0; classes && c < WS_CLASS_COUNT; c++)
        if (json_object_set_new(classes, ws_class_name(c),
                                json_pack("{s:I, s:I}", "allocations", (json_int_t)an->class_count[c], "bytes",
                                          (json_int_t)an->class_bytes[c])) != 0) {
            json_decref(classes);
            classes = NULL;
        }
    json_t *root = json_pack("{s:o, s:I, s:b, s:I, s:o}", "trace", ws_json_text(o->trace), "runs",
                             (json_int_t)an->nruns, "runs_from_outermost_ranges", an->runs_synthesized, "allocations",
                             (json_int_t)an->nallocs, "classes", classes);
    if (!o->list)
        return ws_json_print(root, stdout);
    char *head = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(root);
    if (!head)
        return -1;
    head[strlen(head) - 2] = '\0'; /* drop the closing "\n}" */
    printf("%s,\n  \"rows\": [", head);
    free(head);
    for (size_t i = 0; i < an->nallocs; i++) {
        json_t *row = lifetime_json(an, &an->allocs[i]);
        char *text = row ? json_dumps(row, JSON_PRESERVE_ORDER | JSON_COMPACT) : NULL;
        json_decref(row);
        if (!text)
            return -1;
        printf("%s\n    %s", i ? "," : "", text);
        free(text);
    }
    printf("\n  ]\n}\n");
    return 0;
}

static void print_list(const struct ws_analysis *an)
{
    printf("\n%12s %8s %-12s %5s %5s %7s %7s %4s %12s  %s\n", "ALLOCATION", "RUN", "CLASS", "STEP", "FREE", "EVENT",
           "END", "SLOT", "BYTES", "NODE");
    for (size_t i = 0; i < an->nallocs; i++) {
        const struct ws_lifetime *a = &an->allocs[i];
        char run[24] = "-", steps[2][16] = {"-", "-"}, events[2][16] = {"-", "-"}, slot[16] = "-", bytes[32];
        if (a->run >= 0)
            snprintf(run, sizeof run, "%lld", (long long)an->runs[a->run].id);
        if (a->alloc_step >= 0)
            snprintf(steps[0], sizeof steps[0], "%d", a->alloc_step);
        if (a->free_step >= 0)
            snprintf(steps[1], sizeof steps[1], "%d", a->free_step);
        if (a->start_event >= 0)
            snprintf(events[0], sizeof events[0], "%d", a->start_event);
        if (a->end_event >= 0)
            snprintf(events[1], sizeof events[1], "%d", a->end_event);
        if (a->slot >= 0)
            snprintf(slot, sizeof slot, "%d", a->slot);
        printf("%12lld %8s %-12s %5s %5s %7s %7s %4s %12s  %s\n", (long long)a->allocation_id, run,
               ws_class_name(a->cls), steps[0], steps[1], events[0], events[1], slot,
               ws_format_bytes(a->bytes, bytes, sizeof bytes), a->node < 0 ? "-" : an->nodes[a->node].name);
    }
}

static void print_text(const struct lifetimes_options *o, const struct ws_analysis *an)
{
    static const char *const headers[] = {"CLASS", "ALLOCATIONS", "BYTES", "SHARE"};
    struct ws_table t;
    char count[32], bytes[32], share[32];
    int64_t total = 0;
    for (int c = 0; c < WS_CLASS_COUNT; c++)
        total += an->class_count[c];
    printf("%s: %zu allocations in %zu runs%s; rows written to table 'lifetimes'\n\n", o->trace, an->nallocs, an->nruns,
           an->runs_synthesized ? " (no run markers: outermost ranges)" : "");
    ws_table_init(&t, 4, headers, "lrrr");
    for (int c = 0; c < WS_CLASS_COUNT; c++) {
        snprintf(count, sizeof count, "%lld", (long long)an->class_count[c]);
        const char *row[] = {ws_class_name(c), count, ws_format_bytes(an->class_bytes[c], bytes, sizeof bytes),
                             ws_format_share(an->class_count[c], total, share, sizeof share)};
        if (ws_table_add(&t, row) != 0)
            break;
    }
    ws_table_print(&t, stdout);
    ws_table_free(&t);
    if (o->list)
        print_list(an);
}

int cmd_lifetimes(int argc, char **argv)
{
    struct lifetimes_options o = {0};
    struct ws_analysis an;
    sqlite3 *db = NULL;
    char err[1024];
    int rc = parse_lifetimes(argc, argv, &o);
    if (rc != WS_EXIT_OK)
        return rc < 0 ? WS_EXIT_OK : rc;
    if (ws_analysis_open(o.trace, 1, &db, &an, err, sizeof err) != 0) {
        ws_error("%s", err);
        return WS_EXIT_USAGE;
    }
    rc = WS_EXIT_USAGE;
    if (ws_lifetimes_write(db, &an, err, sizeof err) != 0) {
        ws_error("%s: %s", o.trace, err);
        goto out;
    }
    if (o.json) {
        if (print_json(&o, &an) != 0) {
            ws_error("lifetimes: cannot print JSON");
            goto out;
        }
    } else {
        print_text(&o, &an);
    }
    rc = WS_EXIT_OK;
out:
    ws_analysis_free(&an);
    sqlite3_close(db);
    return rc;
}
