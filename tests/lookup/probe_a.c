/* The first of two libraries lookup_prog links after libwstrace.so: its lookups with RTLD_NEXT and
 * RTLD_DEFAULT are relative to it (lookup_prog's "pseudo" mode). */
#include <dlfcn.h>
#include <stddef.h>

const char *lookup_probe(void) { return "a"; }

typedef const char *(*probe_fn)(void);

/* What the next definition after this library answers ("b"), and the first one in the global
 * scope (the executable's, "exe"); NULL where a lookup failed. */
const char *lookup_probe_next_from_a(void)
{
    probe_fn f = (probe_fn)dlsym(RTLD_NEXT, "lookup_probe");
    return f ? f() : NULL;
}

const char *lookup_probe_default_from_a(void)
{
    probe_fn f = (probe_fn)dlsym(RTLD_DEFAULT, "lookup_probe");
    return f ? f() : NULL;
}
