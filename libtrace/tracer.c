/*
 * libwstrace.so start-up, configuration, the choice of output, spool management (the slow path
 * of the record buffer), fork/exec/exit handling and the collection of the spool into SQLite when
 * the process exits.  Which process writes which file: README "Processes, threads, crashes";
 * how processes agree on it: collector/spool_files.h.
 */
#include "tracer.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "blind_spots.h"
#include "collector.h"
#include "identity.h"
#include "spool_files.h"
#include "version.h"

WS_TLS struct ws_thread ws_self;
int ws_enabled;
int ws_clock_tsc;

/* Why records were lost; the first cause is named at exit. */
enum loss { LOSS_NONE, LOSS_LIMIT, LOSS_FSIZE, LOSS_SPACE, LOSS_MAP };

/* Once space has run out, a chunk is asked for again only every RETRY_LOST lost records: a full
 * disk then costs each record an atomic load, not a system call. */
#define RETRY_LOST 4096u

/* Set for the processes a traced process starts: "PID:OUTPUT" of the process that owns OUTPUT. */
#define OWNER_VAR "WSTRACE_OWNER"

typedef void (*exit_fn)(int) __attribute__((noreturn));

static struct {
    int fd;
    struct ws_spool_header *hdr; /* atomic: NULL until a forked child records its first event */
    char output[PATH_MAX + 64];
    char spool[PATH_MAX + 128];
    char base_output[PATH_MAX]; /* WSTRACE_OUTPUT as configured; other processes derive theirs from it */
    uint64_t max_bytes, max_chunks;
    uint64_t generation;
    uint64_t start_ticks; /* this process's start time: tells an exec'd image of it from a reused pid */
    pid_t owner;          /* the process the spool belongs to; a vfork child never touches it */
    int collect_at_exit;
    int keep_spool;
    int started;
    int stopped; /* atomic */
    int lazy;    /* a forked child: its spool is created with its first record */
    pthread_mutex_t lazy_lock;
    int loss;          /* atomic: enum loss of the first record lost */
    int loss_errno;    /* atomic */
    uint64_t retry_at; /* atomic: lost_records at which space is asked for again; 0 when none ran out */
    exit_fn real_exit, real_Exit;
    pthread_key_t thread_key;
} g = {.fd = -1, .lazy_lock = PTHREAD_MUTEX_INITIALIZER};

/* One line per problem, never more, from inside someone else's process: control characters of
 * the paths it names are shown as '?', so a line stays one line. */
__attribute__((format(printf, 1, 2))) static void warn(const char *fmt, ...)
{
    char line[PATH_MAX * 3];
    int n = snprintf(line, sizeof line, "wstrace: ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    if (m > 0)
        n += m;
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    for (int i = 0; i < n; i++)
        if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
            line[i] = '?';
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
}

static inline struct ws_spool_header *header(void) { return __atomic_load_n(&g.hdr, __ATOMIC_ACQUIRE); }

void ws_count_lost(uint64_t n)
{
    struct ws_spool_header *h = header();
    if (h)
        __atomic_fetch_add(&h->lost_records, n, __ATOMIC_RELAXED);
}

void ws_count_truncated(void)
{
    struct ws_spool_header *h = header();
    if (h)
        __atomic_fetch_add(&h->truncated_strings, 1, __ATOMIC_RELAXED);
}

static void note_loss(int cause, int err)
{
    int none = LOSS_NONE;
    if (__atomic_compare_exchange_n(&g.loss, &none, cause, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        __atomic_store_n(&g.loss_errno, err, __ATOMIC_RELAXED);
}

static void thread_exit(void *unused)
{
    (void)unused;
    /* The records stay in the file; only the mapping goes. */
    if (ws_self.chunk) {
        munmap(ws_self.chunk, WS_CHUNK_BYTES);
        ws_self.chunk = NULL;
        ws_self.next = ws_self.end = ws_self.fast_end = NULL;
    }
}

/* A file may not grow past RLIMIT_FSIZE: trying raises SIGXFSZ, which would kill the program. */
static int beyond_fsize_limit(uint64_t end)
{
    struct rlimit rl;
    return getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && end > (uint64_t)rl.rlim_cur;
}

/* Disk space for a whole chunk, secured before any record is written into it: writing into a
 * page of a mapped file that the file system cannot back raises SIGBUS in the writer, which is the
 * traced program.  0, or an errno value. */
static int secure_space(uint64_t off)
{
    int e;
    for (int attempt = 0; attempt < 4; attempt++)
        if ((e = posix_fallocate(g.fd, (off_t)off, WS_CHUNK_BYTES)) != EINTR)
            return e;
    return e;
}

/* ---- the records' clock -------------------------------------------------------------- */

/* The counter and CLOCK_MONOTONIC at one moment: the counter's value halfway through the clock
 * read. */
static void calibration_pair(uint64_t *tsc, uint64_t *ns)
{
    uint64_t a = ws_tsc();
    *ns = ws_monotonic_ns();
    uint64_t b = ws_tsc();
    *tsc = a + (b - a) / 2;
}

/* The time-stamp counter times records when it runs at a constant rate in every power state
 * (CPUID: invariant TSC) and the kernel keeps CLOCK_MONOTONIC with it (clocksource tsc, which the
 * kernel chooses only when the counters of all processors agree); else clock_gettime does. */
static int tsc_usable(void)
{
#if defined(__x86_64__)
    uint32_t a, b, c, d;
    __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0));
    if (a < 0x80000007u)
        return 0;
    __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007u), "c"(0));
    if (!(d & (1u << 8)))
        return 0;
    char source[32] = "";
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, source, sizeof source - 1);
    close(fd);
    return n >= 3 && memcmp(source, "tsc", 3) == 0 && (n == 3 || source[3] == '\n');
#else
    return 0;
#endif
}

/* WSTRACE_CLOCK: "monotonic" keeps clock_gettime; unset, empty or "auto" takes the counter where
 * tsc_usable() says so.  -1 on a value it does not know. */
static int choose_clock(void)
{
    const char *v = getenv("WSTRACE_CLOCK");
    if (v && *v && strcmp(v, "auto") != 0 && strcmp(v, "monotonic") != 0) {
        warn("WSTRACE_CLOCK must be auto or monotonic (got '%s'); tracing is off for this process", v);
        return -1;
    }
    ws_clock_tsc = !(v && strcmp(v, "monotonic") == 0) && tsc_usable();
    return 0;
}

static int create_child_spool(int *created);
static void record_image(void);

int ws_spool_next_chunk(struct ws_thread *t)
{
    if (!__atomic_load_n(&ws_enabled, __ATOMIC_ACQUIRE))
        return -1;
    struct ws_spool_header *h = header();
    int created = 0;
    if (!h) {
        if (__atomic_load_n(&g.lazy, __ATOMIC_ACQUIRE) && create_child_spool(&created) != 0)
            return -1;
        if (!(h = header()))
            return -1;
    }
    if (t->chunk && t->generation == g.generation)
        munmap(t->chunk, WS_CHUNK_BYTES);
    t->chunk = NULL;
    t->next = t->end = t->fast_end = NULL;
    if (t->generation != g.generation || t->serial == 0) {
        t->serial = __atomic_add_fetch(&h->next_thread, 1, __ATOMIC_RELAXED);
        t->seq = 0;
        t->generation = g.generation;
        pthread_setspecific(g.thread_key, (void *)1);
    }
    uint64_t retry_at = __atomic_load_n(&g.retry_at, __ATOMIC_RELAXED);
    if (retry_at && __atomic_load_n(&h->lost_records, __ATOMIC_RELAXED) < retry_at)
        return -1;
    uint64_t idx = __atomic_fetch_add(&h->next_chunk, 1, __ATOMIC_RELAXED);
    if (idx >= g.max_chunks) {
        note_loss(LOSS_LIMIT, 0);
        return -1;
    }
    uint64_t off = WS_SPOOL_HEADER_BYTES + idx * (uint64_t)WS_CHUNK_BYTES;
    if (beyond_fsize_limit(off + WS_CHUNK_BYTES)) {
        note_loss(LOSS_FSIZE, EFBIG);
        return -1;
    }
    int e = secure_space(off);
    if (e != 0) {
        note_loss(LOSS_SPACE, e);
        __atomic_store_n(&g.retry_at, __atomic_load_n(&h->lost_records, __ATOMIC_RELAXED) + RETRY_LOST,
                         __ATOMIC_RELAXED);
        return -1;
    }
    if (retry_at)
        __atomic_store_n(&g.retry_at, 0, __ATOMIC_RELAXED);
    void *p = mmap(NULL, WS_CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, g.fd, (off_t)off);
    if (p == MAP_FAILED) {
        note_loss(LOSS_MAP, errno);
        return -1;
    }
    struct ws_chunk_header *c = p;
    c->thread_serial = t->serial;
    c->os_tid = (uint64_t)syscall(SYS_gettid);
    c->seq = t->seq++;
    c->image = __atomic_load_n(&h->images, __ATOMIC_RELAXED);
    if (ws_clock_tsc)
        calibration_pair(&c->cal_tsc, &c->cal_ns);
    __atomic_store_n(&c->magic, WS_CHUNK_MAGIC, __ATOMIC_RELEASE);
    t->chunk = c;
    t->next = (struct ws_rec *)(c + 1);
    t->end = t->next + WS_CHUNK_RECS;
    t->fast_end = ws_clock_tsc ? t->end : NULL;
    if (created)
        record_image(); /* the first record of a forked child's own spool */
    return 0;
}

/* Longest prefix of s (len bytes) of at most max bytes that does not end inside a UTF-8
 * sequence; bytes that are not UTF-8 are cut anywhere. */
static size_t utf8_prefix(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    size_t k = max;
    while (k > 0 && max - k < 3 && ((unsigned char)s[k] & 0xC0) == 0x80)
        k--;
    unsigned lead = (unsigned char)s[k];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    return lead >= 0xC0 && k + need > max ? k : max;
}

struct ws_rec *ws_rec_string(uint8_t type, const char *s, size_t len, uint32_t *nrecs)
{
    if (len > WS_MAX_STRING) {
        len = utf8_prefix(s, len, WS_MAX_STRING);
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
    warn("%s must be 0 or 1 (got '%s'); tracing is off for this process", name, v);
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
        warn("WSTRACE_SPOOL_MAX '%s' is not a size of at least 256K; tracing is off for this process", m);
        return -1;
    }
    g.max_bytes = max_bytes;
    g.max_chunks = max_bytes / WS_CHUNK_BYTES;
    const char *out = getenv("WSTRACE_OUTPUT");
    if (!out || !*out)
        out = "wstrace.db";
    /* A pattern names the rank's (or the pid's) own trace: see "Processes" in the README. */
    char named[PATH_MAX], bad;
    if (ws_expand_output_name(out, (long)getpid(), named, sizeof named, &bad) != 0) {
        warn("WSTRACE_OUTPUT '%s' is not a usable name (%s); tracing is off for this process", out,
             bad ? "use %r, %l, %h, %p or %%" : "too long or a trailing %");
        return -1;
    }
    out = named;
    /* Absolute, so that the trace lands where asked even after the program changes folder. */
    char cwd[PATH_MAX] = "";
    if (out[0] != '/' && !getcwd(cwd, sizeof cwd)) {
        warn("cannot resolve WSTRACE_OUTPUT '%s': %s; tracing is off for this process", out, strerror(errno));
        return -1;
    }
    if (strlen(cwd) + strlen(out) + 34 >= sizeof g.base_output) {
        warn("WSTRACE_OUTPUT is too long; tracing is off for this process");
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
    g.fd = fd;
    __atomic_store_n(&g.hdr, (struct ws_spool_header *)p, __ATOMIC_RELEASE);
    return 0;
}

static void set_paths(const char *output)
{
    snprintf(g.output, sizeof g.output, "%s", output);
    snprintf(g.spool, sizeof g.spool, "%s.spool", output);
}

/* The lock of a spool this process already writes, dropped by exec: a process looking at the
 * spool (ws_spool_probe) holds it for a moment at most. */
static int take_lock(int fd)
{
    for (int i = 0; i < 200; i++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK)
            return 0; /* taken, or a file system without locks */
        struct timespec pause = {0, 100 * 1000};
        nanosleep(&pause, NULL);
    }
    return -1;
}

/* An image started by exec goes on with the spool of output that its process already writes:
 * same pid, same process start time, not finished. */
static int attach_spool(const char *output)
{
    char spool[PATH_MAX + 128];
    snprintf(spool, sizeof spool, "%s.spool", output);
    int fd = open(spool, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    struct ws_spool_header h;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h ||
        memcmp(h.magic, WS_SPOOL_MAGIC, 8) != 0 || h.version != WS_SPOOL_VERSION || h.pid != (uint64_t)getpid() ||
        (h.start_ticks && g.start_ticks && h.start_ticks != g.start_ticks) || h.end_ns != 0 || take_lock(fd) != 0 ||
        map_header(fd) != 0) {
        close(fd);
        return -1;
    }
    __atomic_add_fetch(&g.hdr->images, 1, __ATOMIC_RELAXED);
    ws_clock_tsc = h.clock == WS_CLOCK_TSC; /* the spool's clock, whatever this image would choose */
    set_paths(output);
    return 0;
}

/* Create spool exclusively (never through a link) and lock it.  0, or -1 with errno set: EEXIST
 * when the name is taken. */
static int create_spool(const char *spool, const char *output)
{
    if (beyond_fsize_limit(WS_SPOOL_HEADER_BYTES + WS_CHUNK_BYTES)) {
        errno = EFBIG;
        return -1;
    }
    int fd = open(spool, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    flock(fd, LOCK_EX | LOCK_NB); /* a fresh file: nobody else can hold it */
    struct ws_spool_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, WS_SPOOL_MAGIC, 8);
    h.version = WS_SPOOL_VERSION;
    h.header_bytes = WS_SPOOL_HEADER_BYTES;
    h.chunk_bytes = WS_CHUNK_BYTES;
    h.rec_bytes = WS_REC_BYTES;
    h.pid = (uint64_t)getpid();
    h.ppid = (uint64_t)getppid();
    h.start_ticks = g.start_ticks;
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    h.start_realtime_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
    h.clock = ws_clock_tsc ? WS_CLOCK_TSC : WS_CLOCK_MONOTONIC;
    ws_boot_id(h.boot_id, sizeof h.boot_id);
    if (ws_clock_tsc)
        calibration_pair(&h.start_tsc, &h.start_ns);
    else
        h.start_ns = ws_monotonic_ns();
    snprintf(h.backend, sizeof h.backend, "runtime-interposition");
    size_t olen = strnlen(output, sizeof h.output - 1); /* informational; truncation is harmless */
    memcpy(h.output, output, olen);
    snprintf(h.tool_version, sizeof h.tool_version, "%s", WSTRACE_VERSION);
    if (pwrite(fd, &h, sizeof h, 0) != (ssize_t)sizeof h || map_header(fd) != 0) {
        int e = errno;
        unlink(spool);
        close(fd);
        errno = e ? e : EIO;
        return -1;
    }
    return 0;
}

/* Who holds an output another process claimed first. */
struct holder {
    enum ws_spool_use use;
    uint64_t pid;
};

/* Make output this process's: create its spool.  A spool left there by a process that is gone
 * is moved aside (one line says where) or, when its writer had converted it already, removed.
 * 0: claimed; 1: another process holds it (*who says which); -1: cannot write (errno). */
static int claim(const char *output, struct holder *who)
{
    char spool[PATH_MAX + 128];
    snprintf(spool, sizeof spool, "%s.spool", output);
    for (int attempt = 0; attempt < 8; attempt++) {
        if (create_spool(spool, output) == 0) {
            set_paths(output);
            return 0;
        }
        if (errno != EEXIST)
            return -1;
        int fd;
        struct ws_spool_header h;
        enum ws_spool_use use = ws_spool_probe(spool, &fd, &h);
        if (use == WS_SPOOL_ABSENT)
            continue;
        if (use != WS_SPOOL_STALE) {
            who->use = use;
            who->pid = use == WS_SPOOL_OTHER ? 0 : h.pid;
            return 1;
        }
        if (h.collected_ns) {
            ws_spool_remove_stale(spool, fd); /* converted, and kept on request: replaced like its trace */
        } else {
            char aside[PATH_MAX + 256];
            if (ws_spool_move_aside(spool, fd, output, h.pid, aside, sizeof aside) == 0)
                warn("an earlier process (pid %llu) left its spool unconverted; it is kept as %s (run 'wstrace "
                     "collect %s')",
                     (unsigned long long)h.pid, aside, aside);
        }
        close(fd);
    }
    who->use = WS_SPOOL_LOCKED;
    who->pid = 0;
    return 1;
}

static const char *file_kind(mode_t m)
{
    return S_ISLNK(m)    ? "a symbolic link"
           : S_ISDIR(m)  ? "a folder"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISSOCK(m) ? "a socket"
                         : "not a regular file";
}

/* Only a regular file is ever replaced by a trace: 0 when output is one or absent. */
static int check_output(const char *output)
{
    struct stat st;
    if (lstat(output, &st) != 0 || S_ISREG(st.st_mode))
        return 0; /* absent (or unreachable: creating the spool says why) */
    warn("the trace %s is %s, not a regular file: it is left alone and the program runs untraced", output,
         file_kind(st.st_mode));
    return -1;
}

/* A process started by a traced process (fork+exec, posix_spawn, a shell script) that inherits
 * the environment traces into OUTPUT.<pid>: OUTPUT belongs to the process that started it all. */
static int started_by_traced_process(void)
{
    const char *v = getenv(OWNER_VAR);
    if (!v || !*v)
        return 0;
    char *end;
    long pid = strtol(v, &end, 10);
    return *end == ':' && pid > 0 && pid != (long)getpid() && strcmp(end + 1, g.base_output) == 0;
}

/* Choose this process's output and open its spool; see "Processes" in the README. */
static int open_spool(void)
{
    char own[PATH_MAX + 64];
    snprintf(own, sizeof own, "%s.%ld", g.base_output, (long)getpid());
    if (attach_spool(own) == 0 || attach_spool(g.base_output) == 0)
        return 0;
    struct holder who = {WS_SPOOL_ABSENT, 0}, unused;
    const char *trying = g.base_output;
    int rc = 1;
    if (!started_by_traced_process()) {
        if (check_output(g.base_output) != 0)
            return -1;
        rc = claim(g.base_output, &who);
        if (rc == 0) {
            char owner[PATH_MAX + 32];
            snprintf(owner, sizeof owner, "%ld:%s", (long)getpid(), g.base_output);
            setenv(OWNER_VAR, owner, 1);
            return 0;
        }
    }
    if (rc == 1) {
        trying = own;
        if (check_output(own) != 0)
            return -1;
        rc = claim(own, &unused);
    }
    if (rc == 0 && who.use == WS_SPOOL_OTHER)
        warn("%s.spool is not the spool of a running process and is left alone; this trace goes to %s", g.base_output,
             own);
    else if (rc == 0 && who.use != WS_SPOOL_ABSENT && who.pid)
        warn("%s is being traced by process %llu; this trace goes to %s", g.base_output, (unsigned long long)who.pid,
             own);
    else if (rc == 0 && who.use != WS_SPOOL_ABSENT)
        warn("%s is being traced by another process; this trace goes to %s", g.base_output, own);
    if (rc == 0)
        return 0;
    warn("cannot write the trace spool %s.spool: %s; the program runs untraced", trying,
         rc < 0 ? strerror(errno) : "the name is taken");
    return -1;
}

static void record_image(void)
{
    char cmdline[WS_MAX_STRING];
    read_cmdline(cmdline, sizeof cmdline);
    uint32_t n;
    struct ws_rec *r = ws_rec_with_string(WS_REC_IMAGE, cmdline, &n);
    if (r) {
        r->u[0] = __atomic_load_n(&header()->images, __ATOMIC_RELAXED);
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

/* The slot a hook had filled when its real call forked, copied by the child before it unmaps the
 * parent's chunk (ws_rec_open, tracer.h), and where that slot was. */
static WS_TLS struct ws_rec held;
static WS_TLS const struct ws_rec *held_at;

const struct ws_rec *ws_rec_opened(const struct ws_rec *r)
{
    if (ws_self.next == r)
        return r;
    return r && held_at == r ? &held : NULL;
}

/* A forked child traces into OUTPUT.<pid>, created with its first record (a child that records
 * nothing, such as one that only execs, leaves no file); nothing it does touches the parent's. */
static void after_fork_child(void)
{
    if (!ws_enabled)
        return;
    /* A hook whose real call forked may have filled the next slot already (ws_rec_open). */
    held_at = NULL;
    if (ws_self.in_hook && ws_self.next && ws_self.next < ws_self.end) {
        held = *ws_self.next;
        held_at = ws_self.next;
    }
    if (ws_self.chunk)
        munmap(ws_self.chunk, WS_CHUNK_BYTES);
    ws_self.chunk = NULL;
    ws_self.next = ws_self.end = ws_self.fast_end = NULL;
    ws_self.serial = 0;
    ws_forget_named_functions();
    struct ws_spool_header *h = header();
    if (h)
        munmap(h, WS_SPOOL_HEADER_BYTES);
    if (g.fd >= 0)
        close(g.fd); /* the parent keeps its lock: it is held by its own descriptor too */
    __atomic_store_n(&g.hdr, NULL, __ATOMIC_RELEASE);
    g.fd = -1;
    g.generation++;
    g.owner = getpid();
    g.start_ticks = ws_proc_start_ticks(g.owner, NULL);
    __atomic_store_n(&g.stopped, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g.loss, LOSS_NONE, __ATOMIC_RELAXED);
    __atomic_store_n(&g.retry_at, 0, __ATOMIC_RELAXED);
    pthread_mutex_init(&g.lazy_lock, NULL); /* another thread of the parent may have held it */
    char own[PATH_MAX + 64];
    snprintf(own, sizeof own, "%s.%ld", g.base_output, (long)getpid());
    set_paths(own);
    __atomic_store_n(&g.lazy, 1, __ATOMIC_RELEASE);
}

/* The slow path of a forked child's first record (ws_spool_next_chunk). */
static int create_child_spool(int *created)
{
    pthread_mutex_lock(&g.lazy_lock);
    int rc = 0;
    if (!header()) {
        char output[PATH_MAX + 64];
        struct holder who;
        snprintf(output, sizeof output, "%s", g.output);
        if (check_output(output) != 0) {
            rc = -1;
        } else if ((rc = claim(output, &who)) == 0) {
            *created = 1;
        } else {
            warn("cannot write the trace spool %s.spool: %s; the child runs untraced", output,
                 rc < 0 ? strerror(errno) : "the name is taken");
            rc = -1;
        }
        if (rc != 0)
            __atomic_store_n(&ws_enabled, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&g.lazy, 0, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g.lazy_lock);
    return rc;
}

void ws_tracer_start(void)
{
    if (g.started)
        return;
    g.started = 1;
    int saved = errno;
    g.real_exit = (exit_fn)dlsym(RTLD_NEXT, "_exit");
    g.real_Exit = (exit_fn)dlsym(RTLD_NEXT, "_Exit");
    g.owner = getpid();
    g.start_ticks = ws_proc_start_ticks(g.owner, NULL);
    if (read_config() != 0 || choose_clock() != 0 || pthread_key_create(&g.thread_key, thread_exit) != 0 ||
        open_spool() != 0) {
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

/* One line at exit when records could not be kept, naming the first reason. */
static void report_loss(const struct ws_spool_header *h)
{
    uint64_t lost = __atomic_load_n(&h->lost_records, __ATOMIC_ACQUIRE);
    if (!lost)
        return;
    int err = __atomic_load_n(&g.loss_errno, __ATOMIC_RELAXED);
    char why[256];
    switch (__atomic_load_n(&g.loss, __ATOMIC_RELAXED)) {
    case LOSS_LIMIT:
        snprintf(why, sizeof why, "the spool reached WSTRACE_SPOOL_MAX, %llu bytes", (unsigned long long)g.max_bytes);
        break;
    case LOSS_FSIZE: snprintf(why, sizeof why, "the spool reached the file size limit (ulimit -f)"); break;
    case LOSS_SPACE: snprintf(why, sizeof why, "the spool could not grow: %s", strerror(err)); break;
    case LOSS_MAP: snprintf(why, sizeof why, "a spool chunk could not be mapped: %s", strerror(err)); break;
    default: snprintf(why, sizeof why, "they did not fit in the spool"); break;
    }
    warn("%llu records could not be kept (%s); the trace counts them in meta lost_records", (unsigned long long)lost,
         why);
}

/* Under a file size limit, writing the trace past it would raise SIGXFSZ and kill the program at
 * its exit: while the trace is written the signal is ignored, so the write fails with EFBIG and the
 * spool is kept instead.  Returns 1 when *old must be restored. */
static int ignore_sigxfsz(struct sigaction *old)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return 0;
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    return sigaction(SIGXFSZ, &ign, old) == 0;
}

/* The spool of a process of this run (started no earlier than this one) that ended without
 * converting it: a forked child killed by a signal.  Under `wstrace record` the recorder would
 * convert it; under plain LD_PRELOAD nobody else will.  A spool another process holds or still
 * writes is left to it (the collector takes its lock).  One line per recovery. */
static void recover_descendant(void *ctx, long pid, const char *trace, const char *spool)
{
    uint64_t since_realtime_ns = *(const uint64_t *)ctx;
    char err[1024];
    int fd;
    struct ws_spool_header h;
    enum ws_spool_use use = ws_spool_probe(spool, &fd, &h);
    if (fd >= 0)
        close(fd);
    if (use != WS_SPOOL_STALE || h.start_realtime_ns < since_realtime_ns || h.collected_ns)
        return; /* a spool of an earlier run is left for `wstrace collect` */
    struct ws_collect_stats stats;
    /* Removed under its lock, so that a spool of the same name made meanwhile is not touched. */
    unsigned flags = g.keep_spool ? 0 : WS_COLLECT_REMOVE_SPOOL;
    if (ws_collect_spool_ex(spool, trace, flags, &stats, NULL, NULL, err, sizeof err) != 0) {
        warn("process %ld ended without converting its trace: %s; run 'wstrace collect %s'", pid, err, spool);
        return;
    }
    warn("process %ld ended without converting its trace; it is converted into %s", pid, trace);
}

/* The spools OUTPUT.<pid>.spool of processes of this run that are gone (recover_descendant). */
static void recover_descendants(uint64_t since_realtime_ns)
{
    ws_spool_scan_dead(g.base_output, recover_descendant, &since_realtime_ns);
}

void ws_tracer_stop(void)
{
    /* Only the spool's own process converts it: never a vfork child sharing its memory. */
    if (!g.started || !__atomic_load_n(&ws_enabled, __ATOMIC_ACQUIRE) || getpid() != g.owner ||
        __atomic_exchange_n(&g.stopped, 1, __ATOMIC_ACQ_REL))
        return;
    struct ws_spool_header *h = header();
    if (!h)
        return; /* a forked child that recorded nothing writes no trace */
    int saved = errno;
    ws_self.in_hook++; /* nothing the collector does is traced */
    char blind[1024];
    ws_blind_spots_report(blind, sizeof blind);
    if (blind[0])
        warn("this process used CUDA in ways the trace cannot see: %s (meta blind_spot.*)", blind);
    uint64_t end_tsc = 0, end_ns = ws_monotonic_ns();
    if (ws_clock_tsc)
        calibration_pair(&end_tsc, &end_ns);
    __atomic_store_n(&h->end_tsc, end_tsc, __ATOMIC_RELAXED);
    __atomic_store_n(&h->end_ns, end_ns, __ATOMIC_RELEASE); /* after end_tsc: readers pair them */
    report_loss(h);
    if (g.collect_at_exit) {
        char err[1024];
        struct ws_collect_stats stats;
        struct sigaction old;
        int restore = ignore_sigxfsz(&old);
        if (ws_collect_spool_ex(g.spool, g.output, WS_COLLECT_OWNER, &stats, NULL, NULL, err, sizeof err) != 0) {
            warn("%s; the spool is kept: run 'wstrace collect %s'", err, g.spool);
        } else {
            __atomic_store_n(&h->collected_ns, ws_monotonic_ns(), __ATOMIC_RELEASE);
            if (!g.keep_spool)
                unlink(g.spool);
        }
        recover_descendants(h->start_realtime_ns);
        if (restore)
            sigaction(SIGXFSZ, &old, NULL);
    }
    ws_self.in_hook--;
    errno = saved;
}

/* _exit and _Exit end a process without running its destructors: a process that leaves this way
 * (a forked child should, and Python's multiprocessing children do) still converts its spool. */
WS_EXPORT void _exit(int status)
{
    ws_tracer_stop();
    if (g.real_exit)
        g.real_exit(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

WS_EXPORT void _Exit(int status)
{
    ws_tracer_stop();
    if (g.real_Exit)
        g.real_Exit(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

__attribute__((constructor)) static void wstrace_constructor(void) { ws_tracer_start(); }
__attribute__((destructor)) static void wstrace_destructor(void) { ws_tracer_stop(); }
