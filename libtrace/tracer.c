/*
 * libwstrace.so start-up, configuration, spool management, fork/exec handling and the
 * collection of the spool into SQLite when the process exits.
 */
#include "tracer.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector.h"
#include "identity.h"
#include "version.h"

WS_TLS struct ws_thread ws_self;
int ws_enabled;

static struct {
    int fd;
    struct ws_spool_header *hdr;
    char output[PATH_MAX + 64];
    char spool[PATH_MAX + 128];
    char base_output[PATH_MAX]; /* WSTRACE_OUTPUT as configured; children derive theirs from it */
    uint64_t max_chunks;
    uint64_t generation;
    int collect_at_exit;
    int keep_spool;
    int started;
    int stopped;
    pthread_key_t thread_key;
} g = {.fd = -1};

static void warn_line(const char *fmt, const char *a, const char *b)
{
    /* One line per problem, never more, from inside someone else's process. */
    char line[PATH_MAX * 3];
    int n = snprintf(line, sizeof line, "wstrace: ");
    n += snprintf(line + n, sizeof line - (size_t)n, fmt, a ? a : "", b ? b : "");
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
}

void ws_count_lost(uint64_t n)
{
    if (g.hdr)
        __atomic_fetch_add(&g.hdr->lost_records, n, __ATOMIC_RELAXED);
}

void ws_count_truncated(void)
{
    if (g.hdr)
        __atomic_fetch_add(&g.hdr->truncated_strings, 1, __ATOMIC_RELAXED);
}

static void thread_exit(void *unused)
{
    (void)unused;
    /* The records stay in the file; only the mapping goes. */
    if (ws_self.chunk) {
        munmap(ws_self.chunk, WS_CHUNK_BYTES);
        ws_self.chunk = NULL;
    }
}

int ws_spool_next_chunk(struct ws_thread *t)
{
    if (!__atomic_load_n(&ws_enabled, __ATOMIC_ACQUIRE) || !g.hdr)
        return -1;
    if (t->chunk && t->generation == g.generation)
        munmap(t->chunk, WS_CHUNK_BYTES);
    t->chunk = NULL;
    if (t->generation != g.generation || t->serial == 0) {
        t->serial = __atomic_add_fetch(&g.hdr->next_thread, 1, __ATOMIC_RELAXED);
        t->seq = 0;
        t->generation = g.generation;
        pthread_setspecific(g.thread_key, (void *)1);
    }
    uint64_t idx = __atomic_fetch_add(&g.hdr->next_chunk, 1, __ATOMIC_RELAXED);
    if (idx >= g.max_chunks)
        return -1;
    off_t off = (off_t)(WS_SPOOL_HEADER_BYTES + idx * (uint64_t)WS_CHUNK_BYTES);
    /* Extend the (sparse) file without ever shrinking it, whatever other threads do. */
    if (pwrite(g.fd, "", 1, off + WS_CHUNK_BYTES - 1) != 1)
        return -1;
    void *p = mmap(NULL, WS_CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, g.fd, off);
    if (p == MAP_FAILED)
        return -1;
    struct ws_chunk_header *c = p;
    c->thread_serial = t->serial;
    c->os_tid = (uint64_t)syscall(SYS_gettid);
    c->seq = t->seq++;
    c->image = __atomic_load_n(&g.hdr->images, __ATOMIC_RELAXED);
    __atomic_store_n(&c->magic, WS_CHUNK_MAGIC, __ATOMIC_RELEASE);
    t->chunk = c;
    t->recs = (struct ws_rec *)(c + 1);
    t->used = 0;
    return 0;
}

struct ws_rec *ws_rec_string(uint8_t type, const char *s, size_t len, uint32_t *nrecs)
{
    if (len > WS_MAX_STRING) {
        len = WS_MAX_STRING;
        ws_count_truncated();
    }
    uint32_t n = 1 + ws_string_recs(len);
    struct ws_rec *r = ws_rec_reserve(n);
    if (!r)
        return NULL;
    memset(r, 0, sizeof *r);
    r->type = type;
    r->ext = (uint16_t)(n - 1);
    r->ns = ws_now();
    r->u[1] = len;
    memcpy(r + 1, s, len);
    *nrecs = n;
    return r;
}

/* ---- configuration ---------------------------------------------------------------- */

static int parse_bytes(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || s[0] == '-')
        return -1;
    uint64_t mult = 1;
    if (*end) {
        switch (*end) {
        case 'K':
        case 'k': mult = 1ull << 10; break;
        case 'M':
        case 'm': mult = 1ull << 20; break;
        case 'G':
        case 'g': mult = 1ull << 30; break;
        default: return -1;
        }
        end++;
        if (*end == 'i' || *end == 'I')
            end++;
        if (*end == 'B' || *end == 'b')
            end++;
        if (*end)
            return -1;
    }
    if (__builtin_mul_overflow((uint64_t)v, mult, out))
        return -1;
    return 0;
}

static int env_flag(const char *name, int dflt, int *out)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        *out = dflt;
        return 0;
    }
    if (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true")) {
        *out = 1;
        return 0;
    }
    if (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "false")) {
        *out = 0;
        return 0;
    }
    warn_line("%s must be 0 or 1 (got '%s'); tracing is off for this process", name, v);
    return -1;
}

static int read_config(void)
{
    int disable = 0;
    if (env_flag("WSTRACE_DISABLE", 0, &disable) != 0 || disable)
        return -1;
    if (env_flag("WSTRACE_COLLECT", 1, &g.collect_at_exit) != 0 ||
        env_flag("WSTRACE_KEEP_SPOOL", 0, &g.keep_spool) != 0)
        return -1;
    uint64_t max_bytes = 8ull << 30;
    const char *m = getenv("WSTRACE_SPOOL_MAX");
    if (m && *m && (parse_bytes(m, &max_bytes) != 0 || max_bytes < WS_CHUNK_BYTES)) {
        warn_line("WSTRACE_SPOOL_MAX '%s' is not a size of at least 256K; tracing is off for this process%s", m, "");
        return -1;
    }
    g.max_chunks = max_bytes / WS_CHUNK_BYTES;
    const char *out = getenv("WSTRACE_OUTPUT");
    if (!out || !*out)
        out = "wstrace.db";
    /* A pattern names the rank's (or the pid's) own trace: see "Processes" in the README. */
    char named[PATH_MAX], bad;
    if (ws_expand_output_name(out, (long)getpid(), named, sizeof named, &bad) != 0) {
        warn_line("WSTRACE_OUTPUT '%s' is not a usable name (%s); tracing is off for this process", out,
                  bad ? "use %r, %l, %h, %p or %%" : "too long or a trailing %");
        return -1;
    }
    out = named;
    /* Absolute, so that the trace lands where asked even after the program changes folder. */
    char cwd[PATH_MAX] = "";
    if (out[0] != '/' && !getcwd(cwd, sizeof cwd)) {
        warn_line("cannot resolve WSTRACE_OUTPUT '%s': %s; tracing is off for this process", out, strerror(errno));
        return -1;
    }
    if (strlen(cwd) + strlen(out) + 34 >= sizeof g.base_output) {
        warn_line("WSTRACE_OUTPUT is too long; tracing is off for this process%s%s", NULL, NULL);
        return -1;
    }
    size_t n = strlen(cwd);
    memcpy(g.base_output, cwd, n);
    if (n)
        g.base_output[n++] = '/';
    memcpy(g.base_output + n, out, strlen(out) + 1); /* lengths checked above */
    return 0;
}

/* ---- spool files -------------------------------------------------------------------- */

static void read_cmdline(char *buf, size_t len)
{
    buf[0] = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0)
        return;
    while (n > 0 && buf[n - 1] == 0)
        n--;
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == 0)
            buf[i] = ' ';
    buf[n] = 0;
}

static int map_header(int fd)
{
    void *p = mmap(NULL, WS_SPOOL_HEADER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return -1;
    g.hdr = p;
    g.fd = fd;
    return 0;
}

/* Open the spool of this very process when an earlier image of it (before exec) made one. */
static int attach_spool(const char *spool)
{
    int fd = open(spool, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct ws_spool_header h;
    if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h || memcmp(h.magic, WS_SPOOL_MAGIC, 8) != 0 ||
        h.version != WS_SPOOL_VERSION || h.pid != (uint64_t)getpid() || h.end_ns != 0 || map_header(fd) != 0) {
        close(fd);
        return -1;
    }
    __atomic_add_fetch(&g.hdr->images, 1, __ATOMIC_RELAXED);
    return 0;
}

static int create_spool(const char *spool, const char *output)
{
    int fd = open(spool, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    struct ws_spool_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, WS_SPOOL_MAGIC, 8);
    h.version = WS_SPOOL_VERSION;
    h.header_bytes = WS_SPOOL_HEADER_BYTES;
    h.chunk_bytes = WS_CHUNK_BYTES;
    h.rec_bytes = WS_REC_BYTES;
    h.pid = (uint64_t)getpid();
    h.ppid = (uint64_t)getppid();
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    h.start_realtime_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
    h.start_ns = ws_now();
    snprintf(h.backend, sizeof h.backend, "runtime-interposition");
    size_t olen = strnlen(output, sizeof h.output - 1); /* informational; truncation is harmless */
    memcpy(h.output, output, olen);
    snprintf(h.tool_version, sizeof h.tool_version, "%s", WSTRACE_VERSION);
    if (pwrite(fd, &h, sizeof h, 0) != (ssize_t)sizeof h || map_header(fd) != 0) {
        close(fd);
        unlink(spool);
        return -1;
    }
    return 0;
}

/* The pid that wrote an existing spool, 0 when there is none (or it is not a spool). */
static pid_t spool_writer(const char *spool, int *finished)
{
    int fd = open(spool, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct ws_spool_header h;
    int valid = pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h && memcmp(h.magic, WS_SPOOL_MAGIC, 8) == 0;
    close(fd);
    *finished = valid && h.end_ns != 0;
    return valid ? (pid_t)h.pid : 0;
}

/* Another live process traces into this spool: it is our parent (fork+exec) or a sibling. */
static int spool_owned_by_other(const char *spool)
{
    int finished;
    pid_t pid = spool_writer(spool, &finished);
    return pid && pid != getpid() && !finished && kill(pid, 0) == 0;
}

/* A spool left by a process that is gone holds records nobody converted: move it to
 * OUTPUT.<pid>.spool, where 'wstrace collect' finds it, instead of overwriting it. */
static void keep_stale_spool(const char *spool)
{
    int finished;
    pid_t pid = spool_writer(spool, &finished);
    if (!pid || pid == getpid() || (!finished && kill(pid, 0) == 0))
        return;
    char aside[PATH_MAX + 256];
    snprintf(aside, sizeof aside, "%s.%ld.spool", g.output, (long)pid);
    if (access(aside, F_OK) != 0 && rename(spool, aside) == 0)
        warn_line("an earlier process left its spool unconverted; it is kept as %s (run 'wstrace collect %s')", aside,
                  aside);
}

static void set_paths(const char *output)
{
    snprintf(g.output, sizeof g.output, "%s", output);
    snprintf(g.spool, sizeof g.spool, "%s.spool", output);
}

/* Choose this process's output and open its spool; see "Processes" in the README. */
static int open_spool(void)
{
    char own[PATH_MAX + 64];
    snprintf(own, sizeof own, "%s.%ld", g.base_output, (long)getpid());
    set_paths(own);
    if (attach_spool(g.spool) == 0)
        return 0;
    set_paths(g.base_output);
    if (attach_spool(g.spool) == 0)
        return 0;
    if (spool_owned_by_other(g.spool))
        set_paths(own);
    keep_stale_spool(g.spool);
    if (create_spool(g.spool, g.output) == 0)
        return 0;
    warn_line("cannot write the trace spool %s: %s; the program runs untraced", g.spool, strerror(errno));
    return -1;
}

static void record_image(void)
{
    char cmdline[WS_MAX_STRING];
    read_cmdline(cmdline, sizeof cmdline);
    uint32_t n;
    struct ws_rec *r = ws_rec_with_string(WS_REC_IMAGE, cmdline, &n);
    if (r) {
        r->u[0] = __atomic_load_n(&g.hdr->images, __ATOMIC_RELAXED);
        ws_rec_commit(n);
    }
}

static const char *own_path(void)
{
    Dl_info info;
    if (dladdr((void *)&ws_tracer_start, &info) && info.dli_fname && info.dli_fname[0] == '/')
        return info.dli_fname;
    return NULL;
}

/* The forked child traces into FILE.<pid>; nothing it does may touch the parent's spool. */
static void after_fork_child(void)
{
    if (!ws_enabled)
        return;
    if (ws_self.chunk)
        munmap(ws_self.chunk, WS_CHUNK_BYTES);
    ws_self.chunk = NULL;
    ws_self.serial = 0;
    ws_forget_named_functions();
    munmap(g.hdr, WS_SPOOL_HEADER_BYTES);
    close(g.fd);
    g.hdr = NULL;
    g.fd = -1;
    g.generation++;
    char own[PATH_MAX + 64];
    snprintf(own, sizeof own, "%s.%ld", g.base_output, (long)getpid());
    set_paths(own);
    if (create_spool(g.spool, g.output) != 0) {
        warn_line("cannot write the trace spool %s: %s; the child runs untraced", g.spool, strerror(errno));
        __atomic_store_n(&ws_enabled, 0, __ATOMIC_RELEASE);
        return;
    }
    record_image();
}

void ws_tracer_start(void)
{
    if (g.started)
        return;
    g.started = 1;
    int saved = errno;
    if (read_config() != 0 || pthread_key_create(&g.thread_key, thread_exit) != 0 || open_spool() != 0) {
        errno = saved;
        return;
    }
    const char *self = own_path();
    if (self && !getenv("NVTX_INJECTION64_PATH"))
        setenv("NVTX_INJECTION64_PATH", self, 0);
    pthread_atfork(NULL, NULL, after_fork_child);
    __atomic_store_n(&ws_enabled, 1, __ATOMIC_RELEASE);
    record_image();
    errno = saved;
}

void ws_tracer_stop(void)
{
    if (!g.started || g.stopped || !ws_enabled || !g.hdr)
        return;
    g.stopped = 1;
    int saved = errno;
    ws_self.in_hook++; /* nothing the collector does is traced */
    __atomic_store_n(&g.hdr->end_ns, ws_now(), __ATOMIC_RELEASE);
    if (g.collect_at_exit) {
        char err[1024];
        struct ws_collect_stats stats;
        if (ws_collect_spool(g.spool, g.output, &stats, err, sizeof err) != 0)
            warn_line("%s; the spool is kept: run 'wstrace collect %s'", err, g.spool);
        else if (!g.keep_spool)
            unlink(g.spool);
    }
    ws_self.in_hook--;
    errno = saved;
}

__attribute__((constructor)) static void wstrace_constructor(void) { ws_tracer_start(); }
__attribute__((destructor)) static void wstrace_destructor(void) { ws_tracer_stop(); }
