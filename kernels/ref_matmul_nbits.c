/*
 * ref_matmul_nbits.c - host reference of matmul_nbits, in the same two tactics as the CUDA
 * kernels: a direct GEMV, and split-K partial sums into the workspace followed by a reduction in
 * split order (so the result does not depend on how the workspace was placed).
 */
#include "wskernels.h"

static uint32_t kblocks_of(uint32_t K) { return K / WSK_QBLOCK + (K % WSK_QBLOCK != 0); }

static float zero_point(const uint8_t *zp, uint32_t n, uint32_t blk, uint32_t kblocks)
{
    if (!zp)
        return 8.0f;
    uint8_t byte = zp[(uint64_t)n * ((kblocks + 1) / 2) + blk / 2];
    return (float)((blk & 1) ? byte >> 4 : byte & 15);
}

/* Dot product of row x with column n of the dequantised weights over blocks [b0, b1). */
static float dot_blocks(const float *x, const uint8_t *w, const float *scales, const uint8_t *zp, uint32_t K,
                        uint32_t n, uint32_t b0, uint32_t b1)
{
    uint32_t kblocks = kblocks_of(K);
    float acc = 0.0f;
    for (uint32_t blk = b0; blk < b1; blk++) {
        const uint8_t *packed = w + ((uint64_t)n * kblocks + blk) * WSK_QBLOCK_BYTES;
        float z = zero_point(zp, n, blk, kblocks), part = 0.0f;
        uint32_t k0 = blk * WSK_QBLOCK, len = K - k0 < WSK_QBLOCK ? K - k0 : WSK_QBLOCK;
        for (uint32_t i = 0; i < len; i++) {
            uint8_t byte = packed[i / 2];
            float q = (float)((i & 1) ? byte >> 4 : byte & 15);
            part += x[k0 + i] * (q - z);
        }
        acc += part * scales[(uint64_t)n * kblocks + blk];
    }
    return acc;
}

static void gemv(float *y, const float *x, const uint8_t *w, const float *scales, const uint8_t *zp, uint32_t M,
                 uint32_t K, uint32_t N)
{
    for (uint32_t m = 0; m < M; m++)
        for (uint32_t n = 0; n < N; n++)
            y[(uint64_t)m * N + n] = dot_blocks(x + (uint64_t)m * K, w, scales, zp, K, n, 0, kblocks_of(K));
}

static void splitk_partial(float *ws, const float *x, const uint8_t *w, const float *scales, const uint8_t *zp,
                           uint32_t M, uint32_t K, uint32_t N, uint32_t split_k)
{
    uint32_t kblocks = kblocks_of(K), per = (kblocks + split_k - 1) / split_k;
    for (uint32_t s = 0; s < split_k; s++) {
        uint32_t b0 = s * per < kblocks ? s * per : kblocks;
        uint32_t b1 = b0 + per < kblocks ? b0 + per : kblocks;
        for (uint32_t m = 0; m < M; m++)
            for (uint32_t n = 0; n < N; n++)
                ws[((uint64_t)s * M + m) * N + n] = dot_blocks(x + (uint64_t)m * K, w, scales, zp, K, n, b0, b1);
    }
}

static void splitk_reduce(float *y, const float *ws, uint32_t M, uint32_t N, uint32_t split_k)
{
    uint64_t mn = (uint64_t)M * N;
    for (uint64_t i = 0; i < mn; i++) {
        float acc = 0.0f;
        for (uint32_t s = 0; s < split_k; s++)
            acc += ws[s * mn + i];
        y[i] = acc;
    }
}

void wsk_ref_matmul_nbits(float *y, const float *x, const uint8_t *w, const float *scales, const uint8_t *zero_points,
                          uint32_t M, uint32_t K, uint32_t N, const struct wsk_matmul_kernel *k, float *workspace)
{
    if (k->tactic == WSK_MATMUL_SPLITK) {
        splitk_partial(workspace, x, w, scales, zero_points, M, K, N, k->split_k);
        splitk_reduce(y, workspace, M, N, k->split_k);
    } else {
        gemv(y, x, w, scales, zero_points, M, K, N);
    }
}

#define ARG(type, i) (*(type *)args[i])

void wsk_host_matmul_gemv(void **args)
{
    gemv(ARG(float *, 0), ARG(const float *, 1), ARG(const uint8_t *, 2), ARG(const float *, 3),
         ARG(const uint8_t *, 4), ARG(uint32_t, 5), ARG(uint32_t, 6), ARG(uint32_t, 7));
}

void wsk_host_matmul_splitk(void **args)
{
    splitk_partial(ARG(float *, 0), ARG(const float *, 1), ARG(const uint8_t *, 2), ARG(const float *, 3),
                   ARG(const uint8_t *, 4), ARG(uint32_t, 5), ARG(uint32_t, 6), ARG(uint32_t, 7), ARG(uint32_t, 8));
}

void wsk_host_matmul_reduce(void **args)
{
    splitk_reduce(ARG(float *, 0), ARG(const float *, 1), ARG(uint32_t, 2), ARG(uint32_t, 3), ARG(uint32_t, 4));
}
