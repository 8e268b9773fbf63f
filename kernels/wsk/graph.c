/*
 * graph.c - one run of the decoder graph.  Each node runs inside an NVTX range named as an
 * exporter names it; its output activation is allocated inside it, its inputs are freed inside
 * their last consumer, and its workspace is allocated and freed inside it.  On the first run of
 * a shape key the kernels are "created" and declare their Level-2 workspace: the matmuls with the
 * tactic they were created for (from the tactic cache, or conservatively on a miss), attention as
 * one root with its regions.  A run of seq tokens per sequence has batch * seq rows in every layer
 * activation; the final norm keeps each sequence's last position, so lm_head and argmax see batch
 * rows, decoding or prefilling.
 */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>

#include "wsk.h"
#include "wstrace.h"

#define RMS_EPS 1e-5f

static const char *const layer_suffix[WSK_LAYER_NODES] = {
    [WSK_NODE_LN1] = "input_layernorm/SimplifiedLayerNormalization",
    [WSK_NODE_Q_PROJ] = "self_attn/q_proj/MatMulNBits",
    [WSK_NODE_K_PROJ] = "self_attn/k_proj/MatMulNBits",
    [WSK_NODE_V_PROJ] = "self_attn/v_proj/MatMulNBits",
    [WSK_NODE_ATTENTION] = "self_attn/GroupQueryAttention",
    [WSK_NODE_O_PROJ] = "self_attn/o_proj/MatMulNBits",
    [WSK_NODE_ATTN_ADD] = "attn_residual/Add",
    [WSK_NODE_LN2] = "post_attention_layernorm/SimplifiedLayerNormalization",
    [WSK_NODE_GATE_PROJ] = "mlp/gate_proj/MatMulNBits",
    [WSK_NODE_UP_PROJ] = "mlp/up_proj/MatMulNBits",
    [WSK_NODE_SILU_MUL] = "mlp/act_fn/SiluMul",
    [WSK_NODE_DOWN_PROJ] = "mlp/down_proj/MatMulNBits",
    [WSK_NODE_MLP_ADD] = "mlp_residual/Add",
};

char *wsk_layer_node_name(char *buf, uint32_t layer, enum wsk_layer_node node)
{
    snprintf(buf, WSK_NODE_NAME, "/model/layers.%u/%s", layer, layer_suffix[node]);
    return buf;
}

static uint32_t ceil_div32(uint64_t a, uint64_t b) { return (uint32_t)((a + b - 1) / b); }

/* Grid-stride kernels: enough blocks to cover n, capped (they loop over the rest). */
static dim3 stride_grid(uint64_t n)
{
    uint32_t blocks = ceil_div32(n ? n : 1, WSK_THREADS);
    return (dim3){blocks > 65535 ? 65535 : blocks, 1, 1};
}

static const dim3 threads_1d = {WSK_THREADS, 1, 1};

static int launch(struct wsk_exec *x, const char *node, const void *fn, dim3 grid, dim3 block, void **args)
{
    if (grid.x == 0 || grid.y == 0 || grid.z == 0)
        return 0; /* empty tensors: nothing to launch, as a framework skips such kernels */
    cudaError_t rc = cudaLaunchKernel(fn, grid, block, args, 0, x->stream);
    return rc == cudaSuccess ? 0
                             : wsk_fail(x->err, WSK_EXIT_FAIL, "wsk: kernel launch failed in node %s: %s", node,
                                        cudaGetErrorString(rc));
}

static int new_activation(struct wsk_exec *x, const char *node, uint64_t floats, float **out)
{
    return ws_alloc(x->alloc, node, WS_ACTIVATION, 0, floats * sizeof(float), (void **)out);
}

/* Frees up to three inputs whose last consumer is the current node. */
static int release(struct wsk_exec *x, float *a, float *b, float *c)
{
    int rc = ws_free(x->alloc, a);
    rc |= ws_free(x->alloc, b);
    return rc | ws_free(x->alloc, c);
}

/* The device wsk runs on: its workspace declarations name it. */
#define WSK_DEVICE_ORDINAL 0

/* Level 2 of a created kernel without a tactic choice.  A kernel without workspace declares 0
 * bytes in slot 0, as Level 1 does, so the verifier knows it needs none rather than that its
 * declaration is missing; a root declares its regions. */
static void declare(struct wsk_exec *x, const char *node, const struct wsk_ws *ws, const char *tactic)
{
    if (!x->declare)
        return;
    struct wstrace_region regions[WSK_MAX_WS_REGIONS];
    struct wstrace_workspace w = {
        .level = 2, .node = node, .alignment = WSK_WS_ALIGNMENT, .device = WSK_DEVICE_ORDINAL, .tactic = tactic};
    if (ws->nslots == 0) {
        wstrace_declare(&w);
        ws_declared(x->alloc, node, 0, 0);
    }
    for (uint32_t i = 0; i < ws->nslots; i++) {
        ws_declared(x->alloc, node, i, ws->bytes[i]);
        w.slot = i;
        w.bytes = ws->bytes[i];
        w.nregions = i == 0 ? ws->nregions : 0;
        for (uint32_t r = 0; r < w.nregions; r++)
            regions[r] = (struct wstrace_region){ws->regions[r].name, ws->regions[r].offset, ws->regions[r].bytes};
        w.regions = regions;
        wstrace_declare(&w);
    }
}

/* The Level-1 bytes of a matmul's slot 0 under the configured policy, for at most max_M rows:
 * what a kernel that does not know its tactic yet declares (the conservative size).  0 when
 * Level 1 declares nothing. */
static uint64_t matmul_conservative(const struct wsk_exec *x, const struct wsk_matmul_attrs *a, uint64_t max_M)
{
    struct wsk_ws l1;
    if (wsk_matmul_level1(a, max_M, &x->dev, x->cfg->l1, &l1) != WSK_OK || l1.nslots == 0)
        return 0;
    return l1.bytes[0];
}

static const char *const matmul_tactic_names[] = {
    [WSK_MATMUL_GEMV] = "gemv", [WSK_MATMUL_SPLITK] = "splitk", [WSK_MATMUL_GEMM] = "gemm"};

/* Level 2 of a matmul, tactic-aware: a cached GEMV declares nothing (0 bytes), a cached split-K
 * its partial sums, a cached GEMM its split-K workspace, a cache miss the conservative size; an
 * empty output declares no slot. */
static void declare_matmul(struct wsk_exec *x, const char *node, const struct wsk_matmul_attrs *a, uint64_t M,
                           uint64_t max_M, const struct wsk_matmul_kernel *k, const struct wsk_ws *ws, bool cached)
{
    if (!x->declare || M == 0 || a->N == 0)
        return;
    struct wstrace_workspace w = {
        .level = 2, .node = node, .alignment = WSK_WS_ALIGNMENT, .device = WSK_DEVICE_ORDINAL};
    if (!cached) {
        w.tactic_kind = WSTRACE_TACTIC_MISS;
        w.bytes = matmul_conservative(x, a, max_M);
    } else if (ws->nslots == 0) {
        w.tactic_kind = WSTRACE_TACTIC_CACHED_FREE;
        w.tactic = matmul_tactic_names[k->tactic];
    } else {
        w.tactic_kind = WSTRACE_TACTIC_CACHED;
        w.tactic = matmul_tactic_names[k->tactic];
        w.bytes = ws->bytes[0];
    }
    wstrace_declare(&w);
    ws_declared(x->alloc, node, 0, w.bytes);
}

static int unavailable(struct wsk_exec *x, const char *node)
{
    return wsk_fail(x->err, WSK_EXIT_FAIL, "wsk: workspace of node %s is unavailable", node);
}

/* ---- operators: allocate the output, run, leave inputs to the caller ---- */

static int op_embed(struct wsk_exec *x, const char *node, float **out)
{
    uint32_t M = x->rows, H = x->cfg->hidden;
    const int32_t *ids = x->model->ids;
    const float *table = x->model->embed;
    cudaError_t up = cudaMemcpy(x->model->ids, x->ids_host, (uint64_t)M * sizeof(int32_t), cudaMemcpyHostToDevice);
    if (up != cudaSuccess)
        return wsk_fail(x->err, WSK_EXIT_FAIL, "wsk: node %s: upload of the input ids failed: %s", node,
                        cudaGetErrorString(up));
    if (new_activation(x, node, (uint64_t)M * H, out) != 0)
        return -1;
    void *args[] = {out, &ids, &table, &M, &H};
    return launch(x, node, x->kernels->embed, (dim3){ceil_div32(H, WSK_THREADS), M, 1}, threads_1d, args);
}

static int op_rmsnorm(struct wsk_exec *x, const char *node, const float *in, const float *gamma, float **out)
{
    uint32_t M = x->rows, H = x->cfg->hidden;
    float eps = RMS_EPS;
    if (new_activation(x, node, (uint64_t)M * H, out) != 0)
        return -1;
    void *args[] = {out, &in, &gamma, &M, &H, &eps};
    return launch(x, node, x->kernels->rmsnorm, (dim3){M, 1, 1}, threads_1d, args);
}

/* The final norm of a prompt: only each sequence's last position goes on to lm_head. */
static int op_rmsnorm_last(struct wsk_exec *x, const char *node, const float *in, const float *gamma, float **out)
{
    uint32_t B = x->batch, S = x->seq, H = x->cfg->hidden;
    float eps = RMS_EPS;
    if (new_activation(x, node, (uint64_t)B * H, out) != 0)
        return -1;
    void *args[] = {out, &in, &gamma, &B, &S, &H, &eps};
    return launch(x, node, x->kernels->rmsnorm_last, (dim3){B, 1, 1}, threads_1d, args);
}

static int op_binary(struct wsk_exec *x, const char *node, const void *fn, const float *a, const float *b, uint64_t n,
                     float **out)
{
    if (new_activation(x, node, n, out) != 0)
        return -1;
    void *args[] = {out, &a, &b, &n};
    return launch(x, node, fn, stride_grid(n), threads_1d, args);
}

static int matmul_splitk(struct wsk_exec *x, const char *node, const struct wsk_qmatrix *q, uint32_t M, const float *in,
                         float **out, const struct wsk_matmul_kernel *k, uint64_t ws_bytes)
{
    uint32_t K = (uint32_t)q->attrs.K, N = (uint32_t)q->attrs.N, split = k->split_k;
    float *part;
    if (ws_alloc(x->alloc, node, WS_WORKSPACE, 0, ws_bytes, (void **)&part) != 0)
        return -1;
    void *args[] = {&part, &in, (void *)&q->w, (void *)&q->scales, (void *)&q->zp, &M, &K, &N, &split};
    void *reduce_args[] = {out, &part, &M, &N, &split};
    int rc = launch(x, node, x->kernels->matmul_splitk, (dim3){ceil_div32(N, WSK_MATMUL_TILE_N), M, split},
                    (dim3){WSK_MATMUL_TILE_N, 1, 1}, args);
    if (rc == 0)
        rc = launch(x, node, x->kernels->matmul_reduce, stride_grid((uint64_t)M * N), threads_1d, reduce_args);
    return ws_free(x->alloc, part) | rc;
}

/* The GEMM takes its workspace whatever its K slices (the bound of every tile configuration); with
 * several slices the semaphores in it start at 0. */
static int matmul_gemm(struct wsk_exec *x, const char *node, const struct wsk_qmatrix *q, uint32_t M, const float *in,
                       float **out, const struct wsk_matmul_kernel *k, uint64_t ws_bytes)
{
    uint32_t K = (uint32_t)q->attrs.K, N = (uint32_t)q->attrs.N, split = k->split_k;
    int32_t *sem;
    if (ws_alloc(x->alloc, node, WS_WORKSPACE, 0, ws_bytes, (void **)&sem) != 0)
        return -1;
    cudaError_t zero = split > 1 ? cudaMemsetAsync(sem, 0, ws_bytes, x->stream) : cudaSuccess;
    int rc = zero == cudaSuccess ? 0
                                 : wsk_fail(x->err, WSK_EXIT_FAIL, "wsk: node %s: cudaMemsetAsync failed: %s", node,
                                            cudaGetErrorString(zero));
    void *args[] = {out, &in, (void *)&q->w, (void *)&q->scales, (void *)&q->zp, &sem, &M, &K, &N, &split};
    if (rc == 0)
        rc = launch(x, node, x->kernels->matmul_gemm,
                    (dim3){ceil_div32(N, WSK_GEMM_TILE_N), ceil_div32(M, WSK_GEMM_TILE_M), split}, threads_1d, args);
    return ws_free(x->alloc, sem) | rc;
}

/* The kernel for this shape: from the tactic cache, or created (profiled) and cached. */
static int matmul_kernel(struct wsk_exec *x, const char *node, const struct wsk_qmatrix *q, uint64_t M,
                         struct wsk_matmul_kernel *k, bool *cached)
{
    *cached = wsk_tactics_find(x->tactics, &q->attrs, M, k);
    if (*cached)
        return 0;
    if (wsk_matmul_create(&q->attrs, M, &x->dev, k) != WSK_OK)
        return unavailable(x, node);
    return wsk_tactics_add(x->tactics, &q->attrs, M, k) == 0
               ? 0
               : wsk_fail(x->err, WSK_EXIT_FAIL, "wsk: out of host memory");
}

/* y = x * dequant(W) for M rows; max_M: the most rows this node takes (its Level-1 shape). */
static int op_matmul(struct wsk_exec *x, const char *node, const struct wsk_qmatrix *q, uint32_t M, uint64_t max_M,
                     const float *in, float **out)
{
    uint32_t K = (uint32_t)q->attrs.K, N = (uint32_t)q->attrs.N;
    struct wsk_matmul_kernel k;
    struct wsk_ws ws;
    bool cached;
    if (matmul_kernel(x, node, q, M, &k, &cached) != 0)
        return -1;
    if (wsk_matmul_level2(&q->attrs, &k, M, &ws) != WSK_OK)
        return unavailable(x, node);
    declare_matmul(x, node, &q->attrs, M, max_M, &k, &ws, cached);
    if (new_activation(x, node, (uint64_t)M * N, out) != 0)
        return -1;
    if (k.tactic == WSK_MATMUL_SPLITK && ws.nslots == 1)
        return matmul_splitk(x, node, q, M, in, out, &k, ws.bytes[0]);
    if (k.tactic == WSK_MATMUL_GEMM && ws.nslots == 1)
        return matmul_gemm(x, node, q, M, in, out, &k, ws.bytes[0]);
    void *args[] = {out, &in, (void *)&q->w, (void *)&q->scales, (void *)&q->zp, &M, &K, &N};
    return launch(x, node, x->kernels->matmul_gemv, (dim3){ceil_div32(N, WSK_MATMUL_TILE_N), M, 1},
                  (dim3){WSK_MATMUL_TILE_N, 1, 1}, args);
}

struct attn_io {
    const float *q, *k, *v;
    float *k_cache, *v_cache;
};

/* The buffers of the attention workspace root, at the offsets of its layout. */
struct attn_ws {
    float *softmax_lse, *lse_accum, *out_accum;
    int32_t *seq_lens; /* prefill */
};

static int attn_launches(struct wsk_exec *x, const char *node, const struct attn_io *io, float **out,
                         const struct attn_ws *w, const struct wsk_attn_kernel *k)
{
    uint32_t B = x->batch, heads = x->cfg->heads, kv_heads = x->cfg->kv_heads, D = x->cfg->head_dim, L = x->kv_len,
             max_kv = x->cfg->max_kv_len, pos = L - 1, splits = k->splits, span = k->split_len;
    dim3 block = {128, 1, 1};
    void *append[] = {
        (void *)&io->k_cache, (void *)&io->v_cache, (void *)&io->k, (void *)&io->v, &B, &kv_heads, &D, &pos, &max_kv};
    void *split[] = {out,
                     (void *)&w->softmax_lse,
                     (void *)&w->lse_accum,
                     (void *)&w->out_accum,
                     (void *)&io->q,
                     (void *)&io->k_cache,
                     (void *)&io->v_cache,
                     &B,
                     &heads,
                     &kv_heads,
                     &D,
                     &L,
                     &max_kv,
                     &splits,
                     &span};
    void *combine[] = {out,    (void *)&w->softmax_lse, (void *)&w->lse_accum, (void *)&w->out_accum, &B, &heads, &D,
                       &splits};
    if (launch(x, node, x->kernels->kv_append, (dim3){B * kv_heads, 1, 1}, block, append) != 0 ||
        launch(x, node, x->kernels->attn_split, (dim3){B * heads, splits, 1}, block, split) != 0)
        return -1;
    if (splits > 1)
        return launch(x, node, x->kernels->attn_combine, (dim3){B * heads, 1, 1}, block, combine);
    return 0;
}

/* Prefill: the sequence-length vectors, every new key and value at its position, the causal
 * split pass over batch * heads * seq query rows, and the combine when there are splits. */
static int attn_prefill_launches(struct wsk_exec *x, const char *node, const struct attn_io *io, float **out,
                                 const struct attn_ws *w, const struct wsk_attn_kernel *k)
{
    uint32_t B = x->batch, S = x->seq, heads = x->cfg->heads, kv_heads = x->cfg->kv_heads, D = x->cfg->head_dim,
             L = x->kv_len, max_kv = x->cfg->max_kv_len, splits = k->splits, span = k->split_len;
    uint32_t rows = B * S * heads; /* below 2^31: checked with the options */
    dim3 block = {128, 1, 1};
    void *lens[] = {(void *)&w->seq_lens, &B, &S, &L};
    void *append[] = {(void *)&io->k_cache,
                      (void *)&io->v_cache,
                      (void *)&io->k,
                      (void *)&io->v,
                      (void *)&w->seq_lens,
                      &B,
                      &S,
                      &kv_heads,
                      &D,
                      &max_kv};
    void *split[] = {out,
                     (void *)&w->softmax_lse,
                     (void *)&w->lse_accum,
                     (void *)&w->out_accum,
                     (void *)&io->q,
                     (void *)&io->k_cache,
                     (void *)&io->v_cache,
                     (void *)&w->seq_lens,
                     &B,
                     &S,
                     &heads,
                     &kv_heads,
                     &D,
                     &max_kv,
                     &splits,
                     &span};
    void *combine[] = {
        out, (void *)&w->softmax_lse, (void *)&w->lse_accum, (void *)&w->out_accum, &B, &S, &heads, &D, &splits};
    if (launch(x, node, x->kernels->attn_seqlens, (dim3){ceil_div32(B, 128), 1, 1}, block, lens) != 0 ||
        launch(x, node, x->kernels->kv_append_seq, (dim3){B * S, kv_heads, 1}, block, append) != 0 ||
        launch(x, node, x->kernels->attn_prefill_split, (dim3){rows, splits, 1}, block, split) != 0)
        return -1;
    if (splits > 1)
        return launch(x, node, x->kernels->attn_prefill_combine, (dim3){rows, 1, 1}, block, combine);
    return 0;
}

/* Decoding names its split count, a prompt also says it is one. */
static const char *attn_tactic(const struct wsk_exec *x, const struct wsk_attn_kernel *k, char *buf, size_t len)
{
    snprintf(buf, len, "%ssplits=%u", x->seq > 1 ? "prefill," : "", k->splits);
    return buf;
}

/* The workspace is one allocation, the root of the layout; its buffers are carved out of it at
 * their aligned offsets, exactly as declared. */
static int op_attention(struct wsk_exec *x, const char *node, const struct attn_io *io, float **out)
{
    struct wsk_attn_attrs at = {x->cfg->heads, x->cfg->kv_heads, x->cfg->head_dim};
    struct wsk_attn_kernel k;
    struct wsk_flash_layout l;
    struct wsk_ws ws;
    char tactic[48];
    if (wsk_attn_create_seq(&at, x->batch, x->seq, x->kv_len, &x->dev, &k) != WSK_OK ||
        wsk_attn_layout_seq(&at, &k, x->batch, x->seq, &l) != WSK_OK ||
        wsk_attn_level2_seq(&at, &k, x->batch, x->seq, x->kv_len, &ws) != WSK_OK)
        return unavailable(x, node);
    declare(x, node, &ws, attn_tactic(x, &k, tactic, sizeof tactic));
    char *root = NULL;
    if (new_activation(x, node, (uint64_t)x->rows * at.heads * at.head_dim, out) != 0)
        return -1;
    int rc = ws.nslots == 1 ? ws_alloc(x->alloc, node, WS_WORKSPACE, 0, ws.bytes[0], (void **)&root) : 0;
    struct attn_ws w = {NULL, NULL, NULL, NULL};
    if (root)
        w = (struct attn_ws){(float *)(root + l.lse_offset), (float *)(root + l.lse_accum_offset),
                             (float *)(root + l.out_accum_offset), (int32_t *)(root + l.seq_lens_offset)};
    if (rc == 0)
        rc = x->seq > 1 ? attn_prefill_launches(x, node, io, out, &w, &k) : attn_launches(x, node, io, out, &w, &k);
    return ws_free(x->alloc, root) | rc;
}

static int fetch_outputs(struct wsk_exec *x, const char *node, const float *logits)
{
    cudaError_t rc = cudaStreamSynchronize(x->stream);
    if (rc == cudaSuccess)
        rc = cudaMemcpy(x->logits_host, logits, (uint64_t)x->batch * x->cfg->vocab * sizeof(float),
                        cudaMemcpyDeviceToHost);
    if (rc == cudaSuccess)
        rc = cudaMemcpy(x->tokens_host, x->model->tokens, (uint64_t)x->batch * sizeof(int32_t), cudaMemcpyDeviceToHost);
    return rc == cudaSuccess ? 0
                             : wsk_fail(x->err, WSK_EXIT_FAIL, "wsk: node %s failed: %s", node, cudaGetErrorString(rc));
}

/* Writes the tokens to the persistent output buffer and copies logits and tokens to the host. */
static int op_argmax(struct wsk_exec *x, const char *node, const float *logits)
{
    uint32_t B = x->batch, V = x->cfg->vocab, nblk = (uint32_t)wsk_argmax_nblocks(V);
    struct wsk_ws ws;
    if (wsk_argmax_level2(V, B, &ws) != WSK_OK)
        return unavailable(x, node);
    declare(x, node, &ws, NULL);
    struct wsk_argmax_pair *pairs;
    int32_t *tokens = x->model->tokens;
    if (ws_alloc(x->alloc, node, WS_WORKSPACE, 0, ws.bytes[0], (void **)&pairs) != 0)
        return -1;
    void *pass1[] = {&pairs, &logits, &B, &V};
    void *pass2[] = {&tokens, &pairs, &B, &nblk};
    int rc = launch(x, node, x->kernels->argmax_blocks, (dim3){nblk, B, 1}, threads_1d, pass1);
    if (rc == 0)
        rc = launch(x, node, x->kernels->argmax_final, (dim3){B, 1, 1}, threads_1d, pass2);
    if (rc == 0)
        rc = fetch_outputs(x, node, logits);
    return ws_free(x->alloc, pairs) | rc;
}

/* ---- the graph ---- */

static int embed_node(struct wsk_exec *x, float **out)
{
    nvtxRangePushA(WSK_NODE_EMBED_NAME);
    int rc = op_embed(x, WSK_NODE_EMBED_NAME, out);
    nvtxRangePop();
    return rc;
}

/* Runs one layer on the residual stream *xp (freed here) and replaces it. */
static int layer(struct wsk_exec *x, uint32_t l, float **xp)
{
    const struct wsk_layer *L = &x->model->layers[l];
    const struct wsk_config *c = x->cfg;
    char n[WSK_NODE_NAME];
    float *ln1 = NULL, *q = NULL, *k = NULL, *v = NULL, *att = NULL, *o = NULL, *x2 = NULL, *ln2 = NULL, *g = NULL,
          *u = NULL, *h = NULL, *d = NULL, *x3 = NULL;
    uint32_t M = x->rows;
    uint64_t rows = M, inter = rows * c->intermediate, max_M = (uint64_t)wsk_max_batch(c) * wsk_max_seq(c);
    int rc = 0;
#define NODE(which, body)                                                                                              \
    do {                                                                                                               \
        if (rc != 0)                                                                                                   \
            break;                                                                                                     \
        nvtxRangePushA(wsk_layer_node_name(n, l, which));                                                              \
        rc = (body);                                                                                                   \
        nvtxRangePop();                                                                                                \
    } while (0)
    NODE(WSK_NODE_LN1, op_rmsnorm(x, n, *xp, L->ln1, &ln1));
    NODE(WSK_NODE_Q_PROJ, op_matmul(x, n, &L->q, M, max_M, ln1, &q));
    NODE(WSK_NODE_K_PROJ, op_matmul(x, n, &L->k, M, max_M, ln1, &k));
    NODE(WSK_NODE_V_PROJ, op_matmul(x, n, &L->v, M, max_M, ln1, &v) || release(x, ln1, NULL, NULL));
    struct attn_io io = {q, k, v, L->k_cache, L->v_cache};
    NODE(WSK_NODE_ATTENTION, op_attention(x, n, &io, &att) || release(x, q, k, v));
    NODE(WSK_NODE_O_PROJ, op_matmul(x, n, &L->o, M, max_M, att, &o) || release(x, att, NULL, NULL));
    NODE(WSK_NODE_ATTN_ADD,
         op_binary(x, n, x->kernels->add, *xp, o, rows * c->hidden, &x2) || release(x, *xp, o, NULL));
    if (rc == 0)
        *xp = x2;
    NODE(WSK_NODE_LN2, op_rmsnorm(x, n, x2, L->ln2, &ln2));
    NODE(WSK_NODE_GATE_PROJ, op_matmul(x, n, &L->gate, M, max_M, ln2, &g));
    NODE(WSK_NODE_UP_PROJ, op_matmul(x, n, &L->up, M, max_M, ln2, &u) || release(x, ln2, NULL, NULL));
    NODE(WSK_NODE_SILU_MUL, op_binary(x, n, x->kernels->silu_mul, g, u, inter, &h) || release(x, g, u, NULL));
    NODE(WSK_NODE_DOWN_PROJ, op_matmul(x, n, &L->down, M, max_M, h, &d) || release(x, h, NULL, NULL));
    NODE(WSK_NODE_MLP_ADD, op_binary(x, n, x->kernels->add, x2, d, rows * c->hidden, &x3) || release(x, x2, d, NULL));
#undef NODE
    if (rc == 0)
        *xp = x3;
    return rc ? -1 : 0;
}

static int head(struct wsk_exec *x, float *xs)
{
    float *xn = NULL, *logits = NULL;
    nvtxRangePushA(WSK_NODE_NORM_NAME);
    int rc = (x->seq > 1 ? op_rmsnorm_last(x, WSK_NODE_NORM_NAME, xs, x->model->norm, &xn)
                         : op_rmsnorm(x, WSK_NODE_NORM_NAME, xs, x->model->norm, &xn)) ||
             release(x, xs, NULL, NULL);
    nvtxRangePop();
    if (rc == 0) {
        nvtxRangePushA(WSK_NODE_LM_HEAD_NAME);
        rc = op_matmul(x, WSK_NODE_LM_HEAD_NAME, &x->model->lm_head, x->batch, wsk_max_batch(x->cfg), xn, &logits) ||
             release(x, xn, NULL, NULL);
        nvtxRangePop();
    }
    if (rc == 0) {
        nvtxRangePushA(WSK_NODE_ARGMAX_NAME);
        rc = op_argmax(x, WSK_NODE_ARGMAX_NAME, logits) || release(x, logits, NULL, NULL);
        nvtxRangePop();
    }
    return rc ? -1 : 0;
}

int wsk_run_graph(struct wsk_exec *x)
{
    float *xs = NULL;
    if (embed_node(x, &xs) != 0)
        return -1;
    for (uint32_t l = 0; l < x->cfg->layers; l++)
        if (layer(x, l, &xs) != 0)
            return -1;
    return head(x, xs);
}

/* ---- Level 1: every node's estimate from the maximum shapes, at session start ---- */

static void estimate(const char *node, enum wsk_status st, const struct wsk_ws *ws)
{
    if (st != WSK_OK) /* unavailable: no number rather than a wrong one */
        return;
    if (ws->nslots == 0)
        wstrace_estimate_workspace(node, 0, 0);
    for (uint32_t i = 0; i < ws->nslots; i++)
        wstrace_estimate_workspace(node, i, ws->bytes[i]);
}

static bool layer_matmul(const struct wsk_config *c, enum wsk_layer_node node, struct wsk_matmul_attrs *a)
{
    uint64_t attn = (uint64_t)c->heads * c->head_dim, kv = (uint64_t)c->kv_heads * c->head_dim;
    switch (node) {
    case WSK_NODE_Q_PROJ: *a = (struct wsk_matmul_attrs){c->hidden, attn, false}; return true;
    case WSK_NODE_K_PROJ:
    case WSK_NODE_V_PROJ: *a = (struct wsk_matmul_attrs){c->hidden, kv, false}; return true;
    case WSK_NODE_O_PROJ: *a = (struct wsk_matmul_attrs){attn, c->hidden, false}; return true;
    case WSK_NODE_GATE_PROJ:
    case WSK_NODE_UP_PROJ: *a = (struct wsk_matmul_attrs){c->hidden, c->intermediate, true}; return true;
    case WSK_NODE_DOWN_PROJ: *a = (struct wsk_matmul_attrs){c->intermediate, c->hidden, true}; return true;
    default: return false;
    }
}

void wsk_declare_level1(const struct wsk_config *c, const struct wsk_device *dev)
{
    uint64_t maxb = wsk_max_batch(c), maxs = wsk_max_seq(c);
    struct wsk_ws none = {0}, ws;
    char n[WSK_NODE_NAME];
    estimate(WSK_NODE_EMBED_NAME, WSK_OK, &none);
    for (uint32_t l = 0; l < c->layers; l++)
        for (int node = 0; node < WSK_LAYER_NODES; node++) {
            struct wsk_matmul_attrs ma;
            struct wsk_attn_attrs aa = {c->heads, c->kv_heads, c->head_dim};
            enum wsk_status st = WSK_OK;
            ws = none;
            if (layer_matmul(c, (enum wsk_layer_node)node, &ma))
                st = wsk_matmul_level1(&ma, maxb * maxs, dev, c->l1, &ws);
            else if (node == WSK_NODE_ATTENTION)
                st = wsk_attn_level1_seq(&aa, maxb, maxs, c->max_kv_len, dev, c->l1, &ws);
            estimate(wsk_layer_node_name(n, l, (enum wsk_layer_node)node), st, &ws);
        }
    estimate(WSK_NODE_NORM_NAME, WSK_OK, &none);
    struct wsk_matmul_attrs lm = {c->hidden, c->vocab, true};
    estimate(WSK_NODE_LM_HEAD_NAME, wsk_matmul_level1(&lm, maxb, dev, c->l1, &ws), &ws);
    estimate(WSK_NODE_ARGMAX_NAME, wsk_argmax_level1(c->vocab, maxb, c->l1, &ws), &ws);
}
