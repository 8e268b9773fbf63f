/*
 * ref_matmul_nbits.c - host reference of matmul_nbits, in the same two tactics as the CUDA
 * kernels: a direct GEMV, and split-K partial sums into the workspace followed by a reduction in
 * split order (so the result does not depend on how the workspace was placed).
 */
#include "matmul_nbits_dot.h"
#include "wskernels.h"

static uint32_t kblocks_of(uint32_t K) { return K / WSK_QBLOCK + (K % WSK_QBLOCK != 0); }

static void gemv(float *y, const float *x, const uint8_t *w, const float *scales, const uint8_t *zp, uint32_t M,
                 uint32_t K, uint32_t N)
{
    for (uint32_t m = 0; m < M; m++)
        for (uint32_t n = 0; n < N; n++)
            y[(uint64_t)m * N + n] = wsk_dot_blocks(x + (uint64_t)m * K, w, scales, zp, K, n, 0, kblocks_of(K));
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
                ws[((uint64_t)s * M + m) * N + n] = wsk_dot_blocks(x + (uint64_t)m * K, w, scales, zp, K, n, b0, b1);
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
