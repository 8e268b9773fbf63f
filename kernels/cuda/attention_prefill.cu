/*
 * attention_prefill.cu - attention over several new query tokens per sequence, causal, with
 * ONNX Runtime's GroupQueryAttention workspace: wsk_attn_seqlens fills the sequence-length vectors
 * of the root, wsk_kv_append_seq writes every new key and value at its position, and
 * wsk_attn_prefill_split runs one block per (query row, split) over the split's positions up to the
 * row's own (online softmax over chunks of blockDim positions, as the decoding kernel does), writing
 * the output and its log-sum-exp directly with one split, otherwise the accumulators for
 * wsk_attn_prefill_combine.  Layouts and argument lists are those of the host entry points in
 * wskernels.h; head_dim <= WSK_ATTN_MAX_HEAD_DIM.
 */
#include "wsk_cuda.cuh"

#define ATTN_THREADS 128u

static __device__ uint32_t rounded_head(uint32_t head_dim)
{
    return (head_dim + WSK_FLASH_HEAD_ROUND - 1) / WSK_FLASH_HEAD_ROUND * WSK_FLASH_HEAD_ROUND;
}

/* grid (ceil(batch/128)), block 128 */
extern "C" __global__ void wsk_attn_seqlens(int32_t *seq_lens, uint32_t batch, uint32_t seq, uint32_t kv_len)
{
    uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batch)
        return;
    seq_lens[b] = (int32_t)(kv_len - seq);
    seq_lens[batch + b] = (int32_t)kv_len;
    seq_lens[2 * batch + b] = (int32_t)seq;
}

/* grid (batch*seq, kv_heads), block ATTN_THREADS: token i of sequence b to position past[b] + i. */
extern "C" __global__ void wsk_kv_append_seq(float *k_cache, float *v_cache, const float *k_new, const float *v_new,
                                             const int32_t *seq_lens, uint32_t batch, uint32_t seq, uint32_t kv_heads,
                                             uint32_t head_dim, uint32_t max_kv)
{
    uint64_t token = blockIdx.x, h = blockIdx.y;
    if (token >= (uint64_t)batch * seq || h >= kv_heads)
        return;
    uint64_t b = token / seq, i = token % seq, row = b * kv_heads + h;
    uint64_t dst = (row * max_kv + (uint64_t)seq_lens[b] + i) * head_dim, src = (token * kv_heads + h) * head_dim;
    for (uint32_t e = threadIdx.x; e < head_dim; e += blockDim.x) {
        k_cache[dst + e] = k_new[src + e];
        v_cache[dst + e] = v_new[src + e];
    }
}

/* grid (batch*heads*seq, splits), block ATTN_THREADS; block x is the softmax_lse row
 * (b * heads + h) * seq + i. */
extern "C" __global__ void wsk_attn_prefill_split(float *out, float *softmax_lse, float *lse_accum, float *out_accum,
                                                  const float *q, const float *k_cache, const float *v_cache,
                                                  const int32_t *seq_lens, uint32_t batch, uint32_t seq, uint32_t heads,
                                                  uint32_t kv_heads, uint32_t head_dim, uint32_t max_kv,
                                                  uint32_t splits, uint32_t split_len)
{
    __shared__ float scores[ATTN_THREADS];
    __shared__ float qs[WSK_ATTN_MAX_HEAD_DIM];
    uint64_t row = blockIdx.x, rows = (uint64_t)batch * heads * seq;
    uint32_t s = blockIdx.y, t = threadIdx.x;
    if (row >= rows || s >= splits)
        return;
    uint64_t b = row / ((uint64_t)heads * seq), h = row / seq % heads, i = row % seq;
    uint64_t q_row = (b * seq + i) * heads + h, kv_row = b * kv_heads + h / (heads / kv_heads);
    for (uint32_t e = t; e < head_dim; e += blockDim.x)
        qs[e] = q[q_row * head_dim + e];
    const float *keys = k_cache + kv_row * max_kv * head_dim;
    const float *values = v_cache + kv_row * max_kv * head_dim;
    uint64_t end = (uint64_t)seq_lens[b] + i + 1; /* causal: up to and including its own position */
    uint64_t p0 = (uint64_t)s * split_len, p1 = p0 + split_len < end ? p0 + split_len : end;
    float scale = 1.0f / sqrtf((float)head_dim), m = -INFINITY, l = 0.0f, acc[2] = {0.0f, 0.0f};
    for (uint64_t p = p0; p < p1; p += ATTN_THREADS) {
        uint32_t count = (uint32_t)(p1 - p < ATTN_THREADS ? p1 - p : ATTN_THREADS);
        __syncthreads(); /* qs loaded; previous chunk's scores consumed */
        if (t < count) {
            float dot = 0.0f;
            for (uint32_t e = 0; e < head_dim; e++)
                dot += qs[e] * keys[(p + t) * head_dim + e];
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
    uint64_t part = (uint64_t)s * rows + row; /* [split][batch][heads][seq] */
    for (uint32_t a = 0; a < 2; a++) {
        uint32_t d = t + a * ATTN_THREADS;
        if (d >= head_dim)
            continue;
        float v = l > 0.0f ? acc[a] / l : 0.0f;
        if (splits <= 1)
            out[q_row * head_dim + d] = v;
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

/* grid (batch*heads*seq), block ATTN_THREADS */
extern "C" __global__ void wsk_attn_prefill_combine(float *out, float *softmax_lse, const float *lse_accum,
                                                    const float *out_accum, uint32_t batch, uint32_t seq,
                                                    uint32_t heads, uint32_t head_dim, uint32_t splits)
{
    uint64_t row = blockIdx.x, rows = (uint64_t)batch * heads * seq;
    if (row >= rows)
        return;
    uint64_t b = row / ((uint64_t)heads * seq), h = row / seq % heads, i = row % seq;
    float *o = out + ((b * seq + i) * heads + h) * head_dim, m = -INFINITY, total = 0.0f;
    for (uint32_t s = 0; s < splits; s++)
        m = fmaxf(m, lse_accum[s * rows + row]);
    for (uint32_t s = 0; s < splits; s++)
        total += expf(lse_accum[s * rows + row] - m);
    for (uint32_t d = threadIdx.x; d < head_dim; d += blockDim.x) {
        float v = 0.0f;
        for (uint32_t s = 0; s < splits; s++)
            v += expf(lse_accum[s * rows + row] - m) * out_accum[(s * rows + row) * rounded_head(head_dim) + d];
        o[d] = v / total;
    }
    if (threadIdx.x == 0)
        softmax_lse[row] = m + logf(total);
}
