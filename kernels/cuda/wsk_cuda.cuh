/*
 * wsk_cuda.cuh - CUDA kernels of the bundled workload.  The argument lists are exactly those of
 * the host entry points in wskernels.h, so a launch passes the same argument array to either.
 * extern "C" keeps the device names plain (wsk_rmsnorm, not a mangled name) in traces.
 */
#ifndef WSK_CUDA_CUH
#define WSK_CUDA_CUH

#include <stdint.h>

#include "../wskernels.h"

extern "C" {
__global__ void wsk_embed(float *y, const int32_t *ids, const float *table, uint32_t M, uint32_t H);
__global__ void wsk_rmsnorm(float *y, const float *x, const float *gamma, uint32_t M, uint32_t H, float eps);
__global__ void wsk_silu_mul(float *y, const float *gate, const float *up, uint64_t n);
__global__ void wsk_add(float *y, const float *a, const float *b, uint64_t n);
__global__ void wsk_matmul_gemv(float *y, const float *x, const uint8_t *w, const float *scales, const uint8_t *zp,
                                uint32_t M, uint32_t K, uint32_t N);
__global__ void wsk_matmul_splitk(float *ws, const float *x, const uint8_t *w, const float *scales, const uint8_t *zp,
                                  uint32_t M, uint32_t K, uint32_t N, uint32_t split_k);
__global__ void wsk_matmul_reduce(float *y, const float *ws, uint32_t M, uint32_t N, uint32_t split_k);
__global__ void wsk_kv_append(float *k_cache, float *v_cache, const float *k_new, const float *v_new, uint32_t batch,
                              uint32_t kv_heads, uint32_t head_dim, uint32_t pos, uint32_t max_kv);
__global__ void wsk_attn_split(float *out, float *softmax_lse, float *lse_accum, float *out_accum, const float *q,
                               const float *k_cache, const float *v_cache, uint32_t batch, uint32_t heads,
                               uint32_t kv_heads, uint32_t head_dim, uint32_t kv_len, uint32_t max_kv, uint32_t splits,
                               uint32_t split_len);
__global__ void wsk_attn_combine(float *out, float *softmax_lse, const float *lse_accum, const float *out_accum,
                                 uint32_t batch, uint32_t heads, uint32_t head_dim, uint32_t splits);
__global__ void wsk_argmax_blocks(struct wsk_argmax_pair *ws, const float *logits, uint32_t batch, uint32_t vocab);
__global__ void wsk_argmax_final(int32_t *tokens, const struct wsk_argmax_pair *ws, uint32_t batch, uint32_t nblocks);
/* prefill */
__global__ void wsk_matmul_gemm(float *y, const float *x, const uint8_t *w, const float *scales, const uint8_t *zp,
                                int32_t *semaphores, uint32_t M, uint32_t K, uint32_t N, uint32_t split_k);
__global__ void wsk_rmsnorm_last(float *y, const float *x, const float *gamma, uint32_t batch, uint32_t seq, uint32_t H,
                                 float eps);
__global__ void wsk_attn_seqlens(int32_t *seq_lens, uint32_t batch, uint32_t seq, uint32_t kv_len);
__global__ void wsk_kv_append_seq(float *k_cache, float *v_cache, const float *k_new, const float *v_new,
                                  const int32_t *seq_lens, uint32_t batch, uint32_t seq, uint32_t kv_heads,
                                  uint32_t head_dim, uint32_t max_kv);
__global__ void wsk_attn_prefill_split(float *out, float *softmax_lse, float *lse_accum, float *out_accum,
                                       const float *q, const float *k_cache, const float *v_cache,
                                       const int32_t *seq_lens, uint32_t batch, uint32_t seq, uint32_t heads,
                                       uint32_t kv_heads, uint32_t head_dim, uint32_t max_kv, uint32_t splits,
                                       uint32_t split_len);
__global__ void wsk_attn_prefill_combine(float *out, float *softmax_lse, const float *lse_accum, const float *out_accum,
                                         uint32_t batch, uint32_t seq, uint32_t heads, uint32_t head_dim,
                                         uint32_t splits);
}

#endif /* WSK_CUDA_CUH */
