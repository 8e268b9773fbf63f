/*
 * wsk.h - internals of the wsk workload runner: configuration, errors, the allocator through
 * which every activation and workspace allocation goes, the model and the graph executor.
 */
#ifndef WSK_H
#define WSK_H

#include <stdarg.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "wskernels.h"

#define WSK_MAX_LIST  16  /* values of --batch / --seq-len / --kv-len */
#define WSK_NODE_NAME 128 /* longest node name */

enum wsk_alloc_mode { WSK_ALLOC_DYNAMIC, WSK_ALLOC_ASYNC, WSK_ALLOC_PLAN, WSK_ALLOC_ARENA, WSK_ALLOC_PATTERN };

/* Options that a --model preset sets unless given explicitly (bits of wsk_config.given). */
enum wsk_given {
    WSK_GIVEN_HIDDEN = 1u << 0,
    WSK_GIVEN_HEADS = 1u << 1,
    WSK_GIVEN_HEAD_DIM = 1u << 2,
    WSK_GIVEN_INTERMEDIATE = 1u << 3,
    WSK_GIVEN_VOCAB = 1u << 4,
    WSK_GIVEN_KV_LEN = 1u << 5,
    WSK_GIVEN_MAX_KV = 1u << 6,
};
enum wsk_device_kind { WSK_DEVICE_AUTO, WSK_DEVICE_SIM, WSK_DEVICE_CUDA };

struct wsk_config {
    uint32_t layers, hidden, heads, kv_heads, head_dim, intermediate, vocab;
    uint32_t batch[WSK_MAX_LIST], nbatch;     /* cycled over the runs */
    uint32_t seq_len[WSK_MAX_LIST], nseq_len; /* query tokens per sequence, cycled over the runs */
    uint32_t kv_len[WSK_MAX_LIST], nkv_len;   /* cycled over the runs */
    uint32_t max_kv_len, runs, sm_count;      /* sm_count 0: from the device */
    uint64_t seed;
    enum wsk_l1_policy l1;
    enum wsk_alloc_mode alloc;
    enum wsk_device_kind device;
    const char *dump_path;
    const char *plan_path;        /* --plan: trace holding the plans for --alloc plan */
    uint64_t arena_initial_chunk; /* --arena-initial-chunk: first region of --alloc arena */
    bool arena_initial_chunk_set;
    bool nvtx_mem;     /* --nvtx-mem: the arena annotates its regions and chunks (NVTX memory extension) */
    bool kv_heads_set; /* --kv-heads given; otherwise kv_heads = heads */
    const char *model; /* --model: the preset applied, NULL: none */
    uint32_t given;    /* enum wsk_given: options given on the command line */
};

/* Exit statuses, as everywhere in wstrace: 1 failure while running, 2 bad input or usage. */
enum { WSK_EXIT_OK = 0, WSK_EXIT_FAIL = 1, WSK_EXIT_USAGE = 2 };

/* The first failure of an operation; main prints msg as one line and exits with exit_code. */
struct wsk_error {
    int exit_code; /* 0: no error */
    char msg[512];
};
int wsk_fail(struct wsk_error *err, int exit_code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Options (options.c). Returns 0, or fills err (exit 2) / sets *help. */
int wsk_parse_options(int argc, char **argv, struct wsk_config *cfg, bool *help, struct wsk_error *err);
void wsk_usage(FILE *out);
uint32_t wsk_max_batch(const struct wsk_config *cfg);
uint32_t wsk_max_seq(const struct wsk_config *cfg);
/* The shape of run r: its batch, query tokens and KV length. */
void wsk_run_shape(const struct wsk_config *cfg, uint32_t run, uint32_t *batch, uint32_t *seq, uint32_t *kv_len);

/* Model presets (presets.c): real model families' shapes. */
struct wsk_preset {
    const char *name, *source;
    uint32_t hidden, heads, kv_heads, head_dim, intermediate, vocab, layers; /* layers: of the real model */
};
const struct wsk_preset *wsk_preset_find(const char *name);
/* The names, comma-separated, for messages and --help. */
const char *wsk_preset_names(void);
/* Sets the preset's shapes on every option cfg->given does not name. */
void wsk_preset_apply(const struct wsk_preset *p, struct wsk_config *cfg);

/* Device selection (device.c): may re-execute the program on the simulated runtime. */
int wsk_select_device(struct wsk_config *cfg, char **argv, struct wsk_error *err);
const struct wsk_kernel_table *wsk_kernels_for(enum wsk_device_kind kind);

/*
 * The allocator.  Every activation and workspace allocation of a run goes through ws_alloc and
 * ws_free, in the same order on every device, so that the k-th allocation of a run (seq) can be
 * matched with the k-th block of a static plan.  Persistent buffers (weights, KV cache) are not
 * part of a run and use ws_alloc_persistent.
 */
enum ws_class { WS_ACTIVATION = 0, WS_WORKSPACE = 1 };

/* Static plans read from a trace (plan.c). */
struct wsk_plan_block {
    uint64_t ordinal; /* the ordinal-th allocation of a run (0-based) */
    enum ws_class cls;
    uint32_t slot;
    uint64_t bytes, offset;
    char node[WSK_NODE_NAME];
};

struct wsk_plan {
    char shape_key[64];
    uint64_t peak;                 /* size of the backing buffer */
    struct wsk_plan_block *blocks; /* sorted by ordinal */
    uint32_t nblocks;
    void *backing; /* the shared buffer below, once a run of this key has used it */
};

/* Runs execute one after another, so every shape key's plan lives in one backing buffer per
 * device, as large as the largest plan: allocated at the first planned run, outside every run. */
struct wsk_plans {
    struct wsk_plan *plans;
    uint32_t n;
    void *backing;
    uint64_t backing_bytes;
};

/* Refuses (exit 2) a trace without plans, of a newer schema, or with a block outside its buffer. */
int wsk_plans_load(const char *path, struct wsk_plans *out, struct wsk_error *err);
void wsk_plans_free(struct wsk_plans *plans);
struct wsk_plan *wsk_plans_find(struct wsk_plans *plans, const char *shape_key);
const struct wsk_plan_block *wsk_plan_block(const struct wsk_plan *p, uint64_t ordinal);

/*
 * The caching arena of --alloc arena (arena.c), modelled on ONNX Runtime's BFCArena with its
 * defaults (rules in kernels/README.md).  Regions come from a callback and go back through
 * another one, so the chunk logic runs without a device (tests drive it with fake addresses).
 */
#define WSK_ARENA_ALIGN             256ull         /* requests are rounded up to this */
#define WSK_ARENA_INITIAL_CHUNK     (1ull << 20)   /* default size of the first region */
#define WSK_ARENA_MAX_INITIAL_CHUNK (1ull << 48)   /* largest --arena-initial-chunk */
#define WSK_ARENA_MAX_DEAD_BYTES    (128ull << 20) /* split a chunk when the rest is this large */
#define WSK_ARENA_ENOHOST           (-1)           /* wsk_arena_alloc: out of host memory (chunk bookkeeping) */
#define WSK_ARENA_ETOOBIG           (-2)           /* wsk_arena_alloc: request too large to round or double */

/* Obtains a region of exactly bytes bytes at *base: returns 0, or a non-zero status (e.g. a
 * cudaError_t) that wsk_arena_alloc hands back unchanged. */
typedef int (*wsk_region_obtain_fn)(void *ctx, uint64_t bytes, void **base);
typedef void (*wsk_region_release_fn)(void *ctx, void *base, uint64_t bytes);

struct wsk_arena_chunk {
    uintptr_t addr;
    uint64_t size;
    int32_t prev, next; /* neighbours by address in the same region, -1: none; next also links
                           unused entries */
    bool in_use;        /* handed out */
    bool valid;         /* entry holds a chunk (else it is on the unused list) */
};

struct wsk_arena_region {
    uintptr_t base;
    uint64_t bytes;
    void *heap; /* its NVTX heap when the arena annotates itself */
};

struct wsk_arena_stats {
    uint32_t regions;        /* regions obtained (never returned while the arena lives) */
    uint64_t reserved_bytes; /* their total size */
    uint64_t in_use_bytes;   /* sizes of the chunks handed out now (rounded, unsplit rests) */
    uint64_t peak_in_use_bytes;
};

struct wsk_arena {
    uint64_t initial_chunk;
    wsk_region_obtain_fn obtain;
    void *ctx;
    struct wsk_arena_region *regions; /* in the order obtained */
    uint32_t nregions, cap_regions;
    struct wsk_arena_chunk *chunks;
    uint32_t nchunks, cap_chunks;
    int32_t unused;               /* first reusable chunk entry, -1: none */
    struct wsk_arena_stats stats; /* kept by wsk_arena_destroy */
    void *nvtx_domain;            /* set by wsk_arena_annotate: NVTX memory annotations on */
};

void wsk_arena_init(struct wsk_arena *ar, uint64_t initial_chunk, wsk_region_obtain_fn obtain, void *ctx);
/* bytes >= 1.  Returns 0 with *out set, WSK_ARENA_ENOHOST, WSK_ARENA_ETOOBIG, or the non-zero
 * status of a failed region request (the arena is unchanged then). */
int wsk_arena_alloc(struct wsk_arena *ar, uint64_t bytes, void **out);
/* Returns 0, or -1 when ptr is not a chunk handed out by this arena. */
int wsk_arena_free(struct wsk_arena *ar, void *ptr);
/* The size of the chunk holding ptr as handed out, 0 when ptr is not one (for tests). */
uint64_t wsk_arena_chunk_size(const struct wsk_arena *ar, void *ptr);
/* Gives every region to release (if not NULL) and frees the bookkeeping; stats stay (with
 * nothing in use), and a later request starts from a first region again. */
void wsk_arena_destroy(struct wsk_arena *ar, wsk_region_release_fn release, void *ctx);
/* From now on the arena describes itself through the NVTX memory extension (nvToolsExtMem.h),
 * in the NVTX domain of that name: each region is a sub-allocator heap, each chunk handed out a
 * region of the requested size, as a pooling allocator that annotates itself does. */
void wsk_arena_annotate(struct wsk_arena *ar, const char *domain);

/*
 * --alloc pattern (pattern.c): ONNX Runtime's memory-pattern flow in process.  The first run of a
 * shape key allocates on the fly while the allocator records each request (ordinal, node, class,
 * slot, bytes, the kernel's Level-2 declaration) and its lifetime in events; at the end of the
 * run the planner library lays the blocks out (as `wstrace plan` does from a trace) and the plan
 * is cached for the key; later runs of the key take its blocks as --alloc plan does.
 */
#define WSK_PATTERN_ALIGN 256u      /* block alignment, `wstrace plan`'s default for traces */
#define WSK_PATTERN_WORK  200000ull /* search steps after the greedy layouts: repeatable */

struct wsk_pattern_event {
    uint64_t ordinal;
    enum ws_class cls;
    uint32_t slot;
    uint64_t bytes, block; /* requested; planned block: max(bytes, declared), aligned */
    int64_t start, end;    /* event indices, half-open; end -1: not freed in the run */
    char node[WSK_NODE_NAME];
};

struct wsk_pattern_rec {
    struct wsk_pattern_event *ev;
    uint32_t n, cap;
    int64_t events;                /* allocation and free events of the run so far */
    char decl_node[WSK_NODE_NAME]; /* the last node that declared Level 2, and its slots */
    uint64_t decl_bytes[WSK_MAX_WS_SLOTS];
    bool decl_set[WSK_MAX_WS_SLOTS];
    bool out_of_memory;
};

/* What building a pattern found, for the run's report line. */
struct wsk_pattern_result {
    uint32_t blocks;
    uint64_t peak, load_bound;
    bool optimal;
};

void wsk_pattern_begin(struct wsk_pattern_rec *r);
/* Returns the event's index, or -1 when host memory ran out (the run goes on; no pattern then). */
int32_t wsk_pattern_alloc(struct wsk_pattern_rec *r, uint64_t ordinal, const char *node, enum ws_class cls,
                          uint32_t slot, uint64_t bytes);
void wsk_pattern_free(struct wsk_pattern_rec *r, int32_t index);
void wsk_pattern_declared(struct wsk_pattern_rec *r, const char *node, uint32_t slot, uint64_t bytes);
/* Plans the recorded run and appends it to plans as the plan of shape_key. */
int wsk_pattern_build(struct wsk_pattern_rec *r, const char *shape_key, struct wsk_plans *plans,
                      struct wsk_pattern_result *out, struct wsk_error *err);
void wsk_pattern_free_all(struct wsk_pattern_rec *r);

struct ws_live {
    void *ptr;
    uint64_t bytes;
    bool planned;  /* inside a plan's backing buffer: nothing to free */
    int32_t event; /* its wsk_pattern_event while recording, -1: none */
};

struct ws_allocator {
    enum wsk_alloc_mode mode;
    cudaStream_t stream;
    uint64_t seq;                /* allocations so far in the current run (the plan's ordinal) */
    const struct wsk_plan *plan; /* current run's plan, NULL: allocate on the fly */
    uint64_t runtime_allocs;     /* allocation calls that reached the CUDA runtime (all runs) */
    uint64_t planned;            /* allocations served from a plan's backing buffer */
    uint64_t fallbacks;          /* planned runs' allocations without a fitting block */
    struct ws_live *live;        /* run allocations not yet freed */
    uint32_t nlive, cap;
    struct wsk_arena arena;      /* --alloc arena */
    struct wsk_pattern_rec *rec; /* --alloc pattern: recording this run, NULL: not */
    struct wsk_error *err;
};

/* arena_initial_chunk: size of the arena's first region (--alloc arena only). */
void ws_init(struct ws_allocator *a, enum wsk_alloc_mode mode, uint64_t arena_initial_chunk, cudaStream_t stream,
             struct wsk_error *err);
/* plan: the static plan of this run's shape key, or NULL. */
void ws_run_begin(struct ws_allocator *a, const struct wsk_plan *plan);
int ws_alloc(struct ws_allocator *a, const char *node, enum ws_class cls, uint32_t slot, uint64_t bytes, void **out);
/* A kernel of node declared Level-2 bytes for slot (what a pattern sizes the slot's block by). */
void ws_declared(struct ws_allocator *a, const char *node, uint32_t slot, uint64_t bytes);
int ws_free(struct ws_allocator *a, void *ptr);
/* After the last run: frees whatever a failed run left allocated, the live table itself, and
 * the arena's regions (their stats stay in a->arena.stats). */
void ws_release_all(struct ws_allocator *a);
/* Weights and caches: cudaMalloc'd once before the runs, freed at the end. */
int ws_alloc_persistent(struct ws_allocator *a, const char *node, const char *what, uint64_t bytes, void **out);

/* Node names, as an exporter names them (graph.c). */
enum wsk_layer_node {
    WSK_NODE_LN1,
    WSK_NODE_Q_PROJ,
    WSK_NODE_K_PROJ,
    WSK_NODE_V_PROJ,
    WSK_NODE_ATTENTION,
    WSK_NODE_O_PROJ,
    WSK_NODE_ATTN_ADD,
    WSK_NODE_LN2,
    WSK_NODE_GATE_PROJ,
    WSK_NODE_UP_PROJ,
    WSK_NODE_SILU_MUL,
    WSK_NODE_DOWN_PROJ,
    WSK_NODE_MLP_ADD,
    WSK_LAYER_NODES
};
#define WSK_NODE_INIT_NAME    "/session/initialize"
#define WSK_NODE_EMBED_NAME   "/model/embed_tokens/Gather"
#define WSK_NODE_NORM_NAME    "/model/norm/SimplifiedLayerNormalization"
#define WSK_NODE_LM_HEAD_NAME "/model/lm_head/MatMulNBits"
#define WSK_NODE_ARGMAX_NAME  "/model/argmax/ArgMax"
/* Fills buf (WSK_NODE_NAME bytes) with e.g. /model/layers.3/self_attn/q_proj/MatMulNBits. */
char *wsk_layer_node_name(char *buf, uint32_t layer, enum wsk_layer_node node);

/* The model (model.c): persistent device buffers generated from the seed. */
struct wsk_qmatrix {
    struct wsk_matmul_attrs attrs;
    uint8_t *w;
    float *scales;
    uint8_t *zp; /* NULL: zero point 8 */
};

struct wsk_layer {
    float *ln1, *ln2;
    struct wsk_qmatrix q, k, v, o, gate, up, down;
    float *k_cache, *v_cache;
};

struct wsk_model {
    float *embed, *norm;
    struct wsk_qmatrix lm_head;
    struct wsk_layer *layers;
    int32_t *ids, *tokens; /* graph input (max_batch * max_seq) and output (max_batch) */
    void **persistent;     /* every persistent buffer, freed at the end */
    uint32_t npersistent, cap_persistent;
    uint64_t persistent_bytes;
};

int wsk_model_create(struct wsk_model *m, const struct wsk_config *cfg, struct ws_allocator *a);
void wsk_model_destroy(struct wsk_model *m);
uint64_t wsk_rand(uint64_t *state);

/* The matmuls' tactic cache (tactics.c). */
struct wsk_tactic_entry {
    struct wsk_matmul_attrs attrs;
    uint64_t M;
    struct wsk_matmul_kernel kernel;
};

struct wsk_tactics {
    struct wsk_tactic_entry *v;
    uint32_t n, cap;
};

/* true and *out: the tactic cached for this shape; false: a miss. */
bool wsk_tactics_find(const struct wsk_tactics *t, const struct wsk_matmul_attrs *a, uint64_t M,
                      struct wsk_matmul_kernel *out);
int wsk_tactics_add(struct wsk_tactics *t, const struct wsk_matmul_attrs *a, uint64_t M,
                    const struct wsk_matmul_kernel *k);
void wsk_tactics_free(struct wsk_tactics *t);

/* One run of the graph (graph.c). */
struct wsk_exec {
    const struct wsk_config *cfg;
    const struct wsk_model *model;
    const struct wsk_kernel_table *kernels;
    struct wsk_device dev;
    struct ws_allocator *alloc;
    struct wsk_plans *plans;     /* --alloc plan: from the trace; --alloc pattern: made in process */
    struct wsk_tactics *tactics; /* lives as long as the session */
    struct wsk_pattern_rec *rec; /* --alloc pattern: the recorder of generating runs */
    uint32_t pattern_runs;       /* --alloc pattern: runs that generated their key's pattern */
    cudaStream_t stream;
    struct wsk_error *err;
    /* current run */
    uint32_t batch, seq, kv_len;
    uint32_t rows;           /* batch * seq: the tokens of the run, rows of every layer activation */
    bool declare;            /* first run of its shape key: kernels are created and declare Level 2 */
    const int32_t *ids_host; /* rows input tokens, uploaded by the embedding node */
    float *logits_host;      /* batch*vocab, filled by the argmax node */
    int32_t *tokens_host;
};

void wsk_declare_level1(const struct wsk_config *cfg, const struct wsk_device *dev);
int wsk_run_graph(struct wsk_exec *x);

#endif /* WSK_H */
