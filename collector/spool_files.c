#include "spool_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t ws_proc_start_ticks(long pid, char *state)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    /* "pid (comm) S ppid ...": comm may hold blanks and parentheses, so start after the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ' || !p[2])
        return 0;
    p += 2;
    if (state)
        *state = *p;
    for (int field = 3; field < 22; field++) {
        p = strchr(p, ' ');
        if (!p)
            return 0;
        p++;
    }
    return strtoull(p, NULL, 10);
}

int ws_process_alive(uint64_t pid, uint64_t start_ticks)
{
    if (pid == 0 || pid > (uint64_t)INT_MAX)
        return 0;
    char state = 0;
    uint64_t ticks = ws_proc_start_ticks((long)pid, &state);
    if (ticks != 0)
        return state != 'Z' && state != 'X' && (start_ticks == 0 || ticks == start_ticks);
    if (access("/proc/self/stat", R_OK) == 0)
        return 0; /* /proc is there and knows no such process */
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

static int valid_header(const struct ws_spool_header *h)
{
    return memcmp(h->magic, WS_SPOOL_MAGIC, 8) == 0 && h->header_bytes == WS_SPOOL_HEADER_BYTES;
}

enum ws_spool_use ws_spool_probe(const char *path, int *fd_out, struct ws_spool_header *h)
{
    *fd_out = -1;
    memset(h, 0, sizeof *h);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? WS_SPOOL_ABSENT : WS_SPOOL_OTHER;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return WS_SPOOL_OTHER;
    }
    int locked = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    int is_spool = pread(fd, h, sizeof *h, 0) == (ssize_t)sizeof *h && valid_header(h);
    if (locked) {
        close(fd);
        return WS_SPOOL_LOCKED; /* also a spool being created: its header may not be there yet */
    }
    if (!is_spool) {
        close(fd);
        return WS_SPOOL_OTHER;
    }
    if (ws_process_alive(h->pid, h->start_ticks)) {
        close(fd);
        return WS_SPOOL_ALIVE;
    }
    *fd_out = fd;
    return WS_SPOOL_STALE;
}

/* The path still names the file open as fd (only holders of its lock rename or remove it). */
static int still_there(const char *path, int fd)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* rename without replacing: renameat2 where the file system has it, else link + unlink. */
static int rename_noreplace(const char *from, const char *to)
{
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
    if (link(from, to) != 0)
        return -1;
    return unlink(from);
}

int ws_spool_move_aside(const char *path, int fd, const char *output, uint64_t pid, char *moved, size_t len)
{
    if (!still_there(path, fd)) {
        errno = ESTALE;
        return -1;
    }
    for (int k = 0; k < 100; k++) {
        int n = k ? snprintf(moved, len, "%s.%llu.%d.spool", output, (unsigned long long)pid, k)
                  : snprintf(moved, len, "%s.%llu.spool", output, (unsigned long long)pid);
        if (n < 0 || (size_t)n >= len) {
            errno = ENAMETOOLONG;
            return -1;
        }
        if (rename_noreplace(path, moved) == 0)
            return 0;
        if (errno != EEXIST)
            return -1;
    }
    errno = EEXIST;
    return -1;
}

int ws_spool_remove_stale(const char *path, int fd)
{
    if (!still_there(path, fd)) {
        errno = ESTALE;
        return -1;
    }
    return unlink(path);
}

int ws_temp_create(const char *trace, char *tmp, size_t len, int *fd_out)
{
    for (int k = 0; k < 100; k++) {
        int n = k ? snprintf(tmp, len, "%s.tmp.%ld.%d", trace, (long)getpid(), k)
                  : snprintf(tmp, len, "%s.tmp.%ld", trace, (long)getpid());
        if (n < 0 || (size_t)n >= len) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0) {
            flock(fd, LOCK_EX | LOCK_NB); /* a fresh file: nobody else can hold it */
            *fd_out = fd;
            return 0;
        }
        if (errno != EEXIST)
            return -1;
    }
    errno = EEXIST;
    return -1;
}

/* "<base>.tmp.<pid>" or "<base>.tmp.<pid>.<k>": the pid, else 0. */
static long temp_writer(const char *name, const char *base, size_t blen)
{
    if (strncmp(name, base, blen) != 0 || strncmp(name + blen, ".tmp.", 5) != 0)
        return 0;
    const char *p = name + blen + 5;
    char *end;
    long pid = strtol(p, &end, 10);
    if (end == p || pid <= 0)
        return 0;
    if (*end == '.') {
        const char *k = end + 1;
        strtol(k, &end, 10);
        if (end == k)
            return 0;
    }
    return *end ? 0 : pid;
}

int ws_temp_remove_stale(const char *trace)
{
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s", trace) >= (int)sizeof dir)
        return 0;
    char *slash = strrchr(dir, '/');
    const char *base = trace;
    if (slash) {
        *slash = 0;
        base = trace + (slash - dir) + 1;
    } else {
        snprintf(dir, sizeof dir, ".");
    }
    size_t blen = strlen(base);
    DIR *d = opendir(slash && !dir[0] ? "/" : dir);
    if (!d)
        return 0;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid = temp_writer(e->d_name, base, blen);
        if (pid == 0 || ws_process_alive((uint64_t)pid, 0))
            continue;
        char path[PATH_MAX + 256];
        if (snprintf(path, sizeof path, "%s/%s", slash && !dir[0] ? "" : dir, e->d_name) >= (int)sizeof path)
            continue;
        int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
            continue;
        struct stat st;
        /* Locked: a writer we cannot see (another pid namespace) is still at it. */
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0 && still_there(path, fd) &&
            unlink(path) == 0)
            removed++;
        close(fd);
    }
    closedir(d);
    return removed;
}

void ws_scan_pid_files(const char *trace, const char *suffix, ws_pid_file_fn fn, void *ctx)
{
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s", trace) >= (int)sizeof dir)
        return;
    char *slash = strrchr(dir, '/');
    if (!slash)
        return;
    *slash = 0;
    const char *base = slash + 1;
    size_t blen = strlen(base);
    DIR *d = opendir(dir[0] ? dir : "/");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        char *end;
        if (strncmp(name, base, blen) != 0 || name[blen] != '.')
            continue;
        long pid = strtol(name + blen + 1, &end, 10);
        if (end == name + blen + 1 || strcmp(end, suffix) != 0 || pid <= 0)
            continue;
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s.%ld%s", trace, pid, suffix);
        fn(ctx, pid, path);
    }
    closedir(d);
}

struct dead_scan {
    const char *trace;
    ws_dead_spool_fn fn;
    void *ctx;
};

static void if_dead(void *ctx, long pid, const char *spool)
{
    const struct dead_scan *ds = ctx;
    if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
        return; /* the caller's own, or its process still runs and converts it itself */
    char child[PATH_MAX + 32];
    snprintf(child, sizeof child, "%s.%ld", ds->trace, pid);
    ds->fn(ds->ctx, pid, child, spool);
}

void ws_spool_scan_dead(const char *trace, ws_dead_spool_fn fn, void *ctx)
{
    struct dead_scan ds = {trace, fn, ctx};
    ws_scan_pid_files(trace, ".spool", if_dead, &ds);
}
