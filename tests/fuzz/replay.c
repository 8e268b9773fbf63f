/* Runs a libFuzzer harness once on every file of the folders (or files) it is given: the seed
 * corpus becomes a regression test in builds without libFuzzer.  Exit 0 when every input ran,
 * 2 when a path could not be read; a crash is the harness's own (a sanitizer report). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            uint8_t *bigger = realloc(buf, cap *= 2);
            if (!bigger)
                free(buf);
            buf = bigger;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "replay: %s: out of memory\n", path);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int status = 0, inputs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: no such file or folder: %s\n", argv[i]);
            status = 2;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            status = run_file(argv[i]) ? 2 : status;
            inputs++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            status = run_file(path) ? 2 : status;
            inputs++;
        }
        if (d)
            closedir(d);
    }
    if (inputs == 0) {
        fprintf(stderr, "replay: no input\n");
        status = 2;
    }
    printf("replay: %d inputs\n", inputs);
    return status;
}
