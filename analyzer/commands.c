/* The one list of wstrace subcommands: help, dispatch and completion read it. */
#include "commands.h"

const struct ws_command ws_commands[] = {
    /* name, function, flags, summary */
};

const unsigned ws_command_count = sizeof(ws_commands) / sizeof(ws_commands[0]);
