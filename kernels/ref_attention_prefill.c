/*
 * ref_attention_prefill.c - host reference of attention over several new query tokens per
 * sequence (prefill), in the four steps of the CUDA kernels: the sequence-length vectors, the KV
 * append of every new position, the causal split-KV pass (one query row and one split at a time,
 * the chunked online softmax of the decoding reference), and the combine.  The workspace is the
 * root of wsk_attn_layout_seq: softmax_lse [batch][heads][seq], with several splits
 * softmax_lse_accum and out_accum, and seq_lens.
 */
#include "ref_attention.h"

#include <math.h>

struct prefill_dims {
    uint32_t batch, seq, heads, kv_heads, head_dim, max_kv, splits, split_len;
};

/* The buffers of the workspace root. */
struct prefill_buffers {
    float *softmax_lse, *lse_accum, *out_accum;
    int32_t *seq_lens; /* past[batch], total[batch], new[batch] */
};

static void seqlens(int32_t *seq_lens, uint32_t batch, uint32_t seq, uint32_t kv_len)
{
    for (uint32_t b = 0; b < batch; b++) {
        seq_lens[b] = (int32_t)(kv_len - seq);
        seq_lens[batch + b] = (int32_t)kv_len;
        seq_lens[2 * batch + b] = (int32_t)seq;
    }
}

/* Token i of sequence b goes to position past[b] + i of its KV rows. */
static void kv_append_seq(float *k_cache, float *v_cache, const float *k_new, const float *v_new,
                          const int32_t *seq_lens, const struct prefill_dims *d)
{
    for (uint32_t b = 0; b < d->batch; b++)
        for (uint32_t i = 0; i < d->seq; i++)
            for (uint32_t h = 0; h < d->kv_heads; h++) {
                uint64_t row = (uint64_t)b * d->kv_heads + h, pos = (uint64_t)seq_lens[b] + i;
                uint64_t dst = (row * d->max_kv + pos) * d->head_dim;
                uint64_t src = (((uint64_t)b * d->seq + i) * d->kv_heads + h) * d->head_dim;
                for (uint32_t e = 0; e < d->head_dim; e++) {
                    k_cache[dst + e] = k_new[src + e];
                    v_cache[dst + e] = v_new[src + e];
                }
            }
}

/* Query row i of (sequence b, head h) with split s: positions [s * split_len, ...) up to and
 * including its own, past[b] + i. */
static void split_row(float *out, const struct prefill_buffers *ws, const float *q, const float *k_cache,
                      const float *v_cache, const struct prefill_dims *d, uint32_t b, uint32_t h, uint32_t i)
{
    uint64_t rows = (uint64_t)d->batch * d->heads * d->seq, stride = wsk_ref_rounded_head(d->head_dim);
    uint64_t lse_row = ((uint64_t)b * d->heads + h) * d->seq + i; /* [batch][heads][seq] */
    uint64_t q_row = ((uint64_t)b * d->seq + i) * d->heads + h;   /* [batch][seq][heads] */
    uint64_t kv_row = (uint64_t)b * d->kv_heads + h / (d->heads / d->kv_heads);
    const float *kr = k_cache + kv_row * d->max_kv * d->head_dim, *vr = v_cache + kv_row * d->max_kv * d->head_dim;
    uint64_t end = (uint64_t)ws->seq_lens[b] + i + 1;
    for (uint32_t s = 0; s < d->splits; s++) {
        uint64_t p0 = (uint64_t)s * d->split_len, p1 = p0 + d->split_len < end ? p0 + d->split_len : end;
        p0 = p0 < p1 ? p0 : p1;
        if (d->splits <= 1) {
            ws->softmax_lse[lse_row] =
                wsk_ref_attend_range(out + q_row * d->head_dim, q + q_row * d->head_dim, kr, vr, d->head_dim, p0, p1);
            continue;
        }
        uint64_t part = s * rows + lse_row; /* [split][batch][heads][seq] */
        ws->lse_accum[part] =
            wsk_ref_attend_range(ws->out_accum + part * stride, q + q_row * d->head_dim, kr, vr, d->head_dim, p0, p1);
    }
}

static void prefill_split(float *out, const struct prefill_buffers *ws, const float *q, const float *k_cache,
                          const float *v_cache, const struct prefill_dims *d)
{
    for (uint32_t b = 0; b < d->batch; b++)
        for (uint32_t h = 0; h < d->heads; h++)
            for (uint32_t i = 0; i < d->seq; i++)
                split_row(out, ws, q, k_cache, v_cache, d, b, h, i);
}

/* Every (sequence, head, query row): the splits rescaled by their log-sum-exp. */
static void prefill_combine(float *out, const struct prefill_buffers *ws, const struct prefill_dims *d)
{
    uint64_t rows = (uint64_t)d->batch * d->heads * d->seq, stride = wsk_ref_rounded_head(d->head_dim);
    for (uint64_t row = 0; row < rows; row++) {
        uint64_t b = row / ((uint64_t)d->heads * d->seq), h = row / d->seq % d->heads, i = row % d->seq;
        float *o = out + ((b * d->seq + i) * d->heads + h) * d->head_dim, m = -INFINITY, total = 0.0f;
        for (uint32_t s = 0; s < d->splits; s++)
            m = fmaxf(m, ws->lse_accum[s * rows + row]);
        for (uint32_t e = 0; e < d->head_dim; e++)
            o[e] = 0.0f;
        for (uint32_t s = 0; s < d->splits; s++) {
            float w = expf(ws->lse_accum[s * rows + row] - m);
            total += w;
            for (uint32_t e = 0; e < d->head_dim; e++)
                o[e] += w * ws->out_accum[(s * rows + row) * stride + e];
        }
        for (uint32_t e = 0; e < d->head_dim; e++)
            o[e] /= total;
        ws->softmax_lse[row] = m + logf(total);
    }
}

void wsk_ref_attention_prefill(float *out, const float *q, const float *k_new, const float *v_new, float *k_cache,
                               float *v_cache, const struct wsk_attn_attrs *a, uint32_t batch, uint32_t seq,
                               uint32_t kv_len, uint32_t max_kv, const struct wsk_attn_kernel *k, void *workspace)
{
    struct wsk_flash_layout l;
    struct prefill_dims d = {batch,  seq,       (uint32_t)a->heads, (uint32_t)a->kv_heads, (uint32_t)a->head_dim,
                             max_kv, k->splits, k->split_len};
    if (kv_len == 0 || batch == 0 || seq == 0 || seq > kv_len || wsk_attn_layout_seq(a, k, batch, seq, &l) != WSK_OK)
        return;
    char *root = workspace;
    struct prefill_buffers ws = {(float *)(root + l.lse_offset), (float *)(root + l.lse_accum_offset),
                                 (float *)(root + l.out_accum_offset), (int32_t *)(root + l.seq_lens_offset)};
    seqlens(ws.seq_lens, batch, seq, kv_len);
    kv_append_seq(k_cache, v_cache, k_new, v_new, ws.seq_lens, &d);
    prefill_split(out, &ws, q, k_cache, v_cache, &d);
    if (d.splits > 1)
        prefill_combine(out, &ws, &d);
}

#define ARG(type, i) (*(type *)args[i])

void wsk_host_attn_seqlens(void **args)
{
    seqlens(ARG(int32_t *, 0), ARG(uint32_t, 1), ARG(uint32_t, 2), ARG(uint32_t, 3));
}

void wsk_host_kv_append_seq(void **args)
{
    struct prefill_dims d = {ARG(uint32_t, 5), ARG(uint32_t, 6), 0, ARG(uint32_t, 7),
                             ARG(uint32_t, 8), ARG(uint32_t, 9), 1, 0};
    kv_append_seq(ARG(float *, 0), ARG(float *, 1), ARG(const float *, 2), ARG(const float *, 3),
                  ARG(const int32_t *, 4), &d);
}

void wsk_host_attn_prefill_split(void **args)
{
    struct prefill_dims d = {ARG(uint32_t, 8),  ARG(uint32_t, 9),  ARG(uint32_t, 10), ARG(uint32_t, 11),
                             ARG(uint32_t, 12), ARG(uint32_t, 13), ARG(uint32_t, 14), ARG(uint32_t, 15)};
    struct prefill_buffers ws = {ARG(float *, 1), ARG(float *, 2), ARG(float *, 3), ARG(int32_t *, 7)};
    prefill_split(ARG(float *, 0), &ws, ARG(const float *, 4), ARG(const float *, 5), ARG(const float *, 6), &d);
}

void wsk_host_attn_prefill_combine(void **args)
{
    struct prefill_dims d = {
        ARG(uint32_t, 4), ARG(uint32_t, 5), ARG(uint32_t, 6), 1, ARG(uint32_t, 7), 0, ARG(uint32_t, 8), 0};
    struct prefill_buffers ws = {ARG(float *, 1), ARG(float *, 2), ARG(float *, 3), NULL};
    prefill_combine(ARG(float *, 0), &ws, &d);
}
