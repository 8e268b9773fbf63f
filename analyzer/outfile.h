/*
 * Output files of the analysis commands: a regular file is written under a temporary name
 * (created exclusively, never through a link) and renamed over the destination only when
 * complete, so a failed command leaves it as it was; "-" is standard output.  Anything else at the
 * destination (a symbolic link, a device, a FIFO, a folder) is refused: nothing is written through
 * a link or replaced that is not a regular file.  ws_check_not_input (cli.h) refuses an output
 * that is one of the command's inputs.
 */
#ifndef WS_OUTFILE_H
#define WS_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

struct ws_outfile {
    FILE *fp;
    char *tmp;        /* temporary name renamed over path when complete; NULL when writing in place */
    const char *path; /* destination, "-" for standard output */
    int owned;        /* fp was opened here */
};

/* 0 when path may be written: absent, or a regular file.  Otherwise -1 with one line in err
 * (for commands that write their output by other means than ws_outfile). */
int ws_outfile_check(const char *path, char *err, size_t errlen);

/* 0, or -1 with one line in err. */
int ws_outfile_open(struct ws_outfile *o, const char *path, char *err, size_t errlen);
/* Finish: ok != 0 commits (rename), ok == 0 discards.  0, or -1 with one line in err. */
int ws_outfile_close(struct ws_outfile *o, int ok, char *err, size_t errlen);

/* Length of the valid UTF-8 sequence at p (1-4), or 0 when the bytes there are not one. */
size_t ws_utf8_sequence(const unsigned char *p);
/* Copy of s into out (len bytes) with every byte outside a valid UTF-8 sequence replaced by U+FFFD
 * (cut before a sequence that does not fit). */
void ws_utf8_sanitize(const char *s, char *out, size_t len);

#endif
