/* wstrace: dispatch to one subcommand through the ws_commands table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "version.h"

static void usage(FILE *out) /* --help */
{
    fprintf(out, "usage: wstrace [--version] [--help] COMMAND [ARGS...]\n\n"
                 "Measure and plan GPU memory: trace a CUDA program, analyse its allocations per graph node,\n"
                 "verify declared workspace and compute a static memory plan.\n\ncommands:\n");
    for (unsigned i = 0; i < ws_command_count; i++)
        fprintf(out, "  %-10s %s\n", ws_commands[i].name, ws_commands[i].summary);
    fprintf(out, "\nRun 'wstrace COMMAND --help' for the options of one command.\n"
                 "Exit status: 0 success, 1 findings under --strict or a threshold, 2 bad input or usage.\n");
}

/* Every command's output is checked once it is done: a write to standard output that failed
 * (a full disk, /dev/full) is exit status 2, never a silent success. */
int main(int argc, char **argv)
{
    if (argc < 2) {
        ws_error("no command given; see 'wstrace --help'");
        return WS_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
        if (argc > 2 && strcmp(name, "help") == 0) {
            for (unsigned i = 0; i < ws_command_count; i++)
                if (!strcmp(ws_commands[i].name, argv[2])) {
                    char *help_argv[] = {argv[2], "--help", NULL};
                    return ws_finish_stdout(ws_commands[i].fn(2, help_argv));
                }
            ws_error("'%s' is not a command; see 'wstrace --help'", argv[2]);
            return WS_EXIT_USAGE;
        }
        usage(stdout);
        return ws_finish_stdout(WS_EXIT_OK);
    }
    if (!strcmp(name, "--version")) {
        printf("wstrace %s (trace schema %d)\n", WSTRACE_VERSION, WSTRACE_SCHEMA_VERSION);
        return ws_finish_stdout(WS_EXIT_OK);
    }
    if (!strcmp(name, "--list-commands")) { /* for shell completion */
        for (unsigned i = 0; i < ws_command_count; i++)
            puts(ws_commands[i].name);
        return ws_finish_stdout(WS_EXIT_OK);
    }
    for (unsigned i = 0; i < ws_command_count; i++)
        if (!strcmp(ws_commands[i].name, name))
            return ws_finish_stdout(ws_commands[i].fn(argc - 1, argv + 1));
    if (name[0] == '-')
        ws_error("unknown option '%s'; see 'wstrace --help'", name);
    else
        ws_error("'%s' is not a command; see 'wstrace --help'", name);
    return WS_EXIT_USAGE;
}
