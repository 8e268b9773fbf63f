/*
 * wstrace export TRACE --format chrome -o OUT.json
 *
 * The trace as Chrome trace-event JSON, which Perfetto and chrome://tracing open
 * (chrome_export.h).  The file is written under a temporary name and renamed over OUT only when
 * complete, so a failed export never leaves a partial OUT behind.  docs/report.md describes the
 * output.
 */
#include <getopt.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chrome_export.h"
#include "cli.h"
#include "commands.h"
#include "outfile.h"
#include "progress.h"
#include "tracedb.h"

/* ---- command line ---- */

static void export_usage(FILE *out)
{
    fprintf(out, "usage: wstrace export TRACE --format chrome -o OUT.json [--no-memory-events] [--quiet]\n\n"
                 "Write the trace as Chrome trace-event JSON (open it in https://ui.perfetto.dev), sorted by\n"
                 "time: node ranges, marks, declarations, allocations, frees and API errors on their threads,\n"
                 "runs on a track of their own, kernels on one track per stream, and counters of live device\n"
                 "bytes per device and per class.  '-o -' writes to standard output.\n\n"
                 "  -f, --format chrome       output format (only 'chrome')\n"
                 "  -o, --output FILE         where to write (required)\n"
                 "      --no-memory-events    leave out the allocation and free instant events\n"
                 "  -q, --quiet               no progress line on a terminal\n"
                 "  -h, --help                this help\n");
}

struct export_opts {
    const char *trace, *output;
    int with_memory;
};

/* Returns -1 to continue, otherwise the exit status. */
static int parse_export_args(int argc, char **argv, struct export_opts *o)
{
    static const struct option longopts[] = {{"format", required_argument, NULL, 'f'},
                                             {"output", required_argument, NULL, 'o'},
                                             {"no-memory-events", no_argument, NULL, 'M'},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *format = "chrome";
    int c;
    o->trace = o->output = NULL;
    o->with_memory = 1;
    optind = 0; /* glibc: full re-initialisation, the command may run more than once per process */
    opterr = 0;
    ws_progress_set_quiet(0);
    while ((c = getopt_long(argc, argv, ":f:o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': format = optarg; break;
        case 'o': o->output = optarg; break;
        case 'M': o->with_memory = 0; break;
        case 'q': ws_progress_set_quiet(1); break;
        case 'h': export_usage(stdout); return WS_EXIT_OK;
        case ':': ws_error("export: option '%s' needs a value", argv[optind - 1]); return WS_EXIT_USAGE;
        default:
            ws_error("export: unknown option '%s'; see 'wstrace export --help'", argv[optind - 1]);
            return WS_EXIT_USAGE;
        }
    }
    if (strcmp(format, "chrome") != 0) {
        ws_error("export: unknown format '%s' (supported: chrome)", format);
        return WS_EXIT_USAGE;
    }
    if (optind != argc - 1 || !o->output) {
        ws_error("export: expected one TRACE and -o OUT.json; see 'wstrace export --help'");
        return WS_EXIT_USAGE;
    }
    o->trace = argv[optind];
    return -1;
}

int cmd_export(int argc, char **argv)
{
    struct export_opts opts;
    int status = parse_export_args(argc, argv, &opts);
    if (status >= 0)
        return status;
    const char *inputs[] = {opts.trace};
    if (ws_check_not_input("export", opts.output, inputs, 1) != 0)
        return WS_EXIT_USAGE;
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
