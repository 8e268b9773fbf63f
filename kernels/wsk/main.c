/*
 * main.c - wsk: runs the bundled decoder workload for a number of runs and prints a checksum of
 * its outputs.  Level-1 estimates are declared once at start-up, Level-2 declarations on the first
 * run of each shape key (see graph.c), every run is bracketed by wstrace_run_begin/end.  Under
 * --alloc plan a run of a planned shape key takes its plan's blocks; under --alloc pattern the
 * first run of each key makes the key's plan in process (pattern.c) and later runs take it.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <nvtx3/nvToolsExt.h>

#include "wsk.h"
#include "wstrace.h"

struct outputs {
    int32_t *ids, *tokens, *prev_tokens;
    float *logits;
    uint32_t prev_batch;
    uint64_t checksum; /* FNV-1a over tokens and logits of every run */
    FILE *dump;
};

static void fnv1a(uint64_t *h, const void *data, uint64_t len)
{
    const unsigned char *p = data;
    for (uint64_t i = 0; i < len; i++)
        *h = (*h ^ p[i]) * 0x100000001b3ull;
}

/* Run 0 starts from tokens drawn from the seed; later runs continue each sequence from its
 * previous token (sequences new in a larger batch start from the seed again).  A prompt of seq
 * tokens ends with that token; the ones before it are drawn from the seed and their position. */
static void next_ids(struct outputs *o, const struct wsk_config *c, uint32_t batch, uint32_t seq)
{
    for (uint32_t b = 0; b < batch; b++) {
        uint64_t st = c->seed ^ (0x5bd1e995ull * (b + 1));
        int32_t *row = o->ids + (uint64_t)b * seq;
        row[seq - 1] = b < o->prev_batch ? o->prev_tokens[b] : (int32_t)(wsk_rand(&st) % c->vocab);
        for (uint32_t i = 0; i + 1 < seq; i++) {
            uint64_t pst = c->seed ^ (0x5bd1e995ull * (b + 1)) ^ (0xc2b2ae3d27d4eb4full * (i + 1));
            row[i] = (int32_t)(wsk_rand(&pst) % c->vocab);
        }
    }
}

static void record_outputs(struct outputs *o, const struct wsk_config *c, uint32_t run, uint32_t batch, const char *key)
{
    uint64_t nlogits = (uint64_t)batch * c->vocab;
    fnv1a(&o->checksum, o->tokens, batch * sizeof(int32_t));
    fnv1a(&o->checksum, o->logits, nlogits * sizeof(float));
    printf("run %" PRIu32 " %s tokens", run, key);
    for (uint32_t b = 0; b < batch && b < 8; b++)
        printf(" %" PRId32, o->tokens[b]);
    printf("%s\n", batch > 8 ? " ..." : "");
    memcpy(o->prev_tokens, o->tokens, batch * sizeof(int32_t));
    o->prev_batch = batch;
    if (!o->dump)
        return;
    for (uint32_t b = 0; b < batch; b++)
        fprintf(o->dump, "token %" PRIu32 " %" PRIu32 " %" PRId32 "\n", run, b, o->tokens[b]);
    for (uint64_t i = 0; i < nlogits; i++) /* %.9g: the float exactly */
        fprintf(o->dump, "logit %" PRIu32 " %" PRIu64 " %" PRIu64 " %.9g\n", run, i / c->vocab, i % c->vocab,
                (double)o->logits[i]);
}

static int outputs_open(struct outputs *o, const struct wsk_config *c, struct wsk_error *err)
{
    uint64_t maxb = wsk_max_batch(c);
    *o = (struct outputs){.checksum = 0xcbf29ce484222325ull};
    /* + 1: an empty batch still gets buffers (calloc(0) may return NULL) */
    o->ids = calloc(maxb * wsk_max_seq(c) + 1, sizeof *o->ids);
    o->tokens = calloc(maxb + 1, sizeof *o->tokens);
    o->prev_tokens = calloc(maxb + 1, sizeof *o->prev_tokens);
    o->logits = calloc(maxb * c->vocab + 1, sizeof *o->logits);
    if (!o->ids || !o->tokens || !o->prev_tokens || !o->logits)
        return wsk_fail(err, WSK_EXIT_FAIL, "wsk: out of host memory");
    if (c->dump_path && !(o->dump = fopen(c->dump_path, "w")))
        return wsk_fail(err, WSK_EXIT_FAIL, "wsk: cannot write %s", c->dump_path);
    if (o->dump)
        fputs("# wsk dump v1: token RUN SEQ TOKEN / logit RUN SEQ INDEX VALUE\n", o->dump);
    return 0;
}

static int outputs_close(struct outputs *o, const struct wsk_config *c, struct wsk_error *err)
{
    int rc = 0;
    if (o->dump && fclose(o->dump) != 0)
        rc = wsk_fail(err, WSK_EXIT_FAIL, "wsk: cannot write %s", c->dump_path);
    free(o->ids);
    free(o->tokens);
    free(o->prev_tokens);
    free(o->logits);
    return rc;
}

/* Shape keys already run: their kernels exist and have declared Level 2. */
struct shape_seen {
    uint32_t (*v)[3];
    uint32_t n, cap;
};

/* 1: the first run of this shape, 0: not, -1: out of host memory. */
static int first_of_shape(struct shape_seen *s, uint32_t batch, uint32_t seq, uint32_t kv)
{
    for (uint32_t i = 0; i < s->n; i++)
        if (s->v[i][0] == batch && s->v[i][1] == seq && s->v[i][2] == kv)
            return 0;
    if (s->n == s->cap) {
        uint32_t cap = s->cap ? 2 * s->cap : 16;
        uint32_t(*grown)[3] = realloc(s->v, cap * sizeof *grown);
        if (!grown)
            return -1;
        s->v = grown;
        s->cap = cap;
    }
    s->v[s->n][0] = batch;
    s->v[s->n][1] = seq;
    s->v[s->n++][2] = kv;
    return 1;
}

static const char *const alloc_names[] = {"dynamic", "async", "plan", "arena", "pattern"};

/* Decoding keys keep their form ("batch=1,kv=96"); a prompt says how many tokens it has. */
static void shape_key(const struct wsk_config *c, uint32_t run, char *key, size_t size)
{
    uint32_t b, s, l;
    wsk_run_shape(c, run, &b, &s, &l);
    if (s == 1)
        snprintf(key, size, "batch=%" PRIu32 ",kv=%" PRIu32, b, l);
    else
        snprintf(key, size, "batch=%" PRIu32 ",seq=%" PRIu32 ",kv=%" PRIu32, b, s, l);
}

/* A plan for none of this workload's shape keys was made for another program: refuse it. */
static int check_plans_match(const struct wsk_config *c, struct wsk_plans *plans, struct wsk_error *err)
{
    char key[64];
    for (uint32_t r = 0; r < c->runs; r++) {
        shape_key(c, r, key, sizeof key);
        if (wsk_plans_find(plans, key))
            return 0;
    }
    shape_key(c, 0, key, sizeof key);
    return wsk_fail(err, WSK_EXIT_USAGE,
                    "wsk: --plan %s has no plan for this workload's shape "
                    "keys (e.g. %s)",
                    c->plan_path, key);
}

/* The one backing buffer, as large as the largest plan known: allocated at the first planned
 * run (outside every run) and shared by the plans of all shape keys.  Under --alloc pattern a key
 * planned later may need more: the buffer is then replaced, between runs. */
static int ensure_backing(struct wsk_exec *x, struct wsk_plans *all, uint64_t need)
{
    if (all->backing && all->backing_bytes >= need)
        return 0;
    for (uint32_t i = 0; i < all->n; i++)
        need = all->plans[i].peak > need ? all->plans[i].peak : need;
    if (all->backing)
        cudaFree(all->backing);
    all->backing = NULL;
    all->backing_bytes = need;
    cudaError_t rc = cudaMalloc(&all->backing, all->backing_bytes);
    x->alloc->runtime_allocs++;
    if (rc == cudaErrorMemoryAllocation)
        return wsk_fail(x->err, WSK_EXIT_FAIL,
                        "wsk: out of device memory allocating the planned "
                        "buffer (%" PRIu64 " bytes)",
                        all->backing_bytes);
    if (rc != cudaSuccess)
        return wsk_fail(x->err, WSK_EXIT_FAIL, "wsk: cudaMalloc of the planned buffer failed: %s",
                        cudaGetErrorString(rc));
    return 0;
}

/* The plan of this run, with the backing buffer ready: NULL when the key has none (yet). */
static int plan_for_run(struct wsk_exec *x, const char *key, const struct wsk_plan **out)
{
    struct wsk_plans *all = x->plans;
    struct wsk_plan *p = all ? wsk_plans_find(all, key) : NULL;
    *out = p;
    if (!p || p->peak == 0)
        return 0;
    if (ensure_backing(x, all, p->peak) != 0)
        return -1;
    p->backing = all->backing;
    return 0;
}

/* --alloc pattern: a key's first run records its requests; at its end the pattern is planned. */
static int pattern_run_end(struct wsk_exec *x, const char *key)
{
    struct wsk_pattern_result r;
    x->alloc->rec = NULL;
    if (wsk_pattern_build(x->rec, key, x->plans, &r, x->err) != 0)
        return -1;
    x->pattern_runs++;
    printf("pattern %s: %" PRIu32 " blocks in %" PRIu64 " bytes (load bound %" PRIu64 "%s)\n", key, r.blocks, r.peak,
           r.load_bound, r.optimal ? ", optimal" : "");
    return 0;
}

/* Marks the run's role in the trace: it makes its key's pattern, or runs under it. */
static void pattern_run_begin(struct wsk_exec *x, const struct wsk_plan *plan)
{
    if (x->cfg->alloc != WSK_ALLOC_PATTERN)
        return;
    nvtxMarkA(plan ? "wsk.pattern=planned" : "wsk.pattern=generate");
    if (!plan) {
        wsk_pattern_begin(x->rec);
        x->alloc->rec = x->rec;
    }
}

static int run_one(struct wsk_exec *x, struct outputs *o, uint32_t r, const char *key)
{
    const struct wsk_plan *plan;
    if (plan_for_run(x, key, &plan) != 0)
        return -1;
    next_ids(o, x->cfg, x->batch, x->seq);
    wstrace_run_begin(key);
    pattern_run_begin(x, plan);
    ws_run_begin(x->alloc, plan);
    int rc = wsk_run_graph(x);
    if (rc == 0 && x->alloc->rec)
        rc = pattern_run_end(x, key);
    wstrace_run_end();
    if (rc != 0)
        return -1;
    record_outputs(o, x->cfg, r, x->batch, key);
    return 0;
}

static int run_all(struct wsk_exec *x, struct outputs *o)
{
    const struct wsk_config *c = x->cfg;
    struct shape_seen seen = {0};
    int rc = 0;
    for (uint32_t r = 0; r < c->runs && rc == 0; r++) {
        char key[64];
        wsk_run_shape(c, r, &x->batch, &x->seq, &x->kv_len);
        x->rows = x->batch * x->seq; /* below 2^31: checked with the options */
        int first = first_of_shape(&seen, x->batch, x->seq, x->kv_len);
        if (first < 0) {
            rc = wsk_fail(x->err, WSK_EXIT_FAIL, "wsk: out of host memory");
            break;
        }
        x->declare = first == 1;
        shape_key(c, r, key, sizeof key);
        rc = run_one(x, o, r, key);
    }
    free(seen.v);
    return rc;
}

static void describe(const struct wsk_config *c, const struct wsk_device *dev)
{
    char text[256];
    snprintf(text, sizeof text,
             "%s%s%slayers=%u hidden=%u heads=%u kv_heads=%u head_dim=%u intermediate=%u vocab=%u "
             "max_kv_len=%u runs=%u seed=%" PRIu64 " sm_count=%u",
             c->model ? "model=" : "", c->model ? c->model : "", c->model ? " " : "", c->layers, c->hidden, c->heads,
             c->kv_heads, c->head_dim, c->intermediate, c->vocab, c->max_kv_len, c->runs, c->seed, dev->sm_count);
    printf("wsk: device %s, %s, alloc %s%s, l1 %s\n", c->device == WSK_DEVICE_CUDA ? "cuda" : "sim", text,
           alloc_names[c->alloc], c->nvtx_mem ? " (NVTX memory annotations)" : "",
           c->l1 == WSK_L1_ENVELOPE ? "envelope" : "max-shape");
    wstrace_metadata("wsk.config", text);
    wstrace_metadata("wsk.device", c->device == WSK_DEVICE_CUDA ? "cuda" : "sim");
    wstrace_metadata("wsk.alloc", alloc_names[c->alloc]);
    wstrace_metadata("wsk.l1", c->l1 == WSK_L1_ENVELOPE ? "envelope" : "max-shape");
    if (c->nvtx_mem)
        wstrace_metadata("wsk.nvtx_mem", "1");
}

static int device_info(const struct wsk_config *c, struct wsk_device *dev, struct wsk_error *err)
{
    struct cudaDeviceProp prop;
    dev->sm_count = c->sm_count;
    if (dev->sm_count)
        return 0;
    cudaError_t rc = cudaGetDeviceProperties(&prop, 0);
    if (rc != cudaSuccess)
        return wsk_fail(err, WSK_EXIT_FAIL, "wsk: cudaGetDeviceProperties: %s", cudaGetErrorString(rc));
    dev->sm_count = prop.multiProcessorCount > 0 ? (uint32_t)prop.multiProcessorCount : 1;
    return 0;
}

static void finish(const struct outputs *o, const struct ws_allocator *a, const struct wsk_config *c,
                   uint32_t pattern_runs, bool ok)
{
    char text[32];
    if (!ok)
        return;
    if (c->alloc == WSK_ALLOC_PATTERN) {
        printf("pattern: %" PRIu32 " generating runs, %" PRIu64 " planned allocations, %" PRIu64 " fallbacks\n",
               pattern_runs, a->planned, a->fallbacks);
        snprintf(text, sizeof text, "%" PRIu32, pattern_runs);
        wstrace_metadata("pattern_runs", text);
    }
    if (c->alloc == WSK_ALLOC_PLAN || c->alloc == WSK_ALLOC_PATTERN) {
        if (c->alloc == WSK_ALLOC_PLAN)
            printf("plan: %" PRIu64 " planned allocations, %" PRIu64 " fallbacks\n", a->planned, a->fallbacks);
        snprintf(text, sizeof text, "%" PRIu64, a->planned);
        wstrace_metadata("planned_allocations", text);
        snprintf(text, sizeof text, "%" PRIu64, a->fallbacks);
        wstrace_metadata("plan_fallbacks", text);
    }
    if (c->alloc == WSK_ALLOC_ARENA) {
        const struct wsk_arena_stats *st = &a->arena.stats;
        printf("arena: %" PRIu32 " regions, %" PRIu64 " bytes reserved, peak in use %" PRIu64 " bytes\n", st->regions,
               st->reserved_bytes, st->peak_in_use_bytes);
        snprintf(text, sizeof text, "%" PRIu64, st->reserved_bytes);
        wstrace_metadata("arena_reserved_bytes", text);
        snprintf(text, sizeof text, "%" PRIu32, st->regions);
        wstrace_metadata("arena_regions", text);
        snprintf(text, sizeof text, "%" PRIu64, st->peak_in_use_bytes);
        wstrace_metadata("arena_peak_in_use_bytes", text);
    }
    snprintf(text, sizeof text, "%016" PRIx64, o->checksum);
    wstrace_metadata("output_checksum", text);
    printf("allocation calls %" PRIu64 "\n", a->runtime_allocs);
    printf("checksum %s\n", text);
}

static int session(struct wsk_config *c, struct wsk_error *err)
{
    struct wsk_exec x = {.cfg = c, .err = err, .kernels = wsk_kernels_for(c->device)};
    struct ws_allocator alloc;
    struct wsk_model model = {0};
    struct outputs out = {0};
    struct wsk_plans plans = {0};
    struct wsk_tactics tactics = {0};
    struct wsk_pattern_rec rec = {0};
    cudaStream_t stream = NULL;
    int rc = 0;
    if (c->plan_path)
        rc = wsk_plans_load(c->plan_path, &plans, err) || check_plans_match(c, &plans, err);
    if (rc == 0)
        rc = device_info(c, &x.dev, err);
    if (rc == 0 && cudaStreamCreate(&stream) != cudaSuccess)
        rc = wsk_fail(err, WSK_EXIT_FAIL, "wsk: cudaStreamCreate failed");
    ws_init(&alloc, c->alloc, c->arena_initial_chunk, stream, err);
    if (c->nvtx_mem)
        wsk_arena_annotate(&alloc.arena, "wsk.arena");
    if (rc == 0) {
        describe(c, &x.dev);
        rc = outputs_open(&out, c, err);
    }
    if (rc == 0) {
        /* Session initialisation is a node of its own, outside every run: the weights and KV cache
         * it allocates are classified persistent rather than unattributed. */
        nvtxRangePushA(WSK_NODE_INIT_NAME);
        rc = wsk_model_create(&model, c, &alloc);
        nvtxRangePop();
    }
    if (rc == 0) {
        printf("persistent bytes %" PRIu64 "\n", model.persistent_bytes);
        wsk_declare_level1(c, &x.dev);
        x = (struct wsk_exec){.cfg = c,
                              .model = &model,
                              .kernels = x.kernels,
                              .dev = x.dev,
                              .alloc = &alloc,
                              .stream = stream,
                              .err = err,
                              .ids_host = out.ids,
                              .logits_host = out.logits,
                              .tokens_host = out.tokens,
                              .plans = c->plan_path || c->alloc == WSK_ALLOC_PATTERN ? &plans : NULL,
                              .tactics = &tactics,
                              .rec = &rec};
        rc = run_all(&x, &out);
    }
    ws_release_all(&alloc);
    wsk_plans_free(&plans);
    wsk_tactics_free(&tactics);
    wsk_pattern_free_all(&rec);
    wsk_model_destroy(&model);
    if (stream)
        cudaStreamDestroy(stream);
    finish(&out, &alloc, c, x.pattern_runs, rc == 0);
    rc |= outputs_close(&out, c, err);
    return rc;
}

int main(int argc, char **argv)
{
    struct wsk_config cfg;
    struct wsk_error err = {0};
    bool help = false;
    /* getopt_long permutes argv; a re-execution needs the original order. */
    char **original = calloc((size_t)argc + 1, sizeof *original);
    if (!original)
        return WSK_EXIT_FAIL;
    memcpy(original, argv, (size_t)argc * sizeof *argv);
    if (wsk_parse_options(argc, argv, &cfg, &help, &err) == 0 && help) {
        wsk_usage(stdout);
        free(original);
        return WSK_EXIT_OK;
    }
    if (!err.exit_code && wsk_select_device(&cfg, original, &err) == 0)
        session(&cfg, &err);
    free(original);
    fflush(stdout);
    if (err.exit_code)
        fprintf(stderr, "%s\n", err.msg);
    return err.exit_code;
}
