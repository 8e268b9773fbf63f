/*
 * The loader's symbol lookup, interposed: dlsym and dlvsym.
 *
 * A library that opens cudart or the driver itself (Python's ctypes, loader stubs, cuBLAS opening
 * libcuda) and asks the handle for an entry point gets the definition inside that library, not the
 * hook the dynamic loader would have bound.  For exactly the names this library exports as CUDA or
 * NVTX hooks, a lookup through a handle that finds another definition registers that definition
 * (real_symbols.c: the hook forwards to it) and hands out the hook instead.  Every other lookup
 * answers what the loader answers.
 *
 * RTLD_DEFAULT and RTLD_NEXT mean "from where the caller is": the loader finds the caller from
 * its return address.  Those two are passed to the real function by a jump (the trampolines
 * below), so it sees the caller's return address, never ours: the tracer's own
 * dlsym(RTLD_NEXT, ...) still finds what follows libwstrace, a sanitizer runtime's still finds
 * what follows the sanitizer.  Lookups made by libwstrace itself are never substituted (the
 * registry's own resolution asks a cudart handle for the real function).
 *
 * The real dlsym and dlvsym are found in the C library's own symbol table (elf_symbols.c), not
 * through the loader: the first call may come from a sanitizer runtime setting up its
 * interceptors, before any constructor ran and before its instrumentation works, so that path
 * allocates nothing, calls nothing and is not instrumented.
 */
#include <dlfcn.h>
#include <link.h>

#include "elf_symbols.h"
#include "graph_hooks.h"
#include "tracer.h"

typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlvsym_fn)(void *, const char *, const char *);

/* Read by the trampolines; written once by ws_lookup_resolve (racing writers store the same). */
__attribute__((visibility("hidden"), used)) void *ws_lookup_real_dlsym;
__attribute__((visibility("hidden"), used)) void *ws_lookup_real_dlvsym;

extern const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));
extern ElfW(Dyn) _DYNAMIC[] __attribute__((visibility("hidden")));

/* This library's own extent in memory (the lookups it makes itself are left alone) and its
 * dynamic symbols; set by ws_lookup_resolve before it publishes the real functions. */
static uintptr_t self_begin, self_end;
static struct ws_elf_object self_object;

WS_NO_SANITIZE static void find_self(void)
{
    const ElfW(Ehdr) *eh = &__ehdr_start;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
    uintptr_t base = (uintptr_t)eh, end = base;
    for (unsigned i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && base + ph[i].p_vaddr + ph[i].p_memsz > end)
            end = base + ph[i].p_vaddr + ph[i].p_memsz;
    self_begin = base;
    self_end = end;
    ws_elf_open(&self_object, base, _DYNAMIC);
}

/* The C library's dlsym and dlvsym (libdl's before glibc 2.34), from the loader's list of objects. */
__attribute__((visibility("hidden"), used)) WS_NO_SANITIZE void ws_lookup_resolve(void)
{
    if (__atomic_load_n(&ws_lookup_real_dlsym, __ATOMIC_ACQUIRE))
        return;
    find_self(); /* callers racing here write the same values */
    for (const struct link_map *l = _r_debug.r_map; l; l = l->l_next) {
        const char *name = ws_elf_basename(l->l_name ? l->l_name : "");
        if (!ws_elf_prefix(name, "libc.so") && !ws_elf_prefix(name, "libdl.so"))
            continue;
        struct ws_elf_object o;
        ws_elf_open(&o, (uintptr_t)l->l_addr, l->l_ld);
        void *s = ws_elf_function(&o, "dlsym"), *v = ws_elf_function(&o, "dlvsym");
        if (s && v) {
            __atomic_store_n(&ws_lookup_real_dlvsym, v, __ATOMIC_RELEASE);
            __atomic_store_n(&ws_lookup_real_dlsym, s, __ATOMIC_RELEASE);
            return;
        }
    }
}

/* The names a lookup may be answered with a hook for: the CUDA and NVTX entry points. */
static int hook_name(const char *name)
{
    return ws_elf_prefix(name, "cu") || ws_elf_prefix(name, "__cuda") || ws_elf_prefix(name, "nvtx");
}

/* This library's own exported definition of name (found in its dynamic symbol table). */
static void *own_definition(const char *name) { return ws_elf_function(&self_object, name); }

static int from_self(const void *caller)
{
    uintptr_t a = (uintptr_t)caller;
    return a >= self_begin && a < self_end;
}

/* What a lookup through a handle answers: its hook when name is one and found a definition
 * elsewhere that the registry now holds, else what the loader found. */
static void *answer(const char *name, void *found, const void *caller)
{
    if (!found || !name || from_self(caller) || !hook_name(name))
        return found;
    void *hook = own_definition(name);
    if (!hook || hook == found)
        return found;
    ws_real_register(name, found);
    /* a full registry, or another library's definition registered first: the hook would not
     * reach this one, so the caller gets it untraced */
    return ws_real_registered(name) == found ? hook : found;
}

/* Entered by a jump from the trampoline: the return address is the caller's. */
__attribute__((visibility("hidden"), used, noinline)) void *ws_lookup_dlsym_handle(void *handle, const char *name)
{
    const void *caller = __builtin_return_address(0);
    dlsym_fn real = (dlsym_fn)__atomic_load_n(&ws_lookup_real_dlsym, __ATOMIC_ACQUIRE);
    if (!real) {
        ws_lookup_resolve();
        if (!(real = (dlsym_fn)__atomic_load_n(&ws_lookup_real_dlsym, __ATOMIC_ACQUIRE)))
            return NULL;
    }
    return answer(name, real(handle, name), caller);
}

__attribute__((visibility("hidden"), used, noinline)) void *ws_lookup_dlvsym_handle(void *handle, const char *name,
                                                                                    const char *version)
{
    const void *caller = __builtin_return_address(0);
    dlvsym_fn real = (dlvsym_fn)__atomic_load_n(&ws_lookup_real_dlvsym, __ATOMIC_ACQUIRE);
    if (!real) {
        ws_lookup_resolve();
        if (!(real = (dlvsym_fn)__atomic_load_n(&ws_lookup_real_dlvsym, __ATOMIC_ACQUIRE)))
            return NULL;
    }
    return answer(name, real(handle, name, version), caller);
}

/*
 * dlsym(handle, name) and dlvsym(handle, name, version).  RTLD_DEFAULT (0) and RTLD_NEXT (-1)
 * jump to the real function (resolving it first when needed, with the arguments kept); any
 * other handle jumps to the C function above.  A jump, not a call, keeps the caller's return
 * address where the loader looks for it.
 */
#define WS_TRAMPOLINE_X86_64(name, real, handle_fn)                                                                    \
    ".globl " name "\n.type " name ",@function\n" name ":\n"                                                           \
    "    .cfi_startproc\n"                                                                                             \
    "    leaq 1(%rdi), %rax\n"                                                                                         \
    "    cmpq $1, %rax\n"                                                                                              \
    "    ja " handle_fn "\n"                                                                                           \
    "    movq " real "(%rip), %rax\n"                                                                                  \
    "    testq %rax, %rax\n"                                                                                           \
    "    jz 1f\n"                                                                                                      \
    "    jmp *%rax\n"                                                                                                  \
    "1:  pushq %rdi\n"                                                                                                 \
    "    .cfi_adjust_cfa_offset 8\n"                                                                                   \
    "    pushq %rsi\n"                                                                                                 \
    "    .cfi_adjust_cfa_offset 8\n"                                                                                   \
    "    pushq %rdx\n"                                                                                                 \
    "    .cfi_adjust_cfa_offset 8\n"                                                                                   \
    "    call ws_lookup_resolve\n"                                                                                     \
    "    popq %rdx\n"                                                                                                  \
    "    .cfi_adjust_cfa_offset -8\n"                                                                                  \
    "    popq %rsi\n"                                                                                                  \
    "    .cfi_adjust_cfa_offset -8\n"                                                                                  \
    "    popq %rdi\n"                                                                                                  \
    "    .cfi_adjust_cfa_offset -8\n"                                                                                  \
    "    movq " real "(%rip), %rax\n"                                                                                  \
    "    testq %rax, %rax\n"                                                                                           \
    "    jz 2f\n"                                                                                                      \
    "    jmp *%rax\n"                                                                                                  \
    "2:  ret\n"                                                                                                        \
    "    .cfi_endproc\n"                                                                                               \
    ".size " name ", .-" name "\n"

#define WS_TRAMPOLINE_AARCH64(name, real, handle_fn)                                                                   \
    ".globl " name "\n.type " name ",%function\n" name ":\n"                                                           \
    "    .cfi_startproc\n"                                                                                             \
    "    cbz x0, 1f\n"                                                                                                 \
    "    cmn x0, #1\n"                                                                                                 \
    "    b.eq 1f\n"                                                                                                    \
    "    b " handle_fn "\n"                                                                                            \
    "1:  adrp x16, " real "\n"                                                                                         \
    "    ldr x16, [x16, :lo12:" real "]\n"                                                                             \
    "    cbz x16, 2f\n"                                                                                                \
    "    br x16\n"                                                                                                     \
    "2:  stp x29, x30, [sp, #-48]!\n"                                                                                  \
    "    .cfi_def_cfa_offset 48\n"                                                                                     \
    "    .cfi_offset 29, -48\n"                                                                                        \
    "    .cfi_offset 30, -40\n"                                                                                        \
    "    mov x29, sp\n"                                                                                                \
    "    stp x0, x1, [sp, #16]\n"                                                                                      \
    "    str x2, [sp, #32]\n"                                                                                          \
    "    bl ws_lookup_resolve\n"                                                                                       \
    "    ldp x0, x1, [sp, #16]\n"                                                                                      \
    "    ldr x2, [sp, #32]\n"                                                                                          \
    "    ldp x29, x30, [sp], #48\n"                                                                                    \
    "    .cfi_def_cfa_offset 0\n"                                                                                      \
    "    .cfi_restore 29\n"                                                                                            \
    "    .cfi_restore 30\n"                                                                                            \
    "    adrp x16, " real "\n"                                                                                         \
    "    ldr x16, [x16, :lo12:" real "]\n"                                                                             \
    "    cbz x16, 3f\n"                                                                                                \
    "    br x16\n"                                                                                                     \
    "3:  mov x0, #0\n"                                                                                                 \
    "    ret\n"                                                                                                        \
    "    .cfi_endproc\n"                                                                                               \
    ".size " name ", .-" name "\n"

#if defined(__x86_64__)
__asm__(".text\n" WS_TRAMPOLINE_X86_64("dlsym", "ws_lookup_real_dlsym", "ws_lookup_dlsym_handle")
            WS_TRAMPOLINE_X86_64("dlvsym", "ws_lookup_real_dlvsym", "ws_lookup_dlvsym_handle"));
#elif defined(__aarch64__)
__asm__(".text\n" WS_TRAMPOLINE_AARCH64("dlsym", "ws_lookup_real_dlsym", "ws_lookup_dlsym_handle")
            WS_TRAMPOLINE_AARCH64("dlvsym", "ws_lookup_real_dlvsym", "ws_lookup_dlvsym_handle"));
#else
/* Elsewhere the loader's lookup is not interposed: lookups through handles are not traced. */
#endif
