/*
 * Output files of the analysis commands: a regular file is written under a temporary name and
 * renamed over the destination only when complete, so a failed command leaves it as it was;
 * "-" is standard output; devices, pipes and symbolic links are written in place.
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

/* 0, or -1 with one line in err. */
int ws_outfile_open(struct ws_outfile *o, const char *path, char *err, size_t errlen);
/* Finish: ok != 0 commits (rename), ok == 0 discards.  0, or -1 with one line in err. */
int ws_outfile_close(struct ws_outfile *o, int ok, char *err, size_t errlen);

/* Length of the valid UTF-8 sequence at p (1-4), or 0 when the bytes there are not one. */
size_t ws_utf8_sequence(const unsigned char *p);
/* Copy of s into out (len bytes) with every byte outside a valid UTF-8 sequence replaced by '?'. */
void ws_utf8_sanitize(const char *s, char *out, size_t len);

#endif
