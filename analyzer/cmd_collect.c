/* wstrace collect: turn spools left by crashed or killed processes into traces. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "cli.h"
#include "commands.h"
#include "progress.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: wstrace collect [-o TRACE] [--keep-spool] [--quiet] SPOOL...\n\n"
                 "Write the SQLite trace of each spool.  A traced process writes FILE.spool beside its\n"
                 "trace FILE and converts it when it exits; after a crash or SIGKILL the spool is left\n"
                 "behind with every record that was completely written, and this command recovers it.\n"
                 "A spool whose trace is written in full is then removed, as at a normal exit; a spool\n"
                 "that cannot be converted is kept (one error line, exit status 2), and so is one that\n"
                 "a running process still writes.\n\n"
                 "  -o, --output TRACE  trace to write (one spool only); default: SPOOL without '.spool'\n"
                 "      --keep-spool    keep each spool after it has been converted\n"
                 "  -q, --quiet         no progress line on a terminal\n"
                 "  -h, --help          show this help\n");
}

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
    struct ws_progress *p = ctx;
    p->total = total;
    ws_progress_update(p, done);
}

static int default_output(const char *spool, char *out, size_t len)
{
    size_t n = strlen(spool);
    const char *suffix = ".spool";
    if (n > 6 && strcmp(spool + n - 6, suffix) == 0)
        return snprintf(out, len, "%.*s", (int)(n - 6), spool) >= (int)len ? -1 : 0;
    return snprintf(out, len, "%s.db", spool) >= (int)len ? -1 : 0;
}

int cmd_collect(int argc, char **argv)
{
    static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                            {"keep-spool", no_argument, NULL, 'k'},
                                            {"quiet", no_argument, NULL, 'q'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    const char *output = NULL;
    int c, keep = 0;
    optind = 1;
    ws_progress_set_quiet(0);
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:qh", options, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case 'k': keep = 1; break;
        case 'q': ws_progress_set_quiet(1); break;
        case 'h': usage(stdout); return WS_EXIT_OK;
        default: return ws_bad_option("collect", c, argv);
        }
    }
    if (optind >= argc) {
        ws_error("collect: no spool given; see 'wstrace collect --help'");
        return WS_EXIT_USAGE;
    }
    if (output && argc - optind > 1) {
        ws_error("collect: -o takes one spool, %d were given", argc - optind);
        return WS_EXIT_USAGE;
    }
    int status = WS_EXIT_OK;
    for (int i = optind; i < argc; i++) {
        char path[4096], err[1024];
        if (output)
            snprintf(path, sizeof path, "%s", output);
        else if (default_output(argv[i], path, sizeof path) != 0) {
            ws_error("%s: path too long", argv[i]);
            status = WS_EXIT_USAGE;
            continue;
        }
        struct ws_collect_stats st;
        struct ws_progress progress;
        char what[96];
        snprintf(what, sizeof what, "collecting %s", argv[i]);
        ws_progress_begin(&progress, what, "records", 0);
        unsigned flags = keep ? 0 : WS_COLLECT_REMOVE_SPOOL;
        int failed = ws_collect_spool_ex(argv[i], path, flags, &st, on_progress, &progress, err, sizeof err) != 0;
        ws_progress_end(&progress);
        if (failed) {
            ws_error("%s; the spool is kept", err);
            status = WS_EXIT_USAGE;
            continue;
        }
        printf("%s: %llu records, %llu allocations, %llu launches, %llu ranges, %llu threads, %llu lost%s\n", path,
               (unsigned long long)st.records, (unsigned long long)st.allocations, (unsigned long long)st.launches,
               (unsigned long long)st.ranges, (unsigned long long)st.threads, (unsigned long long)st.lost_records,
               st.clean_exit ? "" : " (the process did not exit cleanly)");
        if (st.spool_errno == EBUSY)
            fprintf(stderr, "wstrace: %s: the spool is kept: its writer still runs\n", argv[i]);
        else if (st.spool_errno)
            fprintf(stderr, "wstrace: %s: the spool is kept: %s\n", argv[i], strerror(st.spool_errno));
    }
    return status;
}
