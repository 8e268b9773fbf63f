/*
 * What the graph, capture, array and pool hooks (hooks_graph.c, hooks_memory.c) share with each
 * other and with the allocation and launch hooks of hooks_cuda.c.
 *
 * Stream capture.  A call made on a stream that captures is not executed: it becomes a node of the
 * capture's graph.  The hooks cannot tell from the call alone, so while any capture is under way
 * (ws_captures_active counts the captures the begin and end hooks saw) a stream-ordered hook asks
 * the runtime whether its stream captures, and if so writes a CAPTURED record just before its own.
 * Streams that joined a capture through an event are seen the same way: the runtime answers for
 * them too.  With no capture under way the check is one load.
 */
#ifndef WS_GRAPH_HOOKS_H
#define WS_GRAPH_HOOKS_H

#include <cuda_runtime_api.h>

#include "tracer.h"


/* The real definition of a CUDA function (real_symbols.c): the one registered for its name, else
 * the next one after this library, else one in an already loaded cudart or libcuda (opened with
 * RTLD_LOCAL by a plugin).  NULL when there is none. */
void *ws_real_symbol(const char *name);
/* Register the definition a lookup found for `name` before handing out its hook instead; the
 * first registration of a name wins.  ws_real_registered() answers it (NULL when none). */
void ws_real_register(const char *name, void *real);
void *ws_real_registered(const char *name);

/* The real function `name`, resolved once per call site. */
#define WS_REAL_FN(name)                                                                                               \
    ({                                                                                                                 \
        static __typeof__(&name) real_fn_;                                                                             \
        WS_REAL_FN_AT_(name, real_fn_);                                                                                \
    })
/* (WS_REAL_FN with the slot named: a WS_HOOK and its traced half share it.) */
#define WS_REAL_FN_AT_(name, slot)                                                                                     \
    ({                                                                                                                 \
        __typeof__(&name) fn_ = __atomic_load_n(&slot, __ATOMIC_ACQUIRE);                                              \
        if (__builtin_expect(!fn_, 0)) {                                                                               \
            fn_ = (__typeof__(&name))ws_real_symbol(#name);                                                            \
            __atomic_store_n(&slot, fn_, __ATOMIC_RELEASE);                                                            \
        }                                                                                                              \
        fn_;                                                                                                           \
    })

/*
 * A hook in two halves.  The exported function `name` is the forwarding test alone: with tracing
 * off and the real function known (in slot), it jumps there; else it jumps to the traced half, the
 * body that follows the macro, kept out of line so that the registers and locals of recording are
 * paid only when recording.  WS_HOOK keeps the real function in name##_real_, where WS_FORWARD (and
 * the driver's DRV_FORWARD) look for it.
 *
 * On x86-64 and aarch64 the exported function is a stub in assembly (WS_HOOK_ENTRY_ASM_), emitted
 * by name##_entry_ (never called: it only carries the stub, whose operands give the addresses of
 * ws_enabled, the slot and the traced half).  The stub touches no argument register, no stack and
 * no errno: the real function or the traced half receives the arguments exactly as the caller
 * passed them, struct-by-value and stack arguments included, and returns to the caller itself.
 * Untraced it is six instructions (x86-64: compare, branch, load, test, branch, jump), whatever
 * the signature; a C function would copy the arguments it passes on the stack before its tail
 * jump.  Elsewhere (or built with WS_HOOK_C_ENTRY defined) the exported function is the same test
 * in C.
 */
/* ws_enabled as the stubs read it: a symbol of this library, addressed relative to the code, and
 * compared as 32 bits. */
extern int ws_enabled __attribute__((visibility("hidden")));
_Static_assert(sizeof ws_enabled == 4, "the hook entries compare ws_enabled as 32 bits");

#define WS_HOOK_STR2_(x) #x
#define WS_HOOK_STR_(x)  WS_HOOK_STR2_(x)

/* The stub is written inside name##_entry_, whose own frame description is open there: it is
 * closed before the stub's and opened again after it (name##_entry_ itself never runs). */
#ifdef __GCC_HAVE_DWARF2_CFI_ASM
#define WS_HOOK_CFI_(directive) "    " directive "\n"
#else
#define WS_HOOK_CFI_(directive) ""
#endif

#if defined(WS_HOOK_C_ENTRY)
/* (the C form everywhere: a build that checks it) */
#elif defined(__x86_64__)
#if defined(__CET__) && (__CET__ & 1)
#define WS_HOOK_LANDING_ "    endbr64\n" /* reached through the PLT's indirect jump */
#else
#define WS_HOOK_LANDING_ ""
#endif
/* %r11: neither an argument register nor preserved across calls. */
// clang-format off
#define WS_HOOK_ENTRY_ASM_(sym)                                                                                        \
    WS_HOOK_CFI_(".cfi_endproc")                                                                                       \
    ".pushsection .text\n"                                                                                             \
    "    .p2align 4\n"                                                                                                 \
    "    .globl " sym "\n"                                                                                             \
    "    .type " sym ", @function\n"                                                                                   \
    sym ":\n"                                                                                                          \
    WS_HOOK_CFI_(".cfi_startproc")                                                                                     \
    WS_HOOK_LANDING_                                                                                                   \
    "    cmpl $0, %c[flag](%%rip)\n"                                                                                   \
    "    jne %c[traced]\n"                                                                                             \
    "    movq %c[slot_](%%rip), %%r11\n"                                                                               \
    "    testq %%r11, %%r11\n"                                                                                         \
    "    jz %c[traced]\n"                                                                                              \
    "    jmp *%%r11\n"                                                                                                 \
    WS_HOOK_CFI_(".cfi_endproc")                                                                                       \
    "    .size " sym ", .-" sym "\n"                                                                                   \
    ".popsection\n"                                                                                                    \
    WS_HOOK_CFI_(".cfi_startproc")
// clang-format on
#elif defined(__aarch64__)
/* x16: the intra-procedure-call scratch register (what a PLT entry uses).  The conditional
 * branches reach the traced half through a `b`, whose range the linker extends when needed.  The
 * slot is read with a plain load, as the trampolines of lookup.c read theirs: a racing reader sees
 * NULL (and takes the traced half, which resolves again) or the function, whose code was mapped
 * before its address was stored. */
// clang-format off
#define WS_HOOK_ENTRY_ASM_(sym)                                                                                        \
    WS_HOOK_CFI_(".cfi_endproc")                                                                                       \
    ".pushsection .text\n"                                                                                             \
    "    .p2align 4\n"                                                                                                 \
    "    .globl " sym "\n"                                                                                             \
    "    .type " sym ", %%function\n"                                                                                  \
    sym ":\n"                                                                                                          \
    WS_HOOK_CFI_(".cfi_startproc")                                                                                     \
    "    adrp x16, %c[flag]\n"                                                                                         \
    "    ldr w16, [x16, :lo12:%c[flag]]\n"                                                                             \
    "    cbnz w16, 1f\n"                                                                                               \
    "    adrp x16, %c[slot_]\n"                                                                                        \
    "    ldr x16, [x16, :lo12:%c[slot_]]\n"                                                                            \
    "    cbz x16, 1f\n"                                                                                                \
    "    br x16\n"                                                                                                     \
    "1:  b %c[traced]\n"                                                                                               \
    WS_HOOK_CFI_(".cfi_endproc")                                                                                       \
    "    .size " sym ", .-" sym "\n"                                                                                   \
    ".popsection\n"                                                                                                    \
    WS_HOOK_CFI_(".cfi_startproc")
// clang-format on
#endif

#ifdef WS_HOOK_ENTRY_ASM_
/* The constraint of an operand that is a symbol's address, printed as its name (%c): "i", which
 * GCC on aarch64 refuses for position-independent code, where it takes "S". */
#if defined(__aarch64__) && !defined(__clang__)
#define WS_HOOK_SYM_ "S"
#else
#define WS_HOOK_SYM_ "i"
#endif
#define WS_HOOK_AT(ret, name, params, args, slot)                                                                      \
    WS_EXPORT ret name params;                                                                                         \
    static __attribute__((noinline, used)) ret name##_traced_ params;                                                  \
    static __attribute__((used)) void name##_entry_(void)                                                              \
    {                                                                                                                  \
        __asm__(WS_HOOK_ENTRY_ASM_(WS_HOOK_STR_(name))::[flag] WS_HOOK_SYM_(&ws_enabled),                              \
                [slot_] WS_HOOK_SYM_(&(slot)), [traced] WS_HOOK_SYM_(name##_traced_));                                 \
    }                                                                                                                  \
    static ret name##_traced_ params
#else
#define WS_HOOK_AT(ret, name, params, args, slot)                                                                      \
    static __attribute__((noinline)) ret name##_traced_ params;                                                        \
    WS_EXPORT ret name params                                                                                          \
    {                                                                                                                  \
        if (ws_forward_only()) {                                                                                       \
            __typeof__(&name) fn_ = __atomic_load_n(&(slot), __ATOMIC_ACQUIRE);                                        \
            if (__builtin_expect(fn_ != NULL, 1))                                                                      \
                return fn_ args;                                                                                       \
        }                                                                                                              \
        return name##_traced_ args;                                                                                    \
    }                                                                                                                  \
    static ret name##_traced_ params
#endif
#define WS_HOOK(ret, name, params, args)                                                                               \
    static ret(*name##_real_) params;                                                                                  \
    WS_HOOK_AT(ret, name, params, args, name##_real_)

/* The body of a hook's traced half (WS_HOOK): forward, then (unless tracing is off or this is the
 * tracer's own call) run RECORD, which sees the result as rc, with errno kept.  A missing real
 * function answers with the runtime's code for a missing symbol. */
#define WS_FORWARD(name, args, RECORD)                                                                                 \
    do {                                                                                                               \
        __typeof__(&name) fn = __atomic_load_n(&name##_real_, __ATOMIC_ACQUIRE);                                       \
        int first_ = fn == NULL;                                                                                       \
        if (__builtin_expect(first_, 0) && !(fn = WS_REAL_FN_AT_(name, name##_real_)))                                 \
            return cudaErrorSharedObjectSymbolNotFound;                                                                \
        if (!ws_hook_enter_traced(first_))                                                                             \
            return fn args;                                                                                            \
        cudaError_t rc = fn args;                                                                                      \
        int saved = *ws_errno();                                                                                       \
        RECORD;                                                                                                        \
        ws_hook_leave(saved);                                                                                          \
        return rc;                                                                                                     \
    } while (0)

/* The end of a hot hook's traced half (hooks_cuda.c, hooks_driver.c).  The general path: the
 * record written by RECORD with errno kept, then rc answered.  When the leaf wrote the record
 * (ws_rec_put, tracer.h): the guard cleared and the status the record's head carries answered,
 * as the hook's result type T. */
#define WS_FINISH_SLOW(rc, RECORD)                                                                                     \
    do {                                                                                                               \
        int saved_ = *ws_errno();                                                                                      \
        RECORD;                                                                                                        \
        ws_hook_leave(saved_);                                                                                         \
        return rc;                                                                                                     \
    } while (0)
#define WS_FINISH_FAST(T, head)                                                                                        \
    do {                                                                                                               \
        ws_self.in_hook = 0;                                                                                           \
        return (T)ws_rec_head_status(head);                                                                            \
    } while (0)

/* A fixed-size record of the calling thread, zeroed, with its type, api, status and time. */
struct ws_rec *ws_rec_begin(uint8_t type, uint8_t api, int32_t status);

/* ---- stream capture (hooks_graph.c) ---- */

extern int ws_captures_active __attribute__((visibility("hidden")));

int ws_capture_note_slow(uint8_t api, const void *stream);

/* Called by a stream-ordered hook after its call succeeded, before it writes its record: 1 when
 * the call was captured (a CAPTURED record now precedes it), else 0. */
static inline int ws_capture_note(uint8_t api, const void *stream)
{
    if (__builtin_expect(__atomic_load_n(&ws_captures_active, __ATOMIC_RELAXED) != 0, 0))
        return ws_capture_note_slow(api, stream);
    return 0;
}

/* cudaGraphLaunch: the record stamped before the call, and the state of the graph allocator
 * after it (written only when it changed). */
void ws_graph_launch_begin(const void *exec);
void ws_graph_memory_sample(uint8_t api);

/* The same for the driver's forms (hooks_driver.c, hooks_driver_graph.c): records tagged with the
 * api they are given, the capture asked about through whichever layer is loaded. */
int ws_capture_of(uint8_t api, const void *stream, unsigned long long *id);
void ws_capture_begin_record(uint8_t api, int rc, const void *stream, int mode, const void *into);
/* After an end of capture: `was` and `id` are what ws_capture_of answered before it. */
void ws_capture_end_record(uint8_t api, int rc, const void *stream, int was, unsigned long long id, const void *graph);
void ws_graph_launch_begin_api(uint8_t api, const void *exec);
void ws_graph_memory_sample_device(uint8_t api, int device);
void ws_graph_destroy_record(uint8_t api, int rc, const void *exec);
/* kernel: a = function, grid and block packed with ws_pack_dim3; else a = whether the node is enabled. */
void ws_graph_node_set_record(uint8_t api, int rc, const void *exec, const void *node, int kernel, uint64_t a,
                              uint64_t grid, uint64_t block, uint64_t smem);
/* Walks a graph, writing one GRAPH_NODE per node in launch order (ws_graph_node_record). */
typedef void (*ws_graph_walker)(const void *graph, uint64_t *records, uint64_t *allocations, int *status);
/* An instantiation or update: GRAPH_EXEC, then (on success) the walk's nodes and GRAPH_END. */
void ws_graph_structure_record(uint8_t api, int rc, const void *exec, const void *graph, unsigned long long flags,
                               ws_graph_walker walk);
/* One GRAPH_NODE record; f as WS_REC_GRAPH_NODE's u1..u5. */
void ws_graph_node_record(uint64_t node, uint32_t type, unsigned depth, const uint64_t f[5]);

/* ---- the driver API (hooks_driver.c) ---- */

/* 1 for an api of the driver's block of enum ws_api. */
static inline int ws_is_driver_api(uint8_t api)
{
    return api >= WS_API_cuMemAlloc_v2 && api <= WS_API_cuIpcCloseMemHandle;
}
/* 1 for an api whose stream 0 is the per-thread default stream (a _ptsz driver form). */
int ws_driver_per_thread_api(uint8_t api);
/* Names a launched CUfunction once per thread (cuFuncGetName): a SYMBOL record. */
void ws_driver_note_function(const void *fn);
/* Forget what was named (a forked child names its kernels again). */
void ws_driver_forget_named_functions(void);
/* The device of the calling thread's current context (ws_self.device when there is none):
 * one load while it is known (hooks_driver.c says until when), else asked of the driver. */
int ws_driver_device_slow(void);
static inline int ws_driver_device(void)
{
    uint32_t d = ws_self.driver_device;
    return __builtin_expect(d != 0, 1) ? (int)(d - 1) : ws_driver_device_slow();
}
/* For a program of the driver API alone: the capture of a stream, and the graph allocator's
 * attribute query (NULL when the driver is not loaded either). */
int ws_driver_capture_of(const void *stream, unsigned long long *id);
void *ws_driver_graph_mem_attribute_fn(void);
void *ws_driver_pool_attribute_fn(void);
void *ws_driver_device_pool_fn(void);

/* ---- memory pools (hooks_memory.c) ---- */

/* The pool cudaMallocAsync draws from on the calling thread's device. */
uint64_t ws_pool_current(void);
/* After a stream-ordered allocation from `pool`: a POOL_STATE record when what it reserves
 * changed since the last one. */
void ws_pool_sample(uint8_t api, uint64_t pool);
/* The POOL records of a pool's creation, destruction, trim or attribute change (either layer's). */
void ws_pool_create_record(uint8_t api, int rc, uint64_t pool, int device, uint64_t max_size);
void ws_pool_destroy_record(uint8_t api, int rc, uint64_t pool);
void ws_pool_change_record(uint8_t api, int rc, uint64_t pool, uint64_t a1, uint64_t a2);
uint64_t ws_pool_attribute_value(int attribute, const void *value);

#endif
