/*
 * wstrace.h - explicit API of the wstrace GPU memory tracer.
 *
 * Every function here is safe to call whether or not libwstrace.so is loaded: the calls are
 * resolved once, at first use, through dlsym(RTLD_DEFAULT) and do nothing when the tracer is
 * absent.  A program that includes this header links without libwstrace and runs unchanged.
 *
 * Semantics (see the README and schema/README.md):
 *  - wstrace_node_push/pop open and close a graph node on the calling thread, exactly like an
 *    NVTX push/pop range; allocations and launches are attributed to the innermost open node.
 *  - wstrace_run_begin/end bracket one execution of the graph; runs with equal shape keys share
 *    a static plan.
 *  - wstrace_estimate_workspace records a Level-1 estimate (made before a kernel exists, from
 *    shapes), wstrace_declare_workspace a Level-2 declaration (made by a created kernel).  A node
 *    is named by the same string as its range; a slot numbers the workspaces of one node.
 *  - wstrace_metadata stores a key/value pair in the trace's meta table (last value wins).
 * Strings are copied before the call returns.
 */
#ifndef WSTRACE_H
#define WSTRACE_H

#include <stdint.h>

#ifndef _GNU_SOURCE
#define WSTRACE_UNDEF_GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#ifdef WSTRACE_UNDEF_GNU_SOURCE
#undef _GNU_SOURCE
#undef WSTRACE_UNDEF_GNU_SOURCE
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define WSTRACE_API_VERSION 1

/* The table libwstrace.so hands out through wstrace_get_api_v1().  Append only. */
struct wstrace_api_v1 {
    uint32_t size; /* sizeof(struct wstrace_api_v1) of the library */
    void (*node_push)(const char *name);
    void (*node_pop)(void);
    void (*run_begin)(const char *shape_key);
    void (*run_end)(void);
    void (*estimate_workspace)(const char *node, uint32_t slot, uint64_t bytes);
    void (*declare_workspace)(const char *node, uint32_t slot, uint64_t bytes, uint64_t alignment);
    void (*metadata)(const char *key, const char *value);
};

typedef const struct wstrace_api_v1 *(*wstrace_get_api_v1_fn)(void);

static inline const struct wstrace_api_v1 *wstrace__api(void)
{
    /* 0: not looked up yet, 1: absent, otherwise the table. Benign to look up twice. */
    static const struct wstrace_api_v1 *cached;
    const struct wstrace_api_v1 *api = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
    if (!api) {
        void *sym = dlsym(RTLD_DEFAULT, "wstrace_get_api_v1");
        api = sym ? ((wstrace_get_api_v1_fn)sym)() : (const struct wstrace_api_v1 *)0;
        if (!api)
            api = (const struct wstrace_api_v1 *)(uintptr_t)1;
        __atomic_store_n(&cached, api, __ATOMIC_RELEASE);
    }
    return api == (const struct wstrace_api_v1 *)(uintptr_t)1 ? (const struct wstrace_api_v1 *)0 : api;
}

/* Non-zero when libwstrace.so is loaded and recording. */
static inline int wstrace_active(void) { return wstrace__api() != 0; }

static inline void wstrace_node_push(const char *name)
{
    const struct wstrace_api_v1 *a = wstrace__api();
    if (a && name)
        a->node_push(name);
}

static inline void wstrace_node_pop(void)
{
    const struct wstrace_api_v1 *a = wstrace__api();
    if (a)
        a->node_pop();
}

static inline void wstrace_run_begin(const char *shape_key)
{
    const struct wstrace_api_v1 *a = wstrace__api();
    if (a)
        a->run_begin(shape_key ? shape_key : "");
}

static inline void wstrace_run_end(void)
{
    const struct wstrace_api_v1 *a = wstrace__api();
    if (a)
        a->run_end();
}

/* Level 1: bytes estimated for (node, slot) before the kernel exists. */
static inline void wstrace_estimate_workspace(const char *node, uint32_t slot, uint64_t bytes)
{
    const struct wstrace_api_v1 *a = wstrace__api();
    if (a && node)
        a->estimate_workspace(node, slot, bytes);
}

/* Level 2: bytes (and alignment, 0 = default) the created kernel declares for (node, slot). */
static inline void wstrace_declare_workspace(const char *node, uint32_t slot, uint64_t bytes, uint64_t alignment)
{
    const struct wstrace_api_v1 *a = wstrace__api();
    if (a && node)
        a->declare_workspace(node, slot, bytes, alignment);
}

static inline void wstrace_metadata(const char *key, const char *value)
{
    const struct wstrace_api_v1 *a = wstrace__api();
    if (a && key)
        a->metadata(key, value ? value : "");
}

#ifdef __cplusplus
}
#endif
#endif /* WSTRACE_H */
