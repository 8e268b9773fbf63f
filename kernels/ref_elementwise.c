/*
 * ref_elementwise.c - host references of the kernels without workspace: embedding gather,
 * rmsnorm, silu_mul and residual add.
 */
#include "wskernels.h"

#include <math.h>

void wsk_ref_embed(float *y, const int32_t *ids, const float *table, uint32_t M, uint32_t H)
{
    for (uint32_t m = 0; m < M; m++)
        for (uint32_t h = 0; h < H; h++)
            y[(uint64_t)m * H + h] = table[(uint64_t)ids[m] * H + h];
}

void wsk_ref_rmsnorm(float *y, const float *x, const float *gamma, uint32_t M, uint32_t H, float eps)
{
    for (uint32_t m = 0; m < M; m++) {
        const float *row = x + (uint64_t)m * H;
        float sum = 0.0f;
        for (uint32_t h = 0; h < H; h++)
            sum += row[h] * row[h];
        float inv = 1.0f / sqrtf(sum / (float)(H ? H : 1) + eps);
        for (uint32_t h = 0; h < H; h++)
            y[(uint64_t)m * H + h] = row[h] * inv * gamma[h];
    }
}

void wsk_ref_rmsnorm_last(float *y, const float *x, const float *gamma, uint32_t batch, uint32_t seq, uint32_t H,
                          float eps)
{
    for (uint32_t b = 0; b < batch && seq > 0; b++)
        wsk_ref_rmsnorm(y + (uint64_t)b * H, x + ((uint64_t)b * seq + seq - 1) * H, gamma, 1, H, eps);
}

void wsk_ref_silu_mul(float *y, const float *gate, const float *up, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        y[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

void wsk_ref_add(float *y, const float *a, const float *b, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        y[i] = a[i] + b[i];
}

/* Arguments arrive as pointers to the values, in the CUDA kernels' order (see wskernels.h). */
#define ARG(type, i) (*(type *)args[i])

void wsk_host_embed(void **args)
{
    wsk_ref_embed(ARG(float *, 0), ARG(const int32_t *, 1), ARG(const float *, 2), ARG(uint32_t, 3), ARG(uint32_t, 4));
}

void wsk_host_rmsnorm(void **args)
{
    wsk_ref_rmsnorm(ARG(float *, 0), ARG(const float *, 1), ARG(const float *, 2), ARG(uint32_t, 3), ARG(uint32_t, 4),
                    ARG(float, 5));
}

void wsk_host_rmsnorm_last(void **args)
{
    wsk_ref_rmsnorm_last(ARG(float *, 0), ARG(const float *, 1), ARG(const float *, 2), ARG(uint32_t, 3),
                         ARG(uint32_t, 4), ARG(uint32_t, 5), ARG(float, 6));
}

void wsk_host_silu_mul(void **args)
{
    wsk_ref_silu_mul(ARG(float *, 0), ARG(const float *, 1), ARG(const float *, 2), ARG(uint64_t, 3));
}

void wsk_host_add(void **args)
{
    wsk_ref_add(ARG(float *, 0), ARG(const float *, 1), ARG(const float *, 2), ARG(uint64_t, 3));
}

const struct wsk_kernel_table *wsk_host_kernels(void)
{
    static const struct wsk_kernel_table table = {
        .embed = (const void *)wsk_host_embed,
        .rmsnorm = (const void *)wsk_host_rmsnorm,
        .silu_mul = (const void *)wsk_host_silu_mul,
        .add = (const void *)wsk_host_add,
        .matmul_gemv = (const void *)wsk_host_matmul_gemv,
        .matmul_splitk = (const void *)wsk_host_matmul_splitk,
        .matmul_reduce = (const void *)wsk_host_matmul_reduce,
        .kv_append = (const void *)wsk_host_kv_append,
        .attn_split = (const void *)wsk_host_attn_split,
        .attn_combine = (const void *)wsk_host_attn_combine,
        .argmax_blocks = (const void *)wsk_host_argmax_blocks,
        .argmax_final = (const void *)wsk_host_argmax_final,
        .matmul_gemm = (const void *)wsk_host_matmul_gemm,
        .rmsnorm_last = (const void *)wsk_host_rmsnorm_last,
        .attn_seqlens = (const void *)wsk_host_attn_seqlens,
        .kv_append_seq = (const void *)wsk_host_kv_append_seq,
        .attn_prefill_split = (const void *)wsk_host_attn_prefill_split,
        .attn_prefill_combine = (const void *)wsk_host_attn_prefill_combine,
    };
    return &table;
}
