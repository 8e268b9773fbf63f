/* Output files written whole or not at all, and UTF-8 clean-up for JSON output. */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spool_files.h"

static int open_temp(struct ws_outfile *o, char *err, size_t errlen)
{
    size_t len = strlen(o->path) + 32;
    if (!(o->tmp = malloc(len))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* O_EXCL with the pid and a counter: a fresh name, created with the caller's umask like any
     * other output file (mkstemp would force mode 0600). */
    int saved = EEXIST;
    for (unsigned attempt = 0; attempt < 100 && saved == EEXIST; attempt++) {
        snprintf(o->tmp, len, "%s.tmp.%ld.%u", o->path, (long)getpid(), attempt);
        int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        flock(fd, LOCK_EX | LOCK_NB); /* held while written: see ws_temp_remove_stale() */
        if ((o->fp = fdopen(fd, "w")) != NULL) {
            o->owned = 1;
            return 0;
        }
        saved = errno;
        close(fd);
        unlink(o->tmp);
    }
    snprintf(err, errlen, "%s: cannot write: %s", o->path, strerror(saved));
    free(o->tmp);
    o->tmp = NULL;
    return -1;
}

static const char *kind_of(mode_t m)
{
    return S_ISLNK(m)    ? "a symbolic link"
           : S_ISDIR(m)  ? "a folder"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISSOCK(m) ? "a socket"
                         : "not a regular file";
}

int ws_outfile_check(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) != 0 || S_ISREG(st.st_mode))
        return 0;
    snprintf(err, errlen, "%s is %s, not a regular file: refusing to write it (use '-' for standard output)", path,
             kind_of(st.st_mode));
    return -1;
}

int ws_outfile_open(struct ws_outfile *o, const char *path, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->path = path;
    if (!strcmp(path, "-")) {
        o->fp = stdout;
        return 0;
    }
    /* A link is never followed and a device, FIFO or folder never replaced: renaming over
     * /dev/null or writing through a planted link would touch a file nobody asked to write. */
    if (ws_outfile_check(path, err, errlen) != 0)
        return -1;
    ws_temp_remove_stale(path); /* what a killed command left: PATH.tmp.<pid>.<k> */
    return open_temp(o, err, errlen);
}

/* Finish the output: on success rename the temporary file over the destination, otherwise
 * remove it, so that a failed command leaves the destination as it was. */
int ws_outfile_close(struct ws_outfile *o, int ok, char *err, size_t errlen)
{
    int rc = ok ? 0 : -1;
    if (!o->fp)
        return rc;
    int failed = ferror(o->fp) != 0;
    if (o->owned ? fclose(o->fp) != 0 : fflush(o->fp) != 0)
        failed = 1;
    o->fp = NULL;
    if (rc == 0 && failed) {
        snprintf(err, errlen, "%s: write failed: %s", strcmp(o->path, "-") ? o->path : "standard output",
                 strerror(errno));
        rc = -1;
    }
    if (o->tmp) {
        if (rc == 0 && ws_outfile_check(o->path, err, errlen) != 0)
            rc = -1; /* something else took the name meanwhile */
        if (rc == 0 && rename(o->tmp, o->path) != 0) {
            snprintf(err, errlen, "%s: cannot rename the finished file into place: %s", o->path, strerror(errno));
            rc = -1;
        }
        if (rc != 0)
            unlink(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
    }
    return rc;
}

/* Length of the valid UTF-8 sequence at p (1-4), or 0 when the bytes there are not one. */
size_t ws_utf8_sequence(const unsigned char *p)
{
    static const unsigned min_code[] = {0, 0, 0x80, 0x800, 0x10000};
    size_t n;
    unsigned code;
    if (p[0] < 0x80)
        return 1;
    if ((p[0] & 0xE0) == 0xC0)
        n = 2, code = p[0] & 0x1Fu;
    else if ((p[0] & 0xF0) == 0xE0)
        n = 3, code = p[0] & 0x0Fu;
    else if ((p[0] & 0xF8) == 0xF0)
        n = 4, code = p[0] & 0x07u;
    else
        return 0;
    for (size_t i = 1; i < n; i++) { /* a NUL fails the test before anything past it is read */
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        code = code << 6 | (p[i] & 0x3Fu);
    }
    if (code < min_code[n] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
        return 0;
    return n;
}

/* Copy of s with every byte that is not part of a valid UTF-8 sequence replaced by U+FFFD. */
void ws_utf8_sanitize(const char *s, char *out, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;
    while (*p) {
        size_t n = ws_utf8_sequence(p), put = n ? n : 3;
        if (o + put + 1 > len)
            break;
        memcpy(out + o, n ? (const char *)p : "\xEF\xBF\xBD", put);
        o += put;
        p += n ? n : 1;
    }
    out[o] = '\0';
}
