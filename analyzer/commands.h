/*
 * The wstrace CLI: one subcommand per file (cmd_*.c), one table (commands.c).
 * Each command gets argv with argv[0] = its own name, parses it with getopt_long, prints
 * its own --help, and returns an exit status: WS_EXIT_OK, WS_EXIT_FINDINGS or WS_EXIT_USAGE.
 */
#ifndef WS_COMMANDS_H
#define WS_COMMANDS_H

#include <stdio.h>

enum { WS_EXIT_OK = 0, WS_EXIT_FINDINGS = 1, WS_EXIT_USAGE = 2 };

struct ws_command {
    const char *name;
    int (*fn)(int argc, char **argv);
    unsigned flags;
    const char *summary;
};

enum { WS_CMD_TRACE_INPUT = 1u }; /* takes a trace database as input */

extern const struct ws_command ws_commands[];
extern const unsigned ws_command_count;

#define WS_COMMAND(name) int cmd_##name(int argc, char **argv)
WS_COMMAND(record);
WS_COMMAND(collect);
WS_COMMAND(summary);
WS_COMMAND(lifetimes);
WS_COMMAND(resolve);
WS_COMMAND(verify);
WS_COMMAND(plan);
WS_COMMAND(report);
WS_COMMAND(export);
WS_COMMAND(import);
WS_COMMAND(merge);
WS_COMMAND(view);
WS_COMMAND(partition);

/* Print "wstrace: MESSAGE" on stderr (one line). */
void ws_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
