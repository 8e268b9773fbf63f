#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"

int ws_bad_option(const char *command, int c, char *const *argv)
{
    const char *arg = optind > 0 ? argv[optind - 1] : "";
    char letter[3] = {'-', (char)optopt, 0};
    /* A short option is named alone: it may be one of several letters after one '-'. */
    const char *name = optopt > 0 && optopt < 128 && strncmp(arg, "--", 2) != 0 ? letter : arg;
    if (c == ':')
        ws_error("%s: option '%s' needs a value; see 'wstrace %s --help'", command, name, command);
    else
        ws_error("%s: unknown option '%s'; see 'wstrace %s --help'", command, name, command);
    return WS_EXIT_USAGE;
}

int ws_check_not_input(const char *command, const char *output, const char *const *inputs, size_t n)
{
    if (!output || !strcmp(output, "-"))
        return 0;
    struct stat out;
    int exists = stat(output, &out) == 0;
    for (size_t i = 0; i < n; i++) {
        const char *in = inputs[i];
        struct stat st;
        if (!in)
            continue;
        if (!strcmp(in, output) ||
            (exists && stat(in, &st) == 0 && st.st_dev == out.st_dev && st.st_ino == out.st_ino)) {
            ws_error("%s: the output %s is the input %s: refusing to replace it", command, output, in);
            return WS_EXIT_USAGE;
        }
    }
    return 0;
}

int ws_finish_stdout(int status)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return status;
    ws_error("cannot write to standard output: %s", errno ? strerror(errno) : "write error");
    return WS_EXIT_USAGE;
}
