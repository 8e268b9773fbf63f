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
 *    wstrace_declare says more about either: the device, the tactic the declaration was made for
 *    (and whether it came from a tactic cache), and the named regions of a slot that is one
 *    aligned root holding several buffers.
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

/* Where a declaration's tactic came from; the verifier checks each against the declared bytes. */
enum wstrace_tactic_kind {
    WSTRACE_TACTIC_NONE = 0,        /* no tactic information */
    WSTRACE_TACTIC_CACHED = 1,      /* a cached tactic that uses workspace */
    WSTRACE_TACTIC_CACHED_FREE = 2, /* a cached tactic that needs none (e.g. GEMV): declares 0 bytes */
    WSTRACE_TACTIC_MISS = 3,        /* no cached tactic: the conservative (Level-1) size */
};

/* One named buffer inside a slot's root, at an offset from the root's start. */
struct wstrace_region {
    const char *name;
    uint64_t offset, bytes;
};

#define WSTRACE_MAX_REGIONS 64 /* regions recorded per declaration; more are dropped */

/* A Level-1 or Level-2 declaration with everything a verifier can check. */
struct wstrace_workspace {
    uint32_t level; /* 1: estimate before the kernel exists; 2: declaration of the created kernel */
    uint32_t slot;
    const char *node;
    uint64_t bytes, alignment; /* alignment 0: default */
    int32_t device;            /* CUDA device ordinal; -1: any device */
    uint32_t tactic_kind;      /* enum wstrace_tactic_kind */
    const char *tactic;        /* the tactic's name, NULL: none */
    uint32_t nregions;         /* 0: the slot is one plain buffer */
    const struct wstrace_region *regions;
};

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
    void (*declare)(const struct wstrace_workspace *w);
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

/* Either level, with device, tactic and regions.  Against a library older than this header it
 * records what the older calls can: the bytes, slot and alignment. */
static inline void wstrace_declare(const struct wstrace_workspace *w)
{
    const struct wstrace_api_v1 *a = wstrace__api();
    if (!a || !w || !w->node)
        return;
    if (a->size > __builtin_offsetof(struct wstrace_api_v1, declare) && a->declare)
        a->declare(w);
    else if (w->level == 1)
        a->estimate_workspace(w->node, w->slot, w->bytes);
    else
        a->declare_workspace(w->node, w->slot, w->bytes, w->alignment);
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
