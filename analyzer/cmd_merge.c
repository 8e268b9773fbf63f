/* wstrace merge TRACE... -o MERGED: one trace of many processes (docs/import.md). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "import.h"
#include "outfile.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: wstrace merge -o MERGED TRACE...\n\n"
                 "Merge the traces of several processes (ranks, forked children, imported traces) into one.\n"
                 "Every row keeps its process (table processes: pid, host, rank, source), ids are renumbered,\n"
                 "strings and NVTX domains are shared by name, and each input's times are moved onto one\n"
                 "timeline by the recorded start of its processes (traces of one boot of one machine keep\n"
                 "their times).  Every analysis then works per process and across processes; `summary`\n"
                 "shows each rank and `report --ranks` compares them.  Result tables of the inputs\n"
                 "(lifetimes, plans, ...) are not copied: run the analyses on the merged trace.\n\n"
                 "  -o, --output MERGED  trace to write (replaced only when the merge succeeds)\n"
                 "  -h, --help           show this help\n");
}

int cmd_merge(int argc, char **argv)
{
    static const struct option options[] = {
        {"output", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    const char *output = NULL;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:h", options, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case 'h': usage(stdout); return WS_EXIT_OK;
        default: return ws_bad_option("merge", c, argv);
        }
    }
    if (!output) {
        ws_error("merge: no output given (-o MERGED); see 'wstrace merge --help'");
        return WS_EXIT_USAGE;
    }
    if (optind >= argc) {
        ws_error("merge: no trace given; see 'wstrace merge --help'");
        return WS_EXIT_USAGE;
    }
    char err[1024];
    if (ws_check_not_input("merge", output, (const char *const *)argv + optind, (size_t)(argc - optind)) != 0)
        return WS_EXIT_USAGE;
    if (ws_outfile_check(output, err, sizeof err) != 0) {
        ws_error("merge: %s", err);
        return WS_EXIT_USAGE;
    }
    struct ws_merge_stats st;
    if (ws_merge_traces((const char *const *)argv + optind, (size_t)(argc - optind), output, &st, err, sizeof err) !=
        0) {
        ws_error("merge: %s", err);
        return WS_EXIT_USAGE;
    }
    printf("%s: %d traces, %lld processes, %lld rows\n", output, argc - optind, (long long)st.processes,
           (long long)st.rows);
    return WS_EXIT_OK;
}
