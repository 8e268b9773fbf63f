/*
 * What every command shares in how it talks to the user: the one line for a usage error, checks
 * that an output is safe to write and is none of the command's inputs, and the check of standard
 * output when a command is done.  Errors are values: each returns the exit status to use, or 0.
 */
#ifndef WS_CLI_H
#define WS_CLI_H

#include <stddef.h>

/* One line for an option getopt_long() refused (c is what it returned: '?' or ':', with ':' first
 * in the option string and opterr = 0), naming the option and pointing at --help.  Returns
 * WS_EXIT_USAGE. */
int ws_bad_option(const char *command, int c, char *const *argv);

/* 0 when writing output would replace none of the n inputs (NULL entries are skipped):
 * the same path, or the same file under another name (hard link, symbolic link to it).  Otherwise
 * one line naming both and WS_EXIT_USAGE.  "-" (standard output) replaces nothing. */
int ws_check_not_input(const char *command, const char *output, const char *const *inputs, size_t n);

/* Flush and check standard output at the end of a command: a write that failed (a full disk, a
 * closed pipe) gives one line and WS_EXIT_USAGE; otherwise status is returned unchanged. */
int ws_finish_stdout(int status);

#endif
