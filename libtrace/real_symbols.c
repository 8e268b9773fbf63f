/*
 * Where a hook finds the function it forwards to.
 *
 * Most programs link cudart (and libcuda) into the global scope, where dlsym(RTLD_NEXT) finds the
 * real definition.  Libraries that open CUDA themselves (Python's ctypes, loader stubs, cuBLAS
 * fetching the driver through cuGetProcAddress) hold definitions the global scope cannot see;
 * the code that hands such a definition out in place of its hook (the loader lookup and the
 * driver's entry-point lookups) registers it here first, so the hook forwards to exactly the
 * function the program would have called.
 *
 * The registry is small and written rarely (once per distinct symbol handed out); readers scan it
 * without a lock, writers append under one.  A name registered twice keeps its first definition:
 * one process holds one copy of each CUDA library.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "blind_spots.h"
#include "graph_hooks.h"
#include "tracer.h"

#define WS_REAL_REGISTRY_SIZE 1024
#define WS_REAL_NAME_MAX 64

static struct {
    char name[WS_REAL_NAME_MAX];
    void *real;
} registry[WS_REAL_REGISTRY_SIZE];
static unsigned registered; /* entries below this index are complete (release/acquire) */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

static void *registry_find(const char *name, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (strcmp(registry[i].name, name) == 0)
            return registry[i].real;
    return NULL;
}

void ws_real_register(const char *name, void *real)
{
    if (!name || !real || strlen(name) >= WS_REAL_NAME_MAX)
        return;
    pthread_mutex_lock(&registry_lock);
    unsigned n = __atomic_load_n(&registered, __ATOMIC_RELAXED);
    if (!registry_find(name, n) && n < WS_REAL_REGISTRY_SIZE) {
        strcpy(registry[n].name, name);
        registry[n].real = real;
        __atomic_store_n(&registered, n + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&registry_lock);
}

void *ws_real_registered(const char *name)
{
    return registry_find(name, __atomic_load_n(&registered, __ATOMIC_ACQUIRE));
}

static uint64_t resolutions;

uint64_t ws_hooks_reached(void) { return __atomic_load_n(&resolutions, __ATOMIC_RELAXED); }

void *ws_real_symbol(const char *name)
{
    __atomic_fetch_add(&resolutions, 1, __ATOMIC_RELAXED);
    void *p = ws_real_registered(name);
    if (p)
        return p;
    p = dlsym(RTLD_NEXT, name);
    if (p)
        return p;
    /* A CUDA library opened with RTLD_LOCAL by a plugin is not in the global scope. */
    static const char *const libraries[] = {"libcudart.so.13", "libcuda.so.1"};
    for (size_t i = 0; i < sizeof libraries / sizeof libraries[0] && !p; i++) {
        void *h = dlopen(libraries[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            p = dlsym(h, name);
            dlclose(h);
        }
    }
    return p;
}
