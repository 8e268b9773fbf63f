/*
 * attention_decode.cu - flash-decoding.  wsk_attn_split: one block per (sequence*head, split),
 * online softmax over chunks of blockDim positions; with one split it writes the output
 * directly, otherwise partial outputs and log-sum-exp to the workspace for wsk_attn_combine.
 * head_dim <= WSK_ATTN_MAX_HEAD_DIM (two accumulators per thread of a 128-thread block).
 */
#include "wsk_cuda.cuh"

#define ATTN_THREADS 128u

/* grid (batch*heads), block ATTN_THREADS */
extern "C" __global__ void wsk_kv_append(float *k_cache, float *v_cache, const float *k_new, const float *v_new,
                                         uint32_t batch, uint32_t heads, uint32_t head_dim, uint32_t pos,
                                         uint32_t max_kv)
{
    uint64_t row = blockIdx.x;
    if (row >= (uint64_t)batch * heads)
        return;
    uint64_t dst = (row * max_kv + pos) * head_dim, src = row * head_dim;
    for (uint32_t i = threadIdx.x; i < head_dim; i += blockDim.x) {
        k_cache[dst + i] = k_new[src + i];
        v_cache[dst + i] = v_new[src + i];
    }
}

/* grid (batch*heads, splits), block ATTN_THREADS */
extern "C" __global__ void wsk_attn_split(float *out, float *o_part, float *lse, const float *q, const float *k_cache,
                                          const float *v_cache, uint32_t batch, uint32_t heads, uint32_t head_dim,
                                          uint32_t kv_len, uint32_t max_kv, uint32_t splits, uint32_t blocks_per_split)
{
    __shared__ float scores[ATTN_THREADS];
    __shared__ float qs[WSK_ATTN_MAX_HEAD_DIM];
    uint64_t row = blockIdx.x;
    uint32_t s = blockIdx.y, t = threadIdx.x;
    if (row >= (uint64_t)batch * heads || s >= splits)
        return;
    for (uint32_t i = t; i < head_dim; i += blockDim.x)
        qs[i] = q[row * head_dim + i];
    const float *keys = k_cache + row * max_kv * head_dim;
    const float *values = v_cache + row * max_kv * head_dim;
    uint64_t span = (uint64_t)blocks_per_split * WSK_ATTN_KV_BLOCK, p0 = s * span;
    uint64_t p1 = p0 + span < kv_len ? p0 + span : kv_len;
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
    for (uint32_t a = 0; a < 2; a++) {
        uint32_t d = t + a * ATTN_THREADS;
        if (d >= head_dim)
            continue;
        float v = l > 0.0f ? acc[a] / l : 0.0f;
        if (splits <= 1)
            out[row * head_dim + d] = v;
        else
            o_part[(row * splits + s) * head_dim + d] = v;
    }
    if (splits > 1 && t == 0)
        lse[row * splits + s] = l > 0.0f ? m + logf(l) : -INFINITY;
}

/* grid (batch*heads), block ATTN_THREADS */
extern "C" __global__ void wsk_attn_combine(float *out, const float *o_part, const float *lse, uint32_t batch,
                                            uint32_t heads, uint32_t head_dim, uint32_t splits)
{
    uint64_t row = blockIdx.x;
    if (row >= (uint64_t)batch * heads)
        return;
    const float *l = lse + row * splits;
    float m = -INFINITY, total = 0.0f;
    for (uint32_t s = 0; s < splits; s++)
        m = fmaxf(m, l[s]);
    for (uint32_t s = 0; s < splits; s++)
        total += expf(l[s] - m);
    for (uint32_t d = threadIdx.x; d < head_dim; d += blockDim.x) {
        float v = 0.0f;
        for (uint32_t s = 0; s < splits; s++)
            v += expf(l[s] - m) * o_part[(row * splits + s) * head_dim + d];
        out[row * head_dim + d] = v / total;
    }
}
