/*
 * The body every driver hook's traced half shares (libtrace/hooks_driver.c, hooks_driver_graph.c):
 * WS_FORWARD of graph_hooks.h with the driver's result type.
 */
#ifndef WS_DRIVER_HOOKS_H
#define WS_DRIVER_HOOKS_H

#include <cuda.h>

#include "graph_hooks.h"
#include "tracer.h"

/* What a hook answers when the real function cannot be found. */
#define DRV_MISSING CUDA_ERROR_NOT_FOUND

/* The body of a driver hook's traced half (WS_HOOK, graph_hooks.h): as WS_FORWARD, with the
 * driver's result type. */
#define DRV_FORWARD(name, args, RECORD)                                                                                \
    do {                                                                                                               \
        __typeof__(&name) fn = __atomic_load_n(&name##_real_, __ATOMIC_ACQUIRE);                                       \
        int first_ = fn == NULL;                                                                                       \
        if (__builtin_expect(first_, 0) && !(fn = WS_REAL_FN_AT_(name, name##_real_)))                                 \
            return DRV_MISSING;                                                                                        \
        if (!ws_hook_enter_traced(first_))                                                                             \
            return fn args;                                                                                            \
        CUresult rc = fn args;                                                                                         \
        int saved = *ws_errno();                                                                                       \
        RECORD;                                                                                                        \
        ws_hook_leave(saved);                                                                                          \
        return rc;                                                                                                     \
    } while (0)

#endif
