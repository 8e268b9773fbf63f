/*
 * Symbol lookup in the dynamic symbol table of a loaded object, by reading its ELF structures in
 * memory: no loader call, no lock, no allocation.  The loader-lookup interposer (lookup.c) finds
 * the real dlsym this way before anything else is ready (a sanitizer runtime asks for it while it
 * initialises, before any constructor and before its own interceptors work), and the blind-spot
 * diagnostics (blind_spots.c) ask loaded objects what they define.
 *
 * Every function here is safe to call from uninstrumented start-up code: none is instrumented by
 * a sanitizer and none calls another library.
 */
#ifndef WS_ELF_SYMBOLS_H
#define WS_ELF_SYMBOLS_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>

#define WS_NO_SANITIZE __attribute__((no_sanitize("address", "undefined", "thread")))

/* The tables of one loaded object; lookup answers NULL on an object whose tables were not found. */
struct ws_elf_object {
    uintptr_t base; /* l_addr: what the object's addresses are relative to */
    const ElfW(Sym) * symtab;
    const char *strtab;
    const uint32_t *gnu_hash;
    const uint32_t *sysv_hash;
    const ElfW(Half) * versym;
};

/* Read the object's dynamic section (l_ld of its link map, or _DYNAMIC). */
void ws_elf_open(struct ws_elf_object *o, uintptr_t base, const ElfW(Dyn) * dynamic);

/* The address of the function `name` the object defines at its default version (a definition
 * with no version counts as default), or NULL. */
void *ws_elf_function(const struct ws_elf_object *o, const char *name);

/* 1 when the object defines `name` (function or data, any version). */
int ws_elf_defines(const struct ws_elf_object *o, const char *name);

/* Byte-wise helpers that no sanitizer intercepts. */
int ws_elf_streq(const char *a, const char *b);
const char *ws_elf_basename(const char *path);
int ws_elf_prefix(const char *s, const char *prefix);
/* 1 when needle occurs in the len bytes at memory: any mapped memory, including what a sanitizer
 * keeps poisoned (the redzones around an instrumented object's constants). */
int ws_elf_contains(const void *memory, size_t len, const char *needle);

#endif
