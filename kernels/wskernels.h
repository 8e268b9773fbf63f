/*
 * wskernels.h - the bundled kernels: tensor layouts, tactic heuristics, workspace estimators,
 * host reference implementations and the host entry points the simulated device runs.
 *
 * Conventions
 *  - Activations are row-major fp32.  "M" is the number of rows (tokens; batch in decoding).
 *  - Quantized weights (matmul_nbits) follow ONNX Runtime's MatMulNBits layout, transposed:
 *    for each output column n, ceil(K/32) blocks of 32 4-bit values along K, 16 bytes per block,
 *    value k at byte k/2 of its block, low nibble first.  scales[n][block] is fp32.  Optional zero
 *    points are 4-bit, packed two per byte along the blocks of one column
 *    (zero_points[n * ceil(blocks/2) + block/2], low nibble = even block); absent means 8.
 *    w[k][n] = (q - zp) * scale.  Padding nibbles of a last partial block are ignored.
 *  - The KV cache is [batch][heads][max_kv][head_dim] fp32 for keys and for values.
 *
 * Workspace
 *  Each kernel that needs scratch memory says so through its estimators, never implicitly:
 *  - Level 1 (wsk_*_level1): from the node's attributes, its maximum shapes and the device,
 *    before any kernel exists.  Two policies: WSK_L1_MAX_SHAPE evaluates the maximum shape only;
 *    WSK_L1_ENVELOPE takes the maximum over every shape up to the maximum, per slot, which stays
 *    safe when a heuristic is not monotonic in the shape (attention_decode is not).
 *  - Level 2 (wsk_*_level2): from the created kernel (its chosen tactic and split counts) and the
 *    actual shapes.  These are exactly the bytes the launch code allocates.
 *  Results are a struct wsk_ws: nslots == 0 declares nothing (empty outputs, tactics without
 *  workspace).  A slot may be a root holding named regions at aligned offsets (the attention
 *  workspace); the launch code allocates the root once and carves the regions out of it.  Any
 *  dimension equal to WSK_DIM_UNKNOWN, or any size that overflows 64 bits, gives WSK_UNAVAILABLE
 *  and nslots == 0: never a wrong number.
 *
 * Host entry points (wsk_host_*) have the signature void f(void **args): args is the CUDA-style
 * argument array of the matching CUDA kernel (same order and types), so one launch site serves the
 * simulated device (which calls the host entry point) and a GPU (which gets the kernel's stub).
 */
#ifndef WSKERNELS_H
#define WSKERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WSK_QBLOCK            32u  /* quantization block along K (values) */
#define WSK_QBLOCK_BYTES      16u  /* packed bytes per block */
#define WSK_GEMV_MAX_M        1u   /* rows served by the GEMV tactic */
#define WSK_SPLITK_MAX        16u  /* upper bound of the split-K factor */
#define WSK_MATMUL_TILE_N     128u /* output columns per thread block */
#define WSK_GEMM_TILE_M       64u  /* rows of one GEMM thread-block tile */
#define WSK_GEMM_TILE_N       64u  /* columns of one GEMM thread-block tile */
#define WSK_GEMM_SPLIT_LIMIT  7u   /* serial split-K slices at most (fpA_intB's SPLIT_K_LIMIT) */
#define WSK_GEMM_WS_TILE_M    16u  /* smallest tile of any GEMM configuration: the workspace bound */
#define WSK_GEMM_WS_TILE_N    64u
#define WSK_FLASH_MAX_SPLITS  128u  /* flash-decoding splits at most (ONNX Runtime, FlashAttention) */
#define WSK_FLASH_BLOCK_M     64u   /* query rows per block of the split-KV kernel */
#define WSK_FLASH_HEAD_ROUND  32u   /* out_accum rows are the head size rounded up to this */
#define WSK_ATTN_MAX_HEAD_DIM 256u  /* what the CUDA kernel supports */
#define WSK_SEQ_LENS_VECTORS  3u    /* prefill: past, total and new positions of each sequence (int32) */
#define WSK_ARGMAX_BLOCK      1024u /* logits reduced per block in pass one */
#define WSK_THREADS           256u  /* threads per block of the elementwise kernels */
#define WSK_MAX_WS_SLOTS      2u
#define WSK_MAX_WS_REGIONS    4u
#define WSK_WS_ALIGNMENT      256u       /* alignment the kernels want for workspace */
#define WSK_DIM_UNKNOWN       UINT64_MAX /* a shape not known when estimating */

enum wsk_status {
    WSK_OK = 0,
    WSK_UNAVAILABLE = 1, /* unknown shape or overflow: no estimate */
    WSK_EINVAL = 2,      /* malformed attributes */
};

enum wsk_l1_policy { WSK_L1_MAX_SHAPE = 0, WSK_L1_ENVELOPE = 1 };

struct wsk_device {
    uint32_t sm_count; /* streaming multiprocessors (cudaDeviceProp.multiProcessorCount) */
};

struct wsk_region {
    const char *name; /* a static string */
    uint64_t offset, bytes;
};

struct wsk_ws {
    uint32_t nslots;                  /* 0: declares nothing */
    uint64_t bytes[WSK_MAX_WS_SLOTS]; /* bytes of slot i, i < nslots */
    uint32_t nregions;                /* regions of slot 0 (a root), 0: a plain slot */
    struct wsk_region regions[WSK_MAX_WS_REGIONS];
};

/* Packed bytes of a K x N quantized matrix, its scales and its zero points (checked). */
enum wsk_status wsk_nbits_sizes(uint64_t K, uint64_t N, uint64_t *weight_bytes, uint64_t *scale_count,
                                uint64_t *zero_point_bytes);

/* ---- matmul_nbits: y[M][N] = x[M][K] * dequant(W) ---- */
struct wsk_matmul_attrs {
    uint64_t K, N;
    bool has_zero_point;
};
enum wsk_matmul_tactic { WSK_MATMUL_GEMV = 0, WSK_MATMUL_SPLITK = 1, WSK_MATMUL_GEMM = 2 };
struct wsk_matmul_kernel { /* state of a created kernel */
    enum wsk_matmul_tactic tactic;
    uint32_t split_k; /* 1 for GEMV; GEMM: serial K slices */
};
/*
 * Three tactics, as ONNX Runtime's fpA_intB profiler picks among a GEMV kernel and GEMMs:
 *  - GEMV for M <= WSK_GEMV_MAX_M: no workspace.
 *  - split-K for M > 1 when the output alone leaves SMs idle: split_k = min(ceil(SMs /
 *    (ceil(N/128) * M)), 16, K blocks) > 1 slices write fp32 partial sums, split_k * M * N floats
 *    (slot 0), reduced in split order.
 *  - GEMM for M > 1 otherwise: 64 x 64 tiles, serial split-K over min(7, ceil(SMs / tiles),
 *    K blocks) slices that add into the output in slice order, one int32 semaphore per tile.
 *    Its workspace is fpA_intB's CUTLASS bound for every tile configuration, whatever the slices:
 *    ceil(M/16) * ceil(N/64) * 7 * 4 bytes (slot 0; zeroed before a launch with several slices).
 */
enum wsk_status wsk_matmul_create(const struct wsk_matmul_attrs *a, uint64_t M, const struct wsk_device *dev,
                                  struct wsk_matmul_kernel *out);
enum wsk_status wsk_matmul_level2(const struct wsk_matmul_attrs *a, const struct wsk_matmul_kernel *k, uint64_t M,
                                  struct wsk_ws *out);
enum wsk_status wsk_matmul_level1(const struct wsk_matmul_attrs *a, uint64_t max_M, const struct wsk_device *dev,
                                  enum wsk_l1_policy policy, struct wsk_ws *out);

/* ---- the flash-decoding split rule and workspace (ONNX Runtime's GroupQueryAttention) ----
 *
 * Splits: FlashAttention's num_splits_heuristic as ONNX Runtime runs it.  KV blocks of
 * wsk_flash_kv_block(head_size) positions, query blocks of WSK_FLASH_BLOCK_M rows, work =
 * batch * heads * query blocks.  One split when work >= 0.8 * SMs (single precision); otherwise
 * the candidates are 1 .. min(WSK_FLASH_MAX_SPLITS, SMs, KV blocks), s eligible when s == 1 or
 * ceil(blocks/s) != ceil(blocks/(s-1)); efficiency(s) = w / ceil(w) with w = work * s / SMs in
 * single precision; the answer is the smallest eligible s whose efficiency is at least 0.85 (a
 * double) times the best.  Not monotonic in kv_len: B=1, 2 heads of 64, 108 SMs take 54 splits at
 * 13,824 positions and 28 at 13,825.
 *
 * Workspace, one root whose regions start at 256-byte-aligned offsets (an empty region takes no
 * space and has offset 0): softmax_lse (batch*heads*seqlen_q floats) always; when splits > 1
 * softmax_lse_accum (splits*batch*heads*seqlen_q floats) and out_accum (the same times the head size
 * rounded up to WSK_FLASH_HEAD_ROUND, floats).  The root's size is the end of its last region. */
uint64_t wsk_flash_kv_block(uint64_t head_size);
/* heads: the heads the work is counted with (grouped-query decoding counts the KV heads). */
enum wsk_status wsk_flash_num_splits(uint64_t batch, uint64_t seqlen_q, uint64_t kv_len, uint64_t heads,
                                     uint64_t head_size, uint32_t sm_count, uint32_t *splits);
struct wsk_flash_layout {
    uint32_t splits;
    uint64_t head_size_rounded;
    uint64_t lse_offset, lse_bytes;
    uint64_t lse_accum_offset, lse_accum_bytes;
    uint64_t out_accum_offset, out_accum_bytes;
    uint64_t total_bytes;
    uint64_t seq_lens_offset, seq_lens_bytes; /* prefill only (wsk_attn_layout_seq), else 0 */
};
/* heads: the query heads the accumulators hold. */
enum wsk_status wsk_flash_layout(uint64_t batch, uint64_t seqlen_q, uint64_t heads, uint64_t head_size, uint32_t splits,
                                 struct wsk_flash_layout *out);
/* The layout as a workspace: slot 0 is the root, its regions the non-empty buffers; an empty
 * root declares nothing. */
void wsk_flash_ws(const struct wsk_flash_layout *l, struct wsk_ws *out);

/* ---- attention: seq new query tokens per sequence over kv_len cached positions ----
 * Grouped-query attention: query head h reads KV head h / (heads / kv_heads).
 *
 * Decoding (seq == 1): the split count is chosen with the KV heads, as ONNX Runtime's fast
 * decoding does, while the accumulators hold every query head; the root holds the flash buffers.
 *
 * Prefill (seq > 1): the new tokens take positions [kv_len - seq, kv_len) and attend causally
 * (the token at position p sees positions 0..p).  ONNX Runtime's GroupQueryAttention recipe: a
 * first prompt (kv_len == seq) is not fast decoding and counts the split work with the query
 * heads; a prompt continuing a cache (kv_len > seq) is, and counts with the KV heads; the
 * accumulators hold every query head and seq rows each; and since the sequence lengths are not
 * all 1 the kernel needs its sequence-length vectors: seq_lens, WSK_SEQ_LENS_VECTORS * batch
 * int32 (past, total and new positions of each sequence), the root's last region. */
struct wsk_attn_attrs {
    uint64_t heads, kv_heads, head_dim;
};
struct wsk_attn_kernel {
    uint32_t splits;    /* KV splits; 1: no accumulators */
    uint32_t split_len; /* KV positions handled by each split */
};
/* WSK_EINVAL when kv_heads is 0 or does not divide heads, or seq is 0 or above kv_len. */
enum wsk_status wsk_attn_create_seq(const struct wsk_attn_attrs *a, uint64_t batch, uint64_t seq, uint64_t kv_len,
                                    const struct wsk_device *dev, struct wsk_attn_kernel *out);
enum wsk_status wsk_attn_layout_seq(const struct wsk_attn_attrs *a, const struct wsk_attn_kernel *k, uint64_t batch,
                                    uint64_t seq, struct wsk_flash_layout *out);
/* slot 0: the root of wsk_attn_layout_seq; nothing for an empty batch or KV length. */
enum wsk_status wsk_attn_level2_seq(const struct wsk_attn_attrs *a, const struct wsk_attn_kernel *k, uint64_t batch,
                                    uint64_t seq, uint64_t kv_len, struct wsk_ws *out);
/* Level 1 over batch <= max_batch, seq <= max_seq and kv_len <= max_kv_len (see kernels/README.md:
 * the envelope walks the shapes where the split count can change). */
enum wsk_status wsk_attn_level1_seq(const struct wsk_attn_attrs *a, uint64_t max_batch, uint64_t max_seq,
                                    uint64_t max_kv_len, const struct wsk_device *dev, enum wsk_l1_policy policy,
                                    struct wsk_ws *out);
/* The decoding forms: seq == 1. */
enum wsk_status wsk_attn_create(const struct wsk_attn_attrs *a, uint64_t batch, uint64_t kv_len,
                                const struct wsk_device *dev, struct wsk_attn_kernel *out);
enum wsk_status wsk_attn_layout(const struct wsk_attn_attrs *a, const struct wsk_attn_kernel *k, uint64_t batch,
                                struct wsk_flash_layout *out);
enum wsk_status wsk_attn_level2(const struct wsk_attn_attrs *a, const struct wsk_attn_kernel *k, uint64_t batch,
                                uint64_t kv_len, struct wsk_ws *out);
enum wsk_status wsk_attn_level1(const struct wsk_attn_attrs *a, uint64_t max_batch, uint64_t max_kv_len,
                                const struct wsk_device *dev, enum wsk_l1_policy policy, struct wsk_ws *out);

/* ---- argmax over the vocabulary: two passes, slot 0 holds batch*ceil(V/1024) pairs ---- */
struct wsk_argmax_pair {
    float value;
    int32_t index;
};
uint64_t wsk_argmax_nblocks(uint64_t vocab);
enum wsk_status wsk_argmax_level2(uint64_t vocab, uint64_t batch, struct wsk_ws *out);
enum wsk_status wsk_argmax_level1(uint64_t vocab, uint64_t max_batch, enum wsk_l1_policy policy, struct wsk_ws *out);

/* ---- host references (plain C, single thread) ---- */
void wsk_ref_embed(float *y, const int32_t *ids, const float *table, uint32_t M, uint32_t H);
void wsk_ref_rmsnorm(float *y, const float *x, const float *gamma, uint32_t M, uint32_t H, float eps);
/* y[b] = rmsnorm of row b * seq + seq - 1 of x: the last position of each sequence. */
void wsk_ref_rmsnorm_last(float *y, const float *x, const float *gamma, uint32_t batch, uint32_t seq, uint32_t H,
                          float eps);
void wsk_ref_silu_mul(float *y, const float *gate, const float *up, uint64_t n);
void wsk_ref_add(float *y, const float *a, const float *b, uint64_t n);
/* workspace: split_k*M*N floats when k->tactic == WSK_MATMUL_SPLITK; the GEMM's int32 semaphores,
 * zeroed, when WSK_MATMUL_GEMM with split_k > 1; else unused (may be NULL) */
void wsk_ref_matmul_nbits(float *y, const float *x, const uint8_t *w, const float *scales, const uint8_t *zero_points,
                          uint32_t M, uint32_t K, uint32_t N, const struct wsk_matmul_kernel *k, float *workspace);
/* Writes k_new/v_new ([batch][kv_heads*head_dim]) at position kv_len-1 of the caches
 * ([batch][kv_heads][max_kv][head_dim]), then attends q ([batch][heads*head_dim]) over positions
 * [0, kv_len).  workspace: the root of wsk_attn_layout (softmax_lse always, the accumulators
 * when k->splits > 1). */
void wsk_ref_attention_decode(float *out, const float *q, const float *k_new, const float *v_new, float *k_cache,
                              float *v_cache, const struct wsk_attn_attrs *a, uint32_t batch, uint32_t kv_len,
                              uint32_t max_kv, const struct wsk_attn_kernel *k, void *workspace);
/* Prefill (seq > 1): writes k_new/v_new ([batch][seq][kv_heads*head_dim]) at positions
 * [kv_len-seq, kv_len) of the caches, then attends q ([batch][seq][heads*head_dim]) causally into
 * out (same layout).  workspace: the root of wsk_attn_layout_seq. */
void wsk_ref_attention_prefill(float *out, const float *q, const float *k_new, const float *v_new, float *k_cache,
                               float *v_cache, const struct wsk_attn_attrs *a, uint32_t batch, uint32_t seq,
                               uint32_t kv_len, uint32_t max_kv, const struct wsk_attn_kernel *k, void *workspace);
void wsk_ref_argmax(int32_t *tokens, const float *logits, uint32_t batch, uint32_t vocab,
                    struct wsk_argmax_pair *workspace);

/* ---- host entry points: argument lists are those of the CUDA kernels ---- */
/* (float *y, const int32_t *ids, const float *table, uint32_t M, uint32_t H) */
void wsk_host_embed(void **args);
/* (float *y, const float *x, const float *gamma, uint32_t M, uint32_t H, float eps) */
void wsk_host_rmsnorm(void **args);
/* (float *y, const float *gate, const float *up, uint64_t n) */
void wsk_host_silu_mul(void **args);
/* (float *y, const float *a, const float *b, uint64_t n) */
void wsk_host_add(void **args);
/* (float *y, const float *x, const uint8_t *w, const float *scales, const uint8_t *zp,
 *  uint32_t M, uint32_t K, uint32_t N) */
void wsk_host_matmul_gemv(void **args);
/* (float *ws, const float *x, const uint8_t *w, const float *scales, const uint8_t *zp,
 *  uint32_t M, uint32_t K, uint32_t N, uint32_t split_k) */
void wsk_host_matmul_splitk(void **args);
/* (float *y, const float *ws, uint32_t M, uint32_t N, uint32_t split_k) */
void wsk_host_matmul_reduce(void **args);
/* (float *y, const float *x, const uint8_t *w, const float *scales, const uint8_t *zp,
 *  int32_t *semaphores, uint32_t M, uint32_t K, uint32_t N, uint32_t split_k)
 * Slice s of tile t adds into y once semaphores[t] == s and sets it to s + 1, the last slice to 0. */
void wsk_host_matmul_gemm(void **args);
/* (float *y, const float *x, const float *gamma, uint32_t batch, uint32_t seq, uint32_t H, float eps) */
void wsk_host_rmsnorm_last(void **args);
/* (int32_t *seq_lens, uint32_t batch, uint32_t seq, uint32_t kv_len): seq_lens[b] = past positions,
 * seq_lens[batch + b] = total, seq_lens[2 * batch + b] = new (seq). */
void wsk_host_attn_seqlens(void **args);
/* (float *k_cache, float *v_cache, const float *k_new, const float *v_new, const int32_t *seq_lens,
 *  uint32_t batch, uint32_t seq, uint32_t kv_heads, uint32_t head_dim, uint32_t max_kv) */
void wsk_host_kv_append_seq(void **args);
/* (float *out, float *softmax_lse, float *lse_accum, float *out_accum, const float *q,
 *  const float *k_cache, const float *v_cache, const int32_t *seq_lens, uint32_t batch, uint32_t seq,
 *  uint32_t heads, uint32_t kv_heads, uint32_t head_dim, uint32_t max_kv, uint32_t splits,
 *  uint32_t split_len)
 * softmax_lse is [batch][heads][seq]; with several splits split s writes
 * lse_accum[s][batch][heads][seq] and out_accum[s][batch][heads][seq][round32(head_dim)]. */
void wsk_host_attn_prefill_split(void **args);
/* (float *out, float *softmax_lse, const float *lse_accum, const float *out_accum,
 *  uint32_t batch, uint32_t seq, uint32_t heads, uint32_t head_dim, uint32_t splits) */
void wsk_host_attn_prefill_combine(void **args);
/* (float *k_cache, float *v_cache, const float *k_new, const float *v_new, uint32_t batch,
 *  uint32_t kv_heads, uint32_t head_dim, uint32_t pos, uint32_t max_kv) */
void wsk_host_kv_append(void **args);
/* (float *out, float *softmax_lse, float *lse_accum, float *out_accum, const float *q,
 *  const float *k_cache, const float *v_cache, uint32_t batch, uint32_t heads, uint32_t kv_heads,
 *  uint32_t head_dim, uint32_t kv_len, uint32_t max_kv, uint32_t splits, uint32_t split_len)
 * splits == 1 writes the normalised output to out and its log-sum-exp to softmax_lse; otherwise
 * split s writes out_accum[s][batch][heads][round32(head_dim)] and lse_accum[s][batch][heads]. */
void wsk_host_attn_split(void **args);
/* (float *out, float *softmax_lse, const float *lse_accum, const float *out_accum,
 *  uint32_t batch, uint32_t heads, uint32_t head_dim, uint32_t splits) */
void wsk_host_attn_combine(void **args);
/* (struct wsk_argmax_pair *ws, const float *logits, uint32_t batch, uint32_t vocab) */
void wsk_host_argmax_blocks(void **args);
/* (int32_t *tokens, const struct wsk_argmax_pair *ws, uint32_t batch, uint32_t nblocks) */
void wsk_host_argmax_final(void **args);

/* The launchable functions of one device: host entry points (simulated device) or CUDA kernel
 * stubs (GPU).  Both take the same argument arrays. */
struct wsk_kernel_table {
    const void *embed, *rmsnorm, *silu_mul, *add;
    const void *matmul_gemv, *matmul_splitk, *matmul_reduce;
    const void *kv_append, *attn_split, *attn_combine;
    const void *argmax_blocks, *argmax_final;
    /* prefill */
    const void *matmul_gemm, *rmsnorm_last;
    const void *attn_seqlens, *kv_append_seq, *attn_prefill_split, *attn_prefill_combine;
};
const struct wsk_kernel_table *wsk_host_kernels(void);
/* Defined only in builds with nvcc (kernels/cuda/). */
const struct wsk_kernel_table *wsk_cuda_kernels(void);

#ifdef __cplusplus
}
#endif
#endif /* WSKERNELS_H */
