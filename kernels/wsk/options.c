/*
 * options.c - wsk's command line: getopt_long, strict number parsing and the size checks that
 * turn impossible configurations into one clear line and exit status 2.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "wsk.h"

int wsk_fail(struct wsk_error *err, int exit_code, const char *fmt, ...)
{
    if (err->exit_code) /* keep the first failure: it is the cause */
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->exit_code = exit_code;
    return -1;
}

void wsk_usage(FILE *out)
{
    fputs("usage: wsk [options]\n"
          "Runs a decoder-style model (quantized matmuls, flash attention) on the simulated\n"
          "device or a GPU, decoding or prefilling, declaring Level-1 and Level-2 workspace\n"
          "through wstrace.h.\n"
          "  --model NAME        shapes of a real model family: hidden size, heads, KV heads,\n"
          "                      head size, MLP size and vocabulary (the options below that are\n"
          "                      given override it; layers stay --layers)\n"
          "  --layers N          decoder layers (2)\n"
          "  --hidden N          hidden size (256)\n"
          "  --heads N           attention (query) heads (4)\n"
          "  --kv-heads N        key/value heads, dividing --heads (default: --heads);\n"
          "                      fewer than --heads is grouped-query attention\n"
          "  --head-dim N        size of one head, at most 256 (64)\n"
          "  --intermediate N    MLP size (512)\n"
          "  --vocab N           vocabulary size (1024)\n"
          "  --batch N[,N...]    sequences per run, cycled over the runs; 0 runs the graph\n"
          "                      on empty tensors (1)\n"
          "  --seq-len N[,N...]  query tokens per sequence and run, cycled over the runs: 1\n"
          "                      decodes one token, more prefill a prompt (1)\n"
          "  --kv-len N[,N...]   KV positions attended per run (the new tokens are the last\n"
          "                      --seq-len of them), cycled over the runs (96; with a\n"
          "                      --seq-len above 1: the --seq-len values, a first prompt)\n"
          "  --max-kv-len N      KV cache capacity, the maximum shape for Level 1 (128, or the\n"
          "                      largest --kv-len when larger)\n"
          "  --runs N            executions of the graph (3)\n"
          "  --seed N            seed of weights, cache and first tokens (1)\n"
          "  --sm-count N        SM count for the heuristics (default: the device's)\n"
          "  --l1 POLICY         Level-1 policy: max-shape (default) or envelope\n"
          "  --alloc MODE        dynamic (cudaMalloc/cudaFree, default), async\n"
          "                      (cudaMallocAsync/cudaFreeAsync on the stream), plan (runs of\n"
          "                      a shape key planned in --plan take blocks of one buffer) or\n"
          "                      arena (a caching BFC arena like ONNX Runtime's default CUDA\n"
          "                      allocator: regions kept until the end) or pattern (ONNX\n"
          "                      Runtime's memory pattern: the first run of each shape key\n"
          "                      allocates on the fly and is planned in process, later runs\n"
          "                      of the key take blocks of one buffer)\n"
          "  --plan TRACE        trace holding plans written by `wstrace plan` (--alloc plan)\n"
          "  --arena-initial-chunk BYTES\n"
          "                      first region of --alloc arena, a multiple of 256 (1048576)\n"
          "  --nvtx-mem          with --alloc arena: the arena annotates itself with NVTX's\n"
          "                      memory extension (each region a heap, each buffer a region\n"
          "                      of it), so a trace sees every buffer as the dynamic mode does\n"
          "  --device DEV        sim (simulated device) or cuda (default: cuda when a GPU is\n"
          "                      present, else sim)\n"
          "  --dump FILE         write tokens and logits of every run as text\n"
          "                      (format in kernels/README.md)\n"
          "  --help              this text\n"
          "Exit status: 0 success, 1 failure while running (e.g. out of device memory),\n"
          "2 bad options or impossible sizes.\n",
          out);
}

static int parse_u64(const char *text, uint64_t max, uint64_t *out)
{
    char *end;
    if (!text || !*text || *text == '-' || *text == '+' || *text == ' ')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

static int parse_u32(const char *opt, const char *text, uint32_t *out, struct wsk_error *err)
{
    uint64_t v;
    if (parse_u64(text, UINT32_MAX, &v) != 0)
        return wsk_fail(err, WSK_EXIT_USAGE, "wsk: %s: '%s' is not a number from 0 to %" PRIu32, opt, text, UINT32_MAX);
    *out = (uint32_t)v;
    return 0;
}

static int parse_list(const char *opt, const char *text, uint32_t *vals, uint32_t *n, struct wsk_error *err)
{
    char buf[256];
    if (strlen(text) >= sizeof buf)
        return wsk_fail(err, WSK_EXIT_USAGE, "wsk: %s: list too long", opt);
    if (!*text || text[0] == ',' || text[strlen(text) - 1] == ',' || strstr(text, ",,"))
        return wsk_fail(err, WSK_EXIT_USAGE, "wsk: %s: '%s' is not a list of numbers", opt, text);
    strcpy(buf, text);
    *n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*n == WSK_MAX_LIST)
            return wsk_fail(err, WSK_EXIT_USAGE, "wsk: %s: at most %d values", opt, WSK_MAX_LIST);
        if (parse_u32(opt, tok, &vals[(*n)++], err) != 0)
            return -1;
    }
    if (*n == 0)
        return wsk_fail(err, WSK_EXIT_USAGE, "wsk: %s: '%s' is not a list of numbers", opt, text);
    return 0;
}

static void set_defaults(struct wsk_config *c)
{
    memset(c, 0, sizeof *c);
    c->layers = 2;
    c->hidden = 256;
    c->heads = 4;
    c->head_dim = 64;
    c->intermediate = 512;
    c->vocab = 1024;
    c->batch[0] = 1;
    c->nbatch = 1;
    c->seq_len[0] = 1;
    c->nseq_len = 1;
    c->kv_len[0] = 96;
    c->nkv_len = 1;
    c->max_kv_len = 128;
    c->runs = 3;
    c->seed = 1;
    c->l1 = WSK_L1_MAX_SHAPE;
    c->alloc = WSK_ALLOC_DYNAMIC;
    c->device = WSK_DEVICE_AUTO;
    c->arena_initial_chunk = WSK_ARENA_INITIAL_CHUNK;
}

enum {
    OPT_HEAD_DIM = 256, /* above every short option character */
    OPT_MAX_KV,
    OPT_SM_COUNT,
    OPT_L1,
    OPT_ALLOC,
    OPT_DEVICE,
    OPT_DUMP,
    OPT_PLAN,
    OPT_ARENA_CHUNK,
    OPT_NVTX_MEM,
    OPT_KV_HEADS,
    OPT_SEQ_LEN,
    OPT_MODEL
};

static const struct option long_options[] = {
    {"layers", required_argument, 0, 'l'},
    {"hidden", required_argument, 0, 'H'},
    {"heads", required_argument, 0, 'n'},
    {"kv-heads", required_argument, 0, OPT_KV_HEADS},
    {"head-dim", required_argument, 0, OPT_HEAD_DIM},
    {"intermediate", required_argument, 0, 'i'},
    {"vocab", required_argument, 0, 'v'},
    {"batch", required_argument, 0, 'b'},
    {"seq-len", required_argument, 0, OPT_SEQ_LEN},
    {"kv-len", required_argument, 0, 'k'},
    {"max-kv-len", required_argument, 0, OPT_MAX_KV},
    {"runs", required_argument, 0, 'r'},
    {"seed", required_argument, 0, 's'},
    {"sm-count", required_argument, 0, OPT_SM_COUNT},
    {"l1", required_argument, 0, OPT_L1},
    {"alloc", required_argument, 0, OPT_ALLOC},
    {"device", required_argument, 0, OPT_DEVICE},
    {"dump", required_argument, 0, OPT_DUMP},
    {"plan", required_argument, 0, OPT_PLAN},
    {"arena-initial-chunk", required_argument, 0, OPT_ARENA_CHUNK},
    {"nvtx-mem", no_argument, 0, OPT_NVTX_MEM},
    {"model", required_argument, 0, OPT_MODEL},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

static int parse_choice(const char *opt, const char *text, const char *const *names, int n, int *out,
                        struct wsk_error *err)
{
    for (int i = 0; i < n; i++)
        if (strcmp(text, names[i]) == 0)
            return *out = i, 0;
    return wsk_fail(err, WSK_EXIT_USAGE, "wsk: %s: unknown value '%s'", opt, text);
}

/* The shape options a --model preset fills in unless they are given. */
static int apply_shape_option(int c, const char *arg, struct wsk_config *cfg, struct wsk_error *err)
{
    switch (c) {
    case 'H': cfg->given |= WSK_GIVEN_HIDDEN; return parse_u32("--hidden", arg, &cfg->hidden, err);
    case 'n': cfg->given |= WSK_GIVEN_HEADS; return parse_u32("--heads", arg, &cfg->heads, err);
    case OPT_KV_HEADS: cfg->kv_heads_set = true; return parse_u32("--kv-heads", arg, &cfg->kv_heads, err);
    case OPT_HEAD_DIM: cfg->given |= WSK_GIVEN_HEAD_DIM; return parse_u32("--head-dim", arg, &cfg->head_dim, err);
    case 'i': cfg->given |= WSK_GIVEN_INTERMEDIATE; return parse_u32("--intermediate", arg, &cfg->intermediate, err);
    case 'v': cfg->given |= WSK_GIVEN_VOCAB; return parse_u32("--vocab", arg, &cfg->vocab, err);
    case OPT_MODEL:
        if (!wsk_preset_find(arg))
            return wsk_fail(err, WSK_EXIT_USAGE, "wsk: --model: unknown model '%s' (known: %s)", arg,
                            wsk_preset_names());
        cfg->model = arg;
        return 0;
    default: return 1; /* not a shape option */
    }
}

static int apply_option(int c, const char *arg, struct wsk_config *cfg, struct wsk_error *err)
{
    static const char *const l1_names[] = {"max-shape", "envelope"};
    static const char *const alloc_names[] = {"dynamic", "async", "plan", "arena", "pattern"};
    static const char *const device_names[] = {"auto", "sim", "cuda"};
    int choice = 0, rc = apply_shape_option(c, arg, cfg, err);
    uint64_t seed;
    if (rc <= 0)
        return rc;
    switch (c) {
    case 'l': return parse_u32("--layers", arg, &cfg->layers, err);
    case 'b': return parse_list("--batch", arg, cfg->batch, &cfg->nbatch, err);
    case OPT_SEQ_LEN: return parse_list("--seq-len", arg, cfg->seq_len, &cfg->nseq_len, err);
    case 'k': cfg->given |= WSK_GIVEN_KV_LEN; return parse_list("--kv-len", arg, cfg->kv_len, &cfg->nkv_len, err);
    case OPT_MAX_KV: cfg->given |= WSK_GIVEN_MAX_KV; return parse_u32("--max-kv-len", arg, &cfg->max_kv_len, err);
    case 'r': return parse_u32("--runs", arg, &cfg->runs, err);
    case OPT_SM_COUNT: return parse_u32("--sm-count", arg, &cfg->sm_count, err);
    case 's':
        if (parse_u64(arg, UINT64_MAX, &seed) != 0)
            return wsk_fail(err, WSK_EXIT_USAGE, "wsk: --seed: '%s' is not a number", arg);
        cfg->seed = seed;
        return 0;
    case OPT_L1:
        rc = parse_choice("--l1", arg, l1_names, 2, &choice, err);
        cfg->l1 = (enum wsk_l1_policy)choice;
        return rc;
    case OPT_ALLOC:
        rc = parse_choice("--alloc", arg, alloc_names, 5, &choice, err);
        cfg->alloc = (enum wsk_alloc_mode)choice;
        return rc;
    case OPT_DEVICE:
        rc = parse_choice("--device", arg, device_names, 3, &choice, err);
        cfg->device = (enum wsk_device_kind)choice;
        return rc;
    case OPT_DUMP: cfg->dump_path = arg; return 0;
    case OPT_PLAN: cfg->plan_path = arg; return 0;
    case OPT_ARENA_CHUNK:
        /* a multiple of 256 keeps every chunk aligned; the bound keeps doubling in 64 bits */
        if (parse_u64(arg, WSK_ARENA_MAX_INITIAL_CHUNK, &cfg->arena_initial_chunk) != 0 ||
            cfg->arena_initial_chunk == 0 || cfg->arena_initial_chunk % WSK_ARENA_ALIGN != 0)
            return wsk_fail(err, WSK_EXIT_USAGE,
                            "wsk: --arena-initial-chunk: '%s' is not a "
                            "multiple of 256 from 256 to %llu",
                            arg, (unsigned long long)WSK_ARENA_MAX_INITIAL_CHUNK);
        cfg->arena_initial_chunk_set = true;
        return 0;
    case OPT_NVTX_MEM: cfg->nvtx_mem = true; return 0;
    default: return wsk_fail(err, WSK_EXIT_USAGE, "wsk: unknown option (see wsk --help)");
    }
}

static int check_positive(const char *opt, uint64_t v, struct wsk_error *err)
{
    return v ? 0 : wsk_fail(err, WSK_EXIT_USAGE, "wsk: %s must be at least 1", opt);
}

static uint32_t list_max(const uint32_t *v, uint32_t n)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}

uint32_t wsk_max_batch(const struct wsk_config *cfg) { return list_max(cfg->batch, cfg->nbatch); }

uint32_t wsk_max_seq(const struct wsk_config *cfg) { return list_max(cfg->seq_len, cfg->nseq_len); }

void wsk_run_shape(const struct wsk_config *cfg, uint32_t run, uint32_t *batch, uint32_t *seq, uint32_t *kv_len)
{
    *batch = cfg->batch[run % cfg->nbatch];
    *seq = cfg->seq_len[run % cfg->nseq_len];
    *kv_len = cfg->kv_len[run % cfg->nkv_len];
}

/* What is not given follows from what is: a prompt without --kv-len is a first prompt (as many
 * KV positions as tokens), and the cache holds at least the longest KV length. */
static void derive_defaults(struct wsk_config *c)
{
    const struct wsk_preset *p = c->model ? wsk_preset_find(c->model) : NULL;
    if (p)
        wsk_preset_apply(p, c);
    if (!c->kv_heads_set)
        c->kv_heads = c->heads;
    if (!(c->given & WSK_GIVEN_KV_LEN) && wsk_max_seq(c) > 1) {
        memcpy(c->kv_len, c->seq_len, sizeof c->kv_len);
        c->nkv_len = c->nseq_len;
    }
    uint32_t longest = list_max(c->kv_len, c->nkv_len);
    if (!(c->given & WSK_GIVEN_MAX_KV) && longest > c->max_kv_len)
        c->max_kv_len = longest;
}

/* Each run's new tokens fit in its KV length; the pairs repeat after nseq_len * nkv_len runs. */
static int check_run_shapes(const struct wsk_config *c, struct wsk_error *err)
{
    for (uint32_t i = 0; i < c->nseq_len; i++)
        if (check_positive("--seq-len", c->seq_len[i], err))
            return -1;
    uint32_t period = c->nseq_len * c->nkv_len;
    for (uint32_t r = 0; r < c->runs && r < period; r++) {
        uint32_t b, s, l;
        wsk_run_shape(c, r, &b, &s, &l);
        if (s > l)
            return wsk_fail(err, WSK_EXIT_USAGE,
                            "wsk: run %" PRIu32 ": --seq-len %" PRIu32 " is larger than its --kv-len %" PRIu32
                            " (the new tokens are the last positions attended)",
                            r, s, l);
    }
    return 0;
}

/* Sizes the kernels cannot take, or whose byte counts would not fit: rejected up front. */
static int check_sizes(const struct wsk_config *c, struct wsk_error *err)
{
    const struct {
        const char *name;
        uint64_t v;
    } dims[] = {
        {"--layers", c->layers},
        {"--hidden", c->hidden},
        {"--heads", c->heads},
        {"--head-dim", c->head_dim},
        {"--intermediate", c->intermediate},
        {"--vocab", c->vocab},
        {"--max-kv-len", c->max_kv_len},
        {"--runs", c->runs},
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (check_positive(dims[i].name, dims[i].v, err))
            return -1;
    for (uint32_t i = 0; i < c->nkv_len; i++) {
        if (check_positive("--kv-len", c->kv_len[i], err))
            return -1;
        if (c->kv_len[i] > c->max_kv_len)
            return wsk_fail(err, WSK_EXIT_USAGE, "wsk: --kv-len %" PRIu32 " is larger than --max-kv-len %" PRIu32,
                            c->kv_len[i], c->max_kv_len);
    }
    if ((c->alloc == WSK_ALLOC_PLAN) != (c->plan_path != NULL))
        return wsk_fail(err, WSK_EXIT_USAGE, "wsk: --alloc plan and --plan TRACE go together");
    if (c->arena_initial_chunk_set && c->alloc != WSK_ALLOC_ARENA)
        return wsk_fail(err, WSK_EXIT_USAGE, "wsk: --arena-initial-chunk needs --alloc arena");
    if (c->nvtx_mem && c->alloc != WSK_ALLOC_ARENA)
        return wsk_fail(err, WSK_EXIT_USAGE, "wsk: --nvtx-mem needs --alloc arena");
    if (check_run_shapes(c, err) != 0)
        return -1;
    if (c->kv_heads == 0 || c->heads % c->kv_heads != 0)
        return wsk_fail(err, WSK_EXIT_USAGE,
                        "wsk: --kv-heads %" PRIu32 " must be at least 1 and divide --heads %" PRIu32, c->kv_heads,
                        c->heads);
    if (c->head_dim > WSK_ATTN_MAX_HEAD_DIM)
        return wsk_fail(err, WSK_EXIT_USAGE, "wsk: --head-dim must be at most %u", WSK_ATTN_MAX_HEAD_DIM);
    if (wsk_max_batch(c) > 65535) /* a grid dimension of the kernels */
        return wsk_fail(err, WSK_EXIT_USAGE, "wsk: --batch must be at most 65535");
    if (c->vocab > INT32_MAX)
        return wsk_fail(err, WSK_EXIT_USAGE, "wsk: --vocab must be at most %d", INT32_MAX);
    /* The largest buffers: the KV cache, the embedding table and any activation row block. */
    uint64_t attn, cache, table, rows, t, tokens = (uint64_t)wsk_max_batch(c) * wsk_max_seq(c);
    uint64_t widest = c->hidden > c->intermediate ? c->hidden : c->intermediate;
    widest = widest > c->vocab ? widest : c->vocab;
    if (__builtin_mul_overflow((uint64_t)c->heads, c->head_dim, &attn) || attn > UINT32_MAX ||
        __builtin_mul_overflow(attn, c->max_kv_len, &t) ||
        __builtin_mul_overflow(t, (uint64_t)wsk_max_batch(c) * 2 * sizeof(float), &cache) ||
        __builtin_mul_overflow((uint64_t)c->vocab, (uint64_t)c->hidden * sizeof(float), &table) ||
        __builtin_mul_overflow(widest > attn ? widest : attn, tokens * sizeof(float) * WSK_SPLITK_MAX, &rows) ||
        cache > SIZE_MAX / 2 || table > SIZE_MAX / 2 || rows > SIZE_MAX / 2)
        return wsk_fail(err, WSK_EXIT_USAGE, "wsk: sizes too large: buffers would overflow");
    if ((uint64_t)wsk_max_batch(c) * c->heads > INT32_MAX) /* attention's grid */
        return wsk_fail(err, WSK_EXIT_USAGE, "wsk: --batch times --heads must be below 2^31");
    if (tokens * c->heads > INT32_MAX) /* the prefill kernels' grid */
        return wsk_fail(err, WSK_EXIT_USAGE, "wsk: --batch times --seq-len times --heads must be below 2^31");
    return 0;
}

int wsk_parse_options(int argc, char **argv, struct wsk_config *cfg, bool *help, struct wsk_error *err)
{
    set_defaults(cfg);
    *help = false;
    opterr = 0; /* our own one-line messages */
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "", long_options, NULL)) != -1) {
        if (c == 'h') {
            *help = true;
            return 0;
        }
        if (c == '?' || c == ':') {
            const char *bad = argv[optind - 1];
            return wsk_fail(err, WSK_EXIT_USAGE, "wsk: bad option '%s' (see wsk --help)", bad);
        }
        if (apply_option(c, optarg, cfg, err) != 0)
            return -1;
    }
    if (optind < argc)
        return wsk_fail(err, WSK_EXIT_USAGE, "wsk: unexpected argument '%s'", argv[optind]);
    derive_defaults(cfg);
    return check_sizes(cfg, err);
}
