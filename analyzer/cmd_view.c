/*
 * wstrace view TRACE [-o OUT.html]: one self-contained HTML page of a trace (analyzer/view/).
 * The page is written under a temporary name and renamed into place when complete.
 */
#include <getopt.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "outfile.h"
#include "progress.h"
#include "tracedb.h"
#include "view/view.h"

static void view_usage(FILE *out)
{
    fprintf(out, "usage: wstrace view TRACE [-o OUT.html] [--quiet]\n\n"
                 "Write one self-contained HTML page of the trace (no network access; scripts, styles and\n"
                 "data inside) for any current browser: live device bytes stacked by class, node or layer\n"
                 "with the plans' load bound and planned peak, every allocation as a block in time x\n"
                 "address, runs and shape keys to select, zoom and pan, each plan beside its dynamic run,\n"
                 "and the verification and resolution tables when the trace has them.\n\n"
                 "  -o, --output FILE  where to write (default: TRACE with its extension replaced by .html;\n"
                 "                     '-' is standard output)\n"
                 "  -q, --quiet        no progress line on a terminal\n"
                 "  -h, --help         this help\n");
}

/* dynamic.db -> dynamic.html, trace -> trace.html */
static char *default_output(const char *trace)
{
    size_t n = strlen(trace);
    const char *slash = strrchr(trace, '/'), *dot = strrchr(trace, '.');
    if (dot && (!slash || dot > slash + 1))
        n = (size_t)(dot - trace);
    char *out = malloc(n + 6);
    if (out)
        snprintf(out, n + 6, "%.*s.html", (int)n, trace);
    return out;
}

int cmd_view(int argc, char **argv)
{
    static const struct option longopts[] = {{"output", required_argument, NULL, 'o'},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *output = NULL;
    int c;
    optind = 0; /* glibc: full re-initialisation, the command may run more than once per process */
    opterr = 0;
    ws_progress_set_quiet(0);
    while ((c = getopt_long(argc, argv, ":o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case 'q': ws_progress_set_quiet(1); break;
        case 'h': view_usage(stdout); return WS_EXIT_OK;
        case ':': ws_error("view: option '%s' needs a value", argv[optind - 1]); return WS_EXIT_USAGE;
        default:
            ws_error("view: unknown option '%s'; see 'wstrace view --help'", argv[optind - 1]);
            return WS_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        ws_error("view: expected one TRACE; see 'wstrace view --help'");
        return WS_EXIT_USAGE;
    }
    const char *trace = argv[optind];
    char *fallback = output ? NULL : default_output(trace);
    if (!output && !fallback) {
        ws_error("view: out of memory");
        return WS_EXIT_USAGE;
    }
    const char *inputs[] = {trace};
    if (ws_check_not_input("view", output ? output : fallback, inputs, 1) != 0) {
        free(fallback);
        return WS_EXIT_USAGE;
    }
    struct ws_outfile out = {0};
    struct ws_view_options o = {0};
    sqlite3 *db = NULL;
    char err[1024] = "";
    int status = WS_EXIT_USAGE;
    const char *env = getenv("WSTRACE_VIEW_CHUNK"); /* allocations per detail chunk (tests) */
    if (env && *env)
        o.chunk_allocations = strtoul(env, NULL, 10);
    if (ws_tracedb_open(trace, WS_TRACEDB_READ, &db, err, sizeof err) != 0)
        goto done;
    if (ws_outfile_open(&out, output ? output : fallback, err, sizeof err) != 0)
        goto done;
    int ok = ws_view_write(db, trace, out.fp, &o, err, sizeof err) == 0;
    if (ws_outfile_close(&out, ok, err, sizeof err) == 0)
        status = WS_EXIT_OK;
done:
    if (status != WS_EXIT_OK)
        ws_error("view: %s", err);
    sqlite3_close(db);
    free(fallback);
    return status;
}
