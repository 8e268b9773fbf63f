/*
 * attention_decode.cu - flash-decoding.  wsk_attn_split: one block per (sequence*head, split),
 * online softmax over chunks of blockDim positions; with one split it writes the output and its
 * log-sum-exp directly, otherwise partial outputs and log-sum-exps to the accumulators of the
 * workspace root for wsk_attn_combine.  Grouped-query attention: query head h reads KV head
 * h / (heads / kv_heads).  head_dim <= WSK_ATTN_MAX_HEAD_DIM (two accumulators per thread of a
 * 128-thread block).  Argument lists and layouts are those of the host entry points in wskernels.h.
 */
#include "wsk_cuda.cuh"

#define ATTN_THREADS 128u

static __device__ uint32_t rounded_head(uint32_t head_dim)
{
    return (head_dim + WSK_FLASH_HEAD_ROUND - 1) / WSK_FLASH_HEAD_ROUND * WSK_FLASH_HEAD_ROUND;
}

/* grid (batch*kv_heads), block ATTN_THREADS */
extern "C" __global__ void wsk_kv_append(float *k_cache, float *v_cache, const float *k_new, const float *v_new,
                                         uint32_t batch, uint32_t kv_heads, uint32_t head_dim, uint32_t pos,
                                         uint32_t max_kv)
{
    uint64_t row = blockIdx.x;
    if (row >= (uint64_t)batch * kv_heads)
        return;
    uint64_t dst = (row * max_kv + pos) * head_dim, src = row * head_dim;
    for (uint32_t i = threadIdx.x; i < head_dim; i += blockDim.x) {
        k_cache[dst + i] = k_new[src + i];
        v_cache[dst + i] = v_new[src + i];
    }
}

/* grid (batch*heads, splits), block ATTN_THREADS */
extern "C" __global__ void wsk_attn_split(float *out, float *softmax_lse, float *lse_accum, float *out_accum,
                                          const float *q, const float *k_cache, const float *v_cache, uint32_t batch,
                                          uint32_t heads, uint32_t kv_heads, uint32_t head_dim, uint32_t kv_len,
                                          uint32_t max_kv, uint32_t splits, uint32_t split_len)
{
    __shared__ float scores[ATTN_THREADS];
    __shared__ float qs[WSK_ATTN_MAX_HEAD_DIM];
    uint64_t row = blockIdx.x, rows = (uint64_t)batch * heads;
    uint32_t s = blockIdx.y, t = threadIdx.x;
    if (row >= rows || s >= splits)
        return;
    uint64_t kv_row = (row / heads) * kv_heads + (row % heads) / (heads / kv_heads);
    for (uint32_t i = t; i < head_dim; i += blockDim.x)
        qs[i] = q[row * head_dim + i];
    const float *keys = k_cache + kv_row * max_kv * head_dim;
    const float *values = v_cache + kv_row * max_kv * head_dim;
    uint64_t p0 = (uint64_t)s * split_len, p1 = p0 + split_len < kv_len ? p0 + split_len : kv_len;
    float scale = 1.0f / sqrtf((float)head_dim), m = -INFINITY, l = 0.0f, acc[2] = {0.0f, 0.0f};
    for (uint64_t p = p0; p < p1; p += ATTN_THREADS) {
        uint32_t count = (uint32_t)(p1 - p < ATTN_THREADS ? p1 - p : ATTN_THREADS);
        __syncthreads(); /* qs loaded; previous chunk's scores consumed */
        if (t < count) {
            float dot = 0.0f;
            for (uint32_t i = 0; i < head_dim; i++)
                dot += qs[i] * keys[(p + t) * head_dim + i];
            scores[t] = dot * scale;
        }
        __syncthreads();
        float chunk_max = -INFINITY;
        for (uint32_t j = 0; j < count; j++)
            chunk_max = fmaxf(chunk_max, scores[j]);
        float new_m = fmaxf(m, chunk_max), rescale = expf(m - new_m);
        l *= rescale;
        acc[0] *= rescale;
        acc[1] *= rescale;
        for (uint32_t j = 0; j < count; j++) {
            float e = expf(scores[j] - new_m);
            l += e;
            for (uint32_t a = 0; a < 2; a++) {
                uint32_t d = t + a * ATTN_THREADS;
                if (d < head_dim)
                    acc[a] += e * values[(p + j) * head_dim + d];
            }
        }
        m = new_m;
    }
    uint64_t part = (uint64_t)s * rows + row; /* [split][batch][head] */
    for (uint32_t a = 0; a < 2; a++) {
        uint32_t d = t + a * ATTN_THREADS;
        if (d >= head_dim)
            continue;
        float v = l > 0.0f ? acc[a] / l : 0.0f;
        if (splits <= 1)
            out[row * head_dim + d] = v;
        else
            out_accum[part * rounded_head(head_dim) + d] = v;
    }
    if (t == 0) {
        float lse = l > 0.0f ? m + logf(l) : -INFINITY;
        if (splits <= 1)
            softmax_lse[row] = lse;
        else
            lse_accum[part] = lse;
    }
}

/* grid (batch*heads), block ATTN_THREADS */
extern "C" __global__ void wsk_attn_combine(float *out, float *softmax_lse, const float *lse_accum,
                                            const float *out_accum, uint32_t batch, uint32_t heads, uint32_t head_dim,
                                            uint32_t splits)
{
    uint64_t row = blockIdx.x, rows = (uint64_t)batch * heads;
    if (row >= rows)
        return;
    float m = -INFINITY, total = 0.0f;
    for (uint32_t s = 0; s < splits; s++)
        m = fmaxf(m, lse_accum[s * rows + row]);
    for (uint32_t s = 0; s < splits; s++)
        total += expf(lse_accum[s * rows + row] - m);
    for (uint32_t d = threadIdx.x; d < head_dim; d += blockDim.x) {
        float v = 0.0f;
        for (uint32_t s = 0; s < splits; s++)
            v += expf(lse_accum[s * rows + row] - m) * out_accum[(s * rows + row) * rounded_head(head_dim) + d];
        out[row * head_dim + d] = v / total;
    }
    if (threadIdx.x == 0)
        softmax_lse[row] = m + logf(total);
}
