/* wstrace: dispatch to one subcommand through the ws_commands table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "version.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: wstrace [--version] [--help] COMMAND [ARGS...]\n\n"
                 "Measure and plan GPU memory: trace a CUDA program, analyse its allocations per graph node,\n"
                 "verify declared workspace and compute a static memory plan.\n\ncommands:\n");
    for (unsigned i = 0; i < ws_command_count; i++)
        fprintf(out, "  %-10s %s\n", ws_commands[i].name, ws_commands[i].summary);
    fprintf(out, "\nRun 'wstrace COMMAND --help' for the options of one command.\n"
                 "Exit status: 0 success, 1 findings under --strict or a threshold, 2 bad input or usage.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return WS_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
        if (argc > 2 && strcmp(name, "help") == 0) {
            for (unsigned i = 0; i < ws_command_count; i++)
                if (!strcmp(ws_commands[i].name, argv[2])) {
                    char *help_argv[] = {argv[2], "--help", NULL};
                    return ws_commands[i].fn(2, help_argv);
                }
        }
        usage(stdout);
        return WS_EXIT_OK;
    }
    if (!strcmp(name, "--version")) {
        printf("wstrace %s (trace schema %d)\n", WSTRACE_VERSION, WSTRACE_SCHEMA_VERSION);
        return WS_EXIT_OK;
    }
    if (!strcmp(name, "--list-commands")) { /* for shell completion */
        for (unsigned i = 0; i < ws_command_count; i++)
            puts(ws_commands[i].name);
        return WS_EXIT_OK;
    }
    for (unsigned i = 0; i < ws_command_count; i++)
        if (!strcmp(ws_commands[i].name, name))
            return ws_commands[i].fn(argc - 1, argv + 1);
    ws_error("'%s' is not a command; see 'wstrace --help'", name);
    return WS_EXIT_USAGE;
}
