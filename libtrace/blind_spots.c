/*
 * What the trace could not see: signs, looked for once when the process exits, of CUDA use that
 * reached no hook.  Each kind found becomes a meta row `blind_spot.<kind>` of the trace
 * (schema/README.md) and the process prints one line on stderr naming them all.
 *
 *  static_cudart      an object (the executable or a loaded library) carries its own copy of the
 *                     runtime (nvcc's default `-cudart static`, or a library's private one): its
 *                     runtime calls never leave the object, so no hook sees them.  Found by the
 *                     cudart API in its dynamic symbols, or by a string only the runtime carries
 *                     (its shared-memory name, "/cudart.shm.") among its constants.  The
 *                     shared cudart and the simulated device are the runtimes the tracer wraps and
 *                     are not reported.
 *  driver_unwrapped   the driver (libcuda.so) is loaded, no shared cudart is, and no CUDA call
 *                     reached a hook: the program reached the driver in a way the tracer cannot
 *                     wrap.
 *  context_untraced   a device holds an active primary context, and no CUDA call reached a hook.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blind_spots.h"
#include "elf_symbols.h"
#include "tracer.h"

/* Where the runtime's string is looked for: an object's .rodata (located with the section headers
 * of its file) up to RODATA_MAX; when the file cannot tell, its read-only segments, when they are
 * no larger than SEGMENTS_MAX (the executable's up to the larger bound).  Large libraries are
 * mostly device code (.nv_fatbin), which is never searched when .rodata is found. */
#define RODATA_MAX          (256u << 20)
#define SEGMENTS_MAX        (64u << 20)
#define SEGMENTS_EXECUTABLE (256u << 20)
#define CUDART_MARKER       "/cudart.shm."

struct survey {
    uintptr_t self_base;
    int objects;        /* seen by the second pass: the first is the executable */
    int driver_loaded;  /* libcuda.so* */
    int shared_runtime; /* libcudart.so*, or the simulated device's runtime */
    char statics[2048]; /* the objects with a static runtime, "; " between them */
    size_t statics_len;
    int statics_dropped;
};

/* 1 when [addr, addr + len) lies in a readable loaded segment of the object. */
static int loaded(const struct dl_phdr_info *info, uint64_t addr, uint64_t len)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type == PT_LOAD && (p->p_flags & PF_R) && addr >= p->p_vaddr && len <= p->p_filesz &&
            addr - p->p_vaddr <= p->p_filesz - len)
            return 1;
    }
    return 0;
}

/* The loaded .rodata of the object in file path: 0 with *addr and *len (relative to the object's
 * base), -1 when the file cannot say (unreadable, not ELF, or its .rodata is not loaded). */
static int find_rodata(const struct dl_phdr_info *info, const char *path, uint64_t *addr, uint64_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = -1;
    ElfW(Shdr) *sh = NULL;
    char *names = NULL;
    ElfW(Ehdr) eh;
    if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_shentsize != sizeof(ElfW(Shdr)) || eh.e_shnum == 0 || eh.e_shstrndx >= eh.e_shnum)
        goto out;
    size_t bytes = (size_t)eh.e_shnum * sizeof *sh;
    if (!(sh = malloc(bytes)) || pread(fd, sh, bytes, (off_t)eh.e_shoff) != (ssize_t)bytes)
        goto out;
    const ElfW(Shdr) *strtab = &sh[eh.e_shstrndx];
    if (strtab->sh_size == 0 || strtab->sh_size > (1u << 20) || !(names = malloc(strtab->sh_size + 1)) ||
        pread(fd, names, strtab->sh_size, (off_t)strtab->sh_offset) != (ssize_t)strtab->sh_size)
        goto out;
    names[strtab->sh_size] = 0;
    for (unsigned i = 0; i < eh.e_shnum; i++)
        if (sh[i].sh_name < strtab->sh_size && strcmp(names + sh[i].sh_name, ".rodata") == 0 &&
            (sh[i].sh_flags & SHF_ALLOC) && sh[i].sh_type == SHT_PROGBITS &&
            loaded(info, sh[i].sh_addr, sh[i].sh_size)) {
            *addr = sh[i].sh_addr;
            *len = sh[i].sh_size;
            rc = 0;
            break;
        }
out:
    free(names);
    free(sh);
    close(fd);
    return rc;
}

/* 1 when the object holds the runtime's string where it keeps its constants. */
static int holds_marker(const struct dl_phdr_info *info, const char *path, int executable)
{
    uint64_t addr, len;
    if (find_rodata(info, path, &addr, &len) == 0)
        return len <= RODATA_MAX && ws_elf_contains((const void *)(info->dlpi_addr + addr), (size_t)len, CUDART_MARKER);
    uint64_t total = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type == PT_LOAD && (p->p_flags & PF_R) && !(p->p_flags & PF_W))
            total += p->p_filesz;
    }
    if (total > (executable ? SEGMENTS_EXECUTABLE : SEGMENTS_MAX))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type == PT_LOAD && (p->p_flags & PF_R) && !(p->p_flags & PF_W) &&
            ws_elf_contains((const void *)(info->dlpi_addr + p->p_vaddr), p->p_filesz, CUDART_MARKER))
            return 1;
    }
    return 0;
}

static void add_static(struct survey *s, const char *path)
{
    size_t n = strlen(path), sep = s->statics_len ? 2 : 0;
    if (s->statics_len + sep + n + 1 > sizeof s->statics) {
        s->statics_dropped++;
        return;
    }
    memcpy(s->statics + s->statics_len, "; ", sep);
    memcpy(s->statics + s->statics_len + sep, path, n + 1);
    s->statics_len += sep + n;
}

static const ElfW(Dyn) * dynamic_of(const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            return (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    return NULL;
}

/* First pass: which runtimes and drivers are loaded. */
static int note_libraries(struct dl_phdr_info *info, size_t size, void *ctx)
{
    (void)size;
    struct survey *s = ctx;
    const char *base = ws_elf_basename(info->dlpi_name ? info->dlpi_name : "");
    if (ws_elf_prefix(base, "libcuda.so"))
        s->driver_loaded = 1;
    if (ws_elf_prefix(base, "libcudart.so"))
        s->shared_runtime = 1;
    return 0;
}

/* Second pass: the objects with a runtime of their own. */
static int find_static_runtimes(struct dl_phdr_info *info, size_t size, void *ctx)
{
    (void)size;
    struct survey *s = ctx;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    const char *base = ws_elf_basename(name);
    int executable = s->objects++ == 0;
    if (info->dlpi_addr == s->self_base || (!executable && !name[0]) || ws_elf_prefix(base, "linux-vdso") ||
        ws_elf_prefix(base, "linux-gate") || ws_elf_prefix(base, "ld-linux") || ws_elf_prefix(base, "libcudart.so") ||
        ws_elf_prefix(base, "libcuda.so"))
        return 0;
    const ElfW(Dyn) *dyn = dynamic_of(info);
    struct ws_elf_object o = {0};
    if (dyn)
        ws_elf_open(&o, (uintptr_t)info->dlpi_addr, dyn);
    if (ws_elf_defines(&o, "wssim_is_simulated")) {
        s->shared_runtime |= ws_elf_defines(&o, "cudaMalloc"); /* the simulated device's runtime */
        return 0;
    }
    int found = ws_elf_defines(&o, "__cudaRegisterFatBinary") && ws_elf_defines(&o, "cudaMalloc");
    char exe[PATH_MAX];
    if (executable) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        snprintf(exe + (n > 0 ? n : 0), sizeof exe - (size_t)(n > 0 ? n : 0), "%s", n > 0 ? "" : "(the executable)");
        name = exe;
    }
    if (!found && (executable || s->driver_loaded))
        found = holds_marker(info, executable ? "/proc/self/exe" : name, executable);
    if (found)
        add_static(s, name);
    return 0;
}

typedef int (*count_fn)(int *);
typedef int (*state_fn)(int, unsigned *, int *);

/* The devices whose primary context is active, "0, 1" (empty when none or when the driver was
 * never initialised). */
static void active_contexts(char *out, size_t len)
{
    out[0] = 0;
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!driver)
        return;
    count_fn count = (count_fn)dlsym(driver, "cuDeviceGetCount");
    state_fn state = (state_fn)dlsym(driver, "cuDevicePrimaryCtxGetState");
    int n = 0;
    if (count && state && count(&n) == 0) {
        size_t used = 0;
        for (int d = 0; d < n && d < 64; d++) {
            unsigned flags = 0;
            int active = 0;
            if (state(d, &flags, &active) == 0 && active && used + 16 < len)
                used += (size_t)snprintf(out + used, len - used, "%s%d", used ? ", " : "", d);
        }
    }
    dlclose(driver);
}

static void meta(const char *key, const char *value)
{
    char buf[WS_MAX_STRING];
    size_t klen = strlen(key), vlen = strlen(value);
    if (klen + vlen > sizeof buf)
        vlen = sizeof buf - klen;
    memcpy(buf, key, klen);
    memcpy(buf + klen, value, vlen);
    uint32_t n;
    struct ws_rec *r = ws_rec_string(WS_REC_META, buf, klen + vlen, &n);
    if (r) {
        r->api = WS_API_wstrace;
        r->u[0] = klen;
        ws_rec_commit(n);
    }
}

void ws_blind_spots_report(char *line, size_t len)
{
    line[0] = 0;
    Dl_info self;
    struct survey s = {0};
    if (dladdr((void *)&ws_blind_spots_report, &self))
        s.self_base = (uintptr_t)self.dli_fbase;
    dl_iterate_phdr(note_libraries, &s);
    dl_iterate_phdr(find_static_runtimes, &s);
    int reached = ws_hooks_reached() != 0;
    char contexts[256] = "";
    if (s.driver_loaded && !reached)
        active_contexts(contexts, sizeof contexts);

    size_t used = 0;
    if (s.statics_len) {
        char value[sizeof s.statics + 64];
        snprintf(value, sizeof value, "%s%s", s.statics, s.statics_dropped ? "; ..." : "");
        meta("blind_spot.static_cudart", value);
        used += (size_t)snprintf(line + used, len - used, "a statically linked CUDA runtime in %s (its runtime calls are not traced; what it "
                                 "asks of the driver is, at the driver layer)",
                                 value);
    }
    if (s.driver_loaded && !s.shared_runtime && !reached) {
        meta("blind_spot.driver_unwrapped", "libcuda.so is loaded, no shared cudart is, and no CUDA call reached "
                                            "the tracer");
        if (used < len)
            used += (size_t)snprintf(line + used, len - used, "%sthe CUDA driver reached without a traced call",
                                     used ? "; " : "");
    }
    if (contexts[0]) {
        char value[320];
        snprintf(value, sizeof value, "device %s: an active context, and no CUDA call reached the tracer", contexts);
        meta("blind_spot.context_untraced", value);
        if (used < len)
            snprintf(line + used, len - used, "%san active context on device %s with no traced call", used ? "; " : "",
                     contexts);
    }
}
