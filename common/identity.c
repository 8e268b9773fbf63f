#include "identity.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long first_number(const char *const *names)
{
    for (; *names; names++) {
        const char *v = getenv(*names);
        if (!v || !*v)
            continue;
        char *end;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno == 0 && *end == '\0' && n >= 0)
            return n;
    }
    return -1;
}

long ws_env_rank(void)
{
    static const char *const names[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", NULL};
    return first_number(names);
}

long ws_env_local_rank(void)
{
    static const char *const names[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                                        NULL};
    return first_number(names);
}

long ws_env_world_size(void)
{
    static const char *const names[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", NULL};
    return first_number(names);
}

void ws_host_name(char *out, size_t len)
{
    if (len == 0)
        return;
    if (gethostname(out, len) != 0)
        out[0] = 0;
    out[len - 1] = 0;
}

void ws_boot_id(char *out, size_t len)
{
    if (len == 0)
        return;
    out[0] = 0;
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, len - 1);
    close(fd);
    if (n <= 0) {
        out[0] = 0;
        return;
    }
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' '))
        n--;
    out[n] = 0;
}

static int put(char *out, size_t len, size_t *n, const char *s)
{
    size_t k = strlen(s);
    if (*n + k >= len)
        return -1;
    memcpy(out + *n, s, k);
    *n += k;
    return 0;
}

static void rank_text(long rank, long pid, char *buf, size_t len)
{
    if (rank >= 0)
        snprintf(buf, len, "%ld", rank);
    else
        snprintf(buf, len, "pid%ld", pid);
}

int ws_expand_output_name(const char *pattern, long pid, char *out, size_t len, char *bad)
{
    size_t n = 0;
    char buf[256];
    *bad = 0;
    for (const char *p = pattern; *p; p++) {
        if (*p != '%') {
            if (n + 1 >= len)
                return -1;
            out[n++] = *p;
            continue;
        }
        p++;
        switch (*p) {
        case '%': snprintf(buf, sizeof buf, "%%"); break;
        case 'p': snprintf(buf, sizeof buf, "%ld", pid); break;
        case 'r': rank_text(ws_env_rank(), pid, buf, sizeof buf); break;
        case 'l': rank_text(ws_env_local_rank(), pid, buf, sizeof buf); break;
        case 'h':
            ws_host_name(buf, sizeof buf);
            if (!buf[0])
                snprintf(buf, sizeof buf, "unknown-host");
            for (char *c = buf; *c; c++)
                if (*c == '/')
                    *c = '_';
            break;
        default: *bad = *p; return -1;
        }
        if (put(out, len, &n, buf) != 0)
            return -1;
    }
    if (n >= len)
        return -1;
    out[n] = 0;
    return 0;
}
