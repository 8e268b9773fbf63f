/*
 * ref_attention.c - host reference of attention_decode (flash-decoding).  Each split runs an
 * online softmax over chunks of its KV range, as the CUDA kernel does; with several splits the
 * combine step rescales the partial outputs by their log-sum-exp.  The workspace is the root of
 * wsk_attn_layout: softmax_lse, and with several splits softmax_lse_accum and out_accum, at the
 * root's aligned offsets.  Grouped-query attention: query head h reads KV head h / (heads / kv_heads).
 */
#include "ref_attention.h"

#include <math.h>

#define CHUNK 128u /* positions scored at a time: the CUDA kernel's block size */

struct attn_dims {
    uint32_t batch, heads, kv_heads, head_dim, kv_len, max_kv, splits, split_len;
};

/* Where the buffers of the workspace root are. */
struct attn_buffers {
    float *softmax_lse, *lse_accum, *out_accum;
};

static void kv_append(float *k_cache, float *v_cache, const float *k_new, const float *v_new, const struct attn_dims *d,
                      uint32_t pos)
{
    for (uint32_t b = 0; b < d->batch; b++)
        for (uint32_t h = 0; h < d->kv_heads; h++) {
            uint64_t row = (uint64_t)b * d->kv_heads + h;
            uint64_t dst = (row * d->max_kv + pos) * d->head_dim, src = row * d->head_dim;
            for (uint32_t i = 0; i < d->head_dim; i++) {
                k_cache[dst + i] = k_new[src + i];
                v_cache[dst + i] = v_new[src + i];
            }
        }
}

/* Online softmax state of one (sequence, head, split). */
struct softmax_acc {
    float max, sum;
    float *acc; /* head_dim values */
};

static void attend_chunk(struct softmax_acc *st, const float *q, const float *keys, const float *values, uint32_t count,
                         uint32_t head_dim)
{
    float scores[CHUNK], scale = 1.0f / sqrtf((float)head_dim), chunk_max = -INFINITY;
    for (uint32_t p = 0; p < count; p++) {
        float s = 0.0f;
        for (uint32_t i = 0; i < head_dim; i++)
            s += q[i] * keys[(uint64_t)p * head_dim + i];
        scores[p] = s * scale;
        chunk_max = fmaxf(chunk_max, scores[p]);
    }
    float new_max = fmaxf(st->max, chunk_max), rescale = expf(st->max - new_max);
    st->sum *= rescale;
    for (uint32_t i = 0; i < head_dim; i++)
        st->acc[i] *= rescale;
    for (uint32_t p = 0; p < count; p++) {
        float e = expf(scores[p] - new_max);
        st->sum += e;
        for (uint32_t i = 0; i < head_dim; i++)
            st->acc[i] += e * values[(uint64_t)p * head_dim + i];
    }
    st->max = new_max;
}

float wsk_ref_attend_range(float *out_row, const float *q, const float *k_rows, const float *v_rows, uint32_t head_dim,
                           uint64_t p0, uint64_t p1)
{
    struct softmax_acc st = {-INFINITY, 0.0f, out_row};
    for (uint32_t i = 0; i < head_dim; i++)
        out_row[i] = 0.0f;
    for (uint64_t p = p0; p < p1; p += CHUNK) {
        uint32_t count = (uint32_t)(p1 - p < CHUNK ? p1 - p : CHUNK);
        attend_chunk(&st, q, k_rows + p * head_dim, v_rows + p * head_dim, count, head_dim);
    }
    if (st.sum == 0.0f) /* empty range: a zero output that the combine weighs with exp(-inf) */
        return -INFINITY;
    for (uint32_t i = 0; i < head_dim; i++)
        out_row[i] /= st.sum;
    return st.max + logf(st.sum);
}

/* One split of one (sequence, head): normalised output into out_row, log-sum-exp returned. */
static float attend_split(float *out_row, const float *q, const float *k_rows, const float *v_rows,
                          const struct attn_dims *d, uint32_t split)
{
    uint64_t p0 = (uint64_t)split * d->split_len, p1 = p0 + d->split_len < d->kv_len ? p0 + d->split_len : d->kv_len;
    return wsk_ref_attend_range(out_row, q, k_rows, v_rows, d->head_dim, p0, p1);
}

static void attn_split(float *out, const struct attn_buffers *ws, const float *q, const float *k_cache,
                       const float *v_cache, const struct attn_dims *d)
{
    uint64_t rows = (uint64_t)d->batch * d->heads, stride = wsk_ref_rounded_head(d->head_dim);
    uint32_t group = d->heads / d->kv_heads;
    for (uint32_t b = 0; b < d->batch; b++)
        for (uint32_t h = 0; h < d->heads; h++) {
            uint64_t row = (uint64_t)b * d->heads + h, kv_row = (uint64_t)b * d->kv_heads + h / group;
            const float *qr = q + row * d->head_dim;
            const float *kr = k_cache + kv_row * d->max_kv * d->head_dim;
            const float *vr = v_cache + kv_row * d->max_kv * d->head_dim;
            if (d->splits <= 1) {
                ws->softmax_lse[row] = attend_split(out + row * d->head_dim, qr, kr, vr, d, 0);
                continue;
            }
            for (uint32_t s = 0; s < d->splits; s++) {
                uint64_t part = s * rows + row; /* [split][batch][head] */
                ws->lse_accum[part] = attend_split(ws->out_accum + part * stride, qr, kr, vr, d, s);
            }
        }
}

static void attn_combine(float *out, const struct attn_buffers *ws, const struct attn_dims *d)
{
    uint64_t rows = (uint64_t)d->batch * d->heads, stride = wsk_ref_rounded_head(d->head_dim);
    for (uint64_t row = 0; row < rows; row++) {
        float m = -INFINITY, total = 0.0f;
        for (uint32_t s = 0; s < d->splits; s++)
            m = fmaxf(m, ws->lse_accum[s * rows + row]);
        for (uint32_t i = 0; i < d->head_dim; i++)
            out[row * d->head_dim + i] = 0.0f;
        for (uint32_t s = 0; s < d->splits; s++) {
            float w = expf(ws->lse_accum[s * rows + row] - m);
            total += w;
            for (uint32_t i = 0; i < d->head_dim; i++)
                out[row * d->head_dim + i] += w * ws->out_accum[(s * rows + row) * stride + i];
        }
        for (uint32_t i = 0; i < d->head_dim; i++)
            out[row * d->head_dim + i] /= total;
        ws->softmax_lse[row] = m + logf(total);
    }
}

void wsk_ref_attention_decode(float *out, const float *q, const float *k_new, const float *v_new, float *k_cache,
                              float *v_cache, const struct wsk_attn_attrs *a, uint32_t batch, uint32_t kv_len,
                              uint32_t max_kv, const struct wsk_attn_kernel *k, void *workspace)
{
    struct wsk_flash_layout l;
    struct attn_dims d = {batch,  (uint32_t)a->heads, (uint32_t)a->kv_heads, (uint32_t)a->head_dim, kv_len,
                          max_kv, k->splits,          k->split_len};
    if (kv_len == 0 || batch == 0 || wsk_attn_layout(a, k, batch, &l) != WSK_OK)
        return;
    char *root = workspace;
    struct attn_buffers ws = {(float *)(root + l.lse_offset), (float *)(root + l.lse_accum_offset),
                              (float *)(root + l.out_accum_offset)};
    kv_append(k_cache, v_cache, k_new, v_new, &d, kv_len - 1);
    attn_split(out, &ws, q, k_cache, v_cache, &d);
    if (d.splits > 1)
        attn_combine(out, &ws, &d);
}

#define ARG(type, i) (*(type *)args[i])

void wsk_host_kv_append(void **args)
{
    struct attn_dims d = {ARG(uint32_t, 4), 0, ARG(uint32_t, 5), ARG(uint32_t, 6), 0, ARG(uint32_t, 8), 1, 0};
    kv_append(ARG(float *, 0), ARG(float *, 1), ARG(const float *, 2), ARG(const float *, 3), &d, ARG(uint32_t, 7));
}

void wsk_host_attn_split(void **args)
{
    struct attn_dims d = {ARG(uint32_t, 7),  ARG(uint32_t, 8),  ARG(uint32_t, 9),  ARG(uint32_t, 10),
                          ARG(uint32_t, 11), ARG(uint32_t, 12), ARG(uint32_t, 13), ARG(uint32_t, 14)};
    struct attn_buffers ws = {ARG(float *, 1), ARG(float *, 2), ARG(float *, 3)};
    attn_split(ARG(float *, 0), &ws, ARG(const float *, 4), ARG(const float *, 5), ARG(const float *, 6), &d);
}

void wsk_host_attn_combine(void **args)
{
    struct attn_dims d = {ARG(uint32_t, 4), ARG(uint32_t, 5), 1, ARG(uint32_t, 6), 0, 0, ARG(uint32_t, 7), 0};
    struct attn_buffers ws = {ARG(float *, 1), ARG(float *, 2), ARG(float *, 3)};
    attn_combine(ARG(float *, 0), &ws, &d);
}
