/*
 * wstrace export TRACE --format chrome -o OUT.json
 * wstrace export TRACE --format ort-node-stats -o node_stats.csv [--ort-names FILE | --ort-graph FILE]
 *
 * The trace as Chrome trace-event JSON, which Perfetto and chrome://tracing open
 * (chrome_export.h), or as the node-stats file ONNX Runtime's NodeStatsRecorder writes
 * (partition.h).  The file is written under a temporary name and renamed over OUT only when
 * complete, so a failed export never leaves a partial OUT behind.  docs/report.md and
 * docs/partition.md describe the outputs.
 */
#include <getopt.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "chrome_export.h"
#include "cli.h"
#include "commands.h"
#include "estimates.h"
#include "outfile.h"
#include "partition.h"
#include "progress.h"
#include "tracedb.h"

/* ---- command line ---- */

static void export_usage(FILE *out)
{
    fprintf(out, "usage: wstrace export TRACE --format chrome -o OUT.json [--no-memory-events] [--quiet]\n"
                 "       wstrace export TRACE --format ort-node-stats -o node_stats.csv [--estimates FILE]\n"
                 "                            [--ort-names FILE | --ort-graph FILE]\n\n"
                 "chrome: the trace as Chrome trace-event JSON (open it in https://ui.perfetto.dev), sorted by\n"
                 "time: node ranges, marks, declarations, allocations, frees and API errors on their threads,\n"
                 "runs on a track of their own, kernels on one track per stream, and counters of live device\n"
                 "bytes per device and per class.\n"
                 "ort-node-stats: the file ONNX Runtime's NodeStatsRecorder writes, for\n"
                 "session.resource_cuda_partitioning_settings: one line per node that ran, each field the\n"
                 "maximum over runs.  ORT keys it by unique node names (NAME_HASH, from the node's input and\n"
                 "output names): map the trace's names with --ort-names or --ort-graph (docs/partition.md).\n"
                 "'-o -' writes to standard output.\n\n"
                 "  -f, --format FORMAT       chrome (default) or ort-node-stats\n"
                 "  -o, --output FILE         where to write (required)\n"
                 "      --no-memory-events    chrome: leave out the allocation and free instant events\n"
                 "      --estimates FILE      ort-node-stats: node facts (input_bytes, initializer_bytes)\n"
                 "      --ort-names FILE      ort-node-stats: ORT's unique names (an ORT node-stats file, or one\n"
                 "                            name per line); NAME_HASH maps the trace's NAME\n"
                 "      --ort-graph FILE      ort-node-stats: the graph as JSON (name, op_type, inputs,\n"
                 "                            outputs): the unique names are computed as ORT computes them\n"
                 "  -q, --quiet               no progress line on a terminal\n"
                 "  -h, --help                this help\n");
}

struct export_opts {
    const char *trace, *output, *estimates, *ort_names, *ort_graph;
    int with_memory, node_stats;
};

/* Returns -1 to continue, otherwise the exit status. */
static int parse_export_args(int argc, char **argv, struct export_opts *o)
{
    static const struct option longopts[] = {{"format", required_argument, NULL, 'f'},
                                             {"output", required_argument, NULL, 'o'},
                                             {"no-memory-events", no_argument, NULL, 'M'},
                                             {"estimates", required_argument, NULL, 'e'},
                                             {"ort-names", required_argument, NULL, 'n'},
                                             {"ort-graph", required_argument, NULL, 'g'},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *format = "chrome";
    int c;
    o->trace = o->output = o->estimates = o->ort_names = o->ort_graph = NULL;
    o->node_stats = 0;
    o->with_memory = 1;
    optind = 0; /* glibc: full re-initialisation, the command may run more than once per process */
    opterr = 0;
    ws_progress_set_quiet(0);
    while ((c = getopt_long(argc, argv, ":f:o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': format = optarg; break;
        case 'o': o->output = optarg; break;
        case 'M': o->with_memory = 0; break;
        case 'e': o->estimates = optarg; break;
        case 'n': o->ort_names = optarg; break;
        case 'g': o->ort_graph = optarg; break;
        case 'q': ws_progress_set_quiet(1); break;
        case 'h': export_usage(stdout); return WS_EXIT_OK;
        case ':': ws_error("export: option '%s' needs a value", argv[optind - 1]); return WS_EXIT_USAGE;
        default:
            ws_error("export: unknown option '%s'; see 'wstrace export --help'", argv[optind - 1]);
            return WS_EXIT_USAGE;
        }
    }
    o->node_stats = strcmp(format, "ort-node-stats") == 0;
    if (strcmp(format, "chrome") != 0 && !o->node_stats) {
        ws_error("export: unknown format '%s' (supported: chrome, ort-node-stats)", format);
        return WS_EXIT_USAGE;
    }
    if (!o->node_stats && (o->estimates || o->ort_names || o->ort_graph)) {
        ws_error("export: --estimates, --ort-names and --ort-graph go with --format ort-node-stats");
        return WS_EXIT_USAGE;
    }
    if (o->ort_names && o->ort_graph) {
        ws_error("export: give --ort-names or --ort-graph, not both");
        return WS_EXIT_USAGE;
    }
    if (optind != argc - 1 || !o->output) {
        ws_error("export: expected one TRACE and -o OUT.json; see 'wstrace export --help'");
        return WS_EXIT_USAGE;
    }
    o->trace = argv[optind];
    return -1;
}

/* ---- ONNX Runtime's node-stats file ---- */

struct node_stats_work {
    struct ws_estimates est;
    struct ws_part_nodelist graph;
    struct ws_ort_names names;
    struct ws_analysis an;
    struct ws_part_model model;
    struct ws_ort_stats stats;
    sqlite3 *db;
};

static int load_names(const struct export_opts *o, struct node_stats_work *w, char *err, size_t errlen)
{
    size_t ambiguous = 0;
    if (o->ort_graph) {
        if (ws_part_nodelist_load(o->ort_graph, &w->graph, err, errlen) != 0)
            return -1;
        if (!w->graph.is_graph) {
            snprintf(err, errlen, "%s: every node needs \"name\", \"op_type\", \"inputs\" and \"outputs\"",
                     o->ort_graph);
            return -1;
        }
        return ws_ort_names_from_graph(&w->graph, &w->names, err, errlen);
    }
    if (o->ort_names && ws_ort_names_load(o->ort_names, &w->names, &ambiguous, err, errlen) != 0)
        return -1;
    if (ambiguous)
        ws_error("export: warning: %zu names of %s have several unique names (nodes of one name): left unmapped",
                 ambiguous, o->ort_names);
    return 0;
}

/* What ORT will not find: names it cannot read back, names that are not its unique names. */
static void node_stats_warnings(const struct export_opts *o, const struct ws_ort_stats *s)
{
    if (s->unwritable)
        ws_error("export: warning: %zu nodes left out: ONNX Runtime's reader cannot take a name with ',' or a line "
                 "break, or one starting with '#' (first: %s)",
                 s->unwritable, s->first_unwritable);
    if (!o->ort_names && !o->ort_graph)
        ws_error("export: note: lines are keyed by the trace's node names; ONNX Runtime looks nodes up by their "
                 "unique names (NAME_HASH): map them with --ort-names or --ort-graph (docs/partition.md)");
    else if (s->unmapped)
        ws_error("export: warning: %zu of %zu nodes have no ONNX Runtime unique name in %s: written with the "
                 "trace's name, which ORT will not find (it charges such nodes 0)",
                 s->unmapped, s->n, o->ort_names ? o->ort_names : o->ort_graph);
}

static int export_node_stats(const struct export_opts *o)
{
    struct node_stats_work w = {0};
    struct ws_outfile out = {0};
    char err[1024] = "";
    int status = WS_EXIT_USAGE;
    if ((o->estimates && ws_estimates_load(o->estimates, &w.est, err, sizeof err) != 0) ||
        load_names(o, &w, err, sizeof err) != 0 || ws_analysis_open(o->trace, 0, &w.db, &w.an, err, sizeof err) != 0)
        goto done;
    if (ws_part_model_build(w.db, &w.an, o->estimates ? &w.est : NULL, NULL, NULL, &w.model, err, sizeof err) != 0 ||
        ws_ort_stats_build(&w.model, o->ort_names || o->ort_graph ? &w.names : NULL, &w.stats, err, sizeof err) != 0 ||
        ws_outfile_open(&out, o->output, err, sizeof err) != 0)
        goto done;
    int ok = ws_ort_stats_write(out.fp, &w.stats) == 0;
    if (!ok)
        snprintf(err, sizeof err, "cannot write %s", o->output);
    if (ws_outfile_close(&out, ok, err, sizeof err) == 0 && ok) {
        node_stats_warnings(o, &w.stats);
        status = WS_EXIT_OK;
    }
done:
    if (status != WS_EXIT_OK)
        ws_error("export: %s", err);
    ws_ort_stats_free(&w.stats);
    ws_part_model_free(&w.model);
    ws_analysis_free(&w.an);
    sqlite3_close(w.db);
    ws_ort_names_free(&w.names);
    ws_part_nodelist_free(&w.graph);
    ws_estimates_free(&w.est);
    return status;
}

int cmd_export(int argc, char **argv)
{
    struct export_opts opts;
    int status = parse_export_args(argc, argv, &opts);
    if (status >= 0)
        return status;
    const char *inputs[] = {opts.trace, opts.estimates, opts.ort_names, opts.ort_graph};
    if (ws_check_not_input("export", opts.output, inputs, 4) != 0)
        return WS_EXIT_USAGE;
    if (opts.node_stats)
        return export_node_stats(&opts);
    struct ws_chrome_options o = {.with_memory = opts.with_memory};
    struct ws_outfile out = {0};
    sqlite3 *db = NULL;
    char err[1024] = "";
    status = WS_EXIT_USAGE;
    if (ws_tracedb_open(opts.trace, WS_TRACEDB_READ, &db, err, sizeof err) != 0)
        goto done;
    if (ws_outfile_open(&out, opts.output, err, sizeof err) != 0)
        goto done;
    int ok = ws_chrome_export(db, opts.trace, out.fp, &o, err, sizeof err) == 0;
    if (!ok) /* name the input: the error came from reading or writing its events */
        snprintf(err + strlen(err), sizeof err - strlen(err), " (exporting %s)", opts.trace);
    if (ws_outfile_close(&out, ok, err, sizeof err) == 0)
        status = WS_EXIT_OK;
done:
    if (status != WS_EXIT_OK)
        ws_error("export: %s", err);
    sqlite3_close(db);
    return status;
}
