/* What the harnesses share: the parsers under test read files, so each input goes to a file of
 * its own in a private temporary folder (under TMPDIR, else /dev/shm, else /tmp). */
#ifndef WS_FUZZ_UTIL_H
#define WS_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The private folder, made on first use (never removed: libFuzzer ends with exit()). */
static inline const char *fuzz_dir(void)
{
    static char dir[512];
    if (!dir[0]) {
        const char *base = getenv("TMPDIR");
        if (!base || !*base)
            base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(dir, sizeof dir, "%s/wstrace-fuzz-XXXXXX", base);
        if (!mkdtemp(dir)) {
            perror("fuzz: mkdtemp");
            abort();
        }
    }
    return dir;
}

/* path of name inside the folder */
static inline void fuzz_path(char *path, size_t len, const char *name)
{
    snprintf(path, len, "%s/%s", fuzz_dir(), name);
}

/* Write size bytes to the file name; its path goes to path. */
static inline void fuzz_write(char *path, size_t len, const char *name, const uint8_t *data, size_t size)
{
    fuzz_path(path, len, name);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror("fuzz: write");
        abort();
    }
}

#endif
