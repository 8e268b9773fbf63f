/* wstrace import nsys|torch-snapshot FILE -o TRACE: other tools' traces in wstrace's schema. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "import.h"
#include "outfile.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: wstrace import nsys REPORT.sqlite -o TRACE\n"
                 "       wstrace import torch-snapshot SNAPSHOT.pickle -o TRACE [--node frame|module]\n\n"
                 "Write a wstrace trace from another tool's file, so that every analysis command works on it.\n"
                 "  nsys            an Nsight Systems report exported with 'nsys export --type sqlite'\n"
                 "                  (profile with --cuda-memory-usage=true): device allocations and frees,\n"
                 "                  NVTX ranges, marks and domains, kernel and graph launches, threads and\n"
                 "                  processes.  Tables the report lacks are named in one line.\n"
                 "  torch-snapshot  a PyTorch CUDA memory snapshot (torch.cuda.memory._dump_snapshot):\n"
                 "                  the caching allocator's blocks (allocations) and its device segments\n"
                 "                  (memory 'reserved'), with each allocation's frames as its stack.\n"
                 "                  The pickle is read by a strict reader that never imports or runs code.\n\n"
                 "  -o, --output TRACE  trace to write (replaced only when the import succeeds)\n"
                 "      --node RULE     torch-snapshot: how frames name an allocation's node: 'frame' (default,\n"
                 "                      innermost frame of the user's code, FILE:LINE:FUNCTION) or 'module'\n"
                 "                      (the same frame as package.module.function)\n"
                 "  -h, --help          show this help\n\n"
                 "docs/import.md says what each importer maps and what it cannot know.\n");
}

int cmd_import(int argc, char **argv)
{
    static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                            {"node", required_argument, NULL, 'n'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    const char *output = NULL, *node = "frame";
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:h", options, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case 'n': node = optarg; break;
        case 'h': usage(stdout); return WS_EXIT_OK;
        default: return ws_bad_option("import", c, argv);
        }
    }
    if (argc - optind != 2) {
        ws_error("import: expected a format (nsys, torch-snapshot) and one file; see 'wstrace import --help'");
        return WS_EXIT_USAGE;
    }
    const char *format = argv[optind], *input = argv[optind + 1];
    int nsys = strcmp(format, "nsys") == 0, torch = strcmp(format, "torch-snapshot") == 0;
    if (!nsys && !torch) {
        ws_error("import: unknown format '%s' (nsys, torch-snapshot)", format);
        return WS_EXIT_USAGE;
    }
    if (!output) {
        ws_error("import: no output given (-o TRACE); see 'wstrace import --help'");
        return WS_EXIT_USAGE;
    }
    enum ws_node_rule rule = WS_NODE_FRAME;
    if (strcmp(node, "module") == 0)
        rule = WS_NODE_MODULE;
    else if (strcmp(node, "frame") != 0) {
        ws_error("import: --node must be 'frame' or 'module', not '%s'", node);
        return WS_EXIT_USAGE;
    }
    if (nsys && strcmp(node, "frame") != 0) {
        ws_error("import: --node applies to torch-snapshot only");
        return WS_EXIT_USAGE;
    }
    char err[1024];
    const char *inputs[] = {input};
    if (ws_check_not_input("import", output, inputs, 1) != 0)
        return WS_EXIT_USAGE;
    if (ws_outfile_check(output, err, sizeof err) != 0) {
        ws_error("import: %s", err);
        return WS_EXIT_USAGE;
    }
    struct ws_import_stats st;
    int rc = nsys ? ws_import_nsys(input, output, &st, err, sizeof err)
                  : ws_import_torch_snapshot(input, output, rule, &st, err, sizeof err);
    if (rc != 0) {
        ws_error("import %s: %s", format, err);
        return WS_EXIT_USAGE;
    }
    if (st.missing[0])
        fprintf(stderr, "wstrace: import %s: %s\n", format, st.missing);
    printf("%s: %lld processes, %lld threads, %lld ranges, %lld allocations (%lld freed), %lld launches, %lld marks\n",
           output, (long long)st.processes, (long long)st.threads, (long long)st.ranges, (long long)st.allocations,
           (long long)st.frees, (long long)st.launches, (long long)st.marks);
    return WS_EXIT_OK;
}
