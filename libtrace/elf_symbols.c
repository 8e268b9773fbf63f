/*
 * Dynamic symbol lookup in a loaded object's own tables (elf_symbols.h): the GNU hash table when
 * the object has one, else the System V one, as the dynamic loader searches them.
 */
#include "elf_symbols.h"

WS_NO_SANITIZE int ws_elf_streq(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

WS_NO_SANITIZE int ws_elf_prefix(const char *s, const char *prefix)
{
    while (*prefix)
        if (*s++ != *prefix++)
            return 0;
    return 1;
}

WS_NO_SANITIZE int ws_elf_contains(const void *memory, size_t len, const char *needle)
{
    const unsigned char *p = memory, *n = (const unsigned char *)needle;
    size_t m = 0;
    while (n[m])
        m++;
    if (!m || len < m)
        return m == 0;
    for (size_t i = 0; i + m <= len; i++) {
        if (p[i] != n[0])
            continue;
        size_t k = 1;
        while (k < m && p[i + k] == n[k])
            k++;
        if (k == m)
            return 1;
    }
    return 0;
}

WS_NO_SANITIZE const char *ws_elf_basename(const char *path)
{
    const char *base = path;
    for (; *path; path++)
        if (*path == '/')
            base = path + 1;
    return base;
}

/* glibc relocates the pointers of a writable dynamic section in place; a read-only one (and the
 * vDSO's) still holds addresses relative to the object. */
WS_NO_SANITIZE static uintptr_t absolute(uintptr_t base, ElfW(Addr) p)
{
    return p < base ? base + (uintptr_t)p : (uintptr_t)p;
}

WS_NO_SANITIZE void ws_elf_open(struct ws_elf_object *o, uintptr_t base, const ElfW(Dyn) * dynamic)
{
    *o = (struct ws_elf_object){.base = base};
    for (const ElfW(Dyn) *d = dynamic; d && d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: o->symtab = (const ElfW(Sym) *)absolute(base, d->d_un.d_ptr); break;
        case DT_STRTAB: o->strtab = (const char *)absolute(base, d->d_un.d_ptr); break;
        case DT_GNU_HASH: o->gnu_hash = (const uint32_t *)absolute(base, d->d_un.d_ptr); break;
        case DT_HASH: o->sysv_hash = (const uint32_t *)absolute(base, d->d_un.d_ptr); break;
        case DT_VERSYM: o->versym = (const ElfW(Half) *)absolute(base, d->d_un.d_ptr); break;
        default: break;
        }
    }
    if (!o->symtab || !o->strtab)
        o->gnu_hash = o->sysv_hash = NULL;
}

/* What a match must be: 1 = a function at its default version, 2 = any definition. */
enum want { WANT_DEFAULT_FUNCTION = 1, WANT_DEFINITION = 2 };

WS_NO_SANITIZE static int acceptable(const struct ws_elf_object *o, uint32_t index, const char *name, enum want want)
{
    const ElfW(Sym) *s = &o->symtab[index];
    if (s->st_shndx == SHN_UNDEF || s->st_value == 0 || !ws_elf_streq(o->strtab + s->st_name, name))
        return 0;
    unsigned bind = ELF64_ST_BIND(s->st_info), type = ELF64_ST_TYPE(s->st_info);
    if (bind != STB_GLOBAL && bind != STB_WEAK)
        return 0;
    if (want == WANT_DEFINITION)
        return 1;
    /* 0x8000: a version kept for old binaries only (dlsym@GLIBC_2.2.5 beside dlsym@@GLIBC_2.34) */
    return type == STT_FUNC && !(o->versym && (o->versym[index] & 0x8000));
}

WS_NO_SANITIZE static uint32_t gnu_hash(const char *name)
{
    uint32_t h = 5381;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = h * 33 + *p;
    return h;
}

WS_NO_SANITIZE static uint32_t sysv_hash(const char *name)
{
    uint32_t h = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h = (h << 4) + *p;
        uint32_t g = h & 0xf0000000u;
        if (g)
            h ^= g >> 24;
        h &= ~g;
    }
    return h;
}

WS_NO_SANITIZE static const ElfW(Sym) * find(const struct ws_elf_object *o, const char *name, enum want want)
{
    if (o->gnu_hash) {
        const uint32_t *t = o->gnu_hash;
        uint32_t nbuckets = t[0], symoffset = t[1], bloom_words = t[2], shift = t[3];
        const ElfW(Addr) *bloom = (const ElfW(Addr) *)(t + 4);
        const uint32_t *buckets = (const uint32_t *)(bloom + bloom_words);
        const uint32_t *chain = buckets + nbuckets;
        if (!nbuckets || !bloom_words)
            return NULL;
        uint32_t h = gnu_hash(name);
        const unsigned bits = sizeof(ElfW(Addr)) * 8;
        ElfW(Addr) word = bloom[(h / bits) % bloom_words];
        ElfW(Addr) mask = ((ElfW(Addr))1 << (h % bits)) | ((ElfW(Addr))1 << ((h >> shift) % bits));
        if ((word & mask) != mask)
            return NULL;
        uint32_t i = buckets[h % nbuckets];
        if (i < symoffset)
            return NULL;
        for (;; i++) {
            uint32_t h2 = chain[i - symoffset];
            if ((h | 1) == (h2 | 1) && acceptable(o, i, name, want))
                return &o->symtab[i];
            if (h2 & 1)
                return NULL;
        }
    }
    if (o->sysv_hash) {
        uint32_t nbucket = o->sysv_hash[0];
        const uint32_t *bucket = o->sysv_hash + 2, *chain = bucket + nbucket;
        if (!nbucket)
            return NULL;
        for (uint32_t i = bucket[sysv_hash(name) % nbucket]; i != STN_UNDEF; i = chain[i])
            if (acceptable(o, i, name, want))
                return &o->symtab[i];
    }
    return NULL;
}

WS_NO_SANITIZE void *ws_elf_function(const struct ws_elf_object *o, const char *name)
{
    const ElfW(Sym) *s = find(o, name, WANT_DEFAULT_FUNCTION);
    return s ? (void *)(o->base + s->st_value) : NULL;
}

WS_NO_SANITIZE int ws_elf_defines(const struct ws_elf_object *o, const char *name)
{
    return find(o, name, WANT_DEFINITION) != NULL;
}
